#!/bin/bash
# tilelang_site.sh OUT.tar.xz - here (not on the device: it has no network), the TileLang 0.1.15
# site-packages folder the device's Python 3.12 imports (tools/gpu/device_env.sh unpacks it into
# /tmp/tlsite and puts it on PYTHONPATH): the wheels of tilelang and of what it needs beyond the
# device's torch, unzipped, trimmed and stripped to fit the device tool's 64 MiB carry beside the
# tree and the other carried files (34.2 MB on 2026-12-03, 36.6 MB before the src trims below).
#
# Trimmed, because nothing reads them at run time (tilelang/env.py: the JIT compiles with
# -I tilelang/src (tl_templates/ only) and -I 3rdparty/cutlass/include; TVM's Python comes from
# 3rdparty/tvm/python, its C++ is in lib/libtvm*.so):
#   tilelang/3rdparty/cutlass/tools, tilelang/3rdparty/tvm/src, tilelang/src/* but tl_templates,
#   z3_solver-*.data (headers and a second copy of libz3), z3/lib/libz3.so.4.15 (a symlink to
#   libz3.so instead of the same 19 MB twice).
set -eu
out=${1:?usage: tilelang_site.sh OUT.tar.xz}
out=$(realpath -m "$out") # the packing below runs from a temporary folder
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pip download -q -d "$tmp/whl" --only-binary=:all: --python-version 3.12 --platform manylinux_2_28_x86_64 \
	--no-deps tilelang==0.1.15 'apache-tvm-ffi>=0.1.11,<0.1.13' torch-c-dlpack-ext
pip download -q -d "$tmp/whl" --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
	--no-deps 'z3-solver<4.15.5'
mkdir "$tmp/site"
for w in "$tmp"/whl/*.whl; do
	unzip -q -o "$w" -d "$tmp/site"
done
cd "$tmp/site"
rm -rf z3_solver-*.data tilelang/3rdparty/cutlass/tools tilelang/3rdparty/tvm/src
find tilelang/src -mindepth 1 -maxdepth 1 ! -name tl_templates -exec rm -rf {} +
find . -name '*.so*' -type f -exec strip --strip-unneeded {} +
rm z3/lib/libz3.so.4.15 && ln -s libz3.so z3/lib/libz3.so.4.15
tar -cf - . | xz -9e -T1 >"$out.tmp"
mv "$out.tmp" "$out"
ls -l "$out"
