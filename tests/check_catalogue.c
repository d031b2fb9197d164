/*
 * check_catalogue.c - the catalogue of bad inputs. Each row is one bad file (a fixture from
 * tests/resources/, or the known-good repository of tests/resources/evidence broken by a named
 * mutation), the command that meets it, the exact one-line error it must print and the exit status.
 * Every row runs the real binary in a fresh copy of that repository (card, plan, eval dir, and the
 * plan's task dirs materialized once), so paths in messages are short and fixed; "{*}" in an expected
 * line matches any text (absolute paths, sha256 of machine-dependent bytes). After a refusal the card
 * and every file the row did not break must be as they were: bad input never costs data.
 */
#include "testutil.h"

#include "fsutil.h"
#include "plan.h"
#include "vs_error.h"

#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CARD "skills/mla_decode_cpu_splitkv.md"
#define PLAN "plans/mla_decode_cpu_splitkv.plan.json"
#define EVAL "results/mla_decode_cpu_splitkv/run1"
#define RECORD "--record " CARD " --eval-dir " EVAL
#define MATERIALIZE "--materialize " PLAN
#define T0 "tasks/mla_decode/5ce0177ed6b554871051c203c302e8e0de4b6884bf158977764b63146c113faa"
#define T1 "tasks/mla_decode/8adedd193887e4db8ec6d4cb1a7f2a309f961dca538bb4417bb2013b029081ea"
#define REF0 T0 "/reference.safetensors"
#define TASK_REFUSED "existing task dir '" T0 "' fails verification, refusing to overwrite it (remove it to " \
		     "rebuild): "

static char *base;    /* the known-good repository, tasks materialized (made once) */
static char *scratch; /* this row's copy of it */

/* ---- files in the scratch repository ---------------------------------------------------------- */

static char *at(const char *rel)
{
	return fs_join(scratch, rel);
}

static void make_writable(const char *rel)
{
	char *path = at(rel), *dir = strdup(path);

	chmod(dirname(dir), 0755);
	chmod(path, 0644);
	free(path);
	free(dir);
}

static char *slurp(const char *rel, size_t *len)
{
	char *path = at(rel), *text = tu_read(path, len);

	free(path);
	return text;
}

static void put(const char *rel, const void *data, size_t len)
{
	char *path = at(rel);

	make_writable(rel);
	tu_write(path, data, len);
	free(path);
}

static void put_text(const char *rel, const char *text)
{
	put(rel, text, strlen(text));
}

/* Replace the first `from` in rel by `to`. */
static void edit(const char *rel, const char *from, const char *to)
{
	size_t len;
	char *text = slurp(rel, &len), *hit = strstr(text, from), *out;

	ck_assert_msg(hit != NULL, "'%s' not found in %s", from, rel);
	out = fs_printf("%.*s%s%s", (int)(hit - text), text, to, hit + strlen(from));
	put_text(rel, out);
	free(text);
	free(out);
}

/* Change len bytes at offset off (negative: from the end) of a binary file. */
static void patch(const char *rel, long off, const void *bytes, size_t n)
{
	size_t len;
	char *data = slurp(rel, &len);
	size_t at_ = off < 0 ? len - (size_t)(-off) : (size_t)off;

	ck_assert_uint_le(at_ + n, len);
	memcpy(data + at_, bytes, n);
	put(rel, data, len);
	free(data);
}

static void truncate_to(const char *rel, size_t n)
{
	size_t len;
	char *data = slurp(rel, &len);

	ck_assert_uint_le(n, len);
	put(rel, data, n);
	free(data);
}

static void append(const char *rel, const char *text)
{
	size_t len;
	char *data = slurp(rel, &len), *out = malloc(len + strlen(text));

	memcpy(out, data, len);
	memcpy(out + len, text, strlen(text));
	put(rel, out, len + strlen(text));
	free(data);
	free(out);
}

static void symlink_to(const char *target, const char *rel)
{
	char *path = at(rel);

	make_writable(rel);
	unlink(path);
	ck_assert_msg(symlink(target, path) == 0, "symlink %s", path);
	free(path);
}

/* A copy of rel outside the repository (beside the scratch dir); returns its absolute path. */
static char *copy_outside(const char *rel, const char *name)
{
	size_t len;
	char *data = slurp(rel, &len), *path = fs_printf("%s.%s", scratch, name);

	tu_write(path, data, len);
	free(data);
	return path;
}

/* Deterministic junk: bytes of a 64-bit LCG. */
static void junk(char *buf, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		buf[i] = (char)(seed >> 56);
	}
}

/* After changing a reference file on purpose, make the manifest agree with it (size and sha256). */
static void rehash(const char *task, const char *name)
{
	char *rel = fs_printf("%s/%s", task, name), *mrel = fs_printf("%s/manifest.json", task);
	char *path = at(rel), hex[65], *m, *files, *entry, *p, *out;
	size_t len;
	struct stat st;

	ck_assert_int_eq(fs_sha256_file(hex, path), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	m = slurp(mrel, &len);
	files = strstr(m, "\"files\":");
	ck_assert_ptr_nonnull(files);
	entry = strstr(files, name);
	ck_assert_ptr_nonnull(entry);
	p = strstr(entry, "\"bytes\":\t");
	ck_assert_ptr_nonnull(p);
	p += strlen("\"bytes\":\t");
	out = fs_printf("%.*s%lld%s", (int)(p - m), m, (long long)st.st_size, p + strspn(p, "0123456789"));
	free(m);
	m = out;
	p = strstr(strstr(strstr(m, "\"files\":"), name), "\"sha256\":\t\"");
	p += strlen("\"sha256\":\t\"");
	memcpy(p, hex, 64);
	put_text(mrel, m);
	free(m);
	free(rel);
	free(mrel);
	free(path);
}

/* The safetensors header of rel (after the 8-byte length) as text, and its length. */
static char *st_header(const char *rel, uint64_t *n)
{
	size_t len;
	char *data = slurp(rel, &len), *h;

	memcpy(n, data, 8);
	h = strndup(data + 8, (size_t)*n);
	free(data);
	return h;
}

/* Replace `from` by `to` (same length) in the safetensors header of rel, then rehash. */
static void st_edit(const char *rel, const char *from, const char *to)
{
	uint64_t n;
	char *h = st_header(rel, &n), *hit = strstr(h, from);

	ck_assert_msg(hit && strlen(from) == strlen(to), "'%s' not in the header of %s: %s", from, rel, h);
	patch(rel, 8 + (hit - h), to, strlen(to));
	free(h);
}

/* ---- the mutations ------------------------------------------------------------------------------ */

static void huge_card(void)
{
	size_t len, n = (5u << 20);
	char *card = slurp(CARD, &len), *big = malloc(n);

	memcpy(big, card, len);
	memset(big + len, 'x', n - len);
	put("skills/huge.md", big, n);
	free(card);
	free(big);
}

static void junk_card(void)
{
	char buf[4096];

	junk(buf, sizeof(buf), 42);
	put("skills/junk.md", buf, sizeof(buf));
}

static void dir_card(void)
{
	char *path = at("skills/adir.md");

	fs_mkdir_p(path);
	free(path);
}

static void deep_card(void)
{
	char text[4096];
	int n = snprintf(text, sizeof(text), "---\nid: deep\nnotes: ");

	for (int i = 0; i < 70; i++)
		text[n++] = '[';
	for (int i = 0; i < 70; i++)
		text[n++] = ']';
	snprintf(text + n, sizeof(text) - (size_t)n, "\n---\nbody\n");
	put_text("skills/deep.md", text);
}

static void card_link_out(void)
{
	char *outside = copy_outside(CARD, "outside.md");

	symlink_to(outside, "skills/linked.md");
	free(outside);
}

static void card_link_in(void)
{
	symlink_to("mla_decode_cpu_splitkv.md", "skills/alias.md");
}

static void plan_truncated(void)
{
	size_t len;
	char *text = slurp(PLAN, &len);

	put("plans/cut.plan.json", text, 300);
	free(text);
}

static void plan_junk(void)
{
	char buf[2048];

	junk(buf, sizeof(buf), 7);
	put("plans/junk.plan.json", buf, sizeof(buf));
}

static void plan_huge(void)
{
	size_t n = (65u << 20);
	char *big = malloc(n);

	memset(big, ' ', n);
	big[0] = '{';
	big[n - 1] = '}';
	put("plans/huge.plan.json", big, n);
	free(big);
}

static void plan_unknown_impl(void)
{
	edit(PLAN, "\"impl\": \"cpu.splitkv\"", "\"impl\": \"cpu.turbo\"");
}

static void plan_spec_edited(void)
{
	edit(PLAN, "\"seed\": 8733522314590055", "\"seed\": 8733522314590056");
}

static void plan_negative_seqlen(void)
{
	edit(PLAN, "\"seqlens\": [\n\t\t\t\t\t64,", "\"seqlens\": [\n\t\t\t\t\t-64,");
}

static void plan_foreign_config(void)
{
	edit(PLAN, "\"num_splits\": 64", "\"num_splits\": 63");
}

static void plan_protocol_range(void)
{
	edit(PLAN, "\"min_pairs\": 4", "\"min_pairs\": 1");
}

static void plan_wrong_type(void)
{
	edit(PLAN, "\"tier\": \"smoke\"", "\"tier\": 5");
}

static void plan_duplicate_key(void)
{
	edit(PLAN, "\"gen\": \"x86_64\",", "\"gen\": \"x86_64\",\n\t\"gen\": \"sm_90\",");
}

static void plan_missing_key(void)
{
	edit(PLAN, "\"protocol\":", "\"protocols\":");
}

static void plan_link_out(void)
{
	char *outside = copy_outside(PLAN, "outside.plan.json");

	symlink_to(outside, "plans/linked.plan.json");
	free(outside);
}

static void task_truncated(void)
{
	truncate_to(REF0, 1000);
}

static void task_oversized(void)
{
	append(T0 "/inputs.safetensors", "trailing bytes");
}

static void task_flipped(void)
{
	patch(REF0, -5, "\x01", 1);
}

static void task_extra_file(void)
{
	put_text(T0 "/notes.txt", "hello\n");
}

static void task_file_link(void)
{
	char *outside = copy_outside(REF0, "outside.safetensors");

	symlink_to(outside, REF0);
	free(outside);
}

static void task_dir_link(void)
{
	char *dir = at(T0), *moved = fs_printf("%s.moved-task", scratch);

	ck_assert_int_eq(rename(dir, moved), 0);
	ck_assert_int_eq(symlink(moved, dir), 0);
	free(dir);
	free(moved);
}

static void task_renamed(void)
{
	char *a = at(T0), *b = at(T1), *tmp = fs_printf("%s.x", a);

	chmod(a, 0755);
	chmod(b, 0755);
	ck_assert_int_eq(rename(a, tmp), 0);
	ck_assert_int_eq(rename(b, a), 0);
	ck_assert_int_eq(rename(tmp, b), 0);
	free(a);
	free(b);
	free(tmp);
}

static void manifest_missing(void)
{
	char *path = at(T0 "/manifest.json");

	make_writable(T0 "/manifest.json");
	unlink(path);
	free(path);
}

static void manifest_reformatted(void)
{
	edit(T0 "/manifest.json", "\"format\":\t", "\"format\": ");
}

static void manifest_not_json(void)
{
	truncate_to(T0 "/manifest.json", 200);
}

static void manifest_wrong_sha(void)
{
	size_t len;
	char *m = slurp(T0 "/manifest.json", &len), *p;

	p = strstr(strstr(strstr(m, "\"files\":"), "reference.safetensors"), "\"sha256\":\t\"");
	p += strlen("\"sha256\":\t\"");
	memcpy(p, "0000000000000000", 16);
	put_text(T0 "/manifest.json", m);
	free(m);
}

static void st_overlap(void)
{
	st_edit(REF0, "\"data_offsets\":[131072,131328]", "\"data_offsets\":[131064,131320]");
	rehash(T0, "reference.safetensors");
}

static void st_past_end(void)
{
	st_edit(REF0, "\"data_offsets\":[131072,131328]", "\"data_offsets\":[131080,131336]");
	rehash(T0, "reference.safetensors");
}

static void st_header_length(void)
{
	patch(REF0, 0, "\x00\x00\x10\x00\x00\x00\x00\x00", 8); /* 1 MiB of header in a 129 KiB file */
	rehash(T0, "reference.safetensors");
}

static void st_truncated(void)
{
	truncate_to(REF0, 4096);
	rehash(T0, "reference.safetensors");
}

static void st_oversized(void)
{
	append(REF0, "12345678");
	rehash(T0, "reference.safetensors");
}

static void st_bad_json(void)
{
	st_edit(REF0, "{\"__metadata__\"", "[\"__metadata__\"");
	rehash(T0, "reference.safetensors");
}

static void st_dtype(void)
{
	st_edit(REF0, "\"F32\"", "\"F64\"");
	rehash(T0, "reference.safetensors");
}

static void other_card(void)
{
	size_t len;
	char *text = slurp(CARD, &len), *hit = strstr(text, "id: mla_decode_cpu_splitkv"), *out;

	ck_assert_ptr_nonnull(hit);
	out = fs_printf("%.*sid: other_card%s", (int)(hit - text), text, hit + strlen("id: mla_decode_cpu_splitkv"));
	put_text("skills/other_card.md", out);
	free(text);
	free(out);
}

static void samples_edited(void)
{
	edit(EVAL "/samples.csv", ",default,11.880103,", ",default,10.880103,");
}

static void result_truncated(void)
{
	truncate_to(EVAL "/result.json", 500);
}

static void result_duplicate(void)
{
	edit(EVAL "/result.json", "\"verdict\":\t\"validated\"",
	     "\"verdict\":\t\"validated\",\n\t\"verdict\":\t\"failed\"");
}

static void result_missing_key(void)
{
	edit(EVAL "/result.json", "\"verdict\":", "\"verdikt\":");
}

static void result_schema(void)
{
	edit(EVAL "/result.json", "validate_skill.result/1", "validate_skill.result/0");
}

static void result_speedup(void)
{
	edit(EVAL "/result.json", "\"estimate\":\t2.29", "\"estimate\":\t3.29");
}

/* Issue 12, case 11: the card recorded from the evidence, then relabelled to another model. */
static void card_relabelled(void)
{
	char *out = NULL, *err = NULL;

	ck_assert_int_eq(tu_run_tool(scratch, RECORD, &out, &err), 0);
	edit(CARD, "model: \"DeepSeek-V3 MLA, h_q 16-128\"", "model: \"Llama-3 70B\"");
	free(out);
	free(err);
}

static void result_partial(void)
{
	edit(EVAL "/result.json", "\"partial\":\tfalse", "\"partial\":\ttrue");
}

static void result_dirty(void)
{
	edit(EVAL "/result.json", "\"kernels_dirty\":\tfalse", "\"kernels_dirty\":\ttrue");
}

static void result_foreign_gen(void)
{
	edit(EVAL "/result.json", "\"gen\":\t\"x86_64\"", "\"gen\":\t\"sm_90\"");
}

static void manifest_copy_missing(void)
{
	char *path = at(EVAL "/manifests/5ce0177ed6b554871051c203c302e8e0de4b6884bf158977764b63146c113faa.json");

	unlink(path);
	free(path);
}

static void manifest_copy_edited(void)
{
	edit(EVAL "/manifests/8adedd193887e4db8ec6d4cb1a7f2a309f961dca538bb4417bb2013b029081ea.json", "\"seed\":",
	     "\"seed\": ");
}

static void card_changed(void)
{
	edit(CARD, "## Mechanism\n", "## Mechanism\n\nEdited after the run.\n");
}

static void eval_plan_link(void)
{
	char *outside = copy_outside(EVAL "/plan.json", "outside.plan.json");

	symlink_to(outside, EVAL "/plan.json");
	free(outside);
}

static void eval_dir_empty(void)
{
	char *path = at("results/mla_decode_cpu_splitkv/empty");

	fs_mkdir_p(path);
	free(path);
}

/* ---- the catalogue -------------------------------------------------------------------------------- */

struct bad_input {
	const char *what;     /* what is wrong with it */
	const char *fixture;  /* a file of tests/resources/ copied to dest, or NULL */
	const char *dest;     /* where, in the repository */
	void (*make)(void);   /* or: a mutation of the repository */
	const char *args;     /* validate_skill's arguments, run in the repository */
	const char *error;    /* the exact stderr line after "validate_skill: error: " ({*}: any text) */
	int status;
};

static const struct bad_input catalogue[] = {
	/* cards: front matter */
	{"front matter never closed", "cards/split_no_closing_fence.md", "skills/a.md", NULL, "--static skills/a.md",
	 "skills/a.md:1:1: front matter: no closing '---' line for the front matter opened here", 3},
	{"a title line above the opening fence", "cards/split_text_before_fence.md", "skills/a.md",
	 NULL, "--static skills/a.md",
	 "skills/a.md:1:1: front matter: the first line must be '---' (found 'Mla Tilelang To Triton')", 3},
	{"empty file", "cards/split_empty_file.md", "skills/a.md", NULL, "--static skills/a.md",
	 "skills/a.md:1:1: front matter: the file is empty; the first line must be '---'", 3},
	{"not UTF-8", "cards/split_not_utf8.md", "skills/a.md", NULL, "--static skills/a.md",
	 "skills/a.md:4:13: encoding: invalid UTF-8 byte 0xff (a card is UTF-8 text)", 3},
	{"a NUL byte", "cards/split_nul_byte.md", "skills/a.md", NULL, "--static skills/a.md",
	 "skills/a.md:33:6: encoding: NUL byte in the file (a card is UTF-8 text)", 3},
	{"a lone CR line break", "cards/split_lone_cr.md", "skills/a.md", NULL, "--static skills/a.md",
	 "skills/a.md:4:19: front matter: a lone CR is a line break in YAML; end front matter lines with LF or CRLF "
	 "only", 3},
	{"huge file (5 MiB)", NULL, NULL, huge_card, "--static skills/huge.md",
	 "'skills/huge.md' is larger than the limit of 4194304 bytes", 3},
	{"binary junk", NULL, NULL, junk_card, "--static skills/junk.md",
	 "skills/junk.md:1:1: encoding: invalid UTF-8 byte 0x91 (a card is UTF-8 text)", 3},
	{"a directory named like a card", NULL, NULL, dir_card, "--static skills/adir.md",
	 "'skills/adir.md' is a directory holding no card (neither <id>.md nor <id>/skill.md)", 3},
	{"a symlink to a card outside the repository", NULL, NULL, card_link_out, "--static skills/linked.md",
	 "card 'skills/linked.md' is a symlink to '{*}/repo.outside.md', outside the repository '{*}/repo': refused", 3},
	{"a symlinked card given to --record", NULL, NULL, card_link_in, "--record skills/alias.md --eval-dir " EVAL,
	 "card 'skills/alias.md' is a symlink: recording replaces the file and would turn the link into a copy; "
	 "record the file it points to", 3},
	/* cards: YAML */
	{"malformed YAML: unclosed flow sequence", "catalogue/yaml_unclosed_flow.md", "skills/a.md",
	 NULL, "--static skills/a.md",
	 "skills/a.md:11:9: front matter: invalid yaml: did not find expected ',' or ']' (while parsing a flow "
	 "sequence at line 10)", 3},
	{"malformed YAML: a tab in the indentation", "catalogue/yaml_tab_indent.md", "skills/a.md",
	 NULL, "--static skills/a.md",
	 "skills/a.md:8:1: front matter: invalid yaml: a tab character, which YAML does not allow in indentation "
	 "(indent with spaces)", 3},
	{"malformed YAML: a key indented under a scalar", "catalogue/yaml_bad_indent.md", "skills/a.md",
	 NULL, "--static skills/a.md",
	 "skills/a.md:17:11: front matter: invalid yaml: mapping values are not allowed in this context", 3},
	{"YAML anchors and aliases", "catalogue/yaml_alias.md", "skills/a.md", NULL, "--static skills/a.md",
	 "skills/a.md:11:11: match.dtypes: anchors ('&d') are not supported in cards", 3},
	{"a YAML tag", "catalogue/yaml_tag.md", "skills/a.md", NULL, "--static skills/a.md",
	 "skills/a.md:16:25: expects.isolated_speedup_min: tags ('!!str') are not supported in cards", 3},
	{"nesting 70 deep", NULL, NULL, deep_card, "--static skills/deep.md",
	 "skills/deep.md:3:72: notes: nesting deeper than 64 levels", 3},
	{"duplicate top-level key", "cards/dup_top_level.md", "skills/a.md", NULL, "--static skills/a.md",
	 "skills/a.md:27:1: title: duplicate key 'title' (first at line 3, again at line 27)", 3},
	{"duplicate nested key", "cards/dup_nested.md", "skills/a.md", NULL, "--static skills/a.md",
	 "skills/a.md:11:3: match.gens: duplicate key 'gens' (first at line 9, again at line 11)", 3},
	{"duplicate key in a flow mapping", "cards/dup_flow_measured.md", "skills/a.md", NULL, "--static skills/a.md",
	 "skills/a.md:20:40: validation.measured.isolated: duplicate key 'isolated' (first at line 20, again at line "
	 "20)", 3},
	/* cards: schema */
	{"wrong type: title is a list", "cards/type_title_list.md", "skills/a.md", NULL, "--static skills/a.md",
	 "skills/a.md:3:8: title: expected a string, found a list", 3},
	{"wrong type: match.gens is a scalar", "cards/type_gens_scalar.md", "skills/a.md",
	 NULL, "--static skills/a.md",
	 "skills/a.md:9:9: match.gens: expected a list of strings like [a, b], found 'gfx942'", 3},
	{"wrong type: match is a scalar", "cards/type_match_scalar.md", "skills/a.md", NULL, "--static skills/a.md",
	 "skills/a.md:7:8: match: expected a mapping of keys, found a scalar 'mla_attention'", 3},
	{"wrong type: isolated_speedup_min is text", "cards/num_isolated_text.md", "skills/a.md",
	 NULL, "--static skills/a.md",
	 "skills/a.md:16:25: expects.isolated_speedup_min: expected a number, found 'fast'", 3},
	{"wrong type: validation.status is a list", "cards/type_status_list.md", "skills/a.md",
	 NULL, "--static skills/a.md",
	 "skills/a.md:19:11: validation.status: expected one of: draft, validated, failed, found a list", 3},
	{"missing key: id", "cards/missing_id.md", "skills/a.md", NULL, "--static skills/a.md",
	 "skills/a.md:2:1: id: required key is missing (add 'id:' to the front matter, lines 2-25)", 3},
	{"missing key: match.gens", "cards/missing_match_gens.md", "skills/a.md", NULL, "--static skills/a.md",
	 "skills/a.md:8:3: match.gens: required key is missing (add 'gens:' to the mapping 'match', which "
	 "starts at line 8)", 3},
	{"missing key: validation.status (a card without a validation block is a draft)",
	 "cards/missing_validation_status.md", "skills/a.md", NULL, "--static skills/a.md",
	 "skills/a.md:19:3: validation.status: required key is missing (add 'status:' to the mapping "
	 "'validation', which starts at line 19)", 3},
	{"status 'stale' (computed, never written)", "cards/enum_status_stale.md", "skills/a.md",
	 NULL, "--static skills/a.md",
	 "skills/a.md:19:11: validation.status: 'stale' is computed by the report and never written; use one of: "
	 "draft, validated, failed", 3},
	{"a date that does not exist", "cards/date_not_real.md", "skills/a.md", NULL, "--static skills/a.md",
	 "skills/a.md:20:18: validation.last_verified: '2025-02-30' is not a real date written YYYY-MM-DD", 3},
	{"id is not the file name", "cards/lint_id_mismatch.md", "skills/a.md", NULL, "--static skills/a.md",
	 "skills/a.md:2:5: id: 'something_else' does not match the file name 'a.md' (id must equal the file name "
	 "without .md)", 3},
	{"a body section missing", "cards/lint_missing_section.md", "skills/lint_missing_section.md",
	 NULL, "--static skills/lint_missing_section.md",
	 "skills/lint_missing_section.md:28:1: body: missing section '## Procedure'", 3},
	/* plans */
	{"plan cut short", NULL, NULL, plan_truncated, "--materialize plans/cut.plan.json",
	 "plans/cut.plan.json:12: not valid JSON", 3},
	{"plan of binary junk", NULL, NULL, plan_junk, "--materialize plans/junk.plan.json",
	 "plans/junk.plan.json:1: not valid JSON", 3},
	{"plan over 64 MiB", NULL, NULL, plan_huge, "--materialize plans/huge.plan.json",
	 "'plans/huge.plan.json' is larger than the limit of 67108864 bytes", 3},
	{"plan naming an unknown implementation", NULL, NULL, plan_unknown_impl, MATERIALIZE,
	 "plans/mla_decode_cpu_splitkv.plan.json: candidate 'cpu.turbo' names no implementation of this build; the "
	 "implementations are: cpu.naive, cpu.splitkv, hip.baseline, hip.flash", 3},
	{"plan whose task spec was edited", NULL, NULL, plan_spec_edited, MATERIALIZE,
	 "plans/mla_decode_cpu_splitkv.plan.json: tasks[0] 'bf16-page1-h32': spec.seed is 8733522314590056 in the "
	 "plan, the tool plans 8733522314590055: the plan was edited; emit it again",
	 3},
	{"plan with a negative sequence length", NULL, NULL, plan_negative_seqlen, MATERIALIZE,
	 "plans/mla_decode_cpu_splitkv.plan.json: tasks[0]: task 'bf16-page1-h32': seqlens[0] is -64, outside [0, "
	 "max_pages x page_size = 127]", 3},
	{"plan with a config the implementation does not have", NULL, NULL, plan_foreign_config, MATERIALIZE,
	 "plans/mla_decode_cpu_splitkv.plan.json: candidate.configs[3] 'bn16-bh8-sp64-w0-st0' is not a config of "
	 "cpu.splitkv for 'x86_64' (the plan was edited or comes from another build: emit it again)", 3},
	{"plan with a protocol out of range", NULL, NULL, plan_protocol_range, MATERIALIZE,
	 "plans/mla_decode_cpu_splitkv.plan.json: protocol.min_pairs is 1, expected an integer from 2 to 10000000", 3},
	{"plan with a wrong type", NULL, NULL, plan_wrong_type, MATERIALIZE,
	 "plans/mla_decode_cpu_splitkv.plan.json: \"tier\" is missing or not a string", 3},
	{"plan with a duplicate key", NULL, NULL, plan_duplicate_key, MATERIALIZE,
	 "plans/mla_decode_cpu_splitkv.plan.json: key 'gen' appears twice in the top-level object", 3},
	{"plan with a misspelled key (its protocol missing)", NULL, NULL, plan_missing_key, MATERIALIZE,
	 "plans/mla_decode_cpu_splitkv.plan.json: unknown key 'protocols': a plan holds only what --emit-plan writes "
	 "(what a user chooses goes in the card or on the command line); emit it again",
	 3},
	{"plan that is a symlink out of the repository", NULL, NULL,
	 plan_link_out, "--materialize plans/linked.plan.json",
	 "plan 'plans/linked.plan.json' is a symlink to '{*}/repo.outside.plan.json', outside the repository "
	 "'{*}/repo': refused", 3},
	/* task dirs */
	{"task file truncated", NULL, NULL, task_truncated, MATERIALIZE,
	 TASK_REFUSED "'" T0 "/reference.safetensors' has 1000 bytes, the manifest says 131752", 3},
	{"task file with bytes appended", NULL, NULL, task_oversized, MATERIALIZE,
	 TASK_REFUSED "'" T0 "/inputs.safetensors' has 324182 bytes, the manifest says 324168", 3},
	{"task file with one byte changed", NULL, NULL, task_flipped, MATERIALIZE,
	 TASK_REFUSED "'" T0 "/reference.safetensors': sha256 is {*}, the manifest says {*}", 3},
	/* issue 12, case 7: a run over a tampered task dir is no run (exit 3, not 0) */
	{"run over a task file with one byte changed", NULL, NULL, task_flipped, "--run " PLAN " --threads 2",
	 TASK_REFUSED "'" T0 "/reference.safetensors': sha256 is {*}, the manifest says {*}", 3},
	{"task dir with a file not in its manifest", NULL, NULL, task_extra_file, MATERIALIZE,
	 TASK_REFUSED "'" T0 "/notes.txt' is not listed in the manifest", 3},
	{"task file that is a symlink out of the tree", NULL, NULL, task_file_link, MATERIALIZE,
	 TASK_REFUSED "'" T0 "/reference.safetensors' is not a regular file", 3},
	{"task dir that is a symlink", NULL, NULL, task_dir_link, MATERIALIZE,
	 TASK_REFUSED "task dir '" T0 "' is a symlink: task dirs are real directories under the tasks root", 3},
	{"task dirs swapped (name is not the spec's hash)", NULL, NULL, task_renamed, MATERIALIZE,
	 TASK_REFUSED "'" T0 "/manifest.json': the spec's hash "
	 "8adedd193887e4db8ec6d4cb1a7f2a309f961dca538bb4417bb2013b029081ea is not the dir's name "
	 "'5ce0177ed6b554871051c203c302e8e0de4b6884bf158977764b63146c113faa'", 3},
	{"task dir without its manifest", NULL, NULL, manifest_missing, MATERIALIZE,
	 TASK_REFUSED "'" T0 "/manifest.json' is missing", 3},
	{"manifest reformatted by hand", NULL, NULL, manifest_reformatted, MATERIALIZE,
	 TASK_REFUSED "'" T0 "/manifest.json' differs from the canonical manifest of its own values at byte 12 "
	 "(edited?)", 3},
	{"manifest cut short", NULL, NULL, manifest_not_json, MATERIALIZE,
	 TASK_REFUSED "'" T0 "/manifest.json' is not valid JSON", 3},
	{"manifest with a wrong sha256", NULL, NULL, manifest_wrong_sha, MATERIALIZE,
	 TASK_REFUSED "'" T0 "/reference.safetensors': sha256 is {*}, the manifest says 0000000000000000{*}", 3},
	{"safetensors offsets that overlap", NULL, NULL, st_overlap, MATERIALIZE,
	 TASK_REFUSED "'" T0 "/reference.safetensors': tensor 'lse' [131064, 131320) overlaps tensor 'out' ending "
	 "at byte 131072 (the file matches its sha256 in the manifest: the task dir was written wrong)", 3},
	{"safetensors offsets past the end of the file", NULL, NULL, st_past_end, MATERIALIZE,
	 TASK_REFUSED "'" T0 "/reference.safetensors': tensor 'lse' ends at byte 131336, past the data section of "
	 "131328 bytes (the file matches its sha256 in the manifest: the task dir was written wrong)", 3},
	{"safetensors header length past the end of the file", NULL, NULL, st_header_length, MATERIALIZE,
	 TASK_REFUSED "'" T0 "/reference.safetensors': header length 1048576 runs past the end of the file (131752 "
	 "bytes) (the file matches its sha256 in the manifest: the task dir was written wrong)", 3},
	{"safetensors truncated (manifest agrees)", NULL, NULL, st_truncated, MATERIALIZE,
	 TASK_REFUSED "'" T0 "/reference.safetensors': tensor 'out' ends at byte 131072, past the data section of "
	 "3672 bytes (the file matches its sha256 in the manifest: the task dir was written wrong)", 3},
	{"safetensors with trailing bytes (manifest agrees)", NULL, NULL, st_oversized, MATERIALIZE,
	 TASK_REFUSED "'" T0 "/reference.safetensors': the tensors cover 131328 bytes, but the data section has "
	 "131336 (trailing bytes belong to no tensor) (the file matches its sha256 in the manifest: the task dir "
	 "was written wrong)", 3},
	{"safetensors header not a JSON object", NULL, NULL, st_bad_json, MATERIALIZE,
	 TASK_REFUSED "'" T0 "/reference.safetensors': header is not valid JSON (near byte 15 of the header) (the "
	 "file matches its sha256 in the manifest: the task dir was written wrong)", 3},
	{"safetensors with an unsupported dtype", NULL, NULL, st_dtype, MATERIALIZE,
	 TASK_REFUSED "'" T0 "/reference.safetensors': tensor 'out' has unsupported dtype 'F64' (BF16, F32, I32 and "
	 "U8 are supported) (the file matches its sha256 in the manifest: the task dir was written wrong)", 3},
	/* eval dirs */
	{"eval dir from another card", NULL, NULL, other_card, "--record skills/other_card.md --eval-dir " EVAL,
	 "results/mla_decode_cpu_splitkv/run1: the evidence is for card 'mla_decode_cpu_splitkv', not 'other_card'", 3},
	{"eval dir whose samples were edited", NULL, NULL, samples_edited, RECORD,
	 "results/mla_decode_cpu_splitkv/run1: 'samples.csv' does not match result.json (sha256 dfd2837df391..., "
	 "recorded 7caafc3e4a92...): the evidence was modified", 3},
	{"result.json cut short", NULL, NULL, result_truncated, RECORD,
	 "results/mla_decode_cpu_splitkv/run1/result.json:17: not valid JSON", 3},
	{"result.json with a duplicate key", NULL, NULL, result_duplicate, RECORD,
	 "results/mla_decode_cpu_splitkv/run1/result.json: key 'verdict' appears twice in the top-level object", 3},
	{"result.json without a verdict", NULL, NULL, result_missing_key, RECORD,
	 "results/mla_decode_cpu_splitkv/run1/result.json: incomplete result: \"verdict\" is missing or not a "
	 "string", 3},
	{"result.json of another schema", NULL, NULL, result_schema, RECORD,
	 "results/mla_decode_cpu_splitkv/run1/result.json: \"schema\" is 'validate_skill.result/0', expected "
	 "'validate_skill.result/1' (not a result written by this tool)", 3},
	{"result.json with a speedup edited", NULL, NULL, result_speedup, RECORD,
	/* the numbers of the vs_gen/3 fixture in the shortest digits that read back */
	 "results/mla_decode_cpu_splitkv/run1: overall speedup 3.294612681876888 [1.4639344739181892, "
	 "3.43401757070309] in result.json does not recompute from samples.csv (2.294612681876888 "
	 "[1.4639344739181892, 3.43401757070309])", 3},
	{"a card relabelled to another model", NULL, NULL, card_relabelled, "--verify " CARD,
	 CARD ": validation.model is 'Llama-3 70B' but the evidence says 'DeepSeek-V3 MLA, h_q 16-128'", 3},
	{"a partial run", NULL, NULL, result_partial, RECORD,
	 "results/mla_decode_cpu_splitkv/run1: a filtered (--task/--impl/--config) run is partial evidence and cannot "
	 "be recorded: run the whole plan", 3},
	{"a dirty build's run", NULL, NULL, result_dirty, RECORD,
	 "results/mla_decode_cpu_splitkv/run1: the binary that ran was built from uncommitted kernels/ sources "
	 "(kernels tree cdec330e3cc7bc11ef89ec2a2163483bdcfaff00, dirty): commit, rebuild and run again before "
	 "recording", 3},
	{"a run on a generation the card does not list", NULL, NULL, result_foreign_gen, RECORD,
	 "results/mla_decode_cpu_splitkv/run1: measured on 'sm_90' (AMD EPYC), which is not in "
	 "skills/mla_decode_cpu_splitkv.md's match.gens: this evidence cannot speak for the card", 3},
	{"eval dir without a manifest copy", NULL, NULL, manifest_copy_missing, RECORD,
	 "results/mla_decode_cpu_splitkv/run1: "
	 "'manifests/5ce0177ed6b554871051c203c302e8e0de4b6884bf158977764b63146c113faa.json' is missing from the "
	 "eval dir", 3},
	{"eval dir with a manifest copy edited", NULL, NULL, manifest_copy_edited, RECORD,
	 "results/mla_decode_cpu_splitkv/run1: "
	 "'manifests/8adedd193887e4db8ec6d4cb1a7f2a309f961dca538bb4417bb2013b029081ea.json' does not match "
	 "result.json (sha256 ff7c7a88e24a..., recorded 910375612970...): the evidence was modified", 3},
	{"card changed after the run", NULL, NULL, card_changed, RECORD,
	 "skills/mla_decode_cpu_splitkv.md: the card changed since this evidence was produced (card hash "
	 "2cf2725bc841..., evidence f640bc5341d4...): emit the plan and run again", 3},
	{"eval dir file that is a symlink", NULL, NULL, eval_plan_link, RECORD,
	 "results/mla_decode_cpu_splitkv/run1: 'plan.json' is a symlink: an eval dir holds its own files", 3},
	{"eval dir without result.json", NULL, NULL,
	 eval_dir_empty, "--record " CARD " --eval-dir results/mla_decode_cpu_splitkv/empty",
	 "results/mla_decode_cpu_splitkv/empty: no eval dir with a result.json there", 3},
};

#define NCATALOGUE ((int)(sizeof(catalogue) / sizeof(catalogue[0])))

/* s matches pattern, where "{*}" in pattern matches any run of characters. */
static int matches(const char *s, const char *pattern)
{
	const char *star = strstr(pattern, "{*}");

	if (!star)
		return !strcmp(s, pattern);
	if (strncmp(s, pattern, (size_t)(star - pattern)))
		return 0;
	s += star - pattern;
	for (const char *t = s; ; t++) {
		if (matches(t, star + 3))
			return 1;
		if (!*t)
			return 0;
	}
}

static void shell(const char *fmt, const char *a, const char *b)
{
	char *cmd = fs_printf(fmt, a, b);

	ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
	free(cmd);
}

/* Once for the suite: the evidence repository with its task dirs materialized. */
static void make_base(void)
{
	char *src = tu_resource("evidence"), *tmp = tu_tmpdir(), *out = NULL, *err = NULL;
	int status;

	base = fs_join(tmp, "repo");
	shell("cp -R '%s' '%s'", src, base);
	status = tu_run_tool(base, "--materialize " PLAN " --threads 2", &out, &err);
	if (status != 0) {
		fprintf(stderr, "cannot materialize the evidence plan: %s\n", err);
		abort();
	}
	free(src);
	free(tmp);
	free(out);
	free(err);
}

/* Remove the tu_tmpdir() that holds the repository at path (and nothing else). */
static void remove_tmpdir_of(const char *path)
{
	char *copy = strdup(path), *dir = dirname(copy);

	ck_assert_msg(strstr(dir, "/vs_test_") && strlen(dir) > strlen("/vs_test_"), "not a test dir: %s", dir);
	shell("chmod -R u+w '%s' && rm -rf '%s'", dir, dir);
	free(copy);
}

static void remove_base(void)
{
	remove_tmpdir_of(base);
	free(base);
}

static void setup(void)
{
	char *tmp = tu_tmpdir();

	scratch = fs_join(tmp, "repo");
	shell("cp -a '%s' '%s'", base, scratch);
	free(tmp);
}

static void teardown(void)
{
	remove_tmpdir_of(scratch);
	free(scratch);
}

START_TEST(bad_input_is_refused_with_its_line)
{
	const struct bad_input *c = &catalogue[_i];
	char *out = NULL, *err = NULL, *want, *card_before, *card_after;
	int status;

	if (c->fixture) {
		char *src = tu_resource(c->fixture), *text;
		size_t len;

		text = tu_read(src, &len);
		put(c->dest, text, len);
		free(text);
		free(src);
	}
	if (c->make)
		c->make();
	card_before = slurp(CARD, NULL);
	status = tu_run_tool(scratch, c->args, &out, &err);
	card_after = slurp(CARD, NULL);
	want = fs_printf("validate_skill: error: %s\n", c->error);
	if (getenv("VS_CATALOGUE_PRINT"))
		fprintf(stderr, "ROW %d [%s] exit %d: %s", _i, c->what, status, err);
	ck_assert_msg(status == c->status, "%s: '%s' exits %d, want %d; stderr:\n%s", c->what, c->args, status,
		      c->status, err);
	ck_assert_msg(matches(err, want), "%s: '%s' prints\n%swant\n%s", c->what, c->args, err, want);
	ck_assert_msg(!strcmp(card_before, card_after), "%s: '%s' changed the card", c->what, c->args);
	free(want);
	free(out);
	free(err);
	free(card_before);
	free(card_after);
}
END_TEST

/* The catalogue runs against a repository that is good: unbroken, every command above succeeds. */
START_TEST(the_unbroken_repository_passes)
{
	char *out = NULL, *err = NULL;
	int status;

	status = tu_run_tool(scratch, "--static " CARD, &out, &err);
	ck_assert_msg(status == 0, "--static: %s", err);
	free(out);
	free(err);
	status = tu_run_tool(scratch, MATERIALIZE, &out, &err);
	ck_assert_msg(status == 0, "--materialize: %s", err);
	free(out);
	free(err);
	status = tu_run_tool(scratch, RECORD, &out, &err);
	ck_assert_msg(status == 0, "--record: %s", err);
	free(out);
	free(err);
	status = tu_run_tool(scratch, "--verify " CARD, &out, &err);
	ck_assert_msg(status == 0, "--verify: %s", err);
	free(out);
	free(err);
}
END_TEST

START_TEST(catalogue_has_forty_rows_with_distinct_causes)
{
	ck_assert_int_ge(NCATALOGUE, 40);
	for (int i = 0; i < NCATALOGUE; i++)
		for (int j = i + 1; j < NCATALOGUE; j++)
			ck_assert_msg(strcmp(catalogue[i].what, catalogue[j].what), "row %d repeats '%s'", j,
				      catalogue[i].what);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("catalogue");
	TCase *tc = tcase_create("catalogue");

	tcase_add_unchecked_fixture(tc, make_base, remove_base);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, catalogue_has_forty_rows_with_distinct_causes);
	tcase_add_test(tc, the_unbroken_repository_passes);
	tcase_add_loop_test(tc, bad_input_is_refused_with_its_line, 0, NCATALOGUE);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
