"""numpy.step - the e2e step of kernels/torch/deepseek_v3_step.py at small dims, in numpy on the
CPU: the same dataflow around the core (RMSNorm, q down/up with W_UK absorbed into the 512-wide
latent query, kv down + rope into the paged cache at each sequence's last position, the core,
W_UV, o_proj), hidden 64, q_lora 32, qk_nope 16, v_head 16 (the core's 512 + 64 layout is the
operator's). CI has no GPU and no torch: this module exercises the harness's e2e stage there.
Contract: kernels/python/e2e_step.py.
"""
import numpy as np

NAME = "numpy.step"
BACKEND = "cpu"
SUMMARY = ("the DeepSeek-V3 attention block's decode step at small dims in numpy (hidden 64): "
           "pre writes q and the new cache row, post W_UV and o_proj")

HIDDEN = 64
Q_LORA = 32
KV_LORA = 512
QK_NOPE = 16
QK_ROPE = 64
V_HEAD = 16
HEADS = 128
EPS = 1e-6


def output_shape(shape):
    return [shape.batch, HIDDEN]


def supports(shape):
    if shape.s_q != 1:
        return "s_q %d: a decode step has one token per sequence" % shape.s_q
    if shape.kv_dtype != "bf16":
        return "kv_dtype %s: the step writes bf16 cache rows" % shape.kv_dtype
    if shape.h_q <= 0 or HEADS % shape.h_q:
        return "h_q %d does not divide the model's 128 heads" % shape.h_q
    return None


def bf16_to_f32(bits):
    return (np.asarray(bits).astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(x):
    u = np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)
    r = ((u + np.uint32(0x7FFF) + ((u >> 16) & np.uint32(1))) >> 16).astype(np.uint16)
    return np.where((u & np.uint32(0x7FFFFFFF)) > np.uint32(0x7F800000), np.uint16(0x7FC0), r)


def rb(x):
    """Round float32 values to bf16 and back (what a bf16 tensor holds)."""
    return bf16_to_f32(f32_to_bf16(x))


class Layer:
    def __init__(self, args):
        h = args.h_q
        g = np.random.default_rng(int(args.seed) & 0xFFFFFFFFFFFFFFFF)

        def w(*shape, fan_in):
            return rb(g.standard_normal(shape).astype(np.float32) / np.sqrt(fan_in))

        def norm(n):
            return (1.0 + 0.1 * g.standard_normal(n)).astype(np.float32)

        self.x = rb(g.standard_normal((args.batch, HIDDEN)).astype(np.float32))
        self.attn_norm = norm(HIDDEN)
        self.w_dq = w(HIDDEN, Q_LORA, fan_in=HIDDEN)
        self.q_norm = norm(Q_LORA)
        self.w_uq = w(Q_LORA, h * (QK_NOPE + QK_ROPE), fan_in=Q_LORA)
        self.w_uk = w(h, QK_NOPE, KV_LORA, fan_in=QK_NOPE)
        self.w_dkv = w(HIDDEN, KV_LORA + QK_ROPE, fan_in=HIDDEN)
        self.kv_norm = norm(KV_LORA)
        self.w_uv = w(h, KV_LORA, V_HEAD, fan_in=KV_LORA)
        self.w_o = w(h * V_HEAD, HIDDEN, fan_in=h * V_HEAD)
        keys = max(1, args.max_pages * args.page_size)
        inv = 1.0 / (10000.0 ** (np.arange(0, QK_ROPE, 2, dtype=np.float32) / QK_ROPE))
        ang = np.arange(keys, dtype=np.float32)[:, None] * inv[None, :]
        self.cos, self.sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
        self.keys = keys
        self.nbytes = sum(a.nbytes for a in (self.x, self.attn_norm, self.w_dq, self.q_norm,
                                             self.w_uq, self.w_uk, self.w_dkv, self.kv_norm,
                                             self.w_uv, self.w_o, self.cos, self.sin))


_state = {}


def layer(args):
    key = (args.batch, args.h_q, args.max_pages, args.page_size, int(args.seed))
    if _state.get("key") != key:
        _state["key"], _state["layer"] = key, Layer(args)
    return _state["layer"]


def rms(x, w):
    return rb(x * (1.0 / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + EPS)) * w)


def rope(x, cos, sin):
    a, b = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = a * cos - b * sin
    out[..., 1::2] = a * sin + b * cos
    return rb(out)


def _q_and_row(L, args):
    """q [b, h, 576] and the new cache rows [b, 576] (float32 holding bf16 values), positions."""
    b, h = args.batch, args.h_q
    hn = rms(L.x, L.attn_norm)
    sl = np.asarray(args.seqlens, dtype=np.int64)
    pos = np.clip(sl - 1, 0, L.keys - 1)
    cos, sin = L.cos[pos], L.sin[pos]
    cq = rms(rb(hn @ L.w_dq), L.q_norm)
    q = rb(cq @ L.w_uq).reshape(b, h, QK_NOPE + QK_ROPE)
    q_lat = rb(np.einsum("bhn,hnl->bhl", q[..., :QK_NOPE], L.w_uk))
    q_pe = rope(q[..., QK_NOPE:], cos[:, None, :], sin[:, None, :])
    kv = rb(hn @ L.w_dkv)
    row = np.concatenate((rms(kv[:, :KV_LORA], L.kv_norm), rope(kv[:, KV_LORA:], cos, sin)), axis=-1)
    return np.concatenate((q_lat, q_pe), axis=-1), row, sl, pos


def prepare(args):
    return layer(args).nbytes


def pre(args):
    L = layer(args)
    q, row, sl, pos = _q_and_row(L, args)
    args.q[:] = f32_to_bf16(q).reshape(args.q.shape)
    rows = args.kv_cache.reshape(-1, KV_LORA + QK_ROPE)
    ps = args.page_size
    for i in range(args.batch):
        if sl[i] > 0:
            rows[int(args.block_table[i, pos[i] // ps]) * ps + pos[i] % ps] = f32_to_bf16(row[i])


def post(args):
    L = layer(args)
    b, h = args.batch, args.h_q
    o = bf16_to_f32(args.out).reshape(b, h, KV_LORA)
    ov = rb(np.einsum("bhl,hlv->bhv", o, L.w_uv)).reshape(b, h * V_HEAD)
    args.step_out[:] = f32_to_bf16(ov @ L.w_o)


def reference(args):
    """The step in float64 (the attention dense over the visible rows, the new row included)."""
    L = layer(args)
    b, h = args.batch, args.h_q
    q, row, sl, pos = _q_and_row(L, args)
    rows = bf16_to_f32(np.asarray(args.kv_cache).reshape(-1, KV_LORA + QK_ROPE))
    ps = args.page_size
    y = np.zeros((b, HIDDEN), dtype=np.float64)
    for i in range(b):
        n = int(sl[i])
        if n <= 0:
            continue
        j = np.arange(n)
        K = rows[np.asarray(args.block_table[i], dtype=np.int64)[j // ps] * ps + j % ps].astype(np.float64)
        K[n - 1] = row[i]
        s = (q[i].astype(np.float64) @ K.T) * float(args.softmax_scale)
        s -= s.max(axis=-1, keepdims=True)
        p = np.exp(s)
        p /= p.sum(axis=-1, keepdims=True)
        o = p @ K[:, :KV_LORA]
        ov = np.einsum("hl,hlv->hv", o, L.w_uv.astype(np.float64)).reshape(h * V_HEAD)
        y[i] = ov @ L.w_o.astype(np.float64)
    return y.astype(np.float32)
