/* The change-event producer (worker/source/changes_producer.h) against librdkafka's
 * mock cluster:
 *  - events arrive on the change topic byte for byte, keyed by _id, with
 *    the header x-rev, and are counted;
 *  - tickets: changes_acked_seq passes a ticket only once each of its events
 *    is acknowledged (after failed deliveries that are produced again too),
 *    a ticket without events completes with the ones before it, equal seqs
 *    hold each other back, and the answer never passes durable;
 *  - failing: a failed delivery, or a stall with events out, makes the
 *    producer failing and the worker not ready (logged once, not once per
 *    attempt), until an event is acknowledged again (logged);
 *  - the pending gauges: count and age of the oldest pending event, on the
 *    producer's clock;
 *  - an event larger than the producer allows is refused for good (false).
 * The producer runs on a manual clock (clock.h) that the tests move where
 * it waits out a duration (the retry delay, the stall); what the mock
 * cluster does over its sockets is waited for as a condition, within a
 * bound of real time that only fails a test that would otherwise hang.
 * Everything runs on the test's thread, as the producer's calls run on one
 * thread in the worker. */
#include <check.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/log.h"
#include "config/config.h"
#include "metrics/metrics.h"
#include "model_fixtures.h"
#include "source/announcer.h"
#include "source/changes_producer.h"

#define API_PRODUCE 0 /* Kafka protocol ApiKey of Produce */
#define OK_EVENTS "aggregator_change_events_total{result=\"ok\"}"
#define ERROR_EVENTS "aggregator_change_events_total{result=\"error\"}"
#define PENDING "aggregator_change_events_pending"
#define OLDEST "aggregator_change_events_oldest_pending_seconds"
#define NOT_READY "change-event delivery failing"

static rd_kafka_t *g_owner; /* the client whose own mock cluster (test.mock.num.brokers) the tests use */
static rd_kafka_mock_cluster_t *g_mc;
static char *g_bootstrap; /* a copy: the cluster's own string may move */
static int g_seq;
static clock_manual_t g_clock; /* the producer's */

/* A client of that type with the properties kv (name, value pairs,
 * NULL-terminated), or the test fails. */
static rd_kafka_t *client_new(rd_kafka_type_t type, const char *const *kv) {
  char errstr[256];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  for (; kv[0]; kv += 2)
    ck_assert_msg(rd_kafka_conf_set(conf, kv[0], kv[1], errstr, sizeof errstr) == RD_KAFKA_CONF_OK, "%s", errstr);
  rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
  ck_assert_msg(rk, "%s", errstr);
  return rk;
}

static void cluster_up(void) {
  g_owner = client_new(RD_KAFKA_PRODUCER, (const char *[]){"test.mock.num.brokers", "1", "log_level", "3", NULL});
  g_mc = rd_kafka_handle_mock_cluster(g_owner);
  ck_assert_ptr_nonnull(g_mc);
  g_bootstrap = strdup(rd_kafka_mock_cluster_bootstraps(g_mc));
  clock_manual_init(&g_clock, 1000000, 1790000000000);
  metrics_set_assigned(true); /* readiness then hangs on the producer's input alone (not_ready_reason) */
}

static void cluster_down(void) {
  free(g_bootstrap);
  rd_kafka_destroy(g_owner); /* and its cluster */
}

static int64_t bound_in(int64_t ms) { return clock_mono_ms() + ms; }
static bool bound_passed(int64_t bound) { return clock_mono_ms() > bound; }

/* A fresh change topic of one partition, and a producer for it. */
typedef struct fixture {
  char topic[64];
  config_t *cfg;
  changes_t *c;
} fixture_t;

static void fixture_up(fixture_t *f) {
  snprintf(f->topic, sizeof f->topic, "changes-%d", ++g_seq);
  ck_assert_int_eq(rd_kafka_mock_topic_create(g_mc, f->topic, 1, 1), RD_KAFKA_RESP_ERR_NO_ERROR);
  char sets[5][128];
  snprintf(sets[0], sizeof sets[0], "kafka.brokers=%s", g_bootstrap);
  snprintf(sets[1], sizeof sets[1], "changes.topic=%s", f->topic);
  snprintf(sets[2], sizeof sets[2], "log.level=warn");
  /* A broker that comes back is reconnected to at once. */
  snprintf(sets[3], sizeof sets[3], "kafka.rdkafka.reconnect.backoff.max.ms=200");
  snprintf(sets[4], sizeof sets[4], "kafka.rdkafka.message.max.bytes=100000");
  char *argv[] = {sets[0], sets[1], sets[2], sets[3], sets[4]};
  f->cfg = config_new();
  config_error_t err;
  ck_assert_msg(config_load(f->cfg, NULL, argv, 5, &err), "config: %s", err.message);
  char errstr[256];
  f->c = changes_new(f->cfg, &g_clock.source, errstr, sizeof errstr);
  ck_assert_msg(f->c, "%s", errstr);
}

static void fixture_down(fixture_t *f) {
  changes_destroy(f->c);
  config_destroy(f->cfg);
}

/* One sample of the metrics registry (the line "<series> <value>"); -1
 * when absent. */
static double metric(const char *series) {
  model_buf_t b = MODEL_BUF_INIT;
  model_buf_putc(&b, '\n');
  metrics_render(&b);
  model_buf_putc(&b, '\0');
  char line[160];
  snprintf(line, sizeof line, "\n%s ", series);
  const char *at = strstr(b.data, line);
  double v = at ? strtod(at + strlen(line), NULL) : -1;
  model_buf_destroy(&b);
  return v;
}

/* Why the worker is not ready, "" when it is; the store counts as just
 * answered, so only the producer's input can say no. */
static const char *not_ready_reason(void) {
  static char reason[128];
  metrics_store_answered();
  return metrics_ready(reason, sizeof reason) ? "" : reason;
}

/* Polls the producer until nothing is pending, or fails the test. */
static void poll_until_delivered(changes_t *c) {
  int64_t bound = bound_in(30000);
  while (changes_pending(c) && !bound_passed(bound)) changes_poll(c, 50);
  ck_assert_msg(!changes_pending(c), "events still pending after 30 s");
}

/* Polls the producer (the clock standing still) until its error counter
 * passes base: a delivery report said the delivery failed. */
static void poll_until_errors(changes_t *c, double base) {
  int64_t bound = bound_in(30000);
  while (metric(ERROR_EVENTS) <= base && !bound_passed(bound)) changes_poll(c, 50);
  ck_assert_msg(metric(ERROR_EVENTS) > base, "no failed delivery reported");
}

static bool produce(changes_t *c, const char *id, int64_t rev, const char *value) {
  return changes_produce(c, id, strlen(id), rev, value, strlen(value));
}

/* ---- stderr, captured to check what is logged ---- */

typedef struct capture {
  FILE *file;
  int saved;
} capture_t;

static capture_t capture_stderr(void) {
  capture_t cap = {tmpfile(), -1};
  ck_assert_ptr_nonnull(cap.file);
  fflush(stderr);
  cap.saved = dup(STDERR_FILENO);
  ck_assert_int_ge(dup2(fileno(cap.file), STDERR_FILENO), 0);
  return cap;
}

/* How many captured lines hold text; ends the capture. */
static int captured_lines_with(capture_t *cap, const char *text, const char *text2, int *count2) {
  fflush(stderr);
  dup2(cap->saved, STDERR_FILENO);
  close(cap->saved);
  rewind(cap->file);
  char line[4096];
  int n = 0;
  *count2 = 0;
  while (fgets(line, sizeof line, cap->file)) {
    if (strstr(line, text)) n++;
    if (strstr(line, text2)) (*count2)++;
  }
  fclose(cap->file);
  return n;
}

/* ---- the topic's messages, read back ---- */

typedef struct read_back {
  rd_kafka_t *rk;
  rd_kafka_message_t *m[8];
  int n;
} read_back_t;

static void read_topic(read_back_t *r, const char *topic, int want) {
  r->rk = client_new(RD_KAFKA_CONSUMER, (const char *[]){"bootstrap.servers", g_bootstrap, "group.id", "reader", NULL});
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(l, topic, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
  ck_assert_int_eq(rd_kafka_assign(r->rk, l), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_topic_partition_list_destroy(l);
  r->n = 0;
  int64_t bound = bound_in(30000);
  while (r->n < want && !bound_passed(bound)) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(r->rk, 100);
    if (m && !m->err) r->m[r->n++] = m;
    else if (m) rd_kafka_message_destroy(m);
  }
  ck_assert_int_eq(r->n, want);
}

static void read_done(read_back_t *r) {
  for (int i = 0; i < r->n; i++) rd_kafka_message_destroy(r->m[i]);
  rd_kafka_consumer_close(r->rk);
  rd_kafka_destroy(r->rk);
}

static void assert_event(const rd_kafka_message_t *m, const char *id, const char *rev, const void *value,
                         size_t len) {
  ck_assert_uint_eq(m->key_len, strlen(id));
  ck_assert(!memcmp(m->key, id, m->key_len));
  ck_assert_uint_eq(m->len, len);
  ck_assert(!memcmp(m->payload, value, len));
  rd_kafka_headers_t *h = NULL;
  ck_assert_int_eq(rd_kafka_message_headers(m, &h), RD_KAFKA_RESP_ERR_NO_ERROR);
  ck_assert_uint_eq(rd_kafka_header_cnt(h), 1);
  const void *v;
  size_t n;
  ck_assert_int_eq(rd_kafka_header_get_last(h, "x-rev", &v, &n), RD_KAFKA_RESP_ERR_NO_ERROR);
  ck_assert_uint_eq(n, strlen(rev));
  ck_assert(!memcmp(v, rev, n));
}

/* ---- the tests ---- */

/* Each event is one message: the _id as key, the value byte for byte (a
 * NUL and bytes above 0x7f included), x-rev in decimal; counted ok once
 * acknowledged, and nothing is pending after. */
START_TEST(events_arrive_byte_for_byte) {
  fixture_t f;
  fixture_up(&f);
  double ok = metric(OK_EVENTS), errors = metric(ERROR_EVENTS);
  static const char odd[] = {'{', '"', 'x', '"', ':', '"', '\xc3', '\xa9', '"', '}', '\0', '\n', '\xff'};
  const char *big = "{\"_id\":\"t1/a1\",\"rev\":9007199254740993}";
  ck_assert(produce(f.c, "t1/a1", 7, "{\"_id\":\"t1/a1\",\"rev\":7,\"changed\":[]}"));
  ck_assert(changes_produce(f.c, "t2/a\xc3\xa9", 6, 1, odd, sizeof odd));
  ck_assert(produce(f.c, "t1/a1", 9007199254740993, big));
  /* Held until acknowledged: counted, their bytes too. */
  ck_assert(changes_pending(f.c));
  ck_assert_uint_eq(changes_bytes(f.c), 5 + strlen("{\"_id\":\"t1/a1\",\"rev\":7,\"changed\":[]}") + 6 + sizeof odd +
                                            5 + strlen(big));
  ck_assert_double_eq(metric(PENDING), 3);
  poll_until_delivered(f.c);
  ck_assert_uint_eq(changes_bytes(f.c), 0);
  ck_assert_double_eq(metric(PENDING), 0);
  ck_assert_double_eq(metric(OLDEST), 0);
  ck_assert_double_eq(metric(OK_EVENTS), ok + 3);
  ck_assert_double_eq(metric(ERROR_EVENTS), errors);
  ck_assert(!changes_failing(f.c));
  read_back_t r;
  read_topic(&r, f.topic, 3);
  assert_event(r.m[0], "t1/a1", "7", "{\"_id\":\"t1/a1\",\"rev\":7,\"changed\":[]}",
               strlen("{\"_id\":\"t1/a1\",\"rev\":7,\"changed\":[]}"));
  assert_event(r.m[1], "t2/a\xc3\xa9", "1", odd, sizeof odd);
  assert_event(r.m[2], "t1/a1", "9007199254740993", big, strlen(big));
  read_done(&r);
  fixture_down(&f);
}
END_TEST

/* Tickets without failures. Delivery reports are served only inside the
 * producer's polls, so between polls nothing is acknowledged: the answers
 * before the first poll are exact. */
START_TEST(tickets_gate_the_acked_seq) {
  fixture_t f;
  fixture_up(&f);
  ck_assert_uint_eq(changes_acked_seq(f.c, 42), 42); /* nothing ticketed */
  changes_ticket(f.c, 5);                             /* no events: acknowledged at once */
  ck_assert_uint_eq(changes_acked_seq(f.c, 42), 42);
  ck_assert(produce(f.c, "t/a", 1, "a"));
  ck_assert_uint_eq(changes_acked_seq(f.c, 42), 42); /* an event without a ticket holds nothing back */
  changes_ticket(f.c, 10);
  ck_assert(produce(f.c, "t/b", 1, "b"));
  ck_assert(produce(f.c, "t/c", 1, "c"));
  changes_ticket(f.c, 20);
  changes_ticket(f.c, 25); /* no events, behind outstanding ones */
  ck_assert_uint_eq(changes_acked_seq(f.c, 42), 5);
  ck_assert_uint_eq(changes_acked_seq(f.c, 3), 3); /* never more than durable */
  poll_until_delivered(f.c);
  ck_assert_uint_eq(changes_acked_seq(f.c, 42), 42); /* none outstanding */
  ck_assert_uint_eq(changes_acked_seq(f.c, 24), 24);

  /* A ticket of the same seq as the last completed one holds that seq back:
   * "every ticket at or below S" includes it. Smaller seqs count as the
   * last one's. */
  ck_assert(produce(f.c, "t/d", 2, "d"));
  changes_ticket(f.c, 25);
  ck_assert_uint_eq(changes_acked_seq(f.c, 42), 20);
  ck_assert(produce(f.c, "t/e", 2, "e"));
  changes_ticket(f.c, 7); /* counts as 25 */
  ck_assert_uint_eq(changes_acked_seq(f.c, 42), 20);
  poll_until_delivered(f.c);
  ck_assert_uint_eq(changes_acked_seq(f.c, 42), 42);
  /* The next outstanding ticket answers the last completed one's seq. */
  ck_assert(produce(f.c, "t/f", 3, "f"));
  changes_ticket(f.c, 30);
  ck_assert_uint_eq(changes_acked_seq(f.c, 42), 25);
  poll_until_delivered(f.c);
  fixture_down(&f);
}
END_TEST

/* The change topic refuses the first produce requests (an error librdkafka
 * does not retry itself): the failures are counted, the producer is failing
 * and the worker not ready (one warning, however many attempts), the
 * tickets of the failed events hold acked_seq back however long it takes,
 * nothing is produced again before the retry delay; once the retries are
 * delivered, every ticket completes and the producer works again, which is
 * logged. */
START_TEST(failed_deliveries_are_retried_and_hold_tickets) {
  fixture_t f;
  fixture_up(&f);
  double errors = metric(ERROR_EVENTS), ok = metric(OK_EVENTS);
  ck_assert_str_eq(not_ready_reason(), "");
  capture_t cap = capture_stderr();
  rd_kafka_mock_push_request_errors(g_mc, API_PRODUCE, 1, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
  changes_ticket(f.c, 5);
  ck_assert(produce(f.c, "t/a", 1, "a"));
  ck_assert(produce(f.c, "t/b", 1, "b"));
  changes_ticket(f.c, 20);
  poll_until_errors(f.c, errors);
  ck_assert(changes_failing(f.c));
  ck_assert_str_eq(not_ready_reason(), NOT_READY);
  ck_assert(changes_pending(f.c));
  /* A new event waits behind the failed ones, in order. */
  ck_assert(produce(f.c, "t/c", 1, "c"));
  changes_ticket(f.c, 30);
  /* The clock stands still: nothing is produced again (a produce to the
   * topic in its error state would be refused and counted), nothing
   * completes. */
  double failed = metric(ERROR_EVENTS);
  for (int64_t still = bound_in(500); !bound_passed(still) && metric(ERROR_EVENTS) == failed;) changes_poll(f.c, 20);
  ck_assert_double_eq(metric(ERROR_EVENTS), failed);
  ck_assert_uint_eq(changes_acked_seq(f.c, 100), 5);
  ck_assert(changes_pending(f.c));
  /* Each retry round after the delay; the topic refuses two more requests. */
  rd_kafka_mock_push_request_errors(g_mc, API_PRODUCE, 2, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
                                    RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
  int64_t bound = bound_in(30000);
  while (changes_pending(f.c) && !bound_passed(bound)) {
    ck_assert_uint_le(changes_acked_seq(f.c, 100), 20); /* 30 waits for its own event */
    clock_manual_advance(&g_clock, CHANGES_RETRY_MS);
    for (int i = 0; i < 4; i++) changes_poll(f.c, 25);
  }
  ck_assert(!changes_pending(f.c));
  ck_assert_uint_eq(changes_acked_seq(f.c, 100), 100);
  ck_assert(!changes_failing(f.c));
  ck_assert_str_eq(not_ready_reason(), "");
  ck_assert_double_eq(metric(OK_EVENTS), ok + 3);
  ck_assert(metric(ERROR_EVENTS) >= errors + 2);
  int works = 0;
  int warned = captured_lines_with(&cap, "change-event delivery failing", "change-event delivery works again", &works);
  ck_assert_int_eq(warned, 1); /* within the warning interval: one line */
  ck_assert_int_eq(works, 1);
  read_back_t r;
  read_topic(&r, f.topic, 3);
  assert_event(r.m[2], "t/c", "1", "c", 1);
  read_done(&r);
  fixture_down(&f);
}
END_TEST

/* The broker does not answer: no error is reported, but once events have
 * been out for CHANGES_STALL_MS of the producer's clock it is failing (not
 * ready), with nothing counted as an error; the oldest pending age reads
 * the producer's clock. The broker comes back: delivered, working. */
START_TEST(a_stall_is_failing_and_ages) {
  fixture_t f;
  fixture_up(&f);
  ck_assert(produce(f.c, "t/warm", 1, "up")); /* the producer knows the topic's leader */
  poll_until_delivered(f.c);
  double errors = metric(ERROR_EVENTS);
  ck_assert_int_eq(rd_kafka_mock_broker_set_down(g_mc, 1), RD_KAFKA_RESP_ERR_NO_ERROR);
  ck_assert(produce(f.c, "t/a", 2, "a"));
  clock_manual_advance(&g_clock, 1500);
  ck_assert(produce(f.c, "t/b", 2, "b"));
  changes_ticket(f.c, 50);
  changes_poll(f.c, 10);
  ck_assert(!changes_failing(f.c));
  ck_assert_double_eq(metric(PENDING), 2);
  ck_assert_double_eq(metric(OLDEST), 1.5);
  clock_manual_advance(&g_clock, CHANGES_STALL_MS);
  ck_assert_double_eq(metric(OLDEST), 6.5); /* read at the scrape: it grows without a poll */
  changes_poll(f.c, 10);
  ck_assert(changes_failing(f.c));
  ck_assert_str_eq(not_ready_reason(), NOT_READY);
  ck_assert_uint_eq(changes_acked_seq(f.c, 100), 0);
  ck_assert_int_eq(rd_kafka_mock_broker_set_up(g_mc, 1), RD_KAFKA_RESP_ERR_NO_ERROR);
  poll_until_delivered(f.c);
  ck_assert(!changes_failing(f.c));
  ck_assert_str_eq(not_ready_reason(), "");
  ck_assert_double_eq(metric(ERROR_EVENTS), errors); /* slow, not failed */
  ck_assert_double_eq(metric(OLDEST), 0);
  ck_assert_uint_eq(changes_acked_seq(f.c, 100), 100);
  fixture_down(&f);
}
END_TEST

/* An event larger than the producer allows (message.max.bytes) can never be
 * delivered: false, logged, nothing kept; the next event goes as usual. */
START_TEST(an_event_too_large_is_refused) {
  fixture_t f;
  fixture_up(&f);
  size_t len = 200000;
  char *value = malloc(len);
  memset(value, 'x', len);
  ck_assert(!changes_produce(f.c, "t/a", 3, 1, value, len));
  free(value);
  ck_assert(!changes_pending(f.c));
  ck_assert_uint_eq(changes_bytes(f.c), 0);
  ck_assert(!changes_failing(f.c));
  ck_assert(produce(f.c, "t/b", 1, "b"));
  poll_until_delivered(f.c);
  fixture_down(&f);
}
END_TEST

/* The announcer (announcer.h) turns a write into its event; a document
 * larger than the producer can carry (message.max.bytes: 100,000 here) is
 * announced without it, as with changes.include_document = false, instead
 * of never; a small one with it. */
START_TEST(a_document_past_the_producer_limit_is_announced_without_it) {
  fixture_t f;
  fixture_up(&f);
  char errstr[256];
  announcer_t *a = announcer_new(f.cfg, &g_clock.source, errstr, sizeof errstr); /* a producer of its own */
  ck_assert_msg(a, "%s", errstr);
  model_aggregate_t *big = model_aggregate_new("t", 1, "big", 3), *small = model_aggregate_new("t", 1, "s", 1);
  fx_fill_grades(big, "big", 150000); /* students with 4 KiB of feedback each: past 100,000 bytes */
  model_command_t c;
  fx_roster(&c, "t", "s", "s1", 1, "c1", true);
  model_aggregate_apply(small, &c);
  model_changes_t none = MODEL_CHANGES_INIT;
  announcer_announce(a, &(batch_written_t){big, 3, 1790000000000, &none, true});
  announcer_announce(a, &(batch_written_t){small, 1, 1790000000000, &none, true});
  ck_assert(announcer_ok(a));
  ck_assert_uint_eq(a->events, 2);
  ck_assert_uint_eq(a->documents_left_out, 1);
  poll_until_delivered(a->changes);
  read_back_t r;
  read_topic(&r, f.topic, 2);
  model_buf_t want = MODEL_BUF_INIT;
  model_change_event_json(big, 3, 1790000000000, &none, false, &want);
  assert_event(r.m[0], "t/big", "3", want.data, want.len);
  model_buf_clear(&want);
  model_change_event_json(small, 1, 1790000000000, &none, true, &want);
  assert_event(r.m[1], "t/s", "1", want.data, want.len);
  read_done(&r);
  model_buf_destroy(&want);
  model_aggregate_destroy(big);
  model_aggregate_destroy(small);
  announcer_destroy(a);
  fixture_down(&f);
}
END_TEST

/* destroy(NULL) is safe; destroying with events pending drops them and
 * clears the gauges and the readiness input. */
START_TEST(destroy_drops_what_is_pending) {
  changes_destroy(NULL);
  fixture_t f;
  fixture_up(&f);
  ck_assert_int_eq(rd_kafka_mock_broker_set_down(g_mc, 1), RD_KAFKA_RESP_ERR_NO_ERROR);
  ck_assert(produce(f.c, "t/a", 1, "a"));
  clock_manual_advance(&g_clock, CHANGES_STALL_MS);
  changes_poll(f.c, 10);
  ck_assert(changes_failing(f.c));
  fixture_down(&f);
  ck_assert_int_eq(rd_kafka_mock_broker_set_up(g_mc, 1), RD_KAFKA_RESP_ERR_NO_ERROR);
  ck_assert_double_eq(metric(PENDING), 0);
  ck_assert_double_eq(metric(OLDEST), 0);
  ck_assert_str_eq(not_ready_reason(), "");
}
END_TEST

Suite *test_suite(void) {
  const TTest *const tests[] = {events_arrive_byte_for_byte,
                                tickets_gate_the_acked_seq,
                                failed_deliveries_are_retried_and_hold_tickets,
                                a_stall_is_failing_and_ages,
                                an_event_too_large_is_refused,
                                a_document_past_the_producer_limit_is_announced_without_it,
                                destroy_drops_what_is_pending};
  Suite *s = suite_create("changes_producer");
  TCase *tc = tcase_create("mock");
  tcase_set_timeout(tc, 120);
  tcase_add_unchecked_fixture(tc, cluster_up, cluster_down);
  for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) tcase_add_test(tc, tests[i]);
  suite_add_tcase(s, tc);
  return s;
}
