/*
 * mla_numeric.h - the number formats of MLA decode, shared by the host (C) and the device (HIP/CUDA).
 *
 * bf16: IEEE binary32 truncated to its top 16 bits; conversion from float rounds to nearest even,
 *       NaN stays NaN (quiet).
 * fp8_e4m3_fnuz: AMD/Graphcore "FNUZ" 8-bit float as used by MI300X (gfx942) and
 *       torch.float8_e4m3fnuz: 1 sign bit, 4 exponent bits with bias 8, 3 mantissa bits; no
 *       infinities, no negative zero, one NaN (0x80); largest finite 0x7F = 240, smallest
 *       subnormal 0x01 = 2^-10. It is not OCP e4m3fn (bias 7, NaN at 0x7F/0xFF, max 448), which is
 *       what NVIDIA's hardware converts: on NVIDIA the kernels decode fnuz with
 *       mla_fp8_e4m3_fnuz_to_float() below, in software, and the CPU tests check it on all 256 codes.
 * Source: "8-bit Numerical Formats for Deep Neural Networks" (Noune et al., 2022, Graphcore), the
 * format LLVM names Float8E4M3FNUZ; docs/DESIGN.md "The first operator".
 */
#ifndef MLA_NUMERIC_H
#define MLA_NUMERIC_H

#include <stdint.h>
#include <string.h>

#if defined(__CUDACC__) || defined(__HIPCC__) || defined(__HIP__)
#define MLA_HD __host__ __device__ __forceinline__
#else
#define MLA_HD static inline
#endif /* device compiler */

/** Bit-exact reinterpretation float <-> uint32 (memcpy is well-defined in C and folds away). */
MLA_HD float mla_bits_to_float(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

MLA_HD uint32_t mla_float_to_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

/** bf16 bits -> float (exact). */
MLA_HD float mla_bf16_to_float(uint16_t h)
{
	return mla_bits_to_float((uint32_t)h << 16);
}

/** float -> bf16 bits, round to nearest even; NaN -> quiet NaN with the same sign. */
MLA_HD uint16_t mla_float_to_bf16(float f)
{
	uint32_t u = mla_float_to_bits(f);

	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x0040u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

/**
 * fp8_e4m3_fnuz code -> float (exact). 0x80 -> NaN; exponent field 0 -> subnormal m * 2^-10;
 * otherwise (1 + m/8) * 2^(e-8). Branch-light so it can run per element in a kernel's inner loop.
 */
MLA_HD float mla_fp8_e4m3_fnuz_to_float(uint8_t c)
{
	uint32_t sign = (uint32_t)(c & 0x80u) << 24;
	uint32_t e = (c >> 3) & 0xfu;
	uint32_t m = c & 0x7u;
	float mag;

	if (c == 0x80u)
		return mla_bits_to_float(0x7fc00000u);
	if (e == 0)
		mag = (float)m * 0.0009765625f; /* 2^-10 */
	else
		mag = mla_bits_to_float(((e + 119u) << 23) | (m << 20)); /* 2^(e-8): 127-8 = 119 */
	return mla_bits_to_float(mla_float_to_bits(mag) | sign);
}

#endif /* MLA_NUMERIC_H */
