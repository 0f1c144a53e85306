/* What the commit stage knows about the commits themselves (offsets.h): the
 * time of the oldest message consumed and not yet committed, and where the
 * group's committed offset stands. Both feed the metrics an operator pages
 * on (retention risk, commits stalled), so they must never look better
 * than they are: the age may be overstated by one mark, never understated. */
#include <check.h>
#include <stdint.h>

#include "source/offsets.h"

#define T0 1700000000000LL

/* The group confirmed a commit of partition p up to offset. */
static void confirm(offsets_t *o, offsets_part_t *p, int64_t offset) {
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
  rd_kafka_topic_partition_list_add(l, p->topic, p->partition)->offset = offset;
  offsets_confirmed(o, l);
  rd_kafka_topic_partition_list_destroy(l);
}

START_TEST(nothing_consumed_is_age_zero) {
  offsets_t *o = offsets_new();
  offsets_add(o, "t", 0);
  offsets_part_t *p = offsets_find(o, "t", 0);
  ck_assert_int_eq(offsets_oldest_uncommitted(p), 0);
  ck_assert_int_eq(offsets_commit_base(p), -1);
  offsets_destroy(o);
}
END_TEST

/* A message every 100 ms of message time from offset 500: the oldest
 * uncommitted one is the first until a commit passes it; then the mark the
 * committed offset falls in gives the time, never a later one; once all
 * consumed is committed, 0. */
START_TEST(oldest_follows_commits) {
  offsets_t *o = offsets_new();
  offsets_add(o, "t", 0);
  offsets_part_t *p = offsets_find(o, "t", 0);
  for (int64_t i = 0; i < 100; i++) offsets_consumed(p, 500 + i, T0 + i * 100);
  ck_assert_int_eq(p->next, 600);
  ck_assert_int_eq(offsets_commit_base(p), 500); /* where fetching began: the group's offset then */
  ck_assert_int_eq(offsets_oldest_uncommitted(p), T0);

  confirm(o, p, 535); /* the message at 535 was produced at T0 + 3500 */
  ck_assert_int_eq(offsets_commit_base(p), 535);
  int64_t oldest = offsets_oldest_uncommitted(p);
  ck_assert_int_le(oldest, T0 + 3500);
  ck_assert_int_gt(oldest, T0 + 3500 - OFFSETS_MARK_MS);

  confirm(o, p, 520); /* an older confirmation changes nothing */
  ck_assert_int_eq(offsets_commit_base(p), 535);
  ck_assert_int_eq(offsets_oldest_uncommitted(p), oldest);

  confirm(o, p, 600);
  ck_assert_int_eq(offsets_oldest_uncommitted(p), 0);
  offsets_consumed(p, 600, T0 + 99000);
  ck_assert_int_eq(offsets_oldest_uncommitted(p), T0 + 99000);
  offsets_destroy(o);
}
END_TEST

static int64_t committable_of(offsets_t *o, offsets_part_t *p) {
  rd_kafka_topic_partition_list_t *l = offsets_committable(o, NULL);
  rd_kafka_topic_partition_t *e = rd_kafka_topic_partition_list_find(l, p->topic, p->partition);
  int64_t off = e ? e->offset : -1;
  rd_kafka_topic_partition_list_destroy(l);
  return off;
}

/* A late reject (batch.h) at an offset below rejects already pending takes
 * its place among them: the commit stops at it until its ack, whatever
 * the order of the acks. */
START_TEST(a_late_reject_holds_the_commit_below_later_rejects) {
  offsets_t *o = offsets_new();
  offsets_add(o, "t", 0);
  offsets_part_t *p = offsets_find(o, "t", 0);
  for (int64_t i = 0; i < 40; i++) offsets_consumed(p, i, T0);
  for (int64_t i = 0; i < 20; i++) offsets_reject_pending(p, 20 + i); /* the ring grows past 16 meanwhile */
  offsets_reject_pending(p, 12);
  offsets_reject_pending(p, 5);
  offsets_all_durable(o);
  ck_assert_int_eq(committable_of(o, p), 5);
  for (int64_t i = 0; i < 20; i++) offsets_reject_done(o, "t", 0, 20 + i);
  ck_assert_int_eq(committable_of(o, p), 5);
  offsets_reject_done(o, "t", 0, 5);
  ck_assert_int_eq(committable_of(o, p), 12);
  offsets_reject_done(o, "t", 0, 12);
  ck_assert_int_eq(committable_of(o, p), 40);
  ck_assert(!offsets_rejects_pending(o));
  offsets_destroy(o);
}
END_TEST

/* A message with an older timestamp than the ones before it (producers'
 * clocks differ) still counts. */
START_TEST(older_timestamp_later_counts) {
  offsets_t *o = offsets_new();
  offsets_add(o, "t", 0);
  offsets_part_t *p = offsets_find(o, "t", 0);
  offsets_consumed(p, 0, T0 + 10000);
  offsets_consumed(p, 1, T0 + 20000);
  offsets_consumed(p, 2, T0 + 5000);
  confirm(o, p, 1);
  ck_assert_int_eq(offsets_oldest_uncommitted(p), T0 + 5000);
  offsets_destroy(o);
}
END_TEST

/* Past OFFSETS_MARKS_MAX marks the newest one's span grows: still bounded,
 * and the age of what is left after a commit is never understated. */
START_TEST(marks_stay_bounded) {
  offsets_t *o = offsets_new();
  offsets_add(o, "t", 0);
  offsets_part_t *p = offsets_find(o, "t", 0);
  int64_t n = OFFSETS_MARKS_MAX + 100;
  for (int64_t i = 0; i < n; i++) offsets_consumed(p, i, T0 + i * OFFSETS_MARK_MS);
  ck_assert_uint_eq(p->mk_len, OFFSETS_MARKS_MAX);
  confirm(o, p, n - 10); /* the message there was produced at T0 + (n - 10) marks */
  int64_t oldest = offsets_oldest_uncommitted(p);
  ck_assert_int_le(oldest, T0 + (n - 10) * OFFSETS_MARK_MS);
  ck_assert_int_ge(oldest, T0 + (OFFSETS_MARKS_MAX - 1) * OFFSETS_MARK_MS);
  offsets_destroy(o);
}
END_TEST

/* A partition given up and assigned again starts afresh. */
START_TEST(reassigned_partition_starts_afresh) {
  offsets_t *o = offsets_new();
  offsets_add(o, "t", 0);
  offsets_consumed(offsets_find(o, "t", 0), 7, T0);
  offsets_remove(o, "t", 0);
  offsets_add(o, "t", 0);
  offsets_part_t *p = offsets_find(o, "t", 0);
  ck_assert_int_eq(offsets_oldest_uncommitted(p), 0);
  ck_assert_int_eq(offsets_commit_base(p), -1);
  offsets_destroy(o);
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("offsets");
  TCase *tc = tcase_create("uncommitted");
  tcase_add_test(tc, nothing_consumed_is_age_zero);
  tcase_add_test(tc, oldest_follows_commits);
  tcase_add_test(tc, a_late_reject_holds_the_commit_below_later_rejects);
  tcase_add_test(tc, older_timestamp_later_counts);
  tcase_add_test(tc, marks_stay_bounded);
  tcase_add_test(tc, reassigned_partition_starts_afresh);
  suite_add_tcase(s, tc);
  return s;
}
