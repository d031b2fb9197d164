/*
 * flashmla_9edee0c_plugin.cu - FlashMLA 9edee0c's dense bf16 MLA decode for sm_90a
 * (deepseek-ai/FlashMLA, 2025-04) behind kernels/mla_decode.h, as the plugin "flashmla.decode"
 * (backend "hip": on NVIDIA the harness's GPU runtime is CUDA, kernels/hip/hip_compat.h).
 *
 * The old build, kept so that the card runs up to 2026-12-04, which bound it, can be rebuilt and
 * re-checked; the reference of every card run since is flashmla_plugin.cu, FlashMLA's current
 * dense decode (build_flashmla.sh picks the source by the FlashMLA tree's layout). Same plugin
 * name; the summary names the commit.
 *
 * Built by tools/gpu/build_flashmla.sh from FlashMLA's own sources, which are never copied into
 * this repository: FlashMLA 9edee0c (2025-04-29, the csrc/kernels layout), CUTLASS v3.9.0 headers.
 * The three FlashMLA kernel files are compiled into this translation unit (below), so that the
 * error macros of their host launchers, which print and exit(1), become "record the error and
 * return" (FlashMLA's utils.h is `#pragma once`: ours are defined after it and stay). flash_api.cpp
 * (torch) is not compiled: launch() does what its get_mla_metadata() and mha_fwd_kvcache_mla() do,
 * with the harness's buffers.
 *
 * One launch, all on args->stream, nothing allocated, no host synchronization:
 *   1. get_mla_metadata_kernel: tile scheduler metadata and num_splits from seqlens, on the device
 *      (a captured graph stays right when seqlens change in place);
 *   2. flash_fwd_splitkv_mla_kernel (PDL launch): each SM part writes out/lse directly for the
 *      sequences it owns whole, and the partial o/lse accumulators for split sequences;
 *   3. flash_fwd_mla_combine_kernel (PDL launch): merges the splits;
 *   4. s_q > 1 only, ours: FlashMLA writes lse as [b][s_q][h_q] (its q rows are s_q*h_q, head
 *      fastest); the harness's lse is [b][h_q][s_q]: FlashMLA writes into the workspace and
 *      lse_transpose_kernel copies it over (for s_q == 1 the layouts agree and FlashMLA writes
 *      args->lse itself).
 * The metadata, num_splits, the accumulators and the lse staging buffer are carved from the
 * workspace (workspace_size() depends on shapes and num_cus only).
 *
 * Semantics checked against the harness's (kernels/mla_decode.h), from FlashMLA's source:
 *   - q [b, s_q, h_q, 576] is FlashMLA's q viewed with one KV head: q_seq_per_hk = s_q*h_q rows of
 *     576, row = i*h_q + h; out [b, s_q, h_q, 512] is its output in the same memory order.
 *   - causal (s_q > 1): get_mask_len() masks s_q - i - 1 keys for query i, so query i sees
 *     [0, seqlen - s_q + i], the harness's convention.
 *   - lse: natural log on both paths (no-split: logf(L) + m/log2(e); combine: log2 lse / log2(e)).
 *   - no visible keys (seqlen 0, or causal rows before the first key): the row sum is 0, FlashMLA
 *     writes out 0 (o / 1) and lse +INFINITY (no-split path); a split row gets lse_accum -inf and
 *     the combine writes +inf and 0. That is the harness's convention: no fix-up needed.
 *   - NaN rows past the visible length: FlashMLA loads whole 64-row pages, sets the scores of rows
 *     at or past the border to -inf and zeroes V rows past seqlen in shared memory (fill_oob_V).
 *
 * Checked on the H200 (2026-12-01): tools/gpu/flashmla_smoke.c (a double CPU reference, empty
 * sequences, causal s_q 2..4, splits, graph replay bit-identical) and the harness's parity and
 * capture gates on every bf16 page-64 task of the smoke and standard tiers of
 * skills/mla_decode_hip_port_sm90.md.
 *
 * Unsupported (fmla_supports() says why, launch() returns MLA_EUNSUPPORTED): the sparse form of ABI 3
 * (topk > 0: flashmla.sparse_decode), every cache format but bf16 (fp8_e4m3_fnuz and the formats of
 * ABI 3), page_size != 64, more 64-row tiles of s_q*h_q than SMs, more than 160 SM parts (the combine's
 * largest split count), a batch whose metadata does not fit in shared memory, max_pages 0, and
 * shapes whose accumulator index overflows FlashMLA's int32 arithmetic.
 */
#include "mla_decode.h"

#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>

/* ------------------------------------------------------------- FlashMLA, with non-fatal checks */

#include "kernels/utils.h" /* FlashMLA's csrc/kernels/utils.h (-I FLASHMLA/csrc) */

/* First CUDA error a FlashMLA host launcher met in this launch(); cudaSuccess when none. */
static cudaError_t fmla_launcher_error = cudaSuccess;

#undef CHECK_CUDA
#define CHECK_CUDA(call)                                                                           \
	do {                                                                                       \
		cudaError_t fmla_e_ = (call);                                                      \
		if (fmla_e_ != cudaSuccess) {                                                      \
			if (fmla_launcher_error == cudaSuccess)                                    \
				fmla_launcher_error = fmla_e_;                                     \
			return;                                                                    \
		}                                                                                  \
	} while (0)

#undef FLASH_ASSERT
#define FLASH_ASSERT(cond)                                                                         \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			if (fmla_launcher_error == cudaSuccess)                                    \
				fmla_launcher_error = cudaErrorInvalidValue;                       \
			return;                                                                    \
		}                                                                                  \
	} while (0)

#include "kernels/get_mla_metadata.cu"
#include "kernels/mla_combine.cu"
#include "kernels/splitkv_mla.cu"

/* --------------------------------------------------------------------------------- the plugin */

static constexpr int FMLA_BLOCK_M = Config::BLOCK_SIZE_M;     /* q rows per tile: 64 */
static constexpr int FMLA_PAGE = Config::PAGE_BLOCK_SIZE;     /* KV rows per page: 64 */
static constexpr int FMLA_MAX_SPLITS = 160;                   /* MLA_NUM_SPLITS_SWITCH's largest case */
static constexpr size_t FMLA_SMEM_OPTIN = 227 * 1024;         /* sm_90 opt-in shared memory per block */
static constexpr size_t FMLA_ALIGN = 256;

/** Where each buffer lives in the workspace (offsets from the 256-aligned base). */
struct fmla_layout {
	int q_seq_per_hk;     /* s_q * h_q */
	int num_sm_parts;     /* num_cus / tiles of 64 q rows (FlashMLA's get_mla_metadata) */
	int total_num_splits; /* batch + num_sm_parts */
	size_t off_meta;      /* int [num_sm_parts][TileSchedulerMetaDataSize] */
	size_t off_splits;    /* int [batch + 1] */
	size_t off_lse_accum; /* float [total_num_splits][q_seq_per_hk] */
	size_t off_o_accum;   /* float [total_num_splits][q_seq_per_hk][512] */
	size_t off_lse;       /* float [batch][q_seq_per_hk], s_q > 1 only */
	size_t bytes;         /* total, with FMLA_ALIGN of slack to align the base */
};

static size_t align_up(size_t n)
{
	return (n + FMLA_ALIGN - 1) / FMLA_ALIGN * FMLA_ALIGN;
}

static void say(char *why, size_t why_cap, const char *fmt, ...)
{
	va_list ap;

	if (!why || !why_cap)
		return;
	va_start(ap, fmt);
	vsnprintf(why, why_cap, fmt, ap);
	va_end(ap);
}

/* The card schema's name of a kv_dtype (this plugin links nothing of the harness). */
static const char *kv_name(int32_t kv_dtype)
{
	switch (kv_dtype) {
	case MLA_KV_BF16: return "bf16";
	case MLA_KV_FP8_E4M3_FNUZ: return "fp8_e4m3_fnuz";
	case MLA_KV_FP8_DS_MLA: return "fp8_ds_mla";
	case MLA_KV_FP8_DS_MLA_FNUZ: return "fp8_ds_mla_fnuz";
	case MLA_KV_FP8_MODEL1: return "fp8_model1";
	case MLA_KV_FP8_MODEL1_FNUZ: return "fp8_model1_fnuz";
	}
	return "unknown";
}

/* Exact arch match, or with a feature suffix ("sm_90a"), as kernels/hip/hip_impls.c does. */
static int arch_is_sm90(const char *arch)
{
	return arch && !strncmp(arch, "sm_90", 5) && (arch[5] == '\0' || arch[5] == 'a' || arch[5] == ':');
}

/*
 * Whether FlashMLA runs tasks of these shapes: the ABI's supports(), also used by workspace_size()
 * and launch(). Reads only shapes and scalars; 1 when supported, 0 with the reason in why.
 */
static int fmla_supports(const struct mla_decode_args *shape, char *why, size_t why_cap)
{
	long long rows, tiles, parts, accum;
	int cus;

	if (!shape) {
		say(why, why_cap, "no shape");
		return 0;
	}
	if (shape->topk > 0) {
		say(why, why_cap, "the sparse form (topk %d): FlashMLA's dense decode reads block_table and "
		    "seqlens (flashmla.sparse_decode runs the sparse form)", shape->topk);
		return 0;
	}
	if (shape->kv_dtype != MLA_KV_BF16) {
		say(why, why_cap, "kv_dtype %s: FlashMLA's dense decode reads bf16 caches only",
		    kv_name(shape->kv_dtype));
		return 0;
	}
	if (shape->page_size != FMLA_PAGE) {
		say(why, why_cap, "page_size %d: FlashMLA reads pages of %d rows", shape->page_size, FMLA_PAGE);
		return 0;
	}
	if (shape->batch < 1 || shape->s_q < 1 || shape->h_q < 1 || shape->num_pages < 1 || shape->num_cus < 0) {
		say(why, why_cap, "batch %d, s_q %d, h_q %d, num_pages %d, num_cus %d: each must be >= 1",
		    shape->batch, shape->s_q, shape->h_q, shape->num_pages, shape->num_cus);
		return 0;
	}
	/*
	 * num_cus 0: asked by the planner, which has no device; judge for the 132 SMs of the H100/H200
	 * SXM that sm_90a FlashMLA targets (launch() asks again with the device's count).
	 */
	cus = shape->num_cus ? shape->num_cus : 132;
	if (shape->max_pages < 1) {
		say(why, why_cap, "max_pages %d: FlashMLA reads block_table[b][0] even for an empty sequence",
		    shape->max_pages);
		return 0;
	}
	rows = (long long)shape->s_q * shape->h_q;
	tiles = (rows + FMLA_BLOCK_M - 1) / FMLA_BLOCK_M;
	if (tiles > cus) {
		say(why, why_cap, "s_q*h_q %lld: %lld tiles of %d q rows exceed the %d SMs (FlashMLA's "
		    "num_sm_parts would be 0)", rows, tiles, FMLA_BLOCK_M, cus);
		return 0;
	}
	parts = cus / tiles;
	if (parts > FMLA_MAX_SPLITS) {
		say(why, why_cap, "%lld SM parts (num_cus %d, s_q*h_q %lld): FlashMLA's combine is built "
		    "for at most %d", parts, cus, rows, FMLA_MAX_SPLITS);
		return 0;
	}
	if (sizeof(int) * (2 * (size_t)shape->batch + 1) > FMLA_SMEM_OPTIN) {
		say(why, why_cap, "batch %d: get_mla_metadata keeps 2*batch+1 ints in shared memory (%zu "
		    "bytes at most)", shape->batch, FMLA_SMEM_OPTIN);
		return 0;
	}
	accum = ((long long)shape->batch + parts) * rows * Config::HEAD_DIM_V;
	if (accum > INT32_MAX || (long long)shape->batch * rows > INT32_MAX) {
		say(why, why_cap, "batch %d, s_q*h_q %lld: FlashMLA indexes its o accumulator (%lld floats) "
		    "with int32", shape->batch, rows, accum);
		return 0;
	}
	return 1;
}

/* The workspace layout of a supported shape. */
static fmla_layout layout_of(const struct mla_decode_args *a)
{
	fmla_layout l = {};
	size_t off = 0;
	int tiles;

	l.q_seq_per_hk = a->s_q * a->h_q;
	tiles = (l.q_seq_per_hk + FMLA_BLOCK_M - 1) / FMLA_BLOCK_M;
	l.num_sm_parts = a->num_cus / tiles;
	l.total_num_splits = a->batch + l.num_sm_parts;
	l.off_meta = off;
	off = align_up(off + sizeof(int) * (size_t)l.num_sm_parts * TileSchedulerMetaDataSize);
	l.off_splits = off;
	off = align_up(off + sizeof(int) * ((size_t)a->batch + 1));
	l.off_lse_accum = off;
	off = align_up(off + sizeof(float) * (size_t)l.total_num_splits * l.q_seq_per_hk);
	l.off_o_accum = off;
	off = align_up(off + sizeof(float) * (size_t)l.total_num_splits * l.q_seq_per_hk * Config::HEAD_DIM_V);
	l.off_lse = off;
	if (a->s_q > 1)
		off = align_up(off + sizeof(float) * (size_t)a->batch * l.q_seq_per_hk);
	l.bytes = off + FMLA_ALIGN;
	return l;
}

/* lse[b][h][i] = staged[b][i*h_q + h]: FlashMLA's [b][s_q][h_q] order to the harness's. */
static __global__ void lse_transpose_kernel(const float *__restrict__ staged, float *__restrict__ lse,
				     int batch, int s_q, int h_q)
{
	long long n = (long long)batch * s_q * h_q;

	for (long long t = blockIdx.x * (long long)blockDim.x + threadIdx.x; t < n;
	     t += (long long)gridDim.x * blockDim.x) {
		int i = (int)(t % s_q);
		long long bh = t / s_q;
		int h = (int)(bh % h_q);
		long long b = bh / h_q;

		lse[t] = staged[(b * s_q + i) * h_q + h];
	}
}

static int fmla_configs(const char *arch, struct mla_decode_config *out, int cap)
{
	if (!arch_is_sm90(arch))
		return MLA_EUNSUPPORTED;
	if (out && cap >= 1) {
		memset(&out[0], 0, sizeof(out[0]));
		out[0].block_n = FMLA_PAGE;
		out[0].block_h = FMLA_BLOCK_M;
		out[0].num_splits = 0;
		out[0].num_warps = Traits<cutlass::bfloat16_t>::NUM_THREADS / 32;
		out[0].num_stages = 2;
		snprintf(out[0].name, sizeof(out[0].name), "bn%d-bh%d-sp%d-w%d-st%d", out[0].block_n,
			 out[0].block_h, out[0].num_splits, out[0].num_warps, out[0].num_stages);
	}
	return 1;
}

static size_t fmla_workspace_size(const struct mla_decode_args *args, const struct mla_decode_config *cfg)
{
	(void)cfg;
	if (!args || !fmla_supports(args, NULL, 0))
		return 0;
	return layout_of(args).bytes;
}

static int report(const char *what, cudaError_t e)
{
	fprintf(stderr, "flashmla.decode: %s failed: %s (%d)\n", what, cudaGetErrorString(e), (int)e);
	return MLA_EDEVICE;
}

static int launch_checked(const struct mla_decode_args *a)
{
	fmla_layout l;
	char *base;
	cudaStream_t stream = (cudaStream_t)a->stream;
	int *meta, *splits;
	float *lse_out;
	cudaError_t e;

	if (!a->q || !a->kv_cache || !a->block_table || !a->seqlens || !a->out || !a->lse)
		return MLA_EINVAL;
	if (!fmla_supports(a, NULL, 0))
		return MLA_EUNSUPPORTED;
	/* TMA needs 16-byte aligned global addresses (q, the cache, out). */
	if (((uintptr_t)a->q | (uintptr_t)a->kv_cache | (uintptr_t)a->out) & 15u)
		return MLA_EUNSUPPORTED;
	l = layout_of(a);
	if (!a->workspace || a->workspace_bytes < l.bytes)
		return MLA_EUNSUPPORTED;
	base = (char *)(((uintptr_t)a->workspace + FMLA_ALIGN - 1) / FMLA_ALIGN * FMLA_ALIGN);
	meta = (int *)(base + l.off_meta);
	splits = (int *)(base + l.off_splits);
	lse_out = a->s_q > 1 ? (float *)(base + l.off_lse) : a->lse;

	/* Errors left by earlier work must not be blamed on (or hide) ours. */
	(void)cudaGetLastError();
	fmla_launcher_error = cudaSuccess;

	Mla_metadata_params mp = {};
	mp.seqlens_k_ptr = (int *)a->seqlens;
	mp.tile_scheduler_metadata_ptr = meta;
	mp.num_splits_ptr = splits;
	mp.batch_size = a->batch;
	mp.block_size_n = FMLA_PAGE;
	mp.fixed_overhead_num_blocks = Config::FIXED_OVERHEAD_NUM_BLOCKS;
	mp.num_sm_parts = l.num_sm_parts;
	run_get_mla_metadata_kernel(mp, stream);
	if (fmla_launcher_error != cudaSuccess)
		return report("get_mla_metadata", fmla_launcher_error);

	/* mha_fwd_kvcache_mla() with h_k 1: q and out as [b, s_q*h_q, 1, D] views of the same memory. */
	Flash_fwd_mla_params p = {};
	p.b = a->batch;
	p.s_q = a->s_q;
	p.q_seq_per_hk = l.q_seq_per_hk;
	p.d = MLA_D_QK;
	p.d_v = MLA_D_V;
	p.h_q = a->h_q;
	p.h_k = 1;
	p.num_blocks = a->num_pages;
	p.q_head_per_hk = a->h_q;
	p.is_causal = a->s_q > 1;
	p.scale_softmax = a->softmax_scale;
	p.scale_softmax_log2 = (float)(a->softmax_scale * M_LOG2E);
	p.q_ptr = (void *)a->q;
	p.k_ptr = (void *)a->kv_cache;
	p.o_ptr = a->out;
	p.softmax_lse_ptr = lse_out;
	p.q_batch_stride = (int64_t)l.q_seq_per_hk * MLA_D_QK;
	p.k_batch_stride = (int64_t)a->page_size * MLA_D_QK;
	p.o_batch_stride = (int64_t)l.q_seq_per_hk * MLA_D_V;
	p.q_row_stride = MLA_D_QK;
	p.k_row_stride = MLA_D_QK;
	p.o_row_stride = MLA_D_V;
	p.q_head_stride = MLA_D_QK;
	p.k_head_stride = MLA_D_QK;
	p.o_head_stride = MLA_D_V;
	p.block_table = (int *)a->block_table;
	p.block_table_batch_stride = a->max_pages;
	p.page_block_size = a->page_size;
	p.seqlens_k_ptr = (int *)a->seqlens;
	p.tile_scheduler_metadata_ptr = meta;
	p.num_sm_parts = l.num_sm_parts;
	p.num_splits_ptr = splits;
	p.total_num_splits = l.total_num_splits;
	p.softmax_lseaccum_ptr = base + l.off_lse_accum;
	p.oaccum_ptr = base + l.off_o_accum;

	run_flash_splitkv_mla_kernel<cutlass::bfloat16_t>(p, stream);
	if (fmla_launcher_error != cudaSuccess)
		return report("flash_fwd_splitkv_mla_kernel", fmla_launcher_error);
	run_flash_mla_combine_kernel<cutlass::bfloat16_t>(p, stream);
	if (fmla_launcher_error != cudaSuccess)
		return report("flash_fwd_mla_combine_kernel", fmla_launcher_error);

	if (a->s_q > 1) {
		long long n = (long long)a->batch * l.q_seq_per_hk;
		int blocks = (int)((n + 255) / 256 < 4096 ? (n + 255) / 256 : 4096);

		lse_transpose_kernel<<<blocks, 256, 0, stream>>>(lse_out, a->lse, a->batch, a->s_q, a->h_q);
		if ((e = cudaGetLastError()) != cudaSuccess)
			return report("lse_transpose_kernel", e);
	}
	return MLA_OK;
}

static int fmla_launch(const struct mla_decode_args *args, const struct mla_decode_config *cfg)
{
	(void)cfg;
	if (!args)
		return MLA_EINVAL;
	try {
		return launch_checked(args);
	} catch (...) {
		fprintf(stderr, "flashmla.decode: exception in launch\n");
		return MLA_EDEVICE;
	}
}

static const struct mla_decode_impl fmla_impl = {
	MLA_DECODE_ABI_VERSION,
	"flashmla.decode",
	"hip",
	"FlashMLA (deepseek-ai, 9edee0c) dense bf16 split-KV decode for sm_90a, pages of 64",
	fmla_configs,
	fmla_workspace_size,
	fmla_launch,
	fmla_supports,
	NULL, /* prepare: nothing to do */
};

extern "C" __attribute__((visibility("default"))) const struct mla_decode_impl *mla_decode_plugin(void)
{
	return &fmla_impl;
}
