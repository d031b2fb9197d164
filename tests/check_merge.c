/*
 * check_merge.c - scale-out on one machine and across a cluster, without Slurm: `--run --gpus`
 * (here on the CPU backend: one parallel CPU worker per listed ordinal) writes the same eval dir as
 * a single-worker run apart from timings; `--run --part I --run-id R` writes one part per plan task,
 * which --record refuses alone and `--merge` joins into an eval dir equal to a direct run's (apart
 * from timings) that --record accepts; merging refuses missing, duplicated and tampered parts.
 * Also the housekeeping around runs: --task/--impl/--config give partial runs (under .debug/), --gc
 * removes unused task dirs (without loading plugins), stale temporary dirs, interrupted runs' stubs
 * and debug runs, but not live ones; --record without --eval-dir takes the latest complete eval dir.
 * And a plan that pins each task's configs from an earlier run (--emit-plan --configs-from): its run
 * measures those, complete and recordable.
 */
#include "testutil.h"

#include "fsutil.h"
#include "vs_build_info.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *tmp;

static void setup(void)
{
	tmp = tu_tmpdir();
}

static void teardown(void)
{
	fs_remove_tree(tmp);
	free(tmp);
}

/* Run the tool in tmp; exit status must be want. Returns stdout (malloc'd); stderr into *err_out. */
static char *tool(int want, char **err_out, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static char *tool(int want, char **err_out, const char *fmt, ...)
{
	va_list ap;
	char *args = NULL, *out = NULL, *err = NULL;
	int status;

	va_start(ap, fmt);
	ck_assert_int_ge(vasprintf(&args, fmt, ap), 0);
	va_end(ap);
	status = tu_run_tool(tmp, args, &out, &err);
	ck_assert_msg(status == want, "'%s': exit %d, want %d\nstderr: %s\nstdout: %s", args, status, want, err, out);
	if (err_out)
		*err_out = err;
	else
		free(err);
	free(args);
	return out;
}

/*
 * Timing-dependent members, removed before two eval dirs are compared: the numbers, and what only
 * they decide (the speedup gate and so the verdict: short CPU runs with workers sharing two cores
 * are noisy; check_slurm compares verdicts where the runs do not share cores).
 */
static const char *const timing_keys[] = {"started", "finished", "timing", "speedup", "pairs", "stop",
					  "tune_median_ms", "isolated", "ci_lower", "samples_sha256", "log_sha256",
					  "timed_checks", "timed_check_failures", "sm_clock_mhz", "flags",
					  "merged_from", "path", "verdict", "read_gbps", "setup_ms"};

static void strip(cJSON *j)
{
	cJSON *c;

	for (size_t k = 0; k < sizeof(timing_keys) / sizeof(timing_keys[0]); k++)
		cJSON_DeleteItemFromObjectCaseSensitive(j, timing_keys[k]);
	cJSON_DeleteItemFromObjectCaseSensitive(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "gates"), "speedup"), "pass");
	cJSON_ArrayForEach(c, j)
		strip(c);
}

/* Equal texts, or a failure that shows the first line that differs. */
static void same_text(const char *what, const char *a, const char *b)
{
	int line = 1;
	const char *la = a, *lb = b;

	while (*a && *a == *b) {
		if (*a == '\n') {
			line++;
			la = a + 1;
			lb = b + 1;
		}
		a++;
		b++;
	}
	ck_assert_msg(*a == *b, "%s differ at line %d:\n  %.*s\n  %.*s", what, line, (int)strcspn(la, "\n"), la,
		      (int)strcspn(lb, "\n"), lb);
}

static char *normalized_result(const char *eval_dir)
{
	char *path = fs_printf("%s/%s/result.json", tmp, eval_dir), *text = tu_read(path, NULL), *out;
	cJSON *j = cJSON_Parse(text);

	ck_assert_ptr_nonnull(j);
	strip(j);
	out = cJSON_Print(j);
	cJSON_Delete(j);
	free(text);
	free(path);
	return out;
}

/* The file names of an eval dir, sorted, as one string. */
static char *listing(const char *eval_dir)
{
	char *dir = fs_printf("%s/%s", tmp, eval_dir), *mdir = fs_join(dir, "manifests"), *out = NULL;
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);
	struct dirent **names;
	int k;

	k = scandir(dir, &names, NULL, alphasort);
	for (int i = 0; i < k; i++) {
		fprintf(f, "%s\n", names[i]->d_name);
		free(names[i]);
	}
	free(names);
	k = scandir(mdir, &names, NULL, alphasort);
	for (int i = 0; i < k; i++) {
		fprintf(f, "manifests/%s\n", names[i]->d_name);
		free(names[i]);
	}
	free(names);
	fclose(f);
	free(dir);
	free(mdir);
	return out;
}

/* Field k (from 0) of the CSV row at row, or NULL when the row has fewer. */
static const char *csv_field(const char *row, int k)
{
	for (; k > 0 && row; k--) {
		row += strcspn(row, ",\n");
		row = *row == ',' ? row + 1 : NULL;
	}
	return row;
}

/* The task column of samples.csv, one hash per run of equal rows (the order tasks appear in). */
static char *sample_tasks(const char *eval_dir)
{
	char *path = fs_printf("%s/%s/samples.csv", tmp, eval_dir), *text = tu_read(path, NULL), *out = NULL;
	char last[65] = "";
	size_t n = 0;
	FILE *f = open_memstream(&out, &n);

	for (char *line = strchr(text, '\n'); line && line[1]; line = strchr(line + 1, '\n')) {
		if (strncmp(line + 1, last, 64)) {
			memcpy(last, line + 1, 64);
			fprintf(f, "%.64s\n", last);
		}
	}
	fclose(f);
	free(text);
	free(path);
	return out;
}

/*
 * The parity margins (the worst over the stored input sets and the run-time one) depend on the
 * run-time seed, which every worker draws anew: two runs compared are given the same one
 * (VS_FRESH_SEED) so that their margins, like everything else but timings, must agree.
 */
static void fix_fresh_seed(void)
{
	setenv("VS_FRESH_SEED", "20261201", 1);
}

START_TEST(gpus_run_writes_the_eval_dir_of_a_single_worker_run)
{
	char *plan = tu_small_plan(tmp, "", 3, 1), *out, *single, *multi, *a, *b;

	fix_fresh_seed();
	out = tool(0, NULL, "--run %s --threads 1 --run-id single", plan);
	single = tu_eval_dir_of(out);
	free(out);
	out = tool(0, NULL, "--run %s --threads 1 --run-id multi --gpus 0,1", plan);
	ck_assert_msg(strstr(out, "2 workers in parallel (CPU workers 0,1)"), "%s", out);
	multi = tu_eval_dir_of(out);
	free(out);
	a = normalized_result(single);
	b = normalized_result(multi);
	same_text("result.json of the single-worker and the --gpus run", a, b);
	free(a);
	free(b);
	a = listing(single);
	b = listing(multi);
	same_text("files of the two eval dirs", a, b);
	free(a);
	free(b);
	a = sample_tasks(single);
	b = sample_tasks(multi);
	same_text("task order of samples.csv", a, b);
	ck_assert_int_eq(tu_count_lines(a), 3);
	free(a);
	free(b);
	/* Both verify as evidence (the same checks --record makes). */
	if (!VS_KERNELS_DIRTY) {
		/* the single-worker run came after: recording the older one says so (--older) */
		free(tool(0, NULL, "--record skills/mla_decode_cpu_splitkv.md --eval-dir %s --older", multi));
		free(tool(0, NULL, "--verify skills/mla_decode_cpu_splitkv.md"));
	}
	free(tool(2, NULL, "--run %s --gpus 0,0", plan));
	free(tool(2, NULL, "--run %s --gpus 0,x", plan));
	free(single);
	free(multi);
	free(plan);
	unsetenv("VS_FRESH_SEED");
}
END_TEST

START_TEST(parts_merge_into_the_eval_dir_of_a_direct_run)
{
	char *plan = tu_small_plan(tmp, "", 3, 1), *out, *err, *direct, *merged, *a, *b, *path, *text, *orig;
	const char *parts = "results/mla_decode_cpu_splitkv/.parts/R";

	fix_fresh_seed();
	out = tool(0, NULL, "--run %s --threads 2 --run-id direct", plan);
	direct = tu_eval_dir_of(out);
	free(out);
	for (int i = 0; i < 3; i++)
		free(tool(0, NULL, "--run %s --threads 2 --part %d --run-id R", plan, i));
	free(tool(2, &err, "--run %s --part 3 --run-id R", plan));
	ck_assert_msg(strstr(err, "has tasks 0..2"), "%s", err);
	free(err);
	free(tool(2, &err, "--run %s --part 0", plan));
	ck_assert_msg(strstr(err, "--part needs --run-id"), "%s", err);
	free(err);
	/* A part alone is partial evidence. */
	free(tool(3, &err, "--record skills/mla_decode_cpu_splitkv.md --eval-dir %s/0001", parts));
	ck_assert_msg(strstr(err, "partial"), "%s", err);
	free(err);
	/* Missing and duplicated parts are refused with what to do. */
	free(tool(3, &err, "--merge %s/0000 %s/0001 --run-id m1", parts, parts));
	ck_assert_msg(strstr(err, "missing: 2 (") && strstr(err, "--part N"), "%s", err);
	ck_assert_int_eq(tu_count_lines(err), 1);
	free(err);
	free(tool(3, &err, "--merge %s %s/0001 --run-id m2", parts, parts));
	ck_assert_msg(strstr(err, "in two parts"), "%s", err);
	free(err);

	out = tool(0, NULL, "--merge %s", parts);
	merged = tu_eval_dir_of(out);
	ck_assert_msg(merged && strstr(merged, "results/mla_decode_cpu_splitkv/R"), "%s", out);
	free(out);
	a = normalized_result(direct);
	b = normalized_result(merged);
	same_text("result.json of the direct run and the merged parts", a, b);
	free(a);
	free(b);
	a = listing(direct);
	b = listing(merged);
	same_text("files of the two eval dirs", a, b);
	free(a);
	free(b);
	if (VS_KERNELS_DIRTY) {
		free(tool(3, &err, "--record skills/mla_decode_cpu_splitkv.md --eval-dir %s", merged));
		ck_assert_msg(strstr(err, "uncommitted kernels/"), "%s", err);
		free(err);
	} else {
		free(tool(0, NULL, "--record skills/mla_decode_cpu_splitkv.md --eval-dir %s --older", merged));
		free(tool(0, NULL, "--verify skills/mla_decode_cpu_splitkv.md"));
	}
	/* A part is read as strictly as evidence: a key twice in its result.json is refused. */
	path = fs_printf("%s/%s/0001/result.json", tmp, parts);
	text = tu_read(path, NULL);
	{
		char *dup = fs_printf("{\n\t\"verdict\":\t\"validated\",%s", strchr(text, '{') + 1);

		tu_write(path, dup, strlen(dup));
		free(tool(3, &err, "--merge %s --run-id dup", parts));
		ck_assert_msg(strstr(err, "appears twice"), "%s", err);
		free(err);
		free(dup);
	}
	tu_write(path, text, strlen(text));
	free(text);
	free(path);
	/* A tampered part does not merge. */
	path = fs_printf("%s/%s/0002/samples.csv", tmp, parts);
	text = tu_read(path, NULL);
	orig = strdup(text);
	text[strlen(text) - 3] = text[strlen(text) - 3] == '1' ? '0' : '1';
	tu_write(path, text, strlen(text));
	free(tool(3, &err, "--merge %s --run-id again", parts));
	ck_assert_msg(strstr(err, "samples.csv' does not match"), "%s", err);
	free(err);
	/*
	 * Samples edited with the sha256 in result.json updated to match: --merge recomputes the
	 * speedups as --record does, and refuses the part. Every baseline sample is doubled, so that
	 * the median ratio must change (one sample edited leaves the median as it was when its pair's
	 * ratio is above it already: about one run in two).
	 */
	{
		char hex[65], *res = fs_printf("%s/%s/0002/result.json", tmp, parts);
		char *rtext = tu_read(res, NULL), *at = strstr(rtext, "\"samples_sha256\":\t\"");
		char *edited = NULL;
		size_t elen = 0;
		FILE *ef = open_memstream(&edited, &elen);
		int doubled = 0;

		ck_assert_ptr_nonnull(ef);
		for (const char *row = orig; *row;) {
			size_t len = strcspn(row, "\n");
			const char *role = csv_field(row, 4), *ms = csv_field(row, 6), *rest = csv_field(row, 7);

			if (role && rest && !strncmp(role, "baseline,", 9)) {
				rest--; /* its comma */
				fprintf(ef, "%.*s%.17g%.*s\n", (int)(ms - row), row, 2 * strtod(ms, NULL),
					(int)(row + len - rest), rest);
				doubled++;
			} else {
				fprintf(ef, "%.*s\n", (int)len, row);
			}
			row += len + (row[len] == '\n');
		}
		fclose(ef);
		ck_assert_int_gt(doubled, 0);
		tu_write(path, edited, strlen(edited));
		fs_sha256_hex(hex, edited, strlen(edited));
		ck_assert_ptr_nonnull(at);
		memcpy(at + strlen("\"samples_sha256\":\t\""), hex, 64);
		tu_write(res, rtext, strlen(rtext));
		free(tool(3, &err, "--merge %s --run-id edited", parts)); /* tampered evidence: not made */
		ck_assert_msg(strstr(err, "does not recompute from samples.csv"), "%s", err);
		ck_assert_int_eq(tu_count_lines(err), 1);
		free(err);
		free(edited);
		free(rtext);
		free(res);
		free(orig);
	}
	free(text);
	free(path);
	free(direct);
	free(merged);
	free(plan);
	unsetenv("VS_FRESH_SEED");
}
END_TEST

struct filter_case {
	const char *args;
	int tasks;           /* tasks in result.json */
	const char *filter;  /* member of "filters" */
};

static const struct filter_case filters[] = {
	{"--task causal", 1, "task"},
	{"--impl cpu.naive", 2, "impl"},
	{"--config bn16-bh8-sp0-w0-st0", 2, "config"},
};

START_TEST(filters_give_partial_runs_that_record_refuses)
{
	const struct filter_case *c = &filters[_i];
	char *plan = tu_small_plan(tmp, "", 2, 1), *out, *err, *eval, *path, *text;
	cJSON *j;

	/* The one candidate config left in the small plan. */
	path = fs_join(tmp, plan);
	text = tu_read(path, NULL);
	j = cJSON_Parse(text);
	free(text);
	free(path);
	{
		const char *cfg = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(
			cJSON_GetObjectItem(j, "candidate"), "configs"), 0), "name"));
		char *args = strcmp(c->filter, "config") ? strdup(c->args) : fs_printf("--config %s", cfg);

		out = tool(0, NULL, "--run %s --threads 2 %s", plan, args);
		free(args);
	}
	cJSON_Delete(j);
	ck_assert_msg(strstr(out, "(partial: filtered)"), "%s", out);
	/* The gate that failed the verdict is named, whatever the other gates say. */
	ck_assert_msg(strstr(out, "complete FAIL; verdict failed (") && strstr(out, "incomplete: partial run, "), "%s",
		      out);
	/* A parity-only run of a correct implementation (the reproduce line) passes parity. */
	if (!strcmp(c->filter, "impl"))
		ck_assert_msg(strstr(out, "parity pass, not timed") && !strstr(out, "parity FAIL"), "%s", out);
	eval = tu_eval_dir_of(out);
	path = fs_printf("%s/%s/result.json", tmp, eval);
	text = tu_read(path, NULL);
	j = cJSON_Parse(text);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(j, "partial")));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "tasks")), c->tasks);
	ck_assert_ptr_nonnull(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "filters"), c->filter));
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "verdict")), "failed");
	cJSON_Delete(j);
	free(tool(3, &err, "--record skills/mla_decode_cpu_splitkv.md --eval-dir %s", eval));
	ck_assert_msg(strstr(err, "partial"), "%s", err);
	free(err);
	free(text);
	free(path);
	free(eval);
	free(out);
	free(plan);
}
END_TEST

START_TEST(gc_removes_unused_and_stale_dirs_but_not_live_ones)
{
	char *plan = tu_small_plan(tmp, "", 1, 1), *out, *op = fs_join(tmp, "tasks/mla_decode");
	char *unused, *stale, *live, *used;

	free(tool(0, NULL, "--materialize %s --threads 2", plan));
	unused = fs_join(op, "00000000deadbeef");
	stale = fs_printf("%s/.%064d.tmp.%d", op, 0, 999999999);
	live = fs_printf("%s/.%064d.tmp.%d", op, 1, (int)getpid());
	fs_mkdir_p(unused);
	fs_mkdir_p(stale);
	fs_mkdir_p(live);
	out = tool(0, NULL, "--gc");
	ck_assert_msg(!fs_exists(unused) && !fs_exists(stale), "gc left an unused or stale dir:\n%s", out);
	ck_assert_msg(fs_exists(live), "gc removed the temporary dir of a live process");
	ck_assert_msg(strstr(out, "1 task dir removed; 1 in use by plans in plans/; 1 temporary of interrupted writes removed"), "%s", out);
	{
		DIR *d = opendir(op);
		struct dirent *de;
		int n = 0;

		while ((de = readdir(d)))
			n += de->d_name[0] != '.';
		closedir(d);
		ck_assert_int_eq(n, 1);
		used = NULL;
	}
	free(out);
	free(unused);
	free(stale);
	free(live);
	free(used);
	free(op);
	free(plan);
}
END_TEST

/* Whether dir (under tmp) exists. */
static int exists_in_tmp(const char *rel)
{
	char *p = fs_join(tmp, rel);
	int e = fs_exists(p);

	free(p);
	return e;
}

/*
 * --record without --eval-dir takes the newest complete eval dir and says which; filtered runs go
 * to results/<card>/.debug/; --gc removes interrupted runs' stubs (no result.json, writer gone) and
 * finished debug runs, and keeps complete eval dirs and the dir of a run still going.
 */
START_TEST(record_takes_the_latest_complete_eval_dir_and_gc_removes_stubs_and_debug_runs)
{
	char *plan = tu_small_plan(tmp, "", 1, 1), *out, *err, *eval, *debug, *path, *marker;
	const char *card_dir = "results/mla_decode_cpu_splitkv";

	out = tool(0, NULL, "--run %s --threads 2", plan);
	eval = tu_eval_dir_of(out);
	ck_assert_msg(eval && !strstr(eval, ".debug"), "%s", out);
	free(out);
	out = tool(0, NULL, "--run %s --threads 2 --impl cpu.naive", plan);
	debug = tu_eval_dir_of(out);
	ck_assert_msg(debug && !strncmp(debug, "results/mla_decode_cpu_splitkv/.debug/", 38), "a debug run went to %s",
		      debug ? debug : "(none)");
	free(out);
	/* Newer than the complete one: the stub of an interrupted run, a run still going, a partial result. */
	path = fs_printf("%s/%s/29990101T000000Z-x86_64", tmp, card_dir);
	fs_mkdir_p(path);
	marker = fs_printf("%s/.writer.tmp.999999999", path);
	tu_write(marker, "", 0);
	free(marker);
	free(path);
	path = fs_printf("%s/%s/29990102T000000Z-x86_64", tmp, card_dir);
	fs_mkdir_p(path);
	marker = fs_printf("%s/.writer.tmp.%d", path, (int)getpid());
	tu_write(marker, "", 0);
	free(marker);
	free(path);
	{
		char *from = fs_printf("%s/%s/result.json", tmp, debug), *text = tu_read(from, NULL);

		path = fs_printf("%s/%s/29990103T000000Z-x86_64", tmp, card_dir);
		fs_mkdir_p(path);
		free(from);
		from = fs_join(path, "result.json");
		tu_write(from, text, strlen(text));
		free(from);
		free(text);
		free(path);
	}
	tu_run_tool(tmp, "--record skills/mla_decode_cpu_splitkv.md", &out, &err);
	path = fs_printf("using %s, the latest complete eval dir (passed over 3 newer: 2 without result.json, 1 partial)",
			 eval);
	ck_assert_msg(strstr(out, path), "--record without --eval-dir: want '%s'\nstdout: %s\nstderr: %s", path, out, err);
	free(path);
	free(out);
	free(err);

	out = tool(0, NULL, "--gc");
	ck_assert_msg(!exists_in_tmp("results/mla_decode_cpu_splitkv/29990101T000000Z-x86_64"),
		      "gc kept an interrupted run's stub:\n%s", out);
	ck_assert_msg(exists_in_tmp("results/mla_decode_cpu_splitkv/29990102T000000Z-x86_64"),
		      "gc removed the dir of a live run:\n%s", out);
	ck_assert_msg(!exists_in_tmp(debug), "gc kept a debug run:\n%s", out);
	ck_assert_msg(exists_in_tmp(eval), "gc removed a complete eval dir:\n%s", out);
	ck_assert_msg(exists_in_tmp("results/mla_decode_cpu_splitkv/29990103T000000Z-x86_64"),
		      "gc removed a finished (partial) result:\n%s", out);
	ck_assert_msg(strstr(out, "2 eval dirs removed"), "%s", out);
	path = fs_printf("%s/%s/.writer.tmp.%d", tmp, eval, (int)getpid());
	ck_assert_msg(!fs_exists(path), "a complete eval dir keeps its writer's marker");
	free(path);
	free(out);
	free(eval);
	free(debug);
	free(plan);
}
END_TEST

/* --gc reads plans without loading plugins: 17 plugin plans, whose plugin files do not exist. */
START_TEST(gc_needs_no_plugins_to_know_the_task_dirs_in_use)
{
	char *plan = tu_small_plan(tmp, "", 1, 1), *path = fs_join(tmp, plan), *text = tu_read(path, NULL), *out;
	char *unused = fs_printf("%s/tasks/mla_decode/%064d", tmp, 7);
	cJSON *j = cJSON_Parse(text);
	DIR *d;
	struct dirent *de;
	int ntasks = 0;

	free(tool(0, NULL, "--materialize %s --threads 2", plan));
	unlink(path); /* only the plugin plans name the task dir */
	for (int k = 0; k < 17; k++) {
		cJSON *pl = cJSON_CreateObject(), *cand = cJSON_GetObjectItem(j, "candidate");
		char *lib = fs_printf("build-%d/libmissing.so", k), *dst = fs_printf("%s/plans/team%d.plan.json", tmp, k), *t;

		cJSON_AddStringToObject(pl, "path", lib);
		cJSON_AddStringToObject(pl, "sha256", "0000000000000000000000000000000000000000000000000000000000000000");
		cJSON_DeleteItemFromObject(cand, "plugin");
		cJSON_AddItemToObject(cand, "plugin", pl);
		t = cJSON_Print(j);
		tu_write(dst, t, strlen(t));
		cJSON_free(t);
		free(lib);
		free(dst);
	}
	fs_mkdir_p(unused);
	out = tool(0, NULL, "--gc");
	ck_assert_msg(!fs_exists(unused), "gc kept an unused task dir:\n%s", out);
	ck_assert_msg(strstr(out, "1 task dir removed; 17 in use by plans in plans/"), "%s", out);
	free(out);
	free(path);
	path = fs_join(tmp, "tasks/mla_decode");
	d = opendir(path);
	while (d && (de = readdir(d)))
		ntasks += de->d_name[0] != '.';
	if (d)
		closedir(d);
	ck_assert_int_eq(ntasks, 1);
	cJSON_Delete(j);
	free(text);
	free(unused);
	free(path);
	free(plan);
}
END_TEST

/* The chosen config of role ("baseline", "candidate") on task i of an eval dir's result.json. */
static char *chosen_in(const char *eval, int i, const char *role)
{
	char *path = fs_printf("%s/%s/result.json", tmp, eval), *text = tu_read(path, NULL), *name;
	cJSON *j = cJSON_Parse(text), *t = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "tasks"), i);

	ck_assert_ptr_nonnull(t);
	name = strdup(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(t, role), "chosen")));
	cJSON_Delete(j);
	free(text);
	free(path);
	return name;
}

/*
 * --configs-from: a plan pins, on each task a run of the same card measured, every side's config
 * chosen there, and names that run and its result.json; its run parity-checks and times those only
 * (one config per side, no tuning median), is complete and records. A pin edited to a config the
 * implementation does not have, and an eval dir that is not one, are refused with one line.
 */
START_TEST(configs_from_pins_each_tasks_chosen_configs)
{
	char *plan = tu_small_plan(tmp, "", 2, 2), *out = tool(0, NULL, "--run %s --threads 2", plan);
	char *eval = tu_eval_dir_of(out), *args, *pinned, *path, *text, *err, *second, *rpath;
	const char *run = strrchr(eval, '/') + 1;
	cJSON *j, *tasks;

	free(out);
	args = fs_printf("--configs-from %s", eval);
	pinned = tu_small_plan(tmp, args, 2, 2);
	path = fs_join(tmp, pinned);
	text = tu_read(path, NULL);
	j = cJSON_Parse(text);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "pinned"), "run")), run);
	ck_assert_int_eq((int)strlen(cJSON_GetStringValue(
				 cJSON_GetObjectItem(cJSON_GetObjectItem(j, "pinned"), "result_sha256"))),
			 64);
	tasks = cJSON_GetObjectItem(j, "tasks");
	ck_assert_int_eq(cJSON_GetArraySize(tasks), 2);
	for (int i = 0; i < 2; i++) {
		cJSON *c = cJSON_GetObjectItem(cJSON_GetArrayItem(tasks, i), "configs");
		char *base = chosen_in(eval, i, "baseline"), *cand = chosen_in(eval, i, "candidate");

		ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(c, "baseline")), base);
		ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(c, "candidate")), cand);
		free(base);
		free(cand);
	}
	cJSON_Delete(j);

	out = tool(0, NULL, "--run %s --threads 2", pinned);
	second = tu_eval_dir_of(out);
	free(out);
	rpath = fs_printf("%s/%s/result.json", tmp, second);
	free(text);
	text = tu_read(rpath, NULL);
	j = cJSON_Parse(text);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(j, "partial")));
	for (int i = 0; i < 2; i++) {
		cJSON *t = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "tasks"), i);

		for (int k = 0; k < 2; k++) {
			cJSON *side = cJSON_GetObjectItem(t, k ? "candidate" : "baseline");
			cJSON *cfgs = cJSON_GetObjectItem(side, "configs");
			char *want = chosen_in(eval, i, k ? "candidate" : "baseline");

			ck_assert_int_eq(cJSON_GetArraySize(cfgs), 1);
			ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(side, "chosen")), want);
			ck_assert_ptr_null(cJSON_GetObjectItem(cJSON_GetArrayItem(cfgs, 0), "tune_median_ms"));
			free(want);
		}
	}
	cJSON_Delete(j);
	if (!VS_KERNELS_DIRTY) { /* a build from uncommitted kernels/ records nothing (check above) */
		char *want = fs_printf("pinned from run %s", run);

		/* the unpinned run first: its configs came from its own tuning pass, and the report says no pin */
		free(tool(0, NULL, "--record skills/mla_decode_cpu_splitkv.md --eval-dir %s --older", eval));
		out = tool(0, NULL, "--report");
		ck_assert_msg(!strstr(out, "pinned from run"), "an unpinned run reads as pinned:\n%s", out);
		free(out);
		free(tool(0, NULL, "--record skills/mla_decode_cpu_splitkv.md --eval-dir %s", second));
		out = tool(0, NULL, "--report");
		ck_assert_msg(strstr(out, want), "the report does not say '%s':\n%s", want, out);
		free(out);
		free(want);
	}

	/* a pin edited to a config cpu.splitkv does not have */
	{
		char *cand = chosen_in(eval, 0, "candidate"), *at, *edited;

		free(text);
		text = tu_read(path, NULL);
		at = strstr(strstr(text, "\"tasks\""), "\"configs\""); /* task 0's pins */
		ck_assert_ptr_nonnull(at);
		at = strstr(at, cand);
		ck_assert_ptr_nonnull(at);
		edited = fs_printf("%.*sbn999%s", (int)(at - text), text, at + 2);
		tu_write(path, edited, strlen(edited));
		free(tool(3, &err, "--run %s --threads 2", pinned));
		ck_assert_msg(strstr(err, "tasks[0].configs.candidate") && strstr(err, "is not a config of cpu.splitkv") &&
				      !strchr(strchr(err, '\n') + 1, '\n'),
			      "%s", err);
		free(err);
		free(edited);
		free(cand);
	}
	/* an eval dir that is none */
	free(tool(3, &err, "--emit-plan skills/mla_decode_cpu_splitkv.md --configs-from %s/tasks", tmp));
	ck_assert_msg(strstr(err, "--configs-from: ") && strstr(err, "no eval dir"), "%s", err);
	free(err);
	free(rpath);
	free(second);
	free(text);
	free(path);
	free(pinned);
	free(args);
	free(eval);
	free(plan);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("merge");
	TCase *tc = tcase_create("merge");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, gpus_run_writes_the_eval_dir_of_a_single_worker_run);
	tcase_add_test(tc, parts_merge_into_the_eval_dir_of_a_direct_run);
	tcase_add_loop_test(tc, filters_give_partial_runs_that_record_refuses, 0, (int)(sizeof(filters) / sizeof(filters[0])));
	tcase_add_test(tc, gc_removes_unused_and_stale_dirs_but_not_live_ones);
	tcase_add_test(tc, record_takes_the_latest_complete_eval_dir_and_gc_removes_stubs_and_debug_runs);
	tcase_add_test(tc, gc_needs_no_plugins_to_know_the_task_dirs_in_use);
	tcase_add_test(tc, configs_from_pins_each_tasks_chosen_configs);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
