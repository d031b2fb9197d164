#!/bin/bash
# 2026-12-03 17:50 (issue 17): the decoded-tile rule refined (more than one tile, at most
# MLA_FLASH_WARP_DT_KEYS keys) and the span between 512 and 4K keys. gpu_parity.f16 = built with
# MLA_FLASH_WARP_DT_KEYS=0 (f16 fragments only), gpu_parity.dt = 1000000000 (decoded tile above one
# tile); both with the bench shapes of 1K-4K keys.
D=.dev/dt2
OUT=${OUT:-/tmp/dt2}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
ts() { echo "@@ $(date -u +%T) $*"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
for v in .f16 .dt; do
	ts "parity gpu_parity$v"
	timeout -k 2 100 $D/gpu_parity$v >"$OUT/parity$v.txt" 2>&1
	echo "@@ rc $? PASS $(grep -c '^PASS' "$OUT/parity$v.txt") FAIL $(grep -c '^FAIL' "$OUT/parity$v.txt") SKIP $(grep -c '^SKIP' "$OUT/parity$v.txt")"
	grep -v '^PASS\|^SKIP' "$OUT/parity$v.txt" | head -12
done
for round in 1 2; do
	for v in .f16 .dt; do
		ts "round $round gpu_parity$v: fp8 shapes, w4, graph replay"
		for c in small-h32-b4-512-fp8 small-h7-b3-sq2-512-fp8 mid-h32-b4-1k-fp8 mid-h32-b4-2k-fp8 mid-h32-b4-4k-fp8 mid-h64-b4-sq2-2k-fp8 tiny-h128-len1-fp8 tiny-empty-h16-sq2-fp8 tiny-empty-h128-sq2-fp8; do
			timeout -k 2 30 $D/gpu_parity$v --bench --graph --case $c --impl hip.flash --config bn64-bh16-sp0-w4-st2 2>&1 | grep -E "^  hip.flash|^[a-z]"
		done
	done
done
ts done
