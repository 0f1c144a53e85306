/* The metrics table (internal to metrics*.c and the docs generator).
 *
 * One row per metric family, in the order /metrics lists them: its name,
 * type, help text (what it means to an operator), labels with their values,
 * histogram buckets, and where its samples come from. The recorders
 * (metrics.c) write into the storage a row points to, the renderer
 * (metrics_render.c) and docs/METRICS.md (tests/tools/gen_metrics_doc.c)
 * walk the rows; adding a metric is adding a row, its storage and its
 * recorder.
 *
 * Why fixed label values: every label set except the per-partition ones
 * (topic, partition) is known when the worker is built, so each series is one slot, rendered even
 * at zero: a series that appears only after its first event makes rate()
 * and alerts blind to the first increment.
 *
 * Threads: counters and gauges are relaxed atomics, so the pipeline records
 * without a lock; a histogram has its own mutex (it changes once per flush,
 * not per message); the HTTP thread renders. */
#ifndef METRICS_TABLE_H
#define METRICS_TABLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "metrics_proc.h"

typedef enum { METRICS_COUNTER, METRICS_GAUGE, METRICS_HISTOGRAM } metrics_type_t;

/* The rows, in table order: the recorders find their row by this index. */
typedef enum {
  METRICS_ROW_COMMANDS,
  METRICS_ROW_REJECTS,
  METRICS_ROW_STORE_WRITES,
  METRICS_ROW_STORE_WRITE_BYTES,
  METRICS_ROW_STORE_TOO_LARGE,
  METRICS_ROW_DEAD_LETTERS,
  METRICS_ROW_STORE_RETRIES,
  METRICS_ROW_DIRTY,
  METRICS_ROW_CACHED,
  METRICS_ROW_CACHED_LIMIT,
  METRICS_ROW_CACHED_BYTES,
  METRICS_ROW_CACHED_BYTES_LIMIT,
  METRICS_ROW_PENDING_BYTES,
  METRICS_ROW_PENDING_BYTES_LIMIT,
  METRICS_ROW_FETCH_PAUSED,
  METRICS_ROW_READY,
  METRICS_ROW_ASSIGNED_PARTITIONS,
  METRICS_ROW_REBALANCES,
  METRICS_ROW_BUILD_INFO,
  METRICS_ROW_CONSUMER_LAG,
  METRICS_ROW_COMMITTED_LAG,
  METRICS_ROW_OLDEST_UNCOMMITTED_AGE,
  METRICS_ROW_FLUSH_SECONDS,
  METRICS_ROW_FLUSH_AGGREGATES,
  METRICS_ROW_DURABLE_LATENCY,
  METRICS_ROW_COMMITTABLE_LATENCY,
  METRICS_ROW_PROCESS_CPU,
  METRICS_ROW_PROCESS_START,
  METRICS_ROW_PROCESS_VIRTUAL,
  METRICS_ROW_PROCESS_RESIDENT,
  METRICS_ROW_PROCESS_FDS,
  METRICS_ROW_COUNT
} metrics_row_t;

#define METRICS_MAX_LABELS 2
#define METRICS_HIST_MAX_BOUNDS 40

typedef struct metrics_label {
  const char *name;
  /* Fixed values, in the order their series are listed: count of them, from
   * values[] or, for names another module owns, from value_at(i).
   * count 0: the values are known only at run time (see doc). */
  size_t count;
  const char *const *values;
  const char *(*value_at)(size_t i);
  /* The value comes from outside the worker (a topic name): scrubbed of
   * every configured secret before it is shown. */
  bool scrub;
  /* For docs/METRICS.md, when the values are not listed: what they are. */
  const char *doc;
} metrics_label_t;

/* One sample's value, formatted as its kind: an integer exactly, a double
 * with 15 significant digits. */
typedef struct metrics_sample {
  enum { METRICS_U64, METRICS_I64, METRICS_F64 } kind;
  union {
    uint64_t u;
    int64_t i;
    double f;
  } v;
} metrics_sample_t;

/* What a scrape reads once for every row that needs it. */
typedef struct metrics_scrape {
  metrics_proc_t proc;
} metrics_scrape_t;

/* Per bucket, not cumulative; the last is above every bound. Guarded by lock. */
typedef struct metrics_hist {
  pthread_mutex_t lock;
  uint64_t counts[METRICS_HIST_MAX_BOUNDS + 1];
  uint64_t count;
  double sum;
} metrics_hist_t;

/* Receives one series of a family whose label values are known only at run
 * time: one value per label of the row, in the row's order. */
typedef void (*metrics_emit_fn)(void *ctx, const char *const *label_values, metrics_sample_t value);

typedef struct metrics_def {
  const char *name;
  metrics_type_t type;
  const char *help;
  size_t nlabels;
  metrics_label_t labels[METRICS_MAX_LABELS];
  /* Where the samples come from: exactly one of slots, hist, read, each. */
  _Atomic uint64_t *slots; /* one per combination of fixed label values, the first label outermost */
  size_t nslots;
  bool (*has_series)(const size_t *value_index); /* with slots; NULL: every combination is a series */
  metrics_hist_t *hist;
  const double *bounds; /* with hist: ascending upper bounds (le); +Inf is implied */
  size_t nbounds;
  /* A value taken at scrape time, for a family without labels; false: the
   * value cannot be had and the family is left out. */
  bool (*read)(const metrics_scrape_t *scrape, metrics_sample_t *out);
  /* Calls emit for every series of a family with run-time label values. */
  void (*each)(metrics_emit_fn emit, void *ctx);
} metrics_def_t;

extern const metrics_def_t metrics_table[METRICS_ROW_COUNT];

/* The i-th value of a fixed label; NULL past the last. */
const char *metrics_label_value(const metrics_label_t *l, size_t i);
/* The label values of slot k of m: value_index[l] for each label, the first
 * label outermost. */
void metrics_slot_labels(const metrics_def_t *m, size_t k, size_t value_index[METRICS_MAX_LABELS]);

/* The registry's per-partition series (metrics.c): the lag from the
 * position, the lag from the committed offset and the oldest uncommitted
 * command's age, each reported under the partition table's lock; release
 * frees the table. */
void metrics_lag_each(metrics_emit_fn emit, void *ctx);
void metrics_committed_lag_each(metrics_emit_fn emit, void *ctx);
void metrics_oldest_uncommitted_each(metrics_emit_fn emit, void *ctx);
void metrics_lag_release(void);

#endif
