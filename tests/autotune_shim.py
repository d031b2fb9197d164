#!/usr/bin/env python3
"""autotune_shim.py - the shim's view of @triton.autotune kernels (issue 41, item 3), without a GPU.

1. describe lists every autotuner of a module: its kernel, key, configs (kwargs, num_warps,
   num_stages, num_ctas, maxnreg), its pruning and reset_to_zero (tests/resources/python/
   autotuned_gpu.py, autotuned.py).
2. tools/gpu/triton_autotune_fit.py compiles each config for sm_120, sm_90 and gfx942 with Triton's
   compiler and names those the autotuner would drop there, with the figure and the limit; a
   generation without a Triton target, and a kernel without AUTOTUNE_SIGNATURES, are "not checked
   ahead" with the reason.
3. The worker's wrapper counts each benchmark by phase, inside a graph capture (a stand-in torch
   whose is_current_stream_capturing() answers True) and inside a timed launch (the harness's
   phase cell), names the config Triton's autotuner dropped with its OutOfResources, and fails a
   launch during which the autotuner benchmarked inside a capture, naming the kernel.

Runs with the Triton of $VS_TRITON_PYTHON or the source tree's .venv-triton (it re-runs itself
there); exit 77 (skipped) when there is none.
"""
import ctypes
import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import types

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
RES = os.path.join(HERE, "resources", "python")
FIT = os.path.join(SRC, "tools", "gpu", "triton_autotune_fit.py")
SHIM = os.path.join(SRC, "kernels", "python", "mla_decode.py")


def triton_python():
    env = os.environ.get("VS_TRITON_PYTHON")
    return env if env else os.path.join(SRC, ".venv-triton", "bin", "python")


def reexec():
    try:
        import triton  # noqa: F401
        return
    except ImportError:
        pass
    py = triton_python()
    if os.environ.get("VS_AUTOTUNE_REEXEC") or not os.path.exists(py):
        print("autotune_shim: no Triton (%s): skipped" % py, file=sys.stderr)
        sys.exit(77)
    os.environ["VS_AUTOTUNE_REEXEC"] = "1"
    os.execv(py, [py, os.path.abspath(__file__)])


def load_shim():
    spec = importlib.util.spec_from_file_location("vs_test_shim", SHIM)
    m = importlib.util.module_from_spec(spec)
    sys.modules["vs_test_shim"] = m
    spec.loader.exec_module(m)
    return m


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def describe(path, arch):
    p = subprocess.run([sys.executable, SHIM, "describe", path, arch], capture_output=True, text=True)
    check(p.returncode == 0, "describe %s: %s" % (path, p.stderr))
    return json.loads(p.stdout)


def test_describe():
    d = describe(os.path.join(RES, "autotuned_gpu.py"), "sm_90")
    at = d["autotune"]
    check(len(at) == 1, at)
    a = at[0]
    check(a["kernel"] == "_gemm_kernel" and a["global"] == "_gemm_kernel", a)
    check(a["key"] == ["M", "N", "K"], a["key"])
    check(a["prune"] == {"early_config_prune": "_keep_all"}, a["prune"])
    check(a["reset_to_zero"] == ["C"] and a["restore_value"] == [], a)
    check([c["label"] for c in a["configs"]] == [
        "BM=64, BN=64, BK=32, num_warps=4, num_stages=2",
        "BM=128, BN=128, BK=256, num_warps=8, num_stages=2",
        "BM=256, BN=256, BK=256, num_warps=8, num_stages=2, maxnreg=255"], a["configs"])
    check(a["configs"][2]["maxnreg"] == 255 and a["configs"][2]["kwargs"] == {"BM": 256, "BN": 256, "BK": 256},
          a["configs"][2])
    check("maxnreg" not in a["configs"][0], a["configs"][0])
    d = describe(os.path.join(RES, "autotuned.py"), "x86_64")
    check([(x["kernel"], x["global"], x["do_bench"], len(x["configs"])) for x in d["autotune"]] ==
          [("_decode", "DECODE", "own", 3)], d["autotune"])
    # A module without Triton has no autotune list to speak of: [] (numpy.mla_decode)
    d = describe(os.path.join(SRC, "kernels", "python", "numpy_mla.py"), "x86_64")
    check(d["autotune"] == [], d["autotune"])


def fit(path, gen):
    p = subprocess.run([sys.executable, FIT, path, gen], capture_output=True, text=True)
    check(p.returncode == 0, "fit %s %s: %s" % (path, gen, p.stderr[-2000:]))
    return json.loads(p.stdout)


def test_fit():
    gpu = os.path.join(RES, "autotuned_gpu.py")
    r = fit(gpu, "sm_120")
    k = r["kernels"][0]
    check(k["checked"] and r["limit"] == 101376, r)
    got = [(c["fits"], c["variants"][0]["shared"], c.get("why")) for c in k["configs"]]
    check(got == [
        (True, 8192, None),
        (False, 131072, "the autotuner would prune it at launch: out of resources: shared memory (131072 > "
                        "101376, the sm_120 limit per block)"),
        (False, 262144, "the autotuner would prune it at launch: out of resources: shared memory (262144 > "
                        "101376, the sm_120 limit per block)")], got)
    r = fit(gpu, "sm_90")
    check([c["fits"] for c in r["kernels"][0]["configs"]] == [True, True, False], r)
    check("(262144 > 232448, the sm_90 limit per block)" in r["kernels"][0]["configs"][2]["why"], r)
    r = fit(gpu, "gfx942")
    check([c["fits"] for c in r["kernels"][0]["configs"]] == [True, True, False], r)
    check("(131072 > 65536, the gfx942 limit per block)" in r["kernels"][0]["configs"][2]["why"], r)
    r = fit(gpu, "x86_64")
    check(not r["kernels"][0]["checked"] and r["kernels"][0]["why"].startswith(
        "not checked ahead: x86_64 is not a generation Triton compiles for here"), r)
    r = fit(os.path.join(RES, "autotuned.py"), "sm_90")
    check(r["kernels"][0]["why"] == "not checked ahead: _decode wraps no @triton.jit function", r)
    with tempfile.TemporaryDirectory() as d:
        src = open(gpu).read()
        cut = src.index("AUTOTUNE_SIGNATURES = ")
        path = os.path.join(d, "nosig.py")
        with open(path, "w") as f:
            f.write(src[:cut] + src[src.index("def configs"):])
        r = fit(path, "sm_90")
    check(r["kernels"][0]["why"] == "not checked ahead: the module declares no AUTOTUNE_SIGNATURES (the argument "
          "types of _gemm_kernel are known only at a launch)", r)


class _Cuda:
    capturing = False

    @staticmethod
    def is_available():
        return True

    @classmethod
    def is_current_stream_capturing(cls):
        return cls.capturing


def test_watch():
    shim = load_shim()
    fake_torch = types.ModuleType("torch")
    fake_torch.cuda = _Cuda
    sys.modules["torch"] = fake_torch
    cell = (ctypes.c_int * 2)()
    shim.bridge_phase_at(ctypes.addressof(cell))
    k = shim.Kernel(os.path.join(RES, "autotuned.py"), 0)
    shim._kernels.append(k)
    shim.watch_autotuners(k)
    shim.watch_autotuners(k)  # idempotent: one watch per autotuner
    check(len(shim._watches) == 1 and shim._watches[0].kernel == "_decode", shim._watches)
    calls = []

    class A:  # what numpy_mla.launch() would read: never reached, its launch is replaced below
        batch, h_q = 2, 16
    k.mod.numpy_mla = types.SimpleNamespace(launch=lambda args, config: calls.append(config))
    epoch = [0]

    def fake_run_call(i, function, raw, cfg):
        k.mod.run(A(), cfg, epoch[0])
        return shim.MLA_OK

    shim._run_call = fake_run_call
    cell[0], cell[1] = 1, 0  # parity
    check(shim._run(0, "launch", None, "c") == shim.MLA_OK, shim.last_error)
    check(shim._run(0, "launch", None, "c") == shim.MLA_OK, shim.last_error)  # cached: no benchmark
    epoch[0] = 1
    cell[0], cell[1] = 4, 1  # a timed A/B launch
    check(shim._run(0, "launch", None, "c") == shim.MLA_OK, shim.last_error)
    epoch[0] = 2
    cell[0], cell[1] = 3, 0  # the capture gate, inside a capture
    _Cuda.capturing = True
    rc = shim._run(0, "launch", None, "c")
    _Cuda.capturing = False
    check(rc == shim.MLA_EDEVICE, rc)
    check("launch: autotune _decode benchmarked 3 configs inside a graph capture (the graph would hold every "
          "benchmark launch" in shim.last_error, shim.last_error)
    rep = json.loads(shim.bridge_autotune_report())
    check(len(rep) == 1, rep)
    r = rep[0]
    check((r["impl"], r["kernel"], r["runs"], r["tunings"], r["benchmarks"]) == ("test.py_autotuned", "_decode", 4, 3, 9),
          r)
    check(r["by_phase"] == {"parity": 3, "A/B": 3, "capture gate": 3}, r["by_phase"])
    check(r["in_capture"] == 3 and r["timed"] == 3, r)
    check(r["dropped"] == [{"config": "BLOCK=512, num_warps=8, num_stages=2", "why": "OutOfResources: out of "
                            "resource: shared memory, Required: 262144, Hardware limit: 163840. Reducing block "
                            "sizes or `num_stages` may help."}], r["dropped"])
    check([t["phase"] for t in r["tuning_log"]] == ["parity", "A/B", "capture gate"], r["tuning_log"])
    check(r["tuning_log"][2]["capturing"] and not r["tuning_log"][0]["capturing"], r["tuning_log"])
    # Each tuning ran the two configs that fit (the third raised first) and the chosen one; one run was cached.
    check(len(calls) == 3 * 3 + 1, calls)


def main():
    reexec()
    test_describe()
    test_fit()
    test_watch()
    print("autotune_shim: ok")


if __name__ == "__main__":
    main()
