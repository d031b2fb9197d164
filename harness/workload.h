/*
 * workload.h - deployments as data: the workload file, its traffic (a request trace or a histogram),
 * the continuous-batching simulation and the grouping of its decode steps into weighted tasks
 * (issue 37, foundation; docs/DESIGN.md "Workloads (issue 37, foundation)").
 *
 * A workload file is YAML (schema in docs/DESIGN.md), linted like a card: every error is one line
 *   "<file>:<line>:<col>: <key>: <what is wrong>"
 * unknown keys are kept (workload.unknown) and shown as warnings. A trace is a request log, CSV
 * with a header row or JSONL, one request a row: its prompt length (context) and its generated
 * length; a bad row is one line "<trace>:<line>: row <n>, column '<name>': <what is wrong>".
 *
 * From traffic to tasks: at each concurrency C, C slots decode requests of the traffic (continuous
 * batching; a finished request is replaced by the next one at once), each step is one decode call
 * (batch C, one seqlen per slot); after a warm-up, `steps` steps (every stride-th) are sampled and grouped
 * into at most `tasks` tasks over all concurrencies, each keeping a real sampled step's seqlens and
 * the share of the sampled steps it stands for. Deterministic: everything random is a Philox draw
 * (rng.h) of (seed, stream, index).
 */
#ifndef VS_WORKLOAD_H
#define VS_WORKLOAD_H

#include <stddef.h>
#include <stdint.h>

#define WORKLOAD_MAX_BYTES (1u << 20)         /* a workload file is hand-written: 1 MiB */
#define WORKLOAD_TRACE_MAX_BYTES (256u << 20) /* a trace: 256 MiB (sample a larger one) */
#define WORKLOAD_TRACE_MAX_ROWS (4 << 20)     /* 4 Mi requests */
#define WORKLOAD_MAX_TOKENS (1 << 24)         /* context or generated tokens of one request */
#define WORKLOAD_MAX_STEPS 65536              /* steps per concurrency */
#define WORKLOAD_MAX_TASKS 256
#define WORKLOAD_MAX_CONCURRENCY 1024
#define WORKLOAD_MAX_BINS 256

/** An unknown key kept as written: dotted path ("model.tp") and where it is (1-based). */
struct workload_unknown {
	char *path;
	int line, col;
};

/** One histogram bin: requests with lo..hi tokens (inclusive) make up share of all requests. */
struct workload_bin {
	int32_t lo, hi;
	double share;
};

/** The workload file. Strings are owned; release with workload_release(). */
struct workload {
	char *path;                /* as given */
	char sha256[65];           /* of the file's bytes */
	char *id, *title, *source; /* id equals the file name without ".yaml" */
	int h_q, s_q, page_size;   /* model: heads per GPU (1..128), queries per sequence (1..8), 1|16|64 */
	double mtp_accept;         /* model.mtp_accept: with s_q > 1 (multi-token prediction), the chance
	                            * each of the s_q - 1 draft tokens of a step is accepted (default 1) */
	int32_t kv_dtypes[4];      /* enum mla_kv_dtype, in file order */
	int n_kv_dtypes;
	/*
	 * The sparse form (DeepSeek Sparse Attention; docs/DESIGN.md "Workloads of the sparse form"):
	 * a workload is sparse when model.topk is given or kv_dtypes lists a block-scaled format
	 * (fp8_ds_mla, fp8_model1 and their _fnuz twins); its formats are then all V3.2 ones (bf16,
	 * fp8_ds_mla, fp8_ds_mla_fnuz) or all V4 ones (fp8_model1, fp8_model1_fnuz). topk: indices per
	 * query row into the main cache (default 2048 for V3.2, 128 for V4; 0: the dense form).
	 * extra_topk (V4 only, default 1024; 0: no extra cache): indices into the extra cache, V4's
	 * compressed cache, which holds floor(context / extra_compress) rows of a sequence of context
	 * keys (default 4) in pages of extra_page_size rows (default page_size). attn_sink: the
	 * model has per-head sink logits (default 0).
	 */
	int topk, extra_topk, extra_compress, extra_page_size, attn_sink;
	int concurrency[64]; /* ascending, distinct, 1..WORKLOAD_MAX_CONCURRENCY */
	int n_concurrency;
	char *trace;                                        /* traffic.trace as written (NULL with a histogram) */
	char *trace_path;                                   /* resolved against the workload file's directory */
	char *context_column;                               /* traffic.context_column or NULL (the known names) */
	char *generated_column;                             /* traffic.generated_column or NULL */
	struct workload_bin *context_bins, *generated_bins; /* traffic.histogram (shares sum to 1) */
	int n_context_bins, n_generated_bins;
	int steps;     /* sampled decode steps per concurrency (default 4096) */
	int tasks;     /* at most this many tasks in all (default 16) */
	uint64_t seed; /* default 1 */
	struct workload_unknown *unknown;
	int unknown_count;
};

/** One request of a trace. */
struct workload_request {
	int32_t context;   /* prompt tokens */
	int32_t generated; /* generated tokens: decode steps */
};

/** A trace as read. Release with workload_trace_release(). */
struct workload_trace {
	char *path;
	char sha256[65]; /* of the file's bytes */
	struct workload_request *requests;
	int count;
};

/**
 * The steps of one concurrency: seqlens[s * concurrency + b] is the keys of slot b at sampled step
 * s. Release with workload_sim_release().
 */
struct workload_sim {
	int concurrency;
	int steps;
	int32_t *seqlens;
};

/** How workload_simulate() runs; WORKLOAD_SIM_OPTIONS_INIT is what workload_derive() uses. */
struct workload_sim_options {
	int steps;      /* steps to sample */
	int64_t warmup; /* decode steps before the first sample; -1: the default rule (DESIGN.md) */
	int start;      /* request index the stream starts at; -1: drawn from seed */
	int stride;     /* sample every stride-th step after the warm-up; -1: the default rule */
	int phase;      /* 1: each slot starts at a random point of its first request (seeded) */
	uint64_t seed;
};
#define WORKLOAD_SIM_OPTIONS_INIT                                                                                      \
	{                                                                                                              \
		.steps = 1, .warmup = -1, .start = -1, .stride = -1, .phase = 1, .seed = 1                             \
	}

/** A representative task: a real sampled step and the steps it stands for. */
struct workload_task {
	int concurrency;
	int batch;          /* = concurrency */
	int32_t *seqlens;   /* [batch], owned; keys per sequence */
	int steps;          /* sampled steps this task stands for */
	double weight;      /* steps / all sampled steps of the workload; the weights sum to 1 */
	int64_t total_keys; /* sum of seqlens */
	int64_t attended;   /* keys a decode call reads per query row, summed over the batch
	                     * (workload_attended()): total_keys for the dense form */
	int32_t max_seqlen;
	int step; /* index of the represented step among its concurrency's samples */
};

/**
 * Keys one query row of a sequence of context keys attends to: context in the dense form;
 * min(context, topk) + min(floor(context / extra_compress), extra_topk) in the sparse form (the
 * valid entries the generator draws, before its few holes). What grouping ranks steps by.
 */
int64_t workload_attended(const struct workload *w, int32_t context);

/** The tasks of a workload, in order of concurrency, then attended keys (total keys for the dense form). Release with workload_tasks_release(). */
struct workload_tasks {
	struct workload_task *items;
	int count;
	int64_t steps_total; /* sampled steps over all concurrencies */
	char workload_sha256[65];
	char trace_sha256[65]; /* "" for a histogram */
	uint64_t seed;
};

/**
 * Read, parse and check the workload at path: YAML, types, ranges, id against the file name, the
 * trace file present, the sparse keys consistent with the formats. Every problem is reported (one line each); unknown keys are warnings. On
 * success fills *w (release with workload_release()).
 * Errors: VS_EIO, VS_EPARSE (YAML, a file over WORKLOAD_MAX_BYTES), VS_ESCHEMA.
 */
int workload_load(struct workload *w, const char *path);

/** Same as workload_load() on text in memory; path is used for messages, the id and the trace. */
int workload_parse(struct workload *w, const char *path, const char *text, size_t len);

/** Free everything w owns; w may be zeroed or partly filled. */
void workload_release(struct workload *w);

/**
 * Read a trace: ".csv" (header row) or ".jsonl" by its name. Columns: context_column or, when NULL,
 * the first present of "ContextTokens" (Azure LLM inference traces 2023/2024), "Request tokens"
 * (BurstGPT) in CSV and "input_length" (Mooncake) in JSONL; generated_column or "GeneratedTokens",
 * "Response tokens", "output_length". Values are integers 0..WORKLOAD_MAX_TOKENS. Fills *t on
 * success. Errors: VS_EIO, VS_EPARSE (size limits, a bad row: one line naming file, line, row and
 * column), VS_ESCHEMA (a column not in the header, no request with generated tokens).
 */
int workload_trace_read(struct workload_trace *t, const char *path, const char *context_column,
			const char *generated_column);

/** Free what t owns; t may be zeroed. */
void workload_trace_release(struct workload_trace *t);

/**
 * Continuous batching of requests at one concurrency (DESIGN.md): requests come from the trace in
 * order from opts->start, wrapping around, or, with trace NULL, are drawn from w's histogram. Fills
 * *out (release with workload_sim_release()). Errors: VS_ENOMEM, VS_ESCHEMA (no request decodes).
 */
int workload_simulate(struct workload_sim *out, const struct workload *w, const struct workload_trace *trace,
		      int concurrency, const struct workload_sim_options *opts);

/** Free what s owns. */
void workload_sim_release(struct workload_sim *s);

/**
 * The workload's tasks: simulate each concurrency (w->steps samples, w->seed), group its steps
 * (DESIGN.md: quantiles of attended keys (workload_attended(); total keys in the dense form), then
 * of the longest sequence within each) into its share of
 * w->tasks, keep per group the sampled step nearest the group's centroid. trace is NULL for a
 * histogram workload. Fills *out (release with workload_tasks_release()). Errors: VS_ENOMEM,
 * VS_ESCHEMA.
 */
int workload_derive(struct workload_tasks *out, const struct workload *w, const struct workload_trace *trace);

/** Free what t owns; t may be zeroed. */
void workload_tasks_release(struct workload_tasks *t);

/**
 * `--static FILE.yaml`: workload_load(), the trace read and the tasks derived, so that every error a
 * plan from this workload would meet is shown now (one line each). Prints nothing on success.
 * Errors: those of workload_load(), workload_trace_read() and workload_derive().
 */
int workload_lint(const char *path);

#endif /* VS_WORKLOAD_H */
