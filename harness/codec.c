#include "codec.h"

#include <math.h>

uint8_t vs_fp8_e4m3_fnuz_encode(float x)
{
	uint8_t sign = signbit(x) ? 0x80 : 0x00;
	double a = fabs((double)x);
	int e, m, k;
	uint8_t code;

	if (isnan(x))
		return 0x80;
	if (a >= 240.0)
		return sign | 0x7f;
	if (a < 0.0078125) {                    /* below 2^-7, the smallest normal: subnormal m * 2^-10 */
		m = (int)nearbyint(a * 1024.0); /* exact scaling; nearbyint rounds ties to even */
		e = 0;
		if (m == 8) { /* rounded up into the smallest normal */
			e = 1;
			m = 0;
		}
	} else {
		frexp(a, &k);  /* a = f * 2^k, f in [0.5, 1) */
		e = k - 1 + 8; /* biased exponent of a = (2f) * 2^(k-1) */
		m = (int)nearbyint((ldexp(a, -(k - 1)) - 1.0) * 8.0);
		if (m == 8) {
			m = 0;
			e++;
		}
		if (e > 15)
			return sign | 0x7f;
	}
	code = (uint8_t)((e << 3) | m);
	if (code == 0)
		return 0x00; /* no negative zero in fnuz */
	return sign | code;
}

uint8_t vs_fp8_e4m3fn_encode(float x)
{
	uint8_t sign = signbit(x) ? 0x80 : 0x00;
	double a = fabs((double)x);
	int e, m, k;

	if (isnan(x))
		return 0x7f;
	if (a >= 448.0)
		return sign | 0x7e;
	if (a < 0.015625) {                    /* below 2^-6, the smallest normal: subnormal m * 2^-9 */
		m = (int)nearbyint(a * 512.0); /* exact scaling; nearbyint rounds ties to even */
		e = 0;
		if (m == 8) { /* rounded up into the smallest normal */
			e = 1;
			m = 0;
		}
	} else {
		frexp(a, &k);  /* a = f * 2^k, f in [0.5, 1) */
		e = k - 1 + 7; /* biased exponent of a = (2f) * 2^(k-1) */
		m = (int)nearbyint((ldexp(a, -(k - 1)) - 1.0) * 8.0);
		if (m == 8) {
			m = 0;
			e++;
		}
		if (e > 15 || (e == 15 && m == 7))
			return sign | 0x7e; /* unreachable below 448; kept so no code reaches NaN */
	}
	return sign | (uint8_t)((e << 3) | m);
}
