/*
 * cli.c - the command table of validate_skill. Options are declared once in `options` below; the
 * parser and --help are both driven by it. Each mode is one function; cli_main() only dispatches
 * and maps internal error codes to exit statuses: 0 done (a run: completed and validated), 1 done
 * and failed (a run's verdict, a measured check), 2 usage error, 3 could not be done (bad input,
 * evidence that does not verify, a device or I/O error).
 */
#include "cli.h"
#include "op.h"
#include "card.h"
#include "card_cmd.h"
#include "fsutil.h"
#include "merge.h"
#include "plan.h"
#include "plugin.h"
#include "progress.h"
#include "publish.h"
#include "record.h"
#include "report.h"
#include "evaldir.h"
#include "layout.h"
#include "library.h"
#include "runtime.h"
#include "runner.h"
#include "slurm.h"
#include "task.h"
#include "vs_build_info.h"
#include "vs_error.h"
#include "workload.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cli_args {
	int mode; /* index into `options` of the chosen mode, -1 none */
	const char *positional[256];
	int npositional;
	const char *tier, *gen, *baseline, *candidate, *task, *impl, *config, *eval_dir, *format;
	const char *tasks_dir, *results_dir, *plans_dir, *skills_dir, *run_id, *out, *build_figures;
	const char *baseline_lib, *candidate_lib, *gpus, *publish, *timing, *e2e_step, *configs_from, *artifact;
	const char *workload;
	const char *references[VS_PLAN_MAX_REFERENCES + 1]; /* --reference, repeatable (OPT_LIST) */
	int nreferences;
	int threads, gpu, max_age_days, part, timeout, slurm, force, e2e, scratch, older;
	struct vs_layout layout; /* the repository's directories: the *_dir options over the defaults */
};

/* OPT_LIST: a repeatable OPT_STR into a const char *[] field followed by its int count. */
/* OPT_REFUSED: an option of GEAK's validate_skill.py that types a result; refused with its help. */
enum opt_kind { OPT_MODE, OPT_STR, OPT_INT, OPT_FLAG, OPT_LIST, OPT_REFUSED };

/* One bit per mode: an option's `modes` says which modes read it (curl's aliases[] flags). */
enum {
	M_STATIC = 1 << 0,
	M_EMIT_PLAN = 1 << 1,
	M_MATERIALIZE = 1 << 2,
	M_RUN = 1 << 3,
	M_RECORD = 1 << 4,
	M_REPORT = 1 << 5,
	M_VERIFY = 1 << 6,
	M_VALIDATE = 1 << 7,
	M_MERGE = 1 << 8,
	M_FLUSH = 1 << 9,
	M_FETCH = 1 << 10,
	M_GC = 1 << 11,
	M_HELP = 1 << 12,
	M_VERSION = 1 << 13,
	M_REINDEX = 1 << 14,
	M_ALL = 0, /* read by every mode that cares: never refused */
};

/* One row per option: everything about it (kind, field, modes, help) in one place. */
struct cli_option {
	const char *name;
	enum opt_kind kind;
	const char *arg;                      /* argument or positional name shown in --help */
	size_t offset;                        /* field of struct cli_args (OPT_STR, OPT_INT, OPT_FLAG) */
	int unset;                            /* OPT_INT: the value that means "not given" (parse() sets it) */
	unsigned modes;                       /* options: the modes that read it (M_ALL: any); modes: their own bit */
	int (*run)(const struct cli_args *a); /* OPT_MODE */
	int min_pos, max_pos;                 /* OPT_MODE: positional arguments accepted */
	const char *help;
};

static int mode_static(const struct cli_args *a);
static int mode_emit_plan(const struct cli_args *a);
static int mode_materialize(const struct cli_args *a);
static int mode_run(const struct cli_args *a);
static int mode_record(const struct cli_args *a);
static int mode_report(const struct cli_args *a);
static int mode_verify(const struct cli_args *a);
static int mode_validate(const struct cli_args *a);
static int mode_gc(const struct cli_args *a);
static int mode_merge(const struct cli_args *a);
static int mode_flush(const struct cli_args *a);
static int mode_fetch(const struct cli_args *a);
static int mode_help(const struct cli_args *a);
static int mode_version(const struct cli_args *a);
static int mode_reindex(const struct cli_args *a);

#define F(field) offsetof(struct cli_args, field)

_Static_assert(offsetof(struct cli_args, nreferences) ==
		       offsetof(struct cli_args, references) + sizeof(((struct cli_args *)0)->references),
	       "OPT_LIST: the count follows the list");

#define MODE(name_, arg_, run_, lo_, hi_, bit_, help_)                                                                 \
	{                                                                                                              \
		.name = name_, .kind = OPT_MODE, .arg = arg_, .modes = bit_, .run = run_, .min_pos = lo_,              \
		.max_pos = hi_, .help = help_                                                                          \
	}
#define STR(name_, arg_, field_, modes_, help_)                                                                        \
	{                                                                                                              \
		.name = name_, .kind = OPT_STR, .arg = arg_, .offset = F(field_), .modes = modes_, .help = help_       \
	}
#define INT(name_, arg_, field_, unset_, modes_, help_)                                                                \
	{                                                                                                              \
		.name = name_, .kind = OPT_INT, .arg = arg_, .offset = F(field_), .unset = unset_, .modes = modes_,    \
		.help = help_                                                                                          \
	}
#define LIST(name_, arg_, field_, modes_, help_)                                                                       \
	{                                                                                                              \
		.name = name_, .kind = OPT_LIST, .arg = arg_, .offset = F(field_), .modes = modes_, .help = help_      \
	}
#define REFUSED(name_, arg_, help_)                                                                                    \
	{                                                                                                              \
		.name = name_, .kind = OPT_REFUSED, .arg = arg_, .help = help_                                         \
	}
#define FLAG(name_, field_, modes_, help_)                                                                             \
	{                                                                                                              \
		.name = name_, .kind = OPT_FLAG, .arg = "", .offset = F(field_), .modes = modes_, .help = help_        \
	}

static const struct cli_option options[] = {
	MODE("--static", "CARD...", mode_static, 1, 256, M_STATIC,
	     "lint cards: front matter, schema, types, enums, body sections (a CARD may be a skills DIR: every "
	     "card in it, both layouts; or an ID: skills/ID.md or skills/ID/skill.md, as for every CARD; the "
	     "default mode when only CARDs are given); a FILE.yaml is linted as a workload (schema, ranges, its "
	     "trace's rows, its tasks derived)"),
	MODE("--emit-plan", "CARD", mode_emit_plan, 1, 1, M_EMIT_PLAN,
	     "write plans/<id>.plan.json (with a plugin: plans/<id>.<impl>.plan.json; or --out) and print a summary"),
	MODE("--materialize", "PLAN", mode_materialize, 1, 1, M_MATERIALIZE,
	     "write the plan's task dirs (inputs + oracle reference outputs, sha256-checked)"),
	MODE("--run", "PLAN", mode_run, 1, 1, M_RUN,
	     "isolated A/B of baseline vs candidate on every task: parity first, then timing"),
	MODE("--record", "CARD", mode_record, 1, 1, M_RECORD,
	     "verify an eval dir (--eval-dir, default: the card's latest) and write its status into the card "
	     "(and the library's index.yaml, where its root has one)"),
	MODE("--report", "", mode_report, 0, 0, M_REPORT,
	     "status of every card in skills/ (skills/<id>.md and skills/<id>/skill.md), checked against evidence"),
	MODE("--verify", "CARD...", mode_verify, 1, 256, M_VERIFY,
	     "re-check recorded cards against their evidence (a CARD may be a skills DIR or an ID, as for --static)"),
	MODE("--reindex", "[ROOT]", mode_reindex, 0, 1, M_REINDEX,
	     "write ROOT/index.yaml (default: here) from ROOT/skills in GEAK's schema, evidence-backed statuses"),
	MODE("--validate", "CARD", mode_validate, 1, 1, M_VALIDATE,
	     "the main job: --emit-plan, --run (materializing tasks), --record, in one go"),
	MODE("--merge", "DIR...", mode_merge, 1, 256, M_MERGE,
	     "join the parts of a run (--part, Slurm) into one eval dir that --record accepts"),
	MODE("--flush", "", mode_flush, 0, 0, M_FLUSH, "send the payloads waiting in the outbox to --publish URL"),
	MODE("--fetch", "URL", mode_fetch, 1, 1, M_FETCH,
	     "import a card from URL into skills/ (linted first; an existing card that differs needs --force)"),
	MODE("--gc", "", mode_gc, 0, 0, M_GC,
	     "remove task dirs that no plan in plans/ uses, and temporaries left by interrupted writes"),
	MODE("--help", "", mode_help, 0, 0, M_HELP, "this text"),
	MODE("--version", "", mode_version, 0, 0, M_VERSION, "tool version and kernel identity"),
	STR("--tier", "smoke|standard|full", tier, M_ALL, "task grid of --emit-plan (default smoke)"),
	STR("--gen", "GEN", gen, M_ALL, "target generation (default: the card's first gens entry)"),
	STR("--baseline", "IMPL[@CONFIG]", baseline, M_ALL,
	    "baseline implementation (default match.from_backend); @CONFIG forces one of its configs on every task, "
	    "with no tuning pass"),
	STR("--candidate", "IMPL[@CONFIG]", candidate, M_ALL,
	    "candidate implementation (default match.to_backend); @CONFIG as for --baseline"),
	STR("--baseline-lib", "FILE.so|FILE.py", baseline_lib, M_EMIT_PLAN | M_VALIDATE,
	    "plugin (.so, kernels/mla_decode.h ABI) or Python module (.py, kernels/python/mla_decode.py; "
	    "interpreter $VS_PYTHON) providing the baseline; the plan records the file and its sha256"),
	STR("--candidate-lib", "FILE.so|FILE.py", candidate_lib, M_EMIT_PLAN | M_VALIDATE,
	    "plugin or Python module providing the candidate"),
	STR("--timing", "graph_replay|launch", timing, M_EMIT_PLAN | M_VALIDATE,
	    "timed sample of --emit-plan: graph_replay (GPU default: the replay of a graph holding one launch) "
	    "or launch (CPU plans; GPU implementations that are not capture-safe)"),
	LIST("--reference", "IMPL[@CONFIG]|FILE", references, M_EMIT_PLAN | M_VALIDATE,
	     "repeatable (up to 4): also time this implementation (a name, or a file as --candidate-lib takes) "
	     "against the candidate on every task it supports; reported, never gating"),
	FLAG("--e2e", e2e, M_EMIT_PLAN | M_VALIDATE,
	     "--emit-plan adds the e2e stage: after each one-token bf16 task's A/B, a model decode step around the "
	     "core (DeepSeek-V3's attention block) timed with baseline, candidate and a baseline control"),
	STR("--e2e-step", "FILE.py", e2e_step, M_EMIT_PLAN | M_VALIDATE,
	    "the e2e stage's step module (kernels/python/e2e_step.py; default kernels/torch/deepseek_v3_step.py, "
	    "kernels/python/numpy_step.py on the CPU)"),
	STR("--workload", "ID|FILE.yaml", workload, M_EMIT_PLAN | M_VALIDATE,
	    "plan the tasks of a deployment instead of a tier: workloads/<ID>.yaml or a workload file (its trace "
	    "or histogram, continuous batching, weighted tasks); the verdict gates on the workload speedup. Writes "
	    "plans/<id>.wl-<workload>.plan.json"),
	STR("--configs-from", "EVAL_DIR", configs_from, M_EMIT_PLAN | M_VALIDATE,
	    "pin, on every task that eval dir (a run of the same card and gen) measured, each implementation's "
	    "chosen config there: the plan's runs measure those, with no tuning pass"),
	FLAG("--slurm", slurm, M_EMIT_PLAN | M_VALIDATE,
	     "--emit-plan also writes plans/<id>.sbatch: a Slurm array, one array task per plan task"),
	STR("--task", "NAME|HASH", task, M_ALL, "only tasks whose name contains this or hash starts with it"),
	STR("--impl", "IMPL", impl, M_ALL, "parity of this implementation only (no timing)"),
	STR("--config", "CONFIG", config, M_ALL, "only this candidate config"),
	FLAG("--older", older, M_RECORD,
	     "--record: record the eval dir given over a newer complete run of the same card, device and "
	     "implementations (the card's validation.recorded_over says so)"),
	FLAG("--scratch", scratch, M_RUN,
	     "run a plan that differs from what its card plans (an edited plan) as a debug run: written under "
	     "results/<id>/.debug/, never recorded"),
	STR("--eval-dir", "DIR", eval_dir, M_ALL, "eval dir for --record"),
	STR("--artifact", "EVAL_DIR", artifact, M_RECORD, "GEAK's name for --eval-dir"),
	REFUSED("--isolated", "X", "GEAK's typed result: refused"),
	REFUSED("--e2e-pct", "X", "GEAK's typed result: refused"),
	REFUSED("--parity", "X", "GEAK's typed result: refused"),
	REFUSED("--model", "X", "GEAK's typed result: refused"),
	REFUSED("--date", "X", "GEAK's typed result: refused"),
	STR("--format", "text|markdown|json|html", format, M_ALL,
	    "report format (default text; html: one self-contained page with a chart)"),
	STR("--out", "FILE", out, M_ALL, "output file of --emit-plan / --report"),
	STR("--tasks-dir", "DIR", tasks_dir, M_ALL, "task dirs root (default tasks)"),
	STR("--results-dir", "DIR", results_dir, M_ALL, "eval dirs root (default results)"),
	STR("--plans-dir", "DIR", plans_dir, M_ALL, "plans directory (default plans)"),
	STR("--skills-dir", "DIR", skills_dir, M_ALL, "cards directory for --report (default skills)"),
	STR("--build-figures", "FILE", build_figures, M_ALL,
	    "gfx942 gate output (default <build>/gfx942/resources.json)"),
	STR("--run-id", "ID", run_id, M_ALL, "name of the eval dir (default UTC time + generation)"),
	INT("--threads", "N", threads, 0, M_ALL, "threads for the oracle and generator (default: all cores)"),
	INT("--gpu", "N", gpu, 0, M_ALL, "GPU ordinal (default 0)"),
	STR("--gpus", "N,N,...", gpus, M_RUN | M_VALIDATE,
	    "--run: one worker per listed GPU, tasks dealt as they free up (a CPU plan: that many CPU workers)"),
	INT("--part", "I", part, -1, M_RUN,
	    "--run only plan task I into results/<id>/.parts/<run id>/I (needs --run-id; what Slurm array tasks do)"),
	STR("--publish", "URL", publish, M_RECORD | M_VALIDATE | M_FLUSH,
	    "--record/--validate: POST the record and result.json (token: $VS_PUBLISH_TOKEN); undelivered ones "
	    "wait in results/.outbox"),
	INT("--timeout", "S", timeout, 0, M_ALL, "total seconds of one HTTP attempt (default 60)"),
	FLAG("--force", force, M_FETCH, "--fetch: replace an existing card that differs"),
	INT("--max-age-days", "N", max_age_days, 0, M_ALL, "evidence older than this is stale (default 90)"),
};

#define NOPTIONS ((int)(sizeof(options) / sizeof(options[0])))

static int exit_status(int err)
{
	if (err == 0)
		return 0;
	if (err == VS_EFAIL)
		return 1;
	return err == VS_EUSAGE ? 2 : 3;
}

static int usage_error(const char *fmt, const char *arg)
{
	vs_error(VS_EUSAGE, fmt, arg);
	fprintf(stderr, "run 'validate_skill --help' for the modes and options\n");
	return VS_EUSAGE;
}

static int parse(struct cli_args *a, int argc, char **argv)
{
	memset(a, 0, sizeof(*a));
	a->mode = -1;
	for (int k = 0; k < NOPTIONS; k++)
		if (options[k].kind == OPT_INT)
			*(int *)((char *)a + options[k].offset) = options[k].unset;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *val = NULL, *eq;
		int k;
		size_t nlen;

		if (strncmp(arg, "--", 2)) {
			if (a->npositional >= 256)
				return usage_error("too many arguments ('%s')", arg);
			a->positional[a->npositional++] = arg;
			continue;
		}
		eq = strchr(arg, '=');
		nlen = eq ? (size_t)(eq - arg) : strlen(arg);
		for (k = 0; k < NOPTIONS; k++)
			if (strlen(options[k].name) == nlen && !strncmp(options[k].name, arg, nlen))
				break;
		if (k == NOPTIONS)
			return usage_error("unknown option '%s'", arg);
		if (options[k].kind == OPT_REFUSED)
			return vs_error(VS_EUSAGE,
					"%s: numbers come from a measured eval dir, never from the command line: "
					"validate_skill SKILL_ID --record --artifact EVAL_DIR (EVAL_DIR written by "
					"--run)",
					options[k].name);
		if (options[k].kind == OPT_FLAG) {
			if (eq)
				return usage_error("option '%s' takes no value", arg);
			*(int *)((char *)a + options[k].offset) = 1;
			continue;
		}
		if (options[k].kind == OPT_MODE) {
			if (a->mode >= 0 && a->mode != k)
				return usage_error("only one mode at a time ('%s' and another)", arg);
			a->mode = k;
			continue;
		}
		/* OPT_LIST, OPT_STR, OPT_INT: the value after '=', else the next argument */
		if (eq)
			val = eq + 1;
		else if (i + 1 < argc)
			val = argv[++i];
		else
			return usage_error("option '%s' needs a value", arg);
		if (options[k].kind == OPT_LIST) {
			const char **list = (const char **)((char *)a + options[k].offset);
			int *count = (int *)((char *)a + options[k].offset + sizeof(a->references));

			if (*count >= VS_PLAN_MAX_REFERENCES)
				return usage_error("option '%s' is given more than 4 times", arg);
			list[(*count)++] = val;
		} else if (options[k].kind == OPT_STR) {
			*(const char **)((char *)a + options[k].offset) = val;
		} else {
			char *end;
			long v = strtol(val, &end, 10);

			if ((*val == '\0' || *end != '\0') && !strcmp(options[k].name, "--gpu"))
				return vs_error(VS_EUSAGE,
						"--gpu takes a GPU ordinal, got '%s' (GEAK's --gpu NAME types the "
						"device: "
						"it comes from a measured eval dir, validate_skill SKILL_ID --record "
						"--artifact EVAL_DIR)",
						val);
			if (*val == '\0' || *end != '\0' || v < 0 || v > 1000000)
				return usage_error("option needs a non-negative integer, got '%s'", val);
			*(int *)((char *)a + options[k].offset) = (int)v;
		}
	}
	a->layout = vs_layout_default;
	if (a->skills_dir)
		a->layout.skills = a->skills_dir;
	if (a->plans_dir)
		a->layout.plans = a->plans_dir;
	if (a->tasks_dir)
		a->layout.tasks = a->tasks_dir;
	if (a->results_dir)
		a->layout.results = a->results_dir;
	/* GEAK's validate_skill.py: `SKILL_ID` alone is --static */
	for (int k = 0; a->mode < 0 && a->npositional > 0 && k < NOPTIONS; k++)
		if (options[k].kind == OPT_MODE && options[k].run == mode_static)
			a->mode = k;
	if (a->mode < 0)
		return usage_error("no mode given%s", "");
	if (a->npositional < options[a->mode].min_pos || a->npositional > options[a->mode].max_pos) {
		char msg[128];

		snprintf(msg, sizeof(msg), "%s takes %s", options[a->mode].name,
			 *options[a->mode].arg ? options[a->mode].arg : "no arguments");
		return usage_error("%s", msg);
	}
	return 0;
}

static int mode_help(const struct cli_args *a)
{
	(void)a;
	printf("usage: validate_skill MODE [ARGS] [OPTIONS]\n\n"
	       "Validates kernel skill cards by measurement: card -> plan -> task dirs -> A/B run -> record.\n"
	       "Run from the repository root (skills/, plans/, tasks/, results/ are relative to it).\n\nmodes:\n");
	for (int k = 0; k < NOPTIONS; k++)
		if (options[k].kind == OPT_MODE)
			printf("  %-14s %-10s %s\n", options[k].name, options[k].arg, options[k].help);
	printf("\noptions:\n");
	for (int k = 0; k < NOPTIONS; k++)
		if (options[k].kind != OPT_MODE && options[k].kind != OPT_REFUSED)
			printf("  %-15s %-20s %s\n", options[k].name, options[k].arg, options[k].help);
	printf("\nGEAK's command line: validate_skill SKILL_ID --static|--emit-plan|--record [--artifact EVAL_DIR]\n"
	       "  at a library root (skills/<id>/skill.md or skills/<id>.md); its typed results");
	for (int k = 0; k < NOPTIONS; k++)
		if (options[k].kind == OPT_REFUSED)
			printf(" %s", options[k].name);
	printf("\n  are refused: numbers come from a measured eval dir\n");
	printf("\nexit status: 0 done (--run/--validate/--merge: the run completed and its verdict is validated;\n"
	       "  a filtered run: every task it ran passed parity), 1 done and failed (a failed verdict or\n"
	       "  check), 2 usage error, 3 could not be done (bad input, evidence that does not verify,\n"
	       "  a device or I/O error)\n");
	return 0;
}

static int mode_version(const struct cli_args *a)
{
	(void)a;
	printf("validate_skill %s (git %s, kernels tree %s%s, GPU backend %s)\n", VS_TOOL_VERSION, VS_GIT_HEAD,
	       VS_KERNELS_TREE, VS_KERNELS_DIRTY ? " dirty" : "", VS_GPU_BUILD);
	return 0;
}

/*
 * The cards that one argument of --static or --verify names: a skills directory (every card in it,
 * both layouts), a card file, a skill directory, or an id in --skills-dir (library_resolve()).
 */
static int cards_named(struct library_cards *out, const struct cli_args *a, const char *arg)
{
	char *path = NULL;
	int err;

	memset(out, 0, sizeof(*out));
	if (fs_is_dir(arg)) {
		char *card = fs_join(arg, "skill.md");
		int skill_dir = card && fs_exists(card);

		free(card);
		if (!skill_dir && (err = library_list(out, arg)))
			return err;
		if (!skill_dir && !out->count)
			return vs_error(VS_ENOTFOUND,
					"'%s' is a directory holding no card (neither <id>.md nor <id>/skill.md)", arg);
		if (!skill_dir)
			return 0;
	}
	if ((err = library_resolve(&path, a->layout.skills, arg)))
		return err;
	out->paths = malloc(sizeof(*out->paths));
	if (!out->paths) {
		free(path);
		return vs_oom();
	}
	out->paths[0] = path;
	out->count = 1;
	return 0;
}

/* Run check on every card the positional arguments name; the first error, else 0. */
static int each_card(const struct cli_args *a, int (*check)(const char *path))
{
	int worst = 0;

	for (int i = 0; i < a->npositional; i++) {
		const char *p = a->positional[i];
		size_t n = strlen(p);
		struct library_cards l;
		int err;

		/* --static FILE.yaml: a workload (docs/DESIGN.md "Workloads"), not a card */
		if (check == card_check_file && n > 5 && !strcmp(p + n - 5, ".yaml")) {
			err = workload_lint(p);
			if (err && !worst)
				worst = err;
			else if (!err)
				printf("%s: ok\n", p);
			continue;
		}
		err = cards_named(&l, a, p);

		for (int k = 0; !err && k < l.count; k++) {
			int e = check(l.paths[k]);

			if (e && !worst)
				worst = e;
		}
		if (err && !worst)
			worst = err;
		library_cards_release(&l);
	}
	return worst;
}

static int mode_static(const struct cli_args *a)
{
	return each_card(a, card_check_file);
}

/* The card the mode's one argument names (a file, or an id at a library root); malloc'd or NULL. */
static char *card_arg(const struct cli_args *a, int *err)
{
	char *path = NULL;

	*err = library_resolve(&path, a->layout.skills, a->positional[0]);
	return *err ? NULL : path;
}

/*
 * Where --emit-plan writes: --out, else plans/<id>.plan.json, or plans/<id>.<impl>.plan.json for a
 * plan with a plugin (the plugin's implementation: the candidate's, else the baseline's), so that a
 * team's plugin plan never replaces the committed plan of the card; a workload plan adds
 * ".wl-<workload id>" before ".plan.json".
 */
static char *plan_path_for(const struct cli_args *a, const struct plan *p)
{
	/* A file given with --candidate-lib / --baseline-lib (.so or .py) names the plan after its kernel. */
	const struct plan_impl *pl = a->candidate_lib ? &p->candidate : a->baseline_lib ? &p->baseline : NULL;
	char *path, *name;

	char wl[160] = "";

	if (a->out)
		return strdup(a->out);
	if (p->workload)
		snprintf(wl, sizeof(wl), ".wl-%s", p->workload->id);
	if (!pl)
		path = fs_printf("%s/%s%s.plan.json", a->layout.plans, p->card_id, wl);
	else
		path = fs_printf("%s/%s.%s%s.plan.json", a->layout.plans, p->card_id, pl->name, wl);
	for (name = path ? path + strlen(a->layout.plans) + 1 : NULL; name && *name; name++)
		if (!(('a' <= *name && *name <= 'z') || ('A' <= *name && *name <= 'Z') ||
		      ('0' <= *name && *name <= '9') || *name == '.' || *name == '-' || *name == '_'))
			*name = '_';
	return path;
}

/*
 * A card's runtime contract (library.h) against the versions its plan's baseline and candidate
 * modules were described with: a plan outside it is refused (the card does not apply there); line
 * says what was checked.
 */
static int runtime_holds(const struct card *c, const struct plan *p, char *line, size_t cap)
{
	struct runtime_contract rt;
	cJSON *versions = cJSON_CreateObject();
	const char *pj[2] = {p->baseline.python_json, p->candidate.python_json};
	int err, bad;

	VS_CHECK_ALLOC(versions);
	if ((err = runtime_read(&rt, c))) {
		cJSON_Delete(versions);
		return err;
	}
	for (int k = 0; k < 2; k++) {
		cJSON *j = pj[k] ? cJSON_Parse(pj[k]) : NULL, *v;

		cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(j, "versions"))
		{
			if (cJSON_IsString(v) && !cJSON_GetObjectItemCaseSensitive(versions, v->string))
				cJSON_AddStringToObject(versions, v->string, v->valuestring);
		}
		cJSON_Delete(j);
	}
	bad = runtime_check(line, cap, &rt, versions);
	cJSON_Delete(versions);
	runtime_release(&rt);
	if (bad == 1)
		return vs_error(VS_EUNSUPPORTED,
				"%s: %s, the version this plan's implementations were described with: the card's "
				"runtime contract excludes this environment, so it cannot be validated here",
				c->path, line);
	return bad < 0 ? bad : 0;
}

static int emit_plan(const struct cli_args *a, char **path_out)
{
	struct card c;
	struct plan p;
	struct plan_options po = {
		.tier = a->tier,
		.gen = a->gen,
		.baseline = a->baseline,
		.candidate = a->candidate,
		.build_figures = a->build_figures,
		.baseline_lib = a->baseline_lib,
		.candidate_lib = a->candidate_lib,
		.references = a->references,
		.nreferences = a->nreferences,
		.timing = a->timing,
		.e2e = a->e2e || a->e2e_step,
		.e2e_step = a->e2e_step,
		.workload = a->workload,
	};
	int err;
	char *path = NULL, *script = NULL, *card = card_arg(a, &err), runtime[1024] = "";

	memset(&c, 0, sizeof(c));
	memset(&p, 0, sizeof(p));
	if (!card || (err = card_load(&c, card)) || (err = card_lint(&c)))
		goto done;
	if (!card_operator_planned(&c)) {
		err = vs_error(VS_EUNSUPPORTED,
			       "%s: match.operator '%s' is not planned here: this tool plans %s (the card lints; "
			       "its measurement is the field's own harness's)",
			       card, c.match.operator_name, card_planned_operators());
		goto done;
	}
	if ((err = plan_build(&p, &c, &po)) ||
	    (a->configs_from && (err = evaldir_pin_configs(&p, &c, a->configs_from))) ||
	    (err = runtime_holds(&c, &p, runtime, sizeof(runtime))))
		goto done;
	path = plan_path_for(a, &p);
	if (!path) {
		err = vs_oom();
		goto done;
	}
	if (!a->out && (err = fs_mkdir_p(a->layout.plans)))
		goto done;
	if ((err = plan_write(&p, path)))
		goto done;
	plan_print_summary(&p, stdout);
	if (*runtime)
		printf("  runtime    %s (the card's runtime contract)\n", runtime);
	{
		struct card_plan_facts facts = {.capture_required = p.capture_required,
						.parity_required = p.parity_required,
						.e2e_stage = p.e2e.enabled};

		if ((err = card_print_field_keys(stdout, &c, &facts)) < 0)
			goto done;
		err = 0;
	}
	printf("wrote %s\n", path);
	if (a->slurm) {
		struct slurm_options so = {.plan_path = path,
					   .results_root = a->layout.results,
					   .tasks_root = a->layout.tasks};
		size_t n = strlen(path);

		script = n > 10 && !strcmp(path + n - 10, ".plan.json") ?
				 fs_printf("%.*s.sbatch", (int)(n - 10), path) :
				 fs_printf("%s.sbatch", path);
		if (!script) {
			err = vs_oom();
			goto done;
		}
		if ((err = slurm_write_script(&p, script, &so)))
			goto done;
		printf("wrote %s (Slurm array of %d tasks: sbatch %s, then validate_skill --merge "
		       "%s/%s/.parts/<run id>)\n",
		       script, p.ntasks, script, a->layout.results, p.card_id);
	}
	if (path_out) {
		*path_out = path;
		path = NULL;
	}
done:
	free(card);
	free(path);
	free(script);
	plan_release(&p);
	card_release(&c);
	return err;
}

static int mode_emit_plan(const struct cli_args *a)
{
	return emit_plan(a, NULL);
}

static int online_cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (int)n : 1;
}

static int mode_materialize(const struct cli_args *a)
{
	struct plan p;
	struct progress pg;
	int err, done = 0, n = 0;
	const char *root = a->layout.tasks;

	if ((err = plan_read(&p, a->positional[0])) || (err = plan_check_current(&p, a->positional[0])))
		return err;
	for (int i = 0; i < p.ntasks; i++)
		n += !a->task || strstr(p.tasks[i].name, a->task) || !strncmp(p.task_hash[i], a->task, strlen(a->task));
	progress_init(&pg, stdout, n);
	for (int i = 0; i < p.ntasks && !err; i++) {
		char *dir = NULL;

		if (a->task && !strstr(p.tasks[i].name, a->task) && strncmp(p.task_hash[i], a->task, strlen(a->task)))
			continue;
		progress_status(&pg, "%s: generating inputs and oracle outputs", p.tasks[i].name);
		err = task_materialize(&dir, root, &p.tasks[i], a->threads ? a->threads : online_cores());
		progress_step(&pg);
		if (!err) {
			progress_line(&pg, "[%d/%d] %s: %s", i + 1, p.ntasks, p.tasks[i].name, dir);
			done++;
		} else {
			progress_line(&pg, "[%d/%d] %s: failed", i + 1, p.ntasks, p.tasks[i].name);
		}
		free(dir);
	}
	progress_end(&pg);
	if (!err)
		printf("%d task dir%s ready under %s/\n", done, done == 1 ? "" : "s", root);
	plan_release(&p);
	return err;
}

/* "0,1,3" into ordinals; at most cap, each listed once. */
static int parse_gpus(int *out, int cap, int *n, const char *list)
{
	const char *s = list;

	*n = 0;
	while (*s) {
		char *end;
		long v = strtol(s, &end, 10);

		if (end == s || v < 0 || v > 1023 || (*end && *end != ','))
			return usage_error("--gpus takes GPU ordinals separated by commas (0,1,2), got '%s'", list);
		for (int k = 0; k < *n; k++)
			if (out[k] == v)
				return usage_error("--gpus lists a GPU twice ('%s')", list);
		if (*n >= cap)
			return usage_error("--gpus: at most 64 GPUs ('%s')", list);
		out[(*n)++] = (int)v;
		s = *end ? end + 1 : end;
	}
	if (!*n)
		return usage_error("--gpus needs at least one ordinal%s", "");
	return 0;
}

static int run_plan(const struct cli_args *a, const char *plan_path, char **eval_dir)
{
	struct runner_options ro;
	int gpus[64], err;

	memset(&ro, 0, sizeof(ro));
	ro.plan_path = plan_path;
	ro.tasks_root = a->layout.tasks;
	ro.results_root = a->layout.results;
	ro.task_filter = a->task;
	ro.impl_filter = a->impl;
	ro.config_filter = a->config;
	ro.scratch = a->scratch;
	ro.run_id = a->run_id;
	ro.gpu_ordinal = a->gpu;
	ro.threads = a->threads ? a->threads : online_cores();
	if (a->gpus) {
		if ((err = parse_gpus(gpus, 64, &ro.ngpus, a->gpus)))
			return err;
		ro.gpus = gpus;
	}
	if (a->part >= 0) {
		if (a->task || a->impl || a->config || a->scratch)
			return usage_error("--part runs one whole plan task: it does not combine with --task, --impl, "
					   "--config or --scratch%s",
					   "");
		ro.has_part = 1;
		ro.part_index = a->part;
	}
	return runner_run(eval_dir, &ro);
}

/* A filtered run failed when a task it ran stopped, or a config it checked failed parity. */
static int partial_failed(const cJSON *j)
{
	const cJSON *t;

	cJSON_ArrayForEach(t, cJSON_GetObjectItem(j, "tasks"))
	{
		if (cJSON_GetObjectItem(t, "error") ||
		    cJSON_GetNumberValue(cJSON_GetObjectItem(t, "timed_check_failures")) > 0)
			return 1;
		for (int k = 0; k < 2; k++) {
			const cJSON *c;

			cJSON_ArrayForEach(
				c,
				cJSON_GetObjectItem(
					cJSON_GetObjectItem(t, k ? "candidate" : "baseline"),
					"configs")) if (!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(c, "parity")) ?
									cJSON_GetStringValue(
										cJSON_GetObjectItem(c, "parity")) :
									"",
								"fail")) return 1;
		}
	}
	return 0;
}

/*
 * The outcome of a completed run as a status: 0 when its verdict is validated (a filtered run:
 * when no task it ran stopped or failed a check), VS_EFAIL otherwise (the run said why on stdout).
 */
static int run_outcome(const char *eval_dir)
{
	char *path = fs_join(eval_dir, "result.json"), *text = NULL;
	cJSON *j = NULL;
	size_t len;
	int err;

	if (!path)
		return vs_error(VS_ENOMEM, "out of memory");
	err = fs_read_file(&text, &len, path, 64u << 20);
	if (!err && !(j = cJSON_ParseWithLength(text, len)))
		err = vs_error(VS_EPARSE, "%s: not JSON", path);
	if (!err) {
		const char *verdict = cJSON_GetStringValue(cJSON_GetObjectItem(j, "verdict"));

		if (cJSON_IsTrue(cJSON_GetObjectItem(j, "partial")))
			err = partial_failed(j) ? VS_EFAIL : 0;
		else
			err = verdict && !strcmp(verdict, "validated") ? 0 : VS_EFAIL;
	}
	cJSON_Delete(j);
	free(text);
	free(path);
	return err;
}

static int mode_run(const struct cli_args *a)
{
	char *eval_dir = NULL;
	int err = run_plan(a, a->positional[0], &eval_dir);

	if (!err)
		err = run_outcome(eval_dir);
	free(eval_dir);
	return err;
}

static void publish_opts(struct publish_options *po, const struct cli_args *a)
{
	memset(po, 0, sizeof(*po));
	po->url = a->publish;
	po->timeout_s = a->timeout;
	po->outbox = NULL;
	{
		static char *outbox;

		free(outbox);
		outbox = fs_join(a->layout.results, ".outbox");
		po->outbox = outbox;
	}
}

/*
 * After a record: POST it with result.json. A server that cannot be reached leaves the payload in
 * the outbox and is a warning (the record is done and nothing is lost); a refusal is an error.
 */
static int publish_record(const struct cli_args *a, const char *card, const char *eval_dir)
{
	struct publish_options po;
	char *payload = NULL;
	int err;

	if (!a->publish)
		return 0;
	publish_opts(&po, a);
	if ((err = publish_payload(&payload, card, eval_dir)))
		return err;
	err = publish_send(&po, payload);
	free(payload);
	return err == 1 ? 0 : err;
}

static int mode_flush(const struct cli_args *a)
{
	struct publish_options po;
	int sent, left, err;

	if (!a->publish)
		return usage_error("--flush sends the outbox to a server: give it with --publish URL%s", "");
	publish_opts(&po, a);
	err = publish_flush(&po, &sent, &left);
	if (err >= 0)
		printf("%d payload%s sent, %d waiting in the outbox\n", sent, sent == 1 ? "" : "s", left);
	return err == 1 ? VS_EFAIL : err;
}

static int mode_fetch(const struct cli_args *a)
{
	struct publish_options po;
	char *path = NULL;
	int err;

	publish_opts(&po, a);
	err = publish_fetch(&path, a->positional[0], a->layout.skills, a->force, &po);
	free(path);
	return err;
}

static int mode_merge(const struct cli_args *a)
{
	struct merge_options mo = {.results_root = a->layout.results, .run_id = a->run_id};
	char *eval_dir = NULL;
	int err = merge_parts(&eval_dir, a->positional, a->npositional, &mo);

	if (!err)
		err = run_outcome(eval_dir);
	free(eval_dir);
	return err;
}

/* The newest complete eval dir of a card (evaldir_latest()), said on stdout, or NULL with the error said. */
static char *latest_eval_dir(const struct cli_args *a, const char *card_path)
{
	struct card c;
	struct evaldir_skipped sk;
	char *out = NULL;

	memset(&c, 0, sizeof(c));
	if (!card_load(&c, card_path) && evaldir_latest(&out, &sk, a->layout.results, c.id))
		out = NULL;
	if (out && (sk.unfinished || sk.partial))
		printf("%s: no --eval-dir: using %s, the latest complete eval dir (passed over %d newer: %d without "
		       "result.json, %d partial)\n",
		       card_path, out, sk.unfinished + sk.partial, sk.unfinished, sk.partial);
	else if (out)
		printf("%s: no --eval-dir: using %s, the latest complete eval dir\n", card_path, out);
	card_release(&c);
	return out;
}

/* After a card's record: its library's index.yaml rewritten, where its root has one (GEAK's). */
static int keep_index_current(const char *card)
{
	char *root = NULL;
	int n = 0, found = library_index_root(&root, card), err;

	if (found <= 0)
		return found;
	err = library_reindex(root, &n);
	if (!err)
		printf("%s/index.yaml: %d card%s indexed\n", root, n, n == 1 ? "" : "s");
	free(root);
	return err;
}

static int mode_record(const struct cli_args *a)
{
	int err;
	char *card = card_arg(a, &err), *dir = NULL;
	const char *given = a->eval_dir ? a->eval_dir : a->artifact;

	if (!card)
		return err;
	if (a->eval_dir && a->artifact && strcmp(a->eval_dir, a->artifact)) {
		free(card);
		return usage_error("--eval-dir and --artifact name two eval dirs ('%s'): give one", a->artifact);
	}
	dir = given ? strdup(given) : latest_eval_dir(a, card);
	if (!dir) {
		free(card);
		return VS_ENOTFOUND;
	}
	err = record_card_run(card, dir, a->older);
	if (!err)
		err = keep_index_current(card);
	if (!err)
		err = publish_record(a, card, dir);
	free(dir);
	free(card);
	return err;
}

static int mode_reindex(const struct cli_args *a)
{
	const char *root = a->npositional ? a->positional[0] : ".";
	int n = 0, err = library_reindex(root, &n);

	if (!err)
		printf("%s/index.yaml: %d card%s indexed\n", root, n, n == 1 ? "" : "s");
	return err;
}

static int mode_report(const struct cli_args *a)
{
	struct report_options ro = {
		.skills_dir = a->layout.skills,
		.plans_dir = a->layout.plans,
		.format = a->format,
		.max_age_days = a->max_age_days,
	};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = NULL;
	int err, werr;

	if (a->out) {
		/* The whole report in memory, then one atomic write: never a half-written page. */
		f = open_memstream(&buf, &len);
		VS_CHECK_ALLOC(f);
		ro.out = f;
	}
	err = report_run(&ro);
	if (f) {
		fclose(f);
		werr = err == VS_EUSAGE ? 0 : fs_write_atomic(a->out, buf, len, 0644);
		if (werr)
			err = werr;
		else if (err != VS_EUSAGE)
			printf("wrote %s\n", a->out);
		free(buf);
	}
	return err;
}

static int mode_verify(const struct cli_args *a)
{
	return each_card(a, record_verify);
}

static int mode_validate(const struct cli_args *a)
{
	char *plan = NULL, *eval_dir = NULL, *card = NULL;
	int err;

	if ((err = emit_plan(a, &plan)))
		return err;
	card = card_arg(a, &err);
	if (!err)
		err = run_plan(a, plan, &eval_dir);
	if (!err)
		err = record_card(card, eval_dir);
	if (!err)
		err = keep_index_current(card);
	if (!err)
		err = publish_record(a, card, eval_dir);
	if (!err)
		err = run_outcome(eval_dir); /* recorded either way; the status says which */
	free(card);
	free(plan);
	free(eval_dir);
	return err;
}

/*
 * Whether name is a temporary left by an interrupted write whose process is gone:
 * "<file>.tmp.<pid>" (fs_write_atomic) or ".<task hash>.tmp.<pid>" (a task dir being materialized).
 */
static int stale_temporary(const char *name)
{
	const char *t = NULL, *p = name;
	char *end;
	long pid;

	while ((p = strstr(p, ".tmp.")))
		t = p++;
	if (!t || t == name)
		return 0;
	errno = 0;
	pid = strtol(t + 5, &end, 10);
	if (end == t + 5 || *end || errno || pid <= 0)
		return 0;
	return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Remove the stale temporaries in dir and, depth levels down, in its subdirectories. */
static int gc_temporaries(const char *dir, int depth, int *removed)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int err = 0;

	while (d && !err && (de = readdir(d))) {
		char *path;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		path = fs_join(dir, de->d_name);
		if (!path) {
			err = vs_oom();
			break;
		}
		if (stale_temporary(de->d_name)) {
			err = fs_remove_tree(path);
			if (!err) {
				printf("removed %s (left by an interrupted write)\n", path);
				(*removed)++;
			}
		} else if (depth > 0 && !fs_is_link(path) && fs_is_dir(path)) {
			err = gc_temporaries(path, depth - 1, removed);
		}
		free(path);
	}
	if (d)
		closedir(d);
	return err;
}

static int mode_gc(const struct cli_args *a)
{
	const char *plans_dir = a->layout.plans;
	const char *tasks_root = a->layout.tasks;
	char **keep = NULL, *opdir = NULL;
	const struct vs_operator *op;
	int nkeep = 0, removed = 0, temporaries = 0, runs = 0, err = 0;
	DIR *d = opendir(plans_dir);
	struct dirent *de;

	/*
	 * The task hashes of every plan, read as plain JSON: no plugin or Python module is loaded, so
	 * that any number of plugin plans, or a plugin file gone, leaves --gc working.
	 */
	while (d && (de = readdir(d)) && !err) {
		size_t n = strlen(de->d_name);
		char *path;

		if (n < 11 || strcmp(de->d_name + n - 10, ".plan.json"))
			continue;
		path = fs_join(plans_dir, de->d_name);
		err = path ? plan_read_task_hashes(&keep, &nkeep, path) : vs_oom();
		free(path);
	}
	if (d)
		closedir(d);
	if (err)
		goto done;
	/* every operator's task dirs: root/<operator>/<hash>/ */
	for (int o = 0; !err && (op = vs_operator_at(o)); o++) {
		opdir = fs_join(tasks_root, op->name);
		d = opdir ? opendir(opdir) : NULL;
		while (d && (de = readdir(d)) && !err) {
			int used = 0;
			char *victim;

			if (de->d_name[0] == '.')
				continue; /* temporaries: below */
			for (int i = 0; i < nkeep; i++)
				used |= !strcmp(keep[i], de->d_name);
			if (used)
				continue;
			victim = fs_join(opdir, de->d_name);
			err = victim ? fs_remove_tree(victim) : vs_oom();
			if (!err) {
				printf("removed %s\n", victim);
				removed++;
			}
			free(victim);
		}
		if (d)
			closedir(d);
		if (!err && opdir)
			err = gc_temporaries(opdir, 0, &temporaries);
		free(opdir);
		opdir = NULL;
	}
	if (!err)
		err = gc_temporaries(a->layout.skills, 1, &temporaries); /* skills/<id>/skill.md too */
	if (!err)
		err = gc_temporaries(plans_dir, 0, &temporaries);
	if (!err)
		err = evaldir_gc(a->layout.results, &runs);
	if (!err)
		err = gc_temporaries(a->layout.results, 3, &temporaries);
	if (!err)
		printf("%d task dir%s removed; %d in use by plans in %s/; %d temporar%s of interrupted writes removed; "
		       "%d eval dir%s removed (interrupted runs' stubs, debug runs)\n",
		       removed, removed == 1 ? "" : "s", nkeep, plans_dir, temporaries, temporaries == 1 ? "y" : "ies",
		       runs, runs == 1 ? "" : "s");
done:
	for (int i = 0; i < nkeep; i++)
		free(keep[i]);
	free(keep);
	free(opdir);
	return err;
}

/* An option that only some modes read, given to another mode, would be silently ignored: refused. */
static int check_scoped(const struct cli_args *a)
{
	unsigned bit = options[a->mode].modes;

	for (int k = 0; k < NOPTIONS; k++) {
		const struct cli_option *o = &options[k];
		const void *field = (const char *)a + o->offset;
		int set;
		char msg[160], list[96] = "";

		if (o->kind == OPT_MODE || o->modes == M_ALL || (o->modes & bit))
			continue;
		set = o->kind == OPT_STR  ? *(const char *const *)field != NULL :
		      o->kind == OPT_INT  ? *(const int *)field != o->unset :
		      o->kind == OPT_LIST ? a->nreferences > 0 :
					    *(const int *)field != 0;
		if (!set)
			continue;
		for (int m = 0; m < NOPTIONS; m++)
			if (options[m].kind == OPT_MODE && (options[m].modes & o->modes))
				snprintf(list + strlen(list), sizeof(list) - strlen(list), " %s", options[m].name);
		snprintf(msg, sizeof(msg), "%s applies to%s only, not to %s", o->name, list, options[a->mode].name);
		return usage_error("%s", msg);
	}
	return 0;
}

int cli_main(int argc, char **argv)
{
	struct cli_args a;
	int err = parse(&a, argc, argv);

	if (!err)
		err = check_scoped(&a);
	if (err)
		return exit_status(err);
	return exit_status(options[a.mode].run(&a));
}
