/*
 * check_cpu_kernels.c - cpu.naive and every cpu.splitkv config against the oracle
 * (oracles/mla_decode_ref.h) on a grid of small MLA decode cases, plus the launch contract of
 * kernels/mla_decode.h: NaN slots past the lengths and sentinel block_table entries never leak,
 * poisoned outputs are fully written, nothing outside out/lse/workspace is written, repeated
 * launches and thread counts give identical bits, inputs are unchanged, bad arguments are refused.
 * The sparse form (ABI 3) on every cache format, built here (an own writer of the formats' bytes)
 * and checked against a brute-force reference in double: -1 padding, a row of all -1, topk_length
 * 0 and topk, attn_sink +-inf and finite, an extra cache, page sizes 61 and 69, s_q 2, every row no
 * valid entry names NaN; cpu.naive and every cpu.splitkv config agree, thread counts keep bits,
 * sparse arguments out of contract are refused, supports() gives its reasons.
 *
 * Set VS_BENCH=1 to add the "bench" case: cpu.naive vs cpu.splitkv on b=4, s_q=1, h_q=16,
 * seqlen 4096, bf16 (times printed, never asserted; parity still checked).
 */
#include "testutil.h"

#include "codec.h"
#include "mla_decode.h"
#include "mla_decode_ref.h"
#include "mla_numeric.h"
#include "parity.h"
#include "task.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * Tolerances: the numbers recommended as the plan defaults, for bf16 and fp8 KV alike (the reference
 * uses the decoded fp8 values times kv_scale exactly, so fp8 KV adds no error of its own).
 * out: FlashMLA's bf16 numbers. out is rounded to bf16 once (relative error <= 2^-9) and float
 *   accumulation adds ~1e-6 relative, so rtol 2.01/128 or atol 8e-4 holds with margin; bf16
 *   rounding alone gives cos_diff ~1.4e-6 (measured 1.38e-6 at most), under 5e-6.
 * lse: FlashMLA's rtol 8.01/65536 (~1.2e-4), with atol 1e-5 instead of 1e-6. In float,
 *   lse = m + log(l) has an absolute error of a few ulp(m) plus the relative error of the sum l:
 *   measured at most 7.6e-6 (seqlen 32768, lse ~10) and 6.1e-5 (peaky scores, lse ~20), where
 *   rtol allows 1.3e-3 and 2.4e-3. atol only decides where |lse| < 0.08 (few keys, negative
 *   scores); there 1e-6 is ~2 ulp of m for |m| ~ 4, too tight for GPU exp2/log2 approximations
 *   and a folded log2(e) scale. 1e-5 is still 10^4 times below the smallest lse error a real bug
 *   produced here (log 2 = 0.69, from a split counted twice or a wrong causal length).
 */
#define TOL_OUT_ATOL 8e-4
#define TOL_OUT_RTOL (2.01 / 128.0)
#define TOL_OUT_COS 5e-6
#define TOL_LSE_ATOL 1e-5
#define TOL_LSE_RTOL (8.01 / 65536.0)

#define SOFTMAX_SCALE 0.1352f /* DeepSeek-V3: 192^-0.5 * mscale^2 */
#define GUARD 64              /* guard elements after every output buffer */
#define BF16_NAN 0x7fc0u
#define FP8_NAN 0x80u

static const struct task_tol tol_out = { TOL_OUT_ATOL, TOL_OUT_RTOL, TOL_OUT_COS };
static const struct task_tol tol_lse = { TOL_LSE_ATOL, TOL_LSE_RTOL, -1.0 };

/* ---- a small local input generator (independent of harness/op_mla_gen.c) ------------------------- */

static uint64_t gen_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double gen_uniform(uint64_t *s)
{
	return ((double)(gen_next(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0); /* (0, 1) */
}

/* N(0,1)/10 clamped to [-1, 1] (Box-Muller). */
static float gen_value(uint64_t *s)
{
	double u1 = gen_uniform(s), u2 = gen_uniform(s);
	double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2) / 10.0;

	return (float)(z < -1.0 ? -1.0 : z > 1.0 ? 1.0 : z);
}

struct kcase {
	const char *name;
	int32_t kv_dtype, batch, s_q, h_q, page_size;
	int32_t seqlens[6];
	float softmax_scale; /* 0: SOFTMAX_SCALE */
	uint64_t seed;
	int visible_nan;     /* fp8: put the NaN code 0x80 in visible rows (a V dim and a rope dim) */
};

/* One generated problem: inputs (owned), args pointing at them, and the oracle's outputs. */
struct problem {
	struct mla_decode_args args;
	uint16_t *q;
	uint8_t *kv;
	int32_t *block_table, *seqlens;
	size_t q_bytes, kv_bytes, bt_bytes, sl_bytes;
	size_t out_elems, lse_elems;
	float *ref_out, *ref_lse;
	int out_dims[4], lse_dims[3];
};

static void problem_release(struct problem *p)
{
	free(p->q);
	free(p->kv);
	free(p->block_table);
	free(p->seqlens);
	free(p->ref_out);
	free(p->ref_lse);
	memset(p, 0, sizeof(*p));
}

/*
 * Build c's inputs: pages randomly permuted, every slot past a sequence's length NaN (0x80 for fp8),
 * unused block_table entries (one spare column always) VS_BLOCK_TABLE_SENTINEL, spare cache pages
 * all NaN; fp8: kv_scale = amax/240 and the codes 0x7F, 0xFF present. Then run the oracle.
 */
static void problem_build(struct problem *p, const struct kcase *c)
{
	uint64_t s = c->seed;
	int32_t max_len = 0, used = 0, next = 0;
	int32_t *perm;
	float *vals = NULL, amax = 0.0f;
	size_t esize = c->kv_dtype == MLA_KV_BF16 ? 2 : 1, slots;
	int rc;

	memset(p, 0, sizeof(*p));
	for (int b = 0; b < c->batch; b++) {
		max_len = c->seqlens[b] > max_len ? c->seqlens[b] : max_len;
		used += (c->seqlens[b] + c->page_size - 1) / c->page_size;
	}
	p->args.batch = c->batch;
	p->args.s_q = c->s_q;
	p->args.h_q = c->h_q;
	p->args.page_size = c->page_size;
	p->args.max_pages = (max_len + c->page_size - 1) / c->page_size + 1;
	p->args.num_pages = used + 3;
	p->args.kv_dtype = c->kv_dtype;
	p->args.softmax_scale = c->softmax_scale != 0.0f ? c->softmax_scale : SOFTMAX_SCALE;
	p->args.kv_scale = 1.0f;
	p->args.num_cus = 2;

	p->q_bytes = (size_t)c->batch * c->s_q * c->h_q * MLA_D_QK * 2;
	p->q = malloc(p->q_bytes + 1);
	for (size_t k = 0; k < p->q_bytes / 2; k++)
		p->q[k] = mla_float_to_bf16(gen_value(&s));

	slots = (size_t)p->args.num_pages * c->page_size;
	p->kv_bytes = slots * MLA_D_QK * esize;
	p->kv = malloc(p->kv_bytes);
	vals = malloc(slots * MLA_D_QK * sizeof(float));
	ck_assert_ptr_nonnull(p->q);
	ck_assert_ptr_nonnull(p->kv);
	ck_assert_ptr_nonnull(vals);
	for (size_t k = 0; k < slots * MLA_D_QK; k++)
		vals[k] = NAN;

	perm = malloc((size_t)p->args.num_pages * sizeof(int32_t));
	ck_assert_ptr_nonnull(perm);
	for (int32_t k = 0; k < p->args.num_pages; k++)
		perm[k] = k;
	for (int32_t k = p->args.num_pages - 1; k > 0; k--) {
		int32_t j = (int32_t)(gen_next(&s) % (uint64_t)(k + 1)), t = perm[k];

		perm[k] = perm[j];
		perm[j] = t;
	}
	p->bt_bytes = (size_t)c->batch * p->args.max_pages * sizeof(int32_t);
	p->sl_bytes = (size_t)c->batch * sizeof(int32_t);
	p->block_table = malloc(p->bt_bytes + 1);
	p->seqlens = malloc(p->sl_bytes + 1);
	ck_assert_ptr_nonnull(p->block_table);
	ck_assert_ptr_nonnull(p->seqlens);
	for (int b = 0; b < c->batch; b++) {
		int32_t *row = p->block_table + (size_t)b * p->args.max_pages;
		int32_t pages = (c->seqlens[b] + c->page_size - 1) / c->page_size;

		p->seqlens[b] = c->seqlens[b];
		for (int32_t k = 0; k < p->args.max_pages; k++)
			row[k] = k < pages ? perm[next++] : VS_BLOCK_TABLE_SENTINEL;
		for (int32_t j = 0; j < c->seqlens[b]; j++) {
			size_t off = ((size_t)row[j / c->page_size] * c->page_size + j % c->page_size) *
				     MLA_D_QK;

			for (int d = 0; d < MLA_D_QK; d++) {
				vals[off + d] = gen_value(&s);
				amax = fabsf(vals[off + d]) > amax ? fabsf(vals[off + d]) : amax;
			}
		}
	}
	free(perm);

	if (c->kv_dtype == MLA_KV_BF16) {
		uint16_t *kv = (uint16_t *)p->kv;

		for (size_t k = 0; k < slots * MLA_D_QK; k++)
			kv[k] = isnan(vals[k]) ? BF16_NAN : mla_float_to_bf16(vals[k]);
	} else {
		p->args.kv_scale = amax > 0.0f ? amax / 240.0f : 1.0f;
		for (size_t k = 0; k < slots * MLA_D_QK; k++)
			p->kv[k] = isnan(vals[k]) ? FP8_NAN : vs_fp8_e4m3_fnuz_encode(vals[k] / p->args.kv_scale);
		/* The extreme codes, in the first visible row. */
		for (int b = 0; b < c->batch; b++)
			if (c->seqlens[b] > 0) {
				size_t off = (size_t)p->block_table[(size_t)b * p->args.max_pages] *
					     c->page_size * MLA_D_QK;

				p->kv[off] = 0x7f;
				p->kv[off + 1] = 0xff;
				break;
			}
		/* Legal input that must come out NaN wherever a query sees it, as in the reference. */
		if (c->visible_nan) {
			size_t row0 = (size_t)p->block_table[0] * c->page_size + 2; /* sequence 0, key 2 */
			size_t row1 = (size_t)p->block_table[p->args.max_pages] * c->page_size + 1; /* seq 1, key 1 */

			p->kv[row0 * MLA_D_QK + 5] = FP8_NAN;    /* a V dim */
			p->kv[row1 * MLA_D_QK + 540] = FP8_NAN;  /* a rope dim: scores only */
		}
	}
	free(vals);

	p->args.q = p->q;
	p->args.kv_cache = p->kv;
	p->args.block_table = p->block_table;
	p->args.seqlens = p->seqlens;
	p->out_elems = (size_t)c->batch * c->s_q * c->h_q * MLA_D_V;
	p->lse_elems = (size_t)c->batch * c->h_q * c->s_q;
	p->out_dims[0] = c->batch;
	p->out_dims[1] = c->s_q;
	p->out_dims[2] = c->h_q;
	p->out_dims[3] = MLA_D_V;
	p->lse_dims[0] = c->batch;
	p->lse_dims[1] = c->h_q;
	p->lse_dims[2] = c->s_q;
	p->ref_out = malloc((p->out_elems + 1) * sizeof(float));
	p->ref_lse = malloc((p->lse_elems + 1) * sizeof(float));
	ck_assert_ptr_nonnull(p->ref_out);
	ck_assert_ptr_nonnull(p->ref_lse);
	rc = mla_decode_reference(&p->args, p->ref_out, p->ref_lse, 2);
	ck_assert_msg(rc == MLA_OK, "%s: oracle returned %d", c->name, rc);
}

/* ---- one checked launch ------------------------------------------------------------------- */

/* Output buffers of one launch: poisoned with NaN (0xFF bytes), GUARD elements of 0xA5 after. */
struct outputs {
	uint16_t *out;
	float *lse;
	uint8_t *ws;
	size_t ws_bytes;
};

static void outputs_alloc(struct outputs *o, const struct problem *p, size_t ws_bytes)
{
	o->out = malloc((p->out_elems + GUARD) * sizeof(uint16_t));
	o->lse = malloc((p->lse_elems + GUARD) * sizeof(float));
	o->ws = malloc(ws_bytes + GUARD);
	o->ws_bytes = ws_bytes;
	ck_assert_ptr_nonnull(o->out);
	ck_assert_ptr_nonnull(o->lse);
	ck_assert_ptr_nonnull(o->ws);
	memset(o->out, 0xff, p->out_elems * sizeof(uint16_t));
	memset(o->out + p->out_elems, 0xa5, GUARD * sizeof(uint16_t));
	memset(o->lse, 0xff, p->lse_elems * sizeof(float));
	memset(o->lse + p->lse_elems, 0xa5, GUARD * sizeof(float));
	memset(o->ws, 0xff, ws_bytes);
	memset(o->ws + ws_bytes, 0xa5, GUARD);
}

static void outputs_free(struct outputs *o)
{
	free(o->out);
	free(o->lse);
	free(o->ws);
}

static int guard_intact(const void *p, size_t bytes)
{
	const uint8_t *g = p;

	for (size_t k = 0; k < bytes; k++)
		if (g[k] != 0xa5)
			return 0;
	return 1;
}

static int launch_into(struct problem *p, const struct mla_decode_impl *impl,
		       const struct mla_decode_config *cfg, struct outputs *o)
{
	p->args.out = o->out;
	p->args.lse = o->lse;
	p->args.workspace = o->ws_bytes ? o->ws : NULL;
	p->args.workspace_bytes = o->ws_bytes;
	return impl->launch(&p->args, cfg);
}

/* Parity of o against the reference; on failure, the parity_describe line with context. */
static void check_parity(const struct problem *p, const struct outputs *o, const char *ctx)
{
	static const char *const out_names[] = { "b", "s", "h", "d" };
	static const char *const lse_names[] = { "b", "h", "s" };
	struct parity_report r;
	char line[512];

	parity_compare_bf16(&r, o->out, p->ref_out, p->out_elems, &tol_out, p->out_dims, 4);
	parity_describe(line, sizeof(line), "out", &r, out_names, 4);
	ck_assert_msg(r.pass, "%s: %s", ctx, line);
	parity_compare_f32(&r, o->lse, p->ref_lse, p->lse_elems, &tol_lse, p->lse_dims, 3);
	parity_describe(line, sizeof(line), "lse", &r, lse_names, 3);
	ck_assert_msg(r.pass, "%s: %s", ctx, line);
	ck_assert_msg(guard_intact(o->out + p->out_elems, GUARD * sizeof(uint16_t)),
		      "%s: wrote past the end of out", ctx);
	ck_assert_msg(guard_intact(o->lse + p->lse_elems, GUARD * sizeof(float)),
		      "%s: wrote past the end of lse", ctx);
	ck_assert_msg(guard_intact(o->ws + o->ws_bytes, GUARD), "%s: wrote past the workspace (%zu bytes)",
		      ctx, o->ws_bytes);
}

/*
 * The full contract for one (impl, config): launch into poisoned buffers, parity, launch again
 * into other poisoned buffers (bit-identical), inputs unchanged. Returns the first launch's
 * outputs in *keep when keep is non-NULL (caller frees).
 */
static void check_launch(struct problem *p, const char *case_name, const struct mla_decode_impl *impl,
			 const struct mla_decode_config *cfg, struct outputs *keep)
{
	struct outputs o1, o2;
	size_t ws = impl->workspace_size(&p->args, cfg);
	uint8_t *q0 = malloc(p->q_bytes + 1), *kv0 = malloc(p->kv_bytes + 1);
	uint8_t *bt0 = malloc(p->bt_bytes + 1), *sl0 = malloc(p->sl_bytes + 1);
	char ctx[200];
	int rc;

	snprintf(ctx, sizeof(ctx), "case %s, %s config %s", case_name, impl->name,
		 cfg ? cfg->name : "(null)");
	memcpy(q0, p->q, p->q_bytes);
	memcpy(kv0, p->kv, p->kv_bytes);
	memcpy(bt0, p->block_table, p->bt_bytes);
	memcpy(sl0, p->seqlens, p->sl_bytes);
	outputs_alloc(&o1, p, ws);
	outputs_alloc(&o2, p, ws);

	rc = launch_into(p, impl, cfg, &o1);
	ck_assert_msg(rc == MLA_OK, "%s: launch returned %d", ctx, rc);
	check_parity(p, &o1, ctx);
	rc = launch_into(p, impl, cfg, &o2);
	ck_assert_msg(rc == MLA_OK, "%s: second launch returned %d", ctx, rc);
	ck_assert_msg(!memcmp(o1.out, o2.out, p->out_elems * sizeof(uint16_t)),
		      "%s: out differs between two launches", ctx);
	ck_assert_msg(!memcmp(o1.lse, o2.lse, p->lse_elems * sizeof(float)),
		      "%s: lse differs between two launches", ctx);
	ck_assert_msg(!memcmp(q0, p->q, p->q_bytes), "%s: q was modified", ctx);
	ck_assert_msg(!memcmp(kv0, p->kv, p->kv_bytes), "%s: kv_cache was modified", ctx);
	ck_assert_msg(!memcmp(bt0, p->block_table, p->bt_bytes), "%s: block_table was modified", ctx);
	ck_assert_msg(!memcmp(sl0, p->seqlens, p->sl_bytes), "%s: seqlens was modified", ctx);

	free(q0);
	free(kv0);
	free(bt0);
	free(sl0);
	outputs_free(&o2);
	if (keep)
		*keep = o1;
	else
		outputs_free(&o1);
}

/* ---- the grid ----------------------------------------------------------------------------- */

static const struct kcase grid[] = {
	{ "bf16-b1-sq1-h1-ps1-len1", MLA_KV_BF16, 1, 1, 1, 1, { 1 }, 0, 11, 0 },
	{ "bf16-b3-sq1-h3-ps16-0-63-65", MLA_KV_BF16, 3, 1, 3, 16, { 0, 63, 65 }, 0, 12, 0 },
	{ "bf16-b4-sq2-h16-ps64-64-1-0-131", MLA_KV_BF16, 4, 2, 16, 64, { 64, 1, 0, 131 }, 0, 13, 0 },
	{ "bf16-b2-sq2-h1-ps16-2-97", MLA_KV_BF16, 2, 2, 1, 16, { 2, 97 }, 0, 14, 0 },
	{ "bf16-b2-sq1-h16-ps64-1000-613", MLA_KV_BF16, 2, 1, 16, 64, { 1000, 613 }, 0, 15, 0 },
	{ "bf16-b2-sq2-h3-ps1-peaky-257-64", MLA_KV_BF16, 2, 2, 3, 1, { 257, 64 }, 20.0f, 16, 0 },
	{ "bf16-b2-sq1-h16-ps16-all-empty", MLA_KV_BF16, 2, 1, 16, 16, { 0, 0 }, 0, 17, 0 },
	{ "fp8-b3-sq1-h16-ps64-65-0-127", MLA_KV_FP8_E4M3_FNUZ, 3, 1, 16, 64, { 65, 0, 127 }, 0, 21, 0 },
	{ "fp8-b2-sq2-h3-ps1-1-63", MLA_KV_FP8_E4M3_FNUZ, 2, 2, 3, 1, { 1, 63 }, 0, 22, 0 },
	{ "fp8-b2-sq1-h16-ps16-64-257", MLA_KV_FP8_E4M3_FNUZ, 2, 1, 16, 16, { 64, 257 }, 0, 23, 0 },
	{ "fp8-b3-sq2-h16-ps64-peaky-0-5-311", MLA_KV_FP8_E4M3_FNUZ, 3, 2, 16, 64, { 0, 5, 311 }, 12.0f, 24, 0 },
	{ "fp8-b1-sq1-h3-ps16-len1", MLA_KV_FP8_E4M3_FNUZ, 1, 1, 3, 16, { 1 }, 0, 25, 0 },
	{ "fp8-b2-sq2-h3-ps16-visible-nan-40-70", MLA_KV_FP8_E4M3_FNUZ, 2, 2, 3, 16, { 40, 70 }, 0, 26, 1 },
};
#define NGRID ((int)(sizeof(grid) / sizeof(grid[0])))

static const struct mla_decode_config *naive_config(void)
{
	static struct mla_decode_config cfg;
	int n = mla_decode_impl_find("cpu.naive")->configs("x86_64", &cfg, 1);

	ck_assert_int_eq(n, 1);
	return &cfg;
}

START_TEST(naive_matches_oracle)
{
	struct problem p;

	problem_build(&p, &grid[_i]);
	check_launch(&p, grid[_i].name, mla_decode_impl_find("cpu.naive"), naive_config(), NULL);
	problem_release(&p);
}
END_TEST

START_TEST(splitkv_every_config_matches_oracle)
{
	const struct mla_decode_impl *impl = mla_decode_impl_find("cpu.splitkv");
	struct mla_decode_config cfgs[32];
	struct problem p;
	int n = impl->configs("x86_64", cfgs, 32);

	ck_assert_msg(n >= 16 && n <= 32, "cpu.splitkv has %d configs", n);
	problem_build(&p, &grid[_i]);
	for (int k = 0; k < n; k++)
		check_launch(&p, grid[_i].name, impl, &cfgs[k], NULL);
	problem_release(&p);
}
END_TEST

/* Thread counts 1..5 (num_warps), and num_cus when num_warps is 0, give identical bits. */
START_TEST(splitkv_thread_count_keeps_bits)
{
	static const struct mla_decode_config base[] = {
		{ "", 16, 8, 0, 0, 0 },  { "", 64, 16, 4, 0, 0 }, { "", 16, 16, 64, 0, 0 },
		{ "", 64, 8, 1, 0, 0 },
	};
	const struct mla_decode_impl *impl = mla_decode_impl_find("cpu.splitkv");
	struct problem p;

	problem_build(&p, &grid[_i]);
	for (size_t k = 0; k < sizeof(base) / sizeof(base[0]); k++) {
		struct mla_decode_config cfg = base[k];
		struct outputs ref, o;

		cfg.num_warps = 1;
		cfg.num_splits = base[k].num_splits ? base[k].num_splits : 4; /* auto would follow threads */
		mla_decode_config_name(&cfg);
		check_launch(&p, grid[_i].name, impl, &cfg, &ref);
		for (int t = 2; t <= 5; t++) {
			cfg.num_warps = t;
			mla_decode_config_name(&cfg);
			outputs_alloc(&o, &p, impl->workspace_size(&p.args, &cfg));
			ck_assert_int_eq(launch_into(&p, impl, &cfg, &o), MLA_OK);
			ck_assert_msg(!memcmp(ref.out, o.out, p.out_elems * sizeof(uint16_t)),
				      "case %s, config %s: out bits differ from 1 thread", grid[_i].name, cfg.name);
			ck_assert_msg(!memcmp(ref.lse, o.lse, p.lse_elems * sizeof(float)),
				      "case %s, config %s: lse bits differ from 1 thread", grid[_i].name, cfg.name);
			outputs_free(&o);
		}
		/* num_warps 0: threads from num_cus. */
		cfg.num_warps = 0;
		mla_decode_config_name(&cfg);
		for (int cus = 1; cus <= 4; cus += 3) {
			p.args.num_cus = cus;
			outputs_alloc(&o, &p, impl->workspace_size(&p.args, &cfg));
			ck_assert_int_eq(launch_into(&p, impl, &cfg, &o), MLA_OK);
			ck_assert_msg(!memcmp(ref.out, o.out, p.out_elems * sizeof(uint16_t)),
				      "case %s, config %s, num_cus %d: out bits differ", grid[_i].name,
				      cfg.name, cus);
			outputs_free(&o);
		}
		p.args.num_cus = 2;
		outputs_free(&ref);
	}
	problem_release(&p);
}
END_TEST

/* ---- configs and workspace ------------------------------------------------------------------ */

START_TEST(configs_by_arch)
{
	static const struct {
		const char *impl, *arch;
		int expected; /* count, or MLA_EUNSUPPORTED */
	} t[] = {
		{ "cpu.naive", "x86_64", 1 },     { "cpu.naive", "aarch64", 1 },
		{ "cpu.naive", "riscv64", 1 },    { "cpu.naive", "sm_90", MLA_EUNSUPPORTED },
		{ "cpu.naive", "gfx942", MLA_EUNSUPPORTED }, { "cpu.naive", "", MLA_EUNSUPPORTED },
		{ "cpu.splitkv", "x86_64", 16 },  { "cpu.splitkv", "aarch64", 16 },
		{ "cpu.splitkv", "sm_90", MLA_EUNSUPPORTED }, { "cpu.splitkv", "gfx950", MLA_EUNSUPPORTED },
	};
	const struct mla_decode_impl *impl = mla_decode_impl_find(t[_i].impl);
	struct mla_decode_config cfgs[32];
	int n;

	ck_assert_ptr_nonnull(impl);
	ck_assert_str_eq(impl->backend, "cpu");
	ck_assert_uint_eq(impl->abi_version, MLA_DECODE_ABI_VERSION);
	n = impl->configs(t[_i].arch, cfgs, 32);
	ck_assert_msg(n == t[_i].expected, "%s configs(\"%s\") = %d, expected %d", t[_i].impl, t[_i].arch,
		      n, t[_i].expected);
	/* A cap of 0 writes nothing and still returns the count. */
	ck_assert_int_eq(impl->configs(t[_i].arch, NULL, 0), t[_i].expected);
	for (int k = 0; k < n; k++) {
		struct mla_decode_config named = cfgs[k];

		if (!strcmp(t[_i].impl, "cpu.naive")) {
			ck_assert_str_eq(cfgs[k].name, "default");
			ck_assert(!cfgs[k].block_n && !cfgs[k].block_h && !cfgs[k].num_splits &&
				  !cfgs[k].num_warps && !cfgs[k].num_stages);
			continue;
		}
		mla_decode_config_name(&named);
		ck_assert_msg(!strcmp(named.name, cfgs[k].name), "config %d named \"%s\", canonical \"%s\"", k,
			      cfgs[k].name, named.name);
		for (int j = 0; j < k; j++)
			ck_assert_msg(strcmp(cfgs[j].name, cfgs[k].name), "config name \"%s\" repeated",
				      cfgs[k].name);
	}
}
END_TEST

START_TEST(splitkv_config_space_covers_the_grid)
{
	const struct mla_decode_impl *impl = mla_decode_impl_find("cpu.splitkv");
	struct mla_decode_config cfgs[32];
	int n = impl->configs("x86_64", cfgs, 32), seen = 0;

	for (int k = 0; k < n; k++) {
		ck_assert_msg(cfgs[k].block_n == 16 || cfgs[k].block_n == 64, "block_n %d", cfgs[k].block_n);
		ck_assert_msg(cfgs[k].block_h == 8 || cfgs[k].block_h == 16, "block_h %d", cfgs[k].block_h);
		ck_assert_int_eq(cfgs[k].num_warps, 0);
		if (cfgs[k].num_splits == 64 && cfgs[k].block_n == 64)
			seen |= 1;
		if (cfgs[k].num_splits == 0)
			seen |= 2;
	}
	ck_assert_msg(seen == 3, "missing the 64-split or the auto-split configs (seen %d)", seen);
}
END_TEST

/* workspace_size depends on shapes only: seqlens and block_table values do not change it. */
START_TEST(splitkv_workspace_from_shapes_only)
{
	const struct mla_decode_impl *impl = mla_decode_impl_find("cpu.splitkv");
	struct mla_decode_config cfgs[32];
	struct problem p;
	int n = impl->configs("x86_64", cfgs, 32);

	problem_build(&p, &grid[4]);
	for (int k = 0; k < n; k++) {
		size_t before = impl->workspace_size(&p.args, &cfgs[k]), after;
		int32_t keep = p.seqlens[0];

		p.seqlens[0] = 3;
		after = impl->workspace_size(&p.args, &cfgs[k]);
		p.seqlens[0] = keep;
		ck_assert_msg(before == after, "config %s: workspace %zu, %zu after changing seqlens",
			      cfgs[k].name, before, after);
		ck_assert_msg(before >= p.out_elems * sizeof(float), "config %s: workspace %zu too small for"
			      " one split", cfgs[k].name, before);
		if (cfgs[k].num_splits > 0)
			ck_assert_msg(before == (size_t)cfgs[k].num_splits * (p.out_elems + p.lse_elems) *
					       sizeof(float),
				      "config %s: workspace %zu", cfgs[k].name, before);
	}
	ck_assert_uint_eq(mla_decode_impl_find("cpu.naive")->workspace_size(&p.args, naive_config()), 0);
	problem_release(&p);
}
END_TEST

/* ---- argument checks ---------------------------------------------------------------------- */

enum mutation {
	MUT_NULL_Q, MUT_NULL_KV, MUT_NULL_BT, MUT_NULL_SEQLENS, MUT_NULL_OUT, MUT_NULL_LSE,
	MUT_SQ0, MUT_HQ0, MUT_PS0, MUT_BATCH_NEG, MUT_DTYPE, MUT_SEQLEN_NEG, MUT_SEQLEN_BIG,
	MUT_PAGE_NEG, MUT_PAGE_BIG, MUT_LAST_PAGE_BIG, MUT_WS_SMALL, MUT_WS_NULL, MUT_CFG_BN0,
	MUT_CFG_BH0, MUT_CFG_SPLITS_NEG, MUT_CFG_SPLITS_HUGE, MUT_CFG_NULL,
};

static const struct {
	const char *name;
	enum mutation mut;
	int naive, splitkv; /* expected codes */
} bad_args[] = {
	{ "null q", MUT_NULL_Q, MLA_EINVAL, MLA_EINVAL },
	{ "null kv_cache", MUT_NULL_KV, MLA_EINVAL, MLA_EINVAL },
	{ "null block_table", MUT_NULL_BT, MLA_EINVAL, MLA_EINVAL },
	{ "null seqlens", MUT_NULL_SEQLENS, MLA_EINVAL, MLA_EINVAL },
	{ "null out", MUT_NULL_OUT, MLA_EINVAL, MLA_EINVAL },
	{ "null lse", MUT_NULL_LSE, MLA_EINVAL, MLA_EINVAL },
	{ "s_q 0", MUT_SQ0, MLA_EINVAL, MLA_EINVAL },
	{ "h_q 0", MUT_HQ0, MLA_EINVAL, MLA_EINVAL },
	{ "page_size 0", MUT_PS0, MLA_EINVAL, MLA_EINVAL },
	{ "batch -1", MUT_BATCH_NEG, MLA_EINVAL, MLA_EINVAL },
	{ "kv_dtype 7", MUT_DTYPE, MLA_EINVAL, MLA_EINVAL },
	{ "seqlen -1", MUT_SEQLEN_NEG, MLA_EINVAL, MLA_EINVAL },
	{ "seqlen past max_pages * page_size", MUT_SEQLEN_BIG, MLA_EINVAL, MLA_EINVAL },
	{ "needed page -1", MUT_PAGE_NEG, MLA_EINVAL, MLA_EINVAL },
	{ "needed page num_pages", MUT_PAGE_BIG, MLA_EINVAL, MLA_EINVAL },
	{ "last needed page out of range", MUT_LAST_PAGE_BIG, MLA_EINVAL, MLA_EINVAL },
	{ "workspace one byte short", MUT_WS_SMALL, MLA_OK, MLA_EUNSUPPORTED },
	{ "workspace null", MUT_WS_NULL, MLA_OK, MLA_EINVAL },
	{ "block_n 0", MUT_CFG_BN0, MLA_OK, MLA_EINVAL },
	{ "block_h 0", MUT_CFG_BH0, MLA_OK, MLA_EINVAL },
	{ "num_splits -1", MUT_CFG_SPLITS_NEG, MLA_OK, MLA_EINVAL },
	{ "num_splits INT32_MAX, workspace sized for 4", MUT_CFG_SPLITS_HUGE, MLA_OK, MLA_EUNSUPPORTED },
	{ "null config", MUT_CFG_NULL, MLA_OK, MLA_EINVAL },
};

START_TEST(bad_arguments_are_refused_before_writing)
{
	static const char *const impls[] = { "cpu.naive", "cpu.splitkv" };
	struct problem p;

	problem_build(&p, &grid[1]); /* seqlens {0, 63, 65}, page_size 16: 4 and 5 pages */
	for (int k = 0; k < 2; k++) {
		const struct mla_decode_impl *impl = mla_decode_impl_find(impls[k]);
		struct mla_decode_config cfg = { "bn16-bh8-sp4-w0-st0", 16, 8, 4, 0, 0 };
		const struct mla_decode_config *cp = k ? &cfg : naive_config();
		struct mla_decode_args keep = p.args;
		struct outputs o;
		int32_t bt_keep[3], sl_keep = p.seqlens[1];
		int expected = k ? bad_args[_i].splitkv : bad_args[_i].naive, rc;
		size_t ws = impl->workspace_size(&p.args, cp);

		memcpy(bt_keep, &p.block_table[p.args.max_pages], sizeof(bt_keep));
		outputs_alloc(&o, &p, ws);
		p.args.out = o.out;
		p.args.lse = o.lse;
		p.args.workspace = ws ? o.ws : NULL;
		p.args.workspace_bytes = ws;
		switch (bad_args[_i].mut) {
		case MUT_NULL_Q: p.args.q = NULL; break;
		case MUT_NULL_KV: p.args.kv_cache = NULL; break;
		case MUT_NULL_BT: p.args.block_table = NULL; break;
		case MUT_NULL_SEQLENS: p.args.seqlens = NULL; break;
		case MUT_NULL_OUT: p.args.out = NULL; break;
		case MUT_NULL_LSE: p.args.lse = NULL; break;
		case MUT_SQ0: p.args.s_q = 0; break;
		case MUT_HQ0: p.args.h_q = 0; break;
		case MUT_PS0: p.args.page_size = 0; break;
		case MUT_BATCH_NEG: p.args.batch = -1; break;
		case MUT_DTYPE: p.args.kv_dtype = 7; break;
		case MUT_SEQLEN_NEG: p.seqlens[1] = -1; break;
		case MUT_SEQLEN_BIG: p.seqlens[1] = p.args.max_pages * p.args.page_size + 1; break;
		case MUT_PAGE_NEG: p.block_table[p.args.max_pages] = -1; break;
		case MUT_PAGE_BIG: p.block_table[p.args.max_pages + 1] = p.args.num_pages; break;
		case MUT_LAST_PAGE_BIG: p.block_table[p.args.max_pages + 3] = p.args.num_pages + 9; break;
		case MUT_WS_SMALL: p.args.workspace_bytes = ws ? ws - 1 : 0; break;
		case MUT_WS_NULL: p.args.workspace = NULL; break;
		case MUT_CFG_BN0: cfg.block_n = 0; break;
		case MUT_CFG_BH0: cfg.block_h = 0; break;
		case MUT_CFG_SPLITS_NEG: cfg.num_splits = -1; break;
		case MUT_CFG_SPLITS_HUGE: cfg.num_splits = INT32_MAX; break;
		case MUT_CFG_NULL: cp = NULL; break;
		}
		rc = impl->launch(&p.args, cp);
		ck_assert_msg(rc == expected, "%s with %s: launch returned %d, expected %d", impls[k],
			      bad_args[_i].name, rc, expected);
		if (rc != MLA_OK) {
			ck_assert_msg(o.out[0] == 0xffff && o.out[p.out_elems - 1] == 0xffff,
				      "%s with %s: out written on error", impls[k], bad_args[_i].name);
			ck_assert_msg(mla_float_to_bits(o.lse[0]) == 0xffffffffu,
				      "%s with %s: lse written on error", impls[k], bad_args[_i].name);
		}
		p.args = keep;
		p.seqlens[1] = sl_keep;
		memcpy(&p.block_table[p.args.max_pages], bt_keep, sizeof(bt_keep));
		outputs_free(&o);
	}
	problem_release(&p);
}
END_TEST

/* A sentinel in the block_table entry right after the last needed page is never dereferenced:
 * shrink sequence 1 from 63 keys (4 pages) to 48 (3 pages) and poison its 4th entry. */
START_TEST(unneeded_block_table_entry_is_not_read)
{
	static const char *const impls[] = { "cpu.naive", "cpu.splitkv" };
	struct kcase c = grid[1];
	struct problem p;

	c.seqlens[1] = 48;
	problem_build(&p, &c);
	ck_assert_int_eq(p.block_table[p.args.max_pages + 3], VS_BLOCK_TABLE_SENTINEL);
	p.block_table[p.args.max_pages + 3] = -7; /* would be out of range if read */
	for (int k = 0; k < 2; k++) {
		const struct mla_decode_impl *impl = mla_decode_impl_find(impls[k]);
		struct mla_decode_config cfgs[32];
		int n = impl->configs("x86_64", cfgs, 32);

		for (int j = 0; j < n; j++)
			check_launch(&p, "sentinel-after-last-page", impl, &cfgs[j], NULL);
	}
	problem_release(&p);
}
END_TEST

/* batch 0 is a valid empty launch. */
START_TEST(empty_batch_is_ok)
{
	static const char *const impls[] = { "cpu.naive", "cpu.splitkv" };
	struct mla_decode_args a;
	struct mla_decode_config cfg = { "bn16-bh8-sp0-w0-st0", 16, 8, 0, 0, 0 };

	memset(&a, 0, sizeof(a));
	a.s_q = 1;
	a.h_q = 16;
	a.page_size = 64;
	a.kv_dtype = MLA_KV_BF16;
	a.softmax_scale = SOFTMAX_SCALE;
	for (int k = 0; k < 2; k++) {
		const struct mla_decode_impl *impl = mla_decode_impl_find(impls[k]);
		int rc = impl->launch(&a, &cfg);

		ck_assert_msg(rc == MLA_OK, "%s on batch 0 returned %d", impls[k], rc);
		ck_assert_uint_eq(impl->workspace_size(&a, &cfg), 0);
	}
}
END_TEST

/* ---- benchmark (VS_BENCH=1) ------------------------------------------------------------------ */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double bench_one(struct problem *p, const struct mla_decode_impl *impl,
			const struct mla_decode_config *cfg, int reps)
{
	struct outputs o;
	double best = INFINITY;

	outputs_alloc(&o, p, impl->workspace_size(&p->args, cfg));
	for (int r = 0; r < reps; r++) {
		double t0 = now_s(), t;

		ck_assert_int_eq(launch_into(p, impl, cfg, &o), MLA_OK);
		t = now_s() - t0;
		best = t < best ? t : best;
	}
	check_parity(p, &o, cfg->name);
	outputs_free(&o);
	return best;
}

START_TEST(bench)
{
	static const struct kcase c = {
		"bf16-b4-sq1-h16-ps64-4096", MLA_KV_BF16, 4, 1, 16, 64, { 4096, 4096, 4096, 4096 }, 0, 99, 0,
	};
	const struct mla_decode_impl *skv = mla_decode_impl_find("cpu.splitkv");
	struct mla_decode_config cfgs[32];
	struct problem p;
	int n = skv->configs("x86_64", cfgs, 32);
	double t_naive;

	problem_build(&p, &c);
	t_naive = bench_one(&p, mla_decode_impl_find("cpu.naive"), naive_config(), 3);
	printf("bench %s: cpu.naive %.2f ms\n", c.name, 1e3 * t_naive);
	for (int threads = 1; threads <= 2; threads++) {
		p.args.num_cus = threads;
		for (int k = 0; k < n; k++) {
			double t = bench_one(&p, skv, &cfgs[k], 5);

			printf("bench %s: cpu.splitkv %s num_cus %d: %.2f ms (%.1fx)\n", c.name, cfgs[k].name,
			       threads, 1e3 * t, t_naive / t);
		}
	}
	problem_release(&p);
}
END_TEST

/* ---- the sparse form (ABI 3) ---------------------------------------------------------------- */

/*
 * A sparse case. Caches of kv_dtype: page_size x num_pages (and the extra cache's); topk (and
 * extra_topk) entries a query row. tl / etl: topk_length / extra_topk_length per batch ({-1}: not
 * given). pad: per mille of the entries inside the lengths that are -1. sink: attn_sink given,
 * cycling over the heads through +inf, -inf and finite values. lonely: every entry of query row
 * (b 0, i s_q - 1) is -1 (main and extra). The last page of each cache is never named by a valid
 * entry (entries past topk_length point into it) and every row no valid entry names is NaN.
 */
struct scase {
	const char *name;
	int32_t kv_dtype, batch, s_q, h_q;
	int32_t page_size, num_pages, topk;
	int32_t extra_page_size, extra_num_pages, extra_topk;
	int32_t tl[3], etl[3];
	int pad, sink, lonely;
	uint64_t seed;
};

static const struct scase sgrid[] = {
	{ "bf16-b2-sq1-h16-ps64-topk64-pad", MLA_KV_BF16, 2, 1, 16, 64, 4, 64, 0, 0, 0, { -1 }, { -1 }, 200, 0, 0, 31 },
	{ "ds_mla-b2-sq2-h3-ps61-topk48-len0-and-topk", MLA_KV_FP8_DS_MLA, 2, 2, 3, 61, 3, 48, 0, 0, 0, { 0, 48 },
	  { -1 }, 250, 0, 0, 32 },
	{ "ds_mla_fnuz-b1-sq2-h16-ps69-topk40-sink-lonely", MLA_KV_FP8_DS_MLA_FNUZ, 1, 2, 16, 69, 2, 40, 0, 0, 0,
	  { -1 }, { -1 }, 100, 1, 1, 33 },
	{ "model1-b2-sq1-h16-ps64-topk32-extra24-ps61-lens-sink", MLA_KV_FP8_MODEL1, 2, 1, 16, 64, 2, 32, 61, 3, 24,
	  { 5, 32 }, { 24, 0 }, 150, 1, 0, 34 },
	{ "model1_fnuz-b2-sq2-h3-ps69-topk20-extra16-ps16-lonely", MLA_KV_FP8_MODEL1_FNUZ, 2, 2, 3, 69, 2, 20, 16, 4,
	  16, { -1 }, { 9, 16 }, 300, 0, 1, 35 },
	{ "bf16-b3-sq2-h8-ps1-topk24-extra8-ps61-sink-lonely", MLA_KV_BF16, 3, 2, 8, 1, 64, 24, 61, 2, 8,
	  { 24, 0, 7 }, { -1 }, 200, 1, 1, 36 },
	{ "ds_mla-b1-sq1-h16-ps64-topk64-all-pad-sink", MLA_KV_FP8_DS_MLA, 1, 1, 16, 64, 2, 64, 0, 0, 0, { -1 },
	  { -1 }, 1000, 1, 0, 37 },
	{ "model1-b1-sq2-h64-ps61-topk128-extra64-ps64", MLA_KV_FP8_MODEL1, 1, 2, 64, 61, 4, 128, 64, 2, 64, { 100 },
	  { 64 }, 100, 0, 0, 38 },
};
#define NSGRID ((int)(sizeof(sgrid) / sizeof(sgrid[0])))

/* One cache of a sparse problem: its bytes, and the value of every row as this test decodes it. */
struct scache {
	uint8_t *bytes;
	size_t nbytes;
	float *vals;    /* [rows][d_qk], NaN for a row no valid entry names */
	uint8_t *named; /* [rows] */
	int32_t page_size, num_pages;
};

struct sproblem {
	struct mla_decode_args args;
	uint16_t *q;
	size_t q_bytes;
	struct scache kv, extra;
	int32_t *indices, *extra_indices, *tl, *etl;
	float *sink;
	size_t out_elems, lse_elems;
	float *ref_out, *ref_lse;
	int out_dims[4], lse_dims[3];
};

/* The value of an e4m3 code, from the formats' definitions (bias 7 OCP e4m3fn, bias 8 fnuz). */
static float test_fp8(uint8_t c, int fnuz)
{
	int bias = fnuz ? 8 : 7, e = (c >> 3) & 15, m = c & 7;
	double v;

	if (fnuz ? c == 0x80 : (c & 0x7f) == 0x7f)
		return NAN;
	v = e ? ldexp(1.0 + m / 8.0, e - bias) : ldexp(m / 8.0, 1 - bias);
	return (float)(c & 0x80 ? -v : v);
}

static float test_bf16(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

static void put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/* A random code that is not NaN. */
static uint8_t test_code(uint64_t *s, int fnuz)
{
	for (;;) {
		uint8_t c = (uint8_t)gen_next(s);

		if (!isnan(test_fp8(c, fnuz)))
			return c;
	}
}

/* Write row r of cache c: random values when named, NaN everywhere (codes, scales, RoPE) when not. */
static void scache_put_row(struct scache *c, int32_t kv_dtype, int32_t r, uint64_t *s)
{
	int fnuz = mla_kv_is_fnuz(kv_dtype), d_qk = mla_kv_d_qk(kv_dtype);
	size_t pb = mla_kv_page_bytes(kv_dtype, c->page_size);
	uint8_t *page = c->bytes + (size_t)(r / c->page_size) * pb;
	int32_t slot = r % c->page_size;
	float *v = c->vals + (size_t)r * d_qk;
	uint8_t nan_code = fnuz ? 0x80 : 0x7f;

	if (kv_dtype == MLA_KV_BF16) {
		uint8_t *t = c->bytes + (size_t)r * MLA_D_QK * 2;

		for (int d = 0; d < MLA_D_QK; d++) {
			uint16_t h = c->named[r] ? mla_float_to_bf16(gen_value(s)) : BF16_NAN;

			put_u16(t + 2 * d, h);
			v[d] = c->named[r] ? test_bf16(h) : NAN;
		}
	} else if (!mla_kv_is_model1(kv_dtype)) { /* fp8_ds_mla: codes, 4 fp32 scales, RoPE */
		uint8_t *t = page + (size_t)slot * 656;

		for (int k = 0; k < 4; k++) {
			float sc = c->named[r] ? ldexpf(1.0f + (float)(gen_next(s) % 16) / 16.0f, -8 - (int)(gen_next(s) % 3))
					       : NAN;

			memcpy(t + 512 + 4 * k, &sc, 4); /* little-endian host */
			for (int d = 128 * k; d < 128 * k + 128; d++) {
				t[d] = c->named[r] ? test_code(s, fnuz) : nan_code;
				v[d] = c->named[r] ? test_fp8(t[d], fnuz) * sc : NAN;
			}
		}
		for (int d = 0; d < 64; d++) {
			uint16_t h = c->named[r] ? mla_float_to_bf16(gen_value(s)) : BF16_NAN;

			put_u16(t + 528 + 2 * d, h);
			v[512 + d] = c->named[r] ? test_bf16(h) : NAN;
		}
	} else { /* fp8_model1: codes and RoPE at slot * 576, 7 e8m0 scales at page_size * 576 + slot * 8 */
		uint8_t *t = page + (size_t)slot * 576, *sc = page + (size_t)c->page_size * 576 + (size_t)slot * 8;

		for (int k = 0; k < 7; k++) {
			sc[k] = c->named[r] ? (uint8_t)(127 - 6 - gen_next(s) % 4) : 0xff;
			for (int d = 64 * k; d < 64 * k + 64; d++) {
				t[d] = c->named[r] ? test_code(s, fnuz) : nan_code;
				v[d] = c->named[r] ? test_fp8(t[d], fnuz) * ldexpf(1.0f, sc[k] - 127) : NAN;
			}
		}
		sc[7] = 0;
		for (int d = 0; d < 64; d++) {
			uint16_t h = c->named[r] ? mla_float_to_bf16(gen_value(s)) : BF16_NAN;

			put_u16(t + 448 + 2 * d, h);
			v[448 + d] = c->named[r] ? test_bf16(h) : NAN;
		}
	}
	(void)d_qk;
}

/*
 * Entries of one index tensor [batch, s_q, k] into cache c: inside the length, -1 (pad per mille,
 * or the lonely row) or a row of the pages before the last; past it, a row of the last page.
 */
static void sparse_indices(int32_t *idx, struct scache *c, const struct scase *sc, int32_t k, const int32_t *len,
			   uint64_t *s)
{
	int32_t live = (c->num_pages - 1) * c->page_size;

	for (int32_t b = 0; b < sc->batch; b++)
		for (int32_t i = 0; i < sc->s_q; i++)
			for (int32_t t = 0; t < k; t++) {
				int32_t *e = idx + ((size_t)b * sc->s_q + i) * k + t;

				if (len && t >= len[b]) {
					*e = gen_next(s) % 4 ? live + (int32_t)(gen_next(s) % (uint64_t)c->page_size) : -1;
				} else if ((sc->lonely && b == 0 && i == sc->s_q - 1) ||
					   (int)(gen_next(s) % 1000) < sc->pad) {
					*e = -1;
				} else {
					*e = (int32_t)(gen_next(s) % (uint64_t)live);
					c->named[*e] = 1;
				}
			}
}

static void scache_alloc(struct scache *c, int32_t kv_dtype, int32_t page_size, int32_t num_pages)
{
	size_t rows = (size_t)page_size * num_pages;

	c->page_size = page_size;
	c->num_pages = num_pages;
	c->nbytes = mla_kv_page_bytes(kv_dtype, page_size) * num_pages;
	c->bytes = malloc(c->nbytes + 1);
	c->vals = malloc(rows * MLA_D_QK * sizeof(float) + 1);
	c->named = calloc(rows + 1, 1);
	ck_assert_ptr_nonnull(c->bytes);
	ck_assert_ptr_nonnull(c->vals);
	ck_assert_ptr_nonnull(c->named);
	memset(c->bytes, 0xff, c->nbytes); /* model1's page padding stays 0xff */
}

static void scache_fill(struct scache *c, int32_t kv_dtype, uint64_t *s)
{
	for (int32_t r = 0; r < c->page_size * c->num_pages; r++)
		scache_put_row(c, kv_dtype, r, s);
}

static void scache_release(struct scache *c)
{
	free(c->bytes);
	free(c->vals);
	free(c->named);
}

/* The in-test reference: every query row by brute force in double over its valid entries. */
static void sparse_reference(struct sproblem *p)
{
	const struct mla_decode_args *a = &p->args;
	int32_t total = a->topk + a->extra_topk;
	double *sc = malloc((size_t)total * sizeof(double));
	const float **rows = malloc((size_t)total * sizeof(*rows));

	ck_assert_ptr_nonnull(sc);
	ck_assert_ptr_nonnull(rows);
	for (int32_t b = 0; b < a->batch; b++)
		for (int32_t i = 0; i < a->s_q; i++) {
			int32_t n = 0;

			for (int32_t t = 0; t < a->topk; t++) {
				int32_t r = p->indices[((size_t)b * a->s_q + i) * a->topk + t];

				if (r != -1 && (!p->tl || t < p->tl[b]))
					rows[n++] = p->kv.vals + (size_t)r * a->d_qk;
			}
			for (int32_t t = 0; t < a->extra_topk; t++) {
				int32_t r = p->extra_indices[((size_t)b * a->s_q + i) * a->extra_topk + t];

				if (r != -1 && (!p->etl || t < p->etl[b]))
					rows[n++] = p->extra.vals + (size_t)r * a->d_qk;
			}
			for (int32_t h = 0; h < a->h_q; h++) {
				size_t qrow = ((size_t)b * a->s_q + i) * a->h_q + h;
				float *out = p->ref_out + qrow * MLA_D_V;
				float *lse = p->ref_lse + ((size_t)b * a->h_q + h) * a->s_q + i;
				double m = -INFINITY, sum = 0.0, l, f = 1.0;

				if (n == 0) {
					for (int d = 0; d < MLA_D_V; d++)
						out[d] = 0.0f;
					*lse = INFINITY;
					continue;
				}
				for (int32_t j = 0; j < n; j++) {
					double s = 0.0;

					for (int d = 0; d < a->d_qk; d++)
						s += (double)test_bf16(p->q[qrow * a->d_qk + d]) * rows[j][d];
					sc[j] = s * a->softmax_scale;
					m = sc[j] > m ? sc[j] : m;
				}
				for (int32_t j = 0; j < n; j++)
					sum += exp(sc[j] - m);
				l = m + log(sum);
				if (p->sink)
					f = 1.0 / (1.0 + exp((double)p->sink[h] - l));
				for (int d = 0; d < MLA_D_V; d++) {
					double o = 0.0;

					for (int32_t j = 0; j < n; j++)
						o += exp(sc[j] - l) * rows[j][d];
					out[d] = (float)(o * f);
				}
				*lse = (float)l;
			}
		}
	free(sc);
	free(rows);
}

static int32_t *lengths(const int32_t *v, int32_t batch)
{
	int32_t *l;

	if (v[0] < 0)
		return NULL;
	l = malloc((size_t)batch * sizeof(int32_t) + 1);
	ck_assert_ptr_nonnull(l);
	for (int32_t b = 0; b < batch; b++)
		l[b] = v[b];
	return l;
}

static void sproblem_build(struct sproblem *p, const struct scase *c)
{
	static const float sinks[] = { INFINITY, -INFINITY, 0.5f, -1.0f, 3.0f, 1.25f };
	struct mla_decode_args *a = &p->args;
	uint64_t s = c->seed;
	int32_t d_qk = mla_kv_d_qk(c->kv_dtype);

	memset(p, 0, sizeof(*p));
	a->batch = c->batch;
	a->s_q = c->s_q;
	a->h_q = c->h_q;
	a->page_size = c->page_size;
	a->num_pages = c->num_pages;
	a->kv_dtype = c->kv_dtype;
	a->softmax_scale = SOFTMAX_SCALE;
	a->kv_scale = 1.0f;
	a->num_cus = 2;
	a->topk = c->topk;
	a->extra_topk = c->extra_topk;
	a->extra_page_size = c->extra_topk ? c->extra_page_size : 0;
	a->extra_num_pages = c->extra_topk ? c->extra_num_pages : 0;
	a->d_qk = d_qk;
	a->d_v = MLA_D_V;

	p->q_bytes = (size_t)c->batch * c->s_q * c->h_q * d_qk * 2;
	p->q = malloc(p->q_bytes + 1);
	ck_assert_ptr_nonnull(p->q);
	for (size_t k = 0; k < p->q_bytes / 2; k++)
		p->q[k] = mla_float_to_bf16(gen_value(&s) * 4.0f);
	p->tl = lengths(c->tl, c->batch);
	p->indices = malloc((size_t)c->batch * c->s_q * c->topk * sizeof(int32_t) + 1);
	ck_assert_ptr_nonnull(p->indices);
	scache_alloc(&p->kv, c->kv_dtype, c->page_size, c->num_pages);
	sparse_indices(p->indices, &p->kv, c, c->topk, p->tl, &s);
	scache_fill(&p->kv, c->kv_dtype, &s);
	if (c->extra_topk) {
		p->etl = lengths(c->etl, c->batch);
		p->extra_indices = malloc((size_t)c->batch * c->s_q * c->extra_topk * sizeof(int32_t) + 1);
		ck_assert_ptr_nonnull(p->extra_indices);
		scache_alloc(&p->extra, c->kv_dtype, c->extra_page_size, c->extra_num_pages);
		sparse_indices(p->extra_indices, &p->extra, c, c->extra_topk, p->etl, &s);
		scache_fill(&p->extra, c->kv_dtype, &s);
	}
	if (c->sink) {
		p->sink = malloc((size_t)c->h_q * sizeof(float));
		ck_assert_ptr_nonnull(p->sink);
		for (int32_t h = 0; h < c->h_q; h++)
			p->sink[h] = sinks[h % 6];
	}
	a->q = p->q;
	a->kv_cache = p->kv.bytes;
	a->indices = p->indices;
	a->topk_length = p->tl;
	a->attn_sink = p->sink;
	a->extra_kv_cache = c->extra_topk ? p->extra.bytes : NULL;
	a->extra_indices = p->extra_indices;
	a->extra_topk_length = p->etl;

	p->out_elems = (size_t)c->batch * c->s_q * c->h_q * MLA_D_V;
	p->lse_elems = (size_t)c->batch * c->h_q * c->s_q;
	p->out_dims[0] = c->batch;
	p->out_dims[1] = c->s_q;
	p->out_dims[2] = c->h_q;
	p->out_dims[3] = MLA_D_V;
	p->lse_dims[0] = c->batch;
	p->lse_dims[1] = c->h_q;
	p->lse_dims[2] = c->s_q;
	p->ref_out = malloc((p->out_elems + 1) * sizeof(float));
	p->ref_lse = malloc((p->lse_elems + 1) * sizeof(float));
	ck_assert_ptr_nonnull(p->ref_out);
	ck_assert_ptr_nonnull(p->ref_lse);
	sparse_reference(p);
	/* No NaN reaches the reference: a NaN row read by mistake cannot pass as "NaN equals NaN". */
	for (size_t k = 0; k < p->out_elems; k++)
		ck_assert_msg(isfinite(p->ref_out[k]), "%s: reference out[%zu] is %g", c->name, k, p->ref_out[k]);
	for (size_t k = 0; k < p->lse_elems; k++)
		ck_assert_msg(!isnan(p->ref_lse[k]) && p->ref_lse[k] != -INFINITY, "%s: reference lse[%zu] is %g",
			      c->name, k, p->ref_lse[k]);
}

static void sproblem_release(struct sproblem *p)
{
	free(p->q);
	scache_release(&p->kv);
	scache_release(&p->extra);
	free(p->indices);
	free(p->extra_indices);
	free(p->tl);
	free(p->etl);
	free(p->sink);
	free(p->ref_out);
	free(p->ref_lse);
	memset(p, 0, sizeof(*p));
}

/* Inputs of a sparse problem, for "unchanged" checks: every byte any launch may read. */
static uint64_t sproblem_hash(const struct sproblem *p)
{
	uint64_t h = 1469598103934665603ull;
	const struct {
		const void *ptr;
		size_t n;
	} parts[] = {
		{ p->q, p->q_bytes },
		{ p->kv.bytes, p->kv.nbytes },
		{ p->extra.bytes, p->extra.nbytes },
		{ p->indices, (size_t)p->args.batch * p->args.s_q * p->args.topk * 4 },
		{ p->extra_indices, (size_t)p->args.batch * p->args.s_q * p->args.extra_topk * 4 },
		{ p->tl, p->tl ? (size_t)p->args.batch * 4 : 0 },
		{ p->etl, p->etl ? (size_t)p->args.batch * 4 : 0 },
		{ p->sink, p->sink ? (size_t)p->args.h_q * 4 : 0 },
	};

	for (size_t k = 0; k < sizeof(parts) / sizeof(parts[0]); k++)
		for (size_t j = 0; j < parts[k].n; j++)
			h = (h ^ ((const uint8_t *)parts[k].ptr)[j]) * 1099511628211ull;
	return h;
}

/* out/lse buffers as struct outputs, sized for a sparse problem. */
static void soutputs_alloc(struct outputs *o, const struct sproblem *p, size_t ws_bytes)
{
	struct problem shape;

	memset(&shape, 0, sizeof(shape));
	shape.out_elems = p->out_elems;
	shape.lse_elems = p->lse_elems;
	outputs_alloc(o, &shape, ws_bytes);
}

static int slaunch(struct sproblem *p, const struct mla_decode_impl *impl, const struct mla_decode_config *cfg,
		   struct outputs *o)
{
	p->args.out = o->out;
	p->args.lse = o->lse;
	p->args.workspace = o->ws_bytes ? o->ws : NULL;
	p->args.workspace_bytes = o->ws_bytes;
	return impl->launch(&p->args, cfg);
}

static void scheck_parity(const struct sproblem *p, const struct outputs *o, const char *ctx)
{
	static const char *const out_names[] = { "b", "s", "h", "d" };
	static const char *const lse_names[] = { "b", "h", "s" };
	struct parity_report r;
	char line[512];

	parity_compare_bf16(&r, o->out, p->ref_out, p->out_elems, &tol_out, p->out_dims, 4);
	parity_describe(line, sizeof(line), "out", &r, out_names, 4);
	ck_assert_msg(r.pass, "%s: %s", ctx, line);
	parity_compare_f32(&r, o->lse, p->ref_lse, p->lse_elems, &tol_lse, p->lse_dims, 3);
	parity_describe(line, sizeof(line), "lse", &r, lse_names, 3);
	ck_assert_msg(r.pass, "%s: %s", ctx, line);
	ck_assert_msg(guard_intact(o->out + p->out_elems, GUARD * sizeof(uint16_t)), "%s: wrote past out", ctx);
	ck_assert_msg(guard_intact(o->lse + p->lse_elems, GUARD * sizeof(float)), "%s: wrote past lse", ctx);
	ck_assert_msg(guard_intact(o->ws + o->ws_bytes, GUARD), "%s: wrote past the workspace", ctx);
}

/*
 * naive and x agree within float accumulation: non-finite classes equal, out within one bf16
 * rounding step (at most 2^-7 relative) plus 1e-6, lse within 1e-5 + 1e-6 relative.
 */
static void scheck_close(const struct sproblem *p, const struct outputs *naive, const struct outputs *x,
			 const char *ctx)
{
	for (size_t k = 0; k < p->out_elems; k++) {
		double u = test_bf16(naive->out[k]), v = test_bf16(x->out[k]);

		ck_assert_msg(isfinite(u) == isfinite(v) && (!isfinite(u) || fabs(u - v) <= ldexp(fmax(fabs(u), fabs(v)), -7) + 1e-6),
			      "%s: out[%zu] is %.9g in cpu.naive, %.9g here", ctx, k, u, v);
	}
	for (size_t k = 0; k < p->lse_elems; k++) {
		double u = naive->lse[k], v = x->lse[k];

		ck_assert_msg((isinf(u) && u == v) || (isfinite(u) && fabs(u - v) <= 1e-5 + 1e-6 * fabs(u)),
			      "%s: lse[%zu] is %.9g in cpu.naive, %.9g here", ctx, k, u, v);
	}
}

START_TEST(sparse_naive_and_every_splitkv_config_match_the_reference)
{
	const struct scase *c = &sgrid[_i];
	const struct mla_decode_impl *naive = mla_decode_impl_find("cpu.naive");
	const struct mla_decode_impl *skv = mla_decode_impl_find("cpu.splitkv");
	struct mla_decode_config cfgs[64];
	struct sproblem p;
	struct outputs on, o1, o2;
	char ctx[200], why[160];
	uint64_t h0;
	int n;

	sproblem_build(&p, c);
	h0 = sproblem_hash(&p);
	ck_assert_msg(naive->supports(&p.args, why, sizeof(why)) == 1, "%s: cpu.naive refuses: %s", c->name, why);
	ck_assert_msg(skv->supports(&p.args, why, sizeof(why)) == 1, "%s: cpu.splitkv refuses: %s", c->name, why);
	soutputs_alloc(&on, &p, 0);
	snprintf(ctx, sizeof(ctx), "case %s, cpu.naive", c->name);
	ck_assert_int_eq(slaunch(&p, naive, naive_config(), &on), MLA_OK);
	scheck_parity(&p, &on, ctx);
	n = skv->configs("x86_64", cfgs, 64);
	ck_assert_int_gt(n, 0);
	for (int k = 0; k < n; k++) {
		size_t ws = skv->workspace_size(&p.args, &cfgs[k]);

		snprintf(ctx, sizeof(ctx), "case %s, cpu.splitkv config %.47s", c->name, cfgs[k].name);
		ck_assert_msg(ws > 0, "%s: no workspace", ctx);
		soutputs_alloc(&o1, &p, ws);
		soutputs_alloc(&o2, &p, ws);
		ck_assert_msg(slaunch(&p, skv, &cfgs[k], &o1) == MLA_OK, "%s: launch failed", ctx);
		scheck_parity(&p, &o1, ctx);
		scheck_close(&p, &on, &o1, ctx);
		ck_assert_msg(slaunch(&p, skv, &cfgs[k], &o2) == MLA_OK, "%s: second launch failed", ctx);
		ck_assert_msg(!memcmp(o1.out, o2.out, p.out_elems * 2) && !memcmp(o1.lse, o2.lse, p.lse_elems * 4),
			      "%s: two launches differ", ctx);
		outputs_free(&o1);
		outputs_free(&o2);
	}
	ck_assert_msg(sproblem_hash(&p) == h0, "case %s: an input was modified", c->name);
	outputs_free(&on);
	sproblem_release(&p);
}
END_TEST

/* The lonely rows and the sink: out exactly 0 and lse +inf where no entry is valid; a +inf sink zeroes out. */
START_TEST(sparse_lonely_rows_and_sink_edges)
{
	const struct mla_decode_impl *impls[] = { mla_decode_impl_find("cpu.naive"), mla_decode_impl_find("cpu.splitkv") };
	struct mla_decode_config cfg = { "", 16, 8, 4, 0, 0 };
	struct sproblem p;

	sproblem_build(&p, &sgrid[2]); /* lonely row (0, 1), sink +inf on head 0, -inf on head 1 */
	mla_decode_config_name(&cfg);
	for (int k = 0; k < 2; k++) {
		const struct mla_decode_config *c = k ? &cfg : naive_config();
		struct outputs o;

		soutputs_alloc(&o, &p, impls[k]->workspace_size(&p.args, c));
		ck_assert_int_eq(slaunch(&p, impls[k], c, &o), MLA_OK);
		for (int32_t h = 0; h < p.args.h_q; h++) {
			size_t lonely = ((size_t)0 * p.args.s_q + 1) * p.args.h_q + h;
			size_t seen = ((size_t)0 * p.args.s_q + 0) * p.args.h_q + h;

			ck_assert_msg(isinf(o.lse[h * p.args.s_q + 1]) && o.lse[h * p.args.s_q + 1] > 0,
				      "%s: lonely row, head %d: lse %g, not +inf", impls[k]->name, h,
				      o.lse[h * p.args.s_q + 1]);
			for (int d = 0; d < MLA_D_V; d++)
				ck_assert_msg(o.out[lonely * MLA_D_V + d] == 0, "%s: lonely row, head %d, d %d: 0x%04x",
					      impls[k]->name, h, d, o.out[lonely * MLA_D_V + d]);
			ck_assert_msg(isfinite(o.lse[h * p.args.s_q]), "%s: head %d: lse %g", impls[k]->name, h,
				      o.lse[h * p.args.s_q]);
			if (h % 6 == 0) /* sink +inf: out *= 0 */
				for (int d = 0; d < MLA_D_V; d++)
					ck_assert_msg((o.out[seen * MLA_D_V + d] & 0x7fff) == 0,
						      "%s: sink +inf, head %d, d %d: 0x%04x", impls[k]->name, h, d,
						      o.out[seen * MLA_D_V + d]);
		}
		outputs_free(&o);
	}
	sproblem_release(&p);
}
END_TEST

START_TEST(sparse_splitkv_thread_count_keeps_bits)
{
	static const struct mla_decode_config base[] = {
		{ "", 16, 8, 1, 0, 0 }, { "", 64, 16, 4, 0, 0 }, { "", 16, 16, 64, 0, 0 },
	};
	const struct mla_decode_impl *impl = mla_decode_impl_find("cpu.splitkv");
	struct sproblem p;

	sproblem_build(&p, &sgrid[_i]);
	for (size_t k = 0; k < sizeof(base) / sizeof(base[0]); k++) {
		struct mla_decode_config cfg = base[k];
		struct outputs ref, o;
		size_t ws;

		cfg.num_warps = 1;
		mla_decode_config_name(&cfg);
		ws = impl->workspace_size(&p.args, &cfg);
		soutputs_alloc(&ref, &p, ws);
		ck_assert_int_eq(slaunch(&p, impl, &cfg, &ref), MLA_OK);
		for (int t = 2; t <= 5; t += 3) {
			cfg.num_warps = t;
			soutputs_alloc(&o, &p, ws);
			ck_assert_int_eq(slaunch(&p, impl, &cfg, &o), MLA_OK);
			ck_assert_msg(!memcmp(ref.out, o.out, p.out_elems * 2) && !memcmp(ref.lse, o.lse, p.lse_elems * 4),
				      "case %s, config %s, %d threads: bits differ from 1 thread", sgrid[_i].name,
				      cfg.name, t);
			outputs_free(&o);
		}
		outputs_free(&ref);
	}
	sproblem_release(&p);
}
END_TEST

/* Sparse arguments out of contract: MLA_EINVAL from both, before anything is written. */
enum smutation {
	SMUT_INDEX_NEG2,
	SMUT_INDEX_BIG,
	SMUT_EXTRA_INDEX_BIG,
	SMUT_TL_NEG,
	SMUT_TL_BIG,
	SMUT_NULL_INDICES,
	SMUT_NULL_EXTRA_INDICES,
	SMUT_NULL_KV,
	SMUT_DQK,
	SMUT_DV,
	SMUT_DTYPE_FNUZ,
	SMUT_EXTRA_PS0,
};

static const struct {
	const char *name;
	enum smutation mut;
} sbad[] = {
	{ "index -2", SMUT_INDEX_NEG2 },
	{ "index num_pages * page_size", SMUT_INDEX_BIG },
	{ "extra index past the extra cache", SMUT_EXTRA_INDEX_BIG },
	{ "topk_length -1", SMUT_TL_NEG },
	{ "topk_length topk + 1", SMUT_TL_BIG },
	{ "null indices", SMUT_NULL_INDICES },
	{ "null extra_indices", SMUT_NULL_EXTRA_INDICES },
	{ "null kv_cache", SMUT_NULL_KV },
	{ "d_qk 576 for fp8_model1", SMUT_DQK },
	{ "d_v 448", SMUT_DV },
	{ "kv_dtype fp8_e4m3_fnuz in the sparse form", SMUT_DTYPE_FNUZ },
	{ "extra_page_size 0", SMUT_EXTRA_PS0 },
};

START_TEST(sparse_bad_arguments_are_refused_before_writing)
{
	static const char *const impls[] = { "cpu.naive", "cpu.splitkv" };
	struct sproblem p;

	sproblem_build(&p, &sgrid[3]); /* fp8_model1, topk_length {5, 32}, extra cache */
	for (int k = 0; k < 2; k++) {
		const struct mla_decode_impl *impl = mla_decode_impl_find(impls[k]);
		struct mla_decode_config cfg = { "", 16, 8, 4, 0, 0 };
		struct mla_decode_args keep = p.args;
		int32_t idx0 = p.indices[0], eidx0 = p.extra_indices[0], tl0 = p.tl[1];
		struct outputs o;
		int rc;

		mla_decode_config_name(&cfg);
		soutputs_alloc(&o, &p, impl->workspace_size(&p.args, &cfg));
		switch (sbad[_i].mut) {
		case SMUT_INDEX_NEG2: p.indices[0] = -2; break;
		case SMUT_INDEX_BIG: p.indices[0] = p.args.num_pages * p.args.page_size; break;
		case SMUT_EXTRA_INDEX_BIG: p.extra_indices[0] = p.args.extra_num_pages * p.args.extra_page_size; break;
		case SMUT_TL_NEG: p.tl[1] = -1; break;
		case SMUT_TL_BIG: p.tl[1] = p.args.topk + 1; break;
		case SMUT_NULL_INDICES: p.args.indices = NULL; break;
		case SMUT_NULL_EXTRA_INDICES: p.args.extra_indices = NULL; break;
		case SMUT_NULL_KV: p.args.kv_cache = NULL; break;
		case SMUT_DQK: p.args.d_qk = MLA_D_QK; break;
		case SMUT_DV: p.args.d_v = 448; break;
		case SMUT_DTYPE_FNUZ: p.args.kv_dtype = MLA_KV_FP8_E4M3_FNUZ; break;
		case SMUT_EXTRA_PS0: p.args.extra_page_size = 0; break;
		}
		rc = slaunch(&p, impl, k ? &cfg : naive_config(), &o);
		ck_assert_msg(rc == MLA_EINVAL, "%s, %s: launch returned %d, not MLA_EINVAL", impls[k], sbad[_i].name, rc);
		for (size_t j = 0; j < p.out_elems; j++)
			ck_assert_msg(o.out[j] == 0xffff, "%s, %s: out[%zu] written", impls[k], sbad[_i].name, j);
		for (size_t j = 0; j < p.lse_elems * sizeof(float); j++)
			ck_assert_msg(((uint8_t *)o.lse)[j] == 0xff, "%s, %s: lse written", impls[k], sbad[_i].name);
		p.indices[0] = idx0;
		p.extra_indices[0] = eidx0;
		p.tl[1] = tl0;
		keep.out = p.args.out;
		keep.lse = p.args.lse;
		keep.workspace = p.args.workspace;
		keep.workspace_bytes = p.args.workspace_bytes;
		p.args = keep;
		outputs_free(&o);
	}
	sproblem_release(&p);
}
END_TEST

/* supports(): what the CPU implementations run, and the reasons of those that refuse. */
START_TEST(supports_says_which_forms_and_formats_run)
{
	static const struct {
		int32_t kv_dtype, topk, d_qk;
		const char *impl;
		int ok;
		const char *why;
	} rows[] = {
		{ MLA_KV_BF16, 0, 576, "cpu.naive", 1, "" },
		{ MLA_KV_FP8_E4M3_FNUZ, 0, 576, "cpu.splitkv", 1, "" },
		{ MLA_KV_FP8_DS_MLA, 0, 576, "cpu.naive", 0, "kv dtype fp8_ds_mla: the dense form reads bf16 or fp8_e4m3_fnuz only" },
		{ MLA_KV_FP8_E4M3_FNUZ, 64, 576, "cpu.splitkv", 0,
		  "kv dtype fp8_e4m3_fnuz: the sparse form reads bf16, fp8_ds_mla(_fnuz) or fp8_model1(_fnuz)" },
		{ MLA_KV_FP8_MODEL1_FNUZ, 64, 576, "cpu.naive", 0,
		  "d_qk 576, d_v 512: rows of fp8_model1_fnuz have d_qk 512 and d_v 512" },
		{ MLA_KV_FP8_MODEL1_FNUZ, 64, 512, "cpu.splitkv", 1, "" },
		{ MLA_KV_FP8_DS_MLA_FNUZ, 2048, 576, "cpu.naive", 1, "" },
		{ MLA_KV_BF16, 64, 576, "hip.baseline", 0, "sparse form: hip.baseline runs the dense form only" },
		{ MLA_KV_FP8_DS_MLA, 64, 576, "hip.flash", 1, "" },
		{ MLA_KV_FP8_MODEL1_FNUZ, 64, 512, "hip.flash", 1, "" },
		{ MLA_KV_BF16, 2048, 576, "hip.flash", 1, "" },
		{ MLA_KV_FP8_E4M3_FNUZ, 64, 576, "hip.flash", 0,
		  "kv dtype fp8_e4m3_fnuz: the sparse form reads bf16, fp8_ds_mla(_fnuz) or fp8_model1(_fnuz)" },
		{ MLA_KV_FP8_MODEL1, 64, 576, "hip.flash", 0, "d_qk 576, d_v 512: rows of fp8_model1 have d_qk 512 and d_v 512" },
		{ MLA_KV_FP8_MODEL1, 0, 576, "hip.flash", 0, "kv dtype fp8_model1: the dense form reads bf16 or fp8_e4m3_fnuz only" },
		{ MLA_KV_BF16, 0, 576, "hip.flash", 1, "" },
	};
	const struct mla_decode_impl *impl = mla_decode_impl_find(rows[_i].impl);
	struct mla_decode_args a = { .batch = 2, .s_q = 1, .h_q = 16, .num_pages = 8, .page_size = 64,
				     .kv_dtype = rows[_i].kv_dtype, .softmax_scale = 0.1f, .kv_scale = 1.0f,
				     .num_cus = 2, .topk = rows[_i].topk, .d_qk = rows[_i].d_qk, .d_v = MLA_D_V };
	char why[160] = "";

	ck_assert_ptr_nonnull(impl);
	ck_assert_ptr_nonnull(impl->supports);
	ck_assert_msg(impl->supports(&a, why, sizeof(why)) == rows[_i].ok, "%s, kv_dtype %d, topk %d: %s",
		      rows[_i].impl, rows[_i].kv_dtype, rows[_i].topk, why);
	if (!rows[_i].ok)
		ck_assert_str_eq(why, rows[_i].why);
}
END_TEST

static Suite *cpu_kernels_suite(void)
{
	Suite *s = suite_create("cpu_kernels");
	TCase *tc = tcase_create("grid");

	tcase_add_loop_test(tc, naive_matches_oracle, 0, NGRID);
	tcase_add_loop_test(tc, splitkv_every_config_matches_oracle, 0, NGRID);
	tcase_add_loop_test(tc, splitkv_thread_count_keeps_bits, 0, NGRID);
	suite_add_tcase(s, tc);

	tc = tcase_create("contract");
	tcase_add_loop_test(tc, configs_by_arch, 0, 10);
	tcase_add_test(tc, splitkv_config_space_covers_the_grid);
	tcase_add_test(tc, splitkv_workspace_from_shapes_only);
	tcase_add_loop_test(tc, bad_arguments_are_refused_before_writing, 0,
			    (int)(sizeof(bad_args) / sizeof(bad_args[0])));
	tcase_add_test(tc, unneeded_block_table_entry_is_not_read);
	tcase_add_test(tc, empty_batch_is_ok);
	suite_add_tcase(s, tc);

	tc = tcase_create("sparse");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, sparse_naive_and_every_splitkv_config_match_the_reference, 0, NSGRID);
	tcase_add_test(tc, sparse_lonely_rows_and_sink_edges);
	tcase_add_loop_test(tc, sparse_splitkv_thread_count_keeps_bits, 0, NSGRID);
	tcase_add_loop_test(tc, sparse_bad_arguments_are_refused_before_writing, 0,
			    (int)(sizeof(sbad) / sizeof(sbad[0])));
	tcase_add_loop_test(tc, supports_says_which_forms_and_formats_run, 0, 15);
	suite_add_tcase(s, tc);

	if (getenv("VS_BENCH")) {
		tc = tcase_create("bench");
		tcase_set_timeout(tc, 600);
		tcase_add_test(tc, bench);
		suite_add_tcase(s, tc);
	}
	return s;
}

int main(void)
{
	return tu_run_suite(cpu_kernels_suite());
}
