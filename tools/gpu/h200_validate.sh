#!/bin/bash
# h200_validate.sh STEP... - validate_skill's own runs on the lent H200 (the `device` tool), with
# validate_skill packed beforehand by ../shared/tools/device-bundle into devbundle/:
#
#   cmake -S . -B build-gpu -DVS_GPU=NVIDIA -DCMAKE_BUILD_TYPE=Release && cmake --build build-gpu -j2
#   ../shared/tools/device-bundle -o devbundle build-gpu/validate_skill
#   device run: carry ["devbundle"], command: tools/gpu/h200_validate.sh card bench aa
#
# Steps (each materializes its tasks there: the GPU tiers are too large to carry):
#   card   --run the sm_90 card's committed plan (plans/mla_decode_hip_port_sm90.plan.json)
#   bench  --run the full tier's benchmark shapes (plans/bench/..., --task perf-)
#   aa     A/A: hip.flash against itself on a few tasks (plans/aa/...)
# Each step's eval dirs come back as one tarball under $OUT.
set -u
OUT=${OUT:-/tmp/h200_out}
mkdir -p "$OUT"
VS="devbundle/run validate_skill"
THREADS=$(nproc)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
	--format=csv,noheader
$VS --version
for step in "$@"; do
	start=$(date +%s)
	case $step in
	card)
		$VS --run plans/mla_decode_hip_port_sm90.plan.json --threads "$THREADS" 2>&1 | tee "$OUT/card.log" |
			grep -vE '^\s+(hip|cpu)\.'
		tar czf "$OUT/card_eval.tgz" results/mla_decode_hip_port_sm90
		;;
	bench)
		$VS --run plans/bench/mla_decode_hip_port_sm90.full.plan.json --task perf- --results-dir results/bench \
			--threads "$THREADS" 2>&1 | tee "$OUT/bench.log" | tail -12
		tar czf "$OUT/bench_eval.tgz" results/bench
		;;
	aa)
		$VS --run plans/aa/mla_decode_hip_port_sm90.aa.plan.json --task bf16-h128-ragged --results-dir results/aa \
			--threads "$THREADS" 2>&1 | tee "$OUT/aa.log" | tail -6
		$VS --run plans/aa/mla_decode_hip_port_sm90.aa.plan.json --task fp8_e4m3_fnuz-h16-b64 --results-dir results/aa \
			--threads "$THREADS" 2>&1 | tee -a "$OUT/aa.log" | tail -6
		tar czf "$OUT/aa_eval.tgz" results/aa
		;;
	*)
		echo "unknown step '$step'" >&2
		;;
	esac
	echo "step $step: $(( $(date +%s) - start )) s"
done
