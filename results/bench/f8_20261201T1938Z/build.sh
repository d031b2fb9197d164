#!/bin/bash
# build.sh SRC_TREE VARIANT "FLAGS" ... : gpu_parity per variant into .dev/f8/bin/gpu_parity_VARIANT
set -e
SRC=$1; shift
B=/work/main/build-rel
O=/work/f8obj; mkdir -p $O /work/main/.dev/f8/bin
while [ $# -gt 0 ]; do
	v=$1; f=$2; shift 2
	/usr/local/cuda/bin/nvcc -x cu -DMLA_HAVE_WGMMA=1 -D_GNU_SOURCE -DNDEBUG $f -gencode=arch=compute_90a,code=sm_90a -O3 -std=c++17 \
		-I$SRC/kernels -I$SRC/kernels/hip -Xptxas=-v,-warn-spills -c $SRC/kernels/hip/flash.hip -o $O/flash.hip.o 2>$O/ptxas_$v.txt
	cp $B/kernels/hip/libvs_gpu.a $O/libvs_gpu_$v.a
	(cd $O && cp flash.hip.o flash.hip.o.tmp && ar r libvs_gpu_$v.a flash.hip.o >/dev/null)
	sed "s#../../kernels/hip/libvs_gpu.a#$O/libvs_gpu_$v.a#g" $B/tests/gpu/CMakeFiles/gpu_parity.dir/linkLibs.rsp >$O/link_$v.rsp
	(cd $B/tests/gpu && /usr/bin/g++ CMakeFiles/gpu_parity.dir/gpu_parity.c.o -o /work/main/.dev/f8/bin/gpu_parity_$v \
		@$O/link_$v.rsp \
		-L/usr/local/cuda/targets/x86_64-linux/lib/stubs -L/usr/local/cuda/targets/x86_64-linux/lib)
	grep -A1 "mla_flash_wgmma_tILi16ELb1" $O/ptxas_$v.txt | grep -o "Used [0-9]* registers\|[0-9]* bytes spill stores" | tr '\n' ' '; echo " <- $v"
done
