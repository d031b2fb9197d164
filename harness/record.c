#include "record.h"
#include "fsutil.h"
#include "vs_error.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	if (!list_has(&c.match.gens, e.gen)) {
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
	artifact = relative_artifact(eval_dir);
	if (!artifact) {
		err = vs_oom();
		goto done;
	}
	evidence_validation(&v, &e, artifact);
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
	}
done:
	free(text);
	free(artifact);
	evidence_release(&e);
	card_release(&c);
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
		goto done;
	}
	if ((err = evidence_load(&e, &status, have->artifact, &c)))
		goto done;
	problems = evidence_check_claims(have, &e, card_path, NULL, 0);
	if (problems)
		err = VS_EVERIFY;
	else
		printf("%s: %s, evidence ok (%s)\n", card_path, have->status, have->artifact);
done:
	evidence_release(&e);
	card_release(&c);
	return err;
}
