/*
 * check_runner.c - the runner's protocol on the CPU with an injected device whose clock is
 * deterministic: every launch of a test implementation advances a virtual clock by a cost drawn
 * from a seeded generator, and the device's timer reads that clock. The A/B statistics, the stop
 * rule, config tuning, parity failure details, and the anti-cheat checks (stale buffers, writing
 * inputs, skipping repeated work, non-determinism, capture-unsafe launches) are checked against
 * implementations written to cheat in exactly those ways.
 */
#include "testutil.h"

#include "cpu/cpu_impls.h"
#include "device.h"
#include "evaldir.h"
#include "fsutil.h"
#include "mla_decode.h"
#include "mla_numeric.h"
#include "mla_decode_ref.h"
#include "plan.h"
#include "measure.h"
#include "runner.h"
#include "stats.h"
#include "task.h"
#include "op.h"
#include "vs_error.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the injected device: CPU memory, virtual clock, recorded "graphs" ---------------------- */

struct fake_stream {
	int capturing;
	/* the captured launch */
	const struct mla_decode_impl *impl;
	struct mla_decode_args args;
	struct mla_decode_config cfg;
	int32_t snapshot_seqlens[64]; /* what a capture-unsafe launch baked in */
	int32_t snapshot_block_table[1024];
};

static double virtual_ms;
static uint64_t noise_state;
static struct fake_stream stream;
static const struct vs_device_ops *cpu_ops;

static double noise(double rel)
{
	/* uniform in [-rel, rel] */
	uint64_t z = stats_splitmix64(&noise_state);

	return rel * (2.0 * ((double)(z >> 11) / 9007199254740992.0) - 1.0);
}

static double t0;

static int fake_timer_begin(struct vs_device *d)
{
	(void)d;
	t0 = virtual_ms;
	return 0;
}

static int fake_timer_end(struct vs_device *d, double *ms)
{
	(void)d;
	*ms = virtual_ms - t0;
	return 0;
}

static int fake_graph_begin(struct vs_device *d)
{
	(void)d;
	stream.capturing = 1;
	stream.impl = NULL;
	return 0;
}

static int fake_graph_end(struct vs_device *d, void **graph)
{
	(void)d;
	stream.capturing = 0;
	*graph = stream.impl ? &stream : NULL;
	return stream.impl ? 0 : VS_EDEVICE;
}

static int fake_graph_launch(struct vs_device *d, void *graph)
{
	struct fake_stream *s = graph;

	(void)d;
	return s->impl->launch(&s->args, &s->cfg) == MLA_OK ? 0 : VS_EDEVICE;
}

static void fake_graph_free(struct vs_device *d, void *graph)
{
	(void)d;
	(void)graph;
}

/* Graphs that outlive the next capture (timing "graph_replay" keeps one per impl, config and set). */
static int in_replay;
static int graph_end_copy(struct vs_device *d, void **graph)
{
	struct fake_stream *g;

	(void)d;
	stream.capturing = 0;
	if (!stream.impl)
		return vs_error(VS_EDEVICE, "nothing was captured");
	g = malloc(sizeof(*g));
	ck_assert_ptr_nonnull(g);
	*g = stream;
	*graph = g;
	return 0;
}

static int graph_launch_copy(struct vs_device *d, void *graph)
{
	int rc;

	in_replay = 1;
	rc = fake_graph_launch(d, graph);
	in_replay = 0;
	return rc;
}

static void graph_free_copy(struct vs_device *d, void *graph)
{
	(void)d;
	free(graph);
}

static struct vs_device_ops fake_ops;

static void open_fake_device(struct vs_device *d, int with_graphs)
{
	ck_assert_int_eq(vs_device_open_cpu(d), 0);
	cpu_ops = d->ops;
	fake_ops = *d->ops;
	fake_ops.timer_begin = fake_timer_begin;
	fake_ops.timer_end = fake_timer_end;
	if (with_graphs) {
		fake_ops.graph_begin = fake_graph_begin;
		fake_ops.graph_end = fake_graph_end;
		fake_ops.graph_launch = fake_graph_launch;
		fake_ops.graph_free = fake_graph_free;
	}
	d->ops = &fake_ops;
	d->stream = &stream;
	d->info.compute_units = 2;
	memset(&stream, 0, sizeof(stream));
	virtual_ms = 0;
}

/* ---- test implementations ------------------------------------------------------------------ */

static const struct mla_decode_config naive_cfg = {"default", 0, 0, 0, 0, 0};

static int no_configs(const char *arch, struct mla_decode_config *out, int cap)
{
	(void)arch;
	(void)out;
	(void)cap;
	return 0;
}

static size_t no_ws(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	(void)a;
	(void)c;
	return 0;
}

/* A launch during capture is recorded instead of run (the fake graph replays it). */
static int captured(const struct mla_decode_impl *impl, const struct mla_decode_args *a,
		    const struct mla_decode_config *c)
{
	struct fake_stream *s = a->stream;

	if (!s || !s->capturing)
		return 0;
	s->impl = impl;
	s->args = *a;
	s->cfg = *c;
	return 1;
}

/* Honest implementation whose cost is cfg->block_n ms (+-1% noise): block_n 0 costs 2 ms. */
static int honest_launch(const struct mla_decode_args *a, const struct mla_decode_config *c);
static const struct mla_decode_impl honest = {MLA_DECODE_ABI_VERSION, "test.honest", "cpu", "", no_configs, no_ws,
					      honest_launch, NULL, NULL};

/* The last test launch that ran (not a capture): implementation and config name. */
static const struct mla_decode_impl *last_impl;
static char last_cfg[48];

static void ran(const struct mla_decode_impl *impl, const struct mla_decode_config *c)
{
	last_impl = impl;
	snprintf(last_cfg, sizeof(last_cfg), "%s", c->name);
}

static int honest_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	if (captured(&honest, a, c))
		return MLA_OK;
	ran(&honest, c);
	virtual_ms += (c->block_n ? c->block_n : 2.0) * (1.0 + noise(0.01));
	return mla_cpu_naive.launch(a, &naive_cfg);
}

/*
 * Correct, and its config with num_splits 1 costs block_n ms cold but a quarter of that when the
 * launch before it was the same config (a kernel whose code and data stay warm between samples of
 * itself alone); other configs cost block_n ms. The A/B puts the other side between its samples.
 */
static int warm_launch(const struct mla_decode_args *a, const struct mla_decode_config *c);
static const struct mla_decode_impl warm_sensitive = {MLA_DECODE_ABI_VERSION, "test.warm_sensitive", "cpu", "",
						      no_configs, no_ws, warm_launch, NULL, NULL};

static int warm_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	int warm;

	if (captured(&warm_sensitive, a, c))
		return MLA_OK;
	warm = c->num_splits == 1 && last_impl == &warm_sensitive && !strcmp(last_cfg, c->name);
	ran(&warm_sensitive, c);
	virtual_ms += c->block_n * (warm ? 0.25 : 1.0) * (1.0 + noise(0.01));
	return mla_cpu_naive.launch(a, &naive_cfg);
}

/* 2 ms of kernel, plus 40 ms of host time per launch (a Python launch); a graph replay has no host part. */
static int host_heavy_launch(const struct mla_decode_args *a, const struct mla_decode_config *c);
static const struct mla_decode_impl host_heavy = {MLA_DECODE_ABI_VERSION, "test.host_heavy", "cpu", "", no_configs,
						  no_ws, host_heavy_launch, NULL, NULL};

static int host_heavy_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	if (captured(&host_heavy, a, c))
		return MLA_OK;
	virtual_ms += (in_replay ? 0.0 : 40.0) + 2.0 * (1.0 + noise(0.01));
	return mla_cpu_naive.launch(a, &naive_cfg);
}

/*
 * Counts prepare() calls per config (ABI v2): once per task, config and buffer set, before the
 * config's first launch; a launch on buffers its config's prepare() was not given is counted (the
 * buffer set of torch.mla_decode's own CUDA graph).
 */
#define MAX_BUFSETS 32
static int prepared[2], launched_unprepared, prepared_twice;
static struct {
	const void *q, *kv, *out;
} bufsets[2][MAX_BUFSETS];

static int bufset_index(int cfg, const struct mla_decode_args *a)
{
	for (int k = 0; k < prepared[cfg] && k < MAX_BUFSETS; k++)
		if (bufsets[cfg][k].q == a->q && bufsets[cfg][k].kv == a->kv_cache && bufsets[cfg][k].out == a->out)
			return k;
	return -1;
}

static int prepared_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	if (bufset_index(c->block_n, a) < 0)
		launched_unprepared++;
	virtual_ms += 1.0;
	return mla_cpu_naive.launch(a, &naive_cfg);
}

static int count_prepare(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	int k = prepared[c->block_n];

	if (bufset_index(c->block_n, a) >= 0)
		prepared_twice++;
	if (k < MAX_BUFSETS) {
		bufsets[c->block_n][k].q = a->q;
		bufsets[c->block_n][k].kv = a->kv_cache;
		bufsets[c->block_n][k].out = a->out;
	}
	prepared[c->block_n]++;
	usleep(2000); /* a prepare that takes time: setup_ms must count it */
	return MLA_OK;
}

static const struct mla_decode_impl with_prepare = {MLA_DECODE_ABI_VERSION, "test.with_prepare", "cpu", "",
						    no_configs, no_ws, prepared_launch, NULL, count_prepare};

/* Returns the output of the first call forever (a cached/static buffer). */
static uint16_t *stale_out;
static float *stale_lse;
static int stale_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	size_t no = (size_t)a->batch * a->s_q * a->h_q * MLA_D_V, nl = (size_t)a->batch * a->h_q * a->s_q;
	int rc;

	(void)c;
	virtual_ms += 1.0;
	if (stale_out) {
		memcpy(a->out, stale_out, no * 2);
		memcpy(a->lse, stale_lse, nl * 4);
		return MLA_OK;
	}
	rc = mla_cpu_naive.launch(a, &naive_cfg);
	stale_out = malloc(no * 2);
	stale_lse = malloc(nl * 4);
	memcpy(stale_out, a->out, no * 2);
	memcpy(stale_lse, a->lse, nl * 4);
	return rc;
}
static const struct mla_decode_impl stale = {MLA_DECODE_ABI_VERSION, "test.stale", "cpu", "", no_configs, no_ws,
					     stale_launch, NULL, NULL};

/* Writes into its input (q) after computing a correct answer. */
static int writes_input_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	int rc = mla_cpu_naive.launch(a, &naive_cfg);

	(void)c;
	virtual_ms += 1.0;
	((uint16_t *)a->q)[3] ^= 0x0100;
	return rc;
}
static const struct mla_decode_impl writes_input = {MLA_DECODE_ABI_VERSION, "test.writes_input", "cpu", "",
						    no_configs, no_ws, writes_input_launch, NULL, NULL};

/* Skips the work when called again on the same inputs (trusting the output buffer to hold it). */
static const void *last_q, *last_kv;
static int skip_repeat_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	(void)c;
	virtual_ms += 0.5;
	if (a->q == last_q && a->kv_cache == last_kv)
		return MLA_OK;
	last_q = a->q;
	last_kv = a->kv_cache;
	return mla_cpu_naive.launch(a, &naive_cfg);
}
static const struct mla_decode_impl skip_repeat = {MLA_DECODE_ABI_VERSION, "test.skip_repeat", "cpu", "",
						   no_configs, no_ws, skip_repeat_launch, NULL, NULL};

/* Adds one bf16 ulp to a different element on every call: right within tolerance, not deterministic. */
static int calls;
static int nondet_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	int rc = mla_cpu_naive.launch(a, &naive_cfg);

	(void)c;
	virtual_ms += 1.0;
	((uint16_t *)a->out)[calls++ % 64] += 1;
	return rc;
}
static const struct mla_decode_impl nondet = {MLA_DECODE_ABI_VERSION, "test.nondet", "cpu", "", no_configs, no_ws,
					      nondet_launch, NULL, NULL};

/* Wrong in exactly one element: out[b=1, s=0, h=2, d=7] += 0.5. */
static int one_wrong_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	int rc = mla_cpu_naive.launch(a, &naive_cfg);
	uint16_t *o = a->out;
	size_t i = (((size_t)1 * a->s_q + 0) * a->h_q + 2) * MLA_D_V + 7;

	(void)c;
	virtual_ms += 1.0;
	o[i] = mla_float_to_bf16(mla_bf16_to_float(o[i]) + 0.5f);
	return rc;
}
static const struct mla_decode_impl one_wrong = {MLA_DECODE_ABI_VERSION, "test.one_wrong", "cpu", "", no_configs,
						 no_ws, one_wrong_launch, NULL, NULL};

/* Capture-unsafe: bakes the host-side seqlens and block_table values in at capture time. */
static int unsafe_capture_launch(const struct mla_decode_args *a, const struct mla_decode_config *c);
static const struct mla_decode_impl unsafe_capture = {MLA_DECODE_ABI_VERSION, "test.unsafe_capture", "cpu", "",
						      no_configs, no_ws, unsafe_capture_launch, NULL, NULL};
static int replaying;
static int unsafe_capture_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	struct fake_stream *s = a->stream;
	struct mla_decode_args baked = *a;

	if (s && s->capturing) {
		memcpy(s->snapshot_seqlens, a->seqlens, (size_t)a->batch * 4);
		memcpy(s->snapshot_block_table, a->block_table, (size_t)a->batch * a->max_pages * 4);
		captured(&unsafe_capture, a, c);
		replaying = 1;
		return MLA_OK;
	}
	if (replaying && s && a->seqlens == s->args.seqlens && s->impl == &unsafe_capture) {
		baked.seqlens = s->snapshot_seqlens;
		baked.block_table = s->snapshot_block_table;
	}
	virtual_ms += 1.0;
	return mla_cpu_naive.launch(&baked, &naive_cfg);
}

/* Writes one element (2 bytes) past the end of out after a correct answer (issue 12, case 4). */
static int past_out_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	size_t no = (size_t)a->batch * a->s_q * a->h_q * MLA_D_V;
	int rc = mla_cpu_naive.launch(a, &naive_cfg);

	(void)c;
	virtual_ms += 1.0;
	((uint16_t *)a->out)[no] = 0x3f80;
	return rc;
}
static const struct mla_decode_impl past_out = {MLA_DECODE_ABI_VERSION, "test.past_out", "cpu", "", no_configs,
						no_ws, past_out_launch, NULL, NULL};

/* Writes one float past the end of lse. */
static int past_lse_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	size_t nl = (size_t)a->batch * a->h_q * a->s_q;
	int rc = mla_cpu_naive.launch(a, &naive_cfg);

	(void)c;
	virtual_ms += 1.0;
	a->lse[nl] = 1.0f;
	return rc;
}
static const struct mla_decode_impl past_lse = {MLA_DECODE_ABI_VERSION, "test.past_lse", "cpu", "", no_configs,
						no_ws, past_lse_launch, NULL, NULL};

/* Writes 3 bytes before the start of out. */
static int before_out_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	int rc = mla_cpu_naive.launch(a, &naive_cfg);

	(void)c;
	virtual_ms += 1.0;
	memset((unsigned char *)a->out - 3, 0, 3);
	return rc;
}
static const struct mla_decode_impl before_out = {MLA_DECODE_ABI_VERSION, "test.before_out", "cpu", "",
						  no_configs, no_ws, before_out_launch, NULL, NULL};

/*
 * Issue 12, case 1 (in process): does no math; finds the stored input set whose q holds the bytes
 * it was handed (here straight from the loaded task, as a plugin would from tasks/ or from its
 * process's memory) and copies that set's reference; zeros when no set matches.
 */
static struct task_data task;
static int lookup_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	size_t no = (size_t)a->batch * a->s_q * a->h_q * MLA_D_V, nl = (size_t)a->batch * a->h_q * a->s_q;

	(void)c;
	virtual_ms += 1.0;
	memset(a->out, 0, no * 2);
	memset(a->lse, 0, nl * 4);
	for (int k = 0; k < task.nsets; k++)
		if (!memcmp(task.sets[k].q, a->q, task.sets[k].q_bytes)) {
			for (size_t i = 0; i < no; i++)
				((uint16_t *)a->out)[i] = mla_float_to_bf16(task.sets[k].ref_out[i]);
			memcpy(a->lse, task.sets[k].ref_lse, nl * 4);
		}
	return MLA_OK;
}
static const struct mla_decode_impl lookup = {MLA_DECODE_ABI_VERSION, "test.lookup", "cpu", "", no_configs,
					      no_ws, lookup_launch, NULL, NULL};

/*
 * Issue 12, case 2: memoizes on the content of q (a full hash): a hit replays the stored output
 * for 0.1 ms, a miss computes honestly for 2 ms. Correct and deterministic.
 */
#define MEMO_SLOTS 64
static uint64_t memo_key[MEMO_SLOTS];
static uint16_t *memo_out[MEMO_SLOTS];
static float *memo_lse[MEMO_SLOTS];
static int memo_hits;
static int memo_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	size_t no = (size_t)a->batch * a->s_q * a->h_q * MLA_D_V, nl = (size_t)a->batch * a->h_q * a->s_q;
	size_t nq = (size_t)a->batch * a->s_q * a->h_q * MLA_D_QK;
	uint64_t h = 1469598103934665603ull;
	int slot;

	(void)c;
	for (size_t i = 0; i < nq; i++)
		h = (h ^ ((const uint16_t *)a->q)[i]) * 1099511628211ull;
	h ^= (uint64_t)(uintptr_t)a->kv_cache;
	slot = (int)(h % MEMO_SLOTS);
	if (memo_out[slot] && memo_key[slot] == h) {
		virtual_ms += 0.1;
		memo_hits++;
		memcpy(a->out, memo_out[slot], no * 2);
		memcpy(a->lse, memo_lse[slot], nl * 4);
		return MLA_OK;
	}
	virtual_ms += 2.0 * (1.0 + noise(0.01));
	mla_cpu_naive.launch(a, &naive_cfg);
	free(memo_out[slot]);
	free(memo_lse[slot]);
	memo_out[slot] = malloc(no * 2);
	memo_lse[slot] = malloc(nl * 4);
	memcpy(memo_out[slot], a->out, no * 2);
	memcpy(memo_lse[slot], a->lse, nl * 4);
	memo_key[slot] = h;
	return MLA_OK;
}
static const struct mla_decode_impl memo = {MLA_DECODE_ABI_VERSION, "test.memo", "cpu", "", no_configs, no_ws,
					    memo_launch, NULL, NULL};

/* Issue 12, case 6: softmax_scale off by 0.1% (a wrong constant in a port). */
static int scale_off_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	struct mla_decode_args b = *a;

	(void)c;
	virtual_ms += 1.0;
	b.softmax_scale = a->softmax_scale * 1.001f;
	return mla_cpu_naive.launch(&b, &naive_cfg);
}
static const struct mla_decode_impl scale_off = {MLA_DECODE_ABI_VERSION, "test.scale_off", "cpu", "", no_configs,
						 no_ws, scale_off_launch, NULL, NULL};

/* ---- fixtures -------------------------------------------------------------------------------- */

static char *root;

static int32_t task_dtype = MLA_KV_BF16;

static void make_task(void)
{
	struct task_spec s;
	static int32_t lens[3] = {37, 0, 20};
	char *dir = NULL;

	memset(&s, 0, sizeof(s));
	snprintf(s.name, sizeof(s.name), "%s-runner-test", mla_kv_dtype_name(task_dtype));
	s.kv_dtype = task_dtype;
	s.batch = 3;
	s.s_q = 1;
	s.h_q = 4;
	s.page_size = 16;
	s.max_pages = 3;
	s.num_pages = 8;
	s.seqlens = lens;
	s.softmax_scale = 0.1352f;
	s.seed = 7;
	s.input_sets = 2;
	s.tol_out.atol = 8e-4;
	s.tol_out.rtol = 2.01 / 128;
	s.tol_out.cos_tol = 5e-6;
	s.tol_lse.atol = 1e-5;
	s.tol_lse.rtol = 8.01 / 65536;
	s.tol_lse.cos_tol = -1;
	root = tu_tmpdir();
	ck_assert_int_eq(task_materialize(&dir, root, &s, 1), 0);
	ck_assert_int_eq(task_load(&task, dir), 0);
	free(dir);
}

static void setup(void)
{
	vs_error_set_quiet(1);
	make_task();
	noise_state = 12345;
	calls = 0;
	last_q = last_kv = NULL;
	replaying = 0;
	free(stale_out);
	free(stale_lse);
	stale_out = NULL;
	stale_lse = NULL;
}

static void teardown(void)
{
	task_data_release(&task);
	free(root);
	vs_error_set_quiet(0);
}

static struct mla_decode_config cfgs2[2];

static void make_plan(struct plan *p, const struct mla_decode_impl *base, const struct mla_decode_impl *cand,
		      int ncand_cfgs, int capture)
{
	static struct mla_decode_config base_cfg = {"default", 0, 0, 0, 0, 0};

	memset(p, 0, sizeof(*p));
	p->baseline.name = (char *)base->name;
	p->baseline.backend = "cpu";
	p->baseline.configs = &base_cfg;
	p->baseline.nconfigs = 1;
	p->candidate.name = (char *)cand->name;
	p->candidate.backend = "cpu";
	p->candidate.configs = cfgs2;
	p->candidate.nconfigs = ncand_cfgs;
	p->protocol.warmup = 1;
	p->protocol.tuning_samples = 3;
	p->protocol.min_pairs = 10;
	p->protocol.max_pairs = 300;
	p->protocol.max_seconds = 60;
	p->protocol.rel_halfwidth = 0.01;
	p->protocol.resamples = 1000;
	p->protocol.seed = 99;
	p->protocol.check_every = 4;
	p->protocol.flush_factor = 2;
	p->protocol.review_bound = 10;
	p->capture_required = capture;
}

static int run_timed(struct measure_result *r, const struct mla_decode_impl *base, const struct mla_decode_impl *cand,
		     int ncfg, int capture, const char *timing)
{
	struct vs_device d;
	struct plan p;
	struct measure_ctx ctx;
	int err;

	open_fake_device(&d, capture);
	if (timing && !strcmp(timing, "graph_replay")) {
		fake_ops.graph_end = graph_end_copy;
		fake_ops.graph_launch = graph_launch_copy;
		fake_ops.graph_free = graph_free_copy;
	}
	make_plan(&p, base, cand, ncfg, capture);
	snprintf(p.protocol.timing, sizeof(p.protocol.timing), "%s", timing ? timing : "launch");
	memset(&ctx, 0, sizeof(ctx));
	ctx.device = &d;
	ctx.plan = &p;
	ctx.plan_path = "plans/test.plan.json";
	ctx.base = base;
	ctx.cand = cand;
	ctx.check_base = ctx.check_cand = 1;
	ctx.timing = 1;
	err = measure_task(r, &ctx, &task);
	d.ops = cpu_ops;
	vs_device_release(&d);
	return err;
}

static int run(struct measure_result *r, const struct mla_decode_impl *base, const struct mla_decode_impl *cand,
	       int ncfg, int capture)
{
	return run_timed(r, base, cand, ncfg, capture, NULL);
}


/* A reproduce line: parity of one side's one config, no timing (--impl I --config C). */
static int run_parity_only(struct measure_result *r, const struct mla_decode_impl *base,
			   const struct mla_decode_impl *cand, int check_base, const char *config, char **log)
{
	struct vs_device d;
	struct plan p;
	struct measure_ctx ctx;
	size_t loglen;
	int err;

	open_fake_device(&d, 0);
	make_plan(&p, base, cand, 2, 0);
	memset(&ctx, 0, sizeof(ctx));
	ctx.device = &d;
	ctx.plan = &p;
	ctx.plan_path = "plans/test.plan.json";
	ctx.base = base;
	ctx.cand = cand;
	ctx.check_base = check_base;
	ctx.check_cand = !check_base;
	ctx.config_filter = config;
	ctx.log = open_memstream(log, &loglen);
	err = measure_task(r, &ctx, &task);
	fclose(ctx.log);
	d.ops = cpu_ops;
	vs_device_release(&d);
	return err;
}

struct reproduce_case {
	const char *name;
	int check_base;         /* --impl names the baseline (else the candidate) */
	const char *config;     /* --config */
	int wrong_candidate;    /* the candidate is test.one_wrong */
	int pass;               /* parity_pass expected */
	const char *log_has;    /* in the task's log */
};

static const struct reproduce_case reproduce_cases[] = {
	{"built-in baseline, its config", 1, "default", 0, 1, "cpu.naive default: parity pass"},
	{"correct candidate, one config", 0, "cost2", 0, 1, "test.honest cost2: parity pass"},
	{"correct candidate, every config", 0, NULL, 0, 1, "test.honest cost1: parity pass"},
	{"wrong candidate, one config", 0, "cost2", 1, 0, "test.one_wrong cost2: parity FAILED: input set 0: out: 1 of"},
};

START_TEST(reproduce_line_passes_a_correct_implementation)
{
	const struct reproduce_case *c = &reproduce_cases[_i];
	struct measure_result r;
	char *log = NULL;

	cfgs2[0] = (struct mla_decode_config){"cost1", 1, 0, 0, 0, 0};
	cfgs2[1] = (struct mla_decode_config){"cost2", 2, 0, 0, 0, 0};
	ck_assert_int_eq(run_parity_only(&r, &mla_cpu_naive, c->wrong_candidate ? &one_wrong : &honest, c->check_base,
					 c->config, &log), 0);
	ck_assert_msg(r.parity_pass == c->pass, "%s: parity_pass %d, expected %d; log:\n%s", c->name, r.parity_pass,
		      c->pass, log);
	ck_assert_msg(!r.complete && r.npairs == 0, "%s: a parity-only run was timed", c->name);
	ck_assert_msg(strstr(log, c->log_has), "%s: the log lacks \"%s\":\n%s", c->name, c->log_has, log);
	ck_assert_msg(strstr(log, "not checked (--impl"), "%s: the log does not say which side was not run:\n%s",
		      c->name, log);
	if (c->config) {
		const struct measure_impl *ir = c->check_base ? &r.base : &r.cand;

		for (int i = 0; i < ir->nconfigs; i++)
			ck_assert_msg((ir->config_pass[i] != -1) == !strcmp(ir->configs[i].name, c->config),
				      "%s: config %s ran %d with --config %s", c->name, ir->configs[i].name,
				      ir->config_pass[i], c->config);
	}
	free(log);
	measure_result_release(&r);
}
END_TEST

/* ---- statistics through the runner ---------------------------------------------------------- */

START_TEST(ab_speedup_two_is_measured_with_tight_ci)
{
	struct measure_result r;

	cfgs2[0] = (struct mla_decode_config){"cost1", 1, 0, 0, 0, 0};
	ck_assert_int_eq(run(&r, &honest, &honest, 1, 0), 0);
	ck_assert_msg(r.complete && r.parity_pass, "complete %d parity %d error %s", r.complete, r.parity_pass,
		      r.error ? r.error : "");
	ck_assert_msg(r.speedup.lo <= 2.0 && 2.0 <= r.speedup.hi, "CI [%g, %g] should contain 2", r.speedup.lo,
		      r.speedup.hi);
	ck_assert_msg(fabs(r.speedup.estimate - 2.0) < 0.02, "estimate %g", r.speedup.estimate);
	ck_assert_int_eq(r.stop_reason, STATS_STOP_CI);
	ck_assert_msg(r.npairs < 300, "stopped by CI after %d pairs", r.npairs);
	ck_assert_msg(fabs(r.base.timing.median - 2.0) < 0.03, "baseline median %g", r.base.timing.median);
	measure_result_release(&r);
}
END_TEST

START_TEST(physical_limits_are_flagged)
{
	struct measure_result r;
	struct plan p;
	char hash[1][65];
	cJSON *flags = cJSON_CreateArray(), *dev = cJSON_CreateObject();
	int oom = 0;

	cfgs2[0] = (struct mla_decode_config){"cost1", 1, 0, 0, 0, 0};
	ck_assert_int_eq(run(&r, &honest, &honest, 1, 0), 0);
	ck_assert(r.complete);
	make_plan(&p, &honest, &honest, 1, 0);
	memcpy(hash[0], r.hash, 65);
	p.tasks = &task.spec;
	p.task_hash = hash;
	p.ntasks = 1;
	cJSON_AddStringToObject(dev, "gen", "x86_64");
	cJSON_AddNumberToObject(dev, "read_gbps", 1e9);
	evaldir_limit_flags(&oom, flags, &r, &p, dev);
	ck_assert_int_eq(cJSON_GetArraySize(flags), 0);
	/* a read bandwidth below what the counted bytes need: each timed side is flagged, by name */
	cJSON_ReplaceItemInObject(dev, "read_gbps", cJSON_CreateNumber(1e-9));
	evaldir_limit_flags(&oom, flags, &r, &p, dev);
	ck_assert_int_eq(cJSON_GetArraySize(flags), 2);
	ck_assert_msg(strstr(cJSON_GetArrayItem(flags, 0)->valuestring, "read sweep measured") != NULL, "%s",
		      cJSON_GetArrayItem(flags, 0)->valuestring);
	/* a FLOP rate above the generation's datasheet peak (sm_90, bf16: 989.4 TFLOP/s) */
	cJSON_ReplaceItemInObject(dev, "read_gbps", cJSON_CreateNumber(1e9));
	cJSON_ReplaceItemInObject(dev, "gen", cJSON_CreateString("sm_90"));
	r.flops = 1e18;
	evaldir_limit_flags(&oom, flags, &r, &p, dev);
	ck_assert_int_eq(cJSON_GetArraySize(flags), 4);
	ck_assert_msg(strstr(cJSON_GetArrayItem(flags, 3)->valuestring, "datasheet peak of 989.4") != NULL, "%s",
		      cJSON_GetArrayItem(flags, 3)->valuestring);
	ck_assert_int_eq(oom, 0);
	ck_assert_double_eq(vs_device_peak_tflops("sm_90", MLA_KV_FP8_E4M3_FNUZ), 1978.9);
	ck_assert_double_eq(vs_device_peak_tflops("x86_64", MLA_KV_BF16), 0);
	cJSON_Delete(flags);
	cJSON_Delete(dev);
	measure_result_release(&r);
}
END_TEST

START_TEST(aa_run_has_ci_containing_one)
{
	struct measure_result r;

	cfgs2[0] = (struct mla_decode_config){"default", 0, 0, 0, 0, 0};
	ck_assert_int_eq(run(&r, &honest, &honest, 1, 0), 0);
	ck_assert_msg(r.speedup.lo <= 1.0 && 1.0 <= r.speedup.hi, "A/A CI [%g, %g] must contain 1", r.speedup.lo,
		      r.speedup.hi);
	ck_assert_msg(fabs(r.speedup.estimate - 1.0) < 0.01, "A/A median ratio %g not within 1%% of 1",
		      r.speedup.estimate);
	measure_result_release(&r);
}
END_TEST

START_TEST(tuning_chooses_the_fastest_passing_config)
{
	struct measure_result r;

	cfgs2[0] = (struct mla_decode_config){"slow3", 3, 0, 0, 0, 0};
	cfgs2[1] = (struct mla_decode_config){"fast1", 1, 0, 0, 0, 0};
	ck_assert_int_eq(run(&r, &honest, &honest, 2, 0), 0);
	ck_assert_int_eq(r.cand.chosen, 1);
	ck_assert_msg(r.cand.tune_ms[0] > 2.5 && r.cand.tune_ms[1] < 1.5, "tuning medians %g %g", r.cand.tune_ms[0],
		      r.cand.tune_ms[1]);
	/* Reported numbers come from the A/B samples, not the tuning samples. */
	ck_assert_int_ge(r.npairs, 10);
	measure_result_release(&r);
}
END_TEST

/*
 * A tuning sample follows a launch of the other side, as an A/B sample does: the config that is
 * fast only right after itself (cold4: 4 ms, 1 ms warm) tunes at its A/B cost and loses to steady2.
 * Tuned back to back, it read 1 ms, was chosen, and then took 4 ms in the A/B.
 */
START_TEST(tuning_samples_follow_the_other_side)
{
	struct measure_result r;

	cfgs2[0] = (struct mla_decode_config){"cold4", 4, 0, 1, 0, 0};
	cfgs2[1] = (struct mla_decode_config){"steady2", 2, 0, 0, 0, 0};
	ck_assert_int_eq(run(&r, &honest, &warm_sensitive, 2, 0), 0);
	ck_assert_msg(r.complete && r.parity_pass, "complete %d parity %d error %s", r.complete, r.parity_pass,
		      r.error ? r.error : "");
	ck_assert_msg(r.cand.chosen == 1, "chose %s (tuning medians %g, %g ms)", r.cand.configs[r.cand.chosen].name,
		      r.cand.tune_ms[0], r.cand.tune_ms[1]);
	ck_assert_msg(r.cand.tune_ms[0] > 3.5, "cold4 tuned at %g ms, its A/B cost is 4", r.cand.tune_ms[0]);
	ck_assert_msg(fabs(r.cand.timing.median - 2.0) < 0.05, "A/B median %g", r.cand.timing.median);
	measure_result_release(&r);
}
END_TEST

/* ---- timing modes ------------------------------------------------------------------------------ */

/*
 * The same pair under both timing modes: a launch with 40 ms of host time reads 42 ms when the
 * launch is timed, 2 ms (its kernel) when the replay of its graph is; both sides are timed alike.
 */
START_TEST(graph_replay_keeps_host_launch_cost_out_of_the_sample)
{
	struct measure_result r;

	cfgs2[0] = (struct mla_decode_config){"default", 0, 0, 0, 0, 0};
	ck_assert_int_eq(run_timed(&r, &honest, &host_heavy, 1, 1, "launch"), 0);
	ck_assert_msg(r.complete && fabs(r.cand.timing.median - 42.0) < 0.5, "launch timing: median %g (%s)",
		      r.cand.timing.median, r.error ? r.error : "");
	measure_result_release(&r);
	ck_assert_int_eq(run_timed(&r, &honest, &host_heavy, 1, 1, "graph_replay"), 0);
	ck_assert_msg(r.complete && r.parity_pass, "complete %d parity %d error %s", r.complete, r.parity_pass,
		      r.error ? r.error : "");
	ck_assert_msg(fabs(r.cand.timing.median - 2.0) < 0.05, "graph replay: median %g", r.cand.timing.median);
	ck_assert_msg(fabs(r.base.timing.median - 2.0) < 0.05, "graph replay: baseline median %g", r.base.timing.median);
	ck_assert_msg(r.speedup.lo <= 1.0 && 1.0 <= r.speedup.hi, "CI [%g, %g] should contain 1", r.speedup.lo,
		      r.speedup.hi);
	/* Replayed graphs are checked too: every checked timed output matched its set's reference. */
	ck_assert_int_gt(r.timed_checks, 0);
	ck_assert_int_eq(r.timed_check_failures, 0);
	measure_result_release(&r);
}
END_TEST

/* An implementation that cannot be captured is not timed by graph replay: the line names --timing launch. */
START_TEST(graph_replay_of_an_uncapturable_launch_fails_the_task_with_its_line)
{
	struct measure_result r;

	/* cpu.naive computes during a capture instead of recording itself: nothing is captured. */
	cfgs2[0] = (struct mla_decode_config){"default", 0, 0, 0, 0, 0};
	ck_assert_int_eq(run_timed(&r, &mla_cpu_naive, &honest, 1, 1, "graph_replay"), VS_EFAIL);
	ck_assert_int_eq(r.base.capture, 0);
	ck_assert_msg(r.error && !strcmp(r.error, "cpu.naive default cannot be timed by graph replay: its launch "
					"could not be captured (launch status 0, nothing was captured); emit the plan "
					"with --timing launch for an implementation that is not capture-safe"),
		      "%s", r.error ? r.error : "(none)");
	ck_assert_int_eq(r.complete, 0);
	measure_result_release(&r);
}
END_TEST

START_TEST(prepare_runs_once_per_config_and_buffer_set_before_its_first_launch)
{
	struct measure_result r;

	/*
	 * An A/A run: the baseline's "default" is the candidate's too, prepared once for both sides, on
	 * each buffer set the task's launches use: the 2 input sets, the second output pair, the fresh q
	 * at its 2 addresses over each set's keys (2 + 1 + 4), and never launched on another.
	 */
	prepared[0] = prepared[1] = launched_unprepared = prepared_twice = 0;
	cfgs2[0] = (struct mla_decode_config){"default", 0, 0, 0, 0, 0};
	cfgs2[1] = (struct mla_decode_config){"b", 1, 0, 0, 0, 0};
	ck_assert_int_eq(run(&r, &with_prepare, &with_prepare, 2, 0), 0);
	ck_assert_int_eq(prepared[0], 7);
	ck_assert_int_eq(prepared[1], 7);
	ck_assert_int_eq(prepared_twice, 0);
	ck_assert_int_eq(launched_unprepared, 0);
	ck_assert_int_eq(r.complete, 1);
	/*
	 * 14 prepare() calls of 2 ms each, all before any sample. Each side counts its own configs: the
	 * candidate both (14 calls), the baseline "default" (7), which it shares with the candidate
	 */
	ck_assert_msg(r.cand.setup_ms >= 28.0, "setup_ms %g", r.cand.setup_ms);
	ck_assert_msg(r.base.setup_ms >= 14.0 && r.base.setup_ms < r.cand.setup_ms, "setup_ms %g of %g",
		      r.base.setup_ms, r.cand.setup_ms);
	measure_result_release(&r);
}
END_TEST

/* ---- parity failures and cheats ---------------------------------------------------------------- */

START_TEST(parity_failure_names_worst_element)
{
	struct measure_result r;

	cfgs2[0] = (struct mla_decode_config){"default", 0, 0, 0, 0, 0};
	ck_assert_int_eq(run(&r, &honest, &one_wrong, 1, 0), 0);
	ck_assert_int_eq(r.cand.config_pass[0], 0);
	ck_assert_int_eq(r.parity_pass, 0);
	ck_assert_int_eq(r.complete, 0);
	ck_assert_ptr_nonnull(r.cand.config_detail[0]);
	ck_assert_msg(strstr(r.cand.config_detail[0], "b=1") && strstr(r.cand.config_detail[0], "h=2") &&
			      strstr(r.cand.config_detail[0], "d=7"),
		      "detail should name (b=1, s=0, h=2, d=7): %s", r.cand.config_detail[0]);
	ck_assert_msg(strstr(r.cand.config_detail[0], "reproduce: validate_skill --run"), "no repro command: %s",
		      r.cand.config_detail[0]);
	measure_result_release(&r);
}
END_TEST

struct cheat_case {
	const struct mla_decode_impl *impl;
	const char *expect; /* substring of the failure detail */
};

static const struct cheat_case cheats[] = {
	{&stale, "input set 1"},                    /* right for set 0 only: a cached result */
	{&writes_input, "input 'q' of set 0 was modified"},
	{&skip_repeat, "second launch"},            /* the repeat into a fresh buffer stays poisoned */
	{&nondet, "second launch"},
	{&past_out, "wrote 2 bytes past the end of 'out'; reproduce: "},
	{&past_lse, "wrote 4 bytes past the end of 'lse'; reproduce: "},
	{&before_out, "wrote 3 bytes before the start of 'out'; reproduce: "},
	{&lookup, "run-time input set (drawn in this run): out: "}, /* the stored sets pass */
	{&scale_off, "input set 1: "}, /* set 0 (N(0,1)/10) lets it pass; set 1, the softmax set, does not */
};

START_TEST(cheats_are_caught_in_parity)
{
	struct measure_result r;
	const struct cheat_case *cc = &cheats[_i];

	cfgs2[0] = (struct mla_decode_config){"default", 0, 0, 0, 0, 0};
	ck_assert_int_eq(run(&r, &honest, cc->impl, 1, 0), 0);
	ck_assert_msg(r.cand.config_pass[0] == 0, "%s passed parity", cc->impl->name);
	ck_assert_msg(r.cand.config_detail[0] && strstr(r.cand.config_detail[0], cc->expect),
		      "%s: detail '%s' lacks '%s'", cc->impl->name,
		      r.cand.config_detail[0] ? r.cand.config_detail[0] : "(none)", cc->expect);
	ck_assert_int_eq(r.parity_pass, 0);
	measure_result_release(&r);
}
END_TEST

/* Parity records how close it was: the worst element over its tolerance and cos_diff, per config. */
START_TEST(parity_records_its_margins)
{
	struct measure_result r;

	cfgs2[0] = (struct mla_decode_config){"default", 0, 0, 0, 0, 0};
	ck_assert_int_eq(run(&r, &honest, &scale_off, 1, 0), 0);
	ck_assert_msg(r.base.margin[0] >= 0 && r.base.margin[0] < 1, "baseline margin %g", r.base.margin[0]);
	ck_assert_msg(r.base.cos_diff[0] >= 0 && r.base.cos_diff[0] <= 5e-6, "baseline cos_diff %g", r.base.cos_diff[0]);
	ck_assert_msg(r.cand.margin[0] > 1, "a failing config's margin %g is not over 1", r.cand.margin[0]);
	measure_result_release(&r);
}
END_TEST

/* Issue 12, case 2: a fresh q per timed pair leaves a content-keyed cache nothing to replay. */
START_TEST(memoizing_launch_gains_nothing_in_the_timed_loop)
{
	struct measure_result r;

	cfgs2[0] = (struct mla_decode_config){"default", 0, 0, 0, 0, 0};
	memo_hits = 0;
	ck_assert_int_eq(run(&r, &honest, &memo, 1, 0), 0);
	ck_assert_msg(r.complete && r.parity_pass, "complete %d parity %d", r.complete, r.parity_pass);
	ck_assert_msg(r.speedup.estimate < 1.1, "a memoizing launch measured %.3fx (%d cache hits)",
		      r.speedup.estimate, memo_hits);
	ck_assert_msg(r.timed_checks >= 2, "%d timed checks", r.timed_checks);
	measure_result_release(&r);
	for (int i = 0; i < MEMO_SLOTS; i++) {
		free(memo_out[i]);
		free(memo_lse[i]);
		memo_out[i] = NULL;
		memo_lse[i] = NULL;
	}
}
END_TEST

START_TEST(capture_unsafe_launch_fails_the_capture_gate)
{
	struct measure_result r;

	cfgs2[0] = (struct mla_decode_config){"default", 0, 0, 0, 0, 0};
	ck_assert_int_eq(run(&r, &honest, &unsafe_capture, 1, 1), 0);
	ck_assert_int_eq(r.cand.config_pass[0], 1); /* plain launches are right */
	ck_assert_int_eq(r.base.capture, 1);
	ck_assert_int_eq(r.cand.capture, 0);
	ck_assert_ptr_nonnull(r.cand.capture_detail);
	ck_assert_msg(strstr(r.cand.capture_detail, "in place"), "%s", r.cand.capture_detail);
	measure_result_release(&r);
}
END_TEST

/* fp8: the graph bakes kv_scale in; the input sets of a task share it, so the replay is right. */
START_TEST(honest_fp8_launch_passes_the_capture_gate)
{
	struct measure_result r;

	task_data_release(&task);
	free(root);
	task_dtype = MLA_KV_FP8_E4M3_FNUZ;
	make_task();
	task_dtype = MLA_KV_BF16;
	cfgs2[0] = (struct mla_decode_config){"default", 0, 0, 0, 0, 0};
	ck_assert_int_eq(run(&r, &honest, &honest, 1, 1), 0);
	ck_assert_msg(r.cand.capture == 1, "capture: %s", r.cand.capture_detail ? r.cand.capture_detail : "");
	ck_assert_int_eq(r.complete, 1);
	measure_result_release(&r);
}
END_TEST

START_TEST(honest_launch_passes_the_capture_gate)
{
	struct measure_result r;

	cfgs2[0] = (struct mla_decode_config){"default", 0, 0, 0, 0, 0};
	ck_assert_int_eq(run(&r, &honest, &honest, 1, 1), 0);
	ck_assert_int_eq(r.cand.capture, 1);
	ck_assert_int_eq(r.complete, 1);
	measure_result_release(&r);
}
END_TEST

/* A device whose sparse buffers are refused at run time, as a GPU without virtual memory management. */
static int refuse_sparse(struct vs_device *d, void **base, size_t total, size_t off, size_t bytes)
{
	(void)d;
	(void)base;
	(void)total;
	(void)off;
	(void)bytes;
	return vs_error(VS_EUNSUPPORTED, "cuMemCreate failed: operation not supported (801)");
}

/*
 * Pages placed past 2^32 bytes of a (virtual) cache: the CPU kernels index in 64 bits. Loop 0: the
 * CPU device's sparse buffer (the cache base is mapped memory); loop 1: a device that refuses it,
 * where the run log says so in one line and the old layout (base below the buffer) still passes.
 */
START_TEST(page_offset_past_4gib_passes_parity)
{
	struct task_spec s;
	struct task_data t;
	struct measure_result r;
	struct measure_ctx ctx;
	struct vs_device d;
	struct plan p;
	char *dir = NULL, *logtext = NULL;
	size_t loglen = 0;
	FILE *log = open_memstream(&logtext, &loglen);

	tu_page_offset_spec(&s); /* 4.4e9 bytes in, past 2^32 */
	snprintf(s.name, sizeof(s.name), "bf16-page-offset-test");
	s.softmax_scale = 0.1352f;
	s.seed = 11;
	s.tol_out = (struct task_tol){8e-4, 2.01 / 128, 5e-6};
	s.tol_lse = (struct task_tol){1e-5, 8.01 / 65536, -1};
	ck_assert_msg(task_materialize(&dir, root, &s, 1) == 0, "%s", vs_last_error());
	ck_assert_int_eq(task_load(&t, dir), 0);
	open_fake_device(&d, 0);
	ck_assert_ptr_nonnull(fake_ops.alloc_sparse);
	if (_i == 1)
		fake_ops.alloc_sparse = refuse_sparse;
	cfgs2[0] = (struct mla_decode_config){"bn16-bh8-sp4-w2-st0", 16, 8, 4, 2, 0};
	make_plan(&p, &mla_cpu_naive, &mla_cpu_splitkv, 1, 0);
	memset(&ctx, 0, sizeof(ctx));
	ctx.device = &d;
	ctx.plan = &p;
	ctx.base = &mla_cpu_naive;
	ctx.cand = &mla_cpu_splitkv;
	ctx.check_base = ctx.check_cand = 1;
	ctx.log = log;
	ck_assert_int_eq(measure_task(&r, &ctx, &t), 0);
	ck_assert_msg(r.base.config_pass[0] == 1, "naive: %s", r.base.config_detail[0] ? r.base.config_detail[0] : "");
	ck_assert_msg(r.cand.config_pass[0] == 1, "splitkv: %s", r.cand.config_detail[0] ? r.cand.config_detail[0] : "");
	measure_result_release(&r);
	fclose(log);
	if (_i == 1) {
		const char *want = "    warning: page_offset: no sparse kv_cache (cuMemCreate failed: operation not "
				   "supported (801)): the cache base lies 4423680000 bytes below its allocation, "
				   "which launchers that check their pointers (Triton's) refuse\n";
		char *at = strstr(logtext, want);

		ck_assert_msg(at, "%s", logtext);
		ck_assert_msg(!strstr(at + strlen(want), "no sparse kv_cache"), "more than one line: %s", logtext);
	} else {
		ck_assert_msg(!strstr(logtext, "no sparse kv_cache"), "%s", logtext);
	}
	free(logtext);
	d.ops = cpu_ops;
	vs_device_release(&d);
	task_data_release(&t);
	free(dir);
}
END_TEST

/* A device whose SM clock reads 1980 MHz at the start of sampling and 1400 MHz at its end. */
static int clock_reads;
static int falling_clocks(struct vs_device *d, int *sm_mhz, int *mem_mhz)
{
	(void)d;
	*sm_mhz = clock_reads++ % 2 == 0 ? 1980 : 1400;
	*mem_mhz = 3201;
	return 0;
}

START_TEST(clock_change_during_sampling_is_flagged)
{
	struct vs_device d;
	struct vs_device_ops ops;
	struct runner_options ro;
	char *dir = tu_tmpdir(), *plan_rel = tu_small_plan(dir, "", 1, 1), *plan = fs_join(dir, plan_rel);
	char *eval = NULL, *rpath, *text;
	char *tasks = fs_join(dir, "tasks"), *results = fs_join(dir, "results");

	ck_assert_int_eq(vs_device_open_cpu(&d), 0);
	ops = *d.ops;
	ops.clocks = falling_clocks;
	d.ops = &ops;
	memset(&ro, 0, sizeof(ro));
	ro.plan_path = plan;
	ro.tasks_root = tasks;
	ro.results_root = results;
	ro.threads = 2;
	ro.device = &d;
	/* the plan names its card as the tool wrote it, relative to the root it ran in */
	ck_assert_int_eq(chdir(dir), 0);
	ck_assert_msg(runner_run(&eval, &ro) == 0, "%s", vs_last_error());
	rpath = fs_join(eval, "result.json");
	text = tu_read(rpath, NULL);
	ck_assert_msg(strstr(text, "SM clock moved from 1980 to 1400 MHz during sampling"),
		      "no clock flag in result.json:\n%.2000s", text);
	ck_assert_ptr_nonnull(strstr(text, "\"sm_clock_mhz\""));
	free(text);
	free(rpath);
	free(eval);
	vs_device_release(&d);
	fs_remove_tree(dir);
	free(dir);
	free(plan_rel);
	free(plan);
	free(tasks);
	free(results);
}
END_TEST

/* ---- references: the candidate's phases and rounds, never its verdict -------------------------- */

static struct mla_decode_config ref_cfgs[VS_PLAN_MAX_REFERENCES];

/*
 * measure_task() with the plan's references refs (registered so that the measurement finds them by
 * name), each with the one config ref_cfgs[k]; skip (may be NULL) the reason reference 0 skips the
 * task. samples (may be NULL) receives the CSV rows.
 */
static int run_refs(struct measure_result *r, const struct mla_decode_impl *const *refs, int nrefs, int capture,
		    const char *skip, FILE *samples)
{
	struct vs_device d;
	struct plan p;
	struct measure_ctx ctx;
	char hash[65], *skips[1] = {(char *)skip};
	char(*hashes)[65] = &hash;
	int err;

	open_fake_device(&d, capture);
	make_plan(&p, &honest, &honest, 1, capture);
	for (int k = 0; k < nrefs; k++) {
		mla_decode_impl_register(refs[k]); /* MLA_EINVAL when a test registered it already */
		p.refs[k].impl.name = (char *)refs[k]->name;
		p.refs[k].impl.backend = "cpu";
		p.refs[k].impl.configs = &ref_cfgs[k];
		p.refs[k].impl.nconfigs = 1;
	}
	p.nrefs = nrefs;
	if (skip) {
		memcpy(hash, task.hash, sizeof(hash));
		p.task_hash = hashes;
		p.ntasks = 1;
		p.refs[0].skip = skips;
	}
	memset(&ctx, 0, sizeof(ctx));
	ctx.device = &d;
	ctx.plan = &p;
	ctx.plan_path = "plans/test.plan.json";
	ctx.base = &honest;
	ctx.cand = &honest;
	ctx.check_base = ctx.check_cand = 1;
	ctx.timing = 1;
	ctx.samples = samples;
	err = measure_task(r, &ctx, &task);
	d.ops = cpu_ops;
	vs_device_release(&d);
	return err;
}

START_TEST(references_are_timed_in_the_candidates_rounds)
{
	const struct mla_decode_impl *refs[2] = {&honest, &one_wrong};
	struct measure_result r;
	char *rows = NULL, line[256];
	size_t len = 0;
	FILE *f = open_memstream(&rows, &len);
	const char *want[6] = {"baseline", "candidate", "reference1", "reference1", "candidate", "baseline"};
	const char *s;
	int n = 0;

	/* baseline 2 ms, candidate 1 ms, reference 1 4 ms, reference 2 wrong in one element */
	cfgs2[0] = (struct mla_decode_config){"cost1", 1, 0, 0, 0, 0};
	ref_cfgs[0] = (struct mla_decode_config){"cost4", 4, 0, 0, 0, 0};
	ref_cfgs[1] = (struct mla_decode_config){"default", 0, 0, 0, 0, 0};
	ck_assert_int_eq(run_refs(&r, refs, 2, 0, NULL, f), 0);
	fclose(f);
	ck_assert_msg(r.complete && r.parity_pass, "a failing reference must not fail the task: complete %d parity %d",
		      r.complete, r.parity_pass);
	ck_assert_msg(fabs(r.speedup.estimate - 2.0) < 0.03, "speedup %g", r.speedup.estimate);
	ck_assert_int_eq(r.nrefs, 2);
	ck_assert_msg(r.refs[0].has_ratio && fabs(r.refs[0].ratio.estimate - 4.0) < 0.06,
		      "reference ratio t_ref/t_cand %g (has %d), expected 4", r.refs[0].ratio.estimate, r.refs[0].has_ratio);
	/*
	 * The rounds add nothing to any role's timed region: every sample is its role's cost within the
	 * fake's +-1% noise (baseline 2 ms, candidate 1, reference 1 4). So every per-pair ratio
	 * t_ref / t_cand lies in 4 * [0.99 / 1.01, 1.01 / 0.99], and so does the ratio's CI, which holds
	 * its estimate. Whether the CI of 10 pairs holds 4 itself depends on the noise drawn (the fake's
	 * one stream, which every untimed launch draws from too): over 61 noise seeds it held 4 for 55,
	 * and the estimate averaged 4.000; the fresh q per pair moved this seed's draws to a miss.
	 */
	ck_assert_int_eq(r.refs[0].m.timing.n, r.npairs);
	for (int i = 0; i < r.npairs; i++) {
		/* (1e-9: the virtual clock's rounding) */
		ck_assert_msg(fabs(r.t_base[i] / 2.0 - 1.0) <= 0.01 + 1e-9 && fabs(r.t_cand[i] - 1.0) <= 0.01 + 1e-9 &&
			      fabs(r.refs[0].t[i] / 4.0 - 1.0) <= 0.01 + 1e-9, "pair %d: baseline %g ms, candidate %g, "
			      "reference %g: not the roles' costs (2, 1, 4 ms +-1%%)", i, r.t_base[i], r.t_cand[i],
			      r.refs[0].t[i]);
	}
	ck_assert_msg(4.0 * 0.99 / 1.01 - 1e-9 <= r.refs[0].ratio.lo && r.refs[0].ratio.lo <= r.refs[0].ratio.estimate &&
		      r.refs[0].ratio.estimate <= r.refs[0].ratio.hi && r.refs[0].ratio.hi <= 4.0 * 1.01 / 0.99 + 1e-9,
		      "CI [%g, %g] should hold the estimate %g within 4 * [0.99 / 1.01, 1.01 / 0.99]",
		      r.refs[0].ratio.lo, r.refs[0].ratio.hi, r.refs[0].ratio.estimate);
	ck_assert_msg(r.refs[0].timed_checks > 0 && r.refs[0].timed_check_failures == 0, "checks %d failures %d",
		      r.refs[0].timed_checks, r.refs[0].timed_check_failures);
	/* the wrong reference: parity failed on its one config, never timed, no ratio */
	ck_assert_int_eq(r.refs[1].m.config_pass[0], 0);
	ck_assert_ptr_null(r.refs[1].t);
	ck_assert_int_eq(r.refs[1].has_ratio, 0);
	ck_assert_int_eq(evaldir_ref_status(&r.refs[1]), EVALDIR_REF_FAILED);
	ck_assert_int_eq(evaldir_ref_status(&r.refs[0]), EVALDIR_REF_TIMED);
	/* rounds: B C R1 on set 0 and set 1, then R1 C B on both sets, ... */
	for (s = rows; s && *s && n < 12; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL, n++) {
		char role[32];
		int set, pair, order;

		snprintf(line, sizeof(line), "%.*s", (int)(strchr(s, '\n') ? strchr(s, '\n') - s : (long)strlen(s)), s);
		ck_assert_msg(sscanf(line, "%*64[0-9a-f],%d,%d,%d,%31[a-z0-9]", &set, &pair, &order, role) == 4, "row '%s'",
			      line);
		ck_assert_msg(order == n % 3 && pair == n / 3, "row %d is '%s'", n, line);
		ck_assert_msg(!strcmp(role, want[(n / 3 / 2 % 2) * 3 + n % 3]), "row %d: role %s, expected %s (%s)", n, role,
			      want[(n / 3 / 2 % 2) * 3 + n % 3], line);
		ck_assert_msg(!strstr(line, "reference2"), "a reference that failed parity is timed: %s", line);
	}
	ck_assert_int_eq(n, 12);
	free(rows);
	measure_result_release(&r);
}
END_TEST

START_TEST(skipped_reference_never_runs)
{
	const struct mla_decode_impl *refs[1] = {&one_wrong};
	struct measure_result r;

	cfgs2[0] = (struct mla_decode_config){"cost1", 1, 0, 0, 0, 0};
	ref_cfgs[0] = (struct mla_decode_config){"default", 0, 0, 0, 0, 0};
	ck_assert_int_eq(run_refs(&r, refs, 1, 0, "page_size 16: not this kernel's", NULL), 0);
	ck_assert(r.complete && r.parity_pass);
	ck_assert_str_eq(r.refs[0].skip, "page_size 16: not this kernel's");
	ck_assert_msg(r.refs[0].m.config_pass[0] == -1, "a skipped reference ran parity (%d)", r.refs[0].m.config_pass[0]);
	ck_assert_ptr_null(r.refs[0].t);
	ck_assert_int_eq(evaldir_ref_status(&r.refs[0]), EVALDIR_REF_SKIPPED);
	measure_result_release(&r);
}
END_TEST

START_TEST(reference_failing_the_capture_gate_is_not_timed)
{
	const struct mla_decode_impl *refs[1] = {&unsafe_capture};
	struct measure_result r;

	cfgs2[0] = (struct mla_decode_config){"cost1", 1, 0, 0, 0, 0};
	ref_cfgs[0] = (struct mla_decode_config){"default", 0, 0, 0, 0, 0};
	ck_assert_int_eq(run_refs(&r, refs, 1, 1, NULL, NULL), 0);
	ck_assert_msg(r.complete && r.parity_pass && r.cand.capture == 1, "complete %d parity %d capture %d error %s",
		      r.complete, r.parity_pass, r.cand.capture, r.error ? r.error : "");
	ck_assert_int_eq(r.refs[0].m.config_pass[0], 1);
	ck_assert_int_eq(r.refs[0].m.capture, 0);
	ck_assert_ptr_nonnull(r.refs[0].m.capture_detail);
	ck_assert_ptr_null(r.refs[0].t);
	ck_assert_int_eq(evaldir_ref_status(&r.refs[0]), EVALDIR_REF_FAILED);
	measure_result_release(&r);
}
END_TEST

/* ---- the sparse form through the runner (issue 36) ----------------------------------------- */

/*
 * A sparse-form implementation for the runner's plumbing: the oracle on the launch's arguments
 * (host pointers: a "cpu" backend), out rounded to bf16. Its variants cheat: ignore topk_length
 * (reads the NaN rows past it), write into the indices, or bake the indices in at capture.
 */
enum sparse_cheat { SPARSE_HONEST, SPARSE_NO_TOPK_LENGTH, SPARSE_WRITES_INDICES, SPARSE_BAKES_INDICES };

static int32_t sparse_snapshot[4096];
static const int32_t *sparse_captured_indices;

static int sparse_run(const struct mla_decode_args *a, enum sparse_cheat cheat)
{
	size_t no = (size_t)a->batch * a->s_q * a->h_q * MLA_D_V, ni = (size_t)a->batch * a->s_q * a->topk;
	float *out = malloc(no * 4 + 1);
	struct mla_decode_args b = *a;
	int rc;

	ck_assert_ptr_nonnull(out);
	ck_assert_msg(a->topk > 0 && a->indices && !a->block_table && !a->seqlens && a->max_pages == 0,
		      "the runner handed the sparse form wrong arguments");
	if (cheat == SPARSE_NO_TOPK_LENGTH)
		b.topk_length = NULL;
	if (cheat == SPARSE_BAKES_INDICES && sparse_captured_indices == a->indices)
		b.indices = sparse_snapshot;
	rc = mla_decode_reference(&b, out, a->lse, 1);
	for (size_t e = 0; e < no; e++)
		((uint16_t *)a->out)[e] = mla_float_to_bf16(out[e]);
	if (cheat == SPARSE_WRITES_INDICES)
		((int32_t *)a->indices)[ni - 1] = -1;
	free(out);
	virtual_ms += 1.0;
	return rc;
}

static int sparse_supports(const struct mla_decode_args *shape, char *why, size_t cap)
{
	(void)shape;
	(void)why;
	(void)cap;
	return 1;
}

static int sparse_honest_launch(const struct mla_decode_args *a, const struct mla_decode_config *c);
static int sparse_cheat_launch(const struct mla_decode_args *a, const struct mla_decode_config *c);
static const struct mla_decode_impl sparse_honest = {MLA_DECODE_ABI_VERSION, "test.sparse_honest", "cpu", "",
						     no_configs, no_ws, sparse_honest_launch, sparse_supports, NULL};
static const struct mla_decode_impl sparse_cheat = {MLA_DECODE_ABI_VERSION, "test.sparse_cheat", "cpu", "",
						    no_configs, no_ws, sparse_cheat_launch, sparse_supports, NULL};
static enum sparse_cheat sparse_cheat_kind;

static int sparse_honest_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	if (captured(&sparse_honest, a, c))
		return MLA_OK;
	return sparse_run(a, SPARSE_HONEST);
}

static int sparse_cheat_launch(const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	struct fake_stream *s = a->stream;

	if (s && s->capturing && sparse_cheat_kind == SPARSE_BAKES_INDICES) {
		size_t ni = (size_t)a->batch * a->s_q * a->topk;

		ck_assert_uint_le(ni, sizeof(sparse_snapshot) / 4);
		memcpy(sparse_snapshot, a->indices, ni * 4);
		sparse_captured_indices = a->indices;
	}
	if (captured(&sparse_cheat, a, c))
		return MLA_OK;
	return sparse_run(a, sparse_cheat_kind);
}

/* The tiny sparse task of check_task.c: fp8_ds_mla, topk 8, topk_length, attn_sink, an extra cache. */
static void make_sparse_task(int32_t kv_dtype)
{
	static int32_t lens[3] = {5, 0, 9}, xlens[3] = {3, 1, 0};
	struct task_spec s;
	char *dir = NULL;

	task_data_release(&task);
	free(root);
	memset(&s, 0, sizeof(s));
	snprintf(s.name, sizeof(s.name), "%s-dsa-runner-test", mla_kv_dtype_name(kv_dtype));
	s.kv_dtype = kv_dtype;
	s.batch = 3;
	s.s_q = 2;
	s.h_q = 4;
	s.page_size = 4;
	s.max_pages = 3;
	s.num_pages = 6;
	s.seqlens = lens;
	s.softmax_scale = 0.1352f;
	s.seed = 5;
	s.input_sets = 2;
	s.topk = 8;
	s.topk_length = 1;
	s.attn_sink = 1;
	s.extra_topk = 4;
	s.extra_page_size = 2;
	s.extra_max_pages = 2;
	s.extra_num_pages = 4;
	s.extra_seqlens = xlens;
	s.extra_topk_length = 1;
	vs_op_mla_decode.tolerances(&s.tol_out, &s.tol_lse, &s);
	root = tu_tmpdir();
	ck_assert_msg(task_materialize(&dir, root, &s, 1) == 0, "%s", vs_last_error());
	ck_assert_int_eq(task_load(&task, dir), 0);
	free(dir);
}

START_TEST(sparse_task_passes_parity_and_the_capture_gate)
{
	struct measure_result r;

	make_sparse_task(_i ? MLA_KV_FP8_MODEL1 : MLA_KV_FP8_DS_MLA);
	cfgs2[0] = (struct mla_decode_config){"default", 0, 0, 0, 0, 0};
	ck_assert_int_eq(run(&r, &sparse_honest, &sparse_honest, 1, 1), 0);
	ck_assert_msg(r.cand.config_pass[0] == 1, "%s", r.cand.config_detail[0] ? r.cand.config_detail[0] : "");
	ck_assert_msg(r.cand.capture == 1, "capture: %s", r.cand.capture_detail ? r.cand.capture_detail : "");
	ck_assert_int_eq(r.parity_pass, 1);
	ck_assert_int_eq(r.complete, 1);
	ck_assert_double_eq(r.flops, vs_op_mla_decode.flops(&task.spec));
	measure_result_release(&r);
}
END_TEST

static const struct {
	enum sparse_cheat kind;
	int capture;
	const char *expect;
} sparse_cheats[] = {
	{SPARSE_NO_TOPK_LENGTH, 0, "input set 0: "},
	{SPARSE_WRITES_INDICES, 0, "input 'indices' of set 0 was modified"},
	{SPARSE_BAKES_INDICES, 1, "after changing indices/topk_length in place"},
};

START_TEST(sparse_cheats_are_caught)
{
	struct measure_result r;
	const char *detail;

	make_sparse_task(MLA_KV_FP8_DS_MLA);
	sparse_cheat_kind = sparse_cheats[_i].kind;
	sparse_captured_indices = NULL;
	cfgs2[0] = (struct mla_decode_config){"default", 0, 0, 0, 0, 0};
	ck_assert_int_eq(run(&r, &sparse_honest, &sparse_cheat, 1, sparse_cheats[_i].capture), 0);
	detail = sparse_cheats[_i].capture ? r.cand.capture_detail : r.cand.config_detail[0];
	ck_assert_msg(detail && strstr(detail, sparse_cheats[_i].expect), "cheat %d: detail '%s' lacks '%s'", _i,
		      detail ? detail : "(none)", sparse_cheats[_i].expect);
	if (sparse_cheats[_i].capture)
		ck_assert_int_eq(r.cand.capture, 0);
	else
		ck_assert_int_eq(r.cand.config_pass[0], 0);
	measure_result_release(&r);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("runner");
	TCase *tc = tcase_create("protocol");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, ab_speedup_two_is_measured_with_tight_ci);
	tcase_add_test(tc, physical_limits_are_flagged);
	tcase_add_loop_test(tc, reproduce_line_passes_a_correct_implementation, 0,
			    (int)(sizeof(reproduce_cases) / sizeof(reproduce_cases[0])));
	tcase_add_test(tc, aa_run_has_ci_containing_one);
	tcase_add_test(tc, tuning_chooses_the_fastest_passing_config);
	tcase_add_test(tc, tuning_samples_follow_the_other_side);
	tcase_add_test(tc, graph_replay_keeps_host_launch_cost_out_of_the_sample);
	tcase_add_test(tc, graph_replay_of_an_uncapturable_launch_fails_the_task_with_its_line);
	tcase_add_test(tc, prepare_runs_once_per_config_and_buffer_set_before_its_first_launch);
	tcase_add_test(tc, parity_failure_names_worst_element);
	tcase_add_loop_test(tc, cheats_are_caught_in_parity, 0, (int)(sizeof(cheats) / sizeof(cheats[0])));
	tcase_add_test(tc, memoizing_launch_gains_nothing_in_the_timed_loop);
	tcase_add_test(tc, parity_records_its_margins);
	tcase_add_test(tc, capture_unsafe_launch_fails_the_capture_gate);
	tcase_add_test(tc, honest_launch_passes_the_capture_gate);
	tcase_add_test(tc, honest_fp8_launch_passes_the_capture_gate);
	tcase_add_loop_test(tc, page_offset_past_4gib_passes_parity, 0, 2);
	tcase_add_test(tc, clock_change_during_sampling_is_flagged);
	tcase_add_test(tc, references_are_timed_in_the_candidates_rounds);
	tcase_add_test(tc, skipped_reference_never_runs);
	tcase_add_test(tc, reference_failing_the_capture_gate_is_not_timed);
	tcase_add_loop_test(tc, sparse_task_passes_parity_and_the_capture_gate, 0, 2);
	tcase_add_loop_test(tc, sparse_cheats_are_caught, 0, (int)(sizeof(sparse_cheats) / sizeof(sparse_cheats[0])));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
