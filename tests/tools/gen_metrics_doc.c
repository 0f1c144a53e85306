/* Writes the metrics reference (docs/METRICS.md) from the metrics table:
 * `gen_metrics_doc docs/METRICS.md`, or to stdout without an argument.
 * cli.test_metrics_doc runs it and fails when the committed file differs.
 *
 * The prose around the table lives here, with the generator: the worker
 * needs only the rows (worker/metrics/metrics_table.h) that both /metrics and this
 * document are built from. */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "gen_doc.h"
#include "metrics/metrics_table.h"
#include "metrics/readiness.h"

static const char markdown_intro[] =
    "# Metrics reference\n"
    "\n"
    "<!-- Generated from worker/metrics/metrics_table.h by `gen_metrics_doc docs/METRICS.md` (a tool in the build\n"
    "     directory); cli.test_metrics_doc fails when this file is stale. Do not edit by hand. -->\n"
    "\n"
    "The worker serves three paths over HTTP on `metrics.listen` (docs/CONFIG.md); with `metrics.listen`\n"
    "empty it serves none. The alert rules (`docker/prometheus/alerts.yaml`) and the dashboard\n"
    "(`docker/grafana/aggregator-dashboard.json`) are built on them, and docs/OPERATIONS.md says what to do\n"
    "when one fires.\n"
    "\n"
    "## Health\n"
    "\n"
    "- `/healthz` answers 200 `ok` while the main loop runs: it beat within the last %lld s. Otherwise 503,\n"
    "  the body saying why (`main loop stalled: ...`): the worker is stuck and is to be restarted.\n"
    "- `/readyz` answers 200 `ok` when the worker holds a partition assignment, neither dead-letter nor\n"
    "  change-event delivery is failing, and the store answered within the last %lld s and has not failed\n"
    "  since. Otherwise 503, the body saying why (`no partition assignment`, `store unreachable`,\n"
    "  `change-event delivery failing`, ...): the worker is to be taken out of rotation, not restarted.\n"
    "  `aggregator_ready` below is the same decision.\n"
    "\n"
    "Both windows are durations on the monotonic clock: a step of the wall clock moves neither.\n"
    "\n"
    "## Metrics\n"
    "\n"
    "`/metrics` is the Prometheus text format, version 0.0.4, in the order of the table below. Every series\n"
    "whose label values are listed here is exported from the start, at zero: a series that appeared only\n"
    "after its first event would hide that event from `rate()` and from alerts. `aggregator_consumer_lag`\n"
    "has one series per assigned partition, removed when the partition is revoked; a topic name in a label\n"
    "is scrubbed of every configured secret. The `process_*` families are those of the Prometheus client\n"
    "libraries, read from `/proc`; one whose source cannot be read is left out rather than made up.\n"
    "\n"
    "| metric | type | labels | meaning |\n"
    "|---|---|---|---|\n";

static const char markdown_buckets[] =
    "\n"
    "## Histogram buckets\n"
    "\n"
    "Upper bounds (`le`) of each histogram's buckets; a `+Inf` bucket follows the last. A quantile read from\n"
    "a histogram is only as precise as the bucket it falls in.\n"
    "\n"
    "| histogram | buckets (`le`) |\n"
    "|---|---|\n";

static const char *type_name(metrics_type_t t) {
  return t == METRICS_COUNTER ? "counter" : t == METRICS_GAUGE ? "gauge" : "histogram";
}

/* `name`: the listed values, or what they are. */
static void put_labels(model_buf_t *b, const metrics_def_t *m) {
  if (!m->nlabels) model_buf_puts(b, "(none)");
  for (size_t l = 0; l < m->nlabels; l++) {
    const metrics_label_t *lab = &m->labels[l];
    model_buf_printf(b, "%s`%s`: ", l ? "; " : "", lab->name);
    if (lab->doc) {
      gen_doc_cell(b, lab->doc);
      continue;
    }
    for (size_t i = 0; i < lab->count; i++) model_buf_printf(b, "%s`%s`", i ? ", " : "", metrics_label_value(lab, i));
  }
}

/* The label combinations that have no series, when a row leaves some out. */
static void put_missing_series(model_buf_t *b, const metrics_def_t *m) {
  if (!m->has_series) return;
  size_t idx[METRICS_MAX_LABELS] = {0};
  bool first = true;
  for (size_t k = 0; k < m->nslots; k++) {
    metrics_slot_labels(m, k, idx);
    if (m->has_series(idx)) continue;
    model_buf_puts(b, first ? " (no series for " : ", ");
    first = false;
    for (size_t l = 0; l < m->nlabels; l++)
      model_buf_printf(b, "%s%s=\"%s\"", l ? "," : "`", m->labels[l].name, metrics_label_value(&m->labels[l], idx[l]));
    model_buf_putc(b, '`');
  }
  if (!first) model_buf_putc(b, ')');
}

static void describe_markdown(FILE *out) {
  model_buf_t b = MODEL_BUF_INIT;
  model_buf_printf(&b, markdown_intro, (long long)READINESS_HEARTBEAT_WINDOW_MS / 1000,
                   (long long)READINESS_STORE_WINDOW_MS / 1000);
  for (size_t r = 0; r < METRICS_ROW_COUNT; r++) {
    const metrics_def_t *m = &metrics_table[r];
    model_buf_printf(&b, "| `%s` | %s | ", m->name, type_name(m->type));
    put_labels(&b, m);
    model_buf_puts(&b, " | ");
    gen_doc_cell(&b, m->help);
    put_missing_series(&b, m);
    model_buf_puts(&b, " |\n");
  }
  model_buf_puts(&b, markdown_buckets);
  for (size_t r = 0; r < METRICS_ROW_COUNT; r++) {
    const metrics_def_t *m = &metrics_table[r];
    if (m->type != METRICS_HISTOGRAM) continue;
    model_buf_printf(&b, "| `%s` | ", m->name);
    for (size_t i = 0; i < m->nbounds; i++) model_buf_printf(&b, "%s%.15g", i ? ", " : "", m->bounds[i]);
    model_buf_puts(&b, " |\n");
  }
  fwrite(b.data, 1, b.len, out);
  model_buf_destroy(&b);
}

int main(int argc, char **argv) { return gen_doc_main(argc, argv, "gen_metrics_doc", describe_markdown); }
