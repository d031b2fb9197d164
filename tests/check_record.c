/*
 * check_record.c - evidence: a real (tiny) CPU run produces an eval dir; recording writes what it
 * proves; every way of tampering with it, or of using it for the wrong card, is refused; --verify
 * and the report catch a number edited by hand.
 */
#include "testutil.h"

#include "card.h"
#include "evaldir.h"
#include "fsutil.h"
#include "library.h"
#include "plan.h"
#include "record.h"
#include "report.h"
#include "runner.h"
#include "vs_error.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *tmp, *card_path, *eval_dir, *plan_path;

/* Replace the first `from` in file path by `to`. */
static void edit_file(const char *path, const char *from, const char *to)
{
	char *text = tu_read(path, NULL), *at = strstr(text, from), *out;

	ck_assert_msg(at != NULL, "'%s' not found in %s", from, path);
	out = fs_printf("%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
	chmod(path, 0644);
	tu_write(path, out, strlen(out));
	free(text);
	free(out);
}

/* Edit a JSON value of dir/result.json via cJSON (key path of two levels at most). */
static void edit_result_in(const char *dir, const char *k1, const char *k2, cJSON *value)
{
	char *path = fs_join(dir, "result.json"), *text = tu_read(path, NULL), *out;
	cJSON *root = cJSON_Parse(text), *parent = k2 ? cJSON_GetObjectItem(root, k1) : root;

	ck_assert_ptr_nonnull(parent);
	if (!cJSON_ReplaceItemInObject(parent, k2 ? k2 : k1, value))
		cJSON_AddItemToObject(parent, k2 ? k2 : k1, value); /* a key the run did not write */
	out = cJSON_Print(root);
	tu_write(path, out, strlen(out));
	cJSON_free(out);
	cJSON_Delete(root);
	free(text);
	free(path);
}

static void edit_result(const char *k1, const char *k2, cJSON *value)
{
	edit_result_in(eval_dir, k1, k2, value);
}

/* A clean build's evidence: the test binary may be built from a work tree with local changes. */
static void mark_clean(void)
{
	edit_result("tool", "kernels_dirty", cJSON_CreateFalse());
}

/* A run of the test plan with run_id as its id, of impl_filter's side alone when not NULL; its eval dir. */
static char *run_as(const char *run_id, const char *impl_filter)
{
	struct runner_options ro;
	char *dir = NULL;

	memset(&ro, 0, sizeof(ro));
	ro.plan_path = plan_path;
	ro.tasks_root = fs_join(tmp, "tasks");
	ro.results_root = fs_join(tmp, "results");
	ro.threads = 2;
	ro.run_id = run_id;
	ro.impl_filter = impl_filter;
	ck_assert_msg(runner_run(&dir, &ro) == 0, "runner_run: %s", vs_last_error());
	free((char *)ro.tasks_root);
	free((char *)ro.results_root);
	return dir;
}

/* A second complete run, as a clean build's (mark_clean() for the first too). */
static char *another_run(const char *run_id)
{
	char *dir = run_as(run_id, NULL);

	mark_clean();
	edit_result_in(dir, "tool", "kernels_dirty", cJSON_CreateFalse());
	return dir;
}

static void setup(void)
{
	struct card c;
	struct plan p;
	char *src = tu_resource("skills/mla_decode_cpu_splitkv.md"), *text = tu_read(src, NULL);
	char *skills, *plans;

	vs_error_set_quiet(1);
	tmp = tu_tmpdir();
	skills = fs_join(tmp, "skills");
	plans = fs_join(tmp, "plans");
	fs_mkdir_p(skills);
	fs_mkdir_p(plans);
	card_path = fs_join(skills, "mla_decode_cpu_splitkv.md");
	tu_write(card_path, text, strlen(text));
	ck_assert_int_eq(card_load(&c, card_path), 0);
	ck_assert_msg(plan_build(&p, &c, NULL) == 0, "%s", vs_last_error());
	/* One task, few pairs: evidence in seconds. */
	for (int i = 1; i < p.ntasks; i++)
		task_spec_release(&p.tasks[i]);
	p.ntasks = 1;
	p.protocol.min_pairs = 4;
	p.protocol.max_pairs = 8;
	p.protocol.max_seconds = 3;
	p.protocol.resamples = 200;
	p.protocol.review_bound = 1.2; /* the CPU pair is several times faster: flagged for review */
	plan_path = fs_join(plans, "mla_decode_cpu_splitkv.plan.json");
	ck_assert_int_eq(plan_write(&p, plan_path), 0);
	eval_dir = run_as("run1", NULL);
	plan_release(&p);
	card_release(&c);
	free(src);
	free(text);
	free(skills);
	free(plans);
}

static void teardown(void)
{
	fs_remove_tree(tmp);
	free(tmp);
	free(card_path);
	free(eval_dir);
	free(plan_path);
	vs_error_set_quiet(0);
}

START_TEST(fresh_evidence_verifies)
{
	struct card c;
	struct evidence e;
	int status = -1;

	ck_assert_int_eq(card_load(&c, card_path), 0);
	ck_assert_msg(evidence_load(&e, &status, eval_dir, &c) == 0, "%s", vs_last_error());
	ck_assert_int_eq(status, EVIDENCE_OK);
	ck_assert_str_eq(e.gen, "x86_64");
	ck_assert_int_eq(e.has_isolated, 1);
	ck_assert(e.isolated_lo <= e.isolated && e.isolated <= e.isolated_hi);
	evidence_release(&e);
	card_release(&c);
}
END_TEST

START_TEST(record_writes_what_the_evidence_proves_and_is_idempotent)
{
	struct card c, after;
	struct evidence e;
	char *first, *second;

	mark_clean();
	ck_assert_msg(record_card(card_path, eval_dir) == 0, "%s", vs_last_error());
	first = tu_read(card_path, NULL);
	ck_assert_msg(record_card(card_path, eval_dir) == 0, "%s", vs_last_error());
	second = tu_read(card_path, NULL);
	ck_assert_str_eq(first, second);
	ck_assert_int_eq(card_load(&after, card_path), 0);
	ck_assert_int_eq(card_load(&c, card_path), 0);
	ck_assert_int_eq(evidence_load(&e, NULL, eval_dir, &c), 0);
	ck_assert_str_eq(after.validation.status, strcmp(e.verdict, "validated") ? "failed" : "validated");
	ck_assert_str_eq(after.validation.gen, "x86_64");
	ck_assert_str_eq(after.validation.last_verified, e.date);
	ck_assert_str_eq(after.validation.measured_parity, e.parity);
	ck_assert_int_eq(after.validation.has_isolated, 1);
	ck_assert_double_eq_tol(after.validation.measured_isolated, e.isolated, 0.0005);
	ck_assert_msg(strstr(after.validation.artifact, "results/mla_decode_cpu_splitkv/run1") != NULL, "artifact %s",
		      after.validation.artifact);
	ck_assert_int_eq(record_verify(card_path), 0);
	evidence_release(&e);
	card_release(&c);
	card_release(&after);
	free(first);
	free(second);
}
END_TEST

START_TEST(dirty_build_is_not_recorded)
{
	char *before = tu_read(card_path, NULL), *after;

	edit_result("tool", "kernels_dirty", cJSON_CreateTrue());
	ck_assert_int_eq(record_card(card_path, eval_dir), VS_EVERIFY);
	ck_assert_ptr_nonnull(strstr(vs_last_error(), "uncommitted kernels/"));
	after = tu_read(card_path, NULL);
	ck_assert_str_eq(before, after);
	free(before);
	free(after);
}
END_TEST

START_TEST(foreign_generation_is_not_recorded)
{
	cJSON *dev;
	char *path = fs_join(eval_dir, "result.json"), *text;

	mark_clean();
	text = tu_read(path, NULL);
	dev = cJSON_Parse(text);
	cJSON_ReplaceItemInObject(cJSON_GetObjectItem(dev, "device"), "gen", cJSON_CreateString("sm_90"));
	free(text);
	text = cJSON_Print(dev);
	tu_write(path, text, strlen(text));
	ck_assert_int_eq(record_card(card_path, eval_dir), VS_EVERIFY);
	ck_assert_ptr_nonnull(strstr(vs_last_error(), "not in"));
	cJSON_free(text);
	cJSON_Delete(dev);
	free(path);
}
END_TEST

struct tamper {
	const char *file;   /* relative to the eval dir, or "card" */
	const char *from, *to;
	const char *message;
};

static const struct tamper tampers[] = {
	{"samples.csv", ",baseline,", ",candidate,", "samples.csv"},
	{"run.log", "run ", "ran ", "run.log"},
	{"plan.json", "\"warmup\":", "\"warmup\": 1, \"x\":", "plan.json"},
	{"result.json", "\"estimate\":\t", "\"estimate\":\t1", "does not recompute"},
	{"result.json", "\"id\":\t\"mla_decode_cpu_splitkv\"", "\"id\":\t\"other_card\"", "is for card 'other_card'"},
	{"card", "## Mechanism\n", "## Mechanism\nEdited after the run.\n", "card changed since"},
};

START_TEST(tampered_evidence_is_refused)
{
	const struct tamper *t = &tampers[_i];
	char *path = strcmp(t->file, "card") ? fs_join(eval_dir, t->file) : strdup(card_path);
	char *before = tu_read(card_path, NULL), *after;

	mark_clean();
	edit_file(path, t->from, t->to);
	ck_assert_msg(record_card(card_path, eval_dir) == VS_EVERIFY, "case %d (%s) was accepted", _i, t->file);
	ck_assert_msg(strstr(vs_last_error(), t->message), "case %d: '%s' lacks '%s'", _i, vs_last_error(), t->message);
	after = tu_read(card_path, NULL);
	if (strcmp(t->file, "card"))
		ck_assert_str_eq(before, after); /* nothing written */
	free(path);
	free(before);
	free(after);
}
END_TEST

/*
 * Issue 35: the plan copy of an eval dir edited (the gate, a tolerance) with its sha256 in
 * result.json set to match, as a run of a tool that did not check its plan against its card would
 * leave it: --record, --verify and --report refuse it, naming the field.
 */
static void rebind_plan(void)
{
	char *path = fs_join(eval_dir, "plan.json"), hex[65];

	ck_assert_int_eq(fs_sha256_file(hex, path), 0);
	edit_result("plan", "sha256", cJSON_CreateString(hex));
	free(path);
}

static const struct {
	const char *from, *to, *message;
} plan_edits[] = {
	{"\"isolated_speedup_min\":\t1.3", "\"isolated_speedup_min\":\t0.5",
	 "plan.json gates.isolated_speedup_min is 0.5 in the plan, the tool derives 1.3 from"},
	{"\"parity\":\t\"required\"", "\"parity\":\t\"advisory\"",
	 "plan.json gates.parity is \"advisory\" in the plan, the tool derives \"required\""},
};

START_TEST(edited_plan_copy_is_refused_by_record_verify_and_report)
{
	struct report_options ro;
	char *plan = fs_join(eval_dir, "plan.json"), *before, *after, *out_path = fs_join(tmp, "report.txt");
	char *skills = fs_join(tmp, "skills"), *report;
	FILE *f;

	mark_clean();
	ck_assert_msg(record_card(card_path, eval_dir) == 0, "%s", vs_last_error());
	ck_assert_int_eq(record_verify(card_path), 0);
	before = tu_read(card_path, NULL);
	edit_file(plan, plan_edits[_i].from, plan_edits[_i].to);
	rebind_plan();
	ck_assert_int_eq(record_card(card_path, eval_dir), VS_EVERIFY);
	ck_assert_msg(strstr(vs_last_error(), plan_edits[_i].message), "%s", vs_last_error());
	after = tu_read(card_path, NULL);
	ck_assert_str_eq(before, after);
	ck_assert_int_eq(record_verify(card_path), VS_EVERIFY);
	ck_assert_msg(strstr(vs_last_error(), plan_edits[_i].message), "%s", vs_last_error());
	memset(&ro, 0, sizeof(ro));
	ro.skills_dir = skills;
	f = fopen(out_path, "w");
	ro.out = f;
	ck_assert_int_eq(report_run(&ro), VS_EVERIFY);
	fclose(f);
	report = tu_read(out_path, NULL);
	ck_assert_msg(strstr(report, "mismatch") && strstr(report, plan_edits[_i].message), "%s", report);
	free(report);
	free(plan);
	free(before);
	free(after);
	free(out_path);
	free(skills);
}
END_TEST

START_TEST(missing_manifest_copy_is_refused)
{
	char *dir = fs_join(eval_dir, "manifests");

	mark_clean();
	ck_assert_int_eq(fs_remove_tree(dir), 0);
	ck_assert_int_eq(record_card(card_path, eval_dir), VS_EVERIFY);
	ck_assert_ptr_nonnull(strstr(vs_last_error(), "manifests/"));
	free(dir);
}
END_TEST

START_TEST(hand_edited_number_is_caught_by_verify_and_report)
{
	struct report_options ro;
	char *skills = fs_join(tmp, "skills"), *out_path = fs_join(tmp, "report.txt"), *report;
	struct card c;
	char num[32];
	FILE *f;

	mark_clean();
	ck_assert_int_eq(record_card(card_path, eval_dir), 0);
	ck_assert_int_eq(card_load(&c, card_path), 0);
	snprintf(num, sizeof(num), "isolated: %g", c.validation.measured_isolated);
	card_release(&c);
	edit_file(card_path, num, "isolated: 9.99");
	ck_assert_int_eq(record_verify(card_path), VS_EVERIFY);
	ck_assert_ptr_nonnull(strstr(vs_last_error(), "measured.isolated"));
	memset(&ro, 0, sizeof(ro));
	ro.skills_dir = skills;
	f = fopen(out_path, "w");
	ro.out = f;
	ck_assert_int_eq(report_run(&ro), VS_EVERIFY);
	fclose(f);
	report = tu_read(out_path, NULL);
	ck_assert_msg(strstr(report, "mismatch"), "report does not say mismatch:\n%s", report);
	free(report);
	free(skills);
	free(out_path);
}
END_TEST

START_TEST(claims_are_one_answer_for_verify_and_report)
{
	struct card c;
	struct evidence e;
	struct card_validation have;
	char why[160] = "";

	mark_clean();
	ck_assert_int_eq(record_card(card_path, eval_dir), 0);
	ck_assert_int_eq(card_load(&c, card_path), 0);
	ck_assert_msg(evidence_load(&e, NULL, eval_dir, &c) == 0, "%s", vs_last_error());
	have = c.validation;
	ck_assert_int_eq(evidence_check_claims(&have, &e, card_path, why, sizeof(why)), 0);
	have.model = "another model";
	ck_assert_int_eq(evidence_check_claims(&have, &e, card_path, why, sizeof(why)), 1);
	ck_assert_str_eq(why, "validation.model differs from the evidence");
	have.gen = "gfx942";
	ck_assert_int_eq(evidence_check_claims(&have, &e, card_path, why, sizeof(why)), 2);
	ck_assert_msg(strstr(vs_last_error(), "validation.model") || strstr(vs_last_error(), "validation.gen"), "%s",
		      vs_last_error());
	ck_assert_str_eq(why, "validation.gen differs from the evidence");
	have = c.validation;
	e.kernels_dirty = 1;
	ck_assert_int_eq(evidence_check_claims(&have, &e, card_path, why, sizeof(why)),
			 !strcmp(have.status, "validated"));
	evidence_release(&e);
	card_release(&c);
}
END_TEST

START_TEST(partial_run_is_not_recorded)
{
	char *dir = run_as("partial", "cpu.splitkv");

	edit_result_in(dir, "tool", "kernels_dirty", cJSON_CreateFalse());
	ck_assert_int_eq(record_card(card_path, dir), VS_EVERIFY);
	ck_assert_ptr_nonnull(strstr(vs_last_error(), "partial"));
	free(dir);
}
END_TEST

/*
 * Issue 35: which run is recorded. A second complete run of the same card and implementations:
 * recording the first (older) one is refused without --older; with it the card says which newer
 * run it was recorded over; every record states the spread of the runs' speedups, and --verify
 * accepts both.
 */
START_TEST(older_run_needs_older_and_the_card_says_so)
{
	struct card c;
	char *second = another_run("run2"), *text;

	text = tu_read(card_path, NULL);
	ck_assert_int_eq(record_card(card_path, eval_dir), VS_EVERIFY);
	ck_assert_msg(strstr(vs_last_error(), "is older than") && strstr(vs_last_error(), "run2") &&
			      strstr(vs_last_error(), "--older"),
		      "%s", vs_last_error());
	{
		char *now = tu_read(card_path, NULL);

		ck_assert_str_eq(now, text); /* nothing written */
		free(now);
	}
	ck_assert_msg(record_card_run(card_path, eval_dir, 1) == 0, "%s", vs_last_error());
	ck_assert_int_eq(card_load(&c, card_path), 0);
	ck_assert_msg(!strncmp(c.validation.recorded_over, "run2: ", 6), "%s", c.validation.recorded_over);
	ck_assert_msg(strstr(c.validation.spread, " over 2 runs"), "%s", c.validation.spread);
	card_release(&c);
	ck_assert_msg(record_verify(card_path) == 0, "%s", vs_last_error());
	/* the newest needs no flag, and clears recorded_over */
	ck_assert_msg(record_card(card_path, second) == 0, "%s", vs_last_error());
	ck_assert_int_eq(card_load(&c, card_path), 0);
	ck_assert_str_eq(c.validation.recorded_over, "");
	ck_assert_msg(strstr(c.validation.spread, " over 2 runs"), "%s", c.validation.spread);
	card_release(&c);
	ck_assert_msg(record_verify(card_path) == 0, "%s", vs_last_error());
	/* a spread that does not hold the recorded speedup is a claim the evidence does not back */
	{
		char *card = tu_read(card_path, NULL), *at = strstr(card, "spread: "), *end, *out;

		ck_assert_ptr_nonnull(at);
		at += 8;
		end = at + strcspn(at, ",}\r\n");
		out = fs_printf("%.*s\"0.001-0.002 over 2 runs\"%s", (int)(at - card), card, end);
		tu_write(card_path, out, strlen(out));
		free(out);
		free(card);
	}
	ck_assert_int_eq(record_verify(card_path), VS_EVERIFY);
	ck_assert_msg(strstr(vs_last_error(), "validation.measured.spread"), "%s", vs_last_error());
	free(text);
	free(second);
}
END_TEST

/*
 * A newer run of a workload plan is not a newer run of the tier: it measured other tasks and is
 * recorded under validation.workloads, so the tier run is recorded without --older and is the only
 * run listed (2026-12-05: the config card's tier record was refused for its workload run).
 */
START_TEST(a_workload_run_is_not_a_newer_tier_run)
{
	struct card c;
	char *second = another_run("wlrun");
	cJSON *wl = cJSON_CreateObject();

	cJSON_AddStringToObject(wl, "id", "wl_tiny");
	edit_result_in(second, "overall", "workload", wl);
	ck_assert_msg(record_card(card_path, eval_dir) == 0, "%s", vs_last_error());
	ck_assert_int_eq(card_load(&c, card_path), 0);
	ck_assert_str_eq(c.validation.recorded_over, "");
	ck_assert_str_eq(c.validation.spread, "");
	card_release(&c);
	free(second);
}
END_TEST

static char *report_text(int *status, const char *format)
{
	struct report_options ro;
	char *skills = fs_join(tmp, "skills"), *plans = fs_join(tmp, "plans"), *out_path = fs_join(tmp, "r.txt");
	char *text;
	FILE *f = fopen(out_path, "w");

	memset(&ro, 0, sizeof(ro));
	ro.skills_dir = skills;
	ro.plans_dir = plans;
	ro.format = format;
	ro.out = f;
	*status = report_run(&ro);
	fclose(f);
	text = tu_read(out_path, NULL);
	free(skills);
	free(plans);
	free(out_path);
	return text;
}

START_TEST(report_shows_recorded_card_and_staleness)
{
	char *text;
	int status;

	mark_clean();
	ck_assert_int_eq(record_card(card_path, eval_dir), 0);
	text = report_text(&status, "json");
	ck_assert_msg(status == 0, "%s", vs_last_error());
	ck_assert_ptr_nonnull(strstr(text, "\"evidence\":\t\"ok\""));
	ck_assert_ptr_nonnull(strstr(text, "x86_64:"));
	ck_assert_msg(strstr(text, "\"review_flags\":\t\"task bf16-ragged-h16-ps64: speedup") != NULL,
		      "a speedup above the review bound is not shown:\n%s", text);
	free(text);
	/* Evidence older than the age limit is stale. */
	setenv("VS_TODAY", "2099-01-01", 1);
	text = report_text(&status, "text");
	unsetenv("VS_TODAY");
	ck_assert_msg(strstr(text, "stale") && strstr(text, "days old"), "%s", text);
	free(text);
	/* A card whose content changed after validation is stale, not a mismatch. */
	edit_file(card_path, "## Procedure\n", "## Procedure\nChanged after validation.\n");
	text = report_text(&status, "markdown");
	ck_assert_int_eq(status, 0);
	ck_assert_msg(strstr(text, "| stale |"), "%s", text);
	free(text);
}
END_TEST

struct report_case {
	const char *format;
	const char *has[4];      /* besides the names, cores and eval dir every format shows */
};

static const struct report_case report_cases[] = {
	{"text", {"FLAGGED: flagged for review on 1 of 1 task", "(5 flags): task bf16-ragged-h16-ps64: speedup",
		  "chosen configs: baseline ", "\"MLA decode on the CPU"}},
	{"markdown", {"<details><summary>mla_decode_cpu_splitkv: flagged for review on 1 of 1 task</summary>",
		      "- task bf16-ragged-h16-ps64: flag 4", "| MLA decode on the CPU", "chosen configs: baseline "}},
	{"json", {"\"flagged_tasks\":\t1", "\"cores\":\t", "\"title\":\t\"MLA decode on the CPU",
		  "\"chosen_configs\":\t\"baseline "}},
	{"html", {"<tr class=\"flagged\">", "<details class=\"flags\"><summary>flagged for review on 1 of 1 task</summary>",
		  "<li>task bf16-ragged-h16-ps64: flag 4</li>", "<td>MLA decode on the CPU"}},
};

/*
 * Every format names the eval dir, baseline and candidate, card title, cores and chosen configs; a
 * card flagged several times shows a count (the flags on demand), and differs from a clean one.
 */
START_TEST(report_shows_the_run_and_counts_flags)
{
	const struct report_case *c = &report_cases[_i];
	char *text, *cores;
	int status;
	cJSON *flags = cJSON_CreateArray();

	mark_clean();
	cJSON_AddItemToArray(flags, cJSON_CreateString("task bf16-ragged-h16-ps64: speedup above the review bound"));
	for (int k = 1; k < 5; k++) {
		char *fl = fs_printf("task bf16-ragged-h16-ps64: flag %d", k);

		cJSON_AddItemToArray(flags, cJSON_CreateString(fl));
		free(fl);
	}
	edit_result("flags", NULL, flags);
	ck_assert_int_eq(record_card(card_path, eval_dir), 0);
	text = report_text(&status, c->format);
	ck_assert_msg(status == 0, "%s: %s", c->format, vs_last_error());
	{
		char *rp = fs_join(eval_dir, "result.json"), *rt = tu_read(rp, NULL);
		cJSON *r = cJSON_Parse(rt);

		cores = fs_printf("%d cores", (int)cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "device"),
											 "compute_units")));
		if (!strcmp(c->format, "json"))
			memcpy(strchr(cores, ' '), "\0", 1);
		cJSON_Delete(r);
		free(rt);
		free(rp);
	}
	ck_assert_msg(strstr(text, "run1") && strstr(text, "cpu.naive") && strstr(text, "cpu.splitkv") &&
			      strstr(text, cores), "%s report lacks the eval dir, the names or the cores (%s):\n%s",
		      c->format, cores, text);
	for (int k = 0; k < 4 && c->has[k]; k++)
		ck_assert_msg(strstr(text, c->has[k]), "%s report lacks '%s':\n%s", c->format, c->has[k], text);
	/* the flags are counted, not repeated in the row */
	if (strcmp(c->format, "json"))
		ck_assert_msg(!strstr(text, "flag 4; task"), "%s report repeats the flags:\n%s", c->format, text);
	free(cores);
	free(text);
}
END_TEST

START_TEST(report_marks_claims_without_evidence)
{
	char *text;
	int status;

	edit_file(card_path, "status: draft", "status: validated");
	text = report_text(&status, "text");
	ck_assert_int_eq(status, VS_EVERIFY);
	/* no artifact, no gen: a typed block (issue 38), never shown as validated */
	ck_assert_msg(strstr(text, "validated (typed, no evidence)") && strstr(text, "no artifact"), "%s", text);
	free(text);
}
END_TEST

/* The status line of card id in index.yaml at the fixture repository's root. */
static char *index_status_of(void)
{
	char *index = fs_join(tmp, "index.yaml"), *text, *at, *out;
	int n = 0;

	ck_assert_msg(library_reindex(tmp, &n) == 0, "%s", vs_last_error());
	ck_assert_int_eq(n, 1);
	text = tu_read(index, NULL);
	at = strstr(text, "  validation_status: ");
	ck_assert_msg(at != NULL, "%s", text);
	at += strlen("  validation_status: ");
	out = strndup(at, strcspn(at, "\n"));
	free(text);
	free(index);
	return out;
}

/*
 * Issue 38: a validation block typed as GEAK's validate_skill.py stamps it (numbers as text, a
 * parity with a remark, gpu "gfx942/MI300X", no artifact, no gen) is read, never trusted: no
 * number of it is kept, --verify refuses it, every report format shows it apart, the index
 * demotes it to stale; --record replaces it with the measured block and the index follows.
 */
START_TEST(typed_block_is_read_never_trusted_and_replaced_by_record)
{
	static const char *const formats[][2] = {
		{"text", "validated (typed, no evidence)"},
		{"markdown", "| validated (typed, no evidence) |"},
		{"json", "\"status\":\t\"validated (typed, no evidence)\""},
		{"html", "<td class=\"status-typed\">validated (typed, no evidence)"},
	};
	struct card c;
	char *text, *st;
	int status;

	mark_clean();
	edit_file(card_path, "status: draft", "status: validated");
	edit_file(card_path, "measured: {isolated: \"\", e2e_pct: \"\", parity: \"\"}",
		  "measured: {isolated: \"2.432x (down-proj h1)\", e2e_pct: \"+67.4\", parity: \"pass (greedy)\"}");
	edit_file(card_path, "gpu: \"\"", "gpu: gfx942/MI300X");
	ck_assert_int_eq(card_load(&c, card_path), 0);
	ck_assert_int_eq(c.validation.typed, 1);
	ck_assert_int_eq(c.validation.has_isolated, 0);
	ck_assert_int_eq(c.validation.has_e2e_pct, 0);
	ck_assert_str_eq(c.validation.measured_parity, "");
	ck_assert_msg(strstr(c.validation.typed_why, "measured.isolated is '2.432x (down-proj h1)'") &&
			      strstr(c.validation.typed_why, "no artifact") && strstr(c.validation.typed_why, "no gen"),
		      "%s", c.validation.typed_why);
	ck_assert_int_eq(card_lint(&c), 0);
	card_release(&c);
	ck_assert_int_eq(record_verify(card_path), VS_EVERIFY);
	for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
		text = report_text(&status, formats[i][0]);
		ck_assert_int_eq(status, VS_EVERIFY);
		ck_assert_msg(strstr(text, formats[i][1]) != NULL, "%s report lacks '%s':\n%s", formats[i][0],
			      formats[i][1], text);
		free(text);
	}
	st = index_status_of();
	ck_assert_str_eq(st, "stale");
	free(st);

	ck_assert_msg(record_card(card_path, eval_dir) == 0, "%s", vs_last_error());
	ck_assert_int_eq(card_load(&c, card_path), 0);
	ck_assert_int_eq(c.validation.typed, 0);
	ck_assert_int_eq(c.validation.has_isolated, 1);
	ck_assert_str_eq(c.validation.gen, "x86_64");
	ck_assert_int_eq(record_verify(card_path), 0);
	text = report_text(&status, "json");
	ck_assert_int_eq(status, 0);
	ck_assert_msg(!strstr(text, "typed, no evidence"), "%s", text);
	free(text);
	st = index_status_of();
	ck_assert_str_eq(st, c.validation.status);
	free(st);
	card_release(&c);
}
END_TEST

/*
 * GEAK's lifecycle (issue 38): evidence measured with other versions of what the kernels ran on is
 * stale, and the report says which version moved. A result.json "python" entry as a Python
 * implementation's run writes it (its module file bound by sha256, its interpreter, the versions
 * seen), with a python version this interpreter does not have.
 */
START_TEST(report_marks_evidence_of_other_versions_stale)
{
	char *module = tu_source("kernels/python/numpy_mla.py"), hex[65], *text, *exe = NULL;
	FILE *w = popen("command -v python3", "r");
	char line[4096] = "";
	cJSON *arr, *entry, *versions;
	int status;

	if (w && fgets(line, sizeof(line), w))
		line[strcspn(line, "\n")] = '\0';
	if (w)
		pclose(w);
	if (!*line) {
		free(module);
		return; /* no python3 here to ask */
	}
	exe = line;
	mark_clean();
	ck_assert_msg(record_card(card_path, eval_dir) == 0, "%s", vs_last_error());
	ck_assert_int_eq(fs_sha256_file(hex, module), 0);
	arr = cJSON_CreateArray();
	entry = cJSON_CreateObject();
	versions = cJSON_CreateObject();
	cJSON_AddStringToObject(entry, "role", "baseline");
	cJSON_AddStringToObject(entry, "impl", "numpy.mla_decode");
	cJSON_AddStringToObject(entry, "path", module);
	cJSON_AddStringToObject(entry, "sha256", hex);
	cJSON_AddStringToObject(entry, "executable", exe);
	cJSON_AddStringToObject(versions, "python", "0.0.1");
	cJSON_AddItemToObject(entry, "versions", versions);
	cJSON_AddItemToArray(arr, entry);
	edit_result("python", NULL, arr);
	text = report_text(&status, "json");
	ck_assert_msg(status == 0, "report: %d\n%s", status, text);
	ck_assert_msg(strstr(text, "\"status\":\t\"stale\"") &&
			      strstr(text, "versions moved since validation: python 0.0.1 when measured, "),
		      "%s", text);
	free(text);
	free(module);
}
END_TEST

/*
 * GEAK's command line at a library root (issue 38): `SKILL_ID --record --artifact EVAL_DIR` records
 * the card found by its id and rewrites the root's index.yaml, whose status follows the evidence.
 */
START_TEST(record_by_id_at_a_library_root_keeps_the_index_current)
{
	char *index = fs_join(tmp, "index.yaml"), *args, *out = NULL, *err = NULL, *text, *want;
	struct card c;
	int status;

	mark_clean();
	tu_write(index, "", 0); /* a GEAK root: its index is kept current */
	args = fs_printf("mla_decode_cpu_splitkv --record --artifact '%s'", eval_dir);
	status = tu_run_tool(tmp, args, &out, &err);
	ck_assert_msg(status == 0, "exit %d\n%s\n%s", status, out, err);
	ck_assert_msg(strstr(out, "index.yaml: 1 card indexed"), "%s", out);
	ck_assert_int_eq(card_load(&c, card_path), 0);
	text = tu_read(index, NULL);
	want = fs_printf("- id: mla_decode_cpu_splitkv\n  file: skills/mla_decode_cpu_splitkv.md\n  scope: kernel\n");
	ck_assert_msg(strstr(text, want), "%s", text);
	free(want);
	want = fs_printf("  validation_status: %s\n", c.validation.status);
	ck_assert_msg(strstr(text, want), "want '%s' in:\n%s", want, text);
	free(want);
	free(text);
	card_release(&c);
	free(out);
	free(err);
	free(args);
	free(index);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("record");
	TCase *tc = tcase_create("evidence");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, fresh_evidence_verifies);
	tcase_add_test(tc, record_writes_what_the_evidence_proves_and_is_idempotent);
	tcase_add_test(tc, dirty_build_is_not_recorded);
	tcase_add_test(tc, foreign_generation_is_not_recorded);
	tcase_add_loop_test(tc, tampered_evidence_is_refused, 0, (int)(sizeof(tampers) / sizeof(tampers[0])));
	tcase_add_test(tc, missing_manifest_copy_is_refused);
	tcase_add_loop_test(tc, edited_plan_copy_is_refused_by_record_verify_and_report, 0,
			    (int)(sizeof(plan_edits) / sizeof(plan_edits[0])));
	tcase_add_test(tc, hand_edited_number_is_caught_by_verify_and_report);
	tcase_add_test(tc, claims_are_one_answer_for_verify_and_report);
	tcase_add_test(tc, partial_run_is_not_recorded);
	tcase_add_test(tc, older_run_needs_older_and_the_card_says_so);
	tcase_add_test(tc, a_workload_run_is_not_a_newer_tier_run);
	tcase_add_test(tc, report_shows_recorded_card_and_staleness);
	tcase_add_test(tc, report_marks_claims_without_evidence);
	tcase_add_test(tc, typed_block_is_read_never_trusted_and_replaced_by_record);
	tcase_add_test(tc, report_marks_evidence_of_other_versions_stale);
	tcase_add_test(tc, record_by_id_at_a_library_root_keeps_the_index_current);
	tcase_add_loop_test(tc, report_shows_the_run_and_counts_flags, 0,
			    (int)(sizeof(report_cases) / sizeof(report_cases[0])));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
