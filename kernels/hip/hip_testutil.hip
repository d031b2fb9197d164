/* hip_testutil.hip - GPU-side helpers for tests/gpu (see hip_testutil.h). */
#include "hip_compat.h"
#include "mla_decode.h"
#include "mma.h"
#include "hip_testutil.h"
#include "sparse_decode_hw.h"

namespace {

VS_DEV uint64_t mix64(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

__global__ void fill_kernel(void *dst, size_t n, int kind, uint64_t seed, float amp)
{
	size_t i = (size_t)vs_bid_x() * 256 + vs_tid();
	size_t stride = (size_t)256 * 65535;

	for (; i < n; i += stride) {
		uint64_t h = mix64(seed * 0x9e3779b97f4a7c15ull + i);

		if (kind == MLA_HIP_FILL_FP8) {
			uint8_t c = (uint8_t)(h & 0xff);

			((uint8_t *)dst)[i] = c == 0x80 ? 0x00 : c;
		} else {
			float u = (float)(h >> 40) * (1.0f / 16777216.0f); /* [0, 1) */

			((uint16_t *)dst)[i] = (uint16_t)(vs_pack_bf16x2((2.f * u - 1.f) * amp, 0.f) & 0xffffu);
		}
	}
}

__global__ void fp8_decode_kernel(uint16_t *out)
{
	int t = vs_tid(); /* 64 threads, 4 codes each */
	uint32_t w = (uint32_t)(4 * t) | ((uint32_t)(4 * t + 1) << 8) | ((uint32_t)(4 * t + 2) << 16) |
		     ((uint32_t)(4 * t + 3) << 24);
	uint32_t lo, hi;

	mma_fp8x4_to_bf16x4(w, lo, hi);
	out[4 * t] = (uint16_t)(lo & 0xffffu);
	out[4 * t + 1] = (uint16_t)(lo >> 16);
	out[4 * t + 2] = (uint16_t)(hi & 0xffffu);
	out[4 * t + 3] = (uint16_t)(hi >> 16);
}

#if defined(VS_PLATFORM_NVIDIA)
/*
 * The fast decoder and the NaN-code test (mma_fp8x4_to_bf16x4_nonan, mma_fp8x4_nan_bits): threads
 * 0..63 decode words of 4 consecutive codes (out, nan[t]); threads 64..127 test word t - 64 with
 * its byte (t % 4) replaced by 0x80 (nan[t] only).
 */
__global__ void fp8_decode_fast_kernel(uint16_t *out, uint32_t *nan)
{
	int t = vs_tid(), c = 4 * (t & 63);
	uint32_t w = (uint32_t)c | ((uint32_t)(c + 1) << 8) | ((uint32_t)(c + 2) << 16) | ((uint32_t)(c + 3) << 24);
	uint32_t lo, hi;

	if (t >= 64)
		w = (w & ~(0xFFu << (8 * (t & 3)))) | (0x80u << (8 * (t & 3)));
	nan[t] = mma_fp8x4_nan_bits(w) & 0x80808080u;
	if (t >= 64)
		return;
	mma_fp8x4_to_bf16x4_nonan(w, lo, hi);
	out[c] = (uint16_t)(lo & 0xffffu);
	out[c + 1] = (uint16_t)(lo >> 16);
	out[c + 2] = (uint16_t)(hi & 0xffffu);
	out[c + 3] = (uint16_t)(hi >> 16);
}

/*
 * The f16 decoders of the warp kernel's fp8 path (2^-7 of the value): thread t (64) decodes the
 * word w of codes 4t .. 4t + 3 into out[5][256]: [0] mma_fp8x4_to_f16x4<false>, [1] the same
 * exact, [2] and [3] the low and high halves of mma_fp8_pair_to_f16x2<i, false>(w, ~w) (code c and
 * code 255 - c), [4] the low half exact.
 */
__global__ void fp8_decode_f16_kernel(uint16_t *out)
{
	const int t = vs_tid(), c = 4 * t;
	const uint32_t w = (uint32_t)c | ((uint32_t)(c + 1) << 8) | ((uint32_t)(c + 2) << 16) | ((uint32_t)(c + 3) << 24);
	uint32_t lo, hi, pf[4], pe[4];

	mma_fp8x4_to_f16x4<false>(w, lo, hi);
	out[c] = (uint16_t)lo;
	out[c + 1] = (uint16_t)(lo >> 16);
	out[c + 2] = (uint16_t)hi;
	out[c + 3] = (uint16_t)(hi >> 16);
	mma_fp8x4_to_f16x4<true>(w, lo, hi);
	out[256 + c] = (uint16_t)lo;
	out[256 + c + 1] = (uint16_t)(lo >> 16);
	out[256 + c + 2] = (uint16_t)hi;
	out[256 + c + 3] = (uint16_t)(hi >> 16);
	pf[0] = mma_fp8_pair_to_f16x2<0, false>(w, ~w);
	pf[1] = mma_fp8_pair_to_f16x2<1, false>(w, ~w);
	pf[2] = mma_fp8_pair_to_f16x2<2, false>(w, ~w);
	pf[3] = mma_fp8_pair_to_f16x2<3, false>(w, ~w);
	pe[0] = mma_fp8_pair_to_f16x2<0, true>(w, ~w);
	pe[1] = mma_fp8_pair_to_f16x2<1, true>(w, ~w);
	pe[2] = mma_fp8_pair_to_f16x2<2, true>(w, ~w);
	pe[3] = mma_fp8_pair_to_f16x2<3, true>(w, ~w);
	for (int i = 0; i < 4; i++) {
		out[512 + c + i] = (uint16_t)pf[i];
		out[768 + 255 - (c + i)] = (uint16_t)(pf[i] >> 16);
		out[1024 + c + i] = (uint16_t)pe[i];
	}
}
#endif /* VS_PLATFORM_NVIDIA */

/*
 * The sparse kernels' hardware decode: block (s, fnuz), 16 threads of 16 consecutive codes each
 * (words of 4 codes, byte i = code 4k + i), times scales[s] (mla_hip_test_sparse_decode).
 */
__global__ void sparse_decode_kernel(const float *scales, int nscales, uint16_t *out)
{
	const int s = vs_bid_x(), fnuz = vs_bid_y(), t = vs_tid(), c0 = 16 * t;
	uint32_t w[4], o[8];

	for (int k = 0; k < 4; k++) {
		const uint32_t c = (uint32_t)(c0 + 4 * k);

		w[k] = c | (c + 1) << 8 | (c + 2) << 16 | (c + 3) << 24;
	}
	mla_sparse_decode16_hw(w, scales[s], fnuz, o);
	for (int i = 0; i < 16; i++)
		out[((size_t)fnuz * nscales + s) * 256 + c0 + i] = (uint16_t)(o[i / 2] >> (16 * (i % 2)));
}

} /* namespace */

extern "C" int mla_hip_test_fill(void *dst, size_t n, int kind, uint64_t seed, float amp, void *stream)
{
	size_t blocks = (n + 255) / 256;

	if (n == 0)
		return 0;
	fill_kernel<<<dim3((unsigned)(blocks < 65535 ? blocks : 65535)), dim3(256), 0, (hipStream_t)stream>>>(
		dst, n, kind, seed, amp);
	HIP_CHECK_RET(hipGetLastError(), MLA_EDEVICE);
	return 0;
}

extern "C" int mla_hip_test_fp8_decode(uint16_t out[256])
{
	uint16_t *d = nullptr;
	hipError_t e;

	HIP_CHECK_RET(hipMalloc((void **)&d, 256 * sizeof(uint16_t)), MLA_EDEVICE);
	fp8_decode_kernel<<<1, 64>>>(d);
	e = hipGetLastError();
	if (e == hipSuccess)
		e = hipMemcpy(out, d, 256 * sizeof(uint16_t), hipMemcpyDeviceToHost);
	(void)hipFree(d);
	if (e != hipSuccess)
		return (MLA_HIP_REPORT("fp8 decode probe", e), MLA_EDEVICE);
	return 0;
}

extern "C" int mla_hip_test_fp8_decode_f16(uint16_t out[5 * 256])
{
#if defined(VS_PLATFORM_NVIDIA)
	uint16_t *d = nullptr;
	hipError_t e;

	HIP_CHECK_RET(hipMalloc((void **)&d, 5 * 256 * sizeof(uint16_t)), MLA_EDEVICE);
	fp8_decode_f16_kernel<<<1, 64>>>(d);
	e = hipGetLastError();
	if (e == hipSuccess)
		e = hipMemcpy(out, d, 5 * 256 * sizeof(uint16_t), hipMemcpyDeviceToHost);
	(void)hipFree(d);
	if (e != hipSuccess)
		return (MLA_HIP_REPORT("fp8 f16 decode probe", e), MLA_EDEVICE);
	return 0;
#else
	(void)out;
	return MLA_EUNSUPPORTED; /* the f16 path is NVIDIA's */
#endif
}

extern "C" int mla_hip_test_fp8_decode_fast(uint16_t out[256], uint32_t nan[128])
{
#if defined(VS_PLATFORM_NVIDIA)
	uint16_t *d = nullptr;
	uint32_t *dn = nullptr;
	hipError_t e;

	HIP_CHECK_RET(hipMalloc((void **)&d, 256 * sizeof(uint16_t)), MLA_EDEVICE);
	e = hipMalloc((void **)&dn, 128 * sizeof(uint32_t));
	if (e == hipSuccess) {
		fp8_decode_fast_kernel<<<1, 128>>>(d, dn);
		e = hipGetLastError();
	}
	if (e == hipSuccess)
		e = hipMemcpy(out, d, 256 * sizeof(uint16_t), hipMemcpyDeviceToHost);
	if (e == hipSuccess)
		e = hipMemcpy(nan, dn, 128 * sizeof(uint32_t), hipMemcpyDeviceToHost);
	(void)hipFree(d);
	(void)hipFree(dn);
	if (e != hipSuccess)
		return (MLA_HIP_REPORT("fp8 fast decode probe", e), MLA_EDEVICE);
	return 0;
#else
	(void)out;
	(void)nan;
	return MLA_EUNSUPPORTED; /* gfx942 decodes exactly in hardware: no fast decoder */
#endif
}

extern "C" int mla_hip_test_sparse_decode(const float *scales, int nscales, uint16_t *out)
{
	const size_t n = (size_t)2 * (size_t)nscales * 256;
	float *ds = nullptr;
	uint16_t *d = nullptr;
	hipError_t e;

	if (!scales || !out || nscales < 1 || nscales > 1024)
		return MLA_EINVAL;
	HIP_CHECK_RET(hipMalloc((void **)&ds, (size_t)nscales * sizeof(float)), MLA_EDEVICE);
	e = hipMalloc((void **)&d, n * sizeof(uint16_t));
	if (e == hipSuccess)
		e = hipMemcpy(ds, scales, (size_t)nscales * sizeof(float), hipMemcpyHostToDevice);
	if (e == hipSuccess) {
		sparse_decode_kernel<<<dim3((unsigned)nscales, 2), 16>>>(ds, nscales, d);
		e = hipGetLastError();
	}
	if (e == hipSuccess)
		e = hipMemcpy(out, d, n * sizeof(uint16_t), hipMemcpyDeviceToHost);
	(void)hipFree(ds);
	(void)hipFree(d);
	if (e != hipSuccess)
		return (MLA_HIP_REPORT("sparse fp8 decode probe", e), MLA_EDEVICE);
	return 0;
}
