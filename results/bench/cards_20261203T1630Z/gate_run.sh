#!/bin/bash
# 2026-12-03 16:30 (issue 17): the gate of 0a2516a (the one-tile fp8 change, kernels tree a9c7da99),
# then a bisect of the fp8 warp kernel's (w4) loss on small shapes (0.0170 -> 0.0222 ms): the same
# gpu_parity.c (0a2516a's) built with kernels/hip/{flash.hip,mma.h,hip_flash.h} of d2e11b0 (before
# the f16-fragment fp8 decode) and of 60df866 (that decode), beside 0a2516a's.
G=.dev/gate
bash tools/gpu/hip_gate.sh $G
exec >>"$OUT/log.txt" 2>&1
ts() { echo "@@ $(date -u +%T) $*"; }
W=bn64-bh16-sp0-w4-st2,bn64-bh64-sp0-w8-st2,bn64-bh16-sp0-w8-st2
for round in 1 2; do
for v in d2e11b0 60df866 head; do
	b=$G/gpu_parity.$v
	[ $v = head ] && b=$G/gpu_parity
	[ -x $b ] || { ts "$v: no binary"; continue; }
	ts "round $round $v: small ragged shapes, graph replay"
	timeout -k 2 40 $b --bench --graph --case small --impl hip.flash --config $W 2>&1 | grep -E "^  hip|^[a-z]"
	ts "round $round $v: memory-bound fp8, config w4"
	timeout -k 2 40 $b --bench --case memory-bound-fp8 --impl hip.flash --config bn64-bh16-sp0-w4-st2 2>&1 | grep -E "^  hip|^[a-z]"
done
done
ts "comparisons done"
