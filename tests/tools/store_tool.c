/* store_tool: read and reset the aggregate collection for tests and the demo.
 *
 *   store_tool dump URI DATABASE COLLECTION     every document in the JSON form, sorted by _id
 *   store_tool raw URI DATABASE COLLECTION      every document as stored (relaxed extended JSON, fields
 *       the decoder ignores included), sorted by _id
 *   store_tool drop URI DATABASE                drops the database
 *   store_tool delete URI DATABASE COLLECTION ID          deletes the document _id ID
 *   store_tool update URI DATABASE COLLECTION ID UPDATE   applies UPDATE (MongoDB extended JSON, e.g.
 *       {"$set": {"header.v": {"$numberLong": "9"}}}) to _id ID behind the worker's back (rev untouched)
 * delete and update exit 1 unless exactly one document matched (a test that
 * damages nothing must not pass). */
#include <mongoc/mongoc.h>
#include <stdio.h>
#include <string.h>

#include "codec.h"

static int fail(const char *what, const bson_error_t *e) {
  fprintf(stderr, "store_tool: %s: %s\n", what, e->message);
  return 1;
}

static int drop(mongoc_client_t *cl, const char *dbname) {
  int rc = 0;
  bson_error_t e;
  mongoc_database_t *db = mongoc_client_get_database(cl, dbname);
  if (!mongoc_database_drop(db, &e) && !strstr(e.message, "not found")) rc = fail("drop", &e);
  mongoc_database_destroy(db);
  return rc;
}

/* One document in the JSON form; false if it does not decode. */
static bool print_decoded(const bson_t *doc, model_buf_t *b) {
  int64_t rev = 0;
  model_error_t me;
  model_aggregate_t *agg = model_codec_from_bson(doc, &rev, &me);
  if (!agg) {
    fprintf(stderr, "store_tool: undecodable document: %s\n", me.message);
    return false;
  }
  bson_iter_t it;
  int64_t updated = 0;
  if (bson_iter_init_find(&it, doc, "updatedAt") && BSON_ITER_HOLDS_DATE_TIME(&it))
    updated = bson_iter_date_time(&it);
  model_buf_clear(b);
  model_codec_to_json(agg, rev, updated, b);
  fwrite(b->data, 1, b->len, stdout);
  model_aggregate_destroy(agg);
  return true;
}

/* dump (raw false) or raw: every document, sorted by _id. */
static int dump(mongoc_client_t *cl, const char *dbname, const char *collname, bool raw) {
  int rc = 0;
  bson_error_t e;
  mongoc_collection_t *coll = mongoc_client_get_collection(cl, dbname, collname);
  bson_t filter = BSON_INITIALIZER, opts = BSON_INITIALIZER, sort;
  BSON_APPEND_DOCUMENT_BEGIN(&opts, "sort", &sort);
  BSON_APPEND_INT32(&sort, "_id", 1);
  bson_append_document_end(&opts, &sort);
  mongoc_cursor_t *cur = mongoc_collection_find_with_opts(coll, &filter, &opts, NULL);
  const bson_t *doc;
  model_buf_t b = MODEL_BUF_INIT;
  while (mongoc_cursor_next(cur, &doc)) {
    if (raw) {
      char *json = bson_as_relaxed_extended_json(doc, NULL);
      printf("%s\n", json);
      bson_free(json);
    } else if (!print_decoded(doc, &b)) {
      rc = 1;
    }
  }
  if (mongoc_cursor_error(cur, &e)) rc = fail("find", &e);
  model_buf_destroy(&b);
  mongoc_cursor_destroy(cur);
  bson_destroy(&filter);
  bson_destroy(&opts);
  mongoc_collection_destroy(coll);
  return rc;
}

/* delete (update_json NULL) or update of the document _id id; 1 unless
 * exactly one matched. */
static int change_one(mongoc_client_t *cl, const char *what, const char *dbname, const char *collname,
                      const char *id, const char *update_json) {
  int rc = 0;
  bson_error_t e;
  mongoc_collection_t *coll = mongoc_client_get_collection(cl, dbname, collname);
  bson_t filter = BSON_INITIALIZER, reply;
  BSON_APPEND_UTF8(&filter, "_id", id);
  bool ok;
  const char *count = "deletedCount";
  if (!update_json) {
    ok = mongoc_collection_delete_one(coll, &filter, NULL, &reply, &e);
  } else {
    bson_t *update = bson_new_from_json((const uint8_t *)update_json, -1, &e);
    if (!update) {
      rc = fail("update: not JSON", &e);
      bson_init(&reply);
      ok = true;
    } else {
      ok = mongoc_collection_update_one(coll, &filter, update, NULL, &reply, &e);
      bson_destroy(update);
    }
    count = "matchedCount";
  }
  bson_iter_t it;
  if (!ok) rc = fail(what, &e);
  else if (rc == 0 && !(bson_iter_init_find(&it, &reply, count) && bson_iter_as_int64(&it) == 1)) {
    fprintf(stderr, "store_tool: %s: no document _id \"%s\"\n", what, id);
    rc = 1;
  }
  bson_destroy(&reply);
  bson_destroy(&filter);
  mongoc_collection_destroy(coll);
  return rc;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fputs("usage: store_tool dump|raw URI DB COLL | drop URI DB | delete URI DB COLL ID | update URI DB COLL ID UPDATE\n",
          stderr);
    return 2;
  }
  mongoc_init();
  mongoc_log_set_handler(NULL, NULL); /* FerretDB's missing endSessions is noise here */
  bson_error_t e;
  mongoc_uri_t *uri = mongoc_uri_new_with_error(argv[2], &e);
  if (!uri) return fail("uri", &e);
  mongoc_client_t *cl = mongoc_client_new_from_uri(uri);
  int rc;
  if (!strcmp(argv[1], "drop"))
    rc = drop(cl, argv[3]);
  else if ((!strcmp(argv[1], "dump") || !strcmp(argv[1], "raw")) && argc >= 5)
    rc = dump(cl, argv[3], argv[4], !strcmp(argv[1], "raw"));
  else if (!strcmp(argv[1], "delete") && argc == 6)
    rc = change_one(cl, argv[1], argv[3], argv[4], argv[5], NULL);
  else if (!strcmp(argv[1], "update") && argc == 7)
    rc = change_one(cl, argv[1], argv[3], argv[4], argv[5], argv[6]);
  else
    rc = 2;
  mongoc_client_destroy(cl);
  mongoc_uri_destroy(uri);
  mongoc_cleanup();
  return rc;
}
