/* The text of JSON strings, shared by the scan (json_scan.c, json_scan_run.h)
 * and json_text.c: the UTF-8 sequences a string may hold and the escapes it
 * may be written with. Private to models/json/; the functions others call
 * (model_utf8_check, model_json_unescape) are declared in json_scan.h. */
#ifndef MODEL_JSON_TEXT_H
#define MODEL_JSON_TEXT_H

#include <stddef.h>
#include <stdint.h>

/* Length (2..4) of the valid UTF-8 sequence at s[0] >= 0x80 with n bytes
 * available, or 0 (Unicode 15, table 3-7: well-formed byte sequences). */
static inline __attribute__((always_inline)) size_t model_json_utf8_seq(const unsigned char *s, size_t n) {
  unsigned c = s[0];
  if (c < 0xC2) return 0; /* stray continuation byte, or overlong 2-byte form */
  if (c < 0xE0) return n >= 2 && (s[1] & 0xC0) == 0x80 ? 2 : 0;
  if (c < 0xF0) {
    unsigned lo = c == 0xE0 ? 0xA0 : 0x80; /* E0 80..9F would be overlong */
    unsigned hi = c == 0xED ? 0x9F : 0xBF; /* ED A0..BF would be a surrogate */
    return n >= 3 && s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 ? 3 : 0;
  }
  if (c < 0xF5) {
    unsigned lo = c == 0xF0 ? 0x90 : 0x80; /* F0 80..8F would be overlong */
    unsigned hi = c == 0xF4 ? 0x8F : 0xBF; /* F4 90.. would be above U+10FFFF */
    return n >= 4 && s[1] >= lo && s[1] <= hi && (s[2] & 0xC0) == 0x80 && (s[3] & 0xC0) == 0x80 ? 4
                                                                                                : 0;
  }
  return 0;
}

/* Hex digit values plus one (0: not a hex digit). */
static const signed char model_json_hexval[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,  ['6'] = 7,  ['7'] = 8,
    ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

/* Four hex digits at p (p+4 <= end checked by the caller), or -1. */
static inline int model_json_hex4(const unsigned char *p) {
  int a = model_json_hexval[p[0]], b = model_json_hexval[p[1]];
  int c = model_json_hexval[p[2]], d = model_json_hexval[p[3]];
  if (!a || !b || !c || !d) return -1;
  return ((a - 1) << 12) | ((b - 1) << 8) | ((c - 1) << 4) | (d - 1);
}

static inline int model_json_utf8_encode(uint32_t cp, unsigned char *o) {
  if (cp < 0x80) {
    o[0] = (unsigned char)cp;
    return 1;
  }
  if (cp < 0x800) {
    o[0] = (unsigned char)(0xC0 | (cp >> 6));
    o[1] = (unsigned char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    o[0] = (unsigned char)(0xE0 | (cp >> 12));
    o[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (unsigned char)(0xF0 | (cp >> 18));
  o[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3F));
  o[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3F));
  o[3] = (unsigned char)(0x80 | (cp & 0x3F));
  return 4;
}

/* Decodes the escape at *pp (a backslash) of already-validated text, writes
 * its UTF-8 bytes to o and returns how many; advances *pp past it. */
static inline int model_json_decode_escape(const unsigned char **pp, unsigned char o[4]) {
  const unsigned char *p = *pp;
  switch (p[1]) {
  case 'b': o[0] = '\b'; break;
  case 'f': o[0] = '\f'; break;
  case 'n': o[0] = '\n'; break;
  case 'r': o[0] = '\r'; break;
  case 't': o[0] = '\t'; break;
  case 'u': {
    uint32_t cp = (uint32_t)model_json_hex4(p + 2);
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      uint32_t lo = (uint32_t)model_json_hex4(p + 8);
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      *pp = p + 12;
    } else {
      *pp = p + 6;
    }
    return model_json_utf8_encode(cp, o);
  }
  default: o[0] = p[1]; break; /* " \ / */
  }
  *pp = p + 2;
  return 1;
}

#endif
