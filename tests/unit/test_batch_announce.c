/* The batch's announcements (batch.h "Announcing"), against the in-memory
 * store of mem_store.h: which writes are announced, at which rev, with
 * which document and which changed slots, and the rule for commands read
 * again after a crash. The event's bytes are models/changes' (test_changes.c);
 * the producer and the commit gate are the consumer's. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changes.h"
#include "mem_store.h"
#include "model_fixtures.h"
#include "pipeline/batch.h"

/* What the announcer saw: one line per announcement, "KEY rev=R at=T sent=S changed=[...]". */
typedef struct seen {
  char lines[32][512];
  int n;
  model_aggregate_t *last; /* a copy of the last document announced */
} seen_t;

static void on_announce(void *ctx, const batch_written_t *w) {
  seen_t *s = ctx;
  ck_assert_int_lt(s->n, 32);
  char changed[256] = "";
  size_t n = 0, pos = 0, len;
  const char *id;
  uint8_t mask;
  if (w->changed->header) n += (size_t)snprintf(changed + n, sizeof changed - n, "header ");
  while (model_changes_next(w->changed, &pos, &id, &len, &mask))
    n += (size_t)snprintf(changed + n, sizeof changed - n, "%s:%s%s%s ", id, mask & MODEL_SLOT_MEMBER ? "m" : "",
                          mask & MODEL_SLOT_SUBMISSION ? "s" : "", mask & MODEL_SLOT_GRADE ? "g" : "");
  snprintf(s->lines[s->n++], sizeof s->lines[0], "%s rev=%lld at=%lld sent=%d changed=[%s]",
           model_aggregate_key(w->agg, NULL), (long long)w->rev, (long long)w->updated_at_ms, (int)w->sent, changed);
  model_aggregate_destroy(s->last);
  s->last = model_aggregate_clone(w->agg);
}

static batch_t *new_batch(seen_t *seen) {
  batch_limits_t l = {1000, 1000, 1000, 1 << 30, 100, 1 << 30};
  batch_t *b = batch_new(&l);
  memset(seen, 0, sizeof *seen);
  batch_set_announcer(b, on_announce, seen);
  return b;
}

static void done(batch_t *b, seen_t *seen, mem_store_t *s) {
  batch_destroy(b);
  model_aggregate_destroy(seen->last);
  mem_free(s);
}

static model_command_t roster(const char *a, const char *student, const char *id, uint64_t v) {
  model_command_t c;
  fx_roster(&c, "t1", a, student, v, id, true);
  return c;
}

static model_command_t grade(const char *a, const char *student, const char *id, uint64_t v, double points) {
  model_command_t c;
  fx_grade(&c, "t1", a, student, v, id, true, points, NULL);
  return c;
}

static void apply(batch_t *b, const model_command_t *c, bool announce, model_apply_result_t want) {
  model_reject_t rej;
  ck_assert_int_eq(batch_apply_from(b, c, NULL, announce, 0, mem_at(0), &rej), want);
}

/* Each write that lands is announced once, at the rev it wrote, with the
 * time of the write and exactly the slots it changed; a stale command
 * changes nothing: no write, no announcement. */
START_TEST(a_write_is_announced_once_with_what_it_changed) {
  mem_store_t s;
  mem_init(&s);
  seen_t seen;
  batch_t *b = new_batch(&seen);
  model_command_t up;
  fx_upsert(&up, "t1", "a1", 1, "u1", "c1", "Essay", MODEL_ASSIGNMENT_PUBLISHED, false, 0, false, 0);
  model_command_t r1 = roster("a1", "s1", "r1", 1), r2 = roster("a1", "s2", "r2", 1), g2 = grade("a1", "s2", "g2", 1, 9);
  apply(b, &up, false, MODEL_APPLY_APPLIED);
  apply(b, &r2, false, MODEL_APPLY_APPLIED);
  apply(b, &r1, false, MODEL_APPLY_APPLIED);
  apply(b, &g2, false, MODEL_APPLY_APPLIED);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(5000)), SINK_OK);
  ck_assert_int_eq(seen.n, 1);
  ck_assert_str_eq(seen.lines[0], "t1/a1 rev=1 at=5000 sent=1 changed=[header s1:m s2:mg ]");
  /* The cached aggregate changes one slot: a partial write, announced with that slot alone. */
  model_command_t g1 = grade("a1", "s1", "g1", 1, 7);
  apply(b, &g1, false, MODEL_APPLY_APPLIED);
  apply(b, &g2, false, MODEL_APPLY_STALE);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(6000)), SINK_OK);
  ck_assert_int_eq(seen.n, 2);
  ck_assert_str_eq(seen.lines[1], "t1/a1 rev=2 at=6000 sent=1 changed=[s1:g ]");
  ck_assert(model_aggregate_equal(seen.last, mem_find(&s, "t1/a1")->agg)); /* the document as stored */
  /* Only stale commands: nothing written, nothing announced. */
  apply(b, &g1, false, MODEL_APPLY_STALE);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(7000)), SINK_OK);
  ck_assert_int_eq(seen.n, 2);
  done(b, &seen, &s);
}
END_TEST

/* A cold worker whose command is already in the store writes nothing and
 * announces nothing; the same command marked `announce` (read again after
 * a crash) is announced at the stored rev with the stored document and its
 * updatedAt, changing nothing; once per epoch. */
START_TEST(a_command_read_again_announces_the_stored_rev_once_per_epoch) {
  mem_store_t s;
  mem_init(&s);
  seen_t seen;
  batch_t *first = new_batch(&seen);
  model_command_t r1 = roster("a1", "s1", "r1", 1), g1 = grade("a1", "s1", "g1", 1, 7);
  apply(first, &r1, false, MODEL_APPLY_APPLIED);
  apply(first, &g1, false, MODEL_APPLY_APPLIED);
  ck_assert_int_eq(mem_flush(first, &s, mem_at(1000)), SINK_OK);
  ck_assert_int_eq(seen.n, 1);
  batch_destroy(first); /* the worker that wrote rev 1 is gone (the store stays) */
  model_aggregate_destroy(seen.last);

  batch_t *b = new_batch(&seen);
  apply(b, &r1, false, MODEL_APPLY_APPLIED); /* an overlay: stale only once the load says so */
  ck_assert_int_eq(mem_flush(b, &s, mem_at(2000)), SINK_OK);
  ck_assert_int_eq(seen.n, 0);
  ck_assert_int_eq(mem_find(&s, "t1/a1")->rev, 1);
  batch_destroy(b);
  model_aggregate_destroy(seen.last);

  b = new_batch(&seen);
  batch_next_epoch(b);
  apply(b, &r1, true, MODEL_APPLY_APPLIED);
  apply(b, &g1, true, MODEL_APPLY_APPLIED); /* to the overlay; the load finds both stored */
  ck_assert_int_eq(mem_flush(b, &s, mem_at(3000)), SINK_OK);
  ck_assert_int_eq(seen.n, 1);
  ck_assert_str_eq(seen.lines[0], "t1/a1 rev=1 at=1000 sent=0 changed=[]");
  ck_assert(model_aggregate_equal(seen.last, mem_find(&s, "t1/a1")->agg));
  ck_assert_int_eq(mem_find(&s, "t1/a1")->rev, 1); /* nothing written */
  /* The same epoch: announced already. */
  apply(b, &g1, true, MODEL_APPLY_STALE);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(4000)), SINK_OK);
  ck_assert_int_eq(seen.n, 1);
  ck_assert_int_eq(s.loads, 3); /* one per worker: a cached aggregate is not read again */
  /* A new epoch (partitions assigned again): the clean cached aggregate may
   * be older than the store, so it is loaded again and announced at the
   * store's rev, here one another writer made. */
  model_aggregate_t *other = model_aggregate_new("t1", 2, "a1", 2);
  model_command_t r9 = roster("a1", "s9", "r9", 1);
  model_aggregate_apply(other, &r9);
  mem_put(&s, other);
  model_aggregate_destroy(other);
  batch_next_epoch(b);
  apply(b, &g1, true, MODEL_APPLY_STALE);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(5000)), SINK_OK);
  ck_assert_int_eq(seen.n, 2);
  ck_assert_int_eq(s.loads, 4);
  ck_assert_str_eq(seen.lines[1], "t1/a1 rev=2 at=1000 sent=0 changed=[]"); /* mem_put keeps updatedAt */
  ck_assert(model_aggregate_equal(seen.last, mem_find(&s, "t1/a1")->agg));
  /* Without `announce`, a stale command for it is nothing again. */
  apply(b, &g1, false, MODEL_APPLY_STALE);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(6000)), SINK_OK);
  ck_assert_int_eq(seen.n, 2);
  done(b, &seen, &s);
}
END_TEST

/* A write that lost the race on rev is reloaded, merged and written again:
 * announced once, at the rev it finally wrote, with what it changed in the
 * document it finally wrote over. */
START_TEST(a_conflict_is_announced_once_at_the_rev_it_wrote) {
  mem_store_t s;
  mem_init(&s);
  seen_t seen;
  batch_t *b = new_batch(&seen);
  model_command_t r1 = roster("a1", "s1", "r1", 1), g1 = grade("a1", "s1", "g1", 1, 7);
  apply(b, &r1, false, MODEL_APPLY_APPLIED);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(1000)), SINK_OK);
  ck_assert_int_eq(seen.n, 1);
  /* Another writer sets s2 and s1's grade (newer than ours) meanwhile. */
  model_aggregate_t *other = model_aggregate_new("t1", 2, "a1", 2);
  model_command_t r2 = roster("a1", "s2", "r2", 1), g1new = grade("a1", "s1", "g1", 2, 8);
  model_aggregate_apply(other, &r2);
  model_aggregate_apply(other, &g1new);
  mem_put(&s, other);
  model_aggregate_destroy(other);
  model_command_t r3 = roster("a1", "s3", "r3", 1);
  apply(b, &g1, false, MODEL_APPLY_APPLIED); /* stale against the store, which it does not know yet */
  apply(b, &r3, false, MODEL_APPLY_APPLIED);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(2000)), SINK_OK); /* a conflict, then rev 3 */
  ck_assert_int_eq(seen.n, 2);
  ck_assert_str_eq(seen.lines[1], "t1/a1 rev=3 at=2000 sent=1 changed=[s3:m ]");
  ck_assert(model_aggregate_equal(seen.last, mem_find(&s, "t1/a1")->agg));
  done(b, &seen, &s);
}
END_TEST

/* A write that fails is announced when it lands, with every slot it
 * changes: those of the failed snapshot and those changed since. */
START_TEST(a_retried_write_announces_what_every_attempt_carried) {
  mem_store_t s;
  mem_init(&s);
  seen_t seen;
  batch_t *b = new_batch(&seen);
  model_command_t r1 = roster("a1", "s1", "r1", 1), r2 = roster("a1", "s2", "r2", 1);
  apply(b, &r1, false, MODEL_APPLY_APPLIED);
  apply(b, &r2, false, MODEL_APPLY_APPLIED);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(1000)), SINK_OK);
  model_command_t g1 = grade("a1", "s1", "g1", 1, 7), g2 = grade("a1", "s2", "g2", 1, 8);
  apply(b, &g1, false, MODEL_APPLY_APPLIED);
  s.fail_next = 1;
  writer_job_t *job = batch_flush_begin(b, mem_at(2000));
  writer_execute(&(sink_t){mem_load, mem_write, mem_ping, &s}, clock_system(), job);
  apply(b, &g2, false, MODEL_APPLY_APPLIED); /* while the failing flush was out */
  ck_assert_int_eq(batch_flush_end(b, job, mem_at(2000), NULL), SINK_RETRY);
  ck_assert_int_eq(seen.n, 1);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(3000)), SINK_OK);
  ck_assert_int_eq(seen.n, 2);
  ck_assert_str_eq(seen.lines[1], "t1/a1 rev=2 at=3000 sent=1 changed=[s1:g s2:g ]");
  done(b, &seen, &s);
}
END_TEST

/* An overlay whose commands partly lose to the stored document announces
 * only the slots its write changed. */
START_TEST(a_miss_announces_only_what_wins_over_the_stored_document) {
  mem_store_t s;
  mem_init(&s);
  seen_t seen;
  batch_t *b = new_batch(&seen);
  model_command_t g1 = grade("a1", "s1", "g1", 5, 7);
  apply(b, &g1, false, MODEL_APPLY_APPLIED);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(1000)), SINK_OK);
  batch_destroy(b);
  model_aggregate_destroy(seen.last);
  b = new_batch(&seen);
  model_command_t old = grade("a1", "s1", "g0", 4, 1), r1 = roster("a1", "s1", "r1", 1);
  apply(b, &old, false, MODEL_APPLY_APPLIED);
  apply(b, &r1, false, MODEL_APPLY_APPLIED);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(2000)), SINK_OK);
  ck_assert_int_eq(seen.n, 1);
  ck_assert_str_eq(seen.lines[0], "t1/a1 rev=2 at=2000 sent=1 changed=[s1:m ]");
  done(b, &seen, &s);
}
END_TEST

/* Without an announcer, `announce` changes nothing: a stale command for a
 * cached aggregate reads and writes nothing. */
START_TEST(without_an_announcer_nothing_is_reloaded) {
  mem_store_t s;
  mem_init(&s);
  seen_t seen;
  batch_t *b = new_batch(&seen);
  batch_set_announcer(b, NULL, NULL);
  batch_next_epoch(b);
  model_command_t r1 = roster("a1", "s1", "r1", 1);
  apply(b, &r1, true, MODEL_APPLY_APPLIED);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(1000)), SINK_OK);
  apply(b, &r1, true, MODEL_APPLY_STALE);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(2000)), SINK_OK);
  ck_assert_int_eq(s.loads, 1);
  ck_assert_int_eq(s.writes, 1);
  ck_assert_int_eq(seen.n, 0);
  done(b, &seen, &s);
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("batch_announce");
  TCase *tc = tcase_create("announce");
  tcase_add_test(tc, a_write_is_announced_once_with_what_it_changed);
  tcase_add_test(tc, a_command_read_again_announces_the_stored_rev_once_per_epoch);
  tcase_add_test(tc, a_conflict_is_announced_once_at_the_rev_it_wrote);
  tcase_add_test(tc, a_retried_write_announces_what_every_attempt_carried);
  tcase_add_test(tc, a_miss_announces_only_what_wins_over_the_stored_document);
  tcase_add_test(tc, without_an_announcer_nothing_is_reloaded);
  suite_add_tcase(s, tc);
  return s;
}
