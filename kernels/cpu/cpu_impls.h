/* CPU implementations of kernels/mla_decode.h (backend "cpu"; host pointers, stream NULL). */
#ifndef MLA_CPU_IMPLS_H
#define MLA_CPU_IMPLS_H

#include "../mla_decode.h"

/**
 * cpu.naive: one thread, two passes per (b, i, h) in float: scores, softmax, weighted sum. Dense
 * form (bf16, fp8_e4m3_fnuz) and sparse form (bf16, fp8_ds_mla(_fnuz), fp8_model1(_fnuz); extra
 * cache, topk_length, attn_sink); supports() is cpu_args_supports().
 */
extern const struct mla_decode_impl mla_cpu_naive;

/**
 * cpu.splitkv: split-KV flash decoding on threads: each (b, split) job runs an online softmax
 * over BLOCK_N-key tiles for BLOCK_H heads at a time, writes partial (o, lse) into the workspace,
 * and a combine step merges the splits by their LSE. Configs over block_n and num_splits,
 * including more splits than blocks (empty splits contribute nothing). The sparse form splits the
 * entries of each query position (indices, then extra_indices) the same way, one combine, attn_sink
 * applied there; both forms and every format as cpu.naive.
 */
extern const struct mla_decode_impl mla_cpu_splitkv;

#endif /* MLA_CPU_IMPLS_H */
