#!/usr/bin/env python3
"""tilelang_amd_emit.py OUT_DIR [--known FILE] - the gfx942 gate's TileLang half: emit the HIP source of
every gfx942 config of kernels/tilelang/mla_decode.py for every KV dtype, without a GPU or ROCm, and
try to compile it for gfx942 with Debian's clang-19 and HIP 5.2 headers.

Each config is built by the module's own _build() (its arguments from the module's _key() for an
s_q 1, h_q 16, page-64 shape, the rows its gfx942 configs are for), with tilelang.compile replaced by
tilelang.lower for the target {"kind": "hip", "mcpu": "gfx942"}: TileLang's ROCm pipeline (MFMA
layouts, its HIP code generator) runs whole, and only hipcc, which is not here, is skipped. The
source goes to OUT_DIR/tilelang-<config>-<dtype>.hip; clang++-19 then compiles it device-only with
TileLang's HIP templates. One JSON object a line on stdout per config and dtype: "emitted", its
"source_bytes", "compiled", and "why" when either failed.

A probe follows for each dtype: the first config with one wavefront (num_warps 2: 64 threads)
and, for fp8, the module's "scalar" fp8 decode (its "tile" decode asserts 64-key tiles): not a
config of the module, marked "probe", run so that the rest of the path (emission, then the
compile and its blocker) is checked while the module's own configs do not emit.

Gate rules: a config that does not emit fails (exit 1) unless listed in --known (lines
"gfx942 CONFIG KV_DTYPE emit"), and a listed one that emits fails too (the list must stay true). A
compile stopped by a header Debian 12 does not have (TileLang's templates want ROCm 6's hip_bf16.h,
amd_hip_fp8.h and rocWMMA) is "blocked", recorded, not a failure; any other compile error fails.
torch is not needed: tools/gpu/torch_stub stands in where it is not installed.
"""
import argparse
import importlib.util
import json
import os
import re
import subprocess
import sys
import types

sys.dont_write_bytecode = True  # no __pycache__ in kernels/ (its git status is part of the kernel identity)

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = os.path.join(SRC, "kernels", "tilelang", "mla_decode.py")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("--known")
    ap.add_argument("--clangxx", default=os.environ.get("CLANGXX", "clang++-19"))
    a = ap.parse_args()
    known = set()
    if a.known:
        with open(a.known) as f:
            for line in f:
                w = line.split("#", 1)[0].split()
                if w:
                    known.add(tuple(w))
    try:
        import torch  # noqa: F401
    except ImportError:
        sys.path.insert(0, os.path.join(SRC, "tools", "gpu", "torch_stub"))
    try:
        import tilelang
        from tilelang import tvm
    except Exception as e:
        sys.exit("tilelang_amd_emit: tilelang is not importable (%s): run tools/install-deps" % e)
    spec = importlib.util.spec_from_file_location("vs_tilelang_mla_decode", MODULE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    target = tvm.target.Target({"kind": "hip", "mcpu": "gfx942"})

    def lower_only(func, out_idx=None, target=None, pass_configs=None):
        with tvm.transform.PassContext(opt_level=3, config=pass_configs or {}), target:
            return tilelang.lower(func, target=target)

    tilelang.compile = lower_only
    mod._TARGET = target
    templates = os.path.join(os.path.dirname(tilelang.__file__), "src")
    os.makedirs(a.out_dir, exist_ok=True)
    status = 0
    cfgs = mod.configs("gfx942")
    if not cfgs:
        sys.exit("tilelang_amd_emit: %s has no gfx942 configs" % mod.NAME)
    jobs = [(cfg, dtype, False) for cfg in cfgs for dtype in mod.KV_DTYPES]
    jobs += [(dict(cfgs[0], name="probe-%s-w2" % cfgs[0]["name"], num_warps=2), dtype, True) for dtype in mod.KV_DTYPES]
    fp8_decode = mod.FP8_DECODE
    for cfg, dtype, probe in jobs:
        mod.FP8_DECODE = "scalar" if probe else fp8_decode
        shape = types.SimpleNamespace(batch=1, s_q=1, h_q=16, page_size=64, kv_dtype=dtype,
                                      softmax_scale=576 ** -0.5, kv_scale=1.0)
        e = {"impl": mod.NAME, "config": cfg["name"], "kv_dtype": dtype, "target": "gfx942",
             "emitted": False, "compiled": False}
        if probe:
            e["probe"] = True
        try:
            art = mod._build(*mod._key(shape, cfg))
            source = art.kernel_source
        except Exception as ex:  # what the module's build raises on this target, whatever it is
            msg = str(ex).strip().splitlines()
            e["why"] = "emit: %s: %s" % (type(ex).__name__, msg[-1] if msg else "")
            source = None
        if source:
            e["emitted"] = True
            e["source_bytes"] = len(source)
            path = os.path.join(a.out_dir, "tilelang-%s-%s.hip" % (cfg["name"], dtype))
            with open(path, "w") as f:
                f.write(source)
            r = subprocess.run([a.clangxx, "-x", "hip", "--offload-arch=gfx942", "--cuda-device-only", "-nogpulib",
                                "-O3", "-std=c++17", "-I" + templates, "-c", path, "-o", path + ".o"],
                               capture_output=True, text=True)
            if r.returncode == 0:
                e["compiled"] = True
            else:
                first = next((ln for ln in r.stderr.splitlines() if "error:" in ln), r.stderr.strip()[:200])
                m = re.search(r"'([^']+)' file not found", first)
                if m and not os.path.exists(os.path.join("/usr/include", m.group(1))):
                    e["blocked"] = True
                    e["why"] = "compile blocked: Debian 12 has no <%s> (%s)" % (
                        m.group(1), first.replace(templates + "/", ""))
                else:
                    e["why"] = "compile: %s" % first
                    status = 1
                    print("tilelang_amd_emit: %s %s: %s" % (cfg["name"], dtype, e["why"]), file=sys.stderr)
        key = ("gfx942", cfg["name"], dtype, "emit")
        if not e["emitted"] and probe:
            status = 1
            print("tilelang_amd_emit: the probe %s %s does not emit: %s" % (cfg["name"], dtype, e["why"]), file=sys.stderr)
        elif not e["emitted"]:
            if key in known:
                e["known"] = True
                print("tilelang_amd_emit: known: %s %s %s" % (cfg["name"], dtype, e["why"]), file=sys.stderr)
            else:
                status = 1
                print("tilelang_amd_emit: %s %s does not emit: %s" % (cfg["name"], dtype, e["why"]), file=sys.stderr)
        elif key in known:
            status = 1
            print("tilelang_amd_emit: %s %s emits but is listed in %s: remove it there" % (cfg["name"], dtype, a.known),
                  file=sys.stderr)
        print(json.dumps(e, separators=(",", ":")))
        sys.stdout.flush()
    sys.exit(status)


if __name__ == "__main__":
    main()
