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
 * fp8_e4m3fn: OCP 8-bit float (OCP "8-bit Floating Point Specification" 1.0, E4M3), NVIDIA's and
 *       torch.float8_e4m3fn: bias 7, no infinities, NaN 0x7F and 0xFF, largest finite 0x7E = 448,
 *       smallest subnormal 0x01 = 2^-9; negative zero 0x80.
 * e8m0: OCP MX scale (torch.float8_e8m0fnu): 2^(code - 127), 0xFF NaN, no zero.
 * Source: "8-bit Numerical Formats for Deep Neural Networks" (Noune et al., 2022, Graphcore), the
 * format LLVM names Float8E4M3FNUZ; docs/DESIGN.md "The first operator".
 *
 * Paged cache formats of the sparse form (ABI 3), byte for byte as FlashMLA lays them out
 * (tests/quant.py quantize_k_cache, FlashMLA main 9241ae3; all little-endian):
 *   fp8_ds_mla (V3.2, FlashMLA's V32_FP8Sparse; vLLM's name): a page is page_size tokens of 656
 *       bytes: [0, 512) e4m3fn codes of the 512 latent values, [512, 528) 4 fp32 scales (scale k
 *       multiplies codes [128k, 128k + 128); powers of two), [528, 656) the 64 bf16 RoPE values.
 *       Decoded row (576 values): code x scale, then the RoPE values.
 *   fp8_model1 (V4, FlashMLA's MODEL1_FP8Sparse): a page holds first page_size x 576 bytes, token
 *       t at t x 576: [0, 448) e4m3fn codes of 448 latent values, [448, 576) 64 bf16 RoPE values;
 *       then page_size x 8 bytes of scales, token t's at page_size x 576 + 8t: 7 e8m0 scales (scale
 *       k multiplies codes [64k, 64k + 64)) and one unused byte; then padding to a multiple of 576
 *       bytes (mla_kv_page_bytes()). Decoded row (512 values): code x scale, then the RoPE values.
 *   *_fnuz: the same bytes with e4m3fnuz codes (gfx942's MFMA operand format).
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

/** fp8_e4m3fn (OCP) code -> float (exact). 0x7F/0xFF -> NaN; exponent 0 -> m * 2^-9. */
MLA_HD float mla_fp8_e4m3fn_to_float(uint8_t c)
{
	uint32_t sign = (uint32_t)(c & 0x80u) << 24;
	uint32_t e = (c >> 3) & 0xfu;
	uint32_t m = c & 0x7u;
	float mag;

	if ((c & 0x7fu) == 0x7fu)
		return mla_bits_to_float(0x7fc00000u);
	if (e == 0)
		mag = (float)m * 0.001953125f; /* 2^-9 */
	else
		mag = mla_bits_to_float(((e + 120u) << 23) | (m << 20)); /* 2^(e-7): 127-7 = 120 */
	return mla_bits_to_float(mla_float_to_bits(mag) | sign);
}

/** e8m0 scale code -> float: 2^(c - 127); 0xFF -> NaN; code 0 -> 2^-127 (a float subnormal). */
MLA_HD float mla_e8m0_to_float(uint8_t c)
{
	if (c == 0xffu)
		return mla_bits_to_float(0x7fc00000u);
	if (c == 0)
		return mla_bits_to_float(0x00400000u);
	return mla_bits_to_float((uint32_t)c << 23);
}

/** Little-endian fp32 / bf16 read from unaligned bytes. */
MLA_HD float mla_load_f32(const uint8_t *p)
{
	return mla_bits_to_float((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

MLA_HD float mla_load_bf16(const uint8_t *p)
{
	return mla_bf16_to_float((uint16_t)(p[0] | p[1] << 8));
}

/*
 * Decode token `slot` of the page at `page` (its first byte) of a per-block-scaled format
 * (fp8_ds_mla, fp8_model1 and their fnuz twins; kv_dtype values of kernels/mla_decode.h) into row
 * (576 floats for fp8_ds_mla, 512 for fp8_model1): exactly code x scale, then the RoPE values. The
 * host reference and the CPU kernels use it; a GPU kernel fuses the same arithmetic in its tile load.
 * Returns the number of values written, 0 for a format it does not know.
 */
MLA_HD int mla_kv_decode_token(int kv_dtype, const uint8_t *page, int page_size, int slot, float *row)
{
	int fnuz = kv_dtype == 4 || kv_dtype == 6;

	if (kv_dtype == 3 || kv_dtype == 4) { /* fp8_ds_mla(_fnuz) */
		const uint8_t *t = page + (size_t)slot * 656;

		for (int k = 0; k < 4; k++) {
			float sc = mla_load_f32(t + 512 + 4 * k);

			for (int i = 128 * k; i < 128 * k + 128; i++)
				row[i] = (fnuz ? mla_fp8_e4m3_fnuz_to_float(t[i]) : mla_fp8_e4m3fn_to_float(t[i])) * sc;
		}
		for (int i = 0; i < 64; i++)
			row[512 + i] = mla_load_bf16(t + 528 + 2 * i);
		return 576;
	}
	if (kv_dtype == 5 || kv_dtype == 6) { /* fp8_model1(_fnuz) */
		const uint8_t *t = page + (size_t)slot * 576;
		const uint8_t *sc = page + (size_t)page_size * 576 + (size_t)slot * 8;

		for (int k = 0; k < 7; k++) {
			float s = mla_e8m0_to_float(sc[k]);

			for (int i = 64 * k; i < 64 * k + 64; i++)
				row[i] = (fnuz ? mla_fp8_e4m3_fnuz_to_float(t[i]) : mla_fp8_e4m3fn_to_float(t[i])) * s;
		}
		for (int i = 0; i < 64; i++)
			row[448 + i] = mla_load_bf16(t + 448 + 2 * i);
		return 512;
	}
	return 0;
}

#endif /* MLA_NUMERIC_H */
