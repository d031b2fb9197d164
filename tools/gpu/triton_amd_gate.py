#!/usr/bin/env python3
"""triton_amd_gate.py OUT_DIR TARGET [--module mla_decode|dsa_decode] [--jobs N] [--known FILE] - compile every AMD
config of triton.mla_decode (or, --module dsa_decode, of triton.dsa_decode: the sparse form) ahead of time for TARGET
(gfx942 or gfx950) without a GPU or ROCm, and print one JSON object per kernel.

Triton's AMD backend links in process (its own LLVM and ld.lld, its own ocml/ockl bitcode), so
`triton.compile(ASTSource(...), target=GPUTarget("hip", TARGET, 64))` needs neither a device nor
ROCm. Each config of `configs(TARGET)` of kernels/triton/mla_decode.py (for gfx950, which the module
has no configs for yet, its gfx942 configs, marked "from":"gfx942") is compiled for every KV dtype
of the module and both store paths (SPLIT false: out/lse written directly; true: split-KV partials,
then the combine kernel), with exactly the arguments and options the module's _build() passes on
an AMD torch (FP8_ASM false: no PTX; KV_INT false; num_warps, num_stages). triton.dsa_decode's configs are
compiled for bf16 and the fnuz twins (the formats gfx942 reads natively), both store paths, in the variant
tools/gpu/triton_mla_kernels.py describes (topk_length, attn_sink, the extra cache of fp8_model1), with
Triton's own fnuz conversion as its launcher picks it on AMD. The figures come from the
code object's metadata (the `.amdgpu_metadata` of the amdgcn text, the same keys the HIP gate reads
with llvm-readelf): VGPRs, AGPRs, SGPRs, scratch, VGPR/SGPR spills, and LLVM's occupancy (waves per
SIMD); LDS is Triton's `shared` (allocated dynamically at launch, so the static LDS is 0).

The gate, as the HIP gate's: a kernel fails on any VGPR/SGPR spill, any scratch, or LDS over the
generation's limit (65536 bytes on gfx942, 163840 on gfx950); each entry gets "pass" and, when it
fails, "why". A failure listed in --known (lines "TARGET CONFIG KV_DTYPE KERNEL", '#' comments: the
failures found and not fixed yet, each a reason to change the config) is reported but does not fail
the run; one not listed fails it (exit 1), and so does a listed one that no longer fails (the list
must stay true). The code objects are left in OUT_DIR/triton-*.hsaco. Called by
tools/gpu/gfx942_gate.sh, which puts the entries (one JSON object a line on stdout) in
resources.json. torch is not needed: the module imports it for its launcher only, and a stub
stands in.
"""
import argparse
import concurrent.futures
import json
import os
import re
import sys

sys.dont_write_bytecode = True  # no __pycache__ in kernels/ (its git status is part of the kernel identity)

from triton_mla_kernels import MODULES, attrs, jobs, kernel_args, load_module  # noqa: E402 (after the line above)

LDS_LIMIT = {"gfx942": 65536, "gfx950": 163840}


def figures(amdgcn):
    """Figures of the one kernel in an amdgcn listing: its .amdgpu_metadata keys and '; Occupancy:'."""
    out = {}
    for key, name in (("vgpr_count", "vgpr"), ("agpr_count", "agpr"), ("sgpr_count", "sgpr"),
                      ("private_segment_fixed_size", "scratch"), ("group_segment_fixed_size", "lds_static"),
                      ("vgpr_spill_count", "vgpr_spill"), ("sgpr_spill_count", "sgpr_spill")):
        m = re.search(r"^\s*(?:- )?\.%s:\s*(\d+)" % key, amdgcn, re.M)
        if not m:
            raise RuntimeError("no .%s in the kernel metadata" % key)
        out[name] = int(m.group(1))
    m = re.search(r"^; Occupancy: (\d+)", amdgcn, re.M)
    out["occupancy"] = int(m.group(1)) if m else 0
    return out


def compile_one(job):
    """job: (target, out_dir, module, kernel name, config dict or None, kv_dtype, split) -> entry dict."""
    target, out_dir, module, kname, cfg, dtype, split = job
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    mod = load_module(module)
    fn = getattr(mod, kname)
    sig, const, opts, label = kernel_args(mod, kname, cfg, dtype, split, False, True)
    if cfg is not None:
        for amd in ("kpack", "matrix_instr_nonkdim", "waves_per_eu"):  # --config only: the launcher passes none
            if amd in cfg:
                opts[amd] = int(cfg[amd])
    k = triton.compile(ASTSource(fn=fn, signature=sig, constexprs=const, attrs=attrs(sig, kname)),
                       target=GPUTarget("hip", target, 64), options=opts)
    base = "triton-%s%s-%s-%s%s" % ("" if module == "mla_decode" else module + "-", label, dtype, kname.strip("_"),
                                    "-split" if split else "")
    with open(os.path.join(out_dir, base + ".hsaco"), "wb") as f:
        f.write(k.asm["hsaco"])
    e = {"impl": mod.NAME, "config": label, "kv_dtype": dtype, "symbol": k.metadata.name,
         "kernel": "%s%s" % (kname.strip("_"), " split" if split else ""), "split": split}
    e.update(figures(k.asm["amdgcn"]))
    e["lds_dynamic"] = int(k.metadata.shared)
    e["num_warps"] = opts["num_warps"]
    e["num_stages"] = opts["num_stages"]
    return e


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out_dir")
    ap.add_argument("target", choices=("gfx942", "gfx950"))
    ap.add_argument("--module", choices=sorted(MODULES), default="mla_decode",
                    help="kernels/triton/MODULE.py (default mla_decode)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--known", help="the known failures (TARGET CONFIG KV_DTYPE KERNEL a line)")
    ap.add_argument("--config", action="append", default=[], metavar="BN,BH,WARPS,STAGES[,KPACK,NONKDIM,WAVES]",
                    help="compile these configs instead of the module's (a study: the gate never passes it); "
                         "BH <= 32 runs keys-major as the module does")
    a = ap.parse_args()
    known = set()
    if a.known:
        with open(a.known) as f:
            for line in f:
                words = line.split("#", 1)[0].split()
                if words:
                    if len(words) < 4:
                        sys.exit("triton_amd_gate: %s: bad line '%s'" % (a.known, line.strip()))
                    known.add((words[0], words[1], words[2], " ".join(words[3:])))
    try:
        import triton
    except ImportError as e:
        sys.exit("triton_amd_gate: triton is not importable (%s): run tools/install-deps" % e)
    mod = load_module(a.module)
    cfgs = mod.configs(a.target)
    origin = a.target
    if a.config:
        cfgs, origin = [], a.target
        for spec in a.config:
            v = [int(x) for x in spec.split(",")]
            c = mod._cfg(v[0], v[1], 0, v[2], v[3])
            for k, x in zip(("kpack", "matrix_instr_nonkdim", "waves_per_eu"), v[4:]):
                c[k] = x
                c["name"] += "-%s%d" % ({"kpack": "kp", "matrix_instr_nonkdim": "nk", "waves_per_eu": "wpe"}[k], x)
            cfgs.append(c)
    if not cfgs and a.target == "gfx950":
        cfgs, origin = mod.configs("gfx942"), "gfx942"
    if not cfgs:
        sys.exit("triton_amd_gate: %s has no %s configs" % (mod.NAME, a.target))
    todo = [(a.target, a.out_dir, a.module) + j for j in jobs(mod, cfgs, True)]
    os.makedirs(a.out_dir, exist_ok=True)
    with concurrent.futures.ProcessPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        results = list(ex.map(compile_one, todo))
    status, nfail = 0, 0
    for e in results:
        if origin != a.target:
            e["from"] = origin
        why = []
        if e["vgpr_spill"] or e["sgpr_spill"]:
            why.append("spills (%d VGPR, %d SGPR)" % (e["vgpr_spill"], e["sgpr_spill"]))
        if e["scratch"]:
            why.append("uses %d bytes of scratch" % e["scratch"])
        lds = e["lds_static"] + e["lds_dynamic"]
        if lds > LDS_LIMIT[a.target]:
            why.append("uses %d bytes of LDS > %d" % (lds, LDS_LIMIT[a.target]))
        e["pass"] = not why
        key = (a.target, e["config"], e["kv_dtype"], e["kernel"])
        if why:
            nfail += 1
            e["why"] = ", ".join(why)
            if key in known:
                e["known"] = True
                print("triton_amd_gate: known: %s %s %s (%s) %s" % (key + (e["why"],)), file=sys.stderr)
            else:
                status = 1
                print("triton_amd_gate: %s %s %s (%s) %s" % (key + (e["why"],)), file=sys.stderr)
        elif key in known:
            status = 1
            print("triton_amd_gate: %s %s %s (%s) passes but is listed in %s: remove it there" % (key + (a.known,)),
                  file=sys.stderr)
        known.discard(key)
        print(json.dumps(e, separators=(",", ":")))
    # the listed failures of this module's kernels (mla_* of triton.mla_decode, dsa_* of triton.dsa_decode)
    for key in sorted(k for k in known if k[0] == a.target and k[3].startswith(a.module[:4])):
        status = 1
        print("triton_amd_gate: %s %s %s (%s) is listed in %s but was not compiled" % (key + (a.known,)),
              file=sys.stderr)
    print("triton_amd_gate: %d kernels of %s compiled for %s (triton %s), %d fail the limits" % (
          len(results), mod.NAME, a.target, triton.__version__, nfail), file=sys.stderr)
    sys.exit(status)


if __name__ == "__main__":
    main()
