/* The commands an unloaded aggregate received, held by the batch so that
 * they can be applied again to its stored document when that arrives.
 *
 * An unloaded entry (batch.h) is an overlay: the merge held each command to
 * the store's limit against the overlay alone, not against the document
 * the store has. When the overlay merged into that document would pass the
 * limit (the writer's SINK_ITEM_TOO_LARGE after a load, or the merge of what came
 * while the load was in flight), the batch takes the stored document as
 * the entry's base, decodes the held commands again and applies them to it,
 * in the order they came; each that does not fit is rejected then
 * (document_too_large), as it would have been had the document been loaded
 * when it came.
 *
 * What is held of a command is a copy of its origin (batch_origin_t): the
 * bytes it was decoded from, and where it came from in the caller's words
 * (the consumer: a Kafka message's position, topic and key; the replay: a
 * line number), which the batch never reads. A late reject gives that copy
 * back to the one report callback the caller set (batch_holding_t), which
 * dead-letters it or writes it to the rejects; the batch decodes and applies
 * without asking the caller anything. The holds of an entry are released
 * as soon as it is loaded. Each hold is one heap block, and its size counts
 * as the entry's memory, so holds are part of the pending bytes that pause
 * fetching.
 *
 * Threads: the batch's (batch.h); the report callback is called on it. */
#ifndef BATCH_HOLD_H
#define BATCH_HOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"
#include "command.h"

/* Bytes borrowed for a call: p may be NULL when len is 0. */
typedef struct batch_span {
  const void *p;
  size_t len;
} batch_span_t;

/* How many pieces a caller's "where it came from" has at most. */
#define BATCH_ORIGIN_PARTS 3

/* A command's origin: what is held of it. Given to batch_apply_from
 * borrowed, for the call; given back to a late reject as the batch's copy,
 * for that call. */
typedef struct batch_origin {
  batch_span_t command;                  /* the bytes the command was decoded from */
  batch_span_t from[BATCH_ORIGIN_PARTS]; /* the caller's, copied as they are; unused ones empty */
} batch_origin_t;

/* How a batch holds commands (batch_set_holding). */
typedef struct batch_holding {
  /* The limit the held bytes are decoded again with (limits.max_command_bytes,
   * as the caller decoded them first). */
  size_t max_command_bytes;
  /* A late reject: the held command (cmd: as decoded again, NULL when it no
   * longer decodes) does not fit the document it must go into, and rej says
   * why. It changed nothing that will be written; the caller rejects it as
   * a command that fails to decode. */
  void (*reject)(void *ctx, const batch_origin_t *origin, const model_command_t *cmd, const model_reject_t *rej);
  void *ctx;
} batch_holding_t;

/* One held command: its origin's bytes in one heap block. */
typedef struct batch_held batch_held_t;

/* An entry's holds, in the order their commands were applied. {0} is
 * empty and complete. */
typedef struct batch_holds {
  batch_held_t **v;
  uint32_t n, cap;
  size_t bytes;    /* the heap the held copies take */
  bool incomplete; /* a change not in the store came without a hold: they cannot rebuild the entry */
} batch_holds_t;

/* Appends a copy of origin. */
void batch_holds_add(batch_holds_t *h, const batch_origin_t *origin);

/* Releases every hold; the list is empty and complete again. */
void batch_holds_release(batch_holds_t *h);

/* Decodes every held command again and applies it to agg, in order, each
 * within max_bytes (model_aggregate_apply_within); each that does not fit,
 * or no longer decodes, goes to how->reject. cmd is scratch room for the
 * decode. Returns how many were rejected; *applied says how many changed
 * agg. The holds are left as they are. */
size_t batch_holds_reapply(const batch_holds_t *h, const batch_holding_t *how, model_aggregate_t *agg,
                           size_t max_bytes, model_command_t *cmd, size_t *applied);

static inline size_t batch_holds_memory(const batch_holds_t *h) { return h->bytes + h->cap * sizeof *h->v; }

#endif
