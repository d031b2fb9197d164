/*
 * workload.c - the workload file (libyaml events into a small tree with line:col), its checks, the
 * trace readers (CSV, JSONL), the continuous-batching simulation and the grouping into tasks
 * (docs/DESIGN.md "Workloads (issue 37, foundation)").
 */
#include "workload.h"
#include "fsutil.h"
#include "mla_decode.h"
#include "rng.h"
#include "vs_error.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <yaml.h>

#define WL_MAX_DEPTH 16

/* Philox streams of the simulation: one per purpose and concurrency (stream = base + C). */
#define STREAM_START 0x10000ull
#define STREAM_PHASE 0x20000ull
#define STREAM_CONTEXT 0x30000ull
#define STREAM_GENERATED 0x40000ull
#define STREAM_MTP 0x50000ull

/* ---- the YAML tree ------------------------------------------------------------------------- */

enum wnode_kind { WN_SCALAR, WN_SEQ, WN_MAP };

struct wnode {
	enum wnode_kind kind;
	int plain; /* scalar written without quotes */
	char *value;
	int line, col;      /* 1-based */
	struct wnode **kid; /* sequence items; mapping: key, value, key, value, ... */
	int n, cap;
};

static void wnode_free(struct wnode *n)
{
	if (!n)
		return;
	for (int i = 0; i < n->n; i++)
		wnode_free(n->kid[i]);
	free(n->kid);
	free(n->value);
	free(n);
}

static int wnode_push(struct wnode *n, struct wnode *k)
{
	if (n->n == n->cap) {
		int ncap = n->cap ? n->cap * 2 : 8;
		struct wnode **nk = realloc(n->kid, (size_t)ncap * sizeof(*nk));

		VS_CHECK_ALLOC(nk);
		n->kid = nk;
		n->cap = ncap;
	}
	n->kid[n->n++] = k;
	return 0;
}

/* The one error line: "<path>:<line>:<col>: <key>: <message>", control characters blanked. */
static int wl_msg(int code, const char *path, int line, int col, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
static int wl_msg(int code, const char *path, int line, int col, const char *key, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	for (char *p = msg; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	if (!code) {
		vs_warn("%s:%d:%d: %s: %s", path, line, col, key, msg);
		return 0;
	}
	return vs_error(code, "%s:%d:%d: %s: %s", path, line, col, key, msg);
}

struct parse {
	const char *path;
	yaml_parser_t parser;
};

static int parse_next(struct parse *p, yaml_event_t *ev)
{
	yaml_parser_t *y = &p->parser;

	if (yaml_parser_parse(y, ev))
		return 0;
	if (y->error == YAML_MEMORY_ERROR)
		return vs_oom();
	return wl_msg(VS_EPARSE, p->path, (int)y->problem_mark.line + 1, (int)y->problem_mark.column + 1, "workload",
		      "invalid yaml: %s%s%s", y->problem ? y->problem : "unknown error", y->context ? ", " : "",
		      y->context ? y->context : "");
}

static int parse_node(struct parse *p, yaml_event_t *ev, int depth, struct wnode **out);

static int parse_children(struct parse *p, struct wnode *n, int depth)
{
	yaml_event_type_t end = n->kind == WN_MAP ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT;
	yaml_event_t sub;
	struct wnode *k = NULL;
	int err;

	for (;;) {
		err = parse_next(p, &sub);
		if (err)
			return err;
		if (sub.type == end) {
			yaml_event_delete(&sub);
			return 0;
		}
		err = parse_node(p, &sub, depth + 1, &k);
		yaml_event_delete(&sub);
		if (err)
			return err;
		if (n->kind == WN_MAP && !(n->n % 2)) {
			if (k->kind != WN_SCALAR) {
				err = wl_msg(VS_EPARSE, p->path, k->line, k->col, "workload",
					     "mapping keys must be plain strings");
				wnode_free(k);
				return err;
			}
			for (int i = 0; i < n->n; i += 2) {
				if (!strcmp(n->kid[i]->value, k->value)) {
					err = wl_msg(VS_ESCHEMA, p->path, k->line, k->col, k->value,
						     "duplicate key (first at line %d)", n->kid[i]->line);
					wnode_free(k);
					return err;
				}
			}
		}
		err = wnode_push(n, k);
		if (err) {
			wnode_free(k);
			return err;
		}
		k = NULL;
	}
}

/* Build the node that starts with ev (not consumed); *out set only on success. */
static int parse_node(struct parse *p, yaml_event_t *ev, int depth, struct wnode **out)
{
	struct wnode *n = NULL;
	int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1, err = 0;

	if (depth > WL_MAX_DEPTH)
		return wl_msg(VS_EPARSE, p->path, line, col, "workload", "nesting deeper than %d levels", WL_MAX_DEPTH);
	if (ev->type == YAML_ALIAS_EVENT)
		return wl_msg(VS_EPARSE, p->path, line, col, "workload", "aliases are not supported in workloads");
	if (ev->type != YAML_SCALAR_EVENT && ev->type != YAML_SEQUENCE_START_EVENT &&
	    ev->type != YAML_MAPPING_START_EVENT)
		return wl_msg(VS_EPARSE, p->path, line, col, "workload", "unexpected yaml event");
	n = calloc(1, sizeof(*n));
	VS_CHECK_ALLOC(n);
	n->line = line;
	n->col = col;
	if (ev->type == YAML_SCALAR_EVENT) {
		n->kind = WN_SCALAR;
		n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
		n->value = strndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
		if (!n->value)
			err = vs_oom();
	} else {
		n->kind = ev->type == YAML_MAPPING_START_EVENT ? WN_MAP : WN_SEQ;
		err = parse_children(p, n, depth);
	}
	if (err)
		goto done;
	*out = n;
	n = NULL;
done:
	wnode_free(n);
	return err;
}

static int parse_yaml(struct wnode **root, const char *path, const char *text, size_t len)
{
	struct parse p = {.path = path};
	yaml_event_t ev;
	int err = 0, have = 0;

	*root = NULL;
	if (!yaml_parser_initialize(&p.parser))
		return vs_oom();
	yaml_parser_set_input_string(&p.parser, (const unsigned char *)text, len);
	yaml_parser_set_encoding(&p.parser, YAML_UTF8_ENCODING);
	for (;;) {
		err = parse_next(&p, &ev);
		if (err)
			goto done;
		have = 1;
		if (ev.type == YAML_STREAM_END_EVENT)
			break;
		if (ev.type == YAML_DOCUMENT_START_EVENT && *root) {
			err = wl_msg(VS_EPARSE, path, (int)ev.start_mark.line + 1, (int)ev.start_mark.column + 1,
				     "workload", "a second yaml document (a workload is one)");
			goto done;
		}
		if (ev.type == YAML_SCALAR_EVENT || ev.type == YAML_SEQUENCE_START_EVENT ||
		    ev.type == YAML_MAPPING_START_EVENT || ev.type == YAML_ALIAS_EVENT) {
			err = parse_node(&p, &ev, 0, root);
			if (err)
				goto done;
		}
		yaml_event_delete(&ev);
		have = 0;
	}
	if (!*root || (*root)->kind != WN_MAP)
		err = wl_msg(VS_EPARSE, path, *root ? (*root)->line : 1, *root ? (*root)->col : 1, "workload",
			     "a workload is a mapping of keys (key: value lines)");
done:
	if (have)
		yaml_event_delete(&ev);
	yaml_parser_delete(&p.parser);
	if (err) {
		wnode_free(*root);
		*root = NULL;
	}
	return err;
}

/* ---- schema -------------------------------------------------------------------------------- */

struct check {
	struct workload *w;
	int errors;
};

static int bad(struct check *c, const struct wnode *at, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static int bad(struct check *c, const struct wnode *at, const char *key, const char *fmt, ...)
{
	char msg[768];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->errors++;
	return wl_msg(VS_ESCHEMA, c->w->path, at->line, at->col, key, "%s", msg);
}

static const struct wnode *map_get(const struct wnode *map, const char *key)
{
	for (int i = 0; map && map->kind == WN_MAP && i + 1 < map->n; i += 2)
		if (!strcmp(map->kid[i]->value, key))
			return map->kid[i + 1];
	return NULL;
}

static const char *kind_name(const struct wnode *v)
{
	return v->kind == WN_MAP ? "a mapping" : v->kind == WN_SEQ ? "a list" : "a scalar";
}

/* A plain decimal integer (optional sign); 0 and *out set when it is one. */
static int scalar_int(const struct wnode *v, int64_t *out)
{
	const char *s;
	char *end;
	long long x;

	if (v->kind != WN_SCALAR || !v->plain || !*v->value)
		return -1;
	s = v->value;
	if (!isdigit((unsigned char)s[*s == '-' || *s == '+']))
		return -1;
	errno = 0;
	x = strtoll(s, &end, 10);
	if (*end || errno)
		return -1;
	*out = x;
	return 0;
}

static int scalar_double(const struct wnode *v, double *out)
{
	char *end;
	double x;

	if (v->kind != WN_SCALAR || !v->plain || !*v->value)
		return -1;
	errno = 0;
	x = strtod(v->value, &end);
	if (*end || errno || !isfinite(x) ||
	    (!isdigit((unsigned char)*v->value) && *v->value != '-' && *v->value != '+' && *v->value != '.'))
		return -1;
	*out = x;
	return 0;
}

/* An integer key in lo..hi; *out untouched when absent (not required) or bad. */
static void get_int(struct check *c, const struct wnode *map, const char *name, const char *key, int required,
		    int64_t lo, int64_t hi, int64_t *out, const struct wnode *at)
{
	const struct wnode *v = map_get(map, name);
	int64_t x;

	if (!v) {
		if (required)
			bad(c, at, key, "missing (an integer %lld..%lld)", (long long)lo, (long long)hi);
		return;
	}
	if (scalar_int(v, &x)) {
		bad(c, v, key, "'%s' is not an integer", v->kind == WN_SCALAR ? v->value : kind_name(v));
		return;
	}
	if (x < lo || x > hi) {
		bad(c, v, key, "%lld is out of range %lld..%lld", (long long)x, (long long)lo, (long long)hi);
		return;
	}
	*out = x;
}

static void get_str(struct check *c, const struct wnode *map, const char *name, int required, char **out)
{
	const struct wnode *v = map_get(map, name);

	if (!v) {
		if (required)
			bad(c, map, name, "missing (a string)");
		return;
	}
	if (v->kind != WN_SCALAR || !*v->value) {
		bad(c, v, name, "must be a non-empty string, not %s", v->kind == WN_SCALAR ? "empty" : kind_name(v));
		return;
	}
	*out = strdup(v->value);
	if (!*out) {
		vs_oom();
		c->errors++;
	}
}

static int unknown_add(struct workload *w, const char *path, const struct wnode *k)
{
	struct workload_unknown *nu = realloc(w->unknown, (size_t)(w->unknown_count + 1) * sizeof(*nu));

	VS_CHECK_ALLOC(nu);
	w->unknown = nu;
	nu[w->unknown_count].path = strdup(path);
	VS_CHECK_ALLOC(nu[w->unknown_count].path);
	nu[w->unknown_count].line = k->line;
	nu[w->unknown_count].col = k->col;
	w->unknown_count++;
	wl_msg(0, w->path, k->line, k->col, path, "unknown key (kept; the known keys are in docs/DESIGN.md)");
	return 0;
}

/* Warn about (and keep) every key of map not in known (NULL-terminated). */
static void check_unknown(struct check *c, const struct wnode *map, const char *prefix, const char *const *known)
{
	for (int i = 0; map && map->kind == WN_MAP && i + 1 < map->n; i += 2) {
		const char *k = map->kid[i]->value;
		int found = 0;
		char path[256];

		for (int j = 0; known[j] && !found; j++)
			found = !strcmp(known[j], k);
		if (found)
			continue;
		snprintf(path, sizeof(path), "%s%s%s", prefix, *prefix ? "." : "", k);
		if (unknown_add(c->w, path, map->kid[i]))
			c->errors++;
	}
}

static const char *const top_keys[] = {"id",      "title", "source", "model", "concurrency",
				       "traffic", "steps", "tasks",  "seed",  NULL};
static const char *const model_keys[] = {"h_q",  "s_q",        "page_size",      "kv_dtypes",       "mtp_accept",
					 "topk", "extra_topk", "extra_compress", "extra_page_size", "attn_sink",
					 NULL};

#define WL_DTYPES "bf16, fp8_e4m3_fnuz, fp8_ds_mla, fp8_ds_mla_fnuz, fp8_model1, fp8_model1_fnuz"
#define WL_TOPK_MAX 65536       /* as a card's match.topk (CARD_TOPK_MAX) */
#define WL_TOPK_V32 2048        /* DeepSeek-V3.2's indexer topk (card.h CARD_TOPK_V32) */
#define WL_TOPK_V4 128          /* DeepSeek-V4's main-cache topk (CARD_TOPK_V4) */
#define WL_EXTRA_TOPK_V4 1024   /* and its extra-cache topk (CARD_EXTRA_TOPK_V4) */
#define WL_EXTRA_COMPRESS_V4 4  /* context tokens per row of V4's compressed (extra) cache */
#define WL_SPARSE_PAGE_MAX 4096 /* a sparse cache's page (FlashMLA's tests: 2..256) */

/* The sparse keys of model m (after kv_dtypes): the form, the family's consistency, the defaults. */
static void check_sparse(struct check *c, const struct wnode *m, const struct wnode *dt, int64_t page_size)
{
	struct workload *w = c->w;
	const struct wnode *sink = map_get(m, "attn_sink");
	static const char *const extra_keys[] = {"extra_topk", "extra_compress", "extra_page_size", NULL};
	static const char *const extra_paths[] = {"model.extra_topk", "model.extra_compress", "model.extra_page_size"};
	int sparse = map_get(m, "topk") != NULL, v4 = 0, v32 = 0;
	int64_t x;

	for (int i = 0; i < w->n_kv_dtypes; i++) {
		sparse |= mla_kv_is_blockscaled(w->kv_dtypes[i]);
		v4 |= mla_kv_is_model1(w->kv_dtypes[i]);
		v32 |= !mla_kv_is_model1(w->kv_dtypes[i]) && w->kv_dtypes[i] != MLA_KV_FP8_E4M3_FNUZ;
	}
	if (!sparse) {
		for (int k = 0; extra_keys[k]; k++)
			if (map_get(m, extra_keys[k]))
				bad(c, map_get(m, extra_keys[k]), extra_paths[k],
				    "belongs to the sparse form: give model.topk or a block-scaled kv_dtype "
				    "(fp8_ds_mla, fp8_model1)");
		if (sink)
			bad(c, sink, "model.attn_sink",
			    "belongs to the sparse form: give model.topk or a block-scaled kv_dtype (fp8_ds_mla, "
			    "fp8_model1)");
		if (page_size && page_size != 1 && page_size != 16 && page_size != 64)
			bad(c, map_get(m, "page_size"), "model.page_size",
			    "%lld is not a page size the planner builds (1, 16 or 64)", (long long)page_size);
		else
			w->page_size = (int)page_size;
		return;
	}
	if (page_size > WL_SPARSE_PAGE_MAX)
		bad(c, map_get(m, "page_size"), "model.page_size", "%lld is out of range 1..%d for the sparse form",
		    (long long)page_size, WL_SPARSE_PAGE_MAX);
	else
		w->page_size = (int)page_size;
	for (int i = 0; dt && i < dt->n; i++) {
		const struct wnode *v = dt->kid[i];
		int32_t d = v->kind == WN_SCALAR ? mla_kv_dtype_parse(v->value) : 0;

		if (d == MLA_KV_FP8_E4M3_FNUZ)
			bad(c, v, "model.kv_dtypes",
			    "'fp8_e4m3_fnuz' (one per-tensor scale) is the dense form's cache; the sparse form "
			    "(topk) reads bf16, fp8_ds_mla(_fnuz) or fp8_model1(_fnuz)");
		else if (d && v4 && v32 && !mla_kv_is_model1(d))
			bad(c, v, "model.kv_dtypes",
			    "'%s' is a DeepSeek-V3.2 cache (576-wide rows) beside a V4 one (fp8_model1): a workload "
			    "is one model's; write one workload per model",
			    v->value);
	}
	x = v4 ? WL_TOPK_V4 : WL_TOPK_V32;
	get_int(c, m, "topk", "model.topk", 0, 1, WL_TOPK_MAX, &x, m);
	w->topk = (int)x;
	if (!v4) {
		for (int k = 0; extra_keys[k]; k++)
			if (map_get(m, extra_keys[k]))
				bad(c, map_get(m, extra_keys[k]), extra_paths[k],
				    "the extra cache is DeepSeek-V4's: only with fp8_model1 or fp8_model1_fnuz");
	} else {
		x = WL_EXTRA_TOPK_V4;
		get_int(c, m, "extra_topk", "model.extra_topk", 0, 0, WL_TOPK_MAX, &x, m);
		w->extra_topk = (int)x;
		if (!w->extra_topk) {
			for (int k = 1; extra_keys[k]; k++)
				if (map_get(m, extra_keys[k]))
					bad(c, map_get(m, extra_keys[k]), extra_paths[k],
					    "extra_topk is 0 (no extra cache): nothing for it to describe");
		} else {
			x = WL_EXTRA_COMPRESS_V4;
			get_int(c, m, "extra_compress", "model.extra_compress", 0, 1, 1024, &x, m);
			w->extra_compress = (int)x;
			x = w->page_size;
			get_int(c, m, "extra_page_size", "model.extra_page_size", 0, 1, WL_SPARSE_PAGE_MAX, &x, m);
			w->extra_page_size = (int)x;
		}
	}
	if (sink) {
		if (sink->kind != WN_SCALAR || !sink->plain ||
		    (strcmp(sink->value, "true") && strcmp(sink->value, "false")))
			bad(c, sink, "model.attn_sink", "must be true or false (the model has per-head sink logits)");
		else
			w->attn_sink = !strcmp(sink->value, "true");
	}
}
static const char *const traffic_keys[] = {"trace", "histogram", "context_column", "generated_column", NULL};
static const char *const histogram_keys[] = {"context", "generated", NULL};

static void check_model(struct check *c, const struct wnode *root)
{
	struct workload *w = c->w;
	const struct wnode *m = map_get(root, "model"), *dt;
	int64_t x, page_size;

	if (!m) {
		bad(c, root, "model", "missing (a mapping: h_q, s_q, page_size, kv_dtypes)");
		return;
	}
	if (m->kind != WN_MAP) {
		bad(c, m, "model", "must be a mapping (h_q, s_q, page_size, kv_dtypes), not %s", kind_name(m));
		return;
	}
	check_unknown(c, m, "model", model_keys);
	x = 0;
	get_int(c, m, "h_q", "model.h_q", 1, 1, 128, &x, m);
	w->h_q = (int)x;
	x = 1;
	get_int(c, m, "s_q", "model.s_q", 0, 1, 8, &x, m);
	w->s_q = (int)x;
	w->mtp_accept = 1.0;
	if (map_get(m, "mtp_accept")) {
		const struct wnode *a = map_get(m, "mtp_accept");
		char *end = NULL;
		double v = a->kind == WN_SCALAR ? strtod(a->value, &end) : -1;

		if (a->kind != WN_SCALAR || !end || *end || end == a->value || !(v >= 0 && v <= 1))
			bad(c, a, "model.mtp_accept",
			    "must be a number in [0, 1] (the chance each draft token is accepted)");
		else if (w->s_q < 2)
			bad(c, a, "model.mtp_accept",
			    "needs s_q >= 2 (multi-token prediction verifies s_q - 1 draft tokens)");
		else
			w->mtp_accept = v;
	}
	page_size = 0;
	get_int(c, m, "page_size", "model.page_size", 1, 1, 1 << 20, &page_size, m);
	dt = map_get(m, "kv_dtypes");
	if (!dt) {
		bad(c, m, "model.kv_dtypes", "missing (a list of " WL_DTYPES ")");
		return;
	}
	if (dt->kind != WN_SEQ || dt->n == 0) {
		bad(c, dt, "model.kv_dtypes", "must be a non-empty list of " WL_DTYPES);
		return;
	}
	for (int i = 0; i < dt->n; i++) {
		const struct wnode *v = dt->kid[i];
		int32_t d = v->kind == WN_SCALAR ? mla_kv_dtype_parse(v->value) : 0;
		int dup = 0;

		if (!d) {
			bad(c, v, "model.kv_dtypes", "'%s' is not a kv dtype (" WL_DTYPES ")",
			    v->kind == WN_SCALAR ? v->value : kind_name(v));
			continue;
		}
		for (int j = 0; j < w->n_kv_dtypes; j++)
			dup |= w->kv_dtypes[j] == d;
		if (dup || w->n_kv_dtypes == (int)(sizeof(w->kv_dtypes) / sizeof(w->kv_dtypes[0]))) {
			bad(c, v, "model.kv_dtypes", "'%s' is listed twice", v->value);
			continue;
		}
		w->kv_dtypes[w->n_kv_dtypes++] = d;
	}
	check_sparse(c, m, dt, page_size);
}

static void check_concurrency(struct check *c, const struct wnode *root)
{
	struct workload *w = c->w;
	const struct wnode *v = map_get(root, "concurrency");
	int n;

	if (!v) {
		bad(c, root, "concurrency", "missing (a list of concurrent requests, e.g. [1, 16, 64])");
		return;
	}
	n = v->kind == WN_SEQ ? v->n : 1;
	if (v->kind == WN_MAP || n == 0 || n > (int)(sizeof(w->concurrency) / sizeof(w->concurrency[0]))) {
		bad(c, v, "concurrency", "must be an integer or a list of 1..%d integers",
		    (int)(sizeof(w->concurrency) / sizeof(w->concurrency[0])));
		return;
	}
	for (int i = 0; i < n; i++) {
		const struct wnode *it = v->kind == WN_SEQ ? v->kid[i] : v;
		int64_t x;

		if (scalar_int(it, &x)) {
			bad(c, it, "concurrency", "'%s' is not an integer",
			    it->kind == WN_SCALAR ? it->value : kind_name(it));
			continue;
		}
		if (x < 1 || x > WORKLOAD_MAX_CONCURRENCY) {
			bad(c, it, "concurrency", "%lld is out of range 1..%d", (long long)x, WORKLOAD_MAX_CONCURRENCY);
			continue;
		}
		if (w->n_concurrency && x <= w->concurrency[w->n_concurrency - 1]) {
			bad(c, it, "concurrency", "%lld: list each concurrency once, ascending", (long long)x);
			continue;
		}
		w->concurrency[w->n_concurrency++] = (int)x;
	}
}

/* traffic.histogram.<name>: [[lo, hi, share], ...]; shares sum to 1 (within 1e-3, then normalized). */
static void check_bins(struct check *c, const struct wnode *h, const char *name, struct workload_bin **out, int *count)
{
	const struct wnode *v = map_get(h, name);
	char key[64];
	double sum = 0;
	int errors = c->errors;

	snprintf(key, sizeof(key), "traffic.histogram.%s", name);
	if (!v) {
		bad(c, h, key, "missing (a list of [lo, hi, share] bins)");
		return;
	}
	if (v->kind != WN_SEQ || v->n == 0 || v->n > WORKLOAD_MAX_BINS) {
		bad(c, v, key, "must be a list of 1..%d [lo, hi, share] bins", WORKLOAD_MAX_BINS);
		return;
	}
	*out = calloc((size_t)v->n, sizeof(**out));
	if (!*out) {
		c->errors++;
		return;
	}
	for (int i = 0; i < v->n; i++) {
		const struct wnode *b = v->kid[i];
		int64_t lo, hi;
		double share;

		if (b->kind != WN_SEQ || b->n != 3 || scalar_int(b->kid[0], &lo) || scalar_int(b->kid[1], &hi) ||
		    scalar_double(b->kid[2], &share)) {
			bad(c, b, key, "bin %d must be [lo, hi, share]: two integers and a number", i + 1);
			continue;
		}
		if (lo < 0 || hi < lo || hi > WORKLOAD_MAX_TOKENS) {
			bad(c, b, key, "bin %d: [%lld, %lld] is not a range 0 <= lo <= hi <= %d", i + 1, (long long)lo,
			    (long long)hi, WORKLOAD_MAX_TOKENS);
			continue;
		}
		if (!(share > 0)) {
			bad(c, b->kid[2], key, "bin %d: share %g must be positive", i + 1, share);
			continue;
		}
		(*out)[i] = (struct workload_bin){(int32_t)lo, (int32_t)hi, share};
		sum += share;
	}
	if (c->errors == errors && fabs(sum - 1.0) > 1e-3)
		bad(c, v, key, "the shares sum to %.6g, not 1", sum);
	if (c->errors == errors)
		for (int i = 0; i < v->n; i++)
			(*out)[i].share /= sum;
	*count = v->n;
}

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n > k && !strcmp(s + n - k, suffix);
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? strndup(path, (size_t)(slash - path)) : strdup(".");
}

static void check_traffic(struct check *c, const struct wnode *root)
{
	struct workload *w = c->w;
	const struct wnode *t = map_get(root, "traffic"), *tr, *h;

	if (!t) {
		bad(c, root, "traffic", "missing (a mapping with trace: FILE or histogram:)");
		return;
	}
	if (t->kind != WN_MAP) {
		bad(c, t, "traffic", "must be a mapping with trace: FILE or histogram:, not %s", kind_name(t));
		return;
	}
	check_unknown(c, t, "traffic", traffic_keys);
	tr = map_get(t, "trace");
	h = map_get(t, "histogram");
	if (!tr == !h) {
		bad(c, t, "traffic", "give either trace: FILE or histogram: {context, generated}, %s",
		    tr ? "not both" : "neither is here");
		return;
	}
	if (tr) {
		char *dir;

		get_str(c, t, "trace", 1, &w->trace);
		get_str(c, t, "context_column", 0, &w->context_column);
		get_str(c, t, "generated_column", 0, &w->generated_column);
		if (!w->trace)
			return;
		dir = dir_of(w->path);
		w->trace_path = !dir ? NULL : w->trace[0] == '/' ? strdup(w->trace) : fs_join(dir, w->trace);
		free(dir);
		if (!w->trace_path) {
			c->errors++;
			return;
		}
		if (!fs_exists(w->trace_path))
			bad(c, tr, "traffic.trace",
			    "'%s' (%s) does not exist (a trace is relative to the workload file)", w->trace,
			    w->trace_path);
		else if (!has_suffix(w->trace, ".csv") && !has_suffix(w->trace, ".jsonl"))
			bad(c, tr, "traffic.trace", "'%s' is neither .csv nor .jsonl", w->trace);
		return;
	}
	for (int i = 0; i < t->n; i += 2)
		if (strstr(t->kid[i]->value, "_column"))
			bad(c, t->kid[i], "traffic", "'%s' names a trace column; this traffic is a histogram",
			    t->kid[i]->value);
	if (h->kind != WN_MAP) {
		bad(c, h, "traffic.histogram", "must be a mapping {context: [...], generated: [...]}");
		return;
	}
	check_unknown(c, h, "traffic.histogram", histogram_keys);
	check_bins(c, h, "context", &w->context_bins, &w->n_context_bins);
	check_bins(c, h, "generated", &w->generated_bins, &w->n_generated_bins);
	for (int i = 0; w->generated_bins && i < w->n_generated_bins; i++)
		if (w->generated_bins[i].hi > 0)
			return;
	if (w->generated_bins)
		bad(c, map_get(h, "generated"), "traffic.histogram.generated",
		    "every bin generates 0 tokens: no request ever decodes");
}

static void check_id(struct check *c, const struct wnode *root)
{
	char *stem;

	get_str(c, root, "id", 1, &c->w->id);
	if (!c->w->id)
		return;
	stem = fs_stem(c->w->path, ".yaml");
	if (stem && strcmp(stem, c->w->id))
		bad(c, map_get(root, "id"), "id", "'%s' must equal the file name without .yaml ('%s')", c->w->id, stem);
	free(stem);
}

int workload_parse(struct workload *w, const char *path, const char *text, size_t len)
{
	struct wnode *root = NULL;
	struct check c = {.w = w};
	int64_t x;
	int err;

	memset(w, 0, sizeof(*w));
	w->path = strdup(path);
	VS_CHECK_ALLOC(w->path);
	fs_sha256_hex(w->sha256, text, len);
	err = parse_yaml(&root, path, text, len);
	if (err)
		goto done;
	check_unknown(&c, root, "", top_keys);
	check_id(&c, root);
	get_str(&c, root, "title", 1, &w->title);
	get_str(&c, root, "source", 1, &w->source);
	check_model(&c, root);
	check_concurrency(&c, root);
	check_traffic(&c, root);
	x = 4096;
	get_int(&c, root, "steps", "steps", 0, 1, WORKLOAD_MAX_STEPS, &x, root);
	w->steps = (int)x;
	x = 16;
	get_int(&c, root, "tasks", "tasks", 0, 1, WORKLOAD_MAX_TASKS, &x, root);
	w->tasks = (int)x;
	x = 1;
	get_int(&c, root, "seed", "seed", 0, 0, INT64_MAX, &x, root);
	w->seed = (uint64_t)x;
	if (w->n_concurrency && w->tasks < w->n_concurrency)
		bad(&c, map_get(root, "tasks") ? map_get(root, "tasks") : root, "tasks",
		    "%d is fewer than the %d concurrencies (each needs a task)", w->tasks, w->n_concurrency);
	if (w->n_concurrency && w->steps < w->tasks)
		bad(&c, map_get(root, "steps") ? map_get(root, "steps") : root, "steps", "%d is fewer than tasks (%d)",
		    w->steps, w->tasks);
	if (w->n_concurrency &&
	    (int64_t)w->steps * w->concurrency[w->n_concurrency - 1] > (int64_t)WORKLOAD_MAX_STEPS * 256)
		bad(&c, map_get(root, "steps") ? map_get(root, "steps") : root, "steps",
		    "%d steps x concurrency %d is more than %d sequences to simulate", w->steps,
		    w->concurrency[w->n_concurrency - 1], WORKLOAD_MAX_STEPS * 256);
	err = c.errors ? VS_ESCHEMA : 0;
done:
	wnode_free(root);
	if (err)
		workload_release(w);
	return err;
}

int workload_load(struct workload *w, const char *path)
{
	char *text = NULL;
	size_t len = 0;
	struct stat st;
	int err;

	if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > WORKLOAD_MAX_BYTES)
		return vs_error(VS_EPARSE, "%s: a workload file of %lld bytes is refused (at most %u)", path,
				(long long)st.st_size, WORKLOAD_MAX_BYTES);
	err = fs_read_file(&text, &len, path, WORKLOAD_MAX_BYTES);
	if (err)
		return err;
	err = workload_parse(w, path, text, len);
	free(text);
	return err;
}

void workload_release(struct workload *w)
{
	if (!w)
		return;
	free(w->path);
	free(w->id);
	free(w->title);
	free(w->source);
	free(w->trace);
	free(w->trace_path);
	free(w->context_column);
	free(w->generated_column);
	free(w->context_bins);
	free(w->generated_bins);
	for (int i = 0; i < w->unknown_count; i++)
		free(w->unknown[i].path);
	free(w->unknown);
	memset(w, 0, sizeof(*w));
}

/* ---- traces -------------------------------------------------------------------------------- */

static const char *const csv_context_names[] = {"ContextTokens", "Request tokens", NULL};
static const char *const csv_generated_names[] = {"GeneratedTokens", "Response tokens", NULL};
static const char *const jsonl_context_names[] = {"input_length", NULL};
static const char *const jsonl_generated_names[] = {"output_length", NULL};

static int trace_push(struct workload_trace *t, int *cap, int32_t context, int32_t generated)
{
	if (t->count == *cap) {
		int ncap = *cap ? *cap * 2 : 1024;
		struct workload_request *nr = realloc(t->requests, (size_t)ncap * sizeof(*nr));

		VS_CHECK_ALLOC(nr);
		t->requests = nr;
		*cap = ncap;
	}
	t->requests[t->count++] = (struct workload_request){context, generated};
	return 0;
}

/* One value of a row: "" missing, else a non-negative integer <= WORKLOAD_MAX_TOKENS. */
static int row_value(const char *path, int line, int row, const char *col, const char *s, int32_t *out)
{
	char *end;
	long long x;
	const char *p = s;

	while (*p == ' ')
		p++;
	if (!*p)
		return vs_error(VS_EPARSE, "%s:%d: row %d, column '%s': missing", path, line, row, col);
	errno = 0;
	x = strtoll(p, &end, 10);
	while (*end == ' ')
		end++;
	if (end == p || *end || errno || !(isdigit((unsigned char)*p) || *p == '-' || *p == '+'))
		return vs_error(VS_EPARSE, "%s:%d: row %d, column '%s': '%s' is not a number", path, line, row, col, p);
	if (x < 0)
		return vs_error(VS_EPARSE, "%s:%d: row %d, column '%s': %lld is negative", path, line, row, col, x);
	if (x > WORKLOAD_MAX_TOKENS)
		return vs_error(VS_EPARSE, "%s:%d: row %d, column '%s': %lld is more than %d tokens", path, line, row,
				col, x, WORKLOAD_MAX_TOKENS);
	*out = (int32_t)x;
	return 0;
}

/* Split one CSV line in place (double quotes, "" inside them); returns the field count. */
static int csv_split(char *s, char **fields, int max)
{
	int n = 0;
	char *w = s;

	while (n < max) {
		int quoted = *s == '"';

		fields[n++] = w;
		if (quoted)
			s++;
		for (;; s++) {
			if (quoted && *s == '"' && s[1] == '"') {
				*w++ = '"';
				s++;
			} else if (quoted && *s == '"') {
				quoted = 0;
			} else if (!*s || (!quoted && *s == ',')) {
				break;
			} else {
				*w++ = *s;
			}
		}
		if (!*s) {
			*w = '\0';
			return n;
		}
		*w++ = '\0';
		s++;
		w = s;
	}
	return n;
}

static void trim(char *s)
{
	size_t n = strlen(s), b = 0;

	while (n && (s[n - 1] == ' ' || s[n - 1] == '\r' || s[n - 1] == '\t'))
		s[--n] = '\0';
	while (s[b] == ' ' || s[b] == '\t')
		b++;
	memmove(s, s + b, n - b + 1);
}

static int column_index(char **fields, int n, const char *want, const char *const *known, const char **name)
{
	for (int k = 0; want ? k < 1 : known[k] != NULL; k++) {
		const char *c = want ? want : known[k];

		for (int i = 0; i < n; i++) {
			if (!strcmp(fields[i], c)) {
				*name = c;
				return i;
			}
		}
	}
	return -1;
}

static int names_list(char *buf, size_t size, const char *want, const char *const *known)
{
	buf[0] = '\0';
	for (int k = 0; want ? k < 1 : known[k] != NULL; k++)
		snprintf(buf + strlen(buf), size - strlen(buf), "%s'%s'", k ? " or " : "", want ? want : known[k]);
	return 0;
}

#define CSV_MAX_FIELDS 256

static int trace_csv(struct workload_trace *t, char *text, const char *ctx_col, const char *gen_col)
{
	char *fields[CSV_MAX_FIELDS], *line = text, *next;
	const char *cname = NULL, *gname = NULL;
	int nf, ci = -1, gi = -1, lineno = 0, row = 0, cap = 0, err = 0;
	char names[256];

	for (; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		trim(line);
		if (!*line)
			continue;
		nf = csv_split(line, fields, CSV_MAX_FIELDS);
		for (int i = 0; i < nf; i++)
			trim(fields[i]);
		if (ci < 0) {
			if (lineno == 1 && !strncmp(fields[0], "\xEF\xBB\xBF", 3))
				memmove(fields[0], fields[0] + 3, strlen(fields[0] + 3) + 1);
			ci = column_index(fields, nf, ctx_col, csv_context_names, &cname);
			gi = column_index(fields, nf, gen_col, csv_generated_names, &gname);
			if (ci < 0 || gi < 0) {
				names_list(names, sizeof(names), ci < 0 ? ctx_col : gen_col,
					   ci < 0 ? csv_context_names : csv_generated_names);
				return vs_error(VS_ESCHEMA,
						"%s:%d: the header names no %s column %s (name it with "
						"traffic.%s_column)",
						t->path, lineno, ci < 0 ? "context" : "generated", names,
						ci < 0 ? "context" : "generated");
			}
			continue;
		}
		row++;
		if (row > WORKLOAD_TRACE_MAX_ROWS)
			return vs_error(VS_EPARSE, "%s:%d: more than %d requests: refused (sample the trace)", t->path,
					lineno, WORKLOAD_TRACE_MAX_ROWS);
		{
			int32_t cv, gv;

			err = row_value(t->path, lineno, row, cname, ci < nf ? fields[ci] : "", &cv);
			if (!err)
				err = row_value(t->path, lineno, row, gname, gi < nf ? fields[gi] : "", &gv);
			if (!err)
				err = trace_push(t, &cap, cv, gv);
			if (err)
				return err;
		}
	}
	if (ci < 0)
		return vs_error(VS_ESCHEMA, "%s: empty trace (no header row)", t->path);
	return 0;
}

static int json_value(const struct workload_trace *t, int line, int row, const cJSON *obj, const char *col,
		      int32_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, col);
	char buf[64];

	if (!v || cJSON_IsNull(v))
		return vs_error(VS_EPARSE, "%s:%d: row %d, column '%s': missing", t->path, line, row, col);
	if (cJSON_IsString(v))
		return row_value(t->path, line, row, col, v->valuestring, out);
	if (!cJSON_IsNumber(v))
		return vs_error(VS_EPARSE, "%s:%d: row %d, column '%s': not a number", t->path, line, row, col);
	if (v->valuedouble != floor(v->valuedouble) || fabs(v->valuedouble) > 1e15)
		return vs_error(VS_EPARSE, "%s:%d: row %d, column '%s': %g is not a whole number", t->path, line, row,
				col, v->valuedouble);
	snprintf(buf, sizeof(buf), "%.0f", v->valuedouble);
	return row_value(t->path, line, row, col, buf, out);
}

static int trace_jsonl(struct workload_trace *t, char *text, const char *ctx_col, const char *gen_col)
{
	char *line = text, *next;
	int lineno = 0, row = 0, cap = 0, err = 0;

	for (; line && *line; line = next) {
		cJSON *obj;
		const char *cname = ctx_col, *gname = gen_col;
		int32_t cv = 0, gv = 0;

		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		lineno++;
		trim(line);
		if (!*line)
			continue;
		row++;
		if (row > WORKLOAD_TRACE_MAX_ROWS)
			return vs_error(VS_EPARSE, "%s:%d: more than %d requests: refused (sample the trace)", t->path,
					lineno, WORKLOAD_TRACE_MAX_ROWS);
		obj = cJSON_Parse(line);
		if (!cJSON_IsObject(obj)) {
			cJSON_Delete(obj);
			return vs_error(VS_EPARSE, "%s:%d: row %d: not a JSON object", t->path, lineno, row);
		}
		if (!cname)
			cname = jsonl_context_names[0];
		if (!gname)
			gname = jsonl_generated_names[0];
		err = json_value(t, lineno, row, obj, cname, &cv);
		if (!err)
			err = json_value(t, lineno, row, obj, gname, &gv);
		cJSON_Delete(obj);
		if (!err)
			err = trace_push(t, &cap, cv, gv);
		if (err)
			return err;
	}
	return 0;
}

int workload_trace_read(struct workload_trace *t, const char *path, const char *context_column,
			const char *generated_column)
{
	char *text = NULL;
	size_t len = 0;
	struct stat st;
	int err, jsonl = has_suffix(path, ".jsonl");

	memset(t, 0, sizeof(*t));
	if (!jsonl && !has_suffix(path, ".csv"))
		return vs_error(VS_EPARSE, "%s: a trace is .csv (header row) or .jsonl", path);
	if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && (uint64_t)st.st_size > WORKLOAD_TRACE_MAX_BYTES)
		return vs_error(VS_EPARSE, "%s: a trace of %lld bytes is refused (at most %u MiB; sample it)", path,
				(long long)st.st_size, WORKLOAD_TRACE_MAX_BYTES >> 20);
	err = fs_read_file(&text, &len, path, WORKLOAD_TRACE_MAX_BYTES);
	if (err)
		return err;
	t->path = strdup(path);
	if (!t->path) {
		err = vs_oom();
		goto done;
	}
	fs_sha256_hex(t->sha256, text, len);
	if (memchr(text, '\0', len)) {
		err = vs_error(VS_EPARSE, "%s: a NUL byte: not a text trace", path);
		goto done;
	}
	err = jsonl ? trace_jsonl(t, text, context_column, generated_column) :
		      trace_csv(t, text, context_column, generated_column);
	if (err)
		goto done;
	for (int i = 0; i < t->count; i++)
		if (t->requests[i].generated > 0)
			goto done;
	err = vs_error(VS_ESCHEMA, "%s: no request generates a token (%d rows): nothing decodes", path, t->count);
done:
	free(text);
	if (err)
		workload_trace_release(t);
	return err;
}

void workload_trace_release(struct workload_trace *t)
{
	if (!t)
		return;
	free(t->path);
	free(t->requests);
	memset(t, 0, sizeof(*t));
}

/* ---- the simulation ------------------------------------------------------------------------ */

struct stream {
	const struct workload *w;
	const struct workload_trace *t;
	uint64_t seed, stream;
	int64_t next; /* requests handed out so far */
	int start;
};

static int32_t bin_draw(const struct workload_bin *bins, int n, uint64_t seed, uint64_t stream, int64_t k)
{
	double u = rng_uniform(seed, stream, 2 * (uint64_t)k), acc = 0;
	int i = 0;

	for (; i < n - 1; i++) {
		acc += bins[i].share;
		if (u < acc)
			break;
	}
	return bins[i].lo +
	       (int32_t)rng_below(seed, stream, 2 * (uint64_t)k + 1, (uint64_t)(bins[i].hi - bins[i].lo) + 1);
}

/* The next request that decodes (generated > 0) of the stream. */
static struct workload_request stream_next(struct stream *s)
{
	for (;;) {
		struct workload_request r;
		int64_t k = s->next++;

		if (s->t) {
			r = s->t->requests[(s->start + k) % s->t->count];
		} else {
			r.context = bin_draw(s->w->context_bins, s->w->n_context_bins, s->seed,
					     STREAM_CONTEXT + s->stream, k);
			r.generated = bin_draw(s->w->generated_bins, s->w->n_generated_bins, s->seed,
					       STREAM_GENERATED + s->stream, k);
		}
		if (r.generated > 0)
			return r;
	}
}

static double mean_generated(const struct workload *w, const struct workload_trace *t)
{
	double m = 0;

	if (t) {
		for (int i = 0; i < t->count; i++)
			m += t->requests[i].generated;
		return m / t->count;
	}
	for (int i = 0; i < w->n_generated_bins; i++)
		m += w->generated_bins[i].share * 0.5 * (w->generated_bins[i].lo + w->generated_bins[i].hi);
	return m;
}

int workload_simulate(struct workload_sim *out, const struct workload *w, const struct workload_trace *trace,
		      int concurrency, const struct workload_sim_options *opts)
{
	struct stream s = {.w = w, .t = trace, .seed = opts->seed, .stream = (uint64_t)concurrency};
	struct workload_request *cur = NULL;
	int32_t *done = NULL, *seqlens = NULL;
	int64_t warmup = opts->warmup;
	int stride = opts->stride, err = 0;

	if (concurrency < 1 || opts->steps < 1)
		return vs_error(VS_ESCHEMA, "simulate: concurrency %d, steps %d", concurrency, opts->steps);
	if (trace) {
		int decodes = 0;

		for (int i = 0; i < trace->count && !decodes; i++)
			decodes = trace->requests[i].generated > 0;
		if (!decodes)
			return vs_error(VS_ESCHEMA, "%s: no request generates a token: nothing decodes", trace->path);
	}
	if (!trace && (!w->n_context_bins || !w->n_generated_bins))
		return vs_error(VS_ESCHEMA, "%s: no trace and no histogram", w->path);
	if (trace)
		s.start = opts->start >= 0 ? opts->start % trace->count :
					     (int)rng_below(opts->seed, STREAM_START, (uint64_t)concurrency,
							    (uint64_t)trace->count);
	if (stride < 1) {
		/* about 16 samples per mean request lifetime: samples far apart, not a short window */
		stride = (int)ceil(mean_generated(w, trace) / 16.0);
		stride = stride < 1 ? 1 : stride > 256 ? 256 : stride;
		/* and at most 2^28 slot updates of sampling in all */
		while (stride > 1 && (int64_t)opts->steps * stride * concurrency > (1 << 28))
			stride /= 2;
	}
	if (warmup < 0) {
		/* two mean request lifetimes, at least 64 steps, at most 2^20 */
		warmup = (int64_t)ceil(2.0 * mean_generated(w, trace));
		warmup = warmup < 64 ? 64 : warmup > (1 << 20) ? (1 << 20) : warmup;
		if (warmup > 64 && warmup * concurrency > (1 << 28))
			warmup = (1 << 28) / concurrency > 64 ? (1 << 28) / concurrency : 64;
	}
	cur = calloc((size_t)concurrency, sizeof(*cur));
	done = calloc((size_t)concurrency, sizeof(*done));
	seqlens = malloc((size_t)opts->steps * (size_t)concurrency * sizeof(*seqlens));
	if (!cur || !done || !seqlens) {
		err = vs_oom();
		goto done;
	}
	for (int b = 0; b < concurrency; b++) {
		cur[b] = stream_next(&s);
		done[b] = opts->phase ? (int32_t)rng_below(opts->seed, STREAM_PHASE + (uint64_t)concurrency,
							   (uint64_t)b, (uint64_t)cur[b].generated) :
					0;
	}
	for (int64_t step = 0; step < warmup + (int64_t)opts->steps * stride; step++) {
		int sample = step >= warmup && (step - warmup) % stride == 0;

		for (int b = 0; b < concurrency; b++) {
			int advance = 1, sq = w->s_q > 0 ? w->s_q : 1;

			/*
			 * A decode step of the request attends over its prompt, the done tokens before and its s_q
			 * query tokens (the next one and, with MTP, s_q - 1 drafts); it keeps the next token and
			 * each draft while they are accepted (mtp_accept each, in order).
			 */
			if (sample)
				seqlens[(step - warmup) / stride * concurrency + b] = cur[b].context + done[b] + sq;
			while (advance < w->s_q &&
			       rng_uniform(opts->seed, STREAM_MTP + (uint64_t)concurrency,
					   ((uint64_t)step * (uint64_t)concurrency + (uint64_t)b) * 8 +
						   (uint64_t)advance) < w->mtp_accept)
				advance++;
			done[b] += advance;
			if (done[b] >= cur[b].generated) {
				cur[b] = stream_next(&s);
				done[b] = 0;
			}
		}
	}
	out->concurrency = concurrency;
	out->steps = opts->steps;
	out->seqlens = seqlens;
	seqlens = NULL;
done:
	free(cur);
	free(done);
	free(seqlens);
	return err;
}

void workload_sim_release(struct workload_sim *s)
{
	if (!s)
		return;
	free(s->seqlens);
	memset(s, 0, sizeof(*s));
}

/* ---- grouping ------------------------------------------------------------------------------ */

struct stepkey {
	int64_t total;
	int32_t max;
	int index;
};

static int by_total(const void *a, const void *b)
{
	const struct stepkey *x = a, *y = b;

	if (x->total != y->total)
		return x->total < y->total ? -1 : 1;
	if (x->max != y->max)
		return x->max < y->max ? -1 : 1;
	return x->index - y->index;
}

static int by_max(const void *a, const void *b)
{
	const struct stepkey *x = a, *y = b;

	if (x->max != y->max)
		return x->max < y->max ? -1 : 1;
	if (x->total != y->total)
		return x->total < y->total ? -1 : 1;
	return x->index - y->index;
}

/* Tasks for concurrency index ci: its share of w->tasks (an equal split, the rest to the largest). */
static int budget_of(const struct workload *w, int ci)
{
	int base = w->tasks / w->n_concurrency, rest = w->tasks % w->n_concurrency;

	return base + (ci >= w->n_concurrency - rest ? 1 : 0);
}

/* Group [keys, keys + n) (sorted by max) into one task: the step nearest the centroid. */
static int group_task(struct workload_task *task, const struct workload *w, const struct workload_sim *sim,
		      const struct stepkey *keys, int n, double scale_total, double scale_max)
{
	double ct = 0, cm = 0, best = INFINITY;
	int pick = keys[0].index;

	for (int i = 0; i < n; i++) {
		ct += (double)keys[i].total / n;
		cm += (double)keys[i].max / n;
	}
	for (int i = 0; i < n; i++) {
		double dt = ((double)keys[i].total - ct) / scale_total, dm = ((double)keys[i].max - cm) / scale_max;
		double d = dt * dt + dm * dm;

		if (d < best || (d == best && keys[i].index < pick)) {
			best = d;
			pick = keys[i].index;
		}
	}
	task->concurrency = sim->concurrency;
	task->batch = sim->concurrency;
	task->steps = n;
	task->step = pick;
	task->seqlens = malloc((size_t)sim->concurrency * sizeof(int32_t));
	VS_CHECK_ALLOC(task->seqlens);
	memcpy(task->seqlens, sim->seqlens + (size_t)pick * sim->concurrency,
	       (size_t)sim->concurrency * sizeof(int32_t));
	task->total_keys = 0;
	task->attended = 0;
	task->max_seqlen = 0;
	for (int b = 0; b < sim->concurrency; b++) {
		task->total_keys += task->seqlens[b];
		task->attended += workload_attended(w, task->seqlens[b]);
		task->max_seqlen = task->seqlens[b] > task->max_seqlen ? task->seqlens[b] : task->max_seqlen;
	}
	return 0;
}

int64_t workload_attended(const struct workload *w, int32_t context)
{
	int64_t n;

	if (!w->topk)
		return context;
	n = context < w->topk ? context : w->topk;
	if (w->extra_topk > 0 && w->extra_compress > 0) {
		int32_t rows = context / w->extra_compress;

		n += rows < w->extra_topk ? rows : w->extra_topk;
	}
	return n;
}

static int group_sim(struct workload_tasks *out, const struct workload *w, const struct workload_sim *sim, int budget)
{
	struct stepkey *keys = malloc((size_t)sim->steps * sizeof(*keys));
	int b = 1, a, err = 0;
	int64_t tmin = INT64_MAX, tmax = 0;
	int32_t mmin = INT32_MAX, mmax = 0;

	VS_CHECK_ALLOC(keys);
	while ((b + 1) * (b + 1) <= budget)
		b++;
	a = budget / b;
	for (int s = 0; s < sim->steps; s++) {
		const int32_t *l = sim->seqlens + (size_t)s * sim->concurrency;

		keys[s] = (struct stepkey){0, 0, s};
		for (int j = 0; j < sim->concurrency; j++) {
			keys[s].total += workload_attended(w, l[j]);
			keys[s].max = l[j] > keys[s].max ? l[j] : keys[s].max;
		}
		tmin = keys[s].total < tmin ? keys[s].total : tmin;
		tmax = keys[s].total > tmax ? keys[s].total : tmax;
		mmin = keys[s].max < mmin ? keys[s].max : mmin;
		mmax = keys[s].max > mmax ? keys[s].max : mmax;
	}
	qsort(keys, (size_t)sim->steps, sizeof(*keys), by_total);
	for (int i = 0; i < a && !err; i++) {
		int lo = (int)((int64_t)sim->steps * i / a), hi = (int)((int64_t)sim->steps * (i + 1) / a);

		qsort(keys + lo, (size_t)(hi - lo), sizeof(*keys), by_max);
		for (int j = 0; j < b && !err; j++) {
			int l2 = lo + (int)((int64_t)(hi - lo) * j / b),
			    h2 = lo + (int)((int64_t)(hi - lo) * (j + 1) / b);

			if (h2 <= l2)
				continue;
			err = group_task(&out->items[out->count], w, sim, keys + l2, h2 - l2,
					 tmax > tmin ? (double)(tmax - tmin) : 1.0,
					 mmax > mmin ? (double)(mmax - mmin) : 1.0);
			if (!err)
				out->count++;
		}
	}
	free(keys);
	return err;
}

static int by_task(const void *a, const void *b)
{
	const struct workload_task *x = a, *y = b;

	if (x->concurrency != y->concurrency)
		return x->concurrency - y->concurrency;
	if (x->attended != y->attended)
		return x->attended < y->attended ? -1 : 1;
	if (x->total_keys != y->total_keys)
		return x->total_keys < y->total_keys ? -1 : 1;
	if (x->max_seqlen != y->max_seqlen)
		return x->max_seqlen < y->max_seqlen ? -1 : 1;
	return x->step - y->step;
}

int workload_derive(struct workload_tasks *out, const struct workload *w, const struct workload_trace *trace)
{
	struct workload_tasks t = {0};
	struct workload_sim sim = {0};
	int err = 0;

	if (!w->n_concurrency || w->tasks < w->n_concurrency)
		return vs_error(VS_ESCHEMA, "%s: %d tasks for %d concurrencies", w->path, w->tasks, w->n_concurrency);
	t.items = calloc((size_t)w->tasks, sizeof(*t.items));
	VS_CHECK_ALLOC(t.items);
	for (int ci = 0; ci < w->n_concurrency && !err; ci++) {
		struct workload_sim_options o = WORKLOAD_SIM_OPTIONS_INIT;

		o.steps = w->steps;
		o.seed = w->seed;
		err = workload_simulate(&sim, w, trace, w->concurrency[ci], &o);
		if (!err)
			err = group_sim(&t, w, &sim, budget_of(w, ci));
		workload_sim_release(&sim);
		t.steps_total += w->steps;
	}
	if (err)
		goto done;
	for (int i = 0; i < t.count; i++)
		t.items[i].weight = (double)t.items[i].steps / (double)t.steps_total;
	qsort(t.items, (size_t)t.count, sizeof(*t.items), by_task);
	memcpy(t.workload_sha256, w->sha256, sizeof(t.workload_sha256));
	if (trace)
		memcpy(t.trace_sha256, trace->sha256, sizeof(t.trace_sha256));
	t.seed = w->seed;
	*out = t;
	memset(&t, 0, sizeof(t));
done:
	workload_tasks_release(&t);
	return err;
}

void workload_tasks_release(struct workload_tasks *t)
{
	if (!t)
		return;
	for (int i = 0; t->items && i < t->count; i++)
		free(t->items[i].seqlens);
	free(t->items);
	memset(t, 0, sizeof(*t));
}

int workload_lint(const char *path)
{
	struct workload w = {0};
	struct workload_trace t = {0};
	struct workload_tasks tk = {0};
	int err = workload_load(&w, path);

	if (!err && w.trace_path)
		err = workload_trace_read(&t, w.trace_path, w.context_column, w.generated_column);
	if (!err)
		err = workload_derive(&tk, &w, w.trace_path ? &t : NULL);
	workload_tasks_release(&tk);
	workload_trace_release(&t);
	workload_release(&w);
	return err;
}
