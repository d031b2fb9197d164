/*
 * check_oracle.c - the reference MLA decode (oracles/mla_decode_ref.c) on cases worked out here:
 * closed forms for one and two keys, empty sequences, causal s_q = 2, page size and permutation
 * independence, the fp8 path (code x kv_scale), NaN tails and sentinels, thread count; the sparse
 * form (one entry, lonely rows, attn_sink, topk_length, the extra cache, the block-scaled formats,
 * and a cross-check with the dense form).
 * Expected values are computed in this file from the definitions (mla_decode.h), never with the
 * oracle's own helpers.
 */
#include "testutil.h"
#include "mla_decode_ref.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SENTINEL 0x40000000
#define D 576
#define DV 512

static double bf16_val(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* bf16 bits of a float that bf16 represents exactly (the test only uses such values). */
static uint16_t bf16_exact(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	ck_assert_msg((u & 0xffff) == 0, "%g is not exact in bf16", (double)f);
	return (uint16_t)(u >> 16);
}

static double fnuz_val(uint8_t c)
{
	unsigned e = (c >> 3) & 15, m = c & 7;
	double mag;

	if (c == 0x80)
		return NAN;
	mag = e == 0 ? m / 1024.0 : (1.0 + m / 8.0) * pow(2.0, (double)e - 8.0);
	return (c & 0x80) ? -mag : mag;
}

struct prob {
	struct mla_decode_args a;
	uint16_t *q;
	void *kv;
	int32_t *bt, *lens;
	float *out, *lse;
};

static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

/*
 * A problem with every cache slot NaN, every block_table entry the sentinel, and the pages of the
 * sequences assigned through a permutation drawn from perm_seed (0: identity, 1: reversed).
 */
static void prob_init(struct prob *p, int batch, int s_q, int h_q, int page_size, const int *lens,
		      int kv_dtype, uint32_t perm_seed, int spare_pages)
{
	int max_pages = 1, used = 0, cursor = 0;
	int32_t *perm;
	size_t slots;

	memset(p, 0, sizeof(*p));
	for (int b = 0; b < batch; b++) {
		int np = (lens[b] + page_size - 1) / page_size;

		max_pages = np > max_pages ? np : max_pages;
		used += np;
	}
	p->a.batch = batch;
	p->a.s_q = s_q;
	p->a.h_q = h_q;
	p->a.page_size = page_size;
	p->a.max_pages = max_pages;
	p->a.num_pages = used + spare_pages;
	p->a.kv_dtype = kv_dtype;
	p->a.softmax_scale = 0.125f;
	p->a.kv_scale = 1.0f;
	slots = (size_t)p->a.num_pages * page_size * D;
	p->q = calloc((size_t)batch * s_q * h_q * D, 2);
	p->kv = malloc(slots * (kv_dtype == MLA_KV_BF16 ? 2 : 1));
	p->bt = malloc((size_t)batch * max_pages * 4);
	p->lens = malloc((size_t)batch * 4);
	p->out = malloc((size_t)batch * s_q * h_q * DV * 4);
	p->lse = malloc((size_t)batch * h_q * s_q * 4);
	perm = malloc((size_t)p->a.num_pages * 4);
	ck_assert(p->q && p->kv && p->bt && p->lens && p->out && p->lse && perm);
	for (size_t i = 0; i < slots; i++) {
		if (kv_dtype == MLA_KV_BF16)
			((uint16_t *)p->kv)[i] = 0x7fc0;
		else
			((uint8_t *)p->kv)[i] = 0x80;
	}
	for (int i = 0; i < p->a.num_pages; i++)
		perm[i] = perm_seed == 1 ? p->a.num_pages - 1 - i : i;
	if (perm_seed > 1) {
		for (int i = p->a.num_pages - 1; i > 0; i--) {
			int j = (int)(lcg(&perm_seed) % (uint32_t)(i + 1)), t = perm[i];

			perm[i] = perm[j];
			perm[j] = t;
		}
	}
	for (int b = 0; b < batch; b++) {
		p->lens[b] = lens[b];
		for (int pg = 0; pg < max_pages; pg++)
			p->bt[b * max_pages + pg] = pg * page_size < lens[b] ? perm[cursor++] : SENTINEL;
	}
	free(perm);
	p->a.q = p->q;
	p->a.kv_cache = p->kv;
	p->a.block_table = p->bt;
	p->a.seqlens = p->lens;
}

static void prob_free(struct prob *p)
{
	free(p->q);
	free(p->kv);
	free(p->bt);
	free(p->lens);
	free(p->out);
	free(p->lse);
}

/* Element index of dim 0 of logical key j of sequence b in the cache. */
static size_t key_at(const struct prob *p, int b, int j)
{
	int32_t page = p->bt[b * p->a.max_pages + j / p->a.page_size];

	ck_assert_int_ne(page, SENTINEL);
	return ((size_t)page * p->a.page_size + (size_t)(j % p->a.page_size)) * D;
}

static uint16_t *key_bf16(struct prob *p, int b, int j)
{
	return (uint16_t *)p->kv + key_at(p, b, j);
}

static uint8_t *key_fp8(struct prob *p, int b, int j)
{
	return (uint8_t *)p->kv + key_at(p, b, j);
}

static uint16_t *q_row(struct prob *p, int b, int i, int h)
{
	return p->q + (((size_t)b * p->a.s_q + i) * p->a.h_q + h) * D;
}

static float *out_row(struct prob *p, int b, int i, int h)
{
	return p->out + (((size_t)b * p->a.s_q + i) * p->a.h_q + h) * DV;
}

static float lse_at(const struct prob *p, int b, int i, int h)
{
	return p->lse[((size_t)b * p->a.h_q + h) * p->a.s_q + i];
}

static double key_val(struct prob *p, int b, int j, int d)
{
	if (p->a.kv_dtype == MLA_KV_BF16)
		return bf16_val(key_bf16(p, b, j)[d]);
	return fnuz_val(key_fp8(p, b, j)[d]) * (double)p->a.kv_scale;
}

/* Naive softmax attention of query (b, i, h) over its visible keys, in double. */
static void naive(struct prob *p, int b, int i, int h, double *out, double *lse)
{
	int n = p->lens[b] - p->a.s_q + 1 + i;
	double *s = malloc(sizeof(double) * (n > 0 ? n : 1)), m = -INFINITY, sum = 0;

	memset(out, 0, DV * sizeof(double));
	if (n <= 0) {
		*lse = INFINITY;
		free(s);
		return;
	}
	for (int j = 0; j < n; j++) {
		double dot = 0;

		for (int d = 0; d < D; d++)
			dot += bf16_val(q_row(p, b, i, h)[d]) * key_val(p, b, j, d);
		s[j] = dot * p->a.softmax_scale;
		m = s[j] > m ? s[j] : m;
	}
	for (int j = 0; j < n; j++)
		sum += exp(s[j] - m);
	for (int j = 0; j < n; j++)
		for (int d = 0; d < DV; d++)
			out[d] += exp(s[j] - m) / sum * key_val(p, b, j, d);
	*lse = m + log(sum);
	free(s);
}

static void run(struct prob *p, int threads)
{
	int rc = mla_decode_reference(&p->a, p->out, p->lse, threads);

	ck_assert_msg(rc == MLA_OK, "mla_decode_reference returned %d", rc);
}

/* Fill the visible keys and the queries with random bf16 values in [-1, 1) (steps of 1/128). */
static void fill_random(struct prob *p, uint32_t seed)
{
	for (int b = 0; b < p->a.batch; b++)
		for (int j = 0; j < p->lens[b]; j++)
			for (int d = 0; d < D; d++) {
				float v = (float)((int)(lcg(&seed) % 256) - 128) / 128.0f;

				uint8_t code = (uint8_t)(lcg(&seed) & 0xff);

				if (p->a.kv_dtype == MLA_KV_BF16)
					key_bf16(p, b, j)[d] = bf16_exact(v);
				else
					key_fp8(p, b, j)[d] = code == 0x80 ? 0x00 : code;
			}
	for (size_t e = 0; e < (size_t)p->a.batch * p->a.s_q * p->a.h_q * D; e++)
		p->q[e] = bf16_exact((float)((int)(lcg(&seed) % 256) - 128) / 128.0f);
}

static void expect_close(double got, double want, double tol, const char *what, int b, int i,
			 int h, int d)
{
	ck_assert_msg(fabs(got - want) <= tol * (1 + fabs(want)),
		      "%s at (b=%d, s=%d, h=%d, d=%d): got %.9g, want %.9g", what, b, i, h, d, got,
		      want);
}

static void expect_naive(struct prob *p)
{
	double ref[DV], lse;

	for (int b = 0; b < p->a.batch; b++)
		for (int i = 0; i < p->a.s_q; i++)
			for (int h = 0; h < p->a.h_q; h++) {
				naive(p, b, i, h, ref, &lse);
				if (isinf(lse))
					ck_assert_msg(isinf(lse_at(p, b, i, h)) && lse_at(p, b, i, h) > 0,
						      "lse at (b=%d, s=%d, h=%d): got %g, want +inf", b,
						      i, h, (double)lse_at(p, b, i, h));
				else
					expect_close(lse_at(p, b, i, h), lse, 1e-6, "lse", b, i, h, -1);
				for (int d = 0; d < DV; d++)
					expect_close(out_row(p, b, i, h)[d], ref[d], 1e-6, "out", b, i, h, d);
			}
}

START_TEST(one_key_gives_its_v_row_and_lse_equal_to_the_score)
{
	int lens[1] = { 1 };
	struct prob p;
	uint16_t *k;

	prob_init(&p, 1, 1, 2, 16, lens, MLA_KV_BF16, 0, 0);
	k = key_bf16(&p, 0, 0);
	memset(k, 0, D * 2);
	for (int d = 0; d < DV; d++)
		k[d] = bf16_exact((float)((d % 17) - 8) / 16.0f);
	k[0] = bf16_exact(0.5f);
	k[1] = bf16_exact(0.25f);
	k[575] = bf16_exact(0.25f);
	q_row(&p, 0, 0, 0)[0] = bf16_exact(1.0f);
	q_row(&p, 0, 0, 0)[1] = bf16_exact(0.5f);
	q_row(&p, 0, 0, 1)[575] = bf16_exact(-1.0f);
	run(&p, 1);
	/* s = 0.125 * (1*0.5 + 0.5*0.25) and 0.125 * (-1 * 0.25), exact in binary */
	ck_assert_msg(lse_at(&p, 0, 0, 0) == 0.078125f, "lse head 0: %.9g", (double)lse_at(&p, 0, 0, 0));
	ck_assert_msg(lse_at(&p, 0, 0, 1) == -0.03125f, "lse head 1: %.9g", (double)lse_at(&p, 0, 0, 1));
	for (int h = 0; h < 2; h++)
		for (int d = 0; d < DV; d++)
			ck_assert_msg(out_row(&p, 0, 0, h)[d] == (float)bf16_val(k[d]),
				      "out (h=%d, d=%d): got %.9g, want the V value %.9g", h, d,
				      (double)out_row(&p, 0, 0, h)[d], bf16_val(k[d]));
	prob_free(&p);
}
END_TEST

static const struct {
	float k1, k2, q;   /* first key dim of each key, first query dim */
	float v1, v2;      /* every V dim of each key */
} two_keys[] = {
	{ 1.0f, -0.5f, 2.0f, 1.0f, -1.0f },
	{ 0.0f, 0.0f, 1.0f, 0.5f, 0.25f },     /* equal scores: the mean */
	{ 8.0f, -8.0f, 4.0f, -2.0f, 3.0f },    /* far apart: almost all weight on key 1 */
};

START_TEST(two_keys_follow_the_closed_form_softmax)
{
	int lens[1] = { 2 };
	struct prob p;
	double s1, s2, p1, p2, lse;

	prob_init(&p, 1, 1, 1, 1, lens, MLA_KV_BF16, 1, 0);
	memset(key_bf16(&p, 0, 0), 0, D * 2);
	memset(key_bf16(&p, 0, 1), 0, D * 2);
	key_bf16(&p, 0, 0)[0] = bf16_exact(two_keys[_i].k1);
	key_bf16(&p, 0, 1)[0] = bf16_exact(two_keys[_i].k2);
	for (int d = 1; d < DV; d++) {
		key_bf16(&p, 0, 0)[d] = bf16_exact(two_keys[_i].v1);
		key_bf16(&p, 0, 1)[d] = bf16_exact(two_keys[_i].v2);
	}
	q_row(&p, 0, 0, 0)[0] = bf16_exact(two_keys[_i].q);
	run(&p, 1);
	s1 = 0.125 * two_keys[_i].q * two_keys[_i].k1;
	s2 = 0.125 * two_keys[_i].q * two_keys[_i].k2;
	p1 = 1 / (1 + exp(s2 - s1));
	p2 = 1 / (1 + exp(s1 - s2));
	lse = fmax(s1, s2) + log1p(exp(-fabs(s1 - s2)));
	expect_close(lse_at(&p, 0, 0, 0), lse, 1e-7, "lse", 0, 0, 0, -1);
	expect_close(out_row(&p, 0, 0, 0)[0], p1 * two_keys[_i].k1 + p2 * two_keys[_i].k2, 1e-7,
		     "out", 0, 0, 0, 0);
	for (int d = 1; d < DV; d++)
		expect_close(out_row(&p, 0, 0, 0)[d], p1 * two_keys[_i].v1 + p2 * two_keys[_i].v2, 1e-7,
			     "out", 0, 0, 0, d);
	prob_free(&p);
}
END_TEST

START_TEST(empty_sequence_gives_zero_out_and_infinite_lse)
{
	int lens[3] = { 0, 3, 0 };
	struct prob p;

	prob_init(&p, 3, 1, 4, 16, lens, MLA_KV_BF16, 0, 1);
	fill_random(&p, 5);
	run(&p, 2);
	for (int b = 0; b < 3; b += 2)
		for (int h = 0; h < 4; h++) {
			ck_assert_msg(isinf(lse_at(&p, b, 0, h)) && lse_at(&p, b, 0, h) > 0,
				      "lse (b=%d, h=%d) = %g, want +inf", b, h, (double)lse_at(&p, b, 0, h));
			for (int d = 0; d < DV; d++)
				ck_assert_msg(out_row(&p, b, 0, h)[d] == 0.0f, "out (b=%d, h=%d, d=%d) = %g",
					      b, h, d, (double)out_row(&p, b, 0, h)[d]);
		}
	expect_naive(&p);
	prob_free(&p);
}
END_TEST

START_TEST(causal_s_q_2_lets_query_i_see_seqlen_minus_1_plus_i_keys)
{
	int lens[3] = { 3, 1, 20 };
	struct prob p;

	prob_init(&p, 3, 2, 3, 16, lens, MLA_KV_BF16, 7, 0);
	fill_random(&p, 11);
	run(&p, 1);
	expect_naive(&p);
	/* seqlen 1: query 0 sees nothing, query 1 sees the one key (out = its V row) */
	for (int h = 0; h < 3; h++) {
		ck_assert(isinf(lse_at(&p, 1, 0, h)) && lse_at(&p, 1, 0, h) > 0);
		ck_assert_float_eq(out_row(&p, 1, 0, h)[7], 0.0f);
		for (int d = 0; d < DV; d++)
			ck_assert_msg(out_row(&p, 1, 1, h)[d] == (float)bf16_val(key_bf16(&p, 1, 0)[d]),
				      "b=1 s=1 h=%d d=%d: %g", h, d, (double)out_row(&p, 1, 1, h)[d]);
	}
	/* seqlen 3, query 0: the softmax over keys 0 and 1 only (key 2 is future) */
	for (int h = 0; h < 3; h++) {
		double s[2], m, sum;

		for (int j = 0; j < 2; j++) {
			s[j] = 0;
			for (int d = 0; d < D; d++)
				s[j] += bf16_val(q_row(&p, 0, 0, h)[d]) * bf16_val(key_bf16(&p, 0, j)[d]);
			s[j] *= 0.125;
		}
		m = fmax(s[0], s[1]);
		sum = exp(s[0] - m) + exp(s[1] - m);
		expect_close(lse_at(&p, 0, 0, h), m + log(sum), 1e-6, "lse", 0, 0, h, -1);
		for (int d = 0; d < DV; d++)
			expect_close(out_row(&p, 0, 0, h)[d],
				     (exp(s[0] - m) * bf16_val(key_bf16(&p, 0, 0)[d]) +
				      exp(s[1] - m) * bf16_val(key_bf16(&p, 0, 1)[d])) / sum,
				     1e-6, "out", 0, 0, h, d);
	}
	prob_free(&p);
}
END_TEST

/* The same logical sequences, stored with page sizes 1, 16, 64 under different permutations. */
START_TEST(page_size_and_page_order_do_not_change_any_bit)
{
	int lens[2] = { 70, 33 };
	const int sizes[3] = { 1, 16, 64 };
	const uint32_t perms[3] = { 1, 99, 12345 };
	float *out0 = NULL, *lse0 = NULL;
	size_t out_bytes = 2 * 2 * 3 * DV * 4, lse_bytes = 2 * 3 * 2 * 4;

	for (int c = 0; c < 3; c++) {
		struct prob p;
		uint32_t seed = 77;

		prob_init(&p, 2, 2, 3, sizes[c], lens, MLA_KV_BF16, perms[c], c);
		/* identical logical content: fill in logical order from one LCG stream */
		for (int b = 0; b < 2; b++)
			for (int j = 0; j < lens[b]; j++)
				for (int d = 0; d < D; d++)
					key_bf16(&p, b, j)[d] =
						bf16_exact((float)((int)(lcg(&seed) % 256) - 128) / 64.0f);
		for (size_t e = 0; e < (size_t)2 * 2 * 3 * D; e++)
			p.q[e] = bf16_exact((float)((int)(lcg(&seed) % 256) - 128) / 128.0f);
		run(&p, 2);
		if (c == 0) {
			expect_naive(&p);
			out0 = malloc(out_bytes);
			lse0 = malloc(lse_bytes);
			memcpy(out0, p.out, out_bytes);
			memcpy(lse0, p.lse, lse_bytes);
		} else {
			ck_assert_msg(!memcmp(out0, p.out, out_bytes), "out differs for page_size %d",
				      sizes[c]);
			ck_assert_msg(!memcmp(lse0, p.lse, lse_bytes), "lse differs for page_size %d",
				      sizes[c]);
		}
		prob_free(&p);
	}
	free(out0);
	free(lse0);
}
END_TEST

START_TEST(fp8_uses_decoded_code_times_kv_scale)
{
	int lens[1] = { 1 };
	struct prob p;
	uint8_t *k;

	prob_init(&p, 1, 1, 1, 16, lens, MLA_KV_FP8_E4M3_FNUZ, 0, 0);
	p.a.kv_scale = 0.00390625f * 3; /* 3/256 */
	k = key_fp8(&p, 0, 0);
	for (int d = 0; d < D; d++)
		k[d] = (uint8_t)(d == 0 ? 0x7f : d == 1 ? 0xff : d == 2 ? 0x01 : (d * 37) & 0xff);
	for (int d = 0; d < D; d++)
		if (k[d] == 0x80)
			k[d] = 0x00;
	q_row(&p, 0, 0, 0)[0] = bf16_exact(1.0f);
	run(&p, 1);
	/* one key: out = V = code x kv_scale exactly (rounded once to float), lse = 0.125 * 240 x scale */
	for (int d = 0; d < DV; d++)
		ck_assert_msg(out_row(&p, 0, 0, 0)[d] == (float)(fnuz_val(k[d]) * (double)p.a.kv_scale),
			      "d=%d code 0x%02x: got %.9g, want %.9g", d, k[d],
			      (double)out_row(&p, 0, 0, 0)[d], fnuz_val(k[d]) * (double)p.a.kv_scale);
	ck_assert_float_eq_tol(lse_at(&p, 0, 0, 0), (float)(0.125 * 240 * (double)p.a.kv_scale), 1e-7);
	prob_free(&p);
}
END_TEST

START_TEST(fp8_matches_naive_on_random_codes)
{
	int lens[2] = { 40, 9 };
	struct prob p;

	prob_init(&p, 2, 2, 2, 16, lens, MLA_KV_FP8_E4M3_FNUZ, 3, 2);
	p.a.kv_scale = 0.01f;
	fill_random(&p, 21);
	run(&p, 3);
	expect_naive(&p);
	prob_free(&p);
}
END_TEST

/* NaN in every slot past the lengths and in spare pages, sentinels in block_table: all finite. */
START_TEST(nan_tails_and_sentinels_never_reach_the_outputs)
{
	int lens[4] = { 17, 1, 64, 30 };
	struct prob p;

	for (int dt = MLA_KV_BF16; dt <= MLA_KV_FP8_E4M3_FNUZ; dt++) {
		prob_init(&p, 4, 2, 5, 16, lens, dt, 4242, 3);
		if (dt == MLA_KV_FP8_E4M3_FNUZ)
			p.a.kv_scale = 1.0f / 240;
		fill_random(&p, 8);
		run(&p, 4);
		for (int b = 0; b < 4; b++)
			for (int i = 0; i < 2; i++)
				for (int h = 0; h < 5; h++) {
					int n = lens[b] - 2 + 1 + i;

					if (n <= 0)
						continue;
					ck_assert_msg(isfinite(lse_at(&p, b, i, h)), "dtype %d lse (b=%d, s=%d, "
						      "h=%d) = %g", dt, b, i, h, (double)lse_at(&p, b, i, h));
					for (int d = 0; d < DV; d++)
						ck_assert_msg(isfinite(out_row(&p, b, i, h)[d]), "dtype %d out "
							      "(b=%d, s=%d, h=%d, d=%d) = %g", dt, b, i, h, d,
							      (double)out_row(&p, b, i, h)[d]);
				}
		prob_free(&p);
	}
}
END_TEST

START_TEST(thread_count_does_not_change_any_bit)
{
	int lens[5] = { 100, 0, 37, 64, 5 };
	struct prob p;
	float *out1, *lse1;
	size_t ob = (size_t)5 * 2 * 4 * DV * 4, lb = (size_t)5 * 4 * 2 * 4;
	const int threads[3] = { 2, 3, 8 };

	prob_init(&p, 5, 2, 4, 16, lens, MLA_KV_BF16, 5, 0);
	fill_random(&p, 3);
	run(&p, 1);
	out1 = malloc(ob);
	lse1 = malloc(lb);
	memcpy(out1, p.out, ob);
	memcpy(lse1, p.lse, lb);
	for (int t = 0; t < 3; t++) {
		memset(p.out, 0xff, ob);
		memset(p.lse, 0xff, lb);
		run(&p, threads[t]);
		ck_assert_msg(!memcmp(out1, p.out, ob), "out differs with %d threads", threads[t]);
		ck_assert_msg(!memcmp(lse1, p.lse, lb), "lse differs with %d threads", threads[t]);
	}
	free(out1);
	free(lse1);
	prob_free(&p);
}
END_TEST

START_TEST(out_of_contract_arguments_are_refused)
{
	int lens[1] = { 5 };
	struct prob p;

	prob_init(&p, 1, 1, 1, 4, lens, MLA_KV_BF16, 0, 0);
	p.lens[0] = p.a.max_pages * p.a.page_size + 1;
	ck_assert_int_eq(mla_decode_reference(&p.a, p.out, p.lse, 1), MLA_EINVAL);
	p.lens[0] = 5;
	p.bt[0] = p.a.num_pages; /* a visible page outside the cache */
	ck_assert_int_eq(mla_decode_reference(&p.a, p.out, p.lse, 1), MLA_EINVAL);
	prob_free(&p);
}
END_TEST

/* ---- the sparse form (FlashMLA tests/ref.py ref_sparse_attn_decode) -------------------------- */

/*
 * A sparse problem over a bf16 cache of `rows` rows (page_size 1), every row NaN until set:
 * batch b, s_q 1, h_q 2, indices [b, 1, topk] all -1 until set.
 */
struct sprob {
	struct mla_decode_args a;
	uint16_t *q, *kv;
	int32_t *idx;
	float *out, *lse;
};

static void sprob_init(struct sprob *p, int batch, int topk, int rows)
{
	memset(p, 0, sizeof(*p));
	p->a.batch = batch;
	p->a.s_q = 1;
	p->a.h_q = 2;
	p->a.page_size = 1;
	p->a.num_pages = rows;
	p->a.kv_dtype = MLA_KV_BF16;
	p->a.softmax_scale = 0.125f;
	p->a.kv_scale = 1.0f;
	p->a.topk = topk;
	p->a.d_qk = D;
	p->a.d_v = DV;
	p->q = calloc((size_t)batch * 2 * D, 2);
	p->kv = malloc((size_t)rows * D * 2);
	p->idx = malloc((size_t)batch * topk * 4);
	p->out = malloc((size_t)batch * 2 * DV * 4);
	p->lse = malloc((size_t)batch * 2 * 4);
	ck_assert(p->q && p->kv && p->idx && p->out && p->lse);
	for (size_t i = 0; i < (size_t)rows * D; i++)
		p->kv[i] = 0x7fc0;
	for (int i = 0; i < batch * topk; i++)
		p->idx[i] = -1;
	p->a.q = p->q;
	p->a.kv_cache = p->kv;
	p->a.indices = p->idx;
}

static void sprob_free(struct sprob *p)
{
	free(p->q);
	free(p->kv);
	free(p->idx);
	free(p->out);
	free(p->lse);
}

/* Row r: random bf16 values in [-1, 1) (steps of 1/128); q of every batch and head likewise. */
static void sprob_fill(struct sprob *p, const int *rows, int n, uint32_t seed)
{
	for (int k = 0; k < n; k++)
		for (int d = 0; d < D; d++)
			p->kv[(size_t)rows[k] * D + d] = bf16_exact((float)((int)(lcg(&seed) % 256) - 128) / 128.0f);
	for (size_t e = 0; e < (size_t)p->a.batch * 2 * D; e++)
		p->q[e] = bf16_exact((float)((int)(lcg(&seed) % 256) - 128) / 128.0f);
}

static void srun(struct sprob *p, int threads)
{
	int rc = mla_decode_reference(&p->a, p->out, p->lse, threads);

	ck_assert_msg(rc == MLA_OK, "sparse mla_decode_reference returned %d", rc);
}

START_TEST(sparse_one_valid_entry_gives_its_v_row)
{
	struct sprob p;
	int row = 5;

	sprob_init(&p, 1, 4, 8);
	sprob_fill(&p, &row, 1, 7);
	p.idx[2] = 5; /* the others -1, every other row NaN */
	srun(&p, 1);
	for (int h = 0; h < 2; h++) {
		double s = 0;

		for (int d = 0; d < D; d++)
			s += bf16_val(p.q[(size_t)h * D + d]) * bf16_val(p.kv[5 * D + d]);
		ck_assert_msg(p.lse[h] == (float)(s * 0.125), "lse head %d: %.9g, want %.9g", h, (double)p.lse[h],
			      s * 0.125);
		for (int d = 0; d < DV; d++)
			ck_assert_msg(p.out[h * DV + d] == (float)bf16_val(p.kv[5 * D + d]), "out h %d d %d: %g", h,
				      d, (double)p.out[h * DV + d]);
	}
	sprob_free(&p);
}
END_TEST

/* Unselected rows (NaN here, as the generator leaves them) never reach the outputs: zeros give the same bits. */
START_TEST(sparse_nan_in_unselected_rows_does_not_matter)
{
	static const int rows[2] = { 1, 6 };
	static const int32_t len[1] = { 2 };
	struct sprob p;
	float out0[2 * DV], lse0[2];

	sprob_init(&p, 1, 4, 8);
	sprob_fill(&p, rows, 2, 29);
	p.idx[0] = 6;
	p.idx[1] = 1;
	p.idx[2] = 3; /* past topk_length: a NaN row */
	p.a.topk_length = len;
	srun(&p, 1);
	memcpy(out0, p.out, sizeof(out0));
	memcpy(lse0, p.lse, sizeof(lse0));
	for (int r = 0; r < 8; r++)
		if (r != 1 && r != 6)
			memset(p.kv + (size_t)r * D, 0, D * 2);
	srun(&p, 1);
	ck_assert(!memcmp(out0, p.out, sizeof(out0)) && !memcmp(lse0, p.lse, sizeof(lse0)));
	for (int e = 0; e < 2 * DV; e++)
		ck_assert_msg(isfinite(out0[e]), "out %d is %g", e, (double)out0[e]);
	sprob_free(&p);
}
END_TEST

START_TEST(sparse_row_without_valid_entry_gives_zero_and_infinite_lse)
{
	static const float sink[2] = { -INFINITY, 0.5f };
	struct sprob p;
	int row = 0;

	sprob_init(&p, 1, 4, 2);
	sprob_fill(&p, &row, 1, 9);
	p.a.attn_sink = sink; /* a lonely row stays 0 / +inf with a sink */
	srun(&p, 1);
	for (int h = 0; h < 2; h++) {
		ck_assert_msg(isinf(p.lse[h]) && p.lse[h] > 0, "lse %g", (double)p.lse[h]);
		for (int d = 0; d < DV; d++)
			ck_assert_msg(p.out[h * DV + d] == 0 && !signbit(p.out[h * DV + d]), "out %g",
				      (double)p.out[h * DV + d]);
	}
	sprob_free(&p);
}
END_TEST

/* Two entries, then the same with attn_sink {+inf, -inf} and a finite sink: out scaled, lse not. */
START_TEST(sparse_attn_sink_scales_out_and_leaves_lse)
{
	static const int rows[2] = { 1, 3 };
	static const float inf_sinks[2] = { INFINITY, -INFINITY }, finite[2] = { 0.75f, -2.0f };
	struct sprob p;
	float out0[2 * DV], lse0[2];

	sprob_init(&p, 1, 3, 4);
	sprob_fill(&p, rows, 2, 11);
	p.idx[0] = 3;
	p.idx[2] = 1;
	srun(&p, 1);
	memcpy(out0, p.out, sizeof(out0));
	memcpy(lse0, p.lse, sizeof(lse0));
	p.a.attn_sink = inf_sinks;
	srun(&p, 1);
	ck_assert(!memcmp(lse0, p.lse, sizeof(lse0)));
	for (int d = 0; d < DV; d++) {
		ck_assert_msg(p.out[d] == 0, "sink +inf: out d %d is %g", d, (double)p.out[d]);
		ck_assert_msg(p.out[DV + d] == out0[DV + d], "sink -inf changed out d %d", d);
	}
	p.a.attn_sink = finite;
	srun(&p, 1);
	ck_assert(!memcmp(lse0, p.lse, sizeof(lse0)));
	for (int h = 0; h < 2; h++)
		for (int d = 0; d < DV; d++) {
			double want = out0[h * DV + d] / (1.0 + exp((double)finite[h] - lse0[h]));

			expect_close(p.out[h * DV + d], want, 1e-6, "sink out", 0, 0, h, d);
		}
	sprob_free(&p);
}
END_TEST

START_TEST(sparse_topk_length_masks_entries_past_it)
{
	static const int rows[4] = { 0, 2, 4, 6 };
	static const int32_t len[2] = { 2, 0 };
	struct sprob p;
	float out0[2 * 2 * DV], lse0[4];

	sprob_init(&p, 2, 4, 8);
	sprob_fill(&p, rows, 4, 13);
	/* batch 0: two valid entries, then two past topk_length naming NaN rows 7 and 5 */
	p.idx[0] = 2;
	p.idx[1] = 6;
	p.idx[2] = 7;
	p.idx[3] = 5;
	p.idx[4] = 0; /* batch 1: topk_length 0 makes it lonely */
	p.idx[6] = 4;
	p.a.topk_length = len;
	srun(&p, 1);
	memcpy(out0, p.out, sizeof(out0));
	memcpy(lse0, p.lse, sizeof(lse0));
	p.a.topk_length = NULL;
	p.idx[2] = p.idx[3] = p.idx[4] = p.idx[6] = -1;
	srun(&p, 1);
	ck_assert(!memcmp(out0, p.out, sizeof(out0)) && !memcmp(lse0, p.lse, sizeof(lse0)));
	ck_assert(isinf(lse0[2]) && isfinite(lse0[0]));
	sprob_free(&p);
}
END_TEST

/* An extra cache joins the softmax: the same as one cache holding both, indices concatenated. */
START_TEST(sparse_extra_cache_equals_concatenation)
{
	static const int rows[5] = { 0, 1, 2, 3, 4 };
	static const int32_t xlen[1] = { 2 };
	struct sprob p, both;
	uint16_t *extra = malloc(3 * D * 2);
	int32_t xidx[3] = { 2, -1, 0 };

	sprob_init(&p, 1, 2, 2);
	sprob_init(&both, 1, 5, 5);
	sprob_fill(&both, rows, 5, 17);
	memcpy(p.q, both.q, 2 * D * 2);
	memcpy(p.kv, both.kv, 2 * D * 2);
	memcpy(extra, both.kv + 2 * D, 3 * D * 2);
	p.idx[0] = 1;
	p.idx[1] = 0;
	p.a.extra_kv_cache = extra;
	p.a.extra_indices = xidx;
	p.a.extra_topk = 3;
	p.a.extra_num_pages = 3;
	p.a.extra_page_size = 1;
	p.a.extra_topk_length = xlen; /* xidx[2] lies past it */
	srun(&p, 1);
	both.idx[0] = 1;
	both.idx[1] = 0;
	both.idx[2] = 2 + 2; /* extra row 2 */
	srun(&both, 1);
	ck_assert(!memcmp(p.out, both.out, 2 * DV * 4) && !memcmp(p.lse, both.lse, 2 * 4));
	free(extra);
	sprob_free(&p);
	sprob_free(&both);
}
END_TEST

/* Cross-check of two paths: indices naming exactly the visible keys reproduce the dense form. */
START_TEST(sparse_over_the_first_keys_equals_the_dense_form)
{
	int lens[3] = { 37, 0, 70 }, topk = 80;
	struct prob p;
	float *out = malloc((size_t)3 * 2 * 4 * DV * 4), *lse = malloc((size_t)3 * 4 * 2 * 4);
	int32_t *idx = malloc((size_t)3 * 2 * topk * 4);
	struct mla_decode_args s;

	prob_init(&p, 3, 2, 4, 16, lens, MLA_KV_BF16, 7, 1);
	fill_random(&p, 5);
	run(&p, 2);
	for (int b = 0; b < 3; b++)
		for (int i = 0; i < 2; i++)
			for (int t = 0; t < topk; t++) {
				int n = lens[b] - 2 + 1 + i; /* the dense form's causal visible keys */

				idx[((size_t)b * 2 + i) * topk + t] =
					t < n ? (int32_t)(key_at(&p, b, t) / D) : -1;
			}
	s = p.a;
	s.block_table = NULL;
	s.seqlens = NULL;
	s.max_pages = 0;
	s.indices = idx;
	s.topk = topk;
	s.d_qk = D;
	s.d_v = DV;
	ck_assert_int_eq(mla_decode_reference(&s, out, lse, 3), MLA_OK);
	ck_assert_msg(!memcmp(out, p.out, (size_t)3 * 2 * 4 * DV * 4), "out differs from the dense form");
	ck_assert_msg(!memcmp(lse, p.lse, (size_t)3 * 4 * 2 * 4), "lse differs from the dense form");
	free(out);
	free(lse);
	free(idx);
	prob_free(&p);
}
END_TEST

/* e4m3fn from its definition (bias 7, NaN 0x7F/0xFF, subnormal m x 2^-9). */
static double fn_val(uint8_t c)
{
	unsigned e = (c >> 3) & 15, m = c & 7;
	double mag = e == 0 ? m / 512.0 : (1.0 + m / 8.0) * pow(2.0, (double)e - 7.0);

	return (c & 0x80) ? -mag : mag;
}

/* One valid entry in the block-scaled formats: out is the row decoded by hand (V = 512 values). */
START_TEST(sparse_block_scaled_formats_decode_code_times_scale)
{
	static const int32_t dtypes[2] = { MLA_KV_FP8_DS_MLA, MLA_KV_FP8_MODEL1 };
	int32_t kv_dtype = dtypes[_i], d_qk = _i ? 512 : 576, ps = 2, page_bytes = _i ? 1728 : 1312;
	uint8_t *kv = calloc(2, (size_t)page_bytes);
	uint16_t q[2 * 576];
	int32_t idx[2] = { -1, 3 }; /* page 1, slot 1 */
	float out[2 * DV], lse[2];
	double want[576];
	struct mla_decode_args a;
	uint32_t seed = 21;

	ck_assert_int_eq((int32_t)mla_kv_page_bytes(kv_dtype, ps), page_bytes);
	memset(kv, 0x7f, 2 * (size_t)page_bytes); /* NaN codes everywhere but the entry's token */
	for (int d = 0; d < 2 * d_qk; d++)
		q[d] = bf16_exact((float)((int)(lcg(&seed) % 256) - 128) / 128.0f);
	if (!_i) {
		uint8_t *t = kv + page_bytes + 656;

		for (int k = 0; k < 4; k++) {
			float sc = ldexpf(1.0f, -8 - k);

			memcpy(t + 512 + 4 * k, &sc, 4);
			for (int d = 128 * k; d < 128 * k + 128; d++) {
				t[d] = (uint8_t)(lcg(&seed) % 0x7f) | (uint8_t)(d & 1 ? 0x80 : 0);
				want[d] = fn_val(t[d]) * sc;
			}
		}
		for (int d = 0; d < 64; d++) {
			uint16_t h = bf16_exact((float)(d - 32) / 64.0f);

			memcpy(t + 528 + 2 * d, &h, 2);
			want[512 + d] = bf16_val(h);
		}
	} else {
		uint8_t *t = kv + page_bytes + 576, *sc = kv + page_bytes + 2 * 576 + 8;

		for (int k = 0; k < 7; k++) {
			sc[k] = (uint8_t)(127 - 6 - k);
			for (int d = 64 * k; d < 64 * k + 64; d++) {
				t[d] = (uint8_t)(lcg(&seed) % 0x7f) | (uint8_t)(d & 1 ? 0x80 : 0);
				want[d] = fn_val(t[d]) * ldexp(1.0, -6 - k);
			}
		}
		for (int d = 0; d < 64; d++) {
			uint16_t h = bf16_exact((float)(d - 32) / 64.0f);

			memcpy(t + 448 + 2 * d, &h, 2);
			want[448 + d] = bf16_val(h);
		}
	}
	memset(&a, 0, sizeof(a));
	a.q = q;
	a.kv_cache = kv;
	a.indices = idx;
	a.batch = 1;
	a.s_q = 1;
	a.h_q = 2;
	a.num_pages = 2;
	a.page_size = ps;
	a.kv_dtype = kv_dtype;
	a.softmax_scale = 0.125f;
	a.topk = 2;
	a.d_qk = d_qk;
	a.d_v = DV;
	ck_assert_int_eq(mla_decode_reference(&a, out, lse, 1), MLA_OK);
	for (int h = 0; h < 2; h++) {
		double s = 0;

		for (int d = 0; d < d_qk; d++)
			s += bf16_val(q[h * d_qk + d]) * want[d];
		ck_assert_msg(lse[h] == (float)(s * 0.125), "%s lse %d: %.9g, want %.9g", mla_kv_dtype_name(kv_dtype),
			      h, (double)lse[h], s * 0.125);
		for (int d = 0; d < DV; d++)
			ck_assert_msg(out[h * DV + d] == (float)want[d], "%s out h %d d %d: %g, want %g",
				      mla_kv_dtype_name(kv_dtype), h, d, (double)out[h * DV + d], want[d]);
	}
	a.d_qk = 576 + 512 - d_qk; /* the other layout's d_qk */
	ck_assert_int_eq(mla_decode_reference(&a, out, lse, 1), MLA_EINVAL);
	free(kv);
}
END_TEST

START_TEST(sparse_thread_count_does_not_change_any_bit)
{
	int rows[40];
	struct sprob p;
	float out1[6 * 2 * DV], lse1[12];

	for (int r = 0; r < 40; r++)
		rows[r] = r;
	sprob_init(&p, 6, 16, 40);
	sprob_fill(&p, rows, 40, 23);
	for (int e = 0; e < 6 * 16; e++)
		p.idx[e] = (e * 7) % 41 == 40 ? -1 : (e * 7) % 41;
	srun(&p, 1);
	memcpy(out1, p.out, sizeof(out1));
	memcpy(lse1, p.lse, sizeof(lse1));
	srun(&p, 4);
	ck_assert(!memcmp(out1, p.out, sizeof(out1)) && !memcmp(lse1, p.lse, sizeof(lse1)));
	sprob_free(&p);
}
END_TEST

START_TEST(sparse_out_of_contract_arguments_are_refused)
{
	static const int32_t bad_len[1] = { 5 };
	struct sprob p;

	sprob_init(&p, 1, 4, 8);
	p.idx[1] = 8; /* one past the cache */
	ck_assert_int_eq(mla_decode_reference(&p.a, p.out, p.lse, 1), MLA_EINVAL);
	p.idx[1] = -2; /* negative but not -1 */
	ck_assert_int_eq(mla_decode_reference(&p.a, p.out, p.lse, 1), MLA_EINVAL);
	p.idx[1] = 3;
	p.a.topk_length = bad_len; /* above topk */
	ck_assert_int_eq(mla_decode_reference(&p.a, p.out, p.lse, 1), MLA_EINVAL);
	p.a.topk_length = NULL;
	p.a.kv_dtype = MLA_KV_FP8_E4M3_FNUZ; /* dense-only format */
	ck_assert_int_eq(mla_decode_reference(&p.a, p.out, p.lse, 1), MLA_EINVAL);
	p.a.kv_dtype = MLA_KV_BF16;
	p.a.indices = NULL;
	ck_assert_int_eq(mla_decode_reference(&p.a, p.out, p.lse, 1), MLA_EINVAL);
	sprob_free(&p);
}
END_TEST

static Suite *oracle_suite(void)
{
	Suite *s = suite_create("oracle");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, one_key_gives_its_v_row_and_lse_equal_to_the_score);
	tcase_add_loop_test(tc, two_keys_follow_the_closed_form_softmax, 0,
			    (int)(sizeof(two_keys) / sizeof(two_keys[0])));
	tcase_add_test(tc, empty_sequence_gives_zero_out_and_infinite_lse);
	tcase_add_test(tc, causal_s_q_2_lets_query_i_see_seqlen_minus_1_plus_i_keys);
	tcase_add_test(tc, page_size_and_page_order_do_not_change_any_bit);
	tcase_add_test(tc, fp8_uses_decoded_code_times_kv_scale);
	tcase_add_test(tc, fp8_matches_naive_on_random_codes);
	tcase_add_test(tc, nan_tails_and_sentinels_never_reach_the_outputs);
	tcase_add_test(tc, thread_count_does_not_change_any_bit);
	tcase_add_test(tc, out_of_contract_arguments_are_refused);
	tcase_add_test(tc, sparse_one_valid_entry_gives_its_v_row);
	tcase_add_test(tc, sparse_nan_in_unselected_rows_does_not_matter);
	tcase_add_test(tc, sparse_row_without_valid_entry_gives_zero_and_infinite_lse);
	tcase_add_test(tc, sparse_attn_sink_scales_out_and_leaves_lse);
	tcase_add_test(tc, sparse_topk_length_masks_entries_past_it);
	tcase_add_test(tc, sparse_extra_cache_equals_concatenation);
	tcase_add_test(tc, sparse_over_the_first_keys_equals_the_dense_form);
	tcase_add_loop_test(tc, sparse_block_scaled_formats_decode_code_times_scale, 0, 2);
	tcase_add_test(tc, sparse_thread_count_does_not_change_any_bit);
	tcase_add_test(tc, sparse_out_of_contract_arguments_are_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(oracle_suite());
}
