/* The one sort, search and k-way merge by aggregate key (models/keys.h), and the
 * clocks a test drives by hand (worker/base/clock.h). */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "keys.h"

typedef struct {
  const char *key;
  int payload;
} elem_t;

static const char *key_of_elem(const void *e, void *ctx) {
  (void)ctx;
  return ((const elem_t *)e)->key;
}

START_TEST(sort_orders_by_key_bytes) {
  elem_t v[] = {{"t1/b", 1}, {"t1/a", 2}, {"T1/z", 3}, {"t1/a0", 4}, {"t0/zz", 5}};
  size_t n = sizeof v / sizeof *v;
  model_keys_sort(v, n, sizeof *v, key_of_elem, NULL);
  const char *want[] = {"T1/z", "t0/zz", "t1/a", "t1/a0", "t1/b"};
  for (size_t i = 0; i < n; i++) ck_assert_str_eq(v[i].key, want[i]);
  ck_assert_int_eq(v[2].payload, 2); /* elements move whole */
}
END_TEST

static int strcmp_elems(const void *a, const void *b) {
  return strcmp(((const elem_t *)a)->key, ((const elem_t *)b)->key);
}

/* Keys of 0 to 19 bytes over a 3-letter alphabet (so that many share their
 * first 8 bytes, and some are prefixes of others), high bytes among them:
 * the order is strcmp's (bytes as unsigned), duplicates included. */
START_TEST(sort_agrees_with_strcmp_on_shared_prefixes) {
  enum { N = 3000 };
  static char keys[N][20];
  static elem_t v[N], want[N];
  static const char alphabet[] = {'a', 'b', '\xe9'};
  unsigned seed = 12345;
  for (size_t i = 0; i < N; i++) {
    seed = seed * 1103515245u + 12345u;
    size_t len = (seed >> 16) % 20;
    for (size_t j = 0; j < len; j++) {
      seed = seed * 1103515245u + 12345u;
      keys[i][j] = alphabet[(seed >> 16) % 3];
    }
    keys[i][len] = 0;
    v[i] = want[i] = (elem_t){keys[i], (int)i};
  }
  model_keys_sort(v, N, sizeof *v, key_of_elem, NULL);
  qsort(want, N, sizeof *want, strcmp_elems);
  for (size_t i = 0; i < N; i++) ck_assert_msg(!strcmp(v[i].key, want[i].key), "at %zu", i);
  for (size_t i = 0; i < N; i++) ck_assert_ptr_eq(v[i].key, keys[v[i].payload]); /* elements move whole */
}
END_TEST

START_TEST(find_returns_the_index_or_n) {
  elem_t v[] = {{"a", 0}, {"b", 0}, {"c", 0}, {"e", 0}};
  size_t n = sizeof v / sizeof *v;
  for (size_t i = 0; i < n; i++) ck_assert_uint_eq(model_keys_find(v, n, sizeof *v, key_of_elem, NULL, v[i].key), i);
  ck_assert_uint_eq(model_keys_find(v, n, sizeof *v, key_of_elem, NULL, "d"), n);
  ck_assert_uint_eq(model_keys_find(v, n, sizeof *v, key_of_elem, NULL, ""), n);
  ck_assert_uint_eq(model_keys_find(v, n, sizeof *v, key_of_elem, NULL, "f"), n);
  ck_assert_uint_eq(model_keys_find(v, 0, sizeof *v, key_of_elem, NULL, "a"), 0);
}
END_TEST

START_TEST(lower_bound_is_the_first_key_not_below) {
  elem_t v[] = {{"a", 0}, {"b", 0}, {"c", 0}, {"e", 0}};
  size_t n = sizeof v / sizeof *v;
  for (size_t i = 0; i < n; i++)
    ck_assert_uint_eq(model_keys_lower_bound(v, n, sizeof *v, key_of_elem, NULL, v[i].key), i);
  ck_assert_uint_eq(model_keys_lower_bound(v, n, sizeof *v, key_of_elem, NULL, ""), 0);
  ck_assert_uint_eq(model_keys_lower_bound(v, n, sizeof *v, key_of_elem, NULL, "bb"), 2); /* a prefix sorts first */
  ck_assert_uint_eq(model_keys_lower_bound(v, n, sizeof *v, key_of_elem, NULL, "d"), 3);
  ck_assert_uint_eq(model_keys_lower_bound(v, n, sizeof *v, key_of_elem, NULL, "f"), n);
  ck_assert_uint_eq(model_keys_lower_bound(v, 0, sizeof *v, key_of_elem, NULL, "a"), 0);
}
END_TEST

/* Runs sorted by key, one of them empty, merged into key order: each
 * element once, its run named, every run taken to its end. */
START_TEST(merge_takes_the_least_next_element_of_the_runs) {
  elem_t r0[] = {{"a", 0}, {"d", 0}, {"e", 0}}, r2[] = {{"b", 2}, {"c", 2}, {"f", 2}, {"g", 2}};
  model_keys_run_t runs[] = {{r0, 3, 0}, {NULL, 0, 0}, {r2, 4, 0}};
  model_keys_order_t by_key = {key_of_elem, NULL};
  const char *want[] = {"a", "b", "c", "d", "e", "f", "g"};
  const elem_t *e;
  size_t n = 0, run = 99;
  while ((e = model_keys_merge_next(runs, 3, sizeof *e, model_keys_compare, &by_key, &run))) {
    ck_assert_uint_lt(n, 7);
    ck_assert_str_eq(e->key, want[n++]);
    ck_assert_uint_eq(run, (size_t)e->payload);
  }
  ck_assert_uint_eq(n, 7);
  ck_assert_uint_eq(runs[0].pos, 3);
  ck_assert_uint_eq(runs[2].pos, 4);
  ck_assert_ptr_null(model_keys_merge_next(runs, 0, sizeof *e, model_keys_compare, &by_key, NULL));
}
END_TEST

static int by_int(const void *a, const void *b, void *ctx) {
  (void)ctx;
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

/* Any order: among equal elements, the earliest run's comes first. */
START_TEST(merge_takes_equal_elements_from_the_earliest_run_first) {
  int r0[] = {1, 3}, r1[] = {1, 2, 3};
  model_keys_run_t runs[] = {{r1, 3, 0}, {r0, 2, 0}};
  size_t want_run[] = {0, 1, 0, 0, 1}, run, n = 0;
  int want[] = {1, 1, 2, 3, 3};
  for (const int *e; (e = model_keys_merge_next(runs, 2, sizeof *e, by_int, NULL, &run)); n++) {
    ck_assert_uint_lt(n, 5);
    ck_assert_int_eq(*e, want[n]);
    ck_assert_uint_eq(run, want_run[n]);
  }
  ck_assert_uint_eq(n, 5);
}
END_TEST

/* Sorting an index array with the indexed items as context, as a bulk does. */
static const char *key_of_index(const void *e, void *ctx) { return ((const char *const *)ctx)[*(const size_t *)e]; }

START_TEST(sort_through_an_index_with_context) {
  const char *items[] = {"k3", "k1", "k2"};
  size_t idx[] = {0, 1, 2};
  model_keys_sort(idx, 3, sizeof *idx, key_of_index, items);
  ck_assert_uint_eq(idx[0], 1);
  ck_assert_uint_eq(idx[1], 2);
  ck_assert_uint_eq(idx[2], 0);
  ck_assert_uint_eq(model_keys_find(idx, 3, sizeof *idx, key_of_index, items, "k3"), 2);
}
END_TEST

START_TEST(manual_clock_moves_only_when_told) {
  clock_manual_t m;
  clock_manual_init(&m, 1000, 1700000000000);
  const clock_source_t *c = &m.source;
  ck_assert_int_eq(clock_mono(c), 1000);
  ck_assert_int_eq(clock_wall(c), 1700000000000);
  clock_manual_advance(&m, 250);
  ck_assert_int_eq(clock_mono(c), 1250);
  ck_assert_int_eq(clock_wall(c), 1700000000250);
  clock_manual_step_wall(&m, -60000); /* a step back moves the wall clock only */
  ck_assert_int_eq(clock_mono(c), 1250);
  ck_assert_int_eq(clock_wall(c), 1699999940250);
}
END_TEST

START_TEST(system_clock_is_the_process_clock) {
  const clock_source_t *c = clock_system();
  int64_t m0 = clock_mono_ms(), w0 = clock_wall_ms();
  int64_t m = clock_mono(c), w = clock_wall(c);
  ck_assert_int_ge(m, m0);
  ck_assert_int_ge(w, w0 - 1000); /* the wall clock may step back, not by a second here */
  ck_assert_int_ge(clock_mono_ms(), m);
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("keys");
  TCase *tc = tcase_create("keys");
  tcase_add_test(tc, sort_orders_by_key_bytes);
  tcase_add_test(tc, sort_agrees_with_strcmp_on_shared_prefixes);
  tcase_add_test(tc, find_returns_the_index_or_n);
  tcase_add_test(tc, lower_bound_is_the_first_key_not_below);
  tcase_add_test(tc, merge_takes_the_least_next_element_of_the_runs);
  tcase_add_test(tc, merge_takes_equal_elements_from_the_earliest_run_first);
  tcase_add_test(tc, sort_through_an_index_with_context);
  tcase_add_test(tc, manual_clock_moves_only_when_told);
  tcase_add_test(tc, system_clock_is_the_process_clock);
  suite_add_tcase(s, tc);
  return s;
}
