"""A cuda module for the device (issue 41, item 3): torch.mla_decode's computation, then a Triton
kernel under @triton.autotune (two configs) that writes a scratch buffer prepare() allocated. Keyed
on the task's shape, it tunes at the first launch (parity) and the capture gate sees nothing; with
VS_TEST_AUTOTUNE_RETUNE=1 its key changes at every launch, so that it benchmarks inside the capture
gate's graph capture: that launch fails with the kernel's name (docs/DESIGN.md "Autotuned kernels")."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "kernels", "torch"))
import mla_decode as tm  # noqa: E402 (kernels/torch/mla_decode.py)
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

NAME = "test.py_autotuned_cuda"
BACKEND = "cuda"
KV_DTYPES = ("bf16",)
SUMMARY = "torch.mla_decode, then an autotuned Triton kernel writing a scratch buffer"
configs = tm.configs
supports = tm.supports
workspace_size = tm.workspace_size
RETUNE = os.environ.get("VS_TEST_AUTOTUNE_RETUNE") == "1"
N = 4096


@triton.autotune(configs=[triton.Config({"BLOCK": 128}, num_warps=4), triton.Config({"BLOCK": 512}, num_warps=8)],
                 key=["n", "epoch"])
@triton.jit
def _touch_kernel(X, n, epoch, BLOCK: tl.constexpr):
    i = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(X + i, i + epoch, mask=i < n)


AUTOTUNE_SIGNATURES = {"_touch_kernel": {"signature": {"X": "*i32", "n": "i32", "epoch": "i32"}}}
_scratch = {}
_launches = [0]


def prepare(args, config):
    tm.prepare(args, config)
    if args.device not in _scratch:
        _scratch[args.device] = torch.zeros(N, dtype=torch.int32, device=args.device)


def launch(args, config):
    tm.launch(args, config)
    _launches[0] += 1
    x = _scratch[args.device]
    _touch_kernel[lambda meta: (triton.cdiv(N, meta["BLOCK"]),)](x, N, _launches[0] if RETUNE else 0)
