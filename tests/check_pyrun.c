/*
 * check_pyrun.c - Python implementations through `validate_skill --run` on the CPU (issue 9, CI
 * without a GPU): numpy.mla_decode, addressed by its shipped name, passes parity against cpu.naive
 * and is bound by its sha256 and versions in the plan and in result.json; a user's module by path
 * (--candidate-lib FILE.py) edited after --emit-plan is refused by --run and by --verify; a wrong
 * module is caught with its worst element named; an exception in launch gives its one line and the
 * run goes on; tasks a module does not support are skipped with the reason (never passed), and a
 * dtype none of whose tasks ran fails the coverage gate; a module writing into q is caught by the
 * input check. The interpreter is Debian's /usr/bin/python3 with python3-numpy ($VS_PYTHON).
 */
#include "testutil.h"

#include "fsutil.h"
#include "vs_build_info.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *tmp;

static void setup(void)
{
	tmp = tu_tmpdir();
	setenv("VS_PYTHON", "/usr/bin/python3", 1);
}

static void teardown(void)
{
	fs_remove_tree(tmp);
	free(tmp);
}

/* The first 16 hex digits of plan task i's hash (what reproduce lines show). */
static char *task_hash16(const char *plan, int i)
{
	cJSON *j = tu_json_file(tmp, plan);
	const char *h = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "tasks"), i),
								 "hash"));
	char *out;

	ck_assert_ptr_nonnull(h);
	out = strndup(h, 16);
	cJSON_Delete(j);
	return out;
}

/*
 * Run `--run plan`; returns the eval dir (relative to tmp); *out and *err keep the streams.
 * want_status -1: the run completes and its exit says its verdict (0 validated, 1 failed): where
 * parity passes, the speedup gate alone decides, and that is the machine's (cpu.naive under the
 * sanitizer is slower than numpy).
 */
static char *run_plan(const char *plan, int want_status, char **out, char **err)
{
	char *args = fs_printf("--run %s --threads 2", plan), *eval;
	int status = tu_run_tool(tmp, args, out, err);

	eval = tu_eval_dir_of(*out);
	ck_assert_msg(eval != NULL, "no eval dir in: %s", *out);
	if (want_status < 0) {
		char *res = fs_printf("%s/%s/result.json", tmp, eval), *verdict = tu_json_str(res, "verdict");

		ck_assert_ptr_nonnull(verdict);
		want_status = strcmp(verdict, "validated") ? 1 : 0;
		ck_assert_msg(want_status == 0 || strstr(*out, "; verdict failed (speedup gate)\n"), "%s", *out);
		free(verdict);
		free(res);
	}
	ck_assert_msg(status == want_status, "%s: exit %d, not %d: %s\n%s", args, status, want_status, *err, *out);
	free(args);
	return eval;
}

static char *run_log(const char *eval)
{
	char *path = fs_printf("%s/%s/run.log", tmp, eval), *text = tu_read(path, NULL);

	free(path);
	return text;
}

static void assert_line(const char *text, const char *line)
{
	char *want = fs_printf("%s\n", line);

	ck_assert_msg(strstr(text, want) != NULL, "missing line:\n%s\nin:\n%s", line, text);
	free(want);
}

/* A shipped Python module is a reference by its name too, as --candidate takes it (not only by file). */
START_TEST(numpy_by_its_name_is_a_reference)
{
	char *plan = tu_small_plan(tmp, "--reference numpy.mla_decode", 2, 1);
	cJSON *p = tu_json_file(tmp, plan), *ref = cJSON_GetArrayItem(cJSON_GetObjectItem(p, "references"), 0);
	cJSON *py = cJSON_GetObjectItem(ref, "python");

	ck_assert_ptr_nonnull(ref);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(ref, "impl")), "numpy.mla_decode");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(py, "path")), "kernels/python/numpy_mla.py");
	cJSON_Delete(p);
	free(plan);
}
END_TEST

START_TEST(numpy_by_its_name_passes_parity_and_is_bound_by_sha256)
{
	char *plan = tu_small_plan(tmp, "--candidate numpy.mla_decode", 2, 1), *src = tu_source("kernels/python/numpy_mla.py");
	char *out = NULL, *err = NULL, *eval, *rel, hex[65];
	cJSON *p = tu_json_file(tmp, plan), *py, *r, *t;

	ck_assert_int_eq(fs_sha256_file(hex, src), 0);
	py = cJSON_GetObjectItem(cJSON_GetObjectItem(p, "candidate"), "python");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(py, "path")), "kernels/python/numpy_mla.py");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(py, "sha256")), hex);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(py, "interpreter")), "/usr/bin/python3");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(py, "executable")), "/usr/bin/python3");
	ck_assert_ptr_nonnull(strstr(cJSON_GetStringValue(cJSON_GetObjectItem(py, "libpython")), "libpython3"));
	ck_assert_ptr_nonnull(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(py, "versions"), "numpy")));
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "protocol"), "timing")), "launch");
	ck_assert_ptr_null(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "candidate"), "unsupported"));
	cJSON_Delete(p);

	eval = run_plan(plan, -1, &out, &err);
	ck_assert_msg(strstr(out, "[1/2] bf16-ragged-h16-ps64: speedup ") && strstr(out, "[2/2] bf16-causal-h7-ps16: speedup "),
		      "%s", out);
	ck_assert_msg(strstr(out, "; parity pass; capture n/a; complete pass; verdict "), "%s", out);
	rel = fs_printf("%s/result.json", eval);
	r = tu_json_file(tmp, rel);
	cJSON_ArrayForEach(t, cJSON_GetObjectItem(r, "tasks")) {
		ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(t, "parity")), "pass");
		ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(t, "complete")));
	}
	py = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "python"), 0);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(py, "role")), "candidate");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(py, "impl")), "numpy.mla_decode");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(py, "sha256")), hex);
	/* The versions the worker's embedded interpreter saw, beside those planned. */
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(py, "versions"), "numpy")),
			 cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(py, "planned_versions"), "numpy")));
	ck_assert_ptr_nonnull(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(py, "versions"), "python")));
	cJSON_Delete(r);
	free(rel);
	free(out);
	free(err);
	free(eval);
	free(src);
	free(plan);
}
END_TEST

/*
 * Two configs of one module on the two sides (a config card's A/B): each side's setup is its own
 * config's, not the module's whole (until 2026-12-05 both sides showed the sum of the two).
 */
START_TEST(config_sides_of_one_module_have_their_own_setup)
{
	char *plan = tu_small_plan(tmp, "--baseline numpy.mla_decode@bn64 --candidate numpy.mla_decode@bn256", 1, 1);
	char *out = NULL, *err = NULL, *eval = run_plan(plan, -1, &out, &err), *rel = fs_printf("%s/result.json", eval);
	cJSON *r = tu_json_file(tmp, rel), *t = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "tasks"), 0);
	double sb = cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(t, "baseline"), "setup_ms"));
	double sc = cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(t, "candidate"), "setup_ms"));

	ck_assert_msg(sb > 0 && sc > 0 && sb != sc, "setup_ms: baseline %g, candidate %g", sb, sc);
	cJSON_Delete(r);
	free(rel);
	free(out);
	free(err);
	free(eval);
	free(plan);
}
END_TEST

/* A user's module by path, edited after the plan (and after the run): --run and --verify refuse it. */
START_TEST(module_edited_after_the_plan_is_refused)
{
	char *src = tu_source("kernels/python/numpy_mla.py"), *text = tu_read(src, NULL), *mod = fs_join(tmp, "team_mla.py");
	char *args = fs_printf("--candidate-lib %s", mod), *plan, *out = NULL, *err = NULL, *eval, *line;
	char *name = strstr(text, "NAME = \"numpy.mla_decode\""), before[65], after[65];
	FILE *f;
	int status;

	ck_assert_ptr_nonnull(name);
	f = fopen(mod, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "%.*sNAME = \"team.mla_decode\"%s", (int)(name - text), text, name + strlen("NAME = \"numpy.mla_decode\""));
	fclose(f);
	ck_assert_int_eq(fs_sha256_file(before, mod), 0);
	/* The card names the module, so that its evidence may be recorded there (implementations bound to the card). */
	plan = tu_small_plan_edit(tmp, args, 1, 1, "to_backend: cpu.splitkv", "to_backend: team.mla_decode");
	eval = run_plan(plan, -1, &out, &err);
	ck_assert_msg(strstr(out, "; parity pass; capture n/a; complete pass; verdict "), "%s", out);
	free(out);
	free(err);
	if (!VS_KERNELS_DIRTY)
		free(tu_record_cpu_card(tmp, eval, 0));

	f = fopen(mod, "a");
	ck_assert_ptr_nonnull(f);
	fputs("# edited after the plan\n", f);
	fclose(f);
	ck_assert_int_eq(fs_sha256_file(after, mod), 0);
	free(args);
	args = fs_printf("--run %s", plan);
	status = tu_run_tool(tmp, args, &out, &err);
	line = fs_printf("validate_skill: error: %s: candidate python module '%s' changed since the plan was made "
			 "(sha256 %s, plan %s): emit the plan again\n", plan, mod, after, before);
	ck_assert_msg(status == 3 && !strcmp(err, line), "exit %d:\n%s\nwanted:\n%s", status, err, line);
	free(line);
	free(out);
	free(err);
	if (!VS_KERNELS_DIRTY) {
		status = tu_run_tool(tmp, "--verify skills/mla_decode_cpu_splitkv.md", &out, &err);
		line = fs_printf("the candidate python module '%s' changed since the run (sha256 %.12s..., the evidence "
				 "binds %.12s...): run the plan again with this version of it", mod, after, before);
		ck_assert_msg(status == 3 && strstr(err, line), "verify: exit %d: %s\nwanted: %s", status, err, line);
		free(line);
		free(out);
		free(err);
	}
	free(args);
	free(eval);
	free(plan);
	free(mod);
	free(text);
	free(src);
}
END_TEST

/*
 * A user's module that imports a helper file from its own directory (tmp/k/mla_helpers.py): numpy_mla.py
 * renamed team.mla_helpers, with extra appended; *hex the helper's sha256. Returns the module's path.
 */
static char *module_with_helper(char hex[65], const char *extra)
{
	char *src = tu_source("kernels/python/numpy_mla.py"), *text = tu_read(src, NULL), *dir = fs_join(tmp, "k");
	char *mod = fs_join(dir, "team_helpers.py"), *helper = fs_join(dir, "mla_helpers.py"), *body;
	char *name = strstr(text, "NAME = \"numpy.mla_decode\"");
	const char *code = "SCALE = 1.0\n";

	ck_assert_ptr_nonnull(name);
	ck_assert_int_eq(fs_mkdir_p(dir), 0);
	tu_write(helper, code, strlen(code));
	ck_assert_int_eq(fs_sha256_file(hex, helper), 0);
	body = fs_printf("import mla_helpers\n%.*sNAME = \"team.mla_helpers\"%s%s", (int)(name - text), text,
			 name + strlen("NAME = \"numpy.mla_decode\""), extra);
	tu_write(mod, body, strlen(body));
	free(body);
	free(helper);
	free(dir);
	free(text);
	free(src);
	return mod;
}

/* The plan's candidate.python (borrowed from j). */
static cJSON *plan_python(cJSON *j)
{
	return cJSON_GetObjectItem(cJSON_GetObjectItem(j, "candidate"), "python");
}

/*
 * The helper a module imports is hashed in the plan, checked by --run (an edit after the plan is
 * refused with its line), recorded in result.json and checked by --verify.
 */
START_TEST(helper_file_is_bound_by_the_plan_and_the_evidence)
{
	char hex[65], after[65], *mod = module_with_helper(hex, ""), *args = fs_printf("--candidate-lib %s", mod);
	char *plan, *out = NULL, *err = NULL, *eval, *rel, *log, *line, *helper = fs_join(tmp, "k/mla_helpers.py");
	cJSON *p, *h, *r, *py;
	int status;

	plan = tu_small_plan_edit(tmp, args, 1, 1, "to_backend: cpu.splitkv", "to_backend: team.mla_helpers");
	p = tu_json_file(tmp, plan);
	h = cJSON_GetObjectItem(plan_python(p), "helpers");
	ck_assert_int_eq(cJSON_GetArraySize(h), 1);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(h, 0), "path")), "mla_helpers.py");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(h, 0), "sha256")), hex);
	cJSON_Delete(p);

	eval = run_plan(plan, -1, &out, &err);
	ck_assert_msg(strstr(out, "; parity pass; capture n/a; complete pass; verdict "), "%s", out);
	log = run_log(eval);
	ck_assert_msg(!strstr(log, "note: the plan records no helper files"), "%s", log);
	rel = fs_printf("%s/result.json", eval);
	r = tu_json_file(tmp, rel);
	py = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "python"), 0);
	h = cJSON_GetObjectItem(py, "helpers");
	ck_assert_int_eq(cJSON_GetArraySize(h), 1);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(h, 0), "path")), "mla_helpers.py");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(h, 0), "sha256")), hex);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(py, "helpers_planned")));
	cJSON_Delete(r);
	free(out);
	free(err);
	if (!VS_KERNELS_DIRTY)
		free(tu_record_cpu_card(tmp, eval, 1));

	tu_write(helper, "SCALE = 2.0\n", strlen("SCALE = 2.0\n"));
	ck_assert_int_eq(fs_sha256_file(after, helper), 0);
	free(args);
	args = fs_printf("--run %s", plan);
	status = tu_run_tool(tmp, args, &out, &err);
	line = fs_printf("validate_skill: error: %s: candidate python module '%s': helper 'mla_helpers.py' changed "
			 "since the plan was made (sha256 %s, plan %s): emit the plan again\n",
			 plan, mod, after, hex);
	ck_assert_msg(status == 3 && !strcmp(err, line), "exit %d:\n%s\nwanted:\n%s", status, err, line);
	free(line);
	free(out);
	free(err);
	if (!VS_KERNELS_DIRTY) {
		status = tu_run_tool(tmp, "--verify skills/mla_decode_cpu_splitkv.md", &out, &err);
		line = fs_printf("helper 'mla_helpers.py' of the candidate python module '%s' changed since the run "
				 "(sha256 %.12s..., the evidence binds %.12s...): run the plan again with this version of it",
				 mod, after, hex);
		ck_assert_msg(status == 3 && strstr(err, line), "verify: exit %d: %s\nwanted: %s", status, err, line);
		free(line);
		free(out);
		free(err);
	}
	free(log);
	free(rel);
	free(eval);
	free(plan);
	free(args);
	free(helper);
	free(mod);
}
END_TEST

/*
 * A plan made before helper files were hashed (no "helpers") still runs: run.log says once that the
 * plan binds none, and result.json records the helpers the run loaded, as not planned.
 */
START_TEST(plan_without_helpers_runs_and_records_those_loaded)
{
	char hex[65], *mod = module_with_helper(hex, ""), *args = fs_printf("--candidate-lib %s", mod);
	char *plan = tu_small_plan(tmp, args, 1, 1), *path = fs_join(tmp, plan), *text, *out = NULL, *err = NULL;
	char *eval, *log, *line, *rel, *at;
	cJSON *p = tu_json_file(tmp, plan), *r, *py, *h;

	cJSON_DeleteItemFromObject(plan_python(p), "helpers");
	text = cJSON_Print(p);
	tu_write(path, text, strlen(text));
	eval = run_plan(plan, -1, &out, &err);
	ck_assert_msg(strstr(out, "; parity pass; capture n/a; complete pass; verdict "), "%s", out);
	log = run_log(eval);
	line = fs_printf("note: the plan records no helper files of the candidate python module '%s' (made before "
			 "helper files were hashed): the run binds those its import loads now, in result.json",
			 mod);
	assert_line(log, line);
	at = strstr(log, line);
	ck_assert_msg(!strstr(at + 1, line), "said twice: %s", log);
	rel = fs_printf("%s/result.json", eval);
	r = tu_json_file(tmp, rel);
	py = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "python"), 0);
	h = cJSON_GetObjectItem(py, "helpers");
	ck_assert_int_eq(cJSON_GetArraySize(h), 1);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(h, 0), "sha256")), hex);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(py, "helpers_planned")));
	cJSON_Delete(r);
	cJSON_Delete(p);
	free(rel);
	free(line);
	free(log);
	free(eval);
	free(out);
	free(err);
	free(text);
	free(path);
	free(plan);
	free(args);
	free(mod);
}
END_TEST

/* A helper imported inside launch() (after the load, so that no plan hash covers it) fails the task. */
START_TEST(helper_imported_lazily_fails_the_task)
{
	char hex[65], *mod = module_with_helper(hex, "\n\n_launch = launch\n\n\ndef launch(args, config):\n"
						    "    import mla_lazy  # noqa: F401\n"
						    "    return _launch(args, config)\n");
	char *args = fs_printf("--candidate-lib %s", mod), *plan, *out = NULL, *err = NULL, *eval, *line;
	char *lazy = fs_join(tmp, "k/mla_lazy.py");

	tu_write(lazy, "LAZY = 1\n", strlen("LAZY = 1\n"));
	plan = tu_small_plan(tmp, args, 1, 1);
	eval = run_plan(plan, 1, &out, &err);
	line = fs_printf("[1/1] bf16-ragged-h16-ps64: FAILED: %s: run: helper 'mla_lazy.py' was imported after the "
			 "module's load (lazily, e.g. in prepare() or launch()): no hash of the plan covers it; import "
			 "it at the module's top level",
			 mod);
	assert_line(out, line);
	free(line);
	free(eval);
	free(out);
	free(err);
	free(plan);
	free(lazy);
	free(args);
	free(mod);
}
END_TEST

START_TEST(wrong_module_is_caught_with_its_worst_element)
{
	char *mod = tu_resource("python/wrong.py"), *args = fs_printf("--candidate-lib %s", mod), *plan, *h;
	char *out = NULL, *err = NULL, *eval, *log, *line;
	cJSON *p;

	plan = tu_small_plan(tmp, args, 1, 1);
	p = tu_json_file(tmp, plan);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(p,
			 "candidate"), "python"), "path")), "tests/resources/python/wrong.py");
	cJSON_Delete(p);
	h = task_hash16(plan, 0);
	eval = run_plan(plan, 1, &out, &err);
	assert_line(out, "[1/1] bf16-ragged-h16-ps64: parity FAIL (details in run.log), not timed");
	log = run_log(eval);
	line = fs_printf("    test.py_wrong bn64: parity FAILED: input set 0: out: 1 of 16384 elements over tolerance "
			 "(0 non-finite mismatches); worst at (b=0, s=0, h=1, d=7): expected -0.001988776, got "
			 "0.24804688; max abs err 0.25; cos_diff 0.0733 (over the 16384 finite elements); reproduce: "
			 "validate_skill --run %s --task %s --impl test.py_wrong --config bn64", plan, h);
	assert_line(log, line);
	free(line);
	free(log);
	free(out);
	free(err);
	free(eval);
	free(h);
	free(plan);
	free(args);
	free(mod);
}
END_TEST

/*
 * raises_launch.py raises in launch, runs bf16 only (KV_DTYPES) and refuses page_size 16
 * (supports()): every task it runs fails with the exception's one line and the run goes on; the
 * others are skipped with the reason, in the plan, on stdout, in run.log and in result.json; no
 * fp8 task ran, so the coverage gate fails.
 */
START_TEST(exception_in_launch_gives_one_line_and_unsupported_tasks_are_skipped)
{
	char *mod = tu_resource("python/raises_launch.py"), *args = fs_printf("--candidate-lib %s", mod), *plan, *h;
	char *out = NULL, *err = NULL, *eval, *log, *line, *rel;
	cJSON *p, *un, *r, *t, *cov;

	/* The card names the module, so that its evidence may be recorded there (implementations bound to the card). */
	plan = tu_small_plan_edit(tmp, args, 6, 1, "to_backend: cpu.splitkv", "to_backend: test.py_raises");
	p = tu_json_file(tmp, plan);
	un = cJSON_GetObjectItem(cJSON_GetObjectItem(p, "candidate"), "unsupported");
	ck_assert_int_eq(cJSON_GetArraySize(un), 4);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(un, 0), "task")), "bf16-causal-h7-ps16");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(un, 0), "reason")),
			 "page_size 16: this module reads pages of 64 rows");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(un, 1), "reason")),
			 "kv dtype fp8_e4m3_fnuz: the module's KV_DTYPES lacks it");
	cJSON_Delete(p);
	h = task_hash16(plan, 0);
	eval = run_plan(plan, 1, &out, &err);
	assert_line(out, "[1/6] bf16-ragged-h16-ps64: parity FAIL (details in run.log), not timed");
	assert_line(out, "[2/6] bf16-causal-h7-ps16: SKIPPED: candidate test.py_raises does not support it: page_size "
		    "16: this module reads pages of 64 rows");
	assert_line(out, "[3/6] bf16-page1-h32: parity FAIL (details in run.log), not timed");
	assert_line(out, "[4/6] fp8_e4m3_fnuz-ragged-h16-ps64: SKIPPED: candidate test.py_raises does not support it: "
		    "kv dtype fp8_e4m3_fnuz: the module's KV_DTYPES lacks it");
	assert_line(out, "overall isolated speedup (geomean of 0 tasks): n/a; gate >= 1.1: FAIL; parity FAIL; capture "
		    "n/a; complete FAIL; verdict failed (speedup gate, parity, incomplete: 0 of 6 tasks run to the end) "
		    "(4 tasks skipped: not supported; no task of fp8_e4m3_fnuz ran: coverage FAIL)");
	log = run_log(eval);
	line = fs_printf("    test.py_raises only: parity FAILED: %s: launch: ValueError: block_n 64 does not divide "
			 "the page (at %s:19 in _inner); reproduce: validate_skill --run %s --task %s --impl "
			 "test.py_raises --config only", mod, mod, plan, h);
	assert_line(log, line);
	free(line);
	assert_line(log, "    task bf16-causal-h7-ps16 skipped: candidate test.py_raises does not support it: page_size "
		    "16: this module reads pages of 64 rows");
	rel = fs_printf("%s/result.json", eval);
	r = tu_json_file(tmp, rel);
	t = cJSON_GetArrayItem(cJSON_GetObjectItem(r, "tasks"), 1);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(t, "parity")), "skipped");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(t, "skipped")),
			 "candidate test.py_raises does not support it: page_size 16: this module reads pages of 64 rows");
	cov = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "gates"), "coverage");
	ck_assert_int_eq((int)cJSON_GetNumberValue(cJSON_GetObjectItem(cov, "skipped")), 4);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(cov, "pass")));
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetArrayItem(cJSON_GetObjectItem(cov, "dtypes_not_run"), 0)),
			 "fp8_e4m3_fnuz");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(r, "verdict")), "failed");
	cJSON_Delete(r);
	/* Evidence with skipped tasks (never materialized) records and verifies as what it is. */
	if (!VS_KERNELS_DIRTY)
		free(tu_record_cpu_card(tmp, eval, 1));
	free(rel);
	free(log);
	free(out);
	free(err);
	free(eval);
	free(h);
	free(plan);
	free(args);
	free(mod);
}
END_TEST

/* `--run plan --task task --impl impl`: stdout has line; the exit is want_status unless that is -1. */
static void parity_only_line(const char *plan, const char *task, const char *impl, int want_status, const char *line)
{
	char *run = fs_printf("--run %s --task %s --impl %s --threads 2", plan, task, impl), *out = NULL, *err = NULL;
	int status = tu_run_tool(tmp, run, &out, &err);

	ck_assert_msg(want_status < 0 || status == want_status, "exit %d: %s\n%s", status, err, out);
	assert_line(out, line);
	free(out);
	free(err);
	free(run);
}

/*
 * A parity-only run (--impl) skips a task only for the side it checks: the baseline's parity on a
 * task the candidate refuses is checked (as the candidate's on the tasks FlashMLA's sparse decode,
 * a baseline, refuses at h_q 16), and the candidate's run still skips it. A reference's run passes
 * on its own parity (before 2026-12-05 16:00 every such run said FAIL: no side of the A/B was
 * checked) and skips the tasks that reference refuses.
 */
START_TEST(parity_only_run_checks_a_task_the_other_side_refuses)
{
	char *mod = tu_resource("python/raises_launch.py"), *args = fs_printf("--candidate-lib %s", mod), *plan;

	plan = tu_small_plan_edit(tmp, args, 6, 1, "to_backend: cpu.splitkv", "to_backend: test.py_raises");
	parity_only_line(plan, "bf16-causal-h7-ps16", "cpu.naive", 0, "[2/6] bf16-causal-h7-ps16: parity pass, not timed");
	parity_only_line(plan, "bf16-causal-h7-ps16", "test.py_raises", -1,
			 "[2/6] bf16-causal-h7-ps16: SKIPPED: candidate test.py_raises does not support it: page_size 16: "
			 "this module reads pages of 64 rows");
	free(plan);
	free(args);
	/* A reference named by --impl: its parity is the run's, and its own refusals skip. */
	args = fs_printf("--reference numpy.mla_decode --reference %s", mod);
	plan = tu_small_plan(tmp, args, 6, 1);
	parity_only_line(plan, "bf16-ragged-h16-ps64", "numpy.mla_decode", 0,
			 "[1/6] bf16-ragged-h16-ps64: parity pass, not timed");
	parity_only_line(plan, "bf16-causal-h7-ps16", "test.py_raises", -1,
			 "[2/6] bf16-causal-h7-ps16: SKIPPED: reference test.py_raises does not support it: page_size 16: "
			 "this module reads pages of 64 rows");
	free(plan);
	free(args);
	free(mod);
}
END_TEST

/*
 * A run cut short (the runner killed after its first task, as a device lease that ends kills it)
 * keeps the finished task's run.log lines, and its reference's outcome, in run.log.partial; a run
 * that completes removes it.
 */
START_TEST(run_cut_short_keeps_the_finished_tasks_log)
{
	char *mod = tu_resource("python/kills_runner.py"), *plan;
	char *args = fs_printf("--candidate-lib %s --reference cpu.splitkv", mod);
	char *out = NULL, *err = NULL, *run, *path, *text;
	int status;

	plan = tu_small_plan_edit(tmp, args, 2, 1, "to_backend: cpu.splitkv", "to_backend: test.py_kills_runner");
	run = fs_printf("--run %s --threads 2 --run-id cut-short", plan);
	status = tu_run_tool(tmp, run, &out, &err);
	ck_assert_msg(status != 0, "the run was not cut short: %s\n%s", err, out);
	path = fs_printf("%s/results/mla_decode_cpu_splitkv/cut-short/run.log.partial", tmp);
	text = tu_read(path, NULL);
	ck_assert_msg(text != NULL, "no %s: %s\n%s", path, err, out);
	ck_assert_msg(!strncmp(text, "[1/2] bf16-ragged-h16-ps64: speedup ", 36) && strstr(text, ", parity pass\n"),
		      "%s", text);
	/* the reference's outcome on the task too, which run.log.partial alone keeps of a cut run */
	ck_assert_msg(strstr(text, "\n    reference cpu.splitkv: ") && strstr(text, " ms, t_ref / t_cand "), "%s", text);
	ck_assert_ptr_null(strstr(text, "bf16-causal-h7-ps16"));
	free(text);
	free(path);
	free(out);
	free(err);
	free(run);
	/* A run that completes leaves run.log only. */
	run = fs_printf("--run %s --threads 2 --task bf16-ragged --run-id completes", plan);
	status = tu_run_tool(tmp, run, &out, &err);
	ck_assert_msg(status == 0 || status == 1, "exit %d: %s\n%s", status, err, out);
	path = fs_printf("%s/results/mla_decode_cpu_splitkv/.debug/completes/run.log.partial", tmp);
	ck_assert_int_ne(access(path, F_OK), 0);
	free(path);
	path = fs_printf("%s/results/mla_decode_cpu_splitkv/.debug/completes/run.log", tmp);
	ck_assert_int_eq(access(path, F_OK), 0);
	free(path);
	free(out);
	free(err);
	free(run);
	free(plan);
	free(args);
	free(mod);
}
END_TEST

/* A plan whose unsupported list was edited (a task skipped by hand) is refused. */
START_TEST(edited_unsupported_list_is_refused)
{
	char *mod = tu_resource("python/raises_launch.py"), *args = fs_printf("--candidate-lib %s", mod), *plan, *path;
	char *out = NULL, *err = NULL, *text, *line;
	cJSON *p, *un;
	int status;

	plan = tu_small_plan(tmp, args, 2, 1);
	p = tu_json_file(tmp, plan);
	un = cJSON_GetObjectItem(cJSON_GetObjectItem(p, "candidate"), "unsupported");
	cJSON_SetValuestring(cJSON_GetObjectItem(cJSON_GetArrayItem(un, 0), "reason"), "too slow to show");
	text = cJSON_Print(p);
	path = fs_join(tmp, plan);
	tu_write(path, text, strlen(text));
	free(args);
	args = fs_printf("--run %s", plan);
	status = tu_run_tool(tmp, args, &out, &err);
	line = fs_printf("validate_skill: error: %s: candidate 'test.py_raises' on task bf16-causal-h7-ps16: the plan "
			 "says 'too slow to show', its supports() says 'page_size 16: this module reads pages of 64 "
			 "rows' now: emit the plan again\n", plan);
	ck_assert_msg(status == 3 && !strcmp(err, line), "exit %d:\n%s\nwanted:\n%s", status, err, line);
	free(line);
	free(out);
	free(err);
	free(text);
	free(path);
	cJSON_Delete(p);
	free(plan);
	free(args);
	free(mod);
}
END_TEST

START_TEST(module_writing_into_q_is_caught_by_the_input_check)
{
	char *mod = tu_resource("python/writes_q.py"), *args = fs_printf("--candidate-lib %s", mod), *plan, *h;
	char *out = NULL, *err = NULL, *eval, *log, *line;

	plan = tu_small_plan(tmp, args, 1, 2);
	h = task_hash16(plan, 0);
	eval = run_plan(plan, 1, &out, &err);
	log = run_log(eval);
	/* Through the view: numpy refuses (the view is read-only); around it: the input check. */
	line = fs_printf("    test.py_writes_q direct: parity FAILED: %s: launch: ValueError: assignment destination "
			 "is read-only (at %s:16 in launch); reproduce: validate_skill --run %s --task %s --impl "
			 "test.py_writes_q --config direct", mod, mod, plan, h);
	assert_line(log, line);
	free(line);
	line = fs_printf("    test.py_writes_q ctypes: parity FAILED: input 'q' of set 0 was modified by the launch; "
			 "reproduce: validate_skill --run %s --task %s --impl test.py_writes_q --config ctypes", plan, h);
	assert_line(log, line);
	free(line);
	free(log);
	free(out);
	free(err);
	free(eval);
	free(h);
	free(plan);
	free(args);
	free(mod);
}
END_TEST

/*
 * A module bound to the buffers prepare() gave it (torch.mla_decode's own CUDA graph): the harness
 * prepares every buffer set a config is launched on (each input set, the second output pair, the
 * fresh q at its two addresses) before the first launch, so parity passes and the A/B times it, as
 * the candidate and as a reference.
 */
START_TEST(module_bound_to_prepared_buffers_runs_on_every_buffer_set)
{
	char *mod = tu_resource("python/bound_buffers.py");

	for (int as_ref = 0; as_ref < 2; as_ref++) {
		char *args = as_ref ? fs_printf("--candidate numpy.mla_decode --reference %s", mod) :
				      fs_printf("--candidate-lib %s --reference numpy.mla_decode", mod);
		char *plan = tu_small_plan(tmp, args, 2, 1), *out = NULL, *err = NULL, *eval, *rel;
		cJSON *r, *t;

		eval = run_plan(plan, -1, &out, &err);
		ck_assert_msg(strstr(out, "; parity pass; capture n/a; complete pass; verdict "), "%s", out);
		rel = fs_printf("%s/result.json", eval);
		r = tu_json_file(tmp, rel);
		cJSON_ArrayForEach(t, cJSON_GetObjectItem(r, "tasks")) {
			cJSON *ref = cJSON_GetArrayItem(cJSON_GetObjectItem(t, "references"), 0);
			char *text = cJSON_PrintUnformatted(ref);

			ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(t, "parity")), "pass");
			ck_assert_msg(cJSON_IsObject(cJSON_GetObjectItem(ref, "ratio")), "reference not timed: %s", text);
			free(text);
		}
		cJSON_Delete(r);
		free(rel);
		free(out);
		free(err);
		free(eval);
		free(plan);
		free(args);
	}
	free(mod);
}
END_TEST

/* CPU plans time the launch: graph replay is refused there, and a mode that does not exist. */
START_TEST(timing_mode_is_checked_at_emit)
{
	struct {
		const char *args;
		int status;
		const char *err;
	} cases[] = {
		{"--timing graph_replay", 2, "validate_skill: error: --timing graph_replay needs a GPU plan: the CPU has "
					     "no graphs (its plans time the launch)\n"},
		{"--timing fast", 2, "validate_skill: error: --timing 'fast': the timing modes are graph_replay and "
				     "launch\n"},
	};
	char *src = tu_resource("skills/mla_decode_cpu_splitkv.md"), *dir = fs_join(tmp, "skills");
	char *dst = fs_join(dir, "mla_decode_cpu_splitkv.md"), *card = tu_read(src, NULL);

	fs_mkdir_p(dir);
	tu_write(dst, card, strlen(card));
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		char *args = fs_printf("--emit-plan skills/mla_decode_cpu_splitkv.md %s", cases[k].args), *out = NULL,
		     *err = NULL;
		int status = tu_run_tool(tmp, args, &out, &err);

		ck_assert_msg(status == cases[k].status && !strcmp(err, cases[k].err), "%s: exit %d: %s", args, status,
			      err);
		free(args);
		free(out);
		free(err);
	}
	free(card);
	free(dst);
	free(dir);
	free(src);
}
END_TEST

/* The Triton of .venv-triton (or $VS_TRITON_PYTHON) as $VS_PYTHON, or NULL (the caller says so and stops). */
static char *triton_interpreter(const char *test)
{
	const char *env = getenv("VS_TRITON_PYTHON");
	char *py = env && *env ? strdup(env) : fs_printf("%s/.venv-triton/bin/python", getenv("VS_SOURCE_DIR"));

	if (fs_exists(py)) {
		setenv("VS_PYTHON", py, 1);
		return py;
	}
	fprintf(stderr, "%s: no Triton (%s): run tools/install-deps\n", test, py);
	free(py);
	return NULL;
}

/* The first element of result.json's task i "autotune" list, parsed into *root (freed by the caller). */
static const cJSON *task_autotune(cJSON **root, const char *eval, int i)
{
	char *rel = fs_printf("%s/result.json", eval);

	*root = tu_json_file(tmp, rel);
	free(rel);
	return cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(*root, "tasks"), i),
						      "autotune"),
				  0);
}

/*
 * A module whose launch goes through Triton's Autotuner (issue 41, item 3; tests/resources/python/
 * autotuned.py): the plan lists its autotuner (kernel, key, configs; on x86_64 "not checked
 * ahead"), plan reading refuses a list that is not the module's any more, and the run names the
 * config the autotuner dropped (its OutOfResources) and counts its benchmarks by phase in run.log
 * and result.json, with no flag: it tuned once, in parity. autotuned_retune.py tunes at every
 * launch, the timed ones included: the task is flagged, its times include benchmarking.
 */
START_TEST(autotuned_module_is_listed_and_its_benchmarks_reported)
{
	char *py = triton_interpreter("autotuned_module_is_listed_and_its_benchmarks_reported");
	char *mod, *args, *plan, *out = NULL, *err = NULL, *eval, *log, *text, *edited, *at, *path, *cmd;
	cJSON *p, *r;
	const cJSON *a, *c;
	int status;

	if (!py)
		return;
	mod = tu_resource("python/autotuned.py");
	args = fs_printf("--candidate-lib %s", mod);
	plan = tu_small_plan(tmp, args, 1, 1);
	p = tu_json_file(tmp, plan);
	a = cJSON_GetArrayItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "candidate"), "python"), "autotune"), 0);
	ck_assert_ptr_nonnull(a);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(a, "kernel")), "_decode");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(a, "configs")), 3);
	c = cJSON_GetArrayItem(cJSON_GetObjectItem(a, "configs"), 2);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(c, "label")), "BLOCK=512, num_warps=8, num_stages=2");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(a, "ahead"), "why")),
			 "not checked ahead: x86_64 is not a generation Triton compiles for here (sm_90, sm_120, gfx942, "
			 "gfx950)");
	cJSON_Delete(p);
	/* Plan reading re-checks the list: a config label that is not the module's is refused. */
	path = fs_join(tmp, plan);
	text = tu_read(path, NULL);
	at = strstr(text, "BLOCK=512, num_warps=8");
	ck_assert_ptr_nonnull(at);
	edited = strdup(text);
	memcpy(edited + (at - text), "BLOCK=256", 9);
	tu_write(path, edited, strlen(edited));
	cmd = fs_printf("--run %s --threads 2", plan);
	status = tu_run_tool(tmp, cmd, &out, &err);
	free(cmd);
	ck_assert_msg(status != 0 && tu_count_lines(err) == 1 &&
			      strstr(err, "autotune _decode: config 'BLOCK=256, num_warps=8, num_stages=2' of the plan is "
					  "'BLOCK=512, num_warps=8, num_stages=2' now: emit the plan again"),
		      "exit %d: %s", status, err);
	free(out);
	free(err);
	tu_write(path, text, strlen(text));
	eval = run_plan(plan, -1, &out, &err);
	log = run_log(eval);
	assert_line(log, "    autotune _decode (test.py_autotuned): dropped BLOCK=512, num_warps=8, num_stages=2: "
			 "OutOfResources: out of resource: shared memory, Required: 262144, Hardware limit: 163840. "
			 "Reducing block sizes or `num_stages` may help.");
	ck_assert_msg(strstr(log, "    autotune _decode (test.py_autotuned): ") &&
			      strstr(log, " launches, benchmarked 3 configs in 1 tuning (parity 3); chose BLOCK="),
		      "%s", log);
	ck_assert_msg(!strstr(log, "inside timed launches") && !strstr(log, "inside a graph capture"), "%s", log);
	a = task_autotune(&r, eval, 0);
	ck_assert_int_eq((int)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "benchmarks")), 3);
	ck_assert_int_eq((int)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "timed")), 0);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(r, "flags")), 0);
	cJSON_Delete(r);
	free(log);
	free(eval);
	free(out);
	free(err);
	free(plan);
	free(args);
	free(mod);
	free(text);
	free(edited);

	mod = tu_resource("python/autotuned_retune.py");
	args = fs_printf("--candidate-lib %s", mod);
	plan = tu_small_plan(tmp, args, 1, 1);
	eval = run_plan(plan, -1, &out, &err);
	log = run_log(eval);
	ck_assert_msg(strstr(log, "    autotune _decode (test.py_autotuned_retune) benchmarked ") &&
			      strstr(log, " configs inside timed launches: those samples include benchmarking\n"),
		      "%s", log);
	a = task_autotune(&r, eval, 0);
	ck_assert_int_gt((int)cJSON_GetNumberValue(cJSON_GetObjectItem(a, "timed")), 0);
	ck_assert_int_gt((int)cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(a, "by_phase"), "A/B")), 0);
	text = cJSON_PrintUnformatted(cJSON_GetObjectItem(r, "flags"));
	ck_assert_msg(strstr(text, "task bf16-ragged-h16-ps64: autotune _decode (test.py_autotuned_retune) benchmarked ") &&
			      strstr(text, " configs inside timed launches: its times include benchmarking"),
		      "%s", text);
	free(text);
	cJSON_Delete(r);
	free(log);
	free(eval);
	free(out);
	free(err);
	free(plan);
	free(args);
	free(mod);
	free(path);
	free(py);
}
END_TEST

/*
 * At --emit-plan for sm_90, each config of an autotuned cuda module is compiled ahead
 * (tools/gpu/triton_autotune_fit.py): the plan and its summary name the config the autotuner would
 * prune there, with its shared memory and the limit (tests/resources/python/autotuned_gpu.py).
 */
START_TEST(autotuned_configs_over_the_generation_are_named_at_emit)
{
	char *py = triton_interpreter("autotuned_configs_over_the_generation_are_named_at_emit");
	char *mod, *args, *plan, *out = NULL, *err = NULL, *cmd;
	cJSON *p;
	const cJSON *a, *c;
	int status;

	if (!py)
		return;
	mod = tu_resource("python/autotuned_gpu.py");
	args = fs_printf("--baseline hip.flash --candidate-lib %s", mod);
	plan = tu_small_plan_edit(tmp, args, 1, 1, "gens: [x86_64]", "gens: [sm_90]");
	p = tu_json_file(tmp, plan);
	a = cJSON_GetArrayItem(
		cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(p, "candidate"), "python"), "autotune"), 0);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(a, "ahead"), "checked")));
	c = cJSON_GetArrayItem(cJSON_GetObjectItem(a, "configs"), 1);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "ahead"), "fits")));
	ck_assert_int_eq((int)cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "ahead"), "shared")), 131072);
	c = cJSON_GetArrayItem(cJSON_GetObjectItem(a, "configs"), 2);
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetObjectItem(c, "ahead"), "fits")));
	cJSON_Delete(p);
	cmd = fs_printf("--emit-plan skills/mla_decode_cpu_splitkv.md %s --out again.plan.json", args);
	status = tu_run_tool(tmp, cmd, &out, &err);
	ck_assert_msg(status == 0, "exit %d: %s", status, err);
	assert_line(out, "  candidate  autotune _gemm_kernel: 3 configs, key (M, N, K); pruned by early_config_prune "
			 "_keep_all; reset_to_zero C");
	assert_line(out, "               BM=128, BN=128, BK=256, num_warps=8, num_stages=2: fits sm_90 (131072 bytes of "
			 "shared memory)");
	assert_line(out, "               BM=256, BN=256, BK=256, num_warps=8, num_stages=2, maxnreg=255: the autotuner "
			 "would prune it at launch: out of resources: shared memory (262144 > 232448, the sm_90 limit "
			 "per block)");
	free(cmd);
	free(out);
	free(err);
	free(plan);
	free(args);
	free(mod);
	free(py);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("pyrun");
	TCase *tc = tcase_create("pyrun");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, numpy_by_its_name_passes_parity_and_is_bound_by_sha256);
	tcase_add_test(tc, config_sides_of_one_module_have_their_own_setup);
	tcase_add_test(tc, numpy_by_its_name_is_a_reference);
	tcase_add_test(tc, module_edited_after_the_plan_is_refused);
	tcase_add_test(tc, helper_file_is_bound_by_the_plan_and_the_evidence);
	tcase_add_test(tc, plan_without_helpers_runs_and_records_those_loaded);
	tcase_add_test(tc, helper_imported_lazily_fails_the_task);
	tcase_add_test(tc, wrong_module_is_caught_with_its_worst_element);
	tcase_add_test(tc, exception_in_launch_gives_one_line_and_unsupported_tasks_are_skipped);
	tcase_add_test(tc, parity_only_run_checks_a_task_the_other_side_refuses);
	tcase_add_test(tc, run_cut_short_keeps_the_finished_tasks_log);
	tcase_add_test(tc, edited_unsupported_list_is_refused);
	tcase_add_test(tc, module_writing_into_q_is_caught_by_the_input_check);
	tcase_add_test(tc, module_bound_to_prepared_buffers_runs_on_every_buffer_set);
	tcase_add_test(tc, timing_mode_is_checked_at_emit);
	tcase_add_test(tc, autotuned_module_is_listed_and_its_benchmarks_reported);
	tcase_add_test(tc, autotuned_configs_over_the_generation_are_named_at_emit);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	if (access("/usr/bin/python3", X_OK) != 0)
		return 77; /* tools/install-deps installs python3 and python3-numpy */
	return tu_run_suite(suite());
}
