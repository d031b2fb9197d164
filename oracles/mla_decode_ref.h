/*
 * mla_decode_ref.h - the reference MLA decode that produces the reference outputs of every task.
 *
 * Follows the semantics documented in kernels/mla_decode.h (FlashMLA's decode API): paged KV cache,
 * ragged seqlens (0 allowed), causal s_q > 1, bf16 or fp8_e4m3_fnuz KV with a per-tensor kv_scale.
 * Every product and sum is accumulated in double precision, in a fixed order (deterministic for any
 * thread count); the softmax is the two-pass max-subtracted form; results are rounded to float once.
 * The fp8 reference uses decoded code x kv_scale exactly, so fp8 rounding of the inputs is not
 * counted as an implementation's error.
 */
#ifndef MLA_DECODE_REF_H
#define MLA_DECODE_REF_H

#include "../kernels/mla_decode.h"

/* Bumped whenever the reference's numerics change; part of every task dir's identity. */
#define MLA_ORACLE_VERSION "mla_decode_ref/1"

/**
 * Compute the reference for args (host pointers; args->out, args->lse, workspace and stream are
 * ignored).
 *   out  fp32 [batch, s_q, h_q, 512]; rows of queries that see no key are 0
 *   lse  fp32 [batch, h_q, s_q], natural log; +inf for queries that see no key
 * threads: worker threads to use (<= 0: one).
 * Returns MLA_OK, MLA_EINVAL for bad shapes, a page index outside [0, num_pages) in a visible page,
 * or seqlens outside [0, max_pages * page_size].
 */
int mla_decode_reference(const struct mla_decode_args *args, float *out, float *lse, int threads);

#endif /* MLA_DECODE_REF_H */
