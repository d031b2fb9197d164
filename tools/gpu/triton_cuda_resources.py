#!/usr/bin/env python3
"""triton_cuda_resources.py TARGET [--module mla_decode|dsa_decode] [--config NAME]... [--jobs N] -
compile every config of triton.mla_decode (or, --module dsa_decode, of triton.dsa_decode, the sparse
form) for an NVIDIA generation (sm_90, sm_120) ahead of time, without a GPU, and print one JSON
object per kernel: the resources each config needs there (issue 41).

Triton's CUDA backend compiles to PTX in process and assembles it with the ptxas it bundles, so
`triton.compile(ASTSource(...), target=GPUTarget("cuda", CC, 32))` needs neither a device nor a CUDA
driver. Each config of `configs(TARGET)` of kernels/triton/mla_decode.py is compiled for every KV
dtype of the module and both store paths (SPLIT false: out/lse written directly; true: split-KV
partials, then the combine kernel), with exactly the arguments and options the module's _build()
passes (FP8_ASM as its default decode, KV_INT false; num_warps, num_stages); for
kernels/triton/dsa_decode.py, every KV dtype, both store paths, the kernel variant
tools/gpu/triton_mla_kernels.py describes (topk_length, attn_sink, the extra cache of fp8_model1),
its sm_90 configs (a generation the module has no configs for, sm_120, compiles none). The figures:
Triton's `shared` (the dynamic shared memory the launch asks for, bytes), and from `ptxas -v` on
the kernel's PTX (the same ptxas, the same arch: sm_90a for sm_90, sm_120a for sm_120) the
registers per thread, the spill stores and loads (bytes) and the static shared memory.

A kernel fails when its shared memory (static + dynamic) exceeds the generation's opt-in limit per
block (sm_90: 232448 bytes, 227 KB; sm_120: 101376 bytes, 99 KB; the CUDA C Programming Guide's
"Maximum amount of shared memory per thread block" for compute capability 9.0 and 12.0): it cannot
launch there. Each entry gets "pass" and, when it fails, "why" with the figure and the limit;
spills are shown ("note") but do not fail a kernel, which runs, slower. Exit 0 when
every kernel compiled (failures against the limits are figures, not errors: the planner decides),
1 when one did not compile, 2 when Triton is not importable. torch is not needed: the module imports
it for its launcher only, and a stub stands in. The summary goes to stderr.
"""
import argparse
import concurrent.futures
import json
import os
import re
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True  # no __pycache__ in kernels/ (its git status is part of the kernel identity)

from triton_mla_kernels import MODULES, attrs, jobs, kernel_args, load_module  # noqa: E402 (after the line above)

CC = {"sm_90": 90, "sm_120": 120}
PTXAS_ARCH = {"sm_90": "sm_90a", "sm_120": "sm_120a"}
SMEM_LIMIT = {"sm_90": 232448, "sm_120": 101376}


def ptxas_path():
    import triton

    here = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin", "ptxas")
    return os.environ.get("TRITON_PTXAS_PATH") or here


def ptxas_figures(ptx, arch):
    """Registers, spills and static shared memory of the one kernel in ptx, from ptxas -v."""
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        p = subprocess.run([ptxas_path(), "-v", "--gpu-name", arch, src, "-o", os.path.join(d, "k.cubin")],
                           capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError("ptxas failed: %s" % p.stderr.strip()[-400:])
    text = p.stderr + p.stdout
    m = re.search(r"Used (\d+) registers", text)
    if not m:
        raise RuntimeError("no register count in the ptxas output: %s" % text[-400:])
    out = {"registers": int(m.group(1))}
    m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", text)
    out["spill_stores"], out["spill_loads"] = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
    m = re.search(r"(\d+) bytes smem", text)
    out["smem_static"] = int(m.group(1)) if m else 0
    return out


def compile_one(job):
    """job: (target, kernel name, config dict or None, kv_dtype, split) -> entry dict."""
    target, module, kname, cfg, dtype, split = job
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    mod = load_module(module)
    fn = getattr(mod, kname)
    sig, const, opts, label = kernel_args(mod, kname, cfg, dtype, split, getattr(mod, "FP8_DECODE", "") == "asm")
    e = {"impl": mod.NAME, "config": label, "kv_dtype": dtype,
         "kernel": "%s%s" % (kname.strip("_"), " split" if split else ""), "split": split,
         "num_warps": opts["num_warps"], "num_stages": opts["num_stages"]}
    try:
        k = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=const, attrs=attrs(sig, kname)),
                           target=GPUTarget("cuda", CC[target], 32), options=opts)
        e["symbol"] = k.metadata.name
        e["smem_dynamic"] = int(k.metadata.shared)
        e.update(ptxas_figures(k.asm["ptx"], PTXAS_ARCH[target]))
    except Exception as x:  # a config that does not compile is a figure too: its error, one line
        e["error"] = ("%s: %s" % (type(x).__name__, x)).replace("\n", " ")[:400]
    return e


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("target", choices=sorted(CC))
    ap.add_argument("--module", choices=sorted(MODULES), default="mla_decode",
                    help="kernels/triton/MODULE.py (default mla_decode)")
    ap.add_argument("--config", action="append", default=[], help="only this config (repeatable)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    try:
        import triton
    except ImportError as x:
        print("triton_cuda_resources: triton is not importable (%s): run tools/install-deps" % x, file=sys.stderr)
        sys.exit(2)
    mod = load_module(a.module)
    cfgs = mod.configs(a.target)
    if a.config:
        missing = sorted(set(a.config) - {c["name"] for c in cfgs})
        if missing:
            sys.exit("triton_cuda_resources: %s has no %s config %s" % (mod.NAME, a.target, ", ".join(missing)))
        cfgs = [c for c in cfgs if c["name"] in a.config]
    if not cfgs:
        sys.exit("triton_cuda_resources: %s has no %s configs" % (mod.NAME, a.target))
    todo = [(a.target, a.module) + j for j in jobs(mod, cfgs, False)]
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        results = list(ex.map(compile_one, todo))
    status, nfail = 0, 0
    for e in results:
        why = []
        if "error" in e:
            status = 1
            why.append("does not compile: %s" % e["error"])
        else:
            smem = e["smem_static"] + e["smem_dynamic"]
            e["smem"] = smem
            e["smem_limit"] = SMEM_LIMIT[a.target]
            if smem > SMEM_LIMIT[a.target]:
                why.append("needs %d bytes of shared memory > %d, the %s limit per block" %
                           (smem, SMEM_LIMIT[a.target], a.target))
            if e["spill_stores"] or e["spill_loads"]:  # a figure to show, not a limit: it runs, slower
                e["note"] = "spills (%d bytes stored, %d loaded)" % (e["spill_stores"], e["spill_loads"])
        e["pass"] = not why
        if why:
            nfail += 1
            e["why"] = ", ".join(why)
        print(json.dumps(e, separators=(",", ":")))
    print("triton_cuda_resources: %d kernels of %s compiled for %s (triton %s), %d fail the limits" % (
          len(results), mod.NAME, a.target, triton.__version__, nfail), file=sys.stderr)
    sys.exit(status)


if __name__ == "__main__":
    main()
