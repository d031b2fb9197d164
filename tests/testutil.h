/* testutil.h - helpers shared by the Check suites (temporary dirs, running the tool, files). */
#ifndef VS_TESTUTIL_H
#define VS_TESTUTIL_H

#include <check.h>
#include <stddef.h>

struct cJSON;
struct task_spec;

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

/**
 * In root: --record skills/mla_decode_cpu_splitkv.md --eval-dir eval, which must exit 0; then, when
 * verify is set, --verify of that card, which must exit 0 too. Returns the record's stdout
 * (malloc'd) for the caller's checks.
 */
char *tu_record_cpu_card(const char *root, const char *eval, int verify);

/**
 * A scratch repository for runs: copies skills/mla_decode_cpu_splitkv.md into root/skills/ (its
 * speedup gate lowered from 1.3 to 1.1, so that short noisy runs agree on the verdict), emits
 * its plan with extra_args (e.g. "--candidate-lib x.so"), then shrinks the plan so that a run takes
 * seconds: its first ntasks tasks, the first ncfg configs of each implementation, few pairs.
 * Returns the plan path relative to root (malloc'd).
 */
char *tu_small_plan(const char *root, const char *extra_args, int ntasks, int ncfg);

/** tu_small_plan() from a card copy with the first `find` replaced by `replace`. */
char *tu_small_plan_edit(const char *root, const char *extra_args, int ntasks, int ncfg, const char *find,
			 const char *replace);

/** The eval dir a `--run`/`--merge` printed ("eval dir: X" or "merged ... into X"), malloc'd, or NULL. */
char *tu_eval_dir_of(const char *out);

/** The JSON file dir/rel, parsed (the caller deletes it); aborts the test when it is not JSON. */
struct cJSON *tu_json_file(const char *dir, const char *rel);

/**
 * A bf16 page-offset task: 6 stored pages of 64 rows at page 60000 of a virtual cache (60000 * 64 *
 * 576 * 2 bytes = 4.4e9 in, past 2^32), batch 2 with lengths 129 and 64, s_q 1, h_q 16, 2 input
 * sets. *s is cleared first; its name, softmax_scale, seed and tolerances are the caller's to set.
 */
void tu_page_offset_spec(struct task_spec *s);

/** A string member of a JSON file (dotted path "a.b"), malloc'd, or NULL. */
char *tu_json_str(const char *path, const char *dotted);

/**
 * Run suite s (CK_NORMAL output, Check's default fork mode) and return the process exit status:
 * 0 when every test passed, 1 otherwise.
 */
int tu_run_suite(Suite *s);

/** Count lines in s (a trailing line without newline counts). */
int tu_count_lines(const char *s);

#endif /* VS_TESTUTIL_H */
