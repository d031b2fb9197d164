#include "record.h"
#include "fsutil.h"
#include "vs_error.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

static void run_brief(char *buf, size_t cap, const struct evaldir_run *r)
{
	if (r->has_isolated)
		snprintf(buf, cap, "%s, %.3f [%.3f, %.3f]", r->verdict, r->isolated, r->isolated_lo, r->isolated_hi);
	else
		snprintf(buf, cap, "%s, no speedup", r->verdict);
}

/*
 * Which run is recorded (docs/DESIGN.md "Which run a card records"): list the card's complete runs
 * on the same device, generation and implementations as eval_dir's, of a tier plan as it is (a
 * workload plan's runs measure other tasks, and are recorded apart), the one recorded marked; say
 * when another disagrees in verdict or its CI does not overlap; refuse a run older than one of them
 * unless older (then *over says which newer run it was recorded over); *spread the range of their
 * speedups when there are several. Returns 0, or VS_EVERIFY (an older run without older).
 */
static int record_which_run(char *spread, size_t scap, char *over, size_t ocap, const struct evidence *e,
			    const char *eval_dir, int older)
{
	struct evaldir_run *runs = NULL;
	char *card_dir = fs_dirname(eval_dir), *self = realpath(eval_dir, NULL), brief[128];
	int n = 0, err, me = -1, nsame = 0, newer = -1;
	double lo = 0, hi = 0;

	spread[0] = over[0] = '\0';
	if (!card_dir || !self) {
		free(card_dir);
		free(self);
		return self ? vs_oom() : vs_error(VS_EIO, "%s: cannot resolve the eval dir", eval_dir);
	}
	if ((err = evaldir_runs(&runs, &n, card_dir)))
		goto done;
	for (int i = 0; i < n; i++) {
		char *real = realpath(runs[i].dir, NULL);

		if (real && !strcmp(real, self))
			me = i;
		free(real);
	}
	for (int i = 0; i < n; i++) {
		const struct evaldir_run *r = &runs[i];

		if (strcmp(r->device, e->device_name) || strcmp(r->gen, e->gen) || strcmp(r->baseline, e->baseline) ||
		    strcmp(r->candidate, e->candidate) || *r->workload)
			continue;
		if (!nsame++)
			printf("complete runs of %s -> %s on %s (%s), newest first:\n", e->baseline, e->candidate,
			       e->device_name, e->gen);
		run_brief(brief, sizeof(brief), r);
		printf("  %s %s  %s\n", i == me ? "*" : " ", r->name, brief);
		if (r->has_isolated) {
			lo = nsame == 1 || r->isolated < lo ? r->isolated : lo;
			hi = nsame == 1 || r->isolated > hi ? r->isolated : hi;
		}
		if (me >= 0 && i < me && newer < 0)
			newer = i;
		if (me >= 0 && i != me) {
			const struct evaldir_run *m = &runs[me];

			if (strcmp(r->verdict, m->verdict))
				vs_warn("%s: run %s says %s, the run recorded %s", card_dir, r->name, r->verdict,
					m->verdict);
			else if (r->has_isolated && m->has_isolated &&
				 (r->isolated_hi < m->isolated_lo || r->isolated_lo > m->isolated_hi))
				vs_warn("%s: the speedup CI of run %s, [%.3f, %.3f], does not overlap the recorded "
					"run's, "
					"[%.3f, %.3f]: the within-run CI does not describe the spread across runs",
					card_dir, r->name, r->isolated_lo, r->isolated_hi, m->isolated_lo,
					m->isolated_hi);
		}
	}
	if (nsame > 1 && hi > 0)
		snprintf(spread, scap, "%.3f-%.3f over %d runs", lo, hi, nsame);
	if (newer >= 0) {
		run_brief(brief, sizeof(brief), &runs[newer]);
		if (!older) {
			err = vs_error(VS_EVERIFY,
				       "%s is older than %s (%s) of the same card, device and implementations: record "
				       "the newest, or pass --older to record this one over it (the card then says so)",
				       eval_dir, runs[newer].dir, brief);
			goto done;
		}
		snprintf(over, ocap, "%s: %s", runs[newer].name, brief);
	}
done:
	evaldir_runs_free(runs, n);
	free(card_dir);
	free(self);
	return err;
}

/*
 * A workload plan's run: its verdict is the card's for that deployment, recorded as
 * validation.workloads.<workload>@<gen>; the card must claim the workload (expects.workloads), a
 * claim written before the run like every threshold.
 */
static int record_workload(const char *card_path, const struct card *c, const struct evidence *e, const char *eval_dir)
{
	struct card_workload_record r;
	char key[256], *text = NULL, *artifact;
	size_t len;
	int err;

	if (!card_list_has(&c->expects.workloads, e->workload))
		return vs_error(VS_EVERIFY,
				"%s: a run of workload '%s', which %s does not claim for: list it in "
				"expects.workloads (then emit the plan and run again: the claim comes before the run)",
				eval_dir, e->workload, card_path);
	if (!(artifact = relative_artifact(eval_dir)))
		return vs_oom();
	evidence_workload_record(&r, key, sizeof(key), e, artifact);
	if (!(err = card_set_workload_record(&text, &len, c, &r)) &&
	    !(err = fs_write_atomic(card_path, text, len, 0644))) {
		char sp[640] = "n/a (no task timed with passing parity)";

		if (r.has_speedup)
			snprintf(sp, sizeof(sp), "%.3f [%.3f, %.3f]", e->workload_speedup, e->workload_lo,
				 e->workload_hi);
		/* several kv dtypes: each one's speedup (the gate), the figure above their mix */
		for (int k = 0; r.has_speedup && k < e->nkv; k++)
			snprintf(sp + strlen(sp), sizeof(sp) - strlen(sp), "%s%s %.3f [%.3f, %.3f]%s",
				 k ? ", " : " (its kv dtypes mixed; each gated: ", e->kv[k].kv_dtype, e->kv[k].speedup,
				 e->kv[k].lo, e->kv[k].hi, k + 1 == e->nkv ? ")" : "");
		printf("%s: recorded %s for workload %s on %s (workload speedup %s, geomean %.3f beside it, parity "
		       "%s, %s, %s) from %s (validation.workloads.%s)\n",
		       card_path, r.status, e->workload, e->gen, sp, e->isolated, e->parity ? e->parity : "n/a",
		       e->device_name, e->date, artifact, key);
	}
	free(text);
	free(artifact);
	return err;
}

int record_card(const char *card_path, const char *eval_dir)
{
	return record_card_run(card_path, eval_dir, 0);
}

int record_card_run(const char *card_path, const char *eval_dir, int older)
{
	struct card c;
	struct evidence e;
	struct card_validation v;
	char *text = NULL, *artifact = NULL, spread[96], over[256];
	size_t len;
	int err, status;

	memset(&c, 0, sizeof(c));
	memset(&e, 0, sizeof(e));
	if ((err = card_load(&c, card_path)))
		return err;
	if (fs_is_link(card_path)) {
		err = vs_error(VS_EVERIFY,
			       "card '%s' is a symlink: recording replaces the file and would turn the "
			       "link into a copy; record the file it points to",
			       card_path);
		goto done;
	}
	if ((err = evidence_load(&e, &status, eval_dir, &c)))
		goto done;
	if (e.partial) {
		err = vs_error(VS_EVERIFY,
			       "%s: a filtered (--task/--impl/--config) run is partial evidence and "
			       "cannot be recorded: run the whole plan",
			       eval_dir);
		goto done;
	}
	if (!card_list_has(&c.match.gens, e.gen)) {
		err = vs_error(VS_EVERIFY,
			       "%s: measured on '%s' (%s), which is not in %s's match.gens: this evidence "
			       "cannot speak for the card",
			       eval_dir, e.gen, e.device_name, card_path);
		goto done;
	}
	if (e.kernels_dirty) {
		err = vs_error(VS_EVERIFY,
			       "%s: the binary that ran was built from uncommitted kernels/ sources "
			       "(kernels tree %s, dirty): commit, rebuild and run again before recording",
			       eval_dir, e.kernels_tree);
		goto done;
	}
	if (e.workload) {
		err = record_workload(card_path, &c, &e, eval_dir);
		goto done;
	}
	if ((err = record_which_run(spread, sizeof(spread), over, sizeof(over), &e, eval_dir, older)))
		goto done;
	artifact = relative_artifact(eval_dir);
	if (!artifact) {
		err = vs_oom();
		goto done;
	}
	evidence_validation(&v, &e, artifact);
	v.spread = spread;
	v.recorded_over = over;
	if ((err = card_set_validation(&text, &len, &c, &v)))
		goto done;
	if ((err = fs_write_atomic(card_path, text, len, 0644)))
		goto done;
	{
		char iso[96] = "n/a (no task timed with passing parity)";

		if (e.has_isolated)
			snprintf(iso, sizeof(iso), "%.3f [%.3f, %.3f]", e.isolated, e.isolated_lo, e.isolated_hi);
		char e2e[96] = "";

		if (e.has_e2e)
			snprintf(e2e, sizeof(e2e), ", e2e %.2f%% [%.2f, %.2f]", e.e2e_pct, e.e2e_lo, e.e2e_hi);
		printf("%s: recorded %s (isolated speedup %s%s, parity %s, %s %s, %s) from %s\n", card_path, v.status,
		       iso, e2e, e.parity ? e.parity : "n/a", e.device_name, e.gen, e.date, artifact);
		if (*spread)
			printf("%s: across runs the speedup spans %s (validation.measured.spread)\n", card_path,
			       spread);
		if (*over)
			printf("%s: recorded over the newer run %s (validation.recorded_over)\n", card_path, over);
	}
done:
	free(text);
	free(artifact);
	evidence_release(&e);
	card_release(&c);
	return err;
}

/* --verify of each validation.workloads record: its evidence verifies and proves what it says. */
static int verify_workloads(const struct card *c, const char *card_path)
{
	int err = 0;

	for (int i = 0; i < c->validation.nworkloads; i++) {
		const struct card_workload_record *r = &c->validation.workloads[i];
		struct evidence e;
		int status, e1;

		memset(&e, 0, sizeof(e));
		if (!r->artifact || !*r->artifact) {
			e1 = vs_error(VS_EVERIFY,
				      "%s: validation.workloads.%s is '%s' without an artifact: a claim "
				      "without evidence",
				      card_path, r->key, r->status);
		} else if (!(e1 = evidence_load(&e, &status, r->artifact, c))) {
			if (evidence_check_workload_claims(r, &e, card_path, NULL, 0))
				e1 = VS_EVERIFY;
			else
				printf("%s: workload %s on %s: %s, evidence ok (%s)\n", card_path, r->workload, r->gen,
				       r->status, r->artifact);
		}
		evidence_release(&e);
		if (e1 && !err)
			err = e1;
	}
	return err;
}

int record_verify(const char *card_path)
{
	struct card c;
	struct evidence e;
	const struct card_validation *have;
	int err, status, problems = 0;

	memset(&c, 0, sizeof(c));
	memset(&e, 0, sizeof(e));
	if ((err = card_load(&c, card_path)))
		return err;
	have = &c.validation;
	if (have->typed) {
		err = vs_error(VS_EVERIFY,
			       "%s: validation: a typed block (%s): status '%s' claimed without evidence this tool "
			       "can check; re-measure and --record it",
			       card_path, have->typed_why, have->status);
		goto done;
	}
	if (!have->artifact || !*have->artifact) {
		if (have->status && (!strcmp(have->status, "validated") || !strcmp(have->status, "failed")))
			err = vs_error(VS_EVERIFY,
				       "%s: validation.status is '%s' but validation.artifact is empty: "
				       "a claim without evidence",
				       card_path, have->status);
		else
			printf("%s: %s, no evidence claimed\n", card_path, have->status ? have->status : "draft");
		if (!err)
			err = verify_workloads(&c, card_path);
		goto done;
	}
	if ((err = evidence_load(&e, &status, have->artifact, &c)))
		goto done;
	problems = evidence_check_claims(have, &e, card_path, NULL, 0);
	if (problems)
		err = VS_EVERIFY;
	else
		printf("%s: %s, evidence ok (%s)\n", card_path, have->status, have->artifact);
	if (!err)
		err = verify_workloads(&c, card_path);
done:
	evidence_release(&e);
	card_release(&c);
	return err;
}
