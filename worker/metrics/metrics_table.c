/* The metrics table's rows and the storage they point to, each expanded
 * from the families' lines (metrics_table.h), and the labels, bucket bounds
 * and scrape-time readings those lines name. */
#include "metrics_table.h"

#include "command.h"

#ifndef AGG_VERSION
#define AGG_VERSION "unknown"
#endif

#define NB(a) (sizeof(a) / sizeof((a)[0]))
#define HIST_INIT {PTHREAD_MUTEX_INITIALIZER, {0}, 0, 0}

/* ---- labels ---- */

#define VALUE_STRING(c, value) value,
static const char *const cmd_results[] = {METRICS_CMD_RESULTS(VALUE_STRING)};
static const char *const write_results[] = {METRICS_WRITE_RESULTS(VALUE_STRING)};
static const char *const dead_letter_results[] = {METRICS_DEAD_LETTER_RESULTS(VALUE_STRING)};
static const char *const change_event_results[] = {METRICS_CHANGE_EVENT_RESULTS(VALUE_STRING)};
static const char *const rebalance_events[] = {METRICS_REBALANCE_EVENTS(VALUE_STRING)};
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

/* The labels the families name: LABEL_L its row entry, COUNT_L its number
 * of fixed values. */
#define FIXED(n, vals) {.name = (n), .count = NB(vals), .values = (vals)}
#define LABEL_CMD_TYPE {.name = "type", .count = COUNT_CMD_TYPE, .value_at = cmd_type_at}
#define COUNT_CMD_TYPE (MODEL_CMD_TYPE_COUNT + 1)
#define LABEL_CMD_RESULT FIXED("result", cmd_results)
#define COUNT_CMD_RESULT NB(cmd_results)
#define LABEL_REJECT_CODE {.name = "code", .count = COUNT_REJECT_CODE, .value_at = reject_code_at}
#define COUNT_REJECT_CODE MODEL_REJ_COUNT
#define LABEL_WRITE_RESULT FIXED("result", write_results)
#define COUNT_WRITE_RESULT NB(write_results)
#define LABEL_DEAD_LETTER_RESULT FIXED("result", dead_letter_results)
#define COUNT_DEAD_LETTER_RESULT NB(dead_letter_results)
#define LABEL_CHANGE_EVENT_RESULT FIXED("result", change_event_results)
#define COUNT_CHANGE_EVENT_RESULT NB(change_event_results)
#define LABEL_REBALANCE_EVENT FIXED("event", rebalance_events)
#define COUNT_REBALANCE_EVENT NB(rebalance_events)
#define LABEL_VERSION {.name = "version", .count = 1, .values = versions, .doc = "the worker's version"}
#define COUNT_VERSION 1
#define LABEL_TOPIC {.name = "topic", .scrub = true, .doc = "an assigned topic"}
#define LABEL_PARTITION {.name = "partition", .doc = "an assigned partition of it"}

/* ---- bucket bounds ---- */

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

/* ---- storage: one slot array or histogram per family that records ---- */

#define NO_LABELS 1
#define LABELS1(a) COUNT_##a
#define LABELS2(a, b) (COUNT_##a * COUNT_##b)
#define STORE_SLOTS(id, nslots, arg) static _Atomic uint64_t slots_##id[nslots];
#define STORE_CONST(id, nslots, arg) static _Atomic uint64_t slots_##id[nslots] = {arg};
#define STORE_HIST(id, nslots, arg)       \
  static metrics_hist_t hist_##id = HIST_INIT; \
  _Static_assert(NB(arg) <= METRICS_HIST_MAX_BOUNDS, "raise METRICS_HIST_MAX_BOUNDS");
#define STORE_READ(id, nslots, arg)
#define STORE_EACH(id, nslots, arg)
#define STORAGE(id, name, type, labels, source, arg, help) STORE_##source(id, labels, arg)
METRICS_FAMILIES(STORAGE)
#undef NO_LABELS
#undef LABELS1
#undef LABELS2

/* ---- scrape-time values ---- */

static bool read_ready(const metrics_scrape_t *s, metrics_sample_t *out) {
  *out = (metrics_sample_t){.kind = METRICS_U64, .v.u = s->ready ? 1 : 0};
  return true;
}

static bool read_change_oldest(const metrics_scrape_t *s, metrics_sample_t *out) {
  *out = (metrics_sample_t){.kind = METRICS_F64, .v.f = s->change_oldest_s};
  return true;
}

static bool read_unwritten_oldest(const metrics_scrape_t *s, metrics_sample_t *out) {
  *out = (metrics_sample_t){.kind = METRICS_F64, .v.f = s->unwritten_oldest_s};
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

#define NO_LABELS .nlabels = 0
#define LABELS1(a) .nlabels = 1, .labels = {LABEL_##a}
#define LABELS2(a, b) .nlabels = 2, .labels = {LABEL_##a, LABEL_##b}
#define SOURCE_SLOTS(id, arg) .slots = slots_##id, .nslots = NB(slots_##id), .has_series = (arg)
#define SOURCE_CONST(id, arg) .slots = slots_##id, .nslots = NB(slots_##id)
#define SOURCE_HIST(id, arg) .hist = &hist_##id, .bounds = (arg), .nbounds = NB(arg)
#define SOURCE_READ(id, arg) .read = (arg)
#define SOURCE_EACH(id, arg) .part = METRICS_PART_##arg
#define ROW(id, name_, type_, labels, source, arg, help_) \
  [METRICS_ROW_##id] = {.name = (name_), .type = METRICS_##type_, .help = (help_), labels, SOURCE_##source(id, arg)},

const metrics_def_t metrics_table[METRICS_ROW_COUNT] = {METRICS_FAMILIES(ROW)};

const char *metrics_label_value(const metrics_label_t *l, size_t i) {
  if (i >= l->count) return NULL;
  return l->value_at ? l->value_at(i) : l->values[i];
}

void metrics_slot_labels(const metrics_def_t *m, size_t k, size_t value_index[METRICS_MAX_LABELS]) {
  for (size_t l = m->nlabels; l-- > 0; k /= m->labels[l].count) value_index[l] = k % m->labels[l].count;
}
