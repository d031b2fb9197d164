/*
 * runner.h - `--run PLAN`: the isolated A/B of baseline against candidate on every task of a plan
 * (docs/DESIGN.md "Measurement protocol").
 *
 * Per task: parity of every config of both implementations (outputs poisoned with NaN before each
 * launch; a second launch into another poisoned buffer at another address must be bit-identical;
 * inputs unchanged; every input set), a capture-safety gate on GPUs (graph captured once, replayed,
 * then replayed again after the inputs, seqlens and block_table included, were changed in place),
 * a tuning pass choosing the fastest passing candidate config, then alternating (AB BA ...) timed
 * samples of the chosen configs, each after poisoning outputs and workspace and flushing the
 * last-level cache, rotating input sets per pair, checking every k-th timed output, until the
 * bootstrap CI of the speedup is within the plan's width or a cap is reached.
 *
 * Output: results/<card id>/<run id>/ with result.json, samples.csv, run.log, plan.json and
 * manifests/<task hash>.json (copies), all written atomically.
 */
#ifndef VS_RUNNER_H
#define VS_RUNNER_H

#include <stdio.h>

#include "device.h"
#include "mla_decode.h"
#include "plan.h"
#include "stats.h"
#include "task.h"

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

/** One implementation's outcome on one task. */
struct runner_impl_result {
	const struct mla_decode_impl *impl;
	int nconfigs;
	const struct mla_decode_config *configs;
	int *config_pass;          /* [nconfigs]: 1 pass, 0 fail, -1 skipped by a filter */
	char **config_detail;      /* [nconfigs]: failure detail (malloc'd) or NULL */
	double *tune_ms;           /* [nconfigs]: tuning medians (candidate) or 0 */
	int chosen;                /* index of the measured config, -1 if none passed */
	int capture;               /* 1 pass, 0 fail, -1 not applicable / not run */
	char *capture_detail;
	struct stats_summary timing;
	int outliers;              /* samples beyond Q3 + 3 IQR (kept, shown) */
};

struct runner_task_result {
	char name[96];
	char hash[65];
	double bytes, flops;
	int complete;              /* parity, capture and timing all ran */
	int parity_pass;           /* both implementations have a passing config, no timed check failed */
	char *error;               /* a fault that stopped the task (malloc'd), or NULL */
	struct runner_impl_result base, cand;
	double *t_base, *t_cand;   /* [npairs] ms */
	int npairs;
	int stop_reason;           /* enum stats_stop_reason */
	int timed_checks, timed_check_failures;
	struct stats_ci speedup;
	int sm_mhz_begin, sm_mhz_end; /* clocks around sampling, -1 unknown */
	uint64_t throttle_begin, throttle_end; /* clocks event reasons then (gpu_clocks.h), 0 none */
};

/**
 * Run one loaded task on device d: parity, capture, tuning, A/B. samples (may be NULL) receives
 * CSV rows. log (may be NULL) receives progress lines. Returns 0 when the task ran to the end
 * (whatever its verdict), VS_EDEVICE after a GPU fault (r->error says which call), other codes for
 * harness errors.
 */
struct runner_task_ctx {
	struct vs_device *device;
	const struct plan *plan;
	const char *plan_path;          /* for the reproduce command in failure details */
	const struct mla_decode_impl *base, *cand;
	const char *config_filter;      /* candidate config name, or NULL */
	int check_base, check_cand;     /* parity-check this implementation's configs */
	int timing;                     /* run tuning, capture and the A/B (0 = parity only) */
	FILE *samples;                  /* CSV rows, or NULL */
	FILE *log;                      /* progress lines (also echoed to stdout), or NULL */
	int gpu_ordinal;                /* the GPU the device was opened on (clocks), -1 if none */
};

int runner_run_task(struct runner_task_result *r, const struct runner_task_ctx *ctx,
		    const struct task_data *t);

/** Set up r for a task (names, counts, per-config slots) before anything ran. */
int runner_task_result_init(struct runner_task_result *r, const struct runner_task_ctx *ctx,
			    const struct task_spec *spec, const char *hash);

/** Compute r's summaries, outliers and speedup CI from its samples (t_base, t_cand, npairs). */
int runner_task_finish(struct runner_task_result *r, const struct plan *p);

void runner_task_result_release(struct runner_task_result *r);

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
