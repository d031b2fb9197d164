#!/bin/bash
# device_run.sh [parity] [bench] [ncu] - one call on the lent GPU machine (the device tool), with
# gpu_parity packed beforehand by ../shared/tools/device-bundle into devbundle/:
#
#   cmake -S . -B build-gpu -DVS_GPU=NVIDIA -DCMAKE_BUILD_TYPE=Release && cmake --build build-gpu -j2
#   /work/shared/tools/device-bundle -o devbundle build-gpu/tests/gpu/gpu_parity
#   device run: carry ["devbundle"], command: tools/gpu/device_run.sh parity bench ncu
#
# Logs go to $OUT (parity.log, bench.log, ncu_*.txt); the reply shows failures and the bench table.
set -u
OUT=${OUT:-/tmp/device_run}
mkdir -p "$OUT"
run() { devbundle/run gpu_parity "$@"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv,noheader
for step in "$@"; do
	case $step in
	parity)
		run >"$OUT/parity.log" 2>&1
		echo "parity rc=$? ($(grep -c '^PASS' "$OUT/parity.log") PASS)"
		grep -v '^PASS' "$OUT/parity.log" | head -40
		;;
	bench)
		run --bench 2>&1 | tee "$OUT/bench.log" | grep -v '^device'
		;;
	ncu)
		NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
		[ -n "$NCU" ] || { echo "ncu not found"; continue; }
		SECTIONS=(--section SpeedOfLight --section WarpStateStats --section SchedulerStats
			  --section MemoryWorkloadAnalysis --section LaunchStats --section Occupancy)
		"$NCU" --clock-control none --kernel-name regex:mla_flash_wgmma --launch-skip 2 --launch-count 1 \
			"${SECTIONS[@]}" devbundle/bin/gpu_parity --bench --case compute-bound --impl hip.flash \
			--config bn64-bh64-sp1-w8-st2 --samples 1 >"$OUT/ncu_wgmma.txt" 2>&1
		"$NCU" --clock-control none --kernel-name regex:mla_flash_wgmma --launch-skip 2 --launch-count 1 \
			--section SourceCounters --section WarpStateStats --page source --print-source sass --csv \
			devbundle/bin/gpu_parity --bench --case compute-bound --impl hip.flash \
			--config bn64-bh64-sp1-w8-st2 --samples 1 >"$OUT/ncu_wgmma_src.csv" 2>&1
		"$NCU" --clock-control none --kernel-name regex:mla_flash_wgmma --launch-skip 2 --launch-count 1 \
			"${SECTIONS[@]}" devbundle/bin/gpu_parity --bench --case memory-bound --impl hip.flash \
			--config bn64-bh64-sp1-w8-st2 --samples 1 >"$OUT/ncu_wgmma_mem.txt" 2>&1
		grep -E "Duration|Compute \(SM\) Throughput|DRAM Throughput|L2 Cache Throughput|Issued Warp" \
			"$OUT/ncu_wgmma.txt" "$OUT/ncu_wgmma_mem.txt" | sed 's/  */ /g; s/^[^:]*ncu_//' | head -20
		;;
	esac
done
