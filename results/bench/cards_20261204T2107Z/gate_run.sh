#!/bin/bash
# 2026-12-04 (issue 17): the gate of ae5414c (the decoded-tile fp8 warp config, kernels tree
# b4b3a997; old = 26c9bb9, kernels tree a9c7da99, the tree both cards' records measured), then
# Nsight Compute on the fp8 kernels at the memory-bound shape (h_q 16, b 128, 32K keys), beside
# bf16: where the fp8 time goes (pipes, shared memory, stalls) for the next fp8 design.
G=.dev/gate
bash tools/gpu/hip_gate.sh $G
exec >>"$OUT/log.txt" 2>&1
ts() { echo "@@ $(date -u +%T) $*"; }
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
S="--section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SchedulerStats --section InstructionStats --section Occupancy"
for spec in memory-bound-fp8:bn64-bh16-sp0-w8-st2:mla_flash_wgmma_t memory-bound:bn64-bh16-sp0-w8-st2:mla_flash_wgmma_t memory-bound-fp8:bn64-bh16-sp0-w4-st2:mla_flash_warp; do
	IFS=: read -r c cfg k <<<"$spec"
	ts "ncu $c $cfg ($k)"
	timeout -k 2 45 $NCU --clock-control none --kernel-name regex:$k --launch-count 1 $S \
		$G/gpu_parity --bench --samples 1 --impl hip.flash --case $c --config $cfg >"$OUT/ncu_${c}_${cfg}.txt" 2>&1
	echo "rc $?"
done
ts done
