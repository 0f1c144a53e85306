/* The manual clock (worker/base/clock.h) that tests drive instead of
 * sleeping: a clock_sleep on it ends once the clock has been advanced far
 * enough, however the advances are cut, and not before; a test sees the
 * code it drives look at the time (clock_manual_advance_seen,
 * clock_manual_wait_read). */
#include <check.h>
#include <pthread.h>
#include <stdatomic.h>

#include "base/clock.h"

static clock_manual_t g_clock;

typedef struct sleeper {
  int64_t ms;
  int64_t before, after; /* the clock around the sleep, read without counting */
  atomic_bool done, stop;
} sleeper_t;

/* Sleeps, then looks at the clock until told to stop, so that every
 * advance of the test is answered by a look (a sleep's, or one of these). */
static void *sleep_on_clock(void *arg) {
  sleeper_t *s = arg;
  s->before = atomic_load(&g_clock.mono_ms);
  clock_sleep(&g_clock.source, s->ms);
  s->after = atomic_load(&g_clock.mono_ms);
  atomic_store(&s->done, true);
  while (!atomic_load(&s->stop)) (void)clock_mono(&g_clock.source);
  return NULL;
}

/* Starts a sleeper of ms, advances by step until it is done and returns
 * how many advances it took. Besides those the sleep needs, at most two
 * come: one between the sleeper's first reading (before) and the start of
 * its sleep (an advance waits for a look, and the sleeper looks first when
 * its sleep begins), and one between its waking look and `done`. */
static int sleep_through(sleeper_t *s, int64_t ms, int64_t step) {
  *s = (sleeper_t){.ms = ms};
  atomic_init(&s->done, false);
  atomic_init(&s->stop, false);
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, sleep_on_clock, s), 0);
  int n = 0;
  while (!atomic_load(&s->done)) {
    n++;
    ck_assert_msg(clock_manual_advance_seen(&g_clock, step, 10000), "the sleeper never looked at the time");
    ck_assert_int_lt(n, 1000);
  }
  atomic_store(&s->stop, true);
  pthread_join(t, NULL);
  return n;
}

START_TEST(a_sleep_ends_once_the_clock_has_moved_that_far) {
  clock_manual_init(&g_clock, 5000, 1790000000000);
  sleeper_t s;
  sleep_through(&s, 100, 30);
  ck_assert_int_ge(s.after - s.before, 100);
  /* Woken by the first advance that reached its end (sleep_through says
   * which two more may come within before..after). */
  ck_assert_int_lt(s.after - s.before, 100 + 3 * 30);
}
END_TEST

START_TEST(one_advance_past_the_end_wakes_a_sleeper) {
  clock_manual_init(&g_clock, 0, 0);
  sleeper_t s;
  ck_assert_int_le(sleep_through(&s, 60000, 3600000), 1 + 2);
  ck_assert_int_ge(s.after - s.before, 60000);
}
END_TEST

static atomic_bool g_stop_reading;
static void *read_until_told(void *arg) {
  (void)arg;
  while (!atomic_load(&g_stop_reading)) (void)clock_wall(&g_clock.source);
  return NULL;
}

START_TEST(a_watcher_sees_another_thread_read) {
  clock_manual_init(&g_clock, 0, 0);
  atomic_store(&g_stop_reading, false);
  pthread_t t;
  ck_assert_int_eq(pthread_create(&t, NULL, read_until_told, NULL), 0);
  ck_assert(clock_manual_wait_read(&g_clock, 10000));
  atomic_store(&g_stop_reading, true);
  pthread_join(t, NULL);
}
END_TEST

Suite *test_suite(void) {
  Suite *su = suite_create("clock");
  TCase *sleeping = tcase_create("sleeping on a manual clock");
  tcase_add_test(sleeping, a_sleep_ends_once_the_clock_has_moved_that_far);
  tcase_add_test(sleeping, one_advance_past_the_end_wakes_a_sleeper);
  suite_add_tcase(su, sleeping);
  TCase *watching = tcase_create("watching the reads");
  tcase_add_test(watching, a_watcher_sees_another_thread_read);
  suite_add_tcase(su, watching);
  return su;
}
