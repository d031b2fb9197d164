/*
 * check_task.c - task specs and task dirs: canonical JSON and hash, validation, materialize (NaN
 * tails, sentinels, fp8 extremes, rotated input sets), idempotence, tamper detection, the
 * regeneration path for inputs over the store limit, task_load, page_offset.
 */
#include "testutil.h"
#include "task.h"
#include "op.h"
#include "op_mla.h"
#include "fsutil.h"
#include "rng.h"
#include "safetensors.h"
#include "vs_error.h"
#include "mla_decode.h"
#include "mla_decode_ref.h"
#include "mla_numeric.h"
#include "codec.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const int32_t tiny_lens[3] = { 5, 0, 9 };

/* batch 3, s_q 2, h_q 2, page_size 4, seqlens {5, 0, 9}: pages 2 + 0 + 3, plus one spare. */
static void tiny_spec(struct task_spec *s, int32_t kv_dtype)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "tiny-%s", mla_kv_dtype_name(kv_dtype));
	s->kv_dtype = kv_dtype;
	s->batch = 3;
	s->s_q = 2;
	s->h_q = 2;
	s->page_size = 4;
	s->max_pages = 3;
	s->num_pages = 6;
	s->seqlens = malloc(sizeof(tiny_lens));
	ck_assert_ptr_nonnull(s->seqlens);
	memcpy(s->seqlens, tiny_lens, sizeof(tiny_lens));
	s->softmax_scale = 0.1352f;
	s->seed = 42;
	s->input_sets = 2;
	s->tol_out = (struct task_tol){ 8e-4, 2.01 / 128, 5e-6 };
	s->tol_lse = (struct task_tol){ 1e-6, 8.01 / 65536, -1 };
}

static char *materialize(const char *root, const struct task_spec *s)
{
	char *dir = NULL;
	int rc = task_materialize(&dir, root, s, 2);

	ck_assert_msg(rc == 0, "task_materialize failed (%d): %s", rc, vs_last_error());
	ck_assert_ptr_nonnull(dir);
	return dir;
}

static char *path_in(const char *dir, const char *name)
{
	char *p = fs_join(dir, name);

	ck_assert_ptr_nonnull(p);
	return p;
}

/* ---- spec ----------------------------------------------------------------------------------- */

static const char tiny_canonical[] =
	"{\"name\":\"tiny-bf16\",\"kv_dtype\":\"bf16\",\"batch\":3,\"s_q\":2,\"h_q\":2,"
	"\"page_size\":4,\"max_pages\":3,\"num_pages\":6,\"page_offset\":0,\"seqlens\":[5,0,9],"
	"\"softmax_scale\":0.1352,\"seed\":42,\"input_sets\":2,"
	"\"tol_out\":{\"atol\":0.0008,\"rtol\":0.015703125,\"cos_tol\":5e-06},"
	"\"tol_lse\":{\"atol\":1e-06,\"rtol\":0.000122222900390625,\"cos_tol\":-1}}";

START_TEST(spec_json_is_canonical_and_round_trips)
{
	struct task_spec s, back;
	cJSON *j = NULL, *parsed = NULL;
	char *text = NULL, h1[65], h2[65], want[65];
	char *hashed;

	tiny_spec(&s, MLA_KV_BF16);
	j = vs_op_mla_decode.spec_to_json(&s);
	text = cJSON_PrintUnformatted(j);
	ck_assert_ptr_nonnull(text);
	/* numbers print as the shortest text that reads back exactly */
	ck_assert_msg(strstr(text, "\"softmax_scale\":0.1352,") != NULL, "got %s", text);
	ck_assert_msg(strstr(text, "\"atol\":0.0008,") != NULL, "got %s", text);
	ck_assert_msg(!strncmp(text, "{\"name\":\"tiny-bf16\",\"kv_dtype\":\"bf16\",\"batch\":3,", 48),
		      "got %s", text);
	parsed = cJSON_Parse(text);
	ck_assert_int_eq(vs_op_mla_decode.spec_from_json(&back, parsed, "test"), 0);
	ck_assert_int_eq(task_spec_hash(&s, h1), 0);
	ck_assert_int_eq(task_spec_hash(&back, h2), 0);
	ck_assert_str_eq(h1, h2);
	ck_assert(back.tol_out.rtol == s.tol_out.rtol && back.tol_lse.rtol == s.tol_lse.rtol);
	ck_assert(back.softmax_scale == s.softmax_scale && back.seed == 42);
	/* the hash is sha256(canonical text + "\n" + generator + "\n" + oracle) */
	hashed = fs_printf("%s\n%s\n%s", text, VS_GENERATOR_VERSION, MLA_ORACLE_VERSION);
	fs_sha256_hex(want, hashed, strlen(hashed));
	ck_assert_str_eq(h1, want);
	task_spec_release(&back);
	/* also straight from the raw items, without printing */
	ck_assert_int_eq(vs_op_mla_decode.spec_from_json(&back, j, "test"), 0);
	ck_assert_int_eq(task_spec_hash(&back, h2), 0);
	ck_assert_str_eq(h1, h2);
	task_spec_release(&back);
	free(hashed);
	free(text);
	cJSON_Delete(parsed);
	cJSON_Delete(j);
	task_spec_release(&s);
}
END_TEST

START_TEST(spec_hash_is_stable_across_builds)
{
	/* a dir name must not change unless the versions do: pin the canonical text */
	struct task_spec s;
	cJSON *j;
	char *text;

	tiny_spec(&s, MLA_KV_BF16);
	j = vs_op_mla_decode.spec_to_json(&s);
	text = cJSON_PrintUnformatted(j);
	ck_assert_msg(!strcmp(text, tiny_canonical), "canonical spec changed:\n got %s\nwant %s", text,
		      tiny_canonical);
	free(text);
	cJSON_Delete(j);
	task_spec_release(&s);
}
END_TEST

/* Change field number i of a spec (keeping it valid). */
static void mutate(struct task_spec *s, int i)
{
	switch (i) {
	case 0: s->name[0] = 'T'; break;
	case 1: s->kv_dtype = MLA_KV_FP8_E4M3_FNUZ; break;
	case 2:
		s->batch = 4;
		s->seqlens = realloc(s->seqlens, 4 * sizeof(int32_t));
		s->seqlens[3] = 1;
		break;
	case 3: s->s_q = 1; break;
	case 4: s->h_q = 3; break;
	case 5: s->page_size = 8; break;
	case 6: s->max_pages = 4; break;
	case 7: s->num_pages = 7; break;
	case 8: s->seqlens[0] = 6; break;
	case 9: s->softmax_scale = nextafterf(s->softmax_scale, 1.0f); break;
	case 10: s->seed = 43; break;
	case 11: s->input_sets = 3; break;
	case 12: s->tol_out.atol = 9e-4; break;
	case 13: s->tol_out.rtol = 0.02; break;
	case 14: s->tol_out.cos_tol = 1e-5; break;
	case 15: s->tol_lse.atol = 2e-6; break;
	case 16: s->tol_lse.rtol = 1e-4; break;
	case 17: s->tol_lse.cos_tol = 0; break;
	case 18: s->page_offset = 10; break;
	}
}

#define N_FIELDS 19

START_TEST(spec_hash_changes_when_any_field_changes)
{
	char hashes[N_FIELDS + 1][65];

	for (int i = 0; i <= N_FIELDS; i++) {
		struct task_spec s;

		tiny_spec(&s, MLA_KV_BF16);
		if (i < N_FIELDS)
			mutate(&s, i);
		ck_assert_msg(vs_op_mla_decode.spec_validate(&s, "mutated") == 0, "mutation %d is invalid: %s", i,
			      vs_last_error());
		ck_assert_int_eq(task_spec_hash(&s, hashes[i]), 0);
		for (int k = 0; k < i; k++)
			ck_assert_msg(strcmp(hashes[i], hashes[k]), "mutations %d and %d hash alike", k,
				      i == N_FIELDS ? -1 : i);
		task_spec_release(&s);
	}
}
END_TEST

static const struct {
	int field;
	int64_t value;
	const char *expect;
} invalid[] = {
	{ 0, 0, "'name' is empty" },
	{ 1, 3, "kv_dtype 3 is neither" },
	{ 2, 0, "batch is 0" },
	{ 3, 0, "s_q is 0" },
	{ 4, -1, "h_q is -1" },
	{ 5, 0, "page_size is 0" },
	{ 6, 2, "seqlens[2] is 9, outside [0, max_pages x page_size = 8]" },
	{ 7, 4, "num_pages is 4, but the seqlens need 5 pages of 4" },
	{ 8, -1, "seqlens[0] is -1" },
	{ 9, 0, "softmax_scale 0 must be finite and positive" },
	{ 10, -1, "above 2^53" },
	{ 11, 1, "input_sets is 1, outside [2, 4]" },
	{ 11, 5, "input_sets is 5" },
	{ 12, -1, "tol_out must have finite atol >= 0" },
	{ 13, -1, "tol_lse must have finite atol >= 0" },
	{ 14, -1, "page_offset -1" },
	{ 14, 0x40000000 - 5, "page_offset 1073741819 puts page indices outside" },
	{ 15, 0, "has no seqlens" },
	{ 16, 0, "byte sizes overflow" },
};

START_TEST(validate_refuses_impossible_specs)
{
	struct task_spec s;
	int rc;

	tiny_spec(&s, MLA_KV_BF16);
	switch (invalid[_i].field) {
	case 0: s.name[0] = '\0'; break;
	case 1: s.kv_dtype = (int32_t)invalid[_i].value; break;
	case 2: s.batch = (int32_t)invalid[_i].value; break;
	case 3: s.s_q = (int32_t)invalid[_i].value; break;
	case 4: s.h_q = (int32_t)invalid[_i].value; break;
	case 5: s.page_size = (int32_t)invalid[_i].value; break;
	case 6: s.max_pages = (int32_t)invalid[_i].value; break;
	case 7: s.num_pages = (int32_t)invalid[_i].value; break;
	case 8: s.seqlens[0] = (int32_t)invalid[_i].value; break;
	case 9: s.softmax_scale = (float)invalid[_i].value; break;
	case 10: s.seed = VS_TASK_SEED_MAX + 1; break;
	case 11: s.input_sets = (int)invalid[_i].value; break;
	case 12: s.tol_out.atol = -1; break;
	case 13: s.tol_lse.atol = NAN; break;
	case 14: s.page_offset = invalid[_i].value; break;
	case 15: free(s.seqlens); s.seqlens = NULL; break;
	case 16: s.h_q = 0x7fffffff; s.s_q = 0x7fffffff; break;
	}
	vs_error_set_quiet(1);
	rc = vs_op_mla_decode.spec_validate(&s, "case");
	vs_error_set_quiet(0);
	ck_assert_msg(rc == VS_ESCHEMA, "case %d: validate returned %d", _i, rc);
	ck_assert_msg(strstr(vs_last_error(), invalid[_i].expect) != NULL,
		      "case %d: error '%s' lacks '%s'", _i, vs_last_error(), invalid[_i].expect);
	ck_assert_msg(!strncmp(vs_last_error(), "case: ", 6), "error '%s' lacks the where prefix",
		      vs_last_error());
	task_spec_release(&s);
}
END_TEST

START_TEST(from_json_names_the_bad_key)
{
	static const struct {
		const char *from, *to, *expect;
	} edits[] = {
		{ "\"batch\":3", "\"batch\":3.5", "'batch' must be an integer" },
		{ "\"batch\":3,", "", "lacks 'batch'" },
		{ "\"seed\":42", "\"seed\":42,\"extra\":1", "unknown key 'extra'" },
		{ "\"kv_dtype\":\"bf16\"", "\"kv_dtype\":\"fp16\"", "'kv_dtype' must be" },
		{ "[5,0,9]", "[5,0]", "'seqlens' must be a list of 'batch' (3)" },
		{ "\"rtol\":0.015703125,", "", "lacks 'tol_out.rtol'" },
	};
	for (size_t i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		char *text = strdup(tiny_canonical), *at = strstr(text, edits[i].from), *edited;
		cJSON *j;
		struct task_spec s;
		int rc;

		ck_assert_ptr_nonnull(at);
		*at = '\0';
		edited = fs_printf("%s%s%s", text, edits[i].to, at + strlen(edits[i].from));
		j = cJSON_Parse(edited);
		ck_assert_msg(j != NULL, "edit %zu is not JSON: %s", i, edited);
		vs_error_set_quiet(1);
		rc = vs_op_mla_decode.spec_from_json(&s, j, "plan.json:tasks[0]");
		vs_error_set_quiet(0);
		ck_assert_msg(rc == VS_ESCHEMA, "edit %zu: rc %d", i, rc);
		ck_assert_msg(strstr(vs_last_error(), edits[i].expect) != NULL, "edit %zu: '%s' lacks "
			      "'%s'", i, vs_last_error(), edits[i].expect);
		ck_assert(strstr(vs_last_error(), "plan.json:tasks[0]") != NULL);
		cJSON_Delete(j);
		free(edited);
		free(text);
	}
}
END_TEST

START_TEST(bytes_and_flops_follow_flashmla)
{
	struct task_spec s;

	tiny_spec(&s, MLA_KV_BF16);
	ck_assert_double_eq(vs_op_mla_decode.bytes(&s), 14.0 * 576 * 2 + 3 * 2 * 2 * 576 * 2 + 3 * 2 * 2 * 512 * 2);
	ck_assert_double_eq(vs_op_mla_decode.flops(&s), 2.0 * 2 * 2 * 14 * (576 + 512));
	s.kv_dtype = MLA_KV_FP8_E4M3_FNUZ;
	ck_assert_double_eq(vs_op_mla_decode.bytes(&s), 14.0 * 576 + 3 * 2 * 2 * 576 * 2 + 3 * 2 * 2 * 512 * 2);
	task_spec_release(&s);
}
END_TEST

/* ---- the sparse form's spec (issue 36) -------------------------------------------------------- */

static const int32_t tiny_extra_lens[3] = { 3, 1, 0 };

/*
 * The tiny spec in the sparse form: topk 8 over seqlens {5, 0, 9} (so -1 padding in batch 0, a row
 * of all -1 in batch 1), topk_length and attn_sink; with extra, an extra cache of pages of 2 with
 * extra_seqlens {3, 1, 0}, extra_topk 4 and extra_topk_length.
 */
static void sparse_spec(struct task_spec *s, int32_t kv_dtype, int extra)
{
	tiny_spec(s, kv_dtype);
	snprintf(s->name, sizeof(s->name), "tiny-dsa-%s%s", mla_kv_dtype_name(kv_dtype), extra ? "-extra" : "");
	s->topk = 8;
	s->topk_length = 1;
	s->attn_sink = 1;
	if (extra) {
		s->extra_topk = 4;
		s->extra_page_size = 2;
		s->extra_max_pages = 2;
		s->extra_num_pages = 4;
		s->extra_topk_length = 1;
		s->extra_seqlens = malloc(sizeof(tiny_extra_lens));
		ck_assert_ptr_nonnull(s->extra_seqlens);
		memcpy(s->extra_seqlens, tiny_extra_lens, sizeof(tiny_extra_lens));
	}
}

/* The operator table (op.h): found by its task dir name and its card operator; the two forms share it. */
START_TEST(operator_table_names_mla_decode_for_both_forms)
{
	struct task_spec d, s;
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	ck_assert_ptr_eq(vs_operator_find("mla_decode"), &vs_op_mla_decode);
	ck_assert_ptr_eq(vs_operator_for_card("mla_attention"), &vs_op_mla_decode);
	ck_assert_ptr_null(vs_operator_find("mla_attention"));
	ck_assert_ptr_null(vs_operator_for_card("gemm"));
	ck_assert_ptr_null(vs_operator_find(NULL));
	ck_assert_str_eq(vs_op_mla_decode.oracle_version, MLA_ORACLE_VERSION);
	tiny_spec(&d, MLA_KV_BF16);
	sparse_spec(&s, MLA_KV_FP8_DS_MLA, 1);
	ck_assert_ptr_eq(vs_op_of(&d), vs_op_of(&s));
	ck_assert_str_eq(vs_op_mla_decode.form(&d), "dense");
	ck_assert_str_eq(vs_op_mla_decode.form(&s), "sparse (its tasks have topk)");
	ck_assert_int_eq(vs_op_mla_decode.dtype(&s), MLA_KV_FP8_DS_MLA);
	ck_assert_str_eq(vs_op_mla_decode.dtype_name(vs_op_mla_decode.dtype(&d)), "bf16");
	f = open_memstream(&text, &len);
	ck_assert_ptr_nonnull(f);
	vs_op_mla_decode.summary_header(f, &d);
	fputc('|', f);
	vs_op_mla_decode.summary_row(f, &d, &d);
	fputc('|', f);
	vs_op_mla_decode.summary_header(f, &s);
	fputc('|', f);
	vs_op_mla_decode.summary_row(f, &s, &s);
	fclose(f);
	/* dense: b s_q h_q page sum(lens) MB; sparse adds the cache format and topk+extra_topk */
	ck_assert_msg(strstr(text, "     3    2    2    4        14       0.0|") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "sum(lens)        MB|") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "  kv_dtype          topk|") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "  fp8_ds_mla          8+4") != NULL, "%s", text);
	free(text);
	task_spec_release(&d);
	task_spec_release(&s);
}
END_TEST

START_TEST(dense_spec_hash_is_pinned)
{
	/* the sparse fields must not move a dense task's dir: the hash of main before issue 36 */
	struct task_spec s;
	char h[65];

	tiny_spec(&s, MLA_KV_BF16);
	ck_assert_int_eq(task_spec_hash(&s, h), 0);
	ck_assert_str_eq(h, "71bc2ba3377f81f16881263a5fe59cf626946b33450cfb1eba3795e3c007d42d");
	task_spec_release(&s);
}
END_TEST

START_TEST(sparse_spec_json_round_trips)
{
	static const int32_t dtypes[] = { MLA_KV_BF16, MLA_KV_FP8_DS_MLA, MLA_KV_FP8_MODEL1_FNUZ };
	struct task_spec s, back, copy;
	cJSON *j, *parsed;
	char *text, *text2, h1[65], h2[65], h3[65];
	int extra = _i % 2;

	sparse_spec(&s, dtypes[_i / 2], extra);
	ck_assert_msg(vs_op_mla_decode.spec_validate(&s, "sparse") == 0, "%s", vs_last_error());
	j = vs_op_mla_decode.spec_to_json(&s);
	text = cJSON_PrintUnformatted(j);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strstr(text, "\"tol_lse\":{\"atol\":1e-06,\"rtol\":0.000122222900390625,\"cos_tol\":-1},"
				   "\"topk\":8,\"topk_length\":true,\"attn_sink\":true") != NULL,
		      "got %s", text);
	ck_assert_msg((strstr(text, "\"extra_topk\":4,\"extra_page_size\":2,\"extra_max_pages\":2,"
				    "\"extra_num_pages\":4,\"extra_seqlens\":[3,1,0],\"extra_topk_length\":true}") !=
		       NULL) == extra,
		      "got %s", text);
	parsed = cJSON_Parse(text);
	ck_assert_int_eq(vs_op_mla_decode.spec_from_json(&back, parsed, "test"), 0);
	ck_assert_int_eq(back.topk, 8);
	ck_assert_int_eq(back.extra_topk, extra ? 4 : 0);
	ck_assert(back.topk_length == 1 && back.attn_sink == 1 && back.extra_topk_length == extra);
	ck_assert(extra ? back.extra_seqlens && back.extra_seqlens[0] == 3 : !back.extra_seqlens);
	ck_assert_int_eq(task_spec_copy(&copy, &back), 0);
	ck_assert_ptr_ne(copy.extra_seqlens, back.extra_seqlens == NULL ? (int32_t *)1 : back.extra_seqlens);
	cJSON_Delete(j);
	j = vs_op_mla_decode.spec_to_json(&copy);
	text2 = cJSON_PrintUnformatted(j);
	ck_assert_str_eq(text, text2);
	ck_assert_int_eq(task_spec_hash(&s, h1), 0);
	ck_assert_int_eq(task_spec_hash(&back, h2), 0);
	ck_assert_int_eq(task_spec_hash(&copy, h3), 0);
	ck_assert_str_eq(h1, h2);
	ck_assert_str_eq(h1, h3);
	/* a sparse spec hashes unlike its dense twin */
	s.topk = 0;
	s.topk_length = s.attn_sink = 0;
	s.extra_topk = s.extra_page_size = s.extra_max_pages = s.extra_num_pages = s.extra_topk_length = 0;
	free(s.extra_seqlens);
	s.extra_seqlens = NULL;
	if (mla_kv_is_blockscaled(s.kv_dtype))
		s.kv_dtype = MLA_KV_BF16;
	ck_assert_int_eq(task_spec_hash(&s, h2), 0);
	ck_assert_str_ne(h1, h2);
	free(text);
	free(text2);
	cJSON_Delete(j);
	cJSON_Delete(parsed);
	task_spec_release(&s);
	task_spec_release(&back);
	task_spec_release(&copy);
}
END_TEST

static const struct {
	int rule;
	const char *expect;
} sparse_invalid[] = {
	{ 0, "kv_dtype 2 (fp8_e4m3_fnuz) is not a format of the sparse form" },
	{ 1, "kv_dtype 3 is neither bf16 nor fp8_e4m3_fnuz (the dense form's formats; a per-block-scaled" },
	{ 2, "page_offset is 4, the sparse form needs 0" },
	{ 3, "topk is -1, it must be 0 (dense) or at least 1" },
	{ 4, "attn_sink is set, but topk is 0" },
	{ 5, "extra_seqlens is set, but topk is 0" },
	{ 6, "topk_length, extra_topk_length and attn_sink are 0 or 1" },
	{ 7, "extra_topk is -2, it must be at least 0" },
	{ 8, "extra cache fields are set, but extra_topk is 0" },
	{ 9, "extra_page_size 0, extra_max_pages 2 and extra_num_pages 4 must be at least 1" },
	{ 10, "has extra_topk 4 but no extra_seqlens" },
	{ 11, "extra_seqlens[0] is 5, outside [0, extra_max_pages x extra_page_size = 4]" },
	{ 12, "extra_num_pages is 2, but the extra_seqlens need 3 pages of 2" },
	{ 13, "its tensors' byte sizes overflow" },
	{ 14, "kv_dtype 9 (unknown) is not a format of the sparse form" },
};

START_TEST(validate_refuses_inconsistent_sparse_specs)
{
	struct task_spec s;
	int rc;

	sparse_spec(&s, MLA_KV_FP8_DS_MLA, 1);
	switch (sparse_invalid[_i].rule) {
	case 0: s.kv_dtype = MLA_KV_FP8_E4M3_FNUZ; break;
	case 1: s.topk = 0; s.topk_length = s.attn_sink = 0; break; /* dense with a block-scaled format */
	case 2: s.page_offset = 4; break;
	case 3: s.topk = -1; break;
	case 4:
		s.kv_dtype = MLA_KV_BF16;
		s.topk = s.topk_length = s.extra_topk = s.extra_page_size = 0;
		s.extra_max_pages = s.extra_num_pages = s.extra_topk_length = 0;
		free(s.extra_seqlens);
		s.extra_seqlens = NULL;
		break;
	case 5:
		s.kv_dtype = MLA_KV_BF16;
		s.topk = s.topk_length = s.attn_sink = s.extra_topk = s.extra_page_size = 0;
		s.extra_max_pages = s.extra_num_pages = s.extra_topk_length = 0;
		break;
	case 6: s.attn_sink = 2; break;
	case 7: s.extra_topk = -2; break;
	case 8: s.extra_topk = 0; break;
	case 9: s.extra_page_size = 0; break;
	case 10: free(s.extra_seqlens); s.extra_seqlens = NULL; break;
	case 11: s.extra_seqlens[0] = 5; break;
	case 12: s.extra_num_pages = 2; break;
	case 13: s.topk = 0x7fffffff; s.s_q = 0x7fffffff; s.batch = 3; break;
	case 14: s.kv_dtype = 9; break;
	}
	vs_error_set_quiet(1);
	rc = vs_op_mla_decode.spec_validate(&s, "case");
	vs_error_set_quiet(0);
	ck_assert_msg(rc == VS_ESCHEMA, "rule %d: validate returned %d", sparse_invalid[_i].rule, rc);
	ck_assert_msg(strstr(vs_last_error(), sparse_invalid[_i].expect) != NULL, "rule %d: error '%s' lacks '%s'",
		      sparse_invalid[_i].rule, vs_last_error(), sparse_invalid[_i].expect);
	task_spec_release(&s);
}
END_TEST

START_TEST(from_json_refuses_sparse_keys_out_of_place)
{
	static const struct {
		const char *json_tail, *expect;
	} cases[] = {
		{ ",\"attn_sink\":true}", "sparse-form key 'attn_sink' but no 'topk'" },
		{ ",\"topk\":0,\"topk_length\":false,\"attn_sink\":false}", "'topk' must be an integer from 1" },
		{ ",\"topk\":8,\"attn_sink\":false}", "lacks 'topk_length'" },
		{ ",\"topk\":8,\"topk_length\":1,\"attn_sink\":false}", "'topk_length' must be true or false" },
		{ ",\"topk\":8,\"topk_length\":false,\"attn_sink\":false,\"extra_page_size\":2}",
		  "has 'extra_page_size' but no 'extra_topk'" },
		{ ",\"topk\":8,\"topk_length\":false,\"attn_sink\":false,\"extra_topk\":2}", "lacks 'extra_page_size'" },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *text = fs_printf("%.*s%s", (int)strlen(tiny_canonical) - 1, tiny_canonical, cases[i].json_tail);
		cJSON *j = cJSON_Parse(text);
		struct task_spec s;
		int rc;

		ck_assert_msg(j != NULL, "case %zu is not JSON: %s", i, text);
		vs_error_set_quiet(1);
		rc = vs_op_mla_decode.spec_from_json(&s, j, "plan.json:tasks[0]");
		vs_error_set_quiet(0);
		ck_assert_msg(rc == VS_ESCHEMA, "case %zu: rc %d", i, rc);
		ck_assert_msg(strstr(vs_last_error(), cases[i].expect) != NULL, "case %zu: '%s' lacks '%s'", i,
			      vs_last_error(), cases[i].expect);
		cJSON_Delete(j);
		free(text);
	}
}
END_TEST

/* ---- materialize ---------------------------------------------------------------------------- */

static void sha_of(char out[65], const char *dir, const char *name)
{
	char *p = path_in(dir, name);

	ck_assert_int_eq(fs_sha256_file(out, p), 0);
	free(p);
}

START_TEST(materialize_writes_a_read_only_dir_named_by_the_hash)
{
	static const char *const names[] = { "manifest.json", "inputs.safetensors",
					     "inputs.1.safetensors", "reference.safetensors",
					     "reference.1.safetensors" };
	struct task_spec s;
	char *root = tu_tmpdir(), *dir, *dir2, hash[65], *want, *parent;
	char before[5][65], after[5][65];
	struct stat st;
	DIR *d;
	struct dirent *e;
	int entries = 0;

	tiny_spec(&s, MLA_KV_BF16);
	dir = materialize(root, &s);
	ck_assert_int_eq(task_spec_hash(&s, hash), 0);
	want = fs_printf("%s/mla_decode/%s", root, hash);
	ck_assert_str_eq(dir, want);
	ck_assert_int_eq(stat(dir, &st), 0);
	ck_assert_msg((st.st_mode & 0777) == 0555, "dir mode %o", st.st_mode & 0777);
	for (int i = 0; i < 5; i++) {
		char *p = path_in(dir, names[i]);

		ck_assert_msg(stat(p, &st) == 0, "%s missing", names[i]);
		ck_assert_msg((st.st_mode & 0777) == 0444, "%s mode %o", names[i], st.st_mode & 0777);
		sha_of(before[i], dir, names[i]);
		free(p);
	}
	ck_assert_int_eq(task_verify(dir), 0);
	/* idempotent: the same dir, the same bytes, no leftovers */
	dir2 = materialize(root, &s);
	ck_assert_str_eq(dir, dir2);
	for (int i = 0; i < 5; i++) {
		sha_of(after[i], dir, names[i]);
		ck_assert_str_eq(before[i], after[i]);
	}
	parent = fs_printf("%s/mla_decode", root);
	d = opendir(parent);
	while ((e = readdir(d)))
		if (e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")))
			entries++;
	closedir(d);
	ck_assert_int_eq(entries, 1);
	fs_remove_tree(root);
	free(parent);
	free(want);
	free(dir);
	free(dir2);
	free(root);
	task_spec_release(&s);
}
END_TEST

START_TEST(materialize_is_deterministic_across_roots)
{
	struct task_spec s;
	char *r1 = tu_tmpdir(), *r2 = tu_tmpdir(), *d1, *d2;
	static const char *const names[] = { "manifest.json", "inputs.safetensors",
					     "reference.1.safetensors" };

	tiny_spec(&s, MLA_KV_FP8_E4M3_FNUZ);
	d1 = materialize(r1, &s);
	d2 = materialize(r2, &s);
	for (int i = 0; i < 3; i++) {
		char a[65], b[65];

		sha_of(a, d1, names[i]);
		sha_of(b, d2, names[i]);
		ck_assert_msg(!strcmp(a, b), "%s differs between two materializations", names[i]);
	}
	fs_remove_tree(r1);
	fs_remove_tree(r2);
	free(d1);
	free(d2);
	free(r1);
	free(r2);
	task_spec_release(&s);
}
END_TEST

/* Every set: NaN past the lengths and in unused pages, sentinels, distinct pages in range. */
static void check_set_layout(const struct task_data *t, int k)
{
	const struct task_spec *s = &t->spec;
	const struct task_set *ts = &t->sets[k];
	int used[64] = { 0 };
	size_t row = 576;

	ck_assert_int_le(s->num_pages, 64);
	for (int b = 0; b < s->batch; b++) {
		int len = ts->seqlens[b];

		ck_assert_int_eq(len, s->seqlens[(b + k) % s->batch]);
		for (int p = 0; p < s->max_pages; p++) {
			int32_t page = ts->block_table[b * s->max_pages + p];

			if (p * s->page_size >= len) {
				ck_assert_msg(page == VS_BLOCK_TABLE_SENTINEL, "set %d b=%d page %d: %d, want "
					      "the sentinel", k, b, p, page);
				continue;
			}
			ck_assert_msg(page >= 0 && page < s->num_pages && !used[page], "set %d b=%d page "
				      "%d: bad or repeated page %d", k, b, p, page);
			used[page] = 1 + b * 1000 + p; /* remember the visible slots: */
			for (int slot = 0; slot < s->page_size; slot++) {
				int visible = p * s->page_size + slot < len;

				for (size_t d = 0; d < row; d++) {
					size_t e = ((size_t)page * s->page_size + slot) * row + d;
					double v = s->kv_dtype == MLA_KV_BF16 ?
						mla_bf16_to_float(((const uint16_t *)ts->kv_cache)[e]) :
						mla_fp8_e4m3_fnuz_to_float(((const uint8_t *)ts->kv_cache)[e]);

					if (visible)
						ck_assert_msg(isfinite(v), "set %d b=%d pos %d d=%zu: %g", k, b,
							      p * s->page_size + slot, d, v);
					else if (s->kv_dtype == MLA_KV_BF16)
						ck_assert_uint_eq(((const uint16_t *)ts->kv_cache)[e], 0x7fc0);
					else
						ck_assert_uint_eq(((const uint8_t *)ts->kv_cache)[e], 0x80);
				}
			}
		}
	}
	for (int page = 0; page < s->num_pages; page++) {
		if (used[page])
			continue;
		for (size_t e = (size_t)page * s->page_size * row; e < (size_t)(page + 1) * s->page_size * row; e++) {
			if (s->kv_dtype == MLA_KV_BF16)
				ck_assert_msg(((const uint16_t *)ts->kv_cache)[e] == 0x7fc0,
					      "unused page %d is not NaN", page);
			else
				ck_assert_msg(((const uint8_t *)ts->kv_cache)[e] == 0x80,
					      "unused page %d is not NaN", page);
		}
	}
}

START_TEST(inputs_have_nan_tails_sentinels_and_rotated_sets)
{
	struct task_spec s;
	struct task_data t;
	char *root = tu_tmpdir(), *dir;

	tiny_spec(&s, _i == 0 ? MLA_KV_BF16 : MLA_KV_FP8_E4M3_FNUZ);
	dir = materialize(root, &s);
	ck_assert_msg(task_load(&t, dir) == 0, "task_load: %s", vs_last_error());
	ck_assert_int_eq(t.nsets, 2);
	for (int k = 0; k < 2; k++) {
		check_set_layout(&t, k);
		/* references are finite where a query sees keys, +inf lse where it sees none */
		for (int b = 0; b < 3; b++)
			for (int i = 0; i < 2; i++)
				for (int h = 0; h < 2; h++) {
					float lse = t.sets[k].ref_lse[(b * 2 + h) * 2 + i];
					int n = t.sets[k].seqlens[b] - 2 + 1 + i;

					ck_assert_msg(n > 0 ? isfinite(lse) : isinf(lse), "set %d b=%d s=%d "
						      "h=%d: lse %g for %d keys", k, b, i, h, (double)lse, n);
				}
	}
	ck_assert_int_eq(t.sets[1].seqlens[0], 0);
	ck_assert_int_eq(t.sets[1].seqlens[1], 9);
	ck_assert_int_eq(t.sets[1].seqlens[2], 5);
	ck_assert_msg(memcmp(t.sets[0].block_table, t.sets[1].block_table, t.sets[0].block_table_bytes),
		      "sets 0 and 1 have the same block_table");
	ck_assert_msg(memcmp(t.sets[0].q, t.sets[1].q, t.sets[0].q_bytes), "sets share q");
	task_data_release(&t);
	fs_remove_tree(root);
	free(dir);
	free(root);
	task_spec_release(&s);
}
END_TEST

START_TEST(fp8_inputs_contain_both_extreme_codes_and_kv_scale_is_amax_over_240)
{
	struct task_spec s;
	struct task_data t;
	char *root = tu_tmpdir(), *dir;

	tiny_spec(&s, MLA_KV_FP8_E4M3_FNUZ);
	dir = materialize(root, &s);
	ck_assert_int_eq(task_load(&t, dir), 0);
	for (int k = 0; k < 2; k++) {
		const uint8_t *kv = t.sets[k].kv_cache;
		int has7f = 0, hasff = 0;

		for (size_t e = 0; e < t.sets[k].kv_bytes; e++) {
			has7f |= kv[e] == 0x7f;
			hasff |= kv[e] == 0xff;
		}
		ck_assert_msg(has7f && hasff, "set %d: 0x7f %d, 0xff %d", k, has7f, hasff);
		/* amax is the clamp bound 1 in every set: one per-tensor scale for the task */
		ck_assert_msg(t.sets[k].kv_scale == 1.0f / 240, "set %d kv_scale %g", k, (double)t.sets[k].kv_scale);
	}
	ck_assert(t.sets[0].kv_scale == t.sets[1].kv_scale);
	task_data_release(&t);
	fs_remove_tree(root);
	free(dir);
	free(root);
	task_spec_release(&s);
}
END_TEST

START_TEST(load_returns_what_the_generator_produces)
{
	struct task_spec s;
	struct task_data t;
	char *root = tu_tmpdir(), *dir;

	tiny_spec(&s, MLA_KV_BF16);
	dir = materialize(root, &s);
	ck_assert_int_eq(task_load(&t, dir), 0);
	ck_assert_str_eq(t.dir, dir);
	ck_assert_int_eq(t.spec.batch, 3);
	for (int k = 0; k < 2; k++) {
		char *img = NULL, *file, name[64];
		size_t len = 0, flen = 0;
		float kv_scale = 0;
		struct st_file st;
		uint64_t seed = task_set_seed(&s, k);

		ck_assert_int_eq(mla_generate_inputs(&img, &len, &kv_scale, &s, k), 0);
		snprintf(name, sizeof(name), k ? "inputs.%d.safetensors" : "inputs.safetensors", k);
		file = path_in(dir, name);
		free(tu_read(file, &flen));
		{
			char *bytes = tu_read(file, &flen);

			ck_assert_uint_eq(flen, len);
			ck_assert_msg(!memcmp(bytes, img, len), "set %d: file differs from the generator", k);
			free(bytes);
		}
		ck_assert_int_eq(st_parse(&st, img, len, "generated"), 0);
		ck_assert(!memcmp(st_find(&st, "q")->data, t.sets[k].q, t.sets[k].q_bytes));
		ck_assert(!memcmp(st_find(&st, "kv_cache")->data, t.sets[k].kv_cache, t.sets[k].kv_bytes));
		ck_assert(!memcmp(st_find(&st, "block_table")->data, t.sets[k].block_table,
				  t.sets[k].block_table_bytes));
		ck_assert_str_eq(st_meta(&st, "generator"), VS_GENERATOR_VERSION);
		st_release(&st);
		/* any element from (seed, stream, index) alone */
		for (size_t e = 0; e < t.sets[k].q_bytes / 2; e += 97) {
			double x = rng_normal(seed, VS_STREAM_Q, e) * (task_set_is_softmax(&s, k) ? 1.0 : 0.1);
			uint16_t want = mla_float_to_bf16((float)(x < -1 ? -1 : x > 1 ? 1 : x));

			ck_assert_msg(((const uint16_t *)t.sets[k].q)[e] == want, "set %d q[%zu] = 0x%04x, "
				      "want 0x%04x", k, e, ((const uint16_t *)t.sets[k].q)[e], want);
		}
		free(file);
	}
	task_data_release(&t);
	fs_remove_tree(root);
	free(dir);
	free(root);
	task_spec_release(&s);
}
END_TEST

/* Large enough (over 2^20 cache elements) that generation runs on every CPU. */
START_TEST(generated_cache_follows_the_documented_formula)
{
	struct task_spec s;
	int32_t lens[4] = { 700, 64, 0, 1000 };
	char *img = NULL;
	size_t len = 0;
	float kv_scale = 0;
	struct st_file st;
	const struct st_tensor *kv, *bt;
	uint64_t seed;
	int n7f = 0, nff = 0;

	tiny_spec(&s, _i == 0 ? MLA_KV_BF16 : MLA_KV_FP8_E4M3_FNUZ);
	s.batch = 4;
	memcpy(s.seqlens = realloc(s.seqlens, sizeof(lens)), lens, sizeof(lens));
	s.page_size = 64;
	s.max_pages = 16;
	s.num_pages = 32;
	s.s_q = 1;
	ck_assert_int_eq(vs_op_mla_decode.spec_validate(&s, "big"), 0);
	ck_assert_int_eq(mla_generate_inputs(&img, &len, &kv_scale, &s, 1), 0);
	ck_assert_int_eq(st_parse(&st, img, len, "generated"), 0);
	kv = st_find(&st, "kv_cache");
	bt = st_find(&st, "block_table");
	seed = task_set_seed(&s, 1);
	for (int b = 0; b < 4; b++) {
		int blen = lens[(b + 1) % 4];

		for (int j = 0; j < blen; j += 7) {
			int32_t page = ((const int32_t *)bt->data)[b * 16 + j / 64];

			for (int d = 0; d < 576; d += 5) {
				size_t e = ((size_t)page * 64 + (size_t)(j % 64)) * 576 + (size_t)d;
				double x = rng_normal(seed, VS_STREAM_KV, e) * (task_set_is_softmax(&s, 1) ? 1.0 : 0.1);
				float v = (float)(x < -1 ? -1 : x > 1 ? 1 : x);

				if (s.kv_dtype == MLA_KV_BF16) {
					ck_assert_msg(((const uint16_t *)kv->data)[e] == mla_float_to_bf16(v),
						      "b=%d j=%d d=%d", b, j, d);
				} else {
					uint8_t c = ((const uint8_t *)kv->data)[e];

					if (c == 0x7f || c == 0xff)
						continue; /* possibly one of the two forced extremes */
					ck_assert_msg(c == vs_fp8_e4m3_fnuz_encode(v / kv_scale),
						      "b=%d j=%d d=%d: 0x%02x", b, j, d, c);
				}
			}
		}
	}
	if (s.kv_dtype == MLA_KV_FP8_E4M3_FNUZ) {
		for (size_t e = 0; e < kv->bytes; e++) {
			n7f += ((const uint8_t *)kv->data)[e] == 0x7f;
			nff += ((const uint8_t *)kv->data)[e] == 0xff;
		}
		ck_assert_msg(n7f >= 1 && nff >= 1, "0x7f x%d, 0xff x%d", n7f, nff);
	}
	st_release(&st);
	task_spec_release(&s);
}
END_TEST

/* ---- tampering ------------------------------------------------------------------------------ */

enum tamper_op { FLIP, DELETE, ADD, TRUNCATE, EDIT };

static const struct {
	enum tamper_op op;
	const char *file;
	const char *find;      /* EDIT: replace this text ... */
	const char *replace;   /* ... with this */
	const char *expect;    /* substring of the error */
} tampers[] = {
	{ FLIP, "inputs.safetensors", NULL, NULL, "inputs.safetensors': sha256 is" },
	{ FLIP, "inputs.1.safetensors", NULL, NULL, "inputs.1.safetensors': sha256 is" },
	{ FLIP, "reference.safetensors", NULL, NULL, "reference.safetensors': sha256 is" },
	{ FLIP, "reference.1.safetensors", NULL, NULL, "reference.1.safetensors': sha256 is" },
	{ FLIP, "manifest.json", NULL, NULL, "manifest.json" },
	{ EDIT, "manifest.json", "\"kv_scale\":\t1,", "\"kv_scale\":\t2,",
	  "manifest.json': manifest kv_scale of set 0 is 2" },
	{ EDIT, "manifest.json", "tiny-bf16", "tiny-bf17", "manifest.json': its spec hashes to" },
	{ EDIT, "manifest.json", "\"format\"", " \"format\"", "manifest.json' differs from the canonical" },
	{ EDIT, "manifest.json", "\"operator\":", "\"operator\" :", "manifest.json' differs" },
	{ EDIT, "manifest.json", "{", "[", "manifest.json' is not valid JSON" },
	{ DELETE, "reference.safetensors", NULL, NULL, "reference.safetensors' is missing" },
	{ DELETE, "inputs.1.safetensors", NULL, NULL, "inputs.1.safetensors' is missing" },
	{ DELETE, "manifest.json", NULL, NULL, "manifest.json' is missing" },
	{ ADD, "extra.txt", NULL, NULL, "extra.txt' is not listed in the manifest" },
	{ TRUNCATE, "inputs.safetensors", NULL, NULL, "inputs.safetensors' has" },
};

static void tamper(const char *dir, int i)
{
	char *p = path_in(dir, tampers[i].file);
	size_t len = 0;
	char *buf;

	chmod(dir, 0755);
	if (tampers[i].op != ADD)
		chmod(p, 0644);
	switch (tampers[i].op) {
	case FLIP:
		buf = tu_read(p, &len);
		buf[len / 2] ^= 0x01;
		tu_write(p, buf, len);
		free(buf);
		break;
	case TRUNCATE:
		buf = tu_read(p, &len);
		tu_write(p, buf, len - 1);
		free(buf);
		break;
	case DELETE:
		ck_assert_int_eq(unlink(p), 0);
		break;
	case ADD:
		tu_write(p, "x", 1);
		break;
	case EDIT: {
		char *at, *out;

		buf = tu_read(p, &len);
		at = strstr(buf, tampers[i].find);
		ck_assert_msg(at != NULL, "'%s' not in the manifest:\n%s", tampers[i].find, buf);
		*at = '\0';
		out = fs_printf("%s%s%s", buf, tampers[i].replace, at + strlen(tampers[i].find));
		tu_write(p, out, strlen(out));
		free(out);
		free(buf);
		break;
	}
	}
	free(p);
}

START_TEST(tampering_is_detected_and_named)
{
	struct task_spec s;
	struct task_data t;
	char *root = tu_tmpdir(), *dir, *again = NULL;
	int rc;

	tiny_spec(&s, MLA_KV_BF16);
	dir = materialize(root, &s);
	tamper(dir, _i);
	vs_error_set_quiet(1);
	rc = task_verify(dir);
	vs_error_set_quiet(0);
	ck_assert_msg(rc == VS_EVERIFY, "tamper %d (%s): verify returned %d (%s)", _i, tampers[_i].file,
		      rc, vs_last_error());
	ck_assert_msg(strstr(vs_last_error(), tampers[_i].expect) != NULL,
		      "tamper %d: error '%s' lacks '%s'", _i, vs_last_error(), tampers[_i].expect);
	vs_error_set_quiet(1);
	rc = task_load(&t, dir);
	ck_assert_int_eq(rc, VS_EVERIFY);
	/* materialize refuses the tampered dir and leaves it as it is */
	rc = task_materialize(&again, root, &s, 1);
	vs_error_set_quiet(0);
	ck_assert_int_eq(rc, VS_EVERIFY);
	ck_assert_ptr_null(again);
	ck_assert_msg(strstr(vs_last_error(), "refusing to overwrite") != NULL, "got '%s'",
		      vs_last_error());
	ck_assert_msg(strstr(vs_last_error(), tampers[_i].expect) != NULL, "got '%s'", vs_last_error());
	{
		char *p = path_in(dir, tampers[_i].file);

		ck_assert_int_eq(fs_exists(p), tampers[_i].op != DELETE);
		free(p);
	}
	fs_remove_tree(root);
	free(dir);
	free(root);
	task_spec_release(&s);
}
END_TEST

START_TEST(verify_refuses_a_dir_not_named_by_its_spec)
{
	struct task_spec s;
	char *root = tu_tmpdir(), *dir, *moved;
	int rc;

	tiny_spec(&s, MLA_KV_BF16);
	dir = materialize(root, &s);
	moved = fs_printf("%s/mla_decode/%064d", root, 0);
	ck_assert_int_eq(rename(dir, moved), 0);
	vs_error_set_quiet(1);
	rc = task_verify(moved);
	vs_error_set_quiet(0);
	ck_assert_int_eq(rc, VS_EVERIFY);
	ck_assert_msg(strstr(vs_last_error(), "is not the dir's name") != NULL, "got '%s'",
		      vs_last_error());
	fs_remove_tree(root);
	free(moved);
	free(dir);
	free(root);
	task_spec_release(&s);
}
END_TEST

/* ---- inputs over the store limit ------------------------------------------------------------ */

START_TEST(inputs_over_the_store_limit_are_regenerated_and_checked)
{
	struct task_spec s;
	struct task_data t;
	char *root = tu_tmpdir(), *dir, *p, *manifest;
	int rc;

	tiny_spec(&s, MLA_KV_FP8_E4M3_FNUZ);
	setenv("VS_TASK_STORE_LIMIT_BYTES", "1000", 1);
	ck_assert_uint_eq(task_store_limit(), 1000);
	dir = materialize(root, &s);
	unsetenv("VS_TASK_STORE_LIMIT_BYTES");
	p = path_in(dir, "inputs.safetensors");
	ck_assert_msg(!fs_exists(p), "inputs over the limit were stored");
	free(p);
	p = path_in(dir, "reference.1.safetensors");
	ck_assert(fs_exists(p));
	free(p);
	p = path_in(dir, "manifest.json");
	manifest = tu_read(p, NULL);
	ck_assert_msg(strstr(manifest, "\"generated\":\ttrue") != NULL, "manifest:\n%s", manifest);
	ck_assert_int_eq(task_verify(dir), 0);
	ck_assert_msg(task_load(&t, dir) == 0, "load: %s", vs_last_error());
	for (int k = 0; k < 2; k++) {
		char *img = NULL;
		size_t len = 0;
		float kv_scale;
		struct st_file st;

		ck_assert_int_eq(mla_generate_inputs(&img, &len, &kv_scale, &s, k), 0);
		ck_assert_int_eq(st_parse(&st, img, len, "generated"), 0);
		ck_assert(!memcmp(st_find(&st, "kv_cache")->data, t.sets[k].kv_cache, t.sets[k].kv_bytes));
		ck_assert(kv_scale == t.sets[k].kv_scale);
		st_release(&st);
		check_set_layout(&t, k);
	}
	task_data_release(&t);
	/* the sha256 of generated inputs is covered: edit it in the manifest */
	{
		char *at = strstr(manifest, "\"generated\":\ttrue");
		char *sha = strstr(at, "\"sha256\":\t\"") + 11;

		sha[0] = sha[0] == 'a' ? 'b' : 'a';
		chmod(dir, 0755);
		chmod(p, 0644);
		tu_write(p, manifest, strlen(manifest));
		vs_error_set_quiet(1);
		rc = task_verify(dir);
		vs_error_set_quiet(0);
		ck_assert_int_eq(rc, VS_EVERIFY);
		ck_assert_msg(strstr(vs_last_error(), "the reference was computed from") != NULL,
			      "got '%s'", vs_last_error());
	}
	fs_remove_tree(root);
	free(manifest);
	free(p);
	free(dir);
	free(root);
	task_spec_release(&s);
}
END_TEST

/* ---- page_offset ---------------------------------------------------------------------------- */

START_TEST(page_offset_moves_page_indices_past_4_gib_without_storing_them)
{
	struct task_spec s0, s1;
	struct task_data t0, t1;
	char *root = tu_tmpdir(), *d0, *d1;

	tiny_spec(&s0, MLA_KV_BF16);
	tiny_spec(&s1, MLA_KV_BF16);
	s1.page_offset = 1000000; /* x 4608 bytes per page: byte offsets near 4.6e9 > 2^32 */
	ck_assert(s1.page_offset * (int64_t)mla_task_page_bytes(&s1) > ((int64_t)1 << 32));
	d0 = materialize(root, &s0);
	d1 = materialize(root, &s1);
	ck_assert_int_eq(task_load(&t0, d0), 0);
	ck_assert_int_eq(task_load(&t1, d1), 0);
	for (int k = 0; k < 2; k++) {
		ck_assert_uint_eq(t1.sets[k].kv_bytes, t0.sets[k].kv_bytes);
		ck_assert(!memcmp(t0.sets[k].kv_cache, t1.sets[k].kv_cache, t0.sets[k].kv_bytes));
		for (int i = 0; i < 9; i++) {
			int32_t a = t0.sets[k].block_table[i], b = t1.sets[k].block_table[i];

			ck_assert_msg(a == VS_BLOCK_TABLE_SENTINEL ? b == a : b == a + 1000000,
				      "set %d entry %d: %d vs %d", k, i, a, b);
		}
		ck_assert(!memcmp(t0.sets[k].ref_out, t1.sets[k].ref_out, t0.sets[k].out_elems * 4));
		ck_assert(!memcmp(t0.sets[k].ref_lse, t1.sets[k].ref_lse, t0.sets[k].lse_elems * 4));
	}
	task_data_release(&t0);
	task_data_release(&t1);
	fs_remove_tree(root);
	free(d0);
	free(d1);
	free(root);
	task_spec_release(&s0);
	task_spec_release(&s1);
}
END_TEST

START_TEST(materialize_refuses_an_invalid_spec)
{
	struct task_spec s;
	char *root = tu_tmpdir(), *dir = NULL;
	int rc;

	tiny_spec(&s, MLA_KV_BF16);
	s.num_pages = 2;
	vs_error_set_quiet(1);
	rc = task_materialize(&dir, root, &s, 1);
	vs_error_set_quiet(0);
	ck_assert_int_eq(rc, VS_ESCHEMA);
	ck_assert_ptr_null(dir);
	fs_remove_tree(root);
	free(root);
	task_spec_release(&s);
}
END_TEST

/* ---- the sparse form's inputs (issue 36) ----------------------------------------------------- */

/* One cache of a parsed sparse inputs file. */
struct sparse_view {
	const uint8_t *kv;
	const int32_t *bt, *lens, *idx, *len;
	int32_t page_size, max_pages, num_pages, topk;
	uint64_t stream_kv;
};

static const void *tensor_data(const struct st_file *f, const char *name)
{
	const struct st_tensor *t = st_find(f, name);

	return t ? t->data : NULL;
}

static void sparse_view_of(struct sparse_view *v, const struct st_file *f, const struct task_spec *s, int extra)
{
	memset(v, 0, sizeof(*v));
	v->kv = tensor_data(f, extra ? "extra_kv_cache" : "kv_cache");
	v->bt = tensor_data(f, extra ? "extra_block_table" : "block_table");
	v->lens = tensor_data(f, extra ? "extra_seqlens" : "seqlens");
	v->idx = tensor_data(f, extra ? "extra_indices" : "indices");
	v->len = tensor_data(f, extra ? "extra_topk_length" : "topk_length");
	v->page_size = extra ? s->extra_page_size : s->page_size;
	v->max_pages = extra ? s->extra_max_pages : s->max_pages;
	v->num_pages = extra ? s->extra_num_pages : s->num_pages;
	v->topk = extra ? s->extra_topk : s->topk;
	v->stream_kv = extra ? VS_STREAM_EXTRA_KV : VS_STREAM_KV;
	ck_assert(v->kv && v->bt && v->lens && v->idx);
	ck_assert_msg(!!v->len == !!(extra ? s->extra_topk_length : s->topk_length), "topk_length presence");
}

/* 1 when cache row r holds the format's NaN pattern, byte for byte. */
static int row_is_nan(int32_t kv_dtype, const uint8_t *kv, int32_t page_size, int32_t r)
{
	const uint8_t *page = kv + (size_t)(r / page_size) * mla_kv_page_bytes(kv_dtype, page_size);
	int slot = r % page_size, fnuz = mla_kv_is_fnuz(kv_dtype);
	uint8_t code = fnuz ? 0x80 : 0x7f;

	if (kv_dtype == MLA_KV_BF16) {
		for (int d = 0; d < 576; d++)
			if (((const uint16_t *)page)[(size_t)slot * 576 + d] != 0x7fc0)
				return 0;
		return 1;
	}
	if (!mla_kv_is_model1(kv_dtype)) {
		const uint8_t *t = page + (size_t)slot * 656;

		for (int i = 0; i < 512; i++)
			if (t[i] != code)
				return 0;
		for (int k = 0; k < 4; k++)
			if (mla_float_to_bits(mla_load_f32(t + 512 + 4 * k)) != 0x7fc00000u)
				return 0;
		for (int d = 0; d < 64; d++)
			if (t[528 + 2 * d] != 0xc0 || t[529 + 2 * d] != 0x7f)
				return 0;
		return 1;
	}
	{
		const uint8_t *t = page + (size_t)slot * 576, *sc = page + (size_t)page_size * 576 + (size_t)slot * 8;

		for (int i = 0; i < 448; i++)
			if (t[i] != code)
				return 0;
		for (int d = 0; d < 64; d++)
			if (t[448 + 2 * d] != 0xc0 || t[449 + 2 * d] != 0x7f)
				return 0;
		for (int k = 0; k < 7; k++)
			if (sc[k] != 0xff)
				return 0;
		return 1;
	}
}

/*
 * Selected row r against the documented value: bf16 rows exactly, fp8 rows within the block's
 * scale step, the scale itself FlashMLA's 2^ceil(log2(max(amax / fmax, 1e-4))), RoPE exact.
 */
static void check_selected_row(const struct task_spec *s, int k, const struct sparse_view *v, int32_t r)
{
	int d_qk = mla_kv_d_qk(s->kv_dtype), fnuz = mla_kv_is_fnuz(s->kv_dtype);
	int d_lat = d_qk - 64, blk = mla_kv_is_model1(s->kv_dtype) ? 64 : 128;
	double sd = task_set_is_softmax(s, k) ? 1.0 : 0.1;
	float x[576], dec[576];
	uint64_t seed = task_set_seed(s, k);

	for (int d = 0; d < d_qk; d++) {
		double y = rng_normal(seed, v->stream_kv, (uint64_t)r * d_qk + d) * sd;

		y = y < -1 ? -1 : y > 1 ? 1 : y;
		x[d] = mla_bf16_to_float(mla_float_to_bf16((float)y));
	}
	if (s->kv_dtype == MLA_KV_BF16) {
		for (int d = 0; d < 576; d++)
			ck_assert_msg(mla_bf16_to_float(((const uint16_t *)v->kv)[(size_t)r * 576 + d]) == x[d],
				      "bf16 row %d d %d", r, d);
		return;
	}
	ck_assert_int_eq(mla_kv_decode_token(s->kv_dtype,
					     v->kv + (size_t)(r / v->page_size) *
							     mla_kv_page_bytes(s->kv_dtype, v->page_size),
					     v->page_size, r % v->page_size, dec),
			 d_qk);
	for (int b0 = 0; b0 < d_lat; b0 += blk) {
		float amax = 0, ratio, scale;

		for (int d = b0; d < b0 + blk; d++)
			amax = fmaxf(amax, fabsf(x[d]));
		ratio = fmaxf(amax / (fnuz ? 240.0f : 448.0f), 1e-4f);
		scale = exp2f(ceilf(log2f(ratio)));
		for (int d = b0; d < b0 + blk; d++) {
			double err = fabs((double)dec[d] - x[d]);

			ck_assert_msg(isfinite(dec[d]) && err <= fabs(x[d]) / 16 + scale / 1024,
				      "%s row %d d %d: decoded %g, value %g, scale %g", mla_kv_dtype_name(s->kv_dtype),
				      r, d, (double)dec[d], (double)x[d], (double)scale);
		}
		/* the block's largest value lands in the top binade of the codes: the scale is tight */
		ck_assert_msg(amax == 0 || amax / scale > (fnuz ? 120.0f : 224.0f) || scale == exp2f(-13),
			      "row %d block %d: scale %g for amax %g", r, b0 / blk, (double)scale, (double)amax);
	}
	for (int d = d_lat; d < d_qk; d++)
		ck_assert_msg(dec[d] == x[d], "rope row %d d %d: %g vs %g", r, d, (double)dec[d], (double)x[d]);
}

/* The indexer rules of task.h on one cache of set k, and the cache's rows: selected or NaN. */
static void check_sparse_cache(const struct task_spec *s, int k, const struct sparse_view *v, int extra)
{
	int32_t rows = v->num_pages * v->page_size;
	int32_t *owner = malloc((size_t)rows * sizeof(int32_t)); /* b * 2^20 + key, or -1 */
	uint8_t *selected = calloc((size_t)rows, 1), *seen = calloc((size_t)rows, 1);
	int nlen0 = 0, nlenfull = 0;

	ck_assert(owner && selected && seen);
	for (int32_t r = 0; r < rows; r++)
		owner[r] = -1;
	for (int b = 0; b < s->batch; b++) {
		ck_assert_int_eq(v->lens[b], (extra ? s->extra_seqlens : s->seqlens)[(b + k) % s->batch]);
		for (int32_t j = 0; j * v->page_size < v->lens[b]; j++)
			for (int32_t sl = 0; sl < v->page_size && j * v->page_size + sl < v->lens[b]; sl++) {
				int32_t r = v->bt[b * v->max_pages + j] * v->page_size + sl;

				ck_assert(r >= 0 && r < rows && owner[r] == -1);
				owner[r] = b * (1 << 20) + j * v->page_size + sl;
			}
	}
	for (int b = 0; b < s->batch; b++) {
		int32_t n = v->lens[b], len = v->len ? v->len[b] : v->topk;

		ck_assert_msg(len >= 0 && len <= v->topk, "topk_length[%d] = %d", b, len);
		nlen0 += len == 0;
		nlenfull += len == v->topk;
		for (int i = 0; i < s->s_q; i++) {
			const int32_t *row = v->idx + ((size_t)b * s->s_q + i) * v->topk;
			int32_t valid = 0, want = n < v->topk ? n : v->topk, last = 0;

			for (int32_t t = 0; t < v->topk; t++) {
				if (row[t] == -1)
					continue;
				ck_assert_msg(row[t] >= 0 && row[t] < rows && owner[row[t]] >= 0 &&
						      owner[row[t]] >> 20 == b,
					      "set %d %s b %d i %d t %d: %d is no key of sequence %d", k,
					      extra ? "extra" : "main", b, i, t, row[t], b);
				ck_assert_msg(!seen[row[t]], "set %d b %d i %d: %d repeated", k, b, i, row[t]);
				seen[row[t]] = 1;
				last |= (owner[row[t]] & 0xfffff) == n - 1;
				valid++;
				if (t < len)
					selected[row[t]] = 1;
			}
			for (int32_t t = 0; t < v->topk; t++)
				if (row[t] >= 0)
					seen[row[t]] = 0;
			ck_assert_msg(valid <= want && valid >= want - want / 16, "b %d i %d: %d valid of %d", b, i,
				      valid, want);
			ck_assert_msg(n == 0 || last, "b %d i %d: the last key %d is not chosen", b, i, n - 1);
		}
	}
	if (v->len && s->batch > 1)
		ck_assert_msg(nlen0 >= 1 && nlenfull >= 1, "topk_length lacks its edges (0 x%d, topk x%d)", nlen0,
			      nlenfull);
	for (int32_t r = 0; r < rows; r++) {
		if (selected[r])
			check_selected_row(s, k, v, r);
		else
			ck_assert_msg(row_is_nan(s->kv_dtype, v->kv, v->page_size, r),
				      "set %d %s row %d is selected by no valid entry but is not NaN", k,
				      extra ? "extra" : "main", r);
	}
	free(owner);
	free(selected);
	free(seen);
}

static void check_sparse_inputs(const struct task_spec *s, int k, const char *buf, size_t len)
{
	struct st_file f = { 0 };
	struct sparse_view v;
	char *copy = malloc(len);
	const float *sink;

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, buf, len);
	ck_assert_int_eq(st_parse(&f, copy, len, "inputs"), 0);
	ck_assert_int_eq(f.count, 4 + 1 + s->topk_length + s->attn_sink + (s->extra_topk ? 4 + s->extra_topk_length : 0));
	sparse_view_of(&v, &f, s, 0);
	check_sparse_cache(s, k, &v, 0);
	if (s->extra_topk) {
		sparse_view_of(&v, &f, s, 1);
		check_sparse_cache(s, k, &v, 1);
	}
	sink = tensor_data(&f, "attn_sink");
	ck_assert(!!sink == !!s->attn_sink);
	for (int h = 0; sink && h < s->h_q; h++) {
		float want = s->h_q >= 4 && h == s->h_q - 1 ? INFINITY :
			     s->h_q >= 4 && h == s->h_q - 2 ? -INFINITY :
							      (float)rng_normal(s->seed, VS_STREAM_ATTN_SINK, (uint64_t)h);

		ck_assert_msg(sink[h] == want, "attn_sink[%d] = %g, want %g", h, (double)sink[h], (double)want);
	}
	st_release(&f);
}

static const int32_t sparse_dtypes[] = { MLA_KV_BF16, MLA_KV_FP8_DS_MLA, MLA_KV_FP8_DS_MLA_FNUZ, MLA_KV_FP8_MODEL1,
					 MLA_KV_FP8_MODEL1_FNUZ };

START_TEST(sparse_inputs_follow_the_indexer_rules_and_formats)
{
	struct task_spec s;

	sparse_spec(&s, sparse_dtypes[_i / 2], _i % 2);
	s.h_q = 4; /* the sink's +-inf heads */
	for (int k = 0; k < s.input_sets; k++) {
		char *buf = NULL;
		size_t len = 0;
		float kv_scale = 0;

		ck_assert_msg(mla_generate_inputs(&buf, &len, &kv_scale, &s, k) == 0, "%s", vs_last_error());
		ck_assert(kv_scale == 1.0f);
		check_sparse_inputs(&s, k, buf, len);
		free(buf);
	}
	task_spec_release(&s);
}
END_TEST

/* A larger task (recent-window draws, several generator threads): same bytes for 1 and 3 threads. */
START_TEST(sparse_inputs_do_not_depend_on_the_thread_count)
{
	static const int32_t lens[8] = { 5000, 4097, 2048, 1, 0, 3000, 7000, 2049 };
	static const int32_t xlens[8] = { 300, 1, 0, 64, 200, 129, 700, 33 };
	struct task_spec s;
	char *b1 = NULL, *b3 = NULL;
	size_t l1 = 0, l3 = 0;
	float sc;

	sparse_spec(&s, _i ? MLA_KV_FP8_MODEL1 : MLA_KV_FP8_DS_MLA, 1);
	s.batch = 8;
	s.s_q = 4;
	s.topk = _i ? 128 : 2048;
	s.page_size = 64;
	s.max_pages = 110;
	s.num_pages = 450;
	s.extra_topk = _i ? 1024 : 64;
	s.extra_page_size = 64;
	s.extra_max_pages = 11;
	s.extra_num_pages = 30;
	free(s.seqlens);
	free(s.extra_seqlens);
	s.seqlens = malloc(sizeof(lens));
	s.extra_seqlens = malloc(sizeof(xlens));
	memcpy(s.seqlens, lens, sizeof(lens));
	memcpy(s.extra_seqlens, xlens, sizeof(xlens));
	ck_assert_msg(vs_op_mla_decode.spec_validate(&s, "big") == 0, "%s", vs_last_error());
	setenv("VS_GEN_THREADS", "1", 1);
	ck_assert_int_eq(mla_generate_inputs(&b1, &l1, &sc, &s, 1), 0);
	setenv("VS_GEN_THREADS", "3", 1);
	ck_assert_int_eq(mla_generate_inputs(&b3, &l3, &sc, &s, 1), 0);
	unsetenv("VS_GEN_THREADS");
	ck_assert_uint_eq(l1, l3);
	ck_assert_msg(!memcmp(b1, b3, l1), "the inputs differ between 1 and 3 generator threads");
	check_sparse_inputs(&s, 1, b1, l1);
	free(b1);
	free(b3);
	task_spec_release(&s);
}
END_TEST

START_TEST(sparse_counts_follow_flashmla)
{
	struct task_spec s;
	char *buf = NULL;
	size_t len = 0;
	float sc;
	struct st_file f = { 0 };
	double attended = 0, retrieved = 0;
	uint8_t *named;

	sparse_spec(&s, MLA_KV_FP8_DS_MLA, 1);
	ck_assert_int_eq(mla_generate_inputs(&buf, &len, &sc, &s, 0), 0);
	ck_assert_int_eq(st_parse(&f, buf, len, "inputs"), 0);
	for (int extra = 0; extra < 2; extra++) {
		struct sparse_view v;

		sparse_view_of(&v, &f, &s, extra);
		named = calloc((size_t)v.num_pages * v.page_size, 1);
		for (int b = 0; b < s.batch; b++)
			for (int i = 0; i < s.s_q; i++) {
				for (int t = 0; t < v.len[b]; t++) {
					int32_t r = v.idx[((size_t)b * s.s_q + i) * v.topk + t];

					attended += r >= 0; /* valid entries only: the -1s do no work */
					if (r >= 0 && !named[r]) {
						named[r] = 1;
						retrieved++;
					}
				}
			}
		free(named);
	}
	ck_assert_msg(retrieved > 0 && attended > retrieved, "retrieved %g attended %g", retrieved, attended);
	ck_assert_double_eq(vs_op_mla_decode.flops(&s), 2.0 * s.h_q * attended * (576 + 512));
	ck_assert_double_eq(vs_op_mla_decode.bytes(&s), retrieved * 656 + 3.0 * 2 * 2 * 576 * 2 + 3.0 * 2 * 2 * 512 * 2);
	st_release(&f);
	task_spec_release(&s);
}
END_TEST

/* Materialize, verify, load: the loaded set is what the generator made, the reference the oracle's. */
START_TEST(sparse_task_dir_round_trips_and_detects_tampering)
{
	static const char *const tamper_files[] = { "reference.safetensors", "inputs.1.safetensors" };
	struct task_spec s;
	struct task_data t;
	char *root = tu_tmpdir(), *dir, *man, *mpath;
	size_t mlen = 0;

	sparse_spec(&s, _i ? MLA_KV_FP8_MODEL1_FNUZ : MLA_KV_FP8_DS_MLA, 1);
	if (_i) /* inputs over the store limit: not stored, regenerated and checked on load */
		setenv("VS_TASK_STORE_LIMIT_BYTES", "4096", 1);
	dir = materialize(root, &s);
	unsetenv("VS_TASK_STORE_LIMIT_BYTES");
	{
		char *in1 = path_in(dir, "inputs.1.safetensors");

		ck_assert_int_eq(fs_exists(in1), !_i);
		free(in1);
	}
	ck_assert_int_eq(task_verify(dir), 0);
	ck_assert_msg(task_load(&t, dir) == 0, "%s", vs_last_error());
	ck_assert_int_eq(t.nsets, 2);
	for (int k = 0; k < 2; k++) {
		const struct task_set *ts = &t.sets[k];
		struct task_input in[VS_TASK_MAX_INPUTS];
		struct mla_decode_args a;
		char *buf = NULL;
		size_t len = 0, off;
		float sc;
		int32_t *bt = NULL;
		float *out = malloc(ts->out_elems * 4), *lse = malloc(ts->lse_elems * 4);
		int n = task_set_inputs(in, ts);

		ck_assert_int_eq(n, 12);
		ck_assert_str_eq(in[4].name, "indices");
		ck_assert_str_eq(in[11].name, "extra_topk_length");
		ck_assert_int_eq(mla_generate_inputs(&buf, &len, &sc, &s, k), 0);
		off = len;
		for (int i = 0; i < n; i++)
			off -= in[i].bytes;
		for (int i = 0; i < n; i++) {
			ck_assert_msg(!memcmp(in[i].host, buf + off, in[i].bytes), "set %d '%s' differs", k,
				      in[i].name);
			off += in[i].bytes;
		}
		ck_assert_uint_eq(off, len);
		ck_assert_int_eq(mla_task_set_oracle_args(&a, &bt, &t.spec, ts, NULL), 0);
		ck_assert_ptr_null(bt);
		ck_assert(a.topk == 8 && a.extra_topk == 4 && a.indices == ts->indices && !a.block_table &&
			  a.d_qk == mla_kv_d_qk(s.kv_dtype) && a.attn_sink == ts->attn_sink);
		ck_assert_int_eq(mla_decode_reference(&a, out, lse, 3), MLA_OK);
		ck_assert_msg(!memcmp(out, ts->ref_out, ts->out_elems * 4) && !memcmp(lse, ts->ref_lse, ts->lse_elems * 4),
			      "set %d: the stored reference is not the oracle's", k);
		memset(out, 0, ts->out_elems * 4);
		memset(lse, 0, ts->lse_elems * 4);
		ck_assert_int_eq(vs_op_of(&t.spec)->reference(out, lse, &t.spec, ts, NULL, 2), 0);
		ck_assert_msg(!memcmp(out, ts->ref_out, ts->out_elems * 4) && !memcmp(lse, ts->ref_lse, ts->lse_elems * 4),
			      "set %d: the operator's reference is not the stored one", k);
		for (size_t e = 0; e < ts->lse_elems; e++)
			ck_assert_msg(!isnan(ts->ref_lse[e]), "lse %zu is NaN: an unselected row was read", e);
		free(out);
		free(lse);
		free(buf);
	}
	task_data_release(&t);
	mpath = path_in(dir, "manifest.json");
	man = tu_read(mpath, &mlen);
	free(mpath);
	ck_assert_msg(strstr(man, "\"extra_indices\":\t[3, 2, 4]") != NULL, "manifest shapes:\n%s", man);
	ck_assert_msg(strstr(man, "\"kv_cache\":\t[6, ") != NULL, "manifest kv_cache shape:\n%s", man);
	free(man);
	for (size_t i = 0; i < (_i ? 1 : 2); i++) { /* loop 1 stores no inputs file */
		char *p = path_in(dir, tamper_files[i]), *buf;
		size_t len = 0;
		int rc;

		chmod(dir, 0755);
		chmod(p, 0644);
		buf = tu_read(p, &len);
		buf[len - 3] ^= 0x01;
		tu_write(p, buf, len);
		vs_error_set_quiet(1);
		rc = task_verify(dir);
		vs_error_set_quiet(0);
		ck_assert_int_eq(rc, VS_EVERIFY);
		ck_assert_msg(strstr(vs_last_error(), "sha256 is") != NULL, "%s", vs_last_error());
		buf[len - 3] ^= 0x01;
		tu_write(p, buf, len);
		ck_assert_int_eq(task_verify(dir), 0);
		free(buf);
		free(p);
	}
	fs_remove_tree(root);
	free(dir);
	free(root);
	task_spec_release(&s);
}
END_TEST

static Suite *task_suite(void)
{
	Suite *s = suite_create("task");
	TCase *spec = tcase_create("spec");
	TCase *dir = tcase_create("dir");

	tcase_add_test(spec, spec_json_is_canonical_and_round_trips);
	tcase_add_test(spec, spec_hash_is_stable_across_builds);
	tcase_add_test(spec, spec_hash_changes_when_any_field_changes);
	tcase_add_loop_test(spec, validate_refuses_impossible_specs, 0,
			    (int)(sizeof(invalid) / sizeof(invalid[0])));
	tcase_add_test(spec, from_json_names_the_bad_key);
	tcase_add_test(spec, bytes_and_flops_follow_flashmla);
	tcase_add_test(spec, dense_spec_hash_is_pinned);
	tcase_add_test(spec, operator_table_names_mla_decode_for_both_forms);
	tcase_add_loop_test(spec, sparse_spec_json_round_trips, 0, 6);
	tcase_add_loop_test(spec, validate_refuses_inconsistent_sparse_specs, 0,
			    (int)(sizeof(sparse_invalid) / sizeof(sparse_invalid[0])));
	tcase_add_test(spec, from_json_refuses_sparse_keys_out_of_place);
	tcase_set_timeout(dir, 120);
	tcase_add_test(dir, materialize_writes_a_read_only_dir_named_by_the_hash);
	tcase_add_test(dir, materialize_is_deterministic_across_roots);
	tcase_add_loop_test(dir, inputs_have_nan_tails_sentinels_and_rotated_sets, 0, 2);
	tcase_add_test(dir, fp8_inputs_contain_both_extreme_codes_and_kv_scale_is_amax_over_240);
	tcase_add_test(dir, load_returns_what_the_generator_produces);
	tcase_add_loop_test(dir, generated_cache_follows_the_documented_formula, 0, 2);
	tcase_add_loop_test(dir, tampering_is_detected_and_named, 0,
			    (int)(sizeof(tampers) / sizeof(tampers[0])));
	tcase_add_test(dir, verify_refuses_a_dir_not_named_by_its_spec);
	tcase_add_test(dir, inputs_over_the_store_limit_are_regenerated_and_checked);
	tcase_add_test(dir, page_offset_moves_page_indices_past_4_gib_without_storing_them);
	tcase_add_test(dir, materialize_refuses_an_invalid_spec);
	tcase_add_loop_test(dir, sparse_inputs_follow_the_indexer_rules_and_formats, 0, 10);
	tcase_add_loop_test(dir, sparse_inputs_do_not_depend_on_the_thread_count, 0, 2);
	tcase_add_test(dir, sparse_counts_follow_flashmla);
	tcase_add_loop_test(dir, sparse_task_dir_round_trips_and_detects_tampering, 0, 2);
	suite_add_tcase(s, spec);
	suite_add_tcase(s, dir);
	return s;
}

int main(void)
{
	return tu_run_suite(task_suite());
}
