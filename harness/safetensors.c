/*
 * safetensors.c - the safetensors format (huggingface/safetensors, docs "Format"; the checks follow
 * what its Rust reader refuses: header length, JSON, dtype, shape, offsets contiguous from 0 to the
 * end of the data, sizes). Numbers in the header are written as plain integers; the header is
 * padded with spaces to a multiple of 8 bytes as the Python writer does.
 */
#include "safetensors.h"
#include "vs_error.h"
#include "fsutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ST_HEADER_MAX (100u * 1000u * 1000u) /* the Python reader's limit as well */
#define ST_INT_MAX 9007199254740992.0        /* 2^53: JSON integers above this are not exact */

static const struct {
	int dtype;
	const char *name;
	size_t size;
} dtypes[] = {
	{ST_BF16, "BF16", 2},
	{ST_F32, "F32", 4},
	{ST_I32, "I32", 4},
	{ST_U8, "U8", 1},
};

size_t st_dtype_size(int dtype)
{
	for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if (dtypes[i].dtype == dtype)
			return dtypes[i].size;
	return 0;
}

const char *st_dtype_name(int dtype)
{
	for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if (dtypes[i].dtype == dtype)
			return dtypes[i].name;
	return NULL;
}

static int dtype_parse(const char *name)
{
	for (size_t i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if (!strcmp(dtypes[i].name, name))
			return dtypes[i].dtype;
	return 0;
}

/* bytes = elem size x product(shape), 0 on success, -1 on overflow of size_t. */
static int tensor_bytes(size_t *out, size_t elem, const int64_t *shape, int ndim)
{
	size_t n = elem;

	for (int d = 0; d < ndim; d++) {
		if (shape[d] < 0)
			return -1;
		if (shape[d] != 0 && n > SIZE_MAX / (uint64_t)shape[d])
			return -1;
		n *= (size_t)shape[d];
	}
	*out = n;
	return 0;
}

/* A JSON number that is a non-negative integer representable exactly; 0 ok, -1 otherwise. */
static int json_uint(uint64_t *out, const cJSON *j)
{
	double v;

	if (!cJSON_IsNumber(j))
		return -1;
	v = j->valuedouble;
	if (!(v >= 0) || v > ST_INT_MAX || v != floor(v))
		return -1;
	*out = (uint64_t)v;
	return 0;
}

struct span {
	size_t begin, end;
	int index;
};

static int span_cmp(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	const struct st_tensor *x = *(const struct st_tensor *const *)a;
	const struct st_tensor *y = *(const struct st_tensor *const *)b;

	return strcmp(x->name, y->name);
}

static int parse_metadata(struct st_file *f, const cJSON *meta, const char *path)
{
	int n = cJSON_GetArraySize(meta), i = 0;
	const cJSON *it;

	if (!cJSON_IsObject(meta))
		return vs_error(VS_EPARSE, "'%s': '__metadata__' is not an object of strings", path);
	f->meta_keys = calloc((size_t)n + 1, sizeof(char *));
	f->meta_values = calloc((size_t)n + 1, sizeof(char *));
	if (!f->meta_keys || !f->meta_values)
		return vs_error(VS_ENOMEM, "out of memory reading '%s'", path);
	cJSON_ArrayForEach(it, meta)
	{
		if (!cJSON_IsString(it))
			return vs_error(VS_EPARSE, "'%s': metadata value '%s' is not a string", path, it->string);
		for (int k = 0; k < i; k++)
			if (!strcmp(f->meta_keys[k], it->string))
				return vs_error(VS_EPARSE, "'%s': duplicate metadata key '%s'", path, it->string);
		f->meta_keys[i] = strdup(it->string);
		f->meta_values[i] = strdup(it->valuestring);
		if (!f->meta_keys[i] || !f->meta_values[i]) {
			free(f->meta_keys[i]);
			free(f->meta_values[i]);
			return vs_error(VS_ENOMEM, "out of memory reading '%s'", path);
		}
		f->meta_count = ++i;
	}
	return 0;
}

/* One tensor entry of the header; offsets relative to the data section into *sp. */
static int parse_entry(struct st_tensor *t, struct span *sp, const cJSON *e, const char *path)
{
	const cJSON *dt = NULL, *shape = NULL, *offs = NULL, *it;
	uint64_t b = 0, en = 0;
	size_t want;
	int d = 0;

	if (!cJSON_IsObject(e))
		return vs_error(VS_EPARSE, "'%s': tensor '%s' is not an object", path, e->string);
	cJSON_ArrayForEach(it, e)
	{
		const cJSON **slot = !strcmp(it->string, "dtype")        ? &dt :
				     !strcmp(it->string, "shape")        ? &shape :
				     !strcmp(it->string, "data_offsets") ? &offs :
									   NULL;

		if (!slot)
			return vs_error(VS_EPARSE, "'%s': tensor '%s' has unknown key '%s'", path, e->string,
					it->string);
		if (*slot)
			return vs_error(VS_EPARSE, "'%s': tensor '%s' has key '%s' twice", path, e->string, it->string);
		*slot = it;
	}
	if (!dt || !shape || !offs)
		return vs_error(VS_EPARSE, "'%s': tensor '%s' lacks '%s'", path, e->string,
				!dt    ? "dtype" :
				!shape ? "shape" :
					 "data_offsets");
	if (!cJSON_IsString(dt))
		return vs_error(VS_EPARSE, "'%s': tensor '%s': dtype is not a string", path, e->string);
	t->dtype = dtype_parse(dt->valuestring);
	if (!t->dtype)
		return vs_error(VS_EPARSE,
				"'%s': tensor '%s' has unsupported dtype '%s' (BF16, F32, I32 "
				"and U8 are supported)",
				path, e->string, dt->valuestring);
	if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) > ST_MAX_DIMS)
		return vs_error(VS_EPARSE,
				"'%s': tensor '%s': shape is not a list of at most %d "
				"dimensions",
				path, e->string, ST_MAX_DIMS);
	cJSON_ArrayForEach(it, shape)
	{
		uint64_t v;

		if (json_uint(&v, it))
			return vs_error(VS_EPARSE,
					"'%s': tensor '%s': shape entry %d is not a "
					"non-negative integer",
					path, e->string, d);
		t->shape[d++] = (int64_t)v;
	}
	t->ndim = d;
	if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2 || json_uint(&b, cJSON_GetArrayItem(offs, 0)) ||
	    json_uint(&en, cJSON_GetArrayItem(offs, 1)))
		return vs_error(VS_EPARSE,
				"'%s': tensor '%s': data_offsets is not [begin, end] of "
				"non-negative integers",
				path, e->string);
	if (en < b)
		return vs_error(VS_EPARSE,
				"'%s': tensor '%s': data_offsets [%llu, %llu] end before "
				"they begin",
				path, e->string, (unsigned long long)b, (unsigned long long)en);
	if (tensor_bytes(&want, st_dtype_size(t->dtype), t->shape, t->ndim))
		return vs_error(VS_EPARSE, "'%s': tensor '%s': the size of its shape overflows", path, e->string);
	if (want != en - b)
		return vs_error(VS_EPARSE,
				"'%s': tensor '%s' spans %llu bytes, but %s x its shape is "
				"%zu bytes",
				path, e->string, (unsigned long long)(en - b), dt->valuestring, want);
	sp->begin = (size_t)b;
	sp->end = (size_t)en;
	t->bytes = want;
	return 0;
}

int st_parse(struct st_file *out, char *buf, size_t len, const char *path)
{
	struct st_file f = {0};
	cJSON *root = NULL;
	const cJSON *it, *meta = NULL;
	struct span *spans = NULL;
	struct st_tensor **sorted = NULL;
	const char *end = NULL;
	uint64_t n = 0;
	size_t data_len, prev_end = 0;
	int err = 0, count = 0, i;

	if (len < 8)
		return vs_error(VS_EPARSE,
				"'%s': truncated: %zu bytes, a safetensors file starts with "
				"an 8-byte header length",
				path, len);
	for (i = 7; i >= 0; i--)
		n = n << 8 | (unsigned char)buf[i];
	if (n > len - 8)
		return vs_error(VS_EPARSE,
				"'%s': header length %llu runs past the end of the file "
				"(%zu bytes)",
				path, (unsigned long long)n, len);
	if (n == 0 || n > ST_HEADER_MAX)
		return vs_error(VS_EPARSE, "'%s': header length %llu is out of range (1 to %u)", path,
				(unsigned long long)n, ST_HEADER_MAX);
	root = cJSON_ParseWithLengthOpts(buf + 8, (size_t)n, &end, 0);
	if (!root) {
		const char *at = cJSON_GetErrorPtr();
		long off = at && at >= buf + 8 && at <= buf + 8 + n ? (long)(at - buf - 8) : -1;

		err = vs_error(VS_EPARSE, "'%s': header is not valid JSON (near byte %ld of the header)", path, off);
		goto done;
	}
	for (; end < buf + 8 + n; end++)
		if (*end != ' ' && *end != '\t' && *end != '\n' && *end != '\r') {
			err = vs_error(VS_EPARSE, "'%s': header has text after its JSON object (byte %ld)", path,
				       (long)(end - buf - 8));
			goto done;
		}
	if (!cJSON_IsObject(root)) {
		err = vs_error(VS_EPARSE, "'%s': header is not a JSON object", path);
		goto done;
	}
	cJSON_ArrayForEach(it, root)
	{
		if (!strcmp(it->string, "__metadata__")) {
			if (meta) {
				err = vs_error(VS_EPARSE, "'%s': '__metadata__' appears twice", path);
				goto done;
			}
			meta = it;
		} else {
			count++;
		}
	}
	if (meta && (err = parse_metadata(&f, meta, path)))
		goto done;
	f.tensors = calloc((size_t)count + 1, sizeof(*f.tensors));
	spans = calloc((size_t)count + 1, sizeof(*spans));
	sorted = calloc((size_t)count + 1, sizeof(*sorted));
	if (!f.tensors || !spans || !sorted) {
		err = vs_error(VS_ENOMEM, "out of memory reading '%s'", path);
		goto done;
	}
	data_len = len - 8 - (size_t)n;
	i = 0;
	cJSON_ArrayForEach(it, root)
	{
		struct st_tensor *t = &f.tensors[i];

		if (it == meta)
			continue;
		t->name = strdup(it->string);
		if (!t->name) {
			err = vs_error(VS_ENOMEM, "out of memory reading '%s'", path);
			goto done;
		}
		f.count = i + 1;
		if (!*t->name) {
			err = vs_error(VS_EPARSE, "'%s': a tensor has an empty name", path);
			goto done;
		}
		if ((err = parse_entry(t, &spans[i], it, path)))
			goto done;
		if (spans[i].end > data_len) {
			err = vs_error(VS_EPARSE,
				       "'%s': tensor '%s' ends at byte %zu, past the data "
				       "section of %zu bytes",
				       path, t->name, spans[i].end, data_len);
			goto done;
		}
		spans[i].index = i;
		sorted[i] = t;
		i++;
	}
	qsort(sorted, (size_t)count, sizeof(*sorted), name_cmp);
	for (i = 1; i < count; i++)
		if (!strcmp(sorted[i - 1]->name, sorted[i]->name)) {
			err = vs_error(VS_EPARSE, "'%s': duplicate tensor name '%s'", path, sorted[i]->name);
			goto done;
		}
	qsort(spans, (size_t)count, sizeof(*spans), span_cmp);
	for (i = 0; i < count; i++) {
		const struct st_tensor *t = &f.tensors[spans[i].index];

		if (spans[i].begin < prev_end) {
			err = vs_error(VS_EPARSE,
				       "'%s': tensor '%s' [%zu, %zu) overlaps tensor '%s' "
				       "ending at byte %zu",
				       path, t->name, spans[i].begin, spans[i].end, f.tensors[spans[i - 1].index].name,
				       prev_end);
			goto done;
		}
		if (spans[i].begin > prev_end) {
			err = vs_error(VS_EPARSE,
				       "'%s': gap in the data section: bytes [%zu, %zu) before "
				       "tensor '%s' belong to no tensor",
				       path, prev_end, spans[i].begin, t->name);
			goto done;
		}
		prev_end = spans[i].end;
	}
	if (prev_end != data_len) {
		err = vs_error(VS_EPARSE,
			       "'%s': the tensors cover %zu bytes, but the data section has "
			       "%zu (trailing bytes belong to no tensor)",
			       path, prev_end, data_len);
		goto done;
	}
	for (i = 0; i < count; i++) {
		struct st_tensor *t = &f.tensors[spans[i].index];

		t->data = buf + 8 + n + spans[i].begin;
	}
	f.buf = buf;
	f.len = len;
	*out = f;
	memset(&f, 0, sizeof(f));
done:
	free(spans);
	free(sorted);
	cJSON_Delete(root);
	f.buf = NULL; /* not ours on failure */
	st_release(&f);
	return err;
}

int st_read(struct st_file *f, const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	int err = fs_read_file(&buf, &len, path, 0);

	if (err)
		return err;
	err = st_parse(f, buf, len, path);
	if (err)
		free(buf);
	return err;
}

const struct st_tensor *st_find(const struct st_file *f, const char *name)
{
	for (int i = 0; i < f->count; i++)
		if (!strcmp(f->tensors[i].name, name))
			return &f->tensors[i];
	return NULL;
}

const char *st_meta(const struct st_file *f, const char *key)
{
	for (int i = 0; i < f->meta_count; i++)
		if (!strcmp(f->meta_keys[i], key))
			return f->meta_values[i];
	return NULL;
}

static cJSON *raw_uint(uint64_t v)
{
	char text[24];

	snprintf(text, sizeof(text), "%llu", (unsigned long long)v);
	return cJSON_CreateRaw(text);
}

int st_serialize_header(char **out, size_t *out_len, size_t *data_len, const struct st_tensor *tensors, int count,
			const char *const *meta_keys, const char *const *meta_values, int meta_count)
{
	cJSON *root = NULL, *meta, *e, *shape, *offs;
	char *json = NULL, *buf = NULL;
	size_t off = 0, jlen, n;
	int err = 0;

	root = cJSON_CreateObject();
	if (!root)
		goto nomem;
	if (meta_count > 0) {
		meta = cJSON_AddObjectToObject(root, "__metadata__");
		if (!meta)
			goto nomem;
		for (int i = 0; i < meta_count; i++) {
			if (!meta_keys[i] || !meta_values[i]) {
				err = vs_error(VS_EUSAGE, "safetensors metadata entry %d is NULL", i);
				goto done;
			}
			if (cJSON_GetObjectItemCaseSensitive(meta, meta_keys[i])) {
				err = vs_error(VS_EUSAGE, "duplicate safetensors metadata key '%s'", meta_keys[i]);
				goto done;
			}
			if (!cJSON_AddStringToObject(meta, meta_keys[i], meta_values[i]))
				goto nomem;
		}
	}
	for (int i = 0; i < count; i++) {
		const struct st_tensor *t = &tensors[i];
		size_t want;

		if (!t->name || !*t->name || !strcmp(t->name, "__metadata__")) {
			err = vs_error(VS_EUSAGE, "tensor %d has no usable name", i);
			goto done;
		}
		if (cJSON_GetObjectItemCaseSensitive(root, t->name)) {
			err = vs_error(VS_EUSAGE, "duplicate tensor name '%s'", t->name);
			goto done;
		}
		if (!st_dtype_name(t->dtype) || t->ndim < 0 || t->ndim > ST_MAX_DIMS ||
		    tensor_bytes(&want, st_dtype_size(t->dtype), t->shape, t->ndim) || want != t->bytes) {
			err = vs_error(VS_EUSAGE,
				       "tensor '%s': dtype, shape and byte count (%zu) do not "
				       "agree",
				       t->name, t->bytes);
			goto done;
		}
		if (!(e = cJSON_AddObjectToObject(root, t->name)) ||
		    !cJSON_AddStringToObject(e, "dtype", st_dtype_name(t->dtype)) ||
		    !(shape = cJSON_AddArrayToObject(e, "shape")) ||
		    !(offs = cJSON_AddArrayToObject(e, "data_offsets")))
			goto nomem;
		for (int d = 0; d < t->ndim; d++)
			if (!cJSON_AddItemToArray(shape, raw_uint((uint64_t)t->shape[d])))
				goto nomem;
		if (!cJSON_AddItemToArray(offs, raw_uint(off)) || !cJSON_AddItemToArray(offs, raw_uint(off + t->bytes)))
			goto nomem;
		off += t->bytes;
	}
	json = cJSON_PrintUnformatted(root);
	if (!json)
		goto nomem;
	jlen = strlen(json);
	n = (jlen + 7) / 8 * 8;
	buf = malloc(8 + n);
	if (!buf)
		goto nomem;
	for (int i = 0; i < 8; i++)
		buf[i] = (char)(unsigned char)((uint64_t)n >> (8 * i));
	memcpy(buf + 8, json, jlen);
	memset(buf + 8 + jlen, ' ', n - jlen);
	*out = buf;
	*out_len = 8 + n;
	*data_len = off;
	buf = NULL;
	goto done;
nomem:
	err = vs_error(VS_ENOMEM, "out of memory writing a safetensors header");
done:
	free(buf);
	free(json);
	cJSON_Delete(root);
	return err;
}

int st_serialize(char **out, size_t *out_len, const struct st_tensor *tensors, int count, const char *const *meta_keys,
		 const char *const *meta_values, int meta_count)
{
	char *head = NULL, *buf = NULL;
	size_t hlen = 0, dlen = 0, off;
	int err;

	for (int i = 0; i < count; i++)
		if (tensors[i].bytes && !tensors[i].data)
			return vs_error(VS_EUSAGE, "tensor '%s' has no data", tensors[i].name ? tensors[i].name : "?");
	err = st_serialize_header(&head, &hlen, &dlen, tensors, count, meta_keys, meta_values, meta_count);
	if (err)
		return err;
	buf = realloc(head, hlen + dlen ? hlen + dlen : 1);
	if (!buf) {
		free(head);
		return vs_error(VS_ENOMEM, "out of memory writing a safetensors file");
	}
	off = hlen;
	for (int i = 0; i < count; i++) {
		if (tensors[i].bytes)
			memcpy(buf + off, tensors[i].data, tensors[i].bytes);
		off += tensors[i].bytes;
	}
	*out = buf;
	*out_len = hlen + dlen;
	return 0;
}

void st_release(struct st_file *f)
{
	if (!f)
		return;
	for (int i = 0; i < f->count; i++)
		free(f->tensors[i].name);
	for (int i = 0; i < f->meta_count; i++) {
		free(f->meta_keys[i]);
		free(f->meta_values[i]);
	}
	free(f->tensors);
	free(f->meta_keys);
	free(f->meta_values);
	free(f->buf);
	memset(f, 0, sizeof(*f));
}
