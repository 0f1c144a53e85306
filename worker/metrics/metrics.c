/* The recorders: the generic ones, which write into the storage of any
 * family of the metrics table (metrics_table.h), and the named ones the
 * pipeline calls, which say what its events count; the per-partition
 * series, whose labels are known only at run time; and the process-wide
 * readiness state the readiness inputs feed (readiness.h decides). */
#include "metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "metrics_table.h"
#include "oom.h"
#include "readiness.h"

static readiness_t g_readiness = READINESS_INIT;
/* What the oldest-uncommitted age is read against (NULL: the process's
 * clocks); the same clock as readiness's. */
static _Atomic(const clock_source_t *) g_clock;
/* The oldest pending change event: when it was produced, on the clock of
 * the producer that reports it (NULL: none pending). */
static _Atomic(const clock_source_t *) g_change_clock;
static _Atomic int64_t g_change_oldest_ms;
/* The oldest unwritten change: when it was applied, on the clock of the
 * consumer that reports it (NULL: nothing unwritten). */
static _Atomic(const clock_source_t *) g_unwritten_clock;
static _Atomic int64_t g_unwritten_oldest_ms;

/* ---- the generic recorders ---- */

/* The slot of a series of a family with slots; NULL for any other. */
static _Atomic uint64_t *slot(metrics_row_t row, size_t series) {
  if ((unsigned)row >= METRICS_ROW_COUNT) return NULL;
  const metrics_def_t *m = &metrics_table[row];
  return m->slots && series < m->nslots ? &m->slots[series] : NULL;
}

void metrics_add(metrics_row_t row, size_t series, uint64_t n) {
  _Atomic uint64_t *s = slot(row, series);
  if (s && metrics_table[row].type == METRICS_COUNTER) atomic_fetch_add_explicit(s, n, memory_order_relaxed);
}

void metrics_set(metrics_row_t row, size_t series, uint64_t v) {
  _Atomic uint64_t *s = slot(row, series);
  if (s && metrics_table[row].type == METRICS_GAUGE) atomic_store_explicit(s, v, memory_order_relaxed);
}

void metrics_observe(metrics_row_t row, double v, uint64_t n) {
  if ((unsigned)row >= METRICS_ROW_COUNT || !metrics_table[row].hist || isnan(v)) return;
  const metrics_def_t *m = &metrics_table[row];
  size_t b = 0;
  while (b < m->nbounds && v > m->bounds[b]) b++;
  metrics_hist_t *h = m->hist;
  pthread_mutex_lock(&h->lock);
  h->counts[b] += n;
  h->count += n;
  h->sum += v * (double)n;
  pthread_mutex_unlock(&h->lock);
}

/* ---- what the pipeline's events count ---- */

void metrics_command(int type, metrics_cmd_result_t r, uint64_t n) {
  if ((unsigned)r > METRICS_REJECTED) return;
  /* The type label lists the command types, then "invalid". */
  size_t t = type >= 0 && type < MODEL_CMD_TYPE_COUNT ? (size_t)type : MODEL_CMD_TYPE_COUNT;
  size_t nresults = metrics_table[METRICS_ROW_COMMANDS].labels[1].count;
  metrics_add(METRICS_ROW_COMMANDS, t * nresults + (size_t)r, n);
}

void metrics_reject(int code) {
  /* The label lists the codes from the first rejection on, then "other". */
  size_t i = code > 0 && code < MODEL_REJ_COUNT ? (size_t)code - 1 : MODEL_REJ_COUNT - 1;
  metrics_add(METRICS_ROW_REJECTS, i, 1);
}

void metrics_store_write(metrics_write_result_t r, uint64_t n) { metrics_add(METRICS_ROW_STORE_WRITES, r, n); }
void metrics_store_write_bytes(uint64_t n) { metrics_add(METRICS_ROW_STORE_WRITE_BYTES, 0, n); }
void metrics_store_too_large(uint64_t n) { metrics_add(METRICS_ROW_STORE_TOO_LARGE, 0, n); }
void metrics_dead_letter(metrics_dead_letter_result_t r, uint64_t n) { metrics_add(METRICS_ROW_DEAD_LETTERS, r, n); }
void metrics_change_event(metrics_change_event_result_t r, uint64_t n) {
  metrics_add(METRICS_ROW_CHANGE_EVENTS, r, n);
}
void metrics_store_retry(void) { metrics_add(METRICS_ROW_STORE_RETRIES, 0, 1); }
void metrics_rebalance(metrics_rebalance_t e) { metrics_add(METRICS_ROW_REBALANCES, e, 1); }

void metrics_set_dirty(uint64_t n) { metrics_set(METRICS_ROW_DIRTY, 0, n); }
void metrics_set_cached(uint64_t n, uint64_t bytes) {
  metrics_set(METRICS_ROW_CACHED, 0, n);
  metrics_set(METRICS_ROW_CACHED_BYTES, 0, bytes);
}
void metrics_set_pending_bytes(uint64_t n) { metrics_set(METRICS_ROW_PENDING_BYTES, 0, n); }

void metrics_set_bounds(uint64_t max_pending_bytes, uint64_t cache_max_aggregates, uint64_t cache_max_bytes) {
  metrics_set(METRICS_ROW_PENDING_BYTES_LIMIT, 0, max_pending_bytes);
  metrics_set(METRICS_ROW_CACHED_LIMIT, 0, cache_max_aggregates);
  metrics_set(METRICS_ROW_CACHED_BYTES_LIMIT, 0, cache_max_bytes);
}

void metrics_set_fetch_paused(bool paused) { metrics_set(METRICS_ROW_FETCH_PAUSED, 0, paused ? 1 : 0); }
void metrics_set_assigned_partitions(uint64_t n) { metrics_set(METRICS_ROW_ASSIGNED_PARTITIONS, 0, n); }

void metrics_set_change_events_pending(uint64_t n, const clock_source_t *clock, int64_t oldest_mono_ms) {
  metrics_set(METRICS_ROW_CHANGE_EVENTS_PENDING, 0, n);
  atomic_store(&g_change_oldest_ms, oldest_mono_ms);
  atomic_store(&g_change_clock, n ? clock : NULL);
}

double metrics_change_events_oldest_seconds(void) {
  const clock_source_t *clock = atomic_load(&g_change_clock);
  if (!clock) return 0;
  int64_t age = clock_mono(clock) - atomic_load(&g_change_oldest_ms);
  return age > 0 ? (double)age / 1e3 : 0;
}

void metrics_set_oldest_unwritten(const clock_source_t *clock, int64_t oldest_mono_ms) {
  atomic_store(&g_unwritten_oldest_ms, oldest_mono_ms);
  atomic_store(&g_unwritten_clock, oldest_mono_ms == INT64_MAX ? NULL : clock);
}

double metrics_oldest_unwritten_seconds(void) {
  const clock_source_t *clock = atomic_load(&g_unwritten_clock);
  if (!clock) return 0;
  int64_t age = clock_mono(clock) - atomic_load(&g_unwritten_oldest_ms);
  return age > 0 ? (double)age / 1e3 : 0;
}

void metrics_flush(double seconds, uint64_t aggregates) {
  metrics_observe(METRICS_ROW_FLUSH_SECONDS, seconds, 1);
  metrics_observe(METRICS_ROW_FLUSH_AGGREGATES, (double)aggregates, 1);
}

void metrics_latency(double seconds, uint64_t commands) {
  metrics_observe(METRICS_ROW_DURABLE_LATENCY, seconds, commands);
}

void metrics_committable_latency(double seconds, uint64_t commands) {
  metrics_observe(METRICS_ROW_COMMITTABLE_LATENCY, seconds, commands);
}

/* ---- per-partition series ---- */

/* One assigned partition's values; a value not yet reported is left out. */
typedef struct part_entry {
  char *topic;
  int32_t partition;
  bool have_lag, have_committed_lag, have_oldest;
  int64_t lag, committed_lag;
  int64_t oldest_ms; /* wall ms of the oldest uncommitted command, 0 none */
} part_entry_t;

/* The table changes once a second per partition and a scrape walks it once
 * per family, so one mutex guards it. */
static pthread_mutex_t g_lag_lock = PTHREAD_MUTEX_INITIALIZER;
static part_entry_t *g_lags;
static size_t g_nlags, g_caplags;

/* The entry of (topic, partition), added if new. Called with the lock held. */
static part_entry_t *part_entry(const char *topic, int32_t partition) {
  for (size_t i = 0; i < g_nlags; i++)
    if (g_lags[i].partition == partition && !strcmp(g_lags[i].topic, topic)) return &g_lags[i];
  if (g_nlags == g_caplags) {
    size_t cap = g_caplags ? g_caplags * 2 : 16;
    g_lags = oom_realloc(g_lags, cap * sizeof *g_lags);
    g_caplags = cap;
  }
  g_lags[g_nlags] = (part_entry_t){.topic = oom_strdup(topic), .partition = partition};
  return &g_lags[g_nlags++];
}

void metrics_set_lag(const char *topic, int32_t partition, int64_t lag) {
  if (!topic) return;
  pthread_mutex_lock(&g_lag_lock);
  part_entry_t *e = part_entry(topic, partition);
  e->lag = lag;
  e->have_lag = true;
  pthread_mutex_unlock(&g_lag_lock);
}

void metrics_set_committed_lag(const char *topic, int32_t partition, int64_t lag) {
  if (!topic) return;
  pthread_mutex_lock(&g_lag_lock);
  part_entry_t *e = part_entry(topic, partition);
  e->committed_lag = lag;
  e->have_committed_lag = true;
  pthread_mutex_unlock(&g_lag_lock);
}

void metrics_set_oldest_uncommitted(const char *topic, int32_t partition, int64_t wall_ms) {
  if (!topic) return;
  pthread_mutex_lock(&g_lag_lock);
  part_entry_t *e = part_entry(topic, partition);
  e->oldest_ms = wall_ms > 0 ? wall_ms : 0;
  e->have_oldest = true;
  pthread_mutex_unlock(&g_lag_lock);
}

void metrics_clear_lag(const char *topic, int32_t partition) {
  if (!topic) return;
  pthread_mutex_lock(&g_lag_lock);
  for (size_t i = 0; i < g_nlags; i++) {
    if (g_lags[i].partition == partition && !strcmp(g_lags[i].topic, topic)) {
      free(g_lags[i].topic);
      g_lags[i] = g_lags[--g_nlags];
      break;
    }
  }
  pthread_mutex_unlock(&g_lag_lock);
}

void metrics_part_each(metrics_part_t which, metrics_emit_fn emit, void *ctx) {
  const clock_source_t *clock = atomic_load(&g_clock);
  int64_t now = clock ? clock_wall(clock) : clock_wall_ms();
  pthread_mutex_lock(&g_lag_lock);
  for (size_t i = 0; i < g_nlags; i++) {
    const part_entry_t *e = &g_lags[i];
    metrics_sample_t v;
    if (which == METRICS_PART_LAG && e->have_lag) {
      v = (metrics_sample_t){.kind = METRICS_I64, .v.i = e->lag};
    } else if (which == METRICS_PART_COMMITTED_LAG && e->have_committed_lag) {
      v = (metrics_sample_t){.kind = METRICS_I64, .v.i = e->committed_lag};
    } else if (which == METRICS_PART_OLDEST && e->have_oldest) {
      /* A producer's clock ahead of ours gives a timestamp in the future: age 0. */
      int64_t age = e->oldest_ms && now > e->oldest_ms ? now - e->oldest_ms : 0;
      v = (metrics_sample_t){.kind = METRICS_F64, .v.f = (double)age / 1e3};
    } else {
      continue;
    }
    char partition[16];
    snprintf(partition, sizeof partition, "%d", (int)e->partition);
    const char *values[] = {e->topic, partition};
    emit(ctx, values, v);
  }
  pthread_mutex_unlock(&g_lag_lock);
}

void metrics_lag_release(void) {
  pthread_mutex_lock(&g_lag_lock);
  for (size_t i = 0; i < g_nlags; i++) free(g_lags[i].topic);
  free(g_lags);
  g_lags = NULL;
  g_nlags = g_caplags = 0;
  pthread_mutex_unlock(&g_lag_lock);
}

/* ---- readiness and liveness inputs ---- */

void metrics_set_assigned(bool has_assignment) { readiness_set_assigned(&g_readiness, has_assignment); }
void metrics_set_dead_letter_failing(bool failing) { readiness_set_dead_letter_failing(&g_readiness, failing); }
void metrics_set_changes_failing(bool failing) { readiness_set_changes_failing(&g_readiness, failing); }
void metrics_store_answered(void) { readiness_store_answered(&g_readiness); }
void metrics_store_failed(void) { readiness_store_failed(&g_readiness); }
void metrics_store_failed_cause(const char *cause) { readiness_store_failed_cause(&g_readiness, cause); }
void metrics_set_source_failing(const char *why) { readiness_set_source_failing(&g_readiness, why); }
void metrics_heartbeat(void) { readiness_heartbeat(&g_readiness); }
void metrics_set_writer_stalled(bool stalled, uint64_t unwritten, int64_t since_mono_ms) {
  readiness_set_stalled(&g_readiness, stalled, unwritten, since_mono_ms);
  metrics_set(METRICS_ROW_WRITER_STALLED, 0, stalled ? 1 : 0);
}

bool metrics_ready(char *reason, size_t reasonsz) { return readiness_ready(&g_readiness, reason, reasonsz); }
bool metrics_healthy(char *reason, size_t reasonsz) { return readiness_healthy(&g_readiness, reason, reasonsz); }

/* Seconds to whole milliseconds, rounded up so that a window > 0 stays > 0. */
static int64_t window_ms(double s) { return s > 0 ? (int64_t)ceil(s * 1e3) : 0; }

void metrics_set_windows(double ready_store_s, double health_heartbeat_s) {
  readiness_set_windows_ms(&g_readiness, window_ms(ready_store_s), window_ms(health_heartbeat_s));
}

void metrics_set_clock(const clock_source_t *clock) {
  atomic_store(&g_clock, clock);
  readiness_set_clock(&g_readiness, clock);
}
