#!/bin/bash
# hip_gate.sh DIR - on the device, from the repository root: check a changed hip.flash / hip.baseline
# (kernels/hip) before card runs in the same call use it. DIR (a carried, git-ignored folder) holds
# gpu_parity (built here from the tree the card binary .dev/final/validate_skill was built from),
# validate_skill.old and resources.old.json (build-rel/validate_skill and build-rel/sm_90/resources.json
# of a committed tree without the kernel change, so that the records still match a committed tree; or,
# when the old binary could not run the card steps at all, e.g. plans it cannot read, a script that
# exits non-zero, so that a failed gate stops them).
# Steps:
#   1. gpu_parity: every case, implementation and config, and the fp8 decoder probes;
#   2. a failure (non-zero exit or a FAIL line) copies the old binary over .dev/final/validate_skill
#      and the old resources.json over .dev/final/sm_90/resources.json, and says REVERTED; else KEPT;
#   3. a short bench of the four bound shapes (bf16 and fp8, h_q 16 and 128) with four configs, of the
#      w4 warp config against its decoded-tile twin (the small, mid and ragged shapes), and of the
#      tiny shapes with every config, timed by launch and by graph replay.
# Writes $OUT/log.txt and $OUT/parity.txt. Run as an h200_cards.sh step: .dev/NAME/run.sh holding
# `bash tools/gpu/hip_gate.sh .dev/NAME`, then `h200_cards.sh start dev:NAME:200 plans ...`
# (2026-12-01, the fp8 pass: BENCHMARKS.md).
G=${1:?usage: hip_gate.sh DIR}
OUT=${OUT:-/tmp/hip_gate}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
ts() { echo "@@ $(date -u +%T) $*"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu --format=csv,noheader
ts "parity: every case, implementation and config"
timeout -k 2 150 "$G/gpu_parity" >"$OUT/parity.txt" 2>&1
rc=$?
echo "@@ rc $rc PASS $(grep -c '^PASS' "$OUT/parity.txt") FAIL $(grep -c '^FAIL' "$OUT/parity.txt")" \
	"SKIP $(grep -c '^SKIP' "$OUT/parity.txt") (configs that decline a case)"
grep -v '^PASS\|^SKIP' "$OUT/parity.txt" | head -20
if [ $rc -ne 0 ] || grep -q '^FAIL' "$OUT/parity.txt"; then
	cp "$G/validate_skill.old" .dev/final/validate_skill
	cp "$G/resources.old.json" .dev/final/sm_90/resources.json
	ts "REVERTED: the card steps run the old binary"
else
	ts "KEPT: the card steps run the binary of the change"
fi
.dev/final/validate_skill --version
ts "bench"
timeout -k 2 60 "$G/gpu_parity" --bench --impl hip.flash --case bound \
	--config bn64-bh64-sp0-w8-st2,bn64-bh16-sp0-w8-st2,bn64-bh32-sp0-w8-st2,bn64-bh16-sp0-w4-st2 2>&1 | grep -E "^  hip|^[a-z]"
ts "bench: the w4 warp config and its decoded-tile twin on the small, mid and ragged shapes (graph replay)"
for c in small mid ragged; do
	timeout -k 2 40 "$G/gpu_parity" --bench --graph --impl hip.flash --case $c \
		--config bn64-bh16-sp0-w4-st2,bn64-bh16-sp0-w4-st2-dt 2>&1 | grep -E "^  hip|^[a-z]"
done
ts "bench: tiny shapes, the launch timed, then the replay of its graph (as the harness times it)"
timeout -k 2 30 "$G/gpu_parity" --bench --case tiny 2>&1 | grep -E "^  hip|^[a-z]"
timeout -k 2 30 "$G/gpu_parity" --bench --graph --case tiny 2>&1 | grep -E "^  hip|^[a-z]"
ts "done"
