#!/bin/bash
# f8 call 1 (issue 17): fp8 decode variants of hip.flash's transposed wgmma kernel (bh16) and the
# sd kernel (bh64): parity, bench old vs new in one call, ncu stall reasons of base and rns, SASS.
# Binaries: build.sh SRC NAME FLAGS ... with the variants of variants.patch (branch f8):
#   base ""  r "-DMLA_WT_ROWMAP"  rn "+ -DMLA_FP8_NANONCE"  rns "+ -DMLA_FP8_SIGNPRMT"
#   rnsw6 "rns + -DMLA_WT_W0=6"  rnsw6t14 "rnsw6 + -DMLA_WT_T1=14"  nodec "-DMLA_DIAG_NODECODE"
#   noload "-DMLA_DIAG_NOLOAD"  rnsnoload "rns + -DMLA_DIAG_NOLOAD"
OUT=${OUT:-/tmp/f8out}; mkdir -p "$OUT"
mkdir -p /tmp/devlibs && tar -xJf .dev/f8/devlibs.tar.xz -C /tmp/devlibs
export LD_LIBRARY_PATH=/tmp/devlibs/lib
B=.dev/f8/bin
exec > >(tee "$OUT/log.txt") 2>&1
ts() { echo "@@ $(date -u +%T) $*"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu --format=csv,noheader
PC=bn64-bh16-sp0-w8-st2,bn64-bh16-sp1-w8-st2,bn64-bh16-sp4-w8-st2,bn64-bh32-sp0-w8-st2,bn64-bh64-sp0-w8-st2
for v in base r rn rns rnsw6 rnsw6t14; do
	ts "parity $v"
	timeout -k 2 60 $B/gpu_parity_$v --impl hip.flash --config $PC >"$OUT/parity_$v.txt" 2>&1
	echo "@@ rc $? PASS $(grep -c '^PASS' "$OUT/parity_$v.txt") FAIL $(grep -c '^FAIL' "$OUT/parity_$v.txt")"
	grep -v '^PASS' "$OUT/parity_$v.txt" | head -8
done
BC=bn64-bh16-sp0-w8-st2,bn64-bh64-sp0-w8-st2
for v in base r rn rns rnsw6 rnsw6t14 nodec noload rnsnoload base; do
	ts "bench $v"
	timeout -k 2 40 $B/gpu_parity_$v --bench --impl hip.flash --case memory-bound --config $BC 2>&1 | grep -E "^  hip|^memory"
done
for v in base rns base; do
	ts "bench compute-bound $v"
	timeout -k 2 40 $B/gpu_parity_$v --bench --impl hip.flash --case compute-bound --config bn64-bh64-sp0-w8-st2,bn64-bh16-sp0-w8-st2 2>&1 | grep -E "^  hip|^compute"
done
ts "tiny, every config"
timeout -k 2 40 $B/gpu_parity_base --bench --case tiny 2>&1 | grep -E "^  hip|^tiny"
NCU=$(command -v ncu || ls /opt/nvidia/nsight-compute/*/ncu /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
for v in base rns; do
	ts "ncu $v"
	timeout -k 2 90 "$NCU" --clock-control none --kernel-name regex:mla_flash_wgmma_t --launch-skip 2 --launch-count 1 \
		--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section InstructionStats \
		--section ComputeWorkloadAnalysis --section SourceCounters --print-details all -o "/tmp/ncu_$v" -f \
		$B/gpu_parity_$v --bench --case memory-bound-fp8 --impl hip.flash --config bn64-bh16-sp0-w8-st2 --samples 1 >"$OUT/ncu_$v.txt" 2>&1
	"$NCU" -i "/tmp/ncu_$v.ncu-rep" --page details --print-details all >"$OUT/ncu_${v}_details.txt" 2>&1
	"$NCU" -i "/tmp/ncu_$v.ncu-rep" --page source --csv --print-source sass >"$OUT/ncu_${v}_source.csv" 2>&1
done
ts done
