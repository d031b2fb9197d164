#!/bin/bash
mkdir -p /tmp/devlibs && [ -d /tmp/devlibs/lib ] || tar -xJf .dev/nc/devlibs.tar.xz -C /tmp/devlibs
export LD_LIBRARY_PATH=/tmp/devlibs/lib
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu)
for c in tiny-h128-len1 tiny-empty-h128-sq2; do
  echo "== $c"
  timeout 100 $NCU -k regex:mla_ --metrics gpu__time_duration.sum,dram__bytes_read.sum \
    .dev/nc/gpu_parity --bench --graph --case $c --config bn64-bh16-sp0-w8-st2,bn64-bh16-sp0-w4-st2 --samples 3 2>&1 \
    | awk '/void .*mla_/{split($0,a,"(");n=a[1]" "$0; sub(/.*> \(/,"(",n)} /void .*mla_/{k=$2" "$3" "$4} /gpu__time/{print k, "us", $3} /dram__bytes/{print k, "dram", $2, $3}' | sort | uniq -c
done
