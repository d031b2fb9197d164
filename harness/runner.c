#include "runner.h"
#include "card.h"
#include "evaldir.h"
#include "fsutil.h"
#include "op.h"
#include "layout.h"
#include "measure.h"
#include "plugin.h"
#include "progress.h"
#include "vs_error.h"
#include "worker.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void utc_stamp(char *out, size_t cap, const char *fmt)
{
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(out, cap, fmt, &tm);
}

static int task_matches(const struct task_spec *s, const char *hash, const char *filter)
{
	return !filter || strstr(s->name, filter) || !strncmp(hash, filter, strlen(filter));
}

static void print_table_header(FILE *log)
{
	fprintf(log, "\n%-34s %10s %10s  %-22s %8s %8s %7s\n", "task", "base ms", "cand ms", "speedup [95% CI]", "GB/s",
		"TFLOPS", "parity");
}

static void print_table_row(FILE *log, const struct measure_result *r)
{
	if (r->skipped) {
		fprintf(log, "%-34s %10s %10s  %-22s %8s %8s %7s  %s\n", r->name, "-", "-", "-", "-", "-", "skipped",
			r->skipped);
		return;
	}
	if (!r->complete) {
		fprintf(log, "%-34s %10s %10s  %-22s %8s %8s %7s%s%s\n", r->name, "-", "-", "-", "-", "-",
			r->parity_pass ? "pass" : "FAIL", r->error ? "  error: " : "", r->error ? r->error : "");
		return;
	}
	{
		char ci[64];
		double sec = r->cand.timing.median * 1e-3;

		if (r->parity_pass)
			snprintf(ci, sizeof(ci), "%.3f [%.3f, %.3f]", r->speedup.estimate, r->speedup.lo,
				 r->speedup.hi);
		else
			snprintf(ci, sizeof(ci), "- (parity failed)");
		fprintf(log, "%-34s %10.4f %10.4f  %-22s %8.1f %8.2f %7s\n", r->name, r->base.timing.median,
			r->cand.timing.median, ci, r->bytes / sec / 1e9, r->flops / sec / 1e12,
			r->parity_pass ? "pass" : "FAIL");
	}
}

/* Bit k set when the plan's reference k is called name (0: none is). */
static unsigned reference_mask(const struct plan *p, const char *name)
{
	unsigned m = 0;

	for (int k = 0; k < p->nrefs; k++)
		if (!strcmp(p->refs[k].impl.name, name))
			m |= 1u << k;
	return m;
}

/* The run log's lines for the references of a task: ratio t_ref / t_cand, or why there is none. */
static void print_ref_rows(FILE *log, const struct plan *p, const struct measure_result *r)
{
	for (int k = 0; k < r->nrefs; k++) {
		const struct measure_ref *rf = &r->refs[k];
		int st = evaldir_ref_status(rf);

		if (st == EVALDIR_REF_TIMED)
			fprintf(log, "  vs %-29s %10.4f %10.4f  %.3f [%.3f, %.3f] (t_ref / t_cand)\n",
				p->refs[k].impl.name, rf->m.timing.median, r->cand.timing.median, rf->ratio.estimate,
				rf->ratio.lo, rf->ratio.hi);
		else
			fprintf(log, "  vs %-29s %s%s%s\n", p->refs[k].impl.name, evaldir_ref_status_name(st),
				rf->skip                 ? ": " :
				st != EVALDIR_REF_FAILED ? "" :
				rf->m.capture == 0       ? " (capture gate)" :
							   " (parity)",
				rf->skip ? rf->skip : "");
	}
}

/*
 * One run.log line per Python module of a plan made before helper files were hashed (no
 * "helpers"): the run binds and records the helpers described when it runs, not the plan's.
 */
static void log_unplanned_helpers(FILE *log, const struct plan *p)
{
	const struct plan_impl *impls[2 + VS_PLAN_MAX_REFERENCES];
	const char *roles[2 + VS_PLAN_MAX_REFERENCES];
	int n = 0;

	impls[n] = &p->baseline;
	roles[n++] = "baseline";
	impls[n] = &p->candidate;
	roles[n++] = "candidate";
	for (int k = 0; k < p->nrefs; k++) {
		impls[n] = &p->refs[k].impl;
		roles[n++] = "reference";
	}
	for (int k = 0; k < n; k++)
		if (impls[k]->python_path && !impls[k]->python_helpers_planned)
			fprintf(log,
				"note: the plan records no helper files of the %s python module '%s' (made before "
				"helper files were hashed): the run binds those its import loads now, in result.json\n",
				roles[k], impls[k]->python_path);
	if (p->e2e.enabled && !p->e2e.step_helpers_planned)
		fprintf(log,
			"note: the plan records no helper files of the e2e step module '%s' (made before helper "
			"files were hashed): the run binds those its import loads now\n",
			p->e2e.step_path);
}

/* The one line a finished task gets on stdout (and in run.log.partial), allocated; NULL: no memory. */
static char *task_line_text(int i, int n, const struct measure_result *r)
{
	if (r->skipped)
		return fs_printf("[%d/%d] %s: SKIPPED: %s", i + 1, n, r->name, r->skipped);
	if (r->error)
		return fs_printf("[%d/%d] %s: FAILED: %s", i + 1, n, r->name, r->error);
	if (!r->complete)
		return fs_printf("[%d/%d] %s: parity %s, not timed", i + 1, n, r->name,
				 r->parity_pass ? "pass" : "FAIL (details in run.log)");
	if (!r->parity_pass) /* a speedup of wrong outputs means nothing: none is printed */
		return fs_printf("[%d/%d] %s: parity FAIL (details in run.log), base %.4f ms, cand %.4f ms, no speedup",
				 i + 1, n, r->name, r->base.timing.median, r->cand.timing.median);
	return fs_printf("[%d/%d] %s: speedup %.3f [%.3f, %.3f], base %.4f ms, cand %.4f ms, parity pass", i + 1, n,
			 r->name, r->speedup.estimate, r->speedup.lo, r->speedup.hi, r->base.timing.median,
			 r->cand.timing.median);
}

static void task_line(struct progress *pg, int i, int n, const struct measure_result *r)
{
	char *text = task_line_text(i, n, r);

	progress_line(pg, "%s", text ? text : r->name);
	free(text);
}

/* 1 if a and b name the same directory. */
static int same_dir(const char *a, const char *b)
{
	char *ra = realpath(a, NULL), *rb = realpath(b, NULL);
	int same = ra && rb && !strcmp(ra, rb);

	free(ra);
	free(rb);
	return same;
}

/* What one selected task gave back. */
struct task_out {
	int plan_index;
	struct measure_result r;
	char *samples, *log;
	char *dir; /* its task dir, while its worker runs */
	struct worker_spec w;
};

/* One worker slot: a GPU ordinal (or, on the CPU, one more parallel worker). */
struct slot {
	int ordinal;
	int task; /* index into the selection, -1 when free */
	struct worker_proc wp;
};

/*
 * Whether plan task i is skipped (an implementation's supports() said no at plan time): r gets
 * "<impl> does not support it: <reason>". Returns 1 when skipped, 0 when not, or VS_ENOMEM. A
 * parity-only run (--impl) skips a task only for the side it checks: the candidate's or a
 * reference's parity on a task the baseline refuses (FlashMLA's sparse decode at h_q 16) is checked.
 */
static int skip_task(struct measure_result *r, const struct measure_ctx *ctx, const struct plan *p, int i)
{
	const struct plan_impl *pi = &p->baseline;
	const char *why = ctx->check_base ? plan_skip_reason(p, pi, i) : NULL, *role = "baseline";
	int err;

	if (!why && ctx->check_cand)
		why = plan_skip_reason(p, pi = &p->candidate, i), role = "candidate";
	for (int k = 0; !why && !ctx->check_base && !ctx->check_cand && k < p->nrefs; k++) /* --impl REFERENCE */
		if (ctx->check_refs >> k & 1u)
			why = plan_reference_skip(p, k, i), pi = &p->refs[k].impl, role = "reference";
	if (!why)
		return 0;
	if ((err = measure_result_init(r, ctx, &p->tasks[i], p->task_hash[i])))
		return err;
	r->skipped = fs_printf("%s %s does not support it: %s", role, pi->name, why);
	return r->skipped ? 1 : vs_error(VS_ENOMEM, "out of memory");
}

/*
 * Append a finished task's lines (its stdout line, then its worker's run.log lines) to
 * <eval dir>/run.log.partial as soon as it finishes: run.log itself is written once, at the end,
 * and a run cut short (a device lease that ends, a kill) would otherwise keep no per-config detail
 * of the tasks it finished (2026-12-05: the V4 A/B's parity failure at 13:00, whose run.log was
 * never written). The run removes the file before it commits; best effort: an error here loses
 * only this copy.
 */
static void keep_partial_log(const char *eval_dir, const struct task_out *to, int n)
{
	char *path = fs_join(eval_dir, "run.log.partial"), *line = task_line_text(to->plan_index, n, &to->r);
	char *refs = strdup(""), *text;
	int fd;

	/* each reference's outcome on the task, which only result.json holds once the run ends (the
	 * V4 run cut short on 2026-12-05 18:43 kept no reference figure) */
	for (int k = 0; refs && k < to->r.nrefs; k++) {
		const struct measure_ref *rf = &to->r.refs[k];
		const char *name = rf->m.impl && rf->m.impl->name ? rf->m.impl->name : "?";
		char *more;

		if (rf->skip)
			more = fs_printf("%s    reference %s: skipped: %s\n", refs, name, rf->skip);
		else if (rf->has_ratio)
			more = fs_printf("%s    reference %s: %.4f ms, t_ref / t_cand %.3f [%.3f, %.3f]\n", refs, name,
					 rf->m.timing.median, rf->ratio.estimate, rf->ratio.lo, rf->ratio.hi);
		else
			more = fs_printf("%s    reference %s: not timed\n", refs, name);
		free(refs);
		refs = more;
	}
	text = path && line && refs ? fs_printf("%s\n%s%s", line, refs, to->log ? to->log : "") : NULL;
	fd = path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644) : -1;

	if (fd >= 0 && text) {
		size_t len = strlen(text), off = 0;

		while (off < len) {
			ssize_t k = write(fd, text + off, len - off);

			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0)
				break;
			off += (size_t)k;
		}
	}
	if (fd >= 0)
		close(fd);
	free(text);
	free(refs);
	free(line);
	free(path);
}

/* Materialize task i and copy its manifest into the eval dir; *dir is its task dir. */
static int prepare_task(char **dir, struct evaldir_writer *w, const struct runner_options *o, const struct plan *p,
			int i)
{
	char *mpath = NULL, *mtext = NULL;
	size_t mlen;
	int err;

	*dir = NULL;
	err = task_materialize(dir, o->tasks_root ? o->tasks_root : vs_layout_default.tasks, &p->tasks[i], o->threads);
	if (!err) {
		mpath = fs_join(*dir, "manifest.json");
		err = mpath ? fs_read_file(&mtext, &mlen, mpath, 16u << 20) : vs_oom();
	}
	if (!err)
		err = evaldir_writer_manifest(w, p->task_hash[i], mtext, mlen, NULL);
	free(mtext);
	free(mpath);
	return err;
}

/* The devices a run uses: one per --gpus ordinal, all of the same kind (their facts end up in info). */
static int probe_devices(struct vs_device_info *info, const struct runner_options *o, const struct plan *p,
			 const int *ordinals, int n)
{
	int err;

	if (o->device) {
		*info = o->device->info;
		return 0;
	}
	if (o->in_process || (getenv("VS_NO_FORK") && *getenv("VS_NO_FORK") == '1')) {
		/* no worker processes: the device is opened here, as the tasks will open it */
		struct vs_device probe;

		memset(&probe, 0, sizeof(probe));
		err = strcmp(p->candidate.backend, "cpu") ? vs_device_open_gpu(&probe, ordinals[0]) :
							    vs_device_open_cpu(&probe);
		if (err)
			return err;
		if (probe.ops->read_sweep && probe.ops->read_sweep(&probe, &probe.info.read_gbps))
			probe.info.read_gbps = 0;
		*info = probe.info;
		vs_device_release(&probe);
		return 0;
	}
	for (int k = 0; k < n; k++) {
		struct vs_device_info other;

		if ((err = worker_probe_device(k ? &other : info, p->candidate.backend, ordinals[k])))
			return err;
		if (k && (strcmp(other.name, info->name) || strcmp(other.arch, info->arch)))
			return vs_error(VS_EUNSUPPORTED,
					"--gpus: GPU %d is '%s' (%s) but GPU %d is '%s' (%s): one "
					"eval dir speaks for one kind of device; list GPUs of one kind",
					ordinals[k], other.name, other.arch, ordinals[0], info->name, info->arch);
	}
	return 0;
}

/*
 * A plan runs as evidence only when it is what its card plans today (plan_check_card()): its card
 * is loaded from the path the plan names. A plan that differs is refused, with the field, unless
 * the run is a debug run (--scratch, or a filter), which is written under .debug/ and never
 * recorded; then the difference is said once and kept in result.json (filters.plan_differs).
 */
static int check_against_card(char *diff, size_t cap, const struct plan *p, const struct runner_options *o)
{
	struct card c;
	int err, debug = o->scratch || o->task_filter || o->impl_filter || o->config_filter;

	memset(&c, 0, sizeof(c));
	if ((err = card_load(&c, p->card_path))) {
		if (err == VS_ENOMEM)
			return err;
		return vs_error(VS_EVERIFY,
				"%s: its card '%s' cannot be read (above): a plan runs only beside the card it was "
				"emitted from",
				o->plan_path, p->card_path);
	}
	err = plan_check_card(p, &c, 1, diff, cap);
	card_release(&c);
	if (err == VS_EVERIFY && debug) {
		vs_warn("%s: %s: this is a debug run (written under .debug/, never recorded)", o->plan_path, diff);
		return 0;
	}
	if (err == VS_EVERIFY)
		return vs_error(VS_EVERIFY,
				"%s: %s: the plan is not what its card plans; emit it again, or run it as a debug run "
				"with --scratch (written under .debug/, never recorded)",
				o->plan_path, diff);
	diff[0] = '\0';
	return err;
}

int runner_run(char **eval_dir_out, const struct runner_options *o)
{
	struct plan p;
	struct vs_device_info info;
	struct evaldir_writer w;
	struct evaldir_head h;
	struct measure_ctx ctx;
	struct progress pg;
	struct task_out *out = NULL;
	struct slot *slots = NULL;
	struct evaldir_task_summary *sum = NULL;
	const struct mla_decode_impl *base, *cand;
	char *plan_text = NULL, *eval_dir = NULL, plan_hex[65], started[32], finished[32], line[4096];
	char label[2][256]; /* the sides as cards name them (IMPL@CONFIG when forced) */
	const char *py_versions = NULL;
	size_t plan_len = 0;
	int err, nsel = 0, parity_only, partial, nslots, next = 0, running = 0, in_process;
	int *sel = NULL;
	const int *ordinals;
	const char *deny[6];
	char *plan_dir = NULL, plan_differs[1024] = "";
	int ndeny = 0, lock_fd = -1;

	memset(&p, 0, sizeof(p));
	memset(&w, 0, sizeof(w));
	memset(&info, 0, sizeof(info));
	memset(&ctx, 0, sizeof(ctx));
	progress_init(&pg, stdout, 0);
	/* One read: the bytes parsed are the bytes bound into the eval dir (plan.json, its sha256). */
	if ((err = plan_read_text(&p, o->plan_path, &plan_text, &plan_len)))
		return err;
	if ((err = plan_check_current(&p, o->plan_path)))
		goto done;
	if ((err = check_against_card(plan_differs, sizeof(plan_differs), &p, o)))
		goto done;
	fs_sha256_hex(plan_hex, plan_text, plan_len);
	base = mla_decode_impl_find(p.baseline.name);
	cand = mla_decode_impl_find(p.candidate.name);
	if (o->impl_filter && strcmp(o->impl_filter, p.baseline.name) && strcmp(o->impl_filter, p.candidate.name) &&
	    !reference_mask(&p, o->impl_filter)) {
		err = vs_error(VS_EUSAGE,
			       "--impl '%s' is neither the plan's baseline '%s' nor its candidate '%s' nor "
			       "one of its references",
			       o->impl_filter, p.baseline.name, p.candidate.name);
		goto done;
	}
	if (o->config_filter) {
		int found = 0;

		for (int i = 0; i < p.candidate.nconfigs; i++)
			found |= !strcmp(p.candidate.configs[i].name, o->config_filter);
		for (int i = 0; i < p.baseline.nconfigs && o->impl_filter && !strcmp(o->impl_filter, p.baseline.name);
		     i++)
			found |= !strcmp(p.baseline.configs[i].name, o->config_filter);
		for (int k = 0; k < p.nrefs && o->impl_filter; k++)
			for (int i = 0; i < p.refs[k].impl.nconfigs && !strcmp(o->impl_filter, p.refs[k].impl.name);
			     i++)
				found |= !strcmp(p.refs[k].impl.configs[i].name, o->config_filter);
		if (!found) {
			err = vs_error(VS_EUSAGE, "--config '%s' is not a config of %s in this plan", o->config_filter,
				       p.candidate.name);
			goto done;
		}
	}
	if (o->has_part && (o->part_index < 0 || o->part_index >= p.ntasks)) {
		err = vs_error(VS_EUSAGE, "--part %d: the plan '%s' has tasks 0..%d", o->part_index, o->plan_path,
			       p.ntasks - 1);
		goto done;
	}
	if (o->has_part && (!o->run_id || !*o->run_id || strchr(o->run_id, '/'))) {
		err = vs_error(VS_EUSAGE, "--part needs --run-id ID (the run the part belongs to, without '/')");
		goto done;
	}
	/* The tasks to run, in plan order. */
	sel = calloc((size_t)p.ntasks, sizeof(int));
	out = calloc((size_t)p.ntasks, sizeof(*out));
	sum = calloc((size_t)p.ntasks + 1, sizeof(*sum));
	if (!sel || !out || !sum) {
		err = vs_oom();
		goto done;
	}
	for (int i = 0; i < p.ntasks; i++)
		if (o->has_part ? i == o->part_index : task_matches(&p.tasks[i], p.task_hash[i], o->task_filter))
			sel[nsel++] = i;
	if (nsel == 0) {
		err = vs_error(VS_ENOTFOUND, "--task '%s' matches no task of '%s'", o->task_filter, o->plan_path);
		goto done;
	}
	in_process = o->in_process || (getenv("VS_NO_FORK") && *getenv("VS_NO_FORK") == '1');
	ordinals = o->ngpus > 0 ? o->gpus : &o->gpu_ordinal;
	nslots = o->ngpus > 0 ? o->ngpus : 1;
	if ((err = probe_devices(&info, o, &p, ordinals, nslots)))
		goto done;
	if (in_process)
		nslots = 1;
	if (strcmp(info.arch, p.gen)) {
		err = vs_error(VS_EUNSUPPORTED,
			       "plan '%s' is for generation '%s' but this device (%s) is '%s': "
			       "emit a plan with --gen %s (the card's match.gens must list it)",
			       o->plan_path, p.gen, info.name, info.arch, info.arch);
		goto done;
	}
	parity_only = o->impl_filter != NULL;
	partial = parity_only || o->config_filter || o->task_filter || o->has_part || o->scratch;
	/* One whole run of a card at a time (parts of a cluster run write their own dirs side by side). */
	if (!o->has_part && (err = evaldir_lock(&lock_fd, o->results_root, p.card_id)))
		goto done;
	err = o->has_part ? evaldir_create_part(&eval_dir, o->results_root, p.card_id, o->run_id, o->part_index) :
			    evaldir_create_run(&eval_dir, o->results_root, p.card_id, o->run_id, info.arch, partial);
	if (err || (err = evaldir_writer_init(&w, eval_dir)))
		goto done;
	slots = calloc((size_t)nslots, sizeof(*slots));
	if (!slots) {
		err = vs_oom();
		goto done;
	}
	utc_stamp(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ");
	snprintf(line, sizeof(line), "run %s on %s (%s, %s), plan %s: %s vs %s, %d tasks%s", eval_dir, info.name,
		 info.arch, info.driver, o->plan_path, plan_impl_label(&p.baseline, label[0], sizeof(label[0])),
		 plan_impl_label(&p.candidate, label[1], sizeof(label[1])), p.ntasks,
		 partial ? " (partial: filtered)" : "");
	fprintf(w.log, "%s\n", line);
	log_unplanned_helpers(w.log, &p);
	progress_init(&pg, stdout, nsel);
	progress_line(&pg, "%s", line);
	if (nslots > 1) {
		char list[256] = "";

		for (int k = 0; k < nslots; k++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%d", k ? "," : "", ordinals[k]);
		progress_line(&pg, "%d workers in parallel (%s %s)", nslots,
			      strcmp(p.candidate.backend, "cpu") ? "GPUs" : "CPU workers", list);
	}

	/* What the implementations may not read (sandbox.h): task dirs, eval dirs, cards, plans. */
	plan_dir = strdup(o->plan_path);
	if (plan_dir && strrchr(plan_dir, '/'))
		*strrchr(plan_dir, '/') = '\0';
	else {
		free(plan_dir);
		plan_dir = NULL;
	}
	deny[ndeny++] = o->tasks_root ? o->tasks_root : "tasks";
	deny[ndeny++] = o->results_root ? o->results_root : "results";
	deny[ndeny++] = "skills";
	deny[ndeny++] = "plans";
	if (plan_dir && !same_dir(plan_dir, "."))
		deny[ndeny++] = plan_dir; /* a plan kept in the working directory closes nothing more */
	ctx.device = o->device;
	ctx.plan = &p;
	ctx.plan_path = o->plan_path;
	ctx.base = base;
	ctx.cand = cand;
	ctx.config_filter = o->config_filter;
	ctx.check_base = !o->impl_filter || !strcmp(o->impl_filter, base->name);
	ctx.check_cand = !o->impl_filter || !strcmp(o->impl_filter, cand->name);
	ctx.check_refs = o->impl_filter ? reference_mask(&p, o->impl_filter) : ~0u;
	ctx.timing = !parity_only;
	for (int k = 0; k < nslots; k++) {
		slots[k].ordinal = ordinals[k];
		slots[k].task = -1;
		slots[k].wp.fd = -1;
	}

	/* Deal the tasks to the slots as they free up; each task's outcome lands at its plan position. */
	while (next < nsel || running > 0) {
		for (int s = 0; s < nslots && next < nsel; s++) {
			struct task_out *to;
			int i, terr;

			if (slots[s].task >= 0)
				continue;
			to = &out[next];
			i = to->plan_index = sel[next];
			if ((terr = skip_task(&to->r, &ctx, &p, i)) != 0) {
				if (terr < 0) {
					err = terr;
					goto done;
				}
				progress_step(&pg);
				task_line(&pg, i, p.ntasks, &to->r);
				next++;
				s--; /* the slot is still free */
				continue;
			}
			progress_status(&pg, "materializing %s", p.tasks[i].name);
			terr = prepare_task(&to->dir, &w, o, &p, i);
			if (terr == VS_EVERIFY) {
				/* a task dir that does not verify: no run can be made of this plan here */
				err = terr;
				goto done;
			}
			if (terr) {
				measure_result_init(&to->r, &ctx, &p.tasks[i], p.task_hash[i]);
				to->r.error = strdup(vs_last_error());
				progress_step(&pg);
				task_line(&pg, i, p.ntasks, &to->r);
				next++;
				s--; /* the slot is still free */
				continue;
			}
			to->w.ctx = &ctx;
			to->w.backend = p.candidate.backend;
			to->w.gpu_ordinal = slots[s].ordinal;
			to->w.task_dir = to->dir;
			to->w.spec = &p.tasks[i];
			to->w.task_hash = p.task_hash[i];
			to->w.timeout_s = o->task_timeout_s > 0 ? o->task_timeout_s : 900;
			to->w.in_process = in_process;
			to->w.sandbox_deny = deny;
			to->w.nsandbox_deny = ndeny;
			progress_status(&pg, "running %s", p.tasks[i].name); /* as redrawn while workers run */
			if (in_process) {
				terr = worker_run_task(&to->r, &to->w, &to->samples, &to->log);
				if (terr && terr != VS_EFAIL) {
					err = terr;
					goto done;
				}
				progress_step(&pg);
				task_line(&pg, i, p.ntasks, &to->r);
				keep_partial_log(eval_dir, to, p.ntasks);
				if (pg.tty && to->log && *to->log)
					progress_line(&pg, "%.*s", (int)strlen(to->log) - 1, to->log);
				next++;
				s--;
				continue;
			}
			if ((err = worker_start(&slots[s].wp, &to->w)))
				goto done;
			slots[s].task = next++;
			running++;
		}
		if (running == 0)
			continue;
		{
			struct pollfd pfd[64];
			int np = 0;

			for (int s = 0; s < nslots && np < 64; s++)
				if (slots[s].task >= 0)
					pfd[np++] = (struct pollfd){slots[s].wp.fd, POLLIN, 0};
			if (poll(pfd, (nfds_t)np, 500) < 0 && errno != EINTR) {
				err = vs_error(VS_EIO, "poll on the workers failed: %s", strerror(errno));
				goto done;
			}
		}
		for (int s = 0; s < nslots; s++) {
			struct task_out *to;
			int terr;

			if (slots[s].task < 0 || !worker_pump(&slots[s].wp))
				continue;
			to = &out[slots[s].task];
			terr = worker_finish(&to->r, &slots[s].wp, &to->w, &to->samples, &to->log);
			slots[s].task = -1;
			running--;
			if (terr && terr != VS_EFAIL) {
				err = terr;
				goto done;
			}
			progress_step(&pg);
			task_line(&pg, to->plan_index, p.ntasks, &to->r);
			keep_partial_log(eval_dir, to, p.ntasks);
			if (pg.tty && to->log && *to->log)
				progress_line(&pg, "%.*s", (int)strlen(to->log) - 1, to->log);
		}
		if (pg.tty) {
			char names[160] = "";

			for (int s = 0; s < nslots; s++)
				if (slots[s].task >= 0)
					snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
						 *names ? ", " : "", p.tasks[out[slots[s].task].plan_index].name);
			progress_status(&pg, "running %s", names);
		}
	}
	progress_end(&pg);

	/* The log and samples in plan order, whatever order the workers finished in. */
	for (int k = 0; k < nsel; k++) {
		struct task_out *to = &out[k];
		int i = to->plan_index;

		fprintf(w.log, "[%d/%d] %s (%.16s)\n", i + 1, p.ntasks, p.tasks[i].name, p.task_hash[i]);
		if (to->log)
			fputs(to->log, w.log);
		if (to->samples)
			fputs(to->samples, w.samples);
		if (to->r.skipped)
			fprintf(w.log, "    task %s skipped: %s\n", p.tasks[i].name, to->r.skipped);
		if (to->r.error)
			fprintf(w.log, "    task %s failed: %s\n", p.tasks[i].name, to->r.error);
		if (to->r.py_versions && !py_versions)
			py_versions = to->r.py_versions;
		sum[k].dtype = vs_op_of(&p.tasks[i])->dtype(&p.tasks[i]);
		sum[k].name = p.tasks[i].name;
		sum[k].weight = p.workload ? p.workload->weight[i] : 0;
		sum[k].concurrency = p.workload ? p.workload->concurrency[i] : 0;
		sum[k].skipped = to->r.skipped;
		sum[k].complete = to->r.complete;
		sum[k].parity_pass = to->r.parity_pass;
		sum[k].base_capture = to->r.base.capture;
		sum[k].cand_capture = to->r.cand.capture;
		sum[k].t_base = to->r.t_base;
		sum[k].t_cand = to->r.t_cand;
		sum[k].npairs = to->r.npairs;
		sum[k].e2e = &to->r.e2e;
		for (int j = 0; j < to->r.nrefs; j++) {
			sum[k].ref_status[j] = evaldir_ref_status(&to->r.refs[j]);
			sum[k].t_ref[j] = sum[k].ref_status[j] == EVALDIR_REF_TIMED ? to->r.refs[j].t : NULL;
		}
	}
	print_table_header(w.log);
	for (int k = 0; k < nsel; k++) {
		print_table_row(w.log, &out[k].r);
		print_ref_rows(w.log, &p, &out[k].r);
	}

	/* result.json */
	utc_stamp(finished, sizeof(finished), "%Y-%m-%dT%H:%M:%SZ");
	h = (struct evaldir_head){
		.plan = &p,
		.plan_path = o->plan_path,
		.plan_sha256 = plan_hex,
		.device = &info,
		.started = started,
		.finished = finished,
		.partial = partial,
		.task_filter = o->task_filter,
		.impl_filter = o->impl_filter,
		.config_filter = o->config_filter,
		.scratch = o->scratch,
		.plan_differs = plan_differs[0] ? plan_differs : NULL,
		.has_part = o->has_part,
		.run_id = o->run_id,
		.part_index = o->part_index,
		.py_versions = py_versions,
	};
	if ((err = evaldir_writer_head(&w, &h)))
		goto done;
	for (int k = 0; k < nsel; k++)
		if ((err = evaldir_writer_task(&w, &out[k].r, &p)))
			goto done;
	if ((err = evaldir_writer_verdict(&w, &p, sum, nsel, partial, line, sizeof(line))))
		goto done;
	fprintf(w.log, "\n%s\n", line);
	progress_line(&pg, "%s", line);
	for (int k = 0; evaldir_reference_line(line, sizeof(line), w.root, k) == 0; k++) {
		fprintf(w.log, "%s\n", line);
		progress_line(&pg, "%s", line);
	}
	fprintf(w.log, "eval dir: %s\n", eval_dir);
	progress_line(&pg, "eval dir: %s", eval_dir);
	{
		char *partial_path = fs_join(eval_dir, "run.log.partial");

		if (partial_path)
			unlink(partial_path); /* run.log holds it all now */
		free(partial_path);
	}
	if ((err = evaldir_writer_commit(&w, plan_text, plan_len)))
		goto done;
	*eval_dir_out = eval_dir;
	eval_dir = NULL;
	err = 0;

done:
	progress_end(&pg);
	for (int s = 0; slots && s < nslots; s++)
		if (slots[s].task >= 0)
			worker_kill(&slots[s].wp);
	evaldir_writer_release(&w);
	free(eval_dir);
	for (int k = 0; out && k < p.ntasks; k++) {
		measure_result_release(&out[k].r);
		free(out[k].samples);
		free(out[k].log);
		free(out[k].dir);
	}
	free(out);
	free(slots);
	free(sum);
	free(sel);
	free(plan_text);
	free(plan_dir);
	evaldir_unlock(lock_fd);
	plan_release(&p);
	return err;
}
