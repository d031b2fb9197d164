#!/bin/bash
# experiment 2: the balanced schedule's overhead weight PART_OV (MLA_PART_OV 1, 2, 4, 8)
set -u
mkdir -p /tmp/devlibs && tar -xJf .dev/y/devlibs.tar.xz -C /tmp/devlibs
export LD_LIBRARY_PATH=/tmp/devlibs/lib
OUT=${OUT:-/tmp/y}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
ts() { echo "@@ $(date -u +%T) $*"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu --format=csv,noheader
B=bn64-bh64-spbal-w8-st2,bn64-bh16-spbal-w8-st2
for v in 1 4 8; do
	ts "parity ov$v: ragged and edge cases, balanced configs"
	timeout -k 2 60 .dev/y/gpu_parity_ov$v --config $B >"$OUT/parity_ov$v.txt" 2>&1
	echo "@@ rc $? PASS $(grep -c '^PASS' "$OUT/parity_ov$v.txt") FAIL $(grep -c '^FAIL' "$OUT/parity_ov$v.txt")"
done
for v in 2 1 4 8 2; do
	ts "bench ov$v"
	timeout -k 2 60 .dev/y/gpu_parity_ov$v --bench --impl hip.flash --case ragged --config $B,bn64-bh64-sp0-w8-st2 2>&1 | grep -E "^  hip.flash|^[a-z]"
done
ts done
