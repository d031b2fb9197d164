/*
 * flashmla_sparse_plugin.cu - FlashMLA's sparse FP8 MLA decode for sm_90a (deepseek-ai/FlashMLA
 * main, csrc/sm90/decode/sparse_fp8: DeepSeek Sparse Attention of DeepSeek-V3.2 and V4) behind the
 * sparse form of kernels/mla_decode.h (ABI 3), as the plugin "flashmla.sparse_decode" (backend
 * "hip": on NVIDIA the harness's GPU runtime is CUDA, kernels/hip/hip_compat.h).
 *
 * Built by tools/gpu/build_flashmla.sh --sparse from FlashMLA's own sources, which are never copied
 * into this repository: FlashMLA 9241ae3 (2026-04-29), CUTLASS 147f567 (its csrc/cutlass pin). The
 * four kernel instantiations, FlashMLA's own files csrc/sm90/decode/sparse_fp8/instantiations/
 * {v32,model1}_persistent_h{64,128}.cu, are compiled unchanged into their own objects, each through
 * flashmla_sparse_unit.cu (which keeps the build reproducible); their host launcher reports errors
 * with KU_ASSERT / KU_CUDA_CHECK, which throw kerutils::KUException: caught here, at the ABI
 * boundary. The scheduler (smxx/decode/get_decoding_sched_meta) and the split-KV
 * combine (smxx/decode/combine), whose host launchers print and exit(1) on an error, are compiled
 * into this translation unit under our own CHECK_CUDA / FLASH_ASSERT ("record the error and
 * return"; FlashMLA's csrc/utils.h is `#pragma once`: ours are defined after it and stay), as in
 * flashmla_plugin.cu. csrc/api (torch) is not compiled: launch() does what sparse_decode.h's
 * sparse_attn_decode_interface() does for sm_90a (Decode_Sm90_Impl), with the harness's buffers.
 *
 * One launch, all on args->stream, nothing allocated, no host synchronization:
 *   0. fp8_ds_mla with topk_length only, ours: FlashMLA's sm_90a V3.2 kernel has no topk_length
 *      (its launcher asserts topk_length == nullptr); mask_indices_kernel writes the indices with
 *      every entry t >= topk_length[b] set to -1 into the workspace, which is the same operator
 *      (tests/ref.py masks exactly so), and FlashMLA reads those;
 *   1. smxx::decode get_mla_metadata_kernel: the tile scheduler's DecodingSchedMeta per SM part and
 *      num_splits, from topk (+ extra_topk) or topk_length / extra_topk_length read on the device;
 *      block_size_n 64 (block_size_topk) and fixed_overhead_num_blocks 5, num_sm_parts
 *      max(num_cus / s_q / (h_q/64), 1): Decode_Sm90_Impl::get_meta();
 *   2. sm90 flash_fwd_splitkv_mla_fp8_sparse_kernel<V32 or MODEL1, h_q> (a cluster of h_q/64 CTAs
 *      per query token): gathers the 64 rows of each topk block through the indices, dequantizes
 *      them to bf16 in shared memory, writes out/lse directly for the requests an SM part owns
 *      whole, and the partial o/lse accumulators of split requests;
 *   3. smxx::decode flash_fwd_mla_combine_kernel (PDL launch): merges the splits and applies the
 *      attention sink there (the kernel applies it itself on the no-split path);
 *   4. s_q > 1 only, ours: FlashMLA's lse is [b][s_q][h_q] (sparse_decode.h returns its
 *      transpose(1, 2)); the harness's is [b][h_q][s_q]: FlashMLA writes into the workspace and
 *      lse_transpose_kernel copies it over (for s_q == 1 the layouts agree).
 * The metadata, num_splits, the accumulators, the lse staging buffer and the masked indices are
 * carved from the workspace (workspace_size() depends on shapes and num_cus only).
 *
 * Semantics checked against the harness's (kernels/mla_decode.h), from FlashMLA's source (9241ae3):
 *   - q [b, s_q, h_q, d_qk], out [b, s_q, h_q, 512], indices [b, s_q, topk] are FlashMLA's tensors
 *     in the same memory order (h_kv 1); the caches are FlashMLA's k_cache [num_blocks,
 *     page_block_size, 1, bytes_per_token] with the page stride of mla_kv_page_bytes() (656 B a
 *     token for V3.2; for MODEL1 the 576-byte rows, then the 8-byte scale groups, the page padded
 *     to a multiple of 576 bytes, as tests/quant.py lays it out and the kernel addresses it).
 *   - an entry -1 (or, MODEL1, past topk_length / extra_topk_length) becomes token -1: FlashMLA
 *     loads page 0, slot UINT_MAX % page_size (inside the cache), zeroes its codes and scales (and,
 *     MODEL1, its RoPE values), and sets its score to -inf before the softmax (is_kv_valid), so a
 *     NaN row is never multiplied. V3.2 keeps the RoPE values of such a row: the score computed
 *     from them is replaced by -inf, never used.
 *   - lse: natural log without the sink on both paths; out scaled by 1 / (1 + exp(sink - lse))
 *     (no-split: 1/(L + exp2(sink*log2e - M)); combine: the sink joins the global lse of the
 *     output only). No valid entry: L 0 gives out 0 and lse +inf (no-split), lse_accum -inf and
 *     the combine writes +inf and 0, sink or not. That is the harness's convention.
 *   - the extra cache (MODEL1 only) joins the same softmax as blocks after the main topk's
 *     (padded to 64); its indices address extra_kv_cache with extra_page_size.
 *
 * Unsupported (sparse_supports() says why, launch() returns MLA_EUNSUPPORTED): the dense form
 * (flashmla.decode runs it), bf16 caches (FlashMLA's sparse decode reads fp8 caches only), the fnuz
 * formats (it decodes e4m3fn codes), h_q other than 64 or 128, topk or extra_topk not a multiple of
 * 64 (its launcher asserts the first; the kernel reads the extra indices in whole blocks of 64),
 * an extra cache with fp8_ds_mla (asserted), more than 160 SM parts, a batch whose scheduler state
 * (5*batch+1 ints) does not fit in shared memory, shapes whose strides or accumulator indices
 * overflow FlashMLA's int32 arithmetic, and buffers not 16-byte aligned (TMA).
 * Out of contract, not checked (the values live on the device): topk_length[b] > topk or
 * extra_topk_length[b] > extra_topk (FlashMLA then reads indices past the row), indices outside
 * [0, num_pages * page_size) other than -1.
 *
 * Compile-checked only (2026-12-05, nvcc 13.0, sm_90a, on a machine without a GPU; BENCHMARKS.md):
 * not yet run on an H100/H200. The first run: tools/gpu/flashmla_sparse_smoke.c (both formats,
 * h_q 64/128, s_q 1/2, topk_length, attn_sink +-inf, the extra cache, splits, graph replay against
 * a double reference), then the harness's parity and capture gates on the DSA cards' tasks
 * (FlashMLA's tests/test_flash_mla_sparse_decoding.py on the same shapes as a cross-check).
 */
#include "mla_decode.h"

#include <cuda_runtime.h>

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>

/* ------------------------------------------------------------- FlashMLA, with non-fatal checks */

#include "utils.h" /* FlashMLA's csrc/utils.h (-I FLASHMLA/csrc) */

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

#include "smxx/decode/get_decoding_sched_meta/get_decoding_sched_meta.cu"
#include "smxx/decode/combine/combine.cu"
#include "sm90/decode/sparse_fp8/splitkv_mla.h" /* the kernels: FlashMLA's instantiation objects */

/* --------------------------------------------------------------------------------- the plugin */

static constexpr int FMLA_BLOCK_M = 64;        /* KernelTemplate::BLOCK_M: heads per CTA */
static constexpr int FMLA_BLOCK_TOPK = 64;     /* TOPK_BLOCK_SIZE, Decode_Sm90_Impl's block_size_topk */
static constexpr int FMLA_FIXED_OVERHEAD = 5;  /* Decode_Sm90_Impl's fixed_overhead_num_blocks */
static constexpr int FMLA_NUM_THREADS = 384;   /* KernelTemplate::NUM_THREADS: 3 warpgroups */
static constexpr int FMLA_NUM_K_BUFS = 2;      /* KernelTemplate::NUM_K_BUFS */
static constexpr int FMLA_MAX_SPLITS = 160;    /* MLA_NUM_SPLITS_SWITCH's largest case */
static constexpr int FMLA_D_V = 512;
static constexpr size_t FMLA_SMEM_OPTIN = 227 * 1024; /* sm_90 opt-in shared memory per block */
static constexpr size_t FMLA_ALIGN = 256;
static constexpr int FMLA_DEFAULT_SMS = 132;   /* H100/H200 SXM, for a shape asked without a device */

/** Where each buffer lives in the workspace (offsets from the 256-aligned base). */
struct sparse_layout {
	int num_sm_parts;      /* max(num_cus / s_q / (h_q/64), 1) (Decode_Sm90_Impl::get_meta) */
	int total_num_splits;  /* batch + num_sm_parts */
	size_t off_meta;       /* DecodingSchedMeta [num_sm_parts] */
	size_t off_splits;     /* int [batch + 1] */
	size_t off_lse_accum;  /* float [total_num_splits][s_q][h_q] */
	size_t off_o_accum;    /* float [total_num_splits][s_q][h_q][512] */
	size_t off_lse;        /* float [batch][s_q][h_q], s_q > 1 only */
	size_t off_indices;    /* int [batch][s_q][topk], fp8_ds_mla only (masked by topk_length) */
	size_t bytes;          /* total, with FMLA_ALIGN of slack to align the base */
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

static int sm_parts(int num_cus, int s_q, int h_q)
{
	int parts = num_cus / s_q / (h_q / FMLA_BLOCK_M);

	return parts > 1 ? parts : 1;
}

/*
 * Whether FlashMLA's sm_90a sparse decode runs tasks of these shapes: the ABI's supports(), also
 * used by workspace_size() and launch(). Reads only shapes and scalars; 1 when supported, 0 with
 * the reason in why.
 */
static int sparse_supports(const struct mla_decode_args *shape, char *why, size_t why_cap)
{
	long long rows, parts, accum, page_bytes, extra_page_bytes;
	int model1, cus;

	if (!shape) {
		say(why, why_cap, "no shape");
		return 0;
	}
	if (shape->topk <= 0) {
		say(why, why_cap, "the dense form (topk 0): flashmla.sparse_decode runs the sparse form only "
		    "(flashmla.decode runs the dense one)");
		return 0;
	}
	if (shape->kv_dtype == MLA_KV_BF16) {
		say(why, why_cap, "kv_dtype bf16: FlashMLA's sparse decode reads fp8 caches only "
		    "(fp8_ds_mla, fp8_model1)");
		return 0;
	}
	if (mla_kv_is_fnuz(shape->kv_dtype)) {
		say(why, why_cap, "kv_dtype %s: FlashMLA decodes e4m3fn codes, not e4m3fnuz", kv_name(shape->kv_dtype));
		return 0;
	}
	if (shape->kv_dtype != MLA_KV_FP8_DS_MLA && shape->kv_dtype != MLA_KV_FP8_MODEL1) {
		say(why, why_cap, "kv_dtype %d (%s): FlashMLA's sparse decode reads fp8_ds_mla or fp8_model1",
		    shape->kv_dtype, kv_name(shape->kv_dtype));
		return 0;
	}
	model1 = mla_kv_is_model1(shape->kv_dtype);
	if (shape->d_qk != mla_kv_d_qk(shape->kv_dtype) || shape->d_v != FMLA_D_V) {
		say(why, why_cap, "d_qk %d, d_v %d with kv_dtype %s: FlashMLA's %s kernel is built for %d and %d",
		    shape->d_qk, shape->d_v, kv_name(shape->kv_dtype), model1 ? "MODEL1" : "V3.2",
		    mla_kv_d_qk(shape->kv_dtype), FMLA_D_V);
		return 0;
	}
	if (shape->h_q != 64 && shape->h_q != 128) {
		say(why, why_cap, "h_q %d: FlashMLA's sm_90a sparse decode is built for 64 or 128 heads", shape->h_q);
		return 0;
	}
	if (shape->batch < 1 || shape->s_q < 1 || shape->num_pages < 1 || shape->page_size < 1 ||
	    shape->num_cus < 0) {
		say(why, why_cap, "batch %d, s_q %d, num_pages %d, page_size %d, num_cus %d: each must be >= 1",
		    shape->batch, shape->s_q, shape->num_pages, shape->page_size, shape->num_cus);
		return 0;
	}
	if (shape->s_q > 65535) {
		say(why, why_cap, "s_q %d: FlashMLA's grid puts the query tokens on y (65535 at most)", shape->s_q);
		return 0;
	}
	if (shape->topk % FMLA_BLOCK_TOPK) {
		say(why, why_cap, "topk %d: FlashMLA's sparse decode asserts topk %% %d == 0", shape->topk,
		    FMLA_BLOCK_TOPK);
		return 0;
	}
	if (shape->extra_topk < 0 || (shape->extra_topk > 0 && !model1)) {
		say(why, why_cap, "extra_topk %d with kv_dtype %s: FlashMLA's sm_90a V3.2 kernel has no extra cache",
		    shape->extra_topk, kv_name(shape->kv_dtype));
		return 0;
	}
	if (shape->extra_topk % FMLA_BLOCK_TOPK) {
		say(why, why_cap, "extra_topk %d: FlashMLA reads the extra indices in whole blocks of %d",
		    shape->extra_topk, FMLA_BLOCK_TOPK);
		return 0;
	}
	if (shape->extra_topk > 0 && (shape->extra_num_pages < 1 || shape->extra_page_size < 1)) {
		say(why, why_cap, "extra cache of %d pages of %d rows: each must be >= 1", shape->extra_num_pages,
		    shape->extra_page_size);
		return 0;
	}
	/* stride_kv_block and the other strides are int in SparseAttnDecodeParams */
	page_bytes = (long long)mla_kv_page_bytes(shape->kv_dtype, shape->page_size);
	extra_page_bytes = shape->extra_topk > 0 ? (long long)mla_kv_page_bytes(shape->kv_dtype,
										 shape->extra_page_size) : 0;
	if (page_bytes > INT32_MAX || extra_page_bytes > INT32_MAX) {
		say(why, why_cap, "pages of %lld bytes: FlashMLA's page stride is an int", page_bytes > extra_page_bytes ?
		    page_bytes : extra_page_bytes);
		return 0;
	}
	/*
	 * num_cus 0: asked by the planner, which has no device; judge for the 132 SMs of the H100/H200
	 * SXM that sm_90a FlashMLA targets (launch() asks again with the device's count).
	 */
	cus = shape->num_cus ? shape->num_cus : FMLA_DEFAULT_SMS;
	parts = sm_parts(cus, shape->s_q, shape->h_q);
	if (parts > FMLA_MAX_SPLITS) {
		say(why, why_cap, "%lld SM parts (num_cus %d, s_q %d, h_q %d): FlashMLA's combine is built for at "
		    "most %d", parts, cus, shape->s_q, shape->h_q, FMLA_MAX_SPLITS);
		return 0;
	}
	if (sizeof(int) * (5 * (size_t)shape->batch + 1) > FMLA_SMEM_OPTIN) {
		say(why, why_cap, "batch %d: get_mla_metadata keeps 5*batch+1 ints in shared memory (%zu bytes at "
		    "most)", shape->batch, FMLA_SMEM_OPTIN);
		return 0;
	}
	rows = (long long)shape->s_q * shape->h_q;
	accum = ((long long)shape->batch + parts) * rows * FMLA_D_V;
	/* o_accum's split index * s_q*h_q*512, out's batch * s_q*h_q*512, q's and indices' batch strides */
	if (accum > INT32_MAX || (long long)shape->batch * rows * FMLA_D_V > INT32_MAX ||
	    (long long)shape->batch * rows * shape->d_qk > INT32_MAX ||
	    (long long)shape->batch * shape->s_q * (shape->topk > shape->extra_topk ? shape->topk : shape->extra_topk) >
		    INT32_MAX) {
		say(why, why_cap, "batch %d, s_q*h_q %lld, topk %d: FlashMLA indexes q, out, the indices and its o "
		    "accumulator (%lld floats) with int32", shape->batch, rows, shape->topk, accum);
		return 0;
	}
	return 1;
}

/* The workspace layout of a supported shape. */
static sparse_layout layout_of(const struct mla_decode_args *a)
{
	sparse_layout l = {};
	size_t off = 0, rows = (size_t)a->s_q * a->h_q;

	l.num_sm_parts = sm_parts(a->num_cus, a->s_q, a->h_q);
	l.total_num_splits = a->batch + l.num_sm_parts;
	l.off_meta = off;
	off = align_up(off + sizeof(DecodingSchedMeta) * (size_t)l.num_sm_parts);
	l.off_splits = off;
	off = align_up(off + sizeof(int) * ((size_t)a->batch + 1));
	l.off_lse_accum = off;
	off = align_up(off + sizeof(float) * (size_t)l.total_num_splits * rows);
	l.off_o_accum = off;
	off = align_up(off + sizeof(float) * (size_t)l.total_num_splits * rows * FMLA_D_V);
	l.off_lse = off;
	if (a->s_q > 1)
		off = align_up(off + sizeof(float) * (size_t)a->batch * rows);
	l.off_indices = off;
	if (a->kv_dtype == MLA_KV_FP8_DS_MLA)
		off = align_up(off + sizeof(int) * (size_t)a->batch * a->s_q * a->topk);
	l.bytes = off + FMLA_ALIGN;
	return l;
}

/* lse[b][h][i] = staged[b][i][h]: FlashMLA's [b][s_q][h_q] order to the harness's. */
static __global__ void lse_transpose_kernel(const float *__restrict__ staged, float *__restrict__ lse, int batch,
					    int s_q, int h_q)
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

/* masked[b][i][t] = t < topk_length[b] ? indices[b][i][t] : -1 (tests/ref.py's topk_length mask). */
static __global__ void mask_indices_kernel(const int32_t *__restrict__ indices, const int32_t *__restrict__ topk_length,
					   int32_t *__restrict__ masked, int batch, int s_q, int topk)
{
	long long n = (long long)batch * s_q * topk;

	for (long long e = blockIdx.x * (long long)blockDim.x + threadIdx.x; e < n;
	     e += (long long)gridDim.x * blockDim.x) {
		int t = (int)(e % topk);
		int b = (int)(e / ((long long)s_q * topk));

		masked[e] = t < __ldg(topk_length + b) ? __ldg(indices + e) : -1;
	}
}

static int grid_of(long long n)
{
	long long blocks = (n + 255) / 256;

	return (int)(blocks < 4096 ? (blocks > 0 ? blocks : 1) : 4096);
}

static int sparse_configs(const char *arch, struct mla_decode_config *out, int cap)
{
	if (!arch_is_sm90(arch))
		return MLA_EUNSUPPORTED;
	if (out && cap >= 1) {
		memset(&out[0], 0, sizeof(out[0]));
		out[0].block_n = FMLA_BLOCK_TOPK;
		out[0].block_h = FMLA_BLOCK_M;
		out[0].num_splits = MLA_DECODE_SPLITS_BALANCED; /* FlashMLA's tile scheduler */
		out[0].num_warps = FMLA_NUM_THREADS / 32;
		out[0].num_stages = FMLA_NUM_K_BUFS;
		snprintf(out[0].name, sizeof(out[0].name), "bn%d-bh%d-spbal-w%d-st%d", out[0].block_n,
			 out[0].block_h, out[0].num_warps, out[0].num_stages);
	}
	return 1;
}

static size_t sparse_workspace_size(const struct mla_decode_args *args, const struct mla_decode_config *cfg)
{
	(void)cfg;
	if (!args || !sparse_supports(args, NULL, 0))
		return 0;
	return layout_of(args).bytes;
}

static int report(const char *what, cudaError_t e)
{
	fprintf(stderr, "flashmla.sparse_decode: %s failed: %s (%d)\n", what, cudaGetErrorString(e), (int)e);
	return MLA_EDEVICE;
}

static void run_kernel(const SparseAttnDecodeParams &p)
{
	using namespace sm90::decode::sparse_fp8;

	if (p.model_type == ModelType::V32) {
		if (p.h_q == 64)
			run_flash_splitkv_mla_fp8_sparse_kernel<ModelType::V32, 64>(p);
		else
			run_flash_splitkv_mla_fp8_sparse_kernel<ModelType::V32, 128>(p);
	} else {
		if (p.h_q == 64)
			run_flash_splitkv_mla_fp8_sparse_kernel<ModelType::MODEL1, 64>(p);
		else
			run_flash_splitkv_mla_fp8_sparse_kernel<ModelType::MODEL1, 128>(p);
	}
}

static int launch_checked(const struct mla_decode_args *a)
{
	sparse_layout l;
	char *base;
	cudaStream_t stream = (cudaStream_t)a->stream;
	DecodingSchedMeta *meta;
	int *splits;
	int32_t *indices = (int32_t *)a->indices;
	float *lse_out;
	int model1 = mla_kv_is_model1(a->kv_dtype);
	int rows = a->s_q * a->h_q;
	cudaError_t e;

	if (!a->q || !a->kv_cache || !a->indices || !a->out || !a->lse)
		return MLA_EINVAL;
	if (a->extra_topk > 0 && (!a->extra_kv_cache || !a->extra_indices))
		return MLA_EINVAL;
	if (!sparse_supports(a, NULL, 0))
		return MLA_EUNSUPPORTED;
	/* TMA (q, out) and the 128-bit loads of the caches need 16-byte aligned addresses. */
	if (((uintptr_t)a->q | (uintptr_t)a->kv_cache | (uintptr_t)a->out | (uintptr_t)a->extra_kv_cache) & 15u)
		return MLA_EUNSUPPORTED;
	/* the kernel reads the validity of two entries at once (int2) */
	if (((uintptr_t)a->indices | (uintptr_t)a->extra_indices) & 7u)
		return MLA_EUNSUPPORTED;
	l = layout_of(a);
	if (!a->workspace || a->workspace_bytes < l.bytes)
		return MLA_EUNSUPPORTED;
	base = (char *)(((uintptr_t)a->workspace + FMLA_ALIGN - 1) / FMLA_ALIGN * FMLA_ALIGN);
	meta = (DecodingSchedMeta *)(base + l.off_meta);
	splits = (int *)(base + l.off_splits);
	lse_out = a->s_q > 1 ? (float *)(base + l.off_lse) : a->lse;

	/* Errors left by earlier work must not be blamed on (or hide) ours. */
	(void)cudaGetLastError();
	fmla_launcher_error = cudaSuccess;

	if (!model1 && a->topk_length) {
		long long n = (long long)a->batch * a->s_q * a->topk;

		indices = (int32_t *)(base + l.off_indices);
		mask_indices_kernel<<<grid_of(n), 256, 0, stream>>>(a->indices, a->topk_length, indices, a->batch,
								     a->s_q, a->topk);
		if ((e = cudaGetLastError()) != cudaSuccess)
			return report("mask_indices_kernel", e);
	}

	/* sparse_attn_decode_interface()'s GetDecodeSchedMetaParams (extra_topk 0: no extra cache). */
	GetDecodeSchedMetaParams mp = {};
	mp.b = a->batch;
	mp.s_q = a->s_q;
	mp.block_size_n = FMLA_BLOCK_TOPK;
	mp.fixed_overhead_num_blocks = FMLA_FIXED_OVERHEAD;
	mp.topk = a->topk;
	mp.extra_topk = a->extra_topk;
	mp.topk_length = model1 ? (int *)a->topk_length : NULL; /* V3.2: masked into the indices */
	mp.extra_topk_length = a->extra_topk > 0 ? (int *)a->extra_topk_length : NULL;
	mp.seqlens_k_ptr = NULL;
	mp.tile_scheduler_metadata_ptr = meta;
	mp.num_splits_ptr = splits;
	mp.num_sm_parts = l.num_sm_parts;
	mp.stream = stream;
	smxx::decode::run_get_decoding_sched_meta_kernel(mp);
	if (fmla_launcher_error != cudaSuccess)
		return report("get_mla_metadata", fmla_launcher_error);

	/* sparse_attn_decode_interface()'s SparseAttnDecodeParams: contiguous tensors, h_kv 1. */
	SparseAttnDecodeParams p = {};
	p.b = a->batch;
	p.s_q = a->s_q;
	p.h_q = a->h_q;
	p.h_kv = 1;
	p.d_qk = a->d_qk;
	p.d_v = a->d_v;
	p.sm_scale = a->softmax_scale;
	p.sm_scale_div_log2 = (float)(a->softmax_scale * M_LOG2E);
	p.num_blocks = a->num_pages;
	p.page_block_size = a->page_size;
	p.topk = a->topk;
	p.model_type = model1 ? ModelType::MODEL1 : ModelType::V32;
	p.q = (cutlass::bfloat16_t *)a->q;
	p.kv = (cutlass::bfloat16_t *)a->kv_cache;
	p.indices = indices;
	p.topk_length = model1 ? (int *)a->topk_length : NULL;
	p.attn_sink = (float *)a->attn_sink;
	p.lse = lse_out;
	p.out = (cutlass::bfloat16_t *)a->out;
	p.extra_num_blocks = a->extra_topk > 0 ? a->extra_num_pages : 0;
	p.extra_page_block_size = a->extra_topk > 0 ? a->extra_page_size : 0;
	p.extra_topk = a->extra_topk;
	p.extra_kv = a->extra_topk > 0 ? (cutlass::bfloat16_t *)a->extra_kv_cache : NULL;
	p.extra_indices = a->extra_topk > 0 ? (int *)a->extra_indices : NULL;
	p.extra_topk_length = a->extra_topk > 0 ? (int *)a->extra_topk_length : NULL;
	p.stride_q_b = rows * a->d_qk;
	p.stride_q_s_q = a->h_q * a->d_qk;
	p.stride_q_h_q = a->d_qk;
	p.stride_kv_block = (int)mla_kv_page_bytes(a->kv_dtype, a->page_size);
	p.stride_kv_row = (int)mla_kv_token_bytes(a->kv_dtype);
	p.stride_indices_b = a->s_q * a->topk;
	p.stride_indices_s_q = a->topk;
	p.stride_lse_b = rows;
	p.stride_lse_s_q = a->h_q;
	p.stride_o_b = rows * FMLA_D_V;
	p.stride_o_s_q = a->h_q * FMLA_D_V;
	p.stride_o_h_q = FMLA_D_V;
	if (a->extra_topk > 0) {
		p.stride_extra_kv_block = (int)mla_kv_page_bytes(a->kv_dtype, a->extra_page_size);
		p.stride_extra_kv_row = (int)mla_kv_token_bytes(a->kv_dtype);
		p.stride_extra_indices_b = a->s_q * a->extra_topk;
		p.stride_extra_indices_s_q = a->extra_topk;
	}
	p.stream = stream;
	p.lse_accum = (float *)(base + l.off_lse_accum);
	p.o_accum = (float *)(base + l.off_o_accum);
	p.stride_lse_accum_split = rows;
	p.stride_lse_accum_s_q = a->h_q;
	p.stride_o_accum_split = rows * FMLA_D_V;
	p.stride_o_accum_s_q = a->h_q * FMLA_D_V;
	p.stride_o_accum_h_q = FMLA_D_V;
	p.tile_scheduler_metadata_ptr = meta;
	p.num_splits_ptr = splits;
	p.num_sm_parts = l.num_sm_parts;
	run_kernel(p); /* throws kerutils::KUException on an assertion or a CUDA error */

	CombineParams cp = {};
	cp.b = a->batch;
	cp.s_q = a->s_q;
	cp.h_q = a->h_q;
	cp.d_v = FMLA_D_V;
	cp.lse = lse_out;
	cp.out = a->out;
	cp.stride_lse_b = p.stride_lse_b;
	cp.stride_lse_s_q = p.stride_lse_s_q;
	cp.stride_o_b = p.stride_o_b;
	cp.stride_o_s_q = p.stride_o_s_q;
	cp.stride_o_h_q = p.stride_o_h_q;
	cp.lse_accum = p.lse_accum;
	cp.o_accum = p.o_accum;
	cp.stride_lse_accum_split = p.stride_lse_accum_split;
	cp.stride_lse_accum_s_q = p.stride_lse_accum_s_q;
	cp.stride_o_accum_split = p.stride_o_accum_split;
	cp.stride_o_accum_s_q = p.stride_o_accum_s_q;
	cp.stride_o_accum_h_q = p.stride_o_accum_h_q;
	cp.tile_scheduler_metadata_ptr = meta;
	cp.num_splits_ptr = splits;
	cp.num_sm_parts = l.num_sm_parts;
	cp.attn_sink = (float *)a->attn_sink;
	cp.stream = stream;
	smxx::decode::run_flash_mla_combine_kernel<cutlass::bfloat16_t>(cp);
	if (fmla_launcher_error != cudaSuccess)
		return report("flash_fwd_mla_combine_kernel", fmla_launcher_error);

	if (a->s_q > 1) {
		lse_transpose_kernel<<<grid_of((long long)a->batch * rows), 256, 0, stream>>>(lse_out, a->lse, a->batch,
											 a->s_q, a->h_q);
		if ((e = cudaGetLastError()) != cudaSuccess)
			return report("lse_transpose_kernel", e);
	}
	return MLA_OK;
}

static int sparse_launch(const struct mla_decode_args *args, const struct mla_decode_config *cfg)
{
	(void)cfg;
	if (!args)
		return MLA_EINVAL;
	try {
		return launch_checked(args);
	} catch (const std::exception &ex) {
		fprintf(stderr, "flashmla.sparse_decode: %s\n", ex.what());
		return MLA_EDEVICE;
	} catch (...) {
		fprintf(stderr, "flashmla.sparse_decode: exception in launch\n");
		return MLA_EDEVICE;
	}
}

static const struct mla_decode_impl sparse_impl = {
	MLA_DECODE_ABI_VERSION,
	"flashmla.sparse_decode",
	"hip",
	"FlashMLA (deepseek-ai, 9241ae3) sparse fp8 decode (DSA: V3.2 fp8_ds_mla, V4 fp8_model1) for sm_90a",
	sparse_configs,
	sparse_workspace_size,
	sparse_launch,
	sparse_supports,
	NULL, /* prepare: nothing to do */
};

extern "C" __attribute__((visibility("default"))) const struct mla_decode_impl *mla_decode_plugin(void)
{
	return &sparse_impl;
}
