/*
 * op_mla.h - the MLA decode operator's own functions beyond its table (op.h vs_op_mla_decode): how
 * a task's spec and input set become the kernel ABI's arguments (kernels/mla_decode.h), for the
 * callers that bind them (measure's launches, the plan's supports() questions, the oracle).
 */
#ifndef VS_OP_MLA_H
#define VS_OP_MLA_H

#include <stddef.h>
#include <stdint.h>

struct mla_decode_args; /* kernels/mla_decode.h */
struct task_spec;
struct task_set;
struct st_tensor; /* safetensors.h */
struct cJSON;
struct card;
struct plan;
struct workload;
struct workload_tasks;

/** Bytes of one cache page: mla_kv_page_bytes() of the spec's format and page_size. */
size_t mla_task_page_bytes(const struct task_spec *s);

/**
 * The shapes and scalars of task s as an implementation sees them (kernels/mla_decode.h): *a zeroed,
 * then batch, s_q, h_q, page_size, max_pages, kv_dtype, softmax_scale, num_pages counted from the
 * virtual base (num_pages + page_offset), kv_scale 1 (a set's own is the caller's to set), d_qk and
 * d_v; sparse form: topk, extra_topk, extra_num_pages, extra_page_size, and max_pages 0.
 */
void mla_task_kernel_shape(struct mla_decode_args *a, const struct task_spec *s);

/**
 * The oracle's arguments for task s on these inputs (host pointers): shapes and scalars from s, the
 * kv_scale given; when s places its pages past a virtual page_offset, block_table is copied and
 * rebased into *bt_owned (malloc'd: free it after the oracle ran; NULL when no copy was made).
 * Returns 0 or VS_ENOMEM.
 */
int mla_task_oracle_args(struct mla_decode_args *a, int32_t **bt_owned, const struct task_spec *s, const void *q,
			 const void *kv_cache, const int32_t *block_table, const int32_t *seqlens, float kv_scale);

/**
 * The oracle's arguments for input set ts of task s, with q in place of the set's (the set's own
 * when q is NULL): mla_task_oracle_args() and, in the sparse form, the set's indices, topk_length,
 * attn_sink and extra cache. Returns 0 or VS_ENOMEM; *bt_owned as mla_task_oracle_args().
 */
int mla_task_set_oracle_args(struct mla_decode_args *a, int32_t **bt_owned, const struct task_spec *s,
			     const struct task_set *ts, const void *q);

/**
 * FlashMLA's counts of the sparse form (op_mla.c's bytes and flops): over input set 0 of s as
 * generated, *attended the valid index entries of every query row (not -1, within topk_length),
 * *retrieved the distinct cache rows they name, both caches together; 0 and 0 for a spec that
 * cannot be generated.
 */
void mla_sparse_counts(const struct task_spec *s, double *attended, double *retrieved);

/**
 * The generator (op_mla_gen.c; op.h generate_inputs). Generate input set k of a (valid) spec:
 * the exact bytes of its inputs.safetensors (tensors as mla_task_inputs() lists them; metadata
 * format, task, generator, set, seed, kv_dtype, kv_scale, softmax_scale, page_offset) into a
 * malloc'd *buf of *len bytes, and its kv_scale (1 for bf16).
 * Errors: VS_ESCHEMA (invalid spec), VS_ENOMEM.
 */
int mla_generate_inputs(char **buf, size_t *len, float *kv_scale, const struct task_spec *s, int k);

/**
 * The input tensors of a task's inputs files in file order (op.h inputs; op_mla_gen.c): q,
 * kv_cache, block_table, seqlens, then the sparse form's present ones (indices, topk_length,
 * attn_sink, the extra cache's four, extra_topk_length). Names are static strings, data unset.
 * Returns how many (4 for a dense task, at most VS_TASK_MAX_INPUTS).
 */
int mla_task_inputs(struct st_tensor *t, const struct task_spec *s);

/** The reference file's tensors (op.h outputs): out [b,s_q,h_q,512] F32, lse [b,h_q,s_q] F32. */
void mla_task_outputs(struct st_tensor *t, const struct task_spec *s);

/**
 * The manifest's "shapes" and "dtypes" of a task (op.h manifest_tensors): q, kv_cache,
 * block_table, seqlens, out, lse, then the sparse form's present inputs; dtypes adds
 * kv_cache_storage after kv_cache. Returns 1, or 0 out of memory.
 */
int mla_manifest_tensors(struct cJSON *shapes, struct cJSON *dtypes, const struct task_spec *s);

/*
 * MLA decode's plans (op_mla_plan.c; the entries of op.h's "Planning"): the card's formats checked
 * (mla_plan_card), the tasks of a tier or a workload (mla_derive_tasks: the shape grids, the
 * formats card_form() selects with their topk, the workload's sampled steps), the form line, the
 * full tier's GPU-only shapes, the spec of a task's name and the e2e stage's tasks (s_q 1, bf16,
 * dense, h_q dividing 128: DeepSeek-V3's attention block at a TP degree).
 */
int mla_plan_card(const struct card *c);
int mla_derive_tasks(struct plan *np, const struct card *c, int tier_bit, int gpu, const struct workload *w,
		     const struct workload_tasks *wt);
int mla_plan_form(char **out, const struct card *c, const struct workload *w);
int mla_full_tier_extra(char *buf, size_t cap, int gpu, const struct task_spec *first);
int mla_spec_named(struct task_spec *s, const char *name);
int mla_e2e_task(const struct task_spec *s);

#endif /* VS_OP_MLA_H */
