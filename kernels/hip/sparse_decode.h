/*
 * sparse_decode.h - internal to kernels/hip: the gather and decode arithmetic of hip.flash's sparse
 * (DSA) kernels (flash_sparse.hip), written once for the host and the device so that the CPU tests
 * (tests/check_hip_configs.c) check the same code the kernels run against mla_kv_decode_token().
 *
 * A gathered cache token is cut into units of 16 source bytes, each written into the token's
 * decoded bf16 row in shared memory (rows of MLA_FLASH_ROW_BF16 bytes, dims [0, d_qk)):
 *   bf16        72 units: 8 bf16 values each, copied (dims 8u .. 8u + 7)
 *   fp8_ds_mla  40 units: 32 of 16 e4m3 codes (dims 16u .. 16u + 15, times the fp32 scale of their
 *               128-code block, rounded to bf16), then 8 of 8 bf16 RoPE values (dims 512 + 8k ..)
 *   fp8_model1  36 units: 28 of 16 codes (dims 16u .., times the e8m0 scale of their 64-code
 *               block), then 8 of RoPE values (dims 448 + 8k ..)
 * The byte layouts are mla_numeric.h's "Paged cache formats"; every unit's source is 16-byte
 * aligned within its page (656, 576 and 1152 are multiples of 16; pages of fp8_model1 are padded to
 * 576 bytes). code x scale is exact in bf16 for power-of-two scales (both formats' quantizers make
 * them so); any other fp32 scale is rounded to nearest even once, as a bf16 cache would be.
 */
#ifndef MLA_HIP_SPARSE_DECODE_H
#define MLA_HIP_SPARSE_DECODE_H

#include "../mla_decode.h"
#include "../mla_numeric.h"

#include <stdint.h>

/* The three layouts the kernels are instantiated for (fnuz is a run-time flag of the fp8 two). */
#define MLA_SPARSE_BF16 0
#define MLA_SPARSE_DS_MLA 1
#define MLA_SPARSE_MODEL1 2

/* Units of 16 source bytes per token (see the top of this file); a constant expression. */
#define MLA_SPARSE_UNITS(fmt) ((fmt) == MLA_SPARSE_BF16 ? 72 : (fmt) == MLA_SPARSE_DS_MLA ? 40 : 36)
/* Units of fp8 codes per token: the first ones; 0 for bf16. */
#define MLA_SPARSE_CODE_UNITS(fmt) ((fmt) == MLA_SPARSE_BF16 ? 0 : (fmt) == MLA_SPARSE_DS_MLA ? 32 : 28)

/** The layout of a sparse kv_dtype (MLA_SPARSE_*), or -1 for a format the sparse kernels do not read. */
MLA_HD int mla_sparse_fmt_of(int32_t kv_dtype)
{
	switch (kv_dtype) {
	case MLA_KV_BF16: return MLA_SPARSE_BF16;
	case MLA_KV_FP8_DS_MLA:
	case MLA_KV_FP8_DS_MLA_FNUZ: return MLA_SPARSE_DS_MLA;
	case MLA_KV_FP8_MODEL1:
	case MLA_KV_FP8_MODEL1_FNUZ: return MLA_SPARSE_MODEL1;
	}
	return -1;
}

/** One unit of a token: its source bytes and scale (byte offsets from the page's first byte). */
struct mla_sparse_unit {
	int64_t src;   /* 16 bytes: codes or bf16 values */
	int64_t scale; /* the codes' scale (fp32 for fp8_ds_mla, one e8m0 byte for fp8_model1); -1: none */
	int dim;       /* first decoded dim written */
	int codes;     /* 1: 16 codes -> 16 bf16 (32 bytes); 0: 8 bf16 copied (16 bytes) */
};

/**
 * Unit u (0 <= u < MLA_SPARSE_UNITS(fmt)) of token `slot` of a page of page_size tokens of layout
 * fmt. Pure arithmetic on its arguments; reads nothing.
 */
MLA_HD struct mla_sparse_unit mla_sparse_unit_at(int fmt, int page_size, int slot, int u)
{
	struct mla_sparse_unit r;

	r.scale = -1;
	r.codes = 0;
	if (fmt == MLA_SPARSE_BF16) {
		r.src = (int64_t)slot * (2 * MLA_D_QK) + 16 * u;
		r.dim = 8 * u;
	} else if (fmt == MLA_SPARSE_DS_MLA) {
		const int64_t t = (int64_t)slot * 656;

		if (u < 32) {
			r.src = t + 16 * u;
			r.scale = t + 512 + 4 * (u / 8);
			r.dim = 16 * u;
			r.codes = 1;
		} else {
			r.src = t + 528 + 16 * (u - 32);
			r.dim = 512 + 8 * (u - 32);
		}
	} else {
		const int64_t t = (int64_t)slot * 576;

		if (u < 28) {
			r.src = t + 16 * u;
			r.scale = (int64_t)page_size * 576 + (int64_t)slot * 8 + u / 4;
			r.dim = 16 * u;
			r.codes = 1;
		} else {
			r.src = t + 448 + 16 * (u - 28);
			r.dim = 448 + 8 * (u - 28);
		}
	}
	return r;
}

/*
 * The raw row of the pipelined kernels (num_stages 2, flash_sparse.hip): a gathered fp8 token's bytes
 * copied verbatim into shared memory (cp.async) one tile ahead of their decode, MLA_SPARSE_RAW_ROW
 * bytes per row. fp8_ds_mla: the token's 656 bytes. fp8_model1: its 576 bytes, then its 8 scale
 * bytes at 576. Both are the token as a page of page_size 1 would hold it, slot 0: unit u of a raw
 * row is mla_sparse_unit_at(fmt, 1, 0, u) (mla_sparse_unit_raw). bf16 has no raw row (the kernels
 * gather it directly).
 */
#define MLA_SPARSE_RAW_ROW 656
/* Copies (chunks) per raw row: 41 of 16 bytes (fp8_ds_mla); 36 of 16 and one of 8 (fp8_model1). */
#define MLA_SPARSE_RAW_CHUNKS(fmt) ((fmt) == MLA_SPARSE_DS_MLA ? 41 : (fmt) == MLA_SPARSE_MODEL1 ? 37 : 0)

/** One copy into a raw row: bytes (16 or 8) from src (bytes from the page's first byte) to dst (bytes in the row). */
struct mla_sparse_chunk {
	int64_t src;
	int dst;
	int bytes;
};

/**
 * Chunk k (0 <= k < MLA_SPARSE_RAW_CHUNKS(fmt)) of token `slot` of a page of page_size tokens of an
 * fp8 layout. Sources are aligned to their size (16; the fp8_model1 scales to 8). Pure arithmetic.
 */
MLA_HD struct mla_sparse_chunk mla_sparse_raw_chunk(int fmt, int page_size, int slot, int k)
{
	struct mla_sparse_chunk r;

	r.bytes = 16;
	r.dst = 16 * k;
	if (fmt == MLA_SPARSE_DS_MLA) {
		r.src = (int64_t)slot * 656 + 16 * k;
	} else if (k < 36) {
		r.src = (int64_t)slot * 576 + 16 * k;
	} else {
		r.src = (int64_t)page_size * 576 + (int64_t)slot * 8;
		r.bytes = 8;
	}
	return r;
}

/** Unit u of a raw row (offsets within the row; see MLA_SPARSE_RAW_ROW). */
MLA_HD struct mla_sparse_unit mla_sparse_unit_raw(int fmt, int u)
{
	return mla_sparse_unit_at(fmt, 1, 0, u);
}

/** The scale a code unit's `scale` offset points at: fp32 (fp8_ds_mla, 4-byte aligned) or e8m0. */
MLA_HD float mla_sparse_scale_load(int fmt, const uint8_t *p)
{
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
	return fmt == MLA_SPARSE_DS_MLA ? *(const float *)p : mla_e8m0_to_float(*p);
#else
	return fmt == MLA_SPARSE_DS_MLA ? mla_load_f32(p) : mla_e8m0_to_float(*p);
#endif /* device */
}

/** One fp8 code times scale, as the bf16 bits the kernels store (fnuz: e4m3fnuz, else e4m3fn). */
MLA_HD uint16_t mla_sparse_code_to_bf16(uint8_t c, float scale, int fnuz)
{
	return mla_float_to_bf16((fnuz ? mla_fp8_e4m3_fnuz_to_float(c) : mla_fp8_e4m3fn_to_float(c)) * scale);
}

/**
 * 16 codes (w[k] holds codes 4k .. 4k + 3, little-endian) times scale -> 16 bf16 in out[8] (out[k]
 * holds dims 2k, 2k + 1, the lower dim in the low half): the bytes of the decoded row.
 */
MLA_HD void mla_sparse_decode16(const uint32_t w[4], float scale, int fnuz, uint32_t out[8])
{
	for (int k = 0; k < 4; k++) {
		const uint32_t x = w[k];

		out[2 * k] = (uint32_t)mla_sparse_code_to_bf16((uint8_t)(x & 0xffu), scale, fnuz) |
			     (uint32_t)mla_sparse_code_to_bf16((uint8_t)((x >> 8) & 0xffu), scale, fnuz) << 16;
		out[2 * k + 1] = (uint32_t)mla_sparse_code_to_bf16((uint8_t)((x >> 16) & 0xffu), scale, fnuz) |
				 (uint32_t)mla_sparse_code_to_bf16((uint8_t)(x >> 24), scale, fnuz) << 16;
	}
}

/**
 * Entries of one cache that a query row of batch element b may use: topk, or topk_length[b]
 * clamped to [0, topk] when topk_length is given (the rest are invalid whatever they hold).
 */
MLA_HD int mla_sparse_entries(const int32_t *topk_length, int b, int topk)
{
	int n = topk > 0 ? topk : 0;

	if (n > 0 && topk_length) {
		const int l = topk_length[b];

		n = l < 0 ? 0 : l < n ? l : n;
	}
	return n;
}

/**
 * Byte offset of the page of cache row r (page r / page_size) and its slot, for a valid entry
 * (r >= 0); -1 for an invalid one (r < 0: -1 by the ABI, any other negative is out of contract and
 * read as invalid too, never as an address).
 */
MLA_HD int64_t mla_sparse_row_page(int32_t r, int page_size, int64_t page_bytes, int *slot)
{
	if (r < 0) {
		*slot = 0;
		return -1;
	}
	*slot = r % page_size;
	return (int64_t)(r / page_size) * page_bytes;
}

#endif /* MLA_HIP_SPARSE_DECODE_H */
