/*
 * plan.h - the reviewable plan of a card's validation: plans/<card id>.plan.json.
 *
 * A plan fixes, before any run: the tasks (task specs over a shape grid chosen by tier, from the
 * card's dtypes and regimes), the baseline and candidate implementations with their config spaces
 * for the target generation, tolerances (inside each task spec), the measurement protocol and the
 * gates (card's isolated_speedup_min, parity, capture safety). Same card and options give a
 * byte-identical plan (no clocks, no paths outside the repository, stable key order), but for what
 * a Python implementation's plan records by design: the interpreter ($VS_PYTHON), its executable
 * and libpython, the package versions, and the path of a module outside the repository.
 *
 * Python implementations (pyimpl.h): a plan names one by a shipped name (plan_shipped_python) or a
 * --baseline-lib/--candidate-lib FILE.py; building or reading the plan registers the module (a
 * describe subprocess; the parent never starts Python). Module paths are stored relative to the
 * repository root (the checkout this binary was built from) when the file lies in it, and read
 * back against that root; reading refuses a module whose sha256 differs from the plan's before any
 * interpreter runs.
 */
#ifndef VS_PLAN_H
#define VS_PLAN_H

#include <stdint.h>
#include <stdio.h>

#include "mla_decode.h"
#include "task.h"

struct card;
struct cJSON;

#define VS_PLAN_SCHEMA "validate_skill.plan/1"

/** The measurement protocol (docs/DESIGN.md "Measurement protocol"). */
struct plan_protocol {
	int warmup;           /* untimed launches per implementation before sampling */
	int tuning_samples;   /* timed samples per candidate config in the tuning pass */
	int min_pairs;        /* A/B pairs before the stop rule may stop */
	int max_pairs;        /* cap on pairs */
	double max_seconds;   /* cap on sampling time per task */
	double rel_halfwidth; /* stop when the 95% CI of the speedup is within +- this (0.01) */
	int resamples;        /* bootstrap replicates for reported CIs */
	uint64_t seed;        /* bootstrap seed */
	int check_every;      /* check both timed outputs of every k-th A/B pair against the reference */
	double flush_factor;  /* LLC flush buffer size as a multiple of the LLC (>= 2) */
	double review_bound;  /* a speedup above this is flagged for review (10) */
	char timing[16];      /* the timed sample: "graph_replay" (GPU plans: the replay of a graph
	                        * holding one launch) or "launch" (CPU plans, or --timing launch: the
	                        * launch itself between two events / clock reads) */
};

/** One task an implementation does not run (its supports() said why): skipped, never passed. */
struct plan_skip {
	char hash[65]; /* the task's hash */
	char *reason;  /* supports()'s answer */
};

struct plan_impl {
	char *name;    /* "cpu.naive", "hip.flash", ... */
	char *backend; /* "cpu" or "hip" */
	struct mla_decode_config *configs;
	int nconfigs;
	char *plugin_path;      /* the shared object that provides it (plugin.h), or NULL for a built-in */
	char plugin_sha256[65]; /* sha256 of that file when the plan was made */
	/*
	 * A Python implementation (pyimpl.h): the module file (repo-relative when it lies in the
	 * repository, else absolute), its sha256, and the interpreter that described it; NULL path for
	 * a C implementation. python_json is the plan's "python" object (compact JSON).
	 */
	char *python_path;
	char python_sha256[65];
	char *python_json;
	struct plan_skip *skips; /* tasks it does not support, in plan order */
	int nskips;
	/*
	 * python_json has "helpers" (the module's helper files); a plan made before helper files were
	 * hashed has none, and the run binds those described when it runs.
	 */
	int python_helpers_planned;
	/*
	 * The config this side is forced to (IMPL@CONFIG in the card or on the command line, issue 41;
	 * docs/DESIGN.md "Forced configs"), or NULL: configs then holds that one config, which every
	 * task runs with no tuning pass. Owned.
	 */
	char *forced;
};

/**
 * The side as cards and evidence name it: "cpu.splitkv", or "cpu.splitkv@bn64-bh16-sp4-w1-st1"
 * when it is forced to a config. Writes at most cap bytes into buf and returns buf.
 */
const char *plan_impl_label(const struct plan_impl *pi, char *buf, size_t cap);

/** Most reference implementations one plan names (`--reference`, repeatable). */
#define VS_PLAN_MAX_REFERENCES 4

/**
 * A reference implementation (docs/DESIGN.md "References"): parity-checked, tuned, capture-gated
 * and timed in the same rounds as the candidate on every task it supports; its ratios against the
 * candidate are reported and never gate the verdict. A reference with no config for the plan's
 * generation skips every task.
 */
struct plan_reference {
	struct plan_impl impl; /* configs may be empty (nconfigs 0) */
	char **skip;           /* [plan ntasks]: NULL when it runs task i, else why not (malloc'd); owned */
};

/**
 * The e2e stage of a plan (docs/DESIGN.md "End to end", issue 16): after the isolated A/B of each
 * of its tasks, one decode step of the model around the core (a step module, kernels/python/
 * e2e_step.py) is timed with the baseline and with the candidate as the core, paired and
 * interleaved with a do-no-harm control (the baseline on both sides).
 */
struct plan_e2e {
	int enabled;
	char *step_path;      /* the step module (repo-relative when in the repository) */
	char step_sha256[65]; /* its sha256 when planned */
	char *step_json;      /* the plan's "e2e"."step" object (compact JSON: name, backend, interpreter) */
	char *step_name;      /* its NAME */
	unsigned char *tasks; /* [plan ntasks]: 1 when the task has an e2e stage (s_q 1, bf16, h_q dividing
	                       * the model's 128 heads) */
	int min_pairs, max_pairs;
	double max_seconds;   /* cap on e2e sampling per task */
	double rel_halfwidth; /* stop when the CI of the step-time ratio is within +- this */
	int gate;             /* a `scope: e2e` card: the verdict gates on delta_min_pct */
	double delta_min_pct; /* the card's expects.e2e_delta_min_pct (gate: the lower CI bound of the
	                       * overall e2e_pct >= this) */
	/* step_json has "helpers" (see plan_impl's python_helpers_planned) */
	int step_helpers_planned;
};

/**
 * The configs of one task that a plan pins (docs/DESIGN.md "Pinned configs"): an index into each
 * role's configs, or -1 where the role tunes over all of them on that task.
 */
struct plan_pin {
	int baseline, candidate;
	int refs[VS_PLAN_MAX_REFERENCES];
};

/**
 * The workload a plan's tasks come from (docs/DESIGN.md "Workloads"; `--emit-plan --workload`):
 * NULL in a tier plan. Its tasks are the workload's representative tasks (workload_derive()) crossed
 * with the planned dtypes, and its speedup gate is the workload speedup, sum of w x t_base over sum
 * of w x t_cand, with the equal-weight geomean reported beside it.
 */
struct plan_workload {
	char *id;
	char *path;            /* the workload file, repo-relative when it lies in the repository */
	char sha256[65];       /* of the file when planned */
	char trace_sha256[65]; /* of its trace, "" for a histogram */
	uint64_t seed;         /* the simulation's */
	int claimed;           /* 1: the card claimed the workload (expects.workloads) when the plan was
				* emitted, 0: it did not, -1: a plan from before 2026-12-05, without the
				* field (the card hash bound the claims list then) */
	int *concurrency;      /* [plan ntasks]: the concurrency (= batch) task i stands for */
	int *steps;            /* [plan ntasks]: the sampled decode steps it stands for */
	double *weight;        /* [plan ntasks]: its weight; the weights of a plan sum to 1 */
};

struct plan {
	char *card_id;
	char *card_path; /* as given on the command line, repo-relative when possible */
	char card_hash[65];
	char *tier;   /* "smoke", "standard", "full" */
	char *gen;    /* target generation: "x86_64", "sm_90", "gfx942" */
	char *model;  /* the model shape set the tasks follow */
	char *regime; /* "decode" */
	/*
	 * The form the card selects and why (card_form()), for the summary only ("sparse
	 * (match.arch_class deepseek_dsa): cache fp8_ds_mla, topk 2048 (the default of the V3.2
	 * formats)"): set by plan_build(), NULL in a plan read from a file; owned.
	 */
	char *form_note;
	struct plan_impl baseline, candidate;
	struct plan_reference refs[VS_PLAN_MAX_REFERENCES]; /* [nrefs], in --reference order */
	int nrefs;
	struct task_spec *tasks;
	char (*task_hash)[65];
	int ntasks;
	const char *generator; /* VS_GENERATOR_VERSION, or VS_GENERATOR_PREVIOUS for a plan of an earlier
	                          * build (it verifies as evidence; plan_check_current() refuses to run it) */
	struct plan_protocol protocol;
	double speedup_min;   /* gate: lower CI bound of the overall speedup >= this */
	int parity_required;  /* 1 = required, 0 = advisory */
	int capture_required; /* 1 on GPU backends */
	struct cJSON *build;  /* build-gate figures for the candidate (gfx942), or NULL */
	struct plan_e2e e2e;  /* enabled 0: no e2e stage (the plan has no "e2e" key) */
	/*
	 * --configs-from: per task, the config each role chose in an earlier run, which this plan's
	 * runs measure with no tuning pass. NULL when no task is pinned (the plan has no "pinned" key).
	 */
	struct plan_pin *pins;          /* [ntasks] */
	char *pins_run;                 /* that run: its eval dir's name (YYYYMMDDTHHMMSSZ-gen) */
	char pins_sha256[65];           /* sha256 of its result.json */
	struct plan_workload *workload; /* NULL: a tier plan (tier smoke/standard/full); else tier "workload" */
};

struct plan_options {
	const char *tier;              /* default "smoke" */
	const char *gen;               /* default: the card's first gen */
	const char *baseline;          /* override of match.from_backend */
	const char *candidate;         /* override of match.to_backend */
	const char *build_figures;     /* path of the gfx942 gate's resources.json, or NULL to look beside
	                            * the binary (build/gfx942/resources.json) */
	const char *baseline_lib;      /* plugin (.so) providing the baseline: loaded, and its implementation
	                            * is the baseline unless `baseline` names another (an error) */
	const char *candidate_lib;     /* the same for the candidate */
	const char *const *references; /* [nreferences] --reference IMPL: a built-in name or a file that
	                                * --candidate-lib accepts (a path: contains '/' or ends in .so/.py) */
	int nreferences;
	/* A FILE.py for either is a Python implementation (pyimpl.h). */
	const char *timing;   /* "graph_replay" or "launch"; NULL: graph_replay on GPUs, launch on
	                            * the CPU (which has no graphs) */
	int e2e;              /* add the e2e stage (always on for a `scope: e2e` card) */
	const char *e2e_step; /* its step module file; NULL: plan_e2e_default_step for the backend */
	const char *workload; /* a workload id (workloads/<id>.yaml in the repository) or a .yaml file: the
	                       * tasks come from its traffic instead of a tier (tier must be unset) */
};

/**
 * The workload file a --workload argument names: a path when it contains '/' or ends in ".yaml",
 * else workloads/<id>.yaml of the repository this binary was built from. Malloc'd; NULL when out of
 * memory.
 */
char *plan_workload_path(const char *arg);

/** The shipped step modules: DeepSeek-V3's in PyTorch (GPU plans) and in numpy at small dims (CPU). */
#define PLAN_E2E_STEP_GPU "kernels/torch/deepseek_v3_step.py"
#define PLAN_E2E_STEP_CPU "kernels/python/numpy_step.py"

/** Whether task spec s gets an e2e stage: one token per sequence (s_q 1), bf16 cache, h_q | 128. */
int plan_e2e_task(const struct task_spec *s);

/**
 * The Python implementations shipped in the repository, addressable by name like built-ins:
 * {"numpy.mla_decode", "kernels/python/numpy_mla.py"}, ... (paths relative to the repository root);
 * {NULL, NULL} ends the table.
 */
extern const struct plan_shipped_py {
	const char *name, *path;
} plan_shipped_python[];

/**
 * The configs that role pi (&p->baseline, &p->candidate or &p->refs[k].impl) runs on task i: the one
 * the plan pins (*n = 1), else all of them (*n = pi->nconfigs). Borrowed from pi.
 */
const struct mla_decode_config *plan_task_configs(const struct plan *p, const struct plan_impl *pi, int i, int *n);

/**
 * Pin role pi of p to its config named config on task i (docs/DESIGN.md "Pinned configs").
 * Returns 0, 1 when pi does not run task i (nothing pinned), VS_ENOTFOUND when config is not one of
 * pi's configs (nothing printed: the caller's one line names the task and the config's source),
 * VS_EUSAGE for a task or role p has not, VS_ENOMEM.
 */
int plan_pin(struct plan *p, int i, const struct plan_impl *pi, const char *config);

/** Name the run the pins come from: its eval dir's name and the sha256 of its result.json. */
int plan_pins_source(struct plan *p, const char *run, const char *result_sha256);

/** The reason plan p's implementation pi skips task i, or NULL when it runs it. */
const char *plan_skip_reason(const struct plan *p, const struct plan_impl *pi, int i);

/** The tier names, NULL-terminated. */
extern const char *const plan_tiers[];

/**
 * Build the plan of a loaded, linted card (a `scope: e2e` card gets the e2e stage and its gate;
 * its isolated A/B runs ungated). Errors: VS_EUNSUPPORTED (operator or regime
 * not planned, no planned dtype), VS_ENOTFOUND (backend naming no implementation: the message lists
 * the ones that exist), VS_EUSAGE (unknown tier or gen not in match.gens). Pins come after, from
 * evidence (evaldir_pin_configs()).
 */
int plan_build(struct plan *p, const struct card *c, const struct plan_options *o);

/** Serialize to canonical JSON text (malloc'd, ends with a newline). */
int plan_to_text(char **out, const struct plan *p);

/** Write atomically to path. */
int plan_write(const struct plan *p, const char *path);

/**
 * Read and check a plan file (schema, implementations exist, task specs valid). A plan whose
 * baseline or candidate names a plugin loads it (plugin_load) and refuses it with VS_EVERIFY when
 * the file's sha256 differs from the one the plan recorded; the same for a Python module (one line
 * naming the file and both hashes), which is then registered (pyimpl_register). The unsupported
 * lists must be what the implementations' supports() answer now (VS_EVERIFY otherwise: a task is
 * not skipped by editing the plan).
 */
int plan_read(struct plan *p, const char *path);

/**
 * plan_read(), and the bytes it parsed in *text_out (malloc'd, the caller frees; *len_out bytes):
 * what a run copies into its eval dir and hashes must be the plan it runs, not the file as it is
 * later (a plan replaced during a run was once bound into an H200 eval dir that way).
 */
int plan_read_text(struct plan *p, const char *path, char **text_out, size_t *len_out);

/**
 * plan_read() on len bytes of text already in memory (need not be NUL-terminated); path names the
 * plan in messages. *p is set only on success. Errors: VS_EPARSE, VS_ESCHEMA, VS_EVERIFY (a task
 * hash that does not match its spec), VS_ENOTFOUND (an implementation this build does not know).
 */
int plan_parse(struct plan *p, const char *text, size_t len, const char *path);

/**
 * The reason plan p's reference k skips task i, or NULL when it runs it (a plan built in memory
 * without skip lists runs every task).
 */
const char *plan_reference_skip(const struct plan *p, int k, int i);

/** The index of the task with this hash in p, or -1. */
int plan_task_index(const struct plan *p, const char *hash);

/**
 * The task hashes of the plan file at path, appended to *hashes (malloc'd strings; free each and
 * the array) and *n, read without checking the plan or loading its implementations: what `--gc`
 * needs, which must work with plugins missing or too many to load. A hash repeated is listed once
 * per plan. Errors: VS_EPARSE, VS_ESCHEMA (no "tasks" array of 64-digit "hash"es), VS_EIO, VS_ENOMEM.
 */
int plan_read_task_hashes(char ***hashes, int *n, const char *path);

/**
 * Tests only, never set by validate_skill itself: 1 lets plan_check_card() accept a trimmed plan
 * (a subset of its tier's tasks in the tier's order, fewer configs per side, other protocol and e2e
 * sampling bounds) so that the suites measure in seconds; the card, the tier, every spec field,
 * the tolerances and the gates must still be what the card plans. Set by the suites' tool
 * (tests/trimmed_tool.c) and by tu_run_suite(); the tests of the holes it leaves run with it 0.
 */
extern int plan_trimmed_for_tests;

/**
 * A claim comes before the run: 1 when card c claims p's workload (expects.workloads) now if and only
 * if it did when p was emitted (workload.claimed; for a plan without it, when same, card_hash_check()'s
 * answer for p's card hash, is 2 and c claims it), and for every tier plan; 0 otherwise.
 */
int plan_claim_unchanged(const struct plan *p, const struct card *c, int same);

/**
 * Compare plan p with the plan the tool derives from card c and the options p records (its tier,
 * gen, implementations, references, timing mode, e2e stage and pins): the card's id and hash (either
 * of card_hash_check()'s), the claim of a workload plan (plan_claim_unchanged()), the task set of the
 * tier for the card's dtypes (names, order, every spec field, tolerances included),
 * the protocol, the gates (from c's expects, never from the plan), the e2e stage's bounds, and with
 * configs != 0 each side's config count against its implementation's for the generation (what a
 * run can ask; evidence keeps the configs it ran). Returns 0 when they agree; VS_EVERIFY with one
 * line in diff naming the field, the plan's value and the derived one (nothing printed: the caller
 * says what follows); VS_ENOMEM.
 */
int plan_check_card(const struct plan *p, const struct card *c, int configs, char *diff, size_t cap);

/** Print the one-screen summary of a plan. */
void plan_print_summary(const struct plan *p, FILE *f);

void plan_release(struct plan *p);

/**
 * Refuse a plan whose tasks are of an earlier generator (plan_read() accepts them, for evidence):
 * VS_EVERIFY "...: emitted for generator vs_gen/2, this build generates vs_gen/3: emit it again".
 */
int plan_check_current(const struct plan *p, const char *path);

/**
 * plan_read() of an eval dir's plan copy, for verifying evidence: the implementations are taken
 * as recorded (names, configs, plugin and module files with their sha256, skip lists); nothing is
 * loaded, described or asked again, so a machine without the kernels' runtimes verifies evidence
 * (the eval dir's checks bind every file by its sha256). Such a plan is never run.
 */
int plan_read_evidence(struct plan *p, const char *path);

#endif /* VS_PLAN_H */
