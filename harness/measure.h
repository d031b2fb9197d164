/*
 * measure.h - one task on one device: the measurement of baseline against candidate
 * (docs/DESIGN.md "Measurement protocol"). The runner deals tasks to workers; each worker calls
 * measure_task() once per task.
 *
 * The phases, in order (measure.c has one function per phase):
 *  1. buffers: every input set uploaded, two output pairs at distinct addresses, the workspace,
 *     each of out, lse and the workspace between guard regions (checked after every checked
 *     launch: "wrote N bytes past the end of 'out'"); two buffers for the run-time q (freshset.h);
 *  2. parity of every config of both implementations: outputs poisoned with NaN before each
 *     launch; a second launch into another poisoned buffer at another address must be
 *     bit-identical; inputs unchanged; every input set, then the run-time set (a q drawn in this
 *     run, its reference computed by the oracle after the launch); the margins are kept;
 *  3. tuning: a few timed samples of every passing config, the fastest median is chosen (an A/A
 *     run measures one config twice: the baseline takes the candidate's choice);
 *  4. the capture-safety gate on GPUs: the chosen config captured once in a graph, replayed, then
 *     replayed again after the inputs, seqlens and block_table included, were changed in place;
 *  5. the A/B: alternating (AB BA ...) timed samples of the chosen configs, each after poisoning
 *     outputs and workspace and flushing the last-level cache, rotating input sets per pair,
 *     checking every k-th timed output, until the bootstrap CI of the speedup is within the plan's
 *     width or a cap is reached.
 * References (the plan's, on the tasks they do not skip) go through phases 2-4 as the candidate
 * does, and are timed in the same rounds: a round is baseline, candidate, then each reference
 * (B C R1 R2), on one input set; the order is reversed every nsets rounds (R2 R1 C B), as the two
 * roles alternate without references, so that a drift in time weighs on every role alike.
 *     A fresh q per pair (at alternating addresses, over the keys of the input sets in rotation);
 *     the outputs of a random one pair in check_every checked for every role (guards, then the
 *     oracle's reference or, above VS_FRESH_ORACLE_FLOPS, the baseline's output).
 */
#ifndef VS_MEASURE_H
#define VS_MEASURE_H

#include <stdint.h>
#include <stdio.h>

#include "device.h"
#include "mla_decode.h"
#include "plan.h"
#include "stats.h"
#include "task.h"

struct cJSON;

/**
 * config_pass of a config that does not run a task: its launch answered MLA_EUNSUPPORTED (the ABI's
 * "this config cannot run these args"; kernels/mla_decode.h). Neither a pass nor a failure: never
 * tuned nor chosen, recorded as "unsupported" with the reason.
 */
#define MEASURE_CONFIG_DECLINED 2

/** One implementation's outcome on one task. */
struct measure_impl {
	const struct mla_decode_impl *impl;
	int nconfigs;
	const struct mla_decode_config *configs; /* borrowed from the plan */
	int *config_pass;                        /* [nconfigs]: 1 pass, 0 fail, -1 skipped by a filter,
						    MEASURE_CONFIG_DECLINED: its launch declined the task */
	char **config_detail;                    /* [nconfigs]: failure detail (malloc'd) or NULL */
	double *tune_ms;                         /* [nconfigs]: tuning medians (candidate) or 0 */
	double *margin;                          /* [nconfigs]: parity margin, the worst |a - e| / (atol + rtol |e|)
	                            * over every checked output (out and lse; < 1 passes), -1 not run */
	double *cos_diff;                        /* [nconfigs]: the worst cos_diff of out (tol_out.cos_tol bounds it) */
	int chosen;                              /* index of the measured config, -1 if none passed */
	int capture;                             /* 1 pass, 0 fail, -1 not applicable / not run */
	char *capture_detail;
	struct stats_summary timing;
	int outliers;    /* samples beyond Q3 + 3 IQR (kept, shown) */
	double setup_ms; /* wall ms it spent getting ready for this task, outside every sample: prepare()
	                  * of its configs (JIT, autotune), each config's first launch (a JIT compiles
	                  * there; the kernel's own run is in it too) and the capture of its timed graphs */
};

/**
 * One reference implementation's outcome on one task (docs/DESIGN.md "References"): the phases of
 * the candidate (parity of every config, tuning, capture), then its samples in the candidate's
 * rounds. Never part of the task's parity or verdict.
 */
struct measure_ref {
	struct measure_impl m;
	const char *skip; /* the plan's reason it skips this task (borrowed), or NULL */
	int timed_checks, timed_check_failures;
	double *t;             /* [npairs] ms when it was timed, else NULL */
	int has_ratio;         /* timed, parity and capture passed: ratio holds */
	struct stats_ci ratio; /* median of t[i] / t_cand[i] with its bootstrap CI */
};

/**
 * The e2e stage's outcome on one task (docs/DESIGN.md "End to end"): the step module's decode step
 * around each core, captured as one graph (pre + the core's launch + post) per side, its replays
 * timed in rounds of baseline, candidate and control (the baseline's graph again), the order
 * reversed every round. Owned by its measure_result.
 */
struct measure_e2e {
	int planned;                      /* the plan gives this task an e2e stage */
	int ran;                          /* sampled (npairs > 0) */
	char *skipped;                    /* not run: why (the step module's supports(), no passing config), or NULL */
	char *error;                      /* the stage stopped: its line (the isolated outcome stands), or NULL */
	double *t_base, *t_cand, *t_ctrl; /* [npairs] step ms */
	int npairs, stop_reason;
	int set;    /* the input set the steps ran on */
	int parity; /* candidate step output vs the baseline's: 1 pass, 0 fail, -1 not checked */
	char *parity_detail;
	double cos_diff; /* of the candidate's step output against the baseline's */
	int ref_checked; /* the baseline's step output was compared with the module's reference() */
	double ref_cos_diff;
	long long step_bytes;           /* memory the step keeps for the task (prepare's answer) */
	long long peak_base, peak_cand; /* the framework's peak bytes while each side's step graph was
	                                 * captured and first replayed, -1 unknown */
	size_t out_elems;
	/* measure_result_finish() */
	struct stats_summary step_base, step_cand, step_ctrl;
	struct stats_ci ratio, ctrl_ratio; /* median of t_base/t_cand and of t_base/t_ctrl, bootstrap CI */
};

/** e2e_pct of a step-time ratio t_base / t_cand: 100 (t_base - t_cand) / t_base. */
double measure_e2e_pct(double ratio);

/** One task's outcome; owns what its pointers point to (measure_result_release() frees it). */
struct measure_result {
	char name[96];
	char hash[65];
	double bytes, flops;
	int complete;      /* parity, capture and timing all ran */
	int parity_pass;   /* both implementations have a passing config, no timed check failed
	                            * (parity-only runs: each side checked has a passing config) */
	char *error;       /* a fault that stopped the task (malloc'd), or NULL */
	char *skipped;     /* not run: "<impl> does not support it: <reason>" (the plan's
	                            * unsupported list; malloc'd), or NULL. Skipped is not passed. */
	char *py_versions; /* the embedded interpreter's package versions in the worker
	                            * (compact JSON, malloc'd), or NULL when no Python ran */
	char *py_autotune; /* what the @triton.autotune kernels of the Python sides did in the worker
	                            * (pyimpl_autotune_now(), compact JSON, malloc'd), or NULL */
	struct measure_impl base, cand;
	double *t_base, *t_cand; /* [npairs] ms */
	int npairs;
	int stop_reason; /* enum stats_stop_reason */
	int timed_checks, timed_check_failures;
	struct stats_ci speedup;
	int sm_mhz_begin, sm_mhz_end;                    /* clocks around sampling, -1 unknown */
	uint64_t throttle_begin, throttle_end;           /* clocks event reasons then (gpu_clocks.h), 0 none */
	struct measure_ref refs[VS_PLAN_MAX_REFERENCES]; /* [nrefs]: the plan's references, in its order */
	int nrefs;
	char sandbox[320]; /* what the worker's implementation ran under (sandbox.h), "" in process */
	struct measure_e2e e2e;
};

/** What a measurement runs with; every pointer is borrowed. */
struct measure_ctx {
	struct vs_device *device;
	const struct plan *plan;
	const char *plan_path; /* for the reproduce command in failure details */
	const struct mla_decode_impl *base, *cand;
	const char *config_filter;  /* config name of the candidate (of the baseline when only it is
	                                 * checked: --impl BASELINE --config C), or NULL */
	int check_base, check_cand; /* parity-check this implementation's configs */
	unsigned check_refs;        /* bit k: parity-check reference k (with timing: all of them) */
	int timing;                 /* run tuning, capture and the A/B (0 = parity only) */
	FILE *samples;              /* CSV rows, or NULL */
	FILE *log;                  /* progress lines (also echoed to stdout), or NULL */
	int gpu_ordinal;            /* the GPU the device was opened on (clocks), -1 if none */
};

/**
 * Run one loaded task on ctx->device: parity, tuning, capture, A/B. ctx->samples (may be NULL)
 * receives CSV rows (task,set,pair,order,role,config,ms,checked), ctx->log (may be NULL) progress
 * lines. *r is always set up (release it with measure_result_release()). Returns 0 when the task
 * ran to the end (whatever its verdict), VS_EDEVICE after a GPU fault (r->error says which call),
 * other codes for harness errors (r->error holds the message too).
 */
int measure_task(struct measure_result *r, const struct measure_ctx *ctx, const struct task_data *t);

/** Set up r for a task (names, counts, per-config slots) before anything ran. Errors: VS_ENOMEM. */
int measure_result_init(struct measure_result *r, const struct measure_ctx *ctx, const struct task_spec *spec,
			const char *hash);

/** Compute r's summaries, outliers and speedup CI from its samples (t_base, t_cand, npairs). */
int measure_result_finish(struct measure_result *r, const struct plan *p);

/**
 * n doubles as one string of %.17g numbers separated by spaces (a new cJSON string; NULL when out of
 * memory), and back: measure_doubles_parse() returns n + 1 doubles (malloc'd; missing numbers 0;
 * NULL when out of memory). The worker's numbers reach the parent bit for bit this way.
 */
struct cJSON *measure_doubles_json(const double *x, int n);
double *measure_doubles_parse(const char *s, int n);

/** r->e2e as the worker's message carries it (a new cJSON object, NULL when out of memory). */
struct cJSON *measure_e2e_to_msg(const struct measure_result *r);

/** The inverse of measure_e2e_to_msg() into r->e2e (before measure_result_finish()). */
void measure_e2e_from_msg(struct measure_result *r, const struct cJSON *j);

/** Free what an e2e outcome owns and zero it (measure_result_release() does it for r->e2e). */
void measure_e2e_release(struct measure_e2e *m);

/** Free what r owns and zero it; accepts NULL. */
void measure_result_release(struct measure_result *r);

#endif /* VS_MEASURE_H */
