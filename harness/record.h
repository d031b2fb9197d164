/*
 * record.h - evidence: verify an eval dir against a card, and write what it proves into the card.
 *
 * An eval dir (results/<card id>/<run id>/, written by `--run`) is accepted as evidence only when
 * every file it binds verifies: result.json's plan copy, task manifest copies, samples.csv and
 * run.log match the sha256 recorded in result.json; the card hash in result.json equals the card's
 * current hash (front matter without `validation`, plus body); the plan copy names the same card
 * and tasks; and the speedups recomputed from samples.csv with the plan's bootstrap seed equal the
 * ones result.json reports (a hand-edited number does not verify).
 */
#ifndef VS_RECORD_H
#define VS_RECORD_H

#include "card.h"

struct cJSON;

/** What an eval dir proves, once verified. */
struct evidence {
	char *eval_dir;           /* as given */
	struct cJSON *result;     /* parsed result.json (owned) */
	const char *verdict;      /* "validated" / "failed" (points into result) */
	const char *device_name;  /* "NVIDIA H200" */
	const char *gen;          /* "sm_90" */
	const char *model;
	const char *kernels_tree;
	int kernels_dirty;
	int partial;
	int has_isolated;
	double isolated;          /* overall geomean speedup estimate */
	double isolated_lo, isolated_hi;
	const char *parity;       /* "pass" / "fail" */
	char date[11];            /* YYYY-MM-DD of the run's end (UTC) */
	char result_sha256[65];
};

/** Problems found by evidence_check(), most severe first. */
enum evidence_status {
	EVIDENCE_OK = 0,
	EVIDENCE_STALE_CARD = 1,  /* the card's content changed after the run */
	EVIDENCE_MISSING = 2,     /* no eval dir / no result.json */
	EVIDENCE_MISMATCH = 3,    /* files do not match their hashes, numbers do not recompute */
};

/**
 * Load and verify the eval dir dir against card c. Returns 0 and fills *e when everything
 * verifies; otherwise returns a negative error (VS_EVERIFY, VS_EIO, VS_EPARSE) with a one-line
 * message naming the file and what differs, and sets *status (when non-NULL) to the class of the
 * problem. *e is filled as far as it got (release it either way).
 */
int evidence_load(struct evidence *e, int *status, const char *dir, const struct card *c);

void evidence_release(struct evidence *e);

/** The validation values an evidence proves for card c (strings point into e or static storage). */
void evidence_validation(struct card_validation *v, const struct evidence *e, const char *artifact);

/**
 * `--record CARD --eval-dir DIR`: verify, then write validation{status, last_verified, gpu, gen,
 * model, measured{isolated, e2e_pct, parity}, artifact} into the card atomically. `validated` only
 * when the run's verdict is validated, the build was clean and the measured generation is in
 * match.gens; `failed` with the measured numbers when a gate failed. Refused with a clear error when
 * the evidence does not verify, is partial, or comes from a dirty build or a foreign generation.
 */
int record_card(const char *card_path, const char *eval_dir);

/**
 * `--verify CARD`: re-check a recorded card against its evidence: the evidence verifies and the
 * card's validation values equal what it proves. Draft cards with no artifact pass (nothing is
 * claimed). Returns 0, or VS_EVERIFY with one line per problem.
 */
int record_verify(const char *card_path);

/** The paired samples of one task, as samples.csv holds them. */
struct sample_pairs {
	char hash[65];
	double *base, *cand;    /* [n] ms, pair by pair */
	int n, cap;
};

/**
 * Parse samples.csv text into per-task pairs, tasks in order of first appearance; *out (free with
 * samples_free) and *count set only on success. Errors: VS_EVERIFY naming path:line.
 */
int samples_parse(struct sample_pairs **out, int *count, const char *text, const char *path);

void samples_free(struct sample_pairs *tp, int n);

#endif /* VS_RECORD_H */
