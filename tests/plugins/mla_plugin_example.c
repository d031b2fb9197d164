/*
 * mla_plugin_example.c - an MLA decode implementation built outside validate_skill and loaded as a
 * plugin: it includes only kernels/mla_decode.h and exports mla_decode_plugin(). Build it with any
 * C compiler:
 *
 *   cc -std=c11 -O2 -shared -fPIC -I kernels tests/plugins/mla_plugin_example.c -o example.so -lm
 *
 * The kernel: one pass per query row with an online softmax in float (each KV row is read once per
 * head), on the CPU backend. Build-time knobs, for the loader's tests:
 *   -DPLUGIN_NAME='"team.other"'   another implementation name (default "example.online")
 *   -DPLUGIN_ABI_VERSION=99        claim another ABI version (the harness must refuse it)
 *   -DPLUGIN_NO_SYMBOL             export the descriptor under another name (must be refused)
 *   -DPLUGIN_WRONG                 add 0.25 to one output element (parity must fail)
 *   -DPLUGIN_PICKY                 a supports() that declines tasks of page_size 1 (the planner lists
 *                                  them as skipped, with the reason)
 *   -DPLUGIN_WRONG_AFTER=N         right for N launches, then wrong as PLUGIN_WRONG (the timed checks
 *                                  must catch it)
 *   -DPLUGIN_DECLINES              a second config, "short", whose launch declines (MLA_EUNSUPPORTED)
 *                                  tasks whose block table spans more than 128 keys, as hip.flash's
 *                                  one-tile config does past 64 (the run records it unsupported there)
 */
#include "mla_decode.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifndef PLUGIN_NAME
#define PLUGIN_NAME "example.online"
#endif
#ifndef PLUGIN_ABI_VERSION
#define PLUGIN_ABI_VERSION MLA_DECODE_ABI_VERSION
#endif

static float bf16_to_float(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

static uint16_t float_to_bf16(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return 0x7fc0; /* NaN */
	u += 0x7fffu + ((u >> 16) & 1u); /* round to nearest even */
	return (uint16_t)(u >> 16);
}

/* fp8 e4m3 fnuz: exponent bias 8, no infinities, 0x80 the only NaN. */
static float fnuz_to_float(uint8_t c)
{
	int e = (c >> 3) & 0xf, m = c & 7;
	float v;

	if (c == 0x80)
		return NAN;
	v = e ? ldexpf(1.0f + m / 8.0f, e - 8) : ldexpf(m / 8.0f, 1 - 8);
	return (c & 0x80) ? -v : v;
}

static int example_configs(const char *arch, struct mla_decode_config *out, int cap)
{
	if (!strncmp(arch, "sm_", 3) || !strncmp(arch, "gfx", 3))
		return MLA_EUNSUPPORTED;
	if (cap > 0) {
		memset(&out[0], 0, sizeof(out[0]));
		strcpy(out[0].name, "online");
	}
#ifdef PLUGIN_DECLINES
	if (cap > 1) {
		memset(&out[1], 0, sizeof(out[1]));
		strcpy(out[1].name, "short");
	}
	return 2;
#else
	return 1;
#endif
}

static size_t example_workspace(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	(void)a;
	(void)c;
	return 0;
}

static void load_row(const struct mla_decode_args *a, const float *lut, int b, int j, float *row)
{
	int32_t page = a->block_table[(size_t)b * a->max_pages + j / a->page_size];
	size_t off = ((size_t)page * a->page_size + j % a->page_size) * MLA_D_QK;

	if (a->kv_dtype == MLA_KV_BF16) {
		const uint16_t *kv = (const uint16_t *)a->kv_cache + off;

		for (int d = 0; d < MLA_D_QK; d++)
			row[d] = bf16_to_float(kv[d]);
	} else {
		const uint8_t *kv = (const uint8_t *)a->kv_cache + off;

		for (int d = 0; d < MLA_D_QK; d++)
			row[d] = lut[kv[d]];
	}
}

static int example_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	float lut[256], q[MLA_D_QK], row[MLA_D_QK], acc[MLA_D_V];

	(void)c;
#ifdef PLUGIN_DECLINES
	if (a && !strcmp(c->name, "short") && (long long)a->max_pages * a->page_size > 128)
		return MLA_EUNSUPPORTED;
#endif
	if (!a || !a->q || !a->kv_cache || !a->block_table || !a->seqlens || !a->out || !a->lse ||
	    a->stream || (a->kv_dtype != MLA_KV_BF16 && a->kv_dtype != MLA_KV_FP8_E4M3_FNUZ))
		return MLA_EINVAL;
	for (int i = 0; i < 256; i++)
		lut[i] = fnuz_to_float((uint8_t)i) * a->kv_scale;
	for (int b = 0; b < a->batch; b++)
		for (int i = 0; i < a->s_q; i++)
			for (int h = 0; h < a->h_q; h++) {
				size_t qrow = ((size_t)b * a->s_q + i) * a->h_q + h;
				const uint16_t *qb = (const uint16_t *)a->q + qrow * MLA_D_QK;
				uint16_t *out = (uint16_t *)a->out + qrow * MLA_D_V;
				float *lse = a->lse + ((size_t)b * a->h_q + h) * a->s_q + i;
				int n = a->seqlens[b] - a->s_q + 1 + i;
				float m = -INFINITY, sum = 0.0f;

				if (n <= 0) {
					memset(out, 0, MLA_D_V * sizeof(uint16_t));
					*lse = INFINITY;
					continue;
				}
				for (int d = 0; d < MLA_D_QK; d++)
					q[d] = bf16_to_float(qb[d]);
				memset(acc, 0, sizeof(acc));
				for (int j = 0; j < n; j++) {
					float s = 0.0f, p;

					load_row(a, lut, b, j, row);
					for (int d = 0; d < MLA_D_QK; d++)
						s += q[d] * row[d];
					s *= a->softmax_scale;
					if (s > m) {
						float r = expf(m - s);

						for (int d = 0; d < MLA_D_V; d++)
							acc[d] *= r;
						sum *= r;
						m = s;
					}
					p = expf(s - m);
					sum += p;
					for (int d = 0; d < MLA_D_V; d++)
						acc[d] += p * row[d];
				}
				for (int d = 0; d < MLA_D_V; d++)
					out[d] = float_to_bf16(acc[d] / sum);
				*lse = m + logf(sum);
			}
#ifdef PLUGIN_WRONG
	((uint16_t *)a->out)[7] = float_to_bf16(bf16_to_float(((uint16_t *)a->out)[7]) + 0.25f);
#endif
#ifdef PLUGIN_WRONG_AFTER
	{
		static int launches;

		if (++launches > PLUGIN_WRONG_AFTER)
			((uint16_t *)a->out)[7] = float_to_bf16(bf16_to_float(((uint16_t *)a->out)[7]) + 0.25f);
	}
#endif
	return MLA_OK;
}

#ifdef PLUGIN_PICKY
static int example_supports(const struct mla_decode_args *shape, char *why, size_t cap)
{
	if (shape->page_size != 1)
		return 1;
	snprintf(why, cap, "page_size 1: this plugin reads whole pages of 16 rows or more");
	return 0;
}
#endif

static const struct mla_decode_impl example = {
	PLUGIN_ABI_VERSION,
	PLUGIN_NAME,
	"cpu",
	"one-pass online-softmax MLA decode, built outside validate_skill",
	example_configs,
	example_workspace,
	example_launch,
#ifdef PLUGIN_PICKY
	example_supports,
#else
	NULL, /* supports: every task */
#endif
	NULL, /* prepare: nothing to do */
};

#ifdef PLUGIN_NO_SYMBOL
const struct mla_decode_impl *mla_decode_plugin_v0(void)
#else
const struct mla_decode_impl *mla_decode_plugin(void)
#endif
{
	return &example;
}
