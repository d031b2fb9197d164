#!/bin/bash
# mi300x_refusals.sh - tools/amd/mi300x_run.sh on a machine without ROCm or an MI300X: each check
# refuses with exit 3 and exactly one line naming what is missing, in a faked environment per case
# (ROCM_PATH with a version file, a rocminfo, ROCm's clang; a torch stub on PYTHONPATH); and a fully
# faked environment passes the checks (MI300X_SKIP_CHECKS=1 stops there, exit 0), so each refusal
# is the check's own and not an earlier one.
set -u
SRC=$(cd "$(dirname "$0")/../.." && pwd)
RUN=$SRC/tools/amd/mi300x_run.sh
T=$(mktemp -d) || exit 1
trap 'rm -rf "$T"' EXIT
fails=0 passed=0

# fake_rocm DIR VERSION AGENT: a ROCm tree with .info/version, bin/rocminfo listing AGENT, llvm/bin/clang++
fake_rocm() {
	mkdir -p "$1/.info" "$1/bin" "$1/llvm/bin"
	echo "$2" >"$1/.info/version"
	printf '#!/bin/sh\necho "  Name:                    %s"\n' "$3" >"$1/bin/rocminfo"
	printf '#!/bin/sh\nexit 0\n' >"$1/llvm/bin/clang++"
	chmod +x "$1/bin/rocminfo" "$1/llvm/bin/clang++"
}
# fake_py DIR HIP AVAILABLE MODULES...: a torch stub (version.hip, cuda.is_available) and empty modules
fake_py() {
	local d=$1 hip=$2 avail=$3
	shift 3
	mkdir -p "$d/torch"
	printf 'import types\n__version__ = "2.9.0"\nversion = types.SimpleNamespace(hip=%s)\ncuda = types.SimpleNamespace(is_available=lambda: %s)\n' \
		"$hip" "$avail" >"$d/torch/__init__.py"
	for m in "$@"; do printf '__version__ = "0"\n' >"$d/$m.py"; done
}
# expect NAME RC PATTERN ENV...: run the script under env, check the exit status and the stderr line
expect() {
	local name=$1 rc=$2 pat=$3 out err got
	shift 3
	out=$(cd "$T" && env -i PATH=/usr/bin:/bin HOME="$T" "$@" "$RUN" "$T/out" 2>"$T/err")
	got=$?
	err=$(cat "$T/err")
	if [ "$got" -ne "$rc" ]; then
		echo "FAIL $name: exit $got, expected $rc; stdout: $out; stderr: $err"
		fails=$((fails + 1))
	elif [ "$rc" -eq 3 ] && { [ "$(printf '%s\n' "$err" | wc -l)" -ne 1 ] || ! printf '%s' "$err" | grep -q "^mi300x_run: refusing: .*$pat"; }; then
		echo "FAIL $name: stderr is not the one line 'mi300x_run: refusing: ...$pat...': $err"
		fails=$((fails + 1))
	elif [ "$rc" -eq 0 ] && ! printf '%s' "$out" | grep -q "$pat"; then
		echo "FAIL $name: stdout lacks '$pat': $out"
		fails=$((fails + 1))
	else
		echo "ok   $name: ${err:-$out}" | head -1
		passed=$((passed + 1))
	fi
}
mkdir -p "$T/out"
# python3 without its site-packages (-S): only the stubs on PYTHONPATH are importable, whatever is installed
PY3=$T/python3
printf '#!/bin/sh\nexec %s -S "$@"\n' "$(command -v python3)" >"$PY3" && chmod +x "$PY3"
fake_rocm "$T/r57" 5.7.1 gfx942
fake_rocm "$T/r62-90a" 6.2.4 gfx90a
fake_rocm "$T/r62" 6.2.4 gfx942
fake_py "$T/py-notorch-dir" None False
rm -rf "$T/py-notorch-dir/torch"
fake_py "$T/py-cuda" None True triton tilelang
fake_py "$T/py-nogpu" '"6.2"' False triton tilelang
fake_py "$T/py-notl" '"6.2"' True triton
fake_py "$T/py-ok" '"6.2"' True triton tilelang

expect no_rocm 3 "no ROCm found" ROCM_PATH="$T/none"
expect old_rocm 3 "ROCm 5.7.1 is too old" ROCM_PATH="$T/r57"
expect no_gfx942 3 "no gfx942 agent (MI300X) in rocminfo (found: gfx90a" ROCM_PATH="$T/r62-90a"
expect no_python 3 "python 'vs-no-such-python' not found" ROCM_PATH="$T/r62" VS_PYTHON=vs-no-such-python
expect no_torch 3 "torch cannot be imported" ROCM_PATH="$T/r62" VS_PYTHON="$PY3" PYTHONPATH="$T/py-notorch-dir"
expect cuda_torch 3 "is not a ROCm build" ROCM_PATH="$T/r62" VS_PYTHON="$PY3" PYTHONPATH="$T/py-cuda"
expect no_gpu 3 "sees no GPU" ROCM_PATH="$T/r62" VS_PYTHON="$PY3" PYTHONPATH="$T/py-nogpu"
expect no_tilelang 3 "tilelang cannot be imported" ROCM_PATH="$T/r62" VS_PYTHON="$PY3" PYTHONPATH="$T/py-notl"
expect bad_tier 3 "MI300X_TIER 'huge'" ROCM_PATH="$T/r62" MI300X_TIER=huge
expect checks_pass 0 "checks passed" ROCM_PATH="$T/r62" VS_PYTHON="$PY3" PYTHONPATH="$T/py-ok" MI300X_SKIP_CHECKS=1
echo "$passed passed, $fails failed"
[ "$fails" -eq 0 ]
