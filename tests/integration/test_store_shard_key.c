/* store.shard_key against the commands the store sends (libmongoc's command
 * monitoring on the client of a store opened from the configuration, as
 * run, replay and verify open it), on both servers of the local
 * stack, which take different paths (test_store.c): FerretDB loads with
 * one find per key, mongo-java-server with one $in.
 *
 * With a shard key, every update statement's filter (whole and partial
 * writes) holds _id, rev and the key's fields with the values of its _id,
 * every find's filter the key's fields for the _ids it asks for (a value,
 * or $in of the distinct values), and every inserted document the fields;
 * the writes and loads still do what they did. Without one, the filters
 * hold _id (and rev) alone, as before.
 *
 * Each run works in its own database, test_store_shard_key_<pid>_<run>,
 * dropped at the end. */
#include <check.h>
#include <mongoc/mongoc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aggregate.h"
#include "command.h"
#include "config/config.h"
#include "store/store.h"
#include "store/store_internal.h"

#define T0_MS 1788249600000LL /* 2026-09-01T00:00:00Z */
#define NAGG 3

static const char *const g_keys[NAGG][2] = {{"t1", "a1"}, {"t1", "a2"}, {"t2", "a1"}};

/* The commands seen: insert, update and find, copied. */
#define MAX_CMDS 64
typedef struct seen {
  size_t n;
  char name[MAX_CMDS][16];
  bson_t *cmd[MAX_CMDS];
} seen_t;

static void on_started(const mongoc_apm_command_started_t *ev) {
  seen_t *s = mongoc_apm_command_started_get_context(ev);
  const char *name = mongoc_apm_command_started_get_command_name(ev);
  if (strcmp(name, "insert") && strcmp(name, "update") && strcmp(name, "find")) return;
  ck_assert_uint_lt(s->n, MAX_CMDS);
  snprintf(s->name[s->n], sizeof s->name[s->n], "%s", name);
  s->cmd[s->n++] = bson_copy(mongoc_apm_command_started_get_command(ev));
}

static void seen_clear(seen_t *s) {
  for (size_t i = 0; i < s->n; i++) bson_destroy(s->cmd[i]);
  s->n = 0;
}

static void apply(model_aggregate_t *agg, const char *json) {
  model_command_t *cmd = malloc(sizeof *cmd);
  ck_assert_ptr_nonnull(cmd);
  model_reject_t rej;
  ck_assert_msg(model_command_decode(json, strlen(json), 1 << 20, cmd, &rej), "fixture %s: %s", json, rej.detail);
  model_aggregate_apply(agg, cmd);
  free(cmd);
}

static void header(model_aggregate_t *agg, int version) {
  size_t tl, al;
  const char *t = model_aggregate_tenant(agg, &tl), *a = model_aggregate_assignment(agg, &al);
  char json[512];
  snprintf(json, sizeof json,
           "{\"id\":\"h%d\",\"type\":\"assignment.upserted\",\"tenant\":\"%.*s\",\"assignment\":\"%.*s\","
           "\"ts\":\"2026-09-01T08:00:00Z\",\"version\":%d,\"data\":{\"class\":\"c1\",\"title\":\"v%d\","
           "\"status\":\"published\",\"dueAt\":null,\"points\":10}}",
           version, (int)tl, t, (int)al, a, version, version);
  apply(agg, json);
}

/* The string values a filter field holds: itself, or its $in's. */
static size_t values_of(const bson_t *filter, const char *field, const char **out, size_t max) {
  bson_iter_t it, sub;
  if (!bson_iter_init_find(&it, filter, field)) return 0;
  if (BSON_ITER_HOLDS_UTF8(&it)) {
    out[0] = bson_iter_utf8(&it, NULL);
    return 1;
  }
  ck_assert_msg(BSON_ITER_HOLDS_DOCUMENT(&it), "%s is neither a value nor {$in}", field);
  ck_assert(bson_iter_recurse(&it, &sub) && bson_iter_find(&sub, "$in") && BSON_ITER_HOLDS_ARRAY(&sub));
  bson_iter_t arr;
  ck_assert(bson_iter_recurse(&sub, &arr));
  size_t n = 0;
  while (bson_iter_next(&arr)) {
    ck_assert(n < max && BSON_ITER_HOLDS_UTF8(&arr));
    out[n++] = bson_iter_utf8(&arr, NULL);
  }
  return n;
}

static bool contains(const char *const *v, size_t n, const char *s, size_t len) {
  for (size_t i = 0; i < n; i++)
    if (strlen(v[i]) == len && !memcmp(v[i], s, len)) return true;
  return false;
}

/* The filter names the shard fields in `fields` ("tenant", "tenant,assignment"
 * or "") for every _id it selects, and no shard field it should not have. */
static void check_filter(const bson_t *filter, const char *fields, const char *what) {
  char *json = bson_as_relaxed_extended_json(filter, NULL);
  const char *ids[64];
  size_t nids = values_of(filter, "_id", ids, 64);
  ck_assert_msg(nids > 0, "%s filter without _id: %s", what, json);
  const char *names[] = {"tenant", "assignment"};
  for (size_t f = 0; f < 2; f++) {
    const char *vals[64];
    size_t nvals = values_of(filter, names[f], vals, 64);
    bool want = strstr(fields, names[f]) != NULL;
    ck_assert_msg(want == (nvals > 0), "%s filter %s %s: %s", what, want ? "lacks" : "has", names[f], json);
    for (size_t i = 0; want && i < nids; i++) {
      const char *slash = strchr(ids[i], '/');
      ck_assert_ptr_nonnull(slash);
      const char *v = f == 0 ? ids[i] : slash + 1;
      size_t len = f == 0 ? (size_t)(slash - ids[i]) : strlen(slash + 1);
      ck_assert_msg(contains(vals, nvals, v, len), "%s filter's %s does not cover _id %s: %s", what, names[f], ids[i],
                    json);
    }
  }
  bson_free(json);
}

/* Every statement of the seen commands named name: each update's q, each
 * find's filter, each inserted document; returns how many. */
static size_t check_seen(const seen_t *s, const char *name, const char *fields) {
  size_t count = 0;
  for (size_t c = 0; c < s->n; c++) {
    if (strcmp(s->name[c], name)) continue;
    bson_iter_t it, arr;
    if (!strcmp(name, "find")) {
      ck_assert(bson_iter_init_find(&it, s->cmd[c], "filter") && BSON_ITER_HOLDS_DOCUMENT(&it));
      bson_t q;
      uint32_t len;
      const uint8_t *data;
      bson_iter_document(&it, &len, &data);
      ck_assert(bson_init_static(&q, data, len));
      check_filter(&q, fields, "find");
      count++;
      continue;
    }
    const char *list = !strcmp(name, "update") ? "updates" : "documents";
    ck_assert_msg(bson_iter_init_find(&it, s->cmd[c], list) && bson_iter_recurse(&it, &arr), "%s without %s", name,
                  list);
    while (bson_iter_next(&arr)) {
      bson_t st, q;
      uint32_t len;
      const uint8_t *data;
      bson_iter_document(&arr, &len, &data);
      ck_assert(bson_init_static(&st, data, len));
      if (!strcmp(name, "insert")) {
        check_filter(&st, "tenant,assignment", "inserted document"); /* a document has both, always */
      } else {
        bson_iter_t qi;
        ck_assert(bson_iter_init_find(&qi, &st, "q"));
        bson_iter_document(&qi, &len, &data);
        ck_assert(bson_init_static(&q, data, len));
        ck_assert_msg(bson_has_field(&q, "rev"), "an update's filter lacks rev");
        check_filter(&q, fields, "update");
      }
      count++;
    }
  }
  return count;
}

static void on_found(void *ctx, model_aggregate_t *agg, int64_t rev, int64_t updated_at_ms) {
  (void)updated_at_ms;
  size_t *n = ctx;
  ck_assert_int_eq(rev, 3);
  model_aggregate_destroy(agg);
  (*n)++;
}

/* Writes NAGG new aggregates, then each again whole, then each partially,
 * then loads them, with store.shard_key = fields, on the server at uri. */
static void run(const char *uri, const char *fields, int i) {
  char db[64];
  snprintf(db, sizeof db, "test_store_shard_key_%ld_%d", (long)getpid(), i);
  fprintf(stderr, "test_store_shard_key: %s, shard_key '%s'\n", uri, fields);
  /* The store as run, replay and verify open it: from the configuration. */
  char set_uri[256], set_db[96], set_key[96];
  snprintf(set_uri, sizeof set_uri, "store.uri=%s", uri);
  snprintf(set_db, sizeof set_db, "store.database=%s", db);
  snprintf(set_key, sizeof set_key, "store.shard_key=%s", fields);
  char *sets[] = {set_uri, set_db, "store.collection=aggregates", "store.write_concern=1", set_key};
  config_t *cfg = config_new();
  config_error_t cerr;
  ck_assert_msg(config_load(cfg, NULL, sets, sizeof sets / sizeof sets[0], &cerr), "%s", cerr.message);
  sink_error_t err;
  store_t *store = store_open(cfg, &err);
  config_destroy(cfg);
  ck_assert_msg(store, "store_open: %s", err.message);
  seen_t seen = {0};
  mongoc_apm_callbacks_t *cbs = mongoc_apm_callbacks_new();
  mongoc_apm_set_command_started_cb(cbs, on_started);
  ck_assert(mongoc_client_set_apm_callbacks(store_client(store), cbs, &seen));
  mongoc_apm_callbacks_destroy(cbs);
  ck_assert_msg(store_ping(store, &err) == SINK_OK, "no server at %s (scripts/stack start): %s", uri, err.message);

  model_aggregate_t *aggs[NAGG];
  sink_write_item_t items[NAGG];
  const char *keys[NAGG];
  for (size_t i = 0; i < NAGG; i++) {
    aggs[i] = model_aggregate_new(g_keys[i][0], 2, g_keys[i][1], 2);
    header(aggs[i], 1);
    keys[i] = model_aggregate_key(aggs[i], &(size_t){0});
  }
  /* New: inserts (rev 0), then whole replacements (rev 1), then partial
   * updates of the header (rev 2). */
  for (int round = 0; round < 3; round++) {
    memset(items, 0, sizeof items);
    for (size_t i = 0; i < NAGG; i++) {
      if (round) header(aggs[i], round + 1);
      items[i] = (sink_write_item_t){.agg = aggs[i], .rev = round, .partial = round == 2, .header = round == 2};
    }
    seen_clear(&seen);
    ck_assert_msg(store_write(store, items, NAGG, T0_MS + round, &err) == SINK_OK, "write: %s", err.message);
    for (size_t i = 0; i < NAGG; i++)
      ck_assert_msg(items[i].result == SINK_ITEM_OK, "round %d item %zu: %d", round, i, (int)items[i].result);
    ck_assert_uint_eq(check_seen(&seen, round == 0 ? "insert" : "update", fields), NAGG);
  }
  seen_clear(&seen);
  size_t found = 0;
  ck_assert_msg(store_load(store, keys, NAGG, on_found, &found, &err) == SINK_OK, "load: %s", err.message);
  ck_assert_uint_eq(found, NAGG);
  ck_assert_uint_ge(check_seen(&seen, "find", fields), 1);

  /* A key of another tenant is not found by a filter that names it. */
  const char *absent[] = {"t3/a1"};
  found = 0;
  seen_clear(&seen);
  ck_assert(store_load(store, absent, 1, on_found, &found, &err) == SINK_OK);
  ck_assert_uint_eq(found, 0);
  ck_assert_uint_eq(check_seen(&seen, "find", fields), 1);

  seen_clear(&seen);
  mongoc_client_set_apm_callbacks(store_client(store), NULL, NULL);
  mongoc_database_t *d = mongoc_client_get_database(store_client(store), db);
  mongoc_database_drop(d, NULL);
  mongoc_database_destroy(d);
  for (size_t i = 0; i < NAGG; i++) model_aggregate_destroy(aggs[i]);
  store_destroy(store);
}

static const char *env_or(const char *name, const char *fallback) {
  const char *v = getenv(name);
  return v && *v ? v : fallback;
}

static const char *const shard_keys[] = {"tenant", "tenant,assignment", "_id", ""};
#define NKEYS (sizeof shard_keys / sizeof shard_keys[0])

START_TEST(filters_carry_the_shard_key) {
  const char *uri = _i < (int)NKEYS ? env_or("AGG_MONGO_URI", "mongodb://127.0.0.1:27018")
                                    : env_or("AGG_MJS_URI", "mongodb://127.0.0.1:27019");
  run(uri, shard_keys[_i % NKEYS], _i);
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("store_shard_key");
  TCase *tc = tcase_create("store_shard_key");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, filters_carry_the_shard_key, 0, 2 * (int)NKEYS);
  suite_add_tcase(s, tc);
  return s;
}
