"""MLA decode implementations written in Python: the contract, and the harness's shim.

This module is the Python side of kernels/mla_decode.h (kernel ABI version 3), written once. The
operator, its semantics and the rules of a launch are the C ABI's; what follows says how they look
from Python. One ``.py`` module file is one implementation. validate_skill loads it (the parent
process runs this file as a script to describe it; the worker process embeds the interpreter after
its fork and imports this file as the bridge, harness/pyimpl.c) and calls the functions below.

What a kernel module defines, at top level
------------------------------------------

``NAME = "triton.mla_decode"``
    ``"<team>.<kernel>"``: letters, digits, ``_`` and ``-``, one ``.`` or more, at most 64
    characters, not the name of a built-in implementation. Ours: ``triton.mla_decode``,
    ``tilelang.mla_decode``, ``torch.mla_decode``, ``numpy.mla_decode`` (CPU).
``BACKEND = "cuda"``
    ``"cuda"`` or ``"hip"``: the buffers are GPU memory and are handed over as torch tensors;
    ``"cpu"``: host memory, handed over as numpy arrays.
``KV_DTYPES = ("bf16", "fp8_e4m3_fnuz")``
    The card schema's names of the KV cache formats it runs (a non-empty tuple or list) among
    ``"bf16"``, ``"fp8_e4m3_fnuz"`` (dense form only), ``"fp8_ds_mla"``, ``"fp8_ds_mla_fnuz"``,
    ``"fp8_model1"``, ``"fp8_model1_fnuz"`` (sparse form only). A task whose format is not listed is
    refused before supports() is asked.
``FORMS = ("dense", "sparse")`` (optional; default ``("dense",)``)
    The forms of the operator it runs: ``"dense"`` (paged cache through block_table and seqlens,
    causal for s_q > 1) and ``"sparse"`` (DeepSeek Sparse Attention: top-k indices, ABI 3; see
    "The sparse form" below). A task of a form not listed is refused before supports() is asked
    (``"sparse form: FORMS is dense"``), so a module written before the sparse form existed is never
    handed one, whatever its supports() says. A block-scaled format in KV_DTYPES needs "sparse" here.
``SUMMARY = "one line"``
    What the kernel does, one line (a str).
``def supports(shape)`` (optional)
    ``None`` when tasks of this shape run, else a short reason string (e.g. ``"page_size 16: reads
    pages of 64 rows"``). Called without a device, in another process than the launches, only for
    tasks of a form in FORMS and a format in KV_DTYPES (a module that runs both forms tells them
    apart by ``shape.topk``).
``def configs(arch)``
    The config space for ``arch`` (``"sm_90"``, ``"gfx942"``, ``"x86_64"``, ``"aarch64"``, ...): a
    list of dicts, ``[]`` for an arch it has no code for. Keys: ``"name"`` (str, unique within the
    list, 1 to 47 characters) and the knobs ``"block_n"``, ``"block_h"``, ``"num_splits"``,
    ``"num_warps"``, ``"num_stages"`` (ints >= 0, a missing knob is 0; no other key). The meaning of
    each knob is struct mla_decode_config's (``num_splits`` 0 = choose from the shapes).
``def workspace_size(shape, config)`` (optional)
    Bytes of scratch memory a launch with this shape and config needs (an int >= 0; default 0).
``def prepare(args, config)`` (optional)
    Once per task, config and buffer set, in the worker, all before the config's first launch,
    outside every timed region and outside graph capture: JIT compile, autotune, host-side setup,
    a graph of its own over these buffers. The harness launches a config on a few buffer sets (each
    input set, a second output pair, a fresh q at two addresses) and prepares each of them first;
    a launch never sees buffers prepare() did not. It may synchronize and allocate (what it keeps,
    it owns until the process ends).
``def launch(args, config)``
    Enqueue the computation on the harness's stream (GPU) or compute it and return (cpu). It
    allocates nothing, never synchronizes the host, writes only ``args.out``, ``args.lse`` and
    ``args.workspace``, never modifies an input, is deterministic (bit-identical outputs for the
    same inputs) and capture-safe: it may read ``seqlens`` and ``block_table`` only on the device
    (a graph captured once is replayed after both change in place); host-side decisions may depend
    only on the shapes and scalars. Returns ``None`` (or an ``enum mla_status`` int: 0 ok, -2 this
    config cannot run these args).

``AUTOTUNE_SIGNATURES = {"_kernel": {"label": "bf16", "signature": {"Q": "*bf16", "N": "i32"},
"constexprs": {"FP8": False}}}`` (optional)
    For a kernel decorated with ``@triton.autotune``: the argument types a launch gives it (Triton's
    ``ASTSource`` signature and the constexprs that are not the configs' kwargs), one dict or a list
    of them (one per variant, e.g. per KV dtype), keyed by the @triton.jit function's ``__name__``.
    With it, ``--emit-plan`` compiles each of the autotuner's configs for the plan's generation
    without a GPU (tools/gpu/triton_autotune_fit.py) and names those the autotuner would drop there
    for want of resources; without it the plan says "not checked ahead". Every autotuner of the
    module is listed in the plan either way (docs/DESIGN.md "Autotuned kernels").

``config`` is a dict with all six keys (``name`` and the five knobs).

``shape``: attributes ``batch``, ``s_q``, ``h_q``, ``num_pages``, ``page_size``, ``max_pages``
(ints), ``kv_dtype`` (one of the KV_DTYPES names above), ``softmax_scale``, ``kv_scale`` (floats),
``num_cus`` (int: SMs / CUs / CPU cores to use), and the sparse form's ints (ABI 3): ``topk``
(indices per query row; 0 for the dense form), ``extra_topk`` (indices per query row into the extra
cache; 0: none), ``extra_num_pages``, ``extra_page_size``, ``d_qk`` (576, or 512 for fp8_model1*),
``d_v`` (512). The dense form has topk, extra_topk, extra_num_pages and extra_page_size 0, d_qk 576
and d_v 512. Whether topk_length and attn_sink are given is not part of the shape (a kernel that
runs the sparse form runs it with and without them).

``args``: the same attributes, plus zero-copy views of the harness's own buffers:

=================  ====================================================  ===================================
attribute          GPU backends (torch tensors on the device)           ``cpu`` backend (numpy arrays)
=================  ====================================================  ===================================
q                  [batch, s_q, h_q, d_qk] torch.bfloat16                same shape, uint16 (bf16 bits), read-only
kv_cache           dense form: [num_pages, page_size, 1, 576]            same shapes, uint16 or uint8,
                   torch.bfloat16, or torch.uint8 (fp8 e4m3 fnuz         read-only
                   codes); sparse form: bf16 as the dense form, a
                   block-scaled format torch.uint8 [num_pages,
                   page_bytes] (see below)
block_table        [batch, max_pages] torch.int32; None (sparse form)   int32, read-only; None (sparse form)
seqlens            [batch] torch.int32; None (sparse form)              int32, read-only; None (sparse form)
indices            [batch, s_q, topk] torch.int32; None (dense form)    int32, read-only; None (dense form)
topk_length        [batch] torch.int32, or None                         int32, read-only, or None
attn_sink          [h_q] torch.float32, or None                         float32, read-only, or None
extra_kv_cache     as kv_cache, [extra_num_pages, extra_page_size, 1,   as kv_cache, read-only, or None
                   576] bf16 or uint8 [extra_num_pages,
                   extra_page_bytes]; None when extra_topk is 0
extra_indices      [batch, s_q, extra_topk] torch.int32, or None        int32, read-only, or None
extra_topk_length  [batch] torch.int32, or None                         int32, read-only, or None
out                [batch, s_q, h_q, 512] torch.bfloat16 (written)       uint16 (bf16 bits, written)
lse                [batch, h_q, s_q] torch.float32 (written, natural log) float32 (written)
workspace          1-D torch.uint8 of workspace_size() bytes, or None    1-D uint8, or None
stream             torch.cuda.ExternalStream of the harness's stream     None
device             torch.device of the buffers                          None
=================  ====================================================  ===================================

``page_bytes`` is ``page_size * 656`` for fp8_ds_mla(_fnuz) and ``page_size * 584`` rounded up to a
multiple of 576 for fp8_model1(_fnuz) (kernels/mla_decode.h mla_kv_page_bytes(); the extra cache's
with extra_page_size). The bytes of a page, little-endian (kernels/mla_numeric.h, FlashMLA
tests/quant.py quantize_k_cache):

* fp8_ds_mla: token t at ``t * 656``: 512 e4m3fn codes (latent dims), 4 float32 scales (scale k
  multiplies codes ``[128k, 128k + 128)``), 64 bf16 RoPE values. The decoded row (d_qk 576) is
  code * scale, then the RoPE values; V is its first 512 values.
* fp8_model1: token t's 448 e4m3fn codes and 64 bf16 RoPE values at ``t * 576``; its 7 e8m0 scales
  (``2^(code - 127)``, scale k multiplies codes ``[64k, 64k + 64)``) and a pad byte at
  ``page_size * 576 + t * 8``; zero padding to page_bytes. The decoded row (d_qk 512) is code *
  scale, then the RoPE values; V is the whole row (d_v 512).
* ``*_fnuz``: the same bytes with e4m3fnuz codes (bias 8, 0x80 the only NaN).

The bridge calls ``prepare()`` and ``launch()`` inside ``with torch.cuda.stream(args.stream):`` and
hands the same ``args`` object for the same buffers, so a kernel may cache per-call Python work
keyed by ``data_ptr()``. The cpu views of the inputs are read-only numpy arrays (the harness also
hashes the inputs after the run: a write through any other path is caught there).

Operator semantics of the dense form (kernels/mla_decode.h): for batch b, query position i < s_q,
head h, the keys ``[0, n)`` with ``n = seqlens[b] - s_q + 1 + i`` are visible (causal when s_q > 1); row j of
sequence b is ``kv_cache[block_table[b][j // page_size], j % page_size, 0]``;
``s_j = softmax_scale * dot(q[b,i,h], K_j)`` over the 576 dims, ``lse = log(sum_j exp(s_j))``,
``out = sum_j exp(s_j - lse) * K_j[:512]``. A query with no visible key gives out 0 and lse +inf.
Never read a cache row at or past the visible length (those slots hold NaN; unused block_table
entries hold a sentinel far outside the cache). fp8 e4m3 fnuz: real value = decoded code *
kv_scale, exponent bias 8, no infinities, 0x80 the only NaN.

The sparse form (``topk > 0``; DeepSeek Sparse Attention, FlashMLA's sparse decode): no
block_table, no seqlens, nothing causal, h_kv 1. For batch b, query position i, head h, entry t <
topk of ``indices[b, i]`` is valid when its value r is not -1 and (topk_length is None or t <
topk_length[b]); it names cache row r, i.e. page ``r // page_size``, slot ``r % page_size``. With an
extra cache (extra_topk > 0), the entries of ``extra_indices[b, i]`` name rows of extra_kv_cache the
same way (extra_topk_length optional) and join the same softmax. Over the valid entries:
``s_t = softmax_scale * dot(q[b,i,h,:d_qk], K_t)`` (K_t the decoded row), ``lse = log(sum_t
exp(s_t))``, ``out = sum_t exp(s_t - lse) * K_t[:512]``; with attn_sink, ``out *= 1 / (1 +
exp(attn_sink[h] - lse))`` (attn_sink may be +-inf) and lse is reported without the sink. No valid
entry: out 0, lse +inf. Never read a row that no valid entry names (the harness fills those, and
entries past topk_length point at such rows, with NaN). indices, topk_length and the extra_* values
may change in place between replays of a captured graph.

Errors
------

Any exception raised by a kernel module's code becomes one line,
``<file>: <function>: <ExceptionType>: <message> (at <file>:<line> in <func>)``, the frame being
the innermost one inside the kernel file; that implementation fails on that task, the run goes on.
An import error also names the missing package, the interpreter and its search path.

Command line (used by the harness's parent process, which never embeds Python)
-----------------------------------------------------------------------------

The interpreter is the one named by ``$VS_PYTHON`` (default ``python3`` on PATH): the one whose
packages the kernel needs, e.g. ``VS_PYTHON=/opt/torch/.venv/bin/python3`` for a Triton kernel.
The worker embeds the libpython of that same interpreter and takes over its ``sys.path``.

``python3 kernels/python/mla_decode.py describe FILE.py ARCH``
    One JSON object on stdout: name, backend, summary, kv_dtypes, forms, configs for ARCH,
    has_supports, has_prepare, has_workspace_size, autotune (per @triton.autotune of the module:
    kernel, global, key, configs, prune, reset_to_zero, restore_value, do_bench, cache_results;
    ``[]`` when none), path (canonical), sha256 of the file, helpers (the helper
    files: ``[{"path", "sha256"}]``, sorted by path, of every module the import loaded from a
    regular file under the module's own directory, subfolders included, itself aside; a helper's
    path is relative to that directory, its hash that of the source .py, of a sourceless .pyc or of
    an extension module's .so; ``[]`` when none), versions (python and,
    when the module imported them, torch, triton, tilelang, numpy) and interpreter (executable,
    sys.path, libpython: what an embedding process needs to become this interpreter). Exit status
    0; on an error, one line on stderr and exit status 1.
``python3 kernels/python/mla_decode.py supports FILE.py '<shape json>'``
    ``{"supported": true}`` or ``{"supported": false, "why": "..."}``. The shape json has the
    ``shape`` attributes above.
``python3 kernels/python/mla_decode.py serve FILE.py``
    The same answers for one shape json per line of stdin, one line each, until EOF.

Whatever a kernel module prints goes to stderr: stdout carries the answers only.
"""

import ctypes
import hashlib
import importlib.util
import json
import os
import platform
import re
import sys
import sysconfig
import traceback

# No __pycache__ beside the kernels: kernels/ is part of the build's identity (a tree hash), and a
# kernel file is bound by its own bytes, never by a cached compilation.
sys.dont_write_bytecode = True

KNOBS = ("block_n", "block_h", "num_splits", "num_warps", "num_stages")
KV_DTYPE_NAMES = {1: "bf16", 2: "fp8_e4m3_fnuz", 3: "fp8_ds_mla", 4: "fp8_ds_mla_fnuz", 5: "fp8_model1",
                  6: "fp8_model1_fnuz"}
BLOCKSCALED = ("fp8_ds_mla", "fp8_ds_mla_fnuz", "fp8_model1", "fp8_model1_fnuz")
FORM_NAMES = ("dense", "sparse")
BACKENDS = ("cuda", "hip", "cpu")
VERSIONED = ("torch", "triton", "tilelang", "numpy")
NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]*(\.[A-Za-z0-9_][A-Za-z0-9_-]*)+$")
SHAPE_FIELDS = ("batch", "s_q", "h_q", "num_pages", "page_size", "max_pages", "kv_dtype",
                "softmax_scale", "kv_scale", "num_cus", "topk", "extra_topk", "extra_num_pages",
                "extra_page_size", "d_qk", "d_v")
# The sparse form's fields (ABI 3) and their dense-form values: a shape json or a caller that
# predates them gets these.
SPARSE_DEFAULTS = {"topk": 0, "extra_topk": 0, "extra_num_pages": 0, "extra_page_size": 0,
                   "d_qk": 576, "d_v": 512}

# enum mla_status
MLA_OK = 0
MLA_EINVAL = -1
MLA_EUNSUPPORTED = -2
MLA_EDEVICE = -3


class BridgeError(Exception):
    """An error already formatted as the one line the harness prints."""


def _one_line(text):
    text = " ".join(str(text).split())
    return text if len(text) <= 400 else text[:397] + "..."


def _format_exception(path, function, exc):
    """``<file>: <function>: <Type>: <message> (at <file>:<line> in <func>)``, innermost frame in path."""
    real = os.path.realpath(path)
    frames = traceback.extract_tb(exc.__traceback__)
    where = None
    for fr in frames:
        if os.path.realpath(fr.filename) == real:
            where = fr
    if where is None and frames:
        where = frames[-1]
    msg = _one_line(exc)
    if isinstance(exc, SyntaxError) and exc.filename:
        loc = " (at %s:%s)" % (exc.filename, exc.lineno)
        msg = _one_line(exc.msg)
    elif where is not None:
        loc = " (at %s:%d in %s)" % (where.filename, where.lineno, where.name)
    else:
        loc = ""
    line = "%s: %s: %s: %s%s" % (path, function, type(exc).__name__, msg, loc)
    if isinstance(exc, ImportError):
        missing = getattr(exc, "name", None)
        line += "; %s not found by the interpreter %s (sys.path: %s)" % (
            "package '%s'" % missing if missing else "a module", sys.executable,
            ", ".join(p for p in sys.path if p) or "empty")
    return line


class Shape:
    """The shapes and scalars of one task (see the module docstring)."""

    __slots__ = SHAPE_FIELDS

    def __init__(self, **kw):
        dense = kw.get("topk", 0) <= 0
        for k in SHAPE_FIELDS:
            if k in SPARSE_DEFAULTS and (dense or k not in kw):
                setattr(self, k, SPARSE_DEFAULTS[k])  # the dense form's values, whatever was passed
            else:
                setattr(self, k, kw[k])

    def __repr__(self):
        return "Shape(%s)" % ", ".join("%s=%r" % (k, getattr(self, k)) for k in SHAPE_FIELDS)


class Args(Shape):
    """Shape plus zero-copy views of the harness's buffers (see the module docstring)."""

    __slots__ = ("q", "kv_cache", "block_table", "seqlens", "out", "lse", "workspace", "stream",
                 "device", "indices", "topk_length", "attn_sink", "extra_kv_cache", "extra_indices",
                 "extra_topk_length")


def _shape_from_json(obj):
    kw = {}
    for k in SHAPE_FIELDS:
        if k in obj:
            kw[k] = obj[k]
        elif k not in SPARSE_DEFAULTS:
            raise BridgeError("shape json lacks '%s'" % k)
    return Shape(**kw)


# The kernel tuple of harness/pyimpl.c (raw_tuple()): pointers q, kv, block_table, seqlens, out, lse,
# workspace (0-6), workspace bytes (7), the ten ints and floats of SHAPE_FIELDS[:10] (8-17), stream
# (18); ABI 3 appends the pointers indices, topk_length, attn_sink, extra_kv_cache, extra_indices,
# extra_topk_length (19-24) and the ints topk, extra_topk, extra_num_pages, extra_page_size, d_qk,
# d_v (25-30).
RAW_SPARSE = 19


def shape_from_raw(raw):
    """The Shape of a kernel tuple, kv_dtype as its name (an unknown number stays a number)."""
    kw = dict(zip(SHAPE_FIELDS[:10], raw[8:18]))
    if len(raw) > RAW_SPARSE + 6:
        kw.update(zip(SHAPE_FIELDS[10:], raw[RAW_SPARSE + 6:RAW_SPARSE + 12]))
    sh = Shape(**kw)
    sh.kv_dtype = KV_DTYPE_NAMES.get(sh.kv_dtype, sh.kv_dtype)
    return sh


# ---- helper files: the code a module imports from its own directory ----------------------------
# realpath -> sha256 of every helper file as its bytes were when it was first imported here, and
# the realpaths any hash covers (loaded modules, their helpers, what was imported before them).
_helper_sha = {}
_covered = {os.path.realpath(__file__)}
_loaded = []


def _code_file(mod):
    """The realpath of the file a module's code came from, or None (a namespace package, a built-in,
    a module without a regular file). A .pyc in __pycache__ stands for its source .py where that
    exists; a sourceless .pyc and an extension module (.so) are that file."""
    f = getattr(mod, "__file__", None)
    if not isinstance(f, str) or not f:
        return None
    if f.endswith(".pyc") and os.path.basename(os.path.dirname(f)) == "__pycache__":
        try:
            src = importlib.util.source_from_cache(f)
        except (ValueError, NotImplementedError):
            src = None
        if src and os.path.isfile(src):
            f = src
    f = os.path.realpath(f)
    return f if os.path.isfile(f) else None


def _under(real, here):
    return real != here and os.path.commonpath([real, here]) == here


def _installed(real, here):
    """True for a file of an installed package that merely lies under here: a site-packages or
    dist-packages folder between here and the file, or a Python prefix (a venv) inside here. A
    module that itself lives in site-packages still has its siblings as helpers."""
    parts = os.path.relpath(real, here).split(os.sep)[:-1]
    if "site-packages" in parts or "dist-packages" in parts:
        return True
    for pre in {sys.prefix, sys.base_prefix, sys.exec_prefix}:
        pre = os.path.realpath(pre)
        if _under(pre, here) and _under(real, pre):
            return True
    return False


def _helper_file(real, here):
    """A module file under here (recursive) that no installed package holds."""
    return _under(real, here) and not _installed(real, here)


def _file_sha256(real):
    with open(real, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _helpers(here, own, names):
    """{relpath: sha256} of the modules named in names whose code file lies under here (recursive)
    and is not own; the hash of a file first seen now is of its bytes now, and kept."""
    got = {}
    for n in names:
        real = _code_file(sys.modules.get(n))
        if real is None or real == own or not _helper_file(real, here):
            continue
        if real not in _helper_sha:
            _helper_sha[real] = _file_sha256(real)
        got[os.path.relpath(real, here)] = _helper_sha[real]
    return got


def helper_list(helpers):
    """{relpath: sha256} as the plan's list, [{"path", "sha256"}] sorted by path."""
    return [{"path": k, "sha256": helpers[k]} for k in sorted(helpers)]


class Loaded:
    """One module file imported from its path: the base of Kernel and of e2e_step.py's Step.

    Sets path (as given), real (its realpath), sha256 (of its bytes), mod (the module, imported as
    ``prefix + sha256[:12]``), helpers ({path relative to the module's directory: sha256} of every
    module its import loaded from a regular file under that directory, itself aside), and the empty
    args_cache and streams the bridges fill. Raises BridgeError (one line, ``<path>: import: ...``)
    when the file is not a module or its import raises anything."""

    def __init__(self, path, prefix):
        self.path = path
        self.real = os.path.realpath(path)
        self.args_cache = {}
        self.streams = {}
        with open(self.real, "rb") as f:
            self.sha256 = hashlib.sha256(f.read()).hexdigest()
        modname = prefix + self.sha256[:12]
        # As for a script: the module's own directory first on sys.path (its helper modules).
        here = os.path.dirname(self.real)
        self.here = here
        if here not in sys.path:
            sys.path.insert(0, here)
        before = set(sys.modules)
        for n in before:
            real = _code_file(sys.modules.get(n))
            if real is not None:
                _covered.add(real)
        try:
            spec = importlib.util.spec_from_file_location(modname, self.real)
            if spec is None or spec.loader is None:
                raise BridgeError("%s: import: not a Python module file" % path)
            mod = importlib.util.module_from_spec(spec)
            # A real module in sys.modules, loaded from its file: inspect.getsource() works there
            # (TileLang's JIT reads the kernel's source).
            sys.modules[modname] = mod
            spec.loader.exec_module(mod)
        except BridgeError:
            raise
        except BaseException as e:  # noqa: B902 - SystemExit in a module is an error too
            sys.modules.pop(modname, None)
            raise BridgeError(_format_exception(path, "import", e)) from None
        self.mod = mod
        try:
            self.helpers = _helpers(here, self.real, set(sys.modules) - before)
        except OSError as e:
            raise BridgeError("%s: import: cannot hash a helper file: %s" % (path, _one_line(e))) from None
        _covered.update(os.path.join(here, k) for k in self.helpers)
        _covered.add(self.real)
        _loaded.append(self)

    def check_helpers(self, planned):
        """Raise BridgeError (one line) unless the helpers equal planned ({relpath: sha256}, those
        described in the parent, which checked them against the plan's). A planned helper an earlier module of this process imported first counts when
        that module still is the one from the same file (its hash as it was first imported)."""
        now = dict(self.helpers)
        for rel in planned:
            real = os.path.realpath(os.path.join(self.here, rel))
            if rel not in now and real in _helper_sha and any(
                    _code_file(m) == real for m in list(sys.modules.values())):
                now[rel] = _helper_sha[real]
        for rel in sorted(set(now) | set(planned)):
            if rel not in planned:
                raise BridgeError("%s: load: helper '%s' was imported but not when the module was "
                                  "described (sha256 %s)" % (self.path, rel, now[rel]))
            if rel not in now:
                raise BridgeError("%s: load: helper '%s' was imported when the module was described "
                                  "(sha256 %s), not now" % (self.path, rel, planned[rel]))
            if now[rel] != planned[rel]:
                raise BridgeError("%s: load: helper '%s' changed on disk since it was described (sha256 "
                                  "%s, described %s)" % (self.path, rel, now[rel], planned[rel]))

    def call(self, function, *a):
        """Call the module's function; any exception becomes a BridgeError of one line."""
        try:
            return getattr(self.mod, function)(*a)
        except BaseException as e:  # noqa: B902
            raise BridgeError(_format_exception(self.path, function, e)) from None


def _planned_helpers(path, helpers_json):
    """The JSON list [{"path", "sha256"}] as {relpath: sha256}; None for "" (not recorded)."""
    if not helpers_json:
        return None
    try:
        got = {h["path"]: h["sha256"] for h in json.loads(helpers_json)}
    except (ValueError, TypeError, KeyError) as e:
        raise BridgeError("%s: load: the helper list handed over is not [{path, sha256}]: %s"
                          % (path, _one_line(e))) from None
    return got


def load_checked(path, sha256, make, helpers_json=""):
    """make() (it loads the module at path) once path's bytes are checked to still hash to sha256
    (those the parent described); then, when helpers_json is not "", the helper files the import
    loaded must be those of that JSON list [{"path", "sha256"}] (the description's, checked against
    the plan's by the parent). Returns what make() returns. Raises BridgeError (one line): the file
    or a helper changed, or make() raised (a BridgeError as it is, anything else as
    ``<path>: import:``)."""
    try:
        with open(path, "rb") as f:
            now = hashlib.sha256(f.read()).hexdigest()
        if now != sha256:
            raise BridgeError("%s: load: the file changed on disk since it was described (sha256 %s, "
                              "described %s)" % (path, now, sha256))
        planned = _planned_helpers(path, helpers_json)
        got = make()
        if planned is not None:
            got.check_helpers(planned)
        return got
    except BridgeError:
        raise
    except BaseException as e:  # noqa: B902
        raise BridgeError(_format_exception(path, "import", e)) from None


class Kernel(Loaded):
    """One loaded kernel module and its validated declarations."""

    def __init__(self, path, index):
        Loaded.__init__(self, path, "vs_pyimpl_%d_" % index)
        self._validate()

    def _bad(self, what):
        return BridgeError("%s: declaration: %s" % (self.path, what))

    def _validate(self):
        m = self.mod
        name = getattr(m, "NAME", None)
        if not isinstance(name, str) or not NAME_RE.match(name) or len(name) > 64:
            raise self._bad("NAME must be a str '<team>.<kernel>' (letters, digits, '_', '-', one "
                            "'.' or more, at most 64 characters), got %r" % (name,))
        backend = getattr(m, "BACKEND", None)
        if backend not in BACKENDS:
            raise self._bad("BACKEND must be one of %s, got %r" % (", ".join(BACKENDS), backend))
        kv = getattr(m, "KV_DTYPES", None)
        if (not isinstance(kv, (tuple, list)) or not kv or
                any(d not in KV_DTYPE_NAMES.values() for d in kv)):
            raise self._bad("KV_DTYPES must be a non-empty tuple of %s, got %r"
                            % (" / ".join("'%s'" % n for n in KV_DTYPE_NAMES.values()), kv))
        forms = getattr(m, "FORMS", ("dense",))
        if (not isinstance(forms, (tuple, list)) or not forms or len(set(forms)) != len(forms) or
                any(f not in FORM_NAMES for f in forms)):
            raise self._bad("FORMS must be a non-empty tuple of distinct 'dense' / 'sparse', got %r"
                            % (forms,))
        if "sparse" not in forms and any(d in BLOCKSCALED for d in kv):
            raise self._bad("KV_DTYPES names %s, a format of the sparse form only, but FORMS is %s "
                            "(add 'sparse')" % ([d for d in kv if d in BLOCKSCALED][0], ", ".join(forms)))
        summary = getattr(m, "SUMMARY", None)
        if not isinstance(summary, str) or "\n" in summary:
            raise self._bad("SUMMARY must be a one-line str, got %r" % (summary,))
        for fn in ("configs", "launch"):
            if not callable(getattr(m, fn, None)):
                raise self._bad("%s() is missing (a kernel module defines configs(arch) and "
                                "launch(args, config))" % fn)
        for fn in ("supports", "workspace_size", "prepare"):
            if getattr(m, fn, None) is not None and not callable(getattr(m, fn)):
                raise self._bad("%s is defined but not a function" % fn)
        self.name, self.backend, self.kv_dtypes, self.summary = name, backend, tuple(kv), summary
        self.forms = tuple(forms)

    def configs(self, arch):
        got = self.call("configs", arch)
        if not isinstance(got, (list, tuple)):
            raise self._bad("configs(%r) must return a list of dicts, got %s" % (arch, type(got).__name__))
        out, seen = [], set()
        for i, c in enumerate(got):
            if not isinstance(c, dict):
                raise self._bad("configs(%r)[%d] is a %s, not a dict" % (arch, i, type(c).__name__))
            extra = sorted(set(c) - set(KNOBS) - {"name"})
            if extra:
                raise self._bad("configs(%r)[%d] has unknown key %r (keys: name, %s)"
                                % (arch, i, extra[0], ", ".join(KNOBS)))
            n = c.get("name")
            if not isinstance(n, str) or not 1 <= len(n) <= 47 or not n.isprintable():
                raise self._bad("configs(%r)[%d]: 'name' must be a str of 1 to 47 printable "
                                "characters, got %r" % (arch, i, n))
            if n in seen:
                raise self._bad("configs(%r): config name %r appears twice" % (arch, n))
            seen.add(n)
            d = {"name": n}
            for k in KNOBS:
                v = c.get(k, 0)
                if type(v) is not int or not 0 <= v < 2 ** 31:
                    raise self._bad("configs(%r)[%d] (%s): %r must be an int >= 0, got %r"
                                    % (arch, i, n, k, v))
                d[k] = v
            out.append(d)
        return out

    def supports(self, shape):
        form = "sparse" if shape.topk > 0 else "dense"
        if form not in self.forms:
            return "%s form: FORMS is %s" % (form, ", ".join(self.forms))
        if shape.kv_dtype not in self.kv_dtypes:
            return "kv dtype %s: KV_DTYPES is %s" % (shape.kv_dtype, ", ".join(self.kv_dtypes))
        if getattr(self.mod, "supports", None) is None:
            return None
        why = self.call("supports", shape)
        if why is not None and not isinstance(why, str):
            raise self._bad("supports() must return None or a reason str, got %r" % (why,))
        return None if why is None else (_one_line(why) or "unsupported")

    def workspace_size(self, shape, config):
        if getattr(self.mod, "workspace_size", None) is None:
            return 0
        n = self.call("workspace_size", shape, config)
        if type(n) is not int or n < 0:
            raise self._bad("workspace_size() must return an int >= 0, got %r" % (n,))
        return n


# ---- views of the harness's buffers -------------------------------------------------------------

class _DeviceArray:
    """A __cuda_array_interface__ (version 3) over a device pointer the harness owns."""

    def __init__(self, ptr, shape, typestr):
        self.__cuda_array_interface__ = {"shape": tuple(shape), "typestr": typestr,
                                         "data": (ptr, False), "version": 3, "strides": None}


def _numel(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def _torch_view(ptr, shape, kind, device):
    """A torch tensor over device memory at ptr: kind "bf16", "u8", "i32", "f32" (zero copy)."""
    import torch
    typestr = {"bf16": "<i2", "u8": "|u1", "i32": "<i4", "f32": "<f4"}[kind]
    n = _numel(shape)
    if n == 0:
        dt = {"bf16": torch.bfloat16, "u8": torch.uint8, "i32": torch.int32, "f32": torch.float32}
        return torch.empty(shape, dtype=dt[kind], device=device)
    t = torch.as_tensor(_DeviceArray(ptr, shape, typestr), device=device)
    if kind == "bf16":  # bf16 has no __cuda_array_interface__ typestr: an int16 view, reinterpreted
        t = t.view(torch.bfloat16)
    if t.data_ptr() != ptr:
        raise BridgeError("torch.as_tensor copied the buffer at 0x%x (data_ptr 0x%x): not zero-copy"
                          % (ptr, t.data_ptr()))
    return t


def _numpy_view(ptr, shape, kind, readonly):
    import numpy as np
    dt = {"bf16": np.uint16, "u8": np.uint8, "i32": np.int32, "f32": np.float32}[kind]
    n = _numel(shape)
    if n == 0:
        a = np.zeros(shape, dtype=dt)
    elif not ptr:
        raise BridgeError("a NULL pointer for a tensor of %d elements" % n)
    else:
        buf = (ctypes.c_char * (n * np.dtype(dt).itemsize)).from_address(ptr)
        a = np.frombuffer(buf, dtype=dt, count=n).reshape(shape)
    if readonly:
        a.flags.writeable = False
    return a


def page_bytes(kv_dtype, page_size):
    """Bytes of one cache page of a format named kv_dtype (kernels/mla_decode.h mla_kv_page_bytes())."""
    token = {"bf16": 1152, "fp8_e4m3_fnuz": 576, "fp8_ds_mla": 656, "fp8_ds_mla_fnuz": 656,
             "fp8_model1": 584, "fp8_model1_fnuz": 584}[kv_dtype]
    b = page_size * token
    return (b + 575) // 576 * 576 if kv_dtype.startswith("fp8_model1") else b


def _cache_view(kv_dtype, pages, page_size, ptr):
    """(shape, kind, ptr) of a cache: bf16 / fp8_e4m3_fnuz rows of 576, or the pages' bytes."""
    if kv_dtype in BLOCKSCALED:
        return (pages, page_bytes(kv_dtype, page_size)), "u8", ptr
    return (pages, page_size, 1, 576), "bf16" if kv_dtype == "bf16" else "u8", ptr


def _tensor_specs(a, raw):
    """{attribute: (shape, kind, pointer) or None} of the buffers of a kernel tuple (None: the
    attribute is None, a NULL pointer of an optional tensor or a tensor of the other form)."""
    q, kv, bt, sl, out, lse = raw[:6]
    specs = {"q": ((a.batch, a.s_q, a.h_q, a.d_qk if a.topk > 0 else 576), "bf16", q),
             "kv_cache": _cache_view(a.kv_dtype, a.num_pages, a.page_size, kv),
             "out": ((a.batch, a.s_q, a.h_q, 512), "bf16", out), "lse": ((a.batch, a.h_q, a.s_q), "f32", lse)}
    if a.topk <= 0:
        specs.update({"block_table": ((a.batch, a.max_pages), "i32", bt), "seqlens": ((a.batch,), "i32", sl)})
        for name in ("indices", "topk_length", "attn_sink", "extra_kv_cache", "extra_indices",
                     "extra_topk_length"):
            specs[name] = None
        return specs
    idx, tl, sink, ekv, eidx, etl = raw[RAW_SPARSE:RAW_SPARSE + 6]
    specs.update({"block_table": None, "seqlens": None,
                  "indices": ((a.batch, a.s_q, a.topk), "i32", idx),
                  "topk_length": ((a.batch,), "i32", tl) if tl else None,
                  "attn_sink": ((a.h_q,), "f32", sink) if sink else None})
    if a.extra_topk > 0:
        specs.update({"extra_kv_cache": _cache_view(a.kv_dtype, a.extra_num_pages, a.extra_page_size, ekv),
                      "extra_indices": ((a.batch, a.s_q, a.extra_topk), "i32", eidx),
                      "extra_topk_length": ((a.batch,), "i32", etl) if etl else None})
    else:
        specs.update({"extra_kv_cache": None, "extra_indices": None, "extra_topk_length": None})
    return specs


def _make_args(k, raw):
    """raw: the kernel tuple as handed by harness/pyimpl.c (see RAW_SPARSE): (q, kv, bt, sl, out,
    lse, ws, ws_bytes, batch, s_q, h_q, num_pages, page_size, max_pages, kv_dtype, softmax_scale,
    kv_scale, num_cus, stream[, indices, topk_length, attn_sink, extra_kv_cache, extra_indices,
    extra_topk_length, topk, extra_topk, extra_num_pages, extra_page_size, d_qk, d_v])."""
    cached = k.args_cache.get(raw)
    if cached is not None:
        return cached
    ws, ws_bytes, stream = raw[6], raw[7], raw[18]
    kv_dtype = raw[14]
    if kv_dtype not in KV_DTYPE_NAMES:
        raise BridgeError("%s: bridge: unknown kv_dtype %d" % (k.path, kv_dtype))
    sh = shape_from_raw(raw)
    a = Args(**{f: getattr(sh, f) for f in SHAPE_FIELDS})
    shapes = _tensor_specs(a, raw)
    for name in [n for n, v in shapes.items() if v is None]:
        setattr(a, name, None)
        del shapes[name]
    if k.backend == "cpu":
        try:
            for name, (shp, kind, ptr) in shapes.items():
                setattr(a, name, _numpy_view(ptr, shp, kind, name not in ("out", "lse")))
            a.workspace = _numpy_view(ws, (ws_bytes,), "u8", False) if ws_bytes else None
        except BridgeError as e:
            raise BridgeError("%s: bridge (numpy views): %s" % (k.path, e)) from None
        a.stream, a.device = None, None
    else:
        try:
            import torch
            dev = torch.device("cuda", torch.cuda.current_device())
            st = k.streams.get(stream)
            if st is None:
                st = torch.cuda.ExternalStream(stream, device=dev) if stream else torch.cuda.default_stream(dev)
                k.streams[stream] = st
            for name, (shp, kind, ptr) in shapes.items():
                setattr(a, name, _torch_view(ptr, shp, kind, dev))
            a.workspace = _torch_view(ws, (ws_bytes,), "u8", dev) if ws_bytes else None
        except BridgeError:
            raise
        except BaseException as e:  # noqa: B902
            raise BridgeError(_format_exception(k.path, "bridge (torch views)", e)) from None
        a.stream, a.device = st, dev
    if len(k.args_cache) >= 64:
        k.args_cache.clear()
    k.args_cache[raw] = a
    return a


def _config(cfg):
    name, bn, bh, sp, nw, ns = cfg
    return {"name": name, "block_n": bn, "block_h": bh, "num_splits": sp, "num_warps": nw,
            "num_stages": ns}


# ---- @triton.autotune: what the autotuner holds, and what it does in the worker -----------------
# (docs/DESIGN.md "Autotuned kernels", issue 41.) Triton's Autotuner (triton/runtime/autotuner.py,
# 3.5.1 and 3.9.0 alike) benchmarks every config that prune_configs() keeps the first time run()
# sees a new key (the key arguments' values and the dtypes of the tensor arguments): _bench() runs
# each through do_bench, and a config whose launch raises OutOfResources, PTXASError or
# CompileTimeAssertionFailure gets [inf, inf, inf], so min() never picks it: it is dropped without
# a word. The describe step lists each autotuner's configs; the worker wraps each one to count its
# benchmarks by phase of the harness and by graph capture.

AUTOTUNE_PHASES = ("", "parity", "tuning", "capture gate", "A/B", "e2e")


def _autotuner_class():
    """triton.runtime.autotuner.Autotuner when the kernel's import loaded it, else None (the shim never
    imports Triton itself)."""
    m = sys.modules.get("triton.runtime.autotuner")
    return getattr(m, "Autotuner", None) if m is not None else None


def _json_value(v):
    if v is None or isinstance(v, (bool, int, float, str)):
        return v
    return repr(v)


def autotune_config(c):
    """One triton.Config as the plan's dict: kwargs, num_warps, num_stages, num_ctas, maxnreg (when
    set), pre_hook (whether it has one) and label, the text the harness names it by."""
    kw = {str(k): _json_value(v) for k, v in (getattr(c, "kwargs", None) or {}).items()}
    d = {"kwargs": kw, "num_warps": _json_value(getattr(c, "num_warps", None)),
         "num_stages": _json_value(getattr(c, "num_stages", None)),
         "num_ctas": _json_value(getattr(c, "num_ctas", 1))}
    if getattr(c, "maxnreg", None) is not None:
        d["maxnreg"] = _json_value(c.maxnreg)
    d["pre_hook"] = getattr(c, "pre_hook", None) is not None
    parts = ["%s=%s" % (k, kw[k]) for k in kw]
    parts += ["num_warps=%s" % d["num_warps"], "num_stages=%s" % d["num_stages"]]
    if d["num_ctas"] not in (None, 1):
        parts.append("num_ctas=%s" % d["num_ctas"])
    if "maxnreg" in d:
        parts.append("maxnreg=%s" % d["maxnreg"])
    d["label"] = ", ".join(parts)
    return d


def _kernel_name(t):
    f = getattr(t, "base_fn", None)
    depth = 0
    if f is None:
        f = t
        while not hasattr(f, "__code__") and hasattr(f, "fn") and depth < 8:
            f, depth = f.fn, depth + 1
    return getattr(f, "__name__", "?")


def find_autotuners(mod):
    """[(global name, Autotuner)] reachable from the module's globals: a global that is one, one in
    the .fn chain of a global (triton.heuristics over triton.autotune, and the reverse), and one held
    in a global list, tuple or dict; each once, in the order of the globals."""
    cls = _autotuner_class()
    if cls is None:
        return []
    got, seen = [], set()

    def visit(name, v):
        depth = 0
        while v is not None and depth < 8:
            if isinstance(v, cls) and id(v) not in seen:
                seen.add(id(v))
                got.append((name, v))
            v, depth = getattr(v, "fn", None), depth + 1

    for name, v in list(vars(mod).items()):
        if name.startswith("__"):
            continue
        if isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                visit("%s[%d]" % (name, i), x)
        elif isinstance(v, dict):
            for k, x in v.items():
                visit("%s[%r]" % (name, k), x)
        else:
            visit(name, v)
    return got


def _fn_name(f):
    return getattr(f, "__qualname__", None) or getattr(f, "__name__", None) or type(f).__name__


def describe_autotune(mod):
    """The plan's "autotune" list: per Autotuner of the module, its kernel (the @triton.jit function's
    __name__), the global that holds it, its key arguments, every Config, what prunes them before
    benchmarking (early_config_prune, perf_model with top_k), reset_to_zero / restore_value, and
    whether it has its own do_bench or caches results on disk. [] when the module has none."""
    out = []
    for gname, t in find_autotuners(mod):
        prune = {}
        if getattr(t, "early_config_prune", None) is not None:
            prune["early_config_prune"] = _fn_name(t.early_config_prune)
        if getattr(t, "perf_model", None) is not None:
            prune["perf_model"] = _fn_name(t.perf_model)
            prune["top_k"] = _json_value(getattr(t, "configs_top_k", 1.0))
        out.append({"kernel": _kernel_name(t), "global": gname,
                    "key": [str(k) for k in (getattr(t, "keys", None) or [])],
                    "configs": [autotune_config(c) for c in (getattr(t, "configs", None) or [])],
                    "prune": prune,
                    "reset_to_zero": [str(x) for x in (getattr(t, "reset_to_zero", None) or [])],
                    "restore_value": [str(x) for x in (getattr(t, "restore_value", None) or [])],
                    "do_bench": "own" if getattr(t, "_do_bench", None) is not None else "triton's",
                    "cache_results": bool(getattr(t, "cache_results", False))})
    return out


class AutotuneWatch:
    """What one autotuner did in this worker: its runs, its tunings (a run whose key was new) and
    each config benchmark (phase of the harness, inside a graph capture or not, inside a timed
    launch or not, dropped by the autotuner or not, with the exception it caught)."""

    def __init__(self, impl, path, kernel, tuner):
        self.impl, self.path, self.kernel, self.tuner = impl, path, kernel, tuner
        self.runs = 0
        self.tunings = []  # per tuning: {"phase", "capturing", "timed", "configs", "pruned", "chosen"}
        self.benches = []  # per config benchmark: {"config", "phase", "capturing", "timed", "dropped"}
        self._exc = None
        self._pruned = None


_watches = []
_phase_cell = None     # ctypes int[2] the harness writes (phase index, inside a timed launch)
_call = [""]          # the bridge function running now ("prepare", "launch") or ""


def bridge_phase_at(addr):
    """The address of the harness's int[2] (harness/pyimpl.c pyimpl_phase()): the phase index into
    AUTOTUNE_PHASES and whether a timed launch is in progress. Read at each benchmark, never called
    per launch."""
    global _phase_cell
    _phase_cell = (ctypes.c_int * 2).from_address(addr) if addr else None
    return 0


def _now_phase():
    """(phase name, timed, capturing) of this moment."""
    ph, timed = "", False
    if _phase_cell is not None:
        i = _phase_cell[0]
        ph = AUTOTUNE_PHASES[i] if 0 <= i < len(AUTOTUNE_PHASES) else str(i)
        timed = bool(_phase_cell[1])
    if _call[0] == "prepare":
        ph = "prepare" if not ph else "%s (prepare)" % ph
    cap = False
    torch = sys.modules.get("torch")
    try:
        cap = bool(torch is not None and torch.cuda.is_available() and torch.cuda.is_current_stream_capturing())
    except Exception:  # noqa: B902 - a torch without CUDA, or a stand-in: not capturing
        cap = False
    return ph, timed, cap


def _watch(w):
    t = w.tuner
    bench, run, post = t._bench, t.run, t.post_hook
    prune = getattr(t, "prune_configs", None)

    def post_hook(kwargs, exception):
        if exception is not None:
            w._exc = exception
        return post(kwargs, exception=exception)

    def watched_bench(*args, config, **meta):
        w._exc = None
        ph, timed, cap = _now_phase()
        e = {"config": autotune_config(config)["label"], "phase": ph, "capturing": cap, "timed": timed}
        w.benches.append(e)  # before: a benchmark that raises (a synchronize inside a capture) counts too
        got = bench(*args, config=config, **meta)
        try:
            dropped = all(x == float("inf") for x in (got if isinstance(got, (list, tuple)) else [got]))
        except TypeError:
            dropped = False
        if dropped:
            e["dropped"] = ("%s: %s" % (type(w._exc).__name__, _one_line(w._exc))) if w._exc is not None else \
                "the benchmark returned inf (OutOfResources, PTXASError or CompileTimeAssertionFailure)"
        return got

    def watched_prune(kwargs):
        got = prune(kwargs)
        w._pruned = (len(t.configs), len(got))
        return got

    def watched_run(*args, **kwargs):
        w.runs += 1
        before = len(w.benches)
        ncache = len(getattr(t, "cache", {}) or {})
        w._pruned = None
        try:
            return run(*args, **kwargs)
        finally:
            if len(getattr(t, "cache", {}) or {}) > ncache or len(w.benches) > before:
                ph, timed, cap = _now_phase()  # only when it tuned: a cached launch costs nothing more
                best = getattr(t, "best_config", None)
                w.tunings.append({"phase": ph, "capturing": cap, "timed": timed, "configs": len(w.benches) - before,
                                  "pruned": list(w._pruned) if w._pruned else None,
                                  "chosen": autotune_config(best)["label"] if best is not None else None})

    t._bench = watched_bench
    t.run = watched_run
    t.post_hook = post_hook
    if prune is not None:
        t.prune_configs = watched_prune


def watch_autotuners(k):
    """Wrap every autotuner of the loaded kernel k (a Kernel) so that its benchmarks are observed."""
    for _, t in find_autotuners(k.mod):
        if any(w.tuner is t for w in _watches):
            continue
        w = AutotuneWatch(k.name, k.path, _kernel_name(t), t)
        _watch(w)
        _watches.append(w)


def _benches_in_capture(since):
    """{(impl, kernel): n} of config benchmarks made inside a graph capture after the marks since."""
    got = {}
    for w, n in zip(_watches, since):
        c = sum(1 for e in w.benches[n:] if e["capturing"])
        if c:
            got[w] = c
    return got


def autotune_report():
    """What every watched autotuner did in this process, as a list of dicts (see AutotuneWatch)."""
    out = []
    for w in _watches:
        by_phase = {}
        for e in w.benches:
            by_phase[e["phase"] or "outside"] = by_phase.get(e["phase"] or "outside", 0) + 1
        dropped = {}
        for e in w.benches:
            if "dropped" in e:
                dropped.setdefault(e["config"], e["dropped"])
        out.append({"impl": w.impl, "kernel": w.kernel, "runs": w.runs, "tunings": len(w.tunings),
                    "benchmarks": len(w.benches), "by_phase": by_phase,
                    "in_capture": sum(1 for e in w.benches if e["capturing"]),
                    "timed": sum(1 for e in w.benches if e["timed"]),
                    "dropped": [{"config": c, "why": dropped[c]} for c in dropped],
                    "chosen": sorted({x["chosen"] for x in w.tunings if x["chosen"]}),
                    "tuning_log": w.tunings[:16]})
    return out


def bridge_autotune_report():
    return json.dumps(autotune_report(), sort_keys=True, separators=(",", ":")) if _watches else ""


# ---- the bridge: called from harness/pyimpl.c in the worker ------------------------------------
# Every function returns a value and never raises for a kernel's error: the one line is kept in
# last_error, the return value says it failed (status < 0).

_kernels = []
last_error = ""


def _fail(line, status=MLA_EDEVICE):
    global last_error
    last_error = line
    return status


def bridge_load(path, sha256, helpers_json=""):
    """Load the kernel module at path, whose bytes must still hash to sha256 and whose helper files
    must be those of helpers_json (those the parent described, see load_checked()); returns its
    index (>= 0) or MLA_EINVAL (see last_error)."""
    try:
        _kernels.append(load_checked(path, sha256, lambda: Kernel(path, len(_kernels)), helpers_json))
        watch_autotuners(_kernels[-1])
        return len(_kernels) - 1
    except BridgeError as e:
        return _fail(str(e), MLA_EINVAL)


def bridge_name(i):
    return _kernels[i].name


def bridge_workspace_size(i, raw, cfg):
    """Bytes (>= 0), or a negative status with last_error set."""
    k = _kernels[i]
    try:
        return k.workspace_size(shape_from_raw(raw), _config(cfg))
    except BridgeError as e:
        return _fail(str(e))


def _run(i, function, raw, cfg):
    marks = [len(w.benches) for w in _watches]
    _call[0] = function
    try:
        rc = _run_call(i, function, raw, cfg)
    finally:
        _call[0] = ""
    inside = _benches_in_capture(marks)
    if inside:
        # Benchmarking inside a graph capture: the graph holds every benchmark launch (each replay
        # would run them all), or the capture broke on the benchmarker's synchronize. Either way
        # this launch is not the kernel's: it fails, naming the kernel (docs/DESIGN.md "Autotuned
        # kernels").
        what = "; ".join("autotune %s benchmarked %d config%s inside a graph capture" % (
            w.kernel, n, "" if n == 1 else "s") for w, n in inside.items())
        line = ("%s: %s: %s (the graph would hold every benchmark launch: tune in prepare(), outside "
                "capture, for the shapes launch() will see)" % (_kernels[i].path, function, what))
        if rc != MLA_OK and last_error:
            line += "; then: " + last_error
        return _fail(line)
    return rc


def _run_call(i, function, raw, cfg):
    k = _kernels[i]
    try:
        a = _make_args(k, raw)
        c = _config(cfg)
        if a.stream is not None:
            import torch
            try:
                with torch.cuda.stream(a.stream):
                    rc = k.call(function, a, c)
            except BridgeError:
                raise
            except BaseException as e:  # noqa: B902 - entering or leaving the stream context
                raise BridgeError(_format_exception(k.path, function, e)) from None
        else:
            rc = k.call(function, a, c)
        if rc is None:
            return MLA_OK
        if type(rc) is int and rc in (MLA_OK, MLA_EINVAL, MLA_EUNSUPPORTED, MLA_EDEVICE):
            if rc != MLA_OK:
                _fail("%s: %s: returned status %d" % (k.path, function, rc))
            return rc
        return _fail("%s: %s: returned %r (None, or an mla_status int)" % (k.path, function, rc),
                     MLA_EINVAL)
    except BridgeError as e:
        return _fail(str(e))


def bridge_prepare(i, raw, cfg):
    if getattr(_kernels[i].mod, "prepare", None) is None:
        return MLA_OK
    return _run(i, "prepare", raw, cfg)


def bridge_launch(i, raw, cfg):
    return _run(i, "launch", raw, cfg)


def bridge_supports(i, raw):
    """None when supported, else the reason; a failing supports() answers its error line."""
    k = _kernels[i]
    try:
        return k.supports(shape_from_raw(raw))
    except BridgeError as e:
        _fail(str(e))
        return str(e)


def bridge_helpers_late():
    """After the run: "" when every module file imported under a loaded module's directory is
    covered by a hash (a loaded module, a helper its import loaded, or imported before it); else
    one line naming the first helper imported later (inside prepare(), launch(), ...), which no
    plan hash covers."""
    for ld in _loaded:
        for n in list(sys.modules):
            real = _code_file(sys.modules.get(n))
            if real is None or real in _covered or not _helper_file(real, ld.here):
                continue
            return ("%s: run: helper '%s' was imported after the module's load (lazily, e.g. in "
                    "prepare() or launch()): no hash of the plan covers it; import it at the "
                    "module's top level" % (ld.path, os.path.relpath(real, ld.here)))
    return ""


def versions():
    """python, and torch / triton / tilelang / numpy where imported (after the kernel imports)."""
    v = {"python": platform.python_version()}
    for m in VERSIONED:
        mod = sys.modules.get(m)
        if mod is not None:
            v[m] = str(getattr(mod, "__version__", "unknown"))
    return v


def bridge_versions():
    return json.dumps(versions(), sort_keys=True)


# ---- command line (the parent process's view) ---------------------------------------------------

def _libpython():
    """The shared libpython an embedding process must dlopen to be this interpreter ('' if none)."""
    libdir = sysconfig.get_config_var("LIBDIR") or ""
    multiarch = sysconfig.get_config_var("MULTIARCH") or ""
    for c in (sysconfig.get_config_var("INSTSONAME"), sysconfig.get_config_var("LDLIBRARY")):
        if not c or not (".so" in c or c.endswith(".dylib")):
            continue
        for d in (libdir, os.path.join(libdir, multiarch) if multiarch else None):
            if d and os.path.exists(os.path.join(d, c)):
                return os.path.join(d, c)
    return ""


def _describe(path, arch):
    k = Kernel(path, 0)
    cfgs = k.configs(arch)
    m = k.mod
    tuners = describe_autotune(m)
    return {
        "name": k.name, "backend": k.backend, "summary": k.summary, "kv_dtypes": list(k.kv_dtypes),
        "forms": list(k.forms),
        "arch": arch, "configs": cfgs,
        "has_supports": getattr(m, "supports", None) is not None,
        "has_prepare": getattr(m, "prepare", None) is not None,
        "has_workspace_size": getattr(m, "workspace_size", None) is not None,
        "path": k.real, "sha256": k.sha256, "helpers": helper_list(k.helpers),
        "autotune": tuners,
        "versions": versions(),
        "interpreter": {"executable": sys.executable, "prefix": sys.prefix,
                        "base_prefix": getattr(sys, "base_prefix", sys.prefix),
                        "path": [p for p in sys.path if p], "libpython": _libpython(),
                        "libdir": sysconfig.get_config_var("LIBDIR") or "",
                        "ldlibrary": sysconfig.get_config_var("LDLIBRARY") or "",
                        "instsoname": sysconfig.get_config_var("INSTSONAME") or ""},
    }


def _supports_answer(k, text):
    try:
        shape = _shape_from_json(json.loads(text))
    except (ValueError, TypeError, BridgeError) as e:
        return {"supported": False, "why": "shape json: %s" % _one_line(e)}
    try:
        why = k.supports(shape)
    except BridgeError as e:
        why = str(e)
    return {"supported": True} if why is None else {"supported": False, "why": why}


def run_command(argv, here, answer, usage):
    """A bridge's command line: drops here (the script's own directory) from the front of sys.path
    (the module's directory, not the bridge's, is what a module may import from), sends what a
    module prints to stderr (stdout carries the answers only) and calls answer(argv, out), out the
    real stdout, which returns an exit status, or None for a command it does not know (usage
    printed to stderr, 2). A BridgeError is printed to stderr as its one line (1); any other
    exception of answer() propagates."""
    if sys.path and os.path.realpath(sys.path[0]) == here:
        sys.path.pop(0)
    out = sys.stdout
    sys.stdout = sys.stderr
    try:
        rc = answer(argv, out)
        if rc is not None:
            return rc
    except BridgeError as e:
        print(str(e), file=sys.stderr)
        return 1
    finally:
        out.flush()
    print(usage, file=sys.stderr)
    return 2


def _answer(argv, out):
    if len(argv) == 3 and argv[0] == "describe":
        out.write(json.dumps(_describe(argv[1], argv[2]), sort_keys=True) + "\n")
        return 0
    if len(argv) == 3 and argv[0] == "supports":
        out.write(json.dumps(_supports_answer(Kernel(argv[1], 0), argv[2])) + "\n")
        return 0
    if len(argv) == 2 and argv[0] == "serve":
        # One shape json per line on stdin, one answer per line on stdout, until EOF: the
        # parent keeps one such process per module instead of one interpreter per question.
        k = Kernel(argv[1], 0)
        for line in sys.stdin:
            out.write(json.dumps(_supports_answer(k, line)) + "\n")
            out.flush()
        return 0
    return None


def main(argv):
    return run_command(argv, os.path.dirname(os.path.realpath(__file__)), _answer,
                       "usage: mla_decode.py describe FILE.py ARCH | supports FILE.py SHAPE_JSON | "
                       "serve FILE.py")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
