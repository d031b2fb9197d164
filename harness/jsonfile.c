/*
 * jsonfile.c - strict JSON reading (cJSON's parse plus a refusal of duplicate keys) and complete
 * JSON writing (a sticky out-of-memory flag over every item).
 */
#include "jsonfile.h"
#include "vs_error.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int key_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A key that appears twice in the object j: 1 and *key set; 0 if none; -1 out of memory. */
static int object_duplicate(const cJSON *j, const char **key)
{
	const cJSON *it;
	const char **keys;
	int n = cJSON_GetArraySize(j), i = 0, found = 0;

	if (n < 2)
		return 0;
	keys = malloc((size_t)n * sizeof(*keys));
	if (!keys)
		return -1;
	cJSON_ArrayForEach(it, j) keys[i++] = it->string ? it->string : "";
	qsort(keys, (size_t)n, sizeof(*keys), key_cmp); /* n log n: a file may hold many keys */
	for (i = 1; i < n && !found; i++)
		if (!strcmp(keys[i - 1], keys[i])) {
			*key = keys[i];
			found = 1;
		}
	free(keys);
	return found;
}

/*
 * The first key that appears twice in an object under j: 1 and *where / *key filled, 0 if none, -1 out
 * of memory. Recursion is bounded by cJSON's nesting limit (CJSON_NESTING_LIMIT).
 */
static int find_duplicate(const cJSON *j, char *where, size_t cap, const char **key)
{
	const cJSON *a;
	size_t n = strlen(where);
	int i = 0, r;

	if (cJSON_IsObject(j) && (r = object_duplicate(j, key)))
		return r;
	if (!cJSON_IsObject(j) && !cJSON_IsArray(j))
		return 0;
	for (a = j->child; a; a = a->next, i++) {
		if (cJSON_IsObject(j))
			snprintf(where + n, cap - n, "%s%s", n ? "." : "", a->string ? a->string : "");
		else
			snprintf(where + n, cap - n, "[%d]", i);
		if ((r = find_duplicate(a, where, cap, key)))
			return r;
		where[n] = '\0';
	}
	return 0;
}

int jsonfile_parse(struct cJSON **out, const char *text, size_t len, const char *path)
{
	cJSON *root = cJSON_ParseWithLength(text, len);
	char where[256] = "";
	const char *key = NULL;
	int r, err;

	if (!root) {
		const char *at = cJSON_GetErrorPtr();
		int line = 1;

		for (const char *s = text; at && s < at && s < text + len; s++)
			line += *s == '\n';
		return vs_error(VS_EPARSE, "%s:%d: not valid JSON", path, line);
	}
	r = find_duplicate(root, where, sizeof(where), &key);
	if (r == 0) {
		*out = root;
		return 0;
	}
	if (r < 0)
		err = vs_error(VS_ENOMEM, "out of memory reading '%s'", path);
	else
		err = vs_error(VS_EPARSE, "%s: key '%s' appears twice in %s%s", path, key,
			       *where ? "" : "the top-level object", where);
	cJSON_Delete(root);
	return err;
}

int jsonfile_put(int *oom, cJSON *o, const char *key, cJSON *item)
{
	if (!item || !o || !(key ? cJSON_AddItemToObject(o, key, item) : cJSON_AddItemToArray(o, item))) {
		cJSON_Delete(item);
		*oom = 1;
		return 0;
	}
	return 1;
}

void jsonfile_put_str(int *oom, cJSON *o, const char *key, const char *v)
{
	if (v)
		jsonfile_put(oom, o, key, cJSON_CreateString(v));
}

void jsonfile_put_num(int *oom, cJSON *o, const char *key, double v)
{
	jsonfile_put(oom, o, key, cJSON_CreateNumber(v));
}

void jsonfile_put_bool(int *oom, cJSON *o, const char *key, int v)
{
	jsonfile_put(oom, o, key, cJSON_CreateBool(v));
}

cJSON *jsonfile_put_obj(int *oom, cJSON *o, const char *key)
{
	cJSON *c = cJSON_CreateObject();

	return jsonfile_put(oom, o, key, c) ? c : NULL;
}

cJSON *jsonfile_put_arr(int *oom, cJSON *o, const char *key)
{
	cJSON *c = cJSON_CreateArray();

	return jsonfile_put(oom, o, key, c) ? c : NULL;
}

/* ---- numbers as text (task specs and manifests) -------------------------------------------- */

/* Shortest %.Ng (N = 15..17) that strtod() reads back to v exactly. */
static void fmt_double(char buf[40], double v)
{
	for (int prec = 15; prec <= 17; prec++) {
		snprintf(buf, 40, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			return;
	}
}

/* Shortest %.Ng (N = 6..9) that strtof() reads back to v exactly. */
void jsonfile_fmt_float(char buf[40], float v)
{
	for (int prec = 6; prec <= 9; prec++) {
		snprintf(buf, 40, "%.*g", prec, (double)v);
		if (strtof(buf, NULL) == v)
			return;
	}
}

cJSON *jsonfile_raw_double(double v)
{
	char t[40];

	fmt_double(t, v);
	return cJSON_CreateRaw(t);
}

cJSON *jsonfile_raw_float(float v)
{
	char t[40];

	jsonfile_fmt_float(t, v);
	return cJSON_CreateRaw(t);
}

cJSON *jsonfile_raw_u64(uint64_t v)
{
	char t[24];

	snprintf(t, sizeof(t), "%llu", (unsigned long long)v);
	return cJSON_CreateRaw(t);
}

cJSON *jsonfile_raw_i64(int64_t v)
{
	char t[24];

	snprintf(t, sizeof(t), "%lld", (long long)v);
	return cJSON_CreateRaw(t);
}

int jsonfile_add(cJSON *obj, const char *key, cJSON *item)
{
	if (!obj || !item) {
		cJSON_Delete(item);
		return 0;
	}
	if (key ? !cJSON_AddItemToObject(obj, key, item) : !cJSON_AddItemToArray(obj, item)) {
		cJSON_Delete(item);
		return 0;
	}
	return 1;
}

int jsonfile_number(double *out, const cJSON *j)
{
	char *end = NULL;
	double v;

	if (cJSON_IsNumber(j)) {
		*out = j->valuedouble;
		return 0;
	}
	if (!cJSON_IsRaw(j) || !j->valuestring || !*j->valuestring)
		return -1;
	errno = 0;
	v = strtod(j->valuestring, &end);
	if (*end || errno == ERANGE)
		return -1;
	*out = v;
	return 0;
}
