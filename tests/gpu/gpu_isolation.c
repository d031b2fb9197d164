/*
 * gpu_isolation.c - crash isolation on the GPU (DESIGN.md "Process model"): a candidate whose kernel
 * writes through an illegal address fails its task with the failing runtime call named, a candidate
 * whose kernel hangs is killed at the worker's time limit, and the next task, in a fresh worker and
 * a fresh GPU context, passes. Exits 77 (skipped) where there is no GPU.
 */
#include "card.h"
#include "device.h"
#include "fsutil.h"
#include "hip/hip_impls.h"
#include "mla_decode.h"
#include "plan.h"
#include "measure.h"
#include "task.h"
#include "vs_error.h"
#include "worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int fault_test_launch(const struct mla_decode_args *a, int kind);

static int one_config(const char *arch, struct mla_decode_config *out, int cap)
{
	(void)arch;
	if (cap > 0) {
		memset(out, 0, sizeof(*out));
		snprintf(out->name, sizeof(out->name), "default");
	}
	return 1;
}

static size_t no_ws(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	(void)a;
	(void)c;
	return 0;
}

static int illegal_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	(void)c;
	return fault_test_launch(a, 0);
}

static int hang_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	(void)c;
	return fault_test_launch(a, 1);
}

static const struct mla_decode_impl illegal = {MLA_DECODE_ABI_VERSION, "test.gpu_illegal_address", "hip", "",
					       one_config, no_ws, illegal_launch};
static const struct mla_decode_impl hang = {MLA_DECODE_ABI_VERSION, "test.gpu_hang", "hip", "", one_config, no_ws,
					    hang_launch};

static int failures;

#define EXPECT(cond, ...)                                        \
	do {                                                     \
		if (!(cond)) {                                   \
			printf("FAIL %s:%d: ", __FILE__, __LINE__); \
			printf(__VA_ARGS__);                     \
			printf("\n");                            \
			failures++;                              \
		}                                                \
	} while (0)

static int run_one(struct measure_result *r, const struct plan *p, const struct mla_decode_impl *cand,
		   const char *dir, double timeout_s)
{
	struct measure_ctx ctx;
	struct worker_spec w;
	char *samples = NULL, *log = NULL;
	int err;

	memset(&ctx, 0, sizeof(ctx));
	ctx.plan = p;
	ctx.base = &mla_hip_baseline;
	ctx.cand = cand;
	ctx.check_base = ctx.check_cand = 1;
	memset(&w, 0, sizeof(w));
	w.ctx = &ctx;
	w.backend = "hip";
	w.task_dir = dir;
	w.spec = &p->tasks[0];
	w.task_hash = p->task_hash[0];
	w.timeout_s = timeout_s;
	err = worker_run_task(r, &w, &samples, &log);
	free(samples);
	free(log);
	return err;
}

int main(void)
{
	struct vs_device_info info;
	struct card c;
	struct plan p, pp;
	struct plan_options o = {.tier = "smoke", .gen = "sm_90"};
	struct measure_result r;
	char root[] = "/tmp/vs_gpu_isolation_XXXXXX", *dir = NULL;
	int err;

	if (worker_probe_device(&info, "hip", 0) != 0) {
		printf("no GPU: %s\n", vs_last_error());
		return 77;
	}
	if (!mkdtemp(root) || card_load(&c, "skills/mla_decode_hip_port_sm90.md") || plan_build(&p, &c, &o))
		return printf("setup failed: %s\n", vs_last_error()), 1;
	mla_decode_impl_register(&illegal);
	mla_decode_impl_register(&hang);
	pp = p;
	pp.ntasks = 1;
	pp.candidate.nconfigs = 1;
	if (task_materialize(&dir, root, &p.tasks[0], 4))
		return printf("materialize failed: %s\n", vs_last_error()), 1;

	err = run_one(&r, &pp, &illegal, dir, 120);
	EXPECT(err == 0 && r.cand.config_pass[0] != 1 && r.error && strstr(r.error, "failed"),
	       "illegal address: err %d, error '%s'", err, r.error ? r.error : "(none)");
	printf("illegal address -> %s\n", r.error ? r.error : "(no error)");
	measure_result_release(&r);

	err = run_one(&r, &pp, &hang, dir, 10);
	EXPECT(err == VS_EFAIL && r.error && strstr(r.error, "timed out"), "hang: err %d, error '%s'", err,
	       r.error ? r.error : "(none)");
	printf("hang -> %s\n", r.error ? r.error : "(no error)");
	measure_result_release(&r);

	/* A fresh worker (and context) after both faults: the real kernels pass parity. */
	err = run_one(&r, &pp, &mla_hip_flash, dir, 300);
	EXPECT(err == 0 && !r.error && r.base.config_pass[0] == 1 && r.cand.config_pass[0] == 1,
	       "after the faults: err %d error '%s' base %d cand %d", err, r.error ? r.error : "", r.base.config_pass[0],
	       r.cand.config_pass[0]);
	printf("next task, fresh worker -> baseline parity %s, candidate parity %s\n",
	       r.base.config_pass[0] == 1 ? "pass" : "FAIL", r.cand.config_pass[0] == 1 ? "pass" : "FAIL");
	measure_result_release(&r);

	fs_remove_tree(root);
	free(dir);
	plan_release(&p);
	card_release(&c);
	printf("%s\n", failures ? "gpu_isolation: FAILED" : "gpu_isolation: ok");
	return failures ? 1 : 0;
}
