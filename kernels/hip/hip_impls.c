/* PLACEHOLDER: replaced by the real descriptors and config spaces of hip.baseline and hip.flash. */
#include "hip_impls.h"

static int stub_configs(const char *arch, struct mla_decode_config *out, int cap)
{
	(void)arch;
	(void)out;
	(void)cap;
	return MLA_EUNSUPPORTED;
}

static size_t stub_ws(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	(void)a;
	(void)c;
	return 0;
}

const struct mla_decode_impl mla_hip_baseline = {
	MLA_DECODE_ABI_VERSION, "hip.baseline", "hip", "placeholder", stub_configs, stub_ws,
	mla_hip_baseline_launch,
};

const struct mla_decode_impl mla_hip_flash = {
	MLA_DECODE_ABI_VERSION, "hip.flash", "hip", "placeholder", stub_configs, stub_ws,
	mla_hip_flash_launch,
};
