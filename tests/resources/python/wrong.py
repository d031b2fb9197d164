"""A deliberately wrong module: numpy.mla_decode's result, plus 0.25 on one element of out."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "kernels", "python"))
import numpy as np  # noqa: E402
import numpy_mla  # noqa: E402

NAME = "test.py_wrong"
BACKEND = "cpu"
KV_DTYPES = ("bf16", "fp8_e4m3_fnuz")
SUMMARY = "numpy.mla_decode with out[0, 0, 1, 7] off by 0.25"
configs = numpy_mla.configs


def launch(args, config):
    numpy_mla.launch(args, config)
    x = numpy_mla._bf16_to_f32(args.out[0, 0, 1, 7:8]) + np.float32(0.25)
    args.out[0, 0, 1, 7:8] = numpy_mla._f32_to_bf16(x)
