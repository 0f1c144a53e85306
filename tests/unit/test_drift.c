/* Drift between a rebuilt aggregate and a stored one (models/drift.h):
 * each kind, its path, the precedence of kinds, the counts check, and that
 * only the slots the rebuild touched are compared. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "buf.h"
#include "drift.h"
#include "model_fixtures.h"

#define T "t1"
#define A "a1"

static model_command_t cmd; /* ~6 KiB: keep it off the stack */
static model_drift_t d;

static model_aggregate_t *agg(void) { return model_aggregate_new(T, 2, A, 2); }

static void upsert(model_aggregate_t *a, uint64_t v, const char *id, const char *title, double points) {
  fx_upsert(&cmd, T, A, v, id, "c1", title, MODEL_ASSIGNMENT_PUBLISHED, true, 1788508800000LL, true, points);
  model_aggregate_apply(a, &cmd);
}
static void roster(model_aggregate_t *a, const char *s, uint64_t v, const char *id, bool assigned) {
  fx_roster(&cmd, T, A, s, v, id, assigned);
  model_aggregate_apply(a, &cmd);
}
static void submission(model_aggregate_t *a, const char *s, uint64_t v, const char *id,
                       model_submission_status_t st, int64_t sub_ms) {
  fx_submission(&cmd, T, A, s, v, id, st, true, sub_ms, false, 0);
  model_aggregate_apply(a, &cmd);
}
static void grade(model_aggregate_t *a, const char *s, uint64_t v, const char *id, bool has_points, double p,
                  const char *feedback) {
  fx_grade(&cmd, T, A, s, v, id, has_points, p, feedback);
  model_aggregate_apply(a, &cmd);
}

/* A document with every kind of slot: the rebuilt side of most tests. */
static model_aggregate_t *full(void) {
  model_aggregate_t *a = agg();
  upsert(a, 5, "h5", "Essay", 10);
  roster(a, "s1", 2, "m2", true);
  submission(a, "s1", 3, "u3", MODEL_SUBMISSION_SUBMITTED, 1788300000000LL);
  grade(a, "s1", 4, "g4", true, 9.5, "ok");
  roster(a, "s2", 2, "m2b", true);
  return a;
}

static const model_counts_t *counts_of(const model_aggregate_t *a) {
  static model_counts_t c;
  c = model_aggregate_counts(a);
  return &c;
}

static void expect(model_drift_kind_t kind, const char *path) {
  ck_assert_str_eq(model_drift_kind_name(d.kind), model_drift_kind_name(kind));
  if (path) ck_assert_str_eq(d.path[kind], path);
}

START_TEST(test_same_document_is_no_drift) {
  model_aggregate_t *r = full(), *s = full();
  ck_assert_int_eq(model_drift_compare(r, s, counts_of(s), &d), MODEL_DRIFT_NONE);
  for (int k = 0; k < MODEL_DRIFT_KINDS; k++) ck_assert_uint_eq(d.slots[k], 0);
  model_buf_t b = MODEL_BUF_INIT;
  model_drift_detail(&d, &b);
  ck_assert_uint_eq(b.len, 0);
  model_aggregate_destroy(r);
  model_aggregate_destroy(s);
}
END_TEST

START_TEST(test_missing_document) {
  model_aggregate_t *r = full();
  ck_assert_int_eq(model_drift_compare(r, NULL, NULL, &d), MODEL_DRIFT_MISSING);
  expect(MODEL_DRIFT_MISSING, "header");
  ck_assert_uint_eq(d.slots[MODEL_DRIFT_MISSING], 5);
  model_aggregate_destroy(r);
  /* Without a header the first slot is the first student's. */
  r = agg();
  grade(r, "s9", 1, "g", false, 0, NULL);
  roster(r, "s3", 1, "m", true);
  model_drift_compare(r, NULL, NULL, &d);
  expect(MODEL_DRIFT_MISSING, "students.s3.member");
  ck_assert_uint_eq(d.slots[MODEL_DRIFT_MISSING], 2);
  model_aggregate_destroy(r);
}
END_TEST

START_TEST(test_store_behind_older_or_absent_slot) {
  model_aggregate_t *r = full();
  /* An older grade stamp. */
  model_aggregate_t *s = full();
  model_aggregate_destroy(s);
  s = agg();
  upsert(s, 5, "h5", "Essay", 10);
  roster(s, "s1", 2, "m2", true);
  submission(s, "s1", 3, "u3", MODEL_SUBMISSION_SUBMITTED, 1788300000000LL);
  grade(s, "s1", 3, "g3", true, 1, NULL);
  roster(s, "s2", 2, "m2b", true);
  model_drift_compare(r, s, counts_of(s), &d);
  expect(MODEL_DRIFT_STORE_BEHIND, "students.s1.grade");
  ck_assert_uint_eq(d.slots[MODEL_DRIFT_STORE_BEHIND], 1);
  ck_assert_ptr_nonnull(strstr(d.note[MODEL_DRIFT_STORE_BEHIND], "(3, \"g3\") < rebuilt (4, \"g4\")"));
  model_aggregate_destroy(s);
  /* An absent student (all its slots), then an absent header. */
  s = agg();
  upsert(s, 5, "h5", "Essay", 10);
  roster(s, "s1", 2, "m2", true);
  submission(s, "s1", 3, "u3", MODEL_SUBMISSION_SUBMITTED, 1788300000000LL);
  grade(s, "s1", 4, "g4", true, 9.5, "ok");
  model_drift_compare(r, s, counts_of(s), &d);
  expect(MODEL_DRIFT_STORE_BEHIND, "students.s2.member");
  ck_assert_ptr_nonnull(strstr(d.note[MODEL_DRIFT_STORE_BEHIND], "not stored"));
  model_aggregate_destroy(s);
  s = agg();
  roster(s, "s1", 2, "m2", true);
  model_drift_compare(r, s, counts_of(s), &d);
  expect(MODEL_DRIFT_STORE_BEHIND, "header");
  ck_assert_uint_eq(d.slots[MODEL_DRIFT_STORE_BEHIND], 4); /* header, s1 submission and grade, s2 member */
  model_aggregate_destroy(s);
  model_aggregate_destroy(r);
}
END_TEST

START_TEST(test_store_ahead) {
  model_aggregate_t *r = full(), *s = full();
  roster(s, "s2", 7, "m7", false);
  model_drift_compare(r, s, counts_of(s), &d);
  expect(MODEL_DRIFT_STORE_AHEAD, "students.s2.member");
  ck_assert_ptr_nonnull(strstr(d.note[MODEL_DRIFT_STORE_AHEAD], "(7, \"m7\") > rebuilt (2, \"m2b\")"));
  model_aggregate_destroy(r);
  model_aggregate_destroy(s);
}
END_TEST

START_TEST(test_stamp_ties_break_on_the_command_id) {
  model_stamp_t a = {3, "b", 1}, b = {3, "a", 1}, c = {4, "a", 1};
  ck_assert_int_gt(model_stamp_compare(&a, &b), 0);
  ck_assert_int_lt(model_stamp_compare(&b, &a), 0);
  ck_assert_int_lt(model_stamp_compare(&a, &c), 0);
  ck_assert_int_eq(model_stamp_compare(&a, &a), 0);
  model_aggregate_t *r = full(), *s = agg();
  upsert(s, 5, "h4", "Essay", 10); /* same version, smaller id */
  model_drift_compare(r, s, NULL, &d);
  ck_assert_str_eq(d.path[MODEL_DRIFT_STORE_BEHIND], "header");
  model_aggregate_destroy(s);
  s = full();
  model_aggregate_destroy(r);
  r = agg();
  upsert(r, 5, "h4", "Essay", 10);
  model_drift_compare(r, s, NULL, &d);
  expect(MODEL_DRIFT_STORE_AHEAD, "header");
  model_aggregate_destroy(r);
  model_aggregate_destroy(s);
}
END_TEST

/* Equal stamps, each value field changed in turn: differs at that slot. */
START_TEST(test_differs_each_value) {
  model_aggregate_t *r = full();
  struct {
    const char *path;
    int which;
  } cases[] = {{"header", 0},          {"header", 1},          {"students.s1.member", 2}, {"students.s1.submission", 3},
               {"students.s1.submission", 4}, {"students.s1.grade", 5}, {"students.s1.grade", 6},
               {"students.s1.grade", 7}};
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    model_aggregate_t *s = agg();
    int w = cases[i].which;
    upsert(s, 5, "h5", w == 0 ? "Essay!" : "Essay", w == 1 ? 11 : 10);
    roster(s, "s1", 2, "m2", w != 2);
    submission(s, "s1", 3, "u3", w == 3 ? MODEL_SUBMISSION_RETURNED : MODEL_SUBMISSION_SUBMITTED,
               w == 4 ? 1788300000001LL : 1788300000000LL);
    grade(s, "s1", 4, "g4", w != 5, 9.5 + (w == 6), w == 7 ? "ok." : "ok");
    roster(s, "s2", 2, "m2b", true);
    model_drift_compare(r, s, counts_of(s), &d);
    expect(MODEL_DRIFT_DIFFERS, cases[i].path);
    ck_assert_uint_eq(d.slots[MODEL_DRIFT_DIFFERS], 1);
    ck_assert_ptr_nonnull(strstr(d.note[MODEL_DRIFT_DIFFERS], "different values"));
    model_aggregate_destroy(s);
  }
  /* deleted against upserted under one stamp */
  model_aggregate_t *s = full();
  model_aggregate_destroy(r);
  r = agg();
  fx_deleted(&cmd, T, A, 5, "h5");
  model_aggregate_apply(r, &cmd);
  model_drift_compare(r, s, NULL, &d);
  expect(MODEL_DRIFT_DIFFERS, "header");
  model_aggregate_destroy(r);
  model_aggregate_destroy(s);
}
END_TEST

START_TEST(test_counts_against_the_stored_slots) {
  model_aggregate_t *r = full(), *s = full();
  model_counts_t c = model_aggregate_counts(s);
  ck_assert_int_eq(c.assigned, 2);
  c.graded++;
  model_drift_compare(r, s, &c, &d);
  expect(MODEL_DRIFT_DIFFERS, "counts");
  ck_assert_ptr_nonnull(strstr(d.note[MODEL_DRIFT_DIFFERS], "stored assigned=2 submitted=1 returned=0 graded=2"));
  ck_assert_ptr_nonnull(strstr(d.note[MODEL_DRIFT_DIFFERS], "its slots give assigned=2 submitted=1 returned=0 graded=1"));
  /* Without stored counts nothing is checked. */
  ck_assert_int_eq(model_drift_compare(r, s, NULL, &d), MODEL_DRIFT_NONE);
  /* counts come after every slot: a differing slot is the first path */
  model_aggregate_destroy(s);
  s = full();
  roster(s, "s1", 2, "m2", true);
  model_aggregate_destroy(s);
  s = agg();
  upsert(s, 5, "h5", "Essay", 10);
  roster(s, "s1", 2, "m2", true);
  submission(s, "s1", 3, "u3", MODEL_SUBMISSION_SUBMITTED, 1788300000000LL);
  grade(s, "s1", 4, "g4", true, 9.5, "changed");
  roster(s, "s2", 2, "m2b", true);
  model_drift_compare(r, s, &c, &d);
  expect(MODEL_DRIFT_DIFFERS, "students.s1.grade");
  ck_assert_uint_eq(d.slots[MODEL_DRIFT_DIFFERS], 2);
  model_aggregate_destroy(r);
  model_aggregate_destroy(s);
}
END_TEST

/* Slots and students no command read touched are not compared. */
START_TEST(test_only_touched_slots) {
  model_aggregate_t *r = agg(), *s = full();
  grade(r, "s1", 4, "g4", true, 9.5, "ok");
  roster(s, "s0", 9, "x", true); /* a stored student before s1 that the rebuild lacks */
  roster(s, "s3", 9, "y", true);
  ck_assert_int_eq(model_drift_compare(r, s, counts_of(s), &d), MODEL_DRIFT_NONE);
  model_aggregate_destroy(r);
  model_aggregate_destroy(s);
}
END_TEST

/* missing > store_behind > differs > store_ahead; the detail names the others. */
START_TEST(test_precedence_and_detail) {
  model_aggregate_t *r = full(), *s = agg();
  upsert(s, 9, "h9", "Essay", 10);                                       /* ahead at header */
  roster(s, "s1", 2, "m2", false);                                       /* differs at s1.member */
  submission(s, "s1", 3, "u3", MODEL_SUBMISSION_SUBMITTED, 1788300000000LL);
  grade(s, "s1", 4, "g4", true, 9.5, "ok");
  roster(s, "s2", 1, "m1", true);                                        /* behind at s2.member */
  model_drift_compare(r, s, counts_of(s), &d);
  expect(MODEL_DRIFT_STORE_BEHIND, "students.s2.member");
  ck_assert_str_eq(d.path[MODEL_DRIFT_DIFFERS], "students.s1.member");
  ck_assert_str_eq(d.path[MODEL_DRIFT_STORE_AHEAD], "header");
  model_buf_t b = MODEL_BUF_INIT;
  model_drift_detail(&d, &b);
  model_buf_putc(&b, '\0');
  ck_assert_str_eq(b.data, "1 slot: stored stamp (1, \"m1\") < rebuilt (2, \"m2b\"); also differs: 1 slot, first "
                           "students.s1.member; also store_ahead: 1 slot, first header");
  model_buf_destroy(&b);
  /* without the behind slot: differs wins over store_ahead */
  roster(s, "s2", 2, "m2b", true);
  model_drift_compare(r, s, counts_of(s), &d);
  expect(MODEL_DRIFT_DIFFERS, "students.s1.member");
  model_aggregate_destroy(s);
  /* missing wins over everything (there is nothing else to compare) */
  model_drift_compare(r, NULL, NULL, &d);
  expect(MODEL_DRIFT_MISSING, "header");
  ck_assert_uint_eq(d.slots[MODEL_DRIFT_STORE_BEHIND] + d.slots[MODEL_DRIFT_DIFFERS] + d.slots[MODEL_DRIFT_STORE_AHEAD], 0);
  model_aggregate_destroy(r);
  ck_assert_str_eq(model_drift_kind_name(MODEL_DRIFT_STORE_AHEAD), "store_ahead");
  ck_assert_str_eq(model_drift_kind_name(MODEL_DRIFT_STORE_BEHIND), "store_behind");
  ck_assert_str_eq(model_drift_kind_name(MODEL_DRIFT_DIFFERS), "differs");
  ck_assert_str_eq(model_drift_kind_name(MODEL_DRIFT_MISSING), "missing");
}
END_TEST

/* A stored document that does not decode is one `differs` finding: its path
 * is the field the decoder names, its detail the decoder's reason. */
START_TEST(test_unreadable_document) {
  ck_assert_int_eq(model_drift_unreadable("rev: expected an Int64", &d), MODEL_DRIFT_DIFFERS);
  expect(MODEL_DRIFT_DIFFERS, "rev");
  ck_assert(d.unreadable);
  ck_assert_uint_eq(d.slots[MODEL_DRIFT_MISSING] + d.slots[MODEL_DRIFT_STORE_BEHIND] + d.slots[MODEL_DRIFT_STORE_AHEAD], 0);
  model_buf_t b = MODEL_BUF_INIT;
  model_drift_detail(&d, &b);
  model_buf_putc(&b, '\0');
  ck_assert_str_eq(b.data, "stored document does not decode: rev: expected an Int64");
  model_buf_destroy(&b);
  model_drift_unreadable("students.s1.grade.v: expected an integer", &d);
  expect(MODEL_DRIFT_DIFFERS, "students.s1.grade.v");
  /* a reason that names no field, or a name too long for a path */
  model_drift_unreadable("out of memory", &d);
  expect(MODEL_DRIFT_DIFFERS, "document");
  char reason[200];
  memset(reason, 'x', 150);
  snprintf(reason + 150, sizeof reason - 150, ": too long");
  model_drift_unreadable(reason, &d);
  expect(MODEL_DRIFT_DIFFERS, "document");
  ck_assert_str_eq(d.note[MODEL_DRIFT_DIFFERS], reason);
  /* a comparison afterwards is not marked unreadable */
  model_aggregate_t *r = full();
  model_drift_compare(r, NULL, NULL, &d);
  ck_assert(!d.unreadable);
  model_aggregate_destroy(r);
}
END_TEST

/* A 64-byte student id and a 128-byte command id fit the path and note. */
START_TEST(test_longest_ids_fit) {
  char sid[65], cid[129];
  memset(sid, 's', 64);
  sid[64] = '\0';
  memset(cid, 'c', 128);
  cid[128] = '\0';
  model_aggregate_t *r = agg(), *s = agg();
  fx_submission(&cmd, T, A, sid, 2, cid, MODEL_SUBMISSION_WORKING, false, 0, false, 0);
  model_aggregate_apply(r, &cmd);
  fx_submission(&cmd, T, A, sid, 1, cid, MODEL_SUBMISSION_WORKING, false, 0, false, 0);
  model_aggregate_apply(s, &cmd);
  model_drift_compare(r, s, NULL, &d);
  char want[128];
  snprintf(want, sizeof want, "students.%s.submission", sid);
  expect(MODEL_DRIFT_STORE_BEHIND, want);
  ck_assert_ptr_nonnull(strstr(d.note[MODEL_DRIFT_STORE_BEHIND], cid));
  ck_assert_ptr_nonnull(strstr(strstr(d.note[MODEL_DRIFT_STORE_BEHIND], cid) + 128, cid)); /* both stamps whole */
  model_aggregate_destroy(r);
  model_aggregate_destroy(s);
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("drift");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_same_document_is_no_drift);
  tcase_add_test(tc, test_missing_document);
  tcase_add_test(tc, test_store_behind_older_or_absent_slot);
  tcase_add_test(tc, test_store_ahead);
  tcase_add_test(tc, test_stamp_ties_break_on_the_command_id);
  tcase_add_test(tc, test_differs_each_value);
  tcase_add_test(tc, test_counts_against_the_stored_slots);
  tcase_add_test(tc, test_only_touched_slots);
  tcase_add_test(tc, test_precedence_and_detail);
  tcase_add_test(tc, test_longest_ids_fit);
  tcase_add_test(tc, test_unreadable_document);
  suite_add_tcase(s, tc);
  return s;
}
