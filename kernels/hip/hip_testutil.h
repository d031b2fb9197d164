/*
 * hip_testutil.h - GPU-side helpers for tests/gpu (GPU build only): device-side random fills for
 * the large benchmark inputs, and a probe of the kernels' fast fp8 decoder on all 256 codes.
 */
#ifndef MLA_HIP_TESTUTIL_H
#define MLA_HIP_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum mla_hip_fill_kind {
	MLA_HIP_FILL_BF16 = 1, /* bf16, uniform in [-amp, amp] */
	MLA_HIP_FILL_FP8 = 2,  /* fp8_e4m3_fnuz codes, uniform over every code but NaN (0x80) */
};

/**
 * Enqueue on stream a fill of n elements at dst (device memory) from a counter-based hash of
 * (seed, index). Returns 0 or MLA_EDEVICE.
 */
int mla_hip_test_fill(void *dst, size_t n, int kind, uint64_t seed, float amp, void *stream);

/**
 * Decode the 256 fp8_e4m3_fnuz codes on the device with the decoder the flash kernels use
 * (mma.h: mma_fp8x4_to_bf16x4) and return the bf16 bits in out (host memory), synchronously.
 * Returns 0 or MLA_EDEVICE.
 */
int mla_hip_test_fp8_decode(uint16_t out[256]);

#ifdef __cplusplus
}
#endif

#endif /* MLA_HIP_TESTUTIL_H */
