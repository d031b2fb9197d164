/* PLACEHOLDER: replaced by the real cpu.splitkv implementation. */
#include "cpu_impls.h"

static int stub_configs(const char *arch, struct mla_decode_config *out, int cap)
{
	(void)arch;
	(void)out;
	(void)cap;
	return 0;
}

static size_t stub_ws(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	(void)a;
	(void)c;
	return 0;
}

static int stub_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	(void)a;
	(void)c;
	return MLA_ENODEVICE;
}

const struct mla_decode_impl mla_cpu_splitkv = {
	MLA_DECODE_ABI_VERSION, "cpu.splitkv", "cpu", "placeholder", stub_configs, stub_ws, stub_launch,
};
