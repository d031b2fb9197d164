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
 * Check args against the contract of mla_decode.h before anything is written: non-null pointers
 * (kv_cache only when some key is visible), positive shapes, a known kv_dtype, every seqlens[b] in
 * [0, max_pages * page_size], and every block_table entry a visible key needs (the first
 * ceil(seqlens[b] / page_size) of row b) in [0, num_pages). Entries past those are never read.
 * Returns MLA_OK or MLA_EINVAL.
 */
int cpu_args_check(const struct mla_decode_args *a);

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
