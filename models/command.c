/* Command decoding and validation.
 *
 * Two phases. The strict scanner (json_scan.c) validates the whole text and
 * records where the envelope's and data's known fields are; it owns the
 * global rules (invalid_utf8, invalid_json, duplicate_key, U+0000). Then this
 * file checks the fields. Each field has at most one fault (the first of
 * missing / wrong type / its value rule), and the reported fault is the one
 * with the lowest code in the order of rejection codes, the earlier field
 * winning a tie: the rule "codes in order, fields in order" without a pass
 * per code. Details are formatted only when a fault becomes the best so far, so
 * the success path never touches snprintf.
 *
 * Fields the type ignores (student for assignment.*, data for
 * assignment.deleted and roster.*) are never looked at beyond the global
 * rules; in the output they are zeroed (empty strings, has_ flags false),
 * without clearing the whole struct (its strings are inline arrays). */
#include "command.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json/json_scan.h"
#include "json/json_simd.h"
#include "timestamp.h"
#include "timestamp_parse.h"
#include "zero.h"

/* ------------------------------------------------------------------ names */

static const char *const type_names[MODEL_CMD_TYPE_COUNT] = {
    "assignment.upserted", "assignment.deleted", "submission.updated",
    "grade.updated",       "roster.assigned",    "roster.unassigned",
};

const char *model_cmd_type_name(model_cmd_type_t t) {
  return (unsigned)t < MODEL_CMD_TYPE_COUNT ? type_names[t] : NULL;
}

bool model_cmd_type_has_student(model_cmd_type_t t) {
  return t == MODEL_CMD_SUBMISSION_UPDATED || t == MODEL_CMD_GRADE_UPDATED ||
         t == MODEL_CMD_ROSTER_ASSIGNED || t == MODEL_CMD_ROSTER_UNASSIGNED;
}

static bool type_has_data(model_cmd_type_t t) {
  return t == MODEL_CMD_ASSIGNMENT_UPSERTED || t == MODEL_CMD_SUBMISSION_UPDATED ||
         t == MODEL_CMD_GRADE_UPDATED;
}

const char *model_reject_code_name(model_reject_code_t code) {
  static const char *const names[MODEL_REJ_COUNT] = {
      "ok",           "too_large",     "invalid_utf8", "invalid_json",   "duplicate_key",
      "invalid_value", "not_object",   "missing_field", "wrong_type",    "invalid_id",
      "unknown_type", "invalid_version", "invalid_timestamp", "document_too_large",
  };
  return (unsigned)code < MODEL_REJ_COUNT ? names[code] : NULL;
}

void model_reject_document_too_large(model_reject_t *rej, size_t would_be, size_t limit) {
  rej->code = MODEL_REJ_DOCUMENT_TOO_LARGE;
  snprintf(rej->detail, sizeof rej->detail, "the stored document would reach %zu bytes, past its limit of %zu",
           would_be, limit);
}

static const char *const assignment_status_names[] = {"draft", "published", "closed"};
static const char *const submission_status_names[] = {"working", "submitted", "returned",
                                                      "reassigned"};
const uint8_t model_assignment_status_len[3] = {sizeof "draft" - 1, sizeof "published" - 1, sizeof "closed" - 1};
const uint8_t model_submission_status_len[4] = {sizeof "working" - 1, sizeof "submitted" - 1, sizeof "returned" - 1,
                                                sizeof "reassigned" - 1};

const char *model_assignment_status_name(model_assignment_status_t s) {
  return (unsigned)s < 3 ? assignment_status_names[s] : NULL;
}

const char *model_submission_status_name(model_submission_status_t s) {
  return (unsigned)s < 4 ? submission_status_names[s] : NULL;
}

/* ----------------------------------------------------------------- schema */

enum { F_ID, F_TYPE, F_TENANT, F_ASSIGNMENT, F_STUDENT, F_VERSION, F_TS, F_DATA, F_ROOT_COUNT };
enum {
  D_CLASS,
  D_TITLE,
  D_STATUS,
  D_DUE_AT,
  D_POINTS,
  D_SUBMITTED_AT,
  D_RETURNED_AT,
  D_FEEDBACK,
  D_COUNT
};

static const char root_keys[F_ROOT_COUNT][MODEL_JSON_KEY_MAX] = {
    "id", "type", "tenant", "assignment", "student", "version", "ts", "data"};
static const char data_keys[D_COUNT][MODEL_JSON_KEY_MAX] = {
    "class", "title", "status", "dueAt", "points", "submittedAt", "returnedAt", "feedback"};

static const uint8_t root_lens[F_ROOT_COUNT] = {2, 4, 6, 10, 7, 7, 2, 4};
static const uint8_t data_lens[D_COUNT] = {5, 5, 6, 5, 6, 11, 10, 8};

/* The lists' slots (model_json_slots), filled once when the program starts,
 * before any thread can decode. The ids (the command's id, tenant,
 * assignment, student, data.class) are marked, so that the scan checks
 * their bytes as it finds them (model_json_value_t.ident). */
static model_json_slots_t root_slots, data_slots;

__attribute__((constructor)) static void command_schema_init(void) {
  const uint32_t ids = 1u << F_ID | 1u << F_TENANT | 1u << F_ASSIGNMENT | 1u << F_STUDENT;
  model_json_slots(root_keys, root_lens, F_ROOT_COUNT, ids, &root_slots);
  model_json_slots(data_keys, data_lens, D_COUNT, 1u << D_CLASS, &data_slots);
}

static const model_json_schema_t schema = {root_keys, root_lens, F_ROOT_COUNT, F_DATA,    data_keys,
                                           data_lens, D_COUNT,   &root_slots,  &data_slots};

/* ------------------------------------------------------------- the checks */

typedef struct {
  const char *buf;
  const char *end; /* buf + its length */
  size_t pad_from; /* a value that starts here or later has fewer than 16 bytes left in buf */
  model_reject_code_t best; /* MODEL_OK while no fault */
  model_reject_t *rej;
} check_t;

static void fault(check_t *c, model_reject_code_t code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Place of a field fault in the order of rejection codes. MODEL_REJ_INVALID_VALUE sits
 * early in the enum for the global U+0000 rule; as a field fault it is the
 * last code of all. */
static inline int rank(model_reject_code_t code) {
  return code == MODEL_REJ_INVALID_VALUE ? MODEL_REJ_COUNT : (int)code;
}

/* Records a fault if it outranks the best so far (strictly: on a tie the
 * earlier field, checked first, wins). */
static void fault(check_t *c, model_reject_code_t code, const char *fmt, ...) {
  if (c->best != MODEL_OK && rank(c->best) <= rank(code)) return;
  c->best = code;
  c->rej->code = code;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->rej->detail, sizeof c->rej->detail, fmt, ap);
  va_end(ap);
}

/* True when a fault of this code could still become the report. */
static inline bool may(const check_t *c, model_reject_code_t code) {
  return c->best == MODEL_OK || rank(code) < rank(c->best);
}

static const char *article_type(model_json_type_t t) {
  switch (t) {
  case MODEL_JSON_NULL: return "null";
  case MODEL_JSON_FALSE:
  case MODEL_JSON_TRUE: return "a boolean";
  case MODEL_JSON_NUMBER: return "a number";
  case MODEL_JSON_STRING: return "a string";
  case MODEL_JSON_OBJECT: return "an object";
  case MODEL_JSON_ARRAY: return "an array";
  default: return "nothing";
  }
}

/* want() for a value that is not of the wanted type: records its fault, if
 * any, and returns false. */
static bool want_other(check_t *c, const char *name, const model_json_value_t *v, model_json_type_t type,
                       bool required, bool nullable) {
  if (v->type == MODEL_JSON_ABSENT) {
    if (required) fault(c, MODEL_REJ_MISSING_FIELD, "%s: required field is missing", name);
    return false;
  }
  if (v->type == MODEL_JSON_NULL && nullable) return false;
  fault(c, MODEL_REJ_WRONG_TYPE, "%s: expected %s%s, got %s", name, article_type(type),
        nullable ? " or null" : "", article_type(v->type));
  return false;
}

/* Presence and JSON type of a field. Returns true when the value has the
 * wanted type and its value rule must be checked. `nullable`: null (and
 * absence) are fine and mean "no value". The common case is inline. */
static inline bool want(check_t *c, const char *name, const model_json_value_t *v, model_json_type_t type,
                        bool required, bool nullable) {
  return v->type == type || want_other(c, name, v, type, required, nullable);
}

static size_t unescape(const check_t *c, const model_json_value_t *v, char *out, size_t cap) {
  return model_json_unescape(c->buf + v->start, v->len, v->escaped, out, cap);
}

/* A quoted, escaped, truncated rendering of a decoded value for details. */
static const char *show(const char *s, size_t n, size_t cap_used, char out[64]) {
  model_json_escape_detail(s, n < cap_used ? n : cap_used, 40, out, 64);
  if (n > cap_used && !strstr(out, "...")) strcat(out, "...");
  return out;
}

static const bool id_char[256] = {
    ['-'] = 1, ['_'] = 1, ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1,
    ['6'] = 1, ['7'] = 1, ['8'] = 1, ['9'] = 1, ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1,
    ['E'] = 1, ['F'] = 1, ['G'] = 1, ['H'] = 1, ['I'] = 1, ['J'] = 1, ['K'] = 1, ['L'] = 1,
    ['M'] = 1, ['N'] = 1, ['O'] = 1, ['P'] = 1, ['Q'] = 1, ['R'] = 1, ['S'] = 1, ['T'] = 1,
    ['U'] = 1, ['V'] = 1, ['W'] = 1, ['X'] = 1, ['Y'] = 1, ['Z'] = 1, ['a'] = 1, ['b'] = 1,
    ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1, ['g'] = 1, ['h'] = 1, ['i'] = 1, ['j'] = 1,
    ['k'] = 1, ['l'] = 1, ['m'] = 1, ['n'] = 1, ['o'] = 1, ['p'] = 1, ['q'] = 1, ['r'] = 1,
    ['s'] = 1, ['t'] = 1, ['u'] = 1, ['v'] = 1, ['w'] = 1, ['x'] = 1, ['y'] = 1, ['z'] = 1,
};

/* Copies the unescaped id src[0..n), 1 <= n <= MODEL_ID_MAX, to out and
 * returns whether every byte is an id character. Whole 16-byte blocks when
 * the text has them (bytes past n are copied and ignored), else byte by byte. */
static inline bool copy_id(const check_t *c, const unsigned char *src, size_t n, char *out) {
  size_t blocks = (n + 15) / 16;
  if ((size_t)((const unsigned char *)c->end - src) >= blocks * 16) {
    bool ok = true;
    for (size_t b = 0; b < blocks; b++) {
      size_t left = n - b * 16;
      unsigned want = left >= 16 ? 0xFFFFu : (1u << left) - 1;
      ok &= (model_json_id_mask16(src + b * 16) & want) == want;
      memcpy(out + b * 16, src + b * 16, 16);
    }
    return ok;
  }
  bool all = true;
  for (size_t i = 0; i < n; i++) {
    all &= id_char[src[i]];
    out[i] = (char)src[i];
  }
  return all;
}

/* An id field (tenant, assignment, student, data.class) into out[MODEL_ID_MAX+1]. */
static __attribute__((noinline)) void check_id_any(check_t *c, const char *name, const model_json_value_t *v,
                                                   bool required, char *out, uint8_t *out_len) {
  if (!want(c, name, v, MODEL_JSON_STRING, required, false)) return;
  size_t n;
  bool ok;
  if (!v->escaped) {
    /* The common case: copy and check in one walk over the text. */
    const unsigned char *src = (const unsigned char *)c->buf + v->start;
    n = v->len;
    ok = n >= 1 && n <= MODEL_ID_MAX && copy_id(c, src, n, out);
  } else {
    n = unescape(c, v, out, MODEL_ID_MAX);
    ok = n >= 1 && n <= MODEL_ID_MAX;
    for (size_t i = 0; ok && i < n; i++) ok = id_char[(unsigned char)out[i]];
  }
  if (!ok) {
    fault(c, MODEL_REJ_INVALID_ID, "%s: does not match ^[A-Za-z0-9_-]{1,64}$", name);
    return;
  }
  out[n] = '\0';
  *out_len = (uint8_t)n;
}

/* out[0..n) = src[0..n) for 1 <= n <= 16, reading and writing only those
 * bytes: two overlapping words of 8, 4, 2 or 1 bytes. */
static inline void copy_1_16(char *out, const unsigned char *src, size_t n) {
  if (n >= 8) {
    uint64_t a, b;
    memcpy(&a, src, 8);
    memcpy(&b, src + n - 8, 8);
    memcpy(out, &a, 8);
    memcpy(out + n - 8, &b, 8);
  } else if (n >= 4) {
    uint32_t a, b;
    memcpy(&a, src, 4);
    memcpy(&b, src + n - 4, 4);
    memcpy(out, &a, 4);
    memcpy(out + n - 4, &b, 4);
  } else {
    unsigned char a = src[0], m = src[n / 2], b = src[n - 1];
    out[0] = (char)a;
    out[n / 2] = (char)m;
    out[n - 1] = (char)b;
  }
}

/* The common id, without a loop: a string without escapes of 1..16 bytes
 * whose bytes all are id characters (printable: all printable ASCII, for a
 * command id) is checked as one 16-byte block, unless the scan has checked
 * it (ident), and copied whole to out (bytes past the id are overwritten by
 * its NUL or ignored), its length to *out_len; an id that starts less than
 * 16 bytes before the end of the text (the last member of a line, in some
 * producers' key order) is copied as two overlapping words when the scan
 * has checked it, else read from a copy of the text's last 16 bytes, zeros
 * after them. False for anything else, which the caller's general
 * check decides from the start. */
static inline __attribute__((always_inline)) bool short_id(const check_t *c, const model_json_value_t *v,
                                                           bool printable, char *out, uint8_t *out_len) {
  if (v->type != MODEL_JSON_STRING || (!v->ident && (v->escaped || v->len - 1 >= 16))) return false;
  const unsigned char *src = (const unsigned char *)c->buf + v->start;
  unsigned char pad[32];
  if (__builtin_expect(v->start >= c->pad_from, 0)) {
    if (v->ident) {
      /* checked by the scan: its 1..16 bytes copied as two overlapping
       * words, which read nothing past it */
      copy_1_16(out, src, v->len);
      out[v->len] = '\0';
      *out_len = (uint8_t)v->len;
      return true;
    }
    /* the text's last 16 bytes, zeros after them (or the id alone, in a
     * text shorter than that) */
    size_t len = (size_t)(c->end - c->buf);
    memset(pad + 16, 0, 16);
    if (len >= 16) {
      memcpy(pad, c->end - 16, 16);
      src = pad + (v->start - (len - 16));
    } else {
      memset(pad, 0, 16);
      memcpy(pad, src, v->len);
      src = pad;
    }
  }
  if (!v->ident) {
    /* An id: its closing quote (or the padding) at byte len is no id
     * character, so the id's bytes are exactly the mask's trailing ones.
     * (Id bytes are printable too.) */
    bool ok;
    if (printable) {
      unsigned want = (2u << (v->len - 1)) - 1;
      ok = (model_json_printable_mask16(src) & want) == want;
    } else {
      ok = (size_t)__builtin_ctz(~model_json_id_mask16(src)) == v->len;
    }
    if (!ok) return false;
  }
  memcpy(out, src, 16);
  out[v->len] = '\0';
  *out_len = (uint8_t)v->len;
  return true;
}

/* check_id, inline for the common id (short_id); anything else goes to
 * check_id_any. */
static inline __attribute__((always_inline)) void check_id(check_t *c, const char *name,
                                                           const model_json_value_t *v, bool required, char *out,
                                                           uint8_t *out_len) {
  if (!short_id(c, v, false, out, out_len)) check_id_any(c, name, v, required, out, out_len);
}

/* A timestamp-or-null field; returns whether it holds a value. */
static __attribute__((noinline)) bool check_ts_any(check_t *c, const char *name, const model_json_value_t *v,
                                                   bool required, bool nullable, int64_t *ms) {
  if (!want(c, name, v, MODEL_JSON_STRING, required, nullable)) return false;
  if (!may(c, MODEL_REJ_INVALID_TIMESTAMP)) return false;
  if (!v->escaped && model_timestamp_parse(c->buf + v->start, v->len, ms)) return true;
  char tmp[32];
  size_t n = unescape(c, v, tmp, sizeof tmp);
  if (n > sizeof tmp || !model_timestamp_parse(tmp, n, ms)) {
    char shown[64];
    fault(c, MODEL_REJ_INVALID_TIMESTAMP,
          "%s: \"%s\" is not a timestamp YYYY-MM-DDTHH:MM:SS[.F]Z", name,
          show(tmp, n, sizeof tmp, shown));
    return false;
  }
  return true;
}

/* a[0..n) == b[0..n) for 4 <= n, as 8-byte words (the last one
 * overlapping), or two overlapping 4-byte words below 8. */
static inline bool same_bytes(const char *a, const char *b, size_t n) {
  if (n < 8) {
    uint32_t x0, y0, x1, y1;
    memcpy(&x0, a, 4);
    memcpy(&y0, b, 4);
    memcpy(&x1, a + n - 4, 4);
    memcpy(&y1, b + n - 4, 4);
    return ((x0 ^ y0) | (x1 ^ y1)) == 0;
  }
  uint64_t x, y, diff = 0;
  size_t i = 0;
  for (; i + 8 < n; i += 8) {
    memcpy(&x, a + i, 8);
    memcpy(&y, b + i, 8);
    diff |= x ^ y;
  }
  memcpy(&x, a + n - 8, 8);
  memcpy(&y, b + n - 8, 8);
  return (diff | (x ^ y)) == 0;
}

/* same_bytes for 13 <= n <= 24 (a type's name): three 8-byte words,
 * overlapping, that cover [0, n) without a loop. */
static inline bool same_bytes_13_24(const char *a, const char *b, size_t n) {
  uint64_t x0, y0, x1, y1, x2, y2;
  size_t mid = n / 2 - 4;
  memcpy(&x0, a, 8);
  memcpy(&y0, b, 8);
  memcpy(&x1, a + mid, 8);
  memcpy(&y1, b + mid, 8);
  memcpy(&x2, a + n - 8, 8);
  memcpy(&y2, b + n - 8, 8);
  return ((x0 ^ y0) | (x1 ^ y1) | (x2 ^ y2)) == 0;
}

/* model_timestamp_parse(), the common form (milliseconds, 24 bytes) inline. */
static inline __attribute__((always_inline)) bool parse_ts(const char *s, size_t len, int64_t *ms) {
  if (len == 24) return model_timestamp_parse_at(s, 24, true, ms);
  return model_timestamp_parse(s, len, ms);
}

/* check_ts, inline for a string without escapes that parses (whatever
 * fault another field has: parsing records none, and *cmd is unspecified
 * on a reject); anything else goes to check_ts_any, which decides from the
 * start (parsing is pure). */
static inline __attribute__((always_inline)) bool check_ts(check_t *c, const char *name,
                                                           const model_json_value_t *v, bool required,
                                                           bool nullable, int64_t *ms) {
  if (v->type == MODEL_JSON_STRING && !v->escaped && parse_ts(c->buf + v->start, v->len, ms))
    return true;
  return check_ts_any(c, name, v, required, nullable, ms);
}

/* An enum-valued string; returns the index or -1 (fault recorded). The
 * names are at least 4 bytes long; lens[] their lengths. */
static int check_enum(check_t *c, const char *name, const model_json_value_t *v,
                      const char *const *names, const uint8_t *lens, int n_names, const char *listed) {
  if (!want(c, name, v, MODEL_JSON_STRING, true, false)) return -1;
  if (!v->escaped) /* the common case: compared in place */
    for (int i = 0; i < n_names; i++)
      if (lens[i] == v->len && same_bytes(names[i], c->buf + v->start, v->len)) return i;
  char tmp[16];
  size_t n = unescape(c, v, tmp, sizeof tmp);
  if (n < sizeof tmp)
    for (int i = 0; i < n_names; i++)
      if (strncmp(names[i], tmp, n) == 0 && names[i][n] == '\0') return i;
  char shown[64];
  fault(c, MODEL_REJ_INVALID_VALUE, "%s: \"%s\" is not one of %s", name,
        show(tmp, n, sizeof tmp, shown), listed);
  return -1;
}

/* A length-limited free text (title, feedback) into out[max+1]. */
static bool check_text(check_t *c, const char *name, const model_json_value_t *v, bool required,
                       bool nullable, size_t min, size_t max, char *out, uint16_t *out_len) {
  if (!want(c, name, v, MODEL_JSON_STRING, required, nullable)) {
    out[0] = '\0';
    *out_len = 0;
    return false;
  }
  size_t n;
  const char *src = c->buf + v->start;
  if (!v->escaped && v->len <= 32 && max >= 32 && c->end - src >= 32) {
    /* A short plain text: one 32-byte copy, no call (bytes past n are
     * copied and then overwritten by the NUL or ignored). */
    memcpy(out, src, 32);
    n = v->len;
  } else {
    n = unescape(c, v, out, max);
  }
  if (n < min || n > max) {
    fault(c, MODEL_REJ_INVALID_VALUE, "%s: %zu bytes, expected %zu..%zu", name, n, min, max);
    return false;
  }
  out[n] = '\0';
  *out_len = (uint16_t)n;
  return true;
}

static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Range check and conversion of a JSON number literal (grammar already
 * checked) against 0..10000, exactly on the decimal value: 10000.000001 and
 * -0.000001 are out of range even where a double would round them in; -0 is
 * zero and is stored as +0.0. */
static bool points_value(const char *lit, size_t len, double *out) {
  const char *p = lit, *end = lit + len;
  bool neg = *p == '-';
  if (neg) p++;
  const char *int_start = p;
  while (p < end && *p >= '0' && *p <= '9') p++;
  const char *int_end = p, *frac_start = p, *frac_end = p;
  if (p < end && *p == '.') {
    frac_start = ++p;
    while (p < end && *p >= '0' && *p <= '9') p++;
    frac_end = p;
  }
  int64_t e = 0;
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    bool eneg = *p == '-';
    if (*p == '+' || *p == '-') p++;
    for (; p < end; p++)
      if (e < 1000000000) e = e * 10 + (*p - '0'); /* saturates far beyond any double */
    if (eneg) e = -e;
  }
  /* Significant digits D (int then frac, leading zeros dropped) and X with
   * value = 0.D * 10^X. */
  size_t n_int = (size_t)(int_end - int_start), n_frac = (size_t)(frac_end - frac_start);
  size_t total = n_int + n_frac, z = 0;
#define DIGIT(i) ((i) < n_int ? int_start[(i)] : frac_start[(i) - n_int])
  while (z < total && DIGIT(z) == '0') z++;
  if (z == total) {
    *out = 0.0; /* any zero, -0 included */
    return true;
  }
  if (neg) return false;
  int64_t x = (int64_t)(total - z) + e - (int64_t)n_frac;
  if (x > 5) return false;
  if (x == 5) { /* 10000 = 0.1 * 10^5: anything above 0.1000... is too big */
    if (DIGIT(z) != '1') return false;
    for (size_t i = z + 1; i < total; i++)
      if (DIGIT(i) != '0') return false;
  }
  /* In range. Exact fast path (Clinger): up to 15 significant digits and a
   * power of ten that is exact in a double give a correctly rounded result. */
  size_t last = total;
  while (last > z && DIGIT(last - 1) == '0') last--;
  size_t nd = last - z;
  int64_t e10 = x - (int64_t)nd; /* value = digits(z..last) * 10^e10 */
  if (nd <= 15 && e10 >= -22 && e10 <= 22) {
    uint64_t m = 0;
    for (size_t i = z; i < last; i++) m = m * 10 + (uint64_t)(DIGIT(i) - '0');
    *out = e10 >= 0 ? (double)m * pow10_exact[e10] : (double)m / pow10_exact[-e10];
    return true;
  }
  /* Rare: strtod on "DIGITSeEXP" (no decimal point, so no locale issue).
   * 780 digits decide the rounding of any double; a nonzero tail is kept as
   * one sticky digit. */
  char tmp[800];
  size_t o = 0, keep = nd < 780 ? nd : 780;
  for (size_t i = z; i < z + keep; i++) tmp[o++] = DIGIT(i);
  int64_t ex = e10 + (int64_t)(nd - keep);
  if (keep < nd) {
    tmp[o++] = '1';
    ex--;
  }
  snprintf(tmp + o, sizeof tmp - o, "e%lld", (long long)ex);
#undef DIGIT
  *out = strtod(tmp, NULL);
  return true;
}

static void check_points(check_t *c, const char *name, const model_json_value_t *v, bool *has,
                         double *points) {
  *has = false;
  *points = 0.0;
  if (!want(c, name, v, MODEL_JSON_NUMBER, false, true)) return;
  if (!may(c, MODEL_REJ_INVALID_VALUE)) return;
  if (!v->frac_exp && !v->negative && v->len <= 5) {
    /* The common case, a small integer literal: exact as it stands. */
    const char *lit = c->buf + v->start;
    unsigned n = 0;
    for (size_t i = 0; i < v->len; i++) n = n * 10 + (unsigned)(lit[i] - '0');
    if (n <= 10000) {
      *points = (double)n;
      *has = true;
      return;
    }
  }
  if (!points_value(c->buf + v->start, v->len, points)) {
    char shown[64];
    fault(c, MODEL_REJ_INVALID_VALUE, "%s: %s is out of range 0..10000", name,
          show(c->buf + v->start, v->len, 40, shown));
    return;
  }
  *has = true;
}

static void check_version(check_t *c, const model_json_value_t *v, uint64_t *version) {
  if (!want(c, "version", v, MODEL_JSON_NUMBER, true, false)) return;
  const char *lit = c->buf + v->start;
  if (v->len == 1 && lit[0] != '0') {
    /* The common case, one digit 1..9 (the scan has checked the grammar). */
    *version = (uint64_t)(lit[0] - '0');
    return;
  }
  char shown[64];
  if (v->frac_exp) {
    fault(c, MODEL_REJ_INVALID_VERSION, "version: %s is not an integer",
          show(lit, v->len, 40, shown));
    return;
  }
  uint64_t n = 0;
  bool ok = !v->negative && v->len <= 16;
  for (size_t i = 0; ok && i < v->len; i++) n = n * 10 + (uint64_t)(lit[i] - '0');
  if (!ok || n < 1 || n > MODEL_VERSION_MAX) {
    fault(c, MODEL_REJ_INVALID_VERSION, "version: %s is out of range 1..9007199254740991",
          show(lit, v->len, 40, shown));
    return;
  }
  *version = n;
}

static __attribute__((noinline)) void check_cmd_id_any(check_t *c, const model_json_value_t *v,
                                                      model_command_t *cmd) {
  if (!want(c, "id", v, MODEL_JSON_STRING, true, false)) return;
  size_t n;
  bool printable = false;
  if (!v->escaped) {
    /* The common case: copy and check in one walk over the text. */
    const unsigned char *src = (const unsigned char *)c->buf + v->start;
    n = v->len;
    if (n <= MODEL_CMD_ID_MAX) {
      unsigned bad = 0;
      size_t blocks = (n + 15) / 16;
      if ((size_t)((const unsigned char *)c->end - src) >= blocks * 16) {
        /* Whole 16-byte blocks (bytes past n are copied and ignored). */
        for (size_t b = 0; b < blocks; b++) {
          size_t left = n - b * 16;
          unsigned want = left >= 16 ? 0xFFFFu : (1u << left) - 1;
          bad |= (model_json_printable_mask16(src + b * 16) & want) ^ want;
          memcpy(cmd->id + b * 16, src + b * 16, 16);
        }
      } else {
        for (size_t i = 0; i < n; i++) {
          bad |= (unsigned)(src[i] - 0x21u) > 0x7Eu - 0x21u;
          cmd->id[i] = (char)src[i];
        }
      }
      printable = !bad;
    }
  } else {
    n = unescape(c, v, cmd->id, MODEL_CMD_ID_MAX);
  }
  if (n < 1 || n > MODEL_CMD_ID_MAX) {
    fault(c, MODEL_REJ_INVALID_VALUE, "id: %zu bytes, expected 1..128", n);
    return;
  }
  for (size_t i = 0; !printable && i < n; i++) {
    unsigned char b = (unsigned char)cmd->id[i];
    if (b < 0x21 || b > 0x7E) {
      fault(c, MODEL_REJ_INVALID_VALUE, "id: byte 0x%02x at %zu is not printable ASCII 0x21..0x7e",
            b, i);
      return;
    }
  }
  cmd->id[n] = '\0';
  cmd->id_len = (uint8_t)n;
}

/* check_cmd_id, inline for the common id (short_id, printable bytes);
 * anything else goes to check_cmd_id_any. */
static inline __attribute__((always_inline)) void check_cmd_id(check_t *c, const model_json_value_t *v,
                                                               model_command_t *cmd) {
  if (!short_id(c, v, true, cmd->id, &cmd->id_len)) check_cmd_id_any(c, v, cmd);
}


/* The index of the type named s[0..n), or -1: the length picks the name
 * (the two of 18 bytes differ in their first byte), one compare decides. */
static inline int type_index(const char *s, size_t n) {
  int i;
  switch (n) {
  case 19: i = MODEL_CMD_ASSIGNMENT_UPSERTED; break;
  case 18: i = s[0] == 'a' ? MODEL_CMD_ASSIGNMENT_DELETED : MODEL_CMD_SUBMISSION_UPDATED; break;
  case 13: i = MODEL_CMD_GRADE_UPDATED; break;
  case 15: i = MODEL_CMD_ROSTER_ASSIGNED; break;
  case 17: i = MODEL_CMD_ROSTER_UNASSIGNED; break;
  default: return -1;
  }
  return same_bytes_13_24(type_names[i], s, n) ? i : -1;
}

/* -1: type absent, not a string or unknown (fault recorded). */
static int check_type(check_t *c, const model_json_value_t *v) {
  if (!want(c, "type", v, MODEL_JSON_STRING, true, false)) return -1;
  if (!v->escaped) {
    int i = type_index(c->buf + v->start, v->len);
    if (i >= 0) return i;
  }
  char tmp[24];
  size_t n = unescape(c, v, tmp, sizeof tmp);
  if (n < sizeof tmp) {
    int i = type_index(tmp, n);
    if (i >= 0) return i;
  }
  char shown[64];
  fault(c, MODEL_REJ_UNKNOWN_TYPE, "type: unknown type \"%s\"", show(tmp, n, sizeof tmp, shown));
  return -1;
}

static void check_data(check_t *c, model_cmd_type_t t, const model_json_value_t *d,
                       model_command_t *cmd) {
  switch (t) {
  case MODEL_CMD_ASSIGNMENT_UPSERTED: {
    __typeof__(cmd->data.assignment) *a = &cmd->data.assignment;
    check_id(c, "data.class", &d[D_CLASS], true, a->class_id, &a->class_len);
    check_text(c, "data.title", &d[D_TITLE], true, false, 1, MODEL_TITLE_MAX, a->title, &a->title_len);
    int st = check_enum(c, "data.status", &d[D_STATUS], assignment_status_names, model_assignment_status_len, 3,
                        "draft, published, closed");
    a->status = st < 0 ? MODEL_ASSIGNMENT_DRAFT : (model_assignment_status_t)st;
    a->has_due_at = check_ts(c, "data.dueAt", &d[D_DUE_AT], false, true, &a->due_at_ms);
    if (!a->has_due_at) a->due_at_ms = 0;
    check_points(c, "data.points", &d[D_POINTS], &a->has_points, &a->points);
    break;
  }
  case MODEL_CMD_SUBMISSION_UPDATED: {
    __typeof__(cmd->data.submission) *s = &cmd->data.submission;
    int st = check_enum(c, "data.status", &d[D_STATUS], submission_status_names, model_submission_status_len, 4,
                        "working, submitted, returned, reassigned");
    s->status = st < 0 ? MODEL_SUBMISSION_WORKING : (model_submission_status_t)st;
    s->has_submitted_at =
        check_ts(c, "data.submittedAt", &d[D_SUBMITTED_AT], false, true, &s->submitted_at_ms);
    if (!s->has_submitted_at) s->submitted_at_ms = 0;
    s->has_returned_at =
        check_ts(c, "data.returnedAt", &d[D_RETURNED_AT], false, true, &s->returned_at_ms);
    if (!s->has_returned_at) s->returned_at_ms = 0;
    break;
  }
  case MODEL_CMD_GRADE_UPDATED: {
    __typeof__(cmd->data.grade) *g = &cmd->data.grade;
    check_points(c, "data.points", &d[D_POINTS], &g->has_points, &g->points);
    g->has_feedback = check_text(c, "data.feedback", &d[D_FEEDBACK], false, true, 0,
                                 MODEL_FEEDBACK_MAX, g->feedback, &g->feedback_len);
    break;
  }
  default: break;
  }
}

/* The zeroing in model_command_decode() relies on this layout. */
_Static_assert(offsetof(model_command_t, data.grade.feedback) <=
                   offsetof(model_command_t, data.assignment.title) &&
               offsetof(model_command_t, data.assignment.class_id) <=
                   offsetof(model_command_t, data.assignment.title) &&
               offsetof(model_command_t, data.submission.returned_at_ms) + sizeof(int64_t) <=
                   offsetof(model_command_t, data.assignment.title),
               "data variants' flags, lengths and first string bytes precede the title");

bool model_command_decode(const char *buf, size_t len, size_t max_bytes, model_command_t *cmd,
                          model_reject_t *rej) {
  model_reject_t local;
  if (!rej) rej = &local;
  rej->code = MODEL_OK;
  rej->detail[0] = '\0';

  if (len > max_bytes) {
    rej->code = MODEL_REJ_TOO_LARGE;
    snprintf(rej->detail, sizeof rej->detail, "message is %zu bytes, limit %zu", len, max_bytes);
    return false;
  }

  model_json_value_t rv[F_ROOT_COUNT], dv[D_COUNT];
  model_json_result_t res;
  if (!model_json_scan(buf, len, &schema, rv, dv, &res)) {
    static const model_reject_code_t map[] = {
        [MODEL_JSON_ERR_UTF8] = MODEL_REJ_INVALID_UTF8,
        [MODEL_JSON_ERR_SYNTAX] = MODEL_REJ_INVALID_JSON,
        [MODEL_JSON_ERR_DUPLICATE] = MODEL_REJ_DUPLICATE_KEY,
        [MODEL_JSON_ERR_NUL] = MODEL_REJ_INVALID_VALUE,
    };
    rej->code = map[res.status];
    memcpy(rej->detail, res.detail, sizeof res.detail);
    return false;
  }
  if (res.top != MODEL_JSON_OBJECT) {
    rej->code = MODEL_REJ_NOT_OBJECT;
    snprintf(rej->detail, sizeof rej->detail, "$: expected an object at the top level, got %s",
             article_type(res.top));
    return false;
  }

  check_t c = {buf, buf + len, len >= 16 ? len - 15 : 0, MODEL_OK, rej};
  check_cmd_id(&c, &rv[F_ID], cmd);
  int t = check_type(&c, &rv[F_TYPE]);
  check_id(&c, "tenant", &rv[F_TENANT], true, cmd->tenant, &cmd->tenant_len);
  check_id(&c, "assignment", &rv[F_ASSIGNMENT], true, cmd->assignment, &cmd->assignment_len);
  if (t >= 0 && model_cmd_type_has_student((model_cmd_type_t)t)) {
    check_id(&c, "student", &rv[F_STUDENT], true, cmd->student, &cmd->student_len);
  } else {
    cmd->student[0] = '\0';
    cmd->student_len = 0;
  }
  check_version(&c, &rv[F_VERSION], &cmd->version);
  check_ts(&c, "ts", &rv[F_TS], true, false, &cmd->ts_ms);
  if (t >= 0 && type_has_data((model_cmd_type_t)t)) {
    if (want(&c, "data", &rv[F_DATA], MODEL_JSON_OBJECT, true, false))
      check_data(&c, (model_cmd_type_t)t, dv, cmd);
  } else {
    /* Zero every has_ flag, length and first string byte of all three data
     * variants: they all live in this prefix of the union. */
    model_zero(&cmd->data, offsetof(model_command_t, data.assignment.title) - offsetof(model_command_t, data) + 1);
  }
  if (c.best != MODEL_OK) return false;
  cmd->type = (model_cmd_type_t)t;
  return true;
}
