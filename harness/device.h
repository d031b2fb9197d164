/*
 * device.h - where implementations run: the CPU, or a GPU through the HIP runtime (CUDA on NVIDIA).
 *
 * The runner is written once against struct vs_device; each backend fills the ops table. Buffers
 * are owned by the harness and allocated through the device. Every op returns 0 or a negative
 * vs_error code (VS_EDEVICE for a GPU runtime error, whose message names the failing runtime call
 * and its error string, e.g. "cudaMemcpy failed: an illegal memory access was encountered (700)").
 * GPU errors are sticky for the process on CUDA: after one, the device is unusable.
 */
#ifndef VS_DEVICE_H
#define VS_DEVICE_H

#include <stddef.h>
#include <stdint.h>

/** Facts recorded into result.json. */
struct vs_device_info {
	char backend[8];    /* "cpu" or "hip" (HIP on AMD, HIP names mapped to CUDA on NVIDIA) */
	char name[128];     /* as the runtime reports it: "NVIDIA H200", "AMD Instinct MI300X", CPU model */
	char arch[32];      /* generation: "sm_90", "gfx942", "x86_64" */
	char driver[64];    /* driver / runtime versions, or the kernel release on the CPU */
	int compute_units;  /* SMs, CUs, or online CPU cores */
	int clock_mhz;      /* max SM / CU clock (CPU: 0 when unknown) */
	int mem_clock_mhz;  /* max memory clock (0 when unknown) */
	uint64_t llc_bytes; /* last-level cache: L2 on H200 (60 MB), Infinity Cache on MI300X, CPU LLC */
	uint64_t mem_bytes; /* device memory */
	double read_gbps;   /* device memory read bandwidth the run measured once (read_sweep), GB/s; 0 unknown */
};

struct vs_device;

struct vs_device_ops {
	int (*alloc)(struct vs_device *d, void **ptr, size_t bytes);
	void (*free)(struct vs_device *d, void *ptr); /* accepts NULL */
	/* Synchronous copies between host memory and device memory. */
	int (*upload)(struct vs_device *d, void *dst, const void *src, size_t bytes);
	int (*download)(struct vs_device *d, void *dst, const void *src, size_t bytes);
	/* Enqueue: set bytes of dst to byte (0xFF poisons bf16 and fp32 alike with NaN). */
	int (*fill)(struct vs_device *d, void *dst, int byte, size_t bytes);
	/* Enqueue: evict the last-level cache by writing a buffer of at least twice its size. */
	int (*flush_llc)(struct vs_device *d);
	/* Timed region: begin enqueues a start event; end enqueues a stop event, waits, returns ms. */
	int (*timer_begin)(struct vs_device *d);
	int (*timer_end)(struct vs_device *d, double *ms);
	int (*synchronize)(struct vs_device *d);
	/*
	 * Graphs (NULL on the CPU): begin capturing the stream; end capture and instantiate into
	 * *graph; replay; free. The capture-safety gate uses them.
	 */
	int (*graph_begin)(struct vs_device *d);
	int (*graph_end)(struct vs_device *d, void **graph);
	int (*graph_launch)(struct vs_device *d, void *graph);
	void (*graph_free)(struct vs_device *d, void *graph);
	/*
	 * Sparse buffer (optional: NULL where a backend lacks it; the caller then uses alloc). Reserves
	 * total_bytes of address space as ONE range at *base and backs with memory only its first
	 * granule and the bytes [map_offset, map_offset + map_bytes); everything between is reserved
	 * and never backed, so an access there faults (SIGSEGV on the CPU, an illegal address on a
	 * GPU) instead of reading another buffer. *base lies inside a real mapping: a runtime's
	 * pointer query (cuPointerGetAttribute, as Triton's launcher does) accepts it, where a base
	 * computed below some allocation is refused. For a task whose pages sit far into a larger
	 * virtual cache (task.h page_offset) without allocating the pages in between.
	 *
	 * The granule is the backend's mapping unit: the page size on the CPU, the allocation
	 * granularity on a GPU (2 MiB on H200). *base is aligned to it; the stored range is backed
	 * from map_offset rounded down to map_offset + map_bytes rounded up, so any map_offset works.
	 * Backed bytes hold unspecified values until written.
	 *
	 * Errors: VS_EUNSUPPORTED when map_bytes is 0 or the stored range does not lie in
	 * total_bytes, or when the runtime cannot (no virtual memory management on this device or
	 * driver, a call refused: the message names it); VS_ENOMEM. After an error nothing is left
	 * allocated and the caller may fall back to alloc. The buffer is the caller's: free_sparse
	 * (accepts NULL) releases it whole, given the *base alloc_sparse returned (never free).
	 */
	int (*alloc_sparse)(struct vs_device *d, void **base, size_t total_bytes, size_t map_offset, size_t map_bytes);
	void (*free_sparse)(struct vs_device *d, void *base);
	/* Current SM and memory clocks in MHz, for throttling checks; optional (NULL or -1 values). */
	int (*clocks)(struct vs_device *d, int *sm_mhz, int *mem_mhz);
	void (*release)(struct vs_device *d);
	/*
	 * Optional (NULL: not measured). The device memory's read bandwidth in GB/s: the best of a few
	 * passes reading a buffer far larger than the last-level cache (a read kernel on a GPU, one
	 * reader thread per core on the CPU), each pass's sum kept so that no read can be elided. Run
	 * once per run by the device probe; a task whose counted bytes per second exceed it is flagged
	 * (docs/DESIGN.md "Physical limits").
	 */
	int (*read_sweep)(struct vs_device *d, double *gbps);
};

/**
 * Peak dense tensor throughput of a generation for a cache dtype, TFLOP/s by the vendor's datasheet
 * (bf16 MMA for a bf16 cache, fp8 for an fp8 one), or 0 when this build knows none (CPUs). A FLOP
 * rate above it is impossible: cached or skipped work.
 */
double vs_device_peak_tflops(const char *gen, int32_t kv_dtype);

struct vs_device {
	struct vs_device_info info;
	const struct vs_device_ops *ops;
	void *stream; /* passed to launches as mla_decode_args.stream; NULL on the CPU */
	void *priv;   /* backend state */
};

/** Open the host CPU as a device. Always succeeds unless out of memory. */
int vs_device_open_cpu(struct vs_device *d);

/**
 * Open GPU number ordinal. Returns VS_EUNSUPPORTED with a clear message when this binary was built
 * without a GPU toolchain, VS_EDEVICE when the runtime finds no such device.
 */
int vs_device_open_gpu(struct vs_device *d, int ordinal);

/**
 * alloc_sparse's argument check, one for every backend: 0 when [map_offset, map_offset + map_bytes)
 * is a non-empty range inside total_bytes, else VS_EUNSUPPORTED with the message alloc_sparse gives.
 */
int vs_device_sparse_range(size_t total_bytes, size_t map_offset, size_t map_bytes);

/** Release a device opened by one of the above (accepts a zeroed struct). */
void vs_device_release(struct vs_device *d);

#endif /* VS_DEVICE_H */
