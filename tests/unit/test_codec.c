/* The stored document in BSON and JSON: encode, decode, round trips. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "model_fixtures.h"
#include "timestamp.h"

#define T "t1"
#define A "a1"
#define UPDATED_AT 1788220800000LL /* 2026-09-01T00:00:00.000Z */

static model_command_t cmd;

static int64_t ts(const char *s) {
  int64_t ms;
  ck_assert_msg(model_timestamp_parse(s, strlen(s), &ms), "bad timestamp %s", s);
  return ms;
}

/* An aggregate with every kind of slot and value. */
static model_aggregate_t *rich(void) {
  model_aggregate_t *a = model_aggregate_new(T, 2, A, 2);
  fx_upsert(&cmd, T, A, 2, "cmd-h2", "c1", "Essay \"1\"\n\xc3\xa9", MODEL_ASSIGNMENT_PUBLISHED, true,
            ts("2026-09-08T23:59:59.999999Z"), true, 95.5);
  model_aggregate_apply(a, &cmd);
  fx_roster(&cmd, T, A, "s2", 1, "r-s2", true);
  model_aggregate_apply(a, &cmd);
  fx_submission(&cmd, T, A, "s2", 3, "x-s2", MODEL_SUBMISSION_RETURNED, true, ts("2026-09-05T10:00:00Z"), true,
                ts("2026-09-06T11:30:00.5Z"));
  model_aggregate_apply(a, &cmd);
  fx_grade(&cmd, T, A, "s2", 1, "g-s2", true, 87.5, "Good \\ work");
  model_aggregate_apply(a, &cmd);
  fx_roster(&cmd, T, A, "s1", 2, "r-s1", false);
  model_aggregate_apply(a, &cmd);
  fx_submission(&cmd, T, A, "s1", 1, "x-s1", MODEL_SUBMISSION_WORKING, false, 0, false, 0);
  model_aggregate_apply(a, &cmd);
  fx_grade(&cmd, T, A, "s3", 9007199254740991ULL, "g-s3", false, 0, NULL);
  model_aggregate_apply(a, &cmd);
  return a;
}

static void to_bson(const model_aggregate_t *a, int64_t rev, bson_t *out) {
  bson_init(out);
  ck_assert(model_codec_to_bson(a, rev, UPDATED_AT, out));
}

static void assert_same_bson(const bson_t *x, const bson_t *y) {
  ck_assert_uint_eq(x->len, y->len);
  ck_assert(!memcmp(bson_get_data(x), bson_get_data(y), x->len));
}

START_TEST(test_bson_round_trip_identical) {
  model_aggregate_t *a = rich();
  bson_t b1, b2;
  to_bson(a, 7, &b1);
  int64_t rev = 0;
  model_error_t err;
  model_aggregate_t *d = model_codec_from_bson(&b1, &rev, &err);
  ck_assert_msg(d != NULL, "%s", err.message);
  ck_assert_int_eq(rev, 7);
  ck_assert(model_aggregate_equal(a, d));
  to_bson(d, 7, &b2);
  assert_same_bson(&b1, &b2);
  bson_destroy(&b1);
  bson_destroy(&b2);
  model_aggregate_destroy(d);

  /* empty aggregate, and a deleted header */
  model_aggregate_t *e = model_aggregate_new(T, 2, A, 2);
  for (int round = 0; round < 2; round++) {
    to_bson(e, 1, &b1);
    d = model_codec_from_bson(&b1, &rev, &err);
    ck_assert_msg(d != NULL, "%s", err.message);
    to_bson(d, 1, &b2);
    assert_same_bson(&b1, &b2);
    bson_destroy(&b1);
    bson_destroy(&b2);
    model_aggregate_destroy(d);
    fx_deleted(&cmd, T, A, 4, "del");
    model_aggregate_apply(e, &cmd);
  }
  model_aggregate_destroy(e);
  model_aggregate_destroy(a);
}
END_TEST

/* The BSON types of section 4, checked field by field. */
START_TEST(test_bson_types) {
  model_aggregate_t *a = rich();
  bson_t b;
  to_bson(a, 3, &b);
  bson_iter_t it, f;
  const char *order[] = {"_id", "tenant", "assignment", "header", "students", "counts", "rev", "updatedAt"};
  ck_assert(bson_iter_init(&it, &b));
  for (size_t i = 0; i < 8; i++) {
    ck_assert(bson_iter_next(&it));
    ck_assert_str_eq(bson_iter_key(&it), order[i]);
  }
  ck_assert(!bson_iter_next(&it));
  ck_assert(bson_iter_init_find(&it, &b, "_id") && BSON_ITER_HOLDS_UTF8(&it));
  ck_assert_str_eq(bson_iter_utf8(&it, NULL), "t1/a1");
  ck_assert(bson_iter_init_find(&it, &b, "rev") && BSON_ITER_HOLDS_INT64(&it) && bson_iter_int64(&it) == 3);
  ck_assert(bson_iter_init_find(&it, &b, "updatedAt") && BSON_ITER_HOLDS_DATE_TIME(&it));
  ck_assert_int_eq(bson_iter_date_time(&it), UPDATED_AT);
  ck_assert(bson_iter_init(&it, &b) && bson_iter_find_descendant(&it, "header.dueAt", &f));
  ck_assert(BSON_ITER_HOLDS_DATE_TIME(&f));
  ck_assert_int_eq(bson_iter_date_time(&f), ts("2026-09-08T23:59:59.999Z")); /* truncated, not rounded */
  ck_assert(bson_iter_init(&it, &b) && bson_iter_find_descendant(&it, "header.points", &f));
  ck_assert(BSON_ITER_HOLDS_DOUBLE(&f) && bson_iter_double(&f) == 95.5);
  ck_assert(bson_iter_init(&it, &b) && bson_iter_find_descendant(&it, "header.v", &f));
  ck_assert(BSON_ITER_HOLDS_INT64(&f) && bson_iter_int64(&f) == 2);
  ck_assert(bson_iter_init(&it, &b) && bson_iter_find_descendant(&it, "header.c", &f));
  ck_assert_str_eq(bson_iter_utf8(&f, NULL), "cmd-h2");
  ck_assert(bson_iter_init(&it, &b) && bson_iter_find_descendant(&it, "students.s1.member.assigned", &f));
  ck_assert(BSON_ITER_HOLDS_BOOL(&f) && !bson_iter_bool(&f));
  ck_assert(bson_iter_init(&it, &b) && bson_iter_find_descendant(&it, "students.s1.submission.submittedAt", &f));
  ck_assert(BSON_ITER_HOLDS_NULL(&f));
  ck_assert(bson_iter_init(&it, &b) && !bson_iter_find_descendant(&it, "students.s1.grade", &f));
  ck_assert(bson_iter_init(&it, &b) && bson_iter_find_descendant(&it, "students.s2.submission.returnedAt", &f));
  ck_assert(BSON_ITER_HOLDS_DATE_TIME(&f) && bson_iter_date_time(&f) == ts("2026-09-06T11:30:00.500Z"));
  ck_assert(bson_iter_init(&it, &b) && bson_iter_find_descendant(&it, "students.s2.grade.points", &f));
  ck_assert(BSON_ITER_HOLDS_DOUBLE(&f) && bson_iter_double(&f) == 87.5);
  ck_assert(bson_iter_init(&it, &b) && bson_iter_find_descendant(&it, "students.s3.grade.points", &f));
  ck_assert(BSON_ITER_HOLDS_NULL(&f));
  ck_assert(bson_iter_init(&it, &b) && bson_iter_find_descendant(&it, "students.s3.grade.feedback", &f));
  ck_assert(BSON_ITER_HOLDS_NULL(&f));
  ck_assert(bson_iter_init(&it, &b) && bson_iter_find_descendant(&it, "students.s3.grade.v", &f));
  ck_assert(BSON_ITER_HOLDS_INT64(&f) && bson_iter_int64(&f) == 9007199254740991LL);
  const char *counts[] = {"counts.assigned", "counts.submitted", "counts.returned", "counts.graded"};
  const int32_t want[] = {1, 0, 1, 1};
  for (int i = 0; i < 4; i++) {
    ck_assert(bson_iter_init(&it, &b) && bson_iter_find_descendant(&it, counts[i], &f));
    ck_assert(BSON_ITER_HOLDS_INT32(&f));
    ck_assert_int_eq(bson_iter_int32(&f), want[i]);
  }
  bson_destroy(&b);
  model_aggregate_destroy(a);
}
END_TEST

static const char RICH_JSON[] =
    "{\"_id\":\"t1/a1\",\"tenant\":\"t1\",\"assignment\":\"a1\","
    "\"header\":{\"class\":\"c1\",\"title\":\"Essay \\\"1\\\"\\n\xc3\xa9\",\"status\":\"published\","
    "\"dueAt\":\"2026-09-08T23:59:59.999Z\",\"points\":95.5,\"v\":2,\"c\":\"cmd-h2\"},"
    "\"students\":{"
    "\"s1\":{\"member\":{\"assigned\":false,\"v\":2,\"c\":\"r-s1\"},"
    "\"submission\":{\"status\":\"working\",\"submittedAt\":null,\"returnedAt\":null,\"v\":1,\"c\":\"x-s1\"}},"
    "\"s2\":{\"member\":{\"assigned\":true,\"v\":1,\"c\":\"r-s2\"},"
    "\"submission\":{\"status\":\"returned\",\"submittedAt\":\"2026-09-05T10:00:00.000Z\","
    "\"returnedAt\":\"2026-09-06T11:30:00.500Z\",\"v\":3,\"c\":\"x-s2\"},"
    "\"grade\":{\"points\":87.5,\"feedback\":\"Good \\\\ work\",\"v\":1,\"c\":\"g-s2\"}},"
    "\"s3\":{\"grade\":{\"points\":null,\"feedback\":null,\"v\":9007199254740991,\"c\":\"g-s3\"}}},"
    "\"counts\":{\"assigned\":1,\"submitted\":0,\"returned\":1,\"graded\":1},"
    "\"rev\":12,\"updatedAt\":\"2026-09-01T00:00:00.000Z\"}\n";

START_TEST(test_json_rich) {
  model_aggregate_t *a = rich();
  model_buf_t b = MODEL_BUF_INIT;
  model_buf_puts(&b, "prefix|");
  model_codec_to_json(a, 12, UPDATED_AT, &b);
  ck_assert_str_eq(b.data + 7, RICH_JSON);
  ck_assert_uint_eq(b.len, 7 + strlen(RICH_JSON));
  model_buf_destroy(&b);
  model_aggregate_destroy(a);
}
END_TEST

START_TEST(test_json_empty_and_deleted) {
  model_aggregate_t *a = model_aggregate_new("t-9", 3, "A_1", 3);
  model_buf_t b = MODEL_BUF_INIT;
  model_codec_to_json(a, 1, 0, &b);
  ck_assert_str_eq(b.data, "{\"_id\":\"t-9/A_1\",\"tenant\":\"t-9\",\"assignment\":\"A_1\",\"header\":null,"
                           "\"students\":{},\"counts\":{\"assigned\":0,\"submitted\":0,\"returned\":0,\"graded\":0},"
                           "\"rev\":1,\"updatedAt\":\"1970-01-01T00:00:00.000Z\"}\n");
  fx_deleted(&cmd, "t-9", "A_1", 1, "d!~");
  model_aggregate_apply(a, &cmd);
  fx_upsert(&cmd, "t-9", "A_1", 1, "d!}", "c", "Draft", MODEL_ASSIGNMENT_DRAFT, false, 0, false, 0);
  model_aggregate_apply(a, &cmd); /* "d!}" < "d!~": stale */
  model_buf_clear(&b);
  model_codec_to_json(a, 2, ts("9999-12-31T23:59:59.999Z"), &b);
  ck_assert_str_eq(b.data, "{\"_id\":\"t-9/A_1\",\"tenant\":\"t-9\",\"assignment\":\"A_1\","
                           "\"header\":{\"status\":\"deleted\",\"v\":1,\"c\":\"d!~\"},"
                           "\"students\":{},\"counts\":{\"assigned\":0,\"submitted\":0,\"returned\":0,\"graded\":0},"
                           "\"rev\":2,\"updatedAt\":\"9999-12-31T23:59:59.999Z\"}\n");
  model_aggregate_destroy(a);
  model_buf_destroy(&b);
}
END_TEST

START_TEST(test_json_dates_extremes) {
  model_aggregate_t *a = model_aggregate_new(T, 2, A, 2);
  fx_upsert(&cmd, T, A, 1, "h", "c", "t", MODEL_ASSIGNMENT_CLOSED, true, ts("0001-01-01T00:00:00Z"), true, 0);
  model_aggregate_apply(a, &cmd);
  fx_submission(&cmd, T, A, "s", 1, "x", MODEL_SUBMISSION_SUBMITTED, true, ts("9999-12-31T23:59:59.999999999Z"),
                true, ts("2000-02-29T12:00:00.1Z"));
  model_aggregate_apply(a, &cmd);
  model_buf_t b = MODEL_BUF_INIT;
  model_codec_to_json(a, 1, ts("0001-01-01T00:00:00.000Z"), &b);
  ck_assert_ptr_nonnull(strstr(b.data, "\"dueAt\":\"0001-01-01T00:00:00.000Z\",\"points\":0,"));
  ck_assert_ptr_nonnull(strstr(b.data, "\"submittedAt\":\"9999-12-31T23:59:59.999Z\","));
  ck_assert_ptr_nonnull(strstr(b.data, "\"returnedAt\":\"2000-02-29T12:00:00.100Z\","));
  ck_assert_ptr_nonnull(strstr(b.data, "\"updatedAt\":\"0001-01-01T00:00:00.000Z\"}\n"));
  /* and the same dates survive BSON */
  bson_t d1, d2;
  to_bson(a, 1, &d1);
  model_aggregate_t *r = model_codec_from_bson(&d1, NULL, NULL);
  ck_assert_ptr_nonnull(r);
  to_bson(r, 1, &d2);
  assert_same_bson(&d1, &d2);
  bson_destroy(&d1);
  bson_destroy(&d2);
  model_aggregate_destroy(r);
  model_aggregate_destroy(a);
  model_buf_destroy(&b);
}
END_TEST

static void check_double(double v, const char *want) {
  model_buf_t b = MODEL_BUF_INIT;
  model_codec_json_double(&b, v);
  ck_assert_msg(!strcmp(b.data, want), "%.17g: got %s, want %s", v, b.data, want);
  model_buf_destroy(&b);
}

START_TEST(test_json_double) {
  check_double(95.5, "95.5");
  check_double(100, "100");
  check_double(0.1, "0.1");
  check_double(0, "0");
  check_double(-0.0, "-0");
  check_double(10000, "10000");
  check_double(0.29, "0.29");
  check_double(1.0 / 3, "0.3333333333333333");
  check_double(2.0 / 3, "0.6666666666666666");
  check_double(0.1 + 0.2, "0.30000000000000004");
  check_double(9999.995, "9999.995");
  check_double(1e21, "1e+21");
  check_double(1e-7, "1e-07");
  check_double(NAN, "null");
  check_double(INFINITY, "null");
  /* every output reads back exactly */
  uint64_t x = 88172645463325252ULL;
  for (int i = 0; i < 20000; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    double v = (double)(x % 100000000) / (double)(1 + x % 997);
    model_buf_t b = MODEL_BUF_INIT;
    model_codec_json_double(&b, v);
    ck_assert(strtod(b.data, NULL) == v);
    model_buf_destroy(&b);
  }
}
END_TEST

/* ---- from_bson rejects documents that do not have the stored shape ---- */

static bson_t *good_doc(void) {
  model_aggregate_t *a = rich();
  bson_t *b = bson_new();
  ck_assert(model_codec_to_bson(a, 5, UPDATED_AT, b));
  model_aggregate_destroy(a);
  return b;
}

/* Copies doc with one dotted path replaced by a value from `json`, or removed if json is NULL. */
static void copy_replacing(const bson_t *src, bson_t *dst, const char *path, const bson_t *value) {
  bson_iter_t it;
  ck_assert(bson_iter_init(&it, src));
  size_t plen = strcspn(path, ".");
  bool found = false;
  while (bson_iter_next(&it)) {
    const char *k = bson_iter_key(&it);
    if (strlen(k) != plen || strncmp(k, path, plen)) {
      ck_assert(bson_append_iter(dst, k, -1, &it));
      continue;
    }
    found = true;
    if (path[plen] == '.') {
      ck_assert(BSON_ITER_HOLDS_DOCUMENT(&it));
      uint32_t len;
      const uint8_t *data;
      bson_iter_document(&it, &len, &data);
      bson_t sub, child;
      ck_assert(bson_init_static(&sub, data, len));
      ck_assert(bson_append_document_begin(dst, k, -1, &child));
      copy_replacing(&sub, &child, path + plen + 1, value);
      ck_assert(bson_append_document_end(dst, &child));
    } else if (value) {
      bson_iter_t v;
      ck_assert(bson_iter_init_find(&v, value, "v"));
      ck_assert(bson_append_iter(dst, k, -1, &v));
    }
  }
  if (!found && value && path[plen] == '\0') {
    bson_iter_t v;
    ck_assert(bson_iter_init_find(&v, value, "v"));
    ck_assert(bson_append_iter(dst, path, -1, &v));
  }
}

static void expect_bad(const char *path, const char *json_value, const char *msg_part) {
  bson_t *src = good_doc(), dst = BSON_INITIALIZER;
  bson_t *value = NULL;
  bson_error_t berr;
  if (json_value) {
    char wrapped[512];
    snprintf(wrapped, sizeof wrapped, "{\"v\": %s}", json_value);
    value = bson_new_from_json((const uint8_t *)wrapped, -1, &berr);
    ck_assert_msg(value != NULL, "%s", berr.message);
  }
  copy_replacing(src, &dst, path, value);
  model_error_t err;
  int64_t rev = -1;
  model_aggregate_t *a = model_codec_from_bson(&dst, &rev, &err);
  ck_assert_msg(a == NULL, "accepted %s = %s", path, json_value ? json_value : "(absent)");
  ck_assert_int_eq(err.code, MODEL_ERROR_BAD_DOCUMENT);
  ck_assert_msg(strstr(err.message, msg_part) != NULL, "message '%s' lacks '%s'", err.message, msg_part);
  ck_assert_int_eq(rev, -1);
  bson_destroy(src);
  bson_destroy(&dst);
  bson_destroy(value);
}

static void expect_good(const char *path, const char *json_value) {
  bson_t *src = good_doc(), dst = BSON_INITIALIZER;
  bson_t *value = NULL;
  if (json_value) {
    char wrapped[512];
    snprintf(wrapped, sizeof wrapped, "{\"v\": %s}", json_value);
    value = bson_new_from_json((const uint8_t *)wrapped, -1, NULL);
    ck_assert_ptr_nonnull(value);
  }
  copy_replacing(src, &dst, path, value);
  model_error_t err;
  model_aggregate_t *a = model_codec_from_bson(&dst, NULL, &err);
  ck_assert_msg(a != NULL, "rejected %s = %s: %s", path, json_value ? json_value : "(absent)", err.message);
  model_aggregate_destroy(a);
  bson_destroy(src);
  bson_destroy(&dst);
  bson_destroy(value);
}

START_TEST(test_bson_decode_rejects) {
  expect_good("extra", "1"); /* unknown keys are ignored */
  expect_bad("_id", NULL, "_id");
  expect_bad("_id", "\"t1/a2\"", "_id");
  expect_bad("_id", "5", "_id");
  expect_bad("tenant", "\"t 1\"", "tenant");
  expect_bad("rev", NULL, "rev");
  expect_bad("rev", "{\"$numberLong\": \"0\"}", "rev");
  expect_bad("rev", "\"1\"", "rev");
  expect_bad("updatedAt", "1", "updatedAt");
  expect_bad("counts", NULL, "counts");
  expect_bad("counts.graded", "{\"$numberLong\": \"1\"}", "counts.graded");
  expect_bad("header", NULL, "header");
  expect_bad("header", "[]", "header");
  expect_bad("header.status", "\"archived\"", "header.status");
  expect_bad("header.v", "{\"$numberLong\": \"0\"}", "header.v");
  expect_bad("header.v", "{\"$numberLong\": \"9007199254740992\"}", "header.v");
  expect_bad("header.v", "1.0", "header.v");
  expect_bad("header.c", "\"\"", "header.c");
  expect_bad("header.c", "\"a b\"", "header.c");
  expect_bad("header.class", "\"c/1\"", "header.class");
  expect_bad("header.title", "\"\"", "header.title");
  expect_bad("header.dueAt", "\"2026-01-01T00:00:00Z\"", "header.dueAt");
  expect_bad("header.dueAt", "{\"$date\": {\"$numberLong\": \"-62135596800001\"}}", "header.dueAt");
  expect_bad("header.points", "10000.5", "header.points");
  expect_bad("header.points", "\"1\"", "header.points");
  expect_bad("students", NULL, "students");
  expect_bad("students.s1", "1", "students.s1");
  expect_bad("students.s1.member", "{\"v\": 1, \"c\": \"x\"}", "students.s1.member.assigned");
  expect_bad("students.s2.submission.status", "\"lost\"", "students.s2.submission.status");
  expect_bad("students.s2.submission.returnedAt", "0", "returnedAt");
  expect_bad("students.s2.grade.feedback", "7", "feedback");
  expect_bad("students.s2.grade.v", NULL, "students.s2.grade.v");
  expect_bad("students.s$", "{\"member\": {\"assigned\": true, \"v\": 1, \"c\": \"x\"}}", "not an id");
  /* lenient where nothing is lost: Int32 versions, integer points, absent optional values */
  expect_good("header.v", "3");
  expect_good("header.points", "{\"$numberLong\": \"12\"}");
  expect_good("header.dueAt", NULL);
  expect_good("students.s2.grade.feedback", NULL);
  expect_good("rev", "4");
  expect_good("students.s2.extra", "{}");
}
END_TEST

/* A stored student with no slots (`"s1": {}`, or only keys this version
 * does not know) is a student with no member, submission or grade: the
 * document decodes, that student has no slot, the others are whole, and
 * encoding it again leaves the empty student out. */
START_TEST(test_bson_student_without_slots) {
  static const char *const empties[] = {"{}", "{\"extra\": 1}"};
  for (size_t e = 0; e < sizeof empties / sizeof *empties; e++) {
    bson_t *src = good_doc(), dst = BSON_INITIALIZER;
    char wrapped[64];
    snprintf(wrapped, sizeof wrapped, "{\"v\": %s}", empties[e]);
    bson_t *value = bson_new_from_json((const uint8_t *)wrapped, -1, NULL);
    ck_assert_ptr_nonnull(value);
    copy_replacing(src, &dst, "students.s1", value);
    model_error_t err;
    int64_t rev = -1;
    model_aggregate_t *a = model_codec_from_bson(&dst, &rev, &err);
    ck_assert_msg(a != NULL, "rejected students.s1 = %s: %s", empties[e], err.message);
    ck_assert_int_eq(rev, 5);
    ck_assert_uint_eq(model_aggregate_student_count(a), 2);
    model_student_view_t s;
    model_aggregate_student(a, 0, &s);
    ck_assert_str_eq(s.student, "s2");
    ck_assert(s.has_member && s.has_submission && s.has_grade);
    model_aggregate_student(a, 1, &s);
    ck_assert_str_eq(s.student, "s3");

    /* What the worker would write: the rich document without s1. */
    model_aggregate_t *r = rich();
    model_aggregate_t *w = model_aggregate_new(T, 2, A, 2);
    model_header_view_t h;
    model_aggregate_header(r, &h);
    model_aggregate_put_header(w, &h);
    for (size_t i = 0; i < model_aggregate_student_count(r); i++) {
      model_aggregate_student(r, i, &s);
      if (strcmp(s.student, "s1")) model_aggregate_put_student(w, &s);
    }
    bson_t got = BSON_INITIALIZER, want = BSON_INITIALIZER;
    ck_assert(model_codec_to_bson(a, 6, UPDATED_AT, &got));
    ck_assert(model_codec_to_bson(w, 6, UPDATED_AT, &want));
    assert_same_bson(&got, &want);
    bson_iter_t it, f;
    ck_assert(bson_iter_init(&it, &got) && !bson_iter_find_descendant(&it, "students.s1", &f));
    bson_destroy(&got);
    bson_destroy(&want);
    model_aggregate_destroy(w);
    model_aggregate_destroy(r);
    model_aggregate_destroy(a);
    bson_destroy(value);
    bson_destroy(src);
    bson_destroy(&dst);
  }
}
END_TEST

/* A document whose students are s1 twice: each copy with a member slot or
 * empty (`{}`) as `slotted` says, a slotted s0 and s2 around them. */
static void doc_with_twice_s1(bson_t *doc, const bool slotted[2]) {
  bson_t students;
  bson_append_utf8(doc, "_id", -1, "t1/a1", -1);
  bson_append_utf8(doc, "tenant", -1, "t1", -1);
  bson_append_utf8(doc, "assignment", -1, "a1", -1);
  bson_append_null(doc, "header", -1);
  bson_append_document_begin(doc, "students", -1, &students);
  static const char *const ids[] = {"s0", "s1", "s1", "s2"};
  for (int i = 0; i < 4; i++) {
    bson_t s, m;
    bson_append_document_begin(&students, ids[i], -1, &s);
    if (i == 0 || i == 3 || slotted[i - 1]) {
      bson_append_document_begin(&s, "member", -1, &m);
      bson_append_bool(&m, "assigned", -1, true);
      bson_append_int64(&m, "v", -1, 1 + i);
      bson_append_utf8(&m, "c", -1, "x", -1);
      bson_append_document_end(&s, &m);
    }
    bson_append_document_end(&students, &s);
  }
  bson_append_document_end(doc, &students);
  bson_t counts;
  bson_append_document_begin(doc, "counts", -1, &counts);
  bson_append_int32(&counts, "assigned", -1, 1);
  bson_append_int32(&counts, "submitted", -1, 0);
  bson_append_int32(&counts, "returned", -1, 0);
  bson_append_int32(&counts, "graded", -1, 0);
  bson_append_document_end(doc, &counts);
  bson_append_int64(doc, "rev", -1, 1);
  bson_append_date_time(doc, "updatedAt", -1, 0);
}

/* A student stored twice is a duplicate, whether each copy has slots or is
 * empty. */
START_TEST(test_bson_duplicate_student) {
  static const bool cases[][2] = {{true, true}, {true, false}, {false, true}, {false, false}};
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    bson_t doc = BSON_INITIALIZER;
    doc_with_twice_s1(&doc, cases[c]);
    model_error_t err;
    ck_assert_msg(model_codec_from_bson(&doc, NULL, &err) == NULL, "case %zu decoded", c);
    ck_assert_str_eq(err.message, "students.s1: duplicate key");
    ck_assert_ptr_null(model_codec_from_bson(&doc, NULL, NULL)); /* err may be NULL */
    bson_destroy(&doc);
  }
}
END_TEST

/* The counts as stored (verify checks them; decoding recomputes them). */
START_TEST(test_bson_stored_counts) {
  model_aggregate_t *a = rich();
  bson_t b;
  to_bson(a, 1, &b);
  model_counts_t got, want = model_aggregate_counts(a);
  ck_assert(model_codec_stored_counts(&b, &got));
  ck_assert(!memcmp(&got, &want, sizeof got));
  ck_assert_int_eq(got.assigned, 1);
  bson_destroy(&b);
  /* As stored, not as the slots say; and the shape of section 4 or nothing. */
  bson_t *d = BCON_NEW("counts", "{", "assigned", BCON_INT32(9), "submitted", BCON_INT32(0), "returned",
                       BCON_INT32(2), "graded", BCON_INT32(3), "}");
  ck_assert(model_codec_stored_counts(d, &got));
  ck_assert_int_eq(got.assigned, 9);
  ck_assert_int_eq(got.returned, 2);
  ck_assert_int_eq(got.graded, 3);
  bson_destroy(d);
  d = BCON_NEW("counts", "{", "assigned", BCON_INT64(9), "submitted", BCON_INT32(0), "returned", BCON_INT32(2),
               "graded", BCON_INT32(3), "}");
  ck_assert(!model_codec_stored_counts(d, &got));
  bson_destroy(d);
  d = BCON_NEW("counts", "{", "assigned", BCON_INT32(9), "}");
  ck_assert(!model_codec_stored_counts(d, &got));
  bson_destroy(d);
  d = BCON_NEW("rev", BCON_INT64(1));
  ck_assert(!model_codec_stored_counts(d, &got));
  bson_destroy(d);
  model_aggregate_destroy(a);
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("codec");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_bson_round_trip_identical);
  tcase_add_test(tc, test_bson_types);
  tcase_add_test(tc, test_json_rich);
  tcase_add_test(tc, test_json_empty_and_deleted);
  tcase_add_test(tc, test_json_dates_extremes);
  tcase_add_test(tc, test_json_double);
  tcase_add_test(tc, test_bson_decode_rejects);
  tcase_add_test(tc, test_bson_student_without_slots);
  tcase_add_test(tc, test_bson_duplicate_student);
  tcase_add_test(tc, test_bson_stored_counts);
  suite_add_tcase(s, tc);
  return s;
}
