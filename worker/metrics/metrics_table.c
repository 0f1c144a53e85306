/* The metrics table and the storage its rows point to (metrics_table.h).
 * The help texts are what an operator reads next to a graph: what the
 * number counts, not how it is computed. */
#include "metrics_table.h"

#include "command.h"
#include "metrics.h"

#ifndef AGG_VERSION
#define AGG_VERSION "unknown"
#endif

#define NB(a) (sizeof(a) / sizeof((a)[0]))
#define SLOTS(a) .slots = (a), .nslots = NB(a)
#define BOUNDS(a) .bounds = (a), .nbounds = NB(a)
#define HIST_INIT {PTHREAD_MUTEX_INITIALIZER, {0}, 0, 0}

/* ---- label values ---- */

static const char *const cmd_results[] = {"applied", "stale", "rejected"};
static const char *const write_results[] = {"ok", "conflict", "error"};
static const char *const dead_letter_results[] = {"ok", "error"};
static const char *const rebalance_events[] = {"assigned", "revoked", "lost"};
static const char *const versions[] = {AGG_VERSION};

/* The command types, then "invalid" for a rejected command whose type is unknown. */
static const char *cmd_type_at(size_t i) {
  return i < MODEL_CMD_TYPE_COUNT ? model_cmd_type_name((model_cmd_type_t)i) : "invalid";
}

/* The rejection codes but MODEL_OK, then "other" for a code out of range. */
static const char *reject_code_at(size_t i) {
  return i + 1 < MODEL_REJ_COUNT ? model_reject_code_name((model_reject_code_t)(i + 1)) : "other";
}

/* A command of unknown type can only be rejected: no applied or stale series. */
static bool cmd_has_series(const size_t *v) { return v[0] < MODEL_CMD_TYPE_COUNT || v[1] == METRICS_REJECTED; }

/* ---- storage ---- */

static _Atomic uint64_t commands[(MODEL_CMD_TYPE_COUNT + 1) * NB(cmd_results)];
static _Atomic uint64_t rejects[MODEL_REJ_COUNT];
static _Atomic uint64_t store_writes[NB(write_results)];
static _Atomic uint64_t store_write_bytes[1], store_too_large[1];
static _Atomic uint64_t dead_letters[NB(dead_letter_results)];
static _Atomic uint64_t store_retries[1];
static _Atomic uint64_t dirty[1], cached[1], pending_bytes[1];
static _Atomic uint64_t cached_limit[1], pending_bytes_limit[1], fetch_paused[1];
static _Atomic uint64_t cached_bytes[1], cached_bytes_limit[1];
static _Atomic uint64_t assigned_partitions[1], rebalances[NB(rebalance_events)];
static _Atomic uint64_t build_info[1] = {1};

static metrics_hist_t flush_seconds = HIST_INIT, flush_aggregates = HIST_INIT;
static metrics_hist_t durable_latency = HIST_INIT, committable_latency = HIST_INIT;

/* A flush is a bulk write of up to batch.max_aggregates documents to a
 * nearby store: milliseconds when healthy, seconds when it is electing or
 * throttled. */
static const double flush_seconds_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                              0.25,  0.5,    1,     2.5,  5,     10};
static const double flush_aggregates_bounds[] = {1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000};
/* Latency adds linger and queueing to flushes, so it reaches further; it is
 * what operators alert on and what the benchmark reports as quantiles, and a
 * quantile is only as precise as its bucket, so the buckets are finest
 * where linger plus a flush put them (0.1 s to 2 s), coarser beyond. */
static const double latency_bounds[] = {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.125, 0.15, 0.2, 0.25, 0.3, 0.35,
                                        0.4,   0.5,  0.6,   0.7,  0.8,   0.9, 1,     1.25, 1.5, 1.75, 2,    2.5,
                                        3,     4,    5,     7.5,  10,    15,  30,    60,   120, 300};
_Static_assert(NB(flush_seconds_bounds) <= METRICS_HIST_MAX_BOUNDS &&
                   NB(flush_aggregates_bounds) <= METRICS_HIST_MAX_BOUNDS &&
                   NB(latency_bounds) <= METRICS_HIST_MAX_BOUNDS,
               "raise METRICS_HIST_MAX_BOUNDS");

/* ---- scrape-time values ---- */

static bool read_ready(const metrics_scrape_t *s, metrics_sample_t *out) {
  (void)s;
  *out = (metrics_sample_t){.kind = METRICS_U64, .v.u = metrics_ready(NULL, 0) ? 1 : 0};
  return true;
}

static bool read_cpu(const metrics_scrape_t *s, metrics_sample_t *out) {
  *out = (metrics_sample_t){.kind = METRICS_F64, .v.f = s->proc.cpu_seconds};
  return s->proc.have_cpu;
}

static bool read_start(const metrics_scrape_t *s, metrics_sample_t *out) {
  *out = (metrics_sample_t){.kind = METRICS_F64, .v.f = s->proc.start_time_seconds};
  return s->proc.have_start;
}

static bool read_virtual(const metrics_scrape_t *s, metrics_sample_t *out) {
  *out = (metrics_sample_t){.kind = METRICS_U64, .v.u = s->proc.virtual_bytes};
  return s->proc.have_memory;
}

static bool read_resident(const metrics_scrape_t *s, metrics_sample_t *out) {
  *out = (metrics_sample_t){.kind = METRICS_U64, .v.u = s->proc.resident_bytes};
  return s->proc.have_memory;
}

static bool read_fds(const metrics_scrape_t *s, metrics_sample_t *out) {
  *out = (metrics_sample_t){.kind = METRICS_I64, .v.i = s->proc.open_fds};
  return s->proc.have_fds;
}

/* ---- the table ---- */

#define ROW(n, t, h) .name = (n), .type = (t), .help = (h)
#define LABEL(n, vals) {.name = (n), .count = NB(vals), .values = (vals)}

const metrics_def_t metrics_table[METRICS_ROW_COUNT] = {
    [METRICS_ROW_COMMANDS] = {ROW("aggregator_commands_total", METRICS_COUNTER,
                                  "Commands consumed, by type and result (applied changed an aggregate, stale lost "
                                  "to a newer stamp; a command rejected late, document_too_large once its stored "
                                  "document was loaded, counted applied when merged and counts rejected then)."),
                              .nlabels = 2,
                              .labels = {{.name = "type", .count = MODEL_CMD_TYPE_COUNT + 1, .value_at = cmd_type_at},
                                         LABEL("result", cmd_results)},
                              SLOTS(commands), .has_series = cmd_has_series},
    [METRICS_ROW_REJECTS] = {ROW("aggregator_rejects_total", METRICS_COUNTER,
                                 "Rejected commands sent to the dead-letter topic, by error code."),
                             .nlabels = 1,
                             .labels = {{.name = "code", .count = MODEL_REJ_COUNT, .value_at = reject_code_at}},
                             SLOTS(rejects)},
    [METRICS_ROW_STORE_WRITES] = {ROW("aggregator_store_writes_total", METRICS_COUNTER,
                                      "Aggregate documents written to the store, by result (conflict: another writer "
                                      "got there first)."),
                                  .nlabels = 1, .labels = {LABEL("result", write_results)}, SLOTS(store_writes)},
    [METRICS_ROW_STORE_WRITE_BYTES] = {ROW("aggregator_store_write_bytes_total", METRICS_COUNTER,
                                           "BSON bytes of the documents and partial updates the store acknowledged "
                                           "(the size of what flushes ship)."),
                                       SLOTS(store_write_bytes)},
    [METRICS_ROW_STORE_TOO_LARGE] = {ROW("aggregator_store_too_large_total", METRICS_COUNTER,
                                         "Aggregate writes the store refused because the document would pass its 16 "
                                         "MiB limit, which the merge prevents by rejecting the command "
                                         "(document_too_large): a bug; the changes are kept and retried, their "
                                         "offsets uncommitted (docs/OPERATIONS.md)."),
                                     SLOTS(store_too_large)},
    [METRICS_ROW_DEAD_LETTERS] = {ROW("aggregator_dead_letter_deliveries_total", METRICS_COUNTER,
                                      "Rejected commands acknowledged by the dead-letter topic (ok), and delivery "
                                      "attempts that failed and are retried (error); a reject's offset commits only "
                                      "once it is acknowledged."),
                                  .nlabels = 1, .labels = {LABEL("result", dead_letter_results)}, SLOTS(dead_letters)},
    [METRICS_ROW_STORE_RETRIES] = {ROW("aggregator_store_retries_total", METRICS_COUNTER,
                                       "Flushes the store failed (unreachable, timed out, refused items), attempted "
                                       "again after a backoff."),
                                   SLOTS(store_retries)},
    [METRICS_ROW_DIRTY] = {ROW("aggregator_dirty_aggregates", METRICS_GAUGE,
                               "Aggregates changed in memory and not yet written."),
                           SLOTS(dirty)},
    [METRICS_ROW_CACHED] = {ROW("aggregator_cached_aggregates", METRICS_GAUGE,
                                "Clean aggregates kept in memory (LRU cache)."),
                            SLOTS(cached)},
    [METRICS_ROW_CACHED_LIMIT] = {ROW("aggregator_cached_aggregates_limit", METRICS_GAUGE,
                                      "The configured cache.max_aggregates: the most clean aggregates the cache "
                                      "keeps."),
                                  SLOTS(cached_limit)},
    [METRICS_ROW_CACHED_BYTES] = {ROW("aggregator_cached_bytes", METRICS_GAUGE,
                                      "Memory held by the clean aggregates kept in memory, measured as "
                                      "aggregator_pending_bytes is."),
                                  SLOTS(cached_bytes)},
    [METRICS_ROW_CACHED_BYTES_LIMIT] = {ROW("aggregator_cached_bytes_limit", METRICS_GAUGE,
                                            "The configured cache.max_bytes: the most memory the clean aggregates "
                                            "kept hold."),
                                        SLOTS(cached_bytes_limit)},
    [METRICS_ROW_PENDING_BYTES] = {ROW("aggregator_pending_bytes", METRICS_GAUGE,
                                       "Memory held by unwritten changes; fetching pauses past "
                                       "batch.max_pending_bytes."),
                                   SLOTS(pending_bytes)},
    [METRICS_ROW_PENDING_BYTES_LIMIT] = {ROW("aggregator_pending_bytes_limit", METRICS_GAUGE,
                                             "The configured batch.max_pending_bytes: past it fetching pauses."),
                                         SLOTS(pending_bytes_limit)},
    [METRICS_ROW_FETCH_PAUSED] = {ROW("aggregator_fetch_paused", METRICS_GAUGE,
                                      "1 while fetching is paused because unwritten changes reached "
                                      "batch.max_pending_bytes."),
                                  SLOTS(fetch_paused)},
    [METRICS_ROW_READY] = {ROW("aggregator_ready", METRICS_GAUGE,
                               "1 when /readyz answers 200 (assigned partitions, dead-letter delivery working, store "
                               "answering)."),
                           .read = read_ready},
    [METRICS_ROW_ASSIGNED_PARTITIONS] = {ROW("aggregator_assigned_partitions", METRICS_GAUGE,
                                             "Partitions this worker holds in its consumer group."),
                                         SLOTS(assigned_partitions)},
    [METRICS_ROW_REBALANCES] = {ROW("aggregator_rebalances_total", METRICS_COUNTER,
                                    "Consumer group rebalances seen by this worker, by event (assigned: partitions "
                                    "given to it; revoked: taken back after it wrote and committed them; lost: "
                                    "taken without a hand-over)."),
                                .nlabels = 1, .labels = {LABEL("event", rebalance_events)}, SLOTS(rebalances)},
    [METRICS_ROW_BUILD_INFO] = {ROW("aggregator_build_info", METRICS_GAUGE, "Always 1; the labels tell the build."),
                                .nlabels = 1,
                                .labels = {{.name = "version", .count = 1, .values = versions,
                                            .doc = "the worker's version"}},
                                SLOTS(build_info)},
    [METRICS_ROW_CONSUMER_LAG] = {ROW("aggregator_consumer_lag", METRICS_GAUGE,
                                      "Messages between the consumer position and the high watermark."),
                                  .nlabels = 2,
                                  .labels = {{.name = "topic", .scrub = true, .doc = "an assigned topic"},
                                             {.name = "partition", .doc = "an assigned partition of it"}},
                                  .each = metrics_lag_each},
    [METRICS_ROW_COMMITTED_LAG] = {ROW("aggregator_consumer_committed_lag", METRICS_GAUGE,
                                       "Messages between the group's committed offset and the high watermark (what "
                                       "an autoscaler reading the group's offsets sees)."),
                                   .nlabels = 2,
                                   .labels = {{.name = "topic", .scrub = true, .doc = "an assigned topic"},
                                              {.name = "partition", .doc = "an assigned partition of it"}},
                                   .each = metrics_committed_lag_each},
    [METRICS_ROW_OLDEST_UNCOMMITTED_AGE] = {ROW("aggregator_oldest_uncommitted_age_seconds", METRICS_GAUGE,
                                                "Age, from its Kafka timestamp, of the oldest command consumed and "
                                                "not yet committed; 0 when every command consumed is committed. "
                                                "The topic's retention runs against the same timestamp."),
                                            .nlabels = 2,
                                            .labels = {{.name = "topic", .scrub = true, .doc = "an assigned topic"},
                                                       {.name = "partition", .doc = "an assigned partition of it"}},
                                            .each = metrics_oldest_uncommitted_each},
    [METRICS_ROW_FLUSH_SECONDS] = {ROW("aggregator_flush_duration_seconds", METRICS_HISTOGRAM,
                                       "Time to write one batch of aggregates to the store, retries included."),
                                   .hist = &flush_seconds, BOUNDS(flush_seconds_bounds)},
    [METRICS_ROW_FLUSH_AGGREGATES] = {ROW("aggregator_flush_aggregates", METRICS_HISTOGRAM,
                                          "Aggregates written by one flush."),
                                      .hist = &flush_aggregates, BOUNDS(flush_aggregates_bounds)},
    [METRICS_ROW_DURABLE_LATENCY] = {ROW("aggregator_command_durable_latency_seconds", METRICS_HISTOGRAM,
                                         "Time from a command's Kafka timestamp (when it was produced) to its "
                                         "aggregate being durable in the store."),
                                     .hist = &durable_latency, BOUNDS(latency_bounds)},
    [METRICS_ROW_COMMITTABLE_LATENCY] = {ROW("aggregator_command_committable_latency_seconds", METRICS_HISTOGRAM,
                                             "Time from a command's Kafka timestamp (when it was produced) to its "
                                             "offset becoming committable: it and every command read before it "
                                             "durable."),
                                         .hist = &committable_latency, BOUNDS(latency_bounds)},
    [METRICS_ROW_PROCESS_CPU] = {ROW("process_cpu_seconds_total", METRICS_COUNTER,
                                     "Total user and system CPU time spent in seconds."),
                                 .read = read_cpu},
    [METRICS_ROW_PROCESS_START] = {ROW("process_start_time_seconds", METRICS_GAUGE,
                                       "Start time of the process since unix epoch in seconds."),
                                   .read = read_start},
    [METRICS_ROW_PROCESS_VIRTUAL] = {ROW("process_virtual_memory_bytes", METRICS_GAUGE,
                                         "Virtual memory size in bytes."),
                                     .read = read_virtual},
    [METRICS_ROW_PROCESS_RESIDENT] = {ROW("process_resident_memory_bytes", METRICS_GAUGE,
                                          "Resident memory size in bytes."),
                                      .read = read_resident},
    [METRICS_ROW_PROCESS_FDS] = {ROW("process_open_fds", METRICS_GAUGE, "Number of open file descriptors."),
                                 .read = read_fds},
};

const char *metrics_label_value(const metrics_label_t *l, size_t i) {
  if (i >= l->count) return NULL;
  return l->value_at ? l->value_at(i) : l->values[i];
}

void metrics_slot_labels(const metrics_def_t *m, size_t k, size_t value_index[METRICS_MAX_LABELS]) {
  for (size_t l = m->nlabels; l-- > 0; k /= m->labels[l].count) value_index[l] = k % m->labels[l].count;
}
