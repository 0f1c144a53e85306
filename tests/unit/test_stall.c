/* The writer's stall watchdog (worker/pipeline/stall.h) and what readiness
 * says of a stall (worker/metrics/readiness.h), on an injected clock: a
 * worker that holds unwritten changes and lands no write for the timeout is
 * stalled, reported once and again every timeout, and ready again as soon
 * as a write lands; one with nothing unwritten, or that keeps landing, never
 * is. Then the batch's side: batch_oldest_unwritten_ms follows the oldest
 * change not yet durable, in flight or owed again after a failure. */
#include <check.h>
#include <string.h>

#include "base/clock.h"
#include "mem_store.h"
#include "metrics/readiness.h"
#include "model_fixtures.h"
#include "pipeline/batch.h"
#include "pipeline/stall.h"

#define T 120000 /* the timeout of these tests, ms */

START_TEST(idle_and_busy_writers_are_not_stalled) {
  stall_watch_t w;
  stall_init(&w, T);
  /* nothing unwritten, however long */
  ck_assert_int_eq(stall_check(&w, 10 * T, INT64_MAX), STALL_NONE);
  /* a change after a long idle: the clock starts with it, not at the last write */
  ck_assert_int_eq(stall_check(&w, 10 * T + 1, 10 * T), STALL_NONE);
  ck_assert_int_eq(stall_check(&w, 11 * T - 1, 10 * T), STALL_NONE);
  /* writes landing every so often while changes stay unwritten (a backlog) */
  for (int64_t t = 11 * T - 1; t < 20 * T; t += T / 2) {
    stall_landed(&w, t);
    ck_assert_int_eq(stall_check(&w, t + T / 2 - 1, 10 * T), STALL_NONE);
  }
  ck_assert_int_eq(stall_age_ms(&w, 20 * T), 0);
}
END_TEST

START_TEST(a_writer_that_lands_nothing_is_reported_until_it_does) {
  stall_watch_t w;
  stall_init(&w, T);
  stall_landed(&w, 1000);
  int64_t oldest = 5000; /* the oldest unwritten change, after the last landing */
  ck_assert_int_eq(stall_check(&w, oldest + T - 1, oldest), STALL_NONE);
  ck_assert_int_eq(stall_check(&w, oldest + T, oldest), STALL_BEGAN);
  ck_assert_int_eq(stall_age_ms(&w, oldest + T), T);
  ck_assert_int_eq(stall_check(&w, oldest + T + 1, oldest), STALL_NONE); /* reported once ... */
  ck_assert_int_eq(stall_check(&w, oldest + 2 * T - 1, oldest), STALL_NONE);
  ck_assert_int_eq(stall_check(&w, oldest + 2 * T, oldest), STALL_GOES_ON); /* ... and again every timeout */
  ck_assert_int_eq(stall_age_ms(&w, oldest + 2 * T), 2 * T);
  /* a write lands: over, though older changes are still unwritten */
  stall_landed(&w, oldest + 2 * T + 5);
  ck_assert_int_eq(stall_check(&w, oldest + 2 * T + 6, oldest), STALL_ENDED);
  ck_assert_int_eq(stall_check(&w, oldest + 2 * T + 7, oldest), STALL_NONE);
  ck_assert_int_eq(stall_age_ms(&w, oldest + 2 * T + 7), 0);
}
END_TEST

START_TEST(a_stall_ends_when_nothing_is_unwritten) {
  stall_watch_t w;
  stall_init(&w, T);
  ck_assert_int_eq(stall_check(&w, T, 0), STALL_BEGAN); /* nothing ever landed */
  ck_assert_int_eq(stall_check(&w, T + 1, INT64_MAX), STALL_ENDED);
  stall_set_timeout(&w, 2 * T); /* a reload */
  ck_assert_int_eq(stall_check(&w, 3 * T - 1, T), STALL_NONE);
  ck_assert_int_eq(stall_check(&w, 3 * T, T), STALL_BEGAN);
}
END_TEST

START_TEST(readiness_names_the_stall_with_its_counts) {
  clock_manual_t clock;
  clock_manual_init(&clock, 1000, 1788220800000LL);
  readiness_t r;
  readiness_init(&r, &clock.source);
  readiness_set_assigned(&r, true);
  readiness_store_answered(&r);
  char why[160];
  ck_assert(readiness_ready(&r, why, sizeof why));
  readiness_set_stalled(&r, true, 172, 1000 - T);
  ck_assert(!readiness_ready(&r, why, sizeof why));
  ck_assert_str_eq(why, "writer stalled: 172 aggregates unwritten, nothing written for 120.0 s");
  clock_manual_advance(&clock, 40000); /* the store silent too: the stall is still what is named */
  ck_assert(!readiness_ready(&r, why, sizeof why));
  ck_assert_str_eq(why, "writer stalled: 172 aggregates unwritten, nothing written for 160.0 s");
  readiness_store_failed(&r); /* a store that fails says so first */
  ck_assert(!readiness_ready(&r, why, sizeof why));
  ck_assert_str_eq(why, "store unreachable");
  readiness_store_answered(&r);
  readiness_set_stalled(&r, false, 0, 0);
  ck_assert(readiness_ready(&r, why, sizeof why));
}
END_TEST

static model_command_t roster(const char *assignment, const char *id) {
  model_command_t c;
  fx_roster(&c, "t1", assignment, "s1", 1, id, true);
  return c;
}

/* The batch's oldest unwritten change: applied at 100 and 200, in flight
 * from 100; a failed flush owes it again from 100; once everything lands,
 * none. */
START_TEST(the_oldest_unwritten_change_follows_the_batch) {
  mem_store_t s;
  mem_init(&s);
  sink_t sink = mem_sink(&s);
  batch_limits_t l = {1000, 1000, 0, 1 << 30, 100, 1 << 30};
  batch_t *b = batch_new(&l);
  ck_assert_int_eq(batch_oldest_unwritten_ms(b), INT64_MAX);
  model_command_t a = roster("a1", "c1"), c = roster("a2", "c2");
  batch_apply(b, &a, 0, mem_at(100), NULL);
  batch_apply(b, &c, 0, mem_at(200), NULL);
  ck_assert_int_eq(batch_oldest_unwritten_ms(b), 100);
  writer_job_t *job = batch_flush_begin(b, mem_at(300));
  model_command_t d = roster("a3", "c3");
  batch_apply(b, &d, 0, mem_at(400), NULL);
  ck_assert_int_eq(batch_oldest_unwritten_ms(b), 100); /* in flight */
  mem_set(&s, &s.fail_next, 1);
  writer_execute(&sink, clock_system(), job);
  ck_assert_int_eq(batch_flush_end(b, job, mem_at(500), NULL), SINK_RETRY);
  ck_assert_int_eq(batch_oldest_unwritten_ms(b), 100); /* owed again, as old as it was */
  ck_assert_int_eq(mem_flush(b, &s, mem_at(600)), SINK_OK);
  ck_assert_int_eq(batch_oldest_unwritten_ms(b), INT64_MAX);
  batch_destroy(b);
  mem_free(&s);
}
END_TEST

Suite *test_suite(void) {
  Suite *su = suite_create("stall");
  TCase *tc = tcase_create("watchdog");
  tcase_add_test(tc, idle_and_busy_writers_are_not_stalled);
  tcase_add_test(tc, a_writer_that_lands_nothing_is_reported_until_it_does);
  tcase_add_test(tc, a_stall_ends_when_nothing_is_unwritten);
  tcase_add_test(tc, readiness_names_the_stall_with_its_counts);
  tcase_add_test(tc, the_oldest_unwritten_change_follows_the_batch);
  suite_add_tcase(su, tc);
  return su;
}
