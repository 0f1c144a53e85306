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

#include "config/config.h"
#include "mem_store.h"
#include "replay/replay_merge.h"
#include "replay/replay_lines.h"
#include "replay/replay_merger.h"
#include "replay/replay_shards.h"
#include "replay/replay_store.h"
#include "replay_stream.h"

/* The stream (replay_stream.h): 30 aggregates (the in-memory store holds
 * 64) and one more that passes the store's limit. */
static stream_t make_stream(void) { return stream_make(1, 30, 12, true, 0); }

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
    ck_assert(replay_store_merger(&r->m, r->cfg, &sink, clock_system(), on_reject, &r->rejects));
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
  for (size_t i = 0; i < s->n && r->fed; i++) {
    size_t len;
    const char *data = line_of(s, i, &len);
    r->fed = replay_merger_apply(&r->m, i + 1, data, len, 0);
  }
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
  for (size_t i = 1; b->in_order && i < b->rejects.n; i++)
    ck_assert_uint_lt(b->rejects.v[i - 1].line, b->rejects.v[i].line);
  qsort(b->rejects.v, b->rejects.n, sizeof *b->rejects.v, by_line);
  ck_assert_uint_eq(a->rejects.n, b->rejects.n);
  for (size_t i = 0; i < a->rejects.n; i++) {
    ck_assert_uint_eq(a->rejects.v[i].line, b->rejects.v[i].line);
    ck_assert_str_eq(a->rejects.v[i].text, b->rejects.v[i].text);
  }
}

/* The stream and the table's run of it, the reference of every test. */
static stream_t s;
static run_t table;

static void setup(void) {
  s = make_stream();
  run(&table, TABLE, &s, 0);
}

static void teardown(void) {
  run_free(&table, TABLE);
  stream_free(&s);
}

START_TEST(every_backend_merges_the_stream_alike) {
  run_t shards, store;
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
  run_free(&shards, SHARDS);
  run_free(&store, STORE);
}
END_TEST

/* The first reject refused: every back end stops taking messages, and none
 * hands on a reject past the one refused in stream order. */
START_TEST(a_refused_reject_stops_every_backend) {
  for (enum backend b = TABLE; b <= STORE; b++) {
    run_t r;
    run(&r, b, &s, 1);
    ck_assert_msg(!r.fed, "back end %d", b);
    ck_assert_uint_ge(r.rejects.n, 1);
    ck_assert_uint_eq(r.rejects.v[0].line, table.rejects.v[0].line);
    ck_assert_str_eq(r.rejects.v[0].text, table.rejects.v[0].text);
    if (b != STORE) ck_assert_uint_eq(r.rejects.n, 1); /* the store's late ones may still come as it stops */
    run_free(&r, b);
  }
}
END_TEST

/* A file in blocks of lines (replay_lines.h), as replay.c hands it to a
 * merger that takes blocks: the shards cut the lines and count them as
 * read; the table and the store take messages one by one. */
START_TEST(the_shards_count_the_lines_of_blocks_as_read) {
  replay_merger_t one = replay_merge_merger(1, on_reject, NULL);
  ck_assert_ptr_null(one.ops->block);
  replay_merger_destroy(&one);
  run_t r;
  memset(&r, 0, sizeof r);
  r.cfg = config_new();
  make(&r, SHARDS);
  ck_assert_ptr_nonnull(r.m.ops->block);
  FILE *in = fmemopen(s.text.data, s.text.len, "r");
  replay_lines_t l = REPLAY_LINES_INIT(in, (size_t)r.cfg->limits_max_command_bytes);
  size_t long_len;
  uint64_t lines = 0;
  for (model_buf_t *block; (block = r.m.ops->block(r.m.ctx)) && replay_lines_read(&l, block, 4099, &long_len);)
    ck_assert(r.m.ops->block_done(r.m.ctx, long_len, &lines));
  ck_assert(replay_merger_finish(&r.m, &r.docs));
  replay_merger_counts(&r.m, &r.counts);
  replay_merger_destroy(&r.m);
  ck_assert_uint_eq(r.counts.read, s.n); /* none counted by the pipeline */
  ck_assert_uint_eq(r.counts.applied, table.counts.applied);
  ck_assert_uint_eq(r.docs.n, table.docs.n);
  assert_same_rejects(&table, &r);
  replay_lines_free(&l);
  fclose(in);
  run_free(&r, SHARDS);
}
END_TEST

Suite *test_suite(void) {
  Suite *suite = suite_create("replay_merger");
  TCase *tc = tcase_create("replay_merger");
  tcase_add_unchecked_fixture(tc, setup, teardown);
  const TTest *tests[] = {every_backend_merges_the_stream_alike, a_refused_reject_stops_every_backend,
                          the_shards_count_the_lines_of_blocks_as_read};
  for (size_t i = 0; i < sizeof tests / sizeof *tests; i++) tcase_add_test(tc, tests[i]);
  suite_add_tcase(suite, tc);
  return suite;
}
