"""The end-to-end step around an MLA decode core (issue 16): the contract of a step module, and
the harness's bridge to it.

One ``.py`` step module is one model's decode step written around the attention core: what runs
before the core (``pre``: it writes the core's ``q`` and the new token's cache row) and after it
(``post``: it reads the core's ``out`` and writes the step's output). The harness (harness/e2e.c)
captures pre + the core's launch + post in one graph on a GPU (on the CPU it calls them in turn),
times the replays of baseline and candidate paired and interleaved, and compares the step
outputs. Ours: ``kernels/torch/deepseek_v3_step.py`` (DeepSeek-V3's attention block, CUDA) and
``kernels/python/numpy_step.py`` (the same step at small dims in numpy, for CI).

What a step module defines, at top level
----------------------------------------

``NAME``, ``BACKEND`` (``"cuda"``, ``"hip"`` or ``"cpu"``: the core's buffers as torch tensors or
numpy arrays, as for a kernel module), ``SUMMARY`` (one line).
``def output_shape(shape)``: the step output's shape for the task's shape (a list of ints; its
    elements are bf16).
``def supports(shape)`` (optional): ``None`` or a reason (s_q, kv dtype, head count).
``def prepare(args)``: once per task (weights from ``args.seed``, buffers, graphs), outside timing
    and capture; may allocate and synchronize. Returns the bytes of device (cpu: host) memory the
    step keeps for the task (an int >= 0), or ``None``.
``def pre(args)``: enqueue on the harness's stream: write ``args.q`` and, at position
    ``seqlens[b] - 1`` of each sequence ``b`` with ``seqlens[b] > 0``, the new row of
    ``args.kv_cache`` (through ``block_table``). Capture-safe: no allocation, no host sync, no
    host-side read of ``seqlens``/``block_table``.
``def post(args)``: enqueue: read ``args.out`` (the core's), write ``args.step_out``; same rules.
    pre and post are deterministic and write nothing else of the harness's.
``def reference(args)`` (optional): the step computed independently in float32 (the attention
    included), as a float32 array of ``output_shape`` on the host (numpy), from the inputs as they
    are before ``pre`` (it writes none of the harness's buffers). The harness compares the
    baseline's step output with it.

``args`` is a kernel's ``args`` (kernels/python/mla_decode.py: q, kv_cache, block_table, seqlens,
out, lse, workspace, stream, device and the shapes) plus ``step_out`` (a view of the harness's
step output buffer, bf16: torch.bfloat16 on a GPU, uint16 bits on the cpu, writable) and ``seed``
(the task's seed, an int). On the cpu backend ``q`` and ``kv_cache`` are writable here (pre writes
them by design); the isolated A/B's input hashing does not apply to the e2e stage, which restores
the inputs after it.

Command line (the harness's parent): ``python3 kernels/python/e2e_step.py describe FILE.py``:
one JSON object (name, backend, summary, has_reference, has_supports, path, sha256, helpers,
versions, interpreter) as ``mla_decode.py describe`` prints for a kernel.
"""
import importlib.util
import json
import os
import sys

_HERE = os.path.dirname(os.path.realpath(__file__))


def _shim():
    """The kernel shim (kernels/python/mla_decode.py): the worker's embedded copy, else its file."""
    m = sys.modules.get("vs_mla_decode_bridge")
    if m is None:
        spec = importlib.util.spec_from_file_location("vs_mla_decode_bridge",
                                                      os.path.join(_HERE, "mla_decode.py"))
        m = importlib.util.module_from_spec(spec)
        sys.modules["vs_mla_decode_bridge"] = m
        spec.loader.exec_module(m)
    return m


S = _shim()
S._covered.add(os.path.realpath(__file__))  # this bridge is no module's helper
BridgeError = S.BridgeError
BACKENDS = ("cuda", "hip", "cpu")


class StepArgs:
    """A kernel's args plus step_out and seed (see the module docstring)."""

    def __init__(self, a, step_out, seed):
        for k in S.SHAPE_FIELDS + S.Args.__slots__:
            setattr(self, k, getattr(a, k))
        self.step_out = step_out
        self.seed = seed


class Step(S.Loaded):
    """One loaded step module and its validated declarations."""

    def __init__(self, path):
        S.Loaded.__init__(self, path, "vs_e2e_step_")
        mod = self.mod
        name, backend, summary = (getattr(mod, k, None) for k in ("NAME", "BACKEND", "SUMMARY"))
        if not isinstance(name, str) or not S.NAME_RE.match(name) or len(name) > 64:
            raise BridgeError("%s: declaration: NAME must be a str '<model>.<step>', got %r"
                              % (path, name))
        if backend not in BACKENDS:
            raise BridgeError("%s: declaration: BACKEND must be one of %s, got %r"
                              % (path, ", ".join(BACKENDS), backend))
        if not isinstance(summary, str) or "\n" in summary:
            raise BridgeError("%s: declaration: SUMMARY must be a one-line str" % path)
        for fn in ("output_shape", "prepare", "pre", "post"):
            if not callable(getattr(mod, fn, None)):
                raise BridgeError("%s: declaration: %s() is missing (a step module defines "
                                  "output_shape, prepare, pre and post)" % (path, fn))
        self.name, self.backend, self.summary = name, backend, summary


_step = None
last_error = ""


def _fail(line, status=S.MLA_EDEVICE):
    global last_error
    last_error = line
    return status


def _args(raw, step_raw):
    """raw: the kernel tuple of harness/pyimpl.c; step_raw: (step_out pointer, elements, seed)."""
    st = _step
    a = S._make_args(st, raw)
    ptr, n, seed = step_raw
    key = (raw, step_raw)
    got = st.args_cache.get(key)
    if got is not None:
        return got
    shape = (n,)
    if st.backend == "cpu":
        out = S._numpy_view(ptr, shape, "bf16", False)
        a_q = S._numpy_view(raw[0], a.q.shape, "bf16", False)
        kvk = "bf16" if raw[14] == 1 else "u8"
        a_kv = S._numpy_view(raw[1], a.kv_cache.shape, kvk, False)
    else:
        out = S._torch_view(ptr, shape, "bf16", a.device)
        a_q, a_kv = a.q, a.kv_cache
    sa = StepArgs(a, out, seed)
    sa.q, sa.kv_cache = a_q, a_kv
    want = [int(v) for v in st.call("output_shape", sa)]
    count = 1
    for v in want:
        count *= v
    if count != n:
        raise BridgeError("%s: output_shape() is %r, %d elements, the harness allocated %d"
                          % (st.path, want, count, n))
    sa.step_out = out.reshape(want) if st.backend == "cpu" else out.view(want)
    st.args_cache[key] = sa
    return sa


def _in_stream(sa, function):
    if sa.stream is not None:
        import torch
        with torch.cuda.stream(sa.stream):
            return _step.call(function, sa)
    return _step.call(function, sa)


def bridge_step_load(path, sha256, helpers_json=""):
    global _step
    try:
        _step = S.load_checked(path, sha256, lambda: Step(path), helpers_json)
        return 0
    except BridgeError as e:
        return _fail(str(e), S.MLA_EINVAL)


def bridge_step_elems(raw):
    """Elements of the step output for the task's shape (>= 0), or a negative status."""
    try:
        sh = S.shape_from_raw(raw)
        why = _step.call("supports", sh) if getattr(_step.mod, "supports", None) else None
        if why is not None:
            return _fail("%s: supports: %s" % (_step.path, S._one_line(str(why))), S.MLA_EUNSUPPORTED)
        n = 1
        for v in _step.call("output_shape", sh):
            n *= int(v)
        return n
    except BridgeError as e:
        return _fail(str(e))


def bridge_step_call(function, raw, step_raw):
    """prepare (answers the bytes kept, >= 0), pre or post; a negative status on an error."""
    try:
        sa = _args(raw, step_raw)
        rc = _in_stream(sa, function)
        if function == "prepare":
            if rc is None:
                return 0
            if type(rc) is not int or rc < 0:
                return _fail("%s: prepare: returned %r (None or the bytes kept, an int >= 0)"
                             % (_step.path, rc), S.MLA_EINVAL)
            return rc
        if rc is not None:
            return _fail("%s: %s: returned %r (None)" % (_step.path, function, rc), S.MLA_EINVAL)
        return 0
    except BridgeError as e:
        return _fail(str(e))


def bridge_step_reference(raw, step_raw, host_ptr):
    """Writes the module's reference() (float32) at host_ptr; 1 done, 0 none, negative error."""
    try:
        if getattr(_step.mod, "reference", None) is None:
            return 0
        import numpy as np
        sa = _args(raw, step_raw)
        ref = np.ascontiguousarray(_in_stream(sa, "reference"), dtype=np.float32).reshape(-1)
        n = step_raw[1]
        if ref.size != n:
            return _fail("%s: reference: %d elements, the step output has %d"
                         % (_step.path, ref.size, n), S.MLA_EINVAL)
        dst = S._numpy_view(host_ptr, (n,), "f32", False)
        dst[:] = ref
        return 1
    except BridgeError as e:
        return _fail(str(e))


def bridge_step_memory(reset):
    """The peak bytes the step's framework allocated since the last reset (torch's allocator on a
    GPU), then reset it when asked; -1 where unknown (cpu)."""
    try:
        if _step.backend == "cpu":
            return -1
        import torch
        torch.cuda.synchronize()
        peak = int(torch.cuda.max_memory_allocated())
        if reset:
            torch.cuda.reset_peak_memory_stats()
        return peak
    except BaseException as e:  # noqa: B902
        return _fail(S._format_exception(_step.path, "memory", e))


def describe(path):
    st = Step(path)
    import sys as _sys
    import sysconfig
    return {"name": st.name, "backend": st.backend, "summary": st.summary,
            "has_reference": getattr(st.mod, "reference", None) is not None,
            "has_supports": getattr(st.mod, "supports", None) is not None,
            "path": st.real, "sha256": st.sha256, "helpers": S.helper_list(st.helpers),
            "versions": S.versions(),
            "interpreter": {"executable": _sys.executable, "prefix": _sys.prefix,
                            "base_prefix": getattr(_sys, "base_prefix", _sys.prefix),
                            "path": [p for p in _sys.path if p], "libpython": S._libpython(),
                            "libdir": sysconfig.get_config_var("LIBDIR") or ""}}


def _answer(argv, out):
    if len(argv) == 2 and argv[0] == "describe":
        out.write(json.dumps(describe(argv[1]), sort_keys=True) + "\n")
        return 0
    return None


def main(argv):
    return S.run_command(argv, _HERE, _answer, "usage: e2e_step.py describe FILE.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
