/* The store's error classification and bulk-reply interpretation, exposed so
 * that unit tests can drive them with hand-made replies (write-concern
 * errors, elections, partial replies) that a local test server cannot
 * produce. Only the store's files and its tests include this header. */
#ifndef STORE_INTERNAL_H
#define STORE_INTERNAL_H

#include <bson/bson.h>
#include <mongoc/mongoc.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

/* True for server error codes after which the same request may succeed
 * unchanged (elections, shutdowns, network trouble between servers,
 * write-concern timeouts). */
bool store_server_code_is_transient(int32_t code);

/* Classifies a failed operation. error comes from mongoc with error API
 * version 2 (server errors in MONGOC_ERROR_SERVER); reply is the server's
 * reply or NULL. Returns SINK_RETRY or SINK_FATAL (never SINK_OK). */
sink_status_t store_classify_error(const bson_error_t *error, const bson_t *reply);

/* Interprets the outcome of mongoc_bulk_operation_execute for a bulk of nops
 * operations as store_write sends them (an insert for an item at rev 0, else
 * a replace with upsert or a partial update), operation i being
 * items[map[i]]: executed
 * is its return value != 0, error and reply what it filled.
 *
 * On SINK_OK every mapped item has a result. Otherwise the mapped items are
 * reset to SINK_ITEM_RETRY and err says why; *incomplete is set when the
 * only problem is that the reply does not account for every operation (a
 * server that stops at the first write error whatever `ordered` says), so
 * the caller can find the items' fates another way. */
sink_status_t store_bulk_outcome(bool executed, const bson_error_t *error, const bson_t *reply,
                                  sink_write_item_t *items, const size_t *map, size_t nops, bool *incomplete,
                                  sink_error_t *err);

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
