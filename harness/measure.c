#include "measure.h"
#include "fsutil.h"
#include "gpu_clocks.h"
#include "mla_numeric.h"
#include "parity.h"
#include "pyimpl.h"
#include "vs_error.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

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

/* A graph holding one implementation's launch of one config on one input set (timing "graph_replay"). */
struct timed_graph {
	const struct mla_decode_impl *impl;
	const struct mla_decode_config *cfg;
	int set;
	void *graph;
};

/* Device buffers of one task: every input set, two output pairs at distinct addresses, workspace. */
struct bufs {
	struct timed_graph *graphs; /* captured once each, replayed by every timed sample; freed with b */
	int ngraphs, graphs_cap;
	struct timed_graph *prepared; /* (impl, cfg) pairs whose prepare() ran for this task (graph NULL) */
	int nprepared;
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
	for (int g = 0; g < b->ngraphs; g++)
		d->ops->graph_free(d, b->graphs[g].graph);
	free(b->graphs);
	free(b->prepared);
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

static size_t max_workspace(const struct measure_ctx *ctx, const struct vs_device *d,
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
	for (int k = 0; k < ctx->plan->nrefs; k++) {
		const struct plan_impl *pi = &ctx->plan->refs[k].impl;
		const struct mla_decode_impl *impl = mla_decode_impl_find(pi->name);

		for (int i = 0; impl && i < pi->nconfigs; i++) {
			size_t w = impl->workspace_size(&a, &pi->configs[i]);

			best = w > best ? w : best;
		}
	}
	return best;
}

static int bufs_alloc(struct vs_device *d, const struct measure_ctx *ctx, const struct task_data *t,
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
		if (pyimpl_for_impl(impl))
			return vs_error(VS_EUNSUPPORTED, "%s: the python interpreter did not start in this worker",
					impl);
		return vs_error(VS_EUNSUPPORTED, "%s is not built into this binary (no GPU toolchain at build "
				"time)", impl);
	default:
		/* A Python exception fails the config with the bridge's one line, not the task. */
		if (pyimpl_for_impl(impl) && *pyimpl_last_error()) {
			*detail = fs_printf("%s", pyimpl_last_error());
			return 1;
		}
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

static char *repro(const struct measure_ctx *ctx, const struct task_data *t, const char *impl,
		   const char *cfg)
{
	return fs_printf("validate_skill --run %s --task %.16s --impl %s --config %s",
			 ctx->plan_path ? ctx->plan_path : "PLAN", t->hash, impl, cfg);
}

/*
 * The implementation's prepare() for this task and config (kernels/mla_decode.h: JIT, autotune),
 * once, before the config's first launch, outside timing and capture. Returns 1 when ready, 0 when
 * prepare() refused (*why set), negative on a harness error.
 */
static int prepare_config(const struct measure_ctx *ctx, const struct task_data *t, struct bufs *b,
			  const struct mla_decode_impl *impl, const struct mla_decode_config *cfg, char **why)
{
	struct vs_device *d = ctx->device;
	struct mla_decode_args a;
	int rc, err;

	if (!impl->prepare)
		return 1;
	/* Once per task and config, also when both sides are one implementation (an A/A run). */
	for (int k = 0; k < b->nprepared; k++)
		if (b->prepared[k].impl == impl && !strcmp(b->prepared[k].cfg->name, cfg->name))
			return 1;
	make_args(&a, d, t, b, 0, 0);
	rc = impl->prepare(&a, cfg);
	if (rc == MLA_OK) {
		struct timed_graph *np = realloc(b->prepared, (size_t)(b->nprepared + 1) * sizeof(*np));

		if (!np)
			return vs_error(VS_ENOMEM, "out of memory");
		b->prepared = np;
		b->prepared[b->nprepared++] = (struct timed_graph){impl, cfg, 0, NULL};
		return (err = d->ops->synchronize(d)) ? err : 1;
	}
	if (pyimpl_for_impl(impl->name) && *pyimpl_last_error())
		*why = fs_printf("prepare: %s", pyimpl_last_error());
	else
		*why = fs_printf("prepare of %s %s failed (status %d)", impl->name, cfg->name, rc);
	return rc == MLA_ENODEVICE ? launch_status(rc, impl->name, cfg->name, why) : 0;
}

/*
 * Parity of one config (docs/DESIGN.md "Parity"): every input set into poisoned outputs; set 0 again
 * into the second output pair (another address) and bit-identical; inputs unchanged.
 * Returns 1 pass, 0 fail (*detail set), negative on a device error.
 */
static int parity_config(const struct measure_ctx *ctx, const struct task_data *t, struct bufs *b,
			 const struct mla_decode_impl *impl, const struct mla_decode_config *cfg, char **detail)
{
	struct vs_device *d = ctx->device;
	struct mla_decode_args a;
	char *why = NULL, *cmd;
	int ok, err;

	ok = prepare_config(ctx, t, b, impl, cfg, &why);
	if (ok < 0)
		return ok;
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

/* The graph of impl's launch of cfg on input set `set` (captured on first use, after warm-up). */
static int timed_graph_for(void **graph, const struct measure_ctx *ctx, const struct task_data *t,
			   struct bufs *b, const struct mla_decode_impl *impl, const struct mla_decode_config *cfg,
			   int set)
{
	struct vs_device *d = ctx->device;
	struct mla_decode_args a;
	void *g = NULL;
	int err, rc;

	for (int k = 0; k < b->ngraphs; k++)
		if (b->graphs[k].impl == impl && b->graphs[k].cfg == cfg && b->graphs[k].set == set) {
			*graph = b->graphs[k].graph;
			return 0;
		}
	if (b->ngraphs == b->graphs_cap) {
		int cap = b->graphs_cap ? 2 * b->graphs_cap : 8;
		struct timed_graph *ng = realloc(b->graphs, (size_t)cap * sizeof(*ng));

		if (!ng)
			return vs_error(VS_ENOMEM, "out of memory");
		b->graphs = ng;
		b->graphs_cap = cap;
	}
	make_args(&a, d, t, b, set, 0);
	if ((err = d->ops->synchronize(d)) || (err = d->ops->graph_begin(d)))
		return err;
	rc = impl->launch(&a, cfg);
	err = d->ops->graph_end(d, &g);
	if (rc != MLA_OK || err) {
		char why[512];

		/* vs_error() writes the buffer vs_last_error() reads: copy it first. */
		snprintf(why, sizeof(why), "%s", err ? vs_last_error() : pyimpl_for_impl(impl->name) ?
			 pyimpl_last_error() : "");
		if (g)
			d->ops->graph_free(d, g);
		return vs_error(rc == MLA_EDEVICE && !pyimpl_for_impl(impl->name) ? VS_EDEVICE : VS_EFAIL,
				"%s %s cannot be timed by graph replay: its launch could not be captured (launch "
				"status %d%s%s); emit the plan with --timing launch for an implementation that is not "
				"capture-safe", impl->name, cfg->name, rc, *why ? ", " : "", why);
	}
	b->graphs[b->ngraphs++] = (struct timed_graph){impl, cfg, set, g};
	/* One untimed replay: the first launch of an instantiated graph uploads it. */
	if ((err = poison(d, b, 0)) || (err = d->ops->graph_launch(d, g)) || (err = d->ops->synchronize(d)))
		return err;
	*graph = g;
	return 0;
}

/*
 * One timed sample of impl's cfg on input set `set` (a: its arguments), in the plan's timing mode:
 * "launch" times the launch itself; "graph_replay" the replay of a graph that holds it (the host
 * cost of a launch, Python's above all, stays out of the sample). Poisoning and the LLC flush
 * precede the timed region in both.
 */
static int timed_sample(const struct measure_ctx *ctx, const struct task_data *t, struct bufs *b,
			const struct mla_decode_impl *impl, const struct mla_decode_config *cfg,
			const struct mla_decode_args *a, int set, double *ms)
{
	struct vs_device *d = ctx->device;
	void *graph = NULL;
	int err;

	if (strcmp(ctx->plan->protocol.timing, "graph_replay") || !d->ops->graph_begin)
		return timed_launch(d, b, impl, cfg, a, ms);
	if ((err = timed_graph_for(&graph, ctx, t, b, impl, cfg, set)))
		return err;
	if ((err = poison(d, b, 0)) || (err = d->ops->flush_llc(d)) || (err = d->ops->timer_begin(d)) ||
	    (err = d->ops->graph_launch(d, graph)))
		return err;
	return d->ops->timer_end(d, ms);
}

static double median_of(double *x, int n)
{
	return stats_percentile(x, n, 50.0);
}

/* The capture-safety gate for one implementation's chosen config. */
static int capture_gate(const struct measure_ctx *ctx, const struct task_data *t, struct bufs *b,
			struct measure_impl *ir)
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

static int impl_result_init(struct measure_impl *ir, const struct mla_decode_impl *impl,
			    const struct plan_impl *pi)
{
	memset(ir, 0, sizeof(*ir));
	ir->impl = impl;
	ir->nconfigs = pi->nconfigs;
	ir->configs = pi->configs;
	ir->chosen = -1;
	ir->capture = -1;
	ir->config_pass = calloc((size_t)pi->nconfigs + 1, sizeof(int));
	ir->config_detail = calloc((size_t)pi->nconfigs + 1, sizeof(char *));
	ir->tune_ms = calloc((size_t)pi->nconfigs + 1, sizeof(double));
	if (!ir->config_pass || !ir->config_detail || !ir->tune_ms)
		return vs_oom();
	for (int i = 0; i < pi->nconfigs; i++)
		ir->config_pass[i] = -1;
	return 0;
}

/* Index of the config named name in ir's configs (the two sides of an A/A run may list different ones). */
static int config_index(const struct measure_impl *ir, const char *name)
{
	for (int i = 0; i < ir->nconfigs; i++)
		if (!strcmp(ir->configs[i].name, name))
			return i;
	return -1;
}

static void impl_result_release(struct measure_impl *ir)
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

void measure_result_release(struct measure_result *r)
{
	if (!r)
		return;
	impl_result_release(&r->base);
	impl_result_release(&r->cand);
	for (int k = 0; k < r->nrefs; k++) {
		impl_result_release(&r->refs[k].m);
		free(r->refs[k].t);
	}
	free(r->t_base);
	free(r->t_cand);
	free(r->error);
	free(r->skipped);
	free(r->py_versions);
	memset(r, 0, sizeof(*r));
}

static int parity_all(const struct measure_ctx *ctx, const struct task_data *t, struct bufs *b,
		      struct measure_impl *ir, const char *filter)
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
		else if (!ctx->timing)
			say(ctx->log, "    %s %s: parity pass (%d input set%s, repeat launch bit-identical, inputs "
			    "unchanged)\n", ir->impl->name, ir->configs[i].name, t->nsets, t->nsets == 1 ? "" : "s");
	}
	return 0;
}

/* A parity-only run: every side it checked has a passing config among those it checked. */
static int parity_only_pass(const struct measure_ctx *ctx, const struct measure_result *r)
{
	const struct measure_impl *ir[2] = {&r->base, &r->cand};
	const int checked[2] = {ctx->check_base, ctx->check_cand};
	int any_side = 0;

	for (int k = 0; k < 2; k++) {
		int pass = 0;

		if (!checked[k])
			continue;
		any_side = 1;
		for (int i = 0; i < ir[k]->nconfigs; i++)
			pass |= ir[k]->config_pass[i] == 1;
		if (!pass)
			return 0;
	}
	return any_side;
}

/* Tuning pass: a few timed samples per passing config; the fastest median is chosen. */
static int tune(const struct measure_ctx *ctx, const struct task_data *t, struct bufs *b,
		struct measure_impl *ir)
{
	struct vs_device *d = ctx->device;
	int n = ctx->plan->protocol.tuning_samples > 0 ? ctx->plan->protocol.tuning_samples : 1;
	double *x = calloc((size_t)n, sizeof(double));
	double best = INFINITY;
	int err = 0, passing = 0;

	VS_CHECK_ALLOC(x);
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
			err = timed_sample(ctx, t, b, ir->impl, &ir->configs[i], &a, k % t->nsets, &ms);
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

/*
 * Phase 3 for both sides. An A/A run (the same implementation on both sides) measures one config
 * twice: the baseline takes the candidate's choice.
 */
static int tune_both(const struct measure_ctx *ctx, const struct task_data *t, struct bufs *b,
		     struct measure_result *r)
{
	int err, aa;

	if ((err = tune(ctx, t, b, &r->cand)))
		return err;
	if (ctx->base == ctx->cand && r->cand.chosen >= 0 &&
	    (aa = config_index(&r->base, r->cand.configs[r->cand.chosen].name)) >= 0 && r->base.config_pass[aa] == 1) {
		r->base.chosen = aa;
		return 0;
	}
	return tune(ctx, t, b, &r->base);
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
static int read_clock(const struct measure_ctx *ctx, uint64_t *reasons)
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

/* One role timed in the A/B rounds: baseline, candidate or a reference. */
struct ab_role {
	struct measure_impl *ir;
	double *t;                  /* [max_pairs] */
	int *checks, *failures;     /* its timed-output checks */
	char role[24];              /* samples.csv's role column */
};

/*
 * The roles of the rounds, in round order: baseline, candidate, then every reference that runs the
 * task with a config that passed parity and the capture gate (its samples array allocated here).
 * Returns how many, or VS_ENOMEM.
 */
static int ab_roles(struct ab_role *roles, struct measure_result *r, int max_pairs)
{
	int n = 2;

	roles[0] = (struct ab_role){&r->base, r->t_base, &r->timed_checks, &r->timed_check_failures, "baseline"};
	roles[1] = (struct ab_role){&r->cand, r->t_cand, &r->timed_checks, &r->timed_check_failures, "candidate"};
	for (int k = 0; k < r->nrefs; k++) {
		struct measure_ref *rf = &r->refs[k];

		if (rf->skip || rf->m.chosen < 0 || rf->m.capture == 0)
			continue;
		rf->t = calloc((size_t)max_pairs, sizeof(double));
		if (!rf->t)
			return vs_oom();
		roles[n] = (struct ab_role){&rf->m, rf->t, &rf->timed_checks, &rf->timed_check_failures, ""};
		snprintf(roles[n].role, sizeof(roles[n].role), "reference%d", k + 1);
		n++;
	}
	return n;
}

/* The A/B: alternating timed samples of the chosen configs until the stop rule says so. */
static int ab(const struct measure_ctx *ctx, const struct task_data *t, struct bufs *b,
	      struct measure_result *r)
{
	struct vs_device *d = ctx->device;
	const struct plan_protocol *pr = &ctx->plan->protocol;
	struct stats_stop_rule rule = {pr->rel_halfwidth, pr->min_pairs, pr->max_pairs, pr->max_seconds,
				       500, pr->seed};
	struct ab_role roles[2 + VS_PLAN_MAX_REFERENCES];
	double t0, ms;
	int err = 0, sample = 0, n;

	r->t_base = calloc((size_t)pr->max_pairs, sizeof(double));
	r->t_cand = calloc((size_t)pr->max_pairs, sizeof(double));
	if (!r->t_base || !r->t_cand)
		return vs_oom();
	if ((n = ab_roles(roles, r, pr->max_pairs)) < 0)
		return n;
	for (int k = 0; k < n; k++) {
		struct mla_decode_args a;

		for (int w = 0; w < pr->warmup && !err; w++) {
			make_args(&a, d, t, b, w % t->nsets, 0);
			err = timed_launch(d, b, roles[k].ir->impl, &roles[k].ir->configs[roles[k].ir->chosen], &a, &ms);
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

		for (int j = 0; j < n; j++) {
			/*
			 * The order reverses every nsets pairs (AB on each set, then BA on each set, ...;
			 * with references B C R1 R2, then R2 R1 C B): reversing every pair would tie the
			 * order to the input set, and any effect of (set, position) would then show as a
			 * difference between the roles.
			 */
			const struct ab_role *ro = &roles[((pair / t->nsets) & 1) ? n - 1 - j : j];
			struct measure_impl *ir = ro->ir;
			struct mla_decode_args a;
			char *why = NULL;

			make_args(&a, d, t, b, set, 0);
			err = timed_sample(ctx, t, b, ir->impl, &ir->configs[ir->chosen], &a, set, &ms);
			if (err)
				return err;
			ro->t[pair] = ms;
			if (checked) {
				int ok = check_output(d, t, b, set, 0, &why);

				if (ok < 0)
					return ok;
				(*ro->checks)++;
				if (!ok) {
					(*ro->failures)++;
					say(ctx->log, "    %s: timed output %d failed parity: %s\n", ir->impl->name,
					    sample, why ? why : "");
				}
				free(why);
			}
			if (ctx->samples)
				fprintf(ctx->samples, "%s,%d,%d,%d,%s,%s,%.17g,%d\n", t->hash, set, pair, j,
					ro->role, ir->configs[ir->chosen].name, ms, checked);
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
	return measure_result_finish(r, ctx->plan);
}

int measure_result_finish(struct measure_result *r, const struct plan *p)
{
	int err;

	if (r->npairs < 1 || !r->t_base || !r->t_cand)
		return 0;
	stats_summarize(&r->base.timing, r->t_base, r->npairs);
	stats_summarize(&r->cand.timing, r->t_cand, r->npairs);
	r->base.outliers = count_outliers(r->t_base, r->npairs);
	r->cand.outliers = count_outliers(r->t_cand, r->npairs);
	r->parity_pass = r->base.chosen >= 0 && r->cand.chosen >= 0 && r->timed_check_failures == 0 && !r->error;
	if ((err = stats_speedup(&r->speedup, r->t_base, r->t_cand, r->npairs, p->protocol.resamples,
				 p->protocol.seed)))
		return err;
	for (int k = 0; k < r->nrefs; k++) {
		struct measure_ref *rf = &r->refs[k];

		if (!rf->t)
			continue;
		stats_summarize(&rf->m.timing, rf->t, r->npairs);
		rf->m.outliers = count_outliers(rf->t, r->npairs);
		rf->has_ratio = rf->m.chosen >= 0 && rf->m.capture != 0 && rf->timed_check_failures == 0;
		if (rf->has_ratio && (err = stats_speedup(&rf->ratio, rf->t, r->t_cand, r->npairs, p->protocol.resamples,
							  p->protocol.seed)))
			return err;
	}
	return 0;
}

/* The plan's references on the task with this hash: their implementations and skip reasons. */
static int refs_init(struct measure_result *r, const struct plan *p, const char *hash)
{
	int i = plan_task_index(p, hash), err;

	for (int k = 0; k < p->nrefs; k++) {
		const struct mla_decode_impl *impl = mla_decode_impl_find(p->refs[k].impl.name);

		if (!impl)
			return vs_error(VS_ENOTFOUND, "reference '%s' names no implementation of this process",
					p->refs[k].impl.name);
		r->nrefs = k + 1;
		if ((err = impl_result_init(&r->refs[k].m, impl, &p->refs[k].impl)))
			return err;
		r->refs[k].skip = plan_reference_skip(p, k, i);
	}
	return 0;
}

int measure_result_init(struct measure_result *r, const struct measure_ctx *ctx,
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
	return refs_init(r, ctx->plan, hash);
}

int measure_task(struct measure_result *r, const struct measure_ctx *ctx,
		    const struct task_data *t)
{
	struct vs_device *d = ctx->device;
	struct bufs b;
	int err;

	memset(&b, 0, sizeof(b));
	if ((err = measure_result_init(r, ctx, &t->spec, t->hash)))
		goto done;
	if ((err = bufs_alloc(d, ctx, t, &b)))
		goto done;
	/* --impl BASELINE --config C (a reproduce line) checks that one baseline config */
	if (ctx->check_base && (err = parity_all(ctx, t, &b, &r->base, ctx->check_cand ? NULL : ctx->config_filter)))
		goto done;
	if (!ctx->timing) {
		if (!ctx->check_base)
			say(ctx->log, "    %s (baseline): not checked (--impl %s)\n", r->base.impl->name, r->cand.impl->name);
		if (!ctx->check_cand)
			say(ctx->log, "    %s (candidate): not checked (--impl %s)\n", r->cand.impl->name, r->base.impl->name);
	}
	if (ctx->check_cand && (err = parity_all(ctx, t, &b, &r->cand, ctx->config_filter)))
		goto done;
	for (int k = 0; k < r->nrefs; k++)
		if (!r->refs[k].skip && (ctx->timing || (ctx->check_refs >> k & 1u)) &&
		    (err = parity_all(ctx, t, &b, &r->refs[k].m, ctx->timing ? NULL : ctx->config_filter)))
			goto done;
	if (!ctx->timing)
		goto done;
	if ((err = tune_both(ctx, t, &b, r)))
		goto done;
	for (int k = 0; k < r->nrefs; k++)
		if (!r->refs[k].skip && (err = tune(ctx, t, &b, &r->refs[k].m)))
			goto done;
	if (r->base.chosen < 0 || r->cand.chosen < 0) {
		say(ctx->log, "    no passing config for %s: task not timed\n",
		    r->base.chosen < 0 ? r->base.impl->name : r->cand.impl->name);
		goto done;
	}
	if (ctx->plan->capture_required &&
	    ((err = capture_gate(ctx, t, &b, &r->base)) || (err = capture_gate(ctx, t, &b, &r->cand))))
		goto done;
	for (int k = 0; k < r->nrefs && ctx->plan->capture_required; k++)
		if (r->refs[k].m.chosen >= 0 && (err = capture_gate(ctx, t, &b, &r->refs[k].m)))
			goto done;
	if ((err = ab(ctx, t, &b, r)))
		goto done;
	r->complete = 1;
done:
	/*
	 * A parity-only run (--impl) chooses no config: it passes when each side it checked has a
	 * passing config; the side it did not run does not fail it.
	 */
	r->parity_pass = ctx->timing ? r->base.chosen >= 0 && r->cand.chosen >= 0 && r->timed_check_failures == 0 :
				       parity_only_pass(ctx, r);
	if (err) {
		r->error = strdup(vs_last_error());
		r->complete = 0;
		r->parity_pass = 0;
	}
	if (d->ops)
		bufs_release(d, &b);
	return err;
}
