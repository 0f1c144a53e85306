/* The write-behind state of the batch's entries (batch_entry.h): which
 * entries hold changes the store lacks, which ride on the flush in flight,
 * which are kept clean in the LRU, and what memory each bound counts. Every
 * change of an entry's state goes through the transitions below; batch.c,
 * the orchestrator, decides which to make, and reads the lists.
 *
 * Two facts make an entry's state:
 *  - its write state (batch_entry_state): CLEAN (nothing the store lacks),
 *    DIRTY (changes no snapshot has taken: in the dirty list), IN_FLIGHT (a
 *    snapshot of it is in the job in flight), IN_FLIGHT_DIRTY (both: it
 *    changed after its snapshot);
 *  - its base: LOADED (its aggregate includes the stored document, rev is
 *    the stored revision, 0 if absent) or an OVERLAY (only the commands
 *    seen since it entered memory, or since it lost a write race).
 *
 * Transitions:
 *   change     CLEAN -> DIRTY, IN_FLIGHT -> IN_FLIGHT_DIRTY (a command applied)
 *   take_off   DIRTY -> IN_FLIGHT (a snapshot into the job)
 *   landed     IN_FLIGHT -> CLEAN, IN_FLIGHT_DIRTY -> DIRTY (the write landed)
 *   owe_again  IN_FLIGHT[_DIRTY] -> DIRTY (it did not: owed, oldest first)
 *   in_store   drops what is DIRTY when the stored document holds it already
 *   load       OVERLAY -> LOADED (the job loaded the stored document)
 *   unload     LOADED -> OVERLAY (a conflict: the store's state is unknown)
 *   evict      a CLEAN entry in the LRU leaves memory
 *
 * Invariants (batch_entries_check tests every one; tests/unit/test_batch_entry.c
 * breaks none with any transition):
 *   I1 an entry is in the dirty list iff it is dirty, and ws.ndirty counts them;
 *   I2 an entry is in the LRU only while CLEAN and LOADED (so dirty and in-flight
 *      entries are never evicted), cache.nclean counts them and cache.bytes
 *      sums their mem; an entry is in at most one list;
 *   I3 pending_bytes is the sum of batch_entry_memory over the dirty and
 *      in-flight entries, each of which has it as its mem (the bound of
 *      batch.max_pending_bytes is on the heap unwritten changes hold);
 *   I4 the dirty list is sorted by pend_seq, the oldest at the back, every
 *      one below the batch's next seq: the least pending seq is the back's,
 *      which makes batch_durable_seq O(1) and commits safe;
 *   I5 an IN_FLIGHT_DIRTY entry's flight_seq is below its pend_seq (its
 *      snapshot holds its older changes), and only an entry in flight has
 *      arrival times of a snapshot (one job at a time);
 *   I6 a LOADED entry holds no commands (batch_hold.h) and can rebuild:
 *      holds are made and kept only while it is an overlay.
 *
 * Threads: part of the batch, owned by the batch's thread. */
#ifndef BATCH_ENTRIES_H
#define BATCH_ENTRIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "batch_cache.h"
#include "batch_entry.h"
#include "batch_writeset.h"

typedef enum {
  BATCH_ENTRY_CLEAN,
  BATCH_ENTRY_DIRTY,
  BATCH_ENTRY_IN_FLIGHT,
  BATCH_ENTRY_IN_FLIGHT_DIRTY
} batch_entry_state_t;

static inline batch_entry_state_t batch_entry_state(const batch_entry_t *e) {
  if (e->inflight) return e->dirty ? BATCH_ENTRY_IN_FLIGHT_DIRTY : BATCH_ENTRY_IN_FLIGHT;
  return e->dirty ? BATCH_ENTRY_DIRTY : BATCH_ENTRY_CLEAN;
}

typedef struct batch_entries {
  batch_cache_t cache;  /* every entry; the clean loaded ones in its LRU */
  batch_writeset_t ws;  /* the dirty entries, oldest change at the back */
  size_t pending_bytes; /* the memory of the dirty and in-flight entries (I3) */
} batch_entries_t;

void batch_entries_init(batch_entries_t *s);
/* Frees every entry, and what each holds. */
void batch_entries_free(batch_entries_t *s);

/* e's memory changed (its aggregate, arrival times or holds): counted
 * again if it is dirty or in flight. */
void batch_entries_recount(batch_entries_t *s, batch_entry_t *e);
/* A command of this seq, which entered at event_ms (a wall time) and was
 * applied at mono_ms (monotonic), changed e (what it changed is recorded
 * already: batch_writeset_note, holds): dirty, out of the LRU, its arrival
 * time with the pending changes. */
void batch_entries_change(batch_entries_t *s, batch_entry_t *e, uint64_t seq, int64_t event_ms, int64_t mono_ms);
/* The dirty e went into a snapshot (its changes handed over,
 * batch_writeset_hand_over): in flight, its arrival times with it. */
void batch_entries_take_off(batch_entries_t *s, batch_entry_t *e);
/* The snapshot of e landed at wall_ms, the stored revision now rev: its
 * commands are durable; clean into the LRU unless it changed since. */
void batch_entries_landed(batch_entries_t *s, batch_entry_t *e, int64_t rev, int64_t wall_ms);
/* The snapshot of e did not land: what it carried is owed again, whole,
 * its commands back in front of those that came since, from its
 * flight_seq on (batch_writeset_redirty_old: call newest first), and what
 * it changed (it, its item, may be NULL) back with what e changed since. */
void batch_entries_owe_again(batch_entries_t *s, batch_entry_t *e, writer_item_t *it);
/* What e holds that no snapshot took is in the store already (its load
 * says so) at wall_ms: not dirty any more, those commands durable. */
void batch_entries_in_store(batch_entries_t *s, batch_entry_t *e, int64_t wall_ms);
/* e takes stored (owned; its stored revision rev) as its base: LOADED. Its
 * holds move to *holds (the caller applies them again or releases them). */
void batch_entries_load(batch_entries_t *s, batch_entry_t *e, model_aggregate_t *stored, int64_t rev,
                        batch_holds_t *holds);
/* e lost a write race: an OVERLAY again; a LOADED one held no commands, so
 * until it is loaded again it cannot be rebuilt. */
void batch_entries_unload(batch_entries_t *s, batch_entry_t *e);
/* A command was applied to the OVERLAY e (before batch_entries_change):
 * with holding (the batch holds commands), a copy of origin is held so
 * that the command can be applied again, or rejected late, when the stored
 * document arrives; unless e cannot be rebuilt anyway. Without holding or
 * an origin it can no longer be rebuilt, and what it held is released. */
void batch_entries_hold(batch_entries_t *s, batch_entry_t *e, bool holding, const batch_origin_t *origin);
/* e's holds released: unless it is loaded, it can no longer be rebuilt. */
void batch_entries_drop_holds(batch_entries_t *s, batch_entry_t *e);
/* Evicts the least recently used clean entries while more than keep are
 * kept or they hold more than keep_bytes. */
void batch_entries_evict(batch_entries_t *s, size_t keep, size_t keep_bytes);

/* Checks I1-I6 over every entry (next_seq: the batch's next seq); false
 * with why (a short sentence) at the first broken. For tests: it walks
 * everything. */
bool batch_entries_check(const batch_entries_t *s, uint64_t next_seq, char *why, size_t why_len);

#endif
