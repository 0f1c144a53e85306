/* libFuzzer target for models/numfmt.c: differential against printf.
 *
 * The input is read as a sequence of 8-byte words; each word is taken as a
 * double's bit pattern (every class: subnormals, huge, tiny, integers,
 * negative zero), as an int64 and as a uint64. model_numfmt_double must
 * write what the first of "%.15g", "%.16g", "%.17g" that strtod reads back
 * writes, and the integers what "%lld" and "%llu" write. A short tail is
 * also read as a decimal of up to 17 digits over a power of ten, the shape
 * of the points the encoder writes. Any difference aborts. */
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numfmt.h"

static void fail(const char *what, const char *got, const char *want) {
  fprintf(stderr, "fuzz_numfmt: %s: got \"%s\", want \"%s\"\n", what, got, want);
  abort();
}

static void check_double(double v) {
  char want[40], got[MODEL_NUMFMT_DOUBLE_MAX + 1];
  size_t n = model_numfmt_double(got, v);
  if (n > MODEL_NUMFMT_DOUBLE_MAX) abort();
  got[n] = '\0';
  if (!isfinite(v)) {
    if (n) fail("non-finite", got, "");
    return;
  }
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(want, sizeof want, "%.*g", prec, v);
    if (strtod(want, NULL) == v) break;
  }
  if (strcmp(got, want)) fail("double", got, want);
}

static void check_ints(uint64_t u) {
  char want[32], got[MODEL_NUMFMT_U64_MAX + 1];
  got[model_numfmt_u64(got, u)] = '\0';
  snprintf(want, sizeof want, "%" PRIu64, u);
  if (strcmp(got, want)) fail("u64", got, want);
  got[model_numfmt_i64(got, (int64_t)u)] = '\0';
  snprintf(want, sizeof want, "%" PRId64, (int64_t)u);
  if (strcmp(got, want)) fail("i64", got, want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  size_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t w;
    memcpy(&w, data + i, 8);
    double v;
    memcpy(&v, &w, 8);
    check_double(v);
    check_ints(w);
  }
  if (i < size) {
    /* tail: digits N (up to 7 bytes, so below 2^56) over 10^k, k from the last byte */
    uint64_t n = 0;
    for (size_t j = i; j + 1 < size; j++) n = n << 8 | data[j];
    int k = data[size - 1] % 24;
    double v = (double)(n % 100000000000000000ULL) / pow(10, k);
    check_double(v);
    check_double(-v);
  }
  return 0;
}
