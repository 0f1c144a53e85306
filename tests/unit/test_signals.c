/* The one signal module (worker/base/signals.h) that `run`, `replay` and `verify` share:
 * stop signals are counted, SIGHUP is taken once, installing clears what
 * came before, and a signal left out of the set keeps its disposition. */
#include <check.h>
#include <signal.h>
#include <stdlib.h>

#include "base/signals.h"

START_TEST(stop_signals_are_counted) {
  signals_install(SIGNALS_STOP);
  ck_assert_int_eq(signals_stop_count(), 0);
  raise(SIGTERM); /* delivered before raise returns: the calling thread does not block it */
  ck_assert_int_eq(signals_stop_count(), 1);
  raise(SIGINT);
  ck_assert_int_eq(signals_stop_count(), 2);
  ck_assert(!signals_take_reload());
}
END_TEST

START_TEST(the_first_stop_signal_is_kept) {
  signals_install(SIGNALS_STOP);
  ck_assert_int_eq(signals_stop_signal(), 0);
  raise(SIGTERM);
  raise(SIGINT);
  ck_assert_int_eq(signals_stop_signal(), SIGTERM);
  signals_install(SIGNALS_STOP);
  ck_assert_int_eq(signals_stop_signal(), 0);
  raise(SIGINT);
  ck_assert_int_eq(signals_stop_signal(), SIGINT);
}
END_TEST

START_TEST(reload_is_taken_once) {
  signals_install(SIGNALS_STOP | SIGNALS_RELOAD);
  ck_assert(!signals_take_reload());
  raise(SIGHUP);
  raise(SIGHUP);
  ck_assert(signals_take_reload());
  ck_assert(!signals_take_reload());
  ck_assert_int_eq(signals_stop_count(), 0);
}
END_TEST

START_TEST(install_forgets_earlier_signals) {
  signals_install(SIGNALS_STOP | SIGNALS_RELOAD);
  raise(SIGTERM);
  raise(SIGHUP);
  signals_install(SIGNALS_STOP | SIGNALS_RELOAD);
  ck_assert_int_eq(signals_stop_count(), 0);
  ck_assert(!signals_take_reload());
}
END_TEST

START_TEST(only_the_requested_signals) {
  signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_DFL);
  signals_install(SIGNALS_STOP);
  struct sigaction sa;
  sigaction(SIGHUP, NULL, &sa);
  ck_assert(sa.sa_handler == SIG_IGN); /* replay: SIGHUP is not ours */
  sigaction(SIGPIPE, NULL, &sa);
  ck_assert(sa.sa_handler == SIG_DFL);
  sigaction(SIGTERM, NULL, &sa);
  ck_assert(sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN);
  signals_install(SIGNALS_STOP | SIGNALS_RELOAD | SIGNALS_IGNORE_PIPE);
  sigaction(SIGPIPE, NULL, &sa);
  ck_assert(sa.sa_handler == SIG_IGN);
  sigaction(SIGHUP, NULL, &sa);
  ck_assert(sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN);
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("signals");
  TCase *tc = tcase_create("signals");
  tcase_add_test(tc, stop_signals_are_counted);
  tcase_add_test(tc, the_first_stop_signal_is_kept);
  tcase_add_test(tc, reload_is_taken_once);
  tcase_add_test(tc, install_forgets_earlier_signals);
  tcase_add_test(tc, only_the_requested_signals);
  suite_add_tcase(s, tc);
  return s;
}
