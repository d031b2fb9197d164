/*
 * fp8_mma_proto.cu - a standalone prototype of an MLA decode whose tensor cores read the fp8 KV codes
 * themselves (issue 17). Not a kernel of the harness: it decides, in one device call, whether the
 * design reaches the issue's target (fp8_e4m3_fnuz KV at h_q 16, b 128, 32K keys in at most 0.6x
 * the bf16 time) and passes the harness's parity rule, special codes included, before it is built
 * into kernels/hip/flash.hip (which needs, beyond it: paged KV, splits, s_q > 1 and causal rows).
 *
 *   nvcc -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a tools/gpu/fp8_mma_proto.cu -o fp8_mma_proto
 *   ./fp8_mma_proto check            # parity against a float64 reference on the GPU; exit 1 on a miss
 *   ./fp8_mma_proto bench [B] [SK]   # ms per call and TB/s, default b 128, 32K keys
 *   (exit 77 without an sm_90 GPU; tools/gpu/fp8_mma_proto.sh runs both with the accumulation probe
 *   and hip.flash in one device call)
 *
 * Numerics (tools/fp8_mma_precision.py models them; BENCHMARKS.md, 2026-12-04):
 *   - an fp8_e4m3_fnuz code is worth exactly half its e4m3fn reading except 0x80 (NaN in fnuz, -0
 *     in e4m3fn) and 0x7F / 0xFF (+-240 in fnuz, NaN in e4m3fn): the codes go to wgmma unchanged as
 *     e4m3fn and the 1/2 joins kv_scale.
 *   - +-240: its key's score comes out NaN. A tile with one (any thread, bar.red.or over the
 *     warpgroup) redoes S^T and runs its P V on the fix-up path: K and V through registers, the code
 *     made 0x7E / 0xFE (+-224) plus a second operand of +-32 as e4m3fn where it was +-240 (fix240),
 *     two wgmma where the fast path has one. Exact, and slower: the harness's softmax sets put +-240
 *     in a third of all codes, so there every tile takes it (bench, set 2).
 *   - 0x80 (a visible fnuz NaN; cache rows past a sequence are never read: zero-filled): a zero-byte
 *     test on the V fragments (dims 0..511, in registers anyway) and on the 64 rope bytes of each
 *     key; the sequence's rows all come out NaN, as the oracle's (every row sees every key here).
 *   - Q: per head, scaled by a power of two to a largest |q| in [128, 256), split into two e4m3fn
 *     parts qh = e4m3(q'), ql = e4m3(q' - qh), the two the 32 columns of one m64n32k32 step.
 *   - S^T accumulated in groups of PROMOTE k32 steps, each group in a fresh accumulator added in
 *     fp32 (PROMOTE 1 is the study's "per step split"; 18 one chain per part): the fp8 instruction's
 *     accumulation width, which tools/gpu/fp8_acc_probe.cu measures, decides which one parity needs.
 *     The fix-up path promotes every step.
 *   - P (fp32, at most 1) times 2^8 split the same way; P V into a fresh accumulator per tile,
 *     added to the running O in fp32; l summed from the fp32 P.
 * Layout: one block of two warpgroups per sequence (h_q 16, one head block, s_q 1, no split; the
 * cache paged by 64 keys, pages permuted as the harness's tasks); warpgroup w takes the
 * 64-key tiles t = w (mod 2) with its own online softmax, two stages of its own, and its own P^T, so
 * the two never wait for each other until their states merge at the end (a split in two inside the
 * block). S^T = K Q^T as in mla_flash_wgmma_t (keys on M, K from shared memory in the 128-byte
 * swizzle, B = [qh | ql] K-major); O^T = V^T P^T with V^T from registers: ldmatrix .trans of 8x8
 * b16 blocks and two byte permutes give wgmma's register layout for A (CUTLASS ALayout_64x32) once
 * the keys inside a k32 step are permuted (slot 4q + b + 16v <- key 16v + 8(b/2) + 2q + b%2, P^T
 * written in that order) and the dims inside a warp's 16 rows (row g <- dim 2g, row g + 8 <- 2g + 1);
 * tools/fp8_mma_layout.py checks that plumbing on the CPU.
 * PTX ISA: wgmma (9.7.15), ldmatrix (9.7.14.5.15), prmt (9.7.9.7), bar.red (9.7.13.1).
 */
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <vector>

/* the project's wgmma, ldmatrix and prmt wrappers (kernels/hip/mma.h) and its fnuz and bf16 decoders */
#define MLA_HAVE_WGMMA 1
#include "../../kernels/hip/mma.h"
#include "../../kernels/mla_numeric.h"

#define CK(x)                                                                                      \
	do {                                                                                       \
		cudaError_t e_ = (x);                                                              \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "fp8_mma_proto: %s: %s (line %d)\n", #x, cudaGetErrorString(e_), __LINE__); \
			exit(2);                                                                   \
		}                                                                                  \
	} while (0)

constexpr int D_QK = 576, D_V = 512, BN = 64, NH = 16;
constexpr int PAGE = 64; /* page size: one page a tile (the harness's page 64; 1 and 16 are not covered) */
static_assert(PAGE == BN, "one page a tile");
constexpr int ATOM = 64 * 128;               /* one 128-byte column of a 64-key tile */
constexpr int STAGE = 5 * ATOM;              /* 576 bytes a key: 4.5 atoms, the last half used */
constexpr int Q_ATOM = 32 * 128;             /* [qh | ql]: 32 rows of 128 bytes */
constexpr int Q_OFF = 0;                     /* 5 atoms */
constexpr int ST_OFF = Q_OFF + 5 * Q_ATOM;   /* stage s of warpgroup w at ST_OFF + (2w + s) STAGE */
constexpr int P_OFF = ST_OFF + 4 * STAGE;    /* P^T [qh | ql columns][64 key slots], one per warpgroup */
constexpr int MAX_OFF = P_OFF + 2 * 4096;    /* [2 wg][4 warps][16 heads] float */
constexpr int QINV_OFF = MAX_OFF + 512;      /* [16] float: 1 / the head's power-of-two scale */
constexpr int ML_OFF = QINV_OFF + 64;        /* [2 wg][32] float: m of the 16 heads (the l: MAX_OFF) */
constexpr int SMEM = ML_OFF + 256;
constexpr int SMEM_ALLOC = SMEM + 1024;      /* the base rounded up to 1 KiB */
static_assert(ST_OFF % 1024 == 0 && P_OFF % 1024 == 0, "128-byte-swizzle atoms are 1 KiB aligned");

struct Params {
	const uint8_t *kv;           /* paged cache [pages][64][576] fp8_e4m3_fnuz codes */
	const int *block_table;      /* [b][max_pages]: sequence b's page j (pages permuted, as the harness) */
	int max_pages;
	const __nv_bfloat16 *q;      /* [b][16][576] */
	const int *seqlens;          /* [b] */
	__nv_bfloat16 *out;          /* [b][16][512] */
	float *lse;                  /* [b][16], natural log; -inf for an empty sequence */
	int *fixed;                  /* [b]: tiles that took the fix-up path (+-240 codes) */
	int sk;                      /* keys allotted per sequence: max_pages x 64 */
	float kv_scale;              /* value = fnuz(code) * kv_scale */
	float scale_log2;            /* softmax scale * log2(e) */
};

/* ------------------------------------------------------------------------------------------- device */
/* cp.async and named barriers (flash.hip has its own, in no header), and a register pin for uint32 fragments. */
__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, bool valid)
{
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0)
		     : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void cp_async_wait()
{
	asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}
__device__ __forceinline__ void bar_sync(int id, int n) { asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory"); }
__device__ __forceinline__ void pin4(uint32_t (&a)[4])
{
	asm volatile("" : "+r"(a[0]), "+r"(a[1]), "+r"(a[2]), "+r"(a[3])::"memory");
}

/* m64n32k32 e4m3 x e4m3 -> f32, A and B from shared memory, both K-major. */
__device__ __forceinline__ void wgmma_f8_ss(float (&d)[16], uint64_t da, uint64_t db, int acc)
{
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 "
		     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1;\n}\n"
		     : WG_ACC_OPS16(d)
		     : "l"(da), "l"(db), "r"(acc)
		     : "memory");
}

/* m64n32k32 e4m3 x e4m3 -> f32, A from registers (ALayout_64x32), B from shared memory (K-major). */
__device__ __forceinline__ void wgmma_f8_rs(float (&d)[16], const uint32_t (&a)[4], uint64_t db, int acc)
{
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3 "
		     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, "
		     "{%16, %17, %18, %19}, %20, p, 1, 1;\n}\n"
		     : WG_ACC_OPS16(d)
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(acc)
		     : "memory");
}

/* Nonzero when a byte of w is 0x80 (fnuz NaN): the zero-byte test on w ^ 0x80808080. */
__device__ __forceinline__ uint32_t has_0x80(uint32_t w)
{
	const uint32_t y = w ^ 0x80808080u;

	return (y - 0x01010101u) & ~y & 0x80808080u;
}

__device__ __forceinline__ uint8_t e4m3(float x)
{
	return (uint8_t)__nv_cvt_float_to_fp8(x, __NV_SATFINITE, __NV_E4M3);
}
__device__ __forceinline__ float e4m3_value(uint8_t c)
{
	__half_raw h = __nv_cvt_fp8_to_halfraw((__nv_fp8_storage_t)c, __NV_E4M3);

	return __half2float(__half(h));
}

/* Cache row of key j of sequence b. */
__host__ __device__ __forceinline__ size_t kv_row(const int *block_table, int max_pages, int b, int j)
{
	return (size_t)block_table[(size_t)b * max_pages + j / PAGE] * PAGE + j % PAGE;
}

/*
 * The 64-key tile t of sequence b (its page t) into a stage: 2304 16-byte chunks, 18 per thread of a
 * warpgroup; rows past the sequence zero-filled, never read.
 */
__device__ __forceinline__ void load_tile(const Params &p, uint32_t stage, int b, int t, int seqlen, int x)
{
	const uint8_t *page = p.kv + (size_t)p.block_table[(size_t)b * p.max_pages + t] * PAGE * D_QK;

#pragma unroll 6
	for (int i = 0; i < 18; i++) {
		const int c = x + 128 * i, row = c / 36, ch = c % 36;
		const bool valid = t * BN + row < seqlen;
		const uint8_t *src = page + (valid ? row : 0) * D_QK + ch * 16;

		cp_async16(stage + (ch >> 3) * ATOM + row * 128 + (((ch & 7) ^ (row & 7)) << 4), src, valid);
	}
}

/* Slot of key x (0..31) inside a k32 step of P^T (the V^T fragment order, above). */
__device__ __forceinline__ int key_slot(int x)
{
	return 16 * (x >> 4) + 4 * ((x & 7) >> 1) + 2 * ((x >> 3) & 1) + (x & 1);
}

/*
 * The fix-up of a tile holding +-240 (0x7F / 0xFF, NaN as e4m3fn), on registers: x - 1 in those
 * bytes (0x7E / 0xFE: +-224 in fnuz, +-448 as e4m3fn) plus a second operand holding +-32 as e4m3fn
 * (0x60 / 0xE0: the missing +-16 in fnuz) there and 0 elsewhere, so that A x + R x is exact.
 */
__device__ __forceinline__ void fix240(uint32_t x, uint32_t &k, uint32_t &r)
{
	const uint32_t m = ((x & 0x7F7F7F7Fu) + 0x01010101u) & 0x80808080u; /* 0x80 in the +-240 bytes */
	const uint32_t one = m >> 7;

	k = x - one;                   /* no borrow: those bytes are 0x7F or 0xFF */
	r = (one * 0x60u) | (x & m);   /* 0x60, with the code's sign */
}

/* bar.red.or over the n threads of named barrier id: true when any of them passes v true. */
__device__ __forceinline__ bool bar_any(int id, int n, bool v)
{
	uint32_t r;

	asm volatile("{\n.reg .pred pi, po;\nsetp.ne.u32 pi, %1, 0;\nbar.red.or.pred po, %2, %3, pi;\n"
		     "selp.u32 %0, 1, 0, po;\n}\n"
		     : "=r"(r)
		     : "r"((uint32_t)v), "r"(id), "r"(n)
		     : "memory");
	return r != 0;
}

/* S^T of the tile in stage st, fast path: K straight from shared memory, NG groups of PROMOTE steps. */
template <int PROMOTE>
__device__ __forceinline__ void s_fast(float (&s)[16], uint32_t st, uint32_t qs)
{
	constexpr int NG = 18 / PROMOTE;
	float acc[2][16];

#pragma unroll
	for (int i = 0; i < 16; i++)
		s[i] = 0.f;
#pragma unroll
	for (int gi = 0; gi < NG; gi++) {
		wgmma_fence();
#pragma unroll
		for (int j = 0; j < PROMOTE; j++) {
			const int kk = gi * PROMOTE + j;

			wgmma_f8_ss(acc[gi & 1], wgmma_desc_sw128(st + (kk >> 2) * ATOM + (kk & 3) * 32, 16, 1024),
				    wgmma_desc_sw128(qs + (kk >> 2) * Q_ATOM + (kk & 3) * 32, 16, 1024), j > 0);
		}
		wgmma_commit();
		if (gi > 0) {
			wgmma_wait<1>();
			wgmma_fence_operands(acc[(gi - 1) & 1]);
#pragma unroll
			for (int i = 0; i < 16; i++)
				s[i] += acc[(gi - 1) & 1][i];
		}
	}
	wgmma_wait<0>();
	wgmma_fence_operands(acc[(NG - 1) & 1]);
#pragma unroll
	for (int i = 0; i < 16; i++)
		s[i] += acc[(NG - 1) & 1][i];
}

/*
 * S^T of the tile, fix-up path: K through registers (ldmatrix: warp w's 16 keys x 32 dims of a k32
 * step are wgmma's A fragment as loaded), fixed by fix240, A x + R x per step into a fresh
 * accumulator (the per-step promotion, whatever PROMOTE), one step at a time (two in flight spill).
 */
__device__ __forceinline__ void s_fix(float (&s)[16], const unsigned char *stg, uint32_t qs, int w, int lane)
{
	float acc[16];

#pragma unroll
	for (int i = 0; i < 16; i++)
		s[i] = 0.f;
#pragma unroll 2
	for (int kk = 0; kk < 18; kk++) {
		const int i = lane >> 3, key = 16 * w + 8 * (i & 1) + (lane & 7);
		const int ch = 2 * kk + (i >> 1); /* 16-byte chunk of the dims */
		uint32_t r[4], kf[4], rf[4];

		ldsm_x4(r, stg + (ch >> 3) * ATOM + key * 128 + (((ch & 7) ^ (key & 7)) << 4));
#pragma unroll
		for (int e = 0; e < 4; e++)
			fix240(r[e], kf[e], rf[e]);
		wgmma_fence();
		const uint64_t dq = wgmma_desc_sw128(qs + (kk >> 2) * Q_ATOM + (kk & 3) * 32, 16, 1024);

		wgmma_f8_rs(acc, kf, dq, 0);
		wgmma_f8_rs(acc, rf, dq, 1);
		wgmma_commit();
		wgmma_wait<0>();
		wgmma_fence_operands(acc);
		pin4(kf);
		pin4(rf);
#pragma unroll
		for (int j = 0; j < 16; j++)
			s[j] += acc[j];
	}
}

/*
 * O^T += V^T P^T over the tile: 8 blocks of 64 dims; warp w's rows of block a are dims
 * 64a + 16w + 2g + r (r the fragment row half). Two blocks in flight, each added to the running O
 * (times alpha) once its wgmma is done (FIX: one block in flight). FIX: the fragments through
 * fix240, A x + R x. Returns the
 * 0x80 test of the fragments (a visible fnuz NaN in dims 0..511).
 */
template <bool FIX>
__device__ __forceinline__ uint32_t pv(float (&o)[8][8], const float (&alpha)[4], const unsigned char *stg,
				       uint32_t pT, int w, int lane)
{
	/* the fast path keeps two blocks in flight; the fix-up path, with twice the fragments, one */
	constexpr int NB = FIX ? 1 : 2;
	uint32_t fr[NB][2][4], rr[FIX ? 2 : 1][4], nan80 = 0;
	float ob[NB][16];

#pragma unroll
	for (int a = 0; a < 8; a++) {
		const int ch = 4 * (a & 1) + w, bi = a % NB; /* 16-byte chunk of the dims in atom a / 2 */
#pragma unroll
		for (int kk = 0; kk < 2; kk++) {
			uint32_t r[4];
			const int key = 32 * kk + 8 * (lane >> 3) + (lane & 7);

			ldsm_x4_trans(r, stg + (a >> 1) * ATOM + key * 128 + ((ch ^ (key & 7)) << 4));
			nan80 |= has_0x80(r[0]) | has_0x80(r[1]) | has_0x80(r[2]) | has_0x80(r[3]);
			fr[bi][kk][0] = vs_prmt<0x6420>(r[0], r[1]);
			fr[bi][kk][1] = vs_prmt<0x7531>(r[0], r[1]);
			fr[bi][kk][2] = vs_prmt<0x6420>(r[2], r[3]);
			fr[bi][kk][3] = vs_prmt<0x7531>(r[2], r[3]);
			if constexpr (FIX)
#pragma unroll
				for (int e = 0; e < 4; e++)
					fix240(fr[bi][kk][e], fr[bi][kk][e], rr[kk][e]);
		}
		wgmma_fence();
#pragma unroll
		for (int kk = 0; kk < 2; kk++) {
			wgmma_f8_rs(ob[bi], fr[bi][kk], wgmma_desc_sw128(pT + kk * 32, 16, 1024), kk > 0);
			if constexpr (FIX)
				wgmma_f8_rs(ob[bi], rr[kk], wgmma_desc_sw128(pT + kk * 32, 16, 1024), 1);
		}
		wgmma_commit();
		/* the block whose wgmma is now done: a (one in flight) or a - 1 (two) */
		const int ad = a - (NB - 1);

		if (ad < 0)
			continue;
		if constexpr (FIX) {
			wgmma_wait<0>();
			pin4(rr[0]);
			pin4(rr[1]);
		} else {
			wgmma_wait<1>();
		}
		wgmma_fence_operands(ob[ad % NB]);
		pin4(fr[ad % NB][0]);
		pin4(fr[ad % NB][1]);
#pragma unroll
		for (int i = 0; i < 8; i++) {
			const int j = i >> 2, e = i & 3, q = 2 * j + (e & 1);

			o[ad][i] = fmaf(o[ad][i], alpha[q], ob[ad % NB][4 * j + e] + ob[ad % NB][4 * j + e + 8]);
		}
	}
	if constexpr (!FIX) {
		wgmma_wait<0>();
		wgmma_fence_operands(ob[1]);
#pragma unroll
		for (int i = 0; i < 8; i++) {
			const int j = i >> 2, e = i & 3, q = 2 * j + (e & 1);

			o[7][i] = fmaf(o[7][i], alpha[q], ob[1][4 * j + e] + ob[1][4 * j + e + 8]);
		}
	}
	return nan80;
}

/* Scores (log2 domain, masked) of this thread's 8 (key, head) pairs and their column maxima. */
__device__ __forceinline__ bool scores(float (&sc)[8], float (&cm)[4], const float (&s)[16], const float (&qf)[4],
				       int key0, int seqlen)
{
	bool nan = false;

#pragma unroll
	for (int q = 0; q < 4; q++)
		cm[q] = -INFINITY;
#pragma unroll
	for (int j = 0; j < 2; j++)
#pragma unroll
		for (int e = 0; e < 4; e++) {
			const int q = 2 * j + (e & 1), i = 4 * j + e;
			float v = (s[i] + s[i + 8]) * qf[q]; /* qh column + ql column */

			nan = nan || v != v; /* a +-240 code (NaN as e4m3fn) in this key */
			if (key0 + 8 * (e >> 1) >= seqlen)
				v = -INFINITY;
			sc[i] = v;
			cm[q] = fmaxf(cm[q], v);
		}
#pragma unroll
	for (int q = 0; q < 4; q++) {
		cm[q] = fmaxf(cm[q], __shfl_xor_sync(0xffffffffu, cm[q], 4));
		cm[q] = fmaxf(cm[q], __shfl_xor_sync(0xffffffffu, cm[q], 8));
		cm[q] = fmaxf(cm[q], __shfl_xor_sync(0xffffffffu, cm[q], 16));
	}
	return nan;
}

template <int PROMOTE>
__global__ void __launch_bounds__(256, 1) proto_fp8mma(Params p)
{
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
	extern __shared__ unsigned char smem_raw[];
	unsigned char *smem = smem_raw + ((1024 - (vs_smem_addr(smem_raw) & 1023)) & 1023);
	const uint32_t sb = vs_smem_addr(smem);
	const int tid = threadIdx.x, wg = tid >> 7, x = tid & 127, w = x >> 5, lane = tid & 31;
	const int g = lane >> 2, t4 = lane & 3;
	const int b = blockIdx.x, seqlen = p.seqlens[b];
	const int ntiles = (seqlen + BN - 1) / BN;
	float *sMax = (float *)(smem + MAX_OFF) + wg * 64;
	float *sQinv = (float *)(smem + QINV_OFF);
	float *sML = (float *)(smem + ML_OFF);
	const uint32_t st0 = sb + ST_OFF + (2 * wg) * STAGE;
	const uint32_t pT = sb + P_OFF + wg * 4096;
	unsigned char *pTg = smem + P_OFF + wg * 4096;
	static_assert(18 % PROMOTE == 0, "PROMOTE divides the 18 k32 steps of 576 dims");

	/* this warpgroup's first two tiles (t = wg, wg + 2) in flight while Q is split */
	for (int s = 0; s < 2; s++) {
		const int t = wg + 2 * s;

		if (t < ntiles)
			load_tile(p, st0 + s * STAGE, b, t, seqlen, x);
		cp_async_commit();
	}

	/* Q: warp v (8 warps) splits heads 2v, 2v + 1 into [qh | ql] rows h and 16 + h */
	{
		const int v = tid >> 5;

		for (int hh = 0; hh < 2; hh++) {
			const int h = 2 * v + hh;
			const __nv_bfloat16 *qr = p.q + ((size_t)b * NH + h) * D_QK;
			float mx = 0.f;

			for (int d = lane; d < D_QK; d += 32)
				mx = fmaxf(mx, fabsf(__bfloat162float(qr[d])));
#pragma unroll
			for (int o = 16; o > 0; o >>= 1)
				mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
			/* 2^k with mx 2^k in [128, 256); 1 for a zero row */
			const int k = mx > 0.f ? 7 - ilogbf(mx) : 0;
			const float sc = ldexpf(1.f, k);

			if (lane == 0)
				sQinv[h] = ldexpf(1.f, -k);
			for (int d = lane; d < D_QK; d += 32) {
				const float q1 = __bfloat162float(qr[d]) * sc;
				const uint8_t hi = e4m3(q1), lo = e4m3(q1 - e4m3_value(hi));
				const int at = d >> 7, ch = (d & 127) >> 4;

				smem[Q_OFF + at * Q_ATOM + h * 128 + ((ch ^ (h & 7)) << 4) + (d & 15)] = hi;
				smem[Q_OFF + at * Q_ATOM + (16 + h) * 128 + ((ch ^ ((16 + h) & 7)) << 4) + (d & 15)] = lo;
			}
		}
	}
	fence_proxy_async();
	__syncthreads();

	/* this thread's heads: column q = 2j + e1 -> head 8j + 2 t4 + e1 (j, e1 in 0..1) */
	float qf[4], m_run[4], l_run[4], o[8][8];
	uint32_t nan80 = 0;
	int fixed = 0;

#pragma unroll
	for (int q = 0; q < 4; q++) {
		const int h = 8 * (q >> 1) + 2 * t4 + (q & 1);

		qf[q] = sQinv[h] * 0.5f * p.kv_scale * p.scale_log2;
		m_run[q] = -INFINITY;
		l_run[q] = 0.f;
	}
#pragma unroll
	for (int a = 0; a < 8; a++)
#pragma unroll
		for (int i = 0; i < 8; i++)
			o[a][i] = 0.f;

	for (int u = 0, t = wg; t < ntiles; u++, t += 2) {
		const uint32_t st = st0 + (u & 1) * STAGE;
		const unsigned char *stg = smem + (st - sb); /* the same stage, for ldmatrix and plain loads */
		const int key0 = t * BN + 16 * w + g;
		float s[16], sc[8], cm[4];

		cp_async_wait<1>();
		fence_proxy_async();
		bar_sync(1 + wg, 128); /* tile t in the stage for the whole warpgroup */

		s_fast<PROMOTE>(s, st, sb + Q_OFF);
		bool nan = scores(sc, cm, s, qf, key0, seqlen);

		if (g == 0)
#pragma unroll
			for (int q = 0; q < 4; q++)
				sMax[w * 16 + 8 * (q >> 1) + 2 * t4 + (q & 1)] = cm[q];
		/* the rope bytes (dims 512..575) of the 64 keys: 0x80 test, 32 bytes a thread */
		{
			const int row = x >> 1, half = x & 1;
			const unsigned char *rp = stg + 4 * ATOM + row * 128;
			uint4 r0 = *(const uint4 *)(rp + (((2 * half) ^ (row & 7)) << 4));
			uint4 r1 = *(const uint4 *)(rp + (((2 * half + 1) ^ (row & 7)) << 4));

			nan80 |= has_0x80(r0.x) | has_0x80(r0.y) | has_0x80(r0.z) | has_0x80(r0.w) | has_0x80(r1.x) |
				 has_0x80(r1.y) | has_0x80(r1.z) | has_0x80(r1.w);
		}
		/* column maxima complete; and does any key of the tile hold +-240? (uniform over the warpgroup) */
		const bool fix = bar_any(1 + wg, 128, nan);

		if (fix) { /* nobody has read the maxima yet: overwrite them, one more barrier */
			s_fix(s, stg, sb + Q_OFF, w, lane);
			scores(sc, cm, s, qf, key0, seqlen);
			if (g == 0)
#pragma unroll
				for (int q = 0; q < 4; q++)
					sMax[w * 16 + 8 * (q >> 1) + 2 * t4 + (q & 1)] = cm[q];
			bar_sync(1 + wg, 128);
			fixed++;
		}
		float alpha[4], mu[4];

#pragma unroll
		for (int q = 0; q < 4; q++) {
			const int h = 8 * (q >> 1) + 2 * t4 + (q & 1);
			const float tm = fmaxf(fmaxf(sMax[h], sMax[16 + h]), fmaxf(sMax[32 + h], sMax[48 + h]));
			const float m_new = fmaxf(m_run[q], tm);

			mu[q] = m_new == -INFINITY ? 0.f : m_new;
			alpha[q] = exp2f(m_run[q] - mu[q]);
			m_run[q] = m_new;
			l_run[q] *= alpha[q];
		}
		/* P^T [qh | ql][slot]: P' = 2^8 P split in two e4m3fn parts */
#pragma unroll
		for (int j = 0; j < 2; j++)
#pragma unroll
			for (int e = 0; e < 4; e++) {
				const int q = 2 * j + (e & 1), i = 4 * j + e;
				const int h = 8 * j + 2 * t4 + (e & 1);
				const int key = 16 * w + g + 8 * (e >> 1);
				const int slot = 32 * (key >> 5) + key_slot(key & 31);
				const float pe = exp2f(sc[i] - mu[q]);
				const float p1 = pe * 256.f;
				const uint8_t hi = e4m3(p1), lo = e4m3(p1 - e4m3_value(hi));

				l_run[q] += pe;
				pTg[(h >> 3) * 1024 + (h & 7) * 128 + (((slot >> 4) ^ (h & 7)) << 4) + (slot & 15)] = hi;
				pTg[((16 + h) >> 3) * 1024 + (h & 7) * 128 + (((slot >> 4) ^ (h & 7)) << 4) + (slot & 15)] = lo;
			}
		fence_proxy_async();
		bar_sync(1 + wg, 128); /* P^T complete */

		nan80 |= fix ? pv<true>(o, alpha, stg, pT, w, lane) : pv<false>(o, alpha, stg, pT, w, lane);

		/* the stage is free: tile t + 4 into it */
		if (t + 4 < ntiles)
			load_tile(p, st, b, t + 4, seqlen, x);
		cp_async_commit();
	}
	cp_async_wait<0>();

	/* l per head over the 8 lanes g and the 4 warps; m is the same in every thread of the warpgroup */
	const bool poison = __syncthreads_or(nan80 != 0); /* the stages are free for the merge */
	float *sL = (float *)(smem + MAX_OFF);       /* [2 wg][4 warps][16] partial l */
	float *sO = (float *)(smem + ST_OFF);        /* [16 heads][512] warpgroup 1's O (unnormalized) */

	if (x == 0 && fixed)
		atomicAdd(p.fixed + b, fixed);
#pragma unroll
	for (int q = 0; q < 4; q++) {
		float l = l_run[q];

		l += __shfl_xor_sync(0xffffffffu, l, 4);
		l += __shfl_xor_sync(0xffffffffu, l, 8);
		l += __shfl_xor_sync(0xffffffffu, l, 16);
		if (g == 0) {
			const int h = 8 * (q >> 1) + 2 * t4 + (q & 1);

			sL[wg * 64 + w * 16 + h] = l;
			if (w == 0)
				sML[wg * 32 + h] = m_run[q];
		}
	}
	if (wg == 1)
#pragma unroll
		for (int a = 0; a < 8; a++)
#pragma unroll
			for (int i = 0; i < 8; i++) {
				const int j = i >> 2, e = i & 3;
				const int h = 8 * j + 2 * t4 + (e & 1);
				const int dim = 64 * a + 16 * w + 2 * g + (e >> 1);

				sO[h * D_V + dim] = o[a][i];
			}
	__syncthreads();
	if (wg == 0) {
		float f0[4], f1[4];

#pragma unroll
		for (int q = 0; q < 4; q++) {
			const int h = 8 * (q >> 1) + 2 * t4 + (q & 1);
			const float m0 = sML[h], m1 = sML[32 + h];
			const float l0 = sL[h] + sL[16 + h] + sL[32 + h] + sL[48 + h];
			const float l1 = sL[64 + h] + sL[80 + h] + sL[96 + h] + sL[112 + h];
			const float mm = fmaxf(m0, m1);
			const float mz = mm == -INFINITY ? 0.f : mm;

			f0[q] = exp2f(m0 - mz);
			f1[q] = exp2f(m1 - mz);
			const float L = l0 * f0[q] + l1 * f1[q];
			const float inv = L > 0.f ? 1.f / L : 0.f;

			/* O' = 2^8 O / 2 (P' and the fnuz half); a visible 0x80 makes every row NaN (every row
			 * sees every key of the sequence here: s_q 1, no causal mask) */
			f0[q] *= poison ? NAN : inv * 0.5f * p.kv_scale / 256.f;
			f1[q] *= poison ? NAN : inv * 0.5f * p.kv_scale / 256.f;
			if (w == 0 && g == 0)
				p.lse[(size_t)b * NH + h] =
					poison ? NAN : L > 0.f ? (mz + log2f(L)) * 0.69314718055994531f : -INFINITY;
		}
#pragma unroll
		for (int a = 0; a < 8; a++)
#pragma unroll
			for (int i = 0; i < 8; i++) {
				const int j = i >> 2, e = i & 3, q = 2 * j + (e & 1);
				const int h = 8 * j + 2 * t4 + (e & 1);
				const int dim = 64 * a + 16 * w + 2 * g + (e >> 1);

				p.out[((size_t)b * NH + h) * D_V + dim] =
					__float2bfloat16(o[a][i] * f0[q] + sO[h * D_V + dim] * f1[q]);
			}
	}
#endif
}

/* --------------------------------------------------------------------------------- data, reference */
__device__ __forceinline__ uint32_t mix32(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdull;
	v ^= v >> 33;
	v *= 0xc4ceb9fe1a85ec53ull;
	v ^= v >> 33;
	return (uint32_t)v;
}
__device__ __forceinline__ float gauss(uint64_t seed, uint64_t i)
{
	const float u1 = ((mix32(seed * 0x9E3779B97F4A7C15ull + 2 * i) >> 8) + 1) * (1.f / 16777217.f);
	const float u2 = (mix32(seed * 0x9E3779B97F4A7C15ull + 2 * i + 1) >> 8) * (1.f / 16777216.f);

	return sqrtf(-2.f * logf(u1)) * cospif(2.f * u2);
}

/* fp8_e4m3_fnuz code of v (round to nearest even; |v| >= 232 -> +-240), exact through e4m3fn(2v). */
__device__ uint8_t fnuz_code(float v)
{
	const float a = fabsf(v);

	if (a >= 232.f)
		return v < 0.f ? 0xFF : 0x7F;
	const uint8_t c = e4m3(2.f * v);

	return c == 0x80 ? 0 : c; /* -0 is 0x80, fnuz NaN: zero is 0x00 */
}

/*
 * set 0: K = N(0,1)/10 clamped to [-1, 1] at kv_scale 1/240, Q N(0,1): the harness's N(0,1)/10 sets
 *        (and, by inject below, its forced extremes);
 * set 1: K = N(0,1) with 240 at 4.83 standard deviations and codes clamped to +-224, so that no tile
 *        needs the fix-up (tools/fp8_mma_precision.py's "scaled" data), Q 8 N(0,1): sharper softmax;
 * set 2: K = N(0,1) clamped to [-1, 1]: the harness's softmax sets, a third of the codes +-240.
 */
__global__ void gen_kv(uint8_t *kv, size_t n, int set, uint64_t seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		const float z = gauss(seed, i);
		const float v = set == 1 ? fminf(fmaxf(z * (240.f / 4.83f), -224.f), 224.f)
					 : fminf(fmaxf(set == 0 ? z * 0.1f : z, -1.f), 1.f) * 240.f;

		kv[i] = fnuz_code(v);
	}
}
__global__ void gen_q(__nv_bfloat16 *q, size_t n, float sd, uint64_t seed)
{
	for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		q[i] = __float2bfloat16(sd * gauss(seed, i));
}

/*
 * Sets 0 and 2: in every non-empty sequence, the codes gpu_parity's fp8 extremes case writes (+-240,
 * the smallest subnormals, the last subnormals and first normals, zero) at dims 7e of key 0, and
 * 0xFF at the last key (the harness's forced +1 and -1). NAN80: a visible 0x80 in sequence 1 (key
 * 150, or its last; dim 5, a V dim) and sequence 2 (key 0, dim 570, a rope dim), as gpu_parity's
 * nan80 cases; every row of those sequences must come out NaN.
 */
__global__ void inject(uint8_t *kv, const int *bt, int max_pages, const int *seqlens, int b, bool nan80)
{
	static const uint8_t ext[] = { 0x7F, 0xFF, 0x01, 0x81, 0x07, 0x87, 0x08, 0x88, 0x00 };

	for (int i = 0; i < b; i++) {
		const int n = seqlens[i];

		if (n == 0)
			continue;
		for (int e = 0; e < 9; e++)
			kv[kv_row(bt, max_pages, i, 0) * D_QK + 7 * e] = ext[e];
		kv[kv_row(bt, max_pages, i, n - 1) * D_QK + 500] = 0xFF;
		if (nan80 && i == 1)
			kv[kv_row(bt, max_pages, i, 150 < n ? 150 : n - 1) * D_QK + 5] = 0x80;
		if (nan80 && i == 2)
			kv[kv_row(bt, max_pages, i, 0) * D_QK + 570] = 0x80;
	}
}

/* float64 reference, one block per (head, sequence); scores in a [b][16][sk] scratch. */
__global__ void reference(Params p, double *scr, double *ref_out, double *ref_lse)
{
	const int h = blockIdx.x, b = blockIdx.y, n = p.seqlens[b];
	const __nv_bfloat16 *qr = p.q + ((size_t)b * NH + h) * D_QK;
	double *sc = scr + ((size_t)b * NH + h) * p.sk;
	__shared__ double red[256];
	const double scale = (double)p.scale_log2 / 1.4426950408889634;

	for (int j = threadIdx.x; j < n; j += blockDim.x) {
		const uint8_t *kr = p.kv + kv_row(p.block_table, p.max_pages, b, j) * D_QK;
		double acc = 0.0;

		for (int d = 0; d < D_QK; d++)
			acc += (double)__bfloat162float(qr[d]) * mla_fp8_e4m3_fnuz_to_float(kr[d]) * p.kv_scale;
		sc[j] = acc * scale;
	}
	__syncthreads();
	double mx = -INFINITY;
	for (int j = threadIdx.x; j < n; j += blockDim.x)
		mx = fmax(mx, sc[j]);
	red[threadIdx.x] = mx;
	__syncthreads();
	for (int s = 128; s > 0; s >>= 1) {
		if (threadIdx.x < s)
			red[threadIdx.x] = fmax(red[threadIdx.x], red[threadIdx.x + s]);
		__syncthreads();
	}
	mx = red[0];
	__syncthreads();
	double l = 0.0;
	for (int j = threadIdx.x; j < n; j += blockDim.x)
		l += exp(sc[j] - mx);
	red[threadIdx.x] = l;
	__syncthreads();
	for (int s = 128; s > 0; s >>= 1) {
		if (threadIdx.x < s)
			red[threadIdx.x] += red[threadIdx.x + s];
		__syncthreads();
	}
	l = red[0];
	if (threadIdx.x == 0)
		ref_lse[(size_t)b * NH + h] = n > 0 ? mx + log(l) : -INFINITY;
	for (int d = threadIdx.x; d < D_V; d += blockDim.x) {
		double acc = 0.0;

		for (int j = 0; j < n; j++)
			acc += exp(sc[j] - mx) * mla_fp8_e4m3_fnuz_to_float(p.kv[kv_row(p.block_table, p.max_pages, b, j) * D_QK + d]) *
			       p.kv_scale;
		ref_out[((size_t)b * NH + h) * D_V + d] = n > 0 ? acc / l : 0.0;
	}
}

/* ------------------------------------------------------------------------------------------- host */
typedef void (*ProtoKernel)(Params);

struct Variant {
	const char *name;
	ProtoKernel k;
};
static const Variant VARIANTS[] = {
	{ "promote1", proto_fp8mma<1> },   /* per-step-split */
	{ "promote3", proto_fp8mma<3> },
	{ "promote18", proto_fp8mma<18> }, /* one chain per part */
};

static const float SOFTMAX_SCALE = 0.07216878f * 1.3687f; /* 192^-0.5 (0.1 ln 40 + 1)^2, as the plans */

struct Problem {
	int b, sk, set;
	std::vector<int> seqlens;
	uint8_t *kv = nullptr;
	__nv_bfloat16 *q = nullptr, *out = nullptr;
	float *lse = nullptr;
	int *seq = nullptr, *fixed = nullptr, *bt = nullptr;
	Params p{};

	Problem(int b_, int sk_, const std::vector<int> &lens, int set_, bool nan80, uint64_t seed)
		: b(b_), sk(sk_), set(set_), seqlens(lens)
	{
		const size_t nkv = (size_t)b * sk * D_QK, nq = (size_t)b * NH * D_QK;
		const int max_pages = sk / PAGE, pages = b * max_pages;
		std::vector<int> perm(pages);
		uint64_t r = seed * 0x9E3779B97F4A7C15ull + 1;

		for (int i = 0; i < pages; i++)
			perm[i] = i;
		for (int i = pages - 1; i > 0; i--) { /* Fisher-Yates */
			r = r * 6364136223846793005ull + 1442695040888963407ull;
			const int j = (int)((r >> 33) % (uint64_t)(i + 1));
			const int tmp = perm[i];

			perm[i] = perm[j];
			perm[j] = tmp;
		}
		CK(cudaMalloc(&bt, (size_t)pages * 4));
		CK(cudaMemcpy(bt, perm.data(), (size_t)pages * 4, cudaMemcpyHostToDevice));
		CK(cudaMalloc(&kv, nkv));
		CK(cudaMalloc(&q, nq * 2));
		CK(cudaMalloc(&out, (size_t)b * NH * D_V * 2));
		CK(cudaMalloc(&lse, (size_t)b * NH * 4));
		CK(cudaMalloc(&seq, b * 4));
		CK(cudaMalloc(&fixed, b * 4));
		CK(cudaMemcpy(seq, seqlens.data(), b * 4, cudaMemcpyHostToDevice));
		gen_kv<<<1024, 256>>>(kv, nkv, set, seed);
		gen_q<<<256, 256>>>(q, nq, set == 1 ? 8.f : 1.f, seed + 1);
		if (set != 1)
			inject<<<1, 1>>>(kv, bt, max_pages, seq, b, nan80);
		CK(cudaGetLastError());
		p.kv = kv;
		p.block_table = bt;
		p.max_pages = max_pages;
		p.q = q;
		p.seqlens = seq;
		p.out = out;
		p.lse = lse;
		p.fixed = fixed;
		p.sk = sk;
		p.kv_scale = 1.f / 240.f;
		p.scale_log2 = SOFTMAX_SCALE * 1.4426950408889634f;
	}
	~Problem()
	{
		cudaFree(kv);
		cudaFree(q);
		cudaFree(out);
		cudaFree(lse);
		cudaFree(seq);
		cudaFree(fixed);
		cudaFree(bt);
	}
	void run(const Variant &v, bool clear = true)
	{
		if (clear)
			CK(cudaMemset(fixed, 0, b * 4));
		v.k<<<b, 256, SMEM_ALLOC>>>(p);
		CK(cudaGetLastError());
	}
};

/*
 * The harness's parity rule (harness/parity.c, harness/plan.c, harness/measure.c), and the NaN
 * rule of gpu_parity: where the reference is NaN the output must be NaN, elsewhere finite and within
 * tolerance. Also checks the fix-up counts: none in set 1, every tile in set 2 (a third of its codes
 * are +-240), at least one in a non-empty sequence of set 0 (its forced extremes). Returns the
 * failures.
 */
struct Reference {
	std::vector<double> out, lse; /* [b][16][512], [b][16] */
};

/* The float64 reference of a problem's inputs (once per input set: every variant is compared with it). */
static Reference reference_of(const Problem &P)
{
	const size_t no = (size_t)P.b * NH * D_V, nl = (size_t)P.b * NH;
	double *scr, *rout, *rlse;
	Reference r;

	r.out.resize(no);
	r.lse.resize(nl);
	CK(cudaMalloc(&scr, (size_t)P.b * NH * P.sk * 8));
	CK(cudaMalloc(&rout, no * 8));
	CK(cudaMalloc(&rlse, nl * 8));
	reference<<<dim3(NH, P.b), 256>>>(P.p, scr, rout, rlse);
	CK(cudaDeviceSynchronize());
	CK(cudaMemcpy(r.out.data(), rout, no * 8, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(r.lse.data(), rlse, nl * 8, cudaMemcpyDeviceToHost));
	cudaFree(scr);
	cudaFree(rout);
	cudaFree(rlse);
	return r;
}

static int compare(Problem &P, const Reference &R, const char *what)
{
	const size_t no = (size_t)P.b * NH * D_V, nl = (size_t)P.b * NH;
	const std::vector<double> &ho = R.out, &hl = R.lse;
	std::vector<uint16_t> go(no);
	std::vector<float> gl(nl);
	std::vector<int> fx(P.b);
	int fails = 0;

	CK(cudaMemcpy(go.data(), P.out, no * 2, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(gl.data(), P.lse, nl * 4, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(fx.data(), P.fixed, P.b * 4, cudaMemcpyDeviceToHost));
	/*
	 * out atol scaled by the set's value scale, as harness/measure.c does (x10 in a softmax set): the
	 * cache's standard deviation over the N(0,1)/10 sets' 0.1, 0.207 in set 1, rounded down to 2.
	 */
	const double atol_scale = P.set == 2 ? 10.0 : P.set == 1 ? 2.0 : 1.0;

	for (int b = 0; b < P.b; b++) {
		double worst_o = 0, worst_l = 0, dot = 0, nr = 0, ng = 0;
		int bad_o = 0, bad_l = 0, nans = 0;
		const int tiles = (P.seqlens[b] + BN - 1) / BN;

		for (int h = 0; h < NH; h++) {
			const double e = hl[(size_t)b * NH + h], a = gl[(size_t)b * NH + h];

			if (isnan(e)) {
				bad_l += !isnan(a);
				nans++;
			} else {
				const double err = isinf(e) && isinf(a) && (e < 0) == (a < 0) ? 0.0 : fabs(a - e);

				worst_l = fmax(worst_l, isnan(err) ? INFINITY : err / (1e-5 + 8.01 / 65536 * fabs(e)));
				bad_l += !(err <= 1e-5 || err <= 8.01 / 65536 * fabs(e));
			}
			for (int d = 0; d < D_V; d++) {
				const size_t i = ((size_t)b * NH + h) * D_V + d;
				const double re = ho[i], ga = mla_bf16_to_float(go[i]);
				const double eo = fabs(ga - re), atol = 8e-4 * atol_scale, rtol = 2.01 / 128;

				if (isnan(re)) {
					bad_o += !isnan(ga);
					continue;
				}
				worst_o = fmax(worst_o, isnan(eo) ? INFINITY : eo / (atol + rtol * fabs(re)));
				bad_o += !(eo <= atol || eo <= rtol * fabs(re));
				dot += ga * re;
				nr += re * re;
				ng += ga * ga;
			}
		}
		const double cosd = nr > 0 && ng > 0 ? 1.0 - dot / sqrt(nr * ng) : (nr == ng ? 0.0 : 1.0);
		const bool fix_ok = P.set == 1 ? fx[b] == 0 : P.set == 2 ? fx[b] == tiles : (tiles == 0) == (fx[b] == 0);
		const bool ok = bad_o == 0 && bad_l == 0 && cosd <= 5e-6 && fix_ok;

		fails += !ok;
		printf("%-18s seq %-2d len %-5d %s  out bad %d margin %.3f cos_diff %.2e  lse bad %d margin %.3f"
		       "  NaN rows %d  fix-up tiles %d of %d%s\n",
		       what, b, P.seqlens[b], ok ? "PASS" : "FAIL", bad_o, worst_o, cosd, bad_l, worst_l, nans, fx[b], tiles,
		       fix_ok ? "" : " (unexpected)");
	}
	return fails;
}

static int check(void)
{
	const std::vector<int> lens = { 1, 2, 63, 64, 65, 129, 1000, 4096, 0, 8192 };
	int fails = 0;

	for (int set = 0; set < 3; set++) {
		Problem P((int)lens.size(), 8192, lens, set, set == 0, 2026 + set);
		const Reference R = reference_of(P);

		for (const Variant &v : VARIANTS) {
			char what[64];

			P.run(v);
			CK(cudaDeviceSynchronize());
			snprintf(what, sizeof(what), "%s set%d", v.name, set);
			fails += compare(P, R, what);
		}
	}
	printf("check: %d failure(s)\n", fails);
	return fails ? 1 : 0;
}

static int bench(int b, int sk)
{
	const std::vector<int> lens(b, sk);
	cudaEvent_t e0, e1;
	const double bytes = (double)b * sk * D_QK + (double)b * NH * (D_QK + D_V) * 2; /* KV codes, q, out */

	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	printf("bench: b %d, %d keys, h_q 16, fp8_e4m3_fnuz KV: %.3f GB\n", b, sk, bytes * 1e-9);
	for (int set = 0; set < 3; set += 2) {
		Problem P(b, sk, lens, set, false, 99);

		for (const Variant &v : VARIANTS) {
			float ms = 0.f, best = 1e30f;
			long long fx = 0;
			std::vector<int> f(b);

			P.run(v);
			CK(cudaMemcpy(f.data(), P.fixed, b * 4, cudaMemcpyDeviceToHost));
			for (int x : f)
				fx += x;
			for (int i = 0; i < 2; i++)
				P.run(v, false);
			CK(cudaDeviceSynchronize());
			for (int rep = 0; rep < 5; rep++) {
				const int iters = 10;

				CK(cudaEventRecord(e0));
				for (int i = 0; i < iters; i++)
					P.run(v, false);
				CK(cudaEventRecord(e1));
				CK(cudaEventSynchronize(e1));
				CK(cudaEventElapsedTime(&ms, e0, e1));
				best = fminf(best, ms / iters);
			}
			printf("set%d %-10s %.4f ms  %.2f TB/s  (best of 5 x 10 calls; fix-up tiles %lld of %lld)\n", set,
			       v.name, best, bytes / (best * 1e-3) * 1e-12, fx, (long long)b * ((sk + BN - 1) / BN));
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	int dev = 0, n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		fprintf(stderr, "fp8_mma_proto: no GPU\n");
		return 77;
	}
	cudaDeviceProp prop;
	CK(cudaGetDeviceProperties(&prop, dev));
	if (prop.major != 9) {
		fprintf(stderr, "fp8_mma_proto: needs sm_90 (wgmma), found sm_%d%d\n", prop.major, prop.minor);
		return 77;
	}
	for (const Variant &v : VARIANTS)
		CK(cudaFuncSetAttribute(v.k, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_ALLOC));
	if (argc >= 2 && strcmp(argv[1], "check") == 0)
		return check();
	if (argc >= 2 && strcmp(argv[1], "bench") == 0)
		return bench(argc > 2 ? atoi(argv[2]) : 128, argc > 3 ? atoi(argv[3]) : 32768);
	fprintf(stderr, "usage: fp8_mma_proto check | bench [b] [keys]\n");
	return 2;
}
