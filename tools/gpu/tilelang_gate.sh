#!/bin/bash
# tilelang_gate.sh DIR - on the device, from the repository root: check a changed TileLang baseline
# (kernels/tilelang/mla_decode.py) before card runs in the same call use it. DIR (a carried,
# git-ignored folder) holds mla_decode_old.py (the module before the change), the old binary
# validate_skill.old (built from the tree with the old module, so that records still match a
# committed tree) and TileLang's example_mla_decode_paged.py. Steps:
#   1. tools/gpu/tilelang_check.py: old vs new timings on its PATH_BENCH shapes (fp8 pages of 64,
#      pages of 16 and 1), then parity, the fp8 code-by-code decode checks and capture, until the
#      deadline (about 250 s in all);
#   2. a FAIL or ERROR of a default-path case (not a _chunk / _rows / _nopf variant) copies the old
#      module over kernels/tilelang/mla_decode.py and the old binary over .dev/final/validate_skill,
#      and says REVERTED; else KEPT. Either way the module's sha256 ends the log.
# Writes $OUT/log.txt and $OUT/json. Run as an h200_cards.sh step: .dev/gate/run.sh holding
# `bash tools/gpu/tilelang_gate.sh .dev/gate`, then `h200_cards.sh start dev:gate:270 plans ...`
# (2026-12-01, BENCHMARKS.md).
G=${1:?usage: tilelang_gate.sh DIR}
T0=$(date +%s)
source tools/gpu/device_env.sh
OUT=${OUT:-/tmp/tilelang_gate}
LOG="$OUT/log.txt"
mkdir -p "$OUT"
say() { echo "[$(date -u +%H:%M:%S) +$(($(date +%s) - T0))s] $*" | tee -a "$LOG"; }
F="TileLang:tilelang|^\s*$|read before anything writes|^\s*-->|Initialize the buffer"
say "tilelang_check: bench old vs new, then parity"
timeout -k 3 250 $VS_PYTHON -u tools/gpu/tilelang_check.py --module kernels/tilelang/mla_decode.py \
	--old-module "$G/mla_decode_old.py" --example "$G/example_mla_decode_paged.py" \
	--bench-paths --bench-first --no-headline --jobs 15 \
	--bench-variants "GATHER_PREFETCH=False;FP8_DECODE='chunk'" \
	--compile-budget 190 --deadline 236 --log "$OUT/json" 2>&1 | grep --line-buffered -v -E "$F" >>"$LOG"
say "rc ${PIPESTATUS[0]}"
bad=$(grep -E "^\s+(FAIL|ERROR) " "$LOG" | grep -v -E "^\s+(FAIL|ERROR) \S+_(chunk|rows|nopf) ")
if [ -n "$bad" ]; then
	cp "$G/mla_decode_old.py" kernels/tilelang/mla_decode.py
	cp "$G/validate_skill.old" .dev/final/validate_skill
	say "REVERTED: the card runs use the old module and binary; failures of the default paths:"
	echo "$bad" | cut -c1-600 | tee -a "$LOG"
else
	say "KEPT: no failure of a default-path case"
fi
sha256sum kernels/tilelang/mla_decode.py | tee -a "$LOG"
