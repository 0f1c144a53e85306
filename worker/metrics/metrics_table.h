/* The metrics table.
 *
 * One line per metric family (METRICS_FAMILIES below), in the order
 * /metrics lists them: its name, type, help text (what it means to an
 * operator), labels, where its samples come from and their storage. The
 * families' IDs and the label enums are what callers record by (metrics.h);
 * the rows (metrics_def_t, built in metrics_table.c) are internal to
 * metrics*.c and the docs generator: the recorders (metrics.c) write into
 * the storage a row points to, the renderer (metrics_render.c) and
 * docs/METRICS.md (tests/tools/gen_metrics_doc.c) walk the rows.
 *
 * Why fixed label values: every label set except the per-partition ones
 * (topic, partition) is known when the worker is built, so each series is
 * one slot, rendered even at zero: a series that appears only after its
 * first event makes rate() and alerts blind to the first increment.
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

/* Label values known when the worker is built, V(constant, value) in the
 * order of their series: the enum a recorder takes and the values listed
 * follow from the same list. */
#define METRICS_CMD_RESULTS(V) V(METRICS_APPLIED, "applied") V(METRICS_STALE, "stale") V(METRICS_REJECTED, "rejected")
#define METRICS_WRITE_RESULTS(V) \
  V(METRICS_WRITE_OK, "ok") V(METRICS_WRITE_CONFLICT, "conflict") V(METRICS_WRITE_ERROR, "error")
#define METRICS_DEAD_LETTER_RESULTS(V) V(METRICS_DEAD_LETTER_OK, "ok") V(METRICS_DEAD_LETTER_ERROR, "error")
#define METRICS_CHANGE_EVENT_RESULTS(V) V(METRICS_CHANGE_EVENT_OK, "ok") V(METRICS_CHANGE_EVENT_ERROR, "error")
#define METRICS_REBALANCE_EVENTS(V) \
  V(METRICS_REBALANCE_ASSIGNED, "assigned") V(METRICS_REBALANCE_REVOKED, "revoked") V(METRICS_REBALANCE_LOST, "lost")

#define METRICS_ENUM_CONSTANT(c, value) c,
typedef enum { METRICS_CMD_RESULTS(METRICS_ENUM_CONSTANT) } metrics_cmd_result_t;
typedef enum { METRICS_WRITE_RESULTS(METRICS_ENUM_CONSTANT) } metrics_write_result_t;
typedef enum { METRICS_DEAD_LETTER_RESULTS(METRICS_ENUM_CONSTANT) } metrics_dead_letter_result_t;
typedef enum { METRICS_CHANGE_EVENT_RESULTS(METRICS_ENUM_CONSTANT) } metrics_change_event_result_t;
typedef enum { METRICS_REBALANCE_EVENTS(METRICS_ENUM_CONSTANT) } metrics_rebalance_t;

/* ---- the families -------------------------------------------------------
 *
 * X(ID, name, type, labels, source, arg, help), one line per family (a long
 * line: the table is read row by row), in the order /metrics lists them. The row enum (METRICS_ROW_ID), the row of
 * metrics_table[] and the storage follow from the line; the generic
 * recorders (metrics.h: metrics_add, metrics_set, metrics_observe) record
 * into any family by its ID, so adding a metric is adding its line.
 *   type:   COUNTER, GAUGE or HISTOGRAM.
 *   labels: NO_LABELS, LABELS1(L) or LABELS2(L1, L2), L naming a label of
 *           metrics_table.c (LABEL_L, with COUNT_L values when fixed).
 *   source: SLOTS (an atomic per combination of the fixed label values;
 *           arg: which combinations are series, NULL for all), CONST (one
 *           series always of the value arg), HIST (arg: the ascending bucket
 *           bounds), READ (arg: reads the value when /metrics is scraped) or
 *           EACH (arg: which per-partition value of the registry, whose
 *           label values are known only at run time).
 * The help texts are what an operator reads next to a graph: what the
 * number counts, not how it is computed. */
#define METRICS_FAMILIES(X)                                                                                         \
  X(COMMANDS, "aggregator_commands_total", COUNTER, LABELS2(CMD_TYPE, CMD_RESULT), SLOTS, cmd_has_series, "Commands consumed, by type and result (applied changed an aggregate, stale lost to a newer stamp; a command rejected late, document_too_large once its stored document was loaded, counted applied when merged and counts rejected then).") \
  X(REJECTS, "aggregator_rejects_total", COUNTER, LABELS1(REJECT_CODE), SLOTS, NULL, "Rejected commands sent to the dead-letter topic, by error code.") \
  X(STORE_WRITES, "aggregator_store_writes_total", COUNTER, LABELS1(WRITE_RESULT), SLOTS, NULL, "Aggregate documents written to the store, by result (conflict: another writer got there first).") \
  X(STORE_WRITE_BYTES, "aggregator_store_write_bytes_total", COUNTER, NO_LABELS, SLOTS, NULL, "BSON bytes of the documents and partial updates the store acknowledged (the size of what flushes ship).") \
  X(STORE_TOO_LARGE, "aggregator_store_too_large_total", COUNTER, NO_LABELS, SLOTS, NULL, "Aggregate writes the store refused because the document would pass its 16 MiB limit, which the merge prevents by rejecting the command (document_too_large): a bug; the changes are kept and retried, their offsets uncommitted (docs/OPERATIONS.md).") \
  X(DEAD_LETTERS, "aggregator_dead_letter_deliveries_total", COUNTER, LABELS1(DEAD_LETTER_RESULT), SLOTS, NULL, "Rejected commands acknowledged by the dead-letter topic (ok), and delivery attempts that failed and are retried (error); a reject's offset commits only once it is acknowledged.") \
  X(CHANGE_EVENTS, "aggregator_change_events_total", COUNTER, LABELS1(CHANGE_EVENT_RESULT), SLOTS, NULL, "Change events acknowledged by the change topic (ok), and delivery attempts that failed and are retried (error); the offsets of a write's commands commit only once its event is acknowledged.") \
  X(CHANGE_EVENTS_PENDING, "aggregator_change_events_pending", GAUGE, NO_LABELS, SLOTS, NULL, "Change events produced and not yet acknowledged by the change topic.") \
  X(CHANGE_EVENTS_OLDEST, "aggregator_change_events_oldest_pending_seconds", GAUGE, NO_LABELS, READ, read_change_oldest, "Age of the oldest write whose change event is not yet acknowledged (the oldest unannounced write); 0 when every event is acknowledged.") \
  X(STORE_RETRIES, "aggregator_store_retries_total", COUNTER, NO_LABELS, SLOTS, NULL, "Flushes the store failed (unreachable, timed out, refused items), attempted again after a backoff.") \
  X(DIRTY, "aggregator_dirty_aggregates", GAUGE, NO_LABELS, SLOTS, NULL, "Aggregates changed in memory and not yet written.") \
  X(UNWRITTEN_OLDEST, "aggregator_oldest_unwritten_age_seconds", GAUGE, NO_LABELS, READ, read_unwritten_oldest, "Age of the oldest change merged in memory and not yet durable in the store; 0 when every change is written. A writer that keeps up holds it near batch.linger_ms plus a flush; it grows without bound while the writer stalls.") \
  X(WRITER_STALLED, "aggregator_writer_stalled", GAUGE, NO_LABELS, SLOTS, NULL, "1 while the worker holds unwritten changes and has landed no write for batch.stall_timeout_ms (then not ready, and the alert pages: docs/OPERATIONS.md).") \
  X(CACHED, "aggregator_cached_aggregates", GAUGE, NO_LABELS, SLOTS, NULL, "Clean aggregates kept in memory (LRU cache).") \
  X(CACHED_LIMIT, "aggregator_cached_aggregates_limit", GAUGE, NO_LABELS, SLOTS, NULL, "The configured cache.max_aggregates: the most clean aggregates the cache keeps.") \
  X(CACHED_BYTES, "aggregator_cached_bytes", GAUGE, NO_LABELS, SLOTS, NULL, "Memory held by the clean aggregates kept in memory, measured as aggregator_pending_bytes is.") \
  X(CACHED_BYTES_LIMIT, "aggregator_cached_bytes_limit", GAUGE, NO_LABELS, SLOTS, NULL, "The configured cache.max_bytes: the most memory the clean aggregates kept hold.") \
  X(PENDING_BYTES, "aggregator_pending_bytes", GAUGE, NO_LABELS, SLOTS, NULL, "Memory held by unwritten changes; fetching pauses past batch.max_pending_bytes.") \
  X(PENDING_BYTES_LIMIT, "aggregator_pending_bytes_limit", GAUGE, NO_LABELS, SLOTS, NULL, "The configured batch.max_pending_bytes: past it fetching pauses.") \
  X(FETCH_PAUSED, "aggregator_fetch_paused", GAUGE, NO_LABELS, SLOTS, NULL, "1 while fetching is paused because unwritten changes reached batch.max_pending_bytes.") \
  X(READY, "aggregator_ready", GAUGE, NO_LABELS, READ, read_ready, "1 when /readyz answers 200 (assigned partitions, dead-letter and change-event delivery working, store answering, writer not stalled).") \
  X(ASSIGNED_PARTITIONS, "aggregator_assigned_partitions", GAUGE, NO_LABELS, SLOTS, NULL, "Partitions this worker holds in its consumer group.") \
  X(REBALANCES, "aggregator_rebalances_total", COUNTER, LABELS1(REBALANCE_EVENT), SLOTS, NULL, "Consumer group rebalances seen by this worker, by event (assigned: partitions given to it; revoked: taken back after it wrote and committed them; lost: taken without a hand-over).") \
  X(BUILD_INFO, "aggregator_build_info", GAUGE, LABELS1(VERSION), CONST, 1, "Always 1; the labels tell the build.") \
  X(CONSUMER_LAG, "aggregator_consumer_lag", GAUGE, LABELS2(TOPIC, PARTITION), EACH, LAG, "Messages between the consumer position and the high watermark.") \
  X(COMMITTED_LAG, "aggregator_consumer_committed_lag", GAUGE, LABELS2(TOPIC, PARTITION), EACH, COMMITTED_LAG, "Messages between the group's committed offset and the high watermark (what an autoscaler reading the group's offsets sees).") \
  X(OLDEST_UNCOMMITTED, "aggregator_oldest_uncommitted_age_seconds", GAUGE, LABELS2(TOPIC, PARTITION), EACH, OLDEST, "Age, from its Kafka timestamp, of the oldest command consumed and not yet committed; 0 when every command consumed is committed. The topic's retention runs against the same timestamp.") \
  X(FLUSH_SECONDS, "aggregator_flush_duration_seconds", HISTOGRAM, NO_LABELS, HIST, flush_seconds_bounds, "Time to write one batch of aggregates to the store, retries included.") \
  X(FLUSH_AGGREGATES, "aggregator_flush_aggregates", HISTOGRAM, NO_LABELS, HIST, flush_aggregates_bounds, "Aggregates written by one flush.") \
  X(DURABLE_LATENCY, "aggregator_command_durable_latency_seconds", HISTOGRAM, NO_LABELS, HIST, latency_bounds, "Time from a command's Kafka timestamp (when it was produced) to its aggregate being durable in the store.") \
  X(COMMITTABLE_LATENCY, "aggregator_command_committable_latency_seconds", HISTOGRAM, NO_LABELS, HIST, latency_bounds, "Time from a command's Kafka timestamp (when it was produced) to its offset becoming committable: it and every command read before it durable.") \
  X(PROCESS_CPU, "process_cpu_seconds_total", COUNTER, NO_LABELS, READ, read_cpu, "Total user and system CPU time spent in seconds.") \
  X(PROCESS_START, "process_start_time_seconds", GAUGE, NO_LABELS, READ, read_start, "Start time of the process since unix epoch in seconds.") \
  X(PROCESS_VIRTUAL, "process_virtual_memory_bytes", GAUGE, NO_LABELS, READ, read_virtual, "Virtual memory size in bytes.") \
  X(PROCESS_RESIDENT, "process_resident_memory_bytes", GAUGE, NO_LABELS, READ, read_resident, "Resident memory size in bytes.") \
  X(PROCESS_FDS, "process_open_fds", GAUGE, NO_LABELS, READ, read_fds, "Number of open file descriptors.")


/* The rows, in table order: a recorder names its family by this index. */
#define METRICS_ROW_CONSTANT(id, ...) METRICS_ROW_##id,
typedef enum { METRICS_FAMILIES(METRICS_ROW_CONSTANT) METRICS_ROW_COUNT } metrics_row_t;

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
  bool ready;              /* metrics_ready's decision */
  double change_oldest_s;  /* age of the oldest unacknowledged change event, 0 when none */
  double unwritten_oldest_s; /* age of the oldest unwritten change, 0 when none */
} metrics_scrape_t;

/* Per bucket, not cumulative; the last is above every bound. Guarded by lock. */
typedef struct metrics_hist {
  pthread_mutex_t lock;
  uint64_t counts[METRICS_HIST_MAX_BOUNDS + 1];
  uint64_t count;
  double sum;
} metrics_hist_t;

/* The values the registry keeps per assigned partition (metrics.h). */
typedef enum { METRICS_PART_NONE, METRICS_PART_LAG, METRICS_PART_COMMITTED_LAG, METRICS_PART_OLDEST } metrics_part_t;

/* Receives one series of a family whose label values are known only at run
 * time: one value per label of the row, in the row's order. */
typedef void (*metrics_emit_fn)(void *ctx, const char *const *label_values, metrics_sample_t value);

typedef struct metrics_def {
  const char *name;
  metrics_type_t type;
  const char *help;
  size_t nlabels;
  metrics_label_t labels[METRICS_MAX_LABELS];
  /* Where the samples come from: exactly one of slots, hist, read, part. */
  _Atomic uint64_t *slots; /* one per combination of fixed label values, the first label outermost */
  size_t nslots;
  bool (*has_series)(const size_t *value_index); /* with slots; NULL: every combination is a series */
  metrics_hist_t *hist;
  const double *bounds; /* with hist: ascending upper bounds (le); +Inf is implied */
  size_t nbounds;
  /* A value taken at scrape time, for a family without labels; false: the
   * value cannot be had and the family is left out. */
  bool (*read)(const metrics_scrape_t *scrape, metrics_sample_t *out);
  /* A family with run-time label values: the registry's per-partition
   * value it lists (metrics_part_each, metrics.h). */
  metrics_part_t part;
} metrics_def_t;

extern const metrics_def_t metrics_table[METRICS_ROW_COUNT];

/* The i-th value of a fixed label; NULL past the last. */
const char *metrics_label_value(const metrics_label_t *l, size_t i);
/* The label values of slot k of m: value_index[l] for each label, the first
 * label outermost. */
void metrics_slot_labels(const metrics_def_t *m, size_t k, size_t value_index[METRICS_MAX_LABELS]);

#endif
