#!/bin/bash
# 2026-12-03 (issue 17): the gate of commit 0a04d58 (hip.flash one-tile kernel), then same-run
# comparisons: gpu_parity.old = the kernels of 366fdc7 (the tree the 08:25 cards ran), gpu_parity =
# 0a04d58, gpu_parity.u21 = 0a04d58 built with -DMLA_F16_S_UNROLL=2 -DMLA_F16_PV_UNROLL=1 (the warp
# kernel's fp8 loops as before 5f368eb). All three binaries carry this gpu_parity.c.
G=.dev/gate
bash tools/gpu/hip_gate.sh $G
exec >>"$OUT/log.txt" 2>&1
ts() { echo "@@ $(date -u +%T) $*"; }
W=bn64-bh16-sp0-w4-st2,bn64-bh64-sp0-w8-st2,bn64-bh16-sp0-w8-st2
for v in old new u21; do
	b=$G/gpu_parity.$v
	[ $v = new ] && b=$G/gpu_parity
	ts "$v: tiny shapes, one-tile config, graph replay"
	timeout -k 2 30 $b --bench --graph --case tiny --impl hip.flash --config bn64-bh1-sp1-w4-st1 2>&1 | grep -E "^  hip|^[a-z]"
	ts "$v: small ragged shapes, graph replay"
	timeout -k 2 40 $b --bench --graph --case small --impl hip.flash --config $W 2>&1 | grep -E "^  hip|^[a-z]"
	ts "$v: memory-bound fp8, config w4"
	timeout -k 2 40 $b --bench --case memory-bound-fp8 --impl hip.flash --config bn64-bh16-sp0-w4-st2 2>&1 | grep -E "^  hip|^[a-z]"
done
ts "comparisons done"
