/*
 * HIP implementations of kernels/mla_decode.h (backend "hip": device pointers, enqueue on stream).
 * The descriptors and config spaces are plain C (kernels/hip/hip_impls.c) so that plans can be
 * emitted without a GPU; the launches live in the .hip sources, or in hip_stub.c (MLA_ENODEVICE)
 * when the binary is built without a GPU toolchain.
 */
#ifndef MLA_HIP_IMPLS_H
#define MLA_HIP_IMPLS_H

#include "../mla_decode.h"

#ifdef __cplusplus
extern "C" {
#endif

/** hip.baseline: plain fused kernel, one pass over the KV, no matrix cores, no split. */
extern const struct mla_decode_impl mla_hip_baseline;

/** hip.flash: the port. Split-KV flash decoding with BLOCK_H heads per KV tile, matrix cores,
 * online softmax in registers, LSE-merge combine. */
extern const struct mla_decode_impl mla_hip_flash;

/* Launch entry points (defined by the GPU build or by hip_stub.c). */
int mla_hip_baseline_launch(const struct mla_decode_args *args, const struct mla_decode_config *cfg);
int mla_hip_flash_launch(const struct mla_decode_args *args, const struct mla_decode_config *cfg);
/* hip.flash's sparse form (topk > 0; flash_sparse.hip): hip.flash's launch calls it for sparse args. */
int mla_hip_flash_sparse_launch(const struct mla_decode_args *args, const struct mla_decode_config *cfg);

#ifdef __cplusplus
}
#endif

#endif /* MLA_HIP_IMPLS_H */
