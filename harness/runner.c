#include "runner.h"
#include "measure.h"
#include "fsutil.h"
#include "gpu_clocks.h"
#include "mla_numeric.h"
#include "parity.h"
#include "plugin.h"
#include "progress.h"
#include "vs_build_info.h"
#include "vs_error.h"
#include "worker.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- result.json ------------------------------------------------------------------------ */

static cJSON *impl_json(const struct measure_impl *ir, const struct measure_result *r, int timed)
{
	cJSON *j = cJSON_CreateObject(), *cfgs, *tm;

	cJSON_AddStringToObject(j, "impl", ir->impl->name);
	if (ir->chosen >= 0)
		cJSON_AddStringToObject(j, "chosen", ir->configs[ir->chosen].name);
	else
		cJSON_AddNullToObject(j, "chosen");
	cfgs = cJSON_AddArrayToObject(j, "configs");
	for (int i = 0; i < ir->nconfigs; i++) {
		cJSON *c = cJSON_CreateObject();

		cJSON_AddStringToObject(c, "name", ir->configs[i].name);
		cJSON_AddStringToObject(c, "parity", ir->config_pass[i] == 1 ? "pass" :
					ir->config_pass[i] == 0 ? "fail" : "not run");
		if (ir->config_detail[i])
			cJSON_AddStringToObject(c, "detail", ir->config_detail[i]);
		if (ir->tune_ms[i] > 0)
			cJSON_AddNumberToObject(c, "tune_median_ms", ir->tune_ms[i]);
		cJSON_AddItemToArray(cfgs, c);
	}
	cJSON_AddStringToObject(j, "capture", ir->capture == 1 ? "pass" : ir->capture == 0 ? "fail" : "n/a");
	if (ir->capture_detail)
		cJSON_AddStringToObject(j, "capture_detail", ir->capture_detail);
	if (timed) {
		double sec = ir->timing.median * 1e-3;

		tm = cJSON_AddObjectToObject(j, "timing");
		cJSON_AddNumberToObject(tm, "n", ir->timing.n);
		cJSON_AddNumberToObject(tm, "median_ms", ir->timing.median);
		cJSON_AddNumberToObject(tm, "p10_ms", ir->timing.p10);
		cJSON_AddNumberToObject(tm, "p90_ms", ir->timing.p90);
		cJSON_AddNumberToObject(tm, "mean_ms", ir->timing.mean);
		cJSON_AddNumberToObject(tm, "min_ms", ir->timing.min);
		cJSON_AddNumberToObject(tm, "max_ms", ir->timing.max);
		cJSON_AddNumberToObject(tm, "gbps", r->bytes / sec / 1e9);
		cJSON_AddNumberToObject(tm, "tflops", r->flops / sec / 1e12);
		cJSON_AddNumberToObject(tm, "outliers", ir->outliers);
	}
	return j;
}

static cJSON *ci_json(const struct stats_ci *ci)
{
	cJSON *j = cJSON_CreateObject(), *arr = cJSON_CreateArray();

	cJSON_AddNumberToObject(j, "estimate", ci->estimate);
	cJSON_AddItemToArray(arr, cJSON_CreateNumber(ci->lo));
	cJSON_AddItemToArray(arr, cJSON_CreateNumber(ci->hi));
	cJSON_AddItemToObject(j, "ci95", arr);
	cJSON_AddNumberToObject(j, "n", ci->n);
	return j;
}

static cJSON *task_json(const struct measure_result *r, const struct plan *p, cJSON *flags)
{
	cJSON *j = cJSON_CreateObject();

	cJSON_AddStringToObject(j, "name", r->name);
	cJSON_AddStringToObject(j, "hash", r->hash);
	cJSON_AddNumberToObject(j, "bytes", r->bytes);
	cJSON_AddNumberToObject(j, "flops", r->flops);
	cJSON_AddBoolToObject(j, "complete", r->complete);
	cJSON_AddStringToObject(j, "parity", r->parity_pass ? "pass" : "fail");
	if (r->error)
		cJSON_AddStringToObject(j, "error", r->error);
	cJSON_AddItemToObject(j, "baseline", impl_json(&r->base, r, r->complete));
	cJSON_AddItemToObject(j, "candidate", impl_json(&r->cand, r, r->complete));
	if (r->complete) {
		cJSON_AddNumberToObject(j, "pairs", r->npairs);
		cJSON_AddStringToObject(j, "stop", stats_stop_reason_name(r->stop_reason));
		cJSON_AddItemToObject(j, "speedup", ci_json(&r->speedup));
		if (r->speedup.estimate > p->protocol.review_bound) {
			char *msg = fs_printf("task %s: speedup %.2fx is above the review bound %.0fx: check that "
					      "the baseline is sound before trusting it", r->name,
					      r->speedup.estimate, p->protocol.review_bound);

			cJSON_AddItemToArray(flags, cJSON_CreateString(msg));
			free(msg);
		}
		if (r->sm_mhz_begin > 0 && r->sm_mhz_end > 0 &&
		    fabs((double)r->sm_mhz_end - r->sm_mhz_begin) > 0.05 * r->sm_mhz_begin) {
			char *msg = fs_printf("task %s: SM clock moved from %d to %d MHz during sampling "
					      "(throttling or boost change)", r->name, r->sm_mhz_begin, r->sm_mhz_end);

			cJSON_AddItemToArray(flags, cJSON_CreateString(msg));
			free(msg);
		}
		if ((r->throttle_begin | r->throttle_end) & VS_THROTTLE_ANY) {
			char *msg = fs_printf("task %s: GPU clocks were held down during sampling (%s)", r->name,
					      vs_gpu_throttle_text((r->throttle_begin | r->throttle_end) & VS_THROTTLE_ANY));

			cJSON_AddItemToArray(flags, cJSON_CreateString(msg));
			free(msg);
		}
	}
	cJSON_AddNumberToObject(j, "timed_checks", r->timed_checks);
	cJSON_AddNumberToObject(j, "timed_check_failures", r->timed_check_failures);
	if (r->sm_mhz_begin > 0) {
		cJSON *c = cJSON_AddObjectToObject(j, "sm_clock_mhz");

		cJSON_AddNumberToObject(c, "begin", r->sm_mhz_begin);
		cJSON_AddNumberToObject(c, "end", r->sm_mhz_end);
		cJSON_AddNumberToObject(c, "throttle_reasons_begin", (double)r->throttle_begin);
		cJSON_AddNumberToObject(c, "throttle_reasons_end", (double)r->throttle_end);
	}
	return j;
}

static cJSON *device_json(const struct vs_device_info *i)
{
	cJSON *j = cJSON_CreateObject();

	cJSON_AddStringToObject(j, "backend", i->backend);
	cJSON_AddStringToObject(j, "name", i->name);
	cJSON_AddStringToObject(j, "gen", i->arch);
	cJSON_AddStringToObject(j, "driver", i->driver);
	cJSON_AddNumberToObject(j, "compute_units", i->compute_units);
	cJSON_AddNumberToObject(j, "clock_mhz", i->clock_mhz);
	cJSON_AddNumberToObject(j, "mem_clock_mhz", i->mem_clock_mhz);
	cJSON_AddNumberToObject(j, "llc_bytes", (double)i->llc_bytes);
	cJSON_AddNumberToObject(j, "mem_bytes", (double)i->mem_bytes);
	return j;
}

static void utc_stamp(char *out, size_t cap, const char *fmt)
{
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(out, cap, fmt, &tm);
}

static int task_matches(const struct task_spec *s, const char *hash, const char *filter)
{
	return !filter || strstr(s->name, filter) || !strncmp(hash, filter, strlen(filter));
}

struct run_state {
	char *eval_dir;
	char *samples_buf;
	size_t samples_len;
	FILE *samples;
	char *log_buf;
	size_t log_len;
	FILE *log;
	cJSON *root, *tasks, *flags, *manifests;
};

static int make_eval_dir(char **out, const struct runner_options *o, const struct plan *p,
			 const struct vs_device_info *info)
{
	char stamp[32], *dir = NULL, *base = NULL;
	const char *root = o->results_root ? o->results_root : "results";
	int err;

	utc_stamp(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ");
	if (o->has_part) {
		/* A part of a run spread over a cluster: results/<card>/.parts/<run id>/<task index>. */
		base = fs_printf("%s/%s/.parts/%s", root, p->card_id, o->run_id);
		dir = base ? fs_printf("%s/%04d", base, o->part_index) : NULL;
		if (!base || !dir) {
			err = vs_error(VS_ENOMEM, "out of memory");
			goto done;
		}
		if (fs_exists(dir) && (err = fs_remove_tree(dir))) /* a requeued array task runs again */
			goto done;
		err = fs_mkdir_p(dir);
		goto manifests;
	}
	base = fs_printf("%s/%s", root, p->card_id);
	if (!base)
		return vs_error(VS_ENOMEM, "out of memory");
	if ((err = fs_mkdir_p(base)))
		goto done;
	for (int k = 1; k < 1000; k++) {
		free(dir);
		if (o->run_id)
			dir = k == 1 ? fs_printf("%s/%s", base, o->run_id) : fs_printf("%s/%s-%d", base, o->run_id, k);
		else
			dir = k == 1 ? fs_printf("%s/%s-%s", base, stamp, info->arch) :
				       fs_printf("%s/%s-%s-%d", base, stamp, info->arch, k);
		if (!dir) {
			err = vs_error(VS_ENOMEM, "out of memory");
			goto done;
		}
		if (!fs_exists(dir))
			break;
	}
	err = fs_mkdir_p(dir);
manifests:
	if (!err) {
		char *m = fs_join(dir, "manifests");

		err = m ? fs_mkdir_p(m) : vs_error(VS_ENOMEM, "out of memory");
		free(m);
	}
done:
	free(base);
	if (err) {
		free(dir);
		return err;
	}
	*out = dir;
	return 0;
}

static void print_table_header(FILE *log)
{
	fprintf(log, "\n%-34s %10s %10s  %-22s %8s %8s %7s\n", "task", "base ms", "cand ms", "speedup [95% CI]",
	    "GB/s", "TFLOPS", "parity");
}

static void print_table_row(FILE *log, const struct measure_result *r)
{
	if (!r->complete) {
		fprintf(log, "%-34s %10s %10s  %-22s %8s %8s %7s%s%s\n", r->name, "-", "-", "-", "-", "-",
		    r->parity_pass ? "pass" : "FAIL", r->error ? "  error: " : "", r->error ? r->error : "");
		return;
	}
	{
		char ci[64];
		double sec = r->cand.timing.median * 1e-3;

		snprintf(ci, sizeof(ci), "%.3f [%.3f, %.3f]", r->speedup.estimate, r->speedup.lo, r->speedup.hi);
		fprintf(log, "%-34s %10.4f %10.4f  %-22s %8.1f %8.2f %7s\n", r->name, r->base.timing.median,
		    r->cand.timing.median, ci, r->bytes / sec / 1e9, r->flops / sec / 1e12,
		    r->parity_pass ? "pass" : "FAIL");
	}
}

/* The one line a finished task gets on stdout. */
static void task_line(struct progress *pg, int i, int n, const struct measure_result *r)
{
	if (r->error)
		progress_line(pg, "[%d/%d] %s: FAILED: %s", i + 1, n, r->name, r->error);
	else if (!r->complete)
		progress_line(pg, "[%d/%d] %s: parity %s, not timed", i + 1, n, r->name, r->parity_pass ? "pass" :
			      "FAIL (details in run.log)");
	else
		progress_line(pg, "[%d/%d] %s: speedup %.3f [%.3f, %.3f], base %.4f ms, cand %.4f ms, parity %s",
			      i + 1, n, r->name, r->speedup.estimate, r->speedup.lo, r->speedup.hi,
			      r->base.timing.median, r->cand.timing.median, r->parity_pass ? "pass" : "FAIL");
}

int runner_verdict(cJSON *root, const struct plan *p, const struct runner_task_summary *t, int n, int partial,
		   cJSON *flags, char *line, size_t cap)
{
	const double **tb = calloc((size_t)n + 1, sizeof(double *));
	const double **tc = calloc((size_t)n + 1, sizeof(double *));
	int *np = calloc((size_t)n + 1, sizeof(int));
	int gate_parity = 1, gate_capture = 1, complete_all = 1, nspeed = 0, err = 0;
	int pass_speed, pass_parity, verdict_ok;
	struct stats_ci overall = {0};
	cJSON *ov, *gates, *g;
	const char *verdict;

	if (!tb || !tc || !np) {
		err = vs_error(VS_ENOMEM, "out of memory");
		cJSON_Delete(flags);
		goto done;
	}
	for (int i = 0; i < n; i++) {
		gate_parity &= t[i].parity_pass;
		complete_all &= t[i].complete;
		if (t[i].cand_capture == 0 || t[i].base_capture == 0)
			gate_capture = 0;
		if (p->capture_required && t[i].complete && t[i].cand_capture != 1)
			gate_capture = 0;
		if (t[i].complete && t[i].parity_pass && t[i].npairs > 0) {
			tb[nspeed] = t[i].t_base;
			tc[nspeed] = t[i].t_cand;
			np[nspeed++] = t[i].npairs;
		}
	}
	if (nspeed > 0 && (err = stats_geomean_speedup(&overall, tb, tc, np, nspeed, p->protocol.resamples,
						       p->protocol.seed))) {
		cJSON_Delete(flags);
		goto done;
	}
	pass_speed = nspeed > 0 && complete_all && overall.lo >= p->speedup_min;
	pass_parity = n > 0 && gate_parity;
	verdict_ok = !partial && pass_speed && (pass_parity || !p->parity_required) &&
		     (gate_capture || !p->capture_required) && complete_all;
	verdict = verdict_ok && n == p->ntasks ? "validated" : "failed";
	ov = cJSON_AddObjectToObject(root, "overall");
	if (nspeed > 0)
		cJSON_AddItemToObject(ov, "isolated", ci_json(&overall));
	else
		cJSON_AddNullToObject(ov, "isolated");
	cJSON_AddNumberToObject(ov, "tasks_timed", nspeed);
	cJSON_AddStringToObject(ov, "parity", pass_parity ? "pass" : "fail");
	gates = cJSON_AddObjectToObject(root, "gates");
	g = cJSON_AddObjectToObject(gates, "parity");
	cJSON_AddStringToObject(g, "mode", p->parity_required ? "required" : "advisory");
	cJSON_AddBoolToObject(g, "pass", pass_parity);
	g = cJSON_AddObjectToObject(gates, "speedup");
	cJSON_AddNumberToObject(g, "isolated_speedup_min", p->speedup_min);
	cJSON_AddNumberToObject(g, "ci_lower", nspeed ? overall.lo : 0);
	cJSON_AddBoolToObject(g, "pass", pass_speed);
	g = cJSON_AddObjectToObject(gates, "capture");
	cJSON_AddBoolToObject(g, "required", p->capture_required);
	cJSON_AddBoolToObject(g, "pass", p->capture_required ? gate_capture && complete_all : 1);
	g = cJSON_AddObjectToObject(gates, "complete");
	cJSON_AddBoolToObject(g, "pass", complete_all && !partial && n == p->ntasks);
	cJSON_AddItemToObject(root, "flags", flags ? flags : cJSON_CreateArray());
	cJSON_AddStringToObject(root, "verdict", verdict);
	if (line) {
		char iso[96] = "n/a";

		if (nspeed)
			snprintf(iso, sizeof(iso), "%.3f [%.3f, %.3f]", overall.estimate, overall.lo, overall.hi);
		snprintf(line, cap, "overall isolated speedup (geomean of %d tasks): %s; gate >= %g: %s; parity %s; "
			 "capture %s; verdict %s", nspeed, iso, p->speedup_min, pass_speed ? "pass" : "FAIL",
			 pass_parity ? "pass" : "FAIL",
			 p->capture_required ? (gate_capture && complete_all ? "pass" : "FAIL") : "n/a", verdict);
	}
done:
	free(tb);
	free(tc);
	free(np);
	return err;
}

cJSON *runner_tool_json(void)
{
	cJSON *tool = cJSON_CreateObject();

	cJSON_AddStringToObject(tool, "version", VS_TOOL_VERSION);
	cJSON_AddStringToObject(tool, "git_head", VS_GIT_HEAD);
	cJSON_AddStringToObject(tool, "kernels_tree", VS_KERNELS_TREE);
	cJSON_AddBoolToObject(tool, "kernels_dirty", VS_KERNELS_DIRTY);
	cJSON_AddStringToObject(tool, "gpu_build", VS_GPU_BUILD);
	return tool;
}

cJSON *runner_plugins_json(const struct plan *p)
{
	cJSON *arr = cJSON_CreateArray();

	for (int k = 0; k < 2; k++) {
		const struct plan_impl *pi = k ? &p->candidate : &p->baseline;
		cJSON *j;

		if (!pi->plugin_path)
			continue;
		j = cJSON_CreateObject();
		cJSON_AddStringToObject(j, "role", k ? "candidate" : "baseline");
		cJSON_AddStringToObject(j, "impl", pi->name);
		cJSON_AddStringToObject(j, "path", pi->plugin_path);
		cJSON_AddStringToObject(j, "sha256", pi->plugin_sha256);
		cJSON_AddItemToArray(arr, j);
	}
	return arr;
}

/* What one selected task gave back. */
struct task_out {
	int plan_index;
	struct measure_result r;
	char *samples, *log;
	char *dir;             /* its task dir, while its worker runs */
	struct worker_spec w;
};

/* One worker slot: a GPU ordinal (or, on the CPU, one more parallel worker). */
struct slot {
	int ordinal;
	int task;              /* index into the selection, -1 when free */
	struct worker_proc wp;
};

/* Materialize task i and copy its manifest into the eval dir; *dir is its task dir. */
static int prepare_task(char **dir, struct run_state *st, const struct runner_options *o, const struct plan *p,
			int i)
{
	char *mpath = NULL, *mtext = NULL, *mname = NULL, hex[65];
	size_t mlen;
	int err;

	*dir = NULL;
	err = task_materialize(dir, o->tasks_root ? o->tasks_root : "tasks", &p->tasks[i], o->threads);
	if (!err) {
		mpath = fs_join(*dir, "manifest.json");
		err = mpath ? fs_read_file(&mtext, &mlen, mpath, 16u << 20) : VS_ENOMEM;
	}
	if (!err) {
		mname = fs_printf("manifests/%s.json", p->task_hash[i]);
		err = mname ? fs_write_in(st->eval_dir, mname, mtext, mlen, hex) : VS_ENOMEM;
		if (!err && !cJSON_GetObjectItemCaseSensitive(st->manifests, p->task_hash[i]))
			cJSON_AddStringToObject(st->manifests, p->task_hash[i], hex);
	}
	free(mname);
	free(mtext);
	free(mpath);
	return err;
}

/* The devices a run uses: one per --gpus ordinal, all of the same kind (their facts end up in info). */
static int probe_devices(struct vs_device_info *info, const struct runner_options *o, const struct plan *p,
			 const int *ordinals, int n)
{
	int err;

	if (o->device) {
		*info = o->device->info;
		return 0;
	}
	if (o->in_process || (getenv("VS_NO_FORK") && *getenv("VS_NO_FORK") == '1')) {
		/* no worker processes: the device is opened here, as the tasks will open it */
		struct vs_device probe;

		memset(&probe, 0, sizeof(probe));
		err = strcmp(p->candidate.backend, "cpu") ? vs_device_open_gpu(&probe, ordinals[0]) :
			vs_device_open_cpu(&probe);
		if (err)
			return err;
		*info = probe.info;
		vs_device_release(&probe);
		return 0;
	}
	for (int k = 0; k < n; k++) {
		struct vs_device_info other;

		if ((err = worker_probe_device(k ? &other : info, p->candidate.backend, ordinals[k])))
			return err;
		if (k && (strcmp(other.name, info->name) || strcmp(other.arch, info->arch)))
			return vs_error(VS_EUNSUPPORTED, "--gpus: GPU %d is '%s' (%s) but GPU %d is '%s' (%s): one "
					"eval dir speaks for one kind of device; list GPUs of one kind",
					ordinals[k], other.name, other.arch, ordinals[0], info->name, info->arch);
	}
	return 0;
}

int runner_run(char **eval_dir_out, const struct runner_options *o)
{
	struct plan p;
	struct vs_device_info info;
	struct run_state st;
	struct measure_ctx ctx;
	struct progress pg;
	struct task_out *out = NULL;
	struct slot *slots = NULL;
	struct runner_task_summary *sum = NULL;
	const struct mla_decode_impl *base, *cand;
	char *plan_text = NULL, plan_hex[65], started[32], finished[32], hex[65], line[512];
	size_t plan_len = 0;
	int err, nsel = 0, parity_only, partial, nslots, next = 0, running = 0, in_process;
	int *sel = NULL;
	const int *ordinals;

	memset(&p, 0, sizeof(p));
	memset(&st, 0, sizeof(st));
	memset(&info, 0, sizeof(info));
	memset(&ctx, 0, sizeof(ctx));
	progress_init(&pg, stdout, 0);
	if ((err = plan_read(&p, o->plan_path)))
		return err;
	if ((err = fs_read_file(&plan_text, &plan_len, o->plan_path, 64u << 20)))
		goto done;
	fs_sha256_hex(plan_hex, plan_text, plan_len);
	base = mla_decode_impl_find(p.baseline.name);
	cand = mla_decode_impl_find(p.candidate.name);
	if (o->impl_filter && strcmp(o->impl_filter, p.baseline.name) && strcmp(o->impl_filter, p.candidate.name)) {
		err = vs_error(VS_EUSAGE, "--impl '%s' is neither the plan's baseline '%s' nor its candidate '%s'",
			       o->impl_filter, p.baseline.name, p.candidate.name);
		goto done;
	}
	if (o->config_filter) {
		int found = 0;

		for (int i = 0; i < p.candidate.nconfigs; i++)
			found |= !strcmp(p.candidate.configs[i].name, o->config_filter);
		for (int i = 0; i < p.baseline.nconfigs && o->impl_filter && !strcmp(o->impl_filter, p.baseline.name); i++)
			found |= !strcmp(p.baseline.configs[i].name, o->config_filter);
		if (!found) {
			err = vs_error(VS_EUSAGE, "--config '%s' is not a config of %s in this plan", o->config_filter,
				       p.candidate.name);
			goto done;
		}
	}
	if (o->has_part && (o->part_index < 0 || o->part_index >= p.ntasks)) {
		err = vs_error(VS_EUSAGE, "--part %d: the plan '%s' has tasks 0..%d", o->part_index, o->plan_path,
			       p.ntasks - 1);
		goto done;
	}
	if (o->has_part && (!o->run_id || !*o->run_id || strchr(o->run_id, '/'))) {
		err = vs_error(VS_EUSAGE, "--part needs --run-id ID (the run the part belongs to, without '/')");
		goto done;
	}
	/* The tasks to run, in plan order. */
	sel = calloc((size_t)p.ntasks, sizeof(int));
	out = calloc((size_t)p.ntasks, sizeof(*out));
	sum = calloc((size_t)p.ntasks + 1, sizeof(*sum));
	if (!sel || !out || !sum) {
		err = vs_error(VS_ENOMEM, "out of memory");
		goto done;
	}
	for (int i = 0; i < p.ntasks; i++)
		if (o->has_part ? i == o->part_index : task_matches(&p.tasks[i], p.task_hash[i], o->task_filter))
			sel[nsel++] = i;
	if (nsel == 0) {
		err = vs_error(VS_ENOTFOUND, "--task '%s' matches no task of '%s'", o->task_filter, o->plan_path);
		goto done;
	}
	in_process = o->in_process || (getenv("VS_NO_FORK") && *getenv("VS_NO_FORK") == '1');
	ordinals = o->ngpus > 0 ? o->gpus : &o->gpu_ordinal;
	nslots = o->ngpus > 0 ? o->ngpus : 1;
	if ((err = probe_devices(&info, o, &p, ordinals, nslots)))
		goto done;
	if (in_process)
		nslots = 1;
	if (strcmp(info.arch, p.gen)) {
		err = vs_error(VS_EUNSUPPORTED, "plan '%s' is for generation '%s' but this device (%s) is '%s': "
			       "emit a plan with --gen %s (the card's match.gens must list it)", o->plan_path,
			       p.gen, info.name, info.arch, info.arch);
		goto done;
	}
	parity_only = o->impl_filter != NULL;
	partial = parity_only || o->config_filter || o->task_filter || o->has_part;
	if ((err = make_eval_dir(&st.eval_dir, o, &p, &info)))
		goto done;
	st.samples = open_memstream(&st.samples_buf, &st.samples_len);
	st.log = open_memstream(&st.log_buf, &st.log_len);
	st.root = cJSON_CreateObject();
	st.flags = cJSON_CreateArray();
	st.manifests = cJSON_CreateObject();
	slots = calloc((size_t)nslots, sizeof(*slots));
	if (!st.samples || !st.log || !st.root || !st.flags || !st.manifests || !slots) {
		err = vs_error(VS_ENOMEM, "out of memory");
		goto done;
	}
	fprintf(st.samples, "task,set,pair,order,role,config,ms,checked\n");
	utc_stamp(started, sizeof(started), "%Y-%m-%dT%H:%M:%SZ");
	snprintf(line, sizeof(line), "run %s on %s (%s, %s), plan %s: %s vs %s, %d tasks%s", st.eval_dir, info.name,
		 info.arch, info.driver, o->plan_path, p.baseline.name, p.candidate.name, p.ntasks,
		 partial ? " (partial: filtered)" : "");
	fprintf(st.log, "%s\n", line);
	progress_init(&pg, stdout, nsel);
	progress_line(&pg, "%s", line);
	if (nslots > 1) {
		char list[256] = "";

		for (int k = 0; k < nslots; k++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%d", k ? "," : "", ordinals[k]);
		progress_line(&pg, "%d workers in parallel (%s %s)", nslots,
			      strcmp(p.candidate.backend, "cpu") ? "GPUs" : "CPU workers", list);
	}

	ctx.device = o->device;
	ctx.plan = &p;
	ctx.plan_path = o->plan_path;
	ctx.base = base;
	ctx.cand = cand;
	ctx.config_filter = o->config_filter;
	ctx.check_base = !o->impl_filter || !strcmp(o->impl_filter, base->name);
	ctx.check_cand = !o->impl_filter || !strcmp(o->impl_filter, cand->name);
	ctx.timing = !parity_only;
	for (int k = 0; k < nslots; k++) {
		slots[k].ordinal = ordinals[k];
		slots[k].task = -1;
		slots[k].wp.fd = -1;
	}

	/* Deal the tasks to the slots as they free up; each task's outcome lands at its plan position. */
	while (next < nsel || running > 0) {
		for (int s = 0; s < nslots && next < nsel; s++) {
			struct task_out *to;
			int i, terr;

			if (slots[s].task >= 0)
				continue;
			to = &out[next];
			i = to->plan_index = sel[next];
			progress_status(&pg, "materializing %s", p.tasks[i].name);
			terr = prepare_task(&to->dir, &st, o, &p, i);
			if (terr) {
				measure_result_init(&to->r, &ctx, &p.tasks[i], p.task_hash[i]);
				to->r.error = strdup(vs_last_error());
				progress_step(&pg);
				task_line(&pg, i, p.ntasks, &to->r);
				next++;
				s--; /* the slot is still free */
				continue;
			}
			to->w.ctx = &ctx;
			to->w.backend = p.candidate.backend;
			to->w.gpu_ordinal = slots[s].ordinal;
			to->w.task_dir = to->dir;
			to->w.spec = &p.tasks[i];
			to->w.task_hash = p.task_hash[i];
			to->w.timeout_s = o->task_timeout_s > 0 ? o->task_timeout_s : 900;
			to->w.in_process = in_process;
			progress_status(&pg, "%s", p.tasks[i].name);
			if (in_process) {
				terr = worker_run_task(&to->r, &to->w, &to->samples, &to->log);
				if (terr && terr != VS_EFAIL) {
					err = terr;
					goto done;
				}
				progress_step(&pg);
				task_line(&pg, i, p.ntasks, &to->r);
				if (pg.tty && to->log && *to->log)
					progress_line(&pg, "%.*s", (int)strlen(to->log) - 1, to->log);
				next++;
				s--;
				continue;
			}
			if ((err = worker_start(&slots[s].wp, &to->w)))
				goto done;
			slots[s].task = next++;
			running++;
		}
		if (running == 0)
			continue;
		{
			struct pollfd pfd[64];
			int np = 0;

			for (int s = 0; s < nslots && np < 64; s++)
				if (slots[s].task >= 0)
					pfd[np++] = (struct pollfd){slots[s].wp.fd, POLLIN, 0};
			if (poll(pfd, (nfds_t)np, 500) < 0 && errno != EINTR) {
				err = vs_error(VS_EIO, "poll on the workers failed: %s", strerror(errno));
				goto done;
			}
		}
		for (int s = 0; s < nslots; s++) {
			struct task_out *to;
			int terr;

			if (slots[s].task < 0 || !worker_pump(&slots[s].wp))
				continue;
			to = &out[slots[s].task];
			terr = worker_finish(&to->r, &slots[s].wp, &to->w, &to->samples, &to->log);
			slots[s].task = -1;
			running--;
			if (terr && terr != VS_EFAIL) {
				err = terr;
				goto done;
			}
			progress_step(&pg);
			task_line(&pg, to->plan_index, p.ntasks, &to->r);
			if (pg.tty && to->log && *to->log)
				progress_line(&pg, "%.*s", (int)strlen(to->log) - 1, to->log);
		}
		if (pg.tty) {
			char names[160] = "";

			for (int s = 0; s < nslots; s++)
				if (slots[s].task >= 0)
					snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s",
						 *names ? ", " : "", p.tasks[out[slots[s].task].plan_index].name);
			progress_status(&pg, "running %s", names);
		}
	}
	progress_end(&pg);

	/* The log and samples in plan order, whatever order the workers finished in. */
	for (int k = 0; k < nsel; k++) {
		struct task_out *to = &out[k];
		int i = to->plan_index;

		fprintf(st.log, "[%d/%d] %s (%.16s)\n", i + 1, p.ntasks, p.tasks[i].name, p.task_hash[i]);
		if (to->log)
			fputs(to->log, st.log);
		if (to->samples)
			fputs(to->samples, st.samples);
		if (to->r.error)
			fprintf(st.log, "    task %s failed: %s\n", p.tasks[i].name, to->r.error);
		sum[k].complete = to->r.complete;
		sum[k].parity_pass = to->r.parity_pass;
		sum[k].base_capture = to->r.base.capture;
		sum[k].cand_capture = to->r.cand.capture;
		sum[k].t_base = to->r.t_base;
		sum[k].t_cand = to->r.t_cand;
		sum[k].npairs = to->r.npairs;
	}
	print_table_header(st.log);
	for (int k = 0; k < nsel; k++)
		print_table_row(st.log, &out[k].r);

	/* result.json */
	{
		cJSON *card, *plan;
		char *text;

		utc_stamp(finished, sizeof(finished), "%Y-%m-%dT%H:%M:%SZ");
		cJSON_AddStringToObject(st.root, "schema", VS_RESULT_SCHEMA);
		cJSON_AddItemToObject(st.root, "tool", runner_tool_json());
		card = cJSON_AddObjectToObject(st.root, "card");
		cJSON_AddStringToObject(card, "id", p.card_id);
		cJSON_AddStringToObject(card, "path", p.card_path);
		cJSON_AddStringToObject(card, "hash", p.card_hash);
		plan = cJSON_AddObjectToObject(st.root, "plan");
		cJSON_AddStringToObject(plan, "path", o->plan_path);
		cJSON_AddStringToObject(plan, "sha256", plan_hex);
		cJSON_AddStringToObject(plan, "tier", p.tier);
		cJSON_AddStringToObject(plan, "model", p.model);
		cJSON_AddItemToObject(st.root, "device", device_json(&info));
		cJSON_AddStringToObject(st.root, "started", started);
		cJSON_AddStringToObject(st.root, "finished", finished);
		cJSON_AddStringToObject(st.root, "baseline", p.baseline.name);
		cJSON_AddStringToObject(st.root, "candidate", p.candidate.name);
		cJSON_AddItemToObject(st.root, "plugins", runner_plugins_json(&p));
		cJSON_AddBoolToObject(st.root, "partial", partial);
		if (partial) {
			cJSON *f = cJSON_AddObjectToObject(st.root, "filters");

			if (o->task_filter)
				cJSON_AddStringToObject(f, "task", o->task_filter);
			if (o->impl_filter)
				cJSON_AddStringToObject(f, "impl", o->impl_filter);
			if (o->config_filter)
				cJSON_AddStringToObject(f, "config", o->config_filter);
			if (o->has_part) {
				cJSON *pt = cJSON_AddObjectToObject(st.root, "part");

				cJSON_AddStringToObject(pt, "run_id", o->run_id);
				cJSON_AddNumberToObject(pt, "index", o->part_index);
				cJSON_AddNumberToObject(pt, "of", p.ntasks);
			}
		}
		st.tasks = cJSON_AddArrayToObject(st.root, "tasks");
		for (int k = 0; k < nsel; k++)
			cJSON_AddItemToArray(st.tasks, task_json(&out[k].r, &p, st.flags));
		err = runner_verdict(st.root, &p, sum, nsel, partial, st.flags, line, sizeof(line));
		st.flags = NULL;
		if (err)
			goto done;

		/* Copies that bind the evidence: plan, manifests (written above), samples, log. */
		fclose(st.samples);
		st.samples = NULL;
		if ((err = fs_write_in(st.eval_dir, "plan.json", plan_text, plan_len, NULL)) ||
		    (err = fs_write_in(st.eval_dir, "samples.csv", st.samples_buf, st.samples_len, hex)))
			goto done;
		cJSON_AddStringToObject(st.root, "samples_sha256", hex);
		cJSON_AddItemToObject(st.root, "manifests", st.manifests);
		st.manifests = NULL;
		fprintf(st.log, "\n%s\neval dir: %s\n", line, st.eval_dir);
		progress_line(&pg, "%s", line);
		progress_line(&pg, "eval dir: %s", st.eval_dir);
		fclose(st.log);
		st.log = NULL;
		if ((err = fs_write_in(st.eval_dir, "run.log", st.log_buf, st.log_len, hex)))
			goto done;
		cJSON_AddStringToObject(st.root, "log_sha256", hex);
		text = cJSON_Print(st.root);
		if (!text) {
			err = vs_error(VS_ENOMEM, "out of memory");
			goto done;
		}
		err = fs_write_in(st.eval_dir, "result.json", text, strlen(text), NULL);
		cJSON_free(text);
		if (err)
			goto done;
	}
	*eval_dir_out = st.eval_dir;
	st.eval_dir = NULL;
	err = 0;
done:
	progress_end(&pg);
	for (int s = 0; slots && s < nslots; s++)
		if (slots[s].task >= 0)
			worker_kill(&slots[s].wp);
	if (st.samples)
		fclose(st.samples);
	if (st.log)
		fclose(st.log);
	free(st.samples_buf);
	free(st.log_buf);
	free(st.eval_dir);
	cJSON_Delete(st.root);
	cJSON_Delete(st.flags);
	cJSON_Delete(st.manifests);
	for (int k = 0; out && k < p.ntasks; k++) {
		measure_result_release(&out[k].r);
		free(out[k].samples);
		free(out[k].log);
		free(out[k].dir);
	}
	free(out);
	free(slots);
	free(sum);
	free(sel);
	free(plan_text);
	plan_release(&p);
	return err;
}
