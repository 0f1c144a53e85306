/* A plain timestamp parser, digit by digit, independent of
 * models/timestamp.c's word-at-a-time checks: the reference that
 * model_timestamp_parse() is compared with by the unit tests and by the
 * fuzz_scan_diff target. Same contract: YYYY-MM-DDTHH:MM:SS[.F{1,9}]Z, year
 * 0001..9999, a real calendar date, milliseconds since the epoch (finer
 * fractions truncate). */
#ifndef REF_TIMESTAMP_H
#define REF_TIMESTAMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

static bool ref_ts_digits(const char *s, int n, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (unsigned)(s[i] - '0');
  }
  *out = v;
  return true;
}

static int64_t ref_ts_days(int64_t y, unsigned m, unsigned d) {
  /* days since 1970-01-01, counted the long way: whole years, then months */
  static const unsigned mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int64_t days = 0;
  for (int64_t yy = 1970; yy < y; yy++) days += 365 + ((yy % 4 == 0 && yy % 100 != 0) || yy % 400 == 0);
  for (int64_t yy = y; yy < 1970; yy++) days -= 365 + ((yy % 4 == 0 && yy % 100 != 0) || yy % 400 == 0);
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  for (unsigned mm = 1; mm < m; mm++) days += mdays[mm - 1] + (mm == 2 && leap);
  return days + d - 1;
}

static bool ref_timestamp_parse(const char *s, size_t len, int64_t *ms) {
  if (len < 20 || len > 30) return false;
  unsigned y, mo, d, h, mi, se;
  if (!ref_ts_digits(s, 4, &y) || s[4] != '-' || !ref_ts_digits(s + 5, 2, &mo) || s[7] != '-' ||
      !ref_ts_digits(s + 8, 2, &d) || s[10] != 'T' || !ref_ts_digits(s + 11, 2, &h) || s[13] != ':' ||
      !ref_ts_digits(s + 14, 2, &mi) || s[16] != ':' || !ref_ts_digits(s + 17, 2, &se))
    return false;
  static const unsigned mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (y < 1 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || se > 59) return false;
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (d > mdays[mo - 1] + (mo == 2 && leap)) return false;
  size_t i = 19;
  unsigned millis = 0;
  if (s[i] == '.') {
    i++;
    size_t start = i;
    while (i < len && s[i] >= '0' && s[i] <= '9') i++;
    size_t nf = i - start;
    if (nf < 1 || nf > 9) return false;
    for (size_t k = 0; k < 3; k++) millis = millis * 10 + (k < nf ? (unsigned)(s[start + k] - '0') : 0);
  }
  if (i != len - 1 || s[i] != 'Z') return false;
  *ms = ((ref_ts_days(y, mo, d) * 24 + h) * 60 + mi) * 60000 + (int64_t)se * 1000 + millis;
  return true;
}

#endif
