/*
 * fp8_acc_probe.cu - how many bits the H200's matrix instructions keep when they add products to an
 * accumulator (issue 17). tools/fp8_mma_precision.py models an fp8-tensor-core MLA decode with that
 * width F as a parameter: with F = 13 (DeepSeek-V3's "about 14 bits" on H800) its lse misses the
 * harness's tolerance on one-key sequences, with F >= 16 it does not. This measures F, in seconds:
 *
 *   nvcc -std=c++17 -O2 -gencode=arch=compute_90a,code=sm_90a tools/gpu/fp8_acc_probe.cu -o fp8_acc_probe
 *   ./fp8_acc_probe        # on the H200 (device tool); exits 77 where there is no GPU
 *
 * Probe "acc": every element of A and B is 1 and the accumulator C is 2^s, so the exact result is
 * 2^s + K (K = 32 products for e4m3, 16 for bf16); the first s whose result is 2^s means that the
 * products were dropped against an accumulator 2^s times larger. Uniform A and B make it
 * independent of fragment and shared-memory layouts, so one line of PTX per instruction does:
 *   wgmma e4m3   wgmma.mma_async m64n8k32 .e4m3 x .e4m3 -> f32, A and B from shared memory
 *   wgmma bf16   wgmma.mma_async m64n8k16 .bf16 x .bf16 -> f32 (today's kernels), for calibration
 *   mma e4m3     mma.sync m16n8k32 .e4m3 (sm_89+), A and B in registers
 *   mma bf16     mma.sync m16n8k16 .bf16
 * In tools/fp8_mma_precision.py's model (every term truncated F bits below the largest), products
 * of 1 vanish against 2^s from s = F + 1; if the hardware sums the K products exactly first and then
 * adds them to C, from s = F + 1 + log2(K) (F + 6 for e4m3). The mix probe tells the two apart.
 * Probe "mix" (mma.sync e4m3, C = 0): in each output column 4 products are 256 and 28 are 2^-j
 * (B's byte 0 of register 0 is 256 in every thread: 4 threads feed each column); the first j whose
 * result is exactly 1024 means that products 2^(8+j) times smaller than the largest were dropped
 * within one instruction.
 * PTX ISA: wgmma (9.7.15), mma.sync m16n8k32 e4m3 (9.7.14.5.14).
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define E4M3_ONE 0x38u   /* 1.0 in e4m3fn: exponent 7 (bias 7), mantissa 0 */
#define E4M3_256 0x78u   /* 2^8 */
#define BF16_ONE 0x3F80u

__device__ uint64_t desc_noswizzle(const void *smem, uint32_t lbo, uint32_t sbo)
{
	uint32_t a = (uint32_t)__cvta_generic_to_shared(smem);

	return (uint64_t)((a & 0x3FFFFu) >> 4) | ((uint64_t)(lbo >> 4) << 16) | ((uint64_t)(sbo >> 4) << 32);
}

/* One warpgroup: d = A B + C with A, B uniform (every byte `fill`), C = c; out[tid] = d[0]. */
template <bool FP8>
__global__ void __launch_bounds__(128) probe_wgmma(float c, uint32_t fill, float *out)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
	__shared__ __align__(1024) uint32_t sa[2048], sb[2048]; /* 8 KiB each: any descriptor stride lands inside */
	float d[4] = { c, c, c, c };

	for (int i = threadIdx.x; i < 2048; i += 128) {
		sa[i] = fill;
		sb[i] = fill;
	}
	asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
	__syncthreads();
	const uint64_t da = desc_noswizzle(sa, 128, 256), db = desc_noswizzle(sb, 128, 256);

	asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
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
	asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
	asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
	out[threadIdx.x] = d[0];
#else
	out[threadIdx.x] = -1.0f; /* not built for sm_90a */
#endif /* __CUDA_ARCH_FEAT_SM90_ALL */
}

/* One warp: mma.sync with A = a (every register), B = b0/b1, C = c; out[lane] = d[0]. */
template <bool FP8>
__global__ void probe_mma(float c, uint32_t a, uint32_t b0, uint32_t b1, float *out)
{
	float d[4] = { c, c, c, c };

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
	out[threadIdx.x] = d[0];
#else
	out[threadIdx.x] = -1.0f;
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

/* d[0] of thread 0 of one launch (all threads agree for the uniform probes; checked). */
static int run(int which, float c, uint32_t a, uint32_t b0, uint32_t b1, float *dev, float *res)
{
	float h[128];
	int n = which < 2 ? 128 : 32;

	if (which == 0)
		probe_wgmma<true><<<1, 128>>>(c, a, dev);
	else if (which == 1)
		probe_wgmma<false><<<1, 128>>>(c, a, dev);
	else if (which == 2)
		probe_mma<true><<<1, 32>>>(c, a, b0, b1, dev);
	else
		probe_mma<false><<<1, 32>>>(c, a, b0, b1, dev);
	if (check(cudaGetLastError(), "launch") || check(cudaDeviceSynchronize(), "run") ||
	    check(cudaMemcpy(h, dev, n * sizeof(float), cudaMemcpyDeviceToHost), "copy"))
		return 1;
	for (int i = 1; i < n; i++)
		if (memcmp(&h[i], &h[0], sizeof(float))) {
			fprintf(stderr, "fp8_acc_probe: threads disagree (%g against %g): not a uniform probe\n", h[i], h[0]);
			return 1;
		}
	*res = h[0];
	return 0;
}

int main(void)
{
	static const char *names[4] = { "wgmma e4m3 (k32)", "wgmma bf16 (k16)", "mma e4m3 (k32)", "mma bf16 (k16)" };
	const uint32_t one8 = E4M3_ONE * 0x01010101u, one16 = BF16_ONE * 0x00010001u;
	float *dev = NULL;
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		fprintf(stderr, "fp8_acc_probe: no GPU\n");
		return 77;
	}
	if (check(cudaMalloc(&dev, 128 * sizeof(float)), "cudaMalloc"))
		return 1;
	printf("probe acc: A = B = 1, C = 2^s; exact 2^s + K; '=' where the result is 2^s (products dropped)\n");
	for (int w = 0; w < 4; w++) {
		const int k = (w == 0 || w == 2) ? 32 : 16;
		const uint32_t fill = (w == 0 || w == 2) ? one8 : one16;
		int first = -1;

		printf("  %-18s", names[w]);
		for (int s = 4; s <= 30; s++) {
			float c = ldexpf(1.0f, s), r;

			if (run(w, c, fill, fill, fill, dev, &r))
				return 1;
			printf(" %d%s", s, r == c ? "=" : r == c + (float)k ? "" : "?");
			if (r == c && first < 0)
				first = s;
		}
		printf("\n  %-18s products of 1 dropped first against 2^%d (K %d)\n", "", first, k);
	}
	printf("probe mix (mma e4m3, C = 0): 4 products of 256 and 28 of 2^-j per column; exact 1024 + 28 * 2^-j\n ");
	for (int j = 0; j <= 9; j++) {
		/* e4m3fn 2^-j: normal (exponent 7 - j) for j <= 6, then subnormals 2^-7 = 0x04, 2^-8 = 0x02, 2^-9 = 0x01 */
		uint32_t small = j <= 6 ? (uint32_t)(7 - j) << 3 : 0x04u >> (j - 7), r0;
		float r, exact = 1024.0f + 28.0f * ldexpf(1.0f, -j);

		r0 = small * 0x01010101u;
		if (run(2, 0.0f, one8, (r0 & 0xFFFFFF00u) | E4M3_256, r0, dev, &r))
			return 1;
		printf(" j=%d:%s", j, r == exact ? "kept" : r == 1024.0f ? "dropped" : "partly");
	}
	printf("\n");
	cudaFree(dev);
	return 0;
}
