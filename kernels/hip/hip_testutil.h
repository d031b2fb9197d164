/*
 * hip_testutil.h - GPU-side helpers for tests/gpu (GPU build only): device-side random fills for
 * the large benchmark inputs, and probes of the kernels' fp8 decoders on all 256 codes.
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

/**
 * NVIDIA only: the fast decoder of the sm_90a fp8 kernels (mma.h: mma_fp8x4_to_bf16x4_nonan, exact
 * but for 0x80 -> -0) on the 256 codes into out, and the NaN-code test (mma_fp8x4_nan_bits & 0x80808080)
 * into nan: nan[t] for the word of codes 4t .. 4t+3 (t < 64; nonzero only for t = 32) and, for
 * t >= 64, for that word of t - 64 with byte t % 4 set to 0x80 (nonzero for every t). Host memory,
 * synchronous. Returns 0, MLA_EDEVICE, or MLA_EUNSUPPORTED on gfx942 (no fast decoder there).
 */
int mla_hip_test_fp8_decode_fast(uint16_t out[256], uint32_t nan[128]);

/**
 * NVIDIA only: the f16 decoders of the warp kernel's fp8 path on every code (2^-7 of the value): out[0]
 * the word decoder without the NaN code (0x80 -> -0), [1] exact (0x80 -> NaN), [2] / [3] the
 * two-key pair decoder's halves (code c / code c of the second word), [4] the pair decoder exact.
 * Returns 0, MLA_EDEVICE, or MLA_EUNSUPPORTED on gfx942.
 */
int mla_hip_test_fp8_decode_f16(uint16_t out[5 * 256]);

/**
 * The hardware fp8 decode of the pipelined sparse kernels (sparse_decode_hw.h: mla_sparse_decode16_hw)
 * on the 256 codes of both kinds times each of nscales scales (host memory, 1 <= nscales <= 1024):
 * out[(fnuz * nscales + s) * 256 + c] is the bf16 of code c (e4m3fn for fnuz 0, e4m3fnuz for 1) times
 * scales[s]; out holds 2 * nscales * 256 entries. Synchronous. Returns 0, MLA_EINVAL or MLA_EDEVICE.
 */
int mla_hip_test_sparse_decode(const float *scales, int nscales, uint16_t *out);

#ifdef __cplusplus
}
#endif

#endif /* MLA_HIP_TESTUTIL_H */
