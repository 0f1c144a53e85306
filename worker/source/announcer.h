/* The batch's announcer (pipeline/batch.h "Announcing") for the live worker,
 * a replay into the store and verify's repairs: each announcement becomes
 * a change event (models/changes.h: model_change_event_json, with or
 * without the document as changes.include_document says) produced by a
 * changes_t (changes_producer.h), keyed by the document's _id with its rev.
 *
 * The announcer owns its producer; its caller polls `changes` for the
 * acknowledgements and holds its commits on them (changes_producer.h).
 *
 * An event whose document the producer cannot carry (larger than its
 * message.max.bytes) is announced without it, as with
 * changes.include_document = false, and logged: a reader reads that
 * document from the store. An event that can never be delivered makes
 * announcer_ok false: the caller stops rather than commit past a write it
 * cannot announce.
 *
 * Fault point, for tests only: with AGG_FAULT_KILL_AFTER_WRITE=N in the
 * environment when announcer_new runs, the process kills itself (SIGKILL)
 * when the Nth written aggregate is to be announced, before its event is
 * produced: the crash between a write and its event that the re-announce
 * rule covers (docs/CHANGES.md).
 *
 * Threads: used by the thread that owns the batch (its flushes end there),
 * which owns the producer too. */
#ifndef ANNOUNCER_H
#define ANNOUNCER_H

#include <stdbool.h>
#include <stdint.h>

#include "buf.h"
#include "changes_producer.h"
#include "config/config.h"
#include "pipeline/batch.h"

typedef struct announcer {
  changes_t *changes; /* owned: the producer of cfg->changes_topic */
  bool include_document;
  bool failed;        /* a produce refused for good */
  uint64_t events;    /* produced */
  uint64_t documents_left_out; /* events announced without their document: too large for the producer */
  int64_t kill_at;    /* the fault point's N, 0 when unset */
  int64_t written;    /* written aggregates announced, for the fault point */
  model_buf_t value;  /* scratch for the event's value */
} announcer_t;

/* The announcer of cfg->changes_topic (which must be set), with its own
 * producer; clock is borrowed (changes_new). NULL with err filled when
 * librdkafka refuses the producer's configuration. announcer_destroy drops
 * what is not acknowledged (poll `changes` until !changes_pending first to
 * deliver it) and is NULL-safe. */
announcer_t *announcer_new(const config_t *cfg, const clock_source_t *clock, char *err, size_t errsz);
void announcer_destroy(announcer_t *a);
/* False once an event can never be delivered: refused for good when
 * produced, or later by its delivery report (logged by the producer). */
bool announcer_ok(const announcer_t *a);
/* A batch_announce_cb; ctx is the announcer_t. */
void announcer_announce(void *ctx, const batch_written_t *w);

#endif
