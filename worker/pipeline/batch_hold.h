/* The commands an unloaded aggregate received, held by the batch so that
 * they can be applied again to its stored document when that arrives.
 *
 * An unloaded entry (batch.h) is an overlay: the merge held each command to
 * the store's limit against the overlay alone, not against the document
 * the store has. When the overlay merged into that document would pass the
 * limit (the writer's SINK_ITEM_TOO_LARGE after a load, or the merge of what came
 * while the load was in flight), the batch takes the stored document as
 * the entry's base and applies the held commands to it again, in the order
 * they came; each that does not fit is rejected then (document_too_large),
 * as it would have been had the document been loaded when it came.
 *
 * The batch does not know where a command came from: its caller (the
 * consumer: a Kafka message; the replay: a line) gives a batch_holder_t,
 * and with each command an `origin` from which hold() makes a copy that
 * outlives the call. The holds of an entry are released as soon as it is
 * loaded. Their bytes count as the entry's memory, so they are part of the
 * pending bytes that pause fetching.
 *
 * Threads: the batch's (batch.h); every callback is made on it. */
#ifndef BATCH_HOLD_H
#define BATCH_HOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"
#include "command.h"

typedef struct batch_holder {
  /* A copy of what origin (batch_apply_from's) needs to decode and reject
   * the command again; never NULL (out of memory aborts). *bytes is the
   * heap it holds. The batch owns it until it gives it to release. */
  void *(*hold)(void *ctx, const void *origin, size_t *bytes);
  /* Decodes the held command again into *cmd; false with *rej filled when
   * it no longer decodes (limits changed by a reload): it is then rejected
   * with that reason. */
  bool (*decode)(void *ctx, const void *held, model_command_t *cmd, model_reject_t *rej);
  /* The held command (cmd: as decoded again, NULL if it no longer decodes)
   * does not fit the document it must go into: reject it as a command that
   * fails to decode is (rej says why). It changed nothing that will be
   * written. */
  void (*reject)(void *ctx, const void *held, const model_command_t *cmd, const model_reject_t *rej);
  /* Frees a held copy. */
  void (*release)(void *ctx, void *held);
  void *ctx;
} batch_holder_t;

/* An entry's holds, in the order their commands were applied. {0} is
 * empty and complete. */
typedef struct batch_holds {
  void **v;
  uint32_t n, cap;
  size_t bytes;    /* what hold() said the copies hold */
  bool incomplete; /* a change not in the store came without a hold: they cannot rebuild the entry */
} batch_holds_t;

void batch_holds_add(batch_holds_t *h, void *held, size_t bytes);

/* Releases every hold (holder may be NULL only when there is none); the
 * list is empty and complete again. */
void batch_holds_release(batch_holds_t *h, const batch_holder_t *holder);

/* Applies every held command again to agg, in order, each within max_bytes
 * (model_aggregate_apply_within); each that does not fit, or no longer
 * decodes, goes to holder->reject. cmd is scratch room for the decode.
 * Returns how many were rejected; *applied says how many changed agg. The
 * holds are left as they are. */
size_t batch_holds_reapply(const batch_holds_t *h, const batch_holder_t *holder, model_aggregate_t *agg,
                           size_t max_bytes, model_command_t *cmd, size_t *applied);

static inline size_t batch_holds_memory(const batch_holds_t *h) { return h->bytes + h->cap * sizeof *h->v; }

#endif
