/* Python implementations behind the kernel ABI: describe by subprocess, embed after the fork. */
#include "pyimpl.h"
#include "layout.h"
#include "vs_error.h"

#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define VS_PYSHIM_REL "kernels/python/mla_decode.py" /* the shim, under vs_repo_root() */
#define VS_PYSTEP_REL "kernels/python/e2e_step.py"   /* the e2e step bridge, under vs_repo_root() */

#define SUPPORTS_CACHE 64
#define OUT_MAX (16u << 20) /* bytes of a describe's output accepted */

/* ---- the CPython C API, through dlsym (stable ABI only; see pyimpl.h) ----------------------- */

typedef void PyObj;

struct py_api {
	void (*Py_InitializeEx)(int);
	int (*Py_IsInitialized)(void);
	int (*PyRun_SimpleStringFlags)(const char *, void *);
	PyObj *(*PyImport_ImportModule)(const char *);
	PyObj *(*PyObject_GetAttrString)(PyObj *, const char *);
	PyObj *(*PyObject_CallObject)(PyObj *, PyObj *);
	PyObj *(*PyObject_Str)(PyObj *);
	PyObj *(*Py_BuildValue)(const char *, ...);
	long long (*PyLong_AsLongLong)(PyObj *);
	const char *(*PyUnicode_AsUTF8AndSize)(PyObj *, ssize_t *);
	PyObj *(*PyErr_Occurred)(void);
	void (*PyErr_Fetch)(PyObj **, PyObj **, PyObj **);
	void (*PyErr_Clear)(void);
	void (*Py_DecRef)(PyObj *);
	int (*PyGILState_Ensure)(void);
	void (*PyGILState_Release)(int);
	void *(*PyEval_SaveThread)(void);
	PyObj *none; /* &_Py_NoneStruct */
};

#define PY_SYM(name)                                                                                                   \
	{                                                                                                              \
#name, offsetof(struct py_api, name)                                                                   \
	}
static const struct {
	const char *name;
	size_t off;
} py_syms[] = {
	PY_SYM(Py_InitializeEx),
	PY_SYM(Py_IsInitialized),
	PY_SYM(PyRun_SimpleStringFlags),
	PY_SYM(PyImport_ImportModule),
	PY_SYM(PyObject_GetAttrString),
	PY_SYM(PyObject_CallObject),
	PY_SYM(PyObject_Str),
	PY_SYM(Py_BuildValue),
	PY_SYM(PyLong_AsLongLong),
	PY_SYM(PyUnicode_AsUTF8AndSize),
	PY_SYM(PyErr_Occurred),
	PY_SYM(PyErr_Fetch),
	PY_SYM(PyErr_Clear),
	PY_SYM(Py_DecRef),
	PY_SYM(PyGILState_Ensure),
	PY_SYM(PyGILState_Release),
	PY_SYM(PyEval_SaveThread),
};

static struct py_api py;
static int started;
static PyObj *fn_load, *fn_launch, *fn_prepare, *fn_workspace, *fn_supports, *fn_versions, *fn_helpers_late, *shim;
static PyObj *fn_phase_at, *fn_autotune;
/* The phase of the task and whether a timed launch runs (pyimpl_phase()), read by the shim in place. */
static int phase_cell[2];
/* The e2e step module (kernels/python/e2e_step.py's bridge), when a plan has an e2e stage. */
static struct pyimpl *step_p;
static char *step_load_error;
static PyObj *step_bridge, *fn_step_elems, *fn_step_call, *fn_step_reference, *fn_step_memory;

/* ---- the process-wide table ------------------------------------------------------------------ */

struct supports_answer {
	int32_t key[14];
	float scales[2];
	int ok;
	char why[160];
};

struct slot {
	struct pyimpl *p;
	int py_index;     /* index in the shim's kernel list, -1 when not loaded */
	char *load_error; /* the import line of a module that failed to load in this process */
	char *pending;    /* an error of workspace_size(), returned by the next prepare/launch */
	struct supports_answer answers[SUPPORTS_CACHE];
	int nanswers;
	pid_t co_pid;   /* the `serve` co-process answering supports() in the parent, 0 if none */
	int co_fd;      /* its socket (stdin and stdout) */
	int co_broken;  /* it failed once: one-shot subprocesses from then on */
	pid_t co_owner; /* the process that started it (a forked child starts its own) */
	struct mla_decode_config *alt_configs; /* configs described for alt_arch */
	int nalt;
	char *alt_arch;
};

static struct slot slots[PYIMPL_MAX_MODULES];
static int nslots;
static char last_error[1024];

static void set_last_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void set_last_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
}

/* Copy src into dst (cap bytes), cut to fit. */
static void copy_text(char *dst, size_t cap, const char *src)
{
	size_t n = strlen(src);

	if (!cap)
		return;
	if (n >= cap)
		n = cap - 1;
	memcpy(dst, src, n);
	dst[n] = 0;
}

const char *pyimpl_last_error(void)
{
	return last_error;
}

int pyimpl_started(void)
{
	return started;
}

const char *pyimpl_interpreter(void)
{
	const char *e = getenv("VS_PYTHON");

	return e && *e ? e : "python3";
}

/* $env when set, else rel under the repository root, written into buf. */
static const char *repo_file(const char *env, const char *rel, char *buf, size_t cap)
{
	const char *e = getenv(env);

	if (e && *e)
		return e;
	snprintf(buf, cap, "%s/%s", vs_repo_root(), rel);
	return buf;
}

/* The bridge: kernels/python/mla_decode.py ($VS_PYSHIM overrides). */
static const char *shim_path(void)
{
	static char path[4096];

	return repo_file("VS_PYSHIM", VS_PYSHIM_REL, path, sizeof(path));
}

/* The step bridge beside the shim: kernels/python/e2e_step.py ($VS_PYSTEP overrides). */
static const char *step_bridge_path(void)
{
	static char path[4096];

	return repo_file("VS_PYSTEP", VS_PYSTEP_REL, path, sizeof(path));
}

const struct pyimpl *pyimpl_at(int i)
{
	return i >= 0 && i < nslots ? slots[i].p : NULL;
}

const struct pyimpl *pyimpl_for_impl(const char *name)
{
	for (int i = 0; name && i < nslots; i++)
		if (!strcmp(slots[i].p->name, name))
			return slots[i].p;
	return NULL;
}

/* ---- subprocess ------------------------------------------------------------------------------- */

/*
 * Run argv (argv[0] searched on PATH) with stdout and stderr captured (malloc'd, NUL-terminated).
 * *status is the exit status, 127 when it could not be run, -1 when killed by a signal.
 */
static int run_capture(char *const argv[], char **out, char **err, int *status)
{
	int po[2] = {-1, -1}, pe[2] = {-1, -1}, rc = 0, ws;
	char *buf[2] = {NULL, NULL};
	size_t len[2] = {0, 0}, cap[2] = {0, 0};
	pid_t pid;

	if (pipe(po) || pipe(pe)) {
		rc = vs_error(VS_EIO, "pipe: %s", strerror(errno));
		goto done;
	}
	pid = fork();
	if (pid < 0) {
		rc = vs_error(VS_EIO, "fork: %s", strerror(errno));
		goto done;
	}
	if (pid == 0) {
		dup2(po[1], 1);
		dup2(pe[1], 2);
		close(po[0]);
		close(pe[0]);
		close(po[1]);
		close(pe[1]);
		execvp(argv[0], argv);
		dprintf(2, "cannot run '%s': %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(po[1]);
	close(pe[1]);
	po[1] = pe[1] = -1;
	for (int open_fds = 2; open_fds > 0;) {
		struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};

		if (poll(fds, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		for (int k = 0; k < 2; k++) {
			int fd = k ? pe[0] : po[0];
			ssize_t n;

			if (fd < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			if (cap[k] - len[k] < 4097) {
				size_t nc = cap[k] ? cap[k] * 2 : 8192;
				char *nb = nc <= OUT_MAX ? realloc(buf[k], nc) : NULL;

				if (!nb) {
					rc = vs_error(VS_ENOMEM, "output of '%s' too large", argv[0]);
					kill(pid, SIGKILL);
					n = 0;
					goto closefd;
				}
				buf[k] = nb;
				cap[k] = nc;
			}
			n = read(fd, buf[k] + len[k], cap[k] - len[k] - 1);
			if (n < 0 && errno == EINTR)
				continue;
			if (n > 0) {
				len[k] += (size_t)n;
				continue;
			}
		closefd:
			close(fd);
			if (k)
				pe[0] = -1;
			else
				po[0] = -1;
			fds[k].fd = -1;
			open_fds--;
		}
	}
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR)
		;
	*status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
	for (int k = 0; k < 2; k++) {
		if (!buf[k] && !(buf[k] = malloc(1))) {
			rc = vs_oom();
			goto done;
		}
		buf[k][len[k]] = 0;
	}
	if (!rc) {
		*out = buf[0];
		*err = buf[1];
		buf[0] = buf[1] = NULL;
	}
done:
	for (int k = 0; k < 2; k++) {
		free(buf[k]);
		if (po[k] >= 0)
			close(po[k]);
		if (pe[k] >= 0)
			close(pe[k]);
	}
	return rc;
}

/* The last non-empty line of s, trimmed, into buf. */
static void last_line(char *buf, size_t cap, const char *s)
{
	const char *end = s + strlen(s), *start;

	while (end > s && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
		end--;
	start = end;
	while (start > s && start[-1] != '\n')
		start--;
	snprintf(buf, cap, "%.*s", (int)(end - start), start);
}

/* ---- describe --------------------------------------------------------------------------------- */

void pyimpl_free(struct pyimpl *p)
{
	if (!p)
		return;
	free(p->path);
	free(p->real_path);
	free(p->name);
	free(p->py_backend);
	free(p->backend);
	free(p->summary);
	free(p->arch);
	free(p->configs);
	free(p->interpreter);
	free(p->executable);
	free(p->libpython);
	free(p->versions_json);
	free(p->describe_json);
	free(p->helpers_json);
	free(p);
}

static char *json_strdup(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? strdup(v->valuestring) : NULL;
}

static int json_int(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? (int)v->valuedouble : 0;
}

/* Configs of a description's "configs" array into a malloc'd array (*n of them). */
static int configs_from_json(struct mla_decode_config **out, int *n, const cJSON *arr, const char *path)
{
	struct mla_decode_config *c;
	const cJSON *it;
	int i = 0;

	if (!cJSON_IsArray(arr))
		return vs_error(VS_EPARSE, "python module '%s': the description has no configs array", path);
	c = calloc((size_t)cJSON_GetArraySize(arr) + 1, sizeof(*c));
	if (!c)
		return vs_oom();
	cJSON_ArrayForEach(it, arr)
	{
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(it, "name");

		if (!cJSON_IsString(nm) || strlen(nm->valuestring) >= sizeof(c[i].name)) {
			free(c);
			return vs_error(VS_EPARSE, "python module '%s': a described config has no valid name", path);
		}
		strcpy(c[i].name, nm->valuestring);
		c[i].block_n = json_int(it, "block_n");
		c[i].block_h = json_int(it, "block_h");
		c[i].num_splits = json_int(it, "num_splits");
		c[i].num_warps = json_int(it, "num_warps");
		c[i].num_stages = json_int(it, "num_stages");
		i++;
	}
	*out = c;
	*n = i;
	return 0;
}

/* Run a bridge script's command line: argv = {interpreter, script, verb, path, arg}; *json on exit 0. */
static int run_script(cJSON **json, const char *script, const char *verb, const char *path, const char *arg)
{
	char *argv[6], *out = NULL, *err = NULL, line[1024];
	int status = 0, rc;

	argv[0] = (char *)pyimpl_interpreter();
	argv[1] = (char *)script;
	argv[2] = (char *)verb;
	argv[3] = (char *)path;
	argv[4] = (char *)arg;
	argv[5] = NULL;
	if ((rc = run_capture(argv, &out, &err, &status)))
		goto done;
	last_line(line, sizeof(line), err);
	if (status == 127) {
		rc = vs_error(VS_ENOTFOUND,
			      "python module '%s': cannot run the interpreter '%s' (%s; set "
			      "VS_PYTHON to the python3 that has the module's packages)",
			      path, argv[0], line);
		goto done;
	}
	if (status != 0) {
		/* an import the interpreter cannot satisfy: say which interpreter was chosen, and how */
		const char *chosen = getenv("VS_PYTHON");

		if (strstr(line, "not found by the interpreter"))
			snprintf(line + strlen(line), sizeof(line) - strlen(line),
				 "; VS_PYTHON chooses the interpreter (%s%s%s): set it to one that has it",
				 chosen && *chosen ? "now '" : "unset: python3 on PATH",
				 chosen && *chosen ? chosen : "", chosen && *chosen ? "'" : "");
		rc = vs_error(VS_ESCHEMA, "%s", *line ? line : "python module: the shim failed without a message");
		set_last_error("%s", line);
		goto done;
	}
	*json = cJSON_Parse(out);
	if (!*json || !cJSON_IsObject(*json)) {
		cJSON_Delete(*json);
		*json = NULL;
		rc = vs_error(VS_EPARSE, "python module '%s': '%s %s %s' printed no JSON object", path, argv[0],
			      argv[1], verb);
	}
done:
	free(out);
	free(err);
	return rc;
}

static int run_shim(cJSON **json, const char *verb, const char *path, const char *arg)
{
	return run_script(json, shim_path(), verb, path, arg);
}

/*
 * The fields every description carries (kernels/python/mla_decode.py and e2e_step.py "describe"):
 * paths, name, backend, summary, interpreter, versions, sha256 and the has_supports flag, into a
 * zeroed p; `what` names the module in the error ("python module", "e2e step module").
 */
static int describe_common(struct pyimpl *p, const cJSON *j, const char *path, const char *arch, const char *what)
{
	const cJSON *interp = cJSON_GetObjectItemCaseSensitive(j, "interpreter");
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(j, "sha256");
	const cJSON *helpers = cJSON_GetObjectItemCaseSensitive(j, "helpers"), *h;

	p->slot = -1;
	p->path = strdup(path);
	p->real_path = json_strdup(j, "path");
	p->name = json_strdup(j, "name");
	p->py_backend = json_strdup(j, "backend");
	p->summary = json_strdup(j, "summary");
	p->arch = strdup(arch);
	p->interpreter = strdup(pyimpl_interpreter());
	p->executable = json_strdup(interp, "executable");
	p->libpython = json_strdup(interp, "libpython");
	p->versions_json = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(j, "versions"));
	p->describe_json = cJSON_PrintUnformatted(j);
	cJSON_ArrayForEach(h, helpers)
	{
		if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(h, "path")) ||
		    !cJSON_IsString(cJSON_GetObjectItemCaseSensitive(h, "sha256")))
			return vs_error(VS_EPARSE, "%s '%s': the description's helpers are not [{path, sha256}]", what,
					path);
	}
	p->helpers_json = cJSON_IsArray(helpers) ? cJSON_PrintUnformatted(helpers) : NULL;
	if (!p->helpers_json || !p->path || !p->real_path || !p->name || !p->py_backend || !p->summary || !p->arch ||
	    !p->interpreter || !p->executable || !p->libpython || !p->versions_json || !p->describe_json ||
	    !cJSON_IsString(it) || strlen(it->valuestring) != FS_SHA256_HEX - 1)
		return vs_error(VS_EPARSE, "%s '%s': the description lacks a field", what, path);
	memcpy(p->sha256, it->valuestring, FS_SHA256_HEX);
	p->backend = strdup(strcmp(p->py_backend, "cpu") ? "hip" : "cpu");
	if (!p->backend)
		return vs_oom();
	p->has_supports = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "has_supports"));
	return 0;
}

int pyimpl_describe(struct pyimpl **out, const char *path, const char *arch)
{
	struct pyimpl *p = NULL;
	cJSON *j = NULL;
	const cJSON *it, *kv;
	int err = 0;

	if (!fs_exists(path))
		return vs_error(VS_ENOTFOUND, "python module '%s' does not exist", path);
	if ((err = run_shim(&j, "describe", path, arch)))
		goto done;
	p = calloc(1, sizeof(*p));
	if (!p) {
		err = vs_oom();
		goto done;
	}
	if ((err = describe_common(p, j, path, arch, "python module")))
		goto done;
	kv = cJSON_GetObjectItemCaseSensitive(j, "kv_dtypes");
	cJSON_ArrayForEach(it, kv) if (cJSON_IsString(it) && mla_kv_dtype_parse(it->valuestring)) p->kv_dtypes |=
		1 << mla_kv_dtype_parse(it->valuestring);
	cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(j, "forms"))
	{
		if (cJSON_IsString(it) && !strcmp(it->valuestring, "dense"))
			p->forms |= PYIMPL_FORM_DENSE;
		else if (cJSON_IsString(it) && !strcmp(it->valuestring, "sparse"))
			p->forms |= PYIMPL_FORM_SPARSE;
	}
	p->has_prepare = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "has_prepare"));
	p->has_workspace_size = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "has_workspace_size"));
	if ((err = configs_from_json(&p->configs, &p->nconfigs, cJSON_GetObjectItemCaseSensitive(j, "configs"), path)))
		goto done;
	*out = p;
	p = NULL;
done:
	pyimpl_free(p);
	cJSON_Delete(j);
	return err;
}

/* ---- the embedded calls ------------------------------------------------------------------------ */

/* The pending Python exception as one line into last_error (a bridge bug: the shim never raises). */
static void py_error_line(const char *what)
{
	PyObj *t = NULL, *v = NULL, *tb = NULL, *s;
	const char *txt = NULL;

	py.PyErr_Fetch(&t, &v, &tb);
	s = v ? py.PyObject_Str(v) : NULL;
	if (s)
		txt = py.PyUnicode_AsUTF8AndSize(s, NULL);
	set_last_error("python bridge: %s: %s", what, txt ? txt : "unknown error");
	py.PyErr_Clear();
	if (s)
		py.Py_DecRef(s);
	if (t)
		py.Py_DecRef(t);
	if (v)
		py.Py_DecRef(v);
	if (tb)
		py.Py_DecRef(tb);
}

/* A bridge module's last_error into ours; fallback when it has none (or bridge is NULL). */
static void bridge_error_line(PyObj *bridge, const char *fallback)
{
	PyObj *s = bridge ? py.PyObject_GetAttrString(bridge, "last_error") : NULL;
	const char *txt = s ? py.PyUnicode_AsUTF8AndSize(s, NULL) : NULL;

	set_last_error("%s", txt ? txt : fallback);
	if (!txt)
		py.PyErr_Clear();
	if (s)
		py.Py_DecRef(s);
}

/* The shim's last_error into ours. */
static void shim_error_line(void)
{
	bridge_error_line(shim, "python bridge: no error text");
}

/* The step bridge's last_error into ours. */
static void step_error_line(void)
{
	bridge_error_line(step_bridge, "e2e step bridge: no error text");
}

/* Call fn(args); the result (a new reference) or NULL with last_error set. Holds the GIL. */
static PyObj *py_call(PyObj *fn, PyObj *args, const char *what)
{
	PyObj *r;

	if (!args) {
		py_error_line(what);
		return NULL;
	}
	r = py.PyObject_CallObject(fn, args);
	py.Py_DecRef(args);
	if (!r)
		py_error_line(what);
	return r;
}

/*
 * The kernel tuple of an args, a new reference (NULL with a python error set). GIL held. Its layout
 * is the shim's (kernels/python/mla_decode.py, RAW_SPARSE): the ABI 2 fields, then the sparse
 * form's six pointers and six ints (ABI 3).
 */
static PyObj *raw_tuple(const struct mla_decode_args *a)
{
	return py.Py_BuildValue("(KKKKKKKKiiiiiiiddiKKKKKKKiiiiii)", (unsigned long long)(uintptr_t)a->q,
				(unsigned long long)(uintptr_t)a->kv_cache,
				(unsigned long long)(uintptr_t)a->block_table,
				(unsigned long long)(uintptr_t)a->seqlens, (unsigned long long)(uintptr_t)a->out,
				(unsigned long long)(uintptr_t)a->lse, (unsigned long long)(uintptr_t)a->workspace,
				(unsigned long long)a->workspace_bytes, (int)a->batch, (int)a->s_q, (int)a->h_q,
				(int)a->num_pages, (int)a->page_size, (int)a->max_pages, (int)a->kv_dtype,
				(double)a->softmax_scale, (double)a->kv_scale, (int)a->num_cus,
				(unsigned long long)(uintptr_t)a->stream, (unsigned long long)(uintptr_t)a->indices,
				(unsigned long long)(uintptr_t)a->topk_length,
				(unsigned long long)(uintptr_t)a->attn_sink,
				(unsigned long long)(uintptr_t)a->extra_kv_cache,
				(unsigned long long)(uintptr_t)a->extra_indices,
				(unsigned long long)(uintptr_t)a->extra_topk_length, (int)a->topk, (int)a->extra_topk,
				(int)a->extra_num_pages, (int)a->extra_page_size, (int)a->d_qk, (int)a->d_v);
}

/*
 * (module index, kernel tuple[, config tuple]), a new reference (NULL with a python error set).
 * "N" takes raw_tuple()'s reference; a NULL one fails the whole build with its error kept.
 */
static PyObj *raw_args(int idx, const struct mla_decode_args *a, const struct mla_decode_config *c, int with_cfg)
{
	return py.Py_BuildValue(with_cfg ? "(iN(siiiii))" : "(iN)", idx, raw_tuple(a), c ? c->name : "",
				c ? (int)c->block_n : 0, c ? (int)c->block_h : 0, c ? (int)c->num_splits : 0,
				c ? (int)c->num_warps : 0, c ? (int)c->num_stages : 0);
}

/* A call that answers an int (status or bytes); *ok 0 when the bridge itself failed. */
static long long call_int(PyObj *fn, PyObj *args, const char *what, int *ok)
{
	PyObj *r = py_call(fn, args, what);
	long long v;

	*ok = 0;
	if (!r)
		return MLA_EDEVICE;
	v = py.PyLong_AsLongLong(r);
	py.Py_DecRef(r);
	if (v == -1 && py.PyErr_Occurred()) {
		py_error_line(what);
		return MLA_EDEVICE;
	}
	*ok = 1;
	return v;
}

/* A slot that cannot run Python calls now: the status, with last_error set; MLA_OK if it can. */
static int slot_ready(struct slot *s)
{
	if (!started) {
		set_last_error("python implementation '%s' (%s) is not started in this process: "
			       "pyimpl_start() runs in the worker",
			       s->p->name, s->p->path);
		return MLA_ENODEVICE;
	}
	if (s->py_index < 0) {
		set_last_error("%s", s->load_error ? s->load_error : "python module not loaded");
		return MLA_EINVAL;
	}
	return MLA_OK;
}

static int slot_configs(int k, const char *arch, struct mla_decode_config *out, int cap)
{
	struct slot *s = &slots[k];
	struct mla_decode_config *c = s->p->configs;
	int n = s->p->nconfigs;

	if (strcmp(arch, s->p->arch)) {
		if (!s->alt_arch || strcmp(arch, s->alt_arch)) {
			struct pyimpl *d = NULL;
			int q = vs_error_set_quiet(1), err = pyimpl_describe(&d, s->p->path, arch);

			vs_error_set_quiet(q);
			if (err) {
				set_last_error("%s", vs_last_error());
				return MLA_EUNSUPPORTED;
			}
			free(s->alt_configs);
			free(s->alt_arch);
			s->alt_configs = d->configs;
			s->nalt = d->nconfigs;
			s->alt_arch = d->arch;
			d->configs = NULL;
			d->arch = NULL;
			pyimpl_free(d);
		}
		c = s->alt_configs;
		n = s->nalt;
	}
	if (n == 0)
		return MLA_EUNSUPPORTED;
	for (int i = 0; out && i < n && i < cap; i++)
		out[i] = c[i];
	return n;
}

static size_t slot_workspace_size(int k, const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	struct slot *s = &slots[k];
	long long v;
	int g, ok;

	if (!s->p->has_workspace_size || slot_ready(s) != MLA_OK)
		return 0; /* not started: prepare/launch answer the reason */
	g = py.PyGILState_Ensure();
	v = call_int(fn_workspace, raw_args(s->py_index, a, c, 1), "workspace_size", &ok);
	if (ok && v < 0)
		shim_error_line();
	py.PyGILState_Release(g);
	if (!ok || v < 0) {
		free(s->pending);
		s->pending = strdup(last_error);
		return 0;
	}
	return (size_t)v;
}

static int slot_run(int k, PyObj *fn, const char *what, const struct mla_decode_args *a,
		    const struct mla_decode_config *c)
{
	struct slot *s = &slots[k];
	long long v;
	int rc, g, ok;

	if ((rc = slot_ready(s)) != MLA_OK)
		return rc;
	if (s->pending) {
		set_last_error("%s", s->pending);
		free(s->pending);
		s->pending = NULL;
		return MLA_EDEVICE;
	}
	if (!a || !c)
		return MLA_EINVAL;
	g = py.PyGILState_Ensure();
	v = call_int(fn, raw_args(s->py_index, a, c, 1), what, &ok);
	if (ok && v != MLA_OK)
		shim_error_line();
	py.PyGILState_Release(g);
	return ok ? (int)v : MLA_EDEVICE;
}

static int slot_launch(int k, const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	return slot_run(k, fn_launch, "launch", a, c);
}

static int slot_prepare(int k, const struct mla_decode_args *a, const struct mla_decode_config *c)
{
	if (!slots[k].p->has_prepare && started && slots[k].py_index >= 0 && !slots[k].pending)
		return MLA_OK;
	return slot_run(k, fn_prepare, "prepare", a, c);
}

/* ---- the supports() co-process (parent): one interpreter per module, not one per question ---- */

static void coproc_stop(struct slot *s)
{
	if (s->co_pid > 0 && s->co_owner == getpid()) {
		close(s->co_fd);
		kill(s->co_pid, SIGKILL);
		while (waitpid(s->co_pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	s->co_pid = 0;
	s->co_broken = 1;
}

static int coproc_start(struct slot *s)
{
	char *argv[5] = {(char *)pyimpl_interpreter(), (char *)shim_path(), "serve", s->p->path, NULL};
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -1;
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return -1;
	}
	if (pid == 0) {
		dup2(sv[1], 0); /* dup2's copies do not keep SOCK_CLOEXEC */
		dup2(sv[1], 1);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(sv[1]);
	s->co_owner = getpid();
	s->co_pid = pid;
	s->co_fd = sv[0];
	return 0;
}

/* One question, one answer line (into ans, cap bytes); 0 on success. */
static int coproc_ask(struct slot *s, const char *question, char *ans, size_t cap)
{
	size_t len = strlen(question), off = 0, got = 0;
	char nl = '\n';

	if (s->co_pid && s->co_owner != getpid())
		s->co_pid = 0; /* the parent's, inherited over a fork: leave it to the parent */
	if (!s->co_pid && coproc_start(s))
		return -1;
	while (off < len) {
		ssize_t n = send(s->co_fd, question + off, len - off, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		off += (size_t)n;
	}
	if (send(s->co_fd, &nl, 1, MSG_NOSIGNAL) != 1)
		return -1;
	while (got < cap - 1) {
		ssize_t n = recv(s->co_fd, ans + got, 1, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		if (ans[got] == '\n') {
			ans[got] = 0;
			return 0;
		}
		got++;
	}
	return -1;
}

/* Ask a subprocess (parent) or the embedded shim (worker) whether the shape runs. */
static int supports_ask(struct slot *s, const struct mla_decode_args *a, char *why, size_t cap)
{
	cJSON *shape = NULL, *j = NULL;
	char *txt = NULL;
	int ok = 0, q;

	if (started && s->py_index >= 0) {
		int g = py.PyGILState_Ensure();
		PyObj *r = py_call(fn_supports, raw_args(s->py_index, a, NULL, 0), "supports");
		const char *t;

		if (!r) {
			copy_text(why, cap, last_error);
		} else if (r == py.none) {
			ok = 1;
		} else {
			t = py.PyUnicode_AsUTF8AndSize(r, NULL);
			snprintf(why, cap, "%s", t ? t : "unsupported");
			if (!t)
				py.PyErr_Clear();
		}
		if (r)
			py.Py_DecRef(r);
		py.PyGILState_Release(g);
		return ok;
	}
	shape = cJSON_CreateObject();
	if (!shape || !cJSON_AddNumberToObject(shape, "batch", a->batch) ||
	    !cJSON_AddNumberToObject(shape, "s_q", a->s_q) || !cJSON_AddNumberToObject(shape, "h_q", a->h_q) ||
	    !cJSON_AddNumberToObject(shape, "num_pages", a->num_pages) ||
	    !cJSON_AddNumberToObject(shape, "page_size", a->page_size) ||
	    !cJSON_AddNumberToObject(shape, "max_pages", a->max_pages) ||
	    !cJSON_AddStringToObject(shape, "kv_dtype", mla_kv_dtype_name(a->kv_dtype)) ||
	    !cJSON_AddNumberToObject(shape, "softmax_scale", a->softmax_scale) ||
	    !cJSON_AddNumberToObject(shape, "kv_scale", a->kv_scale) ||
	    !cJSON_AddNumberToObject(shape, "num_cus", a->num_cus) ||
	    !cJSON_AddNumberToObject(shape, "topk", a->topk) ||
	    !cJSON_AddNumberToObject(shape, "extra_topk", a->extra_topk) ||
	    !cJSON_AddNumberToObject(shape, "extra_num_pages", a->extra_num_pages) ||
	    !cJSON_AddNumberToObject(shape, "extra_page_size", a->extra_page_size) ||
	    !cJSON_AddNumberToObject(shape, "d_qk", a->d_qk) || !cJSON_AddNumberToObject(shape, "d_v", a->d_v) ||
	    !(txt = cJSON_PrintUnformatted(shape))) {
		snprintf(why, cap, "out of memory");
		goto done;
	}
	if (!s->co_broken) {
		char line[4096];

		if (!coproc_ask(s, txt, line, sizeof(line)) && (j = cJSON_Parse(line)) && cJSON_IsObject(j))
			goto answered;
		cJSON_Delete(j);
		j = NULL;
		coproc_stop(s); /* the one-shot run below says why, in one line */
	}
	q = vs_error_set_quiet(1);
	if (run_shim(&j, "supports", s->p->path, txt)) {
		snprintf(why, cap, "%s", vs_last_error());
		vs_error_set_quiet(q);
		goto done;
	}
	vs_error_set_quiet(q);
answered:
	ok = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "supported"));
	if (!ok) {
		const cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "why");

		snprintf(why, cap, "%s", cJSON_IsString(w) ? w->valuestring : "unsupported");
	}
done:
	cJSON_Delete(shape);
	cJSON_Delete(j);
	free(txt);
	return ok;
}

static int slot_supports(int k, const struct mla_decode_args *a, char *why, size_t cap)
{
	struct slot *s = &slots[k];
	struct supports_answer ans;
	char tmp[sizeof(ans.why)];

	if (!(s->p->forms & (a->topk > 0 ? PYIMPL_FORM_SPARSE : PYIMPL_FORM_DENSE))) {
		snprintf(why, cap, "%s form: the module's FORMS lacks it", a->topk > 0 ? "sparse" : "dense");
		return 0;
	}
	if (!(s->p->kv_dtypes & (1 << (a->kv_dtype & 15)))) {
		snprintf(why, cap, "kv dtype %s: the module's KV_DTYPES lacks it",
			 mla_kv_dtype_name(a->kv_dtype) ? mla_kv_dtype_name(a->kv_dtype) : "unknown");
		return 0;
	}
	if (!s->p->has_supports)
		return 1;
	memset(&ans, 0, sizeof(ans));
	ans.key[0] = a->batch;
	ans.key[1] = a->s_q;
	ans.key[2] = a->h_q;
	ans.key[3] = a->num_pages;
	ans.key[4] = a->page_size;
	ans.key[5] = a->max_pages;
	ans.key[6] = a->kv_dtype;
	ans.key[7] = a->num_cus;
	ans.key[8] = a->topk;
	ans.key[9] = a->extra_topk;
	ans.key[10] = a->extra_num_pages;
	ans.key[11] = a->extra_page_size;
	ans.key[12] = a->d_qk;
	ans.key[13] = a->d_v;
	ans.scales[0] = a->softmax_scale;
	ans.scales[1] = a->kv_scale;
	for (int i = 0; i < s->nanswers; i++)
		if (!memcmp(s->answers[i].key, ans.key, sizeof(ans.key)) &&
		    !memcmp(s->answers[i].scales, ans.scales, sizeof(ans.scales))) {
			if (!s->answers[i].ok)
				snprintf(why, cap, "%s", s->answers[i].why);
			return s->answers[i].ok;
		}
	tmp[0] = 0;
	ans.ok = supports_ask(s, a, tmp, sizeof(tmp));
	memcpy(ans.why, tmp, sizeof(tmp));
	if (s->nanswers < SUPPORTS_CACHE)
		s->answers[s->nanswers++] = ans;
	if (!ans.ok)
		snprintf(why, cap, "%s", ans.why);
	return ans.ok;
}

/* Fixed trampolines: the ABI's callbacks carry no context, so each slot has its own functions. */
#define PYIMPL_TRAMPOLINES(k)                                                                                          \
	static int tr_configs_##k(const char *arch, struct mla_decode_config *o, int cap)                              \
	{                                                                                                              \
		return slot_configs(k, arch, o, cap);                                                                  \
	}                                                                                                              \
	static size_t tr_workspace_##k(const struct mla_decode_args *a, const struct mla_decode_config *c)             \
	{                                                                                                              \
		return slot_workspace_size(k, a, c);                                                                   \
	}                                                                                                              \
	static int tr_launch_##k(const struct mla_decode_args *a, const struct mla_decode_config *c)                   \
	{                                                                                                              \
		return slot_launch(k, a, c);                                                                           \
	}                                                                                                              \
	static int tr_supports_##k(const struct mla_decode_args *a, char *why, size_t cap)                             \
	{                                                                                                              \
		return slot_supports(k, a, why, cap);                                                                  \
	}                                                                                                              \
	static int tr_prepare_##k(const struct mla_decode_args *a, const struct mla_decode_config *c)                  \
	{                                                                                                              \
		return slot_prepare(k, a, c);                                                                          \
	}
PYIMPL_TRAMPOLINES(0)
PYIMPL_TRAMPOLINES(1)
PYIMPL_TRAMPOLINES(2)
PYIMPL_TRAMPOLINES(3)
PYIMPL_TRAMPOLINES(4)
PYIMPL_TRAMPOLINES(5)
PYIMPL_TRAMPOLINES(6)
PYIMPL_TRAMPOLINES(7)

#define TR_ROW(k)                                                                                                      \
	{                                                                                                              \
		tr_configs_##k, tr_workspace_##k, tr_launch_##k, tr_supports_##k, tr_prepare_##k                       \
	}
static const struct {
	int (*configs)(const char *, struct mla_decode_config *, int);
	size_t (*workspace_size)(const struct mla_decode_args *, const struct mla_decode_config *);
	int (*launch)(const struct mla_decode_args *, const struct mla_decode_config *);
	int (*supports)(const struct mla_decode_args *, char *, size_t);
	int (*prepare)(const struct mla_decode_args *, const struct mla_decode_config *);
} trampolines[PYIMPL_MAX_MODULES] = {
	TR_ROW(0), TR_ROW(1), TR_ROW(2), TR_ROW(3), TR_ROW(4), TR_ROW(5), TR_ROW(6), TR_ROW(7),
};

/* ---- register ---------------------------------------------------------------------------------- */

int pyimpl_register(const struct pyimpl **out, const char *path, const char *arch)
{
	struct pyimpl *p = NULL;
	char *real = NULL, sha[FS_SHA256_HEX];
	int err = 0, k, rc;

	if (!fs_exists(path))
		return vs_error(VS_ENOTFOUND, "python module '%s' does not exist", path);
	real = realpath(path, NULL);
	if (!real)
		return vs_error(VS_EIO, "python module '%s': cannot resolve its path", path);
	if ((err = fs_sha256_file(sha, real)))
		goto done;
	for (k = 0; k < nslots; k++) {
		if (strcmp(slots[k].p->real_path, real))
			continue;
		if (strcmp(slots[k].p->sha256, sha))
			err = vs_error(VS_EVERIFY,
				       "python module '%s' changed on disk since this process "
				       "registered it",
				       path);
		else
			*out = slots[k].p;
		goto done;
	}
	if (nslots >= PYIMPL_MAX_MODULES) {
		err = vs_error(VS_EUNSUPPORTED,
			       "python module '%s': at most %d python modules can be "
			       "registered in one process",
			       path, PYIMPL_MAX_MODULES);
		goto done;
	}
	if ((err = pyimpl_describe(&p, path, arch)))
		goto done;
	if (strcmp(p->sha256, sha)) {
		err = vs_error(VS_EVERIFY, "python module '%s' changed on disk while it was described", path);
		goto done;
	}
	if (mla_decode_impl_find(p->name)) {
		err = vs_error(VS_EUSAGE, "python module '%s': implementation name '%s' is already taken (%s)", path,
			       p->name,
			       pyimpl_for_impl(p->name) ? "by another python module" : "by a built-in or a plugin");
		goto done;
	}
	k = nslots;
	p->slot = k;
	p->impl.abi_version = MLA_DECODE_ABI_VERSION;
	p->impl.name = p->name;
	p->impl.backend = p->backend;
	p->impl.summary = p->summary;
	p->impl.configs = trampolines[k].configs;
	p->impl.workspace_size = trampolines[k].workspace_size;
	p->impl.launch = trampolines[k].launch;
	p->impl.supports = trampolines[k].supports;
	p->impl.prepare = trampolines[k].prepare;
	memset(&slots[k], 0, sizeof(slots[k]));
	slots[k].p = p;
	slots[k].py_index = -1;
	rc = mla_decode_impl_register(&p->impl);
	if (rc != MLA_OK) {
		slots[k].p = NULL;
		err = vs_error(VS_EUNSUPPORTED, "python module '%s': the registry refused '%s' (%s)", path, p->name,
			       rc == MLA_EUNSUPPORTED ? "registry full" : "invalid descriptor");
		goto done;
	}
	nslots++;
	*out = p;
	p = NULL;
done:
	pyimpl_free(p);
	free(real);
	return err;
}

/* ---- start (the worker) ------------------------------------------------------------------------ */

/* A Python string literal of s (JSON's escapes are Python's), malloc'd. */
static char *py_literal(const char *s)
{
	cJSON *j = cJSON_CreateString(s);
	char *t = j ? cJSON_PrintUnformatted(j) : NULL;

	cJSON_Delete(j);
	return t;
}

/* The bootstrap: become the described interpreter, then import the shim from its file. */
static char *bootstrap_code(const struct pyimpl *p)
{
	cJSON *j = NULL;
	const cJSON *interp, *path;
	char *exe = NULL, *prefix = NULL, *paths = NULL, *shimlit = NULL, *code = NULL;

	j = cJSON_Parse(p->describe_json);
	interp = cJSON_GetObjectItemCaseSensitive(j, "interpreter");
	path = cJSON_GetObjectItemCaseSensitive(interp, "path");
	exe = py_literal(p->executable);
	prefix = py_literal(cJSON_IsString(cJSON_GetObjectItemCaseSensitive(interp, "prefix")) ?
				    cJSON_GetObjectItemCaseSensitive(interp, "prefix")->valuestring :
				    "");
	paths = cJSON_IsArray(path) ? cJSON_PrintUnformatted(path) : NULL;
	shimlit = py_literal(shim_path());
	if (exe && prefix && paths && shimlit)
		code = fs_printf("import sys\n"
				 "sys.dont_write_bytecode = True\n"
				 "sys.executable = %s\n"
				 "if %s:\n"
				 "    sys.prefix = sys.exec_prefix = %s\n"
				 "sys.path[:] = %s\n"
				 "import importlib.util\n"
				 "_s = importlib.util.spec_from_file_location('vs_mla_decode_bridge', %s)\n"
				 "_m = importlib.util.module_from_spec(_s)\n"
				 "sys.modules['vs_mla_decode_bridge'] = _m\n"
				 "_s.loader.exec_module(_m)\n"
				 "del _s, _m\n",
				 exe, prefix, prefix, paths, shimlit);
	cJSON_Delete(j);
	free(exe);
	free(prefix);
	free(paths);
	free(shimlit);
	return code;
}

/* In pyimpl_start(), GIL held: import the step bridge from its file and load the step module. */
static int step_start(void)
{
	char *lit = py_literal(step_bridge_path()), *code;
	int ok;
	long long rc;

	if (!lit)
		return vs_oom();
	code = fs_printf("import importlib.util, sys\n"
			 "_s = importlib.util.spec_from_file_location('vs_e2e_step_bridge', %s)\n"
			 "_m = importlib.util.module_from_spec(_s)\n"
			 "sys.modules['vs_e2e_step_bridge'] = _m\n"
			 "_s.loader.exec_module(_m)\n"
			 "del _s, _m\n",
			 lit);
	free(lit);
	if (!code)
		return vs_oom();
	ok = py.PyRun_SimpleStringFlags(code, NULL) == 0;
	free(code);
	if (!ok) {
		set_last_error("cannot import the e2e step bridge '%s' (its traceback is above)", step_bridge_path());
		step_load_error = strdup(last_error);
		return vs_error(VS_EIO, "%s", last_error);
	}
	step_bridge = py.PyImport_ImportModule("vs_e2e_step_bridge");
	if (step_bridge) {
		fn_step_elems = py.PyObject_GetAttrString(step_bridge, "bridge_step_elems");
		fn_step_call = py.PyObject_GetAttrString(step_bridge, "bridge_step_call");
		fn_step_reference = py.PyObject_GetAttrString(step_bridge, "bridge_step_reference");
		fn_step_memory = py.PyObject_GetAttrString(step_bridge, "bridge_step_memory");
	}
	if (!step_bridge || !fn_step_elems || !fn_step_call || !fn_step_reference || !fn_step_memory) {
		py_error_line("import");
		step_load_error = strdup(last_error);
		return vs_error(VS_EIO, "the e2e step bridge '%s' is incomplete: %s", step_bridge_path(), last_error);
	}
	{
		PyObj *fn = py.PyObject_GetAttrString(step_bridge, "bridge_step_load");

		rc = fn ? call_int(fn,
				   py.Py_BuildValue("(sss)", step_p->real_path, step_p->sha256, step_p->helpers_json),
				   "step load", &ok) :
			  MLA_EDEVICE;
		if (fn)
			py.Py_DecRef(fn);
		else
			py_error_line("step load");
	}
	if (!fn_step_call || rc != 0) {
		if (ok)
			step_error_line();
		step_load_error = strdup(last_error);
		return vs_error(VS_ESCHEMA, "%s", last_error);
	}
	return 0;
}

int pyimpl_start(void)
{
	const struct pyimpl *first;
	char *code = NULL;
	void *lib;
	int err = 0;

	if (started || (nslots == 0 && !step_p))
		return 0;
	first = nslots ? slots[0].p : step_p;
	if (step_p && (strcmp(step_p->libpython, first->libpython) || strcmp(step_p->executable, first->executable)))
		return vs_error(VS_EUNSUPPORTED,
				"the e2e step module '%s' and the python module '%s' were described by different "
				"interpreters (%s, %s): one process embeds one",
				step_p->path, first->path, step_p->executable, first->executable);
	for (int k = 1; k < nslots; k++)
		if (strcmp(slots[k].p->libpython, first->libpython) ||
		    strcmp(slots[k].p->executable, first->executable))
			return vs_error(VS_EUNSUPPORTED,
					"python modules '%s' and '%s' were described by different "
					"interpreters (%s, %s): one process embeds one",
					first->path, slots[k].p->path, first->executable, slots[k].p->executable);
	if (!*first->libpython)
		return vs_error(VS_EIO,
				"the interpreter '%s' has no shared libpython (a python built without "
				"--enable-shared cannot be embedded): set VS_PYTHON to another",
				first->executable);
	dlerror();
	lib = dlopen(first->libpython, RTLD_NOW | RTLD_GLOBAL);
	if (!lib) {
		const char *why = dlerror();

		return vs_error(VS_EIO, "cannot load libpython '%s' of '%s': %s", first->libpython, first->executable,
				why ? why : "dlopen failed");
	}
	for (size_t i = 0; i < sizeof(py_syms) / sizeof(py_syms[0]); i++) {
		void *f = dlsym(lib, py_syms[i].name);

		if (!f)
			return vs_error(VS_EIO, "libpython '%s' lacks %s (the bridge needs CPython >= 3.10)",
					first->libpython, py_syms[i].name);
		memcpy((char *)&py + py_syms[i].off, &f, sizeof(f));
	}
	py.none = dlsym(lib, "_Py_NoneStruct");
	if (!py.none)
		return vs_error(VS_EIO, "libpython '%s' lacks _Py_NoneStruct", first->libpython);
	if (!py.Py_IsInitialized())
		py.Py_InitializeEx(0); /* 0: no signal handlers, SIGINT stays the harness's */
	code = bootstrap_code(first);
	if (!code)
		return vs_oom();
	if (py.PyRun_SimpleStringFlags(code, NULL)) {
		free(code);
		return vs_error(VS_EIO, "cannot import the python bridge '%s' with '%s' (its traceback is above)",
				shim_path(), first->executable);
	}
	free(code);
	shim = py.PyImport_ImportModule("vs_mla_decode_bridge");
	if (shim) {
		fn_load = py.PyObject_GetAttrString(shim, "bridge_load");
		fn_launch = py.PyObject_GetAttrString(shim, "bridge_launch");
		fn_prepare = py.PyObject_GetAttrString(shim, "bridge_prepare");
		fn_workspace = py.PyObject_GetAttrString(shim, "bridge_workspace_size");
		fn_supports = py.PyObject_GetAttrString(shim, "bridge_supports");
		fn_versions = py.PyObject_GetAttrString(shim, "bridge_versions");
		fn_helpers_late = py.PyObject_GetAttrString(shim, "bridge_helpers_late");
		fn_phase_at = py.PyObject_GetAttrString(shim, "bridge_phase_at");
		fn_autotune = py.PyObject_GetAttrString(shim, "bridge_autotune_report");
	}
	if (!shim || !fn_load || !fn_launch || !fn_prepare || !fn_workspace || !fn_supports || !fn_versions ||
	    !fn_helpers_late || !fn_phase_at || !fn_autotune) {
		py_error_line("import");
		return vs_error(VS_EIO, "the python bridge '%s' is incomplete: %s", shim_path(), last_error);
	}
	started = 1;
	{
		int ok;

		call_int(fn_phase_at, py.Py_BuildValue("(K)", (unsigned long long)(uintptr_t)phase_cell), "phase", &ok);
		if (!ok)
			return vs_error(VS_EIO, "the python bridge '%s': %s", shim_path(), last_error);
	}
	for (int k = 0; k < nslots; k++) {
		int ok;
		long long idx = call_int(fn_load,
					 py.Py_BuildValue("(sss)", slots[k].p->real_path, slots[k].p->sha256,
							  slots[k].p->helpers_json),
					 "load", &ok);

		if (ok && idx >= 0) {
			slots[k].py_index = (int)idx;
			continue;
		}
		if (ok)
			shim_error_line();
		slots[k].load_error = strdup(last_error);
		if (!err)
			err = vs_error(VS_ESCHEMA, "%s", last_error);
	}
	/* A step module that fails to load fails the e2e stage (its line), not the isolated A/B. */
	if (step_p && step_start())
		vs_warn("%s", last_error);
	/* Release the GIL: every call takes it with PyGILState_Ensure, from whichever thread. */
	py.PyEval_SaveThread();
	return err;
}

/*
 * Call the bridge function fn (no arguments, answers a str) under the GIL; *out is a copy of the
 * str, NULL when the call failed or answered something else (the line in last_error). Returns 0
 * or -1.
 */
static int bridge_str(PyObj *fn, const char *what, char **out)
{
	int g = py.PyGILState_Ensure();
	PyObj *r = py_call(fn, py.Py_BuildValue("()"), what);
	const char *t = r ? py.PyUnicode_AsUTF8AndSize(r, NULL) : NULL;

	if (r && !t) {
		py.PyErr_Clear();
		set_last_error("python bridge: %s: the bridge answered no str", what);
	}
	*out = t ? strdup(t) : NULL;
	if (r)
		py.Py_DecRef(r);
	py.PyGILState_Release(g);
	return t ? 0 : -1;
}

char *pyimpl_versions_now(void)
{
	char *s = NULL;

	if (started)
		bridge_str(fn_versions, "versions", &s);
	return s;
}

char *pyimpl_helpers_late(void)
{
	char *s = NULL;

	if (!started)
		return NULL;
	if (bridge_str(fn_helpers_late, "helpers", &s))
		return strdup(last_error); /* the bridge failed: its line, never a silent pass */
	if (s && !*s) {
		free(s);
		s = NULL;
	}
	return s;
}

/* ---- the e2e step module (kernels/python/e2e_step.py) ------------------------------------------- */

int pyimpl_step_register(const struct pyimpl **out, const char *path)
{
	struct pyimpl *p = NULL;
	cJSON *j = NULL;
	char *real = NULL;
	int err = 0;

	if (!fs_exists(path))
		return vs_error(VS_ENOTFOUND, "e2e step module '%s' does not exist", path);
	if (step_p) {
		char hex[FS_SHA256_HEX];

		real = realpath(path, NULL);
		if (!real || strcmp(real, step_p->real_path))
			err = vs_error(VS_EUSAGE, "e2e step module '%s': one process runs one step module ('%s')", path,
				       step_p->path);
		else if (!(err = fs_sha256_file(hex, path)) && strcmp(hex, step_p->sha256))
			err = vs_error(VS_EVERIFY, "e2e step module '%s' changed since it was described", path);
		free(real);
		if (!err)
			*out = step_p;
		return err;
	}
	if ((err = run_script(&j, step_bridge_path(), "describe", path, NULL)))
		goto done;
	p = calloc(1, sizeof(*p));
	if (!p) {
		err = vs_oom();
		goto done;
	}
	if ((err = describe_common(p, j, path, "e2e", "e2e step module")))
		goto done;
	p->has_prepare = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "has_reference"));
	step_p = p;
	*out = p;
	p = NULL;
done:
	pyimpl_free(p);
	cJSON_Delete(j);
	return err;
}

const struct pyimpl *pyimpl_step(void)
{
	return step_p;
}

/* The step bridge ready in this process: MLA_OK, or a status with last_error set. */
static int step_ready(void)
{
	if (!step_p) {
		set_last_error("no e2e step module is registered in this process");
		return MLA_EINVAL;
	}
	if (!started) {
		set_last_error("e2e step module '%s' is not started in this process: pyimpl_start() runs in the worker",
			       step_p->path);
		return MLA_ENODEVICE;
	}
	if (step_load_error || !fn_step_call) {
		set_last_error("%s", step_load_error ? step_load_error : "e2e step module not loaded");
		return MLA_EINVAL;
	}
	return MLA_OK;
}

/*
 * Call a step bridge function with (prefix..., raw, (step_out, elems, seed)[, host]); *v its int
 * answer. fn_name: the step function for bridge_step_call, else NULL. GIL taken here. Returns
 * MLA_OK, the bridge's negative status (last_error set), or MLA_EDEVICE when the call failed.
 */
static int step_int(long long *v, PyObj *fn, const char *what, const char *fn_name, const struct mla_decode_args *a,
		    const void *step_out, size_t elems, uint64_t seed, const void *host, int reset)
{
	PyObj *raw = NULL, *sr = NULL, *args = NULL;
	int ok = 0, g = py.PyGILState_Ensure();

	*v = MLA_EDEVICE;
	if (!a) {
		args = py.Py_BuildValue("(i)", reset);
	} else if ((raw = raw_tuple(a))) {
		if (!step_out)
			args = py.Py_BuildValue("(O)", raw);
		else if ((sr = py.Py_BuildValue("(KKK)", (unsigned long long)(uintptr_t)step_out,
						(unsigned long long)elems, (unsigned long long)seed)))
			args = fn_name ? py.Py_BuildValue("(sOO)", fn_name, raw, sr) :
					 py.Py_BuildValue("(OOK)", raw, sr, (unsigned long long)(uintptr_t)host);
	}
	if (raw)
		py.Py_DecRef(raw);
	if (sr)
		py.Py_DecRef(sr);
	*v = call_int(fn, args, what, &ok);
	if (ok && *v < 0)
		step_error_line();
	py.PyGILState_Release(g);
	if (!ok)
		return MLA_EDEVICE;
	return *v < 0 ? (int)*v : MLA_OK;
}

int pyimpl_step_elems(size_t *elems, const struct mla_decode_args *a)
{
	long long v = 0;
	int rc;

	if ((rc = step_ready()) != MLA_OK)
		return rc;
	rc = step_int(&v, fn_step_elems, "step elems", NULL, a, NULL, 0, 0, NULL, 0);
	if (rc == MLA_OK)
		*elems = (size_t)v;
	return rc;
}

int pyimpl_step_call(long long *ret, const char *fn, const struct mla_decode_args *a, void *step_out, size_t elems,
		     uint64_t seed)
{
	long long v = 0;
	int rc;

	if ((rc = step_ready()) != MLA_OK)
		return rc;
	rc = step_int(&v, fn_step_call, fn, fn, a, step_out, elems, seed, NULL, 0);
	if (ret)
		*ret = v;
	return rc;
}

int pyimpl_step_reference(float *host, const struct mla_decode_args *a, const void *step_out, size_t elems,
			  uint64_t seed)
{
	long long v = 0;
	int rc;

	if ((rc = step_ready()) != MLA_OK)
		return rc;
	rc = step_int(&v, fn_step_reference, "reference", NULL, a, step_out, elems, seed, host, 0);
	return rc == MLA_OK ? (int)v : rc;
}

long long pyimpl_step_memory(int reset)
{
	long long v = -1;

	if (step_ready() != MLA_OK)
		return -1;
	if (step_int(&v, fn_step_memory, "memory", NULL, NULL, NULL, 0, 0, NULL, reset) != MLA_OK)
		return -1;
	return v;
}

/* ---- autotuned kernels (docs/DESIGN.md "Autotuned kernels") ------------------------------------- */

void pyimpl_phase(int phase, int timed)
{
	if (phase >= 0)
		phase_cell[0] = phase;
	if (timed >= 0)
		phase_cell[1] = timed;
}

char *pyimpl_autotune_now(void)
{
	char *s = NULL;

	if (!started || bridge_str(fn_autotune, "autotune", &s))
		return NULL;
	if (s && !*s) {
		free(s);
		s = NULL;
	}
	return s;
}

static const char *str_or(const cJSON *o, const char *key, const char *dflt)
{
	const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(o, key));

	return s ? s : dflt;
}

static int num_of(const cJSON *o, const char *key)
{
	return json_int(o, key);
}

void pyimpl_autotune_log(FILE *f, const char *json)
{
	cJSON *j = json ? cJSON_Parse(json) : NULL;
	const cJSON *e, *x;

	cJSON_ArrayForEach(e, j)
	{
		const char *k = str_or(e, "kernel", "?"), *impl = str_or(e, "impl", "?");
		int first = 1;

		fprintf(f, "    autotune %s (%s): %d launch%s, benchmarked %d config%s in %d tuning%s", k, impl,
			num_of(e, "runs"), num_of(e, "runs") == 1 ? "" : "es", num_of(e, "benchmarks"),
			num_of(e, "benchmarks") == 1 ? "" : "s", num_of(e, "tunings"),
			num_of(e, "tunings") == 1 ? "" : "s");
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(e, "by_phase"))
		{
			fprintf(f, "%s%s %d", first ? " (" : ", ", x->string, (int)x->valuedouble);
			first = 0;
		}
		fprintf(f, "%s", first ? "" : ")");
		first = 1;
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(e, "chosen"))
		{
			fprintf(f, "%s%s", first ? "; chose " : " | ", cJSON_GetStringValue(x) ? x->valuestring : "?");
			first = 0;
		}
		fprintf(f, "\n");
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(e, "dropped"))
			fprintf(f, "    autotune %s (%s): dropped %s: %s\n", k, impl, str_or(x, "config", "?"),
				str_or(x, "why", "?"));
		if (num_of(e, "in_capture"))
			fprintf(f, "    autotune %s (%s) benchmarked %d config%s inside a graph capture\n", k, impl,
				num_of(e, "in_capture"), num_of(e, "in_capture") == 1 ? "" : "s");
		if (num_of(e, "timed"))
			fprintf(f,
				"    autotune %s (%s) benchmarked %d config%s inside timed launches: those samples "
				"include benchmarking\n",
				k, impl, num_of(e, "timed"), num_of(e, "timed") == 1 ? "" : "s");
	}
	cJSON_Delete(j);
}

int pyimpl_autotune_timed(const char *json, char *who, size_t cap)
{
	cJSON *j = json ? cJSON_Parse(json) : NULL;
	const cJSON *e;
	int n = 0;

	if (cap)
		*who = 0;
	cJSON_ArrayForEach(e, j)
	{
		if (num_of(e, "timed") && !n && cap)
			snprintf(who, cap, "%s (%s)", str_or(e, "kernel", "?"), str_or(e, "impl", "?"));
		n += num_of(e, "timed");
	}
	cJSON_Delete(j);
	return n;
}

/* The interpreter that runs the ahead-of-time compile: the describing one when it has Triton. */
static char *fit_python(const cJSON *pj)
{
	const char *venv = getenv("VS_TRITON_PYTHON");

	if (cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(pj, "versions"), "triton") &&
	    str_or(pj, "interpreter", NULL))
		return strdup(str_or(pj, "interpreter", NULL));
	return venv && *venv ? strdup(venv) : fs_printf("%s/.venv-triton/bin/python", vs_repo_root());
}

/* Set "ahead" of every autotune entry of list that has none yet to {"gen", "checked": false, "why"}. */
static int fit_unchecked(cJSON *list, const char *gen, const char *why)
{
	cJSON *e;

	cJSON_ArrayForEach(e, list)
	{
		cJSON *a;

		if (cJSON_GetObjectItemCaseSensitive(e, "ahead"))
			continue;
		a = cJSON_CreateObject();
		if (!a || !cJSON_AddItemToObject(e, "ahead", a) || !cJSON_AddStringToObject(a, "gen", gen) ||
		    !cJSON_AddBoolToObject(a, "checked", 0) || !cJSON_AddStringToObject(a, "why", why))
			return vs_oom();
	}
	return 0;
}

/* Merge the fit tool's answer (its "kernels", in the order of list) into list. */
static int fit_merge(cJSON *list, const cJSON *ans, const char *gen)
{
	const cJSON *ks = cJSON_GetObjectItemCaseSensitive(ans, "kernels");
	const char *tv = str_or(ans, "triton", "?");
	cJSON *e;
	int i = 0;

	cJSON_ArrayForEach(e, list)
	{
		const cJSON *k = cJSON_GetArrayItem(ks, i++), *kc;
		cJSON *a, *c;
		int ci = 0;

		if (!k || strcmp(str_or(k, "kernel", ""), str_or(e, "kernel", "?")))
			continue; /* fit_unchecked() says why */
		a = cJSON_CreateObject();
		if (!a || !cJSON_AddItemToObject(e, "ahead", a) || !cJSON_AddStringToObject(a, "gen", gen) ||
		    !cJSON_AddStringToObject(a, "triton", tv) ||
		    !cJSON_AddBoolToObject(a, "checked", cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(k, "checked"))))
			return vs_oom();
		if (str_or(k, "why", NULL) && !cJSON_AddStringToObject(a, "why", str_or(k, "why", "")))
			return vs_oom();
		cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(e, "configs"))
		{
			const cJSON *v;
			cJSON *ca;
			double shared = -1;

			kc = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(k, "configs"), ci++);
			if (!kc || strcmp(str_or(kc, "label", ""), str_or(c, "label", "?")))
				continue;
			cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(kc, "variants"))
			{
				double sv = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(v, "shared"));

				if (sv == sv && sv > shared) /* not NaN: a variant that compiled */
					shared = sv;
			}
			ca = cJSON_CreateObject();
			if (!ca || !cJSON_AddItemToObject(c, "ahead", ca) ||
			    !cJSON_AddBoolToObject(ca, "fits",
						   cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(kc, "fits"))) ||
			    (shared >= 0 && !cJSON_AddNumberToObject(ca, "shared", shared)) ||
			    (str_or(kc, "why", NULL) && !cJSON_AddStringToObject(ca, "why", str_or(kc, "why", ""))))
				return vs_oom();
		}
	}
	return 0;
}

int pyimpl_autotune_fit(char **python_json, const char *module, const char *gen)
{
	cJSON *pj = *python_json ? cJSON_Parse(*python_json) : NULL, *list, *ans = NULL;
	char *pyexe = NULL, *tool = NULL, *out = NULL, *err = NULL, *why = NULL, line[512], *text;
	char *argv[5];
	int rc = 0, status = 0;

	list = cJSON_GetObjectItemCaseSensitive(pj, "autotune");
	if (!cJSON_GetArraySize(list)) {
		cJSON_Delete(pj);
		return 0;
	}
	pyexe = fit_python(pj);
	tool = fs_printf("%s/tools/gpu/triton_autotune_fit.py", vs_repo_root());
	if (!pyexe || !tool) {
		rc = vs_oom();
		goto done;
	}
	argv[0] = pyexe;
	argv[1] = tool;
	argv[2] = (char *)module;
	argv[3] = (char *)gen;
	argv[4] = NULL;
	if (strchr(pyexe, '/') && !fs_exists(pyexe))
		why = fs_printf("not checked ahead: no Triton here (the module's interpreter has none, nor %s: "
				"$VS_TRITON_PYTHON or tools/install-deps)",
				pyexe);
	else if ((rc = run_capture(argv, &out, &err, &status)))
		goto done;
	else if (status != 0 || !(ans = cJSON_Parse(out))) {
		last_line(line, sizeof(line), err ? err : "");
		why = fs_printf("not checked ahead: %s %s failed (exit %d): %s", pyexe, tool, status, line);
	} else if ((rc = fit_merge(list, ans, gen)))
		goto done;
	if ((rc = fit_unchecked(list, gen, why ? why : "not checked ahead: the compile tool did not list this kernel")))
		goto done;
	text = cJSON_PrintUnformatted(pj);
	if (!text) {
		rc = vs_oom();
		goto done;
	}
	free(*python_json);
	*python_json = text;
done:
	cJSON_Delete(ans);
	cJSON_Delete(pj);
	free(pyexe);
	free(tool);
	free(out);
	free(err);
	free(why);
	return rc;
}

void pyimpl_autotune_summary(FILE *f, const char *role, const char *python_json)
{
	cJSON *pj = python_json ? cJSON_Parse(python_json) : NULL;
	const cJSON *e, *x;

	cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(pj, "autotune"))
	{
		const cJSON *prune = cJSON_GetObjectItemCaseSensitive(e, "prune"), *ahead;
		int first = 1;

		fprintf(f, "  %-10s autotune %s: %d config%s, key (", role, str_or(e, "kernel", "?"),
			cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e, "configs")),
			cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e, "configs")) == 1 ? "" : "s");
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(e, "key"))
		{
			fprintf(f, "%s%s", first ? "" : ", ", cJSON_GetStringValue(x) ? x->valuestring : "?");
			first = 0;
		}
		fprintf(f, ")");
		if (str_or(prune, "early_config_prune", NULL))
			fprintf(f, "; pruned by early_config_prune %s", str_or(prune, "early_config_prune", ""));
		if (str_or(prune, "perf_model", NULL))
			fprintf(f, "; pruned by perf_model %s (top_k %g)", str_or(prune, "perf_model", ""),
				cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(prune, "top_k")));
		first = 1;
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(e, "reset_to_zero"))
		{
			fprintf(f, "%s%s", first ? "; reset_to_zero " : ", ",
				cJSON_GetStringValue(x) ? x->valuestring : "?");
			first = 0;
		}
		first = 1;
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(e, "restore_value"))
		{
			fprintf(f, "%s%s", first ? "; restore_value " : ", ",
				cJSON_GetStringValue(x) ? x->valuestring : "?");
			first = 0;
		}
		fprintf(f, "\n");
		ahead = cJSON_GetObjectItemCaseSensitive(e, "ahead");
		if (ahead && !cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ahead, "checked"))) {
			fprintf(f, "  %-10s   %s\n", "", str_or(ahead, "why", "not checked ahead"));
			continue;
		}
		cJSON_ArrayForEach(x, cJSON_GetObjectItemCaseSensitive(e, "configs"))
		{
			const cJSON *ca = cJSON_GetObjectItemCaseSensitive(x, "ahead");
			double sh = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(ca, "shared"));

			if (!ca)
				fprintf(f, "  %-10s   %s\n", "", str_or(x, "label", "?"));
			else if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(ca, "fits")))
				fprintf(f, "  %-10s   %s: fits %s (%.0f bytes of shared memory)\n", "",
					str_or(x, "label", "?"), str_or(ahead, "gen", "?"), sh);
			else
				fprintf(f, "  %-10s   %s: %s\n", "", str_or(x, "label", "?"),
					str_or(ca, "why", "the autotuner would prune it at launch"));
		}
	}
	cJSON_Delete(pj);
}

int pyimpl_autotune_check(const char *python_json, const struct pyimpl *py, const char *who)
{
	cJSON *pj = python_json ? cJSON_Parse(python_json) : NULL, *now = cJSON_Parse(py->describe_json);
	const cJSON *planned = cJSON_GetObjectItemCaseSensitive(pj, "autotune");
	const cJSON *got = cJSON_GetObjectItemCaseSensitive(now, "autotune"), *e;
	int err = 0, i = 0;

	if (!planned)
		goto done;
	if (cJSON_GetArraySize(planned) != cJSON_GetArraySize(got)) {
		err = vs_error(VS_EVERIFY,
			       "%s: the plan lists %d autotuned kernel%s, the module has %d now: emit the plan again",
			       who, cJSON_GetArraySize(planned), cJSON_GetArraySize(planned) == 1 ? "" : "s",
			       cJSON_GetArraySize(got));
		goto done;
	}
	cJSON_ArrayForEach(e, planned)
	{
		const cJSON *g = cJSON_GetArrayItem(got, i++), *c;
		int ci = 0;

		if (strcmp(str_or(e, "kernel", ""), str_or(g, "kernel", "?")) ||
		    cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e, "configs")) !=
			    cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(g, "configs"))) {
			err = vs_error(VS_EVERIFY,
				       "%s: autotune %s: the plan lists %d configs, the module's %s has %d now: emit "
				       "the plan again",
				       who, str_or(e, "kernel", "?"),
				       cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(e, "configs")),
				       str_or(g, "kernel", "?"),
				       cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(g, "configs")));
			goto done;
		}
		cJSON_ArrayForEach(c, cJSON_GetObjectItemCaseSensitive(e, "configs"))
		{
			const cJSON *gc = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(g, "configs"), ci++);

			if (strcmp(str_or(c, "label", ""), str_or(gc, "label", "?"))) {
				err = vs_error(VS_EVERIFY,
					       "%s: autotune %s: config '%s' of the plan is '%s' now: emit the "
					       "plan again",
					       who, str_or(e, "kernel", "?"), str_or(c, "label", ""),
					       str_or(gc, "label", "?"));
				goto done;
			}
		}
	}
done:
	cJSON_Delete(pj);
	cJSON_Delete(now);
	return err;
}
