#include "runtime.h"
#include "card.h"
#include "vs_error.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

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

void runtime_release(struct runtime_contract *rt)
{
	for (int i = 0; rt && i < rt->n; i++) {
		free(rt->pkg[i]);
		free(rt->spec[i]);
	}
	if (rt) {
		free(rt->pkg);
		free(rt->spec);
		memset(rt, 0, sizeof(*rt));
	}
}

/* Compare two versions by their leading numeric components: <0, 0, >0. */
static int version_cmp(const char *a, const char *b)
{
	for (int k = 0; k < 8; k++) {
		long x = 0, y = 0;

		if (isdigit((unsigned char)*a))
			x = strtol(a, (char **)&a, 10);
		if (isdigit((unsigned char)*b))
			y = strtol(b, (char **)&b, 10);
		if (x != y)
			return x < y ? -1 : 1;
		a += *a == '.' && isdigit((unsigned char)a[1]);
		b += *b == '.' && isdigit((unsigned char)b[1]);
		if (!isdigit((unsigned char)*a) && !isdigit((unsigned char)*b))
			break;
	}
	return 0;
}

/*
 * Whether version v meets constraint spec ("==x", "!=x", ">=x", "<=x", ">x", "<x", comma-separated):
 * 1 it does, 0 it does not, -1 spec does not parse.
 */
static int version_meets(const char *v, const char *spec)
{
	const char *s = spec;
	int ok = 1, clauses = 0;

	while (*s) {
		char op[3] = "", ver[64];
		size_t n;
		int c;

		while (*s == ' ' || *s == ',')
			s++;
		if (!*s)
			break;
		for (n = 0; n < 2 && strchr("=!<>", s[n]); n++)
			op[n] = s[n];
		op[n] = '\0';
		s += n;
		while (*s == ' ')
			s++;
		for (n = 0; s[n] && s[n] != ',' && s[n] != ' ' && n + 1 < sizeof(ver); n++)
			ver[n] = s[n];
		ver[n] = '\0';
		s += n;
		if (!n || !isdigit((unsigned char)ver[0]) || !*op)
			return -1;
		c = version_cmp(v, ver);
		if (!strcmp(op, "=="))
			ok &= c == 0;
		else if (!strcmp(op, "!="))
			ok &= c != 0;
		else if (!strcmp(op, ">="))
			ok &= c >= 0;
		else if (!strcmp(op, "<="))
			ok &= c <= 0;
		else if (!strcmp(op, ">"))
			ok &= c > 0;
		else if (!strcmp(op, "<"))
			ok &= c < 0;
		else
			return -1;
		clauses++;
	}
	return clauses ? ok : -1;
}

int runtime_read(struct runtime_contract *rt, const struct card *c)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *map;
	int err = 0;

	memset(rt, 0, sizeof(*rt));
	if (!yaml_parser_initialize(&parser))
		return vs_oom();
	yaml_parser_set_input_string(&parser, (const unsigned char *)c->text + c->fm_begin, c->fm_end - c->fm_begin);
	if (!yaml_parser_load(&parser, &doc)) {
		yaml_parser_delete(&parser);
		return vs_error(VS_EPARSE, "%s: front matter: %s", c->path,
				parser.problem ? parser.problem : "YAML error");
	}
	map = map_get(&doc, yaml_document_get_root_node(&doc), "runtime");
	if (map && !(map->type == YAML_SCALAR_NODE && !map->data.scalar.length) && map->type != YAML_MAPPING_NODE)
		err = vs_error(VS_ESCHEMA, "%s: runtime: a mapping of package names to version constraints", c->path);
	for (yaml_node_pair_t *pr = map && map->type == YAML_MAPPING_NODE ? map->data.mapping.pairs.start : NULL;
	     !err && pr && pr < map->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = yaml_document_get_node(&doc, pr->key), *v = yaml_document_get_node(&doc, pr->value);
		char **np, **ns;

		if (!k || !v || k->type != YAML_SCALAR_NODE || v->type != YAML_SCALAR_NODE ||
		    version_meets("0", (const char *)v->data.scalar.value) < 0) {
			err = vs_error(VS_ESCHEMA,
				       "%s: runtime.%s: '%s' is not a version constraint (clauses of ==, !=, >=, <=, "
				       ">, < "
				       "and a dotted version, comma-separated: \">=3.5,<3.7\")",
				       c->path,
				       k && k->type == YAML_SCALAR_NODE ? (const char *)k->data.scalar.value : "?",
				       v && v->type == YAML_SCALAR_NODE ? (const char *)v->data.scalar.value :
									  "(not a string)");
			break;
		}
		np = realloc(rt->pkg, (size_t)(rt->n + 1) * sizeof(*np));
		if (np)
			rt->pkg = np;
		ns = realloc(rt->spec, (size_t)(rt->n + 1) * sizeof(*ns));
		if (ns)
			rt->spec = ns;
		if (!np || !ns) {
			err = vs_oom();
			break;
		}
		rt->pkg[rt->n] = strdup((const char *)k->data.scalar.value);
		rt->spec[rt->n] = strdup((const char *)v->data.scalar.value);
		rt->n++;
		if (!rt->pkg[rt->n - 1] || !rt->spec[rt->n - 1])
			err = vs_oom();
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (err)
		runtime_release(rt);
	return err;
}

int runtime_check(char *line, size_t cap, const struct runtime_contract *rt, const cJSON *versions)
{
	line[0] = '\0';
	for (int i = 0; i < rt->n; i++) {
		const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(versions, rt->pkg[i]));
		size_t at = strlen(line);

		if (v && version_meets(v, rt->spec[i]) == 0) {
			snprintf(line, cap, "runtime %s '%s' does not hold for %s %s", rt->pkg[i], rt->spec[i],
				 rt->pkg[i], v);
			return 1;
		}
		if (v)
			snprintf(line + at, cap - at, "%s%s %s: %s holds", at ? "; " : "", rt->pkg[i], rt->spec[i], v);
		else
			snprintf(line + at, cap - at, "%s%s %s: not checked (no implementation that ran records it)",
				 at ? "; " : "", rt->pkg[i], rt->spec[i]);
	}
	return 0;
}
