#include "timestamp.h"

#include <string.h>

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

static bool is_leap(unsigned y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

static inline uint64_t load8(const char *s) {
  uint64_t w;
  memcpy(&w, s, 8);
  return w;
}

/* Whether every byte of w is 0..9. A byte above 9 sets bit 7 of itself (when
 * >= 0x80) or of itself plus 0x76; a carry out of a byte happens only when
 * that byte is already >= 0x8A, so it cannot hide a failure. */
static inline bool all_below_10(uint64_t w) {
  return ((w | (w + 0x7676767676767676ULL)) & 0x8080808080808080ULL) == 0;
}

/* Days since 1970-01-01 of a valid date, year >= 1: the calendar counted
 * from March (so that a leap day ends its year), year 0's March 1st being
 * day 0 (719468 days before the epoch). With the year >= 0 no era split is
 * needed: y/400 is (y/100)/4. */
static inline int64_t days_of(unsigned y, unsigned mo, unsigned dd) {
  static const uint16_t from_march[13] = {0, 306, 337, 0, 31, 61, 92, 122, 153, 184, 214, 245, 275};
  unsigned yy = y - (mo <= 2), c = yy / 100;
  return (int64_t)(yy * 365 + yy / 4 - c + c / 4 + from_march[mo] + dd - 1) - 719468;
}

/* model_timestamp_parse() for len 20..30; milli is len == 24, a constant in
 * each of the two instances below. */
static inline __attribute__((always_inline)) bool parse(const char *s, size_t len, bool milli, int64_t *ms) {
  /* 01234567890123456789 0123
   * YYYY-MM-DDTHH:MM:SS[.F{1,9}]Z
   * The fixed part is checked as overlapping 8-byte words: XOR with a
   * template of '0' digits and the separators leaves every byte 0..9, and
   * the separators' bytes 0. Loads and templates both go through memory, so
   * the check holds on either byte order. The common form, milliseconds
   * (24 bytes), is three words that cover all of it: [0, 8), [8, 16) and
   * [16, 24) (":SS.fffZ"); any other length checks [11, 19) ("HH:MM:SS")
   * as its third word and its fraction digit by digit. */
  uint64_t t0, t1, t2, m0, m1, m2;
  memcpy(&t0, "0000-00-", 8);
  memcpy(&t1, "00T00:00", 8);
  memcpy(&m0, "\0\0\0\0\xff\0\0\xff", 8);
  memcpy(&m1, "\0\0\xff\0\0\xff\0\0", 8);
  if (milli) {
    memcpy(&t2, ":00.000Z", 8);
    memcpy(&m2, "\xff\0\0\xff\0\0\0\xff", 8);
  } else {
    memcpy(&t2, "00:00:00", 8);
    memcpy(&m2, "\0\0\xff\0\0\xff\0\0", 8);
  }
  uint64_t a = load8(s) ^ t0, b = load8(s + 8) ^ t1, c = load8(s + (milli ? 16 : 11)) ^ t2;
  if (!all_below_10(a) || !all_below_10(b) || !all_below_10(c) || ((a & m0) | (b & m1) | (c & m2)) != 0)
    return false;
  unsigned millis = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  /* The words now hold digit values (separators 0), first byte lowest:
   * w * 10 + (w >> 8) puts each two-digit number at its first byte. */
  uint64_t pa = a * 10 + (a >> 8), pb = b * 10 + (b >> 8), pc = c * 10 + (c >> 8);
  unsigned y = (unsigned)(pa & 0xFF) * 100 + (unsigned)((pa >> 16) & 0xFF), mo = (unsigned)((pa >> 40) & 0xFF);
  unsigned dd = (unsigned)(pb & 0xFF), h = (unsigned)((pb >> 24) & 0xFF), mi = (unsigned)((pb >> 48) & 0xFF);
  unsigned se = (unsigned)((pc >> (milli ? 8 : 48)) & 0xFF);
  if (milli) millis = (unsigned)((pc >> 32) & 0xFF) * 10 + (unsigned)((c >> 48) & 0xFF);
#else
#define d(s, i) ((unsigned)((s)[i] - '0'))
  unsigned y = d(s, 0) * 1000 + d(s, 1) * 100 + d(s, 2) * 10 + d(s, 3);
  unsigned mo = d(s, 5) * 10 + d(s, 6), dd = d(s, 8) * 10 + d(s, 9);
  unsigned h = d(s, 11) * 10 + d(s, 12), mi = d(s, 14) * 10 + d(s, 15), se = d(s, 17) * 10 + d(s, 18);
  if (milli) millis = d(s, 20) * 100 + d(s, 21) * 10 + d(s, 22);
#undef d
#endif
  if (y < 1 || mo < 1 || mo > 12 || dd < 1 || h > 23 || mi > 59 || se > 59) return false;
  static const unsigned char mdays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (dd > mdays[mo - 1] && !(mo == 2 && dd == 29 && is_leap(y))) return false;
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
  *ms = ((days_of(y, mo, dd) * 24 + h) * 60 + mi) * 60000 + (int64_t)se * 1000 + millis;
  return true;
}

static __attribute__((noinline)) bool parse_other(const char *s, size_t len, int64_t *ms) {
  return parse(s, len, false, ms);
}

bool model_timestamp_parse(const char *s, size_t len, int64_t *ms) {
  if (len == 24) return parse(s, 24, true, ms);
  if (len < 20 || len > 30) return false;
  return parse_other(s, len, ms);
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
