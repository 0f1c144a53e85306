/* The batch's announcer (pipeline/batch.h "Announcing") for the live worker,
 * a replay into the store and verify's repairs: each announcement becomes
 * a change event (models/changes.h: model_change_event_json, with or
 * without the document as changes.include_document says) produced by a
 * changes_t (changes_producer.h), keyed by the document's _id with its rev.
 *
 * An event whose document the producer cannot carry (larger than its
 * message.max.bytes) is announced without it, as with
 * changes.include_document = false, and logged: a reader reads that
 * document from the store. A produce that can never succeed sets `failed`:
 * the caller stops rather than commit past a write it cannot announce.
 *
 * Fault point, for tests only: with AGG_FAULT_KILL_AFTER_WRITE=N in the
 * environment when announcer_init runs, the process kills itself (SIGKILL)
 * when the Nth written aggregate is to be announced, before its event is
 * produced: the crash between a write and its event that the re-announce
 * rule covers (docs/CHANGES.md).
 *
 * Threads: used by the thread that owns the batch (its flushes end there),
 * and the changes_t it borrows belongs to that thread too. */
#ifndef ANNOUNCER_H
#define ANNOUNCER_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "changes_producer.h"
#include "config/config.h"
#include "pipeline/batch.h"

typedef struct announcer {
  changes_t *changes; /* borrowed */
  bool include_document;
  bool failed;        /* a produce that can never succeed */
  uint64_t events;    /* produced */
  uint64_t documents_left_out; /* events announced without their document: too large for the producer */
  int64_t kill_at;    /* the fault point's N, 0 when unset */
  int64_t written;    /* written aggregates announced, for the fault point */
  model_buf_t value;  /* scratch for the event's value */
} announcer_t;

void announcer_init(announcer_t *a, changes_t *changes, const config_t *cfg);
void announcer_free(announcer_t *a);
/* A batch_announce_cb; ctx is the announcer_t. */
void announcer_announce(void *ctx, const batch_written_t *w);

#endif
