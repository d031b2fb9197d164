/*
 * check_worker.c - crash isolation: a candidate that segfaults, aborts, hangs or floods its output
 * with NaN yields a FAILED task with the reason, and the run goes on to the other tasks and still
 * writes its eval dir.
 */
#include "testutil.h"

#include "card.h"
#include "evaldir.h"
#include "cpu/cpu_impls.h"
#include "fsutil.h"
#include "mla_decode.h"
#include "plan.h"
#include "measure.h"
#include "runner.h"
#include "task.h"
#include "vs_error.h"
#include "worker.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const struct mla_decode_config one_cfg = {"default", 0, 0, 0, 0, 0};

static int one_config(const char *arch, struct mla_decode_config *out, int cap)
{
	(void)arch;
	if (cap > 0)
		out[0] = one_cfg;
	return 1;
}

static size_t no_ws(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	(void)a;
	(void)c;
	return 0;
}

static int segv_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	(void)c;
	if (a->h_q == 7)
		raise(SIGSEGV); /* an illegal address, as a faulting kernel would give */
	return mla_cpu_naive.launch(a, &one_cfg);
}

static int abort_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	(void)a;
	(void)c;
	abort();
}

static int hang_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	(void)a;
	(void)c;
	for (;;)
		pause();
	return MLA_OK; /* not reached */
}

static int nan_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	size_t n = (size_t)a->batch * a->s_q * a->h_q * MLA_D_V;

	(void)c;
	for (size_t i = 0; i < n; i++)
		((uint16_t *)a->out)[i] = 0x7fc0;
	for (size_t i = 0; i < (size_t)a->batch * a->h_q * a->s_q; i++)
		a->lse[i] = 0.0f / 0.0f;
	return MLA_OK;
}

static const struct mla_decode_impl segv = {MLA_DECODE_ABI_VERSION, "test.segv_h7", "cpu", "", one_config, no_ws,
					    segv_launch, NULL, NULL};
static const struct mla_decode_impl aborts = {MLA_DECODE_ABI_VERSION, "test.abort", "cpu", "", one_config, no_ws,
					      abort_launch, NULL, NULL};
static const struct mla_decode_impl hangs = {MLA_DECODE_ABI_VERSION, "test.hang", "cpu", "", one_config, no_ws,
					     hang_launch, NULL, NULL};
static const struct mla_decode_impl nans = {MLA_DECODE_ABI_VERSION, "test.nan", "cpu", "", one_config, no_ws,
					    nan_launch, NULL, NULL};

/*
 * Issue 12, case 1 (through a worker): reads the reference of its task from the task dir, as a
 * plugin that copies reference*.safetensors would; refuses (MLA_EINVAL) when the file cannot be
 * opened, computes honestly otherwise.
 */
static char peek_path[4096];
static int peek_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	FILE *f = fopen(peek_path, "rb");

	(void)c;
	if (!f)
		return MLA_EINVAL;
	fclose(f);
	return mla_cpu_naive.launch(a, &one_cfg);
}
static const struct mla_decode_impl peek = {MLA_DECODE_ABI_VERSION, "test.peek", "cpu", "", one_config, no_ws,
					    peek_launch, NULL, NULL};

/* Creates a file in $TMPDIR (else /tmp) as a JIT's compiler does, then computes: EINVAL if it cannot. */
static int tmpfile_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	const char *d = getenv("TMPDIR");
	char path[4096];
	int fd;

	(void)c;
	snprintf(path, sizeof(path), "%s/jit-XXXXXX", d && *d ? d : "/tmp");
	fd = mkstemp(path);
	if (fd < 0)
		return MLA_EINVAL;
	close(fd);
	unlink(path);
	return mla_cpu_naive.launch(a, &one_cfg);
}
static const struct mla_decode_impl tmpfile_impl = {MLA_DECODE_ABI_VERSION, "test.tmpfile", "cpu", "", one_config,
						    no_ws, tmpfile_launch, NULL, NULL};

/* Leaves a file in $TMPDIR (a JIT's cache), then computes. */
static int tmpleave_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	const char *d = getenv("TMPDIR");
	char path[4096];
	int fd;

	(void)c;
	snprintf(path, sizeof(path), "%s/jit-cache-XXXXXX", d && *d ? d : "/tmp");
	fd = mkstemp(path);
	if (fd < 0)
		return MLA_EINVAL;
	close(fd);
	return mla_cpu_naive.launch(a, &one_cfg);
}
static const struct mla_decode_impl tmpleave_impl = {MLA_DECODE_ABI_VERSION, "test.tmpleave", "cpu", "", one_config,
						     no_ws, tmpleave_launch, NULL, NULL};

/*
 * The page-offset task's cache (task.h page_offset): kv_cache is the base of a virtual cache whose
 * stored pages start at the smallest block_table entry. base_probe reads the byte at the base (a
 * valid pointer is readable memory, as a real cache's base is: with the base computed below an
 * allocation the read faults), then computes; between_probe reads a
 * byte half-way to the stored pages, which must never be backed (it faults there, and only there).
 */
static volatile unsigned char probe_sink;

static size_t probe_page_bytes(const struct mla_decode_args *a)
{
	return (size_t)a->page_size * MLA_D_QK * mla_kv_elem_size(a->kv_dtype);
}

static int32_t probe_first_page(const struct mla_decode_args *a)
{
	int32_t first = VS_BLOCK_TABLE_SENTINEL;

	for (int i = 0; i < a->batch * a->max_pages; i++)
		first = a->block_table[i] < first ? a->block_table[i] : first;
	return first;
}

static int base_probe_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	const volatile unsigned char *k = a->kv_cache;

	(void)c;
	probe_sink = k[0];
	return mla_cpu_naive.launch(a, &one_cfg);
}

static int between_probe_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	const volatile unsigned char *k = a->kv_cache;

	(void)c;
	probe_sink = k[(size_t)(probe_first_page(a) / 2) * probe_page_bytes(a)];
	return mla_cpu_naive.launch(a, &one_cfg);
}

static const struct mla_decode_impl base_probe = {MLA_DECODE_ABI_VERSION, "test.base_probe", "cpu", "",
						  one_config, no_ws, base_probe_launch, NULL, NULL};
static const struct mla_decode_impl between_probe = {MLA_DECODE_ABI_VERSION, "test.between_probe", "cpu", "",
						     one_config, no_ws, between_probe_launch, NULL, NULL};

static char *tmp;
static struct plan plan;

/* A plan from the shipped CPU card with the given candidate, cut to its first two bf16 tasks. */
static void make_plan(const char *candidate)
{
	struct card c;
	struct plan_options o = {.tier = "smoke", .candidate = candidate};
	char *src = tu_resource("skills/mla_decode_cpu_splitkv.md"), *text = tu_read(src, NULL);
	char *dir = fs_join(tmp, "skills"), *path = fs_join(dir, "mla_decode_cpu_splitkv.md");

	fs_mkdir_p(dir);
	tu_write(path, text, strlen(text));
	ck_assert_int_eq(card_load(&c, path), 0);
	ck_assert_msg(plan_build(&plan, &c, &o) == 0, "%s", vs_last_error());
	for (int i = 2; i < plan.ntasks; i++)
		task_spec_release(&plan.tasks[i]);
	plan.ntasks = 2; /* bf16-ragged-h16-ps64, bf16-causal-h7-ps16 */
	plan.protocol.min_pairs = 4;
	plan.protocol.max_pairs = 6;
	plan.protocol.resamples = 200;
	card_release(&c);
	free(src);
	free(text);
	free(dir);
	free(path);
}

/*
 * The worker of plan task `task` run from its task dir `dir`: baseline cpu.naive, candidate impl, both
 * checked; timing as given, timeout_s seconds (0: none).
 */
static void worker_for(struct measure_ctx *ctx, struct worker_spec *w, const struct mla_decode_impl *impl,
		       const char *dir, int task, int timing, int timeout_s)
{
	memset(ctx, 0, sizeof(*ctx));
	ctx->plan = &plan;
	ctx->base = &mla_cpu_naive;
	ctx->cand = impl;
	ctx->check_base = ctx->check_cand = 1;
	ctx->timing = timing;
	memset(w, 0, sizeof(*w));
	w->ctx = ctx;
	w->backend = "cpu";
	w->task_dir = dir;
	w->spec = &plan.tasks[task];
	w->task_hash = plan.task_hash[task];
	w->timeout_s = timeout_s;
}

/*
 * make_plan's plan with one task: the GPU tiers' page-offset-4g (plan.c; the CPU tiers leave it out),
 * its 6 stored pages at page 60000 of the virtual cache: 4.4e9 bytes in, past 2^32.
 */
static void make_offset_plan(const char *candidate)
{
	struct task_spec s;

	make_plan(candidate);
	tu_page_offset_spec(&s);
	snprintf(s.name, sizeof(s.name), "bf16-page-offset-4g");
	s.softmax_scale = 0.13523377f;
	s.seed = 6100942925471366ull;
	s.tol_out = plan.tasks[0].tol_out;
	s.tol_lse = plan.tasks[0].tol_lse;
	for (int i = 0; i < plan.ntasks; i++)
		task_spec_release(&plan.tasks[i]);
	plan.ntasks = 1;
	ck_assert_int_eq(task_spec_copy(&plan.tasks[0], &s), 0);
	ck_assert_int_eq(task_spec_hash(&plan.tasks[0], plan.task_hash[0]), 0);
}

/* Run the one task of make_offset_plan(impl) in a worker (parity only). */
static int offset_run(struct measure_result *r, const struct mla_decode_impl *impl, char **log)
{
	struct measure_ctx ctx;
	struct worker_spec w;
	char *dir = NULL, *samples = NULL, *root = fs_join(tmp, "tasks");
	int err;

	make_offset_plan(impl->name);
	ck_assert_msg(task_materialize(&dir, root, &plan.tasks[0], 2) == 0, "%s", vs_last_error());
	worker_for(&ctx, &w, impl, dir, 0, 0, 120);
	err = worker_run_task(r, &w, &samples, log);
	free(samples);
	free(dir);
	free(root);
	return err;
}

/*
 * A page-offset task's cache base is readable memory (the device's sparse buffer: one reserved
 * range, its first page and stored pages mapped), and the task passes parity through it.
 */
START_TEST(page_offset_cache_base_is_mapped_memory)
{
	struct measure_result r;
	char *log = NULL;

	ck_assert_msg(offset_run(&r, &base_probe, &log) == 0, "%s\n%s", r.error ? r.error : "", log ? log : "");
	ck_assert_msg(r.cand.config_pass[0] == 1, "%s\n%s",
		      r.cand.config_detail[0] ? r.cand.config_detail[0] : "", log);
	ck_assert_int_eq(r.base.config_pass[0], 1);
	ck_assert_msg(!strstr(log, "no sparse kv_cache"), "%s", log);
	measure_result_release(&r);
	free(log);
}
END_TEST

/* The pages between the base and the stored pages are reserved, never backed: a read there faults. */
START_TEST(page_offset_pages_between_fault)
{
	struct measure_result r;
	char *log = NULL;

	ck_assert_int_eq(offset_run(&r, &between_probe, &log), VS_EFAIL);
	ck_assert_msg(r.error && strstr(r.error, "signal 11"), "error '%s' lacks 'signal 11'", r.error ? r.error : "");
	ck_assert_int_eq(r.complete, 0);
	ck_assert_int_eq(r.parity_pass, 0);
	measure_result_release(&r);
	free(log);
}
END_TEST

static void setup(void)
{
	static int registered;

	vs_error_set_quiet(1);
	tmp = tu_tmpdir();
	if (!registered) {
		ck_assert_int_eq(mla_decode_impl_register(&segv), MLA_OK);
		ck_assert_int_eq(mla_decode_impl_register(&aborts), MLA_OK);
		ck_assert_int_eq(mla_decode_impl_register(&hangs), MLA_OK);
		ck_assert_int_eq(mla_decode_impl_register(&nans), MLA_OK);
		ck_assert_int_eq(mla_decode_impl_register(&peek), MLA_OK);
		ck_assert_int_eq(mla_decode_impl_register(&tmpfile_impl), MLA_OK);
		ck_assert_int_eq(mla_decode_impl_register(&tmpleave_impl), MLA_OK);
		ck_assert_int_eq(mla_decode_impl_register(&base_probe), MLA_OK);
		ck_assert_int_eq(mla_decode_impl_register(&between_probe), MLA_OK);
		registered = 1;
	}
}

static void teardown(void)
{
	plan_release(&plan);
	fs_remove_tree(tmp);
	free(tmp);
	vs_error_set_quiet(0);
}

struct crash_case {
	const struct mla_decode_impl *impl;
	int task;             /* plan task to run */
	double timeout_s;
	const char *reason;   /* substring of r.error */
};

static const struct crash_case crashes[] = {
	{&segv, 1, 60, "signal 11"},
	{&aborts, 0, 60, "signal 6"},
	{&hangs, 0, 2, "timed out after 2 s"},
};

START_TEST(faulting_worker_gives_a_failed_task_with_the_reason)
{
	const struct crash_case *cc = &crashes[_i];
	struct measure_ctx ctx;
	struct worker_spec w;
	struct measure_result r;
	char *dir = NULL, *samples = NULL, *log = NULL, *root = fs_join(tmp, "tasks");
	int err;

	make_plan(cc->impl->name);
	ck_assert_int_eq(task_materialize(&dir, root, &plan.tasks[cc->task], 2), 0);
	worker_for(&ctx, &w, cc->impl, dir, cc->task, 1, cc->timeout_s);
	err = worker_run_task(&r, &w, &samples, &log);
	ck_assert_int_eq(err, VS_EFAIL);
	ck_assert_msg(r.error && strstr(r.error, cc->reason), "%s: error '%s' lacks '%s'", cc->impl->name,
		      r.error ? r.error : "(none)", cc->reason);
	ck_assert_int_eq(r.complete, 0);
	ck_assert_int_eq(r.parity_pass, 0);
	ck_assert_str_eq(r.name, plan.tasks[cc->task].name);
	measure_result_release(&r);
	free(samples);
	free(log);
	free(dir);
	free(root);
}
END_TEST

START_TEST(nan_storm_fails_parity_without_a_crash)
{
	struct measure_ctx ctx;
	struct worker_spec w;
	struct measure_result r;
	char *dir = NULL, *samples = NULL, *log = NULL, *root = fs_join(tmp, "tasks");

	make_plan(nans.name);
	ck_assert_int_eq(task_materialize(&dir, root, &plan.tasks[0], 2), 0);
	worker_for(&ctx, &w, &nans, dir, 0, 1, 60);
	ck_assert_int_eq(worker_run_task(&r, &w, &samples, &log), 0);
	ck_assert_int_eq(r.cand.config_pass[0], 0);
	ck_assert_msg(strstr(r.cand.config_detail[0], "nan"), "%s", r.cand.config_detail[0]);
	ck_assert_int_eq(r.base.config_pass[0], 1);
	measure_result_release(&r);
	free(samples);
	free(log);
	free(dir);
	free(root);
}
END_TEST

/* Run plan task 0 with candidate impl in a worker whose sandbox closes `deny` (NULL: none). */
static int peek_run(struct measure_result *r, const struct mla_decode_impl *impl, const char *deny, char **log)
{
	struct measure_ctx ctx;
	struct worker_spec w;
	char *dir = NULL, *samples = NULL, *root = fs_join(tmp, "tasks"), *ref;
	const char *closed[1] = {deny ? root : NULL};
	int err;

	plan_release(&plan); /* a test may run twice */
	make_plan(impl->name);
	ck_assert_int_eq(task_materialize(&dir, root, &plan.tasks[0], 2), 0);
	ref = fs_join(dir, "reference.safetensors");
	snprintf(peek_path, sizeof(peek_path), "%s", ref);
	ck_assert_msg(access(ref, R_OK) == 0, "%s is not readable in the test itself", ref);
	worker_for(&ctx, &w, impl, dir, 0, 0, 60);
	ctx.plan_path = "plans/p.plan.json";
	w.sandbox_deny = closed;
	w.nsandbox_deny = deny ? 1 : 0;
	err = worker_run_task(r, &w, &samples, log);
	free(samples);
	free(ref);
	free(dir);
	free(root);
	return err;
}

/* Issue 12, case 1: with the task dirs closed, an implementation that reads them is refused. */
START_TEST(sandbox_closes_the_task_dirs_to_the_implementation)
{
	struct measure_result r;
	char *log = NULL, want[512];
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, 1U /* LANDLOCK_CREATE_RULESET_VERSION */);

	ck_assert_int_eq(peek_run(&r, &peek, "tasks", &log), 0);
	if (abi <= 0) {
		/* no Landlock here: the run says so, in the log and in the result */
		ck_assert_msg(strstr(log, "    warning: sandbox: none: Landlock is not available on this kernel"), "%s", log);
		ck_assert_msg(!strncmp(r.sandbox, "none: Landlock is not available", 31), "%s", r.sandbox);
	} else {
		char *root = fs_join(tmp, "tasks");

		snprintf(want, sizeof(want), "landlock ABI %ld: %s closed to the implementation", abi, root);
		free(root);
		ck_assert_str_eq(r.sandbox, want);
		ck_assert_int_eq(r.cand.config_pass[0], 0);
		snprintf(want, sizeof(want), "launch of test.peek default refused the arguments (MLA_EINVAL); "
			 "reproduce: validate_skill --run plans/p.plan.json --task %.16s --impl test.peek --config "
			 "default", plan.task_hash[0]);
		ck_assert_str_eq(r.cand.config_detail[0], want);
		ck_assert_int_eq(r.base.config_pass[0], 1); /* the honest side is untouched */
	}
	measure_result_release(&r);
	free(log);
	/* the same implementation without the sandbox reads the file and passes: the test can fail */
	ck_assert_int_eq(peek_run(&r, &peek, NULL, &log), 0);
	ck_assert_int_eq(r.cand.config_pass[0], 1);
	measure_result_release(&r);
	free(log);
}
END_TEST

/*
 * A closed path under the temporary directory (here the task dirs, as with --tasks-dir /tmp/...)
 * leaves that directory granted entry by entry: the implementation's $TMPDIR is its own working
 * directory, where a JIT (Triton's gcc) can still create its files.
 */
START_TEST(sandbox_leaves_the_implementation_a_temporary_directory)
{
	struct measure_result r;
	char *log = NULL;

	ck_assert_int_eq(peek_run(&r, &tmpfile_impl, "tasks", &log), 0);
	ck_assert_msg(r.cand.config_pass[0] == 1, "%s\n%s", r.cand.config_detail[0] ? r.cand.config_detail[0] : "",
		      log);
	measure_result_release(&r);
	free(log);
}
END_TEST

/*
 * The worker's working directory goes with the worker, whatever its implementation left there,
 * also when $TMPDIR holds a closed path (the worker's Landlock then closes $TMPDIR's entries to it,
 * and it cannot remove its own directory: 7283 of them were left in /tmp by the tests up to
 * 2026-12-05).
 */
START_TEST(worker_directory_is_removed_after_the_task)
{
	struct measure_result r;
	char *log = NULL, *old = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
	DIR *d;
	struct dirent *e;
	int left = 0;

	setenv("TMPDIR", tmp, 1);
	ck_assert_int_eq(peek_run(&r, &tmpleave_impl, "tasks", &log), 0);
	ck_assert_msg(r.cand.config_pass[0] == 1, "%s\n%s", r.cand.config_detail[0] ? r.cand.config_detail[0] : "",
		      log);
	measure_result_release(&r);
	free(log);
	if (old)
		setenv("TMPDIR", old, 1);
	else
		unsetenv("TMPDIR");
	free(old);
	d = opendir(tmp);
	ck_assert_ptr_nonnull(d);
	while ((e = readdir(d)))
		left += !strncmp(e->d_name, "vs-worker-", 10);
	closedir(d);
	ck_assert_int_eq(left, 0);
}
END_TEST

/* Issue 12, case 10: a worker dies with its parent (PR_SET_PDEATHSIG). */
START_TEST(worker_dies_with_its_parent)
{
	int fds[2];
	pid_t mid, wpid = 0;

	make_plan(hangs.name);
	ck_assert_int_eq(pipe(fds), 0);
	mid = fork();
	ck_assert_int_ge(mid, 0);
	if (mid == 0) {
		struct measure_ctx ctx;
		struct worker_spec w;
		struct worker_proc wp;
		char *dir = NULL, *root = fs_join(tmp, "tasks");

		task_materialize(&dir, root, &plan.tasks[0], 2);
		worker_for(&ctx, &w, &hangs, dir, 0, 0, 0);
		if (worker_start(&wp, &w) != 0)
			_exit(1);
		if (write(fds[1], &wp.pid, sizeof(wp.pid)) != (ssize_t)sizeof(wp.pid))
			_exit(1);
		sleep(1); /* the worker is in its hang */
		raise(SIGKILL);
	}
	close(fds[1]);
	ck_assert_int_eq(read(fds[0], &wpid, sizeof(wpid)), (ssize_t)sizeof(wpid));
	close(fds[0]);
	ck_assert_int_eq(waitpid(mid, NULL, 0), mid);
	for (int i = 0; i < 100 && kill(wpid, 0) == 0; i++)
		usleep(50000);
	if (kill(wpid, 0) == 0) {
		kill(wpid, SIGKILL);
		ck_abort_msg("worker %d outlived its parent by 5 s", (int)wpid);
	}
}
END_TEST

/* The whole run: task 1 faults, task 0 completes, the eval dir is written with both. */
START_TEST(run_goes_on_after_a_fault_and_writes_the_eval_dir)
{
	struct runner_options ro;
	char *plan_path = fs_join(tmp, "p.plan.json"), *eval = NULL, *rpath, *text;
	cJSON *res, *tasks;

	make_plan(segv.name);
	ck_assert_int_eq(plan_write(&plan, plan_path), 0);
	memset(&ro, 0, sizeof(ro));
	ro.plan_path = plan_path;
	ro.tasks_root = fs_join(tmp, "tasks");
	ro.results_root = fs_join(tmp, "results");
	ro.threads = 2;
	ck_assert_msg(runner_run(&eval, &ro) == 0, "%s", vs_last_error());
	rpath = fs_join(eval, "result.json");
	text = tu_read(rpath, NULL);
	res = cJSON_Parse(text);
	tasks = cJSON_GetObjectItem(res, "tasks");
	ck_assert_int_eq(cJSON_GetArraySize(tasks), 2);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(tasks, 0), "complete")));
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetArrayItem(tasks, 1), "complete")));
	ck_assert_ptr_nonnull(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(tasks, 1), "error")),
				     "signal 11"));
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(res, "verdict")), "failed");
	cJSON_Delete(res);
	free(text);
	free(rpath);
	free(eval);
	free(plan_path);
	free((char *)ro.tasks_root);
	free((char *)ro.results_root);
}
END_TEST

/* Issue 12, case 9: a second --run of a card while the first holds its results is refused. */
START_TEST(second_run_of_a_card_is_refused_while_the_first_runs)
{
	struct runner_options ro;
	char *plan_path = fs_join(tmp, "p.plan.json"), *eval = NULL, *results = fs_join(tmp, "results");
	char *want = NULL;
	int fd = -1;

	make_plan(mla_cpu_splitkv.name);
	ck_assert_int_eq(plan_write(&plan, plan_path), 0);
	ck_assert_int_eq(evaldir_lock(&fd, results, "mla_decode_cpu_splitkv"), 0); /* the first run */
	memset(&ro, 0, sizeof(ro));
	ro.plan_path = plan_path;
	ro.tasks_root = fs_join(tmp, "tasks");
	ro.results_root = results;
	ro.threads = 2;
	ck_assert_int_eq(runner_run(&eval, &ro), VS_EIO);
	want = fs_printf("%s/mla_decode_cpu_splitkv/.lock: another --run of card 'mla_decode_cpu_splitkv' holds the "
			 "results (pid %ld, started ", results, (long)getpid());
	ck_assert_msg(!strncmp(vs_last_error(), want, strlen(want)), "'%s' does not start with '%s'", vs_last_error(),
		      want);
	ck_assert_msg(strstr(vs_last_error(), "Z): wait for it to end, or stop it"), "%s", vs_last_error());
	ck_assert_ptr_null(eval);
	evaldir_unlock(fd);
	free(want);
	free(plan_path);
	free(results);
	free((char *)ro.tasks_root);
}
END_TEST

START_TEST(registry_refuses_bad_descriptors)
{
	struct mla_decode_impl wrong_abi = segv, dup = segv, no_launch = segv;

	wrong_abi.abi_version = MLA_DECODE_ABI_VERSION + 1;
	wrong_abi.name = "test.other";
	no_launch.name = "test.other2";
	no_launch.launch = NULL;
	ck_assert_int_eq(mla_decode_impl_register(&wrong_abi), MLA_EINVAL);
	ck_assert_int_eq(mla_decode_impl_register(&dup), MLA_EINVAL); /* name taken */
	ck_assert_int_eq(mla_decode_impl_register(&no_launch), MLA_EINVAL);
	ck_assert_ptr_eq(mla_decode_impl_find("test.segv_h7"), &segv);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("worker");
	TCase *tc = tcase_create("isolation");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, faulting_worker_gives_a_failed_task_with_the_reason, 0,
			    (int)(sizeof(crashes) / sizeof(crashes[0])));
	tcase_add_test(tc, nan_storm_fails_parity_without_a_crash);
	tcase_add_test(tc, run_goes_on_after_a_fault_and_writes_the_eval_dir);
	tcase_add_test(tc, registry_refuses_bad_descriptors);
	tcase_add_test(tc, sandbox_closes_the_task_dirs_to_the_implementation);
	tcase_add_test(tc, sandbox_leaves_the_implementation_a_temporary_directory);
	tcase_add_test(tc, worker_directory_is_removed_after_the_task);
	tcase_add_test(tc, worker_dies_with_its_parent);
	tcase_add_test(tc, second_run_of_a_card_is_refused_while_the_first_runs);
	tcase_add_test(tc, page_offset_cache_base_is_mapped_memory);
	tcase_add_test(tc, page_offset_pages_between_fault);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
