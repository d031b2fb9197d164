/*
 * check_progress.c - what long modes print. On a terminal (a pseudo-terminal made with forkpty),
 * --materialize and --run redraw a status line in place ("\r" and erase-line) above the finished
 * lines; when the output is not a terminal they print one line per task and the summary, with no
 * control characters.
 */
#include "testutil.h"

#include "fsutil.h"

#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char *tmp;

static void setup(void)
{
	tmp = tu_tmpdir();
	unsetenv("VS_PROGRESS");
}

static void teardown(void)
{
	fs_remove_tree(tmp);
	free(tmp);
}

/* Run the tool on a pseudo-terminal; returns what the terminal received (malloc'd). */
static char *run_on_pty(const char *args, int *status)
{
	char *cmd = fs_printf("exec %s %s", getenv("VS_TOOL"), args), *text = NULL, buf[4096];
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	int fd, st = 0;
	pid_t pid = forkpty(&fd, NULL, NULL, NULL);

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (chdir(tmp) != 0)
			_exit(127);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	for (;;) {
		ssize_t k = read(fd, buf, sizeof(buf));

		if (k <= 0)
			break; /* EIO once the child has closed the terminal */
		fwrite(buf, 1, (size_t)k, m);
	}
	waitpid(pid, &st, 0);
	close(fd);
	fclose(m);
	free(cmd);
	*status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
	return text;
}

START_TEST(terminal_gets_a_status_line_redrawn_in_place)
{
	char *plan = tu_small_plan(tmp, "", 2, 1), *args, *screen;
	int status;

	args = fs_printf("--materialize %s --threads 2", plan);
	screen = run_on_pty(args, &status);
	ck_assert_msg(status == 0, "exit %d: %s", status, screen);
	ck_assert_msg(strstr(screen, "\r\033[K[0/2]") && strstr(screen, "generating inputs"), "no status line:\n%s",
		      screen);
	ck_assert_ptr_nonnull(strstr(screen, "[2/2] bf16-causal-h7-ps16: "));
	free(screen);
	free(args);
	args = fs_printf("--run %s --threads 2", plan);
	screen = run_on_pty(args, &status);
	ck_assert_msg(status == 0, "exit %d: %s", status, screen);
	ck_assert_msg(strstr(screen, "\r\033[K[") && strstr(screen, "running bf16-"), "no status line:\n%s", screen);
	ck_assert_ptr_nonnull(strstr(screen, "overall isolated speedup"));
	free(screen);
	free(args);
	free(plan);
}
END_TEST

START_TEST(not_a_terminal_gets_one_line_per_task)
{
	char *plan = tu_small_plan(tmp, "", 2, 1), *args, *out = NULL, *err = NULL;
	int status;

	args = fs_printf("--materialize %s --threads 2", plan);
	status = tu_run_tool(tmp, args, &out, &err);
	ck_assert_msg(status == 0, "%s", err);
	ck_assert_msg(!strchr(out, '\r') && !strchr(out, '\033'), "control characters in a log:\n%s", out);
	ck_assert_msg(tu_count_lines(out) == 3, "2 tasks + the summary, got:\n%s", out);
	free(out);
	free(err);
	free(args);
	args = fs_printf("--run %s --threads 2", plan);
	status = tu_run_tool(tmp, args, &out, &err);
	ck_assert_msg(status == 0, "%s", err);
	ck_assert_msg(!strchr(out, '\r') && !strchr(out, '\033'), "control characters in a log:\n%s", out);
	/* run line, one line per task, the overall line, the eval dir */
	ck_assert_msg(tu_count_lines(out) == 5, "got:\n%s", out);
	ck_assert_ptr_nonnull(strstr(out, "[1/2] bf16-ragged-h16-ps64: speedup "));
	ck_assert_ptr_nonnull(strstr(out, "[2/2] bf16-causal-h7-ps16: speedup "));
	free(out);
	free(err);
	free(args);
	free(plan);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("progress");
	TCase *tc = tcase_create("progress");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, terminal_gets_a_status_line_redrawn_in_place);
	tcase_add_test(tc, not_a_terminal_gets_one_line_per_task);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
