/*
 * check_references.c - the reference role end to end on the CPU (docs/DESIGN.md "References"):
 * `--emit-plan --reference` records built-ins and plugins (sha256) with the tasks each skips and
 * why (a test plugin's supports()); a run times them in the candidate's rounds and writes their
 * ratios into result.json; a reference failing parity is reported without ratios and does not fail
 * the card; --record, --verify and --merge recompute and check them (a hand-edited ratio, a changed
 * plugin file); --report shows them in every format. The measurement side (round order, skips, the
 * capture gate) is in check_runner.c.
 */
#include "testutil.h"

#include "card.h"
#include "fsutil.h"
#include "mla_decode.h"
#include "plan.h"
#include "report.h"
#include "vs_error.h"

#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

static char *tmp;

static void setup(void)
{
	vs_error_set_quiet(1);
	tmp = tu_tmpdir();
}

static void teardown(void)
{
	fs_remove_tree(tmp);
	free(tmp);
	vs_error_set_quiet(0);
}

/* A plugin of the test build: $VS_PLUGIN_DIR/<name>.so (malloc'd). */
static char *plugin(const char *name)
{
	const char *dir = getenv("VS_PLUGIN_DIR");

	ck_assert_msg(dir != NULL, "VS_PLUGIN_DIR is not set");
	return fs_printf("%s/%s.so", dir, name);
}

/* Run the tool in tmp; the exit status must be want. Returns stdout; *err_out gets stderr. */
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

static void write_json(const char *dir, const char *name, const cJSON *j)
{
	char *path = fs_join(dir, name), *text = cJSON_Print(j);

	chmod(path, 0644);
	tu_write(path, text, strlen(text));
	cJSON_free(text);
	free(path);
}

static const char *jstr(const cJSON *o, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

/* The test binary may come from a work tree with local changes: its evidence stands for a clean build. */
static void mark_clean(const char *eval)
{
	cJSON *r = tu_json_file(eval, "result.json");

	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(r, "tool"), "kernels_dirty", cJSON_CreateFalse());
	write_json(eval, "result.json", r);
	cJSON_Delete(r);
}

/* ---- the plan ------------------------------------------------------------------------------- */

static int build(struct plan *p, const char *const *refs, int nrefs)
{
	struct card c;
	char *card = tu_resource("skills/mla_decode_cpu_splitkv.md");
	struct plan_options o = {.tier = "smoke", .references = refs, .nreferences = nrefs};
	int err;

	memset(p, 0, sizeof(*p));
	ck_assert_int_eq(card_load(&c, card), 0);
	err = plan_build(p, &c, &o);
	card_release(&c);
	free(card);
	return err;
}

START_TEST(plan_records_references_and_the_tasks_they_skip)
{
	char *example = plugin("example"), *picky = plugin("picky");
	const char *refs[3] = {"cpu.naive", example, picky};
	struct plan p, q;
	char *text = NULL, *again = NULL;
	int picky_skips = 0;

	ck_assert_msg(build(&p, refs, 3) == 0, "%s", vs_last_error());
	ck_assert_int_eq(p.nrefs, 3);
	ck_assert_str_eq(p.refs[0].impl.name, "cpu.naive"); /* the baseline may be a reference too */
	ck_assert_ptr_null(p.refs[0].impl.plugin_path);
	ck_assert_str_eq(p.refs[1].impl.name, "example.online");
	ck_assert_str_eq(p.refs[1].impl.plugin_path, example);
	ck_assert_int_eq((int)strlen(p.refs[1].impl.plugin_sha256), 64);
	ck_assert_str_eq(p.refs[2].impl.name, "example.picky");
	for (int i = 0; i < p.ntasks; i++) {
		const char *why = plan_reference_skip(&p, 2, i);

		ck_assert_msg(!plan_reference_skip(&p, 0, i) && !plan_reference_skip(&p, 1, i), "%s skipped",
			      p.tasks[i].name);
		ck_assert_msg(!why == (p.tasks[i].page_size != 1), "task %s (page_size %d): skip '%s'", p.tasks[i].name,
			      p.tasks[i].page_size, why ? why : "(none)");
		if (why) {
			ck_assert_str_eq(why, "page_size 1: this plugin reads whole pages of 16 rows or more");
			picky_skips++;
		}
	}
	ck_assert_int_eq(picky_skips, 2); /* bf16 and fp8 page1-h32 */
	/* the file round-trips, and a reader gets the same references and skips */
	ck_assert_int_eq(plan_to_text(&text, &p), 0);
	ck_assert_ptr_nonnull(strstr(text, "\"references\""));
	ck_assert_int_eq(plan_parse(&q, text, strlen(text), "test.plan.json"), 0);
	ck_assert_int_eq(plan_to_text(&again, &q), 0);
	ck_assert_str_eq(text, again);
	ck_assert_str_eq(plan_reference_skip(&q, 2, p.ntasks - 1), plan_reference_skip(&p, 2, p.ntasks - 1));
	plan_release(&q);
	free(again);
	plan_release(&p);
	free(text);
	/* without references the plan has no such key (the plans and evidence of before stay as they were) */
	ck_assert_int_eq(build(&p, NULL, 0), 0);
	ck_assert_int_eq(plan_to_text(&text, &p), 0);
	ck_assert_ptr_null(strstr(text, "references"));
	plan_release(&p);
	free(text);
	free(example);
	free(picky);
}
END_TEST

/* A CPU implementation with code for no generation of this machine. */
static int gpu_only_configs(const char *arch, struct mla_decode_config *out, int cap)
{
	(void)arch;
	(void)out;
	(void)cap;
	return MLA_EUNSUPPORTED;
}

static size_t no_workspace(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	(void)a;
	(void)c;
	return 0;
}

static int never_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	(void)a;
	(void)c;
	return MLA_EUNSUPPORTED;
}

static const struct mla_decode_impl no_configs_impl = {MLA_DECODE_ABI_VERSION, "test.no_configs", "cpu", "",
						       gpu_only_configs, no_workspace, never_launch, NULL, NULL};

START_TEST(reference_without_configs_skips_every_task)
{
	const char *refs[1] = {"test.no_configs"};
	struct plan p, q;
	char *text = NULL;

	ck_assert_int_eq(mla_decode_impl_register(&no_configs_impl), MLA_OK);
	ck_assert_msg(build(&p, refs, 1) == 0, "%s", vs_last_error());
	ck_assert_int_eq(p.refs[0].impl.nconfigs, 0);
	for (int i = 0; i < p.ntasks; i++)
		ck_assert_str_eq(plan_reference_skip(&p, 0, i), "no configs for generation 'x86_64'");
	ck_assert_int_eq(plan_to_text(&text, &p), 0);
	ck_assert_msg(plan_parse(&q, text, strlen(text), "t.plan.json") == 0, "%s", vs_last_error());
	ck_assert_int_eq(q.refs[0].impl.nconfigs, 0);
	plan_release(&q);
	plan_release(&p);
	free(text);
}
END_TEST

START_TEST(plan_refuses_bad_references)
{
	static const struct {
		const char *refs[5];
		int n, err;
		const char *msg;
	} cases[] = {
		{{"cpu.splitkv"}, 1, VS_EUSAGE, "is the candidate"},
		{{"cpu.naive", "cpu.naive"}, 2, VS_EUSAGE, "another reference"},
		{{"cpu.nope"}, 1, VS_ENOTFOUND, "names no implementation"},
		{{"hip.flash"}, 1, VS_EUNSUPPORTED, "cannot run generation"},
		{{"./missing.so"}, 1, VS_ENOTFOUND, "missing.so"},
		{{"cpu.naive", "a", "b", "c", "d"}, 5, VS_EUSAGE, "at most 4"},
	};
	struct plan p;

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		int err = build(&p, cases[k].refs, cases[k].n);

		ck_assert_msg(err == cases[k].err && strstr(vs_last_error(), cases[k].msg),
			      "case %zu: error %d (want %d): %s", k, err, cases[k].err, vs_last_error());
		plan_release(&p);
	}
}
END_TEST

START_TEST(edited_reference_skips_are_refused)
{
	char *picky = plugin("picky");
	const char *refs[1] = {picky};
	struct plan p, q;
	char *text = NULL, *edited;
	cJSON *j, *skips;

	ck_assert_int_eq(build(&p, refs, 1), 0);
	ck_assert_int_eq(plan_to_text(&text, &p), 0);
	/* a skip removed: the plan would run a task the implementation says it cannot */
	j = cJSON_Parse(text);
	skips = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "references"), 0), "skips");
	ck_assert_int_eq(cJSON_GetArraySize(skips), 2);
	cJSON_DeleteItemFromArray(skips, 0);
	edited = cJSON_Print(j);
	ck_assert_int_eq(plan_parse(&q, edited, strlen(edited), "e.plan.json"), VS_ESCHEMA);
	ck_assert_msg(strstr(vs_last_error(), "emit it again"), "%s", vs_last_error());
	cJSON_free(edited);
	/* a skip added: a task left out that the implementation runs */
	{
		cJSON *s = cJSON_CreateObject();

		cJSON_AddStringToObject(s, "task", p.task_hash[0]);
		cJSON_AddStringToObject(s, "name", p.tasks[0].name);
		cJSON_AddStringToObject(s, "reason", "too slow to show");
		cJSON_AddItemToArray(skips, cJSON_Duplicate(cJSON_GetArrayItem(skips, 0), 1));
		cJSON_DeleteItemFromArray(skips, 0);
		cJSON_AddItemToArray(skips, s);
	}
	edited = cJSON_Print(j);
	ck_assert_int_eq(plan_parse(&q, edited, strlen(edited), "e.plan.json"), VS_ESCHEMA);
	cJSON_free(edited);
	cJSON_Delete(j);
	plan_release(&p);
	free(text);
	free(picky);
}
END_TEST

/* ---- runs ----------------------------------------------------------------------------------- */

/* The reference entry k of task t (a cJSON tasks[] item). */
static const cJSON *task_ref(const cJSON *t, int k)
{
	return cJSON_GetArrayItem(cJSON_GetObjectItem(t, "references"), k);
}

/*
 * The baseline against the references of the same run: t_base / t_ref = speedup / ratio; a task
 * where it passes the bound is flagged, naming the reference furthest ahead; untimed references and
 * untimed tasks never flag.
 */
START_TEST(baseline_slower_than_a_reference_is_flagged)
{
	static const char *task =
		"{\"name\": \"t1\", \"speedup\": {\"estimate\": 3.0, \"ci95\": [2.9, 3.1]}, \"references\": ["
		"{\"impl\": \"ref.slow\", \"ratio\": {\"estimate\": 2.5}},"
		"{\"impl\": \"ref.fast\", \"ratio\": {\"estimate\": 1.5}},"
		"{\"impl\": \"ref.faster\", \"ratio\": {\"estimate\": 1.2}},"
		"{\"impl\": \"ref.failed\", \"status\": \"failed\"}]}";
	cJSON *t = cJSON_Parse(task);
	char *flag = report_baseline_flag(t, 1.5);

	ck_assert_ptr_nonnull(flag);
	ck_assert_str_eq(flag, "task t1: the baseline ran 2.50x slower than reference ref.faster in the same run "
			       "(review bound 1.5x): the speedup is over a kernel that is not the fastest one measured here");
	free(flag);
	/* at the bound exactly: no flag */
	ck_assert_ptr_null(report_baseline_flag(t, 2.5));
	ck_assert_ptr_null(report_baseline_flag(t, 3.0));
	/* an untimed task (no speedup) never flags */
	cJSON_DeleteItemFromObject(t, "speedup");
	ck_assert_ptr_null(report_baseline_flag(t, 1.0));
	cJSON_Delete(t);
	/* a task whose references all failed never flags */
	t = cJSON_Parse("{\"name\": \"t2\", \"speedup\": {\"estimate\": 9.0}, \"references\": "
			"[{\"impl\": \"r\", \"ratio\": null}]}");
	ck_assert_ptr_null(report_baseline_flag(t, 1.0));
	cJSON_Delete(t);
}
END_TEST

/*
 * Measurement fidelity: a side whose chosen config the A/B timed beyond 1.2x (or below 1 / 1.2) its
 * tuning median flags the task, the farthest side named; an untuned side (no tune_median_ms), an
 * untimed one, or a ratio within the bound does not.
 */
static cJSON *tuned_task(const char *cand_tune, const char *cand_ab, const char *ref_tune, const char *ref_ab)
{
	char *js = fs_printf(
		"{\"name\": \"t\", \"baseline\": {\"impl\": \"b\", \"chosen\": \"x\", \"configs\": [{\"name\": \"x\"}], "
		"\"timing\": {\"median_ms\": 1.0}}, \"candidate\": {\"impl\": \"c\", \"chosen\": \"fast\", \"configs\": "
		"[{\"name\": \"slow\", \"tune_median_ms\": 0.03}, {\"name\": \"fast\"%s%s}]%s%s%s}, \"references\": "
		"[{\"impl\": \"r\", \"chosen\": \"y\", \"configs\": [{\"name\": \"y\"%s%s}]%s%s%s}]}",
		cand_tune ? ", \"tune_median_ms\": " : "", cand_tune ? cand_tune : "", cand_ab ? ", \"timing\": {\"median_ms\": " : "",
		cand_ab ? cand_ab : "", cand_ab ? "}" : "", ref_tune ? ", \"tune_median_ms\": " : "", ref_tune ? ref_tune : "",
		ref_ab ? ", \"timing\": {\"median_ms\": " : "", ref_ab ? ref_ab : "", ref_ab ? "}" : "");
	cJSON *t = cJSON_Parse(js);

	ck_assert_msg(t != NULL, "%s", js);
	free(js);
	return t;
}

START_TEST(chosen_config_timed_far_from_its_tuning_is_flagged)
{
	static const struct {
		const char *ct, *ca, *rt, *ra; /* candidate tuning / A/B median, reference's */
		const char *flag;              /* NULL: no flag */
	} cases[] = {
		{"0.0176", "0.0250", "1", "1.05",
		 "task t: c's config fast took 0.0250 ms in the A/B against 0.0176 ms when tuned (1.42x): the tuning pass "
		 "chose it under other conditions than the A/B's, so another config may be faster there"},
		{"1", "1", "0.02", "0.01",
		 "task t: r's config y took 0.0100 ms in the A/B against 0.0200 ms when tuned (0.50x): the tuning pass "
		 "chose it under other conditions than the A/B's, so another config may be faster there"},
		{"0.0176", "0.0250", "0.01", "0.03",
		 "task t: r's config y took 0.0300 ms in the A/B against 0.0100 ms when tuned (3.00x): the tuning pass "
		 "chose it under other conditions than the A/B's, so another config may be faster there"},
		{"1", "1.19", "1", "0.85", NULL},   /* within the bound both ways */
		{NULL, "5", NULL, "5", NULL},       /* not tuned (one passing config) */
		{"0.0176", NULL, "1", NULL, NULL}, /* not timed */
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(*cases); k++) {
		cJSON *t = tuned_task(cases[k].ct, cases[k].ca, cases[k].rt, cases[k].ra);
		char *flag = report_tuning_flag(t, VS_TUNING_REVIEW_BOUND);

		if (cases[k].flag)
			ck_assert_msg(flag && !strcmp(flag, cases[k].flag), "case %zu: %s", k, flag ? flag : "(none)");
		else
			ck_assert_msg(flag == NULL, "case %zu flagged: %s", k, flag);
		free(flag);
		cJSON_Delete(t);
	}
}
END_TEST

/*
 * Do no harm: a task whose speedup CI lies below 1 is flagged whatever the geometric mean, and so is
 * an e2e stage whose e2e_pct CI lies below 0; a CI that reaches 1 (or 0) does not flag.
 */
START_TEST(candidate_slower_than_the_baseline_is_flagged)
{
	/* no flag: a task whose CI reaches 1, one without CI, one not timed; an e2e CI that reaches 0, no
	 * e2e stage */
	static const struct {
		char *(*check)(const cJSON *);
		const char *json;
	} no_flag[] = {
		{report_harm_flag, "{\"name\": \"even\", \"speedup\": {\"estimate\": 0.99, \"ci95\": [0.97, 1.0]}}"},
		{report_harm_flag, "{\"name\": \"noci\", \"speedup\": {\"estimate\": 0.5}}"},
		{report_harm_flag, "{\"name\": \"untimed\"}"},
		{report_e2e_harm_flag, "{\"e2e\": {\"step\": \"s\", \"e2e_pct\": {\"estimate\": -0.1, \"ci95\": [-0.3, 0.2]}}}"},
		{report_e2e_harm_flag, "{\"tasks\": []}"},
	};
	cJSON *t = cJSON_Parse("{\"name\": \"big\", \"speedup\": {\"estimate\": 0.541, \"ci95\": [0.538, 0.567]}}");
	char *flag = report_harm_flag(t);

	ck_assert_ptr_nonnull(flag);
	ck_assert_str_eq(flag, "task big: the candidate ran slower than the baseline (speedup 0.541 [0.538, 0.567]): "
			       "the card's gate is a geometric mean over its tasks, and this one lost");
	free(flag);
	cJSON_Delete(t);
	t = cJSON_Parse("{\"e2e\": {\"step\": \"deepseek_v3.step\", \"e2e_pct\": {\"estimate\": -2.4875, "
			"\"ci95\": [-2.7178, -2.3624]}}}");
	flag = report_e2e_harm_flag(t);
	ck_assert_ptr_nonnull(flag);
	ck_assert_str_eq(flag, "e2e: the model step (deepseek_v3.step) ran slower with the candidate: e2e_pct "
			       "-2.49% [-2.72, -2.36] over the e2e tasks, whatever the isolated speedup says");
	free(flag);
	cJSON_Delete(t);
	for (size_t k = 0; k < sizeof(no_flag) / sizeof(*no_flag); k++) {
		t = cJSON_Parse(no_flag[k].json);
		ck_assert_msg(no_flag[k].check(t) == NULL, "%s", no_flag[k].json);
		cJSON_Delete(t);
	}
}
END_TEST

/*
 * The port must stand beside the best kernel: a reference whose t_ref / t_cand CI lies below 1 flags
 * the task, the fastest such reference named; a CI that reaches 1, a ratio without CI, an untimed
 * reference and the baseline as a reference (its ratio repeats the speedup) do not.
 */
START_TEST(reference_faster_than_the_candidate_is_flagged)
{
	static const char *no_flag[] = {
		"{\"name\": \"t\", \"references\": [{\"impl\": \"r\", \"ratio\": {\"estimate\": 0.9, \"ci95\": [0.8, 1.0]}}]}",
		"{\"name\": \"t\", \"references\": [{\"impl\": \"r\", \"ratio\": {\"estimate\": 0.5}}]}",
		"{\"name\": \"t\", \"references\": [{\"impl\": \"r\", \"status\": \"failed\", \"ratio\": null}]}",
		"{\"name\": \"t\", \"baseline\": {\"impl\": \"b\"}, \"references\": "
		"[{\"impl\": \"b\", \"ratio\": {\"estimate\": 0.5, \"ci95\": [0.4, 0.6]}}]}",
		"{\"name\": \"t\"}",
	};
	static const char *task =
		"{\"name\": \"t1\", \"baseline\": {\"impl\": \"b\"}, \"references\": ["
		"{\"impl\": \"b\", \"ratio\": {\"estimate\": 0.5, \"ci95\": [0.4, 0.6]}},"
		"{\"impl\": \"ref.slow\", \"ratio\": {\"estimate\": 1.2, \"ci95\": [1.1, 1.3]}},"
		"{\"impl\": \"ref.fast\", \"ratio\": {\"estimate\": 0.95, \"ci95\": [0.94, 0.96]}},"
		"{\"impl\": \"ref.faster\", \"ratio\": {\"estimate\": 0.875, \"ci95\": [0.870, 0.881]}},"
		"{\"impl\": \"ref.wide\", \"ratio\": {\"estimate\": 0.7, \"ci95\": [0.5, 1.01]}}]}";
	cJSON *t = cJSON_Parse(task);
	char *flag = report_outpaced_flag(t);

	ck_assert_ptr_nonnull(flag);
	ck_assert_str_eq(flag, "task t1: reference ref.faster ran faster than the candidate in the same run (t_ref / "
			       "t_cand 0.875 [0.870, 0.881]): the candidate is not the fastest kernel measured here");
	free(flag);
	cJSON_Delete(t);
	for (size_t k = 0; k < sizeof(no_flag) / sizeof(*no_flag); k++) {
		t = cJSON_Parse(no_flag[k]);
		ck_assert_ptr_nonnull(t);
		ck_assert_msg(report_outpaced_flag(t) == NULL, "%s", no_flag[k]);
		cJSON_Delete(t);
	}
}
END_TEST

/*
 * The same checks on a real run whose candidate is the slow one (the CPU card with its backends
 * swapped: cpu.splitkv -> cpu.naive; the run exits 1, verdict failed): the report flags every task it
 * lost, first.
 */
START_TEST(report_flags_the_tasks_a_slower_candidate_lost)
{
	char *plan = tu_small_plan_edit(tmp, "", 2, 1, "from_backend: cpu.naive\n  to_backend: cpu.splitkv",
					"from_backend: cpu.splitkv\n  to_backend: cpu.naive");
	char *out = tool(1, NULL, "--run %s --threads 2 --run-id slow1", plan), *eval = tu_eval_dir_of(out), *full;
	cJSON *rep, *row;
	const char *flags;

	free(out);
	ck_assert_ptr_nonnull(eval);
	full = fs_join(tmp, eval);
	mark_clean(full);
	free(tool(0, NULL, "--record skills/mla_decode_cpu_splitkv.md --eval-dir %s", eval));
	out = tool(0, NULL, "--report --format json");
	rep = cJSON_Parse(out);
	row = cJSON_GetArrayItem(rep, 0);
	flags = jstr(row, "review_flags");
	ck_assert_msg(flags && !strncmp(flags, "task ", 5) && strstr(flags, ": the candidate ran slower than the baseline"),
		      "%s", out);
	{
		const char *p = flags;
		int n = 0;

		while ((p = strstr(p, "the candidate ran slower than the baseline"))) {
			n++;
			p++;
		}
		ck_assert_int_eq(n, 2);
	}
	cJSON_Delete(rep);
	free(out);
	out = tool(0, NULL, "--report");
	ck_assert_msg(strstr(out, "flagged for review on 2 of 2 tasks") && strstr(out, ": the candidate ran slower"), "%s", out);
	free(out);
	free(full);
	free(eval);
	free(plan);
}
END_TEST

START_TEST(run_times_references_and_never_gates_on_them)
{
	char *example = plugin("example"), *wrong = plugin("wrong"), *picky = plugin("picky");
	char *copy = fs_join(tmp, "example_copy.so"), *text, *args, *plan, *out, *err;
	char *eval, *samples_path, *samples;
	size_t len;
	cJSON *res, *refs, *tasks, *t;
	int nrows[5] = {0, 0, 0, 0, 0};

	text = tu_read(example, &len);
	tu_write(copy, text, len); /* a plugin file the test may change after the run */
	ck_assert_int_ge(asprintf(&args, "--reference cpu.naive --reference %s --reference %s --reference %s", copy,
				  wrong, picky), 0);
	plan = tu_small_plan(tmp, args, 3, 2);
	out = tool(0, NULL, "--run %s --threads 2 --run-id run1", plan);
	ck_assert_msg(strstr(out, "reference example.online: t_ref / t_cand (geomean of 3 tasks)") &&
		      strstr(out, "reference example.wrong: t_ref / t_cand (geomean of 0 tasks): n/a; 0 skipped, 3 failed") &&
		      strstr(out, "reference example.picky: t_ref / t_cand (geomean of 2 tasks)") &&
		      strstr(out, "1 skipped"), "%s", out);
	eval = tu_eval_dir_of(out);
	free(out);
	ck_assert_ptr_nonnull(eval);
	{
		char *full = fs_join(tmp, eval);

		free(eval);
		eval = full;
	}
	mark_clean(eval);
	res = tu_json_file(eval, "result.json");
	ck_assert_str_eq(jstr(res, "verdict"), "validated"); /* example.wrong fails parity: not the card */
	refs = cJSON_GetObjectItem(res, "references");
	ck_assert_int_eq(cJSON_GetArraySize(refs), 4);
	{
		static const struct {
			const char *impl;
			int timed, skipped, failed, ratio;
		} want[4] = {{"cpu.naive", 3, 0, 0, 1}, {"example.online", 3, 0, 0, 1}, {"example.wrong", 0, 0, 3, 0},
			     {"example.picky", 2, 1, 0, 1}};

		for (int k = 0; k < 4; k++) {
			const cJSON *o = cJSON_GetArrayItem(refs, k);

			ck_assert_str_eq(jstr(o, "impl"), want[k].impl);
			ck_assert_int_eq((int)cJSON_GetNumberValue(cJSON_GetObjectItem(o, "tasks_timed")), want[k].timed);
			ck_assert_int_eq((int)cJSON_GetNumberValue(cJSON_GetObjectItem(o, "tasks_skipped")), want[k].skipped);
			ck_assert_int_eq((int)cJSON_GetNumberValue(cJSON_GetObjectItem(o, "tasks_failed")), want[k].failed);
			ck_assert_int_eq(cJSON_IsObject(cJSON_GetObjectItem(o, "ratio")), want[k].ratio);
		}
	}
	tasks = cJSON_GetObjectItem(res, "tasks");
	cJSON_ArrayForEach(t, tasks) {
		const char *name = jstr(t, "name");

		ck_assert_str_eq(jstr(task_ref(t, 2), "status"), "failed");
		ck_assert_str_eq(jstr(task_ref(t, 2), "parity"), "fail");
		ck_assert_ptr_null(cJSON_GetObjectItem(task_ref(t, 2), "ratio"));
		ck_assert_str_eq(jstr(task_ref(t, 1), "status"), "timed");
		ck_assert(cJSON_IsObject(cJSON_GetObjectItem(task_ref(t, 1), "ratio")));
		if (strstr(name, "page1")) {
			ck_assert_str_eq(jstr(task_ref(t, 3), "status"), "skipped");
			ck_assert_ptr_nonnull(strstr(jstr(task_ref(t, 3), "reason"), "page_size 1"));
		} else {
			ck_assert_str_eq(jstr(task_ref(t, 3), "status"), "timed");
		}
	}
	/* the plugins that ran are bound, the references' among them */
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(res, "plugins")), 3);
	/* samples.csv: every timed reference in every round, the failed one in none */
	samples_path = fs_join(eval, "samples.csv");
	samples = tu_read(samples_path, NULL);
	for (const char *s = strchr(samples, '\n'); s && s[1]; s = strchr(s + 1, '\n')) {
		if (strstr(s + 1, ",baseline,") && strstr(s + 1, ",baseline,") < strchr(s + 1, '\n'))
			nrows[0]++;
		for (int k = 1; k <= 4; k++) {
			char role[24];
			const char *at;

			snprintf(role, sizeof(role), ",reference%d,", k);
			at = strstr(s + 1, role);
			if (at && (!strchr(s + 1, '\n') || at < strchr(s + 1, '\n')))
				nrows[k]++;
		}
	}
	ck_assert_int_eq(nrows[1], nrows[0]);
	ck_assert_int_eq(nrows[2], nrows[0]);
	ck_assert_int_eq(nrows[3], 0);
	ck_assert_msg(nrows[4] > 0 && nrows[4] < nrows[0], "picky samples %d of %d rounds", nrows[4], nrows[0]);

	/* it records and verifies */
	free(tool(0, NULL, "--record skills/mla_decode_cpu_splitkv.md --eval-dir %s", eval));
	free(tool(0, NULL, "--verify skills/mla_decode_cpu_splitkv.md"));
	/* every report format shows the references */
	out = tool(0, NULL, "--report");
	ck_assert_msg(strstr(out, "references (t_impl / t_cand") && strstr(out, "example.online") &&
		      strstr(out, "failed (parity)") && strstr(out, "example.picky skips bf16-page1-h32: page_size 1"),
		      "%s", out);
	free(out);
	out = tool(0, NULL, "--report --format markdown");
	ck_assert_msg(strstr(out, "### mla_decode_cpu_splitkv: references") && strstr(out, "| example.picky |") &&
		      strstr(out, "skipped: page_size 1"), "%s", out);
	free(out);
	out = tool(0, NULL, "--report --format json");
	{
		cJSON *rep = cJSON_Parse(out), *r0 = cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(rep, 0),
											     "references"), 3);

		const char *flags = jstr(cJSON_GetArrayItem(rep, 0), "review_flags");

		ck_assert_msg(r0 && !strcmp(jstr(r0, "impl"), "example.picky") &&
			      cJSON_GetArraySize(cJSON_GetObjectItem(r0, "tasks")) == 3, "%s", out);
		/* the baseline checks against the references reach the report, task by task */
		cJSON_ArrayForEach(t, tasks) {
			char *want = report_baseline_flag(t, VS_BASELINE_REVIEW_BOUND), *key;
			char *harm = report_harm_flag(t), *hkey;

			ck_assert_int_ge(asprintf(&key, "task %s: the baseline ran", jstr(t, "name")), 0);
			ck_assert_int_ge(asprintf(&hkey, "task %s: the candidate ran slower", jstr(t, "name")), 0);
			if (want)
				ck_assert_msg(flags && strstr(flags, want), "%s missing from %s", want, flags);
			else
				ck_assert_msg(!flags || !strstr(flags, key), "%s", flags);
			/* and so do the tasks the candidate lost */
			if (harm)
				ck_assert_msg(flags && strstr(flags, harm), "%s missing from %s", harm, flags);
			else
				ck_assert_msg(!flags || !strstr(flags, hkey), "%s", flags);
			free(key);
			free(want);
			free(hkey);
			free(harm);
		}
		cJSON_Delete(rep);
	}
	free(out);
	out = tool(0, NULL, "--report --format html");
	ck_assert_msg(strstr(out, "<h2>References</h2>") && strstr(out, "class=\"refs-chart\"") &&
		      strstr(out, "1x candidate") && strstr(out, "example.wrong: failed (parity)"), "%.3000s", out);
	free(out);

	/* a hand-edited ratio does not recompute */
	{
		cJSON *r2 = tu_json_file(eval, "result.json");
		cJSON *ratio = cJSON_GetObjectItem(task_ref(cJSON_GetArrayItem(cJSON_GetObjectItem(r2, "tasks"), 0), 1),
						   "ratio");

		cJSON_SetNumberValue(cJSON_GetObjectItem(ratio, "estimate"),
				     cJSON_GetNumberValue(cJSON_GetObjectItem(ratio, "estimate")) * 1.5);
		write_json(eval, "result.json", r2);
		free(tool(3, &err, "--verify skills/mla_decode_cpu_splitkv.md"));
		ck_assert_msg(strstr(err, "ratio against example.online") && strstr(err, "does not recompute"), "%s", err);
		free(err);
		cJSON_ReplaceItemInObject(r2, "tasks", cJSON_Duplicate(tasks, 1));
		cJSON_ReplaceItemInObject(cJSON_GetArrayItem(cJSON_GetObjectItem(r2, "references"), 3), "ratio",
					  cJSON_CreateNull());
		write_json(eval, "result.json", r2);
		free(tool(3, &err, "--verify skills/mla_decode_cpu_splitkv.md"));
		ck_assert_msg(strstr(err, "overall ratio against example.picky"), "%s", err);
		free(err);
		write_json(eval, "result.json", res);
		free(tool(0, NULL, "--verify skills/mla_decode_cpu_splitkv.md"));
		cJSON_Delete(r2);
	}
	/* a reference's plugin file changed after the run: the evidence no longer verifies */
	text[len / 2] ^= 1;
	tu_write(copy, text, len);
	free(tool(3, &err, "--verify skills/mla_decode_cpu_splitkv.md"));
	ck_assert_msg(strstr(err, "example_copy.so") && strstr(err, "changed"), "%s", err);
	free(err);

	cJSON_Delete(res);
	free(samples);
	free(samples_path);
	free(eval);
	free(plan);
	free(args);
	free(text);
	free(copy);
	free(example);
	free(wrong);
	free(picky);
}
END_TEST

/*
 * A plugin absent from the checkout after its run was recorded: a baseline's (what the field runs
 * today, built from its own sources: FlashMLA's sparse decode for the sm_90 DSA cards) leaves the
 * card verifying, with a warning that names its sha256; a candidate's, the kernel the card
 * recommends, does not verify. Either present but changed does not verify.
 */
START_TEST(absent_baseline_plugin_warns_absent_candidate_fails)
{
	char *example = plugin("example"), *copy = fs_join(tmp, "plugin_copy.so"), *hold = fs_join(tmp, "held.so");
	char *text, *args, *plan, *out, *err;
	size_t len;

	text = tu_read(example, &len);
	for (int side = 0; side < 2; side++) {
		const char *key = side ? "to_backend: cpu.splitkv" : "from_backend: cpu.naive";
		char *replace = fs_printf("%s: example.online", side ? "to_backend" : "from_backend");

		tu_write(copy, text, len);
		ck_assert_int_ge(asprintf(&args, "--%s-lib %s", side ? "candidate" : "baseline", copy), 0);
		plan = tu_small_plan_edit(tmp, args, 2, 2, key, replace);
		{
			/* validated or failed (the example plugin and cpu.naive are close: about 1.1, the
			 * gate), both recorded: the verdict is not what this test checks */
			char *run = fs_printf("--run %s --threads 2 --run-id side%d", plan, side);
			int status = tu_run_tool(tmp, run, &out, &err);

			ck_assert_msg(status == 0 || status == 1, "%s: exit %d\n%s\n%s", run, status, out, err);
			free(out);
			free(err);
			free(run);
		}
		free(tool(0, NULL, "--record skills/mla_decode_cpu_splitkv.md --eval-dir results/mla_decode_cpu_splitkv/side%d",
			  side));
		ck_assert_int_eq(rename(copy, hold), 0);
		free(tool(side ? 3 : 0, &err, "--verify skills/mla_decode_cpu_splitkv.md"));
		if (side)
			ck_assert_msg(strstr(err, "the candidate plugin") && strstr(err, "is gone"), "%s", err);
		else
			ck_assert_msg(strstr(err, "warning: ") && strstr(err, "the baseline plugin") &&
					      strstr(err, "is not in this checkout") && strstr(err, "is not re-checked"),
				      "%s", err);
		free(err);
		/* back, but not the file that ran */
		text[len / 2] ^= 1;
		tu_write(copy, text, len);
		text[len / 2] ^= 1;
		free(tool(3, &err, "--verify skills/mla_decode_cpu_splitkv.md"));
		ck_assert_msg(strstr(err, "plugin_copy.so") && strstr(err, "changed"), "%s", err);
		free(err);
		unlink(hold);
		unlink(copy);
		free(plan);
		free(args);
		free(replace);
	}
	free(text);
	free(hold);
	free(copy);
	free(example);
}
END_TEST

/*
 * A config whose launch declines a task (MLA_EUNSUPPORTED: "this config cannot run these args",
 * kernels/mla_decode.h) is recorded "unsupported" with the reason: neither a pass nor a failure,
 * never tuned nor chosen there; the implementation runs with its other config, and the evidence
 * records and verifies.
 */
START_TEST(config_that_declines_a_task_is_unsupported)
{
	char *declines = plugin("declines"), *args, *plan, *out, *eval, *full;
	cJSON *res, *t;
	int declined = 0, ran = 0;

	ck_assert_int_ge(asprintf(&args, "--reference %s", declines), 0);
	plan = tu_small_plan(tmp, args, 3, 2);
	out = tool(0, NULL, "--run %s --threads 2 --run-id dec1", plan);
	eval = tu_eval_dir_of(out);
	ck_assert_ptr_nonnull(eval);
	full = fs_join(tmp, eval);
	mark_clean(full);
	res = tu_json_file(full, "result.json");
	cJSON_ArrayForEach(t, cJSON_GetObjectItem(res, "tasks")) {
		const cJSON *ref = task_ref(t, 0), *cfgs = cJSON_GetObjectItem(ref, "configs");
		const cJSON *online = cJSON_GetArrayItem(cfgs, 0), *brief = cJSON_GetArrayItem(cfgs, 1);
		int runs = strstr(jstr(t, "name"), "page1") != NULL; /* 127 keys at most; the others span more */

		ck_assert_str_eq(jstr(ref, "impl"), "example.declines");
		ck_assert_str_eq(jstr(ref, "status"), "timed");
		ck_assert_str_eq(jstr(ref, "parity"), "pass");
		ck_assert_int_eq(cJSON_GetArraySize(cfgs), 2);
		ck_assert_str_eq(jstr(online, "parity"), "pass");
		ck_assert_str_eq(jstr(brief, "name"), "short");
		if (runs) {
			ck_assert_str_eq(jstr(brief, "parity"), "pass");
			ran++;
		} else {
			ck_assert_str_eq(jstr(brief, "parity"), "unsupported");
			ck_assert_str_eq(jstr(brief, "detail"),
					 "example.declines short declines these arguments (its launch answered MLA_EUNSUPPORTED)");
			ck_assert_ptr_null(cJSON_GetObjectItem(brief, "tune_median_ms"));
			ck_assert_str_eq(jstr(ref, "chosen"), "online");
			declined++;
		}
	}
	ck_assert_int_eq(declined, 2);
	ck_assert_int_eq(ran, 1);
	ck_assert_str_eq(jstr(res, "verdict"), "validated");
	free(tool(0, NULL, "--record skills/mla_decode_cpu_splitkv.md --eval-dir %s", eval));
	free(tool(0, NULL, "--verify skills/mla_decode_cpu_splitkv.md"));
	cJSON_Delete(res);
	free(out);
	free(eval);
	free(full);
	free(plan);
	free(args);
	free(declines);
}
END_TEST

/*
 * A side forced to a config (IMPL@CONFIG, issue 41) whose launch declines a task does not run it:
 * the task is skipped with the reason, neither passed nor failed, and the evidence verifies. The
 * card names the plugin forced to its "short" config, which declines every task whose block table
 * spans more than 128 keys; --candidate-lib takes the card's config.
 */
START_TEST(forced_config_that_declines_a_task_skips_it)
{
	char *declines = plugin("declines"), *args, *plan, *out, *eval, *full;
	char *err = NULL;
	cJSON *res, *t;
	int skipped = 0, ran = 0, status;

	ck_assert_int_ge(asprintf(&args, "--candidate-lib %s", declines), 0);
	plan = tu_small_plan_edit(tmp, args, 3, 2, "to_backend: cpu.splitkv", "to_backend: example.declines@short");
	free(args);
	/* one task timed: its speedup gate may pass or fail (exit 0 or 1); the skips are what is checked */
	ck_assert_int_ge(asprintf(&args, "--run %s --threads 2 --run-id forced1", plan), 0);
	status = tu_run_tool(tmp, args, &out, &err);
	ck_assert_msg(status == 0 || status == 1, "%s: exit %d: %s\n%s", args, status, err, out);
	free(err);
	eval = tu_eval_dir_of(out);
	ck_assert_ptr_nonnull(eval);
	full = fs_join(tmp, eval);
	mark_clean(full);
	res = tu_json_file(full, "result.json");
	ck_assert_str_eq(jstr(res, "candidate"), "example.declines@short");
	cJSON_ArrayForEach(t, cJSON_GetObjectItem(res, "tasks")) {
		const cJSON *cfgs = cJSON_GetObjectItem(cJSON_GetObjectItem(t, "candidate"), "configs");
		int runs = strstr(jstr(t, "name"), "page1") != NULL; /* 127 keys at most; the others span more */

		ck_assert_int_eq(cJSON_GetArraySize(cfgs), 1);
		ck_assert_str_eq(jstr(cJSON_GetArrayItem(cfgs, 0), "name"), "short");
		if (runs) {
			ck_assert_str_eq(jstr(t, "parity"), "pass");
			ran++;
		} else {
			ck_assert_str_eq(jstr(t, "parity"), "skipped");
			ck_assert_str_eq(jstr(t, "skipped"),
					 "candidate example.declines@short does not run it: example.declines short declines "
					 "these arguments (its launch answered MLA_EUNSUPPORTED)");
			ck_assert_str_eq(jstr(cJSON_GetArrayItem(cfgs, 0), "parity"), "unsupported");
			skipped++;
		}
	}
	ck_assert_int_eq(skipped, 2);
	ck_assert_int_eq(ran, 1);
	free(tool(0, NULL, "--record skills/mla_decode_cpu_splitkv.md --eval-dir %s", eval));
	free(tool(0, NULL, "--verify skills/mla_decode_cpu_splitkv.md"));
	cJSON_Delete(res);
	free(out);
	free(eval);
	free(full);
	free(plan);
	free(args);
	free(declines);
}
END_TEST

START_TEST(parts_with_references_merge_into_evidence_that_verifies)
{
	char *picky = plugin("picky"), *args, *plan, *out, *merged;
	cJSON *res, *o;

	ck_assert_int_ge(asprintf(&args, "--reference %s", picky), 0);
	plan = tu_small_plan(tmp, args, 3, 1);
	for (int i = 0; i < 3; i++)
		free(tool(0, NULL, "--run %s --threads 2 --part %d --run-id R", plan, i));
	out = tool(0, NULL, "--merge results/mla_decode_cpu_splitkv/.parts/R");
	merged = tu_eval_dir_of(out);
	ck_assert_ptr_nonnull(merged);
	free(out);
	{
		char *full = fs_join(tmp, merged);

		free(merged);
		merged = full;
	}
	mark_clean(merged);
	res = tu_json_file(merged, "result.json");
	o = cJSON_GetArrayItem(cJSON_GetObjectItem(res, "references"), 0);
	ck_assert_str_eq(jstr(o, "impl"), "example.picky");
	ck_assert_int_eq((int)cJSON_GetNumberValue(cJSON_GetObjectItem(o, "tasks_timed")), 2);
	ck_assert_int_eq((int)cJSON_GetNumberValue(cJSON_GetObjectItem(o, "tasks_skipped")), 1);
	ck_assert(cJSON_IsObject(cJSON_GetObjectItem(o, "ratio")));
	free(tool(0, NULL, "--record skills/mla_decode_cpu_splitkv.md --eval-dir %s", merged));
	free(tool(0, NULL, "--verify skills/mla_decode_cpu_splitkv.md"));
	cJSON_Delete(res);
	free(merged);
	free(plan);
	free(args);
	free(picky);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("references");
	TCase *tc = tcase_create("references");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, plan_records_references_and_the_tasks_they_skip);
	tcase_add_test(tc, reference_without_configs_skips_every_task);
	tcase_add_test(tc, plan_refuses_bad_references);
	tcase_add_test(tc, edited_reference_skips_are_refused);
	tcase_add_test(tc, baseline_slower_than_a_reference_is_flagged);
	tcase_add_test(tc, candidate_slower_than_the_baseline_is_flagged);
	tcase_add_test(tc, reference_faster_than_the_candidate_is_flagged);
	tcase_add_test(tc, chosen_config_timed_far_from_its_tuning_is_flagged);
	tcase_add_test(tc, report_flags_the_tasks_a_slower_candidate_lost);
	tcase_add_test(tc, run_times_references_and_never_gates_on_them);
	tcase_add_test(tc, absent_baseline_plugin_warns_absent_candidate_fails);
	tcase_add_test(tc, parts_with_references_merge_into_evidence_that_verifies);
	tcase_add_test(tc, config_that_declines_a_task_is_unsupported);
	tcase_add_test(tc, forced_config_that_declines_a_task_skips_it);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
