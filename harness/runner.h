/*
 * runner.h - `--run PLAN`: the isolated A/B of baseline against candidate on every task of a plan
 * (DESIGN.md "Measurement protocol"). The runner selects the tasks, probes the devices, deals the
 * tasks to workers (worker.h), each of which measures one task (measure.h), and hands the outcomes,
 * in plan order, to the eval dir writer.
 *
 * Output: results/<card id>/<run id>/ with result.json, samples.csv, run.log, plan.json and
 * manifests/<task hash>.json (copies), all written atomically.
 */
#ifndef VS_RUNNER_H
#define VS_RUNNER_H

#include <stdio.h>

#include "device.h"
#include "plan.h"

struct cJSON;

#define VS_RESULT_SCHEMA "validate_skill.result/1"

struct runner_options {
	const char *plan_path;
	const char *tasks_root;    /* default "tasks" */
	const char *results_root;  /* default "results" */
	const char *task_filter;   /* run only tasks whose name contains this or whose hash starts with it */
	const char *impl_filter;   /* check only this implementation (no timing): a partial run */
	const char *config_filter; /* restrict the candidate to this config name: a partial run */
	const char *run_id;        /* default: UTC timestamp + generation */
	int gpu_ordinal;           /* GPU to use for "hip" plans */
	const int *gpus;           /* --gpus: one worker per listed ordinal, tasks dealt as workers free up,
	                            * outcomes in plan order (a "cpu" plan runs that many CPU workers) */
	int ngpus;                 /* entries of gpus (0: one worker on gpu_ordinal) */
	int has_part;              /* run only plan task part_index into a part eval dir (Slurm arrays): */
	int part_index;            /* results/<card>/.parts/<run_id>/<index>, joined later by --merge */
	int threads;               /* oracle / generator threads (0 = online cores) */
	double task_timeout_s;     /* a worker running longer is killed (0 = 900 s) */
	int in_process;            /* run tasks without worker processes (also VS_NO_FORK=1) */
	struct vs_device *device;  /* tests: an injected device (e.g. with a deterministic clock) */
};

/** The whole `--run`: sets *eval_dir (malloc'd) to the eval dir written. */
int runner_run(char **eval_dir, const struct runner_options *o);

/** One task's outcome as the overall numbers and gates need it (the runner's and --merge's). */
struct runner_task_summary {
	int complete, parity_pass;
	int base_capture, cand_capture; /* 1 pass, 0 fail, -1 not applicable */
	const double *t_base, *t_cand;  /* [npairs] ms */
	int npairs;
};

/**
 * Add "overall" (geometric-mean speedup with its joint bootstrap CI), "gates", "flags" (takes
 * ownership of flags; NULL for none) and "verdict" to a result.json object, from n task outcomes
 * of plan p. line (may be NULL) receives the one-line summary. Returns 0 or VS_ENOMEM.
 */
int runner_verdict(struct cJSON *root, const struct plan *p, const struct runner_task_summary *t, int n,
		   int partial, struct cJSON *flags, char *line, size_t cap);

/** result.json's "tool" object: version, git head, kernels tree and dirty flag of this build. */
struct cJSON *runner_tool_json(void);

/** result.json's "plugins" array: role, impl, path and sha256 of every plugin the plan names. */
struct cJSON *runner_plugins_json(const struct plan *p);

#endif /* VS_RUNNER_H */
