/* How many aggregates a flush takes: at most what the writer lands in about
 * batch.linger_ms, so that a flush lasts about linger_ms whatever piles up.
 *
 * Why a cap: group commit makes the next flush take everything dirty when
 * one lands. When the store is slow per document, a long flush lets many
 * aggregates become dirty, so the next one is as long (a convoy), and a
 * command waits for the flush in flight and then for its own, both long.
 * With the cap, what a flush leaves is owed and goes with the next one at
 * once, oldest first, so a command waits for the dirty entries older than
 * its own (about one pass over the dirty list) and its own flush, where a
 * flush that took everything dirty would make it wait up to two passes.
 * Under a backlog the cap costs no writes: each dirty aggregate is still
 * written once per pass over the dirty list, however the pass is cut into
 * flushes; what it costs is a fixed overhead per flush (a round trip, a
 * commit, the consumer noticing), small against linger_ms.
 *
 * The estimate: linger_ms / (writer seconds per aggregate over the flushes
 * that got an answer, smoothed with half weight to the newest), never below
 * BATCH_FLUSH_FLOOR, which is also the cap before any flush has landed and
 * with linger_ms = 0. The floor is small so that it does not override the
 * estimate on a store that is slow per document (docs/BENCHMARKS.md has the
 * measurements behind it).
 *
 * Threads: part of the batch, owned by the batch's thread. */
#ifndef BATCH_FLUSHCAP_H
#define BATCH_FLUSHCAP_H

#include <stddef.h>
#include <stdint.h>

#define BATCH_FLUSH_FLOOR 8

typedef struct batch_flushcap {
  double sec_per_agg; /* smoothed writer seconds per aggregate; 0 = no flush has landed yet */
} batch_flushcap_t;

/* A flush of items aggregates got an answer from the store after seconds
 * in the writer. */
void batch_flushcap_observe(batch_flushcap_t *f, double seconds, size_t items);
/* The most aggregates the next flush takes. */
size_t batch_flushcap_get(const batch_flushcap_t *f, int64_t linger_ms);

#endif
