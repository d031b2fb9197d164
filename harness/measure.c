#include "measure.h"
#include "freshset.h"
#include "fsutil.h"
#include "gpu_clocks.h"
#include "mla_numeric.h"
#include "op.h"
#include "op_mla.h"
#include "parity.h"
#include "pyimpl.h"
#include "vs_error.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- small helpers ---------------------------------------------------------------------- */

static int e2e_finish(struct measure_e2e *m, const struct plan *p);

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
	const void *q; /* the q it reads: a set's, or a fresh q's slot (the A/B) */
	void *graph;
};

/*
 * The setup time (wall ms) of one config of one implementation on the task being measured: its
 * prepare(), run once for every side with that config name (at NULL), or one side's first launch
 * and graph captures (at: that side's config, in its measure_impl.configs).
 */
struct setup_entry {
	const struct mla_decode_impl *impl;
	const char *cfg;                    /* the config's name, borrowed from the plan */
	const struct mla_decode_config *at; /* the side's config, or NULL for prepare() */
	double ms;
};

/* Device buffers of one task: every input set, two output pairs at distinct addresses, workspace. */
struct bufs {
	struct timed_graph *graphs; /* captured once each, replayed by every timed sample; freed with b */
	int ngraphs, graphs_cap;
	struct timed_graph *prepared; /* (impl, cfg) pairs whose prepare() ran for this task (graph NULL) */
	int nprepared;
	/*
	 * wall ms of each (implementation, config)'s prepare(), first launch and captures: a side's
	 * setup is the sum over its own configs, so that two sides of one implementation (an A/A run,
	 * a config card's two configs) each count what they use: the prepare() of a config both run
	 * in both, each one's own launches and captures
	 */
	struct setup_entry *setup;
	int nsetup;
	int nsets;
	void *q[VS_TASK_MAX_SETS], *kv[VS_TASK_MAX_SETS], *bt[VS_TASK_MAX_SETS], *sl[VS_TASK_MAX_SETS];
	/* page_offset tasks: each set's whole virtual cache (alloc_sparse), kv[] its stored pages; or NULL */
	void *kv_sparse[VS_TASK_MAX_SETS];
	/* the sparse form's inputs of each set, task_set_inputs() order from its fifth (indices ...); or NULL */
	void *ext[VS_TASK_MAX_SETS][VS_TASK_MAX_INPUTS];
	void *out[2];
	void *lse[2];
	void *ws;
	size_t ws_bytes;
	size_t out_bytes, lse_bytes;
	/* host scratch */
	uint16_t *h_out[2 + VS_PLAN_MAX_REFERENCES]; /* [0], [1]: the output pairs; all: the A/B's roles */
	float *h_lse[2 + VS_PLAN_MAX_REFERENCES];
	unsigned char *h_in;
	size_t h_in_bytes;
	/* guard regions: out, lse and ws point GUARD_BYTES into these allocations */
	void *out_base[2], *lse_base[2], *ws_base;
	unsigned char *h_guard;
	/* run-time inputs: a fresh q at two addresses (rotated per pair), its generator and reference */
	void *fq[2];
	struct freshset fresh;
	float *h_cmp_out; /* the baseline's output as float (reference above the oracle bound) */
};

/* Bytes of guard before and after out, lse and the workspace; GUARD_BYTE in every one. */
#define GUARD_BYTES 4096
#define GUARD_BYTE 0xA5

static void bufs_release(struct vs_device *d, struct bufs *b)
{
	for (int s = 0; s < VS_TASK_MAX_SETS; s++) {
		d->ops->free(d, b->q[s]);
		if (b->kv_sparse[s])
			d->ops->free_sparse(d, b->kv_sparse[s]);
		else
			d->ops->free(d, b->kv[s]);
		d->ops->free(d, b->bt[s]);
		d->ops->free(d, b->sl[s]);
		for (int i = 0; i < VS_TASK_MAX_INPUTS; i++)
			d->ops->free(d, b->ext[s][i]);
	}
	for (int i = 0; i < 2; i++) {
		d->ops->free(d, b->out_base[i]);
		d->ops->free(d, b->lse_base[i]);
		d->ops->free(d, b->fq[i]);
	}
	for (int i = 0; i < 2 + VS_PLAN_MAX_REFERENCES; i++) {
		free(b->h_out[i]);
		free(b->h_lse[i]);
	}
	d->ops->free(d, b->ws_base);
	free(b->h_in);
	for (int g = 0; g < b->ngraphs; g++)
		d->ops->graph_free(d, b->graphs[g].graph);
	free(b->graphs);
	free(b->prepared);
	free(b->setup);
	free(b->h_guard);
	free(b->h_cmp_out);
	freshset_release(&b->fresh);
	memset(b, 0, sizeof(*b));
}

/*
 * The sparse form's pointers of set `set` (kernels/mla_decode.h ABI 3): its device copies of
 * indices, topk_length, attn_sink and the extra cache's; block_table and seqlens are NULL there.
 */
static void sparse_args(struct mla_decode_args *a, const struct task_data *t, const struct bufs *b, int set)
{
	struct task_input in[VS_TASK_MAX_INPUTS];
	int n = task_set_inputs(in, &t->sets[set]);

	a->block_table = NULL;
	a->seqlens = NULL;
	for (int i = 4; i < n; i++) {
		const char *name = in[i].name;
		void *p = b->ext[set][i];

		if (!strcmp(name, "indices"))
			a->indices = p;
		else if (!strcmp(name, "topk_length"))
			a->topk_length = p;
		else if (!strcmp(name, "attn_sink"))
			a->attn_sink = p;
		else if (!strcmp(name, "extra_kv_cache"))
			a->extra_kv_cache = p;
		else if (!strcmp(name, "extra_indices"))
			a->extra_indices = p;
		else if (!strcmp(name, "extra_topk_length"))
			a->extra_topk_length = p;
	}
}

static void make_args(struct mla_decode_args *a, const struct vs_device *d, const struct task_data *t,
		      const struct bufs *b, int set, int which)
{
	const struct task_spec *s = &t->spec;

	mla_task_kernel_shape(a, s);
	a->q = b->q[set];
	/*
	 * A task with page_offset places its stored pages at page_offset.. of a larger virtual cache
	 * (task.h): block_table entries count from the virtual base. Byte offsets past 2^32 test
	 * 64-bit index math without allocating the pages in between. The base is the cache's own
	 * reservation (kv_alloc) when the device has sparse buffers: a valid pointer, as a real
	 * cache's is. Otherwise it lies page_offset pages below the buffer, outside any allocation
	 * (never dereferenced there, but refused by launchers that query their pointers: Triton's).
	 */
	if (b->kv_sparse[set])
		a->kv_cache = b->kv_sparse[set];
	else
		a->kv_cache =
			(const void *)((uintptr_t)b->kv[set] - (uintptr_t)s->page_offset * mla_task_page_bytes(s));
	a->block_table = b->bt[set];
	a->seqlens = b->sl[set];
	if (s->topk > 0)
		sparse_args(a, t, b, set);
	a->out = b->out[which];
	a->lse = b->lse[which];
	a->workspace = b->ws;
	a->workspace_bytes = b->ws_bytes;
	a->kv_scale = t->sets[set].kv_scale;
	a->num_cus = d->info.compute_units;
	a->stream = d->stream;
}

static int upload_set(struct vs_device *d, const struct task_data *t, struct bufs *b, int dst, int src)
{
	const struct task_set *ts = &t->sets[src];
	int err;

	struct task_input in[VS_TASK_MAX_INPUTS];
	int n = task_set_inputs(in, ts);

	if ((err = d->ops->upload(d, b->q[dst], ts->q, ts->q_bytes)) ||
	    (err = d->ops->upload(d, b->kv[dst], ts->kv_cache, ts->kv_bytes)) ||
	    (err = d->ops->upload(d, b->bt[dst], ts->block_table, ts->block_table_bytes)) ||
	    (err = d->ops->upload(d, b->sl[dst], ts->seqlens, ts->seqlens_bytes)))
		return err;
	for (int i = 4; i < n; i++)
		if ((err = d->ops->upload(d, b->ext[dst][i], in[i].host, in[i].bytes)))
			return err;
	return 0;
}

static size_t max_workspace(const struct measure_ctx *ctx, const struct vs_device *d, const struct task_data *t,
			    const struct bufs *b)
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

/*
 * A device buffer of `bytes` with GUARD_BYTES of GUARD_BYTE on each side: *base is what to free,
 * *user what the implementation gets.
 */
static int guarded_alloc(struct vs_device *d, void **base, void **user, size_t bytes)
{
	int err;

	if ((err = d->ops->alloc(d, base, bytes + 2 * GUARD_BYTES)) ||
	    (err = d->ops->fill(d, *base, GUARD_BYTE, bytes + 2 * GUARD_BYTES)))
		return err;
	*user = (unsigned char *)*base + GUARD_BYTES;
	return 0;
}

/*
 * Set i's cache. A page_offset task's is one sparse buffer when the device has them: the virtual
 * cache's whole range reserved, its first granule and the stored pages (at page_offset *
 * page_bytes, b->kv[i]) backed. When the device refuses (a GPU without virtual memory management),
 * one line in the run log says so and this and the later sets take the old layout: kv[i] a plain
 * buffer of the stored pages, the base computed below it (make_args). *sparse_ok is cleared then.
 */
static int kv_alloc(struct vs_device *d, const struct measure_ctx *ctx, const struct task_data *t, struct bufs *b,
		    int i, int *sparse_ok)
{
	const struct task_spec *s = &t->spec;
	size_t kv_bytes = t->sets[i].kv_bytes, off = (size_t)s->page_offset * mla_task_page_bytes(s);
	int err, quiet;

	if (!s->page_offset || !d->ops->alloc_sparse || !*sparse_ok || !kv_bytes)
		return d->ops->alloc(d, &b->kv[i], kv_bytes);
	quiet = vs_error_set_quiet(1); /* a refusal is a warning here, not an error */
	err = d->ops->alloc_sparse(d, &b->kv_sparse[i], off + kv_bytes, off, kv_bytes);
	vs_error_set_quiet(quiet);
	if (!err) {
		b->kv[i] = (unsigned char *)b->kv_sparse[i] + off;
		return 0;
	}
	b->kv_sparse[i] = NULL;
	*sparse_ok = 0;
	say(ctx->log,
	    "    warning: page_offset: no sparse kv_cache (%s): the cache base lies %zu bytes below its "
	    "allocation, which launchers that check their pointers (Triton's) refuse\n",
	    vs_last_error(), off);
	return d->ops->alloc(d, &b->kv[i], kv_bytes);
}

static int bufs_alloc(struct vs_device *d, const struct measure_ctx *ctx, const struct task_data *t, struct bufs *b)
{
	int sparse_ok = 1;
	const struct task_spec *s = &t->spec;
	int err = 0;

	memset(b, 0, sizeof(*b));
	b->nsets = t->nsets;
	b->out_bytes = t->sets[0].out_elems * sizeof(uint16_t);
	b->lse_bytes = t->sets[0].lse_elems * sizeof(float);
	for (int i = 0; i < t->nsets && !err; i++) {
		const struct task_set *ts = &t->sets[i];

		struct task_input in[VS_TASK_MAX_INPUTS];
		int n = task_set_inputs(in, ts);

		if ((err = d->ops->alloc(d, &b->q[i], ts->q_bytes)) || (err = kv_alloc(d, ctx, t, b, i, &sparse_ok)) ||
		    (err = d->ops->alloc(d, &b->bt[i], ts->block_table_bytes)) ||
		    (err = d->ops->alloc(d, &b->sl[i], ts->seqlens_bytes)))
			break;
		for (int k = 4; k < n && !err; k++)
			err = d->ops->alloc(d, &b->ext[i][k], in[k].bytes);
		if (!err)
			err = upload_set(d, t, b, i, i);
	}
	for (int i = 0; i < 2 && !err; i++) {
		if ((err = guarded_alloc(d, &b->out_base[i], &b->out[i], b->out_bytes)) ||
		    (err = guarded_alloc(d, &b->lse_base[i], &b->lse[i], b->lse_bytes)) ||
		    (err = d->ops->alloc(d, &b->fq[i], t->sets[0].q_bytes)))
			break;
	}
	for (int i = 0; i < 2 + ctx->plan->nrefs && !err; i++) {
		b->h_out[i] = malloc(b->out_bytes ? b->out_bytes : 1);
		b->h_lse[i] = malloc(b->lse_bytes ? b->lse_bytes : 1);
		if (!b->h_out[i] || !b->h_lse[i])
			err = vs_error(VS_ENOMEM, "out of memory for output scratch");
	}
	if (!err) {
		b->ws_bytes = max_workspace(ctx, d, t, b);
		if (b->ws_bytes)
			err = guarded_alloc(d, &b->ws_base, &b->ws, b->ws_bytes);
	}
	if (!err && !(b->h_guard = malloc(GUARD_BYTES)))
		err = vs_error(VS_ENOMEM, "out of memory for the guard check");
	if (!err && !(b->h_cmp_out = malloc(t->sets[0].out_elems * sizeof(float) + 1)))
		err = vs_error(VS_ENOMEM, "out of memory for the run-time comparison");
	if (!err)
		err = freshset_init(&b->fresh, s, t->sets[0].q_bytes / sizeof(uint16_t), t->sets[0].out_elems,
				    t->sets[0].lse_elems);
	if (!err) {
		/* Largest input buffer (for the no-mutation check). */
		struct task_input in[VS_TASK_MAX_INPUTS];
		int n = task_set_inputs(in, &t->sets[0]);
		size_t m = 0;

		for (int i = 0; i < n; i++)
			m = in[i].bytes > m ? in[i].bytes : m;
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

/*
 * Check one guard region (GUARD_BYTES at dev) and restore it. Returns the number of bytes written
 * into it, counted from the buffer's edge (back guard: up to the last changed byte; front guard:
 * from the first changed byte), 0 if none, or a negative error.
 */
static long guard_written(struct vs_device *d, struct bufs *b, void *dev, int front)
{
	long n = 0;
	int err;

	if ((err = d->ops->download(d, b->h_guard, dev, GUARD_BYTES)))
		return err;
	for (long i = 0; i < GUARD_BYTES; i++)
		if (b->h_guard[i] != GUARD_BYTE) {
			n = front ? GUARD_BYTES - i : i + 1;
			if (front)
				break;
		}
	if (n && (err = d->ops->fill(d, dev, GUARD_BYTE, GUARD_BYTES)))
		return err;
	return n;
}

/*
 * The guards around out and lse of pair `which` and around the workspace, after a launch:
 * 1 intact, 0 with *detail ("wrote N bytes past the end of 'out'"), negative on a device error.
 */
static int guards_intact(struct vs_device *d, struct bufs *b, int which, char **detail)
{
	unsigned char *bufs[3] = {b->out[which], (unsigned char *)b->lse[which], b->ws};
	size_t bytes[3] = {b->out_bytes, b->lse_bytes, b->ws_bytes};
	static const char *const names[3] = {"out", "lse", "workspace"};
	int err;

	if ((err = d->ops->synchronize(d)))
		return err;
	for (int i = 0; i < 3; i++) {
		long back, front;

		if (!bufs[i])
			continue;
		back = guard_written(d, b, bufs[i] + bytes[i], 0);
		front = guard_written(d, b, bufs[i] - GUARD_BYTES, 1);
		if (back < 0)
			return (int)back;
		if (front < 0)
			return (int)front;
		if (back) {
			*detail = fs_printf("wrote %ld bytes past the end of '%s'", back, names[i]);
			return 0;
		}
		if (front) {
			*detail = fs_printf("wrote %ld bytes before the start of '%s'", front, names[i]);
			return 0;
		}
	}
	return 1;
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
		return vs_error(VS_EUNSUPPORTED,
				"%s is not built into this binary (no GPU toolchain at build "
				"time)",
				impl);
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
 * Compare host outputs with a reference (label names the input set in the detail). Returns 1 pass,
 * 0 fail (with *detail).
 */
/* The worst element's |a - e| / (atol + rtol |e|) of a report (infinite for a non-finite mismatch). */
static double worst_ratio(const struct parity_report *r, const struct task_tol *tol)
{
	double e = r->worst_expected, a = r->worst_actual;

	if (r->n_total == 0)
		return 0;
	if (r->n_nonfinite_mismatch)
		return INFINITY;
	if (!isfinite(e) || !isfinite(a))
		return 0; /* the same infinity */
	return fabs(a - e) / (tol->atol + tol->rtol * fabs(e));
}

/* The parity margin being gathered for a config: the worst over what was compared (NULL: none). */
static double *cur_margin, *cur_cos;

static int compare_outputs(const struct task_data *t, const uint16_t *h_out, const float *h_lse, const float *ref_out,
			   const float *ref_lse, const struct task_tol *tol_out, const struct task_tol *tol_lse,
			   const char *label, char **detail)
{
	const struct task_spec *s = &t->spec;
	const struct task_set *ts = &t->sets[0];
	struct parity_report ro, rl;
	int dims_out[4] = {s->batch, s->s_q, s->h_q, MLA_D_V};
	int dims_lse[3] = {s->batch, s->h_q, s->s_q};
	char line_o[512] = "", line_l[512] = "";

	parity_compare_bf16(&ro, h_out, ref_out, ts->out_elems, tol_out, dims_out, 4);
	parity_compare_f32(&rl, h_lse, ref_lse, ts->lse_elems, tol_lse, dims_lse, 3);
	if (cur_margin) {
		double m = fmax(worst_ratio(&ro, tol_out), worst_ratio(&rl, tol_lse));

		*cur_margin = fmax(*cur_margin, m);
		*cur_cos = fmax(*cur_cos, ro.cos_diff);
	}
	if (ro.pass && rl.pass)
		return 1;
	if (!ro.pass)
		parity_describe(line_o, sizeof(line_o), "out", &ro, out_dims_names, 4);
	if (!rl.pass)
		parity_describe(line_l, sizeof(line_l), "lse", &rl, lse_dims_names, 3);
	*detail = fs_printf("%s: %s%s%s", label, line_o, *line_o && *line_l ? "; " : "", line_l);
	return 0;
}

/* Download output pair `which` into its host scratch. */
static int download_outputs(struct vs_device *d, struct bufs *b, int which)
{
	int err;

	if ((err = d->ops->synchronize(d)) ||
	    (err = d->ops->download(d, b->h_out[which], b->out[which], b->out_bytes)) ||
	    (err = d->ops->download(d, b->h_lse[which], b->lse[which], b->lse_bytes)))
		return err;
	return 0;
}

/*
 * The out tolerance for input set `set`: the plan's (FlashMLA's atol, calibrated on outputs of the
 * N(0,1)/10 sets) with atol scaled by the set's value scale. A softmax set draws the cache, and so
 * V and the outputs, from N(0,1): ten times larger values carry ten times the absolute rounding
 * error of the bf16 P.V product (seen on the H200 for every implementation, FlashMLA included:
 * 2.5e-3 on outputs near 0.01 whose neighbours are near 1). rtol and cos_tol are scale-free.
 */
static struct task_tol out_tol(const struct task_data *t, int set)
{
	struct task_tol to = t->spec.tol_out;

	if (task_set_is_softmax(&t->spec, set))
		to.atol *= 10;
	return to;
}

/*
 * Download output pair `which` and compare with set `set`'s reference. Returns 1 pass, 0 fail
 * (with *detail), or a negative error.
 */
static int check_output(struct vs_device *d, const struct task_data *t, struct bufs *b, int set, int which,
			char **detail)
{
	const struct task_set *ts = &t->sets[set];
	struct task_tol to = out_tol(t, set);
	char label[32];
	int err;

	if ((err = download_outputs(d, b, which)))
		return err;

	snprintf(label, sizeof(label), "input set %d", set);
	return compare_outputs(t, b->h_out[which], b->h_lse[which], ts->ref_out, ts->ref_lse, &to, &t->spec.tol_lse,
			       label, detail);
}

/* Inputs larger than this are checked once per config instead of after every launch. */
#define CHECK_EVERY_LAUNCH_BYTES ((size_t)256 << 20)

/*
 * 1 if the inputs of set `set` (all sets when set < 0) still hold what was uploaded, 0 (with
 * detail) if not; the small inputs always, kv_cache when large_too or when it is small.
 */
static int inputs_unchanged(struct vs_device *d, const struct task_data *t, struct bufs *b, int set_only, int large_too,
			    char **detail)
{
	for (int set = 0; set < t->nsets; set++) {
		struct task_input in[VS_TASK_MAX_INPUTS];
		int n = task_set_inputs(in, &t->sets[set]);
		const void *dev[VS_TASK_MAX_INPUTS] = {b->q[set], b->kv[set], b->bt[set], b->sl[set]};

		if (set_only >= 0 && set != set_only)
			continue;
		for (int i = 4; i < n; i++)
			dev[i] = b->ext[set][i];
		for (int i = 0; i < n; i++) {
			int err;

			if (in[i].bytes > CHECK_EVERY_LAUNCH_BYTES && !large_too)
				continue;
			err = d->ops->download(d, b->h_in, dev[i], in[i].bytes);
			if (err)
				return err;
			if (memcmp(b->h_in, in[i].host, in[i].bytes)) {
				*detail = fs_printf("input '%s' of set %d was modified by the launch", in[i].name, set);
				/* Restore so that the next config starts from the real inputs. */
				err = upload_set(d, t, b, set, set);
				return err ? err : 0;
			}
		}
	}
	return 1;
}

static char *repro(const struct measure_ctx *ctx, const struct task_data *t, const char *impl, const char *cfg)
{
	return fs_printf("validate_skill --run %s --task %.16s --impl %s --config %s",
			 ctx->plan_path ? ctx->plan_path : "PLAN", t->hash, impl, cfg);
}

/* Launch impl on the fresh q in b->fq[slot] over set `set`'s keys into output pair 0 (poisoned). */
static int launch_fresh(struct vs_device *d, const struct task_data *t, struct bufs *b, int set, int slot,
			const struct mla_decode_impl *impl, const struct mla_decode_config *cfg, char **why)
{
	struct mla_decode_args a;
	int err;

	if ((err = poison(d, b, 0)))
		return err;
	make_args(&a, d, t, b, set, 0);
	a.q = b->fq[slot];
	err = launch_status(impl->launch(&a, cfg), impl->name, cfg->name, why);
	return err > 0 ? 0 : err < 0 ? err : 1;
}

/*
 * Parity on the run-time input set (freshset.h): a q drawn in this run, on set 0's keys; the
 * oracle computes its reference after the launch. Tasks above VS_FRESH_ORACLE_FLOPS skip it here
 * (their timed checks compare with the baseline on fresh inputs). 1 pass, 0 fail, negative error.
 */
static int parity_fresh(const struct measure_ctx *ctx, const struct task_data *t, struct bufs *b,
			const struct mla_decode_impl *impl, const struct mla_decode_config *cfg, char **why)
{
	struct vs_device *d = ctx->device;
	struct task_tol to;
	int ok, err;

	if (!b->fresh.oracle)
		return 1;
	freshset_next(&b->fresh, 0);
	if ((err = d->ops->upload(d, b->fq[0], b->fresh.q, b->fresh.q_elems * sizeof(uint16_t))))
		return err;
	if ((ok = launch_fresh(d, t, b, 0, 0, impl, cfg, why)) != 1)
		return ok;
	if ((ok = guards_intact(d, b, 0, why)) != 1)
		return ok;
	if ((err = download_outputs(d, b, 0)) || (err = freshset_reference(&b->fresh, t, 0)))
		return err;
	to = out_tol(t, 0);
	return compare_outputs(t, b->h_out[0], b->h_lse[0], b->fresh.ref_out, b->fresh.ref_lse, &to, &t->spec.tol_lse,
			       "run-time input set (drawn in this run)", why);
}

/*
 * The buffer sets a task's launches use (kernels/mla_decode.h "prepare"): each input set into output
 * pair 0, set 0 into pair 1 (the second poisoned output), and each set's keys under the fresh q at
 * both of its addresses (run-time parity and the A/B's pairs). Writes up to cap argument sets into
 * out and returns how many (at most 3 * nsets + 1).
 */
static int buffer_sets(struct mla_decode_args *out, int cap, const struct vs_device *d, const struct task_data *t,
		       const struct bufs *b)
{
	int n = 0;

	for (int set = 0; set < t->nsets && n < cap; set++)
		make_args(&out[n++], d, t, b, set, 0);
	if (n < cap)
		make_args(&out[n++], d, t, b, 0, 1);
	for (int slot = 0; slot < 2 && b->fq[slot]; slot++)
		for (int set = 0; set < t->nsets && n < cap; set++) {
			make_args(&out[n], d, t, b, set, 0);
			out[n++].q = b->fq[slot];
		}
	return n;
}

/*
 * Add ms to the setup time of impl's config cfg on this task (measure_impl.setup_ms): shared 1 for
 * its prepare() (every side running a config of that name), 0 for the launches and captures of the
 * side whose config cfg is.
 */
static int setup_add(struct bufs *b, const struct mla_decode_impl *impl, const struct mla_decode_config *cfg,
		     int shared, double ms)
{
	const struct mla_decode_config *at = shared ? NULL : cfg;
	int k = 0;

	while (k < b->nsetup &&
	       (b->setup[k].impl != impl || b->setup[k].at != at || strcmp(b->setup[k].cfg, cfg->name)))
		k++;
	if (k == b->nsetup) {
		void *np = realloc(b->setup, (size_t)(k + 1) * sizeof(*b->setup));

		if (!np)
			return vs_error(VS_ENOMEM, "out of memory");
		b->setup = np;
		b->setup[b->nsetup++] = (struct setup_entry){impl, cfg->name, at, 0};
	}
	b->setup[k].ms += ms;
	return 0;
}

/* A side's setup on this task: the sum over the configs it runs. */
static double setup_of(const struct bufs *b, const struct measure_impl *m)
{
	double ms = 0;

	for (int k = 0; k < b->nsetup; k++)
		for (int c = 0; c < m->nconfigs; c++)
			if (b->setup[k].impl == m->impl &&
			    (b->setup[k].at ? b->setup[k].at == &m->configs[c] :
					      !strcmp(b->setup[k].cfg, m->configs[c].name)))
				ms += b->setup[k].ms;
	return ms;
}

/*
 * The implementation's prepare() for this task and config (kernels/mla_decode.h: JIT, autotune, a
 * graph of its own over the buffers it is given), once per buffer set the task's launches use, all
 * before the config's first launch, outside timing and capture. Returns 1 when ready, 0 when
 * prepare() refused (*why set), negative on a harness error.
 */
static int prepare_config(const struct measure_ctx *ctx, const struct task_data *t, struct bufs *b,
			  const struct mla_decode_impl *impl, const struct mla_decode_config *cfg, char **why)
{
	struct vs_device *d = ctx->device;
	struct mla_decode_args a[3 * VS_TASK_MAX_SETS + 1];
	int rc = MLA_OK, err, n;
	double t0;

	if (!impl->prepare)
		return 1;
	/* Once per task and config, also when both sides are one implementation (an A/A run). */
	for (int k = 0; k < b->nprepared; k++)
		if (b->prepared[k].impl == impl && !strcmp(b->prepared[k].cfg->name, cfg->name))
			return 1;
	n = buffer_sets(a, (int)(sizeof(a) / sizeof(a[0])), d, t, b);
	t0 = now_s();
	for (int k = 0; k < n && rc == MLA_OK; k++)
		rc = impl->prepare(&a[k], cfg);
	if (rc == MLA_OK) {
		struct timed_graph *np = realloc(b->prepared, (size_t)(b->nprepared + 1) * sizeof(*np));

		if (!np)
			return vs_error(VS_ENOMEM, "out of memory");
		b->prepared = np;
		b->prepared[b->nprepared++] = (struct timed_graph){.impl = impl, .cfg = cfg};
		err = d->ops->synchronize(d);
		if (!err)
			err = setup_add(b, impl, cfg, 1, (now_s() - t0) * 1e3);
		return err ? err : 1;
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
 * Returns 1 pass, 0 fail (*detail set), MEASURE_CONFIG_DECLINED when the config's first launch
 * answers MLA_EUNSUPPORTED (it does not run these arguments: *detail says so), negative on a device
 * error.
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
		int rc;

		double t0;

		if ((err = poison(d, b, 0)))
			return err;
		make_args(&a, d, t, b, set, 0);
		t0 = now_s();
		rc = impl->launch(&a, cfg);
		/* the first launch: JIT compiles here */
		if (set == 0 && rc == MLA_OK &&
		    ((err = d->ops->synchronize(d)) || (err = setup_add(b, impl, cfg, 0, (now_s() - t0) * 1e3))))
			return err;
		if (rc == MLA_EUNSUPPORTED && set == 0) {
			free(why);
			*detail = fs_printf("%s %s declines these arguments (its launch answered MLA_EUNSUPPORTED)",
					    impl->name, cfg->name);
			return *detail ? MEASURE_CONFIG_DECLINED : vs_oom();
		}
		err = launch_status(rc, impl->name, cfg->name, &why);
		if (err < 0)
			return err;
		if (err > 0) {
			ok = 0;
			break;
		}
		ok = guards_intact(d, b, 0, &why);
		if (ok == 1)
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
			if ((ok = guards_intact(d, b, 1, &why)) != 1) {
				if (ok < 0)
					return ok;
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
	if (ok == 1) {
		ok = parity_fresh(ctx, t, b, impl, cfg, &why);
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
	pyimpl_phase(-1, 1); /* an autotuner benchmarking now is inside the timed region */
	rc = impl->launch(a, cfg);
	pyimpl_phase(-1, 0);
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

/*
 * The graph of impl's launch of cfg with the arguments a0 (input set `set`, or a fresh q over its keys),
 * captured on first use, after warm-up; one per (implementation, config, set, q).
 */
static int timed_graph_for(void **graph, const struct measure_ctx *ctx, struct bufs *b,
			   const struct mla_decode_impl *impl, const struct mla_decode_config *cfg,
			   const struct mla_decode_args *a0, int set)
{
	struct vs_device *d = ctx->device;
	struct mla_decode_args a = *a0;
	void *g = NULL;
	int err, rc;
	double t0;

	for (int k = 0; k < b->ngraphs; k++)
		if (b->graphs[k].impl == impl && b->graphs[k].cfg == cfg && b->graphs[k].set == set &&
		    b->graphs[k].q == a0->q) {
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
	t0 = now_s();
	if ((err = d->ops->synchronize(d)) || (err = d->ops->graph_begin(d)))
		return err;
	rc = impl->launch(&a, cfg);
	err = d->ops->graph_end(d, &g);
	if (rc != MLA_OK || err) {
		char why[512];

		/* vs_error() writes the buffer vs_last_error() reads: copy it first. */
		snprintf(why, sizeof(why), "%s",
			 err                         ? vs_last_error() :
			 pyimpl_for_impl(impl->name) ? pyimpl_last_error() :
						       "");
		if (g)
			d->ops->graph_free(d, g);
		return vs_error(rc == MLA_EDEVICE && !pyimpl_for_impl(impl->name) ? VS_EDEVICE : VS_EFAIL,
				"%s %s cannot be timed by graph replay: its launch could not be captured (launch "
				"status %d%s%s); emit the plan with --timing launch for an implementation that is not "
				"capture-safe",
				impl->name, cfg->name, rc, *why ? ", " : "", why);
	}
	b->graphs[b->ngraphs++] = (struct timed_graph){impl, cfg, set, a0->q, g};
	/* One untimed replay: the first launch of an instantiated graph uploads it. */
	if ((err = poison(d, b, 0)) || (err = d->ops->graph_launch(d, g)) || (err = d->ops->synchronize(d)))
		return err;
	if ((err = setup_add(b, impl, cfg, 0, (now_s() - t0) * 1e3)))
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
static int timed_sample(const struct measure_ctx *ctx, struct bufs *b, const struct mla_decode_impl *impl,
			const struct mla_decode_config *cfg, const struct mla_decode_args *a, int set, double *ms)
{
	struct vs_device *d = ctx->device;
	void *graph = NULL;
	int err;

	if (strcmp(ctx->plan->protocol.timing, "graph_replay") || !d->ops->graph_begin)
		return timed_launch(d, b, impl, cfg, a, ms);
	if ((err = timed_graph_for(&graph, ctx, b, impl, cfg, a, set)))
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
		ir->capture_detail =
			fs_printf("the launch could not be captured in a graph (launch status %d%s%s)%s%s", rc,
				  err ? ", " : "", err ? vs_last_error() : "",
				  rc != MLA_OK && pyimpl_for_impl(ir->impl->name) ? ": " : "",
				  rc != MLA_OK && pyimpl_for_impl(ir->impl->name) ? pyimpl_last_error() : "");
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
		/* Change every input in place (set 1 into set 0's buffers: new seqlens and block_table, or indices). */
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
		ir->capture_detail = fs_printf("graph replay after changing %s in place: %s",
					       t->spec.topk > 0 ? "indices/topk_length" : "seqlens/block_table",
					       why ? why : "wrong output");
done:
	free(why);
	d->ops->graph_free(d, graph);
	return err;
}

/* Role pi's slots on task i (-1: a task the plan does not hold): its pinned config, else all of them. */
static int impl_result_init(struct measure_impl *ir, const struct mla_decode_impl *impl, const struct plan *p,
			    const struct plan_impl *pi, int i)
{
	memset(ir, 0, sizeof(*ir));
	ir->impl = impl;
	ir->configs = plan_task_configs(p, pi, i, &ir->nconfigs);
	ir->chosen = -1;
	ir->capture = -1;
	ir->config_pass = calloc((size_t)ir->nconfigs + 1, sizeof(int));
	ir->config_detail = calloc((size_t)ir->nconfigs + 1, sizeof(char *));
	ir->tune_ms = calloc((size_t)ir->nconfigs + 1, sizeof(double));
	ir->margin = calloc((size_t)ir->nconfigs + 1, sizeof(double));
	ir->cos_diff = calloc((size_t)ir->nconfigs + 1, sizeof(double));
	if (!ir->config_pass || !ir->config_detail || !ir->tune_ms || !ir->margin || !ir->cos_diff)
		return vs_oom();
	for (int c = 0; c < ir->nconfigs; c++) {
		ir->config_pass[c] = -1;
		ir->margin[c] = ir->cos_diff[c] = -1;
	}
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
	free(ir->margin);
	free(ir->cos_diff);
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
	free(r->py_autotune);
	measure_e2e_release(&r->e2e);
	memset(r, 0, sizeof(*r));
}

static int parity_all(const struct measure_ctx *ctx, const struct task_data *t, struct bufs *b, struct measure_impl *ir,
		      const char *filter)
{
	for (int i = 0; i < ir->nconfigs; i++) {
		char *detail = NULL;
		int ok;

		if (filter && strcmp(filter, ir->configs[i].name))
			continue;
		ir->margin[i] = 0;
		ir->cos_diff[i] = 0;
		cur_margin = &ir->margin[i];
		cur_cos = &ir->cos_diff[i];
		ok = parity_config(ctx, t, b, ir->impl, &ir->configs[i], &detail);
		cur_margin = cur_cos = NULL;
		if (ok < 0)
			return ok;
		ir->config_pass[i] = ok;
		ir->config_detail[i] = detail;
		if (ok == MEASURE_CONFIG_DECLINED)
			say(ctx->log, "    %s %s: does not run this task: %s\n", ir->impl->name, ir->configs[i].name,
			    detail ? detail : "");
		else if (!ok)
			say(ctx->log, "    %s %s: parity FAILED: %s\n", ir->impl->name, ir->configs[i].name,
			    detail ? detail : "");
		else if (!ctx->timing)
			say(ctx->log,
			    "    %s %s: parity pass (%d input set%s, repeat launch bit-identical, inputs "
			    "unchanged)\n",
			    ir->impl->name, ir->configs[i].name, t->nsets, t->nsets == 1 ? "" : "s");
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
	for (int k = 0; k < r->nrefs; k++) { /* a reference named by --impl: its own configs */
		int pass = 0;

		if (!(ctx->check_refs >> k & 1u) || r->refs[k].skip)
			continue;
		any_side = 1;
		for (int i = 0; i < r->refs[k].m.nconfigs; i++)
			pass |= r->refs[k].m.config_pass[i] == 1;
		if (!pass)
			return 0;
	}
	return any_side;
}

/*
 * The config of `other` launched between tuning samples: its chosen one, else its first passing
 * one; -1 when it has none.
 */
static int foreign_config(const struct measure_impl *other)
{
	if (!other)
		return -1;
	if (other->chosen >= 0)
		return other->chosen;
	for (int i = 0; i < other->nconfigs; i++)
		if (other->config_pass[i] == 1)
			return i;
	return -1;
}

/*
 * Phase 3 for one implementation, the tuning pass: time every passing config (tuning_samples
 * each) and choose the fastest median. Before every sample, outside the timed region, one launch of
 * another implementation (`other`: the other side of the A/B, or the candidate for a reference) on
 * the same input set, so that a tuning sample follows a foreign kernel as every A/B sample does.
 * Samples of one config back to back found its code and data warm where the A/B would not: on the
 * H200 a config of hip.flash with a large kernel (bn64-bh16-sp0-w8-st2, fp8) tuned at 17 us and
 * took 25 us in the A/B rounds, and was chosen over one that took 18 us in both (2026-12-01,
 * BENCHMARKS.md).
 */
static int tune(const struct measure_ctx *ctx, const struct task_data *t, struct bufs *b, struct measure_impl *ir,
		const struct measure_impl *other)
{
	struct vs_device *d = ctx->device;
	int n = ctx->plan->protocol.tuning_samples > 0 ? ctx->plan->protocol.tuning_samples : 1;
	double *x = calloc((size_t)n, sizeof(double));
	double best = INFINITY;
	int err = 0, passing = 0, fc = foreign_config(other);

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
			if (fc >= 0) {
				struct mla_decode_args oa;

				make_args(&oa, d, t, b, k % t->nsets, 0);
				if (other->impl->launch(&oa, &other->configs[fc]) != MLA_OK) {
					err = vs_error(VS_EFAIL, "%s %s failed a launch between tuning samples of %s",
						       other->impl->name, other->configs[fc].name, ir->impl->name);
					break;
				}
			}
			make_args(&a, d, t, b, k % t->nsets, 0);
			err = timed_sample(ctx, b, ir->impl, &ir->configs[i], &a, k % t->nsets, &ms);
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
static int tune_both(const struct measure_ctx *ctx, const struct task_data *t, struct bufs *b, struct measure_result *r)
{
	int err, aa;

	if ((err = tune(ctx, t, b, &r->cand, &r->base)))
		return err;
	if (ctx->base == ctx->cand && r->cand.chosen >= 0 &&
	    (aa = config_index(&r->base, r->cand.configs[r->cand.chosen].name)) >= 0 && r->base.config_pass[aa] == 1) {
		r->base.chosen = aa;
		return 0;
	}
	return tune(ctx, t, b, &r->base, &r->cand);
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
	double *t;              /* [max_pairs] */
	int *checks, *failures; /* its timed-output checks */
	char role[24];          /* samples.csv's role column */
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

/*
 * After a checked timed launch of role k (roles[k], its output in pair 0): the guards, then its
 * outputs kept in host scratch k for timed_check_pair(). *guard_ok is 0 after a guard failure
 * (counted against the role).
 */
static int timed_keep(const struct measure_ctx *ctx, struct bufs *b, const struct ab_role *ro, int k, int sample,
		      int *guard_ok)
{
	struct vs_device *d = ctx->device;
	char *why = NULL;
	int ok, err;

	if ((ok = guards_intact(d, b, 0, &why)) < 0)
		return ok;
	if (!ok) {
		(*ro->checks)++;
		(*ro->failures)++;
		say(ctx->log, "    %s: timed output %d failed parity: %s\n", ro->ir->impl->name, sample, why);
		*guard_ok = 0;
	}
	free(why);
	if ((err = d->ops->download(d, b->h_out[k], b->out[0], b->out_bytes)) ||
	    (err = d->ops->download(d, b->h_lse[k], b->lse[0], b->lse_bytes)))
		return err;
	return 0;
}

/*
 * The outputs of checked pair `pair` (host scratch k for roles[k], on the pair's fresh q over set
 * `set`'s keys): every role against the oracle's reference computed now, or, above
 * VS_FRESH_ORACLE_FLOPS, every other role against the baseline's (role 0) with tolerances doubled.
 */
static int timed_check_pair(const struct measure_ctx *ctx, const struct task_data *t, struct bufs *b,
			    const struct ab_role *roles, int n, int set, int pair, const int *guard_ok)
{
	struct task_tol to = out_tol(t, set), tl = t->spec.tol_lse;
	char label[96];
	int err;

	snprintf(label, sizeof(label), "run-time input set of pair %d on set %d's keys", pair, set);
	if (b->fresh.oracle && (err = freshset_reference(&b->fresh, t, set)))
		return err;
	if (!b->fresh.oracle) {
		for (size_t i = 0; i < t->sets[0].out_elems; i++)
			b->h_cmp_out[i] = mla_bf16_to_float(b->h_out[0][i]);
		to.atol *= 2;
		to.rtol *= 2;
		to.cos_tol *= to.cos_tol > 0 ? 4 : 1;
		tl.atol *= 2;
		tl.rtol *= 2;
		tl.cos_tol *= tl.cos_tol > 0 ? 4 : 1;
		snprintf(label, sizeof(label), "run-time input set of pair %d, compared with the baseline", pair);
	}
	for (int k = b->fresh.oracle ? 0 : 1; k < n; k++) {
		char *why = NULL;
		int ok;

		if (!guard_ok[k])
			continue;
		ok = b->fresh.oracle ? compare_outputs(t, b->h_out[k], b->h_lse[k], b->fresh.ref_out, b->fresh.ref_lse,
						       &to, &tl, label, &why) :
				       compare_outputs(t, b->h_out[k], b->h_lse[k], b->h_cmp_out, b->h_lse[0], &to, &tl,
						       label, &why);
		(*roles[k].checks)++;
		if (!ok) {
			(*roles[k].failures)++;
			say(ctx->log, "    %s: timed output of pair %d failed parity: %s\n", roles[k].ir->impl->name,
			    pair, why ? why : "");
		}
		free(why);
	}
	return 0;
}

/* The A/B: alternating timed samples of the chosen configs until the stop rule says so. */
static int ab(const struct measure_ctx *ctx, const struct task_data *t, struct bufs *b, struct measure_result *r)
{
	struct vs_device *d = ctx->device;
	const struct plan_protocol *pr = &ctx->plan->protocol;
	struct stats_stop_rule rule = {pr->rel_halfwidth, pr->min_pairs, pr->max_pairs, pr->max_seconds, 500, pr->seed};
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
			err = timed_launch(d, b, roles[k].ir->impl, &roles[k].ir->configs[roles[k].ir->chosen], &a,
					   &ms);
		}
	}
	if (err)
		return err;
	r->sm_mhz_begin = read_clock(ctx, &r->throttle_begin);
	t0 = now_s();
	for (int pair = 0; pair < pr->max_pairs; pair++) {
		int set = pair % t->nsets, slot = pair & 1;

		/* Every role's output of a checked pair is checked: the roles are checked alike. */
		int checked = freshset_checked(&b->fresh, pair, pr->check_every);
		int guard_ok[2 + VS_PLAN_MAX_REFERENCES];

		for (int k = 0; k < n; k++)
			guard_ok[k] = 1;

		/* A fresh q per pair, at alternating addresses, written outside the timed region. */
		freshset_next(&b->fresh, 1 + (uint64_t)pair);
		if ((err = d->ops->upload(d, b->fq[slot], b->fresh.q, b->fresh.q_elems * sizeof(uint16_t))))
			return err;
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

			make_args(&a, d, t, b, set, 0);
			a.q = b->fq[slot];
			err = timed_sample(ctx, b, ir->impl, &ir->configs[ir->chosen], &a, set, &ms);
			if (err)
				return err;
			ro->t[pair] = ms;
			if (checked && (err = timed_keep(ctx, b, ro, (int)(ro - roles), sample, &guard_ok[ro - roles])))
				return err;
			if (ctx->samples)
				fprintf(ctx->samples, "%s,%d,%d,%d,%s,%s,%.17g,%d\n", t->hash, set, pair, j, ro->role,
					ir->configs[ir->chosen].name, ms, checked);
			sample++;
		}
		if (checked && (err = timed_check_pair(ctx, t, b, roles, n, set, pair, guard_ok)))
			return err;
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

/* ---- the e2e stage (docs/DESIGN.md "End to end") --------------------------------------------- */

double measure_e2e_pct(double ratio)
{
	return ratio > 0 ? 100.0 * (1.0 - 1.0 / ratio) : NAN;
}

/* The e2e stage's buffers and graphs on one task. */
struct e2e_bufs {
	void *step_out; /* device: the step output (bf16), the harness's */
	size_t elems;
	uint16_t *h_base, *h_cand, *h_tmp; /* host copies of the step outputs */
	float *h_ref;                      /* the baseline's step output as float, or the module's reference */
	float *h_mod_ref;                  /* the module's reference() */
	void *graph[2];                    /* baseline, candidate: pre + core + post */
	uint64_t seed;
};

static void e2e_bufs_release(struct vs_device *d, struct e2e_bufs *e)
{
	d->ops->free(d, e->step_out);
	for (int k = 0; k < 2; k++)
		if (e->graph[k])
			d->ops->graph_free(d, e->graph[k]);
	free(e->h_base);
	free(e->h_cand);
	free(e->h_tmp);
	free(e->h_ref);
	free(e->h_mod_ref);
	memset(e, 0, sizeof(*e));
}

/* A step call's status as a harness error: the step module's line (VS_EFAIL), or VS_EDEVICE. */
static int e2e_status(int rc, const char *what)
{
	if (rc == MLA_OK)
		return 0;
	return vs_error(rc == MLA_ENODEVICE ? VS_EUNSUPPORTED : VS_EFAIL, "e2e step %s: %s", what,
			*pyimpl_last_error() ? pyimpl_last_error() : "failed");
}

/* pre + the core's launch + post of side ir on a (the e2e buffers e), enqueued. */
static int e2e_enqueue(const struct measure_impl *ir, const struct mla_decode_args *a, struct e2e_bufs *e)
{
	const struct mla_decode_config *cfg = &ir->configs[ir->chosen];
	char *why = NULL;
	int err;

	if ((err = e2e_status(pyimpl_step_call(NULL, "pre", a, e->step_out, e->elems, e->seed), "pre")))
		return err;
	err = launch_status(ir->impl->launch(a, cfg), ir->impl->name, cfg->name, &why);
	if (err > 0) {
		err = vs_error(VS_EFAIL, "e2e: the core's launch: %s", why);
		free(why);
	}
	if (err)
		return err;
	return e2e_status(pyimpl_step_call(NULL, "post", a, e->step_out, e->elems, e->seed), "post");
}

/* Side k's step as one graph (GPU), captured once, replayed once untimed. */
static int e2e_capture(const struct measure_ctx *ctx, const struct measure_impl *ir, const struct mla_decode_args *a,
		       struct e2e_bufs *e, int k)
{
	struct vs_device *d = ctx->device;
	void *g = NULL;
	int err, err2;

	if (!d->ops->graph_begin)
		return 0;
	if ((err = d->ops->synchronize(d)) || (err = d->ops->graph_begin(d)))
		return err;
	err = e2e_enqueue(ir, a, e);
	err2 = d->ops->graph_end(d, &g);
	if (err || err2) {
		char why[512];

		snprintf(why, sizeof(why), "%s", vs_last_error());
		if (g)
			d->ops->graph_free(d, g);
		return vs_error(err2 ? VS_EDEVICE : VS_EFAIL,
				"e2e: the step with %s as the core could not be captured in one graph: %s",
				ir->impl->name, why);
	}
	e->graph[k] = g;
	if ((err = d->ops->graph_launch(d, g)) || (err = d->ops->synchronize(d)))
		return err;
	return 0;
}

/* One step of side k: step_out and the core's outputs poisoned, the LLC flushed, then timed. */
static int e2e_sample(const struct measure_ctx *ctx, struct bufs *b, const struct measure_impl *ir,
		      const struct mla_decode_args *a, struct e2e_bufs *e, int k, double *ms)
{
	struct vs_device *d = ctx->device;
	int err;

	if ((err = poison(d, b, 0)) || (err = d->ops->fill(d, e->step_out, 0xff, e->elems * sizeof(uint16_t))) ||
	    (err = d->ops->flush_llc(d)) || (err = d->ops->timer_begin(d)))
		return err;
	err = e->graph[k] ? d->ops->graph_launch(d, e->graph[k]) : e2e_enqueue(ir, a, e);
	if (err) {
		d->ops->synchronize(d);
		return err;
	}
	return d->ops->timer_end(d, ms);
}

/* The step output's tolerances against the baseline's step (and against the module's reference). */
static struct task_tol e2e_tol(const float *ref, size_t n, int against_reference)
{
	struct task_tol tol = {0};
	double ss = 0;

	for (size_t i = 0; i < n; i++)
		ss += isfinite(ref[i]) ? (double)ref[i] * ref[i] : 0;
	/*
	 * The step's output is a bf16 projection of the core's output: the cores' own differences
	 * (within the isolated tolerances, cos_diff <= 5e-6) pass through W_UV and o_proj; bf16 rounding
	 * of the output adds 2^-9 relative. Against the module's float32 reference the step's bf16
	 * intermediates (q, the cache row, the core's out, the W_UV product) add a few 2^-9 more.
	 */
	tol.atol = (against_reference ? 0.1 : 0.05) * sqrt(ss / (double)(n ? n : 1));
	tol.rtol = against_reference ? 0.1 : 0.05;
	tol.cos_tol = against_reference ? 1e-3 : 2e-4;
	return tol;
}

/* The input set the steps run on: the first with a sequence to decode (seqlens > 0), or -1. */
static int e2e_set(const struct task_data *t)
{
	for (int s = 0; s < t->nsets; s++)
		for (int i = 0; i < t->spec.batch; i++)
			if (t->sets[s].seqlens[i] > 0)
				return s;
	return -1;
}

/* Compare step output h (bf16) with expected; 1 pass, 0 fail with *detail. */
static int e2e_compare(const uint16_t *h, const float *expected, size_t n, int batch, const struct task_tol *tol,
		       const char *label, double *cos_diff, char **detail)
{
	static const char *const names[] = {"b", "d"};
	struct parity_report rep;
	int dims[2] = {batch, (int)(n / (size_t)(batch > 0 ? batch : 1))};
	char line[512];

	parity_compare_bf16(&rep, h, expected, n, tol, dims, 2);
	*cos_diff = rep.cos_diff;
	if (rep.pass)
		return 1;
	parity_describe(line, sizeof(line), "step output", &rep, names, 2);
	*detail = fs_printf("%s: %s", label, line);
	return 0;
}

static int e2e_download(struct vs_device *d, struct e2e_bufs *e, uint16_t *h)
{
	int err;

	if ((err = d->ops->synchronize(d)))
		return err;
	return d->ops->download(d, h, e->step_out, e->elems * sizeof(uint16_t));
}

/*
 * The e2e stage of one task (after its isolated A/B): the step prepared, each side's step captured
 * and checked, then rounds of baseline, candidate, control until the stop rule. A step module's
 * error ends the stage with r->e2e.error (the task's isolated outcome stands); a device error is
 * the task's.
 */
static int e2e_stage(const struct measure_ctx *ctx, const struct task_data *t, struct bufs *b, struct measure_result *r)
{
	struct vs_device *d = ctx->device;
	const struct plan_e2e *pe = &ctx->plan->e2e;
	struct measure_e2e *m = &r->e2e;
	struct stats_stop_rule rule = {pe->rel_halfwidth, pe->min_pairs, pe->max_pairs,
				       pe->max_seconds,   500,           ctx->plan->protocol.seed};
	struct measure_impl *side[2] = {&r->base, &r->cand};
	struct mla_decode_args a;
	struct e2e_bufs e;
	struct task_tol tol;
	char *why = NULL;
	double t0;
	int err = 0, rc;

	memset(&e, 0, sizeof(e));
	if (r->base.chosen < 0 || r->cand.chosen < 0 || !r->parity_pass || r->base.capture == 0 ||
	    r->cand.capture == 0) {
		m->skipped = fs_printf("the isolated A/B did not pass parity and the capture gate on both sides");
		return 0;
	}
	if ((m->set = e2e_set(t)) < 0) {
		m->skipped = fs_printf("no input set has a sequence to decode (every seqlens is 0)");
		return 0;
	}
	e.seed = t->spec.seed;
	make_args(&a, d, t, b, m->set, 0);
	rc = pyimpl_step_elems(&e.elems, &a);
	if (rc == MLA_EUNSUPPORTED) {
		m->skipped = fs_printf("%s", pyimpl_last_error());
		return 0;
	}
	if ((err = e2e_status(rc, "output_shape")))
		goto stage_failed;
	m->out_elems = e.elems;
	m->t_base = calloc((size_t)pe->max_pairs + 1, sizeof(double));
	m->t_cand = calloc((size_t)pe->max_pairs + 1, sizeof(double));
	m->t_ctrl = calloc((size_t)pe->max_pairs + 1, sizeof(double));
	e.h_base = malloc(e.elems * sizeof(uint16_t) + 1);
	e.h_cand = malloc(e.elems * sizeof(uint16_t) + 1);
	e.h_tmp = malloc(e.elems * sizeof(uint16_t) + 1);
	e.h_ref = malloc(e.elems * sizeof(float) + 1);
	e.h_mod_ref = malloc(e.elems * sizeof(float) + 1);
	if (!m->t_base || !m->t_cand || !m->t_ctrl || !e.h_base || !e.h_cand || !e.h_tmp || !e.h_ref || !e.h_mod_ref) {
		err = vs_oom();
		goto done;
	}
	if ((err = d->ops->alloc(d, &e.step_out, e.elems * sizeof(uint16_t))))
		goto done;
	pyimpl_step_memory(1);
	if ((err = e2e_status(pyimpl_step_call(&m->step_bytes, "prepare", &a, e.step_out, e.elems, e.seed), "prepare")))
		goto stage_failed;
	/* The module's reference reads the inputs as they are before pre() wrote into them. */
	if ((rc = pyimpl_step_reference(e.h_mod_ref, &a, e.step_out, e.elems, e.seed)) < 0) {
		err = e2e_status(rc, "reference");
		goto stage_failed;
	}
	m->ref_checked = rc == 1;
	for (int k = 0; k < 2; k++) {
		pyimpl_step_memory(1);
		if ((err = d->ops->fill(d, e.step_out, 0xff, e.elems * sizeof(uint16_t))))
			goto done;
		if ((err = e2e_capture(ctx, side[k], &a, &e, k)))
			goto stage_failed;
		if (!e.graph[k] && (err = e2e_enqueue(side[k], &a, &e)))
			goto stage_failed;
		if ((err = e2e_download(d, &e, k ? e.h_cand : e.h_base)))
			goto done;
		*(k ? &m->peak_cand : &m->peak_base) = pyimpl_step_memory(1);
	}
	/* Parity: the baseline's step against the module's reference, the candidate's against the baseline's. */
	m->parity = 1;
	if (m->ref_checked) {
		tol = e2e_tol(e.h_mod_ref, e.elems, 1);
		m->parity = e2e_compare(e.h_base, e.h_mod_ref, e.elems, t->spec.batch, &tol,
					"the baseline's step against the step module's reference()", &m->ref_cos_diff,
					&why);
	}
	for (size_t i = 0; i < e.elems; i++)
		e.h_ref[i] = mla_bf16_to_float(e.h_base[i]);
	if (m->parity == 1) {
		tol = e2e_tol(e.h_ref, e.elems, 0);
		m->parity = e2e_compare(e.h_cand, e.h_ref, e.elems, t->spec.batch, &tol,
					"the candidate's step against the baseline's", &m->cos_diff, &why);
	}
	if (m->parity != 1) {
		m->parity_detail = why;
		why = NULL;
		say(ctx->log, "    e2e: parity FAILED: %s\n", m->parity_detail);
		goto done;
	}
	/* The rounds: baseline, candidate, control (the baseline's step again); reversed every round. */
	t0 = now_s();
	for (int pair = 0; pair < pe->max_pairs; pair++) {
		static const char *const roles[3] = {"e2e_baseline", "e2e_candidate", "e2e_control"};
		double *tt[3] = {m->t_base, m->t_cand, m->t_ctrl};

		for (int j = 0; j < 3; j++) {
			int k = (pair & 1) ? 2 - j : j, s = k == 2 ? 0 : k;
			double ms;

			if ((err = e2e_sample(ctx, b, side[s], &a, &e, s, &ms)))
				goto stage_failed;
			tt[k][pair] = ms;
			if (ctx->samples)
				fprintf(ctx->samples, "%s,%d,%d,%d,%s,%s,%.17g,0\n", t->hash, m->set, pair, j, roles[k],
					side[s]->configs[side[s]->chosen].name, ms);
		}
		m->npairs = pair + 1;
		m->stop_reason = stats_should_stop(&rule, m->t_base, m->t_cand, m->npairs, now_s() - t0);
		if (m->stop_reason != STATS_CONTINUE)
			break;
	}
	if (m->stop_reason == STATS_CONTINUE)
		m->stop_reason = STATS_STOP_MAX_PAIRS;
	m->ran = m->npairs > 0;
	if ((err = e2e_finish(m, ctx->plan)))
		goto done;
	say(ctx->log,
	    "    e2e %s: step %.4f ms (%s) vs %.4f ms (%s), control %.4f ms, %d pairs; e2e_pct %.2f%% [%.2f, %.2f], "
	    "control %.2f%% [%.2f, %.2f]; attention share %.0f%% / %.0f%%; the step keeps %.1f MiB\n",
	    ctx->plan->e2e.step_name, m->step_base.median, r->base.impl->name, m->step_cand.median, r->cand.impl->name,
	    m->step_ctrl.median, m->npairs, measure_e2e_pct(m->ratio.estimate), measure_e2e_pct(m->ratio.lo),
	    measure_e2e_pct(m->ratio.hi), measure_e2e_pct(m->ctrl_ratio.estimate), measure_e2e_pct(m->ctrl_ratio.lo),
	    measure_e2e_pct(m->ctrl_ratio.hi), 100.0 * r->base.timing.median / m->step_base.median,
	    100.0 * r->cand.timing.median / m->step_cand.median, (double)m->step_bytes / (1 << 20));
	/* The last sample of a round ending with the control: the step is deterministic. */
	{
		double ms;

		if ((err = e2e_sample(ctx, b, side[0], &a, &e, 0, &ms)) || (err = e2e_download(d, &e, e.h_tmp)))
			goto stage_failed;
	}
	if (memcmp(e.h_tmp, e.h_base, e.elems * sizeof(uint16_t))) {
		m->parity = 0;
		m->parity_detail = fs_printf("the baseline's step gave different bits on another replay (the step or "
					     "the core is not deterministic)");
		say(ctx->log, "    e2e: parity FAILED: %s\n", m->parity_detail);
	}
	goto done;
stage_failed:
	if (err == VS_EDEVICE)
		goto done;
	m->error = strdup(vs_last_error());
	say(ctx->log, "    e2e: %s\n", m->error);
	m->npairs = 0;
	m->ran = 0;
	err = 0;
done:
	free(why);
	e2e_bufs_release(d, &e);
	if (err == VS_EDEVICE) {
		/*
		 * A fault in the stage (the worker's device is unusable from here; the worker ends with the
		 * task) fails the e2e stage, not the isolated A/B measured before it.
		 */
		m->error = fs_printf("device fault in the e2e stage: %s", vs_last_error());
		say(ctx->log, "    e2e: %s\n", m->error);
		m->npairs = 0;
		m->ran = 0;
		return 0;
	}
	/* pre() wrote q and one cache row of the set: restore them for whatever runs next. */
	if (!err && m->set >= 0)
		err = upload_set(d, t, b, m->set, m->set);
	return err;
}

/* Times as text in %.17g, so that the parent's numbers are the worker's, bit for bit. */
struct cJSON *measure_doubles_json(const double *x, int n)
{
	char *buf = malloc((size_t)n * 26 + 1), *p = buf;
	cJSON *j;

	if (!buf)
		return NULL;
	*p = '\0';
	for (int i = 0; i < n; i++)
		p += sprintf(p, "%s%.17g", i ? " " : "", x[i]);
	j = cJSON_CreateString(buf);
	free(buf);
	return j;
}

double *measure_doubles_parse(const char *s, int n)
{
	double *x = calloc((size_t)n + 1, sizeof(double));
	char *end;

	for (int i = 0; x && s && i < n; i++) {
		x[i] = strtod(s, &end);
		s = end;
	}
	return x;
}

cJSON *measure_e2e_to_msg(const struct measure_result *r)
{
	const struct measure_e2e *m = &r->e2e;
	cJSON *j = cJSON_CreateObject();

	if (!j)
		return NULL;
	cJSON_AddBoolToObject(j, "planned", m->planned);
	if (m->skipped)
		cJSON_AddStringToObject(j, "skipped", m->skipped);
	if (m->error)
		cJSON_AddStringToObject(j, "error", m->error);
	if (m->parity_detail)
		cJSON_AddStringToObject(j, "parity_detail", m->parity_detail);
	cJSON_AddNumberToObject(j, "npairs", m->npairs);
	cJSON_AddNumberToObject(j, "stop_reason", m->stop_reason);
	cJSON_AddNumberToObject(j, "set", m->set);
	cJSON_AddNumberToObject(j, "parity", m->parity);
	cJSON_AddNumberToObject(j, "cos_diff", m->cos_diff);
	cJSON_AddNumberToObject(j, "ref_checked", m->ref_checked);
	cJSON_AddNumberToObject(j, "ref_cos_diff", m->ref_cos_diff);
	cJSON_AddNumberToObject(j, "step_bytes", (double)m->step_bytes);
	cJSON_AddNumberToObject(j, "peak_base", (double)m->peak_base);
	cJSON_AddNumberToObject(j, "peak_cand", (double)m->peak_cand);
	cJSON_AddNumberToObject(j, "out_elems", (double)m->out_elems);
	if (m->npairs > 0) {
		cJSON_AddItemToObject(j, "t_base", measure_doubles_json(m->t_base, m->npairs));
		cJSON_AddItemToObject(j, "t_cand", measure_doubles_json(m->t_cand, m->npairs));
		cJSON_AddItemToObject(j, "t_ctrl", measure_doubles_json(m->t_ctrl, m->npairs));
	}
	return j;
}

static char *msg_str(const cJSON *j, const char *key)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(j, key));

	return s ? strdup(s) : NULL;
}

static double msg_num(const cJSON *j, const char *key)
{
	return cJSON_GetNumberValue(cJSON_GetObjectItem(j, key));
}

void measure_e2e_from_msg(struct measure_result *r, const cJSON *j)
{
	struct measure_e2e *m = &r->e2e;

	if (!cJSON_IsObject(j))
		return;
	m->planned = cJSON_IsTrue(cJSON_GetObjectItem(j, "planned"));
	m->skipped = msg_str(j, "skipped");
	m->error = msg_str(j, "error");
	m->parity_detail = msg_str(j, "parity_detail");
	m->npairs = (int)msg_num(j, "npairs");
	m->stop_reason = (int)msg_num(j, "stop_reason");
	m->set = (int)msg_num(j, "set");
	m->parity = (int)msg_num(j, "parity");
	m->cos_diff = msg_num(j, "cos_diff");
	m->ref_checked = (int)msg_num(j, "ref_checked");
	m->ref_cos_diff = msg_num(j, "ref_cos_diff");
	m->step_bytes = (long long)msg_num(j, "step_bytes");
	m->peak_base = (long long)msg_num(j, "peak_base");
	m->peak_cand = (long long)msg_num(j, "peak_cand");
	m->out_elems = (size_t)msg_num(j, "out_elems");
	if (m->npairs > 0) {
		m->t_base = measure_doubles_parse(cJSON_GetStringValue(cJSON_GetObjectItem(j, "t_base")), m->npairs);
		m->t_cand = measure_doubles_parse(cJSON_GetStringValue(cJSON_GetObjectItem(j, "t_cand")), m->npairs);
		m->t_ctrl = measure_doubles_parse(cJSON_GetStringValue(cJSON_GetObjectItem(j, "t_ctrl")), m->npairs);
		m->ran = m->t_base && m->t_cand && m->t_ctrl;
	}
}

/* The e2e summaries and CIs from its samples (measure_result_finish()). */
static int e2e_finish(struct measure_e2e *m, const struct plan *p)
{
	int err;

	if (m->npairs < 1 || !m->t_base || !m->t_cand || !m->t_ctrl)
		return 0;
	stats_summarize(&m->step_base, m->t_base, m->npairs);
	stats_summarize(&m->step_cand, m->t_cand, m->npairs);
	stats_summarize(&m->step_ctrl, m->t_ctrl, m->npairs);
	if ((err = stats_speedup(&m->ratio, m->t_base, m->t_cand, m->npairs, p->protocol.resamples, p->protocol.seed)))
		return err;
	return stats_speedup(&m->ctrl_ratio, m->t_base, m->t_ctrl, m->npairs, p->protocol.resamples, p->protocol.seed);
}

void measure_e2e_release(struct measure_e2e *m)
{
	free(m->skipped);
	free(m->error);
	free(m->parity_detail);
	free(m->t_base);
	free(m->t_cand);
	free(m->t_ctrl);
	memset(m, 0, sizeof(*m));
}

int measure_result_finish(struct measure_result *r, const struct plan *p)
{
	int err;

	if ((err = e2e_finish(&r->e2e, p)))
		return err;
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
		if (rf->has_ratio && (err = stats_speedup(&rf->ratio, rf->t, r->t_cand, r->npairs,
							  p->protocol.resamples, p->protocol.seed)))
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
		if ((err = impl_result_init(&r->refs[k].m, impl, p, &p->refs[k].impl, i)))
			return err;
		r->refs[k].skip = plan_reference_skip(p, k, i);
	}
	return 0;
}

int measure_result_init(struct measure_result *r, const struct measure_ctx *ctx, const struct task_spec *spec,
			const char *hash)
{
	const int i = plan_task_index(ctx->plan, hash);
	int err;

	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s", spec->name);
	snprintf(r->hash, sizeof(r->hash), "%s", hash);
	r->bytes = vs_op_of(spec)->bytes(spec);
	r->flops = vs_op_of(spec)->flops(spec);
	r->sm_mhz_begin = r->sm_mhz_end = -1;
	r->e2e.set = -1;
	r->e2e.parity = -1;
	r->e2e.peak_base = r->e2e.peak_cand = -1;
	if (ctx->plan->e2e.enabled && ctx->timing)
		r->e2e.planned = i >= 0 && ctx->plan->e2e.tasks[i];
	if ((err = impl_result_init(&r->base, ctx->base, ctx->plan, &ctx->plan->baseline, i)) ||
	    (err = impl_result_init(&r->cand, ctx->cand, ctx->plan, &ctx->plan->candidate, i)))
		return err;
	return refs_init(r, ctx->plan, hash);
}

int measure_task(struct measure_result *r, const struct measure_ctx *ctx, const struct task_data *t)
{
	struct vs_device *d = ctx->device;
	struct bufs b;
	int err;

	memset(&b, 0, sizeof(b));
	pyimpl_phase(PYIMPL_PHASE_PARITY, 0); /* what an autotuner did, by phase (pyimpl.h) */
	if ((err = measure_result_init(r, ctx, &t->spec, t->hash)))
		goto done;
	if ((err = bufs_alloc(d, ctx, t, &b)))
		goto done;
	/* --impl BASELINE --config C (a reproduce line) checks that one baseline config */
	if (ctx->check_base && (err = parity_all(ctx, t, &b, &r->base, ctx->check_cand ? NULL : ctx->config_filter)))
		goto done;
	if (!ctx->timing) {
		if (!ctx->check_base)
			say(ctx->log, "    %s (baseline): not checked (--impl %s)\n", r->base.impl->name,
			    r->cand.impl->name);
		if (!ctx->check_cand)
			say(ctx->log, "    %s (candidate): not checked (--impl %s)\n", r->cand.impl->name,
			    r->base.impl->name);
	}
	if (ctx->check_cand && (err = parity_all(ctx, t, &b, &r->cand, ctx->config_filter)))
		goto done;
	for (int k = 0; k < r->nrefs; k++)
		if (!r->refs[k].skip && (ctx->timing || (ctx->check_refs >> k & 1u)) &&
		    (err = parity_all(ctx, t, &b, &r->refs[k].m, ctx->timing ? NULL : ctx->config_filter)))
			goto done;
	if (!ctx->timing)
		goto done;
	/*
	 * A side forced to one config (IMPL@CONFIG) whose launch declined the task does not run it:
	 * the task is unsupported there, skipped as a task the plan lists as unsupported is, not failed.
	 */
	for (int k = 0; k < 2 && !r->skipped; k++) {
		const struct plan_impl *pi = k ? &ctx->plan->candidate : &ctx->plan->baseline;
		const struct measure_impl *ir = k ? &r->cand : &r->base;

		if (pi->forced && ir->nconfigs == 1 && ir->config_pass[0] == MEASURE_CONFIG_DECLINED &&
		    !(r->skipped = fs_printf("%s %s@%s does not run it: %s", k ? "candidate" : "baseline", pi->name,
					     pi->forced, ir->config_detail[0] ? ir->config_detail[0] : "declined")))
			err = vs_oom();
	}
	if (err || r->skipped)
		goto done;
	pyimpl_phase(PYIMPL_PHASE_TUNING, -1);
	if ((err = tune_both(ctx, t, &b, r)))
		goto done;
	for (int k = 0; k < r->nrefs; k++)
		if (!r->refs[k].skip && (err = tune(ctx, t, &b, &r->refs[k].m, &r->cand)))
			goto done;
	if (r->base.chosen < 0 || r->cand.chosen < 0) {
		say(ctx->log, "    no passing config for %s: task not timed\n",
		    r->base.chosen < 0 ? r->base.impl->name : r->cand.impl->name);
		goto done;
	}
	pyimpl_phase(PYIMPL_PHASE_CAPTURE, -1);
	if (ctx->plan->capture_required &&
	    ((err = capture_gate(ctx, t, &b, &r->base)) || (err = capture_gate(ctx, t, &b, &r->cand))))
		goto done;
	for (int k = 0; k < r->nrefs && ctx->plan->capture_required; k++)
		if (r->refs[k].m.chosen >= 0 && (err = capture_gate(ctx, t, &b, &r->refs[k].m)))
			goto done;
	pyimpl_phase(PYIMPL_PHASE_AB, -1);
	if ((err = ab(ctx, t, &b, r)))
		goto done;
	pyimpl_phase(PYIMPL_PHASE_E2E, -1);
	if (r->e2e.planned && (err = e2e_stage(ctx, t, &b, r)))
		goto done;
	r->complete = 1;
done:
	pyimpl_phase(PYIMPL_PHASE_NONE, 0);
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
	r->base.setup_ms = setup_of(&b, &r->base);
	r->cand.setup_ms = setup_of(&b, &r->cand);
	for (int k = 0; k < r->nrefs; k++)
		r->refs[k].m.setup_ms = setup_of(&b, &r->refs[k].m);
	if (d->ops)
		bufs_release(d, &b);
	return err;
}
