/* Property tests of the merge laws: the final
 * aggregates depend only on the SET of valid commands, not on their order,
 * duplicates or batching.
 *
 * Each iteration draws a pool of distinct commands (unique command ids, as
 * commands have) over a few keys and students, with versions from a
 * tiny range so that equal versions with different ids are frequent. Then:
 *  - two streams, each a random permutation of the pool with random
 *    duplicates, applied one at a time, give byte-identical BSON (fixed rev
 *    and updatedAt) and equal aggregates;
 *  - the stream cut into batches of random sizes, each applied into fresh
 *    aggregates and then merged in random order and grouping, gives the same;
 *  - every slot holds the stamp of the greatest command for it in the pool
 *    (an oracle independent of the aggregate code).
 * This runs at four class sizes: 4 students (48 commands at most, so that
 * the same slots collide often), and 30, 300 and 3,000 students (about as
 * many commands per key as students, so that the aggregates have about half of
 * the class: inline at 30, several chunks at 300, dozens at 3,000, split
 * at different students by different orders, and merged both by the
 * linear walk and by offering a small side's slots). Student ids mix forms
 * that share 8-byte prefixes ("stu-00012", "stu-00013"), short ones and
 * long ones, so that chunk lookups fall back from the directory prefix.
 * The seed is fixed; AGG_MERGE_LAWS_SEED and AGG_MERGE_LAWS_ITERATIONS (a
 * multiplier of each size's iterations, default 1) override it for longer
 * runs. A failure prints the seed, size and iteration. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "model_fixtures.h"

#define NKEYS 3
#define MAX_STUDENTS 3000
#define MAX_POOL (48 + NKEYS * MAX_STUDENTS)
#define MAX_STREAM (MAX_POOL * 3)

static const char *const tenants[NKEYS] = {"t1", "t1", "t2"};
static const char *const assignments[NKEYS] = {"a1", "a2", "a1"};
static const char *const small_class[4] = {"s1", "s2", "S", "s-10"};
static char students[MAX_STUDENTS][40];
static size_t nstudents;
static size_t by_name[MAX_STUDENTS]; /* student indexes sorted by id */

static int cmp_by_name(const void *x, const void *y) {
  return strcmp(students[*(const size_t *)x], students[*(const size_t *)y]);
}

static void make_class(size_t n) {
  nstudents = n;
  for (size_t i = 0; i < n; i++) {
    if (n == 4) snprintf(students[i], sizeof students[i], "%s", small_class[i]);
    else if (i % 3 == 0) snprintf(students[i], sizeof students[i], "stu-%05zu", i);
    else if (i % 3 == 1) snprintf(students[i], sizeof students[i], "S%zu", i);
    else snprintf(students[i], sizeof students[i], "s_%zu_of_the_class", i);
    by_name[i] = i;
  }
  qsort(by_name, n, sizeof *by_name, cmp_by_name);
}

/* The index of a student id (binary search over by_name). */
static size_t student_index(const char *id) {
  size_t lo = 0, hi = nstudents;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(id, students[by_name[mid]]);
    if (!c) return by_name[mid];
    if (c < 0) hi = mid;
    else lo = mid + 1;
  }
  ck_abort_msg("unknown student %s", id);
  return 0;
}

static uint64_t rng;
static uint64_t next(void) {
  rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
  return rng * 2685821657736338717ULL;
}
static unsigned below(unsigned n) { return (unsigned)(next() % n); }

static model_command_t pool[MAX_POOL];
static int pool_key[MAX_POOL];
static size_t pool_student[MAX_POOL];
static size_t npool;

static void random_id(char *out, char used[][16], size_t nused) {
  static const char alphabet[] = "aAb~!0";
  if (nused >= 48) { /* large pools: a random tie-breaking prefix, unique by the suffix */
    size_t len = 1 + below(3);
    for (size_t i = 0; i < len; i++) out[i] = alphabet[below(sizeof alphabet - 1)];
    snprintf(out + len, 16 - len, "%x", (unsigned)nused);
    return;
  }
  for (;;) {
    size_t len = 1 + below(3);
    for (size_t i = 0; i < len; i++) out[i] = alphabet[below(sizeof alphabet - 1)];
    out[len] = 0;
    bool dup = false;
    for (size_t i = 0; i < nused && !dup; i++) dup = !strcmp(used[i], out);
    if (!dup) return;
  }
}

static void draw_pool(void) {
  static char used[MAX_POOL][16];
  static const double points[] = {0, 0.5, 87.5, 100, 1.0 / 3, 10000};
  static const char *const feedback[] = {NULL, "", "ok", "tr\xc3\xa8s bien"};
  npool = 1 + below(48) + (nstudents > 4 ? NKEYS * nstudents : 0);
  for (size_t i = 0; i < npool; i++) {
    char id[16];
    random_id(id, used, i);
    strcpy(used[i], id);
    int k = (int)below(NKEYS);
    pool_key[i] = k;
    pool_student[i] = below((unsigned)nstudents);
    const char *t = tenants[k], *a = assignments[k], *s = students[pool_student[i]];
    uint64_t v = 1 + below(3);
    model_command_t *c = &pool[i];
    switch (below(6)) {
    case 0:
      fx_upsert(c, t, a, v, id, below(2) ? "c1" : "c2", below(2) ? "Essay" : "Quiz", (model_assignment_status_t)below(3),
                below(2), (int64_t)below(1000000) * 1000, below(2), points[below(6)]);
      break;
    case 1: fx_deleted(c, t, a, v, id); break;
    case 2: fx_roster(c, t, a, s, v, id, true); break;
    case 3: fx_roster(c, t, a, s, v, id, false); break;
    case 4: {
      model_submission_status_t st = (model_submission_status_t)below(4);
      fx_submission(c, t, a, s, v, id, st, below(2), 1788220800000LL + below(100000), below(2), 1788300000000LL);
      break;
    }
    default: fx_grade(c, t, a, s, v, id, below(2), points[below(6)], feedback[below(4)]); break;
    }
  }
}

/* A random multiset over the pool (every command at least once), shuffled. */
static size_t draw_stream(size_t *stream) {
  size_t n = 0;
  for (size_t i = 0; i < npool; i++) {
    unsigned copies = 1 + (below(4) == 0) + (below(8) == 0);
    for (unsigned c = 0; c < copies; c++) stream[n++] = i;
  }
  for (size_t i = n; i > 1; i--) {
    size_t j = below((unsigned)i);
    size_t t = stream[i - 1];
    stream[i - 1] = stream[j];
    stream[j] = t;
  }
  return n;
}

static void new_set(model_aggregate_t **aggs) {
  for (int k = 0; k < NKEYS; k++) {
    aggs[k] = model_aggregate_new(tenants[k], strlen(tenants[k]), assignments[k], strlen(assignments[k]));
    ck_assert_ptr_nonnull(aggs[k]);
  }
}

static void free_set(model_aggregate_t **aggs) {
  for (int k = 0; k < NKEYS; k++) model_aggregate_destroy(aggs[k]);
}

static void apply_range(model_aggregate_t **aggs, const size_t *stream, size_t from, size_t to) {
  for (size_t i = from; i < to; i++) model_aggregate_apply(aggs[pool_key[stream[i]]], &pool[stream[i]]);
}

static void assert_same(model_aggregate_t **x, model_aggregate_t **y, const char *what, unsigned iter) {
  for (int k = 0; k < NKEYS; k++) {
    bson_t bx = BSON_INITIALIZER, by = BSON_INITIALIZER;
    ck_assert(model_codec_to_bson(x[k], 1, 0, &bx));
    ck_assert(model_codec_to_bson(y[k], 1, 0, &by));
    bool same = bx.len == by.len && !memcmp(bson_get_data(&bx), bson_get_data(&by), bx.len);
    if (!same && bx.len + by.len < 16384) { /* large classes: the message alone, not 1 MB of JSON */
      char *jx = bson_as_relaxed_extended_json(&bx, NULL), *jy = bson_as_relaxed_extended_json(&by, NULL);
      fprintf(stderr, "iteration %u, %s, key %d:\n  %s\n  %s\n", iter, what, k, jx, jy);
      bson_free(jx);
      bson_free(jy);
    }
    ck_assert_msg(same, "iteration %u: %s differs (seed in test header)", iter, what);
    ck_assert_msg(model_aggregate_equal(x[k], y[k]), "iteration %u: %s: equal() disagrees with BSON", iter, what);
    bson_destroy(&bx);
    bson_destroy(&by);
  }
}

static int stamp_cmp(uint64_t va, const char *ia, uint64_t vb, const char *ib) {
  if (va != vb) return va < vb ? -1 : 1;
  return strcmp(ia, ib);
}

/* The oracle: each slot holds the greatest stamp the pool has for it. */
static void assert_max_stamps(model_aggregate_t **aggs, unsigned iter) {
  static const model_command_t *best[1 + MAX_STUDENTS * 3];
  for (int k = 0; k < NKEYS; k++) {
    memset(best, 0, sizeof best);
    for (size_t i = 0; i < npool; i++) {
      if (pool_key[i] != k) continue;
      const model_command_t *c = &pool[i];
      size_t slot = 0;
      if (model_cmd_type_has_student(c->type)) {
        size_t kind = c->type == MODEL_CMD_SUBMISSION_UPDATED ? 1 : c->type == MODEL_CMD_GRADE_UPDATED ? 2 : 0;
        slot = 1 + pool_student[i] * 3 + kind;
      }
      if (!best[slot] || stamp_cmp(c->version, c->id, best[slot]->version, best[slot]->id) > 0) best[slot] = c;
    }
    model_header_view_t h;
    model_aggregate_header(aggs[k], &h);
    ck_assert_msg(h.present == (best[0] != NULL), "iteration %u: header presence", iter);
    if (best[0]) {
      ck_assert_msg(h.stamp.version == best[0]->version && !strcmp(h.stamp.id, best[0]->id),
                    "iteration %u: header stamp", iter);
      ck_assert(h.deleted == (best[0]->type == MODEL_CMD_ASSIGNMENT_DELETED));
    }
    /* every student of the aggregate, in order, against the oracle; then
     * every student the oracle has must have been seen */
    size_t seen = 0, n = model_aggregate_student_count(aggs[k]);
    model_student_view_t v, prev;
    for (size_t i = 0; i < n; i++) {
      model_aggregate_student(aggs[k], i, &v);
      if (i) ck_assert_msg(strcmp(prev.student, v.student) < 0, "iteration %u: students out of order", iter);
      prev = v;
      size_t s = student_index(v.student);
      const model_command_t *m = best[1 + s * 3], *x = best[2 + s * 3], *g = best[3 + s * 3];
      ck_assert_msg(m || x || g, "iteration %u: student %s has no command", iter, v.student);
      ck_assert(v.has_member == (m != NULL) && v.has_submission == (x != NULL) && v.has_grade == (g != NULL));
      if (m) {
        ck_assert(v.member_stamp.version == m->version && !strcmp(v.member_stamp.id, m->id));
        ck_assert(v.assigned == (m->type == MODEL_CMD_ROSTER_ASSIGNED));
      }
      if (x) {
        ck_assert(v.submission_stamp.version == x->version && !strcmp(v.submission_stamp.id, x->id));
        ck_assert_int_eq(v.submission_status, x->data.submission.status);
      }
      if (g) {
        ck_assert(v.grade_stamp.version == g->version && !strcmp(v.grade_stamp.id, g->id));
        ck_assert(v.has_points == g->data.grade.has_points && v.has_feedback == g->data.grade.has_feedback);
      }
    }
    for (size_t s = 0; s < nstudents; s++) seen += best[1 + s * 3] || best[2 + s * 3] || best[3 + s * 3];
    ck_assert_uint_eq(seen, n);
  }
}

/* Applies the stream in batches of random sizes into separate aggregates,
 * then merges them in a random order and grouping. */
static void batched(const size_t *stream, size_t n, model_aggregate_t **out) {
  static model_aggregate_t *parts[MAX_STREAM + 1][NKEYS];
  size_t nparts = 0, small = n / 64 > 4 ? n / 64 : 4;
  for (size_t from = 0; from < n;) {
    size_t size = 1 + below(below(2) ? (unsigned)small : (unsigned)n);
    size_t to = from + size > n ? n : from + size;
    new_set(parts[nparts]);
    apply_range(parts[nparts], stream, from, to);
    nparts++;
    from = to;
  }
  if (nparts == 0) new_set(parts[nparts++]);
  /* merge a random pair (dst <- src) until one set is left */
  while (nparts > 1) {
    size_t d = below((unsigned)nparts), s = below((unsigned)nparts - 1);
    if (s >= d) s++;
    for (int k = 0; k < NKEYS; k++) {
      model_aggregate_merge(parts[d][k], parts[s][k]);
      ck_assert(!model_aggregate_merge(parts[d][k], parts[s][k])); /* idempotent */
    }
    free_set(parts[s]);
    memcpy(parts[s], parts[nparts - 1], sizeof parts[s]);
    nparts--;
  }
  memcpy(out, parts[0], sizeof parts[0]);
}

/* Class sizes and their iterations (a few seconds each under valgrind). */
static const struct {
  size_t students;
  unsigned iterations;
} sizes[] = {{4, 3000}, {30, 150}, {300, 15}, {3000, 2}};

START_TEST(test_merge_laws) {
  uint64_t seed = 0x5eed0003ULL;
  unsigned mult = 1;
  const char *e = getenv("AGG_MERGE_LAWS_SEED");
  if (e) seed = strtoull(e, NULL, 0);
  e = getenv("AGG_MERGE_LAWS_ITERATIONS");
  if (e) mult = (unsigned)strtoul(e, NULL, 0);
  rng = (seed ? seed : 1) + (uint64_t)_i;
  make_class(sizes[_i].students);
  unsigned iterations = sizes[_i].iterations * mult;
  static size_t s1[MAX_STREAM], s2[MAX_STREAM];
  fprintf(stderr, "merge laws: %zu students, %u iterations\n", nstudents, iterations);
  for (unsigned iter = 0; iter < iterations; iter++) {
    draw_pool();
    size_t n1 = draw_stream(s1), n2 = draw_stream(s2);
    model_aggregate_t *x[NKEYS], *y[NKEYS], *z[NKEYS];
    new_set(x);
    new_set(y);
    apply_range(x, s1, 0, n1);
    apply_range(y, s2, 0, n2);
    assert_same(x, y, "permutation with duplicates", iter);
    if (nstudents >= 300) /* more than one run: chunked (RUN_MAX_N in models/aggregate.c) */
      for (int k = 0; k < NKEYS; k++) ck_assert_uint_gt(model_aggregate_student_count(x[k]), 64);
    assert_max_stamps(x, iter);
    batched(s2, n2, z);
    assert_same(x, z, "batches merged", iter);
    /* a replay of everything onto the final state changes nothing */
    for (size_t i = 0; i < n1; i++)
      ck_assert_int_eq(model_aggregate_apply(z[pool_key[s1[i]]], &pool[s1[i]]), MODEL_APPLY_STALE);
    for (int k = 0; k < NKEYS; k++) {
      model_aggregate_t *c = model_aggregate_clone(x[k]);
      ck_assert(!model_aggregate_merge(c, y[k]));
      model_aggregate_destroy(c);
    }
    free_set(x);
    free_set(y);
    free_set(z);
  }
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("merge_laws");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 300); /* valgrind on a shared 2-core machine: the 4-student loop took > 120 s under load */
  tcase_add_loop_test(tc, test_merge_laws, 0, (int)(sizeof sizes / sizeof sizes[0]));
  suite_add_tcase(s, tc);
  return s;
}
