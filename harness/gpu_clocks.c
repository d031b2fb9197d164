#include "gpu_clocks.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* The few NVML entry points used, with nvml.h's types reduced to their C ABI. */
typedef int (*nvml_init_fn)(void);
typedef int (*nvml_handle_fn)(unsigned int index, void **device);
typedef int (*nvml_clock_fn)(void *device, int type, unsigned int *mhz);
typedef int (*nvml_reasons_fn)(void *device, unsigned long long *reasons);

#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2

static struct {
	int tried;
	void *lib;
	nvml_handle_fn handle;
	nvml_clock_fn clock;
	nvml_reasons_fn reasons;
} nvml;

static int nvml_open(void)
{
	nvml_init_fn init;

	if (nvml.tried)
		return nvml.lib ? 0 : -1;
	nvml.tried = 1;
	nvml.lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!nvml.lib)
		return -1;
	init = (nvml_init_fn)dlsym(nvml.lib, "nvmlInit_v2");
	nvml.handle = (nvml_handle_fn)dlsym(nvml.lib, "nvmlDeviceGetHandleByIndex_v2");
	nvml.clock = (nvml_clock_fn)dlsym(nvml.lib, "nvmlDeviceGetClockInfo");
	nvml.reasons = (nvml_reasons_fn)dlsym(nvml.lib, "nvmlDeviceGetCurrentClocksEventReasons");
	if (!nvml.reasons)
		nvml.reasons = (nvml_reasons_fn)dlsym(nvml.lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
	if (!init || !nvml.handle || !nvml.clock || init() != 0) {
		dlclose(nvml.lib);
		nvml.lib = NULL;
		return -1;
	}
	return 0;
}

int vs_gpu_clocks(int ordinal, int *sm_mhz, int *mem_mhz, uint64_t *reasons)
{
	void *dev = NULL;
	unsigned int sm = 0, mem = 0;
	unsigned long long why = 0;

	if (ordinal < 0 || nvml_open() != 0 || nvml.handle((unsigned int)ordinal, &dev) != 0 ||
	    nvml.clock(dev, NVML_CLOCK_SM, &sm) != 0 || nvml.clock(dev, NVML_CLOCK_MEM, &mem) != 0)
		return -1;
	if (nvml.reasons && nvml.reasons(dev, &why) != 0)
		why = 0;
	*sm_mhz = (int)sm;
	*mem_mhz = (int)mem;
	*reasons = why;
	return 0;
}

const char *vs_gpu_throttle_text(uint64_t reasons)
{
	static char buf[128];
	static const struct {
		uint64_t bit;
		const char *name;
	} names[] = {
		{VS_THROTTLE_SW_POWER_CAP, "power cap"},      {VS_THROTTLE_HW_SLOWDOWN, "hardware slowdown"},
		{VS_THROTTLE_SW_THERMAL, "software thermal"}, {VS_THROTTLE_HW_THERMAL, "hardware thermal"},
		{VS_THROTTLE_HW_POWER_BRAKE, "power brake"},
	};

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (reasons & names[i].bit)
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s", *buf ? ", " : "", names[i].name);
	return buf;
}
