#include "progress.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void progress_init(struct progress *p, FILE *out, int total)
{
	const char *env = getenv("VS_PROGRESS");

	memset(p, 0, sizeof(*p));
	p->out = out ? out : stdout;
	p->total = total;
	p->t0 = mono();
	if (env && !strcmp(env, "tty"))
		p->tty = 1;
	else if (env && !strcmp(env, "plain"))
		p->tty = 0;
	else
		p->tty = isatty(fileno(p->out));
}

static void clear(struct progress *p)
{
	if (p->tty && p->drawn) {
		fputs("\r\033[K", p->out);
		p->drawn = 0;
	}
}

static void draw(struct progress *p)
{
	int s = (int)(mono() - p->t0);

	if (!p->tty || !*p->status)
		return;
	fprintf(p->out, "\r\033[K[%d/%d] %s  %d:%02d", p->done, p->total, p->status, s / 60, s % 60);
	fflush(p->out);
	p->drawn = 1;
}

void progress_status(struct progress *p, const char *fmt, ...)
{
	va_list ap;

	if (!p->tty)
		return;
	va_start(ap, fmt);
	vsnprintf(p->status, sizeof(p->status), fmt, ap);
	va_end(ap);
	clear(p);
	draw(p);
}

void progress_tick(struct progress *p)
{
	if (!p->tty)
		return;
	clear(p);
	draw(p);
}

void progress_line(struct progress *p, const char *fmt, ...)
{
	va_list ap;

	clear(p);
	va_start(ap, fmt);
	vfprintf(p->out, fmt, ap);
	va_end(ap);
	fputc('\n', p->out);
	fflush(p->out);
	draw(p);
}

void progress_step(struct progress *p)
{
	p->done++;
}

void progress_end(struct progress *p)
{
	clear(p);
	p->status[0] = '\0';
	fflush(p->out);
}
