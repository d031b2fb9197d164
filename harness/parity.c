/* Parity of an implementation's outputs against the reference (see parity.h). */
#include "parity.h"
#include "../kernels/mla_numeric.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Non-finite class of a value: 0 finite, 1 NaN, 2 +inf, 3 -inf. */
static int parity_class(double x)
{
	if (isnan(x))
		return 1;
	if (isinf(x))
		return x > 0 ? 2 : 3;
	return 0;
}

static void parity_unravel(int coord[4], size_t index, const int *dims, int ndim)
{
	memset(coord, 0, 4 * sizeof(int));
	if (!dims || ndim < 1 || ndim > 4)
		return;
	for (int k = ndim - 1; k >= 0; k--) {
		size_t d = dims[k] > 0 ? (size_t)dims[k] : 1;

		coord[k] = (int)(index % d);
		index /= d;
	}
}

/* The shared comparison: exactly one of a16 (bf16 bits) and a32 is non-NULL. */
static void parity_compare(struct parity_report *r, const uint16_t *a16, const float *a32, const float *expected,
			   size_t n, const struct task_tol *tol, const int *dims, int ndim)
{
	double atol = tol ? tol->atol : 0.0, rtol = tol ? tol->rtol : 0.0;
	double cos_tol = tol ? tol->cos_tol : -1.0;
	double sxy = 0.0, sxx = 0.0, worst = -1.0;
	int worst_nonfinite = 0;

	memset(r, 0, sizeof(*r));
	r->n_total = n;
	for (size_t k = 0; k < n; k++) {
		double a = a16 ? (double)mla_bf16_to_float(a16[k]) : (double)a32[k];
		double e = expected[k];
		int ca = parity_class(a), ce = parity_class(e);
		double err, denom, score;

		if (ca || ce) {
			if (ca == ce)
				continue;
			r->n_bad++;
			r->n_nonfinite_mismatch++;
			if (!ce) {
				r->n_nan += ca == 1;
				r->n_inf += ca != 1;
			}
			if (!worst_nonfinite) {
				worst_nonfinite = 1;
				r->worst_index = k;
			}
			continue;
		}
		r->n_finite++;
		err = fabs(a - e);
		if (err > r->max_abs_err)
			r->max_abs_err = err;
		if (!(err <= atol || err <= rtol * fabs(e)))
			r->n_bad++;
		sxy += a * e;
		sxx += a * a + e * e;
		denom = atol + rtol * fabs(e);
		score = denom > 0.0 ? err / denom : err > 0.0 ? INFINITY : 0.0;
		if (!worst_nonfinite && score > worst) {
			worst = score;
			r->worst_index = k;
		}
	}
	r->cos_diff = sxx > 0.0 ? 1.0 - 2.0 * sxy / sxx : 0.0;
	if (n > 0) {
		r->worst_actual = a16 ? (double)mla_bf16_to_float(a16[r->worst_index]) : (double)a32[r->worst_index];
		r->worst_expected = expected[r->worst_index];
	}
	parity_unravel(r->worst_coord, r->worst_index, dims, ndim);
	r->pass = r->n_bad == 0 && !(cos_tol >= 0.0 && r->cos_diff > cos_tol);
}

void parity_compare_bf16(struct parity_report *r, const uint16_t *actual, const float *expected, size_t n,
			 const struct task_tol *tol, const int *dims, int ndim)
{
	parity_compare(r, actual, NULL, expected, n, tol, dims, ndim);
}

void parity_compare_f32(struct parity_report *r, const float *actual, const float *expected, size_t n,
			const struct task_tol *tol, const int *dims, int ndim)
{
	parity_compare(r, NULL, actual, expected, n, tol, dims, ndim);
}

void parity_describe(char *buf, size_t cap, const char *what, const struct parity_report *r, const char *const *names,
		     int ndim)
{
	char coords[160] = "";
	size_t used = 0;

	if (!buf || cap == 0)
		return;
	if (ndim > 4)
		ndim = 4;
	for (int k = 0; k < ndim && used < sizeof(coords); k++) {
		int w;

		if (names && names[k])
			w = snprintf(coords + used, sizeof(coords) - used, "%s%s=%d", k ? ", " : "", names[k],
				     r->worst_coord[k]);
		else
			w = snprintf(coords + used, sizeof(coords) - used, "%sd%d=%d", k ? ", " : "", k,
				     r->worst_coord[k]);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	if (ndim < 1)
		snprintf(coords, sizeof(coords), "index %zu", r->worst_index);
	if (r->n_finite == 0 && r->n_total > 0) {
		snprintf(buf, cap,
			 "%s: non-finite output: %zu of %zu elements are NaN or inf where the reference is finite "
			 "(%zu NaN, %zu inf; %zu non-finite mismatches in all), no finite element to compare; first "
			 "at (%s): expected %.8g, got %.8g",
			 what ? what : "output", r->n_nan + r->n_inf, r->n_total, r->n_nan, r->n_inf,
			 r->n_nonfinite_mismatch, coords, r->worst_expected, r->worst_actual);
		return;
	}
	snprintf(buf, cap,
		 "%s: %zu of %zu elements over tolerance (%zu non-finite mismatches); worst at (%s): "
		 "expected %.8g, got %.8g; max abs err %.3g; cos_diff %.3g%s (over the %zu finite elements)",
		 what ? what : "output", r->n_bad, r->n_total, r->n_nonfinite_mismatch, coords, r->worst_expected,
		 r->worst_actual, r->max_abs_err, r->cos_diff, !r->pass && r->n_bad == 0 ? " over tolerance" : "",
		 r->n_finite);
}
