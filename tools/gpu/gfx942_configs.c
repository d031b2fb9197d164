/*
 * gfx942_configs.c - prints the config spaces of hip.flash and hip.baseline for an arch (default
 * gfx942), one line per config, for tools/gpu/gfx942_gate.sh: "impl name block_n block_h num_splits
 * num_warps num_stages lds_bf16 lds_fp8" (lds_* from hip_impls.c's formula; 0 where none applies).
 * With an arch argument (tools/gpu/sm90_resources.sh: "sm_90a"; tools/gpu/gfx942_gate.sh: "gfx942") a
 * tenth field names the kernel kind: baseline, warp, warp_dt, wgmma, wgmma_t, onetile or sparse (the
 * sparse form's kernels: one shared-memory size for every format, printed as both lds_* fields). Built with the host C compiler against
 * kernels/hip/hip_impls.c alone.
 */
#include "../../kernels/hip/hip_flash.h"
#include "../../kernels/hip/hip_impls.h"

#include <stdio.h>

/* hip_impls.c's descriptors name the launches; nothing here launches. */
int mla_hip_baseline_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	(void)a;
	(void)c;
	return MLA_ENODEVICE;
}

int mla_hip_flash_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	(void)a;
	(void)c;
	return MLA_ENODEVICE;
}

int mla_hip_flash_sparse_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	(void)a;
	(void)c;
	return MLA_ENODEVICE;
}

static const char *kind_name(const struct mla_flash_entry *e)
{
	if (!e)
		return "baseline";
	switch (e->kind) {
	case MLA_FLASH_WGMMA:
		return "wgmma";
	case MLA_FLASH_WGMMA_T:
		return "wgmma_t";
	case MLA_FLASH_ONETILE:
		return "onetile";
	case MLA_FLASH_WARP_DT:
		return "warp_dt";
	case MLA_FLASH_SPARSE:
		return "sparse";
	default:
		return "warp";
	}
}

int main(int argc, char **argv)
{
	const struct mla_decode_impl *impls[] = { &mla_hip_baseline, &mla_hip_flash };
	const char *arch = argc > 1 ? argv[1] : "gfx942";
	struct mla_decode_config cfg[64];

	for (int i = 0; i < 2; i++) {
		int n = impls[i]->configs(arch, cfg, 64);

		if (n <= 0 || n > 64) {
			fprintf(stderr, "gfx942_configs: %s has no %s configs (%d)\n", impls[i]->name, arch, n);
			return 1;
		}
		for (int k = 0; k < n; k++) {
			const struct mla_flash_entry *e = i == 1 ? mla_flash_entry_find(&cfg[k]) : NULL;

			printf("%s %s %d %d %d %d %d %zu %zu", impls[i]->name, cfg[k].name, cfg[k].block_n,
			       cfg[k].block_h, cfg[k].num_splits, cfg[k].num_warps, cfg[k].num_stages,
			       e ? mla_flash_smem_bytes(e, MLA_KV_BF16) : (size_t)0,
			       e ? mla_flash_smem_bytes(e, MLA_KV_FP8_E4M3_FNUZ) : (size_t)0);
			if (argc > 1)
				printf(" %s", kind_name(e));
			printf("\n");
		}
	}
	return 0;
}
