/* testutil.h - helpers shared by the Check suites (temporary dirs, running the tool, files). */
#ifndef VS_TESTUTIL_H
#define VS_TESTUTIL_H

#include <check.h>
#include <stddef.h>

/** A fresh temporary directory (mkdtemp under $TMPDIR or /tmp); caller frees the string. */
char *tu_tmpdir(void);

/** Path of a fixture: $VS_SOURCE_DIR/tests/resources/<name> (malloc'd). */
char *tu_resource(const char *name);

/** Path under the source root: $VS_SOURCE_DIR/<rel> (malloc'd). */
char *tu_source(const char *rel);

/** Write len bytes to path (non-atomic; for fixtures). Aborts the test on failure. */
void tu_write(const char *path, const void *data, size_t len);

/** Read a whole file (malloc'd, NUL-terminated); aborts the test on failure. */
char *tu_read(const char *path, size_t *len);

/**
 * Run the validate_skill binary ($VS_TOOL) with args (a shell-quoted string) in directory cwd
 * (NULL = current). Captures stdout and stderr into malloc'd strings (either out-param may be
 * NULL). Returns the exit status (or -1 if it did not exit normally).
 */
int tu_run_tool(const char *cwd, const char *args, char **out, char **err);

/** Count lines in s (a trailing line without newline counts). */
int tu_count_lines(const char *s);

#endif /* VS_TESTUTIL_H */
