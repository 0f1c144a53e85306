/* An aggregate in the batch's memory: the record that the batch's modules
 * share. Internal to the batch: nothing outside worker/pipeline/batch*.c
 * includes it.
 *
 * Who changes which fields:
 *  - batch_entries.c, the state machine of an entry: agg, rev, loaded,
 *    dirty, inflight, pend_seq, flight_seq (and their times, pend_ms and
 *    flight_ms), mem, the arrival times
 *    (batch_latency.h) and the holds (batch_hold.h), through its
 *    transitions, and the lists through the two below; its header states
 *    the states, the transitions and the invariants they keep;
 *  - batch_cache.c: the table (hash_next, hash, key) and the LRU (prev,
 *    next while clean);
 *  - batch_writeset.c: the dirty list (prev, next while dirty) and what
 *    changed since the last snapshot (changes, touched_whole);
 *  - batch.c: announce, announced_epoch. */
#ifndef BATCH_ENTRY_H
#define BATCH_ENTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "aggregate.h"
#include "batch_hold.h"
#include "batch_latency.h"
#include "changes.h"

typedef struct batch_entry {
  struct batch_entry *hash_next;
  /* The aggregate's key "<tenant>/<assignment>" (NUL-terminated), in the
   * entry's own allocation, right after it; and its hash (model_aggset_hash). A lookup
   * compares the hash, then the key, without touching the aggregate, whose
   * block moves as it grows and is replaced when a stored document is
   * loaded: one memory access fewer per command, a cache miss each when the
   * aggregates are many. */
  const char *key;
  uint32_t hash;
  uint8_t key_len;
  struct batch_entry *prev, *next; /* in the dirty list or the clean LRU, or both NULL */
  model_aggregate_t *agg;
  int64_t rev;
  size_t mem;          /* bytes counted in pending_bytes while dirty or in flight, in the cache's bytes while in the LRU */
  uint64_t pend_seq;   /* while dirty: seq of the oldest command not in the store nor in flight */
  uint64_t flight_seq; /* while in flight: pend_seq when the snapshot was taken */
  int64_t pend_ms;     /* while dirty: when the command of pend_seq was applied (monotonic ms) */
  int64_t flight_ms;   /* while in flight: pend_ms when the snapshot was taken */
  bool loaded;
  bool dirty;    /* changes not in any snapshot: in the dirty list */
  bool inflight; /* a snapshot of it is in the job in flight */
  /* What changed since the last snapshot, for partial writes (sink.h) and
   * change events: batch_writeset.h says what is kept and why. */
  model_changes_t changes;
  bool touched_whole; /* the next snapshot cannot be a partial write */
  /* Change events (batch.h "Announcing"): the next write that lands, or
   * the load that finds the store holding everything, is announced even
   * if it writes nothing; announced_epoch is the batch's epoch when it was
   * last announced. */
  bool announce;
  uint32_t announced_epoch;
  /* The commands of the changes not in any snapshot, and of the snapshot in
   * flight (and those stale against it). */
  batch_latency_t arr_pend, arr_flight;
  /* While unloaded: the commands applied since it entered memory (or since
   * its last conflict), to apply again to the stored document. */
  batch_holds_t holds;
} batch_entry_t;

/* Circular lists with a sentinel entry. */
static inline void batch_entry_list_init(batch_entry_t *s) { s->prev = s->next = s; }
static inline bool batch_entry_listed(const batch_entry_t *e) { return e->prev != NULL; }
static inline void batch_entry_list_unlink(batch_entry_t *e) {
  if (!e->prev) return;
  e->prev->next = e->next;
  e->next->prev = e->prev;
  e->prev = e->next = NULL;
}
static inline void batch_entry_list_push_front(batch_entry_t *s, batch_entry_t *e) {
  e->next = s->next;
  e->prev = s;
  s->next->prev = e;
  s->next = e;
}
static inline void batch_entry_list_push_back(batch_entry_t *s, batch_entry_t *e) {
  e->prev = s->prev;
  e->next = s;
  s->prev->next = e;
  s->prev = e;
}

/* The memory e holds: its aggregate, the entry itself (its key included),
 * its changes, its arrival times and its holds. One measure for both
 * bounds (batch.max_pending_bytes, cache.max_bytes): with many small
 * aggregates the bookkeeping outweighs the aggregates (docs/BENCHMARKS.md). */
static inline size_t batch_entry_memory(const batch_entry_t *e) {
  return model_aggregate_memory(e->agg) + sizeof *e + (size_t)e->key_len + 1 + model_changes_memory(&e->changes) +
         batch_latency_bytes(&e->arr_pend) + batch_latency_bytes(&e->arr_flight) + batch_holds_memory(&e->holds);
}

/* Frees e and everything it holds, its holds included; it must be in no
 * list. */
static inline void batch_entry_free(batch_entry_t *e) {
  batch_holds_release(&e->holds);
  model_aggregate_destroy(e->agg);
  model_changes_free(&e->changes);
  batch_latency_free(&e->arr_pend);
  batch_latency_free(&e->arr_flight);
  free(e);
}

#endif
