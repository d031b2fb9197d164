/*
 * check_fulldisk.c - a full disk: --materialize, --record and --emit-plan write onto a small tmpfs
 * that runs out of bytes or inodes. Each gives one clear line and exit status 1, leaves the files that
 * were there intact, and leaves no half-written file behind. Mounting needs root (CAP_SYS_ADMIN):
 * the suite runs in a private mount namespace (the mounts vanish with it) and is skipped (exit 77)
 * where that is not permitted. The repository is a copy of tests/resources/evidence.
 */
#include "testutil.h"

#include "fsutil.h"
#include "task.h"
#include "vs_error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#define CARD "skills/mla_decode_cpu_splitkv.md"
#define PLAN "plans/mla_decode_cpu_splitkv.plan.json"
#define EVAL "results/mla_decode_cpu_splitkv/run1"
#define T0 "5ce0177ed6b554871051c203c302e8e0de4b6884bf158977764b63146c113faa"

static char *tmp, *mnt;

static void sh(const char *fmt, const char *a, const char *b)
{
	char *cmd = fs_printf(fmt, a, b);

	ck_assert_msg(system(cmd) == 0, "failed: %s", cmd);
	free(cmd);
}

static void setup(void)
{
	vs_error_set_quiet(1);
	tmp = tu_tmpdir();
	mnt = fs_join(tmp, "mnt");
	ck_assert_int_eq(fs_mkdir_p(mnt), 0);
}

static void teardown(void)
{
	umount2(mnt, MNT_DETACH);
	ck_assert_ptr_nonnull(strstr(tmp, "/vs_test_"));
	sh("chmod -R u+w '%s' && rm -rf '%s'", tmp, tmp);
	free(tmp);
	free(mnt);
	vs_error_set_quiet(0);
}

static void mount_tmpfs(const char *options)
{
	ck_assert_msg(mount("tmpfs", mnt, "tmpfs", 0, options) == 0, "mount tmpfs -o %s: %s", options,
		      strerror(errno));
}

/* A copy of tests/resources/evidence at dir. */
static void copy_repo(const char *dir)
{
	char *src = tu_resource("evidence");

	sh("cp -R '%s' '%s'", src, dir);
	free(src);
}

/* Fill the filesystem holding dir: write a filler file until ENOSPC. */
static void fill_disk(const char *dir)
{
	char *path = fs_join(dir, "filler"), block[65536];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	memset(block, 0xAB, sizeof(block));
	for (size_t n = sizeof(block); n > 0;) {
		ssize_t w = write(fd, block, n);

		if (w < 0) {
			ck_assert_int_eq(errno, ENOSPC);
			if (n == 1)
				break;
			n /= 2; /* top up the last pages */
		}
	}
	close(fd);
	free(path);
}

/* Names in dir (malloc'd, space-separated), for messages and checks. */
static char *listing(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char *out = strdup(""), *next;

	while (d && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		next = fs_printf("%s%s%s", out, *out ? " " : "", e->d_name);
		free(out);
		out = next;
	}
	if (d)
		closedir(d);
	return out;
}

static void assert_one_line(const char *err, const char *prefix, const char *contains)
{
	const char *nl = strchr(err, '\n');

	ck_assert_msg(!strncmp(err, prefix, strlen(prefix)), "stderr does not start with '%s':\n%s", prefix, err);
	ck_assert_msg(strstr(err, contains), "stderr lacks '%s':\n%s", contains, err);
	ck_assert_msg(nl && nl[1] == '\0', "stderr is not one line:\n%s", err);
}

START_TEST(materialize_onto_a_disk_too_small_refuses_before_writing)
{
	char *repo = fs_join(tmp, "repo"), *args, *opdir, *names, *out = NULL, *err = NULL;
	int status;

	copy_repo(repo);
	mount_tmpfs("size=256k");
	args = fs_printf("--materialize " PLAN " --threads 1 --tasks-dir %s/tasks", mnt);
	status = tu_run_tool(repo, args, &out, &err);
	ck_assert_msg(status == 3, "exit %d: %s", status, err);
	assert_one_line(err, "validate_skill: error: not enough free disk for task 'bf16-page1-h32' under '",
			"/tasks/mla_decode': it needs about ");
	opdir = fs_printf("%s/tasks/mla_decode", mnt);
	names = listing(opdir);
	ck_assert_msg(!*names, "left behind: %s", names);
	free(names);
	free(opdir);
	free(args);
	free(repo);
	free(out);
	free(err);
}
END_TEST

/*
 * Out of inodes in the middle of the second task (the free-space check counts bytes): the first
 * task dir stays complete, the second leaves nothing, the error names the file it could not create.
 */
START_TEST(materialize_running_out_midway_keeps_the_finished_task_dirs)
{
	char *repo = fs_join(tmp, "repo"), *args, *opdir, *first, *names, *out = NULL, *err = NULL;
	int status;

	copy_repo(repo);
	/* root, tasks, mla_decode, then per task: its temporary dir, 4 data files and the manifest */
	mount_tmpfs("size=64m,nr_inodes=12");
	args = fs_printf("--materialize " PLAN " --threads 1 --tasks-dir %s/tasks", mnt);
	status = tu_run_tool(repo, args, &out, &err);
	ck_assert_msg(status == 3, "exit %d: %s", status, err);
	assert_one_line(err, "validate_skill: error: cannot create '",
			": No space left on device (nothing was written)");
	opdir = fs_printf("%s/tasks/mla_decode", mnt);
	first = fs_join(opdir, T0);
	ck_assert_msg(task_verify(first) == 0, "the finished task dir does not verify: %s", vs_last_error());
	names = listing(opdir);
	ck_assert_msg(!strcmp(names, T0), "tasks/mla_decode holds '%s', want only the finished task", names);
	free(names);
	free(first);
	free(opdir);
	free(args);
	free(repo);
	free(out);
	free(err);
}
END_TEST

START_TEST(record_onto_a_full_disk_keeps_the_old_card)
{
	char *repo = fs_join(mnt, "repo"), *card = fs_join(repo, CARD), *skills = fs_join(repo, "skills");
	char *before, *after, *names, *out = NULL, *err = NULL;
	size_t before_len, after_len;
	int status;

	mount_tmpfs("size=4m");
	copy_repo(repo);
	before = tu_read(card, &before_len);
	fill_disk(mnt);
	status = tu_run_tool(repo, "--record " CARD " --eval-dir " EVAL, &out, &err);
	ck_assert_msg(status == 3, "exit %d: %s", status, err);
	assert_one_line(err, "validate_skill: error: cannot write '" CARD ".tmp.",
			": No space left on device (the old file is intact)");
	after = tu_read(card, &after_len);
	ck_assert_msg(after_len == before_len && !memcmp(before, after, after_len), "the card changed:\n%s", after);
	names = listing(skills);
	ck_assert_msg(!strcmp(names, "mla_decode_cpu_splitkv.md"), "skills/ holds '%s'", names);
	free(names);
	free(after);
	/* Space again: the same record goes through. */
	sh("rm -f '%s/filler'%s", mnt, "");
	free(out);
	free(err);
	status = tu_run_tool(repo, "--record " CARD " --eval-dir " EVAL, &out, &err);
	ck_assert_msg(status == 0, "record after freeing space: %s", err);
	after = tu_read(card, &after_len);
	ck_assert_msg(strstr(after, "status: validated") || strstr(after, "status: failed"), "%s", after);
	free(after);
	free(before);
	free(skills);
	free(card);
	free(repo);
	free(out);
	free(err);
}
END_TEST

START_TEST(emit_plan_onto_a_full_disk_keeps_the_old_plan)
{
	char *repo = fs_join(mnt, "repo"), *plan = fs_join(repo, PLAN), *before, *after, *out = NULL, *err = NULL;
	size_t before_len, after_len;
	int status;

	mount_tmpfs("size=4m");
	copy_repo(repo);
	before = tu_read(plan, &before_len);
	fill_disk(mnt);
	status = tu_run_tool(repo, "--emit-plan " CARD, &out, &err);
	ck_assert_msg(status == 3, "exit %d: %s", status, err);
	assert_one_line(err, "validate_skill: error: cannot write '" PLAN ".tmp.",
			": No space left on device (the old file is intact)");
	after = tu_read(plan, &after_len);
	ck_assert_msg(after_len == before_len && !memcmp(before, after, after_len), "the plan changed");
	free(before);
	free(after);
	free(plan);
	free(repo);
	free(out);
	free(err);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("fulldisk");
	TCase *tc = tcase_create("tmpfs");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, materialize_onto_a_disk_too_small_refuses_before_writing);
	tcase_add_test(tc, materialize_running_out_midway_keeps_the_finished_task_dirs);
	tcase_add_test(tc, record_onto_a_full_disk_keeps_the_old_card);
	tcase_add_test(tc, emit_plan_onto_a_full_disk_keeps_the_old_plan);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{

	/* A private mount namespace: the tmpfs mounts are invisible outside and vanish with the process. */
	if (unshare(CLONE_NEWNS) != 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) {
		printf("check_fulldisk: skipped: mounting a tmpfs is not permitted here (%s); run as root\n",
		       strerror(errno));
		return 77;
	}
	return tu_run_suite(suite());
}
