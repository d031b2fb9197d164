#include "plan.h"
#include "card.h"
#include "layout.h"
#include "op.h"
#include "op_mla.h"
#include "fsutil.h"
#include "jsonfile.h"
#include "plugin.h"
#include "pyimpl.h"
#include "vs_error.h"
#include "workload.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const char *const plan_tiers[] = {"smoke", "standard", "full", NULL};

const struct plan_shipped_py plan_shipped_python[] = {
	{"numpy.mla_decode", "kernels/python/numpy_mla.py"},
	{"triton.mla_decode", "kernels/triton/mla_decode.py"},
	{"triton.dsa_decode", "kernels/triton/dsa_decode.py"},
	{"tilelang.mla_decode", "kernels/tilelang/mla_decode.py"},
	{"torch.mla_decode", "kernels/torch/mla_decode.py"},
	{NULL, NULL},
};

static int known_impls_error(const char *role, const char *name)
{
	char list[512] = "";

	for (int i = 0; mla_decode_impl_at(i); i++) {
		if (i)
			strncat(list, ", ", sizeof(list) - strlen(list) - 1);
		strncat(list, mla_decode_impl_at(i)->name, sizeof(list) - strlen(list) - 1);
	}
	return vs_error(VS_ENOTFOUND,
			"%s '%s' names no implementation; the implementations are: %s "
			"(name one with --%s IMPL)",
			role, name, list, role);
}

static int is_cpu_gen(const char *gen)
{
	return strncmp(gen, "sm_", 3) && strncmp(gen, "gfx", 3);
}

static char *py_rel(const char *path);
static char *python_json_of(const struct pyimpl *py, const char *rel);

/* allow_empty: a reference with no config for gen is planned with none (it skips every task). */
static int plan_impl_fill(struct plan_impl *pi, const char *role, const char *name, const char *gen, int allow_empty)
{
	const struct mla_decode_impl *impl = mla_decode_impl_find(name);
	int n;

	if (!impl)
		return known_impls_error(role, name);
	if ((strcmp(impl->backend, "cpu") == 0) != is_cpu_gen(gen))
		return vs_error(VS_EUNSUPPORTED,
				"%s '%s' runs on the %s backend, which cannot run generation "
				"'%s'",
				role, name, impl->backend, gen);
	n = impl->configs(gen, NULL, 0);
	if (n <= 0 && !allow_empty)
		return vs_error(VS_EUNSUPPORTED, "%s '%s' has no configs for generation '%s'", role, name, gen);
	n = n > 0 ? n : 0;
	pi->configs = calloc(n ? (size_t)n : 1, sizeof(*pi->configs));
	pi->name = strdup(impl->name);
	pi->backend = strdup(impl->backend);
	if (!pi->configs || !pi->name || !pi->backend)
		return vs_oom();
	pi->nconfigs = n ? impl->configs(gen, pi->configs, n) : 0;
	if (pi->nconfigs > n)
		pi->nconfigs = n;
	if (plugin_for_impl(impl->name)) {
		const struct plugin *pl = plugin_for_impl(impl->name);

		pi->plugin_path = strdup(pl->path);
		memcpy(pi->plugin_sha256, pl->sha256, sizeof(pi->plugin_sha256));
		VS_CHECK_ALLOC(pi->plugin_path);
	}
	if (pyimpl_for_impl(impl->name)) {
		const struct pyimpl *py = pyimpl_for_impl(impl->name);

		pi->python_path = py_rel(py->real_path);
		memcpy(pi->python_sha256, py->sha256, sizeof(pi->python_sha256));
		pi->python_json = pi->python_path ? python_json_of(py, pi->python_path) : NULL;
		if (!pi->python_path || !pi->python_json)
			return vs_error(VS_ENOMEM, "out of memory");
		pi->python_helpers_planned = 1;
	}
	return 0;
}

const char *plan_impl_label(const struct plan_impl *pi, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s%s%s", pi->name ? pi->name : "", pi->forced ? "@" : "", pi->forced ? pi->forced : "");
	return buf;
}

/*
 * Force side pi (filled with its implementation's configs for gen) to its config named cfg
 * (docs/DESIGN.md "Forced configs"): configs becomes that one config. A name the space lacks is
 * refused with the names it has.
 */
static int plan_impl_force(struct plan_impl *pi, const char *role, const char *cfg, const char *gen)
{
	char names[1024] = "";
	int k;

	for (k = 0; k < pi->nconfigs && strcmp(pi->configs[k].name, cfg); k++)
		snprintf(names + strlen(names), sizeof(names) - strlen(names), "%s%s", k ? ", " : "",
			 pi->configs[k].name);
	if (k == pi->nconfigs)
		return vs_error(VS_ENOTFOUND, "%s '%s@%s': %s has no config '%s' for %s; its %d config%s: %s", role,
				pi->name, cfg, pi->name, cfg, gen, pi->nconfigs, pi->nconfigs == 1 ? "" : "s",
				pi->nconfigs ? names : "none");
	if (!(pi->forced = strdup(cfg)))
		return vs_oom();
	if (k)
		pi->configs[0] = pi->configs[k];
	pi->nconfigs = 1;
	return 0;
}

/*
 * Split a side's value IMPL@CONFIG: *name becomes the implementation (copied into buf) and *cfg
 * the config (borrowed from the value); a value without '@' is left as it is (*cfg untouched).
 */
static int side_split(char *buf, size_t cap, const char **name, const char **cfg, const char *role)
{
	const char *c;
	size_t n;

	if (!*name || !(c = card_backend_config(*name, &n)))
		return 0;
	if (!n || !*c || strchr(c, '@') || n >= cap)
		return vs_error(VS_EUSAGE,
				"%s '%s' is not IMPL@CONFIG: an implementation, one '@' and the config it is forced "
				"to (cpu.splitkv@bn64-bh16-sp4-w1-st1)",
				role, *name);
	memcpy(buf, *name, n);
	buf[n] = '\0';
	*cfg = c;
	*name = buf;
	return 0;
}

/* The config a card's backend value forces when it names implementation name, else NULL. */
static const char *card_side_config(const char *value, const char *name)
{
	size_t n;
	const char *cfg = card_backend_config(value, &n);

	return cfg && *cfg && n == strlen(name) && !strncmp(value, name, n) ? cfg : NULL;
}

/* A module path as plans hold it, made absolute: a relative one is relative to the repository root. */
static char *py_abs(const char *path)
{
	return path[0] == '/' ? strdup(path) : fs_join(vs_repo_root(), path);
}

/* An existing file's path as plans record it: relative to the repository root when it lies in it. */
static char *py_rel(const char *path)
{
	char *real = realpath(path, NULL), *root = realpath(vs_repo_root(), NULL), *rel = NULL;
	size_t n = root ? strlen(root) : 0;

	if (real && root && !strncmp(real, root, n) && real[n] == '/')
		rel = strdup(real + n + 1);
	else if (real)
		rel = strdup(real);
	free(real);
	free(root);
	return rel;
}

static int has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n > k && !strcmp(s + n - k, suffix);
}

/* Register the Python module at file (as the user or the shipped table names it) for gen. */
static int plan_python(const char **name, const char *file, const char *role, const char *gen)
{
	const struct pyimpl *py;
	int err;

	if (!fs_exists(file))
		return vs_error(VS_ENOTFOUND, "%s '%s': python module '%s' does not exist", role, *name ? *name : file,
				file);
	if ((err = pyimpl_register(&py, file, gen)))
		return err;
	if (*name && strcmp(*name, py->name))
		return vs_error(VS_EUSAGE,
				"--%s '%s' differs from the implementation '%s' that --%s-lib '%s' "
				"provides",
				role, *name, py->name, role, file);
	*name = py->name;
	return 0;
}

/*
 * A backend family as cards name it (match.from_backend: tilelang, triton, torch, numpy: no '.')
 * stands for the project's implementation of the operator in that family, "<family>.mla_decode";
 * any other name is returned as it is. The plan, and the record, name the implementation chosen.
 */
static const char *family_impl(const char *name)
{
	size_t n = name ? strlen(name) : 0;

	if (!n || strchr(name, '.'))
		return name;
	for (int i = 0; plan_shipped_python[i].name; i++)
		if (!strncmp(plan_shipped_python[i].name, name, n) &&
		    !strcmp(plan_shipped_python[i].name + n, ".mla_decode"))
			return plan_shipped_python[i].name;
	return name;
}

/* A shipped Python implementation's module, registered when a plan names it (NULL name: nothing). */
static int plan_shipped(const char *name, const char *role, const char *gen)
{
	char *file;
	int err;

	if (!name || mla_decode_impl_find(name))
		return 0;
	for (int i = 0; plan_shipped_python[i].name; i++) {
		if (strcmp(plan_shipped_python[i].name, name))
			continue;
		file = py_abs(plan_shipped_python[i].path);
		if (!file)
			return vs_error(VS_ENOMEM, "out of memory");
		if (!fs_exists(file)) {
			free(file);
			return vs_error(VS_ENOTFOUND, "%s '%s' is the Python module %s, which this checkout lacks",
					role, name, plan_shipped_python[i].path);
		}
		err = plan_python(&name, file, role, gen);
		free(file);
		return err;
	}
	return 0;
}

/*
 * Load a --baseline-lib/--candidate-lib: a plugin (.so) or a Python module (.py, by its extension);
 * its implementation fills *name unless one was named.
 */
static int plan_lib(const char **name, const char *lib, const char *role, const char *gen)
{
	const struct plugin *pl;
	int err;

	if (!lib)
		return 0;
	if (has_suffix(lib, ".py"))
		return plan_python(name, lib, role, gen);
	if ((err = plugin_load(&pl, lib)))
		return err;
	if (*name && strcmp(*name, pl->impl->name))
		return vs_error(VS_EUSAGE,
				"--%s '%s' differs from the implementation '%s' that --%s-lib '%s' "
				"provides",
				role, *name, pl->impl->name, role, lib);
	*name = pl->impl->name;
	return 0;
}

/* The plan's "python" object of a registered module (compact JSON text, malloc'd), or NULL. */
static char *python_json_of(const struct pyimpl *py, const char *rel)
{
	cJSON *j = cJSON_CreateObject(), *v = cJSON_Parse(py->versions_json), *h = cJSON_Parse(py->helpers_json);
	cJSON *d = py->describe_json ? cJSON_Parse(py->describe_json) : NULL; /* its "autotune" list, if any */
	char *text = NULL;

	if (j && h && cJSON_AddItemToObject(j, "helpers", h))
		h = NULL;
	if (j && cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(d, "autotune")) &&
	    !cJSON_AddItemToObject(j, "autotune", cJSON_DetachItemFromObjectCaseSensitive(d, "autotune")))
		v = (cJSON_Delete(v), NULL); /* out of memory: no text */
	if (j && v && !h && cJSON_AddStringToObject(j, "path", rel) &&
	    cJSON_AddStringToObject(j, "sha256", py->sha256) && cJSON_AddStringToObject(j, "backend", py->py_backend) &&
	    cJSON_AddStringToObject(j, "interpreter", py->interpreter) &&
	    cJSON_AddStringToObject(j, "executable", py->executable) &&
	    cJSON_AddStringToObject(j, "libpython", py->libpython) && cJSON_AddItemToObject(j, "versions", v)) {
		v = NULL;
		text = cJSON_PrintUnformatted(j);
	}
	cJSON_Delete(h);
	cJSON_Delete(v);
	cJSON_Delete(j);
	cJSON_Delete(d);
	return text;
}

/* The entry of list (a "helpers" array) whose "path" is rel, or NULL. */
static const cJSON *helper_find(const cJSON *list, const char *rel)
{
	const cJSON *h;

	cJSON_ArrayForEach(h, list)
	{
		const char *p = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(h, "path"));

		if (p && !strcmp(p, rel))
			return h;
	}
	return NULL;
}

/*
 * The "helpers" of a plan's Python module object pj (docs/DESIGN.md "Python implementations")
 * against now_json, those its description finds now (NULL: only the form is checked). *planned is
 * whether the plan records them: a plan made before helper files were hashed has no "helpers",
 * and then the run binds those described when it runs. who names the module in the line ("plan:
 * candidate python module 'x.py'"). Errors: VS_ESCHEMA (not a list of {path, sha256}), VS_EVERIFY
 * (a helper changed, is new or is gone, one line), VS_ENOMEM.
 */
static int helpers_check(int *planned, const cJSON *pj, const char *now_json, const char *who)
{
	const cJSON *list = cJSON_GetObjectItemCaseSensitive(pj, "helpers"), *h;
	cJSON *now = NULL;
	int err = 0;

	*planned = list != NULL;
	if (!list)
		return 0;
	if (!cJSON_IsArray(list))
		return vs_error(VS_ESCHEMA, "%s: \"helpers\" must be a list of {\"path\", \"sha256\"}", who);
	cJSON_ArrayForEach(h, list)
	{
		const char *rel = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(h, "path"));
		const char *sha = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(h, "sha256"));

		if (!rel || !*rel || !sha || strlen(sha) != 64)
			return vs_error(VS_ESCHEMA, "%s: every helper needs a \"path\" and a 64-digit \"sha256\"", who);
	}
	if (!now_json)
		return 0;
	now = cJSON_Parse(now_json);
	VS_CHECK_ALLOC(now);
	cJSON_ArrayForEach(h, list)
	{
		const char *rel = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(h, "path"));
		const char *sha = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(h, "sha256"));
		const cJSON *n = helper_find(now, rel);
		const char *nsha = n ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(n, "sha256")) : NULL;

		if (!nsha) {
			err = vs_error(VS_EVERIFY,
				       "%s: helper '%s' of the plan is no longer imported (plan sha256 %s): emit the "
				       "plan again",
				       who, rel, sha);
			goto done;
		}
		if (strcmp(nsha, sha)) {
			err = vs_error(VS_EVERIFY,
				       "%s: helper '%s' changed since the plan was made (sha256 %s, plan %s): emit "
				       "the plan again",
				       who, rel, nsha, sha);
			goto done;
		}
	}
	cJSON_ArrayForEach(h, now)
	{
		const char *rel = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(h, "path"));

		if (rel && !helper_find(list, rel)) {
			err = vs_error(VS_EVERIFY,
				       "%s: helper '%s' is imported now but not in the plan (sha256 %s): emit the "
				       "plan again",
				       who, rel, cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(h, "sha256")));
			goto done;
		}
	}
done:
	cJSON_Delete(now);
	return err;
}

const char *plan_skip_reason(const struct plan *p, const struct plan_impl *pi, int i)
{
	if (i < 0 || i >= p->ntasks)
		return NULL;
	for (int k = 0; k < pi->nskips; k++)
		if (!strcmp(pi->skips[k].hash, p->task_hash[i]))
			return pi->skips[k].reason;
	return NULL;
}

static void skips_release(struct plan_skip *s, int n)
{
	for (int k = 0; k < n; k++)
		free(s[k].reason);
	free(s);
}

/*
 * Ask impl about every task of p (its operator's impl_skips, op.h). *out (malloc'd, *n entries)
 * lists the tasks it skips.
 */
static int skips_compute(struct plan_skip **out, int *n, const struct mla_decode_impl *impl, const struct plan *p)
{
	struct plan_skip *s = calloc((size_t)p->ntasks + 1, sizeof(*s));
	int k = 0;

	if (!s)
		return vs_error(VS_ENOMEM, "out of memory");
	for (int i = 0; i < p->ntasks; i++) {
		char why[256];

		if (!vs_op_of(&p->tasks[i])->impl_skips(impl, &p->tasks[i], why, sizeof(why)))
			continue;
		memcpy(s[k].hash, p->task_hash[i], sizeof(s[k].hash));
		s[k].reason = strdup(why);
		if (!s[k++].reason) {
			skips_release(s, k);
			return vs_error(VS_ENOMEM, "out of memory");
		}
	}
	*out = s;
	*n = k;
	return 0;
}

/*
 * Directory of the running binary + "/gfx942/resources.json" (the gfx942 gate's output in the build
 * dir; "/gfx950/..." for gfx950) or "/sm_90/resources.json" (tools/gpu/sm90_resources.sh, after an
 * NVIDIA build).
 */
static char *default_build_figures(const char *gen)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	char *slash;

	if (n <= 0)
		return NULL;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash)
		return NULL;
	*slash = '\0';
	/* gfx950 has its own gate output (tools/gpu/gfx942_gate.sh BUILD gfx950); other gfx: gfx942's */
	return fs_printf("%s/%s/resources.json", exe,
			 strncmp(gen, "gfx", 3) ? "sm_90" :
			 !strcmp(gen, "gfx950") ? "gfx950" :
						  "gfx942");
}

/*
 * The build gate's figures for both sides (entries whose "impl" is the baseline's or the candidate's:
 * the HIP kernels and, on gfx942, the Triton configs of tools/gpu/triton_amd_gate.py), as a JSON
 * object (NULL when absent). Its "pass" is the gate's, and false when one of these entries failed
 * the limits (a known failure the gate lets through included).
 */
static cJSON *load_build_figures(const char *path_opt, const char *baseline, const char *candidate, const char *gen)
{
	char *path = path_opt ? strdup(path_opt) : default_build_figures(gen);
	char *text = NULL;
	size_t len;
	cJSON *root = NULL, *out = NULL, *kernels, *k, *mine, *srcs;
	int quiet, nomem = 0, *oom = &nomem, failed = 0;

	if (!path)
		return NULL;
	quiet = vs_error_set_quiet(!path_opt);
	if (fs_read_file(&text, &len, path, 16u << 20) != 0)
		goto done;
	root = cJSON_Parse(text);
	kernels = cJSON_GetObjectItemCaseSensitive(root, "kernels");
	if (!cJSON_IsArray(kernels)) {
		if (path_opt)
			vs_warn("'%s' has no \"kernels\" array: build figures left out of the plan", path);
		goto done;
	}
	out = cJSON_CreateObject();
	jsonfile_put_str(oom, out, "target",
			 cJSON_GetStringValue(cJSON_GetObjectItem(root, "target")) ?
				 cJSON_GetStringValue(cJSON_GetObjectItem(root, "target")) :
				 "gfx942");
	if (cJSON_GetStringValue(cJSON_GetObjectItem(root, "compiler")))
		jsonfile_put_str(oom, out, "compiler", cJSON_GetStringValue(cJSON_GetObjectItem(root, "compiler")));
	mine = jsonfile_put_arr(oom, out, "kernels");
	cJSON_ArrayForEach(k, kernels)
	{
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(k, "impl"));

		if (name && (!strcmp(name, candidate) || !strcmp(name, baseline))) {
			jsonfile_put(oom, mine, NULL, cJSON_Duplicate(k, 1));
			failed |= cJSON_IsFalse(cJSON_GetObjectItem(k, "pass"));
		}
	}
	/* TileLang's HIP sources (tools/gpu/tilelang_amd_emit.py): emitted, compiled, or why not */
	srcs = NULL;
	cJSON_ArrayForEach(k, cJSON_GetObjectItemCaseSensitive(root, "sources"))
	{
		const char *name = cJSON_GetStringValue(cJSON_GetObjectItem(k, "impl"));

		if (name && (!strcmp(name, candidate) || !strcmp(name, baseline))) {
			if (!srcs)
				srcs = jsonfile_put_arr(oom, out, "sources");
			jsonfile_put(oom, srcs, NULL, cJSON_Duplicate(k, 1));
		}
	}
	if (cJSON_IsBool(cJSON_GetObjectItem(root, "pass"))) {
		jsonfile_put_bool(oom, out, "gate_pass", cJSON_IsTrue(cJSON_GetObjectItem(root, "pass")));
		jsonfile_put_bool(oom, out, "pass", cJSON_IsTrue(cJSON_GetObjectItem(root, "pass")) && !failed);
	}
	if (nomem) {
		vs_warn("out of memory: build figures left out of the plan");
		cJSON_Delete(out);
		out = NULL;
	}
done:
	vs_error_set_quiet(quiet);
	cJSON_Delete(root);
	free(text);
	free(path);
	return out;
}

/* ---- the resources of a Triton module's configs (issue 41) ------------------------------- */

static const char *get_str(const cJSON *o, const char *key);

/* The compiler's limit of shared memory per block on the NVIDIA generations planned from Triton. */
static long triton_smem_limit(const char *gen)
{
	return !strcmp(gen, "sm_90") ? 232448 : !strcmp(gen, "sm_120") ? 101376 : 0;
}

/* The interpreter that has Triton: $VS_TRITON_PYTHON, else the repository's .venv-triton. Malloc'd. */
static char *triton_python(void)
{
	const char *env = getenv("VS_TRITON_PYTHON"), *venv = getenv("VS_TRITON_VENV");

	if (env && *env)
		return strdup(env);
	return venv && *venv ? fs_printf("%s/bin/python", venv) :
			       fs_printf("%s/.venv-triton/bin/python", vs_repo_root());
}

/* Where the figures of side pi's module for gen are kept: beside the binary. Malloc'd, or NULL. */
static char *triton_cache_path(const struct plan_impl *pi, const char *gen)
{
	char exe[4096], *slash;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0 || !*pi->python_sha256)
		return NULL;
	exe[n] = '\0';
	if (!(slash = strrchr(exe, '/')))
		return NULL;
	*slash = '\0';
	return fs_printf("%s/%s/triton-%.16s-%s.jsonl", exe, gen, pi->python_sha256, pi->forced ? pi->forced : "all");
}

/* Append the tool's entries (one JSON object a line) in text to kernels; their count. */
static int triton_entries(cJSON *kernels, const char *text)
{
	int n = 0;

	for (const char *l = text; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l);
		cJSON *e = cJSON_ParseWithLength(l, len);

		if (e && cJSON_IsObject(e) && cJSON_IsString(cJSON_GetObjectItem(e, "config"))) {
			const cJSON *k;
			int seen = 0;

			/* once per kernel: two forced configs of one module share its combine kernel */
			cJSON_ArrayForEach(k, kernels)
			{
				seen |= !strcmp(get_str(k, "impl") ? get_str(k, "impl") : "",
						get_str(e, "impl") ? get_str(e, "impl") : "") &&
					!strcmp(get_str(k, "config"), get_str(e, "config")) &&
					!strcmp(get_str(k, "kv_dtype") ? get_str(k, "kv_dtype") : "",
						get_str(e, "kv_dtype") ? get_str(e, "kv_dtype") : "") &&
					!strcmp(get_str(k, "kernel") ? get_str(k, "kernel") : "",
						get_str(e, "kernel") ? get_str(e, "kernel") : "");
			}
			n++;
			if (seen)
				cJSON_Delete(e);
			else
				cJSON_AddItemToArray(kernels, e);
		} else {
			cJSON_Delete(e);
		}
		l = nl ? nl + 1 : NULL;
	}
	return n;
}

/*
 * The tools/gpu/triton_cuda_resources.py argument that names the module of a shipped Triton
 * implementation ("" for triton.mla_decode, the tool's default), or NULL for any other.
 */
static const char *triton_module_arg(const char *name)
{
	if (!strcmp(name, "triton.mla_decode"))
		return "";
	if (!strcmp(name, "triton.dsa_decode"))
		return " --module dsa_decode";
	return NULL;
}

/*
 * Compile the configs of side pi (the shipped triton.mla_decode or triton.dsa_decode) for gen with
 * tools/gpu/triton_cuda_resources.py and append its entries to kernels. Returns 0 with the entries,
 * 1 with *why set (malloc'd) when the figures are not known here (no Triton, the tool failed), or
 * VS_ENOMEM.
 */
static int triton_resources(cJSON *kernels, char **why, const struct plan_impl *pi, const char *gen)
{
	char *py = triton_python(), *tool = fs_join(vs_repo_root(), "tools/gpu/triton_cuda_resources.py");
	char *cmd = NULL, line[8192], *cache = NULL, *cached = NULL, *out = NULL;
	size_t clen;
	FILE *f;
	int n = 0, rc;

	*why = NULL;
	if (!py || !tool) {
		free(py);
		free(tool);
		return vs_oom();
	}
	if (!fs_exists(py) || strchr(py, '\'') || strchr(tool, '\'') || !pi->nconfigs) {
		*why = fs_printf("no Triton here (%s is not an interpreter: tools/install-deps, or VS_TRITON_PYTHON)",
				 py);
		goto done;
	}
	/*
	 * The figures of one module's bytes, generation and configs do not change: they are kept
	 * beside the binary (<build>/<gen>/triton-<module sha256>-<config or all>.jsonl), so that only
	 * the first plan compiles them (about 20 s a config on two cores).
	 */
	cache = triton_cache_path(pi, gen);
	if (cache && fs_exists(cache) && fs_read_file(&cached, &clen, cache, 16u << 20) == 0) {
		if ((n = triton_entries(kernels, cached)) > 0)
			goto done; /* a cache that holds no entry is compiled again */
	}
	cmd = fs_printf("'%s' '%s' %s%s --jobs 2%s%s 2>/dev/null", py, tool, gen, triton_module_arg(pi->name),
			pi->forced ? " --config " : "", pi->forced ? pi->forced : "");
	if (!cmd || !(f = popen(cmd, "r"))) {
		*why = fs_printf("%s could not be started", tool);
		goto done;
	}
	while (fgets(line, sizeof(line), f)) {
		size_t k = strlen(line), have = out ? strlen(out) : 0;
		char *grown = realloc(out, have + k + 1);

		if (!grown)
			break;
		out = grown;
		memcpy(out + have, line, k + 1);
	}
	rc = pclose(f);
	n = out ? triton_entries(kernels, out) : 0;
	if (rc == -1 || !WIFEXITED(rc) || WEXITSTATUS(rc) == 2 || n <= 0)
		*why = fs_printf("%s for %s gave no figures (exit %d; run it by hand to see why)", tool, gen,
				 rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
	else if (cache && WEXITSTATUS(rc) == 0) {
		char *dir = strdup(cache), *slash = dir ? strrchr(dir, '/') : NULL;

		if (slash)
			*slash = '\0';
		if (slash && fs_mkdir_p(dir) == 0)
			fs_write_atomic(cache, out, strlen(out), 0644); /* a cache: a failed write only costs time */
		free(dir);
	}
done:
	free(cache);
	free(cached);
	free(out);
	free(py);
	free(tool);
	free(cmd);
	if (*why || !pi->nconfigs)
		return *why ? 1 : 0;
	return 0;
}

/* 1 if a kernel figure's kv_dtype ("any" for a combine kernel) is one some task of np plans. */
static int plan_runs_kv_dtype(const struct plan *np, const char *kv_dtype)
{
	if (!kv_dtype || !strcmp(kv_dtype, "any"))
		return 1;
	for (int i = 0; i < np->ntasks; i++) {
		const struct vs_operator *op = vs_op_of(&np->tasks[i]);
		const char *name = op->dtype_name(op->dtype(&np->tasks[i]));

		if (name && !strcmp(name, kv_dtype))
			return 1;
	}
	return 0;
}

/*
 * The resources of each Triton config of the plan's sides on an NVIDIA generation (sm_90, sm_120):
 * the compiler's figures are appended to the plan's build figures (np->build, created for them when
 * absent), or, when they are not known here, the build object says why ("triton": "not known: ...").
 * A forced side (IMPL@CONFIG) whose config needs more shared memory than the generation allows per
 * block, in a kernel of a kv dtype the plan's tasks run, is refused with both numbers (the module's
 * kernels of other dtypes are listed, never a reason: an fp8 card is not refused for a bf16 kernel).
 */
static int plan_triton_resources(struct plan *np, const char *gen)
{
	const struct plan_impl *sides[2] = {&np->baseline, &np->candidate};
	long limit = triton_smem_limit(gen);
	int err = 0, oom = 0;

	if (!limit)
		return 0;
	for (int k = 0; k < 2 && !err; k++) {
		const struct plan_impl *pi = sides[k];
		cJSON *kernels;
		char *why = NULL;
		int rc;

		if (!triton_module_arg(pi->name) ||
		    (k && !strcmp(sides[0]->name, pi->name) && !sides[0]->forced == !pi->forced &&
		     (!pi->forced || !strcmp(sides[0]->forced, pi->forced))))
			continue;
		if (!np->build) {
			np->build = cJSON_CreateObject();
			jsonfile_put_str(&oom, np->build, "target", gen);
			jsonfile_put_str(&oom, np->build, "compiler", "triton (tools/gpu/triton_cuda_resources.py)");
		}
		kernels = cJSON_GetObjectItem(np->build, "kernels");
		if (!kernels)
			kernels = jsonfile_put_arr(&oom, np->build, "kernels");
		if (oom || !kernels)
			return vs_oom();
		rc = triton_resources(kernels, &why, pi, gen);
		if (rc < 0)
			return rc;
		if (rc == 1) {
			jsonfile_put_str(&oom, np->build, "triton", why);
			free(why);
			if (oom)
				return vs_oom();
			continue;
		}
		if (!pi->forced)
			continue;
		{
			const cJSON *e;

			cJSON_ArrayForEach(e, kernels)
			{
				double smem = cJSON_GetNumberValue(cJSON_GetObjectItem(e, "smem"));

				if (strcmp(get_str(e, "impl") ? get_str(e, "impl") : "", pi->name) ||
				    strcmp(get_str(e, "config") ? get_str(e, "config") : "", pi->forced) ||
				    !plan_runs_kv_dtype(np, get_str(e, "kv_dtype")))
					continue;
				if (smem > (double)limit)
					return vs_error(VS_EUNSUPPORTED,
							"%s '%s@%s': its %s (%s) needs %.0f bytes of shared memory on "
							"%s, "
							"above the %ld bytes a block may have there (Triton's figures: "
							"tools/gpu/triton_cuda_resources.py %s)",
							k ? "candidate" : "baseline", pi->name, pi->forced,
							get_str(e, "kernel"), get_str(e, "kv_dtype"), smem, gen, limit,
							gen);
			}
		}
	}
	return err;
}

/*
 * The configs of each @triton.autotune kernel of the plan's Python sides, compiled ahead for gen
 * (pyimpl_autotune_fit(), docs/DESIGN.md "Autotuned kernels"): their "python" objects say which
 * configs the autotuner would prune there and why. Informative, never a refusal.
 */
static int plan_autotune_fit(struct plan *np, const char *gen)
{
	struct plan_impl *sides[2] = {&np->baseline, &np->candidate};
	int err = 0;

	for (int k = 0; k < 2 + np->nrefs && !err; k++) {
		struct plan_impl *pi = k < 2 ? sides[k] : &np->refs[k - 2].impl;
		const struct pyimpl *py = pi->python_json ? pyimpl_for_impl(pi->name) : NULL;

		if (py && strstr(pi->python_json, "\"autotune\":"))
			err = pyimpl_autotune_fit(&pi->python_json, py->real_path, gen);
	}
	return err;
}

/* ---- references ------------------------------------------------------------------------- */

/* A --reference that names a file (what --candidate-lib takes) rather than an implementation. */
static int reference_is_file(const char *spec)
{
	size_t n = strlen(spec);

	return strchr(spec, '/') || (n > 3 && (!strcmp(spec + n - 3, ".so") || !strcmp(spec + n - 3, ".py")));
}

/*
 * Why reference ref skips each task of p (NULL: it runs it): no config for the generation, or its
 * supports() says no. *out is an array of p->ntasks reasons (malloc'd).
 */
static int reference_skips(char ***out, const struct plan *p, const struct plan_impl *ref)
{
	const struct mla_decode_impl *impl = mla_decode_impl_find(ref->name);
	char **skip = calloc((size_t)p->ntasks + 1, sizeof(*skip));

	if (!skip)
		return vs_oom();
	for (int i = 0; i < p->ntasks; i++) {
		char why[256] = "";

		if (ref->nconfigs == 0)
			skip[i] = fs_printf("no configs for generation '%s'", p->gen);
		else if (impl && vs_op_of(&p->tasks[i])->impl_skips(impl, &p->tasks[i], why, sizeof(why)))
			skip[i] = strdup(why);
		else
			continue;
		if (!skip[i]) {
			for (int k = 0; k < i; k++)
				free(skip[k]);
			free(skip);
			return vs_oom();
		}
	}
	*out = skip;
	return 0;
}

/* ---- pinned configs (--configs-from; docs/DESIGN.md "Pinned configs") ------------------------ */

static const char *get_str(const cJSON *o, const char *key);

/* The pin slot of role pi in pin, or NULL when pi is none of p's roles. */
static int *pin_slot(struct plan_pin *pin, const struct plan *p, const struct plan_impl *pi)
{
	if (pi == &p->baseline)
		return &pin->baseline;
	if (pi == &p->candidate)
		return &pin->candidate;
	for (int k = 0; k < p->nrefs; k++)
		if (pi == &p->refs[k].impl)
			return &pin->refs[k];
	return NULL;
}

const struct mla_decode_config *plan_task_configs(const struct plan *p, const struct plan_impl *pi, int i, int *n)
{
	int *slot = p->pins && i >= 0 && i < p->ntasks ? pin_slot(&p->pins[i], p, pi) : NULL;

	if (slot && *slot >= 0 && *slot < pi->nconfigs) {
		*n = 1;
		return &pi->configs[*slot];
	}
	*n = pi->nconfigs;
	return pi->configs;
}

static int config_find(const struct plan_impl *pi, const char *name)
{
	for (int c = 0; name && c < pi->nconfigs; c++)
		if (!strcmp(pi->configs[c].name, name))
			return c;
	return -1;
}

/* Whether role pi of p runs task i (not in its skip list; a reference: not skipped by it). */
static int role_runs(const struct plan *p, const struct plan_impl *pi, int i)
{
	for (int k = 0; k < p->nrefs; k++)
		if (pi == &p->refs[k].impl)
			return !plan_reference_skip(p, k, i) && pi->nconfigs > 0;
	return !plan_skip_reason(p, pi, i);
}

static int pins_alloc(struct plan *np)
{
	np->pins = calloc((size_t)np->ntasks, sizeof(*np->pins));
	VS_CHECK_ALLOC(np->pins);
	for (int i = 0; i < np->ntasks; i++) {
		np->pins[i].baseline = np->pins[i].candidate = -1;
		for (int k = 0; k < VS_PLAN_MAX_REFERENCES; k++)
			np->pins[i].refs[k] = -1;
	}
	return 0;
}

int plan_pin(struct plan *p, int i, const struct plan_impl *pi, const char *config)
{
	int *slot, ci = config_find(pi, config);

	if (i < 0 || i >= p->ntasks || !pin_slot(&(struct plan_pin){0}, p, pi))
		return vs_error(VS_EUSAGE, "plan_pin: no such task or role");
	if (ci < 0)
		return VS_ENOTFOUND; /* the caller's line names the task and where the name came from */
	if (!role_runs(p, pi, i))
		return 1;
	if (!p->pins && pins_alloc(p))
		return VS_ENOMEM;
	slot = pin_slot(&p->pins[i], p, pi);
	*slot = ci;
	return 0;
}

int plan_pins_source(struct plan *p, const char *run, const char *result_sha256)
{
	char *r = strdup(run);

	VS_CHECK_ALLOC(r);
	free(p->pins_run);
	p->pins_run = r;
	snprintf(p->pins_sha256, sizeof(p->pins_sha256), "%s", result_sha256);
	return 0;
}

/* A task's "configs" object: the pinned config of each role (NULL when the task pins none). */
static cJSON *pins_to_json(int *oom, const struct plan *p, int i)
{
	const struct plan_pin *pin = p->pins ? &p->pins[i] : NULL;
	cJSON *j, *refs = NULL;

	if (!pin)
		return NULL;
	j = cJSON_CreateObject();
	if (pin->baseline >= 0)
		jsonfile_put_str(oom, j, "baseline", p->baseline.configs[pin->baseline].name);
	if (pin->candidate >= 0)
		jsonfile_put_str(oom, j, "candidate", p->candidate.configs[pin->candidate].name);
	for (int k = 0; k < p->nrefs; k++) {
		if (pin->refs[k] < 0)
			continue;
		if (!refs)
			refs = jsonfile_put_obj(oom, j, "references");
		jsonfile_put_str(oom, refs, p->refs[k].impl.name, p->refs[k].impl.configs[pin->refs[k]].name);
	}
	if (!j)
		*oom = 1;
	else if (!j->child) {
		cJSON_Delete(j);
		return NULL;
	}
	return j;
}

/* One pinned role of tasks[i].configs (plan_pin()), its refusals as schema errors of the plan file. */
static int pin_from_json(struct plan *np, const struct plan_impl *pi, const cJSON *v, int i, const char *path,
			 const char *key)
{
	int rc = cJSON_IsString(v) ? plan_pin(np, i, pi, v->valuestring) : VS_ENOTFOUND;

	if (rc == VS_ENOTFOUND)
		return vs_error(VS_ESCHEMA, "%s: tasks[%d].configs.%s: '%s' is not a config of %s", path, i, key,
				cJSON_IsString(v) ? v->valuestring : "(not a string)", pi->name);
	if (rc == 1)
		return vs_error(VS_ESCHEMA, "%s: tasks[%d].configs.%s: %s does not run this task", path, i, key,
				pi->name);
	return rc;
}

/* "pinned" and every task's "configs" (after the tasks and references are read). */
static int pins_from_json(struct plan *np, const cJSON *root, const char *path)
{
	const cJSON *pj = cJSON_GetObjectItemCaseSensitive(root, "pinned"), *t, *v;
	const char *run = get_str(pj, "run"), *sha = get_str(pj, "result_sha256");
	int i = 0, err;

	if (!pj) {
		cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(root, "tasks"))
		{
			if (cJSON_GetObjectItemCaseSensitive(t, "configs"))
				return vs_error(VS_ESCHEMA,
						"%s: tasks[%d].configs without \"pinned\" (the run they come from): "
						"the plan "
						"was edited; emit it again",
						path, i);
			i++;
		}
		return 0;
	}
	if (!run || !*run || strchr(run, '/') || !sha || strlen(sha) != 64)
		return vs_error(VS_ESCHEMA,
				"%s: \"pinned\" needs \"run\" (an eval dir's name) and "
				"\"result_sha256\" (64 hex digits)",
				path);
	if ((err = pins_alloc(np)))
		return err;
	np->pins_run = strdup(run);
	VS_CHECK_ALLOC(np->pins_run);
	memcpy(np->pins_sha256, sha, 65);
	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(root, "tasks"))
	{
		const cJSON *cj = cJSON_GetObjectItemCaseSensitive(t, "configs");

		if (cj && !cJSON_IsObject(cj))
			return vs_error(VS_ESCHEMA, "%s: tasks[%d].configs must be an object", path, i);
		cJSON_ArrayForEach(v, cj)
		{
			if (!strcmp(v->string, "baseline"))
				err = pin_from_json(np, &np->baseline, v, i, path, v->string);
			else if (!strcmp(v->string, "candidate"))
				err = pin_from_json(np, &np->candidate, v, i, path, v->string);
			else if (!strcmp(v->string, "references") && cJSON_IsObject(v)) {
				const cJSON *r;

				cJSON_ArrayForEach(r, v)
				{
					int k = 0;

					while (k < np->nrefs && strcmp(np->refs[k].impl.name, r->string))
						k++;
					if (k == np->nrefs)
						return vs_error(VS_ESCHEMA,
								"%s: tasks[%d].configs.references: '%s' is not a "
								"reference "
								"of this plan",
								path, i, r->string);
					if ((err = pin_from_json(np, &np->refs[k].impl, r, i, path, r->string)))
						return err;
				}
			} else
				err = vs_error(VS_ESCHEMA,
					       "%s: tasks[%d].configs: unknown key '%s' (baseline, candidate, "
					       "references)",
					       path, i, v->string);
			if (err)
				return err;
		}
		i++;
	}
	return 0;
}

static void reference_release(struct plan_reference *r, int ntasks)
{
	for (int i = 0; r->skip && i < ntasks; i++)
		free(r->skip[i]);
	free(r->skip);
	r->skip = NULL;
}

/*
 * Whether name may not be reference k of np: it is the candidate (the ratios are against it) or a
 * reference before k. The baseline may be a reference too (its ratio then repeats the speedup).
 */
static const char *role_taken(const struct plan *np, const char *name, int k)
{
	if (!strcmp(name, np->candidate.name))
		return "the candidate";
	for (int j = 0; j < k; j++)
		if (!strcmp(name, np->refs[j].impl.name))
			return "another reference";
	return NULL;
}

/* The --reference implementations of o, with the tasks each skips (after np's tasks are built). */
static int plan_references(struct plan *np, const struct plan_options *o, const char *gen)
{
	int err;

	if (o->nreferences > VS_PLAN_MAX_REFERENCES)
		return vs_error(VS_EUSAGE, "%d references given: a plan takes at most %d", o->nreferences,
				VS_PLAN_MAX_REFERENCES);
	for (int k = 0; k < o->nreferences; k++) {
		const char *spec = o->references[k], *name = spec, *taken, *cfg = NULL;
		struct plan_reference *r = &np->refs[k];
		char buf[128];

		if (!spec || !*spec)
			return vs_error(VS_EUSAGE, "--reference needs an implementation name or a plugin file");
		/* A file goes through the code of --candidate-lib, a name through that of --candidate. */
		if (reference_is_file(spec)) {
			name = NULL;
			if ((err = plan_lib(&name, spec, "reference", gen)))
				return err;
		} else if ((err = side_split(buf, sizeof(buf), &name, &cfg, "--reference")) ||
			   (err = plan_shipped(name, "reference", gen))) {
			return err; /* a shipped Python module by its name, as --candidate takes it */
		}
		if (!mla_decode_impl_find(name))
			return known_impls_error("reference", name);
		if ((taken = role_taken(np, name, k)))
			return vs_error(
				VS_EUSAGE, "--reference '%s' is %s of this plan already%s", name, taken,
				cfg ? " (a reference is another implementation, whatever config it is forced to)" : "");
		np->nrefs = k + 1;
		if ((err = plan_impl_fill(&r->impl, "reference", name, gen, 1)) ||
		    (cfg && (err = plan_impl_force(&r->impl, "reference", cfg, gen))) ||
		    (err = reference_skips(&r->skip, np, &r->impl)))
			return err;
	}
	return 0;
}

const char *plan_reference_skip(const struct plan *p, int k, int i)
{
	if (k < 0 || k >= p->nrefs || i < 0 || i >= p->ntasks || !p->refs[k].skip)
		return NULL;
	return p->refs[k].skip[i];
}

int plan_task_index(const struct plan *p, const char *hash)
{
	for (int i = 0; p->task_hash && i < p->ntasks; i++)
		if (!strcmp(p->task_hash[i], hash))
			return i;
	return -1;
}

static void protocol_defaults(struct plan_protocol *pr, int gpu, const char *tier)
{
	memset(pr, 0, sizeof(*pr));
	pr->rel_halfwidth = 0.01;
	pr->resamples = 2000;
	pr->seed = 20261129;
	pr->flush_factor = 2.0;
	pr->review_bound = 10.0;
	if (gpu) {
		pr->warmup = 5;
		pr->tuning_samples = 10;
		pr->min_pairs = 50;
		pr->max_pairs = 1000;
		pr->max_seconds = 5.0;
		pr->check_every = 16;
	} else {
		pr->warmup = 1;
		pr->tuning_samples = 3;
		pr->min_pairs = 10;
		pr->max_pairs = 200;
		pr->max_seconds = strcmp(tier, "smoke") ? 30.0 : 8.0;
		pr->check_every = 8;
	}
}

/* ---- the e2e stage (docs/DESIGN.md "End to end") ---------------------------------------------- */

int plan_e2e_task(const struct task_spec *s)
{
	return vs_op_of(s)->e2e_task(s);
}

static void e2e_release(struct plan_e2e *e)
{
	free(e->step_path);
	free(e->step_json);
	free(e->step_name);
	free(e->tasks);
	memset(e, 0, sizeof(*e));
}

static void e2e_protocol_defaults(struct plan_e2e *e, int gpu)
{
	e->min_pairs = gpu ? 20 : 5;
	e->max_pairs = gpu ? 400 : 20;
	e->max_seconds = gpu ? 3.0 : 5.0;
	e->rel_halfwidth = 0.005;
}

/* The plan's "e2e"."step" object of a registered step module (compact JSON), or NULL. */
static char *e2e_step_json(const struct pyimpl *st, const char *rel)
{
	char *base = python_json_of(st, rel), *text = NULL;
	cJSON *j = base ? cJSON_Parse(base) : NULL;

	if (j && cJSON_AddStringToObject(j, "name", st->name))
		text = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	free(base);
	return text;
}

/* Register the step module at file for a plan whose cores run on the gpu (or the cpu) backend. */
static int e2e_register(const struct pyimpl **out, const char *file, int gpu, const char *where)
{
	const struct pyimpl *st = NULL;
	int err;

	if ((err = pyimpl_step_register(&st, file)))
		return err;
	if ((strcmp(st->backend, "cpu") == 0) == gpu)
		return vs_error(VS_EUSAGE,
				"%s: e2e step module '%s' runs on the %s backend, the plan's cores on the %s", where,
				file, st->backend, gpu ? "gpu" : "cpu");
	*out = st;
	return 0;
}

static int e2e_build(struct plan *np, const struct card *c, const struct plan_options *o, int gpu)
{
	struct plan_e2e *e = &np->e2e;
	const struct pyimpl *st = NULL;
	char *file = NULL;
	int err;

	file = o && o->e2e_step ? strdup(o->e2e_step) :
				  fs_join(vs_repo_root(), gpu ? PLAN_E2E_STEP_GPU : PLAN_E2E_STEP_CPU);
	VS_CHECK_ALLOC(file);
	err = e2e_register(&st, file, gpu, c->path);
	free(file);
	if (err)
		return err;
	e->enabled = 1;
	e->step_path = py_rel(st->real_path);
	e->step_name = strdup(st->name);
	e->step_json = e->step_path ? e2e_step_json(st, e->step_path) : NULL;
	e->tasks = calloc((size_t)np->ntasks + 1, 1);
	if (!e->step_path || !e->step_name || !e->step_json || !e->tasks)
		return vs_oom();
	e->step_helpers_planned = 1;
	memcpy(e->step_sha256, st->sha256, sizeof(e->step_sha256));
	for (int i = 0; i < np->ntasks; i++)
		e->tasks[i] = (unsigned char)plan_e2e_task(&np->tasks[i]);
	e2e_protocol_defaults(e, gpu);
	e->gate = c->scope && !strcmp(c->scope, "e2e");
	e->delta_min_pct = c->expects.has_e2e_delta_min_pct ? c->expects.e2e_delta_min_pct : 0;
	return 0;
}

static cJSON *e2e_to_json(int *oom, const struct plan *p)
{
	const struct plan_e2e *e = &p->e2e;
	cJSON *j = cJSON_CreateObject(), *tasks;

	if (!j) {
		*oom = 1;
		return NULL;
	}
	jsonfile_put(oom, j, "step", cJSON_Parse(e->step_json));
	tasks = jsonfile_put_arr(oom, j, "tasks");
	for (int i = 0; i < p->ntasks; i++)
		if (e->tasks[i])
			jsonfile_put(oom, tasks, NULL, cJSON_CreateString(p->task_hash[i]));
	jsonfile_put_num(oom, j, "min_pairs", e->min_pairs);
	jsonfile_put_num(oom, j, "max_pairs", e->max_pairs);
	jsonfile_put_num(oom, j, "max_seconds", e->max_seconds);
	jsonfile_put_num(oom, j, "rel_halfwidth", e->rel_halfwidth);
	return j;
}

static int evidence_mode;
static int get_int(int *out, const cJSON *o, const char *key, int lo, int hi, const char *path, const char *where);
static int get_real(double *out, const cJSON *o, const char *key, double lo, double hi, const char *path,
		    const char *where);

/*
 * A plan's "e2e" object: the step module checked against its sha256 and registered (not in
 * evidence mode), the task list equal to what plan_e2e_task() selects, the protocol in range.
 */
static int e2e_from_json(struct plan *np, const cJSON *ej, const cJSON *gates, const char *path)
{
	struct plan_e2e *e = &np->e2e;
	const cJSON *sj = cJSON_GetObjectItemCaseSensitive(ej, "step"), *tasks, *it;
	const char *file = sj ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sj, "path")) : NULL;
	const char *sha = sj ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sj, "sha256")) : NULL;
	const char *name = sj ? cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(sj, "name")) : NULL;
	const cJSON *dm = cJSON_GetObjectItemCaseSensitive(gates, "e2e_delta_min_pct");
	char hex[65];
	int err = 0, n = 0, gpu = strcmp(np->candidate.backend ? np->candidate.backend : "cpu", "cpu") != 0;

	if (!ej)
		return 0;
	if (!cJSON_IsObject(ej) || !file || !sha || strlen(sha) != 64 || !name)
		return vs_error(VS_ESCHEMA,
				"%s: \"e2e\" needs a \"step\" with \"path\", \"name\" and a 64-digit \"sha256\"", path);
	e->enabled = 1;
	e->step_path = strdup(file);
	e->step_name = strdup(name);
	e->step_json = cJSON_PrintUnformatted(sj);
	e->tasks = calloc((size_t)np->ntasks + 1, 1);
	if (!e->step_path || !e->step_name || !e->step_json || !e->tasks)
		return vs_oom();
	memcpy(e->step_sha256, sha, 65);
	if (!evidence_mode) {
		const struct pyimpl *st = NULL;
		char *abs = py_abs(file);

		VS_CHECK_ALLOC(abs);
		if (!fs_exists(abs))
			err = vs_error(VS_ENOTFOUND, "%s: e2e step module '%s' does not exist", path, file);
		else if (!(err = fs_sha256_file(hex, abs)) && strcmp(hex, sha))
			err = vs_error(VS_EVERIFY,
				       "%s: e2e step module '%s' changed since the plan was made (sha256 %s, plan %s): "
				       "emit the plan again",
				       path, file, hex, sha);
		if (!err)
			err = e2e_register(&st, abs, gpu, path);
		if (!err && strcmp(st->name, name))
			err = vs_error(VS_ESCHEMA, "%s: e2e step module '%s' provides '%s', not '%s'", path, file,
				       st->name, name);
		if (!err) {
			char *who = fs_printf("%s: e2e step module '%s'", path, file);

			err = who ? helpers_check(&e->step_helpers_planned, sj, st->helpers_json, who) : vs_oom();
			free(who);
		}
		free(abs);
		if (err)
			return err;
	} else {
		char *who = fs_printf("%s: e2e step module '%s'", path, file);

		err = who ? helpers_check(&e->step_helpers_planned, sj, NULL, who) : vs_oom();
		free(who);
		if (err)
			return err;
	}
	tasks = cJSON_GetObjectItemCaseSensitive(ej, "tasks");
	cJSON_ArrayForEach(it, tasks)
	{
		int i = cJSON_IsString(it) ? plan_task_index(np, it->valuestring) : -1;

		if (i < 0)
			return vs_error(VS_ESCHEMA, "%s: e2e.tasks[%d] names no task of the plan", path, n);
		e->tasks[i] = 1;
		n++;
	}
	for (int i = 0; i < np->ntasks; i++)
		if (e->tasks[i] != plan_e2e_task(&np->tasks[i]))
			return vs_error(VS_EVERIFY,
					"%s: e2e.tasks %s task '%s' (%s): the plan was edited; emit it again", path,
					e->tasks[i] ? "lists" : "lacks", np->tasks[i].name,
					e->tasks[i] ? "not a one-token bf16 task of the model's heads" :
						      "one it must list");
	if ((err = get_int(&e->min_pairs, ej, "min_pairs", 2, 10000000, path, "e2e")) ||
	    (err = get_int(&e->max_pairs, ej, "max_pairs", e->min_pairs, 10000000, path, "e2e")) ||
	    (err = get_real(&e->max_seconds, ej, "max_seconds", 0, 1e6, path, "e2e")) ||
	    (err = get_real(&e->rel_halfwidth, ej, "rel_halfwidth", 0, 1, path, "e2e")))
		return err;
	if (dm) {
		if (!cJSON_IsNumber(dm))
			return vs_error(VS_ESCHEMA, "%s: gates.e2e_delta_min_pct must be a number", path);
		e->gate = 1;
		e->delta_min_pct = dm->valuedouble;
	}
	return 0;
}

/* The shape grid's bit of tier (T_SMOKE, T_STD, T_FULL), 0 for a name that is not a tier. */
static int tier_bit_of(const char *tier)
{
	for (int i = 0; plan_tiers[i]; i++)
		if (!strcmp(plan_tiers[i], tier))
			return 1 << i;
	return 0;
}

/* ---- workload plans (docs/DESIGN.md "Workloads") ---------------------------------------------- */

char *plan_workload_path(const char *arg)
{
	char *name, *path;

	if (strchr(arg, '/') || has_suffix(arg, ".yaml"))
		return strdup(arg);
	name = fs_printf("workloads/%s.yaml", arg);
	path = name ? fs_join(vs_repo_root(), name) : NULL;
	free(name);
	return path;
}

static void workload_plan_release(struct plan_workload *w)
{
	if (!w)
		return;
	free(w->id);
	free(w->path);
	free(w->concurrency);
	free(w->steps);
	free(w->weight);
	free(w);
}

/*
 * The workload at file (as the plan or the user names it; a repo-relative one is read against the
 * repository root), its trace, and its tasks. want_sha256 (or NULL): the hash the plan recorded,
 * refused with both hashes when the file changed since.
 */
static int workload_tasks_of(struct workload_tasks *wt, struct workload *w, const char *file, const char *want_sha256)
{
	struct workload_trace trace = {0};
	char *abs = file[0] == '/' ? strdup(file) : NULL;
	int err;

	if (!abs && !access(file, R_OK))
		abs = strdup(file);
	if (!abs)
		abs = fs_join(vs_repo_root(), file);
	VS_CHECK_ALLOC(abs);
	memset(w, 0, sizeof(*w));
	memset(wt, 0, sizeof(*wt));
	err = workload_load(w, abs);
	free(abs);
	if (err)
		return err;
	if (want_sha256 && strcmp(want_sha256, w->sha256)) {
		err = vs_error(VS_EVERIFY,
			       "%s: sha256 is %.16s..., the plan was made from %.16s...: the workload changed since "
			       "the "
			       "plan was emitted; emit it again",
			       file, w->sha256, want_sha256);
		workload_release(w);
		return err;
	}
	if (w->trace_path &&
	    (err = workload_trace_read(&trace, w->trace_path, w->context_column, w->generated_column))) {
		workload_release(w);
		return err;
	}
	err = workload_derive(wt, w, w->trace_path ? &trace : NULL);
	workload_trace_release(&trace);
	if (err)
		workload_release(w);
	return err;
}

static const char *nz_or(const char *s)
{
	return s && *s ? s : "(any)";
}

int plan_build(struct plan *p, const struct card *c, const struct plan_options *o)
{
	struct plan np;
	const char *tier = o && o->tier ? o->tier : "smoke";
	const char *gen = o && o->gen ? o->gen : NULL;
	const char *base = o && o->baseline ? o->baseline : NULL;
	const char *cand = o && o->candidate ? o->candidate : NULL;
	const char *base_cfg = NULL, *cand_cfg = NULL;
	char base_buf[128], cand_buf[128], base_label[256], cand_label[256];
	int tier_bit = 0, err = 0, gpu;
	const struct vs_operator *op = vs_operator_for_card(c->match.operator_name);

	memset(&np, 0, sizeof(np));
	np.generator = VS_GENERATOR_VERSION;
	if (o && o->workload && o->tier)
		return vs_error(VS_EUSAGE,
				"--tier %s and --workload %s: a workload plan's tasks come from its traffic, "
				"not from a tier; give one of them",
				o->tier, o->workload);
	if (o && o->workload)
		tier = "workload";
	else if (!(tier_bit = tier_bit_of(tier)))
		return vs_error(VS_EUSAGE, "unknown tier '%s' (smoke, standard, full)", tier);
	if (!c->scope || (strcmp(c->scope, "kernel") && strcmp(c->scope, "e2e")))
		return vs_error(VS_EUNSUPPORTED, "%s: scope '%s' cannot be planned: kernel and e2e are", c->path,
				c->scope ? c->scope : "");
	if (!op)
		return vs_error(VS_EUNSUPPORTED,
				"%s: match.operator '%s' is not an operator this tool plans "
				"(mla_attention)",
				c->path, c->match.operator_name ? c->match.operator_name : "");
	if (!card_list_has(&c->match.regimes, "decode"))
		return vs_error(VS_EUNSUPPORTED, "%s: match.regimes has no 'decode': only MLA decode is planned",
				c->path);
	if ((err = op->plan_card(c)))
		return err;
	if (!gen) {
		if (c->match.gens.count < 1)
			return vs_error(VS_ESCHEMA, "%s: match.gens is empty", c->path);
		gen = c->match.gens.items[0];
	} else if (!card_list_has(&c->match.gens, gen)) {
		return vs_error(VS_EUSAGE, "generation '%s' is not in %s's match.gens", gen, c->path);
	}
	if ((err = side_split(base_buf, sizeof(base_buf), &base, &base_cfg, "--baseline")) ||
	    (err = side_split(cand_buf, sizeof(cand_buf), &cand, &cand_cfg, "--candidate")))
		return err;
	if (o && ((err = plan_lib(&base, o->baseline_lib, "baseline", gen)) ||
		  (err = plan_lib(&cand, o->candidate_lib, "candidate", gen))))
		return err;
	/* A --baseline-lib/--candidate-lib of the implementation the card forces takes its config. */
	if (base && !base_cfg && o && o->baseline_lib && !o->baseline)
		base_cfg = card_side_config(c->match.from_backend, base);
	if (cand && !cand_cfg && o && o->candidate_lib && !o->candidate)
		cand_cfg = card_side_config(c->match.to_backend, cand);
	if (!base) {
		base = c->match.from_backend;
		if ((err = side_split(base_buf, sizeof(base_buf), &base, &base_cfg, "match.from_backend")))
			return err;
	}
	if (!cand) {
		cand = c->match.to_backend;
		if ((err = side_split(cand_buf, sizeof(cand_buf), &cand, &cand_cfg, "match.to_backend")))
			return err;
	}
	base = family_impl(base);
	cand = family_impl(cand);
	if ((err = plan_shipped(base, "baseline", gen)) || (err = plan_shipped(cand, "candidate", gen)))
		return err;
	if (!base || !*base)
		return vs_error(VS_EUSAGE, "%s: match.from_backend is unset: name a baseline with --baseline IMPL",
				c->path);
	if (!cand || !*cand)
		return vs_error(VS_EUSAGE, "%s: match.to_backend is unset: name a candidate with --candidate IMPL",
				c->path);
	if (!mla_decode_impl_find(base))
		return known_impls_error("baseline", base);
	if (!mla_decode_impl_find(cand))
		return known_impls_error("candidate", cand);
	snprintf(base_label, sizeof(base_label), "%s%s%s", base, base_cfg ? "@" : "", base_cfg ? base_cfg : "");
	snprintf(cand_label, sizeof(cand_label), "%s%s%s", cand, cand_cfg ? "@" : "", cand_cfg ? cand_cfg : "");
	if (!strcmp(base_label, cand_label) && (base_cfg || cand_cfg))
		return vs_error(VS_EUSAGE,
				"the baseline and the candidate are both %s: forced configs of one implementation "
				"must differ (an A/A run validates nothing)",
				base_label);

	np.card_id = strdup(c->id);
	np.card_path = strdup(c->path);
	np.tier = strdup(tier);
	np.gen = strdup(gen);
	np.regime = strdup("decode");
	np.model =
		strdup(c->validation.model && *c->validation.model ? c->validation.model :
								     "DeepSeek-V3 MLA (d_qk 576, d_v 512), h_q 7-128");
	if (!np.card_id || !np.card_path || !np.tier || !np.gen || !np.regime || !np.model) {
		err = vs_oom();
		goto done;
	}
	err = card_hash(c, np.card_hash);
	if (!err)
		err = plan_impl_fill(&np.baseline, "baseline", base, gen, 0);
	if (!err)
		err = plan_impl_fill(&np.candidate, "candidate", cand, gen, 0);
	if (!err && base_cfg)
		err = plan_impl_force(&np.baseline, "baseline", base_cfg, gen);
	if (!err && cand_cfg)
		err = plan_impl_force(&np.candidate, "candidate", cand_cfg, gen);
	if (err)
		goto done;
	if (!card_backend_matches(c->match.from_backend, base_label) ||
	    !card_backend_matches(c->match.to_backend, cand_label))
		vs_warn("%s names %s -> %s, this plan measures %s -> %s: its runs are an A/B of their own and cannot "
			"be recorded into the card",
			c->path, nz_or(c->match.from_backend), nz_or(c->match.to_backend), base_label, cand_label);

	gpu = strcmp(np.candidate.backend, "cpu") != 0;

	if (o && o->workload) {
		struct workload w;
		struct workload_tasks wt;
		char *file = plan_workload_path(o->workload), *rel;

		if (!file) {
			err = vs_oom();
			goto done;
		}
		err = workload_tasks_of(&wt, &w, file, NULL);
		if (!err) {
			err = op->derive_tasks(&np, c, 0, gpu, &w, &wt);
			rel = err ? NULL : py_rel(file);
			if (!err && (!rel || !(np.workload->id = strdup(w.id))))
				err = vs_oom();
			if (!err)
				np.workload->path = rel;
			if (!err)
				np.workload->claimed = card_list_has(&c->expects.workloads, w.id);
			if (!err && !np.workload->claimed)
				vs_warn("%s does not claim for workload '%s' (expects.workloads): this plan's runs "
					"cannot be "
					"recorded into the card; list it there first",
					c->path, w.id);
			if (!err)
				err = op->form_note(&np.form_note, c, &w);
			workload_tasks_release(&wt);
			workload_release(&w);
		}
		free(file);
		if (err)
			goto done;
	} else if ((err = op->derive_tasks(&np, c, tier_bit, gpu, NULL, NULL)) ||
		   (err = op->form_note(&np.form_note, c, NULL))) {
		goto done;
	}
	if (o && o->nreferences && (err = plan_references(&np, o, gen)))
		goto done;
	protocol_defaults(&np.protocol, gpu, tier);
	if (o && o->timing && strcmp(o->timing, "graph_replay") && strcmp(o->timing, "launch")) {
		err = vs_error(VS_EUSAGE, "--timing '%s': the timing modes are graph_replay and launch", o->timing);
		goto done;
	}
	if (o && o->timing && !strcmp(o->timing, "graph_replay") && !gpu) {
		err = vs_error(VS_EUSAGE, "--timing graph_replay needs a GPU plan: the CPU has no graphs (its plans "
					  "time the launch)");
		goto done;
	}
	snprintf(np.protocol.timing, sizeof(np.protocol.timing), "%s",
		 o && o->timing ? o->timing :
		 gpu            ? "graph_replay" :
				  "launch");
	if ((err = skips_compute(&np.baseline.skips, &np.baseline.nskips, mla_decode_impl_find(base), &np)) ||
	    (err = skips_compute(&np.candidate.skips, &np.candidate.nskips, mla_decode_impl_find(cand), &np)))
		goto done;
	np.speedup_min = c->expects.has_isolated_speedup_min ? c->expects.isolated_speedup_min : 0;
	np.parity_required = !c->expects.parity || strcmp(c->expects.parity, "advisory") != 0;
	np.capture_required = gpu;
	if (((o && o->e2e) || !strcmp(c->scope, "e2e")) && (err = e2e_build(&np, c, o, gpu)))
		goto done;
	if (!strncmp(gen, "gfx", 3) || !strncmp(gen, "sm_90", 5))
		np.build = load_build_figures(o ? o->build_figures : NULL, np.baseline.name, np.candidate.name, gen);
	if ((err = plan_triton_resources(&np, gen)) || (err = plan_autotune_fit(&np, gen)))
		goto done;
	*p = np;
	return 0;
done:
	plan_release(&np);
	return err;
}

static cJSON *config_to_json(int *oom, const struct mla_decode_config *c)
{
	cJSON *j = cJSON_CreateObject();

	jsonfile_put_str(oom, j, "name", c->name);
	jsonfile_put_num(oom, j, "block_n", c->block_n);
	jsonfile_put_num(oom, j, "block_h", c->block_h);
	jsonfile_put_num(oom, j, "num_splits", c->num_splits);
	jsonfile_put_num(oom, j, "num_warps", c->num_warps);
	jsonfile_put_num(oom, j, "num_stages", c->num_stages);
	return j;
}

static cJSON *impl_to_json(int *oom, const struct plan_impl *pi)
{
	cJSON *j = cJSON_CreateObject(), *arr;

	jsonfile_put_str(oom, j, "impl", pi->name);
	jsonfile_put_str(oom, j, "backend", pi->backend);
	if (pi->plugin_path) {
		cJSON *pl = jsonfile_put_obj(oom, j, "plugin");

		jsonfile_put_str(oom, pl, "path", pi->plugin_path);
		jsonfile_put_str(oom, pl, "sha256", pi->plugin_sha256);
	}
	if (pi->python_json)
		jsonfile_put(oom, j, "python", cJSON_Parse(pi->python_json));
	if (pi->forced)
		jsonfile_put_str(oom, j, "forced", pi->forced);
	arr = jsonfile_put_arr(oom, j, "configs");
	for (int i = 0; i < pi->nconfigs; i++)
		jsonfile_put(oom, arr, NULL, config_to_json(oom, &pi->configs[i]));
	return j;
}

/* "references": each an implementation as the candidate is written, with the tasks it skips and why. */
static cJSON *references_to_json(int *oom, const struct plan *p)
{
	cJSON *arr = cJSON_CreateArray();

	if (!arr)
		*oom = 1;
	for (int k = 0; arr && k < p->nrefs; k++) {
		cJSON *j = impl_to_json(oom, &p->refs[k].impl), *skips = jsonfile_put_arr(oom, j, "skips");

		for (int i = 0; i < p->ntasks; i++) {
			const char *why = plan_reference_skip(p, k, i);
			cJSON *s;

			if (!why)
				continue;
			s = cJSON_CreateObject();
			jsonfile_put_str(oom, s, "task", p->task_hash[i]);
			jsonfile_put_str(oom, s, "name", p->tasks[i].name);
			jsonfile_put_str(oom, s, "reason", why);
			if (!skips || !s || !cJSON_AddItemToArray(skips, s)) {
				*oom = 1;
				cJSON_Delete(s);
			}
		}
		if (!j || !cJSON_AddItemToArray(arr, j)) {
			*oom = 1;
			cJSON_Delete(j);
		}
	}
	return arr;
}

/* The tasks pi does not run, with supports()'s reasons (written only when there are some). */
static void skips_to_json(int *oom, cJSON *j, const struct plan_impl *pi, const struct plan *p)
{
	cJSON *arr;

	if (!pi->nskips || !j)
		return;
	arr = jsonfile_put_arr(oom, j, "unsupported");
	for (int k = 0; arr && k < pi->nskips; k++) {
		cJSON *t = cJSON_CreateObject();

		for (int i = 0; i < p->ntasks; i++)
			if (!strcmp(p->task_hash[i], pi->skips[k].hash))
				jsonfile_put_str(oom, t, "task", p->tasks[i].name);
		jsonfile_put_str(oom, t, "hash", pi->skips[k].hash);
		jsonfile_put_str(oom, t, "reason", pi->skips[k].reason);
		jsonfile_put(oom, arr, NULL, t);
	}
}

/* Seeds above 2^53 do not survive a JSON number: they are written as decimal strings. */
/* A double as the shortest text that reads back to it (cJSON's printer does not round-trip). */
static cJSON *real_json(int *oom, double v)
{
	char t[40];
	cJSON *j;

	for (int prec = 15; prec <= 17; prec++) {
		snprintf(t, sizeof(t), "%.*g", prec, v);
		if (strtod(t, NULL) == v)
			break;
	}
	if (!(j = cJSON_CreateRaw(t)))
		*oom = 1;
	return j;
}

static void add_u64(int *oom, cJSON *j, const char *key, uint64_t v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
	jsonfile_put_str(oom, j, key, buf);
}

/* A plan's "protocol" object. */
static cJSON *protocol_to_json(int *oom, const struct plan_protocol *pr)
{
	cJSON *j = cJSON_CreateObject();

	if (!j)
		*oom = 1;
	jsonfile_put_num(oom, j, "warmup", pr->warmup);
	jsonfile_put_num(oom, j, "tuning_samples", pr->tuning_samples);
	jsonfile_put_num(oom, j, "min_pairs", pr->min_pairs);
	jsonfile_put_num(oom, j, "max_pairs", pr->max_pairs);
	jsonfile_put_num(oom, j, "max_seconds", pr->max_seconds);
	jsonfile_put_num(oom, j, "rel_halfwidth", pr->rel_halfwidth);
	jsonfile_put_num(oom, j, "bootstrap_resamples", pr->resamples);
	add_u64(oom, j, "bootstrap_seed", pr->seed);
	jsonfile_put_num(oom, j, "check_every", pr->check_every);
	jsonfile_put_num(oom, j, "flush_factor", pr->flush_factor);
	jsonfile_put_num(oom, j, "review_bound", pr->review_bound);
	jsonfile_put_str(oom, j, "timing", pr->timing);
	return j;
}

/* A plan's "gates" object. */
static cJSON *gates_to_json(int *oom, const struct plan *p)
{
	cJSON *j = cJSON_CreateObject();

	if (!j)
		*oom = 1;
	jsonfile_put_str(oom, j, "parity", p->parity_required ? "required" : "advisory");
	jsonfile_put_num(oom, j, "isolated_speedup_min", p->speedup_min);
	jsonfile_put_bool(oom, j, "capture", p->capture_required);
	if (p->workload)
		jsonfile_put_str(oom, j, "speedup_basis", "workload");
	if (p->e2e.enabled && p->e2e.gate)
		jsonfile_put_num(oom, j, "e2e_delta_min_pct", p->e2e.delta_min_pct);
	return j;
}

/* A plan's "e2e" protocol: the stage's sampling bounds (its step and tasks are checked on reading). */
static cJSON *e2e_protocol_to_json(int *oom, const struct plan_e2e *e)
{
	cJSON *j = cJSON_CreateObject();

	if (!j)
		*oom = 1;
	jsonfile_put_num(oom, j, "min_pairs", e->min_pairs);
	jsonfile_put_num(oom, j, "max_pairs", e->max_pairs);
	jsonfile_put_num(oom, j, "max_seconds", e->max_seconds);
	jsonfile_put_num(oom, j, "rel_halfwidth", e->rel_halfwidth);
	return j;
}

int plan_to_text(char **out, const struct plan *p)
{
	cJSON *root = cJSON_CreateObject(), *card, *tasks;
	char *text, *withnl;
	int nomem = 0, *oom = &nomem;

	VS_CHECK_ALLOC(root);
	jsonfile_put_str(oom, root, "schema", VS_PLAN_SCHEMA);
	card = jsonfile_put_obj(oom, root, "card");
	jsonfile_put_str(oom, card, "id", p->card_id);
	jsonfile_put_str(oom, card, "path", p->card_path);
	jsonfile_put_str(oom, card, "hash", p->card_hash);
	jsonfile_put_str(oom, root, "operator", vs_op_of(p->tasks)->card_operator);
	jsonfile_put_str(oom, root, "regime", p->regime);
	jsonfile_put_str(oom, root, "tier", p->tier);
	jsonfile_put_str(oom, root, "gen", p->gen);
	jsonfile_put_str(oom, root, "model", p->model);
	jsonfile_put(oom, root, "baseline", impl_to_json(oom, &p->baseline));
	jsonfile_put(oom, root, "candidate", impl_to_json(oom, &p->candidate));
	skips_to_json(oom, cJSON_GetObjectItem(root, "baseline"), &p->baseline, p);
	skips_to_json(oom, cJSON_GetObjectItem(root, "candidate"), &p->candidate, p);
	if (p->nrefs)
		jsonfile_put(oom, root, "references", references_to_json(oom, p));
	if (p->build)
		jsonfile_put(oom, root, "build", cJSON_Duplicate(p->build, 1));
	if (p->pins) {
		cJSON *pj = jsonfile_put_obj(oom, root, "pinned");

		jsonfile_put_str(oom, pj, "run", p->pins_run);
		jsonfile_put_str(oom, pj, "result_sha256", p->pins_sha256);
	}
	if (p->workload) {
		cJSON *wj = jsonfile_put_obj(oom, root, "workload");

		jsonfile_put_str(oom, wj, "id", p->workload->id);
		jsonfile_put_str(oom, wj, "path", p->workload->path);
		jsonfile_put_str(oom, wj, "sha256", p->workload->sha256);
		jsonfile_put_str(oom, wj, "trace_sha256", p->workload->trace_sha256);
		add_u64(oom, wj, "seed", p->workload->seed);
		if (p->workload->claimed >= 0)
			jsonfile_put_bool(oom, wj, "claimed", p->workload->claimed);
	}
	tasks = jsonfile_put_arr(oom, root, "tasks");
	for (int i = 0; i < p->ntasks; i++) {
		cJSON *t = cJSON_CreateObject();

		jsonfile_put_str(oom, t, "hash", p->task_hash[i]);
		jsonfile_put_num(oom, t, "bytes", vs_op_of(&p->tasks[i])->bytes(&p->tasks[i]));
		jsonfile_put_num(oom, t, "flops", vs_op_of(&p->tasks[i])->flops(&p->tasks[i]));
		jsonfile_put(oom, t, "spec", vs_op_of(&p->tasks[i])->spec_to_json(&p->tasks[i]));
		if (p->workload) {
			cJSON *wj = jsonfile_put_obj(oom, t, "workload");

			jsonfile_put_num(oom, wj, "concurrency", p->workload->concurrency[i]);
			jsonfile_put_num(oom, wj, "steps", p->workload->steps[i]);
			jsonfile_put(oom, wj, "weight", real_json(oom, p->workload->weight[i]));
		}
		if (p->pins) {
			cJSON *pc = pins_to_json(oom, p, i);

			if (pc)
				jsonfile_put(oom, t, "configs", pc);
		}
		jsonfile_put(oom, tasks, NULL, t);
	}
	jsonfile_put(oom, root, "protocol", protocol_to_json(oom, &p->protocol));
	jsonfile_put(oom, root, "gates", gates_to_json(oom, p));
	if (p->e2e.enabled)
		jsonfile_put(oom, root, "e2e", e2e_to_json(oom, p));
	text = nomem ? NULL : cJSON_Print(root);
	cJSON_Delete(root);
	VS_CHECK_ALLOC(text);
	withnl = fs_printf("%s\n", text);
	cJSON_free(text);
	VS_CHECK_ALLOC(withnl);
	*out = withnl;
	return 0;
}

int plan_write(const struct plan *p, const char *path)
{
	char *text = NULL;
	int err = plan_to_text(&text, p);

	if (!err)
		err = fs_write_atomic(path, text, strlen(text), 0644);
	free(text);
	return err;
}

/* ---- reading ------------------------------------------------------------------------------ */

static const char *get_str(const cJSON *o, const char *key)
{
	return cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));
}

static int get_num(double *out, const cJSON *o, const char *key, const char *path)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v))
		return vs_error(VS_ESCHEMA, "%s: \"%s\" is missing or not a number", path, key);
	*out = v->valuedouble;
	return 0;
}

/* A JSON integer in [lo, hi] (a double outside int's range is undefined to convert: refused first). */
static int get_int(int *out, const cJSON *o, const char *key, int lo, int hi, const char *path, const char *where)
{
	double v = 0;
	int err = get_num(&v, o, key, path);

	if (err)
		return err;
	if (!(v >= lo && v <= hi) || v != floor(v))
		return vs_error(VS_ESCHEMA, "%s: %s.%s is %.17g, expected an integer from %d to %d", path, where, key,
				v, lo, hi);
	*out = (int)v;
	return 0;
}

/* A finite JSON number in [lo, hi]. */
static int get_real(double *out, const cJSON *o, const char *key, double lo, double hi, const char *path,
		    const char *where)
{
	double v = 0;
	int err = get_num(&v, o, key, path);

	if (err)
		return err;
	if (!(v >= lo && v <= hi))
		return vs_error(VS_ESCHEMA, "%s: %s.%s is %.17g, expected a number from %g to %g", path, where, key, v,
				lo, hi);
	*out = v;
	return 0;
}

static int dup_str(char **out, const cJSON *o, const char *key, const char *path)
{
	const char *s = get_str(o, key);

	if (!s)
		return vs_error(VS_ESCHEMA, "%s: \"%s\" is missing or not a string", path, key);
	*out = strdup(s);
	return *out ? 0 : vs_oom();
}

/* A plan's "plugin": {"path", "sha256"}: load the file, which must still be the one planned. */
/*
 * Set while plan_read_evidence() reads an eval dir's plan copy: implementations are taken as the
 * plan records them (names, configs, files and their sha256, skip lists) and nothing is loaded nor
 * asked again, so evidence verifies on a machine without the kernels' runtimes (no GPU, no torch,
 * no FlashMLA build); the eval dir's own checks bind every file by sha256.
 */
static int impl_plugin_from_json(struct plan_impl *pi, const cJSON *pj, const char *role, const char *path)
{
	const struct plugin *pl;
	const char *lib = get_str(pj, "path"), *sha = get_str(pj, "sha256");
	int err;

	if (!pj)
		return 0;
	if (!lib || !sha || strlen(sha) != 64)
		return vs_error(VS_ESCHEMA, "%s: %s.plugin needs \"path\" and a 64-digit \"sha256\"", path, role);
	if (evidence_mode) {
		pi->plugin_path = strdup(lib);
		memcpy(pi->plugin_sha256, sha, 65);
		return pi->plugin_path ? 0 : vs_oom();
	}
	if ((err = plugin_load(&pl, lib)))
		return err;
	if (strcmp(pl->sha256, sha))
		return vs_error(VS_EVERIFY,
				"%s: %s plugin '%s' changed since the plan was made (sha256 %.12s..., "
				"plan %.12s...): emit the plan again",
				path, role, lib, pl->sha256, sha);
	if (strcmp(pl->impl->name, pi->name))
		return vs_error(VS_ESCHEMA, "%s: %s plugin '%s' provides '%s', not '%s'", path, role, lib,
				pl->impl->name, pi->name);
	pi->plugin_path = strdup(lib);
	memcpy(pi->plugin_sha256, sha, 65);
	return pi->plugin_path ? 0 : vs_oom();
}

/*
 * A plan's "python": {"path", "sha256", ...}: the module must still hold the bytes planned (checked
 * before the interpreter runs), then it is registered for gen.
 */
static int impl_python_from_json(struct plan_impl *pi, const cJSON *pj, const char *role, const char *gen,
				 const char *path)
{
	const struct pyimpl *py;
	const char *file = get_str(pj, "path"), *sha = get_str(pj, "sha256");
	char *abs = NULL, *who = NULL, hex[65];
	int err;

	if (!pj)
		return 0;
	if (!file || !sha || strlen(sha) != 64)
		return vs_error(VS_ESCHEMA, "%s: %s.python needs \"path\" and a 64-digit \"sha256\"", path, role);
	who = fs_printf("%s: %s python module '%s'", path, role, file);
	VS_CHECK_ALLOC(who);
	if (evidence_mode) {
		err = helpers_check(&pi->python_helpers_planned, pj, NULL, who);
		free(who);
		if (err)
			return err;
		pi->python_path = strdup(file);
		memcpy(pi->python_sha256, sha, 65);
		pi->python_json = cJSON_PrintUnformatted(pj);
		return pi->python_path && pi->python_json ? 0 : vs_oom();
	}
	abs = py_abs(file);
	if (!abs) {
		err = vs_error(VS_ENOMEM, "out of memory");
		goto done;
	}
	if (!fs_exists(abs)) {
		err = vs_error(VS_ENOTFOUND, "%s: %s python module '%s' does not exist", path, role, file);
		goto done;
	}
	if ((err = fs_sha256_file(hex, abs)))
		goto done;
	if (strcmp(hex, sha)) {
		err = vs_error(VS_EVERIFY,
			       "%s: %s python module '%s' changed since the plan was made (sha256 %s, plan "
			       "%s): emit the plan again",
			       path, role, file, hex, sha);
		goto done;
	}
	if ((err = pyimpl_register(&py, abs, gen)))
		goto done;
	if (strcmp(py->name, pi->name)) {
		err = vs_error(VS_ESCHEMA, "%s: %s python module '%s' provides '%s', not '%s'", path, role, file,
			       py->name, pi->name);
		goto done;
	}
	/* Its helper files: those the plan records, as described now (a plan without them: none bound). */
	if ((err = helpers_check(&pi->python_helpers_planned, pj, py->helpers_json, who)))
		goto done;
	if (get_str(pj, "executable") && strcmp(get_str(pj, "executable"), py->executable))
		vs_warn("%s: %s python module '%s' was planned with the interpreter %s; this process uses %s "
			"($VS_PYTHON): the evidence records the one that ran",
			path, role, file, get_str(pj, "executable"), py->executable);
	pi->python_path = strdup(file);
	memcpy(pi->python_sha256, sha, 65);
	pi->python_json = cJSON_PrintUnformatted(pj);
	err = pi->python_path && pi->python_json ? 0 : vs_error(VS_ENOMEM, "out of memory");
	if (!err)
		err = pyimpl_autotune_check(pi->python_json, py, who);
done:
	free(who);
	free(abs);
	return err;
}

/* A plan's "unsupported" list of an implementation (absent: it runs every task). */
static int impl_skips_from_json(struct plan_impl *pi, const cJSON *arr, const char *role, const char *path)
{
	const cJSON *t;
	int n = cJSON_GetArraySize(arr);

	if (!arr)
		return 0;
	if (!cJSON_IsArray(arr))
		return vs_error(VS_ESCHEMA, "%s: %s.unsupported must be an array", path, role);
	pi->skips = calloc((size_t)n + 1, sizeof(*pi->skips));
	if (!pi->skips)
		return vs_error(VS_ENOMEM, "out of memory");
	cJSON_ArrayForEach(t, arr)
	{
		const char *hash = get_str(t, "hash"), *reason = get_str(t, "reason");

		if (!hash || strlen(hash) != 64 || !reason)
			return vs_error(VS_ESCHEMA, "%s: %s.unsupported[%d] needs a 64-digit \"hash\" and a \"reason\"",
					path, role, pi->nskips);
		memcpy(pi->skips[pi->nskips].hash, hash, 65);
		if (!(pi->skips[pi->nskips++].reason = strdup(reason)))
			return vs_error(VS_ENOMEM, "out of memory");
	}
	return 0;
}

/* The plan's unsupported list must be what the implementation answers now (not edited by hand). */
static int impl_skips_check(const struct plan_impl *pi, const struct plan *p, const char *role, const char *path)
{
	struct plan_skip *now = NULL;
	int n = 0, err = skips_compute(&now, &n, mla_decode_impl_find(pi->name), p);

	for (int i = 0; !err && i < p->ntasks; i++) {
		const char *a = plan_skip_reason(p, pi, i), *b = NULL;

		for (int k = 0; k < n; k++)
			if (!strcmp(now[k].hash, p->task_hash[i]))
				b = now[k].reason;
		if ((a || b) && (!a || !b || strcmp(a, b)))
			err = vs_error(VS_EVERIFY,
				       "%s: %s '%s' on task %s: the plan says '%s', its supports() says '%s' "
				       "now: emit the plan again",
				       path, role, pi->name, p->tasks[i].name, a ? a : "supported",
				       b ? b : "supported");
	}
	skips_release(now, n);
	return err;
}

/* Stands, in evidence mode, for an implementation this build lacks (a plugin or module not loaded). */
static int recorded_configs(const char *arch, struct mla_decode_config *out, int cap)
{
	(void)arch, (void)out, (void)cap;
	return 0;
}

static const struct mla_decode_impl recorded_impl = {.abi_version = MLA_DECODE_ABI_VERSION,
						     .name = "",
						     .backend = "",
						     .configs = recorded_configs};

static int impl_from_json(struct plan_impl *pi, const cJSON *j, const char *role, const char *gen, const char *path,
			  int allow_empty)
{
	const cJSON *arr, *c;
	const struct mla_decode_impl *impl;
	struct mla_decode_config *known = NULL;
	int err, i = 0, nknown;

	if (!cJSON_IsObject(j))
		return vs_error(VS_ESCHEMA, "%s: \"%s\" is missing", path, role);
	err = dup_str(&pi->name, j, "impl", path);
	if (!err)
		err = dup_str(&pi->backend, j, "backend", path);
	if (err)
		return err;
	if ((err = impl_plugin_from_json(pi, cJSON_GetObjectItemCaseSensitive(j, "plugin"), role, path)) ||
	    (err = impl_python_from_json(pi, cJSON_GetObjectItemCaseSensitive(j, "python"), role, gen, path)) ||
	    (err = impl_skips_from_json(pi, cJSON_GetObjectItemCaseSensitive(j, "unsupported"), role, path)))
		return err;
	impl = mla_decode_impl_find(pi->name);
	if (evidence_mode && !impl)
		impl = &recorded_impl;
	if (!impl) {
		char list[512] = "";

		for (int k = 0; mla_decode_impl_at(k); k++)
			snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", k ? ", " : "",
				 mla_decode_impl_at(k)->name);
		return vs_error(VS_ENOTFOUND,
				"%s: %s '%s' names no implementation of this build; the "
				"implementations are: %s",
				path, role, pi->name, list);
	}
	if (impl != &recorded_impl && strcmp(impl->backend, pi->backend))
		return vs_error(VS_ESCHEMA, "%s: %s '%s' has backend '%s', not '%s'", path, role, pi->name,
				impl->backend, pi->backend);
	arr = cJSON_GetObjectItemCaseSensitive(j, "configs");
	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) < (allow_empty ? 0 : 1))
		return vs_error(VS_ESCHEMA, "%s: %s.configs must be a non-empty array", path, role);
	nknown = impl == &recorded_impl ? 0 : impl->configs(gen, NULL, 0);
	pi->configs = calloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof(*pi->configs));
	known = calloc(nknown > 0 ? (size_t)nknown : 1, sizeof(*known));
	if (!pi->configs || !known) {
		err = vs_oom();
		goto done;
	}
	if (nknown > 0)
		nknown = impl->configs(gen, known, nknown);
	cJSON_ArrayForEach(c, arr)
	{
		struct mla_decode_config *cf = &pi->configs[i++];
		const char *name = get_str(c, "name");
		char where[64];
		int k;

		snprintf(where, sizeof(where), "%s.configs[%d]", role, i - 1);
		if (!name || strlen(name) >= sizeof(cf->name)) {
			err = vs_error(VS_ESCHEMA, "%s: %s.name is missing or too long", path, where);
			goto done;
		}
		snprintf(cf->name, sizeof(cf->name), "%s", name);
		if ((err = get_int(&cf->block_n, c, "block_n", 0, 1 << 20, path, where)) ||
		    (err = get_int(&cf->block_h, c, "block_h", 0, 1 << 20, path, where)) ||
		    (err = get_int(&cf->num_splits, c, "num_splits", MLA_DECODE_SPLITS_BALANCED, 1 << 20, path,
				   where)) ||
		    (err = get_int(&cf->num_warps, c, "num_warps", 0, 1 << 20, path, where)) ||
		    (err = get_int(&cf->num_stages, c, "num_stages", 0, 1 << 20, path, where)))
			goto done;
		/*
		 * Only the implementation's own configs for the plan's generation are launched. Evidence
		 * keeps the configs it ran: a space that lost one since must not unverify it.
		 */
		if (impl == &recorded_impl || evidence_mode)
			goto listed;
		for (k = 0; k < nknown; k++)
			if (!strcmp(known[k].name, cf->name))
				break;
		if (k == nknown || known[k].block_n != cf->block_n || known[k].block_h != cf->block_h ||
		    known[k].num_splits != cf->num_splits || known[k].num_warps != cf->num_warps ||
		    known[k].num_stages != cf->num_stages) {
			err = vs_error(VS_ESCHEMA,
				       "%s: %s '%s' is not a config of %s for '%s' (the plan was edited "
				       "or comes from another build: emit it again)",
				       path, where, cf->name, pi->name, gen);
			goto done;
		}
	listed:
		for (k = 0; k < i - 1; k++)
			if (!strcmp(pi->configs[k].name, cf->name)) {
				err = vs_error(VS_ESCHEMA, "%s: %s '%s' is listed twice", path, where, cf->name);
				goto done;
			}
	}
	pi->nconfigs = i;
	/* A forced side (IMPL@CONFIG) lists exactly its one config. */
	if (cJSON_GetObjectItemCaseSensitive(j, "forced")) {
		const char *forced = get_str(j, "forced");

		if (!forced || !*forced || strlen(forced) >= sizeof(pi->configs[0].name)) {
			err = vs_error(VS_ESCHEMA, "%s: %s.forced must be a config's name", path, role);
			goto done;
		}
		if (pi->nconfigs != 1 || strcmp(pi->configs[0].name, forced)) {
			err = vs_error(VS_ESCHEMA,
				       "%s: %s.forced is '%s', but %s.configs lists %d config%s%s: a forced side lists "
				       "its one config (emit the plan again)",
				       path, role, forced, role, pi->nconfigs, pi->nconfigs == 1 ? " " : "s",
				       pi->nconfigs == 1 ? pi->configs[0].name : "");
			goto done;
		}
		if (!(pi->forced = strdup(forced)))
			err = vs_oom();
	}
done:
	free(known);
	return err;
}

/*
 * A plan's "references" (optional; after its tasks are read): each implementation checked as the
 * candidate is, and its skip list must be the one this build computes (same tasks skipped; the
 * reasons recorded are kept).
 */
static int references_from_json(struct plan *np, const cJSON *arr, const char *path)
{
	const cJSON *rj;
	int err = 0, k = 0;

	if (!arr)
		return 0;
	if (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > VS_PLAN_MAX_REFERENCES)
		return vs_error(VS_ESCHEMA, "%s: \"references\" must be an array of at most %d implementations", path,
				VS_PLAN_MAX_REFERENCES);
	cJSON_ArrayForEach(rj, arr)
	{
		struct plan_reference *r = &np->refs[k];
		const cJSON *skips = cJSON_GetObjectItemCaseSensitive(rj, "skips"), *sk;
		char role[32], **want = NULL;
		const char *taken;

		snprintf(role, sizeof(role), "references[%d]", k);
		np->nrefs = ++k;
		if ((err = impl_from_json(&r->impl, rj, role, np->gen, path, 1)))
			return err;
		if ((taken = role_taken(np, r->impl.name, k - 1)))
			return vs_error(VS_ESCHEMA, "%s: %s '%s' is %s of this plan already", path, role, r->impl.name,
					taken);
		if (!cJSON_IsArray(skips))
			return vs_error(VS_ESCHEMA, "%s: %s.skips must be an array", path, role);
		r->skip = calloc((size_t)np->ntasks + 1, sizeof(*r->skip));
		if (!r->skip)
			return vs_oom();
		cJSON_ArrayForEach(sk, skips)
		{
			const char *hash = get_str(sk, "task"), *why = get_str(sk, "reason");
			int i = hash ? plan_task_index(np, hash) : -1;

			if (i < 0 || !why || r->skip[i])
				return vs_error(VS_ESCHEMA,
						"%s: %s.skips: each entry needs the \"task\" hash of a plan "
						"task (once) and a \"reason\"",
						path, role);
			if (!(r->skip[i] = strdup(why)))
				return vs_oom();
		}
		if (evidence_mode)
			continue; /* the recorded skips are the evidence's; nothing is asked again */
		if ((err = reference_skips(&want, np, &r->impl)))
			return err;
		for (int i = 0; i < np->ntasks && !err; i++)
			if (!want[i] != !r->skip[i])
				err = vs_error(VS_ESCHEMA,
					       "%s: %s '%s' %s task '%s' but this build says it %s (the plan "
					       "was edited or comes from another build: emit it again)",
					       path, role, r->impl.name, r->skip[i] ? "skips" : "runs",
					       np->tasks[i].name, want[i] ? "skips it" : "runs it");
		for (int i = 0; i < np->ntasks; i++)
			free(want[i]);
		free(want);
		if (err)
			return err;
	}
	return 0;
}

/* Whether p was emitted for this build's generator (older plans still verify, never run). */
int plan_check_current(const struct plan *p, const char *path)
{
	if (p->generator && strcmp(p->generator, VS_GENERATOR_VERSION))
		return vs_error(VS_EVERIFY, "%s: emitted for generator %s, this build generates %s: emit it again",
				path, p->generator, VS_GENERATOR_VERSION);
	return 0;
}

int plan_read_evidence(struct plan *p, const char *path)
{
	int err;

	evidence_mode = 1;
	err = plan_read(p, path);
	evidence_mode = 0;
	return err;
}

int plan_read_text(struct plan *p, const char *path, char **text_out, size_t *len_out)
{
	char *text = NULL;
	size_t len = 0;
	int err = fs_check_link(path, "plan");

	if (!err)
		err = fs_read_file(&text, &len, path, 64u << 20);
	if (!err)
		err = plan_parse(p, text, len, path);
	if (!err && text_out) {
		*text_out = text;
		*len_out = len;
		return 0;
	}
	free(text);
	return err;
}

int plan_read(struct plan *p, const char *path)
{
	return plan_read_text(p, path, NULL, NULL);
}

int plan_read_task_hashes(char ***hashes, int *n, const char *path)
{
	char *text = NULL;
	size_t len;
	cJSON *root = NULL;
	const cJSON *t, *tasks;
	int err = fs_check_link(path, "plan");

	if (!err)
		err = fs_read_file(&text, &len, path, 64u << 20);
	if (!err)
		err = jsonfile_parse(&root, text, len, path);
	if (err)
		goto done;
	tasks = cJSON_GetObjectItemCaseSensitive(root, "tasks");
	if (!cJSON_IsArray(tasks)) {
		err = vs_error(VS_ESCHEMA, "%s: \"tasks\" must be an array", path);
		goto done;
	}
	cJSON_ArrayForEach(t, tasks)
	{
		const char *h = get_str(t, "hash");
		char **nl;

		if (!h || strlen(h) != 64 || strspn(h, "0123456789abcdef") != 64) {
			err = vs_error(VS_ESCHEMA, "%s: a task's \"hash\" is not 64 hex digits", path);
			goto done;
		}
		nl = realloc(*hashes, (size_t)(*n + 1) * sizeof(**hashes));
		if (!nl) {
			err = vs_error(VS_ENOMEM, "out of memory");
			goto done;
		}
		*hashes = nl;
		if (!(nl[*n] = strdup(h))) {
			err = vs_error(VS_ENOMEM, "out of memory");
			goto done;
		}
		(*n)++;
	}
done:
	cJSON_Delete(root);
	free(text);
	return err;
}

/*
 * The keys a plan file may hold, object by object: a plan is the tool's output, not a user's file,
 * so a key it never writes is an edit (or a misspelling that would be silently ignored) and is
 * refused with its path. "*" accepts any key (objects the tool copies whole: a Python module's
 * description, the build gate's figures, a reference's pinned configs). Task specs are checked by
 * the operator's spec_from_json() (op.h).
 */
struct plan_keys {
	const char *path; /* the object, as "tasks[].configs" */
	const char *keys; /* its keys, space-separated, or "*" */
};

static const struct plan_keys plan_keys[] = {
	{"", "schema card operator regime tier gen model baseline candidate references build pinned workload tasks "
	     "protocol gates e2e"},
	{"workload", "id path sha256 trace_sha256 seed claimed"},
	{"tasks[].workload", "concurrency steps weight"},
	{"card", "id path hash"},
	{"baseline", "impl backend plugin python forced configs unsupported"},
	{"candidate", "impl backend plugin python forced configs unsupported"},
	{"references[]", "impl backend plugin python forced configs unsupported skips"},
	{"baseline.plugin", "path sha256"},
	{"candidate.plugin", "path sha256"},
	{"references[].plugin", "path sha256"},
	{"baseline.configs[]", "name block_n block_h num_splits num_warps num_stages"},
	{"candidate.configs[]", "name block_n block_h num_splits num_warps num_stages"},
	{"references[].configs[]", "name block_n block_h num_splits num_warps num_stages"},
	{"baseline.unsupported[]", "task hash reason"},
	{"candidate.unsupported[]", "task hash reason"},
	{"references[].unsupported[]", "task hash reason"},
	{"references[].skips[]", "task name reason"},
	{"pinned", "run result_sha256"},
	{"tasks[]", "hash bytes flops spec configs workload"},
	{"tasks[].configs", "baseline candidate references"},
	{"protocol", "warmup tuning_samples min_pairs max_pairs max_seconds rel_halfwidth bootstrap_resamples "
		     "bootstrap_seed check_every flush_factor review_bound timing"},
	{"gates", "parity isolated_speedup_min capture speedup_basis e2e_delta_min_pct"},
	{"e2e", "step tasks min_pairs max_pairs max_seconds rel_halfwidth"},
};

static const char *plan_keys_of(const char *path)
{
	for (size_t i = 0; i < sizeof(plan_keys) / sizeof(plan_keys[0]); i++)
		if (!strcmp(plan_keys[i].path, path))
			return plan_keys[i].keys;
	return "*";
}

static int word_in(const char *words, const char *w)
{
	size_t n = strlen(w);

	if (!n || strchr(w, ' ')) /* no key of a plan is empty or holds a space (and "" would match forever) */
		return 0;
	for (const char *p = words; (p = strstr(p, w)); p += n)
		if ((p == words || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return 1;
	return 0;
}

/* Refuse a key the tool does not write, anywhere in the plan, with its path (shown as tasks[3].x). */
static int plan_keys_check(const cJSON *o, const char *schema_path, const char *shown, const char *file)
{
	const char *keys = plan_keys_of(schema_path);
	const cJSON *it;
	int i = 0;

	if (cJSON_IsArray(o)) {
		cJSON_ArrayForEach(it, o)
		{
			char sp[256], sh[256];
			int err;

			snprintf(sp, sizeof(sp), "%s[]", schema_path);
			snprintf(sh, sizeof(sh), "%s[%d]", shown, i++);
			if ((err = plan_keys_check(it, sp, sh, file)))
				return err;
		}
		return 0;
	}
	if (!cJSON_IsObject(o) || !strcmp(keys, "*"))
		return 0;
	cJSON_ArrayForEach(it, o)
	{
		char sp[256], sh[256];
		int err;

		snprintf(sp, sizeof(sp), "%s%s%s", schema_path, *schema_path ? "." : "", it->string);
		snprintf(sh, sizeof(sh), "%s%s%s", shown, *shown ? "." : "", it->string);
		if (!word_in(keys, it->string))
			return vs_error(VS_ESCHEMA,
					"%s: unknown key '%s': a plan holds only what --emit-plan writes (what a user "
					"chooses goes in the card or on the command line); emit it again",
					file, sh);
		if (strcmp(sp, "tasks[].spec") && (err = plan_keys_check(it, sp, sh, file)))
			return err;
	}
	return 0;
}

static void spec_diff_named(char *diff, size_t cap, const struct task_spec *have);

/*
 * A workload plan's "workload" object and each task's "workload" entry: all present or none; the
 * weights positive and summing to 1 (to 1e-9). Sets np->workload, or leaves it NULL for a tier plan.
 */
static int workload_from_json(struct plan *np, const cJSON *root, const char *path)
{
	const cJSON *wj = cJSON_GetObjectItemCaseSensitive(root, "workload");
	const cJSON *tasks = cJSON_GetObjectItemCaseSensitive(root, "tasks");
	struct plan_workload *w;
	const char *seed;
	double sum = 0;
	int err = 0;

	if (!wj) {
		for (int i = 0; i < np->ntasks; i++)
			if (cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(tasks, i), "workload"))
				return vs_error(VS_ESCHEMA, "%s: tasks[%d].workload in a plan without \"workload\"",
						path, i);
		if (!strcmp(np->tier, "workload"))
			return vs_error(VS_ESCHEMA, "%s: tier is 'workload' but the plan has no \"workload\"", path);
		return 0;
	}
	if (strcmp(np->tier, "workload"))
		return vs_error(VS_ESCHEMA, "%s: the plan has a \"workload\" but its tier is '%s', not 'workload'",
				path, np->tier);
	w = calloc(1, sizeof(*w));
	VS_CHECK_ALLOC(w);
	np->workload = w;
	w->concurrency = calloc((size_t)np->ntasks, sizeof(int));
	w->steps = calloc((size_t)np->ntasks, sizeof(int));
	w->weight = calloc((size_t)np->ntasks, sizeof(double));
	VS_CHECK_ALLOC(w->concurrency && w->steps && w->weight);
	if ((err = dup_str(&w->id, wj, "id", path)) || (err = dup_str(&w->path, wj, "path", path)))
		return err;
	if (!get_str(wj, "sha256") || strlen(get_str(wj, "sha256")) != 64)
		return vs_error(VS_ESCHEMA, "%s: workload.sha256 must be 64 hex digits", path);
	memcpy(w->sha256, get_str(wj, "sha256"), 65);
	if (!get_str(wj, "trace_sha256") || (*get_str(wj, "trace_sha256") && strlen(get_str(wj, "trace_sha256")) != 64))
		return vs_error(VS_ESCHEMA, "%s: workload.trace_sha256 must be 64 hex digits or empty", path);
	memcpy(w->trace_sha256, get_str(wj, "trace_sha256"), strlen(get_str(wj, "trace_sha256")) + 1);
	seed = get_str(wj, "seed");
	if (!seed || !*seed || strspn(seed, "0123456789") != strlen(seed))
		return vs_error(VS_ESCHEMA, "%s: workload.seed must be a decimal string", path);
	w->seed = strtoull(seed, NULL, 10);
	w->claimed = -1;
	if (cJSON_GetObjectItemCaseSensitive(wj, "claimed")) {
		const cJSON *cl = cJSON_GetObjectItemCaseSensitive(wj, "claimed");

		if (!cJSON_IsBool(cl))
			return vs_error(VS_ESCHEMA, "%s: workload.claimed must be true or false", path);
		w->claimed = cJSON_IsTrue(cl);
	}
	for (int i = 0; i < np->ntasks; i++) {
		const cJSON *tw = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(tasks, i), "workload");
		char where[64];

		snprintf(where, sizeof(where), "tasks[%d].workload", i);
		if (!cJSON_IsObject(tw))
			return vs_error(VS_ESCHEMA, "%s: %s is missing (a workload plan weighs every task)", path,
					where);
		if ((err = get_int(&w->concurrency[i], tw, "concurrency", 1, WORKLOAD_MAX_CONCURRENCY, path, where)) ||
		    (err = get_int(&w->steps[i], tw, "steps", 1, INT32_MAX, path, where)) ||
		    (err = get_real(&w->weight[i], tw, "weight", 0, 1, path, where)))
			return err;
		if (!(w->weight[i] > 0))
			return vs_error(VS_ESCHEMA,
					"%s: %s.weight is 0: every task of a workload plan weighs something", path,
					where);
		sum += w->weight[i];
	}
	if (fabs(sum - 1) > 1e-9)
		return vs_error(VS_ESCHEMA, "%s: the tasks' workload weights sum to %.12g, not 1", path, sum);
	return 0;
}

int plan_parse(struct plan *p, const char *text, size_t len, const char *path)
{
	static const char *const legacy = VS_GENERATOR_PREVIOUS;
	struct plan np;
	cJSON *root = NULL, *card, *tasks, *t, *pr, *gates;
	const char *schema, *parity, *seed;
	const struct vs_operator *op;
	int err, i = 0;

	memset(&np, 0, sizeof(np));
	np.generator = VS_GENERATOR_VERSION;
	if ((err = jsonfile_parse(&root, text, len, path)) || (err = plan_keys_check(root, "", "", path)))
		goto done;
	schema = get_str(root, "schema");
	if (!schema || strcmp(schema, VS_PLAN_SCHEMA)) {
		err = vs_error(VS_ESCHEMA, "%s: \"schema\" is '%s', expected '%s'", path, schema ? schema : "",
			       VS_PLAN_SCHEMA);
		goto done;
	}
	card = cJSON_GetObjectItemCaseSensitive(root, "card");
	if ((err = dup_str(&np.card_id, card, "id", path)) || (err = dup_str(&np.card_path, card, "path", path)))
		goto done;
	if (!get_str(card, "hash") || strlen(get_str(card, "hash")) != 64) {
		err = vs_error(VS_ESCHEMA, "%s: card.hash must be 64 hex digits", path);
		goto done;
	}
	memcpy(np.card_hash, get_str(card, "hash"), 65);
	if (!(op = vs_operator_for_card(get_str(root, "operator")))) {
		err = vs_error(VS_ESCHEMA, "%s: \"operator\" is '%s', not an operator this tool plans", path,
			       get_str(root, "operator") ? get_str(root, "operator") : "");
		goto done;
	}
	if ((err = dup_str(&np.tier, root, "tier", path)) || (err = dup_str(&np.gen, root, "gen", path)) ||
	    (err = dup_str(&np.model, root, "model", path)) || (err = dup_str(&np.regime, root, "regime", path)))
		goto done;
	if ((err = impl_from_json(&np.baseline, cJSON_GetObjectItemCaseSensitive(root, "baseline"), "baseline", np.gen,
				  path, 0)) ||
	    (err = impl_from_json(&np.candidate, cJSON_GetObjectItemCaseSensitive(root, "candidate"), "candidate",
				  np.gen, path, 0)))
		goto done;
	if (cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "build")))
		np.build = cJSON_Duplicate(cJSON_GetObjectItemCaseSensitive(root, "build"), 1);
	tasks = cJSON_GetObjectItemCaseSensitive(root, "tasks");
	if (!cJSON_IsArray(tasks) || cJSON_GetArraySize(tasks) < 1) {
		err = vs_error(VS_ESCHEMA, "%s: \"tasks\" must be a non-empty array", path);
		goto done;
	}
	np.tasks = calloc((size_t)cJSON_GetArraySize(tasks), sizeof(*np.tasks));
	np.task_hash = calloc((size_t)cJSON_GetArraySize(tasks), sizeof(*np.task_hash));
	if (!np.tasks || !np.task_hash) {
		err = vs_oom();
		goto done;
	}
	cJSON_ArrayForEach(t, tasks)
	{
		char where[256], hash[65];
		const char *want = get_str(t, "hash");

		snprintf(where, sizeof(where), "%s: tasks[%d]", path, i);
		err = op->spec_from_json(&np.tasks[i], cJSON_GetObjectItemCaseSensitive(t, "spec"), where);
		if (err)
			goto done;
		np.ntasks = ++i;
		err = task_spec_hash(&np.tasks[i - 1], hash);
		if (err)
			goto done;
		if (want && strcmp(want, hash) && (i == 1 || np.generator == legacy)) {
			/* the plan of an earlier build (its evidence still verifies) */
			char old[65];

			if ((err = task_spec_hash_for(&np.tasks[i - 1], legacy, old)))
				goto done;
			if (!strcmp(want, old)) {
				np.generator = legacy;
				memcpy(hash, old, 65);
			}
		}
		if (!want || strcmp(want, hash)) {
			char what[512];

			spec_diff_named(what, sizeof(what), &np.tasks[i - 1]);
			err = vs_error(VS_EVERIFY, "%s %s: the plan was edited; emit it again", where, what);
			goto done;
		}
		memcpy(np.task_hash[i - 1], hash, 65);
	}
	if ((err = references_from_json(&np, cJSON_GetObjectItemCaseSensitive(root, "references"), path)))
		goto done;
	pr = cJSON_GetObjectItemCaseSensitive(root, "protocol");
	if (!cJSON_IsObject(pr)) {
		err = vs_error(VS_ESCHEMA, "%s: \"protocol\" is missing", path);
		goto done;
	}
	if ((err = get_int(&np.protocol.warmup, pr, "warmup", 0, 1000000, path, "protocol")) ||
	    (err = get_int(&np.protocol.tuning_samples, pr, "tuning_samples", 1, 1000000, path, "protocol")) ||
	    (err = get_int(&np.protocol.min_pairs, pr, "min_pairs", 2, 10000000, path, "protocol")) ||
	    (err = get_int(&np.protocol.max_pairs, pr, "max_pairs", np.protocol.min_pairs, 10000000, path,
			   "protocol")) ||
	    (err = get_real(&np.protocol.max_seconds, pr, "max_seconds", 0, 1e6, path, "protocol")) ||
	    (err = get_real(&np.protocol.rel_halfwidth, pr, "rel_halfwidth", 0, 1, path, "protocol")) ||
	    (err = get_int(&np.protocol.resamples, pr, "bootstrap_resamples", 100, 10000000, path, "protocol")) ||
	    (err = get_int(&np.protocol.check_every, pr, "check_every", 1, 1000000, path, "protocol")) ||
	    (err = get_real(&np.protocol.flush_factor, pr, "flush_factor", 2, 1000, path, "protocol")) ||
	    (err = get_real(&np.protocol.review_bound, pr, "review_bound", 1, 1e9, path, "protocol")))
		goto done;
	{
		/* Plans made before the timing mode was recorded timed the launch. */
		const char *timing = get_str(pr, "timing") ? get_str(pr, "timing") : "launch";

		if (strcmp(timing, "graph_replay") && strcmp(timing, "launch")) {
			err = vs_error(VS_ESCHEMA, "%s: protocol.timing is '%s', expected 'graph_replay' or 'launch'",
				       path, timing);
			goto done;
		}
		snprintf(np.protocol.timing, sizeof(np.protocol.timing), "%s", timing);
	}
	seed = get_str(pr, "bootstrap_seed");
	{
		char *end = NULL;

		errno = 0;
		if (seed && *seed >= '0' && *seed <= '9')
			np.protocol.seed = strtoull(seed, &end, 10);
		if (!end || *end || errno) {
			err = vs_error(VS_ESCHEMA,
				       "%s: protocol.bootstrap_seed must be a decimal string of an unsigned "
				       "64-bit integer",
				       path);
			goto done;
		}
	}
	gates = cJSON_GetObjectItemCaseSensitive(root, "gates");
	parity = get_str(gates, "parity");
	if (!parity || (strcmp(parity, "required") && strcmp(parity, "advisory"))) {
		err = vs_error(VS_ESCHEMA, "%s: gates.parity must be 'required' or 'advisory'", path);
		goto done;
	}
	np.parity_required = !strcmp(parity, "required");
	if ((err = get_real(&np.speedup_min, gates, "isolated_speedup_min", 0, 1e9, path, "gates")))
		goto done;
	np.capture_required = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(gates, "capture"));
	if ((err = e2e_from_json(&np, cJSON_GetObjectItemCaseSensitive(root, "e2e"), gates, path)))
		goto done;
	if (!evidence_mode && ((err = impl_skips_check(&np.baseline, &np, "baseline", path)) ||
			       (err = impl_skips_check(&np.candidate, &np, "candidate", path))))
		goto done;
	if ((err = pins_from_json(&np, root, path)) || (err = workload_from_json(&np, root, path)))
		goto done;
	if (np.workload != NULL) {
		const char *basis = get_str(gates, "speedup_basis");

		if (!basis || strcmp(basis, "workload")) {
			err = vs_error(VS_ESCHEMA, "%s: gates.speedup_basis must be 'workload' in a workload plan",
				       path);
			goto done;
		}
	} else if (cJSON_GetObjectItemCaseSensitive(gates, "speedup_basis")) {
		err = vs_error(VS_ESCHEMA, "%s: gates.speedup_basis in a plan without a workload", path);
		goto done;
	}
	*p = np;
	memset(&np, 0, sizeof(np));
done:
	plan_release(&np);
	cJSON_Delete(root);
	return err;
}

/* A reference's lines of the summary: what it is and the tasks it skips, each with the reason. */
static void print_reference(const struct plan *p, int k, FILE *f)
{
	const struct plan_impl *pi = &p->refs[k].impl;
	char label[256];
	int nskip = 0;

	for (int i = 0; i < p->ntasks; i++)
		nskip += plan_reference_skip(p, k, i) != NULL;
	fprintf(f,
		"  reference  %-14s %3d config%s (%s%s), times against the candidate on %d of %d tasks "
		"(never gates)\n",
		plan_impl_label(pi, label, sizeof(label)), pi->nconfigs, pi->nconfigs == 1 ? " " : "s", pi->backend,
		pi->forced ? "; forced, no tuning pass" : "", p->ntasks - nskip, p->ntasks);
	if (pi->plugin_path)
		fprintf(f, "  %-10s plugin %s (sha256 %.16s...)\n", "reference", pi->plugin_path, pi->plugin_sha256);
	if (nskip == p->ntasks && pi->nconfigs == 0) {
		fprintf(f, "    skips every task: %s\n", plan_reference_skip(p, k, 0));
		return;
	}
	for (int i = 0; i < p->ntasks; i++)
		if (plan_reference_skip(p, k, i))
			fprintf(f, "    skips %s: %s\n", p->tasks[i].name, plan_reference_skip(p, k, i));
}

void plan_print_summary(const struct plan *p, FILE *f)
{
	double bytes = 0, flops = 0;
	const cJSON *k;
	int w = 14, nw = 34, ndt = 0;

	fprintf(f, "plan for %s (%s), tier %s, generation %s\n", p->card_id, p->card_path, p->tier, p->gen);
	if (p->workload) {
		int conc = -1, dt = -1;

		fprintf(f, "  workload   %s (%s, sha256 %.16s...%s%.16s%s, seed %llu): %d tasks from its traffic\n",
			p->workload->id, p->workload->path, p->workload->sha256,
			*p->workload->trace_sha256 ? "; trace " : "", p->workload->trace_sha256,
			*p->workload->trace_sha256 ? "..." : "", (unsigned long long)p->workload->seed, p->ntasks);
		for (int i = 0; i < p->ntasks; i++) /* the tasks come in one group per kv dtype */
			if (!i || vs_op_of(&p->tasks[i])->dtype(&p->tasks[i]) !=
					  vs_op_of(&p->tasks[i - 1])->dtype(&p->tasks[i - 1]))
				ndt++;
		for (int i = 0; i < p->ntasks; i++) {
			int d = vs_op_of(&p->tasks[i])->dtype(&p->tasks[i]);

			if (ndt > 1 && d != dt) {
				dt = d;
				conc = -1;
				fprintf(f, "             %s (each kv dtype is gated on its own):\n",
					vs_op_of(&p->tasks[i])->dtype_name(d));
			}
			if (p->workload->concurrency[i] != conc) {
				conc = p->workload->concurrency[i];
				fprintf(f, "             %sconcurrency %d:", ndt > 1 ? "  " : "", conc);
				for (int j = i; j < p->ntasks && p->workload->concurrency[j] == conc &&
						vs_op_of(&p->tasks[j])->dtype(&p->tasks[j]) == d;
				     j++)
					fprintf(f, " %.3f", p->workload->weight[j]);
				fprintf(f, " (weights)\n");
			}
		}
	}
	for (int k = 0; k < 2; k++) {
		char label[256];

		plan_impl_label(k ? &p->candidate : &p->baseline, label, sizeof(label));
		w = (int)strlen(label) > w ? (int)strlen(label) : w;
	}
	for (int k = 0; k < 2; k++) {
		const struct plan_impl *pi = k ? &p->candidate : &p->baseline;
		char label[256];

		/* a Python module runs under the ABI's GPU backend ("hip"), but is no HIP kernel */
		fprintf(f, "  %-10s %-*s %3d config%s (%s%s)%s\n", k ? "candidate" : "baseline", w,
			plan_impl_label(pi, label, sizeof(label)), pi->nconfigs, pi->nconfigs == 1 ? " " : "s",
			pi->python_path ? "python, " : "",
			pi->python_path ? (strcmp(pi->backend, "cpu") ? "gpu" : "cpu") : pi->backend,
			pi->forced ? ": forced, every task runs it with no tuning pass" : "");
	}
	for (int k = 0; k < 2; k++) {
		const struct plan_impl *pi = k ? &p->candidate : &p->baseline;

		if (pi->plugin_path)
			fprintf(f, "  %-10s plugin %s (sha256 %.16s...)\n", k ? "candidate" : "baseline",
				pi->plugin_path, pi->plugin_sha256);
		if (pi->python_path)
			fprintf(f, "  %-10s python %s (sha256 %.16s...), interpreter %s\n",
				k ? "candidate" : "baseline", pi->python_path, pi->python_sha256, pyimpl_interpreter());
		pyimpl_autotune_summary(f, k ? "candidate" : "baseline", pi->python_json);
		for (int s = 0; s < pi->nskips; s++)
			for (int i = 0; i < p->ntasks; i++)
				if (!strcmp(p->task_hash[i], pi->skips[s].hash))
					fprintf(f, "  %-10s skips %s: %s\n", k ? "candidate" : "baseline",
						p->tasks[i].name, pi->skips[s].reason);
	}
	for (int k = 0; k < p->nrefs; k++)
		print_reference(p, k, f);
	if (p->form_note)
		fprintf(f, "  form       %s\n", p->form_note);
	else if (p->ntasks > 0)
		fprintf(f, "  form       %s\n", vs_op_of(p->tasks)->form(p->tasks));
	fprintf(f, "  gates      parity %s, %s CI lower bound >= %g, capture %s\n",
		p->parity_required ? "required" : "advisory",
		!p->workload ? "isolated speedup" :
		ndt > 1 ? "each kv dtype's workload speedup (sum w x t_base / sum w x t_cand over its tasks; their mix "
			  "and the geomean beside, not gated)" :
			  "workload speedup (sum w x t_base / sum w x t_cand; geomean beside, not gated)",
		p->speedup_min, p->capture_required ? "required" : "n/a on the CPU");
	if (p->ntasks > 0) {
		const struct task_spec *t = &p->tasks[0];
		struct task_tol tool_out, tool_lse;

		vs_op_of(t)->tolerances(&tool_out, &tool_lse, t);
		fprintf(f, "  tolerance  out atol %g rtol %g, lse atol %g rtol %g%s\n", t->tol_out.atol,
			t->tol_out.rtol, t->tol_lse.atol, t->tol_lse.rtol,
			t->tol_out.atol != tool_out.atol || t->tol_out.rtol != tool_out.rtol ?
				" (relaxed by the card's expects.parity: relaxed(<tol>))" :
				" (the tool's)");
	}
	fprintf(f,
		"  protocol   timing %s, warmup %d, pairs %d..%d, <= %gs/task, CI +-%g%%, flush %gx LLC, check every "
		"%d-th pair\n",
		p->protocol.timing, p->protocol.warmup, p->protocol.min_pairs, p->protocol.max_pairs,
		p->protocol.max_seconds, p->protocol.rel_halfwidth * 100, p->protocol.flush_factor,
		p->protocol.check_every);
	if (p->e2e.enabled) {
		int ne = 0;

		for (int i = 0; i < p->ntasks; i++)
			ne += p->e2e.tasks[i];
		fprintf(f,
			"  e2e        step %s (%s) on %d task%s (one token, bf16), pairs %d..%d, <= %gs/task, with a "
			"baseline control%s",
			p->e2e.step_name, p->e2e.step_path, ne, ne == 1 ? "" : "s", p->e2e.min_pairs, p->e2e.max_pairs,
			p->e2e.max_seconds, p->e2e.gate ? "; gate: e2e_pct CI lower bound >= " : "\n");
		if (p->e2e.gate)
			fprintf(f, "%g%%\n", p->e2e.delta_min_pct);
	}
	if (p->pins)
		fprintf(f,
			"  configs    pinned from run %s (result.json sha256 %.16s...): measured with no tuning pass\n",
			p->pins_run, p->pins_sha256);
	for (int i = 0; i < p->ntasks; i++)
		nw = (int)strlen(p->tasks[i].name) > nw ? (int)strlen(p->tasks[i].name) : nw;
	fprintf(f, "  %-*s", nw, "task");
	vs_op_of(p->tasks)->summary_header(f, p->ntasks > 0 ? p->tasks : NULL);
	fprintf(f, "%s\n", p->pins ? "  pinned (baseline / candidate)" : "");
	for (int i = 0; i < p->ntasks; i++) {
		const struct task_spec *s = &p->tasks[i];
		const struct vs_operator *op = vs_op_of(s);

		bytes += op->bytes(s);
		flops += op->flops(s);
		fprintf(f, "  %-*s", nw, s->name);
		op->summary_row(f, s, p->tasks);
		if (p->pins) {
			const struct plan_pin *pin = &p->pins[i];

			fprintf(f, "  %s / %s", pin->baseline >= 0 ? p->baseline.configs[pin->baseline].name : "tuned",
				pin->candidate >= 0 ? p->candidate.configs[pin->candidate].name : "tuned");
		}
		fputc('\n', f);
	}
	fprintf(f, "  %d tasks, %.1f MB and %.2f GFLOP per pass over every task\n", p->ntasks, bytes / 1e6,
		flops / 1e9);
	if (!strcmp(p->tier, "full")) {
		char gpu_only[1024];
		int gpu = strcmp(p->candidate.backend, "cpu") != 0;

		if (!vs_op_of(p->ntasks > 0 ? p->tasks : NULL)
			     ->full_tier_extra(gpu_only, sizeof(gpu_only), gpu, p->ntasks > 0 ? p->tasks : NULL))
			fprintf(f,
				"  note: tier full equals tier standard on the %s backend: the shapes it adds (%s) "
				"are GPU benchmark shapes, planned for GPU backends only\n",
				p->candidate.backend, gpu_only);
	}
	if (!strncmp(p->gen, "gfx", 3)) {
		const cJSON *ks = p->build ? cJSON_GetObjectItem(p->build, "kernels") : NULL;
		const char *sides[2] = {p->baseline.name, p->candidate.name};

		/* the gate's own verdict; plans older than "gate_pass" have only "pass" */
		const cJSON *gp = p->build ? cJSON_GetObjectItem(p->build, "gate_pass") : NULL;
		int gate_failed = cJSON_IsFalse(gp ? gp : p->build ? cJSON_GetObjectItem(p->build, "pass") : NULL);

		for (int side = 0; side < 2; side++) {
			int n = 0, bad = 0;

			if (side == 1 && !strcmp(sides[0], sides[1]))
				break;
			cJSON_ArrayForEach(k, ks)
			{
				if (!strcmp(get_str(k, "impl") ? get_str(k, "impl") : "", sides[side])) {
					n++;
					bad += cJSON_IsFalse(cJSON_GetObjectItem(k, "pass"));
				}
			}
			if (!n) {
				const cJSON *src, *srcs = p->build ? cJSON_GetObjectItem(p->build, "sources") : NULL;
				int shown = 0;

				fprintf(f,
					"  build      no %s build figures for %s (run the gfx942 gate: "
					"ctest -R gfx942_build_gate)\n",
					p->gen, sides[side]);
				cJSON_ArrayForEach(src, srcs)
				{
					const char *why = get_str(src, "why");

					if (strcmp(get_str(src, "impl") ? get_str(src, "impl") : "", sides[side]))
						continue;
					if (!shown++)
						fprintf(f, "    HIP source for %s (TileLang):\n", p->gen);
					fprintf(f, "    %-40s %-14s %s\n",
						get_str(src, "config") ? get_str(src, "config") : "-",
						get_str(src, "kv_dtype") ? get_str(src, "kv_dtype") : "-",
						cJSON_IsTrue(cJSON_GetObjectItem(src, "compiled")) ? "compiled" :
						why                                                ? why :
												     "not compiled");
				}
				continue;
			}
			if (bad)
				fprintf(f,
					"  build      %s figures for %s (gate FAILED: %d of %d kernels over a "
					"limit):\n",
					p->gen, sides[side], bad, n);
			else
				fprintf(f, "  build      %s figures for %s (%s):\n", p->gen, sides[side],
					gate_failed ? "gate FAILED" : "gate passed");
			fprintf(f, "    %-52s %-14s %5s %5s %5s %7s %7s %6s %5s\n", "kernel/config", "kv_dtype", "vgpr",
				"agpr", "sgpr", "lds", "scratch", "spills", "waves");
			cJSON_ArrayForEach(k, ks)
			{
				const char *cfg = get_str(k, "config");
				const char *sym = get_str(k, "kernel");
				const char *dt = get_str(k, "kv_dtype");
				char label[64], waves[16] = "-";
				double lds = cJSON_GetNumberValue(cJSON_GetObjectItem(k, "lds_static")) +
					     cJSON_GetNumberValue(cJSON_GetObjectItem(k, "lds_dynamic"));

				if (strcmp(get_str(k, "impl") ? get_str(k, "impl") : "", sides[side]))
					continue;
				snprintf(label, sizeof(label), "%s%s%s", sym ? sym : "", sym && cfg ? " " : "",
					 cfg ? cfg : "");
				if (cJSON_IsNumber(cJSON_GetObjectItem(k, "occupancy")))
					snprintf(waves, sizeof(waves), "%d",
						 (int)cJSON_GetNumberValue(cJSON_GetObjectItem(k, "occupancy")));
#define NUM(key)                                                                                                       \
	(isnan(cJSON_GetNumberValue(cJSON_GetObjectItem(k, key))) ? 0 :                                                \
								    cJSON_GetNumberValue(cJSON_GetObjectItem(k, key)))
				fprintf(f, "    %-52s %-14s %5.0f %5.0f %5.0f %7.0f %7.0f %6.0f %5s%s%s\n", label,
					dt ? dt : "-", NUM("vgpr"), NUM("agpr"), NUM("sgpr"), isnan(lds) ? 0 : lds,
					NUM("scratch"), NUM("vgpr_spill") + NUM("sgpr_spill"), waves,
					cJSON_IsFalse(cJSON_GetObjectItem(k, "pass")) ? "  FAIL" : "",
					cJSON_IsTrue(cJSON_GetObjectItem(k, "known")) ? " (known)" : "");
#undef NUM
			}
		}
	} else if (!strncmp(p->gen, "sm_", 3) && p->build) {
		/*
		 * tools/gpu/sm90_resources.sh (NVIDIA builds): ptxas figures, recorded, not a gate; and
		 * Triton's configs compiled for the generation (tools/gpu/triton_cuda_resources.py)
		 */
		const cJSON *ks = cJSON_GetObjectItem(p->build, "kernels");

		fprintf(f, "  build      %s figures for %s (ptxas%s):\n", p->gen, p->candidate.name,
			cJSON_IsFalse(cJSON_GetObjectItem(p->build, "pass")) ? "; a kernel spills or exceeds 227 KiB" :
									       "");
		if (get_str(p->build, "triton"))
			fprintf(f, "    Triton configs: figures not known: %s\n", get_str(p->build, "triton"));
		fprintf(f, "    %-60s %-13s %5s %7s %7s %6s %6s\n", "kernel/config", "kv_dtype", "regs", "smem",
			"dynamic", "stack", "spills");
		cJSON_ArrayForEach(k, ks)
		{
			const char *cfg = get_str(k, "config");
			const char *sym = get_str(k, "kernel");
			char label[96];

			snprintf(label, sizeof(label), "%s%s%s", sym ? sym : "", sym && cfg ? " " : "", cfg ? cfg : "");
#define NUM(key)                                                                                                       \
	(isnan(cJSON_GetNumberValue(cJSON_GetObjectItem(k, key))) ? 0 :                                                \
								    cJSON_GetNumberValue(cJSON_GetObjectItem(k, key)))
			fprintf(f, "    %-60s %-13s %5.0f %7.0f %7.0f %6.0f %6.0f%s%s\n", label,
				get_str(k, "kv_dtype") ? get_str(k, "kv_dtype") : "", NUM("registers"),
				NUM("smem_static"), NUM("smem_dynamic"), NUM("stack"),
				NUM("spill_stores") + NUM("spill_loads"), get_str(k, "why") ? "  FAIL: " : "",
				get_str(k, "why") ? get_str(k, "why") : "");
#undef NUM
		}
	}
}

static void impl_release(struct plan_impl *pi)
{
	free(pi->name);
	free(pi->backend);
	free(pi->configs);
	free(pi->plugin_path);
	free(pi->python_path);
	free(pi->python_json);
	free(pi->forced);
	skips_release(pi->skips, pi->nskips);
	memset(pi, 0, sizeof(*pi));
}

void plan_release(struct plan *p)
{
	if (!p)
		return;
	workload_plan_release(p->workload);
	free(p->card_id);
	free(p->card_path);
	free(p->tier);
	free(p->gen);
	free(p->model);
	free(p->regime);
	free(p->form_note);
	impl_release(&p->baseline);
	impl_release(&p->candidate);
	for (int k = 0; k < p->nrefs; k++) {
		reference_release(&p->refs[k], p->ntasks);
		impl_release(&p->refs[k].impl);
	}
	for (int i = 0; i < p->ntasks; i++)
		task_spec_release(&p->tasks[i]);
	free(p->tasks);
	free(p->task_hash);
	cJSON_Delete(p->build);
	e2e_release(&p->e2e);
	free(p->pins);
	free(p->pins_run);
	memset(p, 0, sizeof(*p));
}

/* ---- the plan against its card (docs/DESIGN.md "A plan is the card's") ------------------------ */

int plan_trimmed_for_tests;

/* v as compact JSON for a message, cut to fit cap ("(none)" for a missing value). */
static void json_brief(char *buf, size_t cap, const cJSON *v)
{
	char *t = v ? cJSON_PrintUnformatted(v) : NULL;

	snprintf(buf, cap, "%s", v ? (t ? t : "?") : "(none)");
	if (t && strlen(t) >= cap && cap > 4)
		memcpy(buf + cap - 4, "...", 4);
	cJSON_free(t);
}

/*
 * The first place where have (the plan's value) and want (the derived one) differ: its dotted path
 * under prefix in where, both values in brief. Returns 1 when they differ, 0 when they are equal.
 */
static int json_first_diff(char *where, size_t wcap, char *vh, char *vw, size_t vcap, const cJSON *have,
			   const cJSON *want, const char *prefix)
{
	const cJSON *x;

	if (cJSON_IsObject(have) && cJSON_IsObject(want)) {
		cJSON_ArrayForEach(x, want)
		{
			const cJSON *y = cJSON_GetObjectItemCaseSensitive(have, x->string);
			char sub[256];

			snprintf(sub, sizeof(sub), "%s%s%s", prefix, *prefix ? "." : "", x->string);
			if (!y) {
				snprintf(where, wcap, "%s", sub);
				json_brief(vh, vcap, NULL);
				json_brief(vw, vcap, x);
				return 1;
			}
			if (json_first_diff(where, wcap, vh, vw, vcap, y, x, sub))
				return 1;
		}
		cJSON_ArrayForEach(x, have)
		{
			if (!cJSON_GetObjectItemCaseSensitive(want, x->string)) {
				snprintf(where, wcap, "%s%s%s", prefix, *prefix ? "." : "", x->string);
				json_brief(vh, vcap, x);
				json_brief(vw, vcap, NULL);
				return 1;
			}
		}
		return 0;
	}
	if (have && want && cJSON_Compare(have, want, 1))
		return 0;
	snprintf(where, wcap, "%s", prefix);
	json_brief(vh, vcap, have);
	json_brief(vw, vcap, want);
	return 1;
}

/* Compare one part of the plan (have) with the derived one (want): 1 and the line in diff when they differ. */
static int part_differs(char *diff, size_t cap, int *oom, cJSON *have, cJSON *want, const char *prefix,
			const char *source)
{
	char where[256], vh[96], vw[96];
	int d = 0;

	if (!have || !want)
		*oom = 1;
	else if ((d = json_first_diff(where, sizeof(where), vh, vw, sizeof(vh), have, want, prefix)))
		snprintf(diff, cap, "%s is %s in the plan, the tool derives %s from %s", where, vh, vw, source);
	cJSON_Delete(have);
	cJSON_Delete(want);
	return d;
}

/*
 * Which field of spec have (read from a plan) differs from the task the tool plans under its name:
 * the line in diff ("spec.tol_out.atol is 0.5 in the plan, the tool plans 0.0008"), or nothing
 * when no task of that name is planned (says so) or the specs are equal (the hash alone was edited).
 */
static void spec_diff_named(char *diff, size_t cap, const struct task_spec *have)
{
	struct task_spec want;
	char where[256], vh[96], vw[96];
	cJSON *a, *b;

	memset(&want, 0, sizeof(want));
	if (vs_op_of(have)->spec_named(&want, have->name)) {
		snprintf(diff, cap, "'%.*s' is not a task the tool plans", (int)sizeof(have->name), have->name);
		return;
	}
	a = vs_op_of(have)->spec_to_json(have);
	b = vs_op_of(&want)->spec_to_json(&want);
	if (a && b && json_first_diff(where, sizeof(where), vh, vw, sizeof(vh), a, b, "spec"))
		snprintf(diff, cap, "'%.96s': %.100s is %.90s in the plan, the tool plans %.90s", want.name, where, vh,
			 vw);
	else
		snprintf(diff, cap, "'%.96s': its spec is the tool's, its hash is not", want.name);
	cJSON_Delete(a);
	cJSON_Delete(b);
	task_spec_release(&want);
}

static void spec_list_release(struct task_spec *t, int n)
{
	for (int i = 0; t && i < n; i++)
		task_spec_release(&t[i]);
	free(t);
}

int plan_claim_unchanged(const struct plan *p, const struct card *c, int same)
{
	int claimed, at_emit;

	if (!p->workload)
		return 1;
	/*
	 * A plan without the field: its card hash covered the claims list, so the card claimed the
	 * workload then if that hash still matches (same 2) and the card claims it now.
	 */
	claimed = card_list_has(&c->expects.workloads, p->workload->id);
	at_emit = p->workload->claimed >= 0 ? p->workload->claimed : same == 2 && claimed;
	return claimed == at_emit;
}

int plan_check_card(const struct plan *p, const struct card *c, int configs, char *diff, size_t cap)
{
	struct plan d;
	char hex[65], source[320];
	const struct vs_operator *op = vs_op_of(p->ntasks > 0 ? p->tasks : NULL);
	int err = 0, oom = 0, tier_bit = 0, gpu, differs = 0, same;

	memset(&d, 0, sizeof(d));
	diff[0] = '\0';
	snprintf(source, sizeof(source), "%s", c->path);
#define DIFFER(...)                                                                                                    \
	do {                                                                                                           \
		snprintf(diff, cap, __VA_ARGS__);                                                                      \
		differs = 1;                                                                                           \
		goto done;                                                                                             \
	} while (0)
	if (strcmp(p->card_id, c->id))
		DIFFER("card.id is '%s' in the plan, but the card's id is '%s'", p->card_id, c->id);
	if ((err = card_hash_check(c, p->card_hash, hex, &same)))
		goto done;
	if (!same)
		DIFFER("card.hash is %.12s... in the plan, but %s hashes to %.12s... (the card changed since the plan "
		       "was emitted)",
		       p->card_hash, c->path, hex);
	if (p->workload ? strcmp(p->tier, "workload") != 0 : !(tier_bit = tier_bit_of(p->tier)))
		DIFFER("tier is '%s' in the plan: the tiers are smoke, standard and full (and 'workload' with a "
		       "workload)",
		       p->tier);
	if (!card_list_has(&c->match.gens, p->gen))
		DIFFER("gen is '%s' in the plan, which is not in %s's match.gens", p->gen, c->path);
	if (strcmp(p->regime, "decode"))
		DIFFER("regime is '%s' in the plan, but the tool plans 'decode'", p->regime);
	gpu = strcmp(p->candidate.backend, "cpu") != 0;
	if (gpu == is_cpu_gen(p->gen))
		DIFFER("candidate.backend is '%s' in the plan, which cannot run generation '%s'", p->candidate.backend,
		       p->gen);

	/* The task set of the tier and the card's dtypes, in order, every spec field. */
	if (p->workload) {
		/* The workload's tasks, from the same file (its sha256 checked) and trace. */
		struct workload w;
		struct workload_tasks wt;

		if ((err = workload_tasks_of(&wt, &w, p->workload->path, p->workload->sha256)))
			goto done;
		err = op->derive_tasks(&d, c, 0, gpu, &w, &wt);
		workload_tasks_release(&wt);
		workload_release(&w);
		if (err)
			goto done;
		if (strcmp(p->workload->trace_sha256, d.workload->trace_sha256))
			DIFFER("workload.trace_sha256 is '%.16s...' in the plan, but %s's trace hashes to '%.16s...'",
			       p->workload->trace_sha256, p->workload->path, d.workload->trace_sha256);
		if (p->workload->seed != d.workload->seed)
			DIFFER("workload.seed is %llu in the plan, but %s says %llu",
			       (unsigned long long)p->workload->seed, p->workload->path,
			       (unsigned long long)d.workload->seed);
		if (!plan_claim_unchanged(p, c, same))
			DIFFER("%s %s workload '%s' since the plan was emitted (expects.workloads): a claim comes "
			       "before the run",
			       c->path,
			       card_list_has(&c->expects.workloads, p->workload->id) ? "claims" : "no longer claims",
			       p->workload->id);
	} else if ((err = op->derive_tasks(&d, c, tier_bit, gpu, NULL, NULL))) {
		goto done;
	}
	for (int i = 0; i < d.ntasks && !plan_trimmed_for_tests; i++) {
		int k = -1;

		for (int j = 0; j < p->ntasks && k < 0; j++)
			if (!strcmp(p->tasks[j].name, d.tasks[i].name))
				k = j;
		if (k < 0)
			DIFFER("task '%s' of tier %s is missing from the plan: it holds %d of the %d tasks %s plans "
			       "for tier %s",
			       d.tasks[i].name, p->tier, p->ntasks, d.ntasks, c->path, p->tier);
	}
	for (int j = 0, prev = -1; j < p->ntasks; j++) {
		int k = -1;

		for (int i = 0; i < d.ntasks && k < 0; i++)
			if (!strcmp(p->tasks[j].name, d.tasks[i].name))
				k = i;
		if (k < 0)
			DIFFER("tasks[%d] '%s' is not a task of tier %s for %s (%s)", j, p->tasks[j].name, p->tier,
			       c->path, gpu ? "GPU" : "CPU");
		if (plan_trimmed_for_tests ? k <= prev : k != j)
			DIFFER("tasks[%d] is '%s' in the plan, the tool plans '%s' there", j, p->tasks[j].name,
			       d.tasks[j < d.ntasks ? j : 0].name);
		prev = k;
		if (p->workload &&
		    (p->workload->concurrency[j] != d.workload->concurrency[k] ||
		     p->workload->steps[j] != d.workload->steps[k] || p->workload->weight[j] != d.workload->weight[k]))
			DIFFER("task '%s': workload is concurrency %d, %d steps, weight %.17g in the plan, but %s "
			       "gives concurrency %d, %d steps, weight %.17g",
			       p->tasks[j].name, p->workload->concurrency[j], p->workload->steps[j],
			       p->workload->weight[j], p->workload->path, d.workload->concurrency[k],
			       d.workload->steps[k], d.workload->weight[k]);
		if (p->workload)
			snprintf(source, sizeof(source), "workload %s", p->workload->path);
		else
			snprintf(source, sizeof(source), "tier %s", p->tier);
		if (part_differs(diff, cap, &oom, vs_op_of(&p->tasks[j])->spec_to_json(&p->tasks[j]),
				 vs_op_of(&d.tasks[k])->spec_to_json(&d.tasks[k]), "", source)) {
			char line[1024];

			snprintf(line, sizeof(line), "task '%s': spec.%s", p->tasks[j].name, diff);
			snprintf(diff, cap, "%s", line);
			differs = 1;
			goto done;
		}
	}

	/* The protocol of the generation and tier, in the timing mode the plan was emitted with. */
	protocol_defaults(&d.protocol, gpu, p->tier);
	if (strcmp(p->protocol.timing, "graph_replay") && strcmp(p->protocol.timing, "launch"))
		DIFFER("protocol.timing is '%s' in the plan: the timing modes are graph_replay and launch",
		       p->protocol.timing);
	if (!gpu && strcmp(p->protocol.timing, "launch"))
		DIFFER("protocol.timing is '%s' in the plan, but a CPU plan times the launch", p->protocol.timing);
	snprintf(d.protocol.timing, sizeof(d.protocol.timing), "%s", p->protocol.timing);
	if (plan_trimmed_for_tests) {
		d.protocol = p->protocol;
		d.e2e = p->e2e;
	}
	snprintf(source, sizeof(source), "the protocol of %s plans, tier %s", gpu ? "GPU" : "CPU", p->tier);
	if (part_differs(diff, cap, &oom, protocol_to_json(&oom, &p->protocol), protocol_to_json(&oom, &d.protocol),
			 "protocol", source)) {
		differs = 1;
		goto done;
	}

	/* The gates come from the card's expects, never from the plan. */
	d.speedup_min = c->expects.has_isolated_speedup_min ? c->expects.isolated_speedup_min : 0;
	d.parity_required = !c->expects.parity || strcmp(c->expects.parity, "advisory") != 0;
	d.capture_required = gpu;
	d.e2e.enabled = p->e2e.enabled;
	d.e2e.step_json = d.e2e.step_path = d.e2e.step_name = NULL;
	d.e2e.tasks = NULL;
	d.e2e.gate = c->scope && !strcmp(c->scope, "e2e");
	d.e2e.delta_min_pct = c->expects.has_e2e_delta_min_pct ? c->expects.e2e_delta_min_pct : 0;
	if (d.e2e.gate && !p->e2e.enabled)
		DIFFER("e2e is absent from the plan, but %s is a scope: e2e card (its verdict gates on the e2e stage)",
		       c->path);
	snprintf(source, sizeof(source), "%s's expects", c->path);
	if (part_differs(diff, cap, &oom, gates_to_json(&oom, p), gates_to_json(&oom, &d), "gates", source)) {
		differs = 1;
		goto done;
	}
	if (p->e2e.enabled) {
		if (!plan_trimmed_for_tests)
			e2e_protocol_defaults(&d.e2e, gpu);
		snprintf(source, sizeof(source), "the e2e protocol of %s plans", gpu ? "GPU" : "CPU");
		if (part_differs(diff, cap, &oom, e2e_protocol_to_json(&oom, &p->e2e),
				 e2e_protocol_to_json(&oom, &d.e2e), "e2e", source)) {
			differs = 1;
			goto done;
		}
	}

	/*
	 * A forced side runs its one config, and two forced sides of one implementation differ; each
	 * other side tunes over its implementation's whole config space for the generation.
	 */
	for (int r = 0; r < 2; r++) {
		const struct plan_impl *pi = r ? &p->candidate : &p->baseline;

		if (pi->forced && (pi->nconfigs != 1 || strcmp(pi->configs[0].name, pi->forced)))
			DIFFER("%s.forced is '%s' in the plan, but its configs list %d config%s: the tool plans that "
			       "one config alone",
			       r ? "candidate" : "baseline", pi->forced, pi->nconfigs, pi->nconfigs == 1 ? "" : "s");
	}
	if (p->baseline.forced && p->candidate.forced && !strcmp(p->baseline.name, p->candidate.name) &&
	    !strcmp(p->baseline.forced, p->candidate.forced))
		DIFFER("baseline and candidate are both %s@%s in the plan: the tool refuses an A/A of one config",
		       p->baseline.name, p->baseline.forced);
	for (int r = 0; configs && !plan_trimmed_for_tests && r < 2; r++) {
		const struct plan_impl *pi = r ? &p->candidate : &p->baseline;
		const struct mla_decode_impl *impl = mla_decode_impl_find(pi->name);
		int n = impl ? impl->configs(p->gen, NULL, 0) : -1;

		if (impl && !pi->forced && n != pi->nconfigs)
			DIFFER("%s.configs lists %d config%s in the plan, but %s has %d for %s",
			       r ? "candidate" : "baseline", pi->nconfigs, pi->nconfigs == 1 ? "" : "s", pi->name, n,
			       p->gen);
	}
#undef DIFFER
done:
	spec_list_release(d.tasks, d.ntasks);
	free(d.task_hash);
	workload_plan_release(d.workload);
	if (!err && oom)
		err = vs_oom();
	if (!err && differs)
		err = VS_EVERIFY;
	return err;
}
