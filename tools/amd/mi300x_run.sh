#!/bin/bash
# mi300x_run.sh [OUT_DIR] - the one command an MI300X owner runs, from a clone of this repository on
# a ROCm machine: checks the environment, builds the AMD binary, runs both gfx942 cards, packs the
# eval dirs for --record. README "On an MI300X" says what the machine needs.
#
#   1. checks, each refusing with one line (exit 3) before anything is built: Linux; bash 4; ROCm 6.0
#      or later (/opt/rocm/.info/version or hipconfig --version; $ROCM_PATH overrides /opt/rocm);
#      rocminfo lists a gfx942 agent (MI300X/MI300A/MI325X); cmake, a C compiler, hipcc's clang;
#      the Python that runs the Python kernels ($VS_PYTHON, default python3) imports torch built for
#      ROCm (torch.version.hip) that sees the GPU, triton and tilelang; the work tree has room (5 GB).
#   2. build: cmake -DVS_GPU=AMD -DVS_HIP_TOOLCHAIN=ROCM (CMake's HIP language, ROCm's clang) into
#      build-mi300x/, then its GPU tests (gpu_parity: hip.baseline and hip.flash against the oracle,
#      gpu_isolation) and the gfx942 gate (needs Debian's clang-19 toolchain: skipped with a line
#      where it is not installed; the plans then carry no build figures).
#   3. --validate of skills/mla_tilelang_to_triton.md (the field card: tilelang.mla_decode ->
#      triton.mla_decode) and skills/mla_decode_hip_port.md (tilelang.mla_decode -> hip.flash), tier
#      standard, each with the other card's candidate and torch.mla_decode as references, and the
#      HIP card with hip.baseline too. --validate records the verdict into the card copy here.
#   4. packs the plans, the eval dirs and the cards into OUT_DIR/mi300x-evidence-<UTC date>.tar.gz
#      (default OUT_DIR: .), and prints the commands that record them in another clone.
#
# Env: VS_PYTHON (the Python with torch/triton/tilelang), ROCM_PATH, MI300X_TIER (default standard),
# MI300X_SKIP_CHECKS=1 (for the tests: stop after the checks, exit 0 when they pass).
set -u
refuse() { echo "mi300x_run: refusing: $*" >&2; exit 3; }
step() { echo "mi300x_run: $*"; }

[ "$(uname -s)" = Linux ] || refuse "not Linux ($(uname -s)): ROCm runs on Linux"
[ "${BASH_VERSINFO[0]}" -ge 4 ] || refuse "bash ${BASH_VERSION} is too old (4 or later)"
SRC=$(cd "$(dirname "$0")/../.." && pwd) || refuse "cannot find the repository root"
cd "$SRC" || refuse "cannot enter '$SRC'"
if [ ! -f skills/mla_decode_hip_port.md ] || [ ! -f skills/mla_tilelang_to_triton.md ]; then
	refuse "'$SRC' lacks skills/mla_decode_hip_port.md or skills/mla_tilelang_to_triton.md: not a clone of validate_skill"
fi
OUT=${1:-.}
if [ ! -d "$OUT" ] || [ ! -w "$OUT" ]; then refuse "output directory '$OUT' does not exist or is not writable"; fi
TIER=${MI300X_TIER:-standard}
case "$TIER" in smoke | standard | full) ;; *) refuse "MI300X_TIER '$TIER' is not smoke, standard or full" ;; esac

# ---- 1. the environment -------------------------------------------------------------------------
ROCM=${ROCM_PATH:-/opt/rocm}
ver=""
if [ -r "$ROCM/.info/version" ]; then
	ver=$(head -1 "$ROCM/.info/version")
elif command -v hipconfig >/dev/null 2>&1; then
	ver=$(hipconfig --version 2>/dev/null)
fi
[ -n "$ver" ] || refuse "no ROCm found ($ROCM/.info/version missing, no hipconfig on PATH): install ROCm 6.0 or later, or set ROCM_PATH"
major=${ver%%.*}
case "$major" in '' | *[!0-9]*) refuse "cannot read the ROCm version from '$ver'" ;; esac
[ "$major" -ge 6 ] || refuse "ROCm $ver is too old for gfx942 (6.0 or later)"
PATH=$ROCM/bin:$ROCM/llvm/bin:$PATH
command -v rocminfo >/dev/null 2>&1 || refuse "rocminfo not found in $ROCM/bin or on PATH"
agents=$(rocminfo 2>/dev/null | grep -oE 'gfx[0-9a-f]+' | sort -u | tr '\n' ' ')
agents=${agents% }
case " $agents " in *" gfx942 "*) ;; *) refuse "no gfx942 agent (MI300X) in rocminfo (found: ${agents:-none})" ;; esac
for tool in cmake cc "$ROCM/llvm/bin/clang++"; do
	command -v "$tool" >/dev/null 2>&1 || refuse "'$tool' not found (cmake, a C compiler and ROCm's clang are needed)"
done
PY=${VS_PYTHON:-python3}
command -v "$PY" >/dev/null 2>&1 || refuse "python '$PY' not found (set VS_PYTHON to the Python with torch, triton and tilelang)"
why=$("$PY" - 2>&1 <<'EOF'
import sys
try:
    import torch
except Exception as e:
    sys.exit("torch cannot be imported (%s)" % e)
if not getattr(torch.version, "hip", None):
    sys.exit("torch %s is not a ROCm build (torch.version.hip is None)" % torch.__version__)
if not torch.cuda.is_available():
    sys.exit("torch %s (HIP %s) sees no GPU" % (torch.__version__, torch.version.hip))
for mod in ("triton", "tilelang"):
    try:
        __import__(mod)
    except Exception as e:
        sys.exit("%s cannot be imported (%s)" % (mod, e))
EOF
) || refuse "$PY: ${why##*$'\n'}"
avail=$(df -Pk . | awk 'NR == 2 { print $4 }')
[ "${avail:-0}" -ge 5000000 ] || refuse "less than 5 GB free in '$SRC' (task dirs and eval dirs go there)"
step "environment: ROCm $ver, agents $agents, $("$PY" -c 'import torch, triton, tilelang; print("torch", torch.__version__, "triton", triton.__version__, "tilelang", tilelang.__version__)' 2>/dev/null)"
[ "${MI300X_SKIP_CHECKS:-0}" = 1 ] && { step "checks passed (MI300X_SKIP_CHECKS=1: stopping here)"; exit 0; }

# ---- 2. build -----------------------------------------------------------------------------------
B=build-mi300x
step "building $B"
cmake -S . -B "$B" -DVS_GPU=AMD -DVS_HIP_TOOLCHAIN=ROCM -DCMAKE_HIP_ARCHITECTURES=gfx942 \
	-DCMAKE_BUILD_TYPE=Release >"$B.configure.log" 2>&1 || { tail -20 "$B.configure.log" >&2; exit 1; }
cmake --build "$B" -j"$(nproc)" >"$B.build.log" 2>&1 || { tail -30 "$B.build.log" >&2; exit 1; }
ctest --test-dir "$B" --output-on-failure -R '^(gpu_parity|gpu_isolation)$' || { echo "mi300x_run: the GPU tests failed" >&2; exit 1; }
if command -v clang++-19 >/dev/null 2>&1 && [ -d /usr/include/hip ]; then
	ctest --test-dir "$B" --output-on-failure -R '^gfx942_build_gate$' || echo "mi300x_run: the gfx942 gate failed (see above); going on" >&2
else
	step "the gfx942 gate needs Debian's clang-19 and HIP headers (tools/install-deps): skipped, plans carry no build figures"
fi
export VS_PYTHON="$PY"

# ---- 3. the cards -------------------------------------------------------------------------------
status=0
for card in mla_tilelang_to_triton mla_decode_hip_port; do
	refs=(--reference torch.mla_decode)
	if [ $card = mla_tilelang_to_triton ]; then refs+=(--reference hip.flash); else refs+=(--reference triton.mla_decode --reference hip.baseline); fi
	step "validating skills/$card.md (tier $TIER)"
	"$B/validate_skill" --validate "skills/$card.md" --tier "$TIER" "${refs[@]}" || status=$?
done

# ---- 4. pack ------------------------------------------------------------------------------------
pack="$OUT/mi300x-evidence-$(date -u +%Y%m%dT%H%MZ).tar.gz"
dirs=()
for card in mla_tilelang_to_triton mla_decode_hip_port; do
	[ -f "plans/$card.plan.json" ] && dirs+=("plans/$card.plan.json")
	latest="" # the newest gfx942 eval dir (run ids sort by time; the glob skips .debug/)
	for d in "results/$card"/*-gfx942/; do [ -d "$d" ] && latest=$d; done
	[ -n "$latest" ] && dirs+=("${latest%/}") && echo "  record: validate_skill --record skills/$card.md --eval-dir ${latest%/}"
done
[ ${#dirs[@]} -gt 0 ] || { echo "mi300x_run: no plan or eval dir to pack" >&2; exit 1; }
tar -czf "$pack" skills/mla_tilelang_to_triton.md skills/mla_decode_hip_port.md "${dirs[@]}" || exit 1
step "packed $pack (untar at a clone's root, then the record lines above)"
exit $status
