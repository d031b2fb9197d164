/*
 * gpu_stub.c - built instead of gpu_device.hip when no GPU toolchain is configured (VS_GPU=OFF or
 * none found): opening a GPU gives a clear error (kernels/hip/hip_stub.c does the same for the
 * HIP implementations' launches).
 */
#include "device.h"
#include "vs_error.h"

int vs_device_open_gpu(struct vs_device *d, int ordinal)
{
	(void)d;
	(void)ordinal;
	return vs_error(VS_EUNSUPPORTED,
			"this build has no GPU backend (configure with -DVS_GPU=NVIDIA or AMD on a machine "
			"with nvcc or ROCm)");
}
