/*
 * gpu_check.h - the GPU runtime for the harness's GPU device (gpu_device.hip): hip_compat.h (the
 * one place that includes a GPU runtime, kernels/hip) with its failure reports routed to
 * vs_error(), and HIP_CHECK(call), which returns VS_EDEVICE from the enclosing function after
 * reporting "<call> failed: <error string> (<code>)".
 */
#ifndef VS_GPU_CHECK_H
#define VS_GPU_CHECK_H

#ifdef __cplusplus
extern "C" {
#endif
#include "vs_error.h"
#ifdef __cplusplus
}
#endif

#define MLA_HIP_REPORT(call_text, err)                                                                                 \
	vs_error(VS_EDEVICE, "%s failed: %s (%d)", (call_text), hipGetErrorString(err), (int)(err))
#include "hip_compat.h"

/** HIP_CHECK_RET returning VS_EDEVICE (harness functions). */
#define HIP_CHECK(call) HIP_CHECK_RET(call, VS_EDEVICE)

#endif /* VS_GPU_CHECK_H */
