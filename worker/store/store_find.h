/* The finds behind a load: documents by _id, decoded, gathered in a list
 * the caller hands over or frees. Only the store's own files include this
 * header. */
#ifndef STORE_FIND_H
#define STORE_FIND_H

#include <mongoc/mongoc.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"
#include "sink.h"
#include "base/store_shard.h"

typedef struct store_found_doc {
  model_aggregate_t *agg; /* owned by the list until taken (set to NULL); NULL when unreadable */
  char *key;              /* an unreadable document's _id (owned), else NULL */
  char *unreadable;       /* why it does not decode (owned), else NULL */
  int64_t rev;
  int64_t updated_at_ms; /* as stored: tells a read-back whose write this is */
  model_counts_t counts; /* as stored (for store_load_counts) */
} store_found_doc_t;

typedef struct store_found_list {
  store_found_doc_t *v;
  size_t n, cap;
} store_found_list_t; /* zero-initialised when empty */

/* Finds the documents whose _id is in keys[0..nkeys), keys_per_find keys
 * per find ({_id: key} for one key, {_id: {$in: keys}} for more, with the
 * fields of shard beside _id: store_shard.h), and
 * appends them to out, which the caller frees with store_found_list_free
 * whatever the result. A stored document that does not decode is
 * SINK_FATAL with its _id in err, or with read_on (an audit, which reports
 * it and goes on) an entry with its _id and the reason; a failed find is
 * classified (store_error.h). */
sink_status_t store_find(mongoc_collection_t *collection, store_shard_t shard, size_t keys_per_find,
                         const char *const *keys, size_t nkeys, bool read_on, store_found_list_t *out,
                         sink_error_t *err);

/* Destroys the aggregates still in l and empties it. */
void store_found_list_free(store_found_list_t *l);

#endif
