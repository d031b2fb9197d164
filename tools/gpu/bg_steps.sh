#!/bin/bash
# bg_steps.sh - sourced by the device scripts whose steps outlive one call of the `device` tool
# (h200_cards.sh, h200_validate.sh): `start STEP...` runs the steps in a background session (setsid:
# it outlives the call) and waits; `wait` waits again. Both stop waiting after WAIT_S seconds and
# copy the logs and tarballs of $WORK to $OUT as they come, so a call stopped at its time limit
# still brings back every finished step.
#
# The sourcing script sets OUT, WORK and WAIT_S, defines run_steps STEP... (it ends by touching
# $WORK/done) and may define bg_snapshot (before each copy: e.g. a tarball of the eval dirs so far)
# and bg_tail LOG (what of each log the reply shows; default its last 25 lines); then it calls
# bg_main "$@".

bg_copy() {
	declare -F bg_snapshot >/dev/null && bg_snapshot
	cp -u "$WORK"/*.tgz "$WORK"/*.log "$OUT"/ 2>/dev/null
}

bg_collect() {
	local deadline=$(($(date +%s) + WAIT_S)) f
	while [ ! -e "$WORK/done" ] && [ "$(date +%s)" -lt "$deadline" ]; do
		sleep 5
		cp -u "$WORK"/*.tgz "$WORK"/*.log "$OUT"/ 2>/dev/null
	done
	bg_copy
	cat "$WORK/steps.log"
	for f in "$WORK"/*.log; do
		case $f in */steps.log) continue ;; esac
		echo "---- $(basename "$f") (tail)"
		if declare -F bg_tail >/dev/null; then bg_tail "$f"; else tail -n 25 "$f"; fi
	done
	[ -e "$WORK/done" ] && echo "ALL STEPS DONE" || echo "STILL RUNNING: call '$0 wait' again"
}

bg_main() {
	case ${1:-} in
	start)
		shift
		rm -rf "$WORK" && mkdir -p "$WORK" "$OUT"
		nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw \
			--format=csv,noheader
		$VS --version
		setsid nohup "$0" steps "$@" >"$WORK/steps.log" 2>&1 </dev/null &
		sleep 1
		bg_collect
		;;
	steps)
		shift
		run_steps "$@"
		;;
	wait)
		mkdir -p "$OUT"
		# a fresh machine (the lent one was given back after 30 s idle) has no run to wait for:
		# say so at once instead of waiting WAIT_S seconds of device time for nothing (2026-12-03,
		# 540 s lost so)
		if [ ! -e "$WORK/steps.log" ]; then
			echo "$0 wait: no background run on this machine ($WORK/steps.log missing): the machine" \
				"was given back since 'start' and the run died with it; start again" >&2
			exit 3
		fi
		bg_collect
		;;
	*)
		echo "usage: $0 start STEP... | wait" >&2
		exit 2
		;;
	esac
}
