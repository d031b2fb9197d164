#!/bin/sh
# Regenerate tests/resources/evidence/: a small repository (the CPU card as a draft, its smoke plan cut
# to two small tasks and a short protocol, and the eval dir of one CPU run of that plan, run id
# "run1"). The catalogue (tests/check_catalogue.c) and fuzz_result use it as known-good evidence;
# rerun this when the plan, manifest or result format changes. Needs python3 (to cut the plan).
# Usage, from the repository root with a clean kernels/ tree: tests/fuzz/make_evidence.sh [BUILD_DIR]
set -eu
build=${1:-build}
tool=$(cd "$build" && pwd)/validate_skill
out=tests/resources/evidence
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$scratch/skills"
cp skills/mla_decode_cpu_splitkv.md "$scratch/skills/"
(cd "$scratch" && "$tool" --emit-plan skills/mla_decode_cpu_splitkv.md >/dev/null)
python3 - "$scratch/plans/mla_decode_cpu_splitkv.plan.json" <<'PY'
import json, sys
path = sys.argv[1]
p = json.load(open(path))
p["tasks"] = [t for t in p["tasks"] if t["spec"]["name"] in ("bf16-page1-h32", "fp8_e4m3_fnuz-page1-h32")]
p["protocol"].update(min_pairs=4, max_pairs=8, max_seconds=2, bootstrap_resamples=200)
open(path, "w").write(json.dumps(p, indent="\t") + "\n")
PY
# The fixture is a validated run: exit 1 (a failed verdict: a short protocol on a busy machine) is retried.
tries=0
until (cd "$scratch" && "$tool" --run plans/mla_decode_cpu_splitkv.plan.json --run-id run1 --threads 2 >/dev/null); do
	tries=$((tries + 1))
	[ "$tries" -lt 5 ] || { echo "no validated run in 5 tries" >&2; exit 1; }
	rm -rf "$scratch/results"
done
# A build from a work tree with local changes marks its runs dirty; the fixture stands for a clean one.
sed -i 's/"kernels_dirty":\ttrue/"kernels_dirty":\tfalse/' "$scratch/results/mla_decode_cpu_splitkv/run1/result.json"
# The evidence must record (checked on a copy of the card, which stays a draft).
(cd "$scratch" && cp skills/mla_decode_cpu_splitkv.md draft.md &&
	"$tool" --record skills/mla_decode_cpu_splitkv.md --eval-dir results/mla_decode_cpu_splitkv/run1 >/dev/null &&
	mv draft.md skills/mla_decode_cpu_splitkv.md)
rm -rf "$out"
mkdir -p "$out"
cp -r "$scratch/skills" "$scratch/plans" "$scratch/results" "$out/"
echo "wrote $out"
