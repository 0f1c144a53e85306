/* The Prometheus text exposition (format 0.0.4) of the metrics table:
 * metrics_render walks the rows in order and writes each family's HELP and
 * TYPE lines and its samples. It knows the format, not the metrics. */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "metrics.h"
#include "metrics_table.h"
#include "base/redact.h"

static void put_double(model_buf_t *out, double v) {
  if (isinf(v)) model_buf_puts(out, v > 0 ? "+Inf" : "-Inf");
  else if (isnan(v)) model_buf_puts(out, "NaN");
  else model_buf_printf(out, "%.15g", v);
}

static void put_sample(model_buf_t *out, metrics_sample_t s) {
  if (s.kind == METRICS_U64) model_buf_printf(out, "%llu", (unsigned long long)s.v.u);
  else if (s.kind == METRICS_I64) model_buf_printf(out, "%lld", (long long)s.v.i);
  else put_double(out, s.v.f);
}

static void put_header(model_buf_t *out, const metrics_def_t *m) {
  static const char *const types[] = {"counter", "gauge", "histogram"};
  model_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name, types[m->type]);
}

/* A label value between double quotes. Backslash, double quote and newline
 * are escaped, as the format requires; a value from outside the worker
 * (scrub) is first scrubbed of every configured secret, since a label is
 * shown to whoever scrapes. */
static void put_label_value(model_buf_t *out, const char *value, bool scrub) {
  model_buf_t clean = MODEL_BUF_INIT;
  if (scrub) {
    redact_set_scrub(redact_global(), value, strlen(value), &clean);
    model_buf_putc(&clean, '\0');
    value = clean.data;
  }
  model_buf_putc(out, '"');
  for (const char *v = value; *v; v++) {
    if (*v == '\\') model_buf_puts(out, "\\\\");
    else if (*v == '"') model_buf_puts(out, "\\\"");
    else if (*v == '\n') model_buf_puts(out, "\\n");
    else model_buf_putc(out, *v);
  }
  model_buf_putc(out, '"');
  model_buf_destroy(&clean);
}

/* name{l1="v1",l2="v2"} value, or name value without labels. */
static void put_series(model_buf_t *out, const metrics_def_t *m, const char *const *values, metrics_sample_t v) {
  model_buf_puts(out, m->name);
  for (size_t l = 0; l < m->nlabels; l++) {
    model_buf_printf(out, "%c%s=", l ? ',' : '{', m->labels[l].name);
    put_label_value(out, values[l], m->labels[l].scrub);
  }
  model_buf_puts(out, m->nlabels ? "} " : " ");
  put_sample(out, v);
  model_buf_putc(out, '\n');
}

/* Every combination of the fixed label values, the first label outermost:
 * slot k is the k-th combination. */
static void render_slots(model_buf_t *out, const metrics_def_t *m) {
  size_t idx[METRICS_MAX_LABELS] = {0};
  for (size_t k = 0; k < m->nslots; k++) {
    metrics_slot_labels(m, k, idx);
    if (m->has_series && !m->has_series(idx)) continue;
    const char *values[METRICS_MAX_LABELS];
    for (size_t l = 0; l < m->nlabels; l++) values[l] = metrics_label_value(&m->labels[l], idx[l]);
    uint64_t v = atomic_load_explicit(&m->slots[k], memory_order_relaxed);
    put_series(out, m, values, (metrics_sample_t){.kind = METRICS_U64, .v.u = v});
  }
}

static void render_hist(model_buf_t *out, const metrics_def_t *m) {
  metrics_hist_t *h = m->hist;
  pthread_mutex_lock(&h->lock);
  uint64_t cum = 0;
  for (size_t b = 0; b <= m->nbounds; b++) {
    cum += h->counts[b];
    model_buf_printf(out, "%s_bucket{le=\"", m->name);
    put_double(out, b < m->nbounds ? m->bounds[b] : INFINITY);
    model_buf_printf(out, "\"} %llu\n", (unsigned long long)cum);
  }
  model_buf_printf(out, "%s_sum ", m->name);
  put_double(out, h->sum);
  model_buf_printf(out, "\n%s_count %llu\n", m->name, (unsigned long long)h->count);
  pthread_mutex_unlock(&h->lock);
}

typedef struct emit_ctx {
  model_buf_t *out;
  const metrics_def_t *m;
} emit_ctx_t;

static void emit_series(void *ctx, const char *const *values, metrics_sample_t v) {
  emit_ctx_t *e = ctx;
  put_series(e->out, e->m, values, v);
}

void metrics_render(model_buf_t *out) {
  metrics_scrape_t scrape;
  metrics_proc_read(&scrape.proc);
  scrape.ready = metrics_ready(NULL, 0);
  scrape.change_oldest_s = metrics_change_events_oldest_seconds();
  scrape.unwritten_oldest_s = metrics_oldest_unwritten_seconds();
  for (size_t r = 0; r < METRICS_ROW_COUNT; r++) {
    const metrics_def_t *m = &metrics_table[r];
    metrics_sample_t v;
    if (m->read && !m->read(&scrape, &v)) continue; /* left out, not made up */
    put_header(out, m);
    if (m->read) put_series(out, m, NULL, v);
    else if (m->slots) render_slots(out, m);
    else if (m->hist) render_hist(out, m);
    else if (m->part) metrics_part_each(m->part, emit_series, &(emit_ctx_t){out, m});
  }
}
