/* What the batch does when the store refuses an aggregate's document as too
 * large (past sink_document_limit, sink.h), the last line of defence: the
 * merge rejects every command that would make a document pass that limit,
 * when it is applied or, for an aggregate merged before its stored document
 * was loaded, when the load lands (batch.h: rebuilt from its holds). So a
 * refusal means the merge's size and the store's disagree, or an overlay
 * that could not be rebuilt (an aggregate that lost a write race after it
 * was loaded, or a batch that holds nothing) passed it once merged.
 *
 * The safe behaviour: the entry's changes are kept, owed and retried with
 * backoff like any rejected write, so that nothing is committed that is not
 * durable; the partitions' commits stop behind it until an operator acts
 * (docs/OPERATIONS.md, "Documents past the store's size limit"). Nothing is
 * silent: aggregator_store_too_large_total counts every refusal, and the
 * first per aggregate is logged at error with its _id, the document's size
 * and the limit.
 *
 * Threads: part of the batch, owned by the batch's thread. */
#ifndef BATCH_TOO_LARGE_H
#define BATCH_TOO_LARGE_H

#include <stddef.h>
#include <stdint.h>

/* The aggregates refused so far, remembered so that each is logged once;
 * past BATCH_TOO_LARGE_IDS_MAX of them every refusal is logged. {0} is
 * empty. */
#define BATCH_TOO_LARGE_IDS_MAX 1024
typedef struct batch_too_large {
  char **ids;
  size_t n;
} batch_too_large_t;

void batch_too_large_free(batch_too_large_t *t);

/* The store refused the document of aggregate id, bytes long, past limit.
 * Counts it, and logs it the first time for id. */
void batch_too_large_refused(batch_too_large_t *t, const char *id, size_t bytes, size_t limit);

#endif
