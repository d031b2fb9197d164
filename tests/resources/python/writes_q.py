"""Writes into its input q: plainly (the read-only view refuses it) or around the view (ctypes)."""
import ctypes

NAME = "test.py_writes_q"
BACKEND = "cpu"
KV_DTYPES = ("bf16", "fp8_e4m3_fnuz")
SUMMARY = "writes into q"


def configs(arch):
    return [{"name": "direct"}, {"name": "ctypes"}]


def launch(args, config):
    if config["name"] == "direct":
        args.q[0, 0, 0, 0] = 0
    else:
        ctypes.memset(args.q.ctypes.data, 0, 2)
    args.out[...] = 0
    args.lse[...] = 0
