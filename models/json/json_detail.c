/* model_json_escape_detail (json_scan.h): a text written as printable
 * ASCII for the one-line details of rejections, the scanner's and
 * command.c's. */
#include <string.h>

#include "json_scan.h"

size_t model_json_escape_detail(const char *str, size_t n, size_t max_chars, char *out, size_t cap) {
  static const char hex[] = "0123456789abcdef";
  const unsigned char *s = (const unsigned char *)str;
  size_t o = 0, chars = 0;
  if (max_chars + 4 > cap) max_chars = cap > 8 ? cap - 8 : 0;
  for (size_t i = 0; i < n; i++) {
    unsigned c = s[i];
    char tmp[4];
    size_t k;
    if (c >= 0x20 && c <= 0x7E && c != '"' && c != '\\') {
      tmp[0] = (char)c;
      k = 1;
    } else if (c == '"' || c == '\\') {
      tmp[0] = '\\';
      tmp[1] = (char)c;
      k = 2;
    } else {
      tmp[0] = '\\';
      tmp[1] = 'x';
      tmp[2] = hex[c >> 4];
      tmp[3] = hex[c & 15];
      k = 4;
    }
    if (chars + k > max_chars || o + k + 4 > cap) {
      memcpy(out + o, "...", 3);
      o += 3;
      break;
    }
    memcpy(out + o, tmp, k);
    o += k;
    chars += k;
  }
  out[o] = '\0';
  return o;
}
