#!/bin/bash
# h200_validate.sh - validate_skill's own runs on the lent H200 (the `device` tool). Binaries are
# built here and packed by ../shared/tools/device-bundle into devbundle/:
#
#   cmake -S . -B build-rel -DVS_GPU=NVIDIA -DCMAKE_BUILD_TYPE=Release && cmake --build build-rel -j2
#   ../shared/tools/device-bundle -o devbundle build-rel/validate_skill build-rel/tests/gpu/gpu_isolation
#   device run, carry ["devbundle"]:  tools/gpu/h200_validate.sh start iso card bench aa
#   (if it has not finished when the call returns, at once:)  tools/gpu/h200_validate.sh wait
#
# `start STEP...` runs the steps in a background session and waits; `wait` waits again
# (tools/gpu/bg_steps.sh). Both stop waiting after WAIT_S seconds (default 560) and copy what is
# done (one tarball and one log per step) to $OUT. Steps (each materializes its own tasks there):
#   iso    tests/gpu/gpu_isolation: faulting and hanging GPU kernels in worker processes
#   card   --run the sm_90 card's committed plan (plans/mla_decode_hip_port_sm90.plan.json)
#   bench  --run the full tier's benchmark shapes (plans/bench/..., --task perf-)
#   aa     A/A: hip.flash against itself (plans/aa/mla_decode_hip_port_sm90.aa.plan.json, two tasks)
set -u
OUT=${OUT:-/tmp/h200_out}
WORK=/tmp/h200
WAIT_S=${WAIT_S:-560}
VS="devbundle/run validate_skill"
mkdir -p "$OUT" "$WORK"

run_steps() {
	local threads
	threads=$(nproc)
	for step in "$@"; do
		local start
		start=$(date +%s)
		echo "== step $step started $(date -u +%H:%M:%S)"
		case $step in
		iso)
			devbundle/run gpu_isolation >"$WORK/iso.log" 2>&1
			echo "gpu_isolation rc=$?" >>"$WORK/iso.log"
			;;
		card)
			$VS --run plans/mla_decode_hip_port_sm90.plan.json --threads "$threads" >"$WORK/card.log" 2>&1
			tar czf "$WORK/card_eval.tgz" results/mla_decode_hip_port_sm90
			;;
		bench)
			$VS --run plans/bench/mla_decode_hip_port_sm90.full.plan.json --task perf- --results-dir results/bench \
				--threads "$threads" >"$WORK/bench.log" 2>&1
			tar czf "$WORK/bench_eval.tgz" results/bench
			;;
		aa)
			for t in bf16-h128-ragged fp8_e4m3_fnuz-h16-b64-ragged; do
				$VS --run plans/aa/mla_decode_hip_port_sm90.aa.plan.json --task "$t" --results-dir results/aa \
					--threads "$threads"
			done >"$WORK/aa.log" 2>&1
			tar czf "$WORK/aa_eval.tgz" results/aa
			;;
		*)
			echo "unknown step '$step'"
			;;
		esac
		echo "== step $step: $(($(date +%s) - start)) s"
	done
	touch "$WORK/done"
}

# failing configs of the plain kernels are many lines each: the reply shows the rest
bg_tail() {
	grep -vE '^\s+(hip|cpu|test)\.[a-z_]+ .*: parity FAILED' "$1" | tail -n 30
}

source tools/gpu/bg_steps.sh
bg_main "$@"
