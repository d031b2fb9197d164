#!/usr/bin/env python3
"""triton_dsa_interp.py - kernels/triton/dsa_decode.py (triton.dsa_decode, issue 39) run by Triton's
interpreter (TRITON_INTERPRET=1: the kernels' own code, executed on the CPU over torch CPU tensors)
against the float64 reference of tests/torch_mla_sparse.py (FlashMLA tests/ref.py's definition,
its caches written byte for byte with NaN in every row no valid entry names).

Cases: every format (bf16, fp8_ds_mla, fp8_model1 and the fnuz twins), both fp8 decoders (Triton's
conversion and the integer one), -1 padding, a row of -1 only (out 0 and lse +inf exactly),
topk_length 0 / partial / full with the entries past it naming NaN rows, attn_sink finite and +-inf,
the extra cache (its own page size, indices and lengths), page sizes 61, 64, 69, s_q 2, split off,
forced and chosen by the shape gate (the combine's workspace filled with NaN first), a config of
the sm_90 space as is; plus the gate (num_splits) and supports() answers.

  python3 tests/triton_dsa_interp.py     (exit 0 pass, 1 fail, 77 skip: torch or triton not importable)

Without torch and triton in this interpreter it re-runs itself under $VS_PYTHON when that one differs
(`VS_PYTHON=/path/to/venv/bin/python3 ctest -R triton_dsa_interp`), else skips.
"""
import importlib.util
import math
import os
import subprocess
import sys

os.environ["TRITON_INTERPRET"] = "1"  # before triton is imported
sys.dont_write_bytecode = True        # no __pycache__ in kernels/ or tests/
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP = 77

try:
    import numpy as np
    import torch
    import triton  # noqa: F401
except ImportError as e:
    other = os.environ.get("VS_PYTHON")
    if other and os.path.abspath(other) != os.path.abspath(sys.executable) and \
       not os.environ.get("VS_TRITON_DSA_REEXEC"):
        env = dict(os.environ, VS_TRITON_DSA_REEXEC="1")
        sys.exit(subprocess.call([other, os.path.abspath(__file__)] + sys.argv[1:], env=env))
    print("triton_dsa_interp: skipped: %s (%s)" % (e, sys.executable))
    sys.exit(SKIP)


def load_module(name, *rel):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, *rel))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


T = load_module("torch_mla_sparse", "tests", "torch_mla_sparse.py")   # caches, reference, close()
K = load_module("triton_dsa_decode", "kernels", "triton", "dsa_decode.py")
tl = K.tl


@triton.jit
def _dot_probe(A, B, C):
    o = tl.arange(0, 16)
    a = tl.load(A + o[:, None] * 16 + o[None, :])
    b = tl.load(B + o[:, None] * 16 + o[None, :])
    tl.store(C + o[:, None] * 16 + o[None, :], tl.dot(a, b))


@triton.jit
def _round_probe(X, Y):
    o = tl.arange(0, 4)
    tl.store(Y + o, tl.load(X + o).to(tl.bfloat16))


def fix_interpreter_bf16():
    """Triton's interpreter (3.9 at least) stores bf16 as its uint16 bits, and (1) its tl.dot
    multiplies those bits as integers, (2) its fp32 -> bf16 cast truncates where a GPU rounds to
    nearest even (Triton's default). Where a probe shows either, the interpreter is patched: the dot
    gets bf16 operands decoded to fp32 (exact: the product a tensor core computes), the cast rounds
    to nearest even. Returns a line saying what was done."""
    from triton.runtime import interpreter as ti
    done = []
    x = torch.tensor([1.0 + 2.0 ** -8 + 2.0 ** -12, -(1.0 + 2.0 ** -8 + 2.0 ** -12), 1.0 + 2.0 ** -8, 3.0])
    y = torch.zeros(4, dtype=torch.bfloat16)
    _round_probe[(1,)](x, y)
    if not torch.equal(y, x.to(torch.bfloat16)):
        cast = ti.InterpreterBuilder.cast_impl

        def cast_impl(self, src, dst_type):
            if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
                u = src.data.astype(np.float32).view(np.uint32).astype(np.uint64)
                r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
                r = np.where(np.isnan(src.data), np.uint16(0x7FC0), r)
                return ti.TensorHandle(r.reshape(src.data.shape), tl.bfloat16)
            return cast(self, src, dst_type)
        ti.InterpreterBuilder.cast_impl = cast_impl
        y.zero_()
        _round_probe[(1,)](x, y)
        if not torch.equal(y, x.to(torch.bfloat16)):
            raise RuntimeError("the interpreter's fp32 -> bf16 cast does not round to nearest even, fixed or not")
        done.append("its fp32 -> bf16 cast truncated: it rounds to nearest even now")
    a = torch.eye(16, dtype=torch.bfloat16) * 2
    b = torch.full((16, 16), 0.5, dtype=torch.bfloat16)
    c = torch.zeros(16, 16)
    _dot_probe[(1,)](a, b, c)
    if torch.equal(c, torch.ones(16, 16)):
        return "the interpreter's bf16: " + ("; ".join(done) or "right as it is")
    orig = ti.InterpreterBuilder.create_dot

    def as_f32(x):
        if x.dtype.scalar != tl.bfloat16:
            return x
        return ti.TensorHandle((x.data.astype(np.uint32) << 16).view(np.float32), tl.float32)

    def create_dot(self, a, b, d, *rest):
        return orig(self, as_f32(a), as_f32(b), d, *rest)
    ti.InterpreterBuilder.create_dot = create_dot
    c.zero_()
    _dot_probe[(1,)](a, b, c)
    if not torch.equal(c, torch.ones(16, 16)):
        raise RuntimeError("the interpreter's bf16 tl.dot is wrong, and the fix did not help")
    done.append("its tl.dot multiplied the bits as integers: its operands are decoded first")
    return "the interpreter's bf16: " + "; ".join(done)


class Args:
    """The args of the Python contract (kernels/python/mla_decode.py), CPU torch tensors."""


def cfg(bn, bh, sp, w=4, st=1):
    return K._cfg(bn, bh, sp, w, st)


def run_case(name, fmt, b, s_q, h, topk, page_size, num_pages, config, *, topk_length=None, sink=None,
             extra=None, hip=False, decode="auto", num_cus=1, want_splits=None, seed=1):
    rng = np.random.default_rng(seed)
    idx, sel = T.make_indices(rng, b, s_q, topk, num_pages * page_size, topk_length, lonely=True)
    cache = T.Cache(rng, fmt, num_pages, page_size, sel)
    d = cache.d
    q_bits = T.bf16_bits(np.clip(rng.normal(0, 0.3, (b, s_q, h, d)), -1, 1))
    q64 = T.bf16_value(q_bits)
    a = Args()
    a.batch, a.s_q, a.h_q, a.num_pages, a.page_size, a.max_pages = b, s_q, h, num_pages, page_size, 0
    a.kv_dtype, a.softmax_scale, a.kv_scale, a.num_cus = fmt, 1.0 / math.sqrt(d), 1.0, num_cus
    a.topk, a.d_qk, a.d_v = topk, d, K.D_V
    a.q = torch.from_numpy(q_bits.view(np.int16).copy()).view(torch.bfloat16)
    a.kv_cache, a.indices = cache.tensor, torch.from_numpy(idx)
    a.block_table = a.seqlens = None
    a.topk_length = torch.tensor(topk_length, dtype=torch.int32) if topk_length is not None else None
    a.attn_sink = torch.tensor(sink, dtype=torch.float32) if sink is not None else None
    scopes = [(cache, idx, topk_length)]
    a.extra_topk, a.extra_page_size, a.extra_num_pages = 0, 0, 0
    a.extra_kv_cache = a.extra_indices = a.extra_topk_length = None
    if extra is not None:
        e_topk, e_page, e_pages, e_tl = extra
        e_idx, e_sel = T.make_indices(rng, b, s_q, e_topk, e_page * e_pages, e_tl, lonely=True)
        e_cache = T.Cache(rng, fmt, e_pages, e_page, e_sel)
        scopes.append((e_cache, e_idx, e_tl))
        a.extra_topk, a.extra_page_size, a.extra_num_pages = e_topk, e_page, e_pages
        a.extra_kv_cache, a.extra_indices = e_cache.tensor, torch.from_numpy(e_idx)
        a.extra_topk_length = torch.tensor(e_tl, dtype=torch.int32) if e_tl is not None else None
    a.out = torch.full((b, s_q, h, K.D_V), float("nan"), dtype=torch.bfloat16)
    a.lse = torch.full((b, h, s_q), float("nan"), dtype=torch.float32)
    ws = K.workspace_size(a, config)
    # the partials' workspace starts as NaN: the combine must read only what the splits wrote
    a.workspace = torch.full((ws,), 0xFF, dtype=torch.uint8) if ws else None
    fails = []
    ns = K.num_splits(a, config)
    if want_splits is not None and ns != want_splits:
        fails.append("num_splits %d, want %d" % (ns, want_splits))
    if (ws > 0) != (ns > 1):
        fails.append("workspace_size %d with %d splits" % (ws, ns))
    saved = K.FP8_DECODE
    K.FP8_DECODE = decode
    try:
        K.enqueue(K.build(a, config, hip=hip))
    finally:
        K.FP8_DECODE = saved
    want_out, want_lse, mag = T.reference(q64, scopes, sink, a.softmax_scale, K.D_V)
    got_out = a.out.float().numpy().astype(np.float64)
    got_lse = a.lse.numpy().astype(np.float64)
    # out: P rounded to bf16 (2^-9 a weight, 2^-8 with the fp32 sums) and out to bf16 (2^-9), as
    # torch_mla_sparse.py bounds torch.mla_decode: per element, from sum_t p_t |V_t| (these caches'
    # values reach 7, so the harness's atol 1e-3 would be loose on small rows and too tight where
    # large values cancel); lse: fp32, the harness's lse tolerance.
    fails += [f for f in (T.close("out", got_out, want_out, 2.0 ** -8 * mag + 1e-6, 2.0 ** -8),
                          T.close("lse", got_lse, want_lse, 1e-5, 8.01 / 65536)) if f]
    if extra is None and not (np.all(got_out[0, s_q - 1] == 0) and np.all(np.isposinf(got_lse[0, :, s_q - 1]))):
        fails.append("the row of -1 only: out not 0 or lse not +inf")
    print("%s %s [%s, %d split%s]" % ("ok  " if not fails else "FAIL", name, config["name"], ns,
                                      "" if ns == 1 else "s"))
    for f in fails:
        print("     " + f)
    return not fails


class Shape:
    def __init__(self, **kw):
        self.batch, self.s_q, self.h_q, self.page_size, self.num_cus = 1, 1, 128, 64, 132
        self.topk, self.extra_topk, self.extra_page_size, self.kv_dtype = 2048, 0, 0, "fp8_ds_mla"
        self.d_qk, self.d_v, self.num_pages, self.max_pages = 576, 512, 100, 0
        self.__dict__.update(kw)


def check_gate():
    """The shape gate: no split once the programs fill the SMs; splits when they do not."""
    bh64 = cfg(64, 64, 0)
    cases = [(Shape(batch=128, s_q=2), bh64, 1),                 # 512 programs >= 132 SMs
             (Shape(batch=66), bh64, 1),                         # 132 programs: one full wave
             (Shape(batch=2, h_q=64), bh64, None),               # 2 programs: split
             (Shape(batch=2, h_q=64), cfg(64, 64, 1), 1),        # split off
             (Shape(batch=2, h_q=64), cfg(64, 64, 5), 5),        # forced
             (Shape(batch=1, topk=256), bh64, 2)]                # capped by the tiles (2 each)
    ok = True
    for s, c, want in cases:
        got = K.num_splits(s, c)
        tiles = -(-s.topk // c["block_n"])
        good = got == want if want is not None else 1 < got <= max(1, tiles // 2)
        if not good:
            print("FAIL num_splits(batch %d, s_q %d, h_q %d, topk %d, %s) = %d, want %s" % (
                  s.batch, s.s_q, s.h_q, s.topk, c["name"], got, want if want is not None else "2..%d" % (tiles // 2)))
            ok = False
        if (K.workspace_size(s, c) > 0) != (got > 1):
            print("FAIL workspace_size %d with %d splits" % (K.workspace_size(s, c), got))
            ok = False
    print("%s the split gate: %d shapes" % ("ok  " if ok else "FAIL", len(cases)))
    return ok


def check_supports():
    cases = [(Shape(), True), (Shape(kv_dtype="fp8_model1_fnuz", d_qk=512, topk=128), True),
             (Shape(kv_dtype="bf16"), True), (Shape(topk=0, kv_dtype="bf16"), False),
             (Shape(kv_dtype="fp8_e4m3_fnuz"), False), (Shape(kv_dtype="fp8_model1", d_qk=576), False),
             (Shape(extra_topk=64, extra_page_size=0), False)]
    ok = tuple(K.FORMS) == ("sparse",) and K.NAME == "triton.dsa_decode"
    for s, want in cases:
        if (K.supports(s) is None) != want:
            print("FAIL supports(%s, topk %d, d_qk %d) = %r" % (s.kv_dtype, s.topk, s.d_qk, K.supports(s)))
            ok = False
    for arch in ("sm_90", "gfx942"):
        names = [c["name"] for c in K.configs(arch)]
        if not names or len(set(names)) != len(names):
            print("FAIL configs(%s): %r" % (arch, names))
            ok = False
    print("%s supports() and configs(): %d shapes" % ("ok  " if ok else "FAIL", len(cases)))
    return ok


def main():
    inf = math.inf
    small = cfg(16, 16, 1)
    print("note %s" % fix_interpreter_bf16())
    res = [check_gate(), check_supports()]
    res += [
        run_case("fp8_ds_mla, page 64, sink finite/+inf/-inf", "fp8_ds_mla", 2, 2, 4, 40, 64, 2, small,
                 sink=[0.5, inf, -inf, -1.0]),
        run_case("fp8_ds_mla, integer decode, split forced", "fp8_ds_mla", 2, 1, 4, 40, 61, 2, cfg(16, 16, 3),
                 decode="int", seed=7),
        run_case("fp8_ds_mla_fnuz (AMD: Triton's fnuz conversion), topk_length 0/partial/full",
                 "fp8_ds_mla_fnuz", 3, 1, 2, 40, 69, 1, small, topk_length=[0, 17, 40], hip=True, seed=2),
        run_case("fp8_ds_mla_fnuz (NVIDIA: integer decode), split by the gate, sink", "fp8_ds_mla_fnuz",
                 2, 2, 3, 96, 64, 2, cfg(16, 16, 0), sink=[inf, 0.25, -inf], num_cus=64, want_splits=3,
                 seed=8),
        run_case("fp8_model1, page 61, extra cache (page 64, extra_topk_length), topk_length, sink",
                 "fp8_model1", 2, 2, 2, 24, 61, 1, small, topk_length=[24, 9],
                 extra=(40, 64, 2, [40, 3]), sink=[0.25, -inf], seed=3),
        run_case("fp8_model1, extra cache, split by the gate", "fp8_model1", 2, 1, 4, 32, 64, 1,
                 cfg(16, 16, 0), extra=(40, 69, 1, None), sink=[0.0, 1.0, inf, -inf], num_cus=32,
                 want_splits=2, seed=9),
        run_case("fp8_model1_fnuz (AMD), page 69, extra cache, s_q 2", "fp8_model1_fnuz", 2, 2, 3, 32, 69, 1,
                 small, extra=(16, 61, 1, [0, 16]), hip=True, seed=4),
        run_case("fp8_model1_fnuz (integer decode), split forced", "fp8_model1_fnuz", 1, 2, 2, 48, 64, 1,
                 cfg(16, 16, 2), topk_length=[33], decode="int", seed=10),
        run_case("bf16, page 69, s_q 2, topk_length, sink", "bf16", 2, 2, 2, 40, 69, 1, small,
                 topk_length=[2, 40], sink=[inf, 0.0], seed=5),
        run_case("bf16, split forced, h_q not a multiple of BLOCK_H", "bf16", 2, 1, 5, 40, 61, 1,
                 cfg(16, 4, 3), seed=11),
        run_case("fp8_ds_mla, the sm_90 config bn64-bh64 (2 splits)", "fp8_ds_mla", 1, 2, 3, 300, 64, 6,
                 K.configs("sm_90")[0], num_cus=4, want_splits=2, sink=[0.1, inf, -0.3], seed=6),
    ]
    n_fail = res.count(False)
    print("%d passed, %d failed" % (len(res) - n_fail, n_fail))
    return 1 if n_fail else 0


if __name__ == "__main__":
    sys.exit(main())
