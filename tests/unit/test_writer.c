/* The pipelined writer (worker/writer.c, worker/flusher.c) with the batch,
 * against the in-memory store with a gate and latency (mem_store.h): the
 * thread that merges goes on while a flush is in flight, and the snapshot,
 * commit and conflict hand-overs of batch.h hold. The consumer around them
 * is exercised by test_consumer_mock; this suite and that one also run
 * under ThreadSanitizer (scripts/test). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"
#include "flusher.h"
#include "mem_store.h"
#include "writer.h"

static model_command_t roster(const char *assignment, const char *student, const char *id, uint64_t v, bool on) {
  model_command_t c;
  memset(&c, 0, sizeof c);
  c.type = on ? MODEL_CMD_ROSTER_ASSIGNED : MODEL_CMD_ROSTER_UNASSIGNED;
  c.version = v;
  c.id_len = (uint8_t)strlen(id);
  memcpy(c.id, id, c.id_len);
  c.tenant_len = 2;
  memcpy(c.tenant, "t1", 2);
  c.assignment_len = (uint8_t)strlen(assignment);
  memcpy(c.assignment, assignment, c.assignment_len);
  c.student_len = (uint8_t)strlen(student);
  memcpy(c.student, student, c.student_len);
  return c;
}

static void apply(batch_t *b, const char *assignment, const char *student, const char *id, uint64_t v) {
  model_command_t c = roster(assignment, student, id, v, true);
  ck_assert_int_eq(batch_apply(b, &c, 0, 0), MODEL_APPLY_APPLIED);
}

static batch_t *new_batch(void) {
  batch_limits_t l = {1000, 1000, 0, 1 << 30, 100}; /* linger 0: due as soon as anything is pending */
  return batch_new(&l);
}

static int32_t assigned(mem_store_t *s, const char *key) {
  mem_lock(s);
  doc_t *d = mem_find(s, key);
  int32_t n = d ? model_aggregate_counts(d->agg).assigned : -1;
  mem_unlock(s);
  return n;
}

static int64_t rev_of(mem_store_t *s, const char *key) {
  mem_lock(s);
  doc_t *d = mem_find(s, key);
  int64_t r = d ? d->rev : -1;
  mem_unlock(s);
  return r;
}

/* The batch takes merges while its flush waits in the store; what changed
 * after the snapshot stays dirty and goes with the next flush; the memory
 * of the snapshot in flight counts in pending_bytes. */
START_TEST(merges_continue_while_a_flush_is_in_flight) {
  mem_store_t s;
  mem_init(&s);
  s.hold = true;
  sink_t sink = mem_sink(&s);
  writer_t *w = writer_new(&sink, 0);
  ck_assert_ptr_nonnull(w);
  batch_t *b = new_batch();
  apply(b, "a1", "s1", "c1", 1);
  apply(b, "a2", "s1", "c2", 1);
  writer_job_t *job = batch_flush_begin(b, 0);
  ck_assert_ptr_nonnull(job);
  ck_assert_uint_eq(job->nitems, 2);
  ck_assert(writer_submit(w, job));
  ck_assert(!writer_submit(w, job)); /* one in flight */
  ck_assert(mem_wait_held(&s, 1));    /* the write waits at the gate */
  ck_assert(batch_in_flight(b));
  ck_assert_uint_eq(batch_dirty_count(b), 0);
  ck_assert_uint_gt(batch_pending_bytes(b), 0); /* the live entries and the snapshots in flight */
  size_t before = batch_pending_bytes(b);
  /* The merging thread goes on: a change to an aggregate in flight and a new one. */
  apply(b, "a1", "s2", "c3", 1);
  apply(b, "a3", "s1", "c4", 1);
  ck_assert_uint_eq(batch_dirty_count(b), 2);
  ck_assert(batch_dirty(b));
  ck_assert_uint_gt(batch_pending_bytes(b), before);
  ck_assert_ptr_null(writer_take(w, 0)); /* still held */
  mem_release(&s);
  job = writer_take(w, 30000);
  ck_assert_ptr_nonnull(job);
  ck_assert_int_eq(batch_flush_end(b, job, NULL), BATCH_DONE);
  ck_assert_int_eq(assigned(&s, "t1/a1"), 1); /* the snapshot: s1 only */
  ck_assert_uint_eq(batch_dirty_count(b), 2); /* a1 (s2) and a3 go next */
  job = batch_flush_begin(b, 0);
  ck_assert_uint_eq(job->nitems, 2);
  ck_assert(writer_submit(w, job));
  job = writer_take(w, 30000);
  ck_assert_ptr_nonnull(job);
  ck_assert_int_eq(batch_flush_end(b, job, NULL), BATCH_DONE);
  ck_assert(!batch_dirty(b));
  ck_assert_uint_eq(batch_pending_bytes(b), 0);
  ck_assert_int_eq(assigned(&s, "t1/a1"), 2);
  ck_assert_int_eq(rev_of(&s, "t1/a1"), 2); /* written at rev 1 without a reload: the rev came back */
  ck_assert_int_eq(assigned(&s, "t1/a3"), 1);
  ck_assert_int_eq(mem_get(&s, &s.loads), 2); /* a1, a2 misses in one $in; then a3 */
  writer_destroy(w);
  batch_destroy(b);
  mem_free(&s);
}
END_TEST

/* A miss is loaded by the writer, not the merging thread; commands that
 * arrive for it during the load are merged into the stored document when
 * the flush comes back, and one already in the store is not written. */
START_TEST(loads_happen_in_the_writer) {
  mem_store_t s;
  mem_init(&s);
  model_aggregate_t *stored = model_aggregate_new("t1", 2, "a1", 2);
  model_command_t c0 = roster("a1", "s0", "c0", 5, true);
  model_aggregate_apply(stored, &c0);
  mem_put(&s, stored); /* rev 1, s0 assigned at v5 */
  model_aggregate_destroy(stored);
  s.latency_ms = 200; /* every load and write */
  sink_t sink = mem_sink(&s);
  writer_t *w = writer_new(&sink, 0);
  batch_t *b = new_batch();
  apply(b, "a1", "s0", "c0", 5); /* what the store has already: unchanged, no write */
  writer_job_t *job = batch_flush_begin(b, 0);
  ck_assert(job->items[0].load);
  ck_assert(writer_submit(w, job));
  apply(b, "a1", "s1", "c1", 1); /* during the load */
  job = writer_take(w, 30000);
  ck_assert_ptr_nonnull(job);
  ck_assert_uint_eq(job->unchanged, 1);
  ck_assert_uint_eq(job->written, 0);
  ck_assert_int_eq(batch_flush_end(b, job, NULL), BATCH_DONE);
  ck_assert_int_eq(mem_get(&s, &s.writes), 0);
  ck_assert_uint_eq(batch_dirty_count(b), 1); /* s1 is new */
  job = batch_flush_begin(b, 0);
  ck_assert(!job->items[0].load); /* loaded now: written at the stored rev, no second read */
  ck_assert_int_eq(job->items[0].rev, 1);
  ck_assert(writer_submit(w, job));
  job = writer_take(w, 30000);
  ck_assert_int_eq(batch_flush_end(b, job, NULL), BATCH_DONE);
  ck_assert_int_eq(rev_of(&s, "t1/a1"), 2);
  ck_assert_int_eq(assigned(&s, "t1/a1"), 2);
  ck_assert_int_eq(mem_get(&s, &s.loads), 1);
  writer_destroy(w);
  batch_destroy(b);
  mem_free(&s);
}
END_TEST

/* Another writer lands between our load and our write, while newer changes
 * to the same aggregate are pending here: the conflict is reloaded and
 * merged with everything held (the snapshot and what came after) in the
 * next flush, and nothing goes back in time. */
START_TEST(conflict_while_newer_changes_are_pending) {
  mem_store_t s;
  mem_init(&s);
  sink_t sink = mem_sink(&s);
  writer_t *w = writer_new(&sink, 0);
  batch_t *b = new_batch();
  apply(b, "a1", "s1", "c1", 1);
  writer_job_t *job = batch_flush_begin(b, 0);
  ck_assert(writer_submit(w, job));
  ck_assert_int_eq(batch_flush_end(b, writer_take(w, 30000), NULL), BATCH_DONE); /* rev 1, cached */

  s.hold = true;
  apply(b, "a1", "s2", "c2", 1);
  job = batch_flush_begin(b, 0);
  ck_assert(writer_submit(w, job));
  ck_assert(mem_wait_held(&s, 1));
  /* Meanwhile: another instance writes s9, and a newer change arrives here. */
  model_aggregate_t *other = model_aggregate_new("t1", 2, "a1", 2);
  model_command_t c9 = roster("a1", "s9", "c9", 1, true);
  model_aggregate_apply(other, &c9);
  mem_put(&s, other); /* rev 2 */
  model_aggregate_destroy(other);
  apply(b, "a1", "s3", "c3", 1);
  mem_release(&s);
  job = writer_take(w, 30000);
  ck_assert_uint_eq(job->conflicts, 1);
  store_error_t err;
  ck_assert_int_eq(batch_flush_end(b, job, &err), BATCH_PARTIAL);
  ck_assert(batch_flush_due(b, 0)); /* owed: at once */
  ck_assert_int_eq(batch_deadline(b), 0);
  ck_assert_uint_eq(batch_stats(b)->conflicts, 1);
  job = batch_flush_begin(b, 0);
  ck_assert(job->items[0].load); /* reloaded by the writer */
  ck_assert(writer_submit(w, job));
  ck_assert_int_eq(batch_flush_end(b, writer_take(w, 30000), NULL), BATCH_DONE);
  ck_assert(!batch_dirty(b));
  ck_assert_int_eq(rev_of(&s, "t1/a1"), 3);
  ck_assert_int_eq(assigned(&s, "t1/a1"), 4); /* s1, s2, s3 and the other writer's s9 */
  writer_destroy(w);
  batch_destroy(b);
  mem_free(&s);
}
END_TEST

/* Store down: the flush comes back with no results, everything it held is
 * dirty again and owed, and the memory bound sees it all the time (the
 * snapshot while in flight, the live entries after). */
START_TEST(outage_keeps_everything_and_counts_snapshots) {
  mem_store_t s;
  mem_init(&s);
  s.fail_next = 1000000;
  sink_t sink = mem_sink(&s);
  batch_t *b = new_batch();
  flusher_t *f = flusher_new(b, &sink, 0);
  flusher_set_retry(f, 1, 5);
  char a[8], id[8];
  for (int i = 0; i < 20; i++) {
    snprintf(a, sizeof a, "a%d", i);
    snprintf(id, sizeof id, "c%d", i);
    apply(b, a, "s1", id, 1);
  }
  size_t live = batch_pending_bytes(b);
  ck_assert_uint_gt(live, 0);
  flusher_event_t ev = flusher_step(f, 0, 0, false);
  ck_assert(ev.started);
  ck_assert_uint_ge(batch_pending_bytes(b), 2 * live); /* live entries plus their snapshots */
  int failures = 0;
  for (int i = 0; i < 200 && failures < 3; i++) {
    ev = flusher_step(f, 0, 1000, true);
    if (ev.finished) {
      ck_assert_int_eq(ev.status, BATCH_RETRY);
      ck_assert_uint_eq(ev.attempt, (unsigned)++failures);
      /* All 20 are owed again: dirty, or already in the next flush when the
       * (1-5 ms) backoff had passed by the end of this step. */
      if (ev.started)
        ck_assert(batch_in_flight(b) && batch_dirty_count(b) == 0);
      else
        ck_assert_uint_eq(batch_dirty_count(b), 20);
      ck_assert_uint_ge(batch_pending_bytes(b), live);
    }
  }
  ck_assert_int_eq(failures, 3);
  mem_set(&s, &s.fail_next, 0); /* the store is back */
  for (int i = 0; i < 200 && batch_dirty(b); i++) flusher_step(f, 0, 1000, true);
  ck_assert(!batch_dirty(b));
  ck_assert_uint_eq(batch_pending_bytes(b), 0);
  flusher_destroy(f);
  ck_assert_int_eq(s.n, 20);
  batch_destroy(b);
  mem_free(&s);
}
END_TEST

/* Group commit: while one flush is in flight nothing else starts; when it
 * lands, the next starts at once with everything dirty meanwhile (linger
 * has passed under load), however many commands that was: one write per
 * aggregate, not per command. */
START_TEST(group_commit_takes_everything_dirty) {
  mem_store_t s;
  mem_init(&s);
  s.hold = true;
  sink_t sink = mem_sink(&s);
  batch_limits_t l = {1000000, 1000, 50, 1 << 30, 100};
  batch_t *b = batch_new(&l);
  flusher_t *f = flusher_new(b, &sink, 0);
  apply(b, "a1", "s0", "c0", 1);
  ck_assert(!flusher_step(f, 0, 0, false).started); /* linger not reached */
  ck_assert(flusher_step(f, 50, 0, false).started);
  ck_assert(mem_wait_held(&s, 1));
  char a[8], st[8], id[16];
  for (int i = 0; i < 500; i++) { /* 500 commands over 5 aggregates, during the flush */
    snprintf(a, sizeof a, "a%d", i % 5);
    snprintf(st, sizeof st, "s%d", i);
    snprintf(id, sizeof id, "x%d", i);
    model_command_t c = roster(a, st, id, 1, true);
    batch_apply(b, &c, 0, 60);
    flusher_event_t ev = flusher_step(f, 60 + i, 0, false);
    ck_assert(!ev.started && !ev.finished);
  }
  mem_release(&s);
  flusher_event_t ev;
  do ev = flusher_step(f, 1000, 30000, false);
  while (!ev.finished);
  ck_assert_int_eq(ev.status, BATCH_DONE);
  ck_assert(ev.started); /* the next at once */
  do ev = flusher_step(f, 1000, 30000, false);
  while (!ev.finished);
  ck_assert_int_eq(ev.status, BATCH_DONE);
  ck_assert(!batch_dirty(b));
  flusher_destroy(f);
  ck_assert_int_eq(s.write_items, 1 + 5);
  ck_assert_int_eq(s.writes, 2);
  ck_assert_int_eq(mem_find(&s, "t1/a1")->rev, 2);
  batch_destroy(b);
  mem_free(&s);
}
END_TEST

/* Bulks of batch.max_aggregates: a flush of more dirty aggregates is
 * several writes, and misses are read in $in chunks of the same size. */
START_TEST(bulks_of_max_aggregates) {
  mem_store_t s;
  mem_init(&s);
  sink_t sink = mem_sink(&s);
  batch_limits_t l = {1000, 4, 0, 1 << 30, 100};
  batch_t *b = batch_new(&l);
  char a[8], id[8];
  for (int i = 0; i < 10; i++) {
    snprintf(a, sizeof a, "a%d", i);
    snprintf(id, sizeof id, "c%d", i);
    apply(b, a, "s1", id, 1);
  }
  writer_job_t *job = batch_flush_begin(b, 0);
  writer_execute(&sink, job);
  ck_assert_int_eq(batch_flush_end(b, job, NULL), BATCH_DONE);
  ck_assert_int_eq(s.loads, 3);
  ck_assert_int_eq(s.writes, 3);
  ck_assert_int_eq(s.write_items, 10);
  batch_destroy(b);
  mem_free(&s);
}
END_TEST

int main(void) {
  Suite *su = suite_create("writer");
  TCase *tc = tcase_create("pipelined");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, merges_continue_while_a_flush_is_in_flight);
  tcase_add_test(tc, loads_happen_in_the_writer);
  tcase_add_test(tc, conflict_while_newer_changes_are_pending);
  tcase_add_test(tc, outage_keeps_everything_and_counts_snapshots);
  tcase_add_test(tc, group_commit_takes_everything_dirty);
  tcase_add_test(tc, bulks_of_max_aggregates);
  suite_add_tcase(su, tc);
  SRunner *sr = srunner_create(su);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
