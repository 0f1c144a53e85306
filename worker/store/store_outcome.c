/* What a bulk write's reply says became of each item (store_bulk_outcome,
 * store_outcome.h). The reading holds for every supported
 * server; where a server's replies differ from MongoDB's, the rule below
 * says how both read the same (store_profile.c names the servers). */
#include <mongoc/mongoc.h>

#include "store_outcome.h"

#include "store_error.h"

/* The server's code for a duplicate _id: the conflict of an insert, or of
 * an upsert whose filter matched nothing (store.h). */
#define STORE_CODE_DUPLICATE_KEY 11000

static void reset_pending(sink_write_item_t *items, const size_t *map, size_t nops) {
  for (size_t i = 0; i < nops; i++) {
    items[map[i]].result = SINK_ITEM_RETRY;
    items[map[i]].error_code = 0;
  }
}

static int32_t reply_int32(const bson_t *reply, const char *key) {
  bson_iter_t it;
  if (reply && bson_iter_init_find(&it, reply, key) && BSON_ITER_HOLDS_NUMBER(&it))
    return (int32_t)bson_iter_as_int64(&it);
  return 0;
}

/* The index, code and errmsg of one error document (-1, 0 and "" for what
 * it does not hold). */
static void error_fields(const bson_iter_t *entry, int64_t *index, int32_t *code, const char **msg) {
  *index = -1;
  *code = 0;
  *msg = "";
  bson_iter_t doc;
  if (!BSON_ITER_HOLDS_DOCUMENT(entry) || !bson_iter_recurse(entry, &doc)) return;
  while (bson_iter_next(&doc)) {
    if (BSON_ITER_IS_KEY(&doc, "index") && BSON_ITER_HOLDS_NUMBER(&doc))
      *index = bson_iter_as_int64(&doc);
    else if (BSON_ITER_IS_KEY(&doc, "code") && BSON_ITER_HOLDS_NUMBER(&doc))
      *code = (int32_t)bson_iter_as_int64(&doc);
    else if (BSON_ITER_IS_KEY(&doc, "errmsg") && BSON_ITER_HOLDS_UTF8(&doc))
      *msg = bson_iter_utf8(&doc, NULL);
  }
}

/* The reply's array field (writeErrors, writeConcernErrors) in *arr, before
 * its first entry; false when the reply has none. */
static bool reply_array(const bson_t *reply, const char *field, bson_iter_t *arr) {
  bson_iter_t it;
  return reply && bson_iter_init_find(&it, reply, field) && BSON_ITER_HOLDS_ARRAY(&it) &&
         bson_iter_recurse(&it, arr);
}

/* Lost connection, no primary: whatever the reply says, later batches of
 * the bulk may or may not have been applied. */
static bool transport_failed(const bson_error_t *error, const bson_t *reply) {
  return error->domain == MONGOC_ERROR_STREAM || error->domain == MONGOC_ERROR_SERVER_SELECTION ||
         (reply && mongoc_error_has_label(reply, "RetryableWriteError"));
}

/* Applied but not confirmed with the write concern: acknowledging now could
 * commit offsets for writes that later roll back. Retrying is safe: the
 * items that did land come back as conflicts. SINK_OK when the reply has
 * no write-concern error. */
static sink_status_t check_write_concern(const bson_t *reply, sink_error_t *err) {
  bson_iter_t arr;
  if (!reply_array(reply, "writeConcernErrors", &arr) || !bson_iter_next(&arr) || !BSON_ITER_HOLDS_DOCUMENT(&arr))
    return SINK_OK;
  int64_t index;
  int32_t code;
  const char *msg;
  error_fields(&arr, &index, &code, &msg);
  bson_error_t wce = {.domain = MONGOC_ERROR_WRITE_CONCERN, .code = (uint32_t)code};
  store_error_set(err, MONGOC_ERROR_WRITE_CONCERN, (uint32_t)code, "bulk write: write concern error %d: %s", code,
                  msg);
  return store_classify_error(&wce, NULL);
}

/* Gives each item that a write error names its result (a duplicate _id is the
 * conflict), counting them in *nerrors. SINK_RETRY when an error is
 * transient, or names no pending operation of the bulk (*incomplete: the
 * reply cannot be matched to the items). */
static sink_status_t apply_write_errors(const bson_t *reply, sink_write_item_t *items, const size_t *map, size_t nops,
                                        size_t *nerrors, bool *incomplete, sink_error_t *err) {
  *nerrors = 0;
  bson_iter_t arr;
  if (!reply_array(reply, "writeErrors", &arr)) return SINK_OK;
  while (bson_iter_next(&arr)) {
    int64_t index;
    int32_t code;
    const char *msg;
    error_fields(&arr, &index, &code, &msg);
    if (index < 0 || (uint64_t)index >= nops || items[map[index]].result != SINK_ITEM_RETRY) {
      store_error_set(err, MONGOC_ERROR_SERVER, (uint32_t)code, "bulk write: write error for an unknown index %lld",
                      (long long)index);
      *incomplete = true;
      return SINK_RETRY;
    }
    if (store_server_code_is_transient(code)) {
      store_error_set(err, MONGOC_ERROR_SERVER, (uint32_t)code, "bulk write: item %lld: %d: %s", (long long)index,
                      code, msg);
      return SINK_RETRY;
    }
    sink_write_item_t *item = &items[map[index]];
    if (code == STORE_CODE_DUPLICATE_KEY) {
      item->result = SINK_ITEM_CONFLICT;
    } else if (code == STORE_CODE_TOO_LARGE) {
      item->result = SINK_ITEM_TOO_LARGE;
      item->error_code = (uint32_t)code;
    } else {
      item->result = SINK_ITEM_REJECTED;
      item->error_code = (uint32_t)code;
    }
    (*nerrors)++;
  }
  return SINK_OK;
}

/* How many of the bulk's inserts (items at rev 0) the reply says landed.
 * An insert either lands or fails with a write error (no supported server
 * stops an unordered insert command early, which test_store.c pins), so
 * nInserted should be the inserts without a write error. A server may
 * count the failed ones in nInserted too; that count, every insert, cannot
 * be MongoDB's when one of them failed, so it is read as "the others
 * landed". Any other count is taken as it is and leaves the bulk
 * incomplete. */
static int64_t inserts_acknowledged(const bson_t *reply, const sink_write_item_t *items, const size_t *map,
                                    size_t nops) {
  int64_t inserts = 0, failed = 0;
  for (size_t i = 0; i < nops; i++) {
    if (items[map[i]].rev != 0) continue;
    inserts++;
    if (items[map[i]].result != SINK_ITEM_RETRY) failed++;
  }
  int64_t n = reply_int32(reply, "nInserted");
  return failed > 0 && n == inserts ? inserts - failed : n;
}

static bool partial_pending(const sink_write_item_t *item) {
  return item->partial && item->rev > 0 && item->result == SINK_ITEM_RETRY;
}

/* Every insert landed or failed, every replace-with-upsert either matched
 * or upserted or failed. A partial update (no upsert) that matches nothing
 * is no error on any supported server: it is only missing from nMatched
 * (each answers n: 0, nModified: 0; test_store.c pins it), and that is its
 * conflict. The counts are per command, not per item, so the shortfall
 * names the conflicting items only when it equals the number of partial
 * items without a write error (all of them missed): with no write error
 * every other item is accounted for, on every server (a server that stops
 * a command early does so only at a write error). Any other shortfall
 * leaves some items' fate unknown: SINK_RETRY, *incomplete, and the caller
 * finds out item by item, where a single partial item's n = 0 is
 * unambiguous. */
static sink_status_t check_counts(const bson_t *reply, sink_write_item_t *items, const size_t *map, size_t nops,
                                  size_t nerrors, bool *incomplete, sink_error_t *err) {
  int64_t acknowledged = (int64_t)reply_int32(reply, "nMatched") + reply_int32(reply, "nUpserted") +
                         inserts_acknowledged(reply, items, map, nops) + (int64_t)nerrors;
  if (acknowledged < (int64_t)nops && nerrors == 0) {
    size_t candidates = 0;
    for (size_t i = 0; i < nops; i++)
      if (partial_pending(&items[map[i]])) candidates++;
    if ((int64_t)candidates == (int64_t)nops - acknowledged) {
      for (size_t i = 0; i < nops; i++)
        if (partial_pending(&items[map[i]])) items[map[i]].result = SINK_ITEM_CONFLICT;
      acknowledged = (int64_t)nops;
    }
  }
  if (acknowledged == (int64_t)nops) return SINK_OK;
  store_error_set(err, MONGOC_ERROR_SERVER, 0, "bulk write: the server acknowledged %lld of %zu writes",
                  (long long)acknowledged, nops);
  *incomplete = true;
  return SINK_RETRY;
}

/* The bulk's status; items get results on the way, reset by the caller
 * unless it is SINK_OK. */
static sink_status_t interpret(bool executed, const bson_error_t *error, const bson_t *reply,
                               sink_write_item_t *items, const size_t *map, size_t nops, bool *incomplete,
                               sink_error_t *err) {
  if (!executed && transport_failed(error, reply)) {
    store_error_set_bson(err, "bulk write", error);
    return SINK_RETRY;
  }
  sink_status_t st = check_write_concern(reply, err);
  if (st != SINK_OK) return st;
  size_t nerrors;
  st = apply_write_errors(reply, items, map, nops, &nerrors, incomplete, err);
  if (st != SINK_OK) return st;
  /* A command-level failure (no per-item errors): unauthorized, bad
   * namespace, an election, ... */
  if (!executed && nerrors == 0) {
    store_error_set_bson(err, "bulk write", error);
    return store_classify_error(error, reply);
  }
  return check_counts(reply, items, map, nops, nerrors, incomplete, err);
}

sink_status_t store_bulk_outcome(bool executed, const bson_error_t *error, const bson_t *reply,
                                  sink_write_item_t *items, const size_t *map, size_t nops, bool *incomplete,
                                  sink_error_t *err) {
  *incomplete = false;
  sink_status_t st = interpret(executed, error, reply, items, map, nops, incomplete, err);
  if (st != SINK_OK) {
    reset_pending(items, map, nops);
    return st;
  }
  for (size_t i = 0; i < nops; i++)
    if (items[map[i]].result == SINK_ITEM_RETRY) items[map[i]].result = SINK_ITEM_OK;
  return SINK_OK;
}
