/* The JSON scanner as it was before the vector kernels: one walk with 8-byte
 * SWAR string skipping and a separate whole-buffer UTF-8 pass. Kept here,
 * unchanged but for names, as an oracle for the tests: the current scanner
 * (every kernel) must give the same status, offset, detail and captured
 * values on every input. Include in one translation unit only. */
#ifndef REF_JSON_SCAN_H
#define REF_JSON_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "json/json_scan.h"

typedef struct ref_json_schema {
  const char *const *root_keys;
  const uint8_t *root_lens;
  size_t n_root;
  int sub_index;
  const char *const *sub_keys;
  const uint8_t *sub_lens;
  size_t n_sub;
} ref_json_schema_t;

static void *ref_xmalloc(size_t n) {
  void *p = malloc(n);
  if (!p) abort();
  return p;
}

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define SMALL_KEYS 16
#define NO_KEY SIZE_MAX
#define NONE SIZE_MAX

enum { ROLE_OTHER = 0, ROLE_ROOT, ROLE_SUB };

typedef struct {
  size_t off; /* content start (after the opening quote) */
  size_t len; /* raw content length */
  uint32_t hash;
  uint32_t esc;
} keyrec_t;

typedef struct {
  uint8_t is_array;
  uint8_t role;
  uint8_t big;      /* object past SMALL_KEYS keys: duplicates checked at its close */
  size_t key_base;  /* object: index of its first key in keys[] */
  size_t index;     /* array: index of the current element */
  size_t name_key;  /* keys[] index of the key naming this container in its parent object */
} frame_t;

typedef struct {
  const unsigned char *base, *end;
  keyrec_t *keys;
  size_t nkeys, cap;
  keyrec_t *heap;
  int depth;
  model_json_result_t *res;
  size_t dup_off;
  size_t nul_off;
  char dup_detail[160];
  char nul_detail[160];
  frame_t frames[MODEL_JSON_MAX_DEPTH];
} scan_t;

__attribute__((unused)) static const char *ref_json_type_name(model_json_type_t t) {
  static const char *const names[] = {"absent", "null",   "false",  "true",
                                      "number", "string", "object", "array"};
  return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
}

/* ---------------------------------------------------------------- UTF-8 */

static size_t ref_old_utf8_check(const char *str, size_t n) {
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
    unsigned c = s[i];
    if (c < 0x80) {
      i++;
      continue;
    }
    /* Unicode 15, table 3-7: well-formed byte sequences. */
    if (c < 0xC2) return i; /* stray continuation byte, or overlong 2-byte form */
    if (c < 0xE0) {
      if (n - i < 2 || (s[i + 1] & 0xC0) != 0x80) return i;
      i += 2;
    } else if (c < 0xF0) {
      unsigned lo = c == 0xE0 ? 0xA0 : 0x80; /* E0 80..9F would be overlong */
      unsigned hi = c == 0xED ? 0x9F : 0xBF; /* ED A0..BF would be a surrogate */
      if (n - i < 3 || s[i + 1] < lo || s[i + 1] > hi || (s[i + 2] & 0xC0) != 0x80) return i;
      i += 3;
    } else if (c < 0xF5) {
      unsigned lo = c == 0xF0 ? 0x90 : 0x80; /* F0 80..8F would be overlong */
      unsigned hi = c == 0xF4 ? 0x8F : 0xBF; /* F4 90.. would be above U+10FFFF */
      if (n - i < 4 || s[i + 1] < lo || s[i + 1] > hi || (s[i + 2] & 0xC0) != 0x80 ||
          (s[i + 3] & 0xC0) != 0x80)
        return i;
      i += 4;
    } else {
      return i;
    }
  }
  return n;
}

/* ------------------------------------------------------------- escapes */

static const signed char hexval[256] = {
    ['0'] = 1,  ['1'] = 2,  ['2'] = 3,  ['3'] = 4,  ['4'] = 5,  ['5'] = 6,  ['6'] = 7,  ['7'] = 8,
    ['8'] = 9,  ['9'] = 10, ['a'] = 11, ['b'] = 12, ['c'] = 13, ['d'] = 14, ['e'] = 15, ['f'] = 16,
    ['A'] = 11, ['B'] = 12, ['C'] = 13, ['D'] = 14, ['E'] = 15, ['F'] = 16,
};

/* Four hex digits at p (p+4 <= end checked by the caller), or -1. */
static inline int hex4(const unsigned char *p) {
  int a = hexval[p[0]], b = hexval[p[1]], c = hexval[p[2]], d = hexval[p[3]];
  if (!a || !b || !c || !d) return -1;
  return ((a - 1) << 12) | ((b - 1) << 8) | ((c - 1) << 4) | (d - 1);
}

static inline int utf8_encode(uint32_t cp, unsigned char *o) {
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
static int decode_escape(const unsigned char **pp, unsigned char o[4]) {
  const unsigned char *p = *pp;
  switch (p[1]) {
  case 'b': o[0] = '\b'; break;
  case 'f': o[0] = '\f'; break;
  case 'n': o[0] = '\n'; break;
  case 'r': o[0] = '\r'; break;
  case 't': o[0] = '\t'; break;
  case 'u': {
    uint32_t cp = (uint32_t)hex4(p + 2);
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      uint32_t lo = (uint32_t)hex4(p + 8);
      cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
      *pp = p + 12;
    } else {
      *pp = p + 6;
    }
    return utf8_encode(cp, o);
  }
  default: o[0] = p[1]; break; /* " \ / */
  }
  *pp = p + 2;
  return 1;
}

static size_t ref_json_unescape(const char *str, size_t n, bool escaped, char *out, size_t cap) {
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
    int k = decode_escape(&p, u);
    for (int i = 0; i < k; i++, o++)
      if (o < cap) out[o] = (char)u[i];
  }
  return o;
}

/* Byte iterator over the unescaped content of a validated string. */
typedef struct {
  const unsigned char *p, *end;
  unsigned char buf[4];
  int n, i;
} uiter_t;

static inline int uiter_next(uiter_t *it) {
  if (it->i < it->n) return it->buf[it->i++];
  if (it->p >= it->end) return -1;
  if (*it->p != '\\') return *it->p++;
  it->n = decode_escape(&it->p, it->buf);
  it->i = 1;
  return it->buf[0];
}

static inline void uiter_init(uiter_t *it, const unsigned char *base, const keyrec_t *k) {
  it->p = base + k->off;
  it->end = it->p + k->len;
  it->n = it->i = 0;
}

/* Hash of the unescaped key: its length, first 8 and last 8 bytes, one
 * multiply each. Cheap (keys are hashed on every object member) and enough
 * to tell realistic keys apart; keys that collide are compared in full, so
 * a collision costs time, never correctness. Escaped keys produce the same
 * words from the byte iterator, so equal keys hash equal however they are
 * written. */
static inline uint64_t hash_word(uint64_t h, uint64_t w) {
  h = (h ^ w) * 0x9E3779B97F4A7C15ULL;
  return h ^ (h >> 29);
}

static uint32_t key_hash(const unsigned char *base, const unsigned char *end, const keyrec_t *k) {
  uint64_t first = 0, last = 0;
  size_t n = k->len;
  if (!k->esc) {
    const unsigned char *p = base + k->off;
    if (n >= 8) {
      memcpy(&first, p, 8);
      memcpy(&last, p + n - 8, 8);
    } else if (end - p >= 8) { /* the closing quote and more follow: read 8, keep n */
      memcpy(&first, p, 8);
      first &= n ? ~0ULL >> (64 - 8 * n) : 0;
    } else {
      for (size_t i = 0; i < n; i++) first |= (uint64_t)p[i] << (8 * i);
    }
  } else {
    uiter_t it;
    uiter_init(&it, base, k);
    n = 0;
    for (int c; (c = uiter_next(&it)) >= 0; n++) {
      if (n < 8) first |= (uint64_t)c << (8 * n);
      last = (last >> 8) | ((uint64_t)c << 56);
    }
  }
  if (n < 8) last = 0;
  uint64_t h = hash_word(hash_word(n, first), last);
  return (uint32_t)(h >> 32);
}

/* Bytewise order of the unescaped keys. */
static int key_cmp(const unsigned char *base, const keyrec_t *a, const keyrec_t *b) {
  if (!a->esc && !b->esc) {
    size_t m = a->len < b->len ? a->len : b->len;
    int r = memcmp(base + a->off, base + b->off, m);
    if (r) return r;
    return a->len < b->len ? -1 : a->len > b->len;
  }
  uiter_t ia, ib;
  uiter_init(&ia, base, a);
  uiter_init(&ib, base, b);
  for (;;) {
    int ca = uiter_next(&ia), cb = uiter_next(&ib);
    if (ca != cb) return ca < cb ? -1 : 1;
    if (ca < 0) return 0;
  }
}

/* ------------------------------------------------------------- details */

static size_t ref_json_escape_detail(const char *str, size_t n, size_t max_chars, char *out, size_t cap) {
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

static void set_error(scan_t *s, model_json_status_t st, const unsigned char *at, const char *fmt,
                      const char *arg) {
  model_json_result_t *r = s->res;
  r->status = st;
  r->offset = (size_t)(at - s->base);
  char what[96];
  snprintf(what, sizeof what, fmt, arg);
  snprintf(r->detail, sizeof r->detail, "%s at byte %zu", what, r->offset);
}

#define SYNTAX(at, msg)                                                                           \
  do {                                                                                            \
    set_error(s, MODEL_JSON_ERR_SYNTAX, (at), "invalid JSON: %s", (msg));                         \
    return false;                                                                                 \
  } while (0)

/* Appends the unescaped, detail-escaped key to out (at most ~24 chars). */
static size_t put_key(const scan_t *s, const keyrec_t *k, char *out, size_t cap) {
  char raw[32];
  size_t n = ref_json_unescape((const char *)s->base + k->off, k->len, k->esc, raw, sizeof raw);
  char esc[48];
  ref_json_escape_detail(raw, n < sizeof raw ? n : sizeof raw, 24, esc, sizeof esc);
  if (n > sizeof raw && !strstr(esc, "...")) strcat(esc, "...");
  return (size_t)snprintf(out, cap, "%s", esc);
}

/* "$", "$.data", "$.a[3].b": the path of the container at frames[depth-1],
 * plus its current member when `member` is set. Truncated to fit. */
static void format_path(const scan_t *s, int depth, bool member, char *out, size_t cap) {
  size_t o = 0;
  out[o++] = '$';
  out[o] = '\0';
  for (int i = 1; i <= depth; i++) {
    const frame_t *parent = &s->frames[i - 1];
    if (i == depth && !member) break;
    char comp[64];
    if (parent->is_array) {
      snprintf(comp, sizeof comp, "[%zu]", parent->index);
    } else {
      size_t ki = i < depth ? s->frames[i].name_key : s->nkeys - 1;
      comp[0] = '.';
      put_key(s, &s->keys[ki], comp + 1, sizeof comp - 1);
    }
    size_t cl = strlen(comp);
    if (o + cl + 4 >= cap) {
      memcpy(out + o, "...", 4);
      return;
    }
    memcpy(out + o, comp, cl + 1);
    o += cl;
  }
}

static void note_nul(scan_t *s, const unsigned char *at, bool is_key) {
  if (s->nul_off != NONE) return;
  s->nul_off = (size_t)(at - s->base);
  char path[112];
  format_path(s, s->depth, !is_key && s->depth > 0, path, sizeof path);
  if (is_key)
    snprintf(s->nul_detail, sizeof s->nul_detail, "a key in %s contains U+0000", path);
  else
    snprintf(s->nul_detail, sizeof s->nul_detail, "%s: string contains U+0000", path);
}

static void note_dup(scan_t *s, const keyrec_t *k) {
  if (k->off >= s->dup_off) return;
  s->dup_off = k->off;
  char key[40], path[96];
  put_key(s, k, key, sizeof key);
  format_path(s, s->depth, false, path, sizeof path);
  snprintf(s->dup_detail, sizeof s->dup_detail, "duplicate key \"%s\" at %s", key, path);
}

/* ------------------------------------------------------- duplicate keys */

static int rec_cmp(const unsigned char *base, const keyrec_t *a, const keyrec_t *b) {
  if (a->hash != b->hash) return a->hash < b->hash ? -1 : 1;
  int r = key_cmp(base, a, b);
  if (r) return r;
  return a->off < b->off ? -1 : a->off > b->off;
}

static void sift_down(const unsigned char *base, keyrec_t *a, size_t i, size_t n) {
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) return;
    if (c + 1 < n && rec_cmp(base, &a[c], &a[c + 1]) < 0) c++;
    if (rec_cmp(base, &a[i], &a[c]) >= 0) return;
    keyrec_t t = a[i];
    a[i] = a[c];
    a[c] = t;
    i = c;
  }
}

/* Heapsort: in place, n log n worst case, and qsort has no context argument. */
static void sort_keys(const unsigned char *base, keyrec_t *a, size_t n) {
  for (size_t i = n / 2; i-- > 0;) sift_down(base, a, i, n);
  for (size_t end = n; end-- > 1;) {
    keyrec_t t = a[0];
    a[0] = a[end];
    a[end] = t;
    sift_down(base, a, 0, end);
  }
}

/* A big object is closing: sort its keys and report the duplicate whose
 * second occurrence comes first in the text. */
static void check_big_object(scan_t *s, const frame_t *f) {
  keyrec_t *a = s->keys + f->key_base;
  size_t n = s->nkeys - f->key_base;
  sort_keys(s->base, a, n);
  for (size_t i = 1; i < n; i++) {
    if (a[i].hash == a[i - 1].hash && key_cmp(s->base, &a[i], &a[i - 1]) == 0) {
      /* a[i-1] is the first of its group (offsets ascend within a group). */
      note_dup(s, &a[i]);
      while (i + 1 < n && a[i + 1].hash == a[i].hash && key_cmp(s->base, &a[i + 1], &a[i]) == 0) i++;
    }
  }
}

static bool grow_keys(scan_t *s) {
  size_t ncap = s->cap * 2;
  keyrec_t *n = ref_xmalloc(ncap * sizeof *n);
  memcpy(n, s->keys, s->nkeys * sizeof *n);
  free(s->heap);
  s->heap = s->keys = n;
  s->cap = ncap;
  return true;
}

/* --------------------------------------------------------------- strings */

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SWAR 1
/* Bit 7 of the lowest byte that is '"', '\' or < 0x20 is set in the result
 * (higher bits may be false positives, so only the lowest one is used). */
static inline uint64_t special_bytes(uint64_t w) {
  const uint64_t ones = 0x0101010101010101ULL, high = 0x8080808080808080ULL;
  uint64_t q = w ^ (ones * '"'), b = w ^ (ones * '\\');
  return (((q - ones) & ~q) | ((b - ones) & ~b) | ((w - ones * 0x20) & ~w)) & high;
}
#endif

/* p is at an opening quote. Returns the closing quote, or NULL after
 * setting the error. Inlined into both call sites: strings are most of the
 * text, and the call costs more than a short string's scan. */
static inline __attribute__((always_inline)) const unsigned char *
lex_string(scan_t *s, const unsigned char *p, bool *escaped, bool is_key) {
  const unsigned char *const end = s->end;
  const unsigned char *const open = p;
  bool esc = false;
  p++;
  for (;;) {
#ifdef SWAR
    while (end - p >= 8) {
      uint64_t w;
      memcpy(&w, p, 8);
      uint64_t m = special_bytes(w);
      if (m) {
        p += __builtin_ctzll(m) >> 3;
        goto found;
      }
      p += 8;
    }
#endif
    while (p < end && *p != '"' && *p != '\\' && *p >= 0x20) p++;
    if (p == end) {
      set_error(s, MODEL_JSON_ERR_SYNTAX, open, "invalid JSON: %s", "unterminated string starting");
      return NULL;
    }
#ifdef SWAR
  found:
#endif
    if (*p == '"') {
      *escaped = esc;
      return p;
    }
    if (*p < 0x20) {
      set_error(s, MODEL_JSON_ERR_SYNTAX, p, "invalid JSON: %s", "control character in string");
      return NULL;
    }
    esc = true;
    if (end - p < 2) {
      set_error(s, MODEL_JSON_ERR_SYNTAX, open, "invalid JSON: %s", "unterminated string starting");
      return NULL;
    }
    switch (p[1]) {
    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
      p += 2;
      continue;
    case 'u': {
      int cp = end - p >= 6 ? hex4(p + 2) : -1;
      if (cp < 0) {
        set_error(s, MODEL_JSON_ERR_SYNTAX, p, "invalid JSON: %s", "\\u not followed by 4 hex digits");
        return NULL;
      }
      if (cp == 0) {
        note_nul(s, p, is_key);
      } else if (cp >= 0xD800 && cp <= 0xDFFF) {
        int lo = -1;
        if (cp <= 0xDBFF && end - p >= 12 && p[6] == '\\' && p[7] == 'u') lo = hex4(p + 8);
        if (lo < 0xDC00 || lo > 0xDFFF) {
          char esc6[8];
          memcpy(esc6, p, 6);
          esc6[6] = '\0';
          set_error(s, MODEL_JSON_ERR_UTF8, p, "invalid UTF-8: lone surrogate \\%s", esc6 + 1);
          return NULL;
        }
        p += 12;
        continue;
      }
      p += 6;
      continue;
    }
    default:
      set_error(s, MODEL_JSON_ERR_SYNTAX, p, "invalid JSON: %s", "invalid escape in string");
      return NULL;
    }
  }
}

/* ------------------------------------------------------------ the scan */

static inline const unsigned char *skip_ws(const unsigned char *p, const unsigned char *end) {
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
  return p;
}

static inline bool is_digit(unsigned c) { return c - '0' < 10u; }

static inline int match_key(const scan_t *s, const keyrec_t *k, const char *const *names,
                            const uint8_t *lens, size_t n) {
  const char *kp = (const char *)s->base + k->off;
  size_t kl = k->len;
  char buf[32];
  if (k->esc) {
    kl = ref_json_unescape(kp, k->len, true, buf, sizeof buf);
    if (kl > sizeof buf) return -1;
    kp = buf;
  }
  for (size_t i = 0; i < n; i++)
    if (lens[i] == kl) {
      /* Inline compare: names are a few bytes, a memcmp call costs more. */
      size_t j = 0;
      while (j < kl && names[i][j] == kp[j]) j++;
      if (j == kl) return (int)i;
    }
  return -1;
}

static bool scan_run(scan_t *s, const ref_json_schema_t *schema, model_json_value_t *root_vals,
                     model_json_value_t *sub_vals) {
  const unsigned char *const base = s->base, *const end = s->end;
  const unsigned char *p = skip_ws(base, end);
  model_json_value_t *cap = NULL; /* slot for the value about to be scanned */
  uint8_t next_role = ROLE_ROOT;  /* role of an object value about to be scanned */
  frame_t *f = NULL;

value: {
  model_json_value_t *c = cap;
  uint8_t role = next_role;
  cap = NULL;
  next_role = ROLE_OTHER;
  if (p == end) SYNTAX(p, "unexpected end of input, expected a value");
  switch (*p) {
  case '{':
  case '[':
    if (s->depth == MODEL_JSON_MAX_DEPTH) SYNTAX(p, "nesting deeper than 64");
    if (s->depth == 0) s->res->top = *p == '{' ? MODEL_JSON_OBJECT : MODEL_JSON_ARRAY;
    if (c) {
      c->type = *p == '{' ? MODEL_JSON_OBJECT : MODEL_JSON_ARRAY;
      c->start = (size_t)(p - base);
    }
    f = &s->frames[s->depth];
    f->name_key = (s->depth > 0 && !s->frames[s->depth - 1].is_array) ? s->nkeys - 1 : NO_KEY;
    s->depth++;
    f->big = 0;
    f->index = 0;
    f->key_base = s->nkeys;
    if (*p == '{') {
      f->is_array = 0;
      f->role = role;
      p = skip_ws(p + 1, end);
      if (p < end && *p == '}') {
        p++;
        s->depth--;
        goto after_value;
      }
      goto key;
    }
    f->is_array = 1;
    f->role = ROLE_OTHER;
    p = skip_ws(p + 1, end);
    if (p < end && *p == ']') {
      p++;
      s->depth--;
      goto after_value;
    }
    goto value;
  case '"': {
    bool esc;
    const unsigned char *q = lex_string(s, p, &esc, false);
    if (!q) return false;
    if (s->depth == 0) s->res->top = MODEL_JSON_STRING;
    if (c) {
      c->type = MODEL_JSON_STRING;
      c->escaped = esc;
      c->start = (size_t)(p + 1 - base);
      c->len = (size_t)(q - p - 1);
    }
    p = q + 1;
    goto after_value;
  }
  case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8':
  case '9': {
    const unsigned char *st = p;
    bool fe = false;
    if (*p == '-') p++;
    if (p == end || !is_digit(*p)) SYNTAX(p, "expected a digit");
    if (*p == '0') {
      p++;
    } else {
      while (p < end && is_digit(*p)) p++;
    }
    if (p < end && *p == '.') {
      fe = true;
      p++;
      if (p == end || !is_digit(*p)) SYNTAX(p, "expected a digit after '.'");
      while (p < end && is_digit(*p)) p++;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
      fe = true;
      p++;
      if (p < end && (*p == '+' || *p == '-')) p++;
      if (p == end || !is_digit(*p)) SYNTAX(p, "expected a digit in the exponent");
      while (p < end && is_digit(*p)) p++;
    }
    if (s->depth == 0) s->res->top = MODEL_JSON_NUMBER;
    if (c) {
      c->type = MODEL_JSON_NUMBER;
      c->frac_exp = fe;
      c->negative = *st == '-';
      c->start = (size_t)(st - base);
      c->len = (size_t)(p - st);
    }
    goto after_value;
  }
  case 't':
  case 'f':
  case 'n': {
    static const char *const lit[3] = {"true", "false", "null"};
    static const model_json_type_t lt[3] = {MODEL_JSON_TRUE, MODEL_JSON_FALSE, MODEL_JSON_NULL};
    int i = *p == 't' ? 0 : *p == 'f' ? 1 : 2;
    size_t n = i == 1 ? 5 : 4;
    if ((size_t)(end - p) < n || memcmp(p, lit[i], n) != 0) SYNTAX(p, "invalid literal");
    if (s->depth == 0) s->res->top = lt[i];
    if (c) {
      c->type = lt[i];
      c->start = (size_t)(p - base);
      c->len = n;
    }
    p += n;
    goto after_value;
  }
  default:
    SYNTAX(p, "unexpected character, expected a value");
  }
}

after_value:
  p = skip_ws(p, end);
  if (s->depth == 0) {
    if (p != end) SYNTAX(p, "unexpected data after the top-level value");
    return true;
  }
  if (p == end) SYNTAX(p, "unexpected end of input in a container");
  f = &s->frames[s->depth - 1];
  if (f->is_array) {
    if (*p == ',') {
      f->index++;
      p = skip_ws(p + 1, end);
      goto value;
    }
    if (*p == ']') {
      p++;
      s->depth--;
      goto after_value;
    }
    SYNTAX(p, "expected ',' or ']'");
  }
  if (*p == ',') {
    p = skip_ws(p + 1, end);
    goto key;
  }
  if (*p == '}') {
    p++;
    if (f->big) check_big_object(s, f);
    s->nkeys = f->key_base;
    s->depth--;
    goto after_value;
  }
  SYNTAX(p, "expected ',' or '}'");

key: {
  /* f is the innermost frame, an object; p is past whitespace. */
  if (p == end || *p != '"') SYNTAX(p, "expected a string key");
  bool esc;
  const unsigned char *q = lex_string(s, p, &esc, true);
  if (!q) return false;
  if (s->nkeys == s->cap) grow_keys(s);
  keyrec_t *k = &s->keys[s->nkeys];
  k->off = (size_t)(p + 1 - base);
  k->len = (size_t)(q - p - 1);
  k->esc = esc;
  k->hash = key_hash(base, end, k);
  if (!f->big) {
    size_t n = s->nkeys - f->key_base;
    if (n >= SMALL_KEYS) {
      f->big = 1;
    } else {
      for (size_t i = f->key_base; i < s->nkeys; i++)
        if (s->keys[i].hash == k->hash && key_cmp(base, &s->keys[i], k) == 0) {
          note_dup(s, k);
          break;
        }
    }
  }
  s->nkeys++;
  if (f->role == ROLE_ROOT) {
    int i = match_key(s, k, schema->root_keys, schema->root_lens, schema->n_root);
    if (i >= 0 && root_vals[i].type == MODEL_JSON_ABSENT) {
      cap = &root_vals[i];
      if (i == schema->sub_index) next_role = ROLE_SUB;
    }
  } else if (f->role == ROLE_SUB) {
    int i = match_key(s, k, schema->sub_keys, schema->sub_lens, schema->n_sub);
    if (i >= 0 && sub_vals[i].type == MODEL_JSON_ABSENT) cap = &sub_vals[i];
  }
  p = skip_ws(q + 1, end);
  if (p == end || *p != ':') SYNTAX(p, "expected ':' after an object key");
  p = skip_ws(p + 1, end);
  goto value;
}
}

static bool ref_json_scan(const char *buf, size_t len, const ref_json_schema_t *schema,
                     model_json_value_t *root_vals, model_json_value_t *sub_vals,
                     model_json_result_t *res) {
  for (size_t i = 0; i < schema->n_root; i++) root_vals[i].type = MODEL_JSON_ABSENT;
  for (size_t i = 0; i < schema->n_sub; i++) sub_vals[i].type = MODEL_JSON_ABSENT;
  res->status = MODEL_JSON_OK;
  res->top = MODEL_JSON_ABSENT;
  res->offset = 0;
  res->detail[0] = '\0';

  size_t bad = ref_old_utf8_check(buf, len);
  if (bad != len) {
    res->status = MODEL_JSON_ERR_UTF8;
    res->offset = bad;
    snprintf(res->detail, sizeof res->detail, "invalid UTF-8: byte 0x%02x at byte %zu does not start a valid sequence",
             (unsigned char)buf[bad], bad);
    return false;
  }

  keyrec_t stack_keys[MODEL_JSON_STACK_KEYS];
  scan_t s;
  s.base = (const unsigned char *)buf;
  s.end = s.base + len;
  s.keys = stack_keys;
  s.nkeys = 0;
  s.cap = MODEL_JSON_STACK_KEYS;
  s.heap = NULL;
  s.depth = 0;
  s.res = res;
  s.dup_off = NONE;
  s.nul_off = NONE;
  bool ok = scan_run(&s, schema, root_vals, sub_vals);
  free(s.heap);
  if (!ok) return false;
  if (s.dup_off != NONE) {
    res->status = MODEL_JSON_ERR_DUPLICATE;
    res->offset = s.dup_off - 1;
    memcpy(res->detail, s.dup_detail, sizeof res->detail);
    return false;
  }
  if (s.nul_off != NONE) {
    res->status = MODEL_JSON_ERR_NUL;
    res->offset = s.nul_off;
    memcpy(res->detail, s.nul_detail, sizeof res->detail);
    return false;
  }
  return true;
}

#endif
