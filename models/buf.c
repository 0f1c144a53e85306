#include "buf.h"

#include "oom.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void model_buf_reserve(model_buf_t *b, size_t extra) {
  if (b->len + extra + 1 <= b->cap) return;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra + 1) cap *= 2;
  b->data = oom_realloc(b->data, cap);
  b->cap = cap;
}

void model_buf_first_cap(model_buf_t *b, size_t cap) {
  if (b->cap || !cap) return;
  b->data = oom_malloc(cap);
  b->cap = cap;
}

void model_buf_append(model_buf_t *b, const void *p, size_t n) {
  model_buf_reserve(b, n);
  memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = '\0';
}

void model_buf_putc(model_buf_t *b, char c) {
  model_buf_reserve(b, 1);
  b->data[b->len++] = c;
  b->data[b->len] = '\0';
}

void model_buf_puts(model_buf_t *b, const char *s) { model_buf_append(b, s, strlen(s)); }

void model_buf_printf(model_buf_t *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  model_buf_reserve(b, (size_t)n);
  va_start(ap, fmt);
  vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

static char *escape_byte(char *d, unsigned char c) {
  static const char hex[] = "0123456789abcdef";
  if (c >= 0x20 && c != '"' && c != '\\') {
    *d++ = (char)c;
    return d;
  }
  *d++ = '\\';
  switch (c) {
  case '"': *d++ = '"'; break;
  case '\\': *d++ = '\\'; break;
  case '\n': *d++ = 'n'; break;
  case '\r': *d++ = 'r'; break;
  case '\t': *d++ = 't'; break;
  case '\b': *d++ = 'b'; break;
  case '\f': *d++ = 'f'; break;
  default:
    memcpy(d, "u00", 3);
    d[3] = hex[c >> 4];
    d[4] = hex[c & 15];
    d += 5;
  }
  return d;
}

/* Clean bytes go over eight at a time, tested as one word and copied as one;
 * only a word that holds a byte to escape is walked byte by byte. The tail
 * (under eight bytes) goes in one step when clean: as the key's last eight
 * bytes, rewriting the overlap with the same bytes, when everything before
 * went out verbatim; else, from four bytes up, as two overlapping 4-byte
 * halves. Reads stay within s[0..n) and writes within what the literal
 * occupies; a tail with a byte to escape, or under four bytes after an
 * escape or in a key under four bytes, is walked byte by byte. */
char *model_buf_json_quote_any(char *dst, const char *s, size_t n) {
  char *d = dst;
  *d++ = '"';
  size_t i = 0;
  uint64_t w;
  while (i + 8 <= n) {
    memcpy(&w, s + i, 8);
    if (!model_buf_word_needs_escape(w)) {
      memcpy(d, &w, 8);
      d += 8;
      i += 8;
      continue;
    }
    for (size_t end = i + 8; i < end; i++) d = escape_byte(d, (unsigned char)s[i]);
  }
  size_t rem = n - i;
  if (rem && n >= 8 && (size_t)(d - dst) == i + 1) { /* verbatim so far: d - 8 + rem holds s[n - 8] */
    memcpy(&w, s + n - 8, 8);
    if (!model_buf_word_needs_escape(w)) {
      memcpy(d + rem - 8, &w, 8);
      d += rem;
      i = n;
    }
  } else if (rem >= 4) {
    uint32_t a, b;
    memcpy(&a, s + i, 4);
    memcpy(&b, s + n - 4, 4);
    if (!model_buf_word_needs_escape((uint64_t)b << 32 | a)) {
      memcpy(d, &a, 4);
      memcpy(d + rem - 4, &b, 4);
      d += rem;
      i = n;
    }
  }
  for (; i < n; i++) d = escape_byte(d, (unsigned char)s[i]);
  *d++ = '"';
  return d;
}

void model_buf_json_string(model_buf_t *b, const char *s, size_t n) {
  char *d = model_buf_space(b, MODEL_BUF_JSON_STRING_MAX(n));
  model_buf_commit(b, model_buf_json_quote(d, s, n));
}

void model_buf_clear(model_buf_t *b) {
  b->len = 0;
  if (b->data) b->data[0] = '\0';
}

void model_buf_destroy(model_buf_t *b) {
  if (!b) return;
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}
