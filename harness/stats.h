/*
 * stats.h - the statistics of the measurement protocol (docs/DESIGN.md "Measurement protocol").
 *
 * Per task: median, p10, p90 of times; speedup = median of the paired ratios t_baseline/t_candidate
 * with a seeded percentile-bootstrap 95% CI (resampling pairs). Overall: geometric mean over tasks
 * of the per-task median ratios, with a joint bootstrap CI (each replicate resamples every task's
 * pairs, takes each task's median ratio and their geometric mean). The bootstrap uses its own
 * seeded generator (splitmix64), so the same samples and seed give the same CI on every machine.
 */
#ifndef VS_STATS_H
#define VS_STATS_H

#include <stdint.h>

struct stats_summary {
	int n;
	double median, p10, p90, mean, min, max;
};

/** Percentile (0..100) of n values by linear interpolation between order statistics. */
double stats_percentile(const double *x, int n, double pct);

/** Summary of n >= 1 values. Errors: VS_EUSAGE for n < 1. */
int stats_summarize(struct stats_summary *s, const double *x, int n);

struct stats_ci {
	double estimate; /* median of paired ratios (per task), geometric mean or workload speedup (overall) */
	double lo, hi;   /* 95% percentile-bootstrap interval */
	int n;           /* pairs (per task) or tasks (overall) */
};

/**
 * Median of t_base[i]/t_cand[i] over n pairs with its bootstrap CI (resamples replicates, seed).
 * Errors: VS_EUSAGE for n < 1 or a non-positive time.
 */
int stats_speedup(struct stats_ci *out, const double *t_base, const double *t_cand, int n, int resamples,
		  uint64_t seed);

/**
 * Geometric mean over ntasks of per-task median ratios, joint bootstrap CI. base[k], cand[k] hold
 * n[k] pairs of task k.
 */
int stats_geomean_speedup(struct stats_ci *out, const double *const *base, const double *const *cand, const int *n,
			  int ntasks, int resamples, uint64_t seed);

/**
 * The workload speedup (docs/DESIGN.md "Workloads"): the time a workload takes with the baseline over
 * the time it takes with the candidate, sum_k weight[k] x median(base[k]) over sum_k weight[k] x
 * median(cand[k]) (per-task medians of the times, ms), with a joint bootstrap CI: each replicate
 * resamples every task's pairs (both times of a pair together) and recomputes the ratio. Weights
 * are positive (they need not sum to 1: the ratio does not change). Errors: VS_EUSAGE (a task with no
 * pairs, a non-positive time or weight), VS_ENOMEM.
 */
int stats_weighted_speedup(struct stats_ci *out, const double *const *base, const double *const *cand, const int *n,
			   const double *weight, int ntasks, int resamples, uint64_t seed);

/** Stop rule: stop when the CI half-width relative to the estimate is <= rel_halfwidth (0.01 = +-1%)
 * after at least min_pairs, or at max_pairs, or when max_seconds of sampling have passed. */
struct stats_stop_rule {
	double rel_halfwidth;
	int min_pairs;
	int max_pairs;
	double max_seconds;
	int resamples; /* bootstrap replicates used by the rule (e.g. 500) */
	uint64_t seed;
};

enum stats_stop_reason { STATS_CONTINUE = 0, STATS_STOP_CI = 1, STATS_STOP_MAX_PAIRS = 2, STATS_STOP_TIME = 3 };

/** Decide after n pairs and elapsed_s seconds of sampling; returns enum stats_stop_reason. */
int stats_should_stop(const struct stats_stop_rule *rule, const double *t_base, const double *t_cand, int n,
		      double elapsed_s);

/** "ci", "max_pairs", "time", "continue". */
const char *stats_stop_reason_name(int reason);

/** Deterministic splitmix64 step (exposed for tests and for other seeded choices). */
uint64_t stats_splitmix64(uint64_t *state);

#endif /* VS_STATS_H */
