/*
 * report.h - `--report`: the status of every card in skills/, checked against its evidence.
 *
 * Per card: id, status (stale is computed here, never written: the card's content changed after
 * validation, the kernels/ tree that ran differs from this build's, the evidence is older than
 * max_age_days, or a Python implementation's interpreter now gives other versions of python or of
 * the modules the run recorded; "<status> (typed, no evidence)" for a typed validation block,
 * card.h; "not planned here (operator ...)" beside a card whose operator this tool does not plan), per-generation status (validated/failed/stale on the measured generation; built
 * where only the gfx942 build gate passed, per the card's emitted plan; untested elsewhere), last
 * verified, device, measured against expected speedup, parity, and evidence (ok, missing, mismatch,
 * none); the card's title and eval dir; from verified evidence, the run: baseline and candidate,
 * cores (the device's compute units), the configs chosen, and the review flags, shown as a count
 * ("flagged for review on 12 of 19 tasks") with every flag on demand (html and markdown: a
 * <details> block; text: the first; json: all), a flagged row marked apart from a clean one. The
 * flags are the run's (result.json) and, from its numbers, the baseline against the references of
 * the same run (report_baseline_flag) and where the candidate did harm: a task it ran slower than
 * the baseline, a model step that ran slower (report_harm_flag, report_e2e_harm_flag), a task where
 * a reference ran faster than the candidate (report_outpaced_flag), and a chosen config the A/B
 * timed far from its tuning median (report_tuning_flag). Formats: text (default), markdown, json, and html: one
 * self-contained page (no external resources) with the status table and an inline SVG chart of
 * measured against expected speedup per card and per task shape (from each card's verified
 * evidence).
 */
#ifndef VS_REPORT_H
#define VS_REPORT_H

#include <stdio.h>

struct report_options {
	const char *skills_dir; /* default "skills" */
	const char *plans_dir;  /* default "plans" */
	const char *format;     /* "text", "markdown", "json", "html" */
	int max_age_days;       /* evidence older than this is stale (default 90) */
	FILE *out;              /* default stdout */
};

struct cJSON;

/* A reference faster than the baseline by more than this on a task flags the task for review. */
#define VS_BASELINE_REVIEW_BOUND 1.5
/* An implementation's A/B median against its chosen config's tuning median, beyond which (or below
 * its inverse) report_tuning_flag flags the task. */
#define VS_TUNING_REVIEW_BOUND 1.2

/**
 * The baseline must be what users run: on one task of a verified result.json (its "speedup" =
 * t_base / t_cand and its "references"[k]."ratio" = t_ref / t_cand, paired estimates of one run),
 * t_base / t_ref = speedup / ratio for every timed reference. Returns the review flag naming the
 * reference with the largest t_base / t_ref when that exceeds bound ("task NAME: the baseline ran
 * 2.00x slower than reference R in the same run ..."; the caller frees it), or NULL: none exceeds
 * it, the task was not timed, or it has no timed reference.
 */
char *report_baseline_flag(const struct cJSON *task, double bound);

/**
 * Do no harm, per task: a card's gate is the geometric mean over its tasks, so a validated
 * candidate can still be slower than the baseline on some of them. On one task of a verified
 * result.json, returns the review flag "task NAME: the candidate ran slower than the baseline
 * (speedup 0.541 [0.538, 0.567]) ..." when the upper end of the speedup's 95% CI ("speedup"."ci95")
 * is below 1 (the caller frees it), or NULL: not slower, not timed, or no CI.
 */
char *report_harm_flag(const struct cJSON *task);

/**
 * The port must stand beside the best kernel available: on one task of a verified result.json, a
 * reference other than the baseline ("baseline"."impl") whose "ratio" (t_ref / t_cand, a paired
 * estimate of the same run) has a 95% CI ("ratio"."ci95") wholly below 1 ran faster than the
 * candidate. Returns the review flag naming the one with the lowest ratio ("task NAME: reference R
 * ran faster than the candidate in the same run (t_ref / t_cand 0.875 [0.870, 0.881]): the
 * candidate is not the fastest kernel measured here"; the caller frees it), or NULL: no reference
 * did, none was timed, or none has a CI.
 */
char *report_outpaced_flag(const struct cJSON *task);

/**
 * Measurement fidelity, per task: the tuning pass chose each side's config from a few samples of
 * every config; the A/B then measured the chosen one afresh. On one task of a verified result.json,
 * for the baseline, the candidate and each reference whose chosen config was tuned (it has a
 * "tune_median_ms"; a side with one passing config is not tuned) and timed ("timing"."median_ms"),
 * returns the review flag for the side whose ratio A/B median / tuning median lies farthest beyond
 * bound or below 1 / bound: "task NAME: hip.flash's config bn64-bh16-sp0-w8-st2 took 0.0250 ms in the
 * A/B against 0.0176 ms when tuned (1.42x): the tuning pass chose it under other conditions than
 * the A/B's, so another config may be faster there" (the caller frees it), or NULL. (On 2026-12-01 a
 * config that, by our reading, found its code warm between its own tuning samples did this on two tasks;
 * harness/measure.c now tunes after a foreign launch, so newer evidence should not.) The report
 * applies it to GPU evidence only (device backend other than "cpu"): the shipped CPU card's A/B
 * medians lie 1.13-1.36x above their tuning medians on every task (2026-12-01), for a cause not
 * known (a CPU sample is the host's clock around the launch, which the host's work between A/B
 * samples may move), so there the flag would say nothing about the choice.
 */
char *report_tuning_flag(const struct cJSON *task, double bound);

/**
 * Do no harm, end to end: on a verified result.json whose "e2e"."e2e_pct" CI lies below 0 (the
 * model step ran slower with the candidate), returns the review flag "e2e: the model step (STEP)
 * ran slower with the candidate: e2e_pct -2.49% [-2.72, -2.36] ..." (the caller frees it), or
 * NULL: no e2e stage, not slower, or no CI.
 */
char *report_e2e_harm_flag(const struct cJSON *result);

/**
 * Print the report. Returns 0, VS_EVERIFY when some card's claims do not match its evidence (the
 * report is printed in full first), or VS_EUSAGE / VS_EIO.
 */
int report_run(const struct report_options *o);

#endif /* VS_REPORT_H */
