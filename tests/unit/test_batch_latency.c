/* The batch's latency tracker (worker/pipeline/batch_latency.h): run-length lists of
 * arrival times that observe every command exactly once, whatever their
 * bound does to the times. The observations go to a recorder here instead
 * of the metrics registry. */
#include <check.h>
#include <stdlib.h>

#include "pipeline/batch_latency.h"

static uint64_t g_commands;
static double g_seconds; /* the sum over commands */

static void record(double seconds, uint64_t commands) {
  g_commands += commands;
  g_seconds += seconds * (double)commands;
}

static void reset(void) {
  g_commands = 0;
  g_seconds = 0;
}

/* Consecutive commands of one time share a run; the observed latency is
 * from each run's time, and a time ahead of now counts as 0. */
START_TEST(runs_by_time) {
  batch_latency_t l = {0};
  reset();
  batch_latency_add(&l, 1000, 1, &BATCH_LATENCY_PER_AGGREGATE);
  batch_latency_add(&l, 1000, 2, &BATCH_LATENCY_PER_AGGREGATE);
  batch_latency_add(&l, 3000, 1, &BATCH_LATENCY_PER_AGGREGATE);
  batch_latency_add(&l, 9000, 1, &BATCH_LATENCY_PER_AGGREGATE);
  ck_assert_uint_eq(l.n, 3);
  batch_latency_observe(&l, 5000, record);
  ck_assert_uint_eq(g_commands, 5);
  ck_assert_double_eq_tol(g_seconds, 3 * 4.0 + 2.0 + 0.0, 1e-9);
  ck_assert_uint_eq(l.n, 0);
  ck_assert_ptr_null(l.v);
}
END_TEST

/* Past 64 runs an aggregate's list is halved, neighbours merged at their
 * weighted mean: the count stays exact, the times within what they span. */
START_TEST(per_aggregate_list_coarsens) {
  batch_latency_t l = {0};
  reset();
  for (int i = 0; i < 1000; i++) batch_latency_add(&l, 1000 + i, 1, &BATCH_LATENCY_PER_AGGREGATE);
  ck_assert_uint_le(l.n, BATCH_LATENCY_PER_AGGREGATE.max_runs);
  ck_assert_uint_le(batch_latency_bytes(&l), 64 * sizeof(batch_latency_run_t));
  batch_latency_observe(&l, 3000, record);
  ck_assert_uint_eq(g_commands, 1000);
  double mean = g_seconds / 1000, exact = (3000 - 1000 - 499.5) / 1000.0;
  ck_assert_double_le(mean > exact ? mean - exact : exact - mean, 0.1);
}
END_TEST

/* A snapshot that did not land gives its commands back in front of those
 * that arrived since. */
START_TEST(prepend_keeps_the_older_first) {
  batch_latency_t newer = {0}, older = {0};
  batch_latency_add(&older, 1000, 2, &BATCH_LATENCY_PER_AGGREGATE);
  batch_latency_add(&newer, 2000, 1, &BATCH_LATENCY_PER_AGGREGATE);
  batch_latency_prepend(&newer, &older, &BATCH_LATENCY_PER_AGGREGATE);
  ck_assert_uint_eq(older.n, 0);
  ck_assert_uint_eq(newer.n, 2);
  ck_assert_int_eq(newer.v[0].ms, 1000);
  ck_assert_int_eq(newer.v[1].ms, 2000);
  batch_latency_free(&newer);
}
END_TEST

/* In seq order: observed from the front up to a seq (a run cut there keeps
 * the rest, with its time). */
START_TEST(in_order_by_seq) {
  batch_latency_seq_t s = {0};
  reset();
  for (uint64_t q = 10; q < 20; q++) batch_latency_seq_add(&s, q, q < 15 ? 1000 : 2000);
  batch_latency_seq_observe_below(&s, 13, 4000, record);
  ck_assert_uint_eq(g_commands, 3);
  batch_latency_seq_observe_below(&s, 20, 4000, record);
  ck_assert_uint_eq(g_commands, 10);
  ck_assert_double_eq_tol(g_seconds, 5 * 3.0 + 5 * 2.0, 1e-9);
  batch_latency_seq_free(&s);
}
END_TEST

/* Full (a store down for long), the in-order list adds each new command to
 * its newest run instead of growing: still every command, once. */
START_TEST(in_order_list_is_bounded) {
  batch_latency_seq_t s = {0};
  reset();
  uint64_t n = (1u << 20) + 1000;
  for (uint64_t q = 0; q < n; q++) batch_latency_seq_add(&s, q, (int64_t)q + 1);
  ck_assert_uint_eq(s.runs.n, 1u << 20);
  ck_assert_uint_eq(s.runs.v[s.runs.n - 1].n, 1001);
  batch_latency_seq_observe_below(&s, n, (int64_t)n + 1, record);
  ck_assert_uint_eq(g_commands, n);
  ck_assert_uint_eq(s.runs.n, 0);
  batch_latency_seq_free(&s);
}
END_TEST

Suite *test_suite(void) {
  Suite *su = suite_create("batch_latency");
  TCase *tc = tcase_create("runs");
  tcase_add_test(tc, runs_by_time);
  tcase_add_test(tc, per_aggregate_list_coarsens);
  tcase_add_test(tc, prepend_keeps_the_older_first);
  tcase_add_test(tc, in_order_by_seq);
  tcase_add_test(tc, in_order_list_is_bounded);
  suite_add_tcase(su, tc);
  return su;
}
