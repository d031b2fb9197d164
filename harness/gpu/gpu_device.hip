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
 *
 * Sparse buffers (alloc_sparse) use the virtual memory management calls: a reserved address range
 * with physical allocations mapped at its first granule and over the stored range. On AMD these
 * are HIP's hipMem* (Debian's HIP 5.2 declares them); on NVIDIA they exist only in the driver API
 * (cuMem*), which hip_compat.h does not map and this library does not link (cudart_static loads
 * the driver at run time): their entry points come from cudaGetDriverEntryPointByVersion, so a
 * binary built here still starts where no driver is installed.
 */
#include "gpu_check.h"

extern "C" {
#include "device.h"
}

#if !defined(VS_PLATFORM_AMD)
#include <cuda.h>
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

namespace {

#if defined(VS_PLATFORM_AMD) && defined(VS_HIP_NO_VMM)
typedef void *VmmHandle;
#elif defined(VS_PLATFORM_AMD)
typedef hipMemGenericAllocationHandle_t VmmHandle;
#else
typedef CUmemGenericAllocationHandle VmmHandle;
#endif

/* One sparse buffer: its reservation and the one or two physical allocations mapped into it. */
struct GpuSparse {
	void *base;
	size_t bytes;        /* the reservation */
	size_t off[2], n[2]; /* mapped spans (granule-aligned); n[1] 0 when one span covers both */
	VmmHandle h[2];
	GpuSparse *next;
};

struct GpuPriv {
	int ordinal;
	hipStream_t stream;
	hipEvent_t ev0, ev1;
	void *flush;
	size_t flush_bytes;
	unsigned flush_value;
	GpuSparse *sparse; /* live sparse buffers */
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

/* ---- virtual memory management: one set of calls per platform, failures as VS_EUNSUPPORTED ---- */

#if defined(VS_PLATFORM_AMD) && defined(VS_HIP_NO_VMM)

/*
 * A HIP runtime without the virtual memory calls (cmake/vs_hip.cmake checks that libamdhip64 exports
 * each one and defines VS_HIP_NO_VMM when one is missing): every sparse buffer is refused, and the
 * task takes the old layout (docs/DESIGN.md "Tasks and task dirs").
 */
int vmm_init(void)
{
	return vs_error(VS_EUNSUPPORTED, "this HIP runtime has no virtual memory calls (built with VS_HIP_NO_VMM)");
}
int vmm_granularity(size_t *, int) { return VS_EUNSUPPORTED; }
int vmm_reserve(void **, size_t, size_t) { return VS_EUNSUPPORTED; }
int vmm_create(VmmHandle *, size_t, int) { return VS_EUNSUPPORTED; }
int vmm_map(void *, size_t, VmmHandle, int) { return VS_EUNSUPPORTED; }
void vmm_unmap(void *, size_t) {}
void vmm_release(VmmHandle) {}
void vmm_free_range(void *, size_t) {}

#elif defined(VS_PLATFORM_AMD)

int vmm_fail(const char *call, hipError_t e)
{
	(void)hipGetLastError(); /* not sticky: clear it */
	return vs_error(VS_EUNSUPPORTED, "%s failed: %s (%d)", call, hipGetErrorString(e), (int)e);
}

#define VMM_CALL(name, call)                                                                                           \
	do {                                                                                                           \
		hipError_t vmm_e_ = (call);                                                                            \
		if (vmm_e_ != hipSuccess)                                                                              \
			return vmm_fail(name, vmm_e_);                                                                 \
	} while (0)

int vmm_init(void) { return 0; }

void vmm_prop(hipMemAllocationProp *prop, int ordinal)
{
	memset(prop, 0, sizeof(*prop));
	prop->type = hipMemAllocationTypePinned;
	prop->location.type = hipMemLocationTypeDevice;
	prop->location.id = ordinal;
}

int vmm_granularity(size_t *g, int ordinal)
{
	hipMemAllocationProp prop;

	vmm_prop(&prop, ordinal);
	VMM_CALL("hipMemGetAllocationGranularity",
		 hipMemGetAllocationGranularity(g, &prop, hipMemAllocationGranularityMinimum));
	return 0;
}

int vmm_reserve(void **p, size_t bytes, size_t align)
{
	VMM_CALL("hipMemAddressReserve", hipMemAddressReserve(p, bytes, align, nullptr, 0));
	return 0;
}

int vmm_create(VmmHandle *h, size_t bytes, int ordinal)
{
	hipMemAllocationProp prop;

	vmm_prop(&prop, ordinal);
	VMM_CALL("hipMemCreate", hipMemCreate(h, bytes, &prop, 0));
	return 0;
}

int vmm_map(void *p, size_t bytes, VmmHandle h, int ordinal)
{
	hipMemAccessDesc acc;

	VMM_CALL("hipMemMap", hipMemMap(p, bytes, 0, h, 0));
	memset(&acc, 0, sizeof(acc));
	acc.location.type = hipMemLocationTypeDevice;
	acc.location.id = ordinal;
	acc.flags = hipMemAccessFlagsProtReadWrite;
	VMM_CALL("hipMemSetAccess", hipMemSetAccess(p, bytes, &acc, 1));
	return 0;
}

void vmm_unmap(void *p, size_t bytes) { (void)hipMemUnmap(p, bytes); }
void vmm_release(VmmHandle h) { (void)hipMemRelease(h); }
void vmm_free_range(void *p, size_t bytes) { (void)hipMemAddressFree(p, bytes); }

#else /* NVIDIA: the driver API through its entry points */

struct DriverVmm {
	int loaded; /* 1 loaded, -1 failed (vmm_init's message is the reason) */
	char why[256];
	decltype(&cuGetErrorString) get_error_string;
	decltype(&cuMemGetAllocationGranularity) granularity;
	decltype(&cuMemAddressReserve) reserve;
	decltype(&cuMemAddressFree) address_free;
	decltype(&cuMemCreate) create;
	decltype(&cuMemRelease) release;
	decltype(&cuMemMap) map;
	decltype(&cuMemUnmap) unmap;
	decltype(&cuMemSetAccess) set_access;
};

DriverVmm cu_vmm;

int vmm_fail(const char *call, CUresult r)
{
	const char *text = nullptr;

	if (cu_vmm.get_error_string)
		cu_vmm.get_error_string(r, &text);
	return vs_error(VS_EUNSUPPORTED, "%s failed: %s (%d)", call, text ? text : "unknown error", (int)r);
}

#define VMM_CALL(name, call)                                                                                           \
	do {                                                                                                           \
		CUresult vmm_r_ = (call);                                                                              \
		if (vmm_r_ != CUDA_SUCCESS)                                                                            \
			return vmm_fail(name, vmm_r_);                                                                 \
	} while (0)

/* Resolve one entry point of the CUDA 12.0 ABI (the cuMem* calls are unchanged since 10.2). */
int vmm_entry(void **fn, const char *symbol)
{
	cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
	cudaError_t e = cudaGetDriverEntryPointByVersion(symbol, fn, 12000, cudaEnableDefault, &q);

	if (e != cudaSuccess || q != cudaDriverEntryPointSuccess || !*fn) {
		(void)cudaGetLastError();
		snprintf(cu_vmm.why, sizeof(cu_vmm.why),
			 "cudaGetDriverEntryPointByVersion(\"%s\") failed: %s (%d, query %d)", symbol,
			 cudaGetErrorString(e), (int)e, (int)q);
		return -1;
	}
	return 0;
}

int vmm_init(void)
{
	if (!cu_vmm.loaded) {
		int ok = !vmm_entry((void **)&cu_vmm.get_error_string, "cuGetErrorString") &&
			 !vmm_entry((void **)&cu_vmm.granularity, "cuMemGetAllocationGranularity") &&
			 !vmm_entry((void **)&cu_vmm.reserve, "cuMemAddressReserve") &&
			 !vmm_entry((void **)&cu_vmm.address_free, "cuMemAddressFree") &&
			 !vmm_entry((void **)&cu_vmm.create, "cuMemCreate") &&
			 !vmm_entry((void **)&cu_vmm.release, "cuMemRelease") &&
			 !vmm_entry((void **)&cu_vmm.map, "cuMemMap") &&
			 !vmm_entry((void **)&cu_vmm.unmap, "cuMemUnmap") &&
			 !vmm_entry((void **)&cu_vmm.set_access, "cuMemSetAccess");

		cu_vmm.loaded = ok ? 1 : -1;
	}
	if (cu_vmm.loaded < 0)
		return vs_error(VS_EUNSUPPORTED, "%s", cu_vmm.why);
	return 0;
}

void vmm_prop(CUmemAllocationProp *prop, int ordinal)
{
	memset(prop, 0, sizeof(*prop));
	prop->type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop->location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop->location.id = ordinal;
}

int vmm_granularity(size_t *g, int ordinal)
{
	CUmemAllocationProp prop;

	vmm_prop(&prop, ordinal);
	VMM_CALL("cuMemGetAllocationGranularity", cu_vmm.granularity(g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	return 0;
}

int vmm_reserve(void **p, size_t bytes, size_t align)
{
	CUdeviceptr a = 0;

	VMM_CALL("cuMemAddressReserve", cu_vmm.reserve(&a, bytes, align, 0, 0));
	*p = (void *)(uintptr_t)a;
	return 0;
}

int vmm_create(VmmHandle *h, size_t bytes, int ordinal)
{
	CUmemAllocationProp prop;

	vmm_prop(&prop, ordinal);
	VMM_CALL("cuMemCreate", cu_vmm.create(h, bytes, &prop, 0));
	return 0;
}

int vmm_map(void *p, size_t bytes, VmmHandle h, int ordinal)
{
	CUmemAccessDesc acc;

	VMM_CALL("cuMemMap", cu_vmm.map((CUdeviceptr)(uintptr_t)p, bytes, 0, h, 0));
	memset(&acc, 0, sizeof(acc));
	acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	acc.location.id = ordinal;
	acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	VMM_CALL("cuMemSetAccess", cu_vmm.set_access((CUdeviceptr)(uintptr_t)p, bytes, &acc, 1));
	return 0;
}

void vmm_unmap(void *p, size_t bytes) { (void)cu_vmm.unmap((CUdeviceptr)(uintptr_t)p, bytes); }
void vmm_release(VmmHandle h) { (void)cu_vmm.release(h); }
void vmm_free_range(void *p, size_t bytes) { (void)cu_vmm.address_free((CUdeviceptr)(uintptr_t)p, bytes); }

#endif /* platform */

/* Unmap and release what s holds (mapped[k]: span k is mapped), then free its range. */
void sparse_undo(GpuSparse *s, const int mapped[2], const int created[2])
{
	for (int k = 0; k < 2; k++) {
		if (mapped[k])
			vmm_unmap((unsigned char *)s->base + s->off[k], s->n[k]);
		if (created[k])
			vmm_release(s->h[k]);
	}
	if (s->base)
		vmm_free_range(s->base, s->bytes);
}

int gpu_alloc_sparse(struct vs_device *d, void **base, size_t total_bytes, size_t map_offset, size_t map_bytes)
{
	GpuPriv *p = priv(d);
	GpuSparse *s;
	int mapped[2] = {0, 0}, created[2] = {0, 0}, err;
	size_t g = 0, lo, hi;

	if ((err = vs_device_sparse_range(total_bytes, map_offset, map_bytes)))
		return err;
	if ((err = vmm_init()) || (err = vmm_granularity(&g, p->ordinal)))
		return err;
	if (!g)
		return vs_error(VS_EUNSUPPORTED, "sparse buffer: the allocation granularity reads 0");
	s = (GpuSparse *)calloc(1, sizeof(*s));
	if (!s)
		return vs_error(VS_ENOMEM, "out of memory");
	lo = map_offset / g * g;
	hi = (map_offset + map_bytes + g - 1) / g * g;
	s->bytes = (total_bytes + g - 1) / g * g;
	/* The first granule and the stored span: one span when they touch, two otherwise. */
	if (lo <= g) {
		s->off[0] = 0;
		s->n[0] = hi;
	} else {
		s->off[0] = 0;
		s->n[0] = g;
		s->off[1] = lo;
		s->n[1] = hi - lo;
	}
	if ((err = vmm_reserve(&s->base, s->bytes, g)))
		goto fail;
	for (int k = 0; k < 2 && s->n[k]; k++) {
		if ((err = vmm_create(&s->h[k], s->n[k], p->ordinal)))
			goto fail;
		created[k] = 1;
		if ((err = vmm_map((unsigned char *)s->base + s->off[k], s->n[k], s->h[k], p->ordinal)))
			goto fail;
		mapped[k] = 1;
	}
	s->next = p->sparse;
	p->sparse = s;
	*base = s->base;
	return 0;
fail:
	sparse_undo(s, mapped, created);
	free(s);
	return err == VS_ENOMEM ? VS_ENOMEM : VS_EUNSUPPORTED;
}

void gpu_free_sparse(struct vs_device *d, void *base)
{
	GpuPriv *p = priv(d);

	if (!base)
		return;
	for (GpuSparse **pp = &p->sparse; *pp; pp = &(*pp)->next) {
		GpuSparse *s = *pp;

		if (s->base == base) {
			int both[2] = {1, s->n[1] != 0};

			/* Work on the stream may still read it. */
			(void)hipStreamSynchronize(p->stream);
			sparse_undo(s, both, both);
			*pp = s->next;
			free(s);
			return;
		}
	}
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
	while (p->sparse)
		gpu_free_sparse(d, p->sparse->base);
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

/*
 * The read sweep's kernel (the one device code of the harness, a measurement, not an
 * implementation): each of the grid's `threads` threads (blocks of 256) sums 16-byte words of the
 * buffer, grid-strided; one sum per block. hip_compat.h's vs_* helpers, not threadIdx and
 * __syncthreads: the AMD host build has no device library (cmake/vs_hip.cmake).
 */
__global__ void vs_read_sweep_kernel(const uint4 *__restrict__ p, size_t n, size_t threads, unsigned long long *out)
{
	__shared__ unsigned long long part[256];
	unsigned long long s = 0;
	const int tid = vs_tid();

	for (size_t i = (size_t)vs_bid_x() * 256 + (size_t)tid; i < n; i += threads) {
		uint4 v = p[i];

		s += (unsigned long long)v.x + v.y + v.z + v.w;
	}
	part[tid] = s;
	vs_syncthreads();
	for (int k = 128; k > 0; k /= 2) {
		if (tid < k)
			part[tid] += part[tid + k];
		vs_syncthreads();
	}
	if (tid == 0)
		out[vs_bid_x()] = part[0];
}

int gpu_read_sweep(struct vs_device *d, double *gbps)
{
	GpuPriv *p = priv(d);
	size_t bytes = (size_t)1 << 30, n = bytes / 16;
	int blocks = (d->info.compute_units > 0 ? d->info.compute_units : 1) * 8;
	void *buf = nullptr;
	unsigned long long *sums = nullptr, *host = nullptr, total = 0;
	double best = 0;
	int err = 0;

	if (d->info.mem_bytes && bytes > d->info.mem_bytes / 8)
		bytes = (size_t)(d->info.mem_bytes / 8) & ~(size_t)15, n = bytes / 16;
	if (hipMalloc(&buf, bytes) != hipSuccess || hipMalloc((void **)&sums, blocks * sizeof(*sums)) != hipSuccess ||
	    !(host = (unsigned long long *)malloc(blocks * sizeof(*host)))) {
		err = vs_error(VS_ENOMEM, "out of memory for the read sweep (%zu bytes)", bytes);
		goto done;
	}
	if ((err = gpu_fill(d, buf, 1, bytes)))
		goto done;
	for (int pass = 0; pass < 5 && !err; pass++) {
		double ms = 0;

		if ((err = gpu_timer_begin(d)))
			break;
		vs_read_sweep_kernel<<<blocks, 256, 0, p->stream>>>((const uint4 *)buf, n, (size_t)blocks * 256, sums);
		if ((err = gpu_timer_end(d, &ms)))
			break;
		if (ms > 0 && pass > 0 && (double)bytes / (ms * 1e-3) / 1e9 > best) /* pass 0 warms up */
			best = (double)bytes / (ms * 1e-3) / 1e9;
	}
	if (!err && hipMemcpy(host, sums, blocks * sizeof(*host), hipMemcpyDeviceToHost) != hipSuccess)
		err = vs_error(VS_EDEVICE, "hipMemcpy of the read sweep's sums failed");
	for (int b = 0; !err && b < blocks; b++)
		total += host[b];
	/* every byte is 1: each 16-byte word sums to 4 x 0x01010101 */
	if (!err && total != (unsigned long long)n * 4ull * 0x01010101ull)
		err = vs_error(VS_EDEVICE, "the read sweep summed %llu, not what it wrote", total);
	if (!err)
		*gbps = best;
done:
	if (buf)
		(void)hipFree(buf);
	if (sums)
		(void)hipFree(sums);
	free(host);
	return err;
}

const struct vs_device_ops gpu_ops = {
	gpu_alloc,       gpu_free,         gpu_upload,      gpu_download,    gpu_fill,      gpu_flush_llc,
	gpu_timer_begin, gpu_timer_end,    gpu_synchronize, gpu_graph_begin, gpu_graph_end, gpu_graph_launch,
	gpu_graph_free,  gpu_alloc_sparse, gpu_free_sparse, gpu_clocks,      gpu_release,   gpu_read_sweep,
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
