/* model_zero: zeroing of small structs whose size is a constant. */
#ifndef MODEL_ZERO_H
#define MODEL_ZERO_H

#include <stddef.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* memset(p, 0, n) for a constant n >= 16, as 16-byte stores (the last one
 * overlapping): a few instructions where the compiler emits a string store
 * (rep stos) that costs one instruction per 8 bytes and a setup. The empty
 * asm keeps the compiler from seeing a memset and emitting that string
 * store after all. */
static inline __attribute__((always_inline)) void model_zero(void *p, size_t n) {
#ifdef __SSE2__
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
