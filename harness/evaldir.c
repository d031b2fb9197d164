#include "evaldir.h"
#include "runtime.h"
#include "fsutil.h"
#include "op.h"
#include "gpu_clocks.h"
#include "jsonfile.h"
#include "layout.h"
#include "pyimpl.h"
#include "stats.h"
#include "vs_build_info.h"
#include "vs_error.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

static const char *jstr(const cJSON *o, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static const cJSON *jget(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *root_or_default(const char *results_root)
{
	return results_root ? results_root : vs_layout_default.results;
}

static void utc_stamp(char *out, size_t cap, const char *fmt)
{
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(out, cap, fmt, &tm);
}

/* ---- layout ----------------------------------------------------------------------------------- */

char *evaldir_card_dir(const char *results_root, const char *card_id)
{
	return fs_printf("%s/%s", root_or_default(results_root), card_id);
}

char *evaldir_parts_root(const char *results_root, const char *card_id)
{
	return fs_printf("%s/%s/.parts", root_or_default(results_root), card_id);
}

int evaldir_lock(int *fd_out, const char *results_root, const char *card_id)
{
	char *dir = evaldir_card_dir(results_root, card_id), *path = NULL, held[160] = "", stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	int fd = -1, err = 0;
	ssize_t k;

	*fd_out = -1;
	if (!dir || !(path = fs_join(dir, ".lock"))) {
		err = vs_oom();
		goto done;
	}
	if ((err = fs_mkdir_p(dir)))
		goto done;
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		err = vs_error(VS_EIO, "cannot open the lock '%s': %s", path, strerror(errno));
		goto done;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		k = pread(fd, held, sizeof(held) - 1, 0);
		held[k > 0 ? k : 0] = '\0';
		held[strcspn(held, "\n")] = '\0';
		err = vs_error(VS_EIO,
			       "%s: another --run of card '%s' holds the results (%s): wait for it to end, "
			       "or stop it",
			       path, card_id, *held ? held : "pid unknown");
		goto done;
	}
	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(held, sizeof(held), "pid %ld, started %s\n", (long)getpid(), stamp);
	if (ftruncate(fd, 0) != 0 || pwrite(fd, held, strlen(held), 0) != (ssize_t)strlen(held)) {
		err = vs_error(VS_EIO, "cannot write the lock '%s': %s", path, strerror(errno));
		goto done;
	}
	*fd_out = fd;
	fd = -1;
done:
	if (fd >= 0)
		close(fd);
	free(path);
	free(dir);
	return err;
}

void evaldir_unlock(int fd)
{
	if (fd >= 0)
		close(fd); /* the lock goes with the descriptor; the file stays, holding the last holder */
}

char *evaldir_debug_root(const char *results_root, const char *card_id)
{
	return fs_printf("%s/%s/.debug", root_or_default(results_root), card_id);
}

/* The marker of the process writing an eval dir: named like a temporary, so that it says who. */
static char *writer_marker(void)
{
	return fs_printf(".writer.tmp.%ld", (long)getpid());
}

/*
 * dir/manifests and the writer's marker, the last steps of creating an eval dir: an eval dir
 * without result.json whose marker names no live process is the stub of an interrupted run
 * (evaldir_gc() removes it).
 */
static int make_manifests(const char *dir)
{
	char *m = fs_join(dir, "manifests"), *marker = writer_marker();
	int err = m && marker ? fs_mkdir_p(m) : vs_oom();

	if (!err)
		err = fs_write_in(dir, marker, "", 0, NULL);
	free(marker);
	free(m);
	return err;
}

int evaldir_create_run(char **out, const char *results_root, const char *card_id, const char *run_id, const char *arch,
		       int debug)
{
	char stamp[32], *dir = NULL;
	char *base = debug ? evaldir_debug_root(results_root, card_id) : evaldir_card_dir(results_root, card_id);
	int err;

	VS_CHECK_ALLOC(base);
	utc_stamp(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ");
	if ((err = fs_mkdir_p(base)))
		goto done;
	for (int k = 1; k < 1000; k++) {
		free(dir);
		if (run_id)
			dir = k == 1 ? fs_printf("%s/%s", base, run_id) : fs_printf("%s/%s-%d", base, run_id, k);
		else
			dir = k == 1 ? fs_printf("%s/%s-%s", base, stamp, arch) :
				       fs_printf("%s/%s-%s-%d", base, stamp, arch, k);
		if (!dir) {
			err = vs_oom();
			goto done;
		}
		if (!fs_exists(dir))
			break;
	}
	if (!(err = fs_mkdir_p(dir)))
		err = make_manifests(dir);
done:
	free(base);
	if (err) {
		free(dir);
		return err;
	}
	*out = dir;
	return 0;
}

int evaldir_create_part(char **out, const char *results_root, const char *card_id, const char *run_id, int index)
{
	char *base = evaldir_parts_root(results_root, card_id), *dir = NULL;
	int err;

	dir = base ? fs_printf("%s/%s/%04d", base, run_id, index) : NULL;
	free(base);
	VS_CHECK_ALLOC(dir);
	err = 0;
	if (fs_exists(dir)) /* a requeued array task runs again */
		err = fs_remove_tree(dir);
	if (!err && !(err = fs_mkdir_p(dir)))
		err = make_manifests(dir);
	if (err) {
		free(dir);
		return err;
	}
	*out = dir;
	return 0;
}

int evaldir_create_merged(char **out, const char *results_root, const char *card_id, const char *run_id,
			  const char *gen)
{
	char *base = evaldir_card_dir(results_root, card_id), *dir = NULL, stamp[32];
	int err;

	VS_CHECK_ALLOC(base);
	utc_stamp(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ");
	dir = run_id ? fs_printf("%s/%s", base, run_id) : fs_printf("%s/%s-%s-merged", base, stamp, gen);
	free(base);
	VS_CHECK_ALLOC(dir);
	if (fs_exists(dir))
		err = vs_error(VS_EUSAGE, "'%s' exists already: name another with --run-id", dir);
	else
		err = make_manifests(dir);
	if (err) {
		free(dir);
		return err;
	}
	*out = dir;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int cmp_str_desc(const void *a, const void *b)
{
	return -cmp_str(a, b);
}

/* The names in dir that do not start with '.', sorted by cmp; *n of them. */
static int list_names(char ***out, int *n, const char *dir, int (*cmp)(const void *, const void *))
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **list = NULL;
	int count = 0, err = 0;

	while (d && !err && (de = readdir(d))) {
		char **nl;

		if (de->d_name[0] == '.')
			continue;
		nl = realloc(list, (size_t)(count + 1) * sizeof(*list));
		if (!nl || !(nl[count] = strdup(de->d_name))) {
			list = nl ? nl : list;
			err = vs_error(VS_ENOMEM, "out of memory");
			break;
		}
		list = nl;
		count++;
	}
	if (d)
		closedir(d);
	if (!err && count > 1)
		qsort(list, (size_t)count, sizeof(*list), cmp);
	if (err) {
		for (int i = 0; i < count; i++)
			free(list[i]);
		free(list);
		return err;
	}
	*out = list;
	*n = count;
	return 0;
}

/* What dir holds: 1 a finished, whole run (result.json, not partial), 0 a partial run, -1 no result. */
static int run_kind(const char *dir)
{
	char *path = fs_join(dir, "result.json"), *text = NULL;
	size_t len;
	cJSON *root;
	int kind = -1;

	if (path && fs_exists(path) && !fs_read_file(&text, &len, path, 64u << 20)) {
		root = cJSON_ParseWithLength(text, len);
		if (root)
			kind = cJSON_IsFalse(jget(root, "partial")) && jstr(root, "verdict") ? 1 : 0;
		cJSON_Delete(root);
	}
	free(text);
	free(path);
	return kind;
}

/* Newest first: by the time a run finished (ISO 8601 sorts), then by run id (UTC stamps sort). */
static int run_newer_first(const void *a, const void *b)
{
	const struct evaldir_run *x = a, *y = b;
	int c = strcmp(y->finished, x->finished);

	return c ? c : strcmp(y->name, x->name);
}

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

int evaldir_runs(struct evaldir_run **out, int *n, const char *card_dir)
{
	char **names = NULL;
	struct evaldir_run *runs = NULL;
	int count = 0, nn = 0, err;

	*out = NULL;
	*n = 0;
	if ((err = list_names(&names, &nn, card_dir, cmp_str_desc)))
		return err;
	runs = calloc((size_t)nn + 1, sizeof(*runs));
	if (!runs)
		err = vs_oom();
	for (int i = 0; !err && i < nn; i++) {
		char *dir = fs_join(card_dir, names[i]), *path = dir ? fs_join(dir, "result.json") : NULL, *text = NULL;
		struct evaldir_run *r = &runs[count];
		cJSON *root = NULL;
		const cJSON *iso;
		size_t len;

		if (!path) {
			free(dir);
			err = vs_oom();
			break;
		}
		if (fs_is_dir(dir) && fs_exists(path) && !fs_read_file(&text, &len, path, 64u << 20))
			root = cJSON_ParseWithLength(text, len);
		if (root && cJSON_IsFalse(jget(root, "partial")) && jstr(root, "verdict")) {
			r->dir = dir;
			dir = NULL;
			r->name = strdup(names[i]);
			r->verdict = dup_or_empty(jstr(root, "verdict"));
			r->device = dup_or_empty(jstr(jget(root, "device"), "name"));
			r->gen = dup_or_empty(jstr(jget(root, "device"), "gen"));
			r->baseline = dup_or_empty(jstr(root, "baseline"));
			r->candidate = dup_or_empty(jstr(root, "candidate"));
			r->finished = dup_or_empty(jstr(root, "finished"));
			r->workload = dup_or_empty(jstr(jget(jget(root, "overall"), "workload"), "id"));
			iso = jget(jget(root, "overall"), "isolated");
			if (cJSON_IsObject(iso)) {
				r->has_isolated = 1;
				r->isolated = cJSON_GetNumberValue(jget(iso, "estimate"));
				r->isolated_lo = cJSON_GetNumberValue(cJSON_GetArrayItem(jget(iso, "ci95"), 0));
				r->isolated_hi = cJSON_GetNumberValue(cJSON_GetArrayItem(jget(iso, "ci95"), 1));
			}
			count++;
			if (!r->name || !r->verdict || !r->device || !r->gen || !r->baseline || !r->candidate ||
			    !r->finished || !r->workload)
				err = vs_oom();
		}
		cJSON_Delete(root);
		free(text);
		free(path);
		free(dir);
	}
	for (int i = 0; i < nn; i++)
		free(names[i]);
	free(names);
	if (err) {
		evaldir_runs_free(runs, count);
		return err;
	}
	qsort(runs, (size_t)count, sizeof(*runs), run_newer_first);
	*out = runs;
	*n = count;
	return 0;
}

void evaldir_runs_free(struct evaldir_run *runs, int n)
{
	for (int i = 0; runs && i < n; i++) {
		free(runs[i].dir);
		free(runs[i].name);
		free(runs[i].verdict);
		free(runs[i].device);
		free(runs[i].gen);
		free(runs[i].baseline);
		free(runs[i].candidate);
		free(runs[i].finished);
		free(runs[i].workload);
	}
	free(runs);
}

int evaldir_latest(char **out, struct evaldir_skipped *skipped, const char *results_root, const char *card_id)
{
	char *base = evaldir_card_dir(results_root, card_id), **names = NULL, *dir = NULL;
	int n = 0, err;

	if (skipped)
		memset(skipped, 0, sizeof(*skipped));
	if (!base)
		return vs_error(VS_ENOMEM, "out of memory");
	err = list_names(&names, &n, base, cmp_str_desc);
	for (int i = 0; !err && i < n && !dir; i++) {
		char *cand = fs_join(base, names[i]);
		int kind;

		if (!cand) {
			err = vs_error(VS_ENOMEM, "out of memory");
			break;
		}
		kind = fs_is_dir(cand) ? run_kind(cand) : -2;
		if (kind == 1) {
			dir = cand;
			break;
		}
		if (skipped && kind == 0)
			skipped->partial++;
		else if (skipped && kind == -1)
			skipped->unfinished++;
		free(cand);
	}
	if (!err && !dir)
		err = vs_error(VS_ENOTFOUND,
			       "no complete eval dir under '%s' (%d without result.json, %d partial): run "
			       "the card's whole plan first, or pass --eval-dir",
			       base, skipped ? skipped->unfinished : 0, skipped ? skipped->partial : 0);
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(base);
	if (err)
		return err;
	*out = dir;
	return 0;
}

/* Whether dir holds the marker of a live writer (make_manifests()). */
static int has_live_writer(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int live = 0;

	while (d && !live && (de = readdir(d))) {
		long pid;
		char *end;

		if (strncmp(de->d_name, ".writer.tmp.", 12))
			continue;
		errno = 0;
		pid = strtol(de->d_name + 12, &end, 10);
		live = !*end && !errno && pid > 0 && (kill((pid_t)pid, 0) == 0 || errno != ESRCH);
	}
	if (d)
		closedir(d);
	return live;
}

/* In one folder of eval dirs: remove those without result.json and no live writer, or (all) every finished one. */
static int gc_runs(const char *base, int all, int *removed)
{
	char **names = NULL;
	int n = 0, err = list_names(&names, &n, base, cmp_str);

	for (int i = 0; i < n; i++) {
		char *dir = err ? NULL : fs_join(base, names[i]);
		int finished;

		if (!err && !dir)
			err = vs_error(VS_ENOMEM, "out of memory");
		if (!dir || fs_is_link(dir) || !fs_is_dir(dir) || has_live_writer(dir)) {
			free(dir);
			free(names[i]);
			continue;
		}
		finished = run_kind(dir) >= 0;
		if (!finished || all) {
			err = fs_remove_tree(dir);
			if (!err) {
				printf("removed %s (%s)\n", dir,
				       finished ? "a debug run: --task/--impl/--config" :
						  "the stub of an interrupted run: no result.json");
				(*removed)++;
			}
		}
		free(dir);
		free(names[i]);
	}
	free(names);
	return err;
}

int evaldir_gc(const char *results_root, int *removed)
{
	char **cards = NULL;
	int n = 0, err = list_names(&cards, &n, root_or_default(results_root), cmp_str);

	*removed = 0;
	for (int i = 0; i < n; i++) {
		char *card = err ? NULL : evaldir_card_dir(results_root, cards[i]);
		char *debug = err ? NULL : evaldir_debug_root(results_root, cards[i]);

		if (!err && (!card || !debug))
			err = vs_error(VS_ENOMEM, "out of memory");
		if (!err && fs_is_dir(card) && !fs_is_link(card))
			err = gc_runs(card, 0, removed);
		if (!err && fs_is_dir(debug) && !fs_is_link(debug))
			err = gc_runs(debug, 1, removed);
		free(card);
		free(debug);
		free(cards[i]);
	}
	free(cards);
	return err;
}

/* Append path to the list (takes ownership). */
static int push_path(char ***list, int *n, char *path)
{
	char **nl = path ? realloc(*list, (size_t)(*n + 1) * sizeof(**list)) : NULL;

	if (!nl) {
		free(path);
		return vs_oom();
	}
	*list = nl;
	(*list)[(*n)++] = path;
	return 0;
}

int evaldir_find_parts(char ***out, int *nout, const char *const *dirs, int ndirs)
{
	int err = 0;

	for (int k = 0; k < ndirs && !err; k++) {
		char *res = fs_join(dirs[k], "result.json"), **sub = NULL;
		int nsub = 0;
		DIR *d;
		struct dirent *de;

		VS_CHECK_ALLOC(res);
		if (fs_exists(res)) {
			free(res);
			err = push_path(out, nout, strdup(dirs[k]));
			continue;
		}
		free(res);
		d = opendir(dirs[k]);
		if (!d)
			return vs_error(VS_ENOTFOUND, "'%s' is neither an eval dir part nor a directory of parts",
					dirs[k]);
		while (!err && (de = readdir(d))) {
			char *p;

			if (de->d_name[0] == '.')
				continue;
			p = fs_printf("%s/%s/result.json", dirs[k], de->d_name);
			if (p && fs_exists(p))
				err = push_path(&sub, &nsub, fs_join(dirs[k], de->d_name));
			free(p);
		}
		closedir(d);
		if (!err && nsub == 0)
			err = vs_error(VS_ENOTFOUND, "'%s' holds no parts (no <index>/result.json under it)", dirs[k]);
		if (!err)
			qsort(sub, (size_t)nsub, sizeof(*sub), cmp_str);
		for (int i = 0; i < nsub; i++) {
			if (!err)
				err = push_path(out, nout, sub[i]);
			else
				free(sub[i]);
		}
		free(sub);
	}
	return err;
}

/* ---- JSON written as evidence: complete or not written ---------------------------------------- */

/* Every item goes through jsonfile_put*() (jsonfile.h): the writer refuses a result.json with oom set. */
static void push(int *oom, cJSON *arr, cJSON *item)
{
	jsonfile_put(oom, arr, NULL, item);
}

/* A flag line (fs_printf()'d, taken) into the flags array. */
static void push_flag(int *oom, cJSON *flags, char *msg)
{
	push(oom, flags, msg ? cJSON_CreateString(msg) : NULL);
	free(msg);
}

/* The estimate, lower and upper bound of a ci_json() object. */
static double ci_est(const cJSON *j)
{
	return cJSON_GetNumberValue(jget(j, "estimate"));
}

static double ci_lo(const cJSON *j)
{
	return cJSON_GetNumberValue(cJSON_GetArrayItem(jget(j, "ci95"), 0));
}

static double ci_hi(const cJSON *j)
{
	return cJSON_GetNumberValue(cJSON_GetArrayItem(jget(j, "ci95"), 1));
}

static cJSON *ci_json(int *oom, const struct stats_ci *ci)
{
	cJSON *j = cJSON_CreateObject(), *arr = cJSON_CreateArray();

	jsonfile_put_num(oom, j, "estimate", ci->estimate);
	push(oom, arr, cJSON_CreateNumber(ci->lo));
	push(oom, arr, cJSON_CreateNumber(ci->hi));
	jsonfile_put(oom, j, "ci95", arr);
	jsonfile_put_num(oom, j, "n", ci->n);
	if (!j)
		*oom = 1;
	return j;
}

static cJSON *impl_json(int *oom, const struct measure_impl *ir, const struct measure_result *r, int timed)
{
	cJSON *j = cJSON_CreateObject(), *cfgs, *tm;

	jsonfile_put_str(oom, j, "impl", ir->impl->name);
	if (ir->chosen >= 0)
		jsonfile_put_str(oom, j, "chosen", ir->configs[ir->chosen].name);
	else
		jsonfile_put(oom, j, "chosen", cJSON_CreateNull());
	cfgs = jsonfile_put_arr(oom, j, "configs");
	for (int i = 0; i < ir->nconfigs; i++) {
		cJSON *c = cJSON_CreateObject();

		jsonfile_put_str(oom, c, "name", ir->configs[i].name);
		jsonfile_put_str(oom, c, "parity",
				 ir->config_pass[i] == 1                       ? "pass" :
				 ir->config_pass[i] == 0                       ? "fail" :
				 ir->config_pass[i] == MEASURE_CONFIG_DECLINED ? "unsupported" :
										 "not run");
		if (ir->config_detail[i])
			jsonfile_put_str(oom, c, "detail", ir->config_detail[i]);
		if (ir->tune_ms[i] > 0)
			jsonfile_put_num(oom, c, "tune_median_ms", ir->tune_ms[i]);
		if (ir->margin && ir->margin[i] >= 0 && isfinite(ir->margin[i])) {
			/* how close parity was: the worst element over its tolerance (< 1 passes), cos_diff */
			cJSON *m = jsonfile_put_obj(oom, c, "margin");

			jsonfile_put_num(oom, m, "worst_over_tol", ir->margin[i]);
			jsonfile_put_num(oom, m, "cos_diff", ir->cos_diff[i]);
		}
		push(oom, cfgs, c);
	}
	jsonfile_put_str(oom, j, "capture", ir->capture == 1 ? "pass" : ir->capture == 0 ? "fail" : "n/a");
	if (ir->capture_detail)
		jsonfile_put_str(oom, j, "capture_detail", ir->capture_detail);
	/* what getting ready cost, outside every sample: prepare() (JIT, autotune) and graph captures */
	jsonfile_put_num(oom, j, "setup_ms", ir->setup_ms);
	if (timed) {
		double sec = ir->timing.median * 1e-3;

		tm = jsonfile_put_obj(oom, j, "timing");
		jsonfile_put_num(oom, tm, "n", ir->timing.n);
		jsonfile_put_num(oom, tm, "median_ms", ir->timing.median);
		jsonfile_put_num(oom, tm, "p10_ms", ir->timing.p10);
		jsonfile_put_num(oom, tm, "p90_ms", ir->timing.p90);
		jsonfile_put_num(oom, tm, "mean_ms", ir->timing.mean);
		jsonfile_put_num(oom, tm, "min_ms", ir->timing.min);
		jsonfile_put_num(oom, tm, "max_ms", ir->timing.max);
		jsonfile_put_num(oom, tm, "gbps", r->bytes / sec / 1e9);
		jsonfile_put_num(oom, tm, "tflops", r->flops / sec / 1e12);
		jsonfile_put_num(oom, tm, "outliers", ir->outliers);
	}
	return j;
}

/* ---- references ------------------------------------------------------------------------- */

static const char *const ref_status_names[] = {"not timed", "timed", "skipped", "failed"};

/* 1 when some config of ir passed parity, 0 when every one that ran failed, -1 when none ran. */
static int any_config_passed(const struct measure_impl *ir)
{
	int ran = 0;

	for (int i = 0; i < ir->nconfigs; i++) {
		if (ir->config_pass[i] == 1)
			return 1;
		ran |= ir->config_pass[i] == 0;
	}
	return ran ? 0 : -1;
}

int evaldir_ref_status(const struct measure_ref *rf)
{
	if (rf->skip)
		return EVALDIR_REF_SKIPPED;
	if (rf->has_ratio && rf->t)
		return EVALDIR_REF_TIMED;
	if (any_config_passed(&rf->m) == 0 || rf->m.capture == 0 || rf->timed_check_failures > 0)
		return EVALDIR_REF_FAILED;
	return EVALDIR_REF_NOT_TIMED;
}

const char *evaldir_ref_status_name(int status)
{
	return status >= 0 && status <= EVALDIR_REF_FAILED ? ref_status_names[status] : "not timed";
}

int evaldir_ref_status_parse(const char *name)
{
	for (int k = 0; name && k <= EVALDIR_REF_FAILED; k++)
		if (!strcmp(name, ref_status_names[k]))
			return k;
	return EVALDIR_REF_NOT_TIMED;
}

/*
 * Whether result task t records that a side the plan forces to one config (IMPL@CONFIG) ran that
 * config alone and its launch declined the task ("unsupported").
 */
static int forced_declined(const struct plan *p, const cJSON *t)
{
	for (int k = 0; k < 2; k++) {
		const struct plan_impl *pi = k ? &p->candidate : &p->baseline;
		const cJSON *cfgs = jget(jget(t, k ? "candidate" : "baseline"), "configs");
		const cJSON *c = cJSON_GetArrayItem(cfgs, 0);

		if (pi->forced && cJSON_GetArraySize(cfgs) == 1 && jstr(c, "name") &&
		    !strcmp(jstr(c, "name"), pi->forced) && jstr(c, "parity") &&
		    !strcmp(jstr(c, "parity"), "unsupported"))
			return 1;
	}
	return 0;
}

/* A reference's parity on a task: "pass", "fail", "n/a" (skipped) or "not run". */
static const char *ref_parity(const struct measure_ref *rf)
{
	int passed = any_config_passed(&rf->m);

	if (rf->skip)
		return "n/a";
	if (passed == 0 || rf->timed_check_failures > 0)
		return "fail";
	return passed == 1 ? "pass" : "not run";
}

/*
 * A task's "references": each reference's configs, capture and timing as the candidate's are
 * written, its role in samples.csv, its status (with the plan's reason when it skips the task),
 * and its ratio t_ref / t_cand when it was timed and passed (a failing reference has none).
 */
static cJSON *refs_json(int *oom, const struct measure_result *r)
{
	cJSON *arr = cJSON_CreateArray();

	if (!arr)
		*oom = 1;
	for (int k = 0; k < r->nrefs; k++) {
		const struct measure_ref *rf = &r->refs[k];
		int st = evaldir_ref_status(rf);
		cJSON *j = impl_json(oom, &rf->m, r, rf->t != NULL && r->npairs > 0);
		char role[24];

		snprintf(role, sizeof(role), "reference%d", k + 1);
		jsonfile_put_str(oom, j, "role", role);
		jsonfile_put_str(oom, j, "status", evaldir_ref_status_name(st));
		if (rf->skip)
			jsonfile_put_str(oom, j, "reason", rf->skip);
		jsonfile_put_str(oom, j, "parity", ref_parity(rf));
		jsonfile_put_num(oom, j, "timed_checks", rf->timed_checks);
		jsonfile_put_num(oom, j, "timed_check_failures", rf->timed_check_failures);
		if (st == EVALDIR_REF_TIMED)
			jsonfile_put(oom, j, "ratio", ci_json(oom, &rf->ratio));
		push(oom, arr, j);
	}
	return arr;
}

/*
 * result.json's "references": per reference of the plan, the geometric mean of its per-task ratios
 * t_ref / t_cand over the tasks it was timed on (those whose candidate passed parity), with the
 * joint bootstrap CI of the speedup (stats.h), and its task counts. Never a gate.
 */
static int refs_overall(int *oom, cJSON *root, const struct plan *p, const struct evaldir_task_summary *t, int n)
{
	const double **tr = calloc((size_t)n + 1, sizeof(double *));
	const double **tc = calloc((size_t)n + 1, sizeof(double *));
	int *np = calloc((size_t)n + 1, sizeof(int)), err = 0;
	cJSON *arr = jsonfile_put_arr(oom, root, "references");

	if (!tr || !tc || !np) {
		err = vs_oom();
		goto done;
	}
	for (int k = 0; k < p->nrefs; k++) {
		int m = 0, counts[4] = {0, 0, 0, 0};
		cJSON *j = cJSON_CreateObject();
		char role[24];

		for (int i = 0; i < n; i++) {
			int st = t[i].ref_status[k];

			counts[st >= 0 && st < 4 ? st : 0]++;
			if (st == EVALDIR_REF_TIMED && t[i].t_ref[k] && t[i].complete && t[i].parity_pass &&
			    t[i].npairs > 0) {
				tr[m] = t[i].t_ref[k];
				tc[m] = t[i].t_cand;
				np[m++] = t[i].npairs;
			}
		}
		snprintf(role, sizeof(role), "reference%d", k + 1);
		jsonfile_put_str(oom, j, "role", role);
		jsonfile_put_str(oom, j, "impl", p->refs[k].impl.name);
		jsonfile_put_str(oom, j, "backend", p->refs[k].impl.backend);
		jsonfile_put_num(oom, j, "tasks_timed", m);
		jsonfile_put_num(oom, j, "tasks_skipped", counts[EVALDIR_REF_SKIPPED]);
		jsonfile_put_num(oom, j, "tasks_failed", counts[EVALDIR_REF_FAILED]);
		jsonfile_put_str(oom, j, "parity", counts[EVALDIR_REF_FAILED] ? "fail" : "pass");
		if (m > 0) {
			struct stats_ci ci;

			if ((err = stats_geomean_speedup(&ci, tr, tc, np, m, p->protocol.resamples,
							 p->protocol.seed))) {
				cJSON_Delete(j);
				goto done;
			}
			jsonfile_put(oom, j, "ratio", ci_json(oom, &ci));
		} else {
			jsonfile_put(oom, j, "ratio", cJSON_CreateNull());
		}
		push(oom, arr, j);
	}
done:
	free(tr);
	free(tc);
	free(np);
	return err;
}

/* ---- the e2e stage (docs/DESIGN.md "End to end") ------------------------------------------- */

/* e2e_pct {estimate, ci95} of a step-time ratio t_base / t_cand (100 (t_base - t_cand) / t_base). */
static cJSON *pct_json(int *oom, const struct stats_ci *ci)
{
	cJSON *j = cJSON_CreateObject(), *arr = cJSON_CreateArray();

	jsonfile_put_num(oom, j, "estimate", measure_e2e_pct(ci->estimate));
	push(oom, arr, cJSON_CreateNumber(measure_e2e_pct(ci->lo)));
	push(oom, arr, cJSON_CreateNumber(measure_e2e_pct(ci->hi)));
	jsonfile_put(oom, j, "ci95", arr);
	jsonfile_put_num(oom, j, "n", ci->n);
	if (!j)
		*oom = 1;
	return j;
}

static cJSON *step_timing_json(int *oom, const struct stats_summary *s, double core_ms, long long peak)
{
	cJSON *j = cJSON_CreateObject();

	jsonfile_put_num(oom, j, "n", s->n);
	jsonfile_put_num(oom, j, "median_ms", s->median);
	jsonfile_put_num(oom, j, "p10_ms", s->p10);
	jsonfile_put_num(oom, j, "p90_ms", s->p90);
	if (core_ms > 0 && s->median > 0)
		jsonfile_put_num(oom, j, "attention_share", core_ms / s->median);
	if (peak >= 0)
		jsonfile_put_num(oom, j, "peak_bytes", (double)peak);
	if (!j)
		*oom = 1;
	return j;
}

/* The status of a task's e2e stage: "timed", "skipped", "failed" (stage error or parity), "not run". */
static const char *e2e_status_name(const struct measure_e2e *m)
{
	if (m->skipped)
		return "skipped";
	if (m->error || m->parity == 0)
		return "failed";
	return m->ran ? "timed" : "not run";
}

static cJSON *e2e_task_json(int *oom, const struct measure_result *r, const struct plan *p, cJSON *flags)
{
	const struct measure_e2e *m = &r->e2e;
	cJSON *j = cJSON_CreateObject(), *mem;

	jsonfile_put_str(oom, j, "status", e2e_status_name(m));
	if (m->skipped)
		jsonfile_put_str(oom, j, "skipped", m->skipped);
	if (m->error) {
		jsonfile_put_str(oom, j, "error", m->error);
		push_flag(oom, flags, fs_printf("task %s: e2e stage failed: %s", r->name, m->error));
	}
	jsonfile_put_str(oom, j, "parity", m->parity == 1 ? "pass" : m->parity == 0 ? "fail" : "not checked");
	if (m->parity_detail)
		jsonfile_put_str(oom, j, "parity_detail", m->parity_detail);
	if (m->parity >= 0) {
		jsonfile_put_num(oom, j, "cos_diff", m->cos_diff);
		if (m->ref_checked)
			jsonfile_put_num(oom, j, "reference_cos_diff", m->ref_cos_diff);
		jsonfile_put_bool(oom, j, "reference_checked", m->ref_checked);
	}
	if (m->set >= 0)
		jsonfile_put_num(oom, j, "set", m->set);
	mem = jsonfile_put_obj(oom, j, "memory");
	jsonfile_put_num(oom, mem, "step_bytes", (double)m->step_bytes);
	jsonfile_put_num(oom, mem, "peak_baseline_bytes", (double)m->peak_base);
	jsonfile_put_num(oom, mem, "peak_candidate_bytes", (double)m->peak_cand);
	if (m->ran) {
		jsonfile_put_num(oom, j, "pairs", m->npairs);
		jsonfile_put_str(oom, j, "stop", stats_stop_reason_name(m->stop_reason));
		jsonfile_put(oom, j, "baseline",
			     step_timing_json(oom, &m->step_base, r->base.timing.median, m->peak_base));
		jsonfile_put(oom, j, "candidate",
			     step_timing_json(oom, &m->step_cand, r->cand.timing.median, m->peak_cand));
		jsonfile_put(oom, j, "control", step_timing_json(oom, &m->step_ctrl, 0, -1));
		jsonfile_put(oom, j, "ratio", ci_json(oom, &m->ratio));
		jsonfile_put(oom, j, "e2e_pct", pct_json(oom, &m->ratio));
		jsonfile_put(oom, j, "control_ratio", ci_json(oom, &m->ctrl_ratio));
		jsonfile_put(oom, j, "control_pct", pct_json(oom, &m->ctrl_ratio));
		if (m->ctrl_ratio.lo > 1 || m->ctrl_ratio.hi < 1)
			push_flag(oom, flags,
				  fs_printf("task %s: the e2e control (baseline against itself) is %.2f%% [%.2f, "
					    "%.2f]: its "
					    "CI excludes 0, the step timing is biased by position or drift",
					    r->name, measure_e2e_pct(m->ctrl_ratio.estimate),
					    measure_e2e_pct(m->ctrl_ratio.lo), measure_e2e_pct(m->ctrl_ratio.hi)));
	}
	(void)p;
	if (!j)
		*oom = 1;
	return j;
}

static cJSON *task_json(int *oom, const struct measure_result *r, const struct plan *p, cJSON *flags)
{
	cJSON *j = cJSON_CreateObject();

	jsonfile_put_str(oom, j, "name", r->name);
	jsonfile_put_str(oom, j, "hash", r->hash);
	jsonfile_put_num(oom, j, "bytes", r->bytes);
	jsonfile_put_num(oom, j, "flops", r->flops);
	jsonfile_put_bool(oom, j, "complete", r->complete);
	jsonfile_put_str(oom, j, "parity", r->skipped ? "skipped" : r->parity_pass ? "pass" : "fail");
	if (r->skipped) {
		jsonfile_put_str(oom, j, "skipped", r->skipped);
		push_flag(oom, flags, fs_printf("task %s skipped: %s", r->name, r->skipped));
	}
	if (r->error)
		jsonfile_put_str(oom, j, "error", r->error);
	jsonfile_put(oom, j, "baseline", impl_json(oom, &r->base, r, r->complete));
	jsonfile_put(oom, j, "candidate", impl_json(oom, &r->cand, r, r->complete));
	if (r->nrefs)
		jsonfile_put(oom, j, "references", refs_json(oom, r));
	if (r->e2e.planned)
		jsonfile_put(oom, j, "e2e", e2e_task_json(oom, r, p, flags));
	if (r->complete) {
		jsonfile_put_num(oom, j, "pairs", r->npairs);
		jsonfile_put_str(oom, j, "stop", stats_stop_reason_name(r->stop_reason));
		jsonfile_put(oom, j, "speedup", ci_json(oom, &r->speedup));
		if (r->speedup.estimate > p->protocol.review_bound)
			push_flag(oom, flags,
				  fs_printf("task %s: speedup %.2fx is above the review bound %.0fx: check "
					    "that the baseline is sound before trusting it",
					    r->name, r->speedup.estimate, p->protocol.review_bound));
		if (r->sm_mhz_begin > 0 && r->sm_mhz_end > 0 &&
		    fabs((double)r->sm_mhz_end - r->sm_mhz_begin) > 0.05 * r->sm_mhz_begin)
			push_flag(oom, flags,
				  fs_printf("task %s: SM clock moved from %d to %d MHz during sampling "
					    "(throttling or boost change)",
					    r->name, r->sm_mhz_begin, r->sm_mhz_end));
		if ((r->throttle_begin | r->throttle_end) & VS_THROTTLE_ANY)
			push_flag(oom, flags,
				  fs_printf("task %s: GPU clocks were held down during sampling (%s)", r->name,
					    vs_gpu_throttle_text((r->throttle_begin | r->throttle_end) &
								 VS_THROTTLE_ANY)));
	}
	jsonfile_put_num(oom, j, "timed_checks", r->timed_checks);
	jsonfile_put_num(oom, j, "timed_check_failures", r->timed_check_failures);
	if (r->py_autotune) {
		/* what each @triton.autotune kernel did in the worker (docs/DESIGN.md "Autotuned kernels") */
		char who[256];
		int n = pyimpl_autotune_timed(r->py_autotune, who, sizeof(who));

		jsonfile_put(oom, j, "autotune", cJSON_Parse(r->py_autotune));
		if (n)
			push_flag(oom, flags,
				  fs_printf("task %s: autotune %s benchmarked %d config%s inside timed launches: its "
					    "times include benchmarking",
					    r->name, who, n, n == 1 ? "" : "s"));
	}
	if (r->sandbox[0]) {
		jsonfile_put_str(oom, j, "sandbox", r->sandbox);
		if (strncmp(r->sandbox, "landlock", 8))
			push_flag(oom, flags, fs_printf("task %s: sandbox %s", r->name, r->sandbox));
	}
	/* A run-time seed fixed from outside (a debugging aid: freshset.h) was knowable before the run. */
	if (getenv("VS_FRESH_SEED") && *getenv("VS_FRESH_SEED"))
		push_flag(oom, flags,
			  fs_printf("task %s: the run-time input seed was fixed by VS_FRESH_SEED: "
				    "those inputs were known before the run",
				    r->name));
	if (r->sm_mhz_begin > 0) {
		cJSON *c = jsonfile_put_obj(oom, j, "sm_clock_mhz");

		jsonfile_put_num(oom, c, "begin", r->sm_mhz_begin);
		jsonfile_put_num(oom, c, "end", r->sm_mhz_end);
		jsonfile_put_num(oom, c, "throttle_reasons_begin", (double)r->throttle_begin);
		jsonfile_put_num(oom, c, "throttle_reasons_end", (double)r->throttle_end);
	}
	return j;
}

static cJSON *device_json(int *oom, const struct vs_device_info *i)
{
	cJSON *j = cJSON_CreateObject();

	jsonfile_put_str(oom, j, "backend", i->backend);
	jsonfile_put_str(oom, j, "name", i->name);
	jsonfile_put_str(oom, j, "gen", i->arch);
	jsonfile_put_str(oom, j, "driver", i->driver);
	jsonfile_put_num(oom, j, "compute_units", i->compute_units);
	jsonfile_put_num(oom, j, "clock_mhz", i->clock_mhz);
	jsonfile_put_num(oom, j, "mem_clock_mhz", i->mem_clock_mhz);
	jsonfile_put_num(oom, j, "llc_bytes", (double)i->llc_bytes);
	jsonfile_put_num(oom, j, "mem_bytes", (double)i->mem_bytes);
	if (i->read_gbps > 0)
		jsonfile_put_num(oom, j, "read_gbps", i->read_gbps);
	return j;
}

void evaldir_limit_flags(int *oom, cJSON *flags, const struct measure_result *r, const struct plan *p,
			 const cJSON *device)
{
	const double read = cJSON_GetNumberValue(jget(device, "read_gbps"));
	const char *gen = jstr(device, "gen");
	const int i = plan_task_index(p, r->hash);
	const double peak = i >= 0 ? vs_device_peak_tflops(gen, vs_op_of(&p->tasks[i])->dtype(&p->tasks[i])) : 0;
	const struct measure_impl *roles[2 + VS_PLAN_MAX_REFERENCES];
	int n = 0;

	if (!r->complete)
		return;
	roles[n++] = &r->base;
	roles[n++] = &r->cand;
	for (int k = 0; k < r->nrefs && n < (int)(sizeof(roles) / sizeof(roles[0])); k++)
		if (r->refs[k].t)
			roles[n++] = &r->refs[k].m;
	for (int k = 0; k < n; k++) {
		double sec = roles[k]->timing.median * 1e-3, gbps, tflops;

		if (!(sec > 0) || roles[k]->timing.n < 1)
			continue;
		gbps = r->bytes / sec / 1e9;
		tflops = r->flops / sec / 1e12;
		if (read > 0 && gbps > 1.05 * read)
			push_flag(oom, flags,
				  fs_printf("task %s: %s moves %.1f GB/s of counted bytes, above the %.1f GB/s this "
					    "device's read sweep measured: data served from a cache, or work skipped",
					    r->name, roles[k]->impl->name, gbps, read));
		if (peak > 0 && tflops > peak)
			push_flag(oom, flags,
				  fs_printf("task %s: %s runs %.1f TFLOP/s of counted FLOPs, above the %s datasheet "
					    "peak "
					    "of %.1f: work skipped or miscounted",
					    r->name, roles[k]->impl->name, tflops, gen, peak));
	}
}

cJSON *evaldir_tool_json(void)
{
	cJSON *tool = cJSON_CreateObject();
	int oom = 0;

	jsonfile_put_str(&oom, tool, "version", VS_TOOL_VERSION);
	jsonfile_put_str(&oom, tool, "git_head", VS_GIT_HEAD);
	jsonfile_put_str(&oom, tool, "kernels_tree", VS_KERNELS_TREE);
	jsonfile_put_bool(&oom, tool, "kernels_dirty", VS_KERNELS_DIRTY);
	jsonfile_put_str(&oom, tool, "gpu_build", VS_GPU_BUILD);
	if (oom) {
		cJSON_Delete(tool);
		return NULL;
	}
	return tool;
}

cJSON *evaldir_plugins_json(const struct plan *p)
{
	cJSON *arr = cJSON_CreateArray();
	int oom = 0;

	for (int k = 0; k < 2 + p->nrefs; k++) {
		const struct plan_impl *pi = k >= 2 ? &p->refs[k - 2].impl : k ? &p->candidate : &p->baseline;
		char role[24];
		cJSON *j;

		if (!pi->plugin_path)
			continue;
		j = cJSON_CreateObject();
		snprintf(role, sizeof(role), "reference%d", k - 1);
		jsonfile_put_str(&oom, j, "role", k >= 2 ? role : k ? "candidate" : "baseline");
		jsonfile_put_str(&oom, j, "impl", pi->name);
		jsonfile_put_str(&oom, j, "path", pi->plugin_path);
		jsonfile_put_str(&oom, j, "sha256", pi->plugin_sha256);
		jsonfile_put(&oom, arr, NULL, j);
	}
	if (oom || !arr) {
		cJSON_Delete(arr);
		return NULL;
	}
	return arr;
}

cJSON *evaldir_python_json(const struct plan *p, const char *run_versions)
{
	cJSON *arr = cJSON_CreateArray();
	int oom = 0;

	for (int k = 0; k < 2; k++) {
		const struct plan_impl *pi = k ? &p->candidate : &p->baseline;
		const struct pyimpl *py;
		cJSON *j, *pj, *v;

		if (!pi->python_json)
			continue;
		pj = cJSON_Parse(pi->python_json);
		j = cJSON_CreateObject();
		jsonfile_put_str(&oom, j, "role", k ? "candidate" : "baseline");
		jsonfile_put_str(&oom, j, "impl", pi->name);
		jsonfile_put_str(&oom, j, "path", pi->python_path);
		jsonfile_put_str(&oom, j, "sha256", pi->python_sha256);
		/* The interpreter that ran (this process registered the module), else the plan's. */
		py = pyimpl_for_impl(pi->name);
		jsonfile_put_str(&oom, j, "interpreter",
				 py                      ? py->interpreter :
				 jstr(pj, "interpreter") ? jstr(pj, "interpreter") :
							   "");
		jsonfile_put_str(&oom, j, "executable",
				 py                     ? py->executable :
				 jstr(pj, "executable") ? jstr(pj, "executable") :
							  "");
		jsonfile_put_str(&oom, j, "libpython",
				 py                    ? py->libpython :
				 jstr(pj, "libpython") ? jstr(pj, "libpython") :
							 "");
		/*
		 * Its helper files: the plan's (the run checked them), else, for a plan made before helper
		 * files were hashed, those described when it ran (also checked in the worker).
		 */
		if (jget(pj, "helpers"))
			jsonfile_put(&oom, j, "helpers", cJSON_Duplicate(jget(pj, "helpers"), 1));
		else if (py && py->helpers_json)
			jsonfile_put(&oom, j, "helpers", cJSON_Parse(py->helpers_json));
		if (jget(pj, "helpers") || (py && py->helpers_json))
			jsonfile_put(&oom, j, "helpers_planned", cJSON_CreateBool(jget(pj, "helpers") != NULL));
		jsonfile_put(&oom, j, "planned_versions",
			     jget(pj, "versions") ? cJSON_Duplicate(jget(pj, "versions"), 1) : cJSON_CreateObject());
		v = run_versions ? cJSON_Parse(run_versions) : NULL;
		jsonfile_put(&oom, j, "versions",
			     v                    ? v :
			     jget(pj, "versions") ? cJSON_Duplicate(jget(pj, "versions"), 1) :
						    cJSON_CreateObject());
		cJSON_Delete(pj);
		jsonfile_put(&oom, arr, NULL, j);
	}
	if (oom || !arr) {
		cJSON_Delete(arr);
		return NULL;
	}
	return arr;
}

/* ---- the verdict ------------------------------------------------------------------------------ */

/* The overall e2e numbers of a run. */
struct e2e_overall_out {
	int ntimed, pass_parity, pass_delta, control_zero;
	struct stats_ci ratio, ctrl; /* geomean of the per-task step-time ratios, and of the control's */
};

/*
 * result.json's "e2e": the geometric mean over the tasks whose e2e stage was timed (parity passed)
 * of the step-time ratios t_base / t_cand (the e2e_pct of the aggregate: 100 (1 - 1 / geomean)),
 * its joint bootstrap CI, the same for the control, and the e2e parity.
 */
static int e2e_overall(int *oom, cJSON *root, const struct plan *p, const struct evaldir_task_summary *t, int n,
		       struct e2e_overall_out *o)
{
	const double **tb = calloc((size_t)n + 1, sizeof(double *)), **tc = calloc((size_t)n + 1, sizeof(double *));
	const double **tk = calloc((size_t)n + 1, sizeof(double *));
	int *np = calloc((size_t)n + 1, sizeof(int)), err = 0, nplanned = 0, nfailed = 0, nskipped = 0;
	cJSON *j;

	memset(o, 0, sizeof(*o));
	o->pass_parity = 1;
	if (!tb || !tc || !tk || !np) {
		err = vs_oom();
		goto done;
	}
	for (int i = 0; i < n; i++) {
		const struct measure_e2e *m = t[i].e2e;

		if (!m || !m->planned || t[i].skipped)
			continue;
		nplanned++;
		if (m->skipped) {
			nskipped++;
			continue;
		}
		if (m->parity == 0 || m->error) {
			o->pass_parity &= m->parity != 0;
			nfailed++;
			continue;
		}
		if (m->ran && m->npairs > 0 && m->parity == 1) {
			tb[o->ntimed] = m->t_base;
			tc[o->ntimed] = m->t_cand;
			tk[o->ntimed] = m->t_ctrl;
			np[o->ntimed++] = m->npairs;
		}
	}
	if (o->ntimed &&
	    ((err = stats_geomean_speedup(&o->ratio, tb, tc, np, o->ntimed, p->protocol.resamples, p->protocol.seed)) ||
	     (err = stats_geomean_speedup(&o->ctrl, tb, tk, np, o->ntimed, p->protocol.resamples, p->protocol.seed))))
		goto done;
	o->control_zero = o->ntimed && o->ctrl.lo <= 1 && o->ctrl.hi >= 1;
	/* The gate of an e2e card: every e2e task timed (none failed), the lower CI bound at or above the card's. */
	o->pass_delta =
		o->ntimed > 0 && nfailed == 0 && o->pass_parity && measure_e2e_pct(o->ratio.lo) >= p->e2e.delta_min_pct;
	j = jsonfile_put_obj(oom, root, "e2e");
	jsonfile_put_str(oom, j, "step", p->e2e.step_name);
	jsonfile_put_num(oom, j, "tasks_planned", nplanned);
	jsonfile_put_num(oom, j, "tasks_timed", o->ntimed);
	jsonfile_put_num(oom, j, "tasks_skipped", nskipped);
	jsonfile_put_num(oom, j, "tasks_failed", nfailed);
	jsonfile_put_str(oom, j, "parity", o->pass_parity ? "pass" : "fail");
	if (o->ntimed) {
		jsonfile_put(oom, j, "ratio", ci_json(oom, &o->ratio));
		jsonfile_put(oom, j, "e2e_pct", pct_json(oom, &o->ratio));
		jsonfile_put(oom, j, "control_ratio", ci_json(oom, &o->ctrl));
		jsonfile_put(oom, j, "control_pct", pct_json(oom, &o->ctrl));
	} else {
		jsonfile_put(oom, j, "e2e_pct", cJSON_CreateNull());
	}
	jsonfile_put_bool(oom, j, "control_contains_zero", o->control_zero);
done:
	free(tb);
	free(tc);
	free(tk);
	free(np);
	return err;
}

/* Scratch arrays for the timed tasks of one subset (a concurrency level, a kv dtype). */
struct subset {
	const double **tb, **tc;
	int *np;
	double *w;
};

static int subset_init(struct subset *s, int nspeed)
{
	s->tb = calloc((size_t)nspeed + 1, sizeof(*s->tb));
	s->tc = calloc((size_t)nspeed + 1, sizeof(*s->tc));
	s->np = calloc((size_t)nspeed + 1, sizeof(int));
	s->w = calloc((size_t)nspeed + 1, sizeof(double));
	return s->tb && s->tc && s->np && s->w ? 0 : vs_oom();
}

static void subset_release(struct subset *s)
{
	free(s->tb);
	free(s->tc);
	free(s->np);
	free(s->w);
}

/*
 * One entry of per_concurrency / per_kv_dtype: stats_weighted_speedup over the timed tasks i whose
 * key[i] is want (the other arrays are workload_overall()'s), as {<name>: value, tasks, weight,
 * speedup}; value is the string sval when not NULL, else the number nval. A subset with no timed
 * task gets tasks 0, weight 0 and speedup null. Errors: stats_weighted_speedup's.
 */
static int subset_entry(int *oom, cJSON *arr, struct subset *s, const struct plan *p, const double *const *tb,
			const double *const *tc, const int *np, const double *w, const int *key, int want, int nspeed,
			const char *name, const char *sval, double nval)
{
	int k = 0, err;
	double held = 0;
	struct stats_ci ci;
	cJSON *e;

	for (int i = 0; i < nspeed; i++)
		if (key[i] == want) {
			s->tb[k] = tb[i];
			s->tc[k] = tc[i];
			s->w[k] = w[i];
			held += w[i];
			s->np[k++] = np[i];
		}
	if (k &&
	    (err = stats_weighted_speedup(&ci, s->tb, s->tc, s->np, s->w, k, p->protocol.resamples, p->protocol.seed)))
		return err;
	e = cJSON_CreateObject();
	if (sval)
		jsonfile_put_str(oom, e, name, sval);
	else
		jsonfile_put_num(oom, e, name, nval);
	jsonfile_put_num(oom, e, "tasks", k);
	jsonfile_put_num(oom, e, "weight", held);
	jsonfile_put(oom, e, "speedup", k ? ci_json(oom, &ci) : cJSON_CreateNull());
	jsonfile_put(oom, arr, NULL, e);
	return 0;
}

/*
 * The workload speedup at each concurrency level of a workload plan (issue 41, item 4): for every
 * level the timed tasks stand for, in ascending order, stats_weighted_speedup over the timed tasks of
 * that level alone, as an array of {concurrency, tasks, weight, speedup}. conc[k] is the level of
 * timed task k; the other arrays are workload_overall()'s. A config that wins at 96 and loses at 1
 * says so here, whatever the whole workload's figure.
 */
static cJSON *per_concurrency_json(int *oom, const struct plan *p, const double *const *tb, const double *const *tc,
				   const int *np, const double *w, const int *conc, int nspeed, int *err)
{
	struct subset s;
	cJSON *arr = cJSON_CreateArray();
	int level = 0;

	*err = subset_init(&s, nspeed);
	if (!*err && !arr)
		*err = vs_oom();
	while (!*err) {
		int next = 0;

		for (int i = 0; i < nspeed; i++) /* the smallest level above the last one */
			if (conc[i] > level && (!next || conc[i] < next))
				next = conc[i];
		if (!next)
			break;
		level = next;
		*err = subset_entry(oom, arr, &s, p, tb, tc, np, w, conc, level, nspeed, "concurrency", NULL, level);
	}
	subset_release(&s);
	if (*err) {
		cJSON_Delete(arr);
		return NULL;
	}
	return arr;
}

/*
 * The kv dtypes of plan p's tasks (op.h dtype class), each once, in the order of their first task:
 * into out (cap entries); returns how many.
 */
static int plan_kv_dtypes(const struct plan *p, int *out, int cap)
{
	int n = 0;

	for (int i = 0; i < p->ntasks; i++) {
		int d = vs_op_of(&p->tasks[i])->dtype(&p->tasks[i]), k;

		for (k = 0; k < n && out[k] != d; k++)
			;
		if (k == n && n < cap)
			out[n++] = d;
	}
	return n;
}

/*
 * The workload speedup of each kv dtype of a workload plan (issue 37, a deployment runs one KV
 * dtype): for every kv dtype of the plan's tasks (plan order), stats_weighted_speedup over the timed
 * tasks of that dtype alone (the weights as planned: the ratio is scale-free), as an array of
 * {kv_dtype, tasks, weight, speedup}; a dtype with no timed task has tasks 0, weight 0 and speedup
 * null. dt[k] is the dtype class of timed task k; the other arrays are workload_overall()'s.
 */
static cJSON *per_kv_dtype_json(int *oom, const struct plan *p, const double *const *tb, const double *const *tc,
				const int *np, const double *w, const int *dt, int nspeed, int *err)
{
	struct subset s;
	int dts[32], ndt = plan_kv_dtypes(p, dts, 32);
	cJSON *arr = cJSON_CreateArray();

	*err = subset_init(&s, nspeed);
	if (!*err && !arr)
		*err = vs_oom();
	for (int d = 0; d < ndt && !*err; d++) {
		const char *name = vs_op_of(p->tasks)->dtype_name(dts[d]);

		*err = subset_entry(oom, arr, &s, p, tb, tc, np, w, dt, dts[d], nspeed, "kv_dtype",
				    name ? name : "unknown", 0);
	}
	subset_release(&s);
	if (*err) {
		cJSON_Delete(arr);
		return NULL;
	}
	return arr;
}

/*
 * The workload speedup of a workload plan (stats_weighted_speedup) over the timed tasks, into
 * root's overall.workload: the estimate with its CI, the share of the workload's weight the timed
 * tasks hold, the speedup at each concurrency level (per_concurrency) and of each kv dtype
 * (per_kv_dtype), and the tasks that carry most of the baseline's time (weight x median t_base), at
 * most five, largest first.
 */
static int workload_overall(int *oom, cJSON *ov, struct stats_ci *ci, const struct plan *p,
			    const struct evaldir_task_summary *t, int n, const double **tb, const double **tc,
			    const int *np, const double *w, const int *conc, const int *dt, int nspeed)
{
	double held = 0, total = 0, *share = NULL;
	int err, *order = NULL;
	cJSON *wj, *top, *pc, *pk;

	if ((err = stats_weighted_speedup(ci, tb, tc, np, w, nspeed, p->protocol.resamples, p->protocol.seed)))
		return err;
	share = calloc((size_t)n + 1, sizeof(double));
	order = calloc((size_t)n + 1, sizeof(int));
	if (!share || !order) {
		free(share);
		free(order);
		return vs_oom();
	}
	for (int i = 0, k = 0; i < n; i++) {
		if (t[i].complete && t[i].parity_pass && t[i].npairs > 0 && !t[i].skipped) {
			struct stats_summary sb;

			held += t[i].weight;
			if (!stats_summarize(&sb, t[i].t_base, t[i].npairs))
				share[i] = t[i].weight * sb.median;
			total += share[i];
			k++;
		}
		order[i] = i;
	}
	for (int i = 1; i < n; i++) /* insertion sort by share, largest first; ties keep plan order */
		for (int j = i; j > 0 && share[order[j]] > share[order[j - 1]]; j--) {
			int x = order[j];

			order[j] = order[j - 1];
			order[j - 1] = x;
		}
	wj = jsonfile_put_obj(oom, ov, "workload");
	jsonfile_put_str(oom, wj, "id", p->workload->id);
	jsonfile_put(oom, wj, "speedup", ci_json(oom, ci));
	jsonfile_put_num(oom, wj, "weight_timed", held);
	if (!(pc = per_concurrency_json(oom, p, tb, tc, np, w, conc, nspeed, &err))) {
		free(share);
		free(order);
		return err;
	}
	jsonfile_put(oom, wj, "per_concurrency", pc);
	if (!(pk = per_kv_dtype_json(oom, p, tb, tc, np, w, dt, nspeed, &err))) {
		free(share);
		free(order);
		return err;
	}
	jsonfile_put(oom, wj, "per_kv_dtype", pk);
	top = jsonfile_put_arr(oom, wj, "time_share");
	for (int k = 0; k < n && k < 5 && share[order[k]] > 0; k++) {
		cJSON *e = cJSON_CreateObject();

		jsonfile_put_str(oom, e, "task", t[order[k]].name ? t[order[k]].name : "");
		jsonfile_put_num(oom, e, "weight", t[order[k]].weight);
		jsonfile_put_num(oom, e, "baseline_time_share", share[order[k]] / total);
		jsonfile_put(oom, top, NULL, e);
	}
	free(share);
	free(order);
	return 0;
}

int evaldir_verdict(cJSON *root, const struct plan *p, const struct evaldir_task_summary *t, int n, int partial,
		    cJSON *flags, char *line, size_t cap)
{
	const double **tb = calloc((size_t)n + 1, sizeof(double *));
	const double **tc = calloc((size_t)n + 1, sizeof(double *));
	int *np = calloc((size_t)n + 1, sizeof(int));
	double *tw = calloc((size_t)n + 1, sizeof(double));
	int *tconc = calloc((size_t)n + 1, sizeof(int));
	int *tdt = calloc((size_t)n + 1, sizeof(int));
	struct stats_ci wl = {0};
	double gate_lo;
	int gate_parity = 1, gate_capture = 1, complete_all = 1, nspeed = 0, err = 0, oom = 0;
	int nskipped = 0, ran_dtypes = 0, planned_dtypes = 0, pass_coverage, nkv = 0;
	int pass_speed, pass_parity, verdict_ok;
	struct stats_ci overall = {0};
	struct e2e_overall_out e2e = {0};
	cJSON *ov, *gates, *g;
	const char *verdict;

	if (!tb || !tc || !np || !tw || !tconc || !tdt) {
		err = vs_oom();
		cJSON_Delete(flags);
		goto done;
	}
	for (int i = 0; i < n; i++) {
		if (t[i].skipped) {
			nskipped++;
			continue;
		}
		ran_dtypes |= 1 << t[i].dtype;
		gate_parity &= t[i].parity_pass;
		complete_all &= t[i].complete;
		if (t[i].cand_capture == 0 || t[i].base_capture == 0)
			gate_capture = 0;
		if (p->capture_required && t[i].complete && t[i].cand_capture != 1)
			gate_capture = 0;
		if (t[i].complete && t[i].parity_pass && t[i].npairs > 0) {
			tb[nspeed] = t[i].t_base;
			tc[nspeed] = t[i].t_cand;
			tw[nspeed] = t[i].weight;
			tconc[nspeed] = t[i].concurrency;
			tdt[nspeed] = t[i].dtype;
			np[nspeed++] = t[i].npairs;
		}
	}
	if (nspeed > 0 &&
	    (err = stats_geomean_speedup(&overall, tb, tc, np, nspeed, p->protocol.resamples, p->protocol.seed))) {
		cJSON_Delete(flags);
		goto done;
	}
	/*
	 * Skipped tasks (an implementation does not support them) are neither passed nor failed; but a
	 * planned dtype none of whose tasks ran cannot be validated: the coverage gate fails.
	 */
	for (int i = 0; i < p->ntasks; i++)
		planned_dtypes |= 1 << vs_op_of(&p->tasks[i])->dtype(&p->tasks[i]);
	pass_coverage = (planned_dtypes & ~ran_dtypes) == 0 || partial;
	/* A workload plan gates on the workload speedup; the geomean stands beside it. */
	gate_lo = overall.lo;
	ov = jsonfile_put_obj(&oom, root, "overall");
	if (p->workload && nspeed > 0) {
		if ((err = workload_overall(&oom, ov, &wl, p, t, n, tb, tc, np, tw, tconc, tdt, nspeed))) {
			cJSON_Delete(flags);
			goto done;
		}
		gate_lo = wl.lo;
		/*
		 * A deployment runs one kv dtype: with several, the gate is each dtype's workload speedup,
		 * and its lower bound is the smallest of theirs (a dtype with no timed task: 0); the mix
		 * of the dtypes stands beside it and gates nothing.
		 */
		nkv = cJSON_GetArraySize(jget(jget(ov, "workload"), "per_kv_dtype"));
		if (nkv > 1) {
			const cJSON *x;

			cJSON_ArrayForEach(x, jget(jget(ov, "workload"), "per_kv_dtype"))
			{
				const cJSON *sp = jget(x, "speedup");
				double lo = cJSON_IsObject(sp) ? ci_lo(sp) : 0;

				gate_lo = x == jget(jget(ov, "workload"), "per_kv_dtype")->child || lo < gate_lo ?
						  lo :
						  gate_lo;
			}
		}
	}
	pass_speed = nspeed > 0 && complete_all && gate_lo >= p->speedup_min;
	pass_parity = n - nskipped > 0 && gate_parity;
	verdict_ok = !partial && pass_speed && (pass_parity || !p->parity_required) &&
		     (gate_capture || !p->capture_required) && complete_all && pass_coverage;
	verdict = verdict_ok && n == p->ntasks ? "validated" : "failed";
	if (nspeed > 0)
		jsonfile_put(&oom, ov, "isolated", ci_json(&oom, &overall));
	else
		jsonfile_put(&oom, ov, "isolated", cJSON_CreateNull());
	jsonfile_put_num(&oom, ov, "tasks_timed", nspeed);
	jsonfile_put_str(&oom, ov, "parity", pass_parity ? "pass" : "fail");
	if (p->nrefs && (err = refs_overall(&oom, root, p, t, n))) {
		cJSON_Delete(flags);
		goto done;
	}
	if (p->e2e.enabled && (err = e2e_overall(&oom, root, p, t, n, &e2e))) {
		cJSON_Delete(flags);
		goto done;
	}
	if (p->e2e.enabled) {
		verdict_ok &= e2e.pass_parity && (e2e.pass_delta || !p->e2e.gate);
		verdict = verdict_ok && n == p->ntasks ? "validated" : "failed";
	}
	gates = jsonfile_put_obj(&oom, root, "gates");
	g = jsonfile_put_obj(&oom, gates, "parity");
	jsonfile_put_str(&oom, g, "mode", p->parity_required ? "required" : "advisory");
	jsonfile_put_bool(&oom, g, "pass", pass_parity);
	g = jsonfile_put_obj(&oom, gates, "speedup");
	if (p->workload)
		jsonfile_put_str(&oom, g, "basis", "workload");
	jsonfile_put_num(&oom, g, "isolated_speedup_min", p->speedup_min);
	jsonfile_put_num(&oom, g, "ci_lower", nspeed ? gate_lo : 0);
	if (nkv > 1) {
		cJSON *arr = jsonfile_put_arr(&oom, g, "per_kv_dtype");
		const cJSON *x;

		cJSON_ArrayForEach(x, jget(jget(ov, "workload"), "per_kv_dtype"))
		{
			cJSON *e = cJSON_CreateObject();
			const cJSON *sp = jget(x, "speedup");

			jsonfile_put_str(&oom, e, "kv_dtype", jstr(x, "kv_dtype"));
			jsonfile_put(&oom, e, "ci_lower",
				     cJSON_IsObject(sp) ? cJSON_CreateNumber(ci_lo(sp)) : cJSON_CreateNull());
			jsonfile_put_bool(&oom, e, "pass", cJSON_IsObject(sp) && ci_lo(sp) >= p->speedup_min);
			jsonfile_put(&oom, arr, NULL, e);
		}
	}
	jsonfile_put_bool(&oom, g, "pass", pass_speed);
	g = jsonfile_put_obj(&oom, gates, "capture");
	jsonfile_put_bool(&oom, g, "required", p->capture_required);
	jsonfile_put_bool(&oom, g, "pass", p->capture_required ? gate_capture && complete_all : 1);
	g = jsonfile_put_obj(&oom, gates, "complete");
	jsonfile_put_bool(&oom, g, "pass", complete_all && !partial && n == p->ntasks);
	if (nskipped || !pass_coverage) {
		cJSON *missing;

		g = jsonfile_put_obj(&oom, gates, "coverage");
		jsonfile_put_num(&oom, g, "skipped", nskipped);
		missing = jsonfile_put_arr(&oom, g, "dtypes_not_run");
		for (int d = 0; d < 31; d++)
			if ((planned_dtypes & ~ran_dtypes) & (1 << d))
				jsonfile_put(&oom, missing, NULL,
					     cJSON_CreateString(vs_op_of(p->tasks)->dtype_name(d)));
		jsonfile_put_bool(&oom, g, "pass", pass_coverage);
	}
	if (p->e2e.enabled) {
		g = jsonfile_put_obj(&oom, gates, "e2e");
		jsonfile_put_bool(&oom, g, "parity_pass", e2e.pass_parity);
		if (p->e2e.gate) {
			jsonfile_put_num(&oom, g, "e2e_delta_min_pct", p->e2e.delta_min_pct);
			jsonfile_put_num(&oom, g, "ci_lower", e2e.ntimed ? measure_e2e_pct(e2e.ratio.lo) : 0);
			jsonfile_put_bool(&oom, g, "control_contains_zero", e2e.control_zero);
		}
		jsonfile_put_bool(&oom, g, "pass", e2e.pass_parity && (e2e.pass_delta || !p->e2e.gate));
	}
	jsonfile_put(&oom, root, "flags", flags ? flags : cJSON_CreateArray());
	jsonfile_put_str(&oom, root, "verdict", verdict);
	if (oom)
		err = vs_oom();
	if (line) {
		char iso[96] = "n/a", why[512] = "";
		int ncomplete = 0;

		for (int i = 0; i < n; i++)
			ncomplete += t[i].complete;
		if (nspeed)
			snprintf(iso, sizeof(iso), "%.3f [%.3f, %.3f]", overall.estimate, overall.lo, overall.hi);
		if (nspeed && p->workload)
			snprintf(iso + strlen(iso), sizeof(iso) - strlen(iso), ", not gated");
		/* A failed verdict names every gate that failed it, the complete gate too. */
		if (strcmp(verdict, "validated")) {
			if (!pass_speed)
				snprintf(why + strlen(why), sizeof(why) - strlen(why), "%sspeedup gate",
					 *why ? ", " : "");
			if (!pass_speed && nkv > 1) { /* the kv dtypes that failed it, each with its speedup */
				const cJSON *x;
				int first = 1;

				cJSON_ArrayForEach(x, jget(jget(ov, "workload"), "per_kv_dtype"))
				{
					const cJSON *sp = jget(x, "speedup");
					size_t at = strlen(why);

					if (cJSON_IsObject(sp) && ci_lo(sp) >= p->speedup_min)
						continue;
					if (cJSON_IsObject(sp))
						snprintf(why + at, sizeof(why) - at, "%s%s %.3f [%.3f, %.3f] < %g",
							 first ? ": " : "; ", jstr(x, "kv_dtype"), ci_est(sp),
							 ci_lo(sp), ci_hi(sp), p->speedup_min);
					else
						snprintf(why + at, sizeof(why) - at, "%s%s not timed",
							 first ? ": " : "; ", jstr(x, "kv_dtype"));
					first = 0;
				}
			}
			if (!pass_parity && p->parity_required)
				snprintf(why + strlen(why), sizeof(why) - strlen(why), "%sparity", *why ? ", " : "");
			if (p->capture_required && !(gate_capture && complete_all))
				snprintf(why + strlen(why), sizeof(why) - strlen(why), "%scapture", *why ? ", " : "");
			if (p->e2e.enabled && !e2e.pass_parity)
				snprintf(why + strlen(why), sizeof(why) - strlen(why), "%se2e parity",
					 *why ? ", " : "");
			if (p->e2e.enabled && p->e2e.gate && !e2e.pass_delta)
				snprintf(why + strlen(why), sizeof(why) - strlen(why), "%se2e gate", *why ? ", " : "");
			if (partial)
				snprintf(why + strlen(why), sizeof(why) - strlen(why),
					 "%sincomplete: partial run, %d of %d "
					 "tasks run",
					 *why ? ", " : "", n, p->ntasks);
			else if (n != p->ntasks || !complete_all)
				snprintf(why + strlen(why), sizeof(why) - strlen(why),
					 "%sincomplete: %d of %d tasks run to "
					 "the end",
					 *why ? ", " : "", ncomplete, p->ntasks);
		}
		if (p->workload && nspeed) {
			const cJSON *pc = jget(jget(ov, "workload"), "per_concurrency"), *x;

			line[0] = '\0';
			if (nkv > 1) {
				/* one line per kv dtype, each gated; then the mix of them, which gates nothing */
				const cJSON *pk = jget(jget(ov, "workload"), "per_kv_dtype");
				char mix[160] = "";

				cJSON_ArrayForEach(x, pk)
				{
					const cJSON *sp = jget(x, "speedup");
					size_t at = strlen(line);

					if (cJSON_IsObject(sp))
						snprintf(line + at, cap - at,
							 "workload %s speedup on %s (%g tasks): %.3f [%.3f, %.3f]; "
							 "gate >= "
							 "%g: %s\n",
							 p->workload->id, jstr(x, "kv_dtype"),
							 cJSON_GetNumberValue(jget(x, "tasks")), ci_est(sp), ci_lo(sp),
							 ci_hi(sp), p->speedup_min,
							 ci_lo(sp) >= p->speedup_min ? "pass" : "FAIL");
					else
						snprintf(line + at, cap - at,
							 "workload %s speedup on %s: no task timed; gate >= %g: FAIL\n",
							 p->workload->id, jstr(x, "kv_dtype"), p->speedup_min);
					snprintf(mix + strlen(mix), sizeof(mix) - strlen(mix), "%s%s",
						 x == pk->child ? "" : " + ", jstr(x, "kv_dtype"));
				}
				snprintf(line + strlen(line), cap - strlen(line),
					 "workload %s speedup, %s mixed (%d tasks, not gated): %.3f [%.3f, %.3f]",
					 p->workload->id, mix, nspeed, wl.estimate, wl.lo, wl.hi);
			} else {
				snprintf(line, cap, "workload %s speedup (%d tasks): %.3f [%.3f, %.3f]",
					 p->workload->id, nspeed, wl.estimate, wl.lo, wl.hi);
			}
			cJSON_ArrayForEach(x, pc)
			{
				const cJSON *sp = jget(x, "speedup");

				snprintf(line + strlen(line), cap - strlen(line), "%s%g: %.3f [%.3f, %.3f]",
					 x == pc->child ? " (by concurrency " : ", ",
					 cJSON_GetNumberValue(jget(x, "concurrency")),
					 cJSON_GetNumberValue(jget(sp, "estimate")),
					 cJSON_GetNumberValue(cJSON_GetArrayItem(jget(sp, "ci95"), 0)),
					 cJSON_GetNumberValue(cJSON_GetArrayItem(jget(sp, "ci95"), 1)));
			}
			snprintf(line + strlen(line), cap - strlen(line), "%s; ", cJSON_GetArraySize(pc) ? ")" : "");
		} else if (p->workload)
			snprintf(line, cap, "workload %s speedup: n/a; ", p->workload->id);
		else
			line[0] = '\0';
		snprintf(line + strlen(line), cap - strlen(line),
			 "overall isolated speedup (geomean of %d tasks): %s; gate >= %g: %s; parity %s; "
			 "capture %s; complete %s; verdict %s%s%s%s",
			 nspeed, iso, p->speedup_min, pass_speed ? "pass" : "FAIL", pass_parity ? "pass" : "FAIL",
			 p->capture_required ? (gate_capture && complete_all ? "pass" : "FAIL") : "n/a",
			 complete_all && !partial && n == p->ntasks ? "pass" : "FAIL", verdict, *why ? " (" : "", why,
			 *why ? ")" : "");
		if (p->e2e.enabled) {
			if (e2e.ntimed)
				snprintf(line + strlen(line), cap - strlen(line),
					 "; e2e (%d task%s): %.2f%% [%.2f, %.2f], control %.2f%% [%.2f, %.2f]%s",
					 e2e.ntimed, e2e.ntimed == 1 ? "" : "s", measure_e2e_pct(e2e.ratio.estimate),
					 measure_e2e_pct(e2e.ratio.lo), measure_e2e_pct(e2e.ratio.hi),
					 measure_e2e_pct(e2e.ctrl.estimate), measure_e2e_pct(e2e.ctrl.lo),
					 measure_e2e_pct(e2e.ctrl.hi), e2e.pass_parity ? "" : ", e2e parity FAIL");
			else
				snprintf(line + strlen(line), cap - strlen(line), "; e2e: no task timed%s",
					 e2e.pass_parity ? "" : ", e2e parity FAIL");
			if (p->e2e.gate)
				snprintf(line + strlen(line), cap - strlen(line), "; e2e gate >= %g%%: %s",
					 p->e2e.delta_min_pct, e2e.pass_delta ? "pass" : "FAIL");
		}
		if (nskipped || !pass_coverage) {
			char dts[64] = "";

			for (int d = 0; d < 31; d++)
				if ((planned_dtypes & ~ran_dtypes) & (1 << d))
					snprintf(dts + strlen(dts), sizeof(dts) - strlen(dts), "%s%s", *dts ? ", " : "",
						 vs_op_of(p->tasks)->dtype_name(d));
			snprintf(line + strlen(line), cap - strlen(line), " (%d task%s skipped: not supported%s%s%s)",
				 nskipped, nskipped == 1 ? "" : "s", *dts ? "; no task of " : "", dts,
				 *dts ? " ran: coverage FAIL" : "");
		}
	}
done:
	free(tb);
	free(tc);
	free(np);
	free(tw);
	free(tconc);
	free(tdt);
	return err;
}

int evaldir_reference_line(char *line, size_t cap, const cJSON *root, int k)
{
	const cJSON *o = cJSON_GetArrayItem(jget(root, "references"), k), *ratio = jget(o, "ratio");
	char r[96] = "n/a";

	if (!o)
		return VS_ENOTFOUND;
	if (cJSON_IsObject(ratio))
		snprintf(r, sizeof(r), "%.3f [%.3f, %.3f]", cJSON_GetNumberValue(jget(ratio, "estimate")),
			 cJSON_GetNumberValue(cJSON_GetArrayItem(jget(ratio, "ci95"), 0)),
			 cJSON_GetNumberValue(cJSON_GetArrayItem(jget(ratio, "ci95"), 1)));
	snprintf(line, cap,
		 "reference %s: t_ref / t_cand (geomean of %d tasks): %s; %d skipped, %d failed "
		 "(never gates)",
		 jstr(o, "impl") ? jstr(o, "impl") : "?", (int)cJSON_GetNumberValue(jget(o, "tasks_timed")), r,
		 (int)cJSON_GetNumberValue(jget(o, "tasks_skipped")),
		 (int)cJSON_GetNumberValue(jget(o, "tasks_failed")));
	return 0;
}

/* ---- the writer ------------------------------------------------------------------------------- */

#define SAMPLES_HEADER "task,set,pair,order,role,config,ms,checked\n"

int evaldir_writer_init(struct evaldir_writer *w, const char *dir)
{
	memset(w, 0, sizeof(*w));
	w->dir = strdup(dir);
	w->samples = open_memstream(&w->samples_buf, &w->samples_len);
	w->log = open_memstream(&w->log_buf, &w->log_len);
	w->flags = cJSON_CreateArray();
	w->manifests = cJSON_CreateObject();
	if (!w->dir || !w->samples || !w->log || !w->flags || !w->manifests)
		return vs_oom();
	fputs(SAMPLES_HEADER, w->samples);
	return 0;
}

int evaldir_writer_manifest(struct evaldir_writer *w, const char *hash, const char *text, size_t len, char hex_out[65])
{
	char *name = fs_printf("manifests/%s.json", hash), hex[65];
	int err = name ? fs_write_in(w->dir, name, text, len, hex) : vs_oom();

	free(name);
	if (err)
		return err;
	if (!cJSON_GetObjectItemCaseSensitive(w->manifests, hash))
		jsonfile_put_str(&w->oom, w->manifests, hash, hex);
	if (hex_out)
		memcpy(hex_out, hex, 65);
	return w->oom ? vs_oom() : 0;
}

int evaldir_writer_head(struct evaldir_writer *w, const struct evaldir_head *h)
{
	const struct plan *p = h->plan;
	int *oom = &w->oom;
	char label[2][256]; /* the sides as cards name them: IMPL, or IMPL@CONFIG when forced */

	w->root = cJSON_CreateObject();
	VS_CHECK_ALLOC(w->root);
	jsonfile_put_str(oom, w->root, "schema", VS_RESULT_SCHEMA);
	if (h->copy_from) {
		static const char *const copied[] = {"tool", "card", "plan", "device"};

		for (size_t k = 0; k < sizeof(copied) / sizeof(copied[0]); k++)
			jsonfile_put(oom, w->root, copied[k], cJSON_Duplicate(jget(h->copy_from, copied[k]), 1));
		if (jget(h->copy_from, "python"))
			jsonfile_put(oom, w->root, "python", cJSON_Duplicate(jget(h->copy_from, "python"), 1));
	} else {
		cJSON *card, *plan;

		jsonfile_put(oom, w->root, "tool", evaldir_tool_json());
		card = jsonfile_put_obj(oom, w->root, "card");
		jsonfile_put_str(oom, card, "id", p->card_id);
		jsonfile_put_str(oom, card, "path", p->card_path);
		jsonfile_put_str(oom, card, "hash", p->card_hash);
		plan = jsonfile_put_obj(oom, w->root, "plan");
		jsonfile_put_str(oom, plan, "path", h->plan_path);
		jsonfile_put_str(oom, plan, "sha256", h->plan_sha256);
		jsonfile_put_str(oom, plan, "tier", p->tier);
		jsonfile_put_str(oom, plan, "model", p->model);
		jsonfile_put(oom, w->root, "device", device_json(oom, h->device));
	}
	jsonfile_put_str(oom, w->root, "started", h->started);
	jsonfile_put_str(oom, w->root, "finished", h->finished);
	jsonfile_put_str(oom, w->root, "baseline", plan_impl_label(&p->baseline, label[0], sizeof(label[0])));
	jsonfile_put_str(oom, w->root, "candidate", plan_impl_label(&p->candidate, label[1], sizeof(label[1])));
	jsonfile_put(oom, w->root, "plugins", evaldir_plugins_json(p));
	if (!h->copy_from && (p->baseline.python_json || p->candidate.python_json))
		jsonfile_put(oom, w->root, "python", evaldir_python_json(p, h->py_versions));
	jsonfile_put_bool(oom, w->root, "partial", h->partial);
	if (h->partial) {
		cJSON *f = jsonfile_put_obj(oom, w->root, "filters");

		jsonfile_put_str(oom, f, "task", h->task_filter);
		jsonfile_put_str(oom, f, "impl", h->impl_filter);
		jsonfile_put_str(oom, f, "config", h->config_filter);
		if (h->scratch)
			jsonfile_put_bool(oom, f, "scratch", 1);
		jsonfile_put_str(oom, f, "plan_differs", h->plan_differs);
		if (h->has_part) {
			cJSON *pt = jsonfile_put_obj(oom, w->root, "part");

			jsonfile_put_str(oom, pt, "run_id", h->run_id);
			jsonfile_put_num(oom, pt, "index", h->part_index);
			jsonfile_put_num(oom, pt, "of", p->ntasks);
		}
	}
	if (h->merged_from) {
		cJSON *mf = jsonfile_put_arr(oom, w->root, "merged_from");

		for (int k = 0; k < h->nmerged; k++)
			push(oom, mf, cJSON_CreateString(h->merged_from[k]));
	}
	w->tasks = jsonfile_put_arr(oom, w->root, "tasks");
	return *oom ? vs_oom() : 0;
}

int evaldir_writer_task(struct evaldir_writer *w, const struct measure_result *r, const struct plan *p)
{
	push(&w->oom, w->tasks, task_json(&w->oom, r, p, w->flags));
	evaldir_limit_flags(&w->oom, w->flags, r, p, jget(w->root, "device"));
	return w->oom ? vs_oom() : 0;
}

int evaldir_writer_task_copy(struct evaldir_writer *w, const cJSON *task, const cJSON *flags)
{
	const cJSON *f;

	push(&w->oom, w->tasks, cJSON_Duplicate(task, 1));
	cJSON_ArrayForEach(f, flags) push(&w->oom, w->flags, cJSON_Duplicate(f, 1));
	return w->oom ? vs_oom() : 0;
}

int evaldir_writer_verdict(struct evaldir_writer *w, const struct plan *p, const struct evaldir_task_summary *t, int n,
			   int partial, char *line, size_t cap)
{
	int err = evaldir_verdict(w->root, p, t, n, partial, w->flags, line, cap);

	w->flags = NULL;
	return err;
}

int evaldir_writer_commit(struct evaldir_writer *w, const char *plan_text, size_t plan_len)
{
	char hex[65], *text;
	int err;

	if (w->oom || !w->root)
		return vs_error(VS_ENOMEM, "out of memory: result.json not written");
	fclose(w->samples);
	w->samples = NULL;
	if ((err = fs_write_in(w->dir, "plan.json", plan_text, plan_len, NULL)) ||
	    (err = fs_write_in(w->dir, "samples.csv", w->samples_buf, w->samples_len, hex)))
		return err;
	jsonfile_put_str(&w->oom, w->root, "samples_sha256", hex);
	jsonfile_put(&w->oom, w->root, "manifests", w->manifests);
	w->manifests = NULL;
	fclose(w->log);
	w->log = NULL;
	if ((err = fs_write_in(w->dir, "run.log", w->log_buf, w->log_len, hex)))
		return err;
	jsonfile_put_str(&w->oom, w->root, "log_sha256", hex);
	text = w->oom ? NULL : cJSON_Print(w->root);
	if (!text)
		return vs_error(VS_ENOMEM, "out of memory: result.json not written");
	err = fs_write_in(w->dir, "result.json", text, strlen(text), NULL);
	cJSON_free(text);
	if (!err) {
		/* complete now: the writer's marker goes (a marker left by a kill here is a stale temporary) */
		char *marker = writer_marker(), *path = marker ? fs_join(w->dir, marker) : NULL;

		if (path)
			unlink(path);
		free(path);
		free(marker);
	}
	return err;
}

void evaldir_writer_release(struct evaldir_writer *w)
{
	if (w->samples)
		fclose(w->samples);
	if (w->log)
		fclose(w->log);
	free(w->samples_buf);
	free(w->log_buf);
	free(w->dir);
	cJSON_Delete(w->root);
	cJSON_Delete(w->flags);
	cJSON_Delete(w->manifests);
	memset(w, 0, sizeof(*w));
}

/* ---- the reader ------------------------------------------------------------------------------- */

/* sha256 of dir/name must equal want. */
static int check_file_hash(const char *dir, const char *name, const char *want, int *status)
{
	char *path = fs_join(dir, name), hex[65];
	int err;

	VS_CHECK_ALLOC(path);
	if (!want) {
		free(path);
		*status = EVIDENCE_MISMATCH;
		return vs_error(VS_EVERIFY, "%s: result.json records no sha256 for '%s'", dir, name);
	}
	if (!fs_exists(path)) {
		*status = EVIDENCE_MISMATCH;
		err = vs_error(VS_EVERIFY, "%s: '%s' is missing from the eval dir", dir, name);
	} else if (fs_is_link(path)) {
		*status = EVIDENCE_MISMATCH;
		err = vs_error(VS_EVERIFY, "%s: '%s' is a symlink: an eval dir holds its own files", dir, name);
	} else if ((err = fs_sha256_file(hex, path))) {
		*status = EVIDENCE_MISMATCH;
	} else if (strcmp(hex, want)) {
		*status = EVIDENCE_MISMATCH;
		err = vs_error(VS_EVERIFY,
			       "%s: '%s' does not match result.json (sha256 %.12s..., recorded "
			       "%.12s...): the evidence was modified",
			       dir, name, hex, want);
	}
	free(path);
	return err;
}

/*
 * The files result.json binds by sha256: plan.json, samples.csv, run.log and the manifest copy of
 * every task. path names result.json in messages.
 */
static int check_bound_files(const char *dir, const cJSON *result, const char *path, int *status)
{
	const cJSON *manifests = jget(result, "manifests"), *t;
	int err, i = 0;

	if ((err = check_file_hash(dir, "plan.json", jstr(jget(result, "plan"), "sha256"), status)) ||
	    (err = check_file_hash(dir, "samples.csv", jstr(result, "samples_sha256"), status)) ||
	    (err = check_file_hash(dir, "run.log", jstr(result, "log_sha256"), status)))
		return err;
	cJSON_ArrayForEach(t, jget(result, "tasks"))
	{
		const char *h = jstr(t, "hash");
		char *name;

		i++;
		/* A skipped task was never materialized (the plan copy must list it: checked below). */
		if (h && jstr(t, "skipped") && !jstr(manifests, h))
			continue;
		if (!h || !jstr(manifests, h)) {
			*status = EVIDENCE_MISMATCH;
			return vs_error(VS_EVERIFY, "%s: task %d has no manifest copy recorded", path, i);
		}
		name = fs_printf("manifests/%s.json", h);
		err = name ? check_file_hash(dir, name, jstr(manifests, h), status) : vs_oom();
		free(name);
		if (err)
			return err;
	}
	return 0;
}

/* Grow *x from cap to ncap values, the new ones NaN (*x NULL: a new array of NaN). */
static int grow_nan(double **x, int cap, int ncap)
{
	double *nx = realloc(*x, (size_t)ncap * sizeof(double));

	if (!nx)
		return -1;
	for (int i = cap; i < ncap; i++)
		nx[i] = NAN;
	*x = nx;
	return 0;
}

/* Store one sample of role (0 baseline, 1 candidate, 2 + k reference k) at pair. */
static int pairs_put(struct sample_pairs *tp, int pair, int role, double ms)
{
	double **x;

	if (pair < 0 || pair > 10000000 || role < 0 || role >= 2 + VS_PLAN_MAX_REFERENCES)
		return -1;
	if (pair >= tp->cap) {
		int ncap = pair + 64;

		if (grow_nan(&tp->base, tp->cap, ncap) || grow_nan(&tp->cand, tp->cap, ncap))
			return -1;
		for (int k = 0; k < VS_PLAN_MAX_REFERENCES; k++)
			if (tp->ref[k] && grow_nan(&tp->ref[k], tp->cap, ncap))
				return -1;
		tp->cap = ncap;
	}
	x = role == 0 ? &tp->base : role == 1 ? &tp->cand : &tp->ref[role - 2];
	if (!*x && grow_nan(x, 0, tp->cap))
		return -1;
	(*x)[pair] = ms;
	if (pair + 1 > tp->n)
		tp->n = pair + 1;
	return 0;
}

/* The e2e roles' index (0 e2e_baseline, 1 e2e_candidate, 2 e2e_control), or -1. */
static int e2e_role_index(const char *role)
{
	static const char *const names[3] = {"e2e_baseline", "e2e_candidate", "e2e_control"};

	for (int k = 0; k < 3; k++)
		if (!strcmp(role, names[k]))
			return k;
	return -1;
}

/* Store one e2e sample of role k at pair. */
static int e2e_put(struct sample_pairs *tp, int pair, int k, double ms)
{
	if (pair < 0 || pair > 10000000 || k < 0 || k > 2)
		return -1;
	if (pair >= tp->e2e_cap) {
		int ncap = pair + 64;

		for (int j = 0; j < 3; j++)
			if (grow_nan(&tp->e2e[j], tp->e2e_cap, ncap))
				return -1;
		tp->e2e_cap = ncap;
	}
	tp->e2e[k][pair] = ms;
	if (pair + 1 > tp->e2e_n)
		tp->e2e_n = pair + 1;
	return 0;
}

/* The role column's index for pairs_put(), or -1 for a name that is no role. */
static int role_index(const char *role)
{
	int k;
	char end;

	if (!strcmp(role, "baseline"))
		return 0;
	if (!strcmp(role, "candidate"))
		return 1;
	if (sscanf(role, "reference%d%c", &k, &end) == 1 && k >= 1 && k <= VS_PLAN_MAX_REFERENCES && role[9] >= '1' &&
	    role[9] <= '9')
		return 1 + k;
	return -1;
}

int evaldir_e2e_from_task(struct measure_e2e *m, const cJSON *task, const struct sample_pairs *sp)
{
	const cJSON *ej = jget(task, "e2e");
	const char *st = jstr(ej, "status"), *par = jstr(ej, "parity");

	memset(m, 0, sizeof(*m));
	m->set = m->parity = -1;
	if (!cJSON_IsObject(ej))
		return 0;
	m->planned = 1;
	if (st && !strcmp(st, "skipped"))
		m->skipped = strdup(jstr(ej, "skipped") ? jstr(ej, "skipped") : "skipped");
	if (jstr(ej, "error"))
		m->error = strdup(jstr(ej, "error"));
	m->parity = par && !strcmp(par, "pass") ? 1 : par && !strcmp(par, "fail") ? 0 : -1;
	if (st && !strcmp(st, "timed") && sp && sp->e2e_n > 0) {
		for (int k = 0; k < 3; k++) {
			double *x = malloc((size_t)sp->e2e_n * sizeof(double));

			if (!x)
				return vs_oom();
			memcpy(x, sp->e2e[k], (size_t)sp->e2e_n * sizeof(double));
			*(k == 0 ? &m->t_base : k == 1 ? &m->t_cand : &m->t_ctrl) = x;
		}
		m->npairs = sp->e2e_n;
		m->ran = 1;
	}
	return 0;
}

void samples_free(struct sample_pairs *tp, int n)
{
	for (int k = 0; tp && k < n; k++) {
		free(tp[k].base);
		free(tp[k].cand);
		for (int j = 0; j < VS_PLAN_MAX_REFERENCES; j++)
			free(tp[k].ref[j]);
		for (int j = 0; j < 3; j++)
			free(tp[k].e2e[j]);
	}
	free(tp);
}

/* Parse samples.csv into per-task pairs (in order of first appearance). */
int samples_parse(struct sample_pairs **out, int *count, const char *text, const char *path)
{
	struct sample_pairs *tp = NULL;
	int n = 0, line = 1, err = 0;
	const char *s = strchr(text, '\n');

	*out = NULL;
	*count = 0;
	if (!s || strncmp(text, "task,set,pair,order,role,config,ms,checked", 42))
		return vs_error(VS_EVERIFY, "%s:1: not a samples.csv written by validate_skill", path);
	for (s++; *s; line++) {
		char hash[65], role[16], cfg[64];
		int set, pair, order, checked, k;
		double ms;
		const char *eol = strchr(s, '\n');

		if (sscanf(s, "%64[0-9a-f],%d,%d,%d,%15[a-z0-9_],%63[^,],%lf,%d", hash, &set, &pair, &order, role, cfg,
			   &ms, &checked) != 8 ||
		    !(ms > 0) || (role_index(role) < 0 && e2e_role_index(role) < 0)) {
			err = vs_error(VS_EVERIFY, "%s:%d: malformed sample row", path, line + 1);
			break;
		}
		for (k = 0; k < n && strcmp(tp[k].hash, hash); k++)
			;
		if (k == n) {
			struct sample_pairs *ntp = realloc(tp, (size_t)(n + 1) * sizeof(*tp));

			if (!ntp) {
				err = vs_oom();
				break;
			}
			tp = ntp;
			memset(&tp[n], 0, sizeof(tp[n]));
			memcpy(tp[n].hash, hash, 65);
			n++;
		}
		if (e2e_role_index(role) >= 0 ? e2e_put(&tp[k], pair, e2e_role_index(role), ms) :
						pairs_put(&tp[k], pair, role_index(role), ms)) {
			err = vs_error(VS_EVERIFY, "%s:%d: bad pair index", path, line + 1);
			break;
		}
		s = eol ? eol + 1 : s + strlen(s);
	}
	for (int k = 0; !err && k < n; k++)
		for (int i = 0; i < tp[k].n && !err; i++) {
			if (isnan(tp[k].base[i]) || isnan(tp[k].cand[i]))
				err = vs_error(VS_EVERIFY,
					       "%s: task %.16s pair %d lacks a baseline or candidate sample", path,
					       tp[k].hash, i);
			for (int j = 0; j < VS_PLAN_MAX_REFERENCES && !err; j++)
				if (tp[k].ref[j] && isnan(tp[k].ref[j][i]))
					err = vs_error(VS_EVERIFY, "%s: task %.16s pair %d lacks a reference%d sample",
						       path, tp[k].hash, i, j + 1);
		}
	for (int k = 0; !err && k < n; k++)
		for (int i = 0; i < tp[k].e2e_n && !err; i++)
			for (int j = 0; j < 3 && !err; j++)
				if (isnan(tp[k].e2e[j][i]))
					err = vs_error(VS_EVERIFY,
						       "%s: task %.16s e2e pair %d lacks a sample of each role", path,
						       tp[k].hash, i);
	if (err) {
		samples_free(tp, n);
		return err;
	}
	*out = tp;
	*count = n;
	return 0;
}

/*
 * v in the fewest significant digits that read back as v (at most 17): two numbers that differ
 * never print alike, as %.6g would print 6.2874100001 and 6.28741 alike.
 */
static const char *exact(char buf[32], double v)
{
	for (int prec = 6; prec <= 17; prec++) {
		snprintf(buf, 32, "%.*g", prec, v);
		if (strtod(buf, NULL) == v)
			break;
	}
	return buf;
}

static int same(double a, double b)
{
	return a == b || fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

/* A reported ratio object {estimate, ci95} equals ci. */
static int ci_same(const cJSON *j, const struct stats_ci *ci)
{
	return same(ci->estimate, cJSON_GetNumberValue(jget(j, "estimate"))) &&
	       same(ci->lo, cJSON_GetNumberValue(cJSON_GetArrayItem(jget(j, "ci95"), 0))) &&
	       same(ci->hi, cJSON_GetNumberValue(cJSON_GetArrayItem(jget(j, "ci95"), 1)));
}

/*
 * The references' numbers recompute from samples.csv: every task's ratio, and every overall
 * geometric mean over the tasks that report a ratio (and whose candidate passed parity); the
 * overall list names the plan's references in its order.
 */
static int recompute_refs(const struct evidence *e, const struct plan *p, const struct sample_pairs *tp, int ntp,
			  int *status)
{
	const cJSON *tasks = jget(e->result, "tasks"), *ov = jget(e->result, "references"), *t;
	int ntasks = cJSON_GetArraySize(tasks), err = 0;
	const double **tr = calloc((size_t)ntasks + 1, sizeof(*tr)), **tc = calloc((size_t)ntasks + 1, sizeof(*tc));
	int *n = calloc((size_t)ntasks + 1, sizeof(*n));

	*status = EVIDENCE_MISMATCH;
	if (!tr || !tc || !n) {
		err = vs_oom();
		goto done;
	}
	if (p->nrefs != (ov ? cJSON_GetArraySize(ov) : 0) || (ov && !cJSON_IsArray(ov))) {
		err = vs_error(VS_EVERIFY, "%s: result.json lists %d references, the plan %d", e->eval_dir,
			       ov ? cJSON_GetArraySize(ov) : 0, p->nrefs);
		goto done;
	}
	for (int k = 0; k < p->nrefs; k++) {
		const cJSON *o = cJSON_GetArrayItem(ov, k), *ratio = jget(o, "ratio");
		int m = 0;

		if (!jstr(o, "impl") || strcmp(jstr(o, "impl"), p->refs[k].impl.name)) {
			err = vs_error(VS_EVERIFY, "%s: references[%d] is '%s' in result.json but '%s' in the plan",
				       e->eval_dir, k, jstr(o, "impl") ? jstr(o, "impl") : "", p->refs[k].impl.name);
			goto done;
		}
		cJSON_ArrayForEach(t, tasks)
		{
			const cJSON *rj = cJSON_GetArrayItem(jget(t, "references"), k), *tr_j = jget(rj, "ratio");
			const char *hash = jstr(t, "hash");
			struct stats_ci ci;
			int i;

			if (!tr_j)
				continue;
			for (i = 0; i < ntp && (!hash || strcmp(tp[i].hash, hash)); i++)
				;
			if (i == ntp || !tp[i].ref[k] || !tp[i].cand) {
				err = vs_error(VS_EVERIFY,
					       "%s: task '%s' reports a ratio against %s but samples.csv has "
					       "no reference%d samples for it",
					       e->eval_dir, jstr(t, "name"), p->refs[k].impl.name, k + 1);
				goto done;
			}
			if ((err = stats_speedup(&ci, tp[i].ref[k], tp[i].cand, tp[i].n, p->protocol.resamples,
						 p->protocol.seed)))
				goto done;
			if (!ci_same(tr_j, &ci)) {
				err = vs_error(VS_EVERIFY,
					       "%s: task '%s' ratio against %s in result.json does not "
					       "recompute from samples.csv (%.6g [%.6g, %.6g])",
					       e->eval_dir, jstr(t, "name"), p->refs[k].impl.name, ci.estimate, ci.lo,
					       ci.hi);
				goto done;
			}
			if (cJSON_IsTrue(jget(t, "complete")) && jstr(t, "parity") &&
			    !strcmp(jstr(t, "parity"), "pass")) {
				tr[m] = tp[i].ref[k];
				tc[m] = tp[i].cand;
				n[m++] = tp[i].n;
			}
		}
		if (m > 0) {
			struct stats_ci ci;

			if ((err = stats_geomean_speedup(&ci, tr, tc, n, m, p->protocol.resamples, p->protocol.seed)))
				goto done;
			if (!cJSON_IsObject(ratio) || !ci_same(ratio, &ci)) {
				err = vs_error(VS_EVERIFY,
					       "%s: the overall ratio against %s in result.json does not "
					       "recompute from samples.csv (%.6g [%.6g, %.6g])",
					       e->eval_dir, p->refs[k].impl.name, ci.estimate, ci.lo, ci.hi);
				goto done;
			}
		} else if (!cJSON_IsNull(ratio)) {
			err = vs_error(VS_EVERIFY,
				       "%s: result.json reports an overall ratio against %s but no task has "
				       "one",
				       e->eval_dir, p->refs[k].impl.name);
			goto done;
		}
	}
done:
	free(tr);
	free(tc);
	free(n);
	return err;
}

/* Recompute every speedup in result.json from samples.csv with the plan's seed. */
/* The timed e2e tasks' samples gathered by e2e_recompute_task() for the overall numbers. */
struct e2e_acc {
	const double **b, **c, **k;
	int *n, count, cap;
};

/* Append a timed task's e2e samples to acc. Errors: VS_ENOMEM. */
static int e2e_acc_push(struct e2e_acc *acc, const struct sample_pairs *tp)
{
	if (acc->count == acc->cap) {
		int cap = acc->cap ? 2 * acc->cap : 16;
		const double **nb = realloc(acc->b, (size_t)cap * sizeof(*nb)), **nc, **nk;
		int *nn;

		if (!nb)
			return vs_oom();
		acc->b = nb;
		if (!(nc = realloc(acc->c, (size_t)cap * sizeof(*nc))))
			return vs_oom();
		acc->c = nc;
		if (!(nk = realloc(acc->k, (size_t)cap * sizeof(*nk))))
			return vs_oom();
		acc->k = nk;
		if (!(nn = realloc(acc->n, (size_t)cap * sizeof(*nn))))
			return vs_oom();
		acc->n = nn;
		acc->cap = cap;
	}
	acc->b[acc->count] = tp->e2e[0];
	acc->c[acc->count] = tp->e2e[1];
	acc->k[acc->count] = tp->e2e[2];
	acc->n[acc->count++] = tp->e2e_n;
	return 0;
}

/* One reported {estimate, ci95} equals ci, else VS_EVERIFY naming what. */
static int e2e_ci_check(const struct evidence *e, const cJSON *j, const struct stats_ci *ci, const char *task,
			const char *what, int *status)
{
	char b[6][32];

	if (ci_same(j, ci))
		return 0;
	*status = EVIDENCE_MISMATCH;
	return vs_error(VS_EVERIFY,
			"%s: %s%s%s %s %s [%s, %s] in result.json does not recompute from samples.csv (%s [%s, %s])",
			e->eval_dir, task ? "task '" : "", task ? task : "", task ? "' e2e" : "e2e", what,
			exact(b[0], cJSON_GetNumberValue(jget(j, "estimate"))),
			exact(b[1], cJSON_GetNumberValue(cJSON_GetArrayItem(jget(j, "ci95"), 0))),
			exact(b[2], cJSON_GetNumberValue(cJSON_GetArrayItem(jget(j, "ci95"), 1))),
			exact(b[3], ci->estimate), exact(b[4], ci->lo), exact(b[5], ci->hi));
}

/*
 * A task's e2e numbers recompute from its e2e samples: the ratio and the control's ratio, and the
 * e2e_pct reported is the ratio's. A timed task's samples join acc for the overall.
 */
static int e2e_recompute_task(const struct evidence *e, const struct plan *p, const cJSON *t,
			      const struct sample_pairs *tp, struct e2e_acc *acc, int *status)
{
	const cJSON *ej = jget(t, "e2e");
	const char *name = jstr(t, "name") ? jstr(t, "name") : "?";
	const char *st = jstr(ej, "status");
	struct stats_ci ci, ck;
	int err, timed = st && !strcmp(st, "timed");

	if (!ej || (!timed && tp->e2e_n == 0))
		return 0;
	if (!timed || tp->e2e_n == 0 || !cJSON_IsObject(jget(ej, "ratio"))) {
		*status = EVIDENCE_MISMATCH;
		return vs_error(VS_EVERIFY,
				"%s: task '%s' e2e status '%s' and %d e2e sample pairs in samples.csv disagree",
				e->eval_dir, name, st ? st : "", tp->e2e_n);
	}
	if ((err = stats_speedup(&ci, tp->e2e[0], tp->e2e[1], tp->e2e_n, p->protocol.resamples, p->protocol.seed)) ||
	    (err = stats_speedup(&ck, tp->e2e[0], tp->e2e[2], tp->e2e_n, p->protocol.resamples, p->protocol.seed)))
		return err;
	if ((err = e2e_ci_check(e, jget(ej, "ratio"), &ci, name, "ratio", status)) ||
	    (err = e2e_ci_check(e, jget(ej, "control_ratio"), &ck, name, "control ratio", status)))
		return err;
	if (!same(cJSON_GetNumberValue(jget(jget(ej, "e2e_pct"), "estimate")), measure_e2e_pct(ci.estimate))) {
		*status = EVIDENCE_MISMATCH;
		return vs_error(VS_EVERIFY, "%s: task '%s' e2e_pct is not its ratio's", e->eval_dir, name);
	}
	if (!strcmp(jstr(ej, "parity") ? jstr(ej, "parity") : "", "pass"))
		return e2e_acc_push(acc, tp);
	return 0;
}

/* result.json's overall "e2e" recomputes from the timed e2e tasks' samples. */
static int e2e_recompute_overall(const struct evidence *e, const struct plan *p, const struct e2e_acc *acc, int *status)
{
	const cJSON *ej = jget(e->result, "e2e");
	struct stats_ci ci, ck;
	int err;

	if (!ej && !acc->count)
		return 0;
	if (!ej || (int)cJSON_GetNumberValue(jget(ej, "tasks_timed")) != acc->count) {
		*status = EVIDENCE_MISMATCH;
		return vs_error(VS_EVERIFY, "%s: result.json's e2e reports %d timed tasks, samples.csv has %d",
				e->eval_dir, ej ? (int)cJSON_GetNumberValue(jget(ej, "tasks_timed")) : 0, acc->count);
	}
	if (!acc->count)
		return 0;
	if ((err = stats_geomean_speedup(&ci, acc->b, acc->c, acc->n, acc->count, p->protocol.resamples,
					 p->protocol.seed)) ||
	    (err = stats_geomean_speedup(&ck, acc->b, acc->k, acc->n, acc->count, p->protocol.resamples,
					 p->protocol.seed)))
		return err;
	if ((err = e2e_ci_check(e, jget(ej, "ratio"), &ci, NULL, "overall ratio", status)) ||
	    (err = e2e_ci_check(e, jget(ej, "control_ratio"), &ck, NULL, "overall control ratio", status)))
		return err;
	if (!e->has_e2e || !same(e->e2e_pct, measure_e2e_pct(ci.estimate)) ||
	    !same(e->e2e_lo, measure_e2e_pct(ci.lo)) || !same(e->e2e_hi, measure_e2e_pct(ci.hi))) {
		*status = EVIDENCE_MISMATCH;
		return vs_error(VS_EVERIFY, "%s: result.json's e2e_pct is not its overall ratio's", e->eval_dir);
	}
	return 0;
}

/*
 * A workload plan's overall.workload.per_concurrency, where result.json has it (evidence made before
 * 2026-12-05 has none), must be what the samples give, level by level.
 */
static int per_concurrency_recompute(const struct evidence *e, const struct plan *p, const double **tb,
				     const double **tc, const int *n, const double *w, const int *conc, int nspeed,
				     int *status)
{
	const cJSON *got = jget(jget(jget(e->result, "overall"), "workload"), "per_concurrency");
	int oom = 0, err;
	cJSON *want;

	if (!got)
		return 0;
	if (!(want = per_concurrency_json(&oom, p, tb, tc, n, w, conc, nspeed, &err)))
		return err;
	err = oom ? vs_oom() : 0;
	if (!err && cJSON_GetArraySize(got) != cJSON_GetArraySize(want))
		err = vs_error(VS_EVERIFY,
			       "%s: result.json's workload speedup has %d concurrency levels, samples.csv "
			       "with the plan gives %d",
			       e->eval_dir, cJSON_GetArraySize(got), cJSON_GetArraySize(want));
	for (int i = 0; !err && i < cJSON_GetArraySize(want); i++) {
		const cJSON *g = cJSON_GetArrayItem(got, i), *x = cJSON_GetArrayItem(want, i);
		const cJSON *xs = jget(x, "speedup");
		struct stats_ci ci = {.estimate = cJSON_GetNumberValue(jget(xs, "estimate")),
				      .lo = cJSON_GetNumberValue(cJSON_GetArrayItem(jget(xs, "ci95"), 0)),
				      .hi = cJSON_GetNumberValue(cJSON_GetArrayItem(jget(xs, "ci95"), 1))};

		if (!same(cJSON_GetNumberValue(jget(g, "concurrency")), cJSON_GetNumberValue(jget(x, "concurrency"))) ||
		    !same(cJSON_GetNumberValue(jget(g, "tasks")), cJSON_GetNumberValue(jget(x, "tasks"))) ||
		    !ci_same(jget(g, "speedup"), &ci))
			err = vs_error(VS_EVERIFY,
				       "%s: the workload speedup at concurrency %g in result.json does not recompute "
				       "from samples.csv with the plan's weights",
				       e->eval_dir, cJSON_GetNumberValue(jget(x, "concurrency")));
	}
	if (err == VS_EVERIFY)
		*status = EVIDENCE_MISMATCH;
	cJSON_Delete(want);
	return err;
}

/*
 * A workload plan's overall.workload.per_kv_dtype must be what the samples give, dtype by dtype, and
 * with several kv dtypes a "validated" verdict needs each one's lower bound at the gate. Evidence
 * written before per_kv_dtype has none: it verifies as before, with a warning when its plan has
 * several kv dtypes (its verdict gated on their mix).
 */
static int per_kv_dtype_recompute(const struct evidence *e, const struct plan *p, const double **tb, const double **tc,
				  const int *n, const double *w, const int *dt, int nspeed, int *status)
{
	const cJSON *got = jget(jget(jget(e->result, "overall"), "workload"), "per_kv_dtype");
	int oom = 0, err, dts[32], ndt = plan_kv_dtypes(p, dts, 32);
	cJSON *want;

	if (!got) {
		if (ndt > 1)
			vs_warn("%s: written before the workload speedup of each kv dtype: its workload speedup and "
				"verdict are of the mix of its plan's %d kv dtypes",
				e->eval_dir, ndt);
		return 0;
	}
	if (!(want = per_kv_dtype_json(&oom, p, tb, tc, n, w, dt, nspeed, &err)))
		return err;
	err = oom ? vs_oom() : 0;
	if (!err && cJSON_GetArraySize(got) != cJSON_GetArraySize(want))
		err = vs_error(VS_EVERIFY,
			       "%s: result.json's workload speedup has %d kv dtypes, samples.csv with the plan gives "
			       "%d",
			       e->eval_dir, cJSON_GetArraySize(got), cJSON_GetArraySize(want));
	for (int i = 0; !err && i < cJSON_GetArraySize(want); i++) {
		const cJSON *g = cJSON_GetArrayItem(got, i), *x = cJSON_GetArrayItem(want, i);
		const cJSON *xs = jget(x, "speedup"), *gs = jget(g, "speedup");
		struct stats_ci ci = {.estimate = ci_est(xs), .lo = ci_lo(xs), .hi = ci_hi(xs)};

		if (!jstr(g, "kv_dtype") || strcmp(jstr(g, "kv_dtype"), jstr(x, "kv_dtype")) ||
		    !same(cJSON_GetNumberValue(jget(g, "tasks")), cJSON_GetNumberValue(jget(x, "tasks"))) ||
		    cJSON_IsObject(gs) != cJSON_IsObject(xs) || (cJSON_IsObject(xs) && !ci_same(gs, &ci)))
			err = vs_error(VS_EVERIFY,
				       "%s: the workload speedup on kv dtype %s in result.json does not recompute "
				       "from samples.csv with the plan's weights",
				       e->eval_dir, jstr(x, "kv_dtype"));
		else if (ndt > 1 && e->verdict && !strcmp(e->verdict, "validated") &&
			 !(cJSON_IsObject(xs) && ci.lo >= p->speedup_min))
			err = vs_error(VS_EVERIFY,
				       "%s: result.json says validated, but the workload speedup on kv dtype %s is %s "
				       "(gate: each kv dtype's CI lower bound >= %g)",
				       e->eval_dir, jstr(x, "kv_dtype"),
				       cJSON_IsObject(xs) ? "below the gate" : "not timed", p->speedup_min);
	}
	if (err == VS_EVERIFY)
		*status = EVIDENCE_MISMATCH;
	cJSON_Delete(want);
	return err;
}

/* A workload plan's overall.workload.speedup must recompute from samples.csv with the plan's weights. */
static int workload_recompute(const struct evidence *e, const struct plan *p, const double **tb, const double **tc,
			      const int *n, const double *w, const int *conc, const int *dt, int nspeed, int *status)
{
	const cJSON *sp = jget(jget(jget(e->result, "overall"), "workload"), "speedup");
	struct stats_ci ci;
	char b[6][32];
	int err;

	if (!nspeed) {
		if (!sp)
			return 0;
		*status = EVIDENCE_MISMATCH;
		return vs_error(VS_EVERIFY, "%s: result.json reports a workload speedup but no task has samples",
				e->eval_dir);
	}
	if ((err = stats_weighted_speedup(&ci, tb, tc, n, w, nspeed, p->protocol.resamples, p->protocol.seed)))
		return err;
	if (!ci_same(sp, &ci)) {
		*status = EVIDENCE_MISMATCH;
		return vs_error(VS_EVERIFY,
				"%s: workload speedup %s [%s, %s] in result.json does not recompute from samples.csv "
				"with the plan's weights (%s [%s, %s])",
				e->eval_dir, exact(b[0], cJSON_GetNumberValue(jget(sp, "estimate"))),
				exact(b[1], cJSON_GetNumberValue(cJSON_GetArrayItem(jget(sp, "ci95"), 0))),
				exact(b[2], cJSON_GetNumberValue(cJSON_GetArrayItem(jget(sp, "ci95"), 1))),
				exact(b[3], ci.estimate), exact(b[4], ci.lo), exact(b[5], ci.hi));
	}
	if ((err = per_concurrency_recompute(e, p, tb, tc, n, w, conc, nspeed, status)))
		return err;
	return per_kv_dtype_recompute(e, p, tb, tc, n, w, dt, nspeed, status);
}

static int recompute(const struct evidence *e, const struct plan *p, const char *samples_text, const char *samples_path,
		     int *status)
{
	struct sample_pairs *tp = NULL;
	int ntp = 0, err, nspeed = 0;
	const cJSON *tasks = jget(e->result, "tasks"), *t;
	const double **tb = NULL, **tc = NULL;
	int *n = NULL;
	double *w = NULL;
	int *conc = NULL, *dt = NULL;
	struct e2e_acc e2e_acc = {0};

	err = samples_parse(&tp, &ntp, samples_text, samples_path);
	if (err) {
		*status = EVIDENCE_MISMATCH;
		return err;
	}
	tb = calloc((size_t)cJSON_GetArraySize(tasks) + 1, sizeof(*tb));
	tc = calloc((size_t)cJSON_GetArraySize(tasks) + 1, sizeof(*tc));
	n = calloc((size_t)cJSON_GetArraySize(tasks) + 1, sizeof(*n));
	w = calloc((size_t)cJSON_GetArraySize(tasks) + 1, sizeof(*w));
	conc = calloc((size_t)cJSON_GetArraySize(tasks) + 1, sizeof(*conc));
	dt = calloc((size_t)cJSON_GetArraySize(tasks) + 1, sizeof(*dt));
	if (!tb || !tc || !n || !w || !conc || !dt) {
		err = vs_oom();
		goto done;
	}
	cJSON_ArrayForEach(t, tasks)
	{
		const char *hash = jstr(t, "hash");
		const cJSON *sp = jget(t, "speedup");
		struct stats_ci ci;
		int k;

		if (!cJSON_IsTrue(jget(t, "complete")))
			continue;
		for (k = 0; k < ntp && (!hash || strcmp(tp[k].hash, hash)); k++)
			;
		if (k < ntp && (err = e2e_recompute_task(e, p, t, &tp[k], &e2e_acc, status)))
			goto done;
		if (k == ntp || !cJSON_IsObject(sp)) {
			*status = EVIDENCE_MISMATCH;
			err = vs_error(VS_EVERIFY, "%s: task '%s' reports a speedup but has no samples", samples_path,
				       jstr(t, "name") ? jstr(t, "name") : "?");
			goto done;
		}
		err = stats_speedup(&ci, tp[k].base, tp[k].cand, tp[k].n, p->protocol.resamples, p->protocol.seed);
		if (err)
			goto done;
		if (!same(ci.estimate, cJSON_GetNumberValue(jget(sp, "estimate"))) ||
		    !same(ci.lo, cJSON_GetNumberValue(cJSON_GetArrayItem(jget(sp, "ci95"), 0))) ||
		    !same(ci.hi, cJSON_GetNumberValue(cJSON_GetArrayItem(jget(sp, "ci95"), 1)))) {
			*status = EVIDENCE_MISMATCH;
			char b[6][32];

			err = vs_error(VS_EVERIFY,
				       "%s: task '%s' speedup %s [%s, %s] in result.json does not "
				       "recompute from samples.csv (%s [%s, %s])",
				       e->eval_dir, jstr(t, "name"),
				       exact(b[0], cJSON_GetNumberValue(jget(sp, "estimate"))),
				       exact(b[1], cJSON_GetNumberValue(cJSON_GetArrayItem(jget(sp, "ci95"), 0))),
				       exact(b[2], cJSON_GetNumberValue(cJSON_GetArrayItem(jget(sp, "ci95"), 1))),
				       exact(b[3], ci.estimate), exact(b[4], ci.lo), exact(b[5], ci.hi));
			goto done;
		}
		if (!strcmp(jstr(t, "parity") ? jstr(t, "parity") : "", "pass")) {
			int pi = plan_task_index(p, hash);

			tb[nspeed] = tp[k].base;
			tc[nspeed] = tp[k].cand;
			w[nspeed] = p->workload && pi >= 0 ? p->workload->weight[pi] : 0;
			conc[nspeed] = p->workload && pi >= 0 ? p->workload->concurrency[pi] : 0;
			dt[nspeed] = pi >= 0 ? vs_op_of(&p->tasks[pi])->dtype(&p->tasks[pi]) : -1;
			n[nspeed++] = tp[k].n;
		}
	}
	if (p->workload && (err = workload_recompute(e, p, tb, tc, n, w, conc, dt, nspeed, status)))
		goto done;
	if (nspeed > 0) {
		struct stats_ci ov;

		err = stats_geomean_speedup(&ov, tb, tc, n, nspeed, p->protocol.resamples, p->protocol.seed);
		if (err)
			goto done;
		if (!e->has_isolated || !same(ov.estimate, e->isolated) || !same(ov.lo, e->isolated_lo) ||
		    !same(ov.hi, e->isolated_hi)) {
			*status = EVIDENCE_MISMATCH;
			char b[6][32];

			err = vs_error(VS_EVERIFY,
				       "%s: overall speedup %s [%s, %s] in result.json does not "
				       "recompute from samples.csv (%s [%s, %s])",
				       e->eval_dir, exact(b[0], e->isolated), exact(b[1], e->isolated_lo),
				       exact(b[2], e->isolated_hi), exact(b[3], ov.estimate), exact(b[4], ov.lo),
				       exact(b[5], ov.hi));
			goto done;
		}
	} else if (e->has_isolated) {
		*status = EVIDENCE_MISMATCH;
		err = vs_error(VS_EVERIFY, "%s: result.json reports an overall speedup but no task has samples",
			       e->eval_dir);
	}
	if (!err)
		err = recompute_refs(e, p, tp, ntp, status);
	if (!err)
		err = e2e_recompute_overall(e, p, &e2e_acc, status);
done:
	free(e2e_acc.b);
	free(e2e_acc.c);
	free(e2e_acc.k);
	free(e2e_acc.n);
	samples_free(tp, ntp);
	free(tb);
	free(tc);
	free(n);
	free(w);
	free(conc);
	free(dt);
	return err;
}

/*
 * The checks of an eval dir that need no card (evidence_load() and, for each part, --merge): every
 * file bound by its sha256, the plugins that ran still the same files, the plan copy (read into
 * *p, release it) holding every task, and every speedup recomputing from samples.csv.
 */
/*
 * The "helpers" of a result.json "python" entry t (absent in evidence made before helper files were
 * hashed: nothing to check): each file, relative to the directory of the module file (as the
 * evidence names it), must still hash as recorded. Errors: VS_EVERIFY (one line), VS_ENOMEM.
 */
static int python_helpers_verify(const cJSON *t, const char *file, const char *dir, const char *role)
{
	const cJSON *h;
	char *abs = file[0] == '/' ? strdup(file) : fs_join(vs_repo_root(), file), *here, *hp = NULL, hex[65];
	int err = 0;

	VS_CHECK_ALLOC(abs);
	here = strrchr(abs, '/');
	if (here)
		*here = '\0';
	if (jget(t, "helpers") && !cJSON_IsArray(jget(t, "helpers"))) {
		err = vs_error(VS_EVERIFY, "%s: the %s python module '%s': \"helpers\" is not a list", dir,
			       role ? role : "", file);
		goto done;
	}
	cJSON_ArrayForEach(h, jget(t, "helpers"))
	{
		const char *rel = jstr(h, "path"), *want = jstr(h, "sha256");

		if (!rel || !want || rel[0] == '/') {
			err = vs_error(VS_EVERIFY, "%s: a helper of the %s python module '%s' lacks its path or sha256",
				       dir, role ? role : "", file);
			goto done;
		}
		free(hp);
		hp = fs_join(abs, rel);
		if (!hp) {
			err = vs_oom();
			goto done;
		}
		if (!fs_exists(hp)) {
			err = vs_error(VS_EVERIFY,
				       "%s: helper '%s' of the %s python module '%s' that ran is gone: the evidence "
				       "cannot be checked against it",
				       dir, rel, role ? role : "", file);
			goto done;
		}
		if ((err = fs_sha256_file(hex, hp)))
			goto done;
		if (strcmp(hex, want)) {
			err = vs_error(VS_EVERIFY,
				       "%s: helper '%s' of the %s python module '%s' changed since the run (sha256 "
				       "%.12s..., the evidence binds %.12s...): run the plan again with this version "
				       "of it",
				       dir, rel, role ? role : "", file, hex, want);
			goto done;
		}
	}
done:
	free(hp);
	free(abs);
	return err;
}

/*
 * impl_files 0: the plugin and Python files that ran are not compared with those present now (pins
 * take config names from a run, whatever build of its implementations ran).
 */
static int check_run(const struct evidence *e, struct plan *p, const char *dir, const char *path, int *status,
		     int impl_files)
{
	char *plan_path = NULL, *samples = NULL;
	size_t slen;
	const cJSON *t, *plugins = impl_files ? jget(e->result, "plugins") : NULL;
	const cJSON *python = impl_files ? jget(e->result, "python") : NULL;
	int err, i = 0;

	/* Files bound by hash. */
	if ((err = check_bound_files(dir, e->result, path, status)))
		goto done;
	/* Plugins that ran are bound by their file's sha256: the same file must still be there. */
	cJSON_ArrayForEach(t, plugins)
	{
		const char *lib = jstr(t, "path"), *want = jstr(t, "sha256"), *role = jstr(t, "role");
		char hex[65];

		*status = EVIDENCE_MISMATCH;
		if (!lib || !want) {
			err = vs_error(VS_EVERIFY, "%s: a plugin entry lacks its path or sha256", path);
			goto done;
		}
		/*
		 * A plugin absent from the checkout. A reference never gates the verdict and is often
		 * built from sources outside the repository (FlashMLA: tools/gpu/build_flashmla.sh): the
		 * card still verifies. A baseline is what the field runs today, built from its own sources
		 * (FlashMLA's sparse decode, the sm_90 DSA cards' baseline), and cannot ship with a clone:
		 * the card verifies with a warning naming its sha256, which a rebuild from the pinned
		 * sources reproduces (build_flashmla.sh strips it). A candidate, the kernel a card
		 * recommends, must be present. Where the file is present it must be the one that ran.
		 */
		if (!fs_exists(lib)) {
			if (role && !strncmp(role, "reference", 9))
				continue;
			if (role && !strcmp(role, "baseline")) {
				vs_warn("%s: the baseline plugin '%s' is not in this checkout: its sha256 %.16s... is "
					"not re-checked here (a rebuild from the same sources checks it; FlashMLA's: "
					"tools/gpu/build_flashmla.sh)",
					dir, lib, want);
				continue;
			}
			err = vs_error(VS_EVERIFY,
				       "%s: the %s plugin '%s' that ran is gone: the evidence cannot be "
				       "checked against it",
				       dir, role ? role : "", lib);
			goto done;
		}
		if ((err = fs_sha256_file(hex, lib)))
			goto done;
		if (strcmp(hex, want)) {
			err = vs_error(VS_EVERIFY,
				       "%s: the %s plugin '%s' changed since the run (sha256 %.12s..., the "
				       "evidence binds %.12s...): run the plan again with this build of it",
				       dir, role ? role : "", lib, hex, want);
			goto done;
		}
	}
	/*
	 * Python modules that ran are bound by their file's sha256 too. A shipped module (a path under
	 * kernels/) is part of the kernels tree the eval dir records, as the C kernels are: where that
	 * tree is not this build's, the module now is another version of it, the record reads stale
	 * ("kernels/ changed since validation") and the file is not compared (docs/DESIGN.md
	 * "Evidence"). A user's module, or a shipped one in this build's tree, must still be the file
	 * that ran.
	 */
	const char *ran_tree = jstr(jget(e->result, "tool"), "kernels_tree");
	int other_tree = ran_tree && strcmp(ran_tree, "unknown") && strcmp(ran_tree, VS_KERNELS_TREE);

	cJSON_ArrayForEach(t, python)
	{
		const char *file = jstr(t, "path"), *want = jstr(t, "sha256"), *role = jstr(t, "role");
		char hex[65], *abs;

		*status = EVIDENCE_MISMATCH;
		if (!file || !want) {
			err = vs_error(VS_EVERIFY, "%s: a python entry lacks its path or sha256", path);
			goto done;
		}
		abs = file[0] == '/' ? strdup(file) : fs_join(vs_repo_root(), file);
		if (!abs) {
			err = vs_error(VS_ENOMEM, "out of memory");
			goto done;
		}
		err = fs_exists(abs) ?
			      fs_sha256_file(hex, abs) :
			      vs_error(VS_EVERIFY,
				       "%s: the %s python module '%s' that ran is gone: the evidence cannot be "
				       "checked against it",
				       dir, role ? role : "", file);
		free(abs);
		if (err)
			goto done;
		if (strcmp(hex, want) && other_tree && !strncmp(file, "kernels/", 8))
			continue;
		if (strcmp(hex, want)) {
			err = vs_error(VS_EVERIFY,
				       "%s: the %s python module '%s' changed since the run (sha256 %.12s..., "
				       "the evidence binds %.12s...): run the plan again with this version of it",
				       dir, role ? role : "", file, hex, want);
			goto done;
		}
		if ((err = python_helpers_verify(t, file, dir, role)))
			goto done;
	}
	/* The plan copy: same card, same tasks. */
	plan_path = fs_join(dir, "plan.json");
	if ((err = plan_read_evidence(p, plan_path)))
		i = 0;
	cJSON_ArrayForEach(t, jget(e->result, "tasks"))
	{
		int found = 0;

		for (int k = 0; k < p->ntasks; k++)
			if (jstr(t, "hash") && !strcmp(p->task_hash[k], jstr(t, "hash"))) {
				found = 1;
				/*
				 * Skipped only where the plan lists it as unsupported, or where a forced
				 * side's one config declined it (a skip is not a pass).
				 */
				if (jstr(t, "skipped") && !plan_skip_reason(p, &p->baseline, k) &&
				    !plan_skip_reason(p, &p->candidate, k) && !forced_declined(p, t))
					found = -1;
			}
		if (found < 0) {
			err = vs_error(VS_EVERIFY,
				       "%s: task '%s' is marked skipped but the plan copy lists it as "
				       "supported by both implementations",
				       dir, jstr(t, "name"));
			goto done;
		}
		if (!found) {
			err = vs_error(VS_EVERIFY, "%s: task '%s' is not in the plan copy", dir, jstr(t, "name"));
			goto done;
		}
		i++;
	}
	if (!e->partial && i != p->ntasks) {
		err = vs_error(VS_EVERIFY,
			       "%s: result.json covers %d of the plan's %d tasks but is not marked "
			       "partial",
			       dir, i, p->ntasks);
		goto done;
	}
	/* Numbers recompute from the raw samples. */
	samples = fs_join(dir, "samples.csv");
	{
		char *stext = NULL;

		err = samples ? fs_read_file(&stext, &slen, samples, 256u << 20) : vs_oom();
		if (!err)
			err = recompute(e, p, stext, samples, status);
		free(stext);
		if (err)
			goto done;
	}
done:
	free(plan_path);
	free(samples);
	return err;
}

/* The overall e2e_pct result.json reports (e->result read), into e. */
static void evidence_e2e(struct evidence *e)
{
	const cJSON *e2 = jget(jget(e->result, "e2e"), "e2e_pct");

	if (cJSON_IsObject(e2)) {
		e->has_e2e = 1;
		e->e2e_pct = cJSON_GetNumberValue(jget(e2, "estimate"));
		e->e2e_lo = cJSON_GetNumberValue(cJSON_GetArrayItem(jget(e2, "ci95"), 0));
		e->e2e_hi = cJSON_GetNumberValue(cJSON_GetArrayItem(jget(e2, "ci95"), 1));
	}
}

static int evidence_load_files(struct evidence *e, int *status_out, const char *dir, const struct card *c,
			       int impl_files)
{
	char *path = NULL, *text = NULL, hash[65];
	size_t len;
	const cJSON *card, *plan, *dev, *ov, *iso, *tool;
	struct plan p;
	int err, card_same, status = EVIDENCE_OK;

	memset(e, 0, sizeof(*e));
	memset(&p, 0, sizeof(p));
	e->eval_dir = strdup(dir);
	path = fs_join(dir, "result.json");
	if (!e->eval_dir || !path) {
		free(path);
		return vs_oom();
	}
	if (!fs_is_dir(dir) || !fs_exists(path)) {
		status = EVIDENCE_MISSING;
		err = vs_error(VS_EVERIFY, "%s: no eval dir with a result.json there", dir);
		goto done;
	}
	if (fs_is_link(path)) {
		status = EVIDENCE_MISMATCH;
		err = vs_error(VS_EVERIFY, "%s: 'result.json' is a symlink: an eval dir holds its own files", dir);
		goto done;
	}
	if ((err = fs_read_file(&text, &len, path, 64u << 20))) {
		status = EVIDENCE_MISSING;
		goto done;
	}
	fs_sha256_hex(e->result_sha256, text, len);
	status = EVIDENCE_MISMATCH;
	if ((err = jsonfile_parse(&e->result, text, len, path)))
		goto done;
	if (!jstr(e->result, "schema") || strcmp(jstr(e->result, "schema"), VS_RESULT_SCHEMA)) {
		err = vs_error(VS_EVERIFY,
			       "%s: \"schema\" is '%s', expected '" VS_RESULT_SCHEMA "' (not a "
			       "result written by this tool)",
			       path, jstr(e->result, "schema") ? jstr(e->result, "schema") : "");
		goto done;
	}
	card = jget(e->result, "card");
	plan = jget(e->result, "plan");
	dev = jget(e->result, "device");
	ov = jget(e->result, "overall");
	tool = jget(e->result, "tool");
	{
		const char *missing = !jstr(card, "id")            ? "card.id" :
				      !jstr(card, "hash")          ? "card.hash" :
				      !jstr(plan, "sha256")        ? "plan.sha256" :
				      !jstr(dev, "name")           ? "device.name" :
				      !jstr(dev, "gen")            ? "device.gen" :
				      !jstr(e->result, "verdict")  ? "verdict" :
				      !jstr(e->result, "finished") ? "finished" :
				      !cJSON_IsObject(ov)          ? "overall" :
				      !cJSON_IsObject(tool)        ? "tool" :
								     NULL;

		if (missing) {
			err = vs_error(VS_EVERIFY, "%s: incomplete result: \"%s\" is missing or not a%s", path, missing,
				       !strcmp(missing, "overall") || !strcmp(missing, "tool") ? "n object" :
												 " string");
			goto done;
		}
	}
	if (strcmp(jstr(card, "id"), c->id)) {
		err = vs_error(VS_EVERIFY, "%s: the evidence is for card '%s', not '%s'", dir, jstr(card, "id"), c->id);
		goto done;
	}
	/*
	 * A card speaks for the implementations it names: --baseline/--candidate may measure others,
	 * never stand in for a backend the card does not name (a misspelled to_backend included).
	 */
	if (!c->match.from_backend || !*c->match.from_backend || !c->match.to_backend || !*c->match.to_backend) {
		const char *key = !c->match.from_backend || !*c->match.from_backend ? "from_backend" : "to_backend";

		err = vs_error(VS_EVERIFY,
			       "%s: %s names no match.%s: a card records only what it recommends, and --baseline/"
			       "--candidate cannot stand in for it; name the implementation in the card",
			       dir, c->path, key);
		goto done;
	}
	e->baseline = jstr(e->result, "baseline") ? jstr(e->result, "baseline") : "";
	e->candidate = jstr(e->result, "candidate") ? jstr(e->result, "candidate") : "";
	e->family_baseline = card_backend_is_family(c->match.from_backend);
	e->family_candidate = card_backend_is_family(c->match.to_backend);
	if (!card_backend_matches(c->match.from_backend, e->baseline) ||
	    !card_backend_matches(c->match.to_backend, e->candidate)) {
		int cand = card_backend_matches(c->match.from_backend, e->baseline);

		err = vs_error(VS_EVERIFY,
			       "%s: the evidence measured %s '%s', but %s's match.%s is '%s': it cannot "
			       "speak for this card (name the implementation in the card, or run the card's own)",
			       dir, cand ? "candidate" : "baseline", cand ? e->candidate : e->baseline, c->path,
			       cand ? "to_backend" : "from_backend",
			       cand ? c->match.to_backend : c->match.from_backend);
		goto done;
	}
	e->verdict = jstr(e->result, "verdict");
	e->device_name = jstr(dev, "name");
	e->gen = jstr(dev, "gen");
	e->model = jstr(plan, "model") ? jstr(plan, "model") : "";
	e->kernels_tree = jstr(tool, "kernels_tree") ? jstr(tool, "kernels_tree") : "unknown";
	e->kernels_dirty = !cJSON_IsFalse(jget(tool, "kernels_dirty"));
	e->partial = cJSON_IsTrue(jget(e->result, "partial"));
	e->parity = jstr(ov, "parity") ? jstr(ov, "parity") : "fail";
	snprintf(e->date, sizeof(e->date), "%.10s", jstr(e->result, "finished"));
	iso = jget(ov, "isolated");
	if (cJSON_IsObject(iso)) {
		e->has_isolated = 1;
		e->isolated = cJSON_GetNumberValue(jget(iso, "estimate"));
		e->isolated_lo = cJSON_GetNumberValue(cJSON_GetArrayItem(jget(iso, "ci95"), 0));
		e->isolated_hi = cJSON_GetNumberValue(cJSON_GetArrayItem(jget(iso, "ci95"), 1));
	}
	evidence_e2e(e);
	if ((err = check_run(e, &p, dir, path, &status, impl_files)))
		goto done;
	if (p.workload) {
		const cJSON *wj = jget(ov, "workload"), *sp = jget(wj, "speedup");

		e->workload = jstr(wj, "id");
		if (!e->workload || strcmp(e->workload, p.workload->id)) {
			status = EVIDENCE_MISMATCH;
			err = vs_error(VS_EVERIFY, "%s: overall.workload.id is '%s', the plan's workload is '%s'", dir,
				       e->workload ? e->workload : "(none)", p.workload->id);
			goto done;
		}
		if (cJSON_IsObject(sp)) {
			e->has_workload = 1;
			e->workload_speedup = cJSON_GetNumberValue(jget(sp, "estimate"));
			e->workload_lo = cJSON_GetNumberValue(cJSON_GetArrayItem(jget(sp, "ci95"), 0));
			e->workload_hi = cJSON_GetNumberValue(cJSON_GetArrayItem(jget(sp, "ci95"), 1));
		}
		/* the timed kv dtypes of a plan of several (recompute() checked them against the samples) */
		if (cJSON_GetArraySize(jget(wj, "per_kv_dtype")) > 1) {
			const cJSON *x;

			cJSON_ArrayForEach(x, jget(wj, "per_kv_dtype"))
			{
				const cJSON *xs = jget(x, "speedup");

				if (!cJSON_IsObject(xs) || !jstr(x, "kv_dtype") || e->nkv == CARD_MAX_KV_DTYPES)
					continue;
				e->kv[e->nkv].kv_dtype = jstr(x, "kv_dtype");
				e->kv[e->nkv].speedup = ci_est(xs);
				e->kv[e->nkv].lo = ci_lo(xs);
				e->kv[e->nkv++].hi = ci_hi(xs);
			}
		}
	} else if (jget(ov, "workload")) {
		status = EVIDENCE_MISMATCH;
		err = vs_error(VS_EVERIFY, "%s: result.json has overall.workload, its plan has no workload", dir);
		goto done;
	}
	/* The plan copy is for this card. */
	if (strcmp(p.card_id, c->id) || strcmp(p.card_hash, jstr(card, "hash"))) {
		err = vs_error(VS_EVERIFY,
			       "%s: plan.json is for card '%s' (hash %.12s...), result.json for '%s' "
			       "(hash %.12s...)",
			       dir, p.card_id, p.card_hash, c->id, jstr(card, "hash"));
		goto done;
	}
	/* The sides result.json names are the plan's, a forced config included (IMPL@CONFIG). */
	{
		char lb[256], lc[256];

		plan_impl_label(&p.baseline, lb, sizeof(lb));
		plan_impl_label(&p.candidate, lc, sizeof(lc));
		if (strcmp(lb, e->baseline) || strcmp(lc, e->candidate)) {
			err = vs_error(VS_EVERIFY,
				       "%s: result.json measured %s -> %s, but its plan.json plans %s -> %s", dir,
				       e->baseline, e->candidate, lb, lc);
			goto done;
		}
	}
	/* Finally the card itself: content unchanged since the plan was made. */
	if ((err = card_hash_check(c, jstr(card, "hash"), hash, &card_same)))
		goto done;
	if (card_same && !plan_claim_unchanged(&p, c, card_same)) {
		status = EVIDENCE_STALE_CARD;
		err = vs_error(VS_EVERIFY,
			       "%s: %s %s workload '%s' since this evidence's plan was emitted (expects.workloads): a "
			       "claim comes before the run; emit the plan and run again",
			       dir, c->path,
			       card_list_has(&c->expects.workloads, p.workload->id) ? "claims" : "no longer claims",
			       p.workload->id);
		goto done;
	}
	if (!card_same) {
		status = EVIDENCE_STALE_CARD;
		err = vs_error(VS_EVERIFY,
			       "%s: the card changed since this evidence was produced (card hash "
			       "%.12s..., evidence %.12s...): emit the plan and run again",
			       c->path, hash, jstr(card, "hash"));
		goto done;
	}
	/* A run of an earlier build's generator: it verifies, and no longer speaks for this build's tasks. */
	if (p.generator && strcmp(p.generator, VS_GENERATOR_VERSION)) {
		status = EVIDENCE_STALE_CARD;
		err = vs_error(VS_EVERIFY,
			       "%s: measured on the inputs of generator %s (this build generates %s): emit "
			       "the plan and run again",
			       dir, p.generator, VS_GENERATOR_VERSION);
		goto done;
	}
	/* What ran is inside the card's runtime contract (GEAK's runtime:, library.h). */
	{
		struct runtime_contract rt;
		cJSON *versions = cJSON_CreateObject();
		const cJSON *py;
		char line[1024];
		int bad;

		if (!versions) {
			err = vs_oom();
			goto done;
		}
		cJSON_ArrayForEach(py, jget(e->result, "python"))
		{
			const cJSON *v;
			const char *role = jstr(py, "role");

			if (!role || (strcmp(role, "baseline") && strcmp(role, "candidate")))
				continue;
			cJSON_ArrayForEach(v, jget(py, "versions"))
			{
				if (cJSON_IsString(v) && !cJSON_GetObjectItemCaseSensitive(versions, v->string))
					cJSON_AddStringToObject(versions, v->string, v->valuestring);
			}
		}
		err = runtime_read(&rt, c);
		bad = err ? 0 : runtime_check(line, sizeof(line), &rt, versions);
		runtime_release(&rt);
		cJSON_Delete(versions);
		if (!err && bad == 1) {
			status = EVIDENCE_MISMATCH;
			err = vs_error(VS_EVERIFY,
				       "%s: %s, the version that ran: the evidence is outside %s's runtime contract",
				       dir, line, c->path);
		}
		if (err)
			goto done;
	}
	/*
	 * The plan that ran is the one the card plans (plan_check_card()): a hand-edited gate, a task
	 * deleted, a loosened tolerance or a shortened protocol does not speak for the card.
	 */
	{
		char diff[1024];

		if ((err = plan_check_card(&p, c, 0, diff, sizeof(diff))) == VS_EVERIFY) {
			status = EVIDENCE_MISMATCH;
			err = vs_error(VS_EVERIFY,
				       "%s: plan.json %s: it is not what %s plans; emit the plan and run again", dir,
				       diff, c->path);
		}
		if (err)
			goto done;
	}
	status = EVIDENCE_OK;
done:
	if (status_out)
		*status_out = status;
	plan_release(&p);
	free(path);
	free(text);
	return err;
}

int evidence_load(struct evidence *e, int *status_out, const char *dir, const struct card *c)
{
	return evidence_load_files(e, status_out, dir, c, 1);
}

void evidence_release(struct evidence *e)
{
	if (!e)
		return;
	free(e->eval_dir);
	cJSON_Delete(e->result);
	memset(e, 0, sizeof(*e));
}

void evidence_validation(struct card_validation *v, const struct evidence *e, const char *artifact)
{
	memset(v, 0, sizeof(*v));
	v->status = (char *)(strcmp(e->verdict, "validated") ? "failed" : "validated");
	v->last_verified = (char *)e->date;
	v->gpu = (char *)e->device_name;
	v->gen = (char *)e->gen;
	v->model = (char *)e->model;
	v->has_isolated = e->has_isolated;
	/* The card shows three decimals; result.json keeps full precision. */
	v->measured_isolated = round(e->isolated * 1000.0) / 1000.0;
	/* e2e_pct in two decimals (percent); result.json keeps full precision. */
	v->has_e2e_pct = e->has_e2e;
	v->measured_e2e_pct = e->has_e2e ? round(e->e2e_pct * 100.0) / 100.0 : 0;
	v->measured_parity = (char *)e->parity;
	v->artifact = (char *)artifact;
	v->impl_baseline = (char *)e->baseline;
	v->impl_candidate = (char *)e->candidate;
}

static int str_eq(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

/* One claim problem: reported (unless quiet), counted, the first kept in why. */
static void claim_problem(int *problems, char *why, size_t cap, const char *short_why, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static void claim_problem(int *problems, char *why, size_t cap, const char *short_why, const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	vs_error(VS_EVERIFY, "%s", line);
	if (*problems == 0 && why && cap)
		snprintf(why, cap, "%s", short_why);
	(*problems)++;
}

void evidence_workload_record(struct card_workload_record *r, char *key, size_t key_cap, const struct evidence *e,
			      const char *artifact)
{
	memset(r, 0, sizeof(*r));
	snprintf(key, key_cap, "%s@%s", e->workload ? e->workload : "", e->gen ? e->gen : "");
	r->key = key;
	r->workload = (char *)e->workload;
	r->gen = (char *)e->gen;
	r->status = (char *)(strcmp(e->verdict, "validated") ? "failed" : "validated");
	r->last_verified = (char *)e->date;
	r->gpu = (char *)e->device_name;
	/* three decimals, as validation.measured.isolated; result.json keeps full precision */
	r->has_speedup = e->has_workload;
	r->speedup = round(e->workload_speedup * 1000.0) / 1000.0;
	r->speedup_lo = round(e->workload_lo * 1000.0) / 1000.0;
	r->speedup_hi = round(e->workload_hi * 1000.0) / 1000.0;
	r->has_isolated = e->has_isolated;
	r->isolated = round(e->isolated * 1000.0) / 1000.0;
	r->parity = (char *)e->parity;
	r->artifact = (char *)artifact;
	r->nkv = e->nkv;
	for (int k = 0; k < e->nkv; k++) {
		r->kv[k].kv_dtype = (char *)e->kv[k].kv_dtype;
		r->kv[k].speedup = round(e->kv[k].speedup * 1000.0) / 1000.0;
		r->kv[k].lo = round(e->kv[k].lo * 1000.0) / 1000.0;
		r->kv[k].hi = round(e->kv[k].hi * 1000.0) / 1000.0;
	}
}

int evidence_check_workload_claims(const struct card_workload_record *have, const struct evidence *e,
				   const char *card_path, char *why, size_t why_cap)
{
	struct card_workload_record want;
	char key[256];
	int problems = 0;

	if (!e->workload) {
		claim_problem(&problems, why, why_cap, "not a workload run",
			      "%s: validation.workloads.%s: its artifact is a tier run, not a run of a workload plan",
			      card_path, have->key);
		return problems;
	}
	evidence_workload_record(&want, key, sizeof(key), e, have->artifact);
#define CHECK_STR(field, name)                                                                                         \
	if (!str_eq(have->field, want.field))                                                                          \
		claim_problem(&problems, why, why_cap, "validation.workloads." name " differs from the evidence",      \
			      "%s: validation.workloads.%s." name " is '%s' but the evidence says '%s'", card_path,    \
			      have->key, have->field ? have->field : "", want.field ? want.field : "");
	CHECK_STR(key, "key");
	CHECK_STR(status, "status");
	CHECK_STR(last_verified, "last_verified");
	CHECK_STR(gpu, "gpu");
	CHECK_STR(parity, "parity");
#undef CHECK_STR
	if (have->has_speedup != want.has_speedup ||
	    (want.has_speedup &&
	     (fabs(have->speedup - want.speedup) > 0.0005 || fabs(have->speedup_lo - want.speedup_lo) > 0.0005 ||
	      fabs(have->speedup_hi - want.speedup_hi) > 0.0005)))
		claim_problem(&problems, why, why_cap, "validation.workloads speedup differs from the evidence",
			      "%s: validation.workloads.%s.speedup is %g [%g, %g] but the evidence says %.3f [%.3f, "
			      "%.3f]",
			      card_path, have->key, have->speedup, have->speedup_lo, have->speedup_hi, want.speedup,
			      want.speedup_lo, want.speedup_hi);
	/* the speedup of each kv dtype: the dtypes, in order, and their numbers */
	for (int k = 0; k < have->nkv || k < want.nkv; k++) {
		const struct card_kv_speedup *h = k < have->nkv ? &have->kv[k] : NULL,
					     *x = k < want.nkv ? &want.kv[k] : NULL;

		if (h && x && str_eq(h->kv_dtype, x->kv_dtype) && fabs(h->speedup - x->speedup) <= 0.0005 &&
		    fabs(h->lo - x->lo) <= 0.0005 && fabs(h->hi - x->hi) <= 0.0005)
			continue;
		if (x)
			claim_problem(&problems, why, why_cap,
				      "validation.workloads per_kv_dtype differs from the evidence",
				      "%s: validation.workloads.%s.per_kv_dtype.%s is %s%g [%g, %g] but the evidence "
				      "says "
				      "%s %.3f [%.3f, %.3f]",
				      card_path, have->key, h ? h->kv_dtype : x->kv_dtype, h ? "" : "missing, ",
				      h ? h->speedup : 0, h ? h->lo : 0, h ? h->hi : 0, x->kv_dtype, x->speedup, x->lo,
				      x->hi);
		else
			claim_problem(&problems, why, why_cap,
				      "validation.workloads per_kv_dtype differs from the evidence",
				      "%s: validation.workloads.%s.per_kv_dtype.%s is %g [%g, %g] but the evidence has "
				      "no "
				      "speedup for that kv dtype%s",
				      card_path, have->key, h->kv_dtype, h->speedup, h->lo, h->hi,
				      want.nkv ? "" : " (one kv dtype, or written before per_kv_dtype)");
		break;
	}
	if (have->has_isolated != want.has_isolated ||
	    (want.has_isolated && fabs(have->isolated - want.isolated) > 0.0005))
		claim_problem(&problems, why, why_cap, "validation.workloads isolated differs from the evidence",
			      "%s: validation.workloads.%s.isolated is %g but the evidence says %.3f", card_path,
			      have->key, have->isolated, want.isolated);
	if (!strcmp(want.status, "validated") && e->kernels_dirty)
		claim_problem(&problems, why, why_cap, "validated from a dirty build",
			      "%s: validation.workloads.%s: validated from a dirty build", card_path, have->key);
	return problems;
}

int evidence_check_claims(const struct card_validation *have, const struct evidence *e, const char *card_path,
			  char *why, size_t why_cap)
{
	struct card_validation want;
	int problems = 0;

	evidence_validation(&want, e, have->artifact);
#define CHECK_STR(field, key)                                                                                          \
	if (!str_eq(have->field, want.field))                                                                          \
		claim_problem(&problems, why, why_cap, "validation." key " differs from the evidence",                 \
			      "%s: validation." key " is '%s' but the evidence says '%s'", card_path,                  \
			      have->field ? have->field : "", want.field ? want.field : "");
	CHECK_STR(status, "status");
	CHECK_STR(last_verified, "last_verified");
	CHECK_STR(gpu, "gpu");
	CHECK_STR(gen, "gen");
	CHECK_STR(model, "model");
	CHECK_STR(measured_parity, "measured.parity");
	/* The implementations: as recorded when the card has them, and required where it names a family. */
	if ((have->impl_baseline && *have->impl_baseline) || e->family_baseline)
		CHECK_STR(impl_baseline, "implementations.baseline");
	if ((have->impl_candidate && *have->impl_candidate) || e->family_candidate)
		CHECK_STR(impl_candidate, "implementations.candidate");
#undef CHECK_STR
	if (have->has_isolated != want.has_isolated ||
	    (want.has_isolated && fabs(have->measured_isolated - want.measured_isolated) > 0.0005))
		claim_problem(&problems, why, why_cap, "validation.measured.isolated differs from the evidence",
			      "%s: validation.measured.isolated is %g but the evidence says %.3f", card_path,
			      have->measured_isolated, want.measured_isolated);
	if (have->has_e2e_pct != want.has_e2e_pct ||
	    (want.has_e2e_pct && fabs(have->measured_e2e_pct - want.measured_e2e_pct) > 0.005))
		claim_problem(&problems, why, why_cap, "validation.measured.e2e_pct differs from the evidence",
			      "%s: validation.measured.e2e_pct is %s%g but the evidence says %s%.2f", card_path,
			      have->has_e2e_pct ? "" : "unset ", have->measured_e2e_pct,
			      want.has_e2e_pct ? "" : "none ", want.measured_e2e_pct);
	if (have->spread && *have->spread) {
		double lo, hi;
		int runs;

		/* written by --record from runs other than this one: only its consistency is checkable */
		if (sscanf(have->spread, "%lf-%lf over %d runs", &lo, &hi, &runs) != 3 || !(lo <= hi) || runs < 2 ||
		    (want.has_isolated &&
		     (want.measured_isolated < lo - 0.0005 || want.measured_isolated > hi + 0.0005)))
			claim_problem(&problems, why, why_cap, "validation.measured.spread does not hold the evidence",
				      "%s: validation.measured.spread is '%s', which does not hold the evidence's %.3f "
				      "(written by --record as 'LO-HI over N runs')",
				      card_path, have->spread, want.measured_isolated);
	}
	if (!strcmp(want.status, "validated") && e->kernels_dirty)
		claim_problem(&problems, why, why_cap, "validated from a dirty build",
			      "%s: validated from a dirty build", card_path);
	if (e->workload)
		claim_problem(&problems, why, why_cap, "validation.artifact is a workload run",
			      "%s: validation.artifact is a run of workload '%s': a workload's verdict is recorded "
			      "under validation.workloads, never as the card's tier verdict",
			      card_path, e->workload);
	return problems;
}

/* ---- parts of a cluster run --------------------------------------------------------------------- */

int evaldir_part_load(struct evaldir_part *pt, const char *dir)
{
	char *path = fs_join(dir, "result.json"), *text = NULL;
	size_t len;
	const cJSON *f;
	int err, status = EVIDENCE_OK;

	memset(pt, 0, sizeof(*pt));
	pt->dir = strdup(dir);
	if (!path || !pt->dir) {
		free(path);
		return vs_oom();
	}
	err = fs_read_file(&text, &len, path, 64u << 20);
	if (!err)
		err = jsonfile_parse(&pt->result, text, len, path);
	free(text);
	if (!err && (!jstr(pt->result, "schema") || strcmp(jstr(pt->result, "schema"), VS_RESULT_SCHEMA)))
		err = vs_error(VS_EVERIFY, "%s/result.json: not a validate_skill result", dir);
	f = jget(pt->result, "filters");
	if (!err && (jget(f, "impl") || jget(f, "config")))
		err = vs_error(VS_EUSAGE,
			       "%s: a part run with --impl or --config is not a measurement of the plan: "
			       "rerun it with --part",
			       dir);
	if (!err) {
		/* the checks --record makes that need no card: a part with edited samples is refused here */
		struct evidence e;
		const cJSON *iso = jget(jget(pt->result, "overall"), "isolated");
		struct plan p;

		memset(&e, 0, sizeof(e));
		memset(&p, 0, sizeof(p));
		e.eval_dir = pt->dir;
		e.result = pt->result;
		e.partial = cJSON_IsTrue(jget(pt->result, "partial"));
		if (cJSON_IsObject(iso)) {
			e.has_isolated = 1;
			e.isolated = cJSON_GetNumberValue(jget(iso, "estimate"));
			e.isolated_lo = cJSON_GetNumberValue(cJSON_GetArrayItem(jget(iso, "ci95"), 0));
			e.isolated_hi = cJSON_GetNumberValue(cJSON_GetArrayItem(jget(iso, "ci95"), 1));
		}
		evidence_e2e(&e);
		err = check_run(&e, &p, dir, path, &status, 1);
		plan_release(&p);
	}
	free(path);
	if (err)
		return err;
	path = fs_join(dir, "samples.csv");
	err = path ? fs_read_file(&pt->samples, &len, path, 256u << 20) : vs_oom();
	free(path);
	if (err)
		return err;
	path = fs_join(dir, "run.log");
	err = path ? fs_read_file(&pt->log, &len, path, 64u << 20) : vs_oom();
	free(path);
	return err;
}

void evaldir_part_release(struct evaldir_part *pt)
{
	if (!pt)
		return;
	free(pt->dir);
	cJSON_Delete(pt->result);
	free(pt->samples);
	free(pt->log);
	memset(pt, 0, sizeof(*pt));
}

/* ---- pinned configs (--configs-from) ---------------------------------------------------------- */

/* The chosen config of implementation name in one result.json task (any of its roles), or NULL. */
static const char *task_chosen(const cJSON *task, const char *name)
{
	const cJSON *roles[2] = {jget(task, "baseline"), jget(task, "candidate")}, *r;

	for (int k = 0; k < 2; k++)
		if (jstr(roles[k], "impl") && !strcmp(jstr(roles[k], "impl"), name))
			return jstr(roles[k], "chosen");
	cJSON_ArrayForEach(r, jget(task, "references"))
	{
		if (jstr(r, "impl") && !strcmp(jstr(r, "impl"), name))
			return jstr(r, "chosen");
	}
	return NULL;
}

/* The last component of dir (trailing slashes ignored), malloc'd. */
static char *dir_name(const char *dir)
{
	const char *end = dir + strlen(dir), *base;

	while (end > dir && end[-1] == '/')
		end--;
	for (base = end; base > dir && base[-1] != '/'; base--)
		;
	return strndup(base, (size_t)(end - base));
}

int evaldir_pin_configs(struct plan *p, const struct card *c, const char *dir)
{
	struct evidence e;
	struct plan_impl *roles[2 + VS_PLAN_MAX_REFERENCES];
	const cJSON *t;
	char *run = NULL;
	int status = EVIDENCE_OK, quiet, err, pinned = 0, nroles = 0;

	memset(&e, 0, sizeof(e));
	quiet = vs_error_set_quiet(1);
	err = evidence_load_files(&e, &status, dir, c, 0); /* configs by name: any build of them */
	vs_error_set_quiet(quiet);
	if (err) {
		char *why = strdup(vs_last_error()); /* names dir */

		if (!why) {
			err = vs_oom();
			goto done;
		}
		if (status == EVIDENCE_STALE_CARD)
			vs_warn("--configs-from: %s (its configs are pinned all the same)", why);
		else
			err = vs_error(VS_EVERIFY, "--configs-from: %s", why);
		free(why);
		if (status != EVIDENCE_STALE_CARD)
			goto done;
	}
	if (!e.gen || strcmp(e.gen, p->gen)) {
		err = vs_error(VS_EUSAGE, "--configs-from %s: a run on %s, this plan is for %s", dir,
			       e.gen ? e.gen : "an unknown gen", p->gen);
		goto done;
	}
	err = 0;
	roles[nroles++] = &p->baseline;
	roles[nroles++] = &p->candidate;
	for (int k = 0; k < p->nrefs; k++)
		roles[nroles++] = &p->refs[k].impl;
	cJSON_ArrayForEach(t, jget(e.result, "tasks"))
	{
		int i = plan_task_index(p, jstr(t, "hash") ? jstr(t, "hash") : "");

		if (i < 0)
			continue;
		for (int k = 0; k < nroles; k++) {
			const char *chosen = task_chosen(t, roles[k]->name);
			int rc;

			if (!chosen)
				continue;
			rc = plan_pin(p, i, roles[k], chosen);
			if (rc == VS_ENOTFOUND) {
				err = vs_error(VS_ENOTFOUND,
					       "--configs-from %s: task '%s': %s chose '%s' there, which is not one of "
					       "its %s "
					       "configs now: emit the plan without --configs-from",
					       dir, p->tasks[i].name, roles[k]->name, chosen, p->gen);
				goto done;
			}
			if (rc < 0) {
				err = rc;
				goto done;
			}
			pinned |= rc == 0;
		}
	}
	if (!pinned) {
		err = vs_error(VS_ENOTFOUND,
			       "--configs-from %s: no task of this plan has a chosen config there (another tier, or "
			       "tasks of another generator)",
			       dir);
		goto done;
	}
	run = dir_name(dir);
	err = run ? plan_pins_source(p, run, e.result_sha256) : vs_oom();
done:
	free(run);
	evidence_release(&e);
	return err;
}
