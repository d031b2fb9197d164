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
 * History: version 2 appended supports() and prepare() after launch.
 */
#ifndef MLA_DECODE_H
#define MLA_DECODE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Version of this ABI (structs, enums, contract). A plugin's descriptor must carry exactly this. */
#define MLA_DECODE_ABI_VERSION 2

/** The one symbol a plugin exports, and its type. */
#define MLA_DECODE_PLUGIN_SYMBOL "mla_decode_plugin"
struct mla_decode_impl;
typedef const struct mla_decode_impl *(*mla_decode_plugin_fn)(void);

#define MLA_D_QK 576   /* 512 latent (kv_lora_rank) + 64 rope dims */
#define MLA_D_V 512    /* V is the first 512 dims of the cache row */
#define MLA_D_ROPE 64

/** KV cache element type. */
enum mla_kv_dtype {
	MLA_KV_BF16 = 1,          /* bf16, kv_scale ignored (1.0) */
	MLA_KV_FP8_E4M3_FNUZ = 2, /* fp8 e4m3 fnuz codes; real value = decoded code * kv_scale */
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

/** Bytes per KV element of a dtype (2 for bf16, 1 for fp8), 0 for an unknown one. */
static inline size_t mla_kv_elem_size(int32_t kv_dtype)
{
	return kv_dtype == MLA_KV_BF16 ? 2 : kv_dtype == MLA_KV_FP8_E4M3_FNUZ ? 1 : 0;
}

/** "bf16" / "fp8_e4m3_fnuz" (the card schema's names), or NULL. */
const char *mla_kv_dtype_name(int32_t kv_dtype);

/** Inverse of mla_kv_dtype_name(); 0 when unknown. */
int32_t mla_kv_dtype_parse(const char *name);

/** Fill cfg->name from its fields in the canonical form "bn%d-bh%d-sp%d-w%d-st%d" ("spbal" for -1). */
void mla_decode_config_name(struct mla_decode_config *cfg);

#ifdef __cplusplus
}
#endif

#endif /* MLA_DECODE_H */
