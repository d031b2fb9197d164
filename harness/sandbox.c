#include "sandbox.h"
#include "vs_error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/landlock.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define SANDBOX_MAX_DENY 16

/* Rights newer than some installed headers. */
#define LL_FS_REFER (1ULL << 13)
#define LL_FS_TRUNCATE (1ULL << 14)
#define LL_FS_IOCTL_DEV (1ULL << 15)
#define LL_FS_V1 ((1ULL << 13) - 1)
#define LL_FS_FILE_ONLY ((1ULL << 0) | (1ULL << 1) | (1ULL << 2) | LL_FS_TRUNCATE | LL_FS_IOCTL_DEV)

struct closed {
	char *path[SANDBOX_MAX_DENY];
	size_t len[SANDBOX_MAX_DENY];
	int n;
};

static uint64_t handled_rights(int abi)
{
	uint64_t r = LL_FS_V1;

	if (abi >= 2)
		r |= LL_FS_REFER;
	if (abi >= 3)
		r |= LL_FS_TRUNCATE;
	if (abi >= 5)
		r |= LL_FS_IOCTL_DEV;
	return r;
}

/* 1 if path is a closed path or lies under one. */
static int is_closed(const struct closed *c, const char *path)
{
	for (int i = 0; i < c->n; i++)
		if (!strncmp(path, c->path[i], c->len[i]) && (path[c->len[i]] == '\0' || path[c->len[i]] == '/'))
			return 1;
	return 0;
}

/* 1 if path is a proper ancestor of a closed path. */
static int is_above_closed(const struct closed *c, const char *path)
{
	size_t n = strlen(path);

	for (int i = 0; i < c->n; i++) {
		if (!strcmp(path, "/") && c->len[i] > 1)
			return 1;
		if (c->len[i] > n && !strncmp(c->path[i], path, n) && c->path[i][n] == '/')
			return 1;
	}
	return 0;
}

/* Grant every handled right under every entry of dir except the closed ones (recursing above them). */
static int grant_complement(int ruleset, const char *dir, const struct closed *c, uint64_t rights)
{
	DIR *dp = opendir(dir);
	struct dirent *de;
	int err = 0;

	if (!dp)
		return 0; /* unreadable: nothing to grant there */
	while (!err && (de = readdir(dp))) {
		char path[PATH_MAX];
		struct landlock_path_beneath_attr pb;
		struct stat st;
		int fd;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", strcmp(dir, "/") ? dir : "", de->d_name) >= (int)sizeof(path))
			continue;
		if (is_closed(c, path))
			continue;
		if (is_above_closed(c, path)) {
			err = grant_complement(ruleset, path, c, rights);
			continue;
		}
		fd = open(path, O_PATH | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) == 0 && !S_ISLNK(st.st_mode)) {
			pb.allowed_access = S_ISDIR(st.st_mode) ? rights : rights & LL_FS_FILE_ONLY;
			pb.parent_fd = fd;
			if (syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) != 0 &&
			    errno != EINVAL)
				err = vs_error(VS_EIO, "sandbox: landlock_add_rule on '%s': %s", path, strerror(errno));
		}
		close(fd);
	}
	closedir(dp);
	return err;
}

/* Close inherited descriptors that point into a closed path (an open eval dir log, for one). */
static void close_closed_fds(const struct closed *c)
{
	DIR *dp = opendir("/proc/self/fd");
	struct dirent *de;
	int self = dp ? dirfd(dp) : -1;

	if (!dp)
		return;
	while ((de = readdir(dp))) {
		char link[64], target[PATH_MAX];
		int fd = atoi(de->d_name);
		ssize_t k;

		if (de->d_name[0] == '.' || fd == self || fd < 3)
			continue;
		snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
		k = readlink(link, target, sizeof(target) - 1);
		if (k <= 0)
			continue;
		target[k] = '\0';
		if (is_closed(c, target))
			close(fd);
	}
	closedir(dp);
}

int sandbox_make_workdir(char *dir, size_t cap)
{
	const char *tmp = getenv("TMPDIR");

	if (snprintf(dir, cap, "%s/vs-worker-XXXXXX", tmp && *tmp ? tmp : "/tmp") >= (int)cap) {
		dir[0] = '\0';
		return vs_error(VS_EIO, "sandbox: $TMPDIR is too long for a working directory");
	}
	if (!mkdtemp(dir)) {
		int e = errno;

		dir[0] = '\0';
		return vs_error(VS_EIO, "sandbox: cannot make a working directory: %s", strerror(e));
	}
	return 0;
}

/* Enter st->workdir (made by the parent, or here when empty) and make it the process's $TMPDIR. */
static int make_workdir(struct sandbox_state *st)
{
	int err;

	if (!st->workdir[0] && (err = sandbox_make_workdir(st->workdir, sizeof(st->workdir))))
		return err;
	if (chdir(st->workdir) != 0)
		return vs_error(VS_EIO, "sandbox: cannot enter '%s': %s", st->workdir, strerror(errno));
	/*
	 * The temporary directory of the implementation and the tools it runs (a JIT's C compiler:
	 * Triton builds its launcher with gcc): when a closed path lies under /tmp, /tmp itself is
	 * granted entry by entry, so nothing new can be created directly in it; this directory is.
	 */
	if (setenv("TMPDIR", st->workdir, 1) != 0)
		return vs_error(VS_EIO, "sandbox: cannot set TMPDIR: %s", strerror(errno));
	return 0;
}

int sandbox_enter(struct sandbox_state *st, const char *const *deny, int n)
{
	struct landlock_ruleset_attr ra;
	struct closed c;
	char names[160] = "";
	int abi, ruleset = -1, err = 0;

	st->landlock_abi = 0;
	st->line[0] = '\0';
	memset(&c, 0, sizeof(c));
	for (int i = 0; i < n && c.n < SANDBOX_MAX_DENY; i++) {
		char *rp = deny[i] ? realpath(deny[i], NULL) : NULL;

		if (!rp)
			continue;
		c.path[c.n] = rp;
		c.len[c.n] = strlen(rp);
		c.n++;
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", strlen(names) ? ", " : "",
			 deny[i]);
	}
	if ((err = make_workdir(st)))
		goto done;
	close_closed_fds(&c);
	abi = (int)syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 0) {
		snprintf(st->line, sizeof(st->line),
			 "none: Landlock is not available on this kernel (%s): the "
			 "implementation could read %s",
			 strerror(errno), names);
		goto done;
	}
	memset(&ra, 0, sizeof(ra));
	ra.handled_access_fs = handled_rights(abi);
	ruleset = (int)syscall(SYS_landlock_create_ruleset, &ra, sizeof(ra), 0);
	if (ruleset < 0) {
		err = vs_error(VS_EIO, "sandbox: landlock_create_ruleset: %s", strerror(errno));
		goto done;
	}
	if ((err = grant_complement(ruleset, "/", &c, ra.handled_access_fs)))
		goto done;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 || syscall(SYS_landlock_restrict_self, ruleset, 0) != 0) {
		err = vs_error(VS_EIO, "sandbox: landlock_restrict_self: %s", strerror(errno));
		goto done;
	}
	st->landlock_abi = abi;
	snprintf(st->line, sizeof(st->line), "landlock ABI %d: %s closed to the implementation", abi, names);
done:
	if (ruleset >= 0)
		close(ruleset);
	for (int i = 0; i < c.n; i++)
		free(c.path[i]);
	return err;
}

void sandbox_leave(struct sandbox_state *st)
{
	if (st->workdir[0])
		rmdir(st->workdir);
}
