/* The parsing of model_timestamp_parse() (timestamp.h), inline for the
 * decode of a command, which parses one or more timestamps per command and
 * spares the call for the common form (milliseconds, 24 bytes). Included by
 * timestamp.c and command.c only. It calls nothing of theirs: the parse
 * sits under both, and no include runs back up to them. */
#ifndef MODEL_TIMESTAMP_PARSE_H
#define MODEL_TIMESTAMP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "timestamp.h"

static inline bool model_timestamp_is_leap(unsigned y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

/* Whether every byte of w is at most its limit, w's bytes being below 0x80
 * or failing: bias holds 0x80 - 1 - limit in each byte, and a byte above its
 * limit sets bit 7 of itself plus its bias, a byte >= 0x80 bit 7 of itself.
 * Only such a byte carries out of its sum, and it fails anyway, so the
 * carry cannot hide a failure. Limits here: 9 for a digit (bias 0x76), 0
 * for a separator after the XOR with its template (bias 0x7F). */
static inline uint64_t model_timestamp_over_limit(uint64_t w, uint64_t bias) {
  return (w | (w + bias)) & 0x8080808080808080ULL;
}

/* Days since 1970-01-01 of a valid date, year >= 1: the calendar counted
 * from March (so that a leap day ends its year), year 0's March 1st being
 * day 0 (719468 days before the epoch). With the year >= 0 no era split is
 * needed: y/400 is (y/100)/4. */
static inline int64_t model_timestamp_days_of(unsigned y, unsigned mo, unsigned dd) {
  static const uint16_t from_march[13] = {0, 306, 337, 0, 31, 61, 92, 122, 153, 184, 214, 245, 275};
  unsigned yy = y - (mo <= 2), c = yy / 100;
  return (int64_t)(yy * 365 + yy / 4 - c + c / 4 + from_march[mo] + dd - 1) - 719468;
}

/* The days of each month number 0..99 in a common year; 0 for a number
 * that is no month, so that the day check (day >= 1) refuses it. */
static const unsigned char model_timestamp_month_days[100] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};

static inline uint64_t model_timestamp_load8(const char *s) {
  uint64_t w;
  memcpy(&w, s, 8);
  return w;
}

/* model_timestamp_parse() for len 20..30; milli is len == 24, a constant
 * at each call. */
static inline __attribute__((always_inline)) bool model_timestamp_parse_at(const char *s, size_t len, bool milli,
                                                                           int64_t *ms) {
  /* 01234567890123456789 0123
   * YYYY-MM-DDTHH:MM:SS[.F{1,9}]Z
   * The fixed part is checked as overlapping 8-byte words: XOR with a
   * template of '0' digits and the separators leaves every digit's byte
   * 0..9 and every separator's byte 0, which model_timestamp_over_limit checks with one
   * bias per word. Loads, templates and biases all go through memory, so
   * the check holds on either byte order. The common form, milliseconds
   * (24 bytes), is three words that cover all of it: [0, 8), [8, 16) and
   * [16, 24) (":SS.fffZ"); any other length checks [11, 19) ("HH:MM:SS")
   * as its third word and its fraction digit by digit. */
  uint64_t t0, t1, t2, b0, b1, b2;
  memcpy(&t0, "0000-00-", 8);
  memcpy(&t1, "00T00:00", 8);
  memcpy(&b0, "\x76\x76\x76\x76\x7f\x76\x76\x7f", 8);
  memcpy(&b1, "\x76\x76\x7f\x76\x76\x7f\x76\x76", 8);
  if (milli) {
    memcpy(&t2, ":00.000Z", 8);
    memcpy(&b2, "\x7f\x76\x76\x7f\x76\x76\x76\x7f", 8);
  } else {
    memcpy(&t2, "00:00:00", 8);
    memcpy(&b2, "\x76\x76\x7f\x76\x76\x7f\x76\x76", 8);
  }
  uint64_t a = model_timestamp_load8(s) ^ t0, b = model_timestamp_load8(s + 8) ^ t1;
  uint64_t c = model_timestamp_load8(s + (milli ? 16 : 11)) ^ t2;
  if (model_timestamp_over_limit(a, b0) | model_timestamp_over_limit(b, b1) | model_timestamp_over_limit(c, b2))
    return false;
  unsigned millis = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  /* The words now hold digit values (separators 0), first byte lowest:
   * w * 10 + (w >> 8) puts each two-digit number at its first byte, and
   * every byte of the result is at most 99 (no carries between bytes). The
   * clock's fields are checked together the same way as the digits: in
   * "DDTHH:MM" the day at byte 0 must be >= 1 (adding 0x80 - 1 sets bit 7),
   * the hour at byte 3 <= 23 and the minute at byte 6 <= 59 (adding
   * 0x80 - 24 and 0x80 - 60 leaves bit 7 clear); the second, at its byte
   * of the third word, <= 59 the same way. */
  uint64_t pa = a * 10 + (a >> 8), pb = b * 10 + (b >> 8), pc = c * 10 + (c >> 8);
  unsigned y = (unsigned)(pa & 0xFF) * 100 + (unsigned)((pa >> 16) & 0xFF), mo = (unsigned)((pa >> 40) & 0xFF);
  unsigned dd = (unsigned)(pb & 0xFF), h = (unsigned)((pb >> 24) & 0xFF), mi = (unsigned)((pb >> 48) & 0xFF);
  unsigned se_at = milli ? 8 : 48, se = (unsigned)((pc >> se_at) & 0xFF);
  const uint64_t clock_bias = (0x80ULL - 60) << 48 | (0x80ULL - 24) << 24 | (0x80ULL - 1);
  uint64_t clock = ((pb & 0x00FF0000FF0000FFULL) + clock_bias) & 0x0080000080000080ULL;
  uint64_t sec = ((pc & (0xFFULL << se_at)) + ((0x80ULL - 60) << se_at)) & (0x80ULL << se_at);
  if ((clock ^ 0x80) | sec) return false;
  if (milli) millis = (unsigned)((pc >> 32) & 0xFF) * 10 + (unsigned)((c >> 48) & 0xFF);
#else
#define d(s, i) ((unsigned)((s)[i] - '0'))
  unsigned y = d(s, 0) * 1000 + d(s, 1) * 100 + d(s, 2) * 10 + d(s, 3);
  unsigned mo = d(s, 5) * 10 + d(s, 6), dd = d(s, 8) * 10 + d(s, 9);
  unsigned h = d(s, 11) * 10 + d(s, 12), mi = d(s, 14) * 10 + d(s, 15), se = d(s, 17) * 10 + d(s, 18);
  if (milli) millis = d(s, 20) * 100 + d(s, 21) * 10 + d(s, 22);
#undef d
  if (dd < 1 || h > 23 || mi > 59 || se > 59) return false;
#endif
  /* The month's range goes with the day's: model_timestamp_month_days is 0 for a number
   * that is no month. */
  if (y < 1 || (dd > model_timestamp_month_days[mo] && !(mo == 2 && dd == 29 && model_timestamp_is_leap(y))))
    return false;
  if (!milli) {
    size_t i = 19;
    if (s[i] == '.') {
      i++;
      size_t start = i;
      while (i < len && s[i] >= '0' && s[i] <= '9') {
        if (i - start < 3) millis = millis * 10 + (unsigned)(s[i] - '0');
        i++;
      }
      size_t nf = i - start;
      if (nf < 1 || nf > 9) return false;
      static const unsigned short scale[3] = {1, 100, 10};
      if (nf < 3) millis *= scale[nf];
    }
    if (i != len - 1 || s[i] != 'Z') return false;
  }
  *ms = model_timestamp_days_of(y, mo, dd) * 86400000 + (int64_t)(h * 3600000 + mi * 60000 + se * 1000 + millis);
  return true;
}

#endif
