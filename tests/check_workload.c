/*
 * check_workload.c - the workload file, the trace readers, the simulation and the grouping
 * (harness/workload.c). Fixtures: tests/resources/workloads/ (one fault per bad file) and its
 * traces/; the shipped workloads in workloads/.
 */
#include "fsutil.h"
#include "testutil.h"
#include "vs_error.h"
#include "workload.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define FIX "tests/resources/workloads/"

/* Capture what fn(arg) prints on stderr (malloc'd); *rc is its return value. */
static char *captured(int (*fn)(const char *), const char *arg, int *rc)
{
	FILE *tmp = tmpfile();
	int saved, quiet = vs_error_set_quiet(0);
	char *buf;
	long n;

	ck_assert_ptr_nonnull(tmp);
	fflush(stderr);
	saved = dup(2);
	dup2(fileno(tmp), 2);
	*rc = fn(arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	vs_error_set_quiet(quiet);
	n = ftell(tmp);
	buf = calloc(1, (size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	rewind(tmp);
	ck_assert_int_eq((long)fread(buf, 1, (size_t)n, tmp), n);
	fclose(tmp);
	return buf;
}

static int load_and_release(const char *path)
{
	struct workload w;
	int err = workload_load(&w, path);

	if (!err)
		workload_release(&w);
	return err;
}

static int read_trace(const char *path)
{
	struct workload_trace t;
	int err = workload_trace_read(&t, path, NULL, NULL);

	if (!err)
		workload_trace_release(&t);
	return err;
}

static const struct {
	const char *file;
	const char *expected; /* the one line on stderr, after "validate_skill: error: " */
} bad_workloads[] = {
	{"bad_id.yaml", "bad_id.yaml:2:5: id: 'other_name' must equal the file name without .yaml ('bad_id')"},
	{"bad_h_q.yaml", "bad_h_q.yaml:5:14: model.h_q: 129 is out of range 1..128"},
	{"bad_s_q.yaml", "bad_s_q.yaml:5:23: model.s_q: 9 is out of range 1..8"},
	{"bad_mtp.yaml", "bad_mtp.yaml:5:38: model.mtp_accept: needs s_q >= 2 (multi-token prediction verifies s_q - 1 "
			 "draft tokens)"},
	{"bad_mtp_range.yaml", "bad_mtp_range.yaml:5:38: model.mtp_accept: must be a number in [0, 1] (the chance "
			       "each draft token is accepted)"},
	{"bad_missing_h_q.yaml", "bad_missing_h_q.yaml:5:8: model.h_q: missing (an integer 1..128)"},
	{"bad_page_size.yaml",
	 "bad_page_size.yaml:5:37: model.page_size: 32 is not a page size the planner builds (1, 16 or 64)"},
	{"bad_kv_dtype.yaml",
	 "bad_kv_dtype.yaml:5:59: model.kv_dtypes: 'fp16' is not a kv dtype (bf16, fp8_e4m3_fnuz, fp8_ds_mla, "
	 "fp8_ds_mla_fnuz, fp8_model1, fp8_model1_fnuz)"},
	/* the sparse form's keys (docs/DESIGN.md "Workloads of the sparse form") */
	{"bad_topk.yaml", "bad_topk.yaml:5:72: model.topk: 0 is out of range 1..65536"},
	{"bad_extra_topk_v32.yaml", "bad_extra_topk_v32.yaml:5:78: model.extra_topk: the extra cache is DeepSeek-V4's: "
				    "only with fp8_model1 or fp8_model1_fnuz"},
	{"bad_sparse_fnuz.yaml", "bad_sparse_fnuz.yaml:5:53: model.kv_dtypes: 'fp8_e4m3_fnuz' (one per-tensor scale) "
				 "is the dense form's cache; the sparse form (topk) reads bf16, fp8_ds_mla(_fnuz) or "
				 "fp8_model1(_fnuz)"},
	{"bad_mixed_models.yaml", "bad_mixed_models.yaml:5:65: model.kv_dtypes: 'bf16' is a DeepSeek-V3.2 cache "
				  "(576-wide rows) beside a V4 one (fp8_model1): a workload is one model's; write one "
				  "workload per model"},
	{"bad_dense_sink.yaml", "bad_dense_sink.yaml:5:71: model.attn_sink: belongs to the sparse form: give model.topk "
				"or a block-scaled kv_dtype (fp8_ds_mla, fp8_model1)"},
	{"bad_attn_sink.yaml", "bad_attn_sink.yaml:5:77: model.attn_sink: must be true or false (the model has "
			       "per-head sink logits)"},
	{"bad_extra_compress.yaml", "bad_extra_compress.yaml:5:82: model.extra_compress: 0 is out of range 1..1024"},
	{"bad_extra_without_cache.yaml", "bad_extra_without_cache.yaml:5:98: model.extra_page_size: extra_topk is 0 "
					 "(no extra cache): nothing for it to describe"},
	{"bad_sparse_page.yaml", "bad_sparse_page.yaml:5:37: model.page_size: 8192 is out of range 1..4096 for the "
				 "sparse form"},
	{"bad_concurrency.yaml", "bad_concurrency.yaml:6:21: concurrency: 2: list each concurrency once, ascending"},
	{"bad_concurrency_range.yaml", "bad_concurrency_range.yaml:6:21: concurrency: 2048 is out of range 1..1024"},
	{"bad_both_traffic.yaml",
	 "bad_both_traffic.yaml:8:3: traffic: give either trace: FILE or histogram: {context, generated}, not both"},
	{"bad_missing_trace.yaml",
	 "bad_missing_trace.yaml:8:10: traffic.trace: 'traces/nope.csv' (" FIX "traces/nope.csv) does not exist "
	 "(a trace is relative to the workload file)"},
	{"bad_shares.yaml", "bad_shares.yaml:9:14: traffic.histogram.context: the shares sum to 0.9, not 1"},
	{"bad_bin.yaml",
	 "bad_bin.yaml:9:30: traffic.histogram.context: bin 2: [300, 200] is not a range 0 <= lo <= hi <= 16777216"},
	{"bad_column_with_histogram.yaml",
	 "bad_column_with_histogram.yaml:11:3: traffic: 'context_column' names a trace column; this traffic is a "
	 "histogram"},
	{"bad_steps.yaml", "bad_steps.yaml:9:8: steps: 0 is out of range 1..65536"},
	{"bad_tasks.yaml", "bad_tasks.yaml:10:8: tasks: 2 is fewer than the 3 concurrencies (each needs a task)"},
	{"bad_seed.yaml", "bad_seed.yaml:11:7: seed: 'one' is not an integer"},
	{"bad_yaml.yaml",
	 "bad_yaml.yaml:7:8: workload: invalid yaml: did not find expected ',' or ']', while parsing a flow sequence"},
};

START_TEST(each_bad_workload_gives_its_one_line)
{
	for (int i = 0; i < NELEM(bad_workloads); i++) {
		char *path = fs_printf(FIX "%s", bad_workloads[i].file);
		char *want = fs_printf("validate_skill: error: " FIX "%s\n", bad_workloads[i].expected);
		int rc;
		char *got = captured(load_and_release, path, &rc);

		ck_assert_msg(rc < 0, "%s: loaded (rc %d)", path, rc);
		ck_assert_msg(!strcmp(got, want), "%s:\n  want: %s  got:  %s", path, want, got);
		free(got);
		free(want);
		free(path);
	}
}
END_TEST

START_TEST(every_error_of_a_file_is_shown)
{
	int rc;
	char *got = captured(load_and_release, FIX "bad_two.yaml", &rc);

	ck_assert_int_eq(rc, VS_ESCHEMA);
	ck_assert_str_eq(got, "validate_skill: error: " FIX "bad_two.yaml:5:14: model.h_q: 129 is out of range 1..128\n"
			      "validate_skill: error: " FIX "bad_two.yaml:5:38: model.page_size: 32 is not a page size "
			      "the planner builds (1, 16 or 64)\n");
	free(got);
}
END_TEST

START_TEST(a_trace_that_never_decodes_is_refused_by_the_simulation)
{
	static struct workload_request none[] = {{100, 0}, {200, 0}};
	struct workload w = {.path = "hand"};
	struct workload_trace t = {.path = "hand", .requests = none, .count = 2};
	struct workload_sim_options o = WORKLOAD_SIM_OPTIONS_INIT;
	struct workload_sim sim;

	ck_assert_int_eq(workload_simulate(&sim, &w, &t, 2, &o), VS_ESCHEMA);
	ck_assert_str_eq(vs_last_error(), "hand: no request generates a token: nothing decodes");
}
END_TEST

static const struct {
	const char *file;
	const char *expected;
} bad_traces[] = {
	{"bad_not_number.csv", "bad_not_number.csv:3: row 2, column 'ContextTokens': '39x' is not a number"},
	{"bad_negative.csv", "bad_negative.csv:4: row 3, column 'GeneratedTokens': -5 is negative"},
	{"bad_missing.csv", "bad_missing.csv:3: row 2, column 'GeneratedTokens': missing"},
	{"bad_header.csv", "bad_header.csv:1: the header names no context column 'ContextTokens' or 'Request tokens' "
			   "(name it with traffic.context_column)"},
	{"bad_missing.jsonl", "bad_missing.jsonl:2: row 2, column 'output_length': missing"},
	{"bad_not_number.jsonl", "bad_not_number.jsonl:2: row 2, column 'input_length': 'long' is not a number"},
	{"bad_row.jsonl", "bad_row.jsonl:2: row 2: not a JSON object"},
	{"no_decode.csv", "no_decode.csv: no request generates a token (2 rows): nothing decodes"},
};

START_TEST(each_bad_trace_row_gives_its_one_line)
{
	for (int i = 0; i < NELEM(bad_traces); i++) {
		char *path = fs_printf(FIX "traces/%s", bad_traces[i].file);
		char *want = fs_printf("validate_skill: error: " FIX "traces/%s\n", bad_traces[i].expected);
		int rc;
		char *got = captured(read_trace, path, &rc);

		ck_assert_msg(rc < 0, "%s: read (rc %d)", path, rc);
		ck_assert_msg(!strcmp(got, want), "%s:\n  want: %s  got:  %s", path, want, got);
		free(got);
		free(want);
		free(path);
	}
}
END_TEST

START_TEST(the_published_column_names_are_recognized)
{
	static const struct {
		const char *file;
		int count;
		int32_t context0, generated0;
	} cases[] = {
		{"tiny.csv", 8, 374, 44},     /* Azure LLM inference trace: ContextTokens, GeneratedTokens */
		{"tiny.jsonl", 8, 374, 44},   /* Mooncake: input_length, output_length */
		{"burstgpt.csv", 2, 472, 18}, /* BurstGPT: Request tokens, Response tokens */
	};

	for (int i = 0; i < NELEM(cases); i++) {
		char *path = fs_printf(FIX "traces/%s", cases[i].file);
		struct workload_trace t;

		ck_assert_msg(workload_trace_read(&t, path, NULL, NULL) == 0, "%s: %s", path, vs_last_error());
		ck_assert_msg(t.count == cases[i].count, "%s: %d rows", path, t.count);
		ck_assert_int_eq(t.requests[0].context, cases[i].context0);
		ck_assert_int_eq(t.requests[0].generated, cases[i].generated0);
		ck_assert_int_eq((int)strlen(t.sha256), 64);
		workload_trace_release(&t);
		free(path);
	}
}
END_TEST

START_TEST(named_columns_and_relative_paths)
{
	struct workload w;
	struct workload_trace t;

	ck_assert_msg(workload_load(&w, FIX "named_columns.yaml") == 0, "%s", vs_last_error());
	ck_assert_str_eq(w.trace_path, FIX "traces/named.csv");
	ck_assert_str_eq(w.context_column, "prompt");
	ck_assert_int_eq(workload_trace_read(&t, w.trace_path, w.context_column, w.generated_column), 0);
	ck_assert_int_eq(t.count, 8);
	ck_assert_int_eq(t.requests[7].context, 35);
	ck_assert_int_eq(t.requests[7].generated, 12);
	workload_trace_release(&t);
	workload_release(&w);
}
END_TEST

START_TEST(unknown_keys_are_kept_and_shown)
{
	struct workload w;
	int rc;
	char *got = captured(load_and_release, FIX "unknown_key.yaml", &rc);

	ck_assert_int_eq(rc, 0);
	ck_assert_str_eq(got, "validate_skill: warning: " FIX "unknown_key.yaml:12:1: tensor_parallel: unknown key "
			      "(kept; the known keys are in docs/DESIGN.md)\n");
	free(got);
	vs_error_set_quiet(1);
	ck_assert_int_eq(workload_load(&w, FIX "unknown_key.yaml"), 0);
	vs_error_set_quiet(0);
	ck_assert_int_eq(w.unknown_count, 1);
	ck_assert_str_eq(w.unknown[0].path, "tensor_parallel");
	ck_assert_int_eq(w.unknown[0].line, 12);
	workload_release(&w);
}
END_TEST

START_TEST(a_huge_workload_file_is_refused)
{
	char *dir = tu_tmpdir(), *path = fs_join(dir, "huge.yaml"), *want;
	size_t n = WORKLOAD_MAX_BYTES + 10;
	char *text = malloc(n);
	int rc;
	char *got;

	memset(text, '#', n);
	text[n - 1] = '\n';
	tu_write(path, text, n);
	got = captured(load_and_release, path, &rc);
	want = fs_printf("validate_skill: error: %s: a workload file of %zu bytes is refused (at most %u)\n", path, n,
			 WORKLOAD_MAX_BYTES);
	ck_assert_int_eq(rc, VS_EPARSE);
	ck_assert_str_eq(got, want);
	fs_remove_tree(dir);
	free(got);
	free(want);
	free(text);
	free(path);
	free(dir);
}
END_TEST

/* Requests A (10, 2), B (5, 3), C (1, 1): the hand-computed cases below. */
static struct workload_request abc[] = {{10, 2}, {5, 3}, {1, 1}};

START_TEST(steady_state_matches_a_hand_computed_case)
{
	static const struct {
		int start;
		int64_t warmup;
		int32_t expect[6][2];
	} cases[] = {
		/*
		 * start A: slots A, B. Step 1: A attends over 10 + 1 keys, B over 5 + 1; after step 2 A is done
		 * and slot 0 takes C; after step 3 C and B are done: slot 0 takes A (wrapping), slot 1 B.
		 */
		{0, 0, {{11, 6}, {12, 7}, {2, 8}, {11, 6}, {12, 7}, {2, 8}}},
		/* the same after one warm-up step */
		{0, 1, {{12, 7}, {2, 8}, {11, 6}, {12, 7}, {2, 8}, {11, 6}}},
		/* start B: slots B, C; C done after step 1, slot 1 takes A; after step 3 B and A are done */
		{1, 0, {{6, 2}, {7, 11}, {8, 12}, {6, 2}, {7, 11}, {8, 12}}},
	};
	struct workload w = {.path = "hand"};
	struct workload_trace t = {.path = "hand", .requests = abc, .count = 3};

	for (int i = 0; i < NELEM(cases); i++) {
		struct workload_sim_options o = WORKLOAD_SIM_OPTIONS_INIT;
		struct workload_sim sim;

		o.steps = 6;
		o.warmup = cases[i].warmup;
		o.start = cases[i].start;
		o.stride = 1;
		o.phase = 0;
		ck_assert_int_eq(workload_simulate(&sim, &w, &t, 2, &o), 0);
		for (int s = 0; s < 6; s++)
			for (int b = 0; b < 2; b++)
				ck_assert_msg(sim.seqlens[s * 2 + b] == cases[i].expect[s][b],
					      "case %d (start %d, warm-up %lld): step %d slot %d: %d, want %d", i,
					      cases[i].start, (long long)cases[i].warmup, s + 1, b,
					      sim.seqlens[s * 2 + b], cases[i].expect[s][b]);
		workload_sim_release(&sim);
	}
}
END_TEST

/*
 * MTP (s_q 2): a step attends over the prompt, the tokens done and its 2 query tokens, and keeps 2
 * tokens when the draft is accepted (mtp_accept 1), 1 when it never is (mtp_accept 0). Requests A
 * (10, 2), B (5, 3), C (1, 1), slots A and B, no phase, no warm-up.
 */
START_TEST(mtp_steps_advance_by_the_accepted_tokens)
{
	static const int32_t all[4][2] = {{12, 7}, {3, 9}, {12, 7}, {3, 9}};
	static const int32_t none_[4][2] = {{12, 7}, {13, 8}, {3, 9}, {12, 7}};
	struct workload_trace t = {.path = "hand", .requests = abc, .count = 3};

	for (int k = 0; k < 2; k++) {
		struct workload w = {.path = "hand", .s_q = 2, .mtp_accept = k ? 0.0 : 1.0};
		struct workload_sim_options o = WORKLOAD_SIM_OPTIONS_INIT;
		struct workload_sim sim;

		o.steps = 4;
		o.warmup = 0;
		o.start = 0;
		o.stride = 1;
		o.phase = 0;
		ck_assert_int_eq(workload_simulate(&sim, &w, &t, 2, &o), 0);
		for (int s = 0; s < 4; s++)
			for (int b = 0; b < 2; b++)
				ck_assert_msg(sim.seqlens[s * 2 + b] == (k ? none_ : all)[s][b],
					      "mtp_accept %d: step %d slot %d: %d, want %d", !k, s + 1, b,
					      sim.seqlens[s * 2 + b], (k ? none_ : all)[s][b]);
		workload_sim_release(&sim);
	}
}
END_TEST

/* The derivation as text: every field of every task. */
static char *tasks_text(const char *path, uint64_t seed)
{
	struct workload w;
	struct workload_trace t = {0};
	struct workload_tasks tk;
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);

	ck_assert_msg(workload_load(&w, path) == 0, "%s: %s", path, vs_last_error());
	w.seed = seed;
	if (w.trace_path)
		ck_assert_int_eq(workload_trace_read(&t, w.trace_path, w.context_column, w.generated_column), 0);
	ck_assert_int_eq(workload_derive(&tk, &w, w.trace_path ? &t : NULL), 0);
	len += (size_t)snprintf(buf + len, cap - len, "%s %s %llu\n", tk.workload_sha256, tk.trace_sha256,
				(unsigned long long)tk.seed);
	for (int i = 0; i < tk.count; i++) {
		const struct workload_task *k = &tk.items[i];

		len += (size_t)snprintf(buf + len, cap - len, "C%d steps %d weight %.17g step %d:", k->concurrency,
					k->steps, k->weight, k->step);
		for (int b = 0; b < k->batch; b++)
			len += (size_t)snprintf(buf + len, cap - len, " %d", k->seqlens[b]);
		len += (size_t)snprintf(buf + len, cap - len, "\n");
		ck_assert(len < cap);
	}
	workload_tasks_release(&tk);
	workload_trace_release(&t);
	workload_release(&w);
	return buf;
}

START_TEST(the_derivation_is_deterministic_and_seeded)
{
	static const char *const files[] = {FIX "tiny_trace.yaml", FIX "tiny_histogram.yaml", FIX "tiny_sparse.yaml",
					    FIX "tiny_sparse_v4.yaml"};

	for (int i = 0; i < NELEM(files); i++) {
		char *a = tasks_text(files[i], 1), *b = tasks_text(files[i], 1), *c = tasks_text(files[i], 2);

		ck_assert_msg(!strcmp(a, b), "%s: two derivations differ:\n%s\n%s", files[i], a, b);
		ck_assert_msg(strcmp(a, c), "%s: seeds 1 and 2 give the same tasks:\n%s", files[i], a);
		free(a);
		free(b);
		free(c);
	}
}
END_TEST

START_TEST(csv_and_jsonl_of_one_trace_give_the_same_tasks)
{
	char *a = tasks_text(FIX "tiny_trace.yaml", 1), *b = tasks_text(FIX "tiny_jsonl.yaml", 1);

	/* the first line holds the files' hashes, which differ */
	ck_assert_str_eq(strchr(a, '\n'), strchr(b, '\n'));
	free(a);
	free(b);
}
END_TEST

START_TEST(tasks_are_real_steps_and_weights_sum_to_one)
{
	static const char *const files[] = {FIX "tiny_trace.yaml", FIX "tiny_histogram.yaml", FIX "tiny_sparse.yaml"};

	for (int f = 0; f < NELEM(files); f++) {
		struct workload w;
		struct workload_trace t = {0};
		struct workload_tasks tk;
		double sum = 0;
		int64_t steps = 0;

		ck_assert_int_eq(workload_load(&w, files[f]), 0);
		if (w.trace_path)
			ck_assert_int_eq(workload_trace_read(&t, w.trace_path, NULL, NULL), 0);
		ck_assert_int_eq(workload_derive(&tk, &w, w.trace_path ? &t : NULL), 0);
		ck_assert_int_le(tk.count, w.tasks);
		ck_assert_int_eq(tk.steps_total, (int64_t)w.steps * w.n_concurrency);
		for (int i = 0; i < tk.count; i++) {
			const struct workload_task *k = &tk.items[i];
			struct workload_sim_options o = WORKLOAD_SIM_OPTIONS_INIT;
			struct workload_sim sim;

			sum += k->weight;
			steps += k->steps;
			ck_assert_int_eq(k->batch, k->concurrency);
			/* the task's seqlens are the sampled step it names */
			o.steps = w.steps;
			o.seed = w.seed;
			ck_assert_int_eq(workload_simulate(&sim, &w, w.trace_path ? &t : NULL, k->concurrency, &o), 0);
			ck_assert_msg(!memcmp(sim.seqlens + (size_t)k->step * k->batch, k->seqlens,
					      (size_t)k->batch * sizeof(int32_t)),
				      "%s: task %d is not step %d of C=%d", files[f], i, k->step, k->concurrency);
			for (int b = 0; b < k->batch; b++)
				ck_assert_int_ge(k->seqlens[b], 1);
			workload_sim_release(&sim);
		}
		ck_assert_msg(fabs(sum - 1.0) < 1e-12, "%s: weights sum to %.17g", files[f], sum);
		ck_assert_int_eq(steps, tk.steps_total);
		workload_tasks_release(&tk);
		workload_trace_release(&t);
		workload_release(&w);
	}
}
END_TEST

START_TEST(a_histogram_draws_lengths_from_its_bins)
{
	struct workload w;
	struct workload_sim_options o = WORKLOAD_SIM_OPTIONS_INIT;
	struct workload_sim sim;
	int lo = 1 << 30, hi = 0;

	ck_assert_int_eq(workload_load(&w, FIX "tiny_histogram.yaml"), 0);
	o.steps = 2000;
	ck_assert_int_eq(workload_simulate(&sim, &w, NULL, 4, &o), 0);
	for (int i = 0; i < sim.steps * sim.concurrency; i++) {
		lo = sim.seqlens[i] < lo ? sim.seqlens[i] : lo;
		hi = sim.seqlens[i] > hi ? sim.seqlens[i] : hi;
	}
	/* context 1..1000 plus 1..32 decoded: every seqlen in 2..1032, both bins of context seen */
	ck_assert_int_ge(lo, 2);
	ck_assert_int_le(hi, 1032);
	ck_assert_int_le(lo, 101);
	ck_assert_int_gt(hi, 101);
	workload_sim_release(&sim);
	workload_release(&w);
}
END_TEST

/*
 * Steady state, by the renewal-reward theorem: a slot's mean seqlen over time is
 * sum_i (P_i G_i + G_i (G_i + 1) / 2) / sum_i G_i over the requests (P context, G generated), whatever
 * the order; C slots hold C times that. The simulation's mean over its samples must agree.
 */
START_TEST(the_steady_state_mean_matches_renewal_reward)
{
	static const struct {
		const char *file;
		int concurrency;
		double tolerance; /* relative */
	} cases[] = {
		{FIX "tiny_trace.yaml", 4, 0.02},
		{FIX "tiny_trace.yaml", 64, 0.02},
		{"workloads/cpu_smoke.yaml", 4, 0.02},
		{"workloads/geak_v4_e2e.yaml", 32, 0.001},
	};

	for (int i = 0; i < NELEM(cases); i++) {
		struct workload w;
		struct workload_trace t = {0};
		struct workload_sim_options o = WORKLOAD_SIM_OPTIONS_INIT;
		struct workload_sim sim;
		double num = 0, den = 0, want, got = 0;

		ck_assert_int_eq(workload_load(&w, cases[i].file), 0);
		if (w.trace_path) {
			ck_assert_int_eq(workload_trace_read(&t, w.trace_path, NULL, NULL), 0);
			for (int r = 0; r < t.count; r++) {
				double p = t.requests[r].context, g = t.requests[r].generated;

				num += p * g + g * (g + 1) / 2;
				den += g;
			}
		} else {
			/* geak_v4_e2e: every request 8192 + 1024 */
			num = 8192.0 * 1024 + 1024.0 * 1025 / 2;
			den = 1024;
		}
		want = cases[i].concurrency * num / den;
		o.steps = 16384;
		ck_assert_int_eq(workload_simulate(&sim, &w, w.trace_path ? &t : NULL, cases[i].concurrency, &o), 0);
		for (int64_t k = 0; k < (int64_t)sim.steps * sim.concurrency; k++)
			got += sim.seqlens[k];
		got /= sim.steps;
		ck_assert_msg(fabs(got / want - 1) < cases[i].tolerance,
			      "%s at C=%d: mean keys per step %.1f, want %.1f", cases[i].file, cases[i].concurrency,
			      got, want);
		workload_sim_release(&sim);
		workload_trace_release(&t);
		workload_release(&w);
	}
}
END_TEST

/* The tasks' weighted total keys is the workload's mean keys per step (each task sits at its group's mean). */
START_TEST(the_tasks_weigh_to_the_mean_keys_per_step)
{
	struct workload w;
	struct workload_trace t = {0};
	struct workload_tasks tk;

	/* a shipped workload on a real trace (the Azure LLM inference trace 2023, conversation) */
	ck_assert_int_eq(workload_load(&w, "workloads/deepseek_v3_tp8_chat.yaml"), 0);
	ck_assert_ptr_nonnull(w.trace_path);
	ck_assert_msg(workload_trace_read(&t, w.trace_path, w.context_column, w.generated_column) == 0, "%s",
		      vs_last_error());
	ck_assert_int_eq(workload_derive(&tk, &w, &t), 0);
	for (int c = 0; c < w.n_concurrency; c++) {
		struct workload_sim_options o = WORKLOAD_SIM_OPTIONS_INIT;
		struct workload_sim sim;
		double mean = 0, est = 0, wsum = 0;

		o.steps = w.steps;
		o.seed = w.seed;
		ck_assert_int_eq(workload_simulate(&sim, &w, &t, w.concurrency[c], &o), 0);
		for (int64_t k = 0; k < (int64_t)sim.steps * sim.concurrency; k++)
			mean += sim.seqlens[k];
		mean /= sim.steps;
		for (int j = 0; j < tk.count; j++) {
			if (tk.items[j].concurrency == w.concurrency[c]) {
				est += tk.items[j].weight * (double)tk.items[j].total_keys;
				wsum += tk.items[j].weight;
			}
		}
		ck_assert_msg(fabs(est / wsum / mean - 1) < 0.01,
			      "C=%d: tasks weigh to %.0f keys, the samples' mean is %.0f", w.concurrency[c], est / wsum,
			      mean);
		workload_sim_release(&sim);
	}
	workload_tasks_release(&tk);
	workload_trace_release(&t);
	workload_release(&w);
}
END_TEST

START_TEST(sparse_keys_take_the_formats_defaults)
{
	struct workload w;

	/* V3.2: topk as written, no extra cache; a page of 61 rows is a sparse page */
	ck_assert_msg(workload_load(&w, FIX "tiny_sparse.yaml") == 0, "%s", vs_last_error());
	ck_assert_int_eq(w.topk, 512);
	ck_assert_int_eq(w.extra_topk, 0);
	ck_assert_int_eq(w.page_size, 61);
	ck_assert_int_eq(w.n_kv_dtypes, 2);
	ck_assert_int_eq(w.attn_sink, 0);
	/* attended keys: min(context, topk) */
	ck_assert_int_eq(workload_attended(&w, 0), 0);
	ck_assert_int_eq(workload_attended(&w, 300), 300);
	ck_assert_int_eq(workload_attended(&w, 5000), 512);
	workload_release(&w);
	/* V4 without topk: 128 + 1024, the extra cache compressed 4:1 in pages of the main page size */
	ck_assert_msg(workload_load(&w, FIX "tiny_sparse_v4.yaml") == 0, "%s", vs_last_error());
	ck_assert_int_eq(w.topk, 128);
	ck_assert_int_eq(w.extra_topk, 1024);
	ck_assert_int_eq(w.extra_compress, 4);
	ck_assert_int_eq(w.extra_page_size, 64);
	ck_assert_int_eq(workload_attended(&w, 100), 100 + 25);
	ck_assert_int_eq(workload_attended(&w, 3000), 128 + 750);
	ck_assert_int_eq(workload_attended(&w, 100000), 128 + 1024);
	workload_release(&w);
	/* the dense form: every key */
	ck_assert_int_eq(workload_load(&w, FIX "tiny_trace.yaml"), 0);
	ck_assert_int_eq(w.topk, 0);
	ck_assert_int_eq(workload_attended(&w, 100000), 100000);
	workload_release(&w);
}
END_TEST

/* A sparse workload groups its steps by attended keys: each task's count is its seqlens', and the
 * tasks of one concurrency are ordered by it (the dense order is by total keys). */
START_TEST(sparse_tasks_are_ranked_by_attended_keys)
{
	struct workload w;
	struct workload_trace t = {0};
	struct workload_tasks tk;
	int saturated = 0, short_rows = 0;

	ck_assert_int_eq(workload_load(&w, FIX "tiny_sparse.yaml"), 0);
	ck_assert_int_eq(workload_trace_read(&t, w.trace_path, NULL, NULL), 0);
	ck_assert_int_eq(workload_derive(&tk, &w, &t), 0);
	for (int i = 0; i < tk.count; i++) {
		const struct workload_task *k = &tk.items[i];
		int64_t a = 0;

		for (int b = 0; b < k->batch; b++) {
			a += k->seqlens[b] < 512 ? k->seqlens[b] : 512;
			saturated += k->seqlens[b] > 512;
			short_rows += k->seqlens[b] < 512;
		}
		ck_assert_int_eq(k->attended, a);
		ck_assert_int_le(k->attended, k->total_keys);
		if (i && tk.items[i - 1].concurrency == k->concurrency)
			ck_assert_int_le(tk.items[i - 1].attended, k->attended);
	}
	/* the fixture's contexts fall on both sides of topk */
	ck_assert_int_gt(saturated, 0);
	ck_assert_int_gt(short_rows, 0);
	workload_tasks_release(&tk);
	workload_trace_release(&t);
	workload_release(&w);
}
END_TEST

START_TEST(the_shipped_workloads_lint_clean_and_derive)
{
	static const char *const shipped[] = {
		"workloads/cpu_smoke.yaml",           "workloads/deepseek_v3_tp8_chat.yaml",
		"workloads/deepseek_v3_dp_chat.yaml", "workloads/geak_v4_e2e.yaml",
		"workloads/deepseek_v3_tp8_chat_mtp.yaml", "workloads/deepseek_v3_dp_chat_mtp.yaml",
		"workloads/deepseek_v3_tp8_code.yaml", "workloads/deepseek_v3_dp_code.yaml",
		"workloads/deepseek_v3_dp_agent.yaml", "workloads/cpu_dsa_smoke.yaml",
		"workloads/deepseek_v32_dp_chat.yaml", "workloads/deepseek_v32_tp8_chat.yaml",
		"workloads/deepseek_v4_dp_chat.yaml"};

	for (int i = 0; i < NELEM(shipped); i++) {
		struct workload w;
		struct workload_trace t = {0};
		struct workload_tasks tk;
		int rc;
		char *got = captured(load_and_release, shipped[i], &rc);

		ck_assert_msg(rc == 0 && !*got, "%s: rc %d: %s", shipped[i], rc, got);
		free(got);
		ck_assert_int_eq(workload_load(&w, shipped[i]), 0);
		if (w.trace_path)
			ck_assert_msg(workload_trace_read(&t, w.trace_path, w.context_column, w.generated_column) == 0,
				      "%s: %s", shipped[i], vs_last_error());
		ck_assert_msg(workload_derive(&tk, &w, w.trace_path ? &t : NULL) == 0, "%s: %s", shipped[i],
			      vs_last_error());
		ck_assert_int_le(tk.count, w.tasks);
		workload_tasks_release(&tk);
		workload_trace_release(&t);
		workload_release(&w);
	}
}
END_TEST

START_TEST(static_lints_a_workload_file)
{
	char *out = NULL, *err = NULL;
	int rc = tu_run_tool(NULL, "--static workloads/cpu_smoke.yaml " FIX "bad_h_q.yaml", &out, &err);

	ck_assert_msg(rc == 3, "rc %d: %s%s", rc, out, err);
	ck_assert_str_eq(out, "workloads/cpu_smoke.yaml: ok\n");
	ck_assert_str_eq(err,
			 "validate_skill: error: " FIX "bad_h_q.yaml:5:14: model.h_q: 129 is out of range 1..128\n");
	free(out);
	free(err);
}
END_TEST

static Suite *workload_suite(void)
{
	Suite *s = suite_create("workload");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, each_bad_workload_gives_its_one_line);
	tcase_add_test(tc, every_error_of_a_file_is_shown);
	tcase_add_test(tc, a_trace_that_never_decodes_is_refused_by_the_simulation);
	tcase_add_test(tc, each_bad_trace_row_gives_its_one_line);
	tcase_add_test(tc, the_published_column_names_are_recognized);
	tcase_add_test(tc, named_columns_and_relative_paths);
	tcase_add_test(tc, unknown_keys_are_kept_and_shown);
	tcase_add_test(tc, a_huge_workload_file_is_refused);
	tcase_add_test(tc, steady_state_matches_a_hand_computed_case);
	tcase_add_test(tc, the_derivation_is_deterministic_and_seeded);
	tcase_add_test(tc, csv_and_jsonl_of_one_trace_give_the_same_tasks);
	tcase_add_test(tc, tasks_are_real_steps_and_weights_sum_to_one);
	tcase_add_test(tc, a_histogram_draws_lengths_from_its_bins);
	tcase_add_test(tc, the_steady_state_mean_matches_renewal_reward);
	tcase_add_test(tc, mtp_steps_advance_by_the_accepted_tokens);
	tcase_add_test(tc, the_tasks_weigh_to_the_mean_keys_per_step);
	tcase_add_test(tc, sparse_keys_take_the_formats_defaults);
	tcase_add_test(tc, sparse_tasks_are_ranked_by_attended_keys);
	tcase_add_test(tc, the_shipped_workloads_lint_clean_and_derive);
	tcase_add_test(tc, static_lints_a_workload_file);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	vs_error_set_quiet(1);
	return tu_run_suite(workload_suite());
}
