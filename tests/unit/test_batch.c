/* The denormalizer against an in-memory store that applies the same
 * conditional-write rule as store.c (filter {_id, rev}), so that batching,
 * loading, conflicts, retries and the cache can be checked without a server.
 * The real store is exercised by the integration tests. */
#include <check.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pipeline/batch.h"
#include "base/clock.h"
#include "codec.h"
#include "config/config.h"
#include "mem_store.h"
#include "model_fixtures.h"
#include "metrics/metrics.h"
#include "store/store_bulk.h"
#include "../tools/cmdgen.h"

/* A roster command of tenant t1 (model_fixtures.h). */
static model_command_t roster(const char *assignment, const char *student, const char *id, uint64_t v, bool on) {
  model_command_t c;
  fx_roster(&c, "t1", assignment, student, v, id, on);
  return c;
}

static batch_limits_t limits(int64_t cache) { return (batch_limits_t){1000, 1000, 1000, 1 << 30, cache, 1 << 30}; }

static batch_t *new_batch(int64_t cache) {
  batch_limits_t l = limits(cache);
  return batch_new(&l);
}

/* batch.max_pending_bytes bounds the heap that unwritten changes hold, not
 * only their aggregates: many small aggregates (a backfill of a million
 * assignments) are mostly bookkeeping. The heap that 20,000 dirty
 * aggregates of one student take (glibc's count of bytes in use, chunk
 * headers included) must be within 25% of what batch_pending_bytes says,
 * which counting the aggregates alone falls far short of. */
START_TEST(pending_bytes_count_what_dirty_entries_hold) {
  struct mallinfo2 before = mallinfo2();
  batch_t *b = new_batch(0);
  enum { N = 20000 };
  for (int i = 0; i < N; i++) {
    char a[16], id[16];
    snprintf(a, sizeof a, "a%d", i);
    snprintf(id, sizeof id, "c%d", i);
    model_command_t c = roster(a, "student-1", id, 1, true);
    ck_assert_int_eq(batch_apply(b, &c, 0, mem_at(0), NULL), MODEL_APPLY_APPLIED);
  }
  struct mallinfo2 after = mallinfo2();
  size_t pending = batch_pending_bytes(b);
  if (after.uordblks > before.uordblks) { /* glibc's allocator (ASan's does not count here) */
    double held = (double)(after.uordblks - before.uordblks);
    ck_assert_msg(held <= 1.25 * (double)pending, "dirty entries hold %.0f bytes, pending_bytes says %zu", held,
                  pending);
  }
  batch_destroy(b);
}
END_TEST

START_TEST(flush_writes_changed_aggregates_once) {
  mem_store_t s;
  mem_init(&s);
  batch_t *b = new_batch(100);
  model_command_t c1 = roster("a1", "s1", "c1", 1, true), c2 = roster("a2", "s1", "c2", 1, true);
  ck_assert_int_eq(batch_apply(b, &c1, 0, mem_at(0), NULL), MODEL_APPLY_APPLIED);
  ck_assert_int_eq(batch_apply(b, &c2, 0, mem_at(0), NULL), MODEL_APPLY_APPLIED);
  ck_assert_int_eq(batch_apply(b, &c1, 0, mem_at(0), NULL), MODEL_APPLY_STALE);
  ck_assert_uint_eq(batch_dirty_count(b), 2);
  ck_assert(batch_pending_bytes(b) > 0);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(0)), SINK_OK);
  ck_assert_int_eq(s.loads, 1); /* one $in for both misses */
  ck_assert_int_eq(s.load_keys, 2);
  ck_assert_int_eq(s.writes, 1); /* one bulk */
  ck_assert_int_eq(s.write_items, 2);
  ck_assert_uint_eq(batch_dirty_count(b), 0);
  ck_assert_uint_eq(batch_pending_bytes(b), 0);
  ck_assert_int_eq(mem_find(&s, "t1/a1")->rev, 1);
  /* A stale command for a cached aggregate writes nothing and reads nothing. */
  ck_assert_int_eq(batch_apply(b, &c1, 0, mem_at(0), NULL), MODEL_APPLY_STALE);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(0)), SINK_OK);
  ck_assert_int_eq(s.writes, 1);
  ck_assert_int_eq(s.loads, 1);
  batch_destroy(b);
  mem_free(&s);
}
END_TEST

START_TEST(miss_merges_into_stored_document) {
  mem_store_t s;
  mem_init(&s);
  batch_t *b1 = new_batch(100);
  model_command_t c1 = roster("a1", "s1", "c1", 5, true);
  batch_apply(b1, &c1, 0, mem_at(0), NULL);
  ck_assert_int_eq(mem_flush(b1, &s, mem_at(0)), SINK_OK);
  batch_destroy(b1);
  /* A new worker (cold cache) sees an older command for that slot and a new
   * one for another: only the new one changes the stored document. */
  batch_t *b2 = new_batch(100);
  model_command_t old = roster("a1", "s1", "c0", 4, false), other = roster("a1", "s2", "c2", 1, true);
  batch_apply(b2, &old, 0, mem_at(0), NULL);
  ck_assert_int_eq(mem_flush(b2, &s, mem_at(0)), SINK_OK);
  ck_assert_int_eq(mem_find(&s, "t1/a1")->rev, 1); /* nothing changed: not written */
  batch_apply(b2, &other, 0, mem_at(0), NULL);
  ck_assert_int_eq(mem_flush(b2, &s, mem_at(0)), SINK_OK);
  doc_t *d = mem_find(&s, "t1/a1");
  ck_assert_int_eq(d->rev, 2);
  model_counts_t counts = model_aggregate_counts(d->agg);
  ck_assert_int_eq(counts.assigned, 2); /* s1 still assigned by v5, s2 by c2 */
  batch_destroy(b2);
  mem_free(&s);
}
END_TEST

START_TEST(conflict_reloads_and_remerges) {
  mem_store_t s;
  mem_init(&s);
  batch_t *w1 = new_batch(100), *w2 = new_batch(100);
  model_command_t a = roster("a1", "s1", "c1", 1, true), b = roster("a1", "s2", "c2", 1, true);
  batch_apply(w1, &a, 0, mem_at(0), NULL);
  ck_assert_int_eq(mem_flush(w1, &s, mem_at(0)), SINK_OK);
  batch_apply(w2, &b, 0, mem_at(0), NULL);
  ck_assert_int_eq(mem_flush(w2, &s, mem_at(0)), SINK_OK); /* w2 loads rev 1, writes rev 2 */
  /* w1's cached copy is at rev 1 now stale: its write conflicts, is reloaded
   * and merged, and lands as rev 3 holding all three students. */
  model_command_t c = roster("a1", "s3", "c3", 1, true);
  batch_apply(w1, &c, 0, mem_at(0), NULL);
  ck_assert_int_eq(mem_flush(w1, &s, mem_at(0)), SINK_OK);
  ck_assert_uint_eq(batch_stats(w1)->conflicts, 1);
  doc_t *d = mem_find(&s, "t1/a1");
  ck_assert_int_eq(d->rev, 3);
  ck_assert_int_eq(model_aggregate_counts(d->agg).assigned, 3);
  batch_destroy(w1);
  batch_destroy(w2);
  mem_free(&s);
}
END_TEST

/* Partitions given up (batch_forget_clean): the clean copies go, the dirty
 * ones stay; a forgotten aggregate that another writer moved on meanwhile
 * is loaded by its next flush and written without a conflict, where the
 * copy kept would have conflicted. */
START_TEST(forgotten_copies_are_loaded_not_conflicted) {
  mem_store_t s;
  mem_init(&s);
  batch_t *w1 = new_batch(100), *w2 = new_batch(100);
  model_command_t a = roster("a1", "s1", "c1", 1, true), b = roster("a2", "s1", "c2", 1, true);
  batch_apply(w1, &a, 0, mem_at(0), NULL);
  batch_apply(w1, &b, 0, mem_at(0), NULL);
  ck_assert_int_eq(mem_flush(w1, &s, mem_at(0)), SINK_OK);
  ck_assert_uint_eq(batch_cached_count(w1), 2);
  model_command_t other = roster("a1", "s2", "o1", 1, true); /* the next owner writes a1 */
  batch_apply(w2, &other, 0, mem_at(0), NULL);
  ck_assert_int_eq(mem_flush(w2, &s, mem_at(0)), SINK_OK);
  model_command_t dirty = roster("a2", "s3", "c3", 1, true);
  batch_apply(w1, &dirty, 0, mem_at(0), NULL);
  batch_forget_clean(w1);
  ck_assert_uint_eq(batch_cached_count(w1), 0);
  ck_assert_uint_eq(batch_dirty_count(w1), 1); /* a2 stays, dirty */
  model_command_t back = roster("a1", "s4", "c4", 1, true); /* a1 comes back to w1 */
  batch_apply(w1, &back, 0, mem_at(0), NULL);
  ck_assert_int_eq(mem_flush(w1, &s, mem_at(0)), SINK_OK);
  ck_assert_uint_eq(batch_stats(w1)->conflicts, 0);
  ck_assert_int_eq(model_aggregate_counts(mem_find(&s, "t1/a1")->agg).assigned, 3);
  ck_assert_int_eq(model_aggregate_counts(mem_find(&s, "t1/a2")->agg).assigned, 2);
  batch_destroy(w1);
  batch_destroy(w2);
  mem_free(&s);
}
END_TEST

START_TEST(retry_keeps_changes_until_written) {
  mem_store_t s;
  mem_init(&s);
  batch_t *b = new_batch(100);
  model_command_t c1 = roster("a1", "s1", "c1", 1, true);
  batch_apply(b, &c1, 0, mem_at(0), NULL);
  s.fail_next = 2;
  ck_assert_int_eq(mem_flush(b, &s, mem_at(0)), SINK_RETRY); /* load fails */
  ck_assert(batch_dirty(b));
  ck_assert_int_eq(mem_flush(b, &s, mem_at(0)), SINK_RETRY); /* write fails */
  ck_assert(batch_dirty(b));
  ck_assert(batch_flush_due(b, 1000000)); /* still owed */
  ck_assert_int_eq(mem_flush(b, &s, mem_at(0)), SINK_OK);
  ck_assert(!batch_dirty(b));
  ck_assert_int_eq(mem_find(&s, "t1/a1")->rev, 1);
  batch_destroy(b);
  mem_free(&s);
}
END_TEST

START_TEST(cache_bound_and_naive_mode) {
  mem_store_t s;
  mem_init(&s);
  batch_t *b = new_batch(1);
  char a[8], id[8];
  for (int i = 0; i < 5; i++) {
    snprintf(a, sizeof a, "a%d", i);
    snprintf(id, sizeof id, "c%d", i);
    model_command_t c = roster(a, "s1", id, 1, true);
    batch_apply(b, &c, 0, mem_at(0), NULL);
  }
  ck_assert_int_eq(mem_flush(b, &s, mem_at(0)), SINK_OK);
  ck_assert_uint_eq(batch_cached_count(b), 1);
  batch_destroy(b);
  /* cache 0: every flush reads what it writes. */
  batch_t *n = new_batch(0);
  model_command_t c = roster("a0", "s2", "x1", 1, true);
  batch_apply(n, &c, 0, mem_at(0), NULL);
  ck_assert_int_eq(mem_flush(n, &s, mem_at(0)), SINK_OK);
  ck_assert_uint_eq(batch_cached_count(n), 0);
  int loads = s.loads;
  model_command_t c2 = roster("a0", "s3", "x2", 1, true);
  batch_apply(n, &c2, 0, mem_at(0), NULL);
  ck_assert_int_eq(mem_flush(n, &s, mem_at(0)), SINK_OK);
  ck_assert_int_eq(s.loads, loads + 1);
  ck_assert_int_eq(mem_find(&s, "t1/a0")->rev, 3);
  batch_destroy(n);
  mem_free(&s);
}
END_TEST

static batch_limits_t cache_limits(int64_t max_aggregates, int64_t max_bytes) {
  batch_limits_t l = limits(max_aggregates);
  l.cache_max_bytes = max_bytes;
  return l;
}

/* Whether a new change to key's aggregate is written without a load, that
 * is whether the cache kept it. */
static bool written_from_cache(batch_t *b, mem_store_t *s, const char *assignment, const char *id) {
  int loads = s->loads;
  model_command_t c = roster(assignment, id, id, 1, true);
  ck_assert_int_eq(batch_apply(b, &c, 0, mem_at(0), NULL), MODEL_APPLY_APPLIED);
  ck_assert_int_eq(mem_flush(b, s, mem_at(0)), SINK_OK);
  return s->loads == loads;
}

/* The clean aggregates are bounded in number (cache.max_aggregates) and in
 * memory (cache.max_bytes, counted as pending bytes are); whichever bound is
 * passed evicts the least recently used, and a new bound (a reload) applies
 * at once. */
START_TEST(cache_evicts_at_whichever_bound_is_passed) {
  mem_store_t s;
  mem_init(&s);
  batch_t *b = batch_new(&(batch_limits_t){0});
  batch_limits_t l = cache_limits(100, 1 << 30);
  batch_set_limits(b, &l);
  char a[8], id[8];
  for (int i = 0; i < 5; i++) {
    snprintf(a, sizeof a, "a%d", i);
    snprintf(id, sizeof id, "c%d", i);
    model_command_t c = roster(a, "s1", id, 1, true);
    batch_apply(b, &c, 0, mem_at(0), NULL);
  }
  ck_assert_int_eq(mem_flush(b, &s, mem_at(0)), SINK_OK);
  ck_assert_uint_eq(batch_cached_count(b), 5);
  ck_assert_uint_eq(batch_pending_bytes(b), 0);
  size_t five = batch_cached_bytes(b), one = five / 5;
  ck_assert_uint_eq(five % 5, 0); /* alike aggregates, alike memory */
  /* a4 used last: the most recently used are a4, then the others in the order written. */
  model_command_t again = roster("a4", "s1", "c4", 1, true);
  ck_assert_int_eq(batch_apply(b, &again, 0, mem_at(0), NULL), MODEL_APPLY_STALE);

  /* The byte bound before the count: two and a half aggregates' worth keeps two. */
  l = cache_limits(100, (int64_t)(2 * one + one / 2));
  batch_set_limits(b, &l);
  ck_assert_uint_eq(batch_cached_count(b), 2);
  ck_assert_uint_le(batch_cached_bytes(b), 2 * one + one / 2);
  ck_assert(written_from_cache(b, &s, "a4", "x1"));
  ck_assert(!written_from_cache(b, &s, "a1", "x2")); /* evicted: loaded again */

  /* The count before the bytes. */
  l = cache_limits(1, 1 << 30);
  batch_set_limits(b, &l);
  ck_assert_uint_eq(batch_cached_count(b), 1);
  ck_assert_uint_gt(batch_cached_bytes(b), 0);
  ck_assert_uint_lt(batch_cached_bytes(b), five);

  /* Raised: kept again as they are written. */
  l = cache_limits(100, 1 << 30);
  batch_set_limits(b, &l);
  ck_assert(!written_from_cache(b, &s, "a2", "x3"));
  ck_assert(!written_from_cache(b, &s, "a3", "x4"));
  ck_assert_uint_eq(batch_cached_count(b), 3);
  ck_assert(written_from_cache(b, &s, "a2", "x5"));

  /* cache.max_bytes 0 keeps none, as cache.max_aggregates 0 does. */
  l = cache_limits(100, 0);
  batch_set_limits(b, &l);
  ck_assert_uint_eq(batch_cached_count(b), 0);
  ck_assert_uint_eq(batch_cached_bytes(b), 0);
  ck_assert(!written_from_cache(b, &s, "a2", "x6"));
  ck_assert_uint_eq(batch_cached_count(b), 0);
  l = cache_limits(0, 1 << 30);
  batch_set_limits(b, &l);
  ck_assert(!written_from_cache(b, &s, "a2", "x7"));
  ck_assert_uint_eq(batch_cached_count(b), 0);
  ck_assert_uint_eq(batch_cached_bytes(b), 0);
  batch_destroy(b);
  mem_free(&s);
}
END_TEST

/* A dirty aggregate leaves the cache's count when it changes and enters
 * pending bytes; written, it is counted by the cache again, by the same
 * measure. */
START_TEST(cached_bytes_follow_an_aggregate_between_cache_and_pending) {
  mem_store_t s;
  mem_init(&s);
  batch_t *b = new_batch(100);
  model_command_t c = roster("a1", "s1", "c1", 1, true);
  batch_apply(b, &c, 0, mem_at(0), NULL);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(0)), SINK_OK);
  size_t cached = batch_cached_bytes(b);
  ck_assert_uint_gt(cached, 0);
  for (int i = 2; i < 40; i++) { /* more students: a larger aggregate */
    char st[8], id[8];
    snprintf(st, sizeof st, "s%d", i);
    snprintf(id, sizeof id, "c%d", i);
    model_command_t g = roster("a1", st, id, 1, true);
    batch_apply(b, &g, 0, mem_at(0), NULL);
  }
  ck_assert_uint_eq(batch_cached_bytes(b), 0);
  ck_assert_uint_eq(batch_cached_count(b), 0);
  ck_assert_uint_gt(batch_pending_bytes(b), cached);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(0)), SINK_OK);
  ck_assert_uint_eq(batch_pending_bytes(b), 0);
  ck_assert_uint_gt(batch_cached_bytes(b), cached);
  batch_destroy(b);
  mem_free(&s);
}
END_TEST

/* The default cache.max_bytes keeps the default cache.max_aggregates of
 * 30-student aggregates with every slot filled: for them the count bound is
 * the one reached, as before there was a byte bound. */
START_TEST(default_byte_bound_holds_the_default_count_of_30_student_aggregates) {
  mem_store_t s;
  mem_init(&s);
  config_t *cfg = config_new();
  batch_limits_t l = batch_limits_from_config(cfg);
  batch_t *b = batch_new(&l);
  model_command_t c;
  fx_upsert(&c, "t1", "a1", 1, "u1", "cls-001", "Lab report: titration", MODEL_ASSIGNMENT_PUBLISHED, true,
            1788220800000LL, true, 100);
  batch_apply(b, &c, 0, mem_at(0), NULL);
  for (int i = 0; i < 30; i++) {
    char st[16], id[16];
    snprintf(st, sizeof st, "stu%05d", i);
    snprintf(id, sizeof id, "r%d", i);
    fx_roster(&c, "t1", "a1", st, 1, id, true);
    batch_apply(b, &c, 0, mem_at(0), NULL);
    snprintf(id, sizeof id, "s%d", i);
    fx_submission(&c, "t1", "a1", st, 1, id, MODEL_SUBMISSION_RETURNED, true, 1788220800000LL, true,
                  1788224400000LL);
    batch_apply(b, &c, 0, mem_at(0), NULL);
    snprintf(id, sizeof id, "g%d", i);
    fx_grade(&c, "t1", "a1", st, 1, id, true, 87.5, "Needs more detail");
    batch_apply(b, &c, 0, mem_at(0), NULL);
  }
  ck_assert_int_eq(mem_flush(b, &s, mem_at(0)), SINK_OK);
  ck_assert_uint_eq(batch_cached_count(b), 1);
  size_t one = batch_cached_bytes(b);
  ck_assert_msg((double)one * (double)cfg->cache_max_aggregates <= (double)cfg->cache_max_bytes,
                "a 30-student aggregate holds %zu bytes: %lld of them pass cache.max_bytes %lld", one,
                (long long)cfg->cache_max_aggregates, (long long)cfg->cache_max_bytes);
  batch_destroy(b);
  config_destroy(cfg);
  mem_free(&s);
}
END_TEST

static int32_t stored_assigned(mem_store_t *s, const char *key) {
  return model_aggregate_counts(mem_find(s, key)->agg).assigned;
}

static double metric(const char *series) {
  model_buf_t out = MODEL_BUF_INIT;
  metrics_render(&out);
  const char *p = strstr(out.data, series);
  double v = p ? strtod(p + strlen(series), NULL) : -1;
  model_buf_destroy(&out);
  return v;
}

/* A grade of tenant t1 whose feedback is n bytes of 'f'. */
static model_command_t long_grade(const char *assignment, const char *student, const char *id, uint64_t v,
                                  size_t n) {
  static char fb[MODEL_FEEDBACK_MAX + 1];
  memset(fb, 'f', n);
  fb[n] = '\0';
  model_command_t c;
  fx_grade(&c, "t1", assignment, student, v, id, true, 1, fb);
  return c;
}

/* The BSON size of the statement the store would send for agg's document:
 * what the store holds to STORE_MAX_DOCUMENT_BYTES. */
static size_t statement_bytes(const model_aggregate_t *agg) {
  bson_t doc = BSON_INITIALIZER;
  ck_assert(model_codec_to_bson(agg, 1, 0, &doc));
  size_t key_len, n = doc.len;
  model_aggregate_key(agg, &key_len);
  bson_destroy(&doc);
  return n + key_len + STORE_STATEMENT_OVERHEAD;
}

/* A command that would make its aggregate's document pass the store's
 * limit is rejected when applied (document_too_large) and changes nothing;
 * it takes no seq, so the offsets of the commands around it move on; the
 * aggregate keeps every change that fits, and its document is written. */
START_TEST(a_command_past_the_document_limit_is_rejected) {
  mem_store_t s;
  mem_init(&s);
  batch_t *b = new_batch(100);
  char st[16], id[16];
  model_reject_t rej = {0};
  int i = 0;
  for (;; i++) { /* about 4,000 students of 4 KiB of feedback: 16 MiB */
    snprintf(st, sizeof st, "s%d", i);
    snprintf(id, sizeof id, "g%d", i);
    model_command_t c = long_grade("big", st, id, 1, MODEL_FEEDBACK_MAX);
    uint64_t seq = batch_seq(b);
    model_apply_result_t r = batch_apply(b, &c, 0, mem_at(0), &rej);
    if (r == MODEL_APPLY_TOO_LARGE) {
      ck_assert_uint_eq(batch_seq(b), seq);
      break;
    }
    ck_assert_int_eq(r, MODEL_APPLY_APPLIED);
    ck_assert_int_lt(i, 5000);
  }
  ck_assert_int_eq(rej.code, MODEL_REJ_DOCUMENT_TOO_LARGE);
  ck_assert_str_eq(model_reject_code_name(rej.code), "document_too_large");
  char limit[64];
  snprintf(limit, sizeof limit, "%d", STORE_MAX_DOCUMENT_BYTES - STORE_STATEMENT_OVERHEAD - 6); /* "t1/big" */
  ck_assert_msg(strstr(rej.detail, limit), "detail: %s", rej.detail);
  ck_assert_uint_eq(batch_stats(b)->too_large, 1);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(0)), SINK_OK);
  const model_aggregate_t *big = mem_find(&s, "t1/big")->agg;
  ck_assert_uint_eq(model_aggregate_student_count(big), (size_t)i); /* every change that fits */
  size_t bytes = statement_bytes(big);
  ck_assert_uint_le(bytes, STORE_MAX_DOCUMENT_BYTES);
  ck_assert_uint_gt(bytes + MODEL_FEEDBACK_MAX, STORE_MAX_DOCUMENT_BYTES);

  /* A slot that grows past the limit is rejected; one that shrinks fits,
   * and so does a grade that grows into the room it left. */
  model_command_t shrink = long_grade("big", "s0", "g0b", 2, 10);
  ck_assert_int_eq(batch_apply(b, &shrink, 0, mem_at(0), &rej), MODEL_APPLY_APPLIED);
  model_command_t grow = long_grade("big", "s0", "g0c", 3, MODEL_FEEDBACK_MAX);
  ck_assert_int_eq(batch_apply(b, &grow, 0, mem_at(0), &rej), MODEL_APPLY_APPLIED);
  snprintf(st, sizeof st, "s%d", i);
  model_command_t again = long_grade("big", st, "g-again", 1, MODEL_FEEDBACK_MAX);
  ck_assert_int_eq(batch_apply(b, &again, 0, mem_at(0), &rej), MODEL_APPLY_TOO_LARGE);
  ck_assert_uint_eq(batch_stats(b)->too_large, 2);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(0)), SINK_OK);
  ck_assert_uint_eq(batch_durable_seq(b), batch_seq(b));
  ck_assert_int_eq(mem_find(&s, "t1/big")->rev, 2);
  ck_assert_uint_le(statement_bytes(mem_find(&s, "t1/big")->agg), STORE_MAX_DOCUMENT_BYTES);
  batch_destroy(b);
  mem_free(&s);
}
END_TEST

/* The store's own refusal is the last line of defence (the merge holds
 * every command to the limit): should it fire, the changes are kept and
 * retried, never committed as durable; every refusal is counted, the first
 * per aggregate logged. Here the in-memory store's stand-in limit makes it
 * fire. */
START_TEST(a_refused_document_is_kept_for_retry) {
  mem_store_t s;
  mem_init(&s);
  batch_t *b = new_batch(100);
  char st[16], id[16];
  for (int i = 0; i < 10; i++) {
    snprintf(st, sizeof st, "s%d", i);
    snprintf(id, sizeof id, "c%d", i);
    model_command_t c = roster("big", st, id, 1, true);
    batch_apply(b, &c, 0, mem_at(0), NULL);
  }
  ck_assert_int_eq(mem_flush(b, &s, mem_at(0)), SINK_OK);
  s.max_doc_bytes = model_aggregate_memory(mem_find(&s, "t1/big")->agg) + 64; /* room for one more student at most */

  double too_large0 = metric("\naggregator_store_too_large_total ");
  uint64_t durable0 = batch_durable_seq(b);
  for (int i = 10; i < 200; i++) {
    snprintf(st, sizeof st, "s%d", i);
    snprintf(id, sizeof id, "c%d", i);
    model_command_t c = roster("big", st, id, 1, true);
    batch_apply(b, &c, 0, mem_at(0), NULL);
  }
  model_command_t small = roster("small", "s1", "x1", 1, true);
  batch_apply(b, &small, 0, mem_at(0), NULL);
  for (int k = 1; k <= 2; k++) {
    ck_assert_int_eq(mem_flush(b, &s, mem_at(0)), SINK_RETRY);
    ck_assert(batch_dirty(b));
    ck_assert_uint_eq(batch_durable_seq(b), durable0); /* nothing past it is committed */
    ck_assert(metric("\naggregator_store_too_large_total ") == too_large0 + k);
    ck_assert_int_eq(mem_find(&s, "t1/small")->rev, 1); /* the rest of the flush landed */
    ck_assert_int_eq(stored_assigned(&s, "t1/big"), 10);
  }
  s.max_doc_bytes = 0; /* fixed: everything kept is written */
  ck_assert_int_eq(mem_flush(b, &s, mem_at(0)), SINK_OK);
  ck_assert_int_eq(stored_assigned(&s, "t1/big"), 200);
  ck_assert_uint_eq(batch_durable_seq(b), batch_seq(b));
  batch_destroy(b);
  mem_free(&s);
}
END_TEST

/* --- holds: an overlay that does not fit its stored document ------------------------ */

/* The late rejects a holding batch reports: each command is held with its
 * place in the order of applies as where it came from. */
typedef struct test_holder {
  int next; /* the place of the next command applied */
  int rejected[16], nrejected;
  model_reject_t last;
} test_holder_t;

#define TEST_MAX_COMMAND_BYTES 65536

static void th_reject(void *ctx, const batch_origin_t *o, const model_command_t *cmd, const model_reject_t *rej) {
  test_holder_t *t = ctx;
  ck_assert_ptr_nonnull(cmd);
  ck_assert_int_lt(t->nrejected, 16);
  int index;
  ck_assert_uint_eq(o->from[0].len, sizeof index);
  memcpy(&index, o->from[0].p, sizeof index);
  t->rejected[t->nrejected++] = index;
  t->last = *rej;
}

static batch_t *holding_batch(test_holder_t *t) {
  memset(t, 0, sizeof *t);
  batch_t *b = new_batch(100);
  batch_holding_t how = {TEST_MAX_COMMAND_BYTES, th_reject, t};
  batch_set_holding(b, &how);
  return b;
}

/* c, a roster or grade command (model_fixtures.h), as the JSON it decodes
 * from. */
static void command_json(const model_command_t *c, model_buf_t *out) {
  const char *type = c->type == MODEL_CMD_ROSTER_ASSIGNED     ? "roster.assigned"
                     : c->type == MODEL_CMD_ROSTER_UNASSIGNED ? "roster.unassigned"
                                                              : "grade.updated";
  ck_assert(c->type == MODEL_CMD_ROSTER_ASSIGNED || c->type == MODEL_CMD_ROSTER_UNASSIGNED ||
            (c->type == MODEL_CMD_GRADE_UPDATED && c->data.grade.has_points && c->data.grade.has_feedback));
  model_buf_printf(out,
                   "{\"id\":\"%.*s\",\"type\":\"%s\",\"tenant\":\"%.*s\",\"assignment\":\"%.*s\","
                   "\"ts\":\"2026-09-01T00:00:00Z\",\"student\":\"%.*s\",\"version\":%llu",
                   (int)c->id_len, c->id, type, (int)c->tenant_len, c->tenant, (int)c->assignment_len, c->assignment,
                   (int)c->student_len, c->student, (unsigned long long)c->version);
  if (c->type == MODEL_CMD_GRADE_UPDATED)
    model_buf_printf(out, ",\"data\":{\"points\":%g,\"feedback\":\"%.*s\"}", c->data.grade.points,
                     (int)c->data.grade.feedback_len, c->data.grade.feedback);
  model_buf_putc(out, '}');
}

/* Applies c from its JSON, which the batch holds with c's place while its
 * aggregate is unloaded; every command of these tests is applied. */
static void apply_held(batch_t *b, test_holder_t *t, const model_command_t *c) {
  model_buf_t json = MODEL_BUF_INIT;
  command_json(c, &json);
  model_command_t *cmd = malloc(sizeof *cmd);
  model_reject_t rej;
  ck_assert_msg(model_command_decode(json.data, json.len, TEST_MAX_COMMAND_BYTES, cmd, &rej), "%s", rej.detail);
  int index = t->next++;
  batch_origin_t o = {{json.data, json.len}, {{&index, sizeof index}}};
  ck_assert_int_eq(batch_apply_from(b, cmd, &o, false, 0, mem_at(0), &rej), MODEL_APPLY_APPLIED);
  free(cmd);
  model_buf_destroy(&json);
}

/* What a late reject gives the report callback: the origin's pieces, one
 * after the other, whether the command decoded again, and why. */
typedef struct origin_seen {
  char pieces[3][96];
  bool decoded[3];
  model_reject_code_t code[3];
  int n;
} origin_seen_t;

static void os_reject(void *ctx, const batch_origin_t *o, const model_command_t *cmd, const model_reject_t *rej) {
  origin_seen_t *seen = ctx;
  ck_assert_int_lt(seen->n, 3);
  char *out = seen->pieces[seen->n];
  int at = snprintf(out, 96, "%.*s", (int)o->command.len, (const char *)o->command.p);
  for (int i = 0; i < BATCH_ORIGIN_PARTS; i++) {
    const char *p = o->from[i].p ? o->from[i].p : "";
    at += snprintf(out + at, (size_t)(96 - at), "|%.*s", (int)o->from[i].len, p);
  }
  seen->decoded[seen->n] = cmd != NULL;
  seen->code[seen->n++] = rej->code;
}

/* A hold is a copy of every piece of its command's origin, its bytes
 * counted; applying the holds again decodes each command from that copy and
 * gives the origin back, piece for piece, to the one report callback: with
 * document_too_large and the command when it does not fit, with the
 * decoder's reason and no command when it no longer decodes. */
START_TEST(a_hold_gives_its_origin_back_to_the_late_reject) {
  model_command_t c = roster("a1", "s1", "c1", 1, true);
  model_buf_t json = MODEL_BUF_INIT;
  command_json(&c, &json);
  char topic[] = "topic-a", key[] = "key-a";
  batch_origin_t o = {{json.data, json.len}, {{topic, 7}, {NULL, 0}, {key, 5}}};
  batch_holds_t h = {0};
  batch_holds_add(&h, &o);
  ck_assert_uint_eq(h.n, 1);
  ck_assert_uint_ge(h.bytes, json.len + 12);
  ck_assert_uint_ge(batch_holds_memory(&h), h.bytes);
  char want[96];
  snprintf(want, sizeof want, "%s|topic-a||key-a", json.data);
  memset(json.data, 'x', json.len); /* the hold is a copy */
  memset(topic, 'x', 7);
  memset(key, 'x', 5);

  origin_seen_t seen = {0};
  model_command_t *cmd = malloc(sizeof *cmd);
  model_aggregate_t *agg = model_aggregate_new("t1", 2, "a1", 2);
  batch_holding_t how = {TEST_MAX_COMMAND_BYTES, os_reject, &seen};
  size_t applied;
  ck_assert_uint_eq(batch_holds_reapply(&h, &how, agg, 0, cmd, &applied), 1); /* no room at all */
  ck_assert_uint_eq(applied, 0);
  how.max_command_bytes = 16; /* shorter than the command: it no longer decodes */
  ck_assert_uint_eq(batch_holds_reapply(&h, &how, agg, SIZE_MAX, cmd, &applied), 1);
  how.max_command_bytes = TEST_MAX_COMMAND_BYTES;
  ck_assert_uint_eq(batch_holds_reapply(&h, &how, agg, SIZE_MAX, cmd, &applied), 0); /* it fits */
  ck_assert_uint_eq(applied, 1);
  ck_assert_uint_eq(model_aggregate_student_count(agg), 1);

  ck_assert_int_eq(seen.n, 2);
  ck_assert_str_eq(seen.pieces[0], want);
  ck_assert(seen.decoded[0] && seen.code[0] == MODEL_REJ_DOCUMENT_TOO_LARGE);
  ck_assert_str_eq(seen.pieces[1], want);
  ck_assert(!seen.decoded[1] && seen.code[1] == MODEL_REJ_TOO_LARGE);
  batch_holds_release(&h);
  ck_assert(!h.n && !h.bytes && !h.v);
  model_aggregate_destroy(agg);
  free(cmd);
  model_buf_destroy(&json);
}
END_TEST

/* The stored document of t1/big with less room left than a student takes:
 * students s0, s1, ... with 4 KiB of feedback (s0's cut to a few bytes by
 * a second grade, h0), then students r0, r1, ... with only a roster slot
 * until one more would pass the store's limit. A grade that keeps its
 * slot's size fits; anything that grows it does not. */
static model_aggregate_t *full_document(void) {
  model_aggregate_t *a = model_aggregate_new("t1", 2, "big", 3);
  size_t limit = sink_document_limit(a), would_be;
  fx_fill_grades(a, "big", limit);
  model_command_t c;
  fx_grade(&c, "t1", "big", "s0", 2, "h0", true, 1, "short");
  ck_assert_int_eq(model_aggregate_apply_within(a, &c, limit, &would_be), MODEL_APPLY_APPLIED);
  for (int k = 0;; k++) {
    char st[16], id[16];
    snprintf(st, sizeof st, "r%d", k);
    snprintf(id, sizeof id, "r%d", k);
    fx_roster(&c, "t1", "big", st, 1, id, true);
    if (model_aggregate_apply_within(a, &c, limit, &would_be) == MODEL_APPLY_TOO_LARGE) break;
  }
  return a;
}

/* The three tests on t1/big stored full: the store holds full_document(),
 * want starts as its copy, and b holds its commands through t. */
typedef struct full_case {
  mem_store_t s;
  model_aggregate_t *stored, *want;
  test_holder_t t;
  batch_t *b;
} full_case_t;

static void full_case_start(full_case_t *f) {
  mem_init(&f->s);
  f->stored = full_document();
  f->want = model_aggregate_clone(f->stored);
  mem_put(&f->s, f->stored);
  f->b = holding_batch(&f->t);
}

/* Destroys the batch, which releases whatever it still holds. */
static void full_case_end(full_case_t *f) {
  batch_destroy(f->b);
  model_aggregate_destroy(f->stored);
  model_aggregate_destroy(f->want);
  mem_free(&f->s);
}

/* After a restart (cold cache) the aggregate is an overlay: the new student
 * fits the overlay but not the stored document. The flush that loads it
 * rebuilds it from the stored document and the held commands: exactly that
 * command is rejected late (document_too_large), the others are applied,
 * the document is written once, whole, and the store never refuses it. */
START_TEST(an_overlay_past_the_limit_rejects_late_what_does_not_fit) {
  full_case_t f;
  full_case_start(&f);
  model_command_t a = long_grade("big", "s1", "h1", 2, MODEL_FEEDBACK_MAX); /* same size: fits */
  model_command_t big = long_grade("big", "zz", "n1", 1, MODEL_FEEDBACK_MAX);
  model_command_t c = long_grade("big", "s2", "h2", 2, MODEL_FEEDBACK_MAX);
  model_command_t small = roster("small", "s1", "x1", 1, true);
  apply_held(f.b, &f.t, &a);
  apply_held(f.b, &f.t, &big);
  apply_held(f.b, &f.t, &c);
  apply_held(f.b, &f.t, &small);
  model_aggregate_apply(f.want, &a);
  model_aggregate_apply(f.want, &c);
  double refused0 = metric("\naggregator_store_too_large_total ");

  writer_job_t *job = batch_flush_begin(f.b, mem_at(0));
  sink_t sink = mem_sink(&f.s);
  writer_execute(&sink, clock_system(), job);
  ck_assert_uint_eq(job->too_large, 1);
  ck_assert_int_eq(batch_flush_end(f.b, job, mem_at(0), NULL), SINK_PARTIAL);
  ck_assert_int_eq(f.t.nrejected, 1);
  ck_assert_int_eq(f.t.rejected[0], 1); /* big, the second held */
  ck_assert_int_eq(f.t.last.code, MODEL_REJ_DOCUMENT_TOO_LARGE);
  ck_assert_uint_eq(batch_stats(f.b)->too_large, 1);
  ck_assert_uint_eq(batch_stats(f.b)->applied, 3);
  ck_assert_uint_eq(batch_held_count(f.b), 0); /* loaded: nothing held any more */
  ck_assert(batch_dirty(f.b));
  ck_assert_uint_lt(batch_durable_seq(f.b), batch_seq(f.b)); /* not written yet: nothing past it committable */
  ck_assert_int_eq(mem_find(&f.s, "t1/big")->rev, 1);

  ck_assert_int_eq(mem_flush(f.b, &f.s, mem_at(0)), SINK_OK);
  ck_assert_int_eq(mem_find(&f.s, "t1/big")->rev, 2); /* written once */
  ck_assert(model_aggregate_equal(mem_find(&f.s, "t1/big")->agg, f.want));
  ck_assert_uint_le(statement_bytes(mem_find(&f.s, "t1/big")->agg), STORE_MAX_DOCUMENT_BYTES);
  ck_assert_int_eq(mem_find(&f.s, "t1/small")->rev, 1);
  ck_assert_uint_eq(batch_durable_seq(f.b), batch_seq(f.b));
  ck_assert(metric("\naggregator_store_too_large_total ") == refused0);
  ck_assert_uint_eq(batch_stats(f.b)->write_errors, 0);
  full_case_end(&f);
}
END_TEST

/* A slot of the overlay that grows past the limit (s0's short feedback
 * replaced by 4 KiB) is rejected late; a grade that keeps its size is
 * applied. */
START_TEST(a_slot_grown_past_the_limit_by_an_overlay_is_rejected_late) {
  full_case_t f;
  full_case_start(&f);
  model_command_t grow = long_grade("big", "s0", "i0", 3, MODEL_FEEDBACK_MAX);
  model_command_t keep = long_grade("big", "s3", "h3", 2, MODEL_FEEDBACK_MAX);
  apply_held(f.b, &f.t, &grow);
  apply_held(f.b, &f.t, &keep);
  model_aggregate_apply(f.want, &keep);
  ck_assert_int_eq(mem_flush(f.b, &f.s, mem_at(0)), SINK_OK);
  ck_assert_int_eq(f.t.nrejected, 1);
  ck_assert_int_eq(f.t.rejected[0], 0);
  ck_assert(model_aggregate_equal(mem_find(&f.s, "t1/big")->agg, f.want));
  ck_assert_int_eq(mem_find(&f.s, "t1/big")->rev, 2);
  ck_assert_uint_eq(batch_durable_seq(f.b), batch_seq(f.b));
  full_case_end(&f);
}
END_TEST

/* Holds count in pending bytes while the aggregate is unloaded, commands
 * applied while its load is in flight are held too, and all of them are
 * released once the load lands and the merge fits; a loaded aggregate
 * holds nothing. */
START_TEST(holds_are_released_when_the_load_lands) {
  mem_store_t s;
  mem_init(&s);
  model_aggregate_t *stored = model_aggregate_new("t1", 2, "a1", 2);
  model_command_t c0 = roster("a1", "s0", "c0", 1, true);
  model_aggregate_apply(stored, &c0);
  mem_put(&s, stored);
  test_holder_t t;
  batch_t *b = holding_batch(&t), *plain = new_batch(100);
  model_command_t c1 = roster("a1", "s1", "c1", 1, true), c2 = roster("a1", "s2", "c2", 1, true);
  apply_held(b, &t, &c1);
  batch_apply(plain, &c1, 0, mem_at(0), NULL);
  ck_assert_uint_eq(batch_held_count(b), 1);
  model_buf_t c1_json = MODEL_BUF_INIT;
  command_json(&c1, &c1_json);
  ck_assert_uint_ge(batch_pending_bytes(b), batch_pending_bytes(plain) + c1_json.len); /* its bytes at least */
  model_buf_destroy(&c1_json);
  writer_job_t *job = batch_flush_begin(b, mem_at(0));
  apply_held(b, &t, &c2); /* during the load */
  ck_assert_uint_eq(batch_held_count(b), 2);
  sink_t sink = mem_sink(&s);
  writer_execute(&sink, clock_system(), job);
  ck_assert_int_eq(batch_flush_end(b, job, mem_at(0), NULL), SINK_OK);
  ck_assert_uint_eq(batch_held_count(b), 0);
  ck_assert_int_eq(t.nrejected, 0);
  model_command_t c3 = roster("a1", "s3", "c3", 1, true);
  apply_held(b, &t, &c3); /* loaded now: not held */
  ck_assert_uint_eq(batch_held_count(b), 0);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(0)), SINK_OK);
  ck_assert_int_eq(stored_assigned(&s, "t1/a1"), 4);
  ck_assert_uint_eq(batch_pending_bytes(b), 0);
  batch_destroy(b);
  batch_destroy(plain);
  model_aggregate_destroy(stored);
  mem_free(&s);
}
END_TEST

/* A command that comes while the load is in flight is checked against the
 * overlay only; when the load lands, what came since does not fit the
 * document just written: the aggregate is rebuilt from it, the command is
 * rejected late, and the rest is written. */
START_TEST(a_command_during_the_load_that_does_not_fit_is_rejected_late) {
  full_case_t f;
  full_case_start(&f);
  model_command_t a = long_grade("big", "s1", "h1", 2, MODEL_FEEDBACK_MAX);
  model_command_t big = long_grade("big", "zz", "n1", 1, MODEL_FEEDBACK_MAX);
  apply_held(f.b, &f.t, &a);
  model_aggregate_apply(f.want, &a);
  writer_job_t *job = batch_flush_begin(f.b, mem_at(0));
  apply_held(f.b, &f.t, &big);
  sink_t sink = mem_sink(&f.s);
  writer_execute(&sink, clock_system(), job);
  ck_assert_int_eq(batch_flush_end(f.b, job, mem_at(0), NULL), SINK_OK);
  ck_assert_int_eq(mem_find(&f.s, "t1/big")->rev, 2); /* a landed */
  ck_assert_int_eq(f.t.nrejected, 1);
  ck_assert_int_eq(f.t.rejected[0], 1);
  ck_assert_uint_eq(batch_held_count(f.b), 0);
  ck_assert(!batch_dirty(f.b)); /* nothing that fits is missing from the store: nothing more to write */
  ck_assert_int_eq(mem_flush(f.b, &f.s, mem_at(0)), SINK_OK);
  ck_assert_int_eq(mem_find(&f.s, "t1/big")->rev, 2);
  ck_assert(model_aggregate_equal(mem_find(&f.s, "t1/big")->agg, f.want));
  ck_assert_uint_eq(batch_durable_seq(f.b), batch_seq(f.b));
  full_case_end(&f);
}
END_TEST

/* Another writer fills the document between our load and our write: the
 * write conflicts, the aggregate stays unloaded with its holds, and the
 * reload finds that the overlay does not fit any more: the new student is
 * rejected late. */
START_TEST(holds_survive_a_conflict_and_reject_after_the_reload) {
  mem_store_t s;
  mem_init(&s);
  model_aggregate_t *small_doc = model_aggregate_new("t1", 2, "big", 3), *full = full_document();
  model_command_t c0 = roster("big", "s1", "c0", 1, true);
  model_aggregate_apply(small_doc, &c0);
  mem_put(&s, small_doc);
  test_holder_t t;
  batch_t *b = holding_batch(&t);
  model_command_t big = long_grade("big", "zz", "n1", 1, MODEL_FEEDBACK_MAX);
  apply_held(b, &t, &big);
  s.hold = true;
  sink_t sink = mem_sink(&s);
  writer_t *w = writer_new(&sink, 0, clock_system());
  writer_job_t *job = batch_flush_begin(b, mem_at(0));
  ck_assert(writer_submit(w, job));
  ck_assert(mem_wait_held(&s, 1)); /* loaded, the write waits at the gate */
  mem_put(&s, full);               /* another writer: rev 2 */
  mem_release(&s);
  job = writer_take(w, 30000);
  ck_assert_ptr_nonnull(job);
  ck_assert_uint_eq(job->conflicts, 1);
  ck_assert_int_eq(batch_flush_end(b, job, mem_at(0), NULL), SINK_PARTIAL);
  writer_destroy(w);
  ck_assert_uint_eq(batch_held_count(b), 1); /* still unloaded: held */
  ck_assert_int_eq(mem_flush(b, &s, mem_at(0)), SINK_OK);
  ck_assert_int_eq(t.nrejected, 1);
  ck_assert_uint_eq(batch_held_count(b), 0);
  doc_t *d = mem_find(&s, "t1/big");
  ck_assert_int_eq(d->rev, 2); /* the other writer's: nothing of ours fits, nothing to write */
  model_aggregate_t *want = model_aggregate_clone(full);
  model_aggregate_merge(want, small_doc);
  ck_assert(model_aggregate_equal(d->agg, want));
  ck_assert_uint_eq(batch_durable_seq(b), batch_seq(b));
  batch_destroy(b);
  model_aggregate_destroy(want);
  model_aggregate_destroy(small_doc);
  model_aggregate_destroy(full);
  mem_free(&s);
}
END_TEST

/* An aggregate loaded before it lost a write race held none of its
 * commands: the reload cannot rebuild it, so an overlay that does not fit
 * is merged anyway and left to the store's refusal, the last line of
 * defence (kept and retried, counted, nothing committed past it). Here the
 * in-memory store's stand-in limit refuses it. */
START_TEST(a_conflict_after_a_load_leaves_the_overflow_to_the_store) {
  mem_store_t s;
  mem_init(&s);
  test_holder_t t;
  batch_t *b = holding_batch(&t);
  model_command_t c0 = roster("big", "s0", "c0", 1, true);
  apply_held(b, &t, &c0);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(0)), SINK_OK); /* loaded (absent), written: rev 1 */
  model_command_t mine = long_grade("big", "zz", "n1", 1, MODEL_FEEDBACK_MAX);
  apply_held(b, &t, &mine); /* loaded: checked against the whole document, not held */
  ck_assert_uint_eq(batch_held_count(b), 0);
  model_aggregate_t *full = full_document();
  mem_put(&s, full); /* another writer: rev 2 */
  s.max_doc_bytes = model_aggregate_memory(mem_find(&s, "t1/big")->agg) + 64;
  double refused0 = metric("\naggregator_store_too_large_total ");
  uint64_t durable0 = batch_durable_seq(b);
  ck_assert_int_eq(mem_flush(b, &s, mem_at(0)), SINK_RETRY); /* conflict, reload, merged, refused */
  ck_assert_int_eq(t.nrejected, 0);
  ck_assert(metric("\naggregator_store_too_large_total ") == refused0 + 1);
  ck_assert_uint_eq(batch_durable_seq(b), durable0);
  ck_assert_int_eq(mem_find(&s, "t1/big")->rev, 2);
  batch_destroy(b);
  model_aggregate_destroy(full);
  mem_free(&s);
}
END_TEST

/* Partial writes (store.h): the batch lists the students touched since each
 * aggregate's last write, and mem_store applies only those. Random roster
 * changes over four assignments of twelve students, new students now and
 * then, with store failures (retried) and writes by another writer
 * (conflicts) mixed in, cached and with no cache (every write after a load): every stored document must end equal to the merge
 * of all commands, and most writes must have been partial. */
static void random_partial_run(int64_t cache) {
  mem_store_t s;
  mem_init(&s);
  batch_t *b = new_batch(cache);
  model_aggregate_t *want[4];
  char an[4][8];
  for (int a = 0; a < 4; a++) {
    snprintf(an[a], sizeof an[a], "a%d", a);
    want[a] = model_aggregate_new("t1", 2, an[a], strlen(an[a]));
  }
  uint64_t rnd = 7, version = 1;
  int conflicts = 0, retries = 0;
  for (int round = 0; round < 400; round++) {
    int ncmd = 1 + (int)(cmdgen_splitmix(&rnd) % 4);
    for (int k = 0; k < ncmd; k++) {
      int a = (int)(cmdgen_splitmix(&rnd) % 4);
      /* mostly the first twelve students; a new one one time in fifteen */
      unsigned st = cmdgen_splitmix(&rnd) % 15 == 0 ? 12 + (unsigned)(cmdgen_splitmix(&rnd) % 40)
                                             : (unsigned)(cmdgen_splitmix(&rnd) % 12);
      char sid[16], cid[24];
      snprintf(sid, sizeof sid, "s%02u", st);
      snprintf(cid, sizeof cid, "c%llu", (unsigned long long)version);
      /* versions sometimes repeat or go back: stale commands too */
      uint64_t v = version - (cmdgen_splitmix(&rnd) % 3 == 0 && version > 3 ? 2 : 0);
      model_command_t c = roster(an[a], sid, cid, v, cmdgen_splitmix(&rnd) % 3 != 0);
      batch_apply(b, &c, 0, mem_at(0), NULL);
      model_aggregate_apply(want[a], &c);
      version++;
    }
    if (round % 37 == 5) {
      s.fail_next = 1;
      retries++;
    }
    if (round % 41 == 9 && s.n > 0) { /* another writer: the stored rev moves on */
      mem_lock(&s);
      s.docs[0].rev++;
      mem_unlock(&s);
      conflicts++;
    }
    sink_status_t st = mem_flush(b, &s, mem_at(0));
    ck_assert(st == SINK_OK || st == SINK_RETRY || st == SINK_PARTIAL);
  }
  for (int i = 0; i < 5 && batch_dirty(b); i++) mem_flush(b, &s, mem_at(0));
  ck_assert(!batch_dirty(b));
  for (int a = 0; a < 4; a++) {
    char key[48];
    snprintf(key, sizeof key, "t1/%s", an[a]);
    doc_t *d = mem_find(&s, key);
    ck_assert_ptr_nonnull(d);
    ck_assert_msg(model_aggregate_equal(d->agg, want[a]), "%s differs from the merge of its commands", key);
    model_aggregate_destroy(want[a]);
  }
  ck_assert_msg(s.partial_items * 2 > s.write_items, "%d of %d writes partial", s.partial_items, s.write_items);
  ck_assert(retries > 0 && conflicts > 0);
  batch_destroy(b);
  mem_free(&s);
}

START_TEST(partial_writes_list_every_touched_student) {
  random_partial_run(100); /* cached: the batch lists the students */
  random_partial_run(0);   /* every flush a cache miss: the writer lists the overlay's */
}
END_TEST

START_TEST(flush_triggers) {
  mem_store_t s;
  mem_init(&s);
  batch_limits_t l = {3, 2, 50, 1 << 30, 10, 1 << 30};
  batch_t *b = batch_new(&l);
  ck_assert(!batch_flush_due(b, 0));
  ck_assert_int_eq(batch_deadline(b), INT64_MAX);
  model_command_t c1 = roster("a1", "s1", "c1", 1, true), c2 = roster("a2", "s1", "c2", 1, true);
  batch_apply(b, &c1, 0, mem_at(100), NULL);
  ck_assert(!batch_flush_due(b, 100));
  ck_assert(batch_flush_due(b, 150)); /* linger */
  ck_assert_int_eq(batch_deadline(b), 150);
  batch_apply(b, &c2, 0, mem_at(100), NULL);
  ck_assert(batch_flush_due(b, 100)); /* max_aggregates = 2 */
  ck_assert_int_eq(mem_flush(b, &s, mem_at(100)), SINK_OK);
  batch_apply(b, &c1, 0, mem_at(200), NULL);
  batch_apply(b, &c1, 0, mem_at(200), NULL);
  ck_assert(!batch_flush_due(b, 200));
  batch_apply(b, &c1, 0, mem_at(200), NULL);
  ck_assert(batch_flush_due(b, 200)); /* max_commands = 3, even if all stale */
  batch_destroy(b);
  mem_free(&s);
}
END_TEST

/* Two latencies per command (batch.h): durable when the write of its own
 * aggregate lands, committable when it and every command applied before it
 * are durable. A flush takes the oldest changes first, at most the cap, so
 * a command on an aggregate that was dirty early is durable with it while
 * an older change of an aggregate left for the next flush holds its offset
 * back. Each command is observed once on either histogram, whatever
 * happens to the write that carries it: landed, stale against the
 * snapshot in flight or against the store, conflict (reloaded, written
 * again), store failure (retried). */
#define DURABLE "aggregator_command_durable_latency_seconds_count "
#define COMMITTABLE "aggregator_command_committable_latency_seconds_count "
START_TEST(latency_durable_per_aggregate_committable_in_order) {
  mem_store_t s;
  mem_init(&s);
  batch_t *b = new_batch(100), *other = new_batch(100);
  double d0 = metric(DURABLE), c0 = metric(COMMITTABLE);
  double d30 = metric("aggregator_command_durable_latency_seconds_bucket{le=\"30\"} ");
  double d15 = metric("aggregator_command_durable_latency_seconds_bucket{le=\"15\"} ");
  int64_t t = 1788220800000; /* when every command entered the system (2026-09-01T00:00:00Z) */
  batch_now_t now = {0, t + 20000}; /* every command 20 s old: the bucket (15 s, 30 s] */
  model_command_t first = roster("a0", "s1", "c0", 1, true);
  batch_apply(b, &first, t, now, NULL); /* seq 0 */
  for (int i = 1; i <= BATCH_FLUSH_FLOOR; i++) { /* seqs 1..8: a1..a8, one dirty past the cap */
    char a[16], id[16];
    snprintf(a, sizeof a, "a%d", i);
    snprintf(id, sizeof id, "c%d", i);
    model_command_t c = roster(a, "s1", id, 1, true);
    batch_apply(b, &c, t, now, NULL);
  }
  model_command_t again = roster("a0", "s2", "c0b", 1, true);
  ck_assert_int_eq(batch_apply(b, &again, t, now, NULL), MODEL_APPLY_APPLIED); /* seq 9, on a0: the oldest entry */

  ck_assert_int_eq(mem_flush(b, &s, now), SINK_OK); /* a0..a7; a8 is left for the next flush */
  ck_assert_uint_eq(batch_dirty_count(b), 1);
  ck_assert(metric(DURABLE) == d0 + BATCH_FLUSH_FLOOR + 1);  /* a0's two commands, a1..a7's one each */
  ck_assert(metric(COMMITTABLE) == c0 + BATCH_FLUSH_FLOOR);  /* seqs 0..7: a8's (8) holds seq 9 back */
  ck_assert_int_eq(mem_flush(b, &s, now), SINK_OK);
  ck_assert(metric(DURABLE) == d0 + BATCH_FLUSH_FLOOR + 2);
  ck_assert(metric(COMMITTABLE) == c0 + BATCH_FLUSH_FLOOR + 2);
  ck_assert(metric("aggregator_command_durable_latency_seconds_bucket{le=\"30\"} ") == d30 + BATCH_FLUSH_FLOOR + 2);
  ck_assert(metric("aggregator_command_durable_latency_seconds_bucket{le=\"15\"} ") == d15);

  /* Stale against the store: durable at once. */
  double d = metric(DURABLE);
  ck_assert_int_eq(batch_apply(b, &first, t, now, NULL), MODEL_APPLY_STALE);
  ck_assert(metric(DURABLE) == d + 1);

  /* Stale against the snapshot in flight: durable when it lands. */
  sink_t sink = mem_sink(&s);
  model_command_t third = roster("a0", "s3", "c0c", 1, true);
  batch_apply(b, &third, t, now, NULL);
  writer_job_t *job = batch_flush_begin(b, now);
  ck_assert_ptr_nonnull(job);
  ck_assert_int_eq(batch_apply(b, &third, t, now, NULL), MODEL_APPLY_STALE);
  ck_assert(metric(DURABLE) == d + 1);
  writer_execute(&sink, clock_system(), job);
  ck_assert_int_eq(batch_flush_end(b, job, now, NULL), SINK_OK);
  ck_assert(metric(DURABLE) == d + 3);

  /* A conflict: another writer moved a0 on; the change is reloaded, merged
   * and written again, and observed once, when that lands. */
  model_command_t mine = roster("a0", "s4", "c0d", 1, true), theirs = roster("a0", "s5", "x1", 1, true);
  batch_apply(other, &theirs, t, now, NULL);
  ck_assert_int_eq(mem_flush(other, &s, now), SINK_OK);
  batch_apply(b, &mine, t, now, NULL);
  ck_assert_int_eq(mem_flush(b, &s, now), SINK_OK);
  ck_assert_uint_eq(batch_stats(b)->conflicts, 1);
  ck_assert(metric(DURABLE) == d + 5); /* theirs (other's own batch) and mine */

  /* A store failure: kept, retried, observed once. */
  model_command_t fifth = roster("a0", "s6", "c0e", 1, true);
  batch_apply(b, &fifth, t, now, NULL);
  s.fail_next = 1;
  ck_assert_int_eq(mem_flush(b, &s, now), SINK_RETRY);
  ck_assert(metric(DURABLE) == d + 5);
  ck_assert_int_eq(mem_flush(b, &s, now), SINK_OK);
  ck_assert(metric(DURABLE) == d + 6);
  ck_assert(batch_flush_begin(b, now) == NULL); /* nothing dirty: every command so far is committable */
  double all = (double)(batch_seq(b) + batch_seq(other)); /* every command applied, stale ones too, once */
  ck_assert(metric(DURABLE) - d0 == all);
  ck_assert(metric(COMMITTABLE) - c0 == all);
  batch_destroy(b);
  batch_destroy(other);
  mem_free(&s);
}
END_TEST

Suite *test_suite(void) {
  Suite *su = suite_create("batch");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, pending_bytes_count_what_dirty_entries_hold);
  tcase_add_test(tc, flush_writes_changed_aggregates_once);
  tcase_add_test(tc, partial_writes_list_every_touched_student);
  tcase_add_test(tc, miss_merges_into_stored_document);
  tcase_add_test(tc, conflict_reloads_and_remerges);
  tcase_add_test(tc, forgotten_copies_are_loaded_not_conflicted);
  tcase_add_test(tc, retry_keeps_changes_until_written);
  tcase_add_test(tc, cache_bound_and_naive_mode);
  tcase_add_test(tc, cache_evicts_at_whichever_bound_is_passed);
  tcase_add_test(tc, cached_bytes_follow_an_aggregate_between_cache_and_pending);
  tcase_add_test(tc, default_byte_bound_holds_the_default_count_of_30_student_aggregates);
  tcase_add_test(tc, flush_triggers);
  tcase_add_test(tc, a_command_past_the_document_limit_is_rejected);
  tcase_add_test(tc, a_refused_document_is_kept_for_retry);
  tcase_add_test(tc, a_hold_gives_its_origin_back_to_the_late_reject);
  tcase_add_test(tc, an_overlay_past_the_limit_rejects_late_what_does_not_fit);
  tcase_add_test(tc, a_slot_grown_past_the_limit_by_an_overlay_is_rejected_late);
  tcase_add_test(tc, holds_are_released_when_the_load_lands);
  tcase_add_test(tc, a_command_during_the_load_that_does_not_fit_is_rejected_late);
  tcase_add_test(tc, holds_survive_a_conflict_and_reject_after_the_reload);
  tcase_add_test(tc, a_conflict_after_a_load_leaves_the_overflow_to_the_store);
  tcase_add_test(tc, latency_durable_per_aggregate_committable_in_order);
  suite_add_tcase(su, tc);
  return su;
}
