/* The statements of a bulk write: what store_write sends for each item,
 * and the size limit it holds them to (store.h). */
#include "store_bulk.h"

#include "codec.h"
#include "store_error.h"
#include "base/log.h"

/* STORE_STATEMENT_OVERHEAD (store_bulk.h): the bytes an update statement
 * {q: {_id, rev}, u: <document>, upsert, multi} adds to its document,
 * besides the _id: the filter's framing and fields (28) and the
 * statement's (28), rounded up. A server may drop the
 * connection when a statement passes 16 MiB (store_profile.c), which would
 * fail the whole bulk with a stream error, retried for ever. MongoDB takes
 * larger statements; holding the whole statement to the limit costs it at
 * most the margin and the _id's length of document. An insert (a new
 * document) is held to the same bound, though its statement is smaller: a
 * document that could be inserted can always be replaced. The merge holds
 * every command to the same bound, so a refusal here is a bug, the last
 * line of defence (batch_too_large.h). */
size_t sink_document_limit(const model_aggregate_t *agg) {
  size_t key_len;
  model_aggregate_key(agg, &key_len);
  return STORE_MAX_DOCUMENT_BYTES - STORE_STATEMENT_OVERHEAD - key_len;
}

/* The server's code for an item the driver refuses before sending it, so
 * that error_code always speaks the server's language. */
#define STORE_CODE_BAD_VALUE 2

/* The driver's own check of each document (keys without '.', '$' or
 * nothing; strings in UTF-8) is off: every key the codec writes is a field
 * name of docs/DOCUMENT.md or an id (letters, digits, '-' and '_'), and
 * every string was checked as UTF-8 when its command was decoded
 * (models/json/json_scan.c) or its stored document read (models/codec_bson.c).
 * Checking again would walk every byte of every document written. */
static void no_validate(bson_t *opts) { BSON_APPEND_BOOL(opts, "validate", false); }

/* Records the document's size in item; false, with the item refused as too
 * large (SINK_ITEM_TOO_LARGE), when it could not be encoded or its
 * statement would pass the limit (store.h). Not logged here: this runs on
 * every attempt, and the caller (batch.c) logs once per aggregate and
 * decides what becomes of its changes. */
static bool fits(sink_write_item_t *item, bool encoded, size_t doc_len) {
  item->bytes = doc_len;
  if (encoded && doc_len <= sink_document_limit(item->agg)) return true;
  item->result = SINK_ITEM_TOO_LARGE;
  item->error_code = STORE_CODE_TOO_LARGE;
  return false;
}

/* store_bulk_add for a partial item: an update of the changed fields. */
static bool bulk_add_partial(mongoc_bulk_operation_t *bulk, sink_write_item_t *item, int64_t updated_at_ms,
                             store_shard_t shard) {
  size_t key_len;
  const char *key = model_aggregate_key(item->agg, &key_len);
  /* The document after the update is the whole one, so the size limit is
   * its: refused as a replacement would be. Encoding it costs CPU only and
   * is done only near the limit: the BSON of an aggregate is a few times its
   * content (each value's field name and type included), well under 16x. */
  if (model_aggregate_memory(item->agg) > STORE_MAX_DOCUMENT_BYTES / 16) {
    bson_t whole = BSON_INITIALIZER;
    bool encoded = model_codec_to_bson(item->agg, item->rev + 1, updated_at_ms, &whole);
    size_t len = whole.len;
    bson_destroy(&whole);
    if (!fits(item, encoded, len)) return false;
  }
  bson_t update = BSON_INITIALIZER, set;
  bool ok = BSON_APPEND_DOCUMENT_BEGIN(&update, "$set", &set);
  ok = ok && model_codec_to_bson_set(item->agg, item->students, item->nstudents, item->header, item->rev + 1,
                                     updated_at_ms, &set);
  ok = bson_append_document_end(&update, &set) && ok;
  bson_t filter = BSON_INITIALIZER;
  bson_append_utf8(&filter, "_id", 3, key, (int)key_len);
  BSON_APPEND_INT64(&filter, "rev", item->rev);
  store_shard_append(shard, key, key_len, &filter);
  bson_error_t e = {0};
  /* No upsert: a document that is not at rev (another writer's, or none)
   * must not get half a document; the miss is the conflict (see
   * store_bulk_outcome). */
  item->bytes = update.len;
  bson_t opts = BSON_INITIALIZER;
  no_validate(&opts);
  if (ok) ok = mongoc_bulk_operation_update_one_with_opts(bulk, &filter, &update, &opts, &e);
  bson_destroy(&opts);
  if (!ok) {
    log_error("partial update refused by the driver", "key", LOG_STR, key, "error", LOG_STR, e.message);
    item->result = SINK_ITEM_REJECTED;
    item->error_code = STORE_CODE_BAD_VALUE;
  }
  bson_destroy(&filter);
  bson_destroy(&update);
  return ok;
}

bool store_bulk_add(mongoc_bulk_operation_t *bulk, sink_write_item_t *item, int64_t updated_at_ms,
                    store_shard_t shard) {
  if (item->partial && item->rev > 0) return bulk_add_partial(bulk, item, updated_at_ms, shard);
  size_t key_len;
  const char *key = model_aggregate_key(item->agg, &key_len);
  bson_t doc = BSON_INITIALIZER;
  bool encoded = model_codec_to_bson(item->agg, item->rev + 1, updated_at_ms, &doc);
  if (!fits(item, encoded, doc.len)) {
    bson_destroy(&doc);
    return false;
  }
  bson_t filter = BSON_INITIALIZER;
  bson_t opts = BSON_INITIALIZER;
  bson_error_t e;
  bool ok;
  no_validate(&opts);
  /* An insert's document holds every shard field (codec_bson.c writes
   * tenant and assignment), which is how MongoDB routes it. */
  if (item->rev == 0) { /* not stored yet: an insert, whose conflict is the duplicate _id (store.h) */
    ok = mongoc_bulk_operation_insert_with_opts(bulk, &doc, &opts, &e);
  } else {
    bson_append_utf8(&filter, "_id", 3, key, (int)key_len);
    BSON_APPEND_INT64(&filter, "rev", item->rev);
    store_shard_append(shard, key, key_len, &filter);
    BSON_APPEND_BOOL(&opts, "upsert", true);
    ok = mongoc_bulk_operation_replace_one_with_opts(bulk, &filter, &doc, &opts, &e);
  }
  if (!ok) {
    log_error("aggregate refused by the driver", "key", LOG_STR, key, "error", LOG_STR, e.message);
    item->result = SINK_ITEM_REJECTED;
    item->error_code = STORE_CODE_BAD_VALUE;
  }
  bson_destroy(&opts);
  bson_destroy(&filter);
  bson_destroy(&doc);
  return ok;
}

