/*
 * check_runtime.c - a card's `runtime:` contract (GEAK's template, issue 38): constraints parsed
 * and checked against recorded versions; --emit-plan refuses a plan whose implementations were
 * described outside the contract, and says what it checked when they were not.
 */
#include "testutil.h"

#include "card.h"
#include "fsutil.h"
#include "runtime.h"
#include "vs_error.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static char *tmp;

static void setup(void)
{
	vs_error_set_quiet(1);
	tmp = tu_tmpdir();
	setenv("VS_PYTHON", "/usr/bin/python3", 1); /* Debian's, with python3-numpy */
}

static void teardown(void)
{
	fs_remove_tree(tmp);
	free(tmp);
	vs_error_set_quiet(0);
}

/* The CPU card with runtime: {<contract>} added, as tmp/skills/mla_decode_cpu_splitkv.md. */
static char *card_with_runtime(const char *contract)
{
	char *src = tu_resource("skills/mla_decode_cpu_splitkv.md"), *text = tu_read(src, NULL), *at, *out;
	char *dir = fs_join(tmp, "skills"), *path = fs_join(dir, "mla_decode_cpu_splitkv.md");

	fs_mkdir_p(dir);
	at = strstr(text, "expects:");
	ck_assert_ptr_nonnull(at);
	out = fs_printf("%.*sruntime: %s\n%s", (int)(at - text), text, contract, at);
	tu_write(path, out, strlen(out));
	free(src);
	free(text);
	free(dir);
	free(out);
	return path;
}

static const struct {
	const char *contract; /* the card's runtime: value */
	int read;             /* runtime_read()'s answer */
	int holds;            /* runtime_check() against numpy 2.0.2, torch 2.11.0+cu130: 0 holds, 1 not */
	const char *line;     /* in its line */
} cases[] = {
	{"{}", 0, 0, ""},
	{"{numpy: \">=1.24\"}", 0, 0, "numpy >=1.24: 2.0.2 holds"},
	{"{numpy: \">=1.24,<2.1\"}", 0, 0, "numpy >=1.24,<2.1: 2.0.2 holds"},
	{"{numpy: \"<2\"}", 0, 1, "runtime numpy '<2' does not hold for numpy 2.0.2"},
	{"{torch: \"==2.11.0\"}", 0, 0, "torch ==2.11.0: 2.11.0+cu130 holds"},
	{"{torch: \"!=2.11\"}", 0, 1, "runtime torch '!=2.11' does not hold"},
	{"{triton: \">=3.5\"}", 0, 0, "triton >=3.5: not checked (no implementation that ran records it)"},
	{"{numpy: \"2.0\"}", VS_ESCHEMA, 0, "runtime.numpy: '2.0' is not a version constraint"},
	{"{numpy: \">=x\"}", VS_ESCHEMA, 0, "is not a version constraint"},
	{"[numpy]", VS_ESCHEMA, 0, "runtime: a mapping of package names"},
};

START_TEST(contract_is_checked_against_recorded_versions)
{
	char *path = card_with_runtime(cases[_i].contract), line[512];
	struct card c;
	struct runtime_contract rt;
	cJSON *v = cJSON_Parse("{\"numpy\": \"2.0.2\", \"torch\": \"2.11.0+cu130\", \"python\": \"3.11.2\"}");
	int err;

	ck_assert_msg(card_load(&c, path) == 0, "%s", vs_last_error());
	err = runtime_read(&rt, &c);
	ck_assert_msg(err == cases[_i].read, "%s: read %d, want %d (%s)", cases[_i].contract, err, cases[_i].read,
		      vs_last_error());
	if (!err) {
		ck_assert_int_eq(runtime_check(line, sizeof(line), &rt, v), cases[_i].holds);
		ck_assert_msg(strstr(line, cases[_i].line), "%s: '%s' lacks '%s'", cases[_i].contract, line,
			      cases[_i].line);
	} else {
		ck_assert_msg(strstr(vs_last_error(), cases[_i].line), "%s", vs_last_error());
	}
	runtime_release(&rt);
	card_release(&c);
	cJSON_Delete(v);
	free(path);
}
END_TEST

/* --emit-plan with the numpy module: refused outside the contract, summarized inside it. */
START_TEST(emit_plan_refuses_a_plan_outside_the_contract)
{
	char *out = NULL, *err = NULL, *path = card_with_runtime("{numpy: \"<1.0\"}");
	int status;

	/* the module, as a user's file in the scratch root */
	{
		char *src = tu_source("kernels/python"), *dst = fs_join(tmp, "kernels/python"), *cmd;

		fs_mkdir_p(dst);
		cmd = fs_printf("cp '%s'/*.py '%s'/", src, dst);
		ck_assert_int_eq(system(cmd), 0);
		free(cmd);
		free(src);
		free(dst);
	}
	status = tu_run_tool(tmp, "--emit-plan skills/mla_decode_cpu_splitkv.md --candidate-lib kernels/python/numpy_mla.py",
			     &out, &err);
	ck_assert_msg(status == 3 && strstr(err, "runtime numpy '<1.0' does not hold for numpy") &&
			      strstr(err, "cannot be validated here"),
		      "exit %d: %s", status, err);

	ck_assert_msg(!strstr(strstr(err, "error:") + 1, "error:"), "more than one error line: %s", err);
	free(out);
	free(err);
	free(path);
	path = card_with_runtime("{numpy: \">=1.0\", triton: \">=3.5\"}");
	status = tu_run_tool(tmp, "--emit-plan skills/mla_decode_cpu_splitkv.md --candidate-lib kernels/python/numpy_mla.py",
			     &out, &err);
	ck_assert_msg(status == 0, "exit %d: %s", status, err);
	ck_assert_msg(strstr(out, "runtime    numpy >=1.0: ") && strstr(out, " holds; triton >=3.5: not checked"), "%s",
		      out);
	free(out);
	free(err);
	free(path);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("runtime");
	TCase *tc = tcase_create("runtime");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, contract_is_checked_against_recorded_versions, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, emit_plan_refuses_a_plan_outside_the_contract);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
