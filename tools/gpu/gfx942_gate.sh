#!/bin/bash
# gfx942_gate.sh BUILD_DIR [TARGET] - the gfx942 (MI300X) build gate of the HIP kernels, for machines
# without ROCm or a GPU (CI): clang-19 with Debian's HIP 5.2 headers. TARGET gfx950 (MI355X) runs
# the same gate with clang-22 (Debian 12's bookworm-security ships clang-22, lld-22 and llvm-22,
# the first Debian 12 compiler that knows gfx950; clang-19 does not), 160 KiB of LDS, the gfx942
# config spaces (hip_impls.c has no gfx950 ones), into BUILD_DIR/gfx950/resources.json.
#
# Each kernels/hip/*.hip source is compiled device-only for gfx942, assembled, and linked into a
# code object with ld.lld-19 --no-undefined (a device-library call such as expf, or a HIP header
# helper such as threadIdx that needs __ockl_*, is fatal: no device library is linked). The kernel
# metadata of the code objects gives every kernel's registers, LDS, scratch and spills, written to
# BUILD_DIR/gfx942/resources.json for every kernel and every config of the gfx942 config spaces
# (kernels/hip/hip_flash.h). Fails (exit 1) on a compile or link error, an undefined symbol, a
# config without its kernel, any VGPR/SGPR spill or scratch use, LDS (static + dynamic) over 65536
# bytes, or LDS that differs from hip_impls.c's formula. Also fails (exit 1, never a skip) when a
# tool it needs is missing (clang++-19, ld.lld-19, llvm-readelf-19, llvm-cxxfilt-19, the host C
# compiler) or /usr/include/hip is: tools/install-deps installs them all, and a gate CI is meant to
# run must not pass silently by not running.
#
# The Python kernels (step 4): tools/gpu/triton_amd_gate.py compiles every AMD config of
# triton.mla_decode ahead of time with Triton's AMD backend (no GPU, no ROCm) for gfx942 and for
# gfx950 (the TARGET's), checks the same limits and its entries join resources.json (impl
# "triton.mla_decode", with "occupancy" in waves per SIMD, "pass" and "why"), and then every AMD
# config of triton.dsa_decode, the sparse form (--module dsa_decode: bf16 and the fnuz twins, entries
# with impl "triton.dsa_decode"). Failures listed in
# tools/gpu/triton_amd_known.txt are recorded, not
# fatal (see that file); any other fails the gate. Step 5 (gfx942): tools/gpu/tilelang_amd_emit.py emits the
# HIP source of every gfx942 config of tilelang.mla_decode and compiles it with clang-19 where
# Debian's headers allow (its "sources" entries in resources.json; configs that do not emit are
# listed in tools/gpu/tilelang_amd_known.txt). Without that interpreter, triton or tilelang, the
# gate fails.
#
# Env: CLANGXX (default clang++-19, gfx950: clang++-22), CC (host C compiler for the config lister, default cc),
# VS_TRITON_PYTHON (default .venv-triton/bin/python at the source root, made by tools/install-deps).
set -u
die() { echo "gfx942_gate: $*" >&2; exit 1; }

[ $# -eq 1 ] || [ $# -eq 2 ] || { echo "usage: gfx942_gate.sh BUILD_DIR [gfx942|gfx950]" >&2; exit 2; }
SRC=$(cd "$(dirname "$0")/../.." && pwd)
GFX=${2:-gfx942}
case "$GFX" in
gfx942) V=19 LDS_MAX=65536 ;;
gfx950) V=22 LDS_MAX=163840 ;;
*) echo "usage: gfx942_gate.sh BUILD_DIR [gfx942|gfx950]" >&2; exit 2 ;;
esac
OUT=$1/$GFX
CXX=${CLANGXX:-clang++-$V}
HOSTCC=${CC:-cc}
for tool in "$CXX" ld.lld-$V llvm-readelf-$V llvm-cxxfilt-$V "$HOSTCC"; do
	command -v "$tool" >/dev/null 2>&1 || die "'$tool' not found (run tools/install-deps): the gate cannot run"
done
[ -d /usr/include/hip ] || die "/usr/include/hip not found (libamdhip64-dev; run tools/install-deps): the gate cannot run"
PY=${VS_TRITON_PYTHON:-${VS_TRITON_VENV:-$SRC/.venv-triton}/bin/python}
"$PY" -c 'import triton' >/dev/null 2>&1 || die "'$PY' cannot import triton (run tools/install-deps): the gate cannot run"
[ "$GFX" != gfx942 ] || PYTHONPATH="$SRC/tools/gpu/torch_stub" "$PY" -c 'import tilelang' >/dev/null 2>&1 ||
	die "'$PY' cannot import tilelang (run tools/install-deps): the gate cannot run"

rm -rf "$OUT" && mkdir -p "$OUT" || die "cannot create '$OUT'"
RES=$("$CXX" -print-resource-dir) || die "'$CXX -print-resource-dir' failed"
COMPILER=$("$CXX" --version | head -1)
# Debian's HIP headers come from /usr/include (clang's default search path): no -isystem /usr/include,
# which would break libstdc++'s #include_next.
CFLAGS=(-x hip --offload-arch="$GFX" --cuda-device-only -nogpulib -nogpuinc -D__HIP_PLATFORM_AMD__
	-isystem "$RES" -std=c++17 -O3 -Wall -Wextra -I"$SRC/kernels" -I"$SRC/kernels/hip" -I"$SRC/harness" -I"$SRC/harness/gpu")
# clang-22 no longer defines __AMDGCN_WAVEFRONT_SIZE, which Debian's HIP 5.2 headers read (warpSize):
# gfx9 is wave64 only.
[ "$V" = 19 ] || CFLAGS+=(-D__AMDGCN_WAVEFRONT_SIZE=64)

# 1. Compile, assemble, link every source; collect the kernel metadata.
: >"$OUT/kernels.tsv"
for src in "$SRC"/kernels/hip/*.hip "$SRC"/harness/gpu/*.hip; do
	name=$(basename "$src" .hip)
	"$CXX" "${CFLAGS[@]}" -S "$src" -o "$OUT/$name.s" 2>"$OUT/$name.log" ||
		{ cat "$OUT/$name.log" >&2; die "compiling '$src' for $GFX failed"; }
	"$CXX" --target=amdgcn-amd-amdhsa -mcpu="$GFX" -c "$OUT/$name.s" -o "$OUT/$name.o" 2>>"$OUT/$name.log" ||
		{ cat "$OUT/$name.log" >&2; die "assembling '$name.s' failed"; }
	ld.lld-$V -shared --no-undefined "$OUT/$name.o" -o "$OUT/$name.co" 2>>"$OUT/$name.log" ||
		{ cat "$OUT/$name.log" >&2; die "linking '$name' failed (undefined symbol: a device-library call?)"; }
	llvm-readelf-$V --notes "$OUT/$name.co" >"$OUT/$name.notes" || die "reading the notes of '$name.co' failed"
	# One line per kernel: symbol vgpr agpr sgpr lds scratch vgpr_spill sgpr_spill
	awk -v src="$name" '
		function flush() { if (sym != "") print src, sym, v, a, s, lds, scr, vs, ss; sym = "" }
		/^amdhsa\.target/ { flush() }
		/^  - \./ { flush(); v = a = s = lds = scr = vs = ss = 0 }
		/^(  - |    )\.[a-z_]+:/ {
			key = $0; sub(/^ *(- )?\./, "", key); val = key; sub(/:.*/, "", key); sub(/^[a-z_]+: */, "", val)
			if (key == "name") sym = val
			else if (key == "vgpr_count") v = val
			else if (key == "agpr_count") a = val
			else if (key == "sgpr_count") s = val
			else if (key == "group_segment_fixed_size") lds = val
			else if (key == "private_segment_fixed_size") scr = val
			else if (key == "vgpr_spill_count") vs = val
			else if (key == "sgpr_spill_count") ss = val
		}
		END { flush() }' "$OUT/$name.notes" >>"$OUT/kernels.tsv"
done
[ -s "$OUT/kernels.tsv" ] || die "no kernels found in the code objects"

# 2. The gfx942 config spaces, from hip_impls.c itself (with their kernel kinds).
"$HOSTCC" -std=c11 -O1 -o "$OUT/gfx942_configs" "$SRC/tools/gpu/gfx942_configs.c" "$SRC/kernels/hip/hip_impls.c" \
	2>"$OUT/configs.log" || { cat "$OUT/configs.log" >&2; die "building the config lister failed"; }
"$OUT/gfx942_configs" gfx942 >"$OUT/configs.txt" || die "listing the gfx942 configs failed"

# 3. Map kernels to configs (demangled template arguments), check, write resources.json.
status=0
entries=()
emit() { # impl config dtype symbol demangled vgpr agpr sgpr lds scratch vspill sspill
	entries+=("    {\"impl\":\"$1\",\"config\":\"$2\",\"kv_dtype\":\"$3\",\"symbol\":\"$4\",\"kernel\":\"$5\",\"vgpr\":$6,\"agpr\":$7,\"sgpr\":$8,\"lds_static\":$9,\"lds_dynamic\":0,\"scratch\":${10},\"vgpr_spill\":${11},\"sgpr_spill\":${12}}")
}
check() { # what lds scratch vspill sspill [formula]
	local what=$1 lds=$2 scr=$3 vs=$4 ss=$5 formula=${6:-}
	if [ "$vs" != 0 ] || [ "$ss" != 0 ]; then echo "gfx942_gate: $what spills ($vs VGPR, $ss SGPR)" >&2; status=1; fi
	if [ "$scr" != 0 ]; then echo "gfx942_gate: $what uses $scr bytes of scratch" >&2; status=1; fi
	if [ "$lds" -gt "$LDS_MAX" ]; then echo "gfx942_gate: $GFX $what uses $lds bytes of LDS > $LDS_MAX" >&2; status=1; fi
	if [ -n "$formula" ] && [ "$formula" != "$lds" ]; then
		echo "gfx942_gate: $what uses $lds bytes of LDS, hip_impls.c's formula says $formula" >&2; status=1
	fi
}
# find_kernel REGEX -> "symbol demangled v a s lds scr vs ss" of the first kernel whose demangled name matches
find_kernel() {
	while read -r src sym v a s lds scr vs ss; do
		dm=$(llvm-cxxfilt-$V "$sym" | sed 's/(anonymous namespace):://g; s/^void //')
		if printf '%s\n' "$dm" | grep -Eq "$1"; then
			echo "$sym|${dm%%(*}|$v|$a|$s|$lds|$scr|$vs|$ss"
			return 0
		fi
	done <"$OUT/kernels.tsv"
	return 1
}
used=" "
while read -r impl cfg bn bh sp nw st lds_bf16 lds_fp8 kind; do
	if [ "$impl" = hip.baseline ]; then
		list=("false|bf16|^mla_baseline<$nw, false>" "true|fp8_e4m3_fnuz|^mla_baseline<$nw, true>")
	elif [ "$kind" = sparse ]; then
		# hip.flash's sparse form (flash_sparse.hip): one kernel per layout (MLA_SPARSE_BF16 0,
		# _DS_MLA 1, _MODEL1 2; the fnuz twins run the fp8 ones) and num_stages (2: the hardware fp8
		# decode), the same LDS for all, and its combine
		list=("false|bf16|^mla_sparse_warp<$bn, $bh, $nw, 0, $st>" "true|fp8_ds_mla|^mla_sparse_warp<$bn, $bh, $nw, 1, $st>"
		      "true|fp8_model1|^mla_sparse_warp<$bn, $bh, $nw, 2, $st>" "-|any|^mla_sparse_combine\\(")
	else
		list=("false|bf16|^mla_flash_warp<$bn, $bh, $nw, $st, false(, false)?>" "true|fp8_e4m3_fnuz|^mla_flash_warp<$bn, $bh, $nw, $st, true(, false)?>"
		      "-|any|^mla_flash_combine\\(")
	fi
	for item in "${list[@]}"; do
		IFS='|' read -r fp8 dtype re <<<"$item"
		k=$(find_kernel "$re") || { echo "gfx942_gate: $impl $cfg: no kernel matching '$re'" >&2; status=1; continue; }
		IFS='|' read -r sym dm v a s lds scr vs ss <<<"$k"
		formula=""
		[ "$fp8" = false ] && [ "$impl" = hip.flash ] && formula=$lds_bf16
		[ "$fp8" = true ] && [ "$impl" = hip.flash ] && formula=$lds_fp8
		check "$impl $cfg ($dm)" "$lds" "$scr" "$vs" "$ss" "$formula"
		emit "$impl" "$cfg" "$dtype" "$sym" "$dm" "$v" "$a" "$s" "$lds" "$scr" "$vs" "$ss"
		used="$used$sym "
	done
done <"$OUT/configs.txt"
# Kernels no config uses (test helpers): checked and listed too.
while read -r src sym v a s lds scr vs ss; do
	case "$used" in *" $sym "*) continue ;; esac
	dm=$(llvm-cxxfilt-$V "$sym" | sed 's/(anonymous namespace):://g; s/^void //')
	check "$src: ${dm%%(*}" "$lds" "$scr" "$vs" "$ss"
	emit "$src" "-" "-" "$sym" "${dm%%(*}" "$v" "$a" "$s" "$lds" "$scr" "$vs" "$ss"
done <"$OUT/kernels.tsv"

# 4. The Python kernels: Triton's AMD configs for this target, the dense module's and the sparse one's.
"$PY" "$SRC/tools/gpu/triton_amd_gate.py" "$OUT/triton" "$GFX" --known "$SRC/tools/gpu/triton_amd_known.txt" \
	>"$OUT/triton.jsonl" || status=1
"$PY" "$SRC/tools/gpu/triton_amd_gate.py" "$OUT/triton" "$GFX" --module dsa_decode \
	--known "$SRC/tools/gpu/triton_amd_known.txt" >"$OUT/triton_dsa.jsonl" || status=1
while IFS= read -r line; do
	case "$line" in "{"*) entries+=("    $line") ;; esac
done < <(cat "$OUT/triton.jsonl" "$OUT/triton_dsa.jsonl")
TRITON=$("$PY" -c 'import triton; print(triton.__version__)')
# 5. TileLang's HIP source for gfx942.
sources=()
if [ "$GFX" = gfx942 ]; then
	"$PY" "$SRC/tools/gpu/tilelang_amd_emit.py" "$OUT/tilelang" --known "$SRC/tools/gpu/tilelang_amd_known.txt" \
		>"$OUT/tilelang.jsonl" 2> >(grep -v 'Unable to detect ROCm version' >&2) || status=1
	while IFS= read -r line; do
		case "$line" in "{"*) sources+=("    $line") ;; esac
	done <"$OUT/tilelang.jsonl"
fi

{
	# "pass": every check above held (no undefined symbol, no spill, no scratch, LDS within the limit;
	# known Triton and TileLang failures excepted: their entries say "pass":false or "emitted":false).
	echo "{\"target\":\"$GFX\",\"compiler\":\"$COMPILER; triton $TRITON\",\"pass\":$([ $status -eq 0 ] && echo true || echo false),\"kernels\":["
	for i in "${!entries[@]}"; do
		[ "$i" -gt 0 ] && echo ","
		printf '%s' "${entries[$i]}"
	done
	echo
	echo "],\"sources\":["
	for i in "${!sources[@]}"; do
		[ "$i" -gt 0 ] && echo ","
		printf '%s' "${sources[$i]}"
	done
	echo
	echo "]}"
} >"$OUT/resources.json.tmp" && mv "$OUT/resources.json.tmp" "$OUT/resources.json" || die "cannot write resources.json"

printf '%-13s %-22s %-14s %5s %5s %5s %6s %7s %6s\n' impl config kv_dtype vgpr agpr sgpr lds scratch spill
while read -r impl cfg dtype v a s lds scr vs; do
	printf '%-13s %-22s %-14s %5s %5s %5s %6s %7s %6s\n' "$impl" "$cfg" "$dtype" "$v" "$a" "$s" "$lds" "$scr" "$vs"
done < <(sed -n 's/.*"impl":"\([^"]*\)","config":"\([^"]*\)","kv_dtype":"\([^"]*\)".*"vgpr":\([0-9]*\),"agpr":\([0-9]*\),"sgpr":\([0-9]*\),"lds_static":\([0-9]*\),"lds_dynamic":0,"scratch":\([0-9]*\),"vgpr_spill":\([0-9]*\).*/\1 \2 \3 \4 \5 \6 \7 \8 \9/p' "$OUT/resources.json")
for t in "$OUT/triton.jsonl" "$OUT/triton_dsa.jsonl"; do
	"$PY" -c 'import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    print("%-13s %-22s %-14s %5d %5d %5d %6d %7d %6d %4d %s" % (e["impl"].replace("_decode", "")[:13], e["config"], e["kv_dtype"], e["vgpr"], e["agpr"],
          e["sgpr"], e["lds_static"] + e["lds_dynamic"], e["scratch"], e["vgpr_spill"] + e["sgpr_spill"], e["occupancy"],
          "ok" if e["pass"] else "KNOWN " + e["why"] if e.get("known") else "FAIL " + e["why"]))' "$t"
done
[ "$GFX" != gfx942 ] || "$PY" -c 'import json, sys
for l in open(sys.argv[1]):
    e = json.loads(l)
    print("tilelang      %-30s %-14s %s" % (e["config"], e["kv_dtype"], "compiled" if e["compiled"] else e["why"]))' "$OUT/tilelang.jsonl"
if [ $status -ne 0 ]; then
	echo "gfx942_gate: FAILED (see above); resources in $OUT/resources.json" >&2
	exit 1
fi
echo "gfx942_gate: ok: $GFX: ${#entries[@]} kernel entries in $OUT/resources.json"
