"""triton_mla_kernels.py - what both Triton compile tools need of kernels/triton/mla_decode.py.

The module loaded without torch (a stub: the kernels need none to compile), and the signature,
constexprs and options of one of its kernels for one config, cache dtype and split flag, as its
launcher passes them (kernels/triton/mla_decode.py _build: q, out bf16; the fp8 cache holds its
codes as uint8; block_table, seqlens int32; lse and the partials fp32). Used by
tools/gpu/triton_amd_gate.py (gfx942/gfx950) and tools/gpu/triton_cuda_resources.py (sm_90/sm_120).
"""
import importlib.util
import os
import sys
import types

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULE = os.path.join(SRC, "kernels", "triton", "mla_decode.py")
PTRS = ("Q", "KV", "BT", "SL", "OUT", "LSE", "PO", "PL")
SCALARS = {"qk_scale": "fp32", "out_scale": "fp32", "seq_q": "i32", "heads": "i32", "page": "i32",
           "max_pages": "i32", "n_rows": "i32", "n_split": "i32"}


def load_module():
    sys.modules.setdefault("torch", types.ModuleType("torch"))
    spec = importlib.util.spec_from_file_location("vs_triton_mla_decode", MODULE)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def kernel_args(mod, kname, cfg, dtype, split, fp8_asm):
    """(signature, constexprs, options, label) of kernel kname for config cfg (None: the combine).

    fp8_asm: whether the fp8 path's decode is the inline-asm one (NVIDIA only)."""
    if kname == "_mla_combine_kernel":
        sig = {"PO": "*fp32", "PL": "*fp32", "OUT": "*bf16", "LSE": "*fp32", "seq_q": "i32", "heads": "i32",
               "n_rows": "i32", "n_split": "i32", "NSP2": "constexpr"}
        return sig, {"NSP2": mod._next_pow2(mod.MAX_SPLITS)}, {"num_warps": 4, "num_stages": 1}, "combine"
    fp8 = dtype == "fp8_e4m3_fnuz"
    sig = {p: "*fp32" for p in PTRS}
    sig.update(Q="*bf16", KV="*u8" if fp8 else "*bf16", BT="*i32", SL="*i32", OUT="*bf16")
    sig.update(SCALARS)
    const = {"BLOCK_H": int(cfg["block_h"] or 64), "BLOCK_N": int(cfg["block_n"]), "FP8": fp8,
             "FP8_ASM": fp8 and fp8_asm, "SPLIT": split, "KV_INT": False}
    for c in const:
        sig[c] = "constexpr"
    opts = {"num_warps": int(cfg["num_warps"]), "num_stages": int(cfg["num_stages"])}
    return sig, const, opts, cfg["name"]
