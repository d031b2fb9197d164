/*
 * jsonfile.h - strict reading of JSON files that people may edit or copy around (plans, results).
 */
#ifndef VS_JSONFILE_H
#define VS_JSONFILE_H

#include <stddef.h>

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

#endif /* VS_JSONFILE_H */
