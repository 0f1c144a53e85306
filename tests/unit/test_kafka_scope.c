/* rdkafka.* properties reach only the clients that use them
 * (worker/source/kafka.h): the scopes read from the linked librdkafka, the
 * configurations kafka_conf_new builds for each client, and the proof
 * that matters to an operator: creating the dead-letter producer with a
 * consumer-only property set logs no warning (while librdkafka does warn
 * when such a property is put on a producer directly). Also: a broker
 * failure is logged once, not twice (log_cb and error_cb). No broker needed. */
#include <check.h>
#include <fcntl.h>
#include <librdkafka/rdkafka.h>
#include <mongoc/mongoc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "config/config.h"
#include "source/kafka.h"
#include "base/log.h"

START_TEST(scopes_from_librdkafka) {
  static const struct {
    const char *name;
    kafka_scope_t scope;
  } scopes[] = {
      {"auto.offset.reset", KAFKA_SCOPE_CONSUMER}, /* topic-level */
      {"partition.assignment.strategy", KAFKA_SCOPE_CONSUMER},
      {"queued.min.messages", KAFKA_SCOPE_CONSUMER},
      {"linger.ms", KAFKA_SCOPE_PRODUCER},
      {"queue.buffering.max.ms", KAFKA_SCOPE_PRODUCER}, /* its alias */
      {"message.timeout.ms", KAFKA_SCOPE_PRODUCER},     /* topic-level */
      {"enable.idempotence", KAFKA_SCOPE_PRODUCER},
      {"security.protocol", KAFKA_SCOPE_ANY},
      {"sasl.password", KAFKA_SCOPE_ANY},
      {"client.id", KAFKA_SCOPE_ANY},
      {"no.such.property", KAFKA_SCOPE_ANY},
  };
  for (size_t i = 0; i < sizeof scopes / sizeof scopes[0]; i++)
    ck_assert_msg(kafka_property_scope(scopes[i].name) == scopes[i].scope, "%s: scope %d, want %d", scopes[i].name,
                  (int)kafka_property_scope(scopes[i].name), (int)scopes[i].scope);

  static const struct {
    kafka_scope_t scope;
    kafka_client_t client;
    bool applies;
  } applies[] = {
      {KAFKA_SCOPE_ANY, KAFKA_DLQ_PRODUCER, true},          {KAFKA_SCOPE_ANY, KAFKA_RUN_CONSUMER, true},
      {KAFKA_SCOPE_CONSUMER, KAFKA_RUN_CONSUMER, true},     {KAFKA_SCOPE_CONSUMER, KAFKA_REPLAY_CONSUMER, true},
      {KAFKA_SCOPE_CONSUMER, KAFKA_DLQ_PRODUCER, false},    {KAFKA_SCOPE_PRODUCER, KAFKA_DLQ_PRODUCER, true},
      {KAFKA_SCOPE_PRODUCER, KAFKA_RUN_CONSUMER, false},    {KAFKA_SCOPE_PRODUCER, KAFKA_REPLAY_CONSUMER, false},
      {KAFKA_SCOPE_PRODUCER, KAFKA_CHANGE_PRODUCER, true},  {KAFKA_SCOPE_CONSUMER, KAFKA_CHANGE_PRODUCER, false},
  };
  for (size_t i = 0; i < sizeof applies / sizeof applies[0]; i++)
    ck_assert_msg(kafka_scope_applies(applies[i].scope, applies[i].client) == applies[i].applies,
                  "scope %d, client %d: want %d", (int)applies[i].scope, (int)applies[i].client, applies[i].applies);
}
END_TEST

static config_t *load(char *const *sets, size_t n) {
  config_t *cfg = config_new();
  config_error_t err;
  ck_assert_msg(config_load(cfg, NULL, sets, n, &err), "%s", err.message);
  return cfg;
}

/* A global property, or a topic-level one (librdkafka keeps those in the
 * default topic configuration; unset there means librdkafka's default). */
static void get(rd_kafka_conf_t *conf, const char *name, char *out, size_t size) {
  size_t n = size;
  if (rd_kafka_conf_get(conf, name, out, &n) == RD_KAFKA_CONF_OK) return;
  rd_kafka_topic_conf_t *tc = rd_kafka_conf_get_default_topic_conf(conf);
  rd_kafka_topic_conf_t *fresh = tc ? NULL : rd_kafka_topic_conf_new();
  n = size;
  ck_assert_msg(rd_kafka_topic_conf_get(tc ? tc : fresh, name, out, &n) == RD_KAFKA_CONF_OK, "no property %s", name);
  if (fresh) rd_kafka_topic_conf_destroy(fresh);
}

START_TEST(each_client_gets_its_properties) {
  char *sets[] = {"kafka.rdkafka.auto.offset.reset=error", "kafka.rdkafka.linger.ms=77",
                  "kafka.rdkafka.client.rack=rack-7", "kafka.rdkafka.fetch.wait.max.ms=123"};
  config_t *cfg = load(sets, 4);
  char errstr[256], v[128];
  rd_kafka_conf_t *consumer = kafka_conf_new(cfg, KAFKA_RUN_CONSUMER, NULL, errstr, sizeof errstr);
  rd_kafka_conf_t *replay = kafka_conf_new(cfg, KAFKA_REPLAY_CONSUMER, NULL, errstr, sizeof errstr);
  rd_kafka_conf_t *producer = kafka_conf_new(cfg, KAFKA_DLQ_PRODUCER, NULL, errstr, sizeof errstr);
  ck_assert(consumer && replay && producer);

  rd_kafka_conf_t *pristine = rd_kafka_conf_new();
  char def_linger[64], def_fetch[64], def_reset[64];
  get(pristine, "linger.ms", def_linger, sizeof def_linger);
  get(pristine, "fetch.wait.max.ms", def_fetch, sizeof def_fetch);
  get(pristine, "auto.offset.reset", def_reset, sizeof def_reset);
  rd_kafka_conf_destroy(pristine);
  ck_assert_str_ne(def_linger, "77");
  ck_assert_str_ne(def_fetch, "123");
  ck_assert_str_ne(def_reset, "error");

  rd_kafka_conf_t *consumers[] = {consumer, replay};
  for (int i = 0; i < 2; i++) {
    get(consumers[i], "fetch.wait.max.ms", v, sizeof v);
    ck_assert_str_eq(v, "123");
    get(consumers[i], "client.rack", v, sizeof v);
    ck_assert_str_eq(v, "rack-7");
    get(consumers[i], "linger.ms", v, sizeof v);
    ck_assert_str_eq(v, def_linger); /* a producer property: left out */
  }
  get(consumer, "auto.offset.reset", v, sizeof v);
  ck_assert_str_eq(v, "error");

  get(producer, "linger.ms", v, sizeof v);
  ck_assert_str_eq(v, "77");
  get(producer, "client.rack", v, sizeof v);
  ck_assert_str_eq(v, "rack-7");
  get(producer, "fetch.wait.max.ms", v, sizeof v);
  ck_assert_str_eq(v, def_fetch); /* consumer properties: left out */
  get(producer, "auto.offset.reset", v, sizeof v);
  ck_assert_str_eq(v, def_reset);

  /* Topics are never auto-created: no client asks the broker to create one. */
  rd_kafka_conf_t *all[] = {consumer, replay, producer};
  for (int i = 0; i < 3; i++) {
    get(all[i], "allow.auto.create.topics", v, sizeof v);
    ck_assert_str_eq(v, "false");
  }

  rd_kafka_conf_destroy(consumer);
  rd_kafka_conf_destroy(replay);
  rd_kafka_conf_destroy(producer);
  config_destroy(cfg);
}
END_TEST

/* With the classic protocol the run consumer's assignment strategy is eager
 * (roundrobin: a join hands every partition over written and committed),
 * and an operator can still choose another. */
START_TEST(assignment_strategy_default_and_override) {
  char errstr[256], v[128];
  char *classic[] = {"kafka.group_protocol=classic"};
  config_t *cfg = load(classic, 1);
  rd_kafka_conf_t *run = kafka_conf_new(cfg, KAFKA_RUN_CONSUMER, NULL, errstr, sizeof errstr);
  ck_assert_msg(run, "%s", errstr);
  get(run, "partition.assignment.strategy", v, sizeof v);
  ck_assert_str_eq(v, "roundrobin");
  rd_kafka_conf_destroy(run);
  config_destroy(cfg);

  char *sets[] = {"kafka.group_protocol=classic", "kafka.rdkafka.partition.assignment.strategy=cooperative-sticky"};
  cfg = load(sets, 2);
  run = kafka_conf_new(cfg, KAFKA_RUN_CONSUMER, NULL, errstr, sizeof errstr);
  ck_assert_msg(run, "%s", errstr);
  get(run, "partition.assignment.strategy", v, sizeof v);
  ck_assert_str_eq(v, "cooperative-sticky");
  rd_kafka_conf_destroy(run);
  config_destroy(cfg);
}
END_TEST

/* kafka.group_protocol reaches the run consumer as group.protocol. With
 * `consumer` the broker owns the group's timing and assignment: the
 * classic-only defaults stay unset, and librdkafka accepts the consumer
 * (it refuses one given session.timeout.ms or an assignment strategy);
 * those given as kafka.rdkafka.* keys are configuration errors that name
 * where the setting lives. The replay consumer joins no group: it is left
 * alone. */
START_TEST(group_protocol_chooses_the_defaults) {
  char errstr[256], v[128], pristine_strategy[128], pristine_session[64], pristine_protocol[64];
  rd_kafka_conf_t *pristine = rd_kafka_conf_new();
  get(pristine, "group.protocol", pristine_protocol, sizeof pristine_protocol);
  get(pristine, "partition.assignment.strategy", pristine_strategy, sizeof pristine_strategy);
  get(pristine, "session.timeout.ms", pristine_session, sizeof pristine_session);
  rd_kafka_conf_destroy(pristine);
  const char *forced[] = {"group.id", "g", NULL};
  static const struct {
    const char *set, *protocol, *strategy, *session;
  } cases[] = {
      {"kafka.group_protocol=consumer", "consumer", NULL, NULL},
      {"kafka.group_protocol=classic", "classic", "roundrobin", "45000"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *sets[] = {"kafka.brokers=127.0.0.1:1", (char *)cases[i].set};
    config_t *cfg = load(sets, 2);
    rd_kafka_conf_t *run = kafka_conf_new(cfg, KAFKA_RUN_CONSUMER, forced, errstr, sizeof errstr);
    ck_assert_msg(run, "%s", errstr);
    get(run, "group.protocol", v, sizeof v);
    ck_assert_str_eq(v, cases[i].protocol);
    get(run, "partition.assignment.strategy", v, sizeof v);
    ck_assert_str_eq(v, cases[i].strategy ? cases[i].strategy : pristine_strategy);
    get(run, "session.timeout.ms", v, sizeof v);
    ck_assert_str_eq(v, cases[i].session ? cases[i].session : pristine_session);
    rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_CONSUMER, run, errstr, sizeof errstr);
    ck_assert_msg(rk, "%s: librdkafka refuses the consumer: %s", cases[i].set, errstr);
    rd_kafka_destroy(rk);
    rd_kafka_conf_t *replay = kafka_conf_new(cfg, KAFKA_REPLAY_CONSUMER, NULL, errstr, sizeof errstr);
    ck_assert_msg(replay, "%s", errstr);
    get(replay, "group.protocol", v, sizeof v);
    ck_assert_str_eq(v, pristine_protocol);
    rd_kafka_conf_destroy(replay);
    config_destroy(cfg);
  }

  static const struct {
    const char *set, *where;
  } refused[] = {
      {"kafka.rdkafka.session.timeout.ms=12000", "group.consumer.session.timeout.ms"},
      {"kafka.rdkafka.heartbeat.interval.ms=1000", "group.consumer.heartbeat.interval.ms"},
      {"kafka.rdkafka.partition.assignment.strategy=range", "kafka.group_protocol = classic"},
      {"kafka.rdkafka.group.protocol=classic", "cannot be passed through"},
  };
  for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
    char *sets[] = {"kafka.group_protocol=consumer", (char *)refused[i].set};
    config_t *cfg = config_new();
    config_error_t err;
    ck_assert_msg(!config_load(cfg, NULL, sets, 2, &err), "%s accepted", refused[i].set);
    ck_assert_msg(strstr(err.message, refused[i].where), "%s: %s", refused[i].set, err.message);
    config_destroy(cfg);
    if (i == 3) continue;
    /* The same key with the classic protocol is the operator's to set. */
    sets[0] = "kafka.group_protocol=classic";
    cfg = load(sets, 2);
    config_destroy(cfg);
  }
}
END_TEST

/* --- what the clients log, captured from stderr ------------------------------ */

/* A client of that type on conf (which it takes), or the test fails. */
static rd_kafka_t *client_start(rd_kafka_conf_t *conf, rd_kafka_type_t type) {
  char errstr[256];
  ck_assert(conf);
  rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
  ck_assert_msg(rk, "%s", errstr);
  return rk;
}

static char g_path[] = "/tmp/test_kafka_scope.XXXXXX";
static int g_saved = -1;

static void capture_begin(void) {
  int fd = mkstemp(g_path);
  ck_assert_int_ge(fd, 0);
  fflush(stderr);
  g_saved = dup(2);
  dup2(fd, 2);
  close(fd);
}

/* The captured text; caller frees. */
static char *capture_end(void) {
  fflush(stderr);
  dup2(g_saved, 2);
  close(g_saved);
  FILE *f = fopen(g_path, "r");
  ck_assert(f);
  char *text = calloc(1, 1 << 20);
  size_t n = fread(text, 1, (1 << 20) - 1, f);
  text[n] = '\0';
  fclose(f);
  unlink(g_path);
  memcpy(g_path + strlen(g_path) - 6, "XXXXXX", 6);
  return text;
}

START_TEST(dead_letter_producer_does_not_warn_about_consumer_properties) {
  log_setup(LOG_LEVEL_DEBUG, LOG_FORMAT_JSON);
  char *sets[] = {"kafka.brokers=127.0.0.1:1", "kafka.rdkafka.auto.offset.reset=latest",
                  "kafka.rdkafka.session.timeout.ms=12000", "kafka.rdkafka.linger.ms=20",
                  "kafka.group_protocol=classic"}; /* session.timeout.ms is a client setting with it */
  config_t *cfg = load(sets, 5);
  char errstr[256];

  /* Control: put directly on a producer, librdkafka warns (so the capture works). */
  capture_begin();
  rd_kafka_conf_t *conf = kafka_conf_new(cfg, KAFKA_DLQ_PRODUCER, NULL, errstr, sizeof errstr);
  ck_assert(conf);
  ck_assert(kafka_conf_set(conf, "auto.offset.reset", "latest", errstr, sizeof errstr));
  rd_kafka_destroy(client_start(conf, RD_KAFKA_PRODUCER));
  char *text = capture_end();
  ck_assert_msg(strstr(text, "auto.offset.reset"), "librdkafka does not warn: the test proves nothing:\n%s", text);
  free(text);

  /* Through kafka_conf_new alone: no word about the consumer's properties. */
  capture_begin();
  conf = kafka_conf_new(cfg, KAFKA_DLQ_PRODUCER, NULL, errstr, sizeof errstr);
  rd_kafka_destroy(client_start(conf, RD_KAFKA_PRODUCER));
  /* And the consumer: no word about the producer's. */
  conf = kafka_conf_new(cfg, KAFKA_RUN_CONSUMER, (const char *[]){"group.id", "g", NULL}, errstr, sizeof errstr);
  rd_kafka_destroy(client_start(conf, RD_KAFKA_CONSUMER));
  text = capture_end();
  ck_assert_msg(!strstr(text, "auto.offset.reset") && !strstr(text, "session.timeout.ms") &&
                    !strstr(text, "linger.ms") && !strstr(text, "CONFWARN"),
                "a client warned about a property meant for the other:\n%s", text);
  free(text);
  config_destroy(cfg);
}
END_TEST

/* Counts the lines of text that contain needle. */
static int count_lines(const char *text, const char *needle) {
  int n = 0;
  for (const char *line = text; line && *line;) {
    const char *end = strchr(line, '\n');
    size_t len = end ? (size_t)(end - line) : strlen(line);
    const char *hit = strstr(line, needle);
    if (hit && hit < line + len) n++;
    line = end ? end + 1 : NULL;
  }
  return n;
}

START_TEST(broker_failure_logged_once) {
  log_setup(LOG_LEVEL_INFO, LOG_FORMAT_JSON);
  char *sets[] = {"kafka.brokers=127.0.0.1:1"};
  config_t *cfg = load(sets, 1);
  char errstr[256];
  capture_begin();
  rd_kafka_conf_t *conf = kafka_conf_new(cfg, KAFKA_DLQ_PRODUCER, NULL, errstr, sizeof errstr);
  rd_kafka_t *rk = client_start(conf, RD_KAFKA_PRODUCER);
  /* Nothing listens on port 1: wait (polling, which serves error_cb) until
   * the connection failure has been reported. */
  char *text = NULL;
  int64_t deadline = clock_mono_ms() + 30000;
  for (;;) {
    rd_kafka_poll(rk, 100);
    fflush(stderr);
    FILE *f = fopen(g_path, "r");
    ck_assert(f);
    char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    if (strstr(buf, "\"error\":\"_TRANSPORT\"") || clock_mono_ms() > deadline) break;
  }
  rd_kafka_destroy(rk);
  text = capture_end();
  ck_assert_msg(strstr(text, "\"error\":\"_TRANSPORT\""), "no connection failure reported:\n%s", text);
  /* The first attempt's line ("... failed: Connection refused (after Nms in
   * state CONNECT)") once, not also as a FAIL line without the error code. */
  ck_assert_msg(count_lines(text, "Connection refused (after") == count_lines(text, "\"error\":\"_TRANSPORT\""),
                "a broker failure is logged twice:\n%s", text);
  ck_assert_msg(!strstr(text, "\"facility\":\"FAIL\""), "FAIL lines logged next to error_cb's:\n%s", text);
  free(text);
  config_destroy(cfg);
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("kafka_scope");
  TCase *tc = tcase_create("kafka_scope");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, scopes_from_librdkafka);
  tcase_add_test(tc, each_client_gets_its_properties);
  tcase_add_test(tc, assignment_strategy_default_and_override);
  tcase_add_test(tc, group_protocol_chooses_the_defaults);
  tcase_add_test(tc, dead_letter_producer_does_not_warn_about_consumer_properties);
  tcase_add_test(tc, broker_failure_logged_once);
  suite_add_tcase(s, tc);
  return s;
}
