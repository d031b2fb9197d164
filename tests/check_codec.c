/*
 * check_codec.c - the number formats: fp8_e4m3_fnuz and fp8_e4m3fn (OCP) decode on all 256 codes
 * against values computed here from the formats' definitions, the encoders (round to nearest even,
 * saturation, negative zero, NaN), and bf16 conversions.
 */
#include "testutil.h"
#include "codec.h"
#include "mla_numeric.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/*
 * fp8_e4m3_fnuz from its definition: sign s, exponent field e (bias 8), mantissa m (3 bits).
 * 0x80 is the only NaN; e = 0 is subnormal m x 2^-10 (so 0x00 is +0); else (1 + m/8) x 2^(e-8).
 */
static double fnuz_value(unsigned c)
{
	unsigned s = c >> 7, e = (c >> 3) & 15, m = c & 7;
	double mag;

	if (c == 0x80)
		return NAN;
	mag = e == 0 ? m / 1024.0 : (1.0 + m / 8.0) * pow(2.0, (double)e - 8.0);
	return s ? -mag : mag;
}

START_TEST(fp8_decode_matches_the_definition_on_all_256_codes)
{
	for (unsigned c = 0; c < 256; c++) {
		float got = mla_fp8_e4m3_fnuz_to_float((uint8_t)c);
		double want = fnuz_value(c);

		if (isnan(want)) {
			ck_assert_msg(isnan(got), "code 0x%02x: got %g, want NaN", c, (double)got);
			continue;
		}
		ck_assert_msg((double)got == want, "code 0x%02x: got %.9g, want %.9g", c, (double)got,
			      want);
		ck_assert_msg(!signbit(got) || got != 0, "code 0x%02x decodes to -0", c);
	}
}
END_TEST

static const struct {
	unsigned code;
	double value;
} fp8_landmarks[] = {
	{ 0x00, 0.0 }, { 0x01, 0.0009765625 }, { 0x07, 7.0 / 1024 }, { 0x08, 0.0078125 },
	{ 0x40, 1.0 }, { 0x41, 1.125 }, { 0x7e, 224.0 }, { 0x7f, 240.0 }, { 0xff, -240.0 },
	{ 0xc0, -1.0 }, { 0x81, -0.0009765625 },
};

START_TEST(fp8_decode_landmarks)
{
	float got = mla_fp8_e4m3_fnuz_to_float((uint8_t)fp8_landmarks[_i].code);

	ck_assert_msg((double)got == fp8_landmarks[_i].value, "code 0x%02x: got %.9g, want %.9g",
		      fp8_landmarks[_i].code, (double)got, fp8_landmarks[_i].value);
}
END_TEST

START_TEST(fp8_encode_inverts_decode_on_every_finite_code)
{
	for (unsigned c = 0; c < 256; c++) {
		if (c == 0x80)
			continue;
		uint8_t back = vs_fp8_e4m3_fnuz_encode((float)fnuz_value(c));

		ck_assert_msg(back == c, "encode(decode(0x%02x) = %g) = 0x%02x", c, fnuz_value(c), back);
	}
}
END_TEST

/* The midpoint between adjacent finite codes c and c + 1 of one sign rounds to the even code. */
START_TEST(fp8_encode_ties_go_to_the_even_code)
{
	for (unsigned base = 0; base <= 0x80; base += 0x80) {
		for (unsigned c = base; c < base + 0x7f; c++) {
			unsigned lo = c, hi = c + 1;
			double mid;
			uint8_t got, want;

			if (lo == 0x80)   /* no -0: the negative side starts at 0x81 */
				continue;
			mid = (fnuz_value(lo) + fnuz_value(hi)) / 2;
			want = (uint8_t)((lo & 1) == 0 ? lo : hi);
			got = vs_fp8_e4m3_fnuz_encode((float)mid);
			ck_assert_msg(got == want, "tie %.9g between 0x%02x and 0x%02x: got 0x%02x, "
				      "want 0x%02x", mid, lo, hi, got, want);
			/* just off the midpoint: the nearer code */
			got = vs_fp8_e4m3_fnuz_encode(nextafterf((float)mid, 0.0f));
			ck_assert_msg(got == (fabs(fnuz_value(lo)) < fabs(fnuz_value(hi)) ? lo : hi),
				      "just inside %.9g: got 0x%02x", mid, got);
			got = vs_fp8_e4m3_fnuz_encode(nextafterf((float)mid, mid > 0 ? INFINITY : -INFINITY));
			ck_assert_msg(got == (fabs(fnuz_value(lo)) < fabs(fnuz_value(hi)) ? hi : lo),
				      "just outside %.9g: got 0x%02x", mid, got);
		}
	}
}
END_TEST

static const struct {
	float in;
	unsigned want;
	const char *what;
} fp8_cases[] = {
	{ 240.0f, 0x7f, "max" },
	{ -240.0f, 0xff, "-max" },
	{ 232.0f, 0x7e, "tie between 224 and 240 goes to even 0x7e" },
	{ 236.0f, 0x7f, "nearer 240" },
	{ 240.0001f, 0x7f, "just above max saturates" },
	{ 248.0f, 0x7f, "half a step above max saturates" },
	{ 1000.0f, 0x7f, "saturate" },
	{ -1000.0f, 0xff, "saturate negative" },
	{ INFINITY, 0x7f, "+inf saturates (fnuz has no inf)" },
	{ -INFINITY, 0xff, "-inf saturates" },
	{ NAN, 0x80, "NaN" },
	{ -NAN, 0x80, "negative NaN" },
	{ 0.0f, 0x00, "+0" },
	{ -0.0f, 0x00, "-0 encodes as +0" },
	{ 1e-9f, 0x00, "underflow" },
	{ -1e-9f, 0x00, "negative underflow is +0" },
	{ 0.00048828125f, 0x00, "2^-11: tie between 0 and 0x01 goes to 0" },
	{ -0.00048828125f, 0x00, "-2^-11: tie goes to +0" },
	{ 0.00048829f, 0x01, "just above 2^-11" },
	{ -0.00048829f, 0x81, "just below -2^-11" },
	{ 0.0078125f, 0x08, "smallest normal" },
	{ 1.0f, 0x40, "one" },
	{ -1.0f, 0xc0, "minus one" },
	{ 1.0625f, 0x40, "tie 1 vs 1.125 goes to even 0x40" },
	{ 1.1875f, 0x42, "tie 1.125 vs 1.25 goes to even 0x42" },
};

START_TEST(fp8_encode_table)
{
	uint8_t got = vs_fp8_e4m3_fnuz_encode(fp8_cases[_i].in);

	ck_assert_msg(got == fp8_cases[_i].want, "%s: encode(%.9g) = 0x%02x, want 0x%02x",
		      fp8_cases[_i].what, (double)fp8_cases[_i].in, got, fp8_cases[_i].want);
}
END_TEST

static float from_bits(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

static const struct {
	uint32_t in;
	uint16_t want;
	const char *what;
} bf16_cases[] = {
	{ 0x3f800000u, 0x3f80, "one" },
	{ 0x3f808000u, 0x3f80, "tie rounds to even (down)" },
	{ 0x3f818000u, 0x3f82, "tie rounds to even (up)" },
	{ 0x3f808001u, 0x3f81, "above the tie rounds up" },
	{ 0x3f807fffu, 0x3f80, "below the tie rounds down" },
	{ 0xbf808000u, 0xbf80, "negative tie to even" },
	{ 0x7f7fffffu, 0x7f80, "FLT_MAX rounds to inf" },
	{ 0x7f800000u, 0x7f80, "+inf" },
	{ 0xff800000u, 0xff80, "-inf" },
	{ 0x7fc00000u, 0x7fc0, "quiet NaN" },
	{ 0xffc00000u, 0xffc0, "negative quiet NaN" },
	{ 0x7f800001u, 0x7fc0, "signalling NaN with low payload stays NaN (quiet)" },
	{ 0x7fff0000u, 0x7fff, "NaN payload kept" },
	{ 0x80000000u, 0x8000, "-0" },
	{ 0x00000001u, 0x0000, "tiny subnormal rounds to 0" },
};

START_TEST(bf16_encode_table)
{
	uint16_t got = mla_float_to_bf16(from_bits(bf16_cases[_i].in));

	ck_assert_msg(got == bf16_cases[_i].want, "%s: bf16(0x%08x) = 0x%04x, want 0x%04x",
		      bf16_cases[_i].what, bf16_cases[_i].in, got, bf16_cases[_i].want);
}
END_TEST

/* Independent RNE to bf16 for finite x: compare distances to the two neighbours in double. */
static uint16_t bf16_nearest(uint32_t u)
{
	uint16_t lo = (uint16_t)(u >> 16);
	double x = from_bits(u), a = from_bits((uint32_t)lo << 16);
	double b = from_bits((uint32_t)(uint16_t)(lo + 1) << 16);
	double da, db;

	if (!isfinite(b))      /* above the largest bf16: the next step would be 2^128 */
		b = copysign(ldexp(1.0, 128), x);
	da = fabs(x - a);
	db = fabs(x - b);
	if (da < db)
		return lo;
	if (db < da)
		return (uint16_t)(lo + 1);
	return (lo & 1) ? (uint16_t)(lo + 1) : lo;
}

START_TEST(bf16_encode_matches_nearest_even_on_sampled_floats)
{
	uint32_t u = 0x12345678u;

	for (int i = 0; i < 1000000; i++) {
		uint16_t got, want;

		u = u * 1664525u + 1013904223u;
		if ((u & 0x7f800000u) == 0x7f800000u)
			continue; /* inf / NaN: covered by the table */
		got = mla_float_to_bf16(from_bits(u));
		want = bf16_nearest(u);
		ck_assert_msg(got == want, "bf16(0x%08x) = 0x%04x, want 0x%04x", u, got, want);
	}
}
END_TEST

START_TEST(bf16_decode_is_exact_on_all_65536_codes)
{
	for (uint32_t h = 0; h < 65536; h++) {
		float f = mla_bf16_to_float((uint16_t)h);
		uint32_t bits;

		memcpy(&bits, &f, 4);
		ck_assert_msg(bits == h << 16, "bf16 0x%04x decodes to bits 0x%08x", h, bits);
		if (!isnan(f))
			ck_assert_msg(mla_float_to_bf16(f) == h, "bf16 0x%04x does not round-trip", h);
		else
			ck_assert(isnan(mla_bf16_to_float(mla_float_to_bf16(f))));
	}
}
END_TEST

/* ---- fp8_e4m3fn (OCP), the codes of the sparse form's fp8_ds_mla and fp8_model1 --------------- */

/*
 * fp8_e4m3fn from its definition (OCP 8-bit FP 1.0, E4M3): bias 7, 0x7F and 0xFF NaN, no inf;
 * e = 0 is subnormal m x 2^-9 (0x80 is -0); else (1 + m/8) x 2^(e-7); largest finite 0x7E = 448.
 */
static double fn_value(unsigned c)
{
	unsigned s = c >> 7, e = (c >> 3) & 15, m = c & 7;
	double mag;

	if ((c & 0x7f) == 0x7f)
		return NAN;
	mag = e == 0 ? m / 512.0 : (1.0 + m / 8.0) * pow(2.0, (double)e - 7.0);
	return s ? -mag : mag;
}

START_TEST(e4m3fn_decode_matches_the_definition_on_all_256_codes)
{
	for (unsigned c = 0; c < 256; c++) {
		float got = mla_fp8_e4m3fn_to_float((uint8_t)c);
		double want = fn_value(c);

		if (isnan(want))
			ck_assert_msg(isnan(got), "decode(0x%02x) = %g, want NaN", c, (double)got);
		else
			ck_assert_msg((double)got == want && !signbit(got) == !signbit(want),
				      "decode(0x%02x) = %.9g, want %.9g", c, (double)got, want);
	}
	ck_assert(fn_value(0x7e) == 448.0 && fn_value(0x01) == 1.0 / 512);
}
END_TEST

START_TEST(e4m3fn_encode_round_trips_all_256_codes)
{
	for (unsigned c = 0; c < 256; c++) {
		double v = fn_value(c);
		uint8_t back = vs_fp8_e4m3fn_encode((float)v);

		if (isnan(v))
			ck_assert_msg(back == 0x7f, "encode(NaN of 0x%02x) = 0x%02x, want 0x7f", c, back);
		else
			ck_assert_msg(back == c, "encode(decode(0x%02x) = %g) = 0x%02x", c, v, back);
	}
}
END_TEST

START_TEST(e4m3fn_encode_ties_go_to_the_even_code)
{
	for (unsigned base = 0; base <= 0x80; base += 0x80) {
		for (unsigned c = base; c < base + 0x7e; c++) {
			unsigned lo = c, hi = c + 1;
			double mid = (fn_value(lo) + fn_value(hi)) / 2;
			uint8_t want = (uint8_t)((lo & 1) == 0 ? lo : hi), got = vs_fp8_e4m3fn_encode((float)mid);

			ck_assert_msg(got == want, "tie %.9g between 0x%02x and 0x%02x: got 0x%02x, want 0x%02x", mid,
				      lo, hi, got, want);
			got = vs_fp8_e4m3fn_encode(nextafterf((float)mid, mid > 0 ? INFINITY : -INFINITY));
			ck_assert_msg(got == hi, "just outside %.9g: got 0x%02x, want 0x%02x", mid, got, hi);
			if (mid != 0) {
				got = vs_fp8_e4m3fn_encode(nextafterf((float)mid, 0.0f));
				ck_assert_msg(got == lo, "just inside %.9g: got 0x%02x, want 0x%02x", mid, got, lo);
			}
		}
	}
}
END_TEST

static const struct {
	float in;
	unsigned want;
	const char *what;
} fn_cases[] = {
	{ 448.0f, 0x7e, "max" },
	{ -448.0f, 0xfe, "-max" },
	{ 464.0f, 0x7e, "half a step above max saturates (480 would be NaN)" },
	{ 1e6f, 0x7e, "saturate" },
	{ -INFINITY, 0xfe, "-inf saturates" },
	{ NAN, 0x7f, "NaN" },
	{ 0.0f, 0x00, "+0" },
	{ -0.0f, 0x80, "-0 keeps its sign" },
	{ 0.0009765625f, 0x00, "2^-10: tie between 0 and 0x01 goes to 0" },
	{ 0.0009766f, 0x01, "just above 2^-10" },
	{ 0.015625f, 0x08, "smallest normal 2^-6" },
	{ 1.0f, 0x38, "one" },
	{ -1.0f, 0xb8, "minus one" },
	{ 1.0625f, 0x38, "tie 1 vs 1.125 goes to even 0x38" },
	{ 1.1875f, 0x3a, "tie 1.125 vs 1.25 goes to even 0x3a" },
};

START_TEST(e4m3fn_encode_table)
{
	uint8_t got = vs_fp8_e4m3fn_encode(fn_cases[_i].in);

	ck_assert_msg(got == fn_cases[_i].want, "%s: encode(%.9g) = 0x%02x, want 0x%02x", fn_cases[_i].what,
		      (double)fn_cases[_i].in, got, fn_cases[_i].want);
}
END_TEST

static Suite *codec_suite(void)
{
	Suite *s = suite_create("codec");
	TCase *fp8 = tcase_create("fp8_e4m3_fnuz");
	TCase *bf16 = tcase_create("bf16");

	tcase_add_test(fp8, fp8_decode_matches_the_definition_on_all_256_codes);
	tcase_add_loop_test(fp8, fp8_decode_landmarks, 0,
			    (int)(sizeof(fp8_landmarks) / sizeof(fp8_landmarks[0])));
	tcase_add_test(fp8, fp8_encode_inverts_decode_on_every_finite_code);
	tcase_add_test(fp8, fp8_encode_ties_go_to_the_even_code);
	tcase_add_loop_test(fp8, fp8_encode_table, 0, (int)(sizeof(fp8_cases) / sizeof(fp8_cases[0])));
	tcase_add_test(fp8, e4m3fn_decode_matches_the_definition_on_all_256_codes);
	tcase_add_test(fp8, e4m3fn_encode_round_trips_all_256_codes);
	tcase_add_test(fp8, e4m3fn_encode_ties_go_to_the_even_code);
	tcase_add_loop_test(fp8, e4m3fn_encode_table, 0, (int)(sizeof(fn_cases) / sizeof(fn_cases[0])));
	tcase_add_loop_test(bf16, bf16_encode_table, 0, (int)(sizeof(bf16_cases) / sizeof(bf16_cases[0])));
	tcase_add_test(bf16, bf16_encode_matches_nearest_even_on_sampled_floats);
	tcase_add_test(bf16, bf16_decode_is_exact_on_all_65536_codes);
	suite_add_tcase(s, fp8);
	suite_add_tcase(s, bf16);
	return s;
}

int main(void)
{
	return tu_run_suite(codec_suite());
}
