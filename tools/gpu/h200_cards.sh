#!/bin/bash
# h200_cards.sh - the sm_90 cards' runs on the lent H200 (the `device` tool), with the Python
# kernels (Triton, TileLang, torch) and FlashMLA as references. What the device needs travels in two
# carried folders (git-ignored), prepared here:
#
#   cmake -S . -B build-rel -DVS_GPU=NVIDIA -DCMAKE_BUILD_TYPE=Release && cmake --build build-rel -j2
#   mkdir -p .dev/final/sm_90 && cp build-rel/validate_skill .dev/final/ && strip .dev/final/validate_skill
#   cp build-rel/sm_90/resources.json .dev/final/sm_90/   (ptxas figures, shown by --emit-plan)
#   .dev/shared/devlibs.tar.xz: the lib/ folder of `../shared/tools/device-bundle -o B build-rel/validate_skill`
#   .dev/shared/libflashmla.so: tools/gpu/build_flashmla.sh FLASHMLA CUTLASS .dev/shared/libflashmla.so
#     (since 2026-12-05, issue 42: FlashMLA main 9241ae3 and the CUTLASS it pins, 147f567: the current
#     dense decode, kernels/flashmla/flashmla_plugin.cu; the runs up to 2026-12-04 used 9edee0c and
#     CUTLASS e94e888, which the script still builds, from flashmla_9edee0c_plugin.cu)
#     (the plans and records bind its sha256. Until 2026-12-04 a rebuild from the same sources was not
#     byte-identical (f84d34a4..., ee819fcc..., 7fc7dc2a...: nvcc's temporary file names in the symbol
#     table); build_flashmla.sh now strips the plugin, and two rebuilds give the same file. The records
#     of 2026-12-04 (21:11 and 21:21) bind the unstripped 7fc7dc2a..., which no rebuild gives: re-run
#     them with a stripped build, or keep the file a record used)
#   .dev/shared/tilelang-0.1.15-site.tar.xz: tools/gpu/tilelang_site.sh .dev/shared/tilelang-0.1.15-site.tar.xz
#     (tilelang 0.1.15 and the wheels it needs, unzipped, trimmed and stripped)
#   tools/gpu/device_env.sh: unpacks both tarballs on the device, exports LD_LIBRARY_PATH, VS_PYTHON,
#     PYTHONPATH and FLASHMLA_SO
#   device run, carry [".dev/shared", ".dev/final"]:  tools/gpu/h200_cards.sh start plans warm hip triton headline
#   (then here: untar evidence.tgz, move plans/ and results/ into the tree, --record)
#   (the call carries the working tree too, 64 MiB in all: when the committed eval dirs push it over,
#   `rm -rf results` here for the calls, as nothing on the device reads them without PIN_CONFIGS,
#   and `git checkout -- results` after; 2026-12-03)
#   (if it has not finished when the call returns, at once:)  tools/gpu/h200_cards.sh wait
#   ("at once": the lent machine is given back after 30 s idle, and the background run dies with
#   it; on 2026-12-02 (05:45) a wait called a minute late found a fresh machine and lost the last
#   step's eval dir)
#
# `start STEP...` runs the steps in a background session and waits; `wait` waits again
# (tools/gpu/bg_steps.sh); both stop waiting after WAIT_S seconds (default 540) and copy the logs
# and one tarball of plans and eval dirs to $OUT. Steps:
#   plans     --emit-plan of the cards: the sm_90 ones with FlashMLA, torch and the other port as
#             references and the e2e stage (the DeepSeek-V3 step, kernels/torch/deepseek_v3_step.py),
#             the gfx942 ones (plans only: no MI300X), the headline plan (tier full). With
#             PIN_CONFIGS=1 the two sm_90 card plans pin each task's configs (--configs-from) from
#             the run their card records (validation.artifact): measured with no tuning pass
#   warm      compile the TileLang kernels of the sm_90 plan and of the headline's tasks in parallel
#             (TileLang's disk cache)
#   hip       --run the HIP port's sm_90 card (baseline tilelang.mla_decode)
#   triton    --run the field card's sm_90 twin (tilelang.mla_decode against triton.mla_decode)
#   headline  the four bf16 headline shapes of tier full, every implementation in one run
#   tiny      the tiny tasks of tier full (one key; empty sequences), every implementation in one run
#   aa        A/A of triton.mla_decode against itself on one task
#   sparse_smoke, ports_parity, dsa_plans, dsa, dsa_v4: the sparse form (issue 36, 39; comments below)
#   dsa_edge, dsa_parity, dsa_ncu, dsa_v4_head: per-implementation parity of the sparse plans
#             (after dsa_plans), Nsight Compute on the headline sparse task, the V4 headline timed
#   dsa_ab_edge  the V4 edge task's A/B three times (after dsa_plans)
#   dsa_v4_parity  FlashMLA's and torch's parity alone on every V4 task (after dsa_plans)
#   dsa_cards the two sm_90 DSA cards on their claimed workload (issue 39, item 3)
#   wl_warm   the workload plans of both dense sm_90 cards (expects.workloads), TileLang warmed
#   wl:CARD   that card on each workload it claims, from wl_warm's plans (issue 37)
#   sweep     issue 42: triton.mla_decode against torch.mla_decode on tier full's 4 x 4 sweep- grid,
#             FlashMLA as a reference
#   triton_check  issue 42: triton.mla_decode's configs alone (tools/gpu/py_kernels_check.py --impl
#             triton: parity on every edge case, capture, do_bench on the headline shapes), then
#             Nsight Compute over every config on the two dense headline shapes
#             (tools/gpu/triton_ncu.py; here: tools/gpu/ncu_table.py ncu_*.txt)
#   config    the config card skills/mla_decode_triton_config_sm90.md (issue 41, item 5: fp8,
#             triton.mla_decode@bn64-bh16-sp0-w4-st2 -> @bn64-bh16-sp0-w8-st2): --emit-plan (tier
#             standard; the configs' registers/spills/shared memory compiled for sm_90 by the
#             device's Triton) and --run, then its workload deepseek_v3_tp8_chat the same way
#   dev:NAME[:SECONDS]  an experiment in the same call: .dev/NAME/run.sh (a carried, git-ignored
#             folder) with OUT=$WORK/NAME, under a timeout (default 300 s); its files come back as
#             NAME.tgz, its output as NAME.log. Before the card steps, it may change the tree they
#             run (tools/gpu/tilelang_gate.sh puts the old TileLang module back if the new fails;
#             tools/gpu/hip_gate.sh the old validate_skill if the changed HIP kernels fail parity)
set -u
OUT=${OUT:-/tmp/h200_out}
WORK=/tmp/h200
WAIT_S=${WAIT_S:-540}
VS=.dev/final/validate_skill
source tools/gpu/device_env.sh
FMLA=.dev/shared/libflashmla.so
FMLA_SPARSE=.dev/shared/libflashmla_sparse.so
# Plans, task dirs and eval dirs go under .dev/out (git-ignored), never plans/ or results/: a later
# device call (the `wait` below) first copies this machine's working tree over the device's, which
# put back plans/ as committed and deleted an eval dir under results/ that a run of the first call
# had finished (2026-12-01, 12:52). Ignored paths survive that copy. Bring them back from the
# tarball and move them into plans/ and results/ here.
#
# The steps run in a copy of the tree, $SNAP (with VS_REPO_ROOT pointing there), not in the tree
# itself: a later call copies this machine's working tree over the device's again, and on
# 2026-12-02 (03:16) that copy removed kernels/python/mla_decode.py under a running worker, which
# failed a task of the HIP card's run and so the run.
D=.dev/out
P=$D/plans
SNAP=$WORK/tree
mkdir -p "$OUT" "$WORK"
RUN="--tasks-dir $D/tasks --results-dir $D/results"

# --configs-from the eval dir card $1 records, when PIN_CONFIGS=1 (nothing otherwise)
pins() {
	local a
	[ "${PIN_CONFIGS:-0}" = 1 ] || return 0
	a=$(sed -n 's/^  artifact: "\(.*\)"$/\1/p' "$1")
	[ -n "$a" ] && echo "--configs-from $a"
}

# the workloads card $1 claims (expects.workloads: [a, b])
wl_claims() {
	local ids
	ids=$(sed -n 's/^  workloads: \[\(.*\)\]$/\1/p' "$1" | tr -d ' ' | tr , ' ')
	[ -n "$ids" ] || echo "$1: no one-line 'workloads: [...]' under expects: nothing to run" >&2
	echo "$ids"
}

# Nsight Compute over one validate_skill --run (the remaining arguments): the first $2 launches of
# the kernels whose demangled name (template arguments included) matches the regex $1, the same
# sections for every profile. ncu's lock directory is made first: the worker's sandbox
# (harness/sandbox.c) grants rights on the entries of /tmp that exist when it starts, since a closed
# path (the results) lies under /tmp here, so ncu in the worker could not create /tmp/nvidia
# (2026-12-05, 18:33: "Failed to open/create lock directory /tmp/nvidia/nsight_compute", every
# implementation). The callers put their task and eval dirs outside /tmp as well, so that no closed
# path lies under /tmp and the sandbox grants /tmp whole to ncu's injected library.
ncu_run() {
	local regex=$1 count=$2
	shift 2
	mkdir -p /tmp/nvidia/nsight_compute && chmod 1777 /tmp/nvidia /tmp/nvidia/nsight_compute
	timeout 180 "$(command -v ncu || echo /usr/local/cuda/bin/ncu)" --target-processes all --graph-profiling node \
		--kernel-name-base demangled -k "regex:$regex" --launch-count "$count" --section SpeedOfLight \
		--section LaunchStats --section Occupancy --section WarpStateStats --section MemoryWorkloadAnalysis \
		--section ComputeWorkloadAnalysis --section SchedulerStats "$@"
}

run_steps() {
	local threads
	threads=$(nproc)
	rm -rf "$SNAP" && mkdir -p "$SNAP"
	tar -C . --exclude=./.git --exclude=./$D -cf - . | tar -C "$SNAP" -xf - || { echo "copying the tree failed"; exit 1; }
	cd "$SNAP" || exit 1
	export VS_REPO_ROOT=$SNAP FLASHMLA_SO=$SNAP/.dev/shared/libflashmla.so
	# the Triton that compiles each config's figures at --emit-plan is the device's (torch's venv):
	# without it the DSA cards' plans of 2026-12-05 18:20 said "figures not known"
	export VS_TRITON_PYTHON=$VS_PYTHON
	mkdir -p "$P/aa" "$P/headline" "$P/dsa" "$D/results" "$D/tasks"
	for step in "$@"; do
		local start
		start=$(date +%s)
		echo "== step $step started $(date -u +%H:%M:%S)"
		case $step in
		plans)
			{
				$VS --emit-plan skills/mla_decode_hip_port_sm90.md --tier standard --e2e --reference $FMLA \
					--reference torch.mla_decode --reference triton.mla_decode \
					$(pins skills/mla_decode_hip_port_sm90.md) --out $P/mla_decode_hip_port_sm90.plan.json
				$VS --emit-plan skills/mla_tilelang_to_triton_sm90.md --tier standard --e2e --reference $FMLA \
					--reference torch.mla_decode --reference hip.flash \
					$(pins skills/mla_tilelang_to_triton_sm90.md) --out $P/mla_tilelang_to_triton_sm90.plan.json
				$VS --emit-plan skills/mla_decode_hip_port_sm90.md --tier full --reference $FMLA \
					--reference torch.mla_decode --reference triton.mla_decode --reference hip.baseline \
					--out $P/headline/mla_decode_hip_port_sm90.full.plan.json
				$VS --emit-plan skills/mla_tilelang_to_triton_sm90.md --tier smoke --baseline triton.mla_decode \
					--candidate triton.mla_decode --out $P/aa/mla_tilelang_to_triton_sm90.aa.plan.json
				$VS --emit-plan skills/mla_tilelang_to_triton.md --tier standard --out $P/mla_tilelang_to_triton.plan.json
				$VS --emit-plan skills/mla_decode_hip_port.md --tier standard --out $P/mla_decode_hip_port.plan.json
				$VS --emit-plan skills/dsa_decode_hip_port.md --tier standard --out $P/dsa_decode_hip_port.plan.json
				$VS --emit-plan skills/dsa_decode_triton_port.md --tier standard --out $P/dsa_decode_triton_port.plan.json
			} >"$WORK/plans.log" 2>&1
			;;
		warm)
			# TileLang compiles one kernel at a time in the harness's worker (15-30 s each, about
			# 32 for the standard tier): compile them in parallel first, into TileLang's disk cache
			# (the headline's four shapes too: the full tier's bf16-perf- tasks)
			timeout 240 $VS_PYTHON tools/gpu/tilelang_check.py --module kernels/tilelang/mla_decode.py \
				--warm-plan $P/mla_decode_hip_port_sm90.plan.json \
				--warm-plan $P/headline/mla_decode_hip_port_sm90.full.plan.json=bf16-perf- \
				--warm-plan $P/headline/mla_decode_hip_port_sm90.full.plan.json=tiny- \
				--jobs 16 --compile-budget 220 2>&1 | grep -v ':INFO\] ' | tail -n 60
			echo "warm: rc ${PIPESTATUS[0]}"
			# (into steps.log, without TileLang's INFO lines: the device tool brings back at most 8
			# files of $OUT, and evidence.tgz, the dev step's tarball and log, steps.log and the
			# plans, hip, triton and tiny logs are 8; on 2026-12-03 warm.log was the ninth, left out)
			;;
		hip)
			$VS --run $P/mla_decode_hip_port_sm90.plan.json $RUN --threads "$threads" >"$WORK/hip.log" 2>&1
			;;
		triton)
			$VS --run $P/mla_tilelang_to_triton_sm90.plan.json $RUN --threads "$threads" >"$WORK/triton.log" 2>&1
			;;
		headline)
			$VS --run $P/headline/mla_decode_hip_port_sm90.full.plan.json --task bf16-perf- \
				--tasks-dir $D/tasks --results-dir $D/results/headline --threads "$threads" >"$WORK/headline.log" 2>&1
			;;
		tiny)
			$VS --run $P/headline/mla_decode_hip_port_sm90.full.plan.json --task tiny- \
				--tasks-dir $D/tasks --results-dir $D/results/tiny --threads "$threads" >"$WORK/tiny.log" 2>&1
			;;
		aa)
			$VS --run $P/aa/mla_tilelang_to_triton_sm90.aa.plan.json --task bf16-ragged-h16-ps64 \
				--tasks-dir $D/tasks --results-dir $D/results/aa --threads "$threads" >"$WORK/aa.log" 2>&1
			;;
		config)
			# both sides forced, no tuning pass: two configs of one kernel (docs/DESIGN.md "Forced
			# configs"); the eval dirs go to $D/results/mla_decode_triton_config_sm90/
			local cfg=skills/mla_decode_triton_config_sm90.md wl=deepseek_v3_tp8_chat
			{
				$VS --emit-plan $cfg --tier standard \
					--out $P/mla_decode_triton_config_sm90.plan.json &&
					$VS --run $P/mla_decode_triton_config_sm90.plan.json $RUN --threads "$threads"
				echo "config tier: rc $?"
				$VS --emit-plan $cfg --workload $wl \
					--out $P/mla_decode_triton_config_sm90.wl-$wl.plan.json &&
					$VS --run $P/mla_decode_triton_config_sm90.wl-$wl.plan.json $RUN --threads "$threads"
				echo "config $wl: rc $?"
			} >"$WORK/config.log" 2>&1
			;;
		dsa_cards)
			# the two sm_90 DSA cards (issue 39, item 3) on the deployment they claim
			# (expects.workloads: deepseek_v32_dp_chat): FlashMLA's sparse decode the baseline, the
			# other port as a reference (both ports beside FlashMLA per task); not torch, whose
			# inductor compile per shape was most of the dsa step's 728 s on 2026-12-05 and which
			# that step measured on these shapes; eval dirs under $D/results/<card>/, for --record here
			local wl=deepseek_v32_dp_chat
			{
				for c in dsa_decode_hip_port_sm90:triton.dsa_decode dsa_decode_triton_port_sm90:hip.flash; do
					local card=${c%%:*} other=${c##*:}
					$VS --emit-plan skills/$card.md --workload $wl --baseline-lib "$FMLA_SPARSE" \
						--reference $other --out $P/dsa/$card.wl-$wl.plan.json &&
						$VS --run $P/dsa/$card.wl-$wl.plan.json $RUN --threads "$threads"
					echo "dsa_cards $card: rc $?"
				done
			} >"$WORK/dsa_cards.log" 2>&1
			;;
		dsa_ab_edge)
			# the V4 edge task's A/B (FlashMLA against torch, both ports as references: capture gate
			# and timed checks included) three times, each eval dir kept: the parity failure of
			# 2026-12-05 13:00 (H200) did not show in each implementation's parity alone (15:09, H100)
			for k in 1 2 3; do
				$VS --run $P/dsa/dsa_v4.full.plan.json --task v4-edge --tasks-dir $D/tasks \
					--results-dir $D/results/dsa_ab_edge/$k --threads "$threads"
				echo "dsa_ab_edge $k: rc $?"
			done >"$WORK/dsa_ab_edge.log" 2>&1
			;;
		wl_warm)
			# the workload plans of both dense sm_90 cards (issue 37, item 6: one per claimed workload,
			# FlashMLA the reference, the e2e stage planned), then their TileLang kernels compiled in
			# parallel into TileLang's disk cache, as `warm` does for the tier plans
			{
				local card wl warms=""
				for card in mla_tilelang_to_triton_sm90 mla_decode_hip_port_sm90; do
					for wl in $(wl_claims skills/$card.md); do
						$VS --emit-plan skills/$card.md --workload $wl --e2e --reference $FMLA \
							--out $P/$card.wl-$wl.plan.json && warms="$warms --warm-plan $P/$card.wl-$wl.plan.json"
					done
				done
				[ -n "$warms" ] && timeout 240 $VS_PYTHON tools/gpu/tilelang_check.py \
					--module kernels/tilelang/mla_decode.py $warms --jobs 16 --compile-budget 220 2>&1 |
					grep -v ':INFO\] ' | tail -n 20
			} >"$WORK/wl_warm.log" 2>&1
			;;
		wl:*)
			# one dense sm_90 card on each workload its expects.workloads claims (issue 37, item 6),
			# from wl_warm's plans; eval dirs under $D/results/<card>/, for --record here. Not torch
			# nor the other port as references: their figures on these shapes come from the tier runs,
			# and a workload is 32 tasks (16 per KV dtype) against the tier's 19
			local card=${step#wl:} wl
			for wl in $(wl_claims skills/$card.md); do
				$VS --run $P/$card.wl-$wl.plan.json $RUN --threads "$threads"
				echo "wl $card $wl: rc $?"
			done >"$WORK/wl-$card.log" 2>&1
			;;
		sweep)
			# issue 42, item 3: the Triton port against torch on the 4 x 4 grid of tier full
			# (sweep-: batch 8, 32, 64, 128 x context 1K, 4K, 8K, 32K; h_q 128, bf16, page 64) in one
			# run, FlashMLA as a reference (not hip.flash: its tuning pass over every config per task
			# would add minutes to a step that torch's compile per shape already makes long)
			{
				$VS --emit-plan skills/mla_tilelang_to_triton_sm90.md --tier full --baseline torch.mla_decode \
					--candidate triton.mla_decode --reference $FMLA \
					--out $P/headline/sweep.plan.json &&
					$VS --run $P/headline/sweep.plan.json --task sweep- --tasks-dir $D/tasks \
						--results-dir $D/results/sweep --threads "$threads"
				echo "sweep: rc $?"
			} >"$WORK/sweep.log" 2>&1
			;;
		triton_check)
			# issue 42: the Triton port's configs alone, then ncu on each (prepare's launch and
			# launch()'s; ncu_table.py reads the second). Not through the harness: its worker's
			# sandbox and the tuning pass would decide which launches ncu sees (2026-12-06)
			local NCU_OUT=$WORK/triton_check shape
			mkdir -p "$NCU_OUT"
			{
				$VS_PYTHON tools/gpu/py_kernels_check.py --impl triton --budget 330 --workers 14 \
					--log "$NCU_OUT/py_kernels_check.log"
				echo "py_kernels_check: rc $?"
				for shape in h128-b128-8k h16-b128-32k; do
					ncu_run _mla_decode_kernel 99 $VS_PYTHON tools/gpu/triton_ncu.py $shape >"$NCU_OUT/ncu_$shape.txt" 2>&1
					echo "ncu $shape: rc $?"
				done
			} >"$WORK/triton_check.log" 2>&1
			tar czf "$WORK/triton_check.tgz.$$" -C "$WORK" triton_check && mv "$WORK/triton_check.tgz.$$" "$WORK/triton_check.tgz"
			;;
		sparse_smoke)
			# flashmla.sparse_decode alone against a double CPU reference (both formats, splits,
			# graph replay bit-identical): the plugin's first check, before the harness trusts it
			.dev/final/flashmla_sparse_smoke "$FMLA_SPARSE" >"$WORK/sparse_smoke.log" 2>&1
			echo "sparse_smoke: rc $?"
			;;
		ports_parity)
			# hip.flash's sparse configs alone against the oracle (tests/gpu/gpu_parity --case
			# sparse: every format, the extra cache, topk_length, sinks, a b128 h128 topk 2048 case),
			# each relaunched bit-identical; .dev/final/gpu_parity is the Release build's, stripped
			timeout 300 .dev/final/gpu_parity --case sparse >"$WORK/ports_parity.log" 2>&1
			echo "ports_parity: rc $?"
			;;
		dsa_plans)
			# the sparse form (issue 36), tier full: FlashMLA's sparse decode as the baseline,
			# torch.mla_decode as the candidate (an A/B of its own, never recorded into a card),
			# hip.flash and triton.dsa_decode as references where the tree has them (DSA=ports):
			# the V3.2 cache (fp8_ds_mla, topk 2048) through the HIP DSA card's grid, the V4 cache
			# (fp8_model1, topk 128 + 1024 extra) through the V4 card's
			local refs=""
			[ "${DSA:-}" = ports ] && refs="--reference hip.flash --reference triton.dsa_decode"
			{
				$VS --emit-plan skills/dsa_decode_hip_port_sm90.md --tier full --baseline-lib "$FMLA_SPARSE" \
					--candidate torch.mla_decode $refs --out $P/dsa/dsa_v32.full.plan.json
				$VS --emit-plan skills/flash_mla_tilelang_to_triton_sm90.md --tier full \
					--baseline-lib "$FMLA_SPARSE" --candidate torch.mla_decode $refs \
					--out $P/dsa/dsa_v4.full.plan.json
			} >"$WORK/dsa_plans.log" 2>&1
			echo "dsa_plans: rc $?"
			;;
		dsa_edge)
			# the V4 edge task (sinks, an empty main cache, an empty extra one, a 4099-key row) whose
			# A/B failed parity on 2026-12-05 (13:00) with the side unknown: each implementation's
			# parity alone (--impl: no timing), run.log in its eval dir
			for impl in flashmla.sparse_decode torch.mla_decode hip.flash triton.dsa_decode; do
				$VS --run $P/dsa/dsa_v4.full.plan.json --task v4-edge --impl $impl --tasks-dir $D/tasks \
					--results-dir $D/results/dsa_edge/$impl --threads "$threads"
				echo "dsa_edge $impl: rc $?"
			done >"$WORK/dsa_edge.log" 2>&1
			;;
		dsa_parity)
			# parity alone (no timing) of torch and both ports on every task of both sparse plans,
			# the h_q 16 and 32 tasks included, which the A/B skips (FlashMLA, the baseline, refuses them)
			for which in v32 v4; do
				for impl in torch.mla_decode hip.flash triton.dsa_decode; do
					$VS --run $P/dsa/dsa_$which.full.plan.json --impl $impl --tasks-dir $D/tasks \
						--results-dir $D/results/dsa_parity/$which/$impl --threads "$threads"
					echo "dsa_parity $which $impl: rc $?"
				done
			done >"$WORK/dsa_parity.log" 2>&1
			;;
		dsa_v4_parity)
			# parity alone (no timing) of FlashMLA's sparse decode and torch on every task of the V4
			# plan (issue 36: the oracle against FlashMLA on each format it reads; the 5 tasks the
			# budget left out of the V4 A/B on 2026-12-05 18:36 among them), run.log per implementation
			for impl in flashmla.sparse_decode torch.mla_decode; do
				$VS --run $P/dsa/dsa_v4.full.plan.json --impl $impl --tasks-dir $D/tasks \
					--results-dir $D/results/dsa_v4_parity/$impl --threads "$threads"
				echo "dsa_v4_parity $impl: rc $?"
			done >"$WORK/dsa_v4_parity.log" 2>&1
			;;
		dsa_ncu)
			# Nsight Compute on the headline sparse task (b 128, h_q 128, s_q 2, 32K keys, topk 2048):
			# each implementation's kernels in its parity launches (every config once), task and eval
			# dirs outside /tmp (ncu_run says why)
			local NCU_DIR=/var/tmp/vs_ncu
			mkdir -p $NCU_DIR
			# hip.flash: its st2 configs (the template's last argument 2), which its tuning chooses;
			# on 2026-12-05 (22:37) the first 8 launches were all st1 configs. The names are matched
			# demangled (ncu's default base, "function", has no template arguments)
			local impl kern
			for impl in flashmla.sparse_decode hip.flash triton.dsa_decode; do
				kern='sparse|dsa|mla'
				[ "$impl" = hip.flash ] && kern='mla_sparse_warp<.*, 2>'
				ncu_run "$kern" 8 $VS --run $P/dsa/dsa_v32.full.plan.json --task b128-h128-sq2-32k --impl $impl \
					--tasks-dir $NCU_DIR/tasks --results-dir $NCU_DIR/results/$impl --threads "$threads"
				echo "dsa_ncu $impl: rc $?"
			done >"$WORK/dsa_ncu.log" 2>&1
			;;
		dsa_v4_head)
			# the V4 headline tasks timed (b 128, 64, 2 at h_q 128, s_q 2, 16K keys), every implementation
			$VS --run $P/dsa/dsa_v4.full.plan.json --task v4-b --tasks-dir $D/tasks \
				--results-dir $D/results/dsa_v4_head --threads "$threads" >"$WORK/dsa_v4_head.log" 2>&1
			;;
		dsa|dsa_v4)
			local which=v32
			[ "$step" = dsa_v4 ] && which=v4
			$VS --run $P/dsa/dsa_$which.full.plan.json --tasks-dir $D/tasks --results-dir $D/results/dsa_$which \
				--threads "$threads" >"$WORK/$step.log" 2>&1
			;;
		dev:*)
			local name slot
			IFS=: read -r _ name slot <<<"$step"
			mkdir -p "$WORK/$name"
			OUT="$WORK/$name" timeout -k 5 "${slot:-300}" bash ".dev/$name/run.sh" >"$WORK/$name.log" 2>&1
			echo "== $name: rc $?"
			tar czf "$WORK/$name.tgz.$$" -C "$WORK" "$name" && mv "$WORK/$name.tgz.$$" "$WORK/$name.tgz"
			;;
		*)
			echo "unknown step '$step'"
			;;
		esac
		echo "== step $step: $(($(date +%s) - start)) s"
		bg_snapshot
	done
	touch "$WORK/done"
}

# the tarball of every plan and eval dir so far, written atomically
bg_snapshot() {
	[ -d "$SNAP/$D" ] || return 0
	tar czf "$WORK/evidence.tgz.$$" -C "$SNAP/$D" plans results 2>/dev/null && mv "$WORK/evidence.tgz.$$" "$WORK/evidence.tgz"
}

source tools/gpu/bg_steps.sh
bg_main "$@"
