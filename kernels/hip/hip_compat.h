/*
 * hip_compat.h - the one place that includes a GPU runtime (docs/DESIGN.md "HIP portability").
 *
 * AMD (__HIP_PLATFORM_AMD__): hip/hip_runtime.h. NVIDIA (__CUDACC__): cuda_runtime.h, with the HIP
 * names this project uses mapped to CUDA by hand (Debian's HIP 5.2 NVIDIA headers do not compile
 * against CUDA 13). Everything else in kernels/hip/ speaks HIP names and the vs_* device helpers
 * below, never cuda* or __builtin_amdgcn_* directly (mma.h, the matrix-core layer, is the other
 * exception).
 *
 * Device helpers (both platforms):
 *   VS_WARP            threads per warp (32) / wavefront (64), a compile-time constant
 *   vs_tid()           threadIdx.x;  vs_bid_x/y/z() blockIdx;  vs_lane()  lane in the warp
 *   vs_syncthreads()   workgroup barrier with shared-memory ordering
 *   vs_shfl_xor(v, m)  exchange a float / int with lane ^ m (whole warp participates)
 *   vs_shfl_i(v, src)  an int from lane src (whole warp participates)
 *   vs_exp2f, vs_log2f hardware base-2 exponential / logarithm (no device-library call: the gfx942
 *                      gate links with no device libraries and rejects undefined symbols)
 * On AMD, device code must not use threadIdx / __syncthreads / expf from Debian's HIP 5.2 headers:
 * they call __ockl_* and __atomic_work_item_fence from the device libraries.
 *
 * Host side: HIP_CHECK_RET(call, code) reports "<call> failed: <error string> (<code>)" through
 * MLA_HIP_REPORT and returns code (kernels return their own codes: launch() returns MLA_EDEVICE).
 * The kernels layer includes nothing from harness/: MLA_HIP_REPORT prints the line on stderr
 * unless the includer defines it first (harness/gpu/gpu_check.h routes it to vs_error()).
 */
#ifndef MLA_HIP_COMPAT_H
#define MLA_HIP_COMPAT_H

#include <stddef.h>
#include <stdint.h>

#include <stdio.h>

#if defined(__HIP_PLATFORM_AMD__)
/* ------------------------------------------------------------------------------------------ AMD */
#include <hip/hip_runtime.h>

#define VS_PLATFORM_AMD 1
#define VS_WARP 64
#define VS_DEV __device__ __forceinline__

VS_DEV int vs_tid(void) { return (int)__builtin_amdgcn_workitem_id_x(); }
VS_DEV int vs_bid_x(void) { return (int)__builtin_amdgcn_workgroup_id_x(); }
VS_DEV int vs_bid_y(void) { return (int)__builtin_amdgcn_workgroup_id_y(); }
VS_DEV int vs_bid_z(void) { return (int)__builtin_amdgcn_workgroup_id_z(); }
VS_DEV int vs_lane(void)
{
	return (int)__builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u));
}

VS_DEV void vs_syncthreads(void)
{
	__builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
	__builtin_amdgcn_s_barrier();
	__builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

VS_DEV int vs_shfl_xor_i(int v, int mask)
{
	return __builtin_amdgcn_ds_bpermute((vs_lane() ^ mask) << 2, v);
}

VS_DEV float vs_shfl_xor(float v, int mask)
{
	return __builtin_bit_cast(float, vs_shfl_xor_i(__builtin_bit_cast(int, v), mask));
}

VS_DEV int vs_shfl_i(int v, int src) { return __builtin_amdgcn_ds_bpermute(src << 2, v); }

VS_DEV float vs_exp2f(float x) { return __builtin_amdgcn_exp2f(x); }
VS_DEV float vs_log2f(float x) { return __builtin_amdgcn_logf(x); }

#elif defined(__CUDACC__)
/* --------------------------------------------------------------------------------------- NVIDIA */
#include <cuda_runtime.h>

#define VS_PLATFORM_NVIDIA 1
#define VS_WARP 32
#define VS_DEV __device__ __forceinline__

typedef cudaError_t hipError_t;
typedef cudaStream_t hipStream_t;
typedef cudaEvent_t hipEvent_t;
typedef cudaGraph_t hipGraph_t;
typedef cudaGraphExec_t hipGraphExec_t;
typedef struct cudaDeviceProp hipDeviceProp_t;

#define hipSuccess cudaSuccess
#define hipErrorNoDevice cudaErrorNoDevice
#define hipGetErrorString cudaGetErrorString
#define hipGetLastError cudaGetLastError
#define hipGetDeviceCount cudaGetDeviceCount
#define hipSetDevice cudaSetDevice
#define hipGetDeviceProperties cudaGetDeviceProperties
#define hipDeviceGetAttribute cudaDeviceGetAttribute
#define hipDeviceAttributeClockRate cudaDevAttrClockRate
#define hipDeviceAttributeMemoryClockRate cudaDevAttrMemoryClockRate
#define hipDriverGetVersion cudaDriverGetVersion
#define hipRuntimeGetVersion cudaRuntimeGetVersion
#define hipMalloc cudaMalloc
#define hipFree cudaFree
#define hipMemcpy cudaMemcpy
#define hipMemcpyAsync cudaMemcpyAsync
#define hipMemcpyHostToDevice cudaMemcpyHostToDevice
#define hipMemcpyDeviceToHost cudaMemcpyDeviceToHost
#define hipMemcpyDeviceToDevice cudaMemcpyDeviceToDevice
#define hipMemsetAsync cudaMemsetAsync
#define hipStreamCreateWithFlags cudaStreamCreateWithFlags
#define hipStreamNonBlocking cudaStreamNonBlocking
#define hipStreamDestroy cudaStreamDestroy
#define hipStreamSynchronize cudaStreamSynchronize
#define hipEventCreate cudaEventCreate
#define hipEventRecord cudaEventRecord
#define hipEventSynchronize cudaEventSynchronize
#define hipEventElapsedTime cudaEventElapsedTime
#define hipEventDestroy cudaEventDestroy
#define hipStreamBeginCapture cudaStreamBeginCapture
#define hipStreamCaptureModeThreadLocal cudaStreamCaptureModeThreadLocal
#define hipStreamEndCapture cudaStreamEndCapture
#define hipGraphInstantiateWithFlags cudaGraphInstantiateWithFlags
#define hipGraphLaunch cudaGraphLaunch
#define hipGraphDestroy cudaGraphDestroy
#define hipGraphExecDestroy cudaGraphExecDestroy
#define hipFuncSetAttribute cudaFuncSetAttribute
#define hipFuncAttributeMaxDynamicSharedMemorySize cudaFuncAttributeMaxDynamicSharedMemorySize
#define hipLaunchKernelGGL(kernel, grid, block, smem, stream, ...) \
	kernel<<<(grid), (block), (smem), (stream)>>>(__VA_ARGS__)

VS_DEV int vs_tid(void) { return (int)threadIdx.x; }
VS_DEV int vs_bid_x(void) { return (int)blockIdx.x; }
VS_DEV int vs_bid_y(void) { return (int)blockIdx.y; }
VS_DEV int vs_bid_z(void) { return (int)blockIdx.z; }
VS_DEV int vs_lane(void) { return (int)(threadIdx.x & 31u); }
VS_DEV void vs_syncthreads(void) { __syncthreads(); }
VS_DEV int vs_shfl_xor_i(int v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
VS_DEV float vs_shfl_xor(float v, int mask) { return __shfl_xor_sync(0xffffffffu, v, mask); }
VS_DEV int vs_shfl_i(int v, int src) { return __shfl_sync(0xffffffffu, v, src); }

VS_DEV float vs_exp2f(float x)
{
	float y;

	asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
	return y;
}

VS_DEV float vs_log2f(float x)
{
	float y;

	asm("lg2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
	return y;
}

#else
#error "hip_compat.h: compile with hipcc/clang -x hip (__HIP_PLATFORM_AMD__) or nvcc (__CUDACC__)"
#endif /* platform */

/* --------------------------------------------------------------------------------- both platforms */

#if defined(VS_PLATFORM_AMD)
typedef unsigned int vs_u32x4 __attribute__((ext_vector_type(4)));
typedef float vs_f32x4 __attribute__((ext_vector_type(4)));
VS_DEV float vs_fmaxf(float a, float b) { return __builtin_fmaxf(a, b); }
#else
typedef uint4 vs_u32x4;
typedef float4 vs_f32x4;
VS_DEV float vs_fmaxf(float a, float b) { return fmaxf(a, b); }
#endif /* 16-byte vectors */

/** Butterfly reductions over the whole warp / wavefront (every lane gets the result). */
VS_DEV float vs_warp_max(float v)
{
#pragma unroll
	for (int m = VS_WARP / 2; m > 0; m >>= 1)
		v = vs_fmaxf(v, vs_shfl_xor(v, m));
	return v;
}

VS_DEV float vs_warp_sum(float v)
{
#pragma unroll
	for (int m = VS_WARP / 2; m > 0; m >>= 1)
		v += vs_shfl_xor(v, m);
	return v;
}

/** log2(e) and ln(2): the softmax runs in base 2 with log2(e) folded into the scale. */
#define VS_LOG2E 1.4426950408889634f
#define VS_LN2 0.6931471805599453f

#ifndef MLA_HIP_REPORT
/** Say which runtime call failed (its text, the runtime's error string and code), on stderr. */
#define MLA_HIP_REPORT(call_text, err)                                                             \
	fprintf(stderr, "validate_skill: error: %s failed: %s (%d)\n", (call_text), hipGetErrorString(err), \
		(int)(err))
#endif /* MLA_HIP_REPORT */

/** Report a failed runtime call (name, error string, code) and return code from the caller. */
#define HIP_CHECK_RET(call, code)                                                                  \
	do {                                                                                       \
		hipError_t vs_e_ = (call);                                                         \
		if (vs_e_ != hipSuccess)                                                           \
			return (MLA_HIP_REPORT(#call, vs_e_), (code));                             \
	} while (0)

#endif /* MLA_HIP_COMPAT_H */
