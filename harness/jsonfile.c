/* jsonfile.c - strict JSON reading: cJSON's parse plus a refusal of duplicate keys. */
#include "jsonfile.h"
#include "vs_error.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>

#define JSONFILE_MAX_DEPTH 200

/* The first key that appears twice in an object under j: 1 and *where / *key filled, else 0. */
static int find_duplicate(const cJSON *j, char *where, size_t cap, const char **key, int depth)
{
	const cJSON *a, *b;
	size_t n = strlen(where);
	int i = 0;

	if (depth > JSONFILE_MAX_DEPTH)
		return 0; /* cJSON refuses deeper nesting (CJSON_NESTING_LIMIT 1000 is above this) */
	if (cJSON_IsObject(j)) {
		for (a = j->child; a; a = a->next)
			for (b = a->next; b; b = b->next)
				if (a->string && b->string && !strcmp(a->string, b->string)) {
					*key = a->string;
					return 1;
				}
	}
	if (!cJSON_IsObject(j) && !cJSON_IsArray(j))
		return 0;
	for (a = j->child; a; a = a->next, i++) {
		if (cJSON_IsObject(j))
			snprintf(where + n, cap - n, "%s%s", n ? "." : "", a->string ? a->string : "");
		else
			snprintf(where + n, cap - n, "[%d]", i);
		if (find_duplicate(a, where, cap, key, depth + 1))
			return 1;
		where[n] = '\0';
	}
	return 0;
}

int jsonfile_parse(struct cJSON **out, const char *text, size_t len, const char *path)
{
	cJSON *root = cJSON_ParseWithLength(text, len);
	char where[256] = "";
	const char *key = NULL;

	if (!root) {
		const char *at = cJSON_GetErrorPtr();
		int line = 1;

		for (const char *s = text; at && s < at && s < text + len; s++)
			line += *s == '\n';
		return vs_error(VS_EPARSE, "%s:%d: not valid JSON", path, line);
	}
	if (find_duplicate(root, where, sizeof(where), &key, 0)) {
		int err = vs_error(VS_EPARSE, "%s: key '%s' appears twice in %s%s", path, key,
				   *where ? "" : "the top-level object", where);

		cJSON_Delete(root);
		return err;
	}
	*out = root;
	return 0;
}
