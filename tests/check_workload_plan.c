/*
 * check_workload_plan.c - plans, gates and records from a workload (issue 37; docs/DESIGN.md
 * "Workloads"): the weighted gate's arithmetic, deterministic workload plans, their re-derivation
 * from the card and the workload file, and the CPU card through --validate --workload, --verify and
 * --report end to end.
 */
#include "card.h"
#include "evaldir.h"
#include "fsutil.h"
#include "op.h"
#include "plan.h"
#include "stats.h"
#include "testutil.h"
#include "vs_error.h"

#include <check.h>
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A workload small enough for a run of seconds: h_q 16, page 16, bf16, contexts 256..2048. */
static const char tiny_workload[] = "id: wl_tiny\n"
				    "title: \"tiny CPU workload\"\n"
				    "source: \"test fixture\"\n"
				    "model: {h_q: 16, s_q: 1, page_size: 16, kv_dtypes: [bf16]}\n"
				    "concurrency: [1, 2]\n"
				    "traffic:\n"
				    "  histogram:\n"
				    "    context: [[256, 512, 0.5], [513, 2048, 0.5]]\n"
				    "    generated: [[1, 16, 1.0]]\n"
				    "steps: 32\n"
				    "tasks: 2\n"
				    "seed: %d\n";

static char *write_workload(const char *root, int seed)
{
	char *path = fs_join(root, "wl_tiny.yaml"), *text = fs_printf(tiny_workload, seed);

	tu_write(path, text, strlen(text));
	free(text);
	return path;
}

/* wl_tiny with both kv dtypes of the CPU card: a deployment runs one of them, each is gated. */
static char *write_workload_2kv(const char *root, int seed)
{
	char *path = fs_join(root, "wl_tiny.yaml"), *text = fs_printf(tiny_workload, seed), *at;
	char *two;

	at = strstr(text, "kv_dtypes: [bf16]");
	ck_assert_ptr_nonnull(at);
	two = fs_printf("%.*skv_dtypes: [bf16, fp8_e4m3_fnuz]%s", (int)(at - text), text, at + strlen("kv_dtypes: [bf16]"));
	tu_write(path, two, strlen(two));
	free(two);
	free(text);
	return path;
}

/* root/skills/mla_decode_cpu_splitkv.md: the CPU card, gate 1.1, claiming wl_tiny when claim is set. */
static void write_card(const char *root, int claim)
{
	char *src = tu_resource("skills/mla_decode_cpu_splitkv.md"), *dir = fs_join(root, "skills");
	char *dst = fs_join(dir, "mla_decode_cpu_splitkv.md"), *card = tu_read(src, NULL), *g, *out;

	fs_mkdir_p(dir);
	g = strstr(card, "isolated_speedup_min: 1.3");
	ck_assert_ptr_nonnull(g);
	memcpy(g, "isolated_speedup_min: 1.1", 25);
	g = strstr(card, "\nexpects:\n");
	ck_assert_ptr_nonnull(g);
	out = fs_printf("%.*s\nexpects:\n%s%s", (int)(g - card), card, claim ? "  workloads: [wl_tiny]\n" : "",
			g + strlen("\nexpects:\n"));
	tu_write(dst, out, strlen(out));
	free(out);
	free(card);
	free(src);
	free(dir);
	free(dst);
}

/*
 * Sparse (DSA) workloads for the CPU DSA card: V3.2 (fp8_ds_mla, topk 64) or V4 (fp8_model1, topk
 * 16 + extra 32, the extra cache compressed 4:1 in pages of 8), contexts 16..256, h_q 16.
 */
static const char dsa_workload[] = "id: wl_dsa\n"
				   "title: \"tiny CPU DSA workload\"\n"
				   "source: \"test fixture\"\n"
				   "model: {h_q: 16, s_q: 1, page_size: 16, kv_dtypes: [%s], %s}\n"
				   "concurrency: [1, 2]\n"
				   "traffic:\n"
				   "  histogram:\n"
				   "    context: [[16, 64, 0.5], [65, 256, 0.5]]\n"
				   "    generated: [[1, 16, 1.0]]\n"
				   "steps: 32\n"
				   "tasks: 2\n"
				   "seed: %d\n";

static char *write_dsa_workload(const char *root, int v4, int seed)
{
	char *path = fs_join(root, "wl_dsa.yaml"),
	     *text = fs_printf(dsa_workload, v4 ? "fp8_model1" : "fp8_ds_mla",
			       v4 ? "topk: 16, extra_topk: 32, extra_compress: 4, extra_page_size: 8, attn_sink: true" :
				    "topk: 64",
			       seed);

	tu_write(path, text, strlen(text));
	free(text);
	return path;
}

/* root/skills/dsa_decode_cpu_splitkv.md: the CPU DSA card (the test copy), gate 1.1, claiming wl_dsa, with extra
 * match lines (e.g. "  topk: 2048\n") when match_extra is not "". */
static void write_dsa_card(const char *root, const char *match_extra)
{
	char *src = tu_resource("skills/dsa_decode_cpu_splitkv.md"), *dir = fs_join(root, "skills");
	char *dst = fs_join(dir, "dsa_decode_cpu_splitkv.md"), *card = tu_read(src, NULL), *g, *out, *m;

	fs_mkdir_p(dir);
	g = strstr(card, "isolated_speedup_min: 1.3");
	ck_assert_ptr_nonnull(g);
	memcpy(g, "isolated_speedup_min: 1.1", 25);
	g = strstr(card, "\nexpects:\n");
	m = strstr(card, "  to_backend: cpu.splitkv\n");
	ck_assert_ptr_nonnull(g);
	ck_assert_ptr_nonnull(m);
	ck_assert(m < g);
	m += strlen("  to_backend: cpu.splitkv\n");
	g += strlen("\nexpects:\n");
	out = fs_printf("%.*s%s%.*s  workloads: [wl_dsa]\n%s", (int)(m - card), card, match_extra, (int)(g - m), m, g);
	tu_write(dst, out, strlen(out));
	free(out);
	free(card);
	free(src);
	free(dir);
	free(dst);
}

START_TEST(test_weighted_arithmetic)
{
	/* task 0: baseline 10 ms, candidate 5; task 1: baseline 1, candidate 2: geomean 1, workload
	 * (0.5 x 10 + 0.5 x 1) / (0.5 x 5 + 0.5 x 2) = 5.5 / 3.5; weight 0.9 on task 0: 9.1 / 4.7 */
	const double b0[] = {10, 10, 10, 10}, c0[] = {5, 5, 5, 5}, b1[] = {1, 1, 1, 1}, c1[] = {2, 2, 2, 2};
	const double *tb[] = {b0, b1}, *tc[] = {c0, c1};
	const int n[] = {4, 4};
	const double half[] = {0.5, 0.5}, heavy[] = {0.9, 0.1}, zero[] = {1.0, 0.0};
	struct stats_ci ci, g;

	ck_assert_int_eq(stats_weighted_speedup(&ci, tb, tc, n, half, 2, 200, 7), 0);
	ck_assert_double_eq_tol(ci.estimate, 5.5 / 3.5, 1e-12);
	ck_assert_double_eq_tol(ci.lo, 5.5 / 3.5, 1e-12); /* constant times: the CI is a point */
	ck_assert_double_eq_tol(ci.hi, 5.5 / 3.5, 1e-12);
	ck_assert_int_eq(stats_geomean_speedup(&g, tb, tc, n, 2, 200, 7), 0);
	ck_assert_double_eq_tol(g.estimate, 1.0, 1e-12);
	ck_assert_int_eq(stats_weighted_speedup(&ci, tb, tc, n, heavy, 2, 200, 7), 0);
	ck_assert_double_eq_tol(ci.estimate, 9.1 / 4.7, 1e-12);
	vs_error_set_quiet(1);
	ck_assert_int_eq(stats_weighted_speedup(&ci, tb, tc, n, zero, 2, 200, 7), VS_EUSAGE);
	vs_error_set_quiet(0);
}
END_TEST

START_TEST(test_weighted_bootstrap_keeps_pairs)
{
	/* Each pair's two times move together (a drifting clock): the ratio is 2 in every pair, so a
	 * bootstrap that keeps pairs together gives a CI of exactly 2; one that resampled each side on
	 * its own would not. */
	double b[64], c[64];
	const double *tb[] = {b}, *tc[] = {c};
	const int n[] = {64};
	const double w[] = {1};
	struct stats_ci ci;

	for (int i = 0; i < 64; i++) {
		b[i] = 2.0 * (1 + i % 7);
		c[i] = 1.0 * (1 + i % 7);
	}
	ck_assert_int_eq(stats_weighted_speedup(&ci, tb, tc, n, w, 1, 500, 3), 0);
	ck_assert_double_eq_tol(ci.lo, 2.0, 1e-12);
	ck_assert_double_eq_tol(ci.hi, 2.0, 1e-12);
}
END_TEST

static char *emit_card(const char *root, const char *card, const char *workload, const char *out_name,
		       int expect_status, char **err_out)
{
	char *args = fs_printf("--emit-plan %s --workload %s --out %s", card, workload, out_name);
	char *out = NULL, *err = NULL, *path = fs_join(root, out_name), *text;
	int status = tu_run_tool(root, args, &out, &err);

	ck_assert_msg(status == expect_status, "%s: exit %d: %s", args, status, err);
	text = status == 0 ? tu_read(path, NULL) : NULL;
	if (err_out)
		*err_out = err;
	else
		free(err);
	free(out);
	free(args);
	free(path);
	return text;
}

/* emit_card() of the CPU card. */
static char *emit(const char *root, const char *workload, const char *out_name, int expect_status, char **err_out)
{
	return emit_card(root, "skills/mla_decode_cpu_splitkv.md", workload, out_name, expect_status, err_out);
}

START_TEST(test_plan_deterministic_and_seeded)
{
	char *root = tu_tmpdir(), *wl = write_workload(root, 1), *a, *b, *c, *err = NULL;
	cJSON *j, *t0;

	write_card(root, 1);
	a = emit(root, wl, "a.json", 0, NULL);
	b = emit(root, wl, "b.json", 0, NULL);
	ck_assert_str_eq(a, b);
	j = cJSON_Parse(a);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(j, "tier")), "workload");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "workload"), "id")), "wl_tiny");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "gates"), "speedup_basis")),
			 "workload");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(j, "tasks")), 2);
	t0 = cJSON_GetArrayItem(cJSON_GetObjectItem(j, "tasks"), 0);
	ck_assert_int_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(t0, "workload"), "concurrency")),
			 1);
	ck_assert_double_eq_tol(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(t0, "workload"), "weight")),
				0.5, 1e-12);
	cJSON_Delete(j);
	free(write_workload(root, 2));
	c = emit(root, wl, "c.json", 0, NULL);
	ck_assert_str_ne(a, c); /* another seed: other sampled steps, another sha256 */
	/* a tier and a workload together are refused, naming both */
	{
		char *args = fs_printf("--emit-plan skills/mla_decode_cpu_splitkv.md --tier smoke --workload %s", wl);
		int status = tu_run_tool(root, args, NULL, &err);

		ck_assert_int_ne(status, 0);
		ck_assert_ptr_nonnull(strstr(err, "--tier smoke and --workload"));
		free(args);
		free(err);
	}
	/* a card that does not claim the workload is warned at --emit-plan */
	write_card(root, 0);
	free(emit(root, wl, "d.json", 0, &err));
	ck_assert_msg(strstr(err, "does not claim for workload 'wl_tiny'") != NULL, "%s", err);
	free(err);
	free(a);
	free(b);
	free(c);
	free(wl);
	free(root);
}
END_TEST

START_TEST(test_plan_check_card_rederives)
{
	char *root = tu_tmpdir(), *wl = write_workload(root, 1), *text, *card_path, diff[1024];
	struct plan p;
	struct card c;

	write_card(root, 1);
	text = emit(root, wl, "a.json", 0, NULL);
	card_path = fs_join(root, "skills/mla_decode_cpu_splitkv.md");
	ck_assert_int_eq(card_load(&c, card_path), 0);
	/* the card path in the plan is relative to root: load it as the plan names it */
	free(c.path);
	c.path = strdup("skills/mla_decode_cpu_splitkv.md");
	ck_assert_int_eq(plan_parse(&p, text, strlen(text), "a.json"), 0);
	ck_assert_int_eq(plan_check_card(&p, &c, 0, diff, sizeof(diff)), 0);
	/* an edited weight is named */
	p.workload->weight[0] = 0.25;
	ck_assert_int_eq(plan_check_card(&p, &c, 0, diff, sizeof(diff)), VS_EVERIFY);
	ck_assert_msg(strstr(diff, "weight") != NULL, "%s", diff);
	p.workload->weight[0] = 0.5;
	ck_assert_int_eq(plan_check_card(&p, &c, 0, diff, sizeof(diff)), 0);
	/* the workload file changed since the plan: refused with both hashes */
	free(write_workload(root, 3));
	vs_error_set_quiet(1);
	ck_assert_int_eq(plan_check_card(&p, &c, 0, diff, sizeof(diff)), VS_EVERIFY);
	vs_error_set_quiet(0);
	ck_assert_ptr_nonnull(strstr(vs_last_error(), "the workload changed since the plan was emitted"));
	plan_release(&p);
	/* weights that do not sum to 1 are refused on reading */
	{
		char *w = strstr(text, "\"weight\":\t0.5"), *bad;

		ck_assert_ptr_nonnull(w);
		bad = fs_printf("%.*s\"weight\":\t0.4%s", (int)(w - text), text, w + strlen("\"weight\":\t0.5"));
		vs_error_set_quiet(1);
		ck_assert_int_eq(plan_parse(&p, bad, strlen(bad), "bad.json"), VS_ESCHEMA);
		vs_error_set_quiet(0);
		ck_assert_ptr_nonnull(strstr(vs_last_error(), "sum to"));
		free(bad);
	}
	card_release(&c);
	free(card_path);
	free(text);
	free(wl);
	free(root);
}
END_TEST


#define DSA_CARD "skills/dsa_decode_cpu_splitkv.md"

START_TEST(test_sparse_plan_deterministic_and_matched)
{
	char *root = tu_tmpdir(), *wl = write_dsa_workload(root, 0, 1), *a, *b, *c, *err = NULL;
	cJSON *j, *tasks, *t0, *spec;

	write_dsa_card(root, "");
	a = emit_card(root, DSA_CARD, wl, "a.json", 0, NULL);
	b = emit_card(root, DSA_CARD, wl, "b.json", 0, NULL);
	ck_assert_str_eq(a, b);
	j = cJSON_Parse(a);
	tasks = cJSON_GetObjectItem(j, "tasks");
	/* the card plans fp8_ds_mla and fp8_model1; the workload runs fp8_ds_mla: its tasks only */
	ck_assert_int_eq(cJSON_GetArraySize(tasks), 2);
	t0 = cJSON_GetArrayItem(tasks, 0);
	spec = cJSON_GetObjectItem(t0, "spec");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(spec, "name")), "fp8_ds_mla-k64-wl-c1-t0");
	ck_assert_int_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(spec, "topk")), 64);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(spec, "kv_dtype")), "fp8_ds_mla");
	ck_assert_ptr_null(cJSON_GetObjectItem(spec, "extra_topk"));
	ck_assert_double_eq_tol(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetObjectItem(t0, "workload"), "weight")),
				0.5, 1e-12);
	cJSON_Delete(j);
	free(write_dsa_workload(root, 0, 2));
	c = emit_card(root, DSA_CARD, wl, "c.json", 0, NULL);
	ck_assert_str_ne(a, c);
	/* a card that states another topk claims that one only */
	write_dsa_card(root, "  topk: 2048\n");
	free(emit_card(root, DSA_CARD, wl, "d.json", 3, &err));
	ck_assert_msg(strstr(err, "model.topk is 64, but skills/dsa_decode_cpu_splitkv.md claims match.topk 2048") !=
			      NULL,
		      "%s", err);
	free(err);
	/* a dense workload for the sparse card, and the sparse workload for the dense card */
	write_dsa_card(root, "");
	write_card(root, 1);
	free(wl);
	wl = write_workload(root, 1);
	free(emit_card(root, DSA_CARD, wl, "e.json", 3, &err));
	ck_assert_msg(strstr(err, "a dense workload (its model has no topk and no block-scaled kv_dtype) for a sparse "
				  "(DSA) card") != NULL,
		      "%s", err);
	free(err);
	free(wl);
	wl = write_dsa_workload(root, 0, 1);
	free(emit_card(root, "skills/mla_decode_cpu_splitkv.md", wl, "f.json", 3, &err));
	ck_assert_msg(strstr(err, "a sparse (DSA) workload (model.topk or a block-scaled kv_dtype) for a dense card") !=
			      NULL,
		      "%s", err);
	free(err);
	free(a);
	free(b);
	free(c);
	free(wl);
	free(root);
}
END_TEST

START_TEST(test_sparse_plan_rederives)
{
	char *root = tu_tmpdir(), *wl = write_dsa_workload(root, 1, 1), *text, *card_path, diff[1024];
	struct plan p;
	struct card c;
	cJSON *j, *spec;
	int32_t keep;

	write_dsa_card(root, "");
	text = emit_card(root, DSA_CARD, wl, "a.json", 0, NULL);
	/* V4: the extra cache is the compressed one, a row per 4 keys of the context */
	j = cJSON_Parse(text);
	spec = cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "tasks"), 1), "spec");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(spec, "kv_dtype")), "fp8_model1");
	ck_assert_int_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(spec, "topk")), 16);
	ck_assert_int_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(spec, "extra_topk")), 32);
	ck_assert_int_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(spec, "extra_page_size")), 8);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(spec, "attn_sink")));
	for (int b = 0; b < 2; b++)
		ck_assert_int_eq(cJSON_GetNumberValue(cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "extra_seqlens"), b)),
				 (int)cJSON_GetNumberValue(cJSON_GetArrayItem(cJSON_GetObjectItem(spec, "seqlens"), b)) / 4);
	cJSON_Delete(j);
	card_path = fs_join(root, DSA_CARD);
	ck_assert_int_eq(card_load(&c, card_path), 0);
	free(c.path);
	c.path = strdup(DSA_CARD);
	ck_assert_int_eq(plan_parse(&p, text, strlen(text), "a.json"), 0);
	ck_assert_int_eq(plan_check_card(&p, &c, 0, diff, sizeof(diff)), 0);
	/* an edited extra cache length is named (the hash is the plan's own: plan_check_card compares specs) */
	keep = p.tasks[1].extra_seqlens[0];
	p.tasks[1].extra_seqlens[0] = keep + 1;
	ck_assert_int_eq(plan_check_card(&p, &c, 0, diff, sizeof(diff)), VS_EVERIFY);
	ck_assert_msg(strstr(diff, "spec.extra_seqlens") != NULL, "%s", diff);
	p.tasks[1].extra_seqlens[0] = keep;
	/* and an edited topk */
	p.tasks[0].topk = 17;
	ck_assert_int_eq(plan_check_card(&p, &c, 0, diff, sizeof(diff)), VS_EVERIFY);
	ck_assert_msg(strstr(diff, "spec.topk") != NULL, "%s", diff);
	p.tasks[0].topk = 16;
	ck_assert_int_eq(plan_check_card(&p, &c, 0, diff, sizeof(diff)), 0);
	/* the workload's topk edited since: the file's hash says so */
	{
		char *w = tu_read(wl, NULL), *at = strstr(w, "topk: 16");

		ck_assert_ptr_nonnull(at);
		at[7] = '2';
		tu_write(wl, w, strlen(w));
		free(w);
	}
	vs_error_set_quiet(1);
	ck_assert_int_eq(plan_check_card(&p, &c, 0, diff, sizeof(diff)), VS_EVERIFY);
	vs_error_set_quiet(0);
	ck_assert_ptr_nonnull(strstr(vs_last_error(), "the workload changed since the plan was emitted"));
	plan_release(&p);
	card_release(&c);
	free(card_path);
	free(text);
	free(wl);
	free(root);
}
END_TEST

START_TEST(test_sparse_validate_and_verify)
{
	char *root = tu_tmpdir(), *wl = write_dsa_workload(root, 0, 1), *args, *out = NULL, *err = NULL, *card;
	char *card_path = fs_join(root, DSA_CARD);
	int status;

	write_dsa_card(root, "");
	args = fs_printf("--validate " DSA_CARD " --workload %s", wl);
	tu_run_tool(root, args, &out, &err);
	ck_assert_msg(strstr(out, "workload wl_dsa speedup (2 tasks)") != NULL, "%s\n%s", out, err);
	ck_assert_msg(strstr(out, "(validation.workloads.wl_dsa@x86_64)") != NULL, "%s\n%s", out, err);
	card = tu_read(card_path, NULL);
	ck_assert_msg(strstr(card, "wl_dsa@x86_64: {status: ") != NULL, "%s", card);
	free(card);
	free(out);
	free(err);
	status = tu_run_tool(root, "--verify " DSA_CARD, &out, &err);
	ck_assert_msg(status == 0, "exit %d: %s\n%s", status, out, err);
	ck_assert_msg(strstr(out, "workload wl_dsa on x86_64: ") != NULL && strstr(out, "evidence ok") != NULL, "%s",
		      out);
	free(out);
	free(err);
	status = tu_run_tool(root, "--report", &out, &err);
	ck_assert_msg(strstr(out, "the baseline's time lies in fp8_ds_mla-k64-wl-") != NULL, "%s", out);
	free(out);
	free(err);
	free(args);
	free(card_path);
	free(wl);
	free(root);
}
END_TEST

/* The one eval dir of the CPU card under root: its result.json path (malloc'd). */
static char *only_result(const char *root)
{
	char *dir = fs_join(root, "results/mla_decode_cpu_splitkv"), *path = NULL;
	DIR *d = opendir(dir);
	struct dirent *de;

	ck_assert_ptr_nonnull(d);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.') {
			free(path);
			path = fs_printf("%s/%s/result.json", dir, de->d_name);
		}
	closedir(d);
	free(dir);
	ck_assert_ptr_nonnull(path);
	return path;
}

/* Scale the first per-concurrency estimate of the one eval dir's result.json by 1.25. */
static void tamper_per_concurrency(const char *root)
{
	char *path = only_result(root), *text;
	cJSON *j, *e;

	text = tu_read(path, NULL);
	j = cJSON_Parse(text);
	e = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(
										   cJSON_GetObjectItem(j, "overall"), "workload"),
									   "per_concurrency"),
								       0),
						    "speedup"),
				"estimate");
	ck_assert_ptr_nonnull(e);
	cJSON_SetNumberValue(e, e->valuedouble * 1.25);
	free(text);
	text = cJSON_Print(j);
	tu_write(path, text, strlen(text));
	cJSON_Delete(j);
	free(text);
	free(path);
}

START_TEST(test_validate_record_verify_report)
{
	char *root = tu_tmpdir(), *wl = write_workload(root, 1), *args, *out = NULL, *err = NULL, *card, *at;
	char *card_path = fs_join(root, "skills/mla_decode_cpu_splitkv.md");
	int status;
	char was;

	write_card(root, 1);
	args = fs_printf("--validate skills/mla_decode_cpu_splitkv.md --workload %s", wl);
	/* validated or failed, whatever this machine measures: both are recorded */
	tu_run_tool(root, args, &out, &err);
	ck_assert_msg(strstr(out, "workload wl_tiny speedup (2 tasks)") != NULL, "%s\n%s", out, err);
	/* the speedup at each concurrency level the tasks stand for (issue 41, item 4) */
	ck_assert_msg(strstr(out, " (by concurrency ") != NULL, "%s\n%s", out, err);
	ck_assert_msg(strstr(out, "(validation.workloads.wl_tiny@x86_64)") != NULL, "%s\n%s", out, err);
	card = tu_read(card_path, NULL);
	ck_assert_msg(strstr(card, "wl_tiny@x86_64: {status: ") != NULL, "%s", card);
	/* the tier record is untouched: still a draft */
	ck_assert_ptr_nonnull(strstr(card, "status: draft"));
	free(out);
	free(err);
	status = tu_run_tool(root, "--verify skills/mla_decode_cpu_splitkv.md", &out, &err);
	ck_assert_msg(status == 0, "exit %d: %s\n%s", status, out, err);
	ck_assert_msg(strstr(out, "workload wl_tiny on x86_64: ") != NULL && strstr(out, "evidence ok") != NULL, "%s",
		      out);
	free(out);
	free(err);
	status = tu_run_tool(root, "--report", &out, &err);
	ck_assert_msg(strstr(out, "deployments (verdict on the workload speedup") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "the baseline's time lies in bf16-wl-") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "wl_tiny: by concurrency ") != NULL, "%s", out);
	free(out);
	free(err);
	status = tu_run_tool(root, "--report --format json", &out, &err);
	ck_assert_msg(strstr(out, "\"workload_speedup\"") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "\"per_concurrency\"") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "\"baseline_ms\"") != NULL && strstr(out, "\"candidate_ms\"") != NULL, "%s", out);
	free(out);
	free(err);
	/* the deployment's tasks, each with the run's medians (issue 39: every implementation beside the
	 * baseline, task by task) */
	{
		char *res_path = only_result(root), *text = tu_read(res_path, NULL), line[256];
		cJSON *res = cJSON_Parse(text), *t0 = cJSON_GetArrayItem(cJSON_GetObjectItem(res, "tasks"), 0);
		double base = cJSON_GetNumberValue(cJSON_GetObjectItem(
			cJSON_GetObjectItem(cJSON_GetObjectItem(t0, "baseline"), "timing"), "median_ms"));
		double cand = cJSON_GetNumberValue(cJSON_GetObjectItem(
			cJSON_GetObjectItem(cJSON_GetObjectItem(t0, "candidate"), "timing"), "median_ms"));

		snprintf(line, sizeof(line), "| %s | %.4f | %.4f | ",
			 cJSON_GetStringValue(cJSON_GetObjectItem(t0, "name")), base, cand);
		tu_run_tool(root, "--report --format markdown", &out, &err);
		ck_assert_msg(strstr(out, "### mla_decode_cpu_splitkv on wl_tiny@x86_64: per task") != NULL &&
				      strstr(out, "| task | cpu.naive ms | cpu.splitkv ms | speedup |") != NULL &&
				      strstr(out, line) != NULL,
			      "want '%s' in:\n%s", line, out);
		free(out);
		free(err);
		tu_run_tool(root, "--report", &out, &err);
		ck_assert_msg(strstr(out, "mla_decode_cpu_splitkv on wl_tiny@x86_64, per task") != NULL, "%s", out);
		free(out);
		free(err);
		cJSON_Delete(res);
		free(text);
		free(res_path);
	}
	/* a record whose speedup was edited by hand no longer verifies */
	at = strstr(card, "speedup: ");
	ck_assert_ptr_nonnull(at);
	was = at[9];
	at[9] = at[9] == '9' ? '8' : '9';
	tu_write(card_path, card, strlen(card));
	status = tu_run_tool(root, "--verify skills/mla_decode_cpu_splitkv.md", &out, &err);
	ck_assert_int_ne(status, 0);
	ck_assert_msg(strstr(err, "validation.workloads.wl_tiny@x86_64.speedup is") != NULL, "%s", err);
	free(out);
	free(err);
	/* with the card put back, a per-concurrency figure edited in result.json no longer verifies */
	at[9] = was;
	tu_write(card_path, card, strlen(card));
	tamper_per_concurrency(root);
	status = tu_run_tool(root, "--verify skills/mla_decode_cpu_splitkv.md", &out, &err);
	ck_assert_int_ne(status, 0);
	ck_assert_msg(strstr(err, "the workload speedup at concurrency ") != NULL, "%s\n%s", out, err);
	free(out);
	free(err);
	free(card);
	free(args);
	free(card_path);
	free(wl);
	free(root);
}
END_TEST

START_TEST(test_record_refuses_unclaimed)
{
	char *root = tu_tmpdir(), *wl = write_workload(root, 1), *args, *out = NULL, *err = NULL;
	int status;

	write_card(root, 0);
	args = fs_printf("--validate skills/mla_decode_cpu_splitkv.md --workload %s", wl);
	status = tu_run_tool(root, args, &out, &err);
	ck_assert_int_ne(status, 0);
	ck_assert_msg(strstr(err, "which skills/mla_decode_cpu_splitkv.md does not claim for") != NULL, "%s", err);
	free(out);
	free(err);
	free(args);
	free(wl);
	free(root);
}
END_TEST

/* root/wl.plan.json emitted for the CPU card and workload wl: its workload.claimed is want. */
static void emit_claimed(const char *root, const char *wl, int want)
{
	char *text = emit_card(root, "skills/mla_decode_cpu_splitkv.md", wl, "wl.plan.json", 0, NULL);
	cJSON *plan = cJSON_Parse(text);
	const cJSON *claimed = cJSON_GetObjectItem(cJSON_GetObjectItem(plan, "workload"), "claimed");

	ck_assert_msg(cJSON_IsBool(claimed) && cJSON_IsTrue(claimed) == want, "workload.claimed is not %d", want);
	cJSON_Delete(plan);
	free(text);
}

/* --run of root/wl.plan.json fails, saying line. */
static void run_refused(const char *root, const char *line)
{
	char *out = NULL, *err = NULL;

	ck_assert_int_ne(tu_run_tool(root, "--run wl.plan.json --threads 1", &out, &err), 0);
	ck_assert_msg(strstr(err, line) != NULL, "%s", err);
	free(out);
	free(err);
}

/* A claim added after the plan was emitted: the plan does not run (a claim comes before the run). */
START_TEST(test_claim_added_after_the_plan_is_refused)
{
	char *root = tu_tmpdir(), *wl = write_workload(root, 1);

	write_card(root, 0);
	emit_claimed(root, wl, 0);
	write_card(root, 1);
	run_refused(root, "skills/mla_decode_cpu_splitkv.md claims workload 'wl_tiny' since the plan was emitted "
			  "(expects.workloads): a claim comes before the run");
	/* emitted again with the claim, the plan says so */
	emit_claimed(root, wl, 1);
	/* and with the claim dropped again, it does not run either */
	write_card(root, 0);
	run_refused(root, "skills/mla_decode_cpu_splitkv.md no longer claims workload 'wl_tiny' since the plan was "
			  "emitted");
	free(wl);
	free(root);
}
END_TEST

/*
 * The claim of a plan without workload.claimed (before 2026-12-05) is read from the card hash it
 * stored: card_hash_check() answers 2 when that hash still covers the claims list as it is.
 */
START_TEST(test_claim_of_a_plan_without_the_field)
{
	static char wl_tiny[] = "wl_tiny";
	char *items[] = {wl_tiny};
	struct plan_workload w;
	struct plan p;
	struct card c;

	memset(&w, 0, sizeof(w));
	memset(&p, 0, sizeof(p));
	memset(&c, 0, sizeof(c));
	w.id = wl_tiny;
	p.workload = &w;
	w.claimed = -1;
	c.expects.workloads = (struct card_list){items, 1};
	ck_assert_int_eq(plan_claim_unchanged(&p, &c, 2), 1); /* claimed then and now */
	ck_assert_int_eq(plan_claim_unchanged(&p, &c, 1), 0); /* the claim line is new */
	c.expects.workloads.count = 0;
	ck_assert_int_eq(plan_claim_unchanged(&p, &c, 2), 1); /* claimed neither then nor now */
	ck_assert_int_eq(plan_claim_unchanged(&p, &c, 1), 1);
	w.claimed = 1;
	ck_assert_int_eq(plan_claim_unchanged(&p, &c, 1), 0); /* the field: claimed then, not now */
	c.expects.workloads.count = 1;
	ck_assert_int_eq(plan_claim_unchanged(&p, &c, 1), 1);
	w.claimed = 0;
	ck_assert_int_eq(plan_claim_unchanged(&p, &c, 2), 0);
	p.workload = NULL; /* a tier plan */
	ck_assert_int_eq(plan_claim_unchanged(&p, &c, 0), 1);
}
END_TEST

/*
 * The verdict of a workload plan of two kv dtypes from injected times (constant per task, so every
 * CI is a point): each bf16 task baseline base_bf16 ms against candidate 1 ms, each fp8 task
 * baseline base_fp8 against 1. Returns the result object; *line gets the summary line.
 */
static cJSON *verdict_2kv(const struct plan *p, double base_bf16, double base_fp8, char *line, size_t cap)
{
	static double one[8] = {1, 1, 1, 1, 1, 1, 1, 1};
	double bb[8], bf[8];
	struct evaldir_task_summary t[16];
	cJSON *root = cJSON_CreateObject();

	ck_assert_int_le(p->ntasks, 16);
	for (int i = 0; i < 8; i++) {
		bb[i] = base_bf16;
		bf[i] = base_fp8;
	}
	memset(t, 0, sizeof(t));
	for (int i = 0; i < p->ntasks; i++) {
		int d = vs_op_of(&p->tasks[i])->dtype(&p->tasks[i]);
		const char *name = vs_op_of(&p->tasks[i])->dtype_name(d);

		t[i].complete = t[i].parity_pass = 1;
		t[i].base_capture = t[i].cand_capture = -1;
		t[i].t_base = !strcmp(name, "bf16") ? bb : bf;
		t[i].t_cand = one;
		t[i].npairs = 8;
		t[i].dtype = d;
		t[i].name = p->tasks[i].name;
		t[i].weight = p->workload->weight[i];
		t[i].concurrency = p->workload->concurrency[i];
	}
	ck_assert_int_eq(evaldir_verdict(root, p, t, p->ntasks, 0, NULL, line, cap), 0);
	return root;
}

START_TEST(test_gate_per_kv_dtype)
{
	char *root = tu_tmpdir(), *wl = write_workload_2kv(root, 1), *text, *out = NULL, *err = NULL, *args;
	char line[4096];
	struct plan p;
	cJSON *r, *pk, *g;

	write_card(root, 1);
	text = emit(root, wl, "a.json", 0, NULL);
	ck_assert_int_eq(plan_parse(&p, text, strlen(text), "a.json"), 0);
	ck_assert_int_eq(p.ntasks, 4); /* 2 workload tasks x 2 kv dtypes, bf16 first (the card's order) */
	/*
	 * bf16 wins 2x, fp8 loses 0.8x: the mix, (2 + 2 + 0.8 + 0.8) / 4 over equal weights... as times,
	 * (2 + 2 + 0.8 + 0.8) / (1 + 1 + 1 + 1) = 1.4, clears the gate of 1.1; fp8 alone does not.
	 */
	r = verdict_2kv(&p, 2.0, 0.8, line, sizeof(line));
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(r, "verdict")), "failed");
	pk = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "overall"), "workload"), "per_kv_dtype");
	ck_assert_int_eq(cJSON_GetArraySize(pk), 2);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(pk, 0), "kv_dtype")), "bf16");
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(pk, 1), "kv_dtype")),
			 "fp8_e4m3_fnuz");
	ck_assert_int_eq(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(pk, 1), "tasks")), 2);
	ck_assert_double_eq_tol(cJSON_GetNumberValue(cJSON_GetObjectItem(cJSON_GetArrayItem(pk, 1), "weight")), 0.5,
				1e-12);
	ck_assert_double_eq_tol(cJSON_GetNumberValue(cJSON_GetObjectItem(
					cJSON_GetObjectItem(cJSON_GetArrayItem(pk, 0), "speedup"), "estimate")),
				2.0, 1e-12);
	ck_assert_double_eq_tol(cJSON_GetNumberValue(cJSON_GetObjectItem(
					cJSON_GetObjectItem(cJSON_GetArrayItem(pk, 1), "speedup"), "estimate")),
				0.8, 1e-12);
	ck_assert_double_eq_tol(cJSON_GetNumberValue(cJSON_GetObjectItem(
					cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "overall"), "workload"),
							    "speedup"),
					"estimate")),
				1.4, 1e-12);
	/* the gate's JSON names the kv dtype that failed it, and its lower bound is the smallest */
	g = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "gates"), "speedup");
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(g, "pass")));
	ck_assert_double_eq_tol(cJSON_GetNumberValue(cJSON_GetObjectItem(g, "ci_lower")), 0.8, 1e-12);
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(g, "per_kv_dtype"), 0), "pass")));
	ck_assert(
		cJSON_IsFalse(cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(g, "per_kv_dtype"), 1), "pass")));
	/* one line per kv dtype, the mix labelled as such, the verdict naming the kv dtype */
	ck_assert_msg(strstr(line, "workload wl_tiny speedup on bf16 (2 tasks): 2.000 [2.000, 2.000]; gate >= 1.1: "
				   "pass\n") != NULL,
		      "%s", line);
	ck_assert_msg(strstr(line, "workload wl_tiny speedup on fp8_e4m3_fnuz (2 tasks): 0.800 [0.800, 0.800]; gate "
				   ">= 1.1: FAIL\n") != NULL,
		      "%s", line);
	ck_assert_msg(strstr(line, "workload wl_tiny speedup, bf16 + fp8_e4m3_fnuz mixed (4 tasks, not gated): 1.400 "
				   "[1.400, 1.400]") != NULL,
		      "%s", line);
	ck_assert_msg(strstr(line, "verdict failed (speedup gate: fp8_e4m3_fnuz 0.800 [0.800, 0.800] < 1.1)") != NULL,
		      "%s", line);
	cJSON_Delete(r);
	/* both kv dtypes clear the gate: validated */
	r = verdict_2kv(&p, 1.5, 1.25, line, sizeof(line));
	ck_assert_msg(!strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(r, "verdict")), "validated"), "%s", line);
	ck_assert_msg(strstr(line, "; verdict validated") != NULL, "%s", line);
	g = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "gates"), "speedup");
	ck_assert_double_eq_tol(cJSON_GetNumberValue(cJSON_GetObjectItem(g, "ci_lower")), 1.25, 1e-12);
	cJSON_Delete(r);
	/* bf16 fails and fp8 passes: the other kv dtype named */
	r = verdict_2kv(&p, 1.05, 3.0, line, sizeof(line));
	ck_assert_msg(strstr(line, "verdict failed (speedup gate: bf16 1.050 [1.050, 1.050] < 1.1)") != NULL, "%s",
		      line);
	cJSON_Delete(r);
	plan_release(&p);
	/* --emit-plan's summary: the weight rows once per kv dtype, each group named */
	args = fs_printf("--emit-plan skills/mla_decode_cpu_splitkv.md --workload %s --out b.json", wl);
	ck_assert_int_eq(tu_run_tool(root, args, &out, &err), 0);
	ck_assert_msg(strstr(out, "             bf16 (each kv dtype is gated on its own):\n               concurrency 1:") !=
			      NULL,
		      "%s", out);
	ck_assert_msg(strstr(out, "             fp8_e4m3_fnuz (each kv dtype is gated on its own):\n") != NULL, "%s",
		      out);
	free(out);
	free(err);
	free(args);
	free(text);
	free(wl);
	free(root);
}
END_TEST

/* One plan of one kv dtype: per_kv_dtype has its one entry, and the gate and line are as before. */
START_TEST(test_gate_one_kv_dtype_unchanged)
{
	char *root = tu_tmpdir(), *wl = write_workload(root, 1), *text;
	char line[4096];
	struct plan p;
	cJSON *r, *pk, *g;

	write_card(root, 1);
	text = emit(root, wl, "a.json", 0, NULL);
	ck_assert_int_eq(plan_parse(&p, text, strlen(text), "a.json"), 0);
	r = verdict_2kv(&p, 2.0, 0.8, line, sizeof(line));
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(r, "verdict")), "validated");
	pk = cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(r, "overall"), "workload"), "per_kv_dtype");
	ck_assert_int_eq(cJSON_GetArraySize(pk), 1);
	ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(pk, 0), "kv_dtype")), "bf16");
	g = cJSON_GetObjectItem(cJSON_GetObjectItem(r, "gates"), "speedup");
	ck_assert_ptr_null(cJSON_GetObjectItem(g, "per_kv_dtype"));
	ck_assert_msg(!strncmp(line, "workload wl_tiny speedup (2 tasks): 2.000 [2.000, 2.000] (by concurrency ", 73),
		      "%s", line);
	ck_assert_ptr_null(strchr(line, '\n'));
	cJSON_Delete(r);
	plan_release(&p);
	free(text);
	free(wl);
	free(root);
}
END_TEST

START_TEST(test_two_kv_dtypes_record_verify_report)
{
	char *root = tu_tmpdir(), *wl = write_workload_2kv(root, 1), *args, *out = NULL, *err = NULL, *card, *at;
	char *card_path = fs_join(root, "skills/mla_decode_cpu_splitkv.md"), *res, *text, *log, *tampered;
	int status;
	char was;
	cJSON *j, *e;

	write_card(root, 1);
	args = fs_printf("--validate skills/mla_decode_cpu_splitkv.md --workload %s", wl);
	/* validated or failed, whatever this machine measures: each kv dtype gets its line */
	tu_run_tool(root, args, &out, &err);
	ck_assert_msg(strstr(out, "workload wl_tiny speedup on bf16 (2 tasks): ") != NULL, "%s\n%s", out, err);
	ck_assert_msg(strstr(out, "workload wl_tiny speedup on fp8_e4m3_fnuz (2 tasks): ") != NULL, "%s\n%s", out, err);
	ck_assert_msg(strstr(out, "workload wl_tiny speedup, bf16 + fp8_e4m3_fnuz mixed (4 tasks, not gated): ") != NULL,
		      "%s\n%s", out, err);
	ck_assert_msg(strstr(out, "(its kv dtypes mixed; each gated: bf16 ") != NULL, "%s\n%s", out, err);
	/* run.log says the same */
	res = only_result(root);
	log = fs_printf("%.*srun.log", (int)(strlen(res) - strlen("result.json")), res);
	text = tu_read(log, NULL);
	ck_assert_msg(strstr(text, "workload wl_tiny speedup on fp8_e4m3_fnuz (2 tasks): ") != NULL, "%s", text);
	free(text);
	card = tu_read(card_path, NULL);
	ck_assert_msg(strstr(card, "per_kv_dtype: {bf16: {speedup: ") != NULL, "%s", card);
	ck_assert_msg(strstr(card, "}, fp8_e4m3_fnuz: {speedup: ") != NULL, "%s", card);
	free(out);
	free(err);
	status = tu_run_tool(root, "--verify skills/mla_decode_cpu_splitkv.md", &out, &err);
	ck_assert_msg(status == 0, "exit %d: %s\n%s", status, out, err);
	free(out);
	free(err);
	/* every report format shows each kv dtype's speedup */
	status = tu_run_tool(root, "--report", &out, &err);
	ck_assert_msg(strstr(out, "wl_tiny: by kv dtype (each gated) bf16 ") != NULL, "%s", out);
	ck_assert_msg(strstr(out, "; fp8_e4m3_fnuz ") != NULL, "%s", out);
	free(out);
	free(err);
	status = tu_run_tool(root, "--report --format markdown", &out, &err);
	ck_assert_msg(strstr(out, "| bf16 ") != NULL && strstr(out, "; mix ") != NULL, "%s", out);
	free(out);
	free(err);
	status = tu_run_tool(root, "--report --format json", &out, &err);
	j = cJSON_Parse(out);
	ck_assert_ptr_nonnull(j);
	ck_assert_msg(strstr(out, "\"per_kv_dtype\"") != NULL && strstr(out, "\"fp8_e4m3_fnuz\"") != NULL, "%s", out);
	cJSON_Delete(j);
	free(out);
	free(err);
	status = tu_run_tool(root, "--report --format html", &out, &err);
	ck_assert_msg(strstr(out, "<td>bf16 ") != NULL && strstr(out, "; mix ") != NULL, "%s", out);
	free(out);
	free(err);
	/* a per-kv-dtype figure edited in the card no longer verifies */
	at = strstr(card, "fp8_e4m3_fnuz: {speedup: ");
	ck_assert_ptr_nonnull(at);
	at += strlen("fp8_e4m3_fnuz: {speedup: ");
	was = at[0];
	at[0] = at[0] == '9' ? '8' : '9';
	tu_write(card_path, card, strlen(card));
	status = tu_run_tool(root, "--verify skills/mla_decode_cpu_splitkv.md", &out, &err);
	ck_assert_int_ne(status, 0);
	ck_assert_msg(strstr(err, "validation.workloads.wl_tiny@x86_64.per_kv_dtype.fp8_e4m3_fnuz is") != NULL, "%s",
		      err);
	free(out);
	free(err);
	at[0] = was;
	tu_write(card_path, card, strlen(card));
	/* a per-kv-dtype figure edited in result.json no longer verifies */
	text = tu_read(res, NULL);
	j = cJSON_Parse(text);
	e = cJSON_GetObjectItem(
		cJSON_GetObjectItem(cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "overall"),
											   "workload"),
							 "per_kv_dtype"),
					    1),
				    "speedup"),
		"estimate");
	ck_assert_ptr_nonnull(e);
	cJSON_SetNumberValue(e, e->valuedouble * 1.25);
	tampered = cJSON_Print(j);
	tu_write(res, tampered, strlen(tampered));
	status = tu_run_tool(root, "--verify skills/mla_decode_cpu_splitkv.md", &out, &err);
	ck_assert_int_ne(status, 0);
	ck_assert_msg(strstr(err, "the workload speedup on kv dtype fp8_e4m3_fnuz in result.json does not recompute") !=
			      NULL,
		      "%s\n%s", out, err);
	free(out);
	free(err);
	/* evidence written before per_kv_dtype (none in result.json) verifies, with a warning */
	cJSON_DeleteItemFromObject(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "overall"), "workload"), "per_kv_dtype");
	free(tampered);
	tampered = cJSON_Print(j);
	tu_write(res, tampered, strlen(tampered));
	at = strstr(card, "per_kv_dtype: {");
	ck_assert_ptr_nonnull(at);
	{
		char *end = strstr(at, "}}, "), *old;

		ck_assert_ptr_nonnull(end);
		old = fs_printf("%.*s%s", (int)(at - card), card, end + 4);
		tu_write(card_path, old, strlen(old));
		free(old);
	}
	status = tu_run_tool(root, "--verify skills/mla_decode_cpu_splitkv.md", &out, &err);
	ck_assert_msg(status == 0, "exit %d: %s\n%s", status, out, err);
	ck_assert_msg(strstr(err, "written before the workload speedup of each kv dtype") != NULL, "%s", err);
	free(out);
	free(err);
	cJSON_Delete(j);
	free(tampered);
	free(text);
	free(log);
	free(res);
	free(card);
	free(args);
	free(card_path);
	free(wl);
	free(root);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("workload_plan");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_weighted_arithmetic);
	tcase_add_test(tc, test_weighted_bootstrap_keeps_pairs);
	tcase_add_test(tc, test_plan_deterministic_and_seeded);
	tcase_add_test(tc, test_plan_check_card_rederives);
	tcase_add_test(tc, test_validate_record_verify_report);
	tcase_add_test(tc, test_record_refuses_unclaimed);
	tcase_add_test(tc, test_claim_added_after_the_plan_is_refused);
	tcase_add_test(tc, test_claim_of_a_plan_without_the_field);
	tcase_add_test(tc, test_gate_per_kv_dtype);
	tcase_add_test(tc, test_gate_one_kv_dtype_unchanged);
	tcase_add_test(tc, test_two_kv_dtypes_record_verify_report);
	tcase_add_test(tc, test_sparse_plan_deterministic_and_matched);
	tcase_add_test(tc, test_sparse_plan_rederives);
	tcase_add_test(tc, test_sparse_validate_and_verify);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
