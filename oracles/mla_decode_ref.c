#include "mla_decode_ref.h"
#include "../kernels/mla_numeric.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

struct ref_job {
	const struct mla_decode_args *a;
	float *out;
	float *lse;
	int next;          /* next work item (b * s_q + i), taken under lock */
	int err;
	pthread_mutex_t lock;
};

/* Decode cache row j of sequence b into row[0..dims) as doubles (value = code * kv_scale). */
static int load_row(const struct mla_decode_args *a, int b, int j, int dims, double *row)
{
	int32_t page = a->block_table[(size_t)b * a->max_pages + j / a->page_size];
	size_t idx;

	if (page < 0 || page >= a->num_pages)
		return MLA_EINVAL;
	idx = ((size_t)page * a->page_size + (size_t)(j % a->page_size)) * MLA_D_QK;
	if (a->kv_dtype == MLA_KV_BF16) {
		const uint16_t *kv = (const uint16_t *)a->kv_cache + idx;

		for (int d = 0; d < dims; d++)
			row[d] = mla_bf16_to_float(kv[d]);
	} else {
		const uint8_t *kv = (const uint8_t *)a->kv_cache + idx;
		double scale = a->kv_scale;

		for (int d = 0; d < dims; d++)
			row[d] = (double)mla_fp8_e4m3_fnuz_to_float(kv[d]) * scale;
	}
	return MLA_OK;
}

/* The outputs of query row (b, i), rounded to float once: out[b][i][h][:] = acc[h][:] for every head. */
static void store_out(float *out, const double *acc, const struct mla_decode_args *a, int b, int i)
{
	for (int h = 0; h < a->h_q; h++) {
		float *o = out + (((size_t)b * a->s_q + i) * a->h_q + h) * MLA_D_V;

		for (int d = 0; d < MLA_D_V; d++)
			o[d] = (float)acc[(size_t)h * MLA_D_V + d];
	}
}

/* One (batch, query position): all heads. scores is [h_q][n] doubles, row is [576]. */
static int ref_item(const struct mla_decode_args *a, int b, int i, float *out, float *lse,
		    double *scores, double *qd, double *acc)
{
	int n = a->seqlens[b] - a->s_q + 1 + i;
	int h_q = a->h_q;
	double row[MLA_D_QK];

	if (n <= 0) {
		for (int h = 0; h < h_q; h++) {
			memset(out + (((size_t)b * a->s_q + i) * h_q + h) * MLA_D_V, 0, MLA_D_V * sizeof(float));
			lse[((size_t)b * h_q + h) * a->s_q + i] = INFINITY;
		}
		return MLA_OK;
	}
	for (int h = 0; h < h_q; h++) {
		const uint16_t *q = (const uint16_t *)a->q + (((size_t)b * a->s_q + i) * h_q + h) * MLA_D_QK;

		for (int d = 0; d < MLA_D_QK; d++)
			qd[(size_t)d * h_q + h] = mla_bf16_to_float(q[d]); /* [576][h_q]: heads innermost */
	}
	double *dot = acc; /* scratch for the scores; acc is cleared before the PV pass */

	for (int j = 0; j < n; j++) {
		if (load_row(a, b, j, MLA_D_QK, row))
			return MLA_EINVAL;
		/*
		 * Each head's dot product is summed over d = 0..575 in order, as a plain loop would;
		 * running the heads side by side only lets the compiler vectorize across them.
		 */
		for (int h = 0; h < h_q; h++)
			dot[h] = 0.0;
		for (int d = 0; d < MLA_D_QK; d++) {
			const double *qdh = qd + (size_t)d * h_q;
			double r = row[d];

			for (int h = 0; h < h_q; h++)
				dot[h] += qdh[h] * r;
		}
		for (int h = 0; h < h_q; h++)
			scores[(size_t)h * n + j] = dot[h] * (double)a->softmax_scale;
	}
	for (int h = 0; h < h_q; h++) {
		double *sh = scores + (size_t)h * n;
		double m = -INFINITY, sum = 0.0;

		for (int j = 0; j < n; j++)
			m = sh[j] > m ? sh[j] : m;
		for (int j = 0; j < n; j++) {
			sh[j] = exp(sh[j] - m);
			sum += sh[j];
		}
		for (int j = 0; j < n; j++)
			sh[j] /= sum;
		lse[((size_t)b * h_q + h) * a->s_q + i] = (float)(m + log(sum));
	}
	memset(acc, 0, (size_t)h_q * MLA_D_V * sizeof(double));
	for (int j = 0; j < n; j++) {
		if (load_row(a, b, j, MLA_D_V, row))
			return MLA_EINVAL;
		for (int h = 0; h < h_q; h++) {
			double p = scores[(size_t)h * n + j];
			double *ah = acc + (size_t)h * MLA_D_V;

			for (int d = 0; d < MLA_D_V; d++)
				ah[d] += p * row[d];
		}
	}
	store_out(out, acc, a, b, i);
	return MLA_OK;
}

static void *ref_worker(void *arg)
{
	struct ref_job *job = arg;
	const struct mla_decode_args *a = job->a;
	int items = a->batch * a->s_q;
	size_t max_n = (size_t)a->max_pages * a->page_size;
	double *scores = malloc((max_n ? max_n : 1) * a->h_q * sizeof(double));
	double *qd = malloc((size_t)a->h_q * MLA_D_QK * sizeof(double));
	double *acc = malloc((size_t)a->h_q * MLA_D_V * sizeof(double));

	if (!scores || !qd || !acc) {
		pthread_mutex_lock(&job->lock);
		job->err = MLA_EINVAL;
		pthread_mutex_unlock(&job->lock);
		items = 0;
	}
	for (;;) {
		int it, err;

		pthread_mutex_lock(&job->lock);
		it = job->err ? items : job->next++;
		pthread_mutex_unlock(&job->lock);
		if (it >= items)
			break;
		err = ref_item(a, it / a->s_q, it % a->s_q, job->out, job->lse, scores, qd, acc);
		if (err) {
			pthread_mutex_lock(&job->lock);
			job->err = err;
			pthread_mutex_unlock(&job->lock);
		}
	}
	free(scores);
	free(qd);
	free(acc);
	return NULL;
}

/* ---- the sparse form (kernels/mla_decode.h ABI 3; FlashMLA tests/ref.py ref_sparse_attn_decode) ---- */

/* The valid entries of row (b, i): cache rows of the main (cache 0) and the extra cache (1). */
struct sparse_entry {
	int32_t row;
	int cache;
};

/* Decode cache row r of cache `cache` (0 main, 1 extra) into row[0..d_qk) as doubles. */
static void sparse_load_row(const struct mla_decode_args *a, int cache, int32_t r, double *row)
{
	const uint8_t *kv = cache ? a->extra_kv_cache : a->kv_cache;
	int32_t page_size = cache ? a->extra_page_size : a->page_size;
	float f[MLA_D_QK];
	int n;

	if (a->kv_dtype == MLA_KV_BF16) {
		const uint16_t *p = (const uint16_t *)kv + (size_t)r * MLA_D_QK;

		for (int d = 0; d < MLA_D_QK; d++)
			row[d] = mla_bf16_to_float(p[d]);
		return;
	}
	n = mla_kv_decode_token(a->kv_dtype, kv + (size_t)(r / page_size) * mla_kv_page_bytes(a->kv_dtype, page_size),
				page_size, r % page_size, f);
	for (int d = 0; d < n; d++)
		row[d] = f[d];
}

/*
 * Collect the valid entries of row (b, i) in order (main cache t = 0..topk-1, then the extra
 * cache's); returns how many, or -1 for an index out of contract.
 */
static int sparse_entries(const struct mla_decode_args *a, int b, int i, struct sparse_entry *e)
{
	int n = 0;

	for (int cache = 0; cache < (a->extra_topk > 0 ? 2 : 1); cache++) {
		int32_t topk = cache ? a->extra_topk : a->topk;
		const int32_t *idx = (cache ? a->extra_indices : a->indices) + ((size_t)b * a->s_q + i) * topk;
		const int32_t *len = cache ? a->extra_topk_length : a->topk_length;
		int64_t rows = (int64_t)(cache ? a->extra_num_pages : a->num_pages) *
			       (cache ? a->extra_page_size : a->page_size);
		int32_t valid = len ? len[b] : topk;

		for (int32_t t = 0; t < topk && t < valid; t++) {
			if (idx[t] == -1)
				continue;
			if (idx[t] < 0 || idx[t] >= rows)
				return -1;
			e[n].row = idx[t];
			e[n++].cache = cache;
		}
	}
	return n;
}

/* One (batch, query position) of the sparse form: all heads. scores [h_q][n], qd [d_qk][h_q], acc [h_q][512]. */
static int ref_sparse_item(const struct mla_decode_args *a, int b, int i, float *out, float *lse,
			   struct sparse_entry *e, double *scores, double *qd, double *acc)
{
	int h_q = a->h_q, d_qk = a->d_qk, n = sparse_entries(a, b, i, e);
	double row[MLA_D_QK], *dot = acc;

	if (n < 0)
		return MLA_EINVAL;
	if (n == 0) { /* FlashMLA's "lonely q": out 0, lse +inf, sink or not */
		for (int h = 0; h < h_q; h++) {
			memset(out + (((size_t)b * a->s_q + i) * h_q + h) * MLA_D_V, 0, MLA_D_V * sizeof(float));
			lse[((size_t)b * h_q + h) * a->s_q + i] = INFINITY;
		}
		return MLA_OK;
	}
	for (int h = 0; h < h_q; h++) {
		const uint16_t *q = (const uint16_t *)a->q + (((size_t)b * a->s_q + i) * h_q + h) * d_qk;

		for (int d = 0; d < d_qk; d++)
			qd[(size_t)d * h_q + h] = mla_bf16_to_float(q[d]);
	}
	for (int j = 0; j < n; j++) {
		sparse_load_row(a, e[j].cache, e[j].row, row);
		for (int h = 0; h < h_q; h++)
			dot[h] = 0.0;
		for (int d = 0; d < d_qk; d++) {
			const double *qdh = qd + (size_t)d * h_q;
			double r = row[d];

			for (int h = 0; h < h_q; h++)
				dot[h] += qdh[h] * r;
		}
		for (int h = 0; h < h_q; h++)
			scores[(size_t)h * n + j] = dot[h] * (double)a->softmax_scale;
	}
	for (int h = 0; h < h_q; h++) {
		double *sh = scores + (size_t)h * n;
		double m = -INFINITY, sum = 0.0, l;

		for (int j = 0; j < n; j++)
			m = sh[j] > m ? sh[j] : m;
		for (int j = 0; j < n; j++) {
			sh[j] = exp(sh[j] - m);
			sum += sh[j];
		}
		l = m + log(sum);
		/* attn_sink scales the weights: out *= 1 / (1 + exp(sink - lse)); lse is reported without it */
		for (int j = 0; j < n; j++)
			sh[j] = sh[j] / sum * (a->attn_sink ? 1.0 / (1.0 + exp((double)a->attn_sink[h] - l)) : 1.0);
		lse[((size_t)b * h_q + h) * a->s_q + i] = (float)l;
	}
	memset(acc, 0, (size_t)h_q * MLA_D_V * sizeof(double));
	for (int j = 0; j < n; j++) {
		sparse_load_row(a, e[j].cache, e[j].row, row);
		for (int h = 0; h < h_q; h++) {
			double p = scores[(size_t)h * n + j];
			double *ah = acc + (size_t)h * MLA_D_V;

			for (int d = 0; d < MLA_D_V; d++)
				ah[d] += p * row[d];
		}
	}
	store_out(out, acc, a, b, i);
	return MLA_OK;
}

static void *ref_sparse_worker(void *arg)
{
	struct ref_job *job = arg;
	const struct mla_decode_args *a = job->a;
	int items = a->batch * a->s_q;
	size_t max_n = (size_t)a->topk + (size_t)(a->extra_topk > 0 ? a->extra_topk : 0);
	struct sparse_entry *e = malloc((max_n + 1) * sizeof(*e));
	double *scores = malloc((max_n + 1) * a->h_q * sizeof(double));
	double *qd = malloc((size_t)a->h_q * MLA_D_QK * sizeof(double));
	double *acc = malloc((size_t)a->h_q * MLA_D_V * sizeof(double));

	if (!e || !scores || !qd || !acc) {
		pthread_mutex_lock(&job->lock);
		job->err = MLA_EINVAL;
		pthread_mutex_unlock(&job->lock);
		items = 0;
	}
	for (;;) {
		int it, err;

		pthread_mutex_lock(&job->lock);
		it = job->err ? items : job->next++;
		pthread_mutex_unlock(&job->lock);
		if (it >= items)
			break;
		err = ref_sparse_item(a, it / a->s_q, it % a->s_q, job->out, job->lse, e, scores, qd, acc);
		if (err) {
			pthread_mutex_lock(&job->lock);
			job->err = err;
			pthread_mutex_unlock(&job->lock);
		}
	}
	free(e);
	free(scores);
	free(qd);
	free(acc);
	return NULL;
}

/* The sparse form's arguments are in contract (mla_decode.h): 1 yes, 0 no. */
static int sparse_args_ok(const struct mla_decode_args *a)
{
	if (!a->q || !a->indices || a->batch < 0 || a->s_q < 1 || a->h_q < 1 || a->page_size < 1 ||
	    a->num_pages < 0 || a->d_v != MLA_D_V || a->d_qk != mla_kv_d_qk(a->kv_dtype) ||
	    (a->kv_dtype != MLA_KV_BF16 && !mla_kv_is_blockscaled(a->kv_dtype)))
		return 0;
	if (a->batch > 0 && a->num_pages > 0 && !a->kv_cache)
		return 0;
	if (a->extra_topk < 0 ||
	    (a->extra_topk > 0 && (!a->extra_indices || a->extra_page_size < 1 || a->extra_num_pages < 0 ||
				   (a->extra_num_pages > 0 && !a->extra_kv_cache))))
		return 0;
	for (int b = 0; b < a->batch; b++)
		if ((a->topk_length && (a->topk_length[b] < 0 || a->topk_length[b] > a->topk)) ||
		    (a->extra_topk > 0 && a->extra_topk_length &&
		     (a->extra_topk_length[b] < 0 || a->extra_topk_length[b] > a->extra_topk)))
			return 0;
	return 1;
}

int mla_decode_reference(const struct mla_decode_args *a, float *out, float *lse, int threads)
{
	struct ref_job job;
	pthread_t tid[256];
	int started = 0, sparse = a && a->topk > 0;

	if (sparse && (!out || !lse || !sparse_args_ok(a)))
		return MLA_EINVAL;
	if (!sparse && (!a || !out || !lse || !a->q || !a->block_table || !a->seqlens || a->batch < 0 ||
	    a->s_q < 1 || a->h_q < 1 || a->page_size < 1 || a->max_pages < 0 || a->num_pages < 0 ||
	    (a->kv_dtype != MLA_KV_BF16 && a->kv_dtype != MLA_KV_FP8_E4M3_FNUZ)))
		return MLA_EINVAL;
	for (int b = 0; !sparse && b < a->batch; b++)
		if (a->seqlens[b] < 0 || (int64_t)a->seqlens[b] > (int64_t)a->max_pages * a->page_size)
			return MLA_EINVAL;
	if (!sparse && a->batch > 0 && !a->kv_cache && a->num_pages > 0)
		return MLA_EINVAL;
	memset(&job, 0, sizeof(job));
	job.a = a;
	job.out = out;
	job.lse = lse;
	pthread_mutex_init(&job.lock, NULL);
	if (threads < 1)
		threads = 1;
	if (threads > 256)
		threads = 256;
	for (int t = 1; t < threads; t++)
		if (pthread_create(&tid[started], NULL, sparse ? ref_sparse_worker : ref_worker, &job) == 0)
			started++;
	if (sparse)
		ref_sparse_worker(&job);
	else
		ref_worker(&job);
	for (int t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	pthread_mutex_destroy(&job.lock);
	return job.err;
}
