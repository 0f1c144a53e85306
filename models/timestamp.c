#include "timestamp.h"

#include <string.h>

#include "timestamp_parse.h"

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

static __attribute__((noinline)) bool parse_other(const char *s, size_t len, int64_t *ms) {
  return model_timestamp_parse_at(s, len, false, ms);
}

bool model_timestamp_parse(const char *s, size_t len, int64_t *ms) {
  if (len == 24) return model_timestamp_parse_at(s, 24, true, ms);
  if (len < 20 || len > 30) return false;
  return parse_other(s, len, ms);
}

/* Writes v (0..99) as two digits; v * 103 >> 10 is v / 10 for every v
 * below 179. */
static inline void put2(char *p, unsigned v) {
  unsigned t = v * 103 >> 10;
  p[0] = (char)('0' + t);
  p[1] = (char)('0' + (v - 10 * t));
}

size_t model_timestamp_format(int64_t ms, char out[MODEL_TIMESTAMP_LEN + 1]) {
  int64_t days = ms >= 0 ? ms / 86400000 : -((-ms + 86399999) / 86400000);
  int64_t rem = ms - days * 86400000; /* 0..86399999 */
  int64_t y;
  unsigned m, d;
  civil_from_days(days, &y, &m, &d);
  unsigned r = (unsigned)rem, yv = (unsigned)y % 10000, ms3 = r % 1000;
  put2(out, yv / 100);
  put2(out + 2, yv % 100);
  out[4] = '-';
  put2(out + 5, m);
  out[7] = '-';
  put2(out + 8, d);
  out[10] = 'T';
  put2(out + 11, r / 3600000);
  out[13] = ':';
  put2(out + 14, r / 60000 % 60);
  out[16] = ':';
  put2(out + 17, r / 1000 % 60);
  out[19] = '.';
  out[20] = (char)('0' + ms3 / 100);
  put2(out + 21, ms3 % 100);
  out[23] = 'Z';
  out[24] = '\0';
  return MODEL_TIMESTAMP_LEN;
}
