#!/bin/bash
# h200_validate.sh - validate_skill's own runs on the lent H200 (the `device` tool). Binaries are
# built here and packed by ../shared/tools/device-bundle into devbundle/:
#
#   cmake -S . -B build-rel -DVS_GPU=NVIDIA -DCMAKE_BUILD_TYPE=Release && cmake --build build-rel -j2
#   ../shared/tools/device-bundle -o devbundle build-rel/validate_skill build-rel/tests/gpu/gpu_isolation
#   device run, carry ["devbundle"]:  tools/gpu/h200_validate.sh start iso card bench aa
#   (if it has not finished when the call returns, at once:)  tools/gpu/h200_validate.sh wait
#
# `start STEP...` runs the steps in a background session (setsid: it outlives the call) and waits;
# `wait` waits again. Both stop waiting after WAIT_S seconds (default 560) and copy what is done
# (one tarball and one log per step) to $OUT. Steps (each materializes its own tasks there):
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

collect() {
	local deadline=$(($(date +%s) + WAIT_S))
	while [ ! -e "$WORK/done" ] && [ "$(date +%s)" -lt "$deadline" ]; do
		sleep 5
	done
	cp "$WORK"/*.tgz "$WORK"/*.log "$OUT"/ 2>/dev/null
	cat "$WORK/steps.log"
	for f in "$WORK"/*.log; do
		case $f in */steps.log) continue ;; esac
		echo "---- $(basename "$f") (tail)"
		grep -vE '^\s+(hip|cpu|test)\.[a-z_]+ .*: parity FAILED' "$f" | tail -n 30
	done
	[ -e "$WORK/done" ] && echo "ALL STEPS DONE" || echo "STILL RUNNING: call '$0 wait' again"
}

case ${1:-} in
start)
	shift
	rm -rf "$WORK" && mkdir -p "$WORK"
	nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
		--format=csv,noheader
	$VS --version
	setsid nohup "$0" steps "$@" >"$WORK/steps.log" 2>&1 </dev/null &
	sleep 1
	collect
	;;
steps)
	shift
	run_steps "$@"
	;;
wait)
	collect
	;;
*)
	echo "usage: $0 start STEP... | wait" >&2
	exit 2
	;;
esac
