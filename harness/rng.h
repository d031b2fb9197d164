/*
 * rng.h - the counter-based generator behind every task input (VS_GENERATOR_VERSION in task.h).
 *
 * Philox-4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel Random Numbers: As Easy as 1, 2, 3",
 * SC'11; the reference implementation is Random123's philox.h). It is a keyed bijection of a
 * 128-bit counter: element `index` of `stream` under `seed` is computed directly from
 * (seed, stream, index), without generating any other element, and the same on every platform.
 *   key     = { seed low 32 bits, seed high 32 bits }
 *   counter = { index low, index high, stream low, stream high }
 * Each (seed, stream, index) yields one block of four 32-bit words; the helpers below use the block
 * as two 53-bit uniforms (words 0-1 and 2-3), and a normal variate is Box-Muller over those two
 * uniforms of the same counter (the cosine branch only), so normal number i is still one counter.
 */
#ifndef VS_RNG_H
#define VS_RNG_H

#include <stdint.h>

#define RNG_NAME "philox4x32-10"

/** One Philox-4x32-10 block: out = philox(ctr, key). Checked against Random123's kat_vectors. */
void rng_philox4x32_10(uint32_t out[4], const uint32_t ctr[4], const uint32_t key[2]);

/** The block for (seed, stream, index), laid out as in the header comment. */
void rng_block(uint32_t out[4], uint64_t seed, uint64_t stream, uint64_t index);

/** 64 random bits: words 0 (low) and 1 (high) of the block. */
uint64_t rng_u64(uint64_t seed, uint64_t stream, uint64_t index);

/** Uniform double in [0, 1) with 53 random bits (words 0-1 of the block). */
double rng_uniform(uint64_t seed, uint64_t stream, uint64_t index);

/**
 * Standard normal N(0, 1) by Box-Muller: u1 in (0, 1] from words 0-1, u2 in [0, 1) from words 2-3,
 * z = sqrt(-2 ln u1) cos(2 pi u2). Computed in double with libm's log, sqrt and cos.
 */
double rng_normal(uint64_t seed, uint64_t stream, uint64_t index);

/**
 * Integer uniform in [0, n) for 1 <= n <= 2^32: the high 64 bits of rng_u64() x n (Lemire's
 * multiply-shift without rejection; the bias is below n / 2^64). Returns 0 when n is 0.
 */
uint64_t rng_below(uint64_t seed, uint64_t stream, uint64_t index, uint64_t n);

#endif /* VS_RNG_H */
