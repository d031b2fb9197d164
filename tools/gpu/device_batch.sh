#!/bin/bash
# device_batch.sh NAME:SECONDS[:bg]... - one device call for several experiments: runs .dev/NAME/run.sh
# (git-ignored folders, carried) each in its time slot, or in the background beside the next ones
# (:bg); each writes under $OUT/NAME/. Used for the experiment calls of 2026-12-01 (BENCHMARKS.md).
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
bgp=
for spec in "$@"; do
	IFS=: read -r name slot bg <<<"$spec"
	[ -e .dev/$name/READY ] || [ $name = lead ] || { echo "== $name: not ready, skipped"; continue; }
	echo "== $name: start $(date -u +%T), slot ${slot}s $bg"
	mkdir -p $OUT/$name
	if [ -n "$bg" ]; then
		(timeout -k 5 $slot bash .dev/$name/run.sh >/tmp/$name.tail 2>&1; echo "== $name: rc $? end $(date -u +%T)" >>/tmp/$name.tail) &
		bgp="$bgp $name"
		continue
	fi
	timeout -k 5 $slot bash .dev/$name/run.sh >/tmp/$name.tail 2>&1
	echo "== $name: rc $? end $(date -u +%T)"
	tail -c 2800 /tmp/$name.tail
done
wait
for name in $bgp; do echo "== background $name"; tail -c 2800 /tmp/$name.tail; done
