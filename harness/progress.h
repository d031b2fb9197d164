/*
 * progress.h - what long modes (--materialize, --run, --merge) show while they work.
 *
 * On a terminal: a status line redrawn in place ("[3/12] bf16-h64 ... A/B 0:42") above which
 * finished tasks are printed one line each. When the output is not a terminal (a log file, CI,
 * a pipe, Slurm): only the finished lines, one per task, nothing redrawn. VS_PROGRESS=tty or
 * VS_PROGRESS=plain overrides the detection.
 */
#ifndef VS_PROGRESS_H
#define VS_PROGRESS_H

#include <stdio.h>

struct progress {
	FILE *out;
	int tty; /* redraw a status line */
	int total, done;
	double t0;        /* monotonic seconds at init */
	char status[200]; /* the current status text, "" for none */
	int drawn;        /* a status line is on screen */
};

/** Start reporting on out (stdout when NULL) for total steps. */
void progress_init(struct progress *p, FILE *out, int total);

/** Replace the status line (terminal only; ignored otherwise). */
void progress_status(struct progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Redraw the status line with the elapsed time (terminal only); call about once a second. */
void progress_tick(struct progress *p);

/** Print a permanent line (both modes); the status line, if any, is redrawn below it. */
void progress_line(struct progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** Count one step done. */
void progress_step(struct progress *p);

/** Remove the status line. */
void progress_end(struct progress *p);

#endif /* VS_PROGRESS_H */
