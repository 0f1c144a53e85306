/* The state machine of the batch's entries (pipeline/batch_entries.h):
 * every transition keeps the invariants I1-I6 that its header states, and
 * batch_entries_check catches each one broken. The transitions are driven
 * one by one here, as the batch drives them through a flush. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "model_fixtures.h"
#include "pipeline/batch_entries.h"

typedef struct fixture {
  batch_entries_t s;
  uint64_t seq; /* the next command's */
} fixture_t;

static void fx_init(fixture_t *f) {
  batch_entries_init(&f->s);
  f->seq = 0;
}

static void fx_free(fixture_t *f) { batch_entries_free(&f->s); }

#define CHECKED(f)                                                                                                 \
  do {                                                                                                             \
    char why_[160];                                                                                                \
    ck_assert_msg(batch_entries_check(&(f)->s, (f)->seq, why_, sizeof why_), "%s", why_);                          \
  } while (0)

/* A roster command for student of aggregate t1/a applied to its entry, as
 * batch_apply does: recorded, then the transition `change`. */
static batch_entry_t *apply(fixture_t *f, const char *a, const char *student) {
  model_command_t c;
  fx_roster(&c, "t1", a, student, 1, "c", true);
  bool created;
  batch_entry_t *e = batch_cache_get(&f->s.cache, &c, &created);
  size_t before = model_aggregate_student_count(e->agg);
  ck_assert_int_eq(model_aggregate_apply(e->agg, &c), MODEL_APPLY_APPLIED);
  batch_writeset_note(e, &c, before);
  batch_entries_change(&f->s, e, f->seq++, 1000, 1000);
  return e;
}

/* The job loaded e's stored document (here: its own aggregate, as absent
 * from the store, rev 0) and the write landed as rev. */
static void load_and_land(fixture_t *f, batch_entry_t *e, int64_t rev) {
  batch_holds_t holds;
  batch_entries_load(&f->s, e, model_aggregate_clone(e->agg), 0, &holds);
  ck_assert_uint_eq(holds.n, 0);
  batch_entries_landed(&f->s, e, rev, 2000);
}

/* I1, I2, I3: an entry goes through every write state, and is in the right
 * list, with its memory counted in the right bound, after each step. */
START_TEST(every_write_state_keeps_lists_and_bytes) {
  fixture_t f;
  fx_init(&f);
  batch_entry_t *e = apply(&f, "a1", "s1");
  ck_assert_int_eq(batch_entry_state(e), BATCH_ENTRY_DIRTY);
  ck_assert_uint_eq(f.s.pending_bytes, batch_entry_memory(e));
  CHECKED(&f);
  batch_entries_take_off(&f.s, e);
  ck_assert_int_eq(batch_entry_state(e), BATCH_ENTRY_IN_FLIGHT);
  ck_assert_uint_eq(f.s.ws.ndirty, 0);
  CHECKED(&f);
  apply(&f, "a1", "s2"); /* while in flight */
  ck_assert_int_eq(batch_entry_state(e), BATCH_ENTRY_IN_FLIGHT_DIRTY);
  CHECKED(&f);
  load_and_land(&f, e, 1);
  ck_assert_int_eq(batch_entry_state(e), BATCH_ENTRY_DIRTY); /* s2 is not in the store */
  ck_assert_int_eq(e->rev, 1);
  CHECKED(&f);
  batch_entries_take_off(&f.s, e);
  batch_entries_landed(&f.s, e, 2, 3000);
  ck_assert_int_eq(batch_entry_state(e), BATCH_ENTRY_CLEAN);
  ck_assert_uint_eq(f.s.pending_bytes, 0);
  ck_assert_uint_eq(f.s.cache.nclean, 1);
  ck_assert_uint_eq(f.s.cache.bytes, batch_entry_memory(e));
  CHECKED(&f);
  apply(&f, "a1", "s3"); /* out of the LRU, back to the pending bound */
  ck_assert_uint_eq(f.s.cache.nclean, 0);
  ck_assert_uint_eq(f.s.cache.bytes, 0);
  CHECKED(&f);
  batch_entries_take_off(&f.s, e);
  batch_entries_landed(&f.s, e, 3, 4000);
  batch_entries_evict(&f.s, 0, 0);
  ck_assert_uint_eq(f.s.cache.count, 0);
  CHECKED(&f);
  fx_free(&f);
}
END_TEST

/* I4, I5: snapshots that do not land go back to the dirty list's back,
 * older than every dirty change, in the order they were taken; the one
 * changed while in flight keeps its snapshot's seq below its own. */
START_TEST(what_does_not_land_is_owed_oldest_first) {
  fixture_t f;
  fx_init(&f);
  batch_entry_t *a = apply(&f, "a", "s1"), *b = apply(&f, "b", "s1"), *c = apply(&f, "c", "s1");
  ck_assert_ptr_eq(batch_writeset_oldest(&f.s.ws), a);
  batch_entries_take_off(&f.s, a); /* a flush of the two oldest */
  batch_entries_take_off(&f.s, b);
  CHECKED(&f);
  apply(&f, "a", "s2");
  ck_assert_uint_lt(a->flight_seq, a->pend_seq);
  CHECKED(&f);
  batch_entries_owe_again(&f.s, b, NULL); /* newest first, as batch_flush_end settles */
  batch_entries_owe_again(&f.s, a, NULL);
  CHECKED(&f);
  ck_assert_ptr_eq(batch_writeset_oldest(&f.s.ws), a);
  ck_assert_uint_eq(a->pend_seq, 0);
  ck_assert_ptr_eq(f.s.ws.dirty.prev->prev, b);
  ck_assert_ptr_eq(f.s.ws.dirty.next, c);
  ck_assert(a->touched_whole); /* the store's state after a failed write is unknown */
  ck_assert_uint_eq(a->arr_flight.n, 0);
  uint64_t commands = 0; /* its snapshot's command back with the one that came since */
  for (size_t i = 0; i < a->arr_pend.n; i++) commands += a->arr_pend.v[i].n;
  ck_assert_uint_eq(commands, 2);
  fx_free(&f);
}
END_TEST

/* The origin of a command held as its bytes alone. */
static batch_origin_t origin_of(const char *bytes) { return (batch_origin_t){{bytes, strlen(bytes)}, {{0}}}; }

/* I6: an overlay holds its commands; loading hands them over, so that a
 * loaded entry holds none; a conflict makes it an overlay that cannot be
 * rebuilt until it is loaded again. */
START_TEST(only_an_overlay_holds_commands) {
  fixture_t f;
  fx_init(&f);
  batch_entry_t *e = apply(&f, "a1", "s1");
  batch_origin_t cmd1 = origin_of("cmd1");
  batch_entries_hold(&f.s, e, true, &cmd1);
  batch_entries_recount(&f.s, e);
  ck_assert_uint_eq(e->holds.n, 1);
  ck_assert_uint_eq(f.s.pending_bytes, batch_entry_memory(e)); /* holds count as pending */
  CHECKED(&f);
  batch_entries_take_off(&f.s, e);
  batch_holds_t holds;
  batch_entries_load(&f.s, e, model_aggregate_clone(e->agg), 0, &holds);
  ck_assert_uint_eq(holds.n, 1);
  ck_assert_uint_ge(holds.bytes, 4); /* a copy of its bytes */
  batch_holds_release(&holds);
  ck_assert(!holds.n && !holds.bytes && !holds.v);
  ck_assert(e->loaded && !e->holds.n && !e->holds.incomplete);
  batch_entries_unload(&f.s, e); /* a conflict */
  batch_entries_owe_again(&f.s, e, NULL);
  ck_assert(!e->loaded && e->holds.incomplete);
  CHECKED(&f);
  batch_origin_t cmd2 = origin_of("cmd2");
  batch_entries_hold(&f.s, e, true, &cmd2); /* cannot rebuild: nothing is held */
  ck_assert_uint_eq(e->holds.n, 0);
  ck_assert_uint_eq(e->holds.bytes, 0);
  batch_entries_take_off(&f.s, e);
  load_and_land(&f, e, 2);
  ck_assert(!e->holds.incomplete);
  CHECKED(&f);
  fx_free(&f);
}
END_TEST

/* batch_entries_check catches each rule broken, so the tests above fail
 * when a transition breaks one. */
static void assert_broken(fixture_t *f, const char *rule) {
  char why[160];
  ck_assert(!batch_entries_check(&f->s, f->seq, why, sizeof why));
  ck_assert_msg(strstr(why, rule) != NULL, "expected %s, got %s", rule, why);
}

START_TEST(the_check_catches_every_broken_rule) {
  fixture_t f;
  fx_init(&f);
  batch_entry_t *a = apply(&f, "a", "s1"), *b = apply(&f, "b", "s1");
  CHECKED(&f);
  a->dirty = false; /* I1 */
  assert_broken(&f, "I1");
  a->dirty = true;
  f.s.pending_bytes++; /* I3 */
  assert_broken(&f, "I3");
  f.s.pending_bytes--;
  uint64_t s = a->pend_seq; /* I4: a newer than b at the back */
  a->pend_seq = b->pend_seq + 1;
  assert_broken(&f, "I4");
  a->pend_seq = s;
  batch_entries_take_off(&f.s, a);
  apply(&f, "a", "s2");
  s = a->flight_seq;
  a->flight_seq = a->pend_seq; /* I5 */
  assert_broken(&f, "I5");
  a->flight_seq = s;
  batch_entries_take_off(&f.s, b);
  load_and_land(&f, b, 1);
  CHECKED(&f);
  b->loaded = false; /* I2: an overlay in the LRU */
  assert_broken(&f, "I2");
  b->loaded = true;
  b->holds.incomplete = true; /* I6 */
  assert_broken(&f, "I6");
  b->holds.incomplete = false;
  fx_free(&f);
}
END_TEST

Suite *test_suite(void) {
  Suite *su = suite_create("batch_entry");
  TCase *moves = tcase_create("transitions"), *rules = tcase_create("check");
  tcase_add_test(moves, every_write_state_keeps_lists_and_bytes);
  tcase_add_test(moves, what_does_not_land_is_owed_oldest_first);
  tcase_add_test(moves, only_an_overlay_holds_commands);
  tcase_add_test(rules, the_check_catches_every_broken_rule);
  suite_add_tcase(su, moves);
  suite_add_tcase(su, rules);
  return su;
}
