/* The pipelined writer (worker/pipeline/writer.c, worker/pipeline/flusher.c) with the batch,
 * against the in-memory store with a gate and latency (mem_store.h): the
 * thread that merges goes on while a flush is in flight, and the snapshot,
 * commit and conflict hand-overs of batch.h hold. The consumer around them
 * is exercised by test_consumer_mock; this suite and that one also run
 * under ThreadSanitizer (scripts/test). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pipeline/batch.h"
#include "base/clock.h"
#include "base/log.h"
#include "pipeline/flusher.h"
#include "mem_store.h"
#include "model_fixtures.h"
#include "source/offsets.h"
#include "pipeline/writer.h"

/* A roster command of tenant t1 (model_fixtures.h). */
static model_command_t roster(const char *assignment, const char *student, const char *id, uint64_t v, bool on) {
  model_command_t c;
  fx_roster(&c, "t1", assignment, student, v, id, on);
  return c;
}

static void apply(batch_t *b, const char *assignment, const char *student, const char *id, uint64_t v) {
  model_command_t c = roster(assignment, student, id, v, true);
  ck_assert_int_eq(batch_apply(b, &c, 0, mem_at(0), NULL), MODEL_APPLY_APPLIED);
}

static batch_t *new_batch(void) {
  batch_limits_t l = {1000, 1000, 0, 1 << 30, 100, 1 << 30}; /* linger 0: due as soon as anything is pending */
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
  writer_t *w = writer_new(&sink, 0, clock_system());
  ck_assert_ptr_nonnull(w);
  batch_t *b = new_batch();
  apply(b, "a1", "s1", "c1", 1);
  apply(b, "a2", "s1", "c2", 1);
  writer_job_t *job = batch_flush_begin(b, mem_at(0));
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
  ck_assert_int_eq(batch_flush_end(b, job, mem_at(0), NULL), SINK_OK);
  ck_assert_int_eq(assigned(&s, "t1/a1"), 1); /* the snapshot: s1 only */
  ck_assert_uint_eq(batch_dirty_count(b), 2); /* a1 (s2) and a3 go next */
  job = batch_flush_begin(b, mem_at(0));
  ck_assert_uint_eq(job->nitems, 2);
  ck_assert(writer_submit(w, job));
  job = writer_take(w, 30000);
  ck_assert_ptr_nonnull(job);
  ck_assert_int_eq(batch_flush_end(b, job, mem_at(0), NULL), SINK_OK);
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
  s.hold_loads = true; /* the load waits at the gate until the command below came */
  sink_t sink = mem_sink(&s);
  writer_t *w = writer_new(&sink, 0, clock_system());
  batch_t *b = new_batch();
  apply(b, "a1", "s0", "c0", 5); /* what the store has already: unchanged, no write */
  writer_job_t *job = batch_flush_begin(b, mem_at(0));
  ck_assert(job->items[0].load);
  ck_assert(writer_submit(w, job));
  ck_assert(mem_wait_held(&s, 1));
  apply(b, "a1", "s1", "c1", 1); /* during the load */
  mem_release(&s);
  job = writer_take(w, 30000);
  ck_assert_ptr_nonnull(job);
  ck_assert_uint_eq(job->unchanged, 1);
  ck_assert_uint_eq(job->written, 0);
  ck_assert_int_eq(batch_flush_end(b, job, mem_at(0), NULL), SINK_OK);
  ck_assert_int_eq(mem_get(&s, &s.writes), 0);
  ck_assert_uint_eq(batch_dirty_count(b), 1); /* s1 is new */
  job = batch_flush_begin(b, mem_at(0));
  ck_assert(!job->items[0].load); /* loaded now: written at the stored rev, no second read */
  ck_assert_int_eq(job->items[0].rev, 1);
  ck_assert(writer_submit(w, job));
  job = writer_take(w, 30000);
  ck_assert_int_eq(batch_flush_end(b, job, mem_at(0), NULL), SINK_OK);
  ck_assert_int_eq(rev_of(&s, "t1/a1"), 2);
  ck_assert_int_eq(assigned(&s, "t1/a1"), 2);
  ck_assert_int_eq(mem_get(&s, &s.loads), 1);
  writer_destroy(w);
  batch_destroy(b);
  mem_free(&s);
}
END_TEST

/* An overlay whose merge into its stored document would pass the store's
 * limit is neither merged nor written: the item comes back TOO_LARGE with
 * the stored document as loaded, its rev and the merged size; the rest of
 * the job goes on. */
START_TEST(an_overlay_past_the_limit_is_not_merged) {
  mem_store_t s;
  mem_init(&s);
  model_aggregate_t *stored = model_aggregate_new("t1", 2, "big", 3);
  size_t limit = sink_document_limit(stored);
  fx_fill_grades(stored, "big", limit);
  mem_put(&s, stored);
  model_aggregate_t *overlay = model_aggregate_new("t1", 2, "big", 3), *other = model_aggregate_new("t1", 2, "a1", 2);
  model_command_t c = roster("big", "new", "n1", 1, true);
  model_aggregate_apply(overlay, &c);
  static char fb[MODEL_FEEDBACK_MAX + 1];
  memset(fb, 'f', MODEL_FEEDBACK_MAX);
  fx_grade(&c, "t1", "big", "new", 1, "n2", true, 1, fb);
  model_aggregate_apply(overlay, &c);
  c = roster("a1", "s1", "c1", 1, true);
  model_aggregate_apply(other, &c);
  writer_job_t *job = writer_job_new(2);
  writer_job_add(job, overlay, 0, true, NULL);
  writer_job_add(job, other, 0, true, NULL);
  sink_t sink = mem_sink(&s);
  writer_execute(&sink, clock_system(), job);
  ck_assert_int_eq(job->status, SINK_OK);
  ck_assert_int_eq(job->items[0].result, SINK_ITEM_TOO_LARGE);
  ck_assert(!job->items[0].sent); /* found by the merge, never sent */
  ck_assert(job->items[0].loaded);
  ck_assert_int_eq(job->items[0].rev, 1);
  ck_assert(model_aggregate_equal(job->items[0].agg, stored));
  ck_assert_uint_gt(job->items[0].bytes, limit);
  ck_assert_uint_eq(job->too_large, 1);
  ck_assert_uint_eq(job->errors, 0);
  ck_assert_int_eq(job->items[1].result, SINK_ITEM_OK);
  ck_assert(job->items[1].sent); /* written */
  ck_assert_int_eq(rev_of(&s, "t1/big"), 1);
  writer_job_destroy(job);
  model_aggregate_destroy(stored);
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
  writer_t *w = writer_new(&sink, 0, clock_system());
  batch_t *b = new_batch();
  apply(b, "a1", "s1", "c1", 1);
  writer_job_t *job = batch_flush_begin(b, mem_at(0));
  ck_assert(writer_submit(w, job));
  ck_assert_int_eq(batch_flush_end(b, writer_take(w, 30000), mem_at(0), NULL), SINK_OK); /* rev 1, cached */

  s.hold = true;
  apply(b, "a1", "s2", "c2", 1);
  job = batch_flush_begin(b, mem_at(0));
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
  sink_error_t err;
  ck_assert_int_eq(batch_flush_end(b, job, mem_at(0), &err), SINK_PARTIAL);
  ck_assert(batch_flush_due(b, 0)); /* owed: at once */
  ck_assert_int_eq(batch_deadline(b), 0);
  ck_assert_uint_eq(batch_stats(b)->conflicts, 1);
  job = batch_flush_begin(b, mem_at(0));
  ck_assert(job->items[0].load); /* reloaded by the writer */
  ck_assert(writer_submit(w, job));
  ck_assert_int_eq(batch_flush_end(b, writer_take(w, 30000), mem_at(0), NULL), SINK_OK);
  ck_assert(!batch_dirty(b));
  ck_assert_int_eq(rev_of(&s, "t1/a1"), 3);
  ck_assert_int_eq(assigned(&s, "t1/a1"), 4); /* s1, s2, s3 and the other writer's s9 */
  writer_destroy(w);
  batch_destroy(b);
  mem_free(&s);
}
END_TEST

static void add_memory(void *ctx, const model_aggregate_t *agg, int64_t rev) {
  (void)rev;
  *(size_t *)ctx += model_aggregate_memory(agg);
}

/* What a snapshot of agg (a clone, as batch_flush_begin takes) holds. */
static void add_snapshot_memory(void *ctx, const model_aggregate_t *agg, int64_t rev) {
  (void)rev;
  model_aggregate_t *snap = model_aggregate_clone(agg);
  *(size_t *)ctx += model_aggregate_memory(snap);
  model_aggregate_destroy(snap);
}

/* Store down: the flush comes back with no results, everything it held is
 * dirty again and owed, and the memory bound sees it all the time (the
 * snapshot while in flight, the live entries after). BATCH_FLUSH_FLOOR
 * aggregates: the most a flush takes before any has landed. */
START_TEST(outage_keeps_everything_and_counts_snapshots) {
  mem_store_t s;
  mem_init(&s);
  s.fail_next = 1000000;
  sink_t sink = mem_sink(&s);
  batch_t *b = new_batch();
  flusher_t *f = flusher_new(b, &sink, 0, clock_system());
  flusher_set_retry(f, 1, 5);
  char a[8], id[8];
  for (int i = 0; i < BATCH_FLUSH_FLOOR; i++) {
    snprintf(a, sizeof a, "a%d", i);
    snprintf(id, sizeof id, "c%d", i);
    apply(b, a, "s1", id, 1);
  }
  size_t live = batch_pending_bytes(b), snapshots = 0;
  ck_assert_uint_gt(live, 0);
  batch_foreach(b, add_snapshot_memory, &snapshots);
  flusher_event_t ev = flusher_step(f, mem_at(0), 0, false);
  ck_assert(ev.started);
  ck_assert_uint_ge(batch_pending_bytes(b), live + snapshots); /* live entries plus their snapshots */
  int failures = 0;
  for (int i = 0; i < 200 && failures < 3; i++) {
    ev = flusher_step(f, mem_at(0), 1000, true);
    if (ev.finished) {
      ck_assert_int_eq(ev.status, SINK_RETRY);
      ck_assert_uint_eq(ev.attempt, (unsigned)++failures);
      /* All of them are owed again: dirty, or already in the next flush when
       * the (1-5 ms) backoff had passed by the end of this step. */
      if (ev.started)
        ck_assert(batch_in_flight(b) && batch_dirty_count(b) == 0);
      else
        ck_assert_uint_eq(batch_dirty_count(b), BATCH_FLUSH_FLOOR);
      /* Every aggregate counted, and more: their entries (their lists of
       * touched students are gone: what failed is owed whole). */
      size_t aggs = 0;
      batch_foreach(b, add_memory, &aggs);
      ck_assert_uint_gt(batch_pending_bytes(b), aggs);
    }
  }
  ck_assert_int_eq(failures, 3);
  mem_set(&s, &s.fail_next, 0); /* the store is back */
  for (int i = 0; i < 200 && batch_dirty(b); i++) flusher_step(f, mem_at(0), 1000, true);
  ck_assert(!batch_dirty(b));
  ck_assert_uint_eq(batch_pending_bytes(b), 0);
  flusher_destroy(f);
  ck_assert_int_eq(s.n, BATCH_FLUSH_FLOOR);
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
  batch_limits_t l = {1000000, 1000, 50, 1 << 30, 100, 1 << 30};
  batch_t *b = batch_new(&l);
  flusher_t *f = flusher_new(b, &sink, 0, clock_system());
  apply(b, "a1", "s0", "c0", 1);
  ck_assert(!flusher_step(f, mem_at(0), 0, false).started); /* linger not reached */
  ck_assert(flusher_step(f, mem_at(50), 0, false).started);
  ck_assert(mem_wait_held(&s, 1));
  char a[8], st[8], id[16];
  for (int i = 0; i < 500; i++) { /* 500 commands over 5 aggregates, during the flush */
    snprintf(a, sizeof a, "a%d", i % 5);
    snprintf(st, sizeof st, "s%d", i);
    snprintf(id, sizeof id, "x%d", i);
    model_command_t c = roster(a, st, id, 1, true);
    batch_apply(b, &c, 0, mem_at(60), NULL);
    flusher_event_t ev = flusher_step(f, mem_at(60 + i), 0, false);
    ck_assert(!ev.started && !ev.finished);
  }
  mem_release(&s);
  flusher_event_t ev;
  do ev = flusher_step(f, mem_at(1000), 30000, false);
  while (!ev.finished);
  ck_assert_int_eq(ev.status, SINK_OK);
  ck_assert(ev.started); /* the next at once */
  do ev = flusher_step(f, mem_at(1000), 30000, false);
  while (!ev.finished);
  ck_assert_int_eq(ev.status, SINK_OK);
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
  batch_limits_t l = {1000, 3, 0, 1 << 30, 100, 1 << 30};
  batch_t *b = batch_new(&l);
  char a[8], id[8];
  for (int i = 0; i < BATCH_FLUSH_FLOOR; i++) { /* what a first flush takes (batch.h) */
    snprintf(a, sizeof a, "a%d", i);
    snprintf(id, sizeof id, "c%d", i);
    apply(b, a, "s1", id, 1);
  }
  writer_job_t *job = batch_flush_begin(b, mem_at(0));
  writer_execute(&sink, clock_system(), job);
  ck_assert_int_eq(batch_flush_end(b, job, mem_at(0), NULL), SINK_OK);
  ck_assert_int_eq(s.loads, (BATCH_FLUSH_FLOOR + 2) / 3);
  ck_assert_int_eq(s.writes, (BATCH_FLUSH_FLOOR + 2) / 3);
  ck_assert_int_eq(s.write_items, BATCH_FLUSH_FLOOR);
  batch_destroy(b);
  mem_free(&s);
}
END_TEST

/* The flush cap (batch.h): before any flush has landed a flush takes
 * BATCH_FLUSH_FLOOR aggregates, oldest change first; then at most what the
 * writer lands in batch.linger_ms at the smoothed seconds per aggregate of
 * the flushes so far. The in-memory store moves the writer's clock by
 * latency_ms per call and bulks of one aggregate make that a cost per
 * aggregate; the cap is checked against the durations the writer reported. */
static size_t expected_cap(int64_t linger_ms, double sec_per_agg) {
  double n = (double)linger_ms / 1000.0 / sec_per_agg;
  return n < BATCH_FLUSH_FLOOR ? BATCH_FLUSH_FLOOR : (size_t)n;
}

START_TEST(flush_cap_follows_the_writers_pace) {
  mem_store_t s;
  mem_init(&s);
  clock_manual_t clock;
  clock_manual_init(&clock, 1000, 1788220800000LL);
  s.latency_ms = 5;
  s.clock = &clock;
  sink_t sink = mem_sink(&s);
  batch_limits_t l = {1000000, 1, 400, 1 << 30, 100, 1 << 30}; /* bulks of 1: a call per aggregate */
  batch_t *b = batch_new(&l);
  char a[8], id[16];
  for (int i = 0; i < 60; i++) {
    snprintf(a, sizeof a, "a%02d", i);
    snprintf(id, sizeof id, "c%d", i);
    apply(b, a, "s1", id, 1);
  }
  apply(b, "a00", "s2", "c100", 1); /* a00 stays the oldest change */
  ck_assert_uint_eq(batch_flush_cap(b), BATCH_FLUSH_FLOOR);
  writer_job_t *job = batch_flush_begin(b, mem_at(0));
  ck_assert_uint_eq(job->nitems, BATCH_FLUSH_FLOOR);
  for (size_t i = 0; i < job->nitems; i++) { /* oldest first */
    snprintf(a, sizeof a, "a%02d", (int)i);
    ck_assert_str_eq(model_aggregate_key(job->items[i].agg, NULL) + 3, a);
  }
  ck_assert_uint_eq(batch_dirty_count(b), 60 - BATCH_FLUSH_FLOOR);
  ck_assert(batch_flush_due(b, 0)); /* what the cap left is owed at once */
  writer_execute(&sink, &clock.source, job);
  double per = job->seconds / (double)job->nitems;
  ck_assert_double_eq_tol(per, 0.010, 1e-9); /* a load and a write of 5 ms each */
  ck_assert_int_eq(batch_flush_end(b, job, mem_at(0), NULL), SINK_OK);
  size_t cap = expected_cap(400, per);
  ck_assert_uint_eq(batch_flush_cap(b), cap);
  ck_assert_uint_le(cap, 40); /* 400 ms at >= 10 ms each */

  job = batch_flush_begin(b, mem_at(0));
  size_t want = 60 - BATCH_FLUSH_FLOOR < cap ? 60 - BATCH_FLUSH_FLOOR : cap;
  ck_assert_uint_eq(job->nitems, want);
  snprintf(a, sizeof a, "a%02d", BATCH_FLUSH_FLOOR);
  ck_assert_str_eq(model_aggregate_key(job->items[0].agg, NULL) + 3, a);
  writer_execute(&sink, &clock.source, job);
  double per2 = 0.5 * per + 0.5 * job->seconds / (double)job->nitems;
  ck_assert_int_eq(batch_flush_end(b, job, mem_at(0), NULL), SINK_OK);
  ck_assert_uint_eq(batch_flush_cap(b), expected_cap(400, per2));

  /* linger 0 flushes at once: the floor */
  l.linger_ms = 0;
  batch_set_limits(b, &l);
  ck_assert_uint_eq(batch_flush_cap(b), BATCH_FLUSH_FLOOR);
  while (batch_dirty(b)) {
    job = batch_flush_begin(b, mem_at(0));
    writer_execute(&sink, &clock.source, job);
    ck_assert_int_eq(batch_flush_end(b, job, mem_at(0), NULL), SINK_OK);
  }
  ck_assert_int_eq(s.n, 60);
  ck_assert_int_eq(assigned(&s, "t1/a00"), 2);
  batch_destroy(b);
  mem_free(&s);
}
END_TEST

/* What is durable, by command seq (batch.h): the oldest change not in the
 * store bounds it, whether dirty or in flight; a flush that fails puts its
 * aggregates back as the oldest changes, so the next flush takes them again
 * before anything newer, and a conflict does the same. */
START_TEST(durable_seq_follows_the_oldest_change) {
  mem_store_t s;
  mem_init(&s);
  sink_t sink = mem_sink(&s);
  batch_t *b = new_batch(); /* linger 0: the cap is the floor */
  char a[8], id[16];
  for (int i = 0; i < 20; i++) { /* seqs 0..19, then stored: loaded, clean */
    snprintf(a, sizeof a, "a%02d", i);
    snprintf(id, sizeof id, "c%d", i);
    apply(b, a, "s1", id, 1);
  }
  while (batch_dirty(b)) {
    writer_job_t *j = batch_flush_begin(b, mem_at(0));
    writer_execute(&sink, clock_system(), j);
    ck_assert_int_eq(batch_flush_end(b, j, mem_at(0), NULL), SINK_OK);
  }
  ck_assert_uint_eq(batch_durable_seq(b), 20);
  for (int i = 0; i < 20; i++) { /* seqs 20..39 */
    snprintf(a, sizeof a, "a%02d", i);
    snprintf(id, sizeof id, "d%d", i);
    apply(b, a, "s1b", id, 1);
  }
  model_command_t stale = roster("a19", "s1b", "d19", 1, true);
  ck_assert_int_eq(batch_apply(b, &stale, 0, mem_at(0), NULL), MODEL_APPLY_STALE); /* seq 40: nothing owed */
  ck_assert_uint_eq(batch_seq(b), 41);
  ck_assert_uint_eq(batch_durable_seq(b), 20);

  writer_job_t *job = batch_flush_begin(b, mem_at(0)); /* from a00: the floor's worth, oldest first */
  ck_assert_uint_eq(job->nitems, BATCH_FLUSH_FLOOR);
  apply(b, "a03", "s2", "e1", 1); /* seq 41: a03 dirty again while in flight */
  ck_assert_uint_eq(batch_durable_seq(b), 20); /* the flight holds seq 20 */
  mem_set(&s, &s.fail_next, 1);
  writer_execute(&sink, clock_system(), job);
  ck_assert_int_eq(batch_flush_end(b, job, mem_at(0), NULL), SINK_RETRY);
  ck_assert_uint_eq(batch_durable_seq(b), 20);
  ck_assert_uint_eq(batch_dirty_count(b), 20);

  job = batch_flush_begin(b, mem_at(0)); /* the same again, in the same order, before the rest */
  ck_assert_uint_eq(job->nitems, BATCH_FLUSH_FLOOR);
  for (size_t i = 0; i < job->nitems; i++) {
    snprintf(a, sizeof a, "a%02d", (int)i);
    ck_assert_str_eq(model_aggregate_key(job->items[i].agg, NULL) + 3, a);
  }
  model_aggregate_t *other = model_aggregate_new("t1", 2, "a01", 3);
  model_command_t c = roster("a01", "s9", "z1", 1, true);
  model_aggregate_apply(other, &c);
  mem_put(&s, other); /* another writer: a01 conflicts */
  model_aggregate_destroy(other);
  writer_execute(&sink, clock_system(), job);
  ck_assert_int_eq(batch_flush_end(b, job, mem_at(0), NULL), SINK_PARTIAL);
  ck_assert_uint_eq(batch_durable_seq(b), 21); /* a01's seq 21 is owed again; a00's 20 landed */
  /* the 20 - BATCH_FLUSH_FLOOR not taken yet, and a01 (a03's seq 41 went with the flush) */
  ck_assert_uint_eq(batch_dirty_count(b), 20 - BATCH_FLUSH_FLOOR + 1);

  job = batch_flush_begin(b, mem_at(0));
  ck_assert_str_eq(model_aggregate_key(job->items[0].agg, NULL), "t1/a01"); /* the oldest again */
  for (;;) {
    writer_execute(&sink, clock_system(), job);
    ck_assert_int_eq(batch_flush_end(b, job, mem_at(0), NULL), SINK_OK);
    if (!batch_dirty(b)) break;
    job = batch_flush_begin(b, mem_at(0));
  }
  ck_assert_uint_eq(batch_durable_seq(b), batch_seq(b));
  ck_assert_int_eq(assigned(&s, "t1/a01"), 3); /* s1, s1b and the other writer's s9 */
  ck_assert_int_eq(assigned(&s, "t1/a03"), 3);
  batch_destroy(b);
  mem_free(&s);
}
END_TEST

/* Offsets from seqs (offsets.h): a partition's durable offset moves to the
 * newest checkpoint the durable seq has passed, never further; a checkpoint
 * that says nothing new is not kept; past the ring's size the newest one
 * moves later (a later commit, never an early one). */
START_TEST(offsets_follow_checkpoints) {
  offsets_t *o = offsets_new();
  offsets_add(o, "t", 0);
  offsets_add(o, "t", 1);
  offsets_part_t *p0 = offsets_find(o, "t", 0), *p1 = offsets_find(o, "t", 1);
  p0->next = 10;
  p1->next = 5;
  offsets_checkpoint(o, 100); /* everything consumed so far was applied below seq 100 */
  p0->next = 20;
  offsets_checkpoint(o, 150); /* partition 1: nothing new */
  p0->next = 30;
  p1->next = 8;
  ck_assert(!offsets_durable_to(o, 99));
  ck_assert_int_eq(p0->durable, -1);
  ck_assert(offsets_durable_to(o, 149));
  ck_assert_int_eq(p0->durable, 10);
  ck_assert_int_eq(p1->durable, 5);
  ck_assert(offsets_durable_to(o, 1000)); /* no checkpoint past 150: 30 and 8 wait for one */
  ck_assert_int_eq(p0->durable, 20);
  ck_assert_int_eq(p1->durable, 5);
  offsets_checkpoint(o, 1001);
  ck_assert(!offsets_durable_to(o, 1000));
  ck_assert(offsets_durable_to(o, 1001));
  ck_assert_int_eq(p0->durable, 30);
  ck_assert_int_eq(p1->durable, 8);

  for (int i = 0; i < OFFSETS_CHECKPOINTS_MAX + 10; i++) {
    p0->next = 31 + i;
    offsets_checkpoint(o, 2000 + (uint64_t)i);
  }
  ck_assert(offsets_durable_to(o, 2000 + OFFSETS_CHECKPOINTS_MAX - 2));
  ck_assert_int_eq(p0->durable, 31 + OFFSETS_CHECKPOINTS_MAX - 2);
  ck_assert(!offsets_durable_to(o, 2000 + OFFSETS_CHECKPOINTS_MAX + 8)); /* the last kept one moved to ... + 9 */
  ck_assert(offsets_durable_to(o, 2000 + OFFSETS_CHECKPOINTS_MAX + 9));
  ck_assert_int_eq(p0->durable, 31 + OFFSETS_CHECKPOINTS_MAX + 9);
  p0->next = 99999;
  offsets_all_durable(o);
  ck_assert_int_eq(p0->durable, 99999);
  offsets_destroy(o);
}
END_TEST

/* A bounded stop: a flush stuck in the store is waited for at
 * most the time given; then the writer thread is abandoned with it (it frees
 * itself once the call returns), the batch still has it in flight (so the
 * caller keeps the store), and nothing of it was acknowledged. Progress is
 * visible while it runs. */
START_TEST(destroy_within_abandons_a_stuck_flush) {
  static mem_store_t s; /* outlives the abandoned thread's last touch of it (checked below) */
  mem_init(&s);
  s.hold = true;
  sink_t sink = mem_sink(&s);
  batch_t *b = new_batch();
  flusher_t *f = flusher_new(b, &sink, 0, clock_system());
  apply(b, "a1", "s1", "c1", 1);
  apply(b, "a2", "s1", "c2", 1);
  ck_assert(flusher_step(f, mem_at(0), 0, false).started);
  ck_assert(mem_wait_held(&s, 1)); /* the write waits at the gate: the loads are done */
  double t0 = clock_mono_s();
  ck_assert(!flusher_destroy_within(f, 200));
  ck_assert(clock_mono_s() - t0 < 20); /* returned after about 200 ms, not when the store answers */
  ck_assert(batch_in_flight(b));
  ck_assert(batch_dirty(b));
  ck_assert_uint_eq(batch_durable_seq(b), 0);
  mem_release(&s); /* the abandoned thread finishes alone */
  ck_assert(mem_wait_writes(&s, 1)); /* it has let go of the store's lock for good */
  ck_assert_int_eq(mem_get(&s, &s.writes), 1);
  batch_destroy(b); /* the writer never reads the batch */
}
END_TEST

/* Within the bound, a flush that finishes is waited for and ended as
 * flusher_destroy does; an idle writer stops at once. */
START_TEST(destroy_within_waits_for_a_flush_that_lands) {
  mem_store_t s;
  mem_init(&s);
  s.hold = true;
  sink_t sink = mem_sink(&s);
  batch_t *b = new_batch();
  flusher_t *f = flusher_new(b, &sink, 0, clock_system());
  apply(b, "a1", "s1", "c1", 1);
  ck_assert(flusher_step(f, mem_at(0), 0, false).started);
  ck_assert(mem_wait_held(&s, 1)); /* in flight: the write waits at the gate */
  mem_release(&s);
  ck_assert(flusher_destroy_within(f, 60000));
  ck_assert(!batch_in_flight(b));
  ck_assert(!batch_dirty(b));
  ck_assert_int_eq(s.writes, 1);
  ck_assert(writer_destroy_within(writer_new(&sink, 0, clock_system()), 0));
  batch_destroy(b);
  mem_free(&s);
}
END_TEST

/* A flush that runs long says so: once FLUSHER_SLOW_LOG_MS have passed on
 * the flusher's clock with it in flight, a wait in flusher_step logs "flush
 * still running" with its phase, size and progress, and again every as
 * long while it lasts. The clock is moved by hand, so that each line is due
 * at a known step. stderr (where the log goes) is redirected to a file for
 * the check (this test runs in its own process). */
static int slow_flush_lines(const char *path) {
  fflush(stderr);
  FILE *in = fopen(path, "r");
  ck_assert_ptr_nonnull(in);
  int lines = 0;
  char buf[4096];
  while (fgets(buf, sizeof buf, in))
    if (strstr(buf, "\"msg\":\"flush still running\"")) {
      lines++;
      ck_assert_ptr_nonnull(strstr(buf, "\"phase\":\"writing\""));
      ck_assert_ptr_nonnull(strstr(buf, "\"aggregates\":2"));
      ck_assert_ptr_nonnull(strstr(buf, "\"commands\":2"));
      ck_assert_ptr_nonnull(strstr(buf, "\"loads\":2,\"loaded\":2,\"written\":0"));
    }
  fclose(in);
  return lines;
}

START_TEST(a_long_flush_is_logged) {
  char path[] = "/tmp/test_writer_log_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  ck_assert_ptr_nonnull(freopen(path, "w", stderr));
  log_setup(LOG_LEVEL_INFO, LOG_FORMAT_JSON);
  mem_store_t s;
  mem_init(&s);
  s.hold = true;
  sink_t sink = mem_sink(&s);
  batch_t *b = new_batch();
  clock_manual_t clock;
  clock_manual_init(&clock, 1000, 1788220800000LL);
  flusher_t *f = flusher_new(b, &sink, 0, &clock.source);
  apply(b, "a1", "s1", "c1", 1);
  apply(b, "a2", "s1", "c2", 1);
  ck_assert(flusher_step(f, batch_now(&clock.source), 0, false).started);
  ck_assert(mem_wait_held(&s, 1));
  ck_assert(!flusher_step(f, batch_now(&clock.source), 10, false).finished);
  ck_assert_int_eq(slow_flush_lines(path), 0); /* no time has passed on the clock */
  clock_manual_advance(&clock, FLUSHER_SLOW_LOG_MS - 1);
  ck_assert(!flusher_step(f, batch_now(&clock.source), 10, false).finished);
  ck_assert_int_eq(slow_flush_lines(path), 0);
  clock_manual_advance(&clock, 1);
  ck_assert(!flusher_step(f, batch_now(&clock.source), 10, false).finished);
  ck_assert_int_eq(slow_flush_lines(path), 1);
  ck_assert(!flusher_step(f, batch_now(&clock.source), 10, false).finished);
  ck_assert_int_eq(slow_flush_lines(path), 1); /* once per FLUSHER_SLOW_LOG_MS */
  clock_manual_advance(&clock, FLUSHER_SLOW_LOG_MS);
  ck_assert(!flusher_step(f, batch_now(&clock.source), 10, false).finished);
  ck_assert_int_eq(slow_flush_lines(path), 2);
  mem_release(&s);
  flusher_destroy(f);
  ck_assert(!batch_dirty(b));
  batch_destroy(b);
  mem_free(&s);
  unlink(path);
}
END_TEST

/* A writer that meets a stale document in flush after flush (the cache of
 * partitions it gave up and got back, which another member wrote
 * meanwhile; a store restored from a backup) keeps its pace: the next
 * flush begins at once, the conflicting aggregate first, reloaded, while
 * the rest lands. Only flushes that land nothing back off (the flusher's
 * PARTIAL_ROUNDS). The clock never moves here, so a backoff would hold
 * every later flush: counting each flush with a conflict as a lost race
 * throttled a whole writer to one flush per retry.backoff_max_ms. */
START_TEST(conflicts_beside_landed_writes_never_back_off) {
  mem_store_t s;
  mem_init(&s);
  sink_t sink = mem_sink(&s);
  batch_t *b = new_batch();
  clock_manual_t clock;
  clock_manual_init(&clock, 1000, 1788220800000LL);
  flusher_t *f = flusher_new(b, &sink, 0, &clock.source);
  flusher_set_retry(f, 100, 10000);
  char a[8], id[16];
  for (int i = 0; i < 30; i++) { /* stored and cached */
    snprintf(a, sizeof a, "s%02d", i);
    apply(b, a, "x1", "c0", 1);
  }
  while (batch_dirty(b)) flusher_step(f, batch_now(&clock.source), 1000, true);
  for (int i = 0; i < 30; i++) { /* another writer moves every one of them on */
    snprintf(a, sizeof a, "s%02d", i);
    model_aggregate_t *other = model_aggregate_new("t1", 2, a, strlen(a));
    model_command_t c = roster(a, "x2", "o1", 1, true);
    model_aggregate_apply(other, &c);
    mem_put(&s, other);
    model_aggregate_destroy(other);
  }
  int partial = 0;
  for (int i = 0; i < 30; i++) { /* each flush: last round's conflict reloaded, a new one, a new document */
    snprintf(a, sizeof a, "s%02d", i);
    snprintf(id, sizeof id, "c%d", i + 1);
    apply(b, a, "x3", id, 1);
    snprintf(a, sizeof a, "n%02d", i);
    apply(b, a, "x1", id, 1);
    flusher_event_t ev = flusher_step(f, batch_now(&clock.source), 1000, true);
    ck_assert_msg(ev.started, "round %d: no flush began with %zu aggregates dirty", i, batch_dirty_count(b));
    if (ev.finished && ev.status == SINK_PARTIAL) {
      partial++;
      ck_assert(ev.landed > 0);
      ck_assert_int_eq(ev.retry_in_ms, 0);
    }
  }
  ck_assert_int_ge(partial, 20);
  for (int i = 0; i < 8 && batch_dirty(b); i++) flusher_step(f, batch_now(&clock.source), 1000, true);
  ck_assert(!batch_dirty(b));
  for (int i = 0; i < 30; i++) {
    char key[16];
    snprintf(key, sizeof key, "t1/s%02d", i);
    ck_assert_int_eq(assigned(&s, key), 3); /* x1 ours, x2 the other writer's, x3 ours again */
  }
  flusher_destroy(f);
  batch_destroy(b);
  mem_free(&s);
}
END_TEST

/* A rival that writes every document just before each of our writes: no
 * flush lands anything, and after PARTIAL_ROUNDS of them in a row the next
 * waits out a backoff instead of spinning. */
static sink_status_t rival_write(void *ctx, sink_write_item_t *items, size_t n, int64_t now, sink_error_t *err) {
  static uint64_t version;
  mem_store_t *s = ctx;
  for (size_t i = 0; i < n; i++) { /* a slot of the rival's own, so that ours is never in the store */
    size_t len;
    const char *key = model_aggregate_key(items[i].agg, &len);
    const char *slash = memchr(key, '/', len);
    model_aggregate_t *other = model_aggregate_new("t1", 2, slash + 1, len - (size_t)(slash + 1 - key));
    model_command_t c = roster(slash + 1, "rival", "r1", ++version, true);
    model_aggregate_apply(other, &c);
    mem_put(s, other);
    model_aggregate_destroy(other);
  }
  return mem_write(ctx, items, n, now, err);
}

START_TEST(flushes_that_land_nothing_back_off) {
  mem_store_t s;
  mem_init(&s);
  sink_t sink = mem_sink(&s);
  sink.write = rival_write;
  batch_t *b = new_batch();
  clock_manual_t clock;
  clock_manual_init(&clock, 1000, 1788220800000LL);
  flusher_t *f = flusher_new(b, &sink, 0, &clock.source);
  flusher_set_retry(f, 100, 10000);
  apply(b, "h1", "s1", "c1", 1);
  int rounds = 0;
  flusher_event_t ev = {0};
  while (rounds < 20) {
    ev = flusher_step(f, batch_now(&clock.source), 1000, true);
    if (ev.finished) {
      ck_assert_int_eq(ev.status, SINK_PARTIAL);
      ck_assert_uint_eq(ev.landed, 0);
      rounds++;
    }
    if (ev.finished && !ev.started) break; /* backing off */
  }
  ck_assert_int_eq(rounds, 8);
  ck_assert_int_gt(ev.retry_in_ms, 0);
  ck_assert(batch_dirty(b));
  flusher_destroy(f);
  batch_destroy(b);
  mem_free(&s);
}
END_TEST

Suite *test_suite(void) {
  Suite *su = suite_create("writer");
  TCase *tc = tcase_create("pipelined");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, merges_continue_while_a_flush_is_in_flight);
  tcase_add_test(tc, loads_happen_in_the_writer);
  tcase_add_test(tc, an_overlay_past_the_limit_is_not_merged);
  tcase_add_test(tc, conflict_while_newer_changes_are_pending);
  tcase_add_test(tc, outage_keeps_everything_and_counts_snapshots);
  tcase_add_test(tc, group_commit_takes_everything_dirty);
  tcase_add_test(tc, bulks_of_max_aggregates);
  tcase_add_test(tc, flush_cap_follows_the_writers_pace);
  tcase_add_test(tc, durable_seq_follows_the_oldest_change);
  tcase_add_test(tc, offsets_follow_checkpoints);
  tcase_add_test(tc, destroy_within_abandons_a_stuck_flush);
  tcase_add_test(tc, destroy_within_waits_for_a_flush_that_lands);
  tcase_add_test(tc, a_long_flush_is_logged);
  tcase_add_test(tc, conflicts_beside_landed_writes_never_back_off);
  tcase_add_test(tc, flushes_that_land_nothing_back_off);
  suite_add_tcase(su, tc);
  return su;
}
