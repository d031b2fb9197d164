/*
 * check_parity.c - harness/parity.h: elementwise atol-or-rtol, non-finite masks, cosine diff,
 * the worst element and its coordinates, and the one-line description.
 */
#include "testutil.h"

#include "mla_numeric.h"
#include "parity.h"
#include "task.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAXN 8
#define NOCOS (-1.0)

struct pcase {
	const char *name;
	int n;
	float actual[MAXN];
	float expected[MAXN];
	struct task_tol tol;
	int pass;
	size_t n_bad, n_nonfinite;
	size_t worst_index;
	int dims[2]; /* shape [dims[0], dims[1]] for worst_coord */
	int worst_coord[2];
};

static const struct pcase f32_cases[] = {
	{ "identical", 4, { 1, 2, 3, 4 }, { 1, 2, 3, 4 }, { 1e-6, 0, 1e-6 }, 1, 0, 0, 0, { 2, 2 }, { 0, 0 } },
	{ "within atol", 3, { 0.0103f, -0.0195f, 0.0306f }, { 0.01f, -0.02f, 0.03f }, { 8e-4, 0, NOCOS },
	  1, 0, 0, 2, { 1, 3 }, { 0, 2 } },
	{ "over atol within rtol", 2, { 10.1f, 20.1f }, { 10, 20 }, { 1e-3, 0.02, NOCOS }, 1, 0, 0, 0,
	  { 1, 2 }, { 0, 0 } },
	{ "over atol and rtol", 4, { 1, 2.1f, 3, 4 }, { 1, 2, 3, 4 }, { 0.01, 0.01, NOCOS }, 0, 1, 0, 1,
	  { 2, 2 }, { 0, 1 } },
	{ "worst by scaled error, not absolute", 2, { 100.5f, 0.02f }, { 100, 0.01f }, { 1e-3, 1e-3, NOCOS },
	  0, 2, 0, 1, { 2, 1 }, { 1, 0 } },
	{ "nan actual where finite expected is worst", 3, { 1, NAN, 30 }, { 1, 2, 3 }, { 0.1, 0, NOCOS }, 0,
	  2, 1, 1, { 1, 3 }, { 0, 1 } },
	{ "+inf vs +inf passes", 2, { INFINITY, 1 }, { INFINITY, 1 }, { 1e-6, 0, 1e-6 }, 1, 0, 0, 1, { 1, 2 },
	  { 0, 1 } },
	{ "+inf vs finite fails", 2, { 1, INFINITY }, { 1, 2 }, { 1e-6, 0, NOCOS }, 0, 1, 1, 1, { 2, 1 },
	  { 1, 0 } },
	{ "finite vs +inf fails", 2, { 5, 2 }, { INFINITY, 2 }, { 1e-6, 0, NOCOS }, 0, 1, 1, 0, { 2, 1 },
	  { 0, 0 } },
	{ "-inf vs +inf fails", 1, { -INFINITY }, { INFINITY }, { 1e-6, 0, NOCOS }, 0, 1, 1, 0, { 1, 1 },
	  { 0, 0 } },
	{ "nan vs nan passes", 2, { NAN, 1 }, { NAN, 1 }, { 1e-6, 0, NOCOS }, 1, 0, 0, 1, { 1, 2 }, { 0, 1 } },
	{ "finite vs nan expected fails", 2, { 1, 0 }, { 1, NAN }, { 1e6, 1, NOCOS }, 0, 1, 1, 1, { 1, 2 },
	  { 0, 1 } },
	{ "first non-finite mismatch stays worst", 3, { NAN, 1, INFINITY }, { 1, 1, 1 }, { 1e-6, 0, NOCOS }, 0,
	  2, 2, 0, { 1, 3 }, { 0, 0 } },
	{ "cos diff fails with every element within atol", 3, { -1e-4f, 1e-4f, -2e-4f }, { 1e-4f, -1e-4f, 2e-4f },
	  { 8e-4, 0, 5e-6 }, 0, 0, 0, 2, { 1, 3 }, { 0, 2 } },
	{ "cos diff not checked when cos_tol < 0", 3, { -1e-4f, 1e-4f, -2e-4f }, { 1e-4f, -1e-4f, 2e-4f },
	  { 8e-4, 0, NOCOS }, 1, 0, 0, 2, { 1, 3 }, { 0, 2 } },
	{ "cos diff within 5e-6", 4, { 1.001f, 2, 3, 4 }, { 1, 2, 3, 4 }, { 0.01, 0, 5e-6 }, 1, 0, 0, 0,
	  { 4, 1 }, { 0, 0 } },
	{ "cos diff over 5e-6", 4, { 1.05f, 2, 3, 4 }, { 1, 2, 3, 4 }, { 0.1, 0, 5e-6 }, 0, 0, 0, 0, { 4, 1 },
	  { 0, 0 } },
	{ "zero tolerance, exact", 2, { 0.5f, -0.25f }, { 0.5f, -0.25f }, { 0, 0, 0 }, 1, 0, 0, 0, { 1, 2 },
	  { 0, 0 } },
	{ "zero tolerance, one ulp off", 2, { 0.5f, -0.25f }, { 0.5f, -0.2500000298f }, { 0, 0, NOCOS }, 0, 1,
	  0, 1, { 1, 2 }, { 0, 1 } },
	{ "empty", 0, { 0 }, { 0 }, { 0, 0, 0 }, 1, 0, 0, 0, { 0, 0 }, { 0, 0 } },
};

START_TEST(compare_f32_table)
{
	const struct pcase *c = &f32_cases[_i];
	struct parity_report r;

	parity_compare_f32(&r, c->actual, c->expected, (size_t)c->n, &c->tol, c->dims, 2);
	ck_assert_msg(r.pass == c->pass, "%s: pass %d, expected %d (n_bad %zu, cos_diff %g)", c->name, r.pass,
		      c->pass, r.n_bad, r.cos_diff);
	ck_assert_msg(r.n_total == (size_t)c->n, "%s: n_total %zu", c->name, r.n_total);
	ck_assert_msg(r.n_bad == c->n_bad, "%s: n_bad %zu, expected %zu", c->name, r.n_bad, c->n_bad);
	ck_assert_msg(r.n_nonfinite_mismatch == c->n_nonfinite, "%s: n_nonfinite_mismatch %zu, expected %zu",
		      c->name, r.n_nonfinite_mismatch, c->n_nonfinite);
	if (c->n == 0)
		return;
	ck_assert_msg(r.worst_index == c->worst_index, "%s: worst_index %zu, expected %zu", c->name,
		      r.worst_index, c->worst_index);
	ck_assert_msg(r.worst_coord[0] == c->worst_coord[0] && r.worst_coord[1] == c->worst_coord[1] &&
			      r.worst_coord[2] == 0 && r.worst_coord[3] == 0,
		      "%s: worst_coord (%d, %d, %d, %d), expected (%d, %d, 0, 0)", c->name, r.worst_coord[0],
		      r.worst_coord[1], r.worst_coord[2], r.worst_coord[3], c->worst_coord[0],
		      c->worst_coord[1]);
	ck_assert_msg((isnan(r.worst_actual) && isnan(c->actual[c->worst_index])) ||
			      r.worst_actual == (double)c->actual[c->worst_index],
		      "%s: worst_actual %g, expected %g", c->name, r.worst_actual,
		      (double)c->actual[c->worst_index]);
	ck_assert_msg((isnan(r.worst_expected) && isnan(c->expected[c->worst_index])) ||
			      r.worst_expected == (double)c->expected[c->worst_index],
		      "%s: worst_expected %g, expected %g", c->name, r.worst_expected,
		      (double)c->expected[c->worst_index]);
}
END_TEST

/* The cosine diff of known vectors: a = 2e gives 1 - 2*2/(1+4) = 0.2; a = e gives 0. */
START_TEST(cos_diff_values)
{
	static const struct {
		float a[3], e[3];
		double cos_diff;
	} t[] = {
		{ { 2, 4, 6 }, { 1, 2, 3 }, 0.2 },
		{ { 1, 2, 3 }, { 1, 2, 3 }, 0.0 },
		{ { -1, -2, -3 }, { 1, 2, 3 }, 2.0 },
		{ { 1, 0, NAN }, { 0, 1, 5 }, 1.0 }, /* non-finite pairs are left out of the sums */
		{ { 0, 0, 0 }, { 0, 0, 0 }, 0.0 },
	};
	struct task_tol tol = { 1e9, 0, NOCOS };
	int dims[1] = { 3 };
	struct parity_report r;

	parity_compare_f32(&r, t[_i].a, t[_i].e, 3, &tol, dims, 1);
	ck_assert_msg(fabs(r.cos_diff - t[_i].cos_diff) < 1e-12, "case %d: cos_diff %.17g, expected %g", _i,
		      r.cos_diff, t[_i].cos_diff);
}
END_TEST

struct bcase {
	const char *name;
	float actual; /* stored as bf16 (round to nearest even) */
	float expected;
	struct task_tol tol;
	int pass;
	double worst_actual; /* the bf16 value as read back */
};

static const struct bcase bf16_cases[] = {
	{ "bf16 exact", 0.5f, 0.5f, { 0, 0, 0 }, 1, 0.5 },
	{ "bf16 one ulp over atol", 0.251953125f, 0.25f, { 1e-3, 0, NOCOS }, 0, 0.251953125 },
	{ "bf16 one ulp within FlashMLA rtol", 0.251953125f, 0.25f, { 8e-4, 2.01 / 128, NOCOS }, 1,
	  0.251953125 },
	{ "bf16 rounding of 0.3 within 8e-4", 0.3f, 0.3f, { 8e-4, 0, NOCOS }, 1, 0.30078125 },
	{ "bf16 rounding of 0.3 over 7e-4", 0.3f, 0.3f, { 7e-4, 0, NOCOS }, 0, 0.30078125 },
	{ "bf16 nan vs finite", NAN, 0.25f, { 1e6, 1, NOCOS }, 0, NAN },
	{ "bf16 +inf vs +inf", INFINITY, INFINITY, { 0, 0, 0 }, 1, INFINITY },
	{ "bf16 -inf vs +inf", -INFINITY, INFINITY, { 1e6, 1, NOCOS }, 0, -INFINITY },
};

START_TEST(compare_bf16_table)
{
	const struct bcase *c = &bf16_cases[_i];
	uint16_t a[2] = { mla_float_to_bf16(1.0f), mla_float_to_bf16(c->actual) };
	float e[2] = { 1.0f, c->expected };
	int dims[2] = { 1, 2 };
	struct parity_report r;

	parity_compare_bf16(&r, a, e, 2, &c->tol, dims, 2);
	ck_assert_msg(r.pass == c->pass, "%s: pass %d, expected %d (max abs err %g)", c->name, r.pass, c->pass,
		      r.max_abs_err);
	ck_assert_msg(r.n_bad == (size_t)!c->pass, "%s: n_bad %zu", c->name, r.n_bad);
	if (!c->pass) {
		ck_assert_msg(r.worst_index == 1 && r.worst_coord[1] == 1, "%s: worst_index %zu", c->name,
			      r.worst_index);
		ck_assert_msg((isnan(c->worst_actual) && isnan(r.worst_actual)) ||
				      r.worst_actual == c->worst_actual,
			      "%s: worst_actual %.9g, expected %.9g", c->name, r.worst_actual, c->worst_actual);
	}
}
END_TEST

/* A 4-D out tensor [2, 1, 3, 4]: index 17 is (b=1, s=0, h=1, d=1). */
static void four_d(struct parity_report *r, float *bad_value)
{
	static const int dims[4] = { 2, 1, 3, 4 };
	struct task_tol tol = { 8e-4, 2.01 / 128, 5e-6 };
	float e[24], a[24];

	for (int k = 0; k < 24; k++)
		e[k] = a[k] = (float)(k + 1) / 64.0f; /* exact: index 17 holds 0.28125 */
	a[17] = *bad_value;
	parity_compare_f32(r, a, e, 24, &tol, dims, 4);
}

START_TEST(worst_coord_unravelled_in_four_dims)
{
	float bad = 0.5f;
	struct parity_report r;

	four_d(&r, &bad);
	ck_assert(!r.pass);
	ck_assert_uint_eq(r.n_bad, 1);
	ck_assert_msg(r.worst_index == 17 && r.worst_coord[0] == 1 && r.worst_coord[1] == 0 &&
			      r.worst_coord[2] == 1 && r.worst_coord[3] == 1,
		      "worst %zu at (%d, %d, %d, %d), expected 17 at (1, 0, 1, 1)", r.worst_index, r.worst_coord[0],
		      r.worst_coord[1], r.worst_coord[2], r.worst_coord[3]);
	ck_assert_msg(r.max_abs_err == 0.5 - 0.28125, "max_abs_err %g", r.max_abs_err);
}
END_TEST

START_TEST(describe_names_count_coordinates_and_values)
{
	static const char *const names[] = { "b", "s", "h", "d" };
	static const char *const want[] = {
		"out:", "1 of 24", "b=1", "s=0", "h=1", "d=1", "expected 0.28125", "got nan", "cos_diff",
	};
	float bad = NAN;
	struct parity_report r;
	char line[512];

	four_d(&r, &bad);
	parity_describe(line, sizeof(line), "out", &r, names, 4);
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++)
		ck_assert_msg(strstr(line, want[k]) != NULL, "describe lacks \"%s\": %s", want[k], line);
	ck_assert_msg(!strchr(line, '\n'), "describe is not one line: %s", line);

	bad = 0.25f;
	four_d(&r, &bad);
	parity_describe(line, sizeof(line), "out", &r, names, 4);
	ck_assert_msg(strstr(line, "got 0.25") && strstr(line, "expected 0.28125"), "describe: %s", line);

	/* A failure by cos_diff alone says so. */
	{
		float a[3] = { -1e-4f, 1e-4f, -2e-4f }, e[3] = { 1e-4f, -1e-4f, 2e-4f };
		struct task_tol tol = { 8e-4, 0, 5e-6 };
		int dims[1] = { 3 };
		struct parity_report c;

		parity_compare_f32(&c, a, e, 3, &tol, dims, 1);
		parity_describe(line, sizeof(line), "out", &c, names, 1);
		ck_assert_msg(strstr(line, "0 of 3") && strstr(line, "cos_diff 2 over tolerance"), "describe: %s",
			      line);
	}

	/* A small buffer truncates without overflowing. */
	memset(line, 'x', sizeof(line));
	parity_describe(line, 16, "out", &r, names, 4);
	ck_assert_msg(strlen(line) == 15 && line[16] == 'x', "truncated describe: %.20s", line);
}
END_TEST

/* An all-NaN output has no error to report: the line says it is non-finite, with counts, not "max abs err 0". */
START_TEST(describe_all_nan_output_says_non_finite_with_counts)
{
	static const char *const names[] = { "b", "s", "h", "d" };
	static const int dims[4] = { 2, 1, 3, 4 };
	struct task_tol tol = { 8e-4, 2.01 / 128, 5e-6 };
	float e[24], a[24];
	struct parity_report r;
	char line[512];

	for (int k = 0; k < 24; k++) {
		e[k] = (float)(k + 1) / 64.0f;
		a[k] = k == 5 ? INFINITY : NAN;
	}
	parity_compare_f32(&r, a, e, 24, &tol, dims, 4);
	ck_assert(!r.pass);
	ck_assert_uint_eq(r.n_finite, 0);
	ck_assert_uint_eq(r.n_nan, 23);
	ck_assert_uint_eq(r.n_inf, 1);
	parity_describe(line, sizeof(line), "out", &r, names, 4);
	ck_assert_msg(strstr(line, "non-finite output") && strstr(line, "24 of 24") && strstr(line, "23 NaN") &&
			      strstr(line, "1 inf"), "describe: %s", line);
	ck_assert_msg(!strstr(line, "max abs err") && !strstr(line, "cos_diff"), "describe of an all-NaN output: %s",
		      line);
}
END_TEST

static Suite *parity_suite(void)
{
	Suite *s = suite_create("parity");
	TCase *tc = tcase_create("compare");

	tcase_add_loop_test(tc, compare_f32_table, 0, (int)(sizeof(f32_cases) / sizeof(f32_cases[0])));
	tcase_add_loop_test(tc, cos_diff_values, 0, 5);
	tcase_add_loop_test(tc, compare_bf16_table, 0, (int)(sizeof(bf16_cases) / sizeof(bf16_cases[0])));
	tcase_add_test(tc, worst_coord_unravelled_in_four_dims);
	suite_add_tcase(s, tc);
	tc = tcase_create("describe");
	tcase_add_test(tc, describe_names_count_coordinates_and_values);
	tcase_add_test(tc, describe_all_nan_output_says_non_finite_with_counts);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(parity_suite());
}
