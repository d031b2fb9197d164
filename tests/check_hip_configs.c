/*
 * check_hip_configs.c - the CPU-side contract of hip.baseline and hip.flash (kernels/hip): config
 * spaces per arch (non-empty, unique canonical names, shared memory within the arch's limit by
 * hip_impls.c's formula: 64 KiB of LDS on gfx942, 227 KiB on sm_90), unknown arches refused,
 * workspace monotone in the split count, the flash plan, the exactness of the fp8 fnuz -> bf16 bit
 * trick the NVIDIA kernels use, and launch without a GPU build (MLA_ENODEVICE).
 */
#include "testutil.h"

#include "mla_decode.h"
#include "mla_numeric.h"
#include "hip/hip_flash.h"
#include "hip/sparse_decode.h"
#include "hip/hip_impls.h"
#include "vs_build_info.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CAP 64

static const char *const arches[] = { "sm_90", "gfx942" };
static const char *const impl_names[] = { "hip.baseline", "hip.flash" };

/* A small decode shape for plans and workspace sizes. */
static struct mla_decode_args shape(int batch, int h_q, int s_q, int seqlen)
{
	struct mla_decode_args a;

	memset(&a, 0, sizeof(a));
	a.batch = batch;
	a.s_q = s_q;
	a.h_q = h_q;
	a.page_size = 64;
	a.max_pages = (seqlen + 63) / 64;
	a.num_pages = a.max_pages * batch;
	a.kv_dtype = MLA_KV_BF16;
	a.softmax_scale = 0.1352f;
	a.kv_scale = 1.f;
	a.num_cus = 132;
	return a;
}

START_TEST(config_space_is_nonempty_with_unique_canonical_names)
{
	const struct mla_decode_impl *impl = mla_decode_impl_find(impl_names[_i / 2]);
	const char *arch = arches[_i % 2];
	struct mla_decode_config cfg[CAP];
	int n;

	ck_assert_ptr_nonnull(impl);
	n = impl->configs(arch, cfg, CAP);
	ck_assert_msg(n >= 1 && n <= CAP, "%s on %s: %d configs", impl->name, arch, n);
	for (int i = 0; i < n; i++) {
		struct mla_decode_config c = cfg[i];

		mla_decode_config_name(&c);
		/* the decoded-tile twin: the canonical name of its four numbers and splits, then "-dt" */
		if (!strcmp(impl->name, "hip.flash") && mla_flash_entry_find(&cfg[i])->kind == MLA_FLASH_WARP_DT)
			strcat(c.name, MLA_FLASH_DT_SUFFIX);
		/* the sparse form's configs: the same, then "-dsa" */
		if (!strcmp(impl->name, "hip.flash") && mla_flash_entry_find(&cfg[i])->kind == MLA_FLASH_SPARSE)
			strcat(c.name, MLA_FLASH_SPARSE_SUFFIX);
		ck_assert_msg(!strcmp(c.name, cfg[i].name), "%s on %s: config %d named '%s', canonical '%s'",
			      impl->name, arch, i, cfg[i].name, c.name);
		for (int j = 0; j < i; j++)
			ck_assert_msg(strcmp(cfg[i].name, cfg[j].name), "%s on %s: '%s' twice", impl->name, arch,
				      cfg[i].name);
	}
}
END_TEST

START_TEST(configs_respect_cap)
{
	const struct mla_decode_impl *impl = mla_decode_impl_find("hip.flash");
	struct mla_decode_config cfg[2];
	int n;

	memset(cfg, 0x5a, sizeof(cfg));
	n = impl->configs(arches[_i], cfg, 1);
	ck_assert_int_gt(n, 1);
	ck_assert_int_eq(((unsigned char *)&cfg[1])[0], 0x5a); /* nothing written past cap */
}
END_TEST

START_TEST(unknown_arch_is_unsupported)
{
	static const char *const unknown[] = { "sm_80", "sm_100", "gfx90a", "gfx950", "x86_64", "", "sm_9" };
	struct mla_decode_config cfg[CAP];

	for (size_t i = 0; i < sizeof(unknown) / sizeof(unknown[0]); i++)
		for (int k = 0; k < 2; k++) {
			const struct mla_decode_impl *impl = mla_decode_impl_find(impl_names[k]);

			ck_assert_msg(impl->configs(unknown[i], cfg, CAP) == MLA_EUNSUPPORTED, "%s on '%s': %d",
				      impl->name, unknown[i], impl->configs(unknown[i], cfg, CAP));
		}
}
END_TEST

START_TEST(gfx942_configs_fit_lds_and_differ_from_sm90)
{
	const struct mla_decode_impl *impl = mla_decode_impl_find("hip.flash");
	struct mla_decode_config g[CAP], s[CAP];
	int ng = impl->configs("gfx942", g, CAP), ns = impl->configs("sm_90", s, CAP);

	for (int i = 0; i < ng; i++) {
		const struct mla_flash_entry *e = mla_flash_entry_find(&g[i]);

		ck_assert_ptr_nonnull(e);
		ck_assert_int_eq(e->amd, 1);
		for (int dt = MLA_KV_BF16; dt <= MLA_KV_FP8_E4M3_FNUZ; dt++)
			ck_assert_msg(mla_flash_smem_bytes(e, dt) <= MLA_LDS_MAX_GFX942, "gfx942 %s (%s): %zu bytes of LDS",
				      g[i].name, mla_kv_dtype_name(dt), mla_flash_smem_bytes(e, dt));
		/* wave64: each 16-row group of BLOCK_H has whole waves, and 16 keys per wave for S */
		ck_assert_int_eq(g[i].block_h % 16, 0);
		ck_assert_int_eq(g[i].num_warps % (g[i].block_h / 16), 0);
		ck_assert_int_ge(g[i].block_n / MLA_FLASH_CG(g[i].block_h, g[i].num_warps), 16);
		for (int j = 0; j < ns; j++)
			ck_assert_msg(strcmp(g[i].name, s[j].name), "gfx942 and sm_90 share '%s'", g[i].name);
	}
	for (int j = 0; j < ns; j++) {
		const struct mla_flash_entry *e = mla_flash_entry_find(&s[j]);

		ck_assert_ptr_nonnull(e);
		ck_assert_int_eq(e->amd, 0);
		for (int dt = MLA_KV_BF16; dt <= MLA_KV_FP8_E4M3_FNUZ; dt++)
			ck_assert_msg(mla_flash_smem_bytes(e, dt) <= MLA_SMEM_MAX_SM90, "sm_90 %s: %zu bytes",
				      s[j].name, mla_flash_smem_bytes(e, dt));
	}
	/* The example from docs/DESIGN.md: one 64-row bf16 tile of 576 alone is 72 KiB. */
	ck_assert_int_gt(64 * 576 * 2, MLA_LDS_MAX_GFX942);
}
END_TEST

START_TEST(workspace_is_monotone_in_splits)
{
	const struct mla_decode_impl *impl = mla_decode_impl_find("hip.flash");
	const char *arch = arches[_i];
	struct mla_decode_config cfg[CAP];
	int n = impl->configs(arch, cfg, CAP);

	for (int i = 0; i < n; i++) {
		const struct mla_flash_entry *e = mla_flash_entry_find(&cfg[i]);
		struct mla_decode_args a = shape(3, 20, 2, 1000);
		size_t prev = 0;

		if (e && e->kind == MLA_FLASH_ONETILE)
			continue; /* no split at all (flash_onetile_takes_block_tables_of_one_tile) */
		if (e && e->kind == MLA_FLASH_WARP_DT)
			a.kv_dtype = MLA_KV_FP8_E4M3_FNUZ; /* fp8 only */
		if (e && e->kind == MLA_FLASH_SPARSE) { /* sparse only: 3 x 2 query rows of 20 heads, 2 x 1000 entries */
			a.block_table = NULL;
			a.max_pages = 0;
			a.kv_dtype = MLA_KV_FP8_DS_MLA;
			a.topk = 1000;
			a.extra_topk = 1000;
			a.extra_page_size = 64;
			a.extra_num_pages = 4;
			a.d_qk = MLA_D_QK;
			a.d_v = MLA_D_V;
		}
		for (int sp = 1; sp <= 200; sp++) {
			struct mla_decode_config c = cfg[i];
			size_t ws;

			c.num_splits = sp;
			ws = impl->workspace_size(&a, &c);
			if (sp == 1)
				ck_assert_msg(ws == 0, "%s: one split needs no workspace (%zu)", c.name, ws);
			ck_assert_msg(ws >= prev, "%s: workspace %zu at %d splits < %zu at %d", c.name, ws, sp, prev,
				      sp - 1);
			/* at least the partial O and lse of every (batch, split, row) */
			if (sp > 1)
				ck_assert_uint_ge(ws, (size_t)3 * sp * 40 * (512 + 1) * 4);
			prev = ws;
		}
	}
}
END_TEST

START_TEST(flash_plan_picks_splits_from_shapes)
{
	struct mla_decode_config c = { "", 64, 16, 0, 4, 2 };
	struct mla_flash_plan p;
	struct mla_decode_args small = shape(1, 16, 1, 32768), big = shape(128, 16, 1, 32768);

	/* one sequence, one head block: split across the machine */
	ck_assert_int_eq(mla_flash_plan_make(&p, &small, &c), MLA_OK);
	ck_assert_int_eq(p.m_total, 16);
	ck_assert_int_eq(p.head_blocks, 1);
	ck_assert_int_gt(p.num_splits, 32);
	ck_assert_int_le(p.num_splits, 128);
	ck_assert_uint_gt(p.workspace_bytes, 0);
	/* 128 blocks already fill 132 SMs: no split */
	ck_assert_int_eq(mla_flash_plan_make(&p, &big, &c), MLA_OK);
	ck_assert_int_eq(p.num_splits, 1);
	ck_assert_uint_eq(p.workspace_bytes, 0);
	/* short sequences never get more auto splits than KV tiles */
	small.max_pages = 1;
	ck_assert_int_eq(mla_flash_plan_make(&p, &small, &c), MLA_OK);
	ck_assert_int_eq(p.num_splits, 1);
	/* s_q x h_q rows, h_q not a multiple of BLOCK_H */
	big = shape(2, 20, 2, 100);
	ck_assert_int_eq(mla_flash_plan_make(&p, &big, &c), MLA_OK);
	ck_assert_int_eq(p.m_total, 40);
	ck_assert_int_eq(p.head_blocks, 3);
	/* explicit splits are kept, even past the KV blocks */
	c.num_splits = 64;
	ck_assert_int_eq(mla_flash_plan_make(&p, &big, &c), MLA_OK);
	ck_assert_int_eq(p.num_splits, 64);
	/* bad shapes and unknown configs */
	big.h_q = 0;
	ck_assert_int_eq(mla_flash_plan_make(&p, &big, &c), MLA_EINVAL);
	big.h_q = 20;
	c.block_n = 48;
	ck_assert_int_eq(mla_flash_plan_make(&p, &big, &c), MLA_EUNSUPPORTED);
}
END_TEST

/*
 * The one-tile config (sm_90 only): block tables of at most 64 keys, whatever the page size, one
 * block per row and sequence, no workspace; anything wider, or a split, it declines.
 */
START_TEST(flash_onetile_takes_block_tables_of_one_tile)
{
	const struct mla_decode_impl *impl = mla_decode_impl_find("hip.flash");
	struct mla_decode_config cfg[CAP], c = { "", 0, 0, 0, 0, 0 };
	struct mla_flash_plan p;
	struct mla_decode_args a = shape(5, 128, 2, 64);
	int n = impl->configs("sm_90", cfg, CAP), found = 0;

	for (int i = 0; i < n; i++) {
		const struct mla_flash_entry *e = mla_flash_entry_find(&cfg[i]);

		if (e->kind == MLA_FLASH_ONETILE) {
			c = cfg[i];
			found++;
			ck_assert_uint_eq(mla_flash_smem_bytes(e, MLA_KV_FP8_E4M3_FNUZ), 4 * (512 * 4 + 8));
		}
	}
	ck_assert_int_eq(found, 1);
	ck_assert_str_eq(c.name, "bn64-bh1-sp1-w4-st1");
	n = impl->configs("gfx942", cfg, CAP);
	for (int i = 0; i < n; i++)
		ck_assert_int_ne(mla_flash_entry_find(&cfg[i])->kind, MLA_FLASH_ONETILE);
	/* one 64-key page: one block per (query, head) row and sequence, no split, no workspace */
	ck_assert_int_eq(mla_flash_plan_make(&p, &a, &c), MLA_OK);
	ck_assert_int_eq(p.head_blocks, 256);
	ck_assert_int_eq(p.num_splits, 1);
	ck_assert_uint_eq(p.workspace_bytes, 0);
	ck_assert_uint_eq(impl->workspace_size(&a, &c), 0);
	/* 64 keys as 4 pages of 16 or 64 pages of 1; an empty table of one page */
	a.page_size = 16;
	a.max_pages = 4;
	ck_assert_int_eq(mla_flash_plan_make(&p, &a, &c), MLA_OK);
	a.page_size = 1;
	a.max_pages = 64;
	ck_assert_int_eq(mla_flash_plan_make(&p, &a, &c), MLA_OK);
	/* one key more, or any split: declined */
	a.max_pages = 65;
	ck_assert_int_eq(mla_flash_plan_make(&p, &a, &c), MLA_EUNSUPPORTED);
	ck_assert_uint_eq(impl->workspace_size(&a, &c), 0);
	a = shape(5, 128, 2, 65);
	ck_assert_int_eq(mla_flash_plan_make(&p, &a, &c), MLA_EUNSUPPORTED);
	a = shape(5, 128, 2, 1);
	for (int sp = 0; sp <= 4; sp += 2) {
		c.num_splits = sp;
		ck_assert_int_eq(mla_flash_plan_make(&p, &a, &c), MLA_EUNSUPPORTED);
	}
	c.num_splits = MLA_FLASH_BALANCED;
	ck_assert_int_eq(mla_flash_plan_make(&p, &a, &c), MLA_EUNSUPPORTED);
}
END_TEST

/*
 * The decoded-tile twin (sm_90 only): the w4 warp config's four numbers and splits under its own
 * name, found by that name (the plain name still finds the f16-fragment config), fp8 only (bf16
 * declined with no workspace), more shared memory than the twin's fp8 kernel and within sm_90's
 * 227 KiB, counted by the split model's occupancy (one block per SM: fewer resident slots, so no
 * more auto splits than the twin gets).
 */
START_TEST(flash_warp_dt_is_a_config_of_its_own)
{
	const struct mla_decode_impl *impl = mla_decode_impl_find("hip.flash");
	struct mla_decode_config cfg[CAP], dt = { "", 0, 0, 0, 0, 0 }, plain;
	const struct mla_flash_entry *e, *twin;
	struct mla_flash_plan p, q;
	struct mla_decode_args a = shape(64, 16, 1, 16384);
	int n = impl->configs("sm_90", cfg, CAP), found = 0;

	for (int i = 0; i < n; i++)
		if (mla_flash_entry_find(&cfg[i])->kind == MLA_FLASH_WARP_DT) {
			dt = cfg[i];
			found++;
		}
	ck_assert_int_eq(found, 1);
	ck_assert_str_eq(dt.name, "bn64-bh16-sp0-w4-st2-dt");
	e = mla_flash_entry_find(&dt);
	ck_assert_int_eq(e->amd, 0);
	plain = dt;
	mla_decode_config_name(&plain);
	ck_assert_str_eq(plain.name, "bn64-bh16-sp0-w4-st2");
	twin = mla_flash_entry_find(&plain);
	ck_assert_ptr_nonnull(twin);
	ck_assert_int_eq(twin->kind, MLA_FLASH_WARP);
	/* a name cut short of the suffix is the twin's; the suffix alone decides */
	strcpy(plain.name, "bn64-bh16-sp0-w4-st2-d");
	ck_assert_ptr_eq(mla_flash_entry_find(&plain), twin);
	strcpy(plain.name, "x" MLA_FLASH_DT_SUFFIX);
	ck_assert_ptr_eq(mla_flash_entry_find(&plain), e);
	/* shared memory: fp8 only, the decoded tile instead of the twin's row scales */
	ck_assert_uint_eq(mla_flash_smem_bytes(e, MLA_KV_BF16), 0);
	ck_assert_uint_eq(mla_flash_smem_bytes(e, MLA_KV_FP8_E4M3_FNUZ),
			  mla_flash_smem_bytes(twin, MLA_KV_FP8_E4M3_FNUZ) - 16 * 4 + 64 * MLA_FLASH_ROW_BF16);
	ck_assert_uint_eq(mla_flash_smem_bytes(e, MLA_KV_FP8_E4M3_FNUZ), 175104);
	ck_assert_uint_le(mla_flash_smem_bytes(e, MLA_KV_FP8_E4M3_FNUZ), MLA_SMEM_MAX_SM90);
	/* bf16: declined, no workspace */
	ck_assert_int_eq(mla_flash_plan_make(&p, &a, &dt), MLA_EUNSUPPORTED);
	ck_assert_uint_eq(impl->workspace_size(&a, &dt), 0);
	/* fp8: planned; one block per SM where the twin has two, so fewer splits fill the GPU (64 x 2, not 4) */
	a.kv_dtype = MLA_KV_FP8_E4M3_FNUZ;
	ck_assert_int_eq(mla_flash_plan_make(&p, &a, &dt), MLA_OK);
	plain = dt;
	mla_decode_config_name(&plain);
	ck_assert_int_eq(mla_flash_plan_make(&q, &a, &plain), MLA_OK);
	ck_assert_int_eq(p.num_splits, 2);
	ck_assert_int_eq(q.num_splits, 4);
	ck_assert_uint_eq(impl->workspace_size(&a, &dt), p.workspace_bytes);
	/* gfx942 has no twin, and no gfx942 entry answers to the suffix */
	n = impl->configs("gfx942", cfg, CAP);
	for (int i = 0; i < n; i++) {
		ck_assert_int_ne(mla_flash_entry_find(&cfg[i])->kind, MLA_FLASH_WARP_DT);
		plain = cfg[i];
		strcat(plain.name, MLA_FLASH_DT_SUFFIX);
		ck_assert_ptr_null(mla_flash_entry_find(&plain));
	}
}
END_TEST

/* Balanced splits (MLA_FLASH_BALANCED): one block per SM shared by the head blocks, slots for the device's schedule. */
START_TEST(flash_plan_balanced_splits)
{
	struct mla_decode_config c = { "", 64, 64, MLA_FLASH_BALANCED, 8, 2 };
	struct mla_flash_plan p;
	struct mla_decode_args a = shape(32, 128, 2, 4096);
	const struct mla_decode_impl *impl = mla_decode_impl_find("hip.flash");
	struct mla_decode_config cfg[CAP];
	int n = impl->configs("sm_90", cfg, CAP), named = 0;

	/* 256 rows: 4 head blocks of 64 share the 132 SMs, 33 ranges each; 33 + 32 - 1 slots */
	ck_assert_int_eq(mla_flash_plan_make(&p, &a, &c), MLA_OK);
	ck_assert_int_eq(p.head_blocks, 4);
	ck_assert_int_eq(p.parts, 33);
	ck_assert_int_eq(p.num_splits, 64);
	ck_assert_uint_ge(p.workspace_bytes, (size_t)64 * 256 * (512 + 1) * 4);
	ck_assert_uint_eq(impl->workspace_size(&a, &c), p.workspace_bytes);
	/* more head blocks than SMs: still one range each */
	a = shape(1, 128, 128, 64);
	ck_assert_int_eq(mla_flash_plan_make(&p, &a, &c), MLA_OK);
	ck_assert_int_eq(p.head_blocks, 256);
	ck_assert_int_eq(p.parts, 1);
	ck_assert_int_eq(p.num_splits, 1);
	ck_assert_uint_gt(p.workspace_bytes, 0); /* the combine always runs */
	/* the 64-row wgmma kernel only: not the transposed one, nor the warp kernel; no other negative count */
	c.block_h = 16;
	ck_assert_int_eq(mla_flash_plan_make(&p, &a, &c), MLA_EUNSUPPORTED);
	c.num_warps = 4;
	ck_assert_int_eq(mla_flash_plan_make(&p, &a, &c), MLA_EUNSUPPORTED);
	c.num_warps = 8;
	c.block_h = 64;
	c.num_splits = -2;
	ck_assert_int_eq(mla_flash_plan_make(&p, &a, &c), MLA_EUNSUPPORTED);
	/* positions that would overflow the device's int */
	c.num_splits = MLA_FLASH_BALANCED;
	a = shape(65535, 16, 1, 1 << 21);
	ck_assert_int_eq(mla_flash_plan_make(&p, &a, &c), MLA_EUNSUPPORTED);
	/* the sm_90 space names them "spbal" */
	for (int i = 0; i < n; i++)
		if (cfg[i].num_splits == MLA_FLASH_BALANCED) {
			ck_assert_ptr_nonnull(strstr(cfg[i].name, "-spbal-"));
			named++;
		}
	ck_assert_int_eq(named, 1);
}
END_TEST

/*
 * The NVIDIA flash kernels decode fp8 fnuz codes as bf16 bits ((c & 0x7f) << 4 | sign << 15), a
 * bf16 of value code * 2^-119 (subnormal where fnuz is), times 2^119, and 0x80 as NaN: exact for
 * all 256 codes. Here the same arithmetic in float (x86 keeps subnormals).
 */
START_TEST(fp8_bit_trick_is_exact_on_all_codes)
{
	for (int c = 0; c < 256; c++) {
		uint16_t bits = (uint16_t)(((c & 0x7f) << 4) | ((c & 0x80) << 8));
		float v = mla_bf16_to_float(bits) * 0x1p119f;
		uint16_t got = c == 0x80 ? 0x7fc0 : (uint16_t)(mla_float_to_bits(v) >> 16);
		float want = mla_fp8_e4m3_fnuz_to_float((uint8_t)c);

		ck_assert_msg((mla_float_to_bits(v) & 0xffffu) == 0, "code 0x%02x: not exact in bf16", c);
		if (isnan(want))
			ck_assert_msg(isnan(mla_bf16_to_float(got)), "code 0x%02x: want NaN", c);
		else
			ck_assert_msg(mla_bf16_to_float(got) == want, "code 0x%02x: got %g, want %g", c,
				      mla_bf16_to_float(got), want);
	}
}
END_TEST

/* A sparse shape (ABI 3): batch x s_q query rows of h_q heads, topk entries of a cache of kv_dtype. */
static struct mla_decode_args sparse_shape(int batch, int h_q, int s_q, int topk, int32_t kv_dtype)
{
	struct mla_decode_args a = shape(batch, h_q, s_q, 64);

	a.max_pages = 0;
	a.num_pages = 64;
	a.kv_dtype = kv_dtype;
	a.topk = topk;
	a.d_qk = mla_kv_d_qk(kv_dtype);
	a.d_v = MLA_D_V;
	return a;
}

/*
 * The sparse form's configs (MLA_FLASH_SPARSE, "-dsa"): on both arches, found by their suffix only
 * (the gfx942 ones share four numbers with dense warp configs), one shared-memory size for every
 * format within the arch's limit; they decline dense tasks and every other config declines sparse
 * ones; head blocks per query row, splits over the topk + extra_topk tiles from shapes, the dense
 * workspace layout.
 */
START_TEST(flash_sparse_configs_and_plan)
{
	const struct mla_decode_impl *impl = mla_decode_impl_find("hip.flash");
	struct mla_decode_config cfg[CAP], bh64 = { "", 0, 0, 0, 0, 0 }, plain;
	struct mla_flash_plan p;
	struct mla_decode_args a;
	char why[160];

	for (int k = 0; k < 2; k++) {
		int n = impl->configs(arches[k], cfg, CAP), found = 0;

		for (int i = 0; i < n; i++) {
			const struct mla_flash_entry *e = mla_flash_entry_find(&cfg[i]);
			struct mla_decode_args dense = shape(2, 16, 1, 256), sparse = sparse_shape(2, 16, 1, 256, MLA_KV_FP8_DS_MLA);

			ck_assert_ptr_nonnull(e);
			if (e->kind != MLA_FLASH_SPARSE) {
				ck_assert_int_eq(mla_flash_plan_make(&p, &sparse, &cfg[i]), MLA_EUNSUPPORTED);
				ck_assert_uint_eq(impl->workspace_size(&sparse, &cfg[i]), 0);
				continue;
			}
			found++;
			ck_assert_int_eq(e->amd, k);
			ck_assert_ptr_nonnull(strstr(cfg[i].name, MLA_FLASH_SPARSE_SUFFIX));
			ck_assert_int_eq(mla_flash_plan_make(&p, &dense, &cfg[i]), MLA_EUNSUPPORTED);
			ck_assert_int_eq(mla_flash_plan_make(&p, &sparse, &cfg[i]), MLA_OK);
			ck_assert_int_eq(p.sparse, 1);
			ck_assert_uint_eq(mla_flash_smem_bytes(e, MLA_KV_BF16), mla_flash_smem_bytes(e, MLA_KV_FP8_MODEL1));
			ck_assert_uint_eq(mla_flash_smem_bytes(e, MLA_KV_BF16),
					  MLA_FLASH_SPARSE_SMEM_ST(cfg[i].block_n, cfg[i].block_h, cfg[i].num_warps,
								   cfg[i].num_stages, k));
			ck_assert_uint_le(mla_flash_smem_bytes(e, MLA_KV_BF16), k ? MLA_LDS_MAX_GFX942 : MLA_SMEM_MAX_SM90);
			/* the name without its suffix is a dense config's, or none */
			plain = cfg[i];
			mla_decode_config_name(&plain);
			ck_assert_ptr_ne(mla_flash_entry_find(&plain), e);
			if (cfg[i].block_h == 64 && cfg[i].num_splits == 0 && cfg[i].num_stages == 1 && !k)
				bh64 = cfg[i];
		}
		ck_assert_int_ge(found, 3);
	}
	ck_assert_str_eq(bh64.name, "bn64-bh64-sp0-w8-st1-dsa");
	/* b 128, h_q 128, s_q 2, topk 2048 on 132 SMs: 512 blocks fill the GPU, no split, no workspace */
	a = sparse_shape(128, 128, 2, 2048, MLA_KV_FP8_DS_MLA);
	ck_assert_int_eq(mla_flash_plan_make(&p, &a, &bh64), MLA_OK);
	ck_assert_int_eq(p.head_blocks, 2);
	ck_assert_int_eq(p.m_total, 256);
	ck_assert_int_eq(p.num_splits, 1);
	ck_assert_uint_eq(p.workspace_bytes, 0);
	/* one query row of 64 heads: split over the 32 tiles, the dense workspace layout */
	a = sparse_shape(1, 64, 1, 2048, MLA_KV_FP8_MODEL1);
	ck_assert_int_eq(mla_flash_plan_make(&p, &a, &bh64), MLA_OK);
	ck_assert_int_eq(p.head_blocks, 1);
	ck_assert_int_gt(p.num_splits, 8);
	ck_assert_int_le(p.num_splits, 32);
	ck_assert_uint_ge(p.lse_part_offset, (size_t)p.num_splits * 64 * 512 * 4);
	ck_assert_uint_eq(p.workspace_bytes, p.lse_part_offset + (size_t)p.num_splits * 64 * 4);
	ck_assert_uint_eq(impl->workspace_size(&a, &bh64), p.workspace_bytes);
	/* the extra cache's tiles count: topk 128 + extra 1024 is 18 tiles */
	a = sparse_shape(1, 64, 1, 128, MLA_KV_FP8_MODEL1);
	ck_assert_int_eq(mla_flash_plan_make(&p, &a, &bh64), MLA_OK);
	ck_assert_int_le(p.num_splits, 2);
	a.extra_topk = 1024;
	a.extra_page_size = 64;
	ck_assert_int_eq(mla_flash_plan_make(&p, &a, &bh64), MLA_OK);
	ck_assert_int_gt(p.num_splits, 2);
	ck_assert_int_le(p.num_splits, 18);
	/* h_q 20 in blocks of 64: one head block; explicit splits kept */
	a = sparse_shape(3, 20, 2, 100, MLA_KV_BF16);
	bh64.num_splits = 7;
	ck_assert_int_eq(mla_flash_plan_make(&p, &a, &bh64), MLA_OK);
	ck_assert_int_eq(p.head_blocks, 1);
	ck_assert_int_eq(p.num_splits, 7);
	ck_assert_uint_ge(p.workspace_bytes, (size_t)3 * 7 * 40 * (512 + 1) * 4);
	/* out of contract: a dense-only format, d_qk not the format's, an extra cache without pages */
	a.kv_dtype = MLA_KV_FP8_E4M3_FNUZ;
	ck_assert_int_eq(mla_flash_plan_make(&p, &a, &bh64), MLA_EINVAL);
	ck_assert_int_eq(impl->supports(&a, why, sizeof(why)), 0);
	a = sparse_shape(3, 20, 2, 100, MLA_KV_FP8_MODEL1_FNUZ);
	ck_assert_int_eq(impl->supports(&a, why, sizeof(why)), 1);
	a.d_qk = MLA_D_QK;
	ck_assert_int_eq(mla_flash_plan_make(&p, &a, &bh64), MLA_EINVAL);
	ck_assert_int_eq(impl->supports(&a, why, sizeof(why)), 0);
	a = sparse_shape(3, 20, 2, 100, MLA_KV_FP8_DS_MLA);
	a.extra_topk = 64;
	ck_assert_int_eq(mla_flash_plan_make(&p, &a, &bh64), MLA_EINVAL);
	/* the sparse launch needs a sparse config: a dense one is declined before any pointer is read */
	a.extra_topk = 0;
	ck_assert_int_eq(impl->launch(&a, &cfg[0]), strcmp(VS_GPU_BUILD, "OFF") ? MLA_EUNSUPPORTED : MLA_ENODEVICE);
}
END_TEST

/* Deterministic bytes for the decode test (splitmix64). */
static uint64_t mix(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/*
 * sparse_decode.h, the gather and decode the sparse kernels run: for every format (fnuz twins
 * included), page sizes 1, 61 and 64 and every slot, the units of a token cover dims [0, d_qk)
 * once, read 16 aligned bytes inside the token's bytes of its page (scales inside the page), and
 * decode to the bf16 of mla_kv_decode_token()'s values exactly; every code of both fp8 kinds times
 * a power-of-two scale is exact. Entry helpers: topk_length clamped, -1 (any negative) invalid.
 */
START_TEST(flash_sparse_units_decode_like_the_reference)
{
	static const int32_t dtypes[] = { MLA_KV_BF16, MLA_KV_FP8_DS_MLA, MLA_KV_FP8_DS_MLA_FNUZ, MLA_KV_FP8_MODEL1,
					  MLA_KV_FP8_MODEL1_FNUZ };
	static const int page_sizes[] = { 1, 61, 64 };
	uint64_t seed = 42;

	for (size_t di = 0; di < sizeof(dtypes) / sizeof(dtypes[0]); di++)
		for (size_t pi = 0; pi < sizeof(page_sizes) / sizeof(page_sizes[0]); pi++) {
			const int32_t dt = dtypes[di];
			const int ps = page_sizes[pi], fmt = mla_sparse_fmt_of(dt), d = mla_kv_d_qk(dt);
			const int fnuz = mla_kv_is_fnuz(dt);
			const size_t page_bytes = mla_kv_page_bytes(dt, ps), tok = mla_kv_token_bytes(dt);
			uint8_t *page = aligned_alloc(64, (page_bytes + 63) / 64 * 64);

			ck_assert_ptr_nonnull(page);
			ck_assert_int_ge(fmt, 0);
			ck_assert_uint_eq(page_bytes % 16, 0);
			/* random codes (no NaN code), bf16 values of moderate range, power-of-two scales */
			for (size_t j = 0; j < page_bytes; j++) {
				uint8_t c = (uint8_t)mix(&seed);

				if (fmt != MLA_SPARSE_BF16 && (c == 0x80 || (c & 0x7f) == 0x7f))
					c = 0x11;
				page[j] = c;
			}
			for (int slot = 0; slot < ps; slot++) {
				uint8_t *t = page + (size_t)slot * (fmt == MLA_SPARSE_DS_MLA ? 656 : fmt == MLA_SPARSE_MODEL1 ? 576 : 1152);

				if (fmt == MLA_SPARSE_BF16) {
					for (int k = 0; k < MLA_D_QK; k++) { /* exponents near 1: no inf or NaN */
						t[2 * k + 1] = (uint8_t)(0x3c + (mix(&seed) & 3)) | (uint8_t)(mix(&seed) & 0x80);
					}
				} else if (fmt == MLA_SPARSE_DS_MLA) {
					for (int k = 0; k < 4; k++) {
						float sc = ldexpf(1.f, (int)(mix(&seed) % 20) - 12);

						memcpy(t + 512 + 4 * k, &sc, 4);
					}
					for (int k = 0; k < 64; k++)
						t[528 + 2 * k + 1] = (uint8_t)(0x3c + (mix(&seed) & 3));
				} else {
					for (int k = 0; k < 7; k++)
						page[(size_t)ps * 576 + (size_t)slot * 8 + k] = (uint8_t)(127 - 10 + mix(&seed) % 20);
					for (int k = 0; k < 64; k++)
						t[448 + 2 * k + 1] = (uint8_t)(0x3c + (mix(&seed) & 3));
				}
			}
			for (int slot = 0; slot < ps; slot++) {
				float want[MLA_D_QK];
				uint16_t got[MLA_D_QK];
				int covered[MLA_D_QK] = { 0 };
				const int64_t t0 = (int64_t)slot * (fmt == MLA_SPARSE_DS_MLA ? 656 : fmt == MLA_SPARSE_MODEL1 ? 576 : 1152);

				if (fmt == MLA_SPARSE_BF16)
					for (int k = 0; k < MLA_D_QK; k++)
						want[k] = mla_load_bf16(page + t0 + 2 * k);
				else
					ck_assert_int_eq(mla_kv_decode_token(dt, page, ps, slot, want), d);
				for (int u = 0; u < MLA_SPARSE_UNITS(fmt); u++) {
					const struct mla_sparse_unit su = mla_sparse_unit_at(fmt, ps, slot, u);
					const int n = su.codes ? 16 : 8;
					uint32_t w[4], o[8];

					ck_assert_int_eq(su.codes, u < MLA_SPARSE_CODE_UNITS(fmt));
					ck_assert_int_eq(su.src % 16, 0);
					ck_assert(su.src >= t0 && su.src + 16 <= t0 + (int64_t)(fmt == MLA_SPARSE_MODEL1 ? 576 : tok));
					ck_assert(su.dim >= 0 && su.dim + n <= d);
					memcpy(w, page + su.src, 16);
					if (su.codes) {
						ck_assert(su.scale >= 0 && su.scale < (int64_t)page_bytes);
						mla_sparse_decode16(w, mla_sparse_scale_load(fmt, page + su.scale), fnuz, o);
					} else {
						ck_assert_int_eq(su.scale, -1);
						memcpy(o, w, 16);
					}
					for (int k = 0; k < n; k++) {
						covered[su.dim + k]++;
						got[su.dim + k] = (uint16_t)(o[k / 2] >> (16 * (k % 2)));
					}
				}
				for (int k = 0; k < d; k++) {
					ck_assert_msg(covered[k] == 1, "%s page %d slot %d: dim %d covered %d times",
						      mla_kv_dtype_name(dt), ps, slot, k, covered[k]);
					ck_assert_msg(got[k] == mla_float_to_bf16(want[k]) && mla_bf16_to_float(got[k]) == want[k],
						      "%s page %d slot %d dim %d: 0x%04x, want %g", mla_kv_dtype_name(dt), ps,
						      slot, k, got[k], want[k]);
				}
			}
			free(page);
		}
	/* every code of both kinds, times powers of two across the range: exact */
	for (int fnuz = 0; fnuz < 2; fnuz++)
		for (int c = 0; c < 256; c++)
			for (int e = -20; e <= 20; e += 5) {
				float v = (fnuz ? mla_fp8_e4m3_fnuz_to_float((uint8_t)c) : mla_fp8_e4m3fn_to_float((uint8_t)c)) *
					  ldexpf(1.f, e);
				uint16_t b = mla_sparse_code_to_bf16((uint8_t)c, ldexpf(1.f, e), fnuz);

				if (isnan(v))
					ck_assert(isnan(mla_bf16_to_float(b)));
				else
					ck_assert_msg(mla_bf16_to_float(b) == v, "code 0x%02x fnuz %d 2^%d", c, fnuz, e);
			}
	/* entries: topk_length clamped to [0, topk]; negative indices invalid; page and slot */
	{
		const int32_t len[4] = { 5, -3, 100, 0 };
		int slot = -1;

		ck_assert_int_eq(mla_sparse_entries(len, 0, 64), 5);
		ck_assert_int_eq(mla_sparse_entries(len, 1, 64), 0);
		ck_assert_int_eq(mla_sparse_entries(len, 2, 64), 64);
		ck_assert_int_eq(mla_sparse_entries(len, 3, 64), 0);
		ck_assert_int_eq(mla_sparse_entries(NULL, 3, 64), 64);
		ck_assert_int_eq(mla_sparse_entries(len, 0, 0), 0);
		ck_assert_int_eq(mla_sparse_row_page(-1, 61, 61 * 656, &slot), -1);
		ck_assert_int_eq(mla_sparse_row_page(-7, 61, 61 * 656, &slot), -1);
		ck_assert_int_eq(mla_sparse_row_page(61 * 3 + 60, 61, 61 * 656, &slot), 3 * 61 * 656);
		ck_assert_int_eq(slot, 60);
		ck_assert_int_eq(mla_sparse_row_page(0x7fffffff, 64, (int64_t)mla_kv_page_bytes(MLA_KV_FP8_MODEL1, 64), &slot),
				 (int64_t)(0x7fffffff / 64) * (int64_t)mla_kv_page_bytes(MLA_KV_FP8_MODEL1, 64));
		ck_assert_int_eq(slot, 63);
		ck_assert_int_eq(mla_sparse_fmt_of(MLA_KV_FP8_E4M3_FNUZ), -1);
	}
}
END_TEST

/*
 * The raw stage of the pipelined sparse kernel (num_stages 2, sparse_decode.h): for both fp8 layouts
 * (fnuz twins included), page sizes 1, 61 and 64 and every slot, the chunks of a token copy aligned
 * sources (16 bytes, or the 8 scale bytes) that lie in the token's bytes or its scales inside the
 * page, into disjoint places that cover the raw row's bytes once (656 for fp8_ds_mla, 584 for
 * fp8_model1) within MLA_SPARSE_RAW_ROW; decoding the raw row by mla_sparse_unit_raw's units gives
 * the bytes of decoding the page by mla_sparse_unit_at's, unit for unit.
 */
START_TEST(flash_sparse_raw_stage_decodes_like_the_page)
{
	static const int32_t dtypes[] = { MLA_KV_FP8_DS_MLA, MLA_KV_FP8_DS_MLA_FNUZ, MLA_KV_FP8_MODEL1,
					  MLA_KV_FP8_MODEL1_FNUZ };
	static const int page_sizes[] = { 1, 61, 64 };
	uint64_t seed = 7;

	for (size_t di = 0; di < sizeof(dtypes) / sizeof(dtypes[0]); di++)
		for (size_t pi = 0; pi < sizeof(page_sizes) / sizeof(page_sizes[0]); pi++) {
			const int32_t dt = dtypes[di];
			const int ps = page_sizes[pi], fmt = mla_sparse_fmt_of(dt), fnuz = mla_kv_is_fnuz(dt);
			const size_t page_bytes = mla_kv_page_bytes(dt, ps);
			const int tok = fmt == MLA_SPARSE_DS_MLA ? 656 : 576, used = fmt == MLA_SPARSE_DS_MLA ? 656 : 584;
			uint8_t *page = malloc(page_bytes);

			ck_assert_ptr_nonnull(page);
			ck_assert_int_le(used, MLA_SPARSE_RAW_ROW);
			/* every page starts 16-aligned in the cache, so a chunk 16-aligned in its page is (cp.async) */
			ck_assert_uint_eq(page_bytes % 16, 0);
			for (size_t j = 0; j < page_bytes; j++)
				page[j] = (uint8_t)mix(&seed);
			/* finite scales: fp32 powers of two (fp8_ds_mla), e8m0 near 1 (fp8_model1) */
			for (int slot = 0; slot < ps; slot++)
				for (int k = 0; k < (fmt == MLA_SPARSE_DS_MLA ? 4 : 8); k++) {
					if (fmt == MLA_SPARSE_DS_MLA) {
						float sc = ldexpf(1.f, (int)(mix(&seed) % 20) - 12);

						memcpy(page + (size_t)slot * 656 + 512 + 4 * k, &sc, 4);
					} else {
						page[(size_t)ps * 576 + (size_t)slot * 8 + k] = (uint8_t)(117 + mix(&seed) % 20);
					}
				}
			for (int slot = 0; slot < ps; slot++) {
				uint8_t raw[MLA_SPARSE_RAW_ROW];
				int cover[MLA_SPARSE_RAW_ROW] = { 0 };

				memset(raw, 0xA5, sizeof(raw));
				for (int k = 0; k < MLA_SPARSE_RAW_CHUNKS(fmt); k++) {
					const struct mla_sparse_chunk ch = mla_sparse_raw_chunk(fmt, ps, slot, k);
					const int64_t t0 = (int64_t)slot * tok, sc0 = (int64_t)ps * 576 + (int64_t)slot * 8;

					ck_assert(ch.bytes == 16 || ch.bytes == 8);
					ck_assert_int_eq(ch.src % ch.bytes, 0);
					ck_assert_int_eq(ch.dst % ch.bytes, 0);
					ck_assert(ch.dst >= 0 && ch.dst + ch.bytes <= used);
					ck_assert((ch.src >= t0 && ch.src + ch.bytes <= t0 + tok) ||
						  (fmt == MLA_SPARSE_MODEL1 && ch.src == sc0 && ch.bytes == 8));
					ck_assert(ch.src + ch.bytes <= (int64_t)page_bytes);
					memcpy(raw + ch.dst, page + ch.src, (size_t)ch.bytes);
					for (int b = 0; b < ch.bytes; b++)
						cover[ch.dst + b]++;
				}
				for (int b = 0; b < used; b++)
					ck_assert_msg(cover[b] == 1, "%s page %d slot %d: raw byte %d copied %d times",
						      mla_kv_dtype_name(dt), ps, slot, b, cover[b]);
				for (int u = 0; u < MLA_SPARSE_UNITS(fmt); u++) {
					const struct mla_sparse_unit sp = mla_sparse_unit_at(fmt, ps, slot, u);
					const struct mla_sparse_unit sr = mla_sparse_unit_raw(fmt, u);
					uint32_t wp[4], wr[4], op[8], orw[8];

					ck_assert_int_eq(sr.dim, sp.dim);
					ck_assert_int_eq(sr.codes, sp.codes);
					ck_assert_int_eq(sr.src % 16, 0);
					ck_assert(sr.src >= 0 && sr.src + 16 <= used);
					memcpy(wp, page + sp.src, 16);
					memcpy(wr, raw + sr.src, 16);
					if (!sp.codes) {
						ck_assert_int_eq(sr.scale, -1);
						ck_assert(!memcmp(wp, wr, 16));
						continue;
					}
					ck_assert(sr.scale >= 0 && sr.scale < used);
					ck_assert_int_eq(sr.scale % (fmt == MLA_SPARSE_DS_MLA ? 4 : 1), 0);
					mla_sparse_decode16(wp, mla_sparse_scale_load(fmt, page + sp.scale), fnuz, op);
					mla_sparse_decode16(wr, mla_sparse_scale_load(fmt, raw + sr.scale), fnuz, orw);
					ck_assert_msg(!memcmp(op, orw, sizeof(op)), "%s page %d slot %d unit %d",
						      mla_kv_dtype_name(dt), ps, slot, u);
				}
			}
			free(page);
		}
}
END_TEST

START_TEST(launch_without_gpu_build_or_with_bad_args)
{
	const struct mla_decode_impl *impl = mla_decode_impl_find(impl_names[_i]);
	struct mla_decode_config cfg[CAP];
	struct mla_decode_args a = shape(1, 16, 1, 64);
	int n = impl->configs("sm_90", cfg, CAP);
	int rc;

	ck_assert_int_ge(n, 1);
	rc = impl->launch(&a, &cfg[0]); /* no pointers at all */
	if (!strcmp(VS_GPU_BUILD, "OFF"))
		ck_assert_msg(rc == MLA_ENODEVICE, "%s: launch in a CPU-only build returned %d", impl->name, rc);
	else
		ck_assert_msg(rc == MLA_EINVAL || rc == MLA_EUNSUPPORTED, "%s: launch without buffers returned %d",
			      impl->name, rc);
	ck_assert_str_eq(impl->backend, "hip");
}
END_TEST

static Suite *hip_configs_suite(void)
{
	Suite *s = suite_create("hip_configs");
	TCase *tc = tcase_create("configs");

	tcase_add_loop_test(tc, config_space_is_nonempty_with_unique_canonical_names, 0, 4);
	tcase_add_loop_test(tc, configs_respect_cap, 0, 2);
	tcase_add_test(tc, unknown_arch_is_unsupported);
	tcase_add_test(tc, gfx942_configs_fit_lds_and_differ_from_sm90);
	suite_add_tcase(s, tc);

	tc = tcase_create("plan");
	tcase_add_loop_test(tc, workspace_is_monotone_in_splits, 0, 2);
	tcase_add_test(tc, flash_plan_picks_splits_from_shapes);
	tcase_add_test(tc, flash_plan_balanced_splits);
	tcase_add_test(tc, flash_onetile_takes_block_tables_of_one_tile);
	tcase_add_test(tc, flash_warp_dt_is_a_config_of_its_own);
	tcase_add_test(tc, flash_sparse_configs_and_plan);
	suite_add_tcase(s, tc);

	tc = tcase_create("numerics_and_launch");
	tcase_add_test(tc, fp8_bit_trick_is_exact_on_all_codes);
	tcase_add_test(tc, flash_sparse_units_decode_like_the_reference);
	tcase_add_test(tc, flash_sparse_raw_stage_decodes_like_the_page);
	tcase_add_loop_test(tc, launch_without_gpu_build_or_with_bad_args, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(hip_configs_suite());
}
