#!/bin/bash
# flashmla_current_device.sh DIR - one call on the lent H200 (the device tool) for the flashmla.decode
# plugin built from FlashMLA's current sources (issue 42, item 1), from DIR (carried, git-ignored):
#   DIR/repo             kernels/mla_decode.h, kernels/flashmla/, tools/gpu/build_flashmla.sh and
#                        tools/gpu/flashmla_own_bench.py of this branch
#   DIR/flashmla.tar.xz  FlashMLA 9241ae3: csrc (without the cutlass submodule), flash_mla/, tests/,
#                        setup.py, LICENSE (git archive)
#   DIR/cutlass.tar.xz   CUTLASS 147f567 (FlashMLA's submodule pin): include/, tools/util/include
#   DIR/libflashmla.so   the plugin built here (build_flashmla.sh), bound by DIR/plan.json's sha256
#   DIR/plan.json        --emit-plan skills/mla_decode_hip_port_sm90.md --tier full --baseline
#                        hip.flash --candidate-lib DIR/libflashmla.so (emitted here)
#   DIR/flashmla_smoke   tools/gpu/flashmla_smoke.c; DIR/bundle: device-bundle of validate_skill
# Steps, logs to $OUT (BENCHMARKS.md, 2026-12-05: 404 s):
#   1. in the background: unpack; rebuild the plugin there (compared with the carried one), then
#      FlashMLA's own torch extension (FLASH_MLA_DISABLE_SM100=1, setup.py build_ext --inplace);
#      meanwhile flashmla_smoke DIR/libflashmla.so: CPU-reference parity (empty sequences, causal
#      s_q 2..4, splits), graph replay bit-identical. Nothing is timed while a compiler runs;
#   2. flashmla_smoke --bench: the four headline shapes, the plugin alone;
#   3. the harness: --run DIR/plan.json --task bf16-perf- (hip.flash vs flashmla.decode, graph
#      replay, L2 flushed, parity against the oracle);
#   4. tools/gpu/flashmla_own_bench.py (FlashMLA's own test, same shapes, its extension);
#   5. the harness on bf16-edge-lengths and bf16-h128-b32-sq2 (edge cases, the card's s_q 2 task).
# flashmla_current_device.sh DIR kernels - a second call, where the harness and FlashMLA's own test
# disagree: DIR/libflashmla_9edee0c.so (the old build, build_flashmla.sh on FlashMLA 9edee0c and
# CUTLASS e94e888) beside the current one, flashmla_smoke --bench for new, old, new (same run), then
# Nsight Compute's gpu__time_duration of every kernel of both (flashmla_smoke --bench-only 3: one
# warm-up and 3 replays per headline shape, caches flushed before each kernel, clocks left alone).
set -u
D=${1:-.dev/flashmla}
OUT=${OUT:-/tmp/fmla_out}
S=/tmp/fsrc
if [ "${2:-}" = kernels ]; then
	mkdir -p "$OUT"
	nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader
	i=0
	for so in libflashmla libflashmla_9edee0c libflashmla; do
		i=$((i + 1))
		"$D/flashmla_smoke" "$D/$so.so" --bench >"$OUT/bench$i-$so.log" 2>&1
		echo "$so: rc=$?"; grep -E '^(plugin|FAIL|BENCH|[0-9]+ of)' "$OUT/bench$i-$so.log"
	done
	NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
	for so in libflashmla libflashmla_9edee0c; do
		timeout 200 "$NCU" --clock-control none --metrics gpu__time_duration.sum --csv \
			"$D/flashmla_smoke" "$D/$so.so" --bench-only 3 >"$OUT/ncu-$so.csv" 2>"$OUT/ncu-$so.err"
		echo "ncu $so: rc=$? $(grep -c gpu__time_duration "$OUT/ncu-$so.csv") kernels"
	done
	exit 0
fi
mkdir -p "$OUT" $S/flashmla $S/cutlass $S/out
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader
t0=$(date +%s) here=$(pwd)
el() { echo "[$(($(date +%s) - t0)) s]"; }
(
	set -e
	tar -xJf "$D/flashmla.tar.xz" -C $S/flashmla
	tar -xJf "$D/cutlass.tar.xz" -C $S/cutlass
	time NVCC_THREADS=4 "$D/repo/tools/gpu/build_flashmla.sh" $S/flashmla $S/cutlass $S/out/libflashmla.so
	echo "plugin rebuild done $(date -u +%T)"
	rmdir $S/flashmla/csrc/cutlass 2>/dev/null || true
	ln -sfn $S/cutlass $S/flashmla/csrc/cutlass
	cd $S/flashmla
	sed -i 's/^subprocess.run(\["git", "submodule".*$/pass/' setup.py  # no git, no network there
	export CPLUS_INCLUDE_PATH=/usr/local/cuda/include/cccl${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}
	time FLASH_MLA_DISABLE_SM100=1 FLASH_MLA_DISABLE_FP16=1 NVCC_THREADS=4 MAX_JOBS=12 \
		/opt/torch/.venv/bin/python setup.py build_ext --inplace
	echo "extension build done $(date -u +%T)"
) >"$OUT/build.log" 2>&1 &
bpid=$!

# parity while the builds run (the timings wait for them: no compiler beside a timed sample)
"$D/flashmla_smoke" "$D/libflashmla.so" >"$OUT/smoke.log" 2>&1
echo "$(el) flashmla_smoke rc=$?"; grep -E '^(plugin|FAIL|[0-9]+ of)| want ' "$OUT/smoke.log"
wait $bpid; echo "$(el) builds rc=$?"
grep -E 'Used [0-9]+ registers|wrote|error:|real|done' "$OUT/build.log" | head -20
sha256sum "$D/libflashmla.so" $S/out/libflashmla.so 2>&1

"$D/flashmla_smoke" "$D/libflashmla.so" --bench >"$OUT/smoke_bench.log" 2>&1
echo "$(el) flashmla_smoke --bench rc=$?"; grep -E '^(FAIL|BENCH|[0-9]+ of)' "$OUT/smoke_bench.log"

hv() { # --task T, timeout S
	timeout "$2" "$D/bundle/run" validate_skill --run "$D/plan.json" --task "$1" --results-dir $S/results \
		--threads 16 >>"$OUT/harness.log" 2>&1
	echo "--task $1 rc=$?" >>"$OUT/harness.log"
}
hv bf16-perf- 270
echo "$(el) harness headline done"; grep -E 'rc=|^\[|overall|reference' "$OUT/harness.log" | tail -12

if ls $S/flashmla/flash_mla/cuda*.so >/dev/null 2>&1; then
	(cd $S/flashmla && PYTHONUNBUFFERED=1 timeout 120 /opt/torch/.venv/bin/python \
		"$here/$D/repo/tools/gpu/flashmla_own_bench.py" $S/flashmla) >"$OUT/own.log" 2>&1
	echo "$(el) own bench rc=$?"; grep -E 'OWN|FlashMLA|Error|error' "$OUT/own.log" | head
fi
hv bf16-edge-lengths 60
hv bf16-h128-b32-sq2 60
echo "$(el) harness done"; grep -E 'rc=|^\[|overall|reference' "$OUT/harness.log" | tail -14
(cd $S && tar czf "$OUT/harness_eval.tgz" results) 2>/dev/null
