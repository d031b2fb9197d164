/*
 * cpu.naive: the plain CPU MLA decode (kernels/mla_decode.h). One thread; for every query row
 * (b, i, h) two passes over its visible keys in float: the scores and their maximum, then the
 * max-subtracted softmax weights and the weighted sum of V. The baseline the split-KV kernel is
 * measured against on machines without a GPU.
 *
 * The sparse form (topk > 0): for every query position (b, i) the rows its valid entries name
 * (indices, then extra_indices) are decoded once, in entry order, then every head runs the same two
 * passes over them over d_qk dims; attn_sink scales out by 1 / (1 + exp(sink - lse)). No valid
 * entry: out 0, lse +inf.
 */
#include "cpu_impls.h"
#include "cpu_args.h"
#include "../mla_numeric.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Decode cache row j of sequence b (its first dims values) into row. */
static void naive_load(const struct mla_decode_args *a, const float *lut, int32_t b, int32_t j,
		       int dims, float *row)
{
	size_t off = cpu_args_row(a, b, j);

	if (a->kv_dtype == MLA_KV_BF16) {
		const uint16_t *kv = (const uint16_t *)a->kv_cache + off;

		for (int d = 0; d < dims; d++)
			row[d] = mla_bf16_to_float(kv[d]);
	} else {
		const uint8_t *kv = (const uint8_t *)a->kv_cache + off;

		for (int d = 0; d < dims; d++)
			row[d] = lut[kv[d]];
	}
}

/* One query row: query position i of sequence b, head h. scores holds seqlens[b] floats. */
static void naive_query(const struct mla_decode_args *a, const float *lut, int32_t b, int32_t i,
			int32_t h, float *scores)
{
	size_t qrow = ((size_t)b * a->s_q + i) * a->h_q + h;
	const uint16_t *qbits = (const uint16_t *)a->q + qrow * MLA_D_QK;
	uint16_t *out = (uint16_t *)a->out + qrow * MLA_D_V;
	float *lse = a->lse + ((size_t)b * a->h_q + h) * a->s_q + i;
	int32_t n = cpu_args_visible(a, b, i);
	float q[MLA_D_QK], row[MLA_D_QK], acc[MLA_D_V];
	float m = -INFINITY, sum = 0.0f;

	if (n <= 0) {
		memset(out, 0, MLA_D_V * sizeof(uint16_t));
		*lse = INFINITY;
		return;
	}
	for (int d = 0; d < MLA_D_QK; d++)
		q[d] = mla_bf16_to_float(qbits[d]);
	for (int32_t j = 0; j < n; j++) {
		float s = 0.0f;

		naive_load(a, lut, b, j, MLA_D_QK, row);
		for (int d = 0; d < MLA_D_QK; d++)
			s += q[d] * row[d];
		scores[j] = s * a->softmax_scale;
		m = scores[j] > m ? scores[j] : m;
	}
	memset(acc, 0, sizeof(acc));
	for (int32_t j = 0; j < n; j++) {
		float p = expf(scores[j] - m);

		sum += p;
		naive_load(a, lut, b, j, MLA_D_V, row);
		for (int d = 0; d < MLA_D_V; d++)
			acc[d] += p * row[d];
	}
	for (int d = 0; d < MLA_D_V; d++)
		out[d] = mla_float_to_bf16(acc[d] / sum);
	*lse = m + logf(sum);
}

/*
 * Sparse form, one query row (b, i, h) over the n decoded rows of its valid entries (rows: n x 576
 * floats, the first d_qk of each used); scores holds n floats.
 */
static void naive_sparse_query(const struct mla_decode_args *a, int32_t b, int32_t i, int32_t h,
			       const float *rows, int32_t n, float *scores)
{
	size_t qrow = ((size_t)b * a->s_q + i) * a->h_q + h;
	const uint16_t *qbits = (const uint16_t *)a->q + qrow * a->d_qk;
	uint16_t *out = (uint16_t *)a->out + qrow * MLA_D_V;
	float *lse = a->lse + ((size_t)b * a->h_q + h) * a->s_q + i;
	float q[MLA_D_QK], acc[MLA_D_V];
	float m = -INFINITY, sum = 0.0f, f = 1.0f;

	if (n <= 0) {
		memset(out, 0, MLA_D_V * sizeof(uint16_t));
		*lse = INFINITY;
		return;
	}
	for (int d = 0; d < a->d_qk; d++)
		q[d] = mla_bf16_to_float(qbits[d]);
	for (int32_t j = 0; j < n; j++) {
		const float *row = rows + (size_t)j * MLA_D_QK;
		float s = 0.0f;

		for (int d = 0; d < a->d_qk; d++)
			s += q[d] * row[d];
		scores[j] = s * a->softmax_scale;
		m = scores[j] > m ? scores[j] : m;
	}
	memset(acc, 0, sizeof(acc));
	for (int32_t j = 0; j < n; j++) {
		const float *row = rows + (size_t)j * MLA_D_QK;
		float p = expf(scores[j] - m);

		sum += p;
		for (int d = 0; d < MLA_D_V; d++)
			acc[d] += p * row[d];
	}
	*lse = m + logf(sum);
	if (a->attn_sink)
		f = 1.0f / (1.0f + expf(a->attn_sink[h] - *lse));
	for (int d = 0; d < MLA_D_V; d++)
		out[d] = mla_float_to_bf16(acc[d] / sum * f);
}

/* The sparse form: decode each query position's rows once, then every head over them. */
static int naive_sparse(const struct mla_decode_args *a)
{
	int32_t total = a->topk + a->extra_topk;
	float *rows = malloc((size_t)total * MLA_D_QK * sizeof(float));
	float *scores = malloc((size_t)total * sizeof(float));

	if (!rows || !scores) {
		free(rows);
		free(scores);
		return MLA_EUNSUPPORTED;
	}
	for (int32_t b = 0; b < a->batch; b++)
		for (int32_t i = 0; i < a->s_q; i++) {
			int32_t n = 0;

			for (int32_t e = 0; e < total; e++) {
				int32_t r, ps;
				const void *cache = cpu_args_entry(a, b, i, e, &r, &ps);

				if (cache)
					cpu_args_decode_row(a->kv_dtype, cache, ps, r, rows + (size_t)n++ * MLA_D_QK);
			}
			for (int32_t h = 0; h < a->h_q; h++)
				naive_sparse_query(a, b, i, h, rows, n, scores);
		}
	free(rows);
	free(scores);
	return MLA_OK;
}

static int naive_configs(const char *arch, struct mla_decode_config *out, int cap)
{
	if (!cpu_args_arch_ok(arch))
		return MLA_EUNSUPPORTED;
	if (out && cap >= 1) {
		memset(&out[0], 0, sizeof(out[0]));
		strcpy(out[0].name, "default");
	}
	return 1;
}

static size_t naive_workspace_size(const struct mla_decode_args *a, const struct mla_decode_config *cfg)
{
	(void)a;
	(void)cfg;
	return 0;
}

/* cfg is ignored (one config); the scores scratch is host memory of the launch's own. */
static int naive_launch(const struct mla_decode_args *a, const struct mla_decode_config *cfg)
{
	float lut[256];
	float *scores = NULL;
	int32_t max_len = 1;
	int err;

	(void)cfg;
	err = cpu_args_check(a);
	if (err)
		return err;
	if (a->topk > 0)
		return naive_sparse(a);
	for (int32_t b = 0; b < a->batch; b++)
		max_len = a->seqlens[b] > max_len ? a->seqlens[b] : max_len;
	scores = malloc((size_t)max_len * sizeof(float));
	if (!scores)
		return MLA_EUNSUPPORTED;
	if (a->kv_dtype == MLA_KV_FP8_E4M3_FNUZ)
		cpu_args_fp8_lut(lut, a->kv_scale);
	for (int32_t b = 0; b < a->batch; b++)
		for (int32_t i = 0; i < a->s_q; i++)
			for (int32_t h = 0; h < a->h_q; h++)
				naive_query(a, lut, b, i, h, scores);
	free(scores);
	return MLA_OK;
}

const struct mla_decode_impl mla_cpu_naive = {
	MLA_DECODE_ABI_VERSION,
	"cpu.naive",
	"cpu",
	"one thread, two passes per query row in float: scores and max, softmax-weighted sum of V "
	"(dense and sparse forms, every cache format)",
	naive_configs,
	naive_workspace_size,
	naive_launch,
	cpu_args_supports,
	NULL, /* prepare: nothing to do */
};
