/*
 * merge.h - `--merge DIR...`: join the parts of a run that was spread over a cluster (a Slurm array,
 * `--emit-plan --slurm`) into one eval dir that `--record` accepts.
 *
 * Each part is an eval dir that `--run PLAN --part I --run-id RUN` wrote for one plan task
 * (results/<card>/.parts/<RUN>/<I>/). A DIR argument is a part or a directory of parts. The parts
 * must come from one plan file (same sha256), one card hash, one build (tool identity) and one kind
 * of device, and together hold every task of the plan exactly once; each part passes the checks
 * `--record` makes that need no card (evaldir_part_load(): files match the sha256s its result.json
 * records, the plugins that ran are unchanged, its plan copy holds its tasks, and its speedups
 * recompute from its samples.csv, so that a part with edited samples is refused here). The merged eval dir has the structure of a direct run's:
 * tasks in plan order, samples.csv rows and manifest copies of every task, the plan copy, a run.log
 * joining the parts' logs, and the overall numbers, gates and verdict recomputed from the samples
 * (evaldir_verdict), so that it verifies like any other.
 */
#ifndef VS_MERGE_H
#define VS_MERGE_H

struct merge_options {
	const char *results_root; /* default "results" */
	const char *run_id;       /* default: the parts' run id */
};

/**
 * Merge the parts found under dirs into results/<card>/<run id>/; *eval_dir (malloc'd) names it.
 * Errors, one line each: VS_ENOTFOUND (a DIR holds no part), VS_EVERIFY (a part's files do not
 * match, parts from different plans/builds/devices, a task twice, tasks missing: the message names
 * them and the --part to rerun), VS_EUSAGE (a part filtered with --impl/--config), VS_EIO.
 */
int merge_parts(char **eval_dir, const char *const *dirs, int ndirs, const struct merge_options *o);

#endif /* VS_MERGE_H */
