#!/bin/bash
# flashmla_device.sh DIR - one call on the lent H200 (the device tool) for the flashmla.decode
# plugin of FlashMLA 9edee0c (the old build; the current one: flashmla_current_device.sh), from DIR (carried; DIR/repo holds kernels/mla_decode.h, kernels/flashmla/ and
# tools/gpu/build_flashmla.sh of this branch; DIR/bundle is device-bundle's pack of validate_skill):
#   1. rebuilds the plugin there from the carried sources (FlashMLA 9edee0c csrc, CUTLASS e94e888
#      include/ and tools/util/include, as tar.xz) with build_flashmla.sh, in the background;
#   2. DIR/flashmla_smoke DIR/libflashmla.so --bench: CPU-reference parity, graph-replay determinism,
#      the headline timings;
#   3. the harness: --emit-plan skills/mla_decode_hip_port_sm90.md --candidate-lib DIR/libflashmla.so
#      --tier smoke and --run of that plan (hip.baseline vs flashmla.decode); then the standard
#      tier's bf16 page-64 tasks, hip.flash vs flashmla.decode;
#   4. waits for the rebuild, compares it with the carried plugin and runs flashmla_smoke with it.
# Logs go to $OUT. Packing DIR here (about 22 MB; FlashMLA and CUTLASS stay out of the repository):
#   cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release && cmake --build build-gpu -j2
#   ../shared/tools/device-bundle -o DIR/bundle build-gpu/validate_skill
#   tools/gpu/build_flashmla.sh FLASHMLA CUTLASS DIR/libflashmla.so
#   cc -std=c11 -O2 -I kernels -I /usr/local/cuda/include tools/gpu/flashmla_smoke.c \
#      -L /usr/local/cuda/lib64 -lcudart_static -ldl -lpthread -lrt -lm -o DIR/flashmla_smoke
#   git --git-dir=FlashMLA.git archive 9edee0c csrc/kernels csrc/flash_api.cpp LICENSE |
#      tar -x -C T1 && tar -cJf DIR/flashmla-9edee0c-csrc.tar.xz -C T1 .
#   git --git-dir=cutlass.git archive e94e888 include tools/util/include |
#      tar -x -C T2 && tar -cJf DIR/cutlass-e94e888-include.tar.xz -C T2 .
#   mkdir -p DIR/repo && cp --parents kernels/mla_decode.h kernels/flashmla/flashmla_9edee0c_plugin.cu \
#      tools/gpu/build_flashmla.sh DIR/repo/
# then, with the device tool from the checkout holding DIR: carry [DIR], command:
#   bash DIR/flashmla_device.sh DIR   (copy this script into DIR first)
set -u
D=${1:-.dev/fmla}
OUT=${OUT:-/tmp/fmla_out}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader
(
	set -e
	mkdir -p /tmp/fsrc/flashmla /tmp/fsrc/cutlass /tmp/fsrc/out
	tar -xJf "$D/flashmla-9edee0c-csrc.tar.xz" -C /tmp/fsrc/flashmla
	tar -xJf "$D/cutlass-e94e888-include.tar.xz" -C /tmp/fsrc/cutlass
	time NVCC_THREADS=4 "$D/repo/tools/gpu/build_flashmla.sh" /tmp/fsrc/flashmla /tmp/fsrc/cutlass \
		/tmp/fsrc/out/libflashmla.so
) >"$OUT/build.log" 2>&1 &
bpid=$!

"$D/flashmla_smoke" "$D/libflashmla.so" --bench >"$OUT/smoke.log" 2>&1
echo "flashmla_smoke rc=$?"; grep -E '^(FAIL|BENCH|[0-9]+ of)| want ' "$OUT/smoke.log"

vs() { "$D/bundle/run" validate_skill "$@"; }
card=skills/mla_decode_hip_port_sm90.md plan=plans/mla_decode_hip_port_sm90.plan.json
{
	vs --emit-plan $card --candidate-lib "$D/libflashmla.so" --tier smoke
	vs --run $plan; echo "smoke --run rc=$?"
	r=$(ls -td results/mla_decode_hip_port_sm90/*/ | head -1); cat "$r/run.log"
} >"$OUT/harness_smoke.log" 2>&1
grep -E 'rc=|PASS|FAIL|pass|fail' "$OUT/harness_smoke.log" | head -30
# The standard tier's bf16 page-64 tasks, as a full A/B against hip.flash (--task filters by
# substring; --impl would run parity of one implementation only and mark every task "parity FAIL").
{
	vs --emit-plan $card --baseline hip.flash --candidate-lib "$D/libflashmla.so" --tier standard
	for t in bf16-edge-lengths bf16-page-offset bf16-h128 bf16-h24; do
		vs --run $plan --task $t; echo "standard --task $t rc=$?"
		r=$(ls -td results/mla_decode_hip_port_sm90/*/ | head -1); grep -v '^ *$' "$r/run.log"
	done
} >"$OUT/harness_standard.log" 2>&1
grep -E 'rc=|FAILED|^bf16' "$OUT/harness_standard.log" | head -40

wait $bpid; echo "rebuild rc=$?"; grep -E 'Used [0-9]+ registers|wrote|error|real' "$OUT/build.log" | head -12
sha256sum "$D/libflashmla.so" /tmp/fsrc/out/libflashmla.so 2>&1
if [ -f /tmp/fsrc/out/libflashmla.so ]; then
	"$D/flashmla_smoke" /tmp/fsrc/out/libflashmla.so >"$OUT/smoke_rebuilt.log" 2>&1
	echo "flashmla_smoke (rebuilt plugin) rc=$?"; tail -1 "$OUT/smoke_rebuilt.log"
fi
