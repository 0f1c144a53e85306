/* model_json_stop_*: the string kernels of the JSON scanner (json_scan.c).
 *
 * Each returns the first byte of [p, end) that a scan inside a JSON string
 * has to look at, or end: '"', '\', a control byte (< 0x20) or a byte >= 0x80
 * (the start or middle of a UTF-8 sequence, which the scanner validates
 * where it stands). Every other byte is plain printable ASCII and is skipped.
 *
 * The kernels differ only in how many bytes they classify at a time, so they
 * must agree on every input; the scalar one is the reference the others are
 * tested against:
 * - scalar: 8 bytes at a time in a 64-bit word (SWAR) on little-endian
 *   targets, one at a time elsewhere; portable C;
 * - SSE2 (x86-64 baseline): 16 bytes at a time;
 * - AVX2 (chosen at run time when the CPU has it): 32 bytes at a time.
 * A vector kernel loads only whole blocks that lie inside [lo, end), lo
 * being the start of the buffer, so nothing is read outside it: blocks from
 * p on while they fit, then, when fewer bytes than a block are left, the
 * block that ends at end (its bytes before p are dropped from the mask), or,
 * in a buffer shorter than that, the narrower kernel. The scalar kernel does
 * not read back: its borrows may flag a byte above a stop, so it starts at p.
 *
 * One vector classifies a block with three compares: equal to '"', equal to
 * '\', and signed less than 0x20, which holds both for control bytes and for
 * bytes >= 0x80 (negative as signed bytes). The byte mask of the result
 * (movemask) gives the first stop with one count of trailing zeros. */
#ifndef MODEL_JSON_SIMD_H
#define MODEL_JSON_SIMD_H

#include <stdint.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define MODEL_JSON_SWAR 1
#endif

#if defined(__x86_64__) && defined(__SSE2__) && (defined(__GNUC__) || defined(__clang__))
#define MODEL_JSON_HAVE_SSE2 1
#define MODEL_JSON_HAVE_AVX2 1
#include <immintrin.h>
#endif

static inline __attribute__((always_inline)) int model_json_plain_byte(unsigned c) {
  return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

static inline __attribute__((always_inline)) const unsigned char *
model_json_stop_scalar(const unsigned char *p, const unsigned char *end, const unsigned char *lo) {
  (void)lo;
#ifdef MODEL_JSON_SWAR
  /* Per byte: bit 7 is set for '"', '\' and bytes < 0x20 by the borrow
   * tests (exact for the lowest such byte; a borrow can only flag bytes
   * above it), and for bytes >= 0x80 by the byte itself. */
  const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
  while (end - p >= 8) {
    uint64_t w;
    memcpy(&w, p, 8);
    uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
    uint64_t m = (((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w) | w) & high;
    if (m) return p + (__builtin_ctzll(m) >> 3);
    p += 8;
  }
#endif
  while (p < end && model_json_plain_byte(*p)) p++;
  return p;
}

#ifdef MODEL_JSON_HAVE_SSE2
/* The vector kernels' constants ('"', '\', 0x20 in every byte), read from
 * memory: the empty asm hides which bytes they are, so that the compiler
 * loads them (or uses them as memory operands) instead of building each one
 * with three instructions every time a kernel is inlined. The asm is
 * volatile, so that each use reads them where it stands: read once and
 * held in a vector register for the whole scan loop, the 0x20 vector was
 * spilled to the stack and reloaded on the loop's path. */
#define MODEL_JSON_X32(c) {c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c}
static const char model_json_splat[3][32] __attribute__((aligned(32))) = {
    MODEL_JSON_X32('"'), MODEL_JSON_X32('\\'), MODEL_JSON_X32(0x20)};
#undef MODEL_JSON_X32

static inline __attribute__((always_inline)) const char (*model_json_splats(void))[32] {
  const char(*t)[32] = model_json_splat;
  __asm__ volatile("" : "+r"(t));
  return t;
}

static inline __attribute__((always_inline)) const unsigned char *
model_json_stop_sse2(const unsigned char *p, const unsigned char *end, const unsigned char *lo) {
  const char(*k)[32] = model_json_splats();
  const __m128i quote = _mm_load_si128((const __m128i *)(const void *)k[0]),
                bslash = _mm_load_si128((const __m128i *)(const void *)k[1]),
                space = _mm_load_si128((const __m128i *)(const void *)k[2]);
  while (end - p >= 16) {
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                             _mm_cmplt_epi8(v, space));
    unsigned bits = (unsigned)_mm_movemask_epi8(m);
    if (bits) return p + __builtin_ctz(bits);
    p += 16;
  }
  if (p < end && end - lo >= 16) { /* the last block, ending at end */
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(end - 16));
    __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                             _mm_cmplt_epi8(v, space));
    unsigned bits = (unsigned)_mm_movemask_epi8(m) >> (16 - (end - p));
    return bits ? p + __builtin_ctz(bits) : end;
  }
  return model_json_stop_scalar(p, end, lo);
}

/* The stops of the 32 bytes at p (bit i: byte i), the constants read
 * from k as memory operands. */
__attribute__((target("avx2"))) static inline uint32_t model_json_stops32(const unsigned char *p,
                                                                          const char (*k)[32]) {
  __m256i v = _mm256_loadu_si256((const __m256i *)(const void *)p);
  __m256i m = _mm256_or_si256(
      _mm256_or_si256(_mm256_cmpeq_epi8(v, _mm256_load_si256((const __m256i *)(const void *)k[0])),
                      _mm256_cmpeq_epi8(v, _mm256_load_si256((const __m256i *)(const void *)k[1]))),
      _mm256_cmpgt_epi8(_mm256_load_si256((const __m256i *)(const void *)k[2]), v));
  return (uint32_t)_mm256_movemask_epi8(m);
}

/* model_json_stop_avx2 past a first block without a stop, or in a buffer
 * shorter than a block: out of line, so that the loop's registers (and a
 * vector it may keep on the stack) do not weigh on the scan loop that
 * inlines the kernel. */
__attribute__((target("avx2"), noinline)) static const unsigned char *
model_json_stop_avx2_rest(const unsigned char *p, const unsigned char *end, const unsigned char *lo) {
  const char(*k)[32] = model_json_splats();
  while (end - p >= 32) {
    uint32_t bits = model_json_stops32(p, k);
    if (bits) return p + __builtin_ctz(bits);
    p += 32;
  }
  if (p < end && end - lo >= 32) { /* the last block, ending at end */
    uint32_t bits = model_json_stops32(end - 32, k) >> (32 - (end - p));
    return bits ? p + __builtin_ctz(bits) : end;
  }
  return model_json_stop_sse2(p, end, lo);
}

/* Inline: the first block, where most strings end, or, with fewer bytes
 * than a block left, the last block, which ends at end (a line's last
 * strings); longer strings go out of line. */
__attribute__((target("avx2"))) static inline const unsigned char *
model_json_stop_avx2(const unsigned char *p, const unsigned char *end, const unsigned char *lo) {
  const char(*k)[32] = model_json_splats();
  if (__builtin_expect(end - p >= 32, 1)) {
    uint32_t bits = model_json_stops32(p, k);
    if (bits) return p + (size_t)__builtin_ctz(bits);
    return model_json_stop_avx2_rest(p + 32, end, lo);
  }
  if (p < end && end - lo >= 32) {
    uint32_t bits = model_json_stops32(end - 32, k) >> (32 - (end - p));
    return bits ? p + __builtin_ctz(bits) : end;
  }
  return model_json_stop_avx2_rest(p, end, lo);
}
#endif

/* model_json_id_mask16, model_json_printable_mask16: the value checks of a
 * command (command.c) on 16 bytes at p, all readable. Bit i is set when
 * byte i is an id character (a letter, a digit, '-' or '_') / printable
 * ASCII 0x21..0x7e. The same bits on every target: one SSE2 vector where
 * the target has it (a range test is one add that moves the range's first
 * byte to -128 and one signed compare), else byte by byte. */
#ifdef MODEL_JSON_HAVE_SSE2
/* The id mask's constants, read from memory through an opaque pointer
 * (as model_json_splats): 0x20, 0x80 - 'a', -128 + 26, 0x80 - '0',
 * -128 + 10, '-', '_'. */
#define MODEL_JSON_X16(c) {c, c, c, c, c, c, c, c, c, c, c, c, c, c, c, c}
static const signed char model_json_idk[7][16] __attribute__((aligned(16))) = {
    MODEL_JSON_X16(0x20), MODEL_JSON_X16((signed char)(0x80 - 'a')), MODEL_JSON_X16(-128 + 26),
    MODEL_JSON_X16((signed char)(0x80 - '0')), MODEL_JSON_X16(-128 + 10), MODEL_JSON_X16('-'),
    MODEL_JSON_X16('_')};
#undef MODEL_JSON_X16
#endif

static inline __attribute__((always_inline)) unsigned model_json_id_mask16(const unsigned char *p) {
#ifdef MODEL_JSON_HAVE_SSE2
  const signed char(*k)[16] = model_json_idk;
  __asm__("" : "+r"(k));
#define K(i) _mm_load_si128((const __m128i *)(const void *)k[i])
  __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
  __m128i letter = _mm_cmplt_epi8(_mm_add_epi8(_mm_or_si128(v, K(0)), K(1)), K(2));
  __m128i digit = _mm_cmplt_epi8(_mm_add_epi8(v, K(3)), K(4));
  __m128i punct = _mm_or_si128(_mm_cmpeq_epi8(v, K(5)), _mm_cmpeq_epi8(v, K(6)));
#undef K
  return (unsigned)_mm_movemask_epi8(_mm_or_si128(_mm_or_si128(letter, digit), punct));
#else
  unsigned m = 0;
  for (unsigned i = 0; i < 16; i++) {
    unsigned c = p[i];
    m |= (unsigned)((c | 0x20) - 'a' < 26u || c - '0' < 10u || c == '-' || c == '_') << i;
  }
  return m;
#endif
}

/* The number of id characters that start the 16 bytes at p (0..16), from
 * model_json_id_mask16: the scan's id check (json_scan_run.h). */
static inline __attribute__((always_inline)) unsigned model_json_id_len16(const unsigned char *p) {
  return (unsigned)__builtin_ctz(~model_json_id_mask16(p));
}

#ifdef MODEL_JSON_HAVE_SSE2
/* model_json_id_len16 for the AVX2 scan, the same count with a byte shuffle
 * (SSSE3, which AVX2 includes): a byte is an id character when the classes
 * of its low nibble (lo_class) and of its high nibble (hi_class) meet.
 * Classes, by high nibble: 2 '-' (bit 0), 3 digits (bit 1), 4 and 6 letters
 * from low nibble 1 (bit 2), 5 letters to 'Z' and '_' (bit 3), 7 letters to
 * 'z' (bit 4); no class for the others (bytes >= 0x80 included). */
__attribute__((target("avx2"))) static inline unsigned model_json_id_len16_avx2(const unsigned char *p) {
  static const unsigned char nibble[16] __attribute__((aligned(16))) = {15, 15, 15, 15, 15, 15, 15, 15,
                                                                        15, 15, 15, 15, 15, 15, 15, 15};
  const unsigned char *k = nibble;
  __asm__("" : "+r"(k)); /* read where used, as model_json_splats */
  const __m128i lo_class = _mm_setr_epi8(26, 30, 30, 30, 30, 30, 30, 30, 30, 30, 28, 4, 4, 5, 4, 12);
  const __m128i hi_class = _mm_setr_epi8(0, 0, 1, 2, 4, 8, 4, 16, 0, 0, 0, 0, 0, 0, 0, 0);
  __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
  /* a byte >= 0x80 shuffles to 0 as its own index */
  __m128i lo = _mm_shuffle_epi8(lo_class, v);
  __m128i nib = _mm_load_si128((const __m128i *)(const void *)k);
  __m128i hi = _mm_shuffle_epi8(hi_class, _mm_and_si128(_mm_srli_epi16(v, 4), nib));
  unsigned other = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_and_si128(lo, hi), _mm_setzero_si128()));
  return (unsigned)__builtin_ctz(other | 0x10000u);
}
#endif

/* model_json_ws_mask16: bit i set when byte i of the 16 at p (all
 * readable) is JSON whitespace (space, tab, LF, CR): the plain path's
 * whitespace around a key's ':' (json_scan_run.h), found in one step
 * however it is written. Four compares where the target has SSE2, else
 * byte by byte. */
static inline __attribute__((always_inline)) unsigned model_json_ws_mask16(const unsigned char *p) {
#ifdef MODEL_JSON_HAVE_SSE2
  __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
  __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(' ')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\t'))),
                           _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('\n')), _mm_cmpeq_epi8(v, _mm_set1_epi8('\r'))));
  return (unsigned)_mm_movemask_epi8(m);
#else
  unsigned m = 0;
  for (unsigned i = 0; i < 16; i++) {
    unsigned c = p[i];
    m |= (unsigned)(c == ' ' || c == '\t' || c == '\n' || c == '\r') << i;
  }
  return m;
#endif
}

#ifdef MODEL_JSON_HAVE_SSE2
/* model_json_ws_mask16 for the AVX2 scan, with one byte shuffle (SSSE3,
 * which AVX2 includes): the table holds, at each low nibble, the one
 * whitespace byte with that nibble (0x20 at 0, '\t' at 9, '\n' at 10,
 * '\r' at 13) and 0x80 elsewhere; a byte is whitespace when the table's
 * entry for its low nibble is the byte itself. A byte >= 0x80 shuffles to
 * 0, never itself; 0x80 never equals a byte below 0x80. */
__attribute__((target("avx2"))) static inline unsigned model_json_ws_mask16_avx2(const unsigned char *p) {
  const __m128i ws = _mm_setr_epi8(0x20, -128, -128, -128, -128, -128, -128, -128, -128, '\t', '\n', -128, -128,
                                   '\r', -128, -128);
  __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
  return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_shuffle_epi8(ws, v), v));
}
#endif

static inline __attribute__((always_inline)) unsigned model_json_printable_mask16(const unsigned char *p) {
#ifdef MODEL_JSON_HAVE_SSE2
  __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
  return (unsigned)_mm_movemask_epi8(
      _mm_cmplt_epi8(_mm_add_epi8(v, _mm_set1_epi8((char)(0x80 - 0x21))), _mm_set1_epi8(-128 + 0x7E - 0x21 + 1)));
#else
  unsigned m = 0;
  for (unsigned i = 0; i < 16; i++) m |= (unsigned)(p[i] - 0x21u <= 0x7Eu - 0x21u) << i;
  return m;
#endif
}

#endif
