/*
 * check_cli.c - the validate_skill binary as a user meets it: every mode's bad input gives one
 * clear line on stderr and the right exit status (1 failure, 2 usage), and the main job of the
 * README takes a copy of the CPU card from draft to a recorded status in a scratch repository.
 */
#include "testutil.h"

#include "fsutil.h"
#include "vs_build_info.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *tmp;

static void setup(void)
{
	char *skills;

	tmp = tu_tmpdir();
	skills = fs_join(tmp, "skills");
	fs_mkdir_p(skills);
	free(skills);
}

static void teardown(void)
{
	fs_remove_tree(tmp);
	free(tmp);
}

static void put(const char *rel, const char *text)
{
	char *path = fs_join(tmp, rel);

	tu_write(path, text, strlen(text));
	free(path);
}

static void copy_source(const char *rel, const char *dst_rel)
{
	char *src = tu_source(rel);
	size_t len;
	char *text = tu_read(src, &len), *dst = fs_join(tmp, dst_rel);

	tu_write(dst, text, len);
	free(src);
	free(text);
	free(dst);
}

struct bad_case {
	const char *args;      /* run in the scratch root */
	int status;
	const char *message;   /* substring of the one stderr line */
	int one_line;          /* stderr must be exactly one line */
};

static const struct bad_case bad[] = {
	{"", 2, "no mode given", 0},
	{"--frobnicate", 2, "unknown option '--frobnicate'", 0},
	{"--static --run x", 2, "only one mode at a time", 0},
	{"--static", 2, "--static takes CARD...", 0},
	{"--emit-plan a.md b.md", 2, "--emit-plan takes CARD", 0},
	{"--run plans/x.plan.json --threads -3", 2, "non-negative integer", 0},
	{"--static skills/missing.md", 3, "cannot open 'skills/missing.md'", 1},
	{"--static skills/titled.md", 3, "skills/titled.md:1:1:", 1},
	{"--emit-plan skills/titled.md", 3, "skills/titled.md:1:1:", 1},
	{"--emit-plan skills/mla_decode_cpu_splitkv.md --tier huge", 2, "unknown tier 'huge'", 1},
	{"--emit-plan skills/mla_decode_cpu_splitkv.md --candidate nope", 3,
	 "implementations are: cpu.naive, cpu.splitkv, hip.baseline, hip.flash", 1},
	{"--materialize plans/none.plan.json", 3, "cannot open 'plans/none.plan.json'", 1},
	{"--materialize plans/broken.plan.json", 3, "plans/broken.plan.json:1: not valid JSON", 1},
	{"--run plans/foreign.plan.json", 3, "\"schema\" is 'something/else', expected 'validate_skill.plan/1'", 1},
	{"--run plans/broken.plan.json", 3, "not valid JSON", 1},
	{"--record skills/mla_decode_cpu_splitkv.md", 3, "no complete eval dir under 'results/mla_decode_cpu_splitkv'", 1},
	{"--record skills/mla_decode_cpu_splitkv.md --eval-dir results/nothing", 3, "no eval dir with a result.json", 1},
	{"--report --format yaml", 2, "unknown report format 'yaml'", 1},
	{"--verify skills/missing.md", 3, "cannot open", 1},
	{"--run plans/x.plan.json --publish http://127.0.0.1:9/r", 2, "--publish applies to --record --validate --flush only", 0},
	{"--report --part 1", 2, "--part applies to --run only", 0},
	{"--run plans/x.plan.json --gpus 0,0", 2, "--gpus lists a GPU twice", 0},
	{"--flush", 2, "--flush sends the outbox to a server: give it with --publish URL", 0},
	{"--merge results/nothing", 3, "'results/nothing' is neither an eval dir part nor a directory of parts", 1},
	{"--fetch ftp://127.0.0.1/card.md", 2, "only http and https URLs are supported", 1},
	{"--emit-plan skills/mla_decode_cpu_splitkv.md --candidate-lib nothere.so", 3, "plugin 'nothere.so' does not exist", 1},
	{"--static skills/titled.md --slurm=1", 2, "option '--slurm=1' takes no value", 0},
	/* forced configs (issue 41) */
	{"--emit-plan skills/mla_decode_cpu_splitkv.md --candidate cpu.splitkv@bn64-bh16-sp2-w0-st0", 3,
	 "candidate 'cpu.splitkv@bn64-bh16-sp2-w0-st0': cpu.splitkv has no config 'bn64-bh16-sp2-w0-st0' for x86_64; "
	 "its 16 configs: bn16-bh8-sp0-w0-st0,", 1},
	{"--emit-plan skills/mla_decode_cpu_splitkv.md --baseline cpu.splitkv@bn64-bh16-sp0-w0-st0 "
	 "--candidate cpu.splitkv@bn64-bh16-sp0-w0-st0", 2,
	 "the baseline and the candidate are both cpu.splitkv@bn64-bh16-sp0-w0-st0", 1},
	{"--emit-plan skills/mla_decode_cpu_splitkv.md --candidate cpu.splitkv@", 2,
	 "--candidate 'cpu.splitkv@' is not IMPL@CONFIG", 1},
	{"--emit-plan skills/mla_decode_cpu_splitkv.md --reference cpu.naive@x", 3,
	 "reference 'cpu.naive@x': cpu.naive has no config 'x' for x86_64", 1},
};

START_TEST(bad_input_gives_one_clear_line)
{
	const struct bad_case *c = &bad[_i];
	char *out = NULL, *err = NULL, *first_nl;
	int status;

	copy_source("tests/resources/field/bad/mla_tilelang_to_triton.md", "skills/titled.md");
	copy_source("tests/resources/skills/mla_decode_cpu_splitkv.md", "skills/mla_decode_cpu_splitkv.md");
	{
		char *plans = fs_join(tmp, "plans");

		fs_mkdir_p(plans);
		free(plans);
	}
	put("plans/broken.plan.json", "{\"schema\": \n");
	put("plans/foreign.plan.json", "{\"schema\": \"something/else\"}\n");
	status = tu_run_tool(tmp, c->args, &out, &err);
	ck_assert_msg(status == c->status, "'%s': exit %d, want %d; stderr: %s", c->args, status, c->status, err);
	ck_assert_msg(strstr(err, c->message), "'%s': stderr lacks '%s':\n%s", c->args, c->message, err);
	first_nl = strchr(err, '\n');
	ck_assert_msg(!strncmp(err, "validate_skill: error: ", 23), "'%s': stderr does not start with the error "
		      "prefix: %s", c->args, err);
	if (c->one_line)
		ck_assert_msg(first_nl && first_nl[1] == '\0', "'%s': more than one line on stderr:\n%s", c->args, err);
	free(out);
	free(err);
}
END_TEST

START_TEST(static_passes_the_field_examples_and_our_cards)
{
	char *out = NULL, *err = NULL;
	char *args = fs_printf("--static %s/tests/resources/field/mla_tilelang_to_triton.md %s/tests/resources/skills/*.md",
			       getenv("VS_SOURCE_DIR"), getenv("VS_SOURCE_DIR"));
	int status = tu_run_tool(tmp, args, &out, &err);

	ck_assert_msg(status == 0, "exit %d: %s", status, err);
	ck_assert_int_eq(tu_count_lines(out), 8); /* the field's card and our 7 copies (the sparse CPU card, the
						   * CPU config card and the two Triton config cards too) */
	free(args);
	free(out);
	free(err);
}
END_TEST

START_TEST(emit_plan_is_byte_identical_twice)
{
	char *a, *b, *path = fs_join(tmp, "plans/mla_decode_cpu_splitkv.plan.json");

	copy_source("tests/resources/skills/mla_decode_cpu_splitkv.md", "skills/mla_decode_cpu_splitkv.md");
	ck_assert_int_eq(tu_run_tool(tmp, "--emit-plan skills/mla_decode_cpu_splitkv.md", NULL, NULL), 0);
	a = tu_read(path, NULL);
	ck_assert_int_eq(tu_run_tool(tmp, "--emit-plan skills/mla_decode_cpu_splitkv.md", NULL, NULL), 0);
	b = tu_read(path, NULL);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
	free(path);
}
END_TEST

/* The README's main job, in a scratch repository: --validate then --report. */
START_TEST(main_job_records_the_cpu_card)
{
	char *out = NULL, *err = NULL, *card_after, *card_path = fs_join(tmp, "skills/mla_decode_cpu_splitkv.md");
	int status;

	copy_source("tests/resources/skills/mla_decode_cpu_splitkv.md", "skills/mla_decode_cpu_splitkv.md");
	status = tu_run_tool(tmp, "--validate skills/mla_decode_cpu_splitkv.md --threads 2", &out, &err);
	card_after = tu_read(card_path, NULL);
	ck_assert_msg(strstr(out, "overall isolated speedup"), "no summary line:\n%s", out);
	if (VS_KERNELS_DIRTY) {
		/* A build from uncommitted kernels never records: the run is done, the card untouched. */
		ck_assert_msg(status == 1 && strstr(err, "uncommitted kernels/"), "exit %d: %s", status, err);
		ck_assert_ptr_nonnull(strstr(card_after, "status: draft"));
	} else {
		ck_assert_msg(status == 0, "exit %d: %s\n%s", status, err, out);
		ck_assert_msg(strstr(card_after, "status: validated") || strstr(card_after, "status: failed"),
			      "card not recorded:\n%s", card_after);
		ck_assert_msg(strstr(card_after, "gen: x86_64") || strstr(card_after, "gen: \"x86_64\""), "%s", card_after);
		ck_assert_ptr_nonnull(strstr(card_after, "results/mla_decode_cpu_splitkv/"));
		free(out);
		free(err);
		status = tu_run_tool(tmp, "--verify skills/mla_decode_cpu_splitkv.md", &out, &err);
		ck_assert_msg(status == 0, "verify: %s", err);
	}
	free(out);
	free(err);
	status = tu_run_tool(tmp, "--report", &out, &err);
	ck_assert_msg(status == 0, "report exit %d: %s", status, err);
	ck_assert_ptr_nonnull(strstr(out, "mla_decode_cpu_splitkv"));
	free(out);
	free(err);
	free(card_after);
	free(card_path);
}
END_TEST

/*
 * The plan at rel under tmp cut to the tasks named keep[0..n) (in plan order), 2 configs a side and
 * a short protocol: what the suites' tool runs in seconds. Each kept spec's seed is put back as the
 * text the plan wrote (cJSON prints a 53-bit integer to 15 digits).
 */
static void trim_plan(const char *rel, const char *const *keep, int n)
{
	char *path = fs_join(tmp, rel), *text = tu_read(path, NULL), *out;
	cJSON *j = cJSON_Parse(text), *tasks = cJSON_GetObjectItem(j, "tasks"), *pr = cJSON_GetObjectItem(j, "protocol");

	ck_assert_ptr_nonnull(tasks);
	for (int i = cJSON_GetArraySize(tasks) - 1; i >= 0; i--) {
		cJSON *t = cJSON_GetArrayItem(tasks, i), *spec = cJSON_GetObjectItem(t, "spec");
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(spec, "name"));
		char *at, *seed;
		int kept = 0;

		for (int k = 0; k < n; k++)
			kept |= name && !strcmp(name, keep[k]);
		if (!kept) {
			cJSON_DeleteItemFromArray(tasks, i);
			continue;
		}
		at = strstr(text, name);
		ck_assert_ptr_nonnull(at);
		at = strstr(at, "\"seed\":");
		ck_assert_ptr_nonnull(at);
		at += strlen("\"seed\":");
		at += strspn(at, " \t");
		seed = strndup(at, strspn(at, "0123456789"));
		cJSON_ReplaceItemInObject(spec, "seed", cJSON_CreateRaw(seed));
		free(seed);
	}
	ck_assert_int_eq(cJSON_GetArraySize(tasks), n);
	for (int k = 0; k < 2; k++) {
		cJSON *cfgs = cJSON_GetObjectItem(cJSON_GetObjectItem(j, k ? "candidate" : "baseline"), "configs");

		while (cJSON_GetArraySize(cfgs) > 2)
			cJSON_DeleteItemFromArray(cfgs, cJSON_GetArraySize(cfgs) - 1);
	}
	cJSON_SetNumberValue(cJSON_GetObjectItem(pr, "min_pairs"), 8);
	cJSON_SetNumberValue(cJSON_GetObjectItem(pr, "max_pairs"), 30);
	cJSON_SetNumberValue(cJSON_GetObjectItem(pr, "max_seconds"), 2);
	out = cJSON_Print(j);
	tu_write(path, out, strlen(out));
	cJSON_free(out);
	cJSON_Delete(j);
	free(text);
	free(path);
}

/*
 * The sparse CPU card (issue 36) end to end in a scratch repository: its plan carries the form and
 * topk, the tasks materialize (quantized block-scaled caches, NaN rows), both sides pass parity on
 * the V3.2 and the V4 format, and --record writes the card; --verify accepts the evidence.
 */
START_TEST(sparse_cpu_card_validates_end_to_end)
{
	static const char *const keep[] = {"fp8_ds_mla-k2048-s-h16-ps64", "fp8_model1-k128-v4-s-single-h16"};
	char *out = NULL, *err = NULL, *card_after, *card_path = fs_join(tmp, "skills/dsa_decode_cpu_splitkv.md");
	int status;

	copy_source("tests/resources/skills/dsa_decode_cpu_splitkv.md", "skills/dsa_decode_cpu_splitkv.md");
	status = tu_run_tool(tmp, "--emit-plan skills/dsa_decode_cpu_splitkv.md", &out, &err);
	ck_assert_msg(status == 0, "emit: %s", err);
	ck_assert_msg(strstr(out, "form       sparse (match.arch_class deepseek_dsa): cache fp8_ds_mla, topk 2048"),
		      "%s", out);
	free(out);
	free(err);
	trim_plan("plans/dsa_decode_cpu_splitkv.plan.json", keep, 2);
	status = tu_run_tool(tmp, "--run plans/dsa_decode_cpu_splitkv.plan.json --threads 2", &out, &err);
	ck_assert_msg(status == 0 || status == 1, "run: exit %d: %s\n%s", status, err, out);
	ck_assert_msg(strstr(out, "fp8_ds_mla-k2048-s-h16-ps64: speedup") &&
			      strstr(out, "fp8_model1-k128-v4-s-single-h16: speedup") && strstr(out, "parity pass") &&
			      !strstr(out, "parity FAIL"),
		      "%s\n%s", out, err);
	free(out);
	free(err);
	status = tu_run_tool(tmp, "--record skills/dsa_decode_cpu_splitkv.md", &out, &err);
	card_after = tu_read(card_path, NULL);
	if (VS_KERNELS_DIRTY) {
		ck_assert_msg(status != 0 && strstr(err, "uncommitted kernels/"), "exit %d: %s", status, err);
		ck_assert_ptr_nonnull(strstr(card_after, "status: draft"));
	} else {
		ck_assert_msg(status == 0, "record: exit %d: %s", status, err);
		ck_assert_msg(strstr(card_after, "status: validated") || strstr(card_after, "status: failed"),
			      "card not recorded:\n%s", card_after);
		ck_assert_ptr_nonnull(strstr(card_after, "results/dsa_decode_cpu_splitkv/"));
		free(out);
		free(err);
		status = tu_run_tool(tmp, "--verify skills/dsa_decode_cpu_splitkv.md", &out, &err);
		ck_assert_msg(status == 0, "verify: %s", err);
	}
	free(out);
	free(err);
	free(card_after);
	free(card_path);
}
END_TEST

/* The card at skills/<id>.md of the scratch repository with from/to replaced, its id kept. */
static void put_config_card(const char *id, const char *from, const char *to)
{
	char *src = tu_resource("skills/mla_decode_cpu_splitkv_config.md"), *text = tu_read(src, NULL);
	char *rel = fs_printf("skills/%s.md", id), *a, *b, *e, *card;

	a = strstr(text, "from_backend: ");
	b = strstr(text, "expects:");
	e = strstr(text, "id: mla_decode_cpu_splitkv_config\n");
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_ptr_nonnull(e);
	card = fs_printf("%.*sid: %s\n%.*sfrom_backend: %s\n  to_backend: %s\n%s", (int)(e - text), text, id,
			 (int)(a - e - strlen("id: mla_decode_cpu_splitkv_config\n")),
			 e + strlen("id: mla_decode_cpu_splitkv_config\n"), from, to, b);
	put(rel, card);
	free(card);
	free(rel);
	free(text);
	free(src);
}

/*
 * Lint of a config card (issue 41): two configs of one implementation are a card; the same config
 * on both sides, a config the implementation's space lacks (the nearest named) and a value that is
 * not IMPL@CONFIG are refused, one line each.
 */
START_TEST(config_card_lint)
{
	static const struct {
		const char *from, *to;
		int status;
		const char *message;
	} cases[] = {
		{"cpu.splitkv@bn64-bh16-sp64-w0-st0", "cpu.splitkv@bn64-bh16-sp0-w0-st0", 0, "ok"},
		{"cpu.splitkv@bn64-bh16-sp64-w0-st0", "cpu.splitkv@bn64-bh16-sp64-w0-st0", 3,
		 "match.to_backend: 'cpu.splitkv@bn64-bh16-sp64-w0-st0' is also match.from_backend: the same config on "
		 "both sides"},
		{"cpu.splitkv@bn64-bh16-sp64-w0-st0", "cpu.splitkv@bn64-bh16-sp2-w0-st0", 3,
		 "match.to_backend: config 'bn64-bh16-sp2-w0-st0' is not one of the 16 configs of cpu.splitkv for x86_64 "
		 "(nearest: bn64-bh16-sp0-w0-st0)"},
		{"cpu.splitkv@", "cpu.splitkv@bn64-bh16-sp0-w0-st0", 3,
		 "match.from_backend: 'cpu.splitkv@' is not IMPL@CONFIG"},
		{"cpu.naive", "cpu.splitkv@bn64-bh16-sp0-w0-st0", 0, "ok"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *out = NULL, *err = NULL, id[32], *args;
		int status;

		snprintf(id, sizeof(id), "cfg%zu", i);
		put_config_card(id, cases[i].from, cases[i].to);
		args = fs_printf("--static skills/%s.md", id);
		status = tu_run_tool(tmp, args, &out, &err);
		ck_assert_msg(status == cases[i].status, "%s -> %s: exit %d, want %d: %s", cases[i].from, cases[i].to,
			      status, cases[i].status, err);
		ck_assert_msg(strstr(status ? err : out, cases[i].message), "%s -> %s: lacks '%s':\n%s%s",
			      cases[i].from, cases[i].to, cases[i].message, out, err);
		if (status)
			ck_assert_int_eq(tu_count_lines(err), 1);
		free(args);
		free(out);
		free(err);
	}
}
END_TEST

/*
 * The shipped config card (issue 41) end to end: both sides cpu.splitkv, each forced to one config;
 * the plan says so and lists one config per side; a trimmed plan runs with parity on both and no
 * tuning pass; --record writes validation.implementations with the configs, and --verify accepts
 * them; a card edited to claim another config no longer verifies.
 */
START_TEST(config_card_validates_end_to_end)
{
	static const char *const keep[] = {"bf16-ragged-h16-ps64", "fp8_e4m3_fnuz-page1-h32"};
	const char *card = "skills/mla_decode_cpu_splitkv_config.md";
	char *out = NULL, *err = NULL, *card_after, *card_path = fs_join(tmp, card), *args, *plan, *pj;
	int status;

	copy_source("tests/resources/skills/mla_decode_cpu_splitkv_config.md", card);
	args = fs_printf("--emit-plan %s", card);
	status = tu_run_tool(tmp, args, &out, &err);
	ck_assert_msg(status == 0, "emit: %s", err);
	ck_assert_msg(strstr(out, "baseline   cpu.splitkv@bn64-bh16-sp64-w0-st0   1 config  (cpu): forced, every task "
				  "runs it with no tuning pass") &&
			      strstr(out, "candidate  cpu.splitkv@bn64-bh16-sp0-w0-st0    1 config  (cpu): forced"),
		      "%s", out);
	free(out);
	free(err);
	free(args);
	plan = fs_join(tmp, "plans/mla_decode_cpu_splitkv_config.plan.json");
	pj = tu_read(plan, NULL);
	ck_assert_msg(strstr(pj, "\"forced\":\t\"bn64-bh16-sp64-w0-st0\"") &&
			      strstr(pj, "\"forced\":\t\"bn64-bh16-sp0-w0-st0\""),
		      "%s", pj);
	free(pj);
	trim_plan("plans/mla_decode_cpu_splitkv_config.plan.json", keep, 2);
	status = tu_run_tool(tmp, "--run plans/mla_decode_cpu_splitkv_config.plan.json --threads 2", &out, &err);
	ck_assert_msg(status == 0 || status == 1, "run: exit %d: %s\n%s", status, err, out);
	ck_assert_msg(strstr(out, "bf16-ragged-h16-ps64: speedup") && strstr(out, "fp8_e4m3_fnuz-page1-h32: speedup") &&
			      strstr(out, "parity pass") && !strstr(out, "parity FAIL"),
		      "%s\n%s", out, err);
	free(out);
	free(err);
	args = fs_printf("--record %s", card);
	status = tu_run_tool(tmp, args, &out, &err);
	free(args);
	card_after = tu_read(card_path, NULL);
	if (VS_KERNELS_DIRTY) {
		ck_assert_msg(status != 0 && strstr(err, "uncommitted kernels/"), "exit %d: %s", status, err);
	} else {
		char *edited, *at;

		ck_assert_msg(status == 0, "record: exit %d: %s", status, err);
		ck_assert_msg((strstr(card_after, "status: validated") || strstr(card_after, "status: failed")) &&
				      strstr(card_after, "baseline: cpu.splitkv@bn64-bh16-sp64-w0-st0") &&
				      strstr(card_after, "candidate: cpu.splitkv@bn64-bh16-sp0-w0-st0"),
			      "card not recorded with its configs:\n%s", card_after);
		free(out);
		free(err);
		args = fs_printf("--verify %s", card);
		status = tu_run_tool(tmp, args, &out, &err);
		ck_assert_msg(status == 0, "verify: %s", err);
		free(out);
		free(err);
		/* The recorded implementations name the configs: another config is a claim the evidence lacks. */
		edited = strdup(card_after);
		at = strstr(edited, "candidate: cpu.splitkv@bn64-bh16-sp0-w0-st0");
		ck_assert_ptr_nonnull(at);
		memcpy(at + strlen("candidate: cpu.splitkv@bn64-bh16-sp"), "4", 1);
		put(card, edited);
		status = tu_run_tool(tmp, args, &out, &err);
		ck_assert_msg(status != 0 && strstr(err, "validation.implementations.candidate"), "verify: exit %d: %s",
			      status, err);
		free(edited);
		free(args);
	}
	free(out);
	free(err);
	free(card_after);
	free(card_path);
	free(plan);
}
END_TEST

/*
 * The interpreter with Triton for the Python configs' compiler figures ($VS_TRITON_PYTHON, else the
 * source tree's .venv-triton from tools/install-deps), set as VS_PYTHON and VS_TRITON_PYTHON with
 * stub (torch_stub) on PYTHONPATH; NULL, said on stderr for test and nothing set, when it is absent.
 */
static char *use_triton(const char *test, const char *stub)
{
	const char *env = getenv("VS_TRITON_PYTHON");
	char *py = env && *env ? strdup(env) : fs_printf("%s/.venv-triton/bin/python", getenv("VS_SOURCE_DIR"));

	if (!fs_exists(py)) {
		fprintf(stderr, "%s: no Triton (%s): run tools/install-deps\n", test, py);
		free(py);
		return NULL;
	}
	setenv("PYTHONPATH", stub, 1);
	setenv("VS_PYTHON", py, 1);
	setenv("VS_TRITON_PYTHON", py, 1);
	return py;
}

/*
 * The resources of triton.mla_decode's configs on sm_120 (issue 41), compiled at plan time without a
 * GPU: the plan shows the shared memory of each config and marks the one over the 101376 bytes a
 * block may have there; a card forcing that config is refused at plan time with both numbers; and
 * without Triton the plan still emits, saying the figures are not known. Needs Triton
 * ($VS_TRITON_PYTHON or the source tree's .venv-triton, from tools/install-deps): without it the
 * test says so and checks nothing else.
 */
START_TEST(triton_config_resources_on_sm_120)
{
	char *stub = tu_resource("torch_stub"), *py = use_triton("triton_config_resources_on_sm_120", stub);
	char *out = NULL, *err = NULL;
	int status;

	if (!py) {
		free(stub);
		return;
	}
	put_config_card("tri120", "triton.mla_decode@bn32-bh16-sp0-w4-st2", "triton.mla_decode");
	{
		char *path = fs_join(tmp, "skills/tri120.md"), *text = tu_read(path, NULL), *at = strstr(text, "[x86_64]");

		char *edited;

		ck_assert_ptr_nonnull(at);
		edited = fs_printf("%.*s[sm_120]%s", (int)(at - text), text, at + 8);
		put("skills/tri120.md", edited);
		free(edited);
		free(text);
		free(path);
	}
	status = tu_run_tool(tmp, "--emit-plan skills/tri120.md --out tri120.plan.json", &out, &err);
	ck_assert_msg(status == 0, "emit: exit %d: %s", status, err);
	ck_assert_msg(strstr(out, "build      sm_120 figures for triton.mla_decode") &&
			      strstr(out, "FAIL: needs 122880 bytes of shared memory > 101376, the sm_120 limit per block") &&
			      strstr(out, "mla_decode_kernel_keys bn32-bh16-sp0-w4-st2"),
		      "%s\n%s", out, err);
	free(out);
	free(err);
	put_config_card("tri120f", "triton.mla_decode@bn32-bh16-sp0-w4-st2", "triton.mla_decode@bn32-bh64-sp0-w8-st2");
	{
		char *path = fs_join(tmp, "skills/tri120f.md"), *text = tu_read(path, NULL), *at = strstr(text, "[x86_64]");

		char *edited;

		ck_assert_ptr_nonnull(at);
		edited = fs_printf("%.*s[sm_120]%s", (int)(at - text), text, at + 8);
		put("skills/tri120f.md", edited);
		free(edited);
		free(text);
		free(path);
	}
	status = tu_run_tool(tmp, "--emit-plan skills/tri120f.md --out tri120f.plan.json", &out, &err);
	ck_assert_msg(status == 3 && tu_count_lines(err) == 1 &&
			      strstr(err, "candidate 'triton.mla_decode@bn32-bh64-sp0-w8-st2': its mla_decode_kernel (bf16) "
					  "needs 122880 bytes of shared memory on sm_120, above the 101376 bytes"),
		      "exit %d: %s", status, err);
	free(out);
	free(err);
	setenv("VS_TRITON_PYTHON", "/nonexistent/python", 1);
	status = tu_run_tool(tmp, "--emit-plan skills/tri120f.md --out tri120f.plan.json", &out, &err);
	ck_assert_msg(status == 0 && strstr(out, "Triton configs: figures not known: no Triton here"), "exit %d: %s\n%s",
		      status, out, err);
	free(out);
	free(err);
	unsetenv("PYTHONPATH");
	unsetenv("VS_TRITON_PYTHON");
	free(py);
	free(stub);
}
END_TEST

/*
 * Our own Triton config cards (issue 41, item 5), as shipped: both lint clean; with Triton, the sm_90
 * card plans only its fp8 tasks, both sides forced to their config, with the two configs' ptxas
 * figures for sm_90 (registers, shared memory, spills), and its sm_120 twin is refused at plan time,
 * one line naming the candidate's config, its bytes and the 101376-byte limit. Without Triton the
 * test says so after the lint.
 */
START_TEST(triton_config_cards_plan_as_designed)
{
	static const char *const ids[] = {"mla_decode_triton_config_sm90", "mla_decode_triton_config_sm120"};
	char *stub = tu_resource("torch_stub"), *py, *out = NULL, *err = NULL;
	int status;

	for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++) {
		char *src = fs_printf("tests/resources/skills/%s.md", ids[i]), *dst = fs_printf("skills/%s.md", ids[i]);
		char *ok = fs_printf("skills/%s.md: ok", ids[i]);

		copy_source(src, dst);
		status = tu_run_tool(tmp, dst, &out, &err);
		ck_assert_msg(status == 0 && strstr(out, ok) && !*err, "lint %s: exit %d:\n%s%s", dst, status, out, err);
		free(out);
		free(err);
		free(ok);
		free(src);
		free(dst);
	}
	if (!(py = use_triton("triton_config_cards_plan_as_designed", stub))) {
		free(stub);
		return;
	}
	status = tu_run_tool(tmp, "--emit-plan skills/mla_decode_triton_config_sm90.md --tier standard --out cfg90.plan.json",
			     &out, &err);
	ck_assert_msg(status == 0, "emit sm_90: exit %d: %s", status, err);
	ck_assert_msg(strstr(out, "baseline   triton.mla_decode@bn64-bh16-sp0-w4-st2   1 config  (python, gpu)") &&
			      strstr(out, "candidate  triton.mla_decode@bn64-bh16-sp0-w8-st2   1 config") &&
			      strstr(out, "forced, every task runs it with no tuning pass") &&
			      strstr(out, "build      sm_90 figures for triton.mla_decode") &&
			      strstr(out, "mla_decode_kernel_keys bn64-bh16-sp0-w4-st2                  fp8_e4m3_fnuz   255") &&
			      strstr(out, "mla_decode_kernel_keys bn64-bh16-sp0-w8-st2                  fp8_e4m3_fnuz   255") &&
			      strstr(out, "  fp8_e4m3_fnuz-") && !strstr(out, "\n  bf16-"),
		      "%s\n%s", out, err);
	free(out);
	free(err);
	/* the card plans fp8 only: its fp8 kernel is the reason, not the module's bf16 one */
	status = tu_run_tool(tmp, "--emit-plan skills/mla_decode_triton_config_sm120.md --out cfg120.plan.json", &out, &err);
	ck_assert_msg(status == 3 && tu_count_lines(err) == 1 &&
			      strstr(err, "candidate 'triton.mla_decode@bn32-bh64-sp0-w8-st2': its mla_decode_kernel "
					  "(fp8_e4m3_fnuz) needs 106496 bytes of shared memory on sm_120, above the 101376 "
					  "bytes"),
		      "exit %d: %s%s", status, out, err);
	free(out);
	free(err);
	unsetenv("PYTHONPATH");
	unsetenv("VS_TRITON_PYTHON");
	free(py);
	free(stub);
}
END_TEST

/*
 * Issue 35, as a user meets it with the tool itself (VS_TOOL_STRICT, not the suites' trimmed tool):
 * a plan trimmed by hand (fewer tasks, configs and pairs) is refused at --run with one line naming
 * what differs; --scratch runs it under .debug/ as partial evidence, which --record refuses.
 */
static int run_strict(const char *args, char **out, char **err)
{
	const char *strict = getenv("VS_TOOL_STRICT"), *trimmed = getenv("VS_TOOL");
	char *saved;
	int status;

	ck_assert_msg(strict && trimmed, "VS_TOOL_STRICT is not set (run through ctest)");
	saved = strdup(trimmed);
	setenv("VS_TOOL", strict, 1);
	status = tu_run_tool(tmp, args, out, err);
	setenv("VS_TOOL", saved, 1);
	free(saved);
	return status;
}

START_TEST(hand_trimmed_plan_runs_only_as_scratch)
{
	char *plan = tu_small_plan(tmp, "", 1, 2), *args, *out = NULL, *err = NULL, *card_before, *card_after;
	char *card_path = fs_join(tmp, "skills/mla_decode_cpu_splitkv.md");
	int status;

	card_before = tu_read(card_path, NULL);
	args = fs_printf("--run %s", plan);
	status = run_strict(args, &out, &err);
	ck_assert_msg(status == 3, "exit %d: %s", status, err);
	ck_assert_int_eq(tu_count_lines(err), 1);
	ck_assert_msg(strstr(err, "task 'bf16-causal-h7-ps16' of tier smoke is missing from the plan: it holds 1 of "
				  "the 6 tasks") &&
			      strstr(err, "--scratch"),
		      "%s", err);
	ck_assert_msg(!strstr(out, "eval dir:"), "a refused plan ran: %s", out);
	free(out);
	free(err);
	free(args);
	args = fs_printf("--run %s --scratch --threads 2", plan);
	status = run_strict(args, &out, &err);
	ck_assert_msg(status == 0, "exit %d: %s\n%s", status, err, out); /* a debug run: no task it ran failed */
	ck_assert_msg(strstr(err, "this is a debug run"), "%s", err);
	ck_assert_msg(strstr(out, "eval dir: results/mla_decode_cpu_splitkv/.debug/"), "%s", out);
	free(args);
	{
		char *dir = tu_eval_dir_of(out);

		free(out);
		free(err);
		/* never the latest complete run, and refused when named */
		status = run_strict("--record skills/mla_decode_cpu_splitkv.md", &out, &err);
		ck_assert_msg(status == 3 && strstr(err, "no complete eval dir"), "exit %d: %s", status, err);
		free(out);
		free(err);
		args = fs_printf("--record skills/mla_decode_cpu_splitkv.md --eval-dir %s", dir);
		status = run_strict(args, &out, &err);
		ck_assert_msg(status == 3 && strstr(err, "is missing from the plan"), "exit %d: %s", status, err);
		free(out);
		free(err);
		free(args);
		free(dir);
	}
	card_after = tu_read(card_path, NULL);
	ck_assert_str_eq(card_before, card_after);
	free(card_before);
	free(card_after);
	free(card_path);
	free(plan);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("cli");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, bad_input_gives_one_clear_line, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tc, static_passes_the_field_examples_and_our_cards);
	tcase_add_test(tc, emit_plan_is_byte_identical_twice);
	tcase_add_test(tc, main_job_records_the_cpu_card);
	tcase_add_test(tc, sparse_cpu_card_validates_end_to_end);
	tcase_add_test(tc, config_card_lint);
	tcase_add_test(tc, config_card_validates_end_to_end);
	tcase_add_test(tc, triton_config_resources_on_sm_120);
	tcase_add_test(tc, triton_config_cards_plan_as_designed);
	tcase_add_test(tc, hand_trimmed_plan_runs_only_as_scratch);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
