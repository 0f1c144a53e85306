/* Store error handling without a server: which failures are retried, which
 * are fatal, and how a bulk-write reply turns into per-item results
 * (docs/DOCUMENT.md and docs/GUARANTEES.md). Replies are written by hand in the shapes
 * MongoDB and libmongoc produce, including the ones a local test server
 * cannot (elections, write-concern errors). */
#include <check.h>
#include <mongoc/mongoc.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "model_fixtures.h"
#include "base/redact.h"
#include "store/store.h"
#include "store/store_error.h"
#include "store/store_internal.h"
#include "store/store_outcome.h"
#include "store/store_resolve.h"
#include "../tools/cmdgen.h"

static bson_error_t mkerr(uint32_t domain, uint32_t code) {
  bson_error_t e;
  memset(&e, 0, sizeof e);
  e.domain = domain;
  e.code = code;
  snprintf(e.message, sizeof e.message, "error %u/%u", domain, code);
  return e;
}

static bson_t *json(const char *s) {
  bson_error_t e;
  bson_t *b = bson_new_from_json((const uint8_t *)s, -1, &e);
  ck_assert_msg(b != NULL, "bad test JSON: %s", e.message);
  return b;
}

START_TEST(transient_codes) {
  const int32_t transient[] = {6, 7, 64, 89, 91, 134, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436};
  for (size_t i = 0; i < sizeof transient / sizeof transient[0]; i++)
    ck_assert_msg(store_server_code_is_transient(transient[i]), "code %d", transient[i]);
  const int32_t permanent[] = {0, 2, 11, 13, 18, 26, 73, 100, 121, 11000, 10334, 50};
  for (size_t i = 0; i < sizeof permanent / sizeof permanent[0]; i++)
    ck_assert_msg(!store_server_code_is_transient(permanent[i]), "code %d", permanent[i]);
}
END_TEST

START_TEST(classify_client_side) {
  bson_error_t e = mkerr(MONGOC_ERROR_STREAM, MONGOC_ERROR_STREAM_SOCKET);
  ck_assert_int_eq(store_classify_error(&e, NULL), SINK_RETRY);
  e = mkerr(MONGOC_ERROR_STREAM, MONGOC_ERROR_STREAM_CONNECT);
  ck_assert_int_eq(store_classify_error(&e, NULL), SINK_RETRY);
  e = mkerr(MONGOC_ERROR_SERVER_SELECTION, MONGOC_ERROR_SERVER_SELECTION_FAILURE);
  ck_assert_int_eq(store_classify_error(&e, NULL), SINK_RETRY);
  /* Authentication failure: wrong credentials do not fix themselves. */
  e = mkerr(MONGOC_ERROR_CLIENT, MONGOC_ERROR_CLIENT_AUTHENTICATE);
  ck_assert_int_eq(store_classify_error(&e, NULL), SINK_FATAL);
  e = mkerr(MONGOC_ERROR_COMMAND, MONGOC_ERROR_COMMAND_INVALID_ARG);
  ck_assert_int_eq(store_classify_error(&e, NULL), SINK_FATAL);
  e = mkerr(MONGOC_ERROR_PROTOCOL, MONGOC_ERROR_PROTOCOL_BAD_WIRE_VERSION);
  ck_assert_int_eq(store_classify_error(&e, NULL), SINK_FATAL);
}
END_TEST

START_TEST(classify_server) {
  bson_error_t e = mkerr(MONGOC_ERROR_SERVER, 10107); /* NotWritablePrimary: election */
  ck_assert_int_eq(store_classify_error(&e, NULL), SINK_RETRY);
  e = mkerr(MONGOC_ERROR_SERVER, 91); /* ShutdownInProgress */
  ck_assert_int_eq(store_classify_error(&e, NULL), SINK_RETRY);
  e = mkerr(MONGOC_ERROR_SERVER, 13); /* Unauthorized */
  ck_assert_int_eq(store_classify_error(&e, NULL), SINK_FATAL);
  e = mkerr(MONGOC_ERROR_SERVER, 18); /* AuthenticationFailed */
  ck_assert_int_eq(store_classify_error(&e, NULL), SINK_FATAL);
  e = mkerr(MONGOC_ERROR_SERVER, 73); /* InvalidNamespace */
  ck_assert_int_eq(store_classify_error(&e, NULL), SINK_FATAL);
  /* A server that labels an error retryable is believed. */
  e = mkerr(MONGOC_ERROR_SERVER, 999999);
  bson_t *labelled = json("{\"ok\": 0, \"code\": 999999, \"errorLabels\": [\"RetryableWriteError\"]}");
  ck_assert_int_eq(store_classify_error(&e, labelled), SINK_RETRY);
  bson_t *plain = json("{\"ok\": 0, \"code\": 999999}");
  ck_assert_int_eq(store_classify_error(&e, plain), SINK_FATAL);
  bson_destroy(labelled);
  bson_destroy(plain);
}
END_TEST

START_TEST(classify_write_concern) {
  bson_error_t e = mkerr(MONGOC_ERROR_WRITE_CONCERN, 64); /* wtimeout */
  ck_assert_int_eq(store_classify_error(&e, NULL), SINK_RETRY);
  e = mkerr(MONGOC_ERROR_WRITE_CONCERN, 91);
  ck_assert_int_eq(store_classify_error(&e, NULL), SINK_RETRY);
  e = mkerr(MONGOC_ERROR_WRITE_CONCERN, 100); /* UnsatisfiableWriteConcern: w > members */
  ck_assert_int_eq(store_classify_error(&e, NULL), SINK_FATAL);
  e = mkerr(MONGOC_ERROR_WRITE_CONCERN, 79); /* UnknownReplWriteConcern */
  ck_assert_int_eq(store_classify_error(&e, NULL), SINK_FATAL);
}
END_TEST

/* --- bulk outcome ---------------------------------------------------------- */

#define NITEMS 6

typedef struct fixture {
  sink_write_item_t items[NITEMS];
  size_t map[NITEMS];
  sink_error_t err;
  bool incomplete;
} fixture_t;

static void fx_init(fixture_t *f, size_t nops) {
  memset(f, 0, sizeof *f);
  for (size_t i = 0; i < NITEMS; i++) f->items[i].rev = (int64_t)i + 1; /* stored: replaces, no inserts */
  for (size_t i = 0; i < nops; i++) f->map[i] = i;
  f->incomplete = true; /* must be cleared */
}

static sink_status_t outcome(fixture_t *f, bool executed, bson_error_t e, const char *reply_json, size_t nops) {
  bson_t *reply = json(reply_json);
  sink_status_t st = store_bulk_outcome(executed, &e, reply, f->items, f->map, nops, &f->incomplete, &f->err);
  bson_destroy(reply);
  return st;
}

static void assert_all_pending(const fixture_t *f) {
  for (size_t i = 0; i < NITEMS; i++) ck_assert_int_eq(f->items[i].result, SINK_ITEM_RETRY);
}

START_TEST(bulk_all_ok) {
  fixture_t f;
  fx_init(&f, 3);
  bson_error_t none = mkerr(0, 0);
  ck_assert_int_eq(outcome(&f, true, none,
                           "{\"nInserted\": 0, \"nMatched\": 1, \"nModified\": 1, \"nRemoved\": 0, \"nUpserted\": 2,"
                           " \"upserted\": [{\"index\": 0, \"_id\": \"t/a\"}, {\"index\": 2, \"_id\": \"t/c\"}],"
                           " \"writeErrors\": []}",
                           3),
                   SINK_OK);
  ck_assert(!f.incomplete);
  for (size_t i = 0; i < 3; i++) ck_assert_int_eq(f.items[i].result, SINK_ITEM_OK);
  for (size_t i = 3; i < NITEMS; i++) ck_assert_int_eq(f.items[i].result, SINK_ITEM_RETRY);
}
END_TEST

START_TEST(bulk_conflict_and_item_error) {
  /* What MongoDB answers for an unordered bulk where item 1's {_id, rev}
   * filter missed an existing _id, item 3 failed validation and item 4
   * passed the server's size limit: that one is the vocabulary's TOO_LARGE
   * (sink.h), the server's code kept for the log. */
  fixture_t f;
  fx_init(&f, 5);
  ck_assert_int_eq(outcome(&f, false, mkerr(MONGOC_ERROR_SERVER, 11000),
                           "{\"nInserted\": 0, \"nMatched\": 1, \"nModified\": 1, \"nRemoved\": 0, \"nUpserted\": 1,"
                           " \"writeErrors\": [{\"index\": 1, \"code\": 11000, \"errmsg\": \"E11000 duplicate key\"},"
                           "                   {\"index\": 3, \"code\": 121, \"errmsg\": \"Document failed validation\"},"
                           "                   {\"index\": 4, \"code\": 10334, \"errmsg\": \"object too large\"}]}",
                           5),
                   SINK_OK);
  ck_assert(!f.incomplete);
  ck_assert_int_eq(f.items[0].result, SINK_ITEM_OK);
  ck_assert_int_eq(f.items[1].result, SINK_ITEM_CONFLICT);
  ck_assert_int_eq(f.items[2].result, SINK_ITEM_OK);
  ck_assert_int_eq(f.items[3].result, SINK_ITEM_REJECTED);
  ck_assert_uint_eq(f.items[3].error_code, 121);
  ck_assert_int_eq(f.items[4].result, SINK_ITEM_TOO_LARGE);
  ck_assert_uint_eq(f.items[4].error_code, 10334);
  ck_assert_int_eq(f.items[5].result, SINK_ITEM_RETRY);
}
END_TEST

START_TEST(bulk_recorded_whole_bulk_replies) {
  /* Replies of servers whose unordered bulks follow MongoDB's (the store
   * trusts their per-item results: one whole bulk, no read-back).
   *
   * 1. mongo-java-server 1.46.0 (tests/integration/test_store.c runs the
   *    store against it), an unordered bulk of three conditional replaces:
   *    0 matches, 1 has a stale rev (its _id exists: 11000), 2 is absent and
   *    upserted. The failing statement keeps its own index, the others are
   *    counted, and `upserted` numbers by position in the batch. */
  fixture_t f;
  fx_init(&f, 3);
  ck_assert_int_eq(
      outcome(&f, false, mkerr(MONGOC_ERROR_SERVER, 11000),
              "{\"nInserted\": 0, \"nMatched\": 1, \"nModified\": 1, \"nRemoved\": 0, \"nUpserted\": 1,"
              " \"upserted\": [{\"index\": 2, \"_id\": \"t1/c\"}],"
              " \"writeErrors\": [{\"index\": 1, \"errmsg\": \"E11000 duplicate key error collection: "
              "test_store_1.aggregates index: _id_ dup key: { _id: \\\"t1/b\\\" }\", \"code\": 11000,"
              " \"codeName\": \"DuplicateKey\"}]}",
              3),
      SINK_OK);
  ck_assert(!f.incomplete);
  ck_assert_int_eq(f.items[0].result, SINK_ITEM_OK);
  ck_assert_int_eq(f.items[1].result, SINK_ITEM_CONFLICT);
  ck_assert_int_eq(f.items[2].result, SINK_ITEM_OK);

  /* 2. MongoDB, the same bulk with the conflict last, in the form its
   *    documentation gives (no MongoDB server runs here to record one), as
   *    libmongoc merges it: MongoDB adds keyPattern and keyValue to a
   *    duplicate-key write error, which mongo-java-server leaves out; the
   *    store reads only index and code, so both mean the same. (One more
   *    difference: mongo-java-server 1.46.0 counts a failed duplicate insert
   *    in nInserted, MongoDB does not; see bulk_inserts.) */
  fx_init(&f, 3);
  ck_assert_int_eq(
      outcome(&f, false, mkerr(MONGOC_ERROR_SERVER, 11000),
              "{\"nInserted\": 0, \"nMatched\": 1, \"nModified\": 1, \"nRemoved\": 0, \"nUpserted\": 1,"
              " \"upserted\": [{\"index\": 1, \"_id\": \"t1/c\"}],"
              " \"writeErrors\": [{\"index\": 2, \"code\": 11000, \"keyPattern\": {\"_id\": 1},"
              " \"keyValue\": {\"_id\": \"t1/b\"}, \"errmsg\": \"E11000 duplicate key error collection: "
              "school.assignment_aggregates index: _id_ dup key: { _id: \\\"t1/b\\\" }\"}]}",
              3),
      SINK_OK);
  ck_assert(!f.incomplete);
  ck_assert_int_eq(f.items[0].result, SINK_ITEM_OK);
  ck_assert_int_eq(f.items[1].result, SINK_ITEM_OK);
  ck_assert_int_eq(f.items[2].result, SINK_ITEM_CONFLICT);
}
END_TEST

START_TEST(bulk_inserts) {
  /* New documents (rev 0) go as inserts, sent before the replaces; an
   * insert's conflict is its duplicate _id. Items 0..2 inserts, 3 a replace;
   * insert 1 hits an existing document. */
  fixture_t f;
#define INSERT_FX()                                       \
  do {                                                    \
    fx_init(&f, 4);                                       \
    for (size_t i = 0; i < 3; i++) f.items[i].rev = 0;    \
  } while (0)
  const char *dup = " \"writeErrors\": [{\"index\": 1, \"code\": 11000, \"errmsg\": \"E11000 duplicate key\"}]}";
  char reply[512];
  /* MongoDB and FerretDB (recorded from FerretDB 1.24: n 2, the duplicate
   * at its own index; FerretDB goes on after it in an insert command, unlike
   * in an update command) count the inserts that landed; mongo-java-server
   * 1.46.0 counts every insert, the failed one too (n 3). Both mean the
   * same. */
  for (int mjs = 0; mjs <= 1; mjs++) {
    INSERT_FX();
    snprintf(reply, sizeof reply, "{\"nInserted\": %d, \"nMatched\": 1, \"nModified\": 1, \"nUpserted\": 0,%s",
             mjs ? 3 : 2, dup);
    ck_assert_int_eq(outcome(&f, false, mkerr(MONGOC_ERROR_SERVER, 11000), reply, 4), SINK_OK);
    ck_assert(!f.incomplete);
    ck_assert_int_eq(f.items[0].result, SINK_ITEM_OK);
    ck_assert_int_eq(f.items[1].result, SINK_ITEM_CONFLICT);
    ck_assert_int_eq(f.items[2].result, SINK_ITEM_OK);
    ck_assert_int_eq(f.items[3].result, SINK_ITEM_OK);
  }
  /* All landed: the count is the same on every server. */
  INSERT_FX();
  ck_assert_int_eq(outcome(&f, true, mkerr(0, 0), "{\"nInserted\": 3, \"nMatched\": 1, \"writeErrors\": []}", 4),
                   SINK_OK);
  for (size_t i = 0; i < 4; i++) ck_assert_int_eq(f.items[i].result, SINK_ITEM_OK);
  /* Fewer than that: which insert is missing the reply cannot say. */
  INSERT_FX();
  snprintf(reply, sizeof reply, "{\"nInserted\": 1, \"nMatched\": 1, \"nUpserted\": 0,%s", dup);
  ck_assert_int_eq(outcome(&f, false, mkerr(MONGOC_ERROR_SERVER, 11000), reply, 4), SINK_RETRY);
  ck_assert(f.incomplete);
  assert_all_pending(&f);
  INSERT_FX();
  ck_assert_int_eq(outcome(&f, true, mkerr(0, 0), "{\"nInserted\": 2, \"nMatched\": 1, \"writeErrors\": []}", 4),
                   SINK_RETRY);
  ck_assert(f.incomplete);
  assert_all_pending(&f);
#undef INSERT_FX
}
END_TEST

START_TEST(bulk_map_indirection) {
  /* Operation i is items[map[i]]: results land on the mapped items only. */
  fixture_t f;
  fx_init(&f, 0);
  f.map[0] = 4;
  f.map[1] = 0;
  f.map[2] = 2;
  ck_assert_int_eq(outcome(&f, false, mkerr(MONGOC_ERROR_SERVER, 11000),
                           "{\"nMatched\": 1, \"nUpserted\": 1,"
                           " \"writeErrors\": [{\"index\": 0, \"code\": 11000, \"errmsg\": \"dup\"}]}",
                           3),
                   SINK_OK);
  ck_assert_int_eq(f.items[4].result, SINK_ITEM_CONFLICT);
  ck_assert_int_eq(f.items[0].result, SINK_ITEM_OK);
  ck_assert_int_eq(f.items[2].result, SINK_ITEM_OK);
  ck_assert_int_eq(f.items[1].result, SINK_ITEM_RETRY);
  ck_assert_int_eq(f.items[3].result, SINK_ITEM_RETRY);
  ck_assert_int_eq(f.items[5].result, SINK_ITEM_RETRY);
}
END_TEST

START_TEST(bulk_transient_item_error_retries_batch) {
  fixture_t f;
  fx_init(&f, 3);
  ck_assert_int_eq(outcome(&f, false, mkerr(MONGOC_ERROR_SERVER, 11000),
                           "{\"nMatched\": 1, \"nUpserted\": 0,"
                           " \"writeErrors\": [{\"index\": 0, \"code\": 11000, \"errmsg\": \"dup\"},"
                           "                   {\"index\": 2, \"code\": 10107, \"errmsg\": \"not primary\"}]}",
                           3),
                   SINK_RETRY);
  ck_assert(!f.incomplete);
  ck_assert_uint_eq(f.err.code, 10107);
  assert_all_pending(&f);
}
END_TEST

START_TEST(bulk_write_concern_error_retries) {
  /* Every write applied on the primary, replication not confirmed in time:
   * nothing may be acknowledged. */
  fixture_t f;
  fx_init(&f, 2);
  ck_assert_int_eq(outcome(&f, false, mkerr(MONGOC_ERROR_WRITE_CONCERN, 64),
                           "{\"nMatched\": 1, \"nUpserted\": 1, \"writeErrors\": [],"
                           " \"writeConcernErrors\": [{\"code\": 64, \"errmsg\": \"waiting for replication timed out\"}]}",
                           2),
                   SINK_RETRY);
  ck_assert(!f.incomplete);
  ck_assert_uint_eq(f.err.domain, MONGOC_ERROR_WRITE_CONCERN);
  ck_assert_uint_eq(f.err.code, 64);
  ck_assert_ptr_nonnull(strstr(f.err.message, "waiting for replication"));
  assert_all_pending(&f);

  /* ... even when item errors were reported alongside. */
  fx_init(&f, 2);
  ck_assert_int_eq(outcome(&f, false, mkerr(MONGOC_ERROR_SERVER, 11000),
                           "{\"nMatched\": 1, \"nUpserted\": 0,"
                           " \"writeErrors\": [{\"index\": 1, \"code\": 11000, \"errmsg\": \"dup\"}],"
                           " \"writeConcernErrors\": [{\"code\": 64, \"errmsg\": \"timeout\"}]}",
                           2),
                   SINK_RETRY);
  assert_all_pending(&f);

  /* w larger than the replica set: an operator has to change it. */
  fx_init(&f, 1);
  ck_assert_int_eq(outcome(&f, false, mkerr(MONGOC_ERROR_WRITE_CONCERN, 100),
                           "{\"nMatched\": 1, \"nUpserted\": 0, \"writeErrors\": [],"
                           " \"writeConcernErrors\": [{\"code\": 100, \"errmsg\": \"Not enough data-bearing nodes\"}]}",
                           1),
                   SINK_FATAL);
  assert_all_pending(&f);
}
END_TEST

START_TEST(bulk_network_error_retries) {
  /* The connection broke after a first batch succeeded: the reply counts
   * only that batch, the rest is unknown. */
  fixture_t f;
  fx_init(&f, 4);
  ck_assert_int_eq(outcome(&f, false, mkerr(MONGOC_ERROR_STREAM, MONGOC_ERROR_STREAM_SOCKET),
                           "{\"nMatched\": 2, \"nUpserted\": 0, \"writeErrors\": []}", 4),
                   SINK_RETRY);
  ck_assert(!f.incomplete);
  ck_assert_uint_eq(f.err.domain, MONGOC_ERROR_STREAM);
  assert_all_pending(&f);

  /* A network error is retried even if write errors were collected first. */
  fx_init(&f, 2);
  ck_assert_int_eq(outcome(&f, false, mkerr(MONGOC_ERROR_STREAM, MONGOC_ERROR_STREAM_SOCKET),
                           "{\"nMatched\": 0, \"nUpserted\": 0,"
                           " \"writeErrors\": [{\"index\": 0, \"code\": 11000, \"errmsg\": \"dup\"}]}",
                           2),
                   SINK_RETRY);
  assert_all_pending(&f);

  fx_init(&f, 2);
  ck_assert_int_eq(outcome(&f, false, mkerr(MONGOC_ERROR_SERVER_SELECTION, MONGOC_ERROR_SERVER_SELECTION_FAILURE),
                           "{}", 2),
                   SINK_RETRY);
  assert_all_pending(&f);

  fx_init(&f, 2);
  ck_assert_int_eq(outcome(&f, false, mkerr(MONGOC_ERROR_SERVER, 999999),
                           "{\"nMatched\": 0, \"nUpserted\": 0, \"writeErrors\": [],"
                           " \"errorLabels\": [\"RetryableWriteError\"]}",
                           2),
                   SINK_RETRY);
  assert_all_pending(&f);
}
END_TEST

START_TEST(bulk_command_error) {
  fixture_t f;
  fx_init(&f, 2);
  ck_assert_int_eq(outcome(&f, false, mkerr(MONGOC_ERROR_SERVER, 13),
                           "{\"nMatched\": 0, \"nUpserted\": 0, \"writeErrors\": []}", 2),
                   SINK_FATAL);
  ck_assert_uint_eq(f.err.domain, MONGOC_ERROR_SERVER);
  ck_assert_uint_eq(f.err.code, 13);
  assert_all_pending(&f);

  fx_init(&f, 2);
  ck_assert_int_eq(outcome(&f, false, mkerr(MONGOC_ERROR_SERVER, 189), /* PrimarySteppedDown */
                           "{\"nMatched\": 0, \"nUpserted\": 0, \"writeErrors\": []}", 2),
                   SINK_RETRY);
  ck_assert(!f.incomplete);
  assert_all_pending(&f);
}
END_TEST

START_TEST(bulk_incomplete_reply) {
  /* FerretDB 1.24's answer to an unordered bulk of four whose second item
   * conflicts: it stops there, counts nothing and reports index 0. The
   * items' fates are unknown: retry, flagged incomplete. */
  fixture_t f;
  fx_init(&f, 4);
  ck_assert_int_eq(outcome(&f, false, mkerr(MONGOC_ERROR_SERVER, 11000),
                           "{\"nInserted\": 0, \"nMatched\": 0, \"nModified\": 0, \"nRemoved\": 0, \"nUpserted\": 0,"
                           " \"writeErrors\": [{\"index\": 0, \"code\": 11000, \"errmsg\": \"E11000 duplicate key\"}]}",
                           4),
                   SINK_RETRY);
  ck_assert(f.incomplete);
  assert_all_pending(&f);

  /* Counts short with no error at all. */
  fx_init(&f, 3);
  ck_assert_int_eq(outcome(&f, true, mkerr(0, 0), "{\"nMatched\": 1, \"nUpserted\": 1, \"writeErrors\": []}", 3),
                   SINK_RETRY);
  ck_assert(f.incomplete);
  assert_all_pending(&f);

  /* An index outside the bulk, or the same index twice. */
  fx_init(&f, 2);
  ck_assert_int_eq(outcome(&f, false, mkerr(MONGOC_ERROR_SERVER, 11000),
                           "{\"nMatched\": 1, \"nUpserted\": 0,"
                           " \"writeErrors\": [{\"index\": 2, \"code\": 11000, \"errmsg\": \"dup\"}]}",
                           2),
                   SINK_RETRY);
  ck_assert(f.incomplete);
  assert_all_pending(&f);

  fx_init(&f, 2);
  ck_assert_int_eq(outcome(&f, false, mkerr(MONGOC_ERROR_SERVER, 11000),
                           "{\"nMatched\": 0, \"nUpserted\": 0,"
                           " \"writeErrors\": [{\"index\": 1, \"code\": 11000, \"errmsg\": \"dup\"},"
                           "                   {\"index\": 1, \"code\": 11000, \"errmsg\": \"dup\"}]}",
                           2),
                   SINK_RETRY);
  ck_assert(f.incomplete);
  assert_all_pending(&f);

  /* A single item's reply is complete: {index 0, 11000} is its conflict. */
  fx_init(&f, 1);
  ck_assert_int_eq(outcome(&f, false, mkerr(MONGOC_ERROR_SERVER, 11000),
                           "{\"nMatched\": 0, \"nUpserted\": 0,"
                           " \"writeErrors\": [{\"index\": 0, \"code\": 11000, \"errmsg\": \"dup\"}]}",
                           1),
                   SINK_OK);
  ck_assert(!f.incomplete);
  ck_assert_int_eq(f.items[0].result, SINK_ITEM_CONFLICT);
}
END_TEST

/* --- read-back after an incomplete reply (FerretDB) ------------------------- */

/* Only this write's own document counts as written: another writer's
 * identical document at rev + 1 is not ours to count
 * (aggregator_store_writes_total{ok}, the flush stats), and MongoDB says
 * conflict for it. */
START_TEST(read_back_claims_only_own_write) {
  model_command_t c;
  fx_roster(&c, "t1", "a1", "s1", 1, "c1", true);
  model_aggregate_t *mine = model_aggregate_new("t1", 2, "a1", 2);
  model_aggregate_apply(mine, &c);
  model_aggregate_t *same = model_aggregate_new("t1", 2, "a1", 2);
  model_aggregate_apply(same, &c);
  model_command_t c2;
  fx_roster(&c2, "t1", "a1", "s2", 2, "c2", true);
  model_aggregate_t *other = model_aggregate_new("t1", 2, "a1", 2);
  model_aggregate_apply(other, &c2);
  sink_write_item_t item = {.agg = mine, .rev = 4};
  const int64_t now = 1700000000123;

  /* Ours: rev + 1, our updatedAt, our aggregate. */
  ck_assert_int_eq(store_read_back_result(&item, same, 5, now, now), SINK_ITEM_OK);
  /* The same aggregate at rev + 1, written by someone else (another updatedAt):
   * not ours, sent again (and the server says conflict). */
  ck_assert_int_eq(store_read_back_result(&item, same, 5, now - 7, now), SINK_ITEM_RETRY);
  /* Not landed: still at rev, or another aggregate, or moved further on. */
  ck_assert_int_eq(store_read_back_result(&item, same, 4, now - 7, now), SINK_ITEM_RETRY);
  ck_assert_int_eq(store_read_back_result(&item, other, 5, now, now), SINK_ITEM_RETRY);
  ck_assert_int_eq(store_read_back_result(&item, same, 6, now, now), SINK_ITEM_RETRY);
  /* A new document (rev 0 expected). */
  sink_write_item_t fresh = {.agg = mine, .rev = 0};
  ck_assert_int_eq(store_read_back_result(&fresh, same, 1, now, now), SINK_ITEM_OK);
  ck_assert_int_eq(store_read_back_result(&fresh, same, 1, now + 1, now), SINK_ITEM_RETRY);
  model_aggregate_destroy(mine);
  model_aggregate_destroy(same);
  model_aggregate_destroy(other);
}
END_TEST


/* --- replies drawn at random ------------------------------------------------- */

typedef enum { FATE_OK, FATE_CONFLICT, FATE_ERROR } fate_t;
typedef enum { SHAPE_MONGODB, SHAPE_MJS, SHAPE_FERRETDB } shape_t;

/* The reply a server of that shape gives to a bulk whose items end as
 * fate says: MongoDB counts every item and names each write error by its
 * index (a partial update that matches nothing is only missing from
 * nMatched); mongo-java-server counts failed inserts in nInserted too;
 * FerretDB stops at the first write error, counts nothing and names index
 * 0 (store_profile.c). */
static void reply_of(shape_t shape, const fixture_t *f, const fate_t *fate, size_t n, model_buf_t *out,
                     bool *executed) {
  int64_t inserted = 0, inserts = 0, matched = 0;
  model_buf_t errs = MODEL_BUF_INIT;
  size_t nerr = 0;
  for (size_t i = 0; i < n; i++) {
    const sink_write_item_t *it = &f->items[i];
    if (it->rev == 0) inserts++;
    if (fate[i] == FATE_OK) {
      if (it->rev == 0)
        inserted++;
      else
        matched++;
      continue;
    }
    if (fate[i] == FATE_CONFLICT && it->partial) continue; /* no error: only missing from nMatched */
    if (shape == SHAPE_FERRETDB && nerr) continue;        /* stopped at the first */
    int code = fate[i] == FATE_CONFLICT ? 11000 : 2;
    model_buf_printf(&errs, "%s{\"index\": %zu, \"code\": %d, \"errmsg\": \"e\"}", nerr ? ", " : "",
                     shape == SHAPE_FERRETDB ? (size_t)0 : i, code);
    nerr++;
  }
  if (shape == SHAPE_MJS && nerr) inserted = inserts;
  if (shape == SHAPE_FERRETDB && nerr) inserted = matched = 0;
  model_buf_printf(out, "{\"nInserted\": %lld, \"nMatched\": %lld, \"nModified\": %lld, \"nUpserted\": 0, "
                        "\"writeErrors\": [%s]}",
                   (long long)inserted, (long long)matched, (long long)matched, errs.len ? errs.data : "");
  *executed = nerr == 0;
  model_buf_destroy(&errs);
}

/* Whatever the fates and the server's shape, the outcome reader either
 * gives every item its true fate (SINK_OK) or says it cannot tell
 * (SINK_RETRY, incomplete, every item pending for the resolution): it
 * never calls an item written that was not, nor the reverse. On MongoDB's
 * replies it can always tell, but when some and not all partial updates
 * missed, or some missed beside a write error. */
START_TEST(bulk_replies_at_random_never_misread) {
  uint64_t rnd = 2024;
  int told = 0, untold = 0;
  for (int round = 0; round < 5000; round++) {
    fixture_t f;
    size_t n = 1 + cmdgen_splitmix(&rnd) % NITEMS;
    fx_init(&f, n);
    fate_t fate[NITEMS];
    size_t partials = 0, partial_misses = 0, write_errors = 0;
    for (size_t i = 0; i < n; i++) {
      unsigned kind = (unsigned)(cmdgen_splitmix(&rnd) % 3); /* an insert, a whole replace, a partial update */
      f.items[i].rev = kind == 0 ? 0 : (int64_t)i + 1;
      f.items[i].partial = kind == 2;
      unsigned r = (unsigned)(cmdgen_splitmix(&rnd) % 10);
      fate[i] = r < 6 ? FATE_OK : r < 9 ? FATE_CONFLICT : FATE_ERROR;
      partials += f.items[i].partial;
      partial_misses += f.items[i].partial && fate[i] == FATE_CONFLICT;
      write_errors += fate[i] == FATE_ERROR || (fate[i] == FATE_CONFLICT && !f.items[i].partial);
    }
    shape_t shape = (shape_t)(cmdgen_splitmix(&rnd) % 3);
    model_buf_t reply = MODEL_BUF_INIT;
    bool executed;
    reply_of(shape, &f, fate, n, &reply, &executed);
    bson_error_t e = executed ? mkerr(0, 0) : mkerr(MONGOC_ERROR_SERVER, 11000);
    sink_status_t st = outcome(&f, executed, e, reply.data, n);
    if (st == SINK_OK) {
      told++;
      ck_assert(!f.incomplete);
      for (size_t i = 0; i < n; i++) {
        sink_item_result_t want =
            fate[i] == FATE_OK ? SINK_ITEM_OK : fate[i] == FATE_CONFLICT ? SINK_ITEM_CONFLICT : SINK_ITEM_REJECTED;
        ck_assert_msg(f.items[i].result == want, "round %d, shape %d, item %zu: %d for fate %d; reply %s", round,
                      (int)shape, i, (int)f.items[i].result, (int)fate[i], reply.data);
      }
    } else {
      untold++;
      ck_assert_int_eq(st, SINK_RETRY);
      ck_assert_msg(f.incomplete, "round %d: a retry that is not for want of a full reply: %s", round, reply.data);
      assert_all_pending(&f);
      /* a shortfall beside a write error could be a server that stopped there */
      ck_assert_msg(shape != SHAPE_MONGODB || (partial_misses > 0 && (partial_misses < partials || write_errors > 0)),
                    "round %d: MongoDB's reply %s was not read", round, reply.data);
    }
    model_buf_destroy(&reply);
  }
  ck_assert_msg(told > 500 && untold > 500, "told %d, untold %d", told, untold);
}
END_TEST

/* A server whose every item's fate is drawn at random, behind the
 * resolution's two callbacks (store_resolve.h): landed in the bulk (the
 * read-back finds it), conflicting, refused, or never accounted for (a
 * single write's reply short too); and a store that fails now and then.
 * The resolution ends after one read and at most one write per item, and
 * every item ends with its fate or, when the call fails, pending: never
 * forgotten, never claimed. */
typedef enum { RFATE_LANDED, RFATE_CONFLICT, RFATE_REJECTED, RFATE_UNREPORTED } rfate_t;

typedef struct random_server {
  rfate_t fate[NITEMS];
  bool read_fails;
  int reads, writes;
} random_server_t;

static sink_status_t rs_read_back(void *ctx, sink_write_item_t *items, size_t n, sink_error_t *err) {
  random_server_t *s = ctx;
  s->reads++;
  for (size_t i = 0; i < n; i++) items[i].result = SINK_ITEM_RETRY;
  if (s->read_fails) {
    snprintf(err->message, sizeof err->message, "read failed");
    return SINK_RETRY;
  }
  for (size_t i = 0; i < n; i++)
    if (s->fate[i] == RFATE_LANDED) items[i].result = SINK_ITEM_OK;
  return SINK_OK;
}

static sink_status_t rs_write_one(void *ctx, sink_write_item_t *items, size_t i, sink_error_t *err) {
  random_server_t *s = ctx;
  s->writes++;
  ck_assert_msg(s->fate[i] != RFATE_LANDED, "item %zu landed and was sent again", i);
  switch (s->fate[i]) {
  case RFATE_CONFLICT:
    items[i].result = SINK_ITEM_CONFLICT;
    return SINK_OK;
  case RFATE_REJECTED:
    items[i].result = SINK_ITEM_REJECTED;
    items[i].error_code = 2;
    return SINK_OK;
  default:
    snprintf(err->message, sizeof err->message, "the reply did not account for the item");
    return SINK_RETRY;
  }
}

START_TEST(resolution_at_random_ends_with_every_item_placed) {
  uint64_t rnd = 77;
  int ok = 0, retried = 0;
  for (int round = 0; round < 5000; round++) {
    size_t n = 1 + cmdgen_splitmix(&rnd) % NITEMS;
    random_server_t s = {.read_fails = cmdgen_splitmix(&rnd) % 10 == 0};
    sink_write_item_t items[NITEMS];
    memset(items, 0, sizeof items);
    bool unreported = false;
    for (size_t i = 0; i < n; i++) {
      unsigned r = (unsigned)(cmdgen_splitmix(&rnd) % 20);
      s.fate[i] = r < 10 ? RFATE_LANDED : r < 16 ? RFATE_CONFLICT : r < 19 ? RFATE_REJECTED : RFATE_UNREPORTED;
      unreported |= s.fate[i] == RFATE_UNREPORTED;
      items[i].result = (sink_item_result_t)(cmdgen_splitmix(&rnd) % 5); /* whatever the bulk left there */
    }
    store_resolver_t r = {rs_read_back, rs_write_one, &s};
    sink_error_t err = {0};
    sink_status_t st = store_resolve(&r, items, n, &err);
    ck_assert_int_eq(s.reads, 1);
    ck_assert_int_le(s.writes, (int)n);
    if (st == SINK_OK) {
      ok++;
      ck_assert(!s.read_fails && !unreported);
      for (size_t i = 0; i < n; i++) {
        sink_item_result_t want = s.fate[i] == RFATE_LANDED     ? SINK_ITEM_OK
                                  : s.fate[i] == RFATE_CONFLICT ? SINK_ITEM_CONFLICT
                                                                : SINK_ITEM_REJECTED;
        ck_assert_int_eq(items[i].result, want);
      }
    } else {
      retried++;
      ck_assert_int_eq(st, SINK_RETRY);
      ck_assert(s.read_fails || unreported);
      for (size_t i = 0; i < n; i++) ck_assert_int_eq(items[i].result, SINK_ITEM_RETRY);
    }
  }
  ck_assert_msg(ok > 500 && retried > 500, "ok %d, retried %d", ok, retried);
}
END_TEST

/* --- configuration ------------------------------------------------------- */

START_TEST(bulk_partial_misses) {
  /* Items 1..3 are partial updates (rev 2..4), item 0 a new document (rev
   * 0: an insert), item 4 a whole replace. A partial update that matches nothing is
   * only missing from nMatched (the servers' replies are pinned in
   * tests/integration/test_store.c). */
  fixture_t f;
  bson_error_t none = mkerr(0, 0);
#define PARTIAL_FX()                                                                  \
  do {                                                                                \
    fx_init(&f, 5);                                                                   \
    f.items[0].rev = 0;                                                               \
    for (size_t i = 1; i <= 3; i++) f.items[i].partial = true;                        \
  } while (0)
  /* All three partial updates missed: the counts say which. */
  PARTIAL_FX();
  ck_assert_int_eq(outcome(&f, true, none,
                           "{\"nInserted\": 1, \"nMatched\": 1, \"nModified\": 1, \"nRemoved\": 0, \"nUpserted\": 0,"
                           " \"writeErrors\": []}",
                           5),
                   SINK_OK);
  ck_assert(!f.incomplete);
  ck_assert_int_eq(f.items[0].result, SINK_ITEM_OK);
  for (size_t i = 1; i <= 3; i++) ck_assert_int_eq(f.items[i].result, SINK_ITEM_CONFLICT);
  ck_assert_int_eq(f.items[4].result, SINK_ITEM_OK);

  /* None missed. */
  PARTIAL_FX();
  ck_assert_int_eq(outcome(&f, true, none,
                           "{\"nInserted\": 1, \"nMatched\": 4, \"nModified\": 4, \"nUpserted\": 0,"
                           " \"writeErrors\": []}",
                           5),
                   SINK_OK);
  for (size_t i = 0; i < 5; i++) ck_assert_int_eq(f.items[i].result, SINK_ITEM_OK);

  /* One of three missed: which one the counts cannot say. */
  PARTIAL_FX();
  ck_assert_int_eq(outcome(&f, true, none,
                           "{\"nInserted\": 1, \"nMatched\": 3, \"nModified\": 3, \"nUpserted\": 0,"
                           " \"writeErrors\": []}",
                           5),
                   SINK_RETRY);
  ck_assert(f.incomplete);
  assert_all_pending(&f);

  /* A write error with a shortfall: FerretDB may have stopped at the error. */
  PARTIAL_FX();
  ck_assert_int_eq(outcome(&f, true, none,
                           "{\"nMatched\": 0, \"nModified\": 0, \"nUpserted\": 0,"
                           " \"writeErrors\": [{\"index\": 0, \"code\": 11000, \"errmsg\": \"dup\"}]}",
                           5),
                   SINK_RETRY);
  ck_assert(f.incomplete);
  assert_all_pending(&f);
#undef PARTIAL_FX
}
END_TEST

START_TEST(new_validates_without_connecting) {
  sink_error_t err;
  /* Nothing listens on port 1: store_new must not care. */
  store_t *s = store_new("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=100", "db", "coll", "majority", &err);
  ck_assert_ptr_nonnull(s);
  store_destroy(s);
  store_destroy(NULL);

  ck_assert_ptr_null(store_new("mongodb://127.0.0.1:1/", "db", "coll", "0", &err));
  ck_assert_ptr_nonnull(strstr(err.message, "write_concern"));
  ck_assert_ptr_null(store_new("mongodb://127.0.0.1:1/", "db", "coll", "two", &err));
  ck_assert_ptr_null(store_new("mongodb://127.0.0.1:1/", "", "coll", "1", &err));
  ck_assert_ptr_null(store_new("mongodb://127.0.0.1:1/", "db", "", "1", &err));
  ck_assert_ptr_null(store_new("http://127.0.0.1:1/", "db", "coll", "1", &err));
  ck_assert_ptr_nonnull(strstr(err.message, "store.uri"));
  ck_assert_ptr_null(store_new(NULL, "db", "coll", "1", &err));
  /* err may be NULL. */
  ck_assert_ptr_null(store_new("http://127.0.0.1:1/", "db", "coll", "1", NULL));
}
END_TEST

START_TEST(new_never_reveals_password) {
  /* mongoc's parser quotes the password it rejects; the message must not. */
  const char *uris[] = {"mongodb://us:er:s3cr3tpw@host/", "mongodb://user:s3cr3tpw@/db",
                        "mongodb://user:s3cr3tpw@host/?tls=maybe", "mongodb://user:s3%cr3tpw@host/"};
  for (size_t i = 0; i < sizeof uris / sizeof uris[0]; i++) {
    sink_error_t err;
    ck_assert_ptr_null(store_new(uris[i], "db", "coll", "1", &err));
    ck_assert_msg(err.message[0] != '\0', "no message for %s", uris[i]);
    ck_assert_msg(strstr(err.message, "s3cr3tpw") == NULL && strstr(err.message, "cr3tpw") == NULL,
                  "password in \"%s\"", err.message);
  }
}
END_TEST

/* Every store error is scrubbed of the process's configured secrets: replay
 * prints err.message as it is, and a driver or server message may echo one. */
START_TEST(errors_scrubbed_of_configured_secrets) {
  redact_set_add(redact_global(), "maybe-Qz7x");
  sink_error_t err;
  ck_assert_ptr_null(store_new("mongodb://h/?tls=maybe-Qz7x", "db", "coll", "1", &err));
  redact_set_clear(redact_global());
  ck_assert_msg(strstr(err.message, "Qz7x") == NULL && strstr(err.message, "***") != NULL, "%s", err.message);
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("store_errors");
  TCase *tc = tcase_create("classify");
  tcase_add_test(tc, transient_codes);
  tcase_add_test(tc, classify_client_side);
  tcase_add_test(tc, classify_server);
  tcase_add_test(tc, classify_write_concern);
  suite_add_tcase(s, tc);
  tc = tcase_create("bulk");
  tcase_add_test(tc, bulk_all_ok);
  tcase_add_test(tc, bulk_partial_misses);
  tcase_add_test(tc, bulk_conflict_and_item_error);
  tcase_add_test(tc, bulk_recorded_whole_bulk_replies);
  tcase_add_test(tc, bulk_inserts);
  tcase_add_test(tc, bulk_map_indirection);
  tcase_add_test(tc, bulk_transient_item_error_retries_batch);
  tcase_add_test(tc, bulk_write_concern_error_retries);
  tcase_add_test(tc, bulk_network_error_retries);
  tcase_add_test(tc, bulk_command_error);
  tcase_add_test(tc, bulk_incomplete_reply);
  tcase_add_test(tc, read_back_claims_only_own_write);
  tcase_add_test(tc, bulk_replies_at_random_never_misread);
  tcase_add_test(tc, resolution_at_random_ends_with_every_item_placed);
  suite_add_tcase(s, tc);
  tc = tcase_create("config");
  tcase_add_test(tc, new_validates_without_connecting);
  tcase_add_test(tc, new_never_reveals_password);
  tcase_add_test(tc, errors_scrubbed_of_configured_secrets);
  suite_add_tcase(s, tc);
  return s;
}
