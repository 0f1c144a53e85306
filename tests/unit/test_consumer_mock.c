/* The live consumer (worker/source/consumer.c) against librdkafka's mock cluster
 * and the in-memory store (mem_store.h): fast, deterministic checks of the
 * delivery rules of docs/COMMANDS.md and docs/GUARANTEES.md that need no real service:
 *  - offsets are committed up to the end only once every effect is durable,
 *    and the documents equal a direct merge of the valid commands;
 *  - transient store errors and failed offset commits are retried;
 *  - rejected commands reach the dead-letter topic with their headers, a
 *    late reject (a command that fits its aggregate's overlay but not the
 *    stored document loaded after it) too;
 *  - `run` and `replay` into the store reject the same commands late;
 *  - a fatal store error stops the worker with nothing committed;
 *  - with the first write held in the store (the pipelined writer):
 *    consumption goes on and nothing is committed meanwhile; SIGTERM waits
 *    for the flush and commits everything;
 *  - change events (docs/CHANGES.md): one per write, and the fold of the
 *    change topic is the store; while the change topic is down the writes
 *    land but nothing commits and the worker is not ready; commands read
 *    again announce their aggregates' stored revs without writing, and a
 *    command past the partition's end at assignment does not.
 * The worker runs on a manual clock (clock.h) that the tests move: where
 * the worker waits out a duration (linger, backoffs, the commit interval,
 * the dead-letter stall), a test advances the clock one tick at a time and
 * waits until the worker has looked at it. Nothing sleeps; what the mock
 * cluster does over its sockets is waited for as a condition (committed
 * offsets, metrics), within a bound of real time that only fails a test
 * that would otherwise hang.
 * Revocation during a flush is tested against the real broker
 * (tests/integration/test_worker_pipeline.py): librdkafka 2.0's mock group
 * coordinator fences the old member when a second one joins (cooperative:
 * ILLEGAL_GENERATION, partitions lost) or refuses commits in the revocation
 * callback (eager: REBALANCE_IN_PROGRESS), so the hand-over cannot be
 * observed here.
 * The real broker and store are exercised by tests/integration. */
#include <check.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "../tools/cmdgen.h"
#include "base/clock.h"
#include "base/signals.h"
#include "codec.h"
#include "config/config.h"
#include "source/consumer.h"
#include "source/deadletter.h"
#include "mem_store.h"
#include "metrics/metrics.h"
#include "model_fixtures.h"
#include "replay/replay_store.h"
#include "store/store.h"

#define PARTS 3
#define API_OFFSET_COMMIT 8 /* Kafka protocol ApiKey of OffsetCommit */
/* Broker 1 leads the commands' partitions and coordinates the groups;
 * broker 2 leads the dead-letter topic and the change topic, so that a test
 * can take them away alone (a test that takes one away produces nothing to
 * the other). */
#define BROKER_MAIN 1
#define BROKER_DLQ 2
#define BROKER_CHANGES BROKER_DLQ
/* How far the tests move the worker's clock at a time: one turn of its
 * poll (consumer.c waits at most 100 ms for messages). */
#define TICK_MS 100

static rd_kafka_t *g_mock_rk;
static rd_kafka_mock_cluster_t *g_mc;
static char *g_bootstrap; /* a copy: the cluster's own string may move */
static int g_seq;
static clock_manual_t g_clock; /* the worker's: read by its threads, moved by the test's */

static void mock_up(void) {
  char errstr[256];
  clock_manual_init(&g_clock, 1000000, 1790000000000);
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  ck_assert(rd_kafka_conf_set(conf, "log_level", "3", errstr, sizeof errstr) == RD_KAFKA_CONF_OK);
  g_mock_rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  ck_assert_msg(g_mock_rk, "%s", errstr);
  g_mc = rd_kafka_mock_cluster_new(g_mock_rk, 2);
  ck_assert_ptr_nonnull(g_mc);
  g_bootstrap = strdup(rd_kafka_mock_cluster_bootstraps(g_mc));
}

static void mock_down(void) {
  free(g_bootstrap);
  rd_kafka_mock_cluster_destroy(g_mc);
  rd_kafka_destroy(g_mock_rk);
}

/* A client of the mock cluster, with one more property (key NULL: none). */
static rd_kafka_t *client_set(rd_kafka_type_t type, const char *group, const char *key, const char *value) {
  char errstr[256];
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  ck_assert(rd_kafka_conf_set(conf, "bootstrap.servers", g_bootstrap, errstr, sizeof errstr) == RD_KAFKA_CONF_OK);
  if (key) ck_assert_msg(rd_kafka_conf_set(conf, key, value, errstr, sizeof errstr) == RD_KAFKA_CONF_OK, "%s", errstr);
  if (group) { /* a reader only: it must never commit for the group it inspects */
    ck_assert(rd_kafka_conf_set(conf, "group.id", group, errstr, sizeof errstr) == RD_KAFKA_CONF_OK);
    ck_assert(rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof errstr) == RD_KAFKA_CONF_OK);
  }
  rd_kafka_t *rk = rd_kafka_new(type, conf, errstr, sizeof errstr);
  ck_assert_msg(rk, "%s", errstr);
  return rk;
}

static rd_kafka_t *client(rd_kafka_type_t type, const char *group) { return client_set(type, group, NULL, NULL); }

/* --- a scenario: a generated stream in a fresh topic ------------------------ */

typedef struct scenario {
  char topic[64], dlq[72], group[64];
  char changes[80]; /* the change topic, "" for none (scenario_announce) */
  char set[96];     /* one more setting for the worker, "" for none */
  int64_t ends[PARTS];
  size_t valid, invalid;
  model_aggregate_t *expected[64];
  size_t nexpected;
} scenario_t;

/* scenario_setup produces one message per batch, so that a fetch with a
 * small max.partition.fetch.bytes holds a few (fixture_up_spread). */
static bool g_one_per_batch;

static model_aggregate_t **expected_slot(scenario_t *s, const model_command_t *c) {
  for (size_t i = 0; i < s->nexpected; i++) {
    size_t tl, al;
    const char *t = model_aggregate_tenant(s->expected[i], &tl), *a = model_aggregate_assignment(s->expected[i], &al);
    if (tl == c->tenant_len && al == c->assignment_len && !memcmp(t, c->tenant, tl) &&
        !memcmp(a, c->assignment, al))
      return &s->expected[i];
  }
  ck_assert_uint_lt(s->nexpected, 64);
  s->expected[s->nexpected] = model_aggregate_new(c->tenant, c->tenant_len, c->assignment, c->assignment_len);
  return &s->expected[s->nexpected++];
}

/* Creates the topics, produces the stream (keyed by assignment) and merges
 * its valid commands directly into s->expected. */
static void scenario_setup(scenario_t *s, double invalid_rate) {
  memset(s, 0, sizeof *s);
  int n = ++g_seq;
  snprintf(s->topic, sizeof s->topic, "cmds-%d", n);
  snprintf(s->dlq, sizeof s->dlq, "cmds-%d-dlq", n);
  snprintf(s->group, sizeof s->group, "group-%d", n);
  ck_assert_int_eq(rd_kafka_mock_topic_create(g_mc, s->topic, PARTS, 1), RD_KAFKA_RESP_ERR_NO_ERROR);
  ck_assert_int_eq(rd_kafka_mock_topic_create(g_mc, s->dlq, 1, 1), RD_KAFKA_RESP_ERR_NO_ERROR);
  for (int part = 0; part < PARTS; part++)
    ck_assert_int_eq(rd_kafka_mock_partition_set_leader(g_mc, s->topic, part, BROKER_MAIN),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
  ck_assert_int_eq(rd_kafka_mock_partition_set_leader(g_mc, s->dlq, 0, BROKER_DLQ), RD_KAFKA_RESP_ERR_NO_ERROR);
  ck_assert_int_eq(rd_kafka_mock_coordinator_set(g_mc, "group", s->group, BROKER_MAIN), RD_KAFKA_RESP_ERR_NO_ERROR);

  cmdgen_opts_t o;
  cmdgen_defaults(&o);
  o.seed = (uint64_t)n;
  o.tenants = 2;
  o.assignments = 12;
  o.students = 5;
  o.count = 900;
  o.duplicate_rate = 0.1;
  o.invalid_rate = invalid_rate;
  o.order = CMDGEN_ORDER_SHUFFLE;
  cmdgen_t g;
  ck_assert(cmdgen_build(&g, &o));

  rd_kafka_t *p = client_set(RD_KAFKA_PRODUCER, NULL, g_one_per_batch ? "batch.num.messages" : NULL, "1");
  model_buf_t b = MODEL_BUF_INIT;
  model_command_t *cmd = malloc(sizeof *cmd);
  ck_assert_ptr_nonnull(cmd);
  for (size_t i = 0; i < g.n; i++) {
    model_buf_clear(&b);
    cmdgen_render(&g, &g.ev[i], &b);
    size_t len = b.len - 1; /* without the newline */
    char key[16];
    snprintf(key, sizeof key, "asg-%06u", g.ev[i].assignment);
    ck_assert_int_eq(rd_kafka_producev(p, RD_KAFKA_V_TOPIC(s->topic), RD_KAFKA_V_KEY(key, strlen(key)),
                                       RD_KAFKA_V_VALUE(b.data, len), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                       RD_KAFKA_V_END),
                     RD_KAFKA_RESP_ERR_NO_ERROR);
    model_reject_t rej;
    if (model_command_decode(b.data, len, 1 << 20, cmd, &rej)) {
      model_aggregate_apply(*expected_slot(s, cmd), cmd);
      s->valid++;
    } else {
      s->invalid++;
    }
  }
  ck_assert_int_eq(rd_kafka_flush(p, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
  for (int part = 0; part < PARTS; part++) {
    int64_t lo, hi;
    ck_assert_int_eq(rd_kafka_query_watermark_offsets(p, s->topic, part, &lo, &hi, 5000), RD_KAFKA_RESP_ERR_NO_ERROR);
    s->ends[part] = hi;
  }
  rd_kafka_destroy(p);
  free(cmd);
  model_buf_destroy(&b);
  cmdgen_destroy(&g);
}

/* Gives the scenario a change topic (one partition, led by BROKER_CHANGES),
 * which the worker then announces on. */
static void scenario_announce(scenario_t *s) {
  snprintf(s->changes, sizeof s->changes, "%s-changes", s->topic);
  ck_assert_int_eq(rd_kafka_mock_topic_create(g_mc, s->changes, 1, 1), RD_KAFKA_RESP_ERR_NO_ERROR);
  ck_assert_int_eq(rd_kafka_mock_partition_set_leader(g_mc, s->changes, 0, BROKER_CHANGES),
                   RD_KAFKA_RESP_ERR_NO_ERROR);
}

static void scenario_teardown(scenario_t *s) {
  for (size_t i = 0; i < s->nexpected; i++) model_aggregate_destroy(s->expected[i]);
}

/* The group's committed offsets of the scenario's topic (-1001 = none, -2 =
 * the query failed), read with rk (a consumer with the group's id that never
 * joins it) or with a new one when rk is NULL. */
static void committed_with(rd_kafka_t *rk, const scenario_t *s, int64_t out[PARTS]) {
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(PARTS);
  for (int p = 0; p < PARTS; p++) rd_kafka_topic_partition_list_add(l, s->topic, p);
  rd_kafka_resp_err_t e = rd_kafka_committed(rk, l, 10000);
  for (int p = 0; p < PARTS; p++) out[p] = e || l->elems[p].err ? -2 : l->elems[p].offset;
  rd_kafka_topic_partition_list_destroy(l);
}

static void committed(const scenario_t *s, int64_t out[PARTS]) {
  rd_kafka_t *rk = client(RD_KAFKA_CONSUMER, s->group);
  committed_with(rk, s, out);
  rd_kafka_destroy(rk);
}

static bool caught_up(const scenario_t *s, const int64_t c[PARTS]) {
  for (int p = 0; p < PARTS; p++)
    if (s->ends[p] > 0 && c[p] < s->ends[p]) return false;
  return true;
}

/* Moves the worker's clock one tick on and waits until the worker has
 * looked at the time (at most its poll's 100 ms when idle, at once when
 * busy): the pace of every wait below. */
static void worker_tick(void) { clock_manual_advance_seen(&g_clock, TICK_MS, 10000); }

/* Real time, for the bounds alone. */
static int64_t bound_in(int64_t ms) { return clock_mono_ms() + ms; }
static bool bound_passed(int64_t bound) { return clock_mono_ms() > bound; }

/* Stops the worker (SIGTERM, as an operator would) once the group has
 * committed everything, moving its clock meanwhile; after 180 s of real
 * time it gives up so that a bug fails instead of hanging. */
typedef struct watcher {
  const scenario_t *s;
  mem_store_t *mem;
  bool timed_out;
  int64_t last[PARTS]; /* the committed offsets last seen */
  /* what a controller (below) saw while the store held the first write */
  const char *failed;
  uint64_t consumed_while_held;
  int held_after;
  int64_t committed_while_held[PARTS];
  char reason_at_end[128]; /* /readyz's reason when the group had committed everything ("" = ready) */
} watcher_t;

static void *watch(void *arg) {
  watcher_t *w = arg;
  rd_kafka_t *rk = client(RD_KAFKA_CONSUMER, w->s->group);
  int64_t bound = bound_in(180000); /* under TSan on a loaded machine too */
  for (;;) {
    committed_with(rk, w->s, w->last);
    if (caught_up(w->s, w->last)) break;
    if (bound_passed(bound)) {
      w->timed_out = true;
      break;
    }
    worker_tick();
  }
  rd_kafka_destroy(rk);
  metrics_ready(w->reason_at_end, sizeof w->reason_at_end);
  kill(getpid(), SIGTERM);
  return NULL;
}

static config_t *worker_config(const scenario_t *s) {
  char sets[11][128];
  snprintf(sets[0], sizeof sets[0], "kafka.brokers=%s", g_bootstrap);
  snprintf(sets[1], sizeof sets[1], "kafka.topics=%s", s->topic);
  snprintf(sets[2], sizeof sets[2], "kafka.group=%s", s->group);
  snprintf(sets[3], sizeof sets[3], "kafka.dlq_topic=%s", s->dlq);
  snprintf(sets[4], sizeof sets[4], "batch.max_commands=40"); /* many flushes */
  snprintf(sets[5], sizeof sets[5], "batch.linger_ms=20");
  snprintf(sets[6], sizeof sets[6], "retry.backoff_ms=10");
  snprintf(sets[7], sizeof sets[7], "log.level=warn");
  /* A broker that comes back is reconnected to within a tick or two. */
  snprintf(sets[8], sizeof sets[8], "kafka.rdkafka.reconnect.backoff.max.ms=200");
  char *argv[12];
  int n = 9;
  for (int i = 0; i < 9; i++) argv[i] = sets[i];
  if (*s->changes) {
    snprintf(sets[9], sizeof sets[9], "changes.topic=%s", s->changes);
    argv[n++] = sets[9];
  }
  if (*s->set) {
    snprintf(sets[10], sizeof sets[10], "%s", s->set);
    argv[n++] = sets[10];
  }
  char debug[128];
  if (getenv("MOCK_DEBUG")) { /* e.g. MOCK_DEBUG=cgrp: librdkafka's debug contexts, to stderr */
    snprintf(debug, sizeof debug, "kafka.rdkafka.debug=%s", getenv("MOCK_DEBUG"));
    argv[n++] = debug;
    snprintf(sets[7], sizeof sets[7], "log.level=debug");
  }
  config_t *cfg = config_new();
  config_error_t err;
  ck_assert_msg(config_load(cfg, NULL, argv, (size_t)n, &err), "config: %s", err.message);
  return cfg;
}

typedef struct run_result {
  int rc;
  bool timed_out;
  char seen[160]; /* committed vs end offsets when the watcher gave up */
} run_result_t;

/* Runs the worker on the scenario until the watcher stops it (watch = true)
 * or it stops by itself. */
static run_result_t run_worker_with(const scenario_t *s, mem_store_t *mem, void *(*controller)(void *),
                                    watcher_t *w) {
  config_t *cfg = worker_config(s);
  sink_t sink = mem_sink(mem);
  batch_limits_t lim = batch_limits_from_config(cfg);
  batch_t *b = batch_new(&lim);
  w->s = s;
  w->mem = mem;
  pthread_t t;
  if (controller) ck_assert_int_eq(pthread_create(&t, NULL, controller, w), 0);
  consumer_reload_t rl = {NULL, NULL, 0};
  run_result_t r = {consumer_run(cfg, b, &sink, &g_clock.source, &rl), false, ""};
  if (controller) pthread_join(t, NULL);
  r.timed_out = w->timed_out;
  for (int p = 0, n = 0; p < PARTS; p++)
    n += snprintf(r.seen + n, sizeof r.seen - (size_t)n, " p%d %lld/%lld", p, (long long)w->last[p],
                  (long long)s->ends[p]);
  batch_destroy(b);
  config_destroy(cfg);
  return r;
}

static run_result_t run_worker(const scenario_t *s, mem_store_t *mem, bool with_watcher) {
  watcher_t w;
  memset(&w, 0, sizeof w);
  return run_worker_with(s, mem, with_watcher ? watch : NULL, &w);
}

/* Commands the worker has taken in so far (every result), from the metrics. */
static uint64_t commands_seen(void) {
  model_buf_t b = MODEL_BUF_INIT;
  metrics_render(&b);
  uint64_t total = 0;
  const char *p = b.data, *end = b.data + b.len;
  while (p && p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!strncmp(p, "aggregator_commands_total{", 26)) {
      const char *sp = memrchr(p, ' ', (size_t)((nl ? nl : end) - p));
      if (sp) total += strtoull(sp + 1, NULL, 10);
    }
    p = nl ? nl + 1 : NULL;
  }
  model_buf_destroy(&b);
  return total;
}

/* Waits until the worker has taken in n commands, looking again after each
 * of its turns; its clock stands still meanwhile. */
static bool wait_commands(uint64_t n, int seconds) {
  int64_t bound = bound_in((int64_t)seconds * 1000);
  while (commands_seen() < n)
    if (bound_passed(bound)) return false;
    else clock_manual_wait_read(&g_clock, 1000);
  return true;
}

/* The first write waits at the store's gate: the worker must go on
 * consuming and merging everything meanwhile, commit nothing (nothing is
 * durable), and once the gate opens, write and commit it all. */
static uint64_t g_base;
static void *consume_while_held(void *arg) {
  watcher_t *w = arg;
  if (!mem_wait_held(w->mem, 1)) {
    w->failed = "no write reached the store";
  } else {
    if (!wait_commands(g_base + w->s->valid + w->s->invalid, 120)) w->failed = "the worker stopped consuming";
    w->consumed_while_held = commands_seen() - g_base;
    w->held_after = mem_get(w->mem, &w->mem->held);
    committed(w->s, w->committed_while_held);
  }
  mem_release(w->mem);
  return watch(w);
}

/* SIGTERM while a flush is in flight: the worker waits for it, writes the
 * rest, commits and exits 0. */
static void *sigterm_while_held(void *arg) {
  watcher_t *w = arg;
  if (!mem_wait_held(w->mem, 1)) w->failed = "no write reached the store";
  else if (!wait_commands(g_base + w->s->valid + w->s->invalid, 120)) w->failed = "the worker stopped consuming";
  w->held_after = mem_get(w->mem, &w->mem->held);
  kill(getpid(), SIGTERM); /* with the first flush still in flight */
  mem_release(w->mem);
  return NULL;
}

static void assert_documents(const scenario_t *s, mem_store_t *mem) {
  ck_assert_int_eq(mem->n, (int)s->nexpected);
  for (size_t i = 0; i < s->nexpected; i++) {
    doc_t *d = mem_find(mem, model_aggregate_key(s->expected[i], NULL));
    ck_assert_msg(d, "%s was not written", model_aggregate_key(s->expected[i], NULL));
    ck_assert_msg(model_aggregate_equal(d->agg, s->expected[i]), "%s differs from the direct merge",
                  model_aggregate_key(s->expected[i], NULL));
  }
}

static int64_t dlq_count(const scenario_t *s) {
  rd_kafka_t *rk = client(RD_KAFKA_PRODUCER, NULL);
  int64_t lo, hi;
  ck_assert_int_eq(rd_kafka_query_watermark_offsets(rk, s->dlq, 0, &lo, &hi, 5000), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_destroy(rk);
  return hi;
}

/* The first message of the dead-letter topic, read by its own consumer;
 * dead_letter_done frees both. */
typedef struct dead_letter {
  rd_kafka_t *rk;
  rd_kafka_message_t *m;
  rd_kafka_headers_t *h;
} dead_letter_t;

static dead_letter_t first_dead_letter(const scenario_t *s) {
  dead_letter_t d = {client(RD_KAFKA_CONSUMER, "dlq-reader"), NULL, NULL};
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(l, s->dlq, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
  ck_assert_int_eq(rd_kafka_assign(d.rk, l), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_topic_partition_list_destroy(l);
  for (int i = 0; i < 100 && !d.m; i++) {
    d.m = rd_kafka_consumer_poll(d.rk, 100);
    if (d.m && d.m->err) {
      rd_kafka_message_destroy(d.m);
      d.m = NULL;
    }
  }
  ck_assert_msg(d.m, "no dead-letter message could be read");
  ck_assert_int_eq(rd_kafka_message_headers(d.m, &d.h), RD_KAFKA_RESP_ERR_NO_ERROR);
  return d;
}

static void dead_letter_done(dead_letter_t *d) {
  rd_kafka_message_destroy(d->m);
  rd_kafka_consumer_close(d->rk);
  rd_kafka_destroy(d->rk);
}

/* The first dead-letter message carries the reason and its source. */
static void assert_dlq_headers(const scenario_t *s) {
  dead_letter_t d = first_dead_letter(s);
  const char *names[] = {"x-error-code", "x-error-detail", "x-source-topic", "x-source-partition",
                         "x-source-offset"};
  for (size_t i = 0; i < 5; i++) {
    const void *v;
    size_t n;
    ck_assert_msg(rd_kafka_header_get_last(d.h, names[i], &v, &n) == RD_KAFKA_RESP_ERR_NO_ERROR && n > 0,
                  "header %s missing", names[i]);
    if (!strcmp(names[i], "x-source-topic")) ck_assert(n == strlen(s->topic) && !memcmp(v, s->topic, n));
  }
  dead_letter_done(&d);
}

/* What every test starts from: a scenario in fresh topics, an empty store
 * and a watcher with nothing seen yet. */
typedef struct fixture {
  scenario_t s;
  mem_store_t *mem; /* on the heap: the worker's threads hold on to it */
  watcher_t w;
} fixture_t;

static void fixture_up(fixture_t *f, double invalid_rate) {
  scenario_setup(&f->s, invalid_rate);
  f->mem = calloc(1, sizeof *f->mem);
  ck_assert_ptr_nonnull(f->mem);
  mem_init(f->mem);
  memset(&f->w, 0, sizeof f->w);
}

/* A fixture whose worker reads a few messages per fetch: its reading
 * spreads over many flushes, so that commands come to aggregates it has
 * already written (and announced) in the same assignment. */
static void fixture_up_spread(fixture_t *f, double invalid_rate) {
  g_one_per_batch = true;
  fixture_up(f, invalid_rate);
  g_one_per_batch = false;
  snprintf(f->s.set, sizeof f->s.set, "kafka.rdkafka.max.partition.fetch.bytes=1024");
}

static void fixture_down(fixture_t *f) {
  mem_free(f->mem);
  free(f->mem);
  scenario_teardown(&f->s);
}

/* The worker ran until the group had committed everything, and exited 0. */
static void assert_ran_to_the_end(const run_result_t *r) {
  ck_assert_msg(!r->timed_out, "the group never committed up to the end:%s", r->seen);
  ck_assert_int_eq(r->rc, 0);
}

/* The group's offsets are at the end of every partition. */
static void assert_committed_to_the_end(const scenario_t *s) {
  int64_t c[PARTS];
  committed(s, c);
  for (int p = 0; p < PARTS; p++) ck_assert_int_eq(c[p] < 0 ? 0 : c[p], s->ends[p]);
}

/* --- tests -------------------------------------------------------------------- */

START_TEST(commits_everything_once_durable) {
  fixture_t f;
  fixture_up(&f, 0.05);
  ck_assert_uint_gt(f.s.invalid, 0);
  run_result_t r = run_worker(&f.s, f.mem, true);
  assert_ran_to_the_end(&r);
  assert_committed_to_the_end(&f.s);
  assert_documents(&f.s, f.mem);
  ck_assert_int_eq(dlq_count(&f.s), (int64_t)f.s.invalid);
  assert_dlq_headers(&f.s);
  /* More than one flush: the first is due once 40 commands are pending
   * (batch.max_commands) and the stream is far longer. How many follow is
   * the machine's business: while a flush is in flight the consumer merges
   * everything it reads, and the next flush takes all of it (group commit),
   * so on a busy machine two flushes can be all there is. */
  ck_assert_uint_gt(f.s.valid + f.s.invalid, 40 * 4);
  ck_assert_int_ge(f.mem->writes, 2);
  fixture_down(&f);
}
END_TEST

START_TEST(retries_store_and_commit_errors) {
  fixture_t f;
  fixture_up(&f, 0);
  f.mem->fail_next = 5; /* the first five loads/writes answer RETRY */
  /* ... and the first two offset commits fail with an error that librdkafka
   * hands to the application instead of retrying it itself. */
  rd_kafka_mock_push_request_errors(g_mc, API_OFFSET_COMMIT, 2, RD_KAFKA_RESP_ERR_OFFSET_METADATA_TOO_LARGE,
                                    RD_KAFKA_RESP_ERR_OFFSET_METADATA_TOO_LARGE);
  run_result_t r = run_worker(&f.s, f.mem, true);
  assert_ran_to_the_end(&r);
  ck_assert_int_eq(f.mem->fail_next, 0);
  assert_documents(&f.s, f.mem);
  fixture_down(&f);
}
END_TEST

START_TEST(fatal_store_error_commits_nothing) {
  fixture_t f;
  fixture_up(&f, 0);
  f.mem->fail_fatal = true;
  run_result_t r = run_worker(&f.s, f.mem, false); /* stops by itself */
  ck_assert_int_eq(r.rc, 1);
  ck_assert_int_eq(f.mem->n, 0);
  int64_t c[PARTS];
  committed(&f.s, c);
  for (int p = 0; p < PARTS; p++) ck_assert_msg(c[p] < 0, "partition %d committed %lld with nothing durable", p,
                                                (long long)c[p]);
  fixture_down(&f);
}
END_TEST

START_TEST(keeps_consuming_during_a_slow_flush) {
  fixture_t f;
  fixture_up(&f, 0.05);
  f.mem->hold = true;
  g_base = commands_seen();
  run_result_t r = run_worker_with(&f.s, f.mem, consume_while_held, &f.w);
  ck_assert_msg(!f.w.failed, "%s", f.w.failed);
  ck_assert_uint_eq(f.w.consumed_while_held, f.s.valid + f.s.invalid);
  ck_assert_int_eq(f.w.held_after, 1); /* it was still the first write */
  for (int p = 0; p < PARTS; p++)
    ck_assert_msg(f.w.committed_while_held[p] < 0, "partition %d committed %lld before anything was durable", p,
                  (long long)f.w.committed_while_held[p]);
  assert_ran_to_the_end(&r);
  assert_documents(&f.s, f.mem);
  fixture_down(&f);
}
END_TEST

START_TEST(sigterm_during_a_flush) {
  fixture_t f;
  fixture_up(&f, 0);
  f.mem->hold = true;
  g_base = commands_seen();
  run_result_t r = run_worker_with(&f.s, f.mem, sigterm_while_held, &f.w);
  ck_assert_msg(!f.w.failed, "%s", f.w.failed);
  ck_assert_int_eq(f.w.held_after, 1);
  ck_assert_int_eq(r.rc, 0);
  assert_committed_to_the_end(&f.s);
  assert_documents(&f.s, f.mem);
  fixture_down(&f);
}
END_TEST

/* One sample of the metrics registry, e.g.
 * "aggregator_dead_letter_deliveries_total{result=\"error\"}". */
static double metric_sample(const char *series) {
  model_buf_t b = MODEL_BUF_INIT;
  metrics_render(&b);
  model_buf_putc(&b, '\0');
  double v = -1;
  size_t n = strlen(series);
  for (const char *p = b.data; p && *p;) {
    if (!strncmp(p, series, n) && p[n] == ' ') {
      v = strtod(p + n + 1, NULL);
      break;
    }
    p = strchr(p, '\n');
    if (p) p++;
  }
  model_buf_destroy(&b);
  return v;
}

#define DLQ_ERRORS "aggregator_dead_letter_deliveries_total{result=\"error\"}"
#define DLQ_OK "aggregator_dead_letter_deliveries_total{result=\"ok\"}"

/* While the dead-letter topic refuses the producer, or its broker is down:
 * not ready, with the reason, as the worker's clock moves on; then the
 * broker comes back (if it was down) and the watcher waits for everything
 * to commit. */
static double g_dlq_errors_base;
static bool g_dlq_expect_errors; /* false: a stall, no failed attempt */
static bool g_dlq_broker_down;   /* BROKER_DLQ is down until the worker is failing */
static void *watch_dead_letter_failing(void *arg) {
  watcher_t *w = arg;
  char reason[128] = "";
  int64_t bound = bound_in(60000);
  bool seen = false;
  while (!seen && !bound_passed(bound)) {
    seen = (!g_dlq_expect_errors || metric_sample(DLQ_ERRORS) > g_dlq_errors_base) &&
           !metrics_ready(reason, sizeof reason) &&
           !strcmp(reason, "dead-letter delivery failing");
    if (!seen) worker_tick();
  }
  if (!seen) w->failed = "never not-ready with \"dead-letter delivery failing\" after a failed delivery";
  if (g_dlq_broker_down && rd_kafka_mock_broker_set_up(g_mc, BROKER_DLQ) != RD_KAFKA_RESP_ERR_NO_ERROR)
    w->failed = "the dead-letter broker did not come back";
  return watch(w);
}

/* The dead-letter topic refuses the first produce requests (an error
 * librdkafka does not retry itself): the worker counts the failures, is not
 * ready meanwhile, produces the rejects again, and once they are delivered
 * commits everything and is no longer failing. */
START_TEST(dead_letter_failures_then_recovery) {
  fixture_t f;
  fixture_up(&f, 0.05);
  ck_assert_uint_gt(f.s.invalid, 0);
  g_dlq_errors_base = metric_sample(DLQ_ERRORS);
  g_dlq_expect_errors = true;
  g_dlq_broker_down = false;
  double ok_base = metric_sample(DLQ_OK);
  ck_assert(g_dlq_errors_base >= 0 && ok_base >= 0);
  rd_kafka_mock_push_request_errors(g_mc, 0 /* Produce */, 3, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
                                    RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED,
                                    RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
  metrics_set_assigned(false);
  run_result_t r = run_worker_with(&f.s, f.mem, watch_dead_letter_failing, &f.w);
  ck_assert_msg(!f.w.failed, "%s", f.w.failed);
  assert_ran_to_the_end(&r);
  ck_assert(metric_sample(DLQ_ERRORS) > g_dlq_errors_base);
  ck_assert(metric_sample(DLQ_OK) >= ok_base + (double)f.s.invalid);
  char reason[128];
  metrics_ready(reason, sizeof reason);
  ck_assert_str_ne(reason, "dead-letter delivery failing");
  assert_committed_to_the_end(&f.s);
  ck_assert_int_ge(dlq_count(&f.s), (int64_t)f.s.invalid);
  assert_documents(&f.s, f.mem);
  fixture_down(&f);
}
END_TEST

/* The dead-letter topic acknowledges nothing for longer than
 * DEADLETTER_STALL_MS of the worker's clock (its broker is down, and
 * librdkafka retries in silence): failing (not ready) meanwhile, although
 * librdkafka reports no error; then the broker is back, and the rejects are
 * delivered, committed, and the worker works again. */
START_TEST(dead_letter_stall_is_failing) {
  fixture_t f;
  fixture_up(&f, 0.05);
  ck_assert_uint_gt(f.s.invalid, 0);
  g_dlq_errors_base = metric_sample(DLQ_ERRORS);
  g_dlq_expect_errors = false;
  g_dlq_broker_down = true;
  ck_assert_int_eq(rd_kafka_mock_broker_set_down(g_mc, BROKER_DLQ), RD_KAFKA_RESP_ERR_NO_ERROR);
  metrics_set_assigned(false);
  run_result_t r = run_worker_with(&f.s, f.mem, watch_dead_letter_failing, &f.w);
  ck_assert_msg(!f.w.failed, "%s", f.w.failed);
  assert_ran_to_the_end(&r);
  ck_assert_double_eq(metric_sample(DLQ_ERRORS), g_dlq_errors_base); /* nothing failed: it was slow */
  char reason[128];
  metrics_ready(reason, sizeof reason);
  ck_assert_str_ne(reason, "dead-letter delivery failing");
  ck_assert_int_ge(dlq_count(&f.s), (int64_t)f.s.invalid);
  assert_documents(&f.s, f.mem);
  fixture_down(&f);
}
END_TEST

/* One message at the end of partition 0 of the scenario's topic; the
 * scenario's end offsets follow. */
static void produce_one(scenario_t *s, const char *key, const char *value) {
  rd_kafka_t *p = client(RD_KAFKA_PRODUCER, NULL);
  ck_assert_int_eq(rd_kafka_producev(p, RD_KAFKA_V_TOPIC(s->topic), RD_KAFKA_V_PARTITION(0),
                                     RD_KAFKA_V_KEY(key, strlen(key)), RD_KAFKA_V_VALUE((void *)value, strlen(value)),
                                     RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END),
                   RD_KAFKA_RESP_ERR_NO_ERROR);
  ck_assert_int_eq(rd_kafka_flush(p, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
  int64_t lo;
  ck_assert_int_eq(rd_kafka_query_watermark_offsets(p, s->topic, 0, &lo, &s->ends[0], 5000),
                   RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_destroy(p);
}

/* The x-error-code of the first dead-letter message. */
static void first_dead_letter_code(const scenario_t *s, char *out, size_t size) {
  dead_letter_t d = first_dead_letter(s);
  const void *v;
  size_t n;
  ck_assert_int_eq(rd_kafka_header_get_last(d.h, "x-error-code", &v, &n), RD_KAFKA_RESP_ERR_NO_ERROR);
  snprintf(out, size, "%.*s", (int)n, (const char *)v);
  dead_letter_done(&d);
}

/* A fixture whose store holds t1/big full: no room for another student
 * with a long feedback. Returns that document (the caller's). */
static model_aggregate_t *full_up(fixture_t *f) {
  fixture_up(f, 0);
  model_aggregate_t *full = model_aggregate_new("t1", 2, "big", 3);
  fx_fill_grades(full, "big", sink_document_limit(full));
  mem_put(f->mem, full);
  return full;
}

/* A grade of t1/big (version v) with MODEL_FEEDBACK_MAX bytes of feedback,
 * the size of each student of fx_fill_grades. */
static void long_grade(model_buf_t *b, const char *id, const char *student, int v) {
  model_buf_printf(b,
                   "{\"id\":\"%s\",\"type\":\"grade.updated\",\"tenant\":\"t1\",\"assignment\":\"big\","
                   "\"ts\":\"2026-09-01T08:00:00Z\",\"student\":\"%s\",\"version\":%d,\"data\":{\"points\":1,"
                   "\"feedback\":\"",
                   id, student, v);
  for (int i = 0; i < MODEL_FEEDBACK_MAX; i++) model_buf_putc(b, 'f');
  model_buf_puts(b, "\"}}");
}

/* A restart's cold cache: the stored document of t1/big has no room for
 * another student with a long feedback, but that student's grade fits the
 * overlay the worker holds before its first flush loads the document. It
 * is rejected then (document_too_large) from the copy of its message the
 * worker kept, dead-lettered, and the group commits past everything; t1/big
 * is not written, the other documents are, and the store refuses nothing. */
START_TEST(a_late_reject_is_dead_lettered_and_committed) {
  fixture_t f;
  model_aggregate_t *full = full_up(&f);
  model_buf_t cmd = MODEL_BUF_INIT;
  long_grade(&cmd, "late-reject-command-1", "a-student-who-is-late", 1);
  produce_one(&f.s, "big", cmd.data);
  model_buf_destroy(&cmd);
  double refused0 = metric_sample("aggregator_store_too_large_total");

  run_result_t r = run_worker(&f.s, f.mem, true);
  assert_ran_to_the_end(&r);
  assert_committed_to_the_end(&f.s);
  ck_assert_int_eq(dlq_count(&f.s), 1);
  char code[64];
  first_dead_letter_code(&f.s, code, sizeof code);
  ck_assert_str_eq(code, "document_too_large");
  doc_t *d = mem_find(f.mem, "t1/big");
  ck_assert_int_eq(d->rev, 1);
  ck_assert(model_aggregate_equal(d->agg, full));
  for (size_t i = 0; i < f.s.nexpected; i++) {
    doc_t *e = mem_find(f.mem, model_aggregate_key(f.s.expected[i], NULL));
    ck_assert(e && model_aggregate_equal(e->agg, f.s.expected[i]));
  }
  ck_assert(metric_sample("aggregator_store_too_large_total") == refused0);
  model_aggregate_destroy(full);
  fixture_down(&f);
}
END_TEST

/* A late reject as "line code detail", the line being the command's place
 * in the input (1 = first): `run`'s from its dead letter, `replay`'s from
 * its rejects. */
typedef struct late_list {
  char v[8][320];
  size_t n;
} late_list_t;

static void late_add(late_list_t *l, uint64_t line, const char *code, size_t code_len, const char *detail,
                     size_t detail_len) {
  ck_assert_uint_lt(l->n, 8);
  snprintf(l->v[l->n++], sizeof l->v[0], "%llu %.*s %.*s", (unsigned long long)line, (int)code_len, code,
           (int)detail_len, detail);
}

static bool replay_late(void *ctx, uint64_t line, const model_reject_t *rej) {
  const char *code = model_reject_code_name(rej->code);
  late_add(ctx, line, code, strlen(code), rej->detail, strlen(rej->detail));
  return true;
}

static int by_text(const void *a, const void *b) { return strcmp(a, b); }

/* The n dead letters of s: each is the produced command (cmds[k], at
 * offset first + k of partition 0) byte for byte, its key and its source;
 * listed as rejects of line k + 1. */
static void read_late_dead_letters(const scenario_t *s, int64_t first, const model_buf_t *cmds, size_t ncmds,
                                   size_t n, late_list_t *out) {
  rd_kafka_t *rk = client(RD_KAFKA_CONSUMER, "dlq-reader");
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(l, s->dlq, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
  ck_assert_int_eq(rd_kafka_assign(rk, l), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_topic_partition_list_destroy(l);
  for (int tries = 0; out->n < n && tries < 200; tries++) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
    if (!m) continue;
    rd_kafka_headers_t *h;
    const void *code, *detail, *topic, *part, *off;
    size_t code_n, detail_n, topic_n, part_n, off_n;
    ck_assert(!m->err && !rd_kafka_message_headers(m, &h));
    ck_assert(!rd_kafka_header_get_last(h, "x-error-code", &code, &code_n) &&
              !rd_kafka_header_get_last(h, "x-error-detail", &detail, &detail_n) &&
              !rd_kafka_header_get_last(h, "x-source-topic", &topic, &topic_n) &&
              !rd_kafka_header_get_last(h, "x-source-partition", &part, &part_n) &&
              !rd_kafka_header_get_last(h, "x-source-offset", &off, &off_n));
    char offset[24];
    snprintf(offset, sizeof offset, "%.*s", (int)off_n, (const char *)off);
    int64_t k = strtoll(offset, NULL, 10) - first;
    ck_assert(k >= 0 && (size_t)k < ncmds);
    ck_assert(m->len == cmds[k].len && !memcmp(m->payload, cmds[k].data, m->len)); /* byte for byte */
    ck_assert(m->key_len == 3 && !memcmp(m->key, "big", 3));
    ck_assert(topic_n == strlen(s->topic) && !memcmp(topic, s->topic, topic_n));
    ck_assert(part_n == 1 && *(const char *)part == '0');
    late_add(out, (uint64_t)k + 1, code, code_n, detail, detail_n);
    rd_kafka_message_destroy(m);
  }
  ck_assert_uint_eq(out->n, n);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
}

/* `run` and `replay` into the store reject the same commands late, with
 * the same reason, from the same input over the same stored document: both
 * go through the batch's holds (pipeline/batch_hold.h), the one giving
 * Kafka positions, the other line numbers. Two new students do not fit the
 * full t1/big; a same-size change of a stored student between them does. */
START_TEST(run_and_replay_reject_the_same_commands_late) {
  fixture_t f;
  model_aggregate_t *full = full_up(&f);
  model_buf_t cmds[3] = {MODEL_BUF_INIT, MODEL_BUF_INIT, MODEL_BUF_INIT};
  long_grade(&cmds[0], "late-1", "a-new-student", 1);
  long_grade(&cmds[1], "h0", "s0", 2);
  long_grade(&cmds[2], "late-2", "another-new-student", 1);
  int64_t first = f.s.ends[0];
  for (size_t k = 0; k < 3; k++) produce_one(&f.s, "big", cmds[k].data);

  run_result_t r = run_worker(&f.s, f.mem, true);
  assert_ran_to_the_end(&r);
  assert_committed_to_the_end(&f.s);
  late_list_t ran = {0}, replayed = {0};
  read_late_dead_letters(&f.s, first, cmds, 3, 2, &ran);

  signals_install(SIGNALS_STOP); /* as `replay` does: the SIGTERM that stopped the worker is not its */
  config_t *cfg = config_new();
  mem_store_t mem;
  mem_init(&mem);
  mem_put(&mem, full);
  sink_t sink = mem_sink(&mem);
  replay_merger_t m;
  ck_assert(replay_store_merger(&m, cfg, &sink, clock_system(), replay_late, &replayed));
  for (size_t k = 0; k < 3; k++) ck_assert(replay_merger_apply(&m, k + 1, cmds[k].data, cmds[k].len, 0));
  replay_rebuilt_t docs = {0}; /* none: the documents are in the store */
  ck_assert(replay_merger_finish(&m, &docs));
  replay_counts_t counts = {0};
  replay_merger_counts(&m, &counts);
  replay_merger_destroy(&m);
  ck_assert(model_aggregate_equal(mem_find(&mem, "t1/big")->agg, mem_find(f.mem, "t1/big")->agg));

  qsort(ran.v, ran.n, sizeof ran.v[0], by_text);
  qsort(replayed.v, replayed.n, sizeof replayed.v[0], by_text);
  ck_assert_uint_eq(replayed.n, 2);
  for (size_t i = 0; i < 2; i++) ck_assert_str_eq(ran.v[i], replayed.v[i]);
  ck_assert(!strncmp(ran.v[0], "1 document_too_large ", 21) && !strncmp(ran.v[1], "3 document_too_large ", 21));

  mem_free(&mem);
  config_destroy(cfg);
  for (size_t k = 0; k < 3; k++) model_buf_destroy(&cmds[k]);
  model_aggregate_destroy(full);
  fixture_down(&f);
}
END_TEST

/* --- change events ------------------------------------------------------------ */

/* One message of the change topic, as a reader sees it. */
typedef struct change_event {
  char id[140];   /* its key, which the value's _id repeats */
  int64_t rev;    /* its x-rev header, which the value's rev repeats */
  bool unchanged; /* "changed":[]: an announcement without a write */
  char *document; /* the text of its "document" value */
} change_event_t;

typedef struct change_events {
  change_event_t *v;
  size_t n;
} change_events_t;

static void change_events_free(change_events_t *ev) {
  for (size_t i = 0; i < ev->n; i++) free(ev->v[i].document);
  free(ev->v);
}

/* Reads one event: the key is the value's _id, x-rev its rev, the value one
 * line: {"_id",...,"rev":N,...,"changed":[...],"document":{...}}. */
static change_event_t parse_change_event(const rd_kafka_message_t *m) {
  change_event_t e = {.document = NULL};
  ck_assert(!m->err && m->key && m->key_len > 0 && m->key_len < sizeof e.id);
  memcpy(e.id, m->key, m->key_len);
  e.id[m->key_len] = '\0';
  char *v = malloc(m->len + 1); /* not strndup: the payload has no NUL after it to stop at */
  ck_assert_ptr_nonnull(v);
  memcpy(v, m->payload, m->len);
  v[m->len] = '\0';
  ck_assert_msg(strlen(v) == m->len && !strchr(v, '\n'), "the event of %s is not one line", e.id);
  char prefix[160];
  snprintf(prefix, sizeof prefix, "{\"_id\":\"%s\",", e.id);
  ck_assert_msg(!strncmp(v, prefix, strlen(prefix)), "the event keyed %s has another _id: %s", e.id, v);
  const char *rev = strstr(v, ",\"rev\":"), *changed = strstr(v, ",\"changed\":[");
  ck_assert_msg(rev && changed, "the event of %s has no rev or changed: %s", e.id, v);
  e.rev = strtoll(rev + 7, NULL, 10);
  e.unchanged = changed[12] == ']';
  const char *doc = strchr(changed, ']');
  ck_assert_msg(!strncmp(doc, "],\"document\":{", 14) && v[m->len - 1] == '}', "the event of %s: %s", e.id, v);
  e.document = strndup(doc + 13, (size_t)(v + m->len - 1 - (doc + 13)));
  rd_kafka_headers_t *h;
  const void *x;
  size_t xn;
  ck_assert(!rd_kafka_message_headers(m, &h) && !rd_kafka_header_get_last(h, "x-rev", &x, &xn));
  char xrev[24];
  snprintf(xrev, sizeof xrev, "%.*s", (int)xn, (const char *)x);
  ck_assert_msg(e.rev >= 1 && strtoll(xrev, NULL, 10) == e.rev, "the event of %s: x-rev %s, rev %lld", e.id, xrev,
                (long long)e.rev);
  free(v);
  return e;
}

/* Everything the change topic holds, in its order. */
static change_events_t read_change_events(const scenario_t *s) {
  change_events_t ev = {NULL, 0};
  rd_kafka_t *rk = client(RD_KAFKA_CONSUMER, "changes-reader");
  int64_t lo, hi;
  ck_assert_int_eq(rd_kafka_query_watermark_offsets(rk, s->changes, 0, &lo, &hi, 5000), RD_KAFKA_RESP_ERR_NO_ERROR);
  ev.v = calloc(hi > 0 ? (size_t)hi : 1, sizeof *ev.v);
  ck_assert_ptr_nonnull(ev.v);
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(l, s->changes, 0)->offset = RD_KAFKA_OFFSET_BEGINNING;
  ck_assert_int_eq(rd_kafka_assign(rk, l), RD_KAFKA_RESP_ERR_NO_ERROR);
  rd_kafka_topic_partition_list_destroy(l);
  int64_t bound = bound_in(30000);
  while ((int64_t)ev.n < hi && !bound_passed(bound)) {
    rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
    if (!m) continue;
    if (!m->err) ev.v[ev.n++] = parse_change_event(m);
    rd_kafka_message_destroy(m);
  }
  ck_assert_msg((int64_t)ev.n == hi, "read %zu of the %lld change events", ev.n, (long long)hi);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return ev;
}

/* How many events announce id at rev. */
static size_t events_at(const change_events_t *ev, const char *id, int64_t rev) {
  size_t n = 0;
  for (size_t i = 0; i < ev->n; i++) n += !strcmp(ev->v[i].id, id) && ev->v[i].rev == rev;
  return n;
}

/* A reader's fold of the topic (the greatest rev per _id) is the store:
 * every event announces a document the store holds at that rev or later,
 * and for each stored document (but `unannounced`, if not NULL: one that
 * no event may name) the greatest rev announced is its rev, with its
 * document exactly as stored (the JSON form, docs/DOCUMENT.md). */
static void assert_fold_is_the_store(const change_events_t *ev, mem_store_t *mem, const char *unannounced) {
  for (size_t i = 0; i < ev->n; i++) {
    doc_t *d = mem_find(mem, ev->v[i].id);
    ck_assert_msg(d, "an event of %s, which the store does not hold", ev->v[i].id);
    ck_assert_msg(ev->v[i].rev <= d->rev, "%s announced at rev %lld, stored at %lld", ev->v[i].id,
                  (long long)ev->v[i].rev, (long long)d->rev);
  }
  model_buf_t want = MODEL_BUF_INIT;
  for (int k = 0; k < mem->n; k++) {
    if (unannounced && !strcmp(mem->keys[k], unannounced)) continue;
    const change_event_t *latest = NULL;
    for (size_t i = 0; i < ev->n; i++)
      if (!strcmp(ev->v[i].id, mem->keys[k]) && (!latest || ev->v[i].rev > latest->rev)) latest = &ev->v[i];
    ck_assert_msg(latest, "%s is stored and was never announced", mem->keys[k]);
    ck_assert_int_eq(latest->rev, mem->docs[k].rev);
    model_buf_clear(&want);
    model_codec_to_json(mem->docs[k].agg, mem->docs[k].rev, mem->docs[k].updated_at_ms, &want);
    ck_assert_msg(want.len > 0 && strlen(latest->document) == want.len - 1 &&
                      !memcmp(latest->document, want.data, want.len - 1),
                  "the last event of %s carries another document:\n%s\nstored:\n%.*s", mem->keys[k], latest->document,
                  (int)want.len, want.data);
  }
  model_buf_destroy(&want);
}

/* Every write the store took is announced: it took the revs 1..rev of each
 * document (from an empty store), and each of them is on the topic, exactly
 * once (once) or at least once (repeats after a retried delivery), as a
 * write (a "changed" that is not empty). */
static void assert_every_write_announced(const change_events_t *ev, mem_store_t *mem, bool once) {
  for (int k = 0; k < mem->n; k++)
    for (int64_t rev = 1; rev <= mem->docs[k].rev; rev++) {
      size_t n = events_at(ev, mem->keys[k], rev);
      ck_assert_msg(once ? n == 1 : n >= 1, "%s rev %lld announced %zu times", mem->keys[k], (long long)rev, n);
    }
  for (size_t i = 0; i < ev->n; i++)
    ck_assert_msg(!ev->v[i].unchanged, "%s rev %lld announced without a change", ev->v[i].id, (long long)ev->v[i].rev);
}

/* The store took as many writes of documents as it holds revs. */
static int64_t stored_revs(mem_store_t *mem) {
  int64_t n = 0;
  for (int k = 0; k < mem->n; k++) n += mem->docs[k].rev;
  return n;
}

#define CHANGES_PENDING "aggregator_change_events_pending"
#define CHANGES_OK "aggregator_change_events_total{result=\"ok\"}"

/* With a change topic every write is announced, once: the run commits to
 * the end, the topic holds one event per write the store took (keyed by
 * _id, x-rev its rev, "changed" not empty), and its fold is the store.
 * The group has nothing committed, so every command counts as read again
 * and its aggregate is due for an announcement: its write's event is that
 * announcement, and a command that comes after the write (the reading
 * spreads over many flushes) announces nothing more. Rejects announce
 * nothing. (That commits wait for the events: the next test.) */
START_TEST(events_gate_commits) {
  fixture_t f;
  fixture_up_spread(&f, 0.05);
  scenario_announce(&f.s);
  double ok0 = metric_sample(CHANGES_OK);
  run_result_t r = run_worker(&f.s, f.mem, true);
  assert_ran_to_the_end(&r);
  assert_committed_to_the_end(&f.s);
  assert_documents(&f.s, f.mem);
  change_events_t ev = read_change_events(&f.s);
  ck_assert_int_eq((int64_t)ev.n, stored_revs(f.mem));
  ck_assert_int_eq((int64_t)ev.n, f.mem->write_items); /* no conflict: every item sent landed */
  assert_every_write_announced(&ev, f.mem, true);
  assert_fold_is_the_store(&ev, f.mem, NULL);
  ck_assert(metric_sample(CHANGES_OK) - ok0 == (double)ev.n);
  ck_assert_uint_gt(ev.n, f.s.nexpected); /* more than one write of some aggregate */
  change_events_free(&ev);
  fixture_down(&f);
}
END_TEST

/* The store holds every expected document (under its lock: the writer may
 * be in it). */
static bool store_holds(mem_store_t *mem, const scenario_t *s) {
  mem_lock(mem);
  bool all = mem->n == (int)s->nexpected;
  for (size_t i = 0; all && i < s->nexpected; i++) {
    doc_t *d = mem_find(mem, model_aggregate_key(s->expected[i], NULL));
    all = d && model_aggregate_equal(d->agg, s->expected[i]);
  }
  mem_unlock(mem);
  return all;
}

/* The change topic's broker is down: once the store holds every write,
 * and the worker says change-event delivery is failing with events
 * pending, what the group has committed is recorded; then the broker comes
 * back and the watcher waits for everything to commit. */
static double g_changes_pending_while_down;
static void *watch_changes_down(void *arg) {
  watcher_t *w = arg;
  char reason[128] = "";
  int64_t bound = bound_in(60000);
  bool stored = false, seen = false;
  while (!seen && !bound_passed(bound)) {
    stored = stored || store_holds(w->mem, w->s);
    g_changes_pending_while_down = metric_sample(CHANGES_PENDING);
    seen = stored && g_changes_pending_while_down > 0 && !metrics_ready(reason, sizeof reason) &&
           !strcmp(reason, "change-event delivery failing");
    /* With the writes in, the clock moves on by seconds: the stall that
     * makes the worker failing is CHANGES_STALL_MS of it. */
    if (!seen) clock_manual_advance_seen(&g_clock, stored ? 1000 : TICK_MS, 10000);
  }
  if (!stored) w->failed = "the store never held every write while the change topic was down";
  else if (!seen) w->failed = "never not-ready with \"change-event delivery failing\" and events pending";
  committed(w->s, w->committed_while_held);
  if (rd_kafka_mock_broker_set_up(g_mc, BROKER_CHANGES) != RD_KAFKA_RESP_ERR_NO_ERROR)
    w->failed = "the change topic's broker did not come back";
  return watch(w);
}

/* Commits wait for the events: while the change topic's broker is down,
 * the store takes every write, but the group commits nothing (it had
 * nothing committed, and no write is announced), the worker is not ready
 * ("change-event delivery failing") and counts its events pending; once
 * the broker is back the events are delivered, the group commits to the
 * end, and the fold of the topic is the store. */
START_TEST(change_topic_down_holds_commits) {
  fixture_t f;
  fixture_up(&f, 0);
  scenario_announce(&f.s);
  ck_assert_int_eq(rd_kafka_mock_broker_set_down(g_mc, BROKER_CHANGES), RD_KAFKA_RESP_ERR_NO_ERROR);
  metrics_set_assigned(false);
  run_result_t r = run_worker_with(&f.s, f.mem, watch_changes_down, &f.w);
  ck_assert_msg(!f.w.failed, "%s", f.w.failed);
  for (int p = 0; p < PARTS; p++)
    ck_assert_msg(f.w.committed_while_held[p] < 0, "partition %d committed %lld with no write announced", p,
                  (long long)f.w.committed_while_held[p]);
  ck_assert(g_changes_pending_while_down > 0);
  assert_ran_to_the_end(&r);
  ck_assert_str_ne(f.w.reason_at_end, "change-event delivery failing");
  assert_committed_to_the_end(&f.s);
  assert_documents(&f.s, f.mem);
  change_events_t ev = read_change_events(&f.s);
  assert_every_write_announced(&ev, f.mem, false);
  assert_fold_is_the_store(&ev, f.mem, NULL);
  change_events_free(&ev);
  fixture_down(&f);
}
END_TEST

/* A document the scenario's commands never touch, stored with a grade of
 * version 5, and a command that grades it again with version 3 (stale). */
#define LATE_ID "t9/late"
static const char LATE_GRADE[] =
    "{\"id\":\"late-1\",\"type\":\"grade.updated\",\"tenant\":\"t9\",\"assignment\":\"late\","
    "\"ts\":\"2026-09-01T08:00:00Z\",\"student\":\"s1\",\"version\":3,\"data\":{\"points\":1}}";

static model_aggregate_t *late_document(void) {
  char cmd[sizeof LATE_GRADE];
  memcpy(cmd, LATE_GRADE, sizeof cmd);
  char *v = strstr(cmd, "\"version\":3");
  ck_assert_ptr_nonnull(v);
  v[10] = '5';
  model_command_t *c = malloc(sizeof *c);
  model_reject_t rej;
  ck_assert(c && model_command_decode(cmd, strlen(cmd), 1 << 20, c, &rej));
  model_aggregate_t *a = model_aggregate_new("t9", 2, "late", 4);
  ck_assert_int_eq(model_aggregate_apply(a, c), MODEL_APPLY_APPLIED);
  free(c);
  return a;
}

/* Once the worker has taken in every command of the scenario (each read
 * again: below its partition's end when it was assigned), a stale command
 * comes at the end of partition 0: past that end, it was never read
 * before, and announces nothing. */
static scenario_t *g_late_scenario;
static void *late_stale_command(void *arg) {
  watcher_t *w = arg;
  if (!wait_commands(g_base + w->s->valid + w->s->invalid, 120)) w->failed = "the worker stopped consuming";
  produce_one(g_late_scenario, "late", LATE_GRADE); /* the watcher then waits for its commit too */
  return watch(w);
}

/* The re-announce rule: a worker wrote every aggregate and crashed before
 * announcing (the store holds each at its final state, the group has
 * nothing committed). This one reads every command again, writes nothing
 * (the store holds it all) and still announces every aggregate once, at
 * its stored rev, with "changed":[] and the stored document; the group
 * commits to the end. A command beyond its partition's end at assignment
 * (produced once the rest was read) that changes nothing is not read
 * again: its aggregate is neither written nor announced. */
START_TEST(commands_read_again_are_announced) {
  fixture_t f;
  fixture_up_spread(&f, 0);
  scenario_announce(&f.s);
  ck_assert_int_gt(f.s.ends[0], 0); /* partition 0's first message fixes its end before the late one comes */
  for (size_t i = 0; i < f.s.nexpected; i++) mem_put(f.mem, f.s.expected[i]);
  model_aggregate_t *late = late_document();
  mem_put(f.mem, late);
  g_base = commands_seen();
  g_late_scenario = &f.s;
  run_result_t r = run_worker_with(&f.s, f.mem, late_stale_command, &f.w);
  ck_assert_msg(!f.w.failed, "%s", f.w.failed);
  assert_ran_to_the_end(&r);
  assert_committed_to_the_end(&f.s);
  ck_assert_int_eq(f.mem->writes, 0);
  ck_assert_int_eq(f.mem->n, (int)f.s.nexpected + 1);
  for (size_t i = 0; i < f.s.nexpected; i++) {
    doc_t *d = mem_find(f.mem, model_aggregate_key(f.s.expected[i], NULL));
    ck_assert(d && d->rev == 1 && model_aggregate_equal(d->agg, f.s.expected[i]));
  }
  change_events_t ev = read_change_events(&f.s);
  ck_assert_uint_eq(ev.n, f.s.nexpected);
  for (size_t i = 0; i < f.s.nexpected; i++) {
    const char *id = model_aggregate_key(f.s.expected[i], NULL);
    ck_assert_msg(events_at(&ev, id, 1) == 1, "%s announced %zu times at its stored rev", id, events_at(&ev, id, 1));
  }
  for (size_t i = 0; i < ev.n; i++) {
    ck_assert_msg(ev.v[i].unchanged, "%s announced with a change, with nothing written", ev.v[i].id);
    ck_assert_msg(strcmp(ev.v[i].id, LATE_ID), "a stale command past the end of its partition announced " LATE_ID);
  }
  doc_t *d = mem_find(f.mem, LATE_ID);
  ck_assert(d && d->rev == 1 && model_aggregate_equal(d->agg, late));
  assert_fold_is_the_store(&ev, f.mem, LATE_ID);
  change_events_free(&ev);
  model_aggregate_destroy(late);
  fixture_down(&f);
}
END_TEST

Suite *test_suite(void) {
  Suite *su = suite_create("consumer_mock");
  TCase *tc = tcase_create("mock cluster");
  tcase_set_timeout(tc, 180);
  tcase_add_checked_fixture(tc, mock_up, mock_down); /* per test: a forked test needs its own */
  tcase_add_test(tc, commits_everything_once_durable);
  tcase_add_test(tc, retries_store_and_commit_errors);
  tcase_add_test(tc, fatal_store_error_commits_nothing);
  tcase_add_test(tc, keeps_consuming_during_a_slow_flush);
  tcase_add_test(tc, sigterm_during_a_flush);
  tcase_add_test(tc, dead_letter_failures_then_recovery);
  tcase_add_test(tc, dead_letter_stall_is_failing);
  tcase_add_test(tc, a_late_reject_is_dead_lettered_and_committed);
  tcase_add_test(tc, run_and_replay_reject_the_same_commands_late);
  tcase_add_test(tc, events_gate_commits);
  tcase_add_test(tc, change_topic_down_holds_commits);
  tcase_add_test(tc, commands_read_again_are_announced);
  suite_add_tcase(su, tc);
  return su;
}
