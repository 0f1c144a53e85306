/* model_utf8_check and model_json_unescape (json_scan.h): the text of JSON
 * strings outside the scan, with json_text.h's sequences and escapes. */
#include <string.h>

#include "json_scan.h"
#include "json_text.h"

size_t model_utf8_check(const char *str, size_t n) {
  const unsigned char *s = (const unsigned char *)str;
  size_t i = 0;
  while (i < n) {
    while (n - i >= 16) {
      uint64_t w[2];
      memcpy(w, s + i, 16);
      if ((w[0] | w[1]) & 0x8080808080808080ULL) break;
      i += 16;
    }
    while (n - i >= 8) {
      uint64_t w;
      memcpy(&w, s + i, 8);
      if (w & 0x8080808080808080ULL) break;
      i += 8;
    }
    if (i >= n) break;
    if (s[i] < 0x80) {
      i++;
      continue;
    }
    size_t k = model_json_utf8_seq(s + i, n - i);
    if (!k) return i;
    i += k;
  }
  return n;
}

size_t model_json_unescape(const char *str, size_t n, bool escaped, char *out, size_t cap) {
  if (!escaped) {
    memcpy(out, str, n < cap ? n : cap);
    return n;
  }
  const unsigned char *p = (const unsigned char *)str, *end = p + n;
  size_t o = 0;
  while (p < end) {
    const unsigned char *bs = memchr(p, '\\', (size_t)(end - p));
    size_t run = (size_t)((bs ? bs : end) - p);
    if (o < cap) memcpy(out + o, p, run < cap - o ? run : cap - o);
    o += run;
    p += run;
    if (!bs) break;
    unsigned char u[4];
    int k = model_json_decode_escape(&p, u);
    if (o <= cap && cap - o >= 4) {
      /* all 4 written at once, k of them kept: the bytes past them are
       * written over by what follows, or lie past the result, within cap */
      memcpy(out + o, u, 4);
      o += (size_t)k;
      continue;
    }
    for (int i = 0; i < k; i++, o++)
      if (o < cap) out[o] = (char)u[i];
  }
  return o;
}
