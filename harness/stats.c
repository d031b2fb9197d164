/* Statistics of the measurement protocol (see stats.h). */
#include "stats.h"
#include "vs_error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

uint64_t stats_splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* A uniform index in [0, n) from the generator (n < 2^32; multiply-shift, no modulo bias). */
static int stats_index(uint64_t *state, int n)
{
	return (int)(((stats_splitmix64(state) >> 32) * (uint64_t)n) >> 32);
}

static int stats_cmp(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;

	return (a > b) - (a < b);
}

/* Percentile of sorted x[0..n) by linear interpolation between order statistics. */
static double stats_sorted_percentile(const double *x, int n, double pct)
{
	double pos, frac;
	int lo;

	if (pct < 0.0)
		pct = 0.0;
	if (pct > 100.0)
		pct = 100.0;
	pos = pct / 100.0 * (n - 1);
	lo = (int)floor(pos);
	if (lo >= n - 1)
		return x[n - 1];
	frac = pos - lo;
	return x[lo] + frac * (x[lo + 1] - x[lo]);
}

double stats_percentile(const double *x, int n, double pct)
{
	double *s, v;

	if (!x || n < 1 || isnan(pct))
		return NAN;
	s = malloc((size_t)n * sizeof(double));
	if (!s)
		return NAN;
	memcpy(s, x, (size_t)n * sizeof(double));
	qsort(s, (size_t)n, sizeof(double), stats_cmp);
	v = stats_sorted_percentile(s, n, pct);
	free(s);
	return v;
}

int stats_summarize(struct stats_summary *out, const double *x, int n)
{
	struct stats_summary s;
	double *sorted = NULL, sum = 0.0;

	if (!out || !x || n < 1)
		return vs_error(VS_EUSAGE, "summary of %d values", n);
	sorted = malloc((size_t)n * sizeof(double));
	if (!sorted)
		return vs_error(VS_ENOMEM, "out of memory summarizing %d values", n);
	memcpy(sorted, x, (size_t)n * sizeof(double));
	qsort(sorted, (size_t)n, sizeof(double), stats_cmp);
	for (int i = 0; i < n; i++)
		sum += x[i];
	s.n = n;
	s.median = stats_sorted_percentile(sorted, n, 50.0);
	s.p10 = stats_sorted_percentile(sorted, n, 10.0);
	s.p90 = stats_sorted_percentile(sorted, n, 90.0);
	s.mean = sum / n;
	s.min = sorted[0];
	s.max = sorted[n - 1];
	free(sorted);
	*out = s;
	return VS_OK;
}

/* The k-th smallest of x[0..n) (x is reordered): Hoare's quickselect, middle pivot. */
static double stats_select(double *x, int n, int k)
{
	int lo = 0, hi = n - 1;

	while (lo < hi) {
		double pivot = x[lo + (hi - lo) / 2];
		int i = lo, j = hi;

		while (i <= j) {
			while (x[i] < pivot)
				i++;
			while (x[j] > pivot)
				j--;
			if (i <= j) {
				double t = x[i];

				x[i] = x[j];
				x[j] = t;
				i++;
				j--;
			}
		}
		if (k <= j)
			hi = j;
		else if (k >= i)
			lo = i;
		else
			break;
	}
	return x[k];
}

/* Median of x[0..n) (x is reordered); the mean of the two middle values for even n. */
static double stats_median_inplace(double *x, int n)
{
	double hi = stats_select(x, n, n / 2), lo;

	if (n % 2)
		return hi;
	/* After selecting n/2, every x[0..n/2) is <= hi: the lower middle is their maximum. */
	lo = x[0];
	for (int i = 1; i < n / 2; i++)
		lo = x[i] > lo ? x[i] : lo;
	return 0.5 * (lo + hi);
}

/* ratios[i] = base[i] / cand[i]; VS_EUSAGE for a time that is not a positive finite number. */
static int stats_ratios(double *ratios, const double *base, const double *cand, int n)
{
	for (int i = 0; i < n; i++) {
		if (!(base[i] > 0.0) || !(cand[i] > 0.0) || !isfinite(base[i]) || !isfinite(cand[i]))
			return vs_error(VS_EUSAGE, "pair %d has a time that is not positive: %g, %g", i, base[i],
					cand[i]);
		ratios[i] = base[i] / cand[i];
	}
	return VS_OK;
}

/* Median of n values drawn with replacement from ratios (tmp holds n doubles). */
static double stats_resample_median(const double *ratios, int n, double *tmp, uint64_t *state)
{
	for (int i = 0; i < n; i++)
		tmp[i] = ratios[stats_index(state, n)];
	return stats_median_inplace(tmp, n);
}

int stats_speedup(struct stats_ci *out, const double *t_base, const double *t_cand, int n, int resamples, uint64_t seed)
{
	struct stats_ci ci;
	double *ratios = NULL, *tmp = NULL, *reps = NULL;
	uint64_t state = seed;
	int err;

	if (!out || !t_base || !t_cand || n < 1)
		return vs_error(VS_EUSAGE, "speedup of %d pairs", n);
	ratios = malloc((size_t)n * sizeof(double));
	tmp = malloc((size_t)n * sizeof(double));
	reps = malloc((size_t)(resamples > 0 ? resamples : 1) * sizeof(double));
	if (!ratios || !tmp || !reps) {
		err = vs_error(VS_ENOMEM, "out of memory bootstrapping %d pairs", n);
		goto done;
	}
	err = stats_ratios(ratios, t_base, t_cand, n);
	if (err)
		goto done;
	memcpy(tmp, ratios, (size_t)n * sizeof(double));
	ci.estimate = stats_median_inplace(tmp, n);
	ci.lo = ci.hi = ci.estimate;
	ci.n = n;
	if (resamples > 0) {
		for (int r = 0; r < resamples; r++)
			reps[r] = stats_resample_median(ratios, n, tmp, &state);
		qsort(reps, (size_t)resamples, sizeof(double), stats_cmp);
		ci.lo = stats_sorted_percentile(reps, resamples, 2.5);
		ci.hi = stats_sorted_percentile(reps, resamples, 97.5);
	}
	*out = ci;
done:
	free(ratios);
	free(tmp);
	free(reps);
	return err;
}

int stats_geomean_speedup(struct stats_ci *out, const double *const *base, const double *const *cand, const int *n,
			  int ntasks, int resamples, uint64_t seed)
{
	struct stats_ci ci;
	double **ratios = NULL, *tmp = NULL, *reps = NULL, logsum = 0.0;
	uint64_t state = seed;
	int maxn = 1, err = VS_OK;

	if (!out || !base || !cand || !n || ntasks < 1)
		return vs_error(VS_EUSAGE, "geometric mean of %d tasks", ntasks);
	for (int k = 0; k < ntasks; k++) {
		if (n[k] < 1 || !base[k] || !cand[k])
			return vs_error(VS_EUSAGE, "task %d has %d pairs", k, n[k]);
		maxn = n[k] > maxn ? n[k] : maxn;
	}
	ratios = calloc((size_t)ntasks, sizeof(*ratios));
	tmp = malloc((size_t)maxn * sizeof(double));
	reps = malloc((size_t)(resamples > 0 ? resamples : 1) * sizeof(double));
	if (!ratios || !tmp || !reps) {
		err = vs_error(VS_ENOMEM, "out of memory bootstrapping %d tasks", ntasks);
		goto done;
	}
	for (int k = 0; k < ntasks; k++) {
		ratios[k] = malloc((size_t)n[k] * sizeof(double));
		if (!ratios[k]) {
			err = vs_error(VS_ENOMEM, "out of memory bootstrapping %d tasks", ntasks);
			goto done;
		}
		err = stats_ratios(ratios[k], base[k], cand[k], n[k]);
		if (err)
			goto done;
		memcpy(tmp, ratios[k], (size_t)n[k] * sizeof(double));
		logsum += log(stats_median_inplace(tmp, n[k]));
	}
	ci.estimate = exp(logsum / ntasks);
	ci.lo = ci.hi = ci.estimate;
	ci.n = ntasks;
	if (resamples > 0) {
		for (int r = 0; r < resamples; r++) {
			double ls = 0.0;

			for (int k = 0; k < ntasks; k++)
				ls += log(stats_resample_median(ratios[k], n[k], tmp, &state));
			reps[r] = exp(ls / ntasks);
		}
		qsort(reps, (size_t)resamples, sizeof(double), stats_cmp);
		ci.lo = stats_sorted_percentile(reps, resamples, 2.5);
		ci.hi = stats_sorted_percentile(reps, resamples, 97.5);
	}
	*out = ci;
done:
	if (ratios)
		for (int k = 0; k < ntasks; k++)
			free(ratios[k]);
	free(ratios);
	free(tmp);
	free(reps);
	return err;
}

int stats_weighted_speedup(struct stats_ci *out, const double *const *base, const double *const *cand, const int *n,
			   const double *weight, int ntasks, int resamples, uint64_t seed)
{
	struct stats_ci ci;
	double *tb = NULL, *tc = NULL, *reps = NULL, num = 0.0, den = 0.0;
	uint64_t state = seed;
	int maxn = 1, err = VS_OK;

	if (!out || !base || !cand || !n || !weight || ntasks < 1)
		return vs_error(VS_EUSAGE, "workload speedup of %d tasks", ntasks);
	for (int k = 0; k < ntasks; k++) {
		if (n[k] < 1 || !base[k] || !cand[k])
			return vs_error(VS_EUSAGE, "task %d has %d pairs", k, n[k]);
		if (!(weight[k] > 0.0) || !isfinite(weight[k]))
			return vs_error(VS_EUSAGE, "task %d has weight %g", k, weight[k]);
		maxn = n[k] > maxn ? n[k] : maxn;
	}
	tb = malloc((size_t)maxn * sizeof(double));
	tc = malloc((size_t)maxn * sizeof(double));
	reps = malloc((size_t)(resamples > 0 ? resamples : 1) * sizeof(double));
	if (!tb || !tc || !reps) {
		err = vs_error(VS_ENOMEM, "out of memory bootstrapping %d tasks", ntasks);
		goto done;
	}
	for (int k = 0; k < ntasks; k++) {
		if ((err = stats_ratios(tb, base[k], cand[k], n[k]))) /* only checks the times */
			goto done;
		memcpy(tb, base[k], (size_t)n[k] * sizeof(double));
		memcpy(tc, cand[k], (size_t)n[k] * sizeof(double));
		num += weight[k] * stats_median_inplace(tb, n[k]);
		den += weight[k] * stats_median_inplace(tc, n[k]);
	}
	ci.estimate = num / den;
	ci.lo = ci.hi = ci.estimate;
	ci.n = ntasks;
	if (resamples > 0) {
		for (int r = 0; r < resamples; r++) {
			double nb = 0.0, dc = 0.0;

			for (int k = 0; k < ntasks; k++) {
				/* one draw of pair indices per task: both sides of a pair stay together */
				for (int i = 0; i < n[k]; i++) {
					int j = stats_index(&state, n[k]);

					tb[i] = base[k][j];
					tc[i] = cand[k][j];
				}
				nb += weight[k] * stats_median_inplace(tb, n[k]);
				dc += weight[k] * stats_median_inplace(tc, n[k]);
			}
			reps[r] = nb / dc;
		}
		qsort(reps, (size_t)resamples, sizeof(double), stats_cmp);
		ci.lo = stats_sorted_percentile(reps, resamples, 2.5);
		ci.hi = stats_sorted_percentile(reps, resamples, 97.5);
	}
	*out = ci;
done:
	free(tb);
	free(tc);
	free(reps);
	return err;
}

int stats_should_stop(const struct stats_stop_rule *rule, const double *t_base, const double *t_cand, int n,
		      double elapsed_s)
{
	struct stats_ci ci;

	if (!rule)
		return STATS_CONTINUE;
	if (n >= 2 && n >= rule->min_pairs && rule->resamples > 0) {
		int quiet = vs_error_set_quiet(1);
		int err = stats_speedup(&ci, t_base, t_cand, n, rule->resamples, rule->seed);

		vs_error_set_quiet(quiet);
		if (!err && ci.estimate > 0.0 && (ci.hi - ci.lo) / (2.0 * ci.estimate) <= rule->rel_halfwidth)
			return STATS_STOP_CI;
	}
	if (rule->max_pairs > 0 && n >= rule->max_pairs)
		return STATS_STOP_MAX_PAIRS;
	if (rule->max_seconds > 0.0 && elapsed_s >= rule->max_seconds)
		return STATS_STOP_TIME;
	return STATS_CONTINUE;
}

const char *stats_stop_reason_name(int reason)
{
	switch (reason) {
	case STATS_STOP_CI:
		return "ci";
	case STATS_STOP_MAX_PAIRS:
		return "max_pairs";
	case STATS_STOP_TIME:
		return "time";
	case STATS_CONTINUE:
		return "continue";
	}
	return "unknown";
}
