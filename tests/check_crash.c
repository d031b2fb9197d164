/*
 * check_crash.c - crash safety: the binary is killed (SIGKILL, nothing to clean up) at varied moments
 * of `--record` and `--materialize`, over and over. After every kill the card is byte-identical to
 * its old or its new version, never a mixture; every task dir under tasks/ verifies or does not exist
 * (only the `.<hash>.tmp.<pid>` dirs of interrupted materializations may be left, and `--gc` removes
 * them and the `<file>.tmp.<pid>` files of interrupted writes). The repository is a copy of
 * tests/resources/evidence.
 */
#include "testutil.h"

#include "fsutil.h"
#include "task.h"
#include "vs_error.h"

#include <dirent.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define CARD "skills/mla_decode_cpu_splitkv.md"
#define PLAN "plans/mla_decode_cpu_splitkv.plan.json"
#define EVAL "results/mla_decode_cpu_splitkv/run1"
#define KILLS 40

static char *tmp, *repo;

static void setup(void)
{
	char *src = tu_resource("evidence"), *cmd;

	vs_error_set_quiet(1);
	tmp = tu_tmpdir();
	repo = fs_join(tmp, "repo");
	cmd = fs_printf("cp -R '%s' '%s'", src, repo);
	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
	free(src);
}

static void teardown(void)
{
	char *cmd;

	ck_assert_ptr_nonnull(strstr(tmp, "/vs_test_"));
	cmd = fs_printf("chmod -R u+w '%s' && rm -rf '%s'", tmp, tmp);
	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
	free(tmp);
	free(repo);
	vs_error_set_quiet(0);
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/*
 * When watch is set, run_and_kill() stores in watch_at the seconds after the start at which the file
 * watch first changed (inode, size or modification time), or -1.
 */
static const char *watch;
static double watch_at;

static unsigned long long signature(const char *path)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return 0;
	return (unsigned long long)st.st_ino * 1000003ull ^ (unsigned long long)st.st_size * 7919ull ^
	       (unsigned long long)st.st_mtim.tv_sec * 1000000000ull ^ (unsigned long long)st.st_mtim.tv_nsec;
}

/*
 * Run the tool with args in the repository and SIGKILL it after delay seconds (unless it is done).
 * Returns 1 when it was killed, 0 when it finished first (it must then have succeeded).
 */
static int run_and_kill(const char *args, double delay)
{
	unsigned long long sig0 = watch ? signature(watch) : 0;
	const char *tool = getenv("VS_TOOL");
	char *cmd = fs_printf("exec %s %s >/dev/null 2>&1", tool, args);
	int status;
	pid_t pid;

	ck_assert_ptr_nonnull(tool);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (chdir(repo) != 0)
			_exit(127);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	watch_at = -1;
	for (double t0 = now();;) {
		struct timespec ts = {0, 20000};

		if (watch && watch_at < 0 && signature(watch) != sig0)
			watch_at = now() - t0;
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		if (now() - t0 >= delay) {
			kill(pid, SIGKILL);
			waitpid(pid, &status, 0);
			break;
		}
		nanosleep(&ts, NULL);
	}
	free(cmd);
	if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
		return 1;
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "'%s' failed (status %d)", args, status);
	return 0;
}

/* Seconds one uninterrupted run of args takes (the best of three). */
static double duration(const char *args, void (*reset)(void))
{
	double best = 1e9;

	for (int i = 0; i < 3; i++) {
		double t0;

		reset();
		t0 = now();
		ck_assert_int_eq(run_and_kill(args, 60), 0);
		if (now() - t0 < best)
			best = now() - t0;
	}
	return best;
}

static char *card_old, *card_new;
static size_t card_old_len, card_new_len;

static void restore_card(void)
{
	char *path = fs_join(repo, CARD);

	tu_write(path, card_old, card_old_len);
	free(path);
}

/* Files named like "<name>.tmp.<pid>" anywhere under dir (recursively). */
static int count_temporaries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d))) {
		char *path;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		path = fs_join(dir, e->d_name);
		if (strstr(e->d_name, ".tmp."))
			n++;
		else if (fs_is_dir(path) && !fs_is_link(path))
			n += count_temporaries(path);
		free(path);
	}
	if (d)
		closedir(d);
	return n;
}

START_TEST(killed_record_leaves_the_old_card_or_the_new_one)
{
	char *path = fs_join(repo, CARD), *after, *out = NULL, *err = NULL;
	size_t len;
	double t, replaced_at;
	int killed = 0, old = 0, new = 0, status;

	card_old = tu_read(path, &card_old_len);
	status = tu_run_tool(repo, "--record " CARD " --eval-dir " EVAL, &out, &err);
	ck_assert_msg(status == 0, "record: %s", err);
	card_new = tu_read(path, &card_new_len);
	ck_assert_msg(strcmp(card_old, card_new), "recording did not change the card");
	t = duration("--record " CARD " --eval-dir " EVAL, restore_card);
	/* When, in a run, the card is replaced: half the kills land near that moment, half anywhere. */
	restore_card();
	watch = path;
	run_and_kill("--record " CARD " --eval-dir " EVAL, 60);
	watch = NULL;
	replaced_at = watch_at;
	ck_assert_msg(replaced_at > 0, "--record did not change the card");
	for (int i = 0; i < KILLS; i++) {
		double delay = i % 2 ? t * 2 * i / KILLS : replaced_at * (0.8 + 0.25 * i / KILLS);

		restore_card();
		killed += run_and_kill("--record " CARD " --eval-dir " EVAL, delay);
		after = tu_read(path, &len);
		if (len == card_old_len && !memcmp(after, card_old, len))
			old++;
		else if (len == card_new_len && !memcmp(after, card_new, len))
			new++;
		else
			ck_abort_msg("kill %d (after %.2f ms) left a card that is neither the old nor the new one:\n%s", i,
				     1e3 * delay, after);
		free(after);
	}
	printf("--record killed %d times in %d runs (a record takes %.1f ms, changes the card after %.1f ms): %d left "
	       "the old card, %d the new one\n", killed, KILLS, 1e3 * t, 1e3 * replaced_at, old, new);
	ck_assert_msg(killed > 0 && old > 0 && new > 0, "the kills must land before, during and after the write: "
		      "%d of %d killed, %d old, %d new (a record takes %.1f ms)", killed, KILLS, old, new, 1e3 * t);
	/* --gc removes what the killed writes left behind. */
	free(out);
	free(err);
	status = tu_run_tool(repo, "--gc", &out, &err);
	ck_assert_msg(status == 0, "gc: %s", err);
	ck_assert_int_eq(count_temporaries(repo), 0);
	free(out);
	free(err);
	free(path);
	free(card_old);
	free(card_new);
}
END_TEST

static void remove_tasks(void)
{
	char *cmd = fs_printf("chmod -R u+w '%s/tasks' 2>/dev/null; rm -rf '%s/tasks'", repo, repo);

	ck_assert_int_eq(system(cmd), 0);
	free(cmd);
}

/* Every entry of tasks/mla_decode verifies or is an interrupted materialization's temporary dir. */
static void check_tasks(int kill, int *complete, int *temporaries)
{
	char *opdir = fs_printf("%s/tasks/mla_decode", repo);
	DIR *d = opendir(opdir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		char *dir;
		int err;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		dir = fs_join(opdir, e->d_name);
		if (e->d_name[0] == '.' && strstr(e->d_name, ".tmp.")) {
			(*temporaries)++;
		} else {
			err = task_verify(dir);
			ck_assert_msg(err == 0, "kill %d left task dir %s that does not verify: %s", kill, e->d_name,
				      vs_last_error());
			(*complete)++;
		}
		free(dir);
	}
	if (d)
		closedir(d);
	free(opdir);
}

START_TEST(killed_materialize_leaves_only_verified_task_dirs)
{
	const char *args = "--materialize " PLAN " --threads 1";
	double t = duration(args, remove_tasks);
	int killed = 0, complete = 0, temporaries = 0, status;
	char *out = NULL, *err = NULL;

	for (int i = 0; i < KILLS; i++) {
		/* Half the kills start from nothing, half with the task dirs an earlier kill left. */
		if (i % 2 == 0)
			remove_tasks();
		killed += run_and_kill(args, t * 2 * (i / 2) / (KILLS / 2));
		check_tasks(i, &complete, &temporaries);
	}
	printf("--materialize killed %d times in %d runs (it takes %.1f ms): %d verified task dirs and %d temporary "
	       "dirs seen after the kills\n", killed, KILLS, 1e3 * t, complete, temporaries);
	ck_assert_msg(killed >= KILLS / 4 && complete > 0, "kills must land during the work: %d of %d killed, %d task "
		      "dirs complete after a kill (materializing takes %.1f ms)", killed, KILLS, complete, 1e3 * t);
	/* --gc removes the temporary dirs of the killed runs; then materializing completes. */
	status = tu_run_tool(repo, "--gc", &out, &err);
	ck_assert_msg(status == 0, "gc: %s", err);
	ck_assert_int_eq(count_temporaries(repo), 0);
	free(out);
	free(err);
	status = tu_run_tool(repo, args, &out, &err);
	ck_assert_msg(status == 0, "materialize after the kills: %s", err);
	complete = temporaries = 0;
	check_tasks(KILLS, &complete, &temporaries);
	ck_assert_int_eq(complete, 2);
	ck_assert_int_eq(temporaries, 0);
	free(out);
	free(err);
}
END_TEST

/* --gc keeps the temporary of a materialization that is still running (its process is alive). */
START_TEST(gc_keeps_the_temporaries_of_live_processes)
{
	char *live = fs_printf("%s/tasks/mla_decode/.%064d.tmp.%ld", repo, 0, (long)getpid());
	char *dead = fs_printf("%s/skills/x.md.tmp.999999999", repo), *out = NULL, *err = NULL;
	int status;

	fs_mkdir_p(live);
	tu_write(dead, "x", 1);
	status = tu_run_tool(repo, "--gc", &out, &err);
	ck_assert_msg(status == 0, "gc: %s", err);
	ck_assert_msg(fs_exists(live), "gc removed the temporary dir of a live process");
	ck_assert_msg(!fs_exists(dead), "gc kept a temporary of a dead process");
	ck_assert_ptr_nonnull(strstr(out, "skills/x.md.tmp.999999999"));
	free(live);
	free(dead);
	free(out);
	free(err);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("crash");
	TCase *tc = tcase_create("kill");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, killed_record_leaves_the_old_card_or_the_new_one);
	tcase_add_test(tc, killed_materialize_leaves_only_verified_task_dirs);
	tcase_add_test(tc, gc_keeps_the_temporaries_of_live_processes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
