#!/bin/bash
# 2026-12-03 14:2x: parity of the fp8-only partial skip (new2: bf16 one-tile path as in 366fdc7),
# then the tiny shapes by graph replay for old (366fdc7), new1 (0a04d58), new2, twice each.
G=.dev/g2
mkdir -p /tmp/devlibs && tar -xJf $G/devlibs.tar.xz -C /tmp/devlibs
export LD_LIBRARY_PATH=/tmp/devlibs/lib
mkdir -p $OUT
echo "@@ parity new2"; timeout 150 $G/gpu_parity.new2 > $OUT/parity.txt 2>&1; echo "rc $? PASS $(grep -c ^PASS $OUT/parity.txt) FAIL $(grep -c ^FAIL $OUT/parity.txt) SKIP $(grep -c ^SKIP $OUT/parity.txt)"
grep -v '^PASS\|^SKIP' $OUT/parity.txt | head
for r in 1 2; do for v in old new1 new2; do
  echo "@@ round $r $v"
  timeout 30 $G/gpu_parity.$v --bench --graph --case tiny --impl hip.flash --config bn64-bh1-sp1-w4-st1 --samples 51 2>&1 | grep -E "^  hip|^tiny"
done; done
