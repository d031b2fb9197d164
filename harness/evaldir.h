/*
 * evaldir.h - the eval dir: results/<card id>/<run id>/, the tool's evidence (docs/DESIGN.md "Evidence").
 *
 * One module owns the format: its layout (where eval dirs and the parts of a cluster run live), its
 * one writer (used by `--run` and `--merge`), the verdict, its one reader with every check
 * (`--record`, `--verify`, `--report`, `--publish` and `--merge` read through it), and the one
 * answer to "does this card claim what its evidence proves" (evidence_check_claims()).
 *
 * An eval dir holds
 *   plan.json                 the plan file that ran (byte copy)
 *   manifests/<task hash>.json the manifest of every task that ran (byte copies)
 *   samples.csv               every timed sample: task,set,pair,order,role,config,ms,checked
 *   run.log                   the run's log, tasks in plan order
 *   result.json               schema validate_skill.result/1, written last: the sha256 of plan.json,
 *                             samples.csv, run.log and every manifest copy, the per-task outcomes,
 *                             overall numbers, gates and verdict
 * and is accepted as evidence only when every file it binds verifies: the recorded sha256s match;
 * the card hash in result.json equals the card's current hash (front matter without `validation`,
 * plus body); the plan copy names the same card and tasks; and the speedups recomputed from
 * samples.csv with the plan's bootstrap seed equal the ones result.json reports (a hand-edited
 * number does not verify).
 *
 * A part (one plan task of a run spread over a cluster: `--run PLAN --part I --run-id RUN`) is an
 * eval dir at results/<card>/.parts/<RUN>/<I>/; `--merge` joins parts into one eval dir.
 */
#ifndef VS_EVALDIR_H
#define VS_EVALDIR_H

#include <stdio.h>

#include "card.h"
#include "device.h"
#include "measure.h"
#include "plan.h"

struct cJSON;

#define VS_RESULT_SCHEMA "validate_skill.result/1"

/* ---- layout ----------------------------------------------------------------------------------- */

/** results_root/card_id: where a card's eval dirs live (malloc'd; NULL on out of memory). */
char *evaldir_card_dir(const char *results_root, const char *card_id);

/** results_root/card_id/.parts: where the parts of a card's cluster runs live (malloc'd or NULL). */
/**
 * Take the lock of a card's results (flock on results/<card>/.lock, which then names this process:
 * "pid N, started T"), held until evaldir_unlock(*fd). A second --run of the card is refused with
 * VS_EIO and one line naming the holder. Errors: VS_EIO, VS_ENOMEM.
 */
int evaldir_lock(int *fd, const char *results_root, const char *card_id);

/** Release a lock taken by evaldir_lock() (accepts -1). */
void evaldir_unlock(int fd);

char *evaldir_parts_root(const char *results_root, const char *card_id);

/**
 * results_root/card_id/.debug: where the eval dirs of filtered runs (--task, --impl, --config) live,
 * apart from the evidence: never picked by evaldir_latest(), removed by evaldir_gc() (malloc'd or NULL).
 */
char *evaldir_debug_root(const char *results_root, const char *card_id);

/**
 * Create a new, empty eval dir (with manifests/) for a run of card_id, under the card's debug root
 * when debug (a filtered run); *out (malloc'd) names it. run_id NULL: <UTC stamp>-<arch>; a name
 * taken gets -2, -3, ... Every evaldir_create_*() leaves the marker .writer.tmp.<pid> in the dir,
 * which evaldir_writer_commit() removes after result.json. Errors: VS_ENOMEM, VS_EIO.
 */
int evaldir_create_run(char **out, const char *results_root, const char *card_id, const char *run_id, const char *arch,
		       int debug);

/**
 * Create the part dir results_root/card_id/.parts/run_id/<index as %04d> (with manifests/),
 * replacing one there (a requeued array task runs again). Errors: VS_ENOMEM, VS_EIO.
 */
int evaldir_create_part(char **out, const char *results_root, const char *card_id, const char *run_id, int index);

/**
 * Create the merged eval dir results_root/card_id/run_id (run_id NULL: <UTC stamp>-<gen>-merged),
 * which must not exist yet. Errors: VS_EUSAGE (it exists), VS_ENOMEM, VS_EIO.
 */
int evaldir_create_merged(char **out, const char *results_root, const char *card_id, const char *run_id,
			  const char *gen);

/** The newer eval dirs evaldir_latest() passed over. */
struct evaldir_skipped {
	int unfinished; /* no result.json: an interrupted run's stub, or a run still going */
	int partial;    /* a partial (filtered) run's result */
};

/**
 * The newest complete eval dir of a card: results_root/card_id/<run id> with the greatest name
 * (UTC stamps sort) whose result.json exists and is not partial; *out malloc'd; skipped (may be
 * NULL) counts the newer ones passed over. Errors: VS_ENOTFOUND (none), VS_ENOMEM.
 */
int evaldir_latest(char **out, struct evaldir_skipped *skipped, const char *results_root, const char *card_id);

/** One complete eval dir of a card, as its result.json says (not verified: a listing). */
struct evaldir_run {
	char *dir;                    /* the eval dir (malloc'd) */
	char *name;                   /* its last component, the run id (malloc'd) */
	char *verdict, *device, *gen; /* malloc'd */
	char *baseline, *candidate;   /* the implementations measured (malloc'd) */
	char *finished;               /* when the run ended, ISO 8601 UTC (malloc'd) */
	char *workload;               /* a workload plan's workload id, "" for a tier plan (malloc'd) */
	int has_isolated;             /* the overall speedup and its 95% CI */
	double isolated, isolated_lo, isolated_hi;
};

/**
 * The complete eval dirs (result.json, not partial) of the directory card_dir (results/<card id>),
 * newest first (by the time each finished, then by run id), read without verifying them: what `--record` lists beside
 * the run it records. *out (free with evaldir_runs_free()) and *n. Errors: VS_ENOMEM.
 */
int evaldir_runs(struct evaldir_run **out, int *n, const char *card_dir);
void evaldir_runs_free(struct evaldir_run *runs, int n);

/**
 * `--gc` of the eval dirs under results_root: removes every eval dir of results/<card>/ without a
 * result.json whose writer is gone (the stub of an interrupted run), and every finished debug run
 * under results/<card>/.debug/; an eval dir whose writer lives is kept. Prints one line per removal;
 * *removed counts them. Errors: VS_ENOMEM, VS_EIO.
 */
int evaldir_gc(const char *results_root, int *removed);

/**
 * The part dirs named by dirs: each a part (holds result.json) or a directory of parts (sorted by
 * name). *out (an array of malloc'd paths, free each and the array) and *n are appended to.
 * Errors: VS_ENOTFOUND (a DIR holds no part), VS_ENOMEM.
 */
int evaldir_find_parts(char ***out, int *n, const char *const *dirs, int ndirs);

/* ---- the writer ------------------------------------------------------------------------------- */

/** What result.json says about the run before its tasks (its head). Every pointer is borrowed. */
struct evaldir_head {
	const struct plan *plan;
	const char *plan_path; /* as given to --run */
	const char *plan_sha256;
	const struct vs_device_info *device;
	const struct cJSON *copy_from;  /* --merge: "tool", "card", "plan", "device" copied from this
	                                * part's result.json instead of plan_path, plan_sha256, device */
	const char *started, *finished; /* ISO 8601 UTC */
	int partial;
	const char *task_filter, *impl_filter, *config_filter; /* recorded when partial */
	int scratch;                                           /* --scratch: recorded when partial */
	const char *plan_differs; /* recorded when partial: how the plan differs from what its card plans */
	int has_part;             /* recorded when partial: this is part part_index of run_id */
	const char *run_id;
	int part_index;
	const char *const *merged_from; /* --merge: the part dirs joined */
	int nmerged;
	const char *py_versions; /* the package versions a worker's embedded interpreter saw
	                               * (compact JSON), or NULL */
};

/**
 * An eval dir being written. The caller writes samples rows to samples and log lines to log;
 * everything is held in memory and written by evaldir_writer_commit(), result.json last, so that
 * an eval dir with a result.json is complete.
 */
struct evaldir_writer {
	char *dir;           /* owned */
	FILE *samples, *log; /* memory streams; samples starts with the header row */
	struct cJSON *root;  /* result.json being built (owned) */
	struct cJSON *tasks, *flags, *manifests;
	int oom; /* sticky: a JSON item could not be created */
	char *samples_buf, *log_buf;
	size_t samples_len, log_len;
};

/**
 * Physical limits (docs/DESIGN.md "Physical limits"): push onto flags one line for each
 * implementation timed on task r (of plan p) whose counted bytes per second exceed device's
 * "read_gbps" (result.json's device object: the run's read sweep) by more than 5% (the sweep's own
 * noise), or whose FLOP rate exceeds vs_device_peak_tflops() of device's "gen" for the task's cache
 * dtype: work this count does not see was done elsewhere (data served from a cache) or skipped.
 * Nothing without a complete task, a read_gbps or a known peak. *oom is set when out of memory.
 */
void evaldir_limit_flags(int *oom, struct cJSON *flags, const struct measure_result *r, const struct plan *p,
			 const struct cJSON *device);

/** Start writing the eval dir dir (created by an evaldir_create_*()). Errors: VS_ENOMEM. */
int evaldir_writer_init(struct evaldir_writer *w, const char *dir);

/**
 * Write manifests/<hash>.json (text, len bytes) and record its sha256 (once per hash); hex (may be
 * NULL) receives it. Errors: VS_ENOMEM, VS_EIO.
 */
int evaldir_writer_manifest(struct evaldir_writer *w, const char *hash, const char *text, size_t len, char hex[65]);

/** Begin result.json with h (schema, tool, card, plan, device, times, filters). Errors: VS_ENOMEM. */
int evaldir_writer_head(struct evaldir_writer *w, const struct evaldir_head *h);

/** Append one task's outcome (and its flags: review bound, clock changes). Errors: VS_ENOMEM. */
int evaldir_writer_task(struct evaldir_writer *w, const struct measure_result *r, const struct plan *p);

/** --merge: append a copy of a part's task object and of its flags. Errors: VS_ENOMEM. */
int evaldir_writer_task_copy(struct evaldir_writer *w, const struct cJSON *task, const struct cJSON *flags);

/** A reference's outcome on one task (result.json's tasks[].references[].status). */
enum evaldir_ref_status {
	EVALDIR_REF_NOT_TIMED = 0, /* "not timed": the task stopped before its rounds, or a filtered run */
	EVALDIR_REF_TIMED = 1,     /* "timed": parity, capture and timed checks passed; its ratio holds */
	EVALDIR_REF_SKIPPED = 2,   /* "skipped": the plan says it does not run the task (with the reason) */
	EVALDIR_REF_FAILED = 3,    /* "failed": no config passed parity, the capture gate or a timed check */
};

/** The status of reference outcome rf, and its name in result.json. */
int evaldir_ref_status(const struct measure_ref *rf);
const char *evaldir_ref_status_name(int status);

/** The inverse of evaldir_ref_status_name() (an unknown name gives EVALDIR_REF_NOT_TIMED). */
int evaldir_ref_status_parse(const char *name);

/** One task's outcome as the overall numbers and gates need it (the runner's and --merge's). */
struct evaldir_task_summary {
	int complete, parity_pass;
	int base_capture, cand_capture; /* 1 pass, 0 fail, -1 not applicable */
	const double *t_base, *t_cand;  /* [npairs] ms */
	int npairs;
	int ref_status[VS_PLAN_MAX_REFERENCES];      /* enum evaldir_ref_status of the plan's references */
	const double *t_ref[VS_PLAN_MAX_REFERENCES]; /* [npairs] ms when EVALDIR_REF_TIMED, else NULL */
	int dtype;                                   /* the task's data-type class (op.h dtype) */
	const char *skipped;                         /* why the task was not run (an implementation does not
	                                 * support it), or NULL: not run is not passed */
	const struct measure_e2e *e2e;               /* its e2e stage (planned 0 or NULL: none) */
	const char *name;                            /* the task's name (the plan's) */
	double weight;                               /* its workload weight (plan_workload), 0 in a tier plan */
	int concurrency; /* the concurrency it stands for (plan_workload), 0 in a tier plan */
};

/**
 * Add the overall numbers, gates, flags and verdict (evaldir_verdict()) of n task outcomes of plan
 * p to the result. line (may be NULL) receives the one-line summary. Errors: VS_ENOMEM.
 */
int evaldir_writer_verdict(struct evaldir_writer *w, const struct plan *p, const struct evaldir_task_summary *t, int n,
			   int partial, char *line, size_t cap);

/**
 * Write plan.json (plan_text), samples.csv, run.log and the manifest list, each with its sha256
 * into result.json, then result.json itself. The log is closed here: write its last lines before.
 * Errors: VS_ENOMEM (also when any JSON item could not be created), VS_EIO.
 */
int evaldir_writer_commit(struct evaldir_writer *w, const char *plan_text, size_t plan_len);

/** Free what w holds (the files written stay); accepts a zeroed w. */
void evaldir_writer_release(struct evaldir_writer *w);

/**
 * Add "overall" (geometric-mean speedup with its joint bootstrap CI), "references" (when the plan
 * has references: per reference the geometric mean over the tasks it was timed on of its ratio
 * t_ref / t_cand, with the joint CI; never a gate), "gates", "flags" (takes
 * ownership of flags; NULL for none) and "verdict" to a result.json object, from n task outcomes
 * of plan p. A workload plan adds overall.workload (the workload speedup, per_concurrency,
 * per_kv_dtype, time_share) and gates on it; with several kv dtypes on each dtype's workload speedup
 * (docs/DESIGN.md "Per KV dtype"). line (may be NULL) receives the summary: one line, or with
 * several kv dtypes one line per dtype before it ('\n'-separated). Returns 0 or VS_ENOMEM.
 */
int evaldir_verdict(struct cJSON *root, const struct plan *p, const struct evaldir_task_summary *t, int n, int partial,
		    struct cJSON *flags, char *line, size_t cap);

/**
 * The one-line summary of reference k in a result.json object root that evaldir_verdict() filled:
 * its overall ratio t_ref / t_cand with the CI and task counts. Returns 0, or VS_ENOTFOUND when
 * root has no reference k.
 */
int evaldir_reference_line(char *line, size_t cap, const struct cJSON *root, int k);

/** result.json's "tool" object: version, git head, kernels tree and dirty flag of this build (or NULL). */
struct cJSON *evaldir_tool_json(void);

/** result.json's "plugins" array: role, impl, path and sha256 of every plugin the plan names (or NULL). */
struct cJSON *evaldir_plugins_json(const struct plan *p);

/**
 * result.json's "python" array: role, impl, path, sha256, the interpreter that ran (interpreter,
 * executable, libpython: this process's registration, else the plan's), the
 * versions the plan recorded ("planned_versions") and those seen at run time ("versions", from
 * run_versions, compact JSON; NULL: the plan's) of every Python implementation the plan names (or
 * NULL when out of memory).
 */
struct cJSON *evaldir_python_json(const struct plan *p, const char *run_versions);

/* ---- the reader ------------------------------------------------------------------------------- */

/** What an eval dir proves, once verified. */
struct evidence {
	char *eval_dir;          /* as given */
	struct cJSON *result;    /* parsed result.json (owned) */
	const char *verdict;     /* "validated" / "failed" (points into result) */
	const char *device_name; /* "NVIDIA H200" */
	const char *gen;         /* "sm_90" */
	const char *model;
	const char *kernels_tree;
	int kernels_dirty;
	int partial;
	int has_isolated;
	double isolated; /* overall geomean speedup estimate */
	double isolated_lo, isolated_hi;
	const char *parity;                    /* "pass" / "fail" */
	const char *baseline, *candidate;      /* the implementations measured */
	int family_baseline, family_candidate; /* the card names a family there (record the name) */
	char date[11];                         /* YYYY-MM-DD of the run's end (UTC) */
	const char *workload; /* a workload plan's workload id (points into result), NULL for a tier plan */
	int has_workload;     /* the workload speedup below is set (some task was timed) */
	double workload_speedup, workload_lo, workload_hi;
	/*
	 * A workload plan of several kv dtypes: the workload speedup of each timed kv dtype
	 * (overall.workload.per_kv_dtype, plan order; kv_dtype points into result); nkv 0 with one kv
	 * dtype and in evidence written before per_kv_dtype.
	 */
	struct {
		const char *kv_dtype;
		double speedup, lo, hi;
	} kv[CARD_MAX_KV_DTYPES];
	int nkv;
	int has_e2e;                    /* the plan had an e2e stage and some task was timed */
	double e2e_pct, e2e_lo, e2e_hi; /* overall e2e_pct (geomean step-time ratio) and CI */
	char result_sha256[65];
};

/** Problems found by evidence_load(), most severe first. */
enum evidence_status {
	EVIDENCE_OK = 0,
	EVIDENCE_STALE_CARD = 1, /* the card's content changed after the run */
	EVIDENCE_MISSING = 2,    /* no eval dir / no result.json */
	EVIDENCE_MISMATCH = 3,   /* files do not match their hashes, numbers do not recompute */
};

/**
 * Load and verify the eval dir dir against card c. Returns 0 and fills *e when everything
 * verifies; otherwise returns a negative error (VS_EVERIFY, VS_EIO, VS_EPARSE) with a one-line
 * message naming the file and what differs, and sets *status (when non-NULL) to the class of the
 * problem. *e is filled as far as it got (release it either way).
 */
int evidence_load(struct evidence *e, int *status, const char *dir, const struct card *c);

void evidence_release(struct evidence *e);

/**
 * --configs-from: pin, on every task of plan p that the run in eval dir dir measured, each role's
 * config chosen there (the same implementation in any role of that run; plan_pin()), and name the
 * run (plan_pins_source()). dir must verify as evidence of card c (a card edited since only warns;
 * the plugin and Python files that ran need not be those present now: a pin is a config's name)
 * and be of p's gen. Errors: VS_EVERIFY (dir does not verify), VS_EUSAGE (another gen),
 * VS_ENOTFOUND (a chosen config no longer in its implementation's space, naming the task; or no
 * task of p has a chosen config there), VS_ENOMEM.
 */
int evaldir_pin_configs(struct plan *p, const struct card *c, const char *dir);

/**
 * The workload record (card.h) a workload plan's evidence e proves: key "<workload>@<gen>" written
 * into key (key_cap bytes), the workload speedup and the geomean to three decimals; strings point
 * into e, key or static storage.
 */
void evidence_workload_record(struct card_workload_record *r, char *key, size_t key_cap, const struct evidence *e,
			      const char *artifact);

/**
 * Does the record have claim what its (verified) evidence e proves (evidence_check_claims() for a
 * validation.workloads entry)? Returns the number of problems, the first one's message in why (may
 * be NULL, each problem also reported with vs_error when why is NULL).
 */
int evidence_check_workload_claims(const struct card_workload_record *have, const struct evidence *e,
				   const char *card_path, char *why, size_t why_cap);

/** The validation values an evidence proves for card c (strings point into e or static storage). */
void evidence_validation(struct card_validation *v, const struct evidence *e, const char *artifact);

/**
 * Does the card claim what its (verified) evidence e proves? The one answer of `--verify` and
 * `--report`. Checked: validation.status, last_verified, gpu, gen, model, measured.parity and
 * measured.isolated (to the card's three decimals) equal what e proves, and a `validated` status
 * comes from a clean build (kernels_dirty false). Not checked here, by choice: whether kernels/ of
 * the checkout now is the tree that ran, and the evidence's age: those say the evidence is stale
 * (`--report` shows it so), not that the card claims something its evidence does not prove.
 * Every problem is reported with vs_error(VS_EVERIFY, ...) naming card_path (silence it with
 * vs_error_set_quiet()); why (may be NULL) receives the first one in short ("validation.gen
 * differs from the evidence"). Returns the number of problems (0: the claims hold).
 */
int evidence_check_claims(const struct card_validation *have, const struct evidence *e, const char *card_path,
			  char *why, size_t why_cap);

/** The paired samples of one task, as samples.csv holds them. */
struct sample_pairs {
	char hash[65];
	double *base, *cand;                 /* [n] ms, pair by pair */
	double *ref[VS_PLAN_MAX_REFERENCES]; /* [n] ms of role reference<k+1>, NULL when it has no samples */
	int n, cap;
	double *e2e[3]; /* [e2e_n] step ms of roles e2e_baseline, e2e_candidate, e2e_control, or NULL */
	int e2e_n, e2e_cap;
};

/**
 * Parse samples.csv text into per-task pairs, tasks in order of first appearance; *out (free with
 * samples_free) and *count set only on success. Roles: baseline, candidate, reference1..4 (a
 * reference's samples, when it has any, cover every pair of its task), and the e2e stage's
 * e2e_baseline, e2e_candidate, e2e_control (their own pairs, all three in every pair). Errors: VS_EVERIFY naming
 * path:line.
 */
int samples_parse(struct sample_pairs **out, int *count, const char *text, const char *path);

void samples_free(struct sample_pairs *tp, int n);

/**
 * A task's e2e outcome rebuilt from its result.json object and its samples (--merge): planned,
 * status, parity and the e2e samples (copied; release with measure_e2e_release()). Nothing is set
 * when the task has no e2e section. Errors: VS_ENOMEM.
 */
int evaldir_e2e_from_task(struct measure_e2e *m, const struct cJSON *task, const struct sample_pairs *sp);

/** A part of a cluster run, loaded and checked by evaldir_part_load(). */
struct evaldir_part {
	char *dir;
	struct cJSON *result; /* parsed result.json (owned) */
	char *samples;        /* samples.csv text */
	char *log;            /* run.log text */
};

/**
 * Load the part at dir: result.json parsed with the duplicate-key check, its schema, a part not
 * filtered by --impl/--config, and the checks of evidence_load() that need no card: every file it
 * binds matching its sha256, the plugins that ran unchanged, the plan copy holding its tasks, every
 * speedup recomputing from samples.csv. Errors: VS_EVERIFY, VS_EUSAGE (filtered), VS_EPARSE, VS_EIO.
 */
int evaldir_part_load(struct evaldir_part *pt, const char *dir);

void evaldir_part_release(struct evaldir_part *pt);

#endif /* VS_EVALDIR_H */
