/*
 * gpu_clocks.h - current GPU clocks and throttle reasons, read during a run to flag clock changes.
 *
 * NVIDIA: NVML (nvml.h API, libnvidia-ml.so.1, which the driver installs), loaded with dlopen at
 * the first call so that the tool needs no NVML at build time and runs where there is none. The
 * GPU is NVML index `ordinal` (the CUDA ordinal when CUDA_VISIBLE_DEVICES is not reordering).
 * AMD (ROCm SMI) is not read yet: the functions report "unknown" there.
 */
#ifndef VS_GPU_CLOCKS_H
#define VS_GPU_CLOCKS_H

#include <stdint.h>

/* NVML's clocks event reasons that mean the clock was held down (nvmlClocksEventReasons). */
#define VS_THROTTLE_SW_POWER_CAP 0x4ull
#define VS_THROTTLE_HW_SLOWDOWN 0x8ull
#define VS_THROTTLE_SW_THERMAL 0x20ull
#define VS_THROTTLE_HW_THERMAL 0x40ull
#define VS_THROTTLE_HW_POWER_BRAKE 0x80ull
#define VS_THROTTLE_ANY                                                                                                \
	(VS_THROTTLE_SW_POWER_CAP | VS_THROTTLE_HW_SLOWDOWN | VS_THROTTLE_SW_THERMAL | VS_THROTTLE_HW_THERMAL |        \
	 VS_THROTTLE_HW_POWER_BRAKE)

/**
 * Read GPU `ordinal`'s current SM and memory clocks (MHz) and its clocks event reasons (bitmask).
 * Returns 0, or -1 when they cannot be read (no NVML, not an NVIDIA GPU, an NVML error); the
 * out-params are set only on success.
 */
int vs_gpu_clocks(int ordinal, int *sm_mhz, int *mem_mhz, uint64_t *reasons);

/** "power cap, thermal" style text for the throttling bits of reasons (static buffer). */
const char *vs_gpu_throttle_text(uint64_t reasons);

#endif /* VS_GPU_CLOCKS_H */
