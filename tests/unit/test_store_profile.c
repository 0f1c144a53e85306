/* Server profiles from buildInfo replies, without a server: the reply
 * alone decides the profile, and only a reply that names FerretDB gets
 * anything but MongoDB's (tests/integration/test_store.c checks that the
 * stack's servers answer as these replies say). */
#include <check.h>
#include <stdlib.h>

#include "store/store_profile.h"

static const store_profile_t *profile_of(const char *json) {
  bson_error_t e;
  bson_t *reply = bson_new_from_json((const uint8_t *)json, -1, &e);
  ck_assert_msg(reply != NULL, "bad test JSON: %s", e.message);
  const store_profile_t *p = store_profile_of_build_info(reply);
  bson_destroy(reply);
  ck_assert_ptr_nonnull(p);
  return p;
}

START_TEST(mongodb_loads_by_in_and_sends_bulks_whole) {
  const char *replies[] = {
      "{\"version\": \"7.0.14\", \"gitVersion\": \"ce59cfc6a3c5e5c067dca0d30697edd68d4f5188\", \"ok\": 1}",
      "{\"version\": \"3.6.0\", \"maxBsonObjectSize\": 16777216, \"ok\": 1}", /* a server that says little */
      "{\"ok\": 1}",
  };
  for (size_t i = 0; i < sizeof replies / sizeof replies[0]; i++) {
    const store_profile_t *p = profile_of(replies[i]);
    ck_assert_uint_eq(p->load_keys_per_find, 10000);
    ck_assert_uint_eq(p->max_updates_per_command, 0);
    ck_assert_ptr_null(p->announce);
  }
}
END_TEST

START_TEST(ferretdb_loads_by_key_and_sends_small_commands) {
  const store_profile_t *p =
      profile_of("{\"version\": \"7.0.42\", \"ferretdbVersion\": \"v1.24.0\", \"ok\": 1}");
  ck_assert_uint_eq(p->load_keys_per_find, 1);
  ck_assert_uint_eq(p->max_updates_per_command, 16);
  ck_assert_str_eq(p->announce, "store server is FerretDB: bulk writes go in small commands");
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("store_profile");
  TCase *tc = tcase_create("build_info");
  tcase_add_test(tc, mongodb_loads_by_in_and_sends_bulks_whole);
  tcase_add_test(tc, ferretdb_loads_by_key_and_sends_small_commands);
  suite_add_tcase(s, tc);
  return s;
}
