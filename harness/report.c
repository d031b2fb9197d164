#include "report.h"
#include "card.h"
#include "fsutil.h"
#include "plan.h"
#include "evaldir.h"
#include "layout.h"
#include "library.h"
#include "vs_build_info.h"
#include "vs_error.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct row {
	char *path;
	char *id;
	char *status; /* draft / validated / failed / stale / invalid; "<status> (typed, no evidence)" */
	char *stale_why;
	char *gens; /* "gfx942:built sm_90:validated" */
	char *last_verified;
	char *device;
	char *measured_gen;
	int has_measured;
	double measured;
	int has_expected;
	double expected;
	char *parity;      /* measured parity, with the card's relaxed tolerance when it has one */
	double parity_tol; /* expects.parity: relaxed(<tol>), or 0 */
	char *evidence;    /* ok / missing / mismatch / none / invalid card */
	char *impls;       /* "baseline -> candidate" measured (the evidence's when it verifies) */
	char *evidence_why;
	char *flags; /* the run's review flags (speedup above the review bound, clock changes) */
	int nflags;
	int verified; /* the evidence verifies and proves the card's claims */
	int has_ci;   /* overall CI from the evidence */
	double ci_lo, ci_hi;
	struct shape_speedup *shapes; /* per task shape, from the evidence (html chart) */
	int nshapes;
	struct ref_summary *refs; /* the run's reference implementations, from the evidence */
	int nrefs;
	char *title;                /* the card's title */
	char *eval_dir;             /* validation.artifact: the eval dir the card points at */
	char *baseline, *candidate; /* the implementations that ran (from the evidence) */
	int cores;                  /* the device's compute units (CPU cores, SMs, CUs), -1 unknown */
	char *configs;              /* the configs chosen: "baseline default; candidate bn64 (2 tasks), bn32 (1)" */
	char **flag_list;           /* the run's review flags, one each (nflags) */
	int nharm;                  /* the first nharm flags are do-no-harm flags (fill_run) */
	int flagged_tasks;          /* tasks named by a flag */
	int ntasks;                 /* tasks in the evidence */
	char *coverage;             /* "tier standard, 17 of 19 tasks ran (2 skipped)" (from the evidence) */
	char *tier;                 /* the plan's tier (from the evidence) */
	char *spread;               /* validation.measured.spread and recorded_over, as one line, or NULL */
	int ran_tasks;              /* tasks that ran (not skipped) */
	struct cJSON *e2e;          /* the run's e2e numbers (e2e_summary()), or NULL: none */
	int typed;                  /* the card's validation block is typed (card.h): read, never trusted */
	char *not_planned;          /* "not planned here (operator 'x')", or NULL: the operator is planned */
	char *setup;                /* "setup: baseline 0.2 s, candidate 31.5 s" over the run's tasks, or NULL
	                             * (evidence written before setup was measured) */
	struct wl_row *wls;         /* the card's deployments: each claimed workload and each record */
	int nwls;
};

/* One (card, gen, workload) verdict: a validation.workloads record, or a claimed workload not run. */
struct wl_row {
	char *workload, *gen; /* gen "" for a claimed workload with no record */
	char *status;         /* validated, failed, stale, "not run" */
	int claimed;          /* listed in expects.workloads */
	int has_speedup;
	double est, lo, hi, isolated;
	char *evidence;       /* ok, mismatch, missing, none */
	char *why;            /* evidence detail or stale reason, or NULL */
	char *weight;         /* where the time lies: "bf16-wl-c4-t3 41%, ..." from the run, or NULL */
	char *per_conc;       /* the speedup at each concurrency: "1: 0.952 [0.940, 0.961]; 64: 1.031 [...]", or NULL */
	cJSON *per_conc_json; /* the run's overall.workload.per_concurrency (a copy), or NULL */
	char *per_kv;         /* the record's per_kv_dtype: "bf16 1.312 [1.300, 1.330]; fp8_e4m3_fnuz ...", or NULL
	                       * (a plan of one kv dtype) */
	cJSON *per_kv_json;   /* the same as [{kv_dtype, speedup {estimate, ci95}}], or NULL */
	char *artifact;
	/*
	 * The run's tasks when its evidence verifies, or NULL: a row (heap) holding only what
	 * fill_shapes() and fill_refs() read (each task's baseline and candidate medians and speedup,
	 * each reference's median and t_ref / t_cand) and the implementations: the per-task table of
	 * the deployment, every reference beside the baseline (issue 39: both DSA ports beside
	 * FlashMLA's sparse decode). Released with its row.
	 */
	struct row *detail;
};

/* One task shape's measured speedup, from result.json. */
struct shape_speedup {
	char *name;
	int timed;
	int skipped; /* not run: an implementation does not support it (result.json "skipped") */
	double est, lo, hi;
	double cand_ms; /* the candidate's median, 0 when not timed */
	double base_ms; /* the baseline's median, 0 when not timed */
};

/* A reference on one task: its ratio t_ref / t_cand, or its status and the reason. */
struct ref_task {
	char *status; /* "timed", "skipped", "failed", "not timed" */
	char *reason; /* skipped: the plan's reason; failed: parity or capture (or NULL) */
	int has;
	double est, lo, hi, ms;
};

/* A reference implementation of a card's run: overall ratio and one entry per task (as r->shapes). */
struct ref_summary {
	char *impl;
	int has;
	double est, lo, hi;
	int timed, skipped, failed;
	struct ref_task *tasks; /* [row nshapes] */
};

static char *dupz(const char *s)
{
	return strdup(s ? s : "");
}

static void row_release(struct row *r)
{
	free(r->path);
	free(r->id);
	free(r->status);
	free(r->stale_why);
	free(r->gens);
	free(r->last_verified);
	free(r->device);
	free(r->measured_gen);
	free(r->parity);
	free(r->evidence);
	free(r->impls);
	free(r->evidence_why);
	free(r->not_planned);
	free(r->flags);
	free(r->title);
	free(r->eval_dir);
	free(r->baseline);
	free(r->candidate);
	free(r->configs);
	free(r->coverage);
	free(r->tier);
	free(r->spread);
	free(r->setup);
	for (int i = 0; i < r->nflags && r->flag_list; i++)
		free(r->flag_list[i]);
	free(r->flag_list);
	for (int i = 0; i < r->nshapes; i++)
		free(r->shapes[i].name);
	for (int k = 0; k < r->nrefs; k++) {
		for (int i = 0; r->refs[k].tasks && i < r->nshapes; i++) {
			free(r->refs[k].tasks[i].status);
			free(r->refs[k].tasks[i].reason);
		}
		free(r->refs[k].tasks);
		free(r->refs[k].impl);
	}
	free(r->refs);
	free(r->shapes);
	cJSON_Delete(r->e2e);
	for (int i = 0; i < r->nwls; i++) {
		free(r->wls[i].workload);
		free(r->wls[i].per_conc);
		cJSON_Delete(r->wls[i].per_conc_json);
		free(r->wls[i].per_kv);
		cJSON_Delete(r->wls[i].per_kv_json);
		free(r->wls[i].gen);
		free(r->wls[i].status);
		free(r->wls[i].evidence);
		free(r->wls[i].why);
		free(r->wls[i].weight);
		free(r->wls[i].artifact);
		if (r->wls[i].detail) {
			row_release(r->wls[i].detail);
			free(r->wls[i].detail);
		}
	}
	free(r->wls);
}

static const char *nz_str(const char *s)
{
	return s ? s : "";
}

/* The per-task speedups and overall CI of a verified evidence, for the chart. */
static void fill_shapes(struct row *r, const struct evidence *e)
{
	const cJSON *tasks = cJSON_GetObjectItem(e->result, "tasks"), *t;
	int n = cJSON_GetArraySize(tasks);

	r->has_ci = e->has_isolated;
	r->ci_lo = e->isolated_lo;
	r->ci_hi = e->isolated_hi;
	r->shapes = calloc((size_t)n + 1, sizeof(*r->shapes));
	if (!r->shapes)
		return;
	cJSON_ArrayForEach(t, tasks)
	{
		struct shape_speedup *sh = &r->shapes[r->nshapes];
		const cJSON *sp = cJSON_GetObjectItem(t, "speedup");
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(t, "name"));

		sh->name = strdup(name ? name : "?");
		if (!sh->name)
			break;
		sh->cand_ms = cJSON_GetNumberValue(
			cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(t, "candidate"), "timing"),
					    "median_ms"));
		if (isnan(sh->cand_ms))
			sh->cand_ms = 0;
		sh->base_ms = cJSON_GetNumberValue(
			cJSON_GetObjectItem(cJSON_GetObjectItem(cJSON_GetObjectItem(t, "baseline"), "timing"),
					    "median_ms"));
		if (isnan(sh->base_ms))
			sh->base_ms = 0;
		sh->skipped = cJSON_IsString(cJSON_GetObjectItem(t, "skipped"));
		if (cJSON_IsObject(sp) &&
		    !strcmp(nz_str(cJSON_GetStringValue(cJSON_GetObjectItem(t, "parity"))), "pass")) {
			sh->timed = 1;
			sh->est = cJSON_GetNumberValue(cJSON_GetObjectItem(sp, "estimate"));
			sh->lo = cJSON_GetNumberValue(cJSON_GetArrayItem(cJSON_GetObjectItem(sp, "ci95"), 0));
			sh->hi = cJSON_GetNumberValue(cJSON_GetArrayItem(cJSON_GetObjectItem(sp, "ci95"), 1));
		}
		r->nshapes++;
	}
}

/* {estimate, ci95} into est, lo, hi; 1 when j is such an object. */
static int ci_from(const cJSON *j, double *est, double *lo, double *hi)
{
	if (!cJSON_IsObject(j))
		return 0;
	*est = cJSON_GetNumberValue(cJSON_GetObjectItem(j, "estimate"));
	*lo = cJSON_GetNumberValue(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "ci95"), 0));
	*hi = cJSON_GetNumberValue(cJSON_GetArrayItem(cJSON_GetObjectItem(j, "ci95"), 1));
	return 1;
}

/* The references of a verified evidence (after fill_shapes: one entry per task shape). */
static void fill_refs(struct row *r, const struct evidence *e)
{
	const cJSON *ov = cJSON_GetObjectItem(e->result, "references"), *o;
	const cJSON *tasks = cJSON_GetObjectItem(e->result, "tasks");
	int n = cJSON_GetArraySize(ov), k = 0;

	if (n <= 0 || !(r->refs = calloc((size_t)n, sizeof(*r->refs))))
		return;
	cJSON_ArrayForEach(o, ov)
	{
		struct ref_summary *rs = &r->refs[k];
		const char *impl = cJSON_GetStringValue(cJSON_GetObjectItem(o, "impl"));

		rs->impl = strdup(impl ? impl : "?");
		rs->tasks = calloc((size_t)r->nshapes + 1, sizeof(*rs->tasks));
		if (!rs->impl || !rs->tasks) {
			free(rs->impl);
			free(rs->tasks);
			return;
		}
		r->nrefs = ++k;
		rs->has = ci_from(cJSON_GetObjectItem(o, "ratio"), &rs->est, &rs->lo, &rs->hi);
		rs->timed = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(o, "tasks_timed"));
		rs->skipped = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(o, "tasks_skipped"));
		rs->failed = (int)cJSON_GetNumberValue(cJSON_GetObjectItem(o, "tasks_failed"));
		for (int i = 0; i < r->nshapes; i++) {
			const cJSON *rj =
				cJSON_GetArrayItem(cJSON_GetObjectItem(cJSON_GetArrayItem(tasks, i), "references"),
						   k - 1);
			const char *st = cJSON_GetStringValue(cJSON_GetObjectItem(rj, "status"));
			const char *why = cJSON_GetStringValue(cJSON_GetObjectItem(rj, "reason"));
			struct ref_task *rt = &rs->tasks[i];

			if (!why && st && !strcmp(st, "failed"))
				why = !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(rj, "capture")) ?
						      cJSON_GetStringValue(cJSON_GetObjectItem(rj, "capture")) :
						      "",
					      "fail") ?
					      "capture gate" :
					      "parity";
			rt->status = strdup(st ? st : "not timed");
			rt->reason = why ? strdup(why) : NULL;
			rt->has = ci_from(cJSON_GetObjectItem(rj, "ratio"), &rt->est, &rt->lo, &rt->hi);
			rt->ms = cJSON_GetNumberValue(
				cJSON_GetObjectItem(cJSON_GetObjectItem(rj, "timing"), "median_ms"));
			if (isnan(rt->ms))
				rt->ms = 0;
		}
	}
}

/* The distinct configs chosen for role over the tasks, with counts: "bn64 (2 tasks), bn32 (1)". */
static void chosen_configs(char *buf, size_t cap, const cJSON *tasks, const char *role)
{
	const char *names[64];
	int counts[64], n = 0, total = 0;
	const cJSON *t;

	*buf = '\0';
	cJSON_ArrayForEach(t, tasks)
	{
		const char *c = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(t, role), "chosen"));
		int k;

		if (!c)
			continue;
		for (k = 0; k < n && strcmp(names[k], c); k++)
			;
		if (k == n && n < 64) {
			names[n] = c;
			counts[n++] = 0;
		}
		if (k < n)
			counts[k]++;
		total++;
	}
	for (int k = 0; k < n; k++)
		snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", k ? ", " : "", names[k]);
	if (n > 1) {
		*buf = '\0';
		for (int k = 0; k < n; k++)
			snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s (%d task%s)", k ? ", " : "", names[k],
				 counts[k], counts[k] == 1 ? "" : "s");
	}
	if (!total)
		snprintf(buf, cap, "none (no task timed)");
}

/* The baseline against the references of one task (report.h); computed from verified evidence, so
 * evidence recorded before this check gets it too. */
char *report_baseline_flag(const cJSON *task, double bound)
{
	const cJSON *name = cJSON_GetObjectItem(task, "name"), *ref;
	const cJSON *sp = cJSON_GetObjectItem(cJSON_GetObjectItem(task, "speedup"), "estimate");
	const char *worst = NULL;
	double most = bound;

	if (!cJSON_IsString(name) || !cJSON_IsNumber(sp) || !(cJSON_GetNumberValue(sp) > 0))
		return NULL;
	cJSON_ArrayForEach(ref, cJSON_GetObjectItem(task, "references"))
	{
		const cJSON *ratio = cJSON_GetObjectItem(cJSON_GetObjectItem(ref, "ratio"), "estimate");
		const char *impl = cJSON_GetStringValue(cJSON_GetObjectItem(ref, "impl"));
		double x;

		if (!impl || !cJSON_IsNumber(ratio) || !(cJSON_GetNumberValue(ratio) > 0))
			continue;
		x = cJSON_GetNumberValue(sp) / cJSON_GetNumberValue(ratio);
		if (x > most) {
			most = x;
			worst = impl;
		}
	}
	if (!worst)
		return NULL;
	return fs_printf("task %s: the baseline ran %.2fx slower than reference %s in the same run (review "
			 "bound %.1fx): the speedup is over a kernel that is not the fastest one measured here",
			 cJSON_GetStringValue(name), most, worst, bound);
}

/* The "ci95" pair of an estimate object, when it holds two numbers. */
static int ci95_of(const cJSON *est, double *lo, double *hi)
{
	const cJSON *ci = cJSON_GetObjectItem(est, "ci95");

	if (cJSON_GetArraySize(ci) != 2 || !cJSON_IsNumber(cJSON_GetArrayItem(ci, 0)) ||
	    !cJSON_IsNumber(cJSON_GetArrayItem(ci, 1)))
		return 0;
	*lo = cJSON_GetNumberValue(cJSON_GetArrayItem(ci, 0));
	*hi = cJSON_GetNumberValue(cJSON_GetArrayItem(ci, 1));
	return 1;
}

/* A task the candidate ran slower than the baseline (report.h). */
char *report_harm_flag(const cJSON *task)
{
	const cJSON *name = cJSON_GetObjectItem(task, "name");
	const cJSON *sp = cJSON_GetObjectItem(task, "speedup");
	const cJSON *est = cJSON_GetObjectItem(sp, "estimate");
	double lo, hi;

	if (!cJSON_IsString(name) || !cJSON_IsNumber(est) || !ci95_of(sp, &lo, &hi) || !(hi < 1.0))
		return NULL;
	return fs_printf("task %s: the candidate ran slower than the baseline (speedup %.3f [%.3f, %.3f]): "
			 "the card's gate is a geometric mean over its tasks, and this one lost",
			 cJSON_GetStringValue(name), cJSON_GetNumberValue(est), lo, hi);
}

/* A task where a reference ran faster than the candidate (report.h). */
char *report_outpaced_flag(const cJSON *task)
{
	const cJSON *name = cJSON_GetObjectItem(task, "name"), *ref;
	const char *base = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(task, "baseline"), "impl"));
	const char *best = NULL; /* the fastest such reference's impl */
	double best_est = 0, best_lo = 0, best_hi = 0;

	if (!cJSON_IsString(name))
		return NULL;
	cJSON_ArrayForEach(ref, cJSON_GetObjectItem(task, "references"))
	{
		const cJSON *ratio = cJSON_GetObjectItem(ref, "ratio");
		const cJSON *est = cJSON_GetObjectItem(ratio, "estimate");
		const char *impl = cJSON_GetStringValue(cJSON_GetObjectItem(ref, "impl"));
		double lo, hi;

		/* the baseline as a reference repeats the speedup: report_harm_flag's */
		if (!impl || (base && !strcmp(impl, base)) || !cJSON_IsNumber(est) || !ci95_of(ratio, &lo, &hi) ||
		    !(hi < 1.0))
			continue;
		if (!best || cJSON_GetNumberValue(est) < best_est) {
			best = impl;
			best_est = cJSON_GetNumberValue(est);
			best_lo = lo;
			best_hi = hi;
		}
	}
	if (!best)
		return NULL;
	return fs_printf("task %s: reference %s ran faster than the candidate in the same run (t_ref / t_cand "
			 "%.3f [%.3f, %.3f]): the candidate is not the fastest kernel measured here",
			 cJSON_GetStringValue(name), best, best_est, best_lo, best_hi);
}

/* The ratio A/B median / tuning median of one side's chosen config, or 0 when it was not tuned or timed. */
static double tuning_ratio(const cJSON *side, const char **chosen, double *tune_ms, double *ab_ms)
{
	const cJSON *cfg;
	const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(side, "chosen"));
	const cJSON *ab = cJSON_GetObjectItem(cJSON_GetObjectItem(side, "timing"), "median_ms");

	if (!name || !cJSON_IsNumber(ab) || !(cJSON_GetNumberValue(ab) > 0))
		return 0;
	cJSON_ArrayForEach(cfg, cJSON_GetObjectItem(side, "configs"))
	{
		const cJSON *tm = cJSON_GetObjectItem(cfg, "tune_median_ms");

		if (cJSON_IsString(cJSON_GetObjectItem(cfg, "name")) &&
		    !strcmp(cJSON_GetStringValue(cJSON_GetObjectItem(cfg, "name")), name) && cJSON_IsNumber(tm) &&
		    cJSON_GetNumberValue(tm) > 0) {
			*chosen = name;
			*tune_ms = cJSON_GetNumberValue(tm);
			*ab_ms = cJSON_GetNumberValue(ab);
			return *ab_ms / *tune_ms;
		}
	}
	return 0;
}

/* A chosen config that the A/B timed far from its tuning median (report.h). */
char *report_tuning_flag(const cJSON *task, double bound)
{
	const cJSON *name = cJSON_GetObjectItem(task, "name"), *ref;
	const cJSON *sides[16]; /* baseline, candidate, references */
	const char *impl = NULL, *cfg = NULL;
	double worst = 1.0, tune = 0, ab = 0;
	int n = 0;

	if (!cJSON_IsString(name) || !(bound > 1.0))
		return NULL;
	sides[n++] = cJSON_GetObjectItem(task, "baseline");
	sides[n++] = cJSON_GetObjectItem(task, "candidate");
	cJSON_ArrayForEach(ref, cJSON_GetObjectItem(task, "references")) if (n < (int)(sizeof(sides) / sizeof(*sides)))
		sides[n++] = ref;
	for (int k = 0; k < n; k++) {
		const char *c = NULL;
		double t = 0, a = 0, r = sides[k] ? tuning_ratio(sides[k], &c, &t, &a) : 0;
		double far = r >= 1.0 ? r : r > 0 ? 1.0 / r : 0;

		if (far > bound && far > worst) {
			worst = far;
			impl = cJSON_GetStringValue(cJSON_GetObjectItem(sides[k], "impl"));
			cfg = c;
			tune = t;
			ab = a;
		}
	}
	if (!cfg)
		return NULL;
	return fs_printf("task %s: %s's config %s took %.4f ms in the A/B against %.4f ms when tuned (%.2fx): the "
			 "tuning pass chose it under other conditions than the A/B's, so another config may be "
			 "faster there",
			 cJSON_GetStringValue(name), impl ? impl : "?", cfg, ab, tune, ab / tune);
}

/* A model step that ran slower with the candidate (report.h). */
char *report_e2e_harm_flag(const cJSON *result)
{
	const cJSON *e2e = cJSON_GetObjectItem(result, "e2e");
	const cJSON *pct = cJSON_GetObjectItem(e2e, "e2e_pct");
	const cJSON *est = cJSON_GetObjectItem(pct, "estimate");
	const char *step = cJSON_GetStringValue(cJSON_GetObjectItem(e2e, "step"));
	double lo, hi;

	if (!cJSON_IsNumber(est) || !ci95_of(pct, &lo, &hi) || !(hi < 0.0))
		return NULL;
	return fs_printf("e2e: the model step (%s) ran slower with the candidate: e2e_pct %.2f%% [%.2f, "
			 "%.2f] over the e2e tasks, whatever the isolated speedup says",
			 step ? step : "?", cJSON_GetNumberValue(est), lo, hi);
}

/* The run the plan copy of eval dir dir pinned its configs from ("Pinned configs"), malloc'd, or NULL. */
static char *pinned_run(const char *dir)
{
	char *path = dir ? fs_join(dir, "plan.json") : NULL, *text = NULL, *run = NULL;
	size_t len;
	cJSON *root = NULL;
	int quiet = vs_error_set_quiet(1);

	if (path && !fs_read_file(&text, &len, path, 64u << 20) && (root = cJSON_ParseWithLength(text, len))) {
		const char *s = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(root, "pinned"), "run"));

		run = s && *s ? strdup(s) : NULL; /* an unpinned run's plan has no "pinned" */
	}
	vs_error_set_quiet(quiet);
	cJSON_Delete(root);
	free(text);
	free(path);
	return run;
}

/*
 * What the verified evidence says about the run: implementations, cores, configs, flags (the
 * do-no-harm checks: a slower model step, tasks the candidate lost; the run's; chosen configs the
 * A/B timed far from their tuning; the baseline checks against the references); r->flags joins
 * them with "; ".
 */
static void fill_run(struct row *r, const struct evidence *e)
{
	const cJSON *tasks = cJSON_GetObjectItem(e->result, "tasks");
	const cJSON *dev = cJSON_GetObjectItem(e->result, "device");
	const cJSON *flags = cJSON_GetObjectItem(e->result, "flags"), *fl, *t;
	const cJSON *cu = cJSON_GetObjectItem(dev, "compute_units");
	const char *backend = cJSON_GetStringValue(cJSON_GetObjectItem(dev, "backend"));
	char b[512], c[512];
	size_t cap = 1;

	r->baseline = dupz(cJSON_GetStringValue(cJSON_GetObjectItem(e->result, "baseline")));
	r->candidate = dupz(cJSON_GetStringValue(cJSON_GetObjectItem(e->result, "candidate")));
	r->cores = cJSON_IsNumber(cu) ? (int)cJSON_GetNumberValue(cu) : -1;
	chosen_configs(b, sizeof(b), tasks, "baseline");
	chosen_configs(c, sizeof(c), tasks, "candidate");
	{
		char *pin = pinned_run(e->eval_dir);

		r->configs =
			fs_printf("baseline %s; candidate %s%s%s%s", b, c,
				  pin ? " (each task's configs pinned from run " : "", pin ? pin : "", pin ? ")" : "");
		free(pin);
	}
	{
		/* what getting ready cost (prepare, captures), beside the kernel times: summed over tasks */
		double sb = 0, sc = 0;
		int have = 0;

		cJSON_ArrayForEach(t, tasks)
		{
			const cJSON *xb = cJSON_GetObjectItem(cJSON_GetObjectItem(t, "baseline"), "setup_ms");
			const cJSON *xc = cJSON_GetObjectItem(cJSON_GetObjectItem(t, "candidate"), "setup_ms");

			have |= cJSON_IsNumber(xb) || cJSON_IsNumber(xc);
			sb += cJSON_IsNumber(xb) ? xb->valuedouble : 0;
			sc += cJSON_IsNumber(xc) ? xc->valuedouble : 0;
		}
		if (have)
			r->setup = fs_printf("setup (prepare, first launches, graph captures) baseline %.2f s, "
					     "candidate %.2f s",
					     sb * 1e-3, sc * 1e-3);
	}
	r->ntasks = cJSON_GetArraySize(tasks);
	r->ran_tasks = 0;
	cJSON_ArrayForEach(t, tasks) r->ran_tasks += !cJSON_GetObjectItem(t, "skipped");
	r->tier = dupz(cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetObjectItem(e->result, "plan"), "tier")));
	r->coverage = fs_printf("tier %s, %d of %d tasks ran%s", r->tier && *r->tier ? r->tier : "?", r->ran_tasks,
				r->ntasks, r->ran_tasks < r->ntasks ? " (the others skipped: not supported)" : "");
	r->nflags = 0;
	r->flag_list = calloc((size_t)cJSON_GetArraySize(flags) + 4 * (size_t)r->ntasks + 2, sizeof(*r->flag_list));
	if (!r->flag_list)
		return;
	/*
	 * do no harm first (what a reader must not miss), then where a reference outran the candidate,
	 * then the run's flags, then the baseline's
	 */
	if ((r->flag_list[r->nflags] = report_e2e_harm_flag(e->result)))
		r->nflags++;
	cJSON_ArrayForEach(t, tasks) if ((r->flag_list[r->nflags] = report_harm_flag(t))) r->nflags++;
	r->nharm = r->nflags;
	cJSON_ArrayForEach(t, tasks) if ((r->flag_list[r->nflags] = report_outpaced_flag(t))) r->nflags++;
	cJSON_ArrayForEach(fl, flags) if (cJSON_GetStringValue(fl) &&
					  (r->flag_list[r->nflags] = strdup(cJSON_GetStringValue(fl)))) r->nflags++;
	/* GPU evidence only (report.h) */
	if (!backend || strcmp(backend, "cpu"))
		cJSON_ArrayForEach(t, tasks) if ((r->flag_list[r->nflags] =
							  report_tuning_flag(t, VS_TUNING_REVIEW_BOUND))) r->nflags++;
	cJSON_ArrayForEach(t, tasks) if ((r->flag_list[r->nflags] = report_baseline_flag(t, VS_BASELINE_REVIEW_BOUND)))
		r->nflags++;
	/* a task is flagged when a flag names it ("task NAME: ...") */
	cJSON_ArrayForEach(t, tasks)
	{
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(t, "name"));
		int hit = 0;

		for (int k = 0; name && k < r->nflags && !hit; k++)
			hit = !strncmp(r->flag_list[k], "task ", 5) &&
			      !strncmp(r->flag_list[k] + 5, name, strlen(name)) &&
			      r->flag_list[k][5 + strlen(name)] == ':';
		r->flagged_tasks += hit;
	}
	for (int k = 0; k < r->nflags; k++)
		cap += strlen(r->flag_list[k]) + 2;
	if (r->nflags && (r->flags = calloc(cap, 1)))
		for (int k = 0; k < r->nflags; k++) {
			if (k)
				strcat(r->flags, "; ");
			strcat(r->flags, r->flag_list[k]);
		}
}

/* ---- end to end (docs/DESIGN.md "End to end") ----------------------------------------------- */

static void md(FILE *f, const char *s);

/*
 * A verified evidence's e2e numbers: {step, e2e_pct, control_pct (each {estimate, ci95} or null),
 * tasks: [{name, status, baseline_ms, candidate_ms, share_baseline, share_candidate, e2e_pct,
 * control_pct, peak_baseline_bytes, peak_candidate_bytes, step_bytes}]}; NULL when the run had
 * no e2e stage.
 */
static cJSON *e2e_summary(const struct evidence *e)
{
	const cJSON *ov = cJSON_GetObjectItem(e->result, "e2e"), *t;
	cJSON *j, *tasks;

	if (!cJSON_IsObject(ov))
		return NULL;
	j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "step", nz_str(cJSON_GetStringValue(cJSON_GetObjectItem(ov, "step"))));
	cJSON_AddItemToObject(j, "e2e_pct", cJSON_Duplicate(cJSON_GetObjectItem(ov, "e2e_pct"), 1));
	cJSON_AddItemToObject(j, "control_pct",
			      cJSON_IsObject(cJSON_GetObjectItem(ov, "control_pct")) ?
				      cJSON_Duplicate(cJSON_GetObjectItem(ov, "control_pct"), 1) :
				      cJSON_CreateNull());
	cJSON_AddStringToObject(j, "parity", nz_str(cJSON_GetStringValue(cJSON_GetObjectItem(ov, "parity"))));
	tasks = cJSON_AddArrayToObject(j, "tasks");
	cJSON_ArrayForEach(t, cJSON_GetObjectItem(e->result, "tasks"))
	{
		const cJSON *te = cJSON_GetObjectItem(t, "e2e");
		cJSON *o;

		if (!cJSON_IsObject(te))
			continue;
		o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", nz_str(cJSON_GetStringValue(cJSON_GetObjectItem(t, "name"))));
		cJSON_AddStringToObject(o, "status", nz_str(cJSON_GetStringValue(cJSON_GetObjectItem(te, "status"))));
		if (cJSON_GetStringValue(cJSON_GetObjectItem(te, "skipped")))
			cJSON_AddStringToObject(o, "reason", cJSON_GetStringValue(cJSON_GetObjectItem(te, "skipped")));
		else if (cJSON_GetStringValue(cJSON_GetObjectItem(te, "error")))
			cJSON_AddStringToObject(o, "reason", cJSON_GetStringValue(cJSON_GetObjectItem(te, "error")));
		else if (cJSON_GetStringValue(cJSON_GetObjectItem(te, "parity_detail")))
			cJSON_AddStringToObject(o, "reason",
						cJSON_GetStringValue(cJSON_GetObjectItem(te, "parity_detail")));
		if (cJSON_IsObject(cJSON_GetObjectItem(te, "e2e_pct"))) {
			const cJSON *b = cJSON_GetObjectItem(te, "baseline"), *c = cJSON_GetObjectItem(te, "candidate");

			cJSON_AddNumberToObject(o, "baseline_ms",
						cJSON_GetNumberValue(cJSON_GetObjectItem(b, "median_ms")));
			cJSON_AddNumberToObject(o, "candidate_ms",
						cJSON_GetNumberValue(cJSON_GetObjectItem(c, "median_ms")));
			if (cJSON_IsNumber(cJSON_GetObjectItem(b, "attention_share")))
				cJSON_AddNumberToObject(o, "share_baseline",
							cJSON_GetNumberValue(
								cJSON_GetObjectItem(b, "attention_share")));
			if (cJSON_IsNumber(cJSON_GetObjectItem(c, "attention_share")))
				cJSON_AddNumberToObject(o, "share_candidate",
							cJSON_GetNumberValue(
								cJSON_GetObjectItem(c, "attention_share")));
			cJSON_AddItemToObject(o, "e2e_pct", cJSON_Duplicate(cJSON_GetObjectItem(te, "e2e_pct"), 1));
			cJSON_AddItemToObject(o, "control_pct",
					      cJSON_Duplicate(cJSON_GetObjectItem(te, "control_pct"), 1));
		}
		cJSON_AddItemToObject(o, "memory", cJSON_Duplicate(cJSON_GetObjectItem(te, "memory"), 1));
		cJSON_AddItemToArray(tasks, o);
	}
	return j;
}

/* "12.34% [11.00, 13.50]" of a {estimate, ci95} object, or "-". */
static void pct_cell(char *buf, size_t cap, const cJSON *o)
{
	if (!cJSON_IsObject(o)) {
		snprintf(buf, cap, "-");
		return;
	}
	snprintf(buf, cap, "%.2f%% [%.2f, %.2f]", cJSON_GetNumberValue(cJSON_GetObjectItem(o, "estimate")),
		 cJSON_GetNumberValue(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "ci95"), 0)),
		 cJSON_GetNumberValue(cJSON_GetArrayItem(cJSON_GetObjectItem(o, "ci95"), 1)));
}

/* The cells of one e2e task row: step ms, attention share, e2e_pct, control (or the status). */
static void e2e_task_cells(char cells[5][160], const cJSON *t)
{
	const cJSON *sb = cJSON_GetObjectItem(t, "share_baseline"), *sc = cJSON_GetObjectItem(t, "share_candidate");

	if (!cJSON_IsObject(cJSON_GetObjectItem(t, "e2e_pct"))) {
		snprintf(cells[0], 160, "%s", nz_str(cJSON_GetStringValue(cJSON_GetObjectItem(t, "status"))));
		snprintf(cells[1], 160, "%.150s", nz_str(cJSON_GetStringValue(cJSON_GetObjectItem(t, "reason"))));
		snprintf(cells[2], 160, "-");
		snprintf(cells[3], 160, "-");
		snprintf(cells[4], 160, "-");
		return;
	}
	snprintf(cells[0], 160, "%.4f -> %.4f", cJSON_GetNumberValue(cJSON_GetObjectItem(t, "baseline_ms")),
		 cJSON_GetNumberValue(cJSON_GetObjectItem(t, "candidate_ms")));
	if (cJSON_IsNumber(sb) && cJSON_IsNumber(sc))
		snprintf(cells[1], 160, "%.0f%% -> %.0f%%", 100 * sb->valuedouble, 100 * sc->valuedouble);
	else
		snprintf(cells[1], 160, "-");
	pct_cell(cells[2], 160, cJSON_GetObjectItem(t, "e2e_pct"));
	pct_cell(cells[3], 160, cJSON_GetObjectItem(t, "control_pct"));
	{
		const cJSON *m = cJSON_GetObjectItem(t, "memory");
		double pb = cJSON_GetNumberValue(cJSON_GetObjectItem(m, "peak_baseline_bytes"));
		double pc = cJSON_GetNumberValue(cJSON_GetObjectItem(m, "peak_candidate_bytes"));
		double sk = cJSON_GetNumberValue(cJSON_GetObjectItem(m, "step_bytes"));

		if (pb >= 0 && pc >= 0)
			snprintf(cells[4], 160, "step %.0f MiB; peak %.1f / %.1f MiB", sk / 1048576, pb / 1048576,
				 pc / 1048576);
		else
			snprintf(cells[4], 160, "step %.1f MiB", sk / 1048576);
	}
}

static const char *const e2e_heads[6] = {"task",    "step ms (baseline -> candidate)", "attention share",
					 "e2e_pct", "control (baseline vs baseline)",  "memory"};

/* The e2e numbers of every card whose evidence has them: one line each, then a table per card. */
static void print_e2e_text(FILE *f, struct row *rows, int n, int markdown)
{
	for (int i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		const cJSON *t;
		char a[96], c[96];

		if (!r->e2e)
			continue;
		pct_cell(a, sizeof(a), cJSON_GetObjectItem(r->e2e, "e2e_pct"));
		pct_cell(c, sizeof(c), cJSON_GetObjectItem(r->e2e, "control_pct"));
		if (markdown) {
			fprintf(f, "\n**%s**: end to end (%s): e2e_pct %s, control %s, e2e parity %s\n\n| ", r->id,
				cJSON_GetStringValue(cJSON_GetObjectItem(r->e2e, "step")), a, c,
				cJSON_GetStringValue(cJSON_GetObjectItem(r->e2e, "parity")));
			for (int k = 0; k < 6; k++)
				fprintf(f, "%s | ", e2e_heads[k]);
			fputs("\n|---|---|---|---|---|---|\n", f);
		} else {
			fprintf(f, "  %s: e2e (%s): e2e_pct %s, control %s, e2e parity %s\n", r->id,
				cJSON_GetStringValue(cJSON_GetObjectItem(r->e2e, "step")), a, c,
				cJSON_GetStringValue(cJSON_GetObjectItem(r->e2e, "parity")));
		}
		cJSON_ArrayForEach(t, cJSON_GetObjectItem(r->e2e, "tasks"))
		{
			char cells[5][160];

			e2e_task_cells(cells, t);
			if (markdown) {
				fprintf(f, "| %s | ", cJSON_GetStringValue(cJSON_GetObjectItem(t, "name")));
				for (int k = 0; k < 5; k++) {
					md(f, cells[k]);
					fputs(" | ", f);
				}
				fputc('\n', f);
			} else if (!cJSON_IsObject(cJSON_GetObjectItem(t, "e2e_pct"))) {
				/* not run (the task failed before the e2e stage) or failed: the status and its reason */
				fprintf(f, "  %s:   %-28s e2e %s%s%s\n", r->id,
					cJSON_GetStringValue(cJSON_GetObjectItem(t, "name")), cells[0],
					*cells[1] ? ": " : "", cells[1]);
			} else {
				fprintf(f, "  %s:   %-28s step %s ms, attention share %s, e2e_pct %s, control %s; %s\n",
					r->id, cJSON_GetStringValue(cJSON_GetObjectItem(t, "name")), cells[0], cells[1],
					cells[2], cells[3], cells[4]);
			}
		}
	}
}

/* "flagged for review on 12 of 19 tasks" (or "3 review flags" when no flag names a task). */
static void flag_summary(char *buf, size_t cap, const struct row *r)
{
	if (r->flagged_tasks)
		snprintf(buf, cap, "flagged for review on %d of %d task%s", r->flagged_tasks, r->ntasks,
			 r->ntasks == 1 ? "" : "s");
	else
		snprintf(buf, cap, "%d review flag%s", r->nflags, r->nflags == 1 ? "" : "s");
}

/* Whether the card's emitted plan for gen carries a passing build gate. */
static int built_for(const char *plans_dir, const char *id, const char *gen)
{
	char *path = fs_printf("%s/%s.plan.json", plans_dir, id), *text = NULL;
	size_t len;
	cJSON *root = NULL;
	int built = 0, quiet = vs_error_set_quiet(1);

	if (path && fs_exists(path) && !fs_read_file(&text, &len, path, 64u << 20)) {
		const cJSON *b;
		const char *g;

		root = cJSON_Parse(text);
		b = cJSON_GetObjectItem(root, "build");
		g = cJSON_GetStringValue(cJSON_GetObjectItem(root, "gen"));
		built = root && g && !strcmp(g, gen) && cJSON_IsTrue(cJSON_GetObjectItem(b, "pass")) &&
			cJSON_GetArraySize(cJSON_GetObjectItem(b, "kernels")) > 0;
	}
	vs_error_set_quiet(quiet);
	cJSON_Delete(root);
	free(text);
	free(path);
	return built;
}

static int days_since(const char *date)
{
	struct tm tm;
	char today[11];
	time_t a, b;

	memset(&tm, 0, sizeof(tm));
	if (!date || sscanf(date, "%d-%d-%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday) != 3)
		return -1;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	a = timegm(&tm);
	fs_today_utc(today);
	memset(&tm, 0, sizeof(tm));
	sscanf(today, "%d-%d-%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday);
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	b = timegm(&tm);
	return (int)((b - a) / 86400);
}

/* The interpreter's versions of python and of the named modules, as a JSON object (owned), or NULL. */
static cJSON *versions_now(const char *exe, const cJSON *names)
{
	/* as the bridge reads them (kernels/python/mla_decode.py versions()): __version__ after import */
	static const char probe[] = "import contextlib,importlib,json,platform,sys\n"
				    "v={'python':platform.python_version()}\n"
				    "for n in sys.argv[1:]:\n"
				    " try:\n"
				    "  with contextlib.redirect_stdout(sys.stderr): mod=importlib.import_module(n)\n"
				    "  v[n]=str(getattr(mod,'__version__','unknown'))\n"
				    " except Exception: v[n]='not importable'\n"
				    "print(json.dumps(v))\n";
	char *cmd = NULL, *out = NULL, *next;
	const cJSON *k;
	size_t len = 0;
	FILE *p, *m;
	cJSON *j = NULL;

	if (!exe || !*exe || strchr(exe, '\'') || access(exe, X_OK))
		return NULL; /* the interpreter that ran is not here: nothing to compare (a checker's machine) */
	cmd = fs_printf("'%s' -c \"$VS_VERSION_PROBE\"", exe);
	cJSON_ArrayForEach(k, names)
	{
		if (!k->string || !strcmp(k->string, "python") ||
		    strspn(k->string, "abcdefghijklmnopqrstuvwxyz"
				      "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") != strlen(k->string))
			continue;
		next = cmd ? fs_printf("%s %s", cmd, k->string) : NULL;
		free(cmd);
		cmd = next;
	}
	if (!cmd || setenv("VS_VERSION_PROBE", probe, 1)) {
		free(cmd);
		return NULL;
	}
	next = fs_printf("%s 2>/dev/null", cmd);
	free(cmd);
	p = next ? popen(next, "r") : NULL;
	free(next);
	if (!p)
		return NULL;
	m = open_memstream(&out, &len);
	if (m) {
		char buf[4096];
		size_t n;

		while ((n = fread(buf, 1, sizeof(buf), p)) > 0)
			fwrite(buf, 1, n, m);
		fclose(m);
	}
	if (pclose(p) == 0 && out)
		j = cJSON_Parse(out);
	free(out);
	unsetenv("VS_VERSION_PROBE");
	return j;
}

/*
 * GEAK's lifecycle: evidence measured with other versions of what the kernels ran on than those
 * installed now is stale. For every Python implementation of a verified result.json ("python":
 * its interpreter and the versions seen when it ran), the same interpreter is asked for python's
 * and those modules' versions now; the first that moved is said in why ("triton 3.1.0 when
 * measured, 3.2.0 now (baseline triton.mla_decode)"). 1 when one moved, else 0 (also when the
 * interpreter is not here to ask).
 */
static int version_drift(char *why, size_t cap, const cJSON *result)
{
	const cJSON *t;

	cJSON_ArrayForEach(t, cJSON_GetObjectItem(result, "python"))
	{
		const cJSON *then = cJSON_GetObjectItem(t, "versions"), *k;
		const char *exe = cJSON_GetStringValue(cJSON_GetObjectItem(t, "executable"));
		cJSON *now;

		if (!cJSON_IsObject(then) || !then->child)
			continue;
		if (!exe || !*exe)
			exe = cJSON_GetStringValue(cJSON_GetObjectItem(t, "interpreter"));
		if (!(now = versions_now(exe, then)))
			continue;
		cJSON_ArrayForEach(k, then)
		{
			const char *a = cJSON_GetStringValue(k);
			const char *b = cJSON_GetStringValue(cJSON_GetObjectItem(now, k->string));

			if (a && b && strcmp(a, b)) {
				snprintf(why, cap, "%s %s when measured, %s now (%s %s): re-measure", k->string, a, b,
					 nz_str(cJSON_GetStringValue(cJSON_GetObjectItem(t, "role"))),
					 nz_str(cJSON_GetStringValue(cJSON_GetObjectItem(t, "impl"))));
				cJSON_Delete(now);
				return 1;
			}
		}
		cJSON_Delete(now);
	}
	return 0;
}

/*
 * A card whose claim the evidence does not prove: its status shows that ("unverified", red), never
 * the claim, and nothing it claims is drawn.
 */
static void unverified(struct row *r)
{
	free(r->status);
	r->status = strdup("unverified");
	r->has_measured = 0;
}

/* Evidence that does not prove the card's claim: what it is and why, counted; the row unverified. */
static void evidence_mismatch(struct row *r, const char *evidence, const char *why, int *mismatches)
{
	r->evidence = strdup(evidence);
	r->evidence_why = strdup(why);
	(*mismatches)++;
	unverified(r);
}

/* result.json's overall.workload.<key> of a workload run, or NULL. */
static const cJSON *workload_result(const struct evidence *e, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(e->result, "overall"), "workload"),
		key);
}

/* "task 41%, task 30%": the tasks carrying most of the workload's baseline time (result.json). */
static char *time_share_line(const struct evidence *e)
{
	const cJSON *ts = workload_result(e, "time_share");
	const cJSON *x;
	char buf[512] = "";

	cJSON_ArrayForEach(x, ts)
	{
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(x, "task");
		const cJSON *sh = cJSON_GetObjectItemCaseSensitive(x, "baseline_time_share");

		if (cJSON_IsString(t) && cJSON_IsNumber(sh))
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s %.0f%%", *buf ? ", " : "",
				 t->valuestring, sh->valuedouble * 100);
	}
	return *buf ? strdup(buf) : NULL;
}

/*
 * "1: 0.952 [0.940, 0.961]; 64: 1.031 [1.020, 1.040]": the workload speedup at each concurrency level
 * of the run (result.json overall.workload.per_concurrency, issue 41), or NULL when it has none.
 */
static char *per_concurrency_line(const struct evidence *e)
{
	const cJSON *pc = workload_result(e, "per_concurrency");
	const cJSON *x;
	char buf[1024] = "";

	cJSON_ArrayForEach(x, pc)
	{
		const cJSON *c = cJSON_GetObjectItemCaseSensitive(x, "concurrency");
		const cJSON *sp = cJSON_GetObjectItemCaseSensitive(x, "speedup");
		const cJSON *ci = cJSON_GetObjectItemCaseSensitive(sp, "ci95");

		if (cJSON_IsNumber(c) && cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(sp, "estimate")) &&
		    cJSON_GetArraySize(ci) == 2)
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%d: %.3f [%.3f, %.3f]",
				 *buf ? "; " : "", c->valueint,
				 cJSON_GetObjectItemCaseSensitive(sp, "estimate")->valuedouble,
				 cJSON_GetArrayItem(ci, 0)->valuedouble, cJSON_GetArrayItem(ci, 1)->valuedouble);
	}
	return *buf ? strdup(buf) : NULL;
}

/*
 * The workload speedup of each kv dtype of a record (validation.workloads.<w>@<gen>.per_kv_dtype),
 * as a line "bf16 1.312 [1.300, 1.330]; fp8_e4m3_fnuz 0.910 [0.900, 0.920]" into w->per_kv and as
 * JSON into w->per_kv_json; nothing for a record without it (a plan of one kv dtype).
 */
static void per_kv_fill(struct wl_row *w, const struct card_workload_record *rec)
{
	char buf[1024] = "";

	if (!rec->nkv)
		return;
	w->per_kv_json = cJSON_CreateArray();
	for (int k = 0; k < rec->nkv; k++) {
		const struct card_kv_speedup *s = &rec->kv[k];
		cJSON *j = cJSON_CreateObject(), *ci = cJSON_AddObjectToObject(j, "speedup");

		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s %.3f [%.3f, %.3f]", k ? "; " : "",
			 s->kv_dtype, s->speedup, s->lo, s->hi);
		cJSON_AddStringToObject(j, "kv_dtype", s->kv_dtype);
		cJSON_AddNumberToObject(ci, "estimate", s->speedup);
		cJSON_AddItemToObject(ci, "ci95", cJSON_CreateDoubleArray((double[]){s->lo, s->hi}, 2));
		cJSON_AddItemToArray(w->per_kv_json, j);
	}
	w->per_kv = strdup(buf);
}

/*
 * The card's deployments (docs/DESIGN.md "Workloads"): every validation.workloads record, checked
 * against its evidence as the card's own record is, and every workload of expects.workloads with no
 * record ("not run").
 */
static void fill_workloads(struct row *r, const struct card *c, const struct report_options *o, int *mismatches)
{
	const struct card_validation *v = &c->validation;
	int cap = v->nworkloads + c->expects.workloads.count;

	r->wls = calloc((size_t)cap + 1, sizeof(*r->wls));
	if (!r->wls)
		return;
	for (int i = 0; i < v->nworkloads; i++) {
		const struct card_workload_record *rec = &v->workloads[i];
		struct wl_row *w = &r->wls[r->nwls++];
		struct evidence e;
		int status = EVIDENCE_OK, err, quiet;
		char why[160] = "";

		memset(&e, 0, sizeof(e));
		w->workload = dupz(rec->workload);
		w->gen = dupz(rec->gen);
		w->status = dupz(rec->status);
		w->artifact = dupz(rec->artifact);
		w->has_speedup = rec->has_speedup;
		w->est = rec->speedup;
		w->lo = rec->speedup_lo;
		w->hi = rec->speedup_hi;
		w->isolated = rec->isolated;
		per_kv_fill(w, rec);
		for (int k = 0; k < c->expects.workloads.count; k++)
			w->claimed |= !strcmp(c->expects.workloads.items[k], rec->workload);
		quiet = vs_error_set_quiet(1);
		err = evidence_load(&e, &status, rec->artifact, c);
		if (!err && evidence_check_workload_claims(rec, &e, r->path, why, sizeof(why)))
			err = VS_EVERIFY;
		vs_error_set_quiet(quiet);
		if (err && status == EVIDENCE_STALE_CARD) {
			free(w->status);
			w->status = strdup("stale");
			w->evidence = strdup("ok");
			w->why = strdup("card content changed after validation");
		} else if (err) {
			w->evidence = strdup(status == EVIDENCE_MISSING ? "missing" : "mismatch");
			w->why = strdup(*why ? why : vs_last_error());
			(*mismatches)++;
		} else {
			w->evidence = strdup("ok");
			w->weight = time_share_line(&e);
			w->per_conc = per_concurrency_line(&e);
			w->per_conc_json = cJSON_Duplicate(workload_result(&e, "per_concurrency"), 1);
			w->detail = calloc(1, sizeof(*w->detail));
			if (w->detail) {
				fill_shapes(w->detail, &e);
				fill_refs(w->detail, &e);
				w->detail->baseline = dupz(e.baseline);
				w->detail->candidate = dupz(e.candidate);
			}
			if (strcmp(e.kernels_tree, VS_KERNELS_TREE)) {
				free(w->status);
				w->status = strdup("stale");
				w->why = fs_printf("kernels/ changed since validation (tree %.12s, now %.12s)",
						   e.kernels_tree, VS_KERNELS_TREE);
			} else if (days_since(e.date) > o->max_age_days) {
				free(w->status);
				w->status = strdup("stale");
				w->why = fs_printf("evidence is %d days old (limit %d)", days_since(e.date),
						   o->max_age_days);
			}
		}
		evidence_release(&e);
	}
	for (int k = 0; k < c->expects.workloads.count; k++) {
		const char *id = c->expects.workloads.items[k];
		int has = 0;

		for (int i = 0; i < v->nworkloads; i++)
			has |= !strcmp(v->workloads[i].workload, id);
		if (has)
			continue;
		r->wls[r->nwls].workload = dupz(id);
		r->wls[r->nwls].gen = dupz("");
		r->wls[r->nwls].status = dupz("not run");
		r->wls[r->nwls].evidence = dupz("none");
		r->wls[r->nwls++].claimed = 1;
	}
}

static void fill_row(struct row *r, const char *path, const struct report_options *o, int *mismatches)
{
	struct card c;
	struct evidence e;
	const struct card_validation *v;
	int quiet, status = EVIDENCE_OK, err;
	char gens[512] = "";

	memset(&c, 0, sizeof(c));
	memset(&e, 0, sizeof(e));
	r->path = strdup(path);
	quiet = vs_error_set_quiet(1);
	err = card_load(&c, path);
	vs_error_set_quiet(quiet);
	if (err) {
		r->id = card_id_of_path(path);
		r->status = strdup("invalid");
		r->evidence = strdup("invalid card");
		r->evidence_why = strdup(vs_last_error());
		(*mismatches)++;
		goto done;
	}
	v = &c.validation;
	r->id = dupz(c.id);
	r->title = dupz(c.title);
	r->eval_dir = dupz(v->artifact);
	r->cores = -1;
	r->status = dupz(v->status && *v->status ? v->status : "draft");
	r->last_verified = dupz(v->last_verified);
	r->device = dupz(v->gpu);
	r->measured_gen = dupz(v->gen);
	r->has_measured = v->has_isolated;
	r->measured = v->measured_isolated;
	r->has_expected = c.expects.has_isolated_speedup_min;
	r->expected = c.expects.isolated_speedup_min;
	{
		double tol;

		/* a relaxed parity (GEAK's relaxed(<tol>)) is shown with its tolerance */
		r->parity = card_parity_relaxed(c.expects.parity, &tol) && *nz_str(v->measured_parity) ?
				    fs_printf("%s (relaxed %g)", v->measured_parity, tol) :
				    dupz(v->measured_parity);
		r->parity_tol = card_parity_relaxed(c.expects.parity, &tol) ? tol : 0;
	}
	if (*nz_str(v->impl_baseline) || *nz_str(v->impl_candidate))
		r->impls = fs_printf("%s -> %s", nz_str(v->impl_baseline), nz_str(v->impl_candidate));
	else
		r->impls = fs_printf("%s -> %s", *nz_str(c.match.from_backend) ? c.match.from_backend : "?",
				     *nz_str(c.match.to_backend) ? c.match.to_backend : "?");
	/* what --record said beside the speedup: the spread over the card's runs, an older run recorded */
	if (*nz_str(v->spread) && *nz_str(v->recorded_over))
		r->spread = fs_printf("speedup across runs %s; recorded over the newer run %s", v->spread,
				      v->recorded_over);
	else if (*nz_str(v->spread))
		r->spread = fs_printf("speedup across runs %s", v->spread);
	else if (*nz_str(v->recorded_over))
		r->spread = fs_printf("recorded over the newer run %s", v->recorded_over);
	if (!card_operator_planned(&c))
		r->not_planned = fs_printf("not planned here (operator '%s'; this tool plans %s)",
					   c.match.operator_name, card_planned_operators());
	if (v->typed) {
		/* read, never trusted: its own status, never verified, nothing it claims drawn */
		free(r->status);
		r->status = fs_printf("%s (typed, no evidence)", v->status);
		r->typed = 1;
		r->has_measured = 0;
		r->evidence = strdup("none");
		r->evidence_why = fs_printf("a typed validation block (%s): re-measure and --record", v->typed_why);
		(*mismatches)++;
	} else if (!v->artifact || !*v->artifact) {
		if (!strcmp(r->status, "validated") || !strcmp(r->status, "failed")) {
			evidence_mismatch(r, "missing", "status claimed without validation.artifact", mismatches);
		} else {
			r->evidence = strdup("none");
		}
	} else {
		quiet = vs_error_set_quiet(1);
		err = evidence_load(&e, &status, v->artifact, &c);
		vs_error_set_quiet(quiet);
		if (err && status == EVIDENCE_STALE_CARD) {
			free(r->status);
			r->status = strdup("stale");
			r->stale_why =
				strdup(strstr(vs_last_error(), "generator") ? "measured on an earlier generator's "
									      "inputs: run again" :
									      "card content changed after validation");
			r->evidence = strdup("ok");
		} else if (err) {
			evidence_mismatch(r, status == EVIDENCE_MISSING ? "missing" : "mismatch", vs_last_error(),
					  mismatches);
		} else {
			char why[160];
			int bad;

			quiet = vs_error_set_quiet(1);
			bad = evidence_check_claims(v, &e, path, why, sizeof(why));
			vs_error_set_quiet(quiet);
			if (bad) {
				evidence_mismatch(r, "mismatch", why, mismatches);
			} else {
				r->evidence = strdup("ok");
				r->verified = 1;
				free(r->impls);
				r->impls = fs_printf("%s -> %s", e.baseline, e.candidate);
				fill_shapes(r, &e);
				fill_refs(r, &e);
				r->e2e = e2e_summary(&e);
				fill_run(r, &e);
			}
			if (!bad && strcmp(e.kernels_tree, VS_KERNELS_TREE)) {
				free(r->status);
				r->status = strdup("stale");
				r->stale_why = fs_printf("kernels/ changed since validation (tree %.12s, now %.12s)",
							 e.kernels_tree, VS_KERNELS_TREE);
			} else if (!bad && days_since(e.date) > o->max_age_days) {
				free(r->status);
				r->status = strdup("stale");
				r->stale_why = fs_printf("evidence is %d days old (limit %d)", days_since(e.date),
							 o->max_age_days);
			} else if (!bad) {
				char moved[256];

				if (version_drift(moved, sizeof(moved), e.result)) {
					free(r->status);
					r->status = strdup("stale");
					r->stale_why = fs_printf("versions moved since validation: %s", moved);
				}
			}
		}
	}
	for (int i = 0; i < c.match.gens.count; i++) {
		const char *g = c.match.gens.items[i];
		const char *st;

		if (v->gen && !strcmp(v->gen, g) && strcmp(r->status, "draft"))
			st = r->status;
		else if (built_for(o->plans_dir ? o->plans_dir : vs_layout_default.plans, c.id, g))
			st = "built";
		else
			st = "untested";
		snprintf(gens + strlen(gens), sizeof(gens) - strlen(gens), "%s%s:%s", i ? " " : "", g, st);
	}
	r->gens = strdup(gens);
	fill_workloads(r, &c, o, mismatches);
done:
	evidence_release(&e);
	card_release(&c);
}

static void num_or_dash(char *buf, size_t cap, int has, double v)
{
	if (has)
		snprintf(buf, cap, "%.3f", v);
	else
		snprintf(buf, cap, "-");
}

/* The run a row's evidence describes, in one line: "cpu.naive vs cpu.splitkv, 2 cores; configs ...". */
static void run_line(char *buf, size_t cap, const struct row *r)
{
	char cores[32] = "";

	if (!r->baseline) {
		snprintf(buf, cap, "-");
		return;
	}
	if (r->cores > 0)
		snprintf(cores, sizeof(cores), ", %d cores", r->cores);
	snprintf(buf, cap, "%s vs %s on %s%s; %s%s%s%s%s; chosen configs: %s", r->baseline, r->candidate,
		 r->device && *r->device ? r->device : "?", cores, r->coverage ? r->coverage : "tier ?",
		 r->spread ? "; " : "", r->spread ? r->spread : "", r->setup ? "; " : "", r->setup ? r->setup : "",
		 r->configs ? r->configs : "-");
}

/* s with '|' escaped and newlines as spaces, for a markdown table cell. */
static void md(FILE *f, const char *s)
{
	for (; s && *s; s++)
		if (*s == '|')
			fputs("\\|", f);
		else
			fputc(*s == '\n' ? ' ' : *s, f);
}

static void print_text(FILE *f, struct row *rows, int n, int markdown)
{
	if (markdown) {
		fprintf(f,
			"| card | title | status | gens | last verified | device | speedup (measured / min) | parity | "
			"evidence | run | eval dir |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
	} else {
		fprintf(f, "%-30s %-10s %-34s %-10s %-14s %-17s %-6s %-15s %-31s %s\n", "card", "status", "gens",
			"verified", "device", "speedup meas/min", "parity", "tier: tasks ran", "implementations",
			"evidence");
	}
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];
		char m[32], e[32], sp[80], fl[96] = "", run[1200];

		num_or_dash(m, sizeof(m), r->has_measured, r->measured);
		num_or_dash(e, sizeof(e), r->has_expected, r->expected);
		snprintf(sp, sizeof(sp), "%s / %s", m, e);
		if (r->nflags)
			flag_summary(fl, sizeof(fl), r);
		run_line(run, sizeof(run), r);
		if (markdown) {
			fprintf(f, "| %s | ", r->id);
			md(f, r->title && *r->title ? r->title : "-");
			fprintf(f, " | %s | %s | %s | %s | %s | %s | ", r->status, r->gens ? r->gens : "",
				r->last_verified && *r->last_verified ? r->last_verified : "-",
				r->device && *r->device ? r->device : "-", sp,
				r->parity && *r->parity ? r->parity : "-");
			md(f, r->evidence);
			if (r->evidence_why) {
				fputs(": ", f);
				md(f, r->evidence_why);
			}
			if (r->not_planned) {
				fputs("; ", f);
				md(f, r->not_planned);
			}
			if (r->nflags)
				fprintf(f, ", **%s** (below)", fl);
			fputs(" | ", f);
			md(f, run);
			fprintf(f, " | %s |\n", r->eval_dir && *r->eval_dir ? r->eval_dir : "-");
		} else {
			char ev[128];

			char cov[64] = "-";

			if (r->tier)
				snprintf(cov, sizeof(cov), "%s: %d/%d", *r->tier ? r->tier : "?", r->ran_tasks,
					 r->ntasks);
			snprintf(ev, sizeof(ev), "%s%s%s", r->evidence, r->nflags ? ", FLAGGED: " : "",
				 r->nflags ? fl : "");
			fprintf(f, "%-30s %-10s %-34s %-10s %-14s %-17s %-6s %-15s %-31s %s\n", r->id, r->status,
				r->gens ? r->gens : "", r->last_verified && *r->last_verified ? r->last_verified : "-",
				r->device && *r->device ? r->device : "-", sp,
				r->parity && *r->parity ? r->parity : "-", cov, r->impls && *r->impls ? r->impls : "-",
				ev);
		}
	}
	if (markdown) {
		/* The flags on demand: one folded block per flagged card. */
		for (int i = 0; i < n; i++) {
			char fl[96];

			if (!rows[i].nflags)
				continue;
			flag_summary(fl, sizeof(fl), &rows[i]);
			fprintf(f, "\n<details><summary>%s: %s</summary>\n\n", rows[i].id, fl);
			for (int k = 0; k < rows[i].nflags; k++) {
				fputs("- ", f);
				md(f, rows[i].flag_list[k]);
				fputc('\n', f);
			}
			fputs("\n</details>\n", f);
		}
		return;
	}
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];
		char run[1200];

		run_line(run, sizeof(run), r);
		fprintf(f, "  %s: \"%s\"; ", r->id, r->title ? r->title : "");
		if (r->eval_dir && *r->eval_dir)
			fprintf(f, "eval dir %s; %s\n", r->eval_dir, run);
		else
			fprintf(f, "no eval dir\n");
		if (r->evidence_why)
			fprintf(f, "  %s: evidence %s: %s\n", r->id, r->evidence, r->evidence_why);
		if (r->stale_why)
			fprintf(f, "  %s: stale: %s\n", r->id, r->stale_why);
		if (r->not_planned)
			fprintf(f, "  %s: %s\n", r->id, r->not_planned);
		if (r->nflags) {
			char fl[96];

			/* The count and the first flag; every flag with --format json, markdown or html. */
			flag_summary(fl, sizeof(fl), r);
			fprintf(f, "  %s: %s (%d flag%s): %s%s\n", r->id, fl, r->nflags, r->nflags == 1 ? "" : "s",
				r->flag_list[0],
				r->nflags > 1 ? "; ... (all: --report --format json, markdown or html)" : "");
		}
	}
}

/* ---- deployments (workloads) ------------------------------------------------------------- */

static void wl_cells(char sp[96], char iso[32], const struct wl_row *w)
{
	if (w->has_speedup)
		snprintf(sp, 96, "%.3f [%.3f, %.3f]", w->est, w->lo, w->hi);
	else
		snprintf(sp, 96, "-");
	if (w->has_speedup)
		snprintf(iso, 32, "%.3f", w->isolated);
	else
		snprintf(iso, 32, "-");
}

/* Each (card, gen, workload) verdict, with where the workload's time lies. Nothing when no card has one. */
static void print_workloads_text(FILE *f, struct row *rows, int n, int markdown)
{
	int any = 0;

	for (int i = 0; i < n; i++)
		any |= rows[i].nwls > 0;
	if (!any)
		return;
	if (markdown)
		fprintf(f,
			"\n**Deployments** (a workload's verdict gates on its workload speedup, sum w x t_base / sum w "
			"x t_cand; the equal-weight geomean stands beside it)\n\n| card | workload | gen | status | "
			"workload speedup | geomean | by concurrency | evidence | where the time lies "
			"|\n|---|---|---|---|---|---|---|---|---|\n");
	else
		fprintf(f,
			"\ndeployments (verdict on the workload speedup, sum w x t_base / sum w x t_cand; geomean "
			"beside it):\n%-30s %-28s %-8s %-10s %-25s %-8s %s\n",
			"card", "workload", "gen", "status", "workload speedup", "geomean", "evidence");
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < rows[i].nwls; k++) {
			const struct wl_row *w = &rows[i].wls[k];
			char sp[96], iso[32], wl[160];

			wl_cells(sp, iso, w);
			snprintf(wl, sizeof(wl), "%s%s", w->workload, w->claimed ? "" : " (not claimed)");
			if (markdown) {
				/* several kv dtypes: each one's speedup (the gate) in the cell, the mix after them */
				if (w->per_kv)
					fprintf(f, "| %s | %s | %s | %s | %s; mix %s | %s | %s | ", rows[i].id, wl,
						*w->gen ? w->gen : "-", w->status, w->per_kv, sp, iso,
						w->per_conc ? w->per_conc : "-");
				else
					fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | ", rows[i].id, wl,
						*w->gen ? w->gen : "-", w->status, sp, iso,
						w->per_conc ? w->per_conc : "-");
				md(f, w->evidence);
				if (w->why) {
					fputs(": ", f);
					md(f, w->why);
				}
				fputs(" | ", f);
				md(f, w->weight ? w->weight : "-");
				fputs(" |\n", f);
			} else {
				fprintf(f, "%-30s %-28s %-8s %-10s %-25s %-8s %s\n", rows[i].id, wl,
					*w->gen ? w->gen : "-", w->status, sp, iso, w->evidence);
				if (w->per_kv)
					fprintf(f,
						"  %s %s: by kv dtype (each gated) %s; the speedup above is their "
						"mix\n",
						rows[i].id, w->workload, w->per_kv);
				if (w->per_conc)
					fprintf(f, "  %s %s: by concurrency %s\n", rows[i].id, w->workload,
						w->per_conc);
				if (w->weight)
					fprintf(f, "  %s %s: the baseline's time lies in %s\n", rows[i].id, w->workload,
						w->weight);
				if (w->why)
					fprintf(f, "  %s %s: %s\n", rows[i].id, w->workload, w->why);
			}
		}
	}
}

static void ref_cell(char *buf, size_t cap, const struct ref_task *rt, int with_reason);
static cJSON *ci_obj(int has, double est, double lo, double hi);

/* A median in ms, or "-" (not timed). */
static void ms_text(char *buf, size_t cap, double ms)
{
	if (ms > 0)
		snprintf(buf, cap, "%.4f", ms);
	else
		snprintf(buf, cap, "-");
}

/* A task's speedup cell: "est [lo, hi]", or why it has none. */
static void speedup_text(char *buf, size_t cap, const struct shape_speedup *sh)
{
	if (sh->timed)
		snprintf(buf, cap, "%.3f [%.3f, %.3f]", sh->est, sh->lo, sh->hi);
	else
		snprintf(buf, cap, "%s", sh->skipped ? "skipped" : "not timed");
}

/* A text column as wide as the implementation's name, 12 at least (FlashMLA's name is 22). */
static int name_width(const char *name)
{
	int n = (int)strlen(name);

	return n > 12 ? n : 12;
}

/*
 * Each deployment's tasks (a verified workload run): per task the baseline's and the candidate's
 * median ms, the speedup with its 95% CI, and each reference's median ms and t_ref / t_cand, so
 * every implementation of the run stands beside the baseline task by task; text or markdown.
 */
static void print_workload_tasks_text(FILE *f, struct row *rows, int n, int markdown)
{
	char c[256], b[32], d[32];

	for (int i = 0; i < n; i++) {
		for (int k = 0; k < rows[i].nwls; k++) {
			const struct wl_row *w = &rows[i].wls[k];
			const struct row *t = w->detail;
			int wb, wc;

			if (!t || !t->nshapes)
				continue;
			wb = name_width(t->baseline);
			wc = name_width(t->candidate);
			if (markdown) {
				fprintf(f,
					"\n### %s on %s@%s: per task\n\nMedian ms of each implementation (graph replay "
					"or "
					"launch, as planned) and, for the candidate, the speedup t_base / t_cand; for "
					"each "
					"reference, t_ref / t_cand (above 1 the candidate is faster; references never "
					"gate).\n\n| task | %s ms | %s ms | speedup |",
					rows[i].id, w->workload, w->gen, t->baseline, t->candidate);
				for (int r = 0; r < t->nrefs; r++)
					fprintf(f, " %s ms | %s t_ref / t_cand |", t->refs[r].impl, t->refs[r].impl);
				fprintf(f, "\n|---|---|---|---|");
				for (int r = 0; r < t->nrefs; r++)
					fprintf(f, "---|---|");
				fprintf(f, "\n");
			} else {
				fprintf(f,
					"  %s on %s@%s, per task (median ms; speedup t_base / t_cand; t_ref / "
					"t_cand):\n",
					rows[i].id, w->workload, w->gen);
				fprintf(f, "    %-34s %-*s %-*s %-24s", "task", wb, t->baseline, wc, t->candidate,
					"speedup");
				for (int r = 0; r < t->nrefs; r++)
					fprintf(f, " %-*s %-24s", name_width(t->refs[r].impl), t->refs[r].impl,
						"t_ref / t_cand");
				fprintf(f, "\n");
			}
			for (int s = 0; s < t->nshapes; s++) {
				const struct shape_speedup *sh = &t->shapes[s];

				ms_text(b, sizeof(b), sh->base_ms);
				ms_text(d, sizeof(d), sh->cand_ms);
				speedup_text(c, sizeof(c), sh);
				if (markdown)
					fprintf(f, "| %s | %s | %s | %s |", sh->name, b, d, c);
				else
					fprintf(f, "    %-34s %-*s %-*s %-24s", sh->name, wb, b, wc, d, c);
				for (int r = 0; r < t->nrefs; r++) {
					ms_text(b, sizeof(b), t->refs[r].tasks[s].ms);
					ref_cell(c, sizeof(c), &t->refs[r].tasks[s], 0);
					if (markdown)
						fprintf(f, " %s | %s |", b, c);
					else
						fprintf(f, " %-*s %-24s", name_width(t->refs[r].impl), b, c);
				}
				fprintf(f, "\n");
			}
		}
	}
}

/* A deployment's tasks as JSON (print_workload_tasks_text()'s numbers; ms 0 when not timed). */
static cJSON *workload_tasks_json(const struct row *t)
{
	cJSON *arr = cJSON_CreateArray();

	for (int s = 0; arr && s < t->nshapes; s++) {
		const struct shape_speedup *sh = &t->shapes[s];
		cJSON *j = cJSON_CreateObject(), *refs;

		cJSON_AddStringToObject(j, "task", sh->name);
		cJSON_AddNumberToObject(j, "baseline_ms", sh->base_ms);
		cJSON_AddNumberToObject(j, "candidate_ms", sh->cand_ms);
		cJSON_AddItemToObject(j, "speedup", ci_obj(sh->timed, sh->est, sh->lo, sh->hi));
		refs = cJSON_AddArrayToObject(j, "references");
		for (int r = 0; refs && r < t->nrefs; r++) {
			const struct ref_task *rt = &t->refs[r].tasks[s];
			cJSON *o = cJSON_CreateObject();

			cJSON_AddStringToObject(o, "impl", t->refs[r].impl);
			cJSON_AddStringToObject(o, "status", rt->status);
			cJSON_AddNumberToObject(o, "ms", rt->ms);
			cJSON_AddItemToObject(o, "ratio", ci_obj(rt->has, rt->est, rt->lo, rt->hi));
			cJSON_AddItemToArray(refs, o);
		}
		cJSON_AddItemToArray(arr, j);
	}
	return arr;
}

static cJSON *workloads_json(const struct row *r)
{
	cJSON *arr = cJSON_CreateArray();

	for (int k = 0; arr && k < r->nwls; k++) {
		const struct wl_row *w = &r->wls[k];
		cJSON *j = cJSON_CreateObject();

		cJSON_AddStringToObject(j, "workload", w->workload);
		cJSON_AddStringToObject(j, "gen", w->gen);
		cJSON_AddStringToObject(j, "status", w->status);
		cJSON_AddBoolToObject(j, "claimed", w->claimed);
		if (w->has_speedup) {
			cJSON *ci = cJSON_AddObjectToObject(j, "workload_speedup");

			cJSON_AddNumberToObject(ci, "estimate", w->est);
			cJSON_AddItemToObject(ci, "ci95", cJSON_CreateDoubleArray((double[]){w->lo, w->hi}, 2));
			cJSON_AddNumberToObject(j, "geomean", w->isolated);
		} else {
			cJSON_AddNullToObject(j, "workload_speedup");
		}
		cJSON_AddStringToObject(j, "evidence", w->evidence);
		if (w->why)
			cJSON_AddStringToObject(j, "detail", w->why);
		if (w->weight)
			cJSON_AddStringToObject(j, "time_share", w->weight);
		if (w->per_conc_json)
			cJSON_AddItemToObject(j, "per_concurrency", cJSON_Duplicate(w->per_conc_json, 1));
		if (w->per_kv_json)
			cJSON_AddItemToObject(j, "per_kv_dtype", cJSON_Duplicate(w->per_kv_json, 1));
		cJSON_AddStringToObject(j, "eval_dir", w->artifact ? w->artifact : "");
		if (w->detail && w->detail->nshapes) {
			cJSON_AddStringToObject(j, "baseline", w->detail->baseline);
			cJSON_AddStringToObject(j, "candidate", w->detail->candidate);
			cJSON_AddItemToObject(j, "tasks", workload_tasks_json(w->detail));
		}
		cJSON_AddItemToArray(arr, j);
	}
	return arr;
}

/* ---- references ------------------------------------------------------------------------- */

/* One cell of a references table: "est [lo, hi]", or the status (with the reason when long is set). */
static void ref_cell(char *buf, size_t cap, const struct ref_task *rt, int with_reason)
{
	if (rt->has)
		snprintf(buf, cap, "%.3f [%.3f, %.3f]", rt->est, rt->lo, rt->hi);
	else if (with_reason && rt->reason)
		snprintf(buf, cap, "%s: %s", rt->status, rt->reason);
	else if (rt->reason && !strcmp(rt->status, "failed"))
		snprintf(buf, cap, "failed (%s)", rt->reason);
	else
		snprintf(buf, cap, "%s", rt->status);
}

static void overall_cell(char *buf, size_t cap, const struct ref_summary *rs)
{
	if (rs->has)
		snprintf(buf, cap, "%.3f [%.3f, %.3f]", rs->est, rs->lo, rs->hi);
	else
		snprintf(buf, cap, "-");
}

/*
 * The references of every card whose evidence has them: per task the ratio t_impl / t_cand with its
 * 95% CI of the baseline (the speedup) and of each reference, overall the geometric means; text
 * (columns; the skip reasons listed below) or markdown (one table per card).
 */
static void print_refs_text(FILE *f, struct row *rows, int n, int markdown)
{
	char c[256];

	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];

		if (!r->nrefs)
			continue;
		if (markdown) {
			fprintf(f,
				"\n### %s: references\n\nt_impl / t_cand per task (median of paired ratios, 95%% CI) "
				"and overall (geometric mean, joint CI): above 1 the candidate is faster. References "
				"never gate the verdict.\n\n| task | baseline |",
				r->id);
			for (int k = 0; k < r->nrefs; k++)
				fprintf(f, " %s |", r->refs[k].impl);
			fprintf(f, "\n|---|---|");
			for (int k = 0; k < r->nrefs; k++)
				fprintf(f, "---|");
			snprintf(c, sizeof(c), r->has_ci ? "%.3f [%.3f, %.3f]" : "-", r->measured, r->ci_lo, r->ci_hi);
			fprintf(f, "\n| overall (geomean) | %s |", c);
			for (int k = 0; k < r->nrefs; k++) {
				overall_cell(c, sizeof(c), &r->refs[k]);
				fprintf(f, " %s (%d timed, %d skipped, %d failed) |", c, r->refs[k].timed,
					r->refs[k].skipped, r->refs[k].failed);
			}
			fprintf(f, "\n");
			for (int t = 0; t < r->nshapes; t++) {
				const struct shape_speedup *sh = &r->shapes[t];

				snprintf(c, sizeof(c), sh->timed ? "%.3f [%.3f, %.3f]" : "not timed", sh->est, sh->lo,
					 sh->hi);
				fprintf(f, "| %s | %s |", sh->name, c);
				for (int k = 0; k < r->nrefs; k++) {
					ref_cell(c, sizeof(c), &r->refs[k].tasks[t], 1);
					fprintf(f, " %s |", c);
				}
				fprintf(f, "\n");
			}
			continue;
		}
		fprintf(f, "  %s: references (t_impl / t_cand, 95%% CI; above 1 the candidate is faster; never gate)\n",
			r->id);
		fprintf(f, "    %-34s %-24s", "task", "baseline");
		for (int k = 0; k < r->nrefs; k++)
			fprintf(f, " %-24s", r->refs[k].impl);
		snprintf(c, sizeof(c), r->has_ci ? "%.3f [%.3f, %.3f]" : "-", r->measured, r->ci_lo, r->ci_hi);
		fprintf(f, "\n    %-34s %-24s", "overall (geomean)", c);
		for (int k = 0; k < r->nrefs; k++) {
			overall_cell(c, sizeof(c), &r->refs[k]);
			fprintf(f, " %-24s", c);
		}
		fprintf(f, "\n");
		for (int t = 0; t < r->nshapes; t++) {
			const struct shape_speedup *sh = &r->shapes[t];

			snprintf(c, sizeof(c), sh->timed ? "%.3f [%.3f, %.3f]" : "not timed", sh->est, sh->lo, sh->hi);
			fprintf(f, "    %-34s %-24s", sh->name, c);
			for (int k = 0; k < r->nrefs; k++) {
				ref_cell(c, sizeof(c), &r->refs[k].tasks[t], 0);
				fprintf(f, " %-24s", c);
			}
			fprintf(f, "\n");
		}
		for (int k = 0; k < r->nrefs; k++)
			for (int t = 0; t < r->nshapes; t++)
				if (!strcmp(r->refs[k].tasks[t].status, "skipped"))
					fprintf(f, "    %s skips %s: %s\n", r->refs[k].impl, r->shapes[t].name,
						r->refs[k].tasks[t].reason ? r->refs[k].tasks[t].reason : "");
	}
}

static cJSON *ci_obj(int has, double est, double lo, double hi)
{
	cJSON *j, *arr;

	if (!has)
		return cJSON_CreateNull();
	j = cJSON_CreateObject();
	arr = cJSON_AddArrayToObject(j, "ci95");
	cJSON_AddNumberToObject(j, "estimate", est);
	cJSON_AddItemToArray(arr, cJSON_CreateNumber(lo));
	cJSON_AddItemToArray(arr, cJSON_CreateNumber(hi));
	return j;
}

/* A card's "references" in the JSON report: overall and per task, as result.json has them. */
static cJSON *refs_report_json(const struct row *r)
{
	cJSON *arr = cJSON_CreateArray();

	for (int k = 0; k < r->nrefs; k++) {
		const struct ref_summary *rs = &r->refs[k];
		cJSON *j = cJSON_CreateObject(), *tasks;

		cJSON_AddStringToObject(j, "impl", rs->impl);
		cJSON_AddItemToObject(j, "ratio", ci_obj(rs->has, rs->est, rs->lo, rs->hi));
		cJSON_AddNumberToObject(j, "tasks_timed", rs->timed);
		cJSON_AddNumberToObject(j, "tasks_skipped", rs->skipped);
		cJSON_AddNumberToObject(j, "tasks_failed", rs->failed);
		tasks = cJSON_AddArrayToObject(j, "tasks");
		for (int t = 0; t < r->nshapes; t++) {
			const struct ref_task *rt = &rs->tasks[t];
			cJSON *tj = cJSON_CreateObject();

			cJSON_AddStringToObject(tj, "task", r->shapes[t].name);
			cJSON_AddStringToObject(tj, "status", rt->status);
			if (rt->reason)
				cJSON_AddStringToObject(tj, "reason", rt->reason);
			cJSON_AddItemToObject(tj, "ratio", ci_obj(rt->has, rt->est, rt->lo, rt->hi));
			cJSON_AddItemToArray(tasks, tj);
		}
		cJSON_AddItemToArray(arr, j);
	}
	return arr;
}

static void print_json(FILE *f, struct row *rows, int n)
{
	cJSON *arr = cJSON_CreateArray();
	char *text;

	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];
		cJSON *j = cJSON_CreateObject();

		cJSON_AddStringToObject(j, "id", r->id);
		cJSON_AddStringToObject(j, "path", r->path);
		cJSON_AddStringToObject(j, "status", r->status);
		cJSON_AddBoolToObject(j, "typed", r->typed);
		cJSON_AddBoolToObject(j, "planned", !r->not_planned);
		if (r->not_planned)
			cJSON_AddStringToObject(j, "not_planned", r->not_planned);
		if (r->stale_why)
			cJSON_AddStringToObject(j, "stale_reason", r->stale_why);
		cJSON_AddStringToObject(j, "gens", r->gens ? r->gens : "");
		cJSON_AddStringToObject(j, "last_verified", r->last_verified ? r->last_verified : "");
		cJSON_AddStringToObject(j, "device", r->device ? r->device : "");
		cJSON_AddStringToObject(j, "measured_gen", r->measured_gen ? r->measured_gen : "");
		if (r->has_measured)
			cJSON_AddNumberToObject(j, "measured_isolated", r->measured);
		else
			cJSON_AddNullToObject(j, "measured_isolated");
		if (r->has_expected)
			cJSON_AddNumberToObject(j, "isolated_speedup_min", r->expected);
		else
			cJSON_AddNullToObject(j, "isolated_speedup_min");
		cJSON_AddStringToObject(j, "parity", r->parity ? r->parity : "");
		if (r->parity_tol > 0)
			cJSON_AddNumberToObject(j, "parity_relaxed_tolerance", r->parity_tol);
		cJSON_AddStringToObject(j, "evidence", r->evidence);
		if (r->impls)
			cJSON_AddStringToObject(j, "implementations", r->impls);
		if (r->tier) {
			cJSON *cov = cJSON_AddObjectToObject(j, "coverage");

			cJSON_AddStringToObject(cov, "tier", r->tier);
			cJSON_AddNumberToObject(cov, "tasks", r->ntasks);
			cJSON_AddNumberToObject(cov, "ran", r->ran_tasks);
		}
		if (r->spread)
			cJSON_AddStringToObject(j, "across_runs", r->spread);
		if (r->evidence_why)
			cJSON_AddStringToObject(j, "evidence_detail", r->evidence_why);
		if (r->flags)
			cJSON_AddStringToObject(j, "review_flags", r->flags);
		if (r->nrefs)
			cJSON_AddItemToObject(j, "references", refs_report_json(r));
		if (r->e2e)
			cJSON_AddItemToObject(j, "e2e", cJSON_Duplicate(r->e2e, 1));
		if (r->nwls)
			cJSON_AddItemToObject(j, "workloads", workloads_json(r));
		cJSON_AddStringToObject(j, "title", r->title ? r->title : "");
		cJSON_AddStringToObject(j, "eval_dir", r->eval_dir ? r->eval_dir : "");
		if (r->baseline) {
			cJSON *run = cJSON_AddObjectToObject(j, "run"), *fl;

			cJSON_AddStringToObject(run, "baseline", r->baseline);
			cJSON_AddStringToObject(run, "candidate", r->candidate);
			if (r->cores > 0)
				cJSON_AddNumberToObject(run, "cores", r->cores);
			else
				cJSON_AddNullToObject(run, "cores");
			cJSON_AddStringToObject(run, "chosen_configs", r->configs ? r->configs : "");
			if (r->setup)
				cJSON_AddStringToObject(run, "setup", r->setup);
			cJSON_AddNumberToObject(run, "tasks", r->ntasks);
			cJSON_AddNumberToObject(run, "flagged_tasks", r->flagged_tasks);
			fl = cJSON_AddArrayToObject(run, "review_flags");
			for (int k = 0; k < r->nflags; k++)
				cJSON_AddItemToArray(fl, cJSON_CreateString(r->flag_list[k]));
		}
		cJSON_AddItemToArray(arr, j);
	}
	text = cJSON_Print(arr);
	fprintf(f, "%s\n", text ? text : "[]");
	cJSON_free(text);
	cJSON_Delete(arr);
}

/* ---- html ----------------------------------------------------------------------------------- */

static void esc(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		case '\'':
			fputs("&#39;", f);
			break;
		default:
			fputc(*s, f);
		}
	}
}

/* When s is set: before, s escaped, after (before and after are HTML already). */
static void esc_around(FILE *f, const char *before, const char *s, const char *after)
{
	if (!s)
		return;
	fputs(before, f);
	esc(f, s);
	fputs(after, f);
}

static void cell(FILE *f, const char *s)
{
	fputs("<td>", f);
	esc(f, s && *s ? s : "-");
	fputs("</td>", f);
}

/* s escaped, a line break allowed (<wbr>) after each '_', '/' and ':': ids and paths wrap, copy as typed. */
static void esc_wrap(FILE *f, const char *s)
{
	char one[2] = {0};

	for (; s && *s; s++) {
		one[0] = *s;
		esc(f, one);
		if (*s == '_' || *s == '/' || *s == ':')
			fputs("<wbr>", f);
	}
}

static void cell_wrap(FILE *f, const char *s)
{
	fputs("<td>", f);
	esc_wrap(f, s && *s ? s : "-");
	fputs("</td>", f);
}

/*
 * A bar's value label, outside the bar and its CI whisker, at the end away from 1x: right of a
 * speedup (v >= 1), left of a slowdown (v < 1, text-anchor end). x_bar is the bar's far end, x_lo
 * and x_hi the whisker's; the axes leave VALUE_ROOM pixels beyond the outermost whisker for it.
 */
#define VALUE_ROOM 48

static void value_label(FILE *f, double x_bar, double x_lo, double x_hi, double y, double v)
{
	if (v < 1)
		fprintf(f, "<text class=\"value\" text-anchor=\"end\" x=\"%.1f\" y=\"%.1f\">%.2fx</text>",
			fmin(x_bar, x_lo) - 4, y, v);
	else
		fprintf(f, "<text class=\"value\" x=\"%.1f\" y=\"%.1f\">%.2fx</text>", fmax(x_bar, x_hi) + 4, y, v);
}

#define CH_W 960
#define CH_LABEL 300 /* x where the plot starts */
#define CH_RIGHT 930 /* x where it ends */
#define CH_ROW 22

/* The chart's speedup axis is logarithmic over [ch_lo, vmax]: 0.5x and 2x lie equally far from 1x. */
static double ch_lo = 0.5;

static double xpos(double v, double vmax)
{
	double l = log(ch_lo), h = log(vmax), x = v > ch_lo ? log(v > vmax ? vmax : v) : l;

	return CH_LABEL + (CH_RIGHT - CH_LABEL) * (x - l) / (h - l);
}

/* One bar: value with its CI whisker; class "overall" or "shape". */
static void bar(FILE *f, double y, double v, double lo, double hi, double vmax, const char *cls, const char *label)
{
	double x0 = xpos(1, vmax), x = xpos(v, vmax), left = x < x0 ? x : x0, w = fabs(x - x0);

	/* bars grow from 1x: right for a speedup, left for a slowdown */
	fprintf(f, "<g class=\"bar %s\"><title>", cls);
	esc(f, label);
	fprintf(f, ": %.3fx [%.3f, %.3f]</title>", v, lo, hi);
	fprintf(f, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\"/>", left, y + 4, w > 1 ? w : 1,
		CH_ROW - 8);
	fprintf(f, "<line class=\"ci\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", xpos(lo, vmax),
		xpos(hi, vmax), y + CH_ROW / 2.0, y + CH_ROW / 2.0);
	value_label(f, x, xpos(lo, vmax), xpos(hi, vmax), y + CH_ROW / 2.0 + 4, v);
	fputs("</g>\n", f);
}

static void print_chart(FILE *f, struct row *rows, int n)
{
	double vmax = 1.0, vmin, vhi, y;
	int nrows = 0;

	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];

		nrows += 2 + (r->nshapes > 0 ? r->nshapes : 0);
		if (r->has_measured && r->measured > vmax)
			vmax = r->measured;
		if (r->has_ci && r->ci_hi > vmax)
			vmax = r->ci_hi;
		if (r->has_expected && r->expected > vmax)
			vmax = r->expected;
		for (int k = 0; k < r->nshapes; k++)
			if (r->shapes[k].timed && r->shapes[k].hi > vmax)
				vmax = r->shapes[k].hi;
	}
	vhi = vmax;
	vmin = 0.5;
	for (int i = 0; i < n; i++) {
		const struct row *r = &rows[i];

		if (r->has_measured && r->verified && r->measured > 0)
			vmin = fmin(vmin, r->measured);
		if (r->has_ci && r->verified && r->ci_lo > 0)
			vmin = fmin(vmin, r->ci_lo);
		for (int k = 0; k < r->nshapes; k++)
			if (r->shapes[k].timed && r->shapes[k].lo > 0)
				vmin = fmin(vmin, fmin(r->shapes[k].lo, r->shapes[k].est));
	}
	ch_lo = pow(2, floor(log2(vmin)));
	vmax = pow(2, ceil(log2(vmax * 1.15)));
	/* room for the value labels beyond the outermost whiskers (value_label()) */
	for (int k = 0; k < 8 && xpos(vmin, vmax) - CH_LABEL < VALUE_ROOM; k++)
		ch_lo /= 2;
	for (int k = 0; k < 8 && CH_W - xpos(vhi, vmax) < VALUE_ROOM; k++)
		vmax *= 2;
	fprintf(f,
		"<svg id=\"speedup-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"measured against expected speedup per card and "
		"task shape\">\n",
		CH_W, nrows * CH_ROW + 60, CH_W, nrows * CH_ROW + 60);
	/* Log axis, ticks at powers of two; 1x (no change) drawn stronger. */
	y = 30;
	for (double t = ch_lo; t <= vmax * 1.0001; t *= 2) {
		double x = xpos(t, vmax);

		fprintf(f,
			"<line class=\"%s\" x1=\"%.1f\" x2=\"%.1f\" y1=\"24\" y2=\"%.1f\"/>"
			"<text class=\"tick\" x=\"%.1f\" y=\"18\">%gx</text>\n",
			t == 1 ? "grid one" : "grid", x, x, nrows * CH_ROW + 30.0, x - 6, t);
	}
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];
		double top = y;

		fprintf(f, "<g class=\"card\" data-card=\"");
		esc(f, r->id);
		fprintf(f, "\"><text class=\"card-title\" x=\"4\" y=\"%.1f\">", y + 15);
		esc(f, r->id);
		fprintf(f, " (");
		esc(f, r->status);
		fprintf(f, ")</text>\n");
		y += CH_ROW;
		fprintf(f, "<text class=\"label\" x=\"16\" y=\"%.1f\">overall (geomean)</text>\n", y + 15);
		if (r->has_measured && r->verified)
			bar(f, y, r->measured, r->has_ci ? r->ci_lo : r->measured, r->has_ci ? r->ci_hi : r->measured,
			    vmax, "overall", r->id);
		else
			fprintf(f, "<text class=\"none\" x=\"%d\" y=\"%.1f\">not measured</text>\n", CH_LABEL + 6,
				y + 15);
		y += CH_ROW;
		for (int k = 0; k < r->nshapes; k++) {
			const struct shape_speedup *sh = &r->shapes[k];

			fprintf(f, "<text class=\"label\" x=\"16\" y=\"%.1f\">", y + 15);
			esc(f, sh->name);
			fprintf(f, "</text>\n");
			if (sh->timed)
				bar(f, y, sh->est, sh->lo, sh->hi, vmax, "shape", sh->name);
			else
				fprintf(f, "<text class=\"none\" x=\"%d\" y=\"%.1f\">%s</text>\n", CH_LABEL + 6, y + 15,
					sh->skipped ? "skipped: not supported (not a pass)" :
						      "not timed (parity or fault)");
			y += CH_ROW;
		}
		if (r->has_expected) {
			double x = xpos(r->expected, vmax);

			fprintf(f,
				"<g class=\"expected\"><title>expected isolated_speedup_min %.3fx</title>"
				"<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/><text x=\"%.1f\" "
				"y=\"%.1f\">min %.2fx"
				"</text></g>\n",
				r->expected, x, x, top + CH_ROW, y, x + 3, top + 15, r->expected);
		}
		fprintf(f, "</g>\n");
	}
	fprintf(f, "</svg>\n");
}

/* ---- html: the references' chart (ratios to the candidate on a log axis) ---------------------- */

#define RC_ROW 14    /* height of one implementation's bar */
#define RC_GAP 10    /* space between tasks */
#define RC_LEGEND 16 /* height of one legend entry */

static double lxpos(double v, double lmin, double lmax)
{
	double l = log2(v > 0 ? v : 1e-9);

	l = l < lmin ? lmin : l > lmax ? lmax : l;
	return CH_LABEL + (CH_RIGHT - CH_LABEL) * (l - lmin) / (lmax - lmin);
}

/* One bar from the candidate's 1x to v (log axis), with its CI whisker and a tooltip. */
static void ref_bar(FILE *f, double y, double v, double lo, double hi, double ms, double lmin, double lmax, int color,
		    const char *impl, const char *task)
{
	double x1 = lxpos(1, lmin, lmax), x = lxpos(v, lmin, lmax);

	fprintf(f, "<g class=\"rbar c%d\"><title>", color);
	esc(f, impl);
	fputs(" on ", f);
	esc(f, task);
	fprintf(f, ": t / t_cand %.3f [%.3f, %.3f]", v, lo, hi);
	if (ms > 0)
		fprintf(f, ", median %.4g ms", ms);
	fprintf(f, "</title><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%d\"/>", x < x1 ? x : x1, y + 2,
		fabs(x - x1) > 1 ? fabs(x - x1) : 1, RC_ROW - 4);
	fprintf(f, "<line class=\"ci\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", lxpos(lo, lmin, lmax),
		lxpos(hi, lmin, lmax), y + RC_ROW / 2.0, y + RC_ROW / 2.0);
	value_label(f, x, lxpos(lo, lmin, lmax), lxpos(hi, lmin, lmax), y + RC_ROW - 3, v);
	fputs("</g>\n", f);
}

/*
 * Per task of a card with references: the baseline's and each reference's time relative to the
 * candidate's (t / t_cand, 95% CI) as bars from the candidate's 1x line, log2 axis; a skipped or
 * failed reference is named in its row instead of a bar.
 */
static void print_refs_chart(FILE *f, const struct row *r)
{
	double lmin = 0, lmax = 0, dmin, dmax, top, y;
	int nimpl = 1 + r->nrefs, height;

	for (int t = 0; t < r->nshapes; t++) {
		const struct shape_speedup *sh = &r->shapes[t];

		if (sh->timed) {
			lmin = fmin(lmin, log2(sh->lo > 0 ? sh->lo : 1));
			lmax = fmax(lmax, log2(sh->hi > 0 ? sh->hi : 1));
		}
		for (int k = 0; k < r->nrefs; k++) {
			const struct ref_task *rt = &r->refs[k].tasks[t];

			if (rt->has) {
				lmin = fmin(lmin, log2(rt->lo > 0 ? rt->lo : 1));
				lmax = fmax(lmax, log2(rt->hi > 0 ? rt->hi : 1));
			}
		}
	}
	dmin = lmin;
	dmax = lmax;
	lmin = floor(lmin - 0.25);
	lmax = ceil(lmax + 0.25);
	/* room for the value labels beyond the outermost whiskers (value_label()) */
	for (int k = 0; k < 8 && (dmin - lmin) * (CH_RIGHT - CH_LABEL) / (lmax - lmin) < VALUE_ROOM; k++)
		lmin -= 1;
	for (int k = 0; k < 8 && CH_W - CH_RIGHT + (lmax - dmax) * (CH_RIGHT - CH_LABEL) / (lmax - lmin) < VALUE_ROOM;
	     k++)
		lmax += 1;
	/* the legend on top, one entry a line (names of any length never overlap), then the axis */
	top = RC_LEGEND * (nimpl + 1) + 8;
	height = (int)top + r->nshapes * (nimpl * RC_ROW + RC_GAP) + 40;
	fprintf(f, "<svg class=\"refs-chart\" data-card=\"");
	esc(f, r->id);
	fprintf(f,
		"\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
		"role=\"img\" aria-label=\"time of the baseline and the references relative to the candidate per "
		"task, log axis\">\n",
		CH_W, height, CH_W, height);
	fputs("<g class=\"legend\"><line class=\"one\" x1=\"9\" x2=\"9\" y1=\"3\" y2=\"15\"/><text x=\"20\" "
	      "y=\"13\">1x: the candidate",
	      f);
	esc_around(f, " ", r->candidate, "");
	fprintf(f,
		"</text><rect class=\"c0\" x=\"4\" y=\"%d\" width=\"10\" height=\"10\"/><text x=\"20\" "
		"y=\"%d\">baseline",
		4 + RC_LEGEND, 13 + RC_LEGEND);
	esc_around(f, " ", r->baseline, "");
	fputs("</text>", f);
	for (int k = 0; k < r->nrefs; k++) {
		fprintf(f,
			"<rect class=\"c%d\" x=\"4\" y=\"%d\" width=\"10\" height=\"10\"/><text x=\"20\" "
			"y=\"%d\">reference ",
			1 + k, 4 + RC_LEGEND * (k + 2), 13 + RC_LEGEND * (k + 2));
		esc(f, r->refs[k].impl);
		fputs("</text>", f);
	}
	fputs("</g>\n", f);
	for (int e = (int)lmin; e <= (int)lmax; e++) {
		double x = CH_LABEL + (CH_RIGHT - CH_LABEL) * (e - lmin) / (lmax - lmin);

		if (e >= 0)
			fprintf(f,
				"<line class=\"%s\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%d\"/><text "
				"class=\"tick\" x=\"%.1f\" y=\"%.1f\">%gx%s</text>\n",
				e ? "grid" : "grid one", x, x, top + 24, height - 10, x - 8, top + 18, pow(2, e),
				e ? "" : " candidate");
		else
			fprintf(f,
				"<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%d\"/><text "
				"class=\"tick\" x=\"%.1f\" y=\"%.1f\">1/%gx</text>\n",
				x, x, top + 24, height - 10, x - 8, top + 18, pow(2, -e));
	}
	y = top + 30;
	for (int t = 0; t < r->nshapes; t++) {
		const struct shape_speedup *sh = &r->shapes[t];

		fprintf(f, "<text class=\"label\" x=\"4\" y=\"%.1f\">", y + RC_ROW - 3);
		esc(f, sh->name);
		fputs("</text>\n", f);
		if (sh->timed)
			ref_bar(f, y, sh->est, sh->lo, sh->hi, sh->base_ms, lmin, lmax, 0, "baseline", sh->name);
		y += RC_ROW;
		for (int k = 0; k < r->nrefs; k++) {
			const struct ref_task *rt = &r->refs[k].tasks[t];

			if (rt->has) {
				ref_bar(f, y, rt->est, rt->lo, rt->hi, rt->ms, lmin, lmax, 1 + k, r->refs[k].impl,
					sh->name);
			} else {
				fprintf(f, "<text class=\"none\" x=\"%d\" y=\"%.1f\">", CH_LABEL + 6, y + RC_ROW - 3);
				esc(f, r->refs[k].impl);
				fputs(": ", f);
				esc(f, rt->status);
				esc_around(f, " (", rt->reason, ")");
				fputs("</text>\n", f);
			}
			y += RC_ROW;
		}
		y += RC_GAP;
	}
	fputs("</svg>\n", f);
}

/* The references section: per card with references, its table (as markdown's) and its chart. */
static void print_workloads_html(FILE *f, struct row *rows, int n)
{
	int any = 0;

	for (int i = 0; i < n; i++)
		any |= rows[i].nwls > 0;
	if (!any)
		return;
	fprintf(f, "<h2>Deployments</h2>\n<p>A workload plan's verdict gates on the workload speedup (sum w &times; "
		   "t_base / sum w &times; t_cand over the deployment's weighted tasks); the equal-weight geomean of "
		   "the same run stands beside it.</p>\n<table>\n<tr><th>card</th><th>workload</th><th>gen</th>"
		   "<th>status</th><th>workload speedup</th><th>geomean</th><th>by concurrency</th><th>evidence</th>"
		   "<th>where the time lies</th></tr>\n");
	for (int i = 0; i < n; i++) {
		for (int k = 0; k < rows[i].nwls; k++) {
			const struct wl_row *w = &rows[i].wls[k];
			char sp[96], iso[32];

			wl_cells(sp, iso, w);
			fputs("<tr>", f);
			cell(f, rows[i].id);
			cell(f, w->workload);
			cell(f, *w->gen ? w->gen : "-");
			cell(f, w->status);
			if (w->per_kv) {
				char mix[1200];

				snprintf(mix, sizeof(mix), "%s; mix %s", w->per_kv, sp);
				cell_wrap(f, mix);
			} else {
				cell(f, sp);
			}
			cell(f, iso);
			cell_wrap(f, w->per_conc ? w->per_conc : "-");
			esc_around(f, "<td>", w->evidence, "");
			if (w->why)
				esc_around(f, ": ", w->why, "");
			fputs("</td>", f);
			cell_wrap(f, w->weight ? w->weight : "-");
			fputs("</tr>\n", f);
		}
	}
	fputs("</table>\n", f);
}

/* Each deployment's tasks (print_workload_tasks_text()), one table per (card, workload, gen). */
static void print_workload_tasks_html(FILE *f, struct row *rows, int n)
{
	char c[256], b[32];

	for (int i = 0; i < n; i++) {
		for (int k = 0; k < rows[i].nwls; k++) {
			const struct wl_row *w = &rows[i].wls[k];
			const struct row *t = w->detail;

			if (!t || !t->nshapes)
				continue;
			esc_around(f, "<h3>", rows[i].id, "");
			esc_around(f, " on ", w->workload, "");
			esc_around(f, "@", w->gen, ": per task</h3>\n");
			fputs("<p>Median ms of each implementation; the candidate's speedup t_base / t_cand; each "
			      "reference's t_ref / t_cand (above 1 the candidate is faster; references never "
			      "gate).</p>\n"
			      "<table>\n<tr><th>task</th>",
			      f);
			esc_around(f, "<th>", t->baseline, " ms</th>");
			esc_around(f, "<th>", t->candidate, " ms</th><th>speedup</th>");
			for (int r = 0; r < t->nrefs; r++) {
				esc_around(f, "<th>", t->refs[r].impl, " ms</th>");
				esc_around(f, "<th>", t->refs[r].impl, " t_ref / t_cand</th>");
			}
			fputs("</tr>\n", f);
			for (int s = 0; s < t->nshapes; s++) {
				const struct shape_speedup *sh = &t->shapes[s];

				fputs("<tr>", f);
				cell(f, sh->name);
				ms_text(b, sizeof(b), sh->base_ms);
				cell(f, b);
				ms_text(b, sizeof(b), sh->cand_ms);
				cell(f, b);
				speedup_text(c, sizeof(c), sh);
				cell(f, c);
				for (int r = 0; r < t->nrefs; r++) {
					ms_text(b, sizeof(b), t->refs[r].tasks[s].ms);
					cell(f, b);
					ref_cell(c, sizeof(c), &t->refs[r].tasks[s], 0);
					cell(f, c);
				}
				fputs("</tr>\n", f);
			}
			fputs("</table>\n", f);
		}
	}
}

static void print_refs_html(FILE *f, struct row *rows, int n)
{
	int any = 0;
	char c[256];

	for (int i = 0; i < n; i++)
		any |= rows[i].nrefs > 0;
	if (!any)
		return;
	fputs("<h2>References</h2>\n<p>Time of the baseline and of each reference relative to the candidate's "
	      "(t / t_cand: median of the paired ratios with its 95% CI per task; geometric mean with the joint CI "
	      "overall), measured in the same rounds as the A/B; above 1x the candidate is faster. References never "
	      "gate the verdict.</p>\n",
	      f);
	for (int i = 0; i < n; i++) {
		const struct row *r = &rows[i];

		if (!r->nrefs)
			continue;
		fputs("<h3>", f);
		esc(f, r->id);
		fputs("</h3>\n<table class=\"references\" data-card=\"", f);
		esc(f, r->id);
		fputs("\">\n<thead><tr><th>task</th><th>baseline</th>", f);
		for (int k = 0; k < r->nrefs; k++) {
			fputs("<th>", f);
			esc(f, r->refs[k].impl);
			fputs("</th>", f);
		}
		fputs("</tr></thead>\n<tbody>\n<tr><td>overall (geomean)</td>", f);
		snprintf(c, sizeof(c), r->has_ci ? "%.3f [%.3f, %.3f]" : "-", r->measured, r->ci_lo, r->ci_hi);
		cell(f, c);
		for (int k = 0; k < r->nrefs; k++) {
			overall_cell(c, sizeof(c), &r->refs[k]);
			cell(f, c);
		}
		fputs("</tr>\n", f);
		for (int t = 0; t < r->nshapes; t++) {
			const struct shape_speedup *sh = &r->shapes[t];

			fputs("<tr>", f);
			cell(f, sh->name);
			snprintf(c, sizeof(c), sh->timed ? "%.3f [%.3f, %.3f]" : "not timed", sh->est, sh->lo, sh->hi);
			cell(f, c);
			for (int k = 0; k < r->nrefs; k++) {
				ref_cell(c, sizeof(c), &r->refs[k].tasks[t], 1);
				cell(f, c);
			}
			fputs("</tr>\n", f);
		}
		fputs("</tbody>\n</table>\n", f);
		print_refs_chart(f, r);
	}
}

static void print_e2e_html(FILE *f, struct row *rows, int n)
{
	int any = 0;

	for (int i = 0; i < n; i++)
		any |= rows[i].e2e != NULL;
	if (!any)
		return;
	fputs("<h2>End to end</h2>\n<p>One decode step of the model around the core (the step module of the plan), "
	      "captured as one graph per side and timed by replay, paired and interleaved with a control (the baseline "
	      "against itself): e2e_pct = 100 (t_step(baseline) - t_step(candidate)) / t_step(baseline), the median of "
	      "the paired ratios per task, the geometric mean overall, with 95% bootstrap CIs; attention share = the "
	      "core's isolated time / the step's time.</p>\n",
	      f);
	for (int i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		const cJSON *t;
		char a[96], c[96];

		if (!r->e2e)
			continue;
		pct_cell(a, sizeof(a), cJSON_GetObjectItem(r->e2e, "e2e_pct"));
		pct_cell(c, sizeof(c), cJSON_GetObjectItem(r->e2e, "control_pct"));
		fputs("<h3>", f);
		esc(f, r->id);
		fputs("</h3>\n<p>", f);
		esc(f, cJSON_GetStringValue(cJSON_GetObjectItem(r->e2e, "step")));
		fputs(": e2e_pct ", f);
		esc(f, a);
		fputs(", control ", f);
		esc(f, c);
		fputs(", e2e parity ", f);
		esc(f, cJSON_GetStringValue(cJSON_GetObjectItem(r->e2e, "parity")));
		fputs(" (isolated speedup beside it: ", f);
		{
			char iso[96];

			snprintf(iso, sizeof(iso), r->has_ci ? "%.3f [%.3f, %.3f]" : "-", r->measured, r->ci_lo,
				 r->ci_hi);
			esc(f, iso);
		}
		fputs(")</p>\n<table class=\"e2e\" data-card=\"", f);
		esc(f, r->id);
		fputs("\">\n<thead><tr>", f);
		for (int k = 0; k < 6; k++) {
			fputs("<th>", f);
			esc(f, e2e_heads[k]);
			fputs("</th>", f);
		}
		fputs("</tr></thead>\n<tbody>\n", f);
		cJSON_ArrayForEach(t, cJSON_GetObjectItem(r->e2e, "tasks"))
		{
			char cells[5][160];

			e2e_task_cells(cells, t);
			fputs("<tr>", f);
			cell(f, cJSON_GetStringValue(cJSON_GetObjectItem(t, "name")));
			for (int k = 0; k < 5; k++)
				cell(f, cells[k]);
			fputs("</tr>\n", f);
		}
		fputs("</tbody>\n</table>\n", f);
	}
}

/*
 * The review flags of each flagged card, under the status table: the do-no-harm flags (a task the
 * candidate lost, a slower model step) shown, every flag in a fold below them.
 */
static void print_flags_html(FILE *f, struct row *rows, int n)
{
	int any = 0;

	for (int i = 0; i < n; i++)
		any |= rows[i].nflags > 0;
	if (!any)
		return;
	fputs("<h2>Review flags</h2>\n<p>What the run's evidence asks a reviewer to look at; they do not change the "
	      "verdict. Shown: the do-no-harm flags (a task the candidate lost to the baseline, a model step it made "
	      "slower); every flag in the fold.</p>\n",
	      f);
	for (int i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		char fl[96];

		if (!r->nflags)
			continue;
		flag_summary(fl, sizeof(fl), r);
		esc_around(f, "<h3 id=\"flags-", r->id, "\">");
		esc(f, r->id);
		fputs("</h3>\n", f);
		if (r->nharm) {
			fputs("<ul class=\"harm\">\n", f);
			for (int k = 0; k < r->nharm; k++)
				esc_around(f, "<li>", r->flag_list[k], "</li>\n");
			fputs("</ul>\n", f);
		} else {
			fputs("<p>No do-no-harm flag: the candidate lost no task, no model step ran slower.</p>\n", f);
		}
		fputs("<details class=\"flags\"><summary>", f);
		esc(f, fl);
		fputs("</summary><ul>", f);
		for (int k = 0; k < r->nflags; k++)
			esc_around(f, "<li>", r->flag_list[k], "</li>");
		fputs("</ul></details>\n", f);
	}
}

/* A median in ms, or what stands in its place. */
static void ms_cell(FILE *f, double ms, const char *none)
{
	char c[32];

	if (ms > 0) {
		snprintf(c, sizeof(c), "%.4f", ms);
		fputs("<td class=\"num\">", f);
		esc(f, c);
		fputs("</td>", f);
	} else {
		cell(f, none);
	}
}

/*
 * Per measured card, under the speedup chart: each task's median time of the baseline, the
 * candidate and every reference in ms, and its speedup, as text (the charts' tooltips hold them too).
 */
static void print_times_html(FILE *f, struct row *rows, int n)
{
	int any = 0;

	for (int i = 0; i < n; i++)
		any |= rows[i].verified && rows[i].nshapes > 0;
	if (!any)
		return;
	fputs("<h2>Per-task times</h2>\n<p>Median time per call in ms of each implementation on each task, from the "
	      "verified evidence; speedup = baseline / candidate, the median of the paired ratios with its 95% "
	      "CI.</p>\n",
	      f);
	for (int i = 0; i < n; i++) {
		const struct row *r = &rows[i];

		if (!r->verified || !r->nshapes)
			continue;
		fputs("<h3>", f);
		esc(f, r->id);
		fputs("</h3>\n<table class=\"times\" data-card=\"", f);
		esc(f, r->id);
		fputs("\">\n<thead><tr><th>task</th>", f);
		esc_around(f, "<th>baseline ", r->baseline, " (ms)</th>");
		esc_around(f, "<th>candidate ", r->candidate, " (ms)</th>");
		fputs("<th>speedup [95% CI]</th>", f);
		for (int k = 0; k < r->nrefs; k++)
			esc_around(f, "<th>reference ", r->refs[k].impl, " (ms)</th>");
		fputs("</tr></thead>\n<tbody>\n", f);
		for (int t = 0; t < r->nshapes; t++) {
			const struct shape_speedup *sh = &r->shapes[t];
			char c[96];

			fputs("<tr>", f);
			cell(f, sh->name);
			ms_cell(f, sh->base_ms, sh->skipped ? "skipped" : "not timed");
			ms_cell(f, sh->cand_ms, sh->skipped ? "skipped" : "not timed");
			if (sh->timed)
				snprintf(c, sizeof(c), "%.3f [%.3f, %.3f]", sh->est, sh->lo, sh->hi);
			else
				snprintf(c, sizeof(c), "%s", sh->skipped ? "skipped: not supported" : "not timed");
			cell(f, c);
			for (int k = 0; k < r->nrefs; k++)
				ms_cell(f, r->refs[k].tasks[t].ms, r->refs[k].tasks[t].status);
			fputs("</tr>\n", f);
		}
		fputs("</tbody>\n</table>\n", f);
	}
}

static void print_html(FILE *f, struct row *rows, int n)
{
	/* the status table's columns, in percent of its width (the page's) */
	static const int col_pct[13] = {8, 7, 7, 6, 6, 7, 7, 5, 8, 8, 13, 7, 11};
	char today[11];

	fs_today_utc(today);
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<title>validate_skill report</title>\n<style>\n"
	      "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\n"
	      "table{border-collapse:collapse;margin-bottom:2em;max-width:100%}\n"
	      "th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;font-size:14px;overflow-wrap:anywhere}\n"
	      "th{background:#f0f0f0}td.num{text-align:right;font-variant-numeric:tabular-nums}\n"
	      "#status{table-layout:fixed;width:100%}#status th{font-size:13px}#status td.run{font-size:13px}\n"
	      "svg{max-width:100%;height:auto}\n"
	      ".status-validated{background:#d9f2d9}.status-failed{background:#f8d7d7}"
	      ".status-stale{background:#fff3cd}.status-draft{background:#eee}.status-invalid{background:#f8d7d7}"
	      ".status-unverified{background:#e53e3e;color:#fff;font-weight:bold}"
	      ".status-typed{background:#fefcbf;color:#744210;font-style:italic}\n"
	      "tr.flagged td:first-child{border-left:6px solid #dd6b20}tr.flagged td.evidence{background:#feebc8}\n"
	      "a.flagged{color:#9c4221;font-weight:bold}ul.harm li{color:#9b2c2c}\n"
	      "details.flags summary{color:#9c4221;font-weight:bold;cursor:pointer}\n"
	      "svg text{font-size:12px;fill:#222}svg .card-title{font-weight:bold;font-size:13px}\n"
	      "svg .grid{stroke:#ddd}svg .one{stroke:#888}svg .tick{fill:#666}\n"
	      "svg .overall rect{fill:#2b6cb0}svg .shape rect{fill:#90cdf4}\n"
	      "svg .ci{stroke:#111;stroke-width:2}svg .expected line{stroke:#c53030;stroke-width:2;"
	      "stroke-dasharray:5 3}svg .expected text{fill:#c53030}svg .none{fill:#888;font-style:italic}\n"
	      "svg .c0 rect,svg rect.c0{fill:#a0aec0}svg .c1 rect,svg rect.c1{fill:#dd6b20}"
	      "svg .c2 rect,svg rect.c2{fill:#38a169}svg .c3 rect,svg rect.c3{fill:#805ad5}"
	      "svg .c4 rect,svg rect.c4{fill:#d53f8c}\n"
	      "</style>\n</head>\n<body>\n<h1>Skill cards: status</h1>\n",
	      f);
	fprintf(f, "<p>validate_skill %s, kernels tree %.12s%s, %s (UTC)</p>\n", VS_TOOL_VERSION, VS_KERNELS_TREE,
		VS_KERNELS_DIRTY ? " (dirty)" : "", today);
	/* fixed layout, the columns' shares of the page's width: never wider than the window */
	fputs("<table id=\"status\">\n<colgroup>", f);
	for (int k = 0; k < 13; k++)
		fprintf(f, "<col style=\"width:%d%%\">", col_pct[k]);
	fputs("</colgroup>\n<thead><tr><th>card</th><th>status</th><th>gens</th><th>last verified</th>"
	      "<th>device</th><th>measured speedup</th><th>expected min</th><th>parity</th><th>evidence</th>"
	      "<th>title</th><th>run</th><th>eval dir</th><th>implementations</th></tr></thead>\n<tbody>\n",
	      f);
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];
		char m[32], e[32];

		num_or_dash(m, sizeof(m), r->has_measured, r->measured);
		num_or_dash(e, sizeof(e), r->has_expected, r->expected);
		fputs(r->nflags ? "<tr class=\"flagged\">" : "<tr>", f);
		cell_wrap(f, r->id);
		fputs("<td class=\"status-", f);
		esc(f, r->typed ? "typed" : r->status);
		fputs("\">", f);
		esc(f, r->status);
		esc_around(f, " <small>(", r->stale_why, ")</small>");
		esc_around(f, " <small>", r->not_planned, "</small>");
		fputs("</td>", f);
		cell_wrap(f, r->gens);
		cell(f, r->last_verified);
		cell(f, r->device);
		cell(f, m);
		cell(f, e);
		cell(f, r->parity);
		fputs("<td class=\"evidence\">", f);
		esc(f, r->evidence);
		esc_around(f, ": ", r->evidence_why, "");
		if (r->nflags) {
			char fl[96];

			/* the count, a link to the card's flags below the table */
			flag_summary(fl, sizeof(fl), r);
			esc_around(f, "<br><a class=\"flagged\" href=\"#flags-", r->id, "\">");
			esc(f, fl);
			fputs("</a>", f);
		}
		fputs("</td>", f);
		cell(f, r->title);
		{
			char run[1200];

			run_line(run, sizeof(run), r);
			fputs("<td class=\"run\">", f);
			esc_wrap(f, run);
			fputs("</td>", f);
		}
		cell_wrap(f, r->eval_dir);
		cell_wrap(f, r->impls);
		fputs("</tr>\n", f);
	}
	fputs("</tbody>\n</table>\n", f);
	print_flags_html(f, rows, n);
	fputs("<h2>Measured against expected speedup</h2>\n"
	      "<p>Bars: measured isolated speedup (baseline time / candidate time) with its 95% CI, overall and per "
	      "task shape, on a log axis, from verified evidence only (a task that failed parity has none); dashed "
	      "line: the card's expects.isolated_speedup_min.</p>\n",
	      f);
	print_chart(f, rows, n);
	print_times_html(f, rows, n);
	print_refs_html(f, rows, n);
	print_workloads_html(f, rows, n);
	print_workload_tasks_html(f, rows, n);
	print_e2e_html(f, rows, n);
	fputs("</body>\n</html>\n", f);
}

int report_run(const struct report_options *o)
{
	const char *dir = o->skills_dir ? o->skills_dir : vs_layout_default.skills;
	const char *format = o->format ? o->format : "text";
	FILE *f = o->out ? o->out : stdout;
	struct library_cards cards = {0};
	char **paths;
	struct row *rows = NULL;
	int n = 0, mismatches = 0, err = 0;

	if (strcmp(format, "text") && strcmp(format, "markdown") && strcmp(format, "json") && strcmp(format, "html"))
		return vs_error(VS_EUSAGE, "unknown report format '%s' (text, markdown, json, html)", format);
	/* both layouts: skills/<id>.md and GEAK's skills/<id>/skill.md, sorted by id */
	if ((err = library_list(&cards, dir)))
		return err;
	paths = cards.paths;
	n = cards.count;
	if (!err) {
		rows = calloc((size_t)n + 1, sizeof(*rows));
		if (!rows)
			err = vs_oom();
	}
	if (!err) {
		struct report_options eff = *o;

		if (eff.max_age_days <= 0)
			eff.max_age_days = 90;
		for (int i = 0; i < n; i++)
			fill_row(&rows[i], paths[i], &eff, &mismatches);
		if (!strcmp(format, "json"))
			print_json(f, rows, n);
		else if (!strcmp(format, "html"))
			print_html(f, rows, n);
		else
			print_text(f, rows, n, !strcmp(format, "markdown"));
		if (!strcmp(format, "text") || !strcmp(format, "markdown")) {
			print_refs_text(f, rows, n, !strcmp(format, "markdown"));
			print_workloads_text(f, rows, n, !strcmp(format, "markdown"));
			print_workload_tasks_text(f, rows, n, !strcmp(format, "markdown"));
			print_e2e_text(f, rows, n, !strcmp(format, "markdown"));
		}
		if (mismatches) {
			/* named here: with --out the report is in a file, not above this line */
			char ids[512] = "", of_them[96] = "";
			int typed = 0;

			for (int i = 0; i < n; i++) {
				typed += rows[i].typed;
				if (rows[i].typed || (rows[i].evidence && (!strcmp(rows[i].evidence, "mismatch") ||
									   !strcmp(rows[i].evidence, "missing"))))
					snprintf(ids + strlen(ids), sizeof(ids) - strlen(ids), "%s%s", *ids ? ", " : "",
						 rows[i].id);
			}
			if (typed)
				snprintf(of_them, sizeof(of_them),
					 "; %d of them typed validation block%s without evidence", typed,
					 typed == 1 ? "" : "s");
			err = vs_error(VS_EVERIFY,
				       "%d card%s claim%s what the evidence does not show: %s (the report's evidence "
				       "column says why)%s",
				       mismatches, mismatches == 1 ? "" : "s", mismatches == 1 ? "s" : "", ids,
				       of_them);
		}
	}
	for (int i = 0; i < n; i++)
		if (rows)
			row_release(&rows[i]);
	free(rows);
	library_cards_release(&cards);
	return err;
}
