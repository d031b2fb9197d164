#include "merge.h"
#include "evaldir.h"
#include "fsutil.h"
#include "op.h"
#include "plan.h"
#include "progress.h"
#include "vs_error.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static const char *jstr(const cJSON *o, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static const cJSON *jget(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* Equal JSON strings at key in a and b (both present). */
static int same_str(const cJSON *a, const cJSON *b, const char *key)
{
	const char *x = jstr(a, key), *y = jstr(b, key);

	return x && y && !strcmp(x, y);
}

/* Parts that cannot be joined: another plan, card, build or kind of device. */
static int check_same_run(const struct evaldir_part *first, const struct evaldir_part *pt)
{
	const cJSON *a = first->result, *b = pt->result;
	const cJSON *ta = jget(a, "tool"), *tb = jget(b, "tool");

	if (!same_str(jget(a, "plan"), jget(b, "plan"), "sha256"))
		return vs_error(VS_EVERIFY, "%s and %s ran different plans (plan sha256 differs)", first->dir, pt->dir);
	if (!same_str(jget(a, "card"), jget(b, "card"), "hash"))
		return vs_error(VS_EVERIFY, "%s and %s are for different card contents", first->dir, pt->dir);
	if (!same_str(ta, tb, "version") || !same_str(ta, tb, "git_head") || !same_str(ta, tb, "kernels_tree") ||
	    cJSON_IsTrue(jget(ta, "kernels_dirty")) != cJSON_IsTrue(jget(tb, "kernels_dirty")))
		return vs_error(VS_EVERIFY,
				"%s and %s were run by different builds of validate_skill (tool identity "
				"differs): one eval dir speaks for one build",
				first->dir, pt->dir);
	if (!same_str(jget(a, "device"), jget(b, "device"), "name") ||
	    !same_str(jget(a, "device"), jget(b, "device"), "gen"))
		return vs_error(VS_EVERIFY,
				"%s ran on '%s' (%s) but %s on '%s' (%s): one eval dir speaks for one kind "
				"of device",
				first->dir, jstr(jget(a, "device"), "name"), jstr(jget(a, "device"), "gen"), pt->dir,
				jstr(jget(b, "device"), "name"), jstr(jget(b, "device"), "gen"));
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

/* Find each plan task in exactly one part: task_json[i], task_part[i]. */
static int assign_tasks(const cJSON **task_json, int *task_part, const struct plan *p, const struct evaldir_part *parts,
			int nparts)
{
	int seen = 0;

	for (int k = 0; k < nparts; k++) {
		const cJSON *t;

		cJSON_ArrayForEach(t, jget(parts[k].result, "tasks"))
		{
			const char *h = jstr(t, "hash");
			int i;

			for (i = 0; i < p->ntasks && (!h || strcmp(p->task_hash[i], h)); i++)
				;
			if (i == p->ntasks)
				return vs_error(VS_EVERIFY, "%s: task '%s' is not in the plan", parts[k].dir,
						jstr(t, "name"));
			if (task_json[i])
				return vs_error(VS_EVERIFY, "task %d (%s) is in two parts: %s and %s", i,
						p->tasks[i].name, parts[task_part[i]].dir, parts[k].dir);
			task_json[i] = t;
			task_part[i] = k;
			seen++;
		}
	}
	if (seen != p->ntasks) {
		char missing[256] = "";
		int nmiss = 0;

		for (int i = 0; i < p->ntasks; i++)
			if (!task_json[i] && nmiss++ < 8)
				snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing), "%s%d (%s)",
					 nmiss > 1 ? ", " : "", i, p->tasks[i].name);
		return vs_error(VS_EVERIFY,
				"the parts hold %d of the plan's %d tasks; missing: %s%s: rerun them with "
				"--run %s --part N --run-id RUN",
				seen, p->ntasks, missing, nmiss > 8 ? ", ..." : "",
				jstr(jget(parts[0].result, "plan"), "path"));
	}
	return 0;
}

/* One task's samples from its part, for the overall numbers. */
static int task_samples(struct sample_pairs **pairs, int *np, const struct evaldir_part *pt, const char *hash)
{
	char *rows = NULL;
	size_t rlen = 0;
	FILE *rf = open_memstream(&rows, &rlen);
	int err = 0;

	*np = 0;
	VS_CHECK_ALLOC(rf);
	fprintf(rf, "task,set,pair,order,role,config,ms,checked\n");
	copy_rows(rf, pt->samples, hash);
	fclose(rf);
	if (rlen > 43)
		err = samples_parse(pairs, np, rows, pt->dir);
	free(rows);
	return err;
}

/* Copy task i's manifest from its part into the merged eval dir; it must be the one the part binds. */
static int copy_manifest(struct evaldir_writer *w, const struct evaldir_part *pt, const char *hash,
			 const char *task_name)
{
	const char *mh = jstr(jget(pt->result, "manifests"), hash);
	char *src = fs_printf("%s/manifests/%s.json", pt->dir, hash), *mtext = NULL, hex[65];
	size_t mlen;
	int err;

	err = src ? fs_read_file(&mtext, &mlen, src, 16u << 20) : vs_oom();
	free(src);
	if (!err)
		err = evaldir_writer_manifest(w, hash, mtext, mlen, hex);
	free(mtext);
	if (!err && (!mh || strcmp(mh, hex)))
		err = vs_error(VS_EVERIFY, "%s: manifest of task %s does not match", pt->dir, task_name);
	return err;
}

int merge_parts(char **eval_dir_out, const char *const *dirs, int ndirs, const struct merge_options *o)
{
	char **paths = NULL, *eval_dir = NULL, *plan_path = NULL, *plan_text = NULL, line[4096];
	size_t plan_len = 0;
	int npaths = 0, err, created = 0;
	struct evaldir_part *parts = NULL;
	struct evaldir_writer w;
	struct evaldir_head h;
	struct plan p;
	const cJSON **task_json = NULL;
	int *task_part = NULL;
	struct sample_pairs **pairs = NULL;
	int *npairs_sets = NULL;
	struct evaldir_task_summary *sum = NULL;
	struct measure_e2e *e2es = NULL;
	const char *run_id, *started = NULL, *finished = NULL;
	struct progress pg;

	memset(&p, 0, sizeof(p));
	memset(&w, 0, sizeof(w));
	if ((err = evaldir_find_parts(&paths, &npaths, dirs, ndirs)))
		goto done;
	parts = calloc((size_t)npaths, sizeof(*parts));
	if (!parts) {
		err = vs_oom();
		goto done;
	}
	progress_init(&pg, stdout, npaths);
	for (int k = 0; k < npaths; k++) {
		progress_status(&pg, "checking %s", paths[k]);
		if ((err = evaldir_part_load(&parts[k], paths[k])) ||
		    (k && (err = check_same_run(&parts[0], &parts[k]))))
			goto done;
		progress_step(&pg);
	}
	progress_end(&pg);
	plan_path = fs_join(parts[0].dir, "plan.json");
	if (!plan_path || (err = plan_read(&p, plan_path)) || (err = plan_check_current(&p, plan_path)) ||
	    (err = fs_read_file(&plan_text, &plan_len, plan_path, 64u << 20)))
		goto done;

	/* Every plan task exactly once. */
	task_json = calloc((size_t)p.ntasks, sizeof(*task_json));
	task_part = calloc((size_t)p.ntasks, sizeof(*task_part));
	sum = calloc((size_t)p.ntasks, sizeof(*sum));
	e2es = calloc((size_t)p.ntasks + 1, sizeof(*e2es));
	pairs = calloc((size_t)p.ntasks, sizeof(*pairs));
	npairs_sets = calloc((size_t)p.ntasks, sizeof(*npairs_sets));
	if (!task_json || !task_part || !sum || !e2es || !pairs || !npairs_sets) {
		err = vs_oom();
		goto done;
	}
	if ((err = assign_tasks(task_json, task_part, &p, parts, npaths)))
		goto done;

	/* The merged eval dir. */
	run_id = o && o->run_id ? o->run_id : jstr(jget(parts[0].result, "part"), "run_id");
	if ((err = evaldir_create_merged(&eval_dir, o ? o->results_root : NULL, p.card_id, run_id, p.gen)))
		goto done;
	created = 1;
	if ((err = evaldir_writer_init(&w, eval_dir)))
		goto done;
	fprintf(w.log, "merge of %d parts into %s, plan %s: %s vs %s, %d tasks\n", npaths, eval_dir,
		jstr(jget(parts[0].result, "plan"), "path"), p.baseline.name, p.candidate.name, p.ntasks);
	for (int i = 0; i < p.ntasks; i++) {
		const struct evaldir_part *pt = &parts[task_part[i]];
		const char *hsh = p.task_hash[i];
		int np = 0;

		/* A skipped task (not supported) was never materialized: it has no manifest. */
		if (!jstr(task_json[i], "skipped") && (err = copy_manifest(&w, pt, hsh, p.tasks[i].name)))
			goto done;
		copy_rows(w.samples, pt->samples, hsh);
		fprintf(w.log, "---- part %s\n%s", pt->dir, pt->log);
		if ((err = task_samples(&pairs[i], &np, pt, hsh)))
			goto done;
		npairs_sets[i] = np;
		sum[i].complete = cJSON_IsTrue(jget(task_json[i], "complete"));
		sum[i].parity_pass = jstr(task_json[i], "parity") && !strcmp(jstr(task_json[i], "parity"), "pass");
		sum[i].base_capture = capture_code(jget(task_json[i], "baseline"));
		sum[i].cand_capture = capture_code(jget(task_json[i], "candidate"));
		sum[i].dtype = vs_op_of(&p.tasks[i])->dtype(&p.tasks[i]);
		sum[i].name = p.tasks[i].name;
		sum[i].weight = p.workload ? p.workload->weight[i] : 0;
		sum[i].concurrency = p.workload ? p.workload->concurrency[i] : 0;
		sum[i].skipped = jstr(task_json[i], "skipped");
		if ((err = evaldir_e2e_from_task(&e2es[i], task_json[i], np > 0 ? &pairs[i][0] : NULL)))
			goto done;
		sum[i].e2e = &e2es[i];
		if (np > 0) {
			sum[i].t_base = pairs[i][0].base;
			sum[i].t_cand = pairs[i][0].cand;
			sum[i].npairs = pairs[i][0].n;
		}
		for (int k = 0; k < p.nrefs; k++) {
			const cJSON *rj = cJSON_GetArrayItem(jget(task_json[i], "references"), k);

			sum[i].ref_status[k] = evaldir_ref_status_parse(jstr(rj, "status"));
			if (np > 0 && sum[i].ref_status[k] == EVALDIR_REF_TIMED)
				sum[i].t_ref[k] = pairs[i][0].ref[k];
		}
		if (!started || strcmp(jstr(pt->result, "started") ? jstr(pt->result, "started") : "", started) < 0)
			started = jstr(pt->result, "started");
		if (!finished || strcmp(jstr(pt->result, "finished") ? jstr(pt->result, "finished") : "", finished) > 0)
			finished = jstr(pt->result, "finished");
	}

	/* result.json: the structure of a direct run's, numbers and gates recomputed. */
	memset(&h, 0, sizeof(h));
	h.plan = &p;
	h.copy_from = parts[0].result;
	h.started = started ? started : "";
	h.finished = finished ? finished : "";
	h.merged_from = (const char *const *)paths;
	h.nmerged = npaths;
	if ((err = evaldir_writer_head(&w, &h)))
		goto done;
	for (int i = 0; i < p.ntasks; i++)
		if ((err = evaldir_writer_task_copy(&w, task_json[i], jget(parts[task_part[i]].result, "flags"))))
			goto done;
	if ((err = evaldir_writer_verdict(&w, &p, sum, p.ntasks, 0, line, sizeof(line))))
		goto done;
	fprintf(w.log, "\n%s\n", line);
	for (int k = 0; k < p.nrefs; k++) {
		char rl[512];

		if (evaldir_reference_line(rl, sizeof(rl), w.root, k) == 0)
			fprintf(w.log, "%s\n", rl);
	}
	fprintf(w.log, "eval dir: %s\n", eval_dir);
	if ((err = evaldir_writer_commit(&w, plan_text, plan_len)))
		goto done;
	printf("merged %d parts (%d tasks) into %s\n%s\n", npaths, p.ntasks, eval_dir, line);
	*eval_dir_out = eval_dir;
	eval_dir = NULL;
done:
	evaldir_writer_release(&w);
	if (eval_dir && err && created)
		fs_remove_tree(eval_dir);
	for (int i = 0; pairs && i < p.ntasks; i++)
		samples_free(pairs[i], npairs_sets[i]);
	free(pairs);
	free(npairs_sets);
	free(sum);
	for (int i = 0; e2es && i < p.ntasks; i++)
		measure_e2e_release(&e2es[i]);
	free(e2es);
	free(task_json);
	free(task_part);
	for (int k = 0; parts && k < npaths; k++)
		evaldir_part_release(&parts[k]);
	free(parts);
	for (int k = 0; k < npaths; k++)
		free(paths[k]);
	free(paths);
	free(plan_text);
	free(plan_path);
	free(eval_dir);
	plan_release(&p);
	return err;
}
