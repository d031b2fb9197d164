/*
 * baseline.hip - hip.baseline: the plain, obviously correct fused MLA decode kernel.
 *
 * One block per (head, query position, batch); one pass over the visible keys. Each warp takes
 * keys j = warp, warp + NW, ...: its lanes hold q as floats (dims lane + WARP*k), dot with the cache
 * row, a butterfly sum gives the score; the warp keeps an online softmax (running max m, sum l, and
 * the weighted sum of V rows, all fp32). The warps then merge their (m, l, acc) through shared
 * memory. No matrix cores, no split, no workspace. fp8 codes are decoded in software with
 * mla_fp8_e4m3_fnuz_to_float (NVIDIA's hardware fp8 conversions are OCP e4m3fn, another format).
 */
#include "hip_compat.h"
#include "hip_flash.h"
#include "hip_impls.h"
#include "../mla_numeric.h"

#include <math.h>

namespace {

struct BaseParams {
	const uint16_t *q;
	const uint8_t *kv;
	const int32_t *block_table;
	const int32_t *seqlens;
	uint16_t *out;
	float *lse;
	int32_t s_q;
	int32_t h_q;
	int32_t page_size;
	int32_t max_pages;
	float scale_log2; /* softmax_scale * log2(e) (* kv_scale for fp8) */
	float out_scale;  /* 1, or kv_scale for fp8 */
};

template <bool FP8>
VS_DEV float load_kv(const uint8_t *row, int d)
{
	if (FP8)
		return mla_fp8_e4m3_fnuz_to_float(row[d]);
	return mla_bf16_to_float(((const uint16_t *)row)[d]);
}

template <int NW, bool FP8>
__global__ void __launch_bounds__(NW * VS_WARP) mla_baseline(BaseParams p)
{
	constexpr int QK = MLA_D_QK / VS_WARP; /* dims per lane: 18 (warp32) or 9 (wave64) */
	constexpr int VK = MLA_D_V / VS_WARP;  /* V dims per lane: the first VK of them */
	constexpr size_t ROW = MLA_D_QK * (FP8 ? 1 : 2);
	__shared__ float red_m[NW], red_l[NW];
	__shared__ float red_o[NW][MLA_D_V];
	const int lane = vs_lane(), warp = vs_tid() / VS_WARP;
	const int h = vs_bid_x(), i = vs_bid_y(), b = vs_bid_z();
	const size_t row_q = ((size_t)b * p.s_q + i) * p.h_q + h;
	const int n = min(p.seqlens[b] - p.s_q + 1 + i, p.seqlens[b]); /* visible keys */
	float q[QK], acc[VK];
	float m = -INFINITY, l = 0.f;

	if (n <= 0) {
		for (int d = vs_tid(); d < MLA_D_V; d += NW * VS_WARP)
			p.out[row_q * MLA_D_V + d] = 0;
		if (vs_tid() == 0)
			p.lse[((size_t)b * p.h_q + h) * p.s_q + i] = INFINITY;
		return;
	}
#pragma unroll
	for (int k = 0; k < QK; k++)
		q[k] = mla_bf16_to_float(p.q[row_q * MLA_D_QK + lane + VS_WARP * k]);
#pragma unroll
	for (int k = 0; k < VK; k++)
		acc[k] = 0.f;

	for (int j = warp; j < n; j += NW) {
		int32_t page = p.block_table[(size_t)b * p.max_pages + j / p.page_size];
		const uint8_t *row = p.kv + ((size_t)page * p.page_size + (size_t)(j % p.page_size)) * ROW;
		float x[QK], dot = 0.f;

#pragma unroll
		for (int k = 0; k < QK; k++) {
			x[k] = load_kv<FP8>(row, lane + VS_WARP * k);
			dot += q[k] * x[k];
		}
		float s = vs_warp_sum(dot) * p.scale_log2;
		float m_new = vs_fmaxf(m, s);
		float alpha = vs_exp2f(m - m_new), pe = vs_exp2f(s - m_new);

		l = l * alpha + pe;
#pragma unroll
		for (int k = 0; k < VK; k++)
			acc[k] = acc[k] * alpha + pe * x[k];
		m = m_new;
	}

	if (lane == 0) {
		red_m[warp] = m;
		red_l[warp] = l;
	}
#pragma unroll
	for (int k = 0; k < VK; k++)
		red_o[warp][lane + VS_WARP * k] = acc[k];
	vs_syncthreads();

	float mx = -INFINITY, lt = 0.f;

	for (int w = 0; w < NW; w++)
		mx = vs_fmaxf(mx, red_m[w]);
	for (int w = 0; w < NW; w++)
		lt += red_m[w] == -INFINITY ? 0.f : red_l[w] * vs_exp2f(red_m[w] - mx);
	for (int d = vs_tid(); d < MLA_D_V; d += NW * VS_WARP) {
		float o = 0.f;

		for (int w = 0; w < NW; w++)
			if (red_m[w] != -INFINITY)
				o += red_o[w][d] * vs_exp2f(red_m[w] - mx);
		p.out[row_q * MLA_D_V + d] = mla_float_to_bf16(o * p.out_scale / lt);
	}
	if (vs_tid() == 0)
		p.lse[((size_t)b * p.h_q + h) * p.s_q + i] = (mx + vs_log2f(lt)) * VS_LN2;
}

#if defined(VS_PLATFORM_AMD)
constexpr int BASE_NW = MLA_BASELINE_GFX942_WARPS;
#else
constexpr int BASE_NW = MLA_BASELINE_SM90_WARPS;
#endif /* platform */

} /* namespace */

extern "C" int mla_hip_baseline_launch(const struct mla_decode_args *a, const struct mla_decode_config *cfg)
{
	BaseParams bp;
	int fp8;

	if (!a || !cfg)
		return MLA_EINVAL;
	if (a->batch < 0 || a->s_q < 1 || a->h_q < 1 || a->page_size < 1 || a->max_pages < 0 ||
	    mla_kv_elem_size(a->kv_dtype) == 0)
		return MLA_EINVAL;
	if (cfg->num_warps != BASE_NW || cfg->block_n != 1 || cfg->block_h != 1 || cfg->num_splits != 1 ||
	    cfg->num_stages != 1)
		return MLA_EUNSUPPORTED;
	if (a->batch == 0)
		return MLA_OK;
	if (!a->q || !a->kv_cache || !a->block_table || !a->seqlens || !a->out || !a->lse)
		return MLA_EINVAL;
	if (a->batch > 65535 || a->s_q > 65535)
		return MLA_EUNSUPPORTED;
	fp8 = a->kv_dtype == MLA_KV_FP8_E4M3_FNUZ;
	bp.q = (const uint16_t *)a->q;
	bp.kv = (const uint8_t *)a->kv_cache;
	bp.block_table = a->block_table;
	bp.seqlens = a->seqlens;
	bp.out = (uint16_t *)a->out;
	bp.lse = a->lse;
	bp.s_q = a->s_q;
	bp.h_q = a->h_q;
	bp.page_size = a->page_size;
	bp.max_pages = a->max_pages;
	bp.scale_log2 = a->softmax_scale * VS_LOG2E * (fp8 ? a->kv_scale : 1.f);
	bp.out_scale = fp8 ? a->kv_scale : 1.f;

	dim3 grid(a->h_q, a->s_q, a->batch), block(BASE_NW * VS_WARP);

	if (fp8)
		mla_baseline<BASE_NW, true><<<grid, block, 0, (hipStream_t)a->stream>>>(bp);
	else
		mla_baseline<BASE_NW, false><<<grid, block, 0, (hipStream_t)a->stream>>>(bp);
	HIP_CHECK_RET(hipGetLastError(), MLA_EDEVICE);
	return MLA_OK;
}
