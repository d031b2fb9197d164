"""deepseek_v3.step - one decode step of DeepSeek-V3's attention block in PyTorch, around the
attention core under test (issue 16). Contract: kernels/python/e2e_step.py.

Shapes (DeepSeek-V3, config.json of deepseek-ai/DeepSeek-V3): hidden 7168, q_lora_rank 1536,
kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128, 128 heads divided by
the tensor-parallel degree, so that the task's h_q is the heads of one rank (h_q 16 = TP 8). One
token per sequence (s_q 1), the batch and the cache lengths of the task.

pre(args), before the core:
  h = RMSNorm(x)                                  x: the step's hidden states [batch, 7168]
  c_q = RMSNorm(h W_DQ)                           [batch, 1536]
  q = c_q W_UQ -> [batch, h_q, 128 + 64]; q_nope, q_pe
  q_lat = q_nope W_UK (per head, [128 -> 512]: W_UK absorbed into the query, a batched product
          over the heads, never a materialized [1536, h_q * 512] product of the two weights)
  args.q = [q_lat, rope(q_pe, pos)]               [batch, 1, h_q, 576], pos = seqlens - 1
  kv = h W_DKV -> [c_kv (512), k_pe (64)]; the cache row [RMSNorm(c_kv), rope(k_pe, pos)] written
          at position pos of each sequence through block_table (the new token's latent row)
post(args), after the core:
  o = args.out W_UV (per head, [512 -> 128]) -> [batch, h_q * 128]; y = o W_O -> args.step_out
          [batch, 7168]
The core reads the cache with the new row in it, as a serving engine's decode step does.

Weights: random N(0, 1/fan_in) bf16 from the task's seed (no downloads), one layer, made once per
task in prepare() and kept until the next task (cached by the buffers' data_ptr()). x is drawn
once per task from the same seed. RMSNorm weights are ones plus small noise; rope is the standard
rotary embedding (theta 10000, interleaved pairs as DeepSeek's complex form), positions read on
the device.

Capture (kernels/python/e2e_step.py): pre() and post() run inside the graph the harness captures
around pre + the core's launch + post. torch's caching allocator does not know about a capture
the harness started, so prepare() captures each of pre and post once into its own CUDA graph
(torch.cuda.CUDAGraph, intermediates in this module's private pool) over the harness's buffers,
and pre()/post() add that graph to the harness's capture as a child graph node (launch it on the
stream when not capturing): no allocation and no host synchronization inside the harness's
region. A sequence of length 0 (an idle slot of the batch) gets no cache row: its write is
redirected to the row of the first sequence that has one, with that sequence's bytes (the same
bytes written twice), all on the device.
"""
import math

import torch

NAME = "deepseek_v3.step"
BACKEND = "cuda"
SUMMARY = ("DeepSeek-V3 attention block, one decode step: RMSNorm, q down/up with W_UK absorbed, "
           "kv down + rope into the paged cache, the core, W_UV, o_proj (PyTorch, CUDA graphs)")

HIDDEN = 7168
Q_LORA = 1536
KV_LORA = 512
QK_NOPE = 128
QK_ROPE = 64
V_HEAD = 128
HEADS_TP1 = 128
EPS = 1e-6
ROPE_THETA = 10000.0


def output_shape(shape):
    """The step output's shape for a task's shape: [batch, HIDDEN] bf16."""
    return [shape.batch, HIDDEN]


def supports(shape):
    if shape.s_q != 1:
        return "s_q %d: a decode step has one token per sequence" % shape.s_q
    if shape.kv_dtype != "bf16":
        return "kv_dtype %s: the step writes bf16 cache rows" % shape.kv_dtype
    if shape.h_q <= 0 or HEADS_TP1 % shape.h_q:
        return "h_q %d does not divide DeepSeek-V3's 128 heads" % shape.h_q
    return None


_state = {}
_cu = None


def _driver():
    global _cu
    if _cu is None:
        import ctypes
        lib = ctypes.CDLL("libcuda.so.1")
        p, u64, sz = ctypes.c_void_p, ctypes.c_uint64, ctypes.c_size_t
        lib.cuGraphInstantiateWithFlags.argtypes = [ctypes.POINTER(p), p, ctypes.c_ulonglong]
        lib.cuGraphLaunch.argtypes = [p, p]
        lib.cuStreamIsCapturing.argtypes = [p, ctypes.POINTER(ctypes.c_int)]
        lib.cuStreamGetCaptureInfo_v2.argtypes = [p, ctypes.POINTER(ctypes.c_int),
                                                  ctypes.POINTER(u64), ctypes.POINTER(p),
                                                  ctypes.POINTER(ctypes.POINTER(p)),
                                                  ctypes.POINTER(sz)]
        lib.cuGraphAddChildGraphNode.argtypes = [ctypes.POINTER(p), p, ctypes.POINTER(p), sz, p]
        lib.cuStreamUpdateCaptureDependencies.argtypes = [p, ctypes.POINTER(p), sz,
                                                          ctypes.c_uint]
        _cu = (ctypes, lib)
    return _cu


def _check(rc, what):
    if rc != 0:
        raise RuntimeError("%s: %s failed with CUresult %d" % (NAME, what, rc))


def _enqueue(entry):
    """Run a captured graph on the current stream, or add it to the capture in progress."""
    _, graph, exe = entry
    ctypes, cu = _driver()
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    status = ctypes.c_int(0)
    _check(cu.cuStreamIsCapturing(stream, ctypes.byref(status)), "cuStreamIsCapturing")
    if status.value == 0:
        _check(cu.cuGraphLaunch(exe, stream), "cuGraphLaunch")
        return
    cap_graph, deps, ndeps, cid = ctypes.c_void_p(), ctypes.POINTER(ctypes.c_void_p)(), \
        ctypes.c_size_t(0), ctypes.c_uint64(0)
    _check(cu.cuStreamGetCaptureInfo_v2(stream, ctypes.byref(status), ctypes.byref(cid),
                                        ctypes.byref(cap_graph), ctypes.byref(deps),
                                        ctypes.byref(ndeps)), "cuStreamGetCaptureInfo")
    node = ctypes.c_void_p()
    _check(cu.cuGraphAddChildGraphNode(ctypes.byref(node), cap_graph, deps, ndeps, graph),
           "cuGraphAddChildGraphNode")
    _check(cu.cuStreamUpdateCaptureDependencies(stream, ctypes.byref(node), 1, 1),
           "cuStreamUpdateCaptureDependencies")


def _rms(x, w):
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + EPS) * w).to(torch.bfloat16)


def _rope(x, cos, sin):
    """x [..., 64] bf16, cos/sin [batch, 32] (broadcast over heads by the caller's view)."""
    xf = x.float().unflatten(-1, (-1, 2))
    a, b = xf[..., 0], xf[..., 1]
    return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).flatten(-2).to(torch.bfloat16)


class _Layer:
    """One layer's weights and the step's own buffers, for one task."""

    def __init__(self, args):
        dev = args.device
        h = args.h_q
        g = torch.Generator(device=dev)
        g.manual_seed(int(args.seed) & 0x7FFFFFFFFFFFFFFF)

        def w(*shape, fan_in):
            t = torch.randn(shape, generator=g, device=dev, dtype=torch.float32)
            return (t * (1.0 / math.sqrt(fan_in))).to(torch.bfloat16)

        def norm(n):
            return 1.0 + 0.1 * torch.randn((n,), generator=g, device=dev, dtype=torch.float32)

        self.x = torch.randn((args.batch, HIDDEN), generator=g, device=dev,
                             dtype=torch.float32).to(torch.bfloat16)
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
        inv = 1.0 / (ROPE_THETA ** (torch.arange(0, QK_ROPE, 2, device=dev, dtype=torch.float32)
                                    / QK_ROPE))
        ang = torch.arange(keys, device=dev, dtype=torch.float32)[:, None] * inv[None, :]
        self.cos, self.sin = torch.cos(ang), torch.sin(ang)
        self.keys = keys
        self.graphs = {}
        self.nbytes = sum(t.numel() * t.element_size() for t in
                          (self.x, self.attn_norm, self.w_dq, self.q_norm, self.w_uq, self.w_uk,
                           self.w_dkv, self.kv_norm, self.w_uv, self.w_o, self.cos, self.sin))


def _positions(L, args):
    sl = args.seqlens.to(torch.int64)
    valid = sl > 0
    pos = torch.clamp(sl - 1, min=0, max=L.keys - 1)
    return valid, pos


def _pre(L, args):
    b, h = args.batch, args.h_q
    hn = _rms(L.x, L.attn_norm)
    valid, pos = _positions(L, args)
    cos, sin = L.cos[pos], L.sin[pos]                                   # [b, 32]
    cq = _rms(hn @ L.w_dq, L.q_norm)
    q = (cq @ L.w_uq).view(b, h, QK_NOPE + QK_ROPE)
    q_nope, q_pe = q[..., :QK_NOPE], q[..., QK_NOPE:]
    q_lat = torch.bmm(q_nope.transpose(0, 1), L.w_uk).transpose(0, 1)  # [b, h, 512]
    args.q.view(b, h, KV_LORA + QK_ROPE)[..., :KV_LORA].copy_(q_lat)
    args.q.view(b, h, KV_LORA + QK_ROPE)[..., KV_LORA:].copy_(
        _rope(q_pe, cos[:, None, :], sin[:, None, :]))
    kv = hn @ L.w_dkv
    row = torch.cat((_rms(kv[:, :KV_LORA], L.kv_norm), _rope(kv[:, KV_LORA:], cos, sin)), dim=-1)
    ps = args.page_size
    page = torch.gather(args.block_table.to(torch.int64), 1, (pos // ps)[:, None])[:, 0]
    idx = page * ps + pos % ps
    # Idle slots (length 0) write the first valid sequence's row to that row's place again.
    first = torch.argmax(valid.to(torch.int32)).view(1)               # on the device, no sync
    idx = torch.where(valid, idx, idx.index_select(0, first))
    row = torch.where(valid[:, None], row, row.index_select(0, first))
    rows = args.kv_cache.view(-1, KV_LORA + QK_ROPE)
    rows.index_copy_(0, idx, row)


def _post(L, args):
    b, h = args.batch, args.h_q
    o = args.out.view(b, h, KV_LORA)
    ov = torch.bmm(o.transpose(0, 1), L.w_uv).transpose(0, 1).reshape(b, h * V_HEAD)
    torch.mm(ov, L.w_o, out=args.step_out)


def _key(args):
    return (args.q.data_ptr(), args.kv_cache.data_ptr(), args.block_table.data_ptr(),
            args.seqlens.data_ptr(), args.out.data_ptr(), args.step_out.data_ptr(), args.batch,
            args.h_q, args.num_pages, args.page_size, args.max_pages, int(args.seed))


_pool = None


def _capture(fn, L, args):
    global _pool
    ctypes, cu = _driver()
    stream = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    side.wait_stream(stream)
    with torch.cuda.stream(side):
        fn(L, args)
    stream.wait_stream(side)
    torch.cuda.synchronize()
    if _pool is None:
        _pool = torch.cuda.graph_pool_handle()
    g = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(g, pool=_pool):
        fn(L, args)
    torch.cuda.synchronize()
    graph = ctypes.c_void_p(g.raw_cuda_graph())
    exe = ctypes.c_void_p()
    _check(cu.cuGraphInstantiateWithFlags(ctypes.byref(exe), graph, 0), "cuGraphInstantiate")
    return (g, graph, exe)


def _layer(args):
    """The task's layer (made on the first call with these shapes and this seed)."""
    key = (args.batch, args.h_q, args.max_pages, args.page_size, int(args.seed))
    L = _state.get("layer")
    if L is None or _state.get("key") != key:
        _state.clear()
        torch.cuda.synchronize()
        _state["layer"] = L = _Layer(args)
        _state["key"] = key
    return L


def prepare(args):
    """Weights for this task, then pre and post captured over these buffers (outside timing)."""
    L = _layer(args)
    k = _key(args)
    if k not in L.graphs:
        L.graphs[k] = (_capture(_pre, L, args), _capture(_post, L, args))
    return L.nbytes


def pre(args):
    _enqueue(_layer(args).graphs[_key(args)][0])


def post(args):
    _enqueue(_layer(args).graphs[_key(args)][1])


def reference(args):
    """The step in float32 from the same weights and inputs, the attention core included (dense,
    float64 softmax), without touching the harness's buffers: the step output as float32
    [batch, HIDDEN] on the host. Reads the cache as it is before pre() wrote into it, and
    computes the new row itself."""
    L = _layer(args)
    b, h = args.batch, args.h_q
    f = torch.float32
    hn = _rms(L.x, L.attn_norm).float()
    valid, pos = _positions(L, args)
    cos, sin = L.cos[pos], L.sin[pos]
    cq = _rms((hn @ L.w_dq.float()).to(torch.bfloat16), L.q_norm).float()
    q = (cq @ L.w_uq.float()).view(b, h, QK_NOPE + QK_ROPE)
    q_lat = torch.einsum("bhn,hnl->bhl", q[..., :QK_NOPE], L.w_uk.float())
    q_pe = _rope(q[..., QK_NOPE:], cos[:, None, :], sin[:, None, :]).float()
    qf = torch.cat((q_lat.to(torch.bfloat16).float(), q_pe), dim=-1)  # the bf16 q the core reads
    kv = hn @ L.w_dkv.float()
    row = torch.cat((_rms(kv[:, :KV_LORA].to(torch.bfloat16), L.kv_norm),
                     _rope(kv[:, KV_LORA:].to(torch.bfloat16), cos, sin)), dim=-1).float()
    rows = args.kv_cache.view(-1, KV_LORA + QK_ROPE)
    ps = args.page_size
    y = torch.zeros((b, HIDDEN), dtype=f, device=args.device)
    w_uv, w_o = L.w_uv.float(), L.w_o.float()
    for i in range(b):
        n = int(args.seqlens[i])
        if n <= 0:
            continue
        j = torch.arange(n, device=args.device)
        idx = args.block_table[i].to(torch.int64)[j // ps] * ps + j % ps
        K = rows[idx].double()
        K[n - 1] = row[i].double()
        s = (qf[i].double() @ K.T) * float(args.softmax_scale)          # [h, n]
        p = torch.softmax(s, dim=-1)
        o = (p @ K[:, :KV_LORA]).to(torch.bfloat16).float()            # the core's bf16 out
        ov = torch.einsum("hl,hlv->hv", o, w_uv).reshape(h * V_HEAD)
        y[i] = ov.to(torch.bfloat16).float() @ w_o
    return y.cpu().numpy()
