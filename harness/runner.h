/*
 * runner.h - `--run PLAN`: the isolated A/B of baseline against candidate on every task of a plan
 * (docs/DESIGN.md "Measurement protocol"). The runner selects the tasks, probes the devices, deals the
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

struct runner_options {
	const char *plan_path;
	const char *tasks_root;    /* default "tasks" */
	const char *results_root;  /* default "results" */
	const char *task_filter;   /* run only tasks whose name contains this or whose hash starts with it */
	const char *impl_filter;   /* check only this implementation (no timing): a partial run */
	const char *config_filter; /* restrict the candidate to this config name: a partial run */
	int scratch;               /* --scratch: run a plan that differs from what its card plans (an edited
	                            * plan) as a debug run (partial, under .debug/, never recorded); without
	                            * it, and without a filter, such a plan is refused (plan_check_card()) */
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

/** The whole `--run`: sets *eval_dir (malloc'd) to the eval dir written (evaldir.h). */
int runner_run(char **eval_dir, const struct runner_options *o);

#endif /* VS_RUNNER_H */
