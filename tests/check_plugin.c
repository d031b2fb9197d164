/*
 * check_plugin.c - implementations loaded from shared objects (harness/plugin.c, the ABI of
 * kernels/mla_decode.h): the loader refuses a missing file, a file that is not a shared object, a
 * library without the descriptor symbol, a descriptor of another ABI version and a name that is
 * taken, each with one clear line; a plugin built outside the tree (cc -shared against
 * kernels/mla_decode.h only) is A/B-tested against the built-in cpu.naive, recorded, and bound by
 * its sha256: a rebuilt plugin no longer verifies.
 */
#include "testutil.h"

#include "fsutil.h"
#include "mla_decode.h"
#include "plugin.h"
#include "vs_build_info.h"
#include "vs_error.h"

#include <stdlib.h>
#include <string.h>

static char *tmp;

static void setup(void)
{
	tmp = tu_tmpdir();
}

static void teardown(void)
{
	fs_remove_tree(tmp);
	free(tmp);
}

static char *plugin_path(const char *name)
{
	const char *dir = getenv("VS_PLUGIN_DIR");

	ck_assert_msg(dir != NULL, "VS_PLUGIN_DIR is not set (run through ctest)");
	return fs_printf("%s/%s.so", dir, name);
}

struct bad_plugin {
	const char *file;     /* VS_PLUGIN_DIR/<file>.so, or a special case */
	int code;
	const char *message;
};

static const struct bad_plugin bad[] = {
	{"missing", VS_ENOTFOUND, "does not exist"},
	{"not_elf", VS_EIO, "cannot load plugin"},
	{"no_symbol", VS_ESCHEMA, "does not export 'mla_decode_plugin'"},
	{"wrong_abi", VS_EUNSUPPORTED, "built for kernel ABI version 99, this validate_skill speaks version 3"},
	{"name_taken", VS_EUSAGE, "implementation name 'cpu.naive' is already taken"},
};

START_TEST(loader_refuses_bad_plugins_with_one_clear_line)
{
	const struct bad_plugin *b = &bad[_i];
	const struct plugin *pl = NULL;
	char *path;
	int err;

	if (!strcmp(b->file, "missing")) {
		path = fs_join(tmp, "missing.so");
	} else if (!strcmp(b->file, "not_elf")) {
		path = fs_join(tmp, "not_elf.so");
		tu_write(path, "this is not a shared object\n", 28);
	} else {
		path = plugin_path(b->file);
	}
	vs_error_set_quiet(1);
	err = plugin_load(&pl, path);
	vs_error_set_quiet(0);
	ck_assert_msg(err == b->code, "%s: code %d, want %d (%s)", b->file, err, b->code, vs_last_error());
	ck_assert_msg(strstr(vs_last_error(), b->message), "%s: '%s' lacks '%s'", b->file, vs_last_error(), b->message);
	ck_assert_msg(strstr(vs_last_error(), path), "%s: the message does not name the file: %s", b->file,
		      vs_last_error());
	ck_assert_msg(!strchr(vs_last_error(), '\n'), "more than one line: %s", vs_last_error());
	ck_assert_ptr_null(pl);
	free(path);
}
END_TEST

START_TEST(loaded_plugin_is_registered_once_and_bound_by_sha256)
{
	const struct plugin *a = NULL, *b = NULL;
	char *path = plugin_path("example"), hex[65];

	ck_assert_msg(plugin_load(&a, path) == 0, "%s", vs_last_error());
	ck_assert_ptr_eq(mla_decode_impl_find("example.online"), a->impl);
	ck_assert_int_eq(a->impl->abi_version, MLA_DECODE_ABI_VERSION);
	ck_assert_int_eq(plugin_load(&b, path), 0); /* the same file again: the same plugin */
	ck_assert_ptr_eq(a, b);
	ck_assert_ptr_eq(plugin_for_impl("example.online"), a);
	ck_assert_ptr_null(plugin_for_impl("cpu.naive"));
	ck_assert_int_eq(fs_sha256_file(hex, path), 0);
	ck_assert_str_eq(a->sha256, hex);
	free(path);
}
END_TEST

/* The CLI gives the loader's error as the one line of a usage: exit 1. */
START_TEST(cli_refuses_a_plugin_of_another_abi)
{
	char *card = tu_resource("skills/mla_decode_cpu_splitkv.md"), *lib = plugin_path("wrong_abi");
	char *args = fs_printf("--emit-plan %s --candidate-lib %s --out %s/p.plan.json", card, lib, tmp);
	char *out = NULL, *err = NULL;
	int status = tu_run_tool(tmp, args, &out, &err);

	ck_assert_msg(status == 3, "exit %d: %s", status, err);
	ck_assert_msg(strstr(err, "kernel ABI version 99") && tu_count_lines(err) == 1, "stderr: %s", err);
	free(card);
	free(lib);
	free(args);
	free(out);
	free(err);
}
END_TEST

/* Compile tests/plugins/mla_plugin_example.c with the system compiler, as a team would elsewhere. */
static char *build_outside(const char *name, const char *defs)
{
	char *src = tu_source("tests/plugins/mla_plugin_example.c"), *inc = tu_source("kernels");
	char *so = fs_printf("%s/%s", tmp, name);
	char *cmd = fs_printf("cc -std=c11 -O2 -shared -fPIC %s -I'%s' '%s' -o '%s' -lm", defs, inc, src, so);

	ck_assert_msg(system(cmd) == 0, "cannot build the plugin: %s", cmd);
	free(src);
	free(inc);
	free(cmd);
	return so;
}

START_TEST(plugin_built_outside_the_tree_is_ab_tested_and_recorded)
{
	char *so = build_outside("libteam_mla.so", ""), *plan, *out = NULL, *err = NULL, *eval, *args, *res;
	char *sha, hex[65], *card_text, *card_path = fs_join(tmp, "skills/mla_decode_cpu_splitkv.md");
	int status;

	args = fs_printf("--candidate-lib %s", so);
	plan = tu_small_plan(tmp, args, 2, 1);
	free(args);
	/* A plugin plan has its own name: the card's own plan is not replaced. */
	ck_assert_str_eq(plan, "plans/mla_decode_cpu_splitkv.example.online.plan.json");
	res = fs_join(tmp, "plans/mla_decode_cpu_splitkv.plan.json");
	ck_assert_msg(!fs_exists(res), "--emit-plan --candidate-lib wrote the card's own plan");
	free(res);
	/* The plan names the plugin and its sha256. */
	res = fs_join(tmp, plan);
	ck_assert_int_eq(fs_sha256_file(hex, so), 0);
	sha = tu_json_str(res, "candidate.plugin.sha256");
	ck_assert_msg(sha && !strcmp(sha, hex), "plan's plugin sha256 %s, file %s", sha ? sha : "(none)", hex);
	free(sha);
	free(res);

	args = fs_printf("--run %s --threads 2", plan);
	status = tu_run_tool(tmp, args, &out, &err);
	free(args);
	ck_assert_msg(status == 0 || status == 1, "run: exit %d: %s\n%s", status, err, out);
	eval = tu_eval_dir_of(out);
	ck_assert_ptr_nonnull(eval);
	res = fs_printf("%s/%s/result.json", tmp, eval);
	sha = tu_json_str(res, "candidate");
	ck_assert_str_eq(sha, "example.online");
	free(sha);
	{
		char *text = tu_read(res, NULL);

		ck_assert_msg(strstr(text, hex) && strstr(text, "\"plugins\""), "result.json lacks the plugin's sha256");
		ck_assert_msg(!strstr(text, "\"parity\": \"fail\""), "the plugin failed parity:\n%s", text);
		free(text);
	}
	free(out);
	free(err);

	/* Issue 12, case 3: the card names cpu.splitkv, the run measured the plugin: never recorded. */
	args = fs_printf("--record skills/mla_decode_cpu_splitkv.md --eval-dir %s", eval);
	status = tu_run_tool(tmp, args, &out, &err);
	free(args);
	{
		char *want = fs_printf("validate_skill: error: %s: the evidence measured candidate 'example.online', "
				       "but skills/mla_decode_cpu_splitkv.md's match.to_backend is 'cpu.splitkv': it "
				       "cannot speak for this card (name the implementation in the card, or run the "
				       "card's own)\n", eval);

		ck_assert_msg(status == 3, "record of a foreign implementation: exit %d", status);
		ck_assert_str_eq(err, want);
		free(want);
	}
	free(out);
	free(err);
	free(eval);
	free(plan);

	/* A card that names the family ("example") records the implementation measured. */
	args = fs_printf("--candidate-lib %s", so);
	plan = tu_small_plan_edit(tmp, args, 2, 1, "to_backend: cpu.splitkv", "to_backend: example");
	free(args);
	args = fs_printf("--run %s --threads 2", plan);
	status = tu_run_tool(tmp, args, &out, &err);
	free(args);
	ck_assert_msg(status == 0 || status == 1, "run: exit %d: %s\n%s", status, err, out);
	eval = tu_eval_dir_of(out);
	free(out);
	free(err);
	args = fs_printf("--record skills/mla_decode_cpu_splitkv.md --eval-dir %s", eval);
	status = tu_run_tool(tmp, args, &out, &err);
	free(args);
	card_text = tu_read(card_path, NULL);
	if (VS_KERNELS_DIRTY) {
		ck_assert_msg(status == 3 && strstr(err, "uncommitted kernels/"), "exit %d: %s", status, err);
	} else {
		ck_assert_msg(status == 0 || status == 1, "record: exit %d: %s", status, err);
		ck_assert_msg(strstr(card_text, "status: validated") || strstr(card_text, "status: failed"), "%s",
			      card_text);
		ck_assert_msg(strstr(card_text, "implementations: {baseline: cpu.naive, candidate: example.online}"),
			      "%s", card_text);
		free(out);
		free(err);
		status = tu_run_tool(tmp, "--verify skills/mla_decode_cpu_splitkv.md", &out, &err);
		ck_assert_msg(status == 0, "verify: %s", err);
	}
	free(out);
	free(err);
	free(card_text);

	/* Rebuilt with another kernel: the evidence and the plan no longer speak for the file. */
	free(build_outside("libteam_mla.so", "-DPLUGIN_WRONG"));
	if (!VS_KERNELS_DIRTY) {
		status = tu_run_tool(tmp, "--verify skills/mla_decode_cpu_splitkv.md", &out, &err);
		ck_assert_msg(status == 3 && strstr(err, "changed since the run"), "verify after rebuild: %d %s", status,
			      err);
		free(out);
		free(err);
	}
	args = fs_printf("--run %s", plan);
	status = tu_run_tool(tmp, args, &out, &err);
	ck_assert_msg(status == 3 && strstr(err, "changed since the plan was made") && tu_count_lines(err) == 1,
		      "run after rebuild: %d %s", status, err);
	free(args);
	free(out);
	free(err);
	free(res);
	free(eval);
	free(plan);
	free(so);
	free(card_path);
}
END_TEST

/*
 * A plugin right in the parity phase and wrong when timed: the task fails parity and no speedup is
 * printed. The parity phase of the one config launches it 4 times: the 2 input sets, set 0 again
 * into the other output pair, and the run-time input set.
 */
START_TEST(plugin_wrong_when_timed_gets_no_speedup_on_the_console)
{
	char *so = build_outside("libteam_late.so", "-DPLUGIN_WRONG_AFTER=4 -DPLUGIN_NAME='\"team.late\"'");
	char *args = fs_printf("--candidate-lib %s", so), *plan, *out = NULL, *err = NULL, *eval, *res, *text;
	int status;

	plan = tu_small_plan(tmp, args, 1, 1);
	free(args);
	args = fs_printf("--run %s --threads 2", plan);
	status = tu_run_tool(tmp, args, &out, &err);
	ck_assert_msg(status == 1, "run: exit %d: %s", status, err); /* completed, verdict failed */
	eval = tu_eval_dir_of(out);
	res = fs_printf("%s/%s/result.json", tmp, eval);
	text = tu_read(res, NULL);
	/* timed, and failed by the timed checks */
	ck_assert_msg(strstr(text, "\"speedup\":") && strstr(text, "\"parity\":\t\"fail\"") &&
		      strstr(text, "\"verdict\":\t\"failed\""), "%s", text);
	ck_assert_msg(strstr(out, "parity FAIL (details in run.log)") && strstr(out, "no speedup") &&
			      !strstr(out, ": speedup "), "stdout: %s", out);
	free(text);
	free(res);
	free(eval);
	free(args);
	free(out);
	free(err);
	free(plan);
	free(so);
}
END_TEST

/* A plugin that is wrong in one element fails parity in the A/B, like a built-in would. */
START_TEST(wrong_plugin_fails_parity)
{
	char *lib = plugin_path("wrong"), *args = fs_printf("--candidate-lib %s", lib), *plan, *out = NULL, *err = NULL;
	char *eval, *res, *verdict;
	int status;

	/* The card names the family ("example"): the evidence of example.wrong may be recorded there. */
	plan = tu_small_plan_edit(tmp, args, 1, 1, "to_backend: cpu.splitkv", "to_backend: example");
	free(args);
	args = fs_printf("--run %s --threads 2", plan);
	status = tu_run_tool(tmp, args, &out, &err);
	ck_assert_msg(status == 1, "run: exit %d: %s", status, err);
	eval = tu_eval_dir_of(out);
	res = fs_printf("%s/%s/result.json", tmp, eval);
	verdict = tu_json_str(res, "verdict");
	ck_assert_str_eq(verdict, "failed");
	ck_assert_msg(strstr(out, "parity FAIL"), "stdout: %s", out);
	/* No speedup for a task that failed parity; the verdict names the gates that failed it. */
	ck_assert_msg(!strstr(out, ": speedup "), "stdout: %s", out);
	ck_assert_msg(strstr(out, "complete FAIL; verdict failed (speedup gate, parity, incomplete: 0 of 1 tasks run "
			      "to the end)"), "stdout: %s", out);
	if (!VS_KERNELS_DIRTY) {
		/* The record line says n/a where the value is n/a. */
		free(out);
		free(err);
		free(args);
		args = fs_printf("--record skills/mla_decode_cpu_splitkv.md --eval-dir %s", eval);
		status = tu_run_tool(tmp, args, &out, &err);
		ck_assert_msg(status == 0, "record: exit %d: %s", status, err);
		ck_assert_msg(strstr(out, "recorded failed (isolated speedup n/a") && !strstr(out, "0.000 [0.000"),
			      "record: %s", out);
	}
	free(verdict);
	free(res);
	free(eval);
	free(args);
	free(out);
	free(err);
	free(plan);
	free(lib);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("plugin");
	TCase *tc = tcase_create("plugin");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, loader_refuses_bad_plugins_with_one_clear_line, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tc, loaded_plugin_is_registered_once_and_bound_by_sha256);
	tcase_add_test(tc, cli_refuses_a_plugin_of_another_abi);
	tcase_add_test(tc, plugin_built_outside_the_tree_is_ab_tested_and_recorded);
	tcase_add_test(tc, wrong_plugin_fails_parity);
	tcase_add_test(tc, plugin_wrong_when_timed_gets_no_speedup_on_the_console);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
