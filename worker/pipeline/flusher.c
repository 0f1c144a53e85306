#include "flusher.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/clock.h"
#include "base/log.h"
#include "metrics/metrics.h"
#include "oom.h"
#include "base/retry.h"
#include "writer.h"

/* Flushes in a row that landed nothing and came back with conflicts, before
 * the next one backs off (two writers racing on one hot document must not
 * spin). A flush that lands anything is progress and resets the count:
 * counting every flush with a conflict would throttle a whole writer to
 * one flush per retry.backoff_max_ms whenever each of its flushes meets one
 * stale document (a cache of partitions it gave up, a store restored from
 * a backup), which looks like a stall. */
#define PARTIAL_ROUNDS 8

struct flusher {
  batch_t *batch;
  writer_t *writer;
  const clock_source_t *clock; /* borrowed; every duration here is on its monotonic side */
  int64_t backoff_ms, backoff_max_ms;
  int64_t slow_log_ms;
  unsigned attempt, partial_rounds;
  int64_t retry_at; /* monotonic ms; 0 = no backoff pending */
  /* the flush in flight, as submitted (for the slow-flush log) */
  writer_job_t *flight; /* read only for its progress atomics while in flight */
  int64_t flight_start, flight_logged; /* monotonic ms */
  size_t flight_items, flight_loads;
  int64_t flight_commands;
};

/* A flush in flight for slow_log_ms says so, and again every as long. */
static void log_if_slow(flusher_t *f) {
  if (!f->flight) return;
  int64_t now = clock_mono(f->clock);
  if (now - f->flight_logged < f->slow_log_ms) return;
  f->flight_logged = now;
  size_t loaded = atomic_load_explicit(&f->flight->done_loads, memory_order_relaxed);
  size_t written = atomic_load_explicit(&f->flight->done_writes, memory_order_relaxed);
  log_warn("flush still running", "seconds", LOG_INT, (now - f->flight_start) / 1000, "phase", LOG_STR,
           loaded < f->flight_loads ? "loading" : "writing", "aggregates", LOG_INT, (int64_t)f->flight_items,
           "commands", LOG_INT, f->flight_commands, "loads", LOG_INT, (int64_t)f->flight_loads, "loaded", LOG_INT,
           (int64_t)loaded, "written", LOG_INT, (int64_t)written);
}

/* writer_take in slices, so that a long wait still logs a slow flush. The
 * wait ends at *wait_ms on the clock, or once the slices have waited that
 * long in all, whichever comes first: a clock that a test holds still ends
 * it too. On return *wait_ms is what is left of it. */
static writer_job_t *take(flusher_t *f, int64_t *wait_ms) {
  int64_t until = clock_mono(f->clock) + *wait_ms, budget = *wait_ms;
  for (;;) {
    int64_t left = until - clock_mono(f->clock);
    if (left > budget) left = budget;
    int64_t slice = left <= 0 ? 0 : left < 1000 ? left : 1000;
    writer_job_t *job = writer_take(f->writer, slice);
    if (job) {
      f->flight = NULL;
      int64_t rest = until - clock_mono(f->clock);
      *wait_ms = rest < budget ? rest : budget;
      return job;
    }
    budget -= slice;
    log_if_slow(f);
    if (left <= 0) {
      *wait_ms = 0;
      return NULL;
    }
  }
}

flusher_t *flusher_new(batch_t *batch, const sink_t *sink, int64_t idle_ping_ms, const clock_source_t *clock) {
  flusher_t *f = oom_calloc(1, sizeof *f);
  f->batch = batch;
  f->clock = clock;
  f->backoff_ms = 100;
  f->backoff_max_ms = 10000;
  f->slow_log_ms = FLUSHER_SLOW_LOG_MS;
  f->writer = writer_new(sink, idle_ping_ms, clock);
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
  int64_t left = wait_ms;
  if (batch_in_flight(f->batch)) {
    writer_job_t *job = take(f, &left);
    if (job) batch_flush_end(f->batch, job, batch_now(f->clock), NULL);
  }
  bool joined = writer_destroy_within(f->writer, left < 0 ? 0 : left);
  free(f);
  return joined;
}

void flusher_set_retry(flusher_t *f, int64_t backoff_ms, int64_t backoff_max_ms) {
  f->backoff_ms = backoff_ms;
  f->backoff_max_ms = backoff_max_ms;
}

void flusher_set_slow_log(flusher_t *f, int64_t every_ms) { f->slow_log_ms = every_ms; }

/* Takes back the flush in flight, waiting up to wait_ms, and sets the
 * backoff its result calls for. False when none came back. */
static bool end_flight(flusher_t *f, int64_t wait_ms, flusher_event_t *ev) {
  writer_job_t *job = take(f, &wait_ms);
  if (!job) return false;
  ev->finished = true;
  ev->seconds = job->seconds;
  ev->items = job->nitems;
  ev->landed = (size_t)(job->written + job->unchanged);
  batch_now_t back = batch_now(f->clock); /* the take may have waited: the flush's latencies end now */
  ev->status = batch_flush_end(f->batch, job, back, &ev->err);
  if (ev->status == SINK_OK || ev->status == SINK_PARTIAL) {
    metrics_store_answered();
    f->attempt = 0;
    f->retry_at = 0;
    f->partial_rounds = ev->status == SINK_PARTIAL && !ev->landed ? f->partial_rounds + 1 : 0;
    if (f->partial_rounds >= PARTIAL_ROUNDS) {
      ev->retry_in_ms = retry_backoff_ms(f->backoff_ms, f->backoff_max_ms, f->partial_rounds - PARTIAL_ROUNDS);
      f->retry_at = back.mono_ms + ev->retry_in_ms;
    }
  } else {
    metrics_store_failed();
    if (ev->status == SINK_RETRY) metrics_store_retry();
    ev->retry_in_ms = retry_backoff_ms(f->backoff_ms, f->backoff_max_ms, f->attempt++);
    f->retry_at = back.mono_ms + ev->retry_in_ms;
  }
  ev->attempt = f->attempt;
  return true;
}

/* Begins the next flush if one is wanted and no backoff is pending (with
 * wait_ms > 0, after sleeping out at most that much of the backoff). */
static void begin_flight(flusher_t *f, batch_now_t now, int64_t wait_ms, bool force, flusher_event_t *ev) {
  bool want = force ? batch_dirty(f->batch) || batch_flush_due(f->batch, INT64_MAX)
                    : batch_flush_due(f->batch, now.mono_ms);
  if (!want) return;
  int64_t mono = clock_mono(f->clock); /* the backoff is read afresh: the step may have waited for a flush */
  if (f->retry_at > mono) {
    if (wait_ms <= 0) return;
    clock_sleep(f->clock, f->retry_at - mono < wait_ms ? f->retry_at - mono : wait_ms);
    if (f->retry_at > clock_mono(f->clock)) return;
  }
  writer_job_t *job = batch_flush_begin(f->batch, now);
  if (!job) return; /* nothing dirty: everything applied is durable */
  f->flight = job;
  f->flight_start = f->flight_logged = clock_mono(f->clock);
  f->flight_items = job->nitems;
  f->flight_loads = 0;
  for (size_t i = 0; i < job->nitems; i++) f->flight_loads += job->items[i].load;
  f->flight_commands = job->commands;
  if (!writer_submit(f->writer, job)) abort(); /* one in flight, and it was taken back: cannot happen */
  ev->started = true;
}

flusher_event_t flusher_step(flusher_t *f, batch_now_t now, int64_t wait_ms, bool force) {
  flusher_event_t ev;
  memset(&ev, 0, sizeof ev);
  if (batch_in_flight(f->batch)) {
    if (!end_flight(f, wait_ms, &ev) || ev.status == SINK_FATAL) return ev;
    wait_ms = 0; /* it waited already */
  }
  begin_flight(f, now, wait_ms, force, &ev);
  return ev;
}

int64_t flusher_wake_ms(const flusher_t *f) {
  if (batch_in_flight(f->batch)) return INT64_MAX;
  int64_t d = batch_deadline(f->batch);
  if (d != INT64_MAX && f->retry_at > d) d = f->retry_at;
  return d;
}

bool flusher_in_flight(const flusher_t *f) { return batch_in_flight(f->batch); }
