#!/bin/bash
set -u
D=.dev/x
export LD_LIBRARY_PATH=$D/lib
OUT=${OUT:-/tmp/out}
mkdir -p $OUT
exec > >(tee $OUT/log.txt) 2>&1
ts() { echo "@@ $(date -u +%T) $*"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
ts parity main
timeout 150 $D/bin/gpu_parity > $OUT/parity.txt 2>&1; echo "rc $? PASS $(grep -c ^PASS $OUT/parity.txt) FAIL $(grep -c ^FAIL $OUT/parity.txt)"
grep -v "^PASS\|^SKIP" $OUT/parity.txt | head -40
grep "w4" $OUT/parity.txt | head -5
ts parity w8
timeout 100 $D/bin/gpu_parity_w8 --impl hip.flash > $OUT/parity_w8.txt 2>&1; echo "rc $? PASS $(grep -c ^PASS $OUT/parity_w8.txt) FAIL $(grep -c ^FAIL $OUT/parity_w8.txt)"
grep -v "^PASS\|^SKIP" $OUT/parity_w8.txt | head -20
ts bench main
timeout 120 $D/bin/gpu_parity --bench --impl hip.flash --case bound --config bn64-bh64-sp0-w8-st2,bn64-bh16-sp0-w8-st2,bn64-bh16-sp0-w4-st2
timeout 120 $D/bin/gpu_parity --bench --impl hip.flash --case fp8 --config bn64-bh16-sp0-w8-st2,bn64-bh16-sp0-w4-st2,bn64-bh64-sp0-w8-st2,bn64-bh64-spbal-w8-st2
ts bench w8
timeout 120 $D/bin/gpu_parity_w8 --bench --impl hip.flash --case fp8 --config bn128-bh16-sp0-w8-st2,bn64-bh16-sp0-w4-st2
ts ncu
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 150 $NCU --kernel-name regex:mla_flash_warp --launch-count 1 --section SpeedOfLight --section WarpStateStats --section Occupancy --section ComputeWorkloadAnalysis --section InstructionStats $D/bin/gpu_parity --bench --samples 1 --impl hip.flash --case memory-bound-fp8 --config bn64-bh16-sp0-w4-st2 > $OUT/ncu.txt 2>&1; echo rc $?
grep -E "Duration|Throughput|Issued|Warp Cycles|Registers|Occupancy|Executed Ipc|Block Limit" $OUT/ncu.txt | head -40
ts done
