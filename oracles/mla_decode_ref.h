/*
 * mla_decode_ref.h - the reference MLA decode that produces the reference outputs of every task.
 *
 * Follows the semantics documented in kernels/mla_decode.h (FlashMLA's decode API): paged KV cache,
 * ragged seqlens (0 allowed), causal s_q > 1, bf16 or fp8_e4m3_fnuz KV with a per-tensor kv_scale.
 * Every product and sum is accumulated in double precision, in a fixed order (deterministic for any
 * thread count); the softmax is the two-pass max-subtracted form; results are rounded to float once.
 * The fp8 reference uses decoded code x kv_scale exactly, so fp8 rounding of the inputs is not
 * counted as an implementation's error.
 *
 * The sparse form (topk > 0; kernels/mla_decode.h ABI 3) transliterates FlashMLA's
 * tests/ref.py::ref_sparse_attn_decode (main 9241ae3): per (b, i) the valid entries in order (the
 * main cache's t = 0..topk-1 that are not -1 and lie below topk_length[b], then the extra cache's
 * likewise), each row decoded exactly (bf16, or mla_kv_decode_token() for the block-scaled
 * formats: code x scale), scores and P.V in double in that fixed order, two-pass softmax; with
 * attn_sink the weights are multiplied by 1 / (1 + exp(attn_sink[h] - lse)) and lse is reported
 * without it; a row with no valid entry gives out 0 and lse +inf. Rows no valid entry names are
 * never read (their NaN does not matter). It reads d_qk (which must be the format's) and refuses
 * (MLA_EINVAL) an entry outside [0, pages x page_size) other than -1, a topk_length outside
 * [0, topk], or missing pointers.
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
 * or seqlens outside [0, max_pages * page_size] (dense form), or the sparse form's refusals above.
 */
int mla_decode_reference(const struct mla_decode_args *args, float *out, float *lse, int threads);

#endif /* MLA_DECODE_REF_H */
