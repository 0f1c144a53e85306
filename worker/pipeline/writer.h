/* The write stage: a thread that owns the store connection and runs one
 * flush at a time, so that the consumer thread keeps polling, decoding and
 * merging while a flush is in flight (docs/DOCUMENT.md and docs/GUARANTEES.md).
 *
 * A flush is a writer_job_t: snapshots of the dirty aggregates, each a
 * private copy (model_aggregate_clone: one contiguous block, so one malloc
 * and one memcpy), with the revision each expects. The writer
 *   1. loads, in one $in per bulk-size chunk, the stored documents of the
 *      items marked `load` (aggregates the batch only holds as an overlay of
 *      recent commands) and merges each snapshot into its stored document;
 *      an item whose stored document already holds everything is OK and is
 *      not written, one whose merged document would pass the store's limit
 *      is TOO_LARGE and is not written either (the overlay's commands were
 *      checked against the overlay alone);
 *   2. writes the rest conditionally on their rev in bulks of `chunk`.
 * Every item's result is the sink's (sink_item_result_t), kept as the sink
 * gave it; `sent` says whether a write call gave it or the load settled it.
 * It never retries and never resolves a conflict itself: a conflict, an
 * item error or a failed call comes back as a result, and the batch decides
 * (batch.h: a conflicting aggregate is reloaded and merged again in the next
 * flush). So the writer holds no state between jobs but the connection.
 *
 * Ownership and hand-over (the only structures two threads touch):
 *  - a job is created by the batch (batch_flush_begin) on the consumer
 *    thread; writer_submit hands it, with every snapshot in it, to the
 *    writer thread; writer_take hands it back once finished. Between the two
 *    the consumer thread must not touch it, and the writer thread touches
 *    nothing else of the batch (items carry an opaque `tag` it never reads).
 *    Both hand-overs go through the writer's mutex, which orders every write
 *    to the job before its reader.
 *  - the sink's ctx (a store connection) is used only by the writer thread from
 *    writer_new until writer_destroy returns.
 *  - the job's progress counters (done_loads, done_writes) are atomics: the
 *    writer stores, the consumer thread may load them while it is in flight.
 *  - the clock given to writer_new is shared: the writer thread reads it
 *    (idle pings, how long a job took), and so may the caller's;
 *    clock_system() and clock_manual_t are safe to read from both.
 *  - metrics (metrics.h) are thread-safe; the writer records only the
 *    store's answers to idle pings there.
 * writer_execute runs a job on the calling thread instead (tests, and any
 * caller that wants stop-and-wait). */
#ifndef WRITER_H
#define WRITER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"
#include "base/clock.h"
#include "changes.h"
#include "store/sink.h"

typedef struct writer_item {
  model_aggregate_t *agg; /* owned by the job; after a load, the stored document merged with the snapshot */
  int64_t rev;            /* in: the stored rev the snapshot expects (ignored with load); out: see result */
  bool load;              /* in: read the stored document first */
  bool loaded;            /* out: the load happened; agg includes the stored document, and rev was its rev */
  /* out: SINK_ITEM_RETRY until a result comes (the job stopped before it:
   * see the job's status). With `sent`, the result of the write call: OK
   * (rev is the new stored rev), CONFLICT, TOO_LARGE, REJECTED
   * (error_code). Without, the load settled it: OK when the stored
   * document already held every slot (rev is the loaded rev), TOO_LARGE
   * when the snapshot merged into it would pass sink_document_limit
   * (sink.h): not merged, agg is the stored document as loaded, bytes the
   * merged size, and the batch decides which of the snapshot's commands
   * fit (batch.h). */
  sink_item_result_t result;
  bool sent;
  uint32_t error_code; /* the store's code, for SINK_ITEM_REJECTED and SINK_ITEM_TOO_LARGE when sent */
  size_t bytes;        /* out: the document's BSON size when written, or when refused or found too large */
  void *tag;           /* the batch's; the writer never reads it */
  /* in: whether the write must replace the whole document; writer_job_add
   * sets it, and a caller that knows what changed since the document
   * stored at rev (batch.c) clears it for a partial write (sink.h). Items
   * at rev 0 are written whole; for an item with load the writer decides
   * after the load (a cache miss whose overlay only changes students the
   * stored document has is written partially too). */
  bool whole;
  /* in/out: the slots this write changes in the document stored at rev
   * (models/changes.h), owned by the job: the caller's record for an item
   * without load, and what the snapshot wins over the stored document
   * (model_aggregate_wins) once a load came back. The change event lists
   * them; a partial write sets their students and, if it changed, the
   * header. */
  model_changes_t changes;
  int64_t updated_at_ms; /* out: the document's updatedAt once OK: the job's now_ms when sent, as
                          * stored when the load settled it */
} writer_item_t;

typedef struct writer_job {
  writer_item_t *items;
  size_t nitems, cap;
  size_t chunk;   /* bulk size (batch.max_aggregates): keys per load, documents per write */
  int64_t now_ms; /* updatedAt of the documents written */
  /* out, filled by the writer */
  sink_status_t status; /* SINK_OK: every item has a result; else SINK_RETRY or SINK_FATAL */
  sink_error_t err;
  uint64_t loads;
  uint64_t written;   /* items OK and sent */
  uint64_t unchanged; /* items OK not sent: the load found them in the store */
  uint64_t conflicts; /* items CONFLICT */
  uint64_t errors;    /* items sent and refused: REJECTED, or TOO_LARGE by the store */
  uint64_t too_large; /* items TOO_LARGE not sent: found by the merge after the load */
  uint64_t bytes_written; /* BSON bytes of the documents written (the items OK and sent) */
  double seconds; /* how long the job took in the writer (the writer's clock, clock_mono_seconds: at
                   * full resolution, for the flush cap divides it by the items, often below a
                   * millisecond) */
  /* progress while in flight, the only fields another thread may read then
   * (atomics: the writer stores, anyone loads): items loaded and written so far */
  atomic_size_t done_loads, done_writes;
  /* the batch's bookkeeping of what the job covers; the writer never reads it */
  int64_t commands, first_pending_ms; /* first_pending_ms: monotonic */
  size_t bytes;
} writer_job_t;

/* An empty job with room for n items (never NULL: models/oom.h). Caller owns;
 * writer_job_destroy(NULL) is safe and frees every snapshot still held. */
writer_job_t *writer_job_new(size_t n);
void writer_job_destroy(writer_job_t *job);
/* Appends an item (written whole: see writer_item_t); the job takes agg. */
void writer_job_add(writer_job_t *job, model_aggregate_t *agg, int64_t rev, bool load, void *tag);

/* Runs the job on the calling thread against sink (see the file comment);
 * clock (its monotonic side, at its finest resolution) measures
 * job->seconds. */
void writer_execute(const sink_t *sink, const clock_source_t *clock, writer_job_t *job);

typedef struct writer writer_t;

/* Starts the thread. sink is copied; its ctx belongs to the writer thread
 * until writer_destroy returns. While idle for idle_ping_ms (0 = never) the
 * thread pings the store, so that readiness reflects it without traffic;
 * clock (borrowed, read from the writer thread: it must outlive the writer)
 * measures that idle time on its monotonic side. NULL when the thread
 * cannot start. */
writer_t *writer_new(const sink_t *sink, int64_t idle_ping_ms, const clock_source_t *clock);
/* Waits for a job in flight to finish (a store call cannot be abandoned
 * half-way safely), destroys a finished one nobody took, joins the thread.
 * writer_destroy(NULL) is safe. */
void writer_destroy(writer_t *w);
/* The same, waiting at most wait_ms for a job in flight (or an idle ping).
 * If it is still running then (a store call that hangs: a black-holed socket waits for its
 * timeout), the thread is abandoned instead of joined: it keeps the job and
 * the sink's ctx, destroys the job and frees itself when the call returns,
 * and exits. Returns false in that case: the caller must then leave the
 * sink's ctx alone (the process is exiting; what the job carried is not
 * acknowledged, so its offsets were never committed). NULL-safe (true). */
bool writer_destroy_within(writer_t *w, int64_t wait_ms);

/* Hands job to the writer thread. One job at a time: false (and the job
 * stays the caller's) while another is submitted and not yet taken back. */
bool writer_submit(writer_t *w, writer_job_t *job);
/* The finished job, handed back to the caller, waiting up to wait_ms (0 =
 * only look); NULL if none finished by then. */
writer_job_t *writer_take(writer_t *w, int64_t wait_ms);
/* True from writer_submit until writer_take has handed the job back. */
bool writer_busy(writer_t *w);

#endif
