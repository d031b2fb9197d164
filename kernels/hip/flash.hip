/*
 * flash.hip - hip.flash: split-KV flash decoding of MLA (FlashMLA's decode algorithm, ported).
 *
 * Grid (head blocks, splits, batch), or (head blocks, parts, 1) for balanced splits (Seg: a block
 * takes one of `parts` equal ranges of the KV tiles of all sequences, FlashMLA's tile scheduler,
 * and works through its pieces one sequence after another). A block owns BLOCK_H rows of the M
 * dimension, where the rows of batch element b are its s_q x h_q (query position, head) pairs
 * flattened as m = i * h_q + h (q and out are contiguous in that order), and one split of the KV
 * tiles its rows can see. Every
 * KV tile (BLOCK_N keys x 576) is loaded once into shared memory / LDS and shared by all BLOCK_H
 * rows: S = Q K^T and O += P V run on matrix cores (mma.h), the softmax is online in registers in
 * base 2 (log2(e) and, for fp8, kv_scale folded into the score scale; kv_scale folded into the
 * output scale for V). A split writes O / l and lse2 = m + log2(l) to the workspace; the combine
 * kernel merges splits by their LSE and writes bf16 out and fp32 lse (natural log). With one split
 * the main kernel writes out and lse itself and no workspace is used.
 *
 * Capture safety: split ranges are computed on the device from seqlens; the host decides only the
 * grid from shapes and num_cus (hip_impls.c, mla_flash_plan_make). Keys at or past a row's visible
 * length are masked to -inf before the softmax; cache rows at or past the block's visible length,
 * and block_table entries they would need, are never read: their shared-memory rows are zero-filled
 * (cp.async with a source size of 0) so that 0-weights never meet NaN in a matrix product. Cache
 * offsets are computed in 64 bits.
 *
 * Kernels (hip_flash.h lists the instances of each arch):
 *   mla_flash_warp   warp-level tiles. Warp w owns row group w % (BLOCK_H/16) and column group
 *                    w / (BLOCK_H/16): its share of the tile's keys for S and its share of the 512
 *                    output columns for O; row maxima and sums are exchanged through shared memory,
 *                    P goes through shared memory (bf16) to become the A operand of P V. NVIDIA:
 *                    cp.async ring of num_stages tiles, Q tile in shared memory; fp8: raw
 *                    codes decoded in registers straight into f16 m16n8k16 fragments, Q as f16
 *                    fragments scaled per row by a power of two (warp_tile_f16). gfx942: Q as MFMA fragments in
 *                    registers, one LDS tile, fp8 decoded while loading B fragments.
 *   mla_flash_wgmma  sm_90a: BLOCK_H 64 x BLOCK_N 64, two warpgroups. Warpgroup 0: S (wgmma
 *                    m64n64k16, Q and K from shared memory), softmax, P to registers (its own A
 *                    operand) and shared memory; both warpgroups: O += P V on 256 columns each
 *                    (m64n256k16, V MN-major from the same tile). Two-stage cp.async ring, loops
 *                    specialized per warpgroup (bf16). fp8 is mla_flash_wgmma_sd: two raw stages
 *                    and one decoded tile, decoded 3 atoms of 64 dims per barrier by all threads while
 *                    warpgroup 0's S runs on the atoms already decoded (the register path of
 *                    mla_flash_wgmma<true>, MLA_WG_FP8_REGPATH, measured slower).
 *   mla_flash_wgmma_t  sm_90a: BLOCK_H 16 or 32, the transposed products (S^T = K Q^T, O^T = V^T
 *                    P^T, M = keys or output dims, N = the block's rows): no padding of h_q <= 16
 *                    (32) to 64 rows. fp8: raw tiles loaded into registers (and, at BLOCK_H 16,
 *                    alternately into one raw shared slot) by both warpgroups and decoded into the
 *                    free bf16 stage; warpgroup 0 decodes while its S^T runs.
 *   mla_flash_combine  one warp per (batch, row): LSE-weighted sum of the splits.
 */
#include "hip_compat.h"
#include "mma.h"
#include "hip_flash.h"
#include "hip_impls.h"
#include "../mla_numeric.h"

#include <limits.h>
#include <math.h>

namespace {

constexpr int D_QK = MLA_D_QK;
constexpr int D_V = MLA_D_V;
constexpr int ROW_BF16 = MLA_FLASH_ROW_BF16;

struct FlashParams {
	const uint16_t *q;
	const uint8_t *kv;
	const int32_t *block_table;
	const int32_t *seqlens;
	uint16_t *out;
	float *lse;
	float *o_part;   /* [slots][m_total][512], O / l of each split (slots: see Seg) */
	float *lse_part; /* [slots][m_total], m + log2(l), -inf for an empty split */
	int32_t batch;
	int32_t s_q;
	int32_t h_q;
	int32_t m_total;
	int32_t page_size;
	int32_t max_pages;
	int32_t num_splits; /* uniform splits: splits per sequence; balanced: workspace slots */
	int32_t parts;      /* 0: uniform splits; > 0: balanced, ranges per head block (Seg) */
	int32_t block_h;    /* rows per head block (the combine's balanced schedule) */
	float scale_log2; /* softmax_scale * log2(e) (* kv_scale for fp8) */
	float out_scale;  /* 1 (bf16) or kv_scale (fp8) */
};

/* KV range of one block: tiles [t_begin, t_end) of the keys [0, kv_len) its rows can see. */
struct BlockRange {
	int seqlen;
	int kv_len;
	int t_begin;
	int t_end;
};

/* Keys of batch element b (its length seqlen) that the rows [m0, m0 + bh) can see. */
VS_DEV int block_kv_len(const FlashParams &p, int seqlen, int m0, int bh)
{
	int m_last = min(m0 + bh, p.m_total) - 1;

	return max(0, min(seqlen - p.s_q + 1 + m_last / p.h_q, seqlen));
}

VS_DEV BlockRange block_range(const FlashParams &p, int b, int split, int m0, int bh, int bn)
{
	BlockRange r;
	int tiles, per;

	r.seqlen = p.seqlens[b];
	r.kv_len = block_kv_len(p, r.seqlen, m0, bh);
	tiles = (r.kv_len + bn - 1) / bn;
	per = (tiles + p.num_splits - 1) / p.num_splits;
	r.t_begin = min(split * per, tiles);
	r.t_end = min(r.t_begin + per, tiles);
	return r;
}

/*
 * Balanced schedule (p.parts > 0; FlashMLA's tile scheduler, get_mla_metadata, computed in every
 * block and in the combine from seqlens, so no metadata kernel and nothing on the host depends on
 * seqlens). For one head block, batch element b spans PART_OV + T_b positions on one line (T_b its
 * KV tiles, 0 positions when T_b is 0; the PART_OV positions weigh a segment's prologue and
 * epilogue), in batch order; the line is cut into p.parts ranges of c = max(ceil(total / parts),
 * PART_MIN) positions, range j for the block (head block, j). A block works through the segments
 * of its range: (b, the tiles of b in it). A batch element whose tiles all fall in one range is
 * written to out and lse directly (slot -1); the others write workspace slot j + b, which no other
 * segment shares (if range j holds tiles of b and range j' = j - d of b + d, d > 0, then b + d
 * would lie before b on the line), so there are parts + batch - 1 slots. The combine merges them
 * and writes the rows of batch elements with no tile.
 */
#if !defined(MLA_PART_OV)
#define MLA_PART_OV 4 /* 4 against 1, 2 and 8 on the H200 (BENCHMARKS.md, 2026-12-01 22:46) */
#endif
#if !defined(MLA_PART_MIN)
#define MLA_PART_MIN 4
#endif
constexpr int PART_OV = MLA_PART_OV;
constexpr int PART_MIN = MLA_PART_MIN;

VS_DEV int warp_sum_i(int v)
{
#pragma unroll
	for (int m = VS_WARP / 2; m > 0; m >>= 1)
		v += vs_shfl_xor_i(v, m);
	return v;
}

/* Positions of batch element b on head block m0's line (every lane of a warp calls it). */
VS_DEV int part_span(const FlashParams &p, int b, int m0, int bh, int bn)
{
	const int t = (block_kv_len(p, p.seqlens[b], m0, bh) + bn - 1) / bn;

	return t > 0 ? t + PART_OV : 0;
}

/* Positions per range of a line of `total` positions. */
VS_DEV int part_size(const FlashParams &p, int total)
{
	return max((total + p.parts - 1) / p.parts, PART_MIN);
}

struct PartLine {
	int c;     /* positions per range */
	int s_b;   /* first position of batch element b (b == p.batch: the line's end) */
	int b;
};

/*
 * The line's length and range size, and the batch element holding position x with its first
 * position (the first b with s_b + span_b > x; p.batch when x is past the end). Whole warps call
 * it (warp sums); every warp of a block computes the same values.
 */
VS_DEV PartLine part_find(const FlashParams &p, int m0, int bh, int bn, int j)
{
	const int lane = vs_lane();
	PartLine L;
	int total = 0, acc = 0;

	for (int base = 0; base < p.batch; base += VS_WARP)
		total += warp_sum_i(base + lane < p.batch ? part_span(p, base + lane, m0, bh, bn) : 0);
	L.c = part_size(p, total);
	L.b = p.batch;
	L.s_b = total;
	const int x = j * L.c;

	if (x >= total)
		return L;
	for (int base = 0; base < p.batch; base += VS_WARP) {
		const int t = base + lane < p.batch ? part_span(p, base + lane, m0, bh, bn) : 0;
		const int sum = warp_sum_i(t);

		if (acc + sum > x) {
			/* the smallest lane k with acc + t[0] + ... + t[k] > x */
			int lo = 0, hi = VS_WARP - 1;

			while (lo < hi) {
				const int mid = (lo + hi) >> 1;

				if (acc + warp_sum_i(lane <= mid ? t : 0) > x)
					hi = mid;
				else
					lo = mid + 1;
			}
			L.b = base + lo;
			L.s_b = acc + warp_sum_i(lane < lo ? t : 0);
			break;
		}
		acc += sum;
	}
	return L;
}

/*
 * The segments of one block: uniform splits (p.parts == 0) give one, batch element vs_bid_z(),
 * split vs_bid_y() (its range comes from block_range after Q is on its way); balanced ones give
 * those of range vs_bid_y() (above).
 */
struct Seg {
	int b;        /* batch element */
	int slot;     /* workspace slot, -1: out and lse directly */
	BlockRange r; /* balanced: set by seg_next; uniform: by the kernel (block_range) */
	PartLine L;   /* balanced: the next batch element to look at */
	int pos, end; /* balanced: next position and end of this block's range */
};

VS_DEV bool seg_next(const FlashParams &p, Seg &sg, int m0, int bh, int bn)
{
	while (sg.pos < sg.end && sg.L.b < p.batch) {
		const int b = sg.L.b, seqlen = p.seqlens[b];
		const int kv_len = block_kv_len(p, seqlen, m0, bh);
		const int t = (kv_len + bn - 1) / bn;
		const int first = sg.L.s_b + PART_OV; /* position of tile 0 */

		if (t > 0 && first >= sg.end)
			return false; /* the range ends in b's overhead: no tile of b or a later one */
		sg.L.b++;
		sg.L.s_b += t > 0 ? t + PART_OV : 0;
		if (t == 0)
			continue;
		sg.b = b;
		sg.r.seqlen = seqlen;
		sg.r.kv_len = kv_len;
		sg.r.t_begin = max(sg.pos, first) - first;
		sg.r.t_end = min(sg.end, first + t) - first;
		sg.slot = first / sg.L.c == (first + t - 1) / sg.L.c ? -1 : vs_bid_y() + b;
		sg.pos = first + sg.r.t_end;
		return true;
	}
	return false;
}

/* The one segment of a uniform split (its range: block_range). */
VS_DEV void seg_uniform(const FlashParams &p, Seg &sg)
{
	sg.b = vs_bid_z();
	sg.slot = p.num_splits == 1 ? -1 : sg.b * p.num_splits + vs_bid_y();
}

/* The block's first segment of a balanced schedule (false: none). */
VS_DEV bool seg_first(const FlashParams &p, Seg &sg, int m0, int bh, int bn)
{
	sg.L = part_find(p, m0, bh, bn, vs_bid_y());
	sg.pos = vs_bid_y() * sg.L.c;
	sg.end = sg.pos + sg.L.c;
	return seg_next(p, sg, m0, bh, bn);
}

/*
 * The work of one block of the 64-row wgmma kernels: segment(sg) for the uniform split's one
 * segment, or for each segment of the balanced range, with a block barrier between two (the next
 * segment reuses every buffer).
 */
template <bool BAL, class F>
VS_DEV void for_each_segment(const FlashParams &p, int m0, F &&segment)
{
	Seg sg;

	if constexpr (!BAL) {
		seg_uniform(p, sg);
		segment(sg);
	} else {
		for (bool more = seg_first(p, sg, m0, 64, 64); more; more = seg_next(p, sg, m0, 64, 64)) {
			segment(sg);
			vs_syncthreads();
		}
	}
}

/* Keys a row m can see (causal for s_q > 1); 0 for padding rows past m_total. */
VS_DEV int row_limit(const FlashParams &p, int seqlen, int m)
{
	return m < p.m_total ? seqlen - p.s_q + 1 + m / p.h_q : 0;
}

/*
 * Keys [lo, hi) of a block are visible to some of its rows and not to others (s_q > 1: a sequence's
 * last keys; lo the first row's limit, hi the block's kv_len). A NaN in their V dims would reach the
 * rows that cannot see them through P V (P = 0 times NaN), where the reference has none. Between S
 * and P V, those NaN become 0 in the tile: the rows that see such a key already have a NaN score
 * (its 576 dims hold the V dims), so they stay NaN through l, as in the reference (gpu_parity case
 * onetile-nan-h20-sq2-fp8). A bf16 inf there is left alone.
 */
VS_DEV void masked_keys(const FlashParams &p, const BlockRange &r, int m0, int &lo, int &hi)
{
	lo = max(0, row_limit(p, r.seqlen, m0));
	hi = r.kv_len;
}

VS_DEV bool tile_has_masked_keys(int t, int bn, int lo, int hi)
{
	return lo < hi && t * bn < hi && (t + 1) * bn > lo;
}

VS_DEV uint32_t bf16x2_nan_to_zero(uint32_t w)
{
	const uint32_t lo = (w & 0x7fffu) > 0x7f80u ? 0u : (w & 0xffffu);
	const uint32_t hi = ((w >> 16) & 0x7fffu) > 0x7f80u ? 0u : (w & 0xffff0000u);

	return lo | hi;
}

VS_DEV uint32_t fp8x4_nan_to_zero(uint32_t w)
{
	uint32_t o = 0;

#pragma unroll
	for (int i = 0; i < 4; i++)
		o |= ((w >> (8 * i)) & 0xffu) == 0x80u ? 0u : w & (0xffu << (8 * i));
	return o;
}

/*
 * The NaN of the V dims of tile t's masked keys to 0 (CODES: raw fp8 codes 0x80, else bf16): rows of
 * the tile from t * bn, 16-byte chunk c of V row r at chunk(r, c); threads x of n.
 */
template <bool CODES, class CHUNK>
VS_DEV void zero_masked_v_nan(int t, int bn, int lo, int hi, int x, int n, CHUNK chunk)
{
	constexpr int NC = CODES ? D_V / 16 : D_V / 8; /* chunks of a V row */
	const int k0 = max(lo - t * bn, 0), k1 = min(hi - t * bn, bn);

	for (int c = x; c < (k1 - k0) * NC; c += n) {
		vs_u32x4 *v = (vs_u32x4 *)chunk(k0 + c / NC, c % NC);
		vs_u32x4 y = *v;

		y.x = CODES ? fp8x4_nan_to_zero(y.x) : bf16x2_nan_to_zero(y.x);
		y.y = CODES ? fp8x4_nan_to_zero(y.y) : bf16x2_nan_to_zero(y.y);
		y.z = CODES ? fp8x4_nan_to_zero(y.z) : bf16x2_nan_to_zero(y.z);
		y.w = CODES ? fp8x4_nan_to_zero(y.w) : bf16x2_nan_to_zero(y.w);
		*v = y;
	}
}

/*
 * Byte offsets of cache rows, computed once per row and tile (not once per 16-byte chunk) and kept
 * in a small shared-memory ring one tile ahead of the copies that use them: -1 marks a row at or
 * past kv_len, which is never read (its shared row is zero-filled).
 */
VS_DEV long long row_offset(const FlashParams &p, int b, int j, int kv_len, int row_bytes)
{
	if (j >= kv_len)
		return -1;
	int32_t page = p.block_table[(size_t)b * (size_t)p.max_pages + (size_t)(j / p.page_size)];

	return ((long long)page * p.page_size + j % p.page_size) * row_bytes;
}

/* Two halves of row_offset: the block_table load early, the offset (and its store) late. */
struct RowFetch {
	int j;       /* -1: past kv_len */
	int32_t page;
};

VS_DEV RowFetch row_fetch(const FlashParams &p, int b, int j, int kv_len)
{
	RowFetch f = { -1, 0 };

	if (j < kv_len) {
		f.j = j;
		f.page = p.block_table[(size_t)b * (size_t)p.max_pages + (size_t)(j / p.page_size)];
	}
	return f;
}

VS_DEV long long row_fetch_offset(const FlashParams &p, RowFetch f, int row_bytes)
{
	return f.j < 0 ? -1 : ((long long)f.page * p.page_size + f.j % p.page_size) * row_bytes;
}

/* Final write of one (row, column pair) of a segment: bf16 out (slot -1), or fp32 partial. */
VS_DEV void store_out2(const FlashParams &p, int b, int slot, int m, int col, float v0, float v1)
{
	if (slot < 0) {
		*(uint32_t *)(p.out + ((size_t)b * p.m_total + m) * D_V + col) = vs_pack_bf16x2(v0, v1);
	} else {
		float *o = p.o_part + ((size_t)slot * p.m_total + m) * D_V + col;

		o[0] = v0;
		o[1] = v1;
	}
}

VS_DEV void store_out1(const FlashParams &p, int b, int slot, int m, int col, float v)
{
	if (slot < 0)
		p.out[((size_t)b * p.m_total + m) * D_V + col] = (uint16_t)(vs_pack_bf16x2(v, 0.f) & 0xffffu);
	else
		p.o_part[((size_t)slot * p.m_total + m) * D_V + col] = v;
}

/*
 * lse of row m for this segment: l == 0 means no key seen; a NaN l (a visible NaN code in the KV)
 * gives a NaN lse and, through O / l, a NaN output, as in the reference.
 */
VS_DEV void store_lse(const FlashParams &p, int b, int slot, int m, float m_run, float l)
{
	if (slot < 0) {
		int i = m / p.h_q, h = m % p.h_q;

		p.lse[((size_t)b * p.h_q + h) * p.s_q + i] = l != 0.f ? (m_run + vs_log2f(l)) * VS_LN2 : INFINITY;
	} else {
		p.lse_part[(size_t)slot * p.m_total + m] = l != 0.f ? m_run + vs_log2f(l) : -INFINITY;
	}
}

#if defined(VS_PLATFORM_NVIDIA)
/*
 * A block with no KV tile in its range (every row empty, or a split past the last tile): out 0 and
 * lse +inf with coalesced 16-byte stores (num_splits 1), or lse_part -inf alone (the combine reads
 * no o_part of a split whose weight is 0). Returns true when the block is done.
 */
VS_DEV bool store_empty_block(const FlashParams &p, const BlockRange &r, int b, int slot, int m0, int bh,
			      int tid, int nthreads)
{
	if (r.t_begin < r.t_end)
		return false;
	const int rows = min(bh, p.m_total - m0);

	if (slot < 0) {
		for (int c = tid; c < rows * (D_V / 8); c += nthreads) {
			const int row = c / (D_V / 8), ch = c % (D_V / 8);

			*(vs_u32x4 *)(p.out + ((size_t)b * p.m_total + m0 + row) * D_V + ch * 8) = vs_u32x4{ 0u, 0u, 0u, 0u };
		}
	}
	for (int row = tid; row < rows; row += nthreads)
		store_lse(p, b, slot, m0 + row, 0.f, 0.f);
	return true;
}
#endif /* VS_PLATFORM_NVIDIA */

#if defined(VS_PLATFORM_NVIDIA)
/* ------------------------------------------------------------ cp.async (NVIDIA) */

/* 16 bytes global -> shared, asynchronously; src_bytes 0 zero-fills and reads nothing. */
VS_DEV void cp_async16(void *smem, const void *gmem, bool valid)
{
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(vs_smem_addr(smem)),
		     "l"(gmem), "r"(valid ? 16 : 0)
		     : "memory");
}

VS_DEV void cp_async_commit(void) { asm volatile("cp.async.commit_group;" ::: "memory"); }

template <int N>
VS_DEV void cp_async_wait(void)
{
	asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
#endif /* VS_PLATFORM_NVIDIA */

/* Decode 16 fp8 codes into 16 bf16 (two 16-byte vectors). */
VS_DEV void fp8x16_to_bf16x16(vs_u32x4 w, vs_u32x4 &o0, vs_u32x4 &o1)
{
	uint32_t r[8];

	mma_fp8x4_to_bf16x4(w.x, r[0], r[1]);
	mma_fp8x4_to_bf16x4(w.y, r[2], r[3]);
	mma_fp8x4_to_bf16x4(w.z, r[4], r[5]);
	mma_fp8x4_to_bf16x4(w.w, r[6], r[7]);
	o0.x = r[0];
	o0.y = r[1];
	o0.z = r[2];
	o0.w = r[3];
	o1.x = r[4];
	o1.y = r[5];
	o1.z = r[6];
	o1.w = r[7];
}

/* ================================================================ warp-level kernel */

template <int BN, int BH, int NW, int ST, bool FP8, bool DT_ = false>
struct WarpTraits {
	static constexpr bool DT = DT_;
#if defined(VS_PLATFORM_AMD)
	static constexpr bool AMD = true;
#else
	static constexpr bool AMD = false;
#endif
	static constexpr int RG = BH / 16;      /* row groups of 16 */
	static constexpr int CG = NW / RG;      /* column groups: keys of S, columns of O */
	static constexpr int NKW = BN / CG;     /* keys per warp in S */
	static constexpr int NCW = D_V / CG;    /* output columns per warp */
	static constexpr int NT_S = NKW / 16;
	static constexpr int NT_O = NCW / 16;
	static constexpr int THREADS = NW * VS_WARP;
	static constexpr int LDK = ROW_BF16 / 2; /* bf16 elements per shared row */
	static_assert(LDK * 2 == ROW_BF16, "bf16 rows");
	static constexpr int RAW_ROW = AMD ? MLA_FLASH_ROW_FP8_AMD : MLA_FLASH_ROW_FP8_NV;
	static constexpr int STAGE_ROW = FP8 ? RAW_ROW : ROW_BF16;
	static constexpr int LDP = BN + 8;
	/*
	 * NVIDIA fp8: F16, f16 products with the codes decoded in registers; or DT (the decoded-tile
	 * twin, MLA_FLASH_WARP_DT), each tile decoded once into a bf16 tile that the bf16 path reads.
	 */
	static constexpr bool F16 = FP8 && !AMD && !DT;
	static constexpr int KV_OFF = AMD ? 0 : BH * ROW_BF16;
	static constexpr int P_OFF = KV_OFF + ST * BN * STAGE_ROW;
	static constexpr int MAX_OFF = P_OFF + BH * LDP * 2;
	static constexpr int SUM_OFF = MAX_OFF + CG * BH * 4;
	static constexpr int RING = MLA_FLASH_RING(ST);
	static constexpr int ROW_OFF = SUM_OFF + CG * BH * 4;
	static constexpr int QSC_OFF = ROW_OFF + RING * BN * 8; /* F16: score scale of each row */
	static constexpr int CONV_OFF = QSC_OFF + (F16 ? BH * 4 : 0); /* DT: the decoded bf16 tile */
	static constexpr int SMEM = CONV_OFF + (DT ? BN * ROW_BF16 : 0);
	static constexpr int SRC_ROW = FP8 ? D_QK : D_QK * 2; /* bytes of one cache row */
	static constexpr int CHUNKS = SRC_ROW / 16;          /* 16-byte chunks per cache row */

	static_assert(SMEM == (DT ? MLA_FLASH_WARP_DT_SMEM(BN, BH, NW, ST) : MLA_FLASH_WARP_SMEM(BN, BH, NW, ST, FP8, AMD)),
		      "smem formula");
	static_assert(!DT || (FP8 && !AMD), "the decoded-tile kernel is NVIDIA fp8's");
	static_assert(BH % 16 == 0 && NW % RG == 0 && NKW % 16 == 0 && NKW >= 16, "tile shape");
	static_assert(AMD ? ST == 1 : ST >= 2, "stages");
	static_assert(!F16 || NCW % 128 == 0, "f16 path: 16-byte loads of V per key and lane");
};

/* One KV tile into shared memory; rowoff = the tile's row offsets (row_offset()). */
template <class T>
VS_DEV void warp_load_tile(const FlashParams &p, unsigned char *dst, const long long *rowoff, int tid)
{
	constexpr int BN = T::NKW * T::CG;
	constexpr int TOTAL = BN * T::CHUNKS;
	constexpr int TPR = T::THREADS / BN; /* threads per row */

#if defined(VS_PLATFORM_NVIDIA)
	/*
	 * TPR threads per cache row, one row offset each, chunks sub, sub + TPR, ...: the copies of a
	 * thread differ by immediate offsets only, and TPR neighbouring lanes read TPR x 16 contiguous
	 * bytes per copy (H200, issue 17: the per-chunk row and offset arithmetic below cost about 30
	 * instructions per 16-byte copy).
	 */
	if constexpr (T::THREADS % BN == 0 && T::CHUNKS % TPR == 0) {
		const int row = tid / TPR, sub = tid % TPR;
		const long long off = rowoff[row];
		const bool valid = off >= 0;
		const uint8_t *src = p.kv + (valid ? off : 0) + sub * 16;
		unsigned char *d = dst + row * T::STAGE_ROW + sub * 16;

#pragma unroll
		for (int j = 0; j < T::CHUNKS / TPR; j++)
			cp_async16(d + j * TPR * 16, src + j * TPR * 16, valid);
	} else
#endif /* VS_PLATFORM_NVIDIA */
	{
#pragma unroll 6
		for (int i = 0; i < (TOTAL + T::THREADS - 1) / T::THREADS; i++) {
			int c = tid + i * T::THREADS;

			if (TOTAL % T::THREADS != 0 && c >= TOTAL)
				break;
			int row = c / T::CHUNKS, ch = c % T::CHUNKS;
			long long off = rowoff[row];
			bool valid = off >= 0;
			const uint8_t *src = p.kv + (valid ? off : 0) + ch * 16;
			unsigned char *d = dst + row * T::STAGE_ROW + ch * 16;

#if defined(VS_PLATFORM_AMD)
			vs_u32x4 v = { 0u, 0u, 0u, 0u };

			if (valid)
				v = *(const vs_u32x4 *)src;
			*(vs_u32x4 *)d = v;
#else
			cp_async16(d, src, valid);
#endif /* platform */
		}
	}
}

#if defined(VS_PLATFORM_NVIDIA)
template <class T, int BH>
VS_DEV void warp_load_q(const FlashParams &p, unsigned char *sQ, int b, int m0, int tid)
{
#pragma unroll 4
	for (int i = 0; i < (BH * 72 + T::THREADS - 1) / T::THREADS; i++) {
		int c = tid + i * T::THREADS;

		if ((BH * 72) % T::THREADS != 0 && c >= BH * 72)
			break;
		int row = c / 72, ch = c % 72;
		int m = m0 + row;
		bool valid = m < p.m_total;
		const uint16_t *src = p.q + (valid ? ((size_t)b * p.m_total + m) * D_QK + ch * 8 : 0);

		cp_async16(sQ + row * ROW_BF16 + ch * 16, src, valid);
	}
}

/*
 * DT: a raw fp8 tile (rows of RAW_ROW bytes) -> the bf16 tile (rows of ROW_BF16 bytes), every code
 * exact (fp8x16_to_bf16x16: 0x80 -> NaN), 16 codes per thread and step (as before 2026-12-02 10:37).
 */
template <class T>
VS_DEV void warp_convert_fp8(const unsigned char *raw, unsigned char *conv, int tid)
{
	constexpr int BN = T::NKW * T::CG;

#pragma unroll 4
	for (int i = 0; i < (BN * 36 + T::THREADS - 1) / T::THREADS; i++) {
		int c = tid + i * T::THREADS;

		if ((BN * 36) % T::THREADS != 0 && c >= BN * 36)
			break;
		int row = c / 36, ch = c % 36;
		vs_u32x4 w = *(const vs_u32x4 *)(raw + row * T::RAW_ROW + ch * 16);
		vs_u32x4 o0, o1;

		fp8x16_to_bf16x16(w, o0, o1);
		*(vs_u32x4 *)(conv + row * ROW_BF16 + ch * 32) = o0;
		*(vs_u32x4 *)(conv + row * ROW_BF16 + ch * 32 + 16) = o1;
	}
}
#endif /* VS_PLATFORM_NVIDIA */

/*
 * fp8 (F16 path): Q rows -> f16 in shared memory, each row scaled by a power of two 2^(14 - k) (k
 * the exponent of its largest |q|; 1 for a row of zeros, inf or NaN) so that bf16's range fits
 * f16's; every bf16 value then converts exactly unless it lies 2^29 below its row's largest. Layout:
 * the m16n8k16 A fragments themselves (warp_s_f16's k order), one 16-byte load each: the fragment
 * of k step (k2, c) for row group rg in lane (g, t4) is chunk ((2 k2 + c) * RG + rg) * 32 + 4 g + t4,
 * its words (row g, dims d, d + 1), (row g + 8, d, d + 1), (row g, d + 2, d + 3), (row g + 8, d + 2,
 * d + 3) with d = 32 k2 + 8 t4 + 4 c (consecutive lanes, consecutive chunks). sQsc[row]: the score scale
 * of the row, scale_log2 * 2^(k - 7) (the 2^-7 of the f16 codes and the row's 2^(14 - k) undone).
 * Eight threads per row, nine chunks each.
 */
#if defined(VS_PLATFORM_NVIDIA)
template <class T, int BH>
VS_DEV void warp_load_q_f16(const FlashParams &p, unsigned char *sQ, float *sQsc, int b, int m0, int tid)
{
	static_assert(T::THREADS % 32 == 0 && BH % 4 == 0, "eight threads per row, whole warps");
	for (int row0 = 0; row0 < BH; row0 += T::THREADS / 8) {
		const int row = row0 + tid / 8, part = tid % 8;
		const int m = m0 + row;

		if (row >= BH) /* whole warps */
			break;
		const bool valid = m < p.m_total;
		const uint16_t *src = p.q + ((size_t)b * p.m_total + (valid ? m : 0)) * D_QK;
		vs_u32x4 v[9];
		float mx = 0.f;
		bool odd = false; /* inf or NaN in the row */

#pragma unroll
		for (int i = 0; i < 9; i++) {
			v[i] = valid ? *(const vs_u32x4 *)(src + (part + 8 * i) * 8) : vs_u32x4{ 0u, 0u, 0u, 0u };
			const uint32_t w[4] = { v[i].x, v[i].y, v[i].z, v[i].w };

#pragma unroll
			for (int j = 0; j < 4; j++) {
				const float lo = fabsf(__uint_as_float(w[j] << 16)), hi = fabsf(__uint_as_float(w[j] & 0xffff0000u));

				odd = odd || !(lo <= 3.4e38f) || !(hi <= 3.4e38f);
				mx = fmaxf(mx, fmaxf(lo, hi));
			}
		}
#pragma unroll
		for (int x = 1; x < 8; x <<= 1) {
			mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, x));
			odd = __shfl_xor_sync(0xffffffffu, (int)odd, x) || odd;
		}
		int k = 14;

		if (!odd && mx > 0.f)
			k = max((int)((__float_as_uint(mx) >> 23) & 0xff) - 127, -113);
		const float qs = __uint_as_float((uint32_t)(127 + 14 - k) << 23);

		const int r16 = row & 15, rg = row >> 4;

#pragma unroll
		for (int i = 0; i < 9; i++) {
			const int ch = part + 8 * i; /* dims 8 ch .. 8 ch + 7: k2 = ch / 4, t4 = ch % 4 */
			const uint32_t w[4] = { v[i].x, v[i].y, v[i].z, v[i].w };

#pragma unroll
			for (int j = 0; j < 4; j++) { /* dims 8 ch + 2 j, + 1: c = j / 2, word 2 (j % 2) + r16 / 8 */
				const int chunk = ((2 * (ch >> 2) + (j >> 1)) * (BH / 16) + rg) * 32 + 4 * (r16 & 7) + (ch & 3);

				*(uint32_t *)(sQ + chunk * 16 + 4 * (2 * (j & 1) + (r16 >> 3))) =
					vs_pack_f16x2(__uint_as_float(w[j] << 16) * qs, __uint_as_float(w[j] & 0xffff0000u) * qs);
			}
		}
		if (part == 0)
			sQsc[row] = p.scale_log2 * __uint_as_float((uint32_t)(127 + k - 7) << 23);
	}
}
#endif /* VS_PLATFORM_NVIDIA */

/* Per-warp state of the online softmax. */
template <class T>
struct WarpState {
	int lim[MMA_C_ROWS];
	int mlo, mhi; /* keys visible to some rows of the block only (masked_keys) */
	float sc[MMA_C_ROWS]; /* score scale (base 2) of the row: scale_log2, or the F16 path's sQsc */
	float m_run[MMA_C_ROWS];
	float l_run[MMA_C_ROWS];
	mma_frag_c o[T::NT_O];
};

/*
 * F16 path: the column of P (and the k slot of P V's A fragment) that key c (0..15) of a 16-key
 * step takes. P V's B fragment then holds, in lane (g, t4), keys t4, t4 + 4 (x[0]) and t4 + 8,
 * t4 + 12 (x[1]): 16-byte loads of four cache rows 4 apart, conflict-free at 608-byte rows.
 */
VS_DEV int f16_p_slot(int c) { return 2 * (c & 3) + ((c >> 2) & 1) + 8 * (c >> 3); }

/*
 * The softmax of one tile in the warp kernel: scale (base 2), mask, row maxima (across the column
 * groups through sMax), the online update of m, l and O, P to shared memory (bf16; F16: f16 in the
 * columns of f16_p_slot). s[0] holds S on entry.
 */
template <class T>
VS_DEV void warp_softmax(WarpState<T> &st, mma_frag_c (&s)[2][T::NT_S], uint16_t *sP, float *sMax, int t,
			 int lane, int rg, int cg)
{
	constexpr int BN = T::NKW * T::CG;
	constexpr int BH = T::RG * 16;
	float mx[MMA_C_ROWS];

#pragma unroll
	for (int rs = 0; rs < MMA_C_ROWS; rs++)
		mx[rs] = -INFINITY;
#pragma unroll
	for (int nt = 0; nt < T::NT_S; nt++)
#pragma unroll
		for (int e = 0; e < MMA_C_ELEMS; e++) {
			int rs = mma_c_rowslot(e);
			int j = t * BN + cg * T::NKW + nt * 16 + mma_c_col(lane, e);
			float v = s[0][nt].x[e] + s[1][nt].x[e];

			v = j < st.lim[rs] ? v * st.sc[rs] : -INFINITY;
			s[0][nt].x[e] = v;
			mx[rs] = vs_fmaxf(mx[rs], v);
		}
#pragma unroll
	for (int rs = 0; rs < MMA_C_ROWS; rs++)
		mx[rs] = mma_row_max(mx[rs]);
	if (T::CG > 1) {
		if (mma_row_leader(lane))
#pragma unroll
			for (int rs = 0; rs < MMA_C_ROWS; rs++)
				sMax[cg * BH + rg * 16 + mma_rowslot_row(lane, rs)] = mx[rs];
		vs_syncthreads();
#pragma unroll
		for (int rs = 0; rs < MMA_C_ROWS; rs++) {
			int row = rg * 16 + mma_rowslot_row(lane, rs);
			float v = sMax[row];

#pragma unroll
			for (int c = 1; c < T::CG; c++)
				v = vs_fmaxf(v, sMax[c * BH + row]);
			mx[rs] = v;
		}
	}

	/* Online softmax: new running max, rescale factor, probabilities, partial row sums. */
	float alpha[MMA_C_ROWS], mu[MMA_C_ROWS];

#pragma unroll
	for (int rs = 0; rs < MMA_C_ROWS; rs++) {
		float m_new = vs_fmaxf(st.m_run[rs], mx[rs]);

		mu[rs] = m_new == -INFINITY ? 0.f : m_new;
		alpha[rs] = vs_exp2f(st.m_run[rs] - mu[rs]);
		st.m_run[rs] = m_new;
		st.l_run[rs] *= alpha[rs];
	}
#pragma unroll
	for (int nt = 0; nt < T::NT_S; nt++)
#pragma unroll
		for (int e = 0; e < MMA_C_ELEMS; e++) {
			int rs = mma_c_rowslot(e);
			float pe = vs_exp2f(s[0][nt].x[e] - mu[rs]);

			st.l_run[rs] += pe;
			s[0][nt].x[e] = pe;
		}

	/* P -> shared memory, rows of this warp, columns of its keys. */
#pragma unroll
	for (int nt = 0; nt < T::NT_S; nt++) {
#if defined(VS_PLATFORM_NVIDIA)
#pragma unroll
		for (int e = 0; e < MMA_C_ELEMS; e += 2) {
			int row = rg * 16 + mma_c_row(lane, e);
			int col = cg * T::NKW + nt * 16 + mma_c_col(lane, e);

			if (T::F16) {
				const uint32_t h = vs_pack_f16x2(s[0][nt].x[e], s[0][nt].x[e + 1]);
				uint16_t *prow = sP + row * T::LDP + (col & ~15);

				prow[f16_p_slot(col & 15)] = (uint16_t)(h & 0xffffu);
				prow[f16_p_slot((col + 1) & 15)] = (uint16_t)(h >> 16);
			} else {
				*(uint32_t *)(sP + row * T::LDP + col) = vs_pack_bf16x2(s[0][nt].x[e], s[0][nt].x[e + 1]);
			}
		}
#else
#pragma unroll
		for (int e = 0; e < MMA_C_ELEMS; e++) {
			int row = rg * 16 + mma_c_row(lane, e);
			int col = cg * T::NKW + nt * 16 + mma_c_col(lane, e);

			sP[row * T::LDP + col] = (uint16_t)vs_bf16_rne(s[0][nt].x[e]);
		}
#endif /* platform */
	}
	bool moved = false;

#pragma unroll
	for (int rs = 0; rs < MMA_C_ROWS; rs++)
		moved = moved || alpha[rs] != 1.f;
	if (moved) /* the running maxima of this lane's rows moved (the first tiles, mostly) */
#pragma unroll
		for (int nt = 0; nt < T::NT_O; nt++)
#pragma unroll
			for (int e = 0; e < MMA_C_ELEMS; e++)
				st.o[nt].x[e] *= alpha[mma_c_rowslot(e)];
}

/*
 * One KV tile: S for this warp's rows and keys, the online softmax update, P to shared memory,
 * O += P V for this warp's rows and columns. kvb is the bf16 tile (NVIDIA, or gfx942 bf16), raw
 * the fp8 tile (gfx942 fp8); qs the Q tile (NVIDIA) and qf the Q fragments (gfx942).
 */
template <class T>
VS_DEV void warp_tile(const FlashParams &p, WarpState<T> &st, const mma_frag_a *qf, const uint16_t *qs,
		      const uint16_t *kvb, const uint8_t *raw, uint16_t *sP, float *sMax, int t,
		      int lane, int rg, int cg)
{
	constexpr int BN = T::NKW * T::CG;
	mma_frag_c s[2][T::NT_S];

	(void)p;
	(void)qf;
	(void)qs;
	(void)raw;

#pragma unroll
	for (int c = 0; c < 2; c++)
#pragma unroll
		for (int nt = 0; nt < T::NT_S; nt++)
#pragma unroll
			for (int e = 0; e < MMA_C_ELEMS; e++)
				s[c][nt].x[e] = 0.f;

	/*
	 * S = Q K^T over 576 dims in two independent accumulation chains (even / odd k steps). gfx942
	 * indexes the Q fragments in registers: fully unrolled; NVIDIA unrolls a little, so the
	 * compiler does not hoist all 36 steps' ldmatrix loads into registers.
	 */
#if defined(VS_PLATFORM_AMD)
#pragma unroll
#else
#pragma unroll 3
#endif /* platform */
	for (int k2 = 0; k2 < D_QK / 32; k2++) {
#pragma unroll
		for (int c = 0; c < 2; c++) {
			const int kk = 2 * k2 + c;
			mma_frag_a a;

#if defined(VS_PLATFORM_AMD)
			a = qf[kk];
#else
			mma_load_a(a, qs + rg * 16 * T::LDK + kk * 16, T::LDK);
#endif /* platform */
#pragma unroll
			for (int nt = 0; nt < T::NT_S; nt++) {
				mma_frag_b kb;
				int key0 = cg * T::NKW + nt * 16;

#if defined(VS_PLATFORM_AMD)
				if (T::STAGE_ROW != ROW_BF16)
					mma_load_b_nk_fp8(kb, raw + key0 * T::RAW_ROW + kk * 16, T::RAW_ROW);
				else
#endif /* VS_PLATFORM_AMD */
					mma_load_b_nk(kb, kvb + key0 * T::LDK + kk * 16, T::LDK);
				mma_tile16(s[c][nt], a, kb);
			}
		}
#if defined(VS_PLATFORM_AMD)
		/* Keep LDS loads from being hoisted across many k steps (VGPR pressure). */
		__builtin_amdgcn_sched_barrier(0);
#endif /* VS_PLATFORM_AMD */
	}

	warp_softmax<T>(st, s, sP, sMax, t, lane, rg, cg);
	vs_syncthreads(); /* P complete; every warp is done with S */
	if (tile_has_masked_keys(t, BN, st.mlo, st.mhi)) {
#if defined(VS_PLATFORM_AMD)
		if (T::STAGE_ROW != ROW_BF16)
			zero_masked_v_nan<true>(t, BN, st.mlo, st.mhi, vs_tid(), T::THREADS, [&](int row, int c) {
				return (unsigned char *)raw + row * T::RAW_ROW + 16 * c;
			});
		else
#endif /* VS_PLATFORM_AMD */
			zero_masked_v_nan<false>(t, BN, st.mlo, st.mhi, vs_tid(), T::THREADS, [&](int row, int c) {
				return (unsigned char *)(kvb + row * T::LDK + 8 * c);
			});
		vs_syncthreads();
	}

	/* O += P V: P rows of this warp (all BN keys), V columns of this warp. */
#pragma unroll 1
	for (int kk = 0; kk < BN / 16; kk++) {
		mma_frag_a pa;

		mma_load_a(pa, sP + rg * 16 * T::LDP + kk * 16, T::LDP);
#pragma unroll
		for (int nt = 0; nt < T::NT_O; nt++) {
			mma_frag_b vb;
			int col0 = cg * T::NCW + nt * 16;

#if defined(VS_PLATFORM_AMD)
			if (T::STAGE_ROW != ROW_BF16)
				mma_load_b_kn_fp8(vb, raw + kk * 16 * T::RAW_ROW + col0, T::RAW_ROW);
			else
#endif /* VS_PLATFORM_AMD */
				mma_load_b_kn(vb, kvb + kk * 16 * T::LDK + col0, T::LDK);
			mma_tile16(st.o[nt], pa, vb);
		}
	}
}

#if defined(VS_PLATFORM_NVIDIA)
/*
 * Unroll of the F16 path's S loop (18 steps of 32 dims) and P V loop (BN / 16 steps): 3 and 4
 * (whole) against 2/1, 6/1, 2/2 and 6/2 on the H200, 1.115 ms against 1.208 ms at h_q 16, b 128,
 * 32K fp8 keys (BENCHMARKS.md, 2026-12-02 20:20). The whole S loop (18) spills (608 bytes).
 */
#if !defined(MLA_F16_S_UNROLL)
#define MLA_F16_S_UNROLL 3
#endif
#if !defined(MLA_F16_PV_UNROLL)
#define MLA_F16_PV_UNROLL 4
#endif
constexpr int F16_S_UNROLL = MLA_F16_S_UNROLL, F16_PV_UNROLL = MLA_F16_PV_UNROLL;
/*
 * F16 path, S = Q K^T for this warp's keys from the raw fp8 tile: lane (g, t4) loads 8 codes of
 * keys g and g + 8 (dims 32 k2 + 8 t4 .. + 7, one 8-byte load each), decodes them to f16 in
 * registers and uses them as the B fragments of two k16 steps; the k order inside a 32-dim block is
 * permuted (k slots 2 t4, 2 t4 + 1, 2 t4 + 8, 2 t4 + 9 of step c hold dims 8 t4 + 4 c + 0..3), which
 * Q's layout (warp_load_q_f16) follows, so the sum is unchanged. Returns the OR of
 * mma_fp8x4_nan_bits over the codes (EXACT = false: 0x80 decoded as -0, to be redone with EXACT = true).
 */
template <class T, bool EXACT>
VS_DEV uint32_t warp_s_f16(mma_frag_c (&s)[2][T::NT_S], const unsigned char *sQ, const uint8_t *raw, int lane,
			   int rg, int cg)
{
	const int g = lane >> 2, t4 = lane & 3;
	const unsigned char *qfrag = sQ + (rg * 32 + lane) * 16; /* step (k2, c): + (2 k2 + c) * RG * 512 */
	const uint8_t *krow = raw + (cg * T::NKW + g) * T::RAW_ROW + 8 * t4;
	uint32_t nan = 0;

#pragma unroll
	for (int c = 0; c < 2; c++)
#pragma unroll
		for (int nt = 0; nt < T::NT_S; nt++)
#pragma unroll
			for (int e = 0; e < MMA_C_ELEMS; e++)
				s[c][nt].x[e] = 0.f;
#pragma unroll F16_S_UNROLL
	for (int k2 = 0; k2 < D_QK / 32; k2++) {
		const vs_u32x4 qa = *(const vs_u32x4 *)(qfrag + (2 * k2) * T::RG * 512);
		const vs_u32x4 qb = *(const vs_u32x4 *)(qfrag + (2 * k2 + 1) * T::RG * 512);
		const uint32_t a0[4] = { qa.x, qa.y, qa.z, qa.w }, a1[4] = { qb.x, qb.y, qb.z, qb.w };

#pragma unroll
		for (int nt = 0; nt < T::NT_S; nt++) {
			const uint2 ka = *(const uint2 *)(krow + (nt * 16) * T::RAW_ROW + 32 * k2);
			const uint2 kb = *(const uint2 *)(krow + (nt * 16 + 8) * T::RAW_ROW + 32 * k2);
			uint32_t b[8];

			if (!EXACT)
				nan |= mma_fp8x4_nan_bits(ka.x) | mma_fp8x4_nan_bits(ka.y) | mma_fp8x4_nan_bits(kb.x) |
				       mma_fp8x4_nan_bits(kb.y);
			mma_fp8x4_to_f16x4<EXACT>(ka.x, b[0], b[1]);
			mma_fp8x4_to_f16x4<EXACT>(kb.x, b[2], b[3]);
			mma_fp8x4_to_f16x4<EXACT>(ka.y, b[4], b[5]);
			mma_fp8x4_to_f16x4<EXACT>(kb.y, b[6], b[7]);
			mma_m16n8k16_f16(&s[0][nt].x[0], a0, b[0], b[1]);
			mma_m16n8k16_f16(&s[0][nt].x[4], a0, b[2], b[3]);
			mma_m16n8k16_f16(&s[1][nt].x[0], a1, b[4], b[5]);
			mma_m16n8k16_f16(&s[1][nt].x[4], a1, b[6], b[7]);
		}
	}
	return nan;
}

/*
 * F16 path, O += P V: per 16-key step, lane (g, t4) loads the NCW / 8 consecutive dims
 * cg * NCW + (NCW / 8) g .. of keys t4, t4 + 4, t4 + 8, t4 + 12 (f16_p_slot) and builds the B
 * fragment of n8 block j (its column g = dim (NCW / 8) g + j) from byte j of each: the output
 * columns are permuted the same way (the F16 store at the end of mla_flash_warp).
 */
template <class T, bool EXACT>
VS_DEV void warp_pv_f16(WarpState<T> &st, const uint16_t *sP, const uint8_t *raw, int lane, int rg, int cg)
{
	constexpr int BN = T::NKW * T::CG;
	constexpr int NV = T::NCW / 32; /* words of codes per key row and lane */
	const int g = lane >> 2, t4 = lane & 3;
	const uint8_t *vrow = raw + t4 * T::RAW_ROW + cg * T::NCW + g * (T::NCW / 8);

#pragma unroll F16_PV_UNROLL
	for (int kk = 0; kk < BN / 16; kk++) {
		mma_frag_a pa;
		uint32_t v[4][NV];

		mma_load_a(pa, sP + rg * 16 * T::LDP + kk * 16, T::LDP);
#pragma unroll
		for (int r = 0; r < 4; r++) {
			const uint8_t *src = vrow + (kk * 16 + 4 * r) * T::RAW_ROW;

#pragma unroll
			for (int q = 0; q < NV; q += 4) {
				const vs_u32x4 x = *(const vs_u32x4 *)(src + 4 * q);

				v[r][q] = x.x;
				v[r][q + 1] = x.y;
				v[r][q + 2] = x.z;
				v[r][q + 3] = x.w;
			}
		}
#pragma unroll
		for (int q = 0; q < NV; q++) {
#define MLA_F16_PV(I)                                                                            \
	mma_m16n8k16_f16(&st.o[(4 * q + (I)) >> 1].x[4 * ((I) & 1)], pa.x,                             \
			 mma_fp8_pair_to_f16x2<(I), EXACT>(v[0][q], v[1][q]),                            \
			 mma_fp8_pair_to_f16x2<(I), EXACT>(v[2][q], v[3][q]))
			MLA_F16_PV(0);
			MLA_F16_PV(1);
			MLA_F16_PV(2);
			MLA_F16_PV(3);
#undef MLA_F16_PV
		}
	}
}

/*
 * F16 path, one KV tile (raw fp8 rows of RAW_ROW bytes; Q and the row scales from
 * warp_load_q_f16). The fast decoders give 0x80 (fnuz NaN) as -0; a warp whose keys hold one redoes
 * its S with the exact decoder, and a block where any warp found one does P V with it too (the
 * OR of the barrier that completes P).
 */
template <class T>
VS_DEV void warp_tile_f16(WarpState<T> &st, const unsigned char *sQ, uint8_t *raw, uint16_t *sP, float *sMax,
			  int t, int lane, int rg, int cg)
{
	constexpr int BN = T::NKW * T::CG;
	mma_frag_c s[2][T::NT_S];
	const bool nan = __any_sync(0xffffffffu, (warp_s_f16<T, false>(s, sQ, raw, lane, rg, cg) & 0x80808080u) != 0);

	if (nan)
		warp_s_f16<T, true>(s, sQ, raw, lane, rg, cg);
	warp_softmax<T>(st, s, sP, sMax, t, lane, rg, cg);
	const bool exact = __syncthreads_or(nan) != 0; /* P complete; every warp is done with S */

	if (tile_has_masked_keys(t, BN, st.mlo, st.mhi)) {
		zero_masked_v_nan<true>(t, BN, st.mlo, st.mhi, vs_tid(), T::THREADS,
					[&](int row, int c) { return raw + row * T::RAW_ROW + 16 * c; });
		vs_syncthreads();
	}
	if (exact)
		warp_pv_f16<T, true>(st, sP, raw, lane, rg, cg);
	else
		warp_pv_f16<T, false>(st, sP, raw, lane, rg, cg);
}
#endif /* VS_PLATFORM_NVIDIA */

template <int BN, int BH, int NW, int ST, bool FP8, bool DT = false>
__global__ void __launch_bounds__(NW * VS_WARP) mla_flash_warp(FlashParams p)
{
	typedef WarpTraits<BN, BH, NW, ST, FP8, DT> T;
#if defined(VS_PLATFORM_AMD)
	__shared__ __attribute__((aligned(16))) unsigned char smem[T::SMEM];
#else
	extern __shared__ __align__(1024) unsigned char smem[];
#endif /* platform */
	const int tid = vs_tid(), lane = vs_lane(), warp = tid / VS_WARP;
	const int rg = warp % T::RG, cg = warp / T::RG;
	const int split = vs_bid_y(), b = vs_bid_z(), m0 = vs_bid_x() * BH;
	const int slot = p.num_splits == 1 ? -1 : b * p.num_splits + split; /* uniform splits only */
	const BlockRange r = block_range(p, b, split, m0, BH, BN);
#if defined(VS_PLATFORM_NVIDIA)
	if (store_empty_block(p, r, b, slot, m0, BH, tid, T::THREADS))
		return;
#endif /* VS_PLATFORM_NVIDIA */
	uint16_t *sP = (uint16_t *)(smem + T::P_OFF);
	float *sMax = (float *)(smem + T::MAX_OFF);
	float *sSum = (float *)(smem + T::SUM_OFF);
	long long *sRow = (long long *)(smem + T::ROW_OFF);
	WarpState<T> st;

	masked_keys(p, r, m0, st.mlo, st.mhi);
#pragma unroll
	for (int rs = 0; rs < MMA_C_ROWS; rs++) {
		st.lim[rs] = row_limit(p, r.seqlen, m0 + rg * 16 + mma_rowslot_row(lane, rs));
		st.sc[rs] = p.scale_log2;
		st.m_run[rs] = -INFINITY;
		st.l_run[rs] = 0.f;
	}
#pragma unroll
	for (int nt = 0; nt < T::NT_O; nt++)
#pragma unroll
		for (int e = 0; e < MMA_C_ELEMS; e++)
			st.o[nt].x[e] = 0.f;

#if defined(VS_PLATFORM_AMD)
	/* Q rows of this warp as MFMA A fragments, straight from global memory. */
	mma_frag_a qf[D_QK / 16];
	{
		int m = m0 + rg * 16 + (lane & 15);
		const uint16_t *qrow = p.q + ((size_t)b * p.m_total + (m < p.m_total ? m : 0)) * D_QK;

#pragma unroll
		for (int kk = 0; kk < D_QK / 16; kk++) {
			mma_v4s v = { 0, 0, 0, 0 };

			if (m < p.m_total)
				v = mma_ld8(qrow + kk * 16 + 4 * (lane >> 4));
			qf[kk].v = v;
		}
	}
	if (r.t_begin < r.t_end) {
		for (int x = tid; x < BN; x += T::THREADS)
			sRow[(r.t_begin % T::RING) * BN + x] = row_offset(p, b, r.t_begin * BN + x, r.kv_len, T::SRC_ROW);
	}
	for (int t = r.t_begin; t < r.t_end; t++) {
		const bool fetch = tid < BN && t + 1 < r.t_end;
		RowFetch f = { -1, 0 };

		vs_syncthreads(); /* everyone is done with the previous tile; row offsets visible */
		warp_load_tile<T>(p, smem + T::KV_OFF, sRow + (t % T::RING) * BN, tid);
		if (fetch)
			f = row_fetch(p, b, (t + 1) * BN + tid, r.kv_len);
		vs_syncthreads();
		warp_tile<T>(p, st, qf, nullptr, (const uint16_t *)(smem + T::KV_OFF), smem + T::KV_OFF,
			     sP, sMax, t, lane, rg, cg);
		if (fetch)
			sRow[((t + 1) % T::RING) * BN + tid] = row_fetch_offset(p, f, T::SRC_ROW);
	}
#else
	const uint16_t *sQ = (const uint16_t *)smem;

	if (r.t_begin < r.t_end) {
		/*
		 * Prologue: Q (bf16: cp.async, riding with tile 0; F16: after the tiles are on their way),
		 * the row offsets of the first ST tiles, tiles 0 .. ST-2.
		 */
		if constexpr (!T::F16)
			warp_load_q<T, BH>(p, smem, b, m0, tid);
		for (int x = tid; x < ST * BN; x += T::THREADS) {
			int u = r.t_begin + x / BN;

			if (u < r.t_end)
				sRow[(u % T::RING) * BN + x % BN] = row_offset(p, b, u * BN + x % BN, r.kv_len, T::SRC_ROW);
		}
		vs_syncthreads();
#pragma unroll
		for (int s = 0; s < ST - 1; s++) {
			if (r.t_begin + s < r.t_end)
				warp_load_tile<T>(p, smem + T::KV_OFF + s * BN * T::STAGE_ROW,
						  sRow + ((r.t_begin + s) % T::RING) * BN, tid);
			cp_async_commit();
		}
		if constexpr (T::F16) {
			float *sQsc = (float *)(smem + T::QSC_OFF);

			warp_load_q_f16<T, BH>(p, smem, sQsc, b, m0, tid);
			vs_syncthreads();
#pragma unroll
			for (int rs = 0; rs < MMA_C_ROWS; rs++)
				st.sc[rs] = sQsc[rg * 16 + mma_rowslot_row(lane, rs)];
		}
		for (int t = r.t_begin; t < r.t_end; t++) {
			const int k = t - r.t_begin;
			unsigned char *stage = smem + T::KV_OFF + (k % ST) * BN * T::STAGE_ROW;
			const uint16_t *kvb = (const uint16_t *)stage;
			const bool fetch = tid < BN && t + ST < r.t_end;
			RowFetch f = { -1, 0 };

			cp_async_wait<ST - 2>(); /* tile t has landed (this thread's part) */
			vs_syncthreads();        /* ... everyone's part; the stage of tile t-1 is free */
			if (t + ST - 1 < r.t_end)
				warp_load_tile<T>(p, smem + T::KV_OFF + ((k + ST - 1) % ST) * BN * T::STAGE_ROW,
						  sRow + ((t + ST - 1) % T::RING) * BN, tid);
			cp_async_commit();
			if (fetch) /* block_table entry of tile t+ST, stored as an offset after this tile */
				f = row_fetch(p, b, (t + ST) * BN + tid, r.kv_len);
			if constexpr (T::F16) {
				warp_tile_f16<T>(st, smem, stage, sP, sMax, t, lane, rg, cg);
			} else if constexpr (T::DT) {
				/* the tile of t-1 is free: every warp passed the barrier above after reading it */
				warp_convert_fp8<T>(stage, smem + T::CONV_OFF, tid);
				vs_syncthreads();
				warp_tile<T>(p, st, nullptr, sQ, (const uint16_t *)(smem + T::CONV_OFF), nullptr, sP,
					     sMax, t, lane, rg, cg);
			} else {
				warp_tile<T>(p, st, nullptr, sQ, kvb, nullptr, sP, sMax, t, lane, rg, cg);
			}
			if (fetch)
				sRow[((t + ST) % T::RING) * BN + tid] = row_fetch_offset(p, f, T::SRC_ROW);
		}
		cp_async_wait<0>();
	}
#endif /* platform */

	/* Finalize: full row sums, O / l, lse of this split. */
	float l[MMA_C_ROWS];

#pragma unroll
	for (int rs = 0; rs < MMA_C_ROWS; rs++)
		l[rs] = mma_row_sum(st.l_run[rs]);
	if (T::CG > 1) {
		if (mma_row_leader(lane))
#pragma unroll
			for (int rs = 0; rs < MMA_C_ROWS; rs++)
				sSum[cg * BH + rg * 16 + mma_rowslot_row(lane, rs)] = l[rs];
		vs_syncthreads();
#pragma unroll
		for (int rs = 0; rs < MMA_C_ROWS; rs++) {
			int row = rg * 16 + mma_rowslot_row(lane, rs);
			float v = 0.f;

#pragma unroll
			for (int c = 0; c < T::CG; c++)
				v += sSum[c * BH + row];
			l[rs] = v;
		}
	}
	float inv[MMA_C_ROWS];

#pragma unroll
	for (int rs = 0; rs < MMA_C_ROWS; rs++)
		inv[rs] = l[rs] != 0.f ? (T::F16 ? 128.f : 1.f) * p.out_scale / l[rs] : 0.f; /* F16: V at 2^-7 */
#pragma unroll
	for (int nt = 0; nt < T::NT_O; nt++) {
#if defined(VS_PLATFORM_NVIDIA)
		if constexpr (T::F16) { /* n8 block j = 2 nt + e / 4, its column n: dim (NCW / 8) n + j */
#pragma unroll
			for (int e = 0; e < MMA_C_ELEMS; e++) {
				int m = m0 + rg * 16 + mma_c_row(lane, e);
				int col = cg * T::NCW + (T::NCW / 8) * (2 * (lane & 3) + (e & 1)) + 2 * nt + (e >> 2);

				if (m < p.m_total)
					store_out1(p, b, slot, m, col, st.o[nt].x[e] * inv[mma_c_rowslot(e)]);
			}
		} else {
#pragma unroll
			for (int e = 0; e < MMA_C_ELEMS; e += 2) {
				int m = m0 + rg * 16 + mma_c_row(lane, e);
				int col = cg * T::NCW + nt * 16 + mma_c_col(lane, e);
				float sc = inv[mma_c_rowslot(e)];

				if (m < p.m_total)
					store_out2(p, b, slot, m, col, st.o[nt].x[e] * sc, st.o[nt].x[e + 1] * sc);
			}
		}
#else
#pragma unroll
		for (int e = 0; e < MMA_C_ELEMS; e++) {
			int m = m0 + rg * 16 + mma_c_row(lane, e);
			int col = cg * T::NCW + nt * 16 + mma_c_col(lane, e);

			if (m < p.m_total)
				store_out1(p, b, slot, m, col, st.o[nt].x[e] * inv[mma_c_rowslot(e)]);
		}
#endif /* platform */
	}
	if (cg == 0 && mma_row_leader(lane))
#pragma unroll
		for (int rs = 0; rs < MMA_C_ROWS; rs++) {
			int m = m0 + rg * 16 + mma_rowslot_row(lane, rs);

			if (m < p.m_total)
				store_lse(p, b, slot, m, st.m_run[rs], l[rs]);
		}
}

/* ================================================================ wgmma kernel (sm_90a) */

#if defined(MLA_HAVE_WGMMA)
/*
 * Shared memory (bytes): Q [0, 73728), KV at 73728: two bf16 stages, or (fp8) one decoded bf16 tile
 * and two raw stages of 36864; P at 221184 (8192); alpha, l, m at 229376 (3 x 256); row offsets.
 * 64 x 576 bf16 tiles use wgmma's 128-byte swizzle, K-major atoms of 8 rows x 64 dims (1 KiB):
 *   element (row r, dim d) at (d / 64) * 8192 + (r / 8) * 1024 + (r % 8) * 128
 *                              + (((d % 64) / 8) ^ (r % 8)) * 16 + (d % 8) * 2,
 * which is K-major for S (rows = keys, K = dims; SBO 1024 between 8-row groups) and MN-major for
 * P V (K = keys, N = dims; LBO 8192 between 64-dim atoms, SBO 1024 between 8-key groups). A cache
 * row's 128-byte line lands in one 128-byte shared line (conflict-free), so 8 consecutive threads
 * copy one whole line. P (64 rows x 64 keys) is one atom column: (r / 8) * 1024 + (r % 8) * 128 +
 * ((k / 8) ^ (r % 8)) * 16 + (k % 8) * 2. Atoms start on 1 KiB boundaries (base offset 0).
 */
constexpr int WG_Q_OFF = 0;
constexpr int WG_KV_OFF = 73728;
constexpr int WG_RAW_OFF = WG_KV_OFF + 73728;
constexpr int WG_P_OFF = 3 * 73728;
constexpr int WG_ALPHA_OFF = WG_P_OFF + 8192;
constexpr int WG_L_OFF = WG_ALPHA_OFF + 256;
constexpr int WG_M_OFF = WG_L_OFF + 256;
constexpr int WG_ROW_OFF = WG_M_OFF + 256; /* ring of 3 x 64 row offsets */
constexpr uint32_t WG_ATOM_K = 8192;     /* bytes between 64-dim atoms of a 64 x 576 tile */
constexpr uint32_t WG_GRP = 1024;        /* bytes between 8-row groups within an atom column */
static_assert(WG_ROW_OFF + 3 * 64 * 8 == MLA_FLASH_WGMMA_SMEM, "wgmma smem formula");
static_assert(WG_KV_OFF % 1024 == 0 && WG_RAW_OFF % 1024 == 0 && WG_P_OFF % 1024 == 0, "atom alignment");

/* Byte offset of 16-byte chunk ch (dims 8ch .. 8ch+7) of row r in a swizzled 64 x 576 tile. */
VS_DEV int sw128_off(int r, int ch)
{
	return (ch >> 3) * (int)WG_ATOM_K + (r >> 3) * (int)WG_GRP + (r & 7) * 128 + (((ch & 7) ^ (r & 7)) << 4);
}

/* zero_masked_v_nan of a swizzled 64-key bf16 tile at stage, by the 128 threads tid of one warpgroup. */
VS_DEV void zero_masked_v_nan_sw128(unsigned char *stage, int t, int mlo, int mhi, int tid)
{
	zero_masked_v_nan<false>(t, 64, mlo, mhi, tid, 128, [&](int row, int c) { return stage + sw128_off(row, c); });
}

VS_DEV void named_bar_sync(int id, int n) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory"); }
VS_DEV void named_bar_arrive(int id, int n) { asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(n) : "memory"); }

/* 64 rows x 72 chunks of 16 bytes; consecutive threads copy consecutive chunks of a row. */
VS_DEV void wg_load_q(const FlashParams &p, unsigned char *dst, int b, int m0, int tid)
{
#pragma unroll 6
	for (int i = 0; i < 18; i++) {
		int c = tid + i * 256;
		int row = c / 72, ch = c % 72;
		int m = m0 + row;
		bool valid = m < p.m_total;
		const uint16_t *src = p.q + (valid ? ((size_t)b * p.m_total + m) * D_QK + ch * 8 : 0);

		cp_async16(dst + sw128_off(row, ch), src, valid);
	}
}

/*
 * A KV tile copied by the 128 threads of warpgroup 1 alone (it is idle while warpgroup 0
 * computes S): thread q = x % 8, L = x / 8 copies chunk q of every 128-byte line of rows L,
 * L + 16, L + 32, L + 48; the shared offsets differ by constants (rows 16 apart keep r % 8),
 * so each copy is one instruction with immediate offsets.
 */
VS_DEV void wg1_load_kv_bf16(const FlashParams &p, unsigned char *dst, const long long *rowoff, int x)
{
	const int q = x & 7, L = x >> 3;
	unsigned char *d = dst + (L >> 3) * (int)WG_GRP + (L & 7) * 128 + ((q ^ (L & 7)) << 4);

#pragma unroll
	for (int k = 0; k < 4; k++) {
		long long off = rowoff[L + 16 * k];
		bool valid = off >= 0;
		const uint8_t *src = p.kv + (valid ? off : 0) + q * 16;

#pragma unroll
		for (int a = 0; a < 9; a++)
			cp_async16(d + a * (int)WG_ATOM_K + k * 2 * (int)WG_GRP, src + a * 128, valid);
	}
}

/*
 * fp8 KV without raw shared-memory stages: warpgroup 1 loads a raw tile (64 rows x 576 codes) from
 * global memory straight into registers, 18 16-byte vectors per thread (consecutive threads read
 * consecutive 16-byte chunks of a row: coalesced), one tile ahead, and decodes it with the exact
 * decoder (0x80 -> NaN) into the free one of the two bf16 stages, in the same swizzled layout as
 * a bf16 tile. The decoded tile is then read by the unchanged bf16 pipeline (S, softmax, P V), so
 * fp8 has the bf16 kernel's critical path; the decode runs on warpgroup 1 while warpgroup 0's S
 * and softmax occupy the tensor cores, and during its own half of P V.
 */
constexpr int WG_FP8_VECS = 18; /* 64 x 36 chunks of 16 codes / 128 threads */
#ifndef MLA_WG_FP8_TOP
#define MLA_WG_FP8_TOP 9
#endif
/* Vectors decoded (and reloaded) before warpgroup 1's P V; the rest while its P V runs. */
constexpr int WG_FP8_TOP = MLA_WG_FP8_TOP;

VS_DEV vs_u32x4 ld_global_nc_v4(const void *p)
{
	vs_u32x4 v;

	/* volatile: issued where written (a tile ahead of its use), not sunk toward the use */
	asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
	    : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
	    : "l"(p));
	return v;
}

/*
 * Row and 16-byte chunk of vector i (0..17) of thread x (0..127) in a raw 64 x 576 tile: row
 * 32 (i / 9) + x / 4, chunk x % 4 + 4 (i % 9). A thread keeps one row per half tile, so its row
 * offset is read once and every global and shared address is a base plus an immediate; 4
 * consecutive threads read 64 contiguous bytes of a row. Vectors [0, 9) are rows 0-31 and [9, 18)
 * rows 32-63, so any split of the 18 vectors between warpgroups covers the tile once. (The
 * row-major map, c = x + 128 i, divided by 36 in every address: 224 registers against 188, and
 * with the steps below 2.18 -> 1.53 ms at h_q 16 b 128 32K; BENCHMARKS.md, issue 17.)
 */
VS_DEV void fp8_vec_rc(int x, int i, int &row, int &ch)
{
	row = 32 * (i / 9) + (x >> 2);
	ch = (x & 3) + 4 * (i % 9);
}

/* Vectors [i0, i1) of warpgroup 1's share of a raw tile into registers (zeros past kv_len). */
template <int I0, int I1>
VS_DEV void wg1_ld_fp8(const FlashParams &p, vs_u32x4 (&w)[WG_FP8_VECS], const long long *rowoff, int x)
{
#pragma unroll
	for (int i = I0; i < I1; i++) {
		int row, ch;

		fp8_vec_rc(x, i, row, ch);
		const long long off = rowoff[row];

		if (off >= 0)
			w[i] = ld_global_nc_v4(p.kv + off + ch * 16);
		else
			w[i] = vs_u32x4{ 0u, 0u, 0u, 0u };
	}
}

/* Vector i (its row and chunk) as 16 bf16 into a swizzled 64 x 576 bf16 stage. */
VS_DEV void st_bf16x16(unsigned char *dst, int x, int i, const vs_u32x4 &o0, const vs_u32x4 &o1)
{
	int row, ch;

	fp8_vec_rc(x, i, row, ch);
	*(vs_u32x4 *)(dst + sw128_off(row, 2 * ch)) = o0;
	*(vs_u32x4 *)(dst + sw128_off(row, 2 * ch + 1)) = o1;
}

/*
 * Decode vectors [i0, i1) into a swizzled 64 x 576 bf16 stage: all of them with the fast decoder
 * (4 operations per pair of codes, 0x80 -> -0), no branch between them, so their chains
 * interleave; then, if any held 0x80 (a visible NaN code: legal, rare; this thread's own vectors),
 * all of them again with the exact one, over the same bytes. (One branch per vector instead:
 * 1.77 against 1.53 ms with the rest of this pass.)
 */
template <int I0, int I1>
VS_DEV void wg1_st_fp8(const vs_u32x4 (&w)[WG_FP8_VECS], unsigned char *dst, int x)
{
	uint32_t nan = 0;

#pragma unroll
	for (int i = I0; i < I1; i++) {
		vs_u32x4 o0, o1;

		nan |= mma_fp8x4_nan_bits(w[i].x) | mma_fp8x4_nan_bits(w[i].y) | mma_fp8x4_nan_bits(w[i].z) |
		       mma_fp8x4_nan_bits(w[i].w);
		mma_fp8x4_to_bf16x4_nonan(w[i].x, o0.x, o0.y);
		mma_fp8x4_to_bf16x4_nonan(w[i].y, o0.z, o0.w);
		mma_fp8x4_to_bf16x4_nonan(w[i].z, o1.x, o1.y);
		mma_fp8x4_to_bf16x4_nonan(w[i].w, o1.z, o1.w);
		st_bf16x16(dst, x, i, o0, o1);
	}
	if (__builtin_expect((nan & 0x80808080u) != 0, 0)) {
#pragma unroll
		for (int i = I0; i < I1; i++) {
			vs_u32x4 o0, o1;

			fp8x16_to_bf16x16(w[i], o0, o1);
			st_bf16x16(dst, x, i, o0, o1);
		}
	}
}

/* Raw fp8 tile, row-major 64 x 576, by the 128 threads of warpgroup 1. */
VS_DEV void wg1_load_kv_fp8(const FlashParams &p, unsigned char *dst, const long long *rowoff, int x)
{
#pragma unroll 6
	for (int i = 0; i < 18; i++) {
		int c = x + i * 128;
		int row = c / 36, ch = c % 36;
		long long off = rowoff[row];
		bool valid = off >= 0;

		cp_async16(dst + row * D_QK + ch * 16, p.kv + (valid ? off : 0) + ch * 16, valid);
	}
}

/*
 * fp8 decode, one 64-dim atom at a time, by all 256 threads: thread tid decodes 8 codes of rows
 * tid / 8 and tid / 8 + 32 (dims 64a + 8 (tid % 8) ..), so 8 consecutive threads write the 8
 * distinct 16-byte slots of one swizzled 128-byte line (no bank conflicts), and the raw words of
 * the next atom can be loaded before the barrier that ends this one. The decode is exact except
 * that 0x80 gives -0: the returned bits (nonzero under 0x80808080) say a 0x80 was seen.
 */
VS_DEV void wg_load_atom_fp8(const unsigned char *raw, int tid, int a, uint2 (&w)[2])
{
#pragma unroll
	for (int j = 0; j < 2; j++)
		w[j] = *(const uint2 *)(raw + ((tid >> 3) + 32 * j) * D_QK + a * 64 + (tid & 7) * 8);
}

VS_DEV uint32_t wg_decode_atom_fp8(const uint2 (&w)[2], unsigned char *dst, int tid, int a)
{
	uint32_t nan = 0;

#pragma unroll
	for (int j = 0; j < 2; j++) {
		const int row = (tid >> 3) + 32 * j, q = tid & 7;
		vs_u32x4 o;

		nan |= mma_fp8x4_nan_bits(w[j].x) | mma_fp8x4_nan_bits(w[j].y);
		mma_fp8x4_to_bf16x4_nonan(w[j].x, o.x, o.y);
		mma_fp8x4_to_bf16x4_nonan(w[j].y, o.z, o.w);
		*(vs_u32x4 *)(dst + a * (int)WG_ATOM_K + (row >> 3) * (int)WG_GRP + (row & 7) * 128 +
			      ((q ^ (row & 7)) << 4)) = o;
	}
	return nan;
}

/* The whole tile with the NaN-exact decoder (the rare tile that holds a visible 0x80). */
VS_DEV void wg_convert_fp8(const unsigned char *raw, unsigned char *dst, int tid)
{
#pragma unroll
	for (int i = 0; i < 9; i++) {
		int c = tid + i * 256;
		int row = c / 36, ch = c % 36;
		vs_u32x4 w = *(const vs_u32x4 *)(raw + row * D_QK + ch * 16);
		vs_u32x4 o0, o1;

		fp8x16_to_bf16x16(w, o0, o1);
		*(vs_u32x4 *)(dst + sw128_off(row, 2 * ch)) = o0;
		*(vs_u32x4 *)(dst + sw128_off(row, 2 * ch + 1)) = o1;
	}
}
#endif /* MLA_HAVE_WGMMA */

/*
 * Atoms decoded between two barriers of mla_flash_wgmma_sd (a divisor of 9): 3 against 1 on the
 * H200 (issue 17): 0.923 against 1.024 ms at h_q 128 b 128 8K, 1.85 against 2.06 ms at h_q 16
 * b 128 32K (BENCHMARKS.md, 2026-12-01 evening).
 */
constexpr int SD_AP = 3;

#if defined(MLA_HAVE_WGMMA)
/* One segment (Seg) of mla_flash_wgmma_sd: batch element b, tiles r, written to slot. */
template <bool FP8>
VS_DEV void wgmma_sd_segment(const FlashParams &p, unsigned char *smem, uint32_t sbase, int m0, int b, int slot,
			     const BlockRange &r)
{
	const int tid = vs_tid(), wg = tid >> 7, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
	const int row0 = 16 * ((tid & 127) >> 5) + g; /* this thread's rows: row0, row0 + 8 */
	float *sAlpha = (float *)(smem + WG_ALPHA_OFF);
	float *sL = (float *)(smem + WG_L_OFF);
	float *sM = (float *)(smem + WG_M_OFF);
	int lim[2], mlo, mhi;
	float m_run[2], l_run[2];
	float o[128];

	masked_keys(p, r, m0, mlo, mhi);
#pragma unroll
	for (int h = 0; h < 2; h++) {
		lim[h] = row_limit(p, r.seqlen, m0 + row0 + 8 * h);
		m_run[h] = -INFINITY;
		l_run[h] = 0.f;
	}
#pragma unroll
	for (int i = 0; i < 128; i++)
		o[i] = 0.f;

	long long *sRow = (long long *)(smem + WG_ROW_OFF);
	constexpr int LEAD = FP8 ? 2 : 1;  /* tile t + LEAD is issued during tile t */
	constexpr int ROWB = FP8 ? D_QK : 2 * D_QK;

	if (r.t_begin < r.t_end) {
		wg_load_q(p, smem + WG_Q_OFF, b, m0, tid);
		for (int x = tid; x < (LEAD + 1) * 64; x += 256) {
			int u = r.t_begin + x / 64;

			if (u < r.t_end)
				sRow[(u % 3) * 64 + x % 64] = row_offset(p, b, u * 64 + x % 64, r.kv_len, ROWB);
		}
		vs_syncthreads();
		/*
		 * KV tiles are copied by warpgroup 1 alone; every thread commits a group per step (empty
		 * ones in warpgroup 0) so that the wait counts agree.
		 */
		if (FP8) {
			if (wg == 1)
				wg1_load_kv_fp8(p, smem + WG_RAW_OFF, sRow + (r.t_begin % 3) * 64, tid - 128);
			cp_async_commit();
			if (wg == 1 && r.t_begin + 1 < r.t_end)
				wg1_load_kv_fp8(p, smem + WG_RAW_OFF + 36864, sRow + ((r.t_begin + 1) % 3) * 64, tid - 128);
			cp_async_commit();
		} else {
			if (wg == 1)
				wg1_load_kv_bf16(p, smem + WG_KV_OFF, sRow + (r.t_begin % 3) * 64, tid - 128);
			cp_async_commit();
		}
		for (int t = r.t_begin; t < r.t_end; t++) {
			const int k = t - r.t_begin;
			/* Warpgroup 1 (idle during S) fetches the block_table entries of tile t + LEAD + 1. */
			const bool fetch = wg == 1 && tid < 192 && t + LEAD + 1 < r.t_end;
			RowFetch f = { -1, 0 };
			uint32_t kv_s;

			float s[32];

			if (FP8) {
				/*
				 * Decode SD_AP atoms (64 dims of the 64 keys each) per barrier; after it
				 * warpgroup 0 issues their 4 k steps of S each, which run on the tensor
				 * cores while the next atoms are decoded. A tile that holds 0x80 (a visible
				 * NaN code, legal and rare) is decoded again with the NaN-exact decoder and
				 * its S recomputed.
				 */
				unsigned char *raw = smem + WG_RAW_OFF + (k & 1) * 36864;
				const uint64_t dq = wgmma_desc_sw128(sbase + WG_Q_OFF, 16, WG_GRP);
				const uint64_t dk = wgmma_desc_sw128(sbase + WG_KV_OFF, 16, WG_GRP);
				uint32_t nan = 0;
				uint2 wa[SD_AP][2], wb[SD_AP][2]; /* this thread's raw words of atoms a.., a + SD_AP.. */

				cp_async_wait<1>();
				vs_syncthreads(); /* raw tile t complete; the decoded tile is free */
				if (wg == 0)
#pragma unroll
					for (int i = 0; i < 32; i++)
						s[i] = 0.f;
#pragma unroll
				for (int j = 0; j < SD_AP; j++)
					wg_load_atom_fp8(raw, tid, j, wa[j]);
#pragma unroll
				for (int a = 0; a < D_QK / 64; a += SD_AP) {
					if (a + SD_AP < D_QK / 64)
#pragma unroll
						for (int j = 0; j < SD_AP; j++)
							wg_load_atom_fp8(raw, tid, a + SD_AP + j, wb[j]);
#pragma unroll
					for (int j = 0; j < SD_AP; j++)
						nan |= wg_decode_atom_fp8(wa[j], smem + WG_KV_OFF, tid, a + j);
					fence_proxy_async();
					vs_syncthreads(); /* atoms a .. a + SD_AP - 1 decoded */
					if (wg == 0) {
						wgmma_fence();
#pragma unroll
						for (int kk = 4 * a; kk < 4 * (a + SD_AP); kk++) {
							const uint64_t step = ((kk >> 2) * WG_ATOM_K + (kk & 3) * 32) >> 4;

							wgmma_m64n64k16_ss(s, dq + step, dk + step, 1);
						}
					}
					if (a + SD_AP < D_QK / 64)
#pragma unroll
						for (int j = 0; j < SD_AP; j++) {
							wa[j][0] = wb[j][0];
							wa[j][1] = wb[j][1];
						}
				}
				if (wg == 0)
					wgmma_commit();
				if (__syncthreads_or((int)(nan & 0x80808080u))) {
					if (wg == 0)
						wgmma_wait<0>(); /* S done reading the decoded tile */
					vs_syncthreads();
					wg_convert_fp8(raw, smem + WG_KV_OFF, tid);
					fence_proxy_async();
					vs_syncthreads();
					if (wg == 0) {
#pragma unroll
						for (int i = 0; i < 32; i++)
							s[i] = 0.f;
						wgmma_fence();
#pragma unroll
						for (int kk = 0; kk < D_QK / 16; kk++) {
							const uint64_t step = ((kk >> 2) * WG_ATOM_K + (kk & 3) * 32) >> 4;

							wgmma_m64n64k16_ss(s, dq + step, dk + step, 1);
						}
						wgmma_commit();
					}
				}
				/* every thread is done with the raw tile: refill it */
				if (wg == 1 && t + 2 < r.t_end)
					wg1_load_kv_fp8(p, raw, sRow + ((t + 2) % 3) * 64, tid - 128);
				cp_async_commit();
				kv_s = sbase + WG_KV_OFF;
			} else {
				cp_async_wait<0>();
				fence_proxy_async();
				vs_syncthreads(); /* tile t complete; stage of tile t-1, P, alpha free */
				if (wg == 1 && t + 1 < r.t_end)
					wg1_load_kv_bf16(p, smem + WG_KV_OFF + ((k + 1) & 1) * 73728,
							 sRow + ((t + 1) % 3) * 64, tid - 128);
				cp_async_commit();
				kv_s = sbase + WG_KV_OFF + (k & 1) * 73728;
			}
			if (fetch)
				f = row_fetch(p, b, (t + LEAD + 1) * 64 + (tid - 128), r.kv_len);

			if (wg == 0) {
				float mx[2], alpha[2], mu[2];
				uint32_t pa[16];

				if (!FP8) { /* fp8: S was issued with the decode */
					/* Descriptors: a base per operand plus a constant per k step (start field only). */
					const uint64_t dq = wgmma_desc_sw128(sbase + WG_Q_OFF, 16, WG_GRP);
					const uint64_t dk = wgmma_desc_sw128(kv_s, 16, WG_GRP);

#pragma unroll
					for (int i = 0; i < 32; i++)
						s[i] = 0.f;
					wgmma_fence();
#pragma unroll
					for (int kk = 0; kk < D_QK / 16; kk++) {
						const uint64_t step = ((kk >> 2) * WG_ATOM_K + (kk & 3) * 32) >> 4;

						wgmma_m64n64k16_ss(s, dq + step, dk + step, 1);
					}
					wgmma_commit();
				}
				wgmma_wait<0>();
				wgmma_fence_operands(s);

				mx[0] = mx[1] = -INFINITY;
				if ((t + 1) * 64 <= min(lim[0], lim[1])) {
					/* every key of the tile visible to both rows: no mask */
#pragma unroll
					for (int j = 0; j < 32; j++) {
						s[j] *= p.scale_log2;
						mx[(j >> 1) & 1] = vs_fmaxf(mx[(j >> 1) & 1], s[j]);
					}
				} else {
#pragma unroll
					for (int j = 0; j < 8; j++)
#pragma unroll
						for (int e = 0; e < 4; e++) {
							int h = e >> 1;
							int key = t * 64 + 8 * j + 2 * t4 + (e & 1);
							float v = key < lim[h] ? s[4 * j + e] * p.scale_log2 : -INFINITY;

							s[4 * j + e] = v;
							mx[h] = vs_fmaxf(mx[h], v);
						}
				}
#pragma unroll
				for (int h = 0; h < 2; h++) {
					float m_new = vs_fmaxf(m_run[h], mma_row_max(mx[h]));

					mu[h] = m_new == -INFINITY ? 0.f : m_new;
					alpha[h] = vs_exp2f(m_run[h] - mu[h]);
					m_run[h] = m_new;
					l_run[h] *= alpha[h];
				}
#pragma unroll
				for (int j = 0; j < 8; j++)
#pragma unroll
					for (int e = 0; e < 4; e++) {
						float pe = vs_exp2f(s[4 * j + e] - mu[e >> 1]);

						l_run[e >> 1] += pe;
						s[4 * j + e] = pe;
					}
#pragma unroll
				for (int j = 0; j < 8; j++)
#pragma unroll
					for (int h = 0; h < 2; h++) {
						int row = row0 + 8 * h;

						pa[2 * j + h] = vs_pack_bf16x2(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]);
						*(uint32_t *)(smem + WG_P_OFF + (row >> 3) * 1024 + (row & 7) * 128 +
							      ((j ^ (row & 7)) << 4) + t4 * 4) = pa[2 * j + h];
					}
				if (t4 == 0) {
					sAlpha[row0] = alpha[0];
					sAlpha[row0 + 8] = alpha[1];
				}
				if (tile_has_masked_keys(t, 64, mlo, mhi)) {
					zero_masked_v_nan_sw128(smem + (kv_s - sbase), t, mlo, mhi, tid);
					fence_proxy_async();
					named_bar_sync(4, 128); /* warpgroup 0's zeros before its own P V */
				}
				fence_proxy_async();
				named_bar_arrive(1, 256); /* P and alpha ready for warpgroup 1 */

				if (alpha[0] != 1.f || alpha[1] != 1.f) /* the running max moved */
#pragma unroll
					for (int i = 0; i < 128; i++)
						o[i] *= alpha[(i >> 1) & 1];
				const uint64_t dv = wgmma_desc_sw128(kv_s, WG_ATOM_K, WG_GRP);

				wgmma_fence();
#pragma unroll
				for (int kk = 0; kk < 4; kk++) {
					const uint32_t a[4] = { pa[4 * kk], pa[4 * kk + 1], pa[4 * kk + 2], pa[4 * kk + 3] };

					wgmma_m64n256k16_rs(o, a, dv + ((kk * 2 * WG_GRP) >> 4), 1);
				}
				wgmma_commit();
				wgmma_wait<0>();
				wgmma_fence_operands(o);
			} else {
				named_bar_sync(1, 256);
				if (fetch)
					sRow[((t + LEAD + 1) % 3) * 64 + (tid - 128)] = row_fetch_offset(p, f, ROWB);
				const float a0 = sAlpha[row0], a1 = sAlpha[row0 + 8];

				if (a0 != 1.f || a1 != 1.f)
#pragma unroll
					for (int i = 0; i < 128; i++)
						o[i] *= ((i >> 1) & 1) ? a1 : a0;
				const uint64_t dp = wgmma_desc_sw128(sbase + WG_P_OFF, 16, WG_GRP);
				const uint64_t dv = wgmma_desc_sw128(kv_s + 4 * WG_ATOM_K, WG_ATOM_K, WG_GRP);

				wgmma_fence();
#pragma unroll
				for (int kk = 0; kk < 4; kk++)
					wgmma_m64n256k16_ss(o, dp + ((kk * 32) >> 4), dv + ((kk * 2 * WG_GRP) >> 4), 1);
				wgmma_commit();
				wgmma_wait<0>();
				wgmma_fence_operands(o);
			}
		}
		cp_async_wait<0>();
	}

	/* Finalize: warpgroup 0 owns m and l; both warpgroups write their 256 columns. */
	if (wg == 0) {
#pragma unroll
		for (int h = 0; h < 2; h++) {
			float l = mma_row_sum(l_run[h]);

			if (t4 == 0) {
				sL[row0 + 8 * h] = l;
				sM[row0 + 8 * h] = m_run[h];
			}
		}
	}
	vs_syncthreads();
#pragma unroll
	for (int h = 0; h < 2; h++) {
		int row = row0 + 8 * h, m = m0 + row;
		float l = sL[row];
		float sc = l != 0.f ? p.out_scale / l : 0.f;

		if (m >= p.m_total)
			continue;
#pragma unroll
		for (int j = 0; j < 32; j++)
			store_out2(p, b, slot, m, wg * 256 + 8 * j + 2 * t4, o[4 * j + 2 * h] * sc,
				   o[4 * j + 2 * h + 1] * sc);
		if (wg == 0 && t4 == 0)
			store_lse(p, b, slot, m, sM[row], l);
	}
}
#endif /* MLA_HAVE_WGMMA */

/*
 * mla_flash_wgmma_sd: the fp8 instance of the wgmma kernel (decode in shared memory by all 256
 * threads, atom by atom, with two raw cp.async stages): measured faster on sm_90a than the
 * register path of mla_flash_wgmma<true> (BENCHMARKS.md, issue 17 pass), so the dispatch uses it
 * for fp8 unless MLA_WG_FP8_REGPATH is defined. Only its <true> instance is launched.
 */
template <bool FP8, bool BAL>
__global__ void __launch_bounds__(256, 1) mla_flash_wgmma_sd(FlashParams p)
{
#if defined(MLA_HAVE_WGMMA) && defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
	extern __shared__ __align__(1024) unsigned char smem[];
	const uint32_t sbase = vs_smem_addr(smem);
	const int m0 = vs_bid_x() * 64;

	if (sbase & 1023u)
		__trap(); /* swizzle atoms need 1 KiB alignment */
	for_each_segment<BAL>(p, m0, [&](Seg &sg) {
		if (!BAL) /* a uniform split's range before Q (the balanced one came with sg) */
			sg.r = block_range(p, sg.b, vs_bid_y(), m0, 64, 64);
		wgmma_sd_segment<FP8>(p, smem, sbase, m0, sg.b, sg.slot, sg.r);
	});
#else
	(void)p;
#if defined(__CUDA_ARCH__)
	__trap();
#endif /* __CUDA_ARCH__ */
#endif /* wgmma available */
}

#if defined(MLA_HAVE_WGMMA)
/*
 * Uniform splits: the block_table line of the first tile of split vs_bid_y() of a full-length
 * sequence into L2 before seqlens arrive (with Q's copy), so a short task pays one memory latency
 * less; balanced: the line of the segment's first tile, already known. Thread 0 of the block.
 */
template <bool BAL>
VS_DEV void prefetch_first_page(const FlashParams &p, const Seg &sg)
{
	if (vs_tid() != 0 || p.max_pages <= 0)
		return;
	long long pg;

	if (!BAL) {
		const long long tiles = ((long long)p.max_pages * p.page_size + 63) / 64;
		const long long per = (tiles + p.num_splits - 1) / p.num_splits;

		pg = (long long)vs_bid_y() * per * 64 / p.page_size;
	} else {
		pg = (long long)sg.r.t_begin * 64 / p.page_size;
	}
	pg = min(pg, (long long)p.max_pages - 1);
	asm volatile("prefetch.global.L2 [%0];" ::"l"(p.block_table + (size_t)sg.b * p.max_pages + pg));
}

/*
 * One segment (Seg) of mla_flash_wgmma. Nothing before the KV range depends on seqlens: Q is
 * copied and the first page's block_table line prefetched before a uniform split's range is read
 * (an empty block waits for its Q and drops it).
 */
template <bool FP8, bool BAL>
VS_DEV void wgmma_segment(const FlashParams &p, unsigned char *smem, uint32_t sbase, int m0, Seg &sg)
{
	const int tid = vs_tid(), wg = tid >> 7, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
	const int row0 = 16 * ((tid & 127) >> 5) + g; /* this thread's rows: row0, row0 + 8 */
	const int b = sg.b, slot = sg.slot;

	wg_load_q(p, smem + WG_Q_OFF, b, m0, tid);
	cp_async_commit();
	prefetch_first_page<BAL>(p, sg);
	if (!BAL)
		sg.r = block_range(p, b, vs_bid_y(), m0, 64, 64);
	const BlockRange r = sg.r;
	if (store_empty_block(p, r, b, slot, m0, 64, tid, 256)) {
		cp_async_wait<0>(); /* Q */
		return;
	}
	float *sAlpha = (float *)(smem + WG_ALPHA_OFF);
	float *sL = (float *)(smem + WG_L_OFF);
	float *sM = (float *)(smem + WG_M_OFF);
	int lim[2], mlo, mhi;
	float m_run[2], l_run[2];
	float o[128];

	masked_keys(p, r, m0, mlo, mhi);
#pragma unroll
	for (int h = 0; h < 2; h++) {
		lim[h] = row_limit(p, r.seqlen, m0 + row0 + 8 * h);
		m_run[h] = -INFINITY;
		l_run[h] = 0.f;
	}
#pragma unroll
	for (int i = 0; i < 128; i++)
		o[i] = 0.f;

	if (wg == 0 && t4 == 0) { /* no tile: empty rows (overwritten after the tiles) */
		sL[row0] = sL[row0 + 8] = 0.f;
		sM[row0] = sM[row0 + 8] = -INFINITY;
	}

	long long *sRow = (long long *)(smem + WG_ROW_OFF);
	constexpr int LEAD = FP8 ? 2 : 1;  /* tile t + LEAD is issued during tile t */
	constexpr int ROWB = FP8 ? D_QK : 2 * D_QK;
	vs_u32x4 raw[WG_FP8_VECS]; /* fp8: warpgroup 1's share of the next raw tile (unused for bf16) */

	if (r.t_begin < r.t_end) {
		for (int x = tid; x < (LEAD + 1) * 64; x += 256) {
			int u = r.t_begin + x / 64;

			if (u < r.t_end)
				sRow[(u % 3) * 64 + x % 64] = row_offset(p, b, u * 64 + x % 64, r.kv_len, ROWB);
		}
		vs_syncthreads();
		/* KV tiles are copied (bf16) or loaded and decoded (fp8) by warpgroup 1 alone. */
		if (FP8) {
			/* tile t_begin decoded into stage 0, tile t_begin + 1 in registers */
			if (wg == 1) {
				wg1_ld_fp8<0, WG_FP8_VECS>(p, raw, sRow + (r.t_begin % 3) * 64, tid - 128);
				wg1_st_fp8<0, WG_FP8_VECS>(raw, smem + WG_KV_OFF, tid - 128);
				if (r.t_begin + 1 < r.t_end)
					wg1_ld_fp8<0, WG_FP8_VECS>(p, raw, sRow + ((r.t_begin + 1) % 3) * 64, tid - 128);
			}
			cp_async_commit();
		} else {
			if (wg == 1)
				wg1_load_kv_bf16(p, smem + WG_KV_OFF, sRow + (r.t_begin % 3) * 64, tid - 128);
			cp_async_commit();
		}
		/*
		 * Warp-specialized loops (each warpgroup keeps only its own registers live): one
		 * named barrier (2) per tile opens it for both, barrier 1 hands P and alpha to
		 * warpgroup 1.
		 */
		if (wg == 0) {
			for (int t = r.t_begin; t < r.t_end; t++) {
				const int k = t - r.t_begin;
				const uint32_t kv_s = sbase + WG_KV_OFF + (k & 1) * 73728;
				float s[32];

				cp_async_wait<0>(); /* Q (the KV copies are warpgroup 1's) */
				fence_proxy_async();
				named_bar_sync(2, 256); /* tile t complete; stage of tile t-1, P, alpha free */
				float mx[2], alpha[2], mu[2];
				uint32_t pa[16];

				{
					/* Descriptors: a base per operand plus a constant per k step (start field only). */
					const uint64_t dq = wgmma_desc_sw128(sbase + WG_Q_OFF, 16, WG_GRP);
					const uint64_t dk = wgmma_desc_sw128(kv_s, 16, WG_GRP);

#pragma unroll
					for (int i = 0; i < 32; i++)
						s[i] = 0.f;
					wgmma_fence();
#pragma unroll
					for (int kk = 0; kk < D_QK / 16; kk++) {
						const uint64_t step = ((kk >> 2) * WG_ATOM_K + (kk & 3) * 32) >> 4;

						wgmma_m64n64k16_ss(s, dq + step, dk + step, 1);
					}
					wgmma_commit();
				}
				wgmma_wait<0>();
				wgmma_fence_operands(s);

				mx[0] = mx[1] = -INFINITY;
				if ((t + 1) * 64 <= min(lim[0], lim[1])) {
					/* every key of the tile visible to both rows: no mask */
#pragma unroll
					for (int j = 0; j < 32; j++) {
						s[j] *= p.scale_log2;
						mx[(j >> 1) & 1] = vs_fmaxf(mx[(j >> 1) & 1], s[j]);
					}
				} else {
#pragma unroll
					for (int j = 0; j < 8; j++)
#pragma unroll
						for (int e = 0; e < 4; e++) {
							int h = e >> 1;
							int key = t * 64 + 8 * j + 2 * t4 + (e & 1);
							float v = key < lim[h] ? s[4 * j + e] * p.scale_log2 : -INFINITY;

							s[4 * j + e] = v;
							mx[h] = vs_fmaxf(mx[h], v);
						}
				}
#pragma unroll
				for (int h = 0; h < 2; h++) {
					float m_new = vs_fmaxf(m_run[h], mma_row_max(mx[h]));

					mu[h] = m_new == -INFINITY ? 0.f : m_new;
					alpha[h] = vs_exp2f(m_run[h] - mu[h]);
					m_run[h] = m_new;
					l_run[h] *= alpha[h];
				}
#pragma unroll
				for (int j = 0; j < 8; j++)
#pragma unroll
					for (int e = 0; e < 4; e++) {
						float pe = vs_exp2f(s[4 * j + e] - mu[e >> 1]);

						l_run[e >> 1] += pe;
						s[4 * j + e] = pe;
					}
#pragma unroll
				for (int j = 0; j < 8; j++)
#pragma unroll
					for (int h = 0; h < 2; h++) {
						int row = row0 + 8 * h;

						pa[2 * j + h] = vs_pack_bf16x2(s[4 * j + 2 * h], s[4 * j + 2 * h + 1]);
						*(uint32_t *)(smem + WG_P_OFF + (row >> 3) * 1024 + (row & 7) * 128 +
							      ((j ^ (row & 7)) << 4) + t4 * 4) = pa[2 * j + h];
					}
				if (t4 == 0) {
					sAlpha[row0] = alpha[0];
					sAlpha[row0 + 8] = alpha[1];
				}
				if (tile_has_masked_keys(t, 64, mlo, mhi)) {
					zero_masked_v_nan_sw128(smem + (kv_s - sbase), t, mlo, mhi, tid);
					fence_proxy_async();
					named_bar_sync(4, 128); /* warpgroup 0's zeros before its own P V */
				}
				fence_proxy_async();
				named_bar_arrive(1, 256); /* P and alpha ready for warpgroup 1 */

				if (alpha[0] != 1.f || alpha[1] != 1.f) /* the running max moved */
#pragma unroll
					for (int i = 0; i < 128; i++)
						o[i] *= alpha[(i >> 1) & 1];
				const uint64_t dv = wgmma_desc_sw128(kv_s, WG_ATOM_K, WG_GRP);

				wgmma_fence();
#pragma unroll
				for (int kk = 0; kk < 4; kk++) {
					const uint32_t a[4] = { pa[4 * kk], pa[4 * kk + 1], pa[4 * kk + 2], pa[4 * kk + 3] };

					wgmma_m64n256k16_rs(o, a, dv + ((kk * 2 * WG_GRP) >> 4), 1);
				}
				wgmma_commit();
				wgmma_wait<0>();
				wgmma_fence_operands(o);
			}
			/* m and l of this block's rows, for both warpgroups' finalize (inside the branch:
			 * warpgroup 1's registers need not keep them live) */
#pragma unroll
			for (int h = 0; h < 2; h++) {
				float l = mma_row_sum(l_run[h]);

				if (t4 == 0) {
					sL[row0 + 8 * h] = l;
					sM[row0 + 8 * h] = m_run[h];
				}
			}
		} else {
			for (int t = r.t_begin; t < r.t_end; t++) {
				const int k = t - r.t_begin;
				const uint32_t kv_s = sbase + WG_KV_OFF + (k & 1) * 73728;
				/* Warpgroup 1 (idle during S) fetches the block_table entries of tile t + LEAD + 1. */
				const bool fetch = tid < 192 && t + LEAD + 1 < r.t_end;
				const int jf = (t + LEAD + 1) * 64 + (tid - 128);
				int32_t page = 0;

				cp_async_wait<0>(); /* tile t (bf16), Q */
				fence_proxy_async();
				named_bar_sync(2, 256); /* tile t complete; stage of tile t-1, P, alpha free */
				if (FP8) {
					if (t + 1 < r.t_end) {
						/* first half of tile t+1 now, the second half while P V runs */
						wg1_st_fp8<0, WG_FP8_TOP>(raw, smem + WG_KV_OFF + ((k + 1) & 1) * 73728,
									       tid - 128);
						if (t + 2 < r.t_end)
							wg1_ld_fp8<0, WG_FP8_TOP>(p, raw, sRow + ((t + 2) % 3) * 64,
										       tid - 128);
					}
				} else {
					if (t + 1 < r.t_end)
						wg1_load_kv_bf16(p, smem + WG_KV_OFF + ((k + 1) & 1) * 73728,
								 sRow + ((t + 1) % 3) * 64, tid - 128);
					cp_async_commit();
				}
				if (fetch && jf < r.kv_len)
					page = p.block_table[(size_t)b * (size_t)p.max_pages + (size_t)(jf / p.page_size)];
				named_bar_sync(1, 256);
				if (fetch)
					sRow[((t + LEAD + 1) % 3) * 64 + (tid - 128)] =
						jf < r.kv_len ? ((long long)page * p.page_size + jf % p.page_size) * ROWB : -1;
				const float a0 = sAlpha[row0], a1 = sAlpha[row0 + 8];

				if (a0 != 1.f || a1 != 1.f)
#pragma unroll
					for (int i = 0; i < 128; i++)
						o[i] *= ((i >> 1) & 1) ? a1 : a0;
				const uint64_t dp = wgmma_desc_sw128(sbase + WG_P_OFF, 16, WG_GRP);
				const uint64_t dv = wgmma_desc_sw128(kv_s + 4 * WG_ATOM_K, WG_ATOM_K, WG_GRP);

				wgmma_fence();
#pragma unroll
				for (int kk = 0; kk < 4; kk++)
					wgmma_m64n256k16_ss(o, dp + ((kk * 32) >> 4), dv + ((kk * 2 * WG_GRP) >> 4), 1);
				wgmma_commit();
				if (FP8 && t + 1 < r.t_end) {
					/* second half of tile t+1 into the free stage while P V runs */
					wg1_st_fp8<WG_FP8_TOP, WG_FP8_VECS>(raw, smem + WG_KV_OFF + ((k + 1) & 1) * 73728,
										 tid - 128);
					if (t + 2 < r.t_end)
						wg1_ld_fp8<WG_FP8_TOP, WG_FP8_VECS>(p, raw, sRow + ((t + 2) % 3) * 64,
											 tid - 128);
				}
				wgmma_wait<0>();
				wgmma_fence_operands(o);
			}
		}
	}
	cp_async_wait<0>(); /* Q (also in a block with no tile) */

	/* Finalize: warpgroup 0 wrote m and l (above); both warpgroups write their 256 columns. */
	vs_syncthreads();
#pragma unroll
	for (int h = 0; h < 2; h++) {
		int row = row0 + 8 * h, m = m0 + row;
		float l = sL[row];
		float sc = l != 0.f ? p.out_scale / l : 0.f;

		if (m >= p.m_total)
			continue;
#pragma unroll
		for (int j = 0; j < 32; j++)
			store_out2(p, b, slot, m, wg * 256 + 8 * j + 2 * t4, o[4 * j + 2 * h] * sc,
				   o[4 * j + 2 * h + 1] * sc);
		if (wg == 0 && t4 == 0)
			store_lse(p, b, slot, m, sM[row], l);
	}
}
#endif /* MLA_HAVE_WGMMA */

template <bool FP8, bool BAL>
__global__ void __launch_bounds__(256, 1) mla_flash_wgmma(FlashParams p)
{
#if defined(MLA_HAVE_WGMMA) && defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
	extern __shared__ __align__(1024) unsigned char smem[];
	const uint32_t sbase = vs_smem_addr(smem);
	const int m0 = vs_bid_x() * 64;

	if (sbase & 1023u)
		__trap(); /* swizzle atoms need 1 KiB alignment */
	for_each_segment<BAL>(p, m0, [&](Seg &sg) { wgmma_segment<FP8, BAL>(p, smem, sbase, m0, sg); });
#else
	(void)p;
#if defined(__CUDA_ARCH__)
	__trap();
#endif /* __CUDA_ARCH__ */
#endif /* wgmma available */
}

/* ================================================================ transposed wgmma kernel (sm_90a) */

#if defined(MLA_HAVE_WGMMA)
/*
 * BLOCK_H NB (16 or 32): S^T = K Q^T (wgmma m64nNBk16: M = the tile's 64 keys, N = the block's NB rows, A = the
 * K tile, B = Q, both K-major) and O^T = V^T P^T (M = 64 output dims per product, A = the same tile
 * read MN-major, B = P^T [row][key]). Warpgroup 0: S^T, the softmax down the columns (a column is
 * one row m: its 64 keys sit in 4 warps x 8 lanes x 2), P^T to shared memory, O^T for dims 0-255;
 * warpgroup 1: the KV tiles (cp.async for bf16) and O^T for dims 256-511. fp8: each warpgroup loads
 * and decodes half of every raw tile (wt_step_fp8), warpgroup 0 while its S^T runs. Accumulator of m64nNB in warp w, lane (g, t4):
 * d[4j + e] = (M index 16w + g + 8(e/2), column 8j + 2t4 + e%2).
 * Shared memory: Q as 9 atoms of NB rows x 64 dims (NB x 128 bytes each, the 128-byte swizzle), two
 * KV stages in mla_flash_wgmma's layout, P^T NB rows x 64 keys (one atom column), column maxima
 * [4][NB], alpha [NB], partial l [4][NB], m [NB], the row-offset ring.
 */
template <int NB>
struct WtLayout {
	static constexpr int NJ = NB / 8;      /* 8-column groups of the accumulator */
	static constexpr int NQ = 2 * NJ;      /* columns per thread */
	static constexpr int ACC = 4 * NJ;     /* floats of one m64nNB accumulator */
	static constexpr uint32_t Q_ATOM = NB * 128;
	static constexpr int Q_OFF = 0;
	static constexpr int KV_OFF = 9 * NB * 128;
	static constexpr int P_OFF = KV_OFF + 2 * 73728;
	static constexpr int MAX_OFF = P_OFF + NB * 128;
	static constexpr int ALPHA_OFF = MAX_OFF + 16 * NB;
	static constexpr int L_OFF = ALPHA_OFF + 4 * NB;
	static constexpr int M_OFF = L_OFF + 16 * NB;
	static constexpr int ROW_OFF = M_OFF + 4 * NB;
	static constexpr int RAW_OFF = ROW_OFF + 4 * 64 * 8; /* fp8 (MLA_WT_DEEP): one raw tile */
	static_assert(RAW_OFF == MLA_FLASH_WGMMA_T_SMEM(NB, 0) && RAW_OFF + 36864 == MLA_FLASH_WGMMA_T_SMEM(NB, 1),
		      "transposed wgmma smem formula");
	static_assert(KV_OFF % 1024 == 0 && P_OFF % 1024 == 0, "atom alignment");
	static_assert(NB == 16 || NB == 32, "BLOCK_H");
};

/* m64nNBk16 from shared memory (TA = 1: A MN-major). */
template <int NB, int TA>
VS_DEV void wgmma_t_ss(float (&d)[NB / 2], uint64_t da, uint64_t db, int acc)
{
	if constexpr (NB == 16)
		wgmma_m64n16k16_ss<TA>(d, da, db, acc);
	else
		wgmma_m64n32k16_ss<TA>(d, da, db, acc);
}

/*
 * fp8 prefetch of this thread's vectors [I0, I1) of tile u into registers: straight from global
 * memory, or (MLA_WT_DEEP) from the raw shared-memory slot its own cp.async filled one tile earlier,
 * refilled at once with tile u + 1 (two tiles in flight per thread; the thread reads only the
 * bytes it copied itself, so its cp.async.wait_group is the only ordering needed).
 */
/* MLA_WT_DEEP: this thread's vectors [I0, I1) of tile u into the raw slot (cp.async, one group). */
template <int I0, int I1>
VS_DEV void wt_cp_fp8(const FlashParams &p, unsigned char *rawslot, const long long *sRow, int u, int t_end, int x)
{
	if (u < t_end) {
		const long long *rowoff = sRow + (u % 4) * 64;

#pragma unroll
		for (int i = I0; i < I1; i++) {
			int row, ch;

			fp8_vec_rc(x, i, row, ch);
			const long long off = rowoff[row];

			cp_async16(rawslot + (x + 128 * i) * 16, p.kv + (off >= 0 ? off : 0) + ch * 16, off >= 0);
		}
	}
	cp_async_commit();
}

/*
 * fp8, one step of this thread's vectors [I0, I1): decode tile v (t_begin <= v < t_end) into stage
 * dst and start the fetch of tile v + 2 (v + 1 without MLA_WT_DEEP). Without MLA_WT_DEEP every tile
 * goes global -> registers, one tile ahead. With it, tiles alternate between the registers (even
 * v - t_begin: plain global loads) and the raw shared-memory slot (odd: cp.async), so each fetch
 * has two tile times to land; the thread reads only the slot bytes it copied itself, so its own
 * cp.async.wait_group is the only ordering needed.
 */
template <int I0, int I1, bool DEEP>
VS_DEV void wt_step_fp8(const FlashParams &p, vs_u32x4 (&w)[WG_FP8_VECS], unsigned char *rawslot,
			const long long *sRow, unsigned char *dst, int v, int t_begin, int t_end, int x)
{
	if (v >= t_end)
		return;
	if (!DEEP || ((v - t_begin) & 1) == 0) {
		const int u = DEEP ? v + 2 : v + 1;

		wg1_st_fp8<I0, I1>(w, dst, x);
		if (u < t_end)
			wg1_ld_fp8<I0, I1>(p, w, sRow + (u % 4) * 64, x);
		return;
	}
	vs_u32x4 tmp[WG_FP8_VECS];

	cp_async_wait<0>();
#pragma unroll
	for (int i = I0; i < I1; i++)
		tmp[i] = *(const vs_u32x4 *)(rawslot + (x + 128 * i) * 16);
	wg1_st_fp8<I0, I1>(tmp, dst, x);
	wt_cp_fp8<I0, I1>(p, rawslot, sRow, v + 2, t_end, x);
}

/* NB rows x 72 chunks of Q (zeros past m_total). */
template <int NB>
VS_DEV void wt_load_q(const FlashParams &p, unsigned char *dst, int b, int m0, int tid)
{
#pragma unroll
	for (int i = 0; i < (NB * 72 + 255) / 256; i++) {
		int c = tid + i * 256;

		if (c >= NB * 72)
			break;
		int row = c / 72, ch = c % 72;
		int m = m0 + row;
		bool valid = m < p.m_total;
		const uint16_t *src = p.q + (valid ? ((size_t)b * p.m_total + m) * D_QK + ch * 8 : 0);

		cp_async16(dst + (ch >> 3) * (int)WtLayout<NB>::Q_ATOM + (row >> 3) * (int)WG_GRP + (row & 7) * 128 +
				   (((ch & 7) ^ (row & 7)) << 4),
			   src, valid);
	}
}
#endif /* MLA_HAVE_WGMMA */

#if defined(MLA_HAVE_WGMMA)
/*
 * The work of one mla_flash_wgmma_t block: the uniform split's segment sg (Q and the first page
 * before the range, as wgmma_segment).
 */
template <int NB, bool FP8>
VS_DEV void wgmma_t_segment(const FlashParams &p, unsigned char *smem, uint32_t sbase, int m0, Seg &sg)
{
	const int tid = vs_tid(), wg = tid >> 7, lane = tid & 31, g = lane >> 2, t4 = lane & 3;
	const int w = (tid & 127) >> 5; /* warp in the warpgroup */
	typedef WtLayout<NB> Y;
	constexpr int NJ = Y::NJ, NQ = Y::NQ, ACC = Y::ACC;
	const int b = sg.b, slot = sg.slot;
	float *sMax = (float *)(smem + Y::MAX_OFF);     /* [4 warps][NB columns] */
	float *sAlpha = (float *)(smem + Y::ALPHA_OFF); /* [NB] */
	float *sL = (float *)(smem + Y::L_OFF);         /* [4 warps][NB] partial sums */
	float *sM = (float *)(smem + Y::M_OFF);         /* [NB] */
	long long *sRow = (long long *)(smem + Y::ROW_OFF);
	/*
	 * fp8 pipeline (H200, h_q 16, b 128, 32K keys; BENCHMARKS.md, issue 17): the decode split over
	 * both warpgroups beat warpgroup 1 alone (bh16 2.30 vs 2.76 ms, bh32 2.50 vs 2.89), and the
	 * register / shared-slot alternation gained again at BLOCK_H 16 (2.18 ms); at BLOCK_H 32 it
	 * spills (24 bytes) for 2%, so it is on for 16 only. MLA_WT_DEEP / MLA_WT_NO_DEEP /
	 * MLA_WT_NO_SPLIT force the variants for experiments.
	 */
#if defined(MLA_WT_DEEP)
	constexpr bool DEEP = FP8;
#elif defined(MLA_WT_NO_DEEP) || defined(MLA_WT_NO_SPLIT)
	constexpr bool DEEP = false;
#else
	constexpr bool DEEP = FP8 && NB == 16;
#endif /* MLA_WT_DEEP */
	constexpr int LEAD = FP8 ? (DEEP ? 3 : 2) : 1; /* row offsets of tile t + LEAD are needed at tile t */
	constexpr int ROWB = FP8 ? D_QK : 2 * D_QK;
	float o[4][ACC]; /* O^T: dims 64 (4 wg + a) + ..., this thread's NQ columns */

	/* This thread's columns: c(j, e1) = 8j + 2 t4 + e1, index q = 2j + e1. */
	wt_load_q<NB>(p, smem + Y::Q_OFF, b, m0, tid);
	cp_async_commit();
	prefetch_first_page<false>(p, sg);
	sg.r = block_range(p, b, vs_bid_y(), m0, NB, 64);
	const BlockRange r = sg.r;
	if (store_empty_block(p, r, b, slot, m0, NB, tid, 256)) {
		cp_async_wait<0>(); /* Q */
		return;
	}
	int mlo, mhi;

	masked_keys(p, r, m0, mlo, mhi);

#pragma unroll
	for (int a = 0; a < 4; a++)
#pragma unroll
		for (int i = 0; i < ACC; i++)
			o[a][i] = 0.f;
	if (wg == 0 && g == 0) { /* no tile: empty rows (overwritten after the tiles) */
#pragma unroll
		for (int q = 0; q < NQ; q++) {
			const int c = 8 * (q >> 1) + 2 * t4 + (q & 1);

			sL[w * NB + c] = 0.f;
			if (w == 0)
				sM[c] = -INFINITY;
		}
	}

	if (r.t_begin < r.t_end) {
		vs_u32x4 raw[WG_FP8_VECS]; /* fp8: this thread's share of the next raw tile */
		/*
		 * fp8: vectors [0, W0) of a tile are warpgroup 0's (decoded while its S^T runs), the rest
		 * warpgroup 1's: [W0, T1) before its P V, [T1, 18) while it runs.
		 */
#if defined(MLA_WT_NO_SPLIT)
		constexpr int W0 = 0, T1 = WG_FP8_TOP;
#else
		constexpr int W0 = WG_FP8_VECS / 2, T1 = WG_FP8_VECS;
#endif /* MLA_WT_NO_SPLIT */
		unsigned char *rawslot = smem + Y::RAW_OFF;

		for (int x = tid; x < (LEAD + 1) * 64; x += 256) {
			int u = r.t_begin + x / 64;

			if (u < r.t_end)
				sRow[(u % 4) * 64 + x % 64] = row_offset(p, b, u * 64 + x % 64, r.kv_len, ROWB);
		}
		vs_syncthreads();
		if (FP8 && wg == 0) {
			wg1_ld_fp8<0, W0>(p, raw, sRow + (r.t_begin % 4) * 64, tid);
			wg1_st_fp8<0, W0>(raw, smem + Y::KV_OFF, tid);
			if (DEEP)
				wt_cp_fp8<0, W0>(p, rawslot, sRow, r.t_begin + 1, r.t_end, tid);
			if (r.t_begin + (DEEP ? 2 : 1) < r.t_end)
				wg1_ld_fp8<0, W0>(p, raw, sRow + ((r.t_begin + (DEEP ? 2 : 1)) % 4) * 64, tid);
		}
		if (wg == 1) {
			if (FP8) {
				wg1_ld_fp8<W0, WG_FP8_VECS>(p, raw, sRow + (r.t_begin % 4) * 64, tid - 128);
				wg1_st_fp8<W0, WG_FP8_VECS>(raw, smem + Y::KV_OFF, tid - 128);
				if (DEEP)
					wt_cp_fp8<W0, WG_FP8_VECS>(p, rawslot, sRow, r.t_begin + 1, r.t_end, tid - 128);
				if (r.t_begin + (DEEP ? 2 : 1) < r.t_end)
					wg1_ld_fp8<W0, WG_FP8_VECS>(p, raw, sRow + ((r.t_begin + (DEEP ? 2 : 1)) % 4) * 64,
								    tid - 128);
			} else {
				wg1_load_kv_bf16(p, smem + Y::KV_OFF, sRow + (r.t_begin % 4) * 64, tid - 128);
			}
		}
		if (!DEEP) /* DEEP: the raw slot's group must stay the newest (the loop waits with wait_group 1) */
			cp_async_commit();

		if (wg == 0) {
			int lim[NQ];
			float m_run[NQ], l_run[NQ];
			int lim_min = INT_MAX;

#pragma unroll
			for (int q = 0; q < NQ; q++) {
				lim[q] = row_limit(p, r.seqlen, m0 + 8 * (q >> 1) + 2 * t4 + (q & 1));
				m_run[q] = -INFINITY;
				l_run[q] = 0.f;
				lim_min = min(lim_min, lim[q]);
			}

			for (int t = r.t_begin; t < r.t_end; t++) {
				const int k = t - r.t_begin;
				const uint32_t kv_s = sbase + Y::KV_OFF + (k & 1) * 73728;
				float s[ACC], s1[ACC];

				cp_async_wait<DEEP ? 1 : 0>(); /* Q (the raw tile in flight may stay so) */
				fence_proxy_async();
				named_bar_sync(2, 256); /* tile t complete; the other stage, P, alpha free */
				{
					/* two accumulation chains (even / odd k steps): an m64nNB step is short */
					const uint64_t dk = wgmma_desc_sw128(kv_s, 16, WG_GRP);
					const uint64_t dq = wgmma_desc_sw128(sbase + Y::Q_OFF, 16, WG_GRP);

#pragma unroll
					for (int i = 0; i < ACC; i++)
						s[i] = s1[i] = 0.f;
					wgmma_fence();
#pragma unroll
					for (int kk = 0; kk < D_QK / 16; kk += 2) {
						wgmma_t_ss<NB, 0>(s, dk + (((kk >> 2) * WG_ATOM_K + (kk & 3) * 32) >> 4),
								  dq + (((kk >> 2) * Y::Q_ATOM + (kk & 3) * 32) >> 4), 1);
						wgmma_t_ss<NB, 0>(s1, dk + ((((kk + 1) >> 2) * WG_ATOM_K + ((kk + 1) & 3) * 32) >> 4),
								  dq + ((((kk + 1) >> 2) * Y::Q_ATOM + ((kk + 1) & 3) * 32) >> 4), 1);
					}
					wgmma_commit();
				}
				if (FP8 && W0 > 0) /* warpgroup 0's share of tile t+1 while S^T runs */
					wt_step_fp8<0, W0, DEEP>(p, raw, rawslot, sRow, smem + Y::KV_OFF + ((k + 1) & 1) * 73728,
								 t + 1, r.t_begin, r.t_end, tid);
				wgmma_wait<0>();
				wgmma_fence_operands(s);
				wgmma_fence_operands(s1);
#pragma unroll
				for (int i = 0; i < ACC; i++)
					s[i] += s1[i];

				/* scale, mask, column maxima: in the thread (2 keys), the 8 lanes g, the 4 warps */
				float cm[NQ];
#pragma unroll
				for (int q = 0; q < NQ; q++)
					cm[q] = -INFINITY;
				const bool full = (t + 1) * 64 <= lim_min;
#pragma unroll
				for (int j = 0; j < NJ; j++)
#pragma unroll
					for (int e = 0; e < 4; e++) {
						const int q = 2 * j + (e & 1);
						const int key = t * 64 + 16 * w + g + 8 * (e >> 1);
						float v = s[4 * j + e] * p.scale_log2;

						if (!full && key >= lim[q])
							v = -INFINITY;
						s[4 * j + e] = v;
						cm[q] = vs_fmaxf(cm[q], v);
					}
#pragma unroll
				for (int q = 0; q < NQ; q++) {
					cm[q] = vs_fmaxf(cm[q], vs_shfl_xor(cm[q], 4));
					cm[q] = vs_fmaxf(cm[q], vs_shfl_xor(cm[q], 8));
					cm[q] = vs_fmaxf(cm[q], vs_shfl_xor(cm[q], 16));
				}
				if (g == 0)
#pragma unroll
					for (int q = 0; q < NQ; q++)
						sMax[w * NB + 8 * (q >> 1) + 2 * t4 + (q & 1)] = cm[q];
				named_bar_sync(3, 128);
				float alpha[NQ], mu[NQ];
				bool moved = false;
#pragma unroll
				for (int q = 0; q < NQ; q++) {
					const int c = 8 * (q >> 1) + 2 * t4 + (q & 1);
					const float tm = vs_fmaxf(vs_fmaxf(sMax[c], sMax[NB + c]), vs_fmaxf(sMax[2 * NB + c], sMax[3 * NB + c]));
					const float m_new = vs_fmaxf(m_run[q], tm);

					mu[q] = m_new == -INFINITY ? 0.f : m_new;
					alpha[q] = vs_exp2f(m_run[q] - mu[q]);
					m_run[q] = m_new;
					l_run[q] *= alpha[q];
					moved = moved || alpha[q] != 1.f;
				}
				/* P^T [column][key] in bf16, one atom column: (c / 8) * 1024 + (c % 8) * 128 + swizzle */
#pragma unroll
				for (int j = 0; j < NJ; j++)
#pragma unroll
					for (int e = 0; e < 4; e++) {
						const int q = 2 * j + (e & 1);
						const int c = 8 * j + 2 * t4 + (e & 1);
						const int key = 16 * w + g + 8 * (e >> 1);
						const float pe = vs_exp2f(s[4 * j + e] - mu[q]);

						l_run[q] += pe;
						*(uint16_t *)(smem + Y::P_OFF + (c >> 3) * 1024 + (c & 7) * 128 +
							      (((key >> 3) ^ (c & 7)) << 4) + (key & 7) * 2) =
							(uint16_t)(vs_pack_bf16x2(pe, 0.f) & 0xffffu);
					}
				if (w == 0 && g == 0)
#pragma unroll
					for (int q = 0; q < NQ; q++)
						sAlpha[8 * (q >> 1) + 2 * t4 + (q & 1)] = alpha[q];
				if (tile_has_masked_keys(t, 64, mlo, mhi))
					zero_masked_v_nan_sw128(smem + Y::KV_OFF + (k & 1) * 73728, t, mlo, mhi, tid);
				fence_proxy_async();
				named_bar_sync(1, 256); /* P^T and alpha complete, for both warpgroups */
				if (moved)
#pragma unroll
					for (int a = 0; a < 4; a++)
#pragma unroll
						for (int i = 0; i < ACC; i++)
							o[a][i] *= alpha[2 * (i >> 2) + (i & 1)];
				const uint64_t dp = wgmma_desc_sw128(sbase + Y::P_OFF, 16, WG_GRP);

				wgmma_fence();
#pragma unroll
				for (int kk = 0; kk < 4; kk++)
#pragma unroll
					for (int a = 0; a < 4; a++)
						wgmma_t_ss<NB, 1>(o[a],
								      wgmma_desc_sw128(kv_s + a * WG_ATOM_K + kk * 2 * WG_GRP, WG_ATOM_K, WG_GRP),
								      dp + ((kk * 32) >> 4), 1);
				wgmma_commit();
				wgmma_wait<0>();
#pragma unroll
				for (int a = 0; a < 4; a++)
					wgmma_fence_operands(o[a]);
			}
			/* partial l of this thread's columns over the 8 lanes g, then per warp to shared */
#pragma unroll
			for (int q = 0; q < NQ; q++) {
				float l = l_run[q];

				l += vs_shfl_xor(l, 4);
				l += vs_shfl_xor(l, 8);
				l += vs_shfl_xor(l, 16);
				if (g == 0) {
					const int c = 8 * (q >> 1) + 2 * t4 + (q & 1);

					sL[w * NB + c] = l;
					if (w == 0)
						sM[c] = m_run[q];
				}
			}
		} else {
			for (int t = r.t_begin; t < r.t_end; t++) {
				const int k = t - r.t_begin;
				const uint32_t kv_s = sbase + Y::KV_OFF + (k & 1) * 73728;
				const bool fetch = tid < 192 && t + LEAD + 1 < r.t_end;
				const int jf = (t + LEAD + 1) * 64 + (tid - 128);
				int32_t page = 0;

				cp_async_wait<DEEP ? 1 : 0>(); /* tile t (bf16), Q */
				fence_proxy_async();
				named_bar_sync(2, 256);
				if (FP8) {
					/* vectors [W0, T1) of tile t+1 now, the rest while P V runs */
					wt_step_fp8<W0, T1, DEEP>(p, raw, rawslot, sRow, smem + Y::KV_OFF + ((k + 1) & 1) * 73728,
								  t + 1, r.t_begin, r.t_end, tid - 128);
				} else {
					if (t + 1 < r.t_end)
						wg1_load_kv_bf16(p, smem + Y::KV_OFF + ((k + 1) & 1) * 73728,
								 sRow + ((t + 1) % 4) * 64, tid - 128);
					cp_async_commit();
				}
				if (fetch && jf < r.kv_len)
					page = p.block_table[(size_t)b * (size_t)p.max_pages + (size_t)(jf / p.page_size)];
				named_bar_sync(1, 256);
				if (fetch)
					sRow[((t + LEAD + 1) % 4) * 64 + (tid - 128)] =
						jf < r.kv_len ? ((long long)page * p.page_size + jf % p.page_size) * ROWB : -1;
				float al[NQ];
				bool moved = false;

#pragma unroll
				for (int q = 0; q < NQ; q++) {
					al[q] = sAlpha[8 * (q >> 1) + 2 * t4 + (q & 1)];
					moved = moved || al[q] != 1.f;
				}
				if (moved)
#pragma unroll
					for (int a = 0; a < 4; a++)
#pragma unroll
						for (int i = 0; i < ACC; i++)
							o[a][i] *= al[2 * (i >> 2) + (i & 1)];
				const uint64_t dp = wgmma_desc_sw128(sbase + Y::P_OFF, 16, WG_GRP);

				wgmma_fence();
#pragma unroll
				for (int kk = 0; kk < 4; kk++)
#pragma unroll
					for (int a = 0; a < 4; a++)
						wgmma_t_ss<NB, 1>(o[a],
								      wgmma_desc_sw128(kv_s + (4 + a) * WG_ATOM_K + kk * 2 * WG_GRP,
										       WG_ATOM_K, WG_GRP),
								      dp + ((kk * 32) >> 4), 1);
				wgmma_commit();
				if (FP8 && t + 1 < r.t_end) {
					wg1_st_fp8<T1, WG_FP8_VECS>(raw, smem + Y::KV_OFF + ((k + 1) & 1) * 73728,
									   tid - 128);
					if (t + 2 < r.t_end)
						wg1_ld_fp8<T1, WG_FP8_VECS>(p, raw, sRow + ((t + 2) % 4) * 64, tid - 128);
				}
				wgmma_wait<0>();
#pragma unroll
				for (int a = 0; a < 4; a++)
					wgmma_fence_operands(o[a]);
			}
		}
	}
	cp_async_wait<0>(); /* Q (also in a block with no tile) */
	vs_syncthreads();

	/* Finalize: O^T / l per column; element (dim, column) of this thread, lse by warpgroup 0. */
	float l[NQ], sc[NQ];

#pragma unroll
	for (int q = 0; q < NQ; q++) {
		const int c = 8 * (q >> 1) + 2 * t4 + (q & 1);

		l[q] = sL[c] + sL[NB + c] + sL[2 * NB + c] + sL[3 * NB + c];
		sc[q] = l[q] != 0.f ? p.out_scale / l[q] : 0.f;
	}
#pragma unroll
	for (int a = 0; a < 4; a++)
#pragma unroll
		for (int i = 0; i < ACC; i++) {
			const int q = 2 * (i >> 2) + (i & 1);
			const int c = 8 * (i >> 2) + 2 * t4 + (i & 1);
			const int m = m0 + c;
			const int dim = 64 * (4 * wg + a) + 16 * w + g + 8 * ((i >> 1) & 1);

			if (m < p.m_total)
				store_out1(p, b, slot, m, dim, o[a][i] * sc[q]);
		}
	if (wg == 0 && w == 0 && g == 0)
#pragma unroll
		for (int q = 0; q < NQ; q++) {
			const int m = m0 + 8 * (q >> 1) + 2 * t4 + (q & 1);

			if (m < p.m_total)
				store_lse(p, b, slot, m, sM[8 * (q >> 1) + 2 * t4 + (q & 1)], l[q]);
		}
}
#endif /* MLA_HAVE_WGMMA */

/*
 * Uniform splits only: its balanced instance (bn64-bh16-spbal) was slower than bn64-bh64-spbal on
 * every shape measured and never chosen, with its wgmma serialized by ptxas in the segment loop
 * (C7520), and left the space (BENCHMARKS.md, 2026-12-01 22:39 and 2026-12-02).
 */
template <int NB, bool FP8>
__global__ void __launch_bounds__(256, 1) mla_flash_wgmma_t(FlashParams p)
{
#if defined(MLA_HAVE_WGMMA) && defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
	extern __shared__ __align__(1024) unsigned char smem[];
	const uint32_t sbase = vs_smem_addr(smem);
	Seg sg;

	if (sbase & 1023u)
		__trap(); /* swizzle atoms need 1 KiB alignment */
	seg_uniform(p, sg);
	wgmma_t_segment<NB, FP8>(p, smem, sbase, vs_bid_x() * NB, sg);
#else
	(void)p;
#if defined(__CUDA_ARCH__)
	__trap();
#endif /* __CUDA_ARCH__ */
#endif /* wgmma available */
}

/* ================================================================ one-tile kernel */

/*
 * MLA_FLASH_ONETILE (hip_flash.h): tasks whose block table spans at most one 64-key tile. One block
 * per row m = (query i, head h) and batch element b, NW warps; warp w takes the row's keys w,
 * w + NW, ... (at most 64 / NW), OT_KEYS at a time; lane l holds the dim pairs of ot_pair_index
 * (bf16: l + 32 k, k < 9; fp8: the pairs of words l + 32 k, k < 5), the first 8 of them in V.
 * The serial chain is two loads deep: the Q row, seqlens[b] and the block_table entries of the
 * warp's keys are all issued first, then the KV rows of up to OT_KEYS keys at once. The tile kernels
 * pay their whole pipeline (Q copy, seqlens, block_table, tile copy, S, softmax, P V, barriers
 * between warpgroups) for a single tile: 9 us against the plain kernel's 5 us at h_q 128 with one
 * key, with similar bytes read (ncu, BENCHMARKS.md 2026-12-02).
 */
#if defined(VS_PLATFORM_NVIDIA)
constexpr int OT_KEYS = 4; /* keys of a warp whose rows are loaded together */

VS_DEV uint32_t ld_global_nc_u32(const void *p)
{
	uint32_t v;

	/* volatile: issued where written, before the loads that depend on seqlens */
	asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(v) : "l"(p));
	return v;
}

/* A bf16 pair (element 0 in the low half) as two floats. */
VS_DEV void ot_pair(uint32_t x, float &lo, float &hi)
{
	lo = __uint_as_float(x << 16);
	hi = __uint_as_float(x & 0xffff0000u);
}

/*
 * The dim pair (dims 2 e, 2 e + 1) that lane holds in its pair slot i. bf16: one 32-bit word of a
 * row per slot, e = lane + 32 i (9 slots). fp8: one word of 4 codes per two slots, e = 2 (lane +
 * 32 (i / 2)) + i % 2 (10 slots; words 128 + lane, slots 8 and 9, only for lanes < 16): 5 loads of
 * a row instead of 9 half words, whose address arithmetic the compiler rebuilt per load (the fp8
 * instance was 3424 SASS instructions against the bf16 one's 1896).
 */
template <bool FP8>
VS_DEV int ot_pair_index(int lane, int i)
{
	return FP8 ? 2 * (lane + 32 * (i >> 1)) + (i & 1) : lane + 32 * i;
}

template <bool FP8>
struct OtLayout {
	static constexpr int NS = FP8 ? 10 : D_QK / 2 / 32; /* pair slots per lane (ot_pair_index) */
	static constexpr int NX = FP8 ? 5 : NS;              /* words of a row a lane loads */
	static constexpr int NV = D_V / 2 / 32;              /* slots in V: the first 8, both layouts */
	static constexpr int ROWB = FP8 ? D_QK : 2 * D_QK;   /* bytes of a cache row */
};

/* A warp's running softmax over its keys: O (its lane's V pair slots), max and sum (log2 domain). */
template <bool FP8>
struct OtState {
	float acc[2 * OtLayout<FP8>::NV];
	float m_run, l_run;
};

/*
 * Keys t0 .. t0 + nv - 1 of warp w (key j = w + NW t), nv <= OT_KEYS: their rows are loaded at once,
 * then S, the softmax update and P V. PARTIAL (the last group of a warp, nv < OT_KEYS): the rows
 * past nv are not loaded; SKIP: their S and P V are skipped by a warp-uniform branch rather than done
 * on zeros and masked (fp8 only: there, with one key, the zeros' decode and S were 3/4 of the
 * group's instructions; bf16 with one key measured 5.8 us skipped against 5.1 masked, BENCHMARKS.md
 * 2026-12-03).
 */
template <int NW, bool FP8, bool PARTIAL, bool SKIP = PARTIAL && FP8>
VS_DEV void ot_keys(const FlashParams &p, const uint32_t (&q)[OtLayout<FP8>::NS], int32_t page, int lane,
		    int w, int t0, int nv, OtState<FP8> &st)
{
	typedef OtLayout<FP8> L;
	const bool tail = lane < 16; /* fp8: lanes holding words 128 + lane (slots 8, 9) */
	uint32_t x[OT_KEYS][L::NX], y[OT_KEYS][L::NS];
	float s[OT_KEYS];

#pragma unroll
	for (int u = 0; u < OT_KEYS; u++) {
		const int t = t0 + u, j = w + NW * t;
		const int32_t pg = vs_shfl_i(page, t & 31);
		const uint32_t *kv =
			(const uint32_t *)(p.kv + ((long long)pg * p.page_size + j % p.page_size) * L::ROWB) + lane;

#pragma unroll
		for (int k = 0; k < L::NX; k++)
			x[u][k] = (PARTIAL && u >= nv) || (FP8 && k == 4 && !tail) ? 0u : __ldg(kv + 32 * k);
	}
#pragma unroll
	for (int u = 0; u < OT_KEYS; u++) {
		float dot = 0.f;

		if (SKIP && u >= nv) {
			s[u] = -INFINITY;
			continue;
		}
		/*
		 * Pair slots as bf16 pairs, for S and P V alike. fp8: a word's four codes to two bf16
		 * pairs once, exactly (mma_fp8x4_to_bf16x4, 0x80 NaN); the per-code software decode
		 * done for S and again for P V made the fp8 instance 2.5x the bf16 one's SASS and 11.9
		 * us against 5.7 us at h_q 128 with one key (BENCHMARKS.md 2026-12-03).
		 */
#pragma unroll
		for (int k = 0; k < L::NX; k++) {
			if constexpr (FP8)
				mma_fp8x4_to_bf16x4(x[u][k], y[u][2 * k], y[u][2 * k + 1]);
			else
				y[u][k] = x[u][k];
		}
#pragma unroll
		for (int i = 0; i < L::NS; i++) {
			float q0, q1, k0, k1;

			ot_pair(q[i], q0, q1);
			ot_pair(y[u][i], k0, k1);
			dot = fmaf(q0, k0, fmaf(q1, k1, dot));
		}
		s[u] = dot;
	}
#pragma unroll
	for (int off = 16; off > 0; off >>= 1)
#pragma unroll
		for (int u = 0; u < OT_KEYS; u++)
			if (!SKIP || u < nv)
				s[u] += vs_shfl_xor(s[u], off);
	float m_new = st.m_run;

#pragma unroll
	for (int u = 0; u < OT_KEYS; u++) {
		if (!SKIP || u < nv)
			s[u] = PARTIAL && u >= nv ? -INFINITY : s[u] * p.scale_log2;
		m_new = vs_fmaxf(m_new, s[u]);
	}
	/* fmaxf drops a NaN score; its exp2 below is NaN and carries into l, as in the reference */
	const float mu = m_new == -INFINITY ? 0.f : m_new, alpha = vs_exp2f(st.m_run - mu);

	st.l_run *= alpha;
#pragma unroll
	for (int i = 0; i < 2 * L::NV; i++)
		st.acc[i] *= alpha;
#pragma unroll
	for (int u = 0; u < OT_KEYS; u++) {
		if (SKIP && u >= nv)
			continue;
		const float pe = vs_exp2f(s[u] - mu);

		st.l_run += pe;
#pragma unroll
		for (int i = 0; i < L::NV; i++) {
			float v0, v1;

			ot_pair(y[u][i], v0, v1);
			st.acc[2 * i] = fmaf(pe, v0, st.acc[2 * i]);
			st.acc[2 * i + 1] = fmaf(pe, v1, st.acc[2 * i + 1]);
		}
	}
	st.m_run = m_new;
}

template <int NW, bool FP8>
__global__ void __launch_bounds__(NW * VS_WARP) mla_flash_onetile(FlashParams p)
{
	typedef OtLayout<FP8> L;
	constexpr int KPW = 64 / NW; /* keys per warp at most */
	static_assert(VS_WARP == 32 && KPW <= 32 && KPW % OT_KEYS == 0, "one-tile kernel layout");
	extern __shared__ __align__(16) float ot_smem[]; /* [NW][512] partial O, [NW] m, [NW] l */
	const int lane = vs_lane(), w = vs_tid() / VS_WARP;
	const int m = vs_bid_x(), b = vs_bid_z();
	const size_t row = (size_t)b * p.m_total + m;
	const uint32_t *qrow = (const uint32_t *)(p.q + row * D_QK);
	const int jl = w + NW * lane; /* lane t < KPW: the page of the warp's key t */
	uint32_t q[L::NS];
	int32_t page = 0;

#pragma unroll
	for (int i = 0; i < L::NS; i++)
		q[i] = FP8 && i >= 8 && lane >= 16 ? 0u : ld_global_nc_u32(qrow + ot_pair_index<FP8>(lane, i));
	if (lane < KPW && jl < p.max_pages * p.page_size)
		page = p.block_table[(size_t)b * p.max_pages + jl / p.page_size];
	const int n = max(0, row_limit(p, p.seqlens[b], m)); /* visible keys of row m */

	if (n == 0) { /* out 0, lse +inf */
		for (int c = vs_tid(); c < D_V / 4; c += NW * VS_WARP)
			*(uint2 *)(p.out + row * D_V + 4 * c) = make_uint2(0u, 0u);
		if (vs_tid() == 0)
			store_lse(p, b, -1, m, 0.f, 0.f);
		return;
	}
	const int nk = n > w ? (n - w + NW - 1) / NW : 0; /* this warp's keys */
	OtState<FP8> st;
	int t0 = 0;

	st.m_run = -INFINITY;
	st.l_run = 0.f;
#pragma unroll
	for (int i = 0; i < 2 * L::NV; i++)
		st.acc[i] = 0.f;
	if constexpr (FP8) { /* full groups, then the last one with the keys past nk skipped */
		for (; t0 + OT_KEYS <= nk; t0 += OT_KEYS)
			ot_keys<NW, FP8, false>(p, q, page, lane, w, t0, OT_KEYS, st);
		if (t0 < nk)
			ot_keys<NW, FP8, true>(p, q, page, lane, w, t0, nk - t0, st);
	} else { /* every group masked, one loop (faster with one key than the split above) */
		for (; t0 < nk; t0 += OT_KEYS)
			ot_keys<NW, FP8, true>(p, q, page, lane, w, t0, min(OT_KEYS, nk - t0), st);
	}

	/* Merge the warps: weights 2^(m_w - max), a warp with no key (m -inf, l 0, O 0) adds 0. */
	float *sO = ot_smem, *sM = ot_smem + NW * D_V, *sL = sM + NW;

#pragma unroll
	for (int i = 0; i < L::NV; i++)
		*(float2 *)(sO + w * D_V + 2 * ot_pair_index<FP8>(lane, i)) = make_float2(st.acc[2 * i], st.acc[2 * i + 1]);
	if (lane == 0) {
		sM[w] = st.m_run;
		sL[w] = st.l_run;
	}
	vs_syncthreads();
	float mx = -INFINITY, wt[NW], l = 0.f;

#pragma unroll
	for (int v = 0; v < NW; v++)
		mx = vs_fmaxf(mx, sM[v]);
	const float mu = mx == -INFINITY ? 0.f : mx;

#pragma unroll
	for (int v = 0; v < NW; v++) {
		wt[v] = vs_exp2f(sM[v] - mu);
		l += sL[v] * wt[v];
	}
	const float sc = l != 0.f ? p.out_scale / l : 0.f;

	for (int c = vs_tid(); c < D_V / 4; c += NW * VS_WARP) {
		float o[4] = { 0.f, 0.f, 0.f, 0.f };

#pragma unroll
		for (int v = 0; v < NW; v++) {
			const float4 y = *(const float4 *)(sO + v * D_V + 4 * c);

			o[0] = fmaf(y.x, wt[v], o[0]);
			o[1] = fmaf(y.y, wt[v], o[1]);
			o[2] = fmaf(y.z, wt[v], o[2]);
			o[3] = fmaf(y.w, wt[v], o[3]);
		}
		*(uint2 *)(p.out + row * D_V + 4 * c) =
			make_uint2(vs_pack_bf16x2(o[0] * sc, o[1] * sc), vs_pack_bf16x2(o[2] * sc, o[3] * sc));
	}
	if (vs_tid() == 0)
		store_lse(p, b, -1, m, mx, l);
}
#endif /* VS_PLATFORM_NVIDIA */

/* ================================================================ combine */

constexpr int COMBINE_THREADS = 128;
constexpr int COMBINE_ROWS = COMBINE_THREADS / VS_WARP;

__global__ void __launch_bounds__(COMBINE_THREADS) mla_flash_combine(FlashParams p)
{
	constexpr int V4 = D_V / (4 * VS_WARP); /* float4 groups per lane */
	const int lane = vs_lane(), warp = vs_tid() / VS_WARP;
	const int m = vs_bid_x() * COMBINE_ROWS + warp, b = vs_bid_y();
	int slot0, ns;

	if (m >= p.m_total)
		return;
	if (p.parts == 0) {
		slot0 = b * p.num_splits;
		ns = p.num_splits;
	} else {
		/* the ranges that hold tiles of b (Seg): none (no key: out 0, lse +inf), one (written) */
		const int m0 = m / p.block_h * p.block_h;
		const int t = part_span(p, b, m0, p.block_h, 64);
		int s_b = 0, total = 0; /* b's first position, the line's length: one pass over seqlens */

		for (int base = 0; base < p.batch; base += VS_WARP) {
			const int span = base + lane < p.batch ? part_span(p, base + lane, m0, p.block_h, 64) : 0;

			total += warp_sum_i(span);
			s_b += warp_sum_i(base + lane < b ? span : 0);
		}
		const int c = part_size(p, total);
		const int first = (s_b + PART_OV) / c, last = (s_b + t - 1) / c;

		if (t > 0 && first == last)
			return;
		slot0 = first + b;
		ns = t > 0 ? last - first + 1 : 0;
	}
	const float *lp = p.lse_part + (size_t)slot0 * p.m_total + m;
	float mx = -INFINITY, sum = 0.f, nan = 0.f;
	float acc[V4][4];

	for (int s = lane; s < ns; s += VS_WARP) {
		float v = lp[(size_t)s * p.m_total];

		mx = vs_fmaxf(mx, v);
		nan = v != v ? 1.f : nan;
	}
	mx = vs_warp_max(mx);
	if (vs_warp_max(nan) != 0.f)
		mx = NAN; /* a split saw a NaN code: NaN out and lse, as in the reference */
	if (mx != -INFINITY)
		for (int s = lane; s < ns; s += VS_WARP)
			sum += vs_exp2f(lp[(size_t)s * p.m_total] - mx);
	sum = vs_warp_sum(sum);
#pragma unroll
	for (int v = 0; v < V4; v++)
#pragma unroll
		for (int c = 0; c < 4; c++)
			acc[v][c] = 0.f;
	if (mx != -INFINITY) {
		const float inv = 1.f / sum;

		for (int s = 0; s < ns; s++) {
			const float w = vs_exp2f(lp[(size_t)s * p.m_total] - mx) * inv;
			const float *op = p.o_part + ((size_t)(slot0 + s) * p.m_total + m) * D_V;

			if (w == 0.f)
				continue; /* empty split (or negligible): never read */
#pragma unroll
			for (int v = 0; v < V4; v++) {
				vs_f32x4 x = *(const vs_f32x4 *)(op + 4 * lane + 4 * VS_WARP * v);

				acc[v][0] += w * x.x;
				acc[v][1] += w * x.y;
				acc[v][2] += w * x.z;
				acc[v][3] += w * x.w;
			}
		}
	}
	uint16_t *out = p.out + ((size_t)b * p.m_total + m) * D_V;

#pragma unroll
	for (int v = 0; v < V4; v++) {
		uint32_t *d = (uint32_t *)(out + 4 * lane + 4 * VS_WARP * v);

		d[0] = vs_pack_bf16x2(acc[v][0], acc[v][1]);
		d[1] = vs_pack_bf16x2(acc[v][2], acc[v][3]);
	}
	if (lane == 0) {
		int i = m / p.h_q, h = m % p.h_q;

		p.lse[((size_t)b * p.h_q + h) * p.s_q + i] =
			mx == -INFINITY ? INFINITY : (mx + vs_log2f(sum)) * VS_LN2;
	}
}

/* ================================================================ host: dispatch */

typedef void (*FlashKernel)(FlashParams);

struct FlashInstance {
	int bn, bh, nw, st, kind;
	FlashKernel kernel[2][2]; /* [uniform splits, balanced][bf16, fp8]; nullptr: none */
	int threads;
};

#define MLA_INSTANCE_MLA_FLASH_WARP(bn, bh, nw, st)                                              \
	{ bn, bh, nw, st, MLA_FLASH_WARP,                                                       \
	  { { mla_flash_warp<bn, bh, nw, st, false>, mla_flash_warp<bn, bh, nw, st, true> },     \
	    { nullptr, nullptr } },                                                              \
	  (nw) * VS_WARP },
/* the decoded-tile twin (sm_90 only): fp8 only */
#define MLA_INSTANCE_MLA_FLASH_WARP_DT(bn, bh, nw, st)                                           \
	{ bn, bh, nw, st, MLA_FLASH_WARP_DT,                                                    \
	  { { nullptr, mla_flash_warp<bn, bh, nw, st, true, true> }, { nullptr, nullptr } },      \
	  (nw) * VS_WARP },
#if defined(MLA_HAVE_WGMMA)
#if defined(MLA_WG_FP8_REGPATH)
#define MLA_WGMMA_FP8_KERNEL(bal) mla_flash_wgmma<true, bal>
#else
#define MLA_WGMMA_FP8_KERNEL(bal) mla_flash_wgmma_sd<true, bal>
#endif /* MLA_WG_FP8_REGPATH */
#define MLA_INSTANCE_MLA_FLASH_WGMMA(bn, bh, nw, st)                                     \
	{ bn, bh, nw, st, MLA_FLASH_WGMMA,                                               \
	  { { mla_flash_wgmma<false, false>, MLA_WGMMA_FP8_KERNEL(false) },              \
	    { mla_flash_wgmma<false, true>, MLA_WGMMA_FP8_KERNEL(true) } },              \
	  256 },
#else
#define MLA_INSTANCE_MLA_FLASH_WGMMA(bn, bh, nw, st)
#endif /* MLA_HAVE_WGMMA */
#if defined(MLA_HAVE_WGMMA)
#define MLA_INSTANCE_MLA_FLASH_WGMMA_T(bn, bh, nw, st)                     \
	{ bn, bh, nw, st, MLA_FLASH_WGMMA_T,                               \
	  { { mla_flash_wgmma_t<bh, false>, mla_flash_wgmma_t<bh, true> }, \
	    { nullptr, nullptr } },                                        \
	  256 },
#else
#define MLA_INSTANCE_MLA_FLASH_WGMMA_T(bn, bh, nw, st)
#endif /* MLA_HAVE_WGMMA */
#define MLA_INSTANCE_MLA_FLASH_ONETILE(bn, bh, nw, st)                                   \
	{ bn, bh, nw, st, MLA_FLASH_ONETILE,                                             \
	  { { mla_flash_onetile<nw, false>, mla_flash_onetile<nw, true> }, { nullptr, nullptr } }, \
	  (nw) * VS_WARP },
#define MLA_INSTANCE(bn, bh, nw, st, kind) MLA_INSTANCE_##kind(bn, bh, nw, st)

const FlashInstance flash_instances[] = {
#if defined(VS_PLATFORM_AMD)
	MLA_FLASH_GFX942_KERNELS(MLA_INSTANCE)
#else
	MLA_FLASH_SM90_KERNELS(MLA_INSTANCE)
#endif /* platform */
};

const FlashInstance *instance_find(const struct mla_flash_entry *e)
{
	const struct mla_decode_config *c = &e->cfg;

	for (const FlashInstance &in : flash_instances)
		if (in.bn == c->block_n && in.bh == c->block_h && in.nw == c->num_warps && in.st == c->num_stages &&
		    in.kind == e->kind)
			return &in;
	return nullptr;
}

} /* namespace */

extern "C" int mla_hip_flash_launch(const struct mla_decode_args *a, const struct mla_decode_config *cfg)
{
	struct mla_flash_plan plan;
	const struct mla_flash_entry *entry;
	const FlashInstance *inst;
	FlashParams fp;
	hipStream_t stream;
	int fp8, rc;
	size_t smem;

	if (!a || !cfg)
		return MLA_EINVAL;
	rc = mla_flash_plan_make(&plan, a, cfg);
	if (rc != MLA_OK)
		return rc;
	entry = mla_flash_entry_find(cfg);
	inst = entry ? instance_find(entry) : nullptr;
	if (!entry || !inst)
		return MLA_EUNSUPPORTED;
	if (a->workspace_bytes < plan.workspace_bytes || (plan.workspace_bytes && !a->workspace))
		return MLA_EUNSUPPORTED;
	if (a->batch == 0)
		return MLA_OK;
	if (!a->q || !a->kv_cache || !a->block_table || !a->seqlens || !a->out || !a->lse)
		return MLA_EINVAL;
	if (a->batch > 65535 || plan.head_blocks > 0x7fffffff / 2)
		return MLA_EUNSUPPORTED;

	fp8 = a->kv_dtype == MLA_KV_FP8_E4M3_FNUZ;
	fp.q = (const uint16_t *)a->q;
	fp.kv = (const uint8_t *)a->kv_cache;
	fp.block_table = a->block_table;
	fp.seqlens = a->seqlens;
	fp.out = (uint16_t *)a->out;
	fp.lse = a->lse;
	fp.o_part = plan.workspace_bytes ? (float *)((char *)a->workspace + plan.o_part_offset) : nullptr;
	fp.lse_part = plan.workspace_bytes ? (float *)((char *)a->workspace + plan.lse_part_offset) : nullptr;
	fp.s_q = a->s_q;
	fp.h_q = a->h_q;
	fp.m_total = plan.m_total;
	fp.page_size = a->page_size;
	fp.max_pages = a->max_pages;
	fp.num_splits = plan.num_splits;
	fp.parts = plan.parts;
	fp.batch = a->batch;
	fp.block_h = cfg->block_h;
	fp.scale_log2 = a->softmax_scale * VS_LOG2E * (fp8 ? a->kv_scale : 1.f);
	fp.out_scale = fp8 ? a->kv_scale : 1.f;
	stream = (hipStream_t)a->stream;

	smem = mla_flash_smem_bytes(entry, a->kv_dtype);
	const int bal = plan.parts > 0;
	FlashKernel kernel = inst->kernel[bal][fp8];

	if (!kernel)
		return MLA_EUNSUPPORTED;
#if defined(VS_PLATFORM_NVIDIA)
	/*
	 * Raise the dynamic shared-memory limit once per kernel (a host-side attribute, not stream
	 * work; done at the first launch, which precedes any capture of the same kernel in practice).
	 */
	static size_t smem_set[sizeof(flash_instances) / sizeof(flash_instances[0])][2][2];
	size_t *done = &smem_set[inst - flash_instances][bal][fp8];

	if (smem > 48 * 1024 && *done < smem) {
		HIP_CHECK_RET(hipFuncSetAttribute((const void *)kernel, hipFuncAttributeMaxDynamicSharedMemorySize,
						  (int)smem),
			      MLA_EDEVICE);
		*done = smem;
	}
#else
	smem = 0; /* gfx942 kernels use static LDS */
#endif /* platform */
	if (plan.parts > 0)
		kernel<<<dim3(plan.head_blocks, plan.parts, 1), dim3(inst->threads), smem, stream>>>(fp);
	else
		kernel<<<dim3(plan.head_blocks, plan.num_splits, a->batch), dim3(inst->threads), smem, stream>>>(fp);
	HIP_CHECK_RET(hipGetLastError(), MLA_EDEVICE);
	if (plan.num_splits > 1 || plan.parts > 0) {
		mla_flash_combine<<<dim3((plan.m_total + COMBINE_ROWS - 1) / COMBINE_ROWS, a->batch),
				    dim3(COMBINE_THREADS), 0, stream>>>(fp);
		HIP_CHECK_RET(hipGetLastError(), MLA_EDEVICE);
	}
	return MLA_OK;
}
