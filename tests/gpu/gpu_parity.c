/*
 * gpu_parity.c - parity of hip.baseline and every hip.flash config of the device's arch against
 * the double-precision oracle (oracles/mla_decode_ref.c) on the edge cases of MLA decode, plus a
 * small development benchmark (--bench). GPU build only; exits 77 (skipped) when no GPU is present.
 *
 * Per case and config: out and lse poisoned (0xFF: NaN), launch, compare with the reference
 * (out: atol 8e-4 (8e-3 on the sparse cases, whose values are 10x the dense sets') or rtol 2.01/128
 * per element and 1 - cos <= 5e-6; lse: atol 1e-5 or rtol 8.01/65536; non-finite masks equal); a
 * second launch into other poisoned buffers must be bit-identical; inputs must be unchanged (a
 * sparse pipelined config's out and lse must also equal its num_stages 1 twin's). For hip.flash,
 * one case per config is also captured in a
 * graph, replayed, then seqlens and block_table are changed in place and the replay must match
 * the new reference (capture safety). A config whose first launch declines a case (MLA_EUNSUPPORTED:
 * hip.flash's one-tile config past 64 keys of block table) is listed SKIP there, and not captured.
 *
 *   gpu_parity [--impl NAME] [--config NAME] [--case SUBSTR] [--no-big] [--seed N]
 *   gpu_parity --bench [--graph] [--impl NAME] [--config NAME[,NAME...]] [--case SUBSTR] [--samples N]
 * (--graph: each sample is the replay of a graph holding the launch, as the harness's graph_replay
 * times it, so host launch costs count for nobody; without it the launch itself is timed)
 * (--bench shapes: the headline shapes, bf16 and fp8, h_q 128 at b 64/128 and 4K-32K keys; small
 * ragged ones of at most 512 keys, like the standard tier's latency-bound tasks; and tiny tasks: one
 * sequence of length 1, empty sequences)
 */
#include "device.h"
#include "codec.h"
#include "vs_error.h"
#include "mla_decode.h"
#include "mla_numeric.h"
#include "mla_decode_ref.h"
#include "../../kernels/hip/hip_testutil.h"
#include "../../kernels/hip/sparse_decode.h"

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_CFG 64
#define SENTINEL 0x40000000

static const double OUT_ATOL = 8e-4, OUT_RTOL = 2.01 / 128, OUT_COS = 5e-6;
static const double LSE_ATOL = 1e-5, LSE_RTOL = 8.01 / 65536;

struct opts {
	const char *impl;
	const char *config;
	const char *case_filter;
	int bench;
	int graph; /* --graph: a bench sample is the replay of a graph holding the launch (the harness's graph_replay) */
	int big;
	int samples;
	uint64_t seed;
};

static struct opts opt = { NULL, NULL, NULL, 0, 0, 1, 15, 20240611 };
static struct vs_device dev;
static int threads = 1;
static int failures;

/* --config: one name or a comma-separated list of names; every config when absent. */
static int config_selected(const char *name)
{
	size_t n = strlen(name);

	for (const char *p = opt.config; p && *p;) {
		const char *e = strchr(p, ',');
		size_t len = e ? (size_t)(e - p) : strlen(p);

		if (len == n && !strncmp(p, name, n))
			return 1;
		p = e ? e + 1 : NULL;
	}
	return !opt.config;
}

/* ---------------------------------------------------------------- inputs */

static uint64_t splitmix(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Element idx of stream s: N(0,1)/10 clamped to [-1, 1] (Box-Muller on two counter draws). */
static float gauss10(uint64_t seed, uint64_t s, uint64_t idx)
{
	uint64_t h1 = splitmix(seed ^ splitmix(s * 0x100000001b3ull + 2 * idx));
	uint64_t h2 = splitmix(seed ^ splitmix(s * 0x100000001b3ull + 2 * idx + 1));
	double u1 = ((double)(h1 >> 11) + 0.5) / 9007199254740992.0;
	double u2 = (double)(h2 >> 11) / 9007199254740992.0;
	double z = sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2) / 10.0;

	return (float)(z > 1.0 ? 1.0 : z < -1.0 ? -1.0 : z);
}

struct pcase {
	const char *name;
	int batch, s_q, h_q, page_size, kv_dtype;
	int lens[48];
	int big; /* cache larger than 2^32 bytes, visible pages at byte offsets past 2^32 */
	int nan80; /* visible NaN (fp8: 0x80 codes), in rows of sequences 1 (V dims) and 2 (rope dims) */
	int tight; /* block table as wide as the longest sequence (no sentinel column): hip.flash's
		      one-tile config runs the case when that is at most 64 keys, and declines the others */
};

struct inputs {
	struct mla_decode_args a;    /* host view for the oracle (compact cache) */
	uint16_t *q;
	uint8_t *cache;              /* compact host cache: pages_used + spare pages */
	int32_t *bt_host;            /* block table into the compact cache */
	int32_t *bt_dev;             /* block table as on the device (big: shifted page indices) */
	int32_t *seqlens;
	int num_pages_dev;
	int page_shift;              /* device page index = compact index + page_shift */
	size_t page_bytes;
	float kv_scale;
};

static void inputs_free(struct inputs *in)
{
	free(in->q);
	free(in->cache);
	free(in->bt_host);
	free(in->bt_dev);
	free(in->seqlens);
	memset(in, 0, sizeof(*in));
}

static int inputs_make(struct inputs *in, const struct pcase *c, uint64_t seed)
{
	size_t elem = mla_kv_elem_size(c->kv_dtype);
	int max_pages = 1, used = 0, spare = 3;
	int *perm;
	float *vals;
	size_t rows;

	memset(in, 0, sizeof(*in));
	for (int b = 0; b < c->batch; b++) {
		int np = (c->lens[b] + c->page_size - 1) / c->page_size;

		/* one unused column, a sentinel (none in a tight case) */
		max_pages = np + !c->tight > max_pages ? np + !c->tight : max_pages;
		used += np;
	}
	in->page_bytes = (size_t)c->page_size * MLA_D_QK * elem;
	rows = (size_t)(used + spare) * c->page_size;
	in->q = malloc((size_t)c->batch * c->s_q * c->h_q * MLA_D_QK * 2);
	in->cache = malloc(rows * MLA_D_QK * elem);
	in->bt_host = malloc((size_t)c->batch * max_pages * 4);
	in->bt_dev = malloc((size_t)c->batch * max_pages * 4);
	in->seqlens = malloc((size_t)c->batch * 4);
	perm = malloc((size_t)(used + spare) * sizeof(int));
	vals = malloc(rows * MLA_D_QK * sizeof(float));
	if (!in->q || !in->cache || !in->bt_host || !in->bt_dev || !in->seqlens || !perm || !vals)
		return vs_error(VS_ENOMEM, "out of host memory for case '%s'", c->name);

	for (size_t i = 0; i < (size_t)c->batch * c->s_q * c->h_q * MLA_D_QK; i++)
		in->q[i] = mla_float_to_bf16(gauss10(seed, 1, i));
	/* Random page permutation: sequence pages land anywhere in the cache. */
	for (int i = 0; i < used + spare; i++)
		perm[i] = i;
	for (int i = used + spare - 1; i > 0; i--) {
		int j = (int)(splitmix(seed ^ (0xabcull + (uint64_t)i)) % (uint64_t)(i + 1));
		int t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
	/* Every slot NaN until written; visible rows N(0,1)/10. */
	for (size_t i = 0; i < rows * MLA_D_QK; i++)
		vals[i] = NAN;
	for (int b = 0, k = 0; b < c->batch; b++) {
		int np = (c->lens[b] + c->page_size - 1) / c->page_size;

		in->seqlens[b] = c->lens[b];
		for (int p = 0; p < max_pages; p++)
			in->bt_host[(size_t)b * max_pages + p] = p < np ? perm[k + p] : SENTINEL;
		for (int j = 0; j < c->lens[b]; j++) {
			size_t row = (size_t)perm[k + j / c->page_size] * c->page_size + (size_t)(j % c->page_size);

			for (int d = 0; d < MLA_D_QK; d++)
				vals[row * MLA_D_QK + d] = gauss10(seed, 2, row * MLA_D_QK + (size_t)d);
		}
		k += np;
	}
	if (c->kv_dtype == MLA_KV_BF16) {
		uint16_t *kv = (uint16_t *)in->cache;

		in->kv_scale = 1.f;
		for (size_t i = 0; i < rows * MLA_D_QK; i++)
			kv[i] = isnan(vals[i]) ? 0x7FC0 : mla_float_to_bf16(vals[i]);
	} else {
		float amax = 0.f;

		for (size_t i = 0; i < rows * MLA_D_QK; i++)
			if (!isnan(vals[i]) && fabsf(vals[i]) > amax)
				amax = fabsf(vals[i]);
		in->kv_scale = amax > 0.f ? amax / 240.f : 1.f;
		for (size_t i = 0; i < rows * MLA_D_QK; i++)
			in->cache[i] = isnan(vals[i]) ? 0x80 : vs_fp8_e4m3_fnuz_encode(vals[i] / in->kv_scale);
		/* The extreme and subnormal codes, in the first visible row of the first non-empty sequence. */
		for (int b = 0; b < c->batch; b++)
			if (c->lens[b] > 0) {
				static const uint8_t extremes[] = { 0x7F, 0xFF, 0x01, 0x81, 0x07, 0x87, 0x08, 0x88, 0x00 };
				size_t row = (size_t)in->bt_host[(size_t)b * max_pages] * c->page_size;

				for (size_t e = 0; e < sizeof(extremes); e++)
					in->cache[row * MLA_D_QK + 7 * e] = extremes[e];
				break;
			}
	}
	/*
	 * A visible NaN (fp8: the code 0x80) makes every row that sees its key NaN (out and lse), as in
	 * the oracle, and no other: at a sequence's last key with s_q > 1, rows of the earlier queries
	 * must stay finite.
	 */
	if (c->nan80) {
		/* sequence, key (or its last key when shorter), dim */
		static const int where[][3] = { { 1, 150, 5 }, { 2, 0, 570 } };

		for (int w = 0; w < 2; w++) {
			int b = where[w][0], j = b < c->batch && where[w][1] >= c->lens[b] ? c->lens[b] - 1 : where[w][1];

			if (b < c->batch && j >= 0 && j < c->lens[b]) {
				size_t row = (size_t)in->bt_host[(size_t)b * max_pages + j / c->page_size] * c->page_size +
					     (size_t)(j % c->page_size);

				if (c->kv_dtype == MLA_KV_BF16)
					((uint16_t *)in->cache)[row * MLA_D_QK + where[w][2]] = 0x7FC0;
				else
					in->cache[row * MLA_D_QK + where[w][2]] = 0x80;
			}
		}
	}
	/* Device placement: big caches put every page past the 2^32-byte mark. */
	in->num_pages_dev = used + spare;
	in->page_shift = 0;
	if (c->big) {
		uint64_t need = (5ull << 30) / in->page_bytes + 1; /* 5 GiB of pages */

		in->num_pages_dev = (int)need + used + spare;
		in->page_shift = (int)need;
	}
	for (size_t i = 0; i < (size_t)c->batch * max_pages; i++)
		in->bt_dev[i] = in->bt_host[i] == SENTINEL ? SENTINEL : in->bt_host[i] + in->page_shift;

	memset(&in->a, 0, sizeof(in->a));
	in->a.q = in->q;
	in->a.kv_cache = in->cache;
	in->a.block_table = in->bt_host;
	in->a.seqlens = in->seqlens;
	in->a.batch = c->batch;
	in->a.s_q = c->s_q;
	in->a.h_q = c->h_q;
	in->a.num_pages = used + spare;
	in->a.page_size = c->page_size;
	in->a.max_pages = max_pages;
	in->a.kv_dtype = c->kv_dtype;
	in->a.softmax_scale = 0.1352f;
	in->a.kv_scale = in->kv_scale;
	free(perm);
	free(vals);
	return 0;
}

/* ---------------------------------------------------------------- comparison */

struct verdict {
	int ok;
	char why[512];
};

static void fail(struct verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void fail(struct verdict *v, const char *fmt, ...)
{
	va_list ap;

	if (!v->ok)
		return; /* keep the first reason */
	v->ok = 0;
	va_start(ap, fmt);
	vsnprintf(v->why, sizeof(v->why), fmt, ap);
	va_end(ap);
}

/*
 * vscale: the case's value scale over the dense sets' (N(0,1)/10, clipped), which the out atol is
 * multiplied by, as harness/measure.c scales a task's atol by its set's value scale: 1 for the
 * dense cases, 10 for the sparse ones (their cache values are N(0,1) or e4m3 codes under 2 times a
 * scale of at most 1; with |v| near 1, the bf16 rounding of P (2^-9 relative, FlashMLA's too) alone
 * allows errors near 2e-3 on outputs near 0, where the rtol does not reach)
 */
static void compare(struct verdict *v, const struct mla_decode_args *a, const uint16_t *out, const float *lse,
		    const float *ref_out, const float *ref_lse, double vscale)
{
	const double out_atol = OUT_ATOL * vscale;

	size_t n_out = (size_t)a->batch * a->s_q * a->h_q * MLA_D_V;
	size_t n_lse = (size_t)a->batch * a->h_q * a->s_q;
	double sxy = 0.0, sxx = 0.0, worst = -1.0;
	size_t bad = 0, worst_i = 0;

	for (size_t i = 0; i < n_out; i++) {
		double x = mla_bf16_to_float(out[i]), r = ref_out[i], err = fabs(x - r);
		int pass = isnan(r) ? isnan(x) : isfinite(x) && (err <= out_atol || err <= OUT_RTOL * fabs(r));

		if (!pass) {
			bad++;
			if (!isfinite(x) || err > worst) {
				worst = isfinite(x) ? err : INFINITY;
				worst_i = i;
			}
		}
		if (isnan(r))
			continue; /* a NaN expected (visible NaN code) and got: outside the cosine */
		sxy += x * r;
		sxx += x * x + r * r;
	}
	if (bad) {
		size_t d = worst_i % MLA_D_V, h = worst_i / MLA_D_V % a->h_q;
		size_t s = worst_i / MLA_D_V / a->h_q % a->s_q, b = worst_i / MLA_D_V / a->h_q / a->s_q;

		fail(v, "out: %zu of %zu elements out of tolerance; worst (b %zu, s %zu, h %zu, d %zu): expected %.6g, got %.6g",
		     bad, n_out, b, s, h, d, ref_out[worst_i], mla_bf16_to_float(out[worst_i]));
	}
	if (sxx > 0.0 && 1.0 - 2.0 * sxy / sxx > OUT_COS)
		fail(v, "out: cosine difference %.3g > %.3g", 1.0 - 2.0 * sxy / sxx, OUT_COS);
	bad = 0;
	for (size_t i = 0; i < n_lse; i++) {
		double x = lse[i], r = ref_lse[i];
		int pass = isnan(r) ? isnan(x)
			 : isinf(r) ? (isinf(x) && (x > 0) == (r > 0))
				    : isfinite(x) && (fabs(x - r) <= LSE_ATOL || fabs(x - r) <= LSE_RTOL * fabs(r));

		if (!pass && bad++ == 0) {
			size_t s = i % a->s_q, h = i / a->s_q % a->h_q, b = i / a->s_q / a->h_q;

			fail(v, "lse: (b %zu, h %zu, s %zu): expected %.8g, got %.8g", b, h, s, r, x);
		}
	}
}

/* ---------------------------------------------------------------- device buffers of a case */

struct dbufs {
	void *q, *cache, *bt, *seqlens;
	void *out[2], *lse[2], *ws;
	size_t ws_bytes, cache_bytes;
};

static void dbufs_free(struct dbufs *d)
{
	void *all[] = { d->q, d->cache, d->bt, d->seqlens, d->out[0], d->out[1], d->lse[0], d->lse[1], d->ws };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		dev.ops->free(&dev, all[i]);
	memset(d, 0, sizeof(*d));
}

static int dbufs_make(struct dbufs *d, const struct inputs *in, size_t ws_bytes)
{
	const struct mla_decode_args *a = &in->a;
	size_t nq = (size_t)a->batch * a->s_q * a->h_q * MLA_D_QK * 2;
	size_t no = (size_t)a->batch * a->s_q * a->h_q * MLA_D_V * 2;
	size_t nl = (size_t)a->batch * a->h_q * a->s_q * 4;
	size_t nbt = (size_t)a->batch * a->max_pages * 4;
	int nan_byte = a->kv_dtype == MLA_KV_BF16 ? 0xFF : 0x80;
	int rc;

	memset(d, 0, sizeof(*d));
	d->cache_bytes = (size_t)in->num_pages_dev * in->page_bytes;
	d->ws_bytes = ws_bytes;
	if ((rc = dev.ops->alloc(&dev, &d->q, nq)) || (rc = dev.ops->alloc(&dev, &d->cache, d->cache_bytes)) ||
	    (rc = dev.ops->alloc(&dev, &d->bt, nbt ? nbt : 4)) || (rc = dev.ops->alloc(&dev, &d->seqlens, a->batch * 4 + 4)) ||
	    (rc = dev.ops->alloc(&dev, &d->out[0], no + 4)) || (rc = dev.ops->alloc(&dev, &d->lse[0], nl + 4)) ||
	    (rc = dev.ops->alloc(&dev, &d->ws, ws_bytes ? ws_bytes : 256)) ||
	    (rc = dev.ops->alloc(&dev, &d->out[1], no + 4096)) || (rc = dev.ops->alloc(&dev, &d->lse[1], nl + 4096)))
		return rc;
	/* The second output pair sits at another, differently aligned address. */
	d->out[1] = (char *)d->out[1] + 2048;
	d->lse[1] = (char *)d->lse[1] + 1028;
	if ((rc = dev.ops->upload(&dev, d->q, in->q, nq)) || (rc = dev.ops->upload(&dev, d->bt, in->bt_dev, nbt)) ||
	    (rc = dev.ops->upload(&dev, d->seqlens, in->seqlens, a->batch * 4)))
		return rc;
	if ((rc = dev.ops->fill(&dev, d->cache, nan_byte, d->cache_bytes)))
		return rc;
	for (int p = 0; p < a->num_pages; p++)
		if ((rc = dev.ops->upload(&dev, (char *)d->cache + (size_t)(p + in->page_shift) * in->page_bytes,
					  in->cache + (size_t)p * in->page_bytes, in->page_bytes)))
			return rc;
	return dev.ops->synchronize(&dev);
}

static void dbufs_fix_free(struct dbufs *d)
{
	d->out[1] = (char *)d->out[1] - 2048;
	d->lse[1] = (char *)d->lse[1] - 1028;
	dbufs_free(d);
}

static struct mla_decode_args dev_args(const struct inputs *in, const struct dbufs *d, int which)
{
	struct mla_decode_args a = in->a;

	a.q = d->q;
	a.kv_cache = d->cache;
	a.block_table = d->bt;
	a.seqlens = d->seqlens;
	a.num_pages = in->num_pages_dev;
	a.out = d->out[which];
	a.lse = d->lse[which];
	a.workspace = d->ws;
	a.workspace_bytes = d->ws_bytes;
	a.num_cus = dev.info.compute_units;
	a.stream = dev.stream;
	return a;
}

/* Inputs on the device still equal to the host copies (for big caches: the pages written). */
static int inputs_unchanged(const struct inputs *in, const struct dbufs *d)
{
	const struct mla_decode_args *a = &in->a;
	size_t nq = (size_t)a->batch * a->s_q * a->h_q * MLA_D_QK * 2;
	size_t nbt = (size_t)a->batch * a->max_pages * 4;
	size_t nc = (size_t)a->num_pages * in->page_bytes;
	char *buf = malloc(nq > nc ? nq : nc);
	int same = 1;

	if (!buf)
		return 0;
	if (dev.ops->download(&dev, buf, d->q, nq) || memcmp(buf, in->q, nq))
		same = 0;
	if (same && (dev.ops->download(&dev, buf, d->bt, nbt) || memcmp(buf, in->bt_dev, nbt)))
		same = 0;
	if (same && (dev.ops->download(&dev, buf, d->seqlens, a->batch * 4) || memcmp(buf, in->seqlens, a->batch * 4)))
		same = 0;
	if (same && (dev.ops->download(&dev, buf, (char *)d->cache + (size_t)in->page_shift * in->page_bytes, nc) ||
		     memcmp(buf, in->cache, nc)))
		same = 0;
	free(buf);
	return same;
}

/* ---------------------------------------------------------------- one (case, impl, config) */

/* Poison the outputs, launch, synchronize; a launch answering MLA_EUNSUPPORTED sets *declined (if given). */
static int launch_poisoned(const struct mla_decode_impl *impl, const struct mla_decode_config *cfg,
			   struct mla_decode_args *a, const struct dbufs *d, int which, int *declined)
{
	size_t no = (size_t)a->batch * a->s_q * a->h_q * MLA_D_V * 2;
	size_t nl = (size_t)a->batch * a->h_q * a->s_q * 4;
	int rc;

	if ((rc = dev.ops->fill(&dev, d->out[which], 0xFF, no)) || (rc = dev.ops->fill(&dev, d->lse[which], 0xFF, nl)) ||
	    (rc = dev.ops->fill(&dev, d->ws, 0xFF, d->ws_bytes)))
		return rc;
	rc = impl->launch(a, cfg);
	if (rc == MLA_EUNSUPPORTED && declined) {
		*declined = 1;
		return 0;
	}
	if (rc != MLA_OK)
		return vs_error(VS_EDEVICE, "%s %s: launch returned %d", impl->name, cfg->name, rc);
	return dev.ops->synchronize(&dev);
}

/*
 * Parity of one config on one case; 1 when it ran, 0 when its first launch declined the case
 * (MLA_EUNSUPPORTED: listed SKIP, as the harness records it unsupported).
 */
static int check_config(const struct pcase *c, const struct inputs *in, struct dbufs *d,
			 const struct mla_decode_impl *impl, const struct mla_decode_config *cfg,
			 const float *ref_out, const float *ref_lse)
{
	struct mla_decode_args a0 = dev_args(in, d, 0), a1 = dev_args(in, d, 1);
	size_t no = (size_t)in->a.batch * in->a.s_q * in->a.h_q * MLA_D_V;
	size_t nl = (size_t)in->a.batch * in->a.h_q * in->a.s_q;
	uint16_t *out0 = malloc(no * 2 + 2), *out1 = malloc(no * 2 + 2);
	float *lse0 = malloc(nl * 4 + 4), *lse1 = malloc(nl * 4 + 4);
	struct verdict v = { 1, "" };
	size_t ws = impl->workspace_size(&a0, cfg);
	int declined = 0;

	if (!out0 || !out1 || !lse0 || !lse1) {
		fail(&v, "out of host memory");
		goto done;
	}
	if (ws > d->ws_bytes) {
		fail(&v, "workspace %zu > allocated %zu", ws, d->ws_bytes);
		goto done;
	}
	if (launch_poisoned(impl, cfg, &a0, d, 0, &declined)) {
		fail(&v, "launch failed: %s", vs_last_error());
		goto done;
	}
	if (declined) {
		printf("SKIP %-26s %-13s %-22s  declines these arguments (MLA_EUNSUPPORTED)\n", c->name, impl->name,
		       cfg->name);
		goto skip;
	}
	if (dev.ops->download(&dev, out0, d->out[0], no * 2) || dev.ops->download(&dev, lse0, d->lse[0], nl * 4)) {
		fail(&v, "launch failed: %s", vs_last_error());
		goto done;
	}
	compare(&v, &in->a, out0, lse0, ref_out, ref_lse, 1.0);
	if (launch_poisoned(impl, cfg, &a1, d, 1, NULL) || dev.ops->download(&dev, out1, d->out[1], no * 2) ||
	    dev.ops->download(&dev, lse1, d->lse[1], nl * 4)) {
		fail(&v, "second launch failed: %s", vs_last_error());
		goto done;
	}
	if (memcmp(out0, out1, no * 2) || memcmp(lse0, lse1, nl * 4))
		fail(&v, "second launch into other buffers is not bit-identical");
	if (!inputs_unchanged(in, d))
		fail(&v, "inputs changed on the device");
done:
	printf("%-4s %-26s %-13s %-22s%s%s\n", v.ok ? "PASS" : "FAIL", c->name, impl->name, cfg->name,
	       v.ok ? "" : "  ", v.ok ? "" : v.why);
	if (!v.ok)
		failures++;
skip:
	free(out0);
	free(out1);
	free(lse0);
	free(lse1);
	return !declined;
}

/*
 * Capture safety: capture one launch, replay, then shorten seqlens and swap the first two pages
 * of each sequence in block_table in place, replay, compare with the new reference.
 */
static void check_capture(const struct pcase *c, struct inputs *in, struct dbufs *d,
			  const struct mla_decode_impl *impl, const struct mla_decode_config *cfg,
			  const float *ref_out, const float *ref_lse)
{
	struct mla_decode_args a0 = dev_args(in, d, 0);
	size_t no = (size_t)in->a.batch * in->a.s_q * in->a.h_q * MLA_D_V;
	size_t nl = (size_t)in->a.batch * in->a.h_q * in->a.s_q;
	size_t nbt = (size_t)in->a.batch * in->a.max_pages;
	uint16_t *out = malloc(no * 2 + 2);
	float *lse = malloc(nl * 4 + 4), *ref2_out = malloc(no * 4 + 4), *ref2_lse = malloc(nl * 4 + 4);
	int32_t *old_len = malloc(in->a.batch * 4 + 4), *old_bt = malloc(nbt * 4 + 4), *old_btd = malloc(nbt * 4 + 4);
	struct verdict v = { 1, "" };
	void *graph = NULL;

	(void)c; /* the case is named by the caller's messages */
	if (!out || !lse || !ref2_out || !ref2_lse || !old_len || !old_bt || !old_btd) {
		fail(&v, "out of host memory");
		goto done;
	}
	memcpy(old_len, in->seqlens, in->a.batch * 4);
	memcpy(old_bt, in->bt_host, nbt * 4);
	memcpy(old_btd, in->bt_dev, nbt * 4);
	if (dev.ops->fill(&dev, d->out[0], 0xFF, no * 2) || dev.ops->synchronize(&dev) || dev.ops->graph_begin(&dev)) {
		fail(&v, "capture failed: %s", vs_last_error());
		goto done;
	}
	if (impl->launch(&a0, cfg) != MLA_OK) {
		dev.ops->graph_end(&dev, &graph);
		fail(&v, "launch under capture failed");
		goto done;
	}
	if (dev.ops->graph_end(&dev, &graph) || dev.ops->graph_launch(&dev, graph) || dev.ops->synchronize(&dev) ||
	    dev.ops->download(&dev, out, d->out[0], no * 2) || dev.ops->download(&dev, lse, d->lse[0], nl * 4)) {
		fail(&v, "graph replay failed: %s", vs_last_error());
		goto done;
	}
	compare(&v, &in->a, out, lse, ref_out, ref_lse, 1.0);
	/* New lengths and pages, in place. */
	for (int b = 0; b < in->a.batch; b++) {
		int32_t *row = in->bt_host + (size_t)b * in->a.max_pages, *rowd = in->bt_dev + (size_t)b * in->a.max_pages;
		int full = in->seqlens[b] / in->a.page_size;

		in->seqlens[b] = in->seqlens[b] * 2 / 3;
		if (full >= 2) {
			int32_t t = row[0], td = rowd[0];

			row[0] = row[1];
			row[1] = t;
			rowd[0] = rowd[1];
			rowd[1] = td;
		}
	}
	if (mla_decode_reference(&in->a, ref2_out, ref2_lse, threads) != MLA_OK) {
		fail(&v, "reference failed for the changed inputs");
		goto restore;
	}
	if (dev.ops->upload(&dev, d->seqlens, in->seqlens, in->a.batch * 4) ||
	    dev.ops->upload(&dev, d->bt, in->bt_dev, nbt * 4) || dev.ops->fill(&dev, d->out[0], 0xFF, no * 2) ||
	    dev.ops->fill(&dev, d->lse[0], 0xFF, nl * 4) || dev.ops->graph_launch(&dev, graph) ||
	    dev.ops->synchronize(&dev) || dev.ops->download(&dev, out, d->out[0], no * 2) ||
	    dev.ops->download(&dev, lse, d->lse[0], nl * 4)) {
		fail(&v, "replay after the change failed: %s", vs_last_error());
		goto restore;
	}
	compare(&v, &in->a, out, lse, ref2_out, ref2_lse, 1.0);
restore:
	memcpy(in->seqlens, old_len, in->a.batch * 4);
	memcpy(in->bt_host, old_bt, nbt * 4);
	memcpy(in->bt_dev, old_btd, nbt * 4);
	if (dev.ops->upload(&dev, d->seqlens, in->seqlens, in->a.batch * 4) || dev.ops->upload(&dev, d->bt, in->bt_dev, nbt * 4))
		fail(&v, "restoring inputs failed");
done:
	if (graph)
		dev.ops->graph_free(&dev, graph);
	printf("%-4s %-26s %-13s %-22s%s%s\n", v.ok ? "PASS" : "FAIL", "capture+replay", impl->name, cfg->name,
	       v.ok ? "" : "  ", v.ok ? "" : v.why);
	if (!v.ok)
		failures++;
	free(out);
	free(lse);
	free(ref2_out);
	free(ref2_lse);
	free(old_len);
	free(old_bt);
	free(old_btd);
}

/* ---------------------------------------------------------------- parity driver */

/* 40 lengths for the ragged cases: more sequences than a warp, runs of empty ones */
#define RAGGED40                                                                              \
	{ 0, 700, 1, 64, 65, 0, 0, 0, 513, 129, 900, 2, 63, 128, 0, 400, 33, 260, 1, 0,            \
	  777, 64, 0, 191, 320, 5, 640, 0, 0, 0, 0, 1000, 17, 256, 450, 3, 90, 0, 129, 600 }

static const struct pcase cases[] = {
	{ "lens-edge-h16-p64", 6, 1, 16, 64, MLA_KV_BF16, { 0, 1, 63, 64, 65, 257 }, 0, 0, 0 },
	{ "lens-edge-h16-p64-fp8", 6, 1, 16, 64, MLA_KV_FP8_E4M3_FNUZ, { 0, 1, 63, 64, 65, 257 }, 0, 0, 0 },
	{ "h64-sq2-p16", 5, 2, 64, 16, MLA_KV_BF16, { 1, 2, 65, 131, 200 }, 0, 0, 0 },
	{ "h128-sq1-p1", 4, 1, 128, 1, MLA_KV_BF16, { 0, 5, 129, 300 }, 0, 0, 0 },
	{ "h128-sq2-p64-fp8", 3, 2, 128, 64, MLA_KV_FP8_E4M3_FNUZ, { 1, 127, 389 }, 0, 0, 0 },
	{ "h20-sq2-p64-fp8", 4, 2, 20, 64, MLA_KV_FP8_E4M3_FNUZ, { 0, 1, 70, 1000 }, 0, 0, 0 },
	{ "h20-sq1-p16", 3, 1, 20, 16, MLA_KV_BF16, { 2, 33, 97 }, 0, 0, 0 },
	{ "h16-long-b1", 1, 1, 16, 64, MLA_KV_BF16, { 4099 }, 0, 0, 0 },
	{ "h128-long-b2-sq2", 2, 2, 128, 64, MLA_KV_BF16, { 2053, 600 }, 0, 0, 0 },
	{ "h32-sq1-p16-fp8", 3, 1, 32, 16, MLA_KV_FP8_E4M3_FNUZ, { 17, 64, 511 }, 0, 0, 0 },
	{ "big-offset-bf16", 2, 1, 64, 64, MLA_KV_BF16, { 300, 77 }, 1, 0, 0 },
	{ "big-offset-fp8", 2, 2, 16, 64, MLA_KV_FP8_E4M3_FNUZ, { 130, 64 }, 1, 0, 0 },
	{ "nan-code-h20-sq2-fp8", 3, 2, 20, 64, MLA_KV_FP8_E4M3_FNUZ, { 100, 300, 70 }, 0, 1, 0 },
	/* block tables of at most 64 keys: hip.flash's one-tile config (every other case it declines) */
	{ "onetile-h128-p64", 4, 1, 128, 64, MLA_KV_BF16, { 1, 64, 0, 33 }, 0, 0, 1 },
	{ "onetile-h7-sq3-p1", 5, 3, 7, 1, MLA_KV_BF16, { 0, 1, 2, 3, 64 }, 0, 0, 1 },
	{ "onetile-h16-sq2-p16-fp8", 4, 2, 16, 16, MLA_KV_FP8_E4M3_FNUZ, { 0, 1, 33, 48 }, 0, 0, 0 },
	{ "onetile-nan-h20-sq2-fp8", 3, 2, 20, 64, MLA_KV_FP8_E4M3_FNUZ, { 40, 64, 9 }, 0, 1, 1 },
	{ "onetile-empty-h128-sq2", 3, 2, 128, 64, MLA_KV_BF16, { 0, 0, 0 }, 0, 0, 1 },
	/* a NaN at a key three queries share and the first two cannot see (every tile kernel) */
	{ "masked-nan-h20-sq3-p16", 3, 3, 20, 16, MLA_KV_BF16, { 40, 130, 9 }, 0, 1, 0 },
	{ "masked-nan-h20-sq3-p16-fp8", 3, 3, 20, 16, MLA_KV_FP8_E4M3_FNUZ, { 40, 130, 9 }, 0, 1, 0 },
	/* the balanced schedule's scan over more than one warp of sequences */
	{ "ragged-b40-h128-sq2", 40, 2, 128, 64, MLA_KV_BF16,
	  RAGGED40, 0, 0, 0 },
	{ "ragged-b40-h16-p16-fp8", 40, 1, 16, 16, MLA_KV_FP8_E4M3_FNUZ,
	  RAGGED40, 0, 0, 0 },
};

/* NVIDIA: the decoder without the NaN code (0x80 -> -0) and the test that finds 0x80. */
static int fp8_probe_nonan(void)
{
	uint16_t got[256];
	uint32_t nan[128];
	int bad = 0, rc = mla_hip_test_fp8_decode_fast(got, nan);

	if (rc == MLA_EUNSUPPORTED)
		return 0;
	if (rc)
		return 1;
	for (int c = 0; c < 256; c++) {
		uint16_t want = c == 0x80 ? 0x8000 : mla_float_to_bf16(mla_fp8_e4m3_fnuz_to_float((uint8_t)c));

		if (got[c] != want && bad++ < 8)
			printf("fp8 decode (no NaN code): code 0x%02x -> 0x%04x, expected 0x%04x\n", c, got[c], want);
	}
	for (int t = 0; t < 128; t++) {
		int want = t >= 64 || t == 32;

		if ((nan[t] != 0) != want && bad++ < 8)
			printf("fp8 NaN-code test: word %d %s\n", t, want ? "missed 0x80" : "flagged without 0x80");
	}
	printf("%-4s fp8 decoder without the NaN code and the NaN-code test (%d wrong)\n", bad ? "FAIL" : "PASS", bad);
	return bad != 0;
}

/* A f16's value (host side, independent of the decoders under test). */
static float f16_value(uint16_t h)
{
	int e = (h >> 10) & 31, m = h & 1023;
	float v = e == 0 ? ldexpf((float)m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexpf((float)(m + 1024), e - 25);

	return h & 0x8000 ? -v : v;
}

/* NVIDIA: the f16 decoders of the warp kernel's fp8 path: 2^7 times the f16 is the code's value. */
static int fp8_probe_f16(void)
{
	static const char *what[5] = { "word, no NaN code", "word, exact", "pair low half, no NaN code",
				       "pair high half, no NaN code", "pair, exact" };
	uint16_t got[5 * 256];
	int bad = 0, rc = mla_hip_test_fp8_decode_f16(got);

	if (rc == MLA_EUNSUPPORTED)
		return 0;
	if (rc)
		return 1;
	for (int k = 0; k < 5; k++)
		for (int c = 0; c < 256; c++) {
			const int exact = k == 1 || k == 4;
			const uint16_t h = got[k * 256 + c];
			const float want = mla_fp8_e4m3_fnuz_to_float((uint8_t)c), v = 128.f * f16_value(h);
			int ok;

			if (c == 0x80)
				ok = exact ? v != v : h == 0x8000;
			else
				ok = v == want && (h & 0x8000) == (c & 0x80 ? 0x8000 : 0);
			if (!ok && bad++ < 8)
				printf("fp8 f16 decode (%s): code 0x%02x -> 0x%04x (%g), expected %g\n", what[k], c, h,
				       (double)v, (double)want);
		}
	printf("%-4s fp8 f16 decoders (2^-7 scale) on all 256 codes, 5 variants (%d wrong)\n", bad ? "FAIL" : "PASS", bad);
	return bad != 0;
}

static int fp8_probe(void)
{
	uint16_t got[256];
	int bad = 0;

	if (mla_hip_test_fp8_decode(got))
		return 1;
	for (int c = 0; c < 256; c++) {
		uint16_t want = mla_float_to_bf16(mla_fp8_e4m3_fnuz_to_float((uint8_t)c));
		int both_nan = (want & 0x7fff) > 0x7f80 && (got[c] & 0x7fff) > 0x7f80;

		if (got[c] != want && !both_nan) {
			if (bad++ < 8)
				printf("fp8 decode: code 0x%02x -> 0x%04x, expected 0x%04x\n", c, got[c], want);
		}
	}
	printf("%-4s fp8 fast decoder on all 256 codes (%d wrong)\n", bad ? "FAIL" : "PASS", bad);
	return (bad != 0) | fp8_probe_nonan() | fp8_probe_f16();
}

/* ---------------------------------------------------------------- the sparse form (issue 39) */

/*
 * Sparse cases (topk > 0, every format hip.flash reads): a cache of `pages` pages filled with 0xFF
 * (NaN in every format: bf16 0xFFFF, e4m3fn 0xFF, and for fnuz a NaN fp32 / e8m0 scale), then only
 * the rows a valid entry names get values: random non-NaN codes under 2, power-of-two scales 1/4 to
 * 1, N(0,1) bf16.
 * Indices: uniform rows, about 1 in 8 entries -1; topk_length (use_len) topk in batch 0, 0 in
 * batch 1, uniform elsewhere (entries past it keep indices to NaN rows); attn_sink N(0,1) with the
 * last head +inf and the one before -inf; an extra cache with its own pages and indices.
 */
struct scase {
	const char *name;
	int batch, s_q, h_q, kv_dtype, page_size, pages, topk, extra_topk, extra_page_size, use_len, sink;
};

static const struct scase scases[] = {
	{ "sparse-dsmla-b2-h64-sq2-k256", 2, 2, 64, MLA_KV_FP8_DS_MLA, 64, 16, 256, 0, 0, 1, 1 },
	{ "sparse-dsmla-b3-h128-k2048", 3, 1, 128, MLA_KV_FP8_DS_MLA, 64, 64, 2048, 0, 0, 0, 0 },
	{ "sparse-dsmla-b1-h16-p61-k100", 1, 1, 16, MLA_KV_FP8_DS_MLA, 61, 9, 100, 0, 0, 1, 1 },
	{ "sparse-dsmla-fnuz-b2-h32-sq2", 2, 2, 32, MLA_KV_FP8_DS_MLA_FNUZ, 64, 8, 192, 0, 0, 1, 1 },
	{ "sparse-model1-b2-h64-k128-x1024", 2, 1, 64, MLA_KV_FP8_MODEL1, 64, 16, 128, 1024, 64, 1, 1 },
	{ "sparse-model1-fnuz-b2-h20-x64", 2, 2, 20, MLA_KV_FP8_MODEL1_FNUZ, 69, 6, 64, 64, 16, 1, 1 },
	{ "sparse-bf16-b4-h16-k512", 4, 1, 16, MLA_KV_BF16, 64, 16, 512, 0, 0, 1, 0 },
	{ "sparse-dsmla-b128-h128-sq2-k2048", 128, 2, 128, MLA_KV_FP8_DS_MLA, 64, 512, 2048, 0, 0, 0, 1 },
};

struct sinputs {
	struct mla_decode_args a; /* host pointers */
	uint8_t *cache[2];
	size_t cache_bytes[2];
	int32_t *idx[2], *len[2];
	float *sink;
	uint16_t *q;
};

static void sinputs_free(struct sinputs *in)
{
	for (int c = 0; c < 2; c++) {
		free(in->cache[c]);
		free(in->idx[c]);
		free(in->len[c]);
	}
	free(in->sink);
	free(in->q);
	memset(in, 0, sizeof(*in));
}

/* A random bf16 of about N(0,1), clipped to +-10 (the dense cases' generator, times 10). */
static uint16_t sgauss_bf16(uint64_t seed, uint64_t s, uint64_t i)
{
	return mla_float_to_bf16(gauss10(seed, s, i) * 10.f);
}

/* Row r of cache c gets values (codes, scales, RoPE), in the layout of kv_dtype. */
static void sparse_fill_row(uint8_t *cache, int32_t kv_dtype, int page_size, int32_t r, uint64_t seed)
{
	size_t pb = mla_kv_page_bytes(kv_dtype, page_size);
	uint8_t *page = cache + (size_t)(r / page_size) * pb;
	int slot = r % page_size, fnuz = mla_kv_is_fnuz(kv_dtype);

	if (kv_dtype == MLA_KV_BF16) {
		for (int d = 0; d < MLA_D_QK; d++) {
			uint16_t v = sgauss_bf16(seed, 11, (uint64_t)r * MLA_D_QK + d);

			memcpy(page + (size_t)slot * 1152 + 2 * d, &v, 2);
		}
		return;
	}
	int model1 = mla_kv_is_model1(kv_dtype), ncodes = model1 ? 448 : 512;
	uint8_t *t = page + (size_t)slot * (model1 ? 576 : 656);

	for (int d = 0; d < ncodes; d++) {
		/* exponent field below 8: magnitudes under 2 (e4m3fn) or 1 (fnuz), never a NaN code */
		uint8_t c = (uint8_t)(splitmix(seed ^ ((uint64_t)r * 1024 + d)) & 0xbf);

		t[d] = fnuz && c == 0x80 ? 0x00 : c;
	}
	for (int k = 0; k < 64; k++) {
		uint16_t v = sgauss_bf16(seed, 12, (uint64_t)r * 64 + k);

		memcpy(t + ncodes + (model1 ? 0 : 16) + 2 * k, &v, 2);
	}
	if (model1) {
		for (int k = 0; k < 7; k++)
			page[(size_t)page_size * 576 + (size_t)slot * 8 + k] = (uint8_t)(127 - (splitmix(seed + r * 8 + k) % 3));
	} else {
		for (int k = 0; k < 4; k++) {
			float sc = ldexpf(1.f, -(int)(splitmix(seed + r * 4 + k) % 3));

			memcpy(t + 512 + 4 * k, &sc, 4);
		}
	}
}

static int sinputs_make(struct sinputs *in, const struct scase *c, uint64_t seed)
{
	struct mla_decode_args *a = &in->a;
	int d_qk = mla_kv_d_qk(c->kv_dtype);
	size_t rows = (size_t)c->batch * c->s_q;

	memset(in, 0, sizeof(*in));
	a->batch = c->batch;
	a->s_q = c->s_q;
	a->h_q = c->h_q;
	a->kv_dtype = c->kv_dtype;
	a->page_size = c->page_size;
	a->num_pages = c->pages;
	a->softmax_scale = 0.0416667f; /* 576^-0.5 */
	a->kv_scale = 1.f;
	a->topk = c->topk;
	a->extra_topk = c->extra_topk;
	a->extra_page_size = c->extra_topk ? c->extra_page_size : 0;
	a->extra_num_pages = c->extra_topk ? c->pages : 0;
	a->d_qk = d_qk;
	a->d_v = MLA_D_V;
	in->q = malloc(rows * c->h_q * d_qk * 2);
	if (!in->q)
		return -1;
	for (size_t i = 0; i < rows * c->h_q * d_qk; i++)
		in->q[i] = sgauss_bf16(seed, 1, i);
	for (int k = 0; k < (c->extra_topk ? 2 : 1); k++) {
		int ps = k ? c->extra_page_size : c->page_size, topk = k ? c->extra_topk : c->topk;
		int32_t nrows = c->pages * ps;

		in->cache_bytes[k] = (size_t)c->pages * mla_kv_page_bytes(c->kv_dtype, ps);
		in->cache[k] = malloc(in->cache_bytes[k]);
		in->idx[k] = malloc(rows * topk * 4);
		in->len[k] = malloc((size_t)c->batch * 4);
		if (!in->cache[k] || !in->idx[k] || !in->len[k])
			return -1;
		memset(in->cache[k], 0xFF, in->cache_bytes[k]);
		for (int b = 0; b < c->batch; b++) {
			uint64_t u = splitmix(seed + 100 * k + b);

			in->len[k][b] = b == 0 ? topk : b == 1 ? 0 : (int32_t)(u % (uint64_t)(topk + 1));
		}
		for (size_t ri = 0; ri < rows; ri++)
			for (int t = 0; t < topk; t++) {
				uint64_t u = splitmix(seed ^ (0x5151ull * (k + 1)) ^ (ri * 4096 + t));
				int32_t r = (u & 7) == 0 ? -1 : (int32_t)((u >> 8) % (uint64_t)nrows);

				in->idx[k][ri * topk + t] = r;
				if (r >= 0 && (!c->use_len || t < in->len[k][ri / c->s_q]))
					sparse_fill_row(in->cache[k], c->kv_dtype, ps, r, seed + 7 * k);
			}
	}
	if (c->sink) {
		in->sink = malloc(c->h_q * 4);
		if (!in->sink)
			return -1;
		for (int h = 0; h < c->h_q; h++)
			in->sink[h] = gauss10(seed, 9, h) * 10.f;
		if (c->h_q >= 4) {
			in->sink[c->h_q - 1] = INFINITY;
			in->sink[c->h_q - 2] = -INFINITY;
		}
	}
	a->q = in->q;
	a->kv_cache = in->cache[0];
	a->indices = in->idx[0];
	a->topk_length = c->use_len ? in->len[0] : NULL;
	a->attn_sink = in->sink;
	a->extra_kv_cache = in->cache[1];
	a->extra_indices = in->idx[1];
	a->extra_topk_length = c->use_len && c->extra_topk ? in->len[1] : NULL;
	return 0;
}

/* The config of cfgs named as cfgs[k] with -st1- and -st2- swapped, or -1. */
static int twin_config(const struct mla_decode_config *cfgs, int n, int k)
{
	char want[sizeof(cfgs[k].name)];
	size_t len = strnlen(cfgs[k].name, sizeof(want) - 1);
	char *at;

	memcpy(want, cfgs[k].name, len);
	want[len] = '\0';
	if ((at = strstr(want, "-st1-")))
		at[3] = '2';
	else if ((at = strstr(want, "-st2-")))
		at[3] = '1';
	else
		return -1;
	for (int j = 0; j < n && j < MAX_CFG; j++)
		if (j != k && !strcmp(cfgs[j].name, want))
			return j;
	return -1;
}

/* Every sparse case on every config of hip.flash that runs the sparse form, as check_config does. */
static int sparse_parity(void)
{
	const struct mla_decode_impl *impl = mla_decode_impl_find("hip.flash");

	if (opt.impl && strcmp(opt.impl, impl->name))
		return 0;
	for (size_t ci = 0; ci < sizeof(scases) / sizeof(scases[0]); ci++) {
		const struct scase *c = &scases[ci];
		struct mla_decode_config cfgs[MAX_CFG];
		void *saved_out[MAX_CFG] = { 0 }, *saved_lse[MAX_CFG] = { 0 };
		struct sinputs in;
		size_t rows = (size_t)c->batch * c->s_q, nq, no, nl, ws = 0, nidx[2];
		void *dq = NULL, *dc[2] = { NULL, NULL }, *di[2] = { NULL, NULL }, *dl[2] = { NULL, NULL }, *ds = NULL;
		void *dout = NULL, *dlse = NULL, *dws = NULL;
		uint16_t *out[2];
		float *lse[2], *ref_out, *ref_lse;
		int n = impl->configs(dev.info.arch, cfgs, MAX_CFG), rc = 0;

		if (opt.case_filter && !strstr(c->name, opt.case_filter))
			continue;
		if (sinputs_make(&in, c, opt.seed + 1000 + ci))
			return 2;
		nq = rows * c->h_q * in.a.d_qk * 2;
		no = rows * c->h_q * MLA_D_V * 2;
		nl = rows * c->h_q * 4;
		ref_out = malloc(no * 2);
		ref_lse = malloc(nl);
		out[0] = malloc(no);
		out[1] = malloc(no);
		lse[0] = malloc(nl);
		lse[1] = malloc(nl);
		if (!ref_out || !ref_lse || !out[0] || !out[1] || !lse[0] || !lse[1] ||
		    mla_decode_reference(&in.a, ref_out, ref_lse, threads) != MLA_OK) {
			fprintf(stderr, "sparse reference failed for '%s'\n", c->name);
			return 2;
		}
		for (int k = 0; k < n && k < MAX_CFG; k++) {
			size_t w = impl->workspace_size(&in.a, &cfgs[k]);

			ws = w > ws ? w : ws;
		}
		nidx[0] = rows * c->topk * 4;
		nidx[1] = rows * c->extra_topk * 4;
		rc = dev.ops->alloc(&dev, &dq, nq) || dev.ops->alloc(&dev, &dout, no) || dev.ops->alloc(&dev, &dlse, nl) ||
		     dev.ops->alloc(&dev, &dws, ws ? ws : 256) || dev.ops->upload(&dev, dq, in.q, nq);
		for (int k = 0; k < (c->extra_topk ? 2 : 1) && !rc; k++)
			rc = dev.ops->alloc(&dev, &dc[k], in.cache_bytes[k]) || dev.ops->alloc(&dev, &di[k], nidx[k]) ||
			     dev.ops->alloc(&dev, &dl[k], (size_t)c->batch * 4) ||
			     dev.ops->upload(&dev, dc[k], in.cache[k], in.cache_bytes[k]) ||
			     dev.ops->upload(&dev, di[k], in.idx[k], nidx[k]) ||
			     dev.ops->upload(&dev, dl[k], in.len[k], (size_t)c->batch * 4);
		if (!rc && in.sink)
			rc = dev.ops->alloc(&dev, &ds, c->h_q * 4) || dev.ops->upload(&dev, ds, in.sink, c->h_q * 4);
		if (rc || dev.ops->synchronize(&dev)) {
			fprintf(stderr, "sparse device buffers failed for '%s': %s\n", c->name, vs_last_error());
			return 2;
		}
		for (int k = 0; k < n && k < MAX_CFG; k++) {
			struct mla_decode_args a = in.a;
			struct verdict v = { 1, "" };
			int declined = 0, twin;

			if (!config_selected(cfgs[k].name))
				continue;
			a.q = dq;
			a.kv_cache = dc[0];
			a.indices = di[0];
			a.topk_length = in.a.topk_length ? dl[0] : NULL;
			a.extra_kv_cache = dc[1];
			a.extra_indices = di[1];
			a.extra_topk_length = in.a.extra_topk_length ? dl[1] : NULL;
			a.attn_sink = ds;
			a.out = dout;
			a.lse = dlse;
			a.workspace = dws;
			a.workspace_bytes = ws;
			a.num_cus = dev.info.compute_units;
			a.stream = dev.stream;
			for (int rep = 0; rep < 2 && v.ok; rep++) {
				struct dbufs d = { 0 };

				d.out[0] = dout;
				d.lse[0] = dlse;
				d.ws = dws;
				d.ws_bytes = ws;
				if (launch_poisoned(impl, &cfgs[k], &a, &d, 0, &declined) ||
				    (!declined && (dev.ops->download(&dev, out[rep], dout, no) ||
						   dev.ops->download(&dev, lse[rep], dlse, nl)))) {
					fprintf(stderr, "%s %s: %s\n", c->name, cfgs[k].name, vs_last_error());
					return 2;
				}
				if (declined)
					break;
				if (rep == 0)
					compare(&v, &in.a, out[0], lse[0], ref_out, ref_lse, 10.0);
				else if (memcmp(out[0], out[1], no) || memcmp(lse[0], lse[1], nl))
					fail(&v, "a second launch is not bit-identical");
			}
			if (declined)
				continue; /* a dense config: it declines every sparse case */
			/*
			 * A pipelined config (-st2-) and its num_stages 1 twin share the tile math and decode
			 * bit-identically (sparse_decode_hw.h): their out and lse must be equal bits, which a
			 * tolerance would not see (a stale row, a shifted scale)
			 */
			if (v.ok && (twin = twin_config(cfgs, n, k)) >= 0 && saved_out[twin] &&
			    (memcmp(saved_out[twin], out[0], no) || memcmp(saved_lse[twin], lse[0], nl)))
				fail(&v, "out/lse differ from its num_stages twin %s's (bit-identical by design)",
				     cfgs[twin].name);
			if (v.ok && !saved_out[k] && (saved_out[k] = malloc(no)) && (saved_lse[k] = malloc(nl))) {
				memcpy(saved_out[k], out[0], no);
				memcpy(saved_lse[k], lse[0], nl);
			}
			printf("%s %-32s %-13s %-26s %s\n", v.ok ? "PASS" : "FAIL", c->name, impl->name, cfgs[k].name,
			       v.ok ? "" : v.why);
			failures += !v.ok;
		}
		for (int k = 0; k < MAX_CFG; k++) {
			free(saved_out[k]);
			free(saved_lse[k]);
			saved_out[k] = NULL;
			saved_lse[k] = NULL;
		}
		dev.ops->free(&dev, dq);
		dev.ops->free(&dev, dout);
		dev.ops->free(&dev, dlse);
		dev.ops->free(&dev, dws);
		dev.ops->free(&dev, ds);
		for (int k = 0; k < 2; k++) {
			dev.ops->free(&dev, dc[k]);
			dev.ops->free(&dev, di[k]);
			dev.ops->free(&dev, dl[k]);
		}
		free(ref_out);
		free(ref_lse);
		free(out[0]);
		free(out[1]);
		free(lse[0]);
		free(lse[1]);
		sinputs_free(&in);
		fflush(stdout);
	}
	return 0;
}

/*
 * The hardware fp8 decode of hip.flash's pipelined sparse kernels (sparse_decode_hw.h) against
 * sparse_decode.h's software decode (mla_sparse_code_to_bf16, what the num_stages 1 kernels and the
 * CPU tests use): every code of both kinds times powers of two from 2^-40 to 2^40, the e8m0 range's
 * ends, and non-power-of-two scales (one fp32 rounding of the product, then the bf16 one); equal
 * bits, or both NaN.
 */
static int sparse_decode_probe(void)
{
	float scales[96];
	uint16_t *got;
	int ns = 0, bad = 0, rc;

	for (int e = -40; e <= 40; e++)
		scales[ns++] = ldexpf(1.f, e);
	scales[ns++] = ldexpf(1.f, -127);
	scales[ns++] = ldexpf(1.f, 127);
	scales[ns++] = 0.0123456789f;
	scales[ns++] = 1.f / 3.f;
	scales[ns++] = 3.3e-3f;
	scales[ns++] = 7.77e5f;
	scales[ns++] = 1.0000001f;
	scales[ns++] = 2.5e-38f;
	got = malloc((size_t)2 * ns * 256 * sizeof(uint16_t));
	if (!got)
		return 1;
	rc = mla_hip_test_sparse_decode(scales, ns, got);
	if (rc) {
		free(got);
		return 1;
	}
	for (int fnuz = 0; fnuz < 2; fnuz++)
		for (int si = 0; si < ns; si++)
			for (int c = 0; c < 256; c++) {
				const uint16_t want = mla_sparse_code_to_bf16((uint8_t)c, scales[si], fnuz);
				const uint16_t g = got[((size_t)fnuz * ns + si) * 256 + c];
				const int both_nan = (want & 0x7fff) > 0x7f80 && (g & 0x7fff) > 0x7f80;

				if (g != want && !both_nan && bad++ < 8)
					printf("sparse fp8 decode: code 0x%02x fnuz %d scale %g -> 0x%04x, expected 0x%04x\n",
					       c, fnuz, (double)scales[si], g, want);
			}
	free(got);
	printf("%-4s sparse hardware fp8 decode on all 256 codes of both kinds x %d scales (%d wrong)\n",
	       bad ? "FAIL" : "PASS", ns, bad);
	return bad != 0;
}

static int parity(void)
{
	const char *impls[] = { "hip.baseline", "hip.flash" };

	if (fp8_probe())
		failures++;
	for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
		const struct pcase *c = &cases[ci];
		struct inputs in;
		struct dbufs d;
		float *ref_out, *ref_lse;
		size_t ws = 0;
		int captured = 0;

		if (opt.case_filter && !strstr(c->name, opt.case_filter))
			continue;
		if (c->big && !opt.big)
			continue;
		if (inputs_make(&in, c, opt.seed + ci))
			return 2;
		ref_out = malloc((size_t)c->batch * c->s_q * c->h_q * MLA_D_V * 4 + 4);
		ref_lse = malloc((size_t)c->batch * c->h_q * c->s_q * 4 + 4);
		if (!ref_out || !ref_lse || mla_decode_reference(&in.a, ref_out, ref_lse, threads) != MLA_OK) {
			fprintf(stderr, "reference failed for '%s'\n", c->name);
			return 2;
		}
		for (size_t ii = 0; ii < 2; ii++) {
			const struct mla_decode_impl *impl = mla_decode_impl_find(impls[ii]);
			struct mla_decode_config cfgs[MAX_CFG];
			int n = impl->configs(dev.info.arch, cfgs, MAX_CFG);
			struct mla_decode_args a = dev_args(&in, &(struct dbufs){ 0 }, 0);

			for (int k = 0; k < n && k < MAX_CFG; k++) {
				size_t w = impl->workspace_size(&a, &cfgs[k]);

				ws = w > ws ? w : ws;
			}
		}
		if (dbufs_make(&d, &in, ws)) {
			fprintf(stderr, "device buffers failed for '%s': %s\n", c->name, vs_last_error());
			return 2;
		}
		for (size_t ii = 0; ii < 2; ii++) {
			const struct mla_decode_impl *impl = mla_decode_impl_find(impls[ii]);
			struct mla_decode_config cfgs[MAX_CFG];
			int n;

			if (opt.impl && strcmp(opt.impl, impl->name))
				continue;
			n = impl->configs(dev.info.arch, cfgs, MAX_CFG);
			if (n < 0) {
				printf("SKIP %-26s %-13s no configs for arch '%s'\n", c->name, impl->name, dev.info.arch);
				continue;
			}
			for (int k = 0; k < n && k < MAX_CFG; k++) {
				if (!config_selected(cfgs[k].name))
					continue;
				if (check_config(c, &in, &d, impl, &cfgs[k], ref_out, ref_lse) && ii == 1 &&
				    (ci == 2 || ci == 5 || c->tight) && !c->big) {
					check_capture(c, &in, &d, impl, &cfgs[k], ref_out, ref_lse);
					captured = 1;
				}
			}
		}
		(void)captured;
		dbufs_fix_free(&d);
		inputs_free(&in);
		free(ref_out);
		free(ref_lse);
		fflush(stdout);
	}
	if ((!opt.case_filter || strstr("sparse-decode", opt.case_filter)) && sparse_decode_probe())
		failures++;
	if (sparse_parity())
		return 2;
	printf("parity: %d failure%s\n", failures, failures == 1 ? "" : "s");
	return failures ? 1 : 0;
}

/* ---------------------------------------------------------------- development benchmark */

struct bshape {
	const char *name;
	int batch, h_q, s_q, seqlen, kv_dtype;
	int ragged; /* lengths drawn uniformly from [0, seqlen] (fixed seed) instead of all seqlen */
};

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return a < b ? -1 : a > b;
}

static double max_abs_diff(const uint16_t *x, const uint16_t *y, size_t n)
{
	double m = 0.0;

	for (size_t i = 0; i < n; i++) {
		double d = fabs((double)mla_bf16_to_float(x[i]) - (double)mla_bf16_to_float(y[i]));

		if (!(d <= m))
			m = d; /* NaN wins */
	}
	return m;
}

static int bench_one(const struct bshape *s)
{
	const int page = 64;
	size_t elem = mla_kv_elem_size(s->kv_dtype);
	int pages_per_seq = s->seqlen > 0 ? (s->seqlen + page - 1) / page : 1; /* 1: a block table for empty rows */
	int num_pages = pages_per_seq * s->batch;
	size_t nq = (size_t)s->batch * s->s_q * s->h_q * MLA_D_QK;
	size_t no = (size_t)s->batch * s->s_q * s->h_q * MLA_D_V;
	size_t nl = (size_t)s->batch * s->h_q * s->s_q;
	size_t cache_bytes = (size_t)num_pages * page * MLA_D_QK * elem;
	double sum_len = 0.0, flops, bytes;
	int32_t *bt = malloc((size_t)num_pages * 4), *lens = malloc((size_t)s->batch * 4);
	uint16_t *ref = malloc(no * 2), *got = malloc(no * 2);
	void *q = NULL, *cache = NULL, *dbt = NULL, *dlen = NULL, *out = NULL, *lse = NULL, *ws = NULL;
	size_t ws_bytes = 0;
	struct mla_decode_args a;
	const char *impls[] = { "hip.baseline", "hip.flash" };
	int have_ref = 0;

	if (!bt || !lens || !ref || !got)
		return vs_error(VS_ENOMEM, "out of host memory");
	for (int i = 0; i < num_pages; i++)
		bt[i] = i;
	for (int i = num_pages - 1; i > 0; i--) {
		int j = (int)(splitmix(opt.seed + (uint64_t)i) % (uint64_t)(i + 1)), t = bt[i];

		bt[i] = bt[j];
		bt[j] = t;
	}
	for (int b = 0; b < s->batch; b++) {
		lens[b] = s->ragged ? (int)((uint64_t)s->seqlen * (splitmix(1000003 + (uint64_t)b) % 1001) / 1000)
				    : s->seqlen;
		sum_len += lens[b];
	}
	flops = 2.0 * s->s_q * s->h_q * sum_len * (MLA_D_QK + MLA_D_V);
	bytes = sum_len * MLA_D_QK * elem + nq * 2.0 + no * 2.0;
	memset(&a, 0, sizeof(a));
	a.batch = s->batch;
	a.s_q = s->s_q;
	a.h_q = s->h_q;
	a.num_pages = num_pages;
	a.page_size = page;
	a.max_pages = pages_per_seq;
	a.kv_dtype = s->kv_dtype;
	a.softmax_scale = 0.1352f;
	a.kv_scale = s->kv_dtype == MLA_KV_BF16 ? 1.f : 1.f / 64;
	a.num_cus = dev.info.compute_units;
	a.stream = dev.stream;
	{
		const struct mla_decode_impl *f = mla_decode_impl_find("hip.flash");
		struct mla_decode_config cfgs[MAX_CFG];
		int n = f->configs(dev.info.arch, cfgs, MAX_CFG);

		for (int k = 0; k < n && k < MAX_CFG; k++) {
			size_t w = f->workspace_size(&a, &cfgs[k]);

			ws_bytes = w > ws_bytes ? w : ws_bytes;
		}
	}
	if (dev.ops->alloc(&dev, &q, nq * 2) || dev.ops->alloc(&dev, &cache, cache_bytes) ||
	    dev.ops->alloc(&dev, &dbt, (size_t)num_pages * 4) || dev.ops->alloc(&dev, &dlen, (size_t)s->batch * 4) ||
	    dev.ops->alloc(&dev, &out, no * 2) || dev.ops->alloc(&dev, &lse, nl * 4) ||
	    dev.ops->alloc(&dev, &ws, ws_bytes ? ws_bytes : 256))
		goto done;
	if (mla_hip_test_fill(q, nq, MLA_HIP_FILL_BF16, opt.seed, 1.f, dev.stream) ||
	    mla_hip_test_fill(cache, (size_t)num_pages * page * MLA_D_QK,
			      s->kv_dtype == MLA_KV_BF16 ? MLA_HIP_FILL_BF16 : MLA_HIP_FILL_FP8, opt.seed + 1, 1.f,
			      dev.stream) ||
	    dev.ops->upload(&dev, dbt, bt, (size_t)num_pages * 4) || dev.ops->upload(&dev, dlen, lens, (size_t)s->batch * 4))
		goto done;
	a.q = q;
	a.kv_cache = cache;
	a.block_table = dbt;
	a.seqlens = dlen;
	a.out = out;
	a.lse = lse;
	a.workspace = ws;
	a.workspace_bytes = ws_bytes;
	printf("\n%s: b %d, h_q %d, s_q %d, seqlen %s%d, %s, page %d (%.2f GB KV, %.1f GFLOP)%s\n", s->name, s->batch,
	       s->h_q, s->s_q, s->ragged ? "<= " : "", s->seqlen, mla_kv_dtype_name(s->kv_dtype), page,
	       sum_len * MLA_D_QK * elem / 1e9, flops / 1e9, opt.graph ? ", graph replay" : "");
	for (size_t ii = 0; ii < 2; ii++) {
		const struct mla_decode_impl *impl = mla_decode_impl_find(impls[ii]);
		struct mla_decode_config cfgs[MAX_CFG];
		int n = impl->configs(dev.info.arch, cfgs, MAX_CFG);

		if (opt.impl && strcmp(opt.impl, impl->name) && ii == 1)
			continue;
		for (int k = 0; k < n && k < MAX_CFG; k++) {
			int samples = ii == 0 ? 3 : opt.samples;
			double t[256], diff = 0.0;
			int rc = 0;

			if (ii == 1 && !config_selected(cfgs[k].name))
				continue;
			/* Warm-up and a correctness look against hip.baseline's output. */
			for (int w = 0; w < (ii == 0 ? 1 : 3) && !rc; w++)
				rc = impl->launch(&a, &cfgs[k]);
			if (rc == MLA_EUNSUPPORTED) {
				printf("  %-13s %-22s declines this shape (MLA_EUNSUPPORTED)\n", impl->name, cfgs[k].name);
				continue;
			}
			if (rc || dev.ops->synchronize(&dev)) {
				printf("  %-13s %-22s launch failed (%d): %s\n", impl->name, cfgs[k].name, rc, vs_last_error());
				continue;
			}
			if (dev.ops->download(&dev, ii == 0 ? ref : got, out, no * 2))
				goto done;
			if (ii == 0)
				have_ref = 1;
			else if (have_ref)
				diff = max_abs_diff(ref, got, no);
			void *graph = NULL;

			if (opt.graph) {
				int lrc;

				if (dev.ops->synchronize(&dev) || dev.ops->graph_begin(&dev))
					goto done;
				lrc = impl->launch(&a, &cfgs[k]);
				if (dev.ops->graph_end(&dev, &graph) || lrc != MLA_OK || dev.ops->graph_launch(&dev, graph) ||
				    dev.ops->synchronize(&dev)) {
					printf("  %-13s %-22s capture failed (%d)\n", impl->name, cfgs[k].name, lrc);
					if (graph)
						dev.ops->graph_free(&dev, graph);
					continue;
				}
			}
			for (int i = 0; i < samples && i < 256; i++) {
				if (dev.ops->fill(&dev, out, 0xFF, no * 2) || dev.ops->fill(&dev, lse, 0xFF, nl * 4) ||
				    dev.ops->fill(&dev, ws, 0xFF, ws_bytes) || dev.ops->flush_llc(&dev) ||
				    dev.ops->timer_begin(&dev) ||
				    (graph ? dev.ops->graph_launch(&dev, graph) : impl->launch(&a, &cfgs[k])) != 0 ||
				    dev.ops->timer_end(&dev, &t[i])) {
					if (graph)
						dev.ops->graph_free(&dev, graph);
					goto done;
				}
			}
			if (graph)
				dev.ops->graph_free(&dev, graph);
			qsort(t, samples, sizeof(double), cmp_double);
			printf("  %-13s %-22s median %9.4f ms  p10 %9.4f  p90 %9.4f  %7.1f TFLOPS  %6.3f TB/s%s",
			       impl->name, cfgs[k].name, t[samples / 2], t[samples / 10], t[samples * 9 / 10],
			       flops / (t[samples / 2] * 1e-3) / 1e12, bytes / (t[samples / 2] * 1e-3) / 1e12,
			       ii == 1 && have_ref ? "" : "\n");
			if (ii == 1 && have_ref)
				printf("  max|diff vs baseline| %.2e\n", diff);
			fflush(stdout);
		}
	}
done:
	dev.ops->free(&dev, q);
	dev.ops->free(&dev, cache);
	dev.ops->free(&dev, dbt);
	dev.ops->free(&dev, dlen);
	dev.ops->free(&dev, out);
	dev.ops->free(&dev, lse);
	dev.ops->free(&dev, ws);
	free(bt);
	free(lens);
	free(ref);
	free(got);
	return 0;
}

static int bench(void)
{
	static const struct bshape shapes[] = {
		{ "compute-bound", 128, 128, 1, 8192, MLA_KV_BF16, 0 },
		{ "memory-bound", 128, 16, 1, 32768, MLA_KV_BF16, 0 },
		{ "memory-bound-fp8", 128, 16, 1, 32768, MLA_KV_FP8_E4M3_FNUZ, 0 },
		{ "compute-bound-fp8", 128, 128, 1, 8192, MLA_KV_FP8_E4M3_FNUZ, 0 },
		{ "sq2-h16-b128-32k", 128, 16, 2, 32768, MLA_KV_BF16, 0 },
		{ "sq2-h16-b128-32k-fp8", 128, 16, 2, 32768, MLA_KV_FP8_E4M3_FNUZ, 0 },
		{ "h128-b64-8k", 64, 128, 1, 8192, MLA_KV_BF16, 0 },
		{ "h128-b128-4k", 128, 128, 1, 4096, MLA_KV_BF16, 0 },
		{ "h128-b64-32k", 64, 128, 1, 32768, MLA_KV_BF16, 0 },
		{ "tiny-h128-len1", 1, 128, 1, 1, MLA_KV_BF16, 0 },
		{ "tiny-empty-h16-sq2", 3, 16, 2, 0, MLA_KV_BF16, 0 },
		{ "tiny-empty-h128-sq2", 3, 128, 2, 0, MLA_KV_BF16, 0 },
		{ "tiny-h128-len1-fp8", 1, 128, 1, 1, MLA_KV_FP8_E4M3_FNUZ, 0 },
		{ "tiny-empty-h16-sq2-fp8", 3, 16, 2, 0, MLA_KV_FP8_E4M3_FNUZ, 0 },
		{ "tiny-empty-h128-sq2-fp8", 3, 128, 2, 0, MLA_KV_FP8_E4M3_FNUZ, 0 },
		{ "small-h32-b4-512", 4, 32, 1, 512, MLA_KV_BF16, 1 },
		{ "small-h32-b4-512-fp8", 4, 32, 1, 512, MLA_KV_FP8_E4M3_FNUZ, 1 },
		{ "small-h7-b3-sq2-512-fp8", 3, 7, 2, 512, MLA_KV_FP8_E4M3_FNUZ, 1 },
		{ "mid-h32-b4-1k-fp8", 4, 32, 1, 1024, MLA_KV_FP8_E4M3_FNUZ, 1 },
		{ "mid-h32-b4-2k-fp8", 4, 32, 1, 2048, MLA_KV_FP8_E4M3_FNUZ, 1 },
		{ "mid-h32-b4-4k-fp8", 4, 32, 1, 4096, MLA_KV_FP8_E4M3_FNUZ, 1 },
		{ "mid-h64-b4-sq2-2k-fp8", 4, 64, 2, 2048, MLA_KV_FP8_E4M3_FNUZ, 1 },
		{ "ragged-h128-b32-sq2-4k", 32, 128, 2, 4096, MLA_KV_BF16, 1 },
		{ "ragged-h128-b32-sq2-4k-fp8", 32, 128, 2, 4096, MLA_KV_FP8_E4M3_FNUZ, 1 },
		{ "ragged-h128-b8-8k", 8, 128, 1, 8192, MLA_KV_BF16, 1 },
		{ "ragged-h16-b64-16k", 64, 16, 1, 16384, MLA_KV_BF16, 1 },
		{ "ragged-h16-b64-16k-fp8", 64, 16, 1, 16384, MLA_KV_FP8_E4M3_FNUZ, 1 },
	};

	for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++)
		if (!opt.case_filter || strstr(shapes[i].name, opt.case_filter))
			bench_one(&shapes[i]);
	return 0;
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
	int rc;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--bench"))
			opt.bench = 1;
		else if (!strcmp(argv[i], "--graph"))
			opt.graph = 1;
		else if (!strcmp(argv[i], "--no-big"))
			opt.big = 0;
		else if (!strcmp(argv[i], "--impl") && i + 1 < argc)
			opt.impl = argv[++i];
		else if (!strcmp(argv[i], "--config") && i + 1 < argc)
			opt.config = argv[++i];
		else if (!strcmp(argv[i], "--case") && i + 1 < argc)
			opt.case_filter = argv[++i];
		else if (!strcmp(argv[i], "--seed") && i + 1 < argc)
			opt.seed = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(argv[i], "--samples") && i + 1 < argc)
			opt.samples = atoi(argv[++i]);
		else {
			fprintf(stderr, "usage: gpu_parity [--bench [--graph]] [--impl NAME] [--config NAME[,NAME...]] [--case SUBSTR] "
					"[--no-big] [--seed N] [--samples N]\n");
			return 2;
		}
	}
	if (opt.samples < 1 || opt.samples > 256)
		opt.samples = 15;
	threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
	threads = threads < 1 ? 1 : threads > 64 ? 64 : threads;
	if (vs_device_open_gpu(&dev, 0) != 0) {
		printf("gpu_parity: no usable GPU, skipping\n");
		return 77;
	}
	printf("device: %s, %s, %s, %d CUs, L2 %llu MB, %llu GB\n", dev.info.name, dev.info.arch, dev.info.driver,
	       dev.info.compute_units, (unsigned long long)(dev.info.llc_bytes >> 20),
	       (unsigned long long)(dev.info.mem_bytes >> 30));
	rc = opt.bench ? bench() : parity();
	vs_device_release(&dev);
	return rc;
}
