/*
 * card.h - skill cards: markdown files with YAML front matter (schema: docs/DESIGN.md "The card schema").
 *
 * A card is split into front matter and body (a UTF-8 BOM before the opening "---" is allowed; the
 * front matter closes at the next line that is exactly "---", CRLF line ends accepted), the front
 * matter is parsed with libyaml into struct card (unknown keys kept in card.unknown, never dropped;
 * duplicate keys are an error), and the schema is checked. Errors are one line:
 *   "<file>:<line>:<col>: <key>: <what is wrong>"
 * with 1-based line and column counted in characters of the file as written (BOM excluded).
 */
#ifndef VS_CARD_H
#define VS_CARD_H

#include <stddef.h>

struct card_list {
	char **items;
	int count;
};

/** 1 when s is one of l's items (exact, case-sensitive), else 0. */
int card_list_has(const struct card_list *l, const char *s);

/** An unknown key kept verbatim: dotted path ("match.extra", "notes") and its value's source text. */
struct card_unknown {
	char *path;
	char *text;
};

/** The `validation:` block. "" means unset for strings; has_* flags tell set numbers from "". */
/** The lowest isolated_speedup_min a card may set, with expects.do_no_harm saying why. */
#define CARD_DO_NO_HARM_MIN 0.95

/**
 * One deployment's record, validation.workloads.<workload>@<gen> (docs/DESIGN.md "Workloads"):
 * what --record wrote from a workload plan's run (`--emit-plan --workload`). Strings are owned, ""
 * when unset.
 *   speedup, speedup_lo, speedup_hi  the workload speedup (sum w x t_base / sum w x t_cand) and its
 *                                    95% CI: what the verdict gated on
 *   isolated                         the equal-weight geomean of the same run, beside it
 */
#define CARD_MAX_KV_DTYPES 8 /* per_kv_dtype entries of a workload record */

struct card_workload_record {
	char *key;      /* "<workload id>@<gen>", as written */
	char *workload; /* the part before '@' */
	char *gen;      /* the part after '@' */
	char *status;   /* "validated" or "failed" */
	char *last_verified;
	char *gpu;
	int has_speedup;
	double speedup, speedup_lo, speedup_hi;
	int has_isolated;
	double isolated;
	char *parity; /* "pass", "fail" or "" */
	char *artifact;
	/*
	 * per_kv_dtype: {<kv dtype>: {speedup, ci95_lo, ci95_hi}, ...}, the workload speedup of each kv
	 * dtype of a plan of several (docs/DESIGN.md "Workloads": a deployment runs one kv dtype, and
	 * the verdict gates on each); absent (nkv 0) for a plan of one kv dtype and in records made
	 * before. In the order of the plan's tasks; a kv dtype with no timed task is not listed.
	 */
	struct card_kv_speedup {
		char *kv_dtype;
		double speedup, lo, hi;
	} kv[CARD_MAX_KV_DTYPES];
	int nkv;
};

struct card_validation {
	char *status;        /* "draft", "validated", "failed" ("" when unset) */
	char *last_verified; /* YYYY-MM-DD or "" */
	char *gpu;           /* "NVIDIA H200", ... or "" */
	char *gen;           /* "sm_90", "gfx942", ... or "" */
	char *model;
	int has_isolated;
	double measured_isolated;
	int has_e2e_pct;
	double measured_e2e_pct;
	char *measured_parity; /* "pass", "fail" or "" */
	char *artifact;        /* repo-relative eval dir or "" */
	char *impl_baseline;   /* validation.implementations.baseline: the implementation measured */
	char *impl_candidate;  /* validation.implementations.candidate */
	/*
	 * A typed block: a claim (status validated or failed) that --record did not write: typed by
	 * hand or by GEAK's validate_skill.py (numbers as text such as "2.432x (down-proj h1)" or
	 * "+67.4", a parity such as "pass (greedy)", no artifact, no gen). Read, never trusted: the
	 * values that do not fit the schema are left unset and named in typed_why ("measured.isolated
	 * is '2.432x (down-proj h1)'; no artifact; no gen"; owned by the card, NULL when not typed).
	 * docs/DESIGN.md "Skill libraries".
	 */
	int typed;
	char *typed_why;
	/*
	 * validation.measured.spread: the lowest and highest isolated speedup over the card's complete
	 * runs on the same device and implementations when --record saw several ("1.212-1.251 over 3
	 * runs"), "" for one; validation.recorded_over: set when --record --older recorded a run over a
	 * newer one ("20261205T...-sm_90: failed, 0.941 [0.93, 0.95]"), "" otherwise. Written only when
	 * set.
	 */
	char *spread;
	char *recorded_over;
	/* validation.workloads: one record per (workload, gen) a workload plan's run was recorded for */
	struct card_workload_record *workloads;
	int nworkloads;
};

/** Where a key's value starts in the file (the key itself when the value is empty), for messages. */
struct card_loc {
	char *key;     /* dotted path, "match.gens" */
	size_t offset; /* byte offset in card.text */
	int line, col; /* 1-based, characters, BOM excluded */
};

struct card {
	char *path; /* as given */
	char *text; /* whole file as read */
	size_t text_len;
	size_t fm_begin;   /* byte offset of the first front-matter line (after "---\n") */
	size_t fm_end;     /* byte offset of the closing "---" line */
	size_t body_begin; /* byte offset of the body (after the closing fence's line end) */

	char *id, *title, *kind, *role;
	struct card_list authors, supersedes;
	char *scope; /* "kernel" or "e2e" */
	struct {
		char *operator_name;
		struct card_list arch_class, gens, dtypes, regimes;
		char *from_backend, *to_backend;
		/*
		 * match.from_backend written as a list (GEAK's selector of several sources, e.g.
		 * [triton, gluon]): the names here and from_backend "". Lint refuses it on a card whose
		 * operator is planned (an A/B has one baseline).
		 */
		struct card_list from_backends;
		/*
		 * The sparse form (DeepSeek Sparse Attention, issue 36): match.topk, the indices per
		 * query row, and match.extra_topk, those into the V4 extra cache (fp8_model1 formats
		 * only); 0 when unset (the format's default: card_form()).
		 */
		int topk, extra_topk;
	} match;
	struct {
		int has_isolated_speedup_min;
		double isolated_speedup_min;
		int has_e2e_delta_min_pct;
		double e2e_delta_min_pct;
		char *parity;               /* "required" (default when absent), "advisory", or "relaxed(<tol>)" (GEAK's
		                   * template: parity required at the card's tolerance, card_parity_relaxed()) */
		struct card_list workloads; /* expects.workloads: the deployments (workload ids, workloads/<id>.yaml)
		                             * the card claims for; each is validated by its own record */
		char *do_no_harm;           /* why a gate below 1.0 is right (a change that must not slow down:
		                   * a refactor, a port); allows isolated_speedup_min down to
		                   * CARD_DO_NO_HARM_MIN */
	} expects;
	struct card_validation validation;

	struct card_unknown *unknown;
	int unknown_count;

	struct card_loc *locs; /* every key present in the front matter, in file order */
	int loc_count;
};

/**
 * Read and parse the card at path: split, YAML, types and enums (not the lint-only checks of
 * card_lint()). On success fills *c (release with card_release()). Errors: VS_EIO, VS_EPARSE
 * (front matter or YAML), VS_ESCHEMA (types, enums, duplicate keys, missing required keys).
 */
int card_load(struct card *c, const char *path);

/** Same as card_load() on text already in memory (copied); path is used for messages and id. */
int card_parse(struct card *c, const char *path, const char *text, size_t len);

/**
 * The checks of `--static` beyond card_load(): id equals the file name's (card_id_of_path()), body
 * sections "When to use", "Mechanism", "Procedure", "Knobs & pitfalls", "Do-no-harm notes",
 * "Sources" present and non-empty (HTML comments do not count), expects consistent with scope, no
 * placeholder of GEAK's template ("REPLACE") left in a value. Any operator lints (one this tool
 * does not plan is reported so by --static and --report, refused by --emit-plan). A typed
 * validation block is one warning line (vs_warn), not an error. Reports every problem (one line
 * each) and returns VS_ESCHEMA if there was any, else 0.
 */
int card_lint(const struct card *c);

/** The match.arch_class value that selects MLA decode's sparse form (DeepSeek Sparse Attention). */
#define CARD_ARCH_SPARSE "deepseek_dsa"
/** The match.arch_class value of the dense form (what a card naming no form means). */
#define CARD_ARCH_DENSE "deepseek_mla"
/** Default match.topk of the V3.2 formats (bf16, fp8_ds_mla, fp8_ds_mla_fnuz): DeepSeek-V3.2's. */
#define CARD_TOPK_V32 2048
/** Default match.topk and match.extra_topk of the V4 formats (fp8_model1, _fnuz): DeepSeek-V4's. */
#define CARD_TOPK_V4 128
#define CARD_EXTRA_TOPK_V4 1024
/** The largest match.topk or match.extra_topk a card may state (FlashMLA's tests reach 16384). */
#define CARD_TOPK_MAX 65536

/** 1 when the card selects the sparse form: match.arch_class lists deepseek_dsa. */
int card_sparse(const struct card *c);

/**
 * The form a card's match block selects, for kv_dtype (enum mla_kv_dtype) of its match.dtypes:
 * *topk and *extra_topk as the plan uses them (0 and 0 for the dense form; match.topk, else
 * CARD_TOPK_V32 for a V3.2 format or CARD_TOPK_V4 for a V4 one; match.extra_topk, else
 * CARD_EXTRA_TOPK_V4, for a V4 format, 0 for the others), and why in *why (static text: "match.topk"
 * or "the default of <format>"). Returns 1 when kv_dtype is a cache format of the card's form
 * (dense: bf16, fp8_e4m3_fnuz; sparse: bf16 and the block-scaled formats), else 0.
 */
int card_form(const struct card *c, int kv_dtype, int *topk, int *extra_topk, const char **why);

/**
 * The text of the card (its body or any field) that speaks of the sparse form (MODEL1, DSA,
 * DeepSeek Sparse Attention, topk, per-block scales, fp8_ds_mla, a V3.2 or V4 sparse decode): the
 * term found and its byte offset in c->text; NULL when none. What lint warns about on an
 * mla_attention card whose match block selects the dense form.
 */
const char *card_sparse_talk(const struct card *c, size_t *offset);

/** The operators this tool plans, comma-separated ("mla_attention"); static storage. */
const char *card_planned_operators(void);

/** 1 when the card's match.operator is one this tool plans (--emit-plan), else 0. */
int card_operator_planned(const struct card *c);

/**
 * The id a card's file name gives it (malloc'd; NULL when out of memory): "<dir>/<id>/skill.md"
 * (GEAK's layout, a directory per skill) gives "<id>", "<dir>/<id>.md" (ours) gives "<id>".
 */
char *card_id_of_path(const char *path);

/**
 * Line and column of the value of key (dotted path) as loaded; 0, or VS_ENOTFOUND (not printed)
 * when the key is not in the card. *line and *col are set only on success.
 */
int card_locate(const struct card *c, const char *key, int *line, int *col);

/** Free everything c owns; c may be zeroed or partly filled. */
void card_release(struct card *c);

/**
 * The card hash recorded as evidence: sha256 over the front matter with the `validation` block and
 * the claims list `expects.workloads` removed (each whole line of them; a flow-style `expects` is
 * kept whole), followed by the body. Recording (which only changes `validation`) does not change
 * it, nor does claiming one more deployment: each claim's verdict is bound to its own evidence (the
 * workload's sha256 in its plan), and no verdict reads the list. hex: 64 lowercase hex digits.
 * Errors: VS_EPARSE (the card no longer parses), VS_ENOMEM.
 */
int card_hash(const struct card *c, char hex[65]);

/**
 * Whether evidence that stored the card hash `stored` was made from this card (card_hash() is set
 * in hex): *same is 2 when stored is the hash with the claims list kept, which the builds up to
 * 2026-12-05 recorded (the card and its claims are byte for byte as they were; where nothing is cut,
 * no claims line or a flow-style `expects`, that is card_hash() too), 1 when stored is card_hash()
 * and not that one, 0 otherwise. Errors: as card_hash().
 */
int card_hash_check(const struct card *c, const char *stored, char hex[65], int *same);

/**
 * Produce the text of the card with its validation block set to v: every scalar under
 * `validation` (and `validation.measured`) is replaced in place at byte offsets derived from
 * libyaml's marks (which count characters and skip the BOM: converted by walking the UTF-8 text);
 * missing keys are inserted in the file's own indentation and line endings, after the last key of
 * the block (a card without `validation` gets one appended at the end of its front matter); every
 * other byte stays as it was. Strings keep their quoting style where it can hold the value, else
 * are written plain when YAML reads them back unchanged and double-quoted otherwise; numbers plain
 * with the fewest significant digits that read back to the same double; dates plain; unset
 * ("" / has_*=0) as "". Same v twice gives identical bytes. Only c->path, c->text and c->text_len
 * are used. The result is re-parsed before it is returned: it must read back as v and keep
 * card_hash(). *out (malloc'd) and *out_len are set only on success.
 * Errors: VS_EPARSE, VS_ESCHEMA (a value that cannot be recorded, `validation` not a mapping).
 */
int card_set_validation(char **out, size_t *out_len, const struct card *c, const struct card_validation *v);

/**
 * The text of the card with validation.workloads.<r->key> set to r (status, last_verified, gpu,
 * speedup, ci95_lo, ci95_hi, isolated, parity, artifact), every other byte unchanged, the card hash
 * the same: a card without a validation block gets one holding only `workloads`. *out is malloc'd.
 * Errors: as card_set_validation().
 */
int card_set_workload_record(char **out, size_t *out_len, const struct card *c, const struct card_workload_record *r);

/** The record of validation.workloads with this key ("<workload>@<gen>"), or NULL. */
const struct card_workload_record *card_workload_record_find(const struct card *c, const char *key);

/** The largest tolerance a card's `expects.parity: relaxed(<tol>)` may state. */
#define CARD_PARITY_RELAXED_MAX 0.5

/**
 * Parse a card's expects.parity value as GEAK's `relaxed(<tol>)`: parity is required, at absolute
 * and relative tolerance tol for out and lse (never tighter than the tool's own tolerances, which
 * stay where they are larger). Returns 1 and *tol for a well-formed value with 0 < tol <=
 * CARD_PARITY_RELAXED_MAX, 0 for any other value (required, advisory, empty, malformed).
 */
int card_parity_relaxed(const char *parity, double *tol);

/**
 * Does implementation impl ("hip.flash", or "cpu.splitkv@bn64-bh16-sp4-w1-st1" for a side forced
 * to one config) fill the card's backend value want? A value with a '.' names one implementation
 * (equal names); one without names a family ("hip", "triton", "tilelang"), filled by any
 * implementation named "<family>.<something>". A config after '@' (docs/DESIGN.md "Forced
 * configs", issue 41) must be the same on both, or absent on both. An unset want accepts any
 * implementation.
 */
int card_backend_matches(const char *want, const char *impl);

/** 1 if the card's backend value names a family rather than one implementation (before any '@'). */
int card_backend_is_family(const char *want);

/**
 * The config a backend value forces: what follows its first '@' ("IMPL@CONFIG"), or NULL when it
 * has none. Borrowed from backend. The implementation's name is the *impl_len bytes before it (the
 * whole value when there is no '@'); impl_len may be NULL.
 */
const char *card_backend_config(const char *backend, size_t *impl_len);

#endif /* VS_CARD_H */
