"""triton.dsa_decode - sparse MLA decode (DeepSeek Sparse Attention, ABI 3's sparse form) in Triton:
the port of FlashMLA's sparse decode that skills/dsa_decode_triton_port_sm90.md (sm_90) and
skills/dsa_decode_triton_port.md (gfx942) plan (issue 39, item 2).

Operator and layouts: kernels/mla_decode.h (the sparse form), kernels/mla_numeric.h (the byte layouts
of fp8_ds_mla and fp8_model1); Python contract: kernels/python/mla_decode.py.

Design (the field's recipe: GEAK's flash_mla_tilelang_to_triton skill, SGLang's Triton sparse
decode), one program = BLOCK_H heads of one query row (b, i) and one split of its entries:
  - Per step, BLOCK_N entries of indices[b, i]: an entry is valid when its index r >= 0 and its
    position t < topk_length[b] (when given); its row lies at page r // page_size, slot
    r % page_size. The rows are gathered one by one (int64 byte addresses: a large cache passes
    2^31 bytes) with masked loads: an invalid entry's lanes address row 0 and load nothing (the
    rows no valid entry names hold NaN; a masked lane reads 0, so no NaN reaches a product).
  - The cache row is decoded IN the kernel into one bf16 tile, never into a copy in memory:
    fp8_ds_mla: the 512 codes as a [BLOCK_N, 4, 128] tile times the token's 4 fp32 scales, then
    the 64 bf16 RoPE values (a second [BLOCK_N, 64] tile); fp8_model1: the 448 codes and the 64 RoPE
    values as one [BLOCK_N, 8, 64] tile (group 7 the RoPE values) times the token's 7 e8m0 scales
    (2^(code - 127)), so that d_qk = d_v = 512 is one tile; bf16: the row's 512 + 64 values. The fp8
    codes become fp32 exactly (Triton's own conversion where the hardware reads that kind: e4m3fn
    on NVIDIA, e4m3fnuz on AMD; else integer ops), times the scale, rounded to bf16 once (exact for
    the power-of-two scales the quantizers write), as FlashMLA's kernels dequantize.
  - scores = q . K^T on tensor cores (tl.dot, bf16 operands, fp32 accumulation; fp8_ds_mla and bf16
    add q_pe . Kpe^T), online softmax with exp2 (softmax_scale * log2(e) one multiplier), invalid
    entries -inf, acc += P . V with V the same decoded tile (its first d_v columns): loaded once,
    used by both dots.
  - The extra cache (fp8_model1's V4 form: extra_indices, extra_topk_length, its own page size) is a
    second loop over its entries into the same softmax state.
  - Split over the entries (flash decoding) when batch * s_q * head blocks would leave the GPU's
    SMs / CUs idle (the shape gate, GEAK's "split-K gated by shape"): num_splits programs per (row,
    head block) each take an equal share of the topk (and extra_topk) entries; partial outputs and
    lse (log2) go to the workspace and one combine kernel merges them by LSE. num_splits 1 writes
    out/lse directly (no combine, no workspace); num_splits 0 = the gate, from the shapes and
    num_cus only.
  - attn_sink: out *= 1 / (1 + exp(sink[h] - lse)) after the last merge (sink +-inf included); lse
    is written without it. A row with no valid entry: out 0 and lse +inf, sink or not.
  - lse [batch, h_q, s_q], natural log (the kernel keeps log2 and converts once).

Capture safety: prepare() builds the launch plan (grid, constexprs, views of the workspace) and
compiles every kernel once; launch() looks the plan up by the buffers' data_ptr() and enqueues one or
two Triton kernels: no allocation, no host sync, no Python branch on a GPU value (indices,
topk_length and the extra_* values are read on the device only and may change between replays).
"""
import os

import torch
import triton
import triton.language as tl

NAME = "triton.dsa_decode"
BACKEND = "cuda"
FORMS = ("sparse",)
KV_DTYPES = ("bf16", "fp8_ds_mla", "fp8_ds_mla_fnuz", "fp8_model1", "fp8_model1_fnuz")
SUMMARY = ("Triton sparse MLA decode (DSA): BLOCK_H heads gather BLOCK_N indexed rows, FP8 block-scaled "
           "dequantization fused in the kernel, online softmax (exp2), split over topk gated by shape "
           "+ LSE combine, extra cache, attn_sink")

D_V = 512
DS_MLA_TOKEN = 656    # fp8_ds_mla: 512 e4m3 codes, 4 fp32 scales, 64 bf16 RoPE values
MODEL1_ROW = 576      # fp8_model1: 448 codes + 64 bf16 RoPE values; the page's scales after its rows
MODEL1_SCALES = 8     # 7 e8m0 scales and one unused byte per token
MAX_SPLITS = 32
LOG2E = 1.4426950408889634
FMT_BF16, FMT_DS_MLA, FMT_MODEL1 = 0, 1, 2

# The fp8 decode: "auto" (Triton's conversion where the target reads that fp8 kind natively: e4m3fn
# on NVIDIA, e4m3fnuz on AMD; integer ops otherwise) or "int" (integer ops everywhere, the same
# values); VS_TRITON_DSA_FP8 overrides.
FP8_DECODE = os.environ.get("VS_TRITON_DSA_FP8", "auto")


def d_qk_of(kv_dtype):
    """d_qk of a cache format: 512 for fp8_model1(_fnuz), else 576 (kernels/mla_decode.h)."""
    return 512 if kv_dtype.startswith("fp8_model1") else 576


def fmt_of(kv_dtype):
    if kv_dtype == "bf16":
        return FMT_BF16
    return FMT_DS_MLA if kv_dtype.startswith("fp8_ds_mla") else FMT_MODEL1


def page_bytes_of(kv_dtype, page_size):
    """Bytes of one page (mla_kv_page_bytes()): fp8_model1 pads to a multiple of 576."""
    if kv_dtype == "bf16":
        return page_size * 1152
    if kv_dtype.startswith("fp8_ds_mla"):
        return page_size * DS_MLA_TOKEN
    b = page_size * (MODEL1_ROW + MODEL1_SCALES)
    return (b + 575) // 576 * 576


# ---- device code ---------------------------------------------------------------------------------

@triton.jit
def _fp8_to_f32(codes, FNUZ: tl.constexpr, NATIVE: tl.constexpr):
    """uint8 fp8 e4m3 codes -> float32, exact. FNUZ: e4m3fnuz (bias 8, 0x80 the only NaN), else
    e4m3fn (bias 7, S.1111.111 NaN). NATIVE: Triton's conversion; else integer ops."""
    if NATIVE:
        if FNUZ:
            v = codes.to(tl.float8e4b8, bitcast=True).to(tl.float32)
        else:
            v = codes.to(tl.float8e4nv, bitcast=True).to(tl.float32)
    else:
        c = codes.to(tl.int32)
        e = (c >> 3) & 15
        m = c & 7
        if FNUZ:
            norm = (((e + 119) << 23) | (m << 20)).to(tl.float32, bitcast=True)
            sub = m.to(tl.float32) * 0.0009765625
            nan = c == 0x80
        else:
            norm = (((e + 120) << 23) | (m << 20)).to(tl.float32, bitcast=True)
            sub = m.to(tl.float32) * 0.001953125
            nan = (c & 0x7F) == 0x7F
        mag = tl.where(e == 0, sub, norm)
        v = tl.where((c & 0x80) != 0, -mag, mag)
        v = tl.where(nan, float("nan"), v)
    return v


@triton.jit
def _e8m0_to_f32(codes):
    """e8m0 scale codes -> 2^(code - 127) as float32 (0 -> 2^-127; 0xFF -> NaN)."""
    c = codes.to(tl.int32)
    v = tl.where(c == 0, 0x00400000, c << 23).to(tl.float32, bitcast=True)
    return tl.where(c == 0xFF, float("nan"), v)


@triton.jit
def _load_rows(KV, r, valid, page_size, page_bytes, FMT: tl.constexpr, FNUZ: tl.constexpr,
               NATIVE: tl.constexpr, BLOCK_N: tl.constexpr):
    """The decoded rows of BLOCK_N entries: (kn [BLOCK_N, 512] bf16, kr [BLOCK_N, 64] bf16).
    r: the entries' row indices, 0 where not valid; valid lanes only are loaded (others read 0).
    bf16 / fp8_ds_mla: kn = the 512 latent values (V), kr = the 64 RoPE values. fp8_model1: kn =
    the whole 512-value row (448 latent, 64 RoPE; V is all of it), kr = 0 (unused)."""
    offs_r = tl.arange(0, 64)
    if FMT == 0:
        # bf16 rows of 576 values, contiguous: row r at r * 576.
        row = r.to(tl.int64) * 576
        offs_d = tl.arange(0, 512)
        kn = tl.load(KV + row[:, None] + offs_d[None, :], mask=valid[:, None], other=0.0)
        kr = tl.load(KV + row[:, None] + 512 + offs_r[None, :], mask=valid[:, None], other=0.0)
    elif FMT == 1:
        # fp8_ds_mla: token at slot * 656 of its page: 512 codes, 4 fp32 scales, 64 bf16 RoPE.
        row = (r // page_size).to(tl.int64) * page_bytes + (r % page_size).to(tl.int64) * 656
        g = tl.arange(0, 4)
        w = tl.arange(0, 128)
        codes = tl.load(KV + row[:, None, None] + (g * 128)[None, :, None] + w[None, None, :],
                        mask=valid[:, None, None], other=0)
        psc = (KV + row + 512).to(tl.pointer_type(tl.float32))
        sc = tl.load(psc[:, None] + g[None, :], mask=valid[:, None], other=0.0)
        val = _fp8_to_f32(codes, FNUZ, NATIVE) * sc[:, :, None]
        kn = tl.reshape(val, [BLOCK_N, 512]).to(tl.bfloat16)
        prope = (KV + row + 528).to(tl.pointer_type(tl.bfloat16))
        kr = tl.load(prope[:, None] + offs_r[None, :], mask=valid[:, None], other=0.0)
    else:
        # fp8_model1: token's 448 codes + 64 bf16 RoPE at slot * 576 of its page, its 7 e8m0
        # scales at page_size * 576 + slot * 8. One [BLOCK_N, 8, 64] tile: groups 0-6 the codes
        # times their scales, group 7 the RoPE values.
        page = (r // page_size).to(tl.int64) * page_bytes
        slot = (r % page_size).to(tl.int64)
        row = page + slot * 576
        g = tl.arange(0, 8)
        w = tl.arange(0, 64)
        d3 = (g * 64)[None, :, None] + w[None, None, :]
        is_code = d3 < 448
        codes = tl.load(KV + row[:, None, None] + d3, mask=valid[:, None, None] & is_code, other=0)
        prope = (KV + row + 448).to(tl.pointer_type(tl.bfloat16))
        rope = tl.load(prope[:, None, None] + tl.where(is_code, 0, d3 - 448),
                       mask=valid[:, None, None] & (d3 >= 448), other=0.0)
        psc = KV + page + page_size * 576 + slot * 8
        sc = _e8m0_to_f32(tl.load(psc[:, None] + g[None, :], mask=valid[:, None] & (g[None, :] < 7),
                                  other=127))
        val = tl.where(is_code, _fp8_to_f32(codes, FNUZ, NATIVE) * sc[:, :, None], rope.to(tl.float32))
        kn = tl.reshape(val, [BLOCK_N, 512]).to(tl.bfloat16)
        kr = tl.zeros([BLOCK_N, 64], dtype=tl.bfloat16)
    return kn, kr


@triton.jit
def _scan(q_nope, q_pe, m_i, l_i, acc, KV, IDX, start, end, lim, page_size, page_bytes,
          qk_scale, FMT: tl.constexpr, FNUZ: tl.constexpr, NATIVE: tl.constexpr,
          BLOCK_N: tl.constexpr):
    """The online softmax over entries [start, min(end, lim)) of one index row IDX."""
    stop = tl.minimum(end, lim)
    for n0 in range(start, stop, BLOCK_N):
        offs_n = n0 + tl.arange(0, BLOCK_N)
        inr = offs_n < stop
        r = tl.load(IDX + offs_n, mask=inr, other=-1)
        valid = inr & (r >= 0)
        r = tl.where(valid, r, 0)
        kn, kr = _load_rows(KV, r, valid, page_size, page_bytes, FMT, FNUZ, NATIVE, BLOCK_N)
        if FMT == 2:
            s = tl.dot(q_nope, tl.trans(kn))
        else:
            s = tl.dot(q_pe, tl.trans(kr))
            s = tl.dot(q_nope, tl.trans(kn), s)
        s = tl.where(valid[None, :], s * qk_scale, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(s, 1))
        m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
        alpha = tl.math.exp2(m_i - m_use)
        p = tl.math.exp2(s - m_use[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(tl.bfloat16), kn, acc)
        m_i = m_new
    return m_i, l_i, acc


@triton.jit(do_not_specialize=["heads", "seq_q", "topk", "page_size", "extra_topk", "extra_page_size",
                               "n_split"])
def _dsa_decode_kernel(Q, KV, IDX, TL, EKV, EIDX, ETL, SINK, OUT, LSE, PO, PL, qk_scale,
                       heads, seq_q, topk, page_size, page_bytes, extra_topk, extra_page_size,
                       extra_page_bytes, n_split,
                       BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr, FMT: tl.constexpr,
                       D_QK: tl.constexpr, FNUZ: tl.constexpr, NATIVE: tl.constexpr, HAS_TL: tl.constexpr,
                       HAS_EXTRA: tl.constexpr, HAS_ETL: tl.constexpr, HAS_SINK: tl.constexpr,
                       SPLIT: tl.constexpr):
    pid_h = tl.program_id(0)
    bi = tl.program_id(1)          # query row: b * s_q + i
    sp = tl.program_id(2)
    b = bi // seq_q
    i = bi % seq_q
    h = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
    hmask = h < heads

    offs_d = tl.arange(0, 512)
    offs_r = tl.arange(0, 64)
    q_off = (bi * heads + h).to(tl.int64) * D_QK
    q_nope = tl.load(Q + q_off[:, None] + offs_d[None, :], mask=hmask[:, None], other=0.0)
    if FMT == 2:
        q_pe = tl.zeros([BLOCK_H, 64], dtype=tl.bfloat16)
    else:
        q_pe = tl.load(Q + q_off[:, None] + 512 + offs_r[None, :], mask=hmask[:, None], other=0.0)

    m_i = tl.full([BLOCK_H], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_H], dtype=tl.float32)
    acc = tl.zeros([BLOCK_H, 512], dtype=tl.float32)

    # This split's share of the entries: an equal number of BLOCK_N tiles.
    per = tl.cdiv(tl.cdiv(topk, BLOCK_N), n_split) * BLOCK_N
    start = sp * per
    lim = topk
    if HAS_TL:
        lim = tl.load(TL + b)
    m_i, l_i, acc = _scan(q_nope, q_pe, m_i, l_i, acc, KV, IDX + bi.to(tl.int64) * topk,
                          start, tl.minimum(start + per, topk), lim, page_size, page_bytes, qk_scale,
                          FMT, FNUZ, NATIVE, BLOCK_N)
    if HAS_EXTRA:
        eper = tl.cdiv(tl.cdiv(extra_topk, BLOCK_N), n_split) * BLOCK_N
        estart = sp * eper
        elim = extra_topk
        if HAS_ETL:
            elim = tl.load(ETL + b)
        m_i, l_i, acc = _scan(q_nope, q_pe, m_i, l_i, acc, EKV, EIDX + bi.to(tl.int64) * extra_topk,
                              estart, tl.minimum(estart + eper, extra_topk), elim,
                              extra_page_size, extra_page_bytes, qk_scale, FMT, FNUZ, NATIVE, BLOCK_N)

    empty = l_i == 0.0
    l_div = tl.where(empty, 1.0, l_i)
    lse2 = tl.where(empty, float("-inf"), m_i + tl.math.log2(l_div))
    o = acc / l_div[:, None]
    if SPLIT:
        part = (bi * n_split + sp) * heads + h
        tl.store(PO + part.to(tl.int64)[:, None] * 512 + offs_d[None, :], o, mask=hmask[:, None])
        tl.store(PL + part, lse2, mask=hmask)
    else:
        if HAS_SINK:
            sink = tl.load(SINK + h, mask=hmask, other=0.0)
            f = 1.0 / (1.0 + tl.math.exp2(sink * 1.4426950408889634 - tl.where(empty, 0.0, lse2)))
            o = o * tl.where(empty, 0.0, f)[:, None]
        o_off = (bi * heads + h).to(tl.int64) * 512
        tl.store(OUT + o_off[:, None] + offs_d[None, :], o.to(tl.bfloat16), mask=hmask[:, None])
        lse = tl.where(empty, float("inf"), lse2 * 0.6931471805599453)
        tl.store(LSE + (b * heads + h) * seq_q + i, lse, mask=hmask)


@triton.jit(do_not_specialize=["heads", "seq_q", "n_split"])
def _dsa_combine_kernel(PO, PL, SINK, OUT, LSE, heads, seq_q, n_split, NSP2: tl.constexpr,
                        HAS_SINK: tl.constexpr):
    """One (query row, head): merges the n_split partials by their lse (log2), applies the sink."""
    h = tl.program_id(0)
    bi = tl.program_id(1)
    b = bi // seq_q
    i = bi % seq_q
    offs_s = tl.arange(0, NSP2)
    base = bi * n_split * heads + h
    pl = tl.load(PL + base + offs_s * heads, mask=offs_s < n_split, other=float("-inf"))
    mx = tl.max(pl, 0)
    mu = tl.where(mx == float("-inf"), 0.0, mx)
    wsum = tl.sum(tl.math.exp2(pl - mu), 0)
    empty = wsum == 0.0
    wdiv = tl.where(empty, 1.0, wsum)
    lse2 = mu + tl.math.log2(wdiv)
    offs_d = tl.arange(0, 512)
    acc = tl.zeros([512], dtype=tl.float32)
    for s in range(0, n_split):
        idx = base + s * heads
        w = tl.math.exp2(tl.load(PL + idx) - mu)
        acc += w * tl.load(PO + idx.to(tl.int64) * 512 + offs_d)
    o = acc / wdiv
    if HAS_SINK:
        sink = tl.load(SINK + h)
        f = 1.0 / (1.0 + tl.math.exp2(sink * 1.4426950408889634 - tl.where(empty, 0.0, lse2)))
        o = o * tl.where(empty, 0.0, f)
    tl.store(OUT + (bi * heads + h).to(tl.int64) * 512 + offs_d, o.to(tl.bfloat16))
    lse = tl.where(empty, float("inf"), lse2 * 0.6931471805599453)
    tl.store(LSE + (b * heads + h) * seq_q + i, lse)


# ---- host side -----------------------------------------------------------------------------------

def _cfg(bn, bh, sp, w, st):
    return {"name": "bn%d-bh%d-sp%d-w%d-st%d" % (bn, bh, sp, w, st), "block_n": bn, "block_h": bh,
            "num_splits": sp, "num_warps": w, "num_stages": st}


# sm_90 (H100/H200: wgmma for 64-row tiles, 227 KB of shared memory a block): bh64 for h_q 64/128
# (wgmma's M; two warpgroups split the 64 x 512 fp32 accumulator), bh32/bh16 for h_q 16/32 (fewer
# padded rows), 1-3 stages of the gathered tiles; split gated by shape (sp0) or off (sp1). The
# decoded tile passes through registers (BLOCK_N x 512 values): BLOCK_N 64 takes 8 warps, 4 warps
# take BLOCK_N 32 (with 4 warps and BLOCK_N 64, ptxas spilled 150-1000 bytes at 255 registers).
# Chosen from those limits and compiled for sm_90a here (tools/gpu/triton_cuda_resources.py
# --module dsa_decode; ~190 KB of shared memory at bh64-bn64-st2): none measured yet.
# gfx942 (MI300X: 64-wide waves, MFMA 16x16, 64 KiB of LDS a workgroup, 512 VGPRs+AGPRs a lane):
# BLOCK_H 16, BLOCK_N 16, 4 waves, 1-2 stages: the only ones of the gate's study (triton 3.5.1,
# 2026-12) that neither spill nor use scratch for bf16 and both fnuz formats; bn16-bh32 spilled 2
# VGPRs (fp8_ds_mla_fnuz), bn32-bh16 and bn32-bh32 (4 or 8 waves) and bn64-bh16 spilled 17-370
# VGPRs, the decoded tile passing through registers. Compiled by the gfx942 and gfx950 build gates
# (tools/gpu/triton_amd_gate.py --module dsa_decode), never run: no MI300X has been lent.
_CONFIGS = {
    "sm_90": [_cfg(64, 64, 0, 8, 2), _cfg(64, 64, 0, 8, 1), _cfg(64, 64, 1, 8, 2), _cfg(32, 64, 0, 8, 3),
              _cfg(64, 32, 0, 8, 2), _cfg(32, 32, 0, 4, 2), _cfg(64, 16, 0, 8, 2), _cfg(32, 16, 0, 4, 3)],
    "gfx942": [_cfg(16, 16, 0, 4, 1), _cfg(16, 16, 0, 4, 2), _cfg(16, 16, 1, 4, 1)],
}


def configs(arch):
    """Configs for sm_90 and gfx942; [] for any other arch (no config chosen or compiled there)."""
    return [dict(c) for c in _CONFIGS.get(arch, [])]


def supports(shape):
    topk = int(getattr(shape, "topk", 0) or 0)
    if topk <= 0:
        return "dense form: triton.dsa_decode runs the sparse form (triton.mla_decode the dense one)"
    if shape.kv_dtype not in KV_DTYPES:
        return "kv_dtype %s: triton.dsa_decode reads %s" % (shape.kv_dtype, ", ".join(KV_DTYPES))
    d_qk, d_v = getattr(shape, "d_qk", None), getattr(shape, "d_v", None)
    if d_qk is not None and (d_qk != d_qk_of(shape.kv_dtype) or d_v != D_V):
        return "d_qk %s, d_v %s: kv_dtype %s has %d and %d" % (d_qk, d_v, shape.kv_dtype,
                                                                d_qk_of(shape.kv_dtype), D_V)
    if shape.page_size < 1 or shape.h_q < 1 or shape.batch < 1 or shape.s_q < 1:
        return "empty shape"
    extra = int(getattr(shape, "extra_topk", 0) or 0)
    if extra < 0 or (extra > 0 and int(getattr(shape, "extra_page_size", 0) or 0) < 1):
        return "extra_topk %d, extra_page_size %s: out of contract" % (extra,
                                                                       getattr(shape, "extra_page_size", 0))
    return None


def _next_pow2(x):
    return 1 << max(0, int(x) - 1).bit_length()


def _block_h(config):
    return int(config.get("block_h", 0) or 64)


def num_splits(shape, config):
    """Splits of the entries per (query row, head block): the config's num_splits when > 0, else the
    shape gate, from the shapes and num_cus only (never from index values): no split when the
    programs fill the SMs / CUs; else the fewest splits whose programs fill the last wave to 85%
    (the best filling when none does), each split keeping at least two BLOCK_N tiles."""
    bn = int(config["block_n"])
    tiles = -(-int(shape.topk) // bn) + -(-int(getattr(shape, "extra_topk", 0) or 0) // bn)
    cap = max(1, min(MAX_SPLITS, tiles // 2))
    ns = int(config.get("num_splits", 0) or 0)
    if ns > 0:
        return max(1, min(ns, MAX_SPLITS, max(1, tiles)))
    base = shape.batch * shape.s_q * (-(-shape.h_q // _block_h(config)))
    slots = max(1, int(shape.num_cus or 1))
    if base >= slots:
        return 1

    def fill(s):
        progs = base * s
        return progs / (-(-progs // slots) * slots)
    ns = 1
    while ns < cap and fill(ns) < 0.85:
        ns += 1
    if fill(ns) < 0.85:
        ns = max(range(1, cap + 1), key=lambda s: (fill(s), -s))
    return ns


def _ws_layout(shape, config):
    ns = num_splits(shape, config)
    if ns == 1:
        return ns, 0, 0
    parts = shape.batch * shape.s_q * ns * shape.h_q
    return ns, parts * D_V * 4, parts * 4


def workspace_size(shape, config):
    ns, po, pl = _ws_layout(shape, config)
    return po + pl


def _native_fp8(kv_dtype, hip):
    """Whether Triton's own fp8 conversion decodes this format on this target (else integer ops)."""
    if FP8_DECODE != "auto" or kv_dtype == "bf16":
        return False
    return kv_dtype.endswith("_fnuz") if hip else not kv_dtype.endswith("_fnuz")


def _ptr(t):
    return t.data_ptr() if t is not None else 0


def _key(args, config):
    return (config["name"], _ptr(args.q), _ptr(args.kv_cache), _ptr(args.indices), _ptr(args.topk_length),
            _ptr(args.attn_sink), _ptr(getattr(args, "extra_kv_cache", None)),
            _ptr(getattr(args, "extra_indices", None)), _ptr(getattr(args, "extra_topk_length", None)),
            _ptr(args.out), _ptr(args.lse), _ptr(args.workspace), args.batch, args.s_q, args.h_q,
            args.num_pages, args.page_size, args.kv_dtype, int(args.topk),
            int(getattr(args, "extra_topk", 0) or 0), int(getattr(args, "extra_page_size", 0) or 0),
            float(args.softmax_scale), args.num_cus)


def build(args, config, hip=None):
    """The launch plan of one task, config and buffer set: (kernel grid, args, options, combine)."""
    why = supports(args)
    if why is not None:
        raise ValueError("%s: %s" % (NAME, why))
    extra = int(getattr(args, "extra_topk", 0) or 0) > 0
    names = ["q", "kv_cache", "indices", "out", "lse"] + (["extra_kv_cache", "extra_indices"] if extra else [])
    for name in names:
        if not getattr(args, name).is_contiguous():
            raise ValueError("%s: %s must be contiguous" % (NAME, name))
    if hip is None:
        hip = bool(getattr(torch.version, "hip", None))
    bh, bn = _block_h(config), int(config["block_n"])
    ns, po_bytes, pl_bytes = _ws_layout(args, config)
    if ns > 1:
        ws = args.workspace
        if ws is None or ws.numel() < po_bytes + pl_bytes:
            raise ValueError("%s: a workspace of %d bytes needed" % (NAME, po_bytes + pl_bytes))
        po = ws[:po_bytes].view(torch.float32)
        pl = ws[po_bytes:po_bytes + pl_bytes].view(torch.float32)
    else:
        po, pl = args.out, args.lse
    fmt = fmt_of(args.kv_dtype)
    kv = args.kv_cache if fmt == FMT_BF16 else args.kv_cache.view(torch.uint8)
    ekv = kv
    if extra:
        ekv = args.extra_kv_cache if fmt == FMT_BF16 else args.extra_kv_cache.view(torch.uint8)
    tlen = args.topk_length if args.topk_length is not None else args.indices
    etl = getattr(args, "extra_topk_length", None) if extra else None
    eidx = args.extra_indices if extra else args.indices
    sink = args.attn_sink if args.attn_sink is not None else args.lse
    qk_scale = float(args.softmax_scale) * LOG2E
    grid = (triton.cdiv(args.h_q, bh), args.batch * args.s_q, ns)
    kargs = (args.q, kv, args.indices, tlen, ekv, eidx, etl if etl is not None else tlen, sink,
             args.out, args.lse, po, pl, qk_scale, args.h_q, args.s_q, int(args.topk), int(args.page_size),
             page_bytes_of(args.kv_dtype, args.page_size), int(args.extra_topk) if extra else 0,
             int(args.extra_page_size) if extra else 1,
             page_bytes_of(args.kv_dtype, args.extra_page_size) if extra else 0, ns)
    kw = dict(BLOCK_H=bh, BLOCK_N=bn, FMT=fmt, D_QK=d_qk_of(args.kv_dtype), FNUZ=args.kv_dtype.endswith("_fnuz"),
              NATIVE=_native_fp8(args.kv_dtype, hip), HAS_TL=args.topk_length is not None,
              HAS_EXTRA=extra, HAS_ETL=etl is not None, HAS_SINK=args.attn_sink is not None,
              SPLIT=ns > 1, num_warps=int(config["num_warps"]), num_stages=int(config["num_stages"]))
    comb = None
    if ns > 1:
        comb = ((args.h_q, args.batch * args.s_q),
                (po, pl, sink, args.out, args.lse, args.h_q, args.s_q, ns),
                dict(NSP2=max(2, _next_pow2(ns)), HAS_SINK=args.attn_sink is not None, num_warps=4,
                     num_stages=1))
    return grid, kargs, kw, comb


def enqueue(plan):
    grid, kargs, kw, comb = plan
    _dsa_decode_kernel[grid](*kargs, **kw)
    if comb is not None:
        _dsa_combine_kernel[comb[0]](*comb[1], **comb[2])


_plans = {}


def prepare(args, config):
    """Builds the launch plan for these buffers and config and compiles its kernels (one run)."""
    plan = build(args, config)
    enqueue(plan)
    torch.cuda.current_stream().synchronize()
    _plans[_key(args, config)] = plan


def launch(args, config):
    plan = _plans.get(_key(args, config))
    if plan is None:
        plan = build(args, config)
        _plans[_key(args, config)] = plan
    enqueue(plan)
