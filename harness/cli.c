/*
 * cli.c - the command table of validate_skill. Options are declared once in `options` below; the
 * parser and --help are both driven by it. Each mode is one function; cli_main() only dispatches
 * and maps internal error codes to exit statuses (0 ok, 1 failure, 2 usage).
 */
#include "cli.h"
#include "card.h"
#include "card_cmd.h"
#include "fsutil.h"
#include "plan.h"
#include "record.h"
#include "report.h"
#include "runner.h"
#include "task.h"
#include "vs_build_info.h"
#include "vs_error.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct cli_args {
	int mode;                 /* index into `options` of the chosen mode, -1 none */
	const char *positional[256];
	int npositional;
	const char *tier, *gen, *baseline, *candidate, *task, *impl, *config, *eval_dir, *format;
	const char *tasks_dir, *results_dir, *plans_dir, *skills_dir, *run_id, *out, *build_figures;
	int threads, gpu, max_age_days;
};

enum opt_kind { OPT_MODE, OPT_STR, OPT_INT, OPT_FLAG };

struct cli_option {
	const char *name;
	enum opt_kind kind;
	const char *arg;          /* argument or positional name shown in --help */
	size_t offset;            /* field of struct cli_args (OPT_STR, OPT_INT) */
	int (*run)(const struct cli_args *a); /* OPT_MODE */
	int min_pos, max_pos;     /* OPT_MODE: positional arguments accepted */
	const char *help;
};

static int mode_static(const struct cli_args *a);
static int mode_emit_plan(const struct cli_args *a);
static int mode_materialize(const struct cli_args *a);
static int mode_run(const struct cli_args *a);
static int mode_record(const struct cli_args *a);
static int mode_report(const struct cli_args *a);
static int mode_verify(const struct cli_args *a);
static int mode_validate(const struct cli_args *a);
static int mode_gc(const struct cli_args *a);
static int mode_help(const struct cli_args *a);
static int mode_version(const struct cli_args *a);

#define F(field) offsetof(struct cli_args, field)

static const struct cli_option options[] = {
	{"--static", OPT_MODE, "CARD...", 0, mode_static, 1, 256,
	 "lint cards: front matter, schema, types, enums, body sections"},
	{"--emit-plan", OPT_MODE, "CARD", 0, mode_emit_plan, 1, 1,
	 "write plans/<id>.plan.json (tasks, implementations, gates, protocol) and print a summary"},
	{"--materialize", OPT_MODE, "PLAN", 0, mode_materialize, 1, 1,
	 "write the plan's task dirs (inputs + oracle reference outputs, sha256-checked)"},
	{"--run", OPT_MODE, "PLAN", 0, mode_run, 1, 1,
	 "isolated A/B of baseline vs candidate on every task: parity first, then timing"},
	{"--record", OPT_MODE, "CARD", 0, mode_record, 1, 1,
	 "verify an eval dir (--eval-dir, default: the card's latest) and write its status into the card"},
	{"--report", OPT_MODE, "", 0, mode_report, 0, 0, "status of every card in skills/, checked against evidence"},
	{"--verify", OPT_MODE, "CARD...", 0, mode_verify, 1, 256, "re-check recorded cards against their evidence"},
	{"--validate", OPT_MODE, "CARD", 0, mode_validate, 1, 1,
	 "the main job: --emit-plan, --run (materializing tasks), --record, in one go"},
	{"--gc", OPT_MODE, "", 0, mode_gc, 0, 0,
	 "remove task dirs that no plan in plans/ uses, and temporaries left by interrupted writes"},
	{"--help", OPT_MODE, "", 0, mode_help, 0, 0, "this text"},
	{"--version", OPT_MODE, "", 0, mode_version, 0, 0, "tool version and kernel identity"},
	{"--tier", OPT_STR, "smoke|standard|full", F(tier), NULL, 0, 0, "task grid of --emit-plan (default smoke)"},
	{"--gen", OPT_STR, "GEN", F(gen), NULL, 0, 0, "target generation (default: the card's first gens entry)"},
	{"--baseline", OPT_STR, "IMPL", F(baseline), NULL, 0, 0, "baseline implementation (default match.from_backend)"},
	{"--candidate", OPT_STR, "IMPL", F(candidate), NULL, 0, 0, "candidate implementation (default match.to_backend)"},
	{"--task", OPT_STR, "NAME|HASH", F(task), NULL, 0, 0, "only tasks whose name contains this or hash starts with it"},
	{"--impl", OPT_STR, "IMPL", F(impl), NULL, 0, 0, "parity of this implementation only (no timing)"},
	{"--config", OPT_STR, "CONFIG", F(config), NULL, 0, 0, "only this candidate config"},
	{"--eval-dir", OPT_STR, "DIR", F(eval_dir), NULL, 0, 0, "eval dir for --record"},
	{"--format", OPT_STR, "text|markdown|json", F(format), NULL, 0, 0, "report format (default text)"},
	{"--out", OPT_STR, "FILE", F(out), NULL, 0, 0, "output file of --emit-plan / --report"},
	{"--tasks-dir", OPT_STR, "DIR", F(tasks_dir), NULL, 0, 0, "task dirs root (default tasks)"},
	{"--results-dir", OPT_STR, "DIR", F(results_dir), NULL, 0, 0, "eval dirs root (default results)"},
	{"--plans-dir", OPT_STR, "DIR", F(plans_dir), NULL, 0, 0, "plans directory (default plans)"},
	{"--skills-dir", OPT_STR, "DIR", F(skills_dir), NULL, 0, 0, "cards directory for --report (default skills)"},
	{"--build-figures", OPT_STR, "FILE", F(build_figures), NULL, 0, 0,
	 "gfx942 gate output (default <build>/gfx942/resources.json)"},
	{"--run-id", OPT_STR, "ID", F(run_id), NULL, 0, 0, "name of the eval dir (default UTC time + generation)"},
	{"--threads", OPT_INT, "N", F(threads), NULL, 0, 0, "threads for the oracle and generator (default: all cores)"},
	{"--gpu", OPT_INT, "N", F(gpu), NULL, 0, 0, "GPU ordinal (default 0)"},
	{"--max-age-days", OPT_INT, "N", F(max_age_days), NULL, 0, 0, "evidence older than this is stale (default 90)"},
};

#define NOPTIONS ((int)(sizeof(options) / sizeof(options[0])))

static int exit_status(int err)
{
	if (err == 0)
		return 0;
	return err == VS_EUSAGE ? 2 : 1;
}

static int usage_error(const char *fmt, const char *arg)
{
	vs_error(VS_EUSAGE, fmt, arg);
	fprintf(stderr, "run 'validate_skill --help' for the modes and options\n");
	return VS_EUSAGE;
}

static int parse(struct cli_args *a, int argc, char **argv)
{
	memset(a, 0, sizeof(*a));
	a->mode = -1;
	for (int i = 1; i < argc; i++) {
		const char *arg = argv[i], *val = NULL, *eq;
		int k;
		size_t nlen;

		if (strncmp(arg, "--", 2)) {
			if (a->npositional >= 256)
				return usage_error("too many arguments ('%s')", arg);
			a->positional[a->npositional++] = arg;
			continue;
		}
		eq = strchr(arg, '=');
		nlen = eq ? (size_t)(eq - arg) : strlen(arg);
		for (k = 0; k < NOPTIONS; k++)
			if (strlen(options[k].name) == nlen && !strncmp(options[k].name, arg, nlen))
				break;
		if (k == NOPTIONS)
			return usage_error("unknown option '%s'", arg);
		if (options[k].kind == OPT_MODE) {
			if (a->mode >= 0 && a->mode != k)
				return usage_error("only one mode at a time ('%s' and another)", arg);
			a->mode = k;
			continue;
		}
		if (options[k].kind == OPT_STR || options[k].kind == OPT_INT) {
			if (eq)
				val = eq + 1;
			else if (i + 1 < argc)
				val = argv[++i];
			else
				return usage_error("option '%s' needs a value", arg);
			if (options[k].kind == OPT_STR) {
				*(const char **)((char *)a + options[k].offset) = val;
			} else {
				char *end;
				long v = strtol(val, &end, 10);

				if (*val == '\0' || *end != '\0' || v < 0 || v > 1000000)
					return usage_error("option needs a non-negative integer, got '%s'", val);
				*(int *)((char *)a + options[k].offset) = (int)v;
			}
		}
	}
	if (a->mode < 0)
		return usage_error("no mode given%s", "");
	if (a->npositional < options[a->mode].min_pos || a->npositional > options[a->mode].max_pos) {
		char msg[128];

		snprintf(msg, sizeof(msg), "%s takes %s", options[a->mode].name,
			 *options[a->mode].arg ? options[a->mode].arg : "no arguments");
		return usage_error("%s", msg);
	}
	return 0;
}

static int mode_help(const struct cli_args *a)
{
	(void)a;
	printf("usage: validate_skill MODE [ARGS] [OPTIONS]\n\n"
	       "Validates kernel skill cards by measurement: card -> plan -> task dirs -> A/B run -> record.\n"
	       "Run from the repository root (skills/, plans/, tasks/, results/ are relative to it).\n\nmodes:\n");
	for (int k = 0; k < NOPTIONS; k++)
		if (options[k].kind == OPT_MODE)
			printf("  %-14s %-10s %s\n", options[k].name, options[k].arg, options[k].help);
	printf("\noptions:\n");
	for (int k = 0; k < NOPTIONS; k++)
		if (options[k].kind != OPT_MODE)
			printf("  %-14s %-20s %s\n", options[k].name, options[k].arg, options[k].help);
	printf("\nexit status: 0 ok, 1 failure (bad input, failed check), 2 usage error\n");
	return 0;
}

static int mode_version(const struct cli_args *a)
{
	(void)a;
	printf("validate_skill %s (git %s, kernels tree %s%s, GPU backend %s)\n", VS_TOOL_VERSION, VS_GIT_HEAD,
	       VS_KERNELS_TREE, VS_KERNELS_DIRTY ? " dirty" : "", VS_GPU_BUILD);
	return 0;
}

static int mode_static(const struct cli_args *a)
{
	int worst = 0;

	for (int i = 0; i < a->npositional; i++) {
		int err = card_check_file(a->positional[i]);

		if (err)
			worst = err;
		else
			printf("%s: ok\n", a->positional[i]);
	}
	return worst;
}

static char *plan_path_for(const struct cli_args *a, const char *id)
{
	if (a->out)
		return strdup(a->out);
	return fs_printf("%s/%s.plan.json", a->plans_dir ? a->plans_dir : "plans", id);
}

static int emit_plan(const struct cli_args *a, char **path_out)
{
	struct card c;
	struct plan p;
	struct plan_options po = {a->tier, a->gen, a->baseline, a->candidate, a->build_figures};
	char *path = NULL;
	int err;

	memset(&c, 0, sizeof(c));
	memset(&p, 0, sizeof(p));
	if ((err = card_load(&c, a->positional[0])) || (err = card_lint(&c)))
		goto done;
	if ((err = plan_build(&p, &c, &po)))
		goto done;
	path = plan_path_for(a, c.id);
	if (!path) {
		err = vs_error(VS_ENOMEM, "out of memory");
		goto done;
	}
	if (!a->out && (err = fs_mkdir_p(a->plans_dir ? a->plans_dir : "plans")))
		goto done;
	if ((err = plan_write(&p, path)))
		goto done;
	plan_print_summary(&p, stdout);
	printf("wrote %s\n", path);
	if (path_out) {
		*path_out = path;
		path = NULL;
	}
done:
	free(path);
	plan_release(&p);
	card_release(&c);
	return err;
}

static int mode_emit_plan(const struct cli_args *a)
{
	return emit_plan(a, NULL);
}

static int online_cores(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n > 0 ? (int)n : 1;
}

static int mode_materialize(const struct cli_args *a)
{
	struct plan p;
	int err, done = 0;
	const char *root = a->tasks_dir ? a->tasks_dir : "tasks";

	if ((err = plan_read(&p, a->positional[0])))
		return err;
	for (int i = 0; i < p.ntasks && !err; i++) {
		char *dir = NULL;

		if (a->task && !strstr(p.tasks[i].name, a->task) && strncmp(p.task_hash[i], a->task, strlen(a->task)))
			continue;
		printf("[%d/%d] %s ... ", i + 1, p.ntasks, p.tasks[i].name);
		fflush(stdout);
		err = task_materialize(&dir, root, &p.tasks[i], a->threads ? a->threads : online_cores());
		if (!err) {
			printf("%s\n", dir);
			done++;
		} else {
			printf("failed\n");
		}
		free(dir);
	}
	if (!err)
		printf("%d task dir%s ready under %s/\n", done, done == 1 ? "" : "s", root);
	plan_release(&p);
	return err;
}

static int run_plan(const struct cli_args *a, const char *plan_path, char **eval_dir)
{
	struct runner_options ro;

	memset(&ro, 0, sizeof(ro));
	ro.plan_path = plan_path;
	ro.tasks_root = a->tasks_dir;
	ro.results_root = a->results_dir;
	ro.task_filter = a->task;
	ro.impl_filter = a->impl;
	ro.config_filter = a->config;
	ro.run_id = a->run_id;
	ro.gpu_ordinal = a->gpu;
	ro.threads = a->threads ? a->threads : online_cores();
	return runner_run(eval_dir, &ro);
}

static int mode_run(const struct cli_args *a)
{
	char *eval_dir = NULL;
	int err = run_plan(a, a->positional[0], &eval_dir);

	free(eval_dir);
	return err;
}

/* The newest eval dir of a card: results/<id>/<run id> with the greatest name (UTC time sorts). */
static char *latest_eval_dir(const struct cli_args *a, const char *card_path)
{
	struct card c;
	char *base = NULL, *best = NULL, *out = NULL;
	DIR *d;
	struct dirent *de;

	memset(&c, 0, sizeof(c));
	if (card_load(&c, card_path))
		return NULL;
	base = fs_printf("%s/%s", a->results_dir ? a->results_dir : "results", c.id);
	d = base ? opendir(base) : NULL;
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (!best || strcmp(de->d_name, best) > 0) {
			free(best);
			best = strdup(de->d_name);
		}
	}
	if (d)
		closedir(d);
	if (best)
		out = fs_join(base, best);
	else
		vs_error(VS_ENOTFOUND, "no eval dir under '%s': run the card's plan first, or pass --eval-dir",
			 base ? base : "results");
	free(best);
	free(base);
	card_release(&c);
	return out;
}

static int mode_record(const struct cli_args *a)
{
	char *dir = a->eval_dir ? strdup(a->eval_dir) : latest_eval_dir(a, a->positional[0]);
	int err;

	if (!dir)
		return VS_ENOTFOUND;
	err = record_card(a->positional[0], dir);
	free(dir);
	return err;
}

static int mode_report(const struct cli_args *a)
{
	struct report_options ro = {a->skills_dir, a->plans_dir, a->format, a->max_age_days, NULL};
	FILE *f = NULL;
	int err;

	if (a->out) {
		f = fopen(a->out, "w");
		if (!f)
			return vs_error(VS_EIO, "cannot write '%s'", a->out);
		ro.out = f;
	}
	err = report_run(&ro);
	if (f)
		fclose(f);
	return err;
}

static int mode_verify(const struct cli_args *a)
{
	int worst = 0;

	for (int i = 0; i < a->npositional; i++) {
		int err = record_verify(a->positional[i]);

		if (err)
			worst = err;
	}
	return worst;
}

static int mode_validate(const struct cli_args *a)
{
	char *plan = NULL, *eval_dir = NULL;
	int err;

	if ((err = emit_plan(a, &plan)))
		return err;
	err = run_plan(a, plan, &eval_dir);
	if (!err)
		err = record_card(a->positional[0], eval_dir);
	free(plan);
	free(eval_dir);
	return err;
}

/*
 * Whether name is a temporary left by an interrupted write whose process is gone:
 * "<file>.tmp.<pid>" (fs_write_atomic) or ".<task hash>.tmp.<pid>" (a task dir being materialized).
 */
static int stale_temporary(const char *name)
{
	const char *t = NULL, *p = name;
	char *end;
	long pid;

	while ((p = strstr(p, ".tmp.")))
		t = p++;
	if (!t || t == name)
		return 0;
	errno = 0;
	pid = strtol(t + 5, &end, 10);
	if (end == t + 5 || *end || errno || pid <= 0)
		return 0;
	return kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Remove the stale temporaries in dir and, depth levels down, in its subdirectories. */
static int gc_temporaries(const char *dir, int depth, int *removed)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int err = 0;

	while (d && !err && (de = readdir(d))) {
		char *path;

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		path = fs_join(dir, de->d_name);
		if (!path) {
			err = vs_error(VS_ENOMEM, "out of memory");
			break;
		}
		if (stale_temporary(de->d_name)) {
			err = fs_remove_tree(path);
			if (!err) {
				printf("removed %s (left by an interrupted write)\n", path);
				(*removed)++;
			}
		} else if (depth > 0 && !fs_is_link(path) && fs_is_dir(path)) {
			err = gc_temporaries(path, depth - 1, removed);
		}
		free(path);
	}
	if (d)
		closedir(d);
	return err;
}

static int mode_gc(const struct cli_args *a)
{
	const char *plans_dir = a->plans_dir ? a->plans_dir : "plans";
	const char *tasks_root = a->tasks_dir ? a->tasks_dir : "tasks";
	char **keep = NULL, *opdir = NULL;
	int nkeep = 0, removed = 0, temporaries = 0, err = 0;
	DIR *d = opendir(plans_dir);
	struct dirent *de;

	while (d && (de = readdir(d)) && !err) {
		size_t n = strlen(de->d_name);
		struct plan p;
		char *path;

		if (n < 11 || strcmp(de->d_name + n - 10, ".plan.json"))
			continue;
		path = fs_join(plans_dir, de->d_name);
		err = path ? plan_read(&p, path) : VS_ENOMEM;
		free(path);
		if (err)
			break;
		for (int i = 0; i < p.ntasks; i++) {
			char **nk = realloc(keep, (size_t)(nkeep + 1) * sizeof(*keep));

			if (!nk) {
				err = vs_error(VS_ENOMEM, "out of memory");
				break;
			}
			keep = nk;
			keep[nkeep++] = strdup(p.task_hash[i]);
		}
		plan_release(&p);
	}
	if (d)
		closedir(d);
	if (err)
		goto done;
	opdir = fs_join(tasks_root, "mla_decode");
	d = opdir ? opendir(opdir) : NULL;
	while (d && (de = readdir(d)) && !err) {
		int used = 0;
		char *victim;

		if (de->d_name[0] == '.')
			continue; /* temporaries: below */
		for (int i = 0; i < nkeep; i++)
			used |= !strcmp(keep[i], de->d_name);
		if (used)
			continue;
		victim = fs_join(opdir, de->d_name);
		err = victim ? fs_remove_tree(victim) : VS_ENOMEM;
		if (!err) {
			printf("removed %s\n", victim);
			removed++;
		}
		free(victim);
	}
	if (d)
		closedir(d);
	if (!err && opdir)
		err = gc_temporaries(opdir, 0, &temporaries);
	if (!err)
		err = gc_temporaries(a->skills_dir ? a->skills_dir : "skills", 0, &temporaries);
	if (!err)
		err = gc_temporaries(plans_dir, 0, &temporaries);
	if (!err)
		err = gc_temporaries(a->results_dir ? a->results_dir : "results", 3, &temporaries);
	if (!err)
		printf("%d task dir%s removed; %d in use by plans in %s/; %d temporar%s of interrupted writes removed\n",
		       removed, removed == 1 ? "" : "s", nkeep, plans_dir, temporaries, temporaries == 1 ? "y" : "ies");
done:
	for (int i = 0; i < nkeep; i++)
		free(keep[i]);
	free(keep);
	free(opdir);
	return err;
}

int cli_main(int argc, char **argv)
{
	struct cli_args a;
	int err = parse(&a, argc, argv);

	if (err)
		return exit_status(err);
	return exit_status(options[a.mode].run(&a));
}
