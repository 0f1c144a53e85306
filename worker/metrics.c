/* The metrics registry: counters, gauges, histograms, readiness and
 * liveness state, and their Prometheus text rendering. The HTTP side is in
 * http.c.
 *
 * Why fixed arrays: every label set except the consumer-lag one is known at
 * compile time (six command types, the spec's rejection codes, three write
 * results), so each series is one atomic slot, rendered even at zero: a
 * series that appears only after its first event makes rate() and alerts
 * blind to the first increment. */
#include "metrics.h"

#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "command.h"
#include "http.h"
#include "oom.h"
#include "redact.h"

#ifndef AGG_VERSION
#define AGG_VERSION "unknown"
#endif

/* ---- state ---- */

#define TYPE_INVALID MODEL_CMD_TYPE_COUNT /* slot for rejects whose type is unknown */
#define REJ_OTHER 0                       /* MODEL_OK is never a rejection: reuse its slot */

static _Atomic uint64_t g_commands[MODEL_CMD_TYPE_COUNT + 1][3];
static _Atomic uint64_t g_rejects[MODEL_REJ_COUNT];
static _Atomic uint64_t g_writes[3];
static _Atomic uint64_t g_write_bytes, g_too_large;
static _Atomic uint64_t g_dead_letters[2];
static _Atomic uint64_t g_dirty, g_cached, g_pending_bytes;

static atomic_bool g_assigned, g_store_failed, g_dead_letter_failing;
static _Atomic int64_t g_store_answer_ns; /* CLOCK_MONOTONIC; 0 = never */
static _Atomic int64_t g_heartbeat_ns;    /* CLOCK_MONOTONIC; 0 = never */
static _Atomic int64_t g_ready_window_ns = (int64_t)(METRICS_READY_STORE_WINDOW_S * 1e9);
static _Atomic int64_t g_health_window_ns = (int64_t)(METRICS_HEALTH_HEARTBEAT_WINDOW_S * 1e9);

#define HIST_MAX_BOUNDS 40
typedef struct hist {
  const char *name, *help;
  const double *bounds; /* ascending upper bounds (le), +Inf implied */
  size_t nbounds;
  uint64_t counts[HIST_MAX_BOUNDS + 1]; /* per bucket, not cumulative; last = above every bound */
  uint64_t count;
  double sum;
} hist_t;

/* Buckets: a flush is a bulk write of up to batch.max_aggregates documents to
 * a nearby MongoDB (milliseconds when healthy, seconds when it is elected or
 * throttled); latency adds linger and queueing, so it reaches further. */
static const double flush_seconds_bounds[] = {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                              0.25,  0.5,    1,     2.5,  5,     10};
static const double flush_aggregates_bounds[] = {1, 5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000};
/* Latency is what operators alert on and what the benchmark reports as
 * p50/p99 against linger plus flush durations of a few hundred
 * milliseconds, so its buckets are finer than the others: about x1.25 apart
 * from 0.1 s to 2 s (a quantile is only as precise as its bucket; at x1.5
 * a p99 of 0.51 s read as 0.74 s), coarser beyond. */
static const double latency_bounds[] = {0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.125, 0.15, 0.2, 0.25, 0.3, 0.35,
                                        0.4,   0.5,  0.6,   0.7,  0.8,   0.9, 1,     1.25, 1.5, 1.75, 2,    2.5,
                                        3,     4,    5,     7.5,  10,    15,  30,    60,   120, 300};

#define NB(a) (sizeof(a) / sizeof((a)[0]))
_Static_assert(NB(flush_seconds_bounds) <= HIST_MAX_BOUNDS && NB(flush_aggregates_bounds) <= HIST_MAX_BOUNDS &&
                   NB(latency_bounds) <= HIST_MAX_BOUNDS,
               "raise HIST_MAX_BOUNDS");
static hist_t h_flush_seconds = {"aggregator_flush_duration_seconds",
                                 "Time to write one batch of aggregates to the store, retries included.",
                                 flush_seconds_bounds, NB(flush_seconds_bounds), {0}, 0, 0};
static hist_t h_flush_aggregates = {"aggregator_flush_aggregates", "Aggregates written by one flush.",
                                    flush_aggregates_bounds, NB(flush_aggregates_bounds), {0}, 0, 0};
static hist_t h_latency = {"aggregator_command_durable_latency_seconds",
                           "Time from a command's Kafka timestamp (when it was produced) to its aggregate "
                           "being durable in the store.",
                           latency_bounds, NB(latency_bounds), {0}, 0, 0};
static hist_t h_committable = {"aggregator_command_committable_latency_seconds",
                               "Time from a command's Kafka timestamp (when it was produced) to its offset "
                               "becoming committable: it and every command read before it durable.",
                               latency_bounds, NB(latency_bounds), {0}, 0, 0};

typedef struct lag_entry {
  char *topic;
  int32_t partition;
  int64_t lag;
} lag_entry_t;

/* One lock for histograms and the lag table: both change at flush or
 * statistics-callback rate, and a scrape takes it once. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static lag_entry_t *g_lags;
static size_t g_nlags, g_caplags;

static pthread_mutex_t g_server_lock = PTHREAD_MUTEX_INITIALIZER;
static http_server_t *g_server;

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

#define ADD(var, n) atomic_fetch_add_explicit(&(var), (n), memory_order_relaxed)
#define SET(var, v) atomic_store_explicit(&(var), (v), memory_order_relaxed)
#define GET(var) atomic_load_explicit(&(var), memory_order_relaxed)

/* ---- server ---- */

bool metrics_start(const char *listen, char *err, size_t errsz) {
  if (err && errsz) err[0] = '\0';
  metrics_heartbeat();
  if (!listen || !*listen) return true;
  pthread_mutex_lock(&g_server_lock);
  bool ok = false;
  if (g_server) {
    if (err) snprintf(err, errsz, "metrics server already started");
  } else {
    static const http_handlers_t handlers = {metrics_render, metrics_ready, metrics_healthy};
    g_server = http_server_start(listen, &handlers, err, errsz);
    ok = g_server != NULL;
  }
  pthread_mutex_unlock(&g_server_lock);
  return ok;
}

void metrics_stop(void) {
  pthread_mutex_lock(&g_server_lock);
  http_server_t *s = g_server;
  g_server = NULL;
  pthread_mutex_unlock(&g_server_lock);
  http_server_stop(s); /* joins the thread: no handler runs past this point */

  pthread_mutex_lock(&g_lock);
  for (size_t i = 0; i < g_nlags; i++) free(g_lags[i].topic);
  free(g_lags);
  g_lags = NULL;
  g_nlags = g_caplags = 0;
  pthread_mutex_unlock(&g_lock);
}

int metrics_port(void) {
  pthread_mutex_lock(&g_server_lock);
  int port = g_server ? http_server_port(g_server) : 0;
  pthread_mutex_unlock(&g_server_lock);
  return port;
}

/* ---- recording ---- */

void metrics_command(int type, metrics_cmd_result_t r, uint64_t n) {
  if ((unsigned)r > METRICS_REJECTED) return;
  size_t t = type >= 0 && type < MODEL_CMD_TYPE_COUNT ? (size_t)type : TYPE_INVALID;
  ADD(g_commands[t][r], n);
}

void metrics_reject(int code) {
  ADD(g_rejects[code > 0 && code < MODEL_REJ_COUNT ? (size_t)code : REJ_OTHER], 1);
}

void metrics_store_write(metrics_write_result_t r, uint64_t n) {
  if ((unsigned)r > METRICS_WRITE_ERROR) return;
  ADD(g_writes[r], n);
}

void metrics_store_write_bytes(uint64_t n) { ADD(g_write_bytes, n); }
void metrics_store_too_large(uint64_t n) { ADD(g_too_large, n); }

void metrics_dead_letter(metrics_dead_letter_result_t r, uint64_t n) {
  if ((unsigned)r > METRICS_DEAD_LETTER_ERROR) return;
  ADD(g_dead_letters[r], n);
}

static void hist_observe(hist_t *h, double v, uint64_t n) {
  if (isnan(v)) return;
  size_t b = 0;
  while (b < h->nbounds && v > h->bounds[b]) b++;
  pthread_mutex_lock(&g_lock);
  h->counts[b] += n;
  h->count += n;
  h->sum += v * (double)n;
  pthread_mutex_unlock(&g_lock);
}

void metrics_flush(double seconds, uint64_t aggregates) {
  hist_observe(&h_flush_seconds, seconds, 1);
  hist_observe(&h_flush_aggregates, (double)aggregates, 1);
}

void metrics_latency(double seconds, uint64_t commands) { hist_observe(&h_latency, seconds, commands); }
void metrics_committable_latency(double seconds, uint64_t commands) {
  hist_observe(&h_committable, seconds, commands);
}

void metrics_set_dirty(uint64_t n) { SET(g_dirty, n); }
void metrics_set_cached(uint64_t n) { SET(g_cached, n); }
void metrics_set_pending_bytes(uint64_t n) { SET(g_pending_bytes, n); }

void metrics_set_lag(const char *topic, int32_t partition, int64_t lag) {
  if (!topic) return;
  pthread_mutex_lock(&g_lock);
  for (size_t i = 0; i < g_nlags; i++) {
    if (g_lags[i].partition == partition && !strcmp(g_lags[i].topic, topic)) {
      g_lags[i].lag = lag;
      pthread_mutex_unlock(&g_lock);
      return;
    }
  }
  if (g_nlags == g_caplags) {
    size_t cap = g_caplags ? g_caplags * 2 : 16;
    g_lags = oom_realloc(g_lags, cap * sizeof *g_lags);
    g_caplags = cap;
  }
  char *copy = oom_strdup(topic);
  g_lags[g_nlags++] = (lag_entry_t){copy, partition, lag};
  pthread_mutex_unlock(&g_lock);
}

void metrics_clear_lag(const char *topic, int32_t partition) {
  if (!topic) return;
  pthread_mutex_lock(&g_lock);
  for (size_t i = 0; i < g_nlags; i++) {
    if (g_lags[i].partition == partition && !strcmp(g_lags[i].topic, topic)) {
      free(g_lags[i].topic);
      g_lags[i] = g_lags[--g_nlags];
      break;
    }
  }
  pthread_mutex_unlock(&g_lock);
}

/* ---- readiness and liveness ---- */

void metrics_set_assigned(bool has_assignment) { SET(g_assigned, has_assignment); }

void metrics_set_dead_letter_failing(bool failing) { SET(g_dead_letter_failing, failing); }

void metrics_store_answered(void) {
  SET(g_store_failed, false);
  SET(g_store_answer_ns, now_ns());
}

void metrics_store_failed(void) { SET(g_store_failed, true); }

void metrics_heartbeat(void) { SET(g_heartbeat_ns, now_ns()); }

void metrics_set_windows(double ready_store_s, double health_heartbeat_s) {
  if (ready_store_s > 0) SET(g_ready_window_ns, (int64_t)(ready_store_s * 1e9));
  if (health_heartbeat_s > 0) SET(g_health_window_ns, (int64_t)(health_heartbeat_s * 1e9));
}

/* Fills reason (may be NULL) and returns false, for the "not ok" paths. */
static bool why(char *reason, size_t reasonsz, const char *msg, int64_t age_ns) {
  if (reason && reasonsz) {
    if (age_ns >= 0) snprintf(reason, reasonsz, "%s %.1f s", msg, (double)age_ns / 1e9);
    else snprintf(reason, reasonsz, "%s", msg);
  }
  return false;
}

bool metrics_ready(char *reason, size_t reasonsz) {
  if (reason && reasonsz) reason[0] = '\0';
  if (!GET(g_assigned)) return why(reason, reasonsz, "no partition assignment", -1);
  if (GET(g_dead_letter_failing)) return why(reason, reasonsz, "dead-letter delivery failing", -1);
  int64_t answered = GET(g_store_answer_ns);
  if (!answered) return why(reason, reasonsz, "store has not answered yet", -1);
  if (GET(g_store_failed)) return why(reason, reasonsz, "store unreachable", -1);
  int64_t age = now_ns() - answered;
  if (age > GET(g_ready_window_ns)) return why(reason, reasonsz, "store silent for", age);
  return true;
}

bool metrics_healthy(char *reason, size_t reasonsz) {
  if (reason && reasonsz) reason[0] = '\0';
  int64_t beat = GET(g_heartbeat_ns);
  if (!beat) return why(reason, reasonsz, "main loop not started", -1);
  int64_t age = now_ns() - beat;
  if (age > GET(g_health_window_ns)) return why(reason, reasonsz, "main loop stalled: no heartbeat for", age);
  return true;
}

/* ---- rendering ---- */

static void put_double(model_buf_t *out, double v) {
  if (isinf(v)) model_buf_puts(out, v > 0 ? "+Inf" : "-Inf");
  else if (isnan(v)) model_buf_puts(out, "NaN");
  else model_buf_printf(out, "%.15g", v);
}

static void header(model_buf_t *out, const char *name, const char *type, const char *help) {
  model_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Label values: scrubbed of every configured secret (a label is text that
 * came from outside, e.g. a topic name), then backslash, double quote and
 * newline escaped, as the format requires. */
static void put_label_value(model_buf_t *out, const char *value) {
  model_buf_t clean = MODEL_BUF_INIT;
  redact_set_scrub(redact_global(), value, strlen(value), &clean);
  model_buf_putc(out, '"');
  for (const char *v = clean.data, *end = clean.data + clean.len; v < end; v++) {
    if (*v == '\\') model_buf_puts(out, "\\\\");
    else if (*v == '"') model_buf_puts(out, "\\\"");
    else if (*v == '\n') model_buf_puts(out, "\\n");
    else model_buf_putc(out, *v);
  }
  model_buf_putc(out, '"');
  model_buf_destroy(&clean);
}

static void render_hist(model_buf_t *out, const hist_t *h) { /* g_lock held */
  header(out, h->name, "histogram", h->help);
  uint64_t cum = 0;
  for (size_t b = 0; b <= h->nbounds; b++) {
    cum += h->counts[b];
    model_buf_printf(out, "%s_bucket{le=\"", h->name);
    put_double(out, b < h->nbounds ? h->bounds[b] : INFINITY);
    model_buf_printf(out, "\"} %llu\n", (unsigned long long)cum);
  }
  model_buf_printf(out, "%s_sum ", h->name);
  put_double(out, h->sum);
  model_buf_printf(out, "\n%s_count %llu\n", h->name, (unsigned long long)h->count);
}

/* process_* as the Prometheus client libraries define them, from /proc.
 * A metric whose source cannot be read is left out rather than made up. */
static void render_process(model_buf_t *out) {
  long ticks = sysconf(_SC_CLK_TCK), page = sysconf(_SC_PAGESIZE);
  char buf[1024];
  FILE *f = fopen("/proc/self/stat", "r");
  if (f) {
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    /* comm (field 2) may hold spaces and parentheses: fields resume after the last ')'. */
    char *p = strrchr(buf, ')');
    unsigned long long utime = 0, stime = 0, start = 0;
    if (p && ticks > 0 &&
        sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu", &utime,
               &stime, &start) == 3) {
      header(out, "process_cpu_seconds_total", "counter", "Total user and system CPU time spent in seconds.");
      model_buf_puts(out, "process_cpu_seconds_total ");
      put_double(out, (double)(utime + stime) / (double)ticks);
      model_buf_putc(out, '\n');
      FILE *s = fopen("/proc/stat", "r");
      unsigned long long btime = 0;
      bool have_btime = false;
      if (s) {
        while (fgets(buf, sizeof buf, s))
          if (sscanf(buf, "btime %llu", &btime) == 1) {
            have_btime = true;
            break;
          }
        fclose(s);
      }
      if (have_btime) {
        header(out, "process_start_time_seconds", "gauge", "Start time of the process since unix epoch in seconds.");
        model_buf_puts(out, "process_start_time_seconds ");
        put_double(out, (double)btime + (double)start / (double)ticks);
        model_buf_putc(out, '\n');
      }
    }
  }
  f = fopen("/proc/self/statm", "r");
  if (f) {
    unsigned long long size = 0, resident = 0;
    if (fscanf(f, "%llu %llu", &size, &resident) == 2 && page > 0) {
      header(out, "process_virtual_memory_bytes", "gauge", "Virtual memory size in bytes.");
      model_buf_printf(out, "process_virtual_memory_bytes %llu\n", size * (unsigned long long)page);
      header(out, "process_resident_memory_bytes", "gauge", "Resident memory size in bytes.");
      model_buf_printf(out, "process_resident_memory_bytes %llu\n", resident * (unsigned long long)page);
    }
    fclose(f);
  }
  DIR *d = opendir("/proc/self/fd");
  if (d) {
    long n = 0;
    for (struct dirent *e; (e = readdir(d));)
      if (e->d_name[0] != '.') n++;
    closedir(d);
    header(out, "process_open_fds", "gauge", "Number of open file descriptors.");
    model_buf_printf(out, "process_open_fds %ld\n", n - 1); /* minus the one opendir holds */
  }
}

void metrics_render(model_buf_t *out) {
  static const char *const results[] = {"applied", "stale", "rejected"};
  static const char *const write_results[] = {"ok", "conflict", "error"};
  static const char *const dead_letter_results[] = {"ok", "error"};

  header(out, "aggregator_commands_total", "counter",
         "Commands consumed, by type and result (applied changed an aggregate, stale lost to a newer stamp).");
  for (size_t t = 0; t <= MODEL_CMD_TYPE_COUNT; t++) {
    const char *name = t == TYPE_INVALID ? "invalid" : model_cmd_type_name((model_cmd_type_t)t);
    for (size_t r = 0; r < 3; r++) {
      if (t == TYPE_INVALID && r != METRICS_REJECTED) continue; /* cannot happen: no series */
      model_buf_printf(out, "aggregator_commands_total{type=\"%s\",result=\"%s\"} %llu\n", name, results[r],
                       (unsigned long long)GET(g_commands[t][r]));
    }
  }

  header(out, "aggregator_rejects_total", "counter", "Rejected commands sent to the dead-letter topic, by error code.");
  for (size_t c = 1; c <= MODEL_REJ_COUNT; c++) {
    size_t slot = c == MODEL_REJ_COUNT ? REJ_OTHER : c; /* "other" last */
    const char *name = slot == REJ_OTHER ? "other" : model_reject_code_name((model_reject_code_t)slot);
    model_buf_printf(out, "aggregator_rejects_total{code=\"%s\"} %llu\n", name,
                     (unsigned long long)GET(g_rejects[slot]));
  }

  header(out, "aggregator_store_writes_total", "counter",
         "Aggregate documents written to the store, by result (conflict: another writer got there first).");
  for (size_t r = 0; r < 3; r++)
    model_buf_printf(out, "aggregator_store_writes_total{result=\"%s\"} %llu\n", write_results[r],
                     (unsigned long long)GET(g_writes[r]));

  header(out, "aggregator_store_write_bytes_total", "counter",
         "BSON bytes of the documents and partial updates the store acknowledged (the size of what flushes ship).");
  model_buf_printf(out, "aggregator_store_write_bytes_total %llu\n", (unsigned long long)GET(g_write_bytes));
  header(out, "aggregator_store_too_large_total", "counter",
         "Aggregate writes refused because the document would pass the store's 16 MiB limit; their unwritten "
         "changes were set aside (docs/OPERATIONS.md).");
  model_buf_printf(out, "aggregator_store_too_large_total %llu\n", (unsigned long long)GET(g_too_large));

  header(out, "aggregator_dead_letter_deliveries_total", "counter",
         "Rejected commands acknowledged by the dead-letter topic (ok), and delivery attempts that failed and are "
         "retried (error); a reject's offset commits only once it is acknowledged.");
  for (size_t r = 0; r < 2; r++)
    model_buf_printf(out, "aggregator_dead_letter_deliveries_total{result=\"%s\"} %llu\n", dead_letter_results[r],
                     (unsigned long long)GET(g_dead_letters[r]));

  header(out, "aggregator_dirty_aggregates", "gauge", "Aggregates changed in memory and not yet written.");
  model_buf_printf(out, "aggregator_dirty_aggregates %llu\n", (unsigned long long)GET(g_dirty));
  header(out, "aggregator_cached_aggregates", "gauge", "Clean aggregates kept in memory (LRU cache).");
  model_buf_printf(out, "aggregator_cached_aggregates %llu\n", (unsigned long long)GET(g_cached));
  header(out, "aggregator_pending_bytes", "gauge",
         "Memory held by unwritten changes; fetching pauses past batch.max_pending_bytes.");
  model_buf_printf(out, "aggregator_pending_bytes %llu\n", (unsigned long long)GET(g_pending_bytes));

  header(out, "aggregator_ready", "gauge",
         "1 when /readyz answers 200 (assigned partitions, dead-letter delivery working, store answering).");
  model_buf_printf(out, "aggregator_ready %d\n", metrics_ready(NULL, 0) ? 1 : 0);
  header(out, "aggregator_build_info", "gauge", "Always 1; the labels tell the build.");
  model_buf_printf(out, "aggregator_build_info{version=\"%s\"} 1\n", AGG_VERSION);

  pthread_mutex_lock(&g_lock);
  header(out, "aggregator_consumer_lag", "gauge", "Messages between the consumer position and the high watermark.");
  for (size_t i = 0; i < g_nlags; i++) {
    model_buf_puts(out, "aggregator_consumer_lag{topic=");
    put_label_value(out, g_lags[i].topic);
    model_buf_printf(out, ",partition=\"%d\"} %lld\n", (int)g_lags[i].partition, (long long)g_lags[i].lag);
  }
  render_hist(out, &h_flush_seconds);
  render_hist(out, &h_flush_aggregates);
  render_hist(out, &h_latency);
  render_hist(out, &h_committable);
  pthread_mutex_unlock(&g_lock);

  render_process(out);
}
