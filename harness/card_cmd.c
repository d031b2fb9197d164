/* card_cmd.c - `--static` for one card: card_load() then card_lint(). */
#include "card_cmd.h"

#include "card.h"
#include "vs_error.h"

#include <stdio.h>
#include <string.h>
#include <yaml.h>

int card_check_file(const char *path)
{
	struct card c;
	int err;

	memset(&c, 0, sizeof(c));
	err = card_load(&c, path);
	if (!err)
		err = card_lint(&c);
	if (!err) {
		char planned[320] = "";

		if (!card_operator_planned(&c))
			snprintf(planned, sizeof(planned), " (not planned here: operator '%s'; this tool plans %s)",
				 c.match.operator_name, card_planned_operators());
		printf("%s: ok%s%s\n", path, planned,
		       c.validation.typed ? " (typed validation block: read, never trusted)" : "");
	}
	card_release(&c);
	return err;
}

/* What the plan does with the field key at path (dotted) holding value. */
static const char *field_key_fate(const char *path, const char *value, const struct card_plan_facts *facts)
{
	if (!strcmp(path, "enforcement.unittest.require.capture_safe"))
		return strcmp(value, "1") && strcmp(value, "true") ? "not checked: it does not require capture safety" :
		       facts->capture_required ? "honored: every implementation must pass the plan's capture gate" :
						 "not checked: a CPU plan has no graph capture (the GPU plans' "
						 "capture gate is required)";
	if (!strcmp(path, "enforcement.unittest.require.correctness"))
		return facts->parity_required ? "honored: parity against the oracle gates every task of the plan" :
						"not checked: the card's expects.parity is advisory";
	if (!strncmp(path, "enforcement.unittest.", 21))
		return "not checked: the case set is the plan's tier, generated and checked by this tool, not the "
		       "skill's own scripts";
	if (!strncmp(path, "enforcement.optimization.", 25))
		return "not checked: a recipe the authoring workflow follows; a measurement sees its result only";
	if (!strcmp(path, "enforcement.targets.per_op_e2e_delta_pct_min"))
		return facts->e2e_stage ? "not checked as a gate: the e2e stage measures and reports the model step's "
					  "e2e_pct; the gate is expects.e2e_delta_min_pct of a scope: e2e card" :
					  "not checked: the plan has no e2e stage (--emit-plan --e2e adds it)";
	if (!strcmp(path, "enforcement.targets.reweight_regime"))
		return "not checked: this tool weights no regime (each task counts once in the geometric mean)";
	if (!strncmp(path, "enforcement.", 12))
		return "not checked: it binds the consuming workflow, not a measurement";
	if (!strncmp(path, "match.profile_signature.", 24))
		return "not checked: a trigger on a live profile, which an isolated A/B does not have";
	if (!strncmp(path, "runtime.", 8))
		return "not checked: the versions the run used are recorded in its eval dir, not compared to this "
		       "contract";
	return "not checked";
}

static int field_walk(FILE *f, yaml_document_t *doc, yaml_node_t *n, char *path, size_t cap,
		      const struct card_plan_facts *facts)
{
	size_t len = strlen(path);
	int lines = 0;

	if (n->type == YAML_SCALAR_NODE) {
		fprintf(f, "  %s: %s -> %s\n", path, (const char *)n->data.scalar.value,
			field_key_fate(path, (const char *)n->data.scalar.value, facts));
		return 1;
	}
	if (n->type == YAML_SEQUENCE_NODE) {
		fprintf(f, "  %s: [", path);
		for (yaml_node_item_t *it = n->data.sequence.items.start; it < n->data.sequence.items.top; it++) {
			yaml_node_t *v = yaml_document_get_node(doc, *it);

			fprintf(f, "%s%s", it == n->data.sequence.items.start ? "" : ", ",
				v && v->type == YAML_SCALAR_NODE ? (const char *)v->data.scalar.value : "...");
		}
		fprintf(f, "] -> %s\n", field_key_fate(path, "", facts));
		return 1;
	}
	for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key), *v = yaml_document_get_node(doc, p->value);

		if (!k || !v || k->type != YAML_SCALAR_NODE)
			continue;
		snprintf(path + len, cap - len, ".%s", (const char *)k->data.scalar.value);
		lines += field_walk(f, doc, v, path, cap, facts);
		path[len] = '\0';
	}
	return lines;
}

int card_print_field_keys(FILE *f, const struct card *c, const struct card_plan_facts *facts)
{
	static const char *const roots[][2] = {{"enforcement", NULL},
					       {"match", "profile_signature"},
					       {"runtime", NULL}};
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root;
	int lines = 0;

	if (!yaml_parser_initialize(&parser))
		return vs_oom();
	yaml_parser_set_input_string(&parser, (const unsigned char *)c->text + c->fm_begin, c->fm_end - c->fm_begin);
	if (!yaml_parser_load(&parser, &doc)) {
		yaml_parser_delete(&parser);
		return vs_error(VS_EPARSE, "%s: front matter: not YAML", c->path);
	}
	root = yaml_document_get_root_node(&doc);
	for (size_t r = 0; root && root->type == YAML_MAPPING_NODE && r < sizeof(roots) / sizeof(roots[0]); r++) {
		yaml_node_t *n = NULL;
		char path[256];

		for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
			yaml_node_t *k = yaml_document_get_node(&doc, p->key);

			if (k && k->type == YAML_SCALAR_NODE &&
			    !strcmp((const char *)k->data.scalar.value, roots[r][0]))
				n = yaml_document_get_node(&doc, p->value);
		}
		if (n && roots[r][1]) {
			yaml_node_t *m = n;

			n = NULL;
			for (yaml_node_pair_t *p = m->type == YAML_MAPPING_NODE ? m->data.mapping.pairs.start : NULL;
			     p && p < m->data.mapping.pairs.top; p++) {
				yaml_node_t *k = yaml_document_get_node(&doc, p->key);

				if (k && k->type == YAML_SCALAR_NODE &&
				    !strcmp((const char *)k->data.scalar.value, roots[r][1]))
					n = yaml_document_get_node(&doc, p->value);
			}
		}
		if (!n || (n->type == YAML_SCALAR_NODE && !n->data.scalar.length))
			continue;
		snprintf(path, sizeof(path), "%s%s%s", roots[r][0], roots[r][1] ? "." : "",
			 roots[r][1] ? roots[r][1] : "");
		if (!lines)
			fprintf(f, "the field's keys (kept byte for byte in the card):\n");
		lines += field_walk(f, &doc, n, path, sizeof(path), facts);
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return lines;
}
