/* check_rng.c - the counter-based generator: Random123 known answers, reproducibility, moments. */
#include "testutil.h"
#include "rng.h"

#include <math.h>

/* Random123 tests/kat_vectors, the three "philox4x32 10" lines: ctr[4] key[2] -> out[4]. */
static const struct {
	uint32_t ctr[4], key[2], out[4];
} kat[] = {
	{ { 0, 0, 0, 0 }, { 0, 0 }, { 0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8 } },
	{ { 0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff }, { 0xffffffff, 0xffffffff },
	  { 0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd } },
	{ { 0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344 }, { 0xa4093822, 0x299f31d0 },
	  { 0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1 } },
};

START_TEST(philox_matches_random123_known_answers)
{
	uint32_t out[4];

	rng_philox4x32_10(out, kat[_i].ctr, kat[_i].key);
	for (int w = 0; w < 4; w++)
		ck_assert_msg(out[w] == kat[_i].out[w], "kat %d word %d: got %08x, want %08x", _i, w,
			      out[w], kat[_i].out[w]);
}
END_TEST

START_TEST(block_layout_puts_index_then_stream_in_the_counter)
{
	uint32_t a[4], b[4];
	uint32_t ctr[4] = { 0x89abcdefu, 0x01234567u, 0x76543210u, 0xfedcba98u };
	uint32_t key[2] = { 0x55555555u, 0xaaaaaaaau };

	rng_block(a, 0xaaaaaaaa55555555ull, 0xfedcba9876543210ull, 0x0123456789abcdefull);
	rng_philox4x32_10(b, ctr, key);
	for (int w = 0; w < 4; w++)
		ck_assert_uint_eq(a[w], b[w]);
}
END_TEST

START_TEST(elements_are_reproducible_in_any_order)
{
	double fwd[64], z;

	for (int i = 0; i < 64; i++)
		fwd[i] = rng_normal(7, 2, (uint64_t)i);
	for (int i = 63; i >= 0; i--) {
		z = rng_normal(7, 2, (uint64_t)i);
		ck_assert_msg(z == fwd[i], "index %d: %.17g then %.17g", i, fwd[i], z);
	}
	ck_assert(rng_normal(7, 2, 5) != rng_normal(7, 3, 5));
	ck_assert(rng_normal(7, 2, 5) != rng_normal(8, 2, 5));
}
END_TEST

START_TEST(normal_variates_have_unit_moments)
{
	const int n = 200000;
	double sum = 0, sq = 0, four = 0;

	for (int i = 0; i < n; i++) {
		double z = rng_normal(12345, 1, (uint64_t)i);

		ck_assert(isfinite(z));
		sum += z;
		sq += z * z;
		four += z * z * z * z;
	}
	ck_assert_msg(fabs(sum / n) < 0.01, "mean %g", sum / n);
	ck_assert_msg(fabs(sq / n - 1) < 0.02, "variance %g", sq / n);
	ck_assert_msg(fabs(four / n - 3) < 0.1, "fourth moment %g", four / n);
}
END_TEST

START_TEST(uniforms_and_bounded_integers_stay_in_range)
{
	int hist[10] = { 0 };

	for (int i = 0; i < 100000; i++) {
		double u = rng_uniform(3, 0, (uint64_t)i);
		uint64_t r = rng_below(3, 1, (uint64_t)i, 10);

		ck_assert(u >= 0 && u < 1);
		ck_assert_uint_lt(r, 10);
		hist[r]++;
	}
	for (int b = 0; b < 10; b++)
		ck_assert_msg(hist[b] > 9500 && hist[b] < 10500, "bucket %d has %d", b, hist[b]);
	ck_assert_uint_eq(rng_below(3, 1, 0, 1), 0);
	ck_assert_uint_eq(rng_below(3, 1, 0, 0), 0);
}
END_TEST

static Suite *rng_suite(void)
{
	Suite *s = suite_create("rng");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, philox_matches_random123_known_answers, 0,
			    (int)(sizeof(kat) / sizeof(kat[0])));
	tcase_add_test(tc, block_layout_puts_index_then_stream_in_the_counter);
	tcase_add_test(tc, elements_are_reproducible_in_any_order);
	tcase_add_test(tc, normal_variates_have_unit_moments);
	tcase_add_test(tc, uniforms_and_bounded_integers_stay_in_range);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(rng_suite());
}
