#!/bin/bash
# f8gate (stop 22, issue 17): before the card steps, the parity of the new hip.flash (gpu_parity of
# the tree the card binary was built from: every case, implementation and config, the decoder
# probes). A failure puts the binary of branch s22-old (the same tree without the fp8 pass) and its
# resources.json in .dev/final, so the records match a committed tree; then a short bench.
G=.dev/f8gate
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
ts() { echo "@@ $(date -u +%T) $*"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu --format=csv,noheader
ts "parity: every case, implementation and config"
timeout -k 2 150 $G/gpu_parity >"$OUT/parity.txt" 2>&1
rc=$?
echo "@@ rc $rc PASS $(grep -c '^PASS' "$OUT/parity.txt") FAIL $(grep -c '^FAIL' "$OUT/parity.txt")"
grep -v '^PASS' "$OUT/parity.txt" | head -20
if [ $rc -ne 0 ] || grep -q '^FAIL' "$OUT/parity.txt"; then
	cp $G/validate_skill.old .dev/final/validate_skill
	cp $G/resources.old.json .dev/final/sm_90/resources.json
	ts "REVERTED: the card steps run the binary of s22-old"
else
	ts "KEPT: the card steps run the binary of the fp8 pass"
fi
.dev/final/validate_skill --version
ts "bench"
timeout -k 2 60 $G/gpu_parity --bench --impl hip.flash --case bound \
	--config bn64-bh64-sp0-w8-st2,bn64-bh16-sp0-w8-st2,bn64-bh32-sp0-w8-st2 2>&1 | grep -E "^  hip|^[a-z]"
ts done
