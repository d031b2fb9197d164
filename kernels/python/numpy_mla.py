"""numpy.mla_decode: MLA decode on the CPU in numpy, the reference Python implementation of the bridge.

The contract is kernels/python/mla_decode.py's. Per sequence: gather exactly its visible cache rows
(never a row at or past seqlens[b]), decode them to float32 (bf16 bits shifted into the high half
of a uint32; fp8 e4m3 fnuz codes through a 256-entry table times kv_scale, 0x80 is NaN), then an
online softmax over tiles of BLOCK_N keys in float32 (scores of all s_q * h_q query rows against
the tile in one matrix product, causal mask for s_q > 1), out rounded to bf16 to nearest even.
Deterministic: the same fixed order of operations for every call.
"""

import numpy as np

NAME = "numpy.mla_decode"
BACKEND = "cpu"
KV_DTYPES = ("bf16", "fp8_e4m3_fnuz")
SUMMARY = ("numpy on the CPU: per sequence, visible rows gathered and decoded to float32, online "
           "softmax over BLOCK_N-key tiles, bf16 out rounded to nearest even")

D_QK, D_V = 576, 512


def _fnuz_table():
    t = np.empty(256, dtype=np.float32)
    for c in range(256):
        e, m = (c >> 3) & 0xF, c & 7
        v = (1.0 + m / 8.0) * 2.0 ** (e - 8) if e else (m / 8.0) * 2.0 ** (1 - 8)
        t[c] = -v if c & 0x80 else v
    t[0x80] = np.nan
    return t


FNUZ = _fnuz_table()


def configs(arch):
    if arch.startswith(("sm_", "gfx")):
        return []
    return [{"name": "bn64", "block_n": 64}, {"name": "bn256", "block_n": 256}]


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


def launch(args, config):
    block_n = config["block_n"] or 64
    lut = FNUZ * np.float32(args.kv_scale) if args.kv_dtype == "fp8_e4m3_fnuz" else None
    for b in range(args.batch):
        _sequence(args, b, block_n, lut)
