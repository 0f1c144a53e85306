/* Change sets (models/changes.h): add, merge and normalize against an
 * oracle, and model_aggregate_wins against the merge it predicts.
 *
 * The wins property: for random pairs of aggregates built from random
 * subsets of one pool of commands (unique command ids, versions 1..3, so
 * that equal versions and shared commands are frequent), the slots wins()
 * reports are exactly those whose stamp a merge of the overlay into a clone
 * of the stored aggregate changes, compared slot by slot before and after:
 * one slot missed or added fails. It runs at 4, 30, 300 and 3,000 students
 * (inline tables and chunked ones), with overlays as large as the stored
 * side (the walk in order) and tiny ones (the lookups), and student ids
 * that are prefixes of one another ("s1", "s10", "s100"). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changes.h"
#include "model_fixtures.h"

/* ---- the oracle of a change set -------------------------------------------------- */

#define MAX_IDS 4000

typedef struct {
  char id[40];
  uint8_t mask;
} expect_t;

static int cmp_expect(const void *a, const void *b) {
  return strcmp(((const expect_t *)a)->id, ((const expect_t *)b)->id);
}

/* Asserts that c holds exactly want[0..n) (sorted by id, distinct), in order. */
static void assert_records(const model_changes_t *c, const expect_t *want, size_t n) {
  size_t pos = 0, len, i = 0;
  const char *id;
  uint8_t mask;
  while (model_changes_next(c, &pos, &id, &len, &mask)) {
    ck_assert_msg(i < n, "record %zu (%s) past the %zu expected", i, id, n);
    ck_assert_uint_eq(len, strlen(want[i].id));
    ck_assert_str_eq(id, want[i].id);
    ck_assert_msg(mask == want[i].mask, "%s: mask %u, want %u", id, mask, want[i].mask);
    i++;
  }
  ck_assert_uint_eq(i, n);
  ck_assert_uint_eq(c->n, n);
}

static void set_id(expect_t *e, const char *id) {
  size_t n = strlen(id);
  ck_assert_uint_lt(n, sizeof e->id);
  memcpy(e->id, id, n + 1);
}

static void add_str(model_changes_t *c, const char *id, uint8_t mask) { model_changes_add(c, id, strlen(id), mask); }

START_TEST(empty_set_is_normalized_and_owns_nothing) {
  model_changes_t c = MODEL_CHANGES_INIT;
  model_changes_normalize(&c);
  ck_assert_ptr_null(c.students.data);
  ck_assert_uint_eq(model_changes_memory(&c), 0);
  assert_records(&c, NULL, 0);
  model_changes_add(&c, "s1", 2, 0); /* a mask of 0 records nothing */
  ck_assert_ptr_null(c.students.data);
  model_changes_merge(&c, &c);
  model_changes_clear(&c);
  model_changes_free(&c);
  model_changes_free(NULL);
}
END_TEST

START_TEST(a_burst_on_one_student_is_one_record) {
  model_changes_t c = MODEL_CHANGES_INIT;
  for (int i = 0; i < 1000; i++) add_str(&c, "stu-00012", (uint8_t)(i % 2 ? MODEL_SLOT_GRADE : MODEL_SLOT_MEMBER));
  add_str(&c, "stu-00012", MODEL_SLOT_SUBMISSION);
  expect_t want[] = {{"stu-00012", 7}};
  assert_records(&c, want, 1);
  ck_assert_uint_le(model_changes_memory(&c), 24); /* the first block: one record, glibc's smallest chunk */
  ck_assert_uint_eq(c.last, 0);
  model_changes_free(&c);
  ck_assert_ptr_null(c.students.data);
  ck_assert_uint_eq(c.n, 0);
}
END_TEST

/* "s1" < "s10" < "s2" bytewise; "S" < "s"; '-' < digits < '_'; a prefix first. */
START_TEST(normalize_sorts_bytewise_and_ors_repeats) {
  model_changes_t c = MODEL_CHANGES_INIT;
  add_str(&c, "s2", MODEL_SLOT_MEMBER);
  add_str(&c, "s10", MODEL_SLOT_GRADE);
  add_str(&c, "s1", MODEL_SLOT_MEMBER);
  add_str(&c, "s10", MODEL_SLOT_MEMBER);
  add_str(&c, "s", MODEL_SLOT_SUBMISSION);
  add_str(&c, "s1", MODEL_SLOT_GRADE);
  add_str(&c, "S", MODEL_SLOT_GRADE);
  add_str(&c, "s_1", MODEL_SLOT_GRADE);
  add_str(&c, "s-1", MODEL_SLOT_GRADE);
  add_str(&c, "s1", MODEL_SLOT_GRADE);
  c.header = true;
  model_changes_normalize(&c);
  expect_t want[] = {{"S", 4}, {"s", 2}, {"s-1", 4}, {"s1", 5}, {"s10", 5}, {"s2", 1}, {"s_1", 4}};
  assert_records(&c, want, 7);
  ck_assert(c.header);
  /* last is the greatest: a burst on it still ORs */
  add_str(&c, "s_1", MODEL_SLOT_MEMBER);
  want[6].mask = 5;
  assert_records(&c, want, 7);
  /* normalizing a normalized set moves nothing */
  const char *data = c.students.data;
  size_t cap = c.students.cap, len = c.students.len;
  model_changes_normalize(&c);
  ck_assert_ptr_eq(c.students.data, data);
  ck_assert_uint_eq(c.students.cap, cap);
  ck_assert_uint_eq(c.students.len, len);
  assert_records(&c, want, 7);
  /* clear keeps the block */
  model_changes_clear(&c);
  ck_assert(!c.header);
  ck_assert_ptr_eq(c.students.data, data);
  assert_records(&c, NULL, 0);
  add_str(&c, "s10", 1);
  add_str(&c, "s1", 2);
  model_changes_normalize(&c);
  expect_t two[] = {{"s1", 2}, {"s10", 1}};
  assert_records(&c, two, 2);
  model_changes_free(&c);
}
END_TEST

START_TEST(add_command_names_the_slot_the_type_writes) {
  model_changes_t c = MODEL_CHANGES_INIT;
  model_command_t cmd;
  fx_grade(&cmd, "t1", "a1", "s2", 1, "g", true, 1, NULL);
  model_changes_add_command(&c, &cmd);
  fx_roster(&cmd, "t1", "a1", "s1", 1, "r", false);
  model_changes_add_command(&c, &cmd);
  fx_roster(&cmd, "t1", "a1", "s1", 1, "r", true);
  model_changes_add_command(&c, &cmd);
  fx_submission(&cmd, "t1", "a1", "s3", 1, "x", MODEL_SUBMISSION_WORKING, false, 0, false, 0);
  model_changes_add_command(&c, &cmd);
  ck_assert(!c.header);
  fx_deleted(&cmd, "t1", "a1", 1, "d");
  model_changes_add_command(&c, &cmd);
  ck_assert(c.header);
  c.header = false;
  fx_upsert(&cmd, "t1", "a1", 1, "u", "k", "T", MODEL_ASSIGNMENT_DRAFT, false, 0, false, 0);
  model_changes_add_command(&c, &cmd);
  ck_assert(c.header);
  model_changes_normalize(&c);
  expect_t want[] = {{"s1", MODEL_SLOT_MEMBER}, {"s2", MODEL_SLOT_GRADE}, {"s3", MODEL_SLOT_SUBMISSION}};
  assert_records(&c, want, 3);
  model_changes_free(&c);
}
END_TEST

START_TEST(merge_is_a_union) {
  model_changes_t a = MODEL_CHANGES_INIT, b = MODEL_CHANGES_INIT, e = MODEL_CHANGES_INIT;
  add_str(&a, "s2", MODEL_SLOT_MEMBER);
  add_str(&b, "s2", MODEL_SLOT_GRADE);
  add_str(&b, "s1", MODEL_SLOT_GRADE);
  b.header = true;
  model_changes_merge(&a, &e); /* nothing */
  expect_t one[] = {{"s2", 1}};
  assert_records(&a, one, 1);
  ck_assert(!a.header);
  model_changes_merge(&a, &b);
  model_changes_merge(&a, &a); /* itself: nothing */
  ck_assert(a.header);
  model_changes_normalize(&a);
  expect_t want[] = {{"s1", 4}, {"s2", 5}};
  assert_records(&a, want, 2);
  model_changes_merge(&e, &a); /* into an empty set: a copy */
  assert_records(&e, want, 2);
  ck_assert(e.header);
  model_changes_free(&a);
  model_changes_free(&b);
  model_changes_free(&e);
}
END_TEST

/* A stream of commands over a few students never grows the set much past
 * their records: add folds the repeats before it grows the block. */
START_TEST(repeats_do_not_grow_the_set) {
  model_changes_t c = MODEL_CHANGES_INIT;
  static const char *const few_ids[] = {"stu-00001", "stu-00002", "stu-00003", "stu-00004", "stu-00005"};
  for (int i = 0; i < 100000; i++) add_str(&c, few_ids[(i * 7) % 5], (uint8_t)(1 << (i % 3)));
  ck_assert_uint_le(model_changes_memory(&c), 128); /* 5 records of 11 bytes: 55 */
  model_changes_normalize(&c);
  expect_t want[5];
  for (int i = 0; i < 5; i++) {
    set_id(&want[i], few_ids[i]);
    want[i].mask = 7;
  }
  assert_records(&c, want, 5);
  model_changes_free(&c);
}
END_TEST

static uint64_t rng;
static uint64_t next_rand(void) {
  rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
  return rng * 2685821657736338717ULL;
}
static unsigned below(unsigned n) { return (unsigned)(next_rand() % n); }

/* Student ids of three forms, some prefixes of others ("s1", "s10",
 * "s100"), some sharing their first 8 bytes ("stu-00012", "stu-00013"). */
static char ids[MAX_IDS][40];
static void make_ids(size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (i % 3 == 0) snprintf(ids[i], sizeof ids[i], "s%zu", i / 3);
    else if (i % 3 == 1) snprintf(ids[i], sizeof ids[i], "stu-%05zu", i);
    else snprintf(ids[i], sizeof ids[i], "S_%zu_of_the_class", i);
  }
}

/* Many ids out of order with repeats, normalized now and then on the way
 * (the set keeps its rules across normalizations), against a sorted
 * oracle. Sizes from 0 to thousands of records: insertion sort on the
 * stack, and the keys' sort with heap copies. */
START_TEST(normalize_agrees_with_an_oracle) {
  static expect_t oracle[MAX_IDS], want[MAX_IDS];
  static uint8_t masks[MAX_IDS];
  rng = 0x5eed0c4aULL;
  make_ids(MAX_IDS);
  for (unsigned iter = 0; iter < 160; iter++) {
    size_t pool = 1 + below(iter % 4 == 0 ? MAX_IDS : 24), adds = below((unsigned)pool * 3 + 1);
    memset(masks, 0, pool);
    model_changes_t c = MODEL_CHANGES_INIT;
    bool header = false;
    for (size_t i = 0; i < adds; i++) {
      size_t k = below((unsigned)pool);
      uint8_t m = (uint8_t)below(8);
      unsigned burst = below(4) == 0 ? 1 + below(3) : 1;
      for (unsigned b = 0; b < burst; b++) model_changes_add(&c, ids[k], strlen(ids[k]), m);
      masks[k] |= m;
      if (below(50) == 0) model_changes_normalize(&c);
      if (below(20) == 0) header = c.header = true;
    }
    model_changes_normalize(&c);
    size_t n = 0;
    for (size_t k = 0; k < pool; k++) {
      if (!masks[k]) continue;
      set_id(&oracle[n], ids[k]);
      oracle[n++].mask = masks[k];
    }
    qsort(oracle, n, sizeof *oracle, cmp_expect);
    memcpy(want, oracle, n * sizeof *want);
    assert_records(&c, want, n);
    ck_assert(c.header == header);
    model_changes_free(&c);
  }
}
END_TEST

/* ---- wins against merge -------------------------------------------------------- */

#define MAX_STUDENTS 3000
#define MAX_POOL (48 + 2 * MAX_STUDENTS)

static model_command_t cmds[MAX_POOL];
static size_t ncmds;

/* Unique command ids: a short random prefix over a few letters (so that
 * ids compare in every order) and the command's number. */
static void draw_pool(size_t nstudents) {
  static const char alphabet[] = "aAb~!0";
  static const double points[] = {0, 0.5, 87.5, 100};
  ncmds = 1 + below(40) + 2 * nstudents;
  for (size_t i = 0; i < ncmds; i++) {
    char id[24];
    size_t len = 1 + below(2);
    for (size_t j = 0; j < len; j++) id[j] = alphabet[below(sizeof alphabet - 1)];
    snprintf(id + len, sizeof id - len, ".%zx", i);
    const char *s = ids[below((unsigned)nstudents)];
    uint64_t v = 1 + below(3);
    model_command_t *c = &cmds[i];
    switch (below(nstudents > 4 ? 12 : 6)) {
    case 0:
      fx_upsert(c, "t1", "a1", v, id, "k1", below(2) ? "Essay" : "Quiz", MODEL_ASSIGNMENT_PUBLISHED, false, 0, below(2),
                10);
      break;
    case 1: fx_deleted(c, "t1", "a1", v, id); break;
    case 2:
    case 6:
    case 7: fx_roster(c, "t1", "a1", s, v, id, below(2)); break;
    case 3:
    case 8:
    case 9:
      fx_submission(c, "t1", "a1", s, v, id, (model_submission_status_t)below(4), below(2), 1788220800000LL, false, 0);
      break;
    default: fx_grade(c, "t1", "a1", s, v, id, below(2), points[below(4)], below(2) ? "ok" : NULL); break;
    }
  }
}

/* An aggregate of the pool's commands, each taken with probability
 * 1/every (all of them when every is 1), or of `few` commands when few is
 * not 0. */
static model_aggregate_t *draw_aggregate(unsigned every, size_t few) {
  model_aggregate_t *a = model_aggregate_new("t1", 2, "a1", 2);
  if (few) {
    for (size_t i = 0; i < few; i++) model_aggregate_apply(a, &cmds[below((unsigned)ncmds)]);
    return a;
  }
  for (size_t i = 0; i < ncmds; i++)
    if (below(every) == 0) model_aggregate_apply(a, &cmds[i]);
  return a;
}

static bool stamp_differs(bool had, const model_stamp_t *before, bool has, const model_stamp_t *after) {
  if (!has) return false; /* a merge never empties a slot */
  return !had || before->version != after->version || strcmp(before->id, after->id) != 0;
}

/* What the merge of overlay into a clone of stored changed, slot by slot:
 * *header, and the (id, mask) of every student, in order. */
static size_t merge_changes(const model_aggregate_t *stored, const model_aggregate_t *overlay, bool *header,
                            expect_t *out, bool *merge_changed) {
  model_aggregate_t *merged = model_aggregate_clone(stored);
  *merge_changed = model_aggregate_merge(merged, overlay);
  model_header_view_t hb, ha;
  model_aggregate_header(stored, &hb);
  model_aggregate_header(merged, &ha);
  *header = stamp_differs(hb.present, &hb.stamp, ha.present, &ha.stamp);
  size_t n = 0;
  for (size_t i = 0; i < model_aggregate_student_count(merged); i++) {
    model_student_view_t b = {0}, a;
    model_aggregate_student(merged, i, &a);
    size_t at;
    if (model_aggregate_find_student(stored, a.student, a.student_len, &at)) model_aggregate_student(stored, at, &b);
    uint8_t mask = (uint8_t)((stamp_differs(b.has_member, &b.member_stamp, a.has_member, &a.member_stamp)
                                  ? MODEL_SLOT_MEMBER
                                  : 0) |
                             (stamp_differs(b.has_submission, &b.submission_stamp, a.has_submission,
                                            &a.submission_stamp)
                                  ? MODEL_SLOT_SUBMISSION
                                  : 0) |
                             (stamp_differs(b.has_grade, &b.grade_stamp, a.has_grade, &a.grade_stamp)
                                  ? MODEL_SLOT_GRADE
                                  : 0));
    if (!mask) continue;
    set_id(&out[n], a.student);
    out[n++].mask = mask;
  }
  model_aggregate_destroy(merged);
  return n;
}

/* wins appends to what out holds and leaves it normalized. */
START_TEST(wins_appends_and_normalizes) {
  model_aggregate_t *stored = model_aggregate_new("t1", 2, "a1", 2), *overlay = model_aggregate_new("t1", 2, "a1", 2);
  model_command_t c;
  fx_grade(&c, "t1", "a1", "s10", 1, "g1", true, 1, NULL);
  model_aggregate_apply(stored, &c);
  fx_grade(&c, "t1", "a1", "s10", 2, "g2", true, 1, NULL);
  model_aggregate_apply(overlay, &c);
  fx_roster(&c, "t1", "a1", "s1", 1, "r1", true);
  model_aggregate_apply(overlay, &c);
  model_changes_t out = MODEL_CHANGES_INIT;
  add_str(&out, "s2", MODEL_SLOT_MEMBER);
  add_str(&out, "s10", MODEL_SLOT_MEMBER);
  model_aggregate_wins(stored, overlay, &out);
  expect_t want[] = {
      {"s1", MODEL_SLOT_MEMBER}, {"s10", MODEL_SLOT_MEMBER | MODEL_SLOT_GRADE}, {"s2", MODEL_SLOT_MEMBER}};
  assert_records(&out, want, 3);
  ck_assert(!out.header);
  /* the other way round: stored's grade loses to nothing, its s1 is absent */
  model_changes_clear(&out);
  model_aggregate_wins(overlay, stored, &out);
  assert_records(&out, NULL, 0);
  model_aggregate_wins(stored, stored, &out);
  assert_records(&out, NULL, 0);
  model_changes_free(&out);
  model_aggregate_destroy(stored);
  model_aggregate_destroy(overlay);
}
END_TEST

static const struct {
  size_t students;
  unsigned iterations;
} sizes[] = {{4, 1000}, {30, 120}, {300, 12}, {3000, 3}};

START_TEST(wins_are_exactly_what_merge_changes) {
  static expect_t want[MAX_STUDENTS + 1];
  rng = 0x5eed0e57ULL + (uint64_t)_i;
  make_ids(sizes[_i].students);
  size_t walks = 0, lookups = 0;
  for (unsigned iter = 0; iter < sizes[_i].iterations; iter++) {
    draw_pool(sizes[_i].students);
    model_aggregate_t *stored = draw_aggregate(1 + below(3), 0);
    /* overlays as large as stored (walked beside it) or a few commands (looked up in it) */
    size_t few = below(3) == 0 ? 1 + below(4) : 0;
    model_aggregate_t *overlay = below(8) == 0 ? model_aggregate_clone(stored) : draw_aggregate(1 + below(3), few);
    bool lookup = model_aggregate_student_count(overlay) * 16 < model_aggregate_student_count(stored);
    lookups += lookup;
    walks += !lookup;
    bool header, merge_changed;
    size_t n = merge_changes(stored, overlay, &header, want, &merge_changed);
    model_changes_t got = MODEL_CHANGES_INIT;
    model_aggregate_wins(stored, overlay, &got);
    ck_assert_msg(got.header == header, "iteration %u: header %d, merge %d", iter, got.header, header);
    assert_records(&got, want, n);
    ck_assert(merge_changed == (header || n > 0));
    model_changes_free(&got);
    model_aggregate_destroy(stored);
    model_aggregate_destroy(overlay);
  }
  if (sizes[_i].students >= 300) ck_assert_uint_gt(lookups, 0);
  ck_assert_uint_gt(walks, 0);
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("changes");
  TCase *tc = tcase_create("changes");
  tcase_set_timeout(tc, 120);
  const TTest *tests[] = {empty_set_is_normalized_and_owns_nothing, a_burst_on_one_student_is_one_record,
                          normalize_sorts_bytewise_and_ors_repeats,  add_command_names_the_slot_the_type_writes,
                          merge_is_a_union,                          repeats_do_not_grow_the_set,
                          normalize_agrees_with_an_oracle,           wins_appends_and_normalizes};
  for (size_t i = 0; i < sizeof tests / sizeof *tests; i++) tcase_add_test(tc, tests[i]);
  tcase_add_loop_test(tc, wins_are_exactly_what_merge_changes, 0, sizeof sizes / sizeof *sizes);
  suite_add_tcase(s, tc);
  return s;
}
