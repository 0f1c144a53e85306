/* What the batch does with an aggregate whose document the store refuses as
 * too large (past SINK_MAX_DOCUMENT_BYTES, sink.h): it sets the entry and
 * its unwritten changes aside, counts the refusal and logs it.
 *
 * Why set aside rather than kept for retry: a retry cannot succeed (the
 * document only grows), so holding the entry would refuse it on every flush
 * forever, and its pending seq would keep every later offset of its
 * partitions uncommitted: the partition wedges, lag grows without bound, and
 * a restart replays into the same wall. Why not dead-letter the commands
 * instead: the batch holds their merged result, not the commands, and which
 * of them "pushed it over" is not defined (the merge is order-free). So the
 * entry leaves memory with its unwritten changes (the store keeps its last
 * document, which is under the limit; later commands for the aggregate are
 * merged into that and written if the result fits), its offsets move on,
 * and nothing is silent: aggregator_store_too_large_total and write errors
 * count every refusal, and the first one per aggregate is logged at error
 * with its _id, the document's size and the time of its oldest change not in
 * the store. The commands themselves stay in the source topic: `aggregator
 * replay` from that time (its merge is idempotent) restores them once the
 * document fits (docs/OPERATIONS.md, "Documents past the store's limit").
 *
 * Threads: part of the batch, owned by the batch's thread. */
#ifndef BATCH_TOO_LARGE_H
#define BATCH_TOO_LARGE_H

#include <stddef.h>
#include <stdint.h>

/* The aggregates refused so far, remembered so that each is logged once;
 * past BATCH_TOO_LARGE_IDS_MAX of them (never expected: each is a document
 * at the store's limit) every refusal is logged. {0} is empty. */
#define BATCH_TOO_LARGE_IDS_MAX 1024
typedef struct batch_too_large {
  char **ids;
  size_t n;
} batch_too_large_t;

void batch_too_large_free(batch_too_large_t *t);

/* The store refused the document of aggregate id, bytes long; its oldest
 * change not in the store entered the system at oldest_ms (wall ms, 0 if
 * unknown). Counts it, and logs it the first time for id. */
void batch_too_large_refused(batch_too_large_t *t, const char *id, size_t bytes, int64_t oldest_ms);

#endif
