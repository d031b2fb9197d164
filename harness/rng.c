/* rng.c - Philox-4x32-10 and the uniform, normal and bounded-integer helpers (see rng.h). */
#include "rng.h"

#include <math.h>

/* Constants of Philox-4x32 (Random123 philox.h): multipliers and Weyl key increments. */
#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

static inline void mulhilo(uint32_t a, uint32_t b, uint32_t *hi, uint32_t *lo)
{
	uint64_t p = (uint64_t)a * b;

	*hi = (uint32_t)(p >> 32);
	*lo = (uint32_t)p;
}

void rng_philox4x32_10(uint32_t out[4], const uint32_t ctr[4], const uint32_t key[2])
{
	uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
	uint32_t k0 = key[0], k1 = key[1];

	for (int r = 0; r < 10; r++) {
		uint32_t hi0, lo0, hi1, lo1;

		if (r > 0) {
			k0 += PHILOX_W0;
			k1 += PHILOX_W1;
		}
		mulhilo(PHILOX_M0, c0, &hi0, &lo0);
		mulhilo(PHILOX_M1, c2, &hi1, &lo1);
		c0 = hi1 ^ c1 ^ k0;
		c1 = lo1;
		c2 = hi0 ^ c3 ^ k1;
		c3 = lo0;
	}
	out[0] = c0;
	out[1] = c1;
	out[2] = c2;
	out[3] = c3;
}

void rng_block(uint32_t out[4], uint64_t seed, uint64_t stream, uint64_t index)
{
	uint32_t ctr[4] = {(uint32_t)index, (uint32_t)(index >> 32), (uint32_t)stream, (uint32_t)(stream >> 32)};
	uint32_t key[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};

	rng_philox4x32_10(out, ctr, key);
}

static inline uint64_t words_u64(uint32_t lo, uint32_t hi)
{
	return (uint64_t)hi << 32 | lo;
}

uint64_t rng_u64(uint64_t seed, uint64_t stream, uint64_t index)
{
	uint32_t w[4];

	rng_block(w, seed, stream, index);
	return words_u64(w[0], w[1]);
}

double rng_uniform(uint64_t seed, uint64_t stream, uint64_t index)
{
	return (double)(rng_u64(seed, stream, index) >> 11) * 0x1p-53;
}

double rng_normal(uint64_t seed, uint64_t stream, uint64_t index)
{
	uint32_t w[4];
	double u1, u2;

	rng_block(w, seed, stream, index);
	u1 = (double)((words_u64(w[0], w[1]) >> 11) + 1) * 0x1p-53; /* (0, 1]: log stays finite */
	u2 = (double)(words_u64(w[2], w[3]) >> 11) * 0x1p-53;       /* [0, 1) */
	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

uint64_t rng_below(uint64_t seed, uint64_t stream, uint64_t index, uint64_t n)
{
	uint64_t r = rng_u64(seed, stream, index);
	uint64_t rlo = r & 0xffffffffu, rhi = r >> 32;

	if (n == 0)
		return 0;
	if (n > 0x100000000ull)
		n = 0x100000000ull;
	/* high 64 bits of r * n for n <= 2^32, without 128-bit arithmetic */
	return (rhi * n + ((rlo * n) >> 32)) >> 32;
}
