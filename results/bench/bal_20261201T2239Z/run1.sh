#!/bin/bash
# experiment 2026-12-01 23:xx: balanced splits (a3bacef) - parity of every config, then bench
set -u
mkdir -p /tmp/devlibs && tar -xJf .dev/x/devlibs.tar.xz -C /tmp/devlibs
export LD_LIBRARY_PATH=/tmp/devlibs/lib
OUT=${OUT:-/tmp/x}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
ts() { echo "@@ $(date -u +%T) $*"; }
X=.dev/x
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu --format=csv,noheader
ts "parity (new): every case, implementation and config"
timeout -k 2 200 $X/gpu_parity >"$OUT/parity.txt" 2>&1
echo "@@ rc $? PASS $(grep -c '^PASS' "$OUT/parity.txt") FAIL $(grep -c '^FAIL' "$OUT/parity.txt")"
grep -v '^PASS' "$OUT/parity.txt" | head -40
grep 'spbal' "$OUT/parity.txt" | head -8
ts "bench (new): ragged shapes, every hip.flash config"
timeout -k 2 150 $X/gpu_parity --bench --impl hip.flash --case ragged 2>&1 | grep -E "^  hip|^[a-z]"
ts "bench (new): tiny shapes"
timeout -k 2 40 $X/gpu_parity --bench --impl hip.flash --case tiny 2>&1 | grep -E "^  hip|^[a-z]"
C=bn64-bh64-sp0-w8-st2,bn64-bh16-sp0-w8-st2,bn64-bh16-sp4-w8-st2,bn64-bh32-sp0-w8-st2
ts "bench (new): bound shapes, uniform and balanced"
timeout -k 2 100 $X/gpu_parity --bench --impl hip.flash --case bound --config $C,bn64-bh64-spbal-w8-st2,bn64-bh16-spbal-w8-st2 2>&1 | grep -E "^  hip|^[a-z]"
ts "bench (old a5df224): bound shapes, uniform"
timeout -k 2 80 $X/gpu_parity.old --bench --impl hip.flash --case bound --config $C 2>&1 | grep -E "^  hip|^[a-z]"
ts "bench (new): h128 shapes"
timeout -k 2 60 $X/gpu_parity --bench --impl hip.flash --case h128-b --config bn64-bh64-sp0-w8-st2,bn64-bh64-spbal-w8-st2 2>&1 | grep -E "^  hip|^[a-z]"
ts done
