/*
 * sparse_decode_hw.h - internal to kernels/hip, device code only: the fp8 decode of the pipelined
 * sparse kernels (flash_sparse.hip, num_stages 2) with the hardware conversions, and the probe of it
 * (hip_testutil.hip). The result is sparse_decode.h's mla_sparse_decode16, bit for bit, for every
 * code and scale whose product is not NaN (a NaN stays a NaN; its bits may differ):
 *   code -> its exact float: sm_90 e4m3fn: cvt.rn.f16x2.e4m3x2 then f16 -> f32 (mma_e4m3fn_x4_to_f32);
 *           fnuz: mma_fnuz_x4_to_f32 (sm_90: mma.h's exact bf16 decode; gfx942: v_cvt_pk_f32_fp8);
 *           gfx942 e4m3fn (no hardware decode there): sparse_decode.h's software decode, unchanged;
 *   times the scale: one fp32 multiply, as mla_sparse_code_to_bf16's (round to nearest even);
 *   to bf16: round to nearest even (vs_pack_bf16x2: cvt.rn.bf16x2.f32 on sm_90, vs_bf16_rne on
 *           gfx942, the arithmetic of mla_float_to_bf16).
 * Both decodes are exact up to the same single fp32 rounding of code x scale, then the same bf16
 * rounding, so they agree on every finite or infinite result. gpu_parity's sparse-decode probe checks
 * it on the device for the 256 codes of both kinds times scales across the range (issue 39).
 */
#ifndef MLA_HIP_SPARSE_DECODE_HW_H
#define MLA_HIP_SPARSE_DECODE_HW_H

#include "hip_compat.h"
#include "mma.h"
#include "sparse_decode.h"

/* 16 codes (w[k]: codes 4k .. 4k + 3) times scale -> 16 bf16 in out[8], as mla_sparse_decode16. */
VS_DEV void mla_sparse_decode16_hw(const uint32_t w[4], float scale, int fnuz, uint32_t out[8])
{
#if defined(VS_PLATFORM_AMD)
	if (!fnuz) {
		mla_sparse_decode16(w, scale, fnuz, out);
		return;
	}
#endif /* VS_PLATFORM_AMD */
#pragma unroll
	for (int k = 0; k < 4; k++) {
		float f[4];

#if defined(VS_PLATFORM_NVIDIA)
		if (fnuz)
			mma_fnuz_x4_to_f32(w[k], f);
		else
			mma_e4m3fn_x4_to_f32(w[k], f);
#else
		mma_fnuz_x4_to_f32(w[k], f);
#endif /* platform */
		out[2 * k] = vs_pack_bf16x2(f[0] * scale, f[1] * scale);
		out[2 * k + 1] = vs_pack_bf16x2(f[2] * scale, f[3] * scale);
	}
}

#endif /* MLA_HIP_SPARSE_DECODE_HW_H */
