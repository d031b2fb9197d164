/*
 * fault_kernels.hip - test implementations that misbehave on the GPU, for the crash-isolation test
 * (tests/gpu/gpu_isolation.c): one writes through an illegal address, one spins far longer than the
 * worker's time limit (and stops by itself after about 60 s, so a leaked launch cannot hold the GPU).
 */
#include "../../kernels/hip/hip_compat.h"
#include "../../kernels/mla_decode.h"

__global__ void fault_illegal_address(float *lse)
{
	float *bad = (float *)(uintptr_t)0x10; /* never mapped */

	bad[vs_tid()] = lse[0]; /* not threadIdx: no device library on AMD (hip_compat.h) */
}

__global__ void fault_spin(float *lse, long long cycles)
{
	long long t0 = clock64();

	while (clock64() - t0 < cycles)
		;
	lse[0] = 0.0f;
}

extern "C" int fault_test_launch(const struct mla_decode_args *a, int kind)
{
	if (kind == 0)
		hipLaunchKernelGGL(fault_illegal_address, dim3(1), dim3(32), 0, (hipStream_t)a->stream, a->lse);
	else
		hipLaunchKernelGGL(fault_spin, dim3(1), dim3(1), 0, (hipStream_t)a->stream, a->lse,
				   60LL * 2000 * 1000 * 1000);
	return hipGetLastError() == hipSuccess ? MLA_OK : MLA_EDEVICE;
}
