/* The statement store_write sends for one item. Only the store's own files
 * include this header. */
#ifndef STORE_BULK_H
#define STORE_BULK_H

#include <mongoc/mongoc.h>
#include <stdbool.h>
#include <stdint.h>

#include "sink.h"
#include "base/store_shard.h"

/* The size limit of every supported store's documents (MongoDB's
 * maxBsonObjectSize), and the bytes a write statement adds to its document
 * besides the _id (store_bulk.c says what they are): the document of an
 * aggregate may hold the rest (sink_document_limit, defined here), so that
 * the whole statement stays within the limit. */
#define STORE_MAX_DOCUMENT_BYTES (16 * 1024 * 1024)
#define STORE_STATEMENT_OVERHEAD 64

/* Appends item's write to bulk, its document's updatedAt updated_at_ms: an
 * insert for an item at rev 0, a replace with upsert and filter {_id, rev}
 * for a whole item, an update of the changed fields without upsert for a
 * partial one (sink.h); every filter carries the fields of shard too
 * (store_shard.h). Sets item->bytes. Returns true if the item is in
 * the bulk; otherwise the item is SINK_ITEM_TOO_LARGE when its statement
 * would pass STORE_MAX_DOCUMENT_BYTES (not logged: the caller logs once per
 * aggregate), SINK_ITEM_REJECTED with 2 (BadValue) when the driver refuses
 * it (logged). */
bool store_bulk_add(mongoc_bulk_operation_t *bulk, sink_write_item_t *item, int64_t updated_at_ms,
                    store_shard_t shard);

#endif
