/*
 * fp8_acc_probe.cu - how many bits the H200's matrix instructions keep when they add products to an
 * accumulator (issue 17). tools/fp8_mma_precision.py models an fp8-tensor-core MLA decode with that
 * width F as a parameter (BENCHMARKS.md, 2026-12-04); this measures it, in seconds:
 *
 *   nvcc -std=c++17 -O2 -gencode=arch=compute_90a,code=sm_90a tools/gpu/fp8_acc_probe.cu -o fp8_acc_probe
 *   ./fp8_acc_probe        # on the H200 (device tool); exits 77 where there is no GPU
 *
 * Every probe computes D = A B + C with C = 2^s and prints, for s = 4..30, D - 2^s of one output
 * element: the products' sum when they were kept, 0 when they were dropped against 2^s.
 *   one   A = 1, and B = 1 at (k 0, n 0) (wgmma; mma.sync: at k 0 of every column), 0 elsewhere:
 *         a single product of 1 against 2^s. With every term truncated F bits below the largest
 *         (the model of tools/fp8_mma_precision.py) it is dropped from s = F + 1; a full fp32
 *         adder (F = 23) drops it from s = 24 (2^24 + 1 rounds to even).
 *   all   A = B = 1 everywhere: K products of 1 (K = 32 for e4m3, 16 for bf16), exact 2^s + K.
 *         Per-term truncation drops them from s = F + 1 too; a hardware that sums the K products
 *         first and then adds them to C drops them only from s = F + 1 + log2(K). fp32 rounding
 *         alone gives 0 from s = 29 (e4m3) or 28 (bf16).
 * So "one" gives F, and "all" against "one" tells how the products meet the accumulator. Each is
 * run for wgmma.mma_async m64n8k32 .e4m3 (what an fp8 kernel would issue) and m64n8k16 .bf16
 * (today's kernels, the calibration: the H200 passes parity with it), and for mma.sync m16n8k32
 * .e4m3 and m16n8k16 .bf16. The "all" probes and wgmma's uniform A do not depend on fragment or
 * shared-memory layouts; "one" needs only that the byte at a descriptor's start address is element
 * (0, 0) and, for mma.sync, that a column's 32 k values come from the 4 lanes of its group, lane
 * t4 = 0 holding k 0 in byte 0 of b0 (PTX ISA 9.7.14.5.14).
 * Probe "mix" (mma.sync e4m3, C = 0): in each output column 4 products are 256 and 28 are 2^-j
 * (byte 0 of b0 is 256 in every lane: 4 lanes feed each column); "kept" when the result is
 * 1024 + 28 * 2^-j, "dropped" at 1024: products 2^(8+j) times smaller than the largest dropped
 * within one instruction.
 * PTX ISA: wgmma (9.7.15), mma.sync m16n8k32 e4m3 (9.7.14.5.14).
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* the project's wgmma descriptor, fences and waits (kernels/hip/mma.h) */
#define MLA_HAVE_WGMMA 1
#include "../../kernels/hip/mma.h"

#define E4M3_ONE 0x38u   /* 1.0 in e4m3fn: exponent 7 (bias 7), mantissa 0 */
#define E4M3_256 0x78u   /* 2^8 */
#define BF16_ONE 0x3F80u

/*
 * One warpgroup: D = A B + C, every word of A's shared memory afill, of B's bfill but its first word
 * bfirst (when nonzero), C = c; out[4 tid + i] = d[i].
 */
template <bool FP8>
__global__ void __launch_bounds__(128) probe_wgmma(float c, uint32_t afill, uint32_t bfill, uint32_t bfirst, float *out)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
	__shared__ __align__(1024) uint32_t sa[2048], sb[2048]; /* 8 KiB each: any descriptor stride lands inside */
	float d[4] = { c, c, c, c };

	for (int i = threadIdx.x; i < 2048; i += 128) {
		sa[i] = afill;
		sb[i] = i == 0 && bfirst ? bfirst : bfill;
	}
	fence_proxy_async();
	__syncthreads();
	const uint64_t da = wgmma_desc(vs_smem_addr(sa), 128, 256), db = wgmma_desc(vs_smem_addr(sb), 128, 256);

	wgmma_fence();
	if (FP8)
		asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
			     "wgmma.mma_async.sync.aligned.m64n8k32.f32.e4m3.e4m3 {%0, %1, %2, %3}, %4, %5, p, 1, 1;\n}\n"
			     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
			     : "l"(da), "l"(db));
	else
		asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
			     "wgmma.mma_async.sync.aligned.m64n8k16.f32.bf16.bf16 {%0, %1, %2, %3}, %4, %5, p, 1, 1, 0, 0;\n}\n"
			     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
			     : "l"(da), "l"(db));
	wgmma_commit();
	wgmma_wait<0>();
	for (int i = 0; i < 4; i++)
		out[4 * threadIdx.x + i] = d[i];
#else
	for (int i = 0; i < 4; i++)
		out[4 * threadIdx.x + i] = -1.0f; /* not built for sm_90a */
#endif /* __CUDA_ARCH_FEAT_SM90_ALL */
}

/*
 * One warp: mma.sync with A = a (every register), B = b0 / b1, C = c; one: B only in the lanes with
 * t4 = 0, and only byte 0 (e4m3) or the low half (bf16) of b0. out[4 lane + i] = d[i].
 */
template <bool FP8>
__global__ void probe_mma(float c, uint32_t a, uint32_t b0, uint32_t b1, int one, float *out)
{
	float d[4] = { c, c, c, c };

	if (one) {
		b0 = (threadIdx.x & 3) ? 0u : b0 & (FP8 ? 0xFFu : 0xFFFFu);
		b1 = 0u;
	}
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 890
	if (FP8)
		asm volatile("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %4, %4, %4}, {%5, %6}, "
			     "{%0, %1, %2, %3};"
			     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
			     : "r"(a), "r"(b0), "r"(b1));
	else
		asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %4, %4, %4}, {%5, %6}, "
			     "{%0, %1, %2, %3};"
			     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
			     : "r"(a), "r"(b0), "r"(b1));
	for (int i = 0; i < 4; i++)
		out[4 * threadIdx.x + i] = d[i];
#else
	for (int i = 0; i < 4; i++)
		out[4 * threadIdx.x + i] = -1.0f;
#endif
}

static int check(cudaError_t e, const char *what)
{
	if (e != cudaSuccess) {
		fprintf(stderr, "fp8_acc_probe: %s: %s\n", what, cudaGetErrorString(e));
		return 1;
	}
	return 0;
}

enum { WGMMA_E4M3, WGMMA_BF16, MMA_E4M3, MMA_BF16 };

/*
 * One launch; *res = the largest output element (a "one" probe changes one column, the others
 * stay c) and *spread = the largest minus the smallest (0 for the uniform probes).
 */
static int run(int which, float c, uint32_t a, uint32_t b0, uint32_t b1, uint32_t bfirst, int one, float *dev,
	       float *res, float *spread)
{
	float h[512], lo, hi;
	int n = which == WGMMA_E4M3 || which == WGMMA_BF16 ? 512 : 128;

	if (which == WGMMA_E4M3)
		probe_wgmma<true><<<1, 128>>>(c, a, b0, bfirst, dev);
	else if (which == WGMMA_BF16)
		probe_wgmma<false><<<1, 128>>>(c, a, b0, bfirst, dev);
	else if (which == MMA_E4M3)
		probe_mma<true><<<1, 32>>>(c, a, b0, b1, one, dev);
	else
		probe_mma<false><<<1, 32>>>(c, a, b0, b1, one, dev);
	if (check(cudaGetLastError(), "launch") || check(cudaDeviceSynchronize(), "run") ||
	    check(cudaMemcpy(h, dev, n * sizeof(float), cudaMemcpyDeviceToHost), "copy"))
		return 1;
	lo = hi = h[0];
	for (int i = 1; i < n; i++) {
		lo = h[i] < lo ? h[i] : lo;
		hi = h[i] > hi ? h[i] : hi;
	}
	*res = hi;
	*spread = hi - lo;
	return 0;
}

int main(void)
{
	static const char *names[4] = { "wgmma e4m3 k32", "wgmma bf16 k16", "mma e4m3 k32", "mma bf16 k16" };
	const uint32_t one8 = E4M3_ONE * 0x01010101u, one16 = BF16_ONE * 0x00010001u;
	float *dev = NULL;
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		fprintf(stderr, "fp8_acc_probe: no GPU\n");
		return 77;
	}
	if (check(cudaMalloc(&dev, 512 * sizeof(float)), "cudaMalloc"))
		return 1;
	printf("D - 2^s of D = A B + 2^s, for s = 4..30 ('one': one product of 1; 'all': K products of 1)\n");
	for (int probe = 0; probe < 2; probe++)
		for (int w = 0; w < 4; w++) {
			const int fp8 = w == WGMMA_E4M3 || w == MMA_E4M3, wg = w == WGMMA_E4M3 || w == WGMMA_BF16;
			const uint32_t fill = fp8 ? one8 : one16, first = fp8 ? E4M3_ONE : BF16_ONE;
			int dropped = -1;

			printf("%-4s %-15s", probe ? "all" : "one", names[w]);
			for (int s = 4; s <= 30; s++) {
				float c = ldexpf(1.0f, s), r, spread;
				/* one: wgmma B zero but its first element; mma.sync B zero but k 0 of each column */
				uint32_t b = probe ? fill : wg ? 0u : fill;

				if (run(w, c, fill, b, b, probe || !wg ? 0u : first, !probe && !wg, dev, &r, &spread))
					return 1;
				if (probe && spread != 0.0f) {
					fprintf(stderr, "fp8_acc_probe: outputs disagree (spread %g): not a uniform probe\n", spread);
					return 1;
				}
				printf(" %d:%.9g", s, (double)r - (double)c);
				if ((double)r == (double)c && dropped < 0)
					dropped = s;
			}
			printf("\n%-20s dropped from s = %d\n", "", dropped);
		}
	printf("mix (mma e4m3, C = 0): 4 products of 256 and 28 of 2^-j per column; exact 1024 + 28 * 2^-j\n ");
	for (int j = 0; j <= 9; j++) {
		/* e4m3fn 2^-j: normal (exponent 7 - j) for j <= 6, then subnormals 2^-7 = 0x04, 2^-8 = 0x02, 2^-9 = 0x01 */
		uint32_t small = j <= 6 ? (uint32_t)(7 - j) << 3 : 0x04u >> (j - 7), r0 = small * 0x01010101u;
		float r, spread, exact = 1024.0f + 28.0f * ldexpf(1.0f, -j);

		if (run(MMA_E4M3, 0.0f, one8, (r0 & 0xFFFFFF00u) | E4M3_256, r0, 0u, 0, dev, &r, &spread))
			return 1;
		printf(" j=%d:%s(%a)", j, r == exact ? "kept" : r == 1024.0f ? "dropped" : "partly", (double)r);
	}
	printf("\n");
	cudaFree(dev);
	return 0;
}
