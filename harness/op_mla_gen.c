/*
 * op_mla_gen.c - MLA decode's inputs (op.h, op_mla.h): the tensors of a task's files, their shapes
 * and dtypes in the manifest, and the generator of input set k (task.h "Input generation", "The
 * sparse form's inputs"), for the dense form (topk 0) and the sparse form (topk > 0) alike. The
 * core (task.c) writes, hashes and checks the files through the operator's table; what is in them
 * is this module's.
 */
#include "op_mla.h"
#include "op.h"
#include "codec.h"
#include "jsonfile.h"
#include "rng.h"
#include "safetensors.h"
#include "task.h"
#include "vs_error.h"
#include "mla_decode.h"
#include "mla_numeric.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- input generation ----------------------------------------------------------------------- */

struct shapes {
	int64_t q[4], kv[4], bt[2], sl[1], out[4], lse[3];
	size_t q_bytes, kv_bytes, bt_bytes, sl_bytes, out_bytes, lse_bytes;
	int kv_ndim; /* 4; 2 for the block-scaled formats: [pages, page bytes] */
	/* the sparse form (0 bytes: absent) */
	int64_t idx[3], xkv[4], xbt[2], xidx[3];
	int xkv_ndim;
	size_t idx_bytes, tl_bytes, sink_bytes, xkv_bytes, xbt_bytes, xsl_bytes, xidx_bytes, xtl_bytes;
	size_t in_bytes; /* every input tensor */
};

static void cache_shape(int64_t shape[4], int *ndim, size_t *bytes, int32_t kv_dtype, int32_t num_pages,
			int32_t page_size)
{
	shape[0] = num_pages;
	if (mla_kv_is_blockscaled(kv_dtype)) {
		shape[1] = (int64_t)mla_kv_page_bytes(kv_dtype, page_size);
		*ndim = 2;
		*bytes = (size_t)num_pages * mla_kv_page_bytes(kv_dtype, page_size);
		return;
	}
	shape[1] = page_size;
	shape[2] = 1;
	shape[3] = MLA_D_QK;
	*ndim = 4;
	*bytes = (size_t)num_pages * page_size * MLA_D_QK * mla_kv_elem_size(kv_dtype);
}

static void shapes_of(struct shapes *sh, const struct task_spec *s)
{
	int64_t d_qk = mla_kv_d_qk(s->kv_dtype);
	int64_t q[4] = {s->batch, s->s_q, s->h_q, d_qk};
	int64_t out[4] = {s->batch, s->s_q, s->h_q, MLA_D_V};
	int64_t lse[3] = {s->batch, s->h_q, s->s_q};
	size_t rows = (size_t)s->batch * s->s_q;

	memset(sh, 0, sizeof(*sh));
	memcpy(sh->q, q, sizeof(q));
	memcpy(sh->out, out, sizeof(out));
	memcpy(sh->lse, lse, sizeof(lse));
	cache_shape(sh->kv, &sh->kv_ndim, &sh->kv_bytes, s->kv_dtype, s->num_pages, s->page_size);
	sh->bt[0] = s->batch;
	sh->bt[1] = s->max_pages;
	sh->sl[0] = s->batch;
	sh->q_bytes = rows * s->h_q * (size_t)d_qk * 2;
	sh->bt_bytes = (size_t)s->batch * s->max_pages * 4;
	sh->sl_bytes = (size_t)s->batch * 4;
	sh->out_bytes = rows * s->h_q * MLA_D_V * 4;
	sh->lse_bytes = (size_t)s->batch * s->h_q * s->s_q * 4;
	if (s->topk > 0) {
		sh->idx[0] = s->batch;
		sh->idx[1] = s->s_q;
		sh->idx[2] = s->topk;
		sh->idx_bytes = rows * s->topk * 4;
		sh->tl_bytes = s->topk_length ? (size_t)s->batch * 4 : 0;
		sh->sink_bytes = s->attn_sink ? (size_t)s->h_q * 4 : 0;
	}
	if (s->topk > 0 && s->extra_topk > 0) {
		cache_shape(sh->xkv, &sh->xkv_ndim, &sh->xkv_bytes, s->kv_dtype, s->extra_num_pages,
			    s->extra_page_size);
		sh->xbt[0] = s->batch;
		sh->xbt[1] = s->extra_max_pages;
		sh->xbt_bytes = (size_t)s->batch * s->extra_max_pages * 4;
		sh->xsl_bytes = (size_t)s->batch * 4;
		sh->xidx[0] = s->batch;
		sh->xidx[1] = s->s_q;
		sh->xidx[2] = s->extra_topk;
		sh->xidx_bytes = rows * s->extra_topk * 4;
		sh->xtl_bytes = s->extra_topk_length ? (size_t)s->batch * 4 : 0;
	}
	sh->in_bytes = sh->q_bytes + sh->kv_bytes + sh->bt_bytes + sh->sl_bytes + sh->idx_bytes + sh->tl_bytes +
		       sh->sink_bytes + sh->xkv_bytes + sh->xbt_bytes + sh->xsl_bytes + sh->xidx_bytes + sh->xtl_bytes;
}

/* What one input set is made of, before its tensors are filled. */
struct set_plan {
	uint64_t seed;
	int32_t *seqlens;     /* [batch], rotated by k */
	int32_t *block_table; /* [batch * max_pages], page_offset added, sentinel when unused */
	int32_t *valid;       /* [num_pages]: visible slots of each stored page (0 = unused page) */
	float kv_scale;
	float amax;
	int64_t fp8_pos, fp8_neg; /* elements forced to +amax / -amax; -1 when none */
	double sd;                /* the normal's standard deviation: 0.1, or 1 in a softmax set */
};

static void set_plan_release(struct set_plan *p)
{
	free(p->seqlens);
	free(p->block_table);
	free(p->valid);
	memset(p, 0, sizeof(*p));
}

static inline float kv_value(const struct set_plan *p, uint64_t e)
{
	double x = rng_normal(p->seed, VS_STREAM_KV, e) * p->sd;

	return (float)(x < -1.0 ? -1.0 : x > 1.0 ? 1.0 : x);
}

static inline float q_value(const struct set_plan *p, uint64_t e)
{
	double x = rng_normal(p->seed, VS_STREAM_Q, e) * p->sd;

	return (float)(x < -1.0 ? -1.0 : x > 1.0 ? 1.0 : x);
}

/*
 * A parallel for over [0, n): worker w of nth runs fn on [n*w/nth, n*(w+1)/nth). Every element is
 * computed from its own counter, so the result does not depend on the thread count.
 */
struct par_job {
	void (*fn)(void *ctx, size_t lo, size_t hi, int worker);
	void *ctx;
	size_t n;
	int nth, worker;
};

static void *par_run(void *arg)
{
	struct par_job *j = arg;

	j->fn(j->ctx, j->n * (size_t)j->worker / (size_t)j->nth, j->n * (size_t)(j->worker + 1) / (size_t)j->nth,
	      j->worker);
	return NULL;
}

/* Threads for generation: the online CPUs (at most GEN_MAX_THREADS), one for small work. */
#define GEN_MAX_THREADS 64

static int gen_threads(size_t work)
{
	const char *e = getenv("VS_GEN_THREADS"); /* tests: the bytes must not depend on it */
	long n = e && atoi(e) > 0 ? atol(e) : sysconf(_SC_NPROCESSORS_ONLN);

	if (work < ((size_t)1 << 20) || n < 2)
		return 1;
	return n > GEN_MAX_THREADS ? GEN_MAX_THREADS : (int)n;
}

static void par_for(size_t n, int nth, void (*fn)(void *, size_t, size_t, int), void *ctx)
{
	struct par_job jobs[GEN_MAX_THREADS];
	pthread_t tid[GEN_MAX_THREADS];
	int started[GEN_MAX_THREADS] = {0};

	if (nth < 1)
		nth = 1;
	if (nth > GEN_MAX_THREADS)
		nth = GEN_MAX_THREADS;
	for (int w = 0; w < nth; w++)
		jobs[w] = (struct par_job){fn, ctx, n, nth, w};
	for (int w = 1; w < nth; w++)
		started[w] = pthread_create(&tid[w], NULL, par_run, &jobs[w]) == 0;
	par_run(&jobs[0]);
	for (int w = 1; w < nth; w++) {
		if (started[w])
			pthread_join(tid[w], NULL);
		else
			par_run(&jobs[w]); /* no thread: run it here */
	}
}

/* The largest and next largest |value| of the visible cache elements, first index on ties. */
struct top2 {
	float best, second;
	int64_t best_at, second_at;
};

struct amax_ctx {
	const struct task_spec *s;
	const struct set_plan *p;
	struct top2 part[GEN_MAX_THREADS];
};

static void top2_add(struct top2 *t, float a, int64_t at)
{
	if (a > t->best || (a == t->best && at < t->best_at)) {
		t->second = t->best;
		t->second_at = t->best_at;
		t->best = a;
		t->best_at = at;
	} else if (at != t->best_at && (a > t->second || (a == t->second && (t->second_at < 0 || at < t->second_at)))) {
		t->second = a;
		t->second_at = at;
	}
}

static void amax_pages(void *arg, size_t lo, size_t hi, int worker)
{
	struct amax_ctx *c = arg;
	struct top2 *t = &c->part[worker];

	*t = (struct top2){-1.0f, -1.0f, -1, -1};
	for (size_t pg = lo; pg < hi; pg++) {
		uint64_t e0 = (uint64_t)pg * c->s->page_size * MLA_D_QK;
		uint64_t n = (uint64_t)c->p->valid[pg] * MLA_D_QK;

		for (uint64_t e = e0; e < e0 + n; e++)
			top2_add(t, fabsf(kv_value(c->p, e)), (int64_t)e);
	}
}

/*
 * fp8: the element set to +amax (the first of largest |value| over the visible elements) and the
 * one set to -amax (the first of largest |value| among the others); amax = VS_FP8_AMAX, so the
 * set's max |value| is amax and kv_scale = amax / 240.
 * Per-worker top two, merged: the same answer for any thread count.
 */
static int fp8_extremes(struct set_plan *p, const struct task_spec *s)
{
	struct amax_ctx *c = calloc(1, sizeof(*c));
	struct top2 all = {-1.0f, -1.0f, -1, -1};
	int nth = gen_threads((size_t)s->num_pages * s->page_size * MLA_D_QK);

	if (!c)
		return vs_error(VS_ENOMEM, "out of memory generating task '%s'", s->name);
	c->s = s;
	c->p = p;
	par_for((size_t)s->num_pages, nth, amax_pages, c);
	for (int w = 0; w < nth; w++) {
		if (c->part[w].best_at >= 0)
			top2_add(&all, c->part[w].best, c->part[w].best_at);
		if (c->part[w].second_at >= 0)
			top2_add(&all, c->part[w].second, c->part[w].second_at);
	}
	free(c);
	p->fp8_pos = all.best_at;
	p->fp8_neg = all.second_at;
	/*
	 * amax is the generator's clamp bound, the same for every input set: kv_scale is a per-tensor
	 * constant of the model, so the sets of a task share it (a graph captured on one set bakes
	 * the scale in and is replayed on another by the capture gate).
	 */
	p->amax = VS_FP8_AMAX;
	p->kv_scale = VS_FP8_AMAX / 240.0f;
	return 0;
}

/*
 * Permute the pages [0, num_pages) (Fisher-Yates on stream) and give them to the sequences in
 * order: block_table [batch * max_pages] (page_offset added, VS_BLOCK_TABLE_SENTINEL when unused)
 * and, when valid is not NULL, the visible slots of each page. Returns 0 or VS_ENOMEM.
 */
static int paginate(int32_t *block_table, int32_t *valid, const int32_t *lens, int32_t batch, int32_t page_size,
		    int32_t max_pages, int32_t num_pages, int64_t page_offset, uint64_t seed, uint64_t stream)
{
	uint32_t *perm = malloc((size_t)num_pages * sizeof(uint32_t) + 1);
	int64_t cursor = 0;

	if (!perm)
		return vs_error(VS_ENOMEM, "out of memory generating a page table of %d pages", num_pages);
	for (int32_t i = 0; i < num_pages; i++)
		perm[i] = (uint32_t)i;
	for (int32_t i = num_pages - 1; i > 0; i--) {
		uint64_t j = rng_below(seed, stream, (uint64_t)i, (uint64_t)i + 1);
		uint32_t t = perm[i];

		perm[i] = perm[j];
		perm[j] = t;
	}
	for (int b = 0; b < batch; b++) {
		int32_t len = lens[b];

		for (int32_t pg = 0; pg < max_pages; pg++) {
			int32_t *bt = &block_table[(size_t)b * max_pages + pg];

			if ((int64_t)pg * page_size < len) {
				uint32_t page = perm[cursor++];
				int64_t left = len - (int64_t)pg * page_size;

				*bt = (int32_t)(page_offset + page);
				if (valid)
					valid[page] = (int32_t)(left < page_size ? left : page_size);
			} else {
				*bt = VS_BLOCK_TABLE_SENTINEL;
			}
		}
	}
	free(perm);
	return 0;
}

static int set_plan_build(struct set_plan *p, const struct task_spec *s, int k)
{
	int err = 0;

	memset(p, 0, sizeof(*p));
	p->seed = task_set_seed(s, k);
	p->sd = task_set_is_softmax(s, k) ? 1.0 : 0.1;
	p->kv_scale = 1.0f;
	p->fp8_pos = p->fp8_neg = -1;
	p->seqlens = malloc((size_t)s->batch * sizeof(int32_t));
	p->block_table = malloc((size_t)s->batch * s->max_pages * sizeof(int32_t));
	p->valid = calloc((size_t)s->num_pages, sizeof(int32_t));
	if (!p->seqlens || !p->block_table || !p->valid) {
		err = vs_error(VS_ENOMEM, "out of memory generating task '%s'", s->name);
		goto done;
	}
	for (int b = 0; b < s->batch; b++)
		p->seqlens[b] = s->seqlens[(b + k) % s->batch];
	if ((err = paginate(p->block_table, p->valid, p->seqlens, s->batch, s->page_size, s->max_pages, s->num_pages,
			    s->page_offset, p->seed, VS_STREAM_PERM)))
		goto done;
	if (s->kv_dtype == MLA_KV_FP8_E4M3_FNUZ)
		err = fp8_extremes(p, s);
done:
	if (err)
		set_plan_release(p);
	return err;
}

struct fill_ctx {
	const struct task_spec *s;
	const struct set_plan *p;
	void *dst;
};

static void fill_q_range(void *arg, size_t lo, size_t hi, int worker)
{
	struct fill_ctx *c = arg;
	uint16_t *q = c->dst;

	(void)worker;
	for (size_t e = lo; e < hi; e++)
		q[e] = mla_float_to_bf16(q_value(c->p, e));
}

static void fill_kv_pages(void *arg, size_t lo, size_t hi, int worker)
{
	struct fill_ctx *c = arg;
	const struct task_spec *s = c->s;
	const struct set_plan *p = c->p;
	size_t row = MLA_D_QK;

	(void)worker;
	for (size_t pg = lo; pg < hi; pg++) {
		for (int32_t slot = 0; slot < s->page_size; slot++) {
			size_t e0 = (pg * (size_t)s->page_size + (size_t)slot) * row;
			int visible = slot < p->valid[pg];

			for (size_t e = e0; e < e0 + row; e++) {
				float x;

				if (s->kv_dtype == MLA_KV_BF16) {
					((uint16_t *)c->dst)[e] = visible ? mla_float_to_bf16(kv_value(p, e)) : 0x7FC0;
					continue;
				}
				if (!visible) {
					((uint8_t *)c->dst)[e] = 0x80;
					continue;
				}
				x = (int64_t)e == p->fp8_pos ? p->amax :
				    (int64_t)e == p->fp8_neg ? -p->amax :
							       kv_value(p, e);
				((uint8_t *)c->dst)[e] = vs_fp8_e4m3_fnuz_encode(x / p->kv_scale);
			}
		}
	}
}

static void fill_q(uint16_t *q, const struct task_spec *s, const struct set_plan *p)
{
	struct fill_ctx c = {s, p, q};
	size_t n = (size_t)s->batch * s->s_q * s->h_q * mla_kv_d_qk(s->kv_dtype);

	par_for(n, gen_threads(n), fill_q_range, &c);
}

static void fill_kv(void *kv, const struct task_spec *s, const struct set_plan *p)
{
	struct fill_ctx c = {s, p, kv};

	par_for((size_t)s->num_pages, gen_threads((size_t)s->num_pages * s->page_size * MLA_D_QK), fill_kv_pages, &c);
}
static void tensor_set(struct st_tensor *t, const char *name, int dtype, const int64_t *shape, int ndim, size_t bytes)
{
	memset(t, 0, sizeof(*t));
	t->name = (char *)name;
	t->dtype = dtype;
	t->ndim = ndim;
	memcpy(t->shape, shape, (size_t)ndim * sizeof(int64_t));
	t->bytes = bytes;
}

/*
 * The input tensors of a task in file order (task_set_inputs()); returns how many: 4 for a dense
 * task, and the sparse form's present ones after them. Their data pointers are not set.
 */
static int inputs_tensors(struct st_tensor t[VS_TASK_MAX_INPUTS], const struct task_spec *s, const struct shapes *sh)
{
	int kv_dt = s->kv_dtype == MLA_KV_BF16 ? ST_BF16 : ST_U8, n = 4;

	tensor_set(&t[0], "q", ST_BF16, sh->q, 4, sh->q_bytes);
	tensor_set(&t[1], "kv_cache", kv_dt, sh->kv, sh->kv_ndim, sh->kv_bytes);
	tensor_set(&t[2], "block_table", ST_I32, sh->bt, 2, sh->bt_bytes);
	tensor_set(&t[3], "seqlens", ST_I32, sh->sl, 1, sh->sl_bytes);
	if (sh->idx_bytes)
		tensor_set(&t[n++], "indices", ST_I32, sh->idx, 3, sh->idx_bytes);
	if (sh->tl_bytes)
		tensor_set(&t[n++], "topk_length", ST_I32, sh->sl, 1, sh->tl_bytes);
	if (sh->sink_bytes)
		tensor_set(&t[n++], "attn_sink", ST_F32, &sh->q[2], 1, sh->sink_bytes);
	if (sh->xkv_bytes || sh->xidx_bytes) {
		tensor_set(&t[n++], "extra_kv_cache", kv_dt, sh->xkv, sh->xkv_ndim, sh->xkv_bytes);
		tensor_set(&t[n++], "extra_block_table", ST_I32, sh->xbt, 2, sh->xbt_bytes);
		tensor_set(&t[n++], "extra_seqlens", ST_I32, sh->sl, 1, sh->xsl_bytes);
		tensor_set(&t[n++], "extra_indices", ST_I32, sh->xidx, 3, sh->xidx_bytes);
	}
	if (sh->xtl_bytes)
		tensor_set(&t[n++], "extra_topk_length", ST_I32, sh->sl, 1, sh->xtl_bytes);
	return n;
}
static void reference_tensors(struct st_tensor t[2], const struct shapes *sh)
{
	tensor_set(&t[0], "out", ST_F32, sh->out, 4, sh->out_bytes);
	tensor_set(&t[1], "lse", ST_F32, sh->lse, 3, sh->lse_bytes);
}

/* ---- the sparse form's inputs (task.h "The sparse form's inputs") ---------------------------- */

/* One paged cache of a sparse input set: the main cache or the extra one, and the indices into it. */
struct sparse_cache {
	int32_t page_size, max_pages, num_pages, topk, batch, s_q;
	int32_t max_len; /* the largest seqlen */
	uint64_t seed;   /* the set's */
	uint64_t stream_idx, stream_len, stream_kv;
	int32_t *seqlens;     /* [batch], rotated by the set */
	int32_t *block_table; /* [batch * max_pages] */
	int32_t *indices;     /* [batch * s_q * topk] */
	int32_t *topk_length; /* [batch] or NULL */
	uint8_t *selected;    /* [num_pages * page_size]: 1 where a valid entry names the row */
	double attended;      /* sum over rows of the valid entries (not -1, within topk_length) */
	double retrieved;     /* rows selected */
};

static void sparse_cache_release(struct sparse_cache *c)
{
	free(c->seqlens);
	free(c->block_table);
	free(c->indices);
	free(c->topk_length);
	free(c->selected);
	memset(c, 0, sizeof(*c));
}

/* A worker's scratch for index rows: a bitmap over a sequence's keys, a pool and the tokens chosen. */
struct index_scratch {
	uint64_t *mark;
	int32_t *pool, *tok;
};

struct index_ctx {
	const struct sparse_cache *c;
	struct index_scratch x[GEN_MAX_THREADS];
};

static int marked(const uint64_t *m, int32_t t)
{
	return (int)((m[t >> 6] >> (t & 63)) & 1);
}

/*
 * Row r = b * s_q + i of the indices: distinct keys of sequence b, as an indexer gives them. With n
 * keys (never causal: every row chooses from [0, n)): none when n is 0 (all -1); else v = min(topk,
 * n) less h holes, h uniform in [0, v/16], v >= 1. The last key n-1 always; then, when the other
 * v-1 are at least half of [0, n-1), a partial Fisher-Yates draw over [0, n-1); otherwise (v-1)/2
 * from the recent window [n-1-w, n-1), w = min(n-1, 2 topk), and the rest uniform over [0, n-1)
 * (rejection of repeats). Each key becomes page * page_size + slot through the block table
 * (FlashMLA quant.py abs_indices2indices_in_kvcache), the row is padded with -1 to topk and then
 * shuffled (Fisher-Yates), so the -1s lie among the valid entries. Draw j of row r is
 * rng_below(seed, stream, r * 2^32 + j, .), in the order written here.
 */
static void index_row(int32_t *row, struct index_scratch *x, const struct sparse_cache *c, int64_t r)
{
	int b = (int)(r / c->s_q);
	int32_t n = c->seqlens[b], topk = c->topk, pool = n - 1, v, need, nt = 0;
	uint64_t ctr = (uint64_t)r << 32;

	for (int32_t t = 0; t < topk; t++)
		row[t] = -1;
	if (n <= 0)
		return;
	v = n < topk ? n : topk;
	v -= (int32_t)rng_below(c->seed, c->stream_idx, ctr++, (uint64_t)v / 16 + 1);
	need = v - 1;
	x->tok[nt++] = n - 1;
	if (2 * (int64_t)need >= pool) {
		for (int32_t j = 0; j < pool; j++)
			x->pool[j] = j;
		for (int32_t j = 0; j < need; j++) {
			int32_t o = j + (int32_t)rng_below(c->seed, c->stream_idx, ctr++, (uint64_t)(pool - j));
			int32_t t = x->pool[o];

			x->pool[o] = x->pool[j];
			x->pool[j] = t;
			x->tok[nt++] = t;
		}
	} else {
		int32_t w = pool < 2 * topk ? pool : 2 * topk, recent = need / 2;

		while (nt < v) {
			int32_t t = nt <= recent ?
					    pool - w + (int32_t)rng_below(c->seed, c->stream_idx, ctr++, (uint64_t)w) :
					    (int32_t)rng_below(c->seed, c->stream_idx, ctr++, (uint64_t)pool);

			if (marked(x->mark, t))
				continue;
			x->mark[t >> 6] |= (uint64_t)1 << (t & 63);
			x->tok[nt++] = t;
		}
		for (int32_t j = 1; j < nt; j++)
			x->mark[x->tok[j] >> 6] = 0;
	}
	for (int32_t j = 0; j < nt; j++) {
		int32_t t = x->tok[j];

		row[j] = c->block_table[(size_t)b * c->max_pages + t / c->page_size] * c->page_size + t % c->page_size;
	}
	for (int32_t t = topk - 1; t > 0; t--) {
		int32_t o = (int32_t)rng_below(c->seed, c->stream_idx, ctr++, (uint64_t)t + 1), e = row[t];

		row[t] = row[o];
		row[o] = e;
	}
}

static void index_rows(void *arg, size_t lo, size_t hi, int worker)
{
	struct index_ctx *ic = arg;

	for (size_t r = lo; r < hi; r++)
		index_row(ic->c->indices + r * (size_t)ic->c->topk, &ic->x[worker], ic->c, (int64_t)r);
}

/*
 * Build cache `extra` (0 main, 1 extra) of sparse input set k: its seqlens (rotated by k), block
 * table (pages permuted as the dense form's, stream VS_STREAM_PERM or VS_STREAM_EXTRA_PERM),
 * indices, topk_length and the rows the valid entries select.
 */
static int sparse_cache_build(struct sparse_cache *c, const struct task_spec *s, int k, int extra)
{
	const int32_t *lens = extra ? s->extra_seqlens : s->seqlens;
	size_t rows = (size_t)s->batch * s->s_q, tokens;
	int has_length = extra ? s->extra_topk_length : s->topk_length;
	struct index_ctx *ic = NULL;
	int nth = 1, err = 0;

	memset(c, 0, sizeof(*c));
	c->page_size = extra ? s->extra_page_size : s->page_size;
	c->max_pages = extra ? s->extra_max_pages : s->max_pages;
	c->num_pages = extra ? s->extra_num_pages : s->num_pages;
	c->topk = extra ? s->extra_topk : s->topk;
	c->batch = s->batch;
	c->s_q = s->s_q;
	c->seed = task_set_seed(s, k);
	c->stream_idx = extra ? VS_STREAM_EXTRA_INDICES : VS_STREAM_INDICES;
	c->stream_len = extra ? VS_STREAM_EXTRA_TOPK_LENGTH : VS_STREAM_TOPK_LENGTH;
	c->stream_kv = extra ? VS_STREAM_EXTRA_KV : VS_STREAM_KV;
	tokens = (size_t)c->num_pages * c->page_size;
	c->seqlens = malloc((size_t)s->batch * sizeof(int32_t));
	c->block_table = malloc((size_t)s->batch * c->max_pages * sizeof(int32_t) + 1);
	c->indices = malloc(rows * c->topk * sizeof(int32_t) + 1);
	c->topk_length = has_length ? malloc((size_t)s->batch * sizeof(int32_t)) : NULL;
	c->selected = calloc(tokens + 1, 1);
	ic = calloc(1, sizeof(*ic));
	if (!c->seqlens || !c->block_table || !c->indices || (has_length && !c->topk_length) || !c->selected || !ic) {
		err = vs_error(VS_ENOMEM, "out of memory generating the indices of task '%s'", s->name);
		goto done;
	}
	for (int b = 0; b < s->batch; b++) {
		c->seqlens[b] = lens[(b + k) % s->batch];
		c->max_len = c->seqlens[b] > c->max_len ? c->seqlens[b] : c->max_len;
	}
	if ((err = paginate(c->block_table, NULL, c->seqlens, s->batch, c->page_size, c->max_pages, c->num_pages, 0,
			    c->seed, extra ? VS_STREAM_EXTRA_PERM : VS_STREAM_PERM)))
		goto done;
	ic->c = c;
	nth = gen_threads(rows * (size_t)c->topk * 16);
	for (int w = 0; w < nth; w++) {
		ic->x[w].mark = calloc((size_t)c->max_len / 64 + 1, sizeof(uint64_t));
		ic->x[w].pool = malloc((2 * (size_t)c->topk + 2) * sizeof(int32_t));
		ic->x[w].tok = malloc(((size_t)c->topk + 1) * sizeof(int32_t));
		if (!ic->x[w].mark || !ic->x[w].pool || !ic->x[w].tok) {
			err = vs_error(VS_ENOMEM, "out of memory generating the indices of task '%s'", s->name);
			goto done;
		}
	}
	par_for(rows, nth, index_rows, ic);
	/* topk_length: topk in batch k % batch, 0 in batch (k + 1) % batch (edges), else uniform [0, topk] */
	for (int b = 0; b < s->batch && c->topk_length; b++) {
		if (s->batch > 1 && b == k % s->batch)
			c->topk_length[b] = c->topk;
		else if (s->batch > 1 && b == (k + 1) % s->batch)
			c->topk_length[b] = 0;
		else
			c->topk_length[b] =
				(int32_t)rng_below(c->seed, c->stream_len, (uint64_t)b, (uint64_t)c->topk + 1);
	}
	for (size_t r = 0; r < rows; r++) {
		int b = (int)(r / (size_t)s->s_q);
		int32_t len = c->topk_length ? c->topk_length[b] : c->topk;
		const int32_t *row = c->indices + r * (size_t)c->topk;

		for (int32_t t = 0; t < len; t++) {
			c->attended += row[t] >= 0;
			if (row[t] >= 0 && !c->selected[row[t]]) {
				c->selected[row[t]] = 1;
				c->retrieved++;
			}
		}
	}
done:
	for (int w = 0; ic && w < nth; w++) {
		free(ic->x[w].mark);
		free(ic->x[w].pool);
		free(ic->x[w].tok);
	}
	free(ic);
	if (err)
		sparse_cache_release(c);
	return err;
}

/* FlashMLA's scale of a block (quant.py): 2^ceil(log2(max(amax / fmax, 1e-4))); returns the exponent. */
static int block_scale_exp(float amax, float fmax)
{
	float r = amax / fmax;
	int e;

	if (!(r > 1e-4f))
		r = 1e-4f;
	return frexpf(r, &e) == 0.5f ? e - 1 : e; /* r = f 2^e, f in [0.5, 1): exact ceil(log2 r) */
}

/* Quantize x[0..n) with one scale 2^e into codes; returns e. */
static int quantize_block(uint8_t *codes, const float *x, int n, int fnuz)
{
	float amax = 0;
	int e;

	for (int i = 0; i < n; i++)
		amax = fabsf(x[i]) > amax ? fabsf(x[i]) : amax;
	e = block_scale_exp(amax, fnuz ? 240.0f : 448.0f);
	for (int i = 0; i < n; i++) {
		float y = ldexpf(x[i], -e);

		codes[i] = fnuz ? vs_fp8_e4m3_fnuz_encode(y) : vs_fp8_e4m3fn_encode(y);
	}
	return e;
}

static void put_bf16(uint8_t *p, uint16_t h)
{
	p[0] = (uint8_t)h;
	p[1] = (uint8_t)(h >> 8);
}

/*
 * Write token `slot` of the page at `page` in the cache format: the values x (d_qk floats, already
 * bf16-exact), or the format's NaN pattern when x is NULL.
 */
static void put_token(uint8_t *page, int32_t kv_dtype, int32_t page_size, int32_t slot, const float *x)
{
	int fnuz = mla_kv_is_fnuz(kv_dtype);
	uint8_t nan_code = fnuz ? 0x80 : 0x7f;

	if (kv_dtype == MLA_KV_BF16) {
		uint8_t *t = page + (size_t)slot * MLA_D_QK * 2;

		for (int d = 0; d < MLA_D_QK; d++)
			put_bf16(t + 2 * d, x ? mla_float_to_bf16(x[d]) : 0x7FC0);
	} else if (!mla_kv_is_model1(kv_dtype)) { /* fp8_ds_mla: 512 codes, 4 fp32 scales, 64 bf16 */
		uint8_t *t = page + (size_t)slot * 656;

		for (int k = 0; k < 4; k++) {
			uint32_t sc = 0x7fc00000u;

			if (x)
				sc = mla_float_to_bits(
					ldexpf(1.0f, quantize_block(t + 128 * k, x + 128 * k, 128, fnuz)));
			else
				memset(t + 128 * k, nan_code, 128);
			for (int i = 0; i < 4; i++)
				t[512 + 4 * k + i] = (uint8_t)(sc >> (8 * i));
		}
		for (int d = 0; d < MLA_D_ROPE; d++)
			put_bf16(t + 528 + 2 * d, x ? mla_float_to_bf16(x[512 + d]) : 0x7FC0);
	} else { /* fp8_model1: 448 codes and 64 bf16 per token, then 7 e8m0 scales and a pad byte */
		uint8_t *t = page + (size_t)slot * 576, *sc = page + (size_t)page_size * 576 + (size_t)slot * 8;

		for (int k = 0; k < 7; k++) {
			if (x)
				sc[k] = (uint8_t)(127 + quantize_block(t + 64 * k, x + 64 * k, 64, fnuz));
			else {
				memset(t + 64 * k, nan_code, 64);
				sc[k] = 0xff;
			}
		}
		sc[7] = 0;
		for (int d = 0; d < MLA_D_ROPE; d++)
			put_bf16(t + 448 + 2 * d, x ? mla_float_to_bf16(x[448 + d]) : 0x7FC0);
	}
}

struct sparse_fill_ctx {
	const struct sparse_cache *c;
	int32_t kv_dtype;
	double sd;
	uint8_t *dst;
	const uint8_t *nan_page; /* a page of NaN rows (padding 0) */
};

/*
 * Pages [lo, hi) of a sparse cache: a selected row's value d is bf16(clamp(rng_normal(seed,
 * stream_kv, token x d_qk + d) x sd, -1, 1)), token = page x page_size + slot, then put in the
 * format (quantized for the fp8 ones); every other row the format's NaN; page padding 0.
 */
static void sparse_fill_pages(void *arg, size_t lo, size_t hi, int worker)
{
	struct sparse_fill_ctx *f = arg;
	const struct sparse_cache *c = f->c;
	size_t page_bytes = mla_kv_page_bytes(f->kv_dtype, c->page_size);
	int d_qk = mla_kv_d_qk(f->kv_dtype);
	float x[MLA_D_QK];

	(void)worker;
	for (size_t pg = lo; pg < hi; pg++) {
		uint8_t *page = f->dst + pg * page_bytes;

		memcpy(page, f->nan_page, page_bytes);
		for (int32_t slot = 0; slot < c->page_size; slot++) {
			uint64_t token = (uint64_t)pg * c->page_size + (uint64_t)slot;

			if (!c->selected[token])
				continue;
			for (int d = 0; d < d_qk; d++) {
				double v =
					rng_normal(c->seed, c->stream_kv, token * (uint64_t)d_qk + (uint64_t)d) * f->sd;

				v = v < -1.0 ? -1.0 : v > 1.0 ? 1.0 : v;
				x[d] = mla_bf16_to_float(mla_float_to_bf16((float)v));
			}
			put_token(page, f->kv_dtype, c->page_size, slot, x);
		}
	}
}

static int sparse_fill_cache(uint8_t *dst, const struct sparse_cache *c, int32_t kv_dtype, double sd)
{
	size_t page_bytes = mla_kv_page_bytes(kv_dtype, c->page_size);
	uint8_t *nan_page = calloc(page_bytes, 1);
	struct sparse_fill_ctx f = {c, kv_dtype, sd, dst, nan_page};

	if (!nan_page)
		return vs_error(VS_ENOMEM, "out of memory for a %zu-byte cache page", page_bytes);
	for (int32_t slot = 0; slot < c->page_size; slot++)
		put_token(nan_page, kv_dtype, c->page_size, slot, NULL);
	par_for((size_t)c->num_pages, gen_threads((size_t)c->num_pages * c->page_size * 64), sparse_fill_pages, &f);
	free(nan_page);
	return 0;
}

/*
 * attn_sink [h_q], the same in every input set (a model's weights): N(0,1) (seed, VS_STREAM_ATTN_SINK,
 * h), but with h_q >= 4 the last head +inf (its out is 0) and the one before -inf (no effect), as
 * FlashMLA's tests mix infinities in.
 */
static void fill_attn_sink(float *sink, const struct task_spec *s)
{
	for (int h = 0; h < s->h_q; h++) {
		if (s->h_q >= 4 && h == s->h_q - 1)
			sink[h] = INFINITY;
		else if (s->h_q >= 4 && h == s->h_q - 2)
			sink[h] = -INFINITY;
		else
			sink[h] = (float)rng_normal(s->seed, VS_STREAM_ATTN_SINK, (uint64_t)h);
	}
}

/* The tensors after q of sparse input set k, from data on (file order), sd the set's. */
static int sparse_fill(char *data, const struct task_spec *s, const struct shapes *sh, double sd, int k)
{
	struct sparse_cache c[2];
	int err, ncache = s->extra_topk > 0 ? 2 : 1;

	memset(c, 0, sizeof(c));
	if ((err = sparse_cache_build(&c[0], s, k, 0)))
		return err;
	if (ncache == 2 && (err = sparse_cache_build(&c[1], s, k, 1)))
		goto done;
	if ((err = sparse_fill_cache((uint8_t *)data, &c[0], s->kv_dtype, sd)))
		goto done;
	data += sh->kv_bytes;
	memcpy(data, c[0].block_table, sh->bt_bytes);
	data += sh->bt_bytes;
	memcpy(data, c[0].seqlens, sh->sl_bytes);
	data += sh->sl_bytes;
	memcpy(data, c[0].indices, sh->idx_bytes);
	data += sh->idx_bytes;
	if (sh->tl_bytes)
		memcpy(data, c[0].topk_length, sh->tl_bytes);
	data += sh->tl_bytes;
	if (sh->sink_bytes)
		fill_attn_sink((float *)data, s);
	data += sh->sink_bytes;
	if (ncache == 2) {
		if ((err = sparse_fill_cache((uint8_t *)data, &c[1], s->kv_dtype, sd)))
			goto done;
		data += sh->xkv_bytes;
		memcpy(data, c[1].block_table, sh->xbt_bytes);
		data += sh->xbt_bytes;
		memcpy(data, c[1].seqlens, sh->xsl_bytes);
		data += sh->xsl_bytes;
		memcpy(data, c[1].indices, sh->xidx_bytes);
		data += sh->xidx_bytes;
		if (sh->xtl_bytes)
			memcpy(data, c[1].topk_length, sh->xtl_bytes);
	}
done:
	sparse_cache_release(&c[0]);
	sparse_cache_release(&c[1]);
	return err;
}

void mla_sparse_counts(const struct task_spec *s, double *attended, double *retrieved)
{
	struct sparse_cache c;
	int quiet = vs_error_set_quiet(1);

	*attended = *retrieved = 0;
	if (vs_op_of(s)->spec_validate(s, "count"))
		goto done;
	for (int extra = 0; extra < (s->extra_topk > 0 ? 2 : 1); extra++) {
		if (sparse_cache_build(&c, s, 0, extra))
			goto done;
		*attended += c.attended;
		*retrieved += c.retrieved;
		sparse_cache_release(&c);
	}
done:
	vs_error_set_quiet(quiet);
}

int mla_generate_inputs(char **buf, size_t *len, float *kv_scale, const struct task_spec *s, int k)
{
	struct set_plan p;
	struct shapes sh;
	struct st_tensor t[VS_TASK_MAX_INPUTS];
	struct task_meta m = {.count = 0};
	char hash[65], *img = NULL;
	size_t ilen = 0, off = 0;
	int err, n;

	memset(&p, 0, sizeof(p));
	if ((err = vs_op_of(s)->spec_validate(s, "generate")))
		return err;
	if (k < 0 || k >= s->input_sets)
		return vs_error(VS_EUSAGE, "task '%s' has no input set %d", s->name, k);
	if ((err = task_spec_hash(s, hash)))
		return err;
	if (s->topk > 0) { /* the sparse form: q as the dense form's, the rest sparse_fill()'s */
		p.seed = task_set_seed(s, k);
		p.sd = task_set_is_softmax(s, k) ? 1.0 : 0.1;
		p.kv_scale = 1.0f;
	} else if ((err = set_plan_build(&p, s, k))) {
		return err;
	}
	shapes_of(&sh, s);
	n = inputs_tensors(t, s, &sh);
	task_meta_add(&m, "format", "validate_skill mla_decode inputs");
	task_meta_add(&m, "task", hash);
	task_meta_add(&m, "generator", VS_GENERATOR_VERSION);
	task_meta_add_u64(&m, "set", (uint64_t)k);
	task_meta_add_u64(&m, "seed", p.seed);
	task_meta_add(&m, "kv_dtype", mla_kv_dtype_name(s->kv_dtype));
	task_meta_add_float(&m, "kv_scale", p.kv_scale);
	task_meta_add_float(&m, "softmax_scale", s->softmax_scale);
	task_meta_add_u64(&m, "page_offset", (uint64_t)s->page_offset);
	err = task_image_alloc(&img, &ilen, &off, t, n, &m);
	if (err)
		goto done;
	fill_q((uint16_t *)(img + off), s, &p);
	off += sh.q_bytes;
	if (s->topk > 0) {
		if ((err = sparse_fill(img + off, s, &sh, p.sd, k)))
			goto done;
	} else {
		fill_kv(img + off, s, &p);
		off += sh.kv_bytes;
		memcpy(img + off, p.block_table, sh.bt_bytes);
		off += sh.bt_bytes;
		memcpy(img + off, p.seqlens, sh.sl_bytes);
	}
	*buf = img;
	*len = ilen;
	*kv_scale = p.kv_scale;
	img = NULL;
done:
	free(img);
	set_plan_release(&p);
	return err;
}

static cJSON *shape_json(const int64_t *shape, int ndim)
{
	cJSON *a = cJSON_CreateArray();

	for (int d = 0; d < ndim; d++)
		if (!jsonfile_add(a, NULL, jsonfile_raw_i64(shape[d]))) {
			cJSON_Delete(a);
			return NULL;
		}
	return a;
}

/*
 * The sparse form's tensors in the manifest's "shapes" (dtypes 0) or "dtypes" (dtypes 1), after
 * the dense form's keys: nothing for a dense task. Returns 1 ok, 0 out of memory.
 */
static int sparse_json(cJSON *o, const struct task_spec *s, const struct shapes *sh, int dtypes)
{
	struct st_tensor t[VS_TASK_MAX_INPUTS];
	int n = inputs_tensors(t, s, sh);

	for (int i = 4; i < n; i++) {
		const char *dt = t[i].dtype == ST_I32 ? "int32" :
				 t[i].dtype == ST_F32 ? "float32" :
							mla_kv_dtype_name(s->kv_dtype);

		if (!jsonfile_add(o, t[i].name, dtypes ? cJSON_CreateString(dt) : shape_json(t[i].shape, t[i].ndim)))
			return 0;
	}
	return 1;
}

/* ---- the operator's entries (op.h) ---------------------------------------------------------- */

int mla_task_inputs(struct st_tensor *t, const struct task_spec *s)
{
	struct shapes sh;

	shapes_of(&sh, s);
	return inputs_tensors(t, s, &sh);
}

void mla_task_outputs(struct st_tensor *t, const struct task_spec *s)
{
	struct shapes sh;

	shapes_of(&sh, s);
	reference_tensors(t, &sh);
}

int mla_manifest_tensors(cJSON *shapes, cJSON *dtypes, const struct task_spec *s)
{
	struct shapes sh;
	const char *kvd = mla_kv_dtype_name(s->kv_dtype);

	shapes_of(&sh, s);
	return jsonfile_add(shapes, "q", shape_json(sh.q, 4)) &&
	       jsonfile_add(shapes, "kv_cache", shape_json(sh.kv, 4)) &&
	       jsonfile_add(shapes, "block_table", shape_json(sh.bt, 2)) &&
	       jsonfile_add(shapes, "seqlens", shape_json(sh.sl, 1)) &&
	       jsonfile_add(shapes, "out", shape_json(sh.out, 4)) &&
	       jsonfile_add(shapes, "lse", shape_json(sh.lse, 3)) && sparse_json(shapes, s, &sh, 0) &&
	       jsonfile_add(dtypes, "q", cJSON_CreateString("bf16")) &&
	       jsonfile_add(dtypes, "kv_cache", cJSON_CreateString(kvd)) &&
	       jsonfile_add(dtypes, "kv_cache_storage",
			    cJSON_CreateString(s->kv_dtype == MLA_KV_BF16 ? "BF16" : "U8")) &&
	       jsonfile_add(dtypes, "block_table", cJSON_CreateString("int32")) &&
	       jsonfile_add(dtypes, "seqlens", cJSON_CreateString("int32")) &&
	       jsonfile_add(dtypes, "out", cJSON_CreateString("float32")) &&
	       jsonfile_add(dtypes, "lse", cJSON_CreateString("float32")) && sparse_json(dtypes, s, &sh, 1);
}
