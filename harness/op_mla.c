/*
 * op_mla.c - the MLA decode operator (op.h, op_mla.h): its spec's JSON and validation, its counting
 * (FlashMLA's), its tolerances, its oracle call and its columns of the plan summary, for the dense
 * form (topk 0) and the sparse form (topk > 0, DeepSeek Sparse Attention) alike. Its inputs (the
 * tensors of its files and their generator) are op_mla_gen.c's; the oracle is oracles/mla_decode_ref.c.
 */
#include "op_mla.h"
#include "op.h"
#include "jsonfile.h"
#include "task.h"
#include "vs_error.h"
#include "mla_decode.h"
#include "mla_decode_ref.h"
#include "mla_numeric.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SIZE_LIMIT ((uint64_t)1 << 62) /* largest byte size a spec may ask for */

/* ---- the spec ----------------------------------------------------------------------------------- */

static int spec_validate(const struct task_spec *s, const char *where);

static int spec_copy(struct task_spec *dst, const struct task_spec *src)
{
	struct task_spec c = *src;

	c.seqlens = NULL;
	c.extra_seqlens = NULL;
	if (src->seqlens && src->batch > 0) {
		c.seqlens = malloc((size_t)src->batch * sizeof(int32_t));
		if (!c.seqlens)
			return vs_error(VS_ENOMEM, "out of memory copying task spec '%s'", src->name);
		memcpy(c.seqlens, src->seqlens, (size_t)src->batch * sizeof(int32_t));
	}
	if (src->extra_seqlens && src->batch > 0) {
		c.extra_seqlens = malloc((size_t)src->batch * sizeof(int32_t));
		if (!c.extra_seqlens) {
			free(c.seqlens);
			return vs_error(VS_ENOMEM, "out of memory copying task spec '%s'", src->name);
		}
		memcpy(c.extra_seqlens, src->extra_seqlens, (size_t)src->batch * sizeof(int32_t));
	}
	*dst = c;
	return 0;
}

static void spec_release(struct task_spec *s)
{
	if (!s)
		return;
	free(s->seqlens);
	free(s->extra_seqlens);
	memset(s, 0, sizeof(*s));
}

/* The sparse keys (written only when topk > 0): 0 ok, -1 out of memory. */
static int sparse_to_json(cJSON *j, const struct task_spec *s)
{
	cJSON *lens = NULL;

	if (!jsonfile_add(j, "topk", cJSON_CreateNumber(s->topk)) ||
	    !jsonfile_add(j, "topk_length", cJSON_CreateBool(s->topk_length)) ||
	    !jsonfile_add(j, "attn_sink", cJSON_CreateBool(s->attn_sink)))
		return -1;
	if (s->extra_topk <= 0)
		return 0;
	if (!jsonfile_add(j, "extra_topk", cJSON_CreateNumber(s->extra_topk)) ||
	    !jsonfile_add(j, "extra_page_size", cJSON_CreateNumber(s->extra_page_size)) ||
	    !jsonfile_add(j, "extra_max_pages", cJSON_CreateNumber(s->extra_max_pages)) ||
	    !jsonfile_add(j, "extra_num_pages", cJSON_CreateNumber(s->extra_num_pages)) ||
	    !jsonfile_add(j, "extra_seqlens", lens = cJSON_CreateArray()))
		return -1;
	for (int b = 0; s->extra_seqlens && b < s->batch; b++)
		if (!jsonfile_add(lens, NULL, cJSON_CreateNumber(s->extra_seqlens[b])))
			return -1;
	return jsonfile_add(j, "extra_topk_length", cJSON_CreateBool(s->extra_topk_length)) ? 0 : -1;
}

/*
 * spec_to_json: canonical JSON of a spec (stable key order); caller owns the result (cJSON_Delete), NULL when out
 * of memory. Keys, in order: name, kv_dtype ("bf16" / "fp8_e4m3_fnuz"), batch, s_q, h_q,
 * page_size, max_pages, num_pages, page_offset, seqlens, softmax_scale, seed, input_sets,
 * tol_out {atol, rtol, cos_tol}, tol_lse {...}; then, only when topk > 0 (the sparse form), topk,
 * topk_length (bool), attn_sink (bool) and, only when extra_topk > 0, extra_topk, extra_page_size,
 * extra_max_pages, extra_num_pages, extra_seqlens, extra_topk_length (bool). So a dense spec's text
 * and hash are those it had before the sparse form existed. Integers that fit an int are cJSON numbers; the
 * others (seed, page_offset, softmax_scale and the tolerances) are cJSON raw items holding the
 * shortest text that reads back to the same value, because cJSON 1.7's printer does not round-trip
 * every double. softmax_scale is printed as its float value (e.g. 0.1352 for 0.1352f).
 */
static cJSON *spec_to_json(const struct task_spec *s)
{
	cJSON *j = cJSON_CreateObject(), *lens = NULL;
	const char *dt = mla_kv_dtype_name(s->kv_dtype);
	char name[sizeof(s->name) + 1];

	memcpy(name, s->name, sizeof(s->name));
	name[sizeof(s->name)] = '\0';
	if (!jsonfile_add(j, "name", cJSON_CreateString(name)) ||
	    !jsonfile_add(j, "kv_dtype", cJSON_CreateString(dt ? dt : "unknown")) ||
	    !jsonfile_add(j, "batch", cJSON_CreateNumber(s->batch)) ||
	    !jsonfile_add(j, "s_q", cJSON_CreateNumber(s->s_q)) ||
	    !jsonfile_add(j, "h_q", cJSON_CreateNumber(s->h_q)) ||
	    !jsonfile_add(j, "page_size", cJSON_CreateNumber(s->page_size)) ||
	    !jsonfile_add(j, "max_pages", cJSON_CreateNumber(s->max_pages)) ||
	    !jsonfile_add(j, "num_pages", cJSON_CreateNumber(s->num_pages)) ||
	    !jsonfile_add(j, "page_offset", jsonfile_raw_i64(s->page_offset)) ||
	    !jsonfile_add(j, "seqlens", lens = cJSON_CreateArray()))
		goto fail;
	for (int b = 0; s->seqlens && b < s->batch; b++)
		if (!jsonfile_add(lens, NULL, cJSON_CreateNumber(s->seqlens[b])))
			goto fail;
	if (!jsonfile_add(j, "softmax_scale", jsonfile_raw_float(s->softmax_scale)) ||
	    !jsonfile_add(j, "seed", jsonfile_raw_u64(s->seed)) ||
	    !jsonfile_add(j, "input_sets", cJSON_CreateNumber(s->input_sets)) ||
	    !jsonfile_add(j, "tol_out", task_tol_to_json(&s->tol_out)) ||
	    !jsonfile_add(j, "tol_lse", task_tol_to_json(&s->tol_lse)))
		goto fail;
	if (s->topk > 0 && sparse_to_json(j, s))
		goto fail;
	return j;
fail:
	cJSON_Delete(j);
	return NULL;
}

static const char *const spec_keys[] = {
	"name",        "kv_dtype", "batch",         "s_q",  "h_q",        "page_size", "max_pages", "num_pages",
	"page_offset", "seqlens",  "softmax_scale", "seed", "input_sets", "tol_out",   "tol_lse",
};

/* The sparse form's keys, present only when topk > 0; those from EXTRA_KEY0 only when extra_topk > 0. */
static const char *const sparse_keys[] = {
	"topk",
	"topk_length",
	"attn_sink",
	"extra_topk",
	"extra_page_size",
	"extra_max_pages",
	"extra_num_pages",
	"extra_seqlens",
	"extra_topk_length",
};
#define EXTRA_KEY0 3
#define NKEYS(a) (sizeof(a) / sizeof((a)[0]))

static int get_int(int64_t *out, const cJSON *j, const char *key, int64_t lo, int64_t hi, const char *where)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(j, key);
	double v;

	if (!it)
		return vs_error(VS_ESCHEMA, "%s: task spec lacks '%s'", where, key);
	if (jsonfile_number(&v, it) || v != floor(v) || v < (double)lo || v > (double)hi)
		return vs_error(VS_ESCHEMA, "%s: task spec '%s' must be an integer from %lld to %lld", where, key,
				(long long)lo, (long long)hi);
	*out = (int64_t)v;
	return 0;
}

static int get_tol(struct task_tol *t, const cJSON *j, const char *key, const char *where)
{
	const cJSON *o = cJSON_GetObjectItemCaseSensitive(j, key), *it;
	static const char *const names[] = {"atol", "rtol", "cos_tol"};
	double *slots[] = {&t->atol, &t->rtol, &t->cos_tol};

	if (!o)
		return vs_error(VS_ESCHEMA, "%s: task spec lacks '%s'", where, key);
	if (!cJSON_IsObject(o))
		return vs_error(VS_ESCHEMA, "%s: task spec '%s' must be an object {atol, rtol, cos_tol}", where, key);
	cJSON_ArrayForEach(it, o)
	{
		int known = 0;

		for (int i = 0; i < 3; i++)
			known |= !strcmp(it->string, names[i]);
		if (!known)
			return vs_error(VS_ESCHEMA, "%s: task spec '%s' has unknown key '%s'", where, key, it->string);
	}
	for (int i = 0; i < 3; i++) {
		it = cJSON_GetObjectItemCaseSensitive(o, names[i]);
		if (!it)
			return vs_error(VS_ESCHEMA, "%s: task spec lacks '%s.%s'", where, key, names[i]);
		if (jsonfile_number(slots[i], it))
			return vs_error(VS_ESCHEMA, "%s: task spec '%s.%s' is not a number", where, key, names[i]);
	}
	return 0;
}

/* A list of batch int32 into a malloc'd *out; VS_ESCHEMA naming the key, VS_ENOMEM. */
static int get_lens(int32_t **out, const cJSON *j, const char *key, int32_t batch, const char *where)
{
	const cJSON *lens = cJSON_GetObjectItemCaseSensitive(j, key), *it;
	int32_t *v;
	double d;
	int b = 0;

	if (!lens)
		return vs_error(VS_ESCHEMA, "%s: task spec lacks '%s'", where, key);
	if (!cJSON_IsArray(lens) || cJSON_GetArraySize(lens) != batch)
		return vs_error(VS_ESCHEMA, "%s: task spec '%s' must be a list of 'batch' (%d) integers", where, key,
				batch);
	v = malloc((size_t)batch * sizeof(int32_t));
	if (!v)
		return vs_error(VS_ENOMEM, "out of memory reading task spec");
	cJSON_ArrayForEach(it, lens)
	{
		if (jsonfile_number(&d, it) || d != floor(d) || d < INT32_MIN || d > INT32_MAX) {
			free(v);
			return vs_error(VS_ESCHEMA, "%s: task spec '%s[%d]' is not an integer", where, key, b);
		}
		v[b++] = (int32_t)d;
	}
	*out = v;
	return 0;
}

static int get_bool(int *out, const cJSON *j, const char *key, const char *where)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(j, key);

	if (!it)
		return vs_error(VS_ESCHEMA, "%s: task spec lacks '%s'", where, key);
	if (!cJSON_IsBool(it))
		return vs_error(VS_ESCHEMA, "%s: task spec '%s' must be true or false", where, key);
	*out = cJSON_IsTrue(it);
	return 0;
}

/*
 * The sparse keys of a spec: none when it has no "topk" (dense), else topk, topk_length and
 * attn_sink, and the extra cache's keys all or none. Fills s (extra_seqlens malloc'd).
 */
static int sparse_from_json(struct task_spec *s, const cJSON *j, const char *where)
{
	int64_t x;
	int err;

	if (!cJSON_GetObjectItemCaseSensitive(j, "topk")) {
		for (size_t k = 0; k < NKEYS(sparse_keys); k++)
			if (cJSON_GetObjectItemCaseSensitive(j, sparse_keys[k]))
				return vs_error(VS_ESCHEMA,
						"%s: task spec has the sparse-form key '%s' but no 'topk' (a dense "
						"spec has none of them)",
						where, sparse_keys[k]);
		return 0;
	}
	if ((err = get_int(&x, j, "topk", 1, INT32_MAX, where)))
		return err;
	s->topk = (int32_t)x;
	if ((err = get_bool(&s->topk_length, j, "topk_length", where)) ||
	    (err = get_bool(&s->attn_sink, j, "attn_sink", where)))
		return err;
	if (!cJSON_GetObjectItemCaseSensitive(j, "extra_topk")) {
		for (size_t k = EXTRA_KEY0 + 1; k < NKEYS(sparse_keys); k++)
			if (cJSON_GetObjectItemCaseSensitive(j, sparse_keys[k]))
				return vs_error(VS_ESCHEMA, "%s: task spec has '%s' but no 'extra_topk'", where,
						sparse_keys[k]);
		return 0;
	}
#define GETX(field)                                                                                                    \
	do {                                                                                                           \
		if ((err = get_int(&x, j, #field, 1, INT32_MAX, where)))                                               \
			return err;                                                                                    \
		s->field = (int32_t)x;                                                                                 \
	} while (0)
	GETX(extra_topk);
	GETX(extra_page_size);
	GETX(extra_max_pages);
	GETX(extra_num_pages);
#undef GETX
	if ((err = get_bool(&s->extra_topk_length, j, "extra_topk_length", where)))
		return err;
	return get_lens(&s->extra_seqlens, j, "extra_seqlens", s->batch, where);
}

/*
 * spec_from_json: parse a spec from JSON (as written by spec_to_json, after printing and parsing, or as the
 * raw items it holds) and validate it (spec_validate()). page_offset may be left out (0);
 * the sparse keys are all absent (dense) or present as spec_to_json() writes them (the extra
 * cache's all or none); every other key is required and unknown keys are refused. *s is set only on
 * success.
 * Errors: VS_ESCHEMA naming the key, VS_ENOMEM.
 */
static int spec_from_json(struct task_spec *out, const cJSON *j, const char *where)
{
	struct task_spec s;
	const cJSON *it;
	double v;
	int64_t x;
	int err = 0;

	memset(&s, 0, sizeof(s));
	if (!cJSON_IsObject(j))
		return vs_error(VS_ESCHEMA, "%s: task spec is not an object", where);
	cJSON_ArrayForEach(it, j)
	{
		int known = 0;

		for (size_t k = 0; k < NKEYS(spec_keys); k++)
			known |= !strcmp(it->string, spec_keys[k]);
		for (size_t k = 0; k < NKEYS(sparse_keys); k++)
			known |= !strcmp(it->string, sparse_keys[k]);
		if (!known)
			return vs_error(VS_ESCHEMA, "%s: task spec has unknown key '%s'", where, it->string);
	}
	it = cJSON_GetObjectItemCaseSensitive(j, "name");
	if (!cJSON_IsString(it) || strlen(it->valuestring) >= sizeof(s.name))
		return vs_error(VS_ESCHEMA, "%s: task spec 'name' must be a string of at most %zu bytes", where,
				sizeof(s.name) - 1);
	memcpy(s.name, it->valuestring, strlen(it->valuestring) + 1);
	it = cJSON_GetObjectItemCaseSensitive(j, "kv_dtype");
	if (!cJSON_IsString(it) || !(s.kv_dtype = mla_kv_dtype_parse(it->valuestring)))
		return vs_error(VS_ESCHEMA,
				"%s: task spec 'kv_dtype' must be \"bf16\", \"fp8_e4m3_fnuz\" (dense form), "
				"\"fp8_ds_mla\", \"fp8_ds_mla_fnuz\", \"fp8_model1\" or \"fp8_model1_fnuz\" (sparse "
				"form)",
				where);
#define GET32(field)                                                                                                   \
	do {                                                                                                           \
		if ((err = get_int(&x, j, #field, INT32_MIN, INT32_MAX, where)))                                       \
			return err;                                                                                    \
		s.field = (int32_t)x;                                                                                  \
	} while (0)
	GET32(batch);
	GET32(s_q);
	GET32(h_q);
	GET32(page_size);
	GET32(max_pages);
	GET32(num_pages);
	GET32(input_sets);
#undef GET32
	if (s.batch < 1)
		return vs_error(VS_ESCHEMA, "%s: task spec 'batch' is %d, it must be at least 1", where, s.batch);
	if (cJSON_GetObjectItemCaseSensitive(j, "page_offset")) {
		if ((err = get_int(&x, j, "page_offset", INT32_MIN, INT32_MAX, where)))
			return err;
		s.page_offset = x;
	}
	if ((err = get_int(&x, j, "seed", 0, (int64_t)VS_TASK_SEED_MAX, where)))
		return err;
	s.seed = (uint64_t)x;
	it = cJSON_GetObjectItemCaseSensitive(j, "softmax_scale");
	if (!it)
		return vs_error(VS_ESCHEMA, "%s: task spec lacks 'softmax_scale'", where);
	if (jsonfile_number(&v, it))
		return vs_error(VS_ESCHEMA, "%s: task spec 'softmax_scale' is not a number", where);
	s.softmax_scale = (float)v;
	if ((err = get_tol(&s.tol_out, j, "tol_out", where)) || (err = get_tol(&s.tol_lse, j, "tol_lse", where)))
		return err;
	if ((err = get_lens(&s.seqlens, j, "seqlens", s.batch, where)))
		goto done;
	if ((err = sparse_from_json(&s, j, where)) || (err = spec_validate(&s, where)))
		goto done;
	*out = s;
	s.seqlens = NULL;
	s.extra_seqlens = NULL;
done:
	free(s.seqlens);
	free(s.extra_seqlens);
	return err;
}

/* a * b into *out unless it exceeds SIZE_LIMIT; 0 ok, -1 too large. Operands are >= 0. */
static int mul_ok(uint64_t *out, uint64_t a, uint64_t b)
{
	if (a != 0 && b > SIZE_LIMIT / a)
		return -1;
	*out = a * b;
	return 0;
}

static int tol_ok(const struct task_tol *t)
{
	return isfinite(t->atol) && isfinite(t->rtol) && isfinite(t->cos_tol) && t->atol >= 0 && t->rtol >= 0;
}

/* The sparse fields: all 0 / NULL in a dense spec, consistent in a sparse one. */
static int sparse_validate(const struct task_spec *s, const char *where)
{
	int64_t need = 0;
	uint64_t n;

	if (!s->topk) {
		const char *set = s->extra_topk        ? "extra_topk" :
				  s->extra_page_size   ? "extra_page_size" :
				  s->extra_max_pages   ? "extra_max_pages" :
				  s->extra_num_pages   ? "extra_num_pages" :
				  s->extra_seqlens     ? "extra_seqlens" :
				  s->topk_length       ? "topk_length" :
				  s->extra_topk_length ? "extra_topk_length" :
				  s->attn_sink         ? "attn_sink" :
							 NULL;

		if (set)
			return vs_error(VS_ESCHEMA, "%s: task '%s': %s is set, but topk is 0 (dense: no sparse fields)",
					where, s->name, set);
		return 0;
	}
	if (s->page_offset)
		return vs_error(VS_ESCHEMA,
				"%s: task '%s': page_offset is %lld, the sparse form needs 0 (its indices address "
				"the stored cache)",
				where, s->name, (long long)s->page_offset);
	if ((s->topk_length != 0 && s->topk_length != 1) || (s->attn_sink != 0 && s->attn_sink != 1) ||
	    (s->extra_topk_length != 0 && s->extra_topk_length != 1))
		return vs_error(VS_ESCHEMA, "%s: task '%s': topk_length, extra_topk_length and attn_sink are 0 or 1",
				where, s->name);
	if (s->extra_topk < 0)
		return vs_error(VS_ESCHEMA, "%s: task '%s': extra_topk is %d, it must be at least 0", where, s->name,
				s->extra_topk);
	if (!s->extra_topk) {
		if (s->extra_page_size || s->extra_max_pages || s->extra_num_pages || s->extra_seqlens ||
		    s->extra_topk_length)
			return vs_error(VS_ESCHEMA,
					"%s: task '%s': extra cache fields are set, but extra_topk is 0 (no extra "
					"cache)",
					where, s->name);
	} else {
		if (s->extra_page_size < 1 || s->extra_max_pages < 1 || s->extra_num_pages < 1)
			return vs_error(VS_ESCHEMA,
					"%s: task '%s': extra_page_size %d, extra_max_pages %d and extra_num_pages %d "
					"must be at least 1 with an extra cache",
					where, s->name, s->extra_page_size, s->extra_max_pages, s->extra_num_pages);
		if (!s->extra_seqlens)
			return vs_error(VS_ESCHEMA, "%s: task '%s' has extra_topk %d but no extra_seqlens", where,
					s->name, s->extra_topk);
		for (int b = 0; b < s->batch; b++) {
			if (s->extra_seqlens[b] < 0 ||
			    (int64_t)s->extra_seqlens[b] > (int64_t)s->extra_max_pages * s->extra_page_size)
				return vs_error(VS_ESCHEMA,
						"%s: task '%s': extra_seqlens[%d] is %d, outside [0, extra_max_pages x "
						"extra_page_size = %lld]",
						where, s->name, b, s->extra_seqlens[b],
						(long long)s->extra_max_pages * s->extra_page_size);
			need += ((int64_t)s->extra_seqlens[b] + s->extra_page_size - 1) / s->extra_page_size;
		}
		if (need > s->extra_num_pages)
			return vs_error(VS_ESCHEMA,
					"%s: task '%s': extra_num_pages is %d, but the extra_seqlens need %lld pages "
					"of %d",
					where, s->name, s->extra_num_pages, (long long)need, s->extra_page_size);
	}
	if ((int64_t)s->num_pages * s->page_size > INT32_MAX ||
	    (int64_t)s->extra_num_pages * s->extra_page_size > INT32_MAX)
		return vs_error(VS_ESCHEMA,
				"%s: task '%s': a cache of more than 2^31 - 1 rows: the int32 indices cannot name them",
				where, s->name);
	if (mul_ok(&n, (uint64_t)s->batch, (uint64_t)s->s_q) || mul_ok(&n, n, (uint64_t)s->topk + s->extra_topk) ||
	    mul_ok(&n, n, 4) || mul_ok(&n, (uint64_t)s->num_pages, mla_kv_page_bytes(s->kv_dtype, s->page_size)) ||
	    mul_ok(&n, (uint64_t)s->extra_num_pages, mla_kv_page_bytes(s->kv_dtype, s->extra_page_size)) ||
	    mul_ok(&n, (uint64_t)s->batch, (uint64_t)s->extra_max_pages) || mul_ok(&n, n, 4))
		return vs_error(VS_ESCHEMA, "%s: task '%s': its tensors' byte sizes overflow", where, s->name);
	return 0;
}

/*
 * Refuse a spec that cannot be materialized, with one line naming the field: unknown kv_dtype,
 * non-positive batch, s_q, h_q, page_size, max_pages or num_pages; seqlens missing, negative or
 * above max_pages x page_size; num_pages smaller than the pages the seqlens need; page_offset
 * negative or so large that page indices reach VS_BLOCK_TABLE_SENTINEL (or leave int32); byte sizes
 * that overflow; softmax_scale not finite and positive; seed above VS_TASK_SEED_MAX; input_sets
 * outside [2, VS_TASK_MAX_SETS]; tolerances negative or not finite (cos_tol < 0 means unchecked).
 * s_q > 1 is allowed (causal in the dense form).
 * Dense (topk 0): kv_dtype bf16 or fp8_e4m3_fnuz, and every sparse field 0 / NULL. Sparse (topk >= 1):
 * kv_dtype bf16 or a per-block-scaled format (mla_kv_is_blockscaled()), page_offset 0, topk_length,
 * extra_topk_length and attn_sink 0 or 1; extra_topk 0 with every extra_* field 0 / NULL, or
 * extra_topk >= 1 with extra_page_size, extra_max_pages, extra_num_pages >= 1 and extra_seqlens in
 * [0, extra_max_pages x extra_page_size] needing at most extra_num_pages pages.
 * where prefixes the message. Errors: VS_ESCHEMA.
 */
static int spec_validate(const struct task_spec *s, const char *where)
{
	int64_t need = 0;
	uint64_t n;
	int err;

	if (!memchr(s->name, '\0', sizeof(s->name)) || !s->name[0])
		return vs_error(VS_ESCHEMA, "%s: task spec 'name' is empty or not terminated", where);
	if (s->topk < 0)
		return vs_error(VS_ESCHEMA, "%s: task '%s': topk is %d, it must be 0 (dense) or at least 1 (sparse)",
				where, s->name, s->topk);
	if (!s->topk && s->kv_dtype != MLA_KV_BF16 && s->kv_dtype != MLA_KV_FP8_E4M3_FNUZ)
		return vs_error(VS_ESCHEMA,
				"%s: task '%s': kv_dtype %d is neither bf16 nor "
				"fp8_e4m3_fnuz (the dense form's formats%s)",
				where, s->name, s->kv_dtype,
				mla_kv_is_blockscaled(s->kv_dtype) ? "; a per-block-scaled format needs topk > 0" : "");
	if (s->topk && s->kv_dtype != MLA_KV_BF16 && !mla_kv_is_blockscaled(s->kv_dtype))
		return vs_error(VS_ESCHEMA,
				"%s: task '%s': kv_dtype %d (%s) is not a format of the sparse form (bf16, fp8_ds_mla, "
				"fp8_model1 or their fnuz twins)",
				where, s->name, s->kv_dtype,
				mla_kv_dtype_name(s->kv_dtype) ? mla_kv_dtype_name(s->kv_dtype) : "unknown");
#define POSITIVE(field)                                                                                                \
	if (s->field < 1)                                                                                              \
	return vs_error(VS_ESCHEMA, "%s: task '%s': " #field " is %d, it must be at least 1", where, s->name, s->field)
	POSITIVE(batch);
	POSITIVE(s_q);
	POSITIVE(h_q);
	POSITIVE(page_size);
	POSITIVE(max_pages);
	POSITIVE(num_pages);
#undef POSITIVE
	if (!s->seqlens)
		return vs_error(VS_ESCHEMA, "%s: task '%s' has no seqlens", where, s->name);
	for (int b = 0; b < s->batch; b++) {
		if (s->seqlens[b] < 0 || (int64_t)s->seqlens[b] > (int64_t)s->max_pages * s->page_size)
			return vs_error(VS_ESCHEMA,
					"%s: task '%s': seqlens[%d] is %d, outside [0, "
					"max_pages x page_size = %lld]",
					where, s->name, b, s->seqlens[b], (long long)s->max_pages * s->page_size);
		need += ((int64_t)s->seqlens[b] + s->page_size - 1) / s->page_size;
	}
	if (need > s->num_pages)
		return vs_error(VS_ESCHEMA,
				"%s: task '%s': num_pages is %d, but the seqlens need %lld "
				"pages of %d",
				where, s->name, s->num_pages, (long long)need, s->page_size);
	if (s->page_offset < 0 || s->page_offset > (int64_t)VS_BLOCK_TABLE_SENTINEL - s->num_pages)
		return vs_error(VS_ESCHEMA,
				"%s: task '%s': page_offset %lld puts page indices outside "
				"[0, %d) (the block_table sentinel)",
				where, s->name, (long long)s->page_offset, (int)VS_BLOCK_TABLE_SENTINEL);
	if ((err = sparse_validate(s, where)))
		return err;
	if (mul_ok(&n, (uint64_t)s->num_pages, (uint64_t)s->page_size) || mul_ok(&n, n, MLA_D_QK * 2) ||
	    mul_ok(&n, (uint64_t)s->batch, (uint64_t)s->s_q) || mul_ok(&n, n, (uint64_t)s->h_q) ||
	    mul_ok(&n, n, MLA_D_QK * 4) || mul_ok(&n, (uint64_t)s->batch, (uint64_t)s->max_pages) || mul_ok(&n, n, 4))
		return vs_error(VS_ESCHEMA, "%s: task '%s': its tensors' byte sizes overflow", where, s->name);
	if (!isfinite(s->softmax_scale) || !(s->softmax_scale > 0))
		return vs_error(VS_ESCHEMA,
				"%s: task '%s': softmax_scale %g must be finite and "
				"positive",
				where, s->name, (double)s->softmax_scale);
	if (s->seed > VS_TASK_SEED_MAX)
		return vs_error(VS_ESCHEMA, "%s: task '%s': seed %llu is above 2^53 (not exact in JSON)", where,
				s->name, (unsigned long long)s->seed);
	if (s->input_sets < 2 || s->input_sets > VS_TASK_MAX_SETS)
		return vs_error(VS_ESCHEMA, "%s: task '%s': input_sets is %d, outside [2, %d]", where, s->name,
				s->input_sets, VS_TASK_MAX_SETS);
	if (!tol_ok(&s->tol_out) || !tol_ok(&s->tol_lse))
		return vs_error(VS_ESCHEMA,
				"%s: task '%s': tol_%s must have finite atol >= 0, rtol >= 0 "
				"and a finite cos_tol",
				where, s->name, tol_ok(&s->tol_out) ? "lse" : "out");
	return 0;
}

/* ---- counting and tolerances ---------------------------------------------------------------- */

static double seqlen_sum(const struct task_spec *s)
{
	double sum = 0;

	for (int b = 0; s->seqlens && b < s->batch; b++)
		sum += s->seqlens[b];
	return sum;
}

/*
 * FlashMLA's counts for one input set: bytes moved and flops (docs/DESIGN.md).
 * Dense: bytes = sum(seqlens) x 576 x kv element size + q + out (bf16); flops = 2 x s_q x h_q x
 * sum(seqlens) x (576 + 512).
 * Sparse (FlashMLA's formula, tests/lib.py count_flop_and_mem_vol_for_decode, over the valid
 * entries), counted on the generated input set 0 (its indices and topk_length; the other sets differ
 * by little): flops = 2 x h_q x attended x (d_qk + d_v), attended = the valid entries over every
 * query row (not -1, within topk_length), the extra cache's likewise; bytes = retrieved x
 * mla_kv_token_bytes() + q + out, retrieved = the distinct cache rows that some valid entry names
 * (both caches). A spec that cannot be generated counts 0.
 */
static double bytes(const struct task_spec *s)
{
	double q = (double)s->batch * s->s_q * s->h_q * mla_kv_d_qk(s->kv_dtype) * 2;
	double out = (double)s->batch * s->s_q * s->h_q * MLA_D_V * 2;
	double attended, retrieved;

	if (s->topk > 0) {
		mla_sparse_counts(s, &attended, &retrieved);
		return retrieved * (double)mla_kv_token_bytes(s->kv_dtype) + q + out;
	}
	return seqlen_sum(s) * MLA_D_QK * (double)mla_kv_elem_size(s->kv_dtype) + q + out;
}

static double flops(const struct task_spec *s)
{
	double attended, retrieved;

	if (s->topk > 0) {
		mla_sparse_counts(s, &attended, &retrieved);
		return 2.0 * s->h_q * attended * (mla_kv_d_qk(s->kv_dtype) + MLA_D_V);
	}
	return 2.0 * s->s_q * s->h_q * seqlen_sum(s) * (MLA_D_QK + MLA_D_V);
}

size_t mla_task_page_bytes(const struct task_spec *s)
{
	return mla_kv_page_bytes(s->kv_dtype, s->page_size);
}

/*
 * The parity tolerances a task of spec s's form and format gets (docs/DESIGN.md "The sparse form"):
 * dense: out atol 8e-4, rtol 2.01/128, cos 5e-6; lse atol 1e-5, rtol 8.01/65536 (FlashMLA's dense
 * test, atol calibrated on our N(0,1)/10 sets). Sparse, every format: out atol 1e-3, rtol 2.01/128,
 * cos 5e-6 (FlashMLA's sparse test); lse atol 1e-5, rtol 8.01/65536. The fp8 formats need no more:
 * the reference reads the decoded values (code x a power-of-two scale, exact in bf16), as FlashMLA's
 * test compares with the dequantized cache.
 */
static void tolerances(struct task_tol *tol_out, struct task_tol *tol_lse, const struct task_spec *s)
{
	*tol_out = (struct task_tol){s->topk > 0 ? 1e-3 : 8e-4, 2.01 / 128.0, 5e-6};
	*tol_lse = (struct task_tol){1e-5, 8.01 / 65536.0, -1.0};
}

/* ---- the kernel ABI's view of a task --------------------------------------------------------- */

void mla_task_kernel_shape(struct mla_decode_args *a, const struct task_spec *s)
{
	memset(a, 0, sizeof(*a));
	a->batch = s->batch;
	a->s_q = s->s_q;
	a->h_q = s->h_q;
	a->num_pages = (int32_t)(s->num_pages + s->page_offset);
	a->page_size = s->page_size;
	a->max_pages = s->topk > 0 ? 0 : s->max_pages;
	a->kv_dtype = s->kv_dtype;
	a->softmax_scale = s->softmax_scale;
	a->kv_scale = 1.0f;
	a->d_qk = mla_kv_d_qk(s->kv_dtype);
	a->d_v = MLA_D_V;
	if (s->topk > 0) {
		a->topk = s->topk;
		a->extra_topk = s->extra_topk;
		a->extra_num_pages = s->extra_num_pages;
		a->extra_page_size = s->extra_page_size;
	}
}

int mla_task_oracle_args(struct mla_decode_args *a, int32_t **bt_owned, const struct task_spec *s, const void *q,
			 const void *kv_cache, const int32_t *block_table, const int32_t *seqlens, float kv_scale)
{
	*bt_owned = NULL;
	memset(a, 0, sizeof(*a));
	a->q = q;
	a->kv_cache = kv_cache;
	a->block_table = block_table;
	a->seqlens = seqlens;
	if (s->page_offset && block_table) { /* the dense form's virtual cache base (task.h page_offset) */
		size_t n = (size_t)s->batch * s->max_pages;
		int32_t *bt = malloc(n * sizeof(*bt) + 1);

		if (!bt)
			return vs_error(VS_ENOMEM, "out of memory computing the reference of '%s'", s->name);
		memcpy(bt, block_table, n * sizeof(*bt));
		for (size_t i = 0; i < n; i++)
			if (bt[i] != VS_BLOCK_TABLE_SENTINEL)
				bt[i] -= (int32_t)s->page_offset;
		a->block_table = bt;
		*bt_owned = bt;
	}
	a->batch = s->batch;
	a->s_q = s->s_q;
	a->h_q = s->h_q;
	a->num_pages = s->num_pages;
	a->page_size = s->page_size;
	a->max_pages = s->max_pages;
	a->kv_dtype = s->kv_dtype;
	a->softmax_scale = s->softmax_scale;
	a->kv_scale = kv_scale;
	a->d_qk = mla_kv_d_qk(s->kv_dtype);
	a->d_v = MLA_D_V;
	return 0;
}

int mla_task_set_oracle_args(struct mla_decode_args *a, int32_t **bt_owned, const struct task_spec *s,
			     const struct task_set *ts, const void *q)
{
	int err;

	if (s->topk <= 0)
		return mla_task_oracle_args(a, bt_owned, s, q ? q : ts->q, ts->kv_cache, ts->block_table, ts->seqlens,
					    ts->kv_scale);
	/* the sparse form: the indices address the cache, no block_table or seqlens (mla_decode.h) */
	if ((err = mla_task_oracle_args(a, bt_owned, s, q ? q : ts->q, ts->kv_cache, NULL, NULL, 1.0f)))
		return err;
	a->max_pages = 0;
	a->indices = ts->indices;
	a->topk_length = ts->topk_length;
	a->attn_sink = ts->attn_sink;
	a->topk = s->topk;
	if (s->extra_topk > 0) {
		a->extra_kv_cache = ts->extra_kv_cache;
		a->extra_indices = ts->extra_indices;
		a->extra_topk_length = ts->extra_topk_length;
		a->extra_topk = s->extra_topk;
		a->extra_num_pages = s->extra_num_pages;
		a->extra_page_size = s->extra_page_size;
	}
	return 0;
}

/* ---- the oracle ----------------------------------------------------------------------------- */

static int reference(float *out, float *lse, const struct task_spec *s, const struct task_set *ts, const void *q,
		     int threads)
{
	struct mla_decode_args a;
	int32_t *bt = NULL;
	int rc, err;

	if ((err = mla_task_set_oracle_args(&a, &bt, s, ts, q)))
		return err;
	rc = mla_decode_reference(&a, out, lse, threads);
	free(bt);
	if (rc != MLA_OK)
		return vs_error(VS_EFAIL, "the oracle refused the inputs of task '%s' (status %d)", s->name, rc);
	return 0;
}

/* ---- the plan summary ----------------------------------------------------------------------- */

static const char *form(const struct task_spec *s)
{
	return s->topk ? "sparse (its tasks have topk)" : "dense";
}

/* b, s_q, h_q, page, sum(lens), MB, and for a sparse plan the cache format and topk[+extra_topk]. */
static void summary_header(FILE *f, const struct task_spec *first)
{
	fprintf(f, " %5s %4s %4s %4s %9s %9s%s", "b", "s_q", "h_q", "page", "sum(lens)", "MB",
		first && first->topk ? "  kv_dtype          topk" : "");
}

static void summary_row(FILE *f, const struct task_spec *s, const struct task_spec *first)
{
	char topk[32];

	fprintf(f, " %5d %4d %4d %4d %9.0f %9.1f", s->batch, s->s_q, s->h_q, s->page_size, seqlen_sum(s),
		bytes(s) / 1e6);
	if (s->topk && s->extra_topk)
		snprintf(topk, sizeof(topk), "%d+%d", s->topk, s->extra_topk);
	else
		snprintf(topk, sizeof(topk), "%d", s->topk);
	if (first && first->topk)
		fprintf(f, "  %-16s %6s", mla_kv_dtype_name(s->kv_dtype), topk);
}

/* ---- the operator --------------------------------------------------------------------------- */

static int dtype(const struct task_spec *s)
{
	return s->kv_dtype;
}

/*
 * Why impl does not run task t, into why (1), or 0 when it runs it: its supports() on the task's
 * shapes (mla_task_kernel_shape(): every pointer NULL, kv_scale 1, no device); an implementation
 * without supports() runs the dense form with bf16 or fp8_e4m3_fnuz only (kernels/mla_decode.h).
 */
static int impl_skips(const void *implementation, const struct task_spec *t, char *why, size_t cap)
{
	const struct mla_decode_impl *impl = implementation;
	struct mla_decode_args a;

	*why = '\0';
	if (!impl->supports && (t->topk || (t->kv_dtype != MLA_KV_BF16 && t->kv_dtype != MLA_KV_FP8_E4M3_FNUZ))) {
		snprintf(why, cap, "%s has no supports(): it runs the dense form only (bf16, fp8_e4m3_fnuz), not %s",
			 impl->name, t->topk ? "the sparse form" : mla_kv_dtype_name(t->kv_dtype));
		return 1;
	}
	if (!impl->supports)
		return 0;
	mla_task_kernel_shape(&a, t);
	if (impl->supports(&a, why, cap) == 1)
		return 0;
	why[cap - 1] = '\0';
	if (!*why)
		snprintf(why, cap, "not supported (supports() gave no reason)");
	return 1;
}

const struct vs_operator vs_op_mla_decode = {
	.name = "mla_decode",
	.card_operator = "mla_attention",
	.oracle_version = MLA_ORACLE_VERSION,
	.spec_to_json = spec_to_json,
	.spec_from_json = spec_from_json,
	.spec_validate = spec_validate,
	.spec_copy = spec_copy,
	.spec_release = spec_release,
	.bytes = bytes,
	.flops = flops,
	.tolerances = tolerances,
	.dtype = dtype,
	.dtype_name = mla_kv_dtype_name,
	.generate_inputs = mla_generate_inputs,
	.inputs = mla_task_inputs,
	.outputs = mla_task_outputs,
	.manifest_tensors = mla_manifest_tensors,
	.reference = reference,
	.impl_skips = impl_skips,
	.plan_card = mla_plan_card,
	.derive_tasks = mla_derive_tasks,
	.form_note = mla_plan_form,
	.full_tier_extra = mla_full_tier_extra,
	.spec_named = mla_spec_named,
	.e2e_task = mla_e2e_task,
	.form = form,
	.summary_header = summary_header,
	.summary_row = summary_row,
};
