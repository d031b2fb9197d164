/*
 * parity.h - compare an implementation's outputs with the reference (docs/DESIGN.md "Parity").
 *
 * An element passes when |a - e| <= atol or |a - e| <= rtol * |e|. Non-finite masks must match
 * exactly (same class: NaN, +inf, -inf); an element where both are the same infinity passes.
 * Over the finite elements, cos_diff = 1 - 2*sum(a*e)/sum(a^2 + e^2) must be <= cos_tol
 * (FlashMLA's test uses this with 5e-6 for bf16 out). Sums in double.
 */
#ifndef VS_PARITY_H
#define VS_PARITY_H

#include <stddef.h>
#include <stdint.h>

#include "task.h"

struct parity_report {
	int pass;
	size_t n_total;
	size_t n_bad; /* elements over tolerance, plus non-finite mismatches */
	size_t n_nonfinite_mismatch;
	size_t n_finite;     /* elements where both values are finite (max_abs_err, cos_diff are over these) */
	size_t n_nan, n_inf; /* actual values that are NaN / infinite where the reference is finite */
	double cos_diff;
	/* The worst element: largest |a - e| / (atol + rtol*|e|); a non-finite mismatch is worst. */
	size_t worst_index;
	int worst_coord[4]; /* unravelled with dims (unused trailing dims 0) */
	double worst_expected;
	double worst_actual;
	double max_abs_err;
};

/**
 * Compare n bf16 values (actual, as bf16 bits) with n fp32 reference values. dims/ndim describe the
 * tensor's shape for worst_coord (e.g. out: {b, s_q, h_q, 512}).
 */
void parity_compare_bf16(struct parity_report *r, const uint16_t *actual, const float *expected, size_t n,
			 const struct task_tol *tol, const int *dims, int ndim);

/** Same for fp32 actual values (lse). */
void parity_compare_f32(struct parity_report *r, const float *actual, const float *expected, size_t n,
			const struct task_tol *tol, const int *dims, int ndim);

/**
 * One line describing a failure, e.g.
 * "out: 17 of 1048576 elements over tolerance; worst at (b=0, s=1, h=3, d=77): expected 0.01234,
 *  got nan; cos_diff 2.1e-03".  names are the dims' names ("b","s","h","d"). An output with no
 * finite element to compare says so ("non-finite output: 24 of 24 elements are NaN or inf where
 * the reference is finite (24 NaN, 0 inf)") instead of an error and a cos_diff over nothing.
 */
void parity_describe(char *buf, size_t cap, const char *what, const struct parity_report *r, const char *const *names,
		     int ndim);

#endif /* VS_PARITY_H */
