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
never an output), and instantiates it through the runtime (below). launch() enqueues that graph on
the current stream (the harness's): cuGraphLaunch when the stream is not capturing; when it is (the
harness capturing launch()), the graph is added to the capture as a child graph node
(cuStreamGetCaptureInfo + cuGraphAddChildGraphNode + cuStreamUpdateCaptureDependencies), since
torch's CUDAGraph.replay() refuses to run under a capture. No allocation, no host sync either way.

ROCm (gfx942, gfx950): the same module, the same BACKEND "cuda" (the contract's name for "GPU
buffers as torch tensors", kernels/python/mla_decode.py; harness/pyimpl.c runs every BACKEND but
"cpu" on its GPU backend, and torch for ROCm names its HIP device "cuda"). _driver() picks the
runtime by torch.version.hip: libcuda, or the libamdhip64 torch itself loaded (found in
/proc/self/maps: its streams and graphs belong to that copy), with the HIP twins of every call
(hipGraphInstantiateWithFlags, hipGraphLaunch, hipStreamIsCapturing, hipStreamGetCaptureInfo_v2,
hipGraphAddChildGraphNode, hipStreamUpdateCaptureDependencies, hipPointerGetAttribute) and each
runtime's enum values (RUNTIMES). That path is written against the HIP headers (Debian's HIP 5.2,
Triton's bundled HIP 7.1, ROCm's graph-management reference) and has NOT run on an MI300X (none is
lent): its first device run is its test. It also assumes what torch for ROCm documents for CUDA
graphs: CUDAGraph(keep_graph=True).raw_cuda_graph() returning the hipGraph_t, Stream.cuda_stream the
hipStream_t.

The sparse form (ABI 3, DeepSeek Sparse Attention; kernels/mla_decode.h, FlashMLA's
tests/ref.py::ref_sparse_attn_decode), every cache format (bf16, fp8_ds_mla, fp8_model1 and the fnuz
twins), with topk_length, attn_sink and the extra cache; static shapes per task, [b, s_q, T] entries
with T = topk + extra_topk:
  entry t of row (b, i) is valid when its index r != -1 (r >= 0) and t < topk_length[b] (when
  given); an invalid entry gathers row 0 (never its own address) and its decoded row is replaced by
  0 with torch.where before any arithmetic (unselected rows hold NaN); the rows are gathered from the
  cache's bytes by page r // page_size and slot r % page_size and decoded exactly in torch (e4m3fn or
  e4m3fnuz codes times the fp32 or e8m0 scale of their block, the bf16 RoPE values; the byte layouts
  of kernels/mla_numeric.h), then rounded to bf16 (exact for power-of-two scales, as FlashMLA's
  kernels dequantize); the extra cache's rows are appended to the same softmax; scores = q . K^T as
  a bf16 GEMM with fp32 output over d_qk, invalid entries -inf, softmax in fp32, out = P . V over the
  first d_v values (P in bf16), lse natural log; attn_sink: out *= 1 / (1 + exp(sink[h] - lse)), lse
  without the sink; no valid entry -> out 0, lse +inf (sink or not). Capture safety as above: the
  indices, topk_length and extra_topk_length are read on the device only.
"""
import os

import torch

NAME = "torch.mla_decode"
BACKEND = "cuda"
FORMS = ("dense", "sparse")
KV_DTYPES = ("bf16", "fp8_e4m3_fnuz", "fp8_ds_mla", "fp8_ds_mla_fnuz", "fp8_model1", "fp8_model1_fnuz")
DENSE_KV_DTYPES = ("bf16", "fp8_e4m3_fnuz")
SPARSE_KV_DTYPES = ("bf16", "fp8_ds_mla", "fp8_ds_mla_fnuz", "fp8_model1", "fp8_model1_fnuz")
SUMMARY = ("absorbed MLA decode in PyTorch, dense and sparse (DSA) forms (torch.compile, static shapes "
           "per task), replayed as a CUDA graph captured in prepare()")

D_QK = 576
D_V = 512
D_QK_MODEL1 = 512      # fp8_model1: 448 latent + 64 RoPE values, V the whole row
DS_MLA_TOKEN = 656     # fp8_ds_mla: 512 codes, 4 fp32 scales, 64 bf16 RoPE values
MODEL1_ROW = 576       # fp8_model1: 448 codes + 64 bf16 RoPE values, then the page's scale groups
MODEL1_SCALES = 8      # 7 e8m0 scales and one unused byte per token

# VS_TORCH_MLA_COMPILE=0 runs the same function eagerly (still captured): for debugging only.
COMPILE = os.environ.get("VS_TORCH_MLA_COMPILE", "1") != "0"


# AMD generations this module plans for: torch.compile for ROCm generates Triton kernels for them
# (written against the HIP headers, not run on an MI300X: see "ROCm" above).
AMD_ARCHS = ("gfx942", "gfx950")


def configs(arch):
    """One config ("inductor-graph": torch.compile picks its kernels) for sm_* and AMD_ARCHS."""
    if isinstance(arch, str) and (arch.startswith("sm_") or arch in AMD_ARCHS):
        return [{"name": "inductor-graph", "block_n": 0, "block_h": 0, "num_splits": 0,
                 "num_warps": 0, "num_stages": 0}]
    return []


def _topk(shape):
    return int(getattr(shape, "topk", 0) or 0)


def d_qk_of(kv_dtype):
    """d_qk of a cache format: 512 for fp8_model1(_fnuz), else 576 (kernels/mla_decode.h)."""
    return D_QK_MODEL1 if kv_dtype.startswith("fp8_model1") else D_QK


def page_bytes_of(kv_dtype, page_size):
    """Bytes of one page of a block-scaled format (mla_kv_page_bytes()): fp8_model1 pads to 576."""
    if kv_dtype.startswith("fp8_ds_mla"):
        return page_size * DS_MLA_TOKEN
    b = page_size * (MODEL1_ROW + MODEL1_SCALES)
    return (b + 575) // 576 * 576


def supports(shape):
    if _topk(shape) <= 0:
        if shape.kv_dtype not in DENSE_KV_DTYPES:
            return "kv_dtype %s: the dense form reads bf16 or fp8_e4m3_fnuz" % shape.kv_dtype
        return None
    if shape.kv_dtype not in SPARSE_KV_DTYPES:
        return "kv_dtype %s: the sparse form reads %s" % (shape.kv_dtype, ", ".join(SPARSE_KV_DTYPES))
    d_qk, d_v = getattr(shape, "d_qk", None), getattr(shape, "d_v", None)
    if d_qk is not None and (d_qk != d_qk_of(shape.kv_dtype) or d_v != D_V):
        return "d_qk %s, d_v %s: kv_dtype %s has %d and %d" % (d_qk, d_v, shape.kv_dtype,
                                                                d_qk_of(shape.kv_dtype), D_V)
    if shape.page_size < 1 or int(getattr(shape, "extra_topk", 0) or 0) < 0:
        return "page_size %d, extra_topk %s: out of contract" % (shape.page_size,
                                                                  getattr(shape, "extra_topk", 0))
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


def _bits_f32(bits):
    """int32 bit patterns -> float32 (a bitcast)."""
    return bits.view(torch.float32)


def _e4m3fn_to_float(codes):
    """fp8 e4m3fn (OCP) codes (uint8) -> float32, exact; S.1111.111 -> NaN (mla_numeric.h)."""
    c = codes.to(torch.int32)
    e = (c >> 3) & 15
    m = c & 7
    norm = _bits_f32(((e + 120) << 23) | (m << 20))
    mag = torch.where(e == 0, m.to(torch.float32) * 0.001953125, norm)
    v = torch.where((c & 0x80) != 0, -mag, mag)
    return torch.where((c & 0x7F) == 0x7F, torch.full_like(v, float("nan")), v)


def _signed_byte(c):
    """uint8 values held in int32 -> their int8 value (so that no shift below overflows int32)."""
    return (c ^ 0x80) - 0x80


def _le_f32(b4):
    """[..., 4] little-endian bytes (uint8) -> float32 [...]."""
    c = b4.to(torch.int32)
    hi = _signed_byte(c[..., 3]) * 16777216                   # byte 3 << 24, sign included
    return _bits_f32(hi | c[..., 0] | (c[..., 1] << 8) | (c[..., 2] << 16))


def _le_bf16(b2n):
    """[..., 2n] little-endian bf16 bytes (uint8) -> float32 [..., n] (exact)."""
    c = b2n.to(torch.int32).reshape(*b2n.shape[:-1], -1, 2)
    half = c[..., 0] | (_signed_byte(c[..., 1]) * 256)        # the bf16 bits as an int16 value
    return _bits_f32(half * 65536)


def _e8m0_to_float(codes):
    """e8m0 scale codes (uint8) -> float32: 2^(c - 127); 0xFF -> NaN; 0 -> 2^-127 (subnormal)."""
    c = codes.to(torch.int32)
    v = _bits_f32(torch.where(c == 0, torch.full_like(c, 0x00400000), c << 23))
    return torch.where(c == 0xFF, torch.full_like(v, float("nan")), v)


def _gather_rows(cache, idx, valid, kv_dtype, page_size, num_pages):
    """
    The decoded rows named by idx [b, s_q, T] (int32): bf16 [b, s_q, T, d_qk], exactly 0 where
    valid is False (such an entry gathers row 0 of page 0, whatever it holds, and drops it).
    cache: bf16 [num_pages, page_size, 1, 576], or the bytes of a block-scaled format (uint8,
    num_pages pages of page_bytes_of(kv_dtype, page_size) bytes, any shape with that many bytes).
    """
    safe = torch.where(valid, idx.to(torch.int64), 0)
    if kv_dtype == "bf16":
        rows = cache.reshape(-1, D_QK)[safe]
    else:
        fp8 = _fnuz_to_float if kv_dtype.endswith("_fnuz") else _e4m3fn_to_float
        pages = cache.reshape(num_pages, page_bytes_of(kv_dtype, page_size))
        page, slot = safe // page_size, safe % page_size
        lead = safe.shape
        if kv_dtype.startswith("fp8_ds_mla"):
            tok = pages[:, :page_size * DS_MLA_TOKEN].reshape(num_pages, page_size, DS_MLA_TOKEN)[page, slot]
            scale = _le_f32(tok[..., 512:528].reshape(*lead, 4, 4))                  # [..., 4]
            nope = (fp8(tok[..., :512]).reshape(*lead, 4, 128) * scale[..., None]).reshape(*lead, 512)
            rope = _le_bf16(tok[..., 528:DS_MLA_TOKEN])
        else:
            tok = pages[:, :page_size * MODEL1_ROW].reshape(num_pages, page_size, MODEL1_ROW)[page, slot]
            sc = pages[:, page_size * MODEL1_ROW:page_size * (MODEL1_ROW + MODEL1_SCALES)]
            scale = _e8m0_to_float(sc.reshape(num_pages, page_size, MODEL1_SCALES)[page, slot][..., :7])
            nope = (fp8(tok[..., :448]).reshape(*lead, 7, 64) * scale[..., None]).reshape(*lead, 448)
            rope = _le_bf16(tok[..., 448:MODEL1_ROW])
        rows = torch.cat([nope, rope], dim=-1).to(torch.bfloat16)
    return torch.where(valid[..., None], rows, torch.zeros((), dtype=rows.dtype, device=rows.device))


def _valid(idx, topk_length):
    """Entries that name a row: index >= 0 (the contract's -1) and t < topk_length[b] when given."""
    valid = idx >= 0
    if topk_length is not None:
        t = torch.arange(idx.shape[-1], device=idx.device)
        valid = valid & (t[None, None, :] < topk_length.to(torch.int64)[:, None, None])
    return valid


def _decode_sparse(q, kv_cache, indices, topk_length, attn_sink, extra_kv_cache, extra_indices,
                   extra_topk_length, out, lse, softmax_scale, kv_dtype, page_size, num_pages,
                   extra_page_size, extra_num_pages):
    batch, s_q, h_q, d_qk = q.shape
    d_v = out.shape[-1]
    valid = _valid(indices, topk_length)
    kv = _gather_rows(kv_cache, indices, valid, kv_dtype, page_size, num_pages)
    if extra_indices is not None:
        extra_valid = _valid(extra_indices, extra_topk_length)
        extra = _gather_rows(extra_kv_cache, extra_indices, extra_valid, kv_dtype, extra_page_size,
                             extra_num_pages)
        kv = torch.cat([kv, extra], dim=2)
        valid = torch.cat([valid, extra_valid], dim=2)
    entries = kv.shape[2]
    rows = batch * s_q
    kf = kv.reshape(rows, entries, d_qk)
    s = _bmm_f32(q.reshape(rows, h_q, d_qk), kf.transpose(1, 2)) * softmax_scale   # [rows, h_q, T]
    s = torch.where(valid.reshape(rows, 1, entries), s, float("-inf"))
    m = s.amax(dim=-1, keepdim=True)
    m = torch.where(m == float("-inf"), torch.zeros_like(m), m)
    e = torch.exp(s - m)
    l = e.sum(dim=-1, keepdim=True)
    empty = l == 0
    l1 = torch.where(empty, torch.ones_like(l), l)
    p = (e / l1).to(torch.bfloat16)
    o = _bmm_f32(p, kf[:, :, :d_v])                                                  # [rows, h_q, d_v]
    lse_rows = torch.where(empty, float("inf"), m + torch.log(l1))                   # [rows, h_q, 1]
    if attn_sink is not None:
        sink = attn_sink.to(torch.float32)[None, :, None]
        f = torch.where(empty, 0.0, 1.0 / (1.0 + torch.exp(sink - lse_rows)))
        o = o * f
    out.copy_(o.reshape(batch, s_q, h_q, d_v).to(torch.bfloat16))
    lse.copy_(lse_rows.reshape(batch, s_q, h_q).transpose(1, 2))


_compiled = None
_compiled_sparse = None
_graphs = {}
_pool = None
_cu = None

# The graph and stream calls prepare() and launch() make, in each runtime torch can be built for:
# the CUDA driver (libcuda, cuda.h of CUDA 13.0) and the HIP runtime (libamdhip64; prototypes and
# enum values from Debian's HIP 5.2 headers, /usr/include/hip/hip_runtime_api.h and driver_types.h,
# unchanged in the HIP 7.1 headers Triton 3.9 bundles, triton/backends/amd/include/hip/, and in
# ROCm's "Graph management" reference, rocm.docs.amd.com/projects/HIP/en/latest/reference/
# hip_runtime_api/modules/graph_management.html). The two take the same arguments in the same
# order; the enum values are the same too, but are written per runtime so that neither is assumed:
#   capture status "none"            CU_STREAM_CAPTURE_STATUS_NONE 0, hipStreamCaptureStatusNone 0
#   set the capture's dependencies   CU_STREAM_SET_CAPTURE_DEPENDENCIES 1,
#                                    hipStreamSetCaptureDependencies 1 (Add is 0 in both)
#   a pointer's device address       CU_POINTER_ATTRIBUTE_DEVICE_POINTER 3,
#                                    HIP_POINTER_ATTRIBUTE_DEVICE_POINTER 3 (CONTEXT 1, MEMORY_TYPE 2)
#   success                          CUDA_SUCCESS 0, hipSuccess 0
# The HIP path is written against those headers and has not run on an MI300X (none is lent).
RUNTIMES = {
    "cuda": {
        "libraries": ("libcuda.so.1",),
        "error": "CUresult",
        "graph_instantiate": "cuGraphInstantiateWithFlags",
        "graph_launch": "cuGraphLaunch",
        "stream_is_capturing": "cuStreamIsCapturing",
        "stream_get_capture_info": "cuStreamGetCaptureInfo_v2",
        "graph_add_child_graph_node": "cuGraphAddChildGraphNode",
        "stream_update_capture_dependencies": "cuStreamUpdateCaptureDependencies",
        "pointer_get_attribute": "cuPointerGetAttribute",
        "CAPTURE_STATUS_NONE": 0,
        "SET_CAPTURE_DEPENDENCIES": 1,
        "POINTER_ATTRIBUTE_DEVICE_POINTER": 3,
    },
    "hip": {
        "libraries": ("libamdhip64.so", "libamdhip64.so.7", "libamdhip64.so.6", "libamdhip64.so.5"),
        "error": "hipError_t",
        "graph_instantiate": "hipGraphInstantiateWithFlags",
        "graph_launch": "hipGraphLaunch",
        "stream_is_capturing": "hipStreamIsCapturing",
        "stream_get_capture_info": "hipStreamGetCaptureInfo_v2",
        "graph_add_child_graph_node": "hipGraphAddChildGraphNode",
        "stream_update_capture_dependencies": "hipStreamUpdateCaptureDependencies",
        "pointer_get_attribute": "hipPointerGetAttribute",
        "CAPTURE_STATUS_NONE": 0,
        "SET_CAPTURE_DEPENDENCIES": 1,
        "POINTER_ATTRIBUTE_DEVICE_POINTER": 3,
    },
}
CALLS = ("graph_instantiate", "graph_launch", "stream_is_capturing", "stream_get_capture_info",
         "graph_add_child_graph_node", "stream_update_capture_dependencies", "pointer_get_attribute")


def runtime_name(torch_module=None):
    """'hip' for a torch built for ROCm (torch.version.hip set), else 'cuda'."""
    t = torch if torch_module is None else torch_module
    return "hip" if getattr(getattr(t, "version", None), "hip", None) else "cuda"


def _mapped_library(stem, maps_text=None):
    """
    The path of a library named stem* already mapped into this process (/proc/self/maps), or None.
    The HIP runtime must be the copy torch loaded (its streams and graphs are that copy's objects;
    a second copy, e.g. /opt/rocm's beside the wheel's torch/lib one, would not know them).
    """
    if maps_text is None:
        try:
            with open("/proc/self/maps") as f:
                maps_text = f.read()
        except OSError:
            return None
    for line in maps_text.splitlines():
        fields = line.split(None, 5)          # address perms offset dev inode [path]
        path = fields[5].strip() if len(fields) == 6 else ""
        if path.startswith("/") and os.path.basename(path).startswith(stem):
            return path
    return None


class _Runtime:
    """The calls of RUNTIMES[name] from an opened library, argument types set (ctypes)."""

    def __init__(self, name, lib):
        import ctypes as c
        t = RUNTIMES[name]
        self.name, self.error, self.lib, self.ctypes = name, t["error"], lib, c
        self.CAPTURE_STATUS_NONE = t["CAPTURE_STATUS_NONE"]
        self.SET_CAPTURE_DEPENDENCIES = t["SET_CAPTURE_DEPENDENCIES"]
        self.POINTER_ATTRIBUTE_DEVICE_POINTER = t["POINTER_ATTRIBUTE_DEVICE_POINTER"]
        p, u64, sz = c.c_void_p, c.c_uint64, c.c_size_t
        argtypes = {
            # (exec*, graph, unsigned long long flags)
            "graph_instantiate": [c.POINTER(p), p, c.c_ulonglong],
            # (exec, stream)
            "graph_launch": [p, p],
            # (stream, status*): enum, an int
            "stream_is_capturing": [p, c.POINTER(c.c_int)],
            # (stream, status*, unsigned long long id*, graph*, const node** deps, size_t* ndeps)
            "stream_get_capture_info": [p, c.POINTER(c.c_int), c.POINTER(u64), c.POINTER(p),
                                        c.POINTER(c.POINTER(p)), c.POINTER(sz)],
            # (node*, graph, const node* deps, size_t ndeps, child graph)
            "graph_add_child_graph_node": [c.POINTER(p), p, c.POINTER(p), sz, p],
            # (stream, node* deps, size_t ndeps, unsigned int flags)
            "stream_update_capture_dependencies": [p, c.POINTER(p), sz, c.c_uint],
            # (void* data, enum attribute, device pointer)
            "pointer_get_attribute": [p, c.c_int, c.c_uint64],
        }
        self.symbols = {}
        for call in CALLS:
            fn = getattr(lib, t[call])
            fn.argtypes = argtypes[call]
            fn.restype = c.c_int
            setattr(self, call, fn)
            self.symbols[call] = t[call]


def _open_runtime(name, cdll=None, maps_text=None):
    """
    Opens the runtime `name` ('cuda' or 'hip'): cuda: libcuda.so.1 (the driver, one per system);
    hip: the libamdhip64 torch has mapped (see _mapped_library), else the first of RUNTIMES' names
    that loads. cdll opens a library by path or name (ctypes.CDLL by default; tests pass a fake).
    """
    import ctypes
    opener = cdll or ctypes.CDLL
    names = list(RUNTIMES[name]["libraries"])
    if name == "hip":
        mapped = _mapped_library("libamdhip64.so", maps_text)
        if mapped:
            names.insert(0, mapped)
    errors = []
    for lib_name in names:
        try:
            return _Runtime(name, opener(lib_name))
        except (OSError, AttributeError) as e:         # not found; a call missing from it
            errors.append("%s: %s" % (lib_name, e))
    raise RuntimeError("%s: the %s runtime does not load (%s)" % (NAME, name, "; ".join(errors)))


def _driver():
    """The runtime of this torch (runtime_name()), opened once: the calls prepare() and launch() make."""
    global _cu
    if _cu is None:
        _cu = _open_runtime(runtime_name())
    return _cu


def _check(rt, rc, what):
    if rc != 0:
        raise RuntimeError("%s: %s failed with %s %d" % (NAME, what, rt.error, rc))


def _compile(fn):
    if not COMPILE:
        return fn
    import torch._dynamo
    cfg = torch._dynamo.config
    # One static-shape compile per task: lift the recompile limits (default 8).
    for name in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                 "accumulated_recompile_limit"):
        if hasattr(cfg, name):
            setattr(cfg, name, max(getattr(cfg, name), 4096))
    return torch.compile(fn, dynamic=False)


def _fn():
    global _compiled
    if _compiled is None:
        _compiled = _compile(_decode)
    return _compiled


def _fn_sparse():
    global _compiled_sparse
    if _compiled_sparse is None:
        _compiled_sparse = _compile(_decode_sparse)
    return _compiled_sparse


def _ptr(t):
    return t.data_ptr() if t is not None else 0


def _key(args):
    if _topk(args) > 0:
        return (_ptr(args.q), _ptr(args.kv_cache), _ptr(args.indices), _ptr(args.topk_length),
                _ptr(args.attn_sink), _ptr(getattr(args, "extra_kv_cache", None)),
                _ptr(getattr(args, "extra_indices", None)),
                _ptr(getattr(args, "extra_topk_length", None)), _ptr(args.out), _ptr(args.lse),
                args.batch, args.s_q, args.h_q, args.num_pages, args.page_size, args.kv_dtype,
                _topk(args), int(getattr(args, "extra_topk", 0) or 0),
                int(getattr(args, "extra_num_pages", 0) or 0),
                int(getattr(args, "extra_page_size", 0) or 0), float(args.softmax_scale))
    return (args.q.data_ptr(), args.kv_cache.data_ptr(), args.block_table.data_ptr(),
            args.seqlens.data_ptr(), args.out.data_ptr(), args.lse.data_ptr(), args.batch, args.s_q,
            args.h_q, args.num_pages, args.page_size, args.max_pages, args.kv_dtype,
            float(args.softmax_scale), float(args.kv_scale))


def _call(args):
    """The function this task runs and its arguments (the harness's buffers, static scalars)."""
    if _topk(args) > 0:
        extra = int(getattr(args, "extra_topk", 0) or 0) > 0
        return _fn_sparse(), (
            args.q, args.kv_cache, args.indices, args.topk_length, args.attn_sink,
            args.extra_kv_cache if extra else None, args.extra_indices if extra else None,
            args.extra_topk_length if extra else None, args.out, args.lse,
            float(args.softmax_scale), args.kv_dtype, int(args.page_size), int(args.num_pages),
            int(args.extra_page_size) if extra else 0, int(args.extra_num_pages) if extra else 0)
    fp8 = args.kv_dtype == "fp8_e4m3_fnuz"
    return _fn(), (args.q, args.kv_cache, args.block_table, args.seqlens, args.out, args.lse,
                   float(args.softmax_scale), float(args.kv_scale) if fp8 else 1.0, fp8,
                   int(args.page_size), int(args.max_pages))


def prepare(args, config):
    """Compiles the decode for these shapes and captures it over the harness's buffers."""
    global _pool
    key = _key(args)
    if key in _graphs:
        return
    why = supports(args)
    if why is not None:
        raise ValueError("%s: %s" % (NAME, why))
    rt = _driver()
    ctypes = rt.ctypes
    # The device address of the cache base (CU_/HIP_POINTER_ATTRIBUTE_DEVICE_POINTER, the query
    # Triton's launcher makes for each pointer argument, on NVIDIA and on AMD): a page-offset task's
    # cache base lies below its stored pages, outside every allocation, and the Triton kernels
    # inductor generates are launched through that launcher, which refuses such a pointer (on the
    # H200, 2026-12-01: "Failed during launch"). (This asked attribute 2, MEMORY_TYPE, until the
    # HIP path came: it fails for the same pointers, CUDA_ERROR_INVALID_VALUE.)
    caches = [args.kv_cache]
    if _topk(args) > 0 and int(getattr(args, "extra_topk", 0) or 0) > 0:
        caches.append(args.extra_kv_cache)
    for cache in caches:
        val = ctypes.c_uint64(0)
        if rt.pointer_get_attribute(ctypes.byref(val), rt.POINTER_ATTRIBUTE_DEVICE_POINTER,
                                    ctypes.c_uint64(cache.data_ptr())) != 0:
            raise ValueError("%s: the cache base %#x lies outside every allocation (a page-offset "
                             "task): the Triton kernels torch.compile generates cannot take it"
                             % (NAME, cache.data_ptr()))
    _probe_bmm(args.q.device)
    fn, call_args = _call(args)
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
    _check(rt, rt.graph_instantiate(ctypes.byref(exe), graph, 0), rt.symbols["graph_instantiate"])
    _graphs[key] = (g, graph, exe)


def launch(args, config):
    entry = _graphs.get(_key(args))
    if entry is None:
        raise RuntimeError("%s: launch() before prepare() for these buffers" % NAME)
    _, graph, exe = entry
    rt = _driver()
    ctypes, sym = rt.ctypes, rt.symbols
    stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
    status = ctypes.c_int(0)
    _check(rt, rt.stream_is_capturing(stream, ctypes.byref(status)), sym["stream_is_capturing"])
    if status.value == rt.CAPTURE_STATUS_NONE:
        _check(rt, rt.graph_launch(exe, stream), sym["graph_launch"])
        return
    cap_graph, deps, ndeps, cid = ctypes.c_void_p(), ctypes.POINTER(ctypes.c_void_p)(), \
        ctypes.c_size_t(0), ctypes.c_uint64(0)
    _check(rt, rt.stream_get_capture_info(stream, ctypes.byref(status), ctypes.byref(cid),
                                          ctypes.byref(cap_graph), ctypes.byref(deps),
                                          ctypes.byref(ndeps)), sym["stream_get_capture_info"])
    node = ctypes.c_void_p()
    _check(rt, rt.graph_add_child_graph_node(ctypes.byref(node), cap_graph, deps, ndeps, graph),
           sym["graph_add_child_graph_node"])
    _check(rt, rt.stream_update_capture_dependencies(stream, ctypes.byref(node), 1,
                                                     rt.SET_CAPTURE_DEPENDENCIES),
           sym["stream_update_capture_dependencies"])
