/* The aggregate: slots, stamps, counters, merge, equal, clone and direct
 * puts (a slot is replaced iff the offered stamp is greater). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "buf.h"
#include "model_fixtures.h"
#include "zero.h"

#define T "t1"
#define A "a1"

static model_aggregate_t *agg_new(void) {
  model_aggregate_t *a = model_aggregate_new(T, 2, A, 2);
  ck_assert_ptr_nonnull(a);
  return a;
}

static model_command_t cmd; /* ~6 KiB: keep it off the stack */

static model_apply_result_t roster(model_aggregate_t *a, const char *s, uint64_t v, const char *id, bool assigned) {
  fx_roster(&cmd, T, A, s, v, id, assigned);
  return model_aggregate_apply(a, &cmd);
}

static model_apply_result_t submission(model_aggregate_t *a, const char *s, uint64_t v, const char *id,
                                       model_submission_status_t st) {
  fx_submission(&cmd, T, A, s, v, id, st, st != MODEL_SUBMISSION_WORKING, 1788300000000LL,
                st == MODEL_SUBMISSION_RETURNED, 1788400000000LL);
  return model_aggregate_apply(a, &cmd);
}

static model_apply_result_t grade(model_aggregate_t *a, const char *s, uint64_t v, const char *id, bool has_points,
                                  double points, const char *feedback) {
  fx_grade(&cmd, T, A, s, v, id, has_points, points, feedback);
  return model_aggregate_apply(a, &cmd);
}

static model_apply_result_t upsert(model_aggregate_t *a, uint64_t v, const char *id, const char *title) {
  fx_upsert(&cmd, T, A, v, id, "c1", title, MODEL_ASSIGNMENT_PUBLISHED, true, 1788508800000LL, true, 95.5);
  return model_aggregate_apply(a, &cmd);
}

static model_apply_result_t deleted(model_aggregate_t *a, uint64_t v, const char *id) {
  fx_deleted(&cmd, T, A, v, id);
  return model_aggregate_apply(a, &cmd);
}

static void student(const model_aggregate_t *a, const char *id, model_student_view_t *out) {
  size_t n = model_aggregate_student_count(a);
  for (size_t i = 0; i < n; i++) {
    model_aggregate_student(a, i, out);
    if (!strcmp(out->student, id)) return;
  }
  ck_abort_msg("student %s not found", id);
}

START_TEST(test_new_is_empty) {
  model_aggregate_t *a = model_aggregate_new("tenant-1", 8, "asg_9", 5);
  size_t n;
  ck_assert_str_eq(model_aggregate_key(a, &n), "tenant-1/asg_9");
  ck_assert_uint_eq(n, 14);
  ck_assert_str_eq(model_aggregate_tenant(a, &n), "tenant-1"); /* NUL-terminated too */
  ck_assert_uint_eq(n, 8);
  ck_assert_str_eq(model_aggregate_assignment(a, &n), "asg_9");
  ck_assert_uint_eq(n, 5);
  model_header_view_t h;
  model_aggregate_header(a, &h);
  ck_assert(!h.present);
  ck_assert_uint_eq(model_aggregate_student_count(a), 0);
  model_counts_t c = model_aggregate_counts(a);
  ck_assert_int_eq(c.assigned + c.submitted + c.returned + c.graded, 0);
  ck_assert_uint_gt(model_aggregate_memory(a), 0);
  model_aggregate_destroy(a);
  model_aggregate_destroy(NULL);
}
END_TEST

START_TEST(test_header_upsert_view) {
  model_aggregate_t *a = agg_new();
  fx_upsert(&cmd, T, A, 3, "cmd-1", "class_7", "Essay \"one\"", MODEL_ASSIGNMENT_CLOSED, true, -62135596800000LL, true,
            0.29);
  ck_assert_int_eq(model_aggregate_apply(a, &cmd), MODEL_APPLY_APPLIED);
  model_header_view_t h;
  model_aggregate_header(a, &h);
  ck_assert(h.present && !h.deleted);
  ck_assert_uint_eq(h.stamp.version, 3);
  ck_assert_str_eq(h.stamp.id, "cmd-1");
  ck_assert_uint_eq(h.stamp.id_len, 5);
  ck_assert_uint_eq(h.class_len, 7);
  ck_assert_str_eq(h.class_id, "class_7");
  ck_assert_str_eq(h.title, "Essay \"one\"");
  ck_assert_uint_eq(h.title_len, 11);
  ck_assert_int_eq(h.status, MODEL_ASSIGNMENT_CLOSED);
  ck_assert(h.has_due_at);
  ck_assert_int_eq(h.due_at_ms, -62135596800000LL);
  ck_assert(h.has_points);
  ck_assert(h.points == 0.29);

  /* null dueAt and points */
  fx_upsert(&cmd, T, A, 4, "cmd-2", "c", "T", MODEL_ASSIGNMENT_DRAFT, false, 0, false, 0);
  ck_assert_int_eq(model_aggregate_apply(a, &cmd), MODEL_APPLY_APPLIED);
  model_aggregate_header(a, &h);
  ck_assert(!h.has_due_at && !h.has_points);
  ck_assert_int_eq(h.status, MODEL_ASSIGNMENT_DRAFT);
  ck_assert_str_eq(h.title, "T");
  model_aggregate_destroy(a);
}
END_TEST

START_TEST(test_header_stamp_rules) {
  model_aggregate_t *a = agg_new();
  model_header_view_t h;
  ck_assert_int_eq(upsert(a, 5, "m", "v5m"), MODEL_APPLY_APPLIED);
  ck_assert_int_eq(upsert(a, 4, "z", "v4z"), MODEL_APPLY_STALE);     /* lower version, greater id */
  ck_assert_int_eq(upsert(a, 5, "l", "v5l"), MODEL_APPLY_STALE);     /* same version, lower id */
  ck_assert_int_eq(upsert(a, 5, "m", "other"), MODEL_APPLY_STALE);   /* equal stamp changes nothing */
  model_aggregate_header(a, &h);
  ck_assert_str_eq(h.title, "v5m");
  ck_assert_int_eq(upsert(a, 5, "n", "v5n"), MODEL_APPLY_APPLIED);   /* same version, greater id */
  ck_assert_int_eq(upsert(a, 10, "a", "v10a"), MODEL_APPLY_APPLIED); /* numeric, not textual: 10 > 5 */
  model_aggregate_header(a, &h);
  ck_assert_str_eq(h.title, "v10a");
  ck_assert_uint_eq(h.stamp.version, 10);
  model_aggregate_destroy(a);
}
END_TEST

START_TEST(test_header_deleted) {
  model_aggregate_t *a = agg_new();
  model_header_view_t h;
  ck_assert_int_eq(upsert(a, 2, "u2", "x"), MODEL_APPLY_APPLIED);
  ck_assert_int_eq(deleted(a, 3, "d3"), MODEL_APPLY_APPLIED);
  model_aggregate_header(a, &h);
  ck_assert(h.present && h.deleted);
  ck_assert_uint_eq(h.stamp.version, 3);
  ck_assert_str_eq(h.stamp.id, "d3");
  ck_assert_int_eq(upsert(a, 3, "a", "late"), MODEL_APPLY_STALE); /* "a" < "d3" */
  ck_assert_int_eq(deleted(a, 3, "d3"), MODEL_APPLY_STALE);
  ck_assert_int_eq(upsert(a, 4, "u4", "back"), MODEL_APPLY_APPLIED);
  model_aggregate_header(a, &h);
  ck_assert(!h.deleted);
  ck_assert_str_eq(h.title, "back");
  /* a delete on an empty aggregate creates the header */
  model_aggregate_t *b = agg_new();
  ck_assert_int_eq(deleted(b, 1, "d"), MODEL_APPLY_APPLIED);
  model_aggregate_header(b, &h);
  ck_assert(h.present && h.deleted);
  model_aggregate_destroy(a);
  model_aggregate_destroy(b);
}
END_TEST

START_TEST(test_tie_break_bytewise) {
  model_aggregate_t *a = agg_new();
  model_student_view_t s;
  ck_assert_int_eq(roster(a, "s1", 7, "a", true), MODEL_APPLY_APPLIED);
  ck_assert_int_eq(roster(a, "s1", 7, "B", false), MODEL_APPLY_STALE); /* 'B' 0x42 < 'a' 0x61 */
  ck_assert_int_eq(roster(a, "s1", 7, "aa", false), MODEL_APPLY_APPLIED); /* prefix is smaller */
  student(a, "s1", &s);
  ck_assert(!s.assigned);
  ck_assert_str_eq(s.member_stamp.id, "aa");
  ck_assert_int_eq(roster(a, "s1", 7, "a~", true), MODEL_APPLY_APPLIED); /* '~' 0x7e > 'a' */
  ck_assert_int_eq(roster(a, "s1", MODEL_VERSION_MAX, "!", false), MODEL_APPLY_APPLIED);
  ck_assert_int_eq(roster(a, "s1", MODEL_VERSION_MAX - 1, "~~~", true), MODEL_APPLY_STALE);
  student(a, "s1", &s);
  ck_assert_uint_eq(s.member_stamp.version, MODEL_VERSION_MAX);
  ck_assert_str_eq(s.member_stamp.id, "!");
  model_aggregate_destroy(a);
}
END_TEST

START_TEST(test_student_slots_independent) {
  model_aggregate_t *a = agg_new();
  model_student_view_t s;
  ck_assert_int_eq(grade(a, "s1", 1, "g1", true, 87.5, "Good"), MODEL_APPLY_APPLIED);
  student(a, "s1", &s);
  ck_assert(s.has_grade && !s.has_member && !s.has_submission);
  ck_assert_int_eq(submission(a, "s1", 1, "x1", MODEL_SUBMISSION_RETURNED), MODEL_APPLY_APPLIED);
  ck_assert_int_eq(roster(a, "s1", 1, "r1", true), MODEL_APPLY_APPLIED);
  student(a, "s1", &s);
  ck_assert(s.has_member && s.has_submission && s.has_grade);
  ck_assert(s.assigned);
  ck_assert_str_eq(s.member_stamp.id, "r1");
  ck_assert_int_eq(s.submission_status, MODEL_SUBMISSION_RETURNED);
  ck_assert(s.has_submitted_at && s.has_returned_at);
  ck_assert_int_eq(s.submitted_at_ms, 1788300000000LL);
  ck_assert_int_eq(s.returned_at_ms, 1788400000000LL);
  ck_assert_str_eq(s.submission_stamp.id, "x1");
  ck_assert(s.has_points && s.points == 87.5);
  ck_assert(s.has_feedback);
  ck_assert_str_eq(s.feedback, "Good");
  ck_assert_uint_eq(s.feedback_len, 4);
  ck_assert_str_eq(s.grade_stamp.id, "g1");

  /* a version in one slot says nothing about another slot */
  ck_assert_int_eq(submission(a, "s1", 9, "x9", MODEL_SUBMISSION_WORKING), MODEL_APPLY_APPLIED);
  ck_assert_int_eq(grade(a, "s1", 2, "g2", false, 0, ""), MODEL_APPLY_APPLIED);
  ck_assert_int_eq(roster(a, "s1", 1, "r0", false), MODEL_APPLY_STALE);
  student(a, "s1", &s);
  ck_assert(s.assigned);
  ck_assert_int_eq(s.submission_status, MODEL_SUBMISSION_WORKING);
  ck_assert(!s.has_submitted_at && !s.has_returned_at);
  ck_assert(!s.has_points);
  ck_assert(s.has_feedback); /* "" is not null */
  ck_assert_uint_eq(s.feedback_len, 0);
  ck_assert_str_eq(s.feedback, "");
  ck_assert_int_eq(grade(a, "s1", 3, "g3", true, 0, NULL), MODEL_APPLY_APPLIED);
  student(a, "s1", &s);
  ck_assert(s.has_points && s.points == 0 && !s.has_feedback);
  model_aggregate_destroy(a);
}
END_TEST

START_TEST(test_students_sorted_bytewise) {
  model_aggregate_t *a = agg_new();
  const char *ids[] = {"b", "a", "B", "a-", "_", "0", "zz", "a_", "A"};
  const char *sorted[] = {"0", "A", "B", "_", "a", "a-", "a_", "b", "zz"};
  for (size_t i = 0; i < 9; i++) ck_assert_int_eq(roster(a, ids[i], 1, "r", true), MODEL_APPLY_APPLIED);
  ck_assert_int_eq(roster(a, "a", 1, "r", true), MODEL_APPLY_STALE);
  ck_assert_uint_eq(model_aggregate_student_count(a), 9);
  for (size_t i = 0; i < 9; i++) {
    model_student_view_t s;
    model_aggregate_student(a, i, &s);
    ck_assert_str_eq(s.student, sorted[i]);
    ck_assert_uint_eq(s.student_len, strlen(sorted[i]));
  }
  model_aggregate_destroy(a);
}
END_TEST

START_TEST(test_counts) {
  model_aggregate_t *a = agg_new();
  /* s1: assigned, submitted, graded */
  roster(a, "s1", 1, "r", true);
  submission(a, "s1", 1, "x", MODEL_SUBMISSION_SUBMITTED);
  grade(a, "s1", 1, "g", true, 10, NULL);
  /* s2: assigned, returned, grade with null points */
  roster(a, "s2", 1, "r", true);
  submission(a, "s2", 1, "x", MODEL_SUBMISSION_RETURNED);
  grade(a, "s2", 1, "g", false, 0, "see me");
  /* s3: unassigned: its submission and grade do not count */
  roster(a, "s3", 1, "r", false);
  submission(a, "s3", 1, "x", MODEL_SUBMISSION_SUBMITTED);
  grade(a, "s3", 1, "g", true, 5, NULL);
  /* s4: no member slot at all */
  submission(a, "s4", 1, "x", MODEL_SUBMISSION_RETURNED);
  grade(a, "s4", 1, "g", true, 5, NULL);
  /* s5: assigned, working / reassigned do not count */
  roster(a, "s5", 1, "r", true);
  submission(a, "s5", 1, "x", MODEL_SUBMISSION_REASSIGNED);
  model_counts_t c = model_aggregate_counts(a);
  ck_assert_int_eq(c.assigned, 3);
  ck_assert_int_eq(c.submitted, 1);
  ck_assert_int_eq(c.returned, 1);
  ck_assert_int_eq(c.graded, 1);
  /* recomputed from slots, not incremented */
  roster(a, "s1", 2, "r", false);
  roster(a, "s3", 2, "r", true);
  c = model_aggregate_counts(a);
  ck_assert_int_eq(c.assigned, 3);
  ck_assert_int_eq(c.submitted, 1); /* s3 now */
  ck_assert_int_eq(c.returned, 1);
  ck_assert_int_eq(c.graded, 1); /* s3 now */
  submission(a, "s2", 2, "x", MODEL_SUBMISSION_WORKING);
  c = model_aggregate_counts(a);
  ck_assert_int_eq(c.returned, 0);
  model_aggregate_destroy(a);
}
END_TEST

START_TEST(test_points_and_dates_exact) {
  const double pts[] = {0, 0.1, 0.29, 87.5, 99.99, 10000, 1.0 / 3, 1e-9, 9999.995, 123.456789, -0.0};
  const int64_t dates[] = {-62135596800000LL, 253402300799999LL, 0, -1, 1, 1788249600123LL};
  model_aggregate_t *a = agg_new();
  char sid[8];
  for (size_t i = 0; i < sizeof pts / sizeof *pts; i++) {
    snprintf(sid, sizeof sid, "p%zu", i);
    grade(a, sid, 1, "g", true, pts[i], NULL);
  }
  for (size_t i = 0; i < sizeof dates / sizeof *dates; i++) {
    snprintf(sid, sizeof sid, "d%zu", i);
    fx_submission(&cmd, T, A, sid, 1, "x", MODEL_SUBMISSION_RETURNED, true, dates[i], true, -dates[i] / 2);
    model_aggregate_apply(a, &cmd);
  }
  model_student_view_t s;
  for (size_t i = 0; i < sizeof pts / sizeof *pts; i++) {
    snprintf(sid, sizeof sid, "p%zu", i);
    student(a, sid, &s);
    ck_assert(s.has_points);
    ck_assert_msg(!memcmp(&s.points, &pts[i], sizeof(double)), "points %.17g came back as %.17g", pts[i], s.points);
  }
  for (size_t i = 0; i < sizeof dates / sizeof *dates; i++) {
    snprintf(sid, sizeof sid, "d%zu", i);
    student(a, sid, &s);
    ck_assert_int_eq(s.submitted_at_ms, dates[i]);
    ck_assert_int_eq(s.returned_at_ms, -dates[i] / 2);
  }
  model_aggregate_destroy(a);
}
END_TEST

START_TEST(test_max_lengths) {
  model_aggregate_t *a = model_aggregate_new("tttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttttt", 64,
                                             "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 64);
  char id[MODEL_CMD_ID_MAX + 1], sid[MODEL_ID_MAX + 1], fb[MODEL_FEEDBACK_MAX + 1], title[MODEL_TITLE_MAX + 1];
  memset(id, '~', MODEL_CMD_ID_MAX);
  id[MODEL_CMD_ID_MAX] = 0;
  memset(sid, 'z', MODEL_ID_MAX);
  sid[MODEL_ID_MAX] = 0;
  memset(fb, 'f', MODEL_FEEDBACK_MAX);
  fb[MODEL_FEEDBACK_MAX] = 0;
  memset(title, 'T', MODEL_TITLE_MAX);
  title[MODEL_TITLE_MAX] = 0;
  size_t tl, al;
  const char *t = model_aggregate_tenant(a, &tl), *as = model_aggregate_assignment(a, &al);
  char tb[65], ab[65];
  memcpy(tb, t, 65);
  memcpy(ab, as, 65);
  fx_grade(&cmd, tb, ab, sid, MODEL_VERSION_MAX, id, true, 1.0 / 7, fb);
  ck_assert_int_eq(model_aggregate_apply(a, &cmd), MODEL_APPLY_APPLIED);
  fx_upsert(&cmd, tb, ab, MODEL_VERSION_MAX, id, sid, title, MODEL_ASSIGNMENT_PUBLISHED, true, 253402300799999LL,
            true, 1.0 / 7);
  ck_assert_int_eq(model_aggregate_apply(a, &cmd), MODEL_APPLY_APPLIED);
  model_student_view_t s;
  model_aggregate_student(a, 0, &s);
  ck_assert_str_eq(s.student, sid);
  ck_assert_str_eq(s.grade_stamp.id, id);
  ck_assert_str_eq(s.feedback, fb);
  ck_assert_uint_eq(s.feedback_len, MODEL_FEEDBACK_MAX);
  model_header_view_t h;
  model_aggregate_header(a, &h);
  ck_assert_str_eq(h.title, title);
  ck_assert_str_eq(h.class_id, sid);
  ck_assert_uint_eq(h.stamp.version, MODEL_VERSION_MAX);
  model_aggregate_destroy(a);
}
END_TEST

/* Applies the same commands to a and (in another order) to b. */
static void fill_class(model_aggregate_t *a, int nstudents, int feedback_len, bool reverse) {
  char sid[16], fb[512];
  memset(fb, 'x', sizeof fb);
  fb[feedback_len] = 0;
  for (int k = 0; k < nstudents; k++) {
    int i = reverse ? nstudents - 1 - k : k;
    snprintf(sid, sizeof sid, "st%05d", (i * 7919) % nstudents);
    roster(a, sid, 1, "r1", true);
    submission(a, sid, 2, "x2", MODEL_SUBMISSION_SUBMITTED);
    grade(a, sid, 3, "g3", true, i % 100, fb);
  }
}

START_TEST(test_large_aggregate_chunked) {
  /* over 200 KiB of records in chunks, filled in two different orders */
  model_aggregate_t *a = agg_new(), *b = agg_new();
  fill_class(a, 2000, 100, false);
  fill_class(b, 2000, 100, true);
  ck_assert_uint_gt(model_aggregate_memory(a), 200000);
  ck_assert_uint_eq(model_aggregate_student_count(a), 2000);
  ck_assert(model_aggregate_equal(a, b));
  model_student_view_t s, prev;
  for (size_t i = 0; i < 2000; i++) {
    model_aggregate_student(a, i, &s);
    if (i) ck_assert_int_lt(strcmp(prev.student, s.student), 0);
    ck_assert(s.has_member && s.has_submission && s.has_grade);
    ck_assert_uint_eq(s.feedback_len, 100);
    prev = s;
  }
  ck_assert_int_eq(roster(a, "st01999", 1, "r1", true), MODEL_APPLY_STALE);
  ck_assert_int_eq(roster(a, "st01999", 2, "r1", false), MODEL_APPLY_APPLIED);
  ck_assert(!model_aggregate_equal(a, b));
  model_counts_t c = model_aggregate_counts(a);
  ck_assert_int_eq(c.assigned, 1999);
  model_aggregate_destroy(a);
  model_aggregate_destroy(b);
}
END_TEST

/* Student k of a class of n, in an order that is neither sorted nor
 * reversed; ids of different lengths that share long prefixes. */
static void class_id(char *out, size_t size, int k, int n) {
  int i = (int)(((long)k * 7919) % n);
  if (i % 4 == 3) snprintf(out, size, "stu%05d-x", i);
  else snprintf(out, size, "stu%05d", i);
}

START_TEST(test_large_class_lookup_and_merge) {
  /* 3,000 students: every student is found again after all the splits,
   * merges in both directions (a small side into a large one and the
   * reverse, and halves into an empty aggregate) equal applying everything,
   * clones are deep and equal, and a replay changes nothing. */
  enum { N = 3000 };
  model_aggregate_t *all = agg_new(), *lo = agg_new(), *hi = agg_new(), *few = agg_new();
  char sid[24];
  for (int k = 0; k < N; k++) {
    class_id(sid, sizeof sid, k, N);
    model_aggregate_t *half = k < N / 2 ? lo : hi;
    ck_assert_int_eq(roster(all, sid, 1, "r1", true), MODEL_APPLY_APPLIED);
    ck_assert_int_eq(roster(half, sid, 1, "r1", true), MODEL_APPLY_APPLIED);
    if (k % 3 == 0) {
      ck_assert_int_eq(grade(all, sid, 2, "g2", true, k % 101, "well done"), MODEL_APPLY_APPLIED);
      ck_assert_int_eq(grade(half, sid, 2, "g2", true, k % 101, "well done"), MODEL_APPLY_APPLIED);
    }
  }
  /* a few later changes, one of them to a new student before all others */
  for (int k = 0; k < N; k += 97) {
    class_id(sid, sizeof sid, k, N);
    ck_assert_int_eq(submission(all, sid, 5, "x5", MODEL_SUBMISSION_SUBMITTED), MODEL_APPLY_APPLIED);
    ck_assert_int_eq(submission(few, sid, 5, "x5", MODEL_SUBMISSION_SUBMITTED), MODEL_APPLY_APPLIED);
  }
  ck_assert_int_eq(roster(all, "a-first", 1, "r9", true), MODEL_APPLY_APPLIED);
  ck_assert_int_eq(roster(few, "a-first", 1, "r9", true), MODEL_APPLY_APPLIED);
  ck_assert_uint_eq(model_aggregate_student_count(all), N + 1);

  for (int k = 0; k < N; k++) { /* every one found: the same stamp is stale */
    class_id(sid, sizeof sid, k, N);
    ck_assert_int_eq(roster(all, sid, 1, "r1", true), MODEL_APPLY_STALE);
  }
  model_student_view_t v, prev;
  for (size_t i = 0; i <= N; i++) {
    model_aggregate_student(all, i, &v);
    if (i) ck_assert_int_lt(strcmp(prev.student, v.student), 0);
    prev = v;
  }
  model_aggregate_student(all, 0, &v);
  ck_assert_str_eq(v.student, "a-first");

  /* lo <- hi (similar sizes: the walk), then <- few (small: offers) */
  model_aggregate_t *m1 = model_aggregate_clone(lo);
  ck_assert(model_aggregate_equal(m1, lo));
  ck_assert(model_aggregate_merge(m1, hi));
  ck_assert(!model_aggregate_equal(m1, lo));
  ck_assert(model_aggregate_merge(m1, few));
  ck_assert(model_aggregate_equal(m1, all));
  ck_assert(!model_aggregate_merge(m1, all));
  /* few <- hi <- lo (a small aggregate receiving large ones) */
  model_aggregate_t *m2 = model_aggregate_clone(few);
  ck_assert(model_aggregate_merge(m2, hi));
  ck_assert(model_aggregate_merge(m2, lo));
  ck_assert(model_aggregate_equal(m2, all));
  /* into an empty one */
  model_aggregate_t *m3 = agg_new();
  ck_assert(model_aggregate_merge(m3, all));
  ck_assert(model_aggregate_equal(m3, all));
  model_counts_t c1 = model_aggregate_counts(all), c3 = model_aggregate_counts(m3);
  ck_assert_int_eq(c1.assigned, N + 1);
  ck_assert_int_eq(c1.graded, N / 3);
  ck_assert(c1.assigned == c3.assigned && c1.graded == c3.graded && c1.submitted == c3.submitted);
  /* a clone of a chunked aggregate is deep */
  model_aggregate_t *cl = model_aggregate_clone(all);
  ck_assert_int_eq(roster(all, "zz-last", 1, "r1", true), MODEL_APPLY_APPLIED);
  ck_assert(!model_aggregate_equal(cl, all));
  ck_assert(model_aggregate_equal(cl, m3));
  model_aggregate_destroy(cl);
  model_aggregate_destroy(m1);
  model_aggregate_destroy(m2);
  model_aggregate_destroy(m3);
  model_aggregate_destroy(all);
  model_aggregate_destroy(lo);
  model_aggregate_destroy(hi);
  model_aggregate_destroy(few);
}
END_TEST

/* Fills every slot of n students. */
static void fill_full(model_aggregate_t *a, int n) {
  char sid[24];
  for (int k = 0; k < n; k++) {
    class_id(sid, sizeof sid, k, n);
    roster(a, sid, 1, "r0000000001", true);
    submission(a, sid, 2, "x0000000002", MODEL_SUBMISSION_RETURNED);
    grade(a, sid, 3, "g0000000003", true, 87.5, "good work");
  }
}

START_TEST(test_large_class_memory_per_student) {
  /* memory close to the content at every size: per student, 3,000 students
   * cost at most 10% more than 30 (directory, size-class slack of each
   * chunk), and so does a copy made by merging into an empty aggregate */
  model_aggregate_t *small = agg_new(), *large = agg_new(), *copy = agg_new();
  fill_full(small, 30);
  fill_full(large, 3000);
  ck_assert(model_aggregate_merge(copy, large));
  double per_small = (double)model_aggregate_memory(small) / 30, per_large = (double)model_aggregate_memory(large) / 3000,
         per_copy = (double)model_aggregate_memory(copy) / 3000;
  ck_assert_msg(per_large <= 1.1 * per_small, "%.1f vs %.1f bytes per student", per_large, per_small);
  ck_assert_msg(per_copy <= 1.1 * per_small, "%.1f vs %.1f bytes per student", per_copy, per_small);
  model_aggregate_destroy(small);
  model_aggregate_destroy(large);
  model_aggregate_destroy(copy);
}
END_TEST

START_TEST(test_chunk_prefix_ties) {
  /* ids that agree on their first 8 bytes (the directory's prefix) and
   * differ after it, inserted descending: every chunk boundary is a tie */
  model_aggregate_t *a = agg_new(), *b = agg_new();
  char sid[24];
  for (int k = 499; k >= 0; k--) {
    snprintf(sid, sizeof sid, "samepref%03d", k);
    ck_assert_int_eq(roster(a, sid, 1, "r1", true), MODEL_APPLY_APPLIED);
    snprintf(sid, sizeof sid, "samepref%03d", 499 - k);
    ck_assert_int_eq(roster(b, sid, 1, "r1", true), MODEL_APPLY_APPLIED);
  }
  ck_assert_int_eq(roster(a, "samepref", 1, "r1", true), MODEL_APPLY_APPLIED); /* the prefix itself */
  ck_assert_int_eq(roster(b, "samepref", 1, "r1", true), MODEL_APPLY_APPLIED);
  for (int k = 0; k < 500; k++) {
    snprintf(sid, sizeof sid, "samepref%03d", k);
    ck_assert_int_eq(roster(a, sid, 1, "r1", true), MODEL_APPLY_STALE);
    ck_assert_int_eq(roster(a, sid, 2, "r2", false), MODEL_APPLY_APPLIED);
    ck_assert_int_eq(roster(b, sid, 2, "r2", false), MODEL_APPLY_APPLIED);
  }
  ck_assert_uint_eq(model_aggregate_student_count(a), 501);
  ck_assert(model_aggregate_equal(a, b));
  model_aggregate_destroy(a);
  model_aggregate_destroy(b);
}
END_TEST

static void collect(void *ctx, const model_aggregate_t *to, size_t i) {
  model_buf_t *b = ctx;
  model_student_view_t v;
  model_aggregate_student(to, i, &v);
  model_buf_append(b, v.student, v.student_len);
  model_buf_putc(b, ' ');
}

START_TEST(test_diff) {
  /* the students changed since a snapshot, at 30 and at 3,000 students */
  for (int n = 30; n <= 3000; n *= 100) {
    model_aggregate_t *a = agg_new();
    fill_full(a, n);
    model_aggregate_t *snap = model_aggregate_clone(a);
    model_buf_t b = MODEL_BUF_INIT;
    ck_assert(!model_aggregate_diff(snap, a, collect, &b));
    ck_assert_uint_eq(b.len, 0);
    char sid[24];
    class_id(sid, sizeof sid, 7, n);
    ck_assert_int_eq(grade(a, sid, 9, "g9", true, 1, NULL), MODEL_APPLY_APPLIED);
    ck_assert_int_eq(roster(a, "new-one", 1, "r1", true), MODEL_APPLY_APPLIED);
    ck_assert_int_eq(grade(a, sid, 3, "g0000000003", true, 2, NULL), MODEL_APPLY_STALE); /* no change */
    ck_assert(!model_aggregate_diff(snap, a, collect, &b));
    model_buf_putc(&b, 0);
    char want[64];
    snprintf(want, sizeof want, "new-one %s ", sid);
    ck_assert_str_eq(b.data, want);
    model_buf_clear(&b);
    ck_assert_int_eq(upsert(a, 1, "h1", "title"), MODEL_APPLY_APPLIED);
    ck_assert(model_aggregate_diff(snap, a, collect, &b));
    model_aggregate_destroy(snap);
    snap = model_aggregate_clone(a);
    model_buf_clear(&b);
    ck_assert(!model_aggregate_diff(snap, a, collect, &b));
    ck_assert_uint_eq(b.len, 0);
    model_buf_destroy(&b);
    model_aggregate_destroy(snap);
    model_aggregate_destroy(a);
  }
}
END_TEST

START_TEST(test_merge) {
  model_aggregate_t *a = agg_new(), *b = agg_new(), *all = agg_new();
  /* a: header v1, s1 member v1, s2 grade v2 ; b: header v2, s1 member v1 (lower id), s2 grade v1, s3 */
  upsert(a, 1, "h1", "one");
  roster(a, "s1", 1, "m", true);
  grade(a, "s2", 2, "g2", true, 50, "ok");
  upsert(b, 2, "h2", "two");
  roster(b, "s1", 1, "l", false);
  grade(b, "s2", 1, "g1", true, 10, NULL);
  submission(b, "s3", 1, "x", MODEL_SUBMISSION_SUBMITTED);
  upsert(all, 1, "h1", "one");
  roster(all, "s1", 1, "m", true);
  grade(all, "s2", 2, "g2", true, 50, "ok");
  upsert(all, 2, "h2", "two");
  roster(all, "s1", 1, "l", false);
  grade(all, "s2", 1, "g1", true, 10, NULL);
  submission(all, "s3", 1, "x", MODEL_SUBMISSION_SUBMITTED);

  model_aggregate_t *a2 = model_aggregate_clone(a);
  ck_assert(model_aggregate_merge(a, b));
  ck_assert(model_aggregate_equal(a, all));
  ck_assert(!model_aggregate_merge(a, b)); /* idempotent */
  ck_assert(!model_aggregate_merge(a, a));
  ck_assert(model_aggregate_merge(b, a2)); /* commutative */
  ck_assert(model_aggregate_equal(b, all));
  model_header_view_t h;
  model_aggregate_header(a, &h);
  ck_assert_str_eq(h.title, "two");
  model_student_view_t s;
  student(a, "s1", &s);
  ck_assert(s.assigned);
  ck_assert_str_eq(s.member_stamp.id, "m");
  student(a, "s2", &s);
  ck_assert(s.points == 50);
  ck_assert_str_eq(s.feedback, "ok");
  /* an empty aggregate changes nothing and takes everything */
  model_aggregate_t *e = agg_new();
  ck_assert(!model_aggregate_merge(a, e));
  ck_assert(model_aggregate_merge(e, a));
  ck_assert(model_aggregate_equal(e, all));
  model_aggregate_destroy(a);
  model_aggregate_destroy(a2);
  model_aggregate_destroy(b);
  model_aggregate_destroy(all);
  model_aggregate_destroy(e);
}
END_TEST

/* merge_within: the merge when the merged document fits, dst untouched
 * when it would pass the limit, and the copy path near the limit. */
START_TEST(test_merge_within) {
  model_aggregate_t *stored = agg_new(), *overlay = agg_new(), *all = agg_new();
  for (int i = 0; i < 20; i++) {
    char s[16];
    snprintf(s, sizeof s, "s%02d", i);
    roster(stored, s, 1, "m", true);
    roster(all, s, 1, "m", true);
  }
  grade(overlay, "s03", 2, "g", true, 7, "fine");
  grade(all, "s03", 2, "g", true, 7, "fine");
  roster(overlay, "new", 1, "n", true);
  roster(all, "new", 1, "n", true);
  size_t merged = model_aggregate_doc_size(all), before = model_aggregate_doc_size(stored), would_be;
  model_aggregate_t *copy = model_aggregate_clone(stored);
  /* one byte short: refused, exact size, nothing changed */
  ck_assert_int_eq(model_aggregate_merge_within(copy, overlay, merged - 1, &would_be), MODEL_APPLY_TOO_LARGE);
  ck_assert_uint_eq(would_be, merged);
  ck_assert(model_aggregate_equal(copy, stored));
  ck_assert_uint_eq(model_aggregate_doc_size(copy), before);
  /* exactly the limit: merged through the copy (the bound says it might not fit) */
  ck_assert_int_eq(model_aggregate_merge_within(copy, overlay, merged, &would_be), MODEL_APPLY_APPLIED);
  ck_assert(model_aggregate_equal(copy, all));
  ck_assert_uint_eq(would_be, merged);
  /* again: nothing new */
  ck_assert_int_eq(model_aggregate_merge_within(copy, overlay, merged, &would_be), MODEL_APPLY_STALE);
  /* far below the limit: merged in place */
  ck_assert_int_eq(model_aggregate_merge_within(stored, overlay, SIZE_MAX / 2, &would_be), MODEL_APPLY_APPLIED);
  ck_assert(model_aggregate_equal(stored, all));
  model_aggregate_destroy(copy);
  model_aggregate_destroy(stored);
  model_aggregate_destroy(overlay);
  model_aggregate_destroy(all);
}
END_TEST

START_TEST(test_equal) {
  model_aggregate_t *a = agg_new(), *b = agg_new(), *c = model_aggregate_new("t1", 2, "a2", 2);
  ck_assert(model_aggregate_equal(a, b));
  ck_assert(!model_aggregate_equal(a, c)); /* other key */
  roster(a, "s1", 1, "r", true);
  ck_assert(!model_aggregate_equal(a, b));
  roster(b, "s1", 1, "r", true);
  ck_assert(model_aggregate_equal(a, b));
  /* same stamps, different value (cannot come from valid commands, but equal must see it) */
  model_student_view_t s = {.student = "s2", .student_len = 2, .has_member = true, .assigned = true,
                            .member_stamp = {1, "r", 1}};
  model_aggregate_put_student(a, &s);
  s.assigned = false;
  model_aggregate_put_student(b, &s);
  ck_assert(!model_aggregate_equal(a, b));
  model_aggregate_destroy(a);
  model_aggregate_destroy(b);
  model_aggregate_destroy(c);
}
END_TEST

START_TEST(test_clone_is_deep) {
  model_aggregate_t *a = agg_new();
  upsert(a, 1, "h", "title");
  roster(a, "s1", 1, "r", true);
  grade(a, "s1", 1, "g", true, 1, "fb");
  model_aggregate_t *c = model_aggregate_clone(a);
  ck_assert_ptr_nonnull(c);
  ck_assert(model_aggregate_equal(a, c));
  size_t n;
  ck_assert_str_eq(model_aggregate_key(c, &n), "t1/a1");
  grade(c, "s1", 2, "g", true, 2, "changed");
  roster(c, "s0", 1, "r", true);
  ck_assert(!model_aggregate_equal(a, c));
  model_student_view_t s;
  student(a, "s1", &s);
  ck_assert_str_eq(s.feedback, "fb");
  ck_assert_uint_eq(model_aggregate_student_count(a), 1);
  model_aggregate_destroy(a);
  ck_assert_uint_eq(model_aggregate_student_count(c), 2);
  model_aggregate_destroy(c);
}
END_TEST

START_TEST(test_put_header_and_student) {
  model_aggregate_t *a = agg_new();
  char idbuf[16], titlebuf[16], classbuf[16];
  strcpy(idbuf, "h5");
  strcpy(titlebuf, "Quiz");
  strcpy(classbuf, "c9");
  model_header_view_t h = {.present = true, .stamp = {5, idbuf, 2}, .class_id = classbuf, .class_len = 2,
                           .title = titlebuf, .title_len = 4, .status = MODEL_ASSIGNMENT_PUBLISHED,
                           .has_due_at = true, .due_at_ms = 1000, .has_points = false};
  ck_assert(model_aggregate_put_header(a, &h));
  strcpy(titlebuf, "XXXX"); /* copied, not referenced */
  strcpy(idbuf, "zz");
  model_header_view_t got;
  model_aggregate_header(a, &got);
  ck_assert_str_eq(got.title, "Quiz");
  ck_assert_str_eq(got.stamp.id, "h5");
  ck_assert_int_eq(got.due_at_ms, 1000);
  strcpy(idbuf, "h4");
  ck_assert(!model_aggregate_put_header(a, &h)); /* (5,"h4") < (5,"h5") */
  strcpy(idbuf, "h5");
  ck_assert(!model_aggregate_put_header(a, &h)); /* equal */
  model_header_view_t absent = {.present = false};
  ck_assert(!model_aggregate_put_header(a, &absent));
  model_header_view_t del = {.present = true, .deleted = true, .stamp = {6, "d", 1}};
  ck_assert(model_aggregate_put_header(a, &del));
  model_aggregate_header(a, &got);
  ck_assert(got.deleted);

  /* a view with several slots: each slot follows its own stamp */
  roster(a, "s1", 3, "m3", true);
  grade(a, "s1", 1, "g1", true, 1, NULL);
  model_student_view_t s = {.student = "s1", .student_len = 2, .has_member = true, .assigned = false,
                            .member_stamp = {2, "m9", 2}, .has_grade = true, .has_points = true, .points = 9,
                            .grade_stamp = {2, "g2", 2}, .has_feedback = true, .feedback = "new", .feedback_len = 3,
                            .has_submission = true, .submission_status = MODEL_SUBMISSION_SUBMITTED,
                            .has_submitted_at = true, .submitted_at_ms = 77, .submission_stamp = {1, "x", 1}};
  ck_assert(model_aggregate_put_student(a, &s));
  model_student_view_t g;
  student(a, "s1", &g);
  ck_assert(g.assigned); /* member (2,m9) < (3,m3): kept */
  ck_assert_str_eq(g.member_stamp.id, "m3");
  ck_assert(g.points == 9);
  ck_assert_str_eq(g.feedback, "new");
  ck_assert(g.has_submission && g.submitted_at_ms == 77 && !g.has_returned_at);
  ck_assert(!model_aggregate_put_student(a, &s)); /* nothing newer now */
  model_student_view_t none = {.student = "s9", .student_len = 2};
  ck_assert(!model_aggregate_put_student(a, &none));
  ck_assert_uint_eq(model_aggregate_student_count(a), 1);
  model_aggregate_destroy(a);
}
END_TEST

START_TEST(test_views_of_a_copy_round_trip) {
  /* Reading every view and putting it into an empty aggregate gives an equal one. */
  model_aggregate_t *a = agg_new(), *b = agg_new();
  upsert(a, 3, "h", "Title");
  fill_class(a, 40, 7, false);
  deleted(a, 4, "d");
  model_header_view_t h;
  model_aggregate_header(a, &h);
  ck_assert(model_aggregate_put_header(b, &h));
  for (size_t i = model_aggregate_student_count(a); i-- > 0;) {
    model_student_view_t s;
    model_aggregate_student(a, i, &s);
    ck_assert(model_aggregate_put_student(b, &s));
  }
  ck_assert(model_aggregate_equal(a, b));
  model_aggregate_destroy(a);
  model_aggregate_destroy(b);
}
END_TEST

/* model_zero (zero.h, which the record views are cleared with) zeroes
 * exactly its n bytes, for every size up to 48: below 16 bytes too, where
 * a 16-byte store would reach outside them. */
START_TEST(test_zero_touches_only_its_bytes) {
  for (size_t n = 1; n <= 48; n++) {
    unsigned char buf[16 + 48 + 16];
    memset(buf, 0xA5, sizeof buf);
    model_zero(buf + 16, n);
    for (size_t i = 0; i < sizeof buf; i++)
      ck_assert_msg(buf[i] == (i >= 16 && i < 16 + n ? 0 : 0xA5), "n=%zu: byte %zu is %02x", n, i, buf[i]);
  }
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("aggregate");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, test_new_is_empty);
  tcase_add_test(tc, test_zero_touches_only_its_bytes);
  tcase_add_test(tc, test_header_upsert_view);
  tcase_add_test(tc, test_header_stamp_rules);
  tcase_add_test(tc, test_header_deleted);
  tcase_add_test(tc, test_tie_break_bytewise);
  tcase_add_test(tc, test_student_slots_independent);
  tcase_add_test(tc, test_students_sorted_bytewise);
  tcase_add_test(tc, test_counts);
  tcase_add_test(tc, test_points_and_dates_exact);
  tcase_add_test(tc, test_max_lengths);

  tcase_add_test(tc, test_merge);
  tcase_add_test(tc, test_merge_within);
  tcase_add_test(tc, test_equal);
  tcase_add_test(tc, test_clone_is_deep);
  tcase_add_test(tc, test_put_header_and_student);
  tcase_add_test(tc, test_views_of_a_copy_round_trip);
  suite_add_tcase(s, tc);
  /* thousands of students: seconds under valgrind on a shared machine */
  TCase *large = tcase_create("large");
  tcase_set_timeout(large, 120);
  tcase_add_test(large, test_large_aggregate_chunked);
  tcase_add_test(large, test_large_class_lookup_and_merge);
  tcase_add_test(large, test_large_class_memory_per_student);
  tcase_add_test(large, test_chunk_prefix_ties);
  tcase_add_test(large, test_diff);
  suite_add_tcase(s, large);
  return s;
}
