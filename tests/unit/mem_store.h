/* An in-memory store for unit tests, behind the sink_t interface: it
 * applies the same conditional-write rule as store.c (filter {_id, rev}, an
 * upsert of an absent document expects rev 0, a lost race is a conflict),
 * so batching, loading, conflicts and retries can be checked without a
 * server. Up to 64 documents.
 *
 * Controllable latency, for the pipelined writer: every load and write
 * takes latency_ms on `clock`, a manual clock the test gives (moved, never
 * slept on); while `hold` is set, writes wait at a gate, and loads while
 * `hold_loads` is (the test sees them waiting in `held`) until
 * mem_release(); every write that lands wakes mem_wait_writes.
 *
 * Threads: the writer thread calls load/write/ping while the test thread
 * sets failures, holds and releases, so every field is read and written
 * under `lock` (mem_init first). Documents (docs, keys, n) are read by the
 * test only after the writer has stopped (writer_destroy / consumer_run
 * returned: the join orders them), or under mem_lock. */
#ifndef MEM_STORE_H
#define MEM_STORE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "pipeline/batch.h"
#include "store/sink.h"
#include "pipeline/writer.h"

typedef struct doc {
  model_aggregate_t *agg;
  int64_t rev;
  int64_t updated_at_ms; /* the updatedAt of its last write (mem_put: 0) */
} doc_t;

typedef struct mem_store {
  char keys[64][140];
  doc_t docs[64];
  int n;
  int loads, load_keys, writes, write_items;
  int partial_items; /* items written as partial updates */
  int fail_next;  /* next N calls answer SINK_RETRY */
  bool fail_fatal; /* every call answers SINK_FATAL */
  int latency_ms;  /* every load and write moves clock by this much */
  clock_manual_t *clock; /* borrowed; required with latency_ms */
  bool hold;       /* writes wait at the gate until mem_release */
  bool hold_loads; /* loads wait at the gate until mem_release */
  size_t max_doc_bytes; /* 0 = none; else a document whose model_aggregate_memory passes it is refused as
                         * too large, as store.c refuses one past STORE_MAX_DOCUMENT_BYTES of BSON */
  int held;        /* writes waiting at the gate now */
  pthread_mutex_t lock;
  pthread_cond_t cond;
} mem_store_t;

static inline void mem_init(mem_store_t *s) {
  memset(s, 0, sizeof *s);
  pthread_mutex_init(&s->lock, NULL);
  pthread_condattr_t ca; /* timed waits on the monotonic clock: a step of the wall clock moves none */
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->cond, &ca);
  pthread_condattr_destroy(&ca);
}

static inline void mem_lock(mem_store_t *s) { pthread_mutex_lock(&s->lock); }
static inline void mem_unlock(mem_store_t *s) { pthread_mutex_unlock(&s->lock); }

/* A call to the store takes latency_ms (s locked): on the test's clock. */
static inline void mem_take_time(mem_store_t *s) {
  if (!s->latency_ms) return;
  if (!s->clock) abort(); /* latency needs a clock to move */
  clock_manual_advance(s->clock, s->latency_ms);
}

/* Waits at the gate while it is shut (s locked), counted in `held`. */
static inline void mem_gate(mem_store_t *s, const bool *shut) {
  s->held++;
  pthread_cond_broadcast(&s->cond);
  while (*shut) pthread_cond_wait(&s->cond, &s->lock);
  s->held--;
}

static inline void mem_release(mem_store_t *s) {
  mem_lock(s);
  s->hold = s->hold_loads = false;
  pthread_cond_broadcast(&s->cond);
  mem_unlock(s);
}

static inline void mem_set(mem_store_t *s, int *field, int value) {
  mem_lock(s);
  *field = value;
  mem_unlock(s);
}

static inline int mem_get(mem_store_t *s, const int *field) {
  mem_lock(s);
  int v = *field;
  mem_unlock(s);
  return v;
}

static inline doc_t *mem_find(mem_store_t *s, const char *key) {
  for (int i = 0; i < s->n; i++)
    if (!strcmp(s->keys[i], key)) return &s->docs[i];
  return NULL;
}

/* The failure the test asked for, if any (every load and write asks first,
 * under the lock). */
static inline sink_status_t mem_injected(mem_store_t *s, sink_error_t *err) {
  if (s->fail_fatal) {
    if (err) snprintf(err->message, sizeof err->message, "injected fatal error");
    return SINK_FATAL;
  }
  if (s->fail_next > 0) {
    s->fail_next--;
    if (err) snprintf(err->message, sizeof err->message, "injected transient error");
    return SINK_RETRY;
  }
  return SINK_OK;
}

static inline sink_status_t mem_load(void *ctx, const char *const *keys, size_t n, sink_found_cb found, void *cb_ctx,
                               sink_error_t *err) {
  mem_store_t *s = ctx;
  mem_lock(s);
  if (s->hold_loads) mem_gate(s, &s->hold_loads);
  mem_take_time(s);
  sink_status_t st = mem_injected(s, err);
  if (st == SINK_OK) {
    s->loads++;
    s->load_keys += (int)n;
    for (size_t i = 0; i < n; i++) {
      doc_t *d = mem_find(s, keys[i]);
      if (d) found(cb_ctx, model_aggregate_clone(d->agg), d->rev, d->updated_at_ms);
    }
  }
  mem_unlock(s);
  return st;
}

static inline sink_status_t mem_write(void *ctx, sink_write_item_t *items, size_t n, int64_t now, sink_error_t *err) {
  mem_store_t *s = ctx;
  mem_lock(s);
  mem_gate(s, &s->hold);
  mem_take_time(s);
  sink_status_t st = mem_injected(s, err);
  if (st != SINK_OK) {
    mem_unlock(s);
    return st;
  }
  s->writes++;
  s->write_items += (int)n;
  pthread_cond_broadcast(&s->cond); /* mem_wait_writes */
  for (size_t i = 0; i < n; i++) {
    const char *key = model_aggregate_key(items[i].agg, NULL);
    doc_t *d = mem_find(s, key);
    items[i].bytes = model_aggregate_memory(items[i].agg); /* stands for the BSON size */
    if (s->max_doc_bytes && items[i].bytes > s->max_doc_bytes) { /* checked before sending, as store.c */
      items[i].result = SINK_ITEM_TOO_LARGE;
      items[i].error_code = 10334; /* MongoDB's BSONObjectTooLarge, as store.c gives */
      continue;
    }
    if ((d ? d->rev : 0) != items[i].rev) {
      items[i].result = SINK_ITEM_CONFLICT;
      continue;
    }
    if (items[i].partial && items[i].rev > 0) {
      /* As the server applies the $set: only the listed students (and the
       * header if asked) go from the item into the stored document, so a
       * change the batch failed to list stays out and the test's
       * comparison with the expected documents catches it. */
      s->partial_items++;
      for (size_t k = 0; k < items[i].nstudents; k++) {
        model_student_view_t v;
        model_aggregate_student(items[i].agg, items[i].students[k], &v);
        size_t at;
        if (!model_aggregate_find_student(d->agg, v.student, v.student_len, &at)) {
          fprintf(stderr, "mem_store: a partial write of %s adds student %s\n", key, v.student);
          abort(); /* store.h: new students need a whole write */
        }
        model_aggregate_put_student(d->agg, &v);
      }
      if (items[i].header) {
        model_header_view_t hv;
        model_aggregate_header(items[i].agg, &hv);
        model_aggregate_put_header(d->agg, &hv);
      }
      d->rev = items[i].rev + 1;
      d->updated_at_ms = now;
      items[i].result = SINK_ITEM_OK;
      continue;
    }
    if (!d) {
      if (s->n == 64) abort(); /* a test with more aggregates needs a bigger table */
      strcpy(s->keys[s->n], key);
      d = &s->docs[s->n++];
    } else {
      model_aggregate_destroy(d->agg);
    }
    d->agg = model_aggregate_clone(items[i].agg);
    d->rev = items[i].rev + 1;
    d->updated_at_ms = now;
    items[i].result = SINK_ITEM_OK;
  }
  mem_unlock(s);
  return SINK_OK;
}

/* Waits (up to 30 s) until *field (under lock) reaches n; false on timeout. */
static inline bool mem_wait_for(mem_store_t *s, const int *field, int n) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += 30;
  mem_lock(s);
  int rc = 0;
  while (*field < n && rc == 0) rc = pthread_cond_timedwait(&s->cond, &s->lock, &ts);
  bool ok = *field >= n;
  mem_unlock(s);
  return ok;
}

/* Until n calls wait at the gates. */
static inline bool mem_wait_held(mem_store_t *s, int n) { return mem_wait_for(s, &s->held, n); }
/* Until n writes have landed (their calls let go of the store's lock). */
static inline bool mem_wait_writes(mem_store_t *s, int n) { return mem_wait_for(s, &s->writes, n); }

/* As another writer would: merges agg into the stored document (or stores
 * it) and bumps its rev, so that a writer holding the old rev conflicts. */
static inline void mem_put(mem_store_t *s, const model_aggregate_t *agg) {
  mem_lock(s);
  const char *key = model_aggregate_key(agg, NULL);
  doc_t *d = mem_find(s, key);
  if (!d) {
    if (s->n == 64) abort();
    strcpy(s->keys[s->n], key);
    d = &s->docs[s->n++];
    d->rev = 0;
    d->updated_at_ms = 0;
    d->agg = model_aggregate_clone(agg);
    if (!d->agg) abort();
  } else {
    model_aggregate_merge(d->agg, agg);
  }
  d->rev++;
  mem_unlock(s);
}

static inline sink_status_t mem_ping(void *ctx, sink_error_t *err) {
  mem_store_t *s = ctx;
  mem_lock(s);
  sink_status_t st = mem_injected(s, err);
  mem_unlock(s);
  return st;
}

static inline void mem_free(mem_store_t *s) {
  for (int i = 0; i < s->n; i++) model_aggregate_destroy(s->docs[i].agg);
  pthread_cond_destroy(&s->cond);
  pthread_mutex_destroy(&s->lock);
}

static inline sink_t mem_sink(mem_store_t *s) { return (sink_t){mem_load, mem_write, mem_ping, s}; }

/* A step's time with both clocks at ms, for tests that drive the batch by
 * hand. */
static inline batch_now_t mem_at(int64_t ms) { return (batch_now_t){ms, ms}; }

/* Stop-and-wait flush for tests: begin, run the job on this thread, end,
 * all at now; conflicts are reloaded and written again at once, up to 8
 * rounds (what the flusher does across flushes). */
static inline sink_status_t mem_flush(batch_t *b, mem_store_t *s, batch_now_t now) {
  sink_t sink = mem_sink(s);
  sink_status_t st = SINK_OK;
  for (int round = 0; round < 8; round++) {
    writer_job_t *job = batch_flush_begin(b, now);
    if (!job) return st == SINK_PARTIAL ? SINK_OK : st;
    writer_execute(&sink, clock_system(), job);
    st = batch_flush_end(b, job, now, NULL);
    char why[160];
    if (!batch_check(b, why, sizeof why)) { /* every flush keeps the entries' invariants (batch_entries.h) */
      fprintf(stderr, "mem_flush: %s\n", why);
      abort();
    }
    if (st != SINK_PARTIAL) return st;
  }
  return st;
}

#endif
