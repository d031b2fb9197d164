/*
 * check_stats.c - harness/stats.h: percentiles, summaries, the paired-ratio speedup with its seeded
 * bootstrap CI, the geometric mean with a joint bootstrap, and the stop rule. Times come from an
 * injected deterministic clock (fake_clock), never from real timings.
 */
#include "testutil.h"

#include "stats.h"
#include "vs_error.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the injected clock --------------------------------------------------------------------- */

/*
 * A deterministic clock: n sample times of a kernel whose true time is base, each multiplied by
 * (1 + noise * u) with u uniform in [-1, 1) from a 64-bit LCG (Knuth's MMIX constants) seeded with
 * seed; every 25th sample (outlier != 0) is a 3x outlier, as a context switch would give.
 */
static void fake_clock(double *t, int n, double base, double noise, uint64_t seed, int outlier)
{
	uint64_t x = seed * 2 + 1;

	for (int i = 0; i < n; i++) {
		double u;

		x = x * 6364136223846793005ull + 1442695040888963407ull;
		u = (double)(x >> 11) / 9007199254740992.0 * 2.0 - 1.0;
		t[i] = base * (1.0 + noise * u);
		if (outlier && i % 25 == 24)
			t[i] *= 3.0;
	}
}

/* ---- percentiles and summaries ------------------------------------------------------------ */

static const struct {
	double x[6];
	int n;
	double pct, expected;
} pct_cases[] = {
	{ { 1, 2, 3, 4, 5 }, 5, 50, 3 },    { { 1, 2, 3, 4, 5 }, 5, 0, 1 },
	{ { 1, 2, 3, 4, 5 }, 5, 100, 5 },   { { 1, 2, 3, 4, 5 }, 5, 25, 2 },
	{ { 1, 2, 3, 4, 5 }, 5, 10, 1.4 },  { { 1, 2, 3, 4, 5 }, 5, 90, 4.6 },
	{ { 5, 1, 4, 2, 3 }, 5, 90, 4.6 },  { { 10, 20 }, 2, 50, 15 },
	{ { 20, 10 }, 2, 75, 17.5 },        { { 1, 2, 3, 4 }, 4, 50, 2.5 },
	{ { 7 }, 1, 37, 7 },                { { 3, 1, 2 }, 3, -5, 1 },
	{ { 3, 1, 2 }, 3, 150, 3 },         { { 2, 2, 2, 9 }, 4, 50, 2 },
	{ { -4, 0, 4, 8, 12, 16 }, 6, 30, 2 },
};

START_TEST(percentile_interpolates_between_order_statistics)
{
	double got = stats_percentile(pct_cases[_i].x, pct_cases[_i].n, pct_cases[_i].pct);

	ck_assert_msg(fabs(got - pct_cases[_i].expected) < 1e-12, "case %d: p%g of %d values = %.17g, expected %g",
		      _i, pct_cases[_i].pct, pct_cases[_i].n, got, pct_cases[_i].expected);
}
END_TEST

START_TEST(percentile_of_nothing_is_nan)
{
	double x = 1.0;

	ck_assert(isnan(stats_percentile(&x, 0, 50)));
	ck_assert(isnan(stats_percentile(NULL, 3, 50)));
	ck_assert(isnan(stats_percentile(&x, 1, NAN)));
}
END_TEST

START_TEST(percentile_leaves_input_unsorted)
{
	double x[] = { 5, 1, 4, 2, 3 };

	stats_percentile(x, 5, 50);
	ck_assert_msg(x[0] == 5 && x[1] == 1 && x[4] == 3, "input reordered: %g %g %g %g %g", x[0], x[1], x[2],
		      x[3], x[4]);
}
END_TEST

static const struct {
	double x[10];
	int n;
	struct stats_summary want;
} sum_cases[] = {
	{ { 3, 1, 2 }, 3, { 3, 2, 1.2, 2.8, 2, 1, 3 } },
	{ { 10, 9, 8, 7, 6, 5, 4, 3, 2, 1 }, 10, { 10, 5.5, 1.9, 9.1, 5.5, 1, 10 } },
	{ { 4 }, 1, { 1, 4, 4, 4, 4, 4, 4 } },
	{ { 1, 1, 1, 100 }, 4, { 4, 1, 1, 70.3, 25.75, 1, 100 } },
};

START_TEST(summarize_table)
{
	struct stats_summary s, w = sum_cases[_i].want;

	ck_assert_int_eq(stats_summarize(&s, sum_cases[_i].x, sum_cases[_i].n), VS_OK);
	ck_assert_msg(s.n == w.n && fabs(s.median - w.median) < 1e-12 && fabs(s.p10 - w.p10) < 1e-12 &&
			      fabs(s.p90 - w.p90) < 1e-12 && fabs(s.mean - w.mean) < 1e-12 && s.min == w.min &&
			      s.max == w.max,
		      "case %d: n %d median %g p10 %g p90 %g mean %g min %g max %g; expected n %d median %g p10 %g "
		      "p90 %g mean %g min %g max %g",
		      _i, s.n, s.median, s.p10, s.p90, s.mean, s.min, s.max, w.n, w.median, w.p10, w.p90, w.mean,
		      w.min, w.max);
}
END_TEST

START_TEST(summarize_refuses_no_values)
{
	struct stats_summary s = { 42, 0, 0, 0, 0, 0, 0 };
	double x = 1.0;
	int quiet = vs_error_set_quiet(1);
	int rc = stats_summarize(&s, &x, 0);

	vs_error_set_quiet(quiet);
	ck_assert_int_eq(rc, VS_EUSAGE);
	ck_assert_msg(s.n == 42, "summary written on error (n %d)", s.n);
}
END_TEST

/* ---- splitmix64 ---------------------------------------------------------------------------- */

START_TEST(splitmix64_reference_values)
{
	/* splitmix64 seeded with 0 (Vigna's reference implementation). */
	static const uint64_t want[] = { 0xe220a8397b1dcdafull, 0x6e789e6aa1b965f4ull, 0x06c45d188009454full };
	uint64_t state = 0;

	for (int i = 0; i < 3; i++) {
		uint64_t got = stats_splitmix64(&state);

		ck_assert_msg(got == want[i], "output %d: %016llx, expected %016llx", i, (unsigned long long)got,
			      (unsigned long long)want[i]);
	}
}
END_TEST

/* ---- speedup -------------------------------------------------------------------------------- */

static const struct {
	double base[4], cand[4];
	int n;
	double estimate;
} median_cases[] = {
	{ { 2, 4, 6 }, { 1, 1, 1 }, 3, 4 },          /* ratios 2, 4, 6 */
	{ { 1, 2, 3, 4 }, { 1, 1, 1, 1 }, 4, 2.5 }, /* even n: mean of the middle two */
	{ { 3 }, { 2 }, 1, 1.5 },
	{ { 8, 1, 9, 2 }, { 2, 1, 3, 4 }, 4, 2 },   /* ratios 4, 1, 3, 0.5 -> (1 + 3) / 2 */
};

START_TEST(speedup_is_median_of_paired_ratios)
{
	struct stats_ci ci;
	int rc = stats_speedup(&ci, median_cases[_i].base, median_cases[_i].cand, median_cases[_i].n, 200, 7);

	ck_assert_int_eq(rc, VS_OK);
	ck_assert_msg(fabs(ci.estimate - median_cases[_i].estimate) < 1e-12, "case %d: estimate %g, expected %g",
		      _i, ci.estimate, median_cases[_i].estimate);
	ck_assert_int_eq(ci.n, median_cases[_i].n);
	ck_assert_msg(ci.lo <= ci.estimate && ci.estimate <= ci.hi, "case %d: CI [%g, %g] around %g", _i, ci.lo,
		      ci.hi, ci.estimate);
}
END_TEST

START_TEST(speedup_bootstrap_is_deterministic_per_seed)
{
	double base[300], cand[300];
	struct stats_ci a, b, c;

	fake_clock(base, 300, 1.0, 0.05, 1, 1);
	fake_clock(cand, 300, 0.8, 0.05, 2, 1);
	ck_assert_int_eq(stats_speedup(&a, base, cand, 300, 1000, 42), VS_OK);
	ck_assert_int_eq(stats_speedup(&b, base, cand, 300, 1000, 42), VS_OK);
	ck_assert_int_eq(stats_speedup(&c, base, cand, 300, 1000, 43), VS_OK);
	ck_assert_msg(a.lo == b.lo && a.hi == b.hi && a.estimate == b.estimate,
		      "same seed, different CI: [%.17g, %.17g] vs [%.17g, %.17g]", a.lo, a.hi, b.lo, b.hi);
	ck_assert_msg(a.lo != c.lo || a.hi != c.hi, "seeds 42 and 43 gave the identical CI [%.17g, %.17g]", a.lo,
		      a.hi);
	ck_assert_msg(fabs(a.lo - c.lo) < 0.01 * a.estimate && fabs(a.hi - c.hi) < 0.01 * a.estimate,
		      "seeds 42 and 43 far apart: [%g, %g] vs [%g, %g]", a.lo, a.hi, c.lo, c.hi);
	ck_assert_msg(a.lo < a.hi, "degenerate CI [%g, %g] from noisy samples", a.lo, a.hi);
}
END_TEST

/* Candidate exactly twice as fast, each time with 1% noise (and outliers): CI holds 2, narrow. */
START_TEST(speedup_of_exact_half_is_two)
{
	double base[400], cand[400];
	struct stats_ci ci;

	fake_clock(base, 400, 1.0, 0.01, 11, 1);
	fake_clock(cand, 400, 0.5, 0.01, 12, 1);
	ck_assert_int_eq(stats_speedup(&ci, base, cand, 400, 2000, 5), VS_OK);
	ck_assert_msg(ci.lo <= 2.0 && 2.0 <= ci.hi, "CI [%g, %g] (estimate %g) misses 2", ci.lo, ci.hi,
		      ci.estimate);
	ck_assert_msg((ci.hi - ci.lo) / 2.0 < 0.005 * 2.0, "CI [%g, %g] wider than +-0.5%%", ci.lo, ci.hi);
}
END_TEST

/* A/A: both from the same clock distribution (different draws): CI holds 1, median within 1%. */
START_TEST(speedup_a_a_is_one)
{
	double base[500], cand[500];
	struct stats_ci ci;

	fake_clock(base, 500, 3.0, 0.05, 21, 1);
	fake_clock(cand, 500, 3.0, 0.05, 22, 1);
	ck_assert_int_eq(stats_speedup(&ci, base, cand, 500, 2000, 9), VS_OK);
	ck_assert_msg(ci.lo <= 1.0 && 1.0 <= ci.hi, "A/A CI [%g, %g] misses 1", ci.lo, ci.hi);
	ck_assert_msg(fabs(ci.estimate - 1.0) < 0.01, "A/A median ratio %g not within 1%% of 1", ci.estimate);
}
END_TEST

START_TEST(speedup_refuses_bad_input)
{
	static const struct {
		double base[2], cand[2];
		int n;
	} t[] = {
		{ { 1, 1 }, { 1, 0 }, 2 },
		{ { 1, -1 }, { 1, 1 }, 2 },
		{ { 1, NAN }, { 1, 1 }, 2 },
		{ { 1, INFINITY }, { 1, 1 }, 2 },
		{ { 1, 1 }, { 1, 1 }, 0 },
	};
	struct stats_ci ci = { 42, 0, 0, 0 };
	int quiet = vs_error_set_quiet(1);
	int rc = stats_speedup(&ci, t[_i].base, t[_i].cand, t[_i].n, 100, 1);

	vs_error_set_quiet(quiet);
	ck_assert_msg(rc == VS_EUSAGE, "case %d: returned %d, expected VS_EUSAGE", _i, rc);
	ck_assert_msg(ci.estimate == 42, "case %d: CI written on error", _i);
}
END_TEST

/* ---- geometric mean ------------------------------------------------------------------------- */

START_TEST(geomean_of_two_and_eight_is_four)
{
	double b0[50], c0[50], b1[80], c1[80];
	const double *base[2] = { b0, b1 }, *cand[2] = { c0, c1 };
	int n[2] = { 50, 80 };
	struct stats_ci ci;

	fake_clock(b0, 50, 2.0, 0.1, 31, 0);
	fake_clock(b1, 80, 8.0, 0.1, 32, 0);
	for (int i = 0; i < 50; i++)
		c0[i] = b0[i] / 2.0; /* every ratio exactly 2 */
	for (int i = 0; i < 80; i++)
		c1[i] = b1[i] / 8.0; /* every ratio exactly 8 */
	ck_assert_int_eq(stats_geomean_speedup(&ci, base, cand, n, 2, 500, 3), VS_OK);
	ck_assert_msg(fabs(ci.estimate - 4.0) < 1e-12 && fabs(ci.lo - 4.0) < 1e-12 && fabs(ci.hi - 4.0) < 1e-12,
		      "geomean %.17g CI [%.17g, %.17g], expected exactly 4", ci.estimate, ci.lo, ci.hi);
	ck_assert_int_eq(ci.n, 2);
}
END_TEST

START_TEST(geomean_joint_bootstrap_holds_truth_and_is_deterministic)
{
	double b[3][200], c[3][200];
	const double *base[3] = { b[0], b[1], b[2] }, *cand[3] = { c[0], c[1], c[2] };
	static const double truth[3] = { 1.5, 2.0, 3.0 }; /* geomean 9^(1/3) */
	int n[3] = { 200, 150, 100 };
	struct stats_ci x, y, z;
	double want = cbrt(9.0);

	for (int k = 0; k < 3; k++) {
		fake_clock(b[k], n[k], 1.0, 0.02, 40 + k, 1);
		fake_clock(c[k], n[k], 1.0 / truth[k], 0.02, 50 + k, 1);
	}
	ck_assert_int_eq(stats_geomean_speedup(&x, base, cand, n, 3, 1000, 8), VS_OK);
	ck_assert_int_eq(stats_geomean_speedup(&y, base, cand, n, 3, 1000, 8), VS_OK);
	ck_assert_int_eq(stats_geomean_speedup(&z, base, cand, n, 3, 1000, 9), VS_OK);
	ck_assert_msg(x.lo <= want && want <= x.hi, "CI [%g, %g] misses %g", x.lo, x.hi, want);
	ck_assert_msg(x.hi - x.lo < 0.02 * want, "CI [%g, %g] too wide", x.lo, x.hi);
	ck_assert_msg(x.lo == y.lo && x.hi == y.hi, "same seed, different CI");
	ck_assert_msg(x.lo != z.lo || x.hi != z.hi, "different seeds, identical CI");
	ck_assert_msg(x.lo < x.estimate && x.estimate < x.hi, "estimate %g outside [%g, %g]", x.estimate, x.lo,
		      x.hi);
}
END_TEST

START_TEST(geomean_refuses_bad_input)
{
	double t[2] = { 1, 1 }, bad[2] = { 1, 0 };
	const double *base[2] = { t, t }, *cand_ok[2] = { t, t }, *cand_bad[2] = { t, bad };
	int n_ok[2] = { 2, 2 }, n_zero[2] = { 2, 0 };
	struct stats_ci ci;
	int quiet = vs_error_set_quiet(1);

	ck_assert_int_eq(stats_geomean_speedup(&ci, base, cand_ok, n_ok, 0, 10, 1), VS_EUSAGE);
	ck_assert_int_eq(stats_geomean_speedup(&ci, base, cand_ok, n_zero, 2, 10, 1), VS_EUSAGE);
	ck_assert_int_eq(stats_geomean_speedup(&ci, base, cand_bad, n_ok, 2, 10, 1), VS_EUSAGE);
	vs_error_set_quiet(quiet);
}
END_TEST

/* ---- stop rule ------------------------------------------------------------------------------ */

static const struct {
	const char *name;
	double noise;
	int n;
	double elapsed_s;
	int expected;
} stop_cases[] = {
	{ "small noise stops by CI", 0.005, 60, 1.0, STATS_STOP_CI },
	{ "small noise, below min_pairs, continues", 0.005, 19, 1.0, STATS_CONTINUE },
	{ "10% noise, CI +-2.8% at 60 pairs, continues", 0.1, 60, 1.0, STATS_CONTINUE },
	{ "5% noise, CI +-0.9% at max_pairs, stops by CI first", 0.05, 200, 1.0, STATS_STOP_CI },
	{ "huge noise stops at max_pairs", 0.9, 200, 1.0, STATS_STOP_MAX_PAIRS },
	{ "huge noise continues below max_pairs", 0.9, 150, 1.0, STATS_CONTINUE },
	{ "huge noise stops by time", 0.9, 150, 30.0, STATS_STOP_TIME },
	{ "time runs out before min_pairs", 0.005, 5, 31.0, STATS_STOP_TIME },
	{ "one pair continues", 0.0, 1, 0.0, STATS_CONTINUE },
};

START_TEST(stop_rule_table)
{
	struct stats_stop_rule rule = { 0.01, 20, 200, 30.0, 300, 77 };
	double base[200], cand[200];
	int got;

	fake_clock(base, 200, 1.0, stop_cases[_i].noise, 61, 0);
	fake_clock(cand, 200, 0.7, stop_cases[_i].noise, 62, 0);
	got = stats_should_stop(&rule, base, cand, stop_cases[_i].n, stop_cases[_i].elapsed_s);
	ck_assert_msg(got == stop_cases[_i].expected, "%s (n %d, %g s): %s, expected %s", stop_cases[_i].name,
		      stop_cases[_i].n, stop_cases[_i].elapsed_s, stats_stop_reason_name(got),
		      stats_stop_reason_name(stop_cases[_i].expected));
}
END_TEST

START_TEST(stop_reason_names)
{
	ck_assert_str_eq(stats_stop_reason_name(STATS_CONTINUE), "continue");
	ck_assert_str_eq(stats_stop_reason_name(STATS_STOP_CI), "ci");
	ck_assert_str_eq(stats_stop_reason_name(STATS_STOP_MAX_PAIRS), "max_pairs");
	ck_assert_str_eq(stats_stop_reason_name(STATS_STOP_TIME), "time");
}
END_TEST

static Suite *stats_suite(void)
{
	Suite *s = suite_create("stats");
	TCase *tc = tcase_create("summary");

	tcase_add_loop_test(tc, percentile_interpolates_between_order_statistics, 0,
			    (int)(sizeof(pct_cases) / sizeof(pct_cases[0])));
	tcase_add_test(tc, percentile_of_nothing_is_nan);
	tcase_add_test(tc, percentile_leaves_input_unsorted);
	tcase_add_loop_test(tc, summarize_table, 0, (int)(sizeof(sum_cases) / sizeof(sum_cases[0])));
	tcase_add_test(tc, summarize_refuses_no_values);
	tcase_add_test(tc, splitmix64_reference_values);
	suite_add_tcase(s, tc);

	tc = tcase_create("speedup");
	tcase_add_loop_test(tc, speedup_is_median_of_paired_ratios, 0,
			    (int)(sizeof(median_cases) / sizeof(median_cases[0])));
	tcase_add_test(tc, speedup_bootstrap_is_deterministic_per_seed);
	tcase_add_test(tc, speedup_of_exact_half_is_two);
	tcase_add_test(tc, speedup_a_a_is_one);
	tcase_add_loop_test(tc, speedup_refuses_bad_input, 0, 5);
	tcase_add_test(tc, geomean_of_two_and_eight_is_four);
	tcase_add_test(tc, geomean_joint_bootstrap_holds_truth_and_is_deterministic);
	tcase_add_test(tc, geomean_refuses_bad_input);
	suite_add_tcase(s, tc);

	tc = tcase_create("stop");
	tcase_add_loop_test(tc, stop_rule_table, 0, (int)(sizeof(stop_cases) / sizeof(stop_cases[0])));
	tcase_add_test(tc, stop_reason_names);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(stats_suite());
}
