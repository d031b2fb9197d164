#!/bin/bash
# sm90_resources.sh BUILD_DIR [NVCC] - the sm_90a resource figures of the HIP kernels (the NVIDIA
# counterpart of gfx942_gate.sh's resources.json): each kernels/hip/*.hip source is compiled
# device-only for sm_90a with ptxas -v, and every kernel's registers, barriers, static shared
# memory, stack frame and spill bytes are written to BUILD_DIR/sm_90/resources.json for every
# config of the sm_90 config spaces (kernels/hip/hip_flash.h), with the dynamic shared memory of
# hip_impls.c's formula beside them. `validate_skill --emit-plan` shows them for sm_90 plans.
# "pass" is false when a kernel spills or a config's shared memory exceeds 227 KiB; the script
# itself fails (exit 1) only when it cannot run (no nvcc, a compile error, a config without its
# kernel): it records figures, it does not gate the build (the gfx942 gate does that on gfx942).
#
# Run after every NVIDIA build by kernels/hip/CMakeLists.txt (POST_BUILD of vs_gpu).
set -u
die() { echo "sm90_resources: $*" >&2; exit 1; }

[ $# -ge 1 ] || { echo "usage: sm90_resources.sh BUILD_DIR [NVCC]" >&2; exit 2; }
SRC=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$1/sm_90
NVCC=${2:-nvcc}
HOSTCC=${CC:-cc}
for tool in "$NVCC" c++filt "$HOSTCC"; do
	command -v "$tool" >/dev/null 2>&1 || die "'$tool' not found: the figures cannot be made"
done
rm -rf "$OUT" && mkdir -p "$OUT" || die "cannot create '$OUT'"
COMPILER=$("$NVCC" --version | tail -1)

# 1. ptxas -v of every source: one line per kernel "symbol regs barriers smem stack spill_st spill_ld".
: >"$OUT/kernels.tsv"
for src in "$SRC"/kernels/hip/*.hip; do
	name=$(basename "$src" .hip)
	"$NVCC" -x cu -std=c++17 -O3 -gencode=arch=compute_90a,code=sm_90a -DMLA_HAVE_WGMMA=1 -DNDEBUG \
		-I"$SRC/kernels" -I"$SRC/kernels/hip" -cubin -o "$OUT/$name.cubin" -Xptxas -v "$src" \
		>"$OUT/$name.log" 2>&1 || { cat "$OUT/$name.log" >&2; die "compiling '$src' for sm_90a failed"; }
	awk '
		function flush() { if (sym != "") print sym, r, bar, sm, st, ss, sl; sym = "" }
		/Compiling entry function/ {
			flush(); s = $0; sub(/.*function \047/, "", s); sub(/\047.*/, "", s); sym = s
			r = bar = sm = st = ss = sl = 0
		}
		/bytes stack frame/ {
			for (i = 1; i <= NF; i++) {
				if ($(i + 1) == "bytes" && $(i + 2) == "stack") st = $i
				if ($(i + 1) == "bytes" && $(i + 2) == "spill" && $(i + 3) ~ /^stores/) ss = $i
				if ($(i + 1) == "bytes" && $(i + 2) == "spill" && $(i + 3) ~ /^loads/) sl = $i
			}
		}
		/Used [0-9]+ registers/ {
			for (i = 1; i <= NF; i++) {
				if ($(i + 1) ~ /^registers/) r = $i
				if ($(i + 1) ~ /^barriers/) bar = $i
				if ($(i + 1) == "bytes" && $(i + 2) ~ /^smem/) sm = $i
			}
			flush()
		}
		END { flush() }' "$OUT/$name.log" >>"$OUT/kernels.tsv"
done
[ -s "$OUT/kernels.tsv" ] || die "no kernels found in the ptxas output"

# 2. The sm_90 config spaces, from hip_impls.c itself (the gfx942 gate's lister, arch sm_90a).
"$HOSTCC" -std=c11 -O1 -o "$OUT/configs" "$SRC/tools/gpu/gfx942_configs.c" "$SRC/kernels/hip/hip_impls.c" \
	2>"$OUT/configs.log" || { cat "$OUT/configs.log" >&2; die "building the config lister failed"; }
"$OUT/configs" sm_90a >"$OUT/configs.txt" || die "listing the sm_90 configs failed"

# 3. Map kernels to configs by their demangled names, write resources.json.
pass=true
entries=()
find_kernel() { # REGEX -> "symbol|demangled|regs|barriers|smem|stack|spill_st|spill_ld"
	while read -r sym r bar sm st ss sl; do
		dm=$(c++filt "$sym" | sed 's/(anonymous namespace):://g; s/^void //')
		if printf '%s\n' "$dm" | grep -Eq "$1"; then
			echo "$sym|${dm%%(*}|$r|$bar|$sm|$st|$ss|$sl"
			return 0
		fi
	done <"$OUT/kernels.tsv"
	return 1
}
while read -r impl cfg bn bh sp nw st smem_bf16 smem_fp8 kind; do
	bal=false # mla_flash_wgmma(_sd)'s last template argument: balanced splits (MLA_FLASH_BALANCED, -1)
	[ "$sp" = -1 ] && bal=true
	case $kind in
	baseline) list=("bf16|0|^mla_baseline<$nw, false>" "fp8_e4m3_fnuz|0|^mla_baseline<$nw, true>") ;;
	# the last template argument: the decoded tile (MLA_FLASH_WARP_DT, fp8 only)
	warp) list=("bf16|$smem_bf16|^mla_flash_warp<$bn, $bh, $nw, $st, false, false>"
		    "fp8_e4m3_fnuz|$smem_fp8|^mla_flash_warp<$bn, $bh, $nw, $st, true, false>") ;;
	warp_dt) list=("fp8_e4m3_fnuz|$smem_fp8|^mla_flash_warp<$bn, $bh, $nw, $st, true, true>") ;;
	wgmma) list=("bf16|$smem_bf16|^mla_flash_wgmma<false, $bal>"
		     "fp8_e4m3_fnuz|$smem_fp8|^mla_flash_wgmma(_sd)?<true, $bal>") ;;
	wgmma_t) list=("bf16|$smem_bf16|^mla_flash_wgmma_t<$bh, false>"
		       "fp8_e4m3_fnuz|$smem_fp8|^mla_flash_wgmma_t<$bh, true>") ;;
	onetile) list=("bf16|$smem_bf16|^mla_flash_onetile<$nw, false>"
		       "fp8_e4m3_fnuz|$smem_fp8|^mla_flash_onetile<$nw, true>") ;;
	# the sparse form (flash_sparse.hip): one kernel per layout (bf16 0, fp8_ds_mla 1, fp8_model1 2;
	# the fnuz twins run the fp8 ones) and num_stages (2: the pipelined kernel), the same shared
	# memory for all, and its own combine
	sparse) list=("bf16|$smem_bf16|^mla_sparse_warp<$bn, $bh, $nw, 0, $st>"
		      "fp8_ds_mla|$smem_fp8|^mla_sparse_warp<$bn, $bh, $nw, 1, $st>"
		      "fp8_model1|$smem_fp8|^mla_sparse_warp<$bn, $bh, $nw, 2, $st>"
		      "any|0|^mla_sparse_combine\\(") ;;
	*) die "$impl $cfg: unknown kernel kind '$kind'" ;;
	esac
	# the combine runs after every hip.flash kernel but the one-tile one (no split)
	[ "$impl" = hip.flash ] && [ "$kind" != onetile ] && [ "$kind" != sparse ] && list+=("any|0|^mla_flash_combine\\(")
	for item in "${list[@]}"; do
		IFS='|' read -r dtype dyn re <<<"$item"
		k=$(find_kernel "$re") || die "$impl $cfg: no kernel matching '$re'"
		IFS='|' read -r sym dm r bar sm stk ss sl <<<"$k"
		[ "$ss" != 0 ] || [ "$sl" != 0 ] && pass=false
		[ $((sm + dyn)) -gt 232448 ] && pass=false
		entries+=("    {\"impl\":\"$impl\",\"config\":\"$cfg\",\"kv_dtype\":\"$dtype\",\"symbol\":\"$sym\",\"kernel\":\"$dm\",\"registers\":$r,\"barriers\":$bar,\"smem_static\":$sm,\"smem_dynamic\":$dyn,\"stack\":$stk,\"spill_stores\":$ss,\"spill_loads\":$sl}")
	done
done <"$OUT/configs.txt"

{
	echo "{\"target\":\"sm_90a\",\"compiler\":\"$COMPILER\",\"pass\":$pass,\"kernels\":["
	for i in "${!entries[@]}"; do
		[ "$i" -gt 0 ] && echo ","
		printf '%s' "${entries[$i]}"
	done
	echo
	echo "]}"
} >"$OUT/resources.json.tmp" && mv "$OUT/resources.json.tmp" "$OUT/resources.json" || die "cannot write resources.json"
rm -f "$OUT"/*.cubin
echo "sm90_resources: ${#entries[@]} kernel entries in $OUT/resources.json (pass $pass)"
