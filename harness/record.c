#include "record.h"
#include "fsutil.h"
#include "jsonfile.h"
#include "plan.h"
#include "stats.h"
#include "vs_error.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *jstr(const cJSON *o, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static const cJSON *jget(const cJSON *o, const char *key)
{
	return cJSON_GetObjectItemCaseSensitive(o, key);
}

/* sha256 of dir/name must equal want. */
static int check_file_hash(const char *dir, const char *name, const char *want, int *status)
{
	char *path = fs_join(dir, name), hex[65];
	int err;

	if (!path)
		return vs_error(VS_ENOMEM, "out of memory");
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
		err = vs_error(VS_EVERIFY, "%s: '%s' does not match result.json (sha256 %.12s..., recorded "
			       "%.12s...): the evidence was modified", dir, name, hex, want);
	}
	free(path);
	return err;
}


static int pairs_put(struct sample_pairs *tp, int pair, int cand, double ms)
{
	if (pair < 0 || pair > 10000000)
		return -1;
	if (pair >= tp->cap) {
		int ncap = pair + 64;
		double *nb = realloc(tp->base, (size_t)ncap * sizeof(double));
		double *nc;

		if (!nb)
			return -1;
		tp->base = nb;
		nc = realloc(tp->cand, (size_t)ncap * sizeof(double));
		if (!nc)
			return -1;
		tp->cand = nc;
		for (int i = tp->cap; i < ncap; i++)
			tp->base[i] = tp->cand[i] = NAN;
		tp->cap = ncap;
	}
	(cand ? tp->cand : tp->base)[pair] = ms;
	if (pair + 1 > tp->n)
		tp->n = pair + 1;
	return 0;
}

void samples_free(struct sample_pairs *tp, int n)
{
	for (int k = 0; tp && k < n; k++) {
		free(tp[k].base);
		free(tp[k].cand);
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

		if (sscanf(s, "%64[0-9a-f],%d,%d,%d,%15[a-z],%63[^,],%lf,%d", hash, &set, &pair, &order, role, cfg,
			   &ms, &checked) != 8 || !(ms > 0)) {
			err = vs_error(VS_EVERIFY, "%s:%d: malformed sample row", path, line + 1);
			break;
		}
		for (k = 0; k < n && strcmp(tp[k].hash, hash); k++)
			;
		if (k == n) {
			struct sample_pairs *ntp = realloc(tp, (size_t)(n + 1) * sizeof(*tp));

			if (!ntp) {
				err = vs_error(VS_ENOMEM, "out of memory");
				break;
			}
			tp = ntp;
			memset(&tp[n], 0, sizeof(tp[n]));
			memcpy(tp[n].hash, hash, 65);
			n++;
		}
		if (pairs_put(&tp[k], pair, !strcmp(role, "candidate"), ms)) {
			err = vs_error(VS_EVERIFY, "%s:%d: bad pair index", path, line + 1);
			break;
		}
		s = eol ? eol + 1 : s + strlen(s);
	}
	for (int k = 0; !err && k < n; k++)
		for (int i = 0; i < tp[k].n; i++)
			if (isnan(tp[k].base[i]) || isnan(tp[k].cand[i]))
				err = vs_error(VS_EVERIFY, "%s: task %.16s pair %d lacks a baseline or candidate sample",
					       path, tp[k].hash, i);
	if (err) {
		for (int k = 0; k < n; k++) {
			free(tp[k].base);
			free(tp[k].cand);
		}
		free(tp);
		return err;
	}
	*out = tp;
	*count = n;
	return 0;
}

static int same(double a, double b)
{
	return a == b || fabs(a - b) <= 1e-9 * fmax(fabs(a), fabs(b));
}

/* Recompute every speedup in result.json from samples.csv with the plan's seed. */
static int recompute(const struct evidence *e, const struct plan *p, const char *samples_text,
		     const char *samples_path, int *status)
{
	struct sample_pairs *tp = NULL;
	int ntp = 0, err, nspeed = 0;
	const cJSON *tasks = jget(e->result, "tasks"), *t;
	const double **tb = NULL, **tc = NULL;
	int *n = NULL;

	err = samples_parse(&tp, &ntp, samples_text, samples_path);
	if (err) {
		*status = EVIDENCE_MISMATCH;
		return err;
	}
	tb = calloc((size_t)cJSON_GetArraySize(tasks) + 1, sizeof(*tb));
	tc = calloc((size_t)cJSON_GetArraySize(tasks) + 1, sizeof(*tc));
	n = calloc((size_t)cJSON_GetArraySize(tasks) + 1, sizeof(*n));
	if (!tb || !tc || !n) {
		err = vs_error(VS_ENOMEM, "out of memory");
		goto done;
	}
	cJSON_ArrayForEach(t, tasks) {
		const char *hash = jstr(t, "hash");
		const cJSON *sp = jget(t, "speedup");
		struct stats_ci ci;
		int k;

		if (!cJSON_IsTrue(jget(t, "complete")))
			continue;
		for (k = 0; k < ntp && (!hash || strcmp(tp[k].hash, hash)); k++)
			;
		if (k == ntp || !cJSON_IsObject(sp)) {
			*status = EVIDENCE_MISMATCH;
			err = vs_error(VS_EVERIFY, "%s: task '%s' reports a speedup but has no samples",
				       samples_path, jstr(t, "name") ? jstr(t, "name") : "?");
			goto done;
		}
		err = stats_speedup(&ci, tp[k].base, tp[k].cand, tp[k].n, p->protocol.resamples, p->protocol.seed);
		if (err)
			goto done;
		if (!same(ci.estimate, cJSON_GetNumberValue(jget(sp, "estimate"))) ||
		    !same(ci.lo, cJSON_GetNumberValue(cJSON_GetArrayItem(jget(sp, "ci95"), 0))) ||
		    !same(ci.hi, cJSON_GetNumberValue(cJSON_GetArrayItem(jget(sp, "ci95"), 1)))) {
			*status = EVIDENCE_MISMATCH;
			err = vs_error(VS_EVERIFY, "%s: task '%s' speedup %.6g [%.6g, %.6g] in result.json does not "
				       "recompute from samples.csv (%.6g [%.6g, %.6g])", e->eval_dir, jstr(t, "name"),
				       cJSON_GetNumberValue(jget(sp, "estimate")),
				       cJSON_GetNumberValue(cJSON_GetArrayItem(jget(sp, "ci95"), 0)),
				       cJSON_GetNumberValue(cJSON_GetArrayItem(jget(sp, "ci95"), 1)), ci.estimate,
				       ci.lo, ci.hi);
			goto done;
		}
		if (!strcmp(jstr(t, "parity") ? jstr(t, "parity") : "", "pass")) {
			tb[nspeed] = tp[k].base;
			tc[nspeed] = tp[k].cand;
			n[nspeed++] = tp[k].n;
		}
	}
	if (nspeed > 0) {
		struct stats_ci ov;

		err = stats_geomean_speedup(&ov, tb, tc, n, nspeed, p->protocol.resamples, p->protocol.seed);
		if (err)
			goto done;
		if (!e->has_isolated || !same(ov.estimate, e->isolated) || !same(ov.lo, e->isolated_lo) ||
		    !same(ov.hi, e->isolated_hi)) {
			*status = EVIDENCE_MISMATCH;
			err = vs_error(VS_EVERIFY, "%s: overall speedup %.6g [%.6g, %.6g] in result.json does not "
				       "recompute from samples.csv (%.6g [%.6g, %.6g])", e->eval_dir, e->isolated,
				       e->isolated_lo, e->isolated_hi, ov.estimate, ov.lo, ov.hi);
			goto done;
		}
	} else if (e->has_isolated) {
		*status = EVIDENCE_MISMATCH;
		err = vs_error(VS_EVERIFY, "%s: result.json reports an overall speedup but no task has samples",
			       e->eval_dir);
	}
done:
	for (int k = 0; k < ntp; k++) {
		free(tp[k].base);
		free(tp[k].cand);
	}
	free(tp);
	free(tb);
	free(tc);
	free(n);
	return err;
}

int evidence_load(struct evidence *e, int *status_out, const char *dir, const struct card *c)
{
	char *path = NULL, *text = NULL, *samples = NULL, *plan_path = NULL, hash[65];
	size_t len, slen;
	const cJSON *card, *plan, *dev, *ov, *iso, *manifests, *t, *tool;
	struct plan p;
	int err, status = EVIDENCE_OK, i = 0;

	memset(e, 0, sizeof(*e));
	memset(&p, 0, sizeof(p));
	e->eval_dir = strdup(dir);
	path = fs_join(dir, "result.json");
	if (!e->eval_dir || !path) {
		free(path);
		return vs_error(VS_ENOMEM, "out of memory");
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
	if (!jstr(e->result, "schema") || strcmp(jstr(e->result, "schema"), "validate_skill.result/1")) {
		err = vs_error(VS_EVERIFY, "%s: \"schema\" is '%s', expected 'validate_skill.result/1' (not a "
			       "result written by this tool)", path, jstr(e->result, "schema") ? jstr(e->result, "schema") : "");
		goto done;
	}
	card = jget(e->result, "card");
	plan = jget(e->result, "plan");
	dev = jget(e->result, "device");
	ov = jget(e->result, "overall");
	tool = jget(e->result, "tool");
	{
		const char *missing = !jstr(card, "id") ? "card.id" : !jstr(card, "hash") ? "card.hash" :
				      !jstr(plan, "sha256") ? "plan.sha256" : !jstr(dev, "name") ? "device.name" :
				      !jstr(dev, "gen") ? "device.gen" : !jstr(e->result, "verdict") ? "verdict" :
				      !jstr(e->result, "finished") ? "finished" : !cJSON_IsObject(ov) ? "overall" :
				      !cJSON_IsObject(tool) ? "tool" : NULL;

		if (missing) {
			err = vs_error(VS_EVERIFY, "%s: incomplete result: \"%s\" is missing or not a%s", path,
				       missing, !strcmp(missing, "overall") || !strcmp(missing, "tool") ?
				       "n object" : " string");
			goto done;
		}
	}
	if (strcmp(jstr(card, "id"), c->id)) {
		err = vs_error(VS_EVERIFY, "%s: the evidence is for card '%s', not '%s'", dir, jstr(card, "id"), c->id);
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
	/* Files bound by hash. */
	if ((err = check_file_hash(dir, "plan.json", jstr(plan, "sha256"), &status)) ||
	    (err = check_file_hash(dir, "samples.csv", jstr(e->result, "samples_sha256"), &status)) ||
	    (err = check_file_hash(dir, "run.log", jstr(e->result, "log_sha256"), &status)))
		goto done;
	manifests = jget(e->result, "manifests");
	cJSON_ArrayForEach(t, jget(e->result, "tasks")) {
		const char *h = jstr(t, "hash");
		char *name;

		i++;
		if (!h || !jstr(manifests, h)) {
			err = vs_error(VS_EVERIFY, "%s: task %d has no manifest copy recorded", path, i);
			goto done;
		}
		name = fs_printf("manifests/%s.json", h);
		err = name ? check_file_hash(dir, name, jstr(manifests, h), &status) : VS_ENOMEM;
		free(name);
		if (err)
			goto done;
	}
	/* Plugins that ran are bound by their file's sha256: the same file must still be there. */
	cJSON_ArrayForEach(t, jget(e->result, "plugins")) {
		const char *lib = jstr(t, "path"), *want = jstr(t, "sha256"), *role = jstr(t, "role");
		char hex[65];

		status = EVIDENCE_MISMATCH;
		if (!lib || !want) {
			err = vs_error(VS_EVERIFY, "%s: a plugin entry lacks its path or sha256", path);
			goto done;
		}
		if (!fs_exists(lib)) {
			err = vs_error(VS_EVERIFY, "%s: the %s plugin '%s' that ran is gone: the evidence cannot be "
				       "checked against it", dir, role ? role : "", lib);
			goto done;
		}
		if ((err = fs_sha256_file(hex, lib)))
			goto done;
		if (strcmp(hex, want)) {
			err = vs_error(VS_EVERIFY, "%s: the %s plugin '%s' changed since the run (sha256 %.12s..., the "
				       "evidence binds %.12s...): run the plan again with this build of it", dir,
				       role ? role : "", lib, hex, want);
			goto done;
		}
	}
	/* The plan copy: same card, same tasks. */
	plan_path = fs_join(dir, "plan.json");
	if ((err = plan_read(&p, plan_path)))
		goto done;
	if (strcmp(p.card_id, c->id) || strcmp(p.card_hash, jstr(card, "hash"))) {
		err = vs_error(VS_EVERIFY, "%s: plan.json is for card '%s' (hash %.12s...), result.json for '%s' "
			       "(hash %.12s...)", dir, p.card_id, p.card_hash, c->id, jstr(card, "hash"));
		goto done;
	}
	i = 0;
	cJSON_ArrayForEach(t, jget(e->result, "tasks")) {
		int found = 0;

		for (int k = 0; k < p.ntasks; k++)
			found |= jstr(t, "hash") && !strcmp(p.task_hash[k], jstr(t, "hash"));
		if (!found) {
			err = vs_error(VS_EVERIFY, "%s: task '%s' is not in the plan copy", dir, jstr(t, "name"));
			goto done;
		}
		i++;
	}
	if (!e->partial && i != p.ntasks) {
		err = vs_error(VS_EVERIFY, "%s: result.json covers %d of the plan's %d tasks but is not marked "
			       "partial", dir, i, p.ntasks);
		goto done;
	}
	/* Numbers recompute from the raw samples. */
	samples = fs_join(dir, "samples.csv");
	{
		char *stext = NULL;

		err = samples ? fs_read_file(&stext, &slen, samples, 256u << 20) : VS_ENOMEM;
		if (!err)
			err = recompute(e, &p, stext, samples, &status);
		free(stext);
		if (err)
			goto done;
	}
	/* Finally the card itself: content unchanged since the plan was made. */
	if ((err = card_hash(c, hash)))
		goto done;
	if (strcmp(hash, jstr(card, "hash"))) {
		status = EVIDENCE_STALE_CARD;
		err = vs_error(VS_EVERIFY, "%s: the card changed since this evidence was produced (card hash "
			       "%.12s..., evidence %.12s...): emit the plan and run again", c->path, hash,
			       jstr(card, "hash"));
		goto done;
	}
	status = EVIDENCE_OK;
done:
	if (status_out)
		*status_out = status;
	plan_release(&p);
	free(plan_path);
	free(samples);
	free(path);
	free(text);
	return err;
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
	v->has_e2e_pct = 0;
	v->measured_parity = (char *)e->parity;
	v->artifact = (char *)artifact;
}

static int list_has(const struct card_list *l, const char *s)
{
	for (int i = 0; i < l->count; i++)
		if (!strcmp(l->items[i], s))
			return 1;
	return 0;
}

/* The eval dir as a path relative to the working directory (the repository root) when possible. */
static char *relative_artifact(const char *dir)
{
	char cwd[PATH_MAX], *real = realpath(dir, NULL), *out;
	size_t n;

	if (!real || !getcwd(cwd, sizeof(cwd))) {
		free(real);
		return strdup(dir);
	}
	n = strlen(cwd);
	if (!strncmp(real, cwd, n) && real[n] == '/')
		out = strdup(real + n + 1);
	else
		out = strdup(real);
	free(real);
	return out;
}

int record_card(const char *card_path, const char *eval_dir)
{
	struct card c;
	struct evidence e;
	struct card_validation v;
	char *text = NULL, *artifact = NULL;
	size_t len;
	int err, status;

	memset(&c, 0, sizeof(c));
	memset(&e, 0, sizeof(e));
	if ((err = card_load(&c, card_path)))
		return err;
	if (fs_is_link(card_path)) {
		err = vs_error(VS_EVERIFY, "card '%s' is a symlink: recording replaces the file and would turn the "
			       "link into a copy; record the file it points to", card_path);
		goto done;
	}
	if ((err = evidence_load(&e, &status, eval_dir, &c)))
		goto done;
	if (e.partial) {
		err = vs_error(VS_EVERIFY, "%s: a filtered (--task/--impl/--config) run is partial evidence and "
			       "cannot be recorded: run the whole plan", eval_dir);
		goto done;
	}
	if (!list_has(&c.match.gens, e.gen)) {
		err = vs_error(VS_EVERIFY, "%s: measured on '%s' (%s), which is not in %s's match.gens: this evidence "
			       "cannot speak for the card", eval_dir, e.gen, e.device_name, card_path);
		goto done;
	}
	if (e.kernels_dirty) {
		err = vs_error(VS_EVERIFY, "%s: the binary that ran was built from uncommitted kernels/ sources "
			       "(kernels tree %s, dirty): commit, rebuild and run again before recording", eval_dir,
			       e.kernels_tree);
		goto done;
	}
	artifact = relative_artifact(eval_dir);
	if (!artifact) {
		err = vs_error(VS_ENOMEM, "out of memory");
		goto done;
	}
	evidence_validation(&v, &e, artifact);
	if ((err = card_set_validation(&text, &len, &c, &v)))
		goto done;
	if ((err = fs_write_atomic(card_path, text, len, 0644)))
		goto done;
	printf("%s: recorded %s (isolated speedup %.3f [%.3f, %.3f], parity %s, %s %s, %s) from %s\n", card_path,
	       v.status, e.isolated, e.isolated_lo, e.isolated_hi, e.parity, e.device_name, e.gen, e.date, artifact);
done:
	free(text);
	free(artifact);
	evidence_release(&e);
	card_release(&c);
	return err;
}

static int str_eq(const char *a, const char *b)
{
	return !strcmp(a ? a : "", b ? b : "");
}

int record_verify(const char *card_path)
{
	struct card c;
	struct evidence e;
	struct card_validation want;
	const struct card_validation *have;
	int err, status, problems = 0;

	memset(&c, 0, sizeof(c));
	memset(&e, 0, sizeof(e));
	if ((err = card_load(&c, card_path)))
		return err;
	have = &c.validation;
	if (!have->artifact || !*have->artifact) {
		if (have->status && (!strcmp(have->status, "validated") || !strcmp(have->status, "failed")))
			err = vs_error(VS_EVERIFY, "%s: validation.status is '%s' but validation.artifact is empty: "
				       "a claim without evidence", card_path, have->status);
		else
			printf("%s: %s, no evidence claimed\n", card_path, have->status ? have->status : "draft");
		goto done;
	}
	if ((err = evidence_load(&e, &status, have->artifact, &c)))
		goto done;
	evidence_validation(&want, &e, have->artifact);
#define CHECK_STR(field, key)                                                                          \
	if (!str_eq(have->field, want.field)) {                                                        \
		vs_error(VS_EVERIFY, "%s: validation." key " is '%s' but the evidence says '%s'", card_path, \
			 have->field ? have->field : "", want.field ? want.field : "");                \
		problems++;                                                                            \
	}
	CHECK_STR(status, "status");
	CHECK_STR(last_verified, "last_verified");
	CHECK_STR(gpu, "gpu");
	CHECK_STR(gen, "gen");
	CHECK_STR(measured_parity, "measured.parity");
#undef CHECK_STR
	if (have->has_isolated != want.has_isolated ||
	    (want.has_isolated && fabs(have->measured_isolated - want.measured_isolated) > 0.0005)) {
		vs_error(VS_EVERIFY, "%s: validation.measured.isolated is %g but the evidence says %.3f", card_path,
			 have->measured_isolated, want.measured_isolated);
		problems++;
	}
	if (!strcmp(want.status, "validated") && e.kernels_dirty) {
		vs_error(VS_EVERIFY, "%s: validated from a dirty build", card_path);
		problems++;
	}
	if (problems)
		err = VS_EVERIFY;
	else
		printf("%s: %s, evidence ok (%s)\n", card_path, have->status, have->artifact);
done:
	evidence_release(&e);
	card_release(&c);
	return err;
}
