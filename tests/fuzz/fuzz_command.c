/* libFuzzer target for model_command_decode().
 *
 * Each input is decoded twice, under a large limit and a small one, and
 * checked against:
 * - invariants of the result: a success reports MODEL_OK and every field is
 *   within the spec's limits; a rejection has a known code and a one-line
 *   printable-ASCII detail; the small limit only ever adds too_large;
 * - an independent, deliberately naive reference for the global rules
 *   (recursive descent, malloc'ed decoded keys compared pairwise): it must
 *   agree on invalid_utf8 / invalid_json / duplicate_key / U+0000 /
 *   not_object, and on "a JSON object free of those" for everything else.
 * Any disagreement aborts, which libFuzzer reports as a crash. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "json/json_scan.h"
#include "ref_utf8.h"
#include "timestamp.h"

#define SMALL_LIMIT 128
#define LARGE_LIMIT (1u << 20)

#define REQUIRE(cond)                                                                               \
  do {                                                                                              \
    if (!(cond)) {                                                                                  \
      fprintf(stderr, "fuzz_command: invariant failed: %s (line %d)\n", #cond, __LINE__);          \
      abort();                                                                                      \
    }                                                                                               \
  } while (0)

/* ------------------------------------------------------ the reference */

enum { R_OK_OBJECT, R_NOT_OBJECT, R_UTF8, R_SYNTAX, R_DUP, R_NUL };

typedef struct {
  const uint8_t *p, *end;
  int err; /* 0, R_UTF8 or R_SYNTAX: the first hard error, stops everything */
  bool dup, nul;
  int depth;
} ref_t;


static void ref_ws(ref_t *r) {
  while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) r->p++;
}

static int ref_hex(ref_t *r) {
  if (r->end - r->p < 4) return -1;
  int v = 0;
  for (int i = 0; i < 4; i++) {
    int c = r->p[i], d;
    if (c >= '0' && c <= '9') d = c - '0';
    else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
    else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
    else return -1;
    v = v * 16 + d;
  }
  r->p += 4;
  return v;
}

/* Parses a string at r->p (a quote); *out gets a malloc'ed decoded copy. */
static bool ref_string(ref_t *r, uint8_t **out, size_t *outlen) {
  size_t cap = (size_t)(r->end - r->p) * 2 + 4, n = 0;
  uint8_t *o = malloc(cap);
  r->p++;
  for (;;) {
    if (r->p >= r->end) goto syntax;
    uint8_t c = *r->p++;
    if (c == '"') break;
    if (c < 0x20) goto syntax;
    if (c != '\\') {
      o[n++] = c;
      continue;
    }
    if (r->p >= r->end) goto syntax;
    c = *r->p++;
    uint32_t cp;
    switch (c) {
    case '"': case '\\': case '/': o[n++] = c; continue;
    case 'b': o[n++] = 8; continue;
    case 'f': o[n++] = 12; continue;
    case 'n': o[n++] = 10; continue;
    case 'r': o[n++] = 13; continue;
    case 't': o[n++] = 9; continue;
    case 'u': {
      int h = ref_hex(r);
      if (h < 0) goto syntax;
      cp = (uint32_t)h;
      if (cp >= 0xDC00 && cp <= 0xDFFF) goto utf8;
      if (cp >= 0xD800 && cp <= 0xDBFF) {
        if (r->end - r->p < 2 || r->p[0] != '\\' || r->p[1] != 'u') goto utf8;
        r->p += 2;
        int l = ref_hex(r);
        if (l < 0xDC00 || l > 0xDFFF) goto utf8; /* also a malformed \u: the surrogate comes first */
        cp = 0x10000 + ((cp - 0xD800) << 10) + ((uint32_t)l - 0xDC00);
      }
      if (cp == 0) r->nul = true;
      if (cp < 0x80) {
        o[n++] = (uint8_t)cp;
      } else if (cp < 0x800) {
        o[n++] = (uint8_t)(0xC0 | cp >> 6), o[n++] = (uint8_t)(0x80 | (cp & 63));
      } else if (cp < 0x10000) {
        o[n++] = (uint8_t)(0xE0 | cp >> 12), o[n++] = (uint8_t)(0x80 | (cp >> 6 & 63));
        o[n++] = (uint8_t)(0x80 | (cp & 63));
      } else {
        o[n++] = (uint8_t)(0xF0 | cp >> 18), o[n++] = (uint8_t)(0x80 | (cp >> 12 & 63));
        o[n++] = (uint8_t)(0x80 | (cp >> 6 & 63)), o[n++] = (uint8_t)(0x80 | (cp & 63));
      }
      continue;
    }
    default: goto syntax;
    }
  }
  *out = o;
  *outlen = n;
  return true;
syntax:
  r->err = R_SYNTAX;
  free(o);
  return false;
utf8:
  r->err = R_UTF8;
  free(o);
  return false;
}

static bool ref_value(ref_t *r);

static bool ref_number(ref_t *r) {
  if (r->p < r->end && *r->p == '-') r->p++;
  if (r->p >= r->end) goto bad;
  if (*r->p == '0') {
    r->p++;
  } else if (*r->p >= '1' && *r->p <= '9') {
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
  } else {
    goto bad;
  }
  if (r->p < r->end && *r->p == '.') {
    r->p++;
    if (r->p >= r->end || *r->p < '0' || *r->p > '9') goto bad;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
  }
  if (r->p < r->end && (*r->p == 'e' || *r->p == 'E')) {
    r->p++;
    if (r->p < r->end && (*r->p == '+' || *r->p == '-')) r->p++;
    if (r->p >= r->end || *r->p < '0' || *r->p > '9') goto bad;
    while (r->p < r->end && *r->p >= '0' && *r->p <= '9') r->p++;
  }
  return true;
bad:
  r->err = R_SYNTAX;
  return false;
}

static bool ref_object(ref_t *r) {
  r->p++;
  uint8_t **keys = NULL;
  size_t *lens = NULL, n = 0;
  bool ok = false;
  ref_ws(r);
  if (r->p < r->end && *r->p == '}') {
    r->p++;
    return true;
  }
  for (;;) {
    ref_ws(r);
    if (r->p >= r->end || *r->p != '"') {
      r->err = R_SYNTAX;
      goto out;
    }
    uint8_t *k;
    size_t kl;
    if (!ref_string(r, &k, &kl)) goto out;
    for (size_t i = 0; i < n; i++)
      if (lens[i] == kl && memcmp(keys[i], k, kl) == 0) r->dup = true;
    keys = realloc(keys, (n + 1) * sizeof *keys);
    lens = realloc(lens, (n + 1) * sizeof *lens);
    keys[n] = k;
    lens[n++] = kl;
    ref_ws(r);
    if (r->p >= r->end || *r->p != ':') {
      r->err = R_SYNTAX;
      goto out;
    }
    r->p++;
    if (!ref_value(r)) goto out;
    ref_ws(r);
    if (r->p < r->end && *r->p == ',') {
      r->p++;
      continue;
    }
    if (r->p < r->end && *r->p == '}') {
      r->p++;
      ok = true;
      goto out;
    }
    r->err = R_SYNTAX;
    goto out;
  }
out:
  for (size_t i = 0; i < n; i++) free(keys[i]);
  free(keys);
  free(lens);
  return ok;
}

static bool ref_value(ref_t *r) {
  ref_ws(r);
  if (r->p >= r->end) {
    r->err = R_SYNTAX;
    return false;
  }
  switch (*r->p) {
  case '{':
  case '[': {
    if (++r->depth > MODEL_JSON_MAX_DEPTH) {
      r->err = R_SYNTAX;
      return false;
    }
    bool ok;
    if (*r->p == '{') {
      ok = ref_object(r);
    } else {
      r->p++;
      ref_ws(r);
      if (r->p < r->end && *r->p == ']') {
        r->p++;
        ok = true;
      } else {
        for (;;) {
          if (!(ok = ref_value(r))) break;
          ref_ws(r);
          if (r->p < r->end && *r->p == ',') {
            r->p++;
            continue;
          }
          if (r->p < r->end && *r->p == ']') {
            r->p++;
            break;
          }
          r->err = R_SYNTAX;
          ok = false;
          break;
        }
      }
    }
    r->depth--;
    return ok;
  }
  case '"': {
    uint8_t *s;
    size_t n;
    if (!ref_string(r, &s, &n)) return false;
    free(s);
    return true;
  }
  case 't':
  case 'f':
  case 'n': {
    const char *lit = *r->p == 't' ? "true" : *r->p == 'f' ? "false" : "null";
    size_t n = strlen(lit);
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, lit, n) != 0) {
      r->err = R_SYNTAX;
      return false;
    }
    r->p += n;
    return true;
  }
  default:
    return ref_number(r);
  }
}

static int reference(const uint8_t *data, size_t size) {
  if (ref_utf8(data, size) != size) return R_UTF8;
  ref_t r = {data, data + size, 0, false, false, 0};
  ref_ws(&r);
  bool is_object = r.p < r.end && *r.p == '{';
  if (ref_value(&r)) {
    ref_ws(&r);
    if (r.p != r.end) r.err = R_SYNTAX;
  }
  if (r.err) return r.err;
  if (r.dup) return R_DUP;
  if (r.nul) return R_NUL;
  return is_object ? R_OK_OBJECT : R_NOT_OBJECT;
}

/* ------------------------------------------------------- invariants */

static bool is_id(const char *s, size_t n) {
  if (n < 1 || n > MODEL_ID_MAX || strlen(s) != n) return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
          c == '-'))
      return false;
  }
  return true;
}

static void check_ms(int64_t ms) {
  char buf[MODEL_TIMESTAMP_LEN + 1];
  REQUIRE(ms >= -62135596800000LL && ms <= 253402300799999LL);
  model_timestamp_format(ms, buf);
  int64_t back;
  REQUIRE(model_timestamp_parse(buf, MODEL_TIMESTAMP_LEN, &back) && back == ms);
}

static void check_points(bool has, double p) {
  if (!has) return;
  REQUIRE(!isnan(p) && p >= 0.0 && p <= MODEL_POINTS_MAX && !signbit(p));
}

static void check_success(const model_command_t *c) {
  REQUIRE((unsigned)c->type < MODEL_CMD_TYPE_COUNT);
  REQUIRE(c->id_len >= 1 && c->id_len <= MODEL_CMD_ID_MAX && strlen(c->id) == c->id_len);
  for (size_t i = 0; i < c->id_len; i++) REQUIRE(c->id[i] >= 0x21 && c->id[i] <= 0x7E);
  REQUIRE(is_id(c->tenant, c->tenant_len));
  REQUIRE(is_id(c->assignment, c->assignment_len));
  if (model_cmd_type_has_student(c->type))
    REQUIRE(is_id(c->student, c->student_len));
  else
    REQUIRE(c->student_len == 0 && c->student[0] == '\0');
  REQUIRE(c->version >= 1 && c->version <= MODEL_VERSION_MAX);
  check_ms(c->ts_ms);
  switch (c->type) {
  case MODEL_CMD_ASSIGNMENT_UPSERTED: {
    const __typeof__(c->data.assignment) *a = &c->data.assignment;
    REQUIRE(is_id(a->class_id, a->class_len));
    REQUIRE(a->title_len >= 1 && a->title_len <= MODEL_TITLE_MAX && strlen(a->title) == a->title_len);
    REQUIRE(model_utf8_check(a->title, a->title_len) == a->title_len);
    REQUIRE((unsigned)a->status <= MODEL_ASSIGNMENT_CLOSED);
    if (a->has_due_at) check_ms(a->due_at_ms);
    check_points(a->has_points, a->points);
    break;
  }
  case MODEL_CMD_SUBMISSION_UPDATED: {
    const __typeof__(c->data.submission) *s = &c->data.submission;
    REQUIRE((unsigned)s->status <= MODEL_SUBMISSION_REASSIGNED);
    if (s->has_submitted_at) check_ms(s->submitted_at_ms);
    if (s->has_returned_at) check_ms(s->returned_at_ms);
    break;
  }
  case MODEL_CMD_GRADE_UPDATED: {
    const __typeof__(c->data.grade) *g = &c->data.grade;
    check_points(g->has_points, g->points);
    if (g->has_feedback) {
      REQUIRE(g->feedback_len <= MODEL_FEEDBACK_MAX && strlen(g->feedback) == g->feedback_len);
      REQUIRE(model_utf8_check(g->feedback, g->feedback_len) == g->feedback_len);
    } else {
      REQUIRE(g->feedback_len == 0 && g->feedback[0] == '\0');
    }
    break;
  }
  default:
    REQUIRE(!c->data.grade.has_points && !c->data.grade.has_feedback);
    REQUIRE(!c->data.assignment.has_points && !c->data.assignment.has_due_at);
    REQUIRE(c->data.assignment.title[0] == '\0' && c->data.grade.feedback[0] == '\0');
    break;
  }
}

static void check_reject(const model_reject_t *r) {
  REQUIRE(r->code > MODEL_OK && r->code < MODEL_REJ_COUNT);
  size_t n = strnlen(r->detail, sizeof r->detail);
  REQUIRE(n > 0 && n < sizeof r->detail);
  for (size_t i = 0; i < n; i++) REQUIRE(r->detail[i] >= 0x20 && r->detail[i] <= 0x7E);
}

/* The U+0000 rule names a JSON path; field faults name the field. */
static bool nul_detail(const char *d) { return d[0] == '$' || strncmp(d, "a key in ", 9) == 0; }

static model_command_t cmd_large, cmd_small;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *buf = (const char *)data;
  model_reject_t rl, rs;
  bool ok = model_command_decode(buf, size, LARGE_LIMIT, &cmd_large, &rl);
  if (ok) {
    REQUIRE(rl.code == MODEL_OK);
    check_success(&cmd_large);
  } else {
    check_reject(&rl);
  }

  bool ok_small = model_command_decode(buf, size, SMALL_LIMIT, &cmd_small, &rs);
  if (size > SMALL_LIMIT) {
    REQUIRE(!ok_small && rs.code == MODEL_REJ_TOO_LARGE);
  } else {
    REQUIRE(ok_small == ok && rs.code == rl.code && strcmp(rs.detail, rl.detail) == 0);
    if (ok) REQUIRE(memcmp(cmd_small.id, cmd_large.id, cmd_large.id_len + 1u) == 0);
  }

  if (size <= LARGE_LIMIT) {
    int want = reference(data, size);
    switch (want) {
    case R_UTF8: REQUIRE(rl.code == MODEL_REJ_INVALID_UTF8); break;
    case R_SYNTAX: REQUIRE(rl.code == MODEL_REJ_INVALID_JSON); break;
    case R_DUP: REQUIRE(rl.code == MODEL_REJ_DUPLICATE_KEY); break;
    case R_NUL: REQUIRE(rl.code == MODEL_REJ_INVALID_VALUE && nul_detail(rl.detail)); break;
    case R_NOT_OBJECT: REQUIRE(rl.code == MODEL_REJ_NOT_OBJECT); break;
    default: /* a clean object: only the field rules may reject it */
      REQUIRE(rl.code == MODEL_OK || rl.code >= MODEL_REJ_MISSING_FIELD ||
              (rl.code == MODEL_REJ_INVALID_VALUE && !nul_detail(rl.detail)));
    }
  }
  return 0;
}
