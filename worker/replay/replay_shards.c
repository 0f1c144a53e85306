/* Decode and merge on several threads: see replay_shards.h. */
#include "replay_shards.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "keys.h"
#include "oom.h"
#include "replay_chunk.h"

/* A slot of the ring: chunk k is in slot k % window. */
typedef struct slot {
  replay_chunk_t chunk;
  bool decoded;   /* its commands are routed: shards may merge it */
  size_t merged;  /* shards that merged it: at nthreads it can be retired */
} slot_t;

typedef struct worker {
  replay_shards_t *s;
  size_t shard;
  uint64_t next_merge; /* the chunk it merges next (guarded by the lock) */
  replay_merge_t merge; /* its shard's table: its own while it runs */
  replay_rebuilt_t sorted; /* at the end: the table's aggregates, sorted by key */
  replay_rebuilt_t range;  /* then: the aggregates of every shard in its key range, sorted */
} worker_t;

struct replay_shards {
  pthread_mutex_t lock;
  /* For every thread: a chunk published or decoded, the end, and for the
   * feeding thread the chunk it waits for merged (wake_at). */
  pthread_cond_t work;
  size_t nthreads, window, max_bytes;
  slot_t *ring;
  worker_t *workers; /* [nthreads]: the last is the feeding thread's own */
  pthread_t *tids;   /* [nthreads - 1] */
  size_t started;    /* threads running or to join */
  uint64_t published; /* chunks handed to the workers */
  uint64_t retired;   /* chunks whose rejects were emitted: their slots are free */
  uint64_t next_decode;
  uint64_t wake_at;   /* the feeding thread sleeps until the chunks before this are merged, or work comes */
  bool closed;        /* no chunk will be published any more */
  bool stopping;      /* drop the rest: the workers return at once */
  size_t sorted;      /* shards whose aggregates are sorted */
  bool join;          /* the pivots are set: every thread joins its key range */
  size_t joined;      /* workers whose range is joined */
  const char **pivot; /* [nthreads + 1]: range t is [pivot[t], pivot[t + 1]), NULL at both ends */
  /* The feeding thread's alone: */
  bool failed;          /* a reject callback returned false */
  replay_chunk_t *fill; /* the chunk being filled, NULL between chunks */
  uint64_t messages;    /* messages of the chunks retired */
  bool blocks;          /* the source gives blocks of lines (replay_shards_block) */
  replay_shards_reject_fn reject;
  void *ctx;
};

/* --- the workers (under the lock unless said) ---------------------------------------------- */

static slot_t *slot_of(replay_shards_t *s, uint64_t k) { return &s->ring[k % s->window]; }

/* Merges chunk k's commands of w's shard, outside the lock. */
static void merge_one(worker_t *w, uint64_t k) {
  replay_shards_t *s = w->s;
  slot_t *sl = slot_of(s, k);
  pthread_mutex_unlock(&s->lock);
  replay_chunk_merge(&sl->chunk, w->shard, &w->merge);
  pthread_mutex_lock(&s->lock);
  w->next_merge++;
  /* Shards merge in order: chunk k merged by every shard is the end of a
   * merged prefix, k + 1 chunks long. */
  if (++sl->merged == s->nthreads && k + 1 >= s->wake_at) pthread_cond_broadcast(&s->work);
}

/* Decodes chunk k, outside the lock. */
static void decode_one(worker_t *w, uint64_t k) {
  replay_shards_t *s = w->s;
  slot_t *sl = slot_of(s, k);
  pthread_mutex_unlock(&s->lock);
  replay_chunk_decode(&sl->chunk, s->max_bytes);
  pthread_mutex_lock(&s->lock);
  sl->decoded = true;
  pthread_cond_broadcast(&s->work);
}

/* One step of w's work: its shard's next chunk first (merging keeps the
 * window moving), else the next chunk to decode. False when there is none. */
static bool worker_step(worker_t *w) {
  replay_shards_t *s = w->s;
  if (w->next_merge < s->published && slot_of(s, w->next_merge)->decoded)
    merge_one(w, w->next_merge);
  else if (s->next_decode < s->published)
    decode_one(w, s->next_decode++);
  else
    return false;
  return true;
}

/* --- the end: sorted by key, side by side ---------------------------------------------- */

/* The first aggregate of p whose key is not below key (NULL: below none). */
static size_t lower_bound(const replay_rebuilt_t *p, const char *key) {
  return key ? model_keys_lower_bound(p->aggs, p->n, sizeof *p->aggs, model_keys_of_aggregate_ptr, NULL, key) : 0;
}

/* Range t of every shard's sorted aggregates, joined into w->range. The
 * sorted lists are only read here, by every thread at once; each range's
 * own copies go to replay_rebuilt_join. */
static void join_range(replay_shards_t *s, worker_t *w, size_t t) {
  replay_rebuilt_t *parts = oom_calloc(s->nthreads, sizeof *parts);
  for (size_t i = 0; i < s->nthreads; i++) {
    const replay_rebuilt_t *all = &s->workers[i].sorted;
    size_t from = lower_bound(all, s->pivot[t]), to = s->pivot[t + 1] ? lower_bound(all, s->pivot[t + 1]) : all->n;
    parts[i].n = to - from;
    parts[i].aggs = oom_malloc((parts[i].n + 1) * sizeof *parts[i].aggs);
    if (parts[i].n) memcpy(parts[i].aggs, all->aggs + from, parts[i].n * sizeof *parts[i].aggs);
  }
  replay_rebuilt_join(parts, s->nthreads, &w->range);
  free(parts);
}

/* Steps until every chunk is merged, waiting when there is nothing to do.
 * Then it sorts its shard's aggregates and joins its key range of every
 * shard's (replay_shards_finish), so that the sorts and the join too run
 * side by side. */
static void *worker_main(void *arg) {
  worker_t *w = arg;
  replay_shards_t *s = w->s;
  bool all_merged = false;
  pthread_mutex_lock(&s->lock);
  while (!s->stopping && !all_merged) {
    if (worker_step(w)) continue;
    all_merged = s->closed && w->next_merge == s->published;
    if (!all_merged) pthread_cond_wait(&s->work, &s->lock);
  }
  pthread_mutex_unlock(&s->lock);
  if (!all_merged) return NULL;
  replay_merge_sorted(&w->merge, &w->sorted);
  pthread_mutex_lock(&s->lock);
  if (++s->sorted == s->nthreads) pthread_cond_broadcast(&s->work);
  while (!s->stopping && !s->join) pthread_cond_wait(&s->work, &s->lock);
  bool join = !s->stopping;
  pthread_mutex_unlock(&s->lock);
  if (!join) return NULL;
  join_range(s, w, w->shard);
  pthread_mutex_lock(&s->lock);
  if (++s->joined == s->nthreads - 1) pthread_cond_broadcast(&s->work);
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

/* --- the feeding thread ---------------------------------------------------------------------- */

replay_shards_t *replay_shards_new(size_t nthreads, size_t max_bytes, replay_shards_reject_fn reject, void *ctx) {
  replay_shards_t *s = oom_calloc(1, sizeof *s);
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->work, NULL);
  s->nthreads = nthreads;
  s->window = REPLAY_SHARDS_WINDOW * nthreads;
  s->max_bytes = max_bytes;
  s->reject = reject;
  s->ctx = ctx;
  s->wake_at = UINT64_MAX;
  s->ring = oom_calloc(s->window, sizeof *s->ring);
  s->pivot = oom_calloc(nthreads + 1, sizeof *s->pivot);
  for (size_t i = 0; i < s->window; i++) replay_chunk_init(&s->ring[i].chunk, nthreads);
  s->workers = oom_calloc(nthreads, sizeof *s->workers);
  for (size_t i = 0; i < nthreads; i++)
    s->workers[i] = (worker_t){.s = s, .shard = i, .merge = REPLAY_MERGE_INIT};
  s->tids = oom_calloc(nthreads, sizeof *s->tids);
  for (; s->started < nthreads - 1; s->started++) {
    if (pthread_create(&s->tids[s->started], NULL, worker_main, &s->workers[s->started])) {
      log_error("replay: cannot start a thread", "threads", LOG_INT, (int64_t)nthreads);
      replay_shards_destroy(s);
      return NULL;
    }
  }
  return s;
}

/* Emits the rejects of the oldest chunk, which every shard has merged, and
 * frees its slot; called and returning with the lock held. */
static void retire_head(replay_shards_t *s) {
  replay_chunk_t *c = &slot_of(s, s->retired)->chunk;
  pthread_mutex_unlock(&s->lock);
  c->first = s->messages + 1;
  s->messages += c->n;
  if (!s->failed && !replay_chunk_rejects(c, s->reject, s->ctx)) s->failed = true; /* no reject after it */
  pthread_mutex_lock(&s->lock);
  s->retired++;
}

/* Retires the finished chunks at the head; with `room`, first waits until
 * a slot is free for the next chunk; with `all`, until every published
 * chunk is retired. While it waits, this thread works its own shard (and
 * decodes) like the workers; with nothing to do it sleeps until there is,
 * or until half of a full window is merged: one wake-up for several chunks.
 * Under the lock. */
static void retire(replay_shards_t *s, bool room, bool all) {
  worker_t *own = &s->workers[s->nthreads - 1];
  for (;;) {
    bool head_done = s->retired < s->published && slot_of(s, s->retired)->merged == s->nthreads;
    if (head_done) {
      retire_head(s);
      continue;
    }
    bool full = room && s->published - s->retired >= s->window;
    if (!full && !(all && s->retired < s->published)) return;
    if (worker_step(own)) continue;
    s->wake_at = full ? s->retired + (s->window + 1) / 2 : s->published;
    pthread_cond_wait(&s->work, &s->lock);
    s->wake_at = UINT64_MAX;
  }
}

/* Hands the chunk being filled to the workers. */
static void publish(replay_shards_t *s) {
  pthread_mutex_lock(&s->lock);
  s->published++;
  pthread_cond_broadcast(&s->work);
  retire(s, false, false);
  pthread_mutex_unlock(&s->lock);
  s->fill = NULL;
}

/* A free slot for the next chunk, once its predecessor there is retired. */
static replay_chunk_t *acquire(replay_shards_t *s, bool block) {
  pthread_mutex_lock(&s->lock);
  retire(s, true, false);
  slot_t *sl = slot_of(s, s->published);
  sl->decoded = false;
  sl->merged = 0;
  pthread_mutex_unlock(&s->lock);
  replay_chunk_reset(&sl->chunk, block);
  return &sl->chunk;
}

bool replay_shards_add(replay_shards_t *s, const char *data, size_t len) {
  if (s->failed) return false;
  if (!s->fill) s->fill = acquire(s, false);
  replay_chunk_add(s->fill, data, len, s->max_bytes);
  if (replay_chunk_full(s->fill)) publish(s);
  return !s->failed;
}

model_buf_t *replay_shards_block(replay_shards_t *s) {
  s->blocks = true;
  if (s->failed) return NULL;
  if (!s->fill) s->fill = acquire(s, true);
  return &s->fill->bytes;
}

bool replay_shards_block_done(replay_shards_t *s, size_t long_len, uint64_t *lines) {
  if (long_len) {
    replay_chunk_reset(s->fill, false);
    replay_chunk_add(s->fill, "", long_len, s->max_bytes);
  }
  publish(s);
  *lines = s->messages;
  return !s->failed;
}

uint64_t replay_shards_messages(const replay_shards_t *s) { return s->messages; }

bool replay_shards_drain(replay_shards_t *s) {
  if (s->fill && !replay_chunk_empty(s->fill)) publish(s);
  pthread_mutex_lock(&s->lock);
  retire(s, false, true);
  pthread_mutex_unlock(&s->lock);
  return !s->failed;
}

void replay_shards_stop(replay_shards_t *s) {
  if (!s) return;
  pthread_mutex_lock(&s->lock);
  s->closed = true;
  /* Drained or not, the workers return: every chunk retired is merged by
   * every shard, what is in flight is dropped, and no join comes. */
  s->stopping = true;
  pthread_cond_broadcast(&s->work);
  pthread_mutex_unlock(&s->lock);
  for (size_t i = 0; i < s->started; i++) pthread_join(s->tids[i], NULL);
  s->started = 0;
}

/* Sets the pivots that cut the key space into one range per thread: keys
 * of the largest shard at even steps (every shard is a sample of the keys
 * by their hash, so the ranges hold about as many aggregates each). Under
 * the lock, every shard sorted. */
static void set_pivots(replay_shards_t *s) {
  const replay_rebuilt_t *big = &s->workers[0].sorted;
  for (size_t i = 1; i < s->nthreads; i++)
    if (s->workers[i].sorted.n > big->n) big = &s->workers[i].sorted;
  s->pivot[0] = s->pivot[s->nthreads] = NULL;
  for (size_t t = 1; t < s->nthreads; t++)
    s->pivot[t] = big->n ? model_aggregate_key(big->aggs[t * big->n / s->nthreads], NULL) : "";
}

bool replay_shards_finish(replay_shards_t *s, replay_rebuilt_t *out) {
  if (s->fill && !replay_chunk_empty(s->fill)) publish(s);
  pthread_mutex_lock(&s->lock);
  s->closed = true;
  pthread_cond_broadcast(&s->work);
  retire(s, false, true);
  pthread_mutex_unlock(&s->lock);
  if (s->failed) {
    replay_shards_stop(s);
    return false;
  }
  worker_t *own = &s->workers[s->nthreads - 1];
  replay_merge_sorted(&own->merge, &own->sorted);
  pthread_mutex_lock(&s->lock);
  s->sorted++;
  while (s->sorted < s->nthreads) pthread_cond_wait(&s->work, &s->lock);
  set_pivots(s);
  s->join = true;
  pthread_cond_broadcast(&s->work);
  pthread_mutex_unlock(&s->lock);
  join_range(s, own, s->nthreads - 1);
  pthread_mutex_lock(&s->lock);
  while (s->joined < s->nthreads - 1) pthread_cond_wait(&s->work, &s->lock);
  pthread_mutex_unlock(&s->lock);
  replay_shards_stop(s);
  /* The ranges in key order: range t is worker t's. */
  size_t total = 0;
  for (size_t i = 0; i < s->nthreads; i++) total += s->workers[i].range.n;
  out->aggs = oom_malloc((total + 1) * sizeof *out->aggs);
  out->n = 0;
  for (size_t i = 0; i < s->nthreads; i++) {
    worker_t *w = &s->workers[i];
    if (w->range.n) memcpy(out->aggs + out->n, w->range.aggs, w->range.n * sizeof *out->aggs);
    out->n += w->range.n;
    free(w->range.aggs);
    w->range = (replay_rebuilt_t){0};
    free(w->sorted.aggs); /* its aggregates are out's now */
    w->sorted = (replay_rebuilt_t){0};
  }
  return true;
}

void replay_shards_counts(const replay_shards_t *s, uint64_t *applied, uint64_t *stale) {
  for (size_t i = 0; i < s->nthreads; i++) {
    *applied += s->workers[i].merge.applied;
    *stale += s->workers[i].merge.stale;
  }
}

void replay_shards_destroy(replay_shards_t *s) {
  if (!s) return;
  replay_shards_stop(s);
  for (size_t i = 0; i < s->nthreads; i++) {
    replay_merge_free(&s->workers[i].merge);
    replay_rebuilt_free(&s->workers[i].sorted);
    free(s->workers[i].range.aggs); /* its aggregates are also in sorted */
  }
  for (size_t i = 0; i < s->window; i++) replay_chunk_free(&s->ring[i].chunk);
  free(s->ring);
  free(s->pivot);
  free(s->workers);
  free(s->tids);
  pthread_cond_destroy(&s->work);
  pthread_mutex_destroy(&s->lock);
  free(s);
}

/* --- the shards as a merger (replay_merger.h) ------------------------------------------ */

static bool shards_apply(void *ctx, uint64_t line, const char *data, size_t len, int64_t event_ms) {
  (void)line; /* a chunk's messages get their positions when it is retired */
  (void)event_ms;
  return replay_shards_add(ctx, data ? data : "", len);
}

static model_buf_t *shards_block(void *ctx) { return replay_shards_block(ctx); }

static bool shards_block_done(void *ctx, size_t long_len, uint64_t *lines) {
  return replay_shards_block_done(ctx, long_len, lines);
}

static bool shards_finish(void *ctx, replay_rebuilt_t *out) { return replay_shards_finish(ctx, out); }

static void shards_drain(void *ctx) { replay_shards_drain(ctx); }

static void shards_counts(void *ctx, replay_counts_t *c) {
  replay_shards_t *s = ctx;
  replay_shards_stop(s);
  if (s->blocks) c->read = s->messages; /* the lines the workers cut */
  c->applied = c->stale = 0;
  replay_shards_counts(s, &c->applied, &c->stale);
}

static void shards_destroy(void *ctx) { replay_shards_destroy(ctx); }

static const replay_merger_ops_t shards_ops = {.apply = shards_apply, .block = shards_block,
                                               .block_done = shards_block_done, .finish = shards_finish,
                                               .drain = shards_drain, .counts = shards_counts,
                                               .destroy = shards_destroy};

bool replay_shards_merger(replay_merger_t *m, size_t nthreads, size_t max_bytes, replay_reject_fn reject, void *ctx) {
  replay_shards_t *s = replay_shards_new(nthreads, max_bytes, reject, ctx);
  *m = (replay_merger_t){s ? &shards_ops : NULL, s, true};
  return s != NULL;
}
