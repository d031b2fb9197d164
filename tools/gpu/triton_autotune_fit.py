#!/usr/bin/env python3
"""triton_autotune_fit.py FILE.py GEN - which configs of each @triton.autotune kernel of a Python
implementation fit generation GEN, compiled ahead of time without a GPU (issue 41, item 3).

For every autotuner the shim finds in the module (kernels/python/mla_decode.py find_autotuners():
module globals, the .fn chain of a triton.heuristics, lists and dicts), each of its triton.Config is
compiled for GEN with Triton's own compiler (`triton.compile(ASTSource(...), target=GPUTarget(...))`,
as tools/gpu/triton_cuda_resources.py and triton_amd_gate.py do for triton.mla_decode): the config's
kwargs as constexprs, its num_warps, num_stages, num_ctas and maxnreg as options. The argument types
a launch would give are not in the module's code: the module declares them, per kernel, in
AUTOTUNE_SIGNATURES (kernels/python/mla_decode.py's docstring); a kernel without an entry is "not
checked ahead" with the reason.

What decides, as Triton decides at launch: CompiledKernel._init_handles() (triton/compiler/
compiler.py, 3.5.1 and 3.9.0) raises OutOfResources when `metadata.shared` exceeds the device's
shared memory per block (the opt-in maximum on NVIDIA: 232448 bytes on sm_90, 101376 on sm_120; the
LDS on AMD: 65536 on gfx942, 163840 on gfx950) or when num_warps x warp size exceeds the threads a
block may have (1024); Autotuner._bench() (triton/runtime/autotuner.py) catches OutOfResources,
PTXASError and CompileTimeAssertionFailure and times the config as inf, so the autotuner drops it
without a word. A config that does not compile here is dropped the same way there.

Prints one JSON object: {"gen", "triton", "limit", "kernels": [{"kernel", "global", "checked",
"why" (when not checked), "configs": [{"label", "fits", "why", "variants": [{"variant", "shared",
"threads", "error"}]}]}]}. Exit 0 (the figures are the answer), 2 when the module cannot be loaded
or Triton is not importable (one line on stderr).
"""
import importlib.util
import json
import os
import sys
import types

sys.dont_write_bytecode = True

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SHIM = os.path.join(SRC, "kernels", "python", "mla_decode.py")
LIMIT = {"sm_90": 232448, "sm_120": 101376, "gfx942": 65536, "gfx950": 163840}
MAX_THREADS = 1024


def _target(gen):
    from triton.backends.compiler import GPUTarget

    if gen.startswith("sm_"):
        return GPUTarget("cuda", int(gen[3:]), 32), 32
    return GPUTarget("hip", gen, 64), 64


def _shim():
    spec = importlib.util.spec_from_file_location("vs_autotune_fit_shim", SHIM)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def _variants(decl, kernel):
    """The module's signature variants of kernel: [{"label", "signature", "constexprs"}] or a why."""
    if not isinstance(decl, dict):
        return None, "the module declares no AUTOTUNE_SIGNATURES (the argument types of %s are known only at a launch)" % kernel
    v = decl.get(kernel)
    if v is None:
        return None, "AUTOTUNE_SIGNATURES has no entry for %s (its argument types are known only at a launch)" % kernel
    v = [v] if isinstance(v, dict) else list(v)
    for i, x in enumerate(v):
        if not isinstance(x, dict) or not isinstance(x.get("signature"), dict):
            return None, "AUTOTUNE_SIGNATURES[%r][%d] is not {\"signature\": {...}, \"constexprs\": {...}}" % (kernel, i)
    return [{"label": str(x.get("label", i)), "signature": x["signature"], "constexprs": dict(x.get("constexprs", {}))}
            for i, x in enumerate(v)], None


def _jit_fn(tuner):
    from triton.runtime.jit import JITFunction

    f, depth = tuner.fn, 0
    while not isinstance(f, JITFunction) and depth < 8:
        f, depth = getattr(f, "fn", None), depth + 1
    return f if isinstance(f, JITFunction) else None


def compile_config(jit, cfg, var, gen, limit):
    import triton
    from triton.compiler import ASTSource

    target, warp = _target(gen)
    sig = dict(var["signature"])
    const = dict(var["constexprs"])
    for k, v in (cfg.kwargs or {}).items():
        sig[k] = "constexpr"
        const[k] = v
    for k in const:
        sig[k] = "constexpr"
    opts = {"num_warps": cfg.num_warps, "num_stages": cfg.num_stages}
    if getattr(cfg, "num_ctas", 1) not in (None, 1):
        opts["num_ctas"] = cfg.num_ctas
    if getattr(cfg, "maxnreg", None) is not None:
        opts["maxnreg"] = cfg.maxnreg
    e = {"variant": var["label"]}
    try:
        k = triton.compile(ASTSource(fn=jit, signature=sig, constexprs=const), target=target, options=opts)
    except Exception as x:  # the autotuner drops a config that does not compile, so this is a figure
        e["error"] = ("%s: %s" % (type(x).__name__, x)).replace("\n", " ")[:300]
        return e
    e["shared"] = int(k.metadata.shared)
    e["threads"] = int(k.metadata.num_warps) * warp
    why = []
    if e["shared"] > limit:
        why.append("out of resources: shared memory (%d > %d, the %s limit per block)" % (e["shared"], limit, gen))
    if e["threads"] > MAX_THREADS:
        why.append("out of resources: threads (%d > %d)" % (e["threads"], MAX_THREADS))
    if why:
        e["why"] = "; ".join(why)
    return e


def main(argv):
    if len(argv) != 2:
        print("usage: triton_autotune_fit.py FILE.py GEN", file=sys.stderr)
        return 2
    path, gen = argv
    try:
        import triton
    except ImportError as x:
        print("triton_autotune_fit: triton is not importable (%s)" % x, file=sys.stderr)
        return 2
    try:
        import torch  # noqa: F401 - the module's launcher may import it; compiling needs none
    except ImportError:
        sys.modules.setdefault("torch", types.ModuleType("torch"))
    shim = _shim()
    out = sys.stdout
    sys.stdout = sys.stderr  # what the module prints is not the answer
    try:
        k = shim.Kernel(path, 0)
    except shim.BridgeError as x:
        print("triton_autotune_fit: %s" % x, file=sys.stderr)
        return 2
    limit = LIMIT.get(gen)
    res = {"gen": gen, "triton": triton.__version__, "limit": limit, "kernels": []}
    decl = getattr(k.mod, "AUTOTUNE_SIGNATURES", None)
    for gname, t in shim.find_autotuners(k.mod):
        kname = shim._kernel_name(t)
        e = {"kernel": kname, "global": gname, "checked": False, "configs": []}
        res["kernels"].append(e)
        jit = _jit_fn(t)
        variants, why = _variants(decl, kname)
        if limit is None:
            why = "%s is not a generation Triton compiles for here (sm_90, sm_120, gfx942, gfx950)" % gen
        elif jit is None:
            why = "%s wraps no @triton.jit function" % kname
        if why:
            e["why"] = "not checked ahead: " + why
            continue
        e["checked"] = True
        for cfg in t.configs:
            c = {"label": shim.autotune_config(cfg)["label"], "variants": []}
            for var in variants:
                c["variants"].append(compile_config(jit, cfg, var, gen, limit))
            bad = [v for v in c["variants"] if "why" in v or "error" in v]
            c["fits"] = not bad
            if bad:
                v = bad[0]
                c["why"] = "the autotuner would prune it at launch: %s%s" % (
                    v.get("why") or "does not compile: %s" % v["error"],
                    "" if len(variants) == 1 else " (variant %s)" % v["variant"])
            e["configs"].append(c)
    out.write(json.dumps(res, sort_keys=True) + "\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
