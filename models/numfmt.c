/* Integers: digits from the right, two at a time.
 *
 * Doubles: the first of "%.15g", "%.16g", "%.17g" that reads back as v is
 * a function of three exact facts: v's exact decimal value rounded to 15,
 * 16 and 17 significant digits (half to even, as glibc rounds), and whether
 * each rounded decimal lies within v's rounding interval (strtod rounds to
 * nearest, ties to even: the interval's ends belong to v when its
 * significand is even). Both are computed exactly here, in two ways:
 *
 * - The fast path finds a decimal N / 10^k with N below 2^53 and k at most
 *   22 that reads back as v. Both operands are then exact doubles, so one
 *   IEEE division is the correctly rounded value of N / 10^k, which is what
 *   strtod gives: the test (double)N / 10^k == v is exact. When N has at most
 *   15 significant digits, "%.15g" of v is that decimal: a double is within
 *   2^-53 of its value, relatively, and 15 digits are spaced more than twice
 *   that apart, so rounding v to 15 digits lands back on N / 10^k. Points
 *   with a few decimals take this path.
 * - Everything else (16 or 17 digits, large and tiny magnitudes, subnormals)
 *   takes the exact path: v = m * 2^e is a finite decimal, m * 2^e or
 *   m * 5^-e / 10^-e, written out in full with base-10^9 big integers, and
 *   so are the two ends of its rounding interval; rounding and comparing are
 *   then operations on digit strings. */
#include "numfmt.h"

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <string.h>

static const char digit_pairs[201] = "00010203040506070809"
                                     "10111213141516171819"
                                     "20212223242526272829"
                                     "30313233343536373839"
                                     "40414243444546474849"
                                     "50515253545556575859"
                                     "60616263646566676869"
                                     "70717273747576777879"
                                     "80818283848586878889"
                                     "90919293949596979899";

/* 10^i, i = 0..19. */
static const uint64_t pow10_u64[20] = {1ULL,
                                       10ULL,
                                       100ULL,
                                       1000ULL,
                                       10000ULL,
                                       100000ULL,
                                       1000000ULL,
                                       10000000ULL,
                                       100000000ULL,
                                       1000000000ULL,
                                       10000000000ULL,
                                       100000000000ULL,
                                       1000000000000ULL,
                                       10000000000000ULL,
                                       100000000000000ULL,
                                       1000000000000000ULL,
                                       10000000000000000ULL,
                                       100000000000000000ULL,
                                       1000000000000000000ULL,
                                       10000000000000000000ULL};

/* The digits go straight to their place in out: their count first, then
 * from the right, two at a time. The count without a loop (a version in
 * milliseconds has 13 digits, a loop over the powers took a step each): v
 * has b = 64 - clz(v) bits, 2^(b-1) <= v < 2^b, so it has t or t + 1
 * digits, t = floor(b log10 2), which (b * 1233) >> 12 is for every b from
 * 1 to 64 (1233 / 4096 = 0.301025, log10 2 = 0.30103); t + 1 when v >=
 * 10^t. t is at most 19. */
size_t model_numfmt_u64(char *out, uint64_t v) {
  if (v < 10) {
    out[0] = (char)('0' + v);
    return 1;
  }
  unsigned b = 64u - (unsigned)__builtin_clzll(v);
  size_t n = (b * 1233u) >> 12;
  n += v >= pow10_u64[n];
  char *p = out + n;
  while (v >= 100) {
    unsigned r = (unsigned)(v % 100);
    v /= 100;
    p -= 2;
    memcpy(p, digit_pairs + 2 * r, 2);
  }
  if (v >= 10) {
    p -= 2;
    memcpy(p, digit_pairs + 2 * v, 2);
  } else {
    *--p = (char)('0' + v);
  }
  return n;
}

size_t model_numfmt_i64(char *out, int64_t v) {
  if (v >= 0) return model_numfmt_u64(out, (uint64_t)v);
  out[0] = '-';
  /* the magnitude in unsigned arithmetic: INT64_MIN has no positive int64 */
  return 1 + model_numfmt_u64(out + 1, 0 - (uint64_t)v);
}

/* ---- decimals as digit strings ---- */

/* The longest exact decimal: an interval end (4m - 1) * 2^-1076 has 17
 * digits of significand times 5^1076, 753 digits. */
enum { DEC_DIGITS = 800, LIMBS = 92, LIMB_BASE = 1000000000 };

/* A positive decimal 0.d[0] d[1] ... d[n-1] * 10^e with d[0] and d[n-1]
 * nonzero; digits are values 0..9, not characters. */
typedef struct {
  unsigned char d[DEC_DIGITS];
  int n;
  int e;
} dec_t;

/* Multiplies the little-endian base-10^9 integer x[0..*n) by f < 2^32:
 * a limb times f plus a carry stays below 2^64. */
static void big_mul(uint32_t *x, int *n, uint32_t f) {
  uint64_t carry = 0;
  for (int i = 0; i < *n; i++) {
    uint64_t t = (uint64_t)x[i] * f + carry;
    x[i] = (uint32_t)(t % LIMB_BASE);
    carry = t / LIMB_BASE;
  }
  while (carry) {
    x[(*n)++] = (uint32_t)(carry % LIMB_BASE);
    carry /= LIMB_BASE;
  }
}

/* The exact decimal value of m * 2^e2, m > 0 and below 2^56. */
static void dec_exact(uint64_t m, int e2, dec_t *out) {
  uint32_t x[LIMBS];
  int n = 0;
  for (; m; m /= LIMB_BASE) x[n++] = (uint32_t)(m % LIMB_BASE);
  int frac = 0; /* the value is x / 10^frac */
  if (e2 >= 0) {
    for (; e2 >= 31; e2 -= 31) big_mul(x, &n, UINT32_C(1) << 31);
    if (e2) big_mul(x, &n, UINT32_C(1) << e2);
  } else {
    /* m / 2^k = m * 5^k / 10^k */
    frac = -e2;
    int k = -e2;
    for (; k >= 13; k -= 13) big_mul(x, &n, 1220703125u); /* 5^13 */
    uint32_t f = 1;
    while (k--) f *= 5;
    if (f > 1) big_mul(x, &n, f);
  }
  int nd = 0;
  for (int i = n - 1; i >= 0; i--) {
    uint32_t limb = x[i];
    unsigned char nine[9];
    for (int j = 8; j >= 0; j--, limb /= 10) nine[j] = (unsigned char)(limb % 10);
    int j = 0;
    if (i == n - 1)
      while (j < 8 && nine[j] == 0) j++; /* no leading zeros */
    for (; j < 9; j++) out->d[nd++] = nine[j];
  }
  out->e = nd - frac;
  while (out->d[nd - 1] == 0) nd--;
  out->n = nd;
}

/* x rounded to p significant digits, half to even. */
static void dec_round(const dec_t *x, int p, dec_t *r) {
  r->e = x->e;
  if (x->n <= p) {
    memcpy(r->d, x->d, (size_t)x->n);
    r->n = x->n;
    return;
  }
  memcpy(r->d, x->d, (size_t)p);
  int n = p;
  bool up;
  if (x->d[p] != 5) up = x->d[p] > 5;
  else up = x->n > p + 1 || (x->d[p - 1] & 1); /* x has no trailing zeros: more digits mean above half */
  if (up) {
    while (n > 0 && r->d[n - 1] == 9) n--;
    if (n == 0) {
      r->d[0] = 1;
      n = 1;
      r->e++;
    } else {
      r->d[n - 1]++;
    }
  }
  while (r->d[n - 1] == 0) n--;
  r->n = n;
}

static int dec_cmp(const dec_t *a, const dec_t *b) {
  if (a->e != b->e) return a->e < b->e ? -1 : 1;
  int n = a->n > b->n ? a->n : b->n;
  for (int i = 0; i < n; i++) {
    int x = i < a->n ? a->d[i] : 0, y = i < b->n ? b->d[i] : 0;
    if (x != y) return x < y ? -1 : 1;
  }
  return 0;
}

/* Writes x in "%.<p>g" form (x already has at most p digits and no
 * trailing zeros, which %g removes). */
static size_t format_g(char *out, bool neg, const dec_t *x, int p) {
  char *o = out;
  if (neg) *o++ = '-';
  int exp10 = x->e - 1; /* x = d.ddd * 10^exp10 */
  if (exp10 < -4 || exp10 >= p) {
    *o++ = (char)('0' + x->d[0]);
    if (x->n > 1) {
      *o++ = '.';
      for (int i = 1; i < x->n; i++) *o++ = (char)('0' + x->d[i]);
    }
    *o++ = 'e';
    *o++ = exp10 < 0 ? '-' : '+';
    unsigned a = (unsigned)(exp10 < 0 ? -exp10 : exp10);
    if (a >= 100) *o++ = (char)('0' + a / 100);
    *o++ = (char)('0' + a / 10 % 10);
    *o++ = (char)('0' + a % 10);
  } else if (exp10 >= 0) {
    for (int i = 0; i <= exp10; i++) *o++ = (char)('0' + (i < x->n ? x->d[i] : 0));
    if (x->n > exp10 + 1) {
      *o++ = '.';
      for (int i = exp10 + 1; i < x->n; i++) *o++ = (char)('0' + x->d[i]);
    }
  } else {
    *o++ = '0';
    *o++ = '.';
    for (int i = -1; i > exp10; i--) *o++ = '0';
    for (int i = 0; i < x->n; i++) *o++ = (char)('0' + x->d[i]);
  }
  return (size_t)(o - out);
}

/* ---- the two paths ---- */

/* 10^0 .. 10^22: the powers of ten that doubles hold exactly. */
static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                       1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* The fast path: true, with x set, when a decimal of at most 15 significant
 * digits N / 10^k (N < 2^53, k <= 22) reads back as a (a > 0). A candidate
 * N is the nearest integer to a * 10^k; below 10^15 the product's rounding
 * error and a's distance from the decimal add up to less than a quarter, so
 * candidates further than that from an integer are skipped without the
 * division. Skipping is never wrong, only slower: the exact path follows. */
static bool fast_decimal(double a, dec_t *x) {
#if FLT_EVAL_METHOD != 0
  (void)a, (void)x;
  return false; /* the exactness argument needs plain double arithmetic */
#else
  for (int k = 0; k <= 22; k++) {
    double s = a * pow10_exact[k];
    if (s >= 9007199254740992.0) return false; /* 2^53 */
    if (s < 0.75) continue;
    uint64_t n = (uint64_t)(s + 0.5);
    double diff = s - (double)n;
    if (diff > 0.25 || diff < -0.25) continue;
    if ((double)n / pow10_exact[k] != a) continue;
    char tmp[MODEL_NUMFMT_U64_MAX];
    int nd = (int)model_numfmt_u64(tmp, n);
    int len = nd;
    while (tmp[len - 1] == '0') len--;
    if (len > 15) return false;
    for (int i = 0; i < len; i++) x->d[i] = (unsigned char)(tmp[i] - '0');
    x->n = len;
    x->e = nd - k;
    return true;
  }
  return false;
#endif
}

size_t model_numfmt_double(char *out, double v) {
  if (!isfinite(v)) return 0;
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  bool neg = bits >> 63;
  if (v == 0) {
    if (neg) *out++ = '-';
    *out = '0';
    return 1 + neg;
  }
  dec_t exact, r;
  if (fast_decimal(fabs(v), &r)) return format_g(out, neg, &r, 15);

  unsigned biased = (unsigned)(bits >> 52) & 0x7ff;
  uint64_t frac = bits & ((UINT64_C(1) << 52) - 1);
  uint64_t m = biased ? frac | UINT64_C(1) << 52 : frac;
  int e2 = biased ? (int)biased - 1075 : -1074;
  /* the rounding interval: halfway to each neighbour; below a power of two
   * (other than the smallest normal) the lower neighbour is half as far */
  dec_t lo, hi;
  if (frac == 0 && biased > 1) dec_exact(4 * m - 1, e2 - 2, &lo);
  else dec_exact(2 * m - 1, e2 - 1, &lo);
  dec_exact(2 * m + 1, e2 - 1, &hi);
  bool ends_in = (m & 1) == 0;
  dec_exact(m, e2, &exact);
  for (int p = 15; p < 17; p++) {
    dec_round(&exact, p, &r);
    int cl = dec_cmp(&r, &lo), ch = dec_cmp(&r, &hi);
    if ((cl > 0 || (cl == 0 && ends_in)) && (ch < 0 || (ch == 0 && ends_in))) return format_g(out, neg, &r, p);
  }
  dec_round(&exact, 17, &r); /* 17 digits always read back */
  return format_g(out, neg, &r, 17);
}
