/*
 * worker.h - crash isolation for the runner (docs/DESIGN.md "Process model").
 *
 * Each task runs in a worker process (fork) that opens the device itself, loads and verifies the
 * task dir, runs both implementations (parity, capture, tuning, A/B: measure_task) and sends its
 * result back over a pipe as JSON. A worker that faults (illegal address, abort), hangs past its
 * time limit, or dies without a result gives a FAILED task with the reason; the next task gets a
 * fresh worker (and, on a GPU, a fresh context: CUDA errors are sticky for a process). The parent
 * never touches the GPU runtime, which does not survive fork().
 *
 * A worker dies with its parent (PR_SET_PDEATHSIG), and, once its task is loaded, runs in the
 * sandbox of sandbox.h: its implementation cannot read the task dirs, eval dirs, cards or plans.
 */
#ifndef VS_WORKER_H
#define VS_WORKER_H

#include "device.h"
#include "measure.h"

struct worker_spec {
	const struct measure_ctx *ctx; /* ctx->device NULL: the worker opens backend/gpu_ordinal */
	const char *backend;           /* "cpu" or "hip" */
	int gpu_ordinal;
	const char *task_dir;
	const struct task_spec *spec; /* the plan's spec of the task */
	const char *task_hash;
	double timeout_s;                /* the worker is killed after this long (<= 0: no limit) */
	int in_process;                  /* no fork (VS_NO_FORK=1; debugging under a debugger) */
	const char *const *sandbox_deny; /* paths closed to the implementation (sandbox.h), or NULL */
	int nsandbox_deny;
};

/**
 * Run one task in a worker. *r is always filled (r->error says why a task did not complete);
 * *samples and *log (malloc'd, possibly empty) receive the worker's CSV rows and log lines.
 * Returns 0 when the worker reported back (whatever the task's outcome), VS_EFAIL when it died,
 * hung or reported nothing, VS_ENOMEM / VS_EIO for harness failures.
 */
int worker_run_task(struct measure_result *r, const struct worker_spec *w, char **samples, char **log);

/** A worker process started by worker_start(), collected by worker_finish(). */
struct worker_proc {
	int pid;   /* 0 once collected */
	int fd;    /* read end of the result pipe (non-blocking), -1 when closed */
	char *buf; /* what the worker sent so far */
	size_t len, cap;
	double started, deadline; /* monotonic seconds; deadline 0 = no limit */
	int eof, timed_out;
	char workdir[256]; /* the worker's working directory (sandbox_make_workdir()), removed when reaped */
};

/**
 * Start a worker for w without waiting for it (several may run at once: `--gpus`). w and what it
 * points to must stay valid until worker_finish(). Errors: VS_EIO (pipe, fork).
 */
int worker_start(struct worker_proc *wp, const struct worker_spec *w);

/**
 * Read what wp->fd has (call when poll() says it is readable, or periodically); kills the worker
 * when its deadline has passed. Returns 1 when the worker is done (EOF or killed), else 0.
 */
int worker_pump(struct worker_proc *wp);

/** Reap a done worker and rebuild its result, as worker_run_task() returns it. */
int worker_finish(struct measure_result *r, struct worker_proc *wp, const struct worker_spec *w, char **samples,
		  char **log);

/** Kill and reap a running worker (a run that stops on a harness error). */
void worker_kill(struct worker_proc *wp);

/** Open the device in a short-lived worker and report its facts (the parent stays GPU-free). */
int worker_probe_device(struct vs_device_info *info, const char *backend, int gpu_ordinal);

#endif /* VS_WORKER_H */
