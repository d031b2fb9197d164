/*
 * fsutil.h - files: whole-file reads, atomic writes, directories, sha256 (OpenSSL EVP).
 *
 * Every write that replaces a product file (card, plan, manifest, result) goes through
 * fs_write_atomic(): temporary file in the same directory, fsync, rename, fsync of the directory,
 * so a crash leaves either the old file or the new one, never a mixture.
 */
#ifndef VS_FSUTIL_H
#define VS_FSUTIL_H

#include <stddef.h>
#include <stdint.h>

#define FS_SHA256_HEX 65 /* 64 hex digits and NUL */

/**
 * Read the whole file at path into a NUL-terminated buffer.
 * *out (caller frees with free()) and *len are set only on success.
 * Errors: VS_EIO (with errno text), VS_EPARSE when the file is larger than max_bytes
 * (0 = no limit), VS_ENOMEM.
 */
int fs_read_file(char **out, size_t *len, const char *path, size_t max_bytes);

/**
 * Atomically replace path with len bytes of data (temporary file beside it, fsync, rename, fsync
 * of the directory). mode is the new file's permission bits (e.g. 0644, 0444 for task files).
 * Errors: VS_EIO, VS_ENOSPACE (ENOSPC/EDQUOT; the old file is left intact).
 */
int fs_write_atomic(const char *path, const void *data, size_t len, unsigned mode);

/**
 * fs_write_atomic() of dir/name with mode 0644; when hex is not NULL it receives the sha256 of the
 * bytes written (the eval dirs bind their files by these). Errors: those of fs_write_atomic().
 */
int fs_write_in(const char *dir, const char *name, const void *data, size_t len, char hex[FS_SHA256_HEX]);

/** mkdir -p with mode 0755. Errors: VS_EIO. */
int fs_mkdir_p(const char *path);

/** Remove a directory tree (like rm -rf; makes read-only entries writable first). Errors: VS_EIO. */
int fs_remove_tree(const char *path);

/**
 * Refuse a path whose last component is a symbolic link that resolves outside the working directory
 * (the repository root the tool runs from): a card or plan copied in as a link must not make the tool
 * read, or later write, files elsewhere. what names the file in the message ("card", "plan").
 * Returns 0 when path is not a link, is a dangling one (the caller's open reports it) or resolves
 * inside; else VS_EVERIFY: "<what> '<path>' is a symlink to '<target>', outside the repository
 * '<cwd>': refused".
 */
int fs_check_link(const char *path, const char *what);

/** 1 if path is a symbolic link (not followed), 0 if not. */
int fs_is_link(const char *path);

/** 1 if path exists (any type), 0 if not. */
int fs_exists(const char *path);

/** 1 if path is a directory. */
int fs_is_dir(const char *path);

/** Free bytes available to an unprivileged user on the filesystem holding path; 0 on error. */
uint64_t fs_free_bytes(const char *path);

/** sha256 of len bytes as 64 lowercase hex digits into hex[FS_SHA256_HEX]. */
void fs_sha256_hex(char hex[FS_SHA256_HEX], const void *data, size_t len);

/** sha256 of a file's bytes. Errors: VS_EIO. */
int fs_sha256_file(char hex[FS_SHA256_HEX], const char *path);

/** Incremental sha256 (wraps OpenSSL EVP_MD_CTX). */
struct fs_sha256 {
	void *ctx;
};
int fs_sha256_init(struct fs_sha256 *h);
void fs_sha256_update(struct fs_sha256 *h, const void *data, size_t len);
void fs_sha256_final(struct fs_sha256 *h, char hex[FS_SHA256_HEX]);

/** "<dir>/<name>" into a malloc'd string; NULL on allocation failure. */
char *fs_join(const char *dir, const char *name);

/**
 * The directory part of path, trailing slashes ignored: "a/b/" and "a/b" give "a", a bare name
 * ".", "/x" "/"; malloc'd, NULL on allocation failure.
 */
char *fs_dirname(const char *path);

/** Base name of path without directory and without the given suffix (e.g. ".md"), malloc'd. */
char *fs_stem(const char *path, const char *suffix);

/** printf into a malloc'd string; NULL on failure. */
char *fs_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/** Today's date in UTC as YYYY-MM-DD (honours VS_TODAY=YYYY-MM-DD for reproducible tests). */
void fs_today_utc(char out[11]);

#endif /* VS_FSUTIL_H */
