"""A CPU module whose launch goes through Triton's own Autotuner (issue 41, item 3; needs the
Triton of .venv-triton, no GPU): numpy.mla_decode's computation wrapped as a kernel with the
interface Triton's Autotuner drives (arg_names, fn, run), tuned over three configs keyed on the
task's shape, benchmarked with a CPU clock (do_bench). The BLOCK 512 config raises Triton's
OutOfResources as a launch over the shared memory limit does: the autotuner drops it silently, the
harness names it. RETUNE (autotuned_retune.py) changes the key at every launch, so that the
autotuner benchmarks in every phase of the run, the timed launches included."""
import inspect
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                                "kernels", "python"))
import numpy_mla  # noqa: E402
import triton  # noqa: E402
from triton.runtime.errors import OutOfResources  # noqa: E402

NAME = "test.py_autotuned"
BACKEND = "cpu"
KV_DTYPES = ("bf16", "fp8_e4m3_fnuz")
SUMMARY = "numpy.mla_decode through Triton's Autotuner (three configs, one over its resources)"
configs = numpy_mla.configs
supports = numpy_mla.supports


class NumpyKernel:
    """What Triton's Autotuner asks of a kernel: arg_names, fn (a function) and run(*args, **meta)."""

    def __init__(self, fn, n_args):
        self.fn = fn
        self.arg_names = list(inspect.signature(fn).parameters)[:n_args]

    def run(self, *args, grid=None, warmup=False, **meta):
        if meta["BLOCK"] * 512 > 163840:
            raise OutOfResources(meta["BLOCK"] * 512, 163840, "shared memory")
        return self.fn(*args, BLOCK=meta["BLOCK"])


def _decode(args, config, batch, h_q, epoch, BLOCK):
    numpy_mla.launch(args, config)


def _cpu_bench(kernel_call, quantiles):
    t0 = time.perf_counter()
    kernel_call()
    ms = (time.perf_counter() - t0) * 1e3
    return [ms, ms, ms]


DECODE = triton.autotune(configs=[triton.Config({"BLOCK": 64}, num_warps=4, num_stages=1),
                                  triton.Config({"BLOCK": 128}, num_warps=4, num_stages=1),
                                  triton.Config({"BLOCK": 512}, num_warps=8, num_stages=2)],
                         key=["batch", "h_q", "epoch"], do_bench=_cpu_bench)(NumpyKernel(_decode, 5))


def run(args, config, epoch):
    DECODE.run(args, config, args.batch, args.h_q, epoch, grid=None, warmup=False)


def launch(args, config):
    run(args, config, 0)
