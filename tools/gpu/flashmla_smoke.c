/*
 * flashmla_smoke.c - stand-alone check of a "hip"-backend MLA decode plugin on an NVIDIA GPU
 * (written for flashmla.decode): dlopen the plugin, make inputs the way the harness does (random
 * bf16 q and cache, pages in a shuffled block_table, NaN in every cache row at or past a sequence's
 * length, the harness's block_table sentinel in unused entries), launch through the C ABI and
 * compare out and lse with a double-precision CPU reference of kernels/mla_decode.h's operator;
 * a second launch through a captured CUDA graph must give bit-identical outputs. --bench times
 * the headline shapes (graph replay, L2 flushed before every replay, events around the replay
 * alone, median of 50) and prints TFLOPS and TB/s as FlashMLA's benchmark counts them;
 * --bench-only N does the same without the parity cases, N timed replays (1 warm-up) per shape:
 * small enough to run under Nsight Compute, which then gives each kernel's own duration.
 *
 *   cc -std=c11 -O2 -I kernels -I /usr/local/cuda/include tools/gpu/flashmla_smoke.c \
 *      -L /usr/local/cuda/lib64 -lcudart_static -ldl -lpthread -lrt -lm -o flashmla_smoke
 *   ./flashmla_smoke PLUGIN.so [--bench | --bench-only N]
 *
 * Exit status 0 when every case passes, 1 otherwise.
 */
#define _POSIX_C_SOURCE 200809L
#include "mla_decode.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SENTINEL ((int32_t)0x40000000) /* VS_BLOCK_TABLE_SENTINEL (harness/task.h) */
#define BF16_NAN 0x7fc0
#define BENCH_CHUNK ((size_t)32 << 20) /* bf16 elements of the repeated bench cache pattern */

#define CK(call)                                                                                   \
	do {                                                                                       \
		cudaError_t e_ = (call);                                                           \
		if (e_ != cudaSuccess) {                                                           \
			fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call,       \
				cudaGetErrorString(e_));                                           \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint32_t rng_u32(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint32_t)(rng_state >> 16);
}

static float rng_uniform(void) /* [-1, 1) */
{
	return (float)(rng_u32() & 0xffffff) / 8388608.0f - 1.0f;
}

static float bf16_to_float(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

static uint16_t float_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}

struct mla_case {
	const char *name;
	int batch, s_q, h_q;
	int lens[8]; /* batch <= 8 */
};

static const struct mla_decode_impl *impl;
static cudaStream_t stream;
static int num_sms;

/* Device buffers of one case, plus host copies of the inputs. */
struct bufs {
	struct mla_decode_args a;
	uint16_t *hq, *hkv;
	int32_t *hbt, *hlens;
	size_t nq, nkv, nout, nlse;
};

static void bufs_make(struct bufs *b, int batch, int s_q, int h_q, const int *lens, int fill_random)
{
	int max_pages = 1, pages = 0, spare = 3, i, j, p;
	int *perm;

	memset(b, 0, sizeof(*b));
	for (i = 0; i < batch; i++) {
		int np = (lens[i] + 63) / 64;
		pages += np;
		if (np > max_pages)
			max_pages = np;
	}
	pages += spare;
	b->nq = (size_t)batch * s_q * h_q * MLA_D_QK;
	b->nkv = (size_t)pages * 64 * MLA_D_QK;
	b->nout = (size_t)batch * s_q * h_q * MLA_D_V;
	b->nlse = (size_t)batch * h_q * s_q;
	b->hq = malloc(b->nq * 2);
	b->hkv = malloc((fill_random ? b->nkv : BENCH_CHUNK) * 2);
	b->hbt = malloc(sizeof(int32_t) * batch * max_pages);
	b->hlens = malloc(sizeof(int32_t) * batch);
	perm = malloc(sizeof(int) * pages);
	if (!b->hq || !b->hkv || !b->hbt || !b->hlens || !perm) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	if (fill_random) {
		for (size_t k = 0; k < b->nq; k++)
			b->hq[k] = float_to_bf16(rng_uniform());
		for (size_t k = 0; k < b->nkv; k++)
			b->hkv[k] = BF16_NAN; /* unused pages and rows past the length stay NaN */
	} else {
		/* bench: one random chunk repeated over the cache (the values matter little to speed) */
		for (size_t k = 0; k < b->nq; k++)
			b->hq[k] = float_to_bf16(rng_uniform());
		for (size_t k = 0; k < BENCH_CHUNK; k++)
			b->hkv[k] = float_to_bf16(rng_uniform());
	}
	for (i = 0; i < pages; i++)
		perm[i] = i;
	for (i = pages - 1; i > 0; i--) {
		int k = (int)(rng_u32() % (uint32_t)(i + 1)), t = perm[i];
		perm[i] = perm[k];
		perm[k] = t;
	}
	p = 0;
	for (i = 0; i < batch; i++) {
		b->hlens[i] = lens[i];
		for (j = 0; j < max_pages; j++) {
			if (j * 64 < lens[i]) {
				int page = perm[p++];
				b->hbt[(size_t)i * max_pages + j] = page;
				if (fill_random)
					for (int r = 0; r < 64 && j * 64 + r < lens[i]; r++)
						for (int d = 0; d < MLA_D_QK; d++)
							b->hkv[((size_t)page * 64 + r) * MLA_D_QK + d] =
								float_to_bf16(rng_uniform());
			} else {
				b->hbt[(size_t)i * max_pages + j] = SENTINEL;
			}
		}
	}
	free(perm);

	b->a.batch = batch;
	b->a.s_q = s_q;
	b->a.h_q = h_q;
	b->a.num_pages = pages;
	b->a.page_size = 64;
	b->a.max_pages = max_pages;
	b->a.kv_dtype = MLA_KV_BF16;
	b->a.softmax_scale = 0.1352f; /* 192^-0.5 * mscale^2 of DeepSeek-V3 */
	b->a.kv_scale = 1.0f;
	b->a.num_cus = num_sms;
	b->a.stream = stream;
	CK(cudaMalloc((void **)&b->a.q, b->nq * 2));
	CK(cudaMalloc((void **)&b->a.kv_cache, b->nkv * 2));
	CK(cudaMalloc((void **)&b->a.block_table, sizeof(int32_t) * batch * max_pages));
	CK(cudaMalloc((void **)&b->a.seqlens, sizeof(int32_t) * batch));
	CK(cudaMalloc(&b->a.out, b->nout * 2));
	CK(cudaMalloc((void **)&b->a.lse, b->nlse * 4));
	CK(cudaMemcpy((void *)b->a.q, b->hq, b->nq * 2, cudaMemcpyHostToDevice));
	for (size_t k = 0; k < b->nkv; k += BENCH_CHUNK) {
		size_t n = fill_random ? b->nkv : (b->nkv - k < BENCH_CHUNK ? b->nkv - k : BENCH_CHUNK);

		CK(cudaMemcpy((uint16_t *)b->a.kv_cache + k, b->hkv, n * 2, cudaMemcpyHostToDevice));
		if (fill_random)
			break;
	}
	CK(cudaMemcpy((void *)b->a.block_table, b->hbt, sizeof(int32_t) * batch * max_pages,
		      cudaMemcpyHostToDevice));
	CK(cudaMemcpy((void *)b->a.seqlens, b->hlens, sizeof(int32_t) * batch, cudaMemcpyHostToDevice));
	b->a.workspace_bytes = impl->workspace_size(&b->a, NULL);
	if (b->a.workspace_bytes)
		CK(cudaMalloc(&b->a.workspace, b->a.workspace_bytes));
}

static void bufs_free(struct bufs *b)
{
	cudaFree((void *)b->a.q);
	cudaFree((void *)b->a.kv_cache);
	cudaFree((void *)b->a.block_table);
	cudaFree((void *)b->a.seqlens);
	cudaFree(b->a.out);
	cudaFree(b->a.lse);
	cudaFree(b->a.workspace);
	free(b->hq);
	free(b->hkv);
	free(b->hbt);
	free(b->hlens);
}

/* Double-precision reference of one (b, i, h) row: kernels/mla_decode.h's operator. */
static void reference_row(const struct bufs *b, int bi, int i, int h, double *out, double *lse)
{
	const struct mla_decode_args *a = &b->a;
	int n = b->hlens[bi] - a->s_q + 1 + i, j, d;
	const uint16_t *q = b->hq + (((size_t)bi * a->s_q + i) * a->h_q + h) * MLA_D_QK;
	double m = -INFINITY, sum = 0, *s;

	for (d = 0; d < MLA_D_V; d++)
		out[d] = 0;
	if (n <= 0) {
		*lse = INFINITY;
		return;
	}
	s = malloc(sizeof(double) * n);
	for (j = 0; j < n; j++) {
		int page = b->hbt[(size_t)bi * a->max_pages + j / 64];
		const uint16_t *k = b->hkv + ((size_t)page * 64 + j % 64) * MLA_D_QK;
		double dot = 0;

		for (d = 0; d < MLA_D_QK; d++)
			dot += (double)bf16_to_float(q[d]) * bf16_to_float(k[d]);
		s[j] = dot * a->softmax_scale;
		if (s[j] > m)
			m = s[j];
	}
	for (j = 0; j < n; j++) {
		int page = b->hbt[(size_t)bi * a->max_pages + j / 64];
		const uint16_t *v = b->hkv + ((size_t)page * 64 + j % 64) * MLA_D_QK;
		double p = exp(s[j] - m);

		sum += p;
		for (d = 0; d < MLA_D_V; d++)
			out[d] += p * bf16_to_float(v[d]);
	}
	for (d = 0; d < MLA_D_V; d++)
		out[d] /= sum;
	*lse = m + log(sum);
	free(s);
}

static int launch_graph(struct bufs *b)
{
	cudaGraph_t g;
	cudaGraphExec_t ge;
	int rc;

	CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
	rc = impl->launch(&b->a, NULL);
	CK(cudaStreamEndCapture(stream, &g));
	if (rc != MLA_OK)
		return rc;
	CK(cudaGraphInstantiateWithFlags(&ge, g, 0));
	CK(cudaGraphLaunch(ge, stream));
	CK(cudaStreamSynchronize(stream));
	cudaGraphExecDestroy(ge);
	cudaGraphDestroy(g);
	return MLA_OK;
}

static int run_case(const struct mla_case *c)
{
	struct bufs b;
	uint16_t *out, *out2;
	float *lse, *lse2;
	double ref[MLA_D_V], rlse, max_err = 0, max_lse_err = 0;
	int rc, bad = 0;

	bufs_make(&b, c->batch, c->s_q, c->h_q, c->lens, 1);
	out = malloc(b.nout * 2);
	out2 = malloc(b.nout * 2);
	lse = malloc(b.nlse * 4);
	lse2 = malloc(b.nlse * 4);
	CK(cudaMemset(b.a.out, 0x7f, b.nout * 2)); /* garbage, so unwritten outputs show */
	CK(cudaMemset(b.a.lse, 0x7f, b.nlse * 4));
	rc = impl->launch(&b.a, NULL);
	if (rc != MLA_OK) {
		printf("FAIL %-28s launch returned %d\n", c->name, rc);
		bufs_free(&b);
		return 1;
	}
	CK(cudaStreamSynchronize(stream));
	CK(cudaMemcpy(out, b.a.out, b.nout * 2, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(lse, b.a.lse, b.nlse * 4, cudaMemcpyDeviceToHost));
	CK(cudaMemset(b.a.out, 0x55, b.nout * 2));
	CK(cudaMemset(b.a.lse, 0x55, b.nlse * 4));
	if ((rc = launch_graph(&b)) != MLA_OK) {
		printf("FAIL %-28s graph launch returned %d\n", c->name, rc);
		bufs_free(&b);
		return 1;
	}
	CK(cudaMemcpy(out2, b.a.out, b.nout * 2, cudaMemcpyDeviceToHost));
	CK(cudaMemcpy(lse2, b.a.lse, b.nlse * 4, cudaMemcpyDeviceToHost));
	if (memcmp(out, out2, b.nout * 2) || memcmp(lse, lse2, b.nlse * 4)) {
		printf("FAIL %-28s graph replay is not bit-identical to the direct launch\n", c->name);
		bad = 1;
	}
	for (int bi = 0; bi < c->batch; bi++)
		for (int i = 0; i < c->s_q; i++)
			for (int h = 0; h < c->h_q; h++) {
				size_t row = ((size_t)bi * c->s_q + i) * c->h_q + h;
				float got_lse = lse[((size_t)bi * c->h_q + h) * c->s_q + i];

				reference_row(&b, bi, i, h, ref, &rlse);
				if (isinf(rlse) ? !(isinf(got_lse) && got_lse > 0)
						: !(fabs(got_lse - rlse) <= 2e-3 * fmax(1.0, fabs(rlse)))) {
					if (bad++ < 4)
						printf("     %-28s lse[b%d h%d i%d] = %g, want %g\n", c->name, bi, h,
						       i, got_lse, rlse);
				} else if (!isinf(rlse) && fabs(got_lse - rlse) > max_lse_err) {
					max_lse_err = fabs(got_lse - rlse);
				}
				for (int d = 0; d < MLA_D_V; d++) {
					double got = bf16_to_float(out[row * MLA_D_V + d]);
					double err = fabs(got - ref[d]);

					if (!(err <= 1e-2 + 1e-2 * fabs(ref[d]))) {
						if (bad++ < 4)
							printf("     %-28s out[b%d i%d h%d d%d] = %g, want %g\n",
							       c->name, bi, i, h, d, got, ref[d]);
					} else if (err > max_err) {
						max_err = err;
					}
				}
			}
	printf("%s %-28s b %d s_q %d h_q %d lens", bad ? "FAIL" : "PASS", c->name, c->batch, c->s_q, c->h_q);
	for (int bi = 0; bi < c->batch; bi++)
		printf(" %d", c->lens[bi]);
	printf("  max |out err| %.2e, max |lse err| %.2e\n", max_err, max_lse_err);
	free(out);
	free(out2);
	free(lse);
	free(lse2);
	bufs_free(&b);
	return bad != 0;
}

static int bench_reps = 50, bench_warmup = 5; /* --bench-only N: N and 1 */

static int cmp_float(const void *x, const void *y)
{
	float a = *(const float *)x, b = *(const float *)y;
	return a < b ? -1 : a > b;
}

static void bench(int batch, int s_q, int h_q, int len)
{
	int lens_all[128];
	struct bufs b;
	cudaGraph_t g;
	cudaGraphExec_t ge;
	cudaEvent_t e0, e1;
	float ms[50];
	int n = bench_reps;
	void *flush;
	size_t flush_bytes = (size_t)512 << 20;
	double flops, bytes, t;
	int rc;

	for (int i = 0; i < batch; i++)
		lens_all[i] = len;
	bufs_make(&b, batch, s_q, h_q, lens_all, 0);
	CK(cudaMalloc(&flush, flush_bytes));
	CK(cudaEventCreate(&e0));
	CK(cudaEventCreate(&e1));
	CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
	rc = impl->launch(&b.a, NULL);
	CK(cudaStreamEndCapture(stream, &g));
	if (rc != MLA_OK) {
		printf("bench b %d h_q %d len %d: launch returned %d\n", batch, h_q, len, rc);
		return;
	}
	CK(cudaGraphInstantiateWithFlags(&ge, g, 0));
	for (int w = 0; w < bench_warmup; w++)
		CK(cudaGraphLaunch(ge, stream));
	for (int it = 0; it < n; it++) {
		CK(cudaMemsetAsync(flush, it & 0xff, flush_bytes, stream));
		CK(cudaEventRecord(e0, stream));
		CK(cudaGraphLaunch(ge, stream));
		CK(cudaEventRecord(e1, stream));
		CK(cudaEventSynchronize(e1));
		CK(cudaEventElapsedTime(&ms[it], e0, e1));
	}
	qsort(ms, n, sizeof(float), cmp_float);
	t = ms[n / 2] * 1e-3;
	/* FlashMLA's benchmark/bench_flash_mla.py counts (h_kv 1, d 576, dv 512, bf16): */
	flops = 2.0 * s_q * (double)batch * len * h_q * (MLA_D_QK + MLA_D_V);
	bytes = 2.0 * ((double)batch * len * MLA_D_QK + (double)batch * s_q * h_q * (MLA_D_QK + MLA_D_V));
	printf("BENCH flashmla.decode b %d s_q %d h_q %d len %d: median %.4f ms (min %.4f, max %.4f) "
	       "%.0f TFLOPS %.2f TB/s\n", batch, s_q, h_q, len, ms[n / 2], ms[0], ms[n - 1], flops / t / 1e12,
	       bytes / t / 1e12);
	cudaGraphExecDestroy(ge);
	cudaGraphDestroy(g);
	cudaFree(flush);
	bufs_free(&b);
}

int main(int argc, char **argv)
{
	static const struct mla_case cases[] = {
		{ "ragged-h16", 4, 1, 16, { 1, 63, 64, 1300 } },
		{ "h128-ragged", 3, 1, 128, { 2000, 65, 700 } },
		{ "h7-odd-heads", 2, 1, 7, { 129, 500 } },
		{ "empty-seqs-h16", 4, 1, 16, { 0, 300, 0, 64 } },
		{ "causal-sq2-h16", 3, 2, 16, { 1, 2, 900 } },
		{ "causal-sq4-h32", 2, 4, 32, { 3, 1500 } },
		{ "causal-sq2-h128", 2, 2, 128, { 640, 77 } },
		{ "causal-sq3-h7", 3, 3, 7, { 0, 1, 260 } },
		{ "long-split-b1-h16", 1, 1, 16, { 8000, 0, 0, 0 } },
		{ "causal-sq4-h128-empty", 2, 4, 128, { 0, 3000 } },
	};
	mla_decode_plugin_fn fn;
	void *lib;
	int fails = 0, do_bench = argc > 2 && !strcmp(argv[2], "--bench");
	int bench_only = argc > 3 && !strcmp(argv[2], "--bench-only");

	if (argc < 2 || (argc > 2 && !do_bench && !bench_only)) {
		fprintf(stderr, "usage: flashmla_smoke PLUGIN.so [--bench | --bench-only N]\n");
		return 2;
	}
	if (bench_only) {
		bench_reps = atoi(argv[3]);
		bench_warmup = 1;
		if (bench_reps < 1 || bench_reps > 50) {
			fprintf(stderr, "flashmla_smoke: --bench-only N: N in 1..50\n");
			return 2;
		}
	}
	if (!(lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL))) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	fn = (mla_decode_plugin_fn)dlsym(lib, MLA_DECODE_PLUGIN_SYMBOL);
	if (!fn || !(impl = fn()) || impl->abi_version != MLA_DECODE_ABI_VERSION) {
		fprintf(stderr, "%s: no plugin of ABI version %d\n", argv[1], MLA_DECODE_ABI_VERSION);
		return 1;
	}
	CK(cudaSetDevice(0));
	CK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, 0));
	CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
	printf("plugin %s (%s), %d SMs\n", impl->name, impl->summary, num_sms);
	for (size_t i = 0; !bench_only && i < sizeof(cases) / sizeof(cases[0]); i++)
		fails += run_case(&cases[i]);
	if (!bench_only)
		printf("%d of %zu cases failed\n", fails, sizeof(cases) / sizeof(cases[0]));
	if (do_bench || bench_only) {
		/* the four headline shapes of issue 42, bf16 pages of 64, s_q 1 */
		bench(128, 1, 128, 8192);
		bench(64, 1, 128, 8192);
		bench(128, 1, 16, 32768);
		bench(128, 1, 16, 4096);
	}
	return fails != 0;
}
