"""Keys-major (S^T = K q^T) against heads-major for triton.mla_decode's bh64 configs at h_q 128:
parity on the h_q 128 cases, then do_bench on two headline shapes. VS_TRITON_KEYS_MAJOR_MAX_BH
picks the kernel; run once per value in separate processes."""
import os, sys, time
sys.path.insert(0, "tools/gpu")
import py_kernels_check as P
import torch
mode = sys.argv[1]
os.environ["VS_TRITON_KEYS_MAJOR_MAX_BH"] = mode
H16 = mode == "h16"
if H16:
    os.environ["VS_TRITON_KEYS_MAJOR_MAX_BH"] = "32"
mod = P.load_module("triton")
if H16:
    # candidate memory-bound configs, injected into the module's table for this process only
    extra = [mod._cfg(32, 16, 0, 4, 3), mod._cfg(32, 16, 0, 4, 4), mod._cfg(32, 16, 2, 4, 3),
             mod._cfg(32, 16, 0, 8, 4), mod._cfg(64, 16, 2, 4, 2)]
    mod._CONFIGS["sm_90"][:] = extra
    _orig = P.load_module
    P.load_module = lambda kind: mod
    cfgs = extra
    cases = ["b4-p16-sq1-h16-ragged", "b4-p64-sq1-h16-allzero", "b128-p64-sq1-h16-ragged", "b4-p1-sq2-h16",
             "fixed-b4-p16-sq2-h16-nanvisible"]
else:
    cfgs = [c for c in mod.configs("sm_90") if c["block_h"] == 64]
    cases = ["b2-p16-sq2-h128-long", "b66-p16-sq2-h128-ragged", "b1-p64-sq2-h128-len1", "b3-p64-sq2-h20", "b2-p1-sq1-h128"]
passed = set()
for c in cfgs:
    r = P.worker_cases("triton", c["name"], {}, cases, False)
    print("KM%s %s pass %d fail %d" % (mode, c["name"], r["pass"], r["fail"]), flush=True)
    for ln in r["lines"]:
        if not ln.startswith("PASS"):
            print("  ", ln[:300], flush=True)
    if r["fail"] == 0:
        passed.add(("triton", c["name"]))
P.BENCH = [b for b in P.BENCH if (b[1] == 16) == H16 and b[4] == "bf16"]
class L:
    def write(self, s): pass
    def flush(self): pass
for ln in P.bench(torch, ["triton"], passed, 1e9, time.time(), L()):
    print("KM%s %s" % (mode, ln), flush=True)
