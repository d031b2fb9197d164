/*
 * op_mla_plan.c - MLA decode's plans (op.h, op_mla.h): the shape grids of the tiers (dense and
 * sparse), the formats a card's match block plans and the topk of each (card_form()), the tasks of
 * a tier or of a workload's traffic, the plan summary's form line and full-tier note, the spec the
 * grid plans under a task's name, and the tasks the e2e stage follows. plan.c calls them through
 * the operator's table (docs/DESIGN.md "Tiers", "Workloads", "Operators").
 */
#include "op_mla.h"
#include "op.h"
#include "card.h"
#include "plan.h"
#include "task.h"
#include "vs_error.h"
#include "workload.h"
#include "mla_decode.h"
#include "mla_numeric.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * The shape grid. Each row becomes one task per planned dtype. Lengths are explicit, or ragged:
 * drawn in [1, ragged_max] from a generator seeded by the row's tag, with a 0 and the maximum
 * included, so that every plan of the same tier has the same tasks and task dirs are shared.
 */
struct shape {
	const char *tag;
	int tiers; /* bit 0 smoke, 1 standard, 2 full */
	int batch, s_q, h_q, page_size;
	int nlens; /* explicit lengths (0 = ragged or uniform) */
	int lens[8];
	int ragged_max; /* > 0: ragged lengths up to this */
	int uniform;    /* > 0: every sequence has this length */
	int64_t page_offset;
	int bf16_only;
	int gpu_only;
};

#define T_SMOKE 1
#define T_STD 2
#define T_FULL 4

static const struct shape shapes[] = {
	/* smoke: tiny, seconds on a CPU; still ragged, causal, empty, odd heads, page sizes 1/16/64 */
	{"ragged-h16-ps64", T_SMOKE, 2, 1, 16, 64, 2, {300, 1000}, 0, 0, 0, 0, 0},
	{"causal-h7-ps16", T_SMOKE | T_STD | T_FULL, 3, 2, 7, 16, 3, {0, 65, 513}, 0, 0, 0, 0, 0},
	{"page1-h32", T_SMOKE, 2, 1, 32, 1, 2, {64, 127}, 0, 0, 0, 0, 0},
	/* standard: the edge cases of the port and the head counts of tensor parallel 8..1 */
	{"edge-lengths-h16", T_STD | T_FULL, 8, 1, 16, 64, 8, {0, 1, 63, 64, 65, 127, 1000, 4099}, 0, 0, 0, 0, 0},
	{"edge-lengths-h16-sq2", T_STD | T_FULL, 8, 2, 16, 64, 8, {0, 1, 2, 63, 64, 65, 127, 4099}, 0, 0, 0, 0, 0},
	{"h64-sq2-ps16", T_STD | T_FULL, 4, 2, 64, 16, 4, {1, 64, 1031, 2048}, 0, 0, 0, 0, 0},
	{"h128-ragged", T_STD | T_FULL, 8, 1, 128, 64, 0, {0}, 8192, 0, 0, 0, 0},
	{"h24-ragged", T_STD | T_FULL, 6, 1, 24, 64, 0, {0}, 4096, 0, 0, 0, 0},
	{"h32-ps1", T_STD | T_FULL, 4, 1, 32, 1, 4, {1, 100, 333, 64}, 0, 0, 0, 0, 0},
	{"h16-b64-ragged", T_STD | T_FULL, 64, 1, 16, 64, 0, {0}, 16384, 0, 0, 0, 0},
	{"h128-b32-sq2-ragged", T_STD | T_FULL, 32, 2, 128, 64, 0, {0}, 4096, 0, 0, 0, 0},
	{"page-offset-4g", T_STD | T_FULL, 2, 1, 16, 64, 2, {129, 64}, 0, 0, 60000, 1, 1},
	/* full: the benchmark shapes of the port (compute-bound and memory-bound) */
	{"perf-h128-b128-8k", T_FULL, 128, 1, 128, 64, 0, {0}, 0, 8192, 0, 0, 1},
	{"perf-h16-b128-32k", T_FULL, 128, 1, 16, 64, 0, {0}, 0, 32768, 0, 0, 1},
	/* the other two of the four headline shapes of the side-by-side table (BENCHMARKS.md) */
	{"perf-h128-b64-8k", T_FULL, 64, 1, 128, 64, 0, {0}, 0, 8192, 0, 0, 1},
	{"perf-h16-b128-4k", T_FULL, 128, 1, 16, 64, 0, {0}, 0, 4096, 0, 0, 1},
	/* the Triton port against torch (issue 42, item 3): h_q 128, bf16, page 64, batch x context */
	{"sweep-h128-b8-1k", T_FULL, 8, 1, 128, 64, 0, {0}, 0, 1024, 0, 1, 1},
	{"sweep-h128-b8-4k", T_FULL, 8, 1, 128, 64, 0, {0}, 0, 4096, 0, 1, 1},
	{"sweep-h128-b8-8k", T_FULL, 8, 1, 128, 64, 0, {0}, 0, 8192, 0, 1, 1},
	{"sweep-h128-b8-32k", T_FULL, 8, 1, 128, 64, 0, {0}, 0, 32768, 0, 1, 1},
	{"sweep-h128-b32-1k", T_FULL, 32, 1, 128, 64, 0, {0}, 0, 1024, 0, 1, 1},
	{"sweep-h128-b32-4k", T_FULL, 32, 1, 128, 64, 0, {0}, 0, 4096, 0, 1, 1},
	{"sweep-h128-b32-8k", T_FULL, 32, 1, 128, 64, 0, {0}, 0, 8192, 0, 1, 1},
	{"sweep-h128-b32-32k", T_FULL, 32, 1, 128, 64, 0, {0}, 0, 32768, 0, 1, 1},
	{"sweep-h128-b64-1k", T_FULL, 64, 1, 128, 64, 0, {0}, 0, 1024, 0, 1, 1},
	{"sweep-h128-b64-4k", T_FULL, 64, 1, 128, 64, 0, {0}, 0, 4096, 0, 1, 1},
	{"sweep-h128-b64-8k", T_FULL, 64, 1, 128, 64, 0, {0}, 0, 8192, 0, 1, 1},
	{"sweep-h128-b64-32k", T_FULL, 64, 1, 128, 64, 0, {0}, 0, 32768, 0, 1, 1},
	{"sweep-h128-b128-1k", T_FULL, 128, 1, 128, 64, 0, {0}, 0, 1024, 0, 1, 1},
	{"sweep-h128-b128-4k", T_FULL, 128, 1, 128, 64, 0, {0}, 0, 4096, 0, 1, 1},
	{"sweep-h128-b128-8k", T_FULL, 128, 1, 128, 64, 0, {0}, 0, 8192, 0, 1, 1},
	{"sweep-h128-b128-32k", T_FULL, 128, 1, 128, 64, 0, {0}, 0, 32768, 0, 1, 1},
	/* tiny GPU tasks, launch-bound (issue 17): one key; empty sequences only (s_q 2) */
	{"tiny-h128-len1", T_FULL, 1, 1, 128, 64, 1, {1}, 0, 0, 0, 0, 1},
	{"tiny-empty-h16-sq2", T_FULL, 3, 2, 16, 64, 3, {0, 0, 0}, 0, 0, 0, 0, 1},
	{"tiny-empty-h128-sq2", T_FULL, 3, 2, 128, 64, 3, {0, 0, 0}, 0, 0, 0, 0, 1},
};

/*
 * The sparse form's grid (DeepSeek Sparse Attention, issue 36; docs/DESIGN.md "Tiers of the sparse
 * form"). A row becomes one task per planned format of its kind: V32 rows for the V3.2 formats
 * (bf16, fp8_ds_mla, fp8_ds_mla_fnuz) with topk indices into one cache; V4 rows for the V4 formats
 * (fp8_model1, fp8_model1_fnuz) with topk into the main cache and extra_topk into the extra one;
 * V4_SINGLE rows for the V4 formats without the extra cache (GEAK's single-scope cases). topk and
 * extra_topk are the card's (card_form()). Contexts are explicit, uniform or ragged as in the dense
 * grid; the extra cache's are explicit, uniform, or else the main cache's. A context of 0 gives a
 * row of all -1; one shorter than topk gives -1 padding. FlashMLA's sparse kernel takes h_q 64 and
 * 128 only: the h_q 16 and 32 rows (TP 8 and TP 4 of 128 heads) are the ones it skips.
 */
enum sparse_kind { SK_V32 = 1, SK_V4 = 2, SK_V4_SINGLE = 3 };

struct sparse_shape {
	const char *tag;
	int tiers;
	enum sparse_kind kind;
	int batch, s_q, h_q, page_size, extra_page_size;
	int nlens;
	int lens[8];
	int ragged_max, uniform;
	int nxlens;
	int xlens[8];
	int xuniform;
	int topk_length, extra_topk_length, attn_sink;
	int gpu_only;
};

static const struct sparse_shape sparse_shapes[] = {
	/* smoke: seconds on 2 CPU cores; an empty sequence, one shorter and one longer than topk */
	{.tag = "s-h64-ps64",
	 .tiers = T_SMOKE | T_STD | T_FULL,
	 .kind = SK_V32,
	 .batch = 3,
	 .s_q = 1,
	 .h_q = 64,
	 .page_size = 64,
	 .nlens = 3,
	 .lens = {0, 300, 5000}},
	{.tag = "s-h128-sq2-ps61",
	 .tiers = T_SMOKE | T_STD | T_FULL,
	 .kind = SK_V32,
	 .batch = 2,
	 .s_q = 2,
	 .h_q = 128,
	 .page_size = 61,
	 .nlens = 2,
	 .lens = {1, 2100}},
	{.tag = "s-h16-ps64",
	 .tiers = T_SMOKE | T_STD | T_FULL,
	 .kind = SK_V32,
	 .batch = 2,
	 .s_q = 1,
	 .h_q = 16,
	 .page_size = 64,
	 .nlens = 2,
	 .lens = {2048, 129}},
	{.tag = "v4-s-h64",
	 .tiers = T_SMOKE | T_STD | T_FULL,
	 .kind = SK_V4,
	 .batch = 3,
	 .s_q = 1,
	 .h_q = 64,
	 .page_size = 256,
	 .extra_page_size = 64,
	 .nlens = 3,
	 .lens = {0, 100, 3000},
	 .nxlens = 3,
	 .xlens = {5000, 0, 700},
	 .attn_sink = 1},
	{.tag = "v4-s-h128-sq2-ps69",
	 .tiers = T_SMOKE | T_STD | T_FULL,
	 .kind = SK_V4,
	 .batch = 2,
	 .s_q = 2,
	 .h_q = 128,
	 .page_size = 69,
	 .extra_page_size = 61,
	 .nlens = 2,
	 .lens = {128, 1000},
	 .nxlens = 2,
	 .xlens = {2000, 1},
	 .topk_length = 1,
	 .extra_topk_length = 1,
	 .attn_sink = 1},
	{.tag = "v4-s-single-h16",
	 .tiers = T_SMOKE | T_STD | T_FULL,
	 .kind = SK_V4_SINGLE,
	 .batch = 2,
	 .s_q = 1,
	 .h_q = 16,
	 .page_size = 256,
	 .nlens = 2,
	 .lens = {300, 50},
	 .topk_length = 1},
	/* standard: the edges around topk and the page sizes, TP 4 / TP 8 heads, contexts to 128K */
	{.tag = "edge-h64",
	 .tiers = T_STD | T_FULL,
	 .kind = SK_V32,
	 .batch = 8,
	 .s_q = 1,
	 .h_q = 64,
	 .page_size = 64,
	 .nlens = 8,
	 .lens = {0, 1, 63, 64, 65, 2047, 2048, 2049}},
	{.tag = "edge-h128-sq2-ps69",
	 .tiers = T_STD | T_FULL,
	 .kind = SK_V32,
	 .batch = 8,
	 .s_q = 2,
	 .h_q = 128,
	 .page_size = 69,
	 .nlens = 8,
	 .lens = {0, 1, 2, 69, 2048, 2049, 4099, 8191}},
	{.tag = "h32-ragged",
	 .tiers = T_STD | T_FULL,
	 .kind = SK_V32,
	 .batch = 16,
	 .s_q = 1,
	 .h_q = 32,
	 .page_size = 64,
	 .ragged_max = 32768},
	{.tag = "h16-sq2-ragged",
	 .tiers = T_STD | T_FULL,
	 .kind = SK_V32,
	 .batch = 16,
	 .s_q = 2,
	 .h_q = 16,
	 .page_size = 64,
	 .ragged_max = 16384},
	{.tag = "ctx128k-h128",
	 .tiers = T_STD | T_FULL,
	 .kind = SK_V32,
	 .batch = 2,
	 .s_q = 1,
	 .h_q = 128,
	 .page_size = 64,
	 .nlens = 2,
	 .lens = {131072, 65536}},
	{.tag = "v4-edge-h128",
	 .tiers = T_STD | T_FULL,
	 .kind = SK_V4,
	 .batch = 8,
	 .s_q = 1,
	 .h_q = 128,
	 .page_size = 256,
	 .extra_page_size = 64,
	 .nlens = 8,
	 .lens = {0, 1, 127, 128, 129, 255, 256, 4099},
	 .nxlens = 8,
	 .xlens = {1023, 1024, 1025, 0, 1, 8192, 2, 5000},
	 .attn_sink = 1},
	{.tag = "v4-h32-sq2-ragged",
	 .tiers = T_STD | T_FULL,
	 .kind = SK_V4,
	 .batch = 16,
	 .s_q = 2,
	 .h_q = 32,
	 .page_size = 256,
	 .extra_page_size = 64,
	 .ragged_max = 16384,
	 .topk_length = 1,
	 .extra_topk_length = 1,
	 .attn_sink = 1},
	{.tag = "v4-h16-ragged-xps2",
	 .tiers = T_STD | T_FULL,
	 .kind = SK_V4,
	 .batch = 16,
	 .s_q = 1,
	 .h_q = 16,
	 .page_size = 256,
	 .extra_page_size = 2,
	 .ragged_max = 8192,
	 .topk_length = 1},
	{.tag = "v4-ctx128k-h64",
	 .tiers = T_STD | T_FULL,
	 .kind = SK_V4,
	 .batch = 2,
	 .s_q = 1,
	 .h_q = 64,
	 .page_size = 256,
	 .extra_page_size = 64,
	 .nlens = 2,
	 .lens = {131072, 300},
	 .nxlens = 2,
	 .xlens = {32768, 131072},
	 .attn_sink = 1},
	/* GEAK's case set (flash_mla_tilelang_to_triton, scripts/test_triton_decode.py): main page 128, extra 256 */
	{.tag = "geak-b32-h128-16k",
	 .tiers = T_STD | T_FULL,
	 .kind = SK_V4,
	 .batch = 32,
	 .s_q = 1,
	 .h_q = 128,
	 .page_size = 128,
	 .extra_page_size = 256,
	 .ragged_max = 16384,
	 .attn_sink = 1,
	 .gpu_only = 1},
	{.tag = "geak-b32-h128-16k-len",
	 .tiers = T_STD | T_FULL,
	 .kind = SK_V4,
	 .batch = 32,
	 .s_q = 1,
	 .h_q = 128,
	 .page_size = 128,
	 .extra_page_size = 256,
	 .ragged_max = 16384,
	 .topk_length = 1,
	 .extra_topk_length = 1,
	 .attn_sink = 1,
	 .gpu_only = 1},
	{.tag = "geak-b32-h128-sq2-16k",
	 .tiers = T_STD | T_FULL,
	 .kind = SK_V4,
	 .batch = 32,
	 .s_q = 2,
	 .h_q = 128,
	 .page_size = 128,
	 .extra_page_size = 256,
	 .ragged_max = 16384,
	 .attn_sink = 1,
	 .gpu_only = 1},
	{.tag = "geak-single-b32-h128-512",
	 .tiers = T_STD | T_FULL,
	 .kind = SK_V4_SINGLE,
	 .batch = 32,
	 .s_q = 1,
	 .h_q = 128,
	 .page_size = 128,
	 .ragged_max = 512,
	 .attn_sink = 1,
	 .gpu_only = 1},
	{.tag = "geak-corner-b32-h128",
	 .tiers = T_STD | T_FULL,
	 .kind = SK_V4,
	 .batch = 32,
	 .s_q = 1,
	 .h_q = 128,
	 .page_size = 128,
	 .extra_page_size = 256,
	 .nlens = 8,
	 .lens = {0, 512, 0, 1, 127, 0, 512, 3},
	 .nxlens = 8,
	 .xlens = {1024, 0, 0, 1024, 1, 1023, 0, 700},
	 .topk_length = 1,
	 .extra_topk_length = 1,
	 .attn_sink = 1,
	 .gpu_only = 1},
	/* the headline shapes (BENCHMARKS.md): b 128, h_q 128, s_q 1 and 2, topk 2048, 8K-64K; V4 CONFIG2 */
	{.tag = "b128-h128-sq1-8k",
	 .tiers = T_STD | T_FULL,
	 .kind = SK_V32,
	 .batch = 128,
	 .s_q = 1,
	 .h_q = 128,
	 .page_size = 64,
	 .uniform = 8192,
	 .gpu_only = 1},
	{.tag = "b128-h128-sq2-32k",
	 .tiers = T_STD | T_FULL,
	 .kind = SK_V32,
	 .batch = 128,
	 .s_q = 2,
	 .h_q = 128,
	 .page_size = 64,
	 .uniform = 32768,
	 .gpu_only = 1},
	{.tag = "v4-b128-h128-sq2-16k",
	 .tiers = T_STD | T_FULL,
	 .kind = SK_V4,
	 .batch = 128,
	 .s_q = 2,
	 .h_q = 128,
	 .page_size = 256,
	 .extra_page_size = 64,
	 .uniform = 16384,
	 .attn_sink = 1,
	 .gpu_only = 1},
	/* full: the rest of the headline table, FlashMLA's other production shapes, GEAK's perf cases */
	{.tag = "b128-h128-sq1-32k",
	 .tiers = T_FULL,
	 .kind = SK_V32,
	 .batch = 128,
	 .s_q = 1,
	 .h_q = 128,
	 .page_size = 64,
	 .uniform = 32768,
	 .gpu_only = 1},
	{.tag = "b128-h128-sq1-64k",
	 .tiers = T_FULL,
	 .kind = SK_V32,
	 .batch = 128,
	 .s_q = 1,
	 .h_q = 128,
	 .page_size = 64,
	 .uniform = 65536,
	 .gpu_only = 1},
	{.tag = "b128-h128-sq2-8k",
	 .tiers = T_FULL,
	 .kind = SK_V32,
	 .batch = 128,
	 .s_q = 2,
	 .h_q = 128,
	 .page_size = 64,
	 .uniform = 8192,
	 .gpu_only = 1},
	{.tag = "b128-h128-sq2-64k",
	 .tiers = T_FULL,
	 .kind = SK_V32,
	 .batch = 128,
	 .s_q = 2,
	 .h_q = 128,
	 .page_size = 64,
	 .uniform = 65536,
	 .gpu_only = 1},
	{.tag = "b128-h64-sq2-32k",
	 .tiers = T_FULL,
	 .kind = SK_V32,
	 .batch = 128,
	 .s_q = 2,
	 .h_q = 64,
	 .page_size = 64,
	 .uniform = 32768,
	 .gpu_only = 1},
	{.tag = "b64-h128-sq2-32k",
	 .tiers = T_FULL,
	 .kind = SK_V32,
	 .batch = 64,
	 .s_q = 2,
	 .h_q = 128,
	 .page_size = 64,
	 .uniform = 32768,
	 .gpu_only = 1},
	{.tag = "b2-h128-sq2-32k",
	 .tiers = T_FULL,
	 .kind = SK_V32,
	 .batch = 2,
	 .s_q = 2,
	 .h_q = 128,
	 .page_size = 64,
	 .uniform = 32768,
	 .gpu_only = 1},
	{.tag = "v4-b64-h128-sq2-16k",
	 .tiers = T_FULL,
	 .kind = SK_V4,
	 .batch = 64,
	 .s_q = 2,
	 .h_q = 128,
	 .page_size = 256,
	 .extra_page_size = 64,
	 .uniform = 16384,
	 .attn_sink = 1,
	 .gpu_only = 1},
	{.tag = "v4-b2-h128-sq2-16k",
	 .tiers = T_FULL,
	 .kind = SK_V4,
	 .batch = 2,
	 .s_q = 2,
	 .h_q = 128,
	 .page_size = 256,
	 .extra_page_size = 64,
	 .uniform = 16384,
	 .attn_sink = 1,
	 .gpu_only = 1},
	{.tag = "v4-b128-h128-sq2-16k-xps2",
	 .tiers = T_FULL,
	 .kind = SK_V4,
	 .batch = 128,
	 .s_q = 2,
	 .h_q = 128,
	 .page_size = 256,
	 .extra_page_size = 2,
	 .uniform = 16384,
	 .extra_topk_length = 1,
	 .attn_sink = 1,
	 .gpu_only = 1},
	{.tag = "geak-b2-h128-16k",
	 .tiers = T_FULL,
	 .kind = SK_V4,
	 .batch = 2,
	 .s_q = 1,
	 .h_q = 128,
	 .page_size = 128,
	 .extra_page_size = 256,
	 .uniform = 16384,
	 .attn_sink = 1,
	 .gpu_only = 1},
	{.tag = "geak-b64-h128-16k",
	 .tiers = T_FULL,
	 .kind = SK_V4,
	 .batch = 64,
	 .s_q = 1,
	 .h_q = 128,
	 .page_size = 128,
	 .extra_page_size = 256,
	 .uniform = 16384,
	 .attn_sink = 1,
	 .gpu_only = 1},
	{.tag = "geak-b128-h128-16k",
	 .tiers = T_FULL,
	 .kind = SK_V4,
	 .batch = 128,
	 .s_q = 1,
	 .h_q = 128,
	 .page_size = 128,
	 .extra_page_size = 256,
	 .uniform = 16384,
	 .attn_sink = 1,
	 .gpu_only = 1},
	{.tag = "geak-b256-h128-16k-len",
	 .tiers = T_FULL,
	 .kind = SK_V4,
	 .batch = 256,
	 .s_q = 1,
	 .h_q = 128,
	 .page_size = 128,
	 .extra_page_size = 256,
	 .uniform = 16384,
	 .topk_length = 1,
	 .extra_topk_length = 1,
	 .attn_sink = 1,
	 .gpu_only = 1},
};

#define NSHAPES (sizeof(shapes) / sizeof(shapes[0]))
#define NSPARSE_SHAPES (sizeof(sparse_shapes) / sizeof(sparse_shapes[0]))

/* DeepSeek-V3: softmax_scale = qk_head_dim^-0.5 * mscale^2, qk_head_dim 192, mscale = 0.1 ln(40) + 1. */
static float deepseek_v3_softmax_scale(void)
{
	double mscale = 0.1 * log(40.0) + 1.0;

	return (float)(pow(192.0, -0.5) * mscale * mscale);
}

static uint64_t fnv1a(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ull;
	}
	return h;
}

static uint64_t mix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* The tool's tolerances of the spec's form and format (the operator's, op.h; set topk first). */
static void tolerances(struct task_spec *s)
{
	vs_op_of(s)->tolerances(&s->tol_out, &s->tol_lse, s);
}

static int row_lens(int32_t *lens, int64_t *pages, const char *tag, int batch, int nlens, const int *explicit_lens,
		    int uniform, int ragged_max, int page_size);

/*
 * A cache's block table columns and pages from its longest sequence and the pages its sequences
 * need: spare pages (never referenced, NaN-filled) so that the permutation is not a bijection.
 */
static void cache_pages(int32_t *max_pages, int32_t *num_pages, int max_len, int64_t pages, int page_size)
{
	*max_pages = max_len > 0 ? (max_len + page_size - 1) / page_size : 1;
	*num_pages = (int32_t)(pages + pages / 8 + 2);
}

static int shape_to_spec(struct task_spec *s, const struct shape *sh, int32_t kv_dtype)
{
	int64_t pages = 0;
	int max_len;

	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s-%s", mla_kv_dtype_name(kv_dtype), sh->tag);
	s->kv_dtype = kv_dtype;
	s->batch = sh->batch;
	s->s_q = sh->s_q;
	s->h_q = sh->h_q;
	s->page_size = sh->page_size;
	s->softmax_scale = deepseek_v3_softmax_scale();
	s->seed = fnv1a(s->name) & ((1ull << 53) - 1); /* exact in JSON */
	s->input_sets = 2;
	s->page_offset = sh->page_offset;
	tolerances(s);
	s->seqlens = calloc((size_t)sh->batch, sizeof(int32_t));
	VS_CHECK_ALLOC(s->seqlens);
	max_len = row_lens(s->seqlens, &pages, sh->tag, sh->batch, sh->nlens, sh->lens, sh->uniform, sh->ragged_max,
			   sh->page_size);
	/* The stored cache holds num_pages pages; page_offset shifts them up a larger virtual cache. */
	cache_pages(&s->max_pages, &s->num_pages, max_len, pages, sh->page_size);
	return 0;
}

/*
 * Context lengths of a grid row into lens[batch]: explicit (cycled), uniform, or ragged (the first
 * sequence the longest, the second empty, the others drawn in [1, ragged_max] from a generator
 * seeded by the row's tag). Returns the longest; *pages the pages they need at page_size.
 */
static int row_lens(int32_t *lens, int64_t *pages, const char *tag, int batch, int nlens, const int *explicit_lens,
		    int uniform, int ragged_max, int page_size)
{
	uint64_t state = fnv1a(tag);
	int max_len = 0;

	*pages = 0;
	for (int b = 0; b < batch; b++) {
		int len;

		if (nlens)
			len = explicit_lens[b % nlens];
		else if (uniform)
			len = uniform;
		else if (b == 0)
			len = ragged_max;
		else if (b == 1)
			len = 0;
		else
			len = 1 + (int)(mix64(&state) % (uint64_t)ragged_max);
		lens[b] = len;
		max_len = len > max_len ? len : max_len;
		*pages += (len + page_size - 1) / page_size;
	}
	return max_len;
}

/* The name of a sparse task: "<format>-k<topk>[+<extra_topk>]-<tag>" ("fp8_model1-k128+1024-v4-s-h64"). */
static void sparse_name(char *buf, size_t cap, int32_t kv_dtype, int topk, int extra_topk, const char *tag)
{
	if (extra_topk)
		snprintf(buf, cap, "%s-k%d+%d-%s", mla_kv_dtype_name(kv_dtype), topk, extra_topk, tag);
	else
		snprintf(buf, cap, "%s-k%d-%s", mla_kv_dtype_name(kv_dtype), topk, tag);
}

/* Whether sparse row sh is planned for format kv_dtype (V32 rows for the V3.2 formats, V4 rows for V4). */
static int sparse_row_fits(const struct sparse_shape *sh, int32_t kv_dtype)
{
	return mla_kv_is_model1(kv_dtype) ? sh->kind != SK_V32 : sh->kind == SK_V32;
}

/*
 * The spec of sparse row sh for format kv_dtype, topk and (V4 rows with the extra cache) extra_topk:
 * the dense spec's scalars (softmax_scale, seed from the name, two input sets, the tool's
 * tolerances), page_offset 0, and the cache sizes as the dense grid sizes them (pages the contexts
 * need, plus an eighth and 2 spare pages that no index names).
 */
static int sparse_to_spec(struct task_spec *s, const struct sparse_shape *sh, int32_t kv_dtype, int topk,
			  int extra_topk)
{
	int64_t pages = 0;
	int max_len;

	memset(s, 0, sizeof(*s));
	if (sh->kind != SK_V4)
		extra_topk = 0;
	sparse_name(s->name, sizeof(s->name), kv_dtype, topk, extra_topk, sh->tag);
	s->kv_dtype = kv_dtype;
	s->batch = sh->batch;
	s->s_q = sh->s_q;
	s->h_q = sh->h_q;
	s->page_size = sh->page_size;
	s->softmax_scale = deepseek_v3_softmax_scale();
	s->seed = fnv1a(s->name) & ((1ull << 53) - 1);
	s->input_sets = 2;
	s->topk = topk;
	tolerances(s);
	s->topk_length = sh->topk_length;
	s->attn_sink = sh->attn_sink;
	s->seqlens = calloc((size_t)sh->batch, sizeof(int32_t));
	VS_CHECK_ALLOC(s->seqlens);
	max_len = row_lens(s->seqlens, &pages, sh->tag, sh->batch, sh->nlens, sh->lens, sh->uniform, sh->ragged_max,
			   sh->page_size);
	cache_pages(&s->max_pages, &s->num_pages, max_len, pages, sh->page_size);
	if (!extra_topk)
		return 0;
	s->extra_topk = extra_topk;
	s->extra_page_size = sh->extra_page_size;
	s->extra_topk_length = sh->extra_topk_length;
	s->extra_seqlens = calloc((size_t)sh->batch, sizeof(int32_t));
	VS_CHECK_ALLOC(s->extra_seqlens);
	if (sh->nxlens || sh->xuniform)
		max_len = row_lens(s->extra_seqlens, &pages, sh->tag, sh->batch, sh->nxlens, sh->xlens, sh->xuniform, 0,
				   sh->extra_page_size);
	else
		max_len = row_lens(s->extra_seqlens, &pages, sh->tag, sh->batch, sh->nlens, sh->lens, sh->uniform,
				   sh->ragged_max, sh->extra_page_size);
	cache_pages(&s->extra_max_pages, &s->extra_num_pages, max_len, pages, sh->extra_page_size);
	return 0;
}

/* A cache format a plan's tasks are planned for, with the card's topk for it (0: dense). */
struct planned_format {
	int32_t kv_dtype;
	int topk, extra_topk;
	const char *why; /* card_form()'s */
};

#define PLAN_MAX_FORMATS 4

/*
 * The formats a card's tasks are planned for, in its order: those of its form (card_form()), at
 * most two for the dense form (bf16, fp8_e4m3_fnuz) and PLAN_MAX_FORMATS for the sparse one.
 * Returns how many.
 */
static int planned_formats(struct planned_format *f, const struct card *c)
{
	int n = 0, max = card_sparse(c) ? PLAN_MAX_FORMATS : 2;

	for (int i = 0; i < c->match.dtypes.count && n < max; i++) {
		int32_t d = mla_kv_dtype_parse(c->match.dtypes.items[i]);
		int dup = 0;

		for (int k = 0; k < n; k++)
			dup |= f[k].kv_dtype == d;
		if (!d || dup || !card_form(c, d, &f[n].topk, &f[n].extra_topk, &f[n].why))
			continue;
		f[n++].kv_dtype = d;
	}
	return n;
}

/*
 * A card's `expects.parity: relaxed(<tol>)` (card_parity_relaxed()): out and lse compared at
 * absolute and relative tolerance tol, where that is looser than the tool's own (a relaxed parity
 * never tightens one); cos_diff keeps the tool's bound.
 */
static void relax_tolerances(struct task_spec *s, double tol)
{
	s->tol_out.atol = fmax(s->tol_out.atol, tol);
	s->tol_out.rtol = fmax(s->tol_out.rtol, tol);
	s->tol_lse.atol = fmax(s->tol_lse.atol, tol);
	s->tol_lse.rtol = fmax(s->tol_lse.rtol, tol);
}

/* The relaxed parity tolerance of card c, or 0 (the tool's tolerances). */
static double card_relax(const struct card *c)
{
	double tol = 0;

	return card_parity_relaxed(c->expects.parity, &tol) ? tol : 0;
}

/*
 * The tasks of a plan: the rows of the shape grid in tier_bit (GPU rows only when gpu), once per
 * planned dtype, in that order, with their hashes. What plan_build() plans and plan_check_card()
 * derives again.
 */
static int derive_tasks(struct plan *np, const struct planned_format *fmts, int nfmts, int tier_bit, int gpu,
			double relax)
{
	size_t cap = NSHAPES * 2 + NSPARSE_SHAPES * PLAN_MAX_FORMATS;

	np->tasks = calloc(cap, sizeof(*np->tasks));
	np->task_hash = calloc(cap, sizeof(*np->task_hash));
	VS_CHECK_ALLOC(np->tasks && np->task_hash);
	for (int d = 0; d < nfmts; d++) {
		for (size_t i = 0; fmts[d].topk && i < NSPARSE_SHAPES; i++) {
			const struct sparse_shape *sh = &sparse_shapes[i];
			int err;

			if (!(sh->tiers & tier_bit) || (sh->gpu_only && !gpu) || !sparse_row_fits(sh, fmts[d].kv_dtype))
				continue;
			err = sparse_to_spec(&np->tasks[np->ntasks], sh, fmts[d].kv_dtype, fmts[d].topk,
					     fmts[d].extra_topk);
			if (!err && relax > 0)
				relax_tolerances(&np->tasks[np->ntasks], relax);
			if (!err)
				err = task_spec_hash(&np->tasks[np->ntasks], np->task_hash[np->ntasks]);
			if (err)
				return err;
			np->ntasks++;
		}
		for (size_t i = 0; !fmts[d].topk && i < NSHAPES; i++) {
			const struct shape *sh = &shapes[i];
			int err;

			if (!(sh->tiers & tier_bit) || (sh->gpu_only && !gpu) ||
			    (sh->bf16_only && fmts[d].kv_dtype != MLA_KV_BF16))
				continue;
			err = shape_to_spec(&np->tasks[np->ntasks], sh, fmts[d].kv_dtype);
			if (!err && relax > 0)
				relax_tolerances(&np->tasks[np->ntasks], relax);
			if (!err)
				err = task_spec_hash(&np->tasks[np->ntasks], np->task_hash[np->ntasks]);
			if (err)
				return err;
			np->ntasks++;
		}
	}
	return 0;
}

/*
 * The tasks of a workload plan: the workload's tasks once per planned dtype that the workload runs
 * (card order), each task's weight split evenly over those dtypes. The card's form and the
 * workload's must agree (both dense, or both sparse); a sparse task takes the workload's topk and
 * extra cache (docs/DESIGN.md "Workloads of the sparse form"), and a card that states match.topk
 * (match.extra_topk) claims that one only. Fills np->tasks, np->task_hash and np->workload (whose
 * id, path and hashes the caller sets).
 */
static int derive_workload_tasks(struct plan *np, const struct card *c, const struct planned_format *fmts, int nfmts,
				 const struct workload *w, const struct workload_tasks *wt, double relax)
{
	int32_t use[PLAN_MAX_FORMATS];
	int nuse = 0, cap, sparse = nfmts > 0 && fmts[0].topk > 0;
	char names[128] = "";

	for (int d = 0; d < nfmts; d++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", d ? ", " : "",
			 mla_kv_dtype_name(fmts[d].kv_dtype));
	if (sparse != (w->topk > 0))
		return vs_error(VS_EUNSUPPORTED,
				sparse ?
					"%s: a dense workload (its model has no topk and no block-scaled kv_dtype) for "
					"a sparse (DSA) card: give the workload model.topk and the card's cache format "
					"(%s)" :
					"%s: a sparse (DSA) workload (model.topk or a block-scaled kv_dtype) for a "
					"dense card (its match.arch_class names no " CARD_ARCH_SPARSE "; formats %s)",
				w->path, names);
	for (int d = 0; d < nfmts; d++)
		for (int k = 0; k < w->n_kv_dtypes; k++)
			if (w->kv_dtypes[k] == fmts[d].kv_dtype)
				use[nuse++] = fmts[d].kv_dtype;
	if (!nuse)
		return vs_error(VS_EUNSUPPORTED,
				"%s: model.kv_dtypes has none of the card's planned dtypes (%s): nothing to plan",
				w->path, names);
	if (sparse && c->match.topk && c->match.topk != w->topk)
		return vs_error(VS_EUNSUPPORTED,
				"%s: model.topk is %d, but %s claims match.topk %d: the card's kernel is claimed for "
				"another indexer topk (plan a workload of that topk, or a card without match.topk)",
				w->path, w->topk, c->path, c->match.topk);
	if (sparse && w->extra_topk && c->match.extra_topk && c->match.extra_topk != w->extra_topk)
		return vs_error(VS_EUNSUPPORTED, "%s: model.extra_topk is %d, but %s claims match.extra_topk %d",
				w->path, w->extra_topk, c->path, c->match.extra_topk);
	cap = wt->count * nuse;
	np->tasks = calloc((size_t)cap, sizeof(*np->tasks));
	np->task_hash = calloc((size_t)cap, sizeof(*np->task_hash));
	np->workload = calloc(1, sizeof(*np->workload));
	VS_CHECK_ALLOC(np->tasks && np->task_hash && np->workload);
	np->workload->concurrency = calloc((size_t)cap, sizeof(int));
	np->workload->steps = calloc((size_t)cap, sizeof(int));
	np->workload->weight = calloc((size_t)cap, sizeof(double));
	VS_CHECK_ALLOC(np->workload->concurrency && np->workload->steps && np->workload->weight);
	np->workload->seed = wt->seed;
	memcpy(np->workload->sha256, wt->workload_sha256, 65);
	memcpy(np->workload->trace_sha256, wt->trace_sha256, 65);
	for (int d = 0; d < nuse; d++) {
		for (int k = 0; k < wt->count; k++) {
			const struct workload_task *x = &wt->items[k];
			struct task_spec *s = &np->tasks[np->ntasks];
			char tag[64];
			int err;

			snprintf(tag, sizeof(tag), "wl-c%d-t%d", x->concurrency, k);
			if (sparse) {
				struct sparse_shape sh = {.tag = tag,
							  .kind = w->extra_topk ? SK_V4 : SK_V32,
							  .batch = x->batch,
							  .s_q = w->s_q,
							  .h_q = w->h_q,
							  .page_size = w->page_size,
							  .extra_page_size = w->extra_page_size,
							  .uniform = 1,
							  .xuniform = 1,
							  .attn_sink = w->attn_sink};

				err = sparse_to_spec(s, &sh, use[d], w->topk, w->extra_topk);
			} else {
				struct shape sh;

				memset(&sh, 0, sizeof(sh));
				sh.tag = tag;
				sh.batch = x->batch;
				sh.s_q = w->s_q;
				sh.h_q = w->h_q;
				sh.page_size = w->page_size;
				sh.uniform = 1;
				err = shape_to_spec(s, &sh, use[d]);
			}
			if (!err) {
				/* the sampled step's lengths, pages as shape_to_spec() counts them */
				int64_t pages;
				int max_len = row_lens(s->seqlens, &pages, tag, x->batch, x->batch, x->seqlens, 0, 0,
						       w->page_size);

				cache_pages(&s->max_pages, &s->num_pages, max_len, pages, w->page_size);
				if (s->extra_topk) {
					/* V4's compressed cache: one row per extra_compress keys of the context */
					for (int b = 0; b < x->batch; b++)
						s->extra_seqlens[b] = x->seqlens[b] / w->extra_compress;
					max_len = row_lens(s->extra_seqlens, &pages, tag, x->batch, x->batch,
							   s->extra_seqlens, 0, 0, w->extra_page_size);
					cache_pages(&s->extra_max_pages, &s->extra_num_pages, max_len, pages,
						    w->extra_page_size);
				}
				/* the name says the workload; the seed follows the workload's, not only the name */
				s->seed = (fnv1a(s->name) ^ (wt->seed * 0x9e3779b97f4a7c15ull)) & ((1ull << 53) - 1);
				if (relax > 0)
					relax_tolerances(s, relax);
				err = task_spec_hash(s, np->task_hash[np->ntasks]);
			}
			if (err)
				return err;
			np->workload->concurrency[np->ntasks] = x->concurrency;
			np->workload->steps[np->ntasks] = x->steps;
			np->workload->weight[np->ntasks] = x->weight / nuse;
			np->ntasks++;
		}
	}
	return 0;
}

/*
 * The formats of a workload plan, for its summary: those of f[0..n) that the workload runs, with
 * the workload's topk (the sparse form); compacted in place. Returns how many.
 */
static int workload_formats(struct planned_format *f, int n, const struct workload *w)
{
	int m = 0;

	for (int d = 0; d < n; d++) {
		int runs = 0;

		for (int k = 0; k < w->n_kv_dtypes; k++)
			runs |= w->kv_dtypes[k] == f[d].kv_dtype;
		if (!runs)
			continue;
		f[m] = f[d];
		if (f[m].topk) {
			f[m].topk = w->topk;
			f[m].extra_topk = w->extra_topk;
			f[m].why = "the workload's model";
		}
		m++;
	}
	return m;
}

/* 1 when the card's match.dtypes lists a block-scaled cache format (the sparse form's). */
static int lists_blockscaled(const struct card *c)
{
	for (int i = 0; i < c->match.dtypes.count; i++)
		if (mla_kv_is_blockscaled(mla_kv_dtype_parse(c->match.dtypes.items[i])))
			return 1;
	return 0;
}

/*
 * The form the plan takes and why, for the summary (malloc'd into *out): "sparse (match.arch_class
 * deepseek_dsa): fp8_ds_mla, topk 2048 (the default of the V3.2 formats)" or "dense (match.arch_class
 * names no deepseek_dsa): bf16, fp8_e4m3_fnuz".
 */
static int form_note(char **out, const struct card *c, const struct planned_format *f, int n)
{
	char buf[512];
	size_t at;

	at = (size_t)snprintf(buf, sizeof(buf), "%s",
			      card_sparse(c) ? "sparse (match.arch_class " CARD_ARCH_SPARSE "):" :
					       "dense (match.arch_class names no " CARD_ARCH_SPARSE "):");
	for (int i = 0; i < n && at < sizeof(buf); i++) {
		if (!f[i].topk)
			at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s %s", i ? "," : "",
					       mla_kv_dtype_name(f[i].kv_dtype));
		else if (f[i].extra_topk)
			at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s cache %s, topk %d + extra_topk %d (%s)",
					       i ? ";" : "", mla_kv_dtype_name(f[i].kv_dtype), f[i].topk,
					       f[i].extra_topk, f[i].why);
		else
			at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s cache %s, topk %d (%s)", i ? ";" : "",
					       mla_kv_dtype_name(f[i].kv_dtype), f[i].topk, f[i].why);
	}
	*out = strdup(buf);
	VS_CHECK_ALLOC(*out);
	return 0;
}

/*
 * The shapes tier full adds to standard that a backend cannot run (the GPU benchmark shapes on the
 * CPU), as "a, b" into buf; returns how many tier full adds that it can run. sparse: the sparse
 * form's grid.
 */
static int full_tier_extra(char *buf, size_t cap, int gpu, int sparse)
{
	int runnable = 0;
	size_t n = sparse ? NSPARSE_SHAPES : NSHAPES;

	*buf = '\0';
	for (size_t i = 0; i < n; i++) {
		int tiers = sparse ? sparse_shapes[i].tiers : shapes[i].tiers;
		int gpu_only = sparse ? sparse_shapes[i].gpu_only : shapes[i].gpu_only;
		const char *tag = sparse ? sparse_shapes[i].tag : shapes[i].tag;

		if (!(tiers & T_FULL) || (tiers & T_STD))
			continue;
		if (gpu_only && !gpu)
			snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", *buf ? ", " : "", tag);
		else
			runnable++;
	}
	return runnable;
}

/* The spec of the shape grid's task named name ("<kv dtype>-<tag>"): 0, or VS_ENOTFOUND. */
static int derive_spec_named(struct task_spec *s, const char *name)
{
	static const int32_t dts[] = {MLA_KV_BF16, MLA_KV_FP8_E4M3_FNUZ};

	for (size_t d = 0; d < sizeof(dts) / sizeof(dts[0]); d++) {
		const char *dn = mla_kv_dtype_name(dts[d]);
		size_t n = strlen(dn);

		if (strncmp(name, dn, n) || name[n] != '-')
			continue;
		for (size_t i = 0; i < NSHAPES; i++)
			if (!strcmp(name + n + 1, shapes[i].tag))
				return shape_to_spec(s, &shapes[i], dts[d]);
	}
	/* sparse: "<format>-k<topk>[+<extra_topk>]-<tag>" */
	for (int32_t k = MLA_KV_BF16; k <= MLA_KV_FP8_MODEL1_FNUZ; k++) {
		const char *dn = mla_kv_dtype_name(k), *at;
		size_t n = strlen(dn);
		char *end = NULL;
		long topk, extra = 0;

		if (k == MLA_KV_FP8_E4M3_FNUZ || strncmp(name, dn, n) || strncmp(name + n, "-k", 2))
			continue;
		at = name + n + 2;
		topk = strtol(at, &end, 10);
		if (end == at || topk < 1 || topk > CARD_TOPK_MAX)
			continue;
		if (*end == '+') {
			at = end + 1;
			extra = strtol(at, &end, 10);
			if (end == at || extra < 1 || extra > CARD_TOPK_MAX)
				continue;
		}
		if (*end != '-')
			continue;
		for (size_t i = 0; i < NSPARSE_SHAPES; i++)
			if (!strcmp(end + 1, sparse_shapes[i].tag) && sparse_row_fits(&sparse_shapes[i], k) &&
			    (sparse_shapes[i].kind == SK_V4) == (extra > 0))
				return sparse_to_spec(s, &sparse_shapes[i], k, (int)topk, (int)extra);
	}
	return VS_ENOTFOUND;
}

/* ---- the operator's entries (op.h) ---------------------------------------------------------- */

int mla_plan_card(const struct card *c)
{
	struct planned_format fmts[PLAN_MAX_FORMATS];
	int nfmts = planned_formats(fmts, c);

	if (!nfmts && card_sparse(c))
		return vs_error(VS_EUNSUPPORTED,
				"%s: match.dtypes has none of the sparse form's cache formats (bf16, fp8_ds_mla, "
				"fp8_model1, fp8_ds_mla_fnuz, fp8_model1_fnuz), which match.arch_class %s selects",
				c->path, CARD_ARCH_SPARSE);
	if (!nfmts)
		return vs_error(VS_EUNSUPPORTED,
				"%s: match.dtypes has none of the dense form's dtypes (bf16, fp8_e4m3_fnuz)%s", c->path,
				lists_blockscaled(c) ?
					": a block-scaled cache is the sparse form's (add " CARD_ARCH_SPARSE
					" to match.arch_class)" :
					"");
	return 0;
}

int mla_derive_tasks(struct plan *np, const struct card *c, int tier_bit, int gpu, const struct workload *w,
		     const struct workload_tasks *wt)
{
	struct planned_format fmts[PLAN_MAX_FORMATS];
	int nfmts = planned_formats(fmts, c);

	if (w)
		return derive_workload_tasks(np, c, fmts, nfmts, w, wt, card_relax(c));
	return derive_tasks(np, fmts, nfmts, tier_bit, gpu, card_relax(c));
}

int mla_plan_form(char **out, const struct card *c, const struct workload *w)
{
	struct planned_format fmts[PLAN_MAX_FORMATS];
	int nfmts = planned_formats(fmts, c);

	if (w)
		nfmts = workload_formats(fmts, nfmts, w);
	return form_note(out, c, fmts, nfmts);
}

int mla_full_tier_extra(char *buf, size_t cap, int gpu, const struct task_spec *first)
{
	return full_tier_extra(buf, cap, gpu, first && first->topk > 0);
}

int mla_spec_named(struct task_spec *s, const char *name)
{
	return derive_spec_named(s, name);
}

int mla_e2e_task(const struct task_spec *s)
{
	return s->topk == 0 && s->s_q == 1 && s->kv_dtype == MLA_KV_BF16 && s->h_q > 0 && 128 % s->h_q == 0;
}
