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

void model_buf_json_string(model_buf_t *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  model_buf_reserve(b, n + 2);
  model_buf_putc(b, '"');
  size_t run = 0; /* start of the current run of bytes that need no escape */
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    model_buf_append(b, s + run, i - run);
    run = i + 1;
    switch (c) {
    case '"': model_buf_append(b, "\\\"", 2); break;
    case '\\': model_buf_append(b, "\\\\", 2); break;
    case '\n': model_buf_append(b, "\\n", 2); break;
    case '\r': model_buf_append(b, "\\r", 2); break;
    case '\t': model_buf_append(b, "\\t", 2); break;
    case '\b': model_buf_append(b, "\\b", 2); break;
    case '\f': model_buf_append(b, "\\f", 2); break;
    default: {
      char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
      model_buf_append(b, e, 6);
    }
    }
  }
  model_buf_append(b, s + run, n - run);
  model_buf_putc(b, '"');
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
