/*
 * check_gpu_absent.c - a GPU build (AMD or NVIDIA) on a machine without a GPU: opening the GPU
 * device is a VS_EDEVICE error, not a crash, and a GPU plan's --run / --validate end with exit
 * status 3 and one error line naming the missing device (README "Exit status"). CI's AMD build
 * (Debian's HIP 5.2 runtime, no AMD GPU) runs it; exits 77 (skipped) where a GPU is present.
 */
#include "testutil.h"

#include "device.h"
#include "vs_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Lines of s (a last line without '\n' counts). */
static int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		if (*s == '\n' || !s[1])
			n++;
	return n;
}

/* A scratch repository with the HIP card and its plan of hip.baseline -> hip.flash (C on both sides). */
static char *scratch_with_plan(void)
{
	char *root = tu_tmpdir(), *skills = NULL, *card = NULL, *src = tu_resource("skills/mla_decode_hip_port.md");
	char *text, *err = NULL;
	size_t len;
	int status;

	if (asprintf(&skills, "%s/skills", root) < 0 || asprintf(&card, "%s/mla_decode_hip_port.md", skills) < 0)
		ck_abort_msg("asprintf failed");
	ck_assert_int_eq(mkdir(skills, 0755), 0);
	text = tu_read(src, &len);
	tu_write(card, text, len);
	status = tu_run_tool(root, "--emit-plan skills/mla_decode_hip_port.md --baseline hip.baseline --out p.json",
			     NULL, &err);
	ck_assert_msg(status == 0, "--emit-plan exited %d: %s", status, err);
	free(err);
	free(text);
	free(src);
	free(card);
	free(skills);
	return root;
}

/* stderr of a refused GPU run: every line but warnings is the one error line naming the device. */
static void assert_one_device_line(const char *what, int status, const char *err)
{
	int errors = 0;
	const char *line = err;

	ck_assert_msg(status == 3, "%s: exit status %d (-1: killed by a signal), expected 3; stderr: %s", what,
		      status, err);
	while (line && *line) {
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) : strlen(line);

		if (!(n > 26 && !strncmp(line, "validate_skill: warning: ", 25))) {
			errors++;
			ck_assert_msg(memmem(line, n, "validate_skill: error: ", 23) == line &&
					      memmem(line, n, "no usable GPU", 13),
				      "%s: unexpected stderr line '%.*s'", what, (int)n, line);
		}
		line = end ? end + 1 : NULL;
	}
	ck_assert_msg(errors == 1, "%s: %d error lines (of %d), expected 1: %s", what, errors, count_lines(err),
		      err);
}

START_TEST(opening_the_gpu_without_one_is_a_device_error)
{
	struct vs_device dev;
	int quiet = vs_error_set_quiet(1);

	ck_assert_int_eq(vs_device_open_gpu(&dev, 0), VS_EDEVICE);
	vs_error_set_quiet(quiet);
}
END_TEST

START_TEST(run_of_a_gpu_plan_is_one_line_and_exit_3)
{
	char *root = scratch_with_plan(), *out = NULL, *err = NULL;
	int status = tu_run_tool(root, "--run p.json", &out, &err);

	assert_one_device_line("--run", status, err);
	ck_assert_msg(!strstr(out, "eval dir:"), "--run wrote an eval dir without a GPU: %s", out);
	free(out);
	free(err);
	free(root);
}
END_TEST

START_TEST(validate_of_a_gpu_card_is_one_line_and_exit_3)
{
	char *root = scratch_with_plan(), *out = NULL, *err = NULL;
	int status = tu_run_tool(root, "--validate skills/mla_decode_hip_port.md --baseline hip.baseline", &out, &err);

	assert_one_device_line("--validate", status, err);
	free(out);
	free(err);
	free(root);
}
END_TEST

static Suite *gpu_absent_suite(void)
{
	Suite *s = suite_create("gpu_absent");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, opening_the_gpu_without_one_is_a_device_error);
	tcase_add_test(tc, run_of_a_gpu_plan_is_one_line_and_exit_3);
	tcase_add_test(tc, validate_of_a_gpu_card_is_one_line_and_exit_3);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	struct vs_device dev;
	int quiet = vs_error_set_quiet(1);

	if (vs_device_open_gpu(&dev, 0) == 0) {
		vs_device_release(&dev);
		printf("check_gpu_absent: a GPU is present, skipping\n");
		return 77;
	}
	vs_error_set_quiet(quiet);
	return tu_run_suite(gpu_absent_suite());
}
