/*
 * mla_decode.h - the one C ABI behind which every MLA decode implementation sits.
 *
 * Operator: multi-head latent attention (MLA) decode in the absorbed form of DeepSeek-V2/V3
 * (DeepSeek-V2 paper, arXiv:2405.04434, section 2.1; weight absorption as in FlashMLA). Semantics
 * and tensor layouts follow FlashMLA's decode API (flash_mla_with_kvcache), the de facto standard:
 *
 *   for each batch b, query position i < s_q, head h:
 *     n      = seqlens[b] - s_q + 1 + i            (causal when s_q > 1; keys [0, n) are visible)
 *     s_j    = softmax_scale * dot(q[b,i,h,0:576], K_j)            for j < n, K_j = cache row j
 *     lse    = log(sum_j exp(s_j))                 (natural log; +inf when n <= 0)
 *     out    = sum_j exp(s_j - lse) * V_j          (V_j = first 512 dims of row j; 0 when n <= 0)
 *
 * Row j of sequence b lives at cache page block_table[b][j / page_size], slot j % page_size.
 * Implementations must never read a cache row at or past the visible length: the harness fills
 * those slots with NaN, and unused block_table entries with a sentinel far outside the cache.
 *
 * The sparse form (ABI 3; DeepSeek Sparse Attention, DeepSeek-V3.2 and V4) follows FlashMLA's
 * sparse decode (flash_mla_with_kvcache with indices; csrc/api/sparse_decode.h and
 * tests/ref.py::ref_sparse_attn_decode at FlashMLA main 9241ae3). It is selected by topk > 0 and
 * then indices != NULL; block_table and seqlens are NULL (the indices address the cache directly),
 * h_kv is 1 and nothing is causal:
 *
 *   for each batch b, query position i < s_q, head h, over the valid entries t of row (b, i):
 *     entry t < topk is valid when r = indices[b][i][t] != -1 and (topk_length == NULL or
 *       t < topk_length[b]); it names cache row r = page * page_size + slot, i.e. page r / page_size,
 *       slot r % page_size (0 <= r < num_pages * page_size; any other negative value is out of contract)
 *     with an extra cache (extra_topk > 0), entries t < extra_topk of extra_indices[b][i] name rows of
 *       extra_kv_cache the same way (extra_topk_length optional); they join the same softmax
 *     s_t    = softmax_scale * dot(q[b,i,h,0:d_qk], K_t)    (K_t: the decoded row, d_qk values)
 *     lse    = log(sum_t exp(s_t))                           (+inf when no entry is valid)
 *     out    = sum_t exp(s_t - lse) * V_t                    (V_t: its first d_v values; 0 when none)
 *     with attn_sink (a [h_q] fp32, values may be +-inf): out *= 1 / (1 + exp(attn_sink[h] - lse));
 *       lse is reported without the sink (FlashMLA's ref.py)
 * A row with no valid entry gives out 0 and lse +inf (FlashMLA: "lonely q"), sink or not. Entries
 * past topk_length and rows no index names are NaN in the harness's caches: an implementation that
 * reads an unselected row fails parity, unless it discards the value before it is multiplied.
 *
 * Cache formats of the sparse form (kv_dtype; mla_numeric.h "Paged cache formats" has the exact
 * bytes): bf16 (rows of 576 bf16, as the dense form), fp8_ds_mla (DeepSeek-V3.2, 656 bytes a token)
 * and fp8_model1 (DeepSeek-V4, 584 bytes a token), the last two also with e4m3fnuz codes for
 * gfx942 (fp8_ds_mla_fnuz, fp8_model1_fnuz). d_qk and d_v follow the format: 576 and 512 for
 * bf16 and fp8_ds_mla (V is the 512 latent values), 512 and 512 for fp8_model1 (V is the whole
 * row: 448 latent values and the 64 RoPE values). The dense form reads bf16 or fp8_e4m3_fnuz only.
 *
 * Contract of launch(): a GPU launch enqueues on args->stream, allocates nothing and never
 * synchronizes the host; a CPU launch (stream NULL) returns when done. Either writes only out, lse
 * and its workspace, reads its inputs without modifying them, and is deterministic (same inputs,
 * bit-identical outputs, wherever the output buffers are). The harness owns all memory; pointers
 * are device pointers for a "hip" backend and host pointers for a "cpu" backend.
 *
 * Capture safety: launch() may read seqlens and block_table only on the device (a graph captured
 * once is replayed after both change in place); host-side decisions may depend only on the shapes
 * and scalars of mla_decode_args.
 *
 * Plugins (loaded with dlopen by `--baseline-lib/--candidate-lib FILE.so`, or named by a plan):
 * an implementation built elsewhere, with any toolchain, is a shared object that includes only this
 * header and exports one C symbol,
 *
 *   const struct mla_decode_impl *mla_decode_plugin(void);      (MLA_DECODE_PLUGIN_SYMBOL)
 *
 * returning a descriptor that lives as long as the library is loaded (static storage). The harness
 * reads descriptor->abi_version first and refuses the library unless it equals the harness's
 * MLA_DECODE_ABI_VERSION; only then does it look at the other fields. Rules of the ABI:
 *   - C calling convention and the platform's C data layout (x86_64/aarch64 SysV LP64): the
 *     structs below are plain C, natural alignment, no packing. From C++ wrap the symbol and the
 *     callbacks in extern "C" and never let an exception cross them.
 *   - abi_version is the first member of struct mla_decode_impl in every version, so that any
 *     harness can read it. Any change to a struct, an enum value or the contract in this file
 *     increments MLA_DECODE_ABI_VERSION; a plugin is accepted only for the exact version it was
 *     compiled against (no partial compatibility: a mismatch is refused with both numbers).
 *   - name is unique (it must not name a built-in implementation; "<team>.<kernel>" is the
 *     convention), backend is "cpu" (host pointers) or "hip" (device pointers of the harness's
 *     GPU runtime; the plugin must use the same runtime and device as the harness). configs(),
 *     workspace_size() and launch() follow the contract above and are called from one thread at
 *     a time, possibly in a forked worker process: a plugin keeps no state across fork that would
 *     break there (no GPU context created in a constructor).
 *   - mla_decode_plugin() is called once per load; it may not fail partially: NULL means "no
 *     implementation" and is reported as an error.
 * The evidence binds a plugin by the sha256 of its file: result.json records it, and --record /
 * --verify refuse evidence whose plugin file changed since the run.
 *
 * Python implementations (Triton, TileLang, torch, numpy): one .py module file is one
 * implementation, with no C written by its author. The Python side of this same contract (the
 * module-level NAME, BACKEND, KV_DTYPES, configs(arch), workspace_size(), prepare(), launch(), and
 * the shapes and dtypes of the tensors `args` hands over) is written once, in
 * kernels/python/mla_decode.py; harness/pyimpl.h is the bridge that presents such a module as a
 * struct mla_decode_impl of this ABI.
 *
 * An implementation whose supports() is NULL runs the dense form with kv_dtype bf16 or
 * fp8_e4m3_fnuz only: the harness hands a sparse task, or a format added after ABI 2, only to an
 * implementation whose supports() accepted its shape.
 *
 * History: version 2 appended supports() and prepare() after launch; version 3 appended the sparse
 * form (indices .. d_v in mla_decode_args) and the kv_dtype values 3 to 6.
 */
#ifndef MLA_DECODE_H
#define MLA_DECODE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Version of this ABI (structs, enums, contract). A plugin's descriptor must carry exactly this. */
#define MLA_DECODE_ABI_VERSION 3

/** The one symbol a plugin exports, and its type. */
#define MLA_DECODE_PLUGIN_SYMBOL "mla_decode_plugin"
struct mla_decode_impl;
typedef const struct mla_decode_impl *(*mla_decode_plugin_fn)(void);

#define MLA_D_QK 576   /* 512 latent (kv_lora_rank) + 64 rope dims */
#define MLA_D_V 512    /* V is the first 512 dims of the cache row */
#define MLA_D_ROPE 64
#define MLA_MODEL1_D_QK 512 /* DeepSeek-V4 (FlashMLA's MODEL1): 448 latent + 64 rope dims */
#define MLA_MODEL1_D_V 512  /* V is the whole row */

/** KV cache element type. */
enum mla_kv_dtype {
	MLA_KV_BF16 = 1,          /* bf16, kv_scale ignored (1.0) */
	MLA_KV_FP8_E4M3_FNUZ = 2, /* fp8 e4m3 fnuz codes; real value = decoded code * kv_scale (dense only) */
	/* ABI 3, sparse form only; kv_scale ignored (the scales are in the cache): */
	MLA_KV_FP8_DS_MLA = 3,       /* DeepSeek-V3.2: 512 e4m3fn codes, 4 fp32 scales, 64 bf16 rope: 656 B */
	MLA_KV_FP8_DS_MLA_FNUZ = 4,  /* the same bytes with e4m3fnuz codes (gfx942) */
	MLA_KV_FP8_MODEL1 = 5,       /* DeepSeek-V4: 448 e4m3fn codes, 64 bf16 rope, 7 e8m0 scales: 584 B */
	MLA_KV_FP8_MODEL1_FNUZ = 6,  /* the same bytes with e4m3fnuz codes (gfx942) */
};

/** Return codes of launch() and configs(). */
enum mla_status {
	MLA_OK = 0,
	MLA_EINVAL = -1,       /* arguments out of contract (null pointer, bad shape) */
	MLA_EUNSUPPORTED = -2, /* this config cannot run these args (e.g. workspace too small) */
	MLA_EDEVICE = -3,      /* GPU runtime error while enqueueing */
	MLA_ENODEVICE = -4,    /* backend not built into this binary (e.g. no GPU toolchain) */
};

/**
 * Arguments of one MLA decode launch. All tensors are dense, row-major, in the layouts below.
 *   q           bf16  [batch, s_q, h_q, 576]
 *   kv_cache    bf16 or fp8_e4m3_fnuz codes [num_pages, page_size, 1, 576]
 *   block_table int32 [batch, max_pages]  page index of each sequence's j-th page
 *   seqlens     int32 [batch]             keys per sequence, 0 <= seqlens[b] <= max_pages*page_size
 *   out         bf16  [batch, s_q, h_q, 512]   (written)
 *   lse         fp32  [batch, h_q, s_q]        (written, natural log)
 *   workspace   workspace_size() bytes, or NULL when that is 0
 */
struct mla_decode_args {
	const void *q;
	const void *kv_cache;
	const int32_t *block_table;
	const int32_t *seqlens;
	void *out;
	float *lse;
	void *workspace;
	size_t workspace_bytes;

	int32_t batch;
	int32_t s_q;
	int32_t h_q;
	int32_t num_pages;
	int32_t page_size;   /* 1, 16 or 64 (any positive value is legal) */
	int32_t max_pages;   /* columns of block_table */
	int32_t kv_dtype;    /* enum mla_kv_dtype */
	float softmax_scale; /* explicit, e.g. 192^-0.5 * mscale^2 for DeepSeek-V3 */
	float kv_scale;      /* fp8 per-tensor scale (1.0 for bf16) */

	int32_t num_cus;     /* compute units (AMD) / SMs (NVIDIA) of the device; CPU: cores to use */
	void *stream;        /* hipStream_t / cudaStream_t; NULL for the CPU */

	/*
	 * ABI 3: the sparse form (see the top of this file), selected by topk > 0. Dense form: every
	 * pointer below NULL and every count 0 but d_qk 576 and d_v 512. Sparse form: block_table and
	 * seqlens NULL, max_pages 0; kv_cache (and extra_kv_cache) hold num_pages (extra_num_pages)
	 * pages of mla_kv_page_bytes(kv_dtype, page_size) bytes each.
	 *   indices           int32 [batch, s_q, topk]        page * page_size + slot, or -1
	 *   topk_length       int32 [batch], or NULL          valid prefix of each batch's rows
	 *   attn_sink         fp32  [h_q], or NULL            per-head sink logit (may be +-inf)
	 *   extra_kv_cache    same format, [extra_num_pages, extra_page_size, 1, .], or NULL
	 *   extra_indices     int32 [batch, s_q, extra_topk]  into extra_kv_cache (NULL when extra_topk 0)
	 *   extra_topk_length int32 [batch], or NULL
	 * Capture safety: indices, topk_length and extra_* values may change in place between replays.
	 */
	const int32_t *indices;
	const int32_t *topk_length;
	const float *attn_sink;
	const void *extra_kv_cache;
	const int32_t *extra_indices;
	const int32_t *extra_topk_length;
	int32_t topk;            /* 0: dense form */
	int32_t extra_topk;      /* 0: no extra cache */
	int32_t extra_num_pages;
	int32_t extra_page_size;
	int32_t d_qk;            /* 576, or 512 for fp8_model1(_fnuz) */
	int32_t d_v;             /* 512 */
};

/**
 * One point of an implementation's config space. Fields an implementation does not use are 0.
 * num_splits 0 means "auto": the implementation picks a split count from the shapes and num_cus
 * (never from seqlens values, which may change under a captured graph); -1 means "balanced": the
 * implementation divides the KV tiles of all sequences evenly between its blocks on the device
 * (FlashMLA's tile scheduler; hip.flash's wgmma configs "...-spbal-..."), so the work of a block
 * does follow seqlens, read on the device at each launch.
 */
#define MLA_DECODE_SPLITS_BALANCED (-1) /* num_splits: balanced (name token "spbal") */

struct mla_decode_config {
	char name[48];      /* canonical, unique within the implementation, e.g. "bn64-bh16-sp0-w4-st2" */
	int32_t block_n;    /* keys per KV tile (BLOCK_N) */
	int32_t block_h;    /* query heads sharing each KV tile load (BLOCK_H) */
	int32_t num_splits; /* KV splits per sequence (split-KV / flash decoding); 0 = auto, -1 = balanced */
	int32_t num_warps;  /* GPU: warps (NVIDIA) or waves (AMD) per block; CPU: threads (0 = num_cus) */
	int32_t num_stages; /* GPU: pipelining depth of KV tile loads */
};

/**
 * Descriptor of one implementation.
 *   name     "cpu.naive", "cpu.splitkv", "hip.baseline", "hip.flash"
 *   backend  "cpu" or "hip"; decides where the harness puts the buffers
 *   configs  writes up to cap configs valid for arch ("x86_64", "aarch64", "sm_90", "gfx942", ...)
 *            into out and returns how many exist (which may exceed cap), or MLA_EUNSUPPORTED for an
 *            arch it has no code for. Callable without a device.
 *   workspace_size  bytes of workspace a launch with these args and config needs (0 = none).
 *   launch   runs (CPU) or enqueues (GPU) the computation; returns enum mla_status.
 *   supports (ABI 2, optional) whether tasks of these shapes run, with the reason when not.
 *   prepare  (ABI 2, optional) once per task, config and buffer set in the worker, before the first launch.
 */
struct mla_decode_impl {
	uint32_t abi_version; /* MLA_DECODE_ABI_VERSION; always the first member, in every version */
	const char *name;
	const char *backend;
	const char *summary;
	int (*configs)(const char *arch, struct mla_decode_config *out, int cap);
	size_t (*workspace_size)(const struct mla_decode_args *args, const struct mla_decode_config *cfg);
	int (*launch)(const struct mla_decode_args *args, const struct mla_decode_config *cfg);
	/**
	 * Optional (NULL: every task is supported). Whether this implementation runs tasks of these
	 * shapes: shape carries the shapes and scalars only (every pointer NULL, stream NULL) and the
	 * call needs no device. Returns 1 when supported; 0 when not, with a short reason written to
	 * why (e.g. "page_size 16: FlashMLA reads pages of 64 rows"). The planner calls it to list, per
	 * implementation, the tasks it skips and why (never a silent pass).
	 */
	int (*supports)(const struct mla_decode_args *shape, char *why, size_t why_cap);
	/**
	 * Optional (NULL: nothing to do). Called in the worker once per task, config and buffer set,
	 * all before the config's first launch, outside every timed region and outside graph capture:
	 * JIT compile, autotune, host-side setup, a graph of its own over these buffers. The harness
	 * launches a config on a few buffer sets (each input set into the first output pair, set 0
	 * into the second, each set's keys under a fresh q at two addresses) and prepares every one of
	 * them first: a launch never sees buffers prepare() was not given. It may synchronize and
	 * allocate (what it allocates it owns until the process ends). Returns enum mla_status.
	 */
	int (*prepare)(const struct mla_decode_args *args, const struct mla_decode_config *cfg);
};

/** Built-in implementations in a fixed order, then registered ones; NULL past the end. */
const struct mla_decode_impl *mla_decode_impl_at(int i);

/** The implementation with this name (built-in or registered), or NULL. */
const struct mla_decode_impl *mla_decode_impl_find(const char *name);

/**
 * Add an implementation to the registry for this process (a loaded plugin, a test
 * implementation). Returns MLA_OK; MLA_EINVAL for a wrong abi_version, a missing field or a name
 * already taken; MLA_EUNSUPPORTED when the registry is full.
 */
int mla_decode_impl_register(const struct mla_decode_impl *impl);

/**
 * Bytes per KV element of a dense-form dtype (2 for bf16, 1 for fp8_e4m3_fnuz), 0 for any other
 * (the per-block-scaled formats have no element size: see mla_kv_token_bytes()).
 */
static inline size_t mla_kv_elem_size(int32_t kv_dtype)
{
	return kv_dtype == MLA_KV_BF16 ? 2 : kv_dtype == MLA_KV_FP8_E4M3_FNUZ ? 1 : 0;
}

/** 1 for the formats with per-block scales in the cache (fp8_ds_mla, fp8_model1 and their fnuz twins). */
static inline int mla_kv_is_blockscaled(int32_t kv_dtype)
{
	return kv_dtype >= MLA_KV_FP8_DS_MLA && kv_dtype <= MLA_KV_FP8_MODEL1_FNUZ;
}

/** 1 for the fp8_model1 layouts (d_qk 512, d_v 512). */
static inline int mla_kv_is_model1(int32_t kv_dtype)
{
	return kv_dtype == MLA_KV_FP8_MODEL1 || kv_dtype == MLA_KV_FP8_MODEL1_FNUZ;
}

/** 1 when the fp8 codes of the format are e4m3fnuz (gfx942's), 0 for e4m3fn (OCP) or bf16. */
static inline int mla_kv_is_fnuz(int32_t kv_dtype)
{
	return kv_dtype == MLA_KV_FP8_E4M3_FNUZ || kv_dtype == MLA_KV_FP8_DS_MLA_FNUZ ||
	       kv_dtype == MLA_KV_FP8_MODEL1_FNUZ;
}

/** d_qk of a format: 512 for fp8_model1(_fnuz), else 576. */
static inline int32_t mla_kv_d_qk(int32_t kv_dtype)
{
	return mla_kv_is_model1(kv_dtype) ? MLA_MODEL1_D_QK : MLA_D_QK;
}

/**
 * Bytes a token takes in the cache: 1152 (bf16), 576 (fp8_e4m3_fnuz), 656 (fp8_ds_mla: 512 codes,
 * 4 x fp32 scale, 64 x bf16 rope), 584 (fp8_model1: 448 codes, 64 x bf16 rope, 7 e8m0 scales and a
 * pad byte); 0 for an unknown format. What the counting of bytes moved uses.
 */
static inline size_t mla_kv_token_bytes(int32_t kv_dtype)
{
	switch (kv_dtype) {
	case MLA_KV_BF16: return 2 * MLA_D_QK;
	case MLA_KV_FP8_E4M3_FNUZ: return MLA_D_QK;
	case MLA_KV_FP8_DS_MLA:
	case MLA_KV_FP8_DS_MLA_FNUZ: return 512 + 4 * 4 + 2 * MLA_D_ROPE;
	case MLA_KV_FP8_MODEL1:
	case MLA_KV_FP8_MODEL1_FNUZ: return 448 + 2 * MLA_D_ROPE + 7 + 1;
	}
	return 0;
}

/**
 * Bytes of one cache page of page_size tokens: page_size x token bytes, but for fp8_model1, whose
 * page is padded to a multiple of 576 bytes (FlashMLA tests/quant.py, quantize_k_cache). 0 for an
 * unknown format or page_size <= 0.
 */
static inline size_t mla_kv_page_bytes(int32_t kv_dtype, int32_t page_size)
{
	size_t b = page_size > 0 ? (size_t)page_size * mla_kv_token_bytes(kv_dtype) : 0;

	return mla_kv_is_model1(kv_dtype) ? (b + 575) / 576 * 576 : b;
}

/**
 * "bf16", "fp8_e4m3_fnuz", "fp8_ds_mla", "fp8_ds_mla_fnuz", "fp8_model1", "fp8_model1_fnuz" (the
 * card schema's dtypes values), or NULL. Inline: a kernel or plugin uses it without the harness.
 */
static inline const char *mla_kv_dtype_name(int32_t kv_dtype)
{
	switch (kv_dtype) {
	case MLA_KV_BF16: return "bf16";
	case MLA_KV_FP8_E4M3_FNUZ: return "fp8_e4m3_fnuz";
	case MLA_KV_FP8_DS_MLA: return "fp8_ds_mla";
	case MLA_KV_FP8_DS_MLA_FNUZ: return "fp8_ds_mla_fnuz";
	case MLA_KV_FP8_MODEL1: return "fp8_model1";
	case MLA_KV_FP8_MODEL1_FNUZ: return "fp8_model1_fnuz";
	}
	return NULL;
}

/** Inverse of mla_kv_dtype_name(); 0 when unknown. */
int32_t mla_kv_dtype_parse(const char *name);

/** Fill cfg->name from its fields in the canonical form "bn%d-bh%d-sp%d-w%d-st%d" ("spbal" for -1). */
void mla_decode_config_name(struct mla_decode_config *cfg);

#ifdef __cplusplus
}
#endif

#endif /* MLA_DECODE_H */
