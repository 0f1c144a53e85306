#include "flusher.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "log.h"
#include "metrics.h"
#include "oom.h"
#include "retry.h"
#include "writer.h"

/* Flushes with conflicts only, in a row, before the next one backs off. */
#define PARTIAL_ROUNDS 8

struct flusher {
  batch_t *batch;
  writer_t *writer;
  int64_t backoff_ms, backoff_max_ms;
  unsigned attempt, partial_rounds;
  int64_t retry_at; /* wall ms; 0 = no backoff pending */
  /* the flush in flight, as submitted (for the slow-flush log) */
  writer_job_t *flight; /* read only for its progress atomics while in flight */
  double flight_start, flight_logged;
  size_t flight_items, flight_loads;
  int64_t flight_commands;
};

/* A flush in flight for FLUSHER_SLOW_LOG_MS says so, and again every as long. */
static void log_if_slow(flusher_t *f) {
  if (!f->flight) return;
  double now = clock_mono_s();
  if ((now - f->flight_logged) * 1000.0 < FLUSHER_SLOW_LOG_MS) return;
  f->flight_logged = now;
  size_t loaded = atomic_load_explicit(&f->flight->done_loads, memory_order_relaxed);
  size_t written = atomic_load_explicit(&f->flight->done_writes, memory_order_relaxed);
  log_warn("flush still running", "seconds", LOG_INT, (int64_t)(now - f->flight_start), "phase", LOG_STR,
           loaded < f->flight_loads ? "loading" : "writing", "aggregates", LOG_INT, (int64_t)f->flight_items,
           "commands", LOG_INT, f->flight_commands, "loads", LOG_INT, (int64_t)f->flight_loads, "loaded", LOG_INT,
           (int64_t)loaded, "written", LOG_INT, (int64_t)written);
}

/* writer_take in slices, so that a long wait still logs a slow flush. */
static writer_job_t *take(flusher_t *f, int64_t wait_ms) {
  int64_t until = clock_wall_ms() + wait_ms;
  for (;;) {
    int64_t left = until - clock_wall_ms();
    writer_job_t *job = writer_take(f->writer, left <= 0 ? 0 : left < 1000 ? left : 1000);
    if (job) {
      f->flight = NULL;
      return job;
    }
    log_if_slow(f);
    if (left <= 0) return NULL;
  }
}

flusher_t *flusher_new(batch_t *batch, const sink_t *sink, int64_t idle_ping_ms) {
  flusher_t *f = oom_calloc(1, sizeof *f);
  f->batch = batch;
  f->backoff_ms = 100;
  f->backoff_max_ms = 10000;
  f->writer = writer_new(sink, idle_ping_ms);
  if (!f->writer) {
    free(f);
    return NULL;
  }
  return f;
}

void flusher_destroy(flusher_t *f) { (void)flusher_destroy_within(f, INT64_MAX / 4); }

bool flusher_destroy_within(flusher_t *f, int64_t wait_ms) {
  if (!f) return true;
  /* A flush in flight is waited for (a store call cannot be abandoned
   * half-way) and ended, so that the batch is left consistent; past wait_ms
   * the writer thread is left to finish it alone. */
  int64_t until = clock_wall_ms() + wait_ms;
  if (batch_in_flight(f->batch)) {
    writer_job_t *job = take(f, wait_ms);
    if (job) batch_flush_end(f->batch, job, NULL);
  }
  int64_t left = until - clock_wall_ms();
  bool joined = writer_destroy_within(f->writer, left < 0 ? 0 : left);
  free(f);
  return joined;
}

void flusher_set_retry(flusher_t *f, int64_t backoff_ms, int64_t backoff_max_ms) {
  f->backoff_ms = backoff_ms;
  f->backoff_max_ms = backoff_max_ms;
}

static void sleep_ms(int64_t ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000};
  nanosleep(&ts, NULL); /* a signal ends it early: the caller looks at its flags */
}

flusher_event_t flusher_step(flusher_t *f, int64_t now_ms, int64_t wait_ms, bool force) {
  flusher_event_t ev;
  memset(&ev, 0, sizeof ev);
  if (batch_in_flight(f->batch)) {
    writer_job_t *job = take(f, wait_ms);
    if (!job) return ev;
    ev.finished = true;
    ev.seconds = job->seconds;
    ev.items = job->nitems;
    ev.status = batch_flush_end(f->batch, job, &ev.err);
    int64_t wall = clock_wall_ms();
    if (ev.status == BATCH_DONE || ev.status == BATCH_PARTIAL) {
      metrics_store_answered();
      f->attempt = 0;
      f->retry_at = 0;
      f->partial_rounds = ev.status == BATCH_PARTIAL ? f->partial_rounds + 1 : 0;
      if (f->partial_rounds >= PARTIAL_ROUNDS) {
        ev.retry_in_ms = retry_backoff_ms(f->backoff_ms, f->backoff_max_ms, f->partial_rounds - PARTIAL_ROUNDS);
        f->retry_at = wall + ev.retry_in_ms;
      }
    } else {
      metrics_store_failed();
      ev.retry_in_ms = retry_backoff_ms(f->backoff_ms, f->backoff_max_ms, f->attempt++);
      f->retry_at = wall + ev.retry_in_ms;
    }
    ev.attempt = f->attempt;
    if (ev.status == BATCH_FATAL) return ev;
    wait_ms = 0; /* it waited already */
  }
  bool want = force ? batch_dirty(f->batch) || batch_flush_due(f->batch, INT64_MAX)
                    : batch_flush_due(f->batch, now_ms);
  if (!want) return ev;
  int64_t wall = clock_wall_ms(); /* backoff runs on the wall clock, whatever now_ms the caller gives */
  if (f->retry_at > wall) {
    if (wait_ms <= 0) return ev;
    sleep_ms(f->retry_at - wall < wait_ms ? f->retry_at - wall : wait_ms);
    if (f->retry_at > clock_wall_ms()) return ev;
  }
  writer_job_t *job = batch_flush_begin(f->batch, now_ms);
  if (!job) return ev; /* nothing dirty: everything applied is durable */
  f->flight = job;
  f->flight_start = f->flight_logged = clock_mono_s();
  f->flight_items = job->nitems;
  f->flight_loads = 0;
  for (size_t i = 0; i < job->nitems; i++) f->flight_loads += job->items[i].load;
  f->flight_commands = job->commands;
  if (!writer_submit(f->writer, job)) abort(); /* one in flight, and it was taken back: cannot happen */
  ev.started = true;
  return ev;
}

int64_t flusher_wake_ms(const flusher_t *f) {
  if (batch_in_flight(f->batch)) return INT64_MAX;
  int64_t d = batch_deadline(f->batch);
  if (d != INT64_MAX && f->retry_at > d) d = f->retry_at;
  return d;
}

bool flusher_in_flight(const flusher_t *f) { return batch_in_flight(f->batch); }
