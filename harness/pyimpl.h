/*
 * pyimpl.h - MLA decode implementations written in Python (one .py module file = one
 * implementation), presented to the harness as struct mla_decode_impl of kernels/mla_decode.h.
 *
 * The Python side of the contract (NAME, BACKEND, KV_DTYPES, SUMMARY, configs(arch), supports(),
 * workspace_size(), prepare(), launch(), the shapes and dtypes of `args`) is written once, in
 * kernels/python/mla_decode.py, which is also the shim this bridge drives.
 *
 * Process model (issue 9): the parent process never initializes Python nor a GPU context.
 *   - pyimpl_describe() runs the interpreter as a subprocess,
 *     `$VS_PYTHON kernels/python/mla_decode.py describe FILE.py ARCH`, and reads the one JSON
 *     object it prints: name, backend, configs for ARCH, sha256, the helper files its import
 *     loaded from its own directory with their sha256, versions, and what an embedding process
 *     needs to become that interpreter (executable, sys.path, the path of libpython).
 *   - pyimpl_register() describes a module and registers a proxy descriptor in this process's
 *     registry (before the fork): configs come from the description; supports() is answered by
 *     the module's FORMS (a sparse task, topk > 0, only to a module declaring "sparse") and
 *     KV_DTYPES and, when it defines supports(), by one co-process per module
 *     (`mla_decode.py serve FILE.py`: a shape json per line in, an answer per line out; answers
 *     cached; a one-shot `supports` subprocess if it fails); configs(arch) for another arch than
 *     the described one runs a describe for that arch;
 *     launch() and prepare() return MLA_ENODEVICE until pyimpl_start().
 *   - pyimpl_start(), in the worker after the fork, dlopen()s the recorded libpython with
 *     RTLD_GLOBAL (extension modules such as numpy and torch resolve libpython's symbols
 *     globally), Py_InitializeEx(0) (no signal handlers: SIGINT stays the harness's), sets
 *     sys.executable, sys.prefix and sys.path to the described interpreter's (so that a venv such
 *     as /opt/torch/.venv/bin/python3 works), imports the shim, loads every registered module
 *     (its bytes and its helper files' bytes must still be those described) and switches the
 *     proxies to the embedded calls.
 *
 * The interpreter: $VS_PYTHON names it (a path, or a command searched on PATH); default "python3".
 * The shim: $VS_PYSHIM, default the checkout's kernels/python/mla_decode.py (fixed at build time).
 *
 * Why dlopen and function pointers, not a link against libpython: the C API is called only through
 * a small table of functions obtained with dlsym(), all of the stable ABI (Py_InitializeEx,
 * PyImport_ImportModule, PyObject_GetAttrString, PyObject_CallObject, Py_BuildValue, PyLong_*,
 * PyUnicode_AsUTF8AndSize, PyErr_*, PyGILState_*, Py_DecRef ...), no macro that reads an object's
 * layout. So the build needs no Python headers and one binary serves any CPython >= 3.10 chosen at
 * run time: Debian's 3.11 in CI and the venv's 3.12 on the GPU machine, from one checkout.
 *
 * The ABI's callbacks carry no context pointer: each module gets one of PYIMPL_MAX_MODULES slots
 * of fixed trampolines; one more module is refused with one line.
 *
 * Errors: every Python error, of the kernel or of the bridge, is one line (module file, function,
 * exception type and message, innermost frame in the kernel file; an import error names the missing
 * package and the interpreter with its sys.path). The callbacks return an enum mla_status
 * (MLA_EDEVICE for an exception in prepare/launch, MLA_EINVAL for a bad return value) and keep the
 * line for pyimpl_last_error(); nothing aborts.
 */
#ifndef VS_PYIMPL_H
#define VS_PYIMPL_H

#include "fsutil.h"
#include "mla_decode.h"

#include <stdio.h>

/** The forms of the operator a module declares in FORMS (struct pyimpl's forms). */
#define PYIMPL_FORM_DENSE 1  /* paged cache through block_table and seqlens */
#define PYIMPL_FORM_SPARSE 2 /* DeepSeek Sparse Attention: top-k indices (kernels/mla_decode.h ABI 3) */

/** Modules one process can register (trampoline slots). */
#define PYIMPL_MAX_MODULES 8

/** One described Python implementation. */
struct pyimpl {
	char *path;                 /* as given (what plans record) */
	char *real_path;            /* canonical path (the describe step's) */
	char sha256[FS_SHA256_HEX]; /* of the file's bytes when described */
	char *helpers_json;         /* its helper files when described: [{"path", "sha256"}] (compact
	                             * JSON; paths relative to the module's directory; "[]" when none) */
	char *name;                 /* NAME */
	char *py_backend;           /* BACKEND as declared: "cuda", "hip" or "cpu" */
	char *backend;              /* the harness's backend: "cpu", or "hip" for cuda and hip */
	char *summary;
	char *arch; /* the arch configs were described for */
	struct mla_decode_config *configs;
	int nconfigs;
	int kv_dtypes; /* bit (1 << enum mla_kv_dtype) per declared KV dtype */
	int forms;     /* PYIMPL_FORM_* per declared form (FORMS; "dense" alone when not declared) */
	int has_supports, has_prepare, has_workspace_size;
	char *interpreter;           /* the command run ($VS_PYTHON or "python3") */
	char *executable;            /* its sys.executable */
	char *libpython;             /* shared libpython to dlopen in the worker ("" when none) */
	char *versions_json;         /* {"python": "3.11.2", "numpy": "1.24.2", ...} (compact JSON) */
	char *describe_json;         /* the whole description (compact JSON) */
	struct mla_decode_impl impl; /* the proxy descriptor (registered by pyimpl_register) */
	int slot;                    /* trampoline slot, -1 when not registered */
};

/**
 * Describe the module at path for arch with a subprocess of the interpreter ($VS_PYTHON). *out is
 * set only on success and owned by the caller (pyimpl_free). Errors, one line each naming the
 * file: VS_ENOTFOUND (no such file, or no interpreter), VS_ESCHEMA (the module fails to import or
 * breaks the contract: the shim's line is quoted), VS_EPARSE (the shim's output is not the JSON
 * expected), VS_EIO, VS_ENOMEM.
 */
int pyimpl_describe(struct pyimpl **out, const char *path, const char *arch);

/** Free a description that was not registered (NULL accepted). */
void pyimpl_free(struct pyimpl *p);

/**
 * Describe the module and register its proxy implementation in this process (call before any
 * fork). Registering the same file again returns the one already registered (VS_EVERIFY if its
 * bytes changed since). *out points into the process-wide table, valid until exit. Errors: those of
 * pyimpl_describe(), VS_EUSAGE (the name is taken by a built-in, a plugin or another module),
 * VS_EUNSUPPORTED (more than PYIMPL_MAX_MODULES modules).
 */
int pyimpl_register(const struct pyimpl **out, const char *path, const char *arch);

/** The registered Python implementation called name, or NULL. */
const struct pyimpl *pyimpl_for_impl(const char *name);

/** Registered modules, in order of registration; NULL past the end. */
const struct pyimpl *pyimpl_at(int i);

/**
 * In the worker (after the fork): start the embedded interpreter of the registered modules and load
 * them. Every module that loads runs from then on; one that fails to import answers each call with
 * its import line. Returns 0 when the interpreter started and every module loaded; VS_EUNSUPPORTED
 * when registered modules were described by different interpreters; VS_EIO when libpython cannot
 * be opened or lacks a function; VS_ESCHEMA for the first module that failed to load (the others
 * still load). Idempotent; 0 with nothing registered.
 */
int pyimpl_start(void);

/** Whether pyimpl_start() initialized the interpreter in this process. */
int pyimpl_started(void);

/** The last error line of a Python call in this process ("" when none). */
const char *pyimpl_last_error(void);

/**
 * The package versions the embedded interpreter reports now (after the modules' imports), compact
 * JSON malloc'd, or NULL when not started. Compare with the plan's versions_json.
 */
char *pyimpl_versions_now(void);

/**
 * In the worker, after the run: the line naming a helper file that was imported under a loaded
 * module's directory after that module's load (lazily, inside prepare() or launch()), so that no
 * hash of the plan covers it (malloc'd), or NULL when there is none or Python is not started.
 */
char *pyimpl_helpers_late(void);

/** The interpreter command the bridge runs: $VS_PYTHON, or "python3". */
const char *pyimpl_interpreter(void);

/*
 * The e2e step module (docs/DESIGN.md "End to end"; contract kernels/python/e2e_step.py): one per
 * process, described in the parent by `$VS_PYTHON kernels/python/e2e_step.py describe FILE.py`
 * (the bridge beside the shim; $VS_PYSTEP overrides its path), started in the worker by
 * pyimpl_start() with the same interpreter as the Python implementations (or alone, for a C core
 * such as hip.flash). Its struct pyimpl holds name, backend, summary, paths, sha256, interpreter
 * and versions; has_prepare there means "defines reference()"; it has no configs.
 */

/**
 * Describe the step module at path and keep it as this process's step module (before any fork).
 * Registering the same file again returns the one kept; another file is VS_EUSAGE. Errors as
 * pyimpl_describe() (VS_ENOTFOUND, VS_ESCHEMA with the bridge's line, VS_EPARSE), VS_EVERIFY.
 */
int pyimpl_step_register(const struct pyimpl **out, const char *path);

/** The registered step module, or NULL. */
const struct pyimpl *pyimpl_step(void);

/**
 * In the worker: the elements of the step output for the task of a (the step's output_shape()),
 * or an enum mla_status: MLA_EUNSUPPORTED when its supports() refuses the task (the reason in
 * pyimpl_last_error()), MLA_ENODEVICE when not started, MLA_EDEVICE/MLA_EINVAL on an error line.
 */
int pyimpl_step_elems(size_t *elems, const struct mla_decode_args *a);

/**
 * In the worker: the step's fn ("prepare", "pre" or "post") on the core's buffers a and the step
 * output step_out (elems bf16, the harness's buffer) for the task's seed. *ret (may be NULL): what
 * prepare answered (the bytes the step keeps). Returns MLA_OK or a status with the line in
 * pyimpl_last_error().
 */
int pyimpl_step_call(long long *ret, const char *fn, const struct mla_decode_args *a, void *step_out, size_t elems,
		     uint64_t seed);

/**
 * In the worker: the step module's reference() (float32, elems) into host. Returns 1 when written,
 * 0 when the module has none, or a negative status with the line in pyimpl_last_error().
 */
int pyimpl_step_reference(float *host, const struct mla_decode_args *a, const void *step_out, size_t elems,
			  uint64_t seed);

/**
 * In the worker: the peak bytes the step's framework allocated (torch's allocator) since the last
 * reset, resetting it when reset is non-zero; -1 where unknown (the cpu backend).
 */
long long pyimpl_step_memory(int reset);

/*
 * Autotuned kernels (docs/DESIGN.md "Autotuned kernels", issue 41): the description's "autotune"
 * list (kernels/python/mla_decode.py describe_autotune(): per @triton.autotune of the module, its
 * kernel, key, configs and pruning), each config compiled ahead for the plan's generation at
 * --emit-plan (tools/gpu/triton_autotune_fit.py), and in the worker what each autotuner did (its
 * benchmarks by phase, inside a graph capture, inside a timed launch, the configs it dropped).
 */

/** The phases of a task the worker tells the shim about (kernels/python/mla_decode.py AUTOTUNE_PHASES). */
enum pyimpl_phase {
	PYIMPL_PHASE_NONE = 0,
	PYIMPL_PHASE_PARITY = 1,
	PYIMPL_PHASE_TUNING = 2,
	PYIMPL_PHASE_CAPTURE = 3,
	PYIMPL_PHASE_AB = 4,
	PYIMPL_PHASE_E2E = 5,
};

/**
 * In the worker: the phase of the task from now on (enum pyimpl_phase), and (timed) whether a
 * timed launch is in progress (-1 for either: leave it). Two ints the shim reads when an autotuner benchmarks: no Python call,
 * no cost; a no-op before pyimpl_start() (the values are kept for it).
 */
void pyimpl_phase(int phase, int timed);

/**
 * In the worker, after the task: what every autotuner of the loaded modules did (compact JSON list,
 * malloc'd: [{"impl", "kernel", "runs", "tunings", "benchmarks", "by_phase", "in_capture", "timed",
 * "dropped": [{"config", "why"}], "chosen", "tuning_log"}]), or NULL when no module has one or
 * Python is not started.
 */
char *pyimpl_autotune_now(void);

/**
 * The lines run.log shows for a pyimpl_autotune_now() list (each indented by four spaces):
 * "autotune KERNEL (IMPL): benchmarked N configs in T tunings (parity 3), ..." and one line per
 * dropped config and per benchmark made inside a graph capture or a timed launch. Nothing for NULL.
 */
void pyimpl_autotune_log(FILE *f, const char *json);

/**
 * Of a pyimpl_autotune_now() list: the number of config benchmarks made inside timed launches, and
 * the first such kernel's "KERNEL (IMPL)" into who (cap bytes); 0 for NULL.
 */
int pyimpl_autotune_timed(const char *json, char *who, size_t cap);

/**
 * At --emit-plan: compile each config of every autotuner listed in the plan's "python" object
 * (*python_json, compact JSON, replaced) for gen with tools/gpu/triton_autotune_fit.py, run by the
 * describing interpreter when it has Triton, else by $VS_TRITON_PYTHON or the source tree's
 * .venv-triton; each autotune entry gets "ahead": {"gen", "checked", "why", "triton"} and each
 * config "ahead": {"fits", "shared", "why"}. Where it cannot be checked (no Triton, a generation
 * Triton has no target for, a kernel without AUTOTUNE_SIGNATURES) the entry says why; never an
 * error but VS_ENOMEM. module is the module's path. Nothing to do without an "autotune" list.
 */
int pyimpl_autotune_fit(char **python_json, const char *module, const char *gen);

/**
 * The --emit-plan summary lines of a plan's "python" object (NULL accepted): per autotuner
 * "ROLE autotune KERNEL: N configs, key (A, B); pruned by ...", then one line per config checked
 * ahead (fits, or what the autotuner would prune and why), or why none was.
 */
void pyimpl_autotune_summary(FILE *f, const char *role, const char *python_json);

/**
 * Plan reading: the plan's "autotune" list (in python_json; a plan without one passes) against the
 * description now: the same kernels with the same config labels, or VS_EVERIFY with one line
 * naming who, the kernel and what differs.
 */
int pyimpl_autotune_check(const char *python_json, const struct pyimpl *py, const char *who);

#endif /* VS_PYIMPL_H */
