#!/bin/bash
set -u
D=.dev/x2
OUT=${OUT:-/tmp/out}
mkdir -p $OUT
exec > >(tee $OUT/log.txt) 2>&1
ts() { echo "@@ $(date -u +%T) $*"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
ts parity
timeout 150 $D/bin/gpu_parity > $OUT/parity.txt 2>&1; echo "rc $? PASS $(grep -c ^PASS $OUT/parity.txt) FAIL $(grep -c ^FAIL $OUT/parity.txt) SKIP $(grep -c ^SKIP $OUT/parity.txt)"
grep -v "^PASS\|^SKIP" $OUT/parity.txt | head -40
ts bench
timeout 120 $D/bin/gpu_parity --bench --impl hip.flash --case bound --config bn64-bh64-sp0-w8-st2,bn64-bh16-sp0-w8-st2,bn64-bh16-sp0-w4-st2 | grep -E "^  hip|^[a-z]"
timeout 120 $D/bin/gpu_parity --bench --impl hip.flash --case fp8 --config bn64-bh16-sp0-w8-st2,bn64-bh16-sp0-w4-st2,bn64-bh64-spbal-w8-st2 | grep -E "^  hip|^[a-z]"
timeout 120 $D/bin/gpu_parity --bench --impl hip.flash --case ragged-h16 --config bn64-bh16-sp0-w8-st2,bn64-bh16-sp0-w4-st2,bn64-bh64-spbal-w8-st2 | grep -E "^  hip|^[a-z]"
ts ncu
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
timeout 150 $NCU --kernel-name regex:mla_flash_warp --launch-count 1 --section SpeedOfLight --section WarpStateStats --section Occupancy --section InstructionStats --section SchedulerStats $D/bin/gpu_parity --bench --samples 1 --impl hip.flash --case memory-bound-fp8 --config bn64-bh16-sp0-w4-st2 > $OUT/ncu.txt 2>&1; echo rc $?
grep -E "Duration|Throughput|Issued|Warp Cycles|Occupancy|Executed Ipc|Eligible|No Eligible|Active Warps" $OUT/ncu.txt | head -40
ts done
