/*
 * hip_flash.h - internal to kernels/hip: the config spaces of hip.flash and hip.baseline, the
 * shared-memory (LDS) budget of every kernel instance, and the host-side launch plan (split count
 * and workspace), shared by the plain-C descriptors (hip_impls.c, built everywhere) and the GPU
 * sources (flash.hip, baseline.hip). Plain C: the macros below are constant expressions in C and
 * C++ alike, so the kernels size their shared memory with the same formula the config checks use.
 *
 * Kernels of hip.flash (see flash.hip for the design):
 *   MLA_FLASH_WARP   warp-level matrix cores (mma.h tile16: mma.sync m16n8k16 on NVIDIA, MFMA
 *                    16x16x16 on gfx942); BLOCK_H/16 row groups x (num_warps / (BLOCK_H/16)) key
 *                    and output-column groups; cp.async ring of num_stages tiles on NVIDIA, one LDS
 *                    tile and Q fragments in registers on gfx942.
 *   MLA_FLASH_WGMMA  sm_90a only: BLOCK_H 64, BLOCK_N 64, two warpgroups (num_warps 8); warpgroup 0
 *                    computes S = Q K^T and the softmax, both warpgroups compute O += P V on half
 *                    of the 512 output columns each (wgmma m64n64k16 and m64n256k16).
 *   MLA_FLASH_WGMMA_T sm_90a only: BLOCK_H 16 or 32, BLOCK_N 64, two warpgroups, transposed
 *                    products (S^T = K Q^T, O^T = V^T P^T, wgmma m64n16k16 / m64n32k16): M is the 64
 *                    keys or 64 output dims and N the BLOCK_H rows, so s_q x h_q <= 16 (32) pays no
 *                    padding to 64 rows.
 *   MLA_FLASH_ONETILE sm_90 only: tasks whose block table holds at most one 64-key tile
 *                    (max_pages x page_size <= 64, known from the arguments): one block of num_warps
 *                    warps per row (query, head) and sequence, CUDA cores, no split, no combine, a
 *                    kernel small enough that its one pass is not a cold walk through a tile
 *                    pipeline's code. Other tasks it declines (MLA_EUNSUPPORTED), per config.
 *   MLA_FLASH_WARP_DT sm_90 only, fp8 KV only: the warp kernel with each raw fp8 tile decoded once
 *                    into a bf16 tile in shared memory that the bf16 path reads (the decoded tile),
 *                    where MLA_FLASH_WARP decodes the codes in registers into f16 fragments. More
 *                    shared memory (one block per SM), fewer registers; faster when the grid is
 *                    small (few head blocks x sequences), slower when it fills the GPU (H200,
 *                    2026-12-03, BENCHMARKS.md), so the tuning pass chooses it per task. Its config
 *                    shares the four numbers of its MLA_FLASH_WARP twin and is named like it with
 *                    MLA_FLASH_DT_SUFFIX; bf16 tasks it declines (the twin runs the same bf16 kernel).
 *   MLA_FLASH_SPARSE the sparse form (ABI 3, topk > 0; flash_sparse.hip): grid (batch x s_q query
 *                    rows, head blocks of BLOCK_H heads, splits of the topk entries); each tile of
 *                    BLOCK_N entries is gathered by index and decoded once into a bf16 tile in
 *                    shared memory (scales folded in), shared by the BLOCK_H heads; S and P V on
 *                    the warp-level tiles of mma.h; every sparse format (bf16, fp8_ds_mla,
 *                    fp8_model1, the fnuz twins), the extra cache, topk_length, attn_sink. Its
 *                    configs are named like the others with MLA_FLASH_SPARSE_SUFFIX; they decline
 *                    dense tasks, and every other config declines sparse ones. num_stages 1: one
 *                    tile in flight, software fp8 decode; num_stages 2 (sm_90): the next tile's
 *                    raw rows copied by cp.async during this tile's math, hardware fp8 decode;
 *                    num_stages 2 (gfx942): the hardware fnuz decode only (LDS has no room for
 *                    a raw stage beside the decoded tile at block_h 64).
 * The sm_90 and gfx942 spaces never share a (block_n, block_h, num_warps, num_stages) point, so a
 * config alone says which layout (and shared-memory formula) it uses; within sm_90 only the
 * decoded-tile twin shares one, told apart by its name.
 */
#ifndef MLA_HIP_FLASH_H
#define MLA_HIP_FLASH_H

#include "../mla_decode.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum mla_flash_kind {
	MLA_FLASH_WARP = 1,
	MLA_FLASH_WGMMA = 2,
	MLA_FLASH_WGMMA_T = 3,
	MLA_FLASH_ONETILE = 4,
	MLA_FLASH_WARP_DT = 5,
	MLA_FLASH_SPARSE = 6,
};

/* The name suffix of a MLA_FLASH_WARP_DT config: "bn64-bh16-sp0-w4-st2-dt". */
#define MLA_FLASH_DT_SUFFIX "-dt"
/* The name suffix of a MLA_FLASH_SPARSE config: "bn64-bh64-sp0-w8-st1-dsa". */
#define MLA_FLASH_SPARSE_SUFFIX "-dsa"


/*
 * Config spaces: X(block_n, block_h, splits, num_warps, num_stages, kind), splits a token of
 * MLA_FLASH_SPLITS_<token>: 0 = auto (uniform splits, their count from shapes and num_cus), 1 = no
 * split (no combine kernel), a large value = more splits than KV blocks for short sequences (empty
 * splits write lse = -inf and the combine skips them), bal = balanced (MLA_FLASH_BALANCED: FlashMLA's
 * tile scheduler; every block takes an equal share of the KV tiles of all sequences, computed on
 * the device from seqlens; MLA_FLASH_WGMMA only; name "...-spbal-...").
 *
 * sm_90: the configs no tuning pass chose nor timed within 5% of the best on any task of either
 * sm_90 card (2026-12-01 records: bn64-bh64-sp64, bn64-bh16-sp128-w4 and the three bn32-bh32 warp
 * configs) left the space when the balanced ones came in, which keeps the tuning pass as long;
 * bn64-bh16-spbal (the transposed kernel, balanced) left it on 2026-12-02: slower than bn64-bh64-spbal
 * on every shape measured, never chosen.
 */
#define MLA_FLASH_BALANCED MLA_DECODE_SPLITS_BALANCED
#define MLA_FLASH_SPLITS_0 0
#define MLA_FLASH_SPLITS_1 1
#define MLA_FLASH_SPLITS_4 4
#define MLA_FLASH_SPLITS_64 64
#define MLA_FLASH_SPLITS_bal MLA_FLASH_BALANCED

#define MLA_FLASH_SM90_CONFIGS(X)                \
	X(64, 64, 0, 8, 2, MLA_FLASH_WGMMA)      \
	X(64, 64, 1, 8, 2, MLA_FLASH_WGMMA)      \
	X(64, 64, 4, 8, 2, MLA_FLASH_WGMMA)      \
	X(64, 64, bal, 8, 2, MLA_FLASH_WGMMA)    \
	X(64, 16, 0, 8, 2, MLA_FLASH_WGMMA_T)    \
	X(64, 16, 1, 8, 2, MLA_FLASH_WGMMA_T)    \
	X(64, 16, 4, 8, 2, MLA_FLASH_WGMMA_T)    \
	X(64, 32, 0, 8, 2, MLA_FLASH_WGMMA_T)    \
	X(64, 16, 0, 4, 2, MLA_FLASH_WARP)       \
	X(64, 16, 0, 4, 2, MLA_FLASH_WARP_DT)    \
	X(64, 1, 1, 4, 1, MLA_FLASH_ONETILE)     \
	X(64, 64, 0, 8, 1, MLA_FLASH_SPARSE)     \
	X(64, 64, 1, 8, 1, MLA_FLASH_SPARSE)     \
	X(64, 32, 0, 4, 1, MLA_FLASH_SPARSE)     \
	X(64, 16, 0, 4, 1, MLA_FLASH_SPARSE)     \
	X(64, 64, 0, 8, 2, MLA_FLASH_SPARSE)     \
	X(64, 64, 1, 8, 2, MLA_FLASH_SPARSE)     \
	X(64, 32, 0, 4, 2, MLA_FLASH_SPARSE)

/* The kernel instances behind them: X(block_n, block_h, num_warps, num_stages, kind). */
#define MLA_FLASH_SM90_KERNELS(X)        \
	X(64, 64, 8, 2, MLA_FLASH_WGMMA) \
	X(64, 16, 8, 2, MLA_FLASH_WGMMA_T) \
	X(64, 32, 8, 2, MLA_FLASH_WGMMA_T) \
	X(64, 16, 4, 2, MLA_FLASH_WARP)  \
	X(64, 16, 4, 2, MLA_FLASH_WARP_DT) \
	X(64, 1, 4, 1, MLA_FLASH_ONETILE)

/*
 * The sparse kernel instances: X(block_n, block_h, num_warps, num_stages), each for the three
 * layouts. num_stages 1: one tile in flight, decoded in software. num_stages 2 (issue 39): the
 * pipelined kernel: the next tile's raw fp8 rows are copied (cp.async) into a raw stage while this
 * tile's S, softmax and P V run, and decoded with the hardware conversions (flash_sparse.hip).
 */
#define MLA_FLASH_SM90_SPARSE_KERNELS(X) \
	X(64, 64, 8, 1)                   \
	X(64, 32, 4, 1)                   \
	X(64, 16, 4, 1)                   \
	X(64, 64, 8, 2)                   \
	X(64, 32, 4, 2)

/*
 * gfx942 (MI300X): wave64, 64 KiB of LDS per workgroup and per CU. Q lives in registers (MFMA A
 * fragments), one KV tile in LDS (num_stages 1: latency is hidden by several workgroups per CU).
 */
#define MLA_FLASH_GFX942_CONFIGS(X)           \
	X(16, 16, 0, 1, 1, MLA_FLASH_WARP)    \
	X(32, 16, 0, 2, 1, MLA_FLASH_WARP)    \
	X(16, 32, 0, 2, 1, MLA_FLASH_WARP)    \
	X(32, 64, 0, 8, 1, MLA_FLASH_WARP)    \
	X(32, 64, 1, 8, 1, MLA_FLASH_WARP)    \
	X(32, 64, 64, 8, 1, MLA_FLASH_WARP)   \
	X(32, 32, 0, 4, 1, MLA_FLASH_WARP)    \
	X(32, 64, 0, 8, 1, MLA_FLASH_SPARSE)  \
	X(32, 64, 1, 8, 1, MLA_FLASH_SPARSE)  \
	X(32, 32, 0, 4, 1, MLA_FLASH_SPARSE)  \
	X(32, 16, 0, 2, 1, MLA_FLASH_SPARSE)  \
	X(32, 64, 0, 8, 2, MLA_FLASH_SPARSE)  \
	X(32, 32, 0, 4, 2, MLA_FLASH_SPARSE)

#define MLA_FLASH_GFX942_KERNELS(X)      \
	X(16, 16, 1, 1, MLA_FLASH_WARP)  \
	X(32, 16, 2, 1, MLA_FLASH_WARP)  \
	X(16, 32, 2, 1, MLA_FLASH_WARP)  \
	X(32, 64, 8, 1, MLA_FLASH_WARP)  \
	X(32, 32, 4, 1, MLA_FLASH_WARP)

/* num_stages 2 on gfx942: the num_stages 1 kernel with the hardware fnuz decode (no raw stage: LDS). */
#define MLA_FLASH_GFX942_SPARSE_KERNELS(X) \
	X(32, 64, 8, 1)                     \
	X(32, 32, 4, 1)                     \
	X(32, 16, 2, 1)                     \
	X(32, 64, 8, 2)                     \
	X(32, 32, 4, 2)

/* hip.baseline: one config per arch, X(num_warps). */
#define MLA_BASELINE_SM90_WARPS 4
#define MLA_BASELINE_GFX942_WARPS 2

/* ---------------------------------------------------------------- shared memory (bytes) */

/* One bf16 row of 576 in shared memory, padded by 16 bytes (conflict-free ldmatrix / LDS reads). */
#define MLA_FLASH_ROW_BF16 1168
/*
 * One fp8 row: 576 codes, padded by 16 bytes on gfx942 (LDS reads of 4 codes per lane) and by 32 on
 * NVIDIA (38 chunks of 16 bytes: the warp kernel's 8-byte loads of 8 keys' codes and 16-byte loads
 * of keys 4 apart hit distinct banks).
 */
#define MLA_FLASH_ROW_FP8_NV 608
#define MLA_FLASH_ROW_FP8_AMD 592

/*
 * Warp kernel (MLA_FLASH_WARP), fp8 = 1 for fp8 KV, amd = 1 for the gfx942 layout:
 *   Q tile        NVIDIA only      block_h x ROW_BF16 (fp8: f16 rows of 1152 bytes, fragment order)
 *   KV stages     num_stages x block_n rows (bf16 rows, or raw fp8 rows)
 *   P tile        block_h x (block_n + 8) bf16 (NVIDIA fp8: f16)
 *   row max/sum   2 x (column groups) x block_h floats
 *   row offsets   RING x block_n int64: byte offsets of the cache rows of the next tiles, computed
 *                 from block_table one tile ahead (RING = max(num_stages, 2))
 *   row scales    NVIDIA fp8 only  block_h floats (the score scale of each f16 Q row)
 * NVIDIA fp8 decodes the codes in registers, straight into f16 fragments (flash.hip, warp_tile_f16),
 * or, in the decoded-tile kernel (MLA_FLASH_WARP_DT), once per tile into a bf16 tile of
 * block_n x ROW_BF16 that the bf16 path reads (MLA_FLASH_WARP_DT_SMEM: no row scales).
 */
#define MLA_FLASH_CG(bh, nw) ((nw) / ((bh) / 16))
#define MLA_FLASH_RING(st) ((st) < 2 ? 2 : (st))
#define MLA_FLASH_WARP_SMEM(bn, bh, nw, st, fp8, amd)                                              \
	(((amd) ? 0 : (bh) * MLA_FLASH_ROW_BF16) +                                                  \
	 (st) * (bn) * ((fp8) ? ((amd) ? MLA_FLASH_ROW_FP8_AMD : MLA_FLASH_ROW_FP8_NV) : MLA_FLASH_ROW_BF16) + \
	 (bh) * ((bn) + 8) * 2 + 2 * MLA_FLASH_CG(bh, nw) * (bh) * 4 + MLA_FLASH_RING(st) * (bn) * 8 +  \
	 (((fp8) && !(amd)) ? (bh) * 4 : 0))
#define MLA_FLASH_WARP_DT_SMEM(bn, bh, nw, st) \
	(MLA_FLASH_WARP_SMEM(bn, bh, nw, st, 1, 0) - (bh) * 4 + (bn) * MLA_FLASH_ROW_BF16)


/*
 * wgmma kernel: Q 64x576 bf16, two 64x576 bf16 KV stages (fp8, mla_flash_wgmma_sd: one decoded bf16
 * tile and two raw fp8 stages, the same bytes), P 64x64 bf16, per-row alpha, l, m, a ring of 3 x 64
 * row offsets.
 */
#define MLA_FLASH_WGMMA_SMEM (3 * 73728 + 8192 + 3 * 64 * 4 + 3 * 64 * 8)

/*
 * Transposed wgmma kernel, BLOCK_H bh: Q bh x 576 bf16, two 64x576 bf16 KV stages (fp8: decoded
 * there by warpgroup 1 from registers), P^T bh x 64 bf16, column maxima 4 x bh, alpha bh, l 4 x bh,
 * m bh floats, a ring of 4 x 64 row offsets, and for fp8 one raw 64 x 576 tile (the second tile in
 * flight per thread when MLA_WT_DEEP is defined; unused otherwise).
 */
#define MLA_FLASH_WGMMA_T_SMEM(bh, fp8) \
	(1152 * (bh) + 2 * 73728 + 128 * (bh) + 40 * (bh) + 4 * 64 * 8 + ((fp8) ? 36864 : 0))

/*
 * Sparse kernel (MLA_FLASH_SPARSE), the same for every format (rows of d_qk <= 576 dims):
 *   Q tile        NVIDIA only      block_h x ROW_BF16 (gfx942: Q fragments in registers)
 *   decoded tile  block_n x ROW_BF16, the gathered rows decoded to bf16 (invalid entries: zeros)
 *   P tile        block_h x (block_n + 8) bf16
 *   row max/sum   2 x (column groups) x block_h floats
 *   entries       block_n int64 page offsets (-1: invalid) and block_n int32 slots
 * and with num_stages 2 on NVIDIA (the pipelined kernel):
 *   next entries  block_n int64 page offsets and block_n int32 slots of the next tile
 *   raw stage     block_n x MLA_SPARSE_RAW_ROW (656) bytes: the next tile's fp8 rows as gathered
 * MLA_FLASH_SPARSE_SMEM is num_stages 1's (and gfx942's), MLA_FLASH_SPARSE_SMEM_ST any's.
 */
#define MLA_FLASH_SPARSE_SMEM(bn, bh, nw, amd)                                             \
	(((amd) ? 0 : (bh) * MLA_FLASH_ROW_BF16) + (bn) * MLA_FLASH_ROW_BF16 + (bh) * ((bn) + 8) * 2 + \
	 2 * MLA_FLASH_CG(bh, nw) * (bh) * 4 + (bn) * 12)
#define MLA_FLASH_SPARSE_SMEM_ST(bn, bh, nw, st, amd) \
	(MLA_FLASH_SPARSE_SMEM(bn, bh, nw, amd) + (((st) >= 2 && !(amd)) ? (bn) * (12 + 656) : 0))

/* One-tile kernel, num_warps nw: each warp's 512 output partials, then its running max and sum. */
#define MLA_FLASH_ONETILE_SMEM(nw) ((nw) * (512 * 4 + 2 * 4))

/* Largest dynamic shared memory a block may use: 227 KiB on sm_90, 64 KiB of LDS on gfx942. */
#define MLA_SMEM_MAX_SM90 232448
#define MLA_LDS_MAX_GFX942 65536

/* ---------------------------------------------------------------- launch plan */

/** One entry of a config space, with the kernel behind it. */
struct mla_flash_entry {
	struct mla_decode_config cfg;
	int kind;      /* enum mla_flash_kind */
	int amd;       /* 1: gfx942 layout (wave64, Q in registers) */
};

/**
 * The entry of the sm_90 or gfx942 space whose block_n, block_h, num_warps and num_stages match
 * cfg (num_splits may be anything >= 0, or MLA_FLASH_BALANCED), or NULL. Of two entries with the
 * same four numbers (MLA_FLASH_WARP and its MLA_FLASH_WARP_DT twin), the decoded-tile one when
 * cfg->name ends in MLA_FLASH_DT_SUFFIX, else the other.
 */
const struct mla_flash_entry *mla_flash_entry_find(const struct mla_decode_config *cfg);

/** Shared memory (LDS) bytes of an entry's kernel for a KV dtype; 0 where it has none (MLA_FLASH_WARP_DT, bf16). */
size_t mla_flash_smem_bytes(const struct mla_flash_entry *e, int32_t kv_dtype);

/** Host-side decisions of one hip.flash launch; a function of shapes, num_cus and config only. */
struct mla_flash_plan {
	int32_t m_total;       /* s_q * h_q: rows of the M dimension per batch element */
	int32_t head_blocks;   /* ceil(m_total / block_h) */
	int32_t num_splits;    /* >= 1: uniform splits per sequence; balanced: parts + batch - 1 slots */
	int32_t parts;         /* 0: uniform splits; balanced: ranges (blocks) per head block */
	int32_t sparse;        /* 1: the sparse form (MLA_FLASH_SPARSE): head_blocks = ceil(h_q / block_h)
				  per query row (b, i), splits of the topk + extra_topk entries */
	size_t o_part_offset;  /* workspace: fp32 [batch * num_splits or slots][m_total][512] */
	size_t lse_part_offset;/* workspace: fp32 [batch * num_splits or slots][m_total], log2 domain */
	size_t workspace_bytes;/* 0 when num_splits == 1 (uniform) */
};

/**
 * Plan a hip.flash launch. Returns MLA_OK, MLA_EINVAL for out-of-contract args (shape fields only:
 * pointers are not looked at), MLA_EUNSUPPORTED for a config of no known space, a sparse config for
 * a dense task or a dense config for a sparse one. Sparse: the workspace has the dense layout
 * (fp32 [batch * num_splits][s_q * h_q][512] and [batch * num_splits][s_q * h_q], m = i * h_q + h).
 */
int mla_flash_plan_make(struct mla_flash_plan *plan, const struct mla_decode_args *args,
			const struct mla_decode_config *cfg);

#ifdef __cplusplus
}
#endif

#endif /* MLA_HIP_FLASH_H */
