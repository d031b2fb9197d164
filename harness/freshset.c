#include "freshset.h"
#include "mla_numeric.h"
#include "op.h"
#include "rng.h"
#include "vs_error.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

/* Streams of the run-time generator (distinct from the task generator's). */
enum { FRESH_STREAM_POOL = 101, FRESH_STREAM_OFF = 102, FRESH_STREAM_MASK = 103, FRESH_STREAM_CHECK = 104 };

static uint64_t draw_seed(void)
{
	const char *fixed = getenv("VS_FRESH_SEED");
	uint64_t s = 0;

	if (fixed && *fixed)
		return strtoull(fixed, NULL, 0);
	while (getrandom(&s, sizeof(s), 0) != (ssize_t)sizeof(s) && errno == EINTR)
		;
	return s;
}

int freshset_init(struct freshset *f, const struct task_spec *s, size_t q_elems, size_t out_elems, size_t lse_elems)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	memset(f, 0, sizeof(*f));
	f->seed = draw_seed();
	f->q_elems = q_elems;
	f->oracle = vs_op_of(s)->flops(s) <= VS_FRESH_ORACLE_FLOPS;
	f->threads = n > 0 ? (int)n : 1;
	f->pool = malloc(q_elems * sizeof(uint16_t) + 1);
	f->q = malloc(q_elems * sizeof(uint16_t) + 1);
	f->ref_out = malloc(out_elems * sizeof(float) + 1);
	f->ref_lse = malloc(lse_elems * sizeof(float) + 1);
	if (!f->pool || !f->q || !f->ref_out || !f->ref_lse) {
		freshset_release(f);
		return vs_error(VS_ENOMEM, "out of memory for the run-time input set");
	}
	for (size_t e = 0; e < q_elems; e++) {
		double x = rng_normal(f->seed, FRESH_STREAM_POOL, e);

		x = x < -1 ? -1 : x > 1 ? 1 : x;
		f->pool[e] = mla_float_to_bf16((float)x);
	}
	return 0;
}

void freshset_next(struct freshset *f, uint64_t k)
{
	size_t n = f->q_elems, off;
	uint64_t mask;

	if (!n)
		return;
	off = (size_t)(rng_u64(f->seed, FRESH_STREAM_OFF, k) % n);
	mask = rng_u64(f->seed, FRESH_STREAM_MASK, k) | 1; /* never the pool's own signs */
	for (size_t e = 0; e < n; e++) {
		size_t i = e + off < n ? e + off : e + off - n;

		f->q[e] = (uint16_t)(f->pool[i] ^ (((mask >> (e & 63)) & 1) << 15));
	}
}

int freshset_checked(const struct freshset *f, int pair, int every)
{
	if (pair == 0 || every <= 1)
		return 1;
	return rng_below(f->seed, FRESH_STREAM_CHECK, (uint64_t)pair, (uint64_t)every) == 0;
}

int freshset_reference(struct freshset *f, const struct task_data *t, int set)
{
	return vs_op_of(&t->spec)->reference(f->ref_out, f->ref_lse, &t->spec, &t->sets[set], f->q, f->threads);
}

void freshset_release(struct freshset *f)
{
	if (!f)
		return;
	free(f->pool);
	free(f->q);
	free(f->ref_out);
	free(f->ref_lse);
	memset(f, 0, sizeof(*f));
}
