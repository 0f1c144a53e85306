/* The stored document's size as the merge keeps it (docsize.h): always the
 * size of the codec's real encoding, through every way a slot changes
 * (commands, merges of both kinds, decoding, cloning), and the limit that
 * model_aggregate_apply_within holds a command to. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "model_fixtures.h"

#define T "t1"
#define A "a1"

static model_command_t cmd;

static size_t encoded(const model_aggregate_t *a) {
  bson_t b = BSON_INITIALIZER;
  ck_assert(model_codec_to_bson(a, 123456789, 1788220800000LL, &b));
  size_t n = b.len;
  bson_destroy(&b);
  return n;
}

static void assert_tracked(const model_aggregate_t *a) { ck_assert_uint_eq(model_aggregate_doc_size(a), encoded(a)); }

/* A deterministic generator (xorshift), so that a failure replays. */
static uint64_t rng;
static uint64_t next(void) {
  rng ^= rng << 13;
  rng ^= rng >> 7;
  rng ^= rng << 17;
  return rng;
}
static size_t below(size_t n) { return (size_t)(next() % n); }

static void fill(char *s, size_t n, char c) {
  memset(s, c, n);
  s[n] = '\0';
}

static double points(void) {
  static const double v[] = {0, 1, 87.5, 99.99, 0.1, 1.0 / 3, 10000, 1e-9, 4096.125};
  return v[below(sizeof v / sizeof v[0])];
}

/* A random valid command for (T, a): every type, every optional value
 * present or null, ids and strings of random lengths. */
static size_t nstudents = 40;
static void random_command(const char *a, model_command_t *c) {
  char sid[MODEL_ID_MAX + 1], cid[MODEL_CMD_ID_MAX + 1], text[MODEL_FEEDBACK_MAX + 1];
  snprintf(sid, sizeof sid, "s%zu", below(nstudents));
  if (below(8) == 0) fill(sid + strlen(sid), below(MODEL_ID_MAX - 4), 'x');
  fill(cid, 1 + below(below(4) ? 12 : MODEL_CMD_ID_MAX), (char)('a' + below(26)));
  uint64_t v = 1 + below(below(10) ? 50 : 1000000);
  int64_t date = (int64_t)below(4000000000000ULL);
  switch (below(6)) {
  case 0:
    fill(text, 1 + below(below(4) ? 40 : MODEL_TITLE_MAX), 't');
    fx_upsert(c, T, a, v, cid, below(2) ? "c1" : "class-with-a-longer-id", text,
              (model_assignment_status_t)below(3), below(2), date, below(2), points());
    break;
  case 1:
    fx_deleted(c, T, a, v, cid);
    break;
  case 2:
    fx_roster(c, T, a, sid, v, cid, below(2));
    break;
  case 3:
    fx_submission(c, T, a, sid, v, cid, (model_submission_status_t)below(4), below(2), date, below(2), date + 1);
    break;
  default:
    fill(text, below(below(4) ? 60 : MODEL_FEEDBACK_MAX + 1), 'f');
    fx_grade(c, T, a, sid, v, cid, below(2), points(), below(3) ? text : NULL);
    break;
  }
}

START_TEST(tracked_size_is_the_encoded_size) {
  rng = 0x9e3779b97f4a7c15ULL;
  for (int round = 0; round < 60; round++) {
    model_aggregate_t *a = model_aggregate_new(T, 2, A, 2), *b = model_aggregate_new(T, 2, A, 2);
    assert_tracked(a);
    /* small aggregates (one inline run), then large ones (chunked) */
    nstudents = round < 40 ? 40 : 400;
    size_t n = 1 + below(round < 40 ? 60 : 2000);
    for (size_t i = 0; i < n; i++) {
      random_command(A, &cmd);
      model_aggregate_apply(below(2) ? a : b, &cmd);
      if (i % 7 == 0) assert_tracked(a);
    }
    assert_tracked(a);
    assert_tracked(b);
    /* merges: the linear one (comparable sizes) and slot by slot (a few
     * students into many) */
    model_aggregate_t *c = model_aggregate_clone(a);
    assert_tracked(c);
    model_aggregate_merge(c, b);
    assert_tracked(c);
    model_aggregate_t *few = model_aggregate_new(T, 2, A, 2);
    random_command(A, &cmd);
    model_aggregate_apply(few, &cmd);
    model_aggregate_merge(c, few);
    assert_tracked(c);
    /* decoding a stored document */
    bson_t doc = BSON_INITIALIZER;
    ck_assert(model_codec_to_bson(c, 7, 0, &doc));
    model_aggregate_t *d = model_codec_from_bson(&doc, NULL, NULL);
    ck_assert_ptr_nonnull(d);
    ck_assert_uint_eq(model_aggregate_doc_size(d), doc.len);
    bson_destroy(&doc);
    model_aggregate_destroy(d);
    model_aggregate_destroy(few);
    model_aggregate_destroy(c);
    model_aggregate_destroy(a);
    model_aggregate_destroy(b);
  }
}
END_TEST

START_TEST(ids_of_every_length) {
  char t[MODEL_ID_MAX + 1], a[MODEL_ID_MAX + 1];
  for (size_t n = 1; n <= MODEL_ID_MAX; n += 21) {
    fill(t, n, 'T');
    fill(a, MODEL_ID_MAX + 1 - n, 'A');
    model_aggregate_t *agg = model_aggregate_new(t, strlen(t), a, strlen(a));
    assert_tracked(agg);
    fx_grade(&cmd, t, a, "s1", 1, "g1", true, 5, "ok");
    model_aggregate_apply(agg, &cmd);
    assert_tracked(agg);
    model_aggregate_destroy(agg);
  }
}
END_TEST

/* ---- the limit -------------------------------------------------------------------- */

static model_apply_result_t grade_within(model_aggregate_t *a, const char *sid, uint64_t v, const char *feedback,
                                         size_t limit, size_t *would_be) {
  fx_grade(&cmd, T, A, sid, v, "g", true, 1, feedback);
  return model_aggregate_apply_within(a, &cmd, limit, would_be);
}

START_TEST(at_the_limit_and_one_byte_over) {
  char fb[MODEL_FEEDBACK_MAX + 1];
  fill(fb, 100, 'f');
  model_aggregate_t *a = model_aggregate_new(T, 2, A, 2);
  size_t would_be;
  /* Learn the size a first grade brings, then set the limit exactly there. */
  model_aggregate_t *probe = model_aggregate_clone(a);
  ck_assert_int_eq(grade_within(probe, "s1", 1, fb, SIZE_MAX, &would_be), MODEL_APPLY_APPLIED);
  size_t exact = encoded(probe);
  ck_assert_uint_eq(would_be, exact);
  model_aggregate_destroy(probe);

  ck_assert_int_eq(grade_within(a, "s1", 1, fb, exact - 1, &would_be), MODEL_APPLY_TOO_LARGE);
  ck_assert_uint_eq(would_be, exact);
  ck_assert_uint_eq(model_aggregate_student_count(a), 0); /* the rejected command changed nothing */
  assert_tracked(a);
  ck_assert_int_eq(grade_within(a, "s1", 1, fb, exact, &would_be), MODEL_APPLY_APPLIED);
  ck_assert_uint_eq(model_aggregate_doc_size(a), exact);
  assert_tracked(a);
  /* stale whatever its size: the slot holds a greater stamp */
  ck_assert_int_eq(grade_within(a, "s1", 1, fb, 0, &would_be), MODEL_APPLY_STALE);
  model_aggregate_destroy(a);
}
END_TEST

START_TEST(a_slot_that_grows) {
  char fb[MODEL_FEEDBACK_MAX + 1];
  model_aggregate_t *a = model_aggregate_new(T, 2, A, 2);
  size_t would_be;
  fill(fb, 10, 'f');
  ck_assert_int_eq(grade_within(a, "s1", 1, fb, SIZE_MAX, &would_be), MODEL_APPLY_APPLIED);
  size_t limit = model_aggregate_doc_size(a) + 50;
  /* 50 more bytes of feedback fit exactly; 51 do not */
  fill(fb, 61, 'f');
  ck_assert_int_eq(grade_within(a, "s1", 2, fb, limit, &would_be), MODEL_APPLY_TOO_LARGE);
  ck_assert_uint_eq(would_be, limit + 1);
  model_student_view_t s;
  model_aggregate_student(a, 0, &s);
  ck_assert_uint_eq(s.feedback_len, 10);
  ck_assert_uint_eq(s.grade_stamp.version, 1);
  assert_tracked(a);
  fill(fb, 60, 'f');
  ck_assert_int_eq(grade_within(a, "s1", 2, fb, limit, &would_be), MODEL_APPLY_APPLIED);
  ck_assert_uint_eq(model_aggregate_doc_size(a), limit);
  assert_tracked(a);
  /* a shorter one always fits */
  fill(fb, 5, 'f');
  ck_assert_int_eq(grade_within(a, "s1", 3, fb, limit, &would_be), MODEL_APPLY_APPLIED);
  assert_tracked(a);
  model_aggregate_destroy(a);
}
END_TEST

START_TEST(a_new_student) {
  model_aggregate_t *a = model_aggregate_new(T, 2, A, 2);
  size_t would_be;
  fx_roster(&cmd, T, A, "s1", 1, "r1", true);
  ck_assert_int_eq(model_aggregate_apply(a, &cmd), MODEL_APPLY_APPLIED);
  /* A second student of the same shape adds its element: its frame and its
   * member slot. The limit one byte short refuses it; at the limit it fits. */
  model_aggregate_t *probe = model_aggregate_clone(a);
  fx_roster(&cmd, T, A, "s2", 1, "r1", true);
  ck_assert_int_eq(model_aggregate_apply(probe, &cmd), MODEL_APPLY_APPLIED);
  size_t two = encoded(probe);
  model_aggregate_destroy(probe);
  ck_assert_int_eq(model_aggregate_apply_within(a, &cmd, two - 1, &would_be), MODEL_APPLY_TOO_LARGE);
  ck_assert_uint_eq(would_be, two);
  ck_assert_uint_eq(model_aggregate_student_count(a), 1);
  assert_tracked(a);
  ck_assert_int_eq(model_aggregate_apply_within(a, &cmd, two, &would_be), MODEL_APPLY_APPLIED);
  ck_assert_uint_eq(model_aggregate_student_count(a), 2);
  assert_tracked(a);
  model_aggregate_destroy(a);
}
END_TEST

START_TEST(the_header) {
  char title[MODEL_TITLE_MAX + 1];
  model_aggregate_t *a = model_aggregate_new(T, 2, A, 2);
  size_t would_be, base = model_aggregate_doc_size(a);
  fill(title, MODEL_TITLE_MAX, 't');
  fx_upsert(&cmd, T, A, 1, "h1", "c1", title, MODEL_ASSIGNMENT_PUBLISHED, true, 0, true, 0.1);
  ck_assert_int_eq(model_aggregate_apply_within(a, &cmd, base, &would_be), MODEL_APPLY_TOO_LARGE);
  ck_assert_uint_eq(model_aggregate_doc_size(a), base);
  ck_assert_int_eq(model_aggregate_apply_within(a, &cmd, would_be, &would_be), MODEL_APPLY_APPLIED);
  assert_tracked(a);
  /* deleting shrinks it: always within the size it had */
  fx_deleted(&cmd, T, A, 2, "d2");
  ck_assert_int_eq(model_aggregate_apply_within(a, &cmd, model_aggregate_doc_size(a), &would_be),
                   MODEL_APPLY_APPLIED);
  assert_tracked(a);
  model_aggregate_destroy(a);
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("docsize");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, tracked_size_is_the_encoded_size);
  tcase_add_test(tc, ids_of_every_length);
  tcase_add_test(tc, at_the_limit_and_one_byte_over);
  tcase_add_test(tc, a_slot_that_grows);
  tcase_add_test(tc, a_new_student);
  tcase_add_test(tc, the_header);
  suite_add_tcase(s, tc);
  return s;
}
