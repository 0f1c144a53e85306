/* model_numfmt_* write exactly what printf writes: "%llu", "%lld", and the
 * first of "%.15g", "%.16g", "%.17g" that strtod reads back as the value.
 * printf and strtod are the reference here, over chosen edges and over
 * random values of every class of double. */
#include <check.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numfmt.h"

/* The reference: the format the JSON encoder has always written. */
static void ref_double(double v, char out[40]) {
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(out, 40, "%.*g", prec, v);
    if (strtod(out, NULL) == v) break;
  }
}

static void check_double(double v) {
  char want[40], got[MODEL_NUMFMT_DOUBLE_MAX + 1];
  ref_double(v, want);
  size_t n = model_numfmt_double(got, v);
  ck_assert_uint_le(n, MODEL_NUMFMT_DOUBLE_MAX);
  got[n] = '\0';
  ck_assert_msg(!strcmp(got, want), "%a: got %s, want %s", v, got, want);
  ck_assert_msg(strtod(got, NULL) == v, "%a: %s does not read back", v, got);
  if (v == 0) ck_assert_int_eq(got[0] == '-', signbit(v) != 0);
}

static void check_u64(uint64_t v) {
  char want[32], got[MODEL_NUMFMT_U64_MAX + 1];
  snprintf(want, sizeof want, "%" PRIu64, v);
  size_t n = model_numfmt_u64(got, v);
  got[n] = '\0';
  ck_assert_msg(!strcmp(got, want), "got %s, want %s", got, want);
}

static void check_i64(int64_t v) {
  char want[32], got[MODEL_NUMFMT_I64_MAX + 1];
  snprintf(want, sizeof want, "%" PRId64, v);
  size_t n = model_numfmt_i64(got, v);
  got[n] = '\0';
  ck_assert_msg(!strcmp(got, want), "got %s, want %s", got, want);
}

static uint64_t rng = 0x9e3779b97f4a7c15ULL;
static uint64_t next(void) {
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return rng;
}

static double from_bits(uint64_t b) {
  double v;
  memcpy(&v, &b, sizeof v);
  return v;
}

START_TEST(test_integers) {
  static const int64_t edges[] = {0, 1, -1, 9, 10, 99, 100, 101, 999, 1000, -10, -99, -100, 4294967295LL,
                                  4294967296LL, 9007199254740991LL, 999999999999999999LL, 1000000000000000000LL,
                                  INT64_MAX, INT64_MAX - 1, INT64_MIN, INT64_MIN + 1};
  for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) {
    check_i64(edges[i]);
    check_u64((uint64_t)edges[i]);
  }
  check_u64(UINT64_MAX);
  check_u64(UINT64_MAX - 1);
  /* every power of ten and its neighbours */
  uint64_t p = 1;
  for (int k = 0; k < 20; k++, p *= 10) {
    check_u64(p - 1), check_u64(p), check_u64(p + 1);
    check_i64((int64_t)(p - 1)), check_i64(-(int64_t)(p - 1));
  }
  for (int i = 0; i < 20000; i++) {
    uint64_t x = next() >> (next() % 64);
    check_u64(x);
    check_i64((int64_t)x);
    check_i64(-(int64_t)(x >> 1));
  }
}
END_TEST

START_TEST(test_double_edges) {
  static const double edges[] = {0.0, -0.0, 1, -1, 0.1, 0.2, 0.3, 0.1 + 0.2, 1.0 / 3, 2.0 / 3, 40, 87.5, 95.5, 100,
                                 10000, 9999.995, 0.29, 1e-4, 1e-5, 1.5e-5, 1e-7, 1e15, 1e16, 1e17, 1e21, 1e22, 1e23,
                                 123456789012345.6, 1234567890123456.7, 999999999999999.9, 9999999999999998.0,
                                 1000000000000005.0, 1000000000000015.0, 9007199254740991.0, 9007199254740992.0,
                                 9007199254740994.0, 0.30000000000000004, 5e-324, 1e-323, 2.2250738585072009e-308,
                                 DBL_MIN, DBL_MAX, -DBL_MAX, DBL_EPSILON, 1 + DBL_EPSILON, 1 - DBL_EPSILON / 2,
                                 0.5, 0.25, 0.125, 0.0625, 0.03125, 1.0 / 1024, 1.0 / 1048576, 1e308, 1.7976931348623157e308,
                                 4.9406564584124654e-324, 123e-310, 0.000099999999999999991, 0.0001000000000000001};
  for (size_t i = 0; i < sizeof edges / sizeof *edges; i++) {
    check_double(edges[i]);
    check_double(-edges[i]);
  }
  /* the neighbours of every power of two and of every power of ten */
  for (int e = -1074; e <= 1023; e++) {
    double v = ldexp(1, e);
    check_double(v), check_double(nextafter(v, 0)), check_double(nextafter(v, INFINITY));
  }
  for (int e = -323; e <= 308; e++) {
    char s[16];
    snprintf(s, sizeof s, "1e%d", e);
    double v = strtod(s, NULL);
    check_double(v), check_double(nextafter(v, 0)), check_double(nextafter(v, INFINITY));
  }
  char b[MODEL_NUMFMT_DOUBLE_MAX];
  ck_assert_uint_eq(model_numfmt_double(b, NAN), 0);
  ck_assert_uint_eq(model_numfmt_double(b, INFINITY), 0);
  ck_assert_uint_eq(model_numfmt_double(b, -INFINITY), 0);
}
END_TEST

/* Points: 0..10000 with 0 to 4 decimals, and the halves and quarters. */
START_TEST(test_double_points) {
  for (int i = 0; i <= 20000; i++) check_double(i / 2.0), check_double(i / 4.0);
  static const double scale[] = {1, 10, 100, 1000, 10000};
  for (int i = 0; i < 50000; i++) {
    int d = (int)(next() % 5);
    double v = (double)(next() % (10000 * (uint64_t)scale[d] + 1)) / scale[d];
    check_double(v);
  }
  for (int i = 0; i < 30000; i++) check_double((double)(next() % 100000000) / (double)(1 + next() % 997));
}
END_TEST

/* Random bit patterns, subnormals, integers, large and small magnitudes. */
START_TEST(test_double_random) {
  for (int i = 0; i < 20000; i++) {
    double v = from_bits(next());
    if (isfinite(v)) check_double(v);
    check_double(from_bits(next() & 0x800FFFFFFFFFFFFFULL)); /* subnormal */
    check_double((double)(int64_t)next());                   /* integer, up to 19 digits */
    check_double((double)(next() >> (next() % 64)));
    double big = ldexp((double)(next() >> 11), (int)(next() % 2140) - 1127);
    if (isfinite(big)) check_double(big);
    check_double(ldexp((double)(next() >> (11 + next() % 50)), (int)(next() % 120) - 60));
  }
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("numfmt");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_integers);
  tcase_add_test(tc, test_double_edges);
  tcase_add_test(tc, test_double_points);
  tcase_add_test(tc, test_double_random);
  suite_add_tcase(s, tc);
  return s;
}
