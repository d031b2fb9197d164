#!/usr/bin/env python3
"""flashmla_own_bench.py FLASHMLA_DIR - FlashMLA's own dense-decode test on the headline shapes.

Runs tests/test_flash_mla_dense_decoding.py's own pieces (generate_test_data, reference_torch,
kernelkit's check_is_allclose and bench_kineto: L2 flushed by an 8 GB memset before each of 10
runs) on the four headline shapes of issue 42 (bf16, pages of 64, s_q 1, fixed lengths, not
causal), with the flash_mla extension built from the same tree (FLASHMLA_DIR on sys.path).
Prints per shape what FlashMLA's test prints (the time of flash_fwd_splitkv_mla_kernel alone, its
TFLOPS and GB/s) and, beside it, the time of the combine kernel and the span from the split-KV
kernel's start to the combine's end: the harness times the whole launch (metadata, split-KV,
combine) as one graph replay, so that span is the figure to compare with it. FLOPs and bytes as
FlashMLA's test counts them (the same as BENCHMARKS.md's counting).
"""
import os
import sys

fmla = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
sys.path[:0] = [fmla, os.path.join(fmla, "tests")]

import torch  # noqa: E402
import kernelkit as kk  # noqa: E402
import flash_mla  # noqa: E402
import test_flash_mla_dense_decoding as t  # noqa: E402

SHAPES = [  # (h_q, b, keys)
    (128, 128, 8192),
    (128, 64, 8192),
    (16, 128, 32768),
    (16, 128, 4096),
]


@torch.inference_mode()
def one(h_q, b, s_k):
    p = t.TestParam(b, 1, s_k, is_varlen=False, is_causal=False, h_q=h_q)
    seqlens, q, block_table, blocked_k = t.generate_test_data(p)
    meta, _ = flash_mla.get_mla_metadata()

    def run():
        return flash_mla.flash_mla_with_kvcache(q, blocked_k, block_table, seqlens, p.dv, meta, None,
                                                causal=False)

    out, lse = run()
    out_ref, lse_ref = t.reference_torch(seqlens, block_table, q, blocked_k, p.dv, False)
    ok = kk.check_is_allclose("out", out, out_ref, abs_tol=8e-4, rel_tol=2.01 / 128, cos_diff_tol=5e-6)
    ok &= kk.check_is_allclose("lse", lse, lse_ref, abs_tol=1e-6, rel_tol=8.01 / 65536)
    r = kk.bench_kineto(run, 10)
    t_split = r.get_kernel_time("flash_fwd_splitkv_mla_kernel")
    t_comb = r.get_kernel_time("flash_fwd_mla_combine_kernel")
    t_span = r.get_e2e_time("flash_fwd_splitkv_mla_kernel", "flash_fwd_mla_combine_kernel")
    flop = b * h_q * (2 * p.d * s_k + 2 * s_k * p.dv)
    byts = b * (h_q * p.d * 2 + s_k * p.d * 2 + h_q * p.dv * 2)
    print(f"OWN h_q {h_q} b {b} keys {s_k}: parity {'pass' if ok else 'FAIL'}; "
          f"splitkv {t_split * 1e3:.4f} ms {flop / t_split / 1e12:.0f} TFLOPS {byts / t_split / 1e9:.0f} GB/s; "
          f"combine {t_comb * 1e3:.4f} ms; splitkv..combine span {t_span * 1e3:.4f} ms "
          f"{flop / t_span / 1e12:.0f} TFLOPS {byts / t_span / 1e9:.0f} GB/s", flush=True)
    return ok


def main():
    dev = torch.device("cuda:0")
    torch.set_default_dtype(torch.bfloat16)
    torch.set_default_device(dev)
    torch.cuda.set_device(dev)
    print(f"FlashMLA {fmla}, torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
    fails = sum(not one(*s) for s in SHAPES)
    sys.exit(1 if fails else 0)


if __name__ == "__main__":
    main()
