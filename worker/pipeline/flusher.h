/* Drives flushes of a batch through a writer thread (writer.h): group
 * commit with backoff. Shared by the live consumer and the replay into the
 * store, so that both write through the same path.
 *
 * Group commit: one flush in flight at a time. When one finishes, the next
 * begins as soon as batch_flush_due says so: under load the linger deadline
 * of the commands merged meanwhile has passed, so it begins at once with
 * everything dirty at that moment (up to the flush cap, batch.h); when the
 * worker keeps up, batch.linger_ms, batch.max_commands and
 * batch.max_aggregates bound latency and bulk size. A flush that failed
 * (store down, items rejected) begins again after capped full-jitter backoff
 * (retry.h); one with conflicts begins again at once (the conflicting
 * aggregates reloaded first), and only after 8 in a row that landed
 * nothing backs off too (two writers racing on one hot document must not
 * spin; a flush that lands anything is progress, however many of its
 * aggregates conflicted).
 *
 * A flush that runs long says so: every FLUSHER_SLOW_LOG_MS (or what
 * flusher_set_slow_log says) while one is in flight, flusher_step (and a
 * wait in it) logs a warning with how long it has run, how many aggregates
 * and commands it carries, how many loads it had to do and how far the
 * loads and writes have got, so that an operator never faces a silent
 * process.
 *
 * Time: every duration (backoff, waits, how long a flush has run) is read
 * from the monotonic side of the clock given to flusher_new, so that a step
 * of the wall clock moves none of them and a test can drive them by hand.
 *
 * Threads: a flusher_t, like the batch it borrows, belongs to one thread;
 * the writer thread it starts owns the sink's connection until
 * flusher_destroy returns (writer.h describes the hand-over of each job). The
 * clock is read from both threads. */
#ifndef FLUSHER_H
#define FLUSHER_H

#include <stdbool.h>
#include <stdint.h>

#include "batch.h"
#include "base/clock.h"
#include "store/sink.h"

typedef struct flusher flusher_t;

typedef struct flusher_event {
  bool finished;         /* a flush came back: status says how */
  sink_status_t status;  /* batch_flush_end's: SINK_OK, everything it covered is durable */
  sink_error_t err;      /* why, when status is not SINK_OK */
  unsigned attempt;      /* failures in a row so far (0 after a success) */
  int64_t retry_in_ms;   /* the backoff before the next attempt, after a failure */
  double seconds;        /* how long the finished flush took in the writer */
  size_t items;          /* aggregates it carried */
  size_t landed;         /* of them, those the store now holds: written, or found there already */
  bool started;          /* a flush began: it covers every command applied so far */
} flusher_event_t;

/* batch is borrowed; sink is copied and its ctx handed to the writer thread.
 * idle_ping_ms as writer_new. clock (borrowed; it must outlive the flusher,
 * and is read by the writer thread too) measures every duration: backoff,
 * waits, how long a flush has run. NULL when the thread cannot start. */
flusher_t *flusher_new(batch_t *batch, const sink_t *sink, int64_t idle_ping_ms, const clock_source_t *clock);
/* How long a flush runs before the first "flush still running" line, and
 * between two of them, unless flusher_set_slow_log says otherwise. */
#define FLUSHER_SLOW_LOG_MS 5000
void flusher_set_slow_log(flusher_t *f, int64_t every_ms);

/* Waits for a flush in flight (writer_destroy) and stops the thread; what
 * it did not land stays in the batch, dirty. NULL-safe. */
void flusher_destroy(flusher_t *f);
/* The same, waiting at most wait_ms for a flush in flight. False when it
 * is still running then: the writer thread is abandoned with it
 * (writer_destroy_within), the batch keeps it as in flight
 * (batch_in_flight() stays true: the caller must neither end it nor
 * destroy the sink's ctx, which that thread still uses). NULL-safe (true). */
bool flusher_destroy_within(flusher_t *f, int64_t wait_ms);
void flusher_set_retry(flusher_t *f, int64_t backoff_ms, int64_t backoff_max_ms);

/* now is the caller's reading of the clock for the batch (linger, the
 * snapshot's updatedAt); backoff and waits read the flusher's clock afresh.
 * Takes back a finished flush (waiting up to wait_ms for one in flight),
 * then begins the next if it is due (force: if anything is unwritten at all,
 * as when draining) and no backoff is pending; with wait_ms > 0 and a
 * backoff pending it sleeps out the backoff (at most wait_ms) first. Handle
 * `finished` before `started`: a step can do both. */
flusher_event_t flusher_step(flusher_t *f, batch_now_t now, int64_t wait_ms, bool force);
/* When the next step has something to do, on the clock's monotonic side: a
 * flush due by linger, or the end of a backoff (INT64_MAX: nothing pending;
 * a flush in flight is the caller's to poll for, e.g. every few ms). */
int64_t flusher_wake_ms(const flusher_t *f);
bool flusher_in_flight(const flusher_t *f);

#endif
