/* What store.c exposes beyond store.h for its tests: the path a server's
 * replies took, the rule of a read-back, the keys per find, the client.
 * Only store.c and the store's tests include this header. */
#ifndef STORE_INTERNAL_H
#define STORE_INTERNAL_H

#include <mongoc/mongoc.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* How many store_write calls on store got a reply that did not account for
 * every item and resolved it item by item (tests: which path a server's
 * replies take). */
uint64_t store_incomplete_writes(const store_t *store);

/* What a read-back says about item after an incomplete bulk reply,
 * given the stored document (stored, stored_rev, its updatedAt) and the
 * updated_at_ms this store_write sent: SINK_ITEM_OK when the document is
 * this write's, else SINK_ITEM_RETRY (the caller sends it again, and a
 * document another writer moved on then comes back as a conflict). */
sink_item_result_t store_read_back_result(const sink_write_item_t *item, const model_aggregate_t *stored,
                                           int64_t stored_rev, int64_t stored_updated_at_ms, int64_t updated_at_ms);

/* How many keys store_load asks for per find on this store's server: the
 * load_keys_per_find of its profile (store_profile.h): 1, a {_id: key} find
 * per key, on a server that pushes no $in down to its index, else 10,000 in
 * one $in. Asks the server on first use (buildInfo); 0 with err filled if
 * that fails. */
size_t store_load_keys_per_find(store_t *store, sink_error_t *err);

/* The store's client, for tests that watch the commands it sends
 * (libmongoc's command monitoring); still owned by the store. */
mongoc_client_t *store_client(store_t *store);

#endif
