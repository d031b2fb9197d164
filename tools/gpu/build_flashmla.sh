#!/bin/bash
# build_flashmla.sh [--sparse] FLASHMLA_DIR CUTLASS_DIR OUT.so - build a FlashMLA plugin from
# FlashMLA's own sources, which stay where they are (never copied into this repository).
#
# Without --sparse: the flashmla.decode plugin (the dense form). Its source follows the tree's
# layout:
#
#   current   FLASHMLA_DIR/csrc/sm90/decode/dense (FlashMLA main, checked at 9241ae3, 2026-04-29):
#             kernels/flashmla/flashmla_plugin.cu, the reference of every card run. Reads
#             csrc/{utils.h,params.h,sm90/decode/dense,smxx/decode/{combine,get_decoding_sched_meta},
#             kerutils/include}; csrc/api (torch) is not compiled. CUTLASS 147f567 (the submodule
#             pin of 9241ae3). -std=c++20, as FlashMLA's setup.py.
#   9edee0c   FLASHMLA_DIR/csrc/kernels (FlashMLA 9edee0c, 2025-04-29, the build of the card runs
#             up to 2026-12-04): kernels/flashmla/flashmla_9edee0c_plugin.cu, the same plugin name
#             ("flashmla.decode"; the description names the commit), CUTLASS e94e888 (v3.9.0),
#             -std=c++17. Kept so that those records can be rebuilt and re-checked.
#
# With --sparse: the flashmla.sparse_decode plugin (the sparse form of ABI 3, DeepSeek Sparse
# Attention: fp8_ds_mla and fp8_model1 caches), from the current layout only:
# kernels/flashmla/flashmla_sparse_plugin.cu (with FlashMLA's scheduler and combine in its
# translation unit) plus FlashMLA's own four sm_90a instantiation files, unchanged, each in its own
# object through kernels/flashmla/flashmla_sparse_unit.cu (-DFMLA_UNIT=NAME includes
# csrc/sm90/decode/sparse_fp8/instantiations/NAME.cu, NAME {v32,model1}_persistent_h{64,128}; the
# wrapper keeps nvcc's internal names, and so the stripped plugin, the same from build to build).
# Checked at 9241ae3 + CUTLASS 147f567 with nvcc 13.0 (2026-12-05): see the plugin's header. The
# objects are compiled JOBS at a time (default 1; each takes about 2 minutes of one core), then
# linked into OUT.so.
#
#   CUTLASS_DIR   CUTLASS headers: CUTLASS_DIR/include (and tools/util/include, if present), the
#                 commit FlashMLA pins as its csrc/cutlass submodule. Default when empty:
#                 FLASHMLA_DIR/csrc/cutlass.
#   OUT.so        the plugin, stripped (a rebuild gives the same bytes: see below); load it with
#                 --candidate-lib / --baseline-lib OUT.so, or as a reference
#
# Needs nvcc (checked with CUDA 13.0) for sm_90a only, FlashMLA's own nvcc flags (setup.py), and
# prints ptxas's resource usage of every kernel (registers, spills, shared memory). NVCC_THREADS
# (default 2) sets nvcc --threads. With CUDA 13 outside its own install (a conda or pip nvcc),
# the libcu++ headers may need CPLUS_INCLUDE_PATH=<toolkit>/include/cccl. Example, sources from git:
#
#   git -C FlashMLA checkout 9241ae3 && git -C FlashMLA submodule update --init csrc/cutlass
#   tools/gpu/build_flashmla.sh FlashMLA "" build/libflashmla.so
#   JOBS=2 tools/gpu/build_flashmla.sh --sparse FlashMLA "" build/libflashmla_sparse.so
set -euo pipefail

usage() { echo "usage: build_flashmla.sh [--sparse] FLASHMLA_DIR CUTLASS_DIR OUT.so" >&2; exit 2; }
sparse=0
[ "${1:-}" = --sparse ] && { sparse=1; shift; }
[ $# -eq 3 ] || usage
fmla=$1 cutlass=${2:-$1/csrc/cutlass} out=$3
here=$(cd "$(dirname "$0")/../.." && pwd)
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}

objs=()  # --sparse: FlashMLA's instantiation files, one object each
if [ $sparse = 1 ]; then
	[ -d "$fmla/csrc/sm90/decode/sparse_fp8" ] || {
		echo "build_flashmla.sh: '$fmla' has no csrc/sm90/decode/sparse_fp8 (--sparse needs FlashMLA" \
		     "main, checked at 9241ae3)" >&2
		exit 1
	}
	layout=sparse src=$here/kernels/flashmla/flashmla_sparse_plugin.cu std=c++20
	objs=(v32_persistent_h64 v32_persistent_h128 model1_persistent_h64 model1_persistent_h128)
	need=(utils.h params.h defines.h sm90/decode/sparse_fp8/splitkv_mla.h
	      sm90/decode/sparse_fp8/splitkv_mla.cuh sm90/decode/sparse_fp8/config.h
	      smxx/decode/combine/combine.cu smxx/decode/get_decoding_sched_meta/get_decoding_sched_meta.cu
	      kerutils/include/kerutils/kerutils.cuh)
	for o in "${objs[@]}"; do need+=("sm90/decode/sparse_fp8/instantiations/$o.cu"); done
	inc=(-I "$here/kernels" -I "$fmla/csrc" -I "$fmla/csrc/kerutils/include" -I "$fmla/csrc/sm90")
elif [ -d "$fmla/csrc/sm90/decode/dense" ]; then
	layout=current src=$here/kernels/flashmla/flashmla_plugin.cu std=c++20
	need=(utils.h params.h sm90/decode/dense/splitkv_mla.cuh sm90/decode/dense/config.h
	      sm90/decode/dense/traits.h smxx/decode/combine/combine.cu
	      smxx/decode/get_decoding_sched_meta/get_decoding_sched_meta.cu
	      kerutils/include/kerutils/kerutils.cuh)
	inc=(-I "$here/kernels" -I "$fmla/csrc" -I "$fmla/csrc/kerutils/include" -I "$fmla/csrc/sm90")
elif [ -d "$fmla/csrc/kernels" ]; then
	layout=9edee0c src=$here/kernels/flashmla/flashmla_9edee0c_plugin.cu std=c++17
	need=(kernels/get_mla_metadata.cu kernels/mla_combine.cu kernels/splitkv_mla.cu kernels/params.h
	      kernels/utils.h kernels/config.h kernels/traits.h)
	inc=(-I "$here/kernels" -I "$fmla/csrc")
else
	echo "build_flashmla.sh: '$fmla' has neither csrc/sm90/decode/dense (FlashMLA main) nor" \
	     "csrc/kernels (9edee0c)" >&2
	exit 1
fi
for f in "${need[@]}"; do
	[ -f "$fmla/csrc/$f" ] || {
		echo "build_flashmla.sh: '$fmla/csrc/$f' missing ($layout layout)" >&2
		exit 1
	}
done
[ -f "$cutlass/include/cute/tensor.hpp" ] || {
	echo "build_flashmla.sh: '$cutlass/include/cute/tensor.hpp' missing: CUTLASS_DIR must hold" \
	     "CUTLASS's include/ (the commit FlashMLA pins)" >&2
	exit 1
}
[ -x "$NVCC" ] || { echo "build_flashmla.sh: nvcc not found (set NVCC)" >&2; exit 1; }
inc+=(-I "$cutlass/include")
[ -d "$cutlass/tools/util/include" ] && inc+=(-I "$cutlass/tools/util/include")
mkdir -p "$(dirname "$out")"

echo "build_flashmla.sh: $("$NVCC" --version | tail -1)"
echo "build_flashmla.sh: $layout layout, $src"
[ -e "$fmla/.git" ] && echo "build_flashmla.sh: FlashMLA $(git -C "$fmla" rev-parse --short HEAD 2>/dev/null || echo '?')"
log=$(mktemp)
tmp=$(mktemp -d)
trap 'rm -rf "$log" "$tmp"' EXIT
# FlashMLA's nvcc flags (setup.py), for every translation unit (the commas are nvcc's)
# shellcheck disable=SC2054
flags=("-std=$std" -O3 -DNDEBUG -D_USE_MATH_DEFINES -DFLASH_MLA_DISABLE_FP16
	-gencode=arch=compute_90a,code=sm_90a
	-Wno-deprecated-declarations
	-U__CUDA_NO_HALF_OPERATORS__ -U__CUDA_NO_HALF_CONVERSIONS__ -U__CUDA_NO_HALF2_OPERATORS__
	-U__CUDA_NO_BFLOAT16_CONVERSIONS__
	--expt-relaxed-constexpr --expt-extended-lambda --use_fast_math
	--ptxas-options=-v,--register-usage-level=10,-warn-spills,-warn-lmem-usage
	--threads "${NVCC_THREADS:-2}"
	-Xcompiler=-fPIC,-fvisibility=hidden)
if [ $sparse = 0 ]; then
	set -x
	"$NVCC" "${flags[@]}" -shared -cudart=static "${inc[@]}" "$src" -o "$out" 2>&1 | tee "$log"
	{ set +x; } 2>/dev/null
else
	# one object per source, JOBS at a time; each job's output in its own log, then all in $log
	compile() { # OBJ SRC [-D...]
		local o=$1 s=$2
		shift 2
		echo "+ $NVCC ${flags[*]} $* ${inc[*]} -c $s -o $o"
		"$NVCC" "${flags[@]}" "$@" "${inc[@]}" -c "$s" -o "$o"
	}
	srcs=("$src") defs=("") ofiles=("$tmp/0.o")
	for i in "${!objs[@]}"; do
		srcs+=("$here/kernels/flashmla/flashmla_sparse_unit.cu") defs+=("-DFMLA_UNIT=${objs[$i]}")
		ofiles+=("$tmp/$((i + 1)).o")
	done
	jobs=${JOBS:-1} pids=() failed=0
	for i in "${!srcs[@]}"; do
		compile "${ofiles[$i]}" "${srcs[$i]}" ${defs[$i]:+"${defs[$i]}"} >"$tmp/$i.log" 2>&1 &
		pids+=($!)
		if [ ${#pids[@]} -ge "$jobs" ]; then
			wait "${pids[0]}" || failed=1
			pids=("${pids[@]:1}")
		fi
	done
	for p in "${pids[@]}"; do wait "$p" || failed=1; done
	for i in "${!srcs[@]}"; do cat "$tmp/$i.log"; done | tee "$log"
	[ $failed = 0 ] || { echo "build_flashmla.sh: compiling failed (see above)" >&2; exit 1; }
	set -x
	"$NVCC" -shared -cudart=static -gencode=arch=compute_90a,code=sm_90a "${ofiles[@]}" -o "$out"
	{ set +x; } 2>/dev/null
fi
# ptxas -v, per kernel: "Compiling entry function 'X'", its stack/spill line, "Used N registers".
echo "build_flashmla.sh: ptxas resource usage (sm_90a):"
awk '/Compiling entry function/ { match($0, /'"'"'[^'"'"']*'"'"'/); fn = substr($0, RSTART + 1, RLENGTH - 2) }
     /bytes stack frame/ { stack = $0; sub(/^ */, "", stack) }
     /Used [0-9]+ registers/ { use = $0; sub(/^.*ptxas info *: */, "", use); print fn "\t" use " | " stack }' "$log" |
while IFS=$'\t' read -r fn rest; do
	name=$(c++filt -p "$fn" 2>/dev/null || echo "$fn")
	name=${name//sm90::decode::sparse_fp8::/}
	printf '  %s\n      %s\n' "${name:0:110}" "$rest"
done
if grep -Eq '[1-9][0-9]* bytes spill' "$log"; then
	echo "build_flashmla.sh: warning: ptxas reports spills (see above)" >&2
fi
# Reproducible: nvcc names its temporary files after its process id (tmpxft_<pid>_...), and that
# name lands in the symbol table (the static initializer and the file symbol), so two builds of
# the same sources differed in 8 bytes (2026-12-04). The plans and records bind the plugin's
# sha256: without the symbol table a rebuild from the same sources, nvcc and host compiler gives
# the same file, which anyone can check against a record. The dynamic symbols the harness looks up
# stay.
strip --strip-all "$out"
nm -D --defined-only "$out" | grep -q ' mla_decode_plugin$' || {
	echo "build_flashmla.sh: '$out' does not export mla_decode_plugin" >&2
	exit 1
}
echo "build_flashmla.sh: wrote $out ($(du -h "$out" | cut -f1), sha256 $(sha256sum "$out" | cut -c1-16)...)"
