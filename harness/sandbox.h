/*
 * sandbox.h - what a worker's implementation may not read (docs/DESIGN.md "Sandbox").
 *
 * After the worker has loaded its task (and the implementation is loaded), sandbox_enter() moves
 * the process into a working directory of its own (a fresh directory under $TMPDIR or /tmp, which
 * also becomes the process's $TMPDIR: a closed path under /tmp leaves /tmp itself closed to new files),
 * closes every inherited descriptor that points into a closed path, and, where the kernel has
 * Landlock (Linux 5.13+), restricts the process and its children for good: every access right the
 * kernel's Landlock ABI knows is handled, and granted everywhere except under the closed paths
 * (the task dirs, the eval dirs, the cards and the plans). A Landlock rule can only grant, so the
 * grant is the complement: each directory on the way from / to a closed path is opened up entry by
 * entry, all but the closed one. Where Landlock is unavailable the worker goes on with a warning
 * that ends up in run.log and result.json ("sandbox": "none: ...").
 */
#ifndef VS_SANDBOX_H
#define VS_SANDBOX_H

#include <stddef.h>

struct sandbox_state {
	int landlock_abi;  /* the ABI enforced, 0 when none */
	char workdir[256]; /* the working directory made for the process ("" if none) */
	char line[320];    /* one line for the log and result.json */
};

/**
 * Make a fresh working directory for a worker, "$TMPDIR/vs-worker-XXXXXX" (or under /tmp), into
 * dir[0..cap). The runner makes it before the fork and removes it, whatever it holds, after the
 * worker is reaped: the worker itself cannot, once Landlock has closed /tmp's entries to it (a
 * closed path under /tmp), and a worker that crashes never gets to. Errors: VS_EIO.
 */
int sandbox_make_workdir(char *dir, size_t cap);

/**
 * Enter the sandbox: deny[0..n) are the closed paths (missing ones are skipped). st->workdir is
 * the working directory to enter (sandbox_make_workdir()); when it is "", one is made here. Returns 0 when the
 * process runs restricted or, without Landlock, with the warning in st->line; VS_EIO when the
 * working directory cannot be made or Landlock refuses a step after it was found (the worker
 * must not go on half-restricted).
 */
int sandbox_enter(struct sandbox_state *st, const char *const *deny, int n);

/** Remove the working directory if it is empty (best effort; the runner removes it in any case). */
void sandbox_leave(struct sandbox_state *st);

#endif /* VS_SANDBOX_H */
