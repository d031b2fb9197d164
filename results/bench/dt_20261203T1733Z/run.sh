#!/bin/bash
# 2026-12-03 17:45 (issue 17): hip.flash's warp kernel (w4) with both fp8 decodes. gpu_parity.f16 =
# 0a2516a (f16 fragments only), gpu_parity = the change (decoded tile at most 1024 keys of block
# table), gpu_parity.dt = the change built with MLA_FLASH_WARP_DT_KEYS=1000000000 (decoded tile always).
D=.dev/dt
OUT=${OUT:-/tmp/dt}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
ts() { echo "@@ $(date -u +%T) $*"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
for v in "" .dt; do
	ts "parity gpu_parity$v"
	timeout -k 2 100 $D/gpu_parity$v >"$OUT/parity$v.txt" 2>&1
	echo "@@ rc $? PASS $(grep -c '^PASS' "$OUT/parity$v.txt") FAIL $(grep -c '^FAIL' "$OUT/parity$v.txt") SKIP $(grep -c '^SKIP' "$OUT/parity$v.txt")"
	grep -v '^PASS\|^SKIP' "$OUT/parity$v.txt" | head -12
done
W=bn64-bh16-sp0-w4-st2
for round in 1 2; do
	for v in .f16 "" .dt; do
		b=$D/gpu_parity$v
		ts "round $round gpu_parity$v: fp8 shapes, w4, graph replay"
		for c in small-h32-b4-512-fp8 small-h7-b3-sq2-512-fp8 ragged-h128-b32-sq2-4k-fp8 ragged-h16-b64-16k-fp8 tiny-empty-h16-sq2-fp8 tiny-empty-h128-sq2-fp8; do
			timeout -k 2 30 $b --bench --graph --case $c --impl hip.flash --config $W 2>&1 | grep -E "^  hip.flash|^[a-z]"
		done
		ts "round $round gpu_parity$v: bound fp8 shapes, w4"
		for c in memory-bound-fp8 sq2-h16-b128-32k-fp8 compute-bound-fp8; do
			timeout -k 2 40 $b --bench --case $c --impl hip.flash --config $W 2>&1 | grep -E "^  hip.flash|^[a-z]"
		done
	done
done
ts done
