/* The erased subjects (models/erased.h) and the removal of a student from
 * an aggregate: the set keeps ids and the least stamp only; a student's
 * removal keeps the document's size exact; and the property the erasure
 * rests on, checked on random streams: merging a set of commands in any
 * order, skipping those whose subject is erased by then and erasing at the
 * end what was merged before its erasure came, gives exactly the documents
 * of the same set without every command of the erased subjects, and no
 * document for an aggregate left with no command. */
#include <bson/bson.h>
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "aggregate.h"
#include "codec.h"
#include "erased.h"
#include "model_fixtures.h"
#include "../tools/cmdgen.h"

/* Counts the subjects and checks the stamp kept for t1/s1. */
static void count_subjects(void *ctx, const model_erased_subject_t *s) {
  (*(int *)ctx)++;
  if (s->student_len == 2 && !memcmp(s->student, "s1", 2)) {
    ck_assert_uint_eq(s->version, 3);
    ck_assert_str_eq(s->id, "e3");
  }
}

START_TEST(the_set_keeps_subjects_and_their_least_stamp) {
  model_erased_t *e = model_erased_new();
  ck_assert(model_erased_add(e, "t1", 2, "s1", 2, 5, "e5", 2));
  ck_assert(!model_erased_add(e, "t1", 2, "s1", 2, 7, "e7", 2)); /* known: a later stamp changes nothing */
  ck_assert(!model_erased_add(e, "t1", 2, "s1", 2, 3, "e3", 2)); /* known: an earlier one is kept */
  ck_assert(model_erased_add(e, "t2", 2, NULL, 0, 9, "e9", 2));
  ck_assert(model_erased_add(e, "t1", 2, "", 0, 1, "x", 1) && model_erased_has_tenant(e, "t1", 2));
  ck_assert_uint_eq(model_erased_count(e), 3);
  ck_assert(model_erased_has_student(e, "t1", 2, "s1", 2));
  ck_assert(!model_erased_has_student(e, "t1", 2, "s2", 2));
  ck_assert(!model_erased_has_student(e, "t2", 2, "s1", 2)); /* a student of another tenant */
  ck_assert(model_erased_has_tenant(e, "t2", 2));
  ck_assert(!model_erased_has_tenant(e, "t3", 2));
  ck_assert(!model_erased_has_student(e, "t1", 2, "", 0)); /* a tenant is not a student */
  int seen = 0;
  model_erased_each(e, count_subjects, &seen);
  ck_assert_int_eq(seen, 3);
  model_erased_destroy(e);
  model_erased_destroy(NULL);
}
END_TEST

static size_t bson_size(const model_aggregate_t *agg) {
  bson_t b = BSON_INITIALIZER;
  ck_assert(model_codec_to_bson(agg, 1, 1788220800000LL, &b));
  size_t n = b.len;
  bson_destroy(&b);
  return n;
}

START_TEST(removing_a_student_keeps_the_document_exact) {
  model_aggregate_t *a = model_aggregate_new("t1", 2, "a1", 2);
  ck_assert(model_aggregate_is_empty(a));
  char s[8], id[8];
  model_command_t c;
  for (int i = 0; i < 150; i++) { /* past one run of the table: chunked */
    snprintf(s, sizeof s, "s%03d", i);
    snprintf(id, sizeof id, "g%d", i);
    fx_grade(&c, "t1", "a1", s, 1, id, true, i, "well done");
    model_aggregate_apply(a, &c);
    fx_roster(&c, "t1", "a1", s, 1, id, true);
    model_aggregate_apply(a, &c);
  }
  ck_assert(!model_aggregate_is_empty(a));
  ck_assert(!model_aggregate_remove_student(a, "s999", 4));
  for (int i = 0; i < 150; i += 2) {
    snprintf(s, sizeof s, "s%03d", i);
    ck_assert(model_aggregate_remove_student(a, s, 4));
    ck_assert_uint_eq(model_aggregate_doc_size(a), bson_size(a));
  }
  ck_assert_uint_eq(model_aggregate_student_count(a), 75);
  model_counts_t n = model_aggregate_counts(a);
  ck_assert_int_eq(n.assigned, 75);
  ck_assert_int_eq(n.graded, 75);
  size_t at;
  ck_assert(!model_aggregate_find_student(a, "s000", 4, &at));
  ck_assert(model_aggregate_find_student(a, "s001", 4, &at));
  for (int i = 1; i < 150; i += 2) {
    snprintf(s, sizeof s, "s%03d", i);
    ck_assert(model_aggregate_remove_student(a, s, 4));
  }
  ck_assert(model_aggregate_is_empty(a));
  ck_assert_uint_eq(model_aggregate_doc_size(a), bson_size(a));
  fx_deleted(&c, "t1", "a1", 1, "d1");
  model_aggregate_apply(a, &c);
  ck_assert(!model_aggregate_is_empty(a)); /* a header alone is a document */
  model_aggregate_destroy(a);
}
END_TEST

/* --- the property ---------------------------------------------------------- */

enum { TENANTS = 3, ASSIGNMENTS = 3, STUDENTS = 5, NAGG = TENANTS * ASSIGNMENTS, MAXCMD = 160 };

/* A stream element: a command of the merge, or an erasure (student empty:
 * the tenant). */
typedef struct element {
  bool erasure;
  model_command_t cmd;
} element_t;

static void random_command(uint64_t *rnd, int n, model_command_t *c) {
  char t[16], a[16], s[16], id[16];
  snprintf(t, sizeof t, "t%d", (int)(cmdgen_splitmix(rnd) % TENANTS));
  snprintf(a, sizeof a, "a%d", (int)(cmdgen_splitmix(rnd) % ASSIGNMENTS));
  snprintf(s, sizeof s, "s%d", (int)(cmdgen_splitmix(rnd) % STUDENTS));
  snprintf(id, sizeof id, "c%d", n);
  uint64_t v = 1 + cmdgen_splitmix(rnd) % 6;
  switch (cmdgen_splitmix(rnd) % 5) {
  case 0:
    fx_upsert(c, t, a, v, id, "k1", "Essay", MODEL_ASSIGNMENT_PUBLISHED, false, 0, true, 10);
    break;
  case 1:
    fx_roster(c, t, a, s, v, id, cmdgen_splitmix(rnd) % 3 != 0);
    break;
  case 2:
    fx_submission(c, t, a, s, v, id, MODEL_SUBMISSION_SUBMITTED, true, 1788220800000LL, false, 0);
    break;
  default:
    fx_grade(c, t, a, s, v, id, true, (double)v, "fine");
    break;
  }
}

static int agg_index(const char *tenant, const char *assignment) {
  return (tenant[1] - '0') * ASSIGNMENTS + (assignment[1] - '0');
}

static model_aggregate_t *new_agg(int i) {
  char t[16], a[16];
  snprintf(t, sizeof t, "t%d", i / ASSIGNMENTS);
  snprintf(a, sizeof a, "a%d", i % ASSIGNMENTS);
  return model_aggregate_new(t, 2, a, 2);
}

/* The documents of the elements in the given order: a command whose subject
 * is erased by then is skipped; an erasure is recorded; at the end every
 * aggregate loses what the whole set erases. docs[i] NULL: no document. */
static void merge_online(const element_t *el, const int *order, int n, model_aggregate_t *docs[NAGG]) {
  model_erased_t *e = model_erased_new();
  for (int i = 0; i < NAGG; i++) docs[i] = NULL;
  for (int k = 0; k < n; k++) {
    const element_t *x = &el[order[k]];
    if (x->erasure) {
      model_erased_add(e, x->cmd.tenant, x->cmd.tenant_len, x->cmd.student, x->cmd.student_len, x->cmd.version,
                       x->cmd.id, x->cmd.id_len);
      continue;
    }
    if (model_erased_covers(e, &x->cmd)) continue;
    int i = agg_index(x->cmd.tenant, x->cmd.assignment);
    if (!docs[i]) docs[i] = new_agg(i);
    model_aggregate_apply(docs[i], &x->cmd);
  }
  for (int i = 0; i < NAGG; i++) {
    if (docs[i] && model_erased_apply(e, docs[i]) == MODEL_ERASE_GONE) {
      model_aggregate_destroy(docs[i]);
      docs[i] = NULL;
    }
  }
  model_erased_destroy(e);
}

/* The reference: the commands of subjects that no erasure of the stream
 * names, merged in stream order; an aggregate with none is no document. */
static void merge_without_erased(const element_t *el, int n, model_aggregate_t *docs[NAGG]) {
  for (int i = 0; i < NAGG; i++) docs[i] = NULL;
  for (int k = 0; k < n; k++) {
    const model_command_t *c = &el[k].cmd;
    if (el[k].erasure) continue;
    bool erased = false;
    for (int j = 0; j < n && !erased; j++) {
      const model_command_t *x = &el[j].cmd;
      if (!el[j].erasure || strcmp(x->tenant, c->tenant)) continue;
      erased = x->student_len == 0 || (c->student_len && !strcmp(x->student, c->student));
    }
    if (erased) continue;
    int i = agg_index(c->tenant, c->assignment);
    if (!docs[i]) docs[i] = new_agg(i);
    model_aggregate_apply(docs[i], c);
  }
}

START_TEST(erasure_is_order_free_and_leaves_the_rest) {
  uint64_t rnd = 4401;
  int gone = 0, changed = 0, kept = 0;
  for (int round = 0; round < 150; round++) { /* seconds under valgrind */
    element_t el[MAXCMD];
    int n = 20 + (int)(cmdgen_splitmix(&rnd) % (MAXCMD - 40));
    for (int k = 0; k < n; k++) {
      random_command(&rnd, k, &el[k].cmd);
      el[k].erasure = false;
    }
    int nerase = (int)(cmdgen_splitmix(&rnd) % 4);
    for (int k = 0; k < nerase && n < MAXCMD; k++) { /* erasures, some twice */
      element_t *x = &el[n++];
      x->erasure = true;
      char t[16], s[16], id[16];
      snprintf(t, sizeof t, "t%d", (int)(cmdgen_splitmix(&rnd) % TENANTS));
      snprintf(s, sizeof s, "s%d", (int)(cmdgen_splitmix(&rnd) % STUDENTS));
      snprintf(id, sizeof id, "e%d", k);
      fx_base(&x->cmd, MODEL_CMD_ROSTER_ASSIGNED, t, "", cmdgen_splitmix(&rnd) % 4 == 0 ? NULL : s, 1, id);
      if (cmdgen_splitmix(&rnd) % 3 == 0 && n < MAXCMD) el[n++] = *x;
    }
    model_aggregate_t *want[NAGG], *got[NAGG];
    merge_without_erased(el, n, want);
    for (int shuffle = 0; shuffle < 4; shuffle++) {
      int order[MAXCMD];
      for (int k = 0; k < n; k++) order[k] = k;
      for (int k = n - 1; k > 0 && shuffle; k--) { /* the first pass in stream order */
        int j = (int)(cmdgen_splitmix(&rnd) % (uint64_t)(k + 1));
        int tmp = order[k];
        order[k] = order[j];
        order[j] = tmp;
      }
      merge_online(el, order, n, got);
      for (int i = 0; i < NAGG; i++) {
        ck_assert_msg((want[i] == NULL) == (got[i] == NULL), "round %d, aggregate %d: a document %s", round, i,
                      want[i] ? "missing" : "that should be gone");
        if (want[i]) {
          ck_assert_msg(model_aggregate_equal(want[i], got[i]), "round %d, aggregate %d differs", round, i);
          ck_assert_uint_eq(model_aggregate_doc_size(got[i]), bson_size(got[i]));
        }
        model_aggregate_destroy(got[i]);
      }
    }
    for (int i = 0; i < NAGG; i++) {
      /* what erasure did to this aggregate, against a merge that ignores it */
      model_aggregate_t *all = new_agg(i);
      bool any = false;
      for (int k = 0; k < n; k++)
        if (!el[k].erasure && agg_index(el[k].cmd.tenant, el[k].cmd.assignment) == i) {
          model_aggregate_apply(all, &el[k].cmd);
          any = true;
        }
      if (any && !want[i]) gone++;
      else if (any && !model_aggregate_equal(all, want[i])) changed++;
      else if (any) kept++;
      model_aggregate_destroy(all);
      model_aggregate_destroy(want[i]);
    }
  }
  ck_assert_msg(gone > 20 && changed > 20 && kept > 20, "gone %d, changed %d, kept %d", gone, changed, kept);
}
END_TEST

Suite *test_suite(void) {
  Suite *su = suite_create("erased");
  TCase *tc = tcase_create("erasure");
  tcase_add_test(tc, the_set_keeps_subjects_and_their_least_stamp);
  tcase_add_test(tc, removing_a_student_keeps_the_document_exact);
  tcase_add_test(tc, erasure_is_order_free_and_leaves_the_rest);
  suite_add_tcase(su, tc);
  return su;
}
