/* What a bulk write's reply says became of each item, exposed so that unit
 * tests can drive it with hand-made replies (write-concern errors,
 * elections, partial replies) that a local test server cannot produce.
 * Only the store's own files and its tests include this header. */
#ifndef STORE_OUTCOME_H
#define STORE_OUTCOME_H

#include <bson/bson.h>
#include <stdbool.h>
#include <stddef.h>

#include "sink.h"

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

#endif
