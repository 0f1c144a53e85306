/* The MongoDB sink: batched loads and conditional bulk writes of aggregate
 * documents (docs/DOCUMENT.md and docs/GUARANTEES.md).
 *
 * Every write is conditional on the revision the worker last saw: an item
 * with expected rev r > 0 is a replace_one with filter {_id, rev: r} and
 * upsert: true, whose replacement carries rev r+1; an item the store does
 * not hold yet (r = 0) is an insert of rev 1. When another writer got there
 * first, the filter matches nothing and the upsert's insert, or the insert,
 * hits the existing _id: a duplicate-key error (11000) for that item,
 * reported as SINK_ITEM_CONFLICT. The caller then reloads, re-merges (the
 * merge makes that safe) and writes again. So no write ever goes back in
 * time.
 *
 * Why an insert for r = 0 rather than the same upsert: the outcome is the
 * same on every server, but an upsert whose filter matches nothing costs a
 * query that some servers cannot answer from the _id index
 * (store_profile.c; the figures are in docs/BENCHMARKS.md), and MongoDB
 * does less work for an insert too.
 *
 * Results and item outcomes are the sink's (sink.h).
 *
 * A store_t wraps one mongoc client and is not thread-safe: one thread owns it. */
#ifndef STORE_H
#define STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"
#include "sink.h"

typedef struct store store_t;

/* Connects lazily (mongoc): store_new validates the URI and options only.
 * write_concern is "majority" or a positive integer (0 is refused: an
 * unacknowledged write can report neither success nor conflict). Returns NULL with
 * err filled on a bad URI or option. Caller owns; store_destroy(NULL) is safe. */
store_t *store_new(const char *uri, const char *database, const char *collection, const char *write_concern,
                   sink_error_t *err);
void store_destroy(store_t *store);

/* The shard key every later write's and find's filter carries besides _id
 * (store.shard_key, store_shard.h): a comma list of tenant, assignment and
 * _id, without spaces; "" or NULL for none, the default. False, with err
 * filled and the store unchanged, for any other field. */
bool store_set_shard_key(store_t *store, const char *fields, sink_error_t *err);

/* store_new and store_set_shard_key with the store.* keys of cfg. */
struct config;
store_t *store_open(const struct config *cfg, sink_error_t *err);

/* A round trip to the server (the `ping` command). */
sink_status_t store_ping(store_t *store, sink_error_t *err);
/* Why the last store_ping failed, when waiting will not heal it
 * ("credentials refused", "the server's certificate does not verify ...",
 * store_error.h's store_error_cause; err->message starts with it too), or
 * NULL. */
const char *store_ping_cause(const store_t *store);

/* Loads the documents whose _id is in keys. On MongoDB that is one find
 * with $in (more than 10,000 keys are split); on a server that answers a
 * $in by reading the whole collection, one {_id: key} find per key (the
 * server's profile, store_profile.h, which the first load asks for). All
 * or nothing: on failure no callback has been made. Keys not
 * found get no callback (the caller treats them as rev 0). A stored document
 * that does not decode is an error: SINK_FATAL with its _id in err (it must
 * not be overwritten blindly). */
sink_status_t store_load(store_t *store, const char *const *keys, size_t nkeys, sink_found_cb found, void *ctx,
                          sink_error_t *err);

/* As store_load, and hands over the document's `counts` as stored too
 * (store_load's decoding recomputes them from the slots; `verify` checks
 * the stored ones against those). A stored document that does not decode
 * is no error here: it goes to `unreadable` with its _id and the decoder's
 * reason, and the load goes on (an audit reports it and reads the rest). */
typedef void (*store_found_counts_cb)(void *ctx, model_aggregate_t *agg, int64_t rev, const model_counts_t *stored);
typedef void (*store_unreadable_cb)(void *ctx, const char *key, const char *reason);
sink_status_t store_load_counts(store_t *store, const char *const *keys, size_t nkeys, store_found_counts_cb found,
                                 store_unreadable_cb unreadable, void *ctx, sink_error_t *err);

/* A document whose write statement would pass STORE_MAX_DOCUMENT_BYTES (store_bulk.h) is
 * refused before anything is sent (sink.h). Sent anyway, such a statement
 * fails the whole bulk on every server, each in its own way, so the limit
 * is checked here, the same for all. */

/* Unordered bulk writes of all items with the configured write concern
 * (new items as inserts, sent first; whole items as replace_one with upsert,
 * partial ones as update_one without upsert; keys must be distinct: a
 * duplicate would conflict with itself);
 * updated_at_ms goes into every document's updatedAt. On SINK_OK every item
 * has a result; otherwise items are left SINK_ITEM_RETRY and err says why. */
sink_status_t store_write(store_t *store, sink_write_item_t *items, size_t nitems, int64_t updated_at_ms,
                           sink_error_t *err);

/* The store as the writer's sink; store is borrowed and must outlive its use. */
sink_t store_sink(store_t *store);

#endif
