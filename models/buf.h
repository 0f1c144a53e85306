/* model_buf: a growable byte buffer used by the codecs.
 *
 * The buffer owns `data`; model_buf_destroy() frees it (NULL-safe on the
 * struct pointer). Appends abort on allocation failure (oom.h). */
#ifndef MODEL_BUF_H
#define MODEL_BUF_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct model_buf {
  char *data;
  size_t len;
  size_t cap;
} model_buf_t;

#define MODEL_BUF_INIT {NULL, 0, 0}

void model_buf_reserve(model_buf_t *b, size_t extra);
/* For encoders that write in place: model_buf_space makes room for n more
 * bytes and returns where they go; model_buf_commit then takes everything up
 * to end (at most n bytes past the old length) into the buffer. One reserve
 * for a whole group of fields instead of one per append. */
static inline char *model_buf_space(model_buf_t *b, size_t n) {
  if (b->len + n + 1 > b->cap) model_buf_reserve(b, n);
  return b->data + b->len;
}
static inline void model_buf_commit(model_buf_t *b, char *end) {
  b->len = (size_t)(end - b->data);
  *end = '\0';
}
/* Gives a buffer without storage its first allocation, of cap bytes (growth
 * doubles from there), instead of model_buf_reserve's 256: for buffers that
 * are many and mostly small. Does nothing to a buffer that has storage. */
void model_buf_first_cap(model_buf_t *b, size_t cap);
void model_buf_append(model_buf_t *b, const void *p, size_t n);
void model_buf_putc(model_buf_t *b, char c);
void model_buf_puts(model_buf_t *b, const char *s);
void model_buf_printf(model_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends s[0..n) as a JSON string literal (quotes included), escaping as RFC 8259 requires. */
void model_buf_json_string(model_buf_t *b, const char *s, size_t n);
/* The most bytes a JSON string literal of n input bytes takes: each byte
 * escaped as \u00XX, and the quotes. */
#define MODEL_BUF_JSON_STRING_MAX(n) (6 * (size_t)(n) + 2)
/* Nonzero when some byte of the word w needs an escape: below 0x20, '"' or
 * '\\'. (x - k) & ~x & 0x80 per byte is the classic test for a byte below k
 * (k <= 0x80); equality is "below 1" after an XOR. Exact as a yes/no for the
 * whole word, which is all it is used for. The XORs leave the top bits
 * alone ('"' and '\\' are ASCII), so the three tests share one ~w. */
static inline uint64_t model_buf_word_needs_escape(uint64_t w) {
  const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
  uint64_t q = w ^ (ones * '"'), bs = w ^ (ones * '\\');
  return ((w - ones * 0x20) | (q - ones) | (bs - ones)) & ~w & high;
}

/* model_buf_json_quote for any string: clean words copied whole, the bytes
 * to escape one by one (buf.c). */
char *model_buf_json_quote_any(char *dst, const char *s, size_t n);

/* Writes the literal model_buf_json_string appends to dst, which has room for
 * MODEL_BUF_JSON_STRING_MAX(n) bytes, and returns the end of what it wrote.
 * Most strings of a document (student and command ids) are 8 to 16 clean
 * bytes: two words cover them (the second ending at the last byte,
 * overlapping the first), tested and copied at once, inline in the
 * encoder. Anything else, or a string with a byte to escape, goes to
 * model_buf_json_quote_any. */
static inline char *model_buf_json_quote(char *dst, const char *s, size_t n) {
  if (n - 8 <= 8) {
    uint64_t a, b;
    memcpy(&a, s, 8);
    memcpy(&b, s + n - 8, 8);
    if (!(model_buf_word_needs_escape(a) | model_buf_word_needs_escape(b))) {
      dst[0] = '"';
      memcpy(dst + 1, &a, 8);
      memcpy(dst + 1 + n - 8, &b, 8);
      dst[n + 1] = '"';
      return dst + n + 2;
    }
  }
  return model_buf_json_quote_any(dst, s, n);
}
void model_buf_clear(model_buf_t *b);
void model_buf_destroy(model_buf_t *b);

#endif
