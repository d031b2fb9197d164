"""triton.mla_decode - MLA decode (absorbed form) in Triton: the port of the field's card
(skills/mla_tilelang_to_triton.md, procedure steps 2-4).

Operator and layouts: kernels/mla_decode.h; Python contract: kernels/python/mla_decode.py.

Design (one program = BLOCK_H query rows of one sequence and one KV split):
  - The s_q * h_q query rows of a sequence are one row axis (row r = i * h_q + h, the order of q and
    out in memory), so s_q = 2 simply doubles the rows that share each KV tile; row r sees keys
    [0, seqlen - s_q + 1 + r // h_q) (causal).
  - Per KV tile of BLOCK_N rows: the 512 latent dims (also V) and the 64 rope dims are loaded once,
    through block_table (any page_size), with masked loads: rows at or past the sequence's length are
    never read (they hold NaN), nor block_table entries past it (they hold a sentinel).
    scores = q_nope . K^T + q_pe . Kpe^T in fp32, online softmax with exp2 (softmax_scale * log2(e)
    folded into one multiplier), acc += P . V with V the same 512-dim tile; lse written in natural log.
  - fp8_e4m3_fnuz: codes are decoded in the kernel, exactly, to bf16 (inline PTX, four codes per
    32-bit register: the code's 7 magnitude bits placed under a bf16 exponent and one multiply by
    2^119, which also makes subnormal codes exact; 0x80 -> NaN; 0x7F/0xFF -> +-240), and kv_scale is
    folded into the score multiplier and the output scale (never multiplied per element).
  - Two kernels, picked by BLOCK_H: heads-major (BLOCK_H 64: S = q K^T with 64 query rows as the
    wgmma M, for many heads) and keys-major (BLOCK_H <= 32: S^T = K q^T with BLOCK_N keys as M,
    out^T = V^T P^T, for few heads, where heads-major would pad 16 rows to 64 or, on mma.sync,
    replicate the QK product in every warp). KV tiles are multi-buffered by Triton's pipeliner.
  - TMA configs (names ending "-tma"; page_size a multiple of BLOCK_N, so a tile is rows of one
    page): the tiles every query row sees whole are copied by TMA (two tensor descriptors over the
    cache as rows of 576: the latent [BLOCK_N, 512] and rope [BLOCK_N, 64] boxes), unmasked, no
    address registers; the last, partial tile and the causal rows' tiles take the masked pointer
    loop (rows past a sequence's length hold NaN and must be read as 0 for P V). Other pages, or
    a cache base Triton cannot address, and the config declines (MLA_EUNSUPPORTED).
  - Split-KV (flash decoding): num_splits programs per (sequence, head block) each take an equal
    share of that sequence's tiles; partial outputs and lse (log2) go to the workspace and a combine
    kernel merges them by LSE. num_splits 1 writes out/lse directly (no combine, no workspace).
    num_splits 0 = auto, from the shapes and num_cus only (never from seqlens values): the fewest
    splits that fill the last wave of programs to 85%.
  - A sequence (or causal query) with no visible keys gives out 0 and lse +inf.

Capture safety: launch() does a dict lookup keyed by the buffers' data_ptr() and enqueues two Triton
kernels at most; no allocation, no host sync, no Python branch on a GPU value.
"""
import math
import os

import torch
import triton
import triton.language as tl

NAME = "triton.mla_decode"
BACKEND = "cuda"
KV_DTYPES = ("bf16", "fp8_e4m3_fnuz")
SUMMARY = ("Triton port of the TileLang MLA decode core: BLOCK_H heads share each paged KV tile, "
           "online softmax (exp2), split-KV + LSE combine, fp8 fnuz decoded in the kernel")

D_QK = 576
D_V = 512
D_ROPE = 64
MAX_SPLITS = 64
# BLOCK_H up to this runs the keys-major kernel (_mla_decode_kernel_keys), above it heads-major.
# VS_TRITON_KEYS_MAJOR_MAX_BH=0 runs heads-major everywhere (measured faster at h_q 16 with bh16
# on mma.sync in the first H200 run, 2.33 against 2.13 TB/s; re-verify parity before using it).
KEYS_MAJOR_MAX_BH = int(os.environ.get("VS_TRITON_KEYS_MAJOR_MAX_BH", "32"))
LOG2E = 1.4426950408889634
LN2 = 0.6931471805599453

# fp8 decode: "asm" (inline PTX, the default) or "ref" (plain Triton integer ops, slower, the same
# values); VS_TRITON_FP8_DECODE overrides. prepare() falls back to "ref" if the PTX does not build.
FP8_DECODE = os.environ.get("VS_TRITON_FP8_DECODE", "asm")

# Four fnuz codes (one 32-bit register, byte k = element k) -> four bf16 (two registers).
# d = prmt(x, 0, ...) puts code k in the high byte of a 16-bit half; bf16 bits =
# sign | magnitude >> 4, i.e. the code's eeee.mmm under a bf16 exponent field (bias 127 instead of
# 8), times 2^119 (bf16 0x7B00) = the fnuz value, exact for normal and subnormal codes alike.
# 0x80 (fnuz NaN) would give -0: a byte mask of the 0x80 codes, spread to the halves as 0x8000,
# becomes 0x7FC0 (n - n >> 9) and is OR-ed in, giving 0xFFC0 (NaN).
_FNUZ_ASM = tl.constexpr("""
{
.reg .b32 d0, d1, t0, t1, z, y, f, n0, n1, k, nz, zr;
mov.b32 k, 0x7B007B00;
mov.b32 nz, 0x80008000;
mov.b32 zr, 0;
prmt.b32 d0, $2, zr, 0x1404;
prmt.b32 d1, $2, zr, 0x3424;
shr.b32 t0, d0, 4;
shr.b32 t1, d1, 4;
and.b32 t0, t0, 0x07F007F0;
and.b32 t1, t1, 0x07F007F0;
and.b32 d0, d0, 0x80008000;
and.b32 d1, d1, 0x80008000;
or.b32 d0, d0, t0;
or.b32 d1, d1, t1;
fma.rn.bf16x2 d0, d0, k, nz;
fma.rn.bf16x2 d1, d1, k, nz;
xor.b32 z, $2, 0x80808080;
and.b32 y, z, 0x7F7F7F7F;
add.u32 y, y, 0x7F7F7F7F;
or.b32 y, y, z;
not.b32 y, y;
and.b32 f, y, 0x80808080;
prmt.b32 n0, f, zr, 0x1404;
prmt.b32 n1, f, zr, 0x3424;
shr.b32 t0, n0, 9;
shr.b32 t1, n1, 9;
sub.u32 n0, n0, t0;
sub.u32 n1, n1, t1;
or.b32 $0, d0, n0;
or.b32 $1, d1, n1;
}
""")


@triton.jit
def _fnuz_decode_asm(codes):
    bits = tl.inline_asm_elementwise(_FNUZ_ASM, "=r,=r,r", [codes], dtype=tl.int16, is_pure=True,
                                     pack=4)
    return bits.to(tl.bfloat16, bitcast=True)


@triton.jit
def _fnuz_decode_ref(codes):
    c = codes.to(tl.int32)
    e = (c >> 3) & 15
    m = c & 7
    norm = (((e + 119) << 23) | (m << 20)).to(tl.float32, bitcast=True)
    sub = m.to(tl.float32) * 0.0009765625
    mag = tl.where(e == 0, sub, norm)
    v = tl.where((c & 0x80) != 0, -mag, mag)
    v = tl.where(c == 0x80, float("nan"), v)
    return v.to(tl.bfloat16)


@triton.jit
def _kv_pointer(KV, FP8: tl.constexpr, KV_INT: tl.constexpr):
    """The cache's base: the pointer itself, or (KV_INT) its address passed as an int64 and cast
    here, for a base that no allocation contains (see _kv_addressable)."""
    p = KV
    if KV_INT:
        if FP8:
            p = KV.to(tl.int64).to(tl.pointer_type(tl.uint8))
        else:
            p = KV.to(tl.int64).to(tl.pointer_type(tl.bfloat16))
    return p


@triton.jit
def _load_tile(KV, bt_row, pg0, n0, end, page, offs_d, offs_r, BLOCK_N: tl.constexpr):
    """One KV tile by pointers: keys n0 .. n0 + BLOCK_N - 1 of a sequence, those at or past end
    masked (read as 0, never their NaN rows), through the block table (any page_size)."""
    offs_n = n0 + tl.arange(0, BLOCK_N)
    nmask = offs_n < end
    # Masked-off keys address the sequence's first row (never page 0 of the cache: a cache
    # base may lie outside every allocation, and a masked cp.async may still translate it).
    pg = tl.load(bt_row + offs_n // page, mask=nmask, other=0)
    pg = tl.where(nmask, pg, pg0)
    kv_off = (pg.to(tl.int64) * page + tl.where(nmask, offs_n % page, 0)) * 576
    kn = tl.load(KV + kv_off[:, None] + offs_d[None, :], mask=nmask[:, None], other=0)
    kr = tl.load(KV + kv_off[:, None] + 512 + offs_r[None, :], mask=nmask[:, None], other=0)
    return kn, kr, offs_n


@triton.jit
def _tma_row(bt_row, n0, page):
    """The cache row of key n0 (TMA tiles: page_size a multiple of BLOCK_N, so a tile is the
    page's rows n0 % page .. + BLOCK_N - 1, contiguous; rows < 2^31, checked on the host)."""
    pg = tl.load(bt_row + n0 // page)
    return pg * page + n0 % page


@triton.jit
def _decode(kn, kr, FP8: tl.constexpr, FP8_ASM: tl.constexpr):
    if FP8:
        if FP8_ASM:
            kn = _fnuz_decode_asm(kn)
            kr = _fnuz_decode_asm(kr)
        else:
            kn = _fnuz_decode_ref(kn)
            kr = _fnuz_decode_ref(kr)
    return kn, kr


@triton.jit
def _step_heads(q_nope, q_pe, kn, kr, offs_n, lim, m_i, l_i, acc, qk_scale, FP8: tl.constexpr,
                FP8_ASM: tl.constexpr, MASK: tl.constexpr):
    """One KV tile, heads-major: S = q K^T (query rows as M), online softmax, acc += P V."""
    kn, kr = _decode(kn, kr, FP8, FP8_ASM)
    s = tl.dot(q_pe, tl.trans(kr))
    s = tl.dot(q_nope, tl.trans(kn), s)
    s = s * qk_scale
    if MASK:
        s = tl.where(offs_n[None, :] < lim[:, None], s, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(s, 1))
    m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = tl.math.exp2(m_i - m_use)
    p = tl.math.exp2(s - m_use[:, None])
    l_i = l_i * alpha + tl.sum(p, 1)
    acc = acc * alpha[:, None]
    acc = tl.dot(p.to(tl.bfloat16), kn, acc)
    return m_new, l_i, acc


@triton.jit
def _step_keys(qt_nope, qt_pe, kn, kr, offs_n, lim, m_i, l_i, acc, qk_scale, FP8: tl.constexpr,
               FP8_ASM: tl.constexpr, MASK: tl.constexpr):
    """One KV tile, keys-major: S^T = K q^T (keys as M), online softmax, acc^T += V^T P^T."""
    kn, kr = _decode(kn, kr, FP8, FP8_ASM)
    st = tl.dot(kr, qt_pe)
    st = tl.dot(kn, qt_nope, st)
    st = st * qk_scale
    if MASK:
        st = tl.where(offs_n[:, None] < lim[None, :], st, float("-inf"))
    m_new = tl.maximum(m_i, tl.max(st, 0))
    m_use = tl.where(m_new == float("-inf"), 0.0, m_new)
    alpha = tl.math.exp2(m_i - m_use)
    pt = tl.math.exp2(st - m_use[None, :])
    l_i = l_i * alpha + tl.sum(pt, 0)
    acc = acc * alpha[None, :]
    acc = tl.dot(tl.trans(kn), pt.to(tl.bfloat16), acc)
    return m_new, l_i, acc


@triton.jit
def _split_range(SL, b, sp, seq_q, n_split, BLOCK_N: tl.constexpr):
    """This split's keys [start, end) (an equal share of the sequence's tiles), the sequence's
    length, and full_end: the end of the tiles from start on that every query row sees whole
    (keys < seqlen - s_q + 1, the causal limit of row 0), which the TMA configs load unmasked."""
    seqlen = tl.load(SL + b)
    n_tiles = tl.cdiv(seqlen, BLOCK_N)
    per = tl.cdiv(n_tiles, n_split)
    start = sp * per * BLOCK_N
    end = tl.minimum(start + per * BLOCK_N, seqlen)
    vis = tl.minimum(end, seqlen - seq_q + 1)
    full_end = start + (tl.maximum(vis - start, 0) // BLOCK_N) * BLOCK_N
    return seqlen, start, end, full_end


@triton.jit(do_not_specialize=["seq_q", "heads", "page", "max_pages", "n_rows", "n_split"])
def _mla_decode_kernel(Q, KV, KD, KRD, BT, SL, OUT, LSE, PO, PL, qk_scale, out_scale,
                       seq_q, heads, page, max_pages, n_rows, n_split,
                       BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr, FP8: tl.constexpr,
                       FP8_ASM: tl.constexpr, SPLIT: tl.constexpr, KV_INT: tl.constexpr,
                       TMA: tl.constexpr):
    KV = _kv_pointer(KV, FP8, KV_INT)
    pid_h = tl.program_id(0)
    b = tl.program_id(1)
    sp = tl.program_id(2)
    rows = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
    rmask = rows < n_rows
    seqlen, start, end, full_end = _split_range(SL, b, sp, seq_q, n_split, BLOCK_N)
    # Causal: row r sees keys [0, seqlen - s_q + 1 + r // h_q); at most this split's end.
    lim = tl.minimum(seqlen - seq_q + 1 + rows // heads, end)

    offs_d = tl.arange(0, 512)
    offs_r = tl.arange(0, 64)
    q_off = (b * n_rows + rows).to(tl.int64) * 576
    q_nope = tl.load(Q + q_off[:, None] + offs_d[None, :], mask=rmask[:, None], other=0.0)
    q_pe = tl.load(Q + q_off[:, None] + 512 + offs_r[None, :], mask=rmask[:, None], other=0.0)

    m_i = tl.full([BLOCK_H], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_H], dtype=tl.float32)
    acc = tl.zeros([BLOCK_H, 512], dtype=tl.float32)
    bt_row = BT + b.to(tl.int64) * max_pages
    pg0 = tl.load(bt_row, mask=seqlen > 0, other=0)
    tail = start
    if TMA:
        # Whole tiles by TMA (the copy engine, no address registers), unmasked; the last,
        # partial tile and the causal rows' tiles by the masked loop below.
        for n0 in range(start, full_end, BLOCK_N):
            r0 = _tma_row(bt_row, n0, page)
            kn = KD.load([r0, 0])
            kr = KRD.load([r0, 512])
            m_i, l_i, acc = _step_heads(q_nope, q_pe, kn, kr, n0, lim, m_i, l_i, acc, qk_scale,
                                        FP8, FP8_ASM, False)
        tail = full_end
    for n0 in range(tail, end, BLOCK_N):
        kn, kr, offs_n = _load_tile(KV, bt_row, pg0, n0, end, page, offs_d, offs_r, BLOCK_N)
        m_i, l_i, acc = _step_heads(q_nope, q_pe, kn, kr, offs_n, lim, m_i, l_i, acc, qk_scale,
                                    FP8, FP8_ASM, True)

    l_div = tl.where(l_i == 0.0, 1.0, l_i)
    if SPLIT:
        part = (b * n_split + sp) * n_rows + rows
        lse2 = tl.where(l_i == 0.0, float("-inf"), m_i + tl.math.log2(l_div))
        o = acc * (out_scale / l_div)[:, None]
        tl.store(PO + part.to(tl.int64)[:, None] * 512 + offs_d[None, :], o, mask=rmask[:, None])
        tl.store(PL + part, lse2, mask=rmask)
    else:
        o = acc * (out_scale / l_div)[:, None]
        o_off = (b * n_rows + rows).to(tl.int64) * 512
        tl.store(OUT + o_off[:, None] + offs_d[None, :], o.to(tl.bfloat16), mask=rmask[:, None])
        lse = tl.where(l_i == 0.0, float("inf"), (m_i + tl.math.log2(l_div)) * 0.6931471805599453)
        lse_off = (b * heads + rows % heads) * seq_q + rows // heads
        tl.store(LSE + lse_off, lse, mask=rmask)


@triton.jit(do_not_specialize=["seq_q", "heads", "page", "max_pages", "n_rows", "n_split"])
def _mla_decode_kernel_keys(Q, KV, KD, KRD, BT, SL, OUT, LSE, PO, PL, qk_scale, out_scale,
                            seq_q, heads, page, max_pages, n_rows, n_split,
                            BLOCK_H: tl.constexpr, BLOCK_N: tl.constexpr, FP8: tl.constexpr,
                            FP8_ASM: tl.constexpr, SPLIT: tl.constexpr, KV_INT: tl.constexpr,
                            TMA: tl.constexpr):
    """The same computation, keys-major, for few query rows (BLOCK_H <= 32): S^T = K . q^T puts
    BLOCK_N keys on the MMA's M axis (wgmma needs M = 64 per warpgroup; heads-major would pad 16
    rows to 64 or, with mma.sync, replicate the QK product in every warp), out^T = V^T . P^T."""
    KV = _kv_pointer(KV, FP8, KV_INT)
    pid_h = tl.program_id(0)
    b = tl.program_id(1)
    sp = tl.program_id(2)
    rows = pid_h * BLOCK_H + tl.arange(0, BLOCK_H)
    rmask = rows < n_rows
    seqlen, start, end, full_end = _split_range(SL, b, sp, seq_q, n_split, BLOCK_N)
    lim = tl.minimum(seqlen - seq_q + 1 + rows // heads, end)

    offs_d = tl.arange(0, 512)
    offs_r = tl.arange(0, 64)
    q_off = (b * n_rows + rows).to(tl.int64) * 576
    qt_nope = tl.load(Q + q_off[None, :] + offs_d[:, None], mask=rmask[None, :], other=0.0)
    qt_pe = tl.load(Q + q_off[None, :] + 512 + offs_r[:, None], mask=rmask[None, :], other=0.0)

    m_i = tl.full([BLOCK_H], float("-inf"), tl.float32)
    l_i = tl.zeros([BLOCK_H], dtype=tl.float32)
    acc = tl.zeros([512, BLOCK_H], dtype=tl.float32)
    bt_row = BT + b.to(tl.int64) * max_pages
    pg0 = tl.load(bt_row, mask=seqlen > 0, other=0)
    tail = start
    if TMA:
        for n0 in range(start, full_end, BLOCK_N):
            r0 = _tma_row(bt_row, n0, page)
            kn = KD.load([r0, 0])
            kr = KRD.load([r0, 512])
            m_i, l_i, acc = _step_keys(qt_nope, qt_pe, kn, kr, n0, lim, m_i, l_i, acc, qk_scale,
                                       FP8, FP8_ASM, False)
        tail = full_end
    for n0 in range(tail, end, BLOCK_N):
        kn, kr, offs_n = _load_tile(KV, bt_row, pg0, n0, end, page, offs_d, offs_r, BLOCK_N)
        m_i, l_i, acc = _step_keys(qt_nope, qt_pe, kn, kr, offs_n, lim, m_i, l_i, acc, qk_scale,
                                   FP8, FP8_ASM, True)

    l_div = tl.where(l_i == 0.0, 1.0, l_i)
    o = acc * (out_scale / l_div)[None, :]
    if SPLIT:
        part = (b * n_split + sp) * n_rows + rows
        lse2 = tl.where(l_i == 0.0, float("-inf"), m_i + tl.math.log2(l_div))
        tl.store(PO + part.to(tl.int64)[None, :] * 512 + offs_d[:, None], o, mask=rmask[None, :])
        tl.store(PL + part, lse2, mask=rmask)
    else:
        o_off = (b * n_rows + rows).to(tl.int64) * 512
        tl.store(OUT + o_off[None, :] + offs_d[:, None], o.to(tl.bfloat16), mask=rmask[None, :])
        lse = tl.where(l_i == 0.0, float("inf"), (m_i + tl.math.log2(l_div)) * 0.6931471805599453)
        lse_off = (b * heads + rows % heads) * seq_q + rows // heads
        tl.store(LSE + lse_off, lse, mask=rmask)


@triton.jit(do_not_specialize=["seq_q", "heads", "n_rows", "n_split"])
def _mla_combine_kernel(PO, PL, OUT, LSE, seq_q, heads, n_rows, n_split, NSP2: tl.constexpr):
    r = tl.program_id(0)
    b = tl.program_id(1)
    offs_s = tl.arange(0, NSP2)
    base = b * n_split * n_rows + r
    pl = tl.load(PL + base + offs_s * n_rows, mask=offs_s < n_split, other=float("-inf"))
    mx = tl.max(pl, 0)
    mu = tl.where(mx == float("-inf"), 0.0, mx)
    wsum = tl.sum(tl.math.exp2(pl - mu), 0)
    offs_d = tl.arange(0, 512)
    acc = tl.zeros([512], dtype=tl.float32)
    for s in range(0, n_split):
        idx = base + s * n_rows
        w = tl.math.exp2(tl.load(PL + idx) - mu)
        acc += w * tl.load(PO + idx.to(tl.int64) * 512 + offs_d)
    o = acc / tl.where(wsum == 0.0, 1.0, wsum)
    tl.store(OUT + (b * n_rows + r).to(tl.int64) * 512 + offs_d, o.to(tl.bfloat16))
    lse = tl.where(wsum == 0.0, float("inf"),
                   (mu + tl.math.log2(tl.where(wsum == 0.0, 1.0, wsum))) * 0.6931471805599453)
    tl.store(LSE + (b * heads + r % heads) * seq_q + r // heads, lse)


def _cfg(bn, bh, sp, w, st, tma=False):
    """A config; tma: whole KV tiles by TMA (a name ending in "-tma", the only place the harness's
    five knobs leave for it; such a config declines a task whose page_size is not a multiple of
    block_n or whose cache base Triton cannot address)."""
    return {"name": "bn%d-bh%d-sp%d-w%d-st%d%s" % (bn, bh, sp, w, st, "-tma" if tma else ""),
            "block_n": bn, "block_h": bh, "num_splits": sp, "num_warps": w, "num_stages": st}


def _tma(config):
    return config["name"].endswith("-tma")


# sm_90, every one measured on the H200 (parity and speed, tools/gpu/py_kernels_check.py): bh64/w8
# runs heads-major on wgmma (two warpgroups, the 64 x 512 fp32 accumulator split in column halves)
# for many heads; bh16/bh32 run keys-major on wgmma for few heads (memory-bound). Measured and
# dropped: heads-major bh16 (mma.sync, QK replicated in every warp; 2.33 TB/s at h_q 16, better
# than keys-major but 8x the tensor work), bn32 heads-major tiles (157 against 218 TFLOPS).
# Added 2026-12-01 from a do_bench run (tools/gpu/py_kernels_check.py functions, other processes on
# the GPU): bh16 with 2 splits, 2.52 TB/s at h_q 16 b 128 32K and 2.30 at 4K (bh16 sp0: 2.13 and
# 2.03 in the earlier run): at b 128 the auto split count is 1, one CTA per SM, too few bytes in
# flight; sp4 beside it, untimed. Measured and dropped: keys-major for bh64 at h_q 128 (154 against
# 217 TFLOPS), bn32-bh16 with 3-4 stages (0.56-1.09 TB/s at 32K).
# Added 2026-12-06 (issue 42; H100, py_kernels_check.py bench and tier full's 4 x 4 sweep, parity on
# every edge case; BENCHMARKS.md "2026-12-06 (05:26-05:42 UTC)"): the TMA configs. bn64-bh64-sp0-w8-
# st2-tma won every bf16 h_q 128 shape (273 TFLOPS at b 128 8K against 217 for the best pointer
# config; 1.03-1.34x on the sweep's 16 shapes) and fp8 at h_q 16 b 128 32K (0.85 against 0.76 TB/s);
# bn64-bh16-sp0-w4-st3-tma won bf16 at h_q 16 (3.02 TB/s at b 128 32K against 2.20, 2.74 at 4K
# against 2.07; its 3 stages put the block_table load a stage ahead of the TMA copy). Measured and
# dropped, slower than those two on every shape: bn64-bh64-sp0-w8-st3-tma (248 TFLOPS),
# bn32-bh64-sp0-w8-st4-tma (187), bn64-bh16-sp0-w8-st3-tma (2.35 TB/s), bn64-bh16-sp2-w4-st3-tma
# (2.99 TB/s at 32K, 2.59 at 4K). The pointer configs stay: tasks with pages of 16 or 1, which the
# TMA configs decline, need them, and on fp8 at h_q 16 the TMA keys-major kernel runs at 0.19 TB/s
# (the decoded tile goes through registers and spills); which pointer configs still win somewhere
# the TMA ones also run is for the next card run's per-config timings to show.
_CONFIGS = {
    "sm_90": [_cfg(64, 64, 0, 8, 2), _cfg(64, 64, 0, 8, 3), _cfg(64, 64, 2, 8, 2),
              _cfg(64, 16, 0, 4, 2), _cfg(64, 16, 0, 8, 2), _cfg(64, 16, 0, 8, 3),
              _cfg(64, 32, 0, 8, 2), _cfg(64, 16, 2, 4, 2), _cfg(64, 16, 4, 4, 2),
              _cfg(64, 64, 0, 8, 2, tma=True), _cfg(64, 16, 0, 4, 3, tma=True)],
    # Other CUDA generations (sm_80/86/89: mma.sync, 100-164 KiB of shared memory): small tiles
    # (bn32-bh16 keys-major, bn32-bh64 heads-major; the latter needs 112 KiB, sm_80 only).
    # Compiled for sm_80 here, not run on a device.
    "other": [_cfg(32, 16, 0, 4, 2), _cfg(32, 64, 0, 8, 2)],
    # gfx942 (MI300X, Triton's AMD backend: 64-wide wavefronts, MFMA, 64 KiB of LDS per workgroup):
    # a 64-row tile of 576 bf16 (72 KiB) does not fit, so BLOCK_N 32 (36 KiB) single-buffered, or
    # 16 double-buffered; heads-major bh64 (4 or 8 waves) for many heads, keys-major bh16 for few.
    # Chosen from those limits, never run: no MI300X has been lent to this project.
    "gfx942": [_cfg(32, 64, 0, 4, 1), _cfg(32, 64, 0, 8, 1), _cfg(16, 64, 0, 4, 2),
               _cfg(32, 16, 0, 4, 1)],
}


def configs(arch):
    """Configs for a CUDA generation ("sm_90", "sm_80", ...) or gfx942; [] for any other arch."""
    if arch in _CONFIGS:
        return [dict(c) for c in _CONFIGS[arch]]
    if isinstance(arch, str) and arch.startswith("sm_"):
        return [dict(c) for c in _CONFIGS["other"]]
    return []


def supports(shape):
    if shape.kv_dtype not in KV_DTYPES:
        return "kv_dtype %s: triton.mla_decode runs bf16 and fp8_e4m3_fnuz" % shape.kv_dtype
    if shape.page_size < 1 or shape.s_q < 1 or shape.h_q < 1 or shape.batch < 1:
        return "empty shape"
    return None


def _next_pow2(x):
    return 1 << max(0, int(x) - 1).bit_length()


def _block_h(shape, config):
    """BLOCK_H: the config's (query rows s_q * h_q of one sequence per program; padded rows are
    masked), 64 when the config leaves it 0."""
    return int(config.get("block_h", 0) or 64)


def _num_splits(shape, config):
    """Splits per (sequence, head block): the config's, or auto from shapes and num_cus only."""
    bn = int(config["block_n"])
    bh = _block_h(shape, config)
    max_tiles = max(1, -(-(shape.max_pages * shape.page_size) // bn))
    ns = int(config.get("num_splits", 0) or 0)
    if ns <= 0:
        # The fewest splits whose programs fill the SMs' last wave to at least 85% (one wave of
        # equal programs when there are fewer programs than SMs), else the best filling.
        base = shape.batch * (-(-(shape.s_q * shape.h_q) // bh))
        slots = max(1, int(shape.num_cus or 1))

        def fill(s):
            progs = base * s
            return progs / (-(-progs // slots) * slots)
        limit = min(MAX_SPLITS, max_tiles)
        ns = 1
        while ns < limit and fill(ns) < 0.85:
            ns += 1
        if fill(ns) < 0.85:
            ns = max(range(1, limit + 1), key=lambda s: (fill(s), -s))
    return max(1, min(ns, max_tiles, MAX_SPLITS))


def _ws_layout(shape, config):
    ns = _num_splits(shape, config)
    if ns == 1:
        return ns, 0, 0
    parts = shape.batch * ns * shape.s_q * shape.h_q
    return ns, parts * D_V * 4, parts * 4


def workspace_size(shape, config):
    ns, po, pl = _ws_layout(shape, config)
    return 0 if ns == 1 else po + pl


_plans = {}


def _key(args, config):
    ws = args.workspace
    return (config["name"], args.q.data_ptr(), args.kv_cache.data_ptr(), args.block_table.data_ptr(),
            args.seqlens.data_ptr(), args.out.data_ptr(), args.lse.data_ptr(),
            ws.data_ptr() if ws is not None else 0, args.batch, args.s_q, args.h_q, args.num_pages,
            args.page_size, args.max_pages, args.kv_dtype, float(args.softmax_scale),
            float(args.kv_scale), args.num_cus)


_addressable = {}
# The cache base as an int64 for a base no allocation contains: off by default, since it faulted on
# the H200 in the one run that took it (before the masked-lane fix below, not re-run since).
KV_INT_PATH = os.environ.get("VS_TRITON_KV_INT", "0") == "1"


def _kv_addressable(ptr):
    """Whether the driver knows ptr as device memory (cuPointerGetAttribute, the check Triton's
    launcher makes on every pointer argument). The harness's page-offset tasks hand a cache base
    that lies below the pages the task uses (block_table entries are large, so that row addresses
    need 64 bits): no allocation contains that base, Triton's launcher refuses it ("Pointer argument
    cannot be accessed from Triton"), so the kernels then take the address as an int64 and cast it.
    Host-side, from a pointer value only: called in prepare() and cached per address."""
    if ptr not in _addressable:
        import ctypes
        try:
            cuda = ctypes.CDLL("libcuda.so.1")
            val = ctypes.c_uint64(0)
            # CU_POINTER_ATTRIBUTE_DEVICE_POINTER = 2
            rc = cuda.cuPointerGetAttribute(ctypes.byref(val), ctypes.c_int(2), ctypes.c_uint64(ptr))
            _addressable[ptr] = rc == 0
        except OSError:
            _addressable[ptr] = True
    return _addressable[ptr]


def _build(args, config, fp8_decode):
    for name, t in (("q", args.q), ("kv_cache", args.kv_cache), ("block_table", args.block_table),
                    ("seqlens", args.seqlens), ("out", args.out), ("lse", args.lse)):
        if not t.is_contiguous():
            raise ValueError("%s: %s must be contiguous" % (NAME, name))
    fp8 = args.kv_dtype == "fp8_e4m3_fnuz"
    if args.kv_dtype not in KV_DTYPES:
        raise ValueError("%s: kv_dtype %s not supported" % (NAME, args.kv_dtype))
    bh = _block_h(args, config)
    bn = int(config["block_n"])
    ns, po_bytes, pl_bytes = _ws_layout(args, config)
    rows = args.s_q * args.h_q
    if ns > 1:
        ws = args.workspace
        if ws is None or ws.numel() < po_bytes + pl_bytes:
            raise ValueError("%s: workspace of %d bytes needed" % (NAME, po_bytes + pl_bytes))
        po = ws[:po_bytes].view(torch.float32)
        pl = ws[po_bytes:po_bytes + pl_bytes].view(torch.float32)
    else:
        po, pl = args.out, args.lse
    kvs = float(args.kv_scale) if fp8 else 1.0
    qk_scale = float(args.softmax_scale) * kvs * LOG2E
    grid = (triton.cdiv(rows, bh), args.batch, ns)
    kernel = _mla_decode_kernel_keys if bh <= KEYS_MAJOR_MAX_BH else _mla_decode_kernel
    kv_int = not _kv_addressable(args.kv_cache.data_ptr())
    if kv_int and not KV_INT_PATH:
        raise ValueError("%s: the cache base %#x lies outside every allocation (a page-offset "
                         "task): Triton's launcher refuses such a pointer, and the int64 path "
                         "(VS_TRITON_KV_INT=1) hit an illegal address on the H200 (2026-12-01)"
                         % (NAME, args.kv_cache.data_ptr()))
    kv = args.kv_cache.data_ptr() if kv_int else args.kv_cache
    kd = krd = None
    if _tma(config):
        # Two descriptors over the cache as rows of 576: the latent part ([bn, 512] boxes at
        # column 0) and the rope part ([bn, 64] at column 512); Triton splits each box into TMA
        # copies of its swizzle width and passes the descriptors by value (nothing allocated).
        from triton.tools.tensor_descriptor import TensorDescriptor
        flat = args.kv_cache.view(-1, D_QK)
        kd = TensorDescriptor(flat, [flat.shape[0], D_QK], [D_QK, 1], [bn, D_V])
        krd = TensorDescriptor(flat, [flat.shape[0], D_QK], [D_QK, 1], [bn, D_ROPE])
    kargs = (args.q, kv, kd, krd, args.block_table, args.seqlens, args.out, args.lse, po, pl,
             qk_scale, kvs, args.s_q, args.h_q, args.page_size, args.max_pages, rows, ns)
    kw = dict(BLOCK_H=bh, BLOCK_N=bn, FP8=fp8, FP8_ASM=(fp8_decode == "asm"), SPLIT=ns > 1,
              KV_INT=kv_int, TMA=kd is not None, num_warps=int(config["num_warps"]),
              num_stages=int(config["num_stages"]))
    comb = None
    if ns > 1:
        comb = ((rows, args.batch), (po, pl, args.out, args.lse, args.s_q, args.h_q, rows, ns),
                dict(NSP2=max(2, _next_pow2(ns)), num_warps=4, num_stages=1))
    return kernel, grid, kargs, kw, comb


def _enqueue(plan):
    kernel, grid, kargs, kw, comb = plan
    kernel[grid](*kargs, **kw)
    if comb is not None:
        _mla_combine_kernel[comb[0]](*comb[1], **comb[2])


def _fp8_mode(args):
    """The fp8 decode: the inline PTX on NVIDIA (VS_TRITON_FP8_DECODE), the plain Triton integer
    ops on AMD (ROCm's torch: torch.version.hip), where PTX does not exist."""
    if args.kv_dtype != "fp8_e4m3_fnuz" or getattr(torch.version, "hip", None):
        return "ref"
    return FP8_DECODE


MLA_EUNSUPPORTED = -2  # kernels/mla_decode.h: this config cannot run these args
_DECLINED = "declined"


def _tma_declines(args, config):
    """Why a TMA config cannot run these args (None when it can): a tile must be rows of one page
    (page_size a multiple of block_n), the cache an allocation Triton's launcher accepts, its base
    16-byte aligned and its rows addressable by TMA's int32 coordinates."""
    if not _tma(config):
        return None
    if args.page_size % int(config["block_n"]) != 0:
        return "page_size %d is not a multiple of block_n %d" % (args.page_size, config["block_n"])
    if not _kv_addressable(args.kv_cache.data_ptr()) or args.kv_cache.data_ptr() % 16 != 0:
        return "the cache base is not an aligned allocation"
    if args.num_pages * args.page_size >= 2 ** 31:
        return "more than 2^31 cache rows"
    return None


def prepare(args, config):
    """Builds the launch plan for these buffers and config and compiles the kernels (one run)."""
    key = _key(args, config)
    if _tma_declines(args, config) is not None:
        _plans[key] = _DECLINED
        return
    mode = _fp8_mode(args)
    plan = _build(args, config, mode)
    try:
        _enqueue(plan)
    except Exception:
        if mode != "asm":
            raise
        plan = _build(args, config, "ref")
        _enqueue(plan)
    torch.cuda.current_stream().synchronize()
    _plans[key] = plan


def launch(args, config):
    plan = _plans.get(_key(args, config))
    if plan is _DECLINED or (plan is None and _tma_declines(args, config) is not None):
        return MLA_EUNSUPPORTED
    if plan is None:
        plan = _build(args, config, _fp8_mode(args))
        _plans[_key(args, config)] = plan
    _enqueue(plan)
