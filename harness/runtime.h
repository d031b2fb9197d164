/*
 * runtime.h - a card's `runtime:` contract (GEAK's skill template: "a version contract for
 * version-sensitive languages, indexed and checked before a skill applies"), checked against the
 * versions a plan or an eval dir records of what its Python implementations imported
 * (docs/DESIGN.md "Skill libraries").
 */
#ifndef VS_RUNTIME_H
#define VS_RUNTIME_H

#include <stddef.h>

struct card;
struct cJSON;

/*
 * A card's `runtime:` contract (GEAK's template: "a version contract for version-sensitive
 * languages, indexed and checked before a skill applies"): a mapping of package name to a version
 * constraint, one or more comma-separated clauses of ==, !=, >=, <=, > or < and a dotted version
 * (`triton: ">=3.5,<3.7"`). Versions compare by their leading numeric components ("2.11.0+cu130"
 * is 2.11.0; a missing component is 0).
 */
struct runtime_contract {
	int n;
	char **pkg;  /* [n] package names (owned) */
	char **spec; /* [n] their constraints (owned) */
};

/**
 * Read card c's `runtime:` mapping (absent or {} gives n 0). Errors: VS_ESCHEMA with the card's
 * path (not a mapping of names to strings, or a constraint that does not parse), VS_EPARSE,
 * VS_ENOMEM. Release with runtime_release().
 */
int runtime_read(struct runtime_contract *rt, const struct card *c);
void runtime_release(struct runtime_contract *rt);

/**
 * Check rt against versions (a JSON object: package name -> version string, as a plan or an eval
 * dir records what its Python implementations imported). Returns 0 when every recorded package
 * holds (line: "triton >=3.5: 3.6.0 holds; torch: not recorded by the plan"), 1 when one does not
 * (line: "runtime triton '<3.5' does not hold for triton 3.6.0"), VS_ENOMEM. A package the
 * versions do not record is listed as not checked, never as holding.
 */
int runtime_check(char *line, size_t cap, const struct runtime_contract *rt, const struct cJSON *versions);

#endif /* VS_RUNTIME_H */
