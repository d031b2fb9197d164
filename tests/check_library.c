/*
 * check_library.c - the field's skill library as it is (issue 38): GEAK's expert_skills layout
 * (skills/<id>/skill.md with scripts and docs beside it), three of its real cards, its template and
 * its index.yaml (tests/resources/geak/, copied verbatim; tests/resources/README.md names the
 * commits). The cards lint (one warning for a typed validation block, none for an operator that is
 * not planned here), the template is refused one line per placeholder, both layouts are walked and
 * resolved, index.yaml is written in GEAK's schema and reads back as GEAK's own, and GEAK's command
 * line works at a library root.
 */
#include "testutil.h"

#include "card.h"
#include "card_cmd.h"
#include "fsutil.h"
#include "library.h"
#include "vs_error.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

static char *tmp; /* a copy of tests/resources/geak: the library root */

/* Copy the tree src into dst (directories and regular files). */
static void copy_tree(const char *src, const char *dst)
{
	DIR *d = opendir(src);
	struct dirent *de;

	ck_assert_msg(d != NULL, "cannot open %s", src);
	fs_mkdir_p(dst);
	while ((de = readdir(d))) {
		char *s, *t;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		s = fs_join(src, de->d_name);
		t = fs_join(dst, de->d_name);
		if (fs_is_dir(s)) {
			copy_tree(s, t);
		} else {
			size_t len;
			char *text = tu_read(s, &len);

			tu_write(t, text, len);
			free(text);
		}
		free(s);
		free(t);
	}
	closedir(d);
}

static void setup(void)
{
	char *src = tu_resource("geak");

	tmp = tu_tmpdir();
	copy_tree(src, tmp);
	free(src);
}

static void teardown(void)
{
	fs_remove_tree(tmp);
	free(tmp);
}

static char *at(const char *rel)
{
	return fs_join(tmp, rel);
}

/* card_check_file(path) with stderr captured (returned, malloc'd) and its status in *rc. */
static char *lint_captured(const char *path, int *rc)
{
	char *err_path = at("stderr.txt"), *text;
	FILE *f = freopen(err_path, "w", stderr);
	int quiet = vs_error_set_quiet(0);

	ck_assert_ptr_nonnull(f);
	*rc = card_check_file(path);
	fflush(stderr);
	ck_assert_ptr_nonnull(freopen("/dev/null", "w", stderr));
	vs_error_set_quiet(quiet);
	text = tu_read(err_path, NULL);
	free(err_path);
	return text;
}

/* ---- the three real cards lint; a typed block is one warning ------------------------------ */

static const struct {
	const char *card;
	const char *warning; /* a substring of the one warning line */
	int has_isolated;    /* a number it types is read (never trusted: no report shows it) */
	int lines;           /* warning lines: the typed block's, and the sparse form's (issue 36) */
} real_cards[] = {
	/* fused-MoE, gfx942: an operator not planned here; gpu gfx942/MI300X, an empty artifact */
	{"skills/flydsl_rewrite_quantized_moe/skill.md", ":30:11: validation: a typed block (no artifact; no gen)", 1, 1},
	/* scope e2e, dense GEMM: numbers as text, parity with a remark, no artifact, a bare date */
	{"skills/flydsl_fp8_gemm_playbook/skill.md",
	 ":21:11: validation: a typed block (measured.isolated is '2.432x (down-proj h1)'; measured.e2e_pct is "
	 "'+67.4'; measured.parity is 'pass (greedy)'; no artifact; no gen)", 0, 1},
	/*
	 * MLA decode, strict enforcement: an artifact that is a doc, not an eval dir; a DeepSeek-V4 sparse
	 * decode whose match block selects the dense one (the second warning: what to add)
	 */
	{"skills/flash_mla_tilelang_to_triton/skill.md",
	 ":44:11: validation: a typed block (measured.isolated is 'see docs/optimize.md'", 0, 2},
};

START_TEST(real_cards_lint_with_one_warning)
{
	char *path = at(real_cards[_i].card);
	int rc;
	char *err = lint_captured(path, &rc);
	struct card c;

	ck_assert_msg(rc == 0, "%s: exit %d:\n%s", real_cards[_i].card, rc, err);
	ck_assert_msg(tu_count_lines(err) == real_cards[_i].lines && strstr(err, "warning") &&
			      strstr(err, real_cards[_i].warning),
		      "%s: want %d warning lines, one with '%s', got:\n%s", real_cards[_i].card, real_cards[_i].lines,
		      real_cards[_i].warning, err);
	ck_assert_msg(real_cards[_i].lines == 1 || strstr(err, "speaks of the sparse form ('deepseek_v4', line 47)"),
		      "%s", err);
	ck_assert_msg(strstr(err, "never counted verified"), "%s", err);
	ck_assert_int_eq(card_load(&c, path), 0);
	ck_assert_int_eq(c.validation.typed, 1);
	ck_assert_int_eq(c.validation.has_isolated, real_cards[_i].has_isolated);
	card_release(&c);
	free(err);
	free(path);
}
END_TEST

/* enforcement and match.profile_signature are kept byte for byte (unknown keys, their source text) */
START_TEST(field_keys_are_kept_verbatim)
{
	char *path = at("skills/flash_mla_tilelang_to_triton/skill.md"), *text = tu_read(path, NULL);
	struct card c;
	int found = 0;

	ck_assert_int_eq(card_load(&c, path), 0);
	for (int i = 0; i < c.unknown_count; i++) {
		if (!strcmp(c.unknown[i].path, "enforcement")) {
			found = 1;
			ck_assert_msg(strstr(text, c.unknown[i].text) != NULL, "enforcement not verbatim: %s",
				      c.unknown[i].text);
			ck_assert_msg(strstr(c.unknown[i].text, "require: {capture_safe: 1, correctness: all}") &&
					      strstr(c.unknown[i].text, "reweight_regime: decode"),
				      "%s", c.unknown[i].text);
		}
	}
	ck_assert_msg(found, "enforcement not kept");
	card_release(&c);
	free(text);
	free(path);
}
END_TEST

/*
 * What a plan does with the field's keys: enforcement's capture_safe is the plan's capture gate
 * (GPU plans), correctness is parity on every task; the rest is listed as not checked, with why.
 */
START_TEST(field_keys_are_honored_or_listed_as_not_checked)
{
	static const struct {
		const char *card;
		struct card_plan_facts facts;
		const char *want[4];
	} cases[] = {
		{"skills/flash_mla_tilelang_to_triton/skill.md",
		 {.capture_required = 1, .parity_required = 1, .e2e_stage = 0},
		 {"  enforcement.unittest.require.capture_safe: 1 -> honored: every implementation must pass the plan's "
		  "capture gate",
		  "  enforcement.unittest.require.correctness: all -> honored: parity against the oracle",
		  "  enforcement.targets.reweight_regime: decode -> not checked: this tool weights no regime",
		  "  enforcement.optimization.mandatory_specs: [fp8_fused_dequant, capture_safety_ensure_warmed, "}},
		{"skills/flash_mla_tilelang_to_triton/skill.md",
		 {.capture_required = 0, .parity_required = 1, .e2e_stage = 1},
		 {"  enforcement.unittest.require.capture_safe: 1 -> not checked: a CPU plan has no graph capture",
		  "  enforcement.targets.per_op_e2e_delta_pct_min: 5 -> not checked as a gate: the e2e stage measures",
		  "  enforcement.mode: strict -> not checked", NULL}},
		{"skills/flydsl_fp8_gemm_playbook/skill.md",
		 {.capture_required = 1, .parity_required = 1, .e2e_stage = 1},
		 {"  match.profile_signature.op_name_regex: gemm_a8w8_blockscale|down_proj -> not checked: a trigger",
		  "  match.profile_signature.min_pct_gpu: 10.0 -> not checked", NULL, NULL}},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *path = at(cases[i].card), *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);
		struct card c;
		int lines;

		ck_assert_int_eq(card_load(&c, path), 0);
		lines = card_print_field_keys(f, &c, &cases[i].facts);
		fclose(f);
		ck_assert_msg(lines > 0, "%s: %d", cases[i].card, lines);
		for (int k = 0; k < 4 && cases[i].want[k]; k++)
			ck_assert_msg(strstr(buf, cases[i].want[k]) != NULL, "case %zu lacks '%s':\n%s", i, cases[i].want[k],
				      buf);
		card_release(&c);
		free(buf);
		free(path);
	}
}
END_TEST

/*
 * What --record writes into GEAK's typed blocks (card_set_validation(), the edit --record makes
 * after verifying an eval dir): the measured block in place of the typed one, in the card's own
 * styles (block mapping, flow mapping, a comment after a value), every byte outside `validation`
 * unchanged, and the result no longer typed.
 */
START_TEST(record_edit_replaces_a_typed_block_in_place)
{
	struct card_validation v;

	memset(&v, 0, sizeof(v));
	v.status = "validated";
	v.last_verified = "2026-12-05";
	v.gpu = "AMD Instinct MI300X";
	v.gen = "gfx942";
	v.model = "Kimi-K2.6-int4-W4A16";
	v.has_isolated = 1;
	v.measured_isolated = 3.512;
	v.measured_parity = "pass";
	v.artifact = "results/x/20261205T000000Z-gfx942";
	v.impl_baseline = "triton.moe";
	v.impl_candidate = "flydsl.moe";
	for (size_t i = 0; i < sizeof(real_cards) / sizeof(real_cards[0]); i++) {
		char *path = at(real_cards[i].card), *out = NULL, *fm_after;
		size_t len = 0;
		struct card c, after;
		const char *vb, *ve;

		ck_assert_int_eq(card_load(&c, path), 0);
		ck_assert_msg(card_set_validation(&out, &len, &c, &v) == 0, "%s: %s", real_cards[i].card,
			      vs_last_error());
		ck_assert_int_eq(card_parse(&after, path, out, len), 0);
		ck_assert_msg(!after.validation.typed, "%s: still typed: %s", real_cards[i].card,
			      after.validation.typed_why);
		ck_assert_double_eq(after.validation.measured_isolated, 3.512);
		ck_assert_str_eq(after.validation.gen, "gfx942");
		/* the text before `validation:` is the card's own, byte for byte */
		vb = strstr(c.text, "\nvalidation:");
		ck_assert_ptr_nonnull(vb);
		ck_assert_msg(!strncmp(out, c.text, (size_t)(vb - c.text)), "%s: text before validation changed",
			      real_cards[i].card);
		/* and the text from `role:` on */
		ve = strstr(vb, "\nrole: advisory_prior");
		fm_after = strstr(out, "\nrole: advisory_prior");
		ck_assert_msg(ve && fm_after && !strcmp(ve, fm_after), "%s: text after validation changed",
			      real_cards[i].card);
		card_release(&after);
		card_release(&c);
		free(out);
		free(path);
	}
}
END_TEST

/* ---- GEAK's template: refused, one line per placeholder and per empty section -------------- */

START_TEST(template_is_refused_one_line_per_placeholder)
{
	static const char *const lines[] = {
		":2:5: id: 'REPLACE_with_kebab_slug' is the template's placeholder",
		":3:8: title: 'REPLACE — one line: operator + scenario + (migration from->to)' is the template's",
		":5:10: authors: 'REPLACE' is the template's placeholder",
		":9:13: match.operator: 'REPLACE' is the template's placeholder",
		":39:1: body: section '## When to use' is empty",
		":42:1: body: section '## Mechanism' is empty",
		":45:1: body: section '## Procedure' is empty",
		":50:1: body: section '## Knobs & pitfalls' is empty",
		":53:1: body: section '## Do-no-harm notes' is empty",
		":57:1: body: section '## Sources' is empty",
	};
	char *path = at("_template/SKILL_TEMPLATE.md");
	int rc;
	char *err = lint_captured(path, &rc);

	ck_assert_int_eq(rc, VS_ESCHEMA);
	ck_assert_msg(tu_count_lines(err) == (int)(sizeof(lines) / sizeof(lines[0])), "want %d lines, got:\n%s",
		      (int)(sizeof(lines) / sizeof(lines[0])), err);
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		char *want = fs_printf("%s%s", path, lines[i]);

		ck_assert_msg(strstr(err, want) != NULL, "missing line\n %s\nin:\n%s", want, err);
		free(want);
	}
	free(err);
	free(path);
}
END_TEST

/* ---- both layouts ------------------------------------------------------------------------- */

START_TEST(both_layouts_are_listed_and_extra_files_are_not_cards)
{
	char *skills = at("skills"), *flat = at("skills/ours_flat.md"), *src = tu_resource("cards/ok_minimal.md");
	char *text = tu_read(src, NULL), *p = NULL;
	struct library_cards l;

	tu_write(flat, text, strlen(text));
	ck_assert_int_eq(library_list(&l, skills), 0);
	ck_assert_int_eq(l.count, 4);
	ck_assert_msg(strstr(l.paths[0], "skills/flash_mla_tilelang_to_triton/skill.md") &&
			      strstr(l.paths[1], "skills/flydsl_fp8_gemm_playbook/skill.md") &&
			      strstr(l.paths[2], "skills/flydsl_rewrite_quantized_moe/skill.md") &&
			      strstr(l.paths[3], "skills/ours_flat.md"),
		      "%s %s %s %s", l.paths[0], l.paths[1], l.paths[2], l.paths[3]);
	library_cards_release(&l);
	/* an id resolves to either layout */
	ck_assert_int_eq(library_resolve(&p, skills, "flydsl_fp8_gemm_playbook"), 0);
	ck_assert_msg(strstr(p, "skills/flydsl_fp8_gemm_playbook/skill.md") != NULL, "%s", p);
	free(p);
	ck_assert_int_eq(library_resolve(&p, skills, "ours_flat"), 0);
	ck_assert_msg(strstr(p, "skills/ours_flat.md") != NULL, "%s", p);
	free(p);
	vs_error_set_quiet(1);
	ck_assert_int_eq(library_resolve(&p, skills, "no_such_skill"), VS_ENOTFOUND);
	ck_assert_msg(strstr(vs_last_error(), "no_such_skill/skill.md") && strstr(vs_last_error(), "no_such_skill.md"),
		      "%s", vs_last_error());
	/* one id in both layouts is refused, by name */
	free(flat);
	flat = at("skills/flydsl_fp8_gemm_playbook.md");
	tu_write(flat, text, strlen(text));
	ck_assert_int_eq(library_resolve(&p, skills, "flydsl_fp8_gemm_playbook"), VS_ESCHEMA);
	ck_assert_int_eq(library_list(&l, skills), VS_ESCHEMA);
	ck_assert_msg(strstr(vs_last_error(), "both hold card 'flydsl_fp8_gemm_playbook'"), "%s", vs_last_error());
	vs_error_set_quiet(0);
	free(text);
	free(src);
	free(flat);
	free(skills);
}
END_TEST

START_TEST(card_id_comes_from_either_layout)
{
	static const char *const cases[][2] = {
		{"skills/a/skill.md", "a"},   {"/x/skills/b_c/skill.md", "b_c"}, {"skills/d.md", "d"},
		{"skill.md", "skill"},        {"skills/skill.md", "skills"},     {"e//skill.md", "e"},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *id = card_id_of_path(cases[i][0]);

		ck_assert_msg(!strcmp(id, cases[i][1]), "card_id_of_path(%s) = %s, want %s", cases[i][0], id,
			      cases[i][1]);
		free(id);
	}
}
END_TEST

/* ---- index.yaml in GEAK's schema ---------------------------------------------------------- */

/* text from its first line that does not start with '#' */
static const char *past_comments(const char *text)
{
	while (*text == '#') {
		text = strchr(text, '\n');
		ck_assert_ptr_nonnull(text);
		text++;
	}
	return text;
}

/* text with every from replaced by to (malloc'd) */
static char *replace_all(const char *text, const char *from, const char *to)
{
	char *out = strdup(""), *next;
	const char *s = text, *hit;

	while ((hit = strstr(s, from))) {
		next = fs_printf("%s%.*s%s", out, (int)(hit - s), s, to);
		free(out);
		out = next;
		s = hit + strlen(from);
	}
	next = fs_printf("%s%s", out, s);
	free(out);
	return next;
}

START_TEST(index_matches_geaks_own_and_is_byte_stable)
{
	char *index = at("index.yaml"), *geak = at("geak_index.yaml"), *first, *second, *theirs, *want;
	int n = 0;

	ck_assert_msg(library_reindex(tmp, &n) == 0, "%s", vs_last_error());
	ck_assert_int_eq(n, 3);
	first = tu_read(index, NULL);
	ck_assert_msg(library_reindex(tmp, &n) == 0, "%s", vs_last_error());
	second = tu_read(index, NULL);
	ck_assert_str_eq(first, second);
	/*
	 * GEAK's own index of the same three cards (written by its scaffold.py), from its schema line
	 * on, byte for byte, but for the status: the three typed blocks are indexed stale
	 * (docs/DESIGN.md "Skill libraries").
	 */
	theirs = tu_read(geak, NULL);
	want = replace_all(past_comments(theirs), "validation_status: validated", "validation_status: stale");
	ck_assert_msg(!strcmp(past_comments(first), want), "ours:\n%s\nwant:\n%s", past_comments(first), want);
	ck_assert_msg(strstr(first, "\nschema: {id, file, scope, match, expects, validation_status, enforcement?}\n"),
		      "%s", first);
	free(want);
	free(theirs);
	free(first);
	free(second);
	free(geak);
	free(index);
}
END_TEST

/* A non-empty runtime contract (GEAK's template: "indexed and checked before a skill applies") is indexed. */
START_TEST(index_carries_a_runtime_contract)
{
	char *path = at("skills/flydsl_fp8_gemm_playbook/skill.md"), *text = tu_read(path, NULL), *edited, *index;
	const char *want = "  runtime:\n    language: flydsl\n    provider: aiter_vendored_flydsl\n    profiles:\n"
			   "    - name: v0.2\n      specifier: '>=0.2.2,<0.3'\n      validation_status: validated\n"
			   "  validation_status: stale\n";
	char *at_expects = strstr(text, "expects:\n");
	int n = 0;

	ck_assert_ptr_nonnull(at_expects);
	edited = fs_printf("%.*sruntime:\n  language: flydsl\n  provider: aiter_vendored_flydsl\n  profiles:\n"
			   "  - {name: v0.2, specifier: \">=0.2.2,<0.3\", validation_status: validated}\n%s",
			   (int)(at_expects - text), text, at_expects);
	tu_write(path, edited, strlen(edited));
	ck_assert_msg(library_reindex(tmp, &n) == 0, "%s", vs_last_error());
	{
		char *index_path = at("index.yaml");

		index = tu_read(index_path, NULL);
		free(index_path);
	}
	ck_assert_msg(strstr(index, want) != NULL, "want\n%s\nin:\n%s", want, index);
	free(index);
	free(edited);
	free(text);
	free(path);
}
END_TEST

/* A card that does not load leaves index.yaml as it was: the index is complete or not written. */
START_TEST(index_is_not_written_past_a_card_that_does_not_load)
{
	char *index = at("index.yaml"), *broken = at("skills/broken/skill.md"), *out = NULL, *err = NULL;
	int status;

	{
		char *dir = at("skills/broken");

		fs_mkdir_p(dir);
		free(dir);
	}
	tu_write(index, "old\n", 4);
	tu_write(broken, "no front matter\n", 16);
	status = tu_run_tool(tmp, "--reindex", &out, &err);
	ck_assert_int_eq(status, 3);
	ck_assert_msg(strstr(err, "skills/broken/skill.md:1:1:") && strstr(err, "index.yaml: not written: 1 card"),
		      "%s", err);
	ck_assert_int_eq(tu_count_lines(err), 2);
	{
		char *now = tu_read(index, NULL);

		ck_assert_str_eq(now, "old\n");
		free(now);
	}
	free(out);
	free(err);
	free(broken);
	free(index);
}
END_TEST

/* Every node of a YAML mapping n with the keys wanted, in that order (GEAK's schema). */
static void check_keys(yaml_document_t *doc, yaml_node_t *n, const char *const *keys, int nkeys, int optional_last)
{
	int i = 0;

	ck_assert_int_eq(n->type, YAML_MAPPING_NODE);
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++, i++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);

		ck_assert_msg(i < nkeys && !strcmp((const char *)k->data.scalar.value, keys[i]), "key %d is '%s'", i,
			      (const char *)k->data.scalar.value);
	}
	ck_assert_msg(i == nkeys || (optional_last && i == nkeys - 1), "%d keys", i);
}

/* The index reads back (libyaml) as GEAK's schema: skills[] of {id, file, scope, match, expects, validation_status, enforcement?}. */
START_TEST(index_reads_back_in_geaks_schema)
{
	static const char *const entry_keys[] = {"id", "file", "scope", "match", "expects", "validation_status",
						 "enforcement"};
	static const char *const top_keys[] = {"schema", "skills"};
	char *index = at("index.yaml"), *text;
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root, *skills = NULL;
	size_t len;
	int n = 0, entries = 0;

	ck_assert_int_eq(library_reindex(tmp, &n), 0);
	text = tu_read(index, &len);
	ck_assert(yaml_parser_initialize(&parser));
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	ck_assert_msg(yaml_parser_load(&parser, &doc), "index.yaml is not YAML");
	root = yaml_document_get_root_node(&doc);
	check_keys(&doc, root, top_keys, 2, 0);
	skills = yaml_document_get_node(&doc, (root->data.mapping.pairs.start + 1)->value);
	ck_assert_int_eq(skills->type, YAML_SEQUENCE_NODE);
	for (yaml_node_item_t *it = skills->data.sequence.items.start; it < skills->data.sequence.items.top; it++) {
		yaml_node_t *e = yaml_document_get_node(&doc, *it);
		yaml_node_t *file = yaml_document_get_node(&doc, (e->data.mapping.pairs.start + 1)->value);
		char *card = at((const char *)file->data.scalar.value);

		check_keys(&doc, e, entry_keys, 7, 1);
		ck_assert_msg(fs_exists(card), "file %s", card);
		free(card);
		entries++;
	}
	ck_assert_int_eq(entries, 3);
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	free(text);
	free(index);
}
END_TEST

/* ---- GEAK's command line at a library root ------------------------------------------------ */

struct cli_case {
	const char *args;
	int status;
	const char *out; /* substring of stdout, or NULL */
	const char *err; /* substring of stderr, or NULL */
	int err_lines;   /* lines of stderr, -1: any */
};

static const struct cli_case cli_cases[] = {
	/* SKILL_ID alone is --static, as in GEAK's validate_skill.py */
	{"flydsl_rewrite_quantized_moe", 0,
	 "skills/flydsl_rewrite_quantized_moe/skill.md: ok (not planned here: operator 'fused_moe_grouped_gemm'; "
	 "this tool plans mla_attention)",
	 "a typed block (no artifact; no gen)", 1},
	{"flydsl_fp8_gemm_playbook --static", 0, "skills/flydsl_fp8_gemm_playbook/skill.md: ok", "measured.isolated is '2.432x",
	 1},
	{"--static skills", 0, "skills/flash_mla_tilelang_to_triton/skill.md: ok", NULL, 4},
	{"--static _template/SKILL_TEMPLATE.md", 3, NULL, "'REPLACE' is the template's placeholder", 10},
	{"flydsl_fp8_gemm_playbook --emit-plan", 3, NULL,
	 "match.operator 'dense_gemm' is not planned here: this tool plans mla_attention", 2},
	{"flydsl_fp8_gemm_playbook --record --isolated 3.5 --parity pass", 2, NULL,
	 "--isolated: numbers come from a measured eval dir", 1},
	{"flydsl_fp8_gemm_playbook --record --artifact /x --e2e-pct 2.1", 2, NULL,
	 "--e2e-pct: numbers come from a measured eval dir", 1},
	{"flydsl_fp8_gemm_playbook --record --artifact /x --gpu gfx942/MI300X", 2, NULL,
	 "GEAK's --gpu NAME types the device", 1},
	{"flydsl_fp8_gemm_playbook --record --artifact nowhere", 3, NULL, "nowhere", -1},
	{"no_such_skill --static", 3, NULL, "no card 'no_such_skill'", 1},
	{"--verify skills", 3, NULL, "a typed block", 3},
	{"--report", 3, "flydsl_rewrite_quantized_moe: not planned here (operator 'fused_moe_grouped_gemm'",
	 "3 cards claim what the evidence does not show: flash_mla_tilelang_to_triton, flydsl_fp8_gemm_playbook, "
	 "flydsl_rewrite_quantized_moe (the report's evidence column says why); 3 of them typed validation blocks",
	 1},
	{"--report --format markdown", 3, "| flydsl_fp8_gemm_playbook | ", NULL, -1},
	{"--reindex", 0, "./index.yaml: 3 cards indexed", NULL, 0},
};

START_TEST(geak_command_line_at_a_library_root)
{
	const struct cli_case *c = &cli_cases[_i];
	char *out = NULL, *err = NULL;
	int status = tu_run_tool(tmp, c->args, &out, &err);

	ck_assert_msg(status == c->status, "'%s': exit %d, want %d\nstdout:\n%s\nstderr:\n%s", c->args, status,
		      c->status, out, err);
	ck_assert_msg(!c->out || strstr(out, c->out), "'%s': stdout lacks '%s':\n%s", c->args, c->out, out);
	ck_assert_msg(!c->err || strstr(err, c->err), "'%s': stderr lacks '%s':\n%s", c->args, c->err, err);
	ck_assert_msg(c->err_lines < 0 || tu_count_lines(err) == c->err_lines, "'%s': want %d stderr lines:\n%s",
		      c->args, c->err_lines, err);
	free(out);
	free(err);
}
END_TEST

/* --report lists every card of a GEAK root, typed ones apart, in every format */
START_TEST(report_lists_a_geak_root_in_full)
{
	static const char *const formats[] = {"text", "markdown", "json", "html"};
	/* the operator not planned here, as each format says it */
	static const char *const not_planned[] = {
		"flydsl_fp8_gemm_playbook: not planned here (operator 'dense_gemm'",
		"; not planned here (operator 'fused_moe_grouped_gemm'",
		"\"planned\":\tfalse,\n\t\t\"not_planned\":\t\"not planned here (operator 'dense_gemm'",
		"<small>not planned here (operator &#39;fused_moe_grouped_gemm&#39;",
	};
	static const char *const ids[] = {"flash_mla_tilelang_to_triton", "flydsl_fp8_gemm_playbook",
					  "flydsl_rewrite_quantized_moe"};

	for (size_t f = 0; f < sizeof(formats) / sizeof(formats[0]); f++) {
		char *args = fs_printf("--report --format %s", formats[f]), *out = NULL;
		const char *s;
		int typed = 0;

		ck_assert_int_eq(tu_run_tool(tmp, args, &out, NULL), 3);
		for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
			ck_assert_msg(strstr(out, ids[i]) != NULL, "%s report lacks %s:\n%s", formats[f], ids[i], out);
		for (s = out; (s = strstr(s, "validated (typed, no evidence)")); s++)
			typed++;
		ck_assert_msg(typed >= 3, "%s report shows %d typed:\n%s", formats[f], typed, out);
		ck_assert_msg(strstr(out, not_planned[f]) != NULL, "%s report lacks '%s':\n%s", formats[f], not_planned[f],
			      out);
		ck_assert_msg(!strstr(out, "docs/optimize.md\",\n\t\t\"verified") && !strstr(out, "lib.py"), "%s", out);
		free(out);
		free(args);
	}
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("library");
	TCase *tc = tcase_create("geak");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, real_cards_lint_with_one_warning, 0, (int)(sizeof(real_cards) / sizeof(real_cards[0])));
	tcase_add_test(tc, field_keys_are_kept_verbatim);
	tcase_add_test(tc, record_edit_replaces_a_typed_block_in_place);
	tcase_add_test(tc, field_keys_are_honored_or_listed_as_not_checked);
	tcase_add_test(tc, template_is_refused_one_line_per_placeholder);
	tcase_add_test(tc, both_layouts_are_listed_and_extra_files_are_not_cards);
	tcase_add_test(tc, card_id_comes_from_either_layout);
	tcase_add_test(tc, index_matches_geaks_own_and_is_byte_stable);
	tcase_add_test(tc, index_reads_back_in_geaks_schema);
	tcase_add_test(tc, index_is_not_written_past_a_card_that_does_not_load);
	tcase_add_test(tc, index_carries_a_runtime_contract);
	tcase_add_loop_test(tc, geak_command_line_at_a_library_root, 0, (int)(sizeof(cli_cases) / sizeof(cli_cases[0])));
	tcase_add_test(tc, report_lists_a_geak_root_in_full);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
