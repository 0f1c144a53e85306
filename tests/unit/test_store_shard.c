/* The shard key of the store's filters (store_shard.h), without a server:
 * which fields a shard key may name, and the fields a filter gets for one
 * key and for many. integration.test_store_shard_key checks the commands
 * the store sends with it. */
#include <check.h>
#include <mongoc/mongoc.h>
#include <stdlib.h>
#include <string.h>

#include "store/store.h"
#include "base/store_shard.h"

/* filter as canonical-less relaxed JSON, for comparing with a literal. */
static void assert_json(const bson_t *filter, const char *want) {
  char *got = bson_as_relaxed_extended_json(filter, NULL);
  ck_assert_str_eq(got, want);
  bson_free(got);
}

START_TEST(fields) {
  store_shard_t s;
  const char *bad = NULL;
  size_t bad_len = 0;
  ck_assert(store_shard_parse("", &s, &bad, &bad_len) && s == 0);
  ck_assert(store_shard_parse(NULL, &s, &bad, &bad_len) && s == 0);
  ck_assert(store_shard_parse("_id", &s, &bad, &bad_len) && s == 0);
  ck_assert(store_shard_parse("tenant", &s, &bad, &bad_len) && s == STORE_SHARD_TENANT);
  ck_assert(store_shard_parse("assignment,tenant,_id", &s, &bad, &bad_len) &&
            s == (STORE_SHARD_TENANT | STORE_SHARD_ASSIGNMENT));
  /* A field whose value can change for an _id (rev, updatedAt, a slot) or
   * that is no field at all. */
  const char *refused[] = {"rev", "tenant,updatedAt", "header.status", "tenants", "Tenant", "tenant,"};
  const char *named[] = {"rev", "updatedAt", "header.status", "tenants", "Tenant", ""};
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    ck_assert_msg(!store_shard_parse(refused[i], &s, &bad, &bad_len), "%s taken", refused[i]);
    ck_assert_int_eq((int)bad_len, (int)strlen(named[i]));
    ck_assert(!memcmp(bad, named[i], bad_len));
  }
}
END_TEST

START_TEST(one_key) {
  bson_t f = BSON_INITIALIZER;
  BSON_APPEND_UTF8(&f, "_id", "north-high/essay-1");
  store_shard_append(STORE_SHARD_TENANT, "north-high/essay-1", strlen("north-high/essay-1"), &f);
  assert_json(&f, "{ \"_id\" : \"north-high/essay-1\", \"tenant\" : \"north-high\" }");
  bson_reinit(&f);
  store_shard_append(STORE_SHARD_TENANT | STORE_SHARD_ASSIGNMENT, "t1/a1", 5, &f);
  assert_json(&f, "{ \"tenant\" : \"t1\", \"assignment\" : \"a1\" }");
  bson_reinit(&f);
  store_shard_append(0, "t1/a1", 5, &f);
  assert_json(&f, "{ }");
  bson_destroy(&f);
}
END_TEST

START_TEST(many_keys) {
  const char *keys[] = {"t2/a1", "t1/a2", "t2/a2", "t1/a1", "t10/a1"};
  bson_t f = BSON_INITIALIZER;
  store_shard_append_many(STORE_SHARD_TENANT | STORE_SHARD_ASSIGNMENT, keys, 5, &f);
  /* Distinct values, sorted. */
  assert_json(&f, "{ \"tenant\" : { \"$in\" : [ \"t1\", \"t10\", \"t2\" ] }, \"assignment\" : { \"$in\" : [ \"a1\", "
                  "\"a2\" ] } }");
  bson_reinit(&f);
  /* One tenant: an equality, as for one key. */
  const char *same[] = {"t1/a2", "t1/a1"};
  store_shard_append_many(STORE_SHARD_TENANT, same, 2, &f);
  assert_json(&f, "{ \"tenant\" : \"t1\" }");
  bson_reinit(&f);
  store_shard_append_many(0, keys, 5, &f);
  assert_json(&f, "{ }");
  bson_destroy(&f);
}
END_TEST

START_TEST(store_refuses_other_fields) {
  sink_error_t err;
  store_t *s = store_new("mongodb://127.0.0.1:1/", "db", "coll", "1", &err);
  ck_assert_ptr_nonnull(s);
  ck_assert(store_set_shard_key(s, "tenant,assignment", &err));
  ck_assert(store_set_shard_key(s, "", &err));
  ck_assert(store_set_shard_key(s, NULL, &err));
  ck_assert(!store_set_shard_key(s, "tenant,rev", &err));
  ck_assert_str_eq(err.message, "store.shard_key: 'rev' is not tenant, assignment or _id");
  store_destroy(s);
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("store_shard");
  TCase *tc = tcase_create("store_shard");
  tcase_add_test(tc, fields);
  tcase_add_test(tc, one_key);
  tcase_add_test(tc, many_keys);
  tcase_add_test(tc, store_refuses_other_fields);
  suite_add_tcase(s, tc);
  return s;
}
