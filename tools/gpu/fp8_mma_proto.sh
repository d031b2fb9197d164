#!/bin/bash
# fp8_mma_proto.sh - on the H200 (device tool), from the repository root: issue 17's go / no-go for a
# decode whose tensor cores read the fp8 KV codes themselves, in one call of a few minutes:
#   1. tools/gpu/fp8_acc_probe.cu: how many bits wgmma e4m3 (and bf16, mma.sync) keeps when it adds
#      products to its accumulator (the F of tools/fp8_mma_precision.py);
#   2. tools/gpu/fp8_mma_proto.cu check: against float64 under the harness's parity rule (and NaN
#      rule), three accumulation variants, three data sets (N(0,1)/10 with the forced extremes and
#      visible 0x80 codes, a per-tensor-scaled one that stays on the fast path, the softmax set whose
#      every tile takes the +-240 fix-up);
#   3. its bench at h_q 16, b 128, 32K keys (the issue's target shape), every variant, on the
#      N(0,1)/10 set (fast path) and on the softmax set (fix-up path on every tile);
#   4. where .dev/gate/gpu_parity and .dev/shared are carried (h200_cards.sh and hip_gate.sh say how
#      they are made): hip.flash, bf16 and fp8, on the same shape in the same call, the time the
#      target is measured against (fp8 at most 0.6x the bf16 time);
#   5. where .dev/f8/gpu_parity is carried (gpu_parity of the branch issue17-f8mma, the prototype in
#      hip.flash as config bn64-bh16-sp0-w8-st2-f8; not on main: untested), with .dev/shared:
#      that config's parity on every gpu_parity case ($OUT/f8_parity.txt), then the bound shapes
#      with it and its neighbours from the same binary;
#   6. NCU=1: an ncu profile of each prototype variant beside it (speed of light, warp states).
# Device call: carry .dev/gate, .dev/shared and .dev/f8 (results/ removed for the call: the 64 MiB
# limit), command `bash tools/gpu/fp8_mma_proto.sh`; $OUT/log.txt comes back.
OUT=${OUT:-/tmp/fp8_mma_proto}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
ts() { echo "@@ $(date -u +%T) $*"; }
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
B=/tmp/fp8_mma_build
mkdir -p $B
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu --format=csv,noheader
ts "build"
for t in fp8_acc_probe fp8_mma_proto; do
	"$NVCC" -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -Xptxas -v tools/gpu/$t.cu -o $B/$t 2>&1 |
		grep -E "registers|spill|error|C75" || true
	[ -x $B/$t ] || { ts "build of $t failed"; exit 1; }
done
ts "probe: accumulation width (one: dropped from s = F + 1)"
timeout -k 2 60 $B/fp8_acc_probe
ts "prototype: parity"
timeout -k 2 240 $B/fp8_mma_proto check
echo "@@ check rc $?"
ts "prototype: bench"
timeout -k 2 120 $B/fp8_mma_proto bench 128 32768
if [ -x .dev/gate/gpu_parity ] && [ -f .dev/shared/devlibs.tar.xz ]; then
	. tools/gpu/device_env.sh 2>/dev/null
	ts "hip.flash on the same shape (gpu_parity --bench, same call)"
	timeout -k 2 120 .dev/gate/gpu_parity --bench --impl hip.flash --case memory-bound \
		--config bn64-bh16-sp0-w8-st2,bn64-bh32-sp0-w8-st2,bn64-bh16-sp0-w4-st2,bn64-bh16-sp0-w4-st2-dt 2>&1 |
		grep -E "^  hip|^[a-z]"
fi
if [ -x .dev/f8/gpu_parity ] && [ -f .dev/shared/devlibs.tar.xz ]; then
	. tools/gpu/device_env.sh 2>/dev/null
	F8=bn64-bh16-sp0-w8-st2-f8
	ts "hip.flash $F8 (branch issue17-f8mma): parity on every case"
	timeout -k 2 200 .dev/f8/gpu_parity --impl hip.flash --config $F8 >"$OUT/f8_parity.txt" 2>&1
	echo "@@ rc $? PASS $(grep -c '^PASS' "$OUT/f8_parity.txt") FAIL $(grep -c '^FAIL' "$OUT/f8_parity.txt")" \
		"SKIP $(grep -c '^SKIP' "$OUT/f8_parity.txt")"
	grep -v '^PASS\|^SKIP' "$OUT/f8_parity.txt" | head -30
	ts "hip.flash $F8 and its neighbours on the bound shapes (same binary, same call)"
	timeout -k 2 150 .dev/f8/gpu_parity --bench --impl hip.flash --case bound \
		--config $F8,bn64-bh16-sp0-w8-st2,bn64-bh16-sp0-w4-st2,bn64-bh16-sp0-w4-st2-dt 2>&1 | grep -E "^  hip|^[a-z]"
fi
if [ "${NCU:-0}" = 1 ] && command -v ncu >/dev/null; then
	ts "ncu"
	timeout -k 2 240 ncu --section SpeedOfLight --section WarpStateStats --section ComputeWorkloadAnalysis \
		-k regex:proto_fp8mma -c 3 $B/fp8_mma_proto bench 128 32768 2>&1 | grep -vE "^==PROF==" | head -150
fi
ts "done"
