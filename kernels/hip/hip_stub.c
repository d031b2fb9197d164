/*
 * hip_stub.c - built instead of the GPU sources when no GPU toolchain is configured (VS_GPU=OFF or
 * none found): the HIP implementations keep their descriptors and config spaces (plans can still
 * be emitted), but launching one returns MLA_ENODEVICE (harness/gpu/gpu_stub.c refuses to open a
 * GPU likewise).
 */
#include "hip_impls.h"

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

int mla_hip_flash_sparse_launch(const struct mla_decode_args *args, const struct mla_decode_config *cfg)
{
	(void)args;
	(void)cfg;
	return MLA_ENODEVICE;
}
