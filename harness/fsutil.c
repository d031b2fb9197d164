#include "fsutil.h"
#include "vs_error.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

int fs_read_file(char **out, size_t *len, const char *path, size_t max_bytes)
{
	FILE *f = NULL;
	char *buf = NULL;
	size_t cap = 0, n = 0;
	int err = 0;
	struct stat st;

	f = fopen(path, "rb");
	if (!f)
		return vs_error(VS_EIO, "cannot open '%s': %s", path, strerror(errno));
	if (fstat(fileno(f), &st) == 0 && S_ISDIR(st.st_mode)) {
		err = vs_error(VS_EIO, "cannot read '%s': is a directory", path);
		goto done;
	}
	for (;;) {
		if (n + 1 >= cap) {
			size_t ncap = cap ? cap * 2 : 65536;
			char *nb = realloc(buf, ncap);

			if (!nb) {
				err = vs_error(VS_ENOMEM, "out of memory reading '%s'", path);
				goto done;
			}
			buf = nb;
			cap = ncap;
		}
		size_t got = fread(buf + n, 1, cap - n - 1, f);

		n += got;
		if (max_bytes && n > max_bytes) {
			err = vs_error(VS_EPARSE, "'%s' is larger than the limit of %zu bytes", path, max_bytes);
			goto done;
		}
		if (got == 0) {
			if (ferror(f)) {
				err = vs_error(VS_EIO, "cannot read '%s': %s", path, strerror(errno));
				goto done;
			}
			break;
		}
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	buf = NULL;
done:
	free(buf);
	fclose(f);
	return err;
}

/* An error of fs_write_atomic() on path (the temporary, or dest itself) while replacing dest. */
static int io_error(const char *what, const char *path, const char *dest)
{
	int e = errno;

	if (e == ENOSPC || e == EDQUOT)
		return vs_error(VS_ENOSPACE, "cannot %s '%s': %s (%s)", what, path, strerror(e),
				fs_exists(dest) ? "the old file is intact" : "nothing was written");
	return vs_error(VS_EIO, "cannot %s '%s': %s", what, path, strerror(e));
}

int fs_write_atomic(const char *path, const void *data, size_t len, unsigned mode)
{
	char *tmp = NULL, *dircopy = NULL;
	int fd = -1, err = 0;
	const char *p = data;

	tmp = fs_printf("%s.tmp.%ld", path, (long)getpid());
	if (!tmp)
		return vs_error(VS_ENOMEM, "out of memory writing '%s'", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		err = io_error("create", tmp, path);
		goto done;
	}
	while (len > 0) {
		ssize_t w = write(fd, p, len);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			err = io_error("write", tmp, path);
			goto done;
		}
		p += w;
		len -= (size_t)w;
	}
	if (fchmod(fd, mode) != 0 || fsync(fd) != 0) {
		err = io_error("sync", tmp, path);
		goto done;
	}
	if (close(fd) != 0) {
		fd = -1;
		err = io_error("close", tmp, path);
		goto done;
	}
	fd = -1;
	if (rename(tmp, path) != 0) {
		err = io_error("replace", path, path);
		goto done;
	}
	dircopy = strdup(path);
	if (dircopy) {
		int dfd = open(dirname(dircopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
	}
done:
	if (fd >= 0)
		close(fd);
	if (err && tmp)
		unlink(tmp);
	free(tmp);
	free(dircopy);
	return err;
}

int fs_write_in(const char *dir, const char *name, const void *data, size_t len, char hex[FS_SHA256_HEX])
{
	char *path = fs_join(dir, name);
	int err;

	VS_CHECK_ALLOC(path);
	err = fs_write_atomic(path, data, len, 0644);
	if (!err && hex)
		fs_sha256_hex(hex, data, len);
	free(path);
	return err;
}

int fs_mkdir_p(const char *path)
{
	char *copy = strdup(path);
	int err = 0;

	VS_CHECK_ALLOC(copy);
	for (char *p = copy + 1;; p++) {
		if (*p == '/' || *p == '\0') {
			char c = *p;

			*p = '\0';
			if (mkdir(copy, 0755) != 0 && errno != EEXIST) {
				err = vs_error(VS_EIO, "cannot create directory '%s': %s", copy, strerror(errno));
				break;
			}
			*p = c;
			if (c == '\0')
				break;
		}
	}
	if (!err && !fs_is_dir(path))
		err = vs_error(VS_EIO, "'%s' exists and is not a directory", path);
	free(copy);
	return err;
}

int fs_remove_tree(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	int err = 0;

	if (lstat(path, &st) != 0)
		return errno == ENOENT ? 0 : vs_error(VS_EIO, "cannot stat '%s': %s", path, strerror(errno));
	if (!S_ISDIR(st.st_mode)) {
		if (unlink(path) != 0)
			return vs_error(VS_EIO, "cannot remove '%s': %s", path, strerror(errno));
		return 0;
	}
	chmod(path, 0755);
	d = opendir(path);
	if (!d)
		return vs_error(VS_EIO, "cannot open directory '%s': %s", path, strerror(errno));
	while (!err && (e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *child = fs_join(path, e->d_name);

		if (!child) {
			err = vs_oom();
			break;
		}
		err = fs_remove_tree(child);
		free(child);
	}
	closedir(d);
	if (!err && rmdir(path) != 0)
		err = vs_error(VS_EIO, "cannot remove '%s': %s", path, strerror(errno));
	return err;
}

int fs_is_link(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 && S_ISLNK(st.st_mode);
}

int fs_check_link(const char *path, const char *what)
{
	char *target = NULL, *root = NULL;
	size_t n;
	int err = 0;

	if (!fs_is_link(path))
		return 0;
	target = realpath(path, NULL);
	root = realpath(".", NULL);
	if (!target || !root)
		goto done; /* a dangling link: opening it reports the error */
	n = strlen(root);
	if (strncmp(target, root, n) || (target[n] != '/' && !(n == 1 && root[0] == '/')))
		err = vs_error(VS_EVERIFY, "%s '%s' is a symlink to '%s', outside the repository '%s': refused", what,
			       path, target, root);
done:
	free(target);
	free(root);
	return err;
}

int fs_exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

int fs_is_dir(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

uint64_t fs_free_bytes(const char *path)
{
	struct statvfs sv;

	if (statvfs(path, &sv) != 0)
		return 0;
	return (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
}

static void to_hex(char hex[FS_SHA256_HEX], const unsigned char *md)
{
	static const char digits[] = "0123456789abcdef";

	for (int i = 0; i < 32; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 15];
	}
	hex[64] = '\0';
}

int fs_sha256_init(struct fs_sha256 *h)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(ctx);
		return vs_error(VS_ENOMEM, "cannot initialise sha256");
	}
	h->ctx = ctx;
	return 0;
}

void fs_sha256_update(struct fs_sha256 *h, const void *data, size_t len)
{
	EVP_DigestUpdate(h->ctx, data, len);
}

void fs_sha256_final(struct fs_sha256 *h, char hex[FS_SHA256_HEX])
{
	unsigned char md[32];
	unsigned int n = 0;

	EVP_DigestFinal_ex(h->ctx, md, &n);
	EVP_MD_CTX_free(h->ctx);
	h->ctx = NULL;
	to_hex(hex, md);
}

void fs_sha256_hex(char hex[FS_SHA256_HEX], const void *data, size_t len)
{
	unsigned char md[32];
	unsigned int n = 0;

	EVP_Digest(data, len, md, &n, EVP_sha256(), NULL);
	to_hex(hex, md);
}

int fs_sha256_file(char hex[FS_SHA256_HEX], const char *path)
{
	struct fs_sha256 h = {NULL};
	unsigned char buf[1 << 16];
	size_t got;
	FILE *f = fopen(path, "rb");
	int err;

	if (!f)
		return vs_error(VS_EIO, "cannot open '%s': %s", path, strerror(errno));
	err = fs_sha256_init(&h);
	if (err) {
		fclose(f);
		return err;
	}
	while ((got = fread(buf, 1, sizeof(buf), f)) > 0)
		fs_sha256_update(&h, buf, got);
	err = ferror(f) ? vs_error(VS_EIO, "cannot read '%s': %s", path, strerror(errno)) : 0;
	fclose(f);
	fs_sha256_final(&h, hex);
	return err;
}

char *fs_printf(const char *fmt, ...)
{
	va_list ap;
	char *s = NULL;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) < 0)
		s = NULL;
	va_end(ap);
	return s;
}

char *fs_join(const char *dir, const char *name)
{
	size_t n = strlen(dir);

	if (n > 0 && dir[n - 1] == '/')
		return fs_printf("%s%s", dir, name);
	return fs_printf("%s/%s", dir, name);
}

char *fs_dirname(const char *path)
{
	size_t n = strlen(path);
	const char *s;

	while (n > 1 && path[n - 1] == '/')
		n--;
	for (s = path + n; s > path && s[-1] != '/'; s--)
		;
	if (s == path)
		return strdup(".");
	if (s - 1 == path)
		return strdup("/");
	return strndup(path, (size_t)(s - 1 - path));
}

char *fs_stem(const char *path, const char *suffix)
{
	const char *base = strrchr(path, '/');
	size_t n, sn = suffix ? strlen(suffix) : 0;

	base = base ? base + 1 : path;
	n = strlen(base);
	if (sn && n >= sn && !strcmp(base + n - sn, suffix))
		n -= sn;
	return strndup(base, n);
}

void fs_today_utc(char out[11])
{
	const char *fixed = getenv("VS_TODAY");
	time_t now = time(NULL);
	struct tm tm;

	if (fixed && strlen(fixed) == 10) {
		memcpy(out, fixed, 11);
		return;
	}
	gmtime_r(&now, &tm);
	strftime(out, 11, "%Y-%m-%d", &tm);
}
