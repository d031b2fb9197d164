/*
 * cpu_args.h - argument checks and small helpers shared by the CPU implementations of
 * kernels/mla_decode.h (cpu.naive, cpu.splitkv).
 */
#ifndef MLA_CPU_ARGS_H
#define MLA_CPU_ARGS_H

#include "../mla_decode.h"

/** Largest thread count a CPU launch uses (more requested threads are capped to this). */
#define CPU_ARGS_MAX_THREADS 256

/**
 * Check args against the contract of mla_decode.h before anything is written.
 * Dense form (topk 0): non-null pointers (kv_cache only when some key is visible), positive shapes,
 * kv_dtype bf16 or fp8_e4m3_fnuz, every seqlens[b] in [0, max_pages * page_size], and every
 * block_table entry a visible key needs (the first ceil(seqlens[b] / page_size) of row b) in
 * [0, num_pages). Entries past those are never read. The sparse fields are not looked at.
 * Sparse form (topk > 0): kv_dtype bf16 or a block-scaled format with d_qk its mla_kv_d_qk() and
 * d_v 512; q, out, lse and indices non-null; every topk_length[b] in [0, topk]; every entry of
 * indices either -1 or, when valid (inside topk_length), in [0, num_pages * page_size); the same
 * for the extra cache when extra_topk > 0 (extra_indices non-null, extra_page_size >= 1); a cache
 * pointer non-null when some entry names a row of it. block_table, seqlens and max_pages are not
 * looked at. Returns MLA_OK or MLA_EINVAL.
 */
int cpu_args_check(const struct mla_decode_args *a);

/**
 * The supports() of the CPU implementations: 1 for the dense form with bf16 or fp8_e4m3_fnuz and
 * for the sparse form with bf16, fp8_ds_mla(_fnuz) or fp8_model1(_fnuz) (d_qk the format's, d_v
 * 512; extra cache, topk_length and attn_sink included); else 0 with the reason in why.
 */
int cpu_args_supports(const struct mla_decode_args *shape, char *why, size_t why_cap);

/**
 * Sparse form: entry e of query row (b, i), over the topk entries of indices followed by the
 * extra_topk entries of extra_indices. Returns the cache it names (kv_cache or extra_kv_cache) with
 * its row in *row and that cache's page size in *page_size, or NULL when the entry is not valid
 * (-1, or past topk_length / extra_topk_length): such an entry is never read.
 */
static inline const void *cpu_args_entry(const struct mla_decode_args *a, int32_t b, int32_t i, int32_t e,
					 int32_t *row, int32_t *page_size)
{
	size_t bi = (size_t)b * a->s_q + i;
	const void *cache;
	int32_t r;

	if (e < a->topk) {
		if (a->topk_length && e >= a->topk_length[b])
			return NULL;
		r = a->indices[bi * a->topk + e];
		cache = a->kv_cache;
		*page_size = a->page_size;
	} else {
		e -= a->topk;
		if (a->extra_topk_length && e >= a->extra_topk_length[b])
			return NULL;
		r = a->extra_indices[bi * a->extra_topk + e];
		cache = a->extra_kv_cache;
		*page_size = a->extra_page_size;
	}
	if (r < 0)
		return NULL;
	*row = r;
	return cache;
}

/**
 * Sparse form: decode row r (page r / page_size, slot r % page_size) of a cache of kv_dtype into
 * row: mla_kv_d_qk(kv_dtype) floats (bf16 exactly; block-scaled formats by mla_kv_decode_token).
 */
void cpu_args_decode_row(int32_t kv_dtype, const void *cache, int32_t page_size, int32_t r, float *row);

/** Nonzero for a CPU architecture: any name that is not a GPU one ("sm_*", "gfx*"). */
int cpu_args_arch_ok(const char *arch);

/**
 * Fill lut[256] with the value of every KV code as the CPU kernels use it: for fp8_e4m3_fnuz,
 * mla_fp8_e4m3_fnuz_to_float(code) * kv_scale in float (0x80 -> NaN); unused for bf16.
 */
void cpu_args_fp8_lut(float lut[256], float kv_scale);

/** Visible keys of query position i of sequence b: seqlens[b] - s_q + 1 + i (<= 0: none). */
static inline int32_t cpu_args_visible(const struct mla_decode_args *a, int32_t b, int32_t i)
{
	return a->seqlens[b] - a->s_q + 1 + i;
}

/** Element offset of cache row j of sequence b (row-major [num_pages, page_size, 1, 576]). */
static inline size_t cpu_args_row(const struct mla_decode_args *a, int32_t b, int32_t j)
{
	int32_t page = a->block_table[(size_t)b * a->max_pages + j / a->page_size];

	return ((size_t)page * a->page_size + (size_t)(j % a->page_size)) * MLA_D_QK;
}

#endif /* MLA_CPU_ARGS_H */
