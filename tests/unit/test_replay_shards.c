/* Decode and merge on several threads (worker/replay/replay_shards.h) and the
 * output encoded on several threads (worker/replay/replay_encode.h) against the
 * merge on one thread (worker/replay/replay_merge.h): on a shuffled stream with
 * redeliveries, invalid lines and commands rejected document_too_large, the
 * same aggregates, counts and rejects in the same order, and the same
 * bytes, whether the stream comes message by message or in blocks of
 * lines. Labelled tsan too: scripts/test runs it under ThreadSanitizer. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "replay/replay_encode.h"
#include "replay/replay_lines.h"
#include "replay/replay_merge.h"
#include "replay/replay_shards.h"
#include "replay_stream.h"

#define MAX_BYTES (64 * 1024)

/* The stream (replay_stream.h): with `big_ones`, few aggregates, grades
 * enough to pass the store's limit and one line longer than
 * limits.max_command_bytes; else only generated lines, of many aggregates. */
static stream_t make_stream_of(bool big_ones) {
  return stream_make(2, big_ones ? 90 : 1500, big_ones ? 12 : 2, big_ones, big_ones ? MAX_BYTES + 100 : 0);
}

static stream_t make_stream(void) { return make_stream_of(true); }

/* The rejects as text, one "index code detail" line each, in the order met. */
typedef struct seen {
  model_buf_t text;
  size_t n, stop_at; /* stop_at: the callback fails at this reject (0 = never) */
} seen_t;

static bool on_reject(void *ctx, uint64_t index, const model_reject_t *rej) {
  seen_t *s = ctx;
  model_buf_printf(&s->text, "%llu %s %s\n", (unsigned long long)index, model_reject_code_name(rej->code),
                   rej->detail);
  return ++s->n != s->stop_at;
}

typedef struct result {
  replay_rebuilt_t docs;
  uint64_t applied, stale;
  seen_t rejects;
} result_t;

/* The merge on this thread, as replay.c runs it with replay.threads = 1. */
static result_t one_thread(const stream_t *s) {
  result_t r = {.rejects = {.text = MODEL_BUF_INIT}};
  replay_merge_t m = REPLAY_MERGE_INIT;
  model_command_t *cmd = malloc(sizeof *cmd);
  for (size_t i = 0; i < s->n; i++) {
    size_t len;
    const char *data = line_of(s, i, &len);
    model_reject_t rej;
    if (!model_command_decode(data, len, MAX_BYTES, cmd, &rej) ||
        !replay_merge_apply(&m, cmd, replay_merge_hash(cmd), &rej))
      on_reject(&r.rejects, i + 1, &rej);
  }
  free(cmd);
  replay_merge_sorted(&m, &r.docs);
  r.applied = m.applied;
  r.stale = m.stale;
  replay_merge_free(&m);
  return r;
}

static result_t threads(const stream_t *s, size_t n) {
  result_t r = {.rejects = {.text = MODEL_BUF_INIT}};
  replay_shards_t *sh = replay_shards_new(n, MAX_BYTES, on_reject, &r.rejects);
  ck_assert_ptr_nonnull(sh);
  for (size_t i = 0; i < s->n; i++) {
    size_t len;
    const char *data = line_of(s, i, &len);
    ck_assert(replay_shards_add(sh, data, len));
  }
  ck_assert(replay_shards_finish(sh, &r.docs));
  replay_shards_counts(sh, &r.applied, &r.stale);
  replay_shards_destroy(sh);
  return r;
}

/* Hands l's file to sh in blocks of whole lines of `want` bytes or more,
 * as replay.c does; false when sh refuses one (a reject callback failed). */
static bool feed_blocks(replay_shards_t *sh, replay_lines_t *l, size_t want) {
  uint64_t lines;
  size_t long_len;
  for (;;) {
    model_buf_t *block = replay_shards_block(sh);
    if (!block) return false;
    if (!replay_lines_read(l, block, want, &long_len)) return true;
    if (!replay_shards_block_done(sh, long_len, &lines)) return false;
  }
}

/* The same, the stream read in blocks of whole lines of `want` bytes or
 * more (replay_lines.h), as replay.c hands a file to the threads. */
static result_t threads_blocks(const stream_t *s, size_t n, size_t want) {
  result_t r = {.rejects = {.text = MODEL_BUF_INIT}};
  replay_shards_t *sh = replay_shards_new(n, MAX_BYTES, on_reject, &r.rejects);
  ck_assert_ptr_nonnull(sh);
  FILE *in = fmemopen(s->text.data, s->text.len, "r");
  ck_assert_ptr_nonnull(in);
  replay_lines_t l = REPLAY_LINES_INIT(in, MAX_BYTES);
  ck_assert(feed_blocks(sh, &l, want));
  ck_assert(replay_shards_finish(sh, &r.docs));
  ck_assert_uint_eq(replay_shards_messages(sh), s->n);
  replay_shards_counts(sh, &r.applied, &r.stale);
  replay_shards_destroy(sh);
  replay_lines_free(&l);
  fclose(in);
  return r;
}

static void result_free(result_t *r) {
  replay_rebuilt_free(&r->docs);
  model_buf_destroy(&r->rejects.text);
}

static void assert_same(const result_t *a, const result_t *b) {
  ck_assert_uint_eq(a->applied, b->applied);
  ck_assert_uint_eq(a->stale, b->stale);
  ck_assert_uint_eq(a->rejects.n, b->rejects.n);
  ck_assert_uint_eq(a->rejects.text.len, b->rejects.text.len);
  ck_assert(!memcmp(a->rejects.text.data, b->rejects.text.data, a->rejects.text.len));
  ck_assert_uint_eq(a->docs.n, b->docs.n);
  for (size_t i = 0; i < a->docs.n; i++) {
    ck_assert_str_eq(model_aggregate_key(a->docs.aggs[i], NULL), model_aggregate_key(b->docs.aggs[i], NULL));
    ck_assert(model_aggregate_equal(a->docs.aggs[i], b->docs.aggs[i]));
  }
}

/* The replay of s on lo..hi threads gives one, the result of one thread. */
static void assert_threads_agree(const stream_t *s, const result_t *one, size_t lo, size_t hi) {
  for (size_t n = lo; n <= hi; n++) {
    result_t many = threads(s, n);
    assert_same(one, &many);
    result_free(&many);
  }
}

START_TEST(threads_give_one_threads_result) {
  stream_t s = make_stream();
  result_t one = one_thread(&s);
  ck_assert(strstr(one.rejects.text.data, "document_too_large"));
  ck_assert(strstr(one.rejects.text.data, "invalid_json"));
  ck_assert(strstr(one.rejects.text.data, "too_large message is 65636 bytes"));
  ck_assert_uint_gt(one.stale, 0);
  assert_threads_agree(&s, &one, 2, 4);
  result_free(&one);
  stream_free(&s);
}
END_TEST

/* Many aggregates: each thread joins a range of keys of every shard's. */
START_TEST(threads_sort_many_aggregates_as_one_thread) {
  stream_t s = make_stream_of(false);
  result_t one = one_thread(&s);
  ck_assert_uint_gt(one.docs.n, 1000);
  assert_threads_agree(&s, &one, 2, 5);
  result_free(&one);
  stream_free(&s);
}
END_TEST

/* Blocks of every size cut lines at every place: an empty line, a line
 * longer than the block, a line past limits.max_command_bytes on an edge. */
START_TEST(blocks_give_one_threads_result) {
  stream_t s = make_stream();
  result_t one = one_thread(&s);
  static const size_t wants[] = {61, 4099, REPLAY_LINES_BLOCK};
  for (size_t w = 0; w < sizeof wants / sizeof *wants; w++) {
    for (size_t n = 2; n <= 3; n++) {
      result_t many = threads_blocks(&s, n, wants[w]);
      assert_same(&one, &many);
      result_free(&many);
    }
  }
  result_free(&one);
  stream_free(&s);
}
END_TEST

START_TEST(a_failed_reject_stops_the_threads) {
  stream_t s = make_stream();
  seen_t seen = {.text = MODEL_BUF_INIT, .stop_at = 3};
  replay_shards_t *sh = replay_shards_new(3, MAX_BYTES, on_reject, &seen);
  bool ok = true;
  for (size_t i = 0; i < s.n && ok; i++) {
    size_t len;
    const char *data = line_of(&s, i, &len);
    ok = replay_shards_add(sh, data, len);
  }
  replay_rebuilt_t docs = {0};
  if (ok) ok = replay_shards_finish(sh, &docs);
  ck_assert(!ok);
  ck_assert_uint_eq(seen.n, 3); /* none after the one that failed */
  ck_assert_uint_eq(docs.n, 0);
  replay_shards_destroy(sh); /* workers stopped mid-stream: nothing leaks, nothing hangs */
  model_buf_destroy(&seen.text);
  stream_free(&s);
}
END_TEST

/* A source that stops half-way (a read error): drained, the threads have
 * emitted the rejects of every message handed over, as one thread has. */
START_TEST(a_replay_cut_short_emits_the_rejects_of_what_was_handed_over) {
  stream_t s = make_stream();
  result_t one = one_thread(&s);
  size_t half = s.n / 2;
  model_buf_t want = MODEL_BUF_INIT;
  for (const char *p = one.rejects.text.data, *end = p + one.rejects.text.len; p < end;) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (strtoull(p, NULL, 10) <= half) model_buf_append(&want, p, (size_t)(nl - p) + 1);
    p = nl + 1;
  }
  ck_assert_uint_gt(want.len, 0);
  seen_t seen = {.text = MODEL_BUF_INIT};
  replay_shards_t *sh = replay_shards_new(3, MAX_BYTES, on_reject, &seen);
  for (size_t i = 0; i < half; i++) {
    size_t len;
    const char *data = line_of(&s, i, &len);
    ck_assert(replay_shards_add(sh, data, len));
  }
  ck_assert(replay_shards_drain(sh));
  ck_assert_uint_eq(replay_shards_messages(sh), half);
  ck_assert_uint_eq(seen.text.len, want.len);
  ck_assert(!memcmp(seen.text.data, want.data, want.len));
  replay_shards_destroy(sh);
  model_buf_destroy(&seen.text);
  model_buf_destroy(&want);
  result_free(&one);
  stream_free(&s);
}
END_TEST

/* The same through blocks of lines: a failed reject ends the blocks
 * (replay_shards_block gives none, or replay_shards_block_done says so),
 * and a block taken but never handed over is freed with the rest. */
START_TEST(a_failed_reject_stops_the_blocks) {
  stream_t s = make_stream();
  seen_t seen = {.text = MODEL_BUF_INIT, .stop_at = 3};
  replay_shards_t *sh = replay_shards_new(3, MAX_BYTES, on_reject, &seen);
  FILE *in = fmemopen(s.text.data, s.text.len, "r");
  ck_assert_ptr_nonnull(in);
  replay_lines_t l = REPLAY_LINES_INIT(in, MAX_BYTES);
  bool ok = feed_blocks(sh, &l, 4096);
  replay_rebuilt_t docs = {0};
  if (ok) ok = replay_shards_finish(sh, &docs);
  ck_assert(!ok);
  ck_assert_uint_eq(seen.n, 3);
  ck_assert_uint_eq(docs.n, 0);
  replay_shards_destroy(sh);
  replay_lines_free(&l);
  fclose(in);
  model_buf_destroy(&seen.text);
  stream_free(&s);
}
END_TEST

START_TEST(a_block_taken_and_not_handed_over_is_destroyed) {
  stream_t s = make_stream();
  seen_t seen = {.text = MODEL_BUF_INIT};
  replay_shards_t *sh = replay_shards_new(2, MAX_BYTES, on_reject, &seen);
  FILE *in = fmemopen(s.text.data, s.text.len, "r");
  ck_assert_ptr_nonnull(in);
  replay_lines_t l = REPLAY_LINES_INIT(in, MAX_BYTES);
  uint64_t lines;
  size_t long_len;
  for (int i = 0; i < 3; i++) {
    ck_assert(replay_lines_read(&l, replay_shards_block(sh), 4096, &long_len));
    ck_assert(replay_shards_block_done(sh, long_len, &lines));
  }
  ck_assert(replay_lines_read(&l, replay_shards_block(sh), 4096, &long_len)); /* read, never handed over */
  replay_shards_destroy(sh); /* an interrupted replay */
  replay_lines_free(&l);
  fclose(in);
  model_buf_destroy(&seen.text);
  stream_free(&s);
}
END_TEST

START_TEST(an_unfinished_replay_is_destroyed) {
  stream_t s = make_stream();
  seen_t seen = {.text = MODEL_BUF_INIT};
  replay_shards_t *sh = replay_shards_new(2, MAX_BYTES, on_reject, &seen);
  for (size_t i = 0; i < s.n / 2; i++) {
    size_t len;
    const char *data = line_of(&s, i, &len);
    ck_assert(replay_shards_add(sh, data, len));
  }
  replay_shards_destroy(sh); /* an interrupted replay */
  model_buf_destroy(&seen.text);
  stream_free(&s);
}
END_TEST

static bool collect(void *ctx, const char *data, size_t len) {
  model_buf_append(ctx, data, len);
  return true;
}

/* A write that fails after the first piece. */
static bool refuse_second(void *ctx, const char *data, size_t len) {
  (void)data, (void)len;
  return ++*(size_t *)ctx < 2;
}

START_TEST(a_failed_write_stops_the_encoding_and_destroys_what_was_handed_over) {
  stream_t s = make_stream_of(false);
  for (size_t n = 1; n <= 3; n++) {
    result_t own = one_thread(&s);
    ck_assert_uint_gt(own.docs.n, 2 * REPLAY_ENCODE_PIECE);
    size_t writes = 0;
    ck_assert(!replay_encode(own.docs.aggs, own.docs.n, 1788220800000LL, n, true, refuse_second, &writes));
    ck_assert_uint_eq(writes, 2); /* none after the one that failed */
    own.docs.n = 0; /* every aggregate destroyed (the sanitizers' leak check says so) */
    result_free(&own);
  }
  stream_free(&s);
}
END_TEST

START_TEST(the_output_is_encoded_the_same_on_threads) {
  stream_t s = make_stream_of(false);
  result_t one = one_thread(&s);
  ck_assert_uint_gt(one.docs.n, 8 * REPLAY_ENCODE_PIECE); /* pieces past one window of two threads */
  model_buf_t a = MODEL_BUF_INIT, b = MODEL_BUF_INIT;
  for (size_t i = 0; i < one.docs.n; i++) model_codec_to_json(one.docs.aggs[i], 1, 1788220800000LL, &a);
  for (size_t n = 1; n <= 3; n++) {
    model_buf_clear(&b);
    ck_assert(replay_encode(one.docs.aggs, one.docs.n, 1788220800000LL, n, false, collect, &b));
    ck_assert_uint_eq(a.len, b.len);
    ck_assert(!memcmp(a.data, b.data, a.len));
    /* Handed over, the aggregates go as they are encoded: the same bytes. */
    result_t own = one_thread(&s);
    model_buf_clear(&b);
    ck_assert(replay_encode(own.docs.aggs, own.docs.n, 1788220800000LL, n, true, collect, &b));
    ck_assert_uint_eq(a.len, b.len);
    ck_assert(!memcmp(a.data, b.data, a.len));
    own.docs.n = 0; /* destroyed: only the array is left */
    result_free(&own);
  }
  model_buf_destroy(&a);
  model_buf_destroy(&b);
  result_free(&one);
  stream_free(&s);
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("replay_shards");
  TCase *tc = tcase_create("replay_shards");
  tcase_set_timeout(tc, 300);
  tcase_add_test(tc, threads_give_one_threads_result);
  tcase_add_test(tc, threads_sort_many_aggregates_as_one_thread);
  tcase_add_test(tc, blocks_give_one_threads_result);
  tcase_add_test(tc, a_failed_reject_stops_the_threads);
  tcase_add_test(tc, a_replay_cut_short_emits_the_rejects_of_what_was_handed_over);
  tcase_add_test(tc, an_unfinished_replay_is_destroyed);
  tcase_add_test(tc, a_failed_reject_stops_the_blocks);
  tcase_add_test(tc, a_block_taken_and_not_handed_over_is_destroyed);
  tcase_add_test(tc, the_output_is_encoded_the_same_on_threads);
  tcase_add_test(tc, a_failed_write_stops_the_encoding_and_destroys_what_was_handed_over);
  suite_add_tcase(s, tc);
  return s;
}
