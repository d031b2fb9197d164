"""A cuda module with one @triton.autotune kernel (issue 41, item 3): the plan lists its three
configs and, compiled ahead for the plan's generation with AUTOTUNE_SIGNATURES, which of them the
autotuner would drop there for want of shared memory (a tile of BM x BK and BK x BN fp16 per
pipeline stage). It is never launched: the tests only describe it and compile it."""
import triton
import triton.language as tl

NAME = "test.py_autotuned_gpu"
BACKEND = "cuda"
KV_DTYPES = ("bf16",)
SUMMARY = "an autotuned Triton GEMM tile, described and compiled ahead, never launched"


def _keep_all(configs, named_args, **kwargs):
    return configs


@triton.autotune(
    configs=[
        triton.Config({"BM": 64, "BN": 64, "BK": 32}, num_warps=4, num_stages=2),
        triton.Config({"BM": 128, "BN": 128, "BK": 256}, num_warps=8, num_stages=2),
        triton.Config({"BM": 256, "BN": 256, "BK": 256}, num_warps=8, num_stages=2, num_ctas=1, maxnreg=255),
    ],
    key=["M", "N", "K"],
    prune_configs_by={"early_config_prune": _keep_all},
    reset_to_zero=["C"],
)
@triton.jit
def _gemm_kernel(A, B, C, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    pm = tl.program_id(0)
    pn = tl.program_id(1)
    rm = pm * BM + tl.arange(0, BM)
    rn = pn * BN + tl.arange(0, BN)
    rk = tl.arange(0, BK)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        a = tl.load(A + rm[:, None] * K + (k + rk)[None, :])
        b = tl.load(B + (k + rk)[:, None] * N + rn[None, :])
        acc += tl.dot(a, b)
    tl.store(C + rm[:, None] * N + rn[None, :], acc.to(tl.float16))


# The argument types a launch gives _gemm_kernel (what tools/gpu/triton_autotune_fit.py compiles).
AUTOTUNE_SIGNATURES = {"_gemm_kernel": {"label": "fp16", "signature": {
    "A": "*fp16", "B": "*fp16", "C": "*fp16", "M": "i32", "N": "i32", "K": "i32"}}}


def configs(arch):
    return [{"name": "auto", "block_n": 64}]


def launch(args, config):
    raise NotImplementedError("never launched: the tests describe and compile it")
