/* TEMPORARY: weak stand-ins for modules being written in parallel; removed when they land. */
#include "card.h"
#include "card_cmd.h"
#include "parity.h"
#include "stats.h"
#include "task.h"
#include "vs_error.h"

#define W __attribute__((weak))
#define NI vs_error(VS_EUNSUPPORTED, "not implemented yet")
W int card_load(struct card *c, const char *p) { (void)c; (void)p; return NI; }
W int card_lint(const struct card *c) { (void)c; return NI; }
W void card_release(struct card *c) { (void)c; }
W int card_hash(const struct card *c, char h[65]) { (void)c; (void)h; return NI; }
W int card_set_validation(char **o, size_t *l, const struct card *c, const struct card_validation *v) { (void)o; (void)l; (void)c; (void)v; return NI; }
W int card_check_file(const char *p) { (void)p; return NI; }
W int task_spec_hash(const struct task_spec *s, char h[65]) { (void)s; (void)h; return NI; }
W struct cJSON *task_spec_to_json(const struct task_spec *s) { (void)s; return 0; }
W int task_spec_from_json(struct task_spec *s, const struct cJSON *j, const char *w) { (void)s; (void)j; (void)w; return NI; }
W void task_spec_release(struct task_spec *s) { (void)s; }
W double task_bytes(const struct task_spec *s) { (void)s; return 0; }
W double task_flops(const struct task_spec *s) { (void)s; return 0; }
W int task_materialize(char **d, const char *r, const struct task_spec *s, int t) { (void)d; (void)r; (void)s; (void)t; return NI; }
W int task_load(struct task_data *t, const char *d) { (void)t; (void)d; return NI; }
W void task_data_release(struct task_data *t) { (void)t; }
W double stats_percentile(const double *x, int n, double p) { (void)x; (void)n; (void)p; return 0; }
W int stats_summarize(struct stats_summary *s, const double *x, int n) { (void)s; (void)x; (void)n; return NI; }
W int stats_speedup(struct stats_ci *o, const double *a, const double *b, int n, int r, uint64_t s) { (void)o; (void)a; (void)b; (void)n; (void)r; (void)s; return NI; }
W int stats_geomean_speedup(struct stats_ci *o, const double *const *a, const double *const *b, const int *n, int k, int r, uint64_t s) { (void)o; (void)a; (void)b; (void)n; (void)k; (void)r; (void)s; return NI; }
W int stats_should_stop(const struct stats_stop_rule *r, const double *a, const double *b, int n, double e) { (void)r; (void)a; (void)b; (void)n; (void)e; return 2; }
W const char *stats_stop_reason_name(int r) { (void)r; return "?"; }
W void parity_compare_bf16(struct parity_report *r, const uint16_t *a, const float *e, size_t n, const struct task_tol *t, const int *d, int k) { (void)r; (void)a; (void)e; (void)n; (void)t; (void)d; (void)k; }
W void parity_compare_f32(struct parity_report *r, const float *a, const float *e, size_t n, const struct task_tol *t, const int *d, int k) { (void)r; (void)a; (void)e; (void)n; (void)t; (void)d; (void)k; }
W void parity_describe(char *b, size_t c, const char *w, const struct parity_report *r, const char *const *n, int k) { (void)b; (void)c; (void)w; (void)r; (void)n; (void)k; }
