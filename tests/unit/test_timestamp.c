/* model_timestamp_parse() against a plain digit-by-digit reference
 * (ref_timestamp.h): every byte value at every position of timestamps of
 * each length, every day of years around the leap rules, the ends of
 * February and of the year in every year, and random
 * strings over the timestamp alphabet. Verdicts and values must agree.
 * model_timestamp_format() against gmtime_r and snprintf. */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "timestamp.h"
#include "../fuzz/ref_timestamp.h"

static void same(const char *s, size_t n) {
  int64_t a = 0x5555, b = 0x5555;
  bool ra = model_timestamp_parse(s, n, &a), rb = ref_timestamp_parse(s, n, &b);
  ck_assert_msg(ra == rb, "verdict differs on \"%.*s\": %d, reference %d", (int)n, s, ra, rb);
  ck_assert_msg(a == b, "value differs on \"%.*s\": %lld, reference %lld", (int)n, s, (long long)a,
                (long long)b);
}

START_TEST(test_every_byte_everywhere) {
  static const char *const bases[] = {
      "2026-09-01T08:00:00Z",          "2024-02-29T23:59:59.9Z",        "2000-02-29T00:00:00.12Z",
      "0001-01-01T00:00:00.123Z",      "9999-12-31T23:59:59.1234Z",     "1970-01-01T00:00:00.123456789Z",
      "2023-02-28T12:34:56.98765Z",    "1900-03-01T01:02:03.000000Z",
  };
  char buf[40];
  for (size_t bi = 0; bi < sizeof bases / sizeof bases[0]; bi++) {
    size_t n = strlen(bases[bi]);
    same(bases[bi], n);
    for (size_t pos = 0; pos < n; pos++)
      for (int c = 0; c < 256; c++) {
        memcpy(buf, bases[bi], n);
        buf[pos] = (char)c;
        same(buf, n);
      }
    for (size_t k = 0; k < n; k++) same(bases[bi], k);
  }
}
END_TEST

START_TEST(test_calendar) {
  static const int years[] = {1, 4, 100, 400, 1600, 1700, 1900, 1969, 1970, 1971, 2000, 2023, 2024, 2100, 9996, 9999};
  char buf[40];
  for (size_t yi = 0; yi < sizeof years / sizeof years[0]; yi++)
    for (int m = 0; m <= 13; m++)
      for (int d = 0; d <= 32; d++) {
        int n = snprintf(buf, sizeof buf, "%04d-%02d-%02dT23:59:59.999Z", years[yi], m, d);
        same(buf, (size_t)n);
      }
  /* every year: the days around the end of February and of the year */
  static const char *const days[] = {"01-01", "02-28", "02-29", "03-01", "12-31"};
  for (int y = 1; y <= 9999; y++)
    for (size_t di = 0; di < sizeof days / sizeof days[0]; di++) {
      int n = snprintf(buf, sizeof buf, "%04d-%sT00:00:00.000Z", y, days[di]);
      same(buf, (size_t)n);
      n = snprintf(buf, sizeof buf, "%04d-%sT12:00:00Z", y, days[di]);
      same(buf, (size_t)n);
    }
}
END_TEST

/* Every value 00..99 of each clock field and of the month and the day, in
 * both forms: the limits (hour 23, minute and second 59, day 1, month
 * 1..12) are checked apart from the digits, on the packed pairs. */
START_TEST(test_field_values) {
  static const char *const bases[] = {"2024-02-29T23:59:59.999Z", "2024-02-29T23:59:59Z", "2023-12-31T00:00:00.5Z"};
  static const size_t at[] = {5, 8, 11, 14, 17};
  char buf[40];
  for (size_t bi = 0; bi < sizeof bases / sizeof bases[0]; bi++) {
    size_t n = strlen(bases[bi]);
    for (size_t f = 0; f < sizeof at / sizeof at[0]; f++)
      for (int v = 0; v < 100; v++) {
        memcpy(buf, bases[bi], n);
        buf[at[f]] = (char)('0' + v / 10);
        buf[at[f] + 1] = (char)('0' + v % 10);
        same(buf, n);
      }
  }
}
END_TEST

START_TEST(test_random) {
  static const char alphabet[] = "0123456789-:.TZ9012345";
  uint64_t r = 0x243F6A8885A308D3ULL;
  char buf[40];
  for (int i = 0; i < 200000; i++) {
    memcpy(buf, "2026-09-01T08:00:00.123456789Z", 30);
    size_t n = 20 + (size_t)(i % 11);
    buf[19] = n > 20 ? '.' : 'Z';
    buf[n - 1] = 'Z';
    for (int k = 0; k < 3; k++) {
      r ^= r << 13, r ^= r >> 7, r ^= r << 17;
      buf[r % n] = alphabet[(r >> 8) % (sizeof alphabet - 1)];
    }
    same(buf, n);
  }
}
END_TEST

/* model_timestamp_format() against gmtime_r and snprintf: the ends of the
 * range, every millisecond digit and random instants of years 0001..9999. */
static void same_format(int64_t ms) {
  char got[MODEL_TIMESTAMP_LEN + 1], want[64];
  int64_t sec = ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000);
  time_t t = (time_t)sec;
  struct tm tm;
  ck_assert(gmtime_r(&t, &tm) != NULL);
  snprintf(want, sizeof want, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
           tm.tm_hour, tm.tm_min, tm.tm_sec, (int)(ms - sec * 1000));
  ck_assert_uint_eq(model_timestamp_format(ms, got), MODEL_TIMESTAMP_LEN);
  ck_assert_msg(!strcmp(got, want), "%lld: got %s, want %s", (long long)ms, got, want);
}

START_TEST(test_format) {
  static const int64_t edges[] = {-62135596800000LL, -62135596799999LL, -1, 0, 1, 999, 1000, 86399999, 86400000,
                                  951782400000LL, 253402300799999LL};
  for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) same_format(edges[i]);
  for (int64_t k = 0; k < 1000; k++) same_format(1788220800000LL + k * 1001);
  uint64_t r = 0x9E3779B97F4A7C15ULL;
  for (int i = 0; i < 200000; i++) {
    r ^= r << 13, r ^= r >> 7, r ^= r << 17;
    same_format((int64_t)(r % 315537897600000ULL) - 62135596800000LL);
  }
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("timestamp");
  TCase *tc = tcase_create("timestamp");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_every_byte_everywhere);
  tcase_add_test(tc, test_calendar);
  tcase_add_test(tc, test_field_values);
  tcase_add_test(tc, test_random);
  tcase_add_test(tc, test_format);
  suite_add_tcase(s, tc);
  return s;
}
