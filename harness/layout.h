/*
 * layout.h - where a repository keeps its parts (git's `struct repository`, builtin.h): cards,
 * plans, task dirs and eval dirs, relative to the working directory (the repository root). The CLI
 * fills one from --skills-dir, --plans-dir, --tasks-dir and --results-dir and hands it to every
 * command; a module given NULL for one of these directories takes vs_layout_default's.
 */
#ifndef VS_LAYOUT_H
#define VS_LAYOUT_H

struct vs_layout {
	const char *skills;  /* cards: skills/<id>.md */
	const char *plans;   /* plans/<id>.plan.json (and .sbatch) */
	const char *tasks;   /* task dirs: tasks/<hash>/ */
	const char *results; /* eval dirs: results/<card id>/<run id>/, parts under .parts/ */
};

#define VS_LAYOUT_INIT                                                                                                 \
	{                                                                                                              \
		.skills = "skills", .plans = "plans", .tasks = "tasks", .results = "results"                           \
	}

/** The layout of a repository whose directories have their default names. */
extern const struct vs_layout vs_layout_default;

/**
 * The repository root against which recorded module paths (kernels/python/..., a user's .py) are
 * resolved: $VS_REPO_ROOT when set; else the source tree the binary was built from, while it still
 * holds kernels/python/mla_decode.py; else the working directory. Static storage, never NULL.
 */
const char *vs_repo_root(void);

#endif /* VS_LAYOUT_H */
