#include "merge.h"
#include "fsutil.h"
#include "plan.h"
#include "progress.h"
#include "record.h"
#include "runner.h"
#include "vs_error.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct part {
	char *dir;
	cJSON *result;
	char *samples;             /* samples.csv text */
	char *log;                 /* run.log text */
};

static const char *jstr(const cJSON *o, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static const cJSON *jget(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Append path to the list (takes ownership). */
static int push(char ***list, int *n, char *path)
{
	char **nl = path ? realloc(*list, (size_t)(*n + 1) * sizeof(**list)) : NULL;

	if (!nl) {
		free(path);
		return vs_error(VS_ENOMEM, "out of memory");
	}
	*list = nl;
	(*list)[(*n)++] = path;
	return 0;
}

/* The part dirs named by the arguments: each a part (has result.json) or a directory of parts. */
static int expand(char ***out, int *nout, const char *const *dirs, int ndirs)
{
	int err = 0;

	for (int k = 0; k < ndirs && !err; k++) {
		char *res = fs_join(dirs[k], "result.json"), **sub = NULL;
		int nsub = 0;
		DIR *d;
		struct dirent *de;

		if (!res)
			return vs_error(VS_ENOMEM, "out of memory");
		if (fs_exists(res)) {
			free(res);
			err = push(out, nout, strdup(dirs[k]));
			continue;
		}
		free(res);
		d = opendir(dirs[k]);
		if (!d)
			return vs_error(VS_ENOTFOUND, "'%s' is neither an eval dir part nor a directory of parts", dirs[k]);
		while (!err && (de = readdir(d))) {
			char *p;

			if (de->d_name[0] == '.')
				continue;
			p = fs_printf("%s/%s/result.json", dirs[k], de->d_name);
			if (p && fs_exists(p))
				err = push(&sub, &nsub, fs_join(dirs[k], de->d_name));
			free(p);
		}
		closedir(d);
		if (!err && nsub == 0)
			err = vs_error(VS_ENOTFOUND, "'%s' holds no parts (no <index>/result.json under it)", dirs[k]);
		if (!err)
			qsort(sub, (size_t)nsub, sizeof(*sub), cmp_str);
		for (int i = 0; i < nsub; i++) {
			if (!err)
				err = push(out, nout, sub[i]);
			else
				free(sub[i]);
		}
		free(sub);
	}
	return err;
}

/* dir/name must hash to want. */
static int check_hash(const char *dir, const char *name, const char *want)
{
	char *path = fs_join(dir, name), hex[65];
	int err;

	if (!path)
		return vs_error(VS_ENOMEM, "out of memory");
	if (!want)
		err = vs_error(VS_EVERIFY, "%s: result.json records no sha256 for '%s'", dir, name);
	else if ((err = fs_sha256_file(hex, path)))
		;
	else if (strcmp(hex, want))
		err = vs_error(VS_EVERIFY, "%s: '%s' does not match its sha256 in result.json: the part was modified",
			       dir, name);
	free(path);
	return err;
}

static int part_load(struct part *pt, const char *dir)
{
	char *path = fs_join(dir, "result.json"), *text = NULL;
	size_t len;
	const cJSON *f, *t;
	int err;

	pt->dir = strdup(dir);
	if (!path || !pt->dir) {
		free(path);
		return vs_error(VS_ENOMEM, "out of memory");
	}
	err = fs_read_file(&text, &len, path, 64u << 20);
	free(path);
	if (err)
		return err;
	pt->result = cJSON_ParseWithLength(text, len);
	free(text);
	if (!pt->result || !jstr(pt->result, "schema") || strcmp(jstr(pt->result, "schema"), VS_RESULT_SCHEMA))
		return vs_error(VS_EVERIFY, "%s/result.json: not a validate_skill result", dir);
	f = jget(pt->result, "filters");
	if (jget(f, "impl") || jget(f, "config"))
		return vs_error(VS_EUSAGE, "%s: a part run with --impl or --config is not a measurement of the plan: "
				"rerun it with --part", dir);
	if ((err = check_hash(dir, "plan.json", jstr(jget(pt->result, "plan"), "sha256"))) ||
	    (err = check_hash(dir, "samples.csv", jstr(pt->result, "samples_sha256"))) ||
	    (err = check_hash(dir, "run.log", jstr(pt->result, "log_sha256"))))
		return err;
	cJSON_ArrayForEach(t, jget(pt->result, "tasks")) {
		char *name = fs_printf("manifests/%s.json", jstr(t, "hash") ? jstr(t, "hash") : "");

		err = name ? check_hash(dir, name, jstr(jget(pt->result, "manifests"), jstr(t, "hash") ?
							jstr(t, "hash") : "")) : VS_ENOMEM;
		free(name);
		if (err)
			return err;
	}
	path = fs_join(dir, "samples.csv");
	err = path ? fs_read_file(&pt->samples, &len, path, 256u << 20) : VS_ENOMEM;
	free(path);
	if (err)
		return err;
	path = fs_join(dir, "run.log");
	err = path ? fs_read_file(&pt->log, &len, path, 64u << 20) : VS_ENOMEM;
	free(path);
	return err;
}

static void part_release(struct part *pt)
{
	free(pt->dir);
	cJSON_Delete(pt->result);
	free(pt->samples);
	free(pt->log);
}

/* Equal JSON strings at key in a and b (both present). */
static int same_str(const cJSON *a, const cJSON *b, const char *key)
{
	const char *x = jstr(a, key), *y = jstr(b, key);

	return x && y && !strcmp(x, y);
}

/* Parts that cannot be joined: another plan, card, build or kind of device. */
static int check_same_run(const struct part *first, const struct part *pt)
{
	const cJSON *a = first->result, *b = pt->result;
	const cJSON *ta = jget(a, "tool"), *tb = jget(b, "tool");

	if (!same_str(jget(a, "plan"), jget(b, "plan"), "sha256"))
		return vs_error(VS_EVERIFY, "%s and %s ran different plans (plan sha256 differs)", first->dir, pt->dir);
	if (!same_str(jget(a, "card"), jget(b, "card"), "hash"))
		return vs_error(VS_EVERIFY, "%s and %s are for different card contents", first->dir, pt->dir);
	if (!same_str(ta, tb, "version") || !same_str(ta, tb, "git_head") || !same_str(ta, tb, "kernels_tree") ||
	    cJSON_IsTrue(jget(ta, "kernels_dirty")) != cJSON_IsTrue(jget(tb, "kernels_dirty")))
		return vs_error(VS_EVERIFY, "%s and %s were run by different builds of validate_skill (tool identity "
				"differs): one eval dir speaks for one build", first->dir, pt->dir);
	if (!same_str(jget(a, "device"), jget(b, "device"), "name") ||
	    !same_str(jget(a, "device"), jget(b, "device"), "gen"))
		return vs_error(VS_EVERIFY, "%s ran on '%s' (%s) but %s on '%s' (%s): one eval dir speaks for one kind "
				"of device", first->dir, jstr(jget(a, "device"), "name"), jstr(jget(a, "device"), "gen"),
				pt->dir, jstr(jget(b, "device"), "name"), jstr(jget(b, "device"), "gen"));
	return 0;
}

/* The rows of one task from a samples.csv text, appended to f. */
static void copy_rows(FILE *f, const char *text, const char *hash)
{
	const char *s = strchr(text, '\n');

	for (s = s ? s + 1 : text + strlen(text); *s;) {
		const char *eol = strchr(s, '\n');
		size_t n = eol ? (size_t)(eol - s + 1) : strlen(s);

		if (!strncmp(s, hash, 64) && s[64] == ',')
			fwrite(s, 1, n, f);
		s += n;
	}
}

static int capture_code(const cJSON *impl)
{
	const char *c = jstr(impl, "capture");

	return !c ? -1 : !strcmp(c, "pass") ? 1 : !strcmp(c, "fail") ? 0 : -1;
}

int merge_parts(char **eval_dir_out, const char *const *dirs, int ndirs, const struct merge_options *o)
{
	char **paths = NULL, *eval_dir = NULL, *plan_path = NULL, *plan_text = NULL, *samples_buf = NULL;
	char *log_buf = NULL, *text = NULL, *base = NULL, hex[65], line[512];
	size_t plan_len = 0, samples_len = 0, log_len = 0;
	int npaths = 0, err, ntasks_seen = 0, created = 0;
	struct part *parts = NULL;
	struct plan p;
	const cJSON **task_json = NULL;
	int *task_part = NULL;
	struct sample_pairs **pairs = NULL;
	int *npairs_sets = NULL;
	struct runner_task_summary *sum = NULL;
	FILE *fs = NULL, *fl = NULL;
	cJSON *root = NULL, *manifests = NULL, *flags = NULL, *tasks, *merged_from;
	const char *run_id, *started = NULL, *finished = NULL;
	struct progress pg;

	memset(&p, 0, sizeof(p));
	if ((err = expand(&paths, &npaths, dirs, ndirs)))
		goto done;
	parts = calloc((size_t)npaths, sizeof(*parts));
	if (!parts) {
		err = vs_error(VS_ENOMEM, "out of memory");
		goto done;
	}
	progress_init(&pg, stdout, npaths);
	for (int k = 0; k < npaths; k++) {
		progress_status(&pg, "checking %s", paths[k]);
		if ((err = part_load(&parts[k], paths[k])) || (k && (err = check_same_run(&parts[0], &parts[k]))))
			goto done;
		progress_step(&pg);
	}
	progress_end(&pg);
	plan_path = fs_join(parts[0].dir, "plan.json");
	if (!plan_path || (err = plan_read(&p, plan_path)) ||
	    (err = fs_read_file(&plan_text, &plan_len, plan_path, 64u << 20)))
		goto done;

	/* Every plan task exactly once. */
	task_json = calloc((size_t)p.ntasks, sizeof(*task_json));
	task_part = calloc((size_t)p.ntasks, sizeof(*task_part));
	sum = calloc((size_t)p.ntasks, sizeof(*sum));
	pairs = calloc((size_t)p.ntasks, sizeof(*pairs));
	npairs_sets = calloc((size_t)p.ntasks, sizeof(*npairs_sets));
	if (!task_json || !task_part || !sum || !pairs || !npairs_sets) {
		err = vs_error(VS_ENOMEM, "out of memory");
		goto done;
	}
	for (int k = 0; k < npaths; k++) {
		const cJSON *t;

		cJSON_ArrayForEach(t, jget(parts[k].result, "tasks")) {
			const char *h = jstr(t, "hash");
			int i;

			for (i = 0; i < p.ntasks && (!h || strcmp(p.task_hash[i], h)); i++)
				;
			if (i == p.ntasks) {
				err = vs_error(VS_EVERIFY, "%s: task '%s' is not in the plan", parts[k].dir, jstr(t, "name"));
				goto done;
			}
			if (task_json[i]) {
				err = vs_error(VS_EVERIFY, "task %d (%s) is in two parts: %s and %s", i, p.tasks[i].name,
					       parts[task_part[i]].dir, parts[k].dir);
				goto done;
			}
			task_json[i] = t;
			task_part[i] = k;
			ntasks_seen++;
		}
	}
	if (ntasks_seen != p.ntasks) {
		char missing[256] = "";
		int nmiss = 0;

		for (int i = 0; i < p.ntasks; i++)
			if (!task_json[i] && nmiss++ < 8)
				snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), "%s%d (%s)",
					 nmiss > 1 ? ", " : "", i, p.tasks[i].name);
		err = vs_error(VS_EVERIFY, "the parts hold %d of the plan's %d tasks; missing: %s%s: rerun them with "
			       "--run %s --part N --run-id RUN", ntasks_seen, p.ntasks, missing, nmiss > 8 ? ", ..." : "",
			       jstr(jget(parts[0].result, "plan"), "path"));
		goto done;
	}

	/* The merged eval dir. */
	run_id = o && o->run_id ? o->run_id : jstr(jget(parts[0].result, "part"), "run_id");
	base = fs_printf("%s/%s", o && o->results_root ? o->results_root : "results", p.card_id);
	if (!base) {
		err = vs_error(VS_ENOMEM, "out of memory");
		goto done;
	}
	if (!run_id) {
		char stamp[32];
		time_t now = time(NULL);
		struct tm tm;

		gmtime_r(&now, &tm);
		strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
		eval_dir = fs_printf("%s/%s-%s-merged", base, stamp, p.gen);
	} else {
		eval_dir = fs_printf("%s/%s", base, run_id);
	}
	if (!eval_dir) {
		err = vs_error(VS_ENOMEM, "out of memory");
		goto done;
	}
	if (fs_exists(eval_dir)) {
		err = vs_error(VS_EUSAGE, "'%s' exists already: name another with --run-id", eval_dir);
		goto done;
	}
	{
		char *m = fs_join(eval_dir, "manifests");

		err = m ? fs_mkdir_p(m) : vs_error(VS_ENOMEM, "out of memory");
		free(m);
		if (err)
			goto done;
		created = 1;
	}

	fs = open_memstream(&samples_buf, &samples_len);
	fl = open_memstream(&log_buf, &log_len);
	root = cJSON_CreateObject();
	manifests = cJSON_CreateObject();
	flags = cJSON_CreateArray();
	if (!fs || !fl || !root || !manifests || !flags) {
		err = vs_error(VS_ENOMEM, "out of memory");
		goto done;
	}
	fprintf(fs, "task,set,pair,order,role,config,ms,checked\n");
	fprintf(fl, "merge of %d parts into %s, plan %s: %s vs %s, %d tasks\n", npaths, eval_dir,
		jstr(jget(parts[0].result, "plan"), "path"), p.baseline.name, p.candidate.name, p.ntasks);
	for (int i = 0; i < p.ntasks; i++) {
		const struct part *pt = &parts[task_part[i]];
		const char *h = p.task_hash[i], *mh = jstr(jget(pt->result, "manifests"), h);
		char *src = fs_printf("%s/manifests/%s.json", pt->dir, h), *mtext = NULL, *mname;
		size_t mlen;
		const cJSON *fl_item;
		int np = 0;

		err = src ? fs_read_file(&mtext, &mlen, src, 16u << 20) : VS_ENOMEM;
		free(src);
		mname = fs_printf("manifests/%s.json", h);
		if (!err)
			err = mname ? fs_write_in(eval_dir, mname, mtext, mlen, hex) : VS_ENOMEM;
		free(mname);
		free(mtext);
		if (err)
			goto done;
		if (!mh || strcmp(mh, hex)) {
			err = vs_error(VS_EVERIFY, "%s: manifest of task %s does not match", pt->dir, p.tasks[i].name);
			goto done;
		}
		cJSON_AddStringToObject(manifests, h, hex);
		copy_rows(fs, pt->samples, h);
		fprintf(fl, "---- part %s\n%s", pt->dir, pt->log);
		/* This task's samples, for the overall numbers. */
		{
			char *rows = NULL;
			size_t rlen = 0;
			FILE *rf = open_memstream(&rows, &rlen);

			if (!rf) {
				err = vs_error(VS_ENOMEM, "out of memory");
				goto done;
			}
			fprintf(rf, "task,set,pair,order,role,config,ms,checked\n");
			copy_rows(rf, pt->samples, h);
			fclose(rf);
			if (rlen > 43)
				err = samples_parse(&pairs[i], &np, rows, pt->dir);
			free(rows);
			if (err)
				goto done;
			npairs_sets[i] = np;
		}
		sum[i].complete = cJSON_IsTrue(jget(task_json[i], "complete"));
		sum[i].parity_pass = jstr(task_json[i], "parity") && !strcmp(jstr(task_json[i], "parity"), "pass");
		sum[i].base_capture = capture_code(jget(task_json[i], "baseline"));
		sum[i].cand_capture = capture_code(jget(task_json[i], "candidate"));
		if (np > 0) {
			sum[i].t_base = pairs[i][0].base;
			sum[i].t_cand = pairs[i][0].cand;
			sum[i].npairs = pairs[i][0].n;
		}
		cJSON_ArrayForEach(fl_item, jget(pt->result, "flags"))
			cJSON_AddItemToArray(flags, cJSON_Duplicate(fl_item, 1));
		if (!started || strcmp(jstr(pt->result, "started") ? jstr(pt->result, "started") : "", started) < 0)
			started = jstr(pt->result, "started");
		if (!finished || strcmp(jstr(pt->result, "finished") ? jstr(pt->result, "finished") : "", finished) > 0)
			finished = jstr(pt->result, "finished");
	}

	/* result.json: the structure of a direct run's, numbers and gates recomputed. */
	{
		const cJSON *r0 = parts[0].result;
		static const char *const copied[] = {"tool", "card", "plan", "device"};

		cJSON_AddStringToObject(root, "schema", VS_RESULT_SCHEMA);
		for (size_t k = 0; k < sizeof(copied) / sizeof(copied[0]); k++)
			cJSON_AddItemToObject(root, copied[k], cJSON_Duplicate(jget(r0, copied[k]), 1));
		cJSON_AddStringToObject(root, "started", started ? started : "");
		cJSON_AddStringToObject(root, "finished", finished ? finished : "");
		cJSON_AddStringToObject(root, "baseline", p.baseline.name);
		cJSON_AddStringToObject(root, "candidate", p.candidate.name);
		cJSON_AddItemToObject(root, "plugins", runner_plugins_json(&p));
		cJSON_AddBoolToObject(root, "partial", 0);
		merged_from = cJSON_AddArrayToObject(root, "merged_from");
		for (int k = 0; k < npaths; k++)
			cJSON_AddItemToArray(merged_from, cJSON_CreateString(parts[k].dir));
		tasks = cJSON_AddArrayToObject(root, "tasks");
		for (int i = 0; i < p.ntasks; i++)
			cJSON_AddItemToArray(tasks, cJSON_Duplicate(task_json[i], 1));
		err = runner_verdict(root, &p, sum, p.ntasks, 0, flags, line, sizeof(line));
		flags = NULL;
		if (err)
			goto done;
	}
	fclose(fs);
	fs = NULL;
	if ((err = fs_write_in(eval_dir, "plan.json", plan_text, plan_len, NULL)) ||
	    (err = fs_write_in(eval_dir, "samples.csv", samples_buf, samples_len, hex)))
		goto done;
	cJSON_AddStringToObject(root, "samples_sha256", hex);
	cJSON_AddItemToObject(root, "manifests", manifests);
	manifests = NULL;
	fprintf(fl, "\n%s\neval dir: %s\n", line, eval_dir);
	fclose(fl);
	fl = NULL;
	if ((err = fs_write_in(eval_dir, "run.log", log_buf, log_len, hex)))
		goto done;
	cJSON_AddStringToObject(root, "log_sha256", hex);
	text = cJSON_Print(root);
	if (!text) {
		err = vs_error(VS_ENOMEM, "out of memory");
		goto done;
	}
	if ((err = fs_write_in(eval_dir, "result.json", text, strlen(text), NULL)))
		goto done;
	printf("merged %d parts (%d tasks) into %s\n%s\n", npaths, p.ntasks, eval_dir, line);
	*eval_dir_out = eval_dir;
	eval_dir = NULL;
done:
	if (fs)
		fclose(fs);
	if (fl)
		fclose(fl);
	if (eval_dir && err && created)
		fs_remove_tree(eval_dir);
	cJSON_free(text);
	cJSON_Delete(root);
	cJSON_Delete(manifests);
	cJSON_Delete(flags);
	for (int i = 0; pairs && i < p.ntasks; i++)
		samples_free(pairs[i], npairs_sets[i]);
	free(pairs);
	free(npairs_sets);
	free(sum);
	free(task_json);
	free(task_part);
	for (int k = 0; parts && k < npaths; k++)
		part_release(&parts[k]);
	free(parts);
	for (int k = 0; k < npaths; k++)
		free(paths[k]);
	free(paths);
	free(samples_buf);
	free(log_buf);
	free(plan_text);
	free(plan_path);
	free(base);
	free(eval_dir);
	plan_release(&p);
	return err;
}
