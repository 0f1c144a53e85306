#include "timestamp.h"

int64_t model_days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = (unsigned)(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = (unsigned)(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = (int64_t)yoe + era * 400 + (*m <= 2);
}

static bool digits(const char *s, int n, unsigned *out) {
  unsigned v = 0;
  for (int i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    v = v * 10 + (unsigned)(s[i] - '0');
  }
  *out = v;
  return true;
}

static bool is_leap(unsigned y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

bool model_timestamp_parse(const char *s, size_t len, int64_t *ms) {
  /* 0123456789012345678 9
   * YYYY-MM-DDTHH:MM:SS[.F{1,9}]Z */
  if (len < 20 || len > 30) return false;
  unsigned y, mo, d, h, mi, se;
  if (!digits(s, 4, &y) || s[4] != '-' || !digits(s + 5, 2, &mo) || s[7] != '-' ||
      !digits(s + 8, 2, &d) || s[10] != 'T' || !digits(s + 11, 2, &h) || s[13] != ':' ||
      !digits(s + 14, 2, &mi) || s[16] != ':' || !digits(s + 17, 2, &se))
    return false;
  if (y < 1 || mo < 1 || mo > 12 || d < 1 || h > 23 || mi > 59 || se > 59) return false;
  static const unsigned mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  unsigned dim = mdays[mo - 1] + (mo == 2 && is_leap(y));
  if (d > dim) return false;
  size_t i = 19;
  unsigned millis = 0;
  if (s[i] == '.') {
    i++;
    size_t start = i;
    while (i < len && s[i] >= '0' && s[i] <= '9') {
      if (i - start < 3) millis = millis * 10 + (unsigned)(s[i] - '0');
      i++;
    }
    size_t nf = i - start;
    if (nf < 1 || nf > 9) return false;
    for (size_t k = nf; k < 3; k++) millis *= 10;
  }
  if (i != len - 1 || s[i] != 'Z') return false;
  int64_t days = model_days_from_civil(y, mo, d);
  *ms = ((days * 24 + h) * 60 + mi) * 60000 + (int64_t)se * 1000 + millis;
  return true;
}

static void put(char *p, unsigned v, int n) {
  for (int i = n - 1; i >= 0; i--) {
    p[i] = (char)('0' + v % 10);
    v /= 10;
  }
}

size_t model_timestamp_format(int64_t ms, char out[MODEL_TIMESTAMP_LEN + 1]) {
  int64_t days = ms >= 0 ? ms / 86400000 : -((-ms + 86399999) / 86400000);
  int64_t rem = ms - days * 86400000; /* 0..86399999 */
  int64_t y;
  unsigned m, d;
  civil_from_days(days, &y, &m, &d);
  unsigned r = (unsigned)rem;
  put(out, (unsigned)y, 4);
  out[4] = '-';
  put(out + 5, m, 2);
  out[7] = '-';
  put(out + 8, d, 2);
  out[10] = 'T';
  put(out + 11, r / 3600000, 2);
  out[13] = ':';
  put(out + 14, r / 60000 % 60, 2);
  out[16] = ':';
  put(out + 17, r / 1000 % 60, 2);
  out[19] = '.';
  put(out + 20, r % 1000, 3);
  out[23] = 'Z';
  out[24] = '\0';
  return MODEL_TIMESTAMP_LEN;
}
