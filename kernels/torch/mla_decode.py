"""torch.mla_decode - MLA decode (absorbed form) in plain PyTorch under torch.compile: the reference
a user without a kernel library would pick (issue 11). Operator and layouts: kernels/mla_decode.h;
Python contract: kernels/python/mla_decode.py.

Computation (static shapes per task; every row of every sequence up to max_pages * page_size):
  rows j of sequence b are gathered through block_table (an index clamped to 0 where j >= seqlen,
  so the sentinel is never used as an address), fp8 codes decoded exactly (fnuz, times kv_scale),
  gathered rows at or past the length replaced by 0 with torch.where before any arithmetic (they
  hold NaN), scores = q . K^T as a bf16 GEMM with fp32 output, causal and length mask, softmax in
  fp32, out = P . V (P in bf16, fp32 output), lse natural log; no visible key -> out 0, lse +inf.

Capture safety (the choice, documented as the brief asks): torch.compile'd code allocates its
intermediates from the caching allocator, which is not safe under a capture the harness starts (the
allocator does not know about it, and memory freed after the launch would be reused while the
harness's graph still writes it). So prepare() compiles the function, runs it twice, and captures
one call into a CUDA graph (torch.cuda.CUDAGraph, keep_graph=True) over the harness's own buffers,
its intermediates in a private memory pool owned by this module (shared by all of this module's
graphs: they only ever run one at a time on the worker's stream, and the pool holds scratch only,
never an output), and instantiates it through the CUDA driver. launch() enqueues that graph on the
current stream (the harness's): cuGraphLaunch when the stream is not capturing; when it is (the
harness capturing launch()), the graph is added to the capture as a child graph node
(cuStreamGetCaptureInfo + cuGraphAddChildGraphNode + cuStreamUpdateCaptureDependencies), since
torch's CUDAGraph.replay() refuses to run under a capture. No allocation, no host sync either way.
"""
import os

import torch

NAME = "torch.mla_decode"
BACKEND = "cuda"
KV_DTYPES = ("bf16", "fp8_e4m3_fnuz")
SUMMARY = ("absorbed MLA decode in PyTorch (torch.compile, static shapes per task), replayed as a "
           "CUDA graph captured in prepare()")

D_QK = 576
D_V = 512

# VS_TORCH_MLA_COMPILE=0 runs the same function eagerly (still captured): for debugging only.
COMPILE = os.environ.get("VS_TORCH_MLA_COMPILE", "1") != "0"


def configs(arch):
    if isinstance(arch, str) and arch.startswith("sm_"):
        return [{"name": "inductor-graph", "block_n": 0, "block_h": 0, "num_splits": 0,
                 "num_warps": 0, "num_stages": 0}]
    return []


def supports(shape):
    if shape.kv_dtype not in KV_DTYPES:
        return "kv_dtype %s: torch.mla_decode runs bf16 and fp8_e4m3_fnuz" % shape.kv_dtype
    return None


def workspace_size(shape, config):
    return 0


def _fnuz_to_float(codes):
    """fp8_e4m3_fnuz codes (uint8) -> float32, exact; 0x80 -> NaN."""
    c = codes.to(torch.int32)
    e = (c >> 3) & 15
    m = c & 7
    norm = (((e + 119) << 23) | (m << 20)).view(torch.float32)
    mag = torch.where(e == 0, m.to(torch.float32) * 0.0009765625, norm)
    v = torch.where((c & 0x80) != 0, -mag, mag)
    return torch.where(c == 0x80, torch.full_like(v, float("nan")), v)


# torch.bmm(..., out_dtype=torch.float32) (torch >= 2.9): bf16 operands, fp32 output. prepare()
# probes it once and falls back to fp32 operands (exact, slower) where it is missing.
_BMM_OUT_DTYPE = None


def _bmm_f32(a, b):
    """bf16 x bf16 -> fp32 output (fp32 accumulation)."""
    if _BMM_OUT_DTYPE:
        return torch.bmm(a, b, out_dtype=torch.float32)
    return torch.bmm(a.float(), b.float())


def _probe_bmm(device):
    global _BMM_OUT_DTYPE
    if _BMM_OUT_DTYPE is None:
        try:
            x = torch.ones((1, 16, 16), dtype=torch.bfloat16, device=device)
            _BMM_OUT_DTYPE = torch.bmm(x, x, out_dtype=torch.float32).dtype == torch.float32
        except (TypeError, RuntimeError):
            _BMM_OUT_DTYPE = False


def _decode(q, kv_cache, block_table, seqlens, out, lse, softmax_scale, kv_scale, fp8, page_size,
            max_pages):
    batch, s_q, h_q, _ = q.shape
    rows = s_q * h_q
    keys = max_pages * page_size
    dev = q.device
    j = torch.arange(keys, device=dev)
    pages = block_table[:, j // page_size].to(torch.int64)             # [b, keys]
    visible = j[None, :] < seqlens[:, None].to(torch.int64)           # [b, keys]
    idx = torch.where(visible, pages * page_size + (j % page_size)[None, :], 0)
    kv = kv_cache.reshape(-1, D_QK)[idx]                                # [b, keys, 576]
    if fp8:
        kv = _fnuz_to_float(kv).to(torch.bfloat16)
    kv = torch.where(visible[:, :, None], kv, torch.zeros((), dtype=kv.dtype, device=dev))
    qf = q.reshape(batch, rows, D_QK)
    s = _bmm_f32(qf, kv.transpose(1, 2)) * (softmax_scale * kv_scale)   # [b, rows, keys]
    qi = torch.arange(rows, device=dev) // h_q
    lim = seqlens[:, None].to(torch.int64) - s_q + 1 + qi[None, :]     # [b, rows]
    s = torch.where(j[None, None, :] < lim[:, :, None], s, float("-inf"))
    m = s.amax(dim=-1, keepdim=True)
    m = torch.where(m == float("-inf"), torch.zeros_like(m), m)
    e = torch.exp(s - m)
    l = e.sum(dim=-1, keepdim=True)
    empty = l == 0
    l1 = torch.where(empty, torch.ones_like(l), l)
    p = (e / l1).to(torch.bfloat16)
    o = _bmm_f32(p, kv[:, :, :D_V]) * kv_scale                          # [b, rows, 512]
    lse_rows = torch.where(empty, float("inf"), m + torch.log(l1)).reshape(batch, s_q, h_q)
    out.copy_(o.reshape(batch, s_q, h_q, D_V).to(torch.bfloat16))
    lse.copy_(lse_rows.transpose(1, 2))


_compiled = None
_graphs = {}
_pool = None
_cu = None


def _driver():
    """libcuda through ctypes: the five calls launch() needs, each checked."""
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
        lib.cuPointerGetAttribute.argtypes = [p, ctypes.c_int, ctypes.c_uint64]
        _cu = (ctypes, lib)
    return _cu


def _check(rc, what):
    if rc != 0:
        raise RuntimeError("%s: %s failed with CUresult %d" % (NAME, what, rc))


def _fn():
    global _compiled
    if _compiled is None:
        if COMPILE:
            import torch._dynamo
            cfg = torch._dynamo.config
            # One static-shape compile per task: lift the recompile limits (default 8).
            for name in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                         "accumulated_recompile_limit"):
                if hasattr(cfg, name):
                    setattr(cfg, name, max(getattr(cfg, name), 4096))
            _compiled = torch.compile(_decode, dynamic=False)
        else:
            _compiled = _decode
    return _compiled


def _key(args):
    return (args.q.data_ptr(), args.kv_cache.data_ptr(), args.block_table.data_ptr(),
            args.seqlens.data_ptr(), args.out.data_ptr(), args.lse.data_ptr(), args.batch, args.s_q,
            args.h_q, args.num_pages, args.page_size, args.max_pages, args.kv_dtype,
            float(args.softmax_scale), float(args.kv_scale))


def prepare(args, config):
    """Compiles the decode for these shapes and captures it over the harness's buffers."""
    global _pool
    key = _key(args)
    if key in _graphs:
        return
    fp8 = args.kv_dtype == "fp8_e4m3_fnuz"
    if args.kv_dtype not in KV_DTYPES:
        raise ValueError("%s: kv_dtype %s not supported" % (NAME, args.kv_dtype))
    ctypes, cu = _driver()
    # CU_POINTER_ATTRIBUTE_DEVICE_POINTER (2): a page-offset task's cache base lies below its stored
    # pages, outside every allocation; the Triton kernels inductor generates are launched through
    # Triton's launcher, which refuses such a pointer (on the H200, 2026-12-01: "Failed during launch")
    val = ctypes.c_uint64(0)
    if cu.cuPointerGetAttribute(ctypes.byref(val), 2, ctypes.c_uint64(args.kv_cache.data_ptr())) != 0:
        raise ValueError("%s: the cache base %#x lies outside every allocation (a page-offset task): "
                         "the Triton kernels torch.compile generates cannot take it"
                         % (NAME, args.kv_cache.data_ptr()))
    call_args = (args.q, args.kv_cache, args.block_table, args.seqlens, args.out, args.lse,
                 float(args.softmax_scale), float(args.kv_scale) if fp8 else 1.0, fp8,
                 int(args.page_size), int(args.max_pages))
    _probe_bmm(args.q.device)
    fn = _fn()
    stream = torch.cuda.current_stream()
    side = torch.cuda.Stream()
    side.wait_stream(stream)
    with torch.cuda.stream(side):
        for _ in range(2):
            fn(*call_args)
    stream.wait_stream(side)
    torch.cuda.synchronize()
    if _pool is None:
        _pool = torch.cuda.graph_pool_handle()
    g = torch.cuda.CUDAGraph(keep_graph=True)
    with torch.cuda.graph(g, pool=_pool):
        fn(*call_args)
    torch.cuda.synchronize()
    graph = ctypes.c_void_p(g.raw_cuda_graph())
    exe = ctypes.c_void_p()
    _check(cu.cuGraphInstantiateWithFlags(ctypes.byref(exe), graph, 0), "cuGraphInstantiate")
    _graphs[key] = (g, graph, exe)


def launch(args, config):
    entry = _graphs.get(_key(args))
    if entry is None:
        raise RuntimeError("%s: launch() before prepare() for these buffers" % NAME)
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
