/* The built-in implementations of kernels/mla_decode.h, and the ABI's small helpers. */
#include "mla_decode.h"
#include "cpu/cpu_impls.h"
#include "hip/hip_impls.h"

#include <stdio.h>
#include <string.h>

static const struct mla_decode_impl *const builtin[] = {
	&mla_cpu_naive,
	&mla_cpu_splitkv,
	&mla_hip_baseline,
	&mla_hip_flash,
};

#define NBUILTIN ((int)(sizeof(builtin) / sizeof(builtin[0])))
#define MAX_REGISTERED 32

/* Implementations added at run time (plugins, test implementations), after the built-in ones. */
static const struct mla_decode_impl *registered[MAX_REGISTERED];
static int nregistered;

const struct mla_decode_impl *mla_decode_impl_at(int i)
{
	if (i < 0 || i >= NBUILTIN + nregistered)
		return NULL;
	return i < NBUILTIN ? builtin[i] : registered[i - NBUILTIN];
}

int mla_decode_impl_register(const struct mla_decode_impl *impl)
{
	if (!impl || impl->abi_version != MLA_DECODE_ABI_VERSION || !impl->name || !impl->backend ||
	    !impl->configs || !impl->workspace_size || !impl->launch || mla_decode_impl_find(impl->name))
		return MLA_EINVAL;
	if (nregistered >= MAX_REGISTERED)
		return MLA_EUNSUPPORTED;
	registered[nregistered++] = impl;
	return MLA_OK;
}

const struct mla_decode_impl *mla_decode_impl_find(const char *name)
{
	for (int i = 0; mla_decode_impl_at(i); i++)
		if (!strcmp(mla_decode_impl_at(i)->name, name))
			return mla_decode_impl_at(i);
	return NULL;
}

int32_t mla_kv_dtype_parse(const char *name)
{
	if (!strcmp(name, "bf16"))
		return MLA_KV_BF16;
	for (int32_t k = MLA_KV_FP8_E4M3_FNUZ; k <= MLA_KV_FP8_MODEL1_FNUZ; k++)
		if (!strcmp(name, mla_kv_dtype_name(k)))
			return k;
	return 0;
}

void mla_decode_config_name(struct mla_decode_config *c)
{
	char sp[16];

	if (c->num_splits == MLA_DECODE_SPLITS_BALANCED)
		snprintf(sp, sizeof(sp), "bal");
	else
		snprintf(sp, sizeof(sp), "%d", (int)c->num_splits);
	snprintf(c->name, sizeof(c->name), "bn%d-bh%d-sp%s-w%d-st%d", (int)c->block_n, (int)c->block_h, sp,
		 (int)c->num_warps, (int)c->num_stages);
}
