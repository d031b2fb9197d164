/*
 * flash_sparse.hip - hip.flash's sparse form (ABI 3, topk > 0: DeepSeek Sparse Attention decode;
 * kernels/mla_decode.h), one HIP source for sm_90a (nvcc, through hip_compat.h) and gfx942.
 *
 * Semantics are FlashMLA's sparse decode (tests/ref.py ref_sparse_attn_decode), as the oracle
 * (oracles/) and cpu.naive transliterate them: query row (b, i) attends, for each head, to the
 * valid entries of indices[b][i] (not -1, before topk_length[b]) and then of extra_indices[b][i]
 * (the extra cache), one softmax over both; no valid entry: out 0, lse +inf; attn_sink scales out
 * by 1 / (1 + exp(sink[h] - lse)), lse reported without it.
 *
 * Grid (query rows batch x s_q, head blocks of BLOCK_H heads, splits). A block owns heads
 * [h0, h0 + BLOCK_H) of one query row (padding rows past h_q compute and are not written) and one
 * split of the row's tiles: tiles of BLOCK_N entries, first over the main cache's usable entries
 * (topk, or topk_length[b]), then over the extra cache's; a split takes an equal run of them, all
 * computed on the device (capture-safe: the host sees shapes only). Per tile:
 *   1. BLOCK_N threads read the tile's indices: page offset and slot of each valid entry, -1 for
 *      an invalid one (shared memory);
 *   2. all threads gather the valid rows, 16 bytes per load, and decode them once into a bf16 tile
 *      in shared memory (sparse_decode.h: fp8 code x its block scale rounded to bf16, RoPE copied;
 *      an invalid entry's row is written as zeros and its cache row is never read: the tasks fill
 *      unselected rows with NaN);
 *   3. S = Q K^T on the warp-level matrix tiles of mma.h (mma.sync m16n8k16 on NVIDIA with Q in
 *      shared memory, MFMA 16x16x16 on gfx942 with Q fragments in registers), BLOCK_H / 16 row
 *      groups x column groups of keys, as the dense warp kernel (flash.hip, mla_flash_warp);
 *   4. invalid entries masked to -inf, online softmax in base 2 (row maxima across column groups
 *      through shared memory), P (bf16) to shared memory;
 *   5. O += P V, V the first 512 dims of the same decoded tile (fp8_model1: the whole row).
 * One split: out and lse written directly (sink applied). Several: O / l and m + log2(l) per split
 * into the workspace (the dense layout: slot b * num_splits + split, row m = i * h_q + h), and
 * mla_sparse_combine merges them by their LSE, applies the sink and writes out and lse. Nothing is
 * allocated, the host never synchronizes, and the result does not depend on the schedule
 * (deterministic: fixed split ranges, fixed reduction order).
 *
 * num_stages (the kernel's ST, a config field): 1 is the loop above (software fp8 decode, one tile
 * in flight). 2 on sm_90 is the pipelined loop (sparse_pipeline, fp8 layouts): step 1 of the next
 * tile and its rows' bytes copied verbatim by cp.async into a raw stage (sparse_decode.h's raw rows)
 * run while this tile's steps 3-5 do; step 2 then decodes the raw stage from shared memory with the
 * hardware conversions (sparse_decode_hw.h, the software decode's bits). 2 on gfx942 is the loop
 * above with the hardware fnuz decode (64 KiB of LDS leaves no room for a raw stage). bf16 caches
 * run the loop above at either num_stages.
 */
#include "hip_compat.h"
#include "mma.h"
#include "hip_flash.h"
#include "hip_impls.h"
#include "sparse_decode.h"
#include "sparse_decode_hw.h"

#include <math.h>

namespace {

constexpr int ROW = MLA_FLASH_ROW_BF16; /* bytes of a decoded row in shared memory */
constexpr int LDK = ROW / 2;            /* its bf16 elements */
constexpr int D_V = MLA_D_V;

struct SparseParams {
	const uint16_t *q;              /* [batch * s_q][h_q][d_qk] */
	const uint8_t *kv[2];           /* main cache, extra cache */
	const int32_t *indices[2];      /* [batch * s_q][topk[c]] */
	const int32_t *topk_length[2];  /* [batch] or nullptr */
	long long page_bytes[2];
	int32_t page_size[2];
	int32_t topk[2];                /* topk, extra_topk (0: no extra cache) */
	const float *attn_sink;         /* [h_q] or nullptr */
	uint16_t *out;                  /* [batch * s_q][h_q][512] */
	float *lse;                     /* [batch][h_q][s_q] */
	float *o_part;                  /* [batch * num_splits][m_total][512] */
	float *lse_part;                /* [batch * num_splits][m_total], log2 domain, -inf: empty */
	int32_t s_q;
	int32_t h_q;
	int32_t m_total;                /* s_q * h_q */
	int32_t num_splits;
	int32_t fnuz;                   /* fp8 codes are e4m3fnuz (else e4m3fn) */
	float scale_log2;               /* softmax_scale * log2(e) */
};

template <int BN_, int BH, int NW, int ST>
struct SparseTraits {
#if defined(VS_PLATFORM_AMD)
	static constexpr bool AMD = true;
#else
	static constexpr bool AMD = false;
#endif
	static constexpr int BN = BN_;
	static constexpr int RG = BH / 16;   /* row groups of 16 heads */
	static constexpr int CG = NW / RG;   /* column groups: keys of S, columns of O */
	static constexpr int NKW = BN / CG;  /* keys per warp in S */
	static constexpr int NCW = D_V / CG; /* output columns per warp */
	static constexpr int NT_S = NKW / 16;
	static constexpr int NT_O = NCW / 16;
	static constexpr int THREADS = NW * VS_WARP;
	static constexpr int LDP = BN + 8;
	static constexpr int K_OFF = AMD ? 0 : BH * ROW; /* NVIDIA: the Q tile first */
	static constexpr int P_OFF = K_OFF + BN * ROW;
	static constexpr int MAX_OFF = P_OFF + BH * LDP * 2;
	static constexpr int SUM_OFF = MAX_OFF + CG * BH * 4;
	static constexpr int PAGE_OFF = SUM_OFF + CG * BH * 4;
	static constexpr int SLOT_OFF = PAGE_OFF + BN * 8;
	/* num_stages 2 on NVIDIA: the next tile's entries and its raw rows (cp.async) */
	static constexpr bool RAW_STAGE = !AMD && ST >= 2;
	static constexpr int PAGE1_OFF = SLOT_OFF + BN * 4;
	static constexpr int SLOT1_OFF = PAGE1_OFF + (RAW_STAGE ? BN * 8 : 0);
	static constexpr int RAW_OFF = SLOT1_OFF + (RAW_STAGE ? BN * 4 : 0);
	static constexpr int SMEM = RAW_OFF + (RAW_STAGE ? BN * MLA_SPARSE_RAW_ROW : 0);

	static_assert(SMEM == MLA_FLASH_SPARSE_SMEM_ST(BN, BH, NW, ST, AMD), "smem formula");
	static_assert(ST == 1 || ST == 2, "num_stages 1 or 2");
	static_assert(PAGE1_OFF % 8 == 0 && RAW_OFF % 16 == 0 && MLA_SPARSE_RAW_ROW % 16 == 0, "aligned stages");
	static_assert(BH % 16 == 0 && NW % RG == 0 && NKW % 16 == 0 && NKW >= 16 && NCW % 16 == 0, "tile shape");
	static_assert(THREADS >= BN, "one thread per entry of a tile");
	static_assert(PAGE_OFF % 8 == 0, "aligned entries");
};

/* Per-warp state of the online softmax (rows: mma_rowslot_row of this lane in its row group). */
template <class T>
struct SparseState {
	float m_run[MMA_C_ROWS];
	float l_run[MMA_C_ROWS];
	mma_frag_c o[T::NT_O];
};

/* Usable entries of cache c for batch element b (sparse_decode.h). */
VS_DEV int cache_entries(const SparseParams &p, int c, int b)
{
	return mla_sparse_entries(p.topk_length[c], b, p.topk[c]);
}

/*
 * Step 2: gather the tile's valid rows of cache c (sPage / sSlot) and decode them into sK.
 * Unit k of row r (sparse_decode.h) for u = r * UNITS + k; loads are issued BATCH at a time ahead of
 * their decodes and stores, so that a thread has several 16-byte loads in flight. HW: the hardware
 * fp8 decode (sparse_decode_hw.h, the same bits), else the software one.
 */
template <int FMT, class T, bool HW = false>
VS_DEV void sparse_gather(const SparseParams &p, int c, unsigned char *sK, const long long *sPage,
			  const int *sSlot, int tid)
{
	constexpr int BN = T::NKW * T::CG;
	constexpr int UNITS = MLA_SPARSE_UNITS(FMT);
	constexpr int TOTAL = BN * UNITS;
	constexpr int ITERS = (TOTAL + T::THREADS - 1) / T::THREADS;
	constexpr int BATCH = ITERS < 4 ? ITERS : 4;
	const uint8_t *kv = p.kv[c];
	const int ps = p.page_size[c];
	const int fnuz = p.fnuz;

	for (int i0 = 0; i0 < ITERS; i0 += BATCH) {
		vs_u32x4 w[BATCH];
		float sc[BATCH];
		int dst[BATCH]; /* byte offset in sK; -1: nothing (past the tile) */
		int codes[BATCH];

#pragma unroll
		for (int j = 0; j < BATCH; j++) {
			const int u = tid + (i0 + j) * T::THREADS;

			w[j] = vs_u32x4{ 0u, 0u, 0u, 0u };
			sc[j] = 0.f;
			dst[j] = -1;
			codes[j] = 0;
			if (i0 + j < ITERS && (TOTAL % T::THREADS == 0 || u < TOTAL)) {
				const int r = u / UNITS, k = u % UNITS;
				const long long pg = sPage[r];
				const struct mla_sparse_unit su = mla_sparse_unit_at(FMT, ps, sSlot[r], k);

				dst[j] = r * ROW + 2 * su.dim;
				codes[j] = su.codes;
				if (pg >= 0) { /* invalid entries keep zeros and read nothing */
					const uint8_t *page = kv + pg;

					w[j] = *(const vs_u32x4 *)(page + su.src);
					if (su.codes)
						sc[j] = mla_sparse_scale_load(FMT, page + su.scale);
				}
			}
		}
#pragma unroll
		for (int j = 0; j < BATCH; j++) {
			if (dst[j] < 0)
				continue;
			vs_u32x4 *d = (vs_u32x4 *)(sK + dst[j]);

			if (FMT != MLA_SPARSE_BF16 && codes[j]) {
				const uint32_t in[4] = { w[j].x, w[j].y, w[j].z, w[j].w };
				uint32_t o[8];

				if (HW)
					mla_sparse_decode16_hw(in, sc[j], fnuz, o);
				else
					mla_sparse_decode16(in, sc[j], fnuz, o);
				d[0] = vs_u32x4{ o[0], o[1], o[2], o[3] };
				d[1] = vs_u32x4{ o[4], o[5], o[6], o[7] };
			} else {
				d[0] = w[j];
			}
		}
	}
}

/*
 * Steps 3-5 for one decoded tile sK (bf16 rows of LDK elements, d dims): S for this warp's rows
 * and keys, masking, the online softmax, P, O += P V for this warp's rows and output columns.
 */
template <class T, int D>
VS_DEV void sparse_tile(SparseState<T> &st, const mma_frag_a *qf, const uint16_t *sQ, const uint16_t *sK,
			uint16_t *sP, float *sMax, const long long *sPage, float scale_log2, int lane, int rg, int cg)
{
	constexpr int BN = T::NKW * T::CG;
	constexpr int BH = T::RG * 16;
	mma_frag_c s[2][T::NT_S];

	(void)qf;
	(void)sQ;
#pragma unroll
	for (int c = 0; c < 2; c++)
#pragma unroll
		for (int nt = 0; nt < T::NT_S; nt++)
#pragma unroll
			for (int e = 0; e < MMA_C_ELEMS; e++)
				s[c][nt].x[e] = 0.f;

	/* S = Q K^T over D dims, two accumulation chains (even / odd k steps). */
#if defined(VS_PLATFORM_AMD)
#pragma unroll
#else
#pragma unroll 3
#endif /* platform */
	for (int k2 = 0; k2 < D / 32; k2++) {
#pragma unroll
		for (int c = 0; c < 2; c++) {
			const int kk = 2 * k2 + c;
			mma_frag_a a;

#if defined(VS_PLATFORM_AMD)
			a = qf[kk];
#else
			mma_load_a(a, sQ + rg * 16 * LDK + kk * 16, LDK);
#endif /* platform */
#pragma unroll
			for (int nt = 0; nt < T::NT_S; nt++) {
				mma_frag_b kb;

				mma_load_b_nk(kb, sK + (cg * T::NKW + nt * 16) * LDK + kk * 16, LDK);
				mma_tile16(s[c][nt], a, kb);
			}
		}
#if defined(VS_PLATFORM_AMD)
		__builtin_amdgcn_sched_barrier(0); /* keep LDS loads from piling up across k steps */
#endif /* VS_PLATFORM_AMD */
	}

	/* Scale (base 2), mask the invalid entries, row maxima. */
	float mx[MMA_C_ROWS];

#pragma unroll
	for (int rs = 0; rs < MMA_C_ROWS; rs++)
		mx[rs] = -INFINITY;
#pragma unroll
	for (int nt = 0; nt < T::NT_S; nt++)
#pragma unroll
		for (int e = 0; e < MMA_C_ELEMS; e++) {
			const int rs = mma_c_rowslot(e);
			const int key = cg * T::NKW + nt * 16 + mma_c_col(lane, e);
			const float v = sPage[key] >= 0 ? (s[0][nt].x[e] + s[1][nt].x[e]) * scale_log2 : -INFINITY;

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
			const int row = rg * 16 + mma_rowslot_row(lane, rs);
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
		const float m_new = vs_fmaxf(st.m_run[rs], mx[rs]);

		mu[rs] = m_new == -INFINITY ? 0.f : m_new;
		alpha[rs] = vs_exp2f(st.m_run[rs] - mu[rs]);
		st.m_run[rs] = m_new;
		st.l_run[rs] *= alpha[rs];
	}
#pragma unroll
	for (int nt = 0; nt < T::NT_S; nt++)
#pragma unroll
		for (int e = 0; e < MMA_C_ELEMS; e++) {
			const int rs = mma_c_rowslot(e);
			const float pe = vs_exp2f(s[0][nt].x[e] - mu[rs]);

			st.l_run[rs] += pe;
			s[0][nt].x[e] = pe;
		}
	/* P -> shared memory: this warp's rows, its keys' columns. */
#pragma unroll
	for (int nt = 0; nt < T::NT_S; nt++) {
#if defined(VS_PLATFORM_NVIDIA)
#pragma unroll
		for (int e = 0; e < MMA_C_ELEMS; e += 2) {
			const int row = rg * 16 + mma_c_row(lane, e);
			const int col = cg * T::NKW + nt * 16 + mma_c_col(lane, e);

			*(uint32_t *)(sP + row * T::LDP + col) = vs_pack_bf16x2(s[0][nt].x[e], s[0][nt].x[e + 1]);
		}
#else
#pragma unroll
		for (int e = 0; e < MMA_C_ELEMS; e++) {
			const int row = rg * 16 + mma_c_row(lane, e);
			const int col = cg * T::NKW + nt * 16 + mma_c_col(lane, e);

			sP[row * T::LDP + col] = (uint16_t)vs_bf16_rne(s[0][nt].x[e]);
		}
#endif /* platform */
	}
#pragma unroll
	for (int nt = 0; nt < T::NT_O; nt++)
#pragma unroll
		for (int e = 0; e < MMA_C_ELEMS; e++)
			st.o[nt].x[e] *= alpha[mma_c_rowslot(e)];
	vs_syncthreads(); /* P complete */

	/* O += P V: this warp's P rows (all BN keys), its V columns (the first 512 dims of each row). */
#pragma unroll 1
	for (int kk = 0; kk < BN / 16; kk++) {
		mma_frag_a pa;

		mma_load_a(pa, sP + rg * 16 * T::LDP + kk * 16, T::LDP);
#pragma unroll
		for (int nt = 0; nt < T::NT_O; nt++) {
			mma_frag_b vb;

			mma_load_b_kn(vb, sK + kk * 16 * LDK + cg * T::NCW + nt * 16, LDK);
			mma_tile16(st.o[nt], pa, vb);
		}
	}
}

#if defined(VS_PLATFORM_NVIDIA)
/* ------------------------------------------------ the pipelined kernel (num_stages 2, NVIDIA) */

/* cp.async of 16 bytes (L2 only) or 8 bytes, global -> shared; both addresses aligned to the size. */
VS_DEV void sparse_cp16(void *dst, const void *src)
{
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(vs_smem_addr(dst)), "l"(src) : "memory");
}

VS_DEV void sparse_cp8(void *dst, const void *src)
{
	asm volatile("cp.async.ca.shared.global [%0], [%1], 8;" ::"r"(vs_smem_addr(dst)), "l"(src) : "memory");
}

VS_DEV void sparse_cp_commit(void) { asm volatile("cp.async.commit_group;" ::: "memory"); }
VS_DEV void sparse_cp_wait_all(void) { asm volatile("cp.async.wait_group 0;" ::: "memory"); }

/*
 * The cache index of entry e_t (0 <= e_t < BN) of tile t of query row `row`: tiles [0, tiles0) are
 * the main cache's, the rest the extra cache's; -1 past the cache's usable entries (never read), as
 * the num_stages 1 kernel's entries.
 */
template <int BN>
VS_DEV int32_t sparse_tile_index(const SparseParams &p, int row, int tiles0, int len0, int len1, int t, int e_t)
{
	const int c = t < tiles0 ? 0 : 1;
	const int e = (c ? t - tiles0 : t) * BN + e_t;

	return e < (c ? len1 : len0) ? p.indices[c][(size_t)row * p.topk[c] + e] : -1;
}

/* Its page offset (-1: invalid) and slot in cache c, into entry e_t of sPage / sSlot. */
VS_DEV void sparse_entry_store(const SparseParams &p, int c, int32_t idx, long long *sPage, int *sSlot, int e_t)
{
	int sl = 0;
	const long long pg = mla_sparse_row_page(idx, p.page_size[c], p.page_bytes[c], &sl);

	sPage[e_t] = pg;
	sSlot[e_t] = sl;
}

/*
 * Issue the cp.async copies of a tile's valid rows of cache c into the raw stage (rows of
 * MLA_SPARSE_RAW_ROW bytes; sparse_decode.h's chunks); invalid rows are neither read nor written.
 */
template <int FMT, class T>
VS_DEV void sparse_raw_issue(const SparseParams &p, int c, unsigned char *sRaw, const long long *sPage,
			     const int *sSlot, int tid)
{
	constexpr int CH = MLA_SPARSE_RAW_CHUNKS(FMT);
	constexpr int TOTAL = T::BN * CH;
	const uint8_t *kv = p.kv[c];
	const int ps = p.page_size[c];

#pragma unroll 4
	for (int u = tid; u < TOTAL; u += T::THREADS) {
		const int r = u / CH, k = u % CH;
		const long long pg = sPage[r];

		if (pg < 0)
			continue;
		const struct mla_sparse_chunk ch = mla_sparse_raw_chunk(FMT, ps, sSlot[r], k);
		unsigned char *dst = sRaw + r * MLA_SPARSE_RAW_ROW + ch.dst;
		const uint8_t *src = kv + pg + ch.src;

		if (ch.bytes == 16)
			sparse_cp16(dst, src);
		else
			sparse_cp8(dst, src);
	}
}

/*
 * Decode the raw stage into the bf16 tile sK (the hardware decode; sparse_decode.h's raw units),
 * zeros for the invalid rows (their raw rows hold stale bytes and are not read).
 */
template <int FMT, class T>
VS_DEV void sparse_raw_decode(const unsigned char *sRaw, unsigned char *sK, const long long *sPage, int fnuz, int tid)
{
	constexpr int UNITS = MLA_SPARSE_UNITS(FMT);
	constexpr int TOTAL = T::BN * UNITS;

#pragma unroll 2
	for (int u = tid; u < TOTAL; u += T::THREADS) {
		const int r = u / UNITS, k = u % UNITS;
		const struct mla_sparse_unit su = mla_sparse_unit_raw(FMT, k);
		vs_u32x4 *d = (vs_u32x4 *)(sK + r * ROW + 2 * su.dim);

		if (sPage[r] < 0) {
			d[0] = vs_u32x4{ 0u, 0u, 0u, 0u };
			if (su.codes)
				d[1] = vs_u32x4{ 0u, 0u, 0u, 0u };
			continue;
		}
		const unsigned char *raw = sRaw + r * MLA_SPARSE_RAW_ROW;
		const vs_u32x4 w = *(const vs_u32x4 *)(raw + su.src);

		if (su.codes) {
			const uint32_t in[4] = { w.x, w.y, w.z, w.w };
			uint32_t o[8];

			mla_sparse_decode16_hw(in, mla_sparse_scale_load(FMT, raw + su.scale), fnuz, o);
			d[0] = vs_u32x4{ o[0], o[1], o[2], o[3] };
			d[1] = vs_u32x4{ o[4], o[5], o[6], o[7] };
		} else {
			d[0] = w;
		}
	}
}

/*
 * The tile loop of the pipelined kernel (fp8 layouts), tiles [t_begin, t_end) of query row `row`.
 * Two entry buffers (sPage / sSlot: [0] and the PAGE1 / SLOT1 pair), one raw stage, one decoded tile:
 *   prologue   entries of t_begin -> buffer 0; barrier; its raw rows issued (cp.async).
 *   tile t     (cur = its entry buffer, nxt the other: buffer 0 for even t - t_begin)
 *     a. entry tid of tile t + 1 read from global memory (a register; not waited on yet);
 *     b. wait for this thread's copies; barrier: tile t's raw stage is complete, and every warp is
 *        done with tile t - 1 (sK, sP, sMax, and the entries in nxt, its mask);
 *     c. tile t + 1's entries -> nxt; the raw stage decoded into sK (entries cur);
 *     d. barrier: sK and nxt complete, the raw stage read by all;
 *     e. tile t + 1's raw rows issued into the raw stage (in flight during f);
 *     f. S, softmax, P V on sK (sparse_tile; its own barriers), masked by the entries in cur.
 * A buffer is rewritten only after a barrier that follows every read of it: the raw stage (read in
 * c, rewritten in e after d), sK (read in f, rewritten in c of the next tile after its b), the entry
 * buffer cur (read in c and f, rewritten as nxt in c of the next tile after its b). No copy is in
 * flight after the last tile (none issued past t_end - 1).
 */
template <int FMT, class T, int D>
VS_DEV void sparse_pipeline(const SparseParams &p, SparseState<T> &st, const uint16_t *sQ, unsigned char *smem,
			    int row, int tiles0, int len0, int len1, int t_begin, int t_end, int tid, int lane, int rg,
			    int cg)
{
	unsigned char *sK = smem + T::K_OFF;
	uint16_t *sP = (uint16_t *)(smem + T::P_OFF);
	float *sMax = (float *)(smem + T::MAX_OFF);
	long long *const sPg0 = (long long *)(smem + T::PAGE_OFF), *const sPg1 = (long long *)(smem + T::PAGE1_OFF);
	int *const sSl0 = (int *)(smem + T::SLOT_OFF), *const sSl1 = (int *)(smem + T::SLOT1_OFF);
	unsigned char *sRaw = smem + T::RAW_OFF;

	if (t_begin >= t_end)
		return;
	if (tid < T::BN)
		sparse_entry_store(p, t_begin < tiles0 ? 0 : 1,
				   sparse_tile_index<T::BN>(p, row, tiles0, len0, len1, t_begin, tid), sPg0, sSl0, tid);
	vs_syncthreads();
	sparse_raw_issue<FMT, T>(p, t_begin < tiles0 ? 0 : 1, sRaw, sPg0, sSl0, tid);
	sparse_cp_commit();
	for (int t = t_begin; t < t_end; t++) {
		const bool odd = ((t - t_begin) & 1) != 0;
		long long *const pg_cur = odd ? sPg1 : sPg0, *const pg_nxt = odd ? sPg0 : sPg1;
		int *const sl_nxt = odd ? sSl0 : sSl1;
		const bool more = t + 1 < t_end;
		const int c_next = t + 1 < tiles0 ? 0 : 1;
		int32_t idx_next = -1;

		if (more && tid < T::BN) /* a. */
			idx_next = sparse_tile_index<T::BN>(p, row, tiles0, len0, len1, t + 1, tid);
		sparse_cp_wait_all(); /* b. */
		vs_syncthreads();
		if (more && tid < T::BN) /* c. */
			sparse_entry_store(p, c_next, idx_next, pg_nxt, sl_nxt, tid);
		sparse_raw_decode<FMT, T>(sRaw, sK, pg_cur, p.fnuz, tid);
		vs_syncthreads(); /* d. */
		if (more) { /* e. */
			sparse_raw_issue<FMT, T>(p, c_next, sRaw, pg_nxt, sl_nxt, tid);
			sparse_cp_commit();
		}
		/* f. */
		sparse_tile<T, D>(st, nullptr, sQ, (const uint16_t *)sK, sP, sMax, pg_cur, p.scale_log2, lane, rg, cg);
	}
}
#endif /* VS_PLATFORM_NVIDIA */

/* The sink factor of head h for a row of natural-log lse (finite: some entry was valid). */
VS_DEV float sink_factor(const SparseParams &p, int h, float lse)
{
	return p.attn_sink ? 1.f / (1.f + vs_exp2f((p.attn_sink[h] - lse) * VS_LOG2E)) : 1.f;
}

template <int BN, int BH, int NW, int FMT, int ST>
__global__ void __launch_bounds__(NW * VS_WARP) mla_sparse_warp(SparseParams p)
{
	typedef SparseTraits<BN, BH, NW, ST> T;
	constexpr int D = FMT == MLA_SPARSE_MODEL1 ? MLA_MODEL1_D_QK : MLA_D_QK;
#if defined(VS_PLATFORM_AMD)
	__shared__ __attribute__((aligned(16))) unsigned char smem[T::SMEM];
#else
	extern __shared__ __align__(16) unsigned char smem[];
#endif /* platform */
	const int tid = vs_tid(), lane = vs_lane(), warp = tid / VS_WARP;
	const int rg = warp % T::RG, cg = warp / T::RG;
	const int row = vs_bid_x(), h0 = vs_bid_y() * BH, split = vs_bid_z();
	const int b = row / p.s_q, i = row % p.s_q;
	const int len0 = cache_entries(p, 0, b), len1 = cache_entries(p, 1, b);
	const int tiles0 = (len0 + BN - 1) / BN, tiles = tiles0 + (len1 + BN - 1) / BN;
	const int per = (tiles + p.num_splits - 1) / p.num_splits;
	const int t_begin = min(split * per, tiles), t_end = min(t_begin + per, tiles);
	const int slot = p.num_splits == 1 ? -1 : b * p.num_splits + split;
	unsigned char *sK = smem + T::K_OFF;
	uint16_t *sP = (uint16_t *)(smem + T::P_OFF);
	float *sMax = (float *)(smem + T::MAX_OFF);
	float *sSum = (float *)(smem + T::SUM_OFF);
	long long *sPage = (long long *)(smem + T::PAGE_OFF);
	int *sSlot = (int *)(smem + T::SLOT_OFF);
	SparseState<T> st;

#pragma unroll
	for (int rs = 0; rs < MMA_C_ROWS; rs++) {
		st.m_run[rs] = -INFINITY;
		st.l_run[rs] = 0.f;
	}
#pragma unroll
	for (int nt = 0; nt < T::NT_O; nt++)
#pragma unroll
		for (int e = 0; e < MMA_C_ELEMS; e++)
			st.o[nt].x[e] = 0.f;

	/* Q of this block's heads: MFMA A fragments in registers (gfx942), a bf16 tile (NVIDIA). */
#if defined(VS_PLATFORM_AMD)
	mma_frag_a qf[D / 16];
	{
		const int h = h0 + rg * 16 + (lane & 15);
		const uint16_t *qrow = p.q + ((size_t)row * p.h_q + (h < p.h_q ? h : 0)) * D;

#pragma unroll
		for (int kk = 0; kk < D / 16; kk++) {
			mma_v4s v = { 0, 0, 0, 0 };

			if (h < p.h_q)
				v = mma_ld8(qrow + kk * 16 + 4 * (lane >> 4));
			qf[kk].v = v;
		}
	}
	const uint16_t *sQ = nullptr;
#else
	const mma_frag_a *qf = nullptr;
	const uint16_t *sQ = (const uint16_t *)smem;

	if (t_begin < t_end)
		for (int c = tid; c < BH * (D / 8); c += T::THREADS) {
			const int r = c / (D / 8), ch = c % (D / 8), h = h0 + r;
			vs_u32x4 v = { 0u, 0u, 0u, 0u };

			if (h < p.h_q)
				v = *(const vs_u32x4 *)(p.q + ((size_t)row * p.h_q + h) * D + ch * 8);
			*(vs_u32x4 *)(smem + r * ROW + ch * 16) = v;
		}
#endif /* platform */

#if defined(VS_PLATFORM_NVIDIA)
	if constexpr (T::RAW_STAGE && FMT != MLA_SPARSE_BF16)
		sparse_pipeline<FMT, T, D>(p, st, sQ, smem, row, tiles0, len0, len1, t_begin, t_end, tid, lane, rg, cg);
	else
#endif /* VS_PLATFORM_NVIDIA */
	for (int t = t_begin; t < t_end; t++) {
		const int c = t < tiles0 ? 0 : 1;
		const int e0 = (c ? t - tiles0 : t) * BN;

		vs_syncthreads(); /* everyone is done with the previous tile (sK, sP, sPage) */
		if (tid < BN) {
			const int e = e0 + tid;
			long long pg = -1;
			int sl = 0;

			if (e < (c ? len1 : len0))
				pg = mla_sparse_row_page(p.indices[c][(size_t)row * p.topk[c] + e], p.page_size[c],
							 p.page_bytes[c], &sl);
			sPage[tid] = pg;
			sSlot[tid] = sl;
		}
		vs_syncthreads();
		sparse_gather<FMT, T, (ST >= 2)>(p, c, sK, sPage, sSlot, tid);
		vs_syncthreads();
		sparse_tile<T, D>(st, qf, sQ, (const uint16_t *)sK, sP, sMax, sPage, p.scale_log2, lane, rg, cg);
	}

	/* Finalize: full row sums, O / l (and the sink), lse of this split. */
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
			const int r = rg * 16 + mma_rowslot_row(lane, rs);
			float v = 0.f;

#pragma unroll
			for (int c = 0; c < T::CG; c++)
				v += sSum[c * BH + r];
			l[rs] = v;
		}
	}
	float inv[MMA_C_ROWS];

#pragma unroll
	for (int rs = 0; rs < MMA_C_ROWS; rs++) {
		const int h = h0 + rg * 16 + mma_rowslot_row(lane, rs);

		inv[rs] = 0.f;
		if (l[rs] != 0.f) {
			inv[rs] = 1.f / l[rs];
			if (slot < 0 && h < p.h_q) /* one split: the sink here, else in the combine */
				inv[rs] *= sink_factor(p, h, (st.m_run[rs] + vs_log2f(l[rs])) * VS_LN2);
		}
	}
#pragma unroll
	for (int nt = 0; nt < T::NT_O; nt++)
#pragma unroll
		for (int e = 0; e < MMA_C_ELEMS; e++) {
			const int h = h0 + rg * 16 + mma_c_row(lane, e);
			const int col = cg * T::NCW + nt * 16 + mma_c_col(lane, e);
			const float v = st.o[nt].x[e] * inv[mma_c_rowslot(e)];
			const size_t m = (size_t)i * p.h_q + h;

			if (h >= p.h_q)
				continue;
			if (slot < 0)
				p.out[((size_t)b * p.m_total + m) * D_V + col] = (uint16_t)(vs_pack_bf16x2(v, 0.f) & 0xffffu);
			else
				p.o_part[((size_t)slot * p.m_total + m) * D_V + col] = v;
		}
	if (cg == 0 && mma_row_leader(lane))
#pragma unroll
		for (int rs = 0; rs < MMA_C_ROWS; rs++) {
			const int h = h0 + rg * 16 + mma_rowslot_row(lane, rs);
			const float lv = l[rs];

			if (h >= p.h_q)
				continue;
			if (slot < 0)
				p.lse[((size_t)b * p.h_q + h) * p.s_q + i] =
					lv != 0.f ? (st.m_run[rs] + vs_log2f(lv)) * VS_LN2 : INFINITY;
			else
				p.lse_part[(size_t)slot * p.m_total + (size_t)i * p.h_q + h] =
					lv != 0.f ? st.m_run[rs] + vs_log2f(lv) : -INFINITY;
		}
}

/* ================================================================ combine */

constexpr int COMBINE_THREADS = 128;
constexpr int COMBINE_ROWS = COMBINE_THREADS / VS_WARP;

/*
 * One warp per (batch element b, row m = i * h_q + h): the splits' partial O merged by their LSE
 * (log2 domain; an empty split has -inf and is never read), the sink applied, bf16 out and the
 * natural-log lse written. No valid entry in any split: out 0, lse +inf.
 */
__global__ void __launch_bounds__(COMBINE_THREADS) mla_sparse_combine(SparseParams p)
{
	constexpr int V4 = D_V / (4 * VS_WARP); /* float4 groups per lane */
	const int lane = vs_lane(), warp = vs_tid() / VS_WARP;
	const int m = vs_bid_x() * COMBINE_ROWS + warp, b = vs_bid_y();
	const int ns = p.num_splits;

	if (m >= p.m_total)
		return;
	const float *lp = p.lse_part + (size_t)b * ns * p.m_total + m;
	float mx = -INFINITY, sum = 0.f, nan = 0.f;
	float acc[V4][4];

	for (int s = lane; s < ns; s += VS_WARP) {
		const float v = lp[(size_t)s * p.m_total];

		mx = vs_fmaxf(mx, v);
		nan = v != v ? 1.f : nan;
	}
	mx = vs_warp_max(mx);
	if (vs_warp_max(nan) != 0.f)
		mx = NAN; /* a split saw a NaN: NaN out and lse, as the reference would */
	if (mx != -INFINITY)
		for (int s = lane; s < ns; s += VS_WARP)
			sum += vs_exp2f(lp[(size_t)s * p.m_total] - mx);
	sum = vs_warp_sum(sum);
#pragma unroll
	for (int v = 0; v < V4; v++)
#pragma unroll
		for (int c = 0; c < 4; c++)
			acc[v][c] = 0.f;
	const int i = m / p.h_q, h = m % p.h_q;
	const float lse = mx == -INFINITY ? INFINITY : (mx + vs_log2f(sum)) * VS_LN2;

	if (mx != -INFINITY) {
		const float inv = sink_factor(p, h, lse) / sum;

		for (int s = 0; s < ns; s++) {
			const float w = vs_exp2f(lp[(size_t)s * p.m_total] - mx) * inv;
			const float *op = p.o_part + (((size_t)b * ns + s) * p.m_total + m) * D_V;

			if (w == 0.f)
				continue; /* empty split (or negligible): never read */
#pragma unroll
			for (int v = 0; v < V4; v++) {
				const vs_f32x4 x = *(const vs_f32x4 *)(op + 4 * lane + 4 * VS_WARP * v);

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
	if (lane == 0)
		p.lse[((size_t)b * p.h_q + h) * p.s_q + i] = lse;
}

/* ================================================================ host: dispatch */

typedef void (*SparseKernel)(SparseParams);

struct SparseInstance {
	int bn, bh, nw, st;
	SparseKernel kernel[3]; /* [MLA_SPARSE_BF16, _DS_MLA, _MODEL1] */
	int smem;
};

#define MLA_SPARSE_INSTANCE(bn, bh, nw, st)                                                       \
	{ bn, bh, nw, st,                                                                          \
	  { mla_sparse_warp<bn, bh, nw, MLA_SPARSE_BF16, st>, mla_sparse_warp<bn, bh, nw, MLA_SPARSE_DS_MLA, st>, \
	    mla_sparse_warp<bn, bh, nw, MLA_SPARSE_MODEL1, st> },                                   \
	  SparseTraits<bn, bh, nw, st>::SMEM },

const SparseInstance sparse_instances[] = {
#if defined(VS_PLATFORM_AMD)
	MLA_FLASH_GFX942_SPARSE_KERNELS(MLA_SPARSE_INSTANCE)
#else
	MLA_FLASH_SM90_SPARSE_KERNELS(MLA_SPARSE_INSTANCE)
#endif /* platform */
};

} /* namespace */

extern "C" int mla_hip_flash_sparse_launch(const struct mla_decode_args *a, const struct mla_decode_config *cfg)
{
	struct mla_flash_plan plan;
	const SparseInstance *inst = nullptr;
	SparseParams sp;
	int rc, fmt;

	if (!a || !cfg)
		return MLA_EINVAL;
	rc = mla_flash_plan_make(&plan, a, cfg);
	if (rc != MLA_OK)
		return rc;
	for (const SparseInstance &in : sparse_instances)
		if (in.bn == cfg->block_n && in.bh == cfg->block_h && in.nw == cfg->num_warps &&
		    in.st == cfg->num_stages)
			inst = &in;
	fmt = mla_sparse_fmt_of(a->kv_dtype);
	if (!inst || fmt < 0 || !plan.sparse)
		return MLA_EUNSUPPORTED; /* a config of the other arch's space */
	if (a->workspace_bytes < plan.workspace_bytes || (plan.workspace_bytes && !a->workspace))
		return MLA_EUNSUPPORTED;
	if (a->batch == 0)
		return MLA_OK;
	if (!a->q || !a->kv_cache || !a->indices || !a->out || !a->lse ||
	    (a->extra_topk > 0 && (!a->extra_kv_cache || !a->extra_indices)))
		return MLA_EINVAL;
	/* the caches are read 16 bytes at a time (cp.async and 128-bit loads) from 16-aligned pages */
	if (((uintptr_t)a->kv_cache | (a->extra_topk > 0 ? (uintptr_t)a->extra_kv_cache : 0)) & 15)
		return MLA_EUNSUPPORTED;

	sp.q = (const uint16_t *)a->q;
	sp.kv[0] = (const uint8_t *)a->kv_cache;
	sp.kv[1] = (const uint8_t *)a->extra_kv_cache;
	sp.indices[0] = a->indices;
	sp.indices[1] = a->extra_topk > 0 ? a->extra_indices : nullptr;
	sp.topk_length[0] = a->topk_length;
	sp.topk_length[1] = a->extra_topk > 0 ? a->extra_topk_length : nullptr;
	sp.page_bytes[0] = (long long)mla_kv_page_bytes(a->kv_dtype, a->page_size);
	sp.page_bytes[1] = a->extra_topk > 0 ? (long long)mla_kv_page_bytes(a->kv_dtype, a->extra_page_size) : 0;
	sp.page_size[0] = a->page_size;
	sp.page_size[1] = a->extra_topk > 0 ? a->extra_page_size : 1;
	sp.topk[0] = a->topk;
	sp.topk[1] = a->extra_topk;
	sp.attn_sink = a->attn_sink;
	sp.out = (uint16_t *)a->out;
	sp.lse = a->lse;
	sp.o_part = plan.workspace_bytes ? (float *)((char *)a->workspace + plan.o_part_offset) : nullptr;
	sp.lse_part = plan.workspace_bytes ? (float *)((char *)a->workspace + plan.lse_part_offset) : nullptr;
	sp.s_q = a->s_q;
	sp.h_q = a->h_q;
	sp.m_total = plan.m_total;
	sp.num_splits = plan.num_splits;
	sp.fnuz = mla_kv_is_fnuz(a->kv_dtype);
	sp.scale_log2 = a->softmax_scale * VS_LOG2E;

	const SparseKernel kernel = inst->kernel[fmt];
	size_t smem = (size_t)inst->smem;
	hipStream_t stream = (hipStream_t)a->stream;

#if defined(VS_PLATFORM_NVIDIA)
	/* Raise the dynamic shared-memory limit once per kernel (host-side attribute, not stream work). */
	static size_t smem_set[sizeof(sparse_instances) / sizeof(sparse_instances[0])][3];
	size_t *done = &smem_set[inst - sparse_instances][fmt];

	if (smem > 48 * 1024 && *done < smem) {
		HIP_CHECK_RET(hipFuncSetAttribute((const void *)kernel, hipFuncAttributeMaxDynamicSharedMemorySize,
						  (int)smem),
			      MLA_EDEVICE);
		*done = smem;
	}
#else
	smem = 0; /* gfx942: static LDS */
#endif /* platform */
	kernel<<<dim3((unsigned)(a->batch * a->s_q), plan.head_blocks, plan.num_splits), dim3(inst->nw * VS_WARP), smem,
		 stream>>>(sp);
	HIP_CHECK_RET(hipGetLastError(), MLA_EDEVICE);
	if (plan.num_splits > 1) {
		mla_sparse_combine<<<dim3((plan.m_total + COMBINE_ROWS - 1) / COMBINE_ROWS, a->batch),
				     dim3(COMBINE_THREADS), 0, stream>>>(sp);
		HIP_CHECK_RET(hipGetLastError(), MLA_EDEVICE);
	}
	return MLA_OK;
}
