#!/usr/bin/env python3
"""torch_mla_sparse.py - the sparse form of kernels/torch/mla_decode.py (torch.mla_decode) on the
CPU, against a float64 reference written here (issue 36).

Each case builds a tiny paged cache of one format byte for byte (the layouts of
kernels/mla_numeric.h, FlashMLA tests/quant.py: random e4m3fn / e4m3fnuz codes, power-of-two
scales, bf16 RoPE values), fills every row no valid entry names with NaN (codes 0x7F / 0x80, NaN
scales and RoPE bits), the indices with -1 padding, a row of -1 only, entries past topk_length that
name NaN rows, and compares the module's _decode_sparse (eager, and one case under torch.compile)
with a float64 reference that decodes the codes with its own table (math.ldexp, not the module's
bit arithmetic) and follows FlashMLA's tests/ref.py::ref_sparse_attn_decode: out within bf16
tolerance (the error bound of P and out
rounded to bf16), lse within fp32 tolerance; the same problems through numpy.mla_decode
(kernels/python/numpy_mla.py, whose decoder is H2's own) must agree with the reference too, lonely rows out 0 and lse +inf exactly, sink +-inf included.

  python3 tests/torch_mla_sparse.py          (exit 0 pass, 1 fail, 77 skip: torch not importable)

Without torch in this interpreter it re-runs itself under $VS_PYTHON when that one differs (so
`VS_PYTHON=/path/to/venv/bin/python3 ctest -R torch_mla_sparse` runs it there), else skips.
"""
import importlib.util
import math
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SKIP = 77

try:
    import numpy as np
    import torch
except ImportError as e:
    other = os.environ.get("VS_PYTHON")
    if other and os.path.abspath(other) != os.path.abspath(sys.executable) and \
       not os.environ.get("VS_TORCH_SPARSE_REEXEC"):
        env = dict(os.environ, VS_TORCH_SPARSE_REEXEC="1")
        sys.exit(subprocess.call([other, os.path.abspath(__file__)] + sys.argv[1:], env=env))
    print("torch_mla_sparse: skipped: %s (%s)" % (e, sys.executable))
    sys.exit(SKIP)


def load_module(name, *rel):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, *rel))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


M = load_module("torch_mla_decode", "kernels", "torch", "mla_decode.py")
sys.path.insert(0, os.path.join(ROOT, "kernels", "python"))  # numpy_mla.py imports the contract's names
NP = load_module("numpy_mla_decode", "kernels", "python", "numpy_mla.py")


# ---------------------------------------------------------------- formats, written independently

def fp8_table(fnuz):
    """float64 value of every fp8 code: e4m3fn (bias 7, S.1111.111 NaN) or e4m3fnuz (bias 8, 0x80 NaN)."""
    t = np.zeros(256)
    bias = 8 if fnuz else 7
    for c in range(256):
        s, e, m = c >> 7, (c >> 3) & 15, c & 7
        if (fnuz and c == 0x80) or (not fnuz and (c & 0x7F) == 0x7F):
            t[c] = math.nan
            continue
        mag = math.ldexp(m / 8.0, 1 - bias) if e == 0 else math.ldexp(1.0 + m / 8.0, e - bias)
        t[c] = -mag if s else mag
    return t


def nan_code(fnuz):
    return 0x80 if fnuz else 0x7F


def bf16_bits(x):
    """float -> bf16 bits (round to nearest even) as uint16; x finite."""
    u = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return u.astype(np.uint16)


def bf16_value(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


class Cache:
    """One paged cache: its bytes (or bf16 bits) and the float64 rows the reference reads."""

    def __init__(self, rng, fmt, num_pages, page_size, selected):
        self.fmt, self.num_pages, self.page_size = fmt, num_pages, page_size
        self.d = M.d_qk_of(fmt)
        n = num_pages * page_size
        self.rows = np.full((n, self.d), np.nan)
        if fmt == "bf16":
            bits = np.full((n, M.D_QK), 0x7FC0, dtype=np.uint16)
            for r in selected:
                bits[r] = bf16_bits(np.clip(rng.normal(0, 0.5, M.D_QK), -2, 2))
                self.rows[r] = bf16_value(bits[r])
            self.tensor = torch.from_numpy(bits.view(np.int16).copy()).view(torch.bfloat16).reshape(
                num_pages, page_size, 1, M.D_QK)
            return
        fnuz = fmt.endswith("_fnuz")
        table = fp8_table(fnuz)
        good = np.array([c for c in range(256) if not math.isnan(table[c])], dtype=np.uint8)
        page_bytes = M.page_bytes_of(fmt, page_size)
        buf = np.zeros((num_pages, page_bytes), dtype=np.uint8)
        ds = fmt.startswith("fp8_ds_mla")
        for r in range(n):
            p, s = divmod(r, page_size)
            sel = r in selected
            codes = rng.choice(good, 512 if ds else 448) if sel else np.full(512 if ds else 448, nan_code(fnuz), np.uint8)
            rope = bf16_bits(np.clip(rng.normal(0, 0.5, 64), -2, 2)) if sel else np.full(64, 0x7FC0, np.uint16)
            if ds:
                exps = rng.integers(-9, -5, 4)
                scales = np.array([math.ldexp(1.0, int(k)) for k in exps], dtype=np.float32) if sel else \
                    np.full(4, np.nan, dtype=np.float32)
                t = buf[p, s * 656:(s + 1) * 656]
                t[:512] = codes
                t[512:528] = scales.view(np.uint8)
                t[528:656] = rope.view(np.uint8)
                if sel:
                    self.rows[r, :512] = table[codes] * np.repeat(scales.astype(np.float64), 128)
            else:
                exps = rng.integers(-9, -5, 7)
                e8 = (exps + 127).astype(np.uint8) if sel else np.full(7, 0xFF, np.uint8)
                t = buf[p, s * 576:(s + 1) * 576]
                t[:448] = codes
                t[448:576] = rope.view(np.uint8)
                buf[p, page_size * 576 + s * 8:page_size * 576 + s * 8 + 7] = e8
                buf[p, page_size * 576 + s * 8 + 7] = 0xA5  # the unused byte: never read
                if sel:
                    self.rows[r, :448] = table[codes] * np.repeat(np.ldexp(1.0, exps.astype(np.int64)), 64)
            if sel:
                self.rows[r, self.d - 64:] = bf16_value(rope)
        self.tensor = torch.from_numpy(buf)


def reference(q, scopes, sink, softmax_scale, d_v):
    """
    float64 out [b, s_q, h, d_v] and lse [b, h, s_q] (FlashMLA tests/ref.py's definition), and
    mag [b, s_q, h, d_v] = sum_t p_t |V_t| (times the sink's factor): the scale of the rounding
    error of P in bf16 (relative 2^-9 per weight), which bounds the module's deviation.
    """
    b, s_q, h, d = q.shape
    out = np.zeros((b, s_q, h, d_v))
    mag = np.zeros((b, s_q, h, d_v))
    lse = np.zeros((b, h, s_q))
    for bi in range(b):
        for i in range(s_q):
            ks = []
            for cache, idx, tl in scopes:
                for t in range(idx.shape[2]):
                    r = idx[bi, i, t]
                    if r != -1 and (tl is None or t < tl[bi]):
                        ks.append(cache.rows[r])
            for hh in range(h):
                if not ks:
                    out[bi, i, hh] = 0.0
                    lse[bi, hh, i] = math.inf
                    continue
                k = np.array(ks)
                s = softmax_scale * (k @ q[bi, i, hh])
                m = s.max()
                w = np.exp(s - m)
                l_ = w.sum()
                ls = m + math.log(l_)
                o = (w / l_) @ k[:, :d_v]
                a = (w / l_) @ np.abs(k[:, :d_v])
                if sink is not None:
                    f = 1.0 / (1.0 + math.exp(sink[hh] - ls)) if sink[hh] != math.inf else 0.0
                    o, a = o * f, a * f
                out[bi, i, hh] = o
                mag[bi, i, hh] = a
                lse[bi, hh, i] = ls
    return out, lse, mag


def make_indices(rng, b, s_q, topk, n_rows, tl, lonely):
    """Distinct rows per query row, -1 padding; entries t >= tl[b] name NaN rows (never selected)."""
    idx = np.full((b, s_q, topk), -1, dtype=np.int32)
    selected = set()
    pool = list(range(n_rows))
    for bi in range(b):
        for i in range(s_q):
            if lonely and bi == 0 and i == s_q - 1:
                continue  # a row of -1 only
            rows = rng.permutation(pool)[:topk]
            lim = topk if tl is None else tl[bi]
            for t in range(topk):
                if t >= lim or rng.random() < 0.2:
                    continue
                idx[bi, i, t] = rows[t]
                selected.add(int(rows[t]))
    # entries past topk_length name rows no valid entry names (NaN): they must be dropped
    unselected = [r for r in pool if r not in selected]
    if tl is not None and unselected:
        for bi in range(b):
            for i in range(s_q):
                for t in range(tl[bi], topk):
                    idx[bi, i, t] = unselected[(bi + i + t) % len(unselected)]
    return idx, selected


def close(name, got, want, atol, rtol):
    """
    Finite values within atol + rtol*|want| (atol an array or a number); non-finite ones equal.
    Returns a failure line or None.
    """
    gf, wf = np.isfinite(got), np.isfinite(want)
    if not np.array_equal(gf, wf) or not np.array_equal(got[~gf], want[~wf]):
        bad = np.argwhere((gf != wf) | (~gf & (got != want)))[0]
        return "%s: non-finite mismatch at %s: got %r, want %r" % (name, tuple(bad), got[tuple(bad)],
                                     want[tuple(bad)])
    err = np.abs(got[gf] - want[wf])
    lim = (atol[wf] if isinstance(atol, np.ndarray) else atol) + rtol * np.abs(want[wf])
    if np.any(err > lim):
        k = int(np.argmax(err - lim))
        return "%s: |got - want| %.3g > %.3g (got %.6g, want %.6g)" % (name, err[k], lim[k], got[gf][k],
                                       want[wf][k])
    return None


def run_case(name, fmt, b, s_q, h, topk, page_size, num_pages, *, topk_length=None, sink=None,
         extra=None, compiled=False, seed=1):
    rng = np.random.default_rng(seed)
    n_rows = num_pages * page_size
    idx, sel = make_indices(rng, b, s_q, topk, n_rows, topk_length, lonely=True)
    cache = Cache(rng, fmt, num_pages, page_size, sel)
    d = cache.d
    q_bits = bf16_bits(np.clip(rng.normal(0, 0.3, (b, s_q, h, d)), -1, 1))
    q64 = bf16_value(q_bits)
    q = torch.from_numpy(q_bits.view(np.int16).copy()).view(torch.bfloat16)
    scopes = [(cache, idx, topk_length)]
    ex = (None, None, None, 0, 0)
    if extra is not None:
        e_topk, e_page, e_pages, e_tl = extra
        e_idx, e_sel = make_indices(rng, b, s_q, e_topk, e_page * e_pages, e_tl, lonely=True)
        e_cache = Cache(rng, fmt, e_pages, e_page, e_sel)
        scopes.append((e_cache, e_idx, e_tl))
        ex = (e_cache.tensor, torch.from_numpy(e_idx),
              torch.tensor(e_tl, dtype=torch.int32) if e_tl is not None else None, e_page, e_pages)
    softmax_scale = 1.0 / math.sqrt(d)
    out = torch.full((b, s_q, h, M.D_V), float("nan"), dtype=torch.bfloat16)
    lse = torch.full((b, h, s_q), float("nan"), dtype=torch.float32)
    fn = torch.compile(M._decode_sparse, dynamic=False) if compiled else M._decode_sparse
    fn(q, cache.tensor, torch.from_numpy(idx),
       torch.tensor(topk_length, dtype=torch.int32) if topk_length is not None else None,
       torch.tensor(sink, dtype=torch.float32) if sink is not None else None,
       ex[0], ex[1], ex[2], out, lse, softmax_scale, fmt, page_size, num_pages, ex[3], ex[4])
    want_out, want_lse, mag = reference(q64, scopes, sink, softmax_scale, M.D_V)
    got_out = out.float().numpy().astype(np.float64)
    got_lse = lse.numpy().astype(np.float64)
    # out: P rounded to bf16 (2^-9 a weight, 2^-8 with the fp32 sums) and out to bf16 (2^-9)
    fails = [f for f in (close("out", got_out, want_out, 2.0 ** -8 * mag + 1e-6, 2.0 ** -8),
                         close("lse", got_lse, want_lse, 1e-5, 8.01 / 65536)) if f]
    # the same problem through numpy.mla_decode (kernels/python/numpy_mla.py, its own decoder):
    # the reference above must agree with it too (fp32 P: the out bound holds with room)
    np_args = NpArgs(q_bits, cache, idx, topk_length, sink, scopes[1] if extra is not None else None,
                     b, s_q, h, d, softmax_scale, fmt, page_size)
    NP.launch(np_args, {"name": "np", "block_n": 0, "block_h": 0, "num_splits": 0, "num_warps": 0,
                        "num_stages": 0})
    np_out = bf16_value(np_args.out)
    fails += ["numpy.mla_decode " + f for f in (
        close("out", np_out, want_out, 2.0 ** -8 * mag + 1e-6, 2.0 ** -8),
        close("lse", np_args.lse.astype(np.float64), want_lse, 1e-5, 8.01 / 65536)) if f]
    lonely_ok = np.all(got_out[0, s_q - 1] == 0) if extra is None else True
    if not lonely_ok:
        fails.append("the row of -1 only: out not 0")
    print("%s %s" % ("ok  " if not fails else "FAIL", name))
    for f in fails:
        print("     " + f)
    return not fails


class NpArgs:
    """The numpy backend's args (kernels/python/mla_decode.py): host arrays, bf16 as uint16 bits."""

    def __init__(self, q_bits, cache, idx, topk_length, sink, extra, b, s_q, h, d, softmax_scale, fmt,
                 page_size):
        def host(c):
            t = c.tensor
            return t.view(torch.int16).numpy().view(np.uint16) if t.dtype == torch.bfloat16 else t.numpy()

        self.batch, self.s_q, self.h_q, self.d_qk, self.d_v = b, s_q, h, d, M.D_V
        self.softmax_scale, self.kv_scale, self.kv_dtype = softmax_scale, 1.0, fmt
        self.page_size, self.num_pages, self.topk = page_size, cache.num_pages, idx.shape[2]
        self.q, self.kv_cache, self.indices = q_bits, host(cache), idx
        self.topk_length = None if topk_length is None else np.array(topk_length, dtype=np.int32)
        self.attn_sink = None if sink is None else np.array(sink, dtype=np.float32)
        self.extra_topk, self.extra_page_size, self.extra_num_pages = 0, 0, 0
        self.extra_kv_cache = self.extra_indices = self.extra_topk_length = None
        if extra is not None:
            e_cache, e_idx, e_tl = extra
            self.extra_topk, self.extra_page_size = e_idx.shape[2], e_cache.page_size
            self.extra_num_pages, self.extra_kv_cache = e_cache.num_pages, host(e_cache)
            self.extra_indices = e_idx
            self.extra_topk_length = None if e_tl is None else np.array(e_tl, dtype=np.int32)
        self.block_table = self.seqlens = self.workspace = None
        self.out = np.zeros((b, s_q, h, M.D_V), dtype=np.uint16)
        self.lse = np.zeros((b, h, s_q), dtype=np.float32)


def check_decoders():
    """The module's decoders on every code: fp8 (both kinds) and e8m0 against math.ldexp, bf16 bits."""
    fails = []
    codes = torch.arange(256, dtype=torch.uint8)
    for fnuz, fn in ((False, M._e4m3fn_to_float), (True, M._fnuz_to_float)):
        got, want = fn(codes).double().numpy(), fp8_table(fnuz)
        same = (got == want) | (np.isnan(got) & np.isnan(want))
        same &= np.signbit(got) == np.signbit(want)
        if not same.all():
            c = int(np.argmin(same))
            fails.append("%s code %#x: got %r, want %r" % ("fnuz" if fnuz else "e4m3fn", c, got[c], want[c]))
    e8 = M._e8m0_to_float(codes).double().numpy()
    want = np.array([math.ldexp(1.0, c - 127) if c != 255 else math.nan for c in range(256)])
    if not np.array_equal(e8, want, equal_nan=True):
        fails.append("e8m0: code %d" % int(np.argmax(~((e8 == want) | (np.isnan(e8) & np.isnan(want))))))
    bits = np.arange(65536, dtype=np.uint32).astype(np.uint16)
    got = M._le_bf16(torch.from_numpy(bits.view(np.uint8).copy())).numpy().view(np.uint32)
    if not np.array_equal(got, bits.astype(np.uint32) << 16):
        fails.append("bf16 bytes: pattern %#x" % int(np.argmax(got != bits.astype(np.uint32) << 16)))
    f32 = np.array([1.5, -2.25, 3e-39, -0.0, math.inf, -math.inf, 2.0 ** -126, -1e30], dtype=np.float32)
    got = M._le_f32(torch.from_numpy(f32.view(np.uint8).reshape(-1, 4).copy())).numpy()
    if not np.array_equal(got.view(np.uint32), f32.view(np.uint32)):
        fails.append("fp32 bytes: got %r" % got)
    print("%s decoders: 2 x 256 fp8 codes, 256 e8m0 codes, 65536 bf16 patterns, fp32 bytes" %
          ("ok  " if not fails else "FAIL"))
    for f in fails:
        print("     " + f)
    return not fails


def check_supports():
    class S:
        pass

    def shape(kv, topk, d_qk=None):
        s = S()
        s.kv_dtype, s.topk, s.page_size, s.extra_topk = kv, topk, 64, 0
        s.d_qk, s.d_v = (d_qk if d_qk is not None else M.d_qk_of(kv)), 512
        return s

    cases = [(shape("fp8_ds_mla", 2048), True), (shape("fp8_model1_fnuz", 128), True),
         (shape("bf16", 2048), True), (shape("fp8_e4m3_fnuz", 2048), False),
         (shape("fp8_ds_mla", 0), False), (shape("bf16", 0), True),
         (shape("fp8_model1", 128, d_qk=576), False)]
    ok = tuple(getattr(M, "FORMS", ("dense",))) == ("dense", "sparse")
    if not ok:
        print("FAIL FORMS is %r: the contract hands a sparse task only to a module whose FORMS names it"
              % (getattr(M, "FORMS", None),))
    for s, want in cases:
        got = M.supports(s) is None
        if got != want:
            print("FAIL supports(%s, topk %d, d_qk %d) = %r, want %s" % (s.kv_dtype, s.topk, s.d_qk,
                                          M.supports(s), want))
            ok = False
    print("%s supports(): %d shapes" % ("ok  " if ok else "FAIL", len(cases)))
    return ok


def main():
    torch.manual_seed(0)
    inf = math.inf
    results = [
        check_decoders(),
        check_supports(),
        run_case("fp8_ds_mla, page 3, sink finite/+inf/-inf", "fp8_ds_mla", 2, 2, 4, 8, 3, 7,
             sink=[0.5, inf, -inf, -1.0]),
        run_case("fp8_ds_mla_fnuz, topk_length 0/5/8", "fp8_ds_mla_fnuz", 3, 1, 2, 8, 5, 5,
             topk_length=[0, 5, 8], seed=2),
        run_case("fp8_model1, page 61, extra cache (page 2, extra_topk_length), topk_length",
             "fp8_model1", 2, 2, 2, 6, 61, 1, topk_length=[6, 3],
             extra=(4, 2, 6, [4, 1]), sink=[0.25, -inf], seed=3),
        run_case("fp8_model1_fnuz, page 69, extra cache", "fp8_model1_fnuz", 2, 1, 3, 8, 69, 1,
             extra=(4, 3, 3, None), seed=4),
        run_case("bf16, page 69, s_q 2, topk_length", "bf16", 2, 2, 2, 8, 69, 1,
             topk_length=[2, 8], sink=[inf, 0.0], seed=5),
    ]
    if os.environ.get("VS_TORCH_SPARSE_COMPILE", "1") != "0":
        results.append(run_case("fp8_ds_mla under torch.compile (cpu inductor)", "fp8_ds_mla", 2, 2, 4,
                    8, 3, 7, sink=[0.5, inf, -inf, -1.0], compiled=True))
    n_fail = results.count(False)
    print("%d passed, %d failed" % (len(results) - n_fail, n_fail))
    return 1 if n_fail else 0


if __name__ == "__main__":
    sys.exit(main())
