/*
 * freshset.h - run-time input sets (docs/DESIGN.md "Run-time inputs"): inputs that no file holds.
 *
 * A worker draws a seed at run time (getrandom) that is never written anywhere; from it, every
 * timed pair and the run-time parity set get a fresh q, so an implementation can neither look its
 * answer up in the task dirs (or in its own process memory) nor replay the output of an earlier
 * call with the same content. The keys, block_table and seqlens are those of a stored input set.
 *
 * q for index k: a pool of N(0,1) values clamped to [-1, 1] (as bf16, drawn once per task from the
 * seed) read at a rotation off_k and with the sign of element e flipped where bit (e mod 64) of
 * mask_k is set (off_k and mask_k drawn from the seed for k): as cheap as a copy, and never the
 * same bytes twice.
 *
 * The reference of a fresh q: the oracle (the task's operator's, op.h) computes it in the run, after
 * the implementation's launch, when the task costs at most VS_FRESH_ORACLE_FLOPS; above that bound
 * the oracle is too slow to run per check and a timed candidate output is compared with the
 * baseline's output on the same inputs instead (tolerances doubled, cos_tol four times).
 */
#ifndef VS_FRESHSET_H
#define VS_FRESHSET_H

#include <stddef.h>
#include <stdint.h>

#include "task.h"

/** Tasks up to this many flops (the operator's count, op.h) get the oracle's reference for every fresh check. */
#define VS_FRESH_ORACLE_FLOPS 1e9

struct freshset {
	uint64_t seed; /* drawn at run time; never written to disk or to the result */
	size_t q_elems;
	uint16_t *pool; /* [q_elems] bf16 N(0,1) clamped to [-1, 1] */
	uint16_t *q;    /* [q_elems] the current fresh q */
	float *ref_out; /* [out_elems] the oracle's reference of the current q (after _reference) */
	float *ref_lse; /* [lse_elems] */
	int oracle;     /* 1: the task is within VS_FRESH_ORACLE_FLOPS */
	int threads;    /* oracle threads */
};

/**
 * Set up f for task s: draw the seed (getrandom; VS_FRESH_SEED=N in the environment fixes it for
 * debugging only), fill the pool. Errors: VS_ENOMEM.
 */
int freshset_init(struct freshset *f, const struct task_spec *s, size_t q_elems, size_t out_elems, size_t lse_elems);

/** Make f->q the fresh q of index k (deterministic in seed and k). */
void freshset_next(struct freshset *f, uint64_t k);

/** 1 if timed pair `pair` is checked: pair 0 and, at random from the seed, 1 pair in `every`. */
int freshset_checked(const struct freshset *f, int pair, int every);

/**
 * The oracle's reference of f->q on the keys, block_table and seqlens of t's set `set` into
 * f->ref_out, f->ref_lse (the operator's reference, op.h). Errors: VS_EFAIL when the oracle refuses
 * the arguments, VS_ENOMEM.
 */
int freshset_reference(struct freshset *f, const struct task_data *t, int set);

/** Free what f owns and zero it; accepts NULL. */
void freshset_release(struct freshset *f);

#endif /* VS_FRESHSET_H */
