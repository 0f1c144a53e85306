/* The values several modules parse (value.h): store.write_concern and
 * metrics.listen, accepted and refused alike by the configuration, the
 * store and the HTTP server. */
#include <check.h>
#include <mongoc/mongoc.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "metrics/http.h"
#include "store/store.h"
#include "base/value.h"

START_TEST(write_concern_parse) {
  static const struct {
    const char *text;
    int32_t w;
  } good[] = {{"majority", MONGOC_WRITE_CONCERN_W_MAJORITY}, {"1", 1}, {"3", 3}, {"03", 3}, {"50", 50}};
  int32_t w = 0;
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    ck_assert_msg(value_parse_write_concern(good[i].text, &w), "refused \"%s\"", good[i].text);
    ck_assert_int_eq(w, good[i].w);
  }
  const char *bad[] = {"0",  "00", "-1", "", " 1", "1 ", "+1", "2x", "51", "99999999999999999999", "Majority",
                       "majorityx", "1.0"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    ck_assert_msg(!value_parse_write_concern(bad[i], &w), "accepted \"%s\"", bad[i]);
  ck_assert(!value_parse_write_concern(NULL, &w));
}
END_TEST

/* Whether the configuration accepts `--set key=value`; why not in cerr. */
static bool config_accepts(const char *key, const char *value, config_error_t *cerr) {
  char set[64];
  snprintf(set, sizeof set, "%s=%s", key, value);
  char *sets[] = {set};
  config_t *cfg = config_new();
  bool ok = config_load(cfg, NULL, sets, 1, cerr);
  config_destroy(cfg);
  return ok;
}

/* The configuration and the store agree on every value. */
START_TEST(write_concern_config_and_store_agree) {
  const char *values[] = {"majority", "1", "03", "50", "0", "51", "-1", "all", "1x", "00"};
  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
    config_error_t cerr;
    bool config_ok = config_accepts("store.write_concern", values[i], &cerr);
    sink_error_t serr;
    store_t *s = store_new("mongodb://127.0.0.1:1/", "db", "coll", values[i], &serr);
    ck_assert_msg(config_ok == (s != NULL), "'%s': config %d, store %d", values[i], config_ok, s != NULL);
    store_destroy(s);
  }
}
END_TEST

START_TEST(listen_parse) {
  value_listen_t l;
  ck_assert(value_parse_listen("127.0.0.1:9464", &l));
  ck_assert_str_eq(l.host, "127.0.0.1");
  ck_assert_str_eq(l.port, "9464");
  ck_assert_int_eq(l.port_number, 9464);
  ck_assert(!l.ipv6);
  ck_assert(value_parse_listen("[::1]:0", &l));
  ck_assert_str_eq(l.host, "::1");
  ck_assert(l.ipv6);
  ck_assert_int_eq(l.port_number, 0);
  ck_assert(value_parse_listen("metrics-host.local:65535", &l));
  ck_assert_str_eq(l.host, "metrics-host.local");
  ck_assert_int_eq(l.port_number, 65535);
  const char *bad[] = {"",           "9464",         ":9464",       "h:",       "h:65536", "h:-1",   "h:9x",
                       "h:+1",       "h: 1",         "::1:9464",    "[::1:9464", "[]:9464", "a b:80", "h_1:80",
                       "[::1]x:80", "h:0000000080", "[fe80::g]:1"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    ck_assert_msg(!value_parse_listen(bad[i], &l), "accepted \"%s\"", bad[i]);
  ck_assert(!value_parse_listen(NULL, &l));
}
END_TEST

/* metrics.listen: what the configuration accepts the HTTP side parses, and
 * the other way round; port 0 (any free port) included. */
START_TEST(listen_config_and_http_agree) {
  const char *values[] = {"127.0.0.1:0", "127.0.0.1:9464", "[::1]:0", "localhost:1", "h:0",     "9464",
                          ":9464",       "h:",             "h:65536", "::1:80",      "[::1:80", "a b:80", "h_1:80"};
  for (size_t i = 0; i < sizeof values / sizeof values[0]; i++) {
    config_error_t cerr;
    bool config_ok = config_accepts("metrics.listen", values[i], &cerr);
    value_listen_t l;
    bool parse_ok = value_parse_listen(values[i], &l);
    ck_assert_msg(config_ok == parse_ok, "'%s': config %d, parser %d (%s)", values[i], config_ok, parse_ok,
                  cerr.message);
    struct sockaddr_storage addr;
    socklen_t len;
    char err[256] = "";
    bool http_ok = http_parse_listen(values[i], &addr, &len, err, sizeof err);
    /* http_parse_listen also resolves: "h" does not, so only syntax is compared. */
    if (parse_ok && strcmp(l.host, "h")) ck_assert_msg(http_ok, "'%s': %s", values[i], err);
    if (!parse_ok) ck_assert_msg(!http_ok, "http accepted '%s'", values[i]);
  }
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("value");
  TCase *tc = tcase_create("value");
  tcase_add_test(tc, write_concern_parse);
  tcase_add_test(tc, write_concern_config_and_store_agree);
  tcase_add_test(tc, listen_parse);
  tcase_add_test(tc, listen_config_and_http_agree);
  suite_add_tcase(s, tc);
  return s;
}
