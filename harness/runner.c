#include "runner.h"
#include "fsutil.h"
#include "gpu_clocks.h"
#include "mla_numeric.h"
#include "parity.h"
#include "plugin.h"
#include "progress.h"
#include "vs_build_info.h"
#include "vs_error.h"
#include "worker.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- small helpers ---------------------------------------------------------------------- */

static void say(FILE *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * One line for the run log. Inside a task this is the worker's log, which the parent copies into
 * run.log in plan order (and echoes on a terminal); what reaches stdout is the parent's business.
 */
static void say(FILE *log, const char *fmt, ...)
{
	va_list ap;

	if (!log)
		return;
	va_start(ap, fmt);
	vfprintf(log, fmt, ap);
	va_end(ap);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Device buffers of one task: every input set, two output pairs at distinct addresses, workspace. */
struct bufs {
	int nsets;
	void *q[VS_TASK_MAX_SETS], *kv[VS_TASK_MAX_SETS], *bt[VS_TASK_MAX_SETS], *sl[VS_TASK_MAX_SETS];
	void *out[2];
	void *lse[2];
	void *ws;
	size_t ws_bytes;
	size_t out_bytes, lse_bytes;
	/* host scratch */
	uint16_t *h_out[2];
	float *h_lse[2];
	unsigned char *h_in;
	size_t h_in_bytes;
};

static void bufs_release(struct vs_device *d, struct bufs *b)
{
	for (int s = 0; s < VS_TASK_MAX_SETS; s++) {
		d->ops->free(d, b->q[s]);
		d->ops->free(d, b->kv[s]);
		d->ops->free(d, b->bt[s]);
		d->ops->free(d, b->sl[s]);
	}
	for (int i = 0; i < 2; i++) {
		d->ops->free(d, b->out[i]);
		d->ops->free(d, b->lse[i]);
		free(b->h_out[i]);
		free(b->h_lse[i]);
	}
	d->ops->free(d, b->ws);
	free(b->h_in);
	memset(b, 0, sizeof(*b));
}

static void make_args(struct mla_decode_args *a, const struct vs_device *d, const struct task_data *t,
		      const struct bufs *b, int set, int which)
{
	const struct task_spec *s = &t->spec;

	memset(a, 0, sizeof(*a));
	a->q = b->q[set];
	/*
	 * A task with page_offset places its stored pages at page_offset.. of a larger virtual cache
	 * (task.h): block_table entries count from the virtual base, which lies page_offset pages
	 * below the buffer and is never dereferenced below it. Byte offsets past 2^32 test 64-bit
	 * index math without allocating the pages in between.
	 */
	a->kv_cache = (const void *)((uintptr_t)b->kv[set] - (uintptr_t)s->page_offset * task_page_bytes(s));
	a->block_table = b->bt[set];
	a->seqlens = b->sl[set];
	a->out = b->out[which];
	a->lse = b->lse[which];
	a->workspace = b->ws;
	a->workspace_bytes = b->ws_bytes;
	a->batch = s->batch;
	a->s_q = s->s_q;
	a->h_q = s->h_q;
	a->num_pages = (int32_t)(s->num_pages + s->page_offset);
	a->page_size = s->page_size;
	a->max_pages = s->max_pages;
	a->kv_dtype = s->kv_dtype;
	a->softmax_scale = s->softmax_scale;
	a->kv_scale = t->sets[set].kv_scale;
	a->num_cus = d->info.compute_units;
	a->stream = d->stream;
}

static int upload_set(struct vs_device *d, const struct task_data *t, struct bufs *b, int dst, int src)
{
	const struct task_set *ts = &t->sets[src];
	int err;

	if ((err = d->ops->upload(d, b->q[dst], ts->q, ts->q_bytes)) ||
	    (err = d->ops->upload(d, b->kv[dst], ts->kv_cache, ts->kv_bytes)) ||
	    (err = d->ops->upload(d, b->bt[dst], ts->block_table, ts->block_table_bytes)) ||
	    (err = d->ops->upload(d, b->sl[dst], ts->seqlens, ts->seqlens_bytes)))
		return err;
	return 0;
}

static size_t max_workspace(const struct runner_task_ctx *ctx, const struct vs_device *d,
			    const struct task_data *t, const struct bufs *b)
{
	struct mla_decode_args a;
	size_t best = 0;

	make_args(&a, d, t, b, 0, 0);
	for (int i = 0; i < ctx->plan->baseline.nconfigs; i++) {
		size_t w = ctx->base->workspace_size(&a, &ctx->plan->baseline.configs[i]);

		best = w > best ? w : best;
	}
	for (int i = 0; i < ctx->plan->candidate.nconfigs; i++) {
		size_t w = ctx->cand->workspace_size(&a, &ctx->plan->candidate.configs[i]);

		best = w > best ? w : best;
	}
	return best;
}

static int bufs_alloc(struct vs_device *d, const struct runner_task_ctx *ctx, const struct task_data *t,
		      struct bufs *b)
{
	const struct task_spec *s = &t->spec;
	int err = 0;

	memset(b, 0, sizeof(*b));
	b->nsets = t->nsets;
	b->out_bytes = t->sets[0].out_elems * sizeof(uint16_t);
	b->lse_bytes = t->sets[0].lse_elems * sizeof(float);
	for (int i = 0; i < t->nsets && !err; i++) {
		const struct task_set *ts = &t->sets[i];

		if ((err = d->ops->alloc(d, &b->q[i], ts->q_bytes)) ||
		    (err = d->ops->alloc(d, &b->kv[i], ts->kv_bytes)) ||
		    (err = d->ops->alloc(d, &b->bt[i], ts->block_table_bytes)) ||
		    (err = d->ops->alloc(d, &b->sl[i], ts->seqlens_bytes)))
			break;
		err = upload_set(d, t, b, i, i);
	}
	for (int i = 0; i < 2 && !err; i++) {
		if ((err = d->ops->alloc(d, &b->out[i], b->out_bytes)) ||
		    (err = d->ops->alloc(d, &b->lse[i], b->lse_bytes)))
			break;
		b->h_out[i] = malloc(b->out_bytes ? b->out_bytes : 1);
		b->h_lse[i] = malloc(b->lse_bytes ? b->lse_bytes : 1);
		if (!b->h_out[i] || !b->h_lse[i])
			err = vs_error(VS_ENOMEM, "out of memory for output scratch");
	}
	if (!err) {
		b->ws_bytes = max_workspace(ctx, d, t, b);
		if (b->ws_bytes)
			err = d->ops->alloc(d, &b->ws, b->ws_bytes);
	}
	if (!err) {
		/* Largest input buffer (for the no-mutation check). */
		size_t m = t->sets[0].kv_bytes;

		m = t->sets[0].q_bytes > m ? t->sets[0].q_bytes : m;
		b->h_in = malloc(m ? m : 1);
		b->h_in_bytes = m;
		if (!b->h_in)
			err = vs_error(VS_ENOMEM, "out of memory for the input check (%zu bytes)", m);
	}
	(void)s;
	return err;
}

/* Poison out, lse and workspace (0xFF bytes: NaN in bf16 and fp32). */
static int poison(struct vs_device *d, struct bufs *b, int which)
{
	int err;

	if ((err = d->ops->fill(d, b->out[which], 0xff, b->out_bytes)) ||
	    (err = d->ops->fill(d, b->lse[which], 0xff, b->lse_bytes)))
		return err;
	if (b->ws_bytes)
		return d->ops->fill(d, b->ws, 0xff, b->ws_bytes);
	return 0;
}

/* Map a launch status to a harness error: config-level failures return 1 with detail. */
static int launch_status(int rc, const char *impl, const char *cfg, char **detail)
{
	switch (rc) {
	case MLA_OK:
		return 0;
	case MLA_EINVAL:
		*detail = fs_printf("launch of %s %s refused the arguments (MLA_EINVAL)", impl, cfg);
		return 1;
	case MLA_EUNSUPPORTED:
		*detail = fs_printf("launch of %s %s: config does not support these arguments", impl, cfg);
		return 1;
	case MLA_ENODEVICE:
		return vs_error(VS_EUNSUPPORTED, "%s is not built into this binary (no GPU toolchain at build "
				"time)", impl);
	default:
		return vs_error(VS_EDEVICE, "launch of %s %s failed on the device (status %d)", impl, cfg, rc);
	}
}

static const char *const out_dims_names[] = {"b", "s", "h", "d"};
static const char *const lse_dims_names[] = {"b", "h", "s"};

/*
 * Download output pair `which` and compare with set `set`'s reference. Returns 1 pass, 0 fail
 * (with *detail), or a negative error.
 */
static int check_output(struct vs_device *d, const struct task_data *t, struct bufs *b, int set,
			int which, char **detail)
{
	const struct task_spec *s = &t->spec;
	const struct task_set *ts = &t->sets[set];
	struct parity_report ro, rl;
	int dims_out[4] = {s->batch, s->s_q, s->h_q, MLA_D_V};
	int dims_lse[3] = {s->batch, s->h_q, s->s_q};
	char line_o[512] = "", line_l[512] = "";
	int err;

	if ((err = d->ops->synchronize(d)) ||
	    (err = d->ops->download(d, b->h_out[which], b->out[which], b->out_bytes)) ||
	    (err = d->ops->download(d, b->h_lse[which], b->lse[which], b->lse_bytes)))
		return err;
	parity_compare_bf16(&ro, b->h_out[which], ts->ref_out, ts->out_elems, &s->tol_out, dims_out, 4);
	parity_compare_f32(&rl, b->h_lse[which], ts->ref_lse, ts->lse_elems, &s->tol_lse, dims_lse, 3);
	if (ro.pass && rl.pass)
		return 1;
	if (!ro.pass)
		parity_describe(line_o, sizeof(line_o), "out", &ro, out_dims_names, 4);
	if (!rl.pass)
		parity_describe(line_l, sizeof(line_l), "lse", &rl, lse_dims_names, 3);
	*detail = fs_printf("input set %d: %s%s%s", set, line_o, *line_o && *line_l ? "; " : "", line_l);
	return 0;
}

/* Inputs larger than this are checked once per config instead of after every launch. */
#define CHECK_EVERY_LAUNCH_BYTES ((size_t)256 << 20)

/*
 * 1 if the inputs of set `set` (all sets when set < 0) still hold what was uploaded, 0 (with
 * detail) if not; the small inputs always, kv_cache when large_too or when it is small.
 */
static int inputs_unchanged(struct vs_device *d, const struct task_data *t, struct bufs *b, int set_only,
			    int large_too, char **detail)
{
	for (int set = 0; set < t->nsets; set++) {
		const struct task_set *ts = &t->sets[set];
		const void *dev[4] = {b->q[set], b->kv[set], b->bt[set], b->sl[set]};
		const void *host[4] = {ts->q, ts->kv_cache, ts->block_table, ts->seqlens};
		size_t bytes[4] = {ts->q_bytes, ts->kv_bytes, ts->block_table_bytes, ts->seqlens_bytes};
		static const char *const names[4] = {"q", "kv_cache", "block_table", "seqlens"};

		if (set_only >= 0 && set != set_only)
			continue;
		for (int i = 0; i < 4; i++) {
			int err;

			if (bytes[i] > CHECK_EVERY_LAUNCH_BYTES && !large_too)
				continue;
			err = d->ops->download(d, b->h_in, dev[i], bytes[i]);
			if (err)
				return err;
			if (memcmp(b->h_in, host[i], bytes[i])) {
				*detail = fs_printf("input '%s' of set %d was modified by the launch", names[i], set);
				/* Restore so that the next config starts from the real inputs. */
				err = upload_set(d, t, b, set, set);
				return err ? err : 0;
			}
		}
	}
	return 1;
}

static char *repro(const struct runner_task_ctx *ctx, const struct task_data *t, const char *impl,
		   const char *cfg)
{
	return fs_printf("validate_skill --run %s --task %.16s --impl %s --config %s",
			 ctx->plan_path ? ctx->plan_path : "PLAN", t->hash, impl, cfg);
}

/*
 * Parity of one config (DESIGN.md "Parity"): every input set into poisoned outputs; set 0 again
 * into the second output pair (another address) and bit-identical; inputs unchanged.
 * Returns 1 pass, 0 fail (*detail set), negative on a device error.
 */
static int parity_config(const struct runner_task_ctx *ctx, const struct task_data *t, struct bufs *b,
			 const struct mla_decode_impl *impl, const struct mla_decode_config *cfg, char **detail)
{
	struct vs_device *d = ctx->device;
	struct mla_decode_args a;
	char *why = NULL, *cmd;
	int ok = 1, err;

	for (int set = 0; set < t->nsets && ok == 1; set++) {
		if ((err = poison(d, b, 0)))
			return err;
		make_args(&a, d, t, b, set, 0);
		err = launch_status(impl->launch(&a, cfg), impl->name, cfg->name, &why);
		if (err < 0)
			return err;
		if (err > 0) {
			ok = 0;
			break;
		}
		ok = inputs_unchanged(d, t, b, set, 0, &why);
		if (ok == 1)
			ok = check_output(d, t, b, set, 0, &why);
		if (ok < 0)
			return ok;
		if (ok == 1 && set == 0) {
			if ((err = poison(d, b, 1)))
				return err;
			make_args(&a, d, t, b, 0, 1);
			err = launch_status(impl->launch(&a, cfg), impl->name, cfg->name, &why);
			if (err < 0)
				return err;
			if (err > 0) {
				ok = 0;
				break;
			}
			if ((err = d->ops->synchronize(d)) ||
			    (err = d->ops->download(d, b->h_out[1], b->out[1], b->out_bytes)) ||
			    (err = d->ops->download(d, b->h_lse[1], b->lse[1], b->lse_bytes)))
				return err;
			if (memcmp(b->h_out[0], b->h_out[1], b->out_bytes) ||
			    memcmp(b->h_lse[0], b->h_lse[1], b->lse_bytes)) {
				why = fs_printf("a second launch into another poisoned buffer gave different bits "
						"(non-deterministic, or output depends on the buffer's address or "
						"previous contents)");
				ok = 0;
			}
		}
	}
	if (ok == 1) {
		ok = inputs_unchanged(d, t, b, -1, 1, &why);
		if (ok < 0)
			return ok;
	}
	if (ok == 1)
		return 1;
	cmd = repro(ctx, t, impl->name, cfg->name);
	*detail = fs_printf("%s; reproduce: %s", why ? why : "failed", cmd ? cmd : "");
	free(cmd);
	free(why);
	return 0;
}

/* One timed launch: poison, flush the LLC, time the launch alone. */
static int timed_launch(struct vs_device *d, struct bufs *b, const struct mla_decode_impl *impl,
			const struct mla_decode_config *cfg, const struct mla_decode_args *a, double *ms)
{
	char *why = NULL;
	int err, rc;

	if ((err = poison(d, b, 0)) || (err = d->ops->flush_llc(d)) || (err = d->ops->timer_begin(d)))
		return err;
	rc = impl->launch(a, cfg);
	if (rc != MLA_OK) {
		d->ops->synchronize(d);
		err = launch_status(rc, impl->name, cfg->name, &why);
		if (err > 0) {
			err = vs_error(VS_EFAIL, "%s", why);
			free(why);
		}
		return err;
	}
	return d->ops->timer_end(d, ms);
}

static double median_of(double *x, int n)
{
	return stats_percentile(x, n, 50.0);
}

/* The capture-safety gate for one implementation's chosen config. */
static int capture_gate(const struct runner_task_ctx *ctx, const struct task_data *t, struct bufs *b,
			struct runner_impl_result *ir)
{
	struct vs_device *d = ctx->device;
	const struct mla_decode_config *cfg = &ir->configs[ir->chosen];
	struct mla_decode_args a;
	void *graph = NULL;
	char *why = NULL;
	int err, ok, rc;

	if (!d->ops->graph_begin || t->nsets < 2) {
		ir->capture = -1;
		return 0;
	}
	make_args(&a, d, t, b, 0, 0);
	if ((err = d->ops->synchronize(d)) || (err = d->ops->graph_begin(d)))
		return err;
	rc = ir->impl->launch(&a, cfg);
	err = d->ops->graph_end(d, &graph);
	if (rc != MLA_OK || err) {
		ir->capture = 0;
		ir->capture_detail = fs_printf("the launch could not be captured in a graph (launch status %d%s%s)",
					       rc, err ? ", " : "", err ? vs_last_error() : "");
		if (graph)
			d->ops->graph_free(d, graph);
		return rc == MLA_EDEVICE ? VS_EDEVICE : 0;
	}
	/* Replay as captured. */
	if ((err = poison(d, b, 0)) || (err = d->ops->graph_launch(d, graph)))
		goto done;
	ok = check_output(d, t, b, 0, 0, &why);
	if (ok < 0) {
		err = ok;
		goto done;
	}
	if (ok) {
		/* Change every input in place (set 1 into set 0's buffers: new seqlens and block_table). */
		if ((err = upload_set(d, t, b, 0, 1)) || (err = poison(d, b, 0)) ||
		    (err = d->ops->graph_launch(d, graph)))
			goto done;
		ok = check_output(d, t, b, 1, 0, &why);
		if (ok < 0) {
			err = ok;
			goto done;
		}
		if ((err = upload_set(d, t, b, 0, 0)))
			goto done;
	}
	ir->capture = ok;
	if (!ok)
		ir->capture_detail = fs_printf("graph replay after changing seqlens/block_table in place: %s",
					       why ? why : "wrong output");
done:
	free(why);
	d->ops->graph_free(d, graph);
	return err;
}

static int impl_result_init(struct runner_impl_result *ir, const struct mla_decode_impl *impl,
			    const struct plan_impl *pi)
{
	memset(ir, 0, sizeof(*ir));
	ir->impl = impl;
	ir->nconfigs = pi->nconfigs;
	ir->configs = pi->configs;
	ir->chosen = -1;
	ir->capture = -1;
	ir->config_pass = calloc((size_t)pi->nconfigs, sizeof(int));
	ir->config_detail = calloc((size_t)pi->nconfigs, sizeof(char *));
	ir->tune_ms = calloc((size_t)pi->nconfigs, sizeof(double));
	if (!ir->config_pass || !ir->config_detail || !ir->tune_ms)
		return vs_error(VS_ENOMEM, "out of memory");
	for (int i = 0; i < pi->nconfigs; i++)
		ir->config_pass[i] = -1;
	return 0;
}

/* Index of the config named name in ir's configs (the two sides of an A/A run may list different ones). */
static int config_index(const struct runner_impl_result *ir, const char *name)
{
	for (int i = 0; i < ir->nconfigs; i++)
		if (!strcmp(ir->configs[i].name, name))
			return i;
	return -1;
}

static void impl_result_release(struct runner_impl_result *ir)
{
	if (ir->config_detail)
		for (int i = 0; i < ir->nconfigs; i++)
			free(ir->config_detail[i]);
	free(ir->config_detail);
	free(ir->config_pass);
	free(ir->tune_ms);
	free(ir->capture_detail);
	memset(ir, 0, sizeof(*ir));
}

void runner_task_result_release(struct runner_task_result *r)
{
	if (!r)
		return;
	impl_result_release(&r->base);
	impl_result_release(&r->cand);
	free(r->t_base);
	free(r->t_cand);
	free(r->error);
	memset(r, 0, sizeof(*r));
}

static int parity_all(const struct runner_task_ctx *ctx, const struct task_data *t, struct bufs *b,
		      struct runner_impl_result *ir, const char *filter)
{
	for (int i = 0; i < ir->nconfigs; i++) {
		char *detail = NULL;
		int ok;

		if (filter && strcmp(filter, ir->configs[i].name))
			continue;
		ok = parity_config(ctx, t, b, ir->impl, &ir->configs[i], &detail);
		if (ok < 0)
			return ok;
		ir->config_pass[i] = ok;
		ir->config_detail[i] = detail;
		if (!ok)
			say(ctx->log, "    %s %s: parity FAILED: %s\n", ir->impl->name, ir->configs[i].name,
			    detail ? detail : "");
	}
	return 0;
}

/* Tuning pass: a few timed samples per passing config; the fastest median is chosen. */
static int tune(const struct runner_task_ctx *ctx, const struct task_data *t, struct bufs *b,
		struct runner_impl_result *ir)
{
	struct vs_device *d = ctx->device;
	int n = ctx->plan->protocol.tuning_samples > 0 ? ctx->plan->protocol.tuning_samples : 1;
	double *x = calloc((size_t)n, sizeof(double));
	double best = INFINITY;
	int err = 0, passing = 0;

	if (!x)
		return vs_error(VS_ENOMEM, "out of memory");
	for (int i = 0; i < ir->nconfigs; i++)
		passing += ir->config_pass[i] == 1;
	for (int i = 0; i < ir->nconfigs && !err; i++) {
		struct mla_decode_args a;
		double ms;

		if (ir->config_pass[i] != 1)
			continue;
		if (passing == 1) {
			ir->chosen = i;
			break;
		}
		make_args(&a, d, t, b, 0, 0);
		if ((err = poison(d, b, 0)))
			break;
		if (ir->impl->launch(&a, &ir->configs[i]) != MLA_OK) /* warm-up */
			continue;
		for (int k = 0; k < n && !err; k++) {
			make_args(&a, d, t, b, k % t->nsets, 0);
			err = timed_launch(d, b, ir->impl, &ir->configs[i], &a, &ms);
			x[k] = ms;
		}
		if (err)
			break;
		ir->tune_ms[i] = median_of(x, n);
		if (ir->tune_ms[i] < best) {
			best = ir->tune_ms[i];
			ir->chosen = i;
		}
	}
	free(x);
	return err;
}

static int count_outliers(const double *x, int n)
{
	double q1 = stats_percentile(x, n, 25), q3 = stats_percentile(x, n, 75);
	double hi = q3 + 3 * (q3 - q1), lo = q1 - 3 * (q3 - q1);
	int c = 0;

	for (int i = 0; i < n; i++)
		c += x[i] > hi || x[i] < lo;
	return c;
}

/* The SM clock (MHz, -1 unknown) and throttle reasons now: the device's own op, else NVML. */
static int read_clock(const struct runner_task_ctx *ctx, uint64_t *reasons)
{
	struct vs_device *d = ctx->device;
	int sm = -1, mem = -1;

	*reasons = 0;
	if (d->ops->clocks && d->ops->clocks(d, &sm, &mem) == 0 && sm > 0)
		return sm;
	if (!strcmp(d->info.backend, "hip") && vs_gpu_clocks(ctx->gpu_ordinal, &sm, &mem, reasons) == 0)
		return sm;
	return -1;
}

/* The A/B: alternating timed samples of the chosen configs until the stop rule says so. */
static int ab(const struct runner_task_ctx *ctx, const struct task_data *t, struct bufs *b,
	      struct runner_task_result *r)
{
	struct vs_device *d = ctx->device;
	const struct plan_protocol *pr = &ctx->plan->protocol;
	struct runner_impl_result *ir[2] = {&r->base, &r->cand};
	struct stats_stop_rule rule = {pr->rel_halfwidth, pr->min_pairs, pr->max_pairs, pr->max_seconds,
				       500, pr->seed};
	double t0, ms;
	int err = 0, sample = 0;

	r->t_base = calloc((size_t)pr->max_pairs, sizeof(double));
	r->t_cand = calloc((size_t)pr->max_pairs, sizeof(double));
	if (!r->t_base || !r->t_cand)
		return vs_error(VS_ENOMEM, "out of memory");
	for (int k = 0; k < 2; k++) {
		struct mla_decode_args a;

		for (int w = 0; w < pr->warmup && !err; w++) {
			make_args(&a, d, t, b, w % t->nsets, 0);
			err = timed_launch(d, b, ir[k]->impl, &ir[k]->configs[ir[k]->chosen], &a, &ms);
		}
	}
	if (err)
		return err;
	r->sm_mhz_begin = read_clock(ctx, &r->throttle_begin);
	t0 = now_s();
	for (int pair = 0; pair < pr->max_pairs; pair++) {
		int set = pair % t->nsets;

		/* Both outputs of every check_every-th pair are checked: the roles are checked alike. */
		int checked = pair % pr->check_every == 0;

		for (int j = 0; j < 2; j++) {
			/*
			 * The order flips every nsets pairs (AB on each set, then BA on each set, ...):
			 * flipping every pair would tie the order to the input set, and any effect of
			 * (set, position) would then show as a difference between the roles.
			 */
			int k = ((pair / t->nsets) & 1) ? 1 - j : j;
			struct mla_decode_args a;
			char *why = NULL;

			make_args(&a, d, t, b, set, 0);
			err = timed_launch(d, b, ir[k]->impl, &ir[k]->configs[ir[k]->chosen], &a, &ms);
			if (err)
				return err;
			(k ? r->t_cand : r->t_base)[pair] = ms;
			if (checked) {
				int ok = check_output(d, t, b, set, 0, &why);

				if (ok < 0)
					return ok;
				r->timed_checks++;
				if (!ok) {
					r->timed_check_failures++;
					say(ctx->log, "    %s: timed output %d failed parity: %s\n", ir[k]->impl->name,
					    sample, why ? why : "");
				}
				free(why);
			}
			if (ctx->samples)
				fprintf(ctx->samples, "%s,%d,%d,%d,%s,%s,%.17g,%d\n", t->hash, set, pair, j,
					k ? "candidate" : "baseline", ir[k]->configs[ir[k]->chosen].name, ms, checked);
			sample++;
		}
		r->npairs = pair + 1;
		r->stop_reason = stats_should_stop(&rule, r->t_base, r->t_cand, r->npairs, now_s() - t0);
		if (r->stop_reason != STATS_CONTINUE)
			break;
	}
	if (r->stop_reason == STATS_CONTINUE)
		r->stop_reason = STATS_STOP_MAX_PAIRS;
	r->sm_mhz_end = read_clock(ctx, &r->throttle_end);
	return runner_task_finish(r, ctx->plan);
}

int runner_task_finish(struct runner_task_result *r, const struct plan *p)
{
	if (r->npairs < 1 || !r->t_base || !r->t_cand)
		return 0;
	stats_summarize(&r->base.timing, r->t_base, r->npairs);
	stats_summarize(&r->cand.timing, r->t_cand, r->npairs);
	r->base.outliers = count_outliers(r->t_base, r->npairs);
	r->cand.outliers = count_outliers(r->t_cand, r->npairs);
	r->parity_pass = r->base.chosen >= 0 && r->cand.chosen >= 0 && r->timed_check_failures == 0 && !r->error;
	return stats_speedup(&r->speedup, r->t_base, r->t_cand, r->npairs, p->protocol.resamples, p->protocol.seed);
}

int runner_task_result_init(struct runner_task_result *r, const struct runner_task_ctx *ctx,
			    const struct task_spec *spec, const char *hash)
{
	int err;

	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", spec->name);
	snprintf(r->hash, sizeof(r->hash), "%s", hash);
	r->bytes = task_bytes(spec);
	r->flops = task_flops(spec);
	r->sm_mhz_begin = r->sm_mhz_end = -1;
	if ((err = impl_result_init(&r->base, ctx->base, &ctx->plan->baseline)) ||
	    (err = impl_result_init(&r->cand, ctx->cand, &ctx->plan->candidate)))
		return err;
	return 0;
}

int runner_run_task(struct runner_task_result *r, const struct runner_task_ctx *ctx,
		    const struct task_data *t)
{
	struct vs_device *d = ctx->device;
	struct bufs b;
	int err, aa;

	memset(&b, 0, sizeof(b));
	if ((err = runner_task_result_init(r, ctx, &t->spec, t->hash)))
		goto done;
	if ((err = bufs_alloc(d, ctx, t, &b)))
		goto done;
	if (ctx->check_base && (err = parity_all(ctx, t, &b, &r->base, NULL)))
		goto done;
	if (ctx->check_cand && (err = parity_all(ctx, t, &b, &r->cand, ctx->config_filter)))
		goto done;
	if (!ctx->timing)
		goto done;
	/*
	 * Both sides get the tuning pass. An A/A run (the same implementation on both sides) measures
	 * one config twice: the baseline takes the candidate's choice.
	 */
	if ((err = tune(ctx, t, &b, &r->cand)))
		goto done;
	if (ctx->base == ctx->cand && r->cand.chosen >= 0 &&
	    (aa = config_index(&r->base, r->cand.configs[r->cand.chosen].name)) >= 0 && r->base.config_pass[aa] == 1)
		r->base.chosen = aa;
	else if ((err = tune(ctx, t, &b, &r->base)))
		goto done;
	if (r->base.chosen < 0 || r->cand.chosen < 0) {
		say(ctx->log, "    no passing config for %s: task not timed\n",
		    r->base.chosen < 0 ? r->base.impl->name : r->cand.impl->name);
		goto done;
	}
	if (ctx->plan->capture_required &&
	    ((err = capture_gate(ctx, t, &b, &r->base)) || (err = capture_gate(ctx, t, &b, &r->cand))))
		goto done;
	if ((err = ab(ctx, t, &b, r)))
		goto done;
	r->complete = 1;
done:
	r->parity_pass = r->base.chosen >= 0 && r->cand.chosen >= 0 && r->timed_check_failures == 0;
	if (err) {
		r->error = strdup(vs_last_error());
		r->complete = 0;
		r->parity_pass = 0;
	}
	if (d->ops)
		bufs_release(d, &b);
	return err;
}

/* ---- result.json ------------------------------------------------------------------------ */

static cJSON *impl_json(const struct runner_impl_result *ir, const struct runner_task_result *r, int timed)
{
	cJSON *j = cJSON_CreateObject(), *cfgs, *tm;

	cJSON_AddStringToObject(j, "impl", ir->impl->name);
	if (ir->chosen >= 0)
		cJSON_AddStringToObject(j, "chosen", ir->configs[ir->chosen].name);
	else
		cJSON_AddNullToObject(j, "chosen");
	cfgs = cJSON_AddArrayToObject(j, "configs");
	for (int i = 0; i < ir->nconfigs; i++) {
		cJSON *c = cJSON_CreateObject();

		cJSON_AddStringToObject(c, "name", ir->configs[i].name);
		cJSON_AddStringToObject(c, "parity", ir->config_pass[i] == 1 ? "pass" :
					ir->config_pass[i] == 0 ? "fail" : "not run");
		if (ir->config_detail[i])
			cJSON_AddStringToObject(c, "detail", ir->config_detail[i]);
		if (ir->tune_ms[i] > 0)
			cJSON_AddNumberToObject(c, "tune_median_ms", ir->tune_ms[i]);
		cJSON_AddItemToArray(cfgs, c);
	}
	cJSON_AddStringToObject(j, "capture", ir->capture == 1 ? "pass" : ir->capture == 0 ? "fail" : "n/a");
	if (ir->capture_detail)
		cJSON_AddStringToObject(j, "capture_detail", ir->capture_detail);
	if (timed) {
		double sec = ir->timing.median * 1e-3;

		tm = cJSON_AddObjectToObject(j, "timing");
		cJSON_AddNumberToObject(tm, "n", ir->timing.n);
		cJSON_AddNumberToObject(tm, "median_ms", ir->timing.median);
		cJSON_AddNumberToObject(tm, "p10_ms", ir->timing.p10);
		cJSON_AddNumberToObject(tm, "p90_ms", ir->timing.p90);
		cJSON_AddNumberToObject(tm, "mean_ms", ir->timing.mean);
		cJSON_AddNumberToObject(tm, "min_ms", ir->timing.min);
		cJSON_AddNumberToObject(tm, "max_ms", ir->timing.max);
		cJSON_AddNumberToObject(tm, "gbps", r->bytes / sec / 1e9);
		cJSON_AddNumberToObject(tm, "tflops", r->flops / sec / 1e12);
		cJSON_AddNumberToObject(tm, "outliers", ir->outliers);
	}
	return j;
}

static cJSON *ci_json(const struct stats_ci *ci)
{
	cJSON *j = cJSON_CreateObject(), *arr = cJSON_CreateArray();

	cJSON_AddNumberToObject(j, "estimate", ci->estimate);
	cJSON_AddItemToArray(arr, cJSON_CreateNumber(ci->lo));
	cJSON_AddItemToArray(arr, cJSON_CreateNumber(ci->hi));
	cJSON_AddItemToObject(j, "ci95", arr);
	cJSON_AddNumberToObject(j, "n", ci->n);
	return j;
}

static cJSON *task_json(const struct runner_task_result *r, const struct plan *p, cJSON *flags)
{
	cJSON *j = cJSON_CreateObject();

	cJSON_AddStringToObject(j, "name", r->name);
	cJSON_AddStringToObject(j, "hash", r->hash);
	cJSON_AddNumberToObject(j, "bytes", r->bytes);
	cJSON_AddNumberToObject(j, "flops", r->flops);
	cJSON_AddBoolToObject(j, "complete", r->complete);
	cJSON_AddStringToObject(j, "parity", r->parity_pass ? "pass" : "fail");
	if (r->error)
		cJSON_AddStringToObject(j, "error", r->error);
	cJSON_AddItemToObject(j, "baseline", impl_json(&r->base, r, r->complete));
	cJSON_AddItemToObject(j, "candidate", impl_json(&r->cand, r, r->complete));
	if (r->complete) {
		cJSON_AddNumberToObject(j, "pairs", r->npairs);
		cJSON_AddStringToObject(j, "stop", stats_stop_reason_name(r->stop_reason));
		cJSON_AddItemToObject(j, "speedup", ci_json(&r->speedup));
		if (r->speedup.estimate > p->protocol.review_bound) {
			char *msg = fs_printf("task %s: speedup %.2fx is above the review bound %.0fx: check that "
					      "the baseline is sound before trusting it", r->name,
					      r->speedup.estimate, p->protocol.review_bound);

			cJSON_AddItemToArray(flags, cJSON_CreateString(msg));
			free(msg);
		}
		if (r->sm_mhz_begin > 0 && r->sm_mhz_end > 0 &&
		    fabs((double)r->sm_mhz_end - r->sm_mhz_begin) > 0.05 * r->sm_mhz_begin) {
			char *msg = fs_printf("task %s: SM clock moved from %d to %d MHz during sampling "
					      "(throttling or boost change)", r->name, r->sm_mhz_begin, r->sm_mhz_end);

			cJSON_AddItemToArray(flags, cJSON_CreateString(msg));
			free(msg);
		}
		if ((r->throttle_begin | r->throttle_end) & VS_THROTTLE_ANY) {
			char *msg = fs_printf("task %s: GPU clocks were held down during sampling (%s)", r->name,
					      vs_gpu_throttle_text((r->throttle_begin | r->throttle_end) & VS_THROTTLE_ANY));

			cJSON_AddItemToArray(flags, cJSON_CreateString(msg));
			free(msg);
		}
	}
	cJSON_AddNumberToObject(j, "timed_checks", r->timed_checks);
	cJSON_AddNumberToObject(j, "timed_check_failures", r->timed_check_failures);
	if (r->sm_mhz_begin > 0) {
		cJSON *c = cJSON_AddObjectToObject(j, "sm_clock_mhz");

		cJSON_AddNumberToObject(c, "begin", r->sm_mhz_begin);
		cJSON_AddNumberToObject(c, "end", r->sm_mhz_end);
		cJSON_AddNumberToObject(c, "throttle_reasons_begin", (double)r->throttle_begin);
		cJSON_AddNumberToObject(c, "throttle_reasons_end", (double)r->throttle_end);
	}
	return j;
}

static cJSON *device_json(const struct vs_device_info *i)
{
	cJSON *j = cJSON_CreateObject();

	cJSON_AddStringToObject(j, "backend", i->backend);
	cJSON_AddStringToObject(j, "name", i->name);
	cJSON_AddStringToObject(j, "gen", i->arch);
	cJSON_AddStringToObject(j, "driver", i->driver);
	cJSON_AddNumberToObject(j, "compute_units", i->compute_units);
	cJSON_AddNumberToObject(j, "clock_mhz", i->clock_mhz);
	cJSON_AddNumberToObject(j, "mem_clock_mhz", i->mem_clock_mhz);
	cJSON_AddNumberToObject(j, "llc_bytes", (double)i->llc_bytes);
	cJSON_AddNumberToObject(j, "mem_bytes", (double)i->mem_bytes);
	return j;
}

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

struct run_state {
	char *eval_dir;
	char *samples_buf;
	size_t samples_len;
	FILE *samples;
	char *log_buf;
	size_t log_len;
	FILE *log;
	cJSON *root, *tasks, *flags, *manifests;
};

static int make_eval_dir(char **out, const struct runner_options *o, const struct plan *p,
			 const struct vs_device_info *info)
{
	char stamp[32], *dir = NULL, *base = NULL;
	const char *root = o->results_root ? o->results_root : "results";
	int err;

	utc_stamp(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ");
	if (o->has_part) {
		/* A part of a run spread over a cluster: results/<card>/.parts/<run id>/<task index>. */
		base = fs_printf("%s/%s/.parts/%s", root, p->card_id, o->run_id);
		dir = base ? fs_printf("%s/%04d", base, o->part_index) : NULL;
		if (!base || !dir) {
			err = vs_error(VS_ENOMEM, "out of memory");
			goto done;
		}
		if (fs_exists(dir) && (err = fs_remove_tree(dir))) /* a requeued array task runs again */
			goto done;
		err = fs_mkdir_p(dir);
		goto manifests;
	}
	base = fs_printf("%s/%s", root, p->card_id);
	if (!base)
		return vs_error(VS_ENOMEM, "out of memory");
	if ((err = fs_mkdir_p(base)))
		goto done;
	for (int k = 1; k < 1000; k++) {
		free(dir);
		if (o->run_id)
			dir = k == 1 ? fs_printf("%s/%s", base, o->run_id) : fs_printf("%s/%s-%d", base, o->run_id, k);
		else
			dir = k == 1 ? fs_printf("%s/%s-%s", base, stamp, info->arch) :
				       fs_printf("%s/%s-%s-%d", base, stamp, info->arch, k);
		if (!dir) {
			err = vs_error(VS_ENOMEM, "out of memory");
			goto done;
		}
		if (!fs_exists(dir))
			break;
	}
	err = fs_mkdir_p(dir);
manifests:
	if (!err) {
		char *m = fs_join(dir, "manifests");

		err = m ? fs_mkdir_p(m) : vs_error(VS_ENOMEM, "out of memory");
		free(m);
	}
done:
	free(base);
	if (err) {
		free(dir);
		return err;
	}
	*out = dir;
	return 0;
}

static void print_table_header(FILE *log)
{
	say(log, "\n%-34s %10s %10s  %-22s %8s %8s %7s\n", "task", "base ms", "cand ms", "speedup [95% CI]",
	    "GB/s", "TFLOPS", "parity");
}

static void print_table_row(FILE *log, const struct runner_task_result *r)
{
	if (!r->complete) {
		say(log, "%-34s %10s %10s  %-22s %8s %8s %7s%s%s\n", r->name, "-", "-", "-", "-", "-",
		    r->parity_pass ? "pass" : "FAIL", r->error ? "  error: " : "", r->error ? r->error : "");
		return;
	}
	{
		char ci[64];
		double sec = r->cand.timing.median * 1e-3;

		snprintf(ci, sizeof(ci), "%.3f [%.3f, %.3f]", r->speedup.estimate, r->speedup.lo, r->speedup.hi);
		say(log, "%-34s %10.4f %10.4f  %-22s %8.1f %8.2f %7s\n", r->name, r->base.timing.median,
		    r->cand.timing.median, ci, r->bytes / sec / 1e9, r->flops / sec / 1e12,
		    r->parity_pass ? "pass" : "FAIL");
	}
}

/* The one line a finished task gets on stdout. */
static void task_line(struct progress *pg, int i, int n, const struct runner_task_result *r)
{
	if (r->error)
		progress_line(pg, "[%d/%d] %s: FAILED: %s", i + 1, n, r->name, r->error);
	else if (!r->complete)
		progress_line(pg, "[%d/%d] %s: parity %s, not timed", i + 1, n, r->name, r->parity_pass ? "pass" :
			      "FAIL (details in run.log)");
	else
		progress_line(pg, "[%d/%d] %s: speedup %.3f [%.3f, %.3f], base %.4f ms, cand %.4f ms, parity %s",
			      i + 1, n, r->name, r->speedup.estimate, r->speedup.lo, r->speedup.hi,
			      r->base.timing.median, r->cand.timing.median, r->parity_pass ? "pass" : "FAIL");
}

int runner_verdict(cJSON *root, const struct plan *p, const struct runner_task_summary *t, int n, int partial,
		   cJSON *flags, char *line, size_t cap)
{
	const double **tb = calloc((size_t)n + 1, sizeof(double *));
	const double **tc = calloc((size_t)n + 1, sizeof(double *));
	int *np = calloc((size_t)n + 1, sizeof(int));
	int gate_parity = 1, gate_capture = 1, complete_all = 1, nspeed = 0, err = 0;
	int pass_speed, pass_parity, verdict_ok;
	struct stats_ci overall = {0};
	cJSON *ov, *gates, *g;
	const char *verdict;

	if (!tb || !tc || !np) {
		err = vs_error(VS_ENOMEM, "out of memory");
		cJSON_Delete(flags);
		goto done;
	}
	for (int i = 0; i < n; i++) {
		gate_parity &= t[i].parity_pass;
		complete_all &= t[i].complete;
		if (t[i].cand_capture == 0 || t[i].base_capture == 0)
			gate_capture = 0;
		if (p->capture_required && t[i].complete && t[i].cand_capture != 1)
			gate_capture = 0;
		if (t[i].complete && t[i].parity_pass && t[i].npairs > 0) {
			tb[nspeed] = t[i].t_base;
			tc[nspeed] = t[i].t_cand;
			np[nspeed++] = t[i].npairs;
		}
	}
	if (nspeed > 0 && (err = stats_geomean_speedup(&overall, tb, tc, np, nspeed, p->protocol.resamples,
						       p->protocol.seed))) {
		cJSON_Delete(flags);
		goto done;
	}
	pass_speed = nspeed > 0 && complete_all && overall.lo >= p->speedup_min;
	pass_parity = n > 0 && gate_parity;
	verdict_ok = !partial && pass_speed && (pass_parity || !p->parity_required) &&
		     (gate_capture || !p->capture_required) && complete_all;
	verdict = verdict_ok && n == p->ntasks ? "validated" : "failed";
	ov = cJSON_AddObjectToObject(root, "overall");
	if (nspeed > 0)
		cJSON_AddItemToObject(ov, "isolated", ci_json(&overall));
	else
		cJSON_AddNullToObject(ov, "isolated");
	cJSON_AddNumberToObject(ov, "tasks_timed", nspeed);
	cJSON_AddStringToObject(ov, "parity", pass_parity ? "pass" : "fail");
	gates = cJSON_AddObjectToObject(root, "gates");
	g = cJSON_AddObjectToObject(gates, "parity");
	cJSON_AddStringToObject(g, "mode", p->parity_required ? "required" : "advisory");
	cJSON_AddBoolToObject(g, "pass", pass_parity);
	g = cJSON_AddObjectToObject(gates, "speedup");
	cJSON_AddNumberToObject(g, "isolated_speedup_min", p->speedup_min);
	cJSON_AddNumberToObject(g, "ci_lower", nspeed ? overall.lo : 0);
	cJSON_AddBoolToObject(g, "pass", pass_speed);
	g = cJSON_AddObjectToObject(gates, "capture");
	cJSON_AddBoolToObject(g, "required", p->capture_required);
	cJSON_AddBoolToObject(g, "pass", p->capture_required ? gate_capture && complete_all : 1);
	g = cJSON_AddObjectToObject(gates, "complete");
	cJSON_AddBoolToObject(g, "pass", complete_all && !partial && n == p->ntasks);
	cJSON_AddItemToObject(root, "flags", flags ? flags : cJSON_CreateArray());
	cJSON_AddStringToObject(root, "verdict", verdict);
	if (line) {
		char iso[96] = "n/a";

		if (nspeed)
			snprintf(iso, sizeof(iso), "%.3f [%.3f, %.3f]", overall.estimate, overall.lo, overall.hi);
		snprintf(line, cap, "overall isolated speedup (geomean of %d tasks): %s; gate >= %g: %s; parity %s; "
			 "capture %s; verdict %s", nspeed, iso, p->speedup_min, pass_speed ? "pass" : "FAIL",
			 pass_parity ? "pass" : "FAIL",
			 p->capture_required ? (gate_capture && complete_all ? "pass" : "FAIL") : "n/a", verdict);
	}
done:
	free(tb);
	free(tc);
	free(np);
	return err;
}

cJSON *runner_tool_json(void)
{
	cJSON *tool = cJSON_CreateObject();

	cJSON_AddStringToObject(tool, "version", VS_TOOL_VERSION);
	cJSON_AddStringToObject(tool, "git_head", VS_GIT_HEAD);
	cJSON_AddStringToObject(tool, "kernels_tree", VS_KERNELS_TREE);
	cJSON_AddBoolToObject(tool, "kernels_dirty", VS_KERNELS_DIRTY);
	cJSON_AddStringToObject(tool, "gpu_build", VS_GPU_BUILD);
	return tool;
}

cJSON *runner_plugins_json(const struct plan *p)
{
	cJSON *arr = cJSON_CreateArray();

	for (int k = 0; k < 2; k++) {
		const struct plan_impl *pi = k ? &p->candidate : &p->baseline;
		cJSON *j;

		if (!pi->plugin_path)
			continue;
		j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "role", k ? "candidate" : "baseline");
		cJSON_AddStringToObject(j, "impl", pi->name);
		cJSON_AddStringToObject(j, "path", pi->plugin_path);
		cJSON_AddStringToObject(j, "sha256", pi->plugin_sha256);
		cJSON_AddItemToArray(arr, j);
	}
	return arr;
}

/* What one selected task gave back. */
struct task_out {
	int plan_index;
	struct runner_task_result r;
	char *samples, *log;
	char *dir;             /* its task dir, while its worker runs */
	struct worker_spec w;
};

/* One worker slot: a GPU ordinal (or, on the CPU, one more parallel worker). */
struct slot {
	int ordinal;
	int task;              /* index into the selection, -1 when free */
	struct worker_proc wp;
};

/* Materialize task i and copy its manifest into the eval dir; *dir is its task dir. */
static int prepare_task(char **dir, struct run_state *st, const struct runner_options *o, const struct plan *p,
			int i)
{
	char *mpath = NULL, *mtext = NULL, *mname = NULL, hex[65];
	size_t mlen;
	int err;

	*dir = NULL;
	err = task_materialize(dir, o->tasks_root ? o->tasks_root : "tasks", &p->tasks[i], o->threads);
	if (!err) {
		mpath = fs_join(*dir, "manifest.json");
		err = mpath ? fs_read_file(&mtext, &mlen, mpath, 16u << 20) : VS_ENOMEM;
	}
	if (!err) {
		mname = fs_printf("manifests/%s.json", p->task_hash[i]);
		err = mname ? fs_write_in(st->eval_dir, mname, mtext, mlen, hex) : VS_ENOMEM;
		if (!err && !cJSON_GetObjectItemCaseSensitive(st->manifests, p->task_hash[i]))
			cJSON_AddStringToObject(st->manifests, p->task_hash[i], hex);
	}
	free(mname);
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
		*info = probe.info;
		vs_device_release(&probe);
		return 0;
	}
	for (int k = 0; k < n; k++) {
		struct vs_device_info other;

		if ((err = worker_probe_device(k ? &other : info, p->candidate.backend, ordinals[k])))
			return err;
		if (k && (strcmp(other.name, info->name) || strcmp(other.arch, info->arch)))
			return vs_error(VS_EUNSUPPORTED, "--gpus: GPU %d is '%s' (%s) but GPU %d is '%s' (%s): one "
					"eval dir speaks for one kind of device; list GPUs of one kind",
					ordinals[k], other.name, other.arch, ordinals[0], info->name, info->arch);
	}
	return 0;
}

int runner_run(char **eval_dir_out, const struct runner_options *o)
{
	struct plan p;
	struct vs_device_info info;
	struct run_state st;
	struct runner_task_ctx ctx;
	struct progress pg;
	struct task_out *out = NULL;
	struct slot *slots = NULL;
	struct runner_task_summary *sum = NULL;
	const struct mla_decode_impl *base, *cand;
	char *plan_text = NULL, plan_hex[65], started[32], finished[32], hex[65], line[512];
	size_t plan_len = 0;
	int err, nsel = 0, parity_only, partial, nslots, next = 0, running = 0, in_process;
	int *sel = NULL;
	const int *ordinals;

	memset(&p, 0, sizeof(p));
	memset(&st, 0, sizeof(st));
	memset(&info, 0, sizeof(info));
	memset(&ctx, 0, sizeof(ctx));
	progress_init(&pg, stdout, 0);
	if ((err = plan_read(&p, o->plan_path)))
		return err;
	if ((err = fs_read_file(&plan_text, &plan_len, o->plan_path, 64u << 20)))
		goto done;
	fs_sha256_hex(plan_hex, plan_text, plan_len);
	base = mla_decode_impl_find(p.baseline.name);
	cand = mla_decode_impl_find(p.candidate.name);
	if (o->impl_filter && strcmp(o->impl_filter, p.baseline.name) && strcmp(o->impl_filter, p.candidate.name)) {
		err = vs_error(VS_EUSAGE, "--impl '%s' is neither the plan's baseline '%s' nor its candidate '%s'",
			       o->impl_filter, p.baseline.name, p.candidate.name);
		goto done;
	}
	if (o->config_filter) {
		int found = 0;

		for (int i = 0; i < p.candidate.nconfigs; i++)
			found |= !strcmp(p.candidate.configs[i].name, o->config_filter);
		for (int i = 0; i < p.baseline.nconfigs && o->impl_filter && !strcmp(o->impl_filter, p.baseline.name); i++)
			found |= !strcmp(p.baseline.configs[i].name, o->config_filter);
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
		err = vs_error(VS_ENOMEM, "out of memory");
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
		err = vs_error(VS_EUNSUPPORTED, "plan '%s' is for generation '%s' but this device (%s) is '%s': "
			       "emit a plan with --gen %s (the card's match.gens must list it)", o->plan_path,
			       p.gen, info.name, info.arch, info.arch);
		goto done;
	}
	parity_only = o->impl_filter != NULL;
	partial = parity_only || o->config_filter || o->task_filter || o->has_part;
	if ((err = make_eval_dir(&st.eval_dir, o, &p, &info)))
		goto done;
	st.samples = open_memstream(&st.samples_buf, &st.samples_len);
	st.log = open_memstream(&st.log_buf, &st.log_len);
	st.root = cJSON_CreateObject();
	st.flags = cJSON_CreateArray();
	st.manifests = cJSON_CreateObject();
	slots = calloc((size_t)nslots, sizeof(*slots));
	if (!st.samples || !st.log || !st.root || !st.flags || !st.manifests || !slots) {
		err = vs_error(VS_ENOMEM, "out of memory");
		goto done;
	}
	fprintf(st.samples, "task,set,pair,order,role,config,ms,checked\n");
	utc_stamp(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ");
	snprintf(line, sizeof(line), "run %s on %s (%s, %s), plan %s: %s vs %s, %d tasks%s", st.eval_dir, info.name,
		 info.arch, info.driver, o->plan_path, p.baseline.name, p.candidate.name, p.ntasks,
		 partial ? " (partial: filtered)" : "");
	say(st.log, "%s\n", line);
	progress_init(&pg, stdout, nsel);
	progress_line(&pg, "%s", line);
	if (nslots > 1) {
		char list[256] = "";

		for (int k = 0; k < nslots; k++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%d", k ? "," : "", ordinals[k]);
		progress_line(&pg, "%d workers in parallel (%s %s)", nslots,
			      strcmp(p.candidate.backend, "cpu") ? "GPUs" : "CPU workers", list);
	}

	ctx.device = o->device;
	ctx.plan = &p;
	ctx.plan_path = o->plan_path;
	ctx.base = base;
	ctx.cand = cand;
	ctx.config_filter = o->config_filter;
	ctx.check_base = !o->impl_filter || !strcmp(o->impl_filter, base->name);
	ctx.check_cand = !o->impl_filter || !strcmp(o->impl_filter, cand->name);
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
			progress_status(&pg, "materializing %s", p.tasks[i].name);
			terr = prepare_task(&to->dir, &st, o, &p, i);
			if (terr) {
				runner_task_result_init(&to->r, &ctx, &p.tasks[i], p.task_hash[i]);
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
			progress_status(&pg, "%s", p.tasks[i].name);
			if (in_process) {
				terr = worker_run_task(&to->r, &to->w, &to->samples, &to->log);
				if (terr && terr != VS_EFAIL) {
					err = terr;
					goto done;
				}
				progress_step(&pg);
				task_line(&pg, i, p.ntasks, &to->r);
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

		say(st.log, "[%d/%d] %s (%.16s)\n", i + 1, p.ntasks, p.tasks[i].name, p.task_hash[i]);
		if (to->log)
			fputs(to->log, st.log);
		if (to->samples)
			fputs(to->samples, st.samples);
		if (to->r.error)
			say(st.log, "    task %s failed: %s\n", p.tasks[i].name, to->r.error);
		sum[k].complete = to->r.complete;
		sum[k].parity_pass = to->r.parity_pass;
		sum[k].base_capture = to->r.base.capture;
		sum[k].cand_capture = to->r.cand.capture;
		sum[k].t_base = to->r.t_base;
		sum[k].t_cand = to->r.t_cand;
		sum[k].npairs = to->r.npairs;
	}
	print_table_header(st.log);
	for (int k = 0; k < nsel; k++)
		print_table_row(st.log, &out[k].r);

	/* result.json */
	{
		cJSON *card, *plan;
		char *text;

		utc_stamp(finished, sizeof(finished), "%Y-%m-%dT%H:%M:%SZ");
		cJSON_AddStringToObject(st.root, "schema", VS_RESULT_SCHEMA);
		cJSON_AddItemToObject(st.root, "tool", runner_tool_json());
		card = cJSON_AddObjectToObject(st.root, "card");
		cJSON_AddStringToObject(card, "id", p.card_id);
		cJSON_AddStringToObject(card, "path", p.card_path);
		cJSON_AddStringToObject(card, "hash", p.card_hash);
		plan = cJSON_AddObjectToObject(st.root, "plan");
		cJSON_AddStringToObject(plan, "path", o->plan_path);
		cJSON_AddStringToObject(plan, "sha256", plan_hex);
		cJSON_AddStringToObject(plan, "tier", p.tier);
		cJSON_AddStringToObject(plan, "model", p.model);
		cJSON_AddItemToObject(st.root, "device", device_json(&info));
		cJSON_AddStringToObject(st.root, "started", started);
		cJSON_AddStringToObject(st.root, "finished", finished);
		cJSON_AddStringToObject(st.root, "baseline", p.baseline.name);
		cJSON_AddStringToObject(st.root, "candidate", p.candidate.name);
		cJSON_AddItemToObject(st.root, "plugins", runner_plugins_json(&p));
		cJSON_AddBoolToObject(st.root, "partial", partial);
		if (partial) {
			cJSON *f = cJSON_AddObjectToObject(st.root, "filters");

			if (o->task_filter)
				cJSON_AddStringToObject(f, "task", o->task_filter);
			if (o->impl_filter)
				cJSON_AddStringToObject(f, "impl", o->impl_filter);
			if (o->config_filter)
				cJSON_AddStringToObject(f, "config", o->config_filter);
			if (o->has_part) {
				cJSON *pt = cJSON_AddObjectToObject(st.root, "part");

				cJSON_AddStringToObject(pt, "run_id", o->run_id);
				cJSON_AddNumberToObject(pt, "index", o->part_index);
				cJSON_AddNumberToObject(pt, "of", p.ntasks);
			}
		}
		st.tasks = cJSON_AddArrayToObject(st.root, "tasks");
		for (int k = 0; k < nsel; k++)
			cJSON_AddItemToArray(st.tasks, task_json(&out[k].r, &p, st.flags));
		err = runner_verdict(st.root, &p, sum, nsel, partial, st.flags, line, sizeof(line));
		st.flags = NULL;
		if (err)
			goto done;

		/* Copies that bind the evidence: plan, manifests (written above), samples, log. */
		fclose(st.samples);
		st.samples = NULL;
		if ((err = fs_write_in(st.eval_dir, "plan.json", plan_text, plan_len, NULL)) ||
		    (err = fs_write_in(st.eval_dir, "samples.csv", st.samples_buf, st.samples_len, hex)))
			goto done;
		cJSON_AddStringToObject(st.root, "samples_sha256", hex);
		cJSON_AddItemToObject(st.root, "manifests", st.manifests);
		st.manifests = NULL;
		say(st.log, "\n%s\neval dir: %s\n", line, st.eval_dir);
		progress_line(&pg, "%s", line);
		progress_line(&pg, "eval dir: %s", st.eval_dir);
		fclose(st.log);
		st.log = NULL;
		if ((err = fs_write_in(st.eval_dir, "run.log", st.log_buf, st.log_len, hex)))
			goto done;
		cJSON_AddStringToObject(st.root, "log_sha256", hex);
		text = cJSON_Print(st.root);
		if (!text) {
			err = vs_error(VS_ENOMEM, "out of memory");
			goto done;
		}
		err = fs_write_in(st.eval_dir, "result.json", text, strlen(text), NULL);
		cJSON_free(text);
		if (err)
			goto done;
	}
	*eval_dir_out = st.eval_dir;
	st.eval_dir = NULL;
	err = 0;
done:
	progress_end(&pg);
	for (int s = 0; slots && s < nslots; s++)
		if (slots[s].task >= 0)
			worker_kill(&slots[s].wp);
	if (st.samples)
		fclose(st.samples);
	if (st.log)
		fclose(st.log);
	free(st.samples_buf);
	free(st.log_buf);
	free(st.eval_dir);
	cJSON_Delete(st.root);
	cJSON_Delete(st.flags);
	cJSON_Delete(st.manifests);
	for (int k = 0; out && k < p.ntasks; k++) {
		runner_task_result_release(&out[k].r);
		free(out[k].samples);
		free(out[k].log);
		free(out[k].dir);
	}
	free(out);
	free(slots);
	free(sum);
	free(sel);
	free(plan_text);
	plan_release(&p);
	return err;
}
