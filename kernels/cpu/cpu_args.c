/* Argument checks shared by the CPU implementations (see cpu_args.h). */
#include "cpu_args.h"
#include "../mla_numeric.h"

#include <string.h>

#define CPU_ARGS_MAX_ROWS ((int64_t)1 << 40) /* batch * s_q * h_q: far above any real launch */
#define CPU_ARGS_MAX_SLOTS ((int64_t)1 << 48) /* num_pages * page_size */

int cpu_args_check(const struct mla_decode_args *a)
{
	int any_key = 0;

	if (!a || a->batch < 0 || a->s_q < 1 || a->h_q < 1 || a->page_size < 1 || a->max_pages < 0 ||
	    a->num_pages < 0 || !mla_kv_elem_size(a->kv_dtype))
		return MLA_EINVAL;
	if ((int64_t)a->batch * a->s_q * a->h_q > CPU_ARGS_MAX_ROWS ||
	    (int64_t)a->num_pages * a->page_size > CPU_ARGS_MAX_SLOTS ||
	    (int64_t)a->max_pages * a->page_size > INT32_MAX)
		return MLA_EINVAL;
	if (a->batch == 0)
		return MLA_OK;
	if (!a->q || !a->block_table || !a->seqlens || !a->out || !a->lse)
		return MLA_EINVAL;
	for (int32_t b = 0; b < a->batch; b++) {
		int32_t len = a->seqlens[b];
		int32_t pages;

		if (len < 0 || len > a->max_pages * a->page_size)
			return MLA_EINVAL;
		pages = (int32_t)(((int64_t)len + a->page_size - 1) / a->page_size);
		for (int32_t p = 0; p < pages; p++) {
			int32_t page = a->block_table[(size_t)b * a->max_pages + p];

			if (page < 0 || page >= a->num_pages)
				return MLA_EINVAL;
		}
		any_key |= len > 0;
	}
	if (any_key && !a->kv_cache)
		return MLA_EINVAL;
	return MLA_OK;
}

int cpu_args_arch_ok(const char *arch)
{
	return arch && *arch && strncmp(arch, "sm_", 3) != 0 && strncmp(arch, "gfx", 3) != 0;
}

void cpu_args_fp8_lut(float lut[256], float kv_scale)
{
	for (int c = 0; c < 256; c++)
		lut[c] = mla_fp8_e4m3_fnuz_to_float((uint8_t)c) * kv_scale;
}
