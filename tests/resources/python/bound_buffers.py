"""Bound to its buffers, as torch.mla_decode's own CUDA graph is: prepare() records the addresses
of the buffers it is given, launch() refuses any buffer set prepare() never saw (kernels/mla_decode.h:
the harness prepares every buffer set a config is launched on, before its first launch)."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "kernels", "python"))
import numpy_mla  # noqa: E402

NAME = "test.py_bound"
BACKEND = "cpu"
KV_DTYPES = ("bf16", "fp8_e4m3_fnuz")
SUMMARY = "numpy.mla_decode, launched only on buffers prepare() was given"
configs = numpy_mla.configs

_prepared = set()


def _key(args, config):
    return (config["name"],) + tuple(x.ctypes.data for x in (args.q, args.kv_cache, args.block_table,
                                                             args.seqlens, args.out, args.lse))


def prepare(args, config):
    _prepared.add(_key(args, config))


def launch(args, config):
    if _key(args, config) not in _prepared:
        raise RuntimeError("launch() before prepare() for these buffers")
    numpy_mla.launch(args, config)
