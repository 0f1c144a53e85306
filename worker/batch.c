#include "batch.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "clock.h"
#include "log.h"
#include "metrics.h"

/* Conflicts are retried within one flush this many times before the flush
 * gives up with BATCH_RETRY (and the caller backs off). Each round reloads
 * only the conflicting aggregates, so rounds shrink fast. */
#define CONFLICT_ROUNDS 8

#define KEY_MAX (2 * MODEL_ID_MAX + 2)

typedef struct entry {
  struct entry *hash_next;
  struct entry *prev, *next; /* in the dirty list or the clean LRU, or both NULL */
  model_aggregate_t *agg;
  int64_t rev;
  size_t mem; /* bytes counted in pending_bytes while dirty */
  uint32_t hash;
  bool loaded, dirty;
} entry_t;

/* Run-length record of when pending commands entered the system, so that the
 * command-to-durable latency is observed per command without keeping one
 * timestamp per command. */
typedef struct event_run {
  int64_t ms;
  uint32_t n;
} event_run_t;
#define EVENT_RUNS_MAX (1u << 20)

struct batch {
  batch_sink_t sink;
  batch_limits_t lim;
  entry_t **buckets;
  size_t nbuckets, count;
  entry_t dirty, lru; /* sentinels of circular lists; lru.next is the most recent */
  size_t ndirty, nclean, nunloaded;
  size_t pending_bytes;
  int64_t commands_since_flush;
  int64_t first_pending_ms;
  event_run_t *runs;
  size_t nruns, cap_runs;
  batch_stats_t stats;
};

static uint32_t hash_key(const char *k, size_t n) {
  uint32_t h = 2166136261u; /* FNV-1a: keys are short and this is not exposed to hash flooding
                               beyond a tenant's own ids, which are validated */
  for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)k[i]) * 16777619u;
  return h;
}

static void list_init(entry_t *s) { s->prev = s->next = s; }
static void list_unlink(entry_t *e) {
  if (!e->prev) return;
  e->prev->next = e->next;
  e->next->prev = e->prev;
  e->prev = e->next = NULL;
}
static void list_push_front(entry_t *s, entry_t *e) {
  e->next = s->next;
  e->prev = s;
  s->next->prev = e;
  s->next = e;
}

batch_t *batch_new(const batch_sink_t *sink, const batch_limits_t *limits) {
  batch_t *b = calloc(1, sizeof *b);
  if (!b) return NULL;
  b->sink = *sink;
  b->lim = *limits;
  b->nbuckets = 1024;
  b->buckets = calloc(b->nbuckets, sizeof *b->buckets);
  if (!b->buckets) {
    free(b);
    return NULL;
  }
  list_init(&b->dirty);
  list_init(&b->lru);
  b->first_pending_ms = INT64_MAX;
  return b;
}

void batch_destroy(batch_t *b) {
  if (!b) return;
  for (size_t i = 0; i < b->nbuckets; i++) {
    for (entry_t *e = b->buckets[i], *n; e; e = n) {
      n = e->hash_next;
      model_aggregate_destroy(e->agg);
      free(e);
    }
  }
  free(b->buckets);
  free(b->runs);
  free(b);
}

static store_status_t store_sink_load(void *ctx, const char *const *keys, size_t n, store_found_cb found,
                                      void *cb_ctx, store_error_t *err) {
  return store_load(ctx, keys, n, found, cb_ctx, err);
}

static store_status_t store_sink_write(void *ctx, store_write_item_t *items, size_t n, int64_t now,
                                       store_error_t *err) {
  return store_write(ctx, items, n, now, err);
}

batch_sink_t batch_store_sink(store_t *store) { return (batch_sink_t){store_sink_load, store_sink_write, store}; }

batch_limits_t batch_limits_from_config(const config_t *cfg) {
  return (batch_limits_t){cfg->batch_max_commands, cfg->batch_max_aggregates, cfg->batch_linger_ms,
                          cfg->batch_max_pending_bytes, cfg->cache_max_aggregates};
}

void batch_set_limits(batch_t *b, const batch_limits_t *limits) { b->lim = *limits; }

static entry_t *find(const batch_t *b, const char *key, size_t n, uint32_t h) {
  for (entry_t *e = b->buckets[h & (b->nbuckets - 1)]; e; e = e->hash_next) {
    if (e->hash != h) continue;
    size_t kl;
    const char *k = model_aggregate_key(e->agg, &kl);
    if (kl == n && !memcmp(k, key, n)) return e;
  }
  return NULL;
}

static void grow(batch_t *b) {
  size_t nb = b->nbuckets * 2;
  entry_t **nbk = calloc(nb, sizeof *nbk);
  if (!nbk) return; /* keep the longer chains; correctness does not depend on it */
  for (size_t i = 0; i < b->nbuckets; i++) {
    for (entry_t *e = b->buckets[i], *n; e; e = n) {
      n = e->hash_next;
      e->hash_next = nbk[e->hash & (nb - 1)];
      nbk[e->hash & (nb - 1)] = e;
    }
  }
  free(b->buckets);
  b->buckets = nbk;
  b->nbuckets = nb;
}

static void remove_entry(batch_t *b, entry_t *e) {
  entry_t **pp = &b->buckets[e->hash & (b->nbuckets - 1)];
  while (*pp != e) pp = &(*pp)->hash_next;
  *pp = e->hash_next;
  list_unlink(e);
  b->count--;
  model_aggregate_destroy(e->agg);
  free(e);
}

static void mark_dirty(batch_t *b, entry_t *e) {
  if (e->dirty) return;
  if (e->prev) {
    list_unlink(e);
    b->nclean--;
  }
  e->dirty = true;
  e->mem = 0;
  list_push_front(&b->dirty, e);
  b->ndirty++;
}

static void account(batch_t *b, entry_t *e) {
  size_t m = model_aggregate_memory(e->agg);
  b->pending_bytes = b->pending_bytes - e->mem + m;
  e->mem = m;
}

static void mark_clean(batch_t *b, entry_t *e) {
  if (e->dirty) {
    list_unlink(e);
    b->ndirty--;
    b->pending_bytes -= e->mem;
    e->mem = 0;
    e->dirty = false;
  }
  list_push_front(&b->lru, e);
  b->nclean++;
}

static void evict(batch_t *b) {
  while (b->nclean > (size_t)(b->lim.cache_max_aggregates > 0 ? b->lim.cache_max_aggregates : 0)) {
    entry_t *e = b->lru.prev;
    b->nclean--;
    remove_entry(b, e);
  }
}

static void record_event(batch_t *b, int64_t event_ms) {
  if (b->nruns && b->runs[b->nruns - 1].ms == event_ms && b->runs[b->nruns - 1].n < UINT32_MAX) {
    b->runs[b->nruns - 1].n++;
    return;
  }
  if (b->nruns == b->cap_runs) {
    if (b->cap_runs >= EVENT_RUNS_MAX) return; /* store down for long: stop sampling latency */
    size_t cap = b->cap_runs ? b->cap_runs * 2 : 256;
    event_run_t *r = realloc(b->runs, cap * sizeof *r);
    if (!r) return;
    b->runs = r;
    b->cap_runs = cap;
  }
  b->runs[b->nruns++] = (event_run_t){event_ms, 1};
}

model_apply_result_t batch_apply(batch_t *b, const model_command_t *cmd, int64_t event_ms, int64_t now_ms) {
  char key[KEY_MAX];
  size_t n = (size_t)cmd->tenant_len + 1 + cmd->assignment_len;
  memcpy(key, cmd->tenant, cmd->tenant_len);
  key[cmd->tenant_len] = '/';
  memcpy(key + cmd->tenant_len + 1, cmd->assignment, cmd->assignment_len);
  uint32_t h = hash_key(key, n);
  entry_t *e = find(b, key, n, h);
  if (!e) {
    e = calloc(1, sizeof *e);
    if (!e) abort();
    e->agg = model_aggregate_new(cmd->tenant, cmd->tenant_len, cmd->assignment, cmd->assignment_len);
    if (!e->agg) abort();
    e->hash = h;
    e->hash_next = b->buckets[h & (b->nbuckets - 1)];
    b->buckets[h & (b->nbuckets - 1)] = e;
    if (++b->count > b->nbuckets) grow(b);
    b->nunloaded++;
  }
  model_apply_result_t r = model_aggregate_apply(e->agg, cmd);
  if (r == MODEL_APPLY_APPLIED) {
    mark_dirty(b, e);
    account(b, e);
    b->stats.applied++;
  } else {
    b->stats.stale++;
    if (!e->dirty && e->prev) { /* touch in the LRU */
      list_unlink(e);
      list_push_front(&b->lru, e);
    }
  }
  b->commands_since_flush++;
  if (b->first_pending_ms == INT64_MAX) b->first_pending_ms = now_ms;
  record_event(b, event_ms);
  return r;
}

bool batch_flush_due(const batch_t *b, int64_t now_ms) {
  if (!b->commands_since_flush) return false;
  return b->commands_since_flush >= b->lim.max_commands || (int64_t)b->ndirty >= b->lim.max_aggregates ||
         now_ms - b->first_pending_ms >= b->lim.linger_ms;
}

int64_t batch_deadline(const batch_t *b) {
  return b->first_pending_ms == INT64_MAX ? INT64_MAX : b->first_pending_ms + b->lim.linger_ms;
}

bool batch_dirty(const batch_t *b) { return b->ndirty > 0; }

/* --- loading -------------------------------------------------------------- */

typedef struct load_ctx {
  batch_t *b;
} load_ctx_t;

/* A stored document arrived: it becomes the entry's base and what the entry
 * held (an overlay, or a copy that lost a race) is merged into it. */
static void on_found(void *ctx, model_aggregate_t *stored, int64_t rev) {
  batch_t *b = ((load_ctx_t *)ctx)->b;
  size_t n;
  const char *key = model_aggregate_key(stored, &n);
  entry_t *e = find(b, key, n, hash_key(key, n));
  if (!e || e->loaded) { /* not asked for, or duplicate: ignore */
    model_aggregate_destroy(stored);
    return;
  }
  bool changed = model_aggregate_merge(stored, e->agg);
  model_aggregate_destroy(e->agg);
  e->agg = stored;
  e->rev = rev;
  e->loaded = true;
  b->nunloaded--;
  if (changed) {
    mark_dirty(b, e);
    account(b, e);
  } else {
    mark_clean(b, e);
  }
}

/* Loads every dirty entry that is not loaded, in chunks of one $in each.
 * Entries the store does not have are loaded as new (rev 0). */
static store_status_t load_unloaded(batch_t *b, store_error_t *err) {
  size_t chunk = b->lim.max_aggregates > 0 ? (size_t)b->lim.max_aggregates : 1000;
  const char **keys = malloc(chunk * sizeof *keys);
  entry_t **ents = malloc(chunk * sizeof *ents);
  if (!keys || !ents) abort();
  load_ctx_t ctx = {b};
  store_status_t st = STORE_OK;
  while (b->nunloaded && st == STORE_OK) {
    size_t k = 0;
    for (entry_t *e = b->dirty.next; e != &b->dirty && k < chunk; e = e->next) {
      if (e->loaded) continue;
      ents[k] = e;
      keys[k++] = model_aggregate_key(e->agg, NULL);
    }
    if (!k) break;
    st = b->sink.load(b->sink.ctx, keys, k, on_found, &ctx, err);
    b->stats.loads++;
    if (st != STORE_OK) break;
    /* Entries not found are new. on_found may have moved found ones to the
     * LRU; ents[] still points at live entries (nothing is freed here). */
    for (size_t i = 0; i < k; i++) {
      if (!ents[i]->loaded) {
        ents[i]->loaded = true;
        ents[i]->rev = 0;
        b->nunloaded--;
      }
    }
  }
  free(keys);
  free(ents);
  return st;
}

/* --- writing -------------------------------------------------------------- */

static void observe_durable(batch_t *b, int64_t now_ms) {
  for (size_t i = 0; i < b->nruns; i++) {
    double s = (double)(now_ms - b->runs[i].ms) / 1000.0;
    if (s < 0) s = 0;
    for (uint32_t k = 0; k < b->runs[i].n; k++) metrics_latency(s);
  }
  b->nruns = 0;
  b->commands_since_flush = 0;
  b->first_pending_ms = INT64_MAX;
}

batch_status_t batch_flush(batch_t *b, int64_t now_ms, store_error_t *err) {
  store_error_t local;
  if (!err) err = &local;
  memset(err, 0, sizeof *err);
  double t0 = clock_mono_s();
  uint64_t written = 0;
  batch_status_t result = BATCH_DONE;
  size_t chunk = b->lim.max_aggregates > 0 ? (size_t)b->lim.max_aggregates : 1000;
  store_write_item_t *items = malloc(chunk * sizeof *items);
  entry_t **ents = malloc(chunk * sizeof *ents);
  if (!items || !ents) abort();

  for (int round = 0; b->ndirty; round++) {
    if (round == CONFLICT_ROUNDS) {
      snprintf(err->message, sizeof err->message, "conflicts persisted after %d rounds", CONFLICT_ROUNDS);
      result = BATCH_RETRY;
      break;
    }
    store_status_t st = load_unloaded(b, err);
    if (st != STORE_OK) {
      result = st == STORE_FATAL ? BATCH_FATAL : BATCH_RETRY;
      break;
    }
    /* Write every dirty entry once this round, chunk by chunk. Entries move
     * to the LRU as they succeed, so walk a snapshot of each chunk. */
    bool errors = false;
    size_t todo = b->ndirty;
    entry_t *cursor = b->dirty.prev; /* oldest first */
    while (todo && st == STORE_OK) {
      size_t k = 0;
      while (k < chunk && todo && cursor != &b->dirty) {
        ents[k] = cursor;
        items[k] = (store_write_item_t){.agg = cursor->agg, .rev = cursor->rev};
        cursor = cursor->prev;
        k++;
        todo--;
      }
      if (!k) break;
      st = b->sink.write(b->sink.ctx, items, k, now_ms, err);
      if (st != STORE_OK) break;
      uint64_t ok = 0, conflicts = 0, failed = 0;
      for (size_t i = 0; i < k; i++) {
        entry_t *e = ents[i];
        switch (items[i].result) {
        case STORE_ITEM_OK:
          e->rev++;
          mark_clean(b, e);
          ok++;
          break;
        case STORE_ITEM_CONFLICT:
          e->loaded = false; /* reload next round and merge what we hold into it */
          b->nunloaded++;
          conflicts++;
          break;
        default:
          failed++;
          errors = true;
          log_error("store rejected an aggregate", "id", LOG_STR, model_aggregate_key(e->agg, NULL), "code",
                    LOG_INT, (int64_t)items[i].error_code);
          break;
        }
      }
      written += ok;
      b->stats.writes_ok += ok;
      b->stats.conflicts += conflicts;
      b->stats.write_errors += failed;
      metrics_store_write(METRICS_WRITE_OK, ok);
      metrics_store_write(METRICS_WRITE_CONFLICT, conflicts);
      metrics_store_write(METRICS_WRITE_ERROR, failed);
    }
    if (st != STORE_OK) {
      result = st == STORE_FATAL ? BATCH_FATAL : BATCH_RETRY;
      break;
    }
    if (errors) {
      snprintf(err->message, sizeof err->message, "the store rejected %s; kept for retry",
               "one or more aggregates");
      result = BATCH_RETRY;
      break;
    }
  }
  free(items);
  free(ents);
  b->stats.flushes++;
  if (result == BATCH_DONE) {
    observe_durable(b, now_ms);
    evict(b);
  }
  metrics_flush(clock_mono_s() - t0, written);
  return result;
}

size_t batch_pending_bytes(const batch_t *b) { return b->pending_bytes; }
size_t batch_dirty_count(const batch_t *b) { return b->ndirty; }
size_t batch_cached_count(const batch_t *b) { return b->nclean; }
const batch_stats_t *batch_stats(const batch_t *b) { return &b->stats; }

void batch_foreach(const batch_t *b, void (*fn)(void *ctx, const model_aggregate_t *agg, int64_t rev), void *ctx) {
  for (size_t i = 0; i < b->nbuckets; i++)
    for (entry_t *e = b->buckets[i]; e; e = e->hash_next) fn(ctx, e->agg, e->rev);
}
