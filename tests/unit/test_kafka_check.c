/* The start-up check of the topics (kafka_check_topics, worker/source/kafka.h)
 * against brokers that never answer: it waits socket.connection.setup.timeout.ms
 * of the clock it is given, not of the process, then says the cluster is
 * unreachable; a tick that asks to stop ends the wait at once. The clock is a
 * manual one that the tick moves; each step is one metadata request to a
 * closed port (a real wait of at most a second). Only the topics asked for
 * are checked: none at all is no wait. */
#include <check.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "config/config.h"
#include "source/kafka.h"

static clock_manual_t g_clock;

typedef struct ticker {
  int ticks;
  int64_t advance_ms; /* per tick */
  bool stop;          /* the tick's answer: false = go on */
} ticker_t;

static bool tick(void *ctx) {
  ticker_t *t = ctx;
  t->ticks++;
  clock_manual_advance(&g_clock, t->advance_ms);
  return !t->stop;
}

/* A consumer of a broker nobody listens on (port 1), checking `which` of
 * topic "t" and the change topic `changes` ("" = none). */
static kafka_check_t check_set(ticker_t *t, unsigned which, const char *changes, char *err, size_t errsz) {
  clock_manual_init(&g_clock, 1000, 1790000000000);
  char set_changes[64];
  snprintf(set_changes, sizeof set_changes, "changes.topic=%s", changes);
  char *sets[] = {"kafka.brokers=127.0.0.1:1", "kafka.topics=t", "kafka.group=g", "log.level=error", set_changes};
  config_t *cfg = config_new();
  config_error_t cerr;
  ck_assert_msg(config_load(cfg, NULL, sets, 5, &cerr), "%s", cerr.message);
  char errstr[512];
  const char *forced[] = {"group.id", "g", NULL};
  rd_kafka_conf_t *conf = kafka_conf_new(cfg, KAFKA_RUN_CONSUMER, forced, errstr, sizeof errstr);
  ck_assert_msg(conf, "%s", errstr);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
  ck_assert_msg(rk, "%s", errstr);
  kafka_check_t rc = which ? kafka_check_topic_set(rk, cfg, which, &g_clock.source, tick, t, err, errsz)
                           : kafka_check_topics(rk, cfg, false, &g_clock.source, tick, t, err, errsz);
  rd_kafka_destroy(rk);
  config_destroy(cfg);
  return rc;
}

static kafka_check_t check(ticker_t *t, char *err, size_t errsz) { return check_set(t, 0, "", err, errsz); }

START_TEST(unreachable_once_the_given_clock_passes_the_timeout) {
  ticker_t t = {.advance_ms = 40000}; /* the default timeout is 30 s: one tick passes it */
  char err[1024];
  ck_assert_int_eq(check(&t, err, sizeof err), KAFKA_CHECK_UNREACHABLE);
  ck_assert_int_eq(t.ticks, 1);
  ck_assert_msg(strstr(err, "no Kafka broker answered within 30 s"), "%s", err);
}
END_TEST

START_TEST(a_tick_that_says_stop_ends_the_wait) {
  ticker_t t = {.advance_ms = 0, .stop = true};
  char err[1024];
  ck_assert_int_eq(check(&t, err, sizeof err), KAFKA_CHECK_STOPPED);
  ck_assert_int_eq(t.ticks, 1);
}
END_TEST

/* The change topic alone (replay and verify --repair): asked for, so an
 * unreachable cluster is waited for as for the others. */
START_TEST(the_change_topic_alone_waits_for_the_brokers) {
  ticker_t t = {.advance_ms = 40000};
  char err[1024];
  ck_assert_int_eq(check_set(&t, KAFKA_CHECK_CHANGES, "c", err, sizeof err), KAFKA_CHECK_UNREACHABLE);
  ck_assert_int_eq(t.ticks, 1);
}
END_TEST

/* changes.topic empty announces nothing: nothing to ask, no wait at all. */
START_TEST(no_change_topic_asks_nothing) {
  ticker_t t = {.advance_ms = 40000};
  char err[1024] = "x";
  ck_assert_int_eq(check_set(&t, KAFKA_CHECK_CHANGES, "", err, sizeof err), KAFKA_CHECK_OK);
  ck_assert_int_eq(t.ticks, 0);
  ck_assert_str_eq(err, "");
}
END_TEST

Suite *test_suite(void) {
  Suite *su = suite_create("kafka_check");
  TCase *tc = tcase_create("unreachable");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, unreachable_once_the_given_clock_passes_the_timeout);
  tcase_add_test(tc, a_tick_that_says_stop_ends_the_wait);
  tcase_add_test(tc, the_change_topic_alone_waits_for_the_brokers);
  tcase_add_test(tc, no_change_topic_asks_nothing);
  suite_add_tcase(su, tc);
  return su;
}
