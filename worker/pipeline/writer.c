#include "writer.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "base/clock.h"
#include "keys.h"
#include "metrics/metrics.h"
#include "oom.h"

/* --- jobs ------------------------------------------------------------------- */

writer_job_t *writer_job_new(size_t n) {
  writer_job_t *j = oom_calloc(1, sizeof *j);
  j->cap = n ? n : 1;
  j->items = oom_calloc(j->cap, sizeof *j->items);
  j->chunk = 1000;
  return j;
}

void writer_job_destroy(writer_job_t *job) {
  if (!job) return;
  for (size_t i = 0; i < job->nitems; i++) {
    model_aggregate_destroy(job->items[i].agg);
    model_changes_free(&job->items[i].changes);
  }
  free(job->items);
  free(job);
}

void writer_job_add(writer_job_t *job, model_aggregate_t *agg, int64_t rev, bool load, void *tag) {
  if (job->nitems == job->cap) {
    job->cap *= 2;
    job->items = oom_realloc(job->items, job->cap * sizeof *job->items);
  }
  job->items[job->nitems++] = (writer_item_t){.agg = agg, .rev = rev, .load = load, .tag = tag, .whole = true};
}

/* --- running a job ----------------------------------------------------------- */

static int cmp_size(const void *x, const void *y) {
  size_t a = *(const size_t *)x, b = *(const size_t *)y;
  return (a > b) - (a < b);
}

/* Makes si a partial write of it when that is possible and pays: the
 * students of the item's changes (from the batch, or from its load) become
 * indexes of its aggregate (sorted, distinct) in idx, which has room for
 * it->changes.n.
 * Whole otherwise: new documents, anything the batch could not follow
 * (whole), an id the aggregate lacks (cannot happen: students are never
 * removed), or when half the students or more changed (their $set would be
 * about the document). */
static void plan_partial(const writer_item_t *it, sink_write_item_t *si, size_t *idx) {
  if (it->whole || (it->load && !it->loaded) || it->rev <= 0) return;
  size_t n = 0, pos = 0, len;
  const char *id;
  uint8_t mask;
  while (model_changes_next(&it->changes, &pos, &id, &len, &mask)) {
    if (n == it->changes.n || !model_aggregate_find_student(it->agg, id, len, &idx[n])) return;
    n++;
  }
  qsort(idx, n, sizeof *idx, cmp_size);
  size_t u = 0;
  for (size_t i = 0; i < n; i++)
    if (u == 0 || idx[u - 1] != idx[i]) idx[u++] = idx[i];
  if (u * 2 >= model_aggregate_student_count(it->agg) && u > 0) return;
  si->partial = true;
  si->header = it->changes.header;
  si->students = idx;
  si->nstudents = u;
}

/* Items to load, sorted by key so that each document found is matched in
 * O(log n) (a chunk holds up to batch.max_aggregates keys). */
typedef struct load_ctx {
  writer_item_t **items;
  size_t n;
} load_ctx_t;

/* key_of (keys.h) for an array of item pointers. */
static const char *item_key(const void *elem, void *ctx) {
  (void)ctx;
  return model_aggregate_key((*(writer_item_t *const *)elem)->agg, NULL);
}

/* Before an overlay (the commands the batch saw since the aggregate entered
 * memory: its snapshot of an unloaded entry) is merged into the stored
 * document it loaded: what the merge changes are the slots the overlay wins
 * (the item's changes from now on), and a partial write at rev > 0 sets
 * their students and, if it wins, the header. Whole instead when one of
 * them is a student the document lacks (a $set would append it out of id
 * order) or half of the document's students. */
static void plan_loaded(writer_item_t *it, const model_aggregate_t *stored, int64_t rev) {
  model_changes_clear(&it->changes);
  model_aggregate_wins(stored, it->agg, &it->changes);
  it->whole = true;
  size_t n = it->changes.n, pos = 0, len, at;
  const char *id;
  uint8_t mask;
  if (rev <= 0 || (n * 2 >= model_aggregate_student_count(stored) && n > 0)) return;
  while (model_changes_next(&it->changes, &pos, &id, &len, &mask))
    if (!model_aggregate_find_student(stored, id, len, &at)) return;
  it->whole = false;
}

/* A stored document arrived: the snapshot is merged into it and it becomes
 * the item's aggregate; unless the merged document would pass the store's
 * limit: then the stored document is the item's aggregate as it was loaded
 * and the item is TOO_LARGE (the batch re-applies the snapshot's commands
 * that fit, writer.h). */
static void on_found(void *ctx, model_aggregate_t *stored, int64_t rev, int64_t updated_at_ms) {
  load_ctx_t *lc = ctx;
  size_t at = model_keys_find(lc->items, lc->n, sizeof *lc->items, item_key, NULL, model_aggregate_key(stored, NULL));
  writer_item_t *it = at < lc->n ? lc->items[at] : NULL;
  if (!it || it->loaded) { /* not asked for, or a duplicate answer: the first counts */
    model_aggregate_destroy(stored);
    return;
  }
  plan_loaded(it, stored, rev); /* against the document unmerged; moot if too large */
  size_t would_be;
  model_apply_result_t r = model_aggregate_merge_within(stored, it->agg, sink_document_limit(stored), &would_be);
  if (r == MODEL_APPLY_TOO_LARGE) {
    it->result = SINK_ITEM_TOO_LARGE;
    it->bytes = would_be;
  } else if (r == MODEL_APPLY_STALE) {
    it->result = SINK_ITEM_OK; /* the store holds it already: not sent */
  }
  model_aggregate_destroy(it->agg);
  it->agg = stored;
  it->rev = rev;
  it->updated_at_ms = updated_at_ms;
  it->loaded = true;
}

/* The load found no stored document: an insert, which changes every slot
 * the snapshot holds. */
static void plan_insert(writer_item_t *it) {
  size_t tl, al;
  const char *t = model_aggregate_tenant(it->agg, &tl), *a = model_aggregate_assignment(it->agg, &al);
  model_aggregate_t *none = model_aggregate_new(t, tl, a, al);
  model_changes_clear(&it->changes);
  model_aggregate_wins(none, it->agg, &it->changes);
  model_aggregate_destroy(none);
  it->loaded = true;
  it->rev = 0;
}

static sink_status_t load_items(const sink_t *sink, writer_job_t *job, writer_item_t **scratch,
                                 const char **keys) {
  size_t n = 0;
  for (size_t i = 0; i < job->nitems; i++)
    if (job->items[i].load) scratch[n++] = &job->items[i];
  for (size_t start = 0; start < n; start += job->chunk) {
    size_t k = n - start < job->chunk ? n - start : job->chunk;
    load_ctx_t lc = {scratch + start, k};
    model_keys_sort(lc.items, k, sizeof *lc.items, item_key, NULL);
    for (size_t i = 0; i < k; i++) keys[i] = model_aggregate_key(lc.items[i]->agg, NULL);
    sink_status_t st = sink->load(sink->ctx, keys, k, on_found, &lc, &job->err);
    job->loads++;
    if (st != SINK_OK) return st; /* all or nothing (sink.h): no callback was made */
    atomic_fetch_add_explicit(&job->done_loads, k, memory_order_relaxed);
    for (size_t i = 0; i < k; i++) {
      if (!lc.items[i]->loaded) plan_insert(lc.items[i]);
    }
  }
  return SINK_OK;
}

/* The sink's answer for one item of a bulk: the item keeps it as it is, and
 * the job counts it. */
static void record_result(writer_job_t *job, writer_item_t *it, const sink_write_item_t *si) {
  it->result = si->result;
  it->sent = true;
  switch (si->result) {
  case SINK_ITEM_OK:
    it->rev++;
    it->updated_at_ms = job->now_ms;
    it->bytes = si->bytes;
    job->written++;
    job->bytes_written += si->bytes;
    break;
  case SINK_ITEM_CONFLICT:
    job->conflicts++;
    break;
  default: /* REJECTED, or TOO_LARGE refused by the store */
    it->error_code = si->error_code;
    it->bytes = si->bytes;
    job->errors++;
    break;
  }
}

void writer_execute(const sink_t *sink, const clock_source_t *clock, writer_job_t *job) {
  double t0 = clock_mono_seconds(clock); /* see writer_job_t.seconds */
  memset(&job->err, 0, sizeof job->err);
  job->status = SINK_OK;
  job->loads = job->written = job->unchanged = job->conflicts = job->errors = job->too_large = 0;
  job->bytes_written = 0;
  atomic_store_explicit(&job->done_loads, 0, memory_order_relaxed);
  atomic_store_explicit(&job->done_writes, 0, memory_order_relaxed);
  if (!job->chunk) job->chunk = 1000;
  size_t chunk = job->chunk < job->nitems ? job->chunk : job->nitems;
  writer_item_t **ents = oom_malloc(job->nitems * sizeof *ents);
  const char **keys = oom_malloc(chunk * sizeof *keys);
  sink_write_item_t *items = oom_malloc(chunk * sizeof *items);
  size_t *idx = NULL; /* the partial writes' student indexes of the current bulk */

  sink_status_t st = load_items(sink, job, ents, keys);
  size_t next = 0;
  while (st == SINK_OK) {
    size_t k = 0;
    for (; next < job->nitems && k < chunk; next++) {
      writer_item_t *it = &job->items[next];
      if (it->result != SINK_ITEM_RETRY) continue; /* settled by its load */
      ents[k] = it;
      items[k++] = (sink_write_item_t){.agg = it->agg, .rev = it->rev};
    }
    if (!k) break;
    size_t nidx = 0;
    for (size_t i = 0; i < k; i++) nidx += ents[i]->changes.n;
    idx = oom_realloc(idx, (nidx ? nidx : 1) * sizeof *idx);
    for (size_t i = 0, off = 0; i < k; off += ents[i]->changes.n, i++) plan_partial(ents[i], &items[i], idx + off);
    st = sink->write(sink->ctx, items, k, job->now_ms, &job->err);
    if (st != SINK_OK) break;
    atomic_fetch_add_explicit(&job->done_writes, k, memory_order_relaxed);
    for (size_t i = 0; i < k; i++) record_result(job, ents[i], &items[i]);
  }
  for (size_t i = 0; i < job->nitems; i++) {
    if (job->items[i].sent) continue;
    if (job->items[i].result == SINK_ITEM_OK) job->unchanged++;
    if (job->items[i].result == SINK_ITEM_TOO_LARGE) job->too_large++;
  }
  job->status = st;
  free(ents);
  free(keys);
  free(items);
  free(idx);
  job->seconds = clock_mono_seconds(clock) - t0;
}

/* --- the thread --------------------------------------------------------------- */

struct writer {
  sink_t sink;
  int64_t idle_ping_ms;
  const clock_source_t *clock; /* borrowed; this writer reads it on its thread (idle pings) */
  pthread_t thread;
  pthread_mutex_t lock;
  pthread_cond_t cond; /* signalled on submit, on finish and on stop */
  /* under lock: */
  writer_job_t *todo;    /* submitted, not started */
  writer_job_t *running; /* started, not finished */
  writer_job_t *done;    /* finished, not taken */
  bool stop;
  bool pinging;   /* an idle ping is in a store call */
  bool abandoned; /* writer_destroy_within gave up waiting: the thread cleans up after itself */
};

static void writer_free(writer_t *w) {
  pthread_cond_destroy(&w->cond);
  pthread_mutex_destroy(&w->lock);
  free(w);
}

/* The end of a real wait on the condition variable, which runs on the
 * system's monotonic clock (pthread_condattr_setclock in writer_new): an
 * injected clock can decide when to act, but only the system's can wake a
 * sleeping thread. */
static struct timespec deadline_in(int64_t ms) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  ts.tv_sec += ms / 1000;
  ts.tv_nsec += (ms % 1000) * 1000000;
  if (ts.tv_nsec >= 1000000000) {
    ts.tv_sec++;
    ts.tv_nsec -= 1000000000;
  }
  return ts;
}

static void *writer_main(void *arg) {
  writer_t *w = arg;
  int64_t last_answer = clock_mono(w->clock);
  pthread_mutex_lock(&w->lock);
  for (;;) {
    if (w->todo) {
      writer_job_t *job = w->todo;
      w->todo = NULL;
      w->running = job;
      pthread_mutex_unlock(&w->lock);
      writer_execute(&w->sink, w->clock, job);
      last_answer = clock_mono(w->clock);
      pthread_mutex_lock(&w->lock);
      w->running = NULL;
      if (w->abandoned) { /* nobody will take it, join us, or free w */
        pthread_mutex_unlock(&w->lock);
        writer_job_destroy(job);
        writer_free(w);
        return NULL;
      }
      w->done = job;
      pthread_cond_broadcast(&w->cond);
      continue;
    }
    if (w->stop) break;
    if (w->idle_ping_ms > 0 && clock_mono(w->clock) - last_answer >= w->idle_ping_ms) {
      w->pinging = true;
      pthread_mutex_unlock(&w->lock);
      sink_error_t err;
      bool ok = w->sink.ping && w->sink.ping(w->sink.ctx, &err) == SINK_OK;
      last_answer = clock_mono(w->clock);
      pthread_mutex_lock(&w->lock);
      w->pinging = false;
      if (w->abandoned) {
        pthread_mutex_unlock(&w->lock);
        writer_free(w);
        return NULL;
      }
      if (ok)
        metrics_store_answered();
      else
        metrics_store_failed();
      pthread_cond_broadcast(&w->cond);
      continue;
    }
    if (w->idle_ping_ms > 0) {
      struct timespec ts = deadline_in(w->idle_ping_ms);
      pthread_cond_timedwait(&w->cond, &w->lock, &ts);
    } else {
      pthread_cond_wait(&w->cond, &w->lock);
    }
  }
  pthread_mutex_unlock(&w->lock);
  return NULL;
}

writer_t *writer_new(const sink_t *sink, int64_t idle_ping_ms, const clock_source_t *clock) {
  writer_t *w = oom_calloc(1, sizeof *w);
  w->sink = *sink;
  w->idle_ping_ms = idle_ping_ms;
  w->clock = clock;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  bool ok = pthread_mutex_init(&w->lock, NULL) == 0;
  if (ok && pthread_cond_init(&w->cond, &ca) != 0) {
    pthread_mutex_destroy(&w->lock);
    ok = false;
  }
  pthread_condattr_destroy(&ca);
  if (!ok) {
    free(w);
    return NULL;
  }
  if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    free(w);
    return NULL;
  }
  return w;
}

void writer_destroy(writer_t *w) { (void)writer_destroy_within(w, INT64_MAX / 4); }

bool writer_destroy_within(writer_t *w, int64_t wait_ms) {
  if (!w) return true;
  pthread_mutex_lock(&w->lock);
  w->stop = true;
  writer_job_destroy(w->todo); /* never started: nothing of it reached the store */
  w->todo = NULL;
  pthread_cond_broadcast(&w->cond);
  if (w->running || w->pinging) {
    struct timespec ts = deadline_in(wait_ms < 0 ? 0 : wait_ms);
    while (w->running || w->pinging)
      if (pthread_cond_timedwait(&w->cond, &w->lock, &ts) == ETIMEDOUT) break;
  }
  if (w->running || w->pinging) {
    w->abandoned = true;
    pthread_mutex_unlock(&w->lock);
    pthread_detach(w->thread);
    return false;
  }
  pthread_mutex_unlock(&w->lock);
  pthread_join(w->thread, NULL); /* idle or stopping: returns at once */
  writer_job_destroy(w->done);
  writer_free(w);
  return true;
}

bool writer_submit(writer_t *w, writer_job_t *job) {
  pthread_mutex_lock(&w->lock);
  bool ok = !w->todo && !w->running && !w->done && !w->stop;
  if (ok) {
    w->todo = job;
    pthread_cond_broadcast(&w->cond);
  }
  pthread_mutex_unlock(&w->lock);
  return ok;
}

writer_job_t *writer_take(writer_t *w, int64_t wait_ms) {
  pthread_mutex_lock(&w->lock);
  if (!w->done && wait_ms > 0 && (w->todo || w->running)) {
    struct timespec ts = deadline_in(wait_ms);
    while (!w->done && (w->todo || w->running))
      if (pthread_cond_timedwait(&w->cond, &w->lock, &ts) == ETIMEDOUT) break;
  }
  writer_job_t *job = w->done;
  w->done = NULL;
  pthread_mutex_unlock(&w->lock);
  return job;
}

bool writer_busy(writer_t *w) {
  pthread_mutex_lock(&w->lock);
  bool busy = w->todo || w->running || w->done;
  pthread_mutex_unlock(&w->lock);
  return busy;
}
