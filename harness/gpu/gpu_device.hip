/*
 * gpu_device.hip - the GPU as a vs_device (harness/device.h) through the HIP runtime (HIP names
 * mapped to CUDA on NVIDIA by kernels/hip/hip_compat.h). Host code only; harness side: the
 * kernels layer includes nothing from harness/.
 *
 * One non-blocking stream per device; uploads and downloads are enqueued on it and waited for, so
 * they are ordered after any work the harness enqueued before. flush_llc writes a device buffer of
 * twice the last-level cache (L2 from the device properties; 256 MB on gfx942, whose Infinity Cache
 * the properties do not report). Timers are a pair of events around the timed region. Graphs come
 * from stream capture (thread-local mode) and are instantiated at once.
 */
#include "gpu_check.h"

extern "C" {
#include "device.h"
}

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace {

struct GpuPriv {
	int ordinal;
	hipStream_t stream;
	hipEvent_t ev0, ev1;
	void *flush;
	size_t flush_bytes;
	unsigned flush_value;
};

GpuPriv *priv(struct vs_device *d) { return (GpuPriv *)d->priv; }

int gpu_alloc(struct vs_device *d, void **ptr, size_t bytes)
{
	void *p = nullptr;
	hipError_t e;

	(void)d;
	e = hipMalloc(&p, bytes ? bytes : 256);
	if (e != hipSuccess) {
		(void)hipGetLastError(); /* clear the (non-sticky) allocation error */
		return vs_error(VS_ENOMEM, "hipMalloc of %zu bytes failed: %s (%d)", bytes, hipGetErrorString(e),
				(int)e);
	}
	*ptr = p;
	return 0;
}

void gpu_free(struct vs_device *d, void *ptr)
{
	(void)d;
	if (ptr)
		(void)hipFree(ptr);
}

int gpu_upload(struct vs_device *d, void *dst, const void *src, size_t bytes)
{
	HIP_CHECK(hipMemcpyAsync(dst, src, bytes, hipMemcpyHostToDevice, priv(d)->stream));
	HIP_CHECK(hipStreamSynchronize(priv(d)->stream));
	return 0;
}

int gpu_download(struct vs_device *d, void *dst, const void *src, size_t bytes)
{
	HIP_CHECK(hipMemcpyAsync(dst, src, bytes, hipMemcpyDeviceToHost, priv(d)->stream));
	HIP_CHECK(hipStreamSynchronize(priv(d)->stream));
	return 0;
}

int gpu_fill(struct vs_device *d, void *dst, int byte, size_t bytes)
{
	HIP_CHECK(hipMemsetAsync(dst, byte, bytes, priv(d)->stream));
	return 0;
}

int gpu_flush_llc(struct vs_device *d)
{
	GpuPriv *p = priv(d);

	/* A value that changes every time, so no layer can skip the write. */
	p->flush_value = (p->flush_value + 1) & 0xffu;
	HIP_CHECK(hipMemsetAsync(p->flush, (int)p->flush_value, p->flush_bytes, p->stream));
	return 0;
}

int gpu_timer_begin(struct vs_device *d)
{
	HIP_CHECK(hipEventRecord(priv(d)->ev0, priv(d)->stream));
	return 0;
}

int gpu_timer_end(struct vs_device *d, double *ms)
{
	GpuPriv *p = priv(d);
	float t = 0.f;

	HIP_CHECK(hipEventRecord(p->ev1, p->stream));
	HIP_CHECK(hipEventSynchronize(p->ev1));
	HIP_CHECK(hipEventElapsedTime(&t, p->ev0, p->ev1));
	*ms = t;
	return 0;
}

int gpu_synchronize(struct vs_device *d)
{
	HIP_CHECK(hipStreamSynchronize(priv(d)->stream));
	return 0;
}

int gpu_graph_begin(struct vs_device *d)
{
	HIP_CHECK(hipStreamBeginCapture(priv(d)->stream, hipStreamCaptureModeThreadLocal));
	return 0;
}

int gpu_graph_end(struct vs_device *d, void **graph)
{
	hipGraph_t g = nullptr;
	hipGraphExec_t exec = nullptr;
	hipError_t e;

	HIP_CHECK(hipStreamEndCapture(priv(d)->stream, &g));
	e = hipGraphInstantiateWithFlags(&exec, g, 0);
	(void)hipGraphDestroy(g);
	if (e != hipSuccess)
		return vs_error(VS_EDEVICE, "hipGraphInstantiateWithFlags failed: %s (%d)", hipGetErrorString(e),
				(int)e);
	*graph = (void *)exec;
	return 0;
}

int gpu_graph_launch(struct vs_device *d, void *graph)
{
	HIP_CHECK(hipGraphLaunch((hipGraphExec_t)graph, priv(d)->stream));
	return 0;
}

void gpu_graph_free(struct vs_device *d, void *graph)
{
	(void)d;
	if (graph)
		(void)hipGraphExecDestroy((hipGraphExec_t)graph);
}

int gpu_clocks(struct vs_device *d, int *sm_mhz, int *mem_mhz)
{
	/* Current clocks need NVML / ROCm SMI, which this build does not link. */
	(void)d;
	*sm_mhz = -1;
	*mem_mhz = -1;
	return 0;
}

void gpu_release(struct vs_device *d)
{
	GpuPriv *p = priv(d);

	if (!p)
		return;
	if (p->stream)
		(void)hipStreamSynchronize(p->stream);
	if (p->flush)
		(void)hipFree(p->flush);
	if (p->ev0)
		(void)hipEventDestroy(p->ev0);
	if (p->ev1)
		(void)hipEventDestroy(p->ev1);
	if (p->stream)
		(void)hipStreamDestroy(p->stream);
	free(p);
	d->priv = nullptr;
}

const struct vs_device_ops gpu_ops = {
	gpu_alloc,       gpu_free,        gpu_upload,     gpu_download,    gpu_fill,
	gpu_flush_llc,   gpu_timer_begin, gpu_timer_end,  gpu_synchronize, gpu_graph_begin,
	gpu_graph_end,   gpu_graph_launch, gpu_graph_free, gpu_clocks,     gpu_release,
};

int fill_info(struct vs_device_info *info, int ordinal)
{
	hipDeviceProp_t prop;
	int drv = 0, rt = 0, clk = 0, mclk = 0;

	HIP_CHECK(hipGetDeviceProperties(&prop, ordinal));
	HIP_CHECK(hipDriverGetVersion(&drv));
	HIP_CHECK(hipRuntimeGetVersion(&rt));
	HIP_CHECK(hipDeviceGetAttribute(&clk, hipDeviceAttributeClockRate, ordinal));
	HIP_CHECK(hipDeviceGetAttribute(&mclk, hipDeviceAttributeMemoryClockRate, ordinal));
	snprintf(info->backend, sizeof(info->backend), "hip");
	snprintf(info->name, sizeof(info->name), "%.*s", (int)sizeof(info->name) - 1, prop.name);
#if defined(VS_PLATFORM_AMD)
	{
		/* "gfx942:sramecc+:xnack-" -> "gfx942" */
		size_t n = strcspn(prop.gcnArchName, ":");

		snprintf(info->arch, sizeof(info->arch), "%.*s", (int)n, prop.gcnArchName);
	}
	snprintf(info->driver, sizeof(info->driver), "hip driver %d runtime %d", drv, rt);
	/* MI300X's last level is the 256 MB Infinity Cache, which l2CacheSize does not include. */
	info->llc_bytes = !strncmp(info->arch, "gfx94", 5) ? (256ull << 20) : (uint64_t)prop.l2CacheSize;
#else
	snprintf(info->arch, sizeof(info->arch), "sm_%d%d", prop.major, prop.minor);
	snprintf(info->driver, sizeof(info->driver), "cuda driver %d.%d runtime %d.%d", drv / 1000,
		 (drv % 1000) / 10, rt / 1000, (rt % 1000) / 10);
	info->llc_bytes = (uint64_t)prop.l2CacheSize;
#endif /* platform */
	info->compute_units = prop.multiProcessorCount;
	info->clock_mhz = clk / 1000;      /* kHz */
	info->mem_clock_mhz = mclk / 1000; /* kHz */
	info->mem_bytes = (uint64_t)prop.totalGlobalMem;
	return 0;
}

} /* namespace */

extern "C" int vs_device_open_gpu(struct vs_device *d, int ordinal)
{
	GpuPriv *p;
	int count = 0, rc;
	hipError_t e;

	memset(d, 0, sizeof(*d));
	e = hipGetDeviceCount(&count);
	if (e != hipSuccess) {
		(void)hipGetLastError();
		return vs_error(VS_EDEVICE, "hipGetDeviceCount failed: %s (%d): no usable GPU", hipGetErrorString(e),
				(int)e);
	}
	if (ordinal < 0 || ordinal >= count)
		return vs_error(VS_EDEVICE, "no GPU number %d (the runtime sees %d)", ordinal, count);
	HIP_CHECK(hipSetDevice(ordinal));
	p = (GpuPriv *)calloc(1, sizeof(*p));
	if (!p)
		return vs_error(VS_ENOMEM, "out of memory");
	p->ordinal = ordinal;
	d->priv = p;
	d->ops = &gpu_ops;
	rc = fill_info(&d->info, ordinal);
	if (rc)
		goto fail;
	rc = VS_EDEVICE;
	e = hipStreamCreateWithFlags(&p->stream, hipStreamNonBlocking);
	if (e != hipSuccess) {
		vs_error(VS_EDEVICE, "hipStreamCreateWithFlags failed: %s (%d)", hipGetErrorString(e), (int)e);
		goto fail;
	}
	e = hipEventCreate(&p->ev0);
	if (e == hipSuccess)
		e = hipEventCreate(&p->ev1);
	if (e != hipSuccess) {
		vs_error(VS_EDEVICE, "hipEventCreate failed: %s (%d)", hipGetErrorString(e), (int)e);
		goto fail;
	}
	p->flush_bytes = 2 * (size_t)(d->info.llc_bytes ? d->info.llc_bytes : (64ull << 20));
	rc = gpu_alloc(d, &p->flush, p->flush_bytes);
	if (rc)
		goto fail;
	rc = gpu_fill(d, p->flush, 0, p->flush_bytes);
	if (rc)
		goto fail;
	d->stream = (void *)p->stream;
	return 0;
fail:
	gpu_release(d);
	memset(d, 0, sizeof(*d));
	return rc;
}
