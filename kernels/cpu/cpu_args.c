/* Argument checks shared by the CPU implementations (see cpu_args.h). */
#include "cpu_args.h"
#include "../mla_numeric.h"

#include <stdio.h>
#include <string.h>

#define CPU_ARGS_MAX_ROWS ((int64_t)1 << 40) /* batch * s_q * h_q: far above any real launch */
#define CPU_ARGS_MAX_SLOTS ((int64_t)1 << 48) /* num_pages * page_size */

/* 1 for a kv_dtype the sparse form reads (bf16 and the block-scaled formats). */
static int sparse_dtype(int32_t kv_dtype)
{
	return kv_dtype == MLA_KV_BF16 || mla_kv_is_blockscaled(kv_dtype);
}

/*
 * Check the entries of one index tensor [batch, s_q, k] (k > 0) and its optional lengths [batch]:
 * each length in [0, k], each valid entry -1 or in [0, slots). *any set when some entry is valid.
 */
static int check_indices(const int32_t *idx, const int32_t *len, const struct mla_decode_args *a, int32_t k,
			 int64_t slots, int *any)
{
	for (int32_t b = 0; b < a->batch; b++) {
		int32_t n = len ? len[b] : k;

		if (n < 0 || n > k)
			return MLA_EINVAL;
		for (int32_t i = 0; i < a->s_q; i++)
			for (int32_t t = 0; t < n; t++) {
				int32_t r = idx[((size_t)b * a->s_q + i) * k + t];

				if (r == -1)
					continue;
				if (r < 0 || r >= slots)
					return MLA_EINVAL;
				*any = 1;
			}
	}
	return MLA_OK;
}

/* cpu_args_check() of the sparse form. */
static int check_sparse(const struct mla_decode_args *a)
{
	int any = 0, any_extra = 0;

	if (a->batch < 0 || a->s_q < 1 || a->h_q < 1 || a->page_size < 1 || a->num_pages < 0 ||
	    !sparse_dtype(a->kv_dtype) || a->d_qk != mla_kv_d_qk(a->kv_dtype) || a->d_v != MLA_D_V ||
	    a->extra_topk < 0 || (a->extra_topk > 0 && (a->extra_page_size < 1 || a->extra_num_pages < 0)))
		return MLA_EINVAL;
	if ((int64_t)a->batch * a->s_q * a->h_q > CPU_ARGS_MAX_ROWS ||
	    (int64_t)a->num_pages * a->page_size > CPU_ARGS_MAX_SLOTS ||
	    (int64_t)a->extra_num_pages * a->extra_page_size > CPU_ARGS_MAX_SLOTS ||
	    (int64_t)a->topk + a->extra_topk > INT32_MAX)
		return MLA_EINVAL;
	if (a->batch == 0)
		return MLA_OK;
	if (!a->q || !a->out || !a->lse || !a->indices || (a->extra_topk > 0 && !a->extra_indices))
		return MLA_EINVAL;
	if (check_indices(a->indices, a->topk_length, a, a->topk, (int64_t)a->num_pages * a->page_size, &any))
		return MLA_EINVAL;
	if (a->extra_topk > 0 &&
	    check_indices(a->extra_indices, a->extra_topk_length, a, a->extra_topk,
			  (int64_t)a->extra_num_pages * a->extra_page_size, &any_extra))
		return MLA_EINVAL;
	if ((any && !a->kv_cache) || (any_extra && !a->extra_kv_cache))
		return MLA_EINVAL;
	return MLA_OK;
}

int cpu_args_check(const struct mla_decode_args *a)
{
	int any_key = 0;

	if (a && a->topk > 0)
		return check_sparse(a);
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

int cpu_args_supports(const struct mla_decode_args *a, char *why, size_t cap)
{
	const char *name = mla_kv_dtype_name(a->kv_dtype);

	if (a->topk <= 0) {
		if (mla_kv_elem_size(a->kv_dtype))
			return 1;
		snprintf(why, cap, "kv dtype %s: the dense form reads bf16 or fp8_e4m3_fnuz only", name ? name : "unknown");
		return 0;
	}
	if (!sparse_dtype(a->kv_dtype)) {
		snprintf(why, cap, "kv dtype %s: the sparse form reads bf16, fp8_ds_mla(_fnuz) or fp8_model1(_fnuz)",
			 name ? name : "unknown");
		return 0;
	}
	if (a->d_qk != mla_kv_d_qk(a->kv_dtype) || a->d_v != MLA_D_V) {
		snprintf(why, cap, "d_qk %d, d_v %d: rows of %s have d_qk %d and d_v %d", (int)a->d_qk, (int)a->d_v,
			 name, (int)mla_kv_d_qk(a->kv_dtype), MLA_D_V);
		return 0;
	}
	if (a->extra_topk < 0 || (a->extra_topk > 0 && a->extra_page_size < 1)) {
		snprintf(why, cap, "extra_topk %d, extra_page_size %d: not an extra cache", (int)a->extra_topk,
			 (int)a->extra_page_size);
		return 0;
	}
	return 1;
}

void cpu_args_decode_row(int32_t kv_dtype, const void *cache, int32_t page_size, int32_t r, float *row)
{
	const uint8_t *page;

	if (kv_dtype == MLA_KV_BF16) {
		const uint16_t *kv = (const uint16_t *)cache + (size_t)r * MLA_D_QK;

		for (int d = 0; d < MLA_D_QK; d++)
			row[d] = mla_bf16_to_float(kv[d]);
		return;
	}
	page = (const uint8_t *)cache + (size_t)(r / page_size) * mla_kv_page_bytes(kv_dtype, page_size);
	mla_kv_decode_token(kv_dtype, page, page_size, r % page_size, row);
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
