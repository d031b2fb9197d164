/* check_plan.c - plans: built from cards, deterministic, round trip, refusals, tiers, build figures. */
#include "testutil.h"

#include "card.h"
#include "fsutil.h"
#include "plan.h"
#include "task.h"
#include "vs_error.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static char *tmp;

static void setup(void)
{
	vs_error_set_quiet(1);
	tmp = tu_tmpdir();
}

static void teardown(void)
{
	free(tmp);
	vs_error_set_quiet(0);
}

/* The shipped card `id`, with each `from` replaced by `to`, written as tmp/<id>.md and loaded. */
static void load_variant(struct card *c, const char *id, const char *from, const char *to)
{
	char *src = fs_printf("tests/resources/skills/%s.md", id), *path = tu_source(src), *text = tu_read(path, NULL);
	char *dst = fs_printf("%s/%s.md", tmp, id), *out;

	if (from) {
		char *at = strstr(text, from);

		ck_assert_msg(at != NULL, "'%s' not found in %s", from, path);
		out = fs_printf("%.*s%s%s", (int)(at - text), text, to, at + strlen(from));
	} else {
		out = strdup(text);
	}
	tu_write(dst, out, strlen(out));
	ck_assert_msg(card_load(c, dst) == 0, "card_load(%s): %s", dst, vs_last_error());
	free(src);
	free(path);
	free(text);
	free(dst);
	free(out);
}

static char *plan_text(const struct card *c, const struct plan_options *o)
{
	struct plan p;
	char *text = NULL;

	ck_assert_msg(plan_build(&p, c, o) == 0, "plan_build: %s", vs_last_error());
	ck_assert_int_eq(plan_to_text(&text, &p), 0);
	plan_release(&p);
	return text;
}

START_TEST(plan_is_deterministic)
{
	struct card c;
	struct plan_options o = {.tier = "smoke"};
	char *a, *b;

	load_variant(&c, "mla_decode_cpu_splitkv", NULL, NULL);
	a = plan_text(&c, &o);
	b = plan_text(&c, &o);
	ck_assert_str_eq(a, b);
	ck_assert_ptr_nonnull(strstr(a, "\"impl\":\t\"cpu.naive\""));
	ck_assert_ptr_nonnull(strstr(a, "\"impl\":\t\"cpu.splitkv\""));
	free(a);
	free(b);
	card_release(&c);
}
END_TEST

START_TEST(plan_round_trips_through_its_file)
{
	struct card c;
	struct plan p, q;
	char *path = fs_printf("%s/x.plan.json", tmp), *a = NULL, *b = NULL;

	load_variant(&c, "mla_decode_cpu_splitkv", NULL, NULL);
	ck_assert_int_eq(plan_build(&p, &c, NULL), 0);
	ck_assert_int_eq(plan_write(&p, path), 0);
	ck_assert_msg(plan_read(&q, path) == 0, "plan_read: %s", vs_last_error());
	ck_assert_int_eq(plan_to_text(&a, &p), 0);
	ck_assert_int_eq(plan_to_text(&b, &q), 0);
	ck_assert_str_eq(a, b);
	ck_assert_int_eq(q.ntasks, p.ntasks);
	ck_assert_double_eq(q.speedup_min, c.expects.isolated_speedup_min);
	plan_release(&p);
	plan_release(&q);
	card_release(&c);
	free(a);
	free(b);
	free(path);
}
END_TEST

START_TEST(edited_plan_is_refused)
{
	struct card c;
	struct plan p, q;
	char *path = fs_printf("%s/x.plan.json", tmp), *text, *at;

	load_variant(&c, "mla_decode_cpu_splitkv", NULL, NULL);
	ck_assert_int_eq(plan_build(&p, &c, NULL), 0);
	ck_assert_int_eq(plan_write(&p, path), 0);
	text = tu_read(path, NULL);
	at = strstr(text, "bf16-ragged");
	ck_assert_ptr_nonnull(at);
	at[5] = 'R'; /* a task renamed by hand */
	tu_write(path, text, strlen(text));
	ck_assert_int_eq(plan_read(&q, path), VS_EVERIFY);
	ck_assert_ptr_nonnull(strstr(vs_last_error(), "does not match its spec"));
	tu_write(path, "{\"schema\": ", 11);
	ck_assert_int_eq(plan_read(&q, path), VS_EPARSE);
	ck_assert_ptr_nonnull(strstr(vs_last_error(), "not valid JSON"));
	plan_release(&p);
	card_release(&c);
	free(text);
	free(path);
}
END_TEST

/*
 * Evidence keeps the configs it ran: a plan copy naming a config the implementation's space no
 * longer has (hip.flash lost bn64-bh16-spbal on 2026-12-02) is refused as a plan to run and read as
 * evidence, so the eval dirs of earlier runs still verify.
 */
START_TEST(evidence_keeps_configs_the_space_lost)
{
	struct card c;
	struct plan p, q;
	char *path = fs_printf("%s/x.plan.json", tmp), *text, *at, *edited;

	load_variant(&c, "mla_decode_cpu_splitkv", NULL, NULL);
	ck_assert_int_eq(plan_build(&p, &c, NULL), 0);
	ck_assert_int_eq(plan_write(&p, path), 0);
	text = tu_read(path, NULL);
	at = strstr(text, p.candidate.configs[0].name);
	ck_assert_ptr_nonnull(at);
	edited = fs_printf("%.*sgone-%s", (int)(at - text), text, at + 5); /* a name the space lacks */
	tu_write(path, edited, strlen(edited));
	ck_assert_int_eq(plan_read(&q, path), VS_ESCHEMA);
	ck_assert_ptr_nonnull(strstr(vs_last_error(), "is not a config of cpu.splitkv"));
	ck_assert_msg(plan_read_evidence(&q, path) == 0, "%s", vs_last_error());
	ck_assert_int_eq(strncmp(q.candidate.configs[0].name, "gone-", 5), 0);
	plan_release(&q);
	plan_release(&p);
	card_release(&c);
	free(edited);
	free(text);
	free(path);
}
END_TEST

/*
 * Numbers edited by hand are range-checked before they are converted (fuzz_plan found a config value of
 * 1.9e65 converted to int32: undefined behaviour), and configs must be the implementation's own.
 */
static const struct {
	const char *from, *to, *message;
} bad_numbers[] = {
	{"\"block_n\":\t16,", "\"block_n\":\t1.88888888888e65,",
	 "block_n is 1.8888888888799999e+65, expected an integer"},
	{"\"block_n\":\t16,", "\"block_n\":\t16.5,", "block_n is 16.5, expected an integer"},
	{"\"block_n\":\t16,", "\"block_n\":\t17,", "is not a config of cpu.splitkv for 'x86_64'"},
	{"\"min_pairs\":\t10,", "\"min_pairs\":\t1e300,", "protocol.min_pairs is 1.0000000000000001e+300"},
	{"\"warmup\":\t1,", "\"warmup\":\t-1,", "protocol.warmup is -1, expected an integer from 0"},
	{"\"max_seconds\":\t8,", "\"max_seconds\":\t1e999,", "protocol.max_seconds is inf"},
	{"\"bootstrap_seed\":\t\"20261129\"", "\"bootstrap_seed\":\t\"2026x\"", "bootstrap_seed must be a decimal"},
	{"\"bootstrap_seed\":\t\"20261129\"", "\"bootstrap_seed\":\t\"99999999999999999999\"",
	 "bootstrap_seed must be a decimal"},
	{"\"isolated_speedup_min\":\t1.3", "\"isolated_speedup_min\":\t-1.3", "gates.isolated_speedup_min is -1.3"},
	{"\"tier\":\t\"smoke\",", "\"tier\":\t\"smoke\",\n\t\"tier\":\t\"full\",", "key 'tier' appears twice"},
};

START_TEST(hand_edited_numbers_are_range_checked)
{
	struct card c;
	struct plan p;
	char *text = NULL, *at, *edited;

	load_variant(&c, "mla_decode_cpu_splitkv", NULL, NULL);
	text = plan_text(&c, NULL);
	at = strstr(text, bad_numbers[_i].from);
	ck_assert_msg(at != NULL, "'%s' not in the plan", bad_numbers[_i].from);
	edited = fs_printf("%.*s%s%s", (int)(at - text), text, bad_numbers[_i].to, at + strlen(bad_numbers[_i].from));
	ck_assert_int_ne(plan_parse(&p, edited, strlen(edited), "x.plan.json"), 0);
	ck_assert_msg(strstr(vs_last_error(), bad_numbers[_i].message), "'%s': message '%s' lacks '%s'",
		      bad_numbers[_i].to, vs_last_error(), bad_numbers[_i].message);
	free(edited);
	free(text);
	card_release(&c);
}
END_TEST

struct refusal {
	const char *from, *to;
	const char *tier, *gen, *candidate;
	int code;
	const char *message;
};

static const struct refusal refusals[] = {
	{"to_backend: cpu.splitkv", "to_backend: pallas", NULL, NULL, NULL, VS_ENOTFOUND,
	 "implementations are: cpu.naive, cpu.splitkv, hip.baseline, hip.flash"},
	{NULL, NULL, NULL, NULL, "pallas", VS_ENOTFOUND, "candidate 'pallas' names no implementation"},
	/* A family names the project's implementation in it: tilelang is tilelang.mla_decode (a GPU one). */
	{NULL, NULL, NULL, NULL, "tilelang", VS_EUNSUPPORTED,
	 "candidate 'tilelang.mla_decode' runs on the hip backend, which cannot run generation 'x86_64'"},
	{"operator: mla_attention", "operator: gemm", NULL, NULL, NULL, VS_EUNSUPPORTED, "'gemm' is not an operator"},
	{"regimes: [decode]", "regimes: [prefill]", NULL, NULL, NULL, VS_EUNSUPPORTED, "no 'decode'"},
	{"dtypes: [bf16, fp8_e4m3_fnuz]", "dtypes: [fp16]", NULL, NULL, NULL, VS_EUNSUPPORTED, "none of the planned dtypes"},
	{NULL, NULL, "huge", NULL, NULL, VS_EUSAGE, "unknown tier 'huge'"},
	{NULL, NULL, NULL, "sm_90", NULL, VS_EUSAGE, "'sm_90' is not in"},
	{"gens: [x86_64]", "gens: [gfx942]", NULL, NULL, NULL, VS_EUNSUPPORTED, "cannot run generation 'gfx942'"},
};

START_TEST(plan_refuses_what_it_cannot_plan)
{
	const struct refusal *r = &refusals[_i];
	struct card c;
	struct plan p;
	struct plan_options o = {.tier = r->tier, .gen = r->gen, .candidate = r->candidate};
	int err;

	load_variant(&c, "mla_decode_cpu_splitkv", r->from, r->to);
	err = plan_build(&p, &c, &o);
	ck_assert_msg(err == r->code, "case %d: got %d (%s), want %d", _i, err, vs_last_error(), r->code);
	ck_assert_msg(strstr(vs_last_error(), r->message), "case %d: '%s' lacks '%s'", _i, vs_last_error(), r->message);
	card_release(&c);
}
END_TEST

static int count_tasks(const struct card *c, const char *tier, const char *gen, const char *needle)
{
	struct plan p;
	struct plan_options o = {.tier = tier, .gen = gen};
	int n = 0;

	ck_assert_msg(plan_build(&p, c, &o) == 0, "%s", vs_last_error());
	for (int i = 0; i < p.ntasks; i++)
		n += !needle || strstr(p.tasks[i].name, needle) != NULL;
	plan_release(&p);
	return n;
}

START_TEST(tiers_cover_the_edge_cases)
{
	struct card cpu, gpu;

	load_variant(&cpu, "mla_decode_cpu_splitkv", NULL, NULL);
	load_variant(&gpu, "mla_decode_hip_port_sm90", NULL, NULL);
	ck_assert_int_gt(count_tasks(&cpu, "smoke", NULL, NULL), 0);
	ck_assert_int_gt(count_tasks(&cpu, "standard", NULL, NULL), count_tasks(&cpu, "smoke", NULL, NULL));
	/* GPU-only tasks (4 GiB page offsets, benchmark shapes) are planned for GPU backends only. */
	ck_assert_int_eq(count_tasks(&cpu, "standard", NULL, "page-offset"), 0);
	ck_assert_int_eq(count_tasks(&gpu, "standard", NULL, "page-offset"), 1);
	ck_assert_int_eq(count_tasks(&gpu, "standard", NULL, "fp8"), count_tasks(&gpu, "standard", NULL, "bf16") - 1);
	ck_assert_int_eq(count_tasks(&gpu, "full", NULL, "perf-"), 8);
	ck_assert_int_eq(count_tasks(&gpu, "full", NULL, "tiny-"), 6);
	ck_assert_int_eq(count_tasks(&cpu, "full", NULL, "tiny-"), 0);
	ck_assert_int_eq(count_tasks(&gpu, "standard", NULL, "perf-"), 0);
	card_release(&cpu);
	card_release(&gpu);
}
END_TEST

/* --tier full on the CPU plans what standard plans, and the summary says so (a GPU plan adds shapes). */
START_TEST(full_tier_says_when_it_equals_standard)
{
	struct card cpu, gpu;
	const struct card *cards[2] = {&cpu, &gpu};

	load_variant(&cpu, "mla_decode_cpu_splitkv", NULL, NULL);
	load_variant(&gpu, "mla_decode_hip_port_sm90", NULL, NULL);
	for (int k = 0; k < 2; k++) {
		struct plan p;
		struct plan_options o = {.tier = "full"};
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		int same = count_tasks(cards[k], "full", NULL, NULL) == count_tasks(cards[k], "standard", NULL, NULL);

		ck_assert_int_eq(same, k == 0);
		ck_assert_msg(plan_build(&p, cards[k], &o) == 0, "%s", vs_last_error());
		plan_print_summary(&p, f);
		fclose(f);
		ck_assert_msg(!strstr(buf, "tier full equals tier standard") == !same, "card %d summary:\n%s", k, buf);
		if (same)
			ck_assert_msg(strstr(buf, "perf-h128-b128-8k"), "the note does not name the shapes:\n%s", buf);
		free(buf);
		plan_release(&p);
	}
	card_release(&cpu);
	card_release(&gpu);
}
END_TEST

START_TEST(standard_tier_has_the_required_shapes)
{
	struct card c;
	struct plan p;
	struct plan_options o = {.tier = "standard"};
	int seen_len[6] = {0}, seen_h[4] = {0}, seen_ps[3] = {0}, seen_sq2 = 0, seen_odd_h = 0, seen_big_offset = 0;
	static const int lens[6] = {0, 1, 63, 64, 65, 127};
	static const int hs[4] = {16, 64, 128, 24};
	static const int ps[3] = {1, 16, 64};

	load_variant(&c, "mla_decode_hip_port_sm90", NULL, NULL);
	ck_assert_int_eq(plan_build(&p, &c, &o), 0);
	for (int i = 0; i < p.ntasks; i++) {
		const struct task_spec *s = &p.tasks[i];

		for (int b = 0; b < s->batch; b++)
			for (int k = 0; k < 6; k++)
				seen_len[k] |= s->seqlens[b] == lens[k];
		for (int k = 0; k < 4; k++)
			seen_h[k] |= s->h_q == hs[k];
		for (int k = 0; k < 3; k++)
			seen_ps[k] |= s->page_size == ps[k];
		seen_sq2 |= s->s_q == 2;
		seen_odd_h |= s->h_q % 16 != 0;
		seen_big_offset |= (double)s->page_offset * s->page_size * 576 * 2 > 4294967296.0;
	}
	for (int k = 0; k < 6; k++)
		ck_assert_msg(seen_len[k], "no task with seqlen %d", lens[k]);
	for (int k = 0; k < 4; k++)
		ck_assert_msg(seen_h[k], "no task with h_q %d", hs[k]);
	for (int k = 0; k < 3; k++)
		ck_assert_msg(seen_ps[k], "no task with page_size %d", ps[k]);
	ck_assert(seen_sq2 && seen_odd_h && seen_big_offset);
	plan_release(&p);
	card_release(&c);
}
END_TEST

START_TEST(gfx942_plan_carries_build_figures)
{
	struct card c;
	struct plan_options o = {.tier = "smoke"};
	char *fig = fs_printf("%s/resources.json", tmp), *text;
	const char *json = "{\"target\": \"gfx942\", \"compiler\": \"clang 19\", \"pass\": true, \"kernels\": ["
			   "{\"impl\": \"hip.flash\", \"config\": \"bn32-bh16-sp0-w4-st1\", \"vgpr\": 128, \"agpr\": 0, "
			   "\"sgpr\": 40, \"lds_static\": 40000, \"lds_dynamic\": 0, \"scratch\": 0, \"vgpr_spill\": 0, "
			   "\"sgpr_spill\": 0},"
			   "{\"impl\": \"hip.baseline\", \"config\": \"x\", \"vgpr\": 32},"
			   "{\"impl\": \"triton.mla_decode\", \"config\": \"y\", \"vgpr\": 32}]}";

	tu_write(fig, json, strlen(json));
	o.build_figures = fig;
	load_variant(&c, "mla_decode_hip_port", NULL, NULL); /* hip.baseline -> hip.flash */
	text = plan_text(&c, &o);
	ck_assert_ptr_nonnull(strstr(text, "\"build\""));
	ck_assert_ptr_nonnull(strstr(text, "bn32-bh16-sp0-w4-st1"));
	ck_assert_ptr_nonnull(strstr(text, "\"config\":\t\"x\"")); /* the baseline's kernels too */
	ck_assert_ptr_null(strstr(text, "\"config\":\t\"y\""));    /* no other implementation's */
	free(text);
	free(fig);
	card_release(&c);
}
END_TEST

/*
 * Both sides' figures (the Triton AMD gate's entries carry "pass" and "occupancy"): the plan keeps
 * the baseline's and the candidate's entries, no other; its "pass" is false when one of them failed a
 * limit (a known failure the gate let through included); the summary shows each side with its
 * waves per SIMD and marks the failing kernel.
 */
START_TEST(gfx942_plan_shows_both_sides_figures)
{
	struct card c;
	struct plan p;
	struct plan_options o = {.tier = "smoke"};
	char *fig = fs_printf("%s/resources.json", tmp), *text = NULL, *sum = NULL;
	size_t len = 0;
	FILE *f;
	const char *json = "{\"target\": \"gfx942\", \"pass\": true, \"kernels\": ["
			   "{\"impl\": \"hip.flash\", \"config\": \"bn32-bh16-sp0-w4-st1\", \"kv_dtype\": \"bf16\", "
			   "\"vgpr\": 128, \"lds_static\": 40000, \"lds_dynamic\": 0},"
			   "{\"impl\": \"hip.baseline\", \"config\": \"tl-cfg-7\", \"kv_dtype\": \"bf16\", "
			   "\"vgpr\": 512, \"lds_static\": 0, \"lds_dynamic\": 65536, \"scratch\": 424, "
			   "\"vgpr_spill\": 106, \"occupancy\": 3, \"pass\": false, \"known\": true},"
			   "{\"impl\": \"triton.mla_decode\", \"config\": \"other-side-x\", \"vgpr\": 32}]}";

	tu_write(fig, json, strlen(json));
	o.build_figures = fig;
	load_variant(&c, "mla_decode_hip_port", NULL, NULL); /* hip.baseline -> hip.flash */
	ck_assert_msg(plan_build(&p, &c, &o) == 0, "plan_build: %s", vs_last_error());
	ck_assert_int_eq(plan_to_text(&text, &p), 0);
	ck_assert_ptr_nonnull(strstr(text, "tl-cfg-7"));
	ck_assert_ptr_nonnull(strstr(text, "bn32-bh16-sp0-w4-st1"));
	ck_assert_ptr_null(strstr(text, "other-side-x"));
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(p.build, "pass")));
	f = open_memstream(&sum, &len);
	ck_assert_ptr_nonnull(f);
	plan_print_summary(&p, f);
	fclose(f);
	ck_assert_msg(strstr(sum, "gfx942 figures for hip.baseline (gate FAILED: 1 of 1 kernels over a limit)"),
		      "summary: %s", sum);
	ck_assert_msg(strstr(sum, "gfx942 figures for hip.flash (gate passed)"), "summary: %s", sum);
	ck_assert_msg(strstr(sum, "    3  FAIL (known)"), "summary: %s", sum);
	free(sum);
	free(text);
	free(fig);
	plan_release(&p);
	card_release(&c);
}
END_TEST

/* A side with no kernel figures but HIP sources (TileLang's, tools/gpu/tilelang_amd_emit.py): the
 * summary lists each config's outcome under that side, and no other implementation's. */
START_TEST(gfx942_plan_shows_a_sides_hip_sources)
{
	struct card c;
	struct plan p;
	struct plan_options o = {.tier = "smoke"};
	char *fig = fs_printf("%s/resources.json", tmp), *sum = NULL;
	size_t len = 0;
	FILE *f;
	const char *json = "{\"target\": \"gfx942\", \"pass\": true, \"kernels\": ["
			   "{\"impl\": \"hip.flash\", \"config\": \"c1\", \"vgpr\": 128}], \"sources\": ["
			   "{\"impl\": \"hip.baseline\", \"config\": \"src-cfg-1\", \"kv_dtype\": \"bf16\", "
			   "\"emitted\": false, \"compiled\": false, \"why\": \"emit: InternalError: x\"},"
			   "{\"impl\": \"hip.baseline\", \"config\": \"src-cfg-2\", \"kv_dtype\": \"bf16\", "
			   "\"emitted\": true, \"compiled\": true},"
			   "{\"impl\": \"tilelang.mla_decode\", \"config\": \"src-other\", \"compiled\": true}]}";

	tu_write(fig, json, strlen(json));
	o.build_figures = fig;
	load_variant(&c, "mla_decode_hip_port", NULL, NULL); /* hip.baseline -> hip.flash */
	ck_assert_msg(plan_build(&p, &c, &o) == 0, "plan_build: %s", vs_last_error());
	f = open_memstream(&sum, &len);
	ck_assert_ptr_nonnull(f);
	plan_print_summary(&p, f);
	fclose(f);
	ck_assert_msg(strstr(sum, "no gfx942 build figures for hip.baseline"), "summary: %s", sum);
	ck_assert_msg(strstr(sum, "HIP source for gfx942 (TileLang)"), "summary: %s", sum);
	ck_assert_msg(strstr(sum, "emit: InternalError: x"), "summary: %s", sum);
	ck_assert_msg(strstr(sum, "src-cfg-2") && strstr(strstr(sum, "src-cfg-2"), "compiled"), "summary: %s", sum);
	ck_assert_msg(!strstr(sum, "src-other"), "summary: %s", sum);
	free(sum);
	free(fig);
	plan_release(&p);
	card_release(&c);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("plan");
	TCase *tc = tcase_create("plan");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, plan_is_deterministic);
	tcase_add_test(tc, plan_round_trips_through_its_file);
	tcase_add_test(tc, edited_plan_is_refused);
	tcase_add_test(tc, evidence_keeps_configs_the_space_lost);
	tcase_add_loop_test(tc, hand_edited_numbers_are_range_checked, 0,
			    (int)(sizeof(bad_numbers) / sizeof(bad_numbers[0])));
	tcase_add_loop_test(tc, plan_refuses_what_it_cannot_plan, 0, (int)(sizeof(refusals) / sizeof(refusals[0])));
	tcase_add_test(tc, tiers_cover_the_edge_cases);
	tcase_add_test(tc, standard_tier_has_the_required_shapes);
	tcase_add_test(tc, full_tier_says_when_it_equals_standard);
	tcase_add_test(tc, gfx942_plan_carries_build_figures);
	tcase_add_test(tc, gfx942_plan_shows_both_sides_figures);
	tcase_add_test(tc, gfx942_plan_shows_a_sides_hip_sources);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
