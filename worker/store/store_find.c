/* Finding stored documents by _id (store_find.h). */
#include "store_find.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "oom.h"
#include "store_error.h"

static store_found_doc_t *found_push(store_found_list_t *l) {
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 64;
    l->v = oom_realloc(l->v, l->cap * sizeof *l->v);
  }
  store_found_doc_t *d = &l->v[l->n++];
  memset(d, 0, sizeof *d);
  return d;
}

void store_found_list_free(store_found_list_t *l) {
  for (size_t i = 0; i < l->n; i++) {
    model_aggregate_destroy(l->v[i].agg);
    free(l->v[i].key);
    free(l->v[i].unreadable);
  }
  free(l->v);
  memset(l, 0, sizeof *l);
}

/* Decodes one stored document; on failure fills id with its _id (or a
 * stand-in when it has no string _id) and reason with why it does not
 * decode, because an operator has to look at that document (overwriting it
 * blindly could lose data another writer put there). */
static model_aggregate_t *decode_stored(const bson_t *doc, int64_t *rev, char (*id)[160], char (*reason)[320]) {
  snprintf(*id, sizeof *id, "(no string _id)");
  bson_iter_t it;
  const char *key = NULL;
  uint32_t key_len = 0;
  if (bson_iter_init_find(&it, doc, "_id") && BSON_ITER_HOLDS_UTF8(&it)) {
    key = bson_iter_utf8(&it, &key_len);
    snprintf(*id, sizeof *id, "%.*s", (int)(key_len < 150 ? key_len : 150), key);
  }
  model_error_t merr = {0};
  model_aggregate_t *agg = model_codec_from_bson(doc, rev, &merr);
  if (!agg) {
    snprintf(*reason, sizeof *reason, "%s", merr.message);
    return NULL;
  }
  size_t len;
  const char *k = model_aggregate_key(agg, &len);
  if (!key || len != key_len || memcmp(k, key, len) != 0) {
    snprintf(*reason, sizeof *reason, "_id: does not match its tenant/assignment \"%s\"", k);
    model_aggregate_destroy(agg);
    return NULL;
  }
  return agg;
}

/* The filter of a find for keys[0..n): {_id: key} for one key,
 * {_id: {$in: keys}} for more, and the shard key's fields. */
static void id_filter(store_shard_t shard, const char *const *keys, size_t n, bson_t *filter) {
  store_shard_append_many(shard, keys, n, filter);
  if (n == 1) {
    BSON_APPEND_UTF8(filter, "_id", keys[0]);
    return;
  }
  bson_t id, in;
  BSON_APPEND_DOCUMENT_BEGIN(filter, "_id", &id);
  BSON_APPEND_ARRAY_BEGIN(&id, "$in", &in);
  for (size_t i = 0; i < n; i++) {
    const char *k;
    char buf[16];
    bson_uint32_to_string((uint32_t)i, &k, buf, sizeof buf);
    bson_append_utf8(&in, k, -1, keys[i], -1);
  }
  bson_append_array_end(&id, &in);
  bson_append_document_end(filter, &id);
}

/* Decodes the cursor's documents into out. A document that does not
 * decode is, with read_on, an entry with its _id and the reason; without,
 * the end of the load (SINK_FATAL, both in err). */
static sink_status_t collect(mongoc_cursor_t *cursor, bool read_on, store_found_list_t *out, sink_error_t *err) {
  const bson_t *doc;
  while (mongoc_cursor_next(cursor, &doc)) {
    int64_t rev = 0;
    char id[160], reason[320];
    model_aggregate_t *agg = decode_stored(doc, &rev, &id, &reason);
    if (!agg && !read_on) {
      store_error_set(err, 0, MODEL_ERROR_BAD_DOCUMENT, "stored document _id \"%s\" does not decode: %s", id, reason);
      return SINK_FATAL;
    }
    store_found_doc_t *d = found_push(out);
    if (!agg) {
      d->key = oom_strdup(id);
      d->unreadable = oom_strdup(reason);
      continue;
    }
    d->agg = agg;
    d->rev = rev;
    model_codec_stored_counts(doc, &d->counts); /* decode_stored checked their shape */
    bson_iter_t ut; /* decode_stored checked it is a Date */
    d->updated_at_ms = bson_iter_init_find(&ut, doc, "updatedAt") ? bson_iter_date_time(&ut) : 0;
  }
  return SINK_OK;
}

/* One find for keys[0..n); decoded documents are appended to out. */
static sink_status_t find_chunk(mongoc_collection_t *collection, store_shard_t shard, const char *const *keys,
                                size_t n, bool read_on, store_found_list_t *out, sink_error_t *err) {
  bson_t filter = BSON_INITIALIZER;
  id_filter(shard, keys, n, &filter);
  bson_t opts = BSON_INITIALIZER;
  /* All documents in the first reply when they fit (the server caps a
   * batch at 16 MiB; the cursor fetches the rest). */
  BSON_APPEND_INT32(&opts, "batchSize", (int32_t)n);

  mongoc_cursor_t *cursor = mongoc_collection_find_with_opts(collection, &filter, &opts, NULL);
  sink_status_t st = collect(cursor, read_on, out, err);
  bson_error_t e;
  const bson_t *reply;
  if (st == SINK_OK && mongoc_cursor_error_document(cursor, &e, &reply)) {
    st = store_classify_error(&e, reply);
    store_error_set_bson(err, "load", &e);
  }
  mongoc_cursor_destroy(cursor);
  bson_destroy(&opts);
  bson_destroy(&filter);
  return st;
}

sink_status_t store_find(mongoc_collection_t *collection, store_shard_t shard, size_t keys_per_find,
                         const char *const *keys, size_t nkeys, bool read_on, store_found_list_t *out,
                         sink_error_t *err) {
  sink_status_t st = SINK_OK;
  for (size_t off = 0; off < nkeys && st == SINK_OK; off += keys_per_find) {
    size_t n = nkeys - off < keys_per_find ? nkeys - off : keys_per_find;
    st = find_chunk(collection, shard, keys + off, n, read_on, out, err);
  }
  return st;
}
