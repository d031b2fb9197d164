/*
 * hip_impls.c - descriptors and config spaces of hip.baseline and hip.flash, and the host-side plan
 * of a hip.flash launch (split count, workspace). Plain C, built in every configuration, so plans
 * can be emitted and config spaces checked without a GPU; the launches live in baseline.hip and
 * flash.hip (GPU build) or hip_stub.c (no GPU toolchain).
 */
#include "hip_impls.h"
#include "hip_flash.h"
#include "sparse_decode.h"

#include <stdio.h>
#include <string.h>

/* ---------------------------------------------------------------- config spaces */

#define MLA_CFG_NAME(bn, bh, sp, nw, st) "bn" #bn "-bh" #bh "-sp" #sp "-w" #nw "-st" #st
/* the name's suffix by kind: the decoded-tile twin's, else none */
#define MLA_SUFFIX_MLA_FLASH_WARP ""
#define MLA_SUFFIX_MLA_FLASH_WGMMA ""
#define MLA_SUFFIX_MLA_FLASH_WGMMA_T ""
#define MLA_SUFFIX_MLA_FLASH_ONETILE ""
#define MLA_SUFFIX_MLA_FLASH_WARP_DT MLA_FLASH_DT_SUFFIX
#define MLA_SUFFIX_MLA_FLASH_SPARSE MLA_FLASH_SPARSE_SUFFIX
#define MLA_SM90_ENTRY(bn, bh, sp, nw, st, kind) \
	{ { MLA_CFG_NAME(bn, bh, sp, nw, st) MLA_SUFFIX_##kind, bn, bh, MLA_FLASH_SPLITS_##sp, nw, st }, kind, 0 },
#define MLA_GFX942_ENTRY(bn, bh, sp, nw, st, kind) \
	{ { MLA_CFG_NAME(bn, bh, sp, nw, st) MLA_SUFFIX_##kind, bn, bh, MLA_FLASH_SPLITS_##sp, nw, st }, kind, 1 },

static const struct mla_flash_entry flash_sm90[] = { MLA_FLASH_SM90_CONFIGS(MLA_SM90_ENTRY) };
static const struct mla_flash_entry flash_gfx942[] = { MLA_FLASH_GFX942_CONFIGS(MLA_GFX942_ENTRY) };

#define MLA_COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Exact arch match, or a generation prefix followed by a feature suffix ("gfx942:sramecc+:xnack-"). */
static int arch_is(const char *arch, const char *gen)
{
	size_t n = strlen(gen);

	return arch && !strncmp(arch, gen, n) && (arch[n] == '\0' || arch[n] == ':' || arch[n] == 'a');
}

static int copy_configs(const struct mla_flash_entry *e, int n, struct mla_decode_config *out, int cap)
{
	for (int i = 0; i < n && i < cap; i++)
		out[i] = e[i].cfg;
	return n;
}

static int flash_configs(const char *arch, struct mla_decode_config *out, int cap)
{
	if (arch_is(arch, "sm_90"))
		return copy_configs(flash_sm90, MLA_COUNT(flash_sm90), out, cap);
	if (arch_is(arch, "gfx942"))
		return copy_configs(flash_gfx942, MLA_COUNT(flash_gfx942), out, cap);
	return MLA_EUNSUPPORTED;
}

static int baseline_configs(const char *arch, struct mla_decode_config *out, int cap)
{
	int nw;

	if (arch_is(arch, "sm_90"))
		nw = MLA_BASELINE_SM90_WARPS;
	else if (arch_is(arch, "gfx942"))
		nw = MLA_BASELINE_GFX942_WARPS;
	else
		return MLA_EUNSUPPORTED;
	if (cap >= 1) {
		struct mla_decode_config c = { "", 1, 1, 1, nw, 1 };

		snprintf(c.name, sizeof(c.name), "bn1-bh1-sp1-w%d-st1", nw);
		out[0] = c;
	}
	return 1;
}

/* Whether a config's name ends in suffix (MLA_FLASH_DT_SUFFIX, MLA_FLASH_SPARSE_SUFFIX). */
static int named_with(const struct mla_decode_config *cfg, const char *suffix)
{
	const char *end = memchr(cfg->name, '\0', sizeof(cfg->name));
	size_t n = end ? (size_t)(end - cfg->name) : sizeof(cfg->name), k = strlen(suffix);

	return n >= k && !memcmp(cfg->name + n - k, suffix, k);
}

const struct mla_flash_entry *mla_flash_entry_find(const struct mla_decode_config *cfg)
{
	const struct mla_flash_entry *tabs[2] = { flash_sm90, flash_gfx942 };
	int counts[2] = { MLA_COUNT(flash_sm90), MLA_COUNT(flash_gfx942) };
	int dt, sparse;

	if (!cfg || (cfg->num_splits < 0 && cfg->num_splits != MLA_FLASH_BALANCED))
		return NULL;
	dt = named_with(cfg, MLA_FLASH_DT_SUFFIX);
	sparse = named_with(cfg, MLA_FLASH_SPARSE_SUFFIX);
	for (int t = 0; t < 2; t++)
		for (int i = 0; i < counts[t]; i++) {
			const struct mla_decode_config *c = &tabs[t][i].cfg;

			if (c->block_n == cfg->block_n && c->block_h == cfg->block_h &&
			    c->num_warps == cfg->num_warps && c->num_stages == cfg->num_stages &&
			    (tabs[t][i].kind == MLA_FLASH_WARP_DT) == dt &&
			    (tabs[t][i].kind == MLA_FLASH_SPARSE) == sparse)
				return &tabs[t][i];
		}
	return NULL;
}

size_t mla_flash_smem_bytes(const struct mla_flash_entry *e, int32_t kv_dtype)
{
	const struct mla_decode_config *c = &e->cfg;
	int fp8 = kv_dtype == MLA_KV_FP8_E4M3_FNUZ;

	if (e->kind == MLA_FLASH_SPARSE) /* every format the same */
		return (size_t)MLA_FLASH_SPARSE_SMEM_ST(c->block_n, c->block_h, c->num_warps, c->num_stages, e->amd);
	if (e->kind == MLA_FLASH_WGMMA)
		return MLA_FLASH_WGMMA_SMEM;
	if (e->kind == MLA_FLASH_WGMMA_T)
		return MLA_FLASH_WGMMA_T_SMEM(c->block_h, fp8);
	if (e->kind == MLA_FLASH_ONETILE)
		return MLA_FLASH_ONETILE_SMEM(c->num_warps);
	if (e->kind == MLA_FLASH_WARP_DT)
		return fp8 ? (size_t)MLA_FLASH_WARP_DT_SMEM(c->block_n, c->block_h, c->num_warps, c->num_stages) : 0;
	return (size_t)MLA_FLASH_WARP_SMEM(c->block_n, c->block_h, c->num_warps, c->num_stages, fp8,
					   e->amd);
}

/* ---------------------------------------------------------------- launch plan */

static int shapes_valid(const struct mla_decode_args *a)
{
	return a && a->batch >= 0 && a->s_q >= 1 && a->h_q >= 1 && a->page_size >= 1 &&
	       a->max_pages >= 0 && a->num_pages >= 0 && mla_kv_elem_size(a->kv_dtype) != 0 &&
	       (int64_t)a->s_q * a->h_q <= (1 << 24);
}

/* Resident blocks per SM / CU for an entry: shared memory, then threads. */
static int blocks_per_cu(const struct mla_flash_entry *e, int32_t kv_dtype)
{
	size_t smem = mla_flash_smem_bytes(e, kv_dtype);
	int threads = e->cfg.num_warps * (e->amd ? 64 : 32);
	int by_smem = e->amd ? (int)(MLA_LDS_MAX_GFX942 / smem) : (int)(233472 / (smem + 1024));
	int by_threads = 2048 / threads;
	int n = by_smem < by_threads ? by_smem : by_threads;

	return n < 1 ? 1 : n > 8 ? 8 : n;
}

/* Blocks of an entry's kernel resident on the whole device at once (a->num_cus, else the default). */
static int64_t resident_slots(const struct mla_flash_entry *e, const struct mla_decode_args *a)
{
	int num_cus = a->num_cus > 0 ? a->num_cus : (e->amd ? 304 : 132);

	return (int64_t)num_cus * blocks_per_cu(e, a->kv_dtype);
}

/*
 * Auto split count: the smallest modelled time over s in [1, min(128, KV tiles of the longest
 * possible sequence, or the sparse form's tiles of topk + extra_topk entries)], where a launch of B blocks per split costs ceil(B*s / slots) waves of
 * (tiles/s + 1.5) tile times (the 1.5 is the prologue, epilogue and combine share of a block),
 * plus MLA_COMBINE_TILES for the combine kernel when s > 1 (its launch and the workspace round
 * trip: on the H200 a split of a one- or two-tile task doubled its time). Shapes only: seqlens may
 * change under a captured graph.
 */
#define MLA_COMBINE_TILES 2.0
static int auto_splits(const struct mla_flash_entry *e, const struct mla_decode_args *a, int64_t blocks)
{
	int64_t slots = resident_slots(e, a);
	int64_t keys = (int64_t)a->max_pages * a->page_size, bn = e->cfg.block_n;
	int64_t tiles = a->topk > 0 ? (a->topk + bn - 1) / bn + (a->extra_topk + bn - 1) / bn : (keys + bn - 1) / bn;
	int smax = tiles < 1 ? 1 : tiles > 128 ? 128 : (int)tiles;
	int best = 1;
	double best_cost = 0.0;

	if (blocks <= 0)
		return 1;
	for (int s = 1; s <= smax; s++) {
		int64_t waves = (blocks * s + slots - 1) / slots;
		double cost = (double)waves * ((double)tiles / s + 1.5) + (s > 1 ? MLA_COMBINE_TILES : 0.0);

		if (s == 1 || cost < best_cost * 0.999) {
			best = s;
			best_cost = cost;
		}
	}
	return best;
}

/*
 * Balanced schedule (flash.hip, Seg): one block per resident slot, shared by the head blocks
 * (parts = slots / head_blocks, at least 1), parts + batch - 1 workspace slots. The device's
 * positions (KV tiles plus a few per sequence, over all sequences, plus the ranges' rounding) must
 * fit an int: refused past INT_MAX / 2, with room to spare.
 */
static int balanced_parts(const struct mla_flash_entry *e, const struct mla_decode_args *a,
			  struct mla_flash_plan *p)
{
	int64_t slots = resident_slots(e, a);
	int64_t tiles = ((int64_t)a->max_pages * a->page_size + e->cfg.block_n - 1) / e->cfg.block_n;
	int64_t parts = slots / p->head_blocks;

	if (e->kind != MLA_FLASH_WGMMA)
		return MLA_EUNSUPPORTED;
	if (parts < 1)
		parts = 1;
	if ((int64_t)a->batch * (tiles + 16) + parts * 64 > INT32_MAX / 2)
		return MLA_EUNSUPPORTED;
	p->parts = (int32_t)parts;
	p->num_splits = (int32_t)(parts + (a->batch > 0 ? a->batch : 1) - 1);
	return MLA_OK;
}

/*
 * The sparse form's shape fields: a sparse format with its d_qk and d_v 512, positive page sizes,
 * query rows (batch x s_q) that fit an int (the grid's x), an extra cache with its page size.
 */
static int sparse_shapes_valid(const struct mla_decode_args *a)
{
	return a && a->batch >= 0 && a->s_q >= 1 && a->h_q >= 1 && a->topk > 0 && a->extra_topk >= 0 &&
	       a->page_size >= 1 && a->num_pages >= 0 && mla_sparse_fmt_of(a->kv_dtype) >= 0 &&
	       a->d_qk == mla_kv_d_qk(a->kv_dtype) && a->d_v == MLA_D_V &&
	       (a->extra_topk == 0 || (a->extra_page_size >= 1 && a->extra_num_pages >= 0)) &&
	       (int64_t)a->batch * a->s_q <= INT32_MAX && (int64_t)a->s_q * a->h_q <= (1 << 24);
}

int mla_flash_plan_make(struct mla_flash_plan *plan, const struct mla_decode_args *a,
			const struct mla_decode_config *cfg)
{
	const struct mla_flash_entry *e = mla_flash_entry_find(cfg);
	struct mla_flash_plan p;
	size_t o_bytes, lse_bytes;

	if (a && a->topk > 0) {
		if (!sparse_shapes_valid(a))
			return MLA_EINVAL;
		if (!e || e->kind != MLA_FLASH_SPARSE || cfg->num_splits < 0)
			return MLA_EUNSUPPORTED;
		memset(&p, 0, sizeof(p));
		p.sparse = 1;
		p.m_total = a->s_q * a->h_q;
		p.head_blocks = (a->h_q + e->cfg.block_h - 1) / e->cfg.block_h;
		if (p.head_blocks > 65535) /* the grid's y */
			return MLA_EUNSUPPORTED;
		p.num_splits = cfg->num_splits > 0 ? cfg->num_splits
						   : auto_splits(e, a, (int64_t)a->batch * a->s_q * p.head_blocks);
		if (p.num_splits > 65535) /* the grid's z */
			return MLA_EUNSUPPORTED;
		if (p.num_splits > 1) {
			size_t rows = (size_t)a->batch * (size_t)p.num_splits * (size_t)p.m_total;

			o_bytes = rows * MLA_D_V * sizeof(float);
			p.lse_part_offset = (o_bytes + 255) & ~(size_t)255;
			p.workspace_bytes = p.lse_part_offset + rows * sizeof(float);
		}
		*plan = p;
		return MLA_OK;
	}
	if (!shapes_valid(a))
		return MLA_EINVAL;
	if (!e || e->kind == MLA_FLASH_SPARSE)
		return MLA_EUNSUPPORTED;
	/*
	 * The one-tile kernel takes tasks whose block table spans at most one tile: every sequence then
	 * has at most block_n keys, whatever seqlens hold (the host never reads them). No split.
	 */
	if (e->kind == MLA_FLASH_ONETILE &&
	    ((int64_t)a->max_pages * a->page_size > e->cfg.block_n || cfg->num_splits != 1))
		return MLA_EUNSUPPORTED;
	/* The decoded-tile twin has an fp8 kernel only; for bf16 its twin runs the same kernel. */
	if (e->kind == MLA_FLASH_WARP_DT && a->kv_dtype != MLA_KV_FP8_E4M3_FNUZ)
		return MLA_EUNSUPPORTED;
	memset(&p, 0, sizeof(p));
	p.m_total = a->s_q * a->h_q;
	p.head_blocks = (p.m_total + e->cfg.block_h - 1) / e->cfg.block_h;
	if (cfg->num_splits == MLA_FLASH_BALANCED) {
		int rc = balanced_parts(e, a, &p);

		if (rc != MLA_OK)
			return rc;
	} else {
		p.num_splits = cfg->num_splits > 0 ? cfg->num_splits
						   : auto_splits(e, a, a->batch * p.head_blocks);
		if (p.num_splits > 65535) /* the grid's y */
			return MLA_EUNSUPPORTED;
	}
	if (p.num_splits > 1 || p.parts > 0) {
		/* uniform: batch x num_splits slots; balanced: num_splits slots (flash.hip, Seg) */
		size_t slots = p.parts > 0 ? (size_t)p.num_splits : (size_t)a->batch * (size_t)p.num_splits;
		size_t rows = slots * (size_t)p.m_total;

		o_bytes = rows * MLA_D_V * sizeof(float);
		lse_bytes = rows * sizeof(float);
		p.o_part_offset = 0;
		p.lse_part_offset = (o_bytes + 255) & ~(size_t)255;
		p.workspace_bytes = p.lse_part_offset + lse_bytes;
	}
	*plan = p;
	return MLA_OK;
}

/* ---------------------------------------------------------------- descriptors */

static size_t flash_workspace_size(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	struct mla_flash_plan p;

	if (mla_flash_plan_make(&p, a, c) != MLA_OK)
		return 0;
	return p.workspace_bytes;
}

/* The dense form's kernels live in flash.hip, the sparse form's in flash_sparse.hip. */
static int flash_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	return a && a->topk > 0 ? mla_hip_flash_sparse_launch(a, c) : mla_hip_flash_launch(a, c);
}

static size_t baseline_workspace_size(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	(void)a;
	(void)c;
	return 0;
}

/*
 * The dense form with bf16 or fp8_e4m3_fnuz only (hip.baseline; hip.flash's dense kernels): the
 * sparse form (ABI 3) and its cache formats are refused with the reason (0), else 1.
 */
static int hip_dense_only(const struct mla_decode_args *a, char *why, size_t cap)
{
	const char *name = mla_kv_dtype_name(a->kv_dtype);

	if (a->topk > 0) {
		snprintf(why, cap, "sparse form: hip.baseline runs the dense form only");
		return 0;
	}
	if (!mla_kv_elem_size(a->kv_dtype)) {
		snprintf(why, cap, "kv dtype %s: the dense form reads bf16 or fp8_e4m3_fnuz only",
			 name ? name : "unknown");
		return 0;
	}
	return 1;
}

/*
 * Grid limits: both kernels put the batch (and the baseline the query position) on the grid's y / z
 * dimensions, which hold at most 65535 blocks on both vendors.
 */
static int baseline_supports(const struct mla_decode_args *a, char *why, size_t cap)
{
	if (!hip_dense_only(a, why, cap))
		return 0;
	if (a->batch > 65535 || a->s_q > 65535) {
		snprintf(why, cap, "batch %d, s_q %d: the grid holds at most 65535 of each", (int)a->batch,
			 (int)a->s_q);
		return 0;
	}
	return 1;
}

/*
 * hip.flash's sparse form (flash_sparse.hip): every sparse format, d_qk the format's, d_v 512; the
 * query rows (batch x s_q) on the grid's x, the head blocks (h_q / 16 at most) on its y.
 */
static int flash_sparse_supports(const struct mla_decode_args *a, char *why, size_t cap)
{
	const char *name = mla_kv_dtype_name(a->kv_dtype);

	if (mla_sparse_fmt_of(a->kv_dtype) < 0) {
		snprintf(why, cap, "kv dtype %s: the sparse form reads bf16, fp8_ds_mla(_fnuz) or fp8_model1(_fnuz)",
			 name ? name : "unknown");
		return 0;
	}
	if (a->d_qk != mla_kv_d_qk(a->kv_dtype) || a->d_v != MLA_D_V) {
		snprintf(why, cap, "d_qk %d, d_v %d: rows of %s have d_qk %d and d_v %d", (int)a->d_qk, (int)a->d_v, name,
			 (int)mla_kv_d_qk(a->kv_dtype), MLA_D_V);
		return 0;
	}
	if ((int64_t)a->batch * a->s_q > INT32_MAX || (int64_t)a->s_q * a->h_q > (1 << 24)) {
		snprintf(why, cap, "batch %d x s_q %d x h_q %d: too many query rows for the grid", (int)a->batch,
			 (int)a->s_q, (int)a->h_q);
		return 0;
	}
	return 1;
}

static int flash_supports(const struct mla_decode_args *a, char *why, size_t cap)
{
	if (a->topk > 0)
		return flash_sparse_supports(a, why, cap);
	if (!hip_dense_only(a, why, cap))
		return 0;
	if (a->batch > 65535) {
		snprintf(why, cap, "batch %d: the grid holds at most 65535 sequences", (int)a->batch);
		return 0;
	}
	return 1;
}

const struct mla_decode_impl mla_hip_baseline = {
	MLA_DECODE_ABI_VERSION,
	"hip.baseline",
	"hip",
	"plain fused kernel: one block per (batch, query, head), one pass over the KV with an online "
	"softmax in fp32, no matrix cores, no split",
	baseline_configs,
	baseline_workspace_size,
	mla_hip_baseline_launch,
	baseline_supports,
	NULL, /* prepare: nothing to do */
};

const struct mla_decode_impl mla_hip_flash = {
	MLA_DECODE_ABI_VERSION,
	"hip.flash",
	"hip",
	"split-KV flash decoding: BLOCK_H heads share each KV tile in shared memory, S = QK^T and "
	"O += PV on matrix cores (wgmma / mma.sync on sm_90, MFMA on gfx942), online softmax in "
	"registers, LSE-merge combine",
	flash_configs,
	flash_workspace_size,
	flash_launch,
	flash_supports,
	NULL, /* prepare: nothing to do */
};
