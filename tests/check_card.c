/*
 * check_card.c - card loading, schema errors, lint and hash (harness/card.c, harness/card_cmd.c).
 * Fixtures: tests/resources/cards/ (one small card per thing shown), the field's example cards in
 * tests/resources/field/, and copies of our shipped cards as drafts in tests/resources/skills/
 * (never skills/ itself, which --validate rewrites).
 */
#include "card.h"
#include "card_cmd.h"
#include "fsutil.h"
#include "mla_decode.h"
#include "testutil.h"
#include "vs_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NELEM(a) ((int)(sizeof(a) / sizeof((a)[0])))

static char *card_path(const char *name)
{
	char *rel = fs_printf("cards/%s", name);
	char *p;

	ck_assert_ptr_nonnull(rel);
	p = tu_resource(rel);
	free(rel);
	return p;
}

/* Run card_check_file(path) with stderr captured; returns what it printed (malloc'd). */
static char *check_captured(const char *path, int *rc)
{
	FILE *tmp = tmpfile();
	int saved, quiet = vs_error_set_quiet(0);
	char *buf;
	long n;

	ck_assert_ptr_nonnull(tmp);
	fflush(stderr);
	saved = dup(2);
	dup2(fileno(tmp), 2);
	*rc = card_check_file(path);
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

static int load_quiet(struct card *c, const char *path)
{
	int q = vs_error_set_quiet(1), err;

	memset(c, 0, sizeof(*c));
	err = card_load(c, path);
	vs_error_set_quiet(q);
	return err;
}

/* ---- load errors: the exact one-line message, from the path on ------------------------------ */

struct load_error_case {
	const char *file;
	int code;
	const char *msg; /* expected text right after the path */
};

static const struct load_error_case load_errors[] = {
	/* GEAK's relaxed(<tol>) with a tolerance out of range (issue 38) */
	{"schema_parity_relaxed_bad.md", VS_ESCHEMA,
	 ":17:11: expects.parity: 'relaxed(2)': a relaxed parity is written relaxed(<tol>), tol a number in (0, "
	 "0.5]: the absolute and relative tolerance of out and lse"},
	/* splitting and encoding */
	{"split_text_before_fence.md", VS_EPARSE,
	 ":1:1: front matter: the first line must be '---' (found 'Mla Tilelang To Triton')"},
	{"split_bom_text_before_fence.md", VS_EPARSE,
	 ":1:1: front matter: the first line must be '---' (found 'Title line')"},
	{"split_fence_with_trailing_space.md", VS_EPARSE,
	 ":1:1: front matter: the first line must be '---' (found '--- ')"},
	{"split_no_closing_fence.md", VS_EPARSE,
	 ":1:1: front matter: no closing '---' line for the front matter opened here"},
	{"split_empty_front_matter.md", VS_EPARSE,
	 ":1:1: front matter: the front matter is empty (nothing between the '---' lines)"},
	{"split_comment_only_front_matter.md", VS_EPARSE,
	 ":1:1: front matter: the front matter is empty (only blank lines and comments)"},
	{"split_empty_file.md", VS_EPARSE,
	 ":1:1: front matter: the file is empty; the first line must be '---'"},
	{"split_not_utf8.md", VS_EPARSE,
	 ":4:13: encoding: invalid UTF-8 byte 0xff (a card is UTF-8 text)"},
	{"split_nul_byte.md", VS_EPARSE, ":33:6: encoding: NUL byte in the file (a card is UTF-8 text)"},
	{"split_lone_cr.md", VS_EPARSE,
	 ":4:19: front matter: a lone CR is a line break in YAML; end front matter lines with LF or "
	 "CRLF only"},
	{"split_inner_bom.md", VS_EPARSE,
	 ":25:1: front matter: a BOM (U+FEFF) is allowed only at the start of the file"},
	{"split_line_separator.md", VS_EPARSE,
	 ":3:18: front matter: U+2028 (line separator) is a line break in YAML; end front matter "
	 "lines with LF or CRLF only"},
	/* YAML */
	{"yaml_syntax_error.md", VS_EPARSE,
	 ":17:2: front matter: invalid yaml: did not find expected key"},
	{"yaml_multi_document.md", VS_EPARSE,
	 ":27:1: front matter: a second yaml document in the front matter (only one is allowed)"},
	{"yaml_anchor.md", VS_EPARSE, ":5:10: authors: anchors ('&who') are not supported in cards"},
	{"yaml_alias.md", VS_EPARSE, ":26:13: supersedes: aliases ('*who') are not supported in cards"},
	{"yaml_tag.md", VS_EPARSE, ":3:8: title: tags ('!!str') are not supported in cards"},
	{"yaml_not_mapping.md", VS_EPARSE,
	 ":2:1: front matter: the front matter must be a mapping of keys (key: value lines)"},
	{"yaml_complex_key.md", VS_EPARSE, ":27:3: front matter: mapping keys must be plain strings"},
	/* duplicate keys, naming the key and both lines */
	{"dup_top_level.md", VS_ESCHEMA,
	 ":27:1: title: duplicate key 'title' (first at line 3, again at line 27)"},
	{"dup_nested.md", VS_ESCHEMA,
	 ":11:3: match.gens: duplicate key 'gens' (first at line 9, again at line 11)"},
	{"dup_flow_measured.md", VS_ESCHEMA,
	 ":20:40: validation.measured.isolated: duplicate key 'isolated' (first at line 20, again at "
	 "line 20)"},
	/* types */
	{"type_title_list.md", VS_ESCHEMA, ":3:8: title: expected a string, found a list"},
	{"type_gens_scalar.md", VS_ESCHEMA,
	 ":9:9: match.gens: expected a list of strings like [a, b], found 'gfx942'"},
	{"type_gens_nested.md", VS_ESCHEMA, ":9:18: match.gens: list items must be strings, found a list"},
	{"type_list_empty_item.md", VS_ESCHEMA, ":9:18: match.gens: empty list item"},
	{"type_match_scalar.md", VS_ESCHEMA,
	 ":7:8: match: expected a mapping of keys, found a scalar 'mla_attention'"},
	{"type_status_list.md", VS_ESCHEMA,
	 ":19:11: validation.status: expected one of: draft, validated, failed, found a list"},
	/* enums */
	{"enum_scope.md", VS_ESCHEMA, ":6:8: scope: 'kernal' is not one of: kernel, e2e"},
	{"enum_parity.md", VS_ESCHEMA, ":17:11: expects.parity: 'maybe' is not one of: required, advisory"},
	{"enum_status_stale.md", VS_ESCHEMA,
	 ":19:11: validation.status: 'stale' is computed by the report and never written; use one of: "
	 "draft, validated, failed"},
	{"enum_measured_parity.md", VS_ESCHEMA,
	 ":20:49: validation.measured.parity: 'ok' is not one of: pass, fail"},
	/* numbers */
	{"num_isolated_zero.md", VS_ESCHEMA,
	 ":16:25: expects.isolated_speedup_min: must be a number > 0, found '0'"},
	{"num_isolated_negative.md", VS_ESCHEMA,
	 ":16:25: expects.isolated_speedup_min: must be a number > 0, found '-1.5'"},
	{"num_isolated_text.md", VS_ESCHEMA,
	 ":16:25: expects.isolated_speedup_min: expected a number, found 'fast'"},
	{"num_isolated_quoted.md", VS_ESCHEMA,
	 ":16:25: expects.isolated_speedup_min: expected a number, found the quoted string \"1.5\" "
	 "(write numbers without quotes)"},
	{"num_isolated_hex.md", VS_ESCHEMA,
	 ":16:25: expects.isolated_speedup_min: expected a number, found '0x10'"},
	{"num_isolated_inf.md", VS_ESCHEMA,
	 ":16:25: expects.isolated_speedup_min: expected a number, found '.inf'"},
	{"num_measured_text.md", VS_ESCHEMA,
	 ":20:24: validation.measured.isolated: expected a number, found '1.2x'"},
	{"num_e2e_text.md", VS_ESCHEMA,
	 ":16:22: expects.e2e_delta_min_pct: expected a number, found 'lots'"},
	/* dates */
	{"date_not_real.md", VS_ESCHEMA,
	 ":20:18: validation.last_verified: '2025-02-30' is not a real date written YYYY-MM-DD"},
	{"date_not_leap.md", VS_ESCHEMA,
	 ":20:18: validation.last_verified: '2023-02-29' is not a real date written YYYY-MM-DD"},
	{"date_wrong_format.md", VS_ESCHEMA,
	 ":20:18: validation.last_verified: '2025/01/31' is not a real date written YYYY-MM-DD"},
	/* required keys */
	/* at the mapping that lacks the key, with a hint naming it and its line (never a bare 1:1) */
	{"missing_id.md", VS_ESCHEMA,
	 ":2:1: id: required key is missing (add 'id:' to the front matter, lines 2-25)"},
	{"missing_match_gens.md", VS_ESCHEMA, ":8:3: match.gens: required key is missing (add 'gens:' to "
	 "the mapping 'match', which starts at line 8)"},
	{"missing_validation_status.md", VS_ESCHEMA, ":19:3: validation.status: required key is missing "
	 "(add 'status:' to the mapping 'validation', which starts at line 19)"},
	{"missing_isolated_kernel.md", VS_ESCHEMA,
	 ":16:3: expects.isolated_speedup_min: required when scope is 'kernel' (a number > 0)"},
	{"missing_expects_kernel.md", VS_ESCHEMA,
	 ":2:1: expects.isolated_speedup_min: required when scope is 'kernel' (a number > 0) (add "
	 "'expects:' with 'isolated_speedup_min:' in it to the front matter, lines 2-23)"},
	/* numbers out of range, '...', match list names, NUL in strings */
	{"num_isolated_out_of_range.md", VS_ESCHEMA, ":16:25: expects.isolated_speedup_min: '1e400' is out "
	 "of range (a number's magnitude must be below 1.8e308)"},
	{"yaml_document_end.md", VS_EPARSE, ":15:1: front matter: a '...' line ends a yaml document; the "
	 "front matter ends only at the closing '---' line (remove the '...')"},
	{"gens_duplicate.md", VS_ESCHEMA, ":10:25: match.gens: 'gfx942' is listed twice"},
	{"gens_case_variant.md", VS_ESCHEMA, ":10:18: match.gens: 'gfx942' and 'GFX942' differ only in "
	 "case (names are compared exactly: list one)"},
	{"gens_spaces.md", VS_ESCHEMA,
	 ":10:10: match.gens: 'gfx942 ' has spaces around it (write the name alone)"},
	{"str_nul_escape.md", VS_ESCHEMA,
	 ":3:8: title: a string with a NUL character (an escape such as \\0 or \\x00) is refused"},
	{"empty_title.md", VS_ESCHEMA, ":3:8: title: required value is empty"},
	{"empty_gens.md", VS_ESCHEMA, ":9:9: match.gens: required value is empty"},
	/* the sparse form's match.topk / match.extra_topk: whole numbers in [1, CARD_TOPK_MAX] (issue 36) */
	{"sparse_topk_zero.md", VS_ESCHEMA, ":15:9: match.topk: '0' is not a whole number in [1, 65536]"},
	{"sparse_topk_fraction.md", VS_ESCHEMA, ":15:9: match.topk: '2.5' is not a whole number in [1, 65536]"},
	{"sparse_topk_quoted.md", VS_ESCHEMA,
	 ":15:9: match.topk: expected a whole number, found the quoted string \"2048\" (write numbers without "
	 "quotes)"},
	{"sparse_extra_topk_list.md", VS_ESCHEMA, ":15:15: match.extra_topk: expected a whole number, found a list"},
	/* columns in characters with a BOM, CRLF and multi-byte characters before the error */
	{"col_nonascii_bom_crlf.md", VS_ESCHEMA,
	 ":15:32: expects.parity: 'maybe' is not one of: required, advisory"},
};

START_TEST(test_load_error_message)
{
	const struct load_error_case *tc = &load_errors[_i];
	char *path = card_path(tc->file);
	char *want = fs_printf("%s%s", path, tc->msg);
	struct card c;
	int err = load_quiet(&c, path);
	const char *got = vs_last_error();

	ck_assert_msg(err == tc->code, "%s: expected code %d (%s), got %d; message: %s", tc->file,
		      tc->code, vs_error_name(tc->code), err, got);
	ck_assert_msg(!strncmp(got, want, strlen(want)), "%s:\n expected: %s\n actual:   %s", tc->file,
		      want, got);
	ck_assert_msg(!strchr(got, '\n'), "%s: message is not one line: %s", tc->file, got);
	card_release(&c);
	free(want);
	free(path);
}
END_TEST

/* --static prints exactly one line for a card that does not load */
START_TEST(test_load_error_is_one_line)
{
	const struct load_error_case *tc = &load_errors[_i];
	char *path = card_path(tc->file);
	int rc;
	char *err = check_captured(path, &rc);

	ck_assert_msg(rc == tc->code, "%s: card_check_file returned %d, expected %d", tc->file, rc,
		      tc->code);
	ck_assert_msg(tu_count_lines(err) == 1, "%s: expected one line on stderr, got:\n%s", tc->file,
		      err);
	ck_assert_msg(strstr(err, tc->msg) != NULL, "%s: stderr lacks '%s':\n%s", tc->file, tc->msg, err);
	free(err);
	free(path);
}
END_TEST

/* ---- cards that pass load and lint ------------------------------------------------------ */

static const char *const passing[] = {
	"cards/ok_do_no_harm.md", /* a gate of 0.98 that says why (issue 12, case 5) */
	"cards/ok_minimal.md", "cards/ok_bom.md", "cards/ok_crlf.md", "cards/ok_bom_crlf.md",
	"cards/ok_dashes_in_body.md", "cards/ok_block_style.md", "cards/ok_flow_style.md",
	"cards/ok_unknown_keys.md", "cards/ok_e2e.md", "cards/ok_validated.md",
	"cards/ok_null_values.md", "cards/ok_parity_default.md", "cards/lint_comment_section_ok.md",
	"cards/ok_parity_relaxed.md", /* GEAK's expects.parity: relaxed(<tol>) (issue 38) */
	"cards/missing_validation.md",
	"cards/lint_unknown_operator.md", /* any operator lints (issue 38); --emit-plan refuses it */
	"cards/ok_from_backend_list.md",  /* GEAK's list of sources, on an operator not planned here */
	"cards/ok_sparse.md",             /* the sparse form: deepseek_dsa, block-scaled formats, topk (issue 36) */
};

START_TEST(test_passing_fixture)
{
	char *path = tu_resource(passing[_i]);
	int rc;
	char *err = check_captured(path, &rc);

	ck_assert_msg(rc == 0 && !*err, "%s: expected to pass, got %d:\n%s", passing[_i], rc, err);
	free(err);
	free(path);
}
END_TEST

static const char *const our_cards[] = {
	"tests/resources/skills/mla_decode_hip_port.md",
	"tests/resources/skills/mla_decode_hip_port_sm90.md",
	"tests/resources/skills/mla_decode_cpu_splitkv.md",
	"tests/resources/field/mla_tilelang_to_triton.md",
};

START_TEST(test_real_card_passes)
{
	char *path = tu_source(our_cards[_i]);
	int rc;
	char *err = check_captured(path, &rc);

	ck_assert_msg(rc == 0 && !*err, "%s: expected to pass, got %d:\n%s", our_cards[_i], rc, err);
	free(err);
	free(path);
}
END_TEST

START_TEST(test_bad_example_refused_at_line_1)
{
	char *path = tu_source("tests/resources/field/bad/mla_tilelang_to_triton.md");
	int rc;
	char *err = check_captured(path, &rc);

	ck_assert_msg(rc == VS_EPARSE, "expected VS_EPARSE, got %d:\n%s", rc, err);
	ck_assert_msg(tu_count_lines(err) == 1, "expected one line, got:\n%s", err);
	ck_assert_msg(strstr(err, "mla_tilelang_to_triton.md:1:1: front matter: the first line must "
			      "be '---'") != NULL, "unexpected message:\n%s", err);
	free(err);
	free(path);
}
END_TEST

START_TEST(test_shared_example_values)
{
	char *path = tu_source("tests/resources/field/mla_tilelang_to_triton.md");
	struct card c;

	ck_assert_int_eq(load_quiet(&c, path), 0);
	ck_assert_str_eq(c.id, "mla_tilelang_to_triton");
	ck_assert_str_eq(c.title, "MLA decode: port the TileLang core to Triton (gfx942)");
	ck_assert_int_eq(c.authors.count, 1);
	ck_assert_str_eq(c.authors.items[0], "GEAK Team");
	ck_assert_int_eq(c.supersedes.count, 0);
	ck_assert_str_eq(c.match.operator_name, "mla_attention");
	ck_assert_int_eq(c.match.dtypes.count, 2);
	ck_assert_str_eq(c.match.dtypes.items[1], "fp8_e4m3_fnuz");
	ck_assert_int_eq(c.expects.has_isolated_speedup_min, 1);
	ck_assert_double_eq(c.expects.isolated_speedup_min, 1.15);
	ck_assert_str_eq(c.validation.status, "draft");
	ck_assert_str_eq(c.validation.gen, "");
	ck_assert_int_eq(c.validation.has_isolated, 0);
	ck_assert_str_eq(c.role, "advisory_prior");
	ck_assert_int_eq(c.unknown_count, 0);
	card_release(&c);
	free(path);
}
END_TEST

START_TEST(test_our_cards_values)
{
	static const struct {
		const char *file, *gen, *from, *to;
		double min;
		const char *status; /* as shipped: the sm_90 card carries its H200 record */
	} want[] = {
		{"tests/resources/skills/mla_decode_hip_port.md", "gfx942", "hip.baseline", "hip.flash", 2.0, "draft"},
		{"tests/resources/skills/mla_decode_hip_port_sm90.md", "sm_90", "hip.baseline", "hip.flash", 2.0, "validated"},
		{"tests/resources/skills/mla_decode_cpu_splitkv.md", "x86_64", "cpu.naive", "cpu.splitkv", 1.3, "draft"},
	};

	for (int i = 0; i < NELEM(want); i++) {
		char *path = tu_source(want[i].file);
		struct card c;

		ck_assert_msg(load_quiet(&c, path) == 0, "%s: %s", want[i].file, vs_last_error());
		ck_assert_int_eq(c.match.gens.count, 1);
		ck_assert_str_eq(c.match.gens.items[0], want[i].gen);
		ck_assert_str_eq(c.match.from_backend, want[i].from);
		ck_assert_str_eq(c.match.to_backend, want[i].to);
		ck_assert_double_eq(c.expects.isolated_speedup_min, want[i].min);
		ck_assert_str_eq(c.expects.parity, "required");
		ck_assert_str_eq(c.validation.status, want[i].status);
		ck_assert_str_eq(c.validation.model, "DeepSeek-V3 MLA, h_q 16-128");
		ck_assert_int_eq(c.validation.has_e2e_pct, 0);
		if (!strcmp(want[i].status, "draft")) {
			ck_assert_str_eq(c.validation.gpu, "");
			ck_assert_str_eq(c.validation.last_verified, "");
			ck_assert_str_eq(c.validation.artifact, "");
			ck_assert_str_eq(c.validation.measured_parity, "");
			ck_assert_int_eq(c.validation.has_isolated, 0);
		} else {
			/* Recorded by --record from the committed eval dir (check_record covers the path). */
			ck_assert_str_eq(c.validation.gen, want[i].gen);
			ck_assert_str_eq(c.validation.gpu, "NVIDIA H200");
			ck_assert_str_eq(c.validation.measured_parity, "pass");
			ck_assert_int_eq(c.validation.has_isolated, 1);
			ck_assert(c.validation.measured_isolated >= want[i].min);
			ck_assert_ptr_nonnull(strstr(c.validation.artifact, "results/mla_decode_hip_port_sm90/"));
		}
		card_release(&c);
		free(path);
	}
}
END_TEST

/* ---- splitting: offsets and line numbers with a BOM and CRLF ----------------------------- */

START_TEST(test_split_offsets_and_lines)
{
	static const struct {
		const char *file;
		size_t fm_begin;
	} cases[] = {
		{"ok_minimal.md", 4},
		{"ok_bom.md", 7},
		{"ok_crlf.md", 5},
		{"ok_bom_crlf.md", 8},
	};

	for (int i = 0; i < NELEM(cases); i++) {
		char *path = card_path(cases[i].file);
		struct card c;
		int line = 0, col = 0;

		ck_assert_msg(load_quiet(&c, path) == 0, "%s: %s", cases[i].file, vs_last_error());
		ck_assert_msg(c.fm_begin == cases[i].fm_begin, "%s: fm_begin %zu, expected %zu",
			      cases[i].file, c.fm_begin, cases[i].fm_begin);
		ck_assert_msg(!strncmp(c.text + c.fm_end, "---", 3), "%s: fm_end does not point at ---",
			      cases[i].file);
		ck_assert_msg(c.text[c.body_begin - 1] == '\n', "%s: body_begin not after a line end",
			      cases[i].file);
		ck_assert_int_eq(card_locate(&c, "scope", &line, &col), 0);
		ck_assert_msg(line == 6 && col == 8, "%s: scope at %d:%d, expected 6:8", cases[i].file,
			      line, col);
		ck_assert_int_eq(card_locate(&c, "validation.measured.parity", &line, &col), 0);
		ck_assert_msg(line == 23 && col == 49, "%s: measured.parity at %d:%d, expected 23:49",
			      cases[i].file, line, col);
		ck_assert_int_eq(card_locate(&c, "no.such.key", &line, &col), VS_ENOTFOUND);
		card_release(&c);
		free(path);
	}
}
END_TEST

START_TEST(test_dashes_inside_body_are_body_text)
{
	char *path = card_path("ok_dashes_in_body.md");
	struct card c;

	ck_assert_int_eq(load_quiet(&c, path), 0);
	ck_assert_str_eq(c.id, "ok_dashes_in_body");
	ck_assert_msg(strstr(c.text + c.body_begin, "\n---\n\nA thematic break") != NULL,
		      "body lost its --- line");
	ck_assert_msg(strstr(c.text + c.body_begin, "id: not_front_matter") != NULL,
		      "body lost the fenced block");
	ck_assert_int_eq(c.unknown_count, 0);
	card_release(&c);
	free(path);
}
END_TEST

/* ---- values: flow and block styles, nulls, defaults, unknown keys ------------------------- */

START_TEST(test_flow_and_block_styles_agree)
{
	char *pf = card_path("ok_flow_style.md"), *pb = card_path("ok_block_style.md");
	struct card f, b;

	ck_assert_int_eq(load_quiet(&f, pf), 0);
	ck_assert_int_eq(load_quiet(&b, pb), 0);
	ck_assert_int_eq(f.match.gens.count, 2);
	ck_assert_int_eq(b.match.gens.count, 2);
	for (int i = 0; i < 2; i++)
		ck_assert_str_eq(f.match.gens.items[i], b.match.gens.items[i]);
	ck_assert_str_eq(f.match.gens.items[1], "gfx950");
	ck_assert_str_eq(f.match.to_backend, b.match.to_backend);
	ck_assert_str_eq(f.expects.parity, "advisory");
	ck_assert_double_eq(f.expects.isolated_speedup_min, 1.5);
	ck_assert_int_eq(b.authors.count, 2);
	ck_assert_str_eq(b.authors.items[1], "Second Author");
	ck_assert_str_eq(b.validation.measured_parity, "");
	ck_assert_int_eq(b.validation.has_isolated, 0);
	card_release(&f);
	card_release(&b);
	free(pf);
	free(pb);
}
END_TEST

START_TEST(test_values_validated_null_default_e2e)
{
	char *p1 = card_path("ok_validated.md"), *p2 = card_path("ok_null_values.md");
	char *p3 = card_path("ok_parity_default.md"), *p4 = card_path("ok_e2e.md");
	struct card v, n, d, e;

	ck_assert_int_eq(load_quiet(&v, p1), 0);
	ck_assert_str_eq(v.validation.status, "validated");
	ck_assert_str_eq(v.validation.last_verified, "2024-02-29");
	ck_assert_str_eq(v.validation.gpu, "AMD Instinct MI300X");
	ck_assert_str_eq(v.validation.gen, "gfx942");
	ck_assert_str_eq(v.validation.model, "DeepSeek-V3 MLA, h_q 16-128");
	ck_assert_int_eq(v.validation.has_isolated, 1);
	ck_assert_double_eq(v.validation.measured_isolated, 1.87);
	ck_assert_int_eq(v.validation.has_e2e_pct, 0);
	ck_assert_str_eq(v.validation.measured_parity, "pass");
	ck_assert_str_eq(v.validation.artifact, "results/ok_validated/run-1");

	ck_assert_int_eq(load_quiet(&n, p2), 0);
	ck_assert_str_eq(n.kind, "");
	ck_assert_str_eq(n.role, "");
	ck_assert_str_eq(n.validation.last_verified, "");
	ck_assert_str_eq(n.validation.gpu, "");
	ck_assert_str_eq(n.validation.model, "");
	ck_assert_str_eq(n.validation.artifact, "");
	ck_assert_str_eq(n.validation.gen, "");
	ck_assert_int_eq(n.validation.has_isolated, 0);
	ck_assert_int_eq(n.validation.has_e2e_pct, 0);

	ck_assert_int_eq(load_quiet(&d, p3), 0);
	ck_assert_str_eq(d.expects.parity, "required");
	ck_assert_double_eq(d.expects.isolated_speedup_min, 2.0);

	ck_assert_int_eq(load_quiet(&e, p4), 0);
	ck_assert_str_eq(e.scope, "e2e");
	ck_assert_int_eq(e.expects.has_e2e_delta_min_pct, 1);
	ck_assert_double_eq(e.expects.e2e_delta_min_pct, -0.5);
	ck_assert_int_eq(e.expects.has_isolated_speedup_min, 0);
	card_release(&v);
	card_release(&n);
	card_release(&d);
	card_release(&e);
	free(p1);
	free(p2);
	free(p3);
	free(p4);
}
END_TEST

START_TEST(test_unknown_keys_kept)
{
	static const struct {
		const char *path, *text;
	} want[] = {
		{"match.extra", "{a: 1, b: [x, y]}"},
		{"validation.reviewer", "\"Ada\""},
		{"validation.measured.tflops", "12.5"},
		{"notes", "|\n  free text\n  on two lines"},
		{"owner", "kernels-team"},
	};
	char *path = card_path("ok_unknown_keys.md");
	struct card c;

	ck_assert_int_eq(load_quiet(&c, path), 0);
	ck_assert_msg(c.unknown_count == NELEM(want), "expected %d unknown keys, got %d",
		      NELEM(want), c.unknown_count);
	for (int i = 0; i < NELEM(want); i++) {
		ck_assert_str_eq(c.unknown[i].path, want[i].path);
		ck_assert_msg(!strcmp(c.unknown[i].text, want[i].text), "%s: expected text '%s', got '%s'",
			      want[i].path, want[i].text, c.unknown[i].text);
	}
	ck_assert_str_eq(c.match.gens.items[0], "gfx942");
	ck_assert_str_eq(c.validation.status, "draft");
	card_release(&c);
	free(path);
}
END_TEST

/* ---- lint: every problem, one line each ------------------------------------------------- */

struct lint_case {
	const char *file;
	int lines;
	const char *msgs[7];
};

static const struct lint_case lint_cases[] = {
	{"lint_id_mismatch.md", 1,
	 {":2:5: id: 'something_else' does not match the file name 'lint_id_mismatch.md'"}},
	{"lint_missing_section.md", 1, {":28:1: body: missing section '## Procedure'"}},
	{"lint_empty_section.md", 1,
	 {":32:1: body: section '## Mechanism' is empty (whitespace and HTML comments do not count)"}},
	{"lint_comment_only_section.md", 1,
	 {":44:1: body: section '## Sources' is empty (whitespace and HTML comments do not count)"}},
	{"lint_heading_in_fence.md", 1, {":28:1: body: missing section '## Procedure'"}},
	{"lint_heading_in_comment.md", 1, {":28:1: body: missing section '## Procedure'"}},
	{"lint_duplicate_section.md", 1,
	 {":47:1: body: section '## Mechanism' appears twice (first at line 32, again at line 47)"}},
	{"lint_e2e_without_delta.md", 1,
	 {":16:3: expects.e2e_delta_min_pct: scope 'e2e' needs a number here"}},
	/*
	 * A validated block without artifact and gen is typed (issue 38): one warning naming what it
	 * lacks, and an error only where it contradicts itself.
	 */
	/* a list of sources on a planned operator: an A/B has one baseline (issue 38) */
	{"lint_from_backend_list.md", 1,
	 {":11:17: match.from_backend: a list of 2 backends selects several sources in GEAK's workflows; an "
	  "A/B here measures one baseline: name one"}},
	{"lint_validated_incomplete.md", 2,
	 {":19:11: validation: a typed block (no artifact; no gen): read, never trusted",
	  ":23:49: validation.measured.parity: status 'validated' beside measured parity 'fail'"}},
	/* issue 12, case 5: a no-op change, an absurd gate, a slowdown without a reason */
	{"lint_aa_card.md", 2,
	 {":12:15: match.to_backend: 'cpu.splitkv' is also match.from_backend: a card compares two "
	  "implementations or two configs of one (IMPL@CONFIG; an A/A run validates nothing)",
	  ":14:25: expects.isolated_speedup_min: 0.5 is below 0.95: no card can be validated by a slowdown"}},
	{"lint_absurd_gate.md", 1,
	 {":12:25: expects.isolated_speedup_min: 1e-320 is below 0.95: no card can be validated by a "
	  "slowdown"}},
	{"lint_slower_without_reason.md", 1,
	 {":12:25: expects.isolated_speedup_min: 0.98 is below 1.0: a change that may be slower says why in "
	  "expects.do_no_harm (\"a port that must not slow down\"), else the gate is >= 1.0"}},
	/* the form a match block selects (issue 36): formats, topk and arch_class that disagree */
	{"lint_dense_blockscaled.md", 2,
	 {":11:11: match.dtypes: 'fp8_ds_mla' is a cache format of the sparse form (per-block scales): add "
	  "deepseek_dsa to match.arch_class, or list a dense format (bf16, fp8_e4m3_fnuz)",
	  ":9:15: match.arch_class: the card speaks of the sparse form ('fp8_ds_mla', line 11) but its match block "
	  "selects the dense decode"}},
	{"lint_dense_topk.md", 2,
	 {":15:9: match.topk: only the sparse form has a topk: add deepseek_dsa to match.arch_class",
	  ":9:15: match.arch_class: the card speaks of the sparse form ('topk', line 2)"}},
	{"lint_sparse_fnuz.md", 1,
	 {":11:11: match.dtypes: 'fp8_e4m3_fnuz' (one per-tensor scale) is the dense form's cache; the sparse form "
	  "(deepseek_dsa) reads bf16, fp8_ds_mla, fp8_model1, fp8_ds_mla_fnuz, fp8_model1_fnuz"}},
	{"lint_both_forms.md", 1,
	 {":9:15: match.arch_class: lists both deepseek_mla (dense MLA decode) and deepseek_dsa (its sparse form): a "
	  "plan takes one form; write a card per form"}},
	{"lint_extra_without_v4.md", 1,
	 {":15:15: match.extra_topk: the extra cache is the V4 formats' (fp8_model1, fp8_model1_fnuz), which "
	  "match.dtypes does not list"}},
	{"lint_validated_wrong_gen.md", 2,
	 {":22:8: validation.gen: measured generation 'sm_90' is not in match.gens",
	  ":24:24: validation.measured.isolated: status 'validated' but the measured speedup 1.2 is "
	  "below expects.isolated_speedup_min 1.5"}},
};

START_TEST(test_lint_reports_every_problem)
{
	const struct lint_case *tc = &lint_cases[_i];
	char *path = card_path(tc->file);
	int rc;
	char *err = check_captured(path, &rc);

	ck_assert_msg(rc == VS_ESCHEMA, "%s: expected VS_ESCHEMA, got %d:\n%s", tc->file, rc, err);
	ck_assert_msg(tu_count_lines(err) == tc->lines, "%s: expected %d lines, got:\n%s", tc->file,
		      tc->lines, err);
	for (int i = 0; i < tc->lines; i++) {
		char *want = fs_printf("%s%s", path, tc->msgs[i]);

		ck_assert_msg(strstr(err, want) != NULL, "%s: missing line\n %s\nin:\n%s", tc->file,
			      want, err);
		free(want);
	}
	free(err);
	free(path);
}
END_TEST

/* card_lint on a struct filled by hand: enums and scope consistency, stale never valid */
START_TEST(test_lint_hand_filled_struct)
{
	struct card c;
	char *path = card_path("ok_minimal.md");
	int q;

	ck_assert_int_eq(load_quiet(&c, path), 0);
	free(c.validation.status);
	c.validation.status = strdup("stale");
	q = vs_error_set_quiet(1);
	ck_assert_int_eq(card_lint(&c), VS_ESCHEMA);
	vs_error_set_quiet(q);
	ck_assert_msg(strstr(vs_last_error(), ":19:11: validation.status: 'stale' is computed by the "
			     "report and never written") != NULL, "unexpected: %s", vs_last_error());
	free(c.validation.status);
	c.validation.status = strdup("draft");
	c.expects.has_isolated_speedup_min = 0;
	q = vs_error_set_quiet(1);
	ck_assert_int_eq(card_lint(&c), VS_ESCHEMA);
	vs_error_set_quiet(q);
	ck_assert_msg(strstr(vs_last_error(), ":16:25: expects.isolated_speedup_min: scope 'kernel' "
			     "needs a number > 0 here") != NULL, "unexpected: %s", vs_last_error());
	free(c.scope);
	c.scope = strdup("e2e");
	c.expects.has_e2e_delta_min_pct = 1;
	q = vs_error_set_quiet(1);
	ck_assert_msg(card_lint(&c) == 0, "e2e card with a delta should lint: %s", vs_last_error());
	vs_error_set_quiet(q);
	card_release(&c);
	free(path);
}
END_TEST

/* ---- hash ---------------------------------------------------------------------------------- */

START_TEST(test_hash_is_front_matter_without_validation_plus_body)
{
	char *path = card_path("ok_minimal.md");
	struct card c;
	char got[FS_SHA256_HEX], want[FS_SHA256_HEX];
	struct fs_sha256 h;
	const char *v, *role;

	ck_assert_int_eq(load_quiet(&c, path), 0);
	v = strstr(c.text, "\nvalidation:\n") + 1;
	role = strstr(c.text, "\nrole: ") + 1;
	ck_assert_int_eq(fs_sha256_init(&h), 0);
	fs_sha256_update(&h, c.text + 4, (size_t)(v - c.text) - 4);
	fs_sha256_update(&h, role, (size_t)(c.text + c.fm_end - role));
	fs_sha256_update(&h, c.text + c.body_begin, c.text_len - c.body_begin);
	fs_sha256_final(&h, want);
	ck_assert_int_eq(card_hash(&c, got), 0);
	ck_assert_str_eq(got, want);
	card_release(&c);
	free(path);
}
END_TEST

static void hash_of_text(char hex[FS_SHA256_HEX], const char *name, const char *text)
{
	struct card c;
	int q = vs_error_set_quiet(1);

	memset(&c, 0, sizeof(c));
	ck_assert_msg(card_parse(&c, name, text, strlen(text)) == 0, "%s", vs_last_error());
	ck_assert_int_eq(card_hash(&c, hex), 0);
	vs_error_set_quiet(q);
	card_release(&c);
}

static char *replace_once(const char *s, const char *from, const char *to)
{
	const char *p = strstr(s, from);
	char *r;

	ck_assert_msg(p != NULL, "'%s' not found", from);
	r = fs_printf("%.*s%s%s", (int)(p - s), s, to, p + strlen(from));
	ck_assert_ptr_nonnull(r);
	return r;
}

START_TEST(test_hash_sensitivity)
{
	char *path = card_path("ok_minimal.md");
	char *text = tu_read(path, NULL);
	char base[FS_SHA256_HEX], h[FS_SHA256_HEX];
	static const struct {
		const char *from, *to;
		int same;
	} edits[] = {
		{"status: draft", "status: failed", 1},
		{"  gpu: \"\"", "  gpu: \"NVIDIA H200\"\n  gen: sm_90", 1},
		{"title: \"A fixture card\"", "title: \"Another title\"", 0},
		{"isolated_speedup_min: 1.5", "isolated_speedup_min: 1.6", 0},
		{"Split-KV with an online softmax.", "Split-KV.", 0},
		{"role: advisory_prior", "role: advisory", 0},
		/* the claims list is not hashed: claiming a deployment leaves the tier's evidence valid */
		{"  parity: required\n", "  parity: required\n  workloads: [cpu_smoke]\n", 1},
		{"  parity: required\n", "  workloads:\n    - cpu_smoke\n    - other # two\n  parity: required\n", 1},
		{"expects:\n  isolated_speedup_min: 1.5\n  parity: required\n",
		 "expects: {isolated_speedup_min: 1.5, parity: required, workloads: [cpu_smoke]}\n", 0},
	};

	hash_of_text(base, path, text);
	for (int i = 0; i < NELEM(edits); i++) {
		char *t = replace_once(text, edits[i].from, edits[i].to);

		hash_of_text(h, path, t);
		ck_assert_msg((strcmp(h, base) == 0) == edits[i].same, "edit '%s' -> '%s': hash %s (base %s)",
			      edits[i].from, edits[i].to, edits[i].same ? "changed" : "did not change",
			      base);
		free(t);
	}
	free(text);
	free(path);
}
END_TEST

/* Evidence of the builds that hashed the claims list still matches its card; other hashes do not. */
START_TEST(test_hash_check_takes_the_hash_with_claims)
{
	char *path = card_path("ok_minimal.md");
	char *text = tu_read(path, NULL);
	char *claimed = replace_once(text, "  parity: required\n", "  parity: required\n  workloads: [cpu_smoke]\n");
	char full[FS_SHA256_HEX], now[FS_SHA256_HEX], hex[FS_SHA256_HEX], other[FS_SHA256_HEX];
	const char *v = strstr(claimed, "\nvalidation:\n") + 1, *role = strstr(claimed, "\nrole: ") + 1;
	struct fs_sha256 h;
	struct card c;
	int same = -1;

	memset(&c, 0, sizeof(c));
	ck_assert_int_eq(card_parse(&c, path, claimed, strlen(claimed)), 0);
	ck_assert_int_eq(fs_sha256_init(&h), 0);
	fs_sha256_update(&h, claimed + 4, (size_t)(v - claimed) - 4);
	fs_sha256_update(&h, role, (size_t)(claimed + c.fm_end - role));
	fs_sha256_update(&h, claimed + c.body_begin, c.text_len - c.body_begin);
	fs_sha256_final(&h, full);
	ck_assert_int_eq(card_hash(&c, now), 0);
	ck_assert_str_ne(full, now);
	hash_of_text(other, path, text);
	ck_assert_str_eq(other, now);
	ck_assert_int_eq(card_hash_check(&c, now, hex, &same), 0);
	ck_assert_int_eq(same, 1);
	ck_assert_str_eq(hex, now);
	ck_assert_int_eq(card_hash_check(&c, full, hex, &same), 0);
	ck_assert_int_eq(same, 2);
	ck_assert_str_eq(hex, now);
	memset(other, '0', 64);
	ck_assert_int_eq(card_hash_check(&c, other, hex, &same), 0);
	ck_assert_int_eq(same, 0);
	card_release(&c);
	free(claimed);
	free(text);
	free(path);
}
END_TEST

START_TEST(test_hash_unchanged_by_recording)
{
	static const char *const files[] = {
		"cards/ok_minimal.md", "cards/ok_bom_crlf.md", "cards/ok_block_style.md",
		"cards/ok_unknown_keys.md", "cards/ok_null_values.md",
	};
	struct card_validation v = {
		.status = "validated", .last_verified = "2025-06-30", .gpu = "AMD Instinct MI300X",
		.gen = "gfx942", .model = "DeepSeek-V3 MLA, h_q 16-128", .has_isolated = 1,
		.measured_isolated = 2.5, .measured_parity = "pass", .artifact = "results/x/1",
	};

	for (int i = 0; i < NELEM(files); i++) {
		char *path = tu_resource(files[i]);
		struct card c, r;
		char h1[FS_SHA256_HEX], h2[FS_SHA256_HEX], *out = NULL;
		size_t n = 0;

		ck_assert_int_eq(load_quiet(&c, path), 0);
		ck_assert_int_eq(card_hash(&c, h1), 0);
		ck_assert_msg(card_set_validation(&out, &n, &c, &v) == 0, "%s: %s", files[i],
			      vs_last_error());
		ck_assert_msg(n != c.text_len || memcmp(out, c.text, n), "%s: nothing recorded", files[i]);
		memset(&r, 0, sizeof(r));
		ck_assert_int_eq(card_parse(&r, path, out, n), 0);
		ck_assert_int_eq(card_hash(&r, h2), 0);
		ck_assert_msg(!strcmp(h1, h2), "%s: hash changed by recording: %s -> %s", files[i], h1, h2);
		ck_assert_str_eq(r.validation.status, "validated");
		card_release(&c);
		card_release(&r);
		free(out);
		free(path);
	}
}
END_TEST

START_TEST(test_load_missing_file)
{
	struct card c;
	int err = load_quiet(&c, "/nonexistent/dir/card.md");

	ck_assert_int_eq(err, VS_EIO);
	ck_assert_msg(strstr(vs_last_error(), "/nonexistent/dir/card.md") != NULL, "%s",
		      vs_last_error());
	card_release(&c);
	card_release(NULL);
}
END_TEST

/* a card without a validation block is a draft: it loads and lints, --record adds the block */
START_TEST(test_no_validation_block_is_draft)
{
	char *path = card_path("missing_validation.md"), *out = NULL;
	struct card c, r;
	size_t n = 0;
	const struct card_validation v = {.status = "failed", .last_verified = "2026-12-01",
					  .gpu = "x", .gen = "gfx942", .model = "", .measured_parity = "fail",
					  .artifact = "results/a/b", .has_isolated = 1, .measured_isolated = 0.5};
	int q;

	ck_assert_msg(load_quiet(&c, path) == 0, "%s", vs_last_error());
	ck_assert_str_eq(c.validation.status, "draft");
	ck_assert_int_eq(card_lint(&c), 0);
	q = vs_error_set_quiet(1);
	ck_assert_msg(card_set_validation(&out, &n, &c, &v) == 0, "%s", vs_last_error());
	vs_error_set_quiet(q);
	ck_assert_msg(strstr(out, "supersedes: []\nvalidation:\n  status: failed\n") != NULL,
		      "block not appended at the end of the front matter:\n%s", out);
	memset(&r, 0, sizeof(r));
	ck_assert_int_eq(card_parse(&r, path, out, n), 0);
	ck_assert_str_eq(r.validation.status, "failed");
	ck_assert_str_eq(r.validation.artifact, "results/a/b");
	card_release(&r);
	card_release(&c);
	free(out);
	free(path);
}
END_TEST

/*
 * An unknown key one edit, a case change or look-alike letters from a known key: a warning, and an
 * error (exit 3) when the known key decides what is measured or how it is judged (issue 35).
 */
static const struct {
	const char *file;
	int rc, lines;
	const char *msgs[3];
} near_known[] = {
	{"near_known_lookalike.md", VS_ESCHEMA, 1,
	 {"error: %s:17:25: expects.isolated_speedup_m\u0456n: unknown key close to the known key "
	  "'expects.isolated_speedup_min' (a look-alike non-Latin letter?), which decides what is measured or how "
	  "it is judged: a near miss of it is an error"}},
	{"near_known_typo.md", VS_ESCHEMA, 2,
	 {"error: %s:18:12: expects.paritty: unknown key close to the known key 'expects.parity' (a typo?), which "
	  "decides",
	  "warning: %s:19:13: validatoin: unknown key close to the known key 'validation' (a typo?); it is kept"}},
	{"near_known_backend.md", VS_ESCHEMA, 1,
	 {"error: %s:14:14: match.to_backnd: unknown key close to the known key 'match.to_backend' (a typo?), which "
	  "decides"}},
	{"ok_unknown_keys.md", 0, 0, {NULL}},
};

START_TEST(test_unknown_key_near_known_warns)
{
	char *path = card_path(near_known[_i].file);
	int rc;
	char *err = check_captured(path, &rc);

	ck_assert_msg(rc == near_known[_i].rc, "%s: expected %d, got %d:\n%s", near_known[_i].file, near_known[_i].rc,
		      rc, err);
	ck_assert_msg(tu_count_lines(err) == near_known[_i].lines, "%s: expected %d lines:\n%s",
		      near_known[_i].file, near_known[_i].lines, err);
	for (int i = 0; i < near_known[_i].lines; i++) {
		char *msg = fs_printf(near_known[_i].msgs[i], path), *want = fs_printf("validate_skill: %s", msg);

		ck_assert_msg(strstr(err, want) != NULL, "%s: missing\n %s\nin:\n%s", near_known[_i].file,
			      want, err);
		free(want);
		free(msg);
	}
	free(err);
	free(path);
}
END_TEST

/* A required key missing because it is misspelled: the missing-key error names the near miss. */
static const struct {
	const char *file;
	const char *msg;
} near_missing[] = {
	{"near_missing_gate.md", ":16:24: expects.isolated_speedup_min: required when scope is 'kernel' (a number > 0) "
				 "('expects.isolated_speedup_mn', here, looks like a misspelling of "
				 "'expects.isolated_speedup_min')"},
	{"near_missing_expects.md", ":16:3: expects.isolated_speedup_min: required when scope is 'kernel' (a number > "
				    "0) ('expect', here, looks like a misspelling of 'expects')"},
};

START_TEST(test_missing_key_names_its_near_miss)
{
	char *path = card_path(near_missing[_i].file);
	int rc;
	char *err = check_captured(path, &rc);

	ck_assert_msg(rc == VS_ESCHEMA, "%s: expected %d, got %d:\n%s", near_missing[_i].file, VS_ESCHEMA, rc, err);
	ck_assert_msg(strstr(err, near_missing[_i].msg) != NULL, "%s: missing\n %s\nin:\n%s", near_missing[_i].file,
		      near_missing[_i].msg, err);
	free(err);
	free(path);
}
END_TEST

/* ---- the form a card selects (issue 36) ---------------------------------------------------- */

/* match.topk / match.extra_topk read, and card_form() gives each format its topk and why */
START_TEST(test_sparse_form_values)
{
	struct card c, d;
	char *path = card_path("ok_sparse.md"), *dpath = card_path("ok_minimal.md");
	const char *why;
	int topk, extra;

	ck_assert_int_eq(load_quiet(&c, path), 0);
	ck_assert_int_eq(load_quiet(&d, dpath), 0);
	ck_assert_int_eq(card_sparse(&c), 1);
	ck_assert_int_eq(card_sparse(&d), 0);
	ck_assert_int_eq(c.match.topk, 512);
	ck_assert_int_eq(c.match.extra_topk, 256);
	ck_assert_int_eq(d.match.topk, 0);
	ck_assert_int_eq(card_form(&c, MLA_KV_FP8_DS_MLA, &topk, &extra, &why), 1);
	ck_assert_msg(topk == 512 && extra == 0 && !strcmp(why, "match.topk"), "fp8_ds_mla: %d + %d (%s)", topk, extra,
		      why);
	ck_assert_int_eq(card_form(&c, MLA_KV_FP8_MODEL1_FNUZ, &topk, &extra, &why), 1);
	ck_assert_msg(topk == 512 && extra == 256, "fp8_model1_fnuz: %d + %d", topk, extra);
	ck_assert_int_eq(card_form(&c, MLA_KV_BF16, &topk, &extra, &why), 1);
	ck_assert_int_eq(card_form(&c, MLA_KV_FP8_E4M3_FNUZ, &topk, &extra, &why), 0);
	/* the defaults: V3.2's 2048, V4's 128 + 1024 */
	c.match.topk = c.match.extra_topk = 0;
	ck_assert_int_eq(card_form(&c, MLA_KV_FP8_DS_MLA, &topk, &extra, &why), 1);
	ck_assert_msg(topk == CARD_TOPK_V32 && extra == 0 && strstr(why, "default"), "%d + %d (%s)", topk, extra, why);
	ck_assert_int_eq(card_form(&c, MLA_KV_FP8_MODEL1, &topk, &extra, &why), 1);
	ck_assert_msg(topk == 128 && extra == 1024 && strstr(why, "V4"), "%d + %d (%s)", topk, extra, why);
	/* the dense form: its two formats, no topk */
	ck_assert_int_eq(card_form(&d, MLA_KV_FP8_E4M3_FNUZ, &topk, &extra, &why), 1);
	ck_assert_int_eq(topk, 0);
	ck_assert_int_eq(card_form(&d, MLA_KV_FP8_DS_MLA, &topk, &extra, &why), 0);
	card_release(&c);
	card_release(&d);
	free(path);
	free(dpath);
}
END_TEST

/* Lines of s holding needle. */
static int lines_with(const char *s, const char *needle)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/*
 * GEAK's flash_mla_tilelang_to_triton is a DeepSeek-V4 sparse decode whose match block says
 * deepseek_mla and fp8_e4m3_fnuz: one warning line saying what to add; the field's dense card none.
 */
START_TEST(test_sparse_talk_warns_on_dense_card)
{
	char *geak = tu_resource("geak/skills/flash_mla_tilelang_to_triton/skill.md");
	char *field = tu_resource("field/mla_tilelang_to_triton.md"), *want;
	int rc;
	char *err = check_captured(geak, &rc);

	ck_assert_msg(rc == 0, "a warning, not an error: %d\n%s", rc, err);
	want = fs_printf("warning: %s:10:15: match.arch_class: the card speaks of the sparse form ('deepseek_v4', line "
			 "47) but its match block selects the dense decode: add 'deepseek_dsa' to match.arch_class in "
			 "place of 'deepseek_mla', its cache format to match.dtypes (fp8_model1; fp8_model1_fnuz on "
			 "gfx942) and match.topk and match.extra_topk where not the format's default\n",
			 geak);
	ck_assert_msg(strstr(err, want) != NULL, "missing\n %s\nin:\n%s", want, err);
	ck_assert_int_eq(lines_with(err, "sparse form"), 1);
	free(err);
	err = check_captured(field, &rc);
	ck_assert_msg(rc == 0 && !strstr(err, "sparse form"), "the dense field card: %d\n%s", rc, err);
	free(err);
	free(want);
	free(geak);
	free(field);
}
END_TEST

static Suite *card_suite(void)
{
	Suite *s = suite_create("card");
	TCase *t = tcase_create("load");

	tcase_add_loop_test(t, test_load_error_message, 0, NELEM(load_errors));
	tcase_add_loop_test(t, test_load_error_is_one_line, 0, NELEM(load_errors));
	tcase_add_loop_test(t, test_passing_fixture, 0, NELEM(passing));
	tcase_add_loop_test(t, test_real_card_passes, 0, NELEM(our_cards));
	tcase_add_test(t, test_bad_example_refused_at_line_1);
	tcase_add_test(t, test_shared_example_values);
	tcase_add_test(t, test_our_cards_values);
	tcase_add_test(t, test_split_offsets_and_lines);
	tcase_add_test(t, test_dashes_inside_body_are_body_text);
	tcase_add_test(t, test_flow_and_block_styles_agree);
	tcase_add_test(t, test_values_validated_null_default_e2e);
	tcase_add_test(t, test_unknown_keys_kept);
	tcase_add_test(t, test_load_missing_file);
	tcase_add_test(t, test_no_validation_block_is_draft);
	suite_add_tcase(s, t);

	t = tcase_create("lint");
	tcase_add_loop_test(t, test_lint_reports_every_problem, 0, NELEM(lint_cases));
	tcase_add_test(t, test_lint_hand_filled_struct);
	tcase_add_test(t, test_sparse_form_values);
	tcase_add_test(t, test_sparse_talk_warns_on_dense_card);
	tcase_add_loop_test(t, test_unknown_key_near_known_warns, 0, NELEM(near_known));
	tcase_add_loop_test(t, test_missing_key_names_its_near_miss, 0, NELEM(near_missing));
	suite_add_tcase(s, t);

	t = tcase_create("hash");
	tcase_add_test(t, test_hash_is_front_matter_without_validation_plus_body);
	tcase_add_test(t, test_hash_sensitivity);
	tcase_add_test(t, test_hash_check_takes_the_hash_with_claims);
	tcase_add_test(t, test_hash_unchanged_by_recording);
	suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	return tu_run_suite(card_suite());
}
