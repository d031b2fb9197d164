"""tilelang.mla_decode: the TileLang MLA decode core, written here in TileLang.

Design (TileLang's published MLA decode, examples/deepseek_mla/example_mla_decode_paged.py in
tile-ai/tilelang, re-written for this harness's operator, see kernels/mla_decode.h):

- split-KV: grid (batch, query-row tiles, num_splits); each CTA runs the online softmax over its
  share of the key tiles and, with num_splits > 1, writes fp32 partials (O, log2-sum-exp) into the
  harness's workspace; a second kernel merges them with an LSE-weighted sum.
- 256 threads = two warpgroups.  Both GEMMs use TileLang's FullCol warp policy: for Q.K^T each
  warpgroup computes half of the BLOCK_N score columns, for P.V each computes half of the 512
  output columns; the exponentiated scores are exchanged through shared memory (S_shared), which
  is the A operand of the P.V GEMM.
- BLOCK_H query rows share each KV tile (the absorbed form has one latent KV head).  s_q > 1 is
  folded into the rows: row r = s * h_q + h, so h_q 16 with s_q 2 fills 32 rows.

Extended to the harness's operator:
- the interleaved 576-wide paged cache [num_pages, page_size, 1, 576] read through block_table:
  V is the first 512 columns of the K rows.  A full key tile inside one page (page_size a multiple
  of BLOCK_N) is one bulk copy, as in the example; otherwise (page_size 1, 16) the tile is
  gathered: the cache row of each of its BLOCK_N keys is block_table[b][j // page_size] *
  page_size + j % page_size (int64), read with vector loads.  The full tiles' gather is a plain
  loop (TileLang 0.1.15's pipeline planner fails on it), pipelined by hand with GATHER_PREFETCH
  (default): each thread loads the block_table entries of its 18 rows of the next tile into
  registers before this tile's GEMMs (bf16: one memory latency per tile instead of two), and for
  fp8 the next tile's codes themselves (36 registers); without it, and in the tail, the rows are
  computed into shared memory first, then read through it.
- any s_q*h_q: the head tile is BLOCK_H (64) rows when that divides s_q*h_q, else 16, and the
  last tile is padded: its rows past s_q*h_q load zero queries, see the keys of the last real row
  (they never widen the keys read) and are not stored.
- the tail: the key tiles that contain a row's visible length are processed after the pipelined
  loop with predicated loads: rows at or past the visible length are never read (they hold NaN,
  their block_table entries may be sentinels) and are zero in shared memory (a select, never a
  multiply: 0 * NaN is NaN).
- fp8_e4m3_fnuz: codes are decoded in the kernel (NVIDIA's hardware fp8 conversion is OCP
  e4m3fn, another format) into bf16 of exactly the fnuz value * 2^-7, then the same bf16 GEMMs;
  2^7 * kv_scale is folded into the score scale and into the output.  FP8_DECODE "tile"
  (default): CUDA imported into the kernel (_FNUZ_SRC) decodes 8 codes per 64-bit load with
  integer ops: the code's bits seeeemmm placed as the bf16 s0000eeeemmm0000 are exactly the fnuz
  value * 2^-119 (e == 0 a bf16 subnormal), one bf16x2 multiply by 2^112 per pair (exact), 0x80
  (fnuz's only NaN) found by an exact zero-byte test and set to NaN off the common path; no
  conversion instruction.  "scalar": the path before (per element, the code as the fp16
  s0eeeemmm0000000 = value * 2^-7, converted to bf16, 0x80 by a select).  With page_size a
  multiple of BLOCK_N the code tile is one bulk (TMA) copy into shared memory, decoded shared ->
  shared into the bf16 tile the GEMMs read (one call per thread, 18 loads of 8 codes and 18
  16-byte stores, one barrier); otherwise the gathered rows are decoded on the way into shared
  memory.  The CUDA writes the bf16 tiles in the layout TileLang gives the GEMM operands (the
  128-byte swizzle of 64-column panels), which tools/gpu/tilelang_check.py --layout-check
  verifies against TileLang's own address computation.
- ragged lengths including 0: a row with no visible key gives out 0, lse +inf (and an empty
  split writes an lse of -inf that the merge weights by 0: no 0/0, no NaN).
- causal s_q > 1: query i sees keys [0, seqlen - s_q + i].
- lse in natural log; softmax_scale explicit (compiled in: prepare() compiles per task).

The kernel reads seqlens and block_table on the device only, allocates nothing per launch
(partials live in the workspace) and launches on torch's current stream (the bridge runs launch()
under torch.cuda.stream(args.stream)), so a launch can be captured into a CUDA graph.
"""

NAME = "tilelang.mla_decode"
BACKEND = "cuda"
KV_DTYPES = ("bf16", "fp8_e4m3_fnuz")
SUMMARY = ("TileLang MLA decode core (TileLang's published design: split-KV, two warpgroups "
	"splitting the output columns, BLOCK_H heads per KV tile) on the paged 576-wide cache")

D = 576
DV = 512
DPE = 64
LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453
# the paths past TileLang's example, each offered once it has passed tools/gpu/tilelang_check.py on
# a GPU (its --unlock runs the others): "pad" s_q*h_q not a multiple of the head tile, "page16" and
# "page1" the row gather through block_table, "fp8" the in-kernel fnuz decode.  All four passed
# parity (both configs, the card's standard-tier shapes and edge lengths), determinism and the
# capture check on the H200 on 2026-12-01 (results/bench/tilelang_mla_decode_h200/paths_20261201T1200Z/)
# with the paths of then (FP8_DECODE "scalar", GATHER_PREFETCH False), and again with today's
# defaults (FP8_DECODE "tile", GATHER_PREFETCH True) on 2026-12-01 at 16:56, with the code-by-code
# fp8 decode checks (results/bench/cards_20261201T1656Z/gate_tilelang_check.txt)
OFFERED = {"pad": True, "page16": True, "page1": True, "fp8": True}
NOT_PROVEN = {
	"pad": "s_q*h_q %d: the padded head tile (rows past s_q*h_q masked on load and store) has not "
		"passed parity on a GPU",
	"page16": "page_size 16: the row gather through block_table has not passed parity on a GPU",
	"page1": "page_size 1: the row gather through block_table has not passed parity on a GPU",
	"fp8": "kv_dtype fp8_e4m3_fnuz: the in-kernel fnuz decode has not passed parity on a GPU",
}
# fp8 with whole-tile pages: True = TMA copy of the codes and a shared -> shared decode; False = the
# row gather (the path of pages of 1 and 16 keys), decoding on the way into shared memory
FP8_BULK = True
# Q is written to shared memory by plain stores (not TMA: see attend()); TileLang 0.1.15 then fences
# them for the tensor cores' async proxy (fence.proxy.async) before the Q.K GEMM of every key tile,
# where its example (Q by TMA) has no fence.  True: one fence and barrier after the Q load instead
# (TileLang then drops the per-tile one: the main loop's source is the example's).  Off: measured
# on the H200 on 2026-12-01 against the example in one process, it did not help (1.033 / 1.082 the
# example's time at h_q 128 b 128 / b 64 8K, against 1.039 / 1.013 without; BENCHMARKS.md)
Q_FENCE_ONCE = False
# the fnuz decode: "tile" = 8 codes per 64-bit shared load by integer ops and one bf16x2 multiply
# per pair (tl_fnuz8, CUDA imported into the kernel), the bulk tile by one call per thread with its
# own addresses (tl_fnuz_tile); "chunk" = the same tl_fnuz8 per 8 codes at addresses TileLang
# computes (a barrier per loop iteration); "scalar" = the per-element _fnuz_decode (the path before,
# measured ~4x the bf16 time on the H200).  The gather paths (pages of 1 and 16 and FP8_BULK False)
# use tl_fnuz8 with "tile" and "chunk" too; the bulk tail tiles stay per element.  "tile" not yet
# measured on a GPU (passes tools/gpu/tilelang_check.py --layout-check offline)
FP8_DECODE = "tile"
# the row gather of the full key tiles (pages of 1 and 16 keys; fp8 with FP8_BULK False), a plain
# loop pipelined by hand.  True: each thread's block_table entries (bf16: tl_rows_load, then
# tl_bf16_gather) or, fp8 with FP8_DECODE != "scalar", its codes (tl_fnuz_load, 36 registers, then
# tl_fnuz_store) of the next tile are loaded before this tile's GEMMs, rows computed per thread
# (no index tile in shared memory); False: the tile's rows into shared memory, then the loads
# through it (bf16: TileLang's vector loads; fp8: tl_fnuz_gather, or per element with "scalar").
# Not yet measured on a GPU
GATHER_PREFETCH = True
FP8_UNIT = 2.0 ** 7  # fnuz value of a code = its fp16 bit-placement value * 2^7 (see _fnuz_decode)

_tl = None
_TARGET = "auto"  # tests off the GPU set {"kind": "cuda", "arch": "sm_90a"}
_kernels = {}
_views = {}


def _rows(shape):
	return shape.s_q * shape.h_q


def _block_h(shape, config):
	"""Query rows per CTA: the config's BLOCK_H when it divides the rows, else 16 (the last tile
	padded when 16 does not divide them either)."""
	bh = int(config.get("block_h", 64))
	rows = _rows(shape)
	if rows % bh == 0:
		return bh
	return 16


def supports(shape):
	if shape.kv_dtype not in KV_DTYPES:
		return "kv_dtype %s: not a dtype this kernel decodes" % shape.kv_dtype
	if shape.page_size <= 0:
		return "page_size %d: not a page size" % shape.page_size
	if _rows(shape) % 16 != 0 and not OFFERED["pad"]:
		return NOT_PROVEN["pad"] % _rows(shape)
	if shape.page_size % 64 != 0:
		if shape.page_size not in (1, 16):
			return ("page_size %d: the row gather is proven for pages of 1 and 16 keys only (and "
				"the bulk copy for multiples of 64)" % shape.page_size)
		if not OFFERED["page%d" % shape.page_size]:
			return NOT_PROVEN["page%d" % shape.page_size]
	if shape.kv_dtype == "fp8_e4m3_fnuz" and not OFFERED["fp8"]:
		return NOT_PROVEN["fp8"]
	return None


def configs(arch):
	if str(arch) == "gfx942":
		# MI300X (TileLang's HIP backend: MFMA, 64-wide wavefronts, 64 KiB of LDS per workgroup):
		# Q of 64 heads alone (72 KiB of bf16) does not fit, so 16 heads and 32 keys per tile
		# (18 + 36 KiB), single-buffered, 256 threads.  Chosen from those limits for the plan of
		# the field's gfx942 card; never compiled or run: no MI300X has been lent to this project.
		return [{"name": "bn32_bh16_sp%d_w8_st1" % ns, "block_n": 32, "block_h": 16, "num_splits": ns,
			"num_warps": 8, "num_stages": 1} for ns in (1, 4)]
	if not str(arch).startswith("sm_90"):
		return []
	out = []
	for ns in (1, 4):  # 1 was fastest on the four headline shapes; 4 for small batches (2, 8 dropped: compile time)
		out.append({"name": "bn64_bh64_sp%d_w8_st2" % ns, "block_n": 64, "block_h": 64,
			"num_splits": ns, "num_warps": 8, "num_stages": 2})
	return out


def workspace_size(shape, config):
	ns = int(config.get("num_splits", 1))
	if ns <= 1:
		return 0
	return shape.batch * _rows(shape) * ns * (DV + 1) * 4


def _import():
	global _tl
	if _tl is None:
		import tilelang
		import tilelang.language as T
		_tl = (tilelang, T)
	return _tl


def _fnuz_decode(T, code):
	"""fp8 e4m3 fnuz code (uint8 expr) -> bf16 value / 2^7; NaN for 0x80.

	The code's bits seeeemmm placed as the fp16 s0eeeemmm0000000 are an fp16 of exponent field e
	(bias 15, against fnuz's 8) and the same 3 mantissa bits, subnormals (e == 0) included: its
	value is exactly the fnuz value * 2^-7 for every code but 0x80 (fp16 -0, fnuz's only NaN), and
	fp16 has no infinity or NaN in that range (e <= 15 < 31).  Exact in bf16.  2^7 * kv_scale is
	folded into the score scale and into the output."""
	u = T.Cast("uint16", code)
	h = T.reinterpret(((u & T.uint16(0x80)) << T.uint16(8)) | ((u & T.uint16(0x7F)) << T.uint16(7)),
		"float16")
	return T.if_then_else(code == T.uint8(0x80), T.Cast("bfloat16", T.float32(float("nan"))),
		T.Cast("bfloat16", h))


# the vectorized fnuz decode (FP8_DECODE "tile" and "chunk"), CUDA imported into the kernel
_FNUZ_SRC = r"""
// two fnuz codes (the bytes sel picks, placed at bits 8..15 of each 16-bit lane) -> the bf16x2 bits
// s|0000eeee|mmm0000: exactly the fnuz value * 2^-119 for every code but 0x80 (bf16 -0), e == 0 a
// bf16 subnormal
__device__ __forceinline__ unsigned tl_fnuz_pair(unsigned w, unsigned sel) {
	unsigned p = __byte_perm(w, 0u, sel);
	unsigned r = (p & 0x80008000u) | ((p >> 4) & 0x07F007F0u);
	unsigned o;
	// * 2^112 (bf16 0x7780), exact: the value * 2^-7, normal; mul.bf16x2 keeps subnormal inputs
	asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(o) : "r"(r), "r"(0x77807780u));
	return o;
}
// 8 codes -> 8 bf16 (the fnuz value * 2^-7; NaN for 0x80)
__device__ __forceinline__ uint4 tl_fnuz8(uint2 w) {
	uint4 o;
	o.x = tl_fnuz_pair(w.x, 0x1404u);
	o.y = tl_fnuz_pair(w.x, 0x3424u);
	o.z = tl_fnuz_pair(w.y, 0x1404u);
	o.w = tl_fnuz_pair(w.y, 0x3424u);
	// 0x80 in a byte of t ^ 0x80808080 exactly where a code is 0x80 (zero-byte test, no carries)
	unsigned tx = w.x ^ 0x80808080u, ty = w.y ^ 0x80808080u;
	unsigned zx = ~(((tx & 0x7F7F7F7Fu) + 0x7F7F7F7Fu) | tx | 0x7F7F7F7Fu);
	unsigned zy = ~(((ty & 0x7F7F7F7Fu) + 0x7F7F7F7Fu) | ty | 0x7F7F7F7Fu);
	if (zx | zy) {
		unsigned* op = reinterpret_cast<unsigned*>(&o);
		#pragma unroll
		for (int k = 0; k < 8; ++k) {
			unsigned z = (k < 4 ? zx : zy) >> (8 * (k & 3));
			if (z & 0x80u)
				op[k >> 1] |= 0x7FC0u << (16 * (k & 1));
		}
	}
	return o;
}
__device__ __forceinline__ void tl_fnuz8_bf16(const void* src, void* dst) {
	*reinterpret_cast<uint4*>(dst) = tl_fnuz8(*reinterpret_cast<const uint2*>(src));
}
// a whole 64-key tile, by the 256 threads that run it (threadIdx.x & 255 distinct): the codes as
// TileLang 0.1.15 lays out their TMA copies (the 512 nope columns as two boxes [64][256], rope
// [64][64], row-major), the bf16 tiles in the 128-byte swizzle its wgmma operands get (64-column
// panels of [64][64], 16-byte chunk c of row j at chunk c ^ (j & 7)); tools/gpu/tilelang_check.py's
// --layout-check compares these with the addresses TileLang computes for the "chunk" variant
__device__ __forceinline__ void tl_fnuz_tile(const unsigned char* c8, const unsigned char* c8pe,
		void* kv, void* kpe) {
	const int t = threadIdx.x & 255;
	unsigned short* o = reinterpret_cast<unsigned short*>(kv);
	unsigned short* ope = reinterpret_cast<unsigned short*>(kpe);
	#pragma unroll
	for (int i = 0; i < 16; ++i) {
		const int j = i * 4 + (t >> 6), c = t & 63;
		uint2 w = *reinterpret_cast<const uint2*>(c8 + (c >> 5) * 16384 + j * 256 + (c & 31) * 8);
		*reinterpret_cast<uint4*>(o + (c >> 3) * 4096 + j * 64 + ((c & 7) ^ (j & 7)) * 8) = tl_fnuz8(w);
	}
	#pragma unroll
	for (int i = 0; i < 2; ++i) {
		const int e = i * 256 + t, j = e >> 3, c = e & 7;
		uint2 w = *reinterpret_cast<const uint2*>(c8pe + j * 64 + c * 8);
		*reinterpret_cast<uint4*>(ope + j * 64 + (c ^ (j & 7)) * 8) = tl_fnuz8(w);
	}
}
// the row gather of a 64-key tile (pages of 1 and 16 keys): key j's 576 codes at kv + rows[j] * 576
// (rows[j] < 0 or >= kv_rows: a key never read, zero by select), decoded into the same bf16 tiles
// as tl_fnuz_tile; all 18 loads of a thread are issued before the first decode
__device__ __forceinline__ void tl_fnuz_gather(const unsigned char* kv, const int64_t* rows,
		int64_t kv_rows, void* out, void* outpe) {
	const int t = threadIdx.x & 255;
	unsigned short* o = reinterpret_cast<unsigned short*>(out);
	unsigned short* ope = reinterpret_cast<unsigned short*>(outpe);
	uint2 w[18];
	#pragma unroll
	for (int i = 0; i < 18; ++i) {
		const int j = i < 16 ? i * 4 + (t >> 6) : (i - 16) * 32 + (t >> 3);
		const int col = i < 16 ? (t & 63) * 8 : 512 + (t & 7) * 8;
		const int64_t r = rows[j];
		w[i] = make_uint2(0u, 0u);
		if (r >= 0 && r < kv_rows)
			w[i] = *reinterpret_cast<const uint2*>(kv + r * 576 + col);
	}
	#pragma unroll
	for (int i = 0; i < 16; ++i) {
		const int j = i * 4 + (t >> 6), c = t & 63;
		*reinterpret_cast<uint4*>(o + (c >> 3) * 4096 + j * 64 + ((c & 7) ^ (j & 7)) * 8) = tl_fnuz8(w[i]);
	}
	#pragma unroll
	for (int i = 0; i < 2; ++i) {
		const int j = i * 32 + (t >> 3), c = t & 7;
		*reinterpret_cast<uint4*>(ope + j * 64 + (c ^ (j & 7)) * 8) = tl_fnuz8(w[16 + i]);
	}
}
// the pipelined fp8 gather: keys [n0, n0 + 64) (all visible), the same 18 8-byte loads per thread
// as tl_fnuz_gather, rows computed from block_table (bt: the sequence's row), results left in w
// (registers once inlined) for tl_fnuz_store; nothing here waits for a load
template <int PS>
__device__ __forceinline__ void tl_fnuz_load(unsigned* w, const unsigned char* kv, const int* bt,
		int n0, int64_t kv_rows) {
	const int t = threadIdx.x & 255;
	#pragma unroll
	for (int i = 0; i < 18; ++i) {
		const int j = i < 16 ? i * 4 + (t >> 6) : (i - 16) * 32 + (t >> 3);
		const int col = i < 16 ? (t & 63) * 8 : 512 + (t & 7) * 8;
		const int n = n0 + j;
		const int64_t r = (int64_t)bt[n / PS] * PS + n % PS;
		uint2 v = make_uint2(0u, 0u);
		if (r >= 0 && r < kv_rows)
			v = *reinterpret_cast<const uint2*>(kv + r * 576 + col);
		w[2 * i] = v.x;
		w[2 * i + 1] = v.y;
	}
}
__device__ __forceinline__ void tl_fnuz_store(const unsigned* w, void* out, void* outpe) {
	const int t = threadIdx.x & 255;
	unsigned short* o = reinterpret_cast<unsigned short*>(out);
	unsigned short* ope = reinterpret_cast<unsigned short*>(outpe);
	#pragma unroll
	for (int i = 0; i < 16; ++i) {
		const int j = i * 4 + (t >> 6), c = t & 63;
		*reinterpret_cast<uint4*>(o + (c >> 3) * 4096 + j * 64 + ((c & 7) ^ (j & 7)) * 8) =
			tl_fnuz8(make_uint2(w[2 * i], w[2 * i + 1]));
	}
	#pragma unroll
	for (int i = 0; i < 2; ++i) {
		const int j = i * 32 + (t >> 3), c = t & 7;
		*reinterpret_cast<uint4*>(ope + j * 64 + (c ^ (j & 7)) * 8) =
			tl_fnuz8(make_uint2(w[32 + 2 * i], w[33 + 2 * i]));
	}
}
// the bf16 gather: P, the block_table entries of the 18 rows a thread loads (tl_rows_load, issued
// one tile ahead); rows at kv + (P[i] * PS + n % PS) * 576, 16 bytes each, into the same swizzled
// tiles; all 18 loads issued before the first store
template <int PS>
__device__ __forceinline__ void tl_rows_load(int* p, const int* bt, int n0) {
	const int t = threadIdx.x & 255;
	#pragma unroll
	for (int i = 0; i < 18; ++i) {
		const int j = i < 16 ? i * 4 + (t >> 6) : (i - 16) * 32 + (t >> 3);
		p[i] = bt[(n0 + j) / PS];
	}
}
template <int PS>
__device__ __forceinline__ void tl_bf16_gather(const int* p, int n0, const void* kv, int64_t kv_rows,
		void* out, void* outpe) {
	const int t = threadIdx.x & 255;
	const unsigned short* src = reinterpret_cast<const unsigned short*>(kv);
	unsigned short* o = reinterpret_cast<unsigned short*>(out);
	unsigned short* ope = reinterpret_cast<unsigned short*>(outpe);
	uint4 v[18];
	#pragma unroll
	for (int i = 0; i < 18; ++i) {
		const int j = i < 16 ? i * 4 + (t >> 6) : (i - 16) * 32 + (t >> 3);
		const int col = i < 16 ? (t & 63) * 8 : 512 + (t & 7) * 8;
		const int64_t r = (int64_t)p[i] * PS + (n0 + j) % PS;
		v[i] = make_uint4(0u, 0u, 0u, 0u);
		if (r >= 0 && r < kv_rows)
			v[i] = *reinterpret_cast<const uint4*>(src + r * 576 + col);
	}
	#pragma unroll
	for (int i = 0; i < 16; ++i) {
		const int j = i * 4 + (t >> 6), c = t & 63;
		*reinterpret_cast<uint4*>(o + (c >> 3) * 4096 + j * 64 + ((c & 7) ^ (j & 7)) * 8) = v[i];
	}
	#pragma unroll
	for (int i = 0; i < 2; ++i) {
		const int j = i * 32 + (t >> 3), c = t & 7;
		*reinterpret_cast<uint4*>(ope + j * 64 + (c ^ (j & 7)) * 8) = v[16 + i];
	}
}
"""


def _build(s_q, h_q, page_size, fp8, block_n, block_h, num_split, num_stages, threads,
		softmax_scale, kv_scale, fp8_bulk=True, fp8_decode="scalar", gather_prefetch=False):
	tilelang, T = _import()
	# batch, cache rows and block_table columns are symbolic: one compile serves every batch
	batch = T.dynamic("batch")
	kv_rows = T.dynamic("kv_rows")
	max_pages = T.dynamic("max_pages")
	rows = s_q * h_q
	n_htiles = (rows + block_h - 1) // block_h
	pad = rows % block_h != 0  # the last head tile has rows past s_q*h_q: masked on load and store
	dtype = T.bfloat16
	acc = T.float32
	kv_dtype = T.uint8 if fp8 else T.bfloat16
	unit = FP8_UNIT * kv_scale if fp8 else 1.0
	sc2 = float(softmax_scale * unit * LOG2E)  # scores in log2 units
	out_mul = float(unit)
	bulk = (not fp8) and page_size % block_n == 0
	bulk8 = fp8 and page_size % block_n == 0 and fp8_bulk
	gather = not (bulk or bulk8)  # rows through block_table (pages of fewer keys than a tile)
	decode = fp8_decode if fp8 else "scalar"
	pf8 = gather and fp8 and decode != "scalar" and gather_prefetch  # the next tile in registers
	pfb = gather and not fp8 and gather_prefetch  # the next tile's block_table entries in registers
	use_src = decode != "scalar" or pfb  # _FNUZ_SRC imported
	# the bulk fp8 path's tail tiles through the gather's rows and tl_fnuz_gather too
	tail8 = bulk8 and decode != "scalar"
	assert decode in ("scalar", "chunk", "tile"), decode
	if decode == "tile" or tail8 or (gather and (decode != "scalar" or pfb)):
		assert block_n == 64, "tl_fnuz_tile and tl_fnuz_gather are written for 64-key tiles"
	ninf = -T.infinity(acc)

	def key_loop(n):
		"""The loop over the full key tiles: software-pipelined as in the example; plain for the
		gather, whose row indices (written to shared memory, then read in the same iteration) TileLang
		0.1.15's pipeline planner puts in a later stage than their readers (InjectSoftwarePipeline
		fails)."""
		return T.serial(n) if gather else T.Pipelined(n, num_stages=num_stages)

	def real_row(r):
		"""A padded row (past s_q*h_q) sees the keys of the last real row: it never widens them."""
		return T.min(r, rows - 1) if pad else r

	def kv_row(block_table, b, n):
		"""Cache row of key n of sequence b (int64: the cache can pass 2^31 elements)."""
		return T.Cast("int64", block_table[b, n // page_size]) * page_size + n % page_size

	def kv_val(KV, block_table, b, n, d):
		x = KV[kv_row(block_table, b, n), d]
		if fp8:
			return _fnuz_decode(T, x)
		return x

	def dec(x):
		return _fnuz_decode(T, x) if fp8 else x

	def gather8(KV, R, KV_shared, K_pe_shared):
		"""fp8 rows through R (shared int64 cache rows, < 0: not read, zero) decoded into the bf16
		tiles by one tl_fnuz_gather call per thread."""
		T.evaluate(T.call_extern("handle", "tl_fnuz_gather", T.access_ptr(KV, "r"),
			T.access_ptr(R, "r"), T.Cast("int64", kv_rows), T.access_ptr(KV_shared, "w"),
			T.access_ptr(K_pe_shared, "w")))

	def rows16(P, block_table, b, n0):
		"""The block_table entries of the 18 rows each thread loads of keys [n0, n0 + block_n)."""
		T.evaluate(T.call_extern("handle", "tl_rows_load<%d>" % page_size, T.access_ptr(P, "w"),
			T.access_ptr(block_table[b, 0], "r"), n0))

	def load8(W, KV, block_table, b, n0):
		"""The codes of keys [n0, n0 + block_n) of sequence b (all visible) into the registers W of
		each thread, rows through block_table (tl_fnuz_load: every load issued, none waited for)."""
		T.evaluate(T.call_extern("handle", "tl_fnuz_load<%d>" % page_size, T.access_ptr(W, "w"),
			T.access_ptr(KV, "r"), T.access_ptr(block_table[b, 0], "r"), n0, T.Cast("int64", kv_rows)))

	@T.macro
	def load_pred(KV, block_table, b, n0, limit, KV_shared, K_pe_shared, R_t):
		"""Keys [n0, n0 + block_n) of sequence b, those at or past limit zero (never read)."""
		if not gather and not tail8:
			for j, d in T.Parallel(block_n, DV):
				KV_shared[j, d] = T.if_then_else(n0 + j < limit,
					kv_val(KV, block_table, b, n0 + j, d), T.Cast(dtype, 0))
			for j, d in T.Parallel(block_n, DPE):
				K_pe_shared[j, d] = T.if_then_else(n0 + j < limit,
					kv_val(KV, block_table, b, n0 + j, DV + d), T.Cast(dtype, 0))
		else:
			# the gather: each key's cache row once (block_table read once per key), -1 past limit
			for j in T.Parallel(block_n):
				R_t[j] = T.if_then_else(n0 + j < limit, kv_row(block_table, b, n0 + j),
					T.int64(-1))
			if decode != "scalar":
				gather8(KV, R_t, KV_shared, K_pe_shared)
			else:
				for j, d in T.Parallel(block_n, DV):
					KV_shared[j, d] = T.if_then_else(R_t[j] >= 0, dec(KV[R_t[j], d]), T.Cast(dtype, 0))
				for j, d in T.Parallel(block_n, DPE):
					K_pe_shared[j, d] = T.if_then_else(R_t[j] >= 0, dec(KV[R_t[j], DV + d]),
						T.Cast(dtype, 0))

	@T.macro
	def load_full(KV, block_table, b, n0, KV_shared, K_pe_shared, KV8_shared, KV8pe_shared, R_s):
		"""Keys [n0, n0 + block_n) of sequence b, all visible."""
		if bulk8:
			row8 = kv_row(block_table, b, n0)
			T.copy(KV[row8:row8 + block_n, 0:DV], KV8_shared)
			T.copy(KV[row8:row8 + block_n, DV:D], KV8pe_shared)
			if decode == "tile":
				# one call per thread for the whole tile (no loop for TileLang's sync planner to
				# put a barrier in)
				T.call_extern("handle", "tl_fnuz_tile", T.access_ptr(KV8_shared, "r"),
					T.access_ptr(KV8pe_shared, "r"), T.access_ptr(KV_shared, "w"),
					T.access_ptr(K_pe_shared, "w"))
			elif decode == "chunk":
				# 8 codes per call, addresses by TileLang (a barrier per iteration of the loop)
				for j, c in T.Parallel(block_n, DV // 8):
					T.call_extern("handle", "tl_fnuz8_bf16", T.access_ptr(KV8_shared[j, c * 8], "r", 8),
						T.access_ptr(KV_shared[j, c * 8], "w", 8))
				for j, c in T.Parallel(block_n, DPE // 8):
					T.call_extern("handle", "tl_fnuz8_bf16",
						T.access_ptr(KV8pe_shared[j, c * 8], "r", 8),
						T.access_ptr(K_pe_shared[j, c * 8], "w", 8))
			else:
				for j, d in T.Parallel(block_n, DV):
					KV_shared[j, d] = _fnuz_decode(T, KV8_shared[j, d])
				for j, d in T.Parallel(block_n, DPE):
					K_pe_shared[j, d] = _fnuz_decode(T, KV8pe_shared[j, d])
		elif bulk:
			row0 = kv_row(block_table, b, n0)
			T.copy(KV[row0:row0 + block_n, 0:DV], KV_shared)
			T.copy(KV[row0:row0 + block_n, DV:D], K_pe_shared)
		else:
			# the gather (pages of fewer keys than a tile): each key's cache row once
			for j in T.Parallel(block_n):
				R_s[j] = kv_row(block_table, b, n0 + j)
			if decode != "scalar":
				gather8(KV, R_s, KV_shared, K_pe_shared)
			else:
				for j, d in T.Parallel(block_n, DV):
					KV_shared[j, d] = dec(KV[R_s[j], d])
				for j, d in T.Parallel(block_n, DPE):
					K_pe_shared[j, d] = dec(KV[R_s[j], DV + d])

	@T.macro
	def scores(Q_shared, Q_pe_shared, KV_shared, K_pe_shared, acc_s):
		T.clear(acc_s)
		T.gemm(Q_shared, KV_shared, acc_s, transpose_B=True, policy=T.GemmWarpPolicy.FullCol)
		T.gemm(Q_pe_shared, K_pe_shared, acc_s, transpose_B=True,
			policy=T.GemmWarpPolicy.FullCol)

	@T.macro
	def update(acc_s, S_shared, KV_shared, acc_o, m, m_prev, m_s, alpha, ssum, lsum):
		T.copy(m, m_prev)
		T.fill(m, ninf)
		T.reduce_max(acc_s, m, dim=1, clear=False)
		for i in T.Parallel(block_h):
			m[i] = T.max(m[i], m_prev[i])
		for i in T.Parallel(block_h):
			# a row with no visible key yet keeps m = -inf: use 0 there (no -inf - -inf)
			m_s[i] = T.if_then_else(m[i] == ninf, T.float32(0), m[i] * sc2)
			alpha[i] = T.exp2(m_prev[i] * sc2 - m_s[i])
		for i, j in T.Parallel(block_h, block_n):
			acc_s[i, j] = T.exp2(acc_s[i, j] * sc2 - m_s[i])
		T.reduce_sum(acc_s, ssum, dim=1)
		T.copy(acc_s, S_shared)
		for i in T.Parallel(block_h):
			lsum[i] = lsum[i] * alpha[i] + ssum[i]
		for i, j in T.Parallel(block_h, DV):
			acc_o[i, j] *= alpha[i]
		T.gemm(S_shared, KV_shared, acc_o, policy=T.GemmWarpPolicy.FullCol)

	@T.macro
	def attend(Q, KV, block_table, seqlens, bx, by, bz, Q_shared, Q_pe_shared, KV_shared,
			K_pe_shared, KV_t, K_pe_t, KV8_shared, KV8pe_shared, R_s, R_t, S_shared, acc_s, acc_o, m, m_prev, m_s, alpha, ssum, lsum):
		r0 = by * block_h
		# not TMA: TileLang 0.1.15 puts the wait for a TMA load of Q inside the first iteration
		# of the pipelined loop, so a CTA whose loop is empty (tail only) would read Q early
		if pad:
			for i, d in T.Parallel(block_h, DV):
				Q_shared[i, d] = T.if_then_else(r0 + i < rows, Q[bx, r0 + i, d], T.Cast(dtype, 0))
			for i, d in T.Parallel(block_h, DPE):
				Q_pe_shared[i, d] = T.if_then_else(r0 + i < rows, Q[bx, r0 + i, DV + d],
					T.Cast(dtype, 0))
		else:
			T.copy(Q[bx, r0:r0 + block_h, 0:DV], Q_shared, disable_tma=True)
			T.copy(Q[bx, r0:r0 + block_h, DV:D], Q_pe_shared, disable_tma=True)
			if Q_FENCE_ONCE:
				T.fence_proxy_async()
				T.sync_threads()
		T.fill(acc_o, 0)
		T.fill(lsum, 0)
		T.fill(m, ninf)
		T.fill(m_s, 0)
		seqlen = seqlens[bx]
		# visible keys of the first and last row of this tile (causal: row r is query r // h_q)
		l_min = T.max(seqlen - s_q + 1 + r0 // h_q, 0)
		# (padded rows count as the last real row: they must not widen the keys read)
		l_max = T.max(seqlen - s_q + 1 + real_row(r0 + block_h - 1) // h_q, 0)
		n_full = l_min // block_n
		n_all = T.ceildiv(l_max, block_n)
		# key tiles visible to every row of the tile, split evenly over the splits; pipelined
		per = n_full // num_split
		rem = n_full % num_split
		cnt = per + T.if_then_else(bz < rem, 1, 0)
		start = per * bz + T.min(bz, rem)
		if pfb:
			# the bf16 gather, the next tile's block_table entries loaded into registers (P)
			# before this tile's GEMMs: one memory latency per tile, not two
			P = T.alloc_local([18], T.int32)
			if cnt > 0:
				rows16(P, block_table, bx, start * block_n)
			for k in T.serial(cnt):
				T.evaluate(T.call_extern("handle", "tl_bf16_gather<%d>" % page_size,
					T.access_ptr(P, "r"), (start + k) * block_n, T.access_ptr(KV, "r"),
					T.Cast("int64", kv_rows), T.access_ptr(KV_shared, "w"),
					T.access_ptr(K_pe_shared, "w")))
				if k + 1 < cnt:
					rows16(P, block_table, bx, (start + k + 1) * block_n)
				scores(Q_shared, Q_pe_shared, KV_shared, K_pe_shared, acc_s)
				update(acc_s, S_shared, KV_shared, acc_o, m, m_prev, m_s, alpha, ssum, lsum)
		elif pf8:
			# the fp8 gather, software-pipelined by hand: tile k + 1's codes are loaded into
			# registers (W) before tile k's GEMMs, decoded into shared memory after them
			W = T.alloc_local([36], T.uint32)
			if cnt > 0:
				load8(W, KV, block_table, bx, start * block_n)
			for k in T.serial(cnt):
				T.evaluate(T.call_extern("handle", "tl_fnuz_store", T.access_ptr(W, "r"),
					T.access_ptr(KV_shared, "w"), T.access_ptr(K_pe_shared, "w")))
				if k + 1 < cnt:
					load8(W, KV, block_table, bx, (start + k + 1) * block_n)
				scores(Q_shared, Q_pe_shared, KV_shared, K_pe_shared, acc_s)
				update(acc_s, S_shared, KV_shared, acc_o, m, m_prev, m_s, alpha, ssum, lsum)
		else:
			for k in key_loop(cnt):
				load_full(KV, block_table, bx, (start + k) * block_n, KV_shared, K_pe_shared,
					KV8_shared, KV8pe_shared, R_s)
				scores(Q_shared, Q_pe_shared, KV_shared, K_pe_shared, acc_s)
				update(acc_s, S_shared, KV_shared, acc_o, m, m_prev, m_s, alpha, ssum, lsum)
		# the tiles holding a row's visible length (at most 1 + (s_q - 1) / block_n): last split,
		# own buffers, predicated loads, per-row causal mask
		if bz == num_split - 1:
			for t in T.serial(n_all - n_full):
				n0 = (n_full + t) * block_n
				load_pred(KV, block_table, bx, n0, l_max, KV_t, K_pe_t, R_t)
				scores(Q_shared, Q_pe_shared, KV_t, K_pe_t, acc_s)
				for i, j in T.Parallel(block_h, block_n):
					acc_s[i, j] = T.if_then_else(
						n0 + j >= seqlen - s_q + 1 + real_row(r0 + i) // h_q,
						ninf, acc_s[i, j])
				update(acc_s, S_shared, KV_t, acc_o, m, m_prev, m_s, alpha, ssum, lsum)

	pass_configs = {tilelang.PassConfigKey.TL_ENABLE_FAST_MATH: True}
	if not bulk:
		# row gathers through block_table: TileLang 0.1.15 turns them into cp.async and then
		# fails in codegen (a cp.async wait on a non-constant group count with the dynamic trip
		# count); plain loads instead
		pass_configs[tilelang.PassConfigKey.TL_ENABLE_ASYNC_COPY] = False
		pass_configs[tilelang.PassConfigKey.TIR_USE_ASYNC_COPY] = False

	if num_split == 1:
		@T.prim_func
		def main(
			Q: T.Tensor([batch, rows, D], dtype),
			KV: T.Tensor([kv_rows, D], kv_dtype),
			block_table: T.Tensor([batch, max_pages], T.int32),
			seqlens: T.Tensor([batch], T.int32),
			Out: T.Tensor([batch, rows, DV], dtype),
			Lse: T.Tensor([batch, h_q * s_q], acc),
		):
			with T.Kernel(batch, n_htiles, 1, threads=threads) as (bx, by, bz):
				if use_src:
					T.import_source(_FNUZ_SRC)
				Q_shared = T.alloc_shared([block_h, DV], dtype)
				Q_pe_shared = T.alloc_shared([block_h, DPE], dtype)
				KV_shared = T.alloc_shared([block_n, DV], dtype)
				K_pe_shared = T.alloc_shared([block_n, DPE], dtype)
				KV_t = T.alloc_shared([block_n, DV], dtype)
				K_pe_t = T.alloc_shared([block_n, DPE], dtype)
				KV8_shared = T.alloc_shared([block_n, DV] if bulk8 else [16, 16], T.uint8)
				KV8pe_shared = T.alloc_shared([block_n, DPE] if bulk8 else [16, 16], T.uint8)
				R_s = T.alloc_shared([block_n] if gather else [1], T.int64)
				R_t = T.alloc_shared([block_n] if gather or tail8 else [1], T.int64)
				S_shared = T.alloc_shared([block_h, block_n], dtype)
				O_shared = T.alloc_shared([block_h, DV], dtype)
				acc_s = T.alloc_fragment([block_h, block_n], acc)
				acc_o = T.alloc_fragment([block_h, DV], acc)
				m = T.alloc_fragment([block_h], acc)
				m_prev = T.alloc_fragment([block_h], acc)
				m_s = T.alloc_fragment([block_h], acc)
				alpha = T.alloc_fragment([block_h], acc)
				ssum = T.alloc_fragment([block_h], acc)
				lsum = T.alloc_fragment([block_h], acc)
				T.use_swizzle(10)
				attend(Q, KV, block_table, seqlens, bx, by, bz, Q_shared, Q_pe_shared, KV_shared,
					K_pe_shared, KV_t, K_pe_t, KV8_shared, KV8pe_shared, R_s, R_t, S_shared, acc_s, acc_o,
					m, m_prev, m_s, alpha, ssum, lsum)
				for i, j in T.Parallel(block_h, DV):
					acc_o[i, j] = T.if_then_else(lsum[i] > 0, acc_o[i, j] * out_mul / lsum[i], 0)
				T.copy(acc_o, O_shared)
				if pad:
					for i, j in T.Parallel(block_h, DV):
						if by * block_h + i < rows:
							Out[bx, by * block_h + i, j] = O_shared[i, j]
					for i in T.Parallel(block_h):
						if by * block_h + i < rows:
							Lse[bx, ((by * block_h + i) % h_q) * s_q + (by * block_h + i) // h_q] = (
								T.if_then_else(lsum[i] > 0, (T.log2(lsum[i]) + m_s[i]) * LN2,
									T.infinity(acc)))
				else:
					T.copy(O_shared, Out[bx, by * block_h:(by + 1) * block_h, :])
					for i in T.Parallel(block_h):
						Lse[bx, ((by * block_h + i) % h_q) * s_q + (by * block_h + i) // h_q] = (
							T.if_then_else(lsum[i] > 0, (T.log2(lsum[i]) + m_s[i]) * LN2,
								T.infinity(acc)))
	else:
		@T.prim_func
		def main(
			Q: T.Tensor([batch, rows, D], dtype),
			KV: T.Tensor([kv_rows, D], kv_dtype),
			block_table: T.Tensor([batch, max_pages], T.int32),
			seqlens: T.Tensor([batch], T.int32),
			Out: T.Tensor([batch, rows, DV], dtype),
			Lse: T.Tensor([batch, h_q * s_q], acc),
			O_part: T.Tensor([batch, rows, num_split, DV], acc),
			L_part: T.Tensor([batch, rows, num_split], acc),
		):
			with T.Kernel(batch, n_htiles, num_split, threads=threads) as (bx, by, bz):
				if use_src:
					T.import_source(_FNUZ_SRC)
				Q_shared = T.alloc_shared([block_h, DV], dtype)
				Q_pe_shared = T.alloc_shared([block_h, DPE], dtype)
				KV_shared = T.alloc_shared([block_n, DV], dtype)
				K_pe_shared = T.alloc_shared([block_n, DPE], dtype)
				KV_t = T.alloc_shared([block_n, DV], dtype)
				K_pe_t = T.alloc_shared([block_n, DPE], dtype)
				KV8_shared = T.alloc_shared([block_n, DV] if bulk8 else [16, 16], T.uint8)
				KV8pe_shared = T.alloc_shared([block_n, DPE] if bulk8 else [16, 16], T.uint8)
				R_s = T.alloc_shared([block_n] if gather else [1], T.int64)
				R_t = T.alloc_shared([block_n] if gather or tail8 else [1], T.int64)
				S_shared = T.alloc_shared([block_h, block_n], dtype)
				acc_s = T.alloc_fragment([block_h, block_n], acc)
				acc_o = T.alloc_fragment([block_h, DV], acc)
				m = T.alloc_fragment([block_h], acc)
				m_prev = T.alloc_fragment([block_h], acc)
				m_s = T.alloc_fragment([block_h], acc)
				alpha = T.alloc_fragment([block_h], acc)
				ssum = T.alloc_fragment([block_h], acc)
				lsum = T.alloc_fragment([block_h], acc)
				T.use_swizzle(10)
				attend(Q, KV, block_table, seqlens, bx, by, bz, Q_shared, Q_pe_shared, KV_shared,
					K_pe_shared, KV_t, K_pe_t, KV8_shared, KV8pe_shared, R_s, R_t, S_shared, acc_s, acc_o,
					m, m_prev, m_s, alpha, ssum, lsum)
				for i, j in T.Parallel(block_h, DV):
					acc_o[i, j] = T.if_then_else(lsum[i] > 0, acc_o[i, j] / lsum[i], 0)
				if pad:
					for i, j in T.Parallel(block_h, DV):
						if by * block_h + i < rows:
							O_part[bx, by * block_h + i, bz, j] = acc_o[i, j]
					for i in T.Parallel(block_h):
						if by * block_h + i < rows:
							L_part[bx, by * block_h + i, bz] = T.if_then_else(
								lsum[i] > 0, T.log2(lsum[i]) + m_s[i], ninf)
				else:
					T.copy(acc_o, O_part[bx, by * block_h:(by + 1) * block_h, bz, :])
					for i in T.Parallel(block_h):
						L_part[bx, by * block_h + i, bz] = T.if_then_else(
							lsum[i] > 0, T.log2(lsum[i]) + m_s[i], ninf)

			# merge the splits: one CTA per (row, batch)
			with T.Kernel(rows, batch, threads=128) as (ry, bb):
				o = T.alloc_fragment([DV], acc)
				lmax = T.alloc_var(acc)
				lref = T.alloc_var(acc)
				lsum_ = T.alloc_var(acc)
				w = T.alloc_var(acc)
				lmax = ninf
				for k in T.serial(num_split):
					lmax = T.max(lmax, L_part[bb, ry, k])
				lref = T.if_then_else(lmax == ninf, T.float32(0), lmax)
				lsum_ = 0
				for k in T.serial(num_split):
					lsum_ += T.exp2(L_part[bb, ry, k] - lref)
				T.clear(o)
				for k in T.serial(num_split):
					w = T.if_then_else(lsum_ > 0, T.exp2(L_part[bb, ry, k] - lref) / lsum_,
						T.float32(0))
					for i in T.Parallel(DV):
						o[i] += O_part[bb, ry, k, i] * w
				for i in T.Parallel(DV):
					Out[bb, ry, i] = o[i] * out_mul
				Lse[bb, (ry % h_q) * s_q + ry // h_q] = T.if_then_else(
					lsum_ > 0, (T.log2(lsum_) + lref) * LN2, T.infinity(acc))

	return tilelang.compile(main, out_idx=None, target=_TARGET, pass_configs=pass_configs)


def _key(a, config):
	return (a.s_q, a.h_q, a.page_size, a.kv_dtype == "fp8_e4m3_fnuz", int(config.get("block_n", 64)), _block_h(a, config),
		max(1, int(config.get("num_splits", 1))), int(config.get("num_stages", 2)) or 2,
		32 * (int(config.get("num_warps", 8)) or 8), float(a.softmax_scale),
		float(a.kv_scale) if a.kv_dtype == "fp8_e4m3_fnuz" else 1.0,
		bool(FP8_BULK) or a.kv_dtype != "fp8_e4m3_fnuz",
		str(FP8_DECODE) if a.kv_dtype == "fp8_e4m3_fnuz" else "scalar",
		bool(GATHER_PREFETCH) and _gathers(a, config) and (a.kv_dtype == "bf16" or FP8_DECODE != "scalar"))


def _gathers(a, config):
	"""Whether the full key tiles are read by the row gather (not one bulk copy per tile)."""
	if a.page_size % int(config.get("block_n", 64)) != 0:
		return True
	return a.kv_dtype == "fp8_e4m3_fnuz" and not FP8_BULK


def _kernel(a, config):
	k = _key(a, config)
	kern = _kernels.get(k)
	if kern is None:
		why = supports(a)
		if why:
			raise ValueError(why)
		kern = _build(*k)
		_kernels[k] = kern
	return k, kern


def prepare(args, config):
	_kernel(args, config)


def _args(a, key):
	ws = a.workspace
	vk = (key, a.batch, a.num_pages, a.max_pages, a.q.data_ptr(), a.kv_cache.data_ptr(), a.block_table.data_ptr(),
		a.seqlens.data_ptr(), a.out.data_ptr(), a.lse.data_ptr(),
		ws.data_ptr() if ws is not None else 0)
	v = _views.get(vk)
	if v is not None:
		return v
	import torch
	rows = _rows(a)
	ns = key[6]
	v = [a.q.view(a.batch, rows, D), a.kv_cache.view(a.num_pages * a.page_size, D),
		a.block_table, a.seqlens, a.out.view(a.batch, rows, DV),
		a.lse.view(a.batch, a.h_q * a.s_q)]
	if ns > 1:
		n_o = a.batch * rows * ns * DV
		n_l = a.batch * rows * ns
		f = ws[:(n_o + n_l) * 4].view(torch.float32)
		v.append(f[:n_o].view(a.batch, rows, ns, DV))
		v.append(f[n_o:].view(a.batch, rows, ns))
	v = tuple(v)
	if len(_views) >= 256:
		_views.clear()
	_views[vk] = v
	return v


def launch(args, config):
	key, kern = _kernel(args, config)
	kern(*_args(args, key))
