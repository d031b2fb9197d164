"""triton_mla_kernels.py - what both Triton compile tools need of the shipped Triton modules:
kernels/triton/mla_decode.py (triton.mla_decode, the dense form; the default) and
kernels/triton/dsa_decode.py (triton.dsa_decode, the sparse form; --module dsa_decode).

The module loaded without torch (a stub: the kernels need none to compile), the kernels each config
compiles (jobs()), and the signature, constexprs and options of one of them for one config, cache
dtype and split flag, as the module's launcher passes them:
  triton.mla_decode (_build): q, out bf16; the fp8 cache holds its codes as uint8; block_table,
    seqlens int32; lse and the partials fp32.
  triton.dsa_decode (build): q, out bf16; a block-scaled cache as uint8 bytes, bf16 as bf16; indices
    and lengths int32; attn_sink, lse and the partials fp32; the variant with topk_length and
    attn_sink, and (fp8_model1*) the extra cache with its lengths, i.e. every loop the kernel has;
    Triton's own fp8 conversion where the launcher picks it (e4m3fn on NVIDIA, e4m3fnuz on AMD).
Used by tools/gpu/triton_amd_gate.py (gfx942/gfx950) and tools/gpu/triton_cuda_resources.py
(sm_90/sm_120).
"""
import importlib.util
import os
import sys
import types

SRC = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MODULES = {"mla_decode": os.path.join(SRC, "kernels", "triton", "mla_decode.py"),
           "dsa_decode": os.path.join(SRC, "kernels", "triton", "dsa_decode.py")}
MODULE = MODULES["mla_decode"]
PTRS = ("Q", "KV", "BT", "SL", "OUT", "LSE", "PO", "PL")
SCALARS = {"qk_scale": "fp32", "out_scale": "fp32", "seq_q": "i32", "heads": "i32", "page": "i32",
           "max_pages": "i32", "n_rows": "i32", "n_split": "i32"}
DSA_SCALARS = {"qk_scale": "fp32", "heads": "i32", "seq_q": "i32", "topk": "i32", "page_size": "i32",
               "page_bytes": "i32", "extra_topk": "i32", "extra_page_size": "i32", "extra_page_bytes": "i32",
               "n_split": "i32"}
# The formats the AMD gate compiles triton.dsa_decode for: those gfx942's MFMA reads (the fnuz twins)
# and bf16; the OCP formats decode with the same integer code there as the fnuz twins on NVIDIA.
DSA_AMD_DTYPES = ("bf16", "fp8_ds_mla_fnuz", "fp8_model1_fnuz")


def load_module(name="mla_decode"):
    sys.modules.setdefault("torch", types.ModuleType("torch"))
    spec = importlib.util.spec_from_file_location("vs_triton_" + name, MODULES[name])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def is_dsa(mod):
    return mod.NAME == "triton.dsa_decode"


def combine_name(mod):
    return "_dsa_combine_kernel" if is_dsa(mod) else "_mla_combine_kernel"


def jobs(mod, cfgs, hip):
    """[(kernel name, config, kv_dtype, split)] of every kernel the configs compile, the combine last."""
    out = []
    for cfg in cfgs:
        if is_dsa(mod):
            kname, dtypes = "_dsa_decode_kernel", DSA_AMD_DTYPES if hip else mod.KV_DTYPES
        else:
            kname = "_mla_decode_kernel_keys" if int(cfg["block_h"] or 64) <= mod.KEYS_MAJOR_MAX_BH \
                else "_mla_decode_kernel"
            dtypes = mod.KV_DTYPES
        for dtype in dtypes:
            for split in (False, True):
                if split and int(cfg["num_splits"]) == 1:
                    continue
                out.append((kname, cfg, dtype, split))
    out.append((combine_name(mod), None, "any", False))
    return out


def kernel_args(mod, kname, cfg, dtype, split, fp8_asm, hip=False):
    """(signature, constexprs, options, label) of kernel kname for config cfg (None: the combine).

    fp8_asm: whether triton.mla_decode's fp8 path decodes with inline asm (NVIDIA only); hip: the
    target is AMD (triton.dsa_decode's choice of fp8 conversion)."""
    if is_dsa(mod):
        return _dsa_kernel_args(mod, kname, cfg, dtype, split, hip)
    if kname == "_mla_combine_kernel":
        sig = {"PO": "*fp32", "PL": "*fp32", "OUT": "*bf16", "LSE": "*fp32", "seq_q": "i32", "heads": "i32",
               "n_rows": "i32", "n_split": "i32", "NSP2": "constexpr"}
        return sig, {"NSP2": mod._next_pow2(mod.MAX_SPLITS)}, {"num_warps": 4, "num_stages": 1}, "combine"
    fp8 = dtype == "fp8_e4m3_fnuz"
    tma = mod._tma(cfg)
    sig = {p: "*fp32" for p in PTRS}
    sig.update(Q="*bf16", KV="*u8" if fp8 else "*bf16", BT="*i32", SL="*i32", OUT="*bf16")
    sig.update(SCALARS)
    const = {"BLOCK_H": int(cfg["block_h"] or 64), "BLOCK_N": int(cfg["block_n"]), "FP8": fp8,
             "FP8_ASM": fp8 and fp8_asm, "SPLIT": split, "KV_INT": False, "TMA": tma}
    if tma:  # the cache's two descriptors (_build): [block_n, 512] and [block_n, 64] boxes
        el = "u8" if fp8 else "bf16"
        sig["KD"] = "tensordesc<%s[%d,%d]>" % (el, int(cfg["block_n"]), mod.D_V)
        sig["KRD"] = "tensordesc<%s[%d,%d]>" % (el, int(cfg["block_n"]), mod.D_ROPE)
    else:
        const.update(KD=None, KRD=None)
    for c in const:
        sig[c] = "constexpr"
    opts = {"num_warps": int(cfg["num_warps"]), "num_stages": int(cfg["num_stages"])}
    return sig, const, opts, cfg["name"]


def _dsa_kernel_args(mod, kname, cfg, dtype, split, hip):
    if kname == "_dsa_combine_kernel":
        sig = {"PO": "*fp32", "PL": "*fp32", "SINK": "*fp32", "OUT": "*bf16", "LSE": "*fp32", "heads": "i32",
               "seq_q": "i32", "n_split": "i32", "NSP2": "constexpr", "HAS_SINK": "constexpr"}
        const = {"NSP2": mod._next_pow2(mod.MAX_SPLITS), "HAS_SINK": True}
        return sig, const, {"num_warps": 4, "num_stages": 1}, "combine"
    kv = "*bf16" if dtype == "bf16" else "*u8"
    sig = {"Q": "*bf16", "KV": kv, "IDX": "*i32", "TL": "*i32", "EKV": kv, "EIDX": "*i32", "ETL": "*i32",
           "SINK": "*fp32", "OUT": "*bf16", "LSE": "*fp32", "PO": "*fp32", "PL": "*fp32"}
    sig.update(DSA_SCALARS)
    extra = dtype.startswith("fp8_model1")
    const = {"BLOCK_H": int(cfg["block_h"] or 64), "BLOCK_N": int(cfg["block_n"]), "FMT": mod.fmt_of(dtype),
             "D_QK": mod.d_qk_of(dtype), "FNUZ": dtype.endswith("_fnuz"), "NATIVE": mod._native_fp8(dtype, hip),
             "HAS_TL": True, "HAS_EXTRA": extra, "HAS_ETL": extra, "HAS_SINK": True, "SPLIT": split}
    for c in const:
        sig[c] = "constexpr"
    opts = {"num_warps": int(cfg["num_warps"]), "num_stages": int(cfg["num_stages"])}
    return sig, const, opts, cfg["name"]


def attrs(sig, kname):
    """The launcher's specialization of a triton.dsa_decode kernel's arguments: its pointers (torch
    allocations) and page_bytes (a multiple of 16 in every format) divisible by 16, as Triton's
    launcher finds them; {} for triton.mla_decode's kernels (compiled as they always were)."""
    if not kname.startswith("_dsa_"):
        return {}
    names = list(sig)
    return {(names.index(n),): [["tt.divisibility", 16]] for n in names
            if sig[n].startswith("*") or n in ("page_bytes", "extra_page_bytes")}
