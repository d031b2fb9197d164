/*
 * hip_stub.c - built instead of the GPU sources when no GPU toolchain is configured (VS_GPU=OFF or
 * none found): the HIP implementations keep their descriptors and config spaces (plans can still
 * be emitted), but launching one or opening a GPU gives a clear error.
 */
#include "hip_impls.h"
#include "../../harness/device.h"
#include "../../harness/vs_error.h"

int mla_hip_baseline_launch(const struct mla_decode_args *args, const struct mla_decode_config *cfg)
{
	(void)args;
	(void)cfg;
	return MLA_ENODEVICE;
}

int mla_hip_flash_launch(const struct mla_decode_args *args, const struct mla_decode_config *cfg)
{
	(void)args;
	(void)cfg;
	return MLA_ENODEVICE;
}

int vs_device_open_gpu(struct vs_device *d, int ordinal)
{
	(void)d;
	(void)ordinal;
	return vs_error(VS_EUNSUPPORTED,
			"this build has no GPU backend (configure with -DVS_GPU=NVIDIA or AMD on a machine "
			"with nvcc or ROCm)");
}
