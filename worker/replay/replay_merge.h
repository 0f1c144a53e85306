/* The merge of a replay that writes no store (--output, verify's rebuild):
 * a plain table of aggregates (aggset.h) and the two counts the summary
 * reports. It does what batch_apply does to an aggregate, the store's size
 * limit included (sink_document_limit: a command that would pass it is
 * rejected document_too_large and changes nothing), and none of the
 * batch's write bookkeeping (seqs, latencies, dirty lists, LRU), which only
 * a store needs.
 *
 * replay_merge_merger is the table as a merger (replay_merger.h): decode
 * and merge on the replay's thread, every reject in stream order.
 *
 * Threads: a replay_merge_t is owned by one thread at a time: the replay's,
 * or one shard's (replay_shards.h); the rebuilt list it gathers into is the
 * caller's. */
#ifndef REPLAY_MERGE_H
#define REPLAY_MERGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"
#include "aggset.h"
#include "command.h"
#include "replay_merger.h"

typedef struct replay_merge {
  model_aggset_t set;
  uint64_t applied; /* commands that changed a slot */
  uint64_t stale;   /* commands that changed nothing */
} replay_merge_t;

#define REPLAY_MERGE_INIT {MODEL_AGGSET_INIT, 0, 0}

/* The hash that routes and finds cmd's aggregate (model_aggset_hash). */
static inline uint32_t replay_merge_hash(const model_command_t *cmd) {
  return model_aggset_hash(cmd->tenant, cmd->tenant_len, cmd->assignment, cmd->assignment_len);
}

/* Merges a validated command whose replay_merge_hash is hash. False when it
 * would make its aggregate's document pass the store's limit: *rej says so
 * (document_too_large) and nothing changed. */
bool replay_merge_apply(replay_merge_t *m, const model_command_t *cmd, uint32_t hash, model_reject_t *rej);

/* Moves m's aggregates into *out, sorted by key; m keeps its counts. */
void replay_merge_sorted(replay_merge_t *m, replay_rebuilt_t *out);

/* Merges the sorted lists parts[0..n) (keys distinct across them: each
 * aggregate lives in one merge) into *out, sorted; the parts are left
 * empty. Linear in the aggregates times n. */
void replay_rebuilt_join(replay_rebuilt_t *parts, size_t n, replay_rebuilt_t *out);

void replay_merge_free(replay_merge_t *m);

/* The table as a merger: commands of at most max_bytes (limits.max_command_bytes),
 * rejects to reject(ctx, ...). */
replay_merger_t replay_merge_merger(size_t max_bytes, replay_reject_fn reject, void *ctx);
/* replay_rebuilt_free(NULL) and of an empty list are safe. */
void replay_rebuilt_free(replay_rebuilt_t *r);

#endif
