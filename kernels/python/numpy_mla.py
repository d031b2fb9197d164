"""numpy.mla_decode: MLA decode on the CPU in numpy, the reference Python implementation of the bridge.

The contract is kernels/python/mla_decode.py's. Dense form, per sequence: gather exactly its
visible cache rows (never a row at or past seqlens[b]), decode them to float32 (bf16 bits shifted
into the high half of a uint32; fp8 e4m3 fnuz codes through a 256-entry table times kv_scale, 0x80
is NaN), then an online softmax over tiles of BLOCK_N keys in float32 (scores of all s_q * h_q query
rows against the tile in one matrix product, causal mask for s_q > 1), out rounded to bf16 to
nearest even.

Sparse form (topk > 0), per query position (b, i): the valid entries (indices, then extra_indices;
-1 and entries past topk_length / extra_topk_length dropped before any read) are gathered and their
rows decoded to float32 by this module's own decoder of the cache formats (written from FlashMLA
tests/quant.py dequantize_k_cache: fp8_ds_mla codes x their fp32 tile scale, fp8_model1 codes x
their e8m0 tile scale, then the bf16 RoPE values; the product is kept in float32, which equals
dequantize_k_cache's bf16 result for the power-of-two scales quantize_k_cache writes), then one
softmax over all of them for the h_q heads in float32; attn_sink scales out by 1 / (1 + exp(sink -
lse)); no valid entry gives out 0 and lse +inf. Deterministic: the same fixed order of operations
for every call.
"""

import numpy as np

NAME = "numpy.mla_decode"
BACKEND = "cpu"
KV_DTYPES = ("bf16", "fp8_e4m3_fnuz", "fp8_ds_mla", "fp8_ds_mla_fnuz", "fp8_model1", "fp8_model1_fnuz")
FORMS = ("dense", "sparse")
SUMMARY = ("numpy on the CPU: per sequence (dense) or query position (sparse), the rows read gathered "
           "and decoded to float32, softmax in float32, bf16 out rounded to nearest even")

D_QK, D_V = 576, 512
DENSE = ("bf16", "fp8_e4m3_fnuz")
SPARSE = ("bf16", "fp8_ds_mla", "fp8_ds_mla_fnuz", "fp8_model1", "fp8_model1_fnuz")


def _fp8_table(bias, fnuz):
    """float32 value of every e4m3 code: exponent bias 7 (OCP e4m3fn, NaN 0x7F/0xFF) or 8 (fnuz,
    NaN 0x80 only); exponent field 0 is subnormal, m/8 * 2^(1 - bias)."""
    t = np.empty(256, dtype=np.float32)
    for c in range(256):
        e, m = (c >> 3) & 0xF, c & 7
        v = (1.0 + m / 8.0) * 2.0 ** (e - bias) if e else (m / 8.0) * 2.0 ** (1 - bias)
        t[c] = -v if c & 0x80 else v
    if fnuz:
        t[0x80] = np.nan
    else:
        t[0x7F] = t[0xFF] = np.nan
    return t


FNUZ = _fp8_table(8, True)
E4M3FN = _fp8_table(7, False)


def configs(arch):
    if arch.startswith(("sm_", "gfx")):
        return []
    return [{"name": "bn64", "block_n": 64}, {"name": "bn256", "block_n": 256}]


def supports(shape):
    if shape.topk <= 0:
        if shape.kv_dtype not in DENSE:
            return "kv dtype %s: the dense form reads %s" % (shape.kv_dtype, ", ".join(DENSE))
        return None
    if shape.kv_dtype not in SPARSE:
        return "kv dtype %s: the sparse form reads %s" % (shape.kv_dtype, ", ".join(SPARSE))
    d_qk = 512 if shape.kv_dtype.startswith("fp8_model1") else 576
    if shape.d_qk != d_qk or shape.d_v != D_V:
        return "d_qk %d, d_v %d: %s rows have d_qk %d, d_v %d" % (shape.d_qk, shape.d_v, shape.kv_dtype,
                                                               d_qk, D_V)
    if shape.extra_topk > 0 and shape.extra_page_size < 1:
        return "extra_page_size %d: not a page size" % shape.extra_page_size
    return None


def _bf16_to_f32(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _f32_to_bf16(x):
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    r = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    return np.where((u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000), np.uint16(0x7FC0), r)


def _sequence(args, b, block_n, lut):
    s_q, h_q, ps = args.s_q, args.h_q, args.page_size
    length = int(args.seqlens[b])
    rows = s_q * h_q
    # Query row r = i * h_q + h sees keys [0, n_i), n_i = length - s_q + 1 + i.
    n = length - s_q + 1 + np.repeat(np.arange(s_q, dtype=np.int64), h_q)
    q = _bf16_to_f32(args.q[b].reshape(rows, D_QK))
    m = np.full(rows, -np.inf, dtype=np.float32)
    l = np.zeros(rows, dtype=np.float32)
    acc = np.zeros((rows, D_V), dtype=np.float32)
    scale = np.float32(args.softmax_scale)
    for t0 in range(0, max(length, 0), block_n):
        j = np.arange(t0, min(t0 + block_n, length), dtype=np.int64)
        codes = args.kv_cache[args.block_table[b, j // ps], j % ps, 0]  # only visible rows
        k = lut[codes] if lut is not None else _bf16_to_f32(codes)
        s = (q @ k.T) * scale
        visible = j[None, :] < n[:, None]
        s = np.where(visible, s, np.float32(-np.inf))
        m_new = np.maximum(m, s.max(axis=1))
        live = np.isfinite(m_new)
        m_safe = np.where(live, m_new, np.float32(0))
        p = np.where(visible, np.exp(s - m_safe[:, None]), np.float32(0)).astype(np.float32)
        alpha = np.where(np.isfinite(m), np.exp(m - m_safe), np.float32(0)).astype(np.float32)
        l = l * alpha + p.sum(axis=1, dtype=np.float32)
        acc = acc * alpha[:, None] + p @ k[:, :D_V]
        m = m_new
    seen = (n > 0) & (l > 0)
    out = np.where(seen[:, None], acc / np.where(seen, l, np.float32(1))[:, None], np.float32(0))
    lse = np.where(seen, m + np.log(np.where(seen, l, np.float32(1))), np.float32(np.inf))
    args.out[b] = _f32_to_bf16(out).reshape(s_q, h_q, D_V)
    args.lse[b] = lse.astype(np.float32).reshape(s_q, h_q).T


# ---- the sparse form --------------------------------------------------------------------------

def decode_rows(kv_dtype, cache, page_size, rows):
    """float32 [len(rows), d_qk] of the cache rows rows (int64, page * page_size + slot) of a cache
    of format kv_dtype: bf16 [pages, page_size, 1, 576] uint16, or a block-scaled format's pages
    [pages, page_bytes] uint8. Reads exactly the bytes of those rows (and their scales)."""
    if kv_dtype == "bf16":
        return _bf16_to_f32(cache.reshape(-1, D_QK)[rows])
    page, slot = rows // page_size, rows % page_size
    lut = FNUZ if kv_dtype.endswith("_fnuz") else E4M3FN
    flat = cache.reshape(-1)                  # [pages * page_bytes] bytes, a view
    base = page * cache.shape[1]              # each row's page, in bytes
    if kv_dtype.startswith("fp8_ds_mla"):
        tok = flat[(base + slot * 656)[:, None] + np.arange(656)]                # [n, 656]
        scales = np.ascontiguousarray(tok[:, 512:528]).view("<f4")              # [n, 4]
        nope = lut[tok[:, :512]] * np.repeat(scales, 128, axis=1)
        rope = _bf16_to_f32(np.ascontiguousarray(tok[:, 528:656]).view("<u2"))
    else:
        tok = flat[(base + slot * 576)[:, None] + np.arange(576)]                # [n, 576]
        sc = flat[(base + page_size * 576 + slot * 8)[:, None] + np.arange(7)]   # [n, 7]
        e8m0 = np.where(sc == 0xFF, np.float32(np.nan),
                        np.ldexp(np.float32(1), np.minimum(sc, 254).astype(np.int32) - 127).astype(np.float32))
        nope = lut[tok[:, :448]] * np.repeat(e8m0, 64, axis=1)
        rope = _bf16_to_f32(np.ascontiguousarray(tok[:, 448:576]).view("<u2"))
    return np.concatenate([nope, rope], axis=1).astype(np.float32)


def _valid(idx, length, b, i):
    """The valid entries of index row (b, i) of idx [batch, s_q, k] (lengths: [batch] or None)."""
    row = idx[b, i]
    if length is not None:
        row = row[:max(0, int(length[b]))]
    return row[row != -1].astype(np.int64)


def _sparse(args):
    d_qk = args.d_qk
    scale = np.float32(args.softmax_scale)
    sink = None if args.attn_sink is None else args.attn_sink.astype(np.float32)
    for b in range(args.batch):
        for i in range(args.s_q):
            k = decode_rows(args.kv_dtype, args.kv_cache, args.page_size,
                            _valid(args.indices, args.topk_length, b, i))
            if args.extra_topk > 0:
                ek = decode_rows(args.kv_dtype, args.extra_kv_cache, args.extra_page_size,
                                 _valid(args.extra_indices, args.extra_topk_length, b, i))
                k = np.concatenate([k, ek], axis=0)
            if len(k) == 0:
                args.out[b, i] = 0
                args.lse[b, :, i] = np.inf
                continue
            q = _bf16_to_f32(args.q[b, i].reshape(args.h_q, d_qk))
            s = (q @ k.T).astype(np.float32) * scale                # [h_q, n]
            m = s.max(axis=1)
            p = np.exp(s - m[:, None]).astype(np.float32)
            l = p.sum(axis=1, dtype=np.float32)
            lse = (m + np.log(l)).astype(np.float32)
            out = (p @ k[:, :D_V]).astype(np.float32) / l[:, None]
            if sink is not None:
                out = out * (np.float32(1) / (np.float32(1) + np.exp(sink - lse)))[:, None]
            args.out[b, i] = _f32_to_bf16(out)
            args.lse[b, :, i] = lse


def launch(args, config):
    if args.topk > 0:
        with np.errstate(over="ignore", invalid="ignore"):
            _sparse(args)
        return
    block_n = config["block_n"] or 64
    lut = FNUZ * np.float32(args.kv_scale) if args.kv_dtype == "fp8_e4m3_fnuz" else None
    for b in range(args.batch):
        _sequence(args, b, block_n, lut)
