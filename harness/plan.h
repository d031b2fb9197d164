/*
 * plan.h - the reviewable plan of a card's validation: plans/<card id>.plan.json.
 *
 * A plan fixes, before any run: the tasks (task specs over a shape grid chosen by tier, from the
 * card's dtypes and regimes), the baseline and candidate implementations with their config spaces
 * for the target generation, tolerances (inside each task spec), the measurement protocol and the
 * gates (card's isolated_speedup_min, parity, capture safety). Same card and options give a
 * byte-identical plan (no clocks, no paths outside the repository, stable key order).
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
	int warmup;            /* untimed launches per implementation before sampling */
	int tuning_samples;    /* timed samples per candidate config in the tuning pass */
	int min_pairs;         /* A/B pairs before the stop rule may stop */
	int max_pairs;         /* cap on pairs */
	double max_seconds;    /* cap on sampling time per task */
	double rel_halfwidth;  /* stop when the 95% CI of the speedup is within +- this (0.01) */
	int resamples;         /* bootstrap replicates for reported CIs */
	uint64_t seed;         /* bootstrap seed */
	int check_every;       /* check both timed outputs of every k-th A/B pair against the reference */
	double flush_factor;   /* LLC flush buffer size as a multiple of the LLC (>= 2) */
	double review_bound;   /* a speedup above this is flagged for review (10) */
};

struct plan_impl {
	char *name;            /* "cpu.naive", "hip.flash", ... */
	char *backend;         /* "cpu" or "hip" */
	struct mla_decode_config *configs;
	int nconfigs;
	char *plugin_path;     /* the shared object that provides it (plugin.h), or NULL for a built-in */
	char plugin_sha256[65];/* sha256 of that file when the plan was made */
};

struct plan {
	char *card_id;
	char *card_path;       /* as given on the command line, repo-relative when possible */
	char card_hash[65];
	char *tier;            /* "smoke", "standard", "full" */
	char *gen;             /* target generation: "x86_64", "sm_90", "gfx942" */
	char *model;           /* the model shape set the tasks follow */
	char *regime;          /* "decode" */
	struct plan_impl baseline, candidate;
	struct task_spec *tasks;
	char (*task_hash)[65];
	int ntasks;
	const char *generator;   /* VS_GENERATOR_VERSION, or VS_GENERATOR_PREVIOUS for a plan of an earlier
	                          * build (it verifies as evidence; plan_check_current() refuses to run it) */
	struct plan_protocol protocol;
	double speedup_min;    /* gate: lower CI bound of the overall speedup >= this */
	int parity_required;   /* 1 = required, 0 = advisory */
	int capture_required;  /* 1 on GPU backends */
	struct cJSON *build;   /* build-gate figures for the candidate (gfx942), or NULL */
};

struct plan_options {
	const char *tier;      /* default "smoke" */
	const char *gen;       /* default: the card's first gen */
	const char *baseline;  /* override of match.from_backend */
	const char *candidate; /* override of match.to_backend */
	const char *build_figures; /* path of the gfx942 gate's resources.json, or NULL to look beside
	                            * the binary (build/gfx942/resources.json) */
	const char *baseline_lib;  /* plugin (.so) providing the baseline: loaded, and its implementation
	                            * is the baseline unless `baseline` names another (an error) */
	const char *candidate_lib; /* the same for the candidate */
};

/** The tier names, NULL-terminated. */
extern const char *const plan_tiers[];

/**
 * Build the plan of a loaded, linted card. Errors: VS_EUNSUPPORTED (e2e scope, operator or regime
 * not planned, no planned dtype), VS_ENOTFOUND (backend naming no implementation: the message lists
 * the ones that exist), VS_EUSAGE (unknown tier or gen not in match.gens).
 */
int plan_build(struct plan *p, const struct card *c, const struct plan_options *o);

/** Serialize to canonical JSON text (malloc'd, ends with a newline). */
int plan_to_text(char **out, const struct plan *p);

/** Write atomically to path. */
int plan_write(const struct plan *p, const char *path);

/**
 * Read and check a plan file (schema, implementations exist, task specs valid). A plan whose
 * baseline or candidate names a plugin loads it (plugin_load) and refuses it with VS_EVERIFY when
 * the file's sha256 differs from the one the plan recorded.
 */
int plan_read(struct plan *p, const char *path);

/**
 * plan_read() on len bytes of text already in memory (need not be NUL-terminated); path names the
 * plan in messages. *p is set only on success. Errors: VS_EPARSE, VS_ESCHEMA, VS_EVERIFY (a task
 * hash that does not match its spec), VS_ENOTFOUND (an implementation this build does not know).
 */
int plan_parse(struct plan *p, const char *text, size_t len, const char *path);

/** Print the one-screen summary of a plan. */
void plan_print_summary(const struct plan *p, FILE *f);

void plan_release(struct plan *p);

/**
 * Refuse a plan whose tasks are of an earlier generator (plan_read() accepts them, for evidence):
 * VS_EVERIFY "...: emitted for generator vs_gen/2, this build generates vs_gen/3: emit it again".
 */
int plan_check_current(const struct plan *p, const char *path);

#endif /* VS_PLAN_H */
