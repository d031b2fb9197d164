#include "report.h"
#include "card.h"
#include "fsutil.h"
#include "plan.h"
#include "evaldir.h"
#include "vs_build_info.h"
#include "vs_error.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct row {
	char *path;
	char *id;
	char *status;      /* draft / validated / failed / stale / invalid */
	char *stale_why;
	char *gens;        /* "gfx942:built sm_90:validated" */
	char *last_verified;
	char *device;
	char *measured_gen;
	int has_measured;
	double measured;
	int has_expected;
	double expected;
	char *parity;
	char *evidence;    /* ok / missing / mismatch / none / invalid card */
	char *impls;       /* "baseline -> candidate" measured (the evidence's when it verifies) */
	char *evidence_why;
	char *flags;       /* the run's review flags (speedup above the review bound, clock changes) */
	int nflags;
	int verified;      /* the evidence verifies and proves the card's claims */
	int has_ci;        /* overall CI from the evidence */
	double ci_lo, ci_hi;
	struct shape_speedup *shapes; /* per task shape, from the evidence (html chart) */
	int nshapes;
};

/* One task shape's measured speedup, from result.json. */
struct shape_speedup {
	char *name;
	int timed;
	double est, lo, hi;
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
	free(r->flags);
	for (int i = 0; i < r->nshapes; i++)
		free(r->shapes[i].name);
	free(r->shapes);
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
	cJSON_ArrayForEach(t, tasks) {
		struct shape_speedup *sh = &r->shapes[r->nshapes];
		const cJSON *sp = cJSON_GetObjectItem(t, "speedup");
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(t, "name"));

		sh->name = strdup(name ? name : "?");
		if (!sh->name)
			break;
		if (cJSON_IsObject(sp) && !strcmp(nz_str(cJSON_GetStringValue(cJSON_GetObjectItem(t, "parity"))), "pass")) {
			sh->timed = 1;
			sh->est = cJSON_GetNumberValue(cJSON_GetObjectItem(sp, "estimate"));
			sh->lo = cJSON_GetNumberValue(cJSON_GetArrayItem(cJSON_GetObjectItem(sp, "ci95"), 0));
			sh->hi = cJSON_GetNumberValue(cJSON_GetArrayItem(cJSON_GetObjectItem(sp, "ci95"), 1));
		}
		r->nshapes++;
	}
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
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
		built = root && g && !strcmp(g, gen) &&
			cJSON_IsTrue(cJSON_GetObjectItem(b, "pass")) &&
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
		r->id = fs_stem(path, ".md");
		r->status = strdup("invalid");
		r->evidence = strdup("invalid card");
		r->evidence_why = strdup(vs_last_error());
		(*mismatches)++;
		goto done;
	}
	v = &c.validation;
	r->id = dupz(c.id);
	r->status = dupz(v->status && *v->status ? v->status : "draft");
	r->last_verified = dupz(v->last_verified);
	r->device = dupz(v->gpu);
	r->measured_gen = dupz(v->gen);
	r->has_measured = v->has_isolated;
	r->measured = v->measured_isolated;
	r->has_expected = c.expects.has_isolated_speedup_min;
	r->expected = c.expects.isolated_speedup_min;
	r->parity = dupz(v->measured_parity);
	if (*nz_str(v->impl_baseline) || *nz_str(v->impl_candidate))
		r->impls = fs_printf("%s -> %s", nz_str(v->impl_baseline), nz_str(v->impl_candidate));
	if (!v->artifact || !*v->artifact) {
		if (!strcmp(r->status, "validated") || !strcmp(r->status, "failed")) {
			r->evidence = strdup("missing");
			r->evidence_why = strdup("status claimed without validation.artifact");
			(*mismatches)++;
			unverified(r);
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
			r->stale_why = strdup(strstr(vs_last_error(), "generator") ? "measured on an earlier generator's "
					      "inputs: run again" : "card content changed after validation");
			r->evidence = strdup("ok");
		} else if (err) {
			r->evidence = strdup(status == EVIDENCE_MISSING ? "missing" : "mismatch");
			r->evidence_why = strdup(vs_last_error());
			(*mismatches)++;
			unverified(r);
		} else {
			char why[160];
			int bad;

			quiet = vs_error_set_quiet(1);
			bad = evidence_check_claims(v, &e, path, why, sizeof(why));
			vs_error_set_quiet(quiet);
			if (bad) {
				r->evidence = strdup("mismatch");
				r->evidence_why = strdup(why);
				(*mismatches)++;
				unverified(r);
			} else {
				const cJSON *flags = cJSON_GetObjectItem(e.result, "flags"), *fl;

				r->evidence = strdup("ok");
				r->verified = 1;
				free(r->impls);
				r->impls = fs_printf("%s -> %s", e.baseline, e.candidate);
				fill_shapes(r, &e);
				r->nflags = cJSON_GetArraySize(flags);
				if (r->nflags) {
					size_t cap = 1;

					cJSON_ArrayForEach(fl, flags)
						cap += strlen(cJSON_GetStringValue(fl) ? cJSON_GetStringValue(fl) : "") + 2;
					r->flags = calloc(cap, 1);
					cJSON_ArrayForEach(fl, flags)
						if (r->flags && cJSON_GetStringValue(fl)) {
							if (*r->flags)
								strcat(r->flags, "; ");
							strcat(r->flags, cJSON_GetStringValue(fl));
						}
				}
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
			}
		}
	}
	for (int i = 0; i < c.match.gens.count; i++) {
		const char *g = c.match.gens.items[i];
		const char *st;

		if (v->gen && !strcmp(v->gen, g) && strcmp(r->status, "draft"))
			st = r->status;
		else if (built_for(o->plans_dir ? o->plans_dir : "plans", c.id, g))
			st = "built";
		else
			st = "untested";
		snprintf(gens + strlen(gens), sizeof(gens) - strlen(gens), "%s%s:%s", i ? " " : "", g, st);
	}
	r->gens = strdup(gens);
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

static void print_text(FILE *f, struct row *rows, int n, int markdown)
{
	if (markdown) {
		fprintf(f, "| card | status | gens | last verified | device | speedup (measured / min) | parity | "
			"evidence | implementations |\n|---|---|---|---|---|---|---|---|---|\n");
	} else {
		fprintf(f, "%-30s %-10s %-34s %-10s %-14s %-17s %-6s %-22s %s\n", "card", "status", "gens",
			"verified", "device", "speedup meas/min", "parity", "evidence", "implementations");
	}
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];
		char m[32], e[32], sp[80];

		num_or_dash(m, sizeof(m), r->has_measured, r->measured);
		num_or_dash(e, sizeof(e), r->has_expected, r->expected);
		snprintf(sp, sizeof(sp), "%s / %s", m, e);
		if (markdown)
			fprintf(f, "| %s | %s | %s | %s | %s | %s | %s | %s%s%s%s%s | %s |\n", r->id, r->status,
				r->gens ? r->gens : "", r->last_verified && *r->last_verified ? r->last_verified : "-",
				r->device && *r->device ? r->device : "-", sp, r->parity && *r->parity ? r->parity : "-",
				r->evidence, r->evidence_why ? ": " : "", r->evidence_why ? r->evidence_why : "",
				r->flags ? "; flagged for review: " : "", r->flags ? r->flags : "", r->impls ? r->impls : "-");
		else
			fprintf(f, "%-30s %-10s %-34s %-10s %-14s %-17s %-6s %-22s %s\n", r->id, r->status,
				r->gens ? r->gens : "", r->last_verified && *r->last_verified ? r->last_verified : "-",
				r->device && *r->device ? r->device : "-", sp, r->parity && *r->parity ? r->parity : "-",
				r->nflags ? "ok, flagged for review" : r->evidence, r->impls ? r->impls : "-");
	}
	for (int i = 0; i < n && !markdown; i++) {
		if (rows[i].evidence_why)
			fprintf(f, "  %s: evidence %s: %s\n", rows[i].id, rows[i].evidence, rows[i].evidence_why);
		if (rows[i].stale_why)
			fprintf(f, "  %s: stale: %s\n", rows[i].id, rows[i].stale_why);
		if (rows[i].flags) {
			const char *sep = strstr(rows[i].flags, "; ");

			/* The first flag in full; the rest are in the JSON report and in result.json. */
			fprintf(f, "  %s: flagged for review (%d): %.*s%s\n", rows[i].id, rows[i].nflags,
				sep ? (int)(sep - rows[i].flags) : (int)strlen(rows[i].flags), rows[i].flags,
				rows[i].nflags > 1 ? "; ..." : "");
		}
	}
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
		cJSON_AddStringToObject(j, "evidence", r->evidence);
		if (r->impls)
			cJSON_AddStringToObject(j, "implementations", r->impls);
		if (r->evidence_why)
			cJSON_AddStringToObject(j, "evidence_detail", r->evidence_why);
		if (r->flags)
			cJSON_AddStringToObject(j, "review_flags", r->flags);
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
		case '&': fputs("&amp;", f); break;
		case '<': fputs("&lt;", f); break;
		case '>': fputs("&gt;", f); break;
		case '"': fputs("&quot;", f); break;
		case '\'': fputs("&#39;", f); break;
		default: fputc(*s, f);
		}
	}
}

static void cell(FILE *f, const char *s)
{
	fputs("<td>", f);
	esc(f, s && *s ? s : "-");
	fputs("</td>", f);
}

#define CH_W 960
#define CH_LABEL 300      /* x where the plot starts */
#define CH_RIGHT 930      /* x where it ends */
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
	fprintf(f, "<text class=\"value\" x=\"%.1f\" y=\"%.1f\">%.2fx</text></g>\n", xpos(hi, vmax) + 4,
		y + CH_ROW / 2.0 + 4, v);
}

static void print_chart(FILE *f, struct row *rows, int n)
{
	double vmax = 1.0, y;
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
	ch_lo = 0.5;
	for (int i = 0; i < n; i++)
		for (int k = 0; k < rows[i].nshapes; k++)
			if (rows[i].shapes[k].timed && rows[i].shapes[k].lo > 0 && rows[i].shapes[k].lo < ch_lo)
				ch_lo = rows[i].shapes[k].lo;
	ch_lo = pow(2, floor(log2(ch_lo)));
	vmax = pow(2, ceil(log2(vmax * 1.15)));
	fprintf(f, "<svg id=\"speedup-chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"measured against expected speedup per card and "
		"task shape\">\n", CH_W, nrows * CH_ROW + 60, CH_W, nrows * CH_ROW + 60);
	/* Log axis, ticks at powers of two; 1x (no change) drawn stronger. */
	y = 30;
	for (double t = ch_lo; t <= vmax * 1.0001; t *= 2) {
		double x = xpos(t, vmax);

		fprintf(f, "<line class=\"%s\" x1=\"%.1f\" x2=\"%.1f\" y1=\"24\" y2=\"%.1f\"/>"
			"<text class=\"tick\" x=\"%.1f\" y=\"18\">%gx</text>\n", t == 1 ? "grid one" : "grid", x, x,
			nrows * CH_ROW + 30.0, x - 6, t);
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
			fprintf(f, "<text class=\"none\" x=\"%d\" y=\"%.1f\">not measured</text>\n", CH_LABEL + 6, y + 15);
		y += CH_ROW;
		for (int k = 0; k < r->nshapes; k++) {
			const struct shape_speedup *sh = &r->shapes[k];

			fprintf(f, "<text class=\"label\" x=\"16\" y=\"%.1f\">", y + 15);
			esc(f, sh->name);
			fprintf(f, "</text>\n");
			if (sh->timed)
				bar(f, y, sh->est, sh->lo, sh->hi, vmax, "shape", sh->name);
			else
				fprintf(f, "<text class=\"none\" x=\"%d\" y=\"%.1f\">not timed (parity or fault)</text>\n",
					CH_LABEL + 6, y + 15);
			y += CH_ROW;
		}
		if (r->has_expected) {
			double x = xpos(r->expected, vmax);

			fprintf(f, "<g class=\"expected\"><title>expected isolated_speedup_min %.3fx</title>"
				"<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/><text x=\"%.1f\" y=\"%.1f\">min %.2fx"
				"</text></g>\n", r->expected, x, x, top + CH_ROW, y, x + 3, top + 15, r->expected);
		}
		fprintf(f, "</g>\n");
	}
	fprintf(f, "</svg>\n");
}

static void print_html(FILE *f, struct row *rows, int n)
{
	char today[11];

	fs_today_utc(today);
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<title>validate_skill report</title>\n<style>\n"
	      "body{font-family:system-ui,sans-serif;margin:2em;color:#222}\n"
	      "table{border-collapse:collapse;margin-bottom:2em}\n"
	      "th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;font-size:14px}\n"
	      "th{background:#f0f0f0}\n"
	      ".status-validated{background:#d9f2d9}.status-failed{background:#f8d7d7}"
	      ".status-stale{background:#fff3cd}.status-draft{background:#eee}.status-invalid{background:#f8d7d7}"
	      ".status-unverified{background:#e53e3e;color:#fff;font-weight:bold}\n"
	      "svg text{font-size:12px;fill:#222}svg .card-title{font-weight:bold;font-size:13px}\n"
	      "svg .grid{stroke:#ddd}svg .one{stroke:#888}svg .tick{fill:#666}\n"
	      "svg .overall rect{fill:#2b6cb0}svg .shape rect{fill:#90cdf4}\n"
	      "svg .ci{stroke:#111;stroke-width:2}svg .expected line{stroke:#c53030;stroke-width:2;"
	      "stroke-dasharray:5 3}svg .expected text{fill:#c53030}svg .none{fill:#888;font-style:italic}\n"
	      "</style>\n</head>\n<body>\n<h1>Skill cards: status</h1>\n", f);
	fprintf(f, "<p>validate_skill %s, kernels tree %.12s%s, %s (UTC)</p>\n", VS_TOOL_VERSION, VS_KERNELS_TREE,
		VS_KERNELS_DIRTY ? " (dirty)" : "", today);
	fputs("<table id=\"status\">\n<thead><tr><th>card</th><th>status</th><th>gens</th><th>last verified</th>"
	      "<th>device</th><th>measured speedup</th><th>expected min</th><th>parity</th><th>evidence</th>"
	      "<th>implementations</th></tr></thead>\n<tbody>\n", f);
	for (int i = 0; i < n; i++) {
		struct row *r = &rows[i];
		char m[32], e[32];

		num_or_dash(m, sizeof(m), r->has_measured, r->measured);
		num_or_dash(e, sizeof(e), r->has_expected, r->expected);
		fputs("<tr>", f);
		cell(f, r->id);
		fputs("<td class=\"status-", f);
		esc(f, r->status);
		fputs("\">", f);
		esc(f, r->status);
		if (r->stale_why) {
			fputs(" <small>(", f);
			esc(f, r->stale_why);
			fputs(")</small>", f);
		}
		fputs("</td>", f);
		cell(f, r->gens);
		cell(f, r->last_verified);
		cell(f, r->device);
		cell(f, m);
		cell(f, e);
		cell(f, r->parity);
		fputs("<td>", f);
		esc(f, r->evidence);
		if (r->evidence_why) {
			fputs(": ", f);
			esc(f, r->evidence_why);
		}
		if (r->flags) {
			fputs("; flagged for review: ", f);
			esc(f, r->flags);
		}
		fputs("</td>", f);
		cell(f, r->impls);
		fputs("</tr>\n", f);
	}
	fputs("</tbody>\n</table>\n<h2>Measured against expected speedup</h2>\n"
	      "<p>Bars: measured isolated speedup (baseline time / candidate time) with its 95% CI, overall and per "
	      "task shape, on a log axis, from verified evidence only (a task that failed parity has none); dashed "
	      "line: the card's expects.isolated_speedup_min.</p>\n", f);
	print_chart(f, rows, n);
	fputs("</body>\n</html>\n", f);
}

int report_run(const struct report_options *o)
{
	const char *dir = o->skills_dir ? o->skills_dir : "skills";
	const char *format = o->format ? o->format : "text";
	FILE *f = o->out ? o->out : stdout;
	DIR *d;
	struct dirent *de;
	char **paths = NULL;
	struct row *rows = NULL;
	int n = 0, mismatches = 0, err = 0;

	if (strcmp(format, "text") && strcmp(format, "markdown") && strcmp(format, "json") && strcmp(format, "html"))
		return vs_error(VS_EUSAGE, "unknown report format '%s' (text, markdown, json, html)", format);
	d = opendir(dir);
	if (!d)
		return vs_error(VS_EIO, "cannot open the skills directory '%s'", dir);
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char **np;

		if (len < 4 || strcmp(de->d_name + len - 3, ".md") || de->d_name[0] == '.')
			continue;
		np = realloc(paths, (size_t)(n + 1) * sizeof(*paths));
		if (!np) {
			err = vs_error(VS_ENOMEM, "out of memory");
			break;
		}
		paths = np;
		paths[n++] = fs_join(dir, de->d_name);
	}
	closedir(d);
	if (!err) {
		qsort(paths, (size_t)n, sizeof(*paths), cmp_str);
		rows = calloc((size_t)n + 1, sizeof(*rows));
		if (!rows)
			err = vs_error(VS_ENOMEM, "out of memory");
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
		if (mismatches)
			err = vs_error(VS_EVERIFY, "%d card%s claim%s what the evidence does not show (see above)",
				       mismatches, mismatches == 1 ? "" : "s", mismatches == 1 ? "s" : "");
	}
	for (int i = 0; i < n; i++) {
		if (rows)
			row_release(&rows[i]);
		free(paths[i]);
	}
	free(rows);
	free(paths);
	return err;
}
