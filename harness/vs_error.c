#include "vs_error.h"

#include <stdio.h>

static char last_error[2048];
static int quiet;

int vs_verror(int code, const char *fmt, va_list ap)
{
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	if (!quiet)
		fprintf(stderr, "validate_skill: error: %s\n", last_error);
	return code;
}

int vs_error(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vs_verror(code, fmt, ap);
	va_end(ap);
	return code;
}

void vs_warn(const char *fmt, ...)
{
	va_list ap;

	if (quiet)
		return;
	va_start(ap, fmt);
	fputs("validate_skill: warning: ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

int vs_error_set_quiet(int q)
{
	int old = quiet;

	quiet = q;
	return old;
}

const char *vs_last_error(void)
{
	return last_error;
}

const char *vs_error_name(int code)
{
	switch (code) {
	case VS_OK:
		return "ok";
	case VS_EUSAGE:
		return "usage";
	case VS_EIO:
		return "io";
	case VS_EPARSE:
		return "parse";
	case VS_ESCHEMA:
		return "schema";
	case VS_EVERIFY:
		return "verify";
	case VS_ENOTFOUND:
		return "not found";
	case VS_EUNSUPPORTED:
		return "unsupported";
	case VS_EDEVICE:
		return "device";
	case VS_ENOMEM:
		return "out of memory";
	case VS_EFAIL:
		return "failed";
	case VS_ENOSPACE:
		return "no space";
	}
	return "unknown";
}

int vs_oom(void)
{
	return vs_error(VS_ENOMEM, "out of memory");
}
