/*
 * mma.h - matrix-core primitives of the HIP kernels, one interface per level:
 *
 * 1. Warp-level 16x16x16 tiles ("tile16", both platforms): C[16x16] += A[16x16] B[16x16], bf16
 *    inputs, fp32 accumulation. NVIDIA: two mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32
 *    (warp32), operands loaded with ldmatrix. gfx942: one v_mfma_f32_16x16x16_bf16
 *    (__builtin_amdgcn_mfma_f32_16x16x16bf16_1k, wave64), operands loaded with LDS reads.
 *    Fragment layouts (lane = lane in the warp; g = lane / 4, t = lane % 4 on NVIDIA):
 *      NVIDIA A  x[0]: (row g,   k 2t..2t+1)   x[1]: (row g+8, k 2t..)
 *                x[2]: (row g,   k 2t+8..)     x[3]: (row g+8, k 2t+8..)        (PTX ISA 9.7.13.5.8)
 *      NVIDIA B  x[0]: (k 2t..2t+1, n g)  x[1]: (k 2t+8.., n g)   x[2], x[3]: the same for n g+8
 *      NVIDIA C  x[e]: row g + 8*((e/2)%2), col 8*(e/4) + 2t + e%2              (e = 0..7)
 *      gfx942 A  4 bf16: row lane%16, k 4*(lane/16) + i                          (i = 0..3)
 *      gfx942 B  4 bf16: n lane%16, k 4*(lane/16) + i
 *      gfx942 C  x[e]: row 4*(lane/16) + e, col lane%16                          (e = 0..3)
 *    (AMD Instinct MI300 ISA, "Matrix fused multiply-add"; AMD matrix instruction calculator.)
 *    The kernels see only: mma_load_a / mma_load_b_nk / mma_load_b_kn, mma_tile16, and the
 *    accumulator geometry MMA_C_ELEMS, MMA_C_ROWS, mma_c_row/col/rowslot, mma_row_max/sum.
 *
 * 2. Warpgroup-level wgmma (NVIDIA sm_90a only, MLA_HAVE_WGMMA): m64n64k16 with A and B from
 *    shared memory, m64n256k16 with A from registers or shared memory and B MN-major. Shared
 *    operands use a canonical layout of PTX ISA 9.7.15.5.1.2: no swizzle (wgmma_desc: 8x8 bf16
 *    core matrices of 128 contiguous bytes; K-major: LBO = bytes between core matrices adjacent in
 *    K, SBO = adjacent in M/N; MN-major: LBO = adjacent in K, SBO = adjacent in M/N) or the
 *    128-byte swizzle (wgmma_desc_sw128: atoms of 8 rows x 128 bytes, 16-byte chunk c of row r
 *    stored at chunk c ^ (r % 8), atoms 1 KiB aligned; K-major: LBO unused (16), SBO = bytes
 *    between 8-row groups, a k16 step inside an atom advances the start by 32 bytes; MN-major:
 *    LBO = bytes between 64-element atoms along M/N, SBO = between 8-row groups along K).
 *    Accumulator layout of m64nN (warp w of the warpgroup, g, t as above):
 *      d[4j + e]: row 16w + g + 8*(e/2), col 8j + 2t + e%2
 *    Register A of m64nNk16: a[0] (row g, k 2t..), a[1] (row g+8), a[2] (row g, k 2t+8..),
 *    a[3] (row g+8, k 2t+8..): the accumulator of S for keys 16kk..16kk+15 converts in place.
 *
 * 3. fp8_e4m3_fnuz decode (both platforms): mma_fp8x4_to_bf16x4, exact (see mla_numeric.h);
 *    NVIDIA also mma_fp8x4_to_bf16x4_nonan (0x80 -> -0) with mma_fp8x4_nan_bits to find 0x80, and
 *    f16 decoders at 2^-7 of the value (mma_fp8x4_to_f16x4, mma_fp8_pair_to_f16x2) for the f16
 *    m16n8k16 (mma_m16n8k16_f16) of the warp kernel's fp8 path.
 *    To exact floats (the pipelined sparse kernel's decode, sparse_decode.h): mma_fnuz_x4_to_f32
 *    (both platforms) and, NVIDIA only, mma_e4m3fn_x4_to_f32 (cvt.rn.f16x2.e4m3x2, sm_89+).
 */
#ifndef MLA_HIP_MMA_H
#define MLA_HIP_MMA_H

#include "hip_compat.h"

#if defined(VS_PLATFORM_NVIDIA)
/* ========================================================================================= NVIDIA */

#define MMA_C_ELEMS 8
#define MMA_C_ROWS 2

struct mma_frag_a {
	uint32_t x[4];
};
struct mma_frag_b {
	uint32_t x[4];
};
struct mma_frag_c {
	float x[8];
};

VS_DEV int mma_c_row(int lane, int e) { return (lane >> 2) + 8 * ((e >> 1) & 1); }
VS_DEV int mma_c_col(int lane, int e) { return 8 * (e >> 2) + 2 * (lane & 3) + (e & 1); }
VS_DEV int mma_c_rowslot(int e) { return (e >> 1) & 1; }
VS_DEV int mma_rowslot_row(int lane, int rs) { return (lane >> 2) + 8 * rs; }
/* The lane that speaks for its rows (one per row group of lanes). */
VS_DEV bool mma_row_leader(int lane) { return (lane & 3) == 0; }
/* Reduce over the lanes that hold parts of the same rows (the 4 lanes of a quad). */
VS_DEV float mma_row_max(float v)
{
	v = vs_fmaxf(v, vs_shfl_xor(v, 1));
	return vs_fmaxf(v, vs_shfl_xor(v, 2));
}
VS_DEV float mma_row_sum(float v)
{
	v += vs_shfl_xor(v, 1);
	return v + vs_shfl_xor(v, 2);
}

VS_DEV uint32_t vs_smem_addr(const void *p) { return (uint32_t)__cvta_generic_to_shared(p); }

VS_DEV void ldsm_x4(uint32_t (&r)[4], const void *p)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		     : "r"(vs_smem_addr(p)));
}

VS_DEV void ldsm_x4_trans(uint32_t (&r)[4], const void *p)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		     : "r"(vs_smem_addr(p)));
}

VS_DEV void mma_m16n8k16(float *c, const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
	asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
		     "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
		     : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* A[r][k] = base[r * ld + k] (bf16, shared memory; rows 16-byte aligned). */
VS_DEV void mma_load_a(mma_frag_a &a, const uint16_t *base, int ld)
{
	int l = vs_lane();

	ldsm_x4(a.x, base + (l & 15) * ld + (l >> 4) * 8);
}

/* B[k][n] = base[n * ld + k]: rows are n (a K-cache tile for S = Q K^T). */
VS_DEV void mma_load_b_nk(mma_frag_b &b, const uint16_t *base, int ld)
{
	int l = vs_lane();

	ldsm_x4(b.x, base + ((l >> 4) * 8 + (l & 7)) * ld + ((l >> 3) & 1) * 8);
}

/* B[k][n] = base[k * ld + n]: rows are k (V rows for O = P V). */
VS_DEV void mma_load_b_kn(mma_frag_b &b, const uint16_t *base, int ld)
{
	int l = vs_lane();

	ldsm_x4_trans(b.x, base + (((l >> 3) & 1) * 8 + (l & 7)) * ld + (l >> 4) * 8);
}

VS_DEV void mma_tile16(mma_frag_c &c, const mma_frag_a &a, const mma_frag_b &b)
{
	mma_m16n8k16(&c.x[0], a.x, b.x[0], b.x[1]);
	mma_m16n8k16(&c.x[4], a.x, b.x[2], b.x[3]);
}

/* Two floats -> bf16x2 (round to nearest even; lo in the low half). */
VS_DEV uint32_t vs_pack_bf16x2(float lo, float hi)
{
	uint32_t r;

	asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
	return r;
}

/*
 * Two fp8 fnuz codes, each in the high byte of a half word (c << 8), to bf16x2, exactly: the 7
 * magnitude bits go to bf16 bits 4..10 (a bf16 of value code * 2^-119, subnormal for exponent 0,
 * as fnuz is), one bf16x2 multiply by 2^119 rescales, and 0x80 becomes NaN.
 */
VS_DEV uint32_t mma_fnuz_pair_to_bf16x2(uint32_t u)
{
	uint32_t bf = ((u >> 4) & 0x07F007F0u) | (u & 0x80008000u);
	uint32_t r;

	asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(bf), "r"(0x7B007B00u));
	return r | (__vcmpeq2(u, 0x80008000u) & 0x7FC07FC0u);
}

/* Four fp8 fnuz codes (byte i = element i) -> bf16 elements 0,1 in lo and 2,3 in hi. */
VS_DEV void mma_fp8x4_to_bf16x4(uint32_t w, uint32_t &lo, uint32_t &hi)
{
	lo = mma_fnuz_pair_to_bf16x2(__byte_perm(w, 0u, 0x1404u));
	hi = mma_fnuz_pair_to_bf16x2(__byte_perm(w, 0u, 0x3424u));
}

/* Four fnuz codes (byte i = element i) -> their exact floats (0x80: NaN), through the bf16 decode. */
VS_DEV void mma_fnuz_x4_to_f32(uint32_t w, float (&f)[4])
{
	uint32_t lo, hi;

	mma_fp8x4_to_bf16x4(w, lo, hi);
	f[0] = __uint_as_float(lo << 16);
	f[1] = __uint_as_float(lo & 0xFFFF0000u);
	f[2] = __uint_as_float(hi << 16);
	f[3] = __uint_as_float(hi & 0xFFFF0000u);
}

/*
 * Four e4m3fn codes (byte i = element i) -> their exact floats: cvt.rn.f16x2.e4m3x2 (PTX ISA, sm_89+;
 * the low byte to the low half) makes two f16 of two codes (every e4m3fn value is a f16; 0x7F and
 * 0xFF give NaN), cvt.f32.f16 widens them exactly.
 */
VS_DEV void mma_e4m3fn_x4_to_f32(uint32_t w, float (&f)[4])
{
	uint32_t h01, h23;

	asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h01) : "h"((unsigned short)(w & 0xFFFFu)));
	asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(h23) : "h"((unsigned short)(w >> 16)));
	asm("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %2;\n\tcvt.f32.f16 %0, l;\n\tcvt.f32.f16 %1, h;\n\t}"
	    : "=f"(f[0]), "=f"(f[1])
	    : "r"(h01));
	asm("{\n\t.reg .b16 l, h;\n\tmov.b32 {l, h}, %2;\n\tcvt.f32.f16 %0, l;\n\tcvt.f32.f16 %1, h;\n\t}"
	    : "=f"(f[2]), "=f"(f[3])
	    : "r"(h23));
}

/*
 * The same without the NaN code: exact for every code but 0x80, which gives -0. For callers that
 * find 0x80 separately (mma_fp8x4_nan_bits) and then decode again with mma_fp8x4_to_bf16x4.
 * Same bits as mma_fnuz_pair_to_bf16x2 in 4 operations per pair instead of 5: one byte permute
 * puts code c in the low byte of its half word and c's sign, replicated, in the high byte (prmt's
 * sign mode: selector nibble 8 + i); << 4 and one mask leave the sign at bit 15 and the 7
 * magnitude bits at 4..10 (the shift's carry into the upper half lands in bits 0..3, masked); one
 * bf16x2 multiply by 2^119 rescales. (H200, issue 17: part of the 2.18 -> 1.53 ms fp8 pass.)
 */
VS_DEV uint32_t mma_fnuz_signpair_to_bf16x2_nonan(uint32_t sp)
{
	uint32_t r;

	asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(r) : "r"((sp << 4) & 0x87F087F0u), "r"(0x7B007B00u));
	return r;
}

VS_DEV void mma_fp8x4_to_bf16x4_nonan(uint32_t w, uint32_t &lo, uint32_t &hi)
{
	uint32_t a, b;

	asm("prmt.b32 %0, %1, %2, 0x9180;" : "=r"(a) : "r"(w), "r"(0u)); /* sign(c1) c1 sign(c0) c0 */
	asm("prmt.b32 %0, %1, %2, 0xB3A2;" : "=r"(b) : "r"(w), "r"(0u)); /* sign(c3) c3 sign(c2) c2 */
	lo = mma_fnuz_signpair_to_bf16x2_nonan(a);
	hi = mma_fnuz_signpair_to_bf16x2_nonan(b);
}

/* Nonzero bits under 0x80808080 when some byte of w is 0x80 (the fnuz NaN); OR-accumulable. */
VS_DEV uint32_t mma_fp8x4_nan_bits(uint32_t w)
{
	uint32_t v = w ^ 0x80808080u;

	return (v - 0x01010101u) & ~v;
}

/*
 * fp16 operands of the warp kernel's fp8 path (issue 17): m16n8k16 with f16 A and B, f32
 * accumulation (PTX ISA 9.7.13.5.8, the same fragment layouts as bf16).
 */
VS_DEV void mma_m16n8k16_f16(float *c, const uint32_t (&a)[4], uint32_t b0, uint32_t b1)
{
	asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
	    "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
	    : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
	    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/* Two floats -> f16x2 (round to nearest even; lo in the low half). */
VS_DEV uint32_t vs_pack_f16x2(float lo, float hi)
{
	uint32_t r;

	asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
	return r;
}

/* prmt.b32 d, a, b, sel (selector nibble 8 + i: byte i's sign replicated). */
template <uint32_t SEL>
VS_DEV uint32_t vs_prmt(uint32_t a, uint32_t b)
{
	uint32_t r;

	asm("prmt.b32 %0, %1, %2, %3;" : "=r"(r) : "r"(a), "r"(b), "n"(SEL));
	return r;
}

/*
 * fp8 fnuz -> f16 at 2^-7 of the value, exactly, with no multiply: fnuz (bias 8) and f16 (bias 15)
 * share the exponent field, so the code's 7 magnitude bits at f16 bits 7..13 and its sign at bit 15
 * make a f16 worth 2^-7 times the code's value, subnormal codes included (2^-7 * 0.m * 2^-7 is a
 * f16 subnormal). The caller folds 2^7 into its scales. Input: a half word pair from prmt's sign
 * mode (code c in the low byte of its half, c's sign replicated in the high byte); << 7 puts the
 * sign copy at bit 15 and the magnitude at 7..13; the mask clears c's own sign bit (14) and what the
 * shift carried from the low half into bits 16..22. 0x80 gives -0 (EXACT = false) or a f16 NaN.
 */
template <bool EXACT>
VS_DEV uint32_t mma_fnuz_signpair_to_f16x2(uint32_t sp)
{
	const uint32_t h = (sp << 7) & 0xBF80BF80u;

	return EXACT ? h | (__vcmpeq2(h, 0x80008000u) & 0x7E007E00u) : h;
}

/* Four codes of one word (byte i = element i) -> f16 elements 0,1 in lo and 2,3 in hi (2^-7 scale). */
template <bool EXACT>
VS_DEV void mma_fp8x4_to_f16x4(uint32_t w, uint32_t &lo, uint32_t &hi)
{
	lo = mma_fnuz_signpair_to_f16x2<EXACT>(vs_prmt<0x9180>(w, 0u)); /* sign(c1) c1 sign(c0) c0 */
	hi = mma_fnuz_signpair_to_f16x2<EXACT>(vs_prmt<0xB3A2>(w, 0u)); /* sign(c3) c3 sign(c2) c2 */
}

/*
 * Byte i of a and byte i of b (two keys' codes of one dim) -> f16x2 (a's in the low half), the
 * transposition done by the same byte permute: selector bytes i, 8 + i, 4 + i, 12 + i.
 */
template <int I, bool EXACT>
VS_DEV uint32_t mma_fp8_pair_to_f16x2(uint32_t a, uint32_t b)
{
	constexpr uint32_t SEL = (uint32_t)I | (uint32_t)(8 + I) << 4 | (uint32_t)(4 + I) << 8 | (uint32_t)(12 + I) << 12;

	return mma_fnuz_signpair_to_f16x2<EXACT>(vs_prmt<SEL>(a, b));
}

#if defined(MLA_HAVE_WGMMA)
/* -------------------------------------------------------------- wgmma (sm_90a) */

/* No-swizzle shared-memory matrix descriptor (PTX ISA 9.7.15.5.1.2.2). */
VS_DEV uint64_t wgmma_desc(uint32_t saddr, uint32_t lbo, uint32_t sbo)
{
	return (uint64_t)((saddr & 0x3FFFFu) >> 4) | ((uint64_t)(lbo >> 4) << 16) |
	       ((uint64_t)(sbo >> 4) << 32);
}

/* 128-byte-swizzle descriptor (layout type 1); atoms of 8 rows x 128 bytes, 1 KiB aligned. */
VS_DEV uint64_t wgmma_desc_sw128(uint32_t saddr, uint32_t lbo, uint32_t sbo)
{
	return wgmma_desc(saddr, lbo, sbo) | (1ull << 62);
}

VS_DEV void wgmma_fence(void) { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
VS_DEV void wgmma_commit(void) { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
VS_DEV void wgmma_wait(void)
{
	asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
/* Make this thread's generic-proxy shared-memory writes visible to wgmma (async proxy). */
VS_DEV void fence_proxy_async(void) { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }

/* Pin accumulators after wgmma_wait so no use is scheduled before the wait completes. */
template <int N>
VS_DEV void wgmma_fence_operands(float (&d)[N])
{
#pragma unroll
	for (int i = 0; i < N; i++)
		asm volatile("" : "+f"(d[i])::"memory");
}

/*
 * The accumulator operands of the wgmma wrappers below: "%0, ..., %N-1" in the instruction text and
 * the matching "+f" constraints d[0] ... d[N-1] (N = 8, 16, 32, 128 floats per thread).
 */
#define WG_ACC_OPS8_AT(d, i)                                                                       \
	"+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
		"+f"(d[i + 6]), "+f"(d[i + 7])
#define WG_ACC_OPS32_AT(d, i)                                                                  \
	WG_ACC_OPS8_AT(d, i), WG_ACC_OPS8_AT(d, i + 8), WG_ACC_OPS8_AT(d, i + 16), WG_ACC_OPS8_AT(d, i + 24)
#define WG_ACC_OPS8(d) WG_ACC_OPS8_AT(d, 0)
#define WG_ACC_OPS16(d) WG_ACC_OPS8_AT(d, 0), WG_ACC_OPS8_AT(d, 8)
#define WG_ACC_OPS32(d) WG_ACC_OPS32_AT(d, 0)
#define WG_ACC_OPS128(d) WG_ACC_OPS32_AT(d, 0), WG_ACC_OPS32_AT(d, 32), WG_ACC_OPS32_AT(d, 64), WG_ACC_OPS32_AT(d, 96)
#define WG_ACC_REGS32                                                                              \
	"%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, "    \
	"%20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define WG_ACC_REGS128                                                                             \
	WG_ACC_REGS32 ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, "   \
		      "%47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, "   \
		      "%63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, "   \
		      "%79, %80, %81, %82, %83, %84, %85, %86, %87, %88, %89, %90, %91, %92, %93, %94, "   \
		      "%95, %96, %97, %98, %99, %100, %101, %102, %103, %104, %105, %106, %107, %108, "    \
		      "%109, %110, %111, %112, %113, %114, %115, %116, %117, %118, %119, %120, %121, "     \
		      "%122, %123, %124, %125, %126, %127"

VS_DEV void wgmma_m64n64k16_ss(float (&d)[32], uint64_t desc_a, uint64_t desc_b, int accumulate)
{
	asm volatile("{\n"
		     ".reg .pred p;\n"
		     "setp.ne.b32 p, %34, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 {"
		     WG_ACC_REGS32
		     "}, %32, %33, p, 1, 1, 0, 0;\n"
		     "}\n"
		     : WG_ACC_OPS32(d)
		     : "l"(desc_a), "l"(desc_b), "r"(accumulate)
		     : "memory");
}

/* m64n16k16 and m64n32k16, A and B from shared memory; TA = 1: A is MN-major (transposed), B K-major. */
template <int TA>
VS_DEV void wgmma_m64n16k16_ss(float (&d)[8], uint64_t desc_a, uint64_t desc_b, int accumulate)
{
	asm volatile("{\n"
		     ".reg .pred p;\n"
		     "setp.ne.b32 p, %10, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 "
		     "{%0, %1, %2, %3, %4, %5, %6, %7}, %8, %9, p, 1, 1, %11, 0;\n"
		     "}\n"
		     : WG_ACC_OPS8(d)
		     : "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(TA)
		     : "memory");
}

template <int TA>
VS_DEV void wgmma_m64n32k16_ss(float (&d)[16], uint64_t desc_a, uint64_t desc_b, int accumulate)
{
	asm volatile("{\n"
		     ".reg .pred p;\n"
		     "setp.ne.b32 p, %18, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
		     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15}, %16, %17, p, 1, 1, %19, 0;\n"
		     "}\n"
		     : WG_ACC_OPS16(d)
		     : "l"(desc_a), "l"(desc_b), "r"(accumulate), "n"(TA)
		     : "memory");
}

VS_DEV void wgmma_m64n256k16_rs(float (&d)[128], const uint32_t (&a)[4], uint64_t desc_b,
				 int accumulate)
{
	asm volatile("{\n"
		     ".reg .pred p;\n"
		     "setp.ne.b32 p, %133, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
		     WG_ACC_REGS128
		     "}, {%128, %129, %130, %131}, %132, p, 1, 1, 1;\n"
		     "}\n"
		     : WG_ACC_OPS128(d)
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate)
		     : "memory");
}

VS_DEV void wgmma_m64n256k16_ss(float (&d)[128], uint64_t desc_a, uint64_t desc_b, int accumulate)
{
	asm volatile("{\n"
		     ".reg .pred p;\n"
		     "setp.ne.b32 p, %130, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n256k16.f32.bf16.bf16 {"
		     WG_ACC_REGS128
		     "}, %128, %129, p, 1, 1, 0, 1;\n"
		     "}\n"
		     : WG_ACC_OPS128(d)
		     : "l"(desc_a), "l"(desc_b), "r"(accumulate)
		     : "memory");
}
#endif /* MLA_HAVE_WGMMA */

#elif defined(VS_PLATFORM_AMD)
/* ========================================================================================= gfx942 */

#define MMA_C_ELEMS 4
#define MMA_C_ROWS 4

typedef short mma_v4s __attribute__((ext_vector_type(4)));
typedef float mma_v4f __attribute__((ext_vector_type(4)));

struct mma_frag_a {
	mma_v4s v;
};
struct mma_frag_b {
	mma_v4s v;
};
struct mma_frag_c {
	mma_v4f x;
};

VS_DEV int mma_c_row(int lane, int e) { return 4 * (lane >> 4) + e; }
VS_DEV int mma_c_col(int lane, int e) { return (void)e, lane & 15; }
VS_DEV int mma_c_rowslot(int e) { return e; }
VS_DEV int mma_rowslot_row(int lane, int rs) { return 4 * (lane >> 4) + rs; }
VS_DEV bool mma_row_leader(int lane) { return (lane & 15) == 0; }
/* Lanes sharing rows: the 16 lanes of one lane / 16 group. */
VS_DEV float mma_row_max(float v)
{
	v = vs_fmaxf(v, vs_shfl_xor(v, 1));
	v = vs_fmaxf(v, vs_shfl_xor(v, 2));
	v = vs_fmaxf(v, vs_shfl_xor(v, 4));
	return vs_fmaxf(v, vs_shfl_xor(v, 8));
}
VS_DEV float mma_row_sum(float v)
{
	v += vs_shfl_xor(v, 1);
	v += vs_shfl_xor(v, 2);
	v += vs_shfl_xor(v, 4);
	return v + vs_shfl_xor(v, 8);
}

VS_DEV mma_v4s mma_ld8(const uint16_t *p) { return *(const mma_v4s *)p; }

/* A[r][k] = base[r * ld + k] (bf16, LDS or global; 8-byte aligned). */
VS_DEV void mma_load_a(mma_frag_a &a, const uint16_t *base, int ld)
{
	int l = vs_lane();

	a.v = mma_ld8(base + (l & 15) * ld + 4 * (l >> 4));
}

/* B[k][n] = base[n * ld + k]. */
VS_DEV void mma_load_b_nk(mma_frag_b &b, const uint16_t *base, int ld)
{
	int l = vs_lane();

	b.v = mma_ld8(base + (l & 15) * ld + 4 * (l >> 4));
}

/* B[k][n] = base[k * ld + n]. */
VS_DEV void mma_load_b_kn(mma_frag_b &b, const uint16_t *base, int ld)
{
	int l = vs_lane();
	const uint16_t *p = base + 4 * (l >> 4) * ld + (l & 15);

	b.v = mma_v4s{ (short)p[0], (short)p[ld], (short)p[2 * ld], (short)p[3 * ld] };
}

VS_DEV void mma_tile16(mma_frag_c &c, const mma_frag_a &a, const mma_frag_b &b)
{
	c.x = __builtin_amdgcn_mfma_f32_16x16x16bf16_1k(a.v, b.v, c.x, 0, 0, 0);
}

/* Float -> bf16 bits, round to nearest even (gfx942 has no packed bf16 convert). */
VS_DEV uint32_t vs_bf16_rne(float f)
{
	uint32_t u = __builtin_bit_cast(uint32_t, f);

	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (u >> 16) | 0x40u;
	return (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

VS_DEV uint32_t vs_pack_bf16x2(float lo, float hi) { return vs_bf16_rne(lo) | (vs_bf16_rne(hi) << 16); }

/*
 * Four fp8 fnuz codes -> four bf16, exactly: gfx942's v_cvt_pk_f32_fp8 decodes the FNUZ format
 * (bias 8, NaN 0x80); the results have at most 4 significant bits, so their top half is the bf16.
 */
VS_DEV void mma_fp8x4_to_bf16x4(uint32_t w, uint32_t &lo, uint32_t &hi)
{
	auto f01 = __builtin_amdgcn_cvt_pk_f32_fp8((int)w, false);
	auto f23 = __builtin_amdgcn_cvt_pk_f32_fp8((int)w, true);

	lo = (__builtin_bit_cast(uint32_t, f01[0]) >> 16) |
	     (__builtin_bit_cast(uint32_t, f01[1]) & 0xFFFF0000u);
	hi = (__builtin_bit_cast(uint32_t, f23[0]) >> 16) |
	     (__builtin_bit_cast(uint32_t, f23[1]) & 0xFFFF0000u);
}

/* Four fp8 fnuz codes -> their exact floats (v_cvt_pk_f32_fp8; 0x80: NaN). */
VS_DEV void mma_fnuz_x4_to_f32(uint32_t w, float (&f)[4])
{
	auto f01 = __builtin_amdgcn_cvt_pk_f32_fp8((int)w, false);
	auto f23 = __builtin_amdgcn_cvt_pk_f32_fp8((int)w, true);

	f[0] = f01[0];
	f[1] = f01[1];
	f[2] = f23[0];
	f[3] = f23[1];
}

/* B[k][n] = decode(base[n * ld + k]), fp8 codes in LDS (ld in bytes, 4-byte aligned rows). */
VS_DEV void mma_load_b_nk_fp8(mma_frag_b &b, const uint8_t *base, int ld)
{
	int l = vs_lane();
	uint32_t w = *(const uint32_t *)(base + (l & 15) * ld + 4 * (l >> 4));
	uint32_t lo, hi;

	mma_fp8x4_to_bf16x4(w, lo, hi);
	b.v = mma_v4s{ (short)(lo & 0xffffu), (short)(lo >> 16), (short)(hi & 0xffffu), (short)(hi >> 16) };
}

/* B[k][n] = decode(base[k * ld + n]). */
VS_DEV void mma_load_b_kn_fp8(mma_frag_b &b, const uint8_t *base, int ld)
{
	int l = vs_lane();
	const uint8_t *p = base + 4 * (l >> 4) * ld + (l & 15);
	uint32_t w = (uint32_t)p[0] | ((uint32_t)p[ld] << 8) | ((uint32_t)p[2 * ld] << 16) |
		     ((uint32_t)p[3 * ld] << 24);
	uint32_t lo, hi;

	mma_fp8x4_to_bf16x4(w, lo, hi);
	b.v = mma_v4s{ (short)(lo & 0xffffu), (short)(lo >> 16), (short)(hi & 0xffffu), (short)(hi >> 16) };
}

#endif /* platform */

#endif /* MLA_HIP_MMA_H */
