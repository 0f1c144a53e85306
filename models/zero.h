/* model_zero: memset(p, 0, n) for a small constant n, in 16-byte stores. */
#ifndef MODEL_ZERO_H
#define MODEL_ZERO_H

#include <stddef.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* memset(p, 0, n), n a compile-time constant. From 16 bytes up it is
 * 16-byte stores, the last one overlapping the one before, because for a
 * memset of a struct's size gcc emits a string store (rep stos) whose steps
 * are 8 bytes each; the empty asm keeps gcc from turning the stores back
 * into that memset. Below 16 bytes the stores would reach before p: it is
 * a plain memset. */
static inline __attribute__((always_inline)) void model_zero(void *p, size_t n) {
#ifdef __SSE2__
  if (n < 16) {
    memset(p, 0, n);
    return;
  }
  char *d = p;
  __m128i z = _mm_setzero_si128();
  __asm__("" : "+x"(z));
  for (size_t i = 0; i + 16 <= n; i += 16) _mm_storeu_si128((__m128i *)(void *)(d + i), z);
  _mm_storeu_si128((__m128i *)(void *)(d + n - 16), z);
#else
  memset(p, 0, n);
#endif
}

#endif
