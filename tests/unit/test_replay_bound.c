/* --from / --until bounds (worker/replay/replay_bound.h): every form parses to
 * what it says, every malformed one is refused with a line naming the part
 * at fault, and replay_parse_bound (the CLI's check before it contacts
 * anything) accepts exactly what replay_bound_parse does. */
#include <check.h>
#include <string.h>

#include "replay/replay_bound.h"
#include "replay/replay_source.h"

static replay_bound_t parsed(const char *s, const char *word) {
  replay_bound_t b;
  char err[256] = "";
  ck_assert_msg(replay_bound_parse(s, word, &b, err, sizeof err), "%s: %s", s ? s : "(null)", err);
  int64_t ms = 0;
  bool special;
  ck_assert(replay_parse_bound(s, word, &ms, &special));
  ck_assert(special == (b.kind == REPLAY_BOUND_EDGE));
  return b;
}

START_TEST(edges_and_times) {
  replay_bound_t b = parsed(NULL, "beginning");
  ck_assert_int_eq(b.kind, REPLAY_BOUND_EDGE);
  b = parsed("end", "end");
  ck_assert_int_eq(b.kind, REPLAY_BOUND_EDGE);
  b = parsed("2026-09-14T00:00:01Z", "end");
  ck_assert_int_eq(b.kind, REPLAY_BOUND_TIME);
  ck_assert_int_eq(b.ms, 1789344001000);
  replay_bound_free(&b);
  replay_bound_free(NULL);
}
END_TEST

START_TEST(committed_group) {
  replay_bound_t b = parsed("committed:aggregator", "beginning");
  ck_assert_int_eq(b.kind, REPLAY_BOUND_COMMITTED);
  ck_assert_str_eq(b.group, "aggregator");
  replay_bound_free(&b);
  /* A group name may hold ':' and '=': everything after the prefix is the name. */
  b = parsed("committed:a:b=c", "end");
  ck_assert_str_eq(b.group, "a:b=c");
  replay_bound_free(&b);
}
END_TEST

START_TEST(offsets_per_partition) {
  replay_bound_t b = parsed("offsets:0=10,3=0,cmds.v2-x:3=7,1=9223372036854775807", "beginning");
  ck_assert_int_eq(b.kind, REPLAY_BOUND_OFFSETS);
  ck_assert_uint_eq(b.n, 4);
  ck_assert_ptr_null(b.offsets[0].topic);
  ck_assert_int_eq(b.offsets[0].partition, 0);
  ck_assert_int_eq(b.offsets[0].offset, 10);
  ck_assert_str_eq(b.offsets[2].topic, "cmds.v2-x");
  ck_assert_int_eq(b.offsets[3].offset, INT64_MAX);
  /* TOPIC:P wins over a bare P for that topic; others take the bare P. */
  ck_assert_int_eq(replay_bound_offset_of(&b, "cmds.v2-x", 3)->offset, 7);
  ck_assert_int_eq(replay_bound_offset_of(&b, "other", 3)->offset, 0);
  ck_assert_int_eq(replay_bound_offset_of(&b, "cmds.v2-x", 0)->offset, 10);
  ck_assert_ptr_null(replay_bound_offset_of(&b, "other", 2));
  replay_bound_free(&b);
}
END_TEST

START_TEST(clamping) {
  ck_assert_int_eq(replay_bound_clamp(5, 10, 20), 10);
  ck_assert_int_eq(replay_bound_clamp(25, 10, 20), 20);
  ck_assert_int_eq(replay_bound_clamp(15, 10, 20), 15);
}
END_TEST

START_TEST(malformed) {
  const struct {
    const char *s, *says;
  } bad[] = {
      {"yesterday", "neither end nor"},
      {"beginning", "neither end nor"}, /* the other bound's word */
      {"committed:", "needs a group name"},
      {"offsets:", "needs P=O entries"},
      {"offsets:0", "an entry is P=O"},
      {"offsets:0=1,", "an entry is P=O"},
      {"offsets:x=1", "partition is not a number"},
      {"offsets:-1=1", "partition is not a number"},
      {"offsets:2147483648=1", "partition is not a number"},
      {"offsets:0=-5", "offset is not a number"},
      {"offsets:0=9223372036854775808", "offset is not a number"},
      {"offsets:0=", "offset is not a number"},
      {"offsets::0=1", "an empty topic"},
      {"offsets:0=1,0=2", "named twice"},
      {"offsets:t:0=1,t:0=2", "named twice"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    replay_bound_t b;
    char err[256] = "";
    ck_assert_msg(!replay_bound_parse(bad[i].s, "end", &b, err, sizeof err), "%s parsed", bad[i].s);
    ck_assert_msg(strstr(err, bad[i].says), "%s: '%s' lacks '%s'", bad[i].s, err, bad[i].says);
    ck_assert_msg(!strchr(err, '\n'), "%s: one line", bad[i].s);
    replay_bound_free(&b);
    int64_t ms;
    bool special;
    ck_assert(!replay_parse_bound(bad[i].s, "end", &ms, &special));
  }
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("replay_bound");
  TCase *tc = tcase_create("parse");
  tcase_add_test(tc, edges_and_times);
  tcase_add_test(tc, committed_group);
  tcase_add_test(tc, offsets_per_partition);
  tcase_add_test(tc, clamping);
  tcase_add_test(tc, malformed);
  suite_add_tcase(s, tc);
  return s;
}
