/* The MongoDB sink against real servers (docs/DOCUMENT.md and docs/GUARANTEES.md):
 * conditional bulk upserts, revisions, conflicts, loads, corrupt documents
 * and an unreachable server.
 *
 * The whole suite runs twice, against the two servers of the local stack
 * (scripts/stack start), because the store takes a different path on each:
 *   - FerretDB (AGG_MONGO_URI, mongodb://127.0.0.1:27018): update commands
 *     of at most 16 statements, per-item results of a failed bulk not
 *     trusted (read back, then one by one), one find per key when loading;
 *   - mongo-java-server (AGG_MJS_URI, mongodb://127.0.0.1:27019), an
 *     independent implementation of the wire protocol whose bulk replies
 *     follow MongoDB's (the failing statement's real index, the other
 *     statements' counts): the path production takes on MongoDB, one whole
 *     unordered bulk with per-item results trusted, and one $in per load.
 * Where mongo-java-server and MongoDB differ, the test says so and MongoDB's
 * reply is tested from a recording in tests/unit/test_store_errors.c.
 *
 * Each run works in its own database, test_store_<pid>, dropped at the end. */
#include <check.h>
#include <mongoc/mongoc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "aggregate.h"
#include "codec.h"
#include "command.h"
#include "store/store.h"
#include "store/store_bulk.h"
#include "store/store_internal.h"
#include "store/store_outcome.h"

static const char *g_uri;
static const char *g_server;  /* "ferretdb" or "mongo-java-server" */
static bool g_ferretdb;       /* the server's buildInfo says FerretDB */
static char g_db[64];
static const char *const g_coll = "aggregates";
static mongoc_client_t *g_raw; /* direct access for checks and corrupt documents */
static store_t *g_store;

#define T0_MS 1788249600000LL /* 2026-09-01T00:00:00Z */

/* --- building aggregates --------------------------------------------------- */

static void apply(model_aggregate_t *agg, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void apply(model_aggregate_t *agg, const char *fmt, ...) {
  char json[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(json, sizeof json, fmt, ap);
  va_end(ap);
  model_command_t *cmd = malloc(sizeof *cmd);
  ck_assert_ptr_nonnull(cmd);
  model_reject_t rej;
  ck_assert_msg(model_command_decode(json, strlen(json), 1 << 20, cmd, &rej), "fixture %s: %s", json, rej.detail);
  model_aggregate_apply(agg, cmd);
  free(cmd);
}

/* An assignment with a header and two students in various states. */
static model_aggregate_t *make_agg(const char *tenant, const char *assignment) {
  model_aggregate_t *agg = model_aggregate_new(tenant, strlen(tenant), assignment, strlen(assignment));
  ck_assert_ptr_nonnull(agg);
#define ENV "\"tenant\":\"%s\",\"assignment\":\"%s\",\"ts\":\"2026-09-01T08:00:00Z\""
  apply(agg,
        "{\"id\":\"h1\",\"type\":\"assignment.upserted\"," ENV ",\"version\":3,"
        "\"data\":{\"class\":\"c1\",\"title\":\"Essay \\u00e9\",\"status\":\"published\","
        "\"dueAt\":\"2026-09-10T23:59:00.123Z\",\"points\":100}}",
        tenant, assignment);
  apply(agg, "{\"id\":\"r1\",\"type\":\"roster.assigned\"," ENV ",\"student\":\"s1\",\"version\":1}", tenant,
        assignment);
  apply(agg, "{\"id\":\"r2\",\"type\":\"roster.assigned\"," ENV ",\"student\":\"s2\",\"version\":1}", tenant,
        assignment);
  apply(agg,
        "{\"id\":\"u1\",\"type\":\"submission.updated\"," ENV ",\"student\":\"s1\",\"version\":2,"
        "\"data\":{\"status\":\"submitted\",\"submittedAt\":\"2026-09-09T10:00:00Z\"}}",
        tenant, assignment);
  apply(agg,
        "{\"id\":\"g1\",\"type\":\"grade.updated\"," ENV ",\"student\":\"s1\",\"version\":4,"
        "\"data\":{\"points\":95.5,\"feedback\":\"Good\"}}",
        tenant, assignment);
  return agg;
}

/* A later change: a new grade for s2. */
static void change_agg(model_aggregate_t *agg, uint64_t version) {
  size_t tl, al;
  const char *t = model_aggregate_tenant(agg, &tl);
  const char *a = model_aggregate_assignment(agg, &al);
  apply(agg,
        "{\"id\":\"g2\",\"type\":\"grade.updated\",\"tenant\":\"%.*s\",\"assignment\":\"%.*s\","
        "\"ts\":\"2026-09-01T08:00:00Z\",\"student\":\"s2\",\"version\":%llu,\"data\":{\"points\":%llu}}",
        (int)tl, t, (int)al, a, (unsigned long long)version, (unsigned long long)version);
}

/* --- loading ------------------------------------------------------------- */

#define MAX_FOUND 16

typedef struct found {
  size_t n;
  model_aggregate_t *agg[MAX_FOUND];
  int64_t rev[MAX_FOUND];
} found_t;

static void on_found(void *ctx, model_aggregate_t *agg, int64_t rev, int64_t updated_at_ms) {
  (void)updated_at_ms;
  found_t *f = ctx;
  ck_assert_uint_lt(f->n, MAX_FOUND);
  f->agg[f->n] = agg;
  f->rev[f->n] = rev;
  f->n++;
}

static void found_free(found_t *f) {
  for (size_t i = 0; i < f->n; i++) model_aggregate_destroy(f->agg[i]);
  f->n = 0;
}

static model_aggregate_t *found_get(found_t *f, const char *key, int64_t *rev) {
  for (size_t i = 0; i < f->n; i++) {
    size_t len;
    if (strcmp(model_aggregate_key(f->agg[i], &len), key) == 0) {
      *rev = f->rev[i];
      return f->agg[i];
    }
  }
  return NULL;
}

/* Loads key alone and checks it is stored at rev, equal to want. */
static void assert_stored(const model_aggregate_t *want, int64_t rev) {
  size_t len;
  const char *key = model_aggregate_key(want, &len);
  found_t f = {0};
  sink_error_t err;
  ck_assert_int_eq(store_load(g_store, &key, 1, on_found, &f, &err), SINK_OK);
  ck_assert_msg(f.n == 1, "%s: %zu documents found", key, f.n);
  ck_assert_msg(f.rev[0] == rev, "%s: rev %lld, expected %lld", key, (long long)f.rev[0], (long long)rev);
  ck_assert_msg(model_aggregate_equal(want, f.agg[0]), "%s: stored aggregate differs", key);
  found_free(&f);
}

/* The raw stored document of key (caller destroys), or NULL. */
static bson_t *raw_get(const char *key) {
  mongoc_collection_t *c = mongoc_client_get_collection(g_raw, g_db, g_coll);
  bson_t *filter = BCON_NEW("_id", BCON_UTF8(key));
  mongoc_cursor_t *cur = mongoc_collection_find_with_opts(c, filter, NULL, NULL);
  const bson_t *doc;
  bson_t *out = NULL;
  if (mongoc_cursor_next(cur, &doc)) out = bson_copy(doc);
  bson_error_t e;
  ck_assert_msg(!mongoc_cursor_error(cur, &e), "raw find: %s", e.message);
  mongoc_cursor_destroy(cur);
  bson_destroy(filter);
  mongoc_collection_destroy(c);
  return out;
}

static void raw_insert_json(const char *json) {
  bson_error_t e;
  bson_t *doc = bson_new_from_json((const uint8_t *)json, -1, &e);
  ck_assert_msg(doc != NULL, "%s", e.message);
  mongoc_collection_t *c = mongoc_client_get_collection(g_raw, g_db, g_coll);
  ck_assert_msg(mongoc_collection_insert_one(c, doc, NULL, NULL, &e), "raw insert: %s", e.message);
  mongoc_collection_destroy(c);
  bson_destroy(doc);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* --- tests --------------------------------------------------------------- */

START_TEST(ping_answers) {
  sink_error_t err;
  ck_assert_int_eq(store_ping(g_store, &err), SINK_OK);
}
END_TEST

/* The server's own word on what it is: FerretDB's buildInfo has
 * "ferretdbVersion"; MongoDB's and mongo-java-server's do not. */
static bool buildinfo_says_ferretdb(void) {
  bson_t *cmd = BCON_NEW("buildInfo", BCON_INT32(1));
  bson_t reply;
  bson_error_t e;
  ck_assert_msg(mongoc_client_command_simple(g_raw, "admin", cmd, NULL, &reply, &e), "buildInfo: %s", e.message);
  bool ferret = bson_has_field(&reply, "ferretdbVersion");
  bson_destroy(&reply);
  bson_destroy(cmd);
  return ferret;
}

START_TEST(server_detection_decides_loads) {
  /* Each stack server is what the suite was told it is, and the store
   * loads accordingly: one {_id} find per key on FerretDB (which pushes no
   * $in down to its backend), one $in of up to 10,000 keys elsewhere. */
  ck_assert_msg(buildinfo_says_ferretdb() == g_ferretdb, "%s: buildInfo says ferretdb=%d", g_server,
                !g_ferretdb);
  sink_error_t err;
  store_t *s = store_new(g_uri, g_db, g_coll, "1", &err);
  ck_assert_ptr_nonnull(s);
  ck_assert_uint_eq(store_load_keys_per_find(s, &err), g_ferretdb ? 1 : 10000);
  store_destroy(s);
}
END_TEST

START_TEST(write_new_then_load) {
  model_aggregate_t *a = make_agg("new", "a1"), *b = make_agg("new", "a2"), *c = make_agg("new", "a3");
  sink_write_item_t items[] = {{.agg = a, .rev = 0}, {.agg = b, .rev = 0}, {.agg = c, .rev = 0}};
  sink_error_t err;
  const int64_t at = T0_MS + 123;
  ck_assert_int_eq(store_write(g_store, items, 3, at, &err), SINK_OK);
  for (size_t i = 0; i < 3; i++) ck_assert_int_eq(items[i].result, SINK_ITEM_OK);

  /* Loaded back equal, at rev 1; a missing key gets no callback. */
  const char *keys[] = {"new/a1", "new/a2", "new/missing", "new/a3"};
  found_t f = {0};
  ck_assert_int_eq(store_load(g_store, keys, 4, on_found, &f, &err), SINK_OK);
  ck_assert_uint_eq(f.n, 3);
  const model_aggregate_t *want[] = {a, b, c};
  for (size_t i = 0; i < 3; i++) {
    size_t len;
    int64_t rev = 0;
    model_aggregate_t *got = found_get(&f, model_aggregate_key(want[i], &len), &rev);
    ck_assert_ptr_nonnull(got);
    ck_assert_int_eq(rev, 1);
    ck_assert(model_aggregate_equal(want[i], got));
  }
  found_free(&f);

  /* The stored document carries the write's rev and time (section 4). */
  bson_t *doc = raw_get("new/a1");
  ck_assert_ptr_nonnull(doc);
  bson_iter_t it;
  ck_assert(bson_iter_init_find(&it, doc, "rev") && BSON_ITER_HOLDS_INT64(&it));
  ck_assert_int_eq(bson_iter_int64(&it), 1);
  ck_assert(bson_iter_init_find(&it, doc, "updatedAt") && BSON_ITER_HOLDS_DATE_TIME(&it));
  ck_assert_int_eq(bson_iter_date_time(&it), at);
  ck_assert(bson_iter_init_find(&it, doc, "tenant") && BSON_ITER_HOLDS_UTF8(&it));
  ck_assert_str_eq(bson_iter_utf8(&it, NULL), "new");
  bson_destroy(doc);

  model_aggregate_destroy(a);
  model_aggregate_destroy(b);
  model_aggregate_destroy(c);
}
END_TEST

START_TEST(write_with_right_rev_advances) {
  model_aggregate_t *a = make_agg("adv", "a1");
  sink_write_item_t item = {.agg = a, .rev = 0};
  sink_error_t err;
  ck_assert_int_eq(store_write(g_store, &item, 1, T0_MS, &err), SINK_OK);
  ck_assert_int_eq(item.result, SINK_ITEM_OK);
  assert_stored(a, 1);

  for (int64_t rev = 1; rev <= 3; rev++) {
    change_agg(a, (uint64_t)(10 + rev));
    item = (sink_write_item_t){.agg = a, .rev = rev};
    ck_assert_int_eq(store_write(g_store, &item, 1, T0_MS + rev, &err), SINK_OK);
    ck_assert_int_eq(item.result, SINK_ITEM_OK);
    assert_stored(a, rev + 1);
  }
  model_aggregate_destroy(a);
}
END_TEST

/* Puts agg into the store at rev (by writing it rev times). */
static void seed(model_aggregate_t *agg, int64_t rev) {
  sink_error_t err;
  for (int64_t r = 0; r < rev; r++) {
    sink_write_item_t item = {.agg = agg, .rev = r};
    ck_assert_int_eq(store_write(g_store, &item, 1, T0_MS, &err), SINK_OK);
    ck_assert_int_eq(item.result, SINK_ITEM_OK);
  }
}

START_TEST(stale_rev_conflicts_alone) {
  /* Each position of the conflicting item in the bulk: servers differ in
   * how they go on after a write error in an unordered bulk. */
  for (int pos = 0; pos < 3; pos++) {
    char ax[8], ay[8], az[8];
    snprintf(ax, sizeof ax, "x%d", pos);
    snprintf(ay, sizeof ay, "y%d", pos);
    snprintf(az, sizeof az, "z%d", pos);
    /* stored: x at rev 2, y at rev 1; z absent. */
    model_aggregate_t *x = make_agg("stale", ax), *y = make_agg("stale", ay), *z = make_agg("stale", az);
    seed(x, 2);
    seed(y, 1);
    model_aggregate_t *x2 = model_aggregate_clone(x), *y2 = model_aggregate_clone(y);
    change_agg(x2, 50);
    change_agg(y2, 60);

    sink_write_item_t items[3];
    items[pos] = (sink_write_item_t){.agg = x2, .rev = 1}; /* stale: stored is 2 */
    items[(pos + 1) % 3] = (sink_write_item_t){.agg = y2, .rev = 1};
    items[(pos + 2) % 3] = (sink_write_item_t){.agg = z, .rev = 0};
    sink_error_t err;
    ck_assert_int_eq(store_write(g_store, items, 3, T0_MS + pos, &err), SINK_OK);
    ck_assert_msg(items[pos].result == SINK_ITEM_CONFLICT, "pass %d: stale item: result %d", pos,
                  items[pos].result);
    ck_assert_msg(items[(pos + 1) % 3].result == SINK_ITEM_OK, "pass %d: update: result %d", pos,
                  items[(pos + 1) % 3].result);
    ck_assert_msg(items[(pos + 2) % 3].result == SINK_ITEM_OK, "pass %d: insert: result %d", pos,
                  items[(pos + 2) % 3].result);

    /* The conflict changed nothing; the others landed. */
    assert_stored(x, 2);
    assert_stored(y2, 2);
    assert_stored(z, 1);

    /* A rev ahead of the store, and an insert over an existing document,
     * are conflicts too. */
    sink_write_item_t more[] = {{.agg = x2, .rev = 7}, {.agg = y2, .rev = 0}};
    ck_assert_int_eq(store_write(g_store, more, 2, T0_MS, &err), SINK_OK);
    ck_assert_int_eq(more[0].result, SINK_ITEM_CONFLICT);
    ck_assert_int_eq(more[1].result, SINK_ITEM_CONFLICT);
    assert_stored(x, 2);
    assert_stored(y2, 2);

    model_aggregate_destroy(x);
    model_aggregate_destroy(x2);
    model_aggregate_destroy(y);
    model_aggregate_destroy(y2);
    model_aggregate_destroy(z);
  }
}
END_TEST

/* New documents go as inserts (store.h); one that exists already is that
 * item's conflict, on both servers, and the reply accounts for every insert
 * without the item-by-item fallback, although the servers count
 * differently (pinned here: mongo-java-server counts the failed insert in
 * nInserted, FerretDB, like MongoDB, does not). */
START_TEST(inserts_conflict_alone) {
  /* The servers' replies to an unordered insert command whose second
   * document exists. */
  raw_insert_json("{\"_id\": \"raw/b\", \"rev\": 1}");
  mongoc_collection_t *c = mongoc_client_get_collection(g_raw, g_db, g_coll);
  bson_t *bopts = BCON_NEW("ordered", BCON_BOOL(false));
  mongoc_bulk_operation_t *bulk = mongoc_collection_create_bulk_operation_with_opts(c, bopts);
  const char *ids[] = {"raw/a", "raw/b", "raw/c"};
  bson_error_t e;
  for (size_t i = 0; i < 3; i++) {
    bson_t *d = BCON_NEW("_id", BCON_UTF8(ids[i]), "rev", BCON_INT64(1));
    ck_assert(mongoc_bulk_operation_insert_with_opts(bulk, d, NULL, &e));
    bson_destroy(d);
  }
  bson_t reply;
  ck_assert(!mongoc_bulk_operation_execute(bulk, &reply, &e));
  bson_iter_t it, f;
  ck_assert(bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, "writeErrors.0.index", &f));
  ck_assert_int_eq(bson_iter_as_int64(&f), 1);
  ck_assert(bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, "writeErrors.0.code", &f));
  ck_assert_int_eq(bson_iter_as_int64(&f), 11000);
  ck_assert(bson_iter_init_find(&it, &reply, "nInserted"));
  ck_assert_msg(bson_iter_as_int64(&it) == (g_ferretdb ? 2 : 3), "%s: nInserted %lld", g_server,
                (long long)bson_iter_as_int64(&it));
  bson_destroy(&reply);
  mongoc_bulk_operation_destroy(bulk);
  bson_destroy(bopts);
  mongoc_collection_destroy(c);
  for (size_t i = 0; i < 3; i++) {
    bson_t *d = raw_get(ids[i]);
    ck_assert_msg(d != NULL, "%s: %s not stored", g_server, ids[i]);
    bson_destroy(d);
  }

  /* The store: a, b, c new to it, b stored meanwhile by another writer. */
  model_aggregate_t *a = make_agg("ins", "a"), *b = make_agg("ins", "b"), *c2 = make_agg("ins", "c");
  seed(b, 3);
  model_aggregate_t *b2 = model_aggregate_clone(b);
  change_agg(b2, 70);
  sink_write_item_t items[] = {{.agg = a, .rev = 0}, {.agg = b2, .rev = 0}, {.agg = c2, .rev = 0}};
  uint64_t before = store_incomplete_writes(g_store);
  sink_error_t err;
  ck_assert_int_eq(store_write(g_store, items, 3, T0_MS, &err), SINK_OK);
  ck_assert_int_eq(items[0].result, SINK_ITEM_OK);
  ck_assert_int_eq(items[1].result, SINK_ITEM_CONFLICT);
  ck_assert_int_eq(items[2].result, SINK_ITEM_OK);
  ck_assert_msg(store_incomplete_writes(g_store) == before, "%s: the reply was resolved item by item", g_server);
  assert_stored(a, 1);
  assert_stored(b, 3);
  assert_stored(c2, 1);
  model_aggregate_destroy(a);
  model_aggregate_destroy(b);
  model_aggregate_destroy(b2);
  model_aggregate_destroy(c2);
}
END_TEST

/* The stored document's bytes are exactly the whole encoding of want at
 * rev with updatedAt at: what a replacement would have stored. */
static void assert_stored_bytes(const model_aggregate_t *want, int64_t rev, int64_t at) {
  size_t len;
  bson_t *doc = raw_get(model_aggregate_key(want, &len));
  ck_assert_ptr_nonnull(doc);
  bson_t whole = BSON_INITIALIZER;
  ck_assert(model_codec_to_bson(want, rev, at, &whole));
  char *got_json = bson_as_relaxed_extended_json(doc, NULL), *want_json = bson_as_relaxed_extended_json(&whole, NULL);
  ck_assert_msg(doc->len == whole.len && !memcmp(bson_get_data(doc), bson_get_data(&whole), whole.len),
                "%s: stored %s\nwhole    %s", g_server, got_json, want_json);
  bson_free(got_json);
  bson_free(want_json);
  bson_destroy(&whole);
  bson_destroy(doc);
}

static size_t student_index(const model_aggregate_t *agg, const char *id) {
  size_t i;
  ck_assert(model_aggregate_find_student(agg, id, strlen(id), &i));
  return i;
}

START_TEST(partial_update_sets_only_touched) {
  /* stored at rev 1: s1 graded, s2 assigned. */
  model_aggregate_t *a = make_agg("part", "a1");
  seed(a, 1);
  model_aggregate_t *a2 = model_aggregate_clone(a);
  change_agg(a2, 20); /* s2's grade */
  size_t s2 = student_index(a2, "s2");
  sink_write_item_t item = {.agg = a2, .rev = 1, .partial = true, .students = &s2, .nstudents = 1};
  sink_error_t err;
  ck_assert_int_eq(store_write(g_store, &item, 1, T0_MS + 7, &err), SINK_OK);
  ck_assert_int_eq(item.result, SINK_ITEM_OK);
  assert_stored(a2, 2);
  assert_stored_bytes(a2, 2, T0_MS + 7);

  /* The header, alone. */
  apply(a2,
        "{\"id\":\"h2\",\"type\":\"assignment.upserted\",\"tenant\":\"part\",\"assignment\":\"a1\","
        "\"ts\":\"2026-09-01T08:00:00Z\",\"version\":9,\"data\":{\"class\":\"c1\",\"title\":\"T\","
        "\"status\":\"closed\",\"dueAt\":null,\"points\":null}}");
  item = (sink_write_item_t){.agg = a2, .rev = 2, .partial = true, .header = true};
  ck_assert_int_eq(store_write(g_store, &item, 1, T0_MS + 8, &err), SINK_OK);
  ck_assert_int_eq(item.result, SINK_ITEM_OK);
  assert_stored_bytes(a2, 3, T0_MS + 8);

  /* A partial update whose rev is not the stored one matches nothing: a
   * conflict, and the document is untouched (no upsert: no half document
   * either). */
  model_aggregate_t *at3 = model_aggregate_clone(a2);
  change_agg(a2, 30);
  s2 = student_index(a2, "s2");
  item = (sink_write_item_t){.agg = a2, .rev = 2, .partial = true, .students = &s2, .nstudents = 1};
  ck_assert_int_eq(store_write(g_store, &item, 1, T0_MS + 9, &err), SINK_OK);
  ck_assert_int_eq(item.result, SINK_ITEM_CONFLICT);
  item.rev = 5; /* ahead of the store */
  ck_assert_int_eq(store_write(g_store, &item, 1, T0_MS + 9, &err), SINK_OK);
  ck_assert_int_eq(item.result, SINK_ITEM_CONFLICT);
  model_aggregate_t *gone = make_agg("part", "never-stored");
  size_t s1 = student_index(gone, "s1");
  item = (sink_write_item_t){.agg = gone, .rev = 1, .partial = true, .students = &s1, .nstudents = 1};
  ck_assert_int_eq(store_write(g_store, &item, 1, T0_MS + 9, &err), SINK_OK);
  ck_assert_int_eq(item.result, SINK_ITEM_CONFLICT);
  ck_assert_ptr_null(raw_get("part/never-stored"));
  assert_stored_bytes(at3, 3, T0_MS + 8); /* the misses changed nothing */
  model_aggregate_destroy(at3);
  model_aggregate_destroy(gone);
  model_aggregate_destroy(a);
  model_aggregate_destroy(a2);
}
END_TEST

START_TEST(partial_miss_reply_is_not_an_error) {
  /* What store_bulk_outcome relies on, pinned per server: an update without
   * upsert that matches nothing is no write error, only a count of 0. */
  model_aggregate_t *a = make_agg("pmiss", "a1");
  seed(a, 1);
  mongoc_collection_t *coll = mongoc_client_get_collection(g_raw, g_db, g_coll);
  bson_t *filter = BCON_NEW("_id", "pmiss/a1", "rev", BCON_INT64(7));
  bson_t *update = BCON_NEW("$set", "{", "rev", BCON_INT64(8), "}");
  bson_t reply;
  bson_error_t e;
  ck_assert_msg(mongoc_collection_update_one(coll, filter, update, NULL, &reply, &e), "%s: %s", g_server, e.message);
  bson_iter_t it;
  ck_assert(bson_iter_init_find(&it, &reply, "matchedCount") && bson_iter_as_int64(&it) == 0);
  ck_assert(bson_iter_init_find(&it, &reply, "modifiedCount") && bson_iter_as_int64(&it) == 0);
  ck_assert(!bson_iter_init_find(&it, &reply, "writeErrors"));
  bson_destroy(&reply);
  bson_destroy(update);
  bson_destroy(filter);
  mongoc_collection_destroy(coll);
  model_aggregate_destroy(a);
}
END_TEST

START_TEST(partial_misses_in_a_bulk) {
  /* Three partial items of which `bad` are stale, in every pattern: when
   * all partial items miss, the counts name them; when some do, the store
   * resolves item by item. Either way each result is right, and a whole
   * insert in the same bulk lands. */
  for (int bad = 0; bad < 8; bad++) {
    model_aggregate_t *x[3], *y[3];
    sink_write_item_t items[4];
    size_t idx[3];
    for (int i = 0; i < 3; i++) {
      char an[16];
      snprintf(an, sizeof an, "b%d-%d", bad, i);
      x[i] = make_agg("pbulk", an);
      seed(x[i], 2);
      y[i] = model_aggregate_clone(x[i]);
      change_agg(y[i], (uint64_t)(40 + i));
      idx[i] = student_index(y[i], "s2");
      items[i] = (sink_write_item_t){
          .agg = y[i], .rev = (bad >> i) & 1 ? 1 : 2, .partial = true, .students = &idx[i], .nstudents = 1};
    }
    char an[16];
    snprintf(an, sizeof an, "new%d", bad);
    model_aggregate_t *z = make_agg("pbulk", an);
    items[3] = (sink_write_item_t){.agg = z, .rev = 0};
    sink_error_t err;
    ck_assert_int_eq(store_write(g_store, items, 4, T0_MS + bad, &err), SINK_OK);
    for (int i = 0; i < 3; i++) {
      if ((bad >> i) & 1) {
        ck_assert_msg(items[i].result == SINK_ITEM_CONFLICT, "%s bad=%d item %d: %d", g_server, bad, i,
                      items[i].result);
        assert_stored(x[i], 2);
      } else {
        ck_assert_msg(items[i].result == SINK_ITEM_OK, "%s bad=%d item %d: %d", g_server, bad, i, items[i].result);
        assert_stored_bytes(y[i], 3, T0_MS + bad);
      }
      model_aggregate_destroy(x[i]);
      model_aggregate_destroy(y[i]);
    }
    ck_assert_int_eq(items[3].result, SINK_ITEM_OK);
    assert_stored(z, 1);
    model_aggregate_destroy(z);
  }
}
END_TEST

START_TEST(empty_write_and_load) {
  sink_error_t err;
  ck_assert_int_eq(store_write(g_store, NULL, 0, T0_MS, &err), SINK_OK);
  found_t f = {0};
  ck_assert_int_eq(store_load(g_store, NULL, 0, on_found, &f, &err), SINK_OK);
  const char *keys[] = {"nobody/a1", "nobody/a2"};
  ck_assert_int_eq(store_load(g_store, keys, 2, on_found, &f, &err), SINK_OK);
  ck_assert_uint_eq(f.n, 0);
}
END_TEST

typedef struct count {
  int n, bad;
} count_t;

static void on_count(void *ctx, model_aggregate_t *agg, int64_t rev, int64_t updated_at_ms) {
  (void)updated_at_ms;
  count_t *c = ctx;
  c->n++;
  if (rev != 2 || model_aggregate_student_count(agg) != 2) c->bad++;
  model_aggregate_destroy(agg);
}

/* --- documents at the size limit ----------------------------------------- */

/* The BSON size store_write checks against STORE_MAX_DOCUMENT_BYTES: the
 * document plus its update statement's _id and framing (store_bulk.c). */
static size_t statement_bytes(const model_aggregate_t *agg, int64_t rev) {
  bson_t doc = BSON_INITIALIZER;
  ck_assert(model_codec_to_bson(agg, rev + 1, T0_MS, &doc));
  size_t key_len, n = doc.len;
  model_aggregate_key(agg, &key_len);
  bson_destroy(&doc);
  return n + key_len + 64;
}

/* One student with a grade whose feedback is flen bytes (1,500: about 1.6 KB
 * of BSON). */
static void add_graded_student(model_aggregate_t *agg, int i, size_t flen) {
  static char feedback[MODEL_FEEDBACK_MAX + 1];
  ck_assert_uint_le(flen, MODEL_FEEDBACK_MAX);
  memset(feedback, 'f', flen);
  feedback[flen] = '\0';
  size_t tl, al;
  const char *t = model_aggregate_tenant(agg, &tl);
  const char *a = model_aggregate_assignment(agg, &al);
  char json[MODEL_FEEDBACK_MAX + 1024];
  int n = snprintf(json, sizeof json,
                   "{\"id\":\"g%d\",\"type\":\"grade.updated\",\"tenant\":\"%.*s\",\"assignment\":\"%.*s\","
                   "\"ts\":\"2026-09-01T08:00:00Z\",\"student\":\"s%d\",\"version\":1,"
                   "\"data\":{\"points\":%d,\"feedback\":\"%s\"}}",
                   i, (int)tl, t, (int)al, a, i, i % 100, feedback);
  ck_assert(n > 0 && (size_t)n < sizeof json);
  model_command_t *cmd = malloc(sizeof *cmd);
  ck_assert_ptr_nonnull(cmd);
  model_reject_t rej;
  ck_assert_msg(model_command_decode(json, (size_t)n, 1 << 20, cmd, &rej), "%s", rej.detail);
  ck_assert_int_eq(model_aggregate_apply(agg, cmd), MODEL_APPLY_APPLIED);
  free(cmd);
}

/* Two aggregates of one assignment whose statements are exactly at the
 * limit and one byte over it (about 10,000 students; the last student's
 * feedback length makes up the last bytes). */
static void make_limit_pair(const char *assignment, model_aggregate_t **at, model_aggregate_t **over,
                            int *last) {
  model_aggregate_t *agg = model_aggregate_new("tbig", 4, assignment, strlen(assignment));
  int i = 0;
  for (; i < 100; i++) add_graded_student(agg, i, 1500);
  size_t per = statement_bytes(agg, 0) / 100 + 1;
  /* Whole students while two more would still fit: the gap left is one to
   * two students, which one student with 0..MODEL_FEEDBACK_MAX bytes of
   * feedback covers. */
  while (statement_bytes(agg, 0) + 2 * per <= STORE_MAX_DOCUMENT_BYTES) {
    size_t k = (STORE_MAX_DOCUMENT_BYTES - statement_bytes(agg, 0)) / per / 2;
    for (k = k ? k : 1; k > 0; k--) add_graded_student(agg, i++, 1500);
  }
  model_aggregate_t *probe = model_aggregate_clone(agg);
  add_graded_student(probe, i, 0);
  size_t base = statement_bytes(probe, 0); /* growth is one byte per byte of feedback */
  model_aggregate_destroy(probe);
  ck_assert_uint_le(base, STORE_MAX_DOCUMENT_BYTES);
  size_t flen = STORE_MAX_DOCUMENT_BYTES - base;
  ck_assert_uint_lt(flen, MODEL_FEEDBACK_MAX);
  *at = model_aggregate_clone(agg);
  add_graded_student(*at, i, flen);
  ck_assert_uint_eq(statement_bytes(*at, 0), STORE_MAX_DOCUMENT_BYTES);
  add_graded_student(agg, i, flen + 1);
  ck_assert_uint_eq(statement_bytes(agg, 0), STORE_MAX_DOCUMENT_BYTES + 1);
  *over = agg;
  if (last) *last = i; /* the student whose feedback differs: "s<i>" */
}

/* The store refuses, before sending it, a document whose statement would
 * pass the 16 MiB limit: an item error with the server's code
 * (BSONObjectTooLarge) and its size, while the rest of the bulk lands.
 * Sent anyway it would fail the whole bulk (store.h says how on each
 * server), so this is what keeps one huge aggregate from stopping every
 * write. */
START_TEST(document_past_the_limit_is_refused_alone) {
  model_aggregate_t *under, *over;
  make_limit_pair("over", &under, &over, NULL); /* one byte over */
  model_aggregate_t *small = make_agg("tbig", "small");
  sink_write_item_t items[2] = {{.agg = over, .rev = 0}, {.agg = small, .rev = 0}};
  sink_error_t err;
  ck_assert_int_eq(store_write(g_store, items, 2, T0_MS, &err), SINK_OK);
  ck_assert_int_eq(items[0].result, SINK_ITEM_TOO_LARGE);
  ck_assert_uint_eq(items[0].error_code, 10334); /* MongoDB's BSONObjectTooLarge, for the log */
  ck_assert_uint_gt(items[0].bytes, STORE_MAX_DOCUMENT_BYTES - 4096); /* its size, for the log */
  ck_assert_int_eq(items[1].result, SINK_ITEM_OK);
  ck_assert_uint_gt(items[1].bytes, 0);
  bson_t *raw = raw_get("tbig/over");
  ck_assert_ptr_null(raw);
  assert_stored(small, 1);
  model_aggregate_destroy(under);
  model_aggregate_destroy(over);
  model_aggregate_destroy(small);
}
END_TEST

/* A byte less fits, on every server: the margin store_bulk.c keeps under 16 MiB
 * is enough for mongo-java-server, which drops the connection at 16 MiB of
 * statement, and the document reads back whole. */
START_TEST(document_at_the_limit_is_stored) {
  model_aggregate_t *under, *over;
  make_limit_pair("under", &under, &over, NULL);
  sink_write_item_t item = {.agg = under, .rev = 0};
  sink_error_t err;
  ck_assert_msg(store_write(g_store, &item, 1, T0_MS, &err) == SINK_OK, "%s", err.message);
  ck_assert_int_eq(item.result, SINK_ITEM_OK);
  ck_assert_uint_gt(item.bytes, STORE_MAX_DOCUMENT_BYTES - 4096);
  assert_stored(under, 1);
  model_aggregate_destroy(under);
  model_aggregate_destroy(over);
}
END_TEST

/* A partial update whose document would pass the limit is refused as the
 * replacement would be: the $set of one student is small, the document it
 * makes is not. The stored document stays as it was. */
START_TEST(partial_update_past_the_limit_is_refused) {
  model_aggregate_t *under, *over;
  int last;
  make_limit_pair("partial", &under, &over, &last);
  sink_write_item_t item = {.agg = under, .rev = 0};
  sink_error_t err;
  ck_assert_msg(store_write(g_store, &item, 1, T0_MS, &err) == SINK_OK, "%s", err.message);
  ck_assert_int_eq(item.result, SINK_ITEM_OK);
  char id[16];
  snprintf(id, sizeof id, "s%d", last);
  size_t si = student_index(over, id);
  item = (sink_write_item_t){.agg = over, .rev = 1, .partial = true, .students = &si, .nstudents = 1};
  ck_assert_msg(store_write(g_store, &item, 1, T0_MS + 1, &err) == SINK_OK, "%s", err.message);
  ck_assert_int_eq(item.result, SINK_ITEM_TOO_LARGE);
  ck_assert_uint_eq(item.error_code, 10334);
  ck_assert_uint_gt(item.bytes, STORE_MAX_DOCUMENT_BYTES - 4096);
  assert_stored(under, 1);
  model_aggregate_destroy(under);
  model_aggregate_destroy(over);
}
END_TEST

START_TEST(many_items_one_bulk) {
  /* More documents than the load cursor's first reply would hold by default
   * (101). */
  enum { N = 300 };
  model_aggregate_t *aggs[N];
  sink_write_item_t items[N];
  const char *keys[N];
  for (int i = 0; i < N; i++) {
    char a[16];
    snprintf(a, sizeof a, "m%03d", i);
    aggs[i] = make_agg("many", a);
    items[i] = (sink_write_item_t){.agg = aggs[i], .rev = 0};
    size_t len;
    keys[i] = model_aggregate_key(aggs[i], &len);
  }
  sink_error_t err;
  ck_assert_int_eq(store_write(g_store, items, N, T0_MS, &err), SINK_OK);
  for (int i = 0; i < N; i++) ck_assert_int_eq(items[i].result, SINK_ITEM_OK);

  /* Again, now that every filter matches a document (FerretDB 1.x hangs on
   * an update command with 100 matching updates; the store must not send
   * one). */
  for (int i = 0; i < N; i++) items[i] = (sink_write_item_t){.agg = aggs[i], .rev = 1};
  ck_assert_int_eq(store_write(g_store, items, N, T0_MS, &err), SINK_OK);
  for (int i = 0; i < N; i++) ck_assert_int_eq(items[i].result, SINK_ITEM_OK);

  count_t cnt = {0, 0};
  ck_assert_int_eq(store_load(g_store, keys, N, on_count, &cnt, &err), SINK_OK);
  ck_assert_int_eq(cnt.n, N);
  ck_assert_int_eq(cnt.bad, 0);
  for (int i = 0; i < N; i++) model_aggregate_destroy(aggs[i]);
}
END_TEST

START_TEST(corrupt_document_is_fatal) {
  model_aggregate_t *good = make_agg("corrupt", "good");
  seed(good, 1);
  raw_insert_json("{\"_id\": \"corrupt/bad\", \"tenant\": \"corrupt\", \"assignment\": \"bad\", \"rev\": \"one\"}");
  const char *keys[] = {"corrupt/good", "corrupt/bad"};
  found_t f = {0};
  sink_error_t err;
  ck_assert_int_eq(store_load(g_store, keys, 2, on_found, &f, &err), SINK_FATAL);
  ck_assert_msg(strstr(err.message, "corrupt/bad") != NULL, "message: %s", err.message);
  /* All or nothing: the good document is not handed out either. */
  ck_assert_uint_eq(f.n, 0);
  model_aggregate_destroy(good);
}
END_TEST

START_TEST(majority_write_concern) {
  /* A single node acknowledges "majority" by itself. */
  sink_error_t err;
  store_t *s = store_new(g_uri, g_db, g_coll, "majority", &err);
  ck_assert_ptr_nonnull(s);
  model_aggregate_t *a = make_agg("wc", "a1");
  sink_write_item_t item = {.agg = a, .rev = 0};
  ck_assert_int_eq(store_write(s, &item, 1, T0_MS, &err), SINK_OK);
  ck_assert_int_eq(item.result, SINK_ITEM_OK);
  found_t f = {0};
  const char *key = "wc/a1";
  ck_assert_int_eq(store_load(s, &key, 1, on_found, &f, &err), SINK_OK); /* read concern majority */
  ck_assert_uint_eq(f.n, 1);
  ck_assert(model_aggregate_equal(a, f.agg[0]));
  found_free(&f);
  model_aggregate_destroy(a);
  store_destroy(s);
}
END_TEST

START_TEST(bad_namespace_is_fatal) {
  /* mongo-java-server accepts a '$' in a database name; MongoDB (and
   * FerretDB) refuse it with 73 InvalidNamespace, whose classification as
   * fatal test_store_errors checks without a server. */
  if (!g_ferretdb) return;
  sink_error_t err;
  store_t *s = store_new(g_uri, "bad$name", g_coll, "1", &err);
  ck_assert_ptr_nonnull(s);
  model_aggregate_t *a = make_agg("ns", "a1");
  sink_write_item_t item = {.agg = a, .rev = 0};
  ck_assert_int_eq(store_write(s, &item, 1, T0_MS, &err), SINK_FATAL);
  ck_assert_int_eq(item.result, SINK_ITEM_RETRY);
  ck_assert_uint_eq(err.code, 73); /* InvalidNamespace */
  model_aggregate_destroy(a);
  store_destroy(s);
}
END_TEST

START_TEST(bad_credentials_are_fatal) {
  /* The test server has no users: any authentication attempt fails. */
  char uri[512];
  const char *rest = strstr(g_uri, "://");
  ck_assert_ptr_nonnull(rest);
  snprintf(uri, sizeof uri, "mongodb://nobody:wrongpw@%s", rest + 3);
  sink_error_t err;
  store_t *s = store_new(uri, g_db, g_coll, "1", &err);
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(store_ping(s, &err), SINK_FATAL);
  ck_assert_uint_eq(err.domain, MONGOC_ERROR_CLIENT);
  ck_assert(strstr(err.message, "wrongpw") == NULL);
  store_destroy(s);
}
END_TEST

static void assert_unreachable_retries(const char *uri, double max_s) {
  sink_error_t err;
  store_t *s = store_new(uri, g_db, g_coll, "1", &err);
  ck_assert_ptr_nonnull(s);

  double t = now_s();
  ck_assert_int_eq(store_ping(s, &err), SINK_RETRY);
  ck_assert_uint_eq(err.domain, MONGOC_ERROR_SERVER_SELECTION);
  ck_assert_msg(now_s() - t < max_s, "ping took %.1f s", now_s() - t);

  model_aggregate_t *a = make_agg("down", "a1");
  sink_write_item_t item = {.agg = a, .rev = 0};
  t = now_s();
  ck_assert_int_eq(store_write(s, &item, 1, T0_MS, &err), SINK_RETRY);
  ck_assert_int_eq(item.result, SINK_ITEM_RETRY);
  ck_assert_msg(now_s() - t < max_s, "write took %.1f s", now_s() - t);

  found_t f = {0};
  const char *key = "down/a1";
  t = now_s();
  ck_assert_int_eq(store_load(s, &key, 1, on_found, &f, &err), SINK_RETRY);
  ck_assert_uint_eq(f.n, 0);
  ck_assert_msg(now_s() - t < max_s, "load took %.1f s", now_s() - t);
  model_aggregate_destroy(a);
  store_destroy(s);
}

START_TEST(unreachable_server_retries) {
  /* Nothing listens on port 1: a refused connection, retried until the
   * URI's selection timeout. */
  assert_unreachable_retries("mongodb://127.0.0.1:1/?serverSelectionTimeoutMS=300", 5.0);
  /* Without one in the URI the store's own default applies (mongoc's
   * would be 30 s). */
  assert_unreachable_retries("mongodb://127.0.0.1:1/", 10.0);
}
END_TEST

/* --- setup --------------------------------------------------------------- */

static void drop_database(void) {
  mongoc_database_t *db = mongoc_client_get_database(g_raw, g_db);
  bson_error_t e;
  if (!mongoc_database_drop(db, &e)) fprintf(stderr, "test_store: dropping %s: %s\n", g_db, e.message);
  mongoc_database_destroy(db);
}

static const char *env_or(const char *name, const char *fallback) {
  const char *v = getenv(name);
  return v && *v ? v : fallback;
}

/* Connects to one server for a test case (an unchecked fixture: once per
 * case); a server that does not answer fails the case. */
static void server_up(const char *server, const char *uri, bool ferretdb) {
  g_server = server;
  g_uri = uri;
  g_ferretdb = ferretdb;
  snprintf(g_db, sizeof g_db, "test_store_%ld", (long)getpid());
  fprintf(stderr, "test_store: against %s at %s\n", server, uri);

  sink_error_t err;
  g_store = store_new(g_uri, g_db, g_coll, "1", &err); /* also initialises mongoc */
  ck_assert_msg(g_store, "store_new: %s", err.message);
  ck_assert_msg(store_ping(g_store, &err) == SINK_OK, "no %s at %s (start it with scripts/stack start): %s", server,
                uri, err.message);
  g_raw = mongoc_client_new(g_uri);
  mongoc_client_set_error_api(g_raw, MONGOC_ERROR_API_VERSION_2);
}

static void ferretdb_up(void) { server_up("ferretdb", env_or("AGG_MONGO_URI", "mongodb://127.0.0.1:27018"), true); }

static void mjs_up(void) {
  server_up("mongo-java-server", env_or("AGG_MJS_URI", "mongodb://127.0.0.1:27019"), false);
}

static void server_down(void) {
  if (g_raw) drop_database();
  mongoc_client_destroy(g_raw);
  store_destroy(g_store);
  g_raw = NULL;
  g_store = NULL;
}

/* The same tests against each server, one case each. */
static TCase *server_case(const char *server, void (*up)(void)) {
  TCase *tc = tcase_create(server);
  tcase_set_timeout(tc, 120);
  tcase_add_unchecked_fixture(tc, up, server_down);
  tcase_add_test(tc, ping_answers);
  tcase_add_test(tc, server_detection_decides_loads);
  tcase_add_test(tc, write_new_then_load);
  tcase_add_test(tc, write_with_right_rev_advances);
  tcase_add_test(tc, stale_rev_conflicts_alone);
  tcase_add_test(tc, inserts_conflict_alone);
  tcase_add_test(tc, partial_update_sets_only_touched);
  tcase_add_test(tc, partial_miss_reply_is_not_an_error);
  tcase_add_test(tc, partial_misses_in_a_bulk);
  tcase_add_test(tc, empty_write_and_load);
  tcase_add_test(tc, many_items_one_bulk);
  tcase_add_test(tc, document_past_the_limit_is_refused_alone);
  tcase_add_test(tc, document_at_the_limit_is_stored);
  tcase_add_test(tc, partial_update_past_the_limit_is_refused);
  tcase_add_test(tc, corrupt_document_is_fatal);
  tcase_add_test(tc, majority_write_concern);
  tcase_add_test(tc, bad_namespace_is_fatal);
  tcase_add_test(tc, bad_credentials_are_fatal);
  tcase_add_test(tc, unreachable_server_retries);
  return tc;
}

Suite *test_suite(void) {
  Suite *s = suite_create("store");
  suite_add_tcase(s, server_case("ferretdb", ferretdb_up));
  suite_add_tcase(s, server_case("mongo-java-server", mjs_up));
  return s;
}
