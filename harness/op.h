/*
 * op.h - operators: what the core knows of the problem a kernel solves, through one table
 * (docs/DESIGN.md "Operators").
 *
 * The core (plans, task dirs, measure, evaldir, report) reads an operator's tasks only through
 * struct vs_operator, as it reaches devices only through struct vs_device_ops (device.h): the
 * spec's JSON, its validation, its bytes and FLOPs, its tolerances, its data-type class, the
 * generator of its inputs and the tensors of its task files, the oracle of its outputs, which
 * tasks an implementation skips, the tasks a card's tier or workload plans, and its lines of the
 * plan summary. Each operator fills the table in its own modules; MLA decode (vs_op_mla_decode:
 * harness/op_mla.c, op_mla_gen.c, op_mla_plan.c) is the one operator today, its dense and sparse
 * forms two shapes of it (topk 0 or > 0).
 *
 * A task's spec is struct task_spec (task.h): MLA decode's fields, which only the operator's
 * module reads or writes; the core passes it through. docs/DESIGN.md "Operators" lists the places
 * in the core that still name an MLA field and why.
 */
#ifndef VS_OP_H
#define VS_OP_H

#include <stddef.h>
#include <stdio.h>

struct cJSON;
struct task_spec;
struct task_set;
struct task_tol;
struct st_tensor; /* safetensors.h */
struct card;
struct plan;
struct workload;
struct workload_tasks;

struct vs_operator {
	const char *name;           /* the task dirs' operator: root/<name>/<hash>/, manifest "operator" */
	const char *card_operator;  /* the cards' match.operator it plans ("mla_attention") */
	const char *oracle_version; /* what a task's hash and its reference files name */

	/*
	 * The spec. to_json: canonical JSON (stable key order; caller owns it; NULL out of memory).
	 * from_json: parse and validate (*s set only on success; VS_ESCHEMA naming the key).
	 * validate: refuse a spec that cannot be materialized (VS_ESCHEMA, one line naming the
	 * field; where prefixes it). copy: deep copy (VS_ENOMEM). release: free what the spec owns
	 * and zero it (accepts NULL).
	 */
	struct cJSON *(*spec_to_json)(const struct task_spec *s);
	int (*spec_from_json)(struct task_spec *s, const struct cJSON *j, const char *where);
	int (*spec_validate)(const struct task_spec *s, const char *where);
	int (*spec_copy)(struct task_spec *dst, const struct task_spec *src);
	void (*spec_release)(struct task_spec *s);

	/* Counting: bytes moved and FLOPs of one input set, as the operator's reference library counts them. */
	double (*bytes)(const struct task_spec *s);
	double (*flops)(const struct task_spec *s);

	/* The parity tolerances of a spec's shape (the tool's own; a card may relax them). */
	void (*tolerances)(struct task_tol *out, struct task_tol *lse, const struct task_spec *s);

	/*
	 * The spec's data-type class, 0..30: the coverage gate's unit (a planned class none of whose
	 * tasks ran fails it) and the precision of the device's peak FLOP rate
	 * (vs_device_peak_tflops()). dtype_name: its name ("bf16"), NULL for an unknown class.
	 */
	int (*dtype)(const struct task_spec *s);
	const char *(*dtype_name)(int dtype);

	/*
	 * Generate input set k of a valid spec: the bytes of its inputs file (a safetensors image,
	 * malloc'd into *buf, *len bytes) and the set's kv_scale (1 where the format has none).
	 * Errors: VS_ESCHEMA, VS_ENOMEM.
	 */
	int (*generate_inputs)(char **buf, size_t *len, float *kv_scale, const struct task_spec *s, int k);

	/*
	 * The tensors of a task's files, which the core writes, hashes, checks and loads by name
	 * (task.c). inputs: the inputs file's, in file order, into t (room for VS_TASK_MAX_INPUTS;
	 * names static, data unset); returns how many. outputs: the reference file's two, out and
	 * lse. manifest_tensors: the manifest's "shapes" and "dtypes" objects of a spec (keys in the
	 * operator's order); returns 1, or 0 out of memory.
	 */
	int (*inputs)(struct st_tensor *t, const struct task_spec *s);
	void (*outputs)(struct st_tensor *t, const struct task_spec *s);
	int (*manifest_tensors)(struct cJSON *shapes, struct cJSON *dtypes, const struct task_spec *s);

	/*
	 * The oracle: the reference outputs of input set ts of spec s with q in place of the set's own
	 * (the set's when q is NULL), on threads workers, into out and lse (sized as the set's ref_out
	 * and ref_lse). Errors: VS_EFAIL (the oracle refused the arguments), VS_ENOMEM.
	 */
	int (*reference)(float *out, float *lse, const struct task_spec *s, const struct task_set *ts, const void *q,
			 int threads);

	/*
	 * Whether an implementation of this operator's kernel ABI (MLA decode: a struct
	 * mla_decode_impl, kernels/mla_decode.h) skips task t: 1 with the reason in why (cap bytes),
	 * else 0. What a plan's skips lists (plan.c).
	 */
	int (*impl_skips)(const void *impl, const struct task_spec *t, char *why, size_t cap);

	/*
	 * Planning (plan.c; docs/DESIGN.md "Tiers", "Workloads"). plan_card: refuse a card whose match
	 * block selects nothing this operator plans (VS_EUNSUPPORTED, one line saying what to add).
	 * derive_tasks: a plan's tasks into np->tasks, np->task_hash, np->ntasks (the caller zeroes np
	 * and frees them): tier tier_bit's (bit i: plan_tiers[i]; GPU shapes only when gpu) when w is
	 * NULL, else those of workload w's sampled traffic wt, np->workload with them (the caller sets
	 * its id and path); the card's relaxed parity applied (Errors: VS_EUNSUPPORTED, one line, when
	 * the card and the workload disagree; VS_ENOMEM). form_note: the summary's form line of the
	 * plan (malloc'd into *out; of workload w's formats when w is given). full_tier_extra: the
	 * shapes tier full adds to standard that a gpu (0/1) backend cannot run, as "a, b" into buf,
	 * and how many it adds that it can (first: the plan's first task or NULL). spec_named: the spec
	 * the tiers plan under a task's name (0, VS_ENOTFOUND). e2e_task: 1 when the e2e stage follows
	 * task s (docs/DESIGN.md "End to end").
	 */
	int (*plan_card)(const struct card *c);
	int (*derive_tasks)(struct plan *np, const struct card *c, int tier_bit, int gpu, const struct workload *w,
			    const struct workload_tasks *wt);
	int (*form_note)(char **out, const struct card *c, const struct workload *w);
	int (*full_tier_extra)(char *buf, size_t cap, int gpu, const struct task_spec *first);
	int (*spec_named)(struct task_spec *s, const char *name);
	int (*e2e_task)(const struct task_spec *s);

	/*
	 * The plan summary: form names the shape of s as the "form" line shows it when the plan has no
	 * note of its own ("dense"); summary_header prints the column heads and summary_row one
	 * task's columns (after the task's name, before the plan's own columns; no newline). first:
	 * the plan's first task (columns may depend on its shape), or NULL for an empty plan.
	 */
	const char *(*form)(const struct task_spec *s);
	void (*summary_header)(FILE *f, const struct task_spec *first);
	void (*summary_row)(FILE *f, const struct task_spec *s, const struct task_spec *first);
};

/** MLA decode (harness/op_mla.c): dense (topk 0) and sparse (topk > 0, DeepSeek Sparse Attention). */
extern const struct vs_operator vs_op_mla_decode;

/** The operator whose task dirs are named name ("mla_decode"), or NULL. */
const struct vs_operator *vs_operator_find(const char *name);

/** Operator i of this build (0, 1, ...), NULL past the last: what walks every operator's task dirs (--gc). */
const struct vs_operator *vs_operator_at(int i);

/** The operator that plans cards of match.operator card_operator ("mla_attention"), or NULL. */
const struct vs_operator *vs_operator_for_card(const char *card_operator);

/**
 * The operator of a spec (s may be NULL: a plan's or a task dir's before its specs are read). Every
 * spec is MLA decode's today (struct task_spec holds its fields); this is the one place that says
 * so, and where a second operator's specs would be told apart.
 */
const struct vs_operator *vs_op_of(const struct task_spec *s);

#endif /* VS_OP_H */
