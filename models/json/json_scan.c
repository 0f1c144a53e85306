/* Strict JSON scanner: see json_scan.h for the contract.
 *
 * Design notes (the why):
 * - Two paths. Most commands, whoever writes them, are one object of known
 *   keys in any order and any whitespace, string values (escaped as any
 *   encoder escapes them), and a sub-object of the same kind. The plain path
 *   (plain_object in json_scan_run.h) scans exactly that shape: a key's
 *   first two bytes pick the one schema name it may be (model_json_slots_t),
 *   compared in place with its '"' and ':' in one 16-byte compare (with its
 *   '"' alone when whitespace comes before the ':', and then the bytes
 *   from the quote to the value, whitespace, ':' and whitespace, found with
 *   one whitespace mask of the same 16 bytes, or in one word compare with
 *   the separator the last key had, on this line or the thread's last one,
 *   as a producer writes the same one after every key); other whitespace is skipped at one cost per byte whichever
 *   of the four it is, a single byte in one step; an escape is checked
 *   where the string kernel stops at it, as the full scan checks it; values
 *   are lexed and captured (the value of a name the schema marks as an id
 *   with one 16-byte mask of id bytes instead of the string kernel, which
 *   the caller then need not check again: model_json_value_t.ident); a
 *   repeated name or anything outside the shape (an unknown key, an escaped
 *   key, an escape that makes U+0000 or a lone surrogate, a nested array, a
 *   bad number or literal) makes it give up without reporting anything.
 *   Text of that shape is valid JSON, valid UTF-8 (checked as it goes), has
 *   no duplicate keys (a name whose value is already captured is a repeat)
 *   and no U+0000, so when the plain path gets to the end, the scan is done.
 *   Otherwise the full scan below starts over from the first byte and
 *   decides.
 * - One pass over the text with an explicit container stack and gotos
 *   instead of recursion: no depth-dependent C stack use and no per-value
 *   function calls on the hot path. The loop (json_scan_run.h) is compiled
 *   once per string kernel (json_simd.h: scalar, SSE2, AVX2); one is chosen
 *   from the CPU's features when the program starts, and tests may force
 *   any of them.
 * - UTF-8 is validated in the same pass: the grammar admits only ASCII
 *   outside strings, and the string kernels stop at every byte >= 0x80, whose
 *   sequence is checked where it stands (json_text.h). An invalid byte
 *   anywhere outranks a syntax error anywhere (invalid_utf8 comes before
 *   invalid_json in the order of rejection codes), so whenever the scan
 *   fails, for any reason, the whole buffer is checked for raw UTF-8 before
 *   the scan's own error is reported. A text that scans cleanly has had
 *   every byte checked.
 * - Escapes are validated as they are met, so that a lone surrogate is
 *   reported as invalid UTF-8 only when no syntax error comes before it.
 * - Keys of the objects whose values are captured (the top level and the
 *   chosen sub-object) are matched against the schema's names, compared as
 *   two 64-bit words (names are zero-padded to 16 bytes); a matched key's
 *   duplicate is one bit in the object's mask of names seen.
 * - Other keys: keys of the objects still open sit in one stack of records
 *   (offset, length, hash of the unescaped bytes). A small object compares
 *   each new key with its earlier unmatched keys (hash first; a matched key
 *   cannot equal an unmatched one); an object that grows past SMALL_KEYS
 *   keys is instead sorted at its close and checked for adjacent equals, so
 *   a hostile object with 100k keys costs n log n, not n^2. Keys are compared
 *   unescaped, on the fly, without copying.
 * - Duplicates and U+0000 outrank nothing but each other, so the scanner
 *   notes the first of each (in text order) and carries on to the end: a
 *   later syntax error or lone surrogate must still win. */
#include "json_scan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json_simd.h"
#include "json_text.h"
#include "oom.h"

#define SMALL_KEYS 16
#define NO_KEY SIZE_MAX
#define NONE SIZE_MAX

enum { ROLE_OTHER = 0, ROLE_ROOT, ROLE_SUB };

typedef struct {
  size_t off; /* content start (after the opening quote) */
  size_t len; /* raw content length */
  uint32_t hash; /* set for unmatched keys of small objects, and at a big object's close */
  uint8_t esc;
  int8_t known;  /* index of the schema name it matched, or -1 */
} keyrec_t;

typedef struct {
  uint8_t is_array;
  uint8_t role;
  uint8_t big;      /* object past SMALL_KEYS keys: duplicates checked at its close */
  uint32_t seen;    /* object: schema names met so far (bit i: name i) */
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
  bool utf8_bad; /* the scan met bytes that are not UTF-8 */
  size_t dup_off;
  size_t nul_off;
  char dup_detail[160];
  char nul_detail[160];
  frame_t frames[MODEL_JSON_MAX_DEPTH];
} scan_t;

const char *model_json_type_name(model_json_type_t t) {
  static const char *const names[] = {"absent", "null",   "false",  "true",
                                      "number", "string", "object", "array"};
  return (unsigned)t < sizeof names / sizeof names[0] ? names[t] : "?";
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
  it->n = model_json_decode_escape(&it->p, it->buf);
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

static void set_error(scan_t *s, model_json_status_t st, const unsigned char *at, const char *fmt,
                      const char *arg) {
  model_json_result_t *r = s->res;
  r->status = st;
  r->offset = (size_t)(at - s->base);
  char what[96];
  snprintf(what, sizeof what, fmt, arg);
  snprintf(r->detail, sizeof r->detail, "%s at byte %zu", what, r->offset);
}

/* Appends the unescaped, detail-escaped key to out (at most ~24 chars). */
static size_t put_key(const scan_t *s, const keyrec_t *k, char *out, size_t cap) {
  char raw[32];
  size_t n = model_json_unescape((const char *)s->base + k->off, k->len, k->esc, raw, sizeof raw);
  char esc[48];
  model_json_escape_detail(raw, n < sizeof raw ? n : sizeof raw, 24, esc, sizeof esc);
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
  for (size_t i = 0; i < n; i++) a[i].hash = key_hash(s->base, s->end, &a[i]);
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
  keyrec_t *n = oom_malloc(ncap * sizeof *n);
  memcpy(n, s->keys, s->nkeys * sizeof *n);
  free(s->heap);
  s->heap = s->keys = n;
  s->cap = ncap;
  return true;
}

/* A key that matched no schema name, pushed at keys[nkeys] of object f:
 * compared with the earlier unmatched keys of a small object, left to the
 * close of a big one. */
static void unknown_key(scan_t *s, frame_t *f, keyrec_t *k) {
  if (f->big) return;
  if (s->nkeys - f->key_base >= SMALL_KEYS) {
    f->big = 1;
    return;
  }
  k->hash = key_hash(s->base, s->end, k);
  for (size_t i = f->key_base; i < s->nkeys; i++)
    if (s->keys[i].known < 0 && s->keys[i].hash == k->hash && key_cmp(s->base, &s->keys[i], k) == 0) {
      note_dup(s, k);
      break;
    }
}

/* --------------------------------------------------------------- strings */

/* p is at a backslash inside the string that opens at `open`. Validates the
 * escape and returns the byte after it, or NULL after setting the error. */
static const unsigned char *lex_escape(scan_t *s, const unsigned char *p, const unsigned char *open,
                                       bool is_key) {
  const unsigned char *const end = s->end;
  if (end - p < 2) {
    set_error(s, MODEL_JSON_ERR_SYNTAX, open, "invalid JSON: %s", "unterminated string starting");
    return NULL;
  }
  switch (p[1]) {
  case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
    return p + 2;
  case 'u': {
    int cp = end - p >= 6 ? model_json_hex4(p + 2) : -1;
    if (cp < 0) {
      set_error(s, MODEL_JSON_ERR_SYNTAX, p, "invalid JSON: %s", "\\u not followed by 4 hex digits");
      return NULL;
    }
    if (cp == 0) {
      note_nul(s, p, is_key);
    } else if (cp >= 0xD800 && cp <= 0xDFFF) {
      int lo = -1;
      if (cp <= 0xDBFF && end - p >= 12 && p[6] == '\\' && p[7] == 'u') lo = model_json_hex4(p + 8);
      if (lo < 0xDC00 || lo > 0xDFFF) {
        char esc6[8];
        memcpy(esc6, p, 6);
        esc6[6] = '\0';
        set_error(s, MODEL_JSON_ERR_UTF8, p, "invalid UTF-8: lone surrogate \\%s", esc6 + 1);
        return NULL;
      }
      return p + 12;
    }
    return p + 6;
  }
  default:
    set_error(s, MODEL_JSON_ERR_SYNTAX, p, "invalid JSON: %s", "invalid escape in string");
    return NULL;
  }
}

/* ------------------------------------------------------------ the scan */

/* JSON's whitespace (space, tab, LF, CR), one bit each: a byte is tested
 * with one compare and one bit test, whichever of the four it is. */
#define WS_BITS ((1ULL << ' ') | (1ULL << '\t') | (1ULL << '\n') | (1ULL << '\r'))

static inline __attribute__((always_inline)) bool is_ws(unsigned c) { return c <= ' ' && ((WS_BITS >> c) & 1); }

static inline __attribute__((always_inline)) const unsigned char *skip_ws(const unsigned char *p,
                                                                          const unsigned char *end) {
  while (p < end && is_ws(*p)) p++;
  return p;
}

/* Past the whitespace at p, inside an object whose '}' comes before end
 * (the '}' stops the run, so end is not compared): any run of the four
 * bytes, at one cost per byte. */
static inline __attribute__((always_inline)) const unsigned char *plain_ws(const unsigned char *p) {
  if (__builtin_expect(*p <= ' ', 0)) {
    /* one space or tab before a token, as Python writes after ',' and
     * ':' and others indent, in one step (the '}' at the end comes after
     * it, so p[1] is in the text) */
    if ((*p == ' ' || *p == '\t') && p[1] > ' ') return p + 1;
    /* else any byte of the four in one step of the loop, a run one step
     * per byte */
    if (is_ws(*p)) {
      do p++;
      while (is_ws(*p));
    }
  }
  return p;
}

/* The escape at p (a backslash) of a string on the plain path, before end:
 * the byte after it; or NULL where the full scan is to decide (an invalid
 * escape, U+0000, a lone surrogate), as for anything outside the shape. */
static inline __attribute__((always_inline)) const unsigned char *plain_escape(const unsigned char *p,
                                                                             const unsigned char *end) {
  switch (p[1]) {
  case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
    return p + 2;
  case 'u': {
    int cp = end - p >= 6 ? model_json_hex4(p + 2) : -1;
    if (cp <= 0) return NULL;
    if (cp < 0xD800 || cp > 0xDFFF) return p + 6;
    if (cp > 0xDBFF || end - p < 12 || p[6] != '\\' || p[7] != 'u') return NULL;
    int lo = model_json_hex4(p + 8);
    return lo >= 0xDC00 && lo <= 0xDFFF ? p + 12 : NULL;
  }
  default: return NULL;
  }
}

static inline bool is_digit(unsigned c) { return c - '0' < 10u; }

/* The number at p (a '-' or a digit): where it ends, and *frac_exp
 * whether it has a fraction or an exponent; or NULL, with *at and *why
 * saying where and why the text is not a number. The full scan and the
 * plain path both lex numbers here. */
static inline __attribute__((always_inline)) const unsigned char *
lex_number(const unsigned char *p, const unsigned char *end, bool *frac_exp, const unsigned char **at,
           const char **why) {
  bool fe = false;
  if (*p == '-') p++;
  if (p == end || !is_digit(*p)) {
    *at = p, *why = "expected a digit";
    return NULL;
  }
  if (*p == '0') {
    p++;
  } else {
    while (p < end && is_digit(*p)) p++;
  }
  if (p < end && *p == '.') {
    fe = true;
    p++;
    if (p == end || !is_digit(*p)) {
      *at = p, *why = "expected a digit after '.'";
      return NULL;
    }
    while (p < end && is_digit(*p)) p++;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    fe = true;
    p++;
    if (p < end && (*p == '+' || *p == '-')) p++;
    if (p == end || !is_digit(*p)) {
      *at = p, *why = "expected a digit in the exponent";
      return NULL;
    }
    while (p < end && is_digit(*p)) p++;
  }
  *frac_exp = fe;
  return p;
}

/* The literal at p (a 't', 'f' or 'n'): its length, and *type; 0 when the
 * text there is not true, false or null. */
static inline __attribute__((always_inline)) size_t lex_literal(const unsigned char *p, const unsigned char *end,
                                                                model_json_type_t *type) {
  /* Compared as one 4-byte word (and the 'e' of false), not with memcmp:
   * a null is as common as a short string in some producers' commands. */
  uint32_t w, t, f, n;
  if (end - p < 4) return 0;
  memcpy(&w, p, 4);
  memcpy(&t, "true", 4);
  memcpy(&f, "fals", 4);
  memcpy(&n, "null", 4);
  if (w == n) {
    *type = MODEL_JSON_NULL;
    return 4;
  }
  if (w == t) {
    *type = MODEL_JSON_TRUE;
    return 4;
  }
  if (w == f && end - p >= 5 && p[4] == 'e') {
    *type = MODEL_JSON_FALSE;
    return 5;
  }
  return 0;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define LOW_BYTES(n) (~0ULL << (64 - 8 * (n))) /* the first n bytes of a loaded word, 1 <= n <= 8 */
#else
#define LOW_BYTES(n) (~0ULL >> (64 - 8 * (n)))
#endif

/* Index of the schema name equal to key k (unescaped), or -1. Both sides are
 * compared as two words of 16 zero-padded bytes. */
static inline __attribute__((always_inline)) int
match_key(const scan_t *s, const keyrec_t *k, const char (*names)[MODEL_JSON_KEY_MAX],
          const uint8_t *lens, size_t n) {
  const unsigned char *kp = s->base + k->off;
  size_t kl = k->len;
  uint64_t w[2] = {0, 0};
  if (k->esc) {
    char buf[32];
    kl = model_json_unescape((const char *)kp, k->len, true, buf, sizeof buf);
    if (kl > MODEL_JSON_KEY_MAX) return -1;
    memcpy(w, buf, kl);
  } else {
    if (kl > MODEL_JSON_KEY_MAX) return -1;
    if (kl && s->end - kp >= 16) {
      memcpy(w, kp, 16);
      if (kl <= 8) {
        w[0] &= LOW_BYTES(kl);
        w[1] = 0;
      } else {
        w[1] &= LOW_BYTES(kl - 8);
      }
    } else {
      memcpy(w, kp, kl);
    }
  }
  uint64_t nw[2];
  for (size_t i = 0; i < n; i++)
    if (lens[i] == kl) {
      memcpy(nw, names[i], 16);
      if (nw[0] == w[0] && nw[1] == w[1]) return (int)i;
    }
  return -1;
}

/* The plain path's keys. A match is a name's own bytes, plain ASCII, so
 * the key holds nothing the string lexer would stop at. */
#define PLAIN_KEY_MAX 14 /* a key and its '"' ':' within 16 bytes */

/* A slot's mask when it holds no name or several: bits 16 and 17, which a
 * compare of 16 bytes never sets, so that the one compare of plain_key
 * fails, and so does the compare of the name and its quote (the mask
 * shifted right by one, bit 16 kept), and plain_key_shared decides. */
#define SLOT_NONE (3u << 16)

/* The slot of the text at kp: its first two bytes, hashed. For a name,
 * they are the name's first two bytes, or its only byte and the closing
 * quote, or the closing quote and the colon: bytes of the pattern a key
 * is compared with, so that a key has the slot of the one name it can be. */
static inline __attribute__((always_inline)) unsigned slot_of(const unsigned char *kp) {
  uint16_t w;
  memcpy(&w, kp, 2);
  return ((uint32_t)w * 0x85EBCA6Bu) >> 26;
}

void model_json_slots(const char (*names)[MODEL_JSON_KEY_MAX], const uint8_t *lens, size_t n, uint32_t ident,
                      model_json_slots_t *slots) {
  memset(slots, 0, sizeof *slots);
  for (size_t h = 0; h < MODEL_JSON_SLOTS; h++) {
    slots->slot[h].mask = SLOT_NONE;
    slots->slot[h].qmask = SLOT_NONE >> 1;
  }
  slots->n = (uint8_t)(n < MODEL_JSON_NAMES_MAX ? n : MODEL_JSON_NAMES_MAX);
  for (size_t i = 0; i < slots->n; i++) {
    if (lens[i] > PLAIN_KEY_MAX) continue; /* never matched in place: the full scan decides */
    model_json_slot_t *e = &slots->name[i];
    memcpy(e->pat, names[i], lens[i]);
    e->pat[lens[i]] = '"';
    e->pat[lens[i] + 1] = ':';
    e->mask = (4u << lens[i]) - 1;
    e->name = (uint8_t)i;
    e->skip = (uint8_t)(lens[i] + 2);
    e->quote = (uint8_t)lens[i];
    e->sep_at = lens[i] + 1u <= 12 ? (uint8_t)(lens[i] + 1) : 0;
    e->qmask = e->mask >> 1;
    e->ident = (ident >> i) & 1;
    e->at = (uint16_t)(i * sizeof(model_json_value_t));
    unsigned h = slot_of(e->pat);
    slots->slot[h] = *e;
    if (slots->count[h]++) {
      slots->slot[h].mask = SLOT_NONE;
      slots->slot[h].qmask = SLOT_NONE >> 1;
    }
  }
}

/* The bytes of the 16 at kp equal to those of entry e's pattern (bit k:
 * byte k). */
static inline __attribute__((always_inline)) unsigned pattern_eq(const unsigned char *kp, const model_json_slot_t *e) {
#ifdef MODEL_JSON_HAVE_SSE2
  return (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(const void *)kp),
                                                    _mm_load_si128((const __m128i *)(const void *)e->pat)));
#else
  unsigned eq = 0;
  for (unsigned k = 0; k < 16; k++) eq |= (unsigned)(kp[k] == e->pat[k]) << k;
  return eq;
#endif
}

/* The bytes from p, fewer than 16 before end, with zeros after them to
 * make 16: in pad, from a copy of the text's last 16 bytes when it has
 * them, else byte by byte. */
static inline __attribute__((always_inline)) const unsigned char *
tail16(const unsigned char *p, const unsigned char *base, const unsigned char *end, unsigned char pad[32]) {
  memset(pad + 16, 0, 16);
  if (end - base >= 16) {
    memcpy(pad, end - 16, 16);
    return pad + (p - (end - 16));
  }
  memset(pad, 0, 16);
  memcpy(pad, p, (size_t)(end - p));
  return pad;
}

/* key_value, plain_key_shared and plain_key, the plain path's key lookup,
 * are in json_scan_run.h: they skip whitespace with the instance's mask. */

/* The type of the value that starts with byte c (syntax aside). */
static inline model_json_type_t top_type(unsigned c) {
  switch (c) {
  case '{': return MODEL_JSON_OBJECT;
  case '[': return MODEL_JSON_ARRAY;
  case '"': return MODEL_JSON_STRING;
  case 't': return MODEL_JSON_TRUE;
  case 'f': return MODEL_JSON_FALSE;
  case 'n': return MODEL_JSON_NULL;
  default: return MODEL_JSON_NUMBER;
  }
}

#define SYNTAX(at, msg)                                                                           \
  do {                                                                                            \
    set_error(s, MODEL_JSON_ERR_SYNTAX, (at), "invalid JSON: %s", (msg));                         \
    return false;                                                                                 \
  } while (0)

/* The text of the plain path (json_scan_run.h), set once per scan. */
typedef struct {
  const unsigned char *base, *end; /* end: past the text's last '}' */
  const unsigned char *safe;       /* a key that starts before it has 16 readable bytes */
  const model_json_schema_t *schema;
  model_json_value_t *sub_vals;
  /* the last separator of a key and its value found with whitespace in it
   * (json_scan_run.h, key_value): its bytes (sep), sep_len of them, under
   * sep_mask; none yet: sep 1 under mask 0, which no bytes match */
  uint32_t sep, sep_mask, sep_len;
} plain_t;

/* The separator after keys that this thread's last plain scan ended with
 * (plain_t.sep), where the next one starts: a stream's lines come from one
 * producer, so the next line's first key finds its separator in one
 * compare too. Only ever compared with text: a stale one costs the mask.
 * None yet: sep 1 under mask 0, which no bytes match. */
typedef struct {
  uint32_t sep, mask, len;
} sep_t;
static _Thread_local sep_t last_sep = {1, 0, 0};

typedef bool (*scan_fn_t)(scan_t *, const model_json_schema_t *, model_json_value_t *,
                          model_json_value_t *);
static bool scan_full(scan_fn_t run, const char *buf, size_t len, const model_json_schema_t *schema,
                      model_json_value_t *root_vals, model_json_value_t *sub_vals, model_json_result_t *res);

/* The instances of the scan loop, one per string kernel. */
#define SCAN_NAME(x) x##_scalar
#define SCAN_STOP model_json_stop_scalar
#define SCAN_IDLEN model_json_id_len16
#define SCAN_WS16 model_json_ws_mask16
#define SCAN_ATTR
#include "json_scan_run.h"

#ifdef MODEL_JSON_HAVE_SSE2
#define SCAN_NAME(x) x##_sse2
#define SCAN_STOP model_json_stop_sse2
#define SCAN_IDLEN model_json_id_len16
#define SCAN_WS16 model_json_ws_mask16
#define SCAN_ATTR
#include "json_scan_run.h"

#define SCAN_NAME(x) x##_avx2
#define SCAN_STOP model_json_stop_avx2
#define SCAN_IDLEN model_json_id_len16_avx2
#define SCAN_WS16 model_json_ws_mask16_avx2
#define SCAN_ATTR __attribute__((target("avx2,bmi,bmi2")))
#include "json_scan_run.h"
#endif

/* One kernel's whole scan: the plain path, then the full scan if needed. */
typedef bool (*kernel_scan_fn_t)(const char *, size_t, const model_json_schema_t *, model_json_value_t *,
                                 model_json_value_t *, model_json_result_t *);

static model_json_kernel_t forced_kernel = MODEL_JSON_KERNEL_AUTO;

#ifdef MODEL_JSON_HAVE_SSE2
/* The AVX2 instance is also compiled for BMI1 and BMI2 (andn, shrx, tzcnt
 * in the key lookup's mask arithmetic), which every CPU with AVX2 has so
 * far; all three are asked for, so that one without them takes SSE2. */
static bool cpu_avx2(void) {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi") && __builtin_cpu_supports("bmi2");
}
#endif

bool model_json_kernel_available(model_json_kernel_t k) {
  switch (k) {
  case MODEL_JSON_KERNEL_AUTO:
  case MODEL_JSON_KERNEL_SCALAR: return true;
#ifdef MODEL_JSON_HAVE_SSE2
  case MODEL_JSON_KERNEL_SSE2: return true;
  case MODEL_JSON_KERNEL_AVX2: return cpu_avx2();
#endif
  default: return false;
  }
}


model_json_kernel_t model_json_kernel(void) {
  if (forced_kernel != MODEL_JSON_KERNEL_AUTO) return forced_kernel;
#ifdef MODEL_JSON_HAVE_SSE2
  return cpu_avx2() ? MODEL_JSON_KERNEL_AVX2 : MODEL_JSON_KERNEL_SSE2;
#else
  return MODEL_JSON_KERNEL_SCALAR;
#endif
}

const char *model_json_kernel_name(model_json_kernel_t k) {
  static const char *const names[] = {"auto", "scalar", "sse2", "avx2"};
  return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

static kernel_scan_fn_t pick_scan(void) {
  switch (model_json_kernel()) {
#ifdef MODEL_JSON_HAVE_SSE2
  case MODEL_JSON_KERNEL_AVX2: return scan_avx2;
  case MODEL_JSON_KERNEL_SSE2: return scan_sse2;
#endif
  default: return scan_scalar;
  }
}

/* The scan model_json_scan() runs: chosen when the program starts (before
 * any thread can scan), and again by model_json_force_kernel, so that a
 * scan does not ask the CPU for its features. */
static kernel_scan_fn_t chosen_scan = scan_scalar;

__attribute__((constructor)) static void json_scan_choose(void) {
#ifdef MODEL_JSON_HAVE_SSE2
  __builtin_cpu_init(); /* the feature tests may run before libgcc's own constructor */
#endif
  chosen_scan = pick_scan();
}

bool model_json_force_kernel(model_json_kernel_t k) {
  if (!model_json_kernel_available(k)) return false;
  forced_kernel = k;
  chosen_scan = pick_scan();
  return true;
}

/* Sets vals[0..n) ABSENT: straight stores for a list of 8 names (a
 * command's), a loop otherwise. */
static inline void mark_absent(model_json_value_t *vals, size_t n) {
  if (n == 8) {
    vals[0].type = vals[1].type = vals[2].type = vals[3].type = MODEL_JSON_ABSENT;
    vals[4].type = vals[5].type = vals[6].type = vals[7].type = MODEL_JSON_ABSENT;
    return;
  }
  for (size_t i = 0; i < n; i++) vals[i].type = MODEL_JSON_ABSENT;
}

bool model_json_scan(const char *buf, size_t len, const model_json_schema_t *schema,
                     model_json_value_t *root_vals, model_json_value_t *sub_vals,
                     model_json_result_t *res) {
  mark_absent(root_vals, schema->n_root);
  mark_absent(sub_vals, schema->n_sub);
  res->status = MODEL_JSON_OK;
  res->top = MODEL_JSON_ABSENT;
  res->offset = 0;
  res->detail[0] = '\0';
  return chosen_scan(buf, len, schema, root_vals, sub_vals, res);
}

/* The full scan with kernel instance `run`, for a text the plain path gave
 * up on: from the start, with nothing captured yet. */
static bool scan_full(scan_fn_t run, const char *buf, size_t len, const model_json_schema_t *schema,
                      model_json_value_t *root_vals, model_json_value_t *sub_vals, model_json_result_t *res) {
  mark_absent(root_vals, schema->n_root);
  mark_absent(sub_vals, schema->n_sub);

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
  s.utf8_bad = false;
  s.dup_off = NONE;
  s.nul_off = NONE;
  bool ok = run(&s, schema, root_vals, sub_vals);
  free(s.heap);
  if (!ok) {
    /* Raw UTF-8 anywhere outranks whatever stopped the scan. The scan stops
     * at its first bad sequence, which is the first of the buffer: the text
     * before it has been checked. */
    size_t bad = model_utf8_check(buf, len);
    if (bad != len) {
      res->status = MODEL_JSON_ERR_UTF8;
      res->offset = bad;
      snprintf(res->detail, sizeof res->detail,
               "invalid UTF-8: byte 0x%02x at byte %zu does not start a valid sequence",
               (unsigned char)buf[bad], bad);
    }
    return false;
  }
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
