#!/bin/bash
# f8 call 2 (issue 17): on top of rns (row map, NaN check once per step, sign-permute decoder): the
# split W0 of the transposed kernel's decode between the warpgroups, no DEEP alternation, 3 atoms
# per barrier in the sd kernel; NaN detection's cost (nonan, wrong on 0x80). Parity, then bench.
OUT=${OUT:-/tmp/f8out}; mkdir -p "$OUT"
mkdir -p /tmp/devlibs && tar -xJf .dev/f8/devlibs.tar.xz -C /tmp/devlibs
export LD_LIBRARY_PATH=/tmp/devlibs/lib
B=.dev/f8/bin
exec > >(tee "$OUT/log.txt") 2>&1
ts() { echo "@@ $(date -u +%T) $*"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu --format=csv,noheader
PC=bn64-bh16-sp0-w8-st2,bn64-bh16-sp1-w8-st2,bn64-bh16-sp4-w8-st2,bn64-bh32-sp0-w8-st2,bn64-bh64-sp0-w8-st2,bn64-bh64-sp1-w8-st2
for v in w8 w10 w12 nodeep ap3; do
	ts "parity $v"
	timeout -k 2 60 $B/gpu_parity_$v --impl hip.flash --config $PC >"$OUT/p_$v.txt" 2>&1
	echo "@@ rc $? PASS $(grep -c '^PASS' "$OUT/p_$v.txt") FAIL $(grep -c '^FAIL' "$OUT/p_$v.txt")"
	grep '^FAIL' "$OUT/p_$v.txt" | head -4
done
for v in rns base w8 w10 w12 nodeep nonan ap3 rns; do
	ts "bench $v"
	timeout -k 2 40 $B/gpu_parity_$v --bench --impl hip.flash --case memory-bound-fp8 --config bn64-bh16-sp0-w8-st2,bn64-bh64-sp0-w8-st2 2>&1 | grep -E "^  hip.flash"
done
for v in rns ap3 base; do
	ts "bench compute-bound-fp8, sq2 fp8 $v"
	timeout -k 2 40 $B/gpu_parity_$v --bench --impl hip.flash --case fp8 --config bn64-bh64-sp0-w8-st2,bn64-bh16-sp0-w8-st2,bn64-bh32-sp0-w8-st2 2>&1 | grep -E "^  hip.flash|^[a-z]"
done
ts done
