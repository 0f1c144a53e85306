/* `aggregator verify`: the store audited against the log.
 *
 * 1. Rebuild: the replay's pipeline (replay.h) with its source (the
 *    configured topics from --from to --until with the replay's own
 *    never-committing consumer, or --input) merged in memory, exactly as
 *    `replay --output` does; so the memory is the replay's: every rebuilt
 *    aggregate is held at once.
 * 2. Compare: the rebuilt documents, sorted by _id, in chunks of
 *    batch.max_aggregates; each chunk's stored documents are loaded
 *    (store_load_counts, the worker's own load path), compared
 *    (model_drift_compare; a stored document that does not decode is one
 *    `differs` line with the decoder's reason, model_drift_unreadable, and
 *    the audit goes on), reported and freed before the next chunk, so
 *    stored documents add at most one chunk to the rebuild's memory.
 *    Documents no command read touches are never read.
 * 3. Repair (--repair): the chunk's `missing` and `store_behind` documents
 *    go through the normal write stage (writer_execute: load, merge the
 *    rebuilt aggregate into the stored document, write conditionally on its
 *    rev, and on a conflict load and merge again). The merge replaces only
 *    slots whose rebuilt stamp is greater, so a repair never goes back in
 *    time, never touches a `store_ahead` or `differs` slot, and a live
 *    worker writing at the same time is safe.
 *
 * Report: one JSON line per drifted document on `report`, in _id order:
 *   {"_id","drift","path","detail"} and, with --repair on a repairable
 *   document, "repair": "written" (with the new "rev"), "unchanged" (the
 *   store held it all by then: a live writer got there) or "failed" (with
 *   "error"). */
#ifndef VERIFY_H
#define VERIFY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/clock.h"
#include "config/config.h"
#include "drift.h"
#include "replay.h"

typedef struct verify_options {
  const char *from;  /* --from: NULL or "beginning", or an RFC 3339 time */
  const char *until; /* --until: NULL or "end", or an RFC 3339 time */
  const char *input; /* --input FILE|-, NULL = the topics */
  bool repair;       /* --repair */
  bool allow_empty;  /* --allow-empty: no document to compare is a success */
  /* Measures the store's outages and the verify's time, and dates repairs;
   * NULL: the process's clock (clock_system). Borrowed for the run. */
  const clock_source_t *clock;
} verify_options_t;

typedef struct verify_stats {
  replay_stats_t rebuild;                /* read, applied, stale, rejected; aggregates = documents rebuilt */
  uint64_t compared;                     /* documents whose comparison is done */
  uint64_t drifted;                      /* documents reported */
  uint64_t kinds[MODEL_DRIFT_KINDS];     /* documents per reported kind */
  uint64_t repaired, unchanged, failed;  /* --repair: documents written, found already whole, not written */
  double seconds;                        /* how long the whole verify took, on the options' clock */
} verify_stats_t;

/* Runs a verify, writing the report to `report` (the caller's; flushed, not
 * closed) and filling *stats (also on failure, with what was done).
 *
 * Before anything is read the store must answer a ping; it, and every later
 * store call (a chunk's load, its repairs), is retried with backoff for
 * store.connect_timeout_ms at most after its first failure in a row, then
 * the verify fails: it never waits without bound.
 *
 * Returns the exit status: 0 nothing drifted, 3 something did (repaired or
 * not), 1 runtime failure (broker, store, a repair not written, no
 * document compared without allow_empty), 2 configuration (a bad store
 * URI), 128 + the signal when SIGINT or SIGTERM stopped it before every
 * document was compared (signals.h; 130 for SIGINT). Errors go to the log
 * (log.h). */
int verify_run(const config_t *cfg, const verify_options_t *o, FILE *report, verify_stats_t *stats);

#endif
