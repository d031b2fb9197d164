/*
 * vs_error.h - error codes and the one-line error reporter of validate_skill.
 *
 * Internal functions return 0 on success or one of the negative codes below (libgit2's convention,
 * include/git2/errors.h). Only the CLI maps codes to exit statuses (0 ok, 1 failure, 2 usage).
 */
#ifndef VS_ERROR_H
#define VS_ERROR_H

#include <stdarg.h>

/*
 * -1 is no code: static helpers use it as their own "not found" / "failed" sentinel, and one that
 * leaked to the CLI must not read as a usage error (exit 2).
 */
enum vs_error_code {
	VS_OK = 0,
	VS_EIO = -2,          /* a file could not be read or written (errno text in the message) */
	VS_EPARSE = -3,       /* malformed input: YAML, JSON, safetensors, front matter */
	VS_ESCHEMA = -4,      /* well-formed input that breaks the schema (missing key, bad enum, ...) */
	VS_EVERIFY = -5,      /* a hash or identity does not match (tampered task dir, foreign eval dir) */
	VS_ENOTFOUND = -6,    /* a named thing does not exist (implementation, task, file) */
	VS_EUNSUPPORTED = -7, /* valid, but not handled by this build (e2e scope, dtype, GPU backend) */
	VS_EDEVICE = -8,      /* GPU runtime error */
	VS_ENOMEM = -9,       /* allocation failed */
	VS_EFAIL = -10,       /* the checked thing was measured and failed (parity, gate) */
	VS_ENOSPACE = -11,    /* not enough free disk */
	VS_EUSAGE = -12,      /* bad command line */
};

/**
 * Print "validate_skill: error: <message>" as one line on stderr and return code.
 * Usage: return vs_error(VS_EPARSE, "%s:%d:%d: unclosed front matter", path, line, col);
 * Messages are lowercase, name the subject in quotes and give file:line:col where known.
 */
int vs_error(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Same as vs_error() with a va_list. */
int vs_verror(int code, const char *fmt, va_list ap);

/** Print "validate_skill: warning: <message>" on stderr. */
void vs_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/**
 * Silence (quiet != 0) or restore error printing; returns the previous setting. Tests use it to
 * check codes without noise; vs_last_error() still holds the message.
 */
int vs_error_set_quiet(int quiet);

/** The text of the last error reported (without the "validate_skill: error: " prefix). */
const char *vs_last_error(void);

/** Short name of a code ("parse", "schema", ...). */
const char *vs_error_name(int code);

/** The one out-of-memory report: vs_error(VS_ENOMEM, "out of memory"); returns VS_ENOMEM. */
int vs_oom(void);

/** Return vs_oom() from the enclosing function when ptr is NULL (libgit2's GIT_ERROR_CHECK_ALLOC). */
#define VS_CHECK_ALLOC(ptr)                                                                                            \
	do {                                                                                                           \
		if (!(ptr))                                                                                            \
			return vs_oom();                                                                               \
	} while (0)

#endif /* VS_ERROR_H */
