/* The merger interface of a replay (worker/replay/replay_merger.h): every
 * back end (the store's batch over an in-memory store, the table on one
 * thread, the shards on several) given the same stream through the
 * interface alone gives the same documents, the same counts and the same
 * rejects (the table's and the shards' in stream order; the store's, some
 * of which come late, the same once put in line order, as replay.c writes
 * them); and a reject callback that refuses stops every back end. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../tools/cmdgen.h"
#include "config/config.h"
#include "mem_store.h"
#include "replay/replay_merge.h"
#include "replay/replay_merger.h"
#include "replay/replay_shards.h"
#include "replay/replay_store.h"

/* The stream: generated lines of 30 aggregates (the in-memory store holds
 * 64), with redeliveries and invalid lines, and grades of 4,000 bytes of
 * feedback for one more aggregate, enough to pass the store's limit. */
typedef struct stream {
  model_buf_t text;
  size_t *off; /* line i is text[off[i], off[i] + len[i]) */
  size_t *len;
  size_t n;
} stream_t;

static void add_line(stream_t *s, const char *data, size_t len) {
  s->off = realloc(s->off, (s->n + 1) * sizeof *s->off);
  s->len = realloc(s->len, (s->n + 1) * sizeof *s->len);
  s->off[s->n] = s->text.len;
  s->len[s->n++] = len;
  model_buf_append(&s->text, data, len);
}

static stream_t make_stream(void) {
  cmdgen_opts_t o;
  cmdgen_defaults(&o);
  o.seed = 7;
  o.tenants = 1;
  o.assignments = 30;
  o.students = 4;
  o.count = 3000;
  o.duplicate_rate = 0.3;
  o.invalid_rate = 0.05;
  o.order = CMDGEN_ORDER_SHUFFLE;
  cmdgen_t g;
  ck_assert(cmdgen_build(&g, &o));
  stream_t s = {.text = MODEL_BUF_INIT};
  model_buf_t line = MODEL_BUF_INIT;
  static char feedback[4001];
  memset(feedback, 'f', 4000);
  for (size_t i = 0, big = 0; i < g.n; i++) {
    model_buf_clear(&line);
    cmdgen_render(&g, &g.ev[i], &line);
    add_line(&s, line.data, line.len - 1);
    for (size_t k = 0; k < 2 && big < 4300; k++, big++) {
      model_buf_clear(&line);
      model_buf_printf(&line,
                       "{\"id\":\"g%zu\",\"type\":\"grade.updated\",\"tenant\":\"t0\",\"assignment\":\"big\","
                       "\"ts\":\"2026-09-01T08:00:00Z\",\"student\":\"s%zu\",\"version\":1,"
                       "\"data\":{\"points\":1,\"feedback\":\"%s\"}}",
                       big, big, feedback);
      add_line(&s, line.data, line.len);
    }
  }
  add_line(&s, "", 0); /* an empty line: rejected too */
  model_buf_destroy(&line);
  cmdgen_destroy(&g);
  return s;
}

static void stream_free(stream_t *s) {
  model_buf_destroy(&s->text);
  free(s->off);
  free(s->len);
}

/* The rejects in the order met: position and "code detail". */
typedef struct reject {
  uint64_t line;
  char text[256];
} reject_t;

typedef struct seen {
  reject_t *v;
  size_t n;
  size_t stop_at; /* the callback refuses this reject (0 = never) */
} seen_t;

static bool on_reject(void *ctx, uint64_t line, const model_reject_t *rej) {
  seen_t *s = ctx;
  s->v = realloc(s->v, (s->n + 1) * sizeof *s->v);
  s->v[s->n].line = line;
  snprintf(s->v[s->n].text, sizeof s->v[s->n].text, "%s %s", model_reject_code_name(rej->code), rej->detail);
  return ++s->n != s->stop_at;
}

static int by_line(const void *a, const void *b) {
  uint64_t x = ((const reject_t *)a)->line, y = ((const reject_t *)b)->line;
  return (x > y) - (x < y);
}

enum backend { TABLE, SHARDS, STORE };

typedef struct run {
  config_t *cfg;
  mem_store_t mem;
  replay_merger_t m;
  seen_t rejects;
  replay_rebuilt_t docs;
  replay_counts_t counts;
  bool fed;      /* every message taken */
  bool in_order; /* the merger said its rejects come in stream order */
} run_t;

/* Makes back end `b` with its rejects to r->rejects. */
static void make(run_t *r, enum backend b) {
  size_t max_bytes = (size_t)r->cfg->limits_max_command_bytes;
  if (b == TABLE) r->m = replay_merge_merger(max_bytes, on_reject, &r->rejects);
  if (b == SHARDS) ck_assert(replay_shards_merger(&r->m, 3, max_bytes, on_reject, &r->rejects));
  if (b == STORE) {
    mem_init(&r->mem);
    sink_t sink = mem_sink(&r->mem);
    ck_assert(replay_store_merger(&r->m, r->cfg, &sink, on_reject, &r->rejects));
  }
  ck_assert_ptr_nonnull(r->m.ops);
  r->in_order = r->m.in_order;
}

/* The stream through b's interface, as replay.c's pipeline runs it. */
static void run(run_t *r, enum backend b, const stream_t *s, size_t stop_at) {
  memset(r, 0, sizeof *r);
  r->cfg = config_new();
  r->rejects.stop_at = stop_at;
  make(r, b);
  r->counts.read = s->n;
  r->fed = true;
  for (size_t i = 0; i < s->n && r->fed; i++)
    r->fed = replay_merger_apply(&r->m, i + 1, s->text.data + s->off[i], s->len[i], 0);
  if (r->fed)
    ck_assert(replay_merger_finish(&r->m, &r->docs));
  else
    replay_merger_drain(&r->m);
  replay_merger_counts(&r->m, &r->counts);
  replay_merger_destroy(&r->m);
  ck_assert_ptr_null(r->m.ops);
  replay_merger_destroy(&r->m); /* safe on none */
}

static void run_free(run_t *r, enum backend b) {
  replay_rebuilt_free(&r->docs);
  free(r->rejects.v);
  if (b == STORE) mem_free(&r->mem);
  config_destroy(r->cfg);
}

/* The rejects of a merger in order are met in line order; put in line
 * order, b's are a's. */
static void assert_same_rejects(const run_t *a, run_t *b) {
  for (size_t i = 1; b->in_order && i < b->rejects.n; i++) ck_assert_uint_lt(b->rejects.v[i - 1].line, b->rejects.v[i].line);
  qsort(b->rejects.v, b->rejects.n, sizeof *b->rejects.v, by_line);
  ck_assert_uint_eq(a->rejects.n, b->rejects.n);
  for (size_t i = 0; i < a->rejects.n; i++) {
    ck_assert_uint_eq(a->rejects.v[i].line, b->rejects.v[i].line);
    ck_assert_str_eq(a->rejects.v[i].text, b->rejects.v[i].text);
  }
}

START_TEST(every_backend_merges_the_stream_alike) {
  stream_t s = make_stream();
  run_t table, shards, store;
  run(&table, TABLE, &s, 0);
  ck_assert(table.m.ops == NULL && table.fed);
  ck_assert_uint_eq(table.docs.n, 31);
  ck_assert_uint_gt(table.counts.applied, 0);
  ck_assert_uint_gt(table.counts.stale, 0);
  ck_assert_uint_eq(table.counts.read, s.n); /* the pipeline's count */
  ck_assert_uint_eq(table.counts.aggregates, 0); /* counted when handed out */
  bool too_large = false, invalid = false;
  for (size_t i = 0; i < table.rejects.n; i++) {
    too_large |= !strncmp(table.rejects.v[i].text, "document_too_large", 18);
    invalid |= !strncmp(table.rejects.v[i].text, "invalid_json", 12);
  }
  ck_assert(too_large && invalid);

  run(&shards, SHARDS, &s, 0);
  ck_assert(shards.fed && shards.in_order && table.in_order);
  assert_same_rejects(&table, &shards);
  ck_assert_uint_eq(shards.counts.applied, table.counts.applied);
  ck_assert_uint_eq(shards.counts.stale, table.counts.stale);
  ck_assert_uint_eq(shards.counts.read, s.n); /* messages one by one: the pipeline's count */
  ck_assert_uint_eq(shards.docs.n, table.docs.n);
  for (size_t i = 0; i < table.docs.n; i++) {
    ck_assert_str_eq(model_aggregate_key(shards.docs.aggs[i], NULL), model_aggregate_key(table.docs.aggs[i], NULL));
    ck_assert(model_aggregate_equal(shards.docs.aggs[i], table.docs.aggs[i]));
  }

  run(&store, STORE, &s, 0);
  ck_assert(store.fed);
  ck_assert(!store.in_order); /* some come late */
  assert_same_rejects(&table, &store);
  ck_assert_uint_eq(store.counts.applied, table.counts.applied);
  ck_assert_uint_eq(store.counts.stale, table.counts.stale);
  ck_assert_uint_eq(store.docs.n, 0); /* in the store */
  ck_assert_uint_ge(store.counts.aggregates, table.docs.n); /* documents written */
  ck_assert_int_eq(store.mem.n, (int)table.docs.n);
  for (size_t i = 0; i < table.docs.n; i++) {
    doc_t *d = mem_find(&store.mem, model_aggregate_key(table.docs.aggs[i], NULL));
    ck_assert_ptr_nonnull(d);
    ck_assert(model_aggregate_equal(d->agg, table.docs.aggs[i]));
  }
  run_free(&table, TABLE);
  run_free(&shards, SHARDS);
  run_free(&store, STORE);
  stream_free(&s);
}
END_TEST

/* The first reject refused: every back end stops taking messages, and none
 * hands on a reject past the one refused in stream order. */
START_TEST(a_refused_reject_stops_every_backend) {
  stream_t s = make_stream();
  run_t all;
  run(&all, TABLE, &s, 0);
  for (enum backend b = TABLE; b <= STORE; b++) {
    run_t r;
    run(&r, b, &s, 1);
    ck_assert_msg(!r.fed, "back end %d", b);
    ck_assert_uint_ge(r.rejects.n, 1);
    ck_assert_uint_eq(r.rejects.v[0].line, all.rejects.v[0].line);
    ck_assert_str_eq(r.rejects.v[0].text, all.rejects.v[0].text);
    if (b != STORE) ck_assert_uint_eq(r.rejects.n, 1); /* the store's late ones may still come as it stops */
    run_free(&r, b);
  }
  run_free(&all, TABLE);
  stream_free(&s);
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("replay_merger");
  TCase *tc = tcase_create("replay_merger");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, every_backend_merges_the_stream_alike);
  tcase_add_test(tc, a_refused_reject_stops_every_backend);
  suite_add_tcase(s, tc);
  return s;
}
