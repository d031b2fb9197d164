#include "worker.h"
#include "fsutil.h"
#include "pyimpl.h"
#include "sandbox.h"
#include "vs_error.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- result <-> JSON (the pipe's message) ----------------------------------------------------- */

static cJSON *impl_msg(const struct measure_impl *ir)
{
	cJSON *j = cJSON_CreateObject(), *pass = cJSON_AddArrayToObject(j, "pass");
	cJSON *det = cJSON_AddArrayToObject(j, "detail");

	cJSON_AddItemToObject(j, "tune", measure_doubles_json(ir->tune_ms, ir->nconfigs));
	cJSON_AddItemToObject(j, "margin", measure_doubles_json(ir->margin, ir->nconfigs));
	cJSON_AddItemToObject(j, "cos_diff", measure_doubles_json(ir->cos_diff, ir->nconfigs));
	for (int i = 0; i < ir->nconfigs; i++) {
		cJSON_AddItemToArray(pass, cJSON_CreateNumber(ir->config_pass[i]));
		cJSON_AddItemToArray(det, ir->config_detail[i] ? cJSON_CreateString(ir->config_detail[i]) :
								 cJSON_CreateNull());
	}
	cJSON_AddNumberToObject(j, "chosen", ir->chosen);
	cJSON_AddNumberToObject(j, "capture", ir->capture);
	cJSON_AddNumberToObject(j, "setup_ms", ir->setup_ms);
	if (ir->capture_detail)
		cJSON_AddStringToObject(j, "capture_detail", ir->capture_detail);
	return j;
}

static char *dup_or_null(const cJSON *s)
{
	return cJSON_IsString(s) ? strdup(s->valuestring) : NULL;
}

static void impl_unmsg(struct measure_impl *ir, const cJSON *j)
{
	const cJSON *pass = cJSON_GetObjectItem(j, "pass"), *det = cJSON_GetObjectItem(j, "detail");
	double *tune = measure_doubles_parse(cJSON_GetStringValue(cJSON_GetObjectItem(j, "tune")), ir->nconfigs);
	double *margin = measure_doubles_parse(cJSON_GetStringValue(cJSON_GetObjectItem(j, "margin")), ir->nconfigs);
	double *cosd = measure_doubles_parse(cJSON_GetStringValue(cJSON_GetObjectItem(j, "cos_diff")), ir->nconfigs);

	for (int i = 0; i < ir->nconfigs; i++) {
		ir->config_pass[i] = (int)cJSON_GetNumberValue(cJSON_GetArrayItem(pass, i));
		ir->config_detail[i] = dup_or_null(cJSON_GetArrayItem(det, i));
		ir->tune_ms[i] = tune ? tune[i] : 0;
		ir->margin[i] = margin && cJSON_GetObjectItem(j, "margin") ? margin[i] : -1;
		ir->cos_diff[i] = cosd && cJSON_GetObjectItem(j, "cos_diff") ? cosd[i] : -1;
	}
	free(tune);
	free(margin);
	free(cosd);
	ir->chosen = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "chosen"));
	ir->capture = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "capture"));
	ir->setup_ms = cJSON_IsNumber(cJSON_GetObjectItem(j, "setup_ms")) ?
			       cJSON_GetNumberValue(cJSON_GetObjectItem(j, "setup_ms")) :
			       0;
	ir->capture_detail = dup_or_null(cJSON_GetObjectItem(j, "capture_detail"));
}

/* The references' outcomes (present only when the plan has references). */
static cJSON *refs_msg(const struct measure_result *r)
{
	cJSON *arr = cJSON_CreateArray();

	for (int k = 0; k < r->nrefs; k++) {
		const struct measure_ref *rf = &r->refs[k];
		cJSON *j = impl_msg(&rf->m);

		if (rf->t)
			cJSON_AddItemToObject(j, "t", measure_doubles_json(rf->t, r->npairs));
		cJSON_AddNumberToObject(j, "timed_checks", rf->timed_checks);
		cJSON_AddNumberToObject(j, "timed_check_failures", rf->timed_check_failures);
		cJSON_AddItemToArray(arr, j);
	}
	return arr;
}

static void refs_unmsg(struct measure_result *r, const cJSON *arr)
{
	for (int k = 0; k < r->nrefs; k++) {
		struct measure_ref *rf = &r->refs[k];
		const cJSON *j = cJSON_GetArrayItem(arr, k), *t = cJSON_GetObjectItem(j, "t");

		if (!j)
			continue;
		impl_unmsg(&rf->m, j);
		if (cJSON_IsString(t) && r->npairs > 0)
			rf->t = measure_doubles_parse(t->valuestring, r->npairs);
		rf->timed_checks = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "timed_checks"));
		rf->timed_check_failures = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "timed_check_failures"));
	}
}

static char *result_msg(const struct measure_result *r, int code, const char *samples, const char *log)
{
	cJSON *j = cJSON_CreateObject();
	char *text;

	cJSON_AddNumberToObject(j, "code", code);
	cJSON_AddBoolToObject(j, "complete", r->complete);
	cJSON_AddBoolToObject(j, "parity_pass", r->parity_pass); /* a parity-only run's verdict (measure.c) */
	if (r->error)
		cJSON_AddStringToObject(j, "error", r->error);
	if (r->skipped) /* a forced config that declined the task (measure.c) */
		cJSON_AddStringToObject(j, "skipped", r->skipped);
	cJSON_AddItemToObject(j, "baseline", impl_msg(&r->base));
	cJSON_AddItemToObject(j, "candidate", impl_msg(&r->cand));
	if (r->nrefs)
		cJSON_AddItemToObject(j, "references", refs_msg(r));
	cJSON_AddNumberToObject(j, "npairs", r->npairs);
	cJSON_AddItemToObject(j, "t_base", measure_doubles_json(r->t_base, r->npairs));
	cJSON_AddItemToObject(j, "t_cand", measure_doubles_json(r->t_cand, r->npairs));
	cJSON_AddNumberToObject(j, "stop_reason", r->stop_reason);
	cJSON_AddNumberToObject(j, "timed_checks", r->timed_checks);
	cJSON_AddNumberToObject(j, "timed_check_failures", r->timed_check_failures);
	cJSON_AddNumberToObject(j, "sm_mhz_begin", r->sm_mhz_begin);
	cJSON_AddNumberToObject(j, "sm_mhz_end", r->sm_mhz_end);
	cJSON_AddNumberToObject(j, "throttle_begin", (double)r->throttle_begin);
	cJSON_AddNumberToObject(j, "throttle_end", (double)r->throttle_end);
	if (r->py_versions)
		cJSON_AddStringToObject(j, "py_versions", r->py_versions);
	if (r->py_autotune)
		cJSON_AddStringToObject(j, "py_autotune", r->py_autotune);
	if (r->e2e.planned)
		cJSON_AddItemToObject(j, "e2e", measure_e2e_to_msg(r));
	cJSON_AddStringToObject(j, "sandbox", r->sandbox);
	cJSON_AddStringToObject(j, "samples", samples ? samples : "");
	cJSON_AddStringToObject(j, "log", log ? log : "");
	text = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return text;
}

/* Rebuild the result from a worker's message; returns the worker's own status code. */
static int result_unmsg(struct measure_result *r, const cJSON *j, const struct plan *p, char **samples, char **log)
{
	r->complete = cJSON_IsTrue(cJSON_GetObjectItem(j, "complete"));
	r->parity_pass = cJSON_IsTrue(cJSON_GetObjectItem(j, "parity_pass"));
	r->error = dup_or_null(cJSON_GetObjectItem(j, "error"));
	if (cJSON_GetObjectItem(j, "skipped") && !r->skipped)
		r->skipped = dup_or_null(cJSON_GetObjectItem(j, "skipped"));
	impl_unmsg(&r->base, cJSON_GetObjectItem(j, "baseline"));
	impl_unmsg(&r->cand, cJSON_GetObjectItem(j, "candidate"));
	r->npairs = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "npairs"));
	if (r->npairs > 0) {
		r->t_base = measure_doubles_parse(cJSON_GetStringValue(cJSON_GetObjectItem(j, "t_base")), r->npairs);
		r->t_cand = measure_doubles_parse(cJSON_GetStringValue(cJSON_GetObjectItem(j, "t_cand")), r->npairs);
	}
	refs_unmsg(r, cJSON_GetObjectItem(j, "references"));
	r->stop_reason = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "stop_reason"));
	r->timed_checks = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "timed_checks"));
	r->timed_check_failures = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "timed_check_failures"));
	r->sm_mhz_begin = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "sm_mhz_begin"));
	r->sm_mhz_end = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "sm_mhz_end"));
	r->throttle_begin = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "throttle_begin"));
	r->throttle_end = (uint64_t)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "throttle_end"));
	r->py_versions = dup_or_null(cJSON_GetObjectItem(j, "py_versions"));
	r->py_autotune = dup_or_null(cJSON_GetObjectItem(j, "py_autotune"));
	measure_e2e_from_msg(r, cJSON_GetObjectItem(j, "e2e"));
	snprintf(r->sandbox, sizeof(r->sandbox), "%s",
		 cJSON_GetStringValue(cJSON_GetObjectItem(j, "sandbox")) ?
			 cJSON_GetStringValue(cJSON_GetObjectItem(j, "sandbox")) :
			 "");
	*samples = dup_or_null(cJSON_GetObjectItem(j, "samples"));
	*log = dup_or_null(cJSON_GetObjectItem(j, "log"));
	measure_result_finish(r, p);
	return (int)cJSON_GetNumberValue(cJSON_GetObjectItem(j, "code"));
}

/* ---- the worker --------------------------------------------------------------------------- */

static int open_device(struct vs_device *d, const char *backend, int ordinal)
{
	return strcmp(backend, "cpu") ? vs_device_open_gpu(d, ordinal) : vs_device_open_cpu(d);
}

/* The body of a worker: everything a task needs, in this process. Returns the message text. */
static char *work(const struct worker_spec *w, const char *workdir, int *code_out)
{
	struct measure_result r;
	struct measure_ctx ctx = *w->ctx;
	struct vs_device dev;
	struct task_data t;
	struct sandbox_state sb;
	char *samples = NULL, *log = NULL, *msg;
	size_t slen = 0, llen = 0;
	FILE *fs = open_memstream(&samples, &slen), *fl = open_memstream(&log, &llen);
	int code = 0;

	memset(&r, 0, sizeof(r));
	memset(&dev, 0, sizeof(dev));
	memset(&t, 0, sizeof(t));
	memset(&sb, 0, sizeof(sb));
	snprintf(sb.workdir, sizeof(sb.workdir), "%s", workdir ? workdir : "");
	ctx.samples = fs;
	ctx.log = fl;
	ctx.gpu_ordinal = strcmp(w->backend, "cpu") ? w->gpu_ordinal : -1;
	if (!ctx.device) {
		code = open_device(&dev, w->backend, w->gpu_ordinal);
		ctx.device = &dev;
	}
	/*
	 * The Python implementations' interpreter starts here, after the fork (pyimpl.h); one that
	 * cannot start fails this task with its line, and the run goes on.
	 */
	if (!code && (pyimpl_at(0) || pyimpl_step()))
		code = pyimpl_start();
	if (!code)
		code = task_load(&t, w->task_dir);
	if (!code && !w->in_process) {
		code = sandbox_enter(&sb, w->sandbox_deny, w->nsandbox_deny);
		if (!code && sb.landlock_abi == 0)
			fprintf(fl, "    warning: sandbox: %s\n", sb.line);
	}
	if (!code) {
		char *late;

		code = measure_task(&r, &ctx, &t);
		r.py_versions = pyimpl_versions_now();
		/* What each @triton.autotune kernel did: run.log, result.json (docs/DESIGN.md "Autotuned kernels") */
		r.py_autotune = pyimpl_autotune_now();
		pyimpl_autotune_log(fl, r.py_autotune);
		/*
		 * A helper file imported lazily (in prepare() or launch()) ran code no plan hash binds:
		 * the task fails with its line (docs/DESIGN.md "Python implementations").
		 */
		late = pyimpl_helpers_late();
		if (late && !r.error) {
			r.error = late;
			r.complete = 0;
			r.parity_pass = 0;
			late = NULL;
		}
		free(late);
		snprintf(r.sandbox, sizeof(r.sandbox), "%s", sb.line);
	} else {
		measure_result_init(&r, &ctx, w->spec, w->task_hash);
		r.error = strdup(vs_last_error());
	}
	fclose(fs);
	fclose(fl);
	msg = result_msg(&r, code, samples, log);
	measure_result_release(&r);
	task_data_release(&t);
	if (!w->ctx->device)
		vs_device_release(&dev);
	free(samples);
	free(log);
	sandbox_leave(&sb);
	*code_out = code;
	return msg;
}

static void write_all(int fd, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t k = write(fd, s, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return;
		s += k;
		n -= (size_t)k;
	}
}

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Read what the worker has sent so far. Returns 1 at EOF (or on a read error), 0 otherwise. */
static int read_some(struct worker_proc *wp)
{
	for (;;) {
		ssize_t k;

		if (wp->len + 65536 + 1 > wp->cap) {
			size_t ncap = (wp->len + 65536) * 2;
			char *nb = realloc(wp->buf, ncap);

			if (!nb)
				return 1;
			wp->buf = nb;
			wp->cap = ncap;
			wp->buf[wp->len] = '\0'; /* a worker that dies before writing leaves an empty message */
		}
		k = read(wp->fd, wp->buf + wp->len, wp->cap - wp->len - 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return 0;
		if (k <= 0)
			return 1;
		wp->len += (size_t)k;
		wp->buf[wp->len] = '\0';
	}
}

/* Remove a reaped worker's working directory with whatever its implementation left there. */
static void remove_workdir(struct worker_proc *wp)
{
	if (wp->workdir[0])
		fs_remove_tree(wp->workdir);
	wp->workdir[0] = '\0';
}

int worker_start(struct worker_proc *wp, const struct worker_spec *w)
{
	int fds[2], code;
	pid_t pid, parent = getpid();

	memset(wp, 0, sizeof(*wp));
	wp->fd = -1;
	if (!w->in_process && (code = sandbox_make_workdir(wp->workdir, sizeof(wp->workdir))))
		return code;
	if (pipe(fds) != 0) {
		remove_workdir(wp);
		return vs_error(VS_EIO, "cannot create a pipe for the worker: %s", strerror(errno));
	}
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		remove_workdir(wp);
		return vs_error(VS_EIO, "cannot start a worker process: %s", strerror(errno));
	}
	if (pid == 0) {
		char *msg;

		close(fds[0]);
		/* Die with the parent (a SIGKILLed validate_skill leaves no worker holding the device). */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent)
			_exit(4);
		msg = work(w, wp->workdir, &code);
		if (msg)
			write_all(fds[1], msg, strlen(msg));
		close(fds[1]);
		fflush(stdout);
		_exit(msg ? 0 : 3);
	}
	close(fds[1]);
	fcntl(fds[0], F_SETFL, fcntl(fds[0], F_GETFL) | O_NONBLOCK);
	fcntl(fds[0], F_SETFD, FD_CLOEXEC);
	wp->pid = pid;
	wp->fd = fds[0];
	wp->started = mono();
	wp->deadline = w->timeout_s > 0 ? wp->started + w->timeout_s : 0;
	return 0;
}

int worker_pump(struct worker_proc *wp)
{
	if (wp->eof || wp->timed_out)
		return 1;
	if (read_some(wp)) {
		wp->eof = 1;
		return 1;
	}
	if (wp->deadline > 0 && mono() >= wp->deadline) {
		wp->timed_out = 1;
		kill(wp->pid, SIGKILL);
		return 1;
	}
	return 0;
}

void worker_kill(struct worker_proc *wp)
{
	int status;

	if (wp->pid > 0) {
		kill(wp->pid, SIGKILL);
		while (waitpid(wp->pid, &status, 0) < 0 && errno == EINTR)
			;
	}
	if (wp->fd >= 0)
		close(wp->fd);
	free(wp->buf);
	remove_workdir(wp);
	memset(wp, 0, sizeof(*wp));
	wp->fd = -1;
}

int worker_finish(struct measure_result *r, struct worker_proc *wp, const struct worker_spec *w, char **samples,
		  char **log)
{
	int status = 0, err;
	cJSON *j;

	*samples = NULL;
	*log = NULL;
	while (waitpid(wp->pid, &status, 0) < 0 && errno == EINTR)
		;
	wp->pid = 0;
	close(wp->fd);
	wp->fd = -1;
	remove_workdir(wp);
	if ((err = measure_result_init(r, w->ctx, w->spec, w->task_hash)))
		goto done;
	j = !wp->timed_out && wp->len > 0 ? cJSON_ParseWithLength(wp->buf, wp->len) : NULL;
	if (j) {
		result_unmsg(r, j, w->ctx->plan, samples, log);
		cJSON_Delete(j);
		goto done;
	}
	if (wp->timed_out)
		r->error = fs_printf("worker timed out after %.0f s and was killed (a hang, or a limit too low "
				     "for this task)",
				     w->timeout_s);
	else if (WIFSIGNALED(status))
		r->error = fs_printf("worker killed by signal %d (%s) while running the task", WTERMSIG(status),
				     strsignal(WTERMSIG(status)));
	else
		r->error = fs_printf("worker exited with status %d without a result",
				     WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	err = VS_EFAIL;
done:
	free(wp->buf);
	wp->buf = NULL;
	return err;
}

int worker_run_task(struct measure_result *r, const struct worker_spec *w, char **samples, char **log)
{
	struct worker_proc wp;
	int err, code;
	cJSON *j;

	*samples = NULL;
	*log = NULL;
	memset(r, 0, sizeof(*r));
	if (w->in_process) {
		char *msg = work(w, NULL, &code);

		j = msg ? cJSON_Parse(msg) : NULL;
		free(msg);
		if ((err = measure_result_init(r, w->ctx, w->spec, w->task_hash)))
			return err;
		VS_CHECK_ALLOC(j);
		result_unmsg(r, j, w->ctx->plan, samples, log);
		cJSON_Delete(j);
		return 0;
	}
	if ((err = worker_start(&wp, w))) {
		measure_result_init(r, w->ctx, w->spec, w->task_hash);
		return err;
	}
	while (!worker_pump(&wp)) {
		struct pollfd pfd = {wp.fd, POLLIN, 0};
		double left = wp.deadline > 0 ? wp.deadline - mono() : 1.0;

		poll(&pfd, 1, left > 1.0 ? 1000 : (int)(left * 1000) + 1);
	}
	return worker_finish(r, &wp, w, samples, log);
}

int worker_probe_device(struct vs_device_info *info, const char *backend, int gpu_ordinal)
{
	int fds[2], status = 0;
	pid_t pid;
	char buf[sizeof(*info) + 2048];
	size_t got = 0;

	if (pipe(fds) != 0)
		return vs_error(VS_EIO, "cannot create a pipe: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	pid = fork();
	if (pid < 0)
		return vs_error(VS_EIO, "cannot start a worker process: %s", strerror(errno));
	if (pid == 0) {
		struct vs_device d;
		int err;

		close(fds[0]);
		vs_error_set_quiet(1);
		err = open_device(&d, backend, gpu_ordinal);
		/* the run's one read sweep (physical limits); a failed sweep leaves it unknown */
		if (!err && d.ops->read_sweep && d.ops->read_sweep(&d, &d.info.read_gbps))
			d.info.read_gbps = 0;
		if (!err) {
			write_all(fds[1], "I", 1);
			write_all(fds[1], (const char *)&d.info, sizeof(d.info));
			vs_device_release(&d);
		} else {
			int32_t code = err;

			write_all(fds[1], "E", 1);
			write_all(fds[1], (const char *)&code, sizeof(code));
			write_all(fds[1], vs_last_error(), strlen(vs_last_error()) + 1);
		}
		close(fds[1]);
		_exit(err ? 1 : 0);
	}
	close(fds[1]);
	for (;;) {
		ssize_t k = read(fds[0], buf + got, sizeof(buf) - 1 - got);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	close(fds[0]);
	buf[got] = '\0';
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	if (got == 1 + sizeof(*info) && buf[0] == 'I') {
		memcpy(info, buf + 1, sizeof(*info));
		return 0;
	}
	if (got > 1 + sizeof(int32_t) && buf[0] == 'E') {
		int32_t code;

		memcpy(&code, buf + 1, sizeof(code));
		return vs_error(code, "%s", buf + 1 + sizeof(code));
	}
	return vs_error(VS_EDEVICE, "the device probe died (%s)",
			WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "no answer");
}
