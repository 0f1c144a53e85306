/* cpus_available_at over fake cgroup trees: cgroup v2 cpu.max, v1
 * cfs_quota_us/cfs_period_us, "max" and -1 as no bound, a quota rounded
 * up, no files at all; and always bounded by the affinity mask. */
#include <check.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/cpus.h"

static char root[] = "/tmp/test_cpus.XXXXXX";

static void setup(void) { ck_assert_ptr_nonnull(mkdtemp(root)); }
static void teardown(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  ck_assert_int_eq(system(cmd), 0);
  strcpy(root, "/tmp/test_cpus.XXXXXX");
}

static void put(const char *name, const char *content) {
  char path[512];
  snprintf(path, sizeof path, "%s/%s", root, name);
  char *slash = strrchr(path, '/');
  *slash = '\0';
  mkdir(path, 0755);
  *slash = '/';
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(content, f);
  fclose(f);
}

static size_t affinity(void) {
  cpu_set_t set;
  ck_assert_int_eq(sched_getaffinity(0, sizeof set, &set), 0);
  return (size_t)CPU_COUNT(&set);
}

START_TEST(v2_quota) {
  put("cpu.max", "150000 100000\n");
  ck_assert_uint_eq(cpus_quota_at(root), 2); /* 1.5 CPUs: two threads use it */
  put("cpu.max", "100000 100000\n");
  ck_assert_uint_eq(cpus_quota_at(root), 1);
  put("cpu.max", "50000 100000\n");
  ck_assert_uint_eq(cpus_quota_at(root), 1);
  put("cpu.max", "6400000 100000\n");
  ck_assert_uint_eq(cpus_quota_at(root), 64);
  put("cpu.max", "max 100000\n");
  ck_assert_uint_eq(cpus_quota_at(root), 0);
}
END_TEST

START_TEST(v1_quota) {
  put("cpu/cpu.cfs_quota_us", "250000\n");
  put("cpu/cpu.cfs_period_us", "100000\n");
  ck_assert_uint_eq(cpus_quota_at(root), 3);
  put("cpu/cpu.cfs_quota_us", "-1\n");
  ck_assert_uint_eq(cpus_quota_at(root), 0);
  /* v2's file, when present, is the one read */
  put("cpu/cpu.cfs_quota_us", "100000\n");
  put("cpu.max", "max 100000\n");
  ck_assert_uint_eq(cpus_quota_at(root), 0);
}
END_TEST

START_TEST(no_files_no_bound) {
  ck_assert_uint_eq(cpus_quota_at(root), 0);
  ck_assert_uint_eq(cpus_available_at(root), affinity());
  put("cpu.max", "garbage\n");
  ck_assert_uint_eq(cpus_quota_at(root), 0);
}
END_TEST

/* The smaller of the affinity and the quota. */
START_TEST(bounded_by_both) {
  put("cpu.max", "100000 100000\n");
  ck_assert_uint_eq(cpus_available_at(root), 1);
  put("cpu.max", "100000000 100000\n"); /* 1000 CPUs of quota: the affinity bounds */
  ck_assert_uint_eq(cpus_available_at(root), affinity());
  ck_assert_uint_ge(cpus_available(), 1);
  ck_assert_uint_le(cpus_available(), affinity());
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("cpus");
  TCase *tc = tcase_create("cpus");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, v2_quota);
  tcase_add_test(tc, v1_quota);
  tcase_add_test(tc, no_files_no_bound);
  tcase_add_test(tc, bounded_by_both);
  suite_add_tcase(s, tc);
  return s;
}
