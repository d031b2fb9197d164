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
	for (int h = 0; h < h_q; h++) {
		float *o = out + (((size_t)b * a->s_q + i) * h_q + h) * MLA_D_V;

		for (int d = 0; d < MLA_D_V; d++)
			o[d] = (float)acc[(size_t)h * MLA_D_V + d];
	}
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

int mla_decode_reference(const struct mla_decode_args *a, float *out, float *lse, int threads)
{
	struct ref_job job;
	pthread_t tid[256];
	int started = 0;

	if (!a || !out || !lse || !a->q || !a->block_table || !a->seqlens || a->batch < 0 ||
	    a->s_q < 1 || a->h_q < 1 || a->page_size < 1 || a->max_pages < 0 || a->num_pages < 0 ||
	    (a->kv_dtype != MLA_KV_BF16 && a->kv_dtype != MLA_KV_FP8_E4M3_FNUZ))
		return MLA_EINVAL;
	for (int b = 0; b < a->batch; b++)
		if (a->seqlens[b] < 0 || (int64_t)a->seqlens[b] > (int64_t)a->max_pages * a->page_size)
			return MLA_EINVAL;
	if (a->batch > 0 && !a->kv_cache && a->num_pages > 0)
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
		if (pthread_create(&tid[started], NULL, ref_worker, &job) == 0)
			started++;
	ref_worker(&job);
	for (int t = 0; t < started; t++)
		pthread_join(tid[t], NULL);
	pthread_mutex_destroy(&job.lock);
	return job.err;
}
