/*
 * cpu.splitkv: split-KV flash decoding on CPU threads (kernels/mla_decode.h), the CPU analogue of
 * FlashMLA's decode kernel (Dao et al., "Flash-Decoding for long-context inference", 2023).
 *
 * The s_q * h_q query rows of a sequence are one row dimension (as in FlashMLA: query position i,
 * head h is row i * h_q + h). Phase 1 runs work items (b, split, head block): the split's keys, in
 * tiles of BLOCK_N, each KV row decoded to float once per tile and shared by the BLOCK_H rows of the
 * head block; an online softmax per row (running max m, running sum l, accumulator rescaled by
 * exp(m_old - m_new)); the split's normalized o and lse = m + log(l) go to the workspace (an empty
 * split writes lse -inf and no o). Phase 2 merges the splits of every row in split order by their
 * LSE: L = log(sum_s exp(lse_s)), out = sum_s exp(lse_s - L) * o_s; no key at all gives out 0 and
 * lse +inf. Every output element is computed by one item in a fixed order, so the bits do not
 * depend on the thread count or scheduling.
 *
 * Workspace (floats): o_part [batch, s_q, h_q, splits, 512], then lse_part [batch, s_q, h_q, splits].
 * splits is num_splits, or for 0 (auto) a count from batch, s_q * h_q, block_h and the thread count:
 * shapes only, never seqlens values. Split s of a sequence with nb = ceil(seqlen / BLOCK_N) blocks
 * covers blocks [s * nb / splits, (s + 1) * nb / splits): more splits than blocks leaves some empty.
 *
 * The sparse form (topk > 0) splits the entries instead of the keys: the rows of a query position
 * (b, i) share its entries (indices, then extra_indices: topk + extra_topk of them), so a work item
 * is (b, i, split, head block of BLOCK_H heads), split s covering entry blocks [s * nb / splits,
 * (s + 1) * nb / splits) of nb = ceil((topk + extra_topk) / BLOCK_N); each tile decodes only its
 * valid entries' rows (a -1 or an entry past topk_length is never read) and runs the same online
 * softmax over d_qk dims. The combine is the dense one, then out *= 1 / (1 + exp(attn_sink[h] -
 * lse)) when attn_sink is given (lse reported without it). Auto splits: from batch * s_q, the head
 * blocks and the thread count, at most one split per entry block.
 */
#include "cpu_impls.h"
#include "cpu_args.h"
#include "../mla_numeric.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SKV_AUTO_MAX_SPLITS 64
#define SKV_ALIGN 64

/* Launch geometry, from the shapes of args and the config only. */
struct skv_plan {
	int32_t block_n, block_h, splits, threads;
	int32_t rows;          /* s_q * h_q query rows per sequence */
	int64_t groups;        /* query groups sharing their keys: batch (dense), batch * s_q (sparse) */
	int32_t group_rows;    /* rows of a group: rows (dense), h_q (sparse) */
	int32_t hblocks;       /* ceil(group_rows / block_h) */
	size_t o_floats;       /* partial o floats: batch * rows * splits * 512 */
	size_t lse_floats;     /* partial lse floats: batch * rows * splits */
	size_t scratch_floats; /* per-thread scratch of phase 1 (multiple of SKV_ALIGN bytes): key tile
				* [block_n][576], q [block_h][576], acc [block_h][512], scores
				* [block_h][block_n], m, l, visible keys [block_h] */
};

struct skv_job {
	const struct mla_decode_args *a;
	const struct skv_plan *p;
	const float *lut;      /* fp8 code -> value * kv_scale */
	float *o_part, *lse_part;
	float *scratch;        /* threads * scratch_floats */
	int64_t items;
	atomic_llong next;     /* next work item */
	atomic_int slot;       /* next scratch slot */
	int phase;             /* 1: split partials, 2: combine */
};

static int skv_plan_init(struct skv_plan *p, const struct mla_decode_args *a,
			 const struct mla_decode_config *cfg)
{
	int64_t threads, base, max_blocks, splits;

	if (!a || !cfg || cfg->block_n < 1 || cfg->block_h < 1 || cfg->num_splits < 0 ||
	    cfg->num_warps < 0 || a->batch < 0 || a->s_q < 1 || a->h_q < 1 || a->page_size < 1 ||
	    a->max_pages < 0 || (int64_t)a->s_q * a->h_q > INT32_MAX)
		return MLA_EINVAL;
	threads = cfg->num_warps > 0 ? cfg->num_warps : a->num_cus > 0 ? a->num_cus : 1;
	if (threads > CPU_ARGS_MAX_THREADS)
		threads = CPU_ARGS_MAX_THREADS;
	p->block_n = cfg->block_n;
	p->block_h = cfg->block_h;
	p->threads = (int32_t)threads;
	p->rows = a->s_q * a->h_q;
	p->groups = a->topk > 0 ? (int64_t)a->batch * a->s_q : a->batch;
	p->group_rows = a->topk > 0 ? a->h_q : p->rows;
	p->hblocks = (int32_t)(((int64_t)p->group_rows + p->block_h - 1) / p->block_h);
	splits = cfg->num_splits;
	if (splits == 0) {
		/* Auto: about two work items per thread, at most one split per block of the longest
		 * sequence block_table can describe (sparse: per block of entries). */
		base = (p->groups > 0 ? p->groups : 1) * p->hblocks;
		if (a->topk > 0)
			max_blocks = ((int64_t)a->topk + (a->extra_topk > 0 ? a->extra_topk : 0) + p->block_n - 1) /
				     p->block_n;
		else
			max_blocks = ((int64_t)a->max_pages * a->page_size + p->block_n - 1) / p->block_n;
		splits = (2 * threads + base - 1) / base;
		if (splits > max_blocks)
			splits = max_blocks;
		if (splits > SKV_AUTO_MAX_SPLITS)
			splits = SKV_AUTO_MAX_SPLITS;
		if (splits < 1)
			splits = 1;
	}
	p->splits = (int32_t)splits;
	/* The workspace byte count must fit a size_t: (lse + 512 o) floats per (b, row, split). */
	if ((uint64_t)(a->batch > 0 ? a->batch : 1) * (uint64_t)p->rows >
	    SIZE_MAX / ((MLA_D_V + 1) * sizeof(float)) / (uint64_t)p->splits)
		return MLA_EINVAL;
	p->lse_floats = (size_t)a->batch * p->rows * p->splits;
	p->o_floats = p->lse_floats * MLA_D_V;
	p->scratch_floats = (size_t)p->block_n * MLA_D_QK + (size_t)p->block_h * MLA_D_QK +
			    (size_t)p->block_h * MLA_D_V + (size_t)p->block_h * p->block_n +
			    3 * (size_t)p->block_h; /* m, l, and the visible keys (int32) */
	p->scratch_floats = (p->scratch_floats + SKV_ALIGN / sizeof(float) - 1) /
			    (SKV_ALIGN / sizeof(float)) * (SKV_ALIGN / sizeof(float));
	return MLA_OK;
}

#if defined(__GNUC__)
typedef float skv_v4 __attribute__((vector_size(16)));

static inline skv_v4 skv_load4(const float *p)
{
	skv_v4 v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/*
 * dot(x, y) over the n dims (576 or 512, a multiple of 16) of a query row and a key row: four
 * 4-wide partial sums kept in vector registers (GNU vector extension, SSE/NEON at -O2), reduced in
 * a fixed order.
 */
static inline float skv_dot(const float *restrict x, const float *restrict y, int n)
{
	skv_v4 s0 = { 0 }, s1 = { 0 }, s2 = { 0 }, s3 = { 0 }, s;

	for (int d = 0; d < n; d += 16) {
		s0 += skv_load4(x + d) * skv_load4(y + d);
		s1 += skv_load4(x + d + 4) * skv_load4(y + d + 4);
		s2 += skv_load4(x + d + 8) * skv_load4(y + d + 8);
		s3 += skv_load4(x + d + 12) * skv_load4(y + d + 12);
	}
	s = (s0 + s1) + (s2 + s3);
	return (s[0] + s[1]) + (s[2] + s[3]);
}
#else
/* dot(x, y) over n dims (a multiple of 16): 16 partial sums reduced in a fixed tree order. */
static inline float skv_dot(const float *restrict x, const float *restrict y, int n)
{
	float s[16] = { 0 };

	for (int d = 0; d < n; d += 16)
		for (int k = 0; k < 16; k++)
			s[k] += x[d + k] * y[d + k];
	for (int w = 8; w >= 1; w /= 2)
		for (int k = 0; k < w; k++)
			s[k] += s[k + w];
	return s[0];
}
#endif /* __GNUC__ */

/* acc[0:512] = acc * alpha */
static inline void skv_scale(float *restrict acc, float alpha)
{
	for (int d = 0; d < MLA_D_V; d++)
		acc[d] *= alpha;
}

/* acc[0:512] += p * v */
static inline void skv_axpy(float *restrict acc, float p, const float *restrict v)
{
	for (int d = 0; d < MLA_D_V; d++)
		acc[d] += p * v[d];
}

#if defined(__GNUC__)
/*
 * acc[0:512] += sum_j p[j] * v_j over the n key rows of a tile (v_j = kt + j * 576): the
 * accumulator is walked in 32-float chunks held in registers across the keys, so it is loaded and
 * stored once per tile instead of once per key.
 */
static inline void skv_pv(float *restrict acc, const float *restrict p, const float *restrict kt,
			  int32_t n)
{
	for (int d = 0; d < MLA_D_V; d += 32) {
		skv_v4 a0 = skv_load4(acc + d), a1 = skv_load4(acc + d + 4);
		skv_v4 a2 = skv_load4(acc + d + 8), a3 = skv_load4(acc + d + 12);
		skv_v4 a4 = skv_load4(acc + d + 16), a5 = skv_load4(acc + d + 20);
		skv_v4 a6 = skv_load4(acc + d + 24), a7 = skv_load4(acc + d + 28);

		for (int32_t j = 0; j < n; j++) {
			const float *v = kt + (size_t)j * MLA_D_QK + d;
			skv_v4 w = { p[j], p[j], p[j], p[j] };

			a0 += w * skv_load4(v);
			a1 += w * skv_load4(v + 4);
			a2 += w * skv_load4(v + 8);
			a3 += w * skv_load4(v + 12);
			a4 += w * skv_load4(v + 16);
			a5 += w * skv_load4(v + 20);
			a6 += w * skv_load4(v + 24);
			a7 += w * skv_load4(v + 28);
		}
		memcpy(acc + d, &a0, sizeof(a0));
		memcpy(acc + d + 4, &a1, sizeof(a1));
		memcpy(acc + d + 8, &a2, sizeof(a2));
		memcpy(acc + d + 12, &a3, sizeof(a3));
		memcpy(acc + d + 16, &a4, sizeof(a4));
		memcpy(acc + d + 20, &a5, sizeof(a5));
		memcpy(acc + d + 24, &a6, sizeof(a6));
		memcpy(acc + d + 28, &a7, sizeof(a7));
	}
}
#else
/* acc[0:512] += sum_j p[j] * v_j over the n key rows of a tile (v_j = kt + j * 576). */
static inline void skv_pv(float *restrict acc, const float *restrict p, const float *restrict kt,
			  int32_t n)
{
	for (int32_t j = 0; j < n; j++)
		skv_axpy(acc, p[j], kt + (size_t)j * MLA_D_QK);
}
#endif /* __GNUC__ */

/* Decode keys [t0, t1) of sequence b into kt (rows of 576 floats). */
static void skv_load_tile(const struct skv_job *job, int32_t b, int32_t t0, int32_t t1, float *kt)
{
	const struct mla_decode_args *a = job->a;

	for (int32_t j = t0; j < t1; j++) {
		size_t off = cpu_args_row(a, b, j);
		float *row = kt + (size_t)(j - t0) * MLA_D_QK;

		if (a->kv_dtype == MLA_KV_BF16) {
			const uint16_t *kv = (const uint16_t *)a->kv_cache + off;

			for (int d = 0; d < MLA_D_QK; d++)
				row[d] = mla_bf16_to_float(kv[d]);
		} else {
			const uint8_t *kv = (const uint8_t *)a->kv_cache + off;

			for (int d = 0; d < MLA_D_QK; d++)
				row[d] = job->lut[kv[d]];
		}
	}
}

/* Phase 1: one work item (b, split, head block) into the workspace. */
/*
 * The part [*lo, *hi) of n entries (keys, or a query row's topk entries) that split `split` of
 * `splits` takes: whole tiles of bn, the tiles dealt evenly, the last one cut at n.
 */
static void skv_split_range(int32_t *lo, int32_t *hi, int64_t split, int64_t splits, int32_t n, int32_t bn)
{
	int64_t nb = ((int64_t)n + bn - 1) / bn;
	int64_t end = (split + 1) * nb / splits * bn;

	*lo = (int32_t)(split * nb / splits * bn);
	*hi = (int32_t)(end < n ? end : n);
}

static void skv_partial(const struct skv_job *job, int64_t item, float *scratch)
{
	const struct mla_decode_args *a = job->a;
	const struct skv_plan *p = job->p;
	int32_t bn = p->block_n, bh = p->block_h;
	int32_t hb = (int32_t)(item % p->hblocks);
	int32_t split = (int32_t)(item / p->hblocks % p->splits);
	int32_t b = (int32_t)(item / p->hblocks / p->splits);
	int32_t len = a->seqlens[b], k_lo, k_hi;
	int32_t r0 = hb * bh;
	int32_t nr = p->rows - r0 < bh ? p->rows - r0 : bh;
	float *kt = scratch;
	float *q = kt + (size_t)bn * MLA_D_QK;
	float *acc = q + (size_t)bh * MLA_D_QK;
	float *sc = acc + (size_t)bh * MLA_D_V;
	float *m = sc + (size_t)bh * bn;
	float *l = m + bh;
	int32_t *vis = (int32_t *)(l + bh); /* visible keys of each row */

	skv_split_range(&k_lo, &k_hi, split, p->splits, len, bn);
	for (int32_t r = 0; r < nr; r++) {
		const uint16_t *qbits = (const uint16_t *)a->q + ((size_t)b * p->rows + r0 + r) * MLA_D_QK;

		for (int d = 0; d < MLA_D_QK; d++)
			q[(size_t)r * MLA_D_QK + d] = mla_bf16_to_float(qbits[d]);
		memset(acc + (size_t)r * MLA_D_V, 0, MLA_D_V * sizeof(float));
		m[r] = -INFINITY;
		l[r] = 0.0f;
		vis[r] = len - a->s_q + 1 + (r0 + r) / a->h_q;
	}
	for (int32_t t0 = k_lo; t0 < k_hi; t0 += bn) {
		int32_t t1 = k_hi - t0 < bn ? k_hi : t0 + bn;

		skv_load_tile(job, b, t0, t1, kt);
		for (int32_t j = 0; j < t1 - t0; j++)
			for (int32_t r = 0; r < nr; r++)
				if (t0 + j < vis[r])
					sc[(size_t)r * bn + j] = skv_dot(q + (size_t)r * MLA_D_QK,
									 kt + (size_t)j * MLA_D_QK, MLA_D_QK) *
								 a->softmax_scale;
		for (int32_t r = 0; r < nr; r++) {
			int32_t jn = (vis[r] < t1 ? vis[r] : t1) - t0;
			float *sr = sc + (size_t)r * bn;
			float mt = m[r], alpha;

			if (jn <= 0)
				continue;
			for (int32_t j = 0; j < jn; j++)
				mt = sr[j] > mt ? sr[j] : mt;
			alpha = expf(m[r] - mt);
			if (alpha != 1.0f) {
				l[r] *= alpha;
				skv_scale(acc + (size_t)r * MLA_D_V, alpha);
			}
			for (int32_t j = 0; j < jn; j++) {
				sr[j] = expf(sr[j] - mt);
				l[r] += sr[j];
			}
			m[r] = mt;
		}
		for (int32_t r = 0; r < nr; r++) {
			int32_t jn = (vis[r] < t1 ? vis[r] : t1) - t0;

			if (jn > 0)
				skv_pv(acc + (size_t)r * MLA_D_V, sc + (size_t)r * bn, kt, jn);
		}
	}
	for (int32_t r = 0; r < nr; r++) {
		size_t slot = ((size_t)b * p->rows + r0 + r) * p->splits + split;
		float *o = job->o_part + slot * MLA_D_V;
		const float *ar = acc + (size_t)r * MLA_D_V;

		if (l[r] == 0.0f) {
			job->lse_part[slot] = -INFINITY;
			continue;
		}
		for (int d = 0; d < MLA_D_V; d++)
			o[d] = ar[d] / l[r];
		job->lse_part[slot] = m[r] + logf(l[r]);
	}
}

/*
 * Phase 1 of the sparse form: one work item (b, i, split, head block). The valid entries of each
 * tile are decoded, compacted, into kt; invalid ones are skipped unread.
 */
static void skv_partial_sparse(const struct skv_job *job, int64_t item, float *scratch)
{
	const struct mla_decode_args *a = job->a;
	const struct skv_plan *p = job->p;
	int32_t bn = p->block_n, bh = p->block_h;
	int32_t hb = (int32_t)(item % p->hblocks);
	int32_t split = (int32_t)(item / p->hblocks % p->splits);
	int64_t bi = item / p->hblocks / p->splits;
	int32_t b = (int32_t)(bi / a->s_q), i = (int32_t)(bi % a->s_q);
	int32_t total = a->topk + a->extra_topk, e_lo, e_hi;
	int32_t h0 = hb * bh;
	int32_t nr = a->h_q - h0 < bh ? a->h_q - h0 : bh;
	float *kt = scratch;
	float *q = kt + (size_t)bn * MLA_D_QK;
	float *acc = q + (size_t)bh * MLA_D_QK;
	float *sc = acc + (size_t)bh * MLA_D_V;
	float *m = sc + (size_t)bh * bn;
	float *l = m + bh;

	skv_split_range(&e_lo, &e_hi, split, p->splits, total, bn);
	for (int32_t r = 0; r < nr; r++) {
		const uint16_t *qbits = (const uint16_t *)a->q + ((size_t)bi * a->h_q + h0 + r) * a->d_qk;

		for (int d = 0; d < a->d_qk; d++)
			q[(size_t)r * MLA_D_QK + d] = mla_bf16_to_float(qbits[d]);
		memset(acc + (size_t)r * MLA_D_V, 0, MLA_D_V * sizeof(float));
		m[r] = -INFINITY;
		l[r] = 0.0f;
	}
	for (int32_t t0 = e_lo; t0 < e_hi; t0 += bn) {
		int32_t t1 = e_hi - t0 < bn ? e_hi : t0 + bn;
		int32_t jn = 0;

		for (int32_t e = t0; e < t1; e++) {
			int32_t row, ps;
			const void *cache = cpu_args_entry(a, b, i, e, &row, &ps);

			if (cache)
				cpu_args_decode_row(a->kv_dtype, cache, ps, row, kt + (size_t)jn++ * MLA_D_QK);
		}
		if (jn == 0)
			continue;
		for (int32_t r = 0; r < nr; r++) {
			float *sr = sc + (size_t)r * bn;
			float mt = m[r], alpha;

			for (int32_t j = 0; j < jn; j++) {
				sr[j] = skv_dot(q + (size_t)r * MLA_D_QK, kt + (size_t)j * MLA_D_QK, a->d_qk) *
					a->softmax_scale;
				mt = sr[j] > mt ? sr[j] : mt;
			}
			alpha = expf(m[r] - mt);
			if (alpha != 1.0f) {
				l[r] *= alpha;
				skv_scale(acc + (size_t)r * MLA_D_V, alpha);
			}
			for (int32_t j = 0; j < jn; j++) {
				sr[j] = expf(sr[j] - mt);
				l[r] += sr[j];
			}
			m[r] = mt;
			skv_pv(acc + (size_t)r * MLA_D_V, sr, kt, jn);
		}
	}
	for (int32_t r = 0; r < nr; r++) {
		size_t slot = ((size_t)bi * a->h_q + h0 + r) * p->splits + split;
		float *o = job->o_part + slot * MLA_D_V;
		const float *ar = acc + (size_t)r * MLA_D_V;

		if (l[r] == 0.0f) {
			job->lse_part[slot] = -INFINITY;
			continue;
		}
		for (int d = 0; d < MLA_D_V; d++)
			o[d] = ar[d] / l[r];
		job->lse_part[slot] = m[r] + logf(l[r]);
	}
}

/* Phase 2: merge the splits of query row item = b * rows + r into out and lse. */
static void skv_combine(const struct skv_job *job, int64_t item)
{
	const struct mla_decode_args *a = job->a;
	const struct skv_plan *p = job->p;
	int32_t b = (int32_t)(item / p->rows), r = (int32_t)(item % p->rows);
	int32_t i = r / a->h_q, h = r % a->h_q;
	const float *lp = job->lse_part + (size_t)item * p->splits;
	const float *op = job->o_part + (size_t)item * p->splits * MLA_D_V;
	uint16_t *out = (uint16_t *)a->out + (size_t)item * MLA_D_V;
	float *lse = a->lse + ((size_t)b * a->h_q + h) * a->s_q + i;
	float acc[MLA_D_V];
	float mx = -INFINITY, sum = 0.0f, total, f = 1.0f;
	int nan_split = 0;

	for (int32_t s = 0; s < p->splits; s++) {
		nan_split |= isnan(lp[s]) != 0;
		mx = lp[s] > mx ? lp[s] : mx;
	}
	if (nan_split) {
		/* A NaN score (a visible 0x80 code) poisons the whole softmax, as in the reference. */
		for (int d = 0; d < MLA_D_V; d++)
			out[d] = 0x7fc0;
		*lse = NAN;
		return;
	}
	if (mx == -INFINITY) {
		memset(out, 0, MLA_D_V * sizeof(uint16_t));
		*lse = INFINITY;
		return;
	}
	for (int32_t s = 0; s < p->splits; s++)
		if (lp[s] != -INFINITY)
			sum += expf(lp[s] - mx);
	total = mx + logf(sum);
	memset(acc, 0, sizeof(acc));
	for (int32_t s = 0; s < p->splits; s++)
		if (lp[s] != -INFINITY)
			skv_axpy(acc, expf(lp[s] - total), op + (size_t)s * MLA_D_V);
	if (a->topk > 0 && a->attn_sink) {
		f = 1.0f / (1.0f + expf(a->attn_sink[h] - total));
		for (int d = 0; d < MLA_D_V; d++)
			acc[d] *= f;
	}
	for (int d = 0; d < MLA_D_V; d++)
		out[d] = mla_float_to_bf16(acc[d]);
	*lse = total;
}

static void *skv_worker(void *arg)
{
	struct skv_job *job = arg;
	float *scratch = NULL;

	if (job->phase == 1)
		scratch = job->scratch + (size_t)atomic_fetch_add(&job->slot, 1) * job->p->scratch_floats;
	for (;;) {
		int64_t item = atomic_fetch_add(&job->next, 1);

		if (item >= job->items)
			break;
		if (job->phase == 1 && job->a->topk > 0)
			skv_partial_sparse(job, item, scratch);
		else if (job->phase == 1)
			skv_partial(job, item, scratch);
		else
			skv_combine(job, item);
	}
	return NULL;
}

/* Run one phase over items on up to threads threads (the calling one included). */
static void skv_run_phase(struct skv_job *job, int phase, int64_t items, int32_t threads)
{
	pthread_t tid[CPU_ARGS_MAX_THREADS];
	int started = 0;

	job->phase = phase;
	job->items = items;
	atomic_store(&job->next, 0);
	atomic_store(&job->slot, 0);
	if (threads > items)
		threads = (int32_t)(items > 0 ? items : 1);
	for (int32_t t = 1; t < threads; t++)
		if (pthread_create(&tid[started], NULL, skv_worker, job) == 0)
			started++;
	skv_worker(job);
	for (int t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
}

static const int32_t skv_block_n[] = { 16, 64 };
static const int32_t skv_block_h[] = { 8, 16 };
static const int32_t skv_num_splits[] = { 0, 1, 4, 64 };

static int skv_configs(const char *arch, struct mla_decode_config *out, int cap)
{
	int n = 0;

	if (!cpu_args_arch_ok(arch))
		return MLA_EUNSUPPORTED;
	for (size_t i = 0; i < sizeof(skv_block_n) / sizeof(skv_block_n[0]); i++)
		for (size_t j = 0; j < sizeof(skv_block_h) / sizeof(skv_block_h[0]); j++)
			for (size_t k = 0; k < sizeof(skv_num_splits) / sizeof(skv_num_splits[0]); k++) {
				if (out && n < cap) {
					memset(&out[n], 0, sizeof(out[n]));
					out[n].block_n = skv_block_n[i];
					out[n].block_h = skv_block_h[j];
					out[n].num_splits = skv_num_splits[k];
					mla_decode_config_name(&out[n]);
				}
				n++;
			}
	return n;
}

static size_t skv_workspace_size(const struct mla_decode_args *a, const struct mla_decode_config *cfg)
{
	struct skv_plan p;

	if (skv_plan_init(&p, a, cfg))
		return 0;
	return (p.o_floats + p.lse_floats) * sizeof(float);
}

static int skv_launch(const struct mla_decode_args *a, const struct mla_decode_config *cfg)
{
	struct skv_plan p;
	struct skv_job job;
	float lut[256];
	int64_t items;
	int32_t threads;
	int err;

	err = skv_plan_init(&p, a, cfg);
	if (!err)
		err = cpu_args_check(a);
	if (err)
		return err;
	if (a->batch == 0)
		return MLA_OK;
	if (a->workspace_bytes < (p.o_floats + p.lse_floats) * sizeof(float))
		return MLA_EUNSUPPORTED;
	if (!a->workspace || (uintptr_t)a->workspace % sizeof(float))
		return MLA_EINVAL;
	items = p.groups * p.splits * p.hblocks;
	threads = p.threads < items ? p.threads : (int32_t)items;
	memset(&job, 0, sizeof(job));
	job.a = a;
	job.p = &p;
	job.lut = lut;
	job.o_part = a->workspace;
	job.lse_part = job.o_part + p.o_floats;
	job.scratch = aligned_alloc(SKV_ALIGN, (size_t)threads * p.scratch_floats * sizeof(float));
	if (!job.scratch)
		return MLA_EUNSUPPORTED;
	if (a->kv_dtype == MLA_KV_FP8_E4M3_FNUZ)
		cpu_args_fp8_lut(lut, a->kv_scale);
	skv_run_phase(&job, 1, items, threads);
	skv_run_phase(&job, 2, (int64_t)a->batch * p.rows, p.threads);
	free(job.scratch);
	return MLA_OK;
}

const struct mla_decode_impl mla_cpu_splitkv = {
	MLA_DECODE_ABI_VERSION,
	"cpu.splitkv",
	"cpu",
	"split-KV flash decoding on threads: BLOCK_H heads share each decoded KV tile, online softmax, "
	"LSE-merge combine",
	skv_configs,
	skv_workspace_size,
	skv_launch,
	cpu_args_supports,
	NULL, /* prepare: nothing to do */
};
