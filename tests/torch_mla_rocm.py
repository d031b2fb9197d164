#!/usr/bin/env python3
"""torch_mla_rocm.py - the runtime selection of kernels/torch/mla_decode.py (torch.mla_decode) for
torch built for CUDA or for ROCm (issue 39 item 3), without a GPU.

What runs here:
  * RUNTIMES: each runtime's symbol names and enum values, and, where the headers are on this
    machine, the same values read from them (cuda.h of /usr/local/cuda; Debian's HIP headers,
    /usr/include/hip, and the HIP headers Triton bundles), the prototypes of the six calls present;
  * runtime_name(): 'hip' for a torch whose version.hip is set (a fake torch), 'cuda' otherwise;
  * _open_runtime(): the HIP library torch mapped (a fake /proc/self/maps) opened first, the next
    name when it does not load, the calls bound to the runtime's symbols with their argument types,
    a library lacking a call refused; the CUDA one opens libcuda.so.1;
  * the real libraries where present (Debian's libamdhip64 5.2, CUDA's libcuda stub): every call
    binds; a libamdhip64 this process loaded is found in /proc/self/maps and opened by its path;
  * launch() against a fake runtime and a fake torch: not capturing -> the graph launch on the
    harness's stream; capturing -> capture info, child graph node on its dependencies, the
    dependencies set to that node (SET_CAPTURE_DEPENDENCIES); a failing call raises, naming it;
  * prepare()'s pointer check asks DEVICE_POINTER; configs(): gfx942 and gfx950 plan as sm_90 does,
    other arches get none; BACKEND stays "cuda" (the contract's GPU-tensor backend on both vendors).

  python3 tests/torch_mla_rocm.py          (exit 0 pass, 1 fail)

Without torch in this interpreter it re-runs itself under $VS_PYTHON when that one differs, else
runs with a stub torch module (the module under test runs nothing of torch at import, nor do these
checks). The HIP path itself has not run on an MI300X: this checks its wiring, not the runtime.
"""
import ctypes
import glob
import importlib.util
import os
import re
import subprocess
import sys
import types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

try:
    import torch
    STUB = False
except ImportError as e:
    other = os.environ.get("VS_PYTHON")
    if other and os.path.abspath(other) != os.path.abspath(sys.executable) and \
       not os.environ.get("VS_TORCH_ROCM_REEXEC"):
        env = dict(os.environ, VS_TORCH_ROCM_REEXEC="1")
        sys.exit(subprocess.call([other, os.path.abspath(__file__)] + sys.argv[1:], env=env))
    # No torch anywhere (CI): the module's import needs only the name (nothing of torch runs at
    # import, and nothing checked here calls torch): a stub torch, a CUDA build of it.
    print("torch_mla_rocm: no torch (%s): a stub module stands for it" % e)
    torch = types.ModuleType("torch")
    torch.version = types.SimpleNamespace(hip=None, cuda="13.0")
    sys.modules["torch"] = torch
    STUB = True

spec = importlib.util.spec_from_file_location("torch_mla_decode_rocm",
                                              os.path.join(ROOT, "kernels", "torch", "mla_decode.py"))
M = importlib.util.module_from_spec(spec)
spec.loader.exec_module(M)

FAILS = []


def check(cond, what):
    if not cond:
        FAILS.append(what)
        print("FAIL %s" % what)


# The names and values as the runtimes' headers spell them (cuda.h of CUDA 13.0; hip_runtime_api.h
# and driver_types.h of HIP 5.2 and 7.1): written here, not read from the module.
WANT = {
    "cuda": {"graph_instantiate": "cuGraphInstantiateWithFlags", "graph_launch": "cuGraphLaunch",
             "stream_is_capturing": "cuStreamIsCapturing",
             "stream_get_capture_info": "cuStreamGetCaptureInfo_v2",
             "graph_add_child_graph_node": "cuGraphAddChildGraphNode",
             "stream_update_capture_dependencies": "cuStreamUpdateCaptureDependencies",
             "pointer_get_attribute": "cuPointerGetAttribute",
             "CAPTURE_STATUS_NONE": 0, "SET_CAPTURE_DEPENDENCIES": 1,
             "POINTER_ATTRIBUTE_DEVICE_POINTER": 3},
    "hip": {"graph_instantiate": "hipGraphInstantiateWithFlags", "graph_launch": "hipGraphLaunch",
            "stream_is_capturing": "hipStreamIsCapturing",
            "stream_get_capture_info": "hipStreamGetCaptureInfo_v2",
            "graph_add_child_graph_node": "hipGraphAddChildGraphNode",
            "stream_update_capture_dependencies": "hipStreamUpdateCaptureDependencies",
            "pointer_get_attribute": "hipPointerGetAttribute",
            "CAPTURE_STATUS_NONE": 0, "SET_CAPTURE_DEPENDENCIES": 1,
            "POINTER_ATTRIBUTE_DEVICE_POINTER": 3},
}


def check_table():
    check(set(M.RUNTIMES) == {"cuda", "hip"}, "RUNTIMES names cuda and hip")
    for rt, want in WANT.items():
        for k, v in want.items():
            check(M.RUNTIMES[rt].get(k) == v, "RUNTIMES[%s][%s] = %r, want %r"
                  % (rt, k, M.RUNTIMES[rt].get(k), v))
        check(set(M.CALLS) <= set(M.RUNTIMES[rt]), "RUNTIMES[%s] names every call" % rt)
    check(M.RUNTIMES["cuda"]["libraries"][0] == "libcuda.so.1", "cuda opens libcuda.so.1")
    check(all(n.startswith("libamdhip64.so") for n in M.RUNTIMES["hip"]["libraries"]),
          "hip opens libamdhip64")


def enum_values(text, enum):
    """{name: value} of `typedef enum enum { ... }` in a C header (implicit values counted)."""
    m = re.search(r"typedef\s+enum\s+%s\s*\{(.*?)\}" % re.escape(enum), text, re.S)
    if not m:
        return None
    body = re.sub(r"//[^\n]*|/\*.*?\*/", "", m.group(1), flags=re.S)
    out, nxt = {}, 0
    for item in [x.strip() for x in body.split(",") if x.strip()]:
        name, _, val = item.partition("=")
        nxt = int(val.strip(), 0) if val.strip() else nxt
        out[name.strip()] = nxt
        nxt += 1
    return out


def check_headers():
    """The table against the headers found on this machine (each one found is checked)."""
    seen = 0
    cuda_h = "/usr/local/cuda/include/cuda.h"
    if os.path.exists(cuda_h):
        seen += 1
        text = open(cuda_h, errors="replace").read()
        for name, val in (("CU_STREAM_CAPTURE_STATUS_NONE", 0), ("CU_STREAM_SET_CAPTURE_DEPENDENCIES", 1),
                          ("CU_POINTER_ATTRIBUTE_DEVICE_POINTER", 3)):
            m = re.search(r"\b%s\s*=\s*(0x[0-9a-fA-F]+|\d+)" % name, text)
            check(m is not None and int(m.group(1), 0) == val, "cuda.h: %s = %d" % (name, val))
        for call in M.CALLS:
            sym = M.RUNTIMES["cuda"][call]
            # declared under its name, or under an API name cuda.h #defines to it
            # (cuGraphInstantiate -> cuGraphInstantiateWithFlags)
            names = [sym] + re.findall(r"#define\s+(\w+)\s+(?:__CUDA_API_\w+\()?%s\b" % re.escape(sym), text)
            check(any(re.search(r"CUresult CUDAAPI %s\(" % re.escape(n), text) for n in names),
                  "cuda.h declares %s" % sym)
    hip_dirs = ["/usr/include/hip"] + sorted({os.path.realpath(d) for p in sys.path if p for d in glob.glob(
        os.path.join(p, "triton", "backends", "amd", "include", "hip"))})
    for d in hip_dirs:
        api, types_h = os.path.join(d, "hip_runtime_api.h"), os.path.join(d, "driver_types.h")
        if not (os.path.exists(api) and os.path.exists(types_h)):
            continue
        seen += 1
        text = open(api, errors="replace").read() + open(types_h, errors="replace").read()
        status = enum_values(text, "hipStreamCaptureStatus") or {}
        flags = enum_values(text, "hipStreamUpdateCaptureDependenciesFlags") or {}
        attrs = enum_values(text, "hipPointer_attribute") or {}
        hip = M.RUNTIMES["hip"]
        check(status.get("hipStreamCaptureStatusNone") == hip["CAPTURE_STATUS_NONE"],
              "%s: hipStreamCaptureStatusNone %s" % (d, status.get("hipStreamCaptureStatusNone")))
        check(flags.get("hipStreamSetCaptureDependencies") == hip["SET_CAPTURE_DEPENDENCIES"],
              "%s: hipStreamSetCaptureDependencies %s" % (d, flags.get("hipStreamSetCaptureDependencies")))
        check(attrs.get("HIP_POINTER_ATTRIBUTE_DEVICE_POINTER") == hip["POINTER_ATTRIBUTE_DEVICE_POINTER"],
              "%s: HIP_POINTER_ATTRIBUTE_DEVICE_POINTER %s" % (d, attrs.get("HIP_POINTER_ATTRIBUTE_DEVICE_POINTER")))
        for call in M.CALLS:
            sym = hip[call]
            check(re.search(r"hipError_t\s+%s\s*\(" % re.escape(sym), text) is not None,
                  "%s declares %s" % (d, sym))
    print("headers checked: %d" % seen)


def check_runtime_name():
    check(M.runtime_name(types.SimpleNamespace(version=types.SimpleNamespace(hip="6.4.43482"))) == "hip",
          "runtime_name: version.hip set -> hip")
    check(M.runtime_name(types.SimpleNamespace(version=types.SimpleNamespace(hip=None, cuda="13.0"))) ==
          "cuda", "runtime_name: version.hip None -> cuda")
    want = "hip" if getattr(torch.version, "hip", None) else "cuda"
    check(M.runtime_name() == want, "runtime_name() of this torch: %s" % want)


class FakeFn:
    def __init__(self, lib, name):
        self.lib, self.name, self.argtypes, self.restype = lib, name, None, None

    def __call__(self, *a):
        self.lib.calls.append((self.name, a))
        return self.lib.behave(self.name, a)


class FakeLib:
    """A library whose functions record their calls; `missing` names symbols it lacks."""

    def __init__(self, path, missing=(), behave=None):
        self.path, self.calls, self.missing = path, [], set(missing)
        self.behave = behave or (lambda name, a: 0)
        self.fns = {}

    def __getattr__(self, name):
        if name.startswith("__") or name in self.__dict__.get("missing", ()):
            raise AttributeError("undefined symbol: %s" % name)
        fns = self.__dict__["fns"]
        if name not in fns:
            fns[name] = FakeFn(self, name)
        return fns[name]


MAPS = """7f0000000000-7f0000001000 r--p 00000000 08:01 123 /usr/lib/x86_64-linux-gnu/libc.so.6
7f0000100000-7f0000200000 r-xp 00000000 08:01 456 /venv/lib/python3.12/site-packages/torch/lib/libamdhip64.so.6
7f0000300000-7f0000301000 rw-p 00000000 00:00 0 
7f0000400000-7f0000401000 r--p 00000000 00:00 0 [vdso]
"""


def check_open():
    opened = []

    def cdll(name):
        opened.append(name)
        return FakeLib(name)

    rt = M._open_runtime("hip", cdll, MAPS)
    check(opened == ["/venv/lib/python3.12/site-packages/torch/lib/libamdhip64.so.6"],
          "hip: opens the libamdhip64 torch mapped first (%s)" % opened)
    check(rt.name == "hip" and rt.error == "hipError_t", "hip: runtime name and error type")
    for call in M.CALLS:
        fn = getattr(rt, call)
        check(isinstance(fn, FakeFn) and fn.name == WANT["hip"][call], "hip: %s bound to %s"
              % (call, WANT["hip"][call]))
        check(fn.argtypes is not None and fn.restype is ctypes.c_int, "hip: %s typed" % call)
    check(len(rt.stream_get_capture_info.argtypes) == 6, "GetCaptureInfo_v2 takes 6 arguments")
    check(len(rt.graph_add_child_graph_node.argtypes) == 5, "AddChildGraphNode takes 5 arguments")
    check(rt.stream_update_capture_dependencies.argtypes[-1] is ctypes.c_uint,
          "UpdateCaptureDependencies' flags are an unsigned int")
    check(rt.graph_instantiate.argtypes[-1] is ctypes.c_ulonglong,
          "GraphInstantiateWithFlags' flags are an unsigned long long")
    check(rt.pointer_get_attribute.argtypes[1] is ctypes.c_int, "PointerGetAttribute's attribute an int")

    # the mapped copy does not load: the next names, in order
    opened.clear()

    def cdll_fail_first(name):
        opened.append(name)
        if len(opened) == 1:
            raise OSError("cannot open")
        return FakeLib(name)

    rt = M._open_runtime("hip", cdll_fail_first, MAPS)
    check(opened[:2] == ["/venv/lib/python3.12/site-packages/torch/lib/libamdhip64.so.6", "libamdhip64.so"],
          "hip: falls back to libamdhip64.so (%s)" % opened)
    # nothing mapped: the names of the table
    opened.clear()
    M._open_runtime("hip", cdll, "7f0-7f1 r--p 0 08:01 1 /lib/libc.so.6\n")
    check(opened == ["libamdhip64.so"], "hip, nothing mapped: libamdhip64.so (%s)" % opened)
    # a library without one of the calls
    try:
        M._open_runtime("hip", lambda n: FakeLib(n, missing={"hipStreamGetCaptureInfo_v2"}), MAPS)
        check(False, "hip: a library lacking hipStreamGetCaptureInfo_v2 is refused")
    except RuntimeError as e:
        check("hipStreamGetCaptureInfo_v2" in str(e) and "hip runtime" in str(e),
              "the refusal names the call: %s" % e)
    # cuda: libcuda.so.1, never a mapped HIP library
    opened.clear()
    rt = M._open_runtime("cuda", cdll, MAPS)
    check(opened == ["libcuda.so.1"] and rt.error == "CUresult", "cuda: opens libcuda.so.1 (%s)" % opened)
    for call in M.CALLS:
        check(getattr(rt, call).name == WANT["cuda"][call], "cuda: %s bound to %s" % (call, WANT["cuda"][call]))
    # the real parser over this process's maps: libc is mapped here
    libc = M._mapped_library("libc.so")
    check(libc is not None and os.path.exists(libc), "_mapped_library finds this process's libc (%s)" % libc)


HIP_LIBS = ("/usr/lib/x86_64-linux-gnu/libamdhip64.so.5", "/opt/rocm/lib/libamdhip64.so")
CUDA_LIBS = ("/usr/local/cuda/lib64/stubs/libcuda.so",)


def check_real_libraries():
    """
    Where a real HIP runtime (Debian's libamdhip64 5.2) or CUDA's libcuda stub is on this machine,
    every call binds to it (nothing is called); a HIP runtime this process loaded is found in the
    real /proc/self/maps and opened by that path.
    """
    seen = 0
    for path in HIP_LIBS:
        if not os.path.exists(path):
            continue
        seen += 1
        try:
            ctypes.CDLL(path)          # as torch would have loaded it
        except OSError as e:
            check(False, "%s loads: %s" % (path, e))
            continue
        mapped = M._mapped_library("libamdhip64.so")
        check(mapped is not None and os.path.realpath(mapped) == os.path.realpath(path),
              "the loaded %s is found mapped (%s)" % (path, mapped))
        try:
            rt = M._open_runtime("hip")
            check(os.path.realpath(rt.lib._name) == os.path.realpath(path),
                  "hip: opens the mapped copy %s (%s)" % (path, rt.lib._name))
        except RuntimeError as e:
            check(False, "hip: every call binds to %s: %s" % (path, e))
        break
    for path in CUDA_LIBS:
        if not os.path.exists(path):
            continue
        seen += 1
        try:
            M._open_runtime("cuda", lambda n: ctypes.CDLL(path))
        except RuntimeError as e:
            check(False, "cuda: every call binds to %s: %s" % (path, e))
    print("real runtime libraries bound: %d" % seen)


def fake_torch(stream_handle):
    st = types.SimpleNamespace(cuda_stream=stream_handle)
    return types.SimpleNamespace(cuda=types.SimpleNamespace(current_stream=lambda: st),
                                 version=types.SimpleNamespace(hip="6.4"))


def check_launch():
    args = types.SimpleNamespace(q=None)
    key = ("fake-task",)
    real_torch, real_key, real_cu = M.torch, M._key, M._cu
    try:
        M._key = lambda a: key
        M._graphs[key] = (None, ctypes.c_void_p(0x1111), ctypes.c_void_p(0x2222))
        M.torch = fake_torch(0xABC0)
        for capturing in (False, True):
            def behave(name, a, capturing=capturing):
                if name == "hipStreamIsCapturing":
                    a[1]._obj.value = 1 if capturing else 0
                if name == "hipStreamGetCaptureInfo_v2":
                    a[1]._obj.value = 1
                    a[3]._obj.value = 0x3333               # the capture's graph
                    a[5]._obj.value = 2                    # two dependencies
                if name == "hipGraphAddChildGraphNode":
                    a[0]._obj.value = 0x4444               # the new node
                return 0
            lib = FakeLib("libamdhip64.so", behave=behave)
            M._cu = M._open_runtime("hip", lambda n: lib, "")
            M.launch(args, {})
            names = [c[0] for c in lib.calls]
            if not capturing:
                check(names == ["hipStreamIsCapturing", "hipGraphLaunch"],
                      "launch, not capturing: %s" % names)
                check(lib.calls[1][1][0].value == 0x2222 and lib.calls[1][1][1].value == 0xABC0,
                      "hipGraphLaunch(exec, the harness's stream)")
            else:
                check(names == ["hipStreamIsCapturing", "hipStreamGetCaptureInfo_v2",
                                "hipGraphAddChildGraphNode", "hipStreamUpdateCaptureDependencies"],
                      "launch, capturing: %s" % names)
                add = lib.calls[2][1]
                check(add[1].value == 0x3333 and add[3].value == 2 and add[4].value == 0x1111,
                      "child node added to the capture's graph on its 2 dependencies, child = our graph")
                upd = lib.calls[3][1]
                check(upd[0].value == 0xABC0 and upd[2] == 1 and upd[3] == 1,
                      "dependencies set (flag 1) to the one new node on the harness's stream")
                check(upd[1]._obj.value == 0x4444, "the dependency is the new node")
        # a failing call raises, naming the HIP symbol and the error type
        lib = FakeLib("libamdhip64.so", behave=lambda n, a: 700 if n == "hipGraphLaunch" else 0)
        M._cu = M._open_runtime("hip", lambda n: lib, "")
        try:
            M.launch(args, {})
            check(False, "a failing hipGraphLaunch raises")
        except RuntimeError as e:
            check("hipGraphLaunch failed with hipError_t 700" in str(e), "the error names it: %s" % e)
    finally:
        M.torch, M._key, M._cu = real_torch, real_key, real_cu
        M._graphs.pop(key, None)


def check_pointer_attribute():
    """prepare() asks DEVICE_POINTER of the cache base and refuses a base outside every allocation."""
    src = open(os.path.join(ROOT, "kernels", "torch", "mla_decode.py")).read()
    check("rt.pointer_get_attribute(ctypes.byref(val), rt.POINTER_ATTRIBUTE_DEVICE_POINTER" in src,
          "prepare() asks the runtime's DEVICE_POINTER attribute")


def check_configs():
    sm = M.configs("sm_90")
    check(len(sm) == 1 and sm[0]["name"] == "inductor-graph", "configs(sm_90): inductor-graph")
    for arch in ("gfx942", "gfx950"):
        check(M.configs(arch) == sm, "configs(%s) = configs(sm_90)" % arch)
    for arch in ("x86_64", "aarch64", "gfx90a", "", None):
        check(M.configs(arch) == [], "configs(%r) empty" % (arch,))
    check(M.BACKEND == "cuda", "BACKEND stays cuda (GPU torch tensors on both vendors)")


def main():
    check_table()
    check_headers()
    check_runtime_name()
    check_open()
    check_real_libraries()
    check_launch()
    check_pointer_attribute()
    check_configs()
    if FAILS:
        print("torch_mla_rocm: %d failed" % len(FAILS))
        return 1
    print("torch_mla_rocm: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
