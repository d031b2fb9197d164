/* library.c - the cards of a skill library in both layouts, and GEAK's index.yaml (library.h). */
#include "library.h"

#include "card.h"
#include "evaldir.h"
#include "fsutil.h"
#include "vs_error.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

void library_cards_release(struct library_cards *l)
{
	if (!l)
		return;
	for (int i = 0; i < l->count; i++)
		free(l->paths[i]);
	free(l->paths);
	memset(l, 0, sizeof(*l));
}

/* Sort by the id a path gives (card_id_of_path()), then by path. */
static int cmp_card(const void *a, const void *b)
{
	char *ia = card_id_of_path(*(char *const *)a), *ib = card_id_of_path(*(char *const *)b);
	int r = ia && ib ? strcmp(ia, ib) : 0;

	free(ia);
	free(ib);
	return r ? r : strcmp(*(char *const *)a, *(char *const *)b);
}

static int cards_add(struct library_cards *l, char *path)
{
	char **np;

	if (!path)
		return vs_oom();
	np = realloc(l->paths, (size_t)(l->count + 1) * sizeof(*np));
	if (!np) {
		free(path);
		return vs_oom();
	}
	l->paths = np;
	l->paths[l->count++] = path;
	return 0;
}

int library_list(struct library_cards *out, const char *skills_dir)
{
	struct library_cards l = {0};
	DIR *d = opendir(skills_dir);
	struct dirent *de;
	int err = 0;

	if (!d)
		return vs_error(VS_EIO, "cannot open the skills directory '%s'", skills_dir);
	while (!err && (de = readdir(d))) {
		size_t n = strlen(de->d_name);
		char *path;

		if (de->d_name[0] == '.')
			continue;
		path = fs_join(skills_dir, de->d_name);
		if (!path) {
			err = vs_oom();
			break;
		}
		if (n > 3 && !strcmp(de->d_name + n - 3, ".md") && !fs_is_dir(path)) {
			err = cards_add(&l, path);
			continue;
		}
		if (fs_is_dir(path)) {
			char *card = fs_join(path, "skill.md");

			if (card && fs_exists(card) && !fs_is_dir(card))
				err = cards_add(&l, card);
			else if (!card)
				err = vs_oom();
			else
				free(card);
		}
		free(path);
	}
	closedir(d);
	if (!err && l.count)
		qsort(l.paths, (size_t)l.count, sizeof(*l.paths), cmp_card);
	for (int i = 1; !err && i < l.count; i++) {
		char *a = card_id_of_path(l.paths[i - 1]), *b = card_id_of_path(l.paths[i]);

		if (!a || !b)
			err = vs_oom();
		else if (!strcmp(a, b))
			err = vs_error(VS_ESCHEMA, "'%s' and '%s' both hold card '%s': keep one layout per skill",
				       l.paths[i - 1], l.paths[i], a);
		free(a);
		free(b);
	}
	if (err) {
		library_cards_release(&l);
		return err;
	}
	*out = l;
	return 0;
}

int library_resolve(char **path, const char *skills_dir, const char *arg)
{
	char *flat = NULL, *nested = NULL, *dir_card = NULL;
	int has_flat, has_nested, err = 0;

	if (fs_exists(arg) && !fs_is_dir(arg)) {
		*path = strdup(arg);
		return *path ? 0 : vs_oom();
	}
	if (fs_is_dir(arg)) {
		dir_card = fs_join(arg, "skill.md");
		if (!dir_card)
			return vs_oom();
		if (fs_exists(dir_card)) {
			*path = dir_card;
			return 0;
		}
		free(dir_card);
		return vs_error(VS_ENOTFOUND, "'%s' is a directory without skill.md: not a skill", arg);
	}
	if (strchr(arg, '/') || (strlen(arg) > 3 && !strcmp(arg + strlen(arg) - 3, ".md"))) {
		/* a path, not an id: the card loader says what is wrong with it */
		*path = strdup(arg);
		return *path ? 0 : vs_oom();
	}
	flat = fs_printf("%s/%s.md", skills_dir, arg);
	nested = fs_printf("%s/%s/skill.md", skills_dir, arg);
	if (!flat || !nested) {
		err = vs_oom();
		goto done;
	}
	has_flat = fs_exists(flat);
	has_nested = fs_exists(nested);
	if (has_flat && has_nested)
		err = vs_error(VS_ESCHEMA, "'%s' and '%s' both hold card '%s': keep one layout per skill", flat, nested,
			       arg);
	else if (!has_flat && !has_nested)
		err = vs_error(VS_ENOTFOUND,
			       "no card '%s': neither '%s' nor '%s' exists (run at the library root, "
			       "or give --skills-dir)",
			       arg, nested, flat);
	else {
		*path = has_flat ? flat : nested;
		if (has_flat)
			flat = NULL;
		else
			nested = NULL;
	}
done:
	free(flat);
	free(nested);
	return err;
}

int library_index_root(char **root, const char *card_path)
{
	char *dir = fs_dirname(card_path), *skills = NULL, *r = NULL, *index = NULL;
	const char *base;
	int found = 0;

	if (!dir)
		return vs_oom();
	base = strrchr(card_path, '/');
	base = base ? base + 1 : card_path;
	/* skills/<id>/skill.md: the skills dir is one level further up */
	skills = !strcmp(base, "skill.md") ? fs_dirname(dir) : strdup(dir);
	r = skills ? fs_dirname(skills) : NULL;
	index = r ? fs_join(r, "index.yaml") : NULL;
	if (!index) {
		found = vs_oom();
		goto done;
	}
	if (fs_exists(index)) {
		*root = r;
		r = NULL;
		found = 1;
	}
done:
	free(dir);
	free(skills);
	free(r);
	free(index);
	return found;
}

/* ---- index.yaml ----------------------------------------------------------------------------- */

struct sbuf {
	char *buf;
	size_t len, cap;
	int oom;
};

static void sb_add(struct sbuf *s, const char *p, size_t n)
{
	if (s->oom)
		return;
	if (s->len + n + 1 > s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 4096;
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

static void sb_puts(struct sbuf *s, const char *p)
{
	sb_add(s, p, strlen(p));
}

static void sb_indent(struct sbuf *s, int n)
{
	for (int i = 0; i < n; i++)
		sb_add(s, " ", 1);
}

/*
 * Whether a string can be written plain and read back as the same string (the rules of PyYAML's
 * emitter, which wrote GEAK's index, for the values cards hold): no indicator first, no ": " or
 * " #", no space at either end, and not a word or number YAML would resolve to another type.
 */
static int plain_string_ok(const char *s)
{
	static const char *const words[] = {"y",  "Y",    "yes",  "Yes",  "YES",   "n",     "N",     "no", "No",
					    "NO", "true", "True", "TRUE", "false", "False", "FALSE", "on", "On",
					    "ON", "off",  "Off",  "OFF",  "null",  "Null",  "NULL",  "~",  NULL};
	size_t n = strlen(s);

	if (!n || strchr("-?:,[]{}#&*!|>'\"%@` \t", s[0]) || s[n - 1] == ' ' || s[n - 1] == ':')
		return 0;
	if (strstr(s, ": ") || strstr(s, " #") || strpbrk(s, "\n\r\t"))
		return 0;
	for (int i = 0; words[i]; i++)
		if (!strcmp(s, words[i]))
			return 0;
	if (isdigit((unsigned char)s[0]) || ((s[0] == '+' || s[0] == '.') && n > 1))
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] >= 0x7f)
			return 0;
	return 1;
}

static void put_scalar(struct sbuf *sb, const yaml_node_t *n)
{
	const char *v = (const char *)n->data.scalar.value;
	size_t len = n->data.scalar.length;

	if (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE) {
		/* numbers, words and names as written; an empty plain value is null */
		if (!len)
			sb_puts(sb, "null");
		else
			sb_add(sb, v, len);
		return;
	}
	if (len && plain_string_ok(v)) {
		sb_add(sb, v, len);
		return;
	}
	if (!strpbrk(v, "\n\r\\\"")) {
		sb_add(sb, "'", 1);
		for (const char *p = v; *p; p++) {
			if (*p == '\'')
				sb_puts(sb, "''"); /* a quote is doubled */
			else
				sb_add(sb, p, 1);
		}
		sb_add(sb, "'", 1);
		return;
	}
	sb_add(sb, "\"", 1);
	for (const char *p = v; *p; p++) {
		if (*p == '\n')
			sb_puts(sb, "\\n");
		else if (*p == '\r')
			sb_puts(sb, "\\r");
		else if (*p == '"' || *p == '\\') {
			sb_add(sb, "\\", 1);
			sb_add(sb, p, 1);
		} else {
			sb_add(sb, p, 1);
		}
	}
	sb_add(sb, "\"", 1);
}

static void put_node(struct sbuf *sb, yaml_document_t *doc, yaml_node_t *n, int indent);

/* The value of a mapping key written after "key:" (a newline and a nested block, or " scalar"). */
static void put_value(struct sbuf *sb, yaml_document_t *doc, yaml_node_t *v, int indent)
{
	if (!v || v->type == YAML_SCALAR_NODE) {
		sb_add(sb, " ", 1);
		if (v)
			put_scalar(sb, v);
		else
			sb_puts(sb, "null");
		sb_add(sb, "\n", 1);
	} else if (v->type == YAML_MAPPING_NODE && v->data.mapping.pairs.start == v->data.mapping.pairs.top) {
		sb_puts(sb, " {}\n");
	} else if (v->type == YAML_SEQUENCE_NODE && v->data.sequence.items.start == v->data.sequence.items.top) {
		sb_puts(sb, " []\n");
	} else {
		sb_add(sb, "\n", 1);
		/* PyYAML writes a list under a key at the key's own indent */
		put_node(sb, doc, v, v->type == YAML_SEQUENCE_NODE ? indent : indent + 2);
	}
}

/* A block mapping or sequence at indent; each line starts with its indent (the first too). */
static void put_node(struct sbuf *sb, yaml_document_t *doc, yaml_node_t *n, int indent)
{
	if (n->type == YAML_MAPPING_NODE) {
		for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
			yaml_node_t *k = yaml_document_get_node(doc, p->key);

			sb_indent(sb, indent);
			if (k && k->type == YAML_SCALAR_NODE)
				put_scalar(sb, k);
			sb_add(sb, ":", 1);
			put_value(sb, doc, yaml_document_get_node(doc, p->value), indent);
		}
	} else if (n->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
			yaml_node_t *v = yaml_document_get_node(doc, *it);

			sb_indent(sb, indent);
			sb_add(sb, "-", 1);
			if (v && v->type != YAML_SCALAR_NODE) {
				struct sbuf inner = {0};

				/* "- " then the nested block with its first indent dropped */
				put_node(&inner, doc, v, indent + 2);
				sb_add(sb, " ", 1);
				if (inner.buf)
					sb_puts(sb, inner.buf + indent + 2);
				sb->oom |= inner.oom;
				free(inner.buf);
			} else {
				sb_add(sb, " ", 1);
				if (v)
					put_scalar(sb, v);
				sb_add(sb, "\n", 1);
			}
		}
	} else {
		sb_indent(sb, indent);
		put_scalar(sb, n);
		sb_add(sb, "\n", 1);
	}
}

static yaml_node_t *map_get(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);

		if (k && k->type == YAML_SCALAR_NODE && !strcmp((const char *)k->data.scalar.value, key))
			return yaml_document_get_node(doc, p->value);
	}
	return NULL;
}

/*
 * The evidence-backed status of a card for the index: draft and failed as written; validated only
 * when its eval dir verifies and proves the block, else stale.
 */
static const char *index_status(const struct card *c)
{
	struct evidence e;
	int status, quiet, bad;
	const char *s = c->validation.status && *c->validation.status ? c->validation.status : "draft";

	if (strcmp(s, "validated"))
		return s;
	if (c->validation.typed)
		return "stale";
	memset(&e, 0, sizeof(e));
	quiet = vs_error_set_quiet(1);
	bad = evidence_load(&e, &status, c->validation.artifact, c) ||
	      evidence_check_claims(&c->validation, &e, c->path, NULL, 0);
	vs_error_set_quiet(quiet);
	evidence_release(&e);
	return bad ? "stale" : "validated";
}

/* One entry of the index for the card at path (file: its path relative to root). */
static int index_entry(struct sbuf *sb, const char *path, const char *file)
{
	struct card c;
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root, *n;
	int err, have_doc = 0, have_parser = 0;

	memset(&c, 0, sizeof(c));
	if ((err = card_load(&c, path)))
		return err;
	if (!yaml_parser_initialize(&parser)) {
		err = vs_oom();
		goto done;
	}
	have_parser = 1;
	yaml_parser_set_input_string(&parser, (const unsigned char *)c.text + c.fm_begin, c.fm_end - c.fm_begin);
	if (!yaml_parser_load(&parser, &doc)) {
		err = vs_error(VS_EPARSE, "%s: front matter: %s", path, parser.problem ? parser.problem : "not YAML");
		goto done;
	}
	have_doc = 1;
	root = yaml_document_get_root_node(&doc);
	sb_puts(sb, "- id: ");
	sb_puts(sb, c.id);
	sb_puts(sb, "\n  file: ");
	sb_puts(sb, file);
	sb_puts(sb, "\n  scope: ");
	sb_puts(sb, c.scope);
	sb_puts(sb, "\n");
	if ((n = map_get(&doc, root, "match"))) {
		sb_puts(sb, "  match:");
		put_value(sb, &doc, n, 2);
	}
	if ((n = map_get(&doc, root, "expects"))) {
		sb_puts(sb, "  expects:");
		put_value(sb, &doc, n, 2);
	}
	n = map_get(&doc, root, "runtime");
	if (n && !(n->type == YAML_MAPPING_NODE && n->data.mapping.pairs.start == n->data.mapping.pairs.top) &&
	    !(n->type == YAML_SCALAR_NODE && !n->data.scalar.length)) {
		sb_puts(sb, "  runtime:");
		put_value(sb, &doc, n, 2);
	}
	sb_puts(sb, "  validation_status: ");
	sb_puts(sb, index_status(&c));
	sb_puts(sb, "\n");
	n = map_get(&doc, map_get(&doc, root, "enforcement"), "mode");
	if (n && n->type == YAML_SCALAR_NODE && n->data.scalar.length) {
		sb_puts(sb, "  enforcement:\n    mode: ");
		put_scalar(sb, n);
		sb_puts(sb, "\n");
	}
done:
	if (have_doc)
		yaml_document_delete(&doc);
	if (have_parser)
		yaml_parser_delete(&parser);
	card_release(&c);
	return err;
}

static const char index_header[] =
	"# index.yaml — expert_skills selector (AUTO-MAINTAINED by validate_skill --record and --reindex).\n"
	"# Regenerate with:  validate_skill --reindex\n"
	"# NOT a ranking. Filter by (operator, gen, arch_class, [from->to], status==validated) -> MEASURE.\n"
	"# Only 'validated' skills are auto-applied by the workflows (advisory priors, never override A/B).\n"
	"# validation_status is the evidence-backed one: a validated block typed without a verified eval dir\n"
	"# is indexed as stale (re-measure, then validate_skill SKILL_ID --record --artifact EVAL_DIR).\n"
	"# enforcement.mode==strict marks a MANDATE skill: when it matches, the recipe MUST be followed.\n"
	"\n"
	"schema: {id, file, scope, match, expects, validation_status, enforcement?}\n"
	"\n"
	"skills:";

int library_reindex(const char *root, int *ncards)
{
	struct library_cards l = {0};
	struct sbuf sb = {0};
	char *skills = fs_join(root, "skills"), *index = fs_join(root, "index.yaml");
	size_t rlen = strlen(root);
	int err, bad = 0;

	if (!skills || !index) {
		err = vs_oom();
		goto done;
	}
	if ((err = library_list(&l, skills)))
		goto done;
	sb_puts(&sb, index_header);
	sb_puts(&sb, l.count ? "\n" : " []\n");
	for (int i = 0; i < l.count; i++) {
		const char *file = l.paths[i] + rlen + (root[rlen - 1] == '/' ? 0 : 1);
		int e = index_entry(&sb, l.paths[i], file);

		if (e && !bad)
			err = e;
		bad += e != 0;
	}
	if (bad) {
		vs_error(err, "%s: not written: %d card%s of %s do%s not load (above)", index, bad, bad == 1 ? "" : "s",
			 skills, bad == 1 ? "es" : "");
		goto done;
	}
	if (sb.oom) {
		err = vs_oom();
		goto done;
	}
	if ((err = fs_write_atomic(index, sb.buf, sb.len, 0644)))
		goto done;
	if (ncards)
		*ncards = l.count;
done:
	free(sb.buf);
	free(skills);
	free(index);
	library_cards_release(&l);
	return err;
}
