#include "testutil.h"

#include "fsutil.h"
#include "mla_decode.h"
#include "plan.h"
#include "task.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/*
 * The test directories this process made, removed when it exits (Check runs each test in a
 * process of its own): by the process that made them only, never by a child that forks off and
 * exits. VS_TEST_KEEP=1 keeps them for a look after a failure. Until 2026-12-05 every test run left
 * its directories in /tmp (5582 of them in a day).
 */
#define TU_MAX_TMPDIRS 64
static struct {
	char *path;
	pid_t owner; /* the process that made it, the only one that removes it */
} tu_dirs[TU_MAX_TMPDIRS];
static int tu_ndirs;
static int tu_registered; /* tu_remove_dirs is on the atexit() list (a forked child inherits it) */

static void tu_remove_dirs(void)
{
	const char *keep = getenv("VS_TEST_KEEP");

	if (keep && !strcmp(keep, "1"))
		return;
	for (int i = 0; i < tu_ndirs; i++)
		if (tu_dirs[i].owner == getpid())
			fs_remove_tree(tu_dirs[i].path);
}

char *tu_tmpdir(void)
{
	const char *base = getenv("TMPDIR");
	char *tmpl = NULL;

	if (asprintf(&tmpl, "%s/vs_test_XXXXXX", base && *base ? base : "/tmp") < 0)
		ck_abort_msg("asprintf failed");
	if (!mkdtemp(tmpl))
		ck_abort_msg("mkdtemp failed for %s", tmpl);
	if (!tu_registered) {
		tu_registered = 1;
		atexit(tu_remove_dirs);
	}
	if (tu_ndirs < TU_MAX_TMPDIRS) {
		tu_dirs[tu_ndirs].path = strdup(tmpl);
		tu_dirs[tu_ndirs++].owner = getpid();
	}
	return tmpl;
}

char *tu_source(const char *rel)
{
	const char *root = getenv("VS_SOURCE_DIR");
	char *p = NULL;

	if (asprintf(&p, "%s/%s", root && *root ? root : ".", rel) < 0)
		ck_abort_msg("asprintf failed");
	return p;
}

char *tu_resource(const char *name)
{
	char *rel = NULL, *p;

	if (asprintf(&rel, "tests/resources/%s", name) < 0)
		ck_abort_msg("asprintf failed");
	p = tu_source(rel);
	free(rel);
	return p;
}

void tu_write(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	ck_assert_msg(f != NULL, "cannot write %s", path);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	fclose(f);
}

char *tu_read(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	ck_assert_msg(f != NULL, "cannot read %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	if (len)
		*len = (size_t)n;
	return buf;
}

static char *slurp_fd_file(FILE *f)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);
	char chunk[4096];
	size_t got;

	rewind(f);
	while ((got = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, got, m);
	fclose(m);
	return buf;
}

int tu_run_tool(const char *cwd, const char *args, char **out, char **err)
{
	const char *tool = getenv("VS_TOOL");
	char *cmd = NULL;
	FILE *fo = tmpfile(), *fe = tmpfile();
	int status;
	pid_t pid;

	ck_assert_msg(tool != NULL, "VS_TOOL is not set (run through ctest)");
	ck_assert_ptr_nonnull(fo);
	ck_assert_ptr_nonnull(fe);
	if (asprintf(&cmd, "%s %s", tool, args) < 0)
		ck_abort_msg("asprintf failed");
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		if (cwd && chdir(cwd) != 0)
			_exit(127);
		dup2(fileno(fo), 1);
		dup2(fileno(fe), 2);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	free(cmd);
	if (out)
		*out = slurp_fd_file(fo);
	if (err)
		*err = slurp_fd_file(fe);
	fclose(fo);
	fclose(fe);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

char *tu_record_cpu_card(const char *root, const char *eval, int verify)
{
	char *rec = fs_printf("--record skills/mla_decode_cpu_splitkv.md --eval-dir %s", eval), *out, *err;
	int status = tu_run_tool(root, rec, &out, &err);

	ck_assert_msg(status == 0, "record: exit %d: %s", status, err);
	free(err);
	free(rec);
	if (verify) {
		char *o2, *e2;

		status = tu_run_tool(root, "--verify skills/mla_decode_cpu_splitkv.md", &o2, &e2);
		ck_assert_msg(status == 0, "verify: exit %d: %s", status, e2);
		free(o2);
		free(e2);
	}
	return out;
}

int tu_count_lines(const char *s)
{
	const char *start = s;
	int n = 0;

	for (; s && *s; s++)
		if (*s == '\n')
			n++;
	if (s && s != start && s[-1] != '\n')
		n++;
	return n;
}

char *tu_small_plan(const char *root, const char *extra_args, int ntasks, int ncfg)
{
	return tu_small_plan_edit(root, extra_args, ntasks, ncfg, NULL, NULL);
}

char *tu_small_plan_edit(const char *root, const char *extra_args, int ntasks, int ncfg, const char *find,
			 const char *replace)
{
	char *src = tu_resource("skills/mla_decode_cpu_splitkv.md"), *dir = fs_join(root, "skills");
	char *dst = fs_join(dir, "mla_decode_cpu_splitkv.md"), *card = tu_read(src, NULL), *args = NULL;
	char *out = NULL, *err = NULL, *plan_rel = strdup("plans/mla_decode_cpu_splitkv.plan.json");
	char *plan = fs_join(root, plan_rel), *text;
	cJSON *j, *tasks, *pr;
	int status;

	fs_mkdir_p(dir);
	{
		/* A gate far below the CPU pair's speedup (about 5x): short runs on a busy machine agree on it. */
		char *g = strstr(card, "isolated_speedup_min: 1.3");

		if (g)
			memcpy(g, "isolated_speedup_min: 1.1", 25);
	}
	if (find) {
		char *at = strstr(card, find), *edited;

		ck_assert_msg(at != NULL, "the card has no '%s'", find);
		edited = fs_printf("%.*s%s%s", (int)(at - card), card, replace, at + strlen(find));
		free(card);
		card = edited;
	}
	tu_write(dst, card, strlen(card));
	if (asprintf(&args, "--emit-plan skills/mla_decode_cpu_splitkv.md %s", extra_args ? extra_args : "") < 0)
		ck_abort_msg("asprintf failed");
	status = tu_run_tool(root, args, &out, &err);
	ck_assert_msg(status == 0, "%s: exit %d: %s", args, status, err);
	{
		/* the plan the tool says it wrote (a plugin plan has its own name) */
		const char *w = strstr(out, "\nwrote ");

		if (w) {
			free(plan_rel);
			free(plan);
			plan_rel = strndup(w + 7, strcspn(w + 7, "\n"));
			plan = fs_join(root, plan_rel);
		}
	}
	text = tu_read(plan, NULL);
	j = cJSON_Parse(text);
	ck_assert_ptr_nonnull(j);
	tasks = cJSON_GetObjectItem(j, "tasks");
	while (cJSON_GetArraySize(tasks) > ntasks)
		cJSON_DeleteItemFromArray(tasks, cJSON_GetArraySize(tasks) - 1);
	/* A reference's skips of the tasks cut go with them. */
	for (cJSON *ref = cJSON_GetObjectItem(j, "references") ? cJSON_GetObjectItem(j, "references")->child : NULL;
	     ref; ref = ref->next) {
		cJSON *skips = cJSON_GetObjectItem(ref, "skips");

		for (int i = cJSON_GetArraySize(skips) - 1; i >= 0; i--) {
			const char *h = cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(skips, i), "task"));
			int keep = 0;

			for (int t = 0; t < cJSON_GetArraySize(tasks); t++)
				keep |= h && !strcmp(h, cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(tasks, t),
												    "hash")));
			if (!keep)
				cJSON_DeleteItemFromArray(skips, i);
		}
	}
	{
		/* The e2e stage's tasks cut with them, and fewer e2e pairs. */
		cJSON *e2e = cJSON_GetObjectItem(j, "e2e"), *et = cJSON_GetObjectItem(e2e, "tasks");

		for (int i = cJSON_GetArraySize(et) - 1; i >= 0; i--) {
			const char *h = cJSON_GetStringValue(cJSON_GetArrayItem(et, i));
			int keep = 0;

			for (int t = 0; t < cJSON_GetArraySize(tasks); t++)
				keep |= h && !strcmp(h, cJSON_GetStringValue(cJSON_GetObjectItem(cJSON_GetArrayItem(tasks, t),
												    "hash")));
			if (!keep)
				cJSON_DeleteItemFromArray(et, i);
		}
		if (e2e) {
			cJSON_SetNumberValue(cJSON_GetObjectItem(e2e, "min_pairs"), 5);
			cJSON_SetNumberValue(cJSON_GetObjectItem(e2e, "max_pairs"), 10);
			cJSON_SetNumberValue(cJSON_GetObjectItem(e2e, "max_seconds"), 2);
		}
	}
	for (int k = 0; k < 2; k++) {
		cJSON *cfgs = cJSON_GetObjectItem(cJSON_GetObjectItem(j, k ? "candidate" : "baseline"), "configs");

		while (cJSON_GetArraySize(cfgs) > ncfg)
			cJSON_DeleteItemFromArray(cfgs, cJSON_GetArraySize(cfgs) - 1);
	}
	pr = cJSON_GetObjectItem(j, "protocol");
	cJSON_SetNumberValue(cJSON_GetObjectItem(pr, "min_pairs"), 8);
	cJSON_SetNumberValue(cJSON_GetObjectItem(pr, "max_pairs"), 30);
	cJSON_SetNumberValue(cJSON_GetObjectItem(pr, "max_seconds"), 2);
	cJSON_SetNumberValue(cJSON_GetObjectItem(pr, "bootstrap_resamples"), 400);
	free(text);
	text = cJSON_Print(j);
	tu_write(plan, text, strlen(text));
	cJSON_free(text);
	cJSON_Delete(j);
	free(src);
	free(dir);
	free(dst);
	free(card);
	free(args);
	free(out);
	free(err);
	free(plan);
	return plan_rel;
}

char *tu_eval_dir_of(const char *out)
{
	const char *s = out ? strstr(out, "eval dir: ") : NULL;
	size_t n;

	if (s)
		s += 10;
	else if (out && (s = strstr(out, " into ")))
		s += 6;
	if (!s)
		return NULL;
	n = strcspn(s, "\n");
	return strndup(s, n);
}

struct cJSON *tu_json_file(const char *dir, const char *rel)
{
	char *path = fs_join(dir, rel), *text = tu_read(path, NULL);
	cJSON *j = cJSON_Parse(text);

	ck_assert_msg(j != NULL, "%s is not JSON", path);
	free(text);
	free(path);
	return j;
}

void tu_page_offset_spec(struct task_spec *s)
{
	static int32_t lens[2] = {129, 64};

	memset(s, 0, sizeof(*s));
	s->kv_dtype = MLA_KV_BF16;
	s->batch = 2;
	s->s_q = 1;
	s->h_q = 16;
	s->page_size = 64;
	s->max_pages = 3;
	s->num_pages = 6;
	s->page_offset = 60000;
	s->seqlens = lens;
	s->input_sets = 2;
}

char *tu_json_str(const char *path, const char *dotted)
{
	char *text = tu_read(path, NULL), *key = strdup(dotted), *save = NULL, *res = NULL;
	cJSON *j = cJSON_Parse(text), *cur = j;

	for (char *k = strtok_r(key, ".", &save); k && cur; k = strtok_r(NULL, ".", &save))
		cur = cJSON_GetObjectItem(cur, k);
	if (cJSON_IsString(cur))
		res = strdup(cur->valuestring);
	cJSON_Delete(j);
	free(text);
	free(key);
	return res;
}

int tu_run_suite(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	/* the suites' plans are trimmed (plan.h); a test of the strict check sets it back to 0 */
	plan_trimmed_for_tests = 1;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
