#!/usr/bin/env python3
"""triton_ncu.py SHAPE - for Nsight Compute: every config of triton.mla_decode for the device's
generation, prepared and launched once each (two launches per config: prepare()'s, which compiles,
and launch()'s, the one to read) on one dense headline shape (bf16, s_q 1, page 64, the inputs of
tools/gpu/py_kernels_check.py). Prints "launched CONFIG splits N" after each, in launch order, which
tools/gpu/ncu_table.py pairs with ncu's reports.

  ncu --target-processes all -k regex:_mla_decode_kernel --section SpeedOfLight ... \\
      python3 tools/gpu/triton_ncu.py h128-b128-8k > ncu_h128-b128-8k.txt
SHAPE: h128-b128-8k (h_q 128, batch 128, 8192 keys each) or h16-b128-32k (h_q 16, 128, 32768).
Needs a GPU and torch; h200_cards.sh's step triton_check runs it.
"""
import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in kernels/ (its git status is part of the kernel identity)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import py_kernels_check as P  # noqa: E402 (after the path)

SHAPES = {"h128-b128-8k": (128, 128, 8192), "h16-b128-32k": (16, 128, 32768)}


def main():
    if len(sys.argv) != 2 or sys.argv[1] not in SHAPES:
        print("usage: triton_ncu.py %s" % "|".join(SHAPES), file=sys.stderr)
        return 2
    import torch
    h_q, batch, n = SHAPES[sys.argv[1]]
    mod = P.load_module("triton")
    args, _ = P.make_inputs(torch, "cuda", batch, 1, h_q, 64, [n] * batch, "bf16", 99, bench=True)
    stream = torch.cuda.Stream()
    rc = 0
    for cfg in mod.configs(P.device_arch(torch)):
        try:
            P.run_impl(torch, mod, args, cfg, stream)
            print("launched %s splits %d" % (cfg["name"], mod._num_splits(args, cfg)), flush=True)
        except Exception as ex:  # noqa: BLE001 - one config's failure is a line, the others still run
            print("config %s failed: %s" % (cfg["name"], " ".join(str(ex).split())[:200]), flush=True)
            rc = 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
