/* A deliberately plain UTF-8 check, independent of models/json/json_scan.c: the
 * reference the decoder's fast validator is compared with, by the unit tests
 * and by the fuzz target. Returns the length of the longest valid prefix. */
#ifndef REF_UTF8_H
#define REF_UTF8_H

#include <stddef.h>
#include <stdint.h>

static inline size_t ref_utf8(const uint8_t *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned c = s[i];
    size_t len;
    uint32_t cp, min;
    if (c < 0x80) {
      i++;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07, min = 0x10000;
    } else {
      return i;
    }
    if (n - i < len) return i;
    for (size_t k = 1; k < len; k++) {
      if ((s[i + k] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + k] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += len;
  }
  return n;
}

#endif
