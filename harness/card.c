/*
 * card.c - skill cards: front matter split, YAML (libyaml events) into a small tree that keeps
 * byte offsets, schema typing into struct card, lint, the card hash, and in-place recording of
 * the validation block (docs/DESIGN.md "The card schema", "Files" -> Recording).
 *
 * Offsets: libyaml marks count characters (code points; CRLF counts two) from the start of the
 * input it was given, which is the front matter slice only (so the BOM and the opening fence are
 * never seen by libyaml). doc_mark() converts a mark to a byte offset in the file through a
 * table built by walking the UTF-8 text; every position after that is a byte offset in the file,
 * and line:col for messages is computed from it (characters, BOM excluded).
 */
#include "card.h"
#include "fsutil.h"
#include "mla_decode.h"
#include "vs_error.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#define CARD_MAX_BYTES (4u << 20)
#define CARD_MAX_DEPTH 64
#define CARD_PATH_MAX 256

/* ---- small growable buffer ----------------------------------------------------------------- */

struct sbuf {
	char *buf;
	size_t len, cap;
	int oom;
};

static void sb_add(struct sbuf *s, const void *p, size_t n)
{
	if (s->oom)
		return;
	if (s->len + n + 1 > s->cap) {
		size_t ncap = s->cap ? s->cap : 256;
		char *nb;

		while (ncap < s->len + n + 1)
			ncap *= 2;
		nb = realloc(s->buf, ncap);
		if (!nb) {
			s->oom = 1;
			return;
		}
		s->buf = nb;
		s->cap = ncap;
	}
	memcpy(s->buf + s->len, p, n);
	s->len += n;
	s->buf[s->len] = '\0';
}

static void sb_adds(struct sbuf *s, const char *str)
{
	sb_add(s, str, strlen(str));
}

static void sb_release(struct sbuf *s)
{
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

/* ---- messages ------------------------------------------------------------------------------ */

/* Line and column (1-based, characters, BOM excluded) of byte offset off in text. */
static void text_linecol(const char *t, size_t n, size_t off, int *line, int *col)
{
	size_t i = (n >= 3 && memcmp(t, "\xEF\xBB\xBF", 3) == 0) ? 3 : 0;
	int l = 1, c = 1;

	if (off > n)
		off = n;
	for (; i < off; i++) {
		unsigned char b = (unsigned char)t[i];

		if (b == '\n') {
			l++;
			c = 1;
		} else if ((b & 0xC0) != 0x80) {
			c++;
		}
	}
	*line = l;
	*col = c;
}

/*
 * The one error line: "<path>:<line>:<col>: <key>: <message>". Control characters in the
 * message (from quoted values) are replaced so the error stays on one line.
 */
static int card_vmsg(int code, const char *path, int line, int col, const char *key, const char *fmt, va_list ap)
{
	char msg[1024];

	vsnprintf(msg, sizeof(msg), fmt, ap);
	for (char *p = msg; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = ' ';
	return vs_error(code, "%s:%d:%d: %s: %s", path, line, col, key, msg);
}

static int card_msg(int code, const char *path, int line, int col, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));
static int card_msg(int code, const char *path, int line, int col, const char *key, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	code = card_vmsg(code, path, line, col, key, fmt, ap);
	va_end(ap);
	return code;
}

/* ---- the document: split, encoding, YAML tree ---------------------------------------------- */

enum ynode_kind { YN_SCALAR, YN_SEQ, YN_MAP };

struct ynode {
	enum ynode_kind kind;
	int style;      /* scalar: yaml_scalar_style_t; collections: 1 for flow style */
	int null_empty; /* plain scalar with no text at all ("key:" with nothing after it) */
	int colon;      /* null_empty map value: b is after its key's ':' (and one space) */
	char *value;    /* scalar text (NUL-terminated) */
	size_t len;
	size_t b, e;        /* byte offsets in the file of the node's first char and its end */
	size_t ce;          /* end of the node's content (block collections: of their last child) */
	struct ynode **kid; /* sequence items; mapping: key, value, key, value, ... */
	int n, cap;
};

struct doc {
	const char *path;
	const char *text;
	size_t len;
	size_t bom; /* 3 when the file starts with a UTF-8 BOM */
	size_t fm_begin, fm_end, body_begin;
	size_t *c2b; /* character index in the front matter -> byte offset in the file */
	size_t nchars;
	struct ynode *root;
	yaml_parser_t parser;
	int parser_ready;
	int claim; /* validation.status is validated or failed: its values may be typed (card.h) */
};

static void ynode_free(struct ynode *n)
{
	if (!n)
		return;
	for (int i = 0; i < n->n; i++)
		ynode_free(n->kid[i]);
	free(n->kid);
	free(n->value);
	free(n);
}

static int ynode_push(struct ynode *n, struct ynode *k)
{
	if (n->n == n->cap) {
		int ncap = n->cap ? n->cap * 2 : 8;
		struct ynode **nk = realloc(n->kid, (size_t)ncap * sizeof(*nk));

		if (!nk)
			return vs_error(VS_ENOMEM, "out of memory parsing a card");
		n->kid = nk;
		n->cap = ncap;
	}
	n->kid[n->n++] = k;
	return 0;
}

static void doc_release(struct doc *d)
{
	ynode_free(d->root);
	free(d->c2b);
	if (d->parser_ready)
		yaml_parser_delete(&d->parser);
	memset(d, 0, sizeof(*d));
}

static int doc_err(const struct doc *d, int code, size_t off, const char *key, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int doc_err(const struct doc *d, int code, size_t off, const char *key, const char *fmt, ...)
{
	va_list ap;
	int line, col;

	text_linecol(d->text, d->len, off, &line, &col);
	va_start(ap, fmt);
	code = card_vmsg(code, d->path, line, col, key, fmt, ap);
	va_end(ap);
	return code;
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 when invalid. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t need;
	unsigned char lo = 0x80, hi = 0xBF;

	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF)
		need = 2;
	else if (c >= 0xE0 && c <= 0xEF)
		need = 3;
	else if (c >= 0xF0 && c <= 0xF4)
		need = 4;
	else
		return 0;
	if (c == 0xE0)
		lo = 0xA0;
	else if (c == 0xED)
		hi = 0x9F;
	else if (c == 0xF0)
		lo = 0x90;
	else if (c == 0xF4)
		hi = 0x8F;
	if (n < need || s[1] < lo || s[1] > hi)
		return 0;
	for (size_t i = 2; i < need; i++)
		if ((s[i] & 0xC0) != 0x80)
			return 0;
	return need;
}

static int utf8_valid(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t k = utf8_seq((const unsigned char *)s + i, n - i);

		if (!k || s[i] == '\0')
			return 0;
		i += k;
	}
	return 1;
}

static int doc_check_encoding(const struct doc *d)
{
	const unsigned char *t = (const unsigned char *)d->text;

	for (size_t i = 0; i < d->len;) {
		size_t k;

		if (t[i] == '\0')
			return doc_err(d, VS_EPARSE, i, "encoding", "NUL byte in the file (a card is UTF-8 text)");
		k = utf8_seq(t + i, d->len - i);
		if (!k)
			return doc_err(d, VS_EPARSE, i, "encoding", "invalid UTF-8 byte 0x%02x (a card is UTF-8 text)",
				       t[i]);
		i += k;
	}
	return 0;
}

/* The line starting at p: *ce = end of its content (before "\r\n" / "\n"), *next = next line. */
static void line_at(const char *t, size_t n, size_t p, size_t *ce, size_t *next)
{
	const char *nl = memchr(t + p, '\n', n - p);
	size_t end = nl ? (size_t)(nl - t) : n;

	*next = nl ? end + 1 : n;
	if (end > p && t[end - 1] == '\r')
		end--;
	*ce = end;
}

static int is_fence(const char *t, size_t p, size_t ce)
{
	return ce - p == 3 && memcmp(t + p, "---", 3) == 0;
}

static int doc_split(struct doc *d)
{
	const char *t = d->text;
	size_t n = d->len, p, ce, next;

	d->bom = (n >= 3 && memcmp(t, "\xEF\xBB\xBF", 3) == 0) ? 3 : 0;
	p = d->bom;
	if (p == n)
		return doc_err(d, VS_EPARSE, p, "front matter", "the file is empty; the first line must be '---'");
	line_at(t, n, p, &ce, &next);
	if (!is_fence(t, p, ce)) {
		int shown = (int)(ce - p > 40 ? 40 : ce - p);

		while (shown > 0 && ((unsigned char)t[p + shown] & 0xC0) == 0x80)
			shown--;
		return doc_err(d, VS_EPARSE, p, "front matter", "the first line must be '---' (found '%.*s%s')", shown,
			       t + p, (size_t)shown < ce - p ? "..." : "");
	}
	d->fm_begin = next;
	for (p = next; p < n; p = next) {
		line_at(t, n, p, &ce, &next);
		if (is_fence(t, p, ce)) {
			d->fm_end = p;
			d->body_begin = next;
			break;
		}
	}
	if (!d->fm_end)
		return doc_err(d, VS_EPARSE, d->bom, "front matter",
			       "no closing '---' line for the front matter opened here");
	if (d->fm_end == d->fm_begin)
		return doc_err(d, VS_EPARSE, d->bom, "front matter",
			       "the front matter is empty (nothing between the '---' lines)");
	/*
	 * YAML also breaks lines at a lone CR, NEL, LS and PS (and libyaml skips a BOM at the start of
	 * any line); lines here are LF or CRLF only, so that line numbers and the lines recording
	 * edits are the ones an editor shows.
	 */
	for (p = d->fm_begin; p < d->fm_end; p++) {
		const unsigned char *u = (const unsigned char *)t + p;
		const char *what = NULL;

		if (u[0] == '\r' && (p + 1 >= n || u[1] != '\n'))
			what = "a lone CR";
		else if (u[0] == 0xC2 && u[1] == 0x85)
			what = "U+0085 (NEL)";
		else if (u[0] == 0xE2 && u[1] == 0x80 && (u[2] == 0xA8 || u[2] == 0xA9))
			what = u[2] == 0xA8 ? "U+2028 (line separator)" : "U+2029 (paragraph separator)";
		else if (u[0] == 0xEF && u[1] == 0xBB && u[2] == 0xBF)
			return doc_err(d, VS_EPARSE, p, "front matter",
				       "a BOM (U+FEFF) is allowed only at the start of the file");
		if (what)
			return doc_err(d, VS_EPARSE, p, "front matter",
				       "%s is a line break in YAML; end front matter lines with LF or "
				       "CRLF only",
				       what);
	}
	return 0;
}

static int doc_chars(struct doc *d)
{
	size_t k = 0;

	d->c2b = malloc((d->fm_end - d->fm_begin + 1) * sizeof(*d->c2b));
	if (!d->c2b)
		return vs_error(VS_ENOMEM, "out of memory reading '%s'", d->path);
	for (size_t i = d->fm_begin; i < d->fm_end; i++)
		if (((unsigned char)d->text[i] & 0xC0) != 0x80)
			d->c2b[k++] = i;
	d->c2b[k] = d->fm_end;
	d->nchars = k;
	return 0;
}

/* Byte offset in the file of a libyaml mark (character index into the front matter). */
static size_t doc_mark(const struct doc *d, const yaml_mark_t *m)
{
	return d->c2b[m->index < d->nchars ? m->index : d->nchars];
}

static int doc_next(struct doc *d, yaml_event_t *ev)
{
	yaml_parser_t *p = &d->parser;
	size_t off;
	char ctx[160] = "";

	if (yaml_parser_parse(p, ev))
		return 0;
	if (p->error == YAML_MEMORY_ERROR)
		return vs_error(VS_ENOMEM, "out of memory parsing '%s'", d->path);
	if (p->error == YAML_READER_ERROR) {
		off = d->fm_begin + p->problem_offset;
		if (off > d->fm_end)
			off = d->fm_end;
	} else {
		off = doc_mark(d, &p->problem_mark);
	}
	if (p->context) {
		int line, col;

		text_linecol(d->text, d->len, doc_mark(d, &p->context_mark), &line, &col);
		snprintf(ctx, sizeof(ctx), " (%s at line %d)", p->context, line);
	}
	if (off < d->len && d->text[off] == '\t' && p->problem && strstr(p->problem, "cannot start any token"))
		return doc_err(d, VS_EPARSE, off, "front matter",
			       "invalid yaml: a tab character, which YAML "
			       "does not allow in indentation (indent with spaces)");
	return doc_err(d, VS_EPARSE, off, "front matter", "invalid yaml: %s%s",
		       p->problem ? p->problem : "unknown error", ctx);
}

static int doc_line_of(const struct doc *d, size_t off)
{
	int line, col;

	text_linecol(d->text, d->len, off, &line, &col);
	return line;
}

/* Refuse anchors, aliases and tags: cards are plain data. */
static int doc_check_node_props(struct doc *d, const yaml_event_t *ev, size_t at, const char *key)
{
	const yaml_char_t *anchor = NULL, *tag = NULL;

	switch (ev->type) {
	case YAML_ALIAS_EVENT:
		return doc_err(d, VS_EPARSE, at, key, "aliases ('*%s') are not supported in cards",
			       (const char *)ev->data.alias.anchor);
	case YAML_SCALAR_EVENT:
		anchor = ev->data.scalar.anchor;
		tag = ev->data.scalar.tag;
		break;
	case YAML_SEQUENCE_START_EVENT:
		anchor = ev->data.sequence_start.anchor;
		tag = ev->data.sequence_start.tag;
		break;
	case YAML_MAPPING_START_EVENT:
		anchor = ev->data.mapping_start.anchor;
		tag = ev->data.mapping_start.tag;
		break;
	default:
		return doc_err(d, VS_EPARSE, at, key, "unexpected yaml event");
	}
	if (anchor)
		return doc_err(d, VS_EPARSE, at, key, "anchors ('&%s') are not supported in cards",
			       (const char *)anchor);
	if (tag) {
		const char *t = (const char *)tag, *std = "tag:yaml.org,2002:";
		int is_std = !strncmp(t, std, strlen(std));

		return doc_err(d, VS_EPARSE, at, key, "tags ('%s%s') are not supported in cards", is_std ? "!!" : "",
			       is_std ? t + strlen(std) : t);
	}
	return 0;
}

static int doc_build(struct doc *d, const yaml_event_t *ev, const char *key, int depth, struct ynode **out);

static int doc_build_children(struct doc *d, struct ynode *n, const char *key, int depth)
{
	yaml_event_t sub;
	int have = 0, err = 0;
	yaml_event_type_t end = n->kind == YN_MAP ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT;
	struct ynode *k = NULL, *v = NULL;

	for (;;) {
		char child[CARD_PATH_MAX];

		err = doc_next(d, &sub);
		if (err)
			goto done;
		have = 1;
		if (sub.type == end) {
			n->e = doc_mark(d, &sub.end_mark);
			break;
		}
		if (n->kind == YN_SEQ) {
			err = doc_build(d, &sub, key, depth + 1, &v);
			if (err)
				goto done;
			err = ynode_push(n, v);
			if (err)
				goto done;
			v = NULL;
			yaml_event_delete(&sub);
			have = 0;
			continue;
		}
		if (sub.type != YAML_SCALAR_EVENT)
			err = doc_err(d, VS_EPARSE, doc_mark(d, &sub.start_mark), *key ? key : "front matter",
				      "mapping keys must be plain strings");
		else
			err = doc_build(d, &sub, key, depth + 1, &k);
		if (err)
			goto done;
		yaml_event_delete(&sub);
		have = 0;
		for (int i = 0; i < n->n; i += 2) {
			if (n->kid[i]->len == k->len && !memcmp(n->kid[i]->value, k->value, k->len)) {
				snprintf(child, sizeof(child), "%s%s%s", key, *key ? "." : "", k->value);
				err = doc_err(d, VS_ESCHEMA, k->b, child,
					      "duplicate key '%s' (first at line %d, again at line %d)", k->value,
					      doc_line_of(d, n->kid[i]->b), doc_line_of(d, k->b));
				goto done;
			}
		}
		snprintf(child, sizeof(child), "%s%s%s", key, *key ? "." : "", k->value);
		err = doc_next(d, &sub);
		if (err)
			goto done;
		have = 1;
		err = doc_build(d, &sub, child, depth + 1, &v);
		if (err)
			goto done;
		yaml_event_delete(&sub);
		have = 0;
		if (v->null_empty) {
			/* libyaml puts an empty value's mark elsewhere: use the place after "key: " */
			size_t p = k->e;

			while (p < d->fm_end && (d->text[p] == ' ' || d->text[p] == '\t'))
				p++;
			if (p < d->fm_end && d->text[p] == ':') {
				v->colon = 1;
				p++;
				if (p < d->fm_end && d->text[p] == ' ')
					p++;
			} else {
				p = k->e;
			}
			v->b = v->e = v->ce = p;
		}
		err = ynode_push(n, k);
		if (err)
			goto done;
		k = NULL;
		err = ynode_push(n, v);
		if (err)
			goto done;
		v = NULL;
	}
	if (n->style == 1 || n->n == 0)
		n->ce = n->e;
	else
		n->ce = n->kid[n->n - 1]->ce;
done:
	if (have)
		yaml_event_delete(&sub);
	ynode_free(k);
	ynode_free(v);
	return err;
}

/* Build the node that starts with event ev (not consumed); *out is set only on success. */
static int doc_build(struct doc *d, const yaml_event_t *ev, const char *key, int depth, struct ynode **out)
{
	struct ynode *n = NULL;
	size_t at = doc_mark(d, &ev->start_mark);
	int err;

	if (depth > CARD_MAX_DEPTH)
		return doc_err(d, VS_EPARSE, at, key, "nesting deeper than %d levels", CARD_MAX_DEPTH);
	err = doc_check_node_props(d, ev, at, *key ? key : "front matter");
	if (err)
		return err;
	n = calloc(1, sizeof(*n));
	if (!n)
		return vs_error(VS_ENOMEM, "out of memory parsing '%s'", d->path);
	n->b = at;
	n->e = doc_mark(d, &ev->end_mark);
	if (ev->type == YAML_SCALAR_EVENT) {
		n->kind = YN_SCALAR;
		n->style = ev->data.scalar.style;
		n->len = ev->data.scalar.length;
		n->value = malloc(n->len + 1);
		if (!n->value) {
			err = vs_error(VS_ENOMEM, "out of memory parsing '%s'", d->path);
			goto done;
		}
		memcpy(n->value, ev->data.scalar.value, n->len);
		n->value[n->len] = '\0';
		if (memchr(n->value, '\0', n->len)) {
			err = doc_err(d, VS_ESCHEMA, at, *key ? key : "front matter",
				      "a string with a NUL character (an escape such as \\0 or \\x00) "
				      "is refused");
			goto done;
		}
		n->null_empty = n->style == YAML_PLAIN_SCALAR_STYLE && n->len == 0;
		n->ce = n->e;
	} else {
		n->kind = ev->type == YAML_MAPPING_START_EVENT ? YN_MAP : YN_SEQ;
		n->style = ev->type == YAML_MAPPING_START_EVENT ?
				   ev->data.mapping_start.style == YAML_FLOW_MAPPING_STYLE :
				   ev->data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE;
		err = doc_build_children(d, n, key, depth);
		if (err)
			goto done;
	}
	*out = n;
	n = NULL;
done:
	ynode_free(n);
	return err;
}

static int doc_parse_yaml(struct doc *d)
{
	yaml_event_t ev;
	int have = 0, err = 0;

	if (!yaml_parser_initialize(&d->parser))
		return vs_error(VS_ENOMEM, "out of memory parsing '%s'", d->path);
	d->parser_ready = 1;
	yaml_parser_set_input_string(&d->parser, (const unsigned char *)d->text + d->fm_begin, d->fm_end - d->fm_begin);
	yaml_parser_set_encoding(&d->parser, YAML_UTF8_ENCODING);
	for (int step = 0;; step++) {
		err = doc_next(d, &ev);
		if (err)
			goto done;
		have = 1;
		if (ev.type == YAML_STREAM_END_EVENT) {
			if (!d->root)
				err = doc_err(d, VS_EPARSE, d->bom, "front matter",
					      "the front matter is empty (only blank lines and comments)");
			goto done;
		}
		if (ev.type == YAML_DOCUMENT_END_EVENT && !ev.data.document_end.implicit) {
			err = doc_err(d, VS_EPARSE, doc_mark(d, &ev.start_mark), "front matter",
				      "a '...' line ends a yaml document; the front matter ends only at "
				      "the closing '---' line (remove the '...')");
			goto done;
		}
		if (ev.type == YAML_DOCUMENT_START_EVENT && d->root) {
			err = doc_err(d, VS_EPARSE, doc_mark(d, &ev.start_mark), "front matter",
				      "a second yaml document in the front matter (only one is allowed)");
			goto done;
		}
		if (ev.type == YAML_SCALAR_EVENT || ev.type == YAML_SEQUENCE_START_EVENT ||
		    ev.type == YAML_MAPPING_START_EVENT || ev.type == YAML_ALIAS_EVENT) {
			err = doc_build(d, &ev, "", 0, &d->root);
			if (err)
				goto done;
		}
		yaml_event_delete(&ev);
		have = 0;
	}
done:
	if (have)
		yaml_event_delete(&ev);
	return err;
}

/* Split, check and parse text into d (which borrows path and text). Errors are printed. */
static int doc_open(struct doc *d, const char *path, const char *text, size_t len)
{
	int err;

	memset(d, 0, sizeof(*d));
	d->path = path;
	d->text = text;
	d->len = len;
	err = doc_check_encoding(d);
	if (!err)
		err = doc_split(d);
	if (!err)
		err = doc_chars(d);
	if (!err)
		err = doc_parse_yaml(d);
	if (!err && d->root->kind != YN_MAP)
		err = doc_err(d, VS_EPARSE, d->root->b, "front matter",
			      "the front matter must be a mapping of keys (key: value lines)");
	return err;
}

static const struct ynode *map_find(const struct ynode *map, const char *key, int *index)
{
	for (int i = 0; map && i + 1 < map->n; i += 2) {
		if (!strcmp(map->kid[i]->value, key) && strlen(key) == map->kid[i]->len) {
			if (index)
				*index = i;
			return map->kid[i + 1];
		}
	}
	return NULL;
}

/* Start of the line holding byte offset off. */
static size_t line_start(const struct doc *d, size_t off)
{
	while (off > d->fm_begin && d->text[off - 1] != '\n')
		off--;
	return off;
}

/* off when it is a line start, else the start of the next line (within the front matter). */
static size_t line_after(const struct doc *d, size_t off)
{
	if (off > 0 && d->text[off - 1] == '\n')
		return off;
	while (off < d->fm_end && d->text[off] != '\n')
		off++;
	return off < d->fm_end ? off + 1 : d->fm_end;
}

/* ---- scalar helpers ------------------------------------------------------------------------ */

static int is_null_word(const char *s)
{
	return !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL");
}

/* "" (quoted or not), an empty value or a plain null: unset. */
static int scalar_unset(const struct ynode *v)
{
	return v->kind == YN_SCALAR && (v->len == 0 || (v->style == YAML_PLAIN_SCALAR_STYLE && is_null_word(v->value)));
}

/*
 * A decimal YAML number (int or float, no hex/inf/nan); 0 and *out set when it is one, -2 when it
 * is written as one but does not fit a double (1e400), -1 otherwise.
 */
static int parse_number(const char *s, double *out)
{
	const char *p = s;
	char *end;
	int digits = 0;
	double v;

	if (*p == '+' || *p == '-')
		p++;
	while (isdigit((unsigned char)*p)) {
		p++;
		digits++;
	}
	if (*p == '.') {
		p++;
		while (isdigit((unsigned char)*p)) {
			p++;
			digits++;
		}
	}
	if (!digits)
		return -1;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '+' || *p == '-')
			p++;
		if (!isdigit((unsigned char)*p))
			return -1;
		while (isdigit((unsigned char)*p))
			p++;
	}
	if (*p)
		return -1;
	v = strtod(s, &end);
	if (end != p)
		return -1;
	if (!isfinite(v))
		return -2;
	*out = v;
	return 0;
}

/* YYYY-MM-DD naming a real day of the Gregorian calendar. */
static int valid_date(const char *s)
{
	static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
	int y, m, dd, leap;

	if (strlen(s) != 10 || s[4] != '-' || s[7] != '-')
		return 0;
	for (int i = 0; i < 10; i++)
		if (i != 4 && i != 7 && !isdigit((unsigned char)s[i]))
			return 0;
	y = atoi(s);
	m = atoi(s + 5);
	dd = atoi(s + 8);
	leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	if (m < 1 || m > 12 || dd < 1)
		return 0;
	return dd <= mdays[m - 1] + (m == 2 && leap);
}

/* ---- schema -------------------------------------------------------------------------------- */

enum ftype { F_MAP, F_STR, F_LIST, F_ENUM, F_NUM, F_NUM_POS, F_DATE, F_COUNT };

struct field {
	const char *path;
	enum ftype type;
	size_t off;                /* char * / struct card_list / double / int (F_COUNT) in struct card */
	size_t has_off;            /* int set flag of a number */
	const char *const *values; /* enum values, NULL-terminated */
};

static const char *const scope_values[] = {"kernel", "e2e", NULL};
static const char *const parity_values[] = {"required", "advisory", NULL};
static const char *const status_values[] = {"draft", "validated", "failed", NULL};
static const char *const measured_parity_values[] = {"pass", "fail", NULL};
static const char *const known_operators[] = {"mla_attention", NULL};

#define OFF(m) offsetof(struct card, m)
static const struct field fields[] = {
	{"id", F_STR, OFF(id), 0, NULL},
	{"title", F_STR, OFF(title), 0, NULL},
	{"kind", F_STR, OFF(kind), 0, NULL},
	{"role", F_STR, OFF(role), 0, NULL},
	{"authors", F_LIST, OFF(authors), 0, NULL},
	{"supersedes", F_LIST, OFF(supersedes), 0, NULL},
	{"scope", F_ENUM, OFF(scope), 0, scope_values},
	{"match", F_MAP, 0, 0, NULL},
	{"match.operator", F_STR, OFF(match.operator_name), 0, NULL},
	{"match.arch_class", F_LIST, OFF(match.arch_class), 0, NULL},
	{"match.gens", F_LIST, OFF(match.gens), 0, NULL},
	{"match.dtypes", F_LIST, OFF(match.dtypes), 0, NULL},
	{"match.regimes", F_LIST, OFF(match.regimes), 0, NULL},
	{"match.from_backend", F_STR, OFF(match.from_backend), 0, NULL},
	{"match.to_backend", F_STR, OFF(match.to_backend), 0, NULL},
	{"match.topk", F_COUNT, OFF(match.topk), 0, NULL},
	{"match.extra_topk", F_COUNT, OFF(match.extra_topk), 0, NULL},
	{"expects", F_MAP, 0, 0, NULL},
	{"expects.isolated_speedup_min", F_NUM_POS, OFF(expects.isolated_speedup_min),
	 OFF(expects.has_isolated_speedup_min), NULL},
	{"expects.e2e_delta_min_pct", F_NUM, OFF(expects.e2e_delta_min_pct), OFF(expects.has_e2e_delta_min_pct), NULL},
	{"expects.parity", F_ENUM, OFF(expects.parity), 0, parity_values},
	{"expects.do_no_harm", F_STR, OFF(expects.do_no_harm), 0, NULL},
	{"expects.workloads", F_LIST, OFF(expects.workloads), 0, NULL},
	{"validation", F_MAP, 0, 0, NULL},
	{"validation.status", F_ENUM, OFF(validation.status), 0, status_values},
	{"validation.last_verified", F_DATE, OFF(validation.last_verified), 0, NULL},
	{"validation.gpu", F_STR, OFF(validation.gpu), 0, NULL},
	{"validation.gen", F_STR, OFF(validation.gen), 0, NULL},
	{"validation.model", F_STR, OFF(validation.model), 0, NULL},
	{"validation.measured", F_MAP, 0, 0, NULL},
	{"validation.measured.isolated", F_NUM, OFF(validation.measured_isolated), OFF(validation.has_isolated), NULL},
	{"validation.measured.e2e_pct", F_NUM, OFF(validation.measured_e2e_pct), OFF(validation.has_e2e_pct), NULL},
	{"validation.measured.parity", F_ENUM, OFF(validation.measured_parity), 0, measured_parity_values},
	{"validation.measured.spread", F_STR, OFF(validation.spread), 0, NULL},
	{"validation.recorded_over", F_STR, OFF(validation.recorded_over), 0, NULL},
	{"validation.implementations", F_MAP, 0, 0, NULL},
	{"validation.implementations.baseline", F_STR, OFF(validation.impl_baseline), 0, NULL},
	{"validation.implementations.candidate", F_STR, OFF(validation.impl_candidate), 0, NULL},
	{"validation.artifact", F_STR, OFF(validation.artifact), 0, NULL},
};
#undef OFF

#define NFIELDS (sizeof(fields) / sizeof(fields[0]))

static const struct field *field_find(const char *path)
{
	for (size_t i = 0; i < NFIELDS; i++)
		if (!strcmp(fields[i].path, path))
			return &fields[i];
	return NULL;
}

static char **str_at(struct card *c, const struct field *f)
{
	return (char **)((char *)c + f->off);
}

static const char *enum_list(const char *const *values, char *buf, size_t size)
{
	buf[0] = '\0';
	for (int i = 0; values[i]; i++) {
		if (i)
			strncat(buf, ", ", size - strlen(buf) - 1);
		strncat(buf, values[i], size - strlen(buf) - 1);
	}
	return buf;
}

static int enum_has(const char *const *values, const char *s)
{
	for (int i = 0; values[i]; i++)
		if (!strcmp(values[i], s))
			return 1;
	return 0;
}

static const char *kind_name(const struct ynode *v)
{
	return v->kind == YN_MAP ? "a mapping" : v->kind == YN_SEQ ? "a list" : "a scalar";
}

static int loc_add(struct card *c, const struct doc *d, const char *key, size_t off)
{
	struct card_loc *nl = realloc(c->locs, (size_t)(c->loc_count + 1) * sizeof(*nl));

	VS_CHECK_ALLOC(nl);
	c->locs = nl;
	nl += c->loc_count;
	nl->key = strdup(key);
	VS_CHECK_ALLOC(nl->key);
	nl->offset = off;
	text_linecol(d->text, d->len, off, &nl->line, &nl->col);
	c->loc_count++;
	return 0;
}

static int unknown_add(struct card *c, const struct doc *d, const char *key, const struct ynode *v)
{
	struct card_unknown *nu = realloc(c->unknown, (size_t)(c->unknown_count + 1) * sizeof(*nu));
	size_t b = v->b, e = v->ce;

	VS_CHECK_ALLOC(nu);
	c->unknown = nu;
	nu += c->unknown_count;
	while (e > b && isspace((unsigned char)d->text[e - 1]))
		e--;
	nu->path = strdup(key);
	nu->text = strndup(d->text + b, e - b);
	if (!nu->path || !nu->text) {
		free(nu->path);
		free(nu->text);
		return vs_oom();
	}
	c->unknown_count++;
	return 0;
}

static int set_str(char **dst, const char *s)
{
	char *n = strdup(s);

	VS_CHECK_ALLOC(n);
	free(*dst);
	*dst = n;
	return 0;
}

static void list_release(struct card_list *l)
{
	for (int i = 0; i < l->count; i++)
		free(l->items[i]);
	free(l->items);
	l->items = NULL;
	l->count = 0;
}

/*
 * The names a match list holds are compared exactly (gens against the device, dtypes against the
 * plan): a name with spaces around it, listed twice, or beside a case variant of itself is refused
 * rather than normalized, so that the card says exactly what is matched.
 */
static int list_check_name(const struct doc *d, const struct card_list *l, const struct ynode *it, const char *key)
{
	const char *s = it->value;

	if (isspace((unsigned char)s[0]) || isspace((unsigned char)s[it->len - 1]))
		return doc_err(d, VS_ESCHEMA, it->b, key,
			       "'%s' has spaces around it (write the "
			       "name alone)",
			       s);
	for (int j = 0; j < l->count; j++) {
		if (!strcmp(l->items[j], s))
			return doc_err(d, VS_ESCHEMA, it->b, key, "'%s' is listed twice", s);
		if (!strcasecmp(l->items[j], s))
			return doc_err(d, VS_ESCHEMA, it->b, key,
				       "'%s' and '%s' differ only in case "
				       "(names are compared exactly: list one)",
				       l->items[j], s);
	}
	return 0;
}

static int schema_list(const struct doc *d, struct card_list *l, const struct ynode *v, const char *key)
{
	list_release(l);
	if (v->kind == YN_SCALAR && scalar_unset(v))
		return 0;
	if (v->kind != YN_SEQ)
		return doc_err(d, VS_ESCHEMA, v->b, key,
			       v->kind == YN_MAP ? "expected a list of strings like [a, b], found a mapping" :
						   "expected a list of strings like [a, b], found '%s'",
			       v->value);
	if (v->n) {
		l->items = calloc((size_t)v->n, sizeof(*l->items));
		VS_CHECK_ALLOC(l->items);
	}
	for (int i = 0; i < v->n; i++) {
		const struct ynode *it = v->kid[i];

		if (it->kind != YN_SCALAR)
			return doc_err(d, VS_ESCHEMA, it->b, key, "list items must be strings, found %s",
				       kind_name(it));
		if (scalar_unset(it))
			return doc_err(d, VS_ESCHEMA, it->b, key, "empty list item");
		if (!strncmp(key, "match.", 6)) {
			int err = list_check_name(d, l, it, key);

			if (err)
				return err;
		}
		l->items[i] = strdup(it->value);
		VS_CHECK_ALLOC(l->items[i]);
		l->count = i + 1;
	}
	return 0;
}

/*
 * A value of a claim's validation block that --record would never write (text for a number, a
 * parity outside the enum, a date not YYYY-MM-DD): the block is typed (card.h); the value stays
 * unset and is named in typed_why. 0, or VS_ENOMEM.
 */
static int typed_note(struct card *c, const char *why)
{
	char *s = c->validation.typed_why ? fs_printf("%s; %s", c->validation.typed_why, why) : strdup(why);

	VS_CHECK_ALLOC(s);
	free(c->validation.typed_why);
	c->validation.typed_why = s;
	c->validation.typed = 1;
	return 0;
}

/* typed_note() for the value v of key ("validation.measured.isolated" is named "measured.isolated"). */
static int typed_value(struct card *c, const char *key, const struct ynode *v)
{
	char *why = fs_printf("%s is '%s'", key + strlen("validation."), v->value);
	int err;

	VS_CHECK_ALLOC(why);
	err = typed_note(c, why);
	free(why);
	return err;
}

/* Whether key's value in a claim's block may be typed rather than refused (d->claim). */
static int typed_allowed(const struct doc *d, const char *key, const struct ynode *v)
{
	return d->claim && v->kind == YN_SCALAR &&
	       (!strcmp(key, "validation.measured.isolated") || !strcmp(key, "validation.measured.e2e_pct") ||
		!strcmp(key, "validation.measured.parity") || !strcmp(key, "validation.last_verified"));
}

static int schema_value(const struct doc *d, struct card *c, const struct field *f, const struct ynode *v,
			const char *key)
{
	char buf[256];
	double num;

	if (f->type == F_LIST)
		return schema_list(d, (struct card_list *)((char *)c + f->off), v, key);
	if (v->kind != YN_SCALAR) {
		if (f->type == F_ENUM)
			return doc_err(d, VS_ESCHEMA, v->b, key, "expected one of: %s, found %s",
				       enum_list(f->values, buf, sizeof(buf)), kind_name(v));
		return doc_err(d, VS_ESCHEMA, v->b, key, "expected %s, found %s",
			       f->type == F_STR   ? "a string" :
			       f->type == F_DATE  ? "a date YYYY-MM-DD" :
			       f->type == F_COUNT ? "a whole number" :
						    "a number",
			       kind_name(v));
	}
	switch (f->type) {
	case F_STR:
		return set_str(str_at(c, f), scalar_unset(v) ? "" : v->value);
	case F_ENUM:
		if (scalar_unset(v))
			return set_str(str_at(c, f), "");
		if (!strcmp(f->path, "validation.status") && !strcmp(v->value, "stale"))
			return doc_err(d, VS_ESCHEMA, v->b, key,
				       "'stale' is computed by the report and never written; use one of: %s",
				       enum_list(f->values, buf, sizeof(buf)));
		if (!strcmp(f->path, "expects.parity") && !strncmp(v->value, "relaxed", 7)) {
			double tol;

			if (!card_parity_relaxed(v->value, &tol))
				return doc_err(d, VS_ESCHEMA, v->b, key,
					       "'%s': a relaxed parity is written relaxed(<tol>), tol a number in (0, "
					       "%g]: the absolute and relative tolerance of out and lse",
					       v->value, CARD_PARITY_RELAXED_MAX);
			return set_str(str_at(c, f), v->value);
		}
		if (!enum_has(f->values, v->value) && typed_allowed(d, key, v))
			return typed_value(c, key, v);
		if (!enum_has(f->values, v->value))
			return doc_err(d, VS_ESCHEMA, v->b, key, "'%s' is not one of: %s", v->value,
				       enum_list(f->values, buf, sizeof(buf)));
		return set_str(str_at(c, f), v->value);
	case F_DATE:
		if (scalar_unset(v))
			return set_str(str_at(c, f), "");
		if (!valid_date(v->value) && typed_allowed(d, key, v))
			return typed_value(c, key, v);
		if (!valid_date(v->value))
			return doc_err(d, VS_ESCHEMA, v->b, key, "'%s' is not a real date written YYYY-MM-DD",
				       v->value);
		return set_str(str_at(c, f), v->value);
	case F_NUM:
	case F_NUM_POS:
		*(int *)((char *)c + f->has_off) = 0;
		*(double *)((char *)c + f->off) = 0.0;
		if (scalar_unset(v))
			return 0;
		if ((v->style != YAML_PLAIN_SCALAR_STYLE || parse_number(v->value, &num)) && typed_allowed(d, key, v))
			return typed_value(c, key, v);
		if (v->style != YAML_PLAIN_SCALAR_STYLE)
			return doc_err(d, VS_ESCHEMA, v->b, key,
				       "expected a number, found the quoted string \"%s\" "
				       "(write numbers without quotes)",
				       v->value);
		switch (parse_number(v->value, &num)) {
		case 0:
			break;
		case -2:
			return doc_err(d, VS_ESCHEMA, v->b, key,
				       "'%s' is out of range (a number's "
				       "magnitude must be below 1.8e308)",
				       v->value);
		default:
			return doc_err(d, VS_ESCHEMA, v->b, key, "expected a number, found '%s'", v->value);
		}
		if (f->type == F_NUM_POS && !(num > 0))
			return doc_err(d, VS_ESCHEMA, v->b, key, "must be a number > 0, found '%s'", v->value);
		*(int *)((char *)c + f->has_off) = 1;
		*(double *)((char *)c + f->off) = num;
		return 0;
	case F_COUNT:
		*(int *)((char *)c + f->off) = 0;
		if (scalar_unset(v))
			return 0;
		if (v->style != YAML_PLAIN_SCALAR_STYLE)
			return doc_err(d, VS_ESCHEMA, v->b, key,
				       "expected a whole number, found the quoted string \"%s\" (write numbers without "
				       "quotes)",
				       v->value);
		if (parse_number(v->value, &num) || num != floor(num) || !(num >= 1 && num <= CARD_TOPK_MAX))
			return doc_err(d, VS_ESCHEMA, v->b, key, "'%s' is not a whole number in [1, %d]", v->value,
				       CARD_TOPK_MAX);
		*(int *)((char *)c + f->off) = (int)num;
		return 0;
	default:
		return 0;
	}
}

/* One scalar of a workload record: "" unset, else its text; a mapping or sequence is an error. */
static int record_scalar(const struct doc *d, const struct ynode *v, const char *key, char **out)
{
	if (v->kind != YN_SCALAR)
		return doc_err(d, VS_ESCHEMA, v->b, key, "expected a scalar, found %s", kind_name(v));
	return set_str(out, scalar_unset(v) ? "" : v->value);
}

static int record_number(const struct doc *d, const struct ynode *v, const char *key, double *out, int *has)
{
	if (v->kind != YN_SCALAR)
		return doc_err(d, VS_ESCHEMA, v->b, key, "expected a number, found %s", kind_name(v));
	if (scalar_unset(v))
		return 0;
	if (v->style != YAML_PLAIN_SCALAR_STYLE || parse_number(v->value, out))
		return doc_err(d, VS_ESCHEMA, v->b, key, "expected a number, found '%s'", v->value);
	if (has)
		*has = 1;
	return 0;
}

/*
 * A workload record's per_kv_dtype (card.h): a mapping of kv dtype names to {speedup, ci95_lo,
 * ci95_hi}, all three numbers, at most CARD_MAX_KV_DTYPES of them.
 */
static int record_kv(const struct doc *d, const struct ynode *v, const char *key, struct card_workload_record *r)
{
	if (v->kind != YN_MAP)
		return scalar_unset(v) ?
			       0 :
			       doc_err(d, VS_ESCHEMA, v->b, key,
				       "expected a mapping {<kv dtype>: {speedup, ci95_lo, ci95_hi}, ...}, found %s",
				       kind_name(v));
	for (int i = 0; i + 1 < v->n; i += 2) {
		const struct ynode *k = v->kid[i], *x = v->kid[i + 1];
		struct card_kv_speedup *s = &r->kv[r->nkv];
		char fk[CARD_PATH_MAX];
		int has[3] = {0, 0, 0}, err = 0;

		snprintf(fk, sizeof(fk), "%.200s.%.50s", key, k->value ? k->value : "");
		if (!k->value || !*k->value)
			return doc_err(d, VS_ESCHEMA, k->b, key, "a kv dtype name is empty");
		if (r->nkv == CARD_MAX_KV_DTYPES)
			return doc_err(d, VS_ESCHEMA, k->b, fk, "more than %d kv dtypes", CARD_MAX_KV_DTYPES);
		if (x->kind != YN_MAP)
			return doc_err(d, VS_ESCHEMA, x->b, fk,
				       "expected a mapping {speedup, ci95_lo, ci95_hi}, found %s", kind_name(x));
		r->nkv++;
		if ((err = set_str(&s->kv_dtype, k->value)))
			return err;
		for (int j = 0; !err && j + 1 < x->n; j += 2) {
			const char *f = x->kid[j]->value ? x->kid[j]->value : "";
			char nk[CARD_PATH_MAX];

			snprintf(nk, sizeof(nk), "%.200s.%.20s", fk, f);
			if (!strcmp(f, "speedup"))
				err = record_number(d, x->kid[j + 1], nk, &s->speedup, &has[0]);
			else if (!strcmp(f, "ci95_lo"))
				err = record_number(d, x->kid[j + 1], nk, &s->lo, &has[1]);
			else if (!strcmp(f, "ci95_hi"))
				err = record_number(d, x->kid[j + 1], nk, &s->hi, &has[2]);
			else
				err = doc_err(d, VS_ESCHEMA, x->kid[j]->b, nk,
					      "unknown key of a kv dtype's speedup (speedup, ci95_lo, ci95_hi)");
		}
		if (err)
			return err;
		if (!has[0] || !has[1] || !has[2])
			return doc_err(d, VS_ESCHEMA, x->b, fk, "speedup, ci95_lo and ci95_hi come together");
	}
	return 0;
}

/*
 * validation.workloads: a mapping of "<workload>@<gen>" to a record mapping (card.h), written by
 * --record; every key of a record is known (a misspelt one would be a claim nobody checks).
 */
static int schema_workloads(const struct doc *d, struct card *c, const struct ynode *map, const char *prefix)
{
	struct card_validation *va = &c->validation;

	if (map->kind != YN_MAP)
		return scalar_unset(map) ?
			       0 :
			       doc_err(d, VS_ESCHEMA, map->b, prefix,
				       "expected a mapping of <workload>@<gen> keys, found %s", kind_name(map));
	va->workloads = calloc((size_t)map->n / 2 + 1, sizeof(*va->workloads));
	if (!va->workloads)
		return vs_oom();
	for (int i = 0; i + 1 < map->n; i += 2) {
		const struct ynode *k = map->kid[i], *v = map->kid[i + 1];
		struct card_workload_record *r = &va->workloads[va->nworkloads];
		const char *at = k->value ? strchr(k->value, '@') : NULL;
		char key[CARD_PATH_MAX];
		int err = 0, has_lo = 0, has_hi = 0;

		snprintf(key, sizeof(key), "%.120s.%.120s", prefix, k->value ? k->value : "");
		if (!at || at == k->value || !at[1] || strchr(at + 1, '@'))
			return doc_err(d, VS_ESCHEMA, k->b, key,
				       "a record's key is <workload id>@<gen>, e.g. "
				       "deepseek_v3_tp8_chat@sm_90");
		if (v->kind != YN_MAP)
			return doc_err(d, VS_ESCHEMA, v->b, key, "expected a mapping (a record), found %s",
				       kind_name(v));
		va->nworkloads++;
		if ((err = set_str(&r->key, k->value)) || (err = set_str(&r->gen, at + 1)))
			return err;
		if (!(r->workload = strndup(k->value, (size_t)(at - k->value))))
			return vs_oom();
		for (int j = 0; !err && j + 1 < v->n; j += 2) {
			const char *f = v->kid[j]->value ? v->kid[j]->value : "";
			const struct ynode *x = v->kid[j + 1];
			char fk[CARD_PATH_MAX];

			snprintf(fk, sizeof(fk), "%.200s.%.50s", key, f);
			if (!strcmp(f, "status"))
				err = record_scalar(d, x, fk, &r->status);
			else if (!strcmp(f, "last_verified"))
				err = record_scalar(d, x, fk, &r->last_verified);
			else if (!strcmp(f, "gpu"))
				err = record_scalar(d, x, fk, &r->gpu);
			else if (!strcmp(f, "parity"))
				err = record_scalar(d, x, fk, &r->parity);
			else if (!strcmp(f, "artifact"))
				err = record_scalar(d, x, fk, &r->artifact);
			else if (!strcmp(f, "speedup"))
				err = record_number(d, x, fk, &r->speedup, &r->has_speedup);
			else if (!strcmp(f, "ci95_lo"))
				err = record_number(d, x, fk, &r->speedup_lo, &has_lo);
			else if (!strcmp(f, "ci95_hi"))
				err = record_number(d, x, fk, &r->speedup_hi, &has_hi);
			else if (!strcmp(f, "isolated"))
				err = record_number(d, x, fk, &r->isolated, &r->has_isolated);
			else if (!strcmp(f, "per_kv_dtype"))
				err = record_kv(d, x, fk, r);
			else
				err = doc_err(d, VS_ESCHEMA, v->kid[j]->b, fk,
					      "unknown key of a workload record (status, last_verified, gpu, speedup, "
					      "ci95_lo, ci95_hi, per_kv_dtype, isolated, parity, artifact)");
		}
		if (err)
			return err;
		if (!r->status || !enum_has(status_values, r->status) || !strcmp(r->status, "draft"))
			return doc_err(d, VS_ESCHEMA, v->b, key, "status is '%s': a record is validated or failed",
				       r->status ? r->status : "");
		if (r->has_speedup != has_lo || r->has_speedup != has_hi)
			return doc_err(d, VS_ESCHEMA, v->b, key, "speedup, ci95_lo and ci95_hi come together");
		if (r->parity && *r->parity && !enum_has(measured_parity_values, r->parity))
			return doc_err(d, VS_ESCHEMA, v->b, key, "parity is '%s' (pass or fail)", r->parity);
		if (r->last_verified && *r->last_verified && !valid_date(r->last_verified))
			return doc_err(d, VS_ESCHEMA, v->b, key, "last_verified '%s' is not a date YYYY-MM-DD",
				       r->last_verified);
		for (int q = 0; q + 1 < va->nworkloads; q++)
			if (!strcmp(va->workloads[q].key, r->key))
				return doc_err(d, VS_ESCHEMA, k->b, key, "recorded twice");
	}
	return 0;
}

const struct card_workload_record *card_workload_record_find(const struct card *c, const char *key)
{
	for (int i = 0; i < c->validation.nworkloads; i++)
		if (!strcmp(c->validation.workloads[i].key, key))
			return &c->validation.workloads[i];
	return NULL;
}

/* Type the mapping map (at dotted prefix) into c; unknown keys go to c->unknown. */
static int schema_map(const struct doc *d, struct card *c, const struct ynode *map, const char *prefix)
{
	int err = 0;

	for (int i = 0; !err && i + 1 < map->n; i += 2) {
		const struct ynode *k = map->kid[i], *v = map->kid[i + 1];
		char key[CARD_PATH_MAX];
		const struct field *f;

		snprintf(key, sizeof(key), "%s%s%s", prefix, *prefix ? "." : "", k->value);
		err = loc_add(c, d, key, v->null_empty ? k->b : v->b);
		if (err)
			break;
		f = field_find(key);
		if (!strcmp(key, "validation.workloads"))
			err = schema_workloads(d, c, v, key);
		else if (f && !strcmp(key, "match.from_backend") && v->kind == YN_SEQ)
			err = schema_list(d, &c->match.from_backends, v, key); /* GEAK's list of sources */
		else if (!f)
			err = unknown_add(c, d, key, v);
		else if (f->type != F_MAP)
			err = schema_value(d, c, f, v, key);
		else if (v->kind == YN_MAP)
			err = schema_map(d, c, v, key);
		else if (!scalar_unset(v))
			err = doc_err(d, VS_ESCHEMA, v->b, key, "expected a mapping of keys, found %s%s%s%s",
				      kind_name(v), v->kind == YN_SCALAR ? " '" : "",
				      v->kind == YN_SCALAR ? v->value : "", v->kind == YN_SCALAR ? "'" : "");
	}
	return err;
}

int card_locate(const struct card *c, const char *key, int *line, int *col)
{
	for (int i = 0; i < c->loc_count; i++) {
		if (!strcmp(c->locs[i].key, key)) {
			*line = c->locs[i].line;
			*col = c->locs[i].col;
			return 0;
		}
	}
	return VS_ENOTFOUND;
}

/* Where to point a message about key: the key itself, else its nearest present parent, else 1:1. */
static void locate_near(const struct card *c, const char *key, int *line, int *col)
{
	char buf[CARD_PATH_MAX];
	char *dot;

	snprintf(buf, sizeof(buf), "%s", key);
	for (;;) {
		if (!card_locate(c, buf, line, col))
			return;
		dot = strrchr(buf, '.');
		if (!dot)
			break;
		*dot = '\0';
	}
	*line = 1;
	*col = 1;
}

/*
 * Where and how to report the missing key: at the mapping that should hold it (its parent, else
 * the front matter's first line), with a hint naming that mapping and its line.
 */
static void missing_near(const struct card *c, const char *key, char *hint, size_t size, int *line, int *col);
static const char *near_miss_of(const struct card *c, const char *kp, int *mapped);

static void missing_at(const struct card *c, const char *key, int *line, int *col, char *hint, size_t size)
{
	const char *dot = strchr(key, '.');
	int last;

	missing_near(c, key, hint, size, line, col);
	if (*hint)
		return;

	if (dot) {
		char parent[CARD_PATH_MAX];

		snprintf(parent, sizeof(parent), "%.*s", (int)(strrchr(key, '.') - key), key);
		if (!card_locate(c, parent, line, col)) {
			snprintf(hint, size, " (add '%s:' to the mapping '%s', which starts at line %d)",
				 strrchr(key, '.') + 1, parent, *line);
			return;
		}
	}
	text_linecol(c->text, c->text_len, c->fm_begin, line, col);
	text_linecol(c->text, c->text_len, c->fm_end, &last, col);
	*col = 1;
	if (dot)
		snprintf(hint, size, " (add '%.*s:' with '%s:' in it to the front matter, lines %d-%d)",
			 (int)(dot - key), key, dot + 1, *line, last - 1);
	else
		snprintf(hint, size, " (add '%s:' to the front matter, lines %d-%d)", key, *line, last - 1);
}

/*
 * The hint for a missing key (or a missing mapping above it) that the card holds misspelled:
 * " ('expect', here, looks like a misspelling of 'expects')", with its place (its value's, as
 * card_locate() gives) in *at_line and *at_col; "" when there is none.
 */
static void missing_near(const struct card *c, const char *key, char *hint, size_t size, int *at_line, int *at_col)
{
	char prefix[CARD_PATH_MAX];

	hint[0] = '\0';
	for (const char *end = strchr(key, '.');; end = strchr(end + 1, '.')) {
		size_t n = end ? (size_t)(end - key) : strlen(key);
		const char *near;
		int line = 1, col = 1;

		snprintf(prefix, sizeof(prefix), "%.*s", (int)n, key);
		if (card_locate(c, prefix, &line, &col) && (near = near_miss_of(c, prefix, NULL))) {
			card_locate(c, near, &line, &col);
			snprintf(hint, size, " ('%s', here, looks like a misspelling of '%s')", near, prefix);
			*at_line = line;
			*at_col = col;
			return;
		}
		if (!end)
			return;
	}
}

/* Missing or empty required keys, in schema order. */
static int schema_required(const struct card *c)
{
	static const char *const required[] = {
		"id",           "title",          "scope",
		"match",        "match.operator", "match.gens",
		"match.dtypes", "validation",     "validation.status",
	};
	char hint[CARD_PATH_MAX + 96];
	int line, col;

	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		const char *key = required[i];
		const struct field *f = field_find(key);
		int empty = 0;

		/* a card without a validation block is a draft (schema_defaults); --record adds it */
		if (!strncmp(key, "validation", 10) && card_locate(c, "validation", &line, &col))
			continue;
		if (card_locate(c, key, &line, &col)) {
			missing_at(c, key, &line, &col, hint, sizeof(hint));
			return card_msg(VS_ESCHEMA, c->path, line, col, key, "required key is missing%s", hint);
		}
		if (f->type == F_LIST)
			empty = ((const struct card_list *)((const char *)c + f->off))->count == 0;
		else if (f->type != F_MAP)
			empty = !**(char *const *)((const char *)c + f->off);
		if (empty)
			return card_msg(VS_ESCHEMA, c->path, line, col, key, "required value is empty");
	}
	if (!strcmp(c->scope, "kernel") && !c->expects.has_isolated_speedup_min) {
		hint[0] = '\0';
		if (card_locate(c, "expects.isolated_speedup_min", &line, &col))
			missing_at(c, "expects.isolated_speedup_min", &line, &col, hint, sizeof(hint));
		return card_msg(VS_ESCHEMA, c->path, line, col, "expects.isolated_speedup_min",
				"required when scope is 'kernel' (a number > 0)%s", hint);
	}
	return 0;
}

/*
 * Every string field "" rather than NULL once a card is loaded; parity defaults to required, and a
 * card without a validation block is a draft.
 */
static int schema_defaults(struct card *c)
{
	int line, col;

	if (card_locate(c, "validation", &line, &col)) {
		int err = set_str(&c->validation.status, "draft");

		if (err)
			return err;
	}
	for (size_t i = 0; i < NFIELDS; i++) {
		char **s;

		if (fields[i].type != F_STR && fields[i].type != F_ENUM && fields[i].type != F_DATE)
			continue;
		s = str_at(c, &fields[i]);
		if (!*s || (!**s && !strcmp(fields[i].path, "expects.parity"))) {
			int err = set_str(s, !strcmp(fields[i].path, "expects.parity") ? "required" : "");

			if (err)
				return err;
		}
	}
	return 0;
}

void card_release(struct card *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < NFIELDS; i++) {
		if (fields[i].type == F_LIST)
			list_release((struct card_list *)((char *)c + fields[i].off));
		else if (fields[i].type != F_MAP && fields[i].type != F_NUM && fields[i].type != F_NUM_POS &&
			 fields[i].type != F_COUNT)
			free(*str_at(c, &fields[i]));
	}
	for (int i = 0; i < c->unknown_count; i++) {
		free(c->unknown[i].path);
		free(c->unknown[i].text);
	}
	free(c->unknown);
	free(c->validation.typed_why);
	for (int i = 0; i < c->validation.nworkloads; i++) {
		struct card_workload_record *r = &c->validation.workloads[i];

		free(r->key);
		free(r->workload);
		free(r->gen);
		free(r->status);
		free(r->last_verified);
		free(r->gpu);
		free(r->parity);
		free(r->artifact);
		for (int k = 0; k < r->nkv; k++)
			free(r->kv[k].kv_dtype);
	}
	free(c->validation.workloads);
	list_release(&c->match.from_backends);
	for (int i = 0; i < c->loc_count; i++)
		free(c->locs[i].key);
	free(c->locs);
	free(c->path);
	free(c->text);
	memset(c, 0, sizeof(*c));
}

int card_parse(struct card *c, const char *path, const char *text, size_t len)
{
	struct card tmp;
	struct doc d;
	int err;

	memset(&tmp, 0, sizeof(tmp));
	memset(&d, 0, sizeof(d));
	tmp.path = strdup(path);
	tmp.text = malloc(len + 1);
	if (!tmp.path || !tmp.text) {
		err = vs_error(VS_ENOMEM, "out of memory reading '%s'", path);
		goto done;
	}
	memcpy(tmp.text, text, len);
	tmp.text[len] = '\0';
	tmp.text_len = len;
	err = doc_open(&d, tmp.path, tmp.text, len);
	if (err)
		goto done;
	tmp.fm_begin = d.fm_begin;
	tmp.fm_end = d.fm_end;
	tmp.body_begin = d.body_begin;
	{
		const struct ynode *vb = map_find(d.root, "validation", NULL);
		const struct ynode *st = vb && vb->kind == YN_MAP ? map_find(vb, "status", NULL) : NULL;

		d.claim = st && st->kind == YN_SCALAR &&
			  (!strcmp(st->value, "validated") || !strcmp(st->value, "failed"));
	}
	err = schema_map(&d, &tmp, d.root, "");
	if (!err)
		err = schema_defaults(&tmp);
	if (!err)
		err = schema_required(&tmp);
	/* what --record always writes and a typed block lacks */
	if (!err && d.claim && !*tmp.validation.artifact)
		err = typed_note(&tmp, "no artifact");
	if (!err && d.claim && !*tmp.validation.gen)
		err = typed_note(&tmp, "no gen");
	if (err)
		goto done;
	*c = tmp;
	memset(&tmp, 0, sizeof(tmp));
done:
	doc_release(&d);
	card_release(&tmp);
	return err;
}

int card_load(struct card *c, const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	int err;

	err = fs_check_link(path, "card");
	if (!err)
		err = fs_read_file(&buf, &len, path, CARD_MAX_BYTES);
	if (!err)
		err = card_parse(c, path, buf, len);
	free(buf);
	return err;
}

/* ---- lint ---------------------------------------------------------------------------------- */

static const char *const section_names[] = {
	"When to use", "Mechanism", "Procedure", "Knobs & pitfalls", "Do-no-harm notes", "Sources",
};
#define NSECTIONS ((int)(sizeof(section_names) / sizeof(section_names[0])))

static int lint_at(const struct card *c, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int lint_at(const struct card *c, const char *key, const char *fmt, ...)
{
	va_list ap;
	int line, col;

	locate_near(c, key, &line, &col);
	va_start(ap, fmt);
	card_vmsg(VS_ESCHEMA, c->path, line, col, key, fmt, ap);
	va_end(ap);
	return 1;
}

static const char *nz(const char *s)
{
	return s ? s : "";
}

/* ATX heading level (1-6) of line s[0..n), 0 if not a heading; text and tlen: its trimmed text. */
static int md_heading(const char *s, size_t n, const char **text, size_t *tlen)
{
	size_t i = 0, e;
	int level = 0;

	while (i < n && i < 3 && s[i] == ' ')
		i++;
	while (i < n && s[i] == '#' && level < 7) {
		i++;
		level++;
	}
	if (level < 1 || level > 6 || (i < n && s[i] != ' ' && s[i] != '\t'))
		return 0;
	while (i < n && (s[i] == ' ' || s[i] == '\t'))
		i++;
	e = n;
	while (e > i && (s[e - 1] == ' ' || s[e - 1] == '\t'))
		e--;
	{
		size_t h = e;

		while (h > i && s[h - 1] == '#')
			h--;
		if (h == i || s[h - 1] == ' ' || s[h - 1] == '\t')
			e = h;
	}
	while (e > i && (s[e - 1] == ' ' || s[e - 1] == '\t'))
		e--;
	*text = s + i;
	*tlen = e - i;
	return level;
}

/* Fence char and length of a ``` / ~~~ line, 0 if it is not one. */
static size_t md_fence(const char *s, size_t n, char *ch)
{
	size_t i = 0, k = 0;

	while (i < n && i < 3 && s[i] == ' ')
		i++;
	if (i >= n || (s[i] != '`' && s[i] != '~'))
		return 0;
	*ch = s[i];
	while (i + k < n && s[i + k] == *ch)
		k++;
	return k >= 3 ? k : 0;
}

/* 1 if s[0..n) has visible text outside HTML comments; updates *in_comment across lines. */
static int md_visible(const char *s, size_t n, int *in_comment)
{
	size_t i = 0;
	int vis = 0;

	while (i < n) {
		if (*in_comment) {
			const char *end = memmem(s + i, n - i, "-->", 3);

			if (!end)
				return vis;
			i = (size_t)(end - s) + 3;
			*in_comment = 0;
		} else {
			const char *open = memmem(s + i, n - i, "<!--", 4);
			size_t stop = open ? (size_t)(open - s) : n;

			for (size_t j = i; j < stop; j++)
				if (!isspace((unsigned char)s[j]))
					vis = 1;
			if (!open)
				return vis;
			i = stop + 4;
			*in_comment = 1;
		}
	}
	return vis;
}

static int has_text(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!isspace((unsigned char)s[i]))
			return 1;
	return 0;
}

static int section_index(const char *t, size_t n)
{
	for (int i = 0; i < NSECTIONS; i++)
		if (strlen(section_names[i]) == n && !strncasecmp(section_names[i], t, n))
			return i;
	return -1;
}

static int lint_body(const struct card *c)
{
	int found[NSECTIONS] = {0}, visible[NSECTIONS] = {0};
	int cur = -1, in_comment = 0, problems = 0, line, col, body_line;
	char fence_ch = 0;
	size_t fence_len = 0, p, ce, next;
	const char *t = c->text;

	text_linecol(t, c->text_len, c->body_begin, &body_line, &col);
	line = body_line;
	for (p = c->body_begin; p < c->text_len; p = next, line++) {
		const char *s = t + p, *h;
		size_t n, hl;
		int level, idx;
		char ch = 0;

		line_at(t, c->text_len, p, &ce, &next);
		n = ce - p;
		if (fence_ch) {
			size_t k = md_fence(s, n, &ch);

			if (k >= fence_len && ch == fence_ch)
				fence_ch = 0;
			if (cur >= 0 && has_text(s, n))
				visible[cur] = 1;
			continue;
		}
		if (!in_comment && (level = md_heading(s, n, &h, &hl)) > 0 && level <= 2) {
			idx = level == 2 ? section_index(h, hl) : -1;
			if (idx >= 0 && found[idx]) {
				problems += card_msg(VS_ESCHEMA, c->path, line, 1, "body",
						     "section '## %s' appears twice (first at line %d, "
						     "again at line %d)",
						     section_names[idx], found[idx], line) != 0;
				idx = -1;
			} else if (idx >= 0) {
				found[idx] = line;
			}
			cur = idx;
			continue;
		}
		if (!in_comment && (fence_len = md_fence(s, n, &ch)) > 0) {
			fence_ch = ch;
			if (cur >= 0)
				visible[cur] = 1;
			continue;
		}
		if (md_visible(s, n, &in_comment) && cur >= 0)
			visible[cur] = 1;
	}
	for (int i = 0; i < NSECTIONS; i++) {
		if (!found[i])
			problems += card_msg(VS_ESCHEMA, c->path, body_line, 1, "body", "missing section '## %s'",
					     section_names[i]) != 0;
		else if (!visible[i])
			problems += card_msg(VS_ESCHEMA, c->path, found[i], 1, "body",
					     "section '## %s' is empty (whitespace and HTML comments "
					     "do not count)",
					     section_names[i]) != 0;
	}
	return problems;
}

int card_list_has(const struct card_list *l, const char *s)
{
	for (int i = 0; i < l->count; i++)
		if (!strcmp(l->items[i], s))
			return 1;
	return 0;
}

static int lint_enum(const struct card *c, const char *key, const char *value, const char *const *values,
		     int allow_empty)
{
	char buf[256];

	if (!*value && allow_empty)
		return 0;
	if (!strcmp(key, "validation.status") && !strcmp(value, "stale"))
		return lint_at(c, key,
			       "'stale' is computed by the report and never written; "
			       "use one of: %s",
			       enum_list(values, buf, sizeof(buf)));
	if (!enum_has(values, value))
		return lint_at(c, key, "'%s' is not one of: %s", value, enum_list(values, buf, sizeof(buf)));
	return 0;
}

static int lint_validated(const struct card *c)
{
	const struct card_validation *v = &c->validation;
	int n = 0;
	static const struct {
		const char *key;
		size_t off;
	} needed[] = {
		{"validation.gpu", offsetof(struct card_validation, gpu)},
		{"validation.gen", offsetof(struct card_validation, gen)},
		{"validation.last_verified", offsetof(struct card_validation, last_verified)},
		{"validation.artifact", offsetof(struct card_validation, artifact)},
	};

	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++)
		if (!*nz(*(char *const *)((const char *)v + needed[i].off)))
			n += lint_at(c, needed[i].key, "status 'validated' needs a value here");
	if (strcmp(nz(v->measured_parity), "pass"))
		n += lint_at(c, "validation.measured.parity",
			     "status 'validated' needs measured parity 'pass', found '%s'", nz(v->measured_parity));
	if (!strcmp(nz(c->scope), "kernel") && !v->has_isolated)
		n += lint_at(c, "validation.measured.isolated",
			     "status 'validated' on a kernel card needs the measured isolated speedup");
	if (!strcmp(nz(c->scope), "kernel") && v->has_isolated && c->expects.has_isolated_speedup_min &&
	    v->measured_isolated < c->expects.isolated_speedup_min)
		n += lint_at(c, "validation.measured.isolated",
			     "status 'validated' but the measured speedup %g is below "
			     "expects.isolated_speedup_min %g",
			     v->measured_isolated, c->expects.isolated_speedup_min);
	if (!strcmp(nz(c->scope), "e2e") && !v->has_e2e_pct)
		n += lint_at(c, "validation.measured.e2e_pct",
			     "status 'validated' on an e2e card needs the measured e2e delta");
	if (*nz(v->gen) && !card_list_has(&c->match.gens, v->gen))
		n += lint_at(c, "validation.gen",
			     "measured generation '%s' is not in match.gens (a card is validated "
			     "only on a generation it lists)",
			     v->gen);
	return n;
}

/* Latin letters that Cyrillic and Greek ones are mistaken for (the key is otherwise ASCII). */
static const struct {
	unsigned cp;
	char latin;
} lookalikes[] = {
	{0x0430, 'a'}, {0x0432, 'b'}, {0x0435, 'e'}, {0x043e, 'o'}, {0x0440, 'p'}, {0x0441, 'c'}, {0x0443, 'y'},
	{0x0445, 'x'}, {0x0455, 's'}, {0x0456, 'i'}, {0x0458, 'j'}, {0x04bb, 'h'}, {0x0501, 'd'}, {0x0410, 'A'},
	{0x0412, 'B'}, {0x0415, 'E'}, {0x041a, 'K'}, {0x041c, 'M'}, {0x041d, 'H'}, {0x041e, 'O'}, {0x0420, 'P'},
	{0x0421, 'C'}, {0x0422, 'T'}, {0x0425, 'X'}, {0x03b1, 'a'}, {0x03b9, 'i'}, {0x03bd, 'v'}, {0x03bf, 'o'},
	{0x03c1, 'p'}, {0x03c4, 't'}, {0x0391, 'A'}, {0x0392, 'B'}, {0x0395, 'E'}, {0x0397, 'H'}, {0x0399, 'I'},
	{0x039a, 'K'}, {0x039c, 'M'}, {0x039d, 'N'}, {0x039f, 'O'}, {0x03a1, 'P'}, {0x03a4, 'T'}, {0x03a7, 'X'},
};

/* s (UTF-8) with look-alike letters mapped to Latin, lowercased, into out; 1 when one was mapped. */
static int key_fold(const char *s, char *out, size_t size)
{
	size_t o = 0;
	int mapped = 0;

	while (*s && o + 1 < size) {
		const unsigned char *u = (const unsigned char *)s;
		size_t n = utf8_seq(u, strlen(s));
		unsigned cp = 0;
		char ch = 0;

		if (n <= 1) {
			out[o++] = (char)tolower(*u);
			s++;
			continue;
		}
		cp = n == 2 ? ((u[0] & 0x1fu) << 6) | (u[1] & 0x3fu) : 0;
		for (size_t i = 0; i < sizeof(lookalikes) / sizeof(lookalikes[0]); i++)
			if (lookalikes[i].cp == cp)
				ch = lookalikes[i].latin;
		if (ch) {
			out[o++] = (char)tolower((unsigned char)ch);
			mapped = 1;
		} else {
			for (size_t i = 0; i < n && o + 1 < size; i++)
				out[o++] = s[i];
		}
		s += n;
	}
	out[o] = '\0';
	return mapped;
}

/* 1 when a and b are at most one insertion, deletion, substitution or adjacent swap apart. */
static int edit_distance_le1(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), i = 0;

	if (la < lb) {
		const char *t = a;

		a = b;
		b = t;
		la = strlen(a);
		lb = strlen(b);
	}
	if (la - lb > 1)
		return 0;
	while (i < lb && a[i] == b[i])
		i++;
	if (la == lb && i + 1 < la && a[i] == b[i + 1] && a[i + 1] == b[i])
		return !strcmp(a + i + 2, b + i + 2);
	if (la == lb)
		return !strcmp(a + i + (i < la), b + i + (i < lb));
	return !strcmp(a + i + 1, b + i);
}

/*
 * The unknown key of c that is a near miss of the known key path kp: in the same mapping, and one
 * edit, a case change or look-alike letters away (*mapped says which kind); NULL when none is.
 */
static const char *near_miss_of(const struct card *c, const char *kp, int *mapped)
{
	const char *kl = strrchr(kp, '.');
	size_t klen = kl ? (size_t)(kl - kp) : 0;
	char fk[CARD_PATH_MAX];

	kl = kl ? kl + 1 : kp;
	key_fold(kl, fk, sizeof(fk));
	for (int u = 0; u < c->unknown_count; u++) {
		const char *path = c->unknown[u].path, *leaf = strrchr(path, '.');
		size_t plen = leaf ? (size_t)(leaf - path) : 0;
		char fu[CARD_PATH_MAX];
		int m;

		leaf = leaf ? leaf + 1 : path;
		if (klen != plen || strncmp(kp, path, plen))
			continue;
		m = key_fold(leaf, fu, sizeof(fu));
		if (!strcmp(fu, fk) || (!m && edit_distance_le1(fu, fk))) {
			if (mapped)
				*mapped = m;
			return path;
		}
	}
	return NULL;
}

/* The keys that decide what is measured and how it is judged: a near miss of one is an error. */
static const char *const verdict_keys[] = {
	"match",
	"match.from_backend",
	"match.to_backend",
	"expects",
	"expects.isolated_speedup_min",
	"expects.parity",
	"expects.e2e_delta_min_pct",
	NULL,
};

/*
 * An unknown key that is one edit, a case change or look-alike letters away from a known key of
 * the same mapping (isolated_speedup_mіn with a Cyrillic і beside the real key would otherwise be
 * silently ignored): kept as an unknown key, with a warning; an error when the known key decides
 * what is measured or how it is judged (verdict_keys: a misspelled to_backend or gate must not
 * leave the card recording a verdict it never asked for). Returns the number of errors.
 */
static int lint_near_known(const struct card *c)
{
	int n = 0;

	for (size_t i = 0; i < NFIELDS; i++) {
		const char *kp = fields[i].path, *near;
		int mapped = 0, line = 1, col = 1, decisive = enum_has(verdict_keys, kp);

		if (!(near = near_miss_of(c, kp, &mapped)))
			continue;
		card_locate(c, near, &line, &col);
		if (decisive)
			n += !!card_msg(VS_ESCHEMA, c->path, line, col, near,
					"unknown key close to the known key '%s' (%s), which decides what is measured "
					"or how it is judged: a near miss of it is an error",
					kp, mapped ? "a look-alike non-Latin letter?" : "a typo?");
		else
			vs_warn("%s:%d:%d: %s: unknown key close to the known key '%s' (%s); it is "
				"kept as an unknown key and '%s' is not set by it",
				c->path, line, col, near, kp, mapped ? "a look-alike non-Latin letter?" : "a typo?",
				kp);
	}
	return n;
}

/*
 * A card must claim a change: from_backend and to_backend differ, and the speedup gate is at
 * least 1.0, or, with expects.do_no_harm saying why, at least CARD_DO_NO_HARM_MIN.
 */
static int lint_gate(const struct card *c)
{
	const char *from = nz(c->match.from_backend), *to = nz(c->match.to_backend);
	double g = c->expects.isolated_speedup_min;
	int n = 0;

	if (*from && !strcmp(from, to))
		n += lint_at(c, "match.to_backend",
			     card_backend_config(to, NULL) ?
				     "'%s' is also match.from_backend: the same config on both sides (an A/A run "
				     "validates nothing; force another config after '@')" :
				     "'%s' is also match.from_backend: a card compares two "
				     "implementations or two configs of one (IMPL@CONFIG; an A/A run validates "
				     "nothing)",
			     to);
	if (!c->expects.has_isolated_speedup_min || !(g > 0))
		return n;
	if (g < CARD_DO_NO_HARM_MIN)
		n += lint_at(c, "expects.isolated_speedup_min",
			     "%.3g is below %.2f: no card can be validated "
			     "by a slowdown",
			     g, CARD_DO_NO_HARM_MIN);
	else if (g < 1.0 && !*nz(c->expects.do_no_harm))
		n += lint_at(c, "expects.isolated_speedup_min",
			     "%g is below 1.0: a change that may be slower "
			     "says why in expects.do_no_harm (\"a port that must not slow down\"), else the gate is >= "
			     "1.0",
			     g);
	return n;
}

/* Levenshtein distance of two config names (short: a config name holds at most 47 bytes). */
static int name_distance(const char *a, const char *b)
{
	int la = (int)strlen(a), lb = (int)strlen(b), row[64], prev, tmp;

	if (la > 63 || lb > 63)
		return 64;
	for (int j = 0; j <= lb; j++)
		row[j] = j;
	for (int i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = i;
		for (int j = 1; j <= lb; j++) {
			int best = prev + (a[i - 1] != b[j - 1]);

			best = row[j] + 1 < best ? row[j] + 1 : best;
			best = row[j - 1] + 1 < best ? row[j - 1] + 1 : best;
			tmp = row[j];
			row[j] = best;
			prev = tmp;
		}
	}
	return row[lb];
}

static int gen_is_cpu(const char *gen)
{
	return strncmp(gen, "sm_", 3) && strncmp(gen, "gfx", 3);
}

/*
 * A side forced to one config (IMPL@CONFIG, issue 41): the config is named, and where the
 * implementation is one of this build's (a C implementation or a plugin loaded; a Python module's
 * configs are known when it is planned, and --emit-plan refuses one it lacks), it is one of the
 * implementation's configs on each generation of match.gens its backend runs. One line per
 * problem, naming the nearest config and how many there are.
 */
static int lint_forced(const struct card *c, const char *key, const char *backend)
{
	const char *cfg = card_backend_config(backend, NULL);
	char impl_name[128];
	size_t n;
	const struct mla_decode_impl *impl;
	int lines = 0;

	if (!cfg)
		return 0;
	card_backend_config(backend, &n);
	if (!n || !*cfg || strchr(cfg, '@'))
		return lint_at(c, key,
			       "'%s' is not IMPL@CONFIG: an implementation, one '@' and the config it is forced to "
			       "(cpu.splitkv@bn64-bh16-sp4-w1-st1)",
			       backend);
	snprintf(impl_name, sizeof(impl_name), "%.*s", (int)n, backend);
	if (!(impl = mla_decode_impl_find(impl_name)))
		return 0;
	for (int g = 0; g < c->match.gens.count; g++) {
		const char *gen = c->match.gens.items[g];
		struct mla_decode_config *cs;
		int nc, k, best = -1, bd = 1 << 20;

		if (gen_is_cpu(gen) != !strcmp(impl->backend, "cpu"))
			continue;
		nc = impl->configs(gen, NULL, 0);
		if (nc <= 0) {
			lines += lint_at(c, key, "%s has no configs for %s, so it cannot be forced to '%s' there",
					 impl_name, gen, cfg);
			continue;
		}
		if (!(cs = calloc((size_t)nc, sizeof(*cs))))
			return lines + 1;
		nc = impl->configs(gen, cs, nc);
		for (k = 0; k < nc && strcmp(cs[k].name, cfg); k++) {
			int d = name_distance(cs[k].name, cfg);

			if (d < bd) {
				bd = d;
				best = k;
			}
		}
		if (k == nc)
			lines += lint_at(c, key, "config '%s' is not one of the %d configs of %s for %s (nearest: %s)",
					 cfg, nc, impl_name, gen, best >= 0 ? cs[best].name : "none");
		free(cs);
	}
	return lines;
}

/* GEAK's template marks what an author fills in with REPLACE. */
#define CARD_PLACEHOLDER "REPLACE"

/*
 * GEAK's template (_template/SKILL_TEMPLATE.md) refused as a card: one line per value that still
 * holds its placeholder (its empty sections are lint_body's). The count of lines.
 */
static int lint_placeholders(const struct card *c)
{
	int n = 0;

	for (size_t i = 0; i < NFIELDS; i++) {
		if (fields[i].type == F_LIST) {
			const struct card_list *l = (const struct card_list *)((const char *)c + fields[i].off);

			for (int k = 0; k < l->count; k++)
				if (strstr(l->items[k], CARD_PLACEHOLDER))
					n += lint_at(c, fields[i].path,
						     "'%s' is the template's placeholder: fill in the value",
						     l->items[k]);
		} else if (fields[i].type == F_STR || fields[i].type == F_ENUM || fields[i].type == F_DATE) {
			const char *s = *(char *const *)((const char *)c + fields[i].off);

			if (s && strstr(s, CARD_PLACEHOLDER))
				n += lint_at(c, fields[i].path, "'%s' is the template's placeholder: fill in the value",
					     s);
		}
	}
	return n;
}

/*
 * A typed block (card.h) is one warning line; what it claims is checked only where it contradicts
 * itself (a validated status beside a measured parity that says fail).
 */
static int lint_typed(const struct card *c)
{
	const struct card_validation *v = &c->validation;
	int line = 1, col = 1;

	locate_near(c, "validation.status", &line, &col);
	vs_warn("%s:%d:%d: validation: a typed block (%s): read, never trusted: reported as '%s (typed, no "
		"evidence)' and never counted verified; --record SKILL --eval-dir DIR replaces it with a "
		"measured one",
		c->path, line, col, nz(v->typed_why), nz(v->status));
	if (!strcmp(nz(v->status), "validated") && !strcmp(nz(v->measured_parity), "fail"))
		return lint_at(c, "validation.measured.parity", "status 'validated' beside measured parity 'fail'");
	return 0;
}

/* ---- the form a card selects: dense or sparse MLA decode (issue 36) -------------------------- */

int card_sparse(const struct card *c)
{
	return card_list_has(&c->match.arch_class, CARD_ARCH_SPARSE);
}

int card_form(const struct card *c, int kv_dtype, int *topk, int *extra_topk, const char **why)
{
	int sparse = card_sparse(c), v4 = mla_kv_is_model1(kv_dtype);

	*topk = 0;
	*extra_topk = 0;
	*why = "the dense form";
	if (!sparse)
		return kv_dtype == MLA_KV_BF16 || kv_dtype == MLA_KV_FP8_E4M3_FNUZ;
	if (kv_dtype != MLA_KV_BF16 && !mla_kv_is_blockscaled(kv_dtype))
		return 0;
	*topk = c->match.topk ? c->match.topk : v4 ? CARD_TOPK_V4 : CARD_TOPK_V32;
	if (v4)
		*extra_topk = c->match.extra_topk ? c->match.extra_topk : CARD_EXTRA_TOPK_V4;
	*why = c->match.topk && (!v4 || c->match.extra_topk) ? "match.topk" :
	       v4                                            ? "the default of the V4 formats" :
							       "the default of the V3.2 formats";
	return 1;
}

/* Words that speak of the sparse form; the V4 ones (the second list) name fp8_model1 in the hint. */
static const char *const sparse_terms[] = {
	"DeepSeek Sparse Attention",
	"sparse attention",
	"sparse-attention",
	"sparse decode",
	"sparse MLA",
	"DSA",
	"topk",
	"top-k",
	"per-block scale",
	"per-block-scaled",
	"block-scaled",
	"fp8_ds_mla",
	"DeepSeek-V3.2",
	"V3.2",
	NULL,
};
static const char *const sparse_v4_terms[] = {
	"MODEL1", "fp8_model1", "DeepSeek-V4", "DS_v4", "deepseek_v4", NULL,
};

static int word_char(char ch)
{
	return isalnum((unsigned char)ch);
}

/* The first of terms in text[0..n) as a whole word (case-insensitive): its offset, *term; -1 if none. */
static long find_term(const char *text, size_t n, const char *const *terms, const char **term)
{
	long best = -1;

	for (int t = 0; terms[t]; t++) {
		size_t k = strlen(terms[t]);

		for (size_t i = 0; i + k <= n && (best < 0 || i < (size_t)best); i++) {
			if (strncasecmp(text + i, terms[t], k) || (i > 0 && word_char(text[i - 1])) ||
			    (i + k < n && word_char(text[i + k])))
				continue;
			best = (long)i;
			*term = terms[t];
			break;
		}
	}
	return best;
}

const char *card_sparse_talk(const struct card *c, size_t *offset)
{
	const char *t32 = NULL, *t4 = NULL;
	long a, b;

	if (!c->text)
		return NULL;
	a = find_term(c->text, c->text_len, sparse_terms, &t32);
	b = find_term(c->text, c->text_len, sparse_v4_terms, &t4);
	if (a < 0 && b < 0)
		return NULL;
	*offset = (size_t)(b >= 0 && (a < 0 || b < a) ? b : a);
	return b >= 0 && (a < 0 || b < a) ? t4 : t32;
}

/*
 * The form a card's match block selects (card_form()): deepseek_mla and deepseek_dsa not both; the
 * block-scaled cache formats and match.topk / match.extra_topk only with deepseek_dsa;
 * fp8_e4m3_fnuz (one per-tensor scale) only with the dense form; match.extra_topk only beside a V4
 * format. A dense mla_attention card whose text speaks of the sparse form is one warning line
 * saying what to add. The count of errors.
 */
static int lint_form(const struct card *c)
{
	const struct card_list *dt = &c->match.dtypes;
	int n = 0, sparse = card_sparse(c), v4 = 0;
	const char *term;
	size_t off = 0;

	if (!card_operator_planned(c))
		return 0;
	if (sparse && card_list_has(&c->match.arch_class, CARD_ARCH_DENSE))
		n += lint_at(c, "match.arch_class",
			     "lists both %s (dense MLA decode) and %s (its sparse form): a plan takes one form; "
			     "write a card per form",
			     CARD_ARCH_DENSE, CARD_ARCH_SPARSE);
	for (int i = 0; i < dt->count; i++) {
		int32_t d = mla_kv_dtype_parse(dt->items[i]);

		v4 |= mla_kv_is_model1(d);
		if (!sparse && mla_kv_is_blockscaled(d))
			n += lint_at(c, "match.dtypes",
				     "'%s' is a cache format of the sparse form (per-block scales): add %s to "
				     "match.arch_class, or list a dense format (bf16, fp8_e4m3_fnuz)",
				     dt->items[i], CARD_ARCH_SPARSE);
		if (sparse && d == MLA_KV_FP8_E4M3_FNUZ)
			n += lint_at(c, "match.dtypes",
				     "'%s' (one per-tensor scale) is the dense form's cache; the sparse form (%s) "
				     "reads bf16, fp8_ds_mla, fp8_model1, fp8_ds_mla_fnuz, fp8_model1_fnuz",
				     dt->items[i], CARD_ARCH_SPARSE);
	}
	if (!sparse && (c->match.topk || c->match.extra_topk))
		n += lint_at(c, c->match.topk ? "match.topk" : "match.extra_topk",
			     "only the sparse form has a topk: add %s to match.arch_class", CARD_ARCH_SPARSE);
	if (sparse && c->match.extra_topk && !v4)
		n += lint_at(c, "match.extra_topk",
			     "the extra cache is the V4 formats' (fp8_model1, fp8_model1_fnuz), which match.dtypes "
			     "does not list");
	if (!sparse && (term = card_sparse_talk(c, &off))) {
		const char *v4term = NULL;
		int v4talk = find_term(c->text, c->text_len, sparse_v4_terms, &v4term) >= 0;
		int line, col, said_line, said_col;

		text_linecol(c->text, c->text_len, off, &said_line, &said_col);
		locate_near(c, "match.arch_class", &line, &col);
		vs_warn("%s:%d:%d: match.arch_class: the card speaks of the sparse form ('%s', line %d) but its match "
			"block selects the dense decode: add '%s' to match.arch_class in place of '%s', its cache "
			"format to match.dtypes (%s) and %s where not the format's default",
			c->path, line, col, term, said_line, CARD_ARCH_SPARSE, CARD_ARCH_DENSE,
			v4talk ? "fp8_model1; fp8_model1_fnuz on gfx942" : "fp8_ds_mla; fp8_ds_mla_fnuz on gfx942",
			v4talk ? "match.topk and match.extra_topk" : "match.topk");
	}
	return n;
}

const char *card_planned_operators(void)
{
	static char buf[256];

	return enum_list(known_operators, buf, sizeof(buf));
}

int card_operator_planned(const struct card *c)
{
	return enum_has(known_operators, nz(c->match.operator_name));
}

char *card_id_of_path(const char *path)
{
	const char *base = strrchr(path, '/');
	size_t dlen;

	base = base ? base + 1 : path;
	if (strcmp(base, "skill.md") || base == path)
		return fs_stem(path, ".md");
	/* GEAK's layout: skills/<id>/skill.md */
	dlen = (size_t)(base - path) - 1;
	while (dlen > 0 && path[dlen - 1] == '/')
		dlen--;
	{
		size_t b = dlen;

		while (b > 0 && path[b - 1] != '/')
			b--;
		return dlen > b ? strndup(path + b, dlen - b) : fs_stem(path, ".md");
	}
}

int card_lint(const struct card *c)
{
	int n = 0;
	char *stem = card_id_of_path(c->path);

	VS_CHECK_ALLOC(stem);
	n += lint_near_known(c);
	if (strcmp(nz(c->id), stem) && !strstr(nz(c->id), CARD_PLACEHOLDER) && !strstr(c->path, "/skill.md"))
		n += lint_at(c, "id",
			     "'%s' does not match the file name '%s.md' "
			     "(id must equal the file name without .md)",
			     nz(c->id), stem);
	else if (strcmp(nz(c->id), stem) && !strstr(nz(c->id), CARD_PLACEHOLDER))
		n += lint_at(c, "id",
			     "'%s' does not match the skill's directory '%s/' "
			     "(in skills/<id>/skill.md, id must equal the directory's name)",
			     nz(c->id), stem);
	free(stem);
	n += lint_placeholders(c);
	if (c->match.from_backends.count && card_operator_planned(c))
		n += lint_at(c, "match.from_backend",
			     "a list of %d backends selects several sources in GEAK's workflows; an A/B here "
			     "measures one baseline: name one",
			     c->match.from_backends.count);
	n += lint_enum(c, "scope", nz(c->scope), scope_values, 0);
	if (!card_parity_relaxed(nz(c->expects.parity), NULL))
		n += lint_enum(c, "expects.parity", nz(c->expects.parity), parity_values, 1);
	n += lint_enum(c, "validation.status", nz(c->validation.status), status_values, 0);
	n += lint_enum(c, "validation.measured.parity", nz(c->validation.measured_parity), measured_parity_values, 1);
	if (*nz(c->validation.last_verified) && !valid_date(c->validation.last_verified))
		n += lint_at(c, "validation.last_verified", "'%s' is not a real date written YYYY-MM-DD",
			     c->validation.last_verified);
	if (!strcmp(nz(c->scope), "kernel") &&
	    !(c->expects.has_isolated_speedup_min && c->expects.isolated_speedup_min > 0))
		n += lint_at(c, "expects.isolated_speedup_min", "scope 'kernel' needs a number > 0 here");
	n += lint_gate(c);
	n += lint_forced(c, "match.from_backend", c->match.from_backend);
	n += lint_forced(c, "match.to_backend", c->match.to_backend);
	n += lint_form(c);
	if (!strcmp(nz(c->scope), "e2e") && !c->expects.has_e2e_delta_min_pct)
		n += lint_at(c, "expects.e2e_delta_min_pct", "scope 'e2e' needs a number here");
	if (c->validation.typed)
		n += lint_typed(c);
	else if (!strcmp(nz(c->validation.status), "validated"))
		n += lint_validated(c);
	if (c->text)
		n += lint_body(c);
	return n ? VS_ESCHEMA : 0;
}

/* ---- hash ---------------------------------------------------------------------------------- */

/* Byte range of the whole `validation:` block (key line to end of its last content line). */
static void doc_validation_range(const struct doc *d, size_t *b, size_t *e)
{
	int i;
	const struct ynode *v = map_find(d->root, "validation", &i);

	*b = *e = d->fm_end;
	if (!v)
		return;
	*b = line_start(d, d->root->kid[i]->b);
	*e = line_after(d, v->ce);
}

/*
 * Byte range of the claims list `expects.workloads` (key line to end of its value's last line),
 * empty where expects is absent or written in flow style (a line range cannot be cut from it).
 */
static void doc_claims_range(const struct doc *d, size_t *b, size_t *e)
{
	const struct ynode *x = map_find(d->root, "expects", NULL);
	const struct ynode *v;
	int i;

	*b = *e = d->fm_end;
	if (!x || x->kind != YN_MAP || x->style == 1 || !(v = map_find(x, "workloads", &i)))
		return;
	*b = line_start(d, x->kid[i]->b);
	*e = line_after(d, v->ce);
}

/* sha256 of the front matter less the validation block (and the claims list, with claims 0), then the body. */
static int doc_hash(const struct doc *d, int claims, char hex[FS_SHA256_HEX])
{
	struct fs_sha256 h;
	size_t cut[2][2], at;
	int err = fs_sha256_init(&h);

	if (err)
		return err;
	doc_validation_range(d, &cut[0][0], &cut[0][1]);
	cut[1][0] = cut[1][1] = d->fm_end;
	if (!claims)
		doc_claims_range(d, &cut[1][0], &cut[1][1]);
	if (cut[1][0] < cut[0][0]) {
		size_t t0 = cut[0][0], t1 = cut[0][1];

		cut[0][0] = cut[1][0], cut[0][1] = cut[1][1];
		cut[1][0] = t0, cut[1][1] = t1;
	}
	at = d->fm_begin;
	for (int k = 0; k < 2; k++) {
		fs_sha256_update(&h, d->text + at, cut[k][0] - at);
		at = cut[k][1];
	}
	fs_sha256_update(&h, d->text + at, d->fm_end - at);
	fs_sha256_update(&h, d->text + d->body_begin, d->len - d->body_begin);
	fs_sha256_final(&h, hex);
	return 0;
}

static int card_hash_of(const struct card *c, int claims, char hex[65])
{
	struct doc d;
	char tmp[FS_SHA256_HEX];
	int err = doc_open(&d, c->path, c->text, c->text_len);

	if (!err)
		err = doc_hash(&d, claims, tmp);
	if (!err)
		memcpy(hex, tmp, FS_SHA256_HEX);
	doc_release(&d);
	return err;
}

int card_hash(const struct card *c, char hex[65])
{
	return card_hash_of(c, 0, hex);
}

int card_hash_check(const struct card *c, const char *stored, char hex[65], int *same)
{
	char full[65];
	int err;

	*same = 0;
	if ((err = card_hash_of(c, 0, hex)) || (err = card_hash_of(c, 1, full)))
		return err;
	/* the hash with the claims first: equal to hex where nothing is cut (no claims line, flow style) */
	*same = !strcmp(stored, full) ? 2 : !strcmp(stored, hex) ? 1 : 0;
	return 0;
}

/* ---- recording ----------------------------------------------------------------------------- */

/*
 * Formatting rules (deterministic, so recording twice gives identical bytes):
 *  - numbers: plain, the fewest significant digits (1..17) that read back to the same double,
 *    positional for exponents -6..15, else d.ddde+XX (with a dot, so YAML 1.1 readers see a float);
 *  - dates: plain YYYY-MM-DD;
 *  - strings: kept in the original quoting style where it can hold the value (double stays
 *    double; single stays single unless the value has control characters); a plain or new value
 *    is written plain when YAML reads it back as the same string, else double-quoted;
 *  - unset: "" ('' where the original was single-quoted).
 */

static void fmt_number(char out[48], double x)
{
	char e[32], *ep;
	int p, x10;

	for (p = 1; p <= 17; p++) {
		snprintf(e, sizeof(e), "%.*e", p - 1, x);
		if (strtod(e, NULL) == x)
			break;
	}
	if (p > 17)
		p = 17;
	snprintf(e, sizeof(e), "%.*e", p - 1, x);
	ep = strchr(e, 'e');
	x10 = atoi(ep + 1);
	if (x10 >= -6 && x10 <= 15) {
		int dec = p - 1 - x10;

		snprintf(out, 48, "%.*f", dec > 0 ? dec : 0, x);
	} else if (p == 1) {
		*ep = '\0';
		snprintf(out, 48, "%s.0e%s", e, ep + 1);
	} else {
		snprintf(out, 48, "%s", e);
	}
}

/* 1 if YAML reads s, written plain (also inside a flow mapping), back as the same string. */
static int plain_safe(const char *s)
{
	static const char *const words[] = {
		"null", "~", "true", "false", "yes", "no", "on", "off", "y", "n", "=", "<<", NULL,
	};
	size_t n = strlen(s);

	if (!n || strchr("-?:,[]{}#&*!|>'\"%@`+. \t", s[0]) || isdigit((unsigned char)s[0]))
		return 0;
	if (s[n - 1] == ' ' || s[n - 1] == ':')
		return 0;
	for (size_t i = 0; i < n; i++) {
		unsigned char b = (unsigned char)s[i];

		if (b < 0x20 || b == 0x7f || strchr("#,[]{}", b) || (b == ':' && s[i + 1] == ' '))
			return 0;
		if ((b == 0xC2 && (unsigned char)s[i + 1] == 0x85) ||
		    (b == 0xE2 && (unsigned char)s[i + 1] == 0x80 &&
		     ((unsigned char)s[i + 2] == 0xA8 || (unsigned char)s[i + 2] == 0xA9)) ||
		    (b == 0xEF && (unsigned char)s[i + 1] == 0xBB && (unsigned char)s[i + 2] == 0xBF))
			return 0;
	}
	for (int i = 0; words[i]; i++)
		if (!strcasecmp(s, words[i]))
			return 0;
	return 1;
}

static int single_ok(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			return 0;
		if ((p[0] == 0xC2 && p[1] == 0x85) ||
		    (p[0] == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9)) ||
		    (p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF))
			return 0;
	}
	return 1;
}

static void put_single(struct sbuf *sb, const char *s)
{
	sb_add(sb, "'", 1);
	for (; *s; s++) {
		if (*s == '\'')
			sb_add(sb, "''", 2);
		else
			sb_add(sb, s, 1);
	}
	sb_add(sb, "'", 1);
}

static void put_double(struct sbuf *sb, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char esc[8];

	sb_add(sb, "\"", 1);
	for (; *p; p++) {
		switch (*p) {
		case '"':
			sb_adds(sb, "\\\"");
			continue;
		case '\\':
			sb_adds(sb, "\\\\");
			continue;
		case '\n':
			sb_adds(sb, "\\n");
			continue;
		case '\t':
			sb_adds(sb, "\\t");
			continue;
		case '\r':
			sb_adds(sb, "\\r");
			continue;
		default:
			break;
		}
		if (*p < 0x20 || *p == 0x7f) {
			snprintf(esc, sizeof(esc), "\\x%02x", *p);
			sb_adds(sb, esc);
		} else if (p[0] == 0xC2 && p[1] == 0x85) {
			sb_adds(sb, "\\N");
			p++;
		} else if (p[0] == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9)) {
			sb_adds(sb, p[2] == 0xA8 ? "\\L" : "\\P");
			p += 2;
		} else if (p[0] == 0xEF && p[1] == 0xBB && p[2] == 0xBF) {
			sb_adds(sb, "\\uFEFF");
			p += 2;
		} else {
			sb_add(sb, p, 1);
		}
	}
	sb_add(sb, "\"", 1);
}

enum rkind { R_STR, R_DATE, R_NUM, R_MAP };

struct rval {
	const char *key;
	enum rkind kind;
	const char *s;
	int has;
	double num;
	const struct rval *sub; /* R_MAP: its keys */
	int nsub;
};

/* The text of value r, given the style of the scalar it replaces (plain for new keys). */
static void fmt_value(struct sbuf *sb, const struct rval *r, int style)
{
	char num[48];

	if (r->kind == R_NUM && r->has) {
		fmt_number(num, r->num);
		sb_adds(sb, num);
	} else if (r->kind == R_NUM || !*r->s) {
		sb_adds(sb, style == YAML_SINGLE_QUOTED_SCALAR_STYLE ? "''" : "\"\"");
	} else if (r->kind == R_DATE) {
		sb_adds(sb, r->s);
	} else if (style == YAML_DOUBLE_QUOTED_SCALAR_STYLE) {
		put_double(sb, r->s);
	} else if (style == YAML_SINGLE_QUOTED_SCALAR_STYLE && single_ok(r->s)) {
		put_single(sb, r->s);
	} else if (plain_safe(r->s)) {
		sb_adds(sb, r->s);
	} else {
		put_double(sb, r->s);
	}
}

static void fmt_flow_map(struct sbuf *sb, const struct rval *rv, int n)
{
	sb_add(sb, "{", 1);
	for (int i = 0; i < n; i++) {
		if (i)
			sb_adds(sb, ", ");
		sb_adds(sb, rv[i].key);
		sb_adds(sb, ": ");
		if (rv[i].kind == R_MAP)
			fmt_flow_map(sb, rv[i].sub, rv[i].nsub);
		else
			fmt_value(sb, &rv[i], YAML_PLAIN_SCALAR_STYLE);
	}
	sb_add(sb, "}", 1);
}

/* A key the edit adds, "key: value": a mapping value in flow style, a scalar plain where it can be. */
static void fmt_new_key(struct sbuf *sb, const struct rval *r)
{
	sb_adds(sb, r->key);
	sb_adds(sb, ": ");
	if (r->kind == R_MAP)
		fmt_flow_map(sb, r->sub, r->nsub);
	else
		fmt_value(sb, r, YAML_PLAIN_SCALAR_STYLE);
}

/* fmt_new_key() as a block mapping's line: indent spaces before it, eol after it. */
static void fmt_new_key_line(struct sbuf *sb, size_t indent, const struct rval *r, const char *eol)
{
	for (size_t s = 0; s < indent; s++)
		sb_add(sb, " ", 1);
	fmt_new_key(sb, r);
	sb_adds(sb, eol);
}

struct edit {
	size_t b, e;
	char *text;
};

struct edits {
	struct edit *v;
	int n, cap;
};

static void edits_release(struct edits *ed)
{
	for (int i = 0; i < ed->n; i++)
		free(ed->v[i].text);
	free(ed->v);
	memset(ed, 0, sizeof(*ed));
}

/* Queue replacing bytes [b, e) with sb's text (taken over, sb is reset). */
static int edits_add(struct edits *ed, size_t b, size_t e, struct sbuf *sb)
{
	if (sb->oom)
		return vs_oom();
	if (ed->n == ed->cap) {
		int ncap = ed->cap ? ed->cap * 2 : 16;
		struct edit *nv = realloc(ed->v, (size_t)ncap * sizeof(*nv));

		VS_CHECK_ALLOC(nv);
		ed->v = nv;
		ed->cap = ncap;
	}
	ed->v[ed->n].b = b;
	ed->v[ed->n].e = e;
	ed->v[ed->n].text = sb->buf ? sb->buf : strdup("");
	memset(sb, 0, sizeof(*sb));
	VS_CHECK_ALLOC(ed->v[ed->n].text);
	ed->n++;
	return 0;
}

/*
 * The bytes [*b, *e) that the new text of scalar v (value of key k) replaces. "key:" with nothing
 * after it gets the text after the colon (and a space, queued into sb, when there is none); a
 * block scalar keeps its trailing line breaks.
 */
static int value_span(const struct doc *d, const struct ynode *k, const struct ynode *v, const char *key, size_t *b,
		      size_t *e, struct sbuf *sb)
{
	*b = v->b;
	*e = v->e;
	if (v->null_empty) {
		if (!v->colon)
			return doc_err(d, VS_ESCHEMA, k->b, key, "cannot find the ':' after the key");
		if (d->text[*b - 1] == ':')
			sb_add(sb, " ", 1);
	} else if (v->style == YAML_LITERAL_SCALAR_STYLE || v->style == YAML_FOLDED_SCALAR_STYLE) {
		while (*e > *b && (d->text[*e - 1] == '\n' || d->text[*e - 1] == '\r'))
			(*e)--;
	}
	return 0;
}

/*
 * A value written before p where a '#' follows directly ("key: #c", "key: ''#c") gets a space
 * before it: a plain value would swallow the comment, and YAML wants one before any comment.
 */
static void space_before_comment(const struct doc *d, size_t p, struct sbuf *sb)
{
	if (p < d->fm_end && d->text[p] == '#')
		sb_add(sb, " ", 1);
}

/* Replace the scalar value v of key k with the text of r. */
static int edit_scalar(const struct doc *d, const struct ynode *k, const struct ynode *v, const struct rval *r,
		       const char *key, struct edits *ed)
{
	struct sbuf sb = {0};
	size_t b, e;
	int style = v->style, err;

	if (v->null_empty || style == YAML_LITERAL_SCALAR_STYLE || style == YAML_FOLDED_SCALAR_STYLE)
		style = YAML_PLAIN_SCALAR_STYLE;
	err = value_span(d, k, v, key, &b, &e, &sb);
	if (!err) {
		fmt_value(&sb, r, style);
		space_before_comment(d, e, &sb);
		err = edits_add(ed, b, e, &sb);
	}
	sb_release(&sb);
	return err;
}

/* Indentation (in spaces) of the keys of block mapping map. */
static size_t map_indent(const struct doc *d, const struct ynode *map)
{
	size_t k = map->kid[0]->b;

	return k - line_start(d, k);
}

static const char *eol_before(const struct doc *d, size_t p)
{
	return p >= 2 && d->text[p - 1] == '\n' && d->text[p - 2] == '\r' ? "\r\n" : "\n";
}

/* Insert the keys rv[idx[0..np)] into mapping map, after its last key. */
static int edit_insert(const struct doc *d, const struct ynode *map, const struct rval *rv, const int *idx, int np,
		       struct edits *ed)
{
	struct sbuf sb = {0};
	size_t pos;

	if (map->style == 1) {
		pos = map->n ? map->kid[map->n - 1]->ce : map->b + 1;
		for (int i = 0; i < np; i++) {
			if (i || map->n)
				sb_adds(&sb, ", ");
			fmt_new_key(&sb, &rv[idx[i]]);
		}
	} else {
		size_t indent = map_indent(d, map);
		const char *eol;

		pos = line_after(d, map->kid[map->n - 1]->ce);
		eol = eol_before(d, pos);
		for (int i = 0; i < np; i++)
			fmt_new_key_line(&sb, indent, &rv[idx[i]], eol);
	}
	return edits_add(ed, pos, pos, &sb);
}

static int edit_map(const struct doc *d, const struct ynode *map, const char *prefix, const struct rval *rv, int n,
		    struct edits *ed)
{
	int pending[16], np = 0, err = 0;

	for (int i = 0; !err && i < n; i++) {
		char key[CARD_PATH_MAX];
		int ki;
		const struct ynode *v = map_find(map, rv[i].key, &ki);
		struct sbuf sb = {0};

		snprintf(key, sizeof(key), "%s.%s", prefix, rv[i].key);
		if (!v) {
			pending[np++] = i;
		} else if (rv[i].kind == R_MAP && v->kind == YN_MAP) {
			err = edit_map(d, v, key, rv[i].sub, rv[i].nsub, ed);
		} else if (rv[i].kind == R_MAP && scalar_unset(v)) {
			size_t b, e;

			err = value_span(d, map->kid[ki], v, key, &b, &e, &sb);
			fmt_flow_map(&sb, rv[i].sub, rv[i].nsub);
			space_before_comment(d, e, &sb);
			if (!err)
				err = edits_add(ed, b, e, &sb);
		} else if (v->kind != YN_SCALAR || rv[i].kind == R_MAP) {
			err = doc_err(d, VS_ESCHEMA, v->b, key, "expected %s, found %s",
				      rv[i].kind == R_MAP ? "a mapping" : "a scalar", kind_name(v));
		} else {
			err = edit_scalar(d, map->kid[ki], v, &rv[i], key, ed);
		}
		sb_release(&sb);
	}
	if (!err && np)
		err = edit_insert(d, map, rv, pending, np, ed);
	return err;
}

/* The validation block for a card that has none, appended at the end of the front matter. */
static int edit_append(const struct doc *d, const struct rval *rv, int n, struct edits *ed)
{
	struct sbuf sb = {0};
	size_t indent = 2;
	const char *eol = eol_before(d, d->fm_begin);

	for (int i = 0; i + 1 < d->root->n; i += 2) {
		const struct ynode *v = d->root->kid[i + 1];

		if (v->kind == YN_MAP && v->style != 1 && v->n) {
			indent = map_indent(d, v) - map_indent(d, d->root);
			break;
		}
	}
	sb_adds(&sb, "validation:");
	sb_adds(&sb, eol);
	for (int i = 0; i < n; i++)
		fmt_new_key_line(&sb, indent, &rv[i], eol);
	return edits_add(ed, d->fm_end, d->fm_end, &sb);
}

static int check_validation_values(const struct card *c, const struct card_validation *v)
{
	char buf[256];
	const char *strs[] = {v->status,         v->last_verified,   v->gpu,          v->gen,
			      v->model,          v->measured_parity, v->artifact,     v->impl_baseline,
			      v->impl_candidate, v->spread,          v->recorded_over};

	for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++)
		if (strs[i] && !utf8_valid(strs[i], strlen(strs[i])))
			return vs_error(VS_ESCHEMA, "%s: validation: a value to record is not UTF-8", c->path);
	if (!enum_has(status_values, nz(v->status)))
		return vs_error(VS_ESCHEMA, "%s: validation.status: cannot record '%s' (one of: %s)", c->path,
				nz(v->status), enum_list(status_values, buf, sizeof(buf)));
	if (*nz(v->measured_parity) && !enum_has(measured_parity_values, v->measured_parity))
		return vs_error(VS_ESCHEMA, "%s: validation.measured.parity: cannot record '%s' (one of: %s)", c->path,
				v->measured_parity, enum_list(measured_parity_values, buf, sizeof(buf)));
	if (*nz(v->last_verified) && !valid_date(v->last_verified))
		return vs_error(VS_ESCHEMA,
				"%s: validation.last_verified: cannot record '%s' "
				"(a real date written YYYY-MM-DD)",
				c->path, v->last_verified);
	if ((v->has_isolated && !isfinite(v->measured_isolated)) || (v->has_e2e_pct && !isfinite(v->measured_e2e_pct)))
		return vs_error(VS_ESCHEMA,
				"%s: validation.measured: cannot record a number that "
				"is not finite",
				c->path);
	return 0;
}

static int same_str(const char *a, const char *b)
{
	return !strcmp(nz(a), nz(b));
}

/* Parse out and check that it holds v and the same card hash as the original. */
static int check_edited_card(const struct card *c, const char *hash, const char *out, size_t len,
			     const struct card_validation *v)
{
	struct doc d;
	struct card tmp;
	const struct ynode *vn;
	char h2[FS_SHA256_HEX];
	int quiet = vs_error_set_quiet(1), err, ok;
	const struct card_validation *w = &tmp.validation;

	memset(&tmp, 0, sizeof(tmp));
	err = doc_open(&d, c->path, out, len);
	vn = err ? NULL : map_find(d.root, "validation", NULL);
	if (!err && vn && vn->kind == YN_MAP)
		err = schema_map(&d, &tmp, vn, "validation");
	if (!err)
		err = doc_hash(&d, 0, h2);
	ok = !err && vn && vn->kind == YN_MAP && !strcmp(hash, h2) && same_str(w->status, v->status) &&
	     same_str(w->last_verified, v->last_verified) && same_str(w->gpu, v->gpu) && same_str(w->gen, v->gen) &&
	     same_str(w->model, v->model) && same_str(w->measured_parity, v->measured_parity) &&
	     same_str(w->artifact, v->artifact) && same_str(w->impl_baseline, v->impl_baseline) &&
	     same_str(w->impl_candidate, v->impl_candidate) && same_str(w->spread, v->spread) &&
	     same_str(w->recorded_over, v->recorded_over) && w->has_isolated == !!v->has_isolated &&
	     (!v->has_isolated || w->measured_isolated == v->measured_isolated) && w->has_e2e_pct == !!v->has_e2e_pct &&
	     (!v->has_e2e_pct || w->measured_e2e_pct == v->measured_e2e_pct);
	vs_error_set_quiet(quiet);
	doc_release(&d);
	card_release(&tmp);
	if (!ok)
		return vs_error(VS_EPARSE,
				"%s: validation: internal error: the recorded card does "
				"not read back the values written (nothing was written)",
				c->path);
	return 0;
}

/* The card's text with the edits applied, in order of position (insertions at one point keep their order). */
static int apply_edits(struct sbuf *res, const struct card *c, struct edits *ed)
{
	size_t at = 0;

	for (int i = 1; i < ed->n; i++) {
		struct edit x = ed->v[i];
		int j = i;

		for (; j > 0 && ed->v[j - 1].b > x.b; j--)
			ed->v[j] = ed->v[j - 1];
		ed->v[j] = x;
	}
	for (int i = 0; i < ed->n; i++) {
		if (ed->v[i].b < at)
			return vs_error(VS_EPARSE, "%s: validation: internal error: overlapping edits", c->path);
		sb_add(res, c->text + at, ed->v[i].b - at);
		sb_adds(res, ed->v[i].text);
		at = ed->v[i].e;
	}
	sb_add(res, c->text + at, c->text_len - at);
	return res->oom ? vs_oom() : 0;
}

int card_set_validation(char **out, size_t *out_len, const struct card *c, const struct card_validation *v)
{
	struct doc d;
	struct edits ed = {0};
	struct sbuf res = {0};
	const struct ynode *vn;
	char hash[FS_SHA256_HEX];
	int err;
	/* measured.spread (last of its map) and recorded_over only when set, as the implementations */
	const struct rval meas[] = {
		{"isolated", R_NUM, "", v->has_isolated, v->measured_isolated, NULL, 0},
		{"e2e_pct", R_NUM, "", v->has_e2e_pct, v->measured_e2e_pct, NULL, 0},
		{"parity", R_STR, nz(v->measured_parity), 0, 0, NULL, 0},
		{"spread", R_STR, nz(v->spread), 0, 0, NULL, 0},
	};
	const struct rval impls[] = {
		{"baseline", R_STR, nz(v->impl_baseline), 0, 0, NULL, 0},
		{"candidate", R_STR, nz(v->impl_candidate), 0, 0, NULL, 0},
	};
	const int has_impls = *nz(v->impl_baseline) || *nz(v->impl_candidate);
	const struct rval over = {"recorded_over", R_STR, nz(v->recorded_over), 0, 0, NULL, 0};
	struct rval rv[9] = {
		{"status", R_STR, nz(v->status), 0, 0, NULL, 0},
		{"last_verified", R_DATE, nz(v->last_verified), 0, 0, NULL, 0},
		{"gpu", R_STR, nz(v->gpu), 0, 0, NULL, 0},
		{"gen", R_STR, nz(v->gen), 0, 0, NULL, 0},
		{"model", R_STR, nz(v->model), 0, 0, NULL, 0},
		{"measured", R_MAP, "", 0, 0, meas, (int)(sizeof(meas) / sizeof(meas[0]))},
		{"artifact", R_STR, nz(v->artifact), 0, 0, NULL, 0},
	};
	int nrv = 7, had_spread = 0, had_over = 0;

	err = doc_open(&d, c->path, c->text, c->text_len);
	if (err)
		goto done;
	vn = map_find(d.root, "validation", NULL);
	if (vn && vn->kind == YN_MAP) {
		const struct ynode *mn = map_find(vn, "measured", NULL);

		had_spread = mn && mn->kind == YN_MAP && map_find(mn, "spread", NULL);
		had_over = map_find(vn, "recorded_over", NULL) != NULL;
	}
	/* a spread or recorded_over the card holds is cleared ("") when this record has none */
	rv[5].nsub -= !*nz(v->spread) && !had_spread;
	if (has_impls)
		rv[nrv++] = (struct rval){"implementations",
					  R_MAP,
					  "",
					  0,
					  0,
					  impls,
					  (int)(sizeof(impls) / sizeof(impls[0]))};
	if (*nz(v->recorded_over) || had_over)
		rv[nrv++] = over;
	err = check_validation_values(c, v);
	if (err)
		goto done;
	err = doc_hash(&d, 0, hash);
	if (err)
		goto done;
	if (d.root->style == 1) {
		err = doc_err(&d, VS_ESCHEMA, d.root->b, "front matter",
			      "the front matter is one flow mapping {...}; write it as key: value "
			      "lines to record into it");
		goto done;
	}
	vn = map_find(d.root, "validation", NULL);
	if (!vn)
		err = edit_append(&d, rv, nrv, &ed);
	else if (vn->kind != YN_MAP)
		err = doc_err(&d, VS_ESCHEMA, vn->b, "validation", "expected a mapping of keys, found %s",
			      kind_name(vn));
	else
		err = edit_map(&d, vn, "validation", rv, nrv, &ed);
	if (err || (err = apply_edits(&res, c, &ed)))
		goto done;
	err = check_edited_card(c, hash, res.buf, res.len, v);
	if (err)
		goto done;
	*out = res.buf;
	*out_len = res.len;
	memset(&res, 0, sizeof(res));
done:
	sb_release(&res);
	edits_release(&ed);
	doc_release(&d);
	return err;
}

/* Two records' per_kv_dtype hold the same dtypes (in order) and numbers. */
static int kv_same(const struct card_workload_record *a, const struct card_workload_record *b)
{
	if (a->nkv != b->nkv)
		return 0;
	for (int k = 0; k < a->nkv; k++)
		if (strcmp(nz(a->kv[k].kv_dtype), nz(b->kv[k].kv_dtype)) || a->kv[k].speedup != b->kv[k].speedup ||
		    a->kv[k].lo != b->kv[k].lo || a->kv[k].hi != b->kv[k].hi)
			return 0;
	return 1;
}

int card_set_workload_record(char **out, size_t *out_len, const struct card *c, const struct card_workload_record *r)
{
	struct doc d;
	struct edits ed = {0};
	struct sbuf res = {0};
	struct card tmp;
	const struct ynode *vn;
	const struct card_workload_record *back;
	char hash[FS_SHA256_HEX], h2[FS_SHA256_HEX];
	int err, quiet;
	/* per_kv_dtype, after ci95_hi, only for a plan of several kv dtypes */
	struct rval kv_num[CARD_MAX_KV_DTYPES][3], kv_rv[CARD_MAX_KV_DTYPES];
	const struct rval fields_rv[] = {
		{"status", R_STR, nz(r->status), 0, 0, NULL, 0},
		{"last_verified", R_DATE, nz(r->last_verified), 0, 0, NULL, 0},
		{"gpu", R_STR, nz(r->gpu), 0, 0, NULL, 0},
		{"speedup", R_NUM, "", r->has_speedup, r->speedup, NULL, 0},
		{"ci95_lo", R_NUM, "", r->has_speedup, r->speedup_lo, NULL, 0},
		{"ci95_hi", R_NUM, "", r->has_speedup, r->speedup_hi, NULL, 0},
		{"per_kv_dtype", R_MAP, "", 0, 0, kv_rv, r->nkv},
		{"isolated", R_NUM, "", r->has_isolated, r->isolated, NULL, 0},
		{"parity", R_STR, nz(r->parity), 0, 0, NULL, 0},
		{"artifact", R_STR, nz(r->artifact), 0, 0, NULL, 0},
	};
	struct rval fields_used[sizeof(fields_rv) / sizeof(fields_rv[0])];
	int nfields = 0;
	struct rval rec = {r->key, R_MAP, "", 0, 0, fields_used, 0};
	/* a card with no validation block gets one whose tier status is draft (what its absence
	 * means), the workload record beside it: a block without status does not parse */
	const struct rval fresh[] = {{"status", R_STR, "draft", 0, 0, NULL, 0},
				     {"workloads", R_MAP, "", 0, 0, &rec, 1}};
	const struct rval *top = &fresh[1];

	memset(&tmp, 0, sizeof(tmp));
	for (size_t i = 0; i < sizeof(fields_rv) / sizeof(fields_rv[0]); i++)
		if (fields_rv[i].kind != R_MAP || r->nkv > 0)
			fields_used[nfields++] = fields_rv[i];
	rec.nsub = nfields;
	for (int k = 0; k < r->nkv && k < CARD_MAX_KV_DTYPES; k++) {
		const struct card_kv_speedup *s = &r->kv[k];

		kv_num[k][0] = (struct rval){"speedup", R_NUM, "", 1, s->speedup, NULL, 0};
		kv_num[k][1] = (struct rval){"ci95_lo", R_NUM, "", 1, s->lo, NULL, 0};
		kv_num[k][2] = (struct rval){"ci95_hi", R_NUM, "", 1, s->hi, NULL, 0};
		kv_rv[k] = (struct rval){s->kv_dtype, R_MAP, "", 0, 0, kv_num[k], 3};
		if (!s->kv_dtype || !*s->kv_dtype || !plain_safe(s->kv_dtype) ||
		    !(isfinite(s->speedup) && isfinite(s->lo) && isfinite(s->hi)))
			return vs_error(VS_ESCHEMA, "%s: validation.workloads: cannot record '%s' (per_kv_dtype %d)",
					c->path, nz(r->key), k);
	}
	if (!r->key || !strchr(r->key, '@') || !plain_safe(r->key) || !enum_has(status_values, nz(r->status)) ||
	    !strcmp(nz(r->status), "draft") || (*nz(r->last_verified) && !valid_date(r->last_verified)) ||
	    (r->has_speedup && !(isfinite(r->speedup) && isfinite(r->speedup_lo) && isfinite(r->speedup_hi))) ||
	    (r->has_isolated && !isfinite(r->isolated)) || r->nkv < 0 || r->nkv > CARD_MAX_KV_DTYPES)
		return vs_error(VS_ESCHEMA, "%s: validation.workloads: cannot record '%s' (%s)", c->path, nz(r->key),
				nz(r->status));
	if ((err = doc_open(&d, c->path, c->text, c->text_len)))
		return err;
	if ((err = doc_hash(&d, 0, hash)))
		goto done;
	if (d.root->style == 1) {
		err = doc_err(&d, VS_ESCHEMA, d.root->b, "front matter",
			      "the front matter is one flow mapping {...}; write it as key: value lines to record into "
			      "it");
		goto done;
	}
	vn = map_find(d.root, "validation", NULL);
	if (!vn)
		err = edit_append(&d, fresh, 2, &ed);
	else if (vn->kind != YN_MAP)
		err = doc_err(&d, VS_ESCHEMA, vn->b, "validation", "expected a mapping of keys, found %s",
			      kind_name(vn));
	else
		err = edit_map(&d, vn, "validation", top, 1, &ed);
	if (err || (err = apply_edits(&res, c, &ed)))
		goto done;
	/* it must read back: the same hash, the record as given */
	quiet = vs_error_set_quiet(1);
	err = card_parse(&tmp, c->path, res.buf, res.len);
	if (!err)
		err = card_hash(&tmp, h2);
	vs_error_set_quiet(quiet);
	back = err ? NULL : card_workload_record_find(&tmp, r->key);
	if (!back || strcmp(hash, h2) || strcmp(nz(back->status), nz(r->status)) ||
	    strcmp(nz(back->artifact), nz(r->artifact)) || back->has_speedup != r->has_speedup ||
	    (r->has_speedup &&
	     (back->speedup != r->speedup || back->speedup_lo != r->speedup_lo || back->speedup_hi != r->speedup_hi)) ||
	    !kv_same(back, r)) {
		err = vs_error(VS_EPARSE,
			       "%s: validation.workloads.%s: internal error: the recorded card does not read back the "
			       "values written (nothing was written)",
			       c->path, r->key);
		goto done;
	}
	*out = res.buf;
	*out_len = res.len;
	memset(&res, 0, sizeof(res));
done:
	card_release(&tmp);
	sb_release(&res);
	edits_release(&ed);
	doc_release(&d);
	return err;
}

int card_parity_relaxed(const char *parity, double *tol)
{
	char *end = NULL;
	double t;

	if (!parity || strncmp(parity, "relaxed(", 8))
		return 0;
	errno = 0;
	t = strtod(parity + 8, &end);
	if (errno || end == parity + 8 || strcmp(end, ")") || !(t > 0) || !(t <= CARD_PARITY_RELAXED_MAX))
		return 0;
	if (tol)
		*tol = t;
	return 1;
}

const char *card_backend_config(const char *backend, size_t *impl_len)
{
	const char *at = backend ? strchr(backend, '@') : NULL;

	if (impl_len)
		*impl_len = at ? (size_t)(at - backend) : backend ? strlen(backend) : 0;
	return at ? at + 1 : NULL;
}

int card_backend_is_family(const char *want)
{
	size_t n;

	card_backend_config(want, &n);
	return want && n && !memchr(want, '.', n);
}

int card_backend_matches(const char *want, const char *impl)
{
	const char *wc, *ic;
	size_t n, k;

	if (!want || !*want)
		return 1;
	if (!impl)
		return 0;
	wc = card_backend_config(want, &n);
	ic = card_backend_config(impl, &k);
	if (!wc != !ic || (wc && strcmp(wc, ic)))
		return 0;
	if (!card_backend_is_family(want))
		return n == k && !strncmp(want, impl, n);
	return k > n + 1 && !strncmp(impl, want, n) && impl[n] == '.';
}
