/*
 * jsonfile.h - strict reading of JSON files that people may edit or copy around (plans, results),
 * and complete writing of the JSON written as evidence.
 */
#ifndef VS_JSONFILE_H
#define VS_JSONFILE_H

#include <stddef.h>
#include <stdint.h>

struct cJSON;

/**
 * Parse len bytes of JSON text (need not be NUL-terminated). On top of cJSON's own checks it refuses
 * a key that appears twice in one object: cJSON keeps both and answers the first, while other readers
 * (Python's json) take the last, so such a file means different things to different tools.
 * path names the file in messages. *out (release with cJSON_Delete) is set only on success.
 * Errors: VS_EPARSE "<path>:<line>: not valid JSON", "<path>: key '<k>' appears twice in <where>"
 * (where is "the top-level object" or a path like "tasks[2].spec").
 */
int jsonfile_parse(struct cJSON **out, const char *text, size_t len, const char *path);

/*
 * Building JSON that is complete or not written: every item goes through jsonfile_put*(), which
 * set the sticky *oom when an item cannot be created or attached (the item is then freed); the
 * writer checks *oom once before printing. A NULL string value adds no key (as
 * cJSON_AddStringToObject() with NULL does).
 */

/** Attach item (taken, NULL sets *oom) to object o under key, or append it to array o (key NULL). */
int jsonfile_put(int *oom, struct cJSON *o, const char *key, struct cJSON *item);

/** o[key] = v (a copy); nothing when v is NULL. */
void jsonfile_put_str(int *oom, struct cJSON *o, const char *key, const char *v);

/** o[key] = v. */
void jsonfile_put_num(int *oom, struct cJSON *o, const char *key, double v);

/** o[key] = true / false. */
void jsonfile_put_bool(int *oom, struct cJSON *o, const char *key, int v);

/** o[key] = a new empty object / array, returned (borrowed; NULL after a failure). */
struct cJSON *jsonfile_put_obj(int *oom, struct cJSON *o, const char *key);
struct cJSON *jsonfile_put_arr(int *oom, struct cJSON *o, const char *key);

/*
 * Numbers that read back exactly (task specs and manifests): cJSON 1.7's printer does not
 * round-trip every double, so these are raw items holding the shortest text that reads back to
 * the same value. NULL when out of memory.
 */

/** The shortest %.Ng (N = 6..9) that strtof() reads back to v exactly, into buf. */
void jsonfile_fmt_float(char buf[40], float v);

/** A raw item: the shortest %.Ng (N = 15..17) of v that strtod() reads back exactly. */
struct cJSON *jsonfile_raw_double(double v);

/** A raw item: jsonfile_fmt_float() of v. */
struct cJSON *jsonfile_raw_float(float v);

/** Raw items holding v in decimal (exact beyond 2^53, where a cJSON number is not). */
struct cJSON *jsonfile_raw_u64(uint64_t v);
struct cJSON *jsonfile_raw_i64(int64_t v);

/**
 * Attach item to obj under key (to array obj when key is NULL). Returns 1, or 0 when obj or item
 * is NULL or attaching fails; item is freed then (so calls chain with ||, the first 0 ending it).
 */
int jsonfile_add(struct cJSON *obj, const char *key, struct cJSON *item);

/** The value of a cJSON number or of a raw item holding a number into *out: 0, or -1 when j is neither. */
int jsonfile_number(double *out, const struct cJSON *j);

#endif /* VS_JSONFILE_H */
