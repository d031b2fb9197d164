/*
 * check_pyimpl.c - Python implementations (harness/pyimpl.c, kernels/python/mla_decode.py): the
 * parent describes and registers modules through a subprocess of the interpreter (never embedding
 * it); bad declarations, duplicate configs and a missing package each give one clear line; in a
 * forked worker the embedded interpreter runs numpy.mla_decode on bf16 and fp8 tasks within the
 * parity tolerances of the oracle, deterministically, with SIGINT left to the harness, and the
 * sparse form (every cache format, extra cache, topk_length, attn_sink, lonely rows) as cpu.naive;
 * a module whose FORMS lacks "sparse" is refused the sparse form; an
 * exception in launch is one line naming the kernel file's innermost frame and the next
 * implementation still runs; a wrong module fails parity with its worst element; writes into q are
 * refused (read-only views) or visible to the input hash; a module edited after registration is
 * refused in the worker; a 9th module is refused.
 * The interpreter is $VS_PYTHON, set here to Debian's /usr/bin/python3 (with python3-numpy).
 */
#include "testutil.h"

#include "fsutil.h"
#include "mla_decode.h"
#include "mla_decode_ref.h"
#include "parity.h"
#include "pyimpl.h"
#include "vs_error.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* The plan defaults (check_cpu_kernels.c explains them). */
static const struct task_tol tol_out = { 8e-4, 2.01 / 128.0, 5e-6 };
static const struct task_tol tol_lse = { 1e-5, 8.01 / 65536.0, -1.0 };

static char *tmp;

static void setup(void)
{
	setenv("VS_PYTHON", "/usr/bin/python3", 1);
	tmp = tu_tmpdir();
	vs_error_set_quiet(1);
}

static void teardown(void)
{
	fs_remove_tree(tmp);
	free(tmp);
}

static char *res(const char *name)
{
	return fs_printf("%s/tests/resources/python/%s", getenv("VS_SOURCE_DIR"), name);
}

/* ---- a small task --------------------------------------------------------------------------- */

struct problem {
	struct mla_decode_args a;
	uint16_t *q, *out;
	void *kv;
	int32_t *bt, *sl;
	float *lse, *ref_out, *ref_lse;
	size_t out_n, lse_n;
	int out_dims[4], lse_dims[3];
};

static uint64_t rng_next(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static float rng_uniform(uint64_t *s)
{
	return (float)((rng_next(s) >> 11) * (1.0 / 9007199254740992.0)) * 2.0f - 1.0f;
}

static uint16_t bf16_of(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/*
 * batch sequences with the given lengths, page_size ps, pages shuffled; rows past each length hold
 * NaN, unused block_table entries a sentinel far outside the cache.
 */
static void problem_init(struct problem *p, int32_t kv_dtype, int s_q, int h_q, int ps, const int *lens,
			 int batch, uint64_t seed)
{
	int max_pages = 0, num_pages = 0, next = 0;
	size_t es = mla_kv_elem_size(kv_dtype), rows;

	memset(p, 0, sizeof(*p));
	for (int b = 0; b < batch; b++) {
		int np = (lens[b] + ps - 1) / ps;

		max_pages = np > max_pages ? np : max_pages;
		num_pages += np;
	}
	max_pages = max_pages ? max_pages : 1;
	num_pages += 2; /* two pages no sequence uses */
	p->q = malloc((size_t)batch * s_q * h_q * MLA_D_QK * 2);
	rows = (size_t)num_pages * ps;
	p->kv = malloc(rows * MLA_D_QK * es);
	p->bt = malloc((size_t)batch * max_pages * sizeof(int32_t));
	p->sl = malloc((size_t)batch * sizeof(int32_t));
	p->out_n = (size_t)batch * s_q * h_q * MLA_D_V;
	p->lse_n = (size_t)batch * h_q * s_q;
	p->out = malloc(p->out_n * 2);
	p->lse = malloc(p->lse_n * sizeof(float));
	p->ref_out = malloc(p->out_n * sizeof(float));
	p->ref_lse = malloc(p->lse_n * sizeof(float));
	ck_assert(p->q && p->kv && p->bt && p->sl && p->out && p->lse && p->ref_out && p->ref_lse);
	for (size_t i = 0; i < (size_t)batch * s_q * h_q * MLA_D_QK; i++)
		p->q[i] = bf16_of(rng_uniform(&seed));
	for (size_t i = 0; i < rows * MLA_D_QK; i++) {
		if (es == 2) {
			((uint16_t *)p->kv)[i] = 0x7fc0; /* NaN until a visible row overwrites it */
		} else {
			((uint8_t *)p->kv)[i] = 0x80;
		}
	}
	for (int b = 0; b < batch; b++) {
		p->sl[b] = lens[b];
		for (int j = 0; j < max_pages; j++)
			p->bt[(size_t)b * max_pages + j] = j * ps < lens[b] ? num_pages - 1 - next++ : 1 << 29;
		for (int j = 0; j < lens[b]; j++) {
			size_t row = (size_t)p->bt[(size_t)b * max_pages + j / ps] * ps + (size_t)(j % ps);

			for (int d = 0; d < MLA_D_QK; d++) {
				float v = rng_uniform(&seed);

				if (es == 2)
					((uint16_t *)p->kv)[row * MLA_D_QK + d] = bf16_of(v);
				else { /* codes of magnitude <= 1.875 (exponents 0..8), never 0x80 */
					uint8_t c = (uint8_t)(rng_next(&seed) % 72);

					((uint8_t *)p->kv)[row * MLA_D_QK + d] = (uint8_t)(v < 0 && c ? c | 0x80 : c);
				}
			}
		}
	}
	p->a = (struct mla_decode_args){
		.q = p->q, .kv_cache = p->kv, .block_table = p->bt, .seqlens = p->sl, .out = p->out,
		.lse = p->lse, .batch = batch, .s_q = s_q, .h_q = h_q, .num_pages = num_pages,
		.page_size = ps, .max_pages = max_pages, .kv_dtype = kv_dtype, .softmax_scale = 0.1352f,
		.kv_scale = es == 2 ? 1.0f : 0.75f, .num_cus = 2,
	};
	ck_assert_int_eq(mla_decode_reference(&p->a, p->ref_out, p->ref_lse, 2), MLA_OK);
	memcpy(p->out_dims, (int[4]){ batch, s_q, h_q, MLA_D_V }, sizeof(p->out_dims));
	memcpy(p->lse_dims, (int[3]){ batch, h_q, s_q }, sizeof(p->lse_dims));
}

static void problem_release(struct problem *p)
{
	free(p->q);
	free(p->kv);
	free(p->bt);
	free(p->sl);
	free(p->out);
	free(p->lse);
	free(p->ref_out);
	free(p->ref_lse);
}

/* Parity of out and lse; 0 when both pass, else the description in msg. */
static int problem_parity(const struct problem *p, char *msg, size_t cap)
{
	static const char *const on[] = { "b", "s", "h", "d" }, *const ln[] = { "b", "h", "s" };
	struct parity_report r;

	parity_compare_bf16(&r, p->out, p->ref_out, p->out_n, &tol_out, p->out_dims, 4);
	if (!r.pass) {
		parity_describe(msg, cap, "out", &r, on, 4);
		return 1;
	}
	parity_compare_f32(&r, p->lse, p->ref_lse, p->lse_n, &tol_lse, p->lse_dims, 3);
	if (!r.pass) {
		parity_describe(msg, cap, "lse", &r, ln, 3);
		return 1;
	}
	return 0;
}

/* ---- running in a forked worker ------------------------------------------------------------- */

/*
 * Fork; the child runs fn (which writes what it saw into msg and returns 0 on success) and sends
 * msg back. Returns fn's result (or -1 when the child died); msg holds the child's text.
 */
static int in_worker(int (*fn)(char *msg, size_t cap, void *arg), void *arg, char *msg, size_t cap)
{
	int fds[2], st;
	ssize_t n, got = 0;
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char buf[4096] = "";
		int rc;

		close(fds[0]);
		rc = fn(buf, sizeof(buf), arg);
		if (write(fds[1], buf, strlen(buf)) < 0)
			rc = 3;
		close(fds[1]);
		/*
		 * As the harness's workers end (harness/worker.c): _exit, no atexit handlers. The embedded
		 * interpreter is never finalized, so an exit() here would hand LeakSanitizer all of
		 * CPython's live objects (and OpenSSL's method store, which _hashlib keeps alive).
		 */
		_exit(rc);
	}
	close(fds[1]);
	while (got < (ssize_t)cap - 1 && (n = read(fds[0], msg + got, cap - 1 - (size_t)got)) > 0)
		got += n;
	msg[got] = 0;
	close(fds[0]);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const struct mla_decode_config *config_named(const struct mla_decode_impl *impl, const char *name,
						    struct mla_decode_config *buf, int cap)
{
	int n = impl->configs("x86_64", buf, cap);

	for (int i = 0; i < n && i < cap; i++)
		if (!strcmp(buf[i].name, name))
			return &buf[i];
	return NULL;
}

/* ---- describe and register (parent) -------------------------------------------------------- */

START_TEST(describe_reports_declarations_configs_sha256_and_interpreter)
{
	struct pyimpl *p = NULL;
	char *path = tu_source("kernels/python/numpy_mla.py"), sha[FS_SHA256_HEX];

	ck_assert_int_eq(pyimpl_describe(&p, path, "x86_64"), 0);
	ck_assert_str_eq(p->name, "numpy.mla_decode");
	ck_assert_str_eq(p->backend, "cpu");
	ck_assert_str_eq(p->py_backend, "cpu");
	ck_assert_int_eq(p->nconfigs, 2);
	ck_assert_str_eq(p->configs[0].name, "bn64");
	ck_assert_int_eq(p->configs[0].block_n, 64);
	ck_assert_str_eq(p->configs[1].name, "bn256");
	ck_assert_int_eq(p->configs[1].block_n, 256);
	ck_assert_int_eq(p->kv_dtypes, (1 << MLA_KV_BF16) | (1 << MLA_KV_FP8_E4M3_FNUZ) | (1 << MLA_KV_FP8_DS_MLA) |
					       (1 << MLA_KV_FP8_DS_MLA_FNUZ) | (1 << MLA_KV_FP8_MODEL1) |
					       (1 << MLA_KV_FP8_MODEL1_FNUZ));
	ck_assert_int_eq(fs_sha256_file(sha, path), 0);
	ck_assert_str_eq(p->sha256, sha);
	ck_assert_str_eq(p->interpreter, "/usr/bin/python3");
	ck_assert_str_eq(p->executable, "/usr/bin/python3");
	ck_assert_msg(strstr(p->libpython, "libpython3") && fs_exists(p->libpython), "libpython: %s", p->libpython);
	ck_assert_msg(strstr(p->versions_json, "\"python\":\"3.") && strstr(p->versions_json, "\"numpy\":"),
		      "versions: %s", p->versions_json);
	ck_assert(!strstr(p->versions_json, "torch"));
	pyimpl_free(p);
	p = NULL;
	/* An arch without code: no configs (the module returns []). */
	ck_assert_int_eq(pyimpl_describe(&p, path, "sm_90"), 0);
	ck_assert_int_eq(p->nconfigs, 0);
	pyimpl_free(p);
	free(path);
}
END_TEST

struct bad_module {
	const char *file;
	int code;
	const char *line; /* the start of the one line, after the file's path */
};

static const struct bad_module bad[] = {
	{ "missing.py", VS_ENOTFOUND, "does not exist" },
	{ "bad_decl.py", VS_ESCHEMA, ": declaration: BACKEND must be one of cuda, hip, cpu, got 'rocm'" },
	{ "bad_configs.py", VS_ESCHEMA, ": declaration: configs('x86_64'): config name 'a' appears twice" },
	{ "bad_forms.py", VS_ESCHEMA,
	  ": declaration: KV_DTYPES names fp8_ds_mla, a format of the sparse form only, but FORMS is dense (add "
	  "'sparse')" },
	{ "imports_missing.py", VS_ESCHEMA, ": import: ModuleNotFoundError: No module named "
					    "'vs_no_such_package' (at " },
};

START_TEST(bad_modules_are_refused_with_one_clear_line)
{
	const struct bad_module *b = &bad[_i];
	struct pyimpl *p = NULL;
	char *path = res(b->file);
	const char *err;

	ck_assert_int_eq(pyimpl_describe(&p, path, "x86_64"), b->code);
	ck_assert_ptr_null(p);
	err = vs_last_error();
	ck_assert_msg(strstr(err, b->line), "%s: %s", b->file, err);
	ck_assert_msg(!strchr(err, '\n'), "%s: not one line: %s", b->file, err);
	if (!strcmp(b->file, "imports_missing.py")) {
		char *frame = fs_printf("imports_missing.py:5 in <module>); package 'vs_no_such_package' not "
					"found by the interpreter /usr/bin/python3 (sys.path: ");

		ck_assert_msg(strstr(err, frame), "import line: %s", err);
		free(frame);
	}
	free(path);
}
END_TEST

START_TEST(missing_interpreter_is_named)
{
	struct pyimpl *p = NULL;
	char *path = tu_source("kernels/python/numpy_mla.py");

	setenv("VS_PYTHON", "/nonexistent/python3", 1);
	ck_assert_int_eq(pyimpl_describe(&p, path, "x86_64"), VS_ENOTFOUND);
	ck_assert_msg(strstr(vs_last_error(), "cannot run the interpreter '/nonexistent/python3'") &&
		      strstr(vs_last_error(), "VS_PYTHON"), "%s", vs_last_error());
	free(path);
}
END_TEST

START_TEST(registered_proxy_answers_configs_and_supports_without_embedding)
{
	const struct pyimpl *p = NULL, *again = NULL, *r = NULL;
	const struct mla_decode_impl *impl;
	struct mla_decode_config cfg[4];
	struct mla_decode_args shape = { .batch = 2, .s_q = 1, .h_q = 16, .num_pages = 8, .page_size = 64,
					 .max_pages = 4, .kv_dtype = MLA_KV_BF16, .softmax_scale = 0.1f,
					 .kv_scale = 1.0f, .num_cus = 2 };
	char *path = tu_source("kernels/python/numpy_mla.py"), *rpath = res("raises_launch.py"), why[128];

	ck_assert_int_eq(pyimpl_register(&p, path, "x86_64"), 0);
	ck_assert_int_eq(pyimpl_register(&again, path, "x86_64"), 0);
	ck_assert_ptr_eq(p, again);
	impl = mla_decode_impl_find("numpy.mla_decode");
	ck_assert_ptr_eq(impl, &p->impl);
	ck_assert_ptr_eq(pyimpl_for_impl("numpy.mla_decode"), p);
	ck_assert_uint_eq(impl->abi_version, MLA_DECODE_ABI_VERSION);
	ck_assert_str_eq(impl->backend, "cpu");
	ck_assert_int_eq(impl->configs("x86_64", NULL, 0), 2);
	ck_assert_int_eq(impl->configs("x86_64", cfg, 4), 2);
	ck_assert_str_eq(cfg[1].name, "bn256");
	ck_assert_int_eq(impl->configs("gfx942", cfg, 4), MLA_EUNSUPPORTED);
	ck_assert_int_eq(impl->supports(&shape, why, sizeof(why)), 1);
	/* Not embedded in this process: launch says so instead of starting Python. */
	ck_assert_int_eq(impl->launch(&shape, &cfg[0]), MLA_ENODEVICE);
	ck_assert_msg(strstr(pyimpl_last_error(), "not started in this process"), "%s", pyimpl_last_error());
	ck_assert(!pyimpl_started());
	/* supports(): KV_DTYPES in C, the module's own supports() through a subprocess. */
	ck_assert_int_eq(pyimpl_register(&r, rpath, "x86_64"), 0);
	shape.kv_dtype = MLA_KV_FP8_E4M3_FNUZ;
	ck_assert_int_eq(r->impl.supports(&shape, why, sizeof(why)), 0);
	ck_assert_msg(strstr(why, "kv dtype fp8_e4m3_fnuz"), "%s", why);
	shape.kv_dtype = MLA_KV_BF16;
	ck_assert_int_eq(r->impl.supports(&shape, why, sizeof(why)), 1);
	shape.page_size = 16;
	ck_assert_int_eq(r->impl.supports(&shape, why, sizeof(why)), 0);
	ck_assert_str_eq(why, "page_size 16: this module reads pages of 64 rows");
	ck_assert_int_eq(r->impl.supports(&shape, why, sizeof(why)), 0); /* cached answer */
	ck_assert_str_eq(why, "page_size 16: this module reads pages of 64 rows");
	shape.page_size = 32; /* a new question to the same co-process */
	ck_assert_int_eq(r->impl.supports(&shape, why, sizeof(why)), 1);
	/* A name already taken. */
	{
		char *copy = fs_printf("%s/again.py", tmp), *src = tu_read(path, NULL);
		const struct pyimpl *x = NULL;

		tu_write(copy, src, strlen(src));
		ck_assert_int_eq(pyimpl_register(&x, copy, "x86_64"), VS_EUSAGE);
		ck_assert_msg(strstr(vs_last_error(), "'numpy.mla_decode' is already taken"), "%s", vs_last_error());
		free(src);
		free(copy);
	}
	free(path);
	free(rpath);
}
END_TEST

START_TEST(ninth_module_is_refused)
{
	for (int i = 0; i <= PYIMPL_MAX_MODULES; i++) {
		char *f = fs_printf("%s/m%d.py", tmp, i);
		char *src = fs_printf("NAME = 'test.m%d'\nBACKEND = 'cpu'\nKV_DTYPES = ('bf16',)\nSUMMARY = 'x'\n"
				      "def configs(arch):\n    return [{'name': 'c'}]\n"
				      "def launch(args, config):\n    pass\n", i);
		const struct pyimpl *p = NULL;
		int err;

		tu_write(f, src, strlen(src));
		err = pyimpl_register(&p, f, "x86_64");
		if (i < PYIMPL_MAX_MODULES) {
			ck_assert_msg(err == 0, "module %d: %s", i, vs_last_error());
		} else {
			ck_assert_int_eq(err, VS_EUNSUPPORTED);
			ck_assert_msg(strstr(vs_last_error(), "at most 8 python modules"), "%s", vs_last_error());
		}
		free(src);
		free(f);
	}
}
END_TEST

/* ---- in the worker ---------------------------------------------------------------------------- */

struct parity_case {
	const char *name;
	int32_t kv_dtype;
	int s_q, h_q, ps, batch;
	int lens[4];
};

static const struct parity_case parity_cases[] = {
	{ "bf16-sq1-ps64-ragged", MLA_KV_BF16, 1, 16, 64, 3, { 200, 0, 65 } },
	{ "bf16-sq2-ps16-causal", MLA_KV_BF16, 2, 8, 16, 3, { 1, 37, 300 } },
	{ "fp8-sq1-ps16", MLA_KV_FP8_E4M3_FNUZ, 1, 16, 16, 2, { 129, 5 } },
	{ "fp8-sq4-ps1-causal", MLA_KV_FP8_E4M3_FNUZ, 4, 4, 1, 2, { 3, 70 } },
};

static void on_sigint(int sig)
{
	(void)sig;
}

static int numpy_parity_worker(char *msg, size_t cap, void *arg)
{
	const struct mla_decode_impl *impl = mla_decode_impl_find("numpy.mla_decode");
	const char *cfgs[] = { "bn64", "bn256" };
	struct mla_decode_config buf[4];
	int rc = 0;

	(void)arg;
	/* The interpreter installs no signal handlers: SIGINT stays the harness's. */
	signal(SIGINT, on_sigint);
	if (pyimpl_start()) {
		snprintf(msg, cap, "start: %s", vs_last_error());
		return 1;
	}
	if (signal(SIGINT, on_sigint) != on_sigint) {
		snprintf(msg, cap, "pyimpl_start() replaced the SIGINT handler");
		return 1;
	}
	for (size_t c = 0; c < sizeof(parity_cases) / sizeof(parity_cases[0]) && !rc; c++) {
		const struct parity_case *t = &parity_cases[c];
		struct problem p;

		problem_init(&p, t->kv_dtype, t->s_q, t->h_q, t->ps, t->lens, t->batch, 7 + c);
		for (int k = 0; k < 2 && !rc; k++) {
			const struct mla_decode_config *cfg = config_named(impl, cfgs[k], buf, 4);
			uint16_t *first = malloc(p.out_n * 2);
			char line[512];
			int st;

			memset(p.out, 0xff, p.out_n * 2);
			if (impl->prepare(&p.a, cfg) != MLA_OK || (st = impl->launch(&p.a, cfg)) != MLA_OK) {
				snprintf(msg, cap, "%s %s: %s", t->name, cfgs[k], pyimpl_last_error());
				rc = 1;
			} else if (problem_parity(&p, line, sizeof(line))) {
				snprintf(msg, cap, "%s %s: %s", t->name, cfgs[k], line);
				rc = 1;
			} else {
				/* Deterministic: again, into the same buffers, bit-identical. */
				memcpy(first, p.out, p.out_n * 2);
				memset(p.out, 0, p.out_n * 2);
				if (impl->launch(&p.a, cfg) != MLA_OK || memcmp(first, p.out, p.out_n * 2)) {
					snprintf(msg, cap, "%s %s: second launch differs", t->name, cfgs[k]);
					rc = 1;
				}
			}
			free(first);
		}
		problem_release(&p);
	}
	if (!rc) {
		char *v = pyimpl_versions_now();

		snprintf(msg, cap, "versions %s", v ? v : "(none)");
		free(v);
	}
	return rc;
}

START_TEST(numpy_module_passes_parity_in_a_forked_worker)
{
	const struct pyimpl *p = NULL;
	char *path = tu_source("kernels/python/numpy_mla.py"), msg[4096];

	ck_assert_int_eq(pyimpl_register(&p, path, "x86_64"), 0);
	ck_assert_msg(in_worker(numpy_parity_worker, NULL, msg, sizeof(msg)) == 0, "worker: %s", msg);
	ck_assert_msg(strstr(msg, "\"numpy\":"), "%s", msg);
	ck_assert(!pyimpl_started()); /* the parent never embedded Python */
	free(path);
}
END_TEST

/* ---- the sparse form: numpy.mla_decode against cpu.naive ------------------------------------ */

/*
 * A sparse task: caches of kv_dtype, topk (+ extra_topk) entries a query row, about one in five
 * -1; tl / etl: topk_length / extra_topk_length ({-1}: not given); sink: attn_sink (+inf, -inf,
 * finite); lonely: query row (0, s_q - 1) all -1. Rows no valid entry names are NaN, and entries past
 * a length name rows of the last page, which no valid entry names.
 */
struct sparse_case {
	const char *name;
	int32_t kv_dtype, batch, s_q, h_q, ps, pages, topk, eps, epages, etopk;
	int32_t tl[2], etl[2];
	int sink, lonely;
};

static const struct sparse_case sparse_cases[] = {
	{ "fp8_ds_mla-ps61-len0-and-topk-sink", MLA_KV_FP8_DS_MLA, 2, 2, 16, 61, 3, 40, 0, 0, 0, { 0, 40 }, { -1 }, 1, 0 },
	{ "fp8_model1-ps64-extra-ps69-lonely", MLA_KV_FP8_MODEL1, 2, 1, 16, 64, 2, 32, 69, 2, 16, { -1 }, { 16, 3 }, 0,
	  1 },
	{ "bf16-ps16-sq2-extra-sink", MLA_KV_BF16, 1, 2, 8, 16, 3, 24, 61, 2, 8, { 20 }, { -1 }, 1, 0 },
	{ "fp8_ds_mla_fnuz-ps69-lonely", MLA_KV_FP8_DS_MLA_FNUZ, 1, 2, 4, 69, 2, 16, 0, 0, 0, { -1 }, { -1 }, 0, 1 },
	{ "fp8_model1_fnuz-ps61-sink", MLA_KV_FP8_MODEL1_FNUZ, 2, 1, 4, 61, 2, 16, 16, 2, 8, { 16, 9 }, { 8, 0 }, 1,
	  0 },
};

struct sparse_problem {
	struct mla_decode_args a;
	uint16_t *q, *out, *ref_bits;
	uint8_t *kv, *ekv, *named, *enamed;
	int32_t *idx, *eidx, *tl, *etl;
	float *sink, *lse, *ref_out, *ref_lse;
	size_t out_n, lse_n;
	int out_dims[4], lse_dims[3];
};

/* A code finite in e4m3fn and e4m3fnuz alike (never 0x80, 0x7F or 0xFF), of magnitude <= 2^7 * 1.875. */
static uint8_t sparse_code(uint64_t *s)
{
	uint8_t c = (uint8_t)(1 + rng_next(s) % 0x6f); /* exponent fields 0..13, never 0 */

	return rng_next(s) & 1 ? (uint8_t)(c | 0x80) : c;
}

/* Row r of a cache: a named row gets finite codes, scales and RoPE values; any other NaN. */
static void sparse_row(uint8_t *cache, int32_t kv_dtype, int32_t ps, int32_t r, int named, uint64_t *s)
{
	uint8_t *page = cache + (size_t)(r / ps) * mla_kv_page_bytes(kv_dtype, ps), *t, *sc;
	uint8_t nan_code = mla_kv_is_fnuz(kv_dtype) ? 0x80 : 0x7f;
	int32_t slot = r % ps;

	if (kv_dtype == MLA_KV_BF16) {
		uint16_t *row = (uint16_t *)cache + (size_t)r * MLA_D_QK;

		for (int d = 0; d < MLA_D_QK; d++)
			row[d] = named ? bf16_of(rng_uniform(s)) : 0x7fc0;
		return;
	}
	if (!mla_kv_is_model1(kv_dtype)) {
		t = page + (size_t)slot * 656;
		for (int k = 0; k < 4; k++) {
			float f = named ? ldexpf(1.0f + (float)(rng_next(s) % 8) / 8.0f, -9) : NAN;

			memcpy(t + 512 + 4 * k, &f, 4);
		}
		for (int d = 0; d < 512; d++)
			t[d] = named ? sparse_code(s) : nan_code;
		for (int d = 0; d < 64; d++) {
			uint16_t h = named ? bf16_of(rng_uniform(s)) : 0x7fc0;

			memcpy(t + 528 + 2 * d, &h, 2);
		}
		return;
	}
	t = page + (size_t)slot * 576;
	sc = page + (size_t)ps * 576 + (size_t)slot * 8;
	for (int k = 0; k < 7; k++)
		sc[k] = named ? (uint8_t)(118 + rng_next(s) % 3) : 0xff;
	for (int d = 0; d < 448; d++)
		t[d] = named ? sparse_code(s) : nan_code;
	for (int d = 0; d < 64; d++) {
		uint16_t h = named ? bf16_of(rng_uniform(s)) : 0x7fc0;

		memcpy(t + 448 + 2 * d, &h, 2);
	}
}

/* Indices [batch, s_q, k] into a cache of pages x ps rows; named[] marks the rows valid entries name. */
static void sparse_fill_indices(int32_t *idx, uint8_t *named, const struct sparse_case *c, int32_t k,
				const int32_t *len, int32_t ps, int32_t pages, uint64_t *s)
{
	int32_t live = (pages - 1) * ps;

	for (int32_t b = 0; b < c->batch; b++)
		for (int32_t i = 0; i < c->s_q; i++)
			for (int32_t t = 0; t < k; t++) {
				int32_t *e = idx + ((size_t)b * c->s_q + i) * k + t;

				if (len && t >= len[b]) {
					*e = live + (int32_t)(rng_next(s) % (uint64_t)ps);
				} else if ((c->lonely && b == 0 && i == c->s_q - 1) || rng_next(s) % 5 == 0) {
					*e = -1;
				} else {
					*e = (int32_t)(rng_next(s) % (uint64_t)live);
					named[*e] = 1;
				}
			}
}

static uint8_t *sparse_cache(uint8_t **named, const struct sparse_case *c, int32_t ps, int32_t pages)
{
	size_t bytes = mla_kv_page_bytes(c->kv_dtype, ps) * pages;
	uint8_t *kv = malloc(bytes);

	*named = calloc((size_t)ps * pages, 1);
	ck_assert(kv && *named);
	memset(kv, 0xff, bytes);
	return kv;
}

static int32_t *sparse_lengths(const int32_t *v, int32_t batch)
{
	int32_t *l;

	if (v[0] < 0)
		return NULL;
	l = malloc((size_t)batch * sizeof(int32_t));
	ck_assert_ptr_nonnull(l);
	memcpy(l, v, (size_t)batch * sizeof(int32_t));
	return l;
}

/* Build c and its reference: cpu.naive's out (as floats) and lse. */
static void sparse_problem_init(struct sparse_problem *p, const struct sparse_case *c, uint64_t seed)
{
	static const float sinks[] = { INFINITY, -INFINITY, 0.75f, -2.0f };
	const struct mla_decode_impl *naive = mla_decode_impl_find("cpu.naive");
	struct mla_decode_config cfg;
	int32_t d_qk = mla_kv_d_qk(c->kv_dtype);
	size_t qn = (size_t)c->batch * c->s_q * c->h_q * d_qk;

	memset(p, 0, sizeof(*p));
	p->q = malloc(qn * 2);
	p->idx = malloc((size_t)c->batch * c->s_q * c->topk * sizeof(int32_t));
	ck_assert(p->q && p->idx);
	for (size_t i = 0; i < qn; i++)
		p->q[i] = bf16_of(rng_uniform(&seed));
	p->tl = sparse_lengths(c->tl, c->batch);
	p->kv = sparse_cache(&p->named, c, c->ps, c->pages);
	sparse_fill_indices(p->idx, p->named, c, c->topk, p->tl, c->ps, c->pages, &seed);
	for (int32_t r = 0; r < c->ps * c->pages; r++)
		sparse_row(p->kv, c->kv_dtype, c->ps, r, p->named[r], &seed);
	if (c->etopk) {
		p->eidx = malloc((size_t)c->batch * c->s_q * c->etopk * sizeof(int32_t));
		ck_assert_ptr_nonnull(p->eidx);
		p->etl = sparse_lengths(c->etl, c->batch);
		p->ekv = sparse_cache(&p->enamed, c, c->eps, c->epages);
		sparse_fill_indices(p->eidx, p->enamed, c, c->etopk, p->etl, c->eps, c->epages, &seed);
		for (int32_t r = 0; r < c->eps * c->epages; r++)
			sparse_row(p->ekv, c->kv_dtype, c->eps, r, p->enamed[r], &seed);
	}
	if (c->sink) {
		p->sink = malloc((size_t)c->h_q * sizeof(float));
		ck_assert_ptr_nonnull(p->sink);
		for (int32_t h = 0; h < c->h_q; h++)
			p->sink[h] = sinks[h % 4];
	}
	p->out_n = (size_t)c->batch * c->s_q * c->h_q * MLA_D_V;
	p->lse_n = (size_t)c->batch * c->h_q * c->s_q;
	p->out = malloc(p->out_n * 2);
	p->ref_bits = malloc(p->out_n * 2);
	p->lse = malloc(p->lse_n * sizeof(float));
	p->ref_out = malloc(p->out_n * sizeof(float));
	p->ref_lse = malloc(p->lse_n * sizeof(float));
	ck_assert(p->out && p->ref_bits && p->lse && p->ref_out && p->ref_lse);
	p->a = (struct mla_decode_args){
		.q = p->q, .kv_cache = p->kv, .out = p->ref_bits, .lse = p->ref_lse, .batch = c->batch,
		.s_q = c->s_q, .h_q = c->h_q, .num_pages = c->pages, .page_size = c->ps, .kv_dtype = c->kv_dtype,
		.softmax_scale = 0.1352f, .kv_scale = 1.0f, .num_cus = 2, .indices = p->idx, .topk_length = p->tl,
		.attn_sink = p->sink, .extra_kv_cache = p->ekv, .extra_indices = p->eidx,
		.extra_topk_length = p->etl, .topk = c->topk, .extra_topk = c->etopk,
		.extra_num_pages = c->etopk ? c->epages : 0, .extra_page_size = c->etopk ? c->eps : 0,
		.d_qk = d_qk, .d_v = MLA_D_V,
	};
	ck_assert_int_eq(naive->configs("x86_64", &cfg, 1), 1);
	ck_assert_int_eq(naive->launch(&p->a, &cfg), MLA_OK);
	for (size_t i = 0; i < p->out_n; i++) {
		uint32_t u = (uint32_t)p->ref_bits[i] << 16;

		memcpy(&p->ref_out[i], &u, 4);
		ck_assert_msg(isfinite(p->ref_out[i]), "%s: cpu.naive out[%zu] is %g", c->name, i, p->ref_out[i]);
	}
	p->a.out = p->out;
	p->a.lse = p->lse;
	memcpy(p->out_dims, (int[4]){ c->batch, c->s_q, c->h_q, MLA_D_V }, sizeof(p->out_dims));
	memcpy(p->lse_dims, (int[3]){ c->batch, c->h_q, c->s_q }, sizeof(p->lse_dims));
}

static void sparse_problem_release(struct sparse_problem *p)
{
	free(p->q);
	free(p->out);
	free(p->ref_bits);
	free(p->kv);
	free(p->ekv);
	free(p->named);
	free(p->enamed);
	free(p->idx);
	free(p->eidx);
	free(p->tl);
	free(p->etl);
	free(p->sink);
	free(p->lse);
	free(p->ref_out);
	free(p->ref_lse);
}

static int sparse_parity(const struct sparse_problem *p, char *msg, size_t cap)
{
	static const char *const on[] = { "b", "s", "h", "d" }, *const ln[] = { "b", "h", "s" };
	struct parity_report r;

	parity_compare_bf16(&r, p->out, p->ref_out, p->out_n, &tol_out, p->out_dims, 4);
	if (!r.pass) {
		parity_describe(msg, cap, "out", &r, on, 4);
		return 1;
	}
	parity_compare_f32(&r, p->lse, p->ref_lse, p->lse_n, &tol_lse, p->lse_dims, 3);
	if (!r.pass) {
		parity_describe(msg, cap, "lse", &r, ln, 3);
		return 1;
	}
	return 0;
}

static int numpy_sparse_worker(char *msg, size_t cap, void *arg)
{
	const struct mla_decode_impl *impl = mla_decode_impl_find("numpy.mla_decode");
	struct mla_decode_config buf[4];
	const struct mla_decode_config *cfg;
	int rc = 0;

	(void)arg;
	if (pyimpl_start()) {
		snprintf(msg, cap, "start: %s", vs_last_error());
		return 1;
	}
	cfg = config_named(impl, "bn64", buf, 4);
	for (size_t c = 0; c < sizeof(sparse_cases) / sizeof(sparse_cases[0]) && !rc; c++) {
		const struct sparse_case *t = &sparse_cases[c];
		struct sparse_problem p;
		char line[512], why[160] = "";

		sparse_problem_init(&p, t, 91 + c);
		memset(p.out, 0xff, p.out_n * 2);
		memset(p.lse, 0xff, p.lse_n * sizeof(float));
		if (impl->supports(&p.a, why, sizeof(why)) != 1) {
			snprintf(msg, cap, "%s: supports() refuses: %s", t->name, why);
			rc = 1;
		} else if (impl->prepare(&p.a, cfg) != MLA_OK || impl->launch(&p.a, cfg) != MLA_OK) {
			snprintf(msg, cap, "%s: %s", t->name, pyimpl_last_error());
			rc = 1;
		} else if (sparse_parity(&p, line, sizeof(line))) {
			snprintf(msg, cap, "%s: numpy against cpu.naive: %s", t->name, line);
			rc = 1;
		}
		sparse_problem_release(&p);
	}
	return rc;
}

START_TEST(numpy_module_runs_the_sparse_form_as_cpu_naive)
{
	const struct pyimpl *p = NULL, *w = NULL;
	struct mla_decode_args shape = { .batch = 1, .s_q = 1, .h_q = 16, .num_pages = 4, .page_size = 64,
					 .kv_dtype = MLA_KV_BF16, .softmax_scale = 0.1f, .kv_scale = 1.0f,
					 .num_cus = 2, .topk = 64, .d_qk = MLA_D_QK, .d_v = MLA_D_V };
	char *path = tu_source("kernels/python/numpy_mla.py"), *wpath = res("wrong.py"), msg[4096], why[160];

	ck_assert_int_eq(pyimpl_register(&p, path, "x86_64"), 0);
	ck_assert_int_eq(pyimpl_register(&w, wpath, "x86_64"), 0);
	/* In the parent: FORMS first (a module that does not declare "sparse" is never asked), then the
	 * module's supports() through the co-process. */
	ck_assert_int_eq(p->forms, PYIMPL_FORM_DENSE | PYIMPL_FORM_SPARSE);
	ck_assert_int_eq(w->forms, PYIMPL_FORM_DENSE);
	ck_assert_msg(p->impl.supports(&shape, why, sizeof(why)) == 1, "%s", why);
	ck_assert_int_eq(w->impl.supports(&shape, why, sizeof(why)), 0);
	ck_assert_str_eq(why, "sparse form: the module's FORMS lacks it");
	shape.kv_dtype = MLA_KV_FP8_MODEL1;
	ck_assert_int_eq(p->impl.supports(&shape, why, sizeof(why)), 0);
	ck_assert_str_eq(why, "d_qk 576, d_v 512: fp8_model1 rows have d_qk 512, d_v 512");
	shape.d_qk = MLA_MODEL1_D_QK;
	ck_assert_msg(p->impl.supports(&shape, why, sizeof(why)) == 1, "%s", why);
	shape.topk = 0;
	ck_assert_int_eq(p->impl.supports(&shape, why, sizeof(why)), 0);
	ck_assert_str_eq(why, "kv dtype fp8_model1: the dense form reads bf16, fp8_e4m3_fnuz");
	ck_assert_msg(in_worker(numpy_sparse_worker, NULL, msg, sizeof(msg)) == 0, "worker: %s", msg);
	free(path);
	free(wpath);
}
END_TEST

/* launch() raises: one line, MLA_EDEVICE; numpy.mla_decode, registered too, still runs after it. */
static int raises_worker(char *msg, size_t cap, void *arg)
{
	const struct mla_decode_impl *bad = mla_decode_impl_find("test.py_raises");
	const struct mla_decode_impl *good = mla_decode_impl_find("numpy.mla_decode");
	struct mla_decode_config b1[2], b2[4];
	const int lens[2] = { 70, 3 };
	struct problem p;
	char line[512];
	int rc = 0;

	(void)arg;
	if (pyimpl_start()) {
		snprintf(msg, cap, "start: %s", vs_last_error());
		return 1;
	}
	problem_init(&p, MLA_KV_BF16, 1, 16, 64, lens, 2, 3);
	if (bad->launch(&p.a, config_named(bad, "only", b1, 2)) != MLA_EDEVICE) {
		snprintf(msg, cap, "launch did not fail with MLA_EDEVICE");
		rc = 1;
	} else {
		snprintf(msg, cap, "%s", pyimpl_last_error());
		if (good->launch(&p.a, config_named(good, "bn64", b2, 4)) != MLA_OK ||
		    problem_parity(&p, line, sizeof(line))) {
			snprintf(msg, cap, "numpy after the exception: %s", pyimpl_last_error());
			rc = 1;
		}
	}
	problem_release(&p);
	return rc;
}

START_TEST(exception_in_launch_is_one_line_with_the_kernel_frame)
{
	const struct pyimpl *a = NULL, *b = NULL;
	char *path = tu_source("kernels/python/numpy_mla.py"), *rpath = res("raises_launch.py"), msg[4096];
	char *real = realpath(rpath, NULL), *want;

	ck_assert_int_eq(pyimpl_register(&a, rpath, "x86_64"), 0);
	ck_assert_int_eq(pyimpl_register(&b, path, "x86_64"), 0);
	ck_assert_msg(in_worker(raises_worker, NULL, msg, sizeof(msg)) == 0, "worker: %s", msg);
	want = fs_printf("%s: launch: ValueError: block_n 64 does not divide the page (at %s:19 in _inner)", real,
			 real);
	ck_assert_str_eq(msg, want);
	free(want);
	free(real);
	free(path);
	free(rpath);
}
END_TEST

static int wrong_worker(char *msg, size_t cap, void *arg)
{
	const struct mla_decode_impl *impl = mla_decode_impl_find("test.py_wrong");
	struct mla_decode_config buf[4];
	const int lens[2] = { 90, 17 };
	struct problem p;
	int rc;

	(void)arg;
	if (pyimpl_start()) {
		snprintf(msg, cap, "start: %s", vs_last_error());
		return 1;
	}
	problem_init(&p, MLA_KV_BF16, 1, 4, 16, lens, 2, 11);
	if (impl->launch(&p.a, config_named(impl, "bn64", buf, 4)) != MLA_OK) {
		snprintf(msg, cap, "launch: %s", pyimpl_last_error());
		rc = 1;
	} else {
		rc = problem_parity(&p, msg, cap) ? 0 : 2;
	}
	problem_release(&p);
	return rc;
}

START_TEST(wrong_module_fails_parity_with_the_worst_element)
{
	const struct pyimpl *p = NULL;
	char *path = res("wrong.py"), msg[4096];

	ck_assert_int_eq(pyimpl_register(&p, path, "x86_64"), 0);
	ck_assert_msg(in_worker(wrong_worker, NULL, msg, sizeof(msg)) == 0, "worker: %s", msg);
	ck_assert_msg(strstr(msg, "out: 1 of") && strstr(msg, "(b=0, s=0, h=1, d=7)"), "%s", msg);
	free(path);
}
END_TEST

static int writes_q_worker(char *msg, size_t cap, void *arg)
{
	const struct mla_decode_impl *impl = mla_decode_impl_find("test.py_writes_q");
	struct mla_decode_config buf[4];
	const int lens[1] = { 10 };
	struct problem p;
	uint16_t *q0;
	int rc = 0, st;

	(void)arg;
	if (pyimpl_start()) {
		snprintf(msg, cap, "start: %s", vs_last_error());
		return 1;
	}
	problem_init(&p, MLA_KV_BF16, 1, 4, 16, lens, 1, 5);
	q0 = malloc(4 * MLA_D_QK * 2);
	memcpy(q0, p.q, 4 * MLA_D_QK * 2);
	st = impl->launch(&p.a, config_named(impl, "direct", buf, 4));
	if (st != MLA_EDEVICE || memcmp(q0, p.q, 4 * MLA_D_QK * 2)) {
		snprintf(msg, cap, "direct write: status %d, q %s", st,
			 memcmp(q0, p.q, 4 * MLA_D_QK * 2) ? "changed" : "unchanged");
		rc = 1;
	} else {
		snprintf(msg, cap, "%s\n", pyimpl_last_error());
		st = impl->launch(&p.a, config_named(impl, "ctypes", buf, 4));
		/* Around the read-only view the bridge cannot stop it: the harness's input hash does. */
		if (st != MLA_OK || !memcmp(q0, p.q, 4 * MLA_D_QK * 2))
			rc = 2;
	}
	free(q0);
	problem_release(&p);
	return rc;
}

START_TEST(writes_into_q_are_refused_or_visible)
{
	const struct pyimpl *p = NULL;
	char *path = res("writes_q.py"), msg[4096];

	ck_assert_int_eq(pyimpl_register(&p, path, "x86_64"), 0);
	ck_assert_msg(in_worker(writes_q_worker, NULL, msg, sizeof(msg)) == 0, "worker: %s", msg);
	ck_assert_msg(strstr(msg, ": launch: ValueError: assignment destination is read-only (at ") &&
		      strstr(msg, "writes_q.py:16 in launch)"), "%s", msg);
	free(path);
}
END_TEST

static int import_fails_worker(char *msg, size_t cap, void *arg)
{
	const struct mla_decode_impl *impl = mla_decode_impl_find(arg);
	struct mla_decode_config buf[2];
	const int lens[1] = { 4 };
	struct problem p;
	int err, st;

	setenv("VS_TEST_FAIL_IMPORT", "1", 1);
	err = pyimpl_start();
	problem_init(&p, MLA_KV_BF16, 1, 4, 16, lens, 1, 5);
	st = impl->launch(&p.a, config_named(impl, "only", buf, 2));
	snprintf(msg, cap, "%d %d %s", err, st, pyimpl_last_error());
	problem_release(&p);
	return 0;
}

START_TEST(import_error_in_the_worker_names_package_and_interpreter)
{
	const struct pyimpl *p = NULL;
	char *path = res("imports_missing.py"), msg[4096], *want;

	setenv("VS_TEST_FAIL_IMPORT", "0", 1);
	ck_assert_int_eq(pyimpl_register(&p, path, "x86_64"), 0);
	ck_assert_msg(in_worker(import_fails_worker, (void *)"test.py_imports_missing", msg, sizeof(msg)) == 0,
		      "%s", msg);
	want = fs_printf("%d %d ", VS_ESCHEMA, MLA_EINVAL);
	ck_assert_msg(!strncmp(msg, want, strlen(want)), "%s", msg);
	ck_assert_msg(strstr(msg, ": import: ModuleNotFoundError: No module named 'vs_no_such_package'") &&
		      strstr(msg, "not found by the interpreter /usr/bin/python3 (sys.path: "), "%s", msg);
	ck_assert_msg(!strchr(msg, '\n'), "not one line: %s", msg);
	free(want);
	free(path);
}
END_TEST

START_TEST(module_edited_after_registration_is_refused_in_the_worker)
{
	const struct pyimpl *p = NULL;
	char *src = tu_source("tests/resources/python/raises_launch.py"), *copy = fs_printf("%s/k.py", tmp);
	char *text = tu_read(src, NULL), *edited = fs_printf("%s\n# edited\n", text), msg[4096];

	tu_write(copy, text, strlen(text));
	ck_assert_int_eq(pyimpl_register(&p, copy, "x86_64"), 0);
	tu_write(copy, edited, strlen(edited));
	ck_assert_msg(in_worker(import_fails_worker, (void *)"test.py_raises", msg, sizeof(msg)) == 0, "%s", msg);
	ck_assert_msg(strstr(msg, ": load: the file changed on disk since it was described"), "%s", msg);
	free(src);
	free(copy);
	free(text);
	free(edited);
}
END_TEST

/* Write text at tmp/rel (directories made); returns its sha256 in hex. */
static void put_file(char hex[65], const char *rel, const char *text)
{
	char *path = fs_join(tmp, rel), *dir = strdup(path);

	*strrchr(dir, '/') = '\0';
	ck_assert_int_eq(fs_mkdir_p(dir), 0);
	tu_write(path, text, strlen(text));
	if (hex)
		ck_assert_int_eq(fs_sha256_file(hex, path), 0);
	free(dir);
	free(path);
}

/*
 * raises_launch.py behind imports of helper files from its own directory: a sibling module, a
 * package in a subfolder and a module of a namespace package (no __init__.py, no file of its own);
 * written at tmp/rel with NAME name.
 */
static char *module_with_helpers(const char *rel, const char *name)
{
	char *src = tu_source("tests/resources/python/raises_launch.py"), *text = tu_read(src, NULL);
	char *at = strstr(text, "NAME = \"test.py_raises\""), *mod, *path = fs_join(tmp, rel);

	ck_assert_ptr_nonnull(at);
	mod = fs_printf("import mla_helpers\nimport sub.deep\nimport ns.leaf\n%.*sNAME = \"%s\"%s", (int)(at - text),
			text, name, at + strlen("NAME = \"test.py_raises\""));
	put_file(NULL, rel, mod);
	free(mod);
	free(text);
	free(src);
	return path;
}

START_TEST(describe_lists_helper_files_with_their_sha256)
{
	const char *want_paths[] = {"legacy.pyc", "mla_helpers.py", "ns/leaf.py", "sub/__init__.py", "sub/deep.py"};
	char want[5][65], *path, *cmd, *pyc, *mod, *text;
	struct pyimpl *p = NULL;
	cJSON *h;
	int k = 0;

	put_file(want[1], "mla_helpers.py", "SCALE = 1\n");
	put_file(want[2], "ns/leaf.py", "LEAF = 3\n");
	put_file(want[3], "sub/__init__.py", "\n");
	put_file(want[4], "sub/deep.py", "DEEP = 2\n");
	put_file(NULL, "unused.py", "raise RuntimeError('never imported')\n");
	/* A package of a venv inside the module's directory is installed code, not a helper. */
	put_file(NULL, ".venv/lib/python3/site-packages/vendored.py", "V = 1\n");
	/* A sourceless module: only its .pyc exists, and that file is hashed. */
	put_file(NULL, "legacy_src.py", "OLD = 4\n");
	pyc = fs_join(tmp, "legacy.pyc");
	cmd = fs_printf("/usr/bin/python3 -c 'import py_compile, sys; py_compile.compile(sys.argv[1], sys.argv[2])' "
			"%s/legacy_src.py %s",
			tmp, pyc);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(fs_sha256_file(want[0], pyc), 0);
	path = module_with_helpers("k.py", "test.py_helpers");
	text = tu_read(path, NULL);
	mod = fs_printf("import os, sys\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), "
			"'.venv/lib/python3/site-packages'))\nimport vendored\nimport legacy\n%s",
			text);
	tu_write(path, mod, strlen(mod));
	ck_assert_int_eq(pyimpl_describe(&p, path, "x86_64"), 0);
	h = cJSON_Parse(p->helpers_json);
	ck_assert_msg(cJSON_GetArraySize(h) == 5, "helpers: %s", p->helpers_json);
	for (const cJSON *e = h ? h->child : NULL; e; e = e->next, k++) {
		ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(e, "path")), want_paths[k]);
		ck_assert_str_eq(cJSON_GetStringValue(cJSON_GetObjectItem(e, "sha256")), want[k]);
	}
	cJSON_Delete(h);
	pyimpl_free(p);
	p = NULL;
	free(mod);
	free(text);
	free(cmd);
	free(pyc);
	/* A module without helpers: the empty list, not a missing field. */
	free(path);
	path = res("raises_launch.py");
	ck_assert_int_eq(pyimpl_describe(&p, path, "x86_64"), 0);
	ck_assert_str_eq(p->helpers_json, "[]");
	pyimpl_free(p);
	free(path);
}
END_TEST

START_TEST(helper_edited_after_registration_is_refused_in_the_worker)
{
	const struct pyimpl *p = NULL;
	char before[65], after[65], msg[4096], *path, *want;

	put_file(before, "mla_helpers.py", "SCALE = 1\n");
	put_file(NULL, "ns/leaf.py", "LEAF = 3\n");
	put_file(NULL, "sub/__init__.py", "\n");
	put_file(NULL, "sub/deep.py", "DEEP = 2\n");
	path = module_with_helpers("k.py", "test.py_helpers");
	ck_assert_int_eq(pyimpl_register(&p, path, "x86_64"), 0);
	put_file(after, "mla_helpers.py", "SCALE = 2\n");
	ck_assert_msg(in_worker(import_fails_worker, (void *)"test.py_helpers", msg, sizeof(msg)) == 0, "%s", msg);
	want = fs_printf("%d %d %s: load: helper 'mla_helpers.py' changed on disk since it was described (sha256 %s, "
			 "described %s)",
			 VS_ESCHEMA, MLA_EINVAL, p->real_path, after, before);
	ck_assert_msg(!strcmp(msg, want), "got:\n%s\nwanted:\n%s", msg, want);
	free(want);
	free(path);
}
END_TEST

static int start_worker(char *msg, size_t cap, void *arg)
{
	int err;

	(void)arg;
	err = pyimpl_start();
	snprintf(msg, cap, "%d %s", err, pyimpl_last_error());
	return 0;
}

/* Two modules of one directory importing the same helper: the second finds it loaded, and loads. */
START_TEST(helper_shared_by_two_modules_loads_both_in_the_worker)
{
	const struct pyimpl *p1 = NULL, *p2 = NULL;
	char msg[4096], *k1, *k2;

	put_file(NULL, "mla_helpers.py", "SCALE = 1\n");
	put_file(NULL, "ns/leaf.py", "LEAF = 3\n");
	put_file(NULL, "sub/__init__.py", "\n");
	put_file(NULL, "sub/deep.py", "DEEP = 2\n");
	k1 = module_with_helpers("k1.py", "test.py_helpers1");
	k2 = module_with_helpers("k2.py", "test.py_helpers2");
	ck_assert_int_eq(pyimpl_register(&p1, k1, "x86_64"), 0);
	ck_assert_int_eq(pyimpl_register(&p2, k2, "x86_64"), 0);
	ck_assert_str_eq(p1->helpers_json, p2->helpers_json);
	ck_assert_msg(in_worker(start_worker, NULL, msg, sizeof(msg)) == 0, "%s", msg);
	ck_assert_msg(!strcmp(msg, "0 "), "%s", msg);
	free(k1);
	free(k2);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("pyimpl");
	TCase *tc = tcase_create("pyimpl");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, describe_reports_declarations_configs_sha256_and_interpreter);
	tcase_add_loop_test(tc, bad_modules_are_refused_with_one_clear_line, 0, (int)(sizeof(bad) / sizeof(bad[0])));
	tcase_add_test(tc, missing_interpreter_is_named);
	tcase_add_test(tc, registered_proxy_answers_configs_and_supports_without_embedding);
	tcase_add_test(tc, ninth_module_is_refused);
	tcase_add_test(tc, numpy_module_passes_parity_in_a_forked_worker);
	tcase_add_test(tc, numpy_module_runs_the_sparse_form_as_cpu_naive);
	tcase_add_test(tc, exception_in_launch_is_one_line_with_the_kernel_frame);
	tcase_add_test(tc, wrong_module_fails_parity_with_the_worst_element);
	tcase_add_test(tc, writes_into_q_are_refused_or_visible);
	tcase_add_test(tc, import_error_in_the_worker_names_package_and_interpreter);
	tcase_add_test(tc, module_edited_after_registration_is_refused_in_the_worker);
	tcase_add_test(tc, describe_lists_helper_files_with_their_sha256);
	tcase_add_test(tc, helper_edited_after_registration_is_refused_in_the_worker);
	tcase_add_test(tc, helper_shared_by_two_modules_loads_both_in_the_worker);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tu_run_suite(suite());
}
