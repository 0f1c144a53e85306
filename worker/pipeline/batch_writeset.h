/* The batch's write set: which entries hold changes that no snapshot has
 * taken yet, oldest change first, and what each changed since its last
 * snapshot, so that the next write of an aggregate can be partial and its
 * change event can say which slots it changed.
 *
 * The dirty list is kept sorted by pend_seq (the seq of the entry's oldest
 * change not in the store nor in flight): a new change has the greatest seq
 * so far and goes to the front, a snapshot that did not land gives back
 * changes older than any dirty one and goes to the back. So flushes take
 * the back first and the least pending seq is the back's: O(1). Only
 * batch_entries.c marks and unmarks (its invariant I4).
 *
 * What changed (model_changes_t): the slots the commands applied since the
 * last snapshot wrote, each student once per run of commands on it (a
 * burst on one student adds nothing). A snapshot takes them; one that does
 * not land gives them back. A full buffer is normalized (one record per
 * student) before it grows (changes.h): a dirty entry holds about a record
 * per student it changed, a clean one none. Commands applied to an overlay may turn out
 * stale against the stored document: when the stored document arrives,
 * what changed is taken again from the merge (model_aggregate_wins).
 * `touched_whole` says the next write cannot be partial (a new student of
 * a loaded entry: a $set would append it out of id order; for an overlay,
 * a student the stored document lacks, checked when it arrives; a snapshot
 * that did not land).
 *
 * Threads: part of the batch, owned by the batch's thread. */
#ifndef BATCH_WRITESET_H
#define BATCH_WRITESET_H

#include <stddef.h>
#include <stdint.h>

#include "batch_entry.h"
#include "command.h"
#include "writer.h"

typedef struct batch_writeset {
  batch_entry_t dirty; /* sentinel; dirty.next is the newest change, dirty.prev the oldest */
  size_t ndirty;
} batch_writeset_t;

void batch_writeset_init(batch_writeset_t *w);

/* e (in no list) changed with the command of this seq, applied at mono_ms
 * (monotonic): into the list, at the front, unless it is dirty already. */
void batch_writeset_mark(batch_writeset_t *w, batch_entry_t *e, uint64_t seq, int64_t mono_ms);
/* A snapshot of e in flight did not land: what it carried is owed again,
 * from its flight_seq on, older than every dirty entry: to the back. Called
 * newest first over a job's items, so that they keep their order. */
void batch_writeset_redirty_old(batch_writeset_t *w, batch_entry_t *e);
/* Out of the list (its changes went into a snapshot, or turned out to be in
 * the store already). */
void batch_writeset_unmark(batch_writeset_t *w, batch_entry_t *e);
/* The entry with the oldest change, or NULL when nothing is dirty. */
static inline batch_entry_t *batch_writeset_oldest(const batch_writeset_t *w) {
  return w->ndirty ? w->dirty.prev : NULL;
}

/* Records what an applied command changed in e; before is e's student
 * count before it was applied. */
void batch_writeset_note(batch_entry_t *e, const model_command_t *cmd, size_t before);
/* The next snapshot of e cannot be a partial write. */
void batch_writeset_whole(batch_entry_t *e);
/* The overlay e (unloaded) meets stored, the stored document with
 * everything a snapshot carried merged in: what e changed since is what
 * its overlay wins over stored, and it can be a partial write only if
 * stored has every one of those students. */
void batch_writeset_check_overlay(batch_entry_t *e, const model_aggregate_t *stored);
/* A snapshot of e goes into it: it takes what e recorded (a partial write
 * when e is loaded and stored), and e starts recording afresh. Returns the
 * heap the item took over. */
size_t batch_writeset_hand_over(batch_entry_t *e, writer_item_t *it);
/* The snapshot it of e did not land: what it changed is owed again, with
 * what e changed since, and the next write is whole. */
void batch_writeset_give_back(batch_entry_t *e, writer_item_t *it);

#endif
