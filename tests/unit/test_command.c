/* Command decoding and validation: every rule and the order of rejection codes.
 *
 * Two tables: `cases` builds commands field by field from per-type defaults
 * (single quotes in the table stand for double quotes, to keep the JSON
 * readable), `raw` holds whole messages byte for byte (syntax, UTF-8, order of
 * the global rules). Every rejection also checks that the detail is one
 * printable-ASCII line naming what the test expects. Successful decodes of
 * each type are checked field by field in separate tests. */
#include <check.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command.h"
#include "json/json_scan.h"
#include "../fuzz/ref_utf8.h"
#include "../fuzz/scan_diff.h"

#ifdef __clang__
#pragma clang diagnostic ignored "-Winitializer-overrides"
#else
#pragma GCC diagnostic ignored "-Woverride-init"
#endif

#define MAXB (1 << 20)
#define OK MODEL_OK

/* Every input of these tests also goes through every kernel of the
 * scanner, which must agree with each other and with the scanner before the
 * kernels (scan_diff.h); then it is decoded as the worker does. */
static bool decode_checked(const char *json, size_t len, size_t max, model_command_t *out,
                           model_reject_t *rej) {
  const char *diff = scan_diff((const uint8_t *)json, len, max);
  ck_assert_msg(diff == NULL, "kernels differ: %s: %.300s", diff ? diff : "", json);
  return model_command_decode(json, len, max, out, rej);
}

/* ------------------------------------------------------------ builder */

/* NULL = member absent. Raw JSON, ' for ". `data` raw replaces the data
 * object built from the d_ members; NO_DATA omits it. */
typedef struct {
  const char *id, *type, *tenant, *assignment, *student, *version, *ts, *data, *extra;
  const char *d_class, *d_title, *d_status, *d_dueAt, *d_points, *d_submittedAt, *d_returnedAt,
      *d_feedback, *d_extra;
} fields_t;

#define NO_DATA "\x01"
#define ENV_DEFAULTS                                                                       \
  .id = "'cmd-1'", .tenant = "'t1'", .assignment = "'a1'", .version = "5",               \
  .ts = "'2026-09-01T08:00:00Z'"
#define UPS(...)                                                                           \
  {ENV_DEFAULTS, .type = "'assignment.upserted'", .d_class = "'c1'", .d_title = "'Essay'", \
   .d_status = "'published'", __VA_ARGS__}
#define DEL(...) {ENV_DEFAULTS, .type = "'assignment.deleted'", __VA_ARGS__}
#define SUB(...)                                                                           \
  {ENV_DEFAULTS, .type = "'submission.updated'", .student = "'s1'",                        \
   .d_status = "'submitted'", __VA_ARGS__}
#define GRD(...)                                                                           \
  {ENV_DEFAULTS, .type = "'grade.updated'", .student = "'s1'", .d_points = "90", __VA_ARGS__}
#define RAS(...) {ENV_DEFAULTS, .type = "'roster.assigned'", .student = "'s1'", __VA_ARGS__}
#define RUN(...) {ENV_DEFAULTS, .type = "'roster.unassigned'", .student = "'s1'", __VA_ARGS__}

static char *cat_member(char *o, bool *first, const char *key, const char *raw) {
  if (!raw) return o;
  o += sprintf(o, "%s'%s':%s", *first ? "" : ",", key, raw);
  *first = false;
  return o;
}

static void squote(char *s) {
  for (; *s; s++)
    if (*s == '\'') *s = '"';
}

/* Builds into a static buffer (big enough for the longest test values). */
static const char *build(const fields_t *f) {
  static char out[1 << 16];
  char data[1 << 15];
  char *o = data;
  bool first = true;
  o += sprintf(o, "{");
  o = cat_member(o, &first, "class", f->d_class);
  o = cat_member(o, &first, "title", f->d_title);
  o = cat_member(o, &first, "status", f->d_status);
  o = cat_member(o, &first, "dueAt", f->d_dueAt);
  o = cat_member(o, &first, "points", f->d_points);
  o = cat_member(o, &first, "submittedAt", f->d_submittedAt);
  o = cat_member(o, &first, "returnedAt", f->d_returnedAt);
  o = cat_member(o, &first, "feedback", f->d_feedback);
  if (f->d_extra) o += sprintf(o, "%s%s", first ? "" : ",", f->d_extra), first = false;
  sprintf(o, "}");
  const char *d = f->data;
  if (!d) d = first ? NULL : data;
  if (d && strcmp(d, NO_DATA) == 0) d = NULL;

  o = out;
  first = true;
  o += sprintf(o, "{");
  o = cat_member(o, &first, "id", f->id);
  o = cat_member(o, &first, "type", f->type);
  o = cat_member(o, &first, "tenant", f->tenant);
  o = cat_member(o, &first, "assignment", f->assignment);
  o = cat_member(o, &first, "student", f->student);
  o = cat_member(o, &first, "version", f->version);
  o = cat_member(o, &first, "ts", f->ts);
  o = cat_member(o, &first, "data", d);
  if (f->extra) o += sprintf(o, "%s%s", first ? "" : ",", f->extra), first = false;
  sprintf(o, "}");
  squote(out);
  return out;
}

static void check_detail(const model_reject_t *r, const char *want, const char *ctx) {
  size_t n = strlen(r->detail);
  ck_assert_msg(n > 0, "%s: empty detail", ctx);
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(r->detail[i] >= 0x20 && r->detail[i] <= 0x7E, "%s: detail byte 0x%02x not printable",
                  ctx, (unsigned char)r->detail[i]);
  if (want)
    ck_assert_msg(strstr(r->detail, want), "%s: detail \"%s\" lacks \"%s\"", ctx, r->detail, want);
}

static model_command_t cmd; /* 6 KiB: static, as the worker reuses one */

static void expect(const char *name, const char *json, size_t len, size_t max,
                   model_reject_code_t code, const char *detail) {
  model_reject_t r;
  memset(&r, 0xAA, sizeof r);
  bool ok = decode_checked(json, len, max, &cmd, &r);
  if (code == OK) {
    ck_assert_msg(ok, "%s: rejected %s (%s): %s", name, model_reject_code_name(r.code), r.detail, json);
    ck_assert_int_eq(r.code, MODEL_OK);
  } else {
    ck_assert_msg(!ok, "%s: accepted, expected %s: %s", name, model_reject_code_name(code), json);
    ck_assert_msg(r.code == code, "%s: got %s (%s), expected %s: %.300s", name,
                  model_reject_code_name(r.code), r.detail, model_reject_code_name(code), json);
    check_detail(&r, detail, name);
  }
  /* rej may be NULL; the verdict must not change. */
  ck_assert_int_eq(decode_checked(json, len, max, &cmd, NULL), ok);
}

/* -------------------------------------------------------- field cases */

typedef struct {
  const char *name;
  fields_t f;
  model_reject_code_t code;
  const char *detail; /* substring the detail must contain, or NULL */
} case_t;

#define ID64 "'0123456789012345678901234567890123456789012345678901234567890123'"
#define ID65 "'0123456789012345678901234567890123456789012345678901234567890123x'"
#define CID128                                                                              \
  "'0123456789012345678901234567890123456789012345678901234567890123"                       \
  "0123456789012345678901234567890123456789012345678901234567890123'"
#define CID129                                                                              \
  "'0123456789012345678901234567890123456789012345678901234567890123"                       \
  "0123456789012345678901234567890123456789012345678901234567890123~'"

static const case_t cases[] = {
    /* the six types, minimal and full */
    {"upserted", UPS(), OK, NULL},
    {"upserted full", UPS(.d_dueAt = "'2026-09-10T23:59:00Z'", .d_points = "100"), OK, NULL},
    {"deleted", DEL(), OK, NULL},
    {"submission", SUB(), OK, NULL},
    {"grade", GRD(), OK, NULL},
    {"grade no fields", GRD(.d_points = NULL, .data = "{}"), OK, NULL},
    {"roster.assigned", RAS(), OK, NULL},
    {"roster.unassigned", RUN(), OK, NULL},

    /* missing_field: envelope */
    {"missing id", UPS(.id = NULL), MODEL_REJ_MISSING_FIELD, "id: "},
    {"missing type", UPS(.type = NULL), MODEL_REJ_MISSING_FIELD, "type: "},
    {"missing tenant", UPS(.tenant = NULL), MODEL_REJ_MISSING_FIELD, "tenant: "},
    {"missing assignment", UPS(.assignment = NULL), MODEL_REJ_MISSING_FIELD, "assignment: "},
    {"missing version", UPS(.version = NULL), MODEL_REJ_MISSING_FIELD, "version: "},
    {"missing ts", UPS(.ts = NULL), MODEL_REJ_MISSING_FIELD, "ts: "},
    {"missing student submission", SUB(.student = NULL), MODEL_REJ_MISSING_FIELD, "student: "},
    {"missing student grade", GRD(.student = NULL), MODEL_REJ_MISSING_FIELD, "student: "},
    {"missing student roster.assigned", RAS(.student = NULL), MODEL_REJ_MISSING_FIELD, "student: "},
    {"missing student roster.unassigned", RUN(.student = NULL), MODEL_REJ_MISSING_FIELD, "student: "},
    {"student not needed upserted", UPS(.student = NULL), OK, NULL},
    {"student not needed deleted", DEL(.student = NULL), OK, NULL},
    {"missing data upserted", UPS(.data = NO_DATA), MODEL_REJ_MISSING_FIELD, "data: "},
    {"missing data submission", SUB(.data = NO_DATA), MODEL_REJ_MISSING_FIELD, "data: "},
    {"missing data grade", GRD(.data = NO_DATA), MODEL_REJ_MISSING_FIELD, "data: "},
    {"data optional deleted", DEL(.data = NO_DATA), OK, NULL},
    {"data optional roster", RAS(.data = NO_DATA), OK, NULL},
    /* missing_field: data */
    {"missing class", UPS(.d_class = NULL), MODEL_REJ_MISSING_FIELD, "data.class: "},
    {"missing title", UPS(.d_title = NULL), MODEL_REJ_MISSING_FIELD, "data.title: "},
    {"missing status upserted", UPS(.d_status = NULL), MODEL_REJ_MISSING_FIELD, "data.status: "},
    {"missing status submission", SUB(.d_status = NULL, .data = "{}"), MODEL_REJ_MISSING_FIELD, "data.status: "},
    {"dueAt and points optional", UPS(.d_dueAt = NULL, .d_points = NULL), OK, NULL},
    {"submittedAt returnedAt optional", SUB(), OK, NULL},
    /* type-dependent checks only run for a known type */
    {"unknown type, no student no data", UPS(.type = "'foo'", .data = NO_DATA),
     MODEL_REJ_UNKNOWN_TYPE, "type: unknown type \"foo\""},
    {"type missing, no data", SUB(.type = NULL, .student = NULL, .data = NO_DATA),
     MODEL_REJ_MISSING_FIELD, "type: "},
    {"type number, no data", SUB(.type = "7", .data = NO_DATA), MODEL_REJ_WRONG_TYPE, "type: "},

    /* wrong_type */
    {"id number", UPS(.id = "17"), MODEL_REJ_WRONG_TYPE, "id: expected a string, got a number"},
    {"id null", UPS(.id = "null"), MODEL_REJ_WRONG_TYPE, "id: "},
    {"type null", UPS(.type = "null"), MODEL_REJ_WRONG_TYPE, "type: "},
    {"tenant null", UPS(.tenant = "null"), MODEL_REJ_WRONG_TYPE, "tenant: expected a string, got null"},
    {"tenant array", UPS(.tenant = "['t1']"), MODEL_REJ_WRONG_TYPE, "tenant: "},
    {"assignment object", UPS(.assignment = "{}"), MODEL_REJ_WRONG_TYPE, "assignment: "},
    {"student number", SUB(.student = "1"), MODEL_REJ_WRONG_TYPE, "student: "},
    {"student null", GRD(.student = "null"), MODEL_REJ_WRONG_TYPE, "student: "},
    {"student wrong type ignored for upserted", UPS(.student = "1"), OK, NULL},
    {"student wrong type ignored for deleted", DEL(.student = "{'a':[]}"), OK, NULL},
    {"version string", UPS(.version = "'5'"), MODEL_REJ_WRONG_TYPE, "version: expected a number, got a string"},
    {"version null", UPS(.version = "null"), MODEL_REJ_WRONG_TYPE, "version: "},
    {"version bool", UPS(.version = "true"), MODEL_REJ_WRONG_TYPE, "version: "},
    {"ts number", UPS(.ts = "1700000000"), MODEL_REJ_WRONG_TYPE, "ts: "},
    {"ts null", UPS(.ts = "null"), MODEL_REJ_WRONG_TYPE, "ts: "},
    {"data null", UPS(.data = "null"), MODEL_REJ_WRONG_TYPE, "data: expected an object, got null"},
    {"data array", SUB(.data = "[]"), MODEL_REJ_WRONG_TYPE, "data: "},
    {"data string", GRD(.data = "'x'"), MODEL_REJ_WRONG_TYPE, "data: "},
    {"data not object: fields unchecked", UPS(.data = "[{'class':1}]"), MODEL_REJ_WRONG_TYPE, "data: "},
    {"data ignored deleted", DEL(.data = "null"), OK, NULL},
    {"data ignored roster.assigned", RAS(.data = "'x'"), OK, NULL},
    {"data ignored roster.unassigned", RUN(.data = "{'status':5,'title':''}"), OK, NULL},
    {"class number", UPS(.d_class = "1"), MODEL_REJ_WRONG_TYPE, "data.class: "},
    {"class null", UPS(.d_class = "null"), MODEL_REJ_WRONG_TYPE, "data.class: "},
    {"title null", UPS(.d_title = "null"), MODEL_REJ_WRONG_TYPE, "data.title: "},
    {"title number", UPS(.d_title = "3"), MODEL_REJ_WRONG_TYPE, "data.title: "},
    {"status null", UPS(.d_status = "null"), MODEL_REJ_WRONG_TYPE, "data.status: "},
    {"submission status null", SUB(.d_status = "null"), MODEL_REJ_WRONG_TYPE, "data.status: "},
    {"dueAt number", UPS(.d_dueAt = "0"), MODEL_REJ_WRONG_TYPE, "data.dueAt: expected a string or null, got a number"},
    {"dueAt null", UPS(.d_dueAt = "null"), OK, NULL},
    {"points string", UPS(.d_points = "'5'"), MODEL_REJ_WRONG_TYPE, "data.points: "},
    {"points bool", GRD(.d_points = "false"), MODEL_REJ_WRONG_TYPE, "data.points: "},
    {"points null upserted", UPS(.d_points = "null"), OK, NULL},
    {"points null grade", GRD(.d_points = "null"), OK, NULL},
    {"submittedAt number", SUB(.d_submittedAt = "1"), MODEL_REJ_WRONG_TYPE, "data.submittedAt: "},
    {"returnedAt object", SUB(.d_returnedAt = "{}"), MODEL_REJ_WRONG_TYPE, "data.returnedAt: "},
    {"submittedAt returnedAt null", SUB(.d_submittedAt = "null", .d_returnedAt = "null"), OK, NULL},
    {"feedback number", GRD(.d_feedback = "1"), MODEL_REJ_WRONG_TYPE, "data.feedback: "},
    {"feedback null", GRD(.d_feedback = "null"), OK, NULL},
    {"fields of other types ignored", GRD(.d_status = "1", .d_title = "2", .d_class = "3",
                                          .d_dueAt = "4", .d_submittedAt = "5"),
     OK, NULL},

    /* invalid_id */
    {"tenant 64", UPS(.tenant = ID64), OK, NULL},
    {"tenant 65", UPS(.tenant = ID65), MODEL_REJ_INVALID_ID, "tenant: does not match ^[A-Za-z0-9_-]{1,64}$"},
    {"tenant empty", UPS(.tenant = "''"), MODEL_REJ_INVALID_ID, "tenant: "},
    {"tenant space", UPS(.tenant = "'a b'"), MODEL_REJ_INVALID_ID, "tenant: "},
    {"tenant dot", UPS(.tenant = "'a.b'"), MODEL_REJ_INVALID_ID, "tenant: "},
    {"tenant slash", UPS(.tenant = "'a/b'"), MODEL_REJ_INVALID_ID, "tenant: "},
    {"tenant non-ascii", UPS(.tenant = "'t\xc3\xa9'"), MODEL_REJ_INVALID_ID, "tenant: "},
    {"tenant all classes", UPS(.tenant = "'AZaz09_-'"), OK, NULL},
    {"tenant escaped letters", UPS(.tenant = "'\\u0074\\u0031'"), OK, NULL},
    {"tenant escaped newline", UPS(.tenant = "'t\\n'"), MODEL_REJ_INVALID_ID, "tenant: "},
    {"assignment 65", UPS(.assignment = ID65), MODEL_REJ_INVALID_ID, "assignment: "},
    {"assignment 64", UPS(.assignment = ID64), OK, NULL},
    {"student 65", SUB(.student = ID65), MODEL_REJ_INVALID_ID, "student: "},
    {"student 64", RAS(.student = ID64), OK, NULL},
    {"student bad ignored for upserted", UPS(.student = "'no way'"), OK, NULL},
    {"class 65", UPS(.d_class = ID65), MODEL_REJ_INVALID_ID, "data.class: "},
    {"class empty", UPS(.d_class = "''"), MODEL_REJ_INVALID_ID, "data.class: "},
    {"class 64", UPS(.d_class = ID64), OK, NULL},

    /* unknown_type */
    {"type foo", UPS(.type = "'foo'"), MODEL_REJ_UNKNOWN_TYPE, "type: "},
    {"type case", UPS(.type = "'Assignment.upserted'"), MODEL_REJ_UNKNOWN_TYPE, "type: "},
    {"type trailing space", UPS(.type = "'assignment.upserted '"), MODEL_REJ_UNKNOWN_TYPE, "type: "},
    {"type empty", UPS(.type = "''"), MODEL_REJ_UNKNOWN_TYPE, "type: "},
    {"type long", UPS(.type = "'assignment.upserted.assignment.upserted'"), MODEL_REJ_UNKNOWN_TYPE, "type: "},
    {"type non-ascii shown escaped", UPS(.type = "'\xc3\xa9'"), MODEL_REJ_UNKNOWN_TYPE, "\"\\xc3\\xa9\""},
    {"type escaped", UPS(.type = "'assignment\\u002eupserted'"), OK, NULL},

    /* invalid_version */
    {"version 1", UPS(.version = "1"), OK, NULL},
    {"version max", UPS(.version = "9007199254740991"), OK, NULL},
    {"version max+1", UPS(.version = "9007199254740992"), MODEL_REJ_INVALID_VERSION, "version: 9007199254740992 is out of range"},
    {"version huge", UPS(.version = "123456789012345678901234567890"), MODEL_REJ_INVALID_VERSION, "version: "},
    {"version 0", UPS(.version = "0"), MODEL_REJ_INVALID_VERSION, "version: 0 is out of range"},
    {"version -1", UPS(.version = "-1"), MODEL_REJ_INVALID_VERSION, "version: "},
    {"version -0", UPS(.version = "-0"), MODEL_REJ_INVALID_VERSION, "version: "},
    {"version 1.0", UPS(.version = "1.0"), MODEL_REJ_INVALID_VERSION, "version: 1.0 is not an integer"},
    {"version 1.5", UPS(.version = "1.5"), MODEL_REJ_INVALID_VERSION, "version: 1.5 is not an integer"},
    {"version 1e3", UPS(.version = "1e3"), MODEL_REJ_INVALID_VERSION, "version: 1e3 is not an integer"},
    {"version 1E0", UPS(.version = "1E0"), MODEL_REJ_INVALID_VERSION, "version: "},
    {"version 10e-1", UPS(.version = "10e-1"), MODEL_REJ_INVALID_VERSION, "version: "},

    /* invalid_timestamp (the parser is tested field by field in test_ts) */
    {"ts Feb 30", UPS(.ts = "'2024-02-30T00:00:00Z'"), MODEL_REJ_INVALID_TIMESTAMP, "ts: \"2024-02-30T00:00:00Z\""},
    {"ts escaped", UPS(.ts = "'2024-02-29T00:00:00\\u005a'"), OK, NULL},
    {"ts long garbage", UPS(.ts = "'2024-02-29T00:00:00Zxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'"), MODEL_REJ_INVALID_TIMESTAMP, "ts: "},
    {"ts empty", UPS(.ts = "''"), MODEL_REJ_INVALID_TIMESTAMP, "ts: "},
    {"dueAt bad", UPS(.d_dueAt = "'2026-13-01T00:00:00Z'"), MODEL_REJ_INVALID_TIMESTAMP, "data.dueAt: "},
    {"submittedAt bad", SUB(.d_submittedAt = "'yesterday'"), MODEL_REJ_INVALID_TIMESTAMP, "data.submittedAt: "},
    {"returnedAt bad", SUB(.d_returnedAt = "'2026-01-01T00:00:00+00:00'"), MODEL_REJ_INVALID_TIMESTAMP, "data.returnedAt: "},
    {"submittedAt ok", SUB(.d_submittedAt = "'2026-01-01T00:00:00.5Z'", .d_returnedAt = "'2026-01-02T00:00:00Z'"), OK, NULL},

    /* invalid_value: command id */
    {"id 1 byte", UPS(.id = "'x'"), OK, NULL},
    {"id 128", UPS(.id = CID128), OK, NULL},
    {"id 129", UPS(.id = CID129), MODEL_REJ_INVALID_VALUE, "id: 129 bytes, expected 1..128"},
    {"id empty", UPS(.id = "''"), MODEL_REJ_INVALID_VALUE, "id: 0 bytes"},
    {"id space", UPS(.id = "'a b'"), MODEL_REJ_INVALID_VALUE, "id: byte 0x20 at 1"},
    {"id tab escape", UPS(.id = "'a\\tb'"), MODEL_REJ_INVALID_VALUE, "id: byte 0x09"},
    {"id DEL", UPS(.id = "'a\\u007f'"), MODEL_REJ_INVALID_VALUE, "id: byte 0x7f"},
    {"id non-ascii", UPS(.id = "'\xc3\xa9'"), MODEL_REJ_INVALID_VALUE, "id: byte 0xc3 at 0"},
    {"id printable punctuation", UPS(.id = "'!~{}[]:,\\'\\\\/'"), OK, NULL},
    /* invalid_value: enums */
    {"status foo", UPS(.d_status = "'foo'"), MODEL_REJ_INVALID_VALUE, "data.status: \"foo\" is not one of draft, published, closed"},
    {"status case", UPS(.d_status = "'Draft'"), MODEL_REJ_INVALID_VALUE, "data.status: "},
    {"status of the other enum", UPS(.d_status = "'submitted'"), MODEL_REJ_INVALID_VALUE, "data.status: "},
    {"status draft", UPS(.d_status = "'draft'"), OK, NULL},
    {"status closed", UPS(.d_status = "'closed'"), OK, NULL},
    {"submission status draft", SUB(.d_status = "'draft'"), MODEL_REJ_INVALID_VALUE, "data.status: \"draft\" is not one of working, submitted, returned, reassigned"},
    {"submission status empty", SUB(.d_status = "''"), MODEL_REJ_INVALID_VALUE, "data.status: "},
    {"submission status working", SUB(.d_status = "'working'"), OK, NULL},
    {"submission status returned", SUB(.d_status = "'returned'"), OK, NULL},
    {"submission status reassigned", SUB(.d_status = "'reassigned'"), OK, NULL},
    {"submission status escaped", SUB(.d_status = "'re\\u0074urned'"), OK, NULL},
    /* invalid_value: title and feedback lengths (long ones in test_lengths) */
    {"title empty", UPS(.d_title = "''"), MODEL_REJ_INVALID_VALUE, "data.title: 0 bytes, expected 1..1024"},
    {"title one byte", UPS(.d_title = "'x'"), OK, NULL},
    {"feedback empty", GRD(.d_feedback = "''"), OK, NULL},
    /* invalid_value: points */
    {"points 0", UPS(.d_points = "0"), OK, NULL},
    {"points -0", GRD(.d_points = "-0"), OK, NULL},
    {"points -0.0e5", GRD(.d_points = "-0.0e5"), OK, NULL},
    {"points 10000", GRD(.d_points = "10000"), OK, NULL},
    {"points 1e4", GRD(.d_points = "1e4"), OK, NULL},
    {"points 10000.000", GRD(.d_points = "10000.000"), OK, NULL},
    {"points 0.1e5", GRD(.d_points = "0.1e5"), OK, NULL},
    {"points fraction", GRD(.d_points = "99.75"), OK, NULL},
    {"points tiny", GRD(.d_points = "1e-400"), OK, NULL},
    {"points 9999.99999999999999999999", GRD(.d_points = "9999.99999999999999999999"), OK, NULL},
    {"points 10000.5", GRD(.d_points = "10000.5"), MODEL_REJ_INVALID_VALUE, "data.points: 10000.5 is out of range 0..10000"},
    {"points 10000.0000000000000000001", GRD(.d_points = "10000.0000000000000000001"), MODEL_REJ_INVALID_VALUE, "data.points: "},
    {"points 10001", UPS(.d_points = "10001"), MODEL_REJ_INVALID_VALUE, "data.points: "},
    {"points 99999", GRD(.d_points = "99999"), MODEL_REJ_INVALID_VALUE, "data.points: 99999 is out of range 0..10000"},
    {"points 100000", GRD(.d_points = "100000"), MODEL_REJ_INVALID_VALUE, "data.points: 100000 is out of range 0..10000"},
    {"points 2e4", UPS(.d_points = "2e4"), MODEL_REJ_INVALID_VALUE, "data.points: "},
    {"points -0.1", GRD(.d_points = "-0.1"), MODEL_REJ_INVALID_VALUE, "data.points: -0.1 is out of range"},
    {"points -1e-400", GRD(.d_points = "-1e-400"), MODEL_REJ_INVALID_VALUE, "data.points: "},
    {"points 1e400", GRD(.d_points = "1e400"), MODEL_REJ_INVALID_VALUE, "data.points: "},
    {"points 1e999999999999999999999", GRD(.d_points = "1e999999999999999999999"), MODEL_REJ_INVALID_VALUE, "data.points: "},
    {"points 0e999999999999999999999", GRD(.d_points = "0e999999999999999999999"), OK, NULL},

    /* unknown fields: ignored, but still JSON and free of duplicates and U+0000 */
    {"unknown fields", UPS(.extra = "'x':{'a':[1,2.5e-3,{'b':null,'c':[true,false]}],'c':'\\u00e9'},'y':[]"), OK, NULL},
    {"unknown data fields", SUB(.d_extra = "'grade':{'n':[[]]},'n':-0.0"), OK, NULL},
    {"unknown field duplicate inside", UPS(.extra = "'x':{'a':1,'a':2}"), MODEL_REJ_DUPLICATE_KEY, "duplicate key \"a\" at $.x"},
    {"unknown field duplicate in array", UPS(.extra = "'x':[{'a':1},{'b':1,'b':2}]"), MODEL_REJ_DUPLICATE_KEY, "duplicate key \"b\" at $.x[1]"},
    {"same key in sibling objects", UPS(.extra = "'x':{'a':1},'y':{'a':1}"), OK, NULL},
    {"unknown field U+0000", UPS(.extra = "'x':['\\u0000']"), MODEL_REJ_INVALID_VALUE, "$.x[0]: string contains U+0000"},
    {"unknown data field U+0000 key", GRD(.d_extra = "'\\u0000':1"), MODEL_REJ_INVALID_VALUE, "a key in $.data contains U+0000"},
    {"duplicate envelope key", UPS(.extra = "'tenant':'t2'"), MODEL_REJ_DUPLICATE_KEY, "duplicate key \"tenant\" at $"},
    {"duplicate after unescape", UPS(.extra = "'\\u0069d':'x'"), MODEL_REJ_DUPLICATE_KEY, "duplicate key \"id\" at $"},
    {"duplicate data key", UPS(.d_extra = "'title':'x'"), MODEL_REJ_DUPLICATE_KEY, "duplicate key \"title\" at $.data"},
    {"duplicate data key in ignored data", DEL(.data = "{'a':1,'a':1}"), MODEL_REJ_DUPLICATE_KEY, "$.data"},
    {"escaped key matches field", UPS(.d_title = NULL, .d_extra = "'\\u0074itle':'T'"), OK, NULL},
    {"solidus escape in key", UPS(.extra = "'a\\/b':1,'a/b':2"), MODEL_REJ_DUPLICATE_KEY, "duplicate key \"a/b\""},
    {"long keys equal after unescape", UPS(.extra = "'abcdefghijklmnopqrstuvwxyz':1,'abcdefghijklm\\u006eopqrstuvwxy\\u007a':2"), MODEL_REJ_DUPLICATE_KEY, "duplicate key \"abcdefghijklmnopqrstuvwx...\""},
    {"long keys differing in the middle", UPS(.extra = "'abcdefghijklmnopqrstuvwxyz':1,'abcdefghijklmNopqrstuvwxyz':2"), OK, NULL},
    {"keys differing in case", UPS(.extra = "'Id':1,'ID':2"), OK, NULL},
    {"U+0000 beats missing field", UPS(.id = NULL, .extra = "'z':'\\u0000'"), MODEL_REJ_INVALID_VALUE, "U+0000"},
    {"duplicate beats U+0000 before it", UPS(.d_title = "'a\\u0000'", .extra = "'ts':'x'"), MODEL_REJ_DUPLICATE_KEY, "\"ts\""},
    {"title U+0000", UPS(.d_title = "'a\\u0000b'"), MODEL_REJ_INVALID_VALUE, "$.data.title: string contains U+0000"},
    {"U+0000 in ignored student", UPS(.student = "'\\u0000'"), MODEL_REJ_INVALID_VALUE, "$.student"},

    /* code order across fields: the earliest code wins, then the earliest field */
    {"wrong_type later beats invalid_id earlier", UPS(.tenant = "'a b'", .version = "'5'"), MODEL_REJ_WRONG_TYPE, "version: "},
    {"missing later beats wrong_type earlier", UPS(.id = "1", .ts = NULL), MODEL_REJ_MISSING_FIELD, "ts: "},
    {"two invalid ids: first field", UPS(.tenant = "''", .assignment = "''"), MODEL_REJ_INVALID_ID, "tenant: "},
    {"two missing: first field", SUB(.assignment = NULL, .student = NULL), MODEL_REJ_MISSING_FIELD, "assignment: "},
    {"missing student beats wrong data", SUB(.student = NULL, .data = "1"), MODEL_REJ_MISSING_FIELD, "student: "},
    {"wrong id beats wrong data field", UPS(.id = "1", .d_title = "1"), MODEL_REJ_WRONG_TYPE, "id: "},
    {"missing class beats wrong tenant", UPS(.tenant = "1", .d_class = NULL), MODEL_REJ_MISSING_FIELD, "data.class: "},
    {"unknown_type beats bad command id", UPS(.id = "''", .type = "'x'"), MODEL_REJ_UNKNOWN_TYPE, "type: "},
    {"invalid_id beats unknown_type", UPS(.type = "'x'", .tenant = "'a b'"), MODEL_REJ_INVALID_ID, "tenant: "},
    {"class invalid_id beats invalid_version", UPS(.version = "0", .d_class = "'?'"), MODEL_REJ_INVALID_ID, "data.class: "},
    {"invalid_version beats invalid_timestamp", UPS(.version = "0", .ts = "'x'"), MODEL_REJ_INVALID_VERSION, "version: "},
    {"invalid_timestamp beats bad title", UPS(.d_title = "''", .d_dueAt = "'x'"), MODEL_REJ_INVALID_TIMESTAMP, "data.dueAt: "},
    {"invalid_timestamp beats bad id", UPS(.id = "''", .ts = "'x'"), MODEL_REJ_INVALID_TIMESTAMP, "ts: "},
    {"bad id beats bad status", UPS(.id = "''", .d_status = "'x'"), MODEL_REJ_INVALID_VALUE, "id: "},
    {"bad title beats bad status", UPS(.d_title = "''", .d_status = "'x'"), MODEL_REJ_INVALID_VALUE, "data.title: "},
    {"bad status beats bad points", UPS(.d_status = "'x'", .d_points = "-1"), MODEL_REJ_INVALID_VALUE, "data.status: "},
    {"points beats feedback", GRD(.d_points = "-1", .d_feedback = "1"), MODEL_REJ_WRONG_TYPE, "data.feedback: "},
    {"wrong type beats unknown type", UPS(.type = "'x'", .version = "null"), MODEL_REJ_WRONG_TYPE, "version: "},
    {"type wrong, data not checked", UPS(.type = "1", .d_title = "1"), MODEL_REJ_WRONG_TYPE, "type: "},
    {"wrong type tenant", UPS(.tenant = "1"), MODEL_REJ_WRONG_TYPE, "tenant: "},
};

START_TEST(test_cases) {
  const case_t *c = &cases[_i];
  const char *json = build(&c->f);
  expect(c->name, json, strlen(json), MAXB, c->code, c->detail);
}
END_TEST

/* ---------------------------------------------------------- raw cases */

typedef struct {
  const char *name;
  const char *json;
  size_t len; /* 0: strlen */
  model_reject_code_t code;
  const char *detail;
} raw_t;

#define GOOD                                                                                   \
  "{\"id\":\"c\",\"type\":\"roster.assigned\",\"tenant\":\"t\",\"assignment\":\"a\","          \
  "\"student\":\"s\",\"version\":1,\"ts\":\"2026-01-01T00:00:00Z\""
/* A valid command with `X` as an extra member's value. */
#define WITH(x) GOOD ",\"x\":" x "}"
#define BIN(s) s, sizeof(s) - 1

static const raw_t raw[] = {
    {"good", GOOD "}", 0, OK, NULL},
    {"whitespace everywhere", " \t\r\n{ \"id\" : \"c\" ,\"type\"\t:\"roster.assigned\",\n\"tenant\":\"t\",\r"
     "\"assignment\":\"a\",\"student\":\"s\",\"version\":1,\"ts\":\"2026-01-01T00:00:00Z\" } \n", 0, OK, NULL},

    /* invalid_json */
    {"empty", "", 0, MODEL_REJ_INVALID_JSON, "invalid JSON: unexpected end of input"},
    {"only whitespace", " \n\t\r ", 0, MODEL_REJ_INVALID_JSON, NULL},
    {"open brace", "{", 0, MODEL_REJ_INVALID_JSON, NULL},
    {"close brace", "}", 0, MODEL_REJ_INVALID_JSON, NULL},
    {"key without value", "{\"a\"}", 0, MODEL_REJ_INVALID_JSON, "expected ':'"},
    {"colon without value", "{\"a\":}", 0, MODEL_REJ_INVALID_JSON, NULL},
    {"lone comma", "{,}", 0, MODEL_REJ_INVALID_JSON, NULL},
    {"trailing comma object", WITH("{\"a\":1,}"), 0, MODEL_REJ_INVALID_JSON, NULL},
    {"trailing comma array", WITH("[1,]"), 0, MODEL_REJ_INVALID_JSON, NULL},
    {"trailing comma top", GOOD ",}", 0, MODEL_REJ_INVALID_JSON, NULL},
    {"missing comma array", WITH("[1 2]"), 0, MODEL_REJ_INVALID_JSON, "expected ',' or ']'"},
    {"missing comma object", "{\"a\":1 \"b\":2}", 0, MODEL_REJ_INVALID_JSON, "expected ',' or '}'"},
    {"non-string key", "{1:2}", 0, MODEL_REJ_INVALID_JSON, "expected a string key"},
    {"single quotes", "{'a':1}", 0, MODEL_REJ_INVALID_JSON, NULL},
    {"single-quoted value", WITH("'x'"), 0, MODEL_REJ_INVALID_JSON, NULL},
    {"NaN", WITH("NaN"), 0, MODEL_REJ_INVALID_JSON, NULL},
    {"Infinity", WITH("Infinity"), 0, MODEL_REJ_INVALID_JSON, NULL},
    {"-Infinity", WITH("-Infinity"), 0, MODEL_REJ_INVALID_JSON, NULL},
    {"leading zero", WITH("01"), 0, MODEL_REJ_INVALID_JSON, NULL},
    {"leading zero negative", WITH("-01"), 0, MODEL_REJ_INVALID_JSON, NULL},
    {"lone minus", WITH("-"), 0, MODEL_REJ_INVALID_JSON, NULL},
    {"plus sign", WITH("+1"), 0, MODEL_REJ_INVALID_JSON, NULL},
    {"trailing dot", WITH("1."), 0, MODEL_REJ_INVALID_JSON, "after '.'"},
    {"leading dot", WITH(".5"), 0, MODEL_REJ_INVALID_JSON, NULL},
    {"empty exponent", WITH("1e"), 0, MODEL_REJ_INVALID_JSON, "exponent"},
    {"signed empty exponent", WITH("1e+"), 0, MODEL_REJ_INVALID_JSON, NULL},
    {"hex number", WITH("0x10"), 0, MODEL_REJ_INVALID_JSON, NULL},
    {"number then letter", WITH("1a"), 0, MODEL_REJ_INVALID_JSON, NULL},
    {"valid number forms", WITH("[0,-0,1.5,-1.5e-3,1E+2,0.0e0,123456789012345678901234567890]"), 0, OK, NULL},
    {"truncated true", WITH("tru"), 0, MODEL_REJ_INVALID_JSON, "invalid literal"},
    {"capital True", WITH("True"), 0, MODEL_REJ_INVALID_JSON, NULL},
    {"truncated null at end", "{\"a\":nul", 0, MODEL_REJ_INVALID_JSON, NULL},
    {"literal with suffix", WITH("nullx"), 0, MODEL_REJ_INVALID_JSON, NULL},
    {"trailing garbage", GOOD "} x", 0, MODEL_REJ_INVALID_JSON, "after the top-level value"},
    {"two objects", GOOD "}{}", 0, MODEL_REJ_INVALID_JSON, NULL},
    {"block comment", "/*c*/" GOOD "}", 0, MODEL_REJ_INVALID_JSON, NULL},
    {"line comment", GOOD "}//", 0, MODEL_REJ_INVALID_JSON, NULL},
    {"form feed whitespace", "\f" GOOD "}", 0, MODEL_REJ_INVALID_JSON, NULL},
    {"vertical tab whitespace", GOOD "}\v", 0, MODEL_REJ_INVALID_JSON, NULL},
    {"byte order mark", "\xef\xbb\xbf" GOOD "}", 0, MODEL_REJ_INVALID_JSON, NULL},
    {"NBSP whitespace", "\xc2\xa0" GOOD "}", 0, MODEL_REJ_INVALID_JSON, NULL},
    {"raw tab in string", WITH("\"a\tb\""), 0, MODEL_REJ_INVALID_JSON, "control character in string"},
    {"raw newline in string", WITH("\"a\nb\""), 0, MODEL_REJ_INVALID_JSON, NULL},
    {"raw 0x1f in string", WITH("\"\x1f\""), 0, MODEL_REJ_INVALID_JSON, NULL},
    {"raw DEL in string ok", WITH("\"\x7f\""), 0, OK, NULL},
    {"invalid escape x", WITH("\"\\x41\""), 0, MODEL_REJ_INVALID_JSON, "invalid escape"},
    {"invalid escape quote", WITH("\"\\'\""), 0, MODEL_REJ_INVALID_JSON, NULL},
    {"invalid escape U", WITH("\"\\U0041\""), 0, MODEL_REJ_INVALID_JSON, NULL},
    {"invalid escape a", WITH("\"\\a\""), 0, MODEL_REJ_INVALID_JSON, NULL},
    {"short \\u", WITH("\"\\u12\""), 0, MODEL_REJ_INVALID_JSON, "4 hex digits"},
    {"non-hex \\u", WITH("\"\\u12G4\""), 0, MODEL_REJ_INVALID_JSON, NULL},
    {"\\u at end", "{\"a\":\"\\u", 0, MODEL_REJ_INVALID_JSON, NULL},
    {"backslash at end", "{\"a\":\"\\", 0, MODEL_REJ_INVALID_JSON, NULL},
    {"unterminated string", "{\"a\":\"abc", 0, MODEL_REJ_INVALID_JSON, "unterminated string"},
    {"unterminated long string", "{\"a\":\"abcdefghijklmnopqrstuvwxyz", 0, MODEL_REJ_INVALID_JSON, NULL},
    {"unterminated key", "{\"abc", 0, MODEL_REJ_INVALID_JSON, NULL},
    {"every escape", WITH("\"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u0041\\u00e9\\u20AC\\ud83d\\ude00\""), 0, OK, NULL},

    /* invalid_utf8: raw bytes, anywhere, before any syntax error */
    {"utf8 2/3/4-byte and limits", WITH("\"\xc2\x80\xdf\xbf\xe0\xa0\x80\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf\xf0\x90\x80\x80\xf4\x8f\xbf\xbf\""), 0, OK, NULL},
    {"stray continuation", WITH("\"\x80\""), 0, MODEL_REJ_INVALID_UTF8, "invalid UTF-8: byte 0x80 at byte"},
    {"overlong 2-byte C0", WITH("\"\xc0\xaf\""), 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"overlong 2-byte C1", WITH("\"\xc1\xbf\""), 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"overlong 3-byte", WITH("\"\xe0\x80\xaf\""), 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"overlong 3-byte max", WITH("\"\xe0\x9f\xbf\""), 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"overlong 4-byte", WITH("\"\xf0\x8f\xbf\xbf\""), 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"UTF-8 surrogate D800", WITH("\"\xed\xa0\x80\""), 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"UTF-8 surrogate DFFF", WITH("\"\xed\xbf\xbf\""), 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"above U+10FFFF", WITH("\"\xf4\x90\x80\x80\""), 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"F5 lead", WITH("\"\xf5\x80\x80\x80\""), 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"FF byte", WITH("\"\xff\""), 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"FE byte", WITH("\"\xfe\""), 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"truncated 2-byte before quote", WITH("\"\xc3\""), 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"truncated 3-byte", WITH("\"\xe2\x82\""), 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"truncated 4-byte", WITH("\"\xf0\x9f\x98\""), 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"truncated at end of input", GOOD "}\xe2\x82", 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"invalid byte outside strings", GOOD "\xff}", 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"invalid byte after syntax error", "{,}\xff", 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"invalid byte in long ASCII run", WITH("\"abcdefghijklmnopqrstuvwxyz0123456789\xc0\""), 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"invalid byte beats too long nothing", "\xff", 0, MODEL_REJ_INVALID_UTF8, NULL},
    /* invalid_utf8: escapes */
    {"surrogate pair", WITH("\"\\uD83D\\uDE00\""), 0, OK, NULL},
    {"surrogate pair lower case", WITH("\"\\ud83d\\ude00\""), 0, OK, NULL},
    {"lone high surrogate", WITH("\"\\uD800\""), 0, MODEL_REJ_INVALID_UTF8, "lone surrogate \\uD800"},
    {"lone high then text", WITH("\"\\uD800x\""), 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"high then BMP escape", WITH("\"\\uD800\\u0041\""), 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"high then high", WITH("\"\\uD800\\uD800\""), 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"high then other escape", WITH("\"\\uD800\\n\""), 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"high then malformed \\u", WITH("\"\\uD800\\u12\""), 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"high at end of input", "{\"a\":\"\\uDBFF", 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"lone low surrogate", WITH("\"\\uDC00\""), 0, MODEL_REJ_INVALID_UTF8, "\\uDC00"},
    {"reversed pair", WITH("\"\\uDC00\\uD800\""), 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"lone surrogate in key", "{\"\\uDFFF\":1}", 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"lone surrogate in title", GOOD ",\"data\":{\"title\":\"\\ud800\"}}", 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"lone surrogate before syntax error", "{\"a\":\"\\uD800\",,}", 0, MODEL_REJ_INVALID_UTF8, NULL},
    {"lone surrogate after syntax error", "{\"a\":1,,\"b\":\"\\uD800\"}", 0, MODEL_REJ_INVALID_JSON, NULL},
    {"lone surrogate after duplicate", "{\"a\":1,\"a\":\"\\uD800\"}", 0, MODEL_REJ_INVALID_UTF8, NULL},

    /* order of the global rules */
    {"duplicate then syntax error", "{\"a\":1,\"a\":2,}", 0, MODEL_REJ_INVALID_JSON, NULL},
    {"U+0000 then syntax error", "{\"a\":\"\\u0000\"", 0, MODEL_REJ_INVALID_JSON, NULL},
    {"U+0000 then duplicate", "{\"a\":\"\\u0000\",\"a\":1}", 0, MODEL_REJ_DUPLICATE_KEY, "duplicate key \"a\" at $"},
    {"U+0000 in non-object", "[\"\\u0000\"]", 0, MODEL_REJ_INVALID_VALUE, "$[0]: string contains U+0000"},
    {"U+0000 top-level string", "\"\\u0000\"", 0, MODEL_REJ_INVALID_VALUE, "$: string contains U+0000"},
    {"duplicate in non-object", "[{\"a\":1,\"a\":2}]", 0, MODEL_REJ_DUPLICATE_KEY, "at $[0]"},
    {"U+0000 before missing fields", "{\"x\":\"\\u0000\"}", 0, MODEL_REJ_INVALID_VALUE, NULL},

    /* not_object: valid JSON that is not an object */
    {"array", "[1]", 0, MODEL_REJ_NOT_OBJECT, "got an array"},
    {"empty array", " [] ", 0, MODEL_REJ_NOT_OBJECT, NULL},
    {"string", "\"x\"", 0, MODEL_REJ_NOT_OBJECT, "got a string"},
    {"number", "1", 0, MODEL_REJ_NOT_OBJECT, "got a number"},
    {"negative zero", "-0", 0, MODEL_REJ_NOT_OBJECT, NULL},
    {"null", "null", 0, MODEL_REJ_NOT_OBJECT, "got null"},
    {"true", "true", 0, MODEL_REJ_NOT_OBJECT, NULL},
    {"false", " false ", 0, MODEL_REJ_NOT_OBJECT, NULL},
    {"array of a command", "[" GOOD "}]", 0, MODEL_REJ_NOT_OBJECT, NULL},
    {"empty object", "{}", 0, MODEL_REJ_MISSING_FIELD, "id: "},

    /* bytes that need explicit lengths */
    {"raw NUL byte in string", BIN(GOOD ",\"x\":\"a\0b\"}"), MODEL_REJ_INVALID_JSON, "control character"},
    {"raw NUL byte outside", BIN(GOOD "}\0"), MODEL_REJ_INVALID_JSON, NULL},
    {"raw NUL byte only", BIN("\0"), MODEL_REJ_INVALID_JSON, NULL},
};

START_TEST(test_raw) {
  const raw_t *c = &raw[_i];
  expect(c->name, c->json, c->len ? c->len : strlen(c->json), MAXB, c->code, c->detail);
}
END_TEST

/* ------------------------------------------------------------ details */

START_TEST(test_too_large) {
  const char *json = GOOD "}";
  size_t n = strlen(json);
  expect("at the limit", json, n, n, OK, NULL);
  expect("one over", json, n, n - 1, MODEL_REJ_TOO_LARGE, "limit");
  /* too_large comes before anything else: nothing is parsed */
  static char junk[300];
  memset(junk, 0xff, sizeof junk);
  expect("garbage over the limit", junk, sizeof junk, 100, MODEL_REJ_TOO_LARGE, NULL);
  expect("empty under a zero limit", "", 0, 0, MODEL_REJ_INVALID_JSON, NULL);
}
END_TEST

static const char *mkcmd(const char *fmt, ...) {
  static char buf[1 << 16];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  return buf;
}

#define ENVJ(type)                                                                             \
  "{\"id\":\"cmd-7\",\"type\":\"" type "\",\"tenant\":\"t-1\",\"assignment\":\"a_1\","         \
  "\"student\":\"S9\",\"version\":42,\"ts\":\"2026-09-01T08:00:00.123456Z\""

static model_command_t *decode_ok(const char *json) {
  model_reject_t r;
  bool ok = decode_checked(json, strlen(json), MAXB, &cmd, &r);
  ck_assert_msg(ok, "rejected %s: %s: %s", model_reject_code_name(r.code), r.detail, json);
  return &cmd;
}

static void check_envelope(const model_command_t *c, model_cmd_type_t t, bool has_student) {
  ck_assert_int_eq(c->type, t);
  ck_assert_str_eq(c->id, "cmd-7");
  ck_assert_int_eq(c->id_len, 5);
  ck_assert_str_eq(c->tenant, "t-1");
  ck_assert_int_eq(c->tenant_len, 3);
  ck_assert_str_eq(c->assignment, "a_1");
  ck_assert_int_eq(c->assignment_len, 3);
  ck_assert_str_eq(c->student, has_student ? "S9" : "");
  ck_assert_int_eq(c->student_len, has_student ? 2 : 0);
  ck_assert_uint_eq(c->version, 42);
  ck_assert_int_eq(c->ts_ms, 1788249600123LL); /* 2026-09-01T08:00:00.123Z */
}

START_TEST(test_decode_upserted) {
  memset(&cmd, 0x55, sizeof cmd);
  model_command_t *c = decode_ok(mkcmd("%s", ENVJ("assignment.upserted") ",\"data\":{\"class\":\"c-7\","
                                             "\"title\":\"Essay \\u00e9\\n\",\"status\":\"closed\","
                                             "\"dueAt\":\"2026-09-10T23:59:00Z\",\"points\":99.5}}"));
  check_envelope(c, MODEL_CMD_ASSIGNMENT_UPSERTED, false);
  ck_assert_str_eq(c->data.assignment.class_id, "c-7");
  ck_assert_int_eq(c->data.assignment.class_len, 3);
  ck_assert_str_eq(c->data.assignment.title, "Essay \xc3\xa9\n");
  ck_assert_int_eq(c->data.assignment.title_len, 9);
  ck_assert_int_eq(c->data.assignment.status, MODEL_ASSIGNMENT_CLOSED);
  ck_assert(c->data.assignment.has_due_at);
  ck_assert_int_eq(c->data.assignment.due_at_ms, 1789084740000LL);
  ck_assert(c->data.assignment.has_points);
  ck_assert(c->data.assignment.points == 99.5);

  memset(&cmd, 0x55, sizeof cmd);
  c = decode_ok(mkcmd("%s", ENVJ("assignment.upserted") ",\"data\":{\"class\":\"c\",\"title\":\"T\","
                            "\"status\":\"draft\",\"dueAt\":null}}"));
  ck_assert_int_eq(c->data.assignment.status, MODEL_ASSIGNMENT_DRAFT);
  ck_assert(!c->data.assignment.has_due_at);
  ck_assert(!c->data.assignment.has_points);
  ck_assert_str_eq(c->data.assignment.title, "T");
}
END_TEST

START_TEST(test_decode_deleted_and_roster) {
  static const struct {
    const char *type;
    model_cmd_type_t t;
    bool student;
  } k[] = {{"assignment.deleted", MODEL_CMD_ASSIGNMENT_DELETED, false},
           {"roster.assigned", MODEL_CMD_ROSTER_ASSIGNED, true},
           {"roster.unassigned", MODEL_CMD_ROSTER_UNASSIGNED, true}};
  for (size_t i = 0; i < 3; i++) {
    memset(&cmd, 0x55, sizeof cmd);
    model_command_t *c =
        decode_ok(mkcmd("{\"id\":\"cmd-7\",\"type\":\"%s\",\"tenant\":\"t-1\",\"assignment\":\"a_1\","
                        "\"student\":\"S9\",\"version\":42,\"ts\":\"2026-09-01T08:00:00.123456Z\","
                        "\"data\":{\"title\":\"ignored\",\"points\":5}}",
                        k[i].type));
    check_envelope(c, k[i].t, k[i].student);
    /* ignored data is zeroed: no variant shows a value */
    ck_assert(!c->data.assignment.has_points && !c->data.assignment.has_due_at);
    ck_assert_int_eq(c->data.assignment.title_len, 0);
    ck_assert_str_eq(c->data.assignment.title, "");
    ck_assert_str_eq(c->data.assignment.class_id, "");
    ck_assert(!c->data.grade.has_points && !c->data.grade.has_feedback);
    ck_assert_str_eq(c->data.grade.feedback, "");
    ck_assert(!c->data.submission.has_submitted_at && !c->data.submission.has_returned_at);
  }
}
END_TEST

START_TEST(test_decode_submission) {
  memset(&cmd, 0x55, sizeof cmd);
  model_command_t *c = decode_ok(mkcmd("%s", ENVJ("submission.updated") ",\"data\":{\"status\":\"returned\","
                                             "\"submittedAt\":\"2000-02-29T12:00:00Z\",\"returnedAt\":null}}"));
  check_envelope(c, MODEL_CMD_SUBMISSION_UPDATED, true);
  ck_assert_int_eq(c->data.submission.status, MODEL_SUBMISSION_RETURNED);
  ck_assert(c->data.submission.has_submitted_at);
  ck_assert_int_eq(c->data.submission.submitted_at_ms, 951825600000LL);
  ck_assert(!c->data.submission.has_returned_at);

  c = decode_ok(mkcmd("%s", ENVJ("submission.updated") ",\"data\":{\"status\":\"reassigned\"}}"));
  ck_assert_int_eq(c->data.submission.status, MODEL_SUBMISSION_REASSIGNED);
  ck_assert(!c->data.submission.has_submitted_at && !c->data.submission.has_returned_at);
}
END_TEST

START_TEST(test_decode_grade) {
  memset(&cmd, 0x55, sizeof cmd);
  model_command_t *c = decode_ok(mkcmd("%s", ENVJ("grade.updated") ",\"data\":{\"points\":-0,"
                                             "\"feedback\":\"Good \\\"work\\\" \\ud83d\\ude00\"}}"));
  check_envelope(c, MODEL_CMD_GRADE_UPDATED, true);
  ck_assert(c->data.grade.has_points);
  ck_assert(c->data.grade.points == 0.0 && !signbit(c->data.grade.points));
  ck_assert(c->data.grade.has_feedback);
  ck_assert_str_eq(c->data.grade.feedback, "Good \"work\" \xf0\x9f\x98\x80");
  ck_assert_int_eq(c->data.grade.feedback_len, 16);

  c = decode_ok(mkcmd("%s", ENVJ("grade.updated") ",\"data\":{\"points\":null,\"feedback\":null}}"));
  ck_assert(!c->data.grade.has_points && !c->data.grade.has_feedback);
  ck_assert_int_eq(c->data.grade.feedback_len, 0);

  c = decode_ok(mkcmd("%s", ENVJ("grade.updated") ",\"data\":{\"feedback\":\"\"}}"));
  ck_assert(!c->data.grade.has_points && c->data.grade.has_feedback);
  ck_assert_int_eq(c->data.grade.feedback_len, 0);
}
END_TEST

START_TEST(test_points_values) {
  static const struct {
    const char *lit;
    double want;
  } v[] = {
      {"0", 0},          {"10000", 10000},       {"1e4", 10000},      {"99.5", 99.5},
      {"1", 1},          {"30", 30},             {"9999", 9999},      {"100", 100},
      {"0.1", 0.1},      {"1234.5678", 1234.5678}, {"12345678e-4", 1234.5678},
      {"0.30000000000000004", 0.30000000000000004},
      {"3.14159265358979323846264338327950288", 3.14159265358979323846264338327950288},
      {"0.000000000000000000000000001", 1e-27}, {"1e-400", 0.0}, {"-0.0", 0.0},
      {"9999.9999999999999999", 10000.0}, /* rounds to the nearest double */
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    model_command_t *c = decode_ok(mkcmd("%s,\"data\":{\"points\":%s}}", ENVJ("grade.updated"), v[i].lit));
    ck_assert_msg(c->data.grade.has_points, "%s", v[i].lit);
    ck_assert_msg(c->data.grade.points == v[i].want, "%s -> %.17g", v[i].lit, c->data.grade.points);
    ck_assert(!signbit(c->data.grade.points));
  }
}
END_TEST

START_TEST(test_lengths) {
  static char title[8192], json[1 << 16];
  /* 341 x 3-byte EURO + 1 = 1024 bytes */
  char *o = title;
  for (int i = 0; i < 341; i++) o += sprintf(o, "\xe2\x82\xac");
  strcpy(o, "a");
  snprintf(json, sizeof json, ENVJ("assignment.upserted") ",\"data\":{\"class\":\"c\",\"title\":\"%s\",\"status\":\"draft\"}}", title);
  model_command_t *c = decode_ok(json);
  ck_assert_int_eq(c->data.assignment.title_len, 1024);
  ck_assert_int_eq(memcmp(c->data.assignment.title, title, 1025), 0);
  /* 1025: one more byte */
  strcpy(o, "ab");
  snprintf(json, sizeof json, ENVJ("assignment.upserted") ",\"data\":{\"class\":\"c\",\"title\":\"%s\",\"status\":\"draft\"}}", title);
  expect("title 1025", json, strlen(json), MAXB, MODEL_REJ_INVALID_VALUE, "data.title: 1025 bytes, expected 1..1024");
  /* 342 x EURO = 1026: a multibyte char crossing the limit */
  strcpy(o, "\xe2\x82\xac");
  snprintf(json, sizeof json, ENVJ("assignment.upserted") ",\"data\":{\"class\":\"c\",\"title\":\"%s\",\"status\":\"draft\"}}", title);
  expect("title 1026", json, strlen(json), MAXB, MODEL_REJ_INVALID_VALUE, "data.title: 1026 bytes");
  /* the same 1024 bytes through \u escapes (6 raw bytes each) */
  o = title;
  for (int i = 0; i < 341; i++) o += sprintf(o, "\\u20ac");
  strcpy(o, "a");
  snprintf(json, sizeof json, ENVJ("assignment.upserted") ",\"data\":{\"class\":\"c\",\"title\":\"%s\",\"status\":\"draft\"}}", title);
  c = decode_ok(json);
  ck_assert_int_eq(c->data.assignment.title_len, 1024);
  ck_assert_int_eq((unsigned char)c->data.assignment.title[0], 0xe2);
  ck_assert_int_eq(c->data.assignment.title[1024], '\0');
  strcpy(o, "\\u00e9"); /* 1023 + 2 */
  snprintf(json, sizeof json, ENVJ("assignment.upserted") ",\"data\":{\"class\":\"c\",\"title\":\"%s\",\"status\":\"draft\"}}", title);
  expect("escaped title 1025", json, strlen(json), MAXB, MODEL_REJ_INVALID_VALUE, "1025 bytes");

  /* feedback: 4096 bytes with 4-byte chars, then 4097 */
  static char fb[20000];
  o = fb;
  for (int i = 0; i < 1023; i++) o += sprintf(o, "\xf0\x9f\x98\x80");
  strcpy(o, "abcd");
  snprintf(json, sizeof json, ENVJ("grade.updated") ",\"data\":{\"feedback\":\"%s\"}}", fb);
  c = decode_ok(json);
  ck_assert_int_eq(c->data.grade.feedback_len, 4096);
  ck_assert_int_eq(memcmp(c->data.grade.feedback, fb, 4097), 0);
  strcpy(o, "abcde");
  snprintf(json, sizeof json, ENVJ("grade.updated") ",\"data\":{\"feedback\":\"%s\"}}", fb);
  expect("feedback 4097", json, strlen(json), MAXB, MODEL_REJ_INVALID_VALUE, "data.feedback: 4097 bytes, expected 0..4096");

  /* ids at 64/65 through escapes: length counts decoded bytes */
  o = title;
  for (int i = 0; i < 64; i++) o += sprintf(o, "\\u0061");
  *o = '\0';
  snprintf(json, sizeof json, "{\"id\":\"x\",\"type\":\"assignment.deleted\",\"tenant\":\"%s\",\"assignment\":\"a\",\"version\":1,\"ts\":\"2026-01-01T00:00:00Z\"}", title);
  c = decode_ok(json);
  ck_assert_int_eq(c->tenant_len, 64);
  ck_assert_int_eq(strlen(c->tenant), 64);
  strcpy(o, "b");
  snprintf(json, sizeof json, "{\"id\":\"x\",\"type\":\"assignment.deleted\",\"tenant\":\"%s\",\"assignment\":\"a\",\"version\":1,\"ts\":\"2026-01-01T00:00:00Z\"}", title);
  expect("escaped tenant 65", json, strlen(json), MAXB, MODEL_REJ_INVALID_ID, "tenant: ");
}
END_TEST

/* Timestamps through the decoder (model_timestamp_parse is the authority). */
START_TEST(test_timestamps) {
  static const struct {
    const char *ts;
    bool ok;
    long long ms;
  } v[] = {
      {"2000-02-29T00:00:00Z", true, 951782400000LL},
      {"1900-02-29T00:00:00Z", false, 0},
      {"2024-02-29T00:00:00Z", true, 1709164800000LL},
      {"2023-02-29T00:00:00Z", false, 0},
      {"2100-02-29T00:00:00Z", false, 0},
      {"2024-01-31T00:00:00Z", true, 1706659200000LL},
      {"2024-04-31T00:00:00Z", false, 0},
      {"2024-06-31T00:00:00Z", false, 0},
      {"2024-09-31T00:00:00Z", false, 0},
      {"2024-11-31T00:00:00Z", false, 0},
      {"2024-12-31T23:59:59Z", true, 1735689599000LL},
      {"0000-01-01T00:00:00Z", false, 0},
      {"0001-01-01T00:00:00Z", true, -62135596800000LL},
      {"9999-12-31T23:59:59.999999999Z", true, 253402300799999LL},
      {"1970-01-01T00:00:00.1Z", true, 100},
      {"1970-01-01T00:00:00.12Z", true, 120},
      {"1970-01-01T00:00:00.123456789Z", true, 123},
      {"1970-01-01T00:00:00.1234567891Z", false, 0},
      {"1970-01-01T00:00:00.Z", false, 0},
      {"1970-01-01T00:00:00z", false, 0},
      {"1970-01-01t00:00:00Z", false, 0},
      {"1970-01-01 00:00:00Z", false, 0},
      {"1970-01-01T00:00:00+00:00", false, 0},
      {"1970-01-01T00:00:00", false, 0},
      {"1970-01-01T24:00:00Z", false, 0},
      {"1970-01-01T00:60:00Z", false, 0},
      {"1970-01-01T00:00:60Z", false, 0},
      {"1970-00-01T00:00:00Z", false, 0},
      {"1970-01-00T00:00:00Z", false, 0},
      {"1970-1-01T00:00:00Z", false, 0},
      {"1970-01-01T00:00:00ZZ", false, 0},
  };
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    const char *json = mkcmd("{\"id\":\"x\",\"type\":\"assignment.deleted\",\"tenant\":\"t\",\"assignment\":\"a\","
                             "\"version\":1,\"ts\":\"%s\"}", v[i].ts);
    model_reject_t r;
    bool ok = decode_checked(json, strlen(json), MAXB, &cmd, &r);
    ck_assert_msg(ok == v[i].ok, "%s: %s", v[i].ts, ok ? "accepted" : r.detail);
    if (ok)
      ck_assert_msg(cmd.ts_ms == v[i].ms, "%s -> %lld", v[i].ts, (long long)cmd.ts_ms);
    else
      ck_assert_int_eq(r.code, MODEL_REJ_INVALID_TIMESTAMP);
  }
}
END_TEST

/* Nesting: 64 levels are fine, 65 are invalid_json. */
START_TEST(test_depth) {
  static char json[4096];
  for (int depth = 63; depth <= 66; depth++) {
    /* the command object is level 1; x's value adds depth-1 levels of arrays */
    char *o = json + sprintf(json, GOOD ",\"x\":");
    for (int i = 1; i < depth; i++) *o++ = '[';
    for (int i = 1; i < depth; i++) *o++ = ']';
    strcpy(o, "}");
    expect("depth", json, strlen(json), MAXB, depth <= MODEL_JSON_MAX_DEPTH ? OK : MODEL_REJ_INVALID_JSON,
           depth <= MODEL_JSON_MAX_DEPTH ? NULL : "nesting deeper than 64");
  }
  /* objects count too */
  char *o = json + sprintf(json, GOOD ",\"x\":");
  for (int i = 1; i < 65; i++) o += sprintf(o, "{\"k\":");
  o += sprintf(o, "1");
  for (int i = 1; i < 65; i++) *o++ = '}';
  strcpy(o, "}");
  expect("object depth 65", json, strlen(json), MAXB, MODEL_REJ_INVALID_JSON, "nesting");
}
END_TEST

/* Objects past the small-object limit take the sort path for duplicates. */
START_TEST(test_big_objects) {
  static char json[1 << 20];
  for (int n = 10; n <= 3000; n = n * 3) {
    char *o = json + sprintf(json, GOOD ",\"x\":{");
    for (int i = 0; i < n; i++) o += sprintf(o, "%s\"k%d\":%d", i ? "," : "", i, i);
    strcpy(o, "}}");
    expect("big no dup", json, strlen(json), MAXB, OK, NULL);
    /* duplicate of the first key at the end, escaped */
    o = json + sprintf(json, GOOD ",\"x\":{");
    for (int i = 0; i < n; i++) o += sprintf(o, "%s\"k%d\":%d", i ? "," : "", i, i);
    strcpy(o, ",\"\\u006b0\":1}}");
    expect("big dup at end", json, strlen(json), MAXB, MODEL_REJ_DUPLICATE_KEY, "duplicate key \"k0\" at $.x");
  }
  /* two duplicates in a big object: the one whose second occurrence comes first is named */
  char *o = json + sprintf(json, GOOD ",\"x\":{");
  for (int i = 0; i < 40; i++) o += sprintf(o, "%s\"k%d\":%d", i ? "," : "", i, i);
  strcpy(o, ",\"k30\":1,\"k2\":1}}");
  expect("big two dups", json, strlen(json), MAXB, MODEL_REJ_DUPLICATE_KEY, "duplicate key \"k30\"");
  /* a big top-level object still captures its fields */
  o = json + sprintf(json, GOOD);
  for (int i = 0; i < 300; i++) o += sprintf(o, ",\"z%d\":[%d]", i, i);
  strcpy(o, "}");
  expect("big top level", json, strlen(json), MAXB, OK, NULL);
  ck_assert_str_eq(cmd.student, "s");
  /* more open keys than the stack holds: nested big objects */
  o = json + sprintf(json, GOOD ",\"x\":{");
  for (int i = 0; i < 300; i++) o += sprintf(o, "\"a%d\":1,", i);
  o += sprintf(o, "\"in\":{");
  for (int i = 0; i < 300; i++) o += sprintf(o, "\"a%d\":1,", i);
  o += sprintf(o, "\"a7\":2}}}");
  expect("nested big dup", json, strlen(json), MAXB, MODEL_REJ_DUPLICATE_KEY, "duplicate key \"a7\" at $.x.in");
}
END_TEST

/* Every printable byte at the ends and middle of ids of lengths around the
 * 16-byte blocks the id check reads (at every position of one length): in the envelope (whole blocks are
 * available) and as the last field of the text (the tail is checked byte by
 * byte). */
START_TEST(test_id_bytes) {
  static const int lens[] = {1, 2, 15, 16, 17, 31, 32, 33, 48, 63, 64};
  char id[80];
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
    int n = lens[li];
    for (int pos = 0; pos < n; pos++)
      for (int b = 0x20; b < 0x7F; b++) {
        if (n != 17 && pos != 0 && pos != n / 2 && pos != n - 1) continue; /* every position of one length */
        if (b == '"' || b == '\\') continue;
        memset(id, 'k', (size_t)n);
        id[pos] = (char)b;
        id[n] = '\0';
        bool valid = (b >= '0' && b <= '9') || (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') || b == '-' ||
                     b == '_';
        const char *early = mkcmd("{\"id\":\"c\",\"type\":\"roster.assigned\",\"tenant\":\"%s\",\"assignment\":\"a\","
                                  "\"student\":\"s\",\"version\":1,\"ts\":\"2026-01-01T00:00:00Z\"}", id);
        expect("id byte, early", early, strlen(early), MAXB, valid ? OK : MODEL_REJ_INVALID_ID, "tenant: ");
        if (valid) ck_assert_str_eq(cmd.tenant, id);
        const char *late = mkcmd("{\"id\":\"c\",\"type\":\"roster.assigned\",\"tenant\":\"t\",\"assignment\":\"a\","
                                 "\"version\":1,\"ts\":\"2026-01-01T00:00:00Z\",\"student\":\"%s\"}", id);
        expect("id byte, last", late, strlen(late), MAXB, valid ? OK : MODEL_REJ_INVALID_ID, "student: ");
        if (valid) ck_assert_str_eq(cmd.student, id);
      }
  }
}
END_TEST

/* An id of every length 1..16 as the last field of the text, and a
 * command id likewise: the copy of one that ends the text (no 16 bytes
 * after its start) takes exactly its bytes, whatever its length. */
START_TEST(test_id_last_lengths) {
  static const char bytes[] = "aZ09-_bY18_-cX27";
  char id[17];
  for (size_t n = 1; n <= 16; n++) {
    memcpy(id, bytes, n);
    id[n] = '\0';
    const char *late = mkcmd("{\"id\":\"c\",\"type\":\"roster.assigned\",\"tenant\":\"t\",\"assignment\":\"a\","
                             "\"version\":1,\"ts\":\"2026-01-01T00:00:00Z\",\"student\":\"%s\"}", id);
    expect("id, last", late, strlen(late), MAXB, OK, "");
    ck_assert_str_eq(cmd.student, id);
    ck_assert_uint_eq(cmd.student_len, n);
    const char *cmd_late = mkcmd("{\"type\":\"roster.assigned\",\"tenant\":\"t\",\"assignment\":\"a\","
                                 "\"student\":\"s\",\"version\":1,\"ts\":\"2026-01-01T00:00:00Z\",\"id\":\"%s\"}", id);
    expect("command id, last", cmd_late, strlen(cmd_late), MAXB, OK, "");
    ck_assert_str_eq(cmd.id, id);
    ck_assert_uint_eq(cmd.id_len, n);
  }
}
END_TEST

/* The command id's rule (printable ASCII 0x21..0x7e) with every byte JSON
 * lets into a string unescaped, and a UTF-8 letter, at the ends and middle
 * of ids of lengths around the 16-byte blocks (every position of one
 * length), early in the text and as its last field. */
START_TEST(test_cmd_id_bytes) {
  static const int lens[] = {1, 2, 15, 16, 17, 32, 33, 127, 128};
  char id[160], want[64];
  for (size_t li = 0; li < sizeof lens / sizeof lens[0]; li++) {
    int n = lens[li];
    for (int pos = 0; pos < n; pos++)
      for (int b = 0x20; b <= 0x80; b++) {
        if (b == '"' || b == '\\') continue;
        if (n != 17 && pos != 0 && pos != n / 2 && pos != n - 1) continue;
        memset(id, 'k', (size_t)n);
        size_t len = (size_t)n;
        if (b == 0x80) { /* U+00E9 in place of one byte: two bytes of text */
          memmove(id + pos + 2, id + pos + 1, (size_t)(n - pos - 1));
          id[pos] = (char)0xC3;
          id[pos + 1] = (char)0xA9;
          len++;
        } else {
          id[pos] = (char)b;
        }
        id[len] = '\0';
        bool valid = b > 0x20 && b < 0x7F;
        if (b == 0x80 || b == 0x7F || b == 0x20)
          snprintf(want, sizeof want, "id: byte 0x%02x at %d ", b == 0x80 ? 0xC3 : b, pos);
        model_reject_code_t code = len > 128 ? MODEL_REJ_INVALID_VALUE : valid ? OK : MODEL_REJ_INVALID_VALUE;
        const char *detail = len > 128 ? "id: 129 bytes" : want;
        const char *early = mkcmd("{\"id\":\"%s\",\"type\":\"roster.assigned\",\"tenant\":\"t\",\"assignment\":\"a\","
                                  "\"student\":\"s\",\"version\":1,\"ts\":\"2026-01-01T00:00:00Z\"}", id);
        expect("command id byte, early", early, strlen(early), MAXB, code, detail);
        if (code == OK) ck_assert_str_eq(cmd.id, id);
        const char *late = mkcmd("{\"type\":\"roster.assigned\",\"tenant\":\"t\",\"assignment\":\"a\","
                                 "\"student\":\"s\",\"version\":1,\"ts\":\"2026-01-01T00:00:00Z\",\"id\":\"%s\"}", id);
        expect("command id byte, last", late, strlen(late), MAXB, code, detail);
        if (code == OK) ck_assert_str_eq(cmd.id, id);
      }
  }
}
END_TEST

START_TEST(test_names) {
  ck_assert_str_eq(model_cmd_type_name(MODEL_CMD_ASSIGNMENT_UPSERTED), "assignment.upserted");
  ck_assert_str_eq(model_cmd_type_name(MODEL_CMD_ASSIGNMENT_DELETED), "assignment.deleted");
  ck_assert_str_eq(model_cmd_type_name(MODEL_CMD_SUBMISSION_UPDATED), "submission.updated");
  ck_assert_str_eq(model_cmd_type_name(MODEL_CMD_GRADE_UPDATED), "grade.updated");
  ck_assert_str_eq(model_cmd_type_name(MODEL_CMD_ROSTER_ASSIGNED), "roster.assigned");
  ck_assert_str_eq(model_cmd_type_name(MODEL_CMD_ROSTER_UNASSIGNED), "roster.unassigned");
  ck_assert_ptr_null(model_cmd_type_name(MODEL_CMD_TYPE_COUNT));
  ck_assert(!model_cmd_type_has_student(MODEL_CMD_ASSIGNMENT_UPSERTED));
  ck_assert(!model_cmd_type_has_student(MODEL_CMD_ASSIGNMENT_DELETED));
  ck_assert(model_cmd_type_has_student(MODEL_CMD_SUBMISSION_UPDATED));
  ck_assert(model_cmd_type_has_student(MODEL_CMD_GRADE_UPDATED));
  ck_assert(model_cmd_type_has_student(MODEL_CMD_ROSTER_ASSIGNED));
  ck_assert(model_cmd_type_has_student(MODEL_CMD_ROSTER_UNASSIGNED));
  static const char *codes[] = {"ok", "too_large", "invalid_utf8", "invalid_json", "duplicate_key",
                                "invalid_value", "not_object", "missing_field", "wrong_type",
                                "invalid_id", "unknown_type", "invalid_version", "invalid_timestamp",
                                "document_too_large"};
  for (int i = 0; i < MODEL_REJ_COUNT; i++) ck_assert_str_eq(model_reject_code_name(i), codes[i]);
  ck_assert_ptr_null(model_reject_code_name(MODEL_REJ_COUNT));
  ck_assert_str_eq(model_assignment_status_name(MODEL_ASSIGNMENT_DRAFT), "draft");
  ck_assert_str_eq(model_assignment_status_name(MODEL_ASSIGNMENT_PUBLISHED), "published");
  ck_assert_str_eq(model_assignment_status_name(MODEL_ASSIGNMENT_CLOSED), "closed");
  ck_assert_str_eq(model_submission_status_name(MODEL_SUBMISSION_WORKING), "working");
  ck_assert_str_eq(model_submission_status_name(MODEL_SUBMISSION_SUBMITTED), "submitted");
  ck_assert_str_eq(model_submission_status_name(MODEL_SUBMISSION_RETURNED), "returned");
  ck_assert_str_eq(model_submission_status_name(MODEL_SUBMISSION_REASSIGNED), "reassigned");
  for (int st = MODEL_ASSIGNMENT_DRAFT; st <= MODEL_ASSIGNMENT_CLOSED; st++)
    ck_assert_uint_eq(model_assignment_status_len[st], strlen(model_assignment_status_name(st)));
  for (int st = MODEL_SUBMISSION_WORKING; st <= MODEL_SUBMISSION_REASSIGNED; st++)
    ck_assert_uint_eq(model_submission_status_len[st], strlen(model_submission_status_name(st)));
}
END_TEST

/* Details never echo raw non-ASCII or huge input. */
START_TEST(test_detail_escaping) {
  static char json[1 << 16];
  char big[3000];
  memset(big, 'x', sizeof big - 1);
  big[sizeof big - 1] = '\0';
  snprintf(json, sizeof json, "{\"id\":\"c\",\"type\":\"%s\",\"tenant\":\"t\",\"assignment\":\"a\","
           "\"version\":1,\"ts\":\"2026-01-01T00:00:00Z\"}", big);
  expect("huge unknown type", json, strlen(json), MAXB, MODEL_REJ_UNKNOWN_TYPE, "...");
  model_reject_t r;
  decode_checked(json, strlen(json), MAXB, &cmd, &r);
  ck_assert_uint_lt(strlen(r.detail), 120);
  snprintf(json, sizeof json, "{\"id\":\"c\",\"type\":\"assignment.upserted\",\"tenant\":\"t\",\"assignment\":\"a\","
           "\"version\":1,\"ts\":\"2026-01-01T00:00:00Z\",\"data\":{\"class\":\"c\",\"title\":\"t\","
           "\"status\":\"\xe2\x82\xac\\n\\\"\"}}");
  expect("status escaped", json, strlen(json), MAXB, MODEL_REJ_INVALID_VALUE, "\"\\xe2\\x82\\xac\\x0a\\\"\"");
  snprintf(json, sizeof json, "{\"%s\":1,\"%s\":2}", big, big);
  expect("huge duplicate key", json, strlen(json), MAXB, MODEL_REJ_DUPLICATE_KEY, "...\" at $");
}
END_TEST


Suite *test_suite(void) {
  Suite *s = suite_create("command");
  TCase *tc = tcase_create("decode");
  tcase_set_timeout(tc, 120);
  tcase_add_loop_test(tc, test_cases, 0, sizeof cases / sizeof cases[0]);
  tcase_add_loop_test(tc, test_raw, 0, sizeof raw / sizeof raw[0]);
  tcase_add_test(tc, test_too_large);
  tcase_add_test(tc, test_decode_upserted);
  tcase_add_test(tc, test_decode_deleted_and_roster);
  tcase_add_test(tc, test_decode_submission);
  tcase_add_test(tc, test_decode_grade);
  tcase_add_test(tc, test_points_values);
  tcase_add_test(tc, test_lengths);
  tcase_add_test(tc, test_timestamps);
  tcase_add_test(tc, test_depth);
  tcase_add_test(tc, test_big_objects);
  tcase_add_test(tc, test_names);
  tcase_add_test(tc, test_id_bytes);
  tcase_add_test(tc, test_id_last_lengths);
  tcase_add_test(tc, test_cmd_id_bytes);
  tcase_add_test(tc, test_detail_escaping);
  suite_add_tcase(s, tc);
  return s;
}
