/*
 * flashmla_sparse_smoke.c - stand-alone check of a "hip"-backend plugin of the sparse form of MLA
 * decode (kernels/mla_decode.h, ABI 3) on an NVIDIA GPU, written for flashmla.sparse_decode
 * (kernels/flashmla/flashmla_sparse_plugin.cu): dlopen the plugin, build paged fp8_ds_mla or
 * fp8_model1 caches byte for byte (random e4m3fn codes, power-of-two scales, bf16 RoPE values;
 * every row that no valid entry names is NaN: codes 0x7F, NaN scales, NaN RoPE bits), indices with
 * -1 padding, a query row of -1 only, entries past topk_length that name NaN rows, attn_sink with
 * finite and +-inf values, the extra cache of fp8_model1, and compare out and lse with a double
 * CPU reference that decodes each row with mla_kv_decode_token (kernels/mla_numeric.h). A second
 * run through a captured CUDA graph must give bit-identical outputs. A plugin of backend "cpu"
 * runs on host buffers without any CUDA call (how the generator and the reference were checked on
 * a machine without a GPU: cpu.naive through a three-line shim that exports it as a plugin).
 *
 *   cc -std=c11 -O2 -I kernels -I /usr/local/cuda/include tools/gpu/flashmla_sparse_smoke.c \
 *      -L /usr/local/cuda/lib64 -lcudart_static -ldl -lpthread -lrt -lm -o flashmla_sparse_smoke
 *   ./flashmla_sparse_smoke PLUGIN.so
 *
 * Tolerance: out within 2^-8 (sum_t p_t |V_t| + |out|) + 1e-6 (P and out rounded to bf16 as
 * FlashMLA does), lse within 1e-5 + 2^-13 |lse|; a row with no valid entry exactly out 0, lse +inf.
 * Exit status 0 when every case passes, 1 otherwise. Checked against cpu.naive (2026-12-05); not
 * yet run on a GPU.
 */
#define _POSIX_C_SOURCE 200809L
#include "mla_decode.h"
#include "mla_numeric.h"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static void *xmalloc(size_t n)
{
	void *p = calloc(1, n ? n : 1);

	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	return p;
}

/* A plugin of backend "cpu" (e.g. cpu.naive through a shim) runs on host buffers, no CUDA call. */
static int host;

static void *buf_alloc(size_t n)
{
	void *p = NULL;

	if (host)
		return xmalloc(n);
	CK(cudaMalloc(&p, n ? n : 1));
	return p;
}

static void buf_put(const void *dst, const void *src, size_t n)
{
	if (host)
		memcpy((void *)dst, src, n);
	else
		CK(cudaMemcpy((void *)dst, src, n, cudaMemcpyHostToDevice));
}

static void buf_get(void *dst, const void *src, size_t n)
{
	if (host)
		memcpy(dst, src, n);
	else
		CK(cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost));
}

static void buf_fill(void *dst, int byte, size_t n)
{
	if (host)
		memset(dst, byte, n);
	else
		CK(cudaMemset(dst, byte, n));
}

static void buf_free(const void *p)
{
	if (host)
		free((void *)p);
	else if (p)
		cudaFree((void *)p);
}

struct sparse_case {
	const char *name;
	int kv_dtype, batch, s_q, h_q, topk, page_size, num_pages;
	int extra_topk, extra_page_size, extra_num_pages;
	int topk_length, extra_topk_length, sink; /* 1: pass them */
};

static const struct sparse_case cases[] = {
	{"v32 h64 b2 topk128 page64 sink", MLA_KV_FP8_DS_MLA, 2, 1, 64, 128, 64, 8, 0, 0, 0, 0, 0, 1},
	{"v32 h128 b3 sq2 topk256 page61 topk_length", MLA_KV_FP8_DS_MLA, 3, 2, 128, 256, 61, 20, 0, 0, 0, 1, 0, 1},
	{"v32 h128 b16 topk2048 page64 (splits)", MLA_KV_FP8_DS_MLA, 16, 1, 128, 2048, 64, 64, 0, 0, 0, 0, 0, 0},
	{"model1 h64 b4 sq2 128+512 pages 256/64 lengths", MLA_KV_FP8_MODEL1, 4, 2, 64, 128, 256, 4, 512, 64, 16,
	 1, 1, 1},
	{"model1 h128 b2 128+1024 pages 2/64", MLA_KV_FP8_MODEL1, 2, 1, 128, 128, 2, 200, 1024, 64, 24, 1, 0, 1},
	{"model1 h128 b40 topk512 (splits)", MLA_KV_FP8_MODEL1, 40, 1, 128, 512, 64, 64, 0, 0, 0, 0, 0, 0},
};

static const struct mla_decode_impl *impl;
static cudaStream_t stream;
static int num_sms;

/* One cache: its bytes, and which rows hold data (the rest are NaN). */
struct cache {
	uint8_t *bytes;
	size_t page_bytes, size;
	int num_pages, page_size;
};

/* Writes row r of a block-scaled cache: random data, or NaN everywhere (nan != 0). */
static void write_row(struct cache *c, int kv_dtype, int r, int nan)
{
	uint8_t *page = c->bytes + (size_t)(r / c->page_size) * c->page_bytes;
	int slot = r % c->page_size;

	if (!mla_kv_is_model1(kv_dtype)) {
		uint8_t *t = page + (size_t)slot * 656;

		for (int i = 0; i < 512; i++) {
			uint8_t code = (uint8_t)(rng_u32() & 0xff);

			t[i] = nan ? 0x7f : ((code & 0x7f) == 0x7f ? (uint8_t)(code ^ 1) : code);
		}
		for (int k = 0; k < 4; k++) {
			float s = nan ? NAN : ldexpf(1.0f, -9 + (int)(rng_u32() % 4));

			memcpy(t + 512 + 4 * k, &s, 4);
		}
		for (int i = 0; i < 64; i++) {
			uint16_t v = nan ? 0x7fc0 : mla_float_to_bf16(rng_uniform());

			t[528 + 2 * i] = (uint8_t)v;
			t[529 + 2 * i] = (uint8_t)(v >> 8);
		}
	} else {
		uint8_t *t = page + (size_t)slot * 576;
		uint8_t *sc = page + (size_t)c->page_size * 576 + (size_t)slot * 8;

		for (int i = 0; i < 448; i++) {
			uint8_t code = (uint8_t)(rng_u32() & 0xff);

			t[i] = nan ? 0x7f : ((code & 0x7f) == 0x7f ? (uint8_t)(code ^ 1) : code);
		}
		for (int i = 0; i < 64; i++) {
			uint16_t v = nan ? 0x7fc0 : mla_float_to_bf16(rng_uniform());

			t[448 + 2 * i] = (uint8_t)v;
			t[449 + 2 * i] = (uint8_t)(v >> 8);
		}
		for (int k = 0; k < 7; k++)
			sc[k] = nan ? 0xff : (uint8_t)(127 - 9 + (int)(rng_u32() % 4));
		sc[7] = 0;
	}
}

/*
 * Indices [batch][s_q][topk] into rows of a cache of n rows: rows r with r % 4 == 3 are never
 * named by a valid entry (they stay NaN); -1 padding (1 in 8); query row (0, s_q-1) all -1;
 * entries at or past lens[b] (when lens) name NaN rows. Marks the rows it names valid in used.
 */
static void make_indices(int32_t *idx, int batch, int s_q, int topk, int n, const int32_t *lens, uint8_t *used)
{
	for (int b = 0; b < batch; b++)
		for (int i = 0; i < s_q; i++)
			for (int t = 0; t < topk; t++) {
				int32_t *e = &idx[((size_t)b * s_q + i) * topk + t];
				int r = (int)(rng_u32() % (uint32_t)(n / 4)) * 4 + (int)(rng_u32() % 3);

				if ((b == 0 && i == s_q - 1) || rng_u32() % 8 == 0) {
					*e = -1;
				} else if (lens && t >= lens[b]) {
					*e = (int)(rng_u32() % (uint32_t)(n / 4)) * 4 + 3;
				} else {
					*e = r;
					used[r] = 1;
				}
			}
}

static void cache_make(struct cache *c, int kv_dtype, int num_pages, int page_size)
{
	c->num_pages = num_pages;
	c->page_size = page_size;
	c->page_bytes = mla_kv_page_bytes(kv_dtype, page_size);
	c->size = c->page_bytes * (size_t)num_pages;
	c->bytes = xmalloc(c->size);
}

static void cache_fill(struct cache *c, int kv_dtype, const uint8_t *used)
{
	for (int r = 0; r < c->num_pages * c->page_size; r++)
		write_row(c, kv_dtype, r, !used[r]);
}

/* The valid entries' decoded rows of query row (b, i) of one cache, appended to rows. */
static int gather(float *rows, int d, int kv_dtype, const struct cache *c, const int32_t *idx, int topk,
		  const int32_t *lens, int b, int i, int s_q)
{
	int n = 0;

	for (int t = 0; t < topk; t++) {
		int r = idx[((size_t)b * s_q + i) * topk + t];

		if (r == -1 || (lens && t >= lens[b]))
			continue;
		mla_kv_decode_token(kv_dtype, c->bytes + (size_t)(r / c->page_size) * c->page_bytes, c->page_size,
				    r % c->page_size, rows + (size_t)n * d);
		n++;
	}
	return n;
}

static int run_case(const struct sparse_case *k)
{
	struct mla_decode_args a;
	struct cache kv, ekv;
	int d = mla_kv_d_qk(k->kv_dtype), fails = 0, n_rows = k->num_pages * k->page_size;
	size_t nq = (size_t)k->batch * k->s_q * k->h_q * d, nout = (size_t)k->batch * k->s_q * k->h_q * MLA_D_V;
	size_t nlse = (size_t)k->batch * k->h_q * k->s_q, nidx = (size_t)k->batch * k->s_q * k->topk;
	size_t neidx = (size_t)k->batch * k->s_q * k->extra_topk;
	uint16_t *hq = xmalloc(nq * 2), *hout = xmalloc(nout * 2), *hout2 = xmalloc(nout * 2);
	float *hlse = xmalloc(nlse * 4), *hlse2 = xmalloc(nlse * 4), *sink = xmalloc(sizeof(float) * k->h_q);
	int32_t *idx = xmalloc(nidx * 4), *eidx = xmalloc(neidx * 4 + 4);
	int32_t *lens = xmalloc(sizeof(int32_t) * k->batch), *elens = xmalloc(sizeof(int32_t) * k->batch);
	uint8_t *used = xmalloc((size_t)n_rows), *eused = NULL;
	float *rows = xmalloc(sizeof(float) * d * (size_t)(k->topk + k->extra_topk));
	double *s = xmalloc(sizeof(double) * (size_t)(k->topk + k->extra_topk));
	double *p = xmalloc(sizeof(double) * (size_t)(k->topk + k->extra_topk));
	double max_err = 0;
	char why[256] = "";
	cudaGraph_t graph;
	cudaGraphExec_t exec;
	int rc;

	memset(&a, 0, sizeof(a));
	for (size_t i = 0; i < nq; i++)
		hq[i] = mla_float_to_bf16(rng_uniform());
	for (int h = 0; h < k->h_q; h++)
		sink[h] = h % 4 == 0 ? INFINITY : h % 4 == 1 ? -INFINITY : rng_uniform() * 4.0f;
	for (int b = 0; b < k->batch; b++) {
		lens[b] = b == 1 ? 0 : b % 3 == 2 ? k->topk : (int)(rng_u32() % (uint32_t)(k->topk + 1));
		elens[b] = k->extra_topk ? (int)(rng_u32() % (uint32_t)(k->extra_topk + 1)) : 0;
	}
	cache_make(&kv, k->kv_dtype, k->num_pages, k->page_size);
	make_indices(idx, k->batch, k->s_q, k->topk, n_rows, k->topk_length ? lens : NULL, used);
	cache_fill(&kv, k->kv_dtype, used);
	if (k->extra_topk) {
		int en = k->extra_num_pages * k->extra_page_size;

		eused = xmalloc((size_t)en);
		cache_make(&ekv, k->kv_dtype, k->extra_num_pages, k->extra_page_size);
		make_indices(eidx, k->batch, k->s_q, k->extra_topk, en, k->extra_topk_length ? elens : NULL, eused);
		cache_fill(&ekv, k->kv_dtype, eused);
	}

	a.batch = k->batch;
	a.s_q = k->s_q;
	a.h_q = k->h_q;
	a.num_pages = k->num_pages;
	a.page_size = k->page_size;
	a.kv_dtype = k->kv_dtype;
	a.softmax_scale = 1.0f / sqrtf((float)d);
	a.kv_scale = 1.0f;
	a.num_cus = num_sms;
	a.topk = k->topk;
	a.extra_topk = k->extra_topk;
	a.extra_num_pages = k->extra_topk ? k->extra_num_pages : 0;
	a.extra_page_size = k->extra_topk ? k->extra_page_size : 0;
	a.d_qk = d;
	a.d_v = MLA_D_V;
	if (!impl->supports(&a, why, sizeof(why))) {
		printf("FAIL %s: supports() refused: %s\n", k->name, why);
		return 1;
	}
	a.stream = host ? NULL : stream;
	a.q = buf_alloc(nq * 2);
	a.kv_cache = buf_alloc(kv.size);
	a.indices = buf_alloc(nidx * 4);
	a.out = buf_alloc(nout * 2);
	a.lse = buf_alloc(nlse * 4);
	buf_put(a.q, hq, nq * 2);
	buf_put(a.kv_cache, kv.bytes, kv.size);
	buf_put(a.indices, idx, nidx * 4);
	if (k->topk_length) {
		a.topk_length = buf_alloc(sizeof(int32_t) * k->batch);
		buf_put(a.topk_length, lens, sizeof(int32_t) * k->batch);
	}
	if (k->sink) {
		a.attn_sink = buf_alloc(sizeof(float) * k->h_q);
		buf_put(a.attn_sink, sink, sizeof(float) * k->h_q);
	}
	if (k->extra_topk) {
		a.extra_kv_cache = buf_alloc(ekv.size);
		a.extra_indices = buf_alloc(neidx * 4);
		buf_put(a.extra_kv_cache, ekv.bytes, ekv.size);
		buf_put(a.extra_indices, eidx, neidx * 4);
		if (k->extra_topk_length) {
			a.extra_topk_length = buf_alloc(sizeof(int32_t) * k->batch);
			buf_put(a.extra_topk_length, elens, sizeof(int32_t) * k->batch);
		}
	}
	a.workspace_bytes = impl->workspace_size(&a, NULL);
	if (a.workspace_bytes)
		a.workspace = buf_alloc(a.workspace_bytes);

	buf_fill(a.out, 0xff, nout * 2);
	buf_fill(a.lse, 0xff, nlse * 4);
	rc = impl->launch(&a, NULL);
	if (!host)
		CK(cudaStreamSynchronize(stream));
	if (rc != MLA_OK) {
		printf("FAIL %s: launch returned %d\n", k->name, rc);
		return 1;
	}
	buf_get(hout, a.out, nout * 2);
	buf_get(hlse, a.lse, nlse * 4);

	for (int b = 0; b < k->batch; b++)
		for (int i = 0; i < k->s_q; i++) {
			int n = gather(rows, d, k->kv_dtype, &kv, idx, k->topk, k->topk_length ? lens : NULL, b, i,
				       k->s_q);

			if (k->extra_topk)
				n += gather(rows + (size_t)n * d, d, k->kv_dtype, &ekv, eidx, k->extra_topk,
					    k->extra_topk_length ? elens : NULL, b, i, k->s_q);
			for (int h = 0; h < k->h_q; h++) {
				const uint16_t *q = hq + (((size_t)b * k->s_q + i) * k->h_q + h) * d;
				const uint16_t *o = hout + (((size_t)b * k->s_q + i) * k->h_q + h) * MLA_D_V;
				float lse = hlse[((size_t)b * k->h_q + h) * k->s_q + i];
				double m = -INFINITY, l = 0, ref_lse, f = 1.0;

				for (int t = 0; t < n; t++) {
					double acc = 0;

					for (int c = 0; c < d; c++)
						acc += (double)mla_bf16_to_float(q[c]) * rows[(size_t)t * d + c];
					s[t] = acc * a.softmax_scale;
					m = s[t] > m ? s[t] : m;
				}
				for (int t = 0; t < n; t++)
					l += exp(s[t] - m);
				ref_lse = n ? m + log(l) : INFINITY;
				if (n && k->sink)
					f = isinf(sink[h]) && sink[h] > 0 ? 0.0 : 1.0 / (1.0 + exp(sink[h] - ref_lse));
				if (!(n ? fabs(lse - ref_lse) <= 1e-5 + fabs(ref_lse) / 8192 : isinf(lse) && lse > 0)) {
					if (fails++ < 5)
						printf("     b %d i %d h %d: lse %.9g, want %.9g\n", b, i, h, lse, ref_lse);
				}
				for (int t = 0; t < n; t++)
					p[t] = exp(s[t] - ref_lse) * f;
				for (int c = 0; c < MLA_D_V; c++) {
					double ref = 0, mag = 0, got = mla_bf16_to_float(o[c]), err;

					for (int t = 0; t < n; t++) {
						ref += p[t] * rows[(size_t)t * d + c];
						mag += p[t] * fabs(rows[(size_t)t * d + c]);
					}
					err = fabs(got - ref);
					if (!(err <= ldexp(mag + fabs(ref), -8) + 1e-6) || (!n && got != 0.0)) {
						if (fails++ < 5)
							printf("     b %d i %d h %d dim %d: out %.6g, want %.6g\n", b, i,
							       h, c, got, ref);
					}
					max_err = err > max_err ? err : max_err;
				}
			}
		}

	/* the same launch captured in a graph and replayed: bit-identical outputs (GPU plugins) */
	if (host)
		goto done;
	buf_fill(a.out, 0, nout * 2);
	buf_fill(a.lse, 0, nlse * 4);
	CK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
	rc = impl->launch(&a, NULL);
	CK(cudaStreamEndCapture(stream, &graph));
	if (rc != MLA_OK) {
		printf("FAIL %s: launch under capture returned %d\n", k->name, rc);
		return 1;
	}
	CK(cudaGraphInstantiate(&exec, graph, 0));
	CK(cudaGraphLaunch(exec, stream));
	CK(cudaStreamSynchronize(stream));
	buf_get(hout2, a.out, nout * 2);
	buf_get(hlse2, a.lse, nlse * 4);
	if (memcmp(hout, hout2, nout * 2) || memcmp(hlse, hlse2, nlse * 4)) {
		printf("     graph replay: outputs differ from the direct launch\n");
		fails++;
	}
	cudaGraphExecDestroy(exec);
	cudaGraphDestroy(graph);
done:

	printf("%s %s (max |out err| %.3g)\n", fails ? "FAIL" : "ok  ", k->name, max_err);
	buf_free(a.q);
	buf_free(a.kv_cache);
	buf_free(a.indices);
	buf_free(a.topk_length);
	buf_free(a.attn_sink);
	buf_free(a.extra_kv_cache);
	buf_free(a.extra_indices);
	buf_free(a.extra_topk_length);
	buf_free(a.out);
	buf_free(a.lse);
	buf_free(a.workspace);
	free(hq);
	free(hout);
	free(hout2);
	free(hlse);
	free(hlse2);
	free(sink);
	free(idx);
	free(eidx);
	free(lens);
	free(elens);
	free(used);
	free(eused);
	free(rows);
	free(s);
	free(p);
	free(kv.bytes);
	if (k->extra_topk)
		free(ekv.bytes);
	return fails != 0;
}

int main(int argc, char **argv)
{
	void *lib;
	mla_decode_plugin_fn entry;
	int failed = 0;

	if (argc != 2) {
		fprintf(stderr, "usage: flashmla_sparse_smoke PLUGIN.so\n");
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		fprintf(stderr, "flashmla_sparse_smoke: %s\n", dlerror());
		return 1;
	}
	entry = (mla_decode_plugin_fn)dlsym(lib, MLA_DECODE_PLUGIN_SYMBOL);
	impl = entry ? entry() : NULL;
	if (!impl || impl->abi_version != MLA_DECODE_ABI_VERSION || !impl->supports) {
		fprintf(stderr, "flashmla_sparse_smoke: '%s' is no ABI %d plugin with supports()\n", argv[1],
			MLA_DECODE_ABI_VERSION);
		return 1;
	}
	host = !strcmp(impl->backend, "cpu");
	if (host) {
		num_sms = 2;
	} else {
		CK(cudaDeviceGetAttribute(&num_sms, cudaDevAttrMultiProcessorCount, 0));
		CK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
	}
	printf("%s (%s), %d SMs\n", impl->name, impl->summary, num_sms);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		failed += run_case(&cases[i]);
	printf("%d passed, %d failed\n", (int)(sizeof(cases) / sizeof(cases[0])) - failed, failed);
	return failed != 0;
}
