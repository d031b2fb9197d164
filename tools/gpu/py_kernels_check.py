#!/usr/bin/env python3
"""py_kernels_check.py - standalone device check of the Python MLA decode implementations
(kernels/triton/mla_decode.py, kernels/torch/mla_decode.py), without the harness or its bridge.

It builds harness-like inputs itself (q and cache ~ N(0,1)/10 clamped to [-1, 1]; pages randomly
permuted; every cache slot past a sequence's length NaN (0x80 for fp8); unused block_table entries a
sentinel far outside the cache; fp8 as fnuz codes incl. 0x7F/0xFF with kv_scale = 1/240), a float64
reference, and the harness's parity rule (out: atol 8e-4 or rtol 2.01/128, cos_diff <= 5e-6; lse:
atol 1e-5 or rtol 8.01/65536; non-finite classes equal), and runs, for every config of each module:
  parity  on the edge cases below, both KV dtypes (configs checked in parallel worker processes);
  capture launch() captured in a CUDA graph on a side stream, replayed, seqlens/block_table/cache
          changed in place, replayed again, both checked; two replays bit-identical;
  bench   graph replay timed by triton.testing.do_bench (L2 flushed before every sample) on the
          headline shapes; TFLOPS and TB/s with FlashMLA's counting (DESIGN.md).

  python3 tools/gpu/py_kernels_check.py [--only parity,capture,bench] [--impl triton,torch]
                                        [--budget SECONDS] [--log FILE]
Prints a compact summary; the full per-case log goes to --log (default $OUT/py_kernels_check.log).
"""
import argparse
import importlib.util
import math
import multiprocessing as mp
import os
import sys
import time
import types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULES = {"triton": os.path.join(ROOT, "kernels", "triton", "mla_decode.py"),
           "torch": os.path.join(ROOT, "kernels", "torch", "mla_decode.py")}
SENTINEL = 0x7FFF0000
SOFTMAX_SCALE = 0.1352
KV_SCALE_FP8 = 1.0 / 240.0
TOL_OUT = (8e-4, 2.01 / 128.0, 5e-6)
TOL_LSE = (1e-5, 8.01 / 65536.0, -1.0)

# name, batch, s_q, h_q, page_size, seqlens, NaN planted in a visible row (sequence 0, row 0),
# num_pages, max_pages (None: just enough). The "fixed-" cases share one shape (torch.compile
# compiles once per shape: torch runs those, the h_q 20 case and the capture check, 4 compiles).
FIXED = dict(num_pages=40, max_pages=24)
CASES = [
    ("b4-p16-sq1-h16-ragged", 4, 1, 16, 16, [0, 1, 37, 200], False, None),
    ("b3-p64-sq2-h20", 3, 2, 20, 64, [130, 0, 64], False, None),
    ("b2-p1-sq1-h128", 2, 1, 128, 1, [1, 300], False, None),
    ("b4-p64-sq1-h16-allzero", 4, 1, 16, 64, [0, 0, 0, 0], False, None),
    ("b1-p64-sq2-h128-len1", 1, 2, 128, 64, [1], False, None),
    ("b3-p64-sq1-h1", 3, 1, 1, 64, [1000, 5, 513], False, None),
    ("b2-p16-sq2-h128-long", 2, 2, 128, 16, [4096, 2500], False, None),
    ("b4-p1-sq2-h16", 4, 2, 16, 1, [77, 0, 1, 640], False, None),
    # many sequences: the auto split count is 1 (out/lse written by the main kernel, no combine)
    ("b128-p64-sq1-h16-ragged", 128, 1, 16, 64, [(i * 37) % 261 for i in range(128)], False, None),
    ("b66-p16-sq2-h128-ragged", 66, 2, 128, 16, [(i * 53) % 101 for i in range(66)], False, None),
    ("fixed-b4-p16-sq2-h16-ragged", 4, 2, 16, 16, [300, 0, 17, 129], False, FIXED),
    ("fixed-b4-p16-sq2-h16-allzero", 4, 2, 16, 16, [0, 0, 0, 0], False, FIXED),
    ("fixed-b4-p16-sq2-h16-len1", 4, 2, 16, 16, [1, 1, 2, 5], False, FIXED),
    ("fixed-b4-p16-sq2-h16-nanvisible", 4, 2, 16, 16, [50, 90, 0, 3], True, FIXED),
    # pages of 64 and 128: the TMA configs' whole tiles (pages of 16 and 1 they decline), with
    # splits, s_q 2 (causal tail tiles), a NaN in a visible row, tiles at offset 64 of a page
    ("b2-p64-sq2-h128-long", 2, 2, 128, 64, [4096, 2500], False, None),
    ("b3-p64-sq1-h16-nanvisible", 3, 1, 16, 64, [700, 64, 1], True, None),
    ("b3-p128-sq2-h16", 3, 2, 16, 128, [1000, 129, 2], False, None),
]
TORCH_CASES = ("b3-p64-sq2-h20", "fixed-b4-p16-sq2-h16-ragged", "fixed-b4-p16-sq2-h16-allzero",
               "fixed-b4-p16-sq2-h16-len1", "fixed-b4-p16-sq2-h16-nanvisible")
# name, h_q, batch, seqlen, kv dtype (page 64, s_q 1, equal lengths)
BENCH = [("h128-b128-8k", 128, 128, 8192, "bf16"), ("h128-b64-8k", 128, 64, 8192, "bf16"),
         ("h16-b128-32k", 16, 128, 32768, "bf16"), ("h16-b128-4k", 16, 128, 4096, "bf16"),
         ("h16-b128-32k-fp8", 16, 128, 32768, "fp8_e4m3_fnuz")]


def load_module(kind):
    spec = importlib.util.spec_from_file_location("vs_py_" + kind, MODULES[kind])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def fnuz_value(c):
    if c == 0x80:
        return float("nan")
    e, m = (c >> 3) & 15, c & 7
    v = m * 2.0 ** -10 if e == 0 else (1 + m / 8.0) * 2.0 ** (e - 8)
    return -v if c & 0x80 else v


def fnuz_table(torch, device):
    return torch.tensor([fnuz_value(c) for c in range(256)], dtype=torch.float64, device=device)


def fnuz_encode(torch, x, table):
    """Nearest fnuz code of each value of x (float, |x| <= 240): the harness rounds to nearest even;
    any code is fine here since the reference is computed from the decoded codes."""
    codes = torch.tensor([c for c in range(256) if c != 0x80], device=x.device)
    vals = table[codes]
    order = torch.argsort(vals)
    vals, codes = vals[order], codes[order]
    mids = (vals[1:] + vals[:-1]) / 2
    out = torch.empty(x.shape, dtype=torch.uint8, device=x.device)
    flat, oflat = x.reshape(-1), out.view(-1)
    step = 1 << 24
    for i in range(0, flat.numel(), step):
        idx = torch.bucketize(flat[i:i + step].double(), mids)
        oflat[i:i + step] = codes[idx].to(torch.uint8)
    return out


def make_inputs(torch, device, batch, s_q, h_q, page, lens, kv_dtype, seed, nan_visible=False,
                num_pages=None, max_pages=None, bench=False):
    g = torch.Generator(device="cpu").manual_seed(seed)
    pages_per = [-(-n // page) for n in lens]
    if max_pages is None:
        max_pages = max(pages_per + [1]) + 1
    if num_pages is None:
        num_pages = sum(pages_per) + 3
    perm = torch.randperm(num_pages, generator=g)
    bt = torch.full((batch, max_pages), SENTINEL, dtype=torch.int32)
    valid = torch.zeros(num_pages, dtype=torch.int64)   # visible slots of each physical page
    cur = 0
    for b, n in enumerate(lens):
        k = pages_per[b]
        if k == 0:
            continue
        phys = perm[cur:cur + k]
        cur += k
        bt[b, :k] = phys.to(torch.int32)
        valid[phys] = (n - torch.arange(k) * page).clamp(max=page)
    visible = torch.arange(page)[None, :] < valid[:, None]
    bt, visible = bt.to(device), visible.to(device)
    gd = torch.Generator(device=device).manual_seed(seed + 1)
    q = (torch.randn((batch, s_q, h_q, 576), generator=gd, device=device) / 10).clamp_(-1, 1)
    q = q.to(torch.bfloat16)
    fp8 = kv_dtype == "fp8_e4m3_fnuz"
    shape = (num_pages, page, 1, 576)
    table = fnuz_table(torch, device)
    if fp8 and bench:
        kv = torch.randint(0, 256, shape, generator=gd, device=device, dtype=torch.uint8)
        kv[kv == 0x80] = 0
        kv[~visible] = 0x80
        kv_ref = None
    elif fp8:
        x = (torch.randn(shape, generator=gd, device=device) / 10).clamp_(-1, 1)
        kv = fnuz_encode(torch, x / KV_SCALE_FP8, table)
        vis_idx = visible.nonzero()
        if vis_idx.shape[0] >= 2:  # the extreme codes, in visible rows
            kv[vis_idx[0, 0], vis_idx[0, 1], 0, 7] = 0x7F
            kv[vis_idx[-1, 0], vis_idx[-1, 1], 0, 300] = 0xFF
        kv[~visible] = 0x80
    else:
        kv = (torch.randn(shape, generator=gd, device=device) / 10).clamp_(-1, 1).to(torch.bfloat16)
        kv[~visible] = float("nan")
    if nan_visible and lens[0] > 0:
        # row 0 of sequence 0, seen by all its queries (a NaN in a row that only later causal
        # queries see would reach earlier ones through 0 * NaN in P.V in any tiled kernel;
        # harness data never has one)
        pg, sl = int(bt[0, 0]), 0
        if fp8:
            kv[pg, sl, 0, 11] = 0x80
        else:
            kv[pg, sl, 0, 11] = float("nan")
    if not (fp8 and bench):
        kv_ref = (table[kv.long()] * KV_SCALE_FP8) if fp8 else kv.double()
    seqlens = torch.tensor(lens, dtype=torch.int32, device=device)
    args = types.SimpleNamespace(
        batch=batch, s_q=s_q, h_q=h_q, num_pages=num_pages, page_size=page, max_pages=max_pages,
        kv_dtype=kv_dtype, softmax_scale=SOFTMAX_SCALE, kv_scale=KV_SCALE_FP8 if fp8 else 1.0,
        num_cus=torch.cuda.get_device_properties(device).multi_processor_count,
        q=q, kv_cache=kv, block_table=bt, seqlens=seqlens,
        out=torch.empty((batch, s_q, h_q, 512), dtype=torch.bfloat16, device=device),
        lse=torch.empty((batch, h_q, s_q), dtype=torch.float32, device=device),
        workspace=None, stream=None, device=torch.device(device))
    return args, kv_ref


def reference(torch, args, kv_ref, lens):
    """float64 out [b, s_q, h_q, 512] and lse [b, h_q, s_q]."""
    b_, s_q, h_q, page = args.batch, args.s_q, args.h_q, args.page_size
    rows = s_q * h_q
    out = torch.zeros((b_, rows, 512), dtype=torch.float64, device=args.q.device)
    lse = torch.full((b_, rows), float("inf"), dtype=torch.float64, device=args.q.device)
    bt = args.block_table.long()
    for b, n in enumerate(lens):
        if n == 0:
            continue
        j = torch.arange(n, device=args.q.device)
        k = kv_ref[bt[b, j // page], j % page, 0]                      # [n, 576]
        qb = args.q[b].double().reshape(rows, 576)
        s = qb @ k.T * args.softmax_scale
        lim = n - s_q + 1 + torch.arange(rows, device=args.q.device) // h_q
        s = torch.where(j[None, :] < lim[:, None], s, float("-inf"))
        l = torch.logsumexp(s, dim=-1)
        has = lim > 0
        p = torch.exp(s - l[:, None])
        o = p @ k[:, :512]
        out[b] = torch.where(has[:, None], o, 0.0)
        lse[b] = torch.where(has, l, float("inf"))
    return (out.reshape(b_, s_q, h_q, 512),
            lse.reshape(b_, s_q, h_q).transpose(1, 2).contiguous())


def parity(torch, actual, expected, tol):
    atol, rtol, cos_tol = tol
    a, e = actual.double().reshape(-1), expected.reshape(-1)

    def cls(x):
        c = torch.zeros(x.shape, dtype=torch.int8, device=x.device)
        c[torch.isnan(x)] = 1
        c[x == float("inf")] = 2
        c[x == float("-inf")] = 3
        return c
    ca, ce = cls(a), cls(e)
    mism = int((ca != ce).sum())
    fin = (ca == 0) & (ce == 0)
    af, ef = a[fin], e[fin]
    err = (af - ef).abs()
    bad = int((~((err <= atol) | (err <= rtol * ef.abs()))).sum()) + mism
    sxx = float((af * af + ef * ef).sum())
    cos = 1.0 - 2.0 * float((af * ef).sum()) / sxx if sxx > 0 else 0.0
    ok = bad == 0 and not (cos_tol >= 0 and cos > cos_tol)
    return ok, {"bad": bad, "nonfinite_mismatch": mism, "max_err": float(err.max()) if err.numel()
                else 0.0, "cos": cos, "n": a.numel()}


class Declined(Exception):
    """launch() answered MLA_EUNSUPPORTED (-2): the config does not run these args."""


def run_impl(torch, mod, args, cfg, stream):
    ws_bytes = mod.workspace_size(args, cfg) if hasattr(mod, "workspace_size") else 0
    args.workspace = (torch.full((ws_bytes,), 0xFF, dtype=torch.uint8, device=args.q.device)
                      if ws_bytes else None)
    args.out.fill_(float("nan"))
    args.lse.fill_(float("nan"))
    args.stream = stream
    with torch.cuda.stream(stream):
        if hasattr(mod, "prepare"):
            mod.prepare(args, cfg)
        args.out.fill_(float("nan"))
        args.lse.fill_(float("nan"))
        rc = mod.launch(args, cfg)
    torch.cuda.synchronize()
    if rc == -2:
        raise Declined()
    return ws_bytes


def check_one(torch, mod, args, cfg, kv_ref, lens, stream):
    ws = run_impl(torch, mod, args, cfg, stream)
    ro, rl = reference(torch, args, kv_ref, lens)
    ok_o, po = parity(torch, args.out, ro, TOL_OUT)
    ok_l, pl = parity(torch, args.lse, rl, TOL_LSE)
    return ok_o and ok_l, po, pl, ws


def capture_check(torch, mod, cfg, kv_dtype, device):
    """Capture launch() once, replay, change seqlens/block_table/cache in place, replay again."""
    # pages of 64 for triton.mla_decode's TMA configs (its _tma()), which decline pages of 16
    tma = getattr(mod, "_tma", None)
    dims = dict(batch=4, s_q=2, h_q=16, page=64 if tma is not None and tma(cfg) else 16)
    lens1, lens2 = [300, 0, 17, 129], [5, 260, 0, 64]
    a1, r1 = make_inputs(torch, device, dims["batch"], dims["s_q"], dims["h_q"], dims["page"],
                         lens1, kv_dtype, 11, **FIXED)
    a2, r2 = make_inputs(torch, device, dims["batch"], dims["s_q"], dims["h_q"], dims["page"],
                         lens2, kv_dtype, 12, **FIXED)
    stream = torch.cuda.Stream()
    run_impl(torch, mod, a1, cfg, stream)   # prepare + one launch
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g, stream=stream):
        mod.launch(a1, cfg)
    res = []
    for tag, src, lens, ref_kv in (("set1", None, lens1, r1), ("set2", a2, lens2, r2)):
        if src is not None:
            a1.kv_cache.copy_(src.kv_cache)
            a1.block_table.copy_(src.block_table)
            a1.seqlens.copy_(src.seqlens)
        a1.out.fill_(float("nan"))
        a1.lse.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        o1, l1 = a1.out.clone(), a1.lse.clone()
        g.replay()
        torch.cuda.synchronize()
        same = bool(torch.equal(o1.view(torch.int16), a1.out.view(torch.int16)) and
                    torch.equal(l1.view(torch.int32), a1.lse.view(torch.int32)))
        ro, rl = reference(torch, a1, ref_kv, lens)
        ok_o, po = parity(torch, a1.out, ro, TOL_OUT)
        ok_l, pl = parity(torch, a1.lse, rl, TOL_LSE)
        res.append((tag, ok_o and ok_l and same, same, po, pl))
    return res


def fmt_p(po, pl):
    return "out bad %d max %.2e cos %.1e | lse bad %d max %.2e" % (
        po["bad"], po["max_err"], po["cos"], pl["bad"], pl["max_err"])


_DEC_KERNEL = None


def _decode_kernel(mod):
    """A 256-code Triton kernel around the module's two fnuz decoders (built once per process)."""
    global _DEC_KERNEL, DEC_ASM, DEC_REF
    if _DEC_KERNEL is None:
        import triton
        import triton.language as tl
        DEC_ASM, DEC_REF = mod._fnuz_decode_asm, mod._fnuz_decode_ref

        @triton.jit
        def _dec(C, O, ASM: tl.constexpr):
            offs = tl.arange(0, 256)
            c = tl.load(C + offs)
            if ASM:
                v = DEC_ASM(c)
            else:
                v = DEC_REF(c)
            tl.store(O + offs, v)
        _DEC_KERNEL = _dec
    return _DEC_KERNEL


def decode_unit(torch, mod, device):
    """The in-kernel fnuz decoders on all 256 codes, bit-compared with the table."""
    _dec = _decode_kernel(mod)
    codes = torch.arange(256, dtype=torch.int32, device=device).to(torch.uint8)
    want = fnuz_table(torch, device).float().to(torch.bfloat16)
    lines = []
    for asm in (True, False):
        o = torch.empty(256, dtype=torch.bfloat16, device=device)
        try:
            _dec[(1,)](codes, o, ASM=asm, num_warps=2)
            torch.cuda.synchronize()
            eq = (o.view(torch.int16) == want.view(torch.int16)) | (torch.isnan(o) & torch.isnan(want))
            lines.append("decode %s: %d/256 codes exact%s" % (
                "asm" if asm else "ref", int(eq.sum()),
                "" if bool(eq.all()) else " wrong: " + str((~eq).nonzero().flatten().tolist()[:8])))
        except Exception as ex:  # noqa: BLE001 - report and go on
            lines.append("decode %s: ERROR %s" % ("asm" if asm else "ref", str(ex).splitlines()[0][:200]))
    return lines


def worker(kind, cfg_name, env, cases, do_capture):
    """One process: parity (and capture) of one implementation's config on the cases. A fault
    that kills the process's CUDA context (an illegal address) fails this config only."""
    try:
        return worker_cases(kind, cfg_name, env, cases, do_capture)
    except Exception as ex:  # noqa: BLE001 - the context is gone: report the config as failed
        tag = kind + ("[" + env["VS_TRITON_FP8_DECODE"] + "]" if "VS_TRITON_FP8_DECODE" in env
                      else "")
        return {"tag": tag, "cfg": cfg_name, "pass": 0, "fail": 1, "secs": 0.0,
                "lines": ["FAIL %s %s worker died: %s: %s" % (tag, cfg_name, type(ex).__name__,
                                                             " ".join(str(ex).split())[:300])]}


def device_arch(torch):
    """The configs' arch name of device 0: "sm_90" on NVIDIA; on ROCm's torch (torch.version.hip)
    the gfx name ("gfx942" of "gfx942:sramecc+:xnack-"), where get_device_capability() gives (9, 4)."""
    if getattr(torch.version, "hip", None):
        return torch.cuda.get_device_properties(0).gcnArchName.split(":")[0]
    return "sm_%d%d" % torch.cuda.get_device_capability()


def _worker_star(job):
    return worker(*job)


def worker_cases(kind, cfg_name, env, cases, do_capture):
    os.environ.update(env)
    import torch
    device = "cuda"
    mod = load_module(kind)
    arch = device_arch(torch)
    cfg = [c for c in mod.configs(arch) if c["name"] == cfg_name][0]
    tag = kind + ("[" + env["VS_TRITON_FP8_DECODE"] + "]" if "VS_TRITON_FP8_DECODE" in env else "")
    lines, npass, nfail = [], 0, 0
    t0 = time.time()
    if kind == "triton" and cfg_name == mod.configs(arch)[0]["name"] and not env:
        lines += [tag + " " + x for x in decode_unit(torch, mod, device)]
    stream = torch.cuda.Stream()
    for kv_dtype in ("bf16", "fp8_e4m3_fnuz"):
        for (name, b, s_q, h_q, page, lens, nanvis, dims) in CASES:
            if name not in cases:
                continue
            args, kv_ref = make_inputs(torch, device, b, s_q, h_q, page, lens, kv_dtype, 1234,
                                       nan_visible=nanvis, **(dims or {}))
            try:
                ok, po, pl, ws = check_one(torch, mod, args, cfg, kv_ref, lens, stream)
                ns = mod._num_splits(args, cfg) if hasattr(mod, "_num_splits") else 0
                line = "%s %s %s %s %s ns=%d ws=%d %s" % ("PASS" if ok else "FAIL", tag, cfg_name,
                                                          name, kv_dtype, ns, ws, fmt_p(po, pl))
            except Declined:
                lines.append("SKIP %s %s %s %s declined (MLA_EUNSUPPORTED)" % (tag, cfg_name, name,
                                                                             kv_dtype))
                continue
            except Exception as ex:  # noqa: BLE001 - a config that cannot run is a failure
                ok = False
                msg = " ".join(str(ex).split())[:300]
                line = "FAIL %s %s %s %s ERROR %s: %s" % (tag, cfg_name, name, kv_dtype,
                                                         type(ex).__name__, msg)
            npass += ok
            nfail += not ok
            lines.append(line)
            if not ok and "out of resource" in line.lower():
                break
        if do_capture:
            try:
                for (t, ok, same, po, pl) in capture_check(torch, mod, cfg, kv_dtype, device):
                    lines.append("%s %s %s capture-%s %s deterministic=%s %s" % (
                        "PASS" if ok else "FAIL", tag, cfg_name, t, kv_dtype, same, fmt_p(po, pl)))
                    npass += ok
                    nfail += not ok
            except Exception as ex:  # noqa: BLE001
                nfail += 1
                lines.append("FAIL %s %s capture %s ERROR %s: %s" % (
                    tag, cfg_name, kv_dtype, type(ex).__name__, " ".join(str(ex).split())[:300]))
    return {"tag": tag, "cfg": cfg_name, "pass": npass, "fail": nfail, "lines": lines,
            "secs": time.time() - t0}


def bench(torch, kinds, passed, budget, t_start, log):
    import triton.testing
    device = "cuda"
    res = []
    for (name, h_q, batch, n, kv_dtype) in BENCH:
        if time.time() - t_start > budget:
            res.append("SKIP bench %s (time budget)" % name)
            continue
        lens = [n] * batch
        args, _ = make_inputs(torch, device, batch, 1, h_q, 64, lens, kv_dtype, 99, bench=True)
        elem = 1 if kv_dtype == "fp8_e4m3_fnuz" else 2
        nbytes = sum(lens) * 576 * elem + batch * h_q * 576 * 2 + batch * h_q * 512 * 2
        flops = 2.0 * h_q * sum(lens) * 1088
        for kind in kinds:
            mod = load_module(kind)
            arch = device_arch(torch)
            for cfg in mod.configs(arch):
                if (kind, cfg["name"]) not in passed:
                    continue
                if time.time() - t_start > budget:
                    res.append("SKIP bench %s %s %s (time budget)" % (name, kind, cfg["name"]))
                    continue
                try:
                    stream = torch.cuda.Stream()
                    run_impl(torch, mod, args, cfg, stream)
                    g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(g, stream=stream):
                        mod.launch(args, cfg)
                    ms = triton.testing.do_bench(g.replay, warmup=20, rep=150, return_mode="median")
                    ns = mod._num_splits(args, cfg) if hasattr(mod, "_num_splits") else 0
                    res.append("BENCH %-17s %-6s %-22s ns=%-2d %8.1f us %7.1f TFLOPS %6.2f TB/s" % (
                        name, kind, cfg["name"], ns, ms * 1e3, flops / ms / 1e9, nbytes / ms / 1e9))
                    del g
                except Exception as ex:  # noqa: BLE001
                    res.append("BENCH %s %s %s ERROR %s" % (name, kind, cfg["name"],
                                                            " ".join(str(ex).split())[:200]))
                log.write(res[-1] + "\n")
                log.flush()
        del args
        torch.cuda.empty_cache()
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", default="parity,capture,bench")
    ap.add_argument("--impl", default="triton,torch")
    ap.add_argument("--budget", type=float, default=300.0, help="seconds; later steps are skipped")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--log", default=os.path.join(os.environ.get("OUT", "/tmp"), "py_kernels_check.log"))
    opt = ap.parse_args()
    steps, kinds = opt.only.split(","), opt.impl.split(",")
    t_start = time.time()
    log = open(opt.log, "w")
    jobs = []
    # configs are read without a device: import the modules here only for their names
    import torch
    arch = device_arch(torch)
    names = {k: [c["name"] for c in load_module(k).configs(arch)] for k in kinds}
    all_cases = [c[0] for c in CASES]
    if "parity" in steps or "capture" in steps:
        cases = all_cases if "parity" in steps else []
        for kind in kinds:
            for cn in names[kind]:
                jobs.append((kind, cn, {}, cases if kind == "triton" else
                             [c for c in cases if c in TORCH_CASES], "capture" in steps))
        if "triton" in kinds and "parity" in steps:  # the plain-Triton fp8 decoder, one config
            jobs.append(("triton", names["triton"][0], {"VS_TRITON_FP8_DECODE": "ref"},
                         [c for c in all_cases if c in TORCH_CASES], False))
    passed = set()
    summary = []
    if jobs:
        ctx = mp.get_context("spawn")
        results = []
        with ctx.Pool(min(opt.workers, len(jobs)), maxtasksperchild=1) as pool:
            for r in pool.imap_unordered(_worker_star, jobs):
                results.append(r)
                for ln in r["lines"]:
                    log.write(ln + "\n")
                log.flush()
        for r in results:
            if r["fail"] == 0 and r["pass"] > 0:
                passed.add((r["tag"], r["cfg"]))
            summary.append("%-4s %-14s %-22s %3d pass %3d fail (%.0fs)" % (
                "OK" if r["fail"] == 0 else "BAD", r["tag"], r["cfg"], r["pass"], r["fail"], r["secs"]))
        print("== parity/capture (%.0fs)" % (time.time() - t_start))
        for s in summary:
            print(s)
        fails = [ln for r in results for ln in r["lines"] if not ln.startswith(("PASS", "SKIP"))]
        for ln in fails[:25]:
            print(ln[:330])
        if len(fails) > 25:
            print("... %d more non-PASS lines in %s" % (len(fails) - 25, opt.log))
        worst = {}
        for r in results:
            for ln in r["lines"]:
                if ln.startswith("PASS") and " out bad" in ln:
                    k = r["tag"]
                    tail = ln.split(" out bad ")[1].split()
                    worst.setdefault(k, [0.0, 0.0, 0.0])
                    worst[k][0] = max(worst[k][0], float(tail[2]))
                    worst[k][1] = max(worst[k][1], float(tail[4]))
                    worst[k][2] = max(worst[k][2], float(tail[-1]))
        for k, v in worst.items():
            print("worst over PASS lines %s: out max err %.2e, out cos_diff %.1e, lse max err %.2e"
                  % (k, v[0], v[1], v[2]))
    else:
        passed = {(k, n) for k in kinds for n in names[k]}
    if "bench" in steps:
        print("== bench (do_bench median of graph replays, L2 flushed; page 64, s_q 1)")
        for ln in bench(torch, kinds, passed, opt.budget, t_start, log):
            print(ln)
    print("== total %.0fs" % (time.time() - t_start))
    log.close()


if __name__ == "__main__":
    sys.exit(main())
