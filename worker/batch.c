#include "batch.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "config.h"
#include "hash.h"
#include "clock.h"
#include "log.h"
#include "metrics.h"
#include "oom.h"
#include "timestamp.h"

#define KEY_MAX (2 * MODEL_ID_MAX + 2)

/* When the commands an entry's changes carry entered the system, run-length
 * coded by Kafka timestamp, for the command-to-durable latency of each
 * command: observed when the write that carries it lands. At most
 * ARRIVALS_MAX runs: past that, neighbouring runs are merged two by two into
 * one at their weighted mean time, so a list costs at most 1 KiB and is
 * exact to within a sixty-fourth of the time it spans (a few milliseconds
 * over a pass of half a second). A clean entry holds none. */
typedef struct arrival {
  int64_t ms;
  uint64_t n;
} arrival_t;
typedef struct arrivals {
  arrival_t *v;
  uint32_t n, cap;
} arrivals_t;
#define ARRIVALS_MAX 64

typedef struct entry {
  struct entry *hash_next;
  struct entry *prev, *next; /* in the dirty list or the clean LRU, or both NULL */
  model_aggregate_t *agg;
  int64_t rev;
  size_t mem; /* bytes counted in pending_bytes while dirty or in flight */
  uint64_t pend_seq;   /* while dirty: seq of the oldest command not in the store nor in flight */
  uint64_t flight_seq; /* while in flight: pend_seq when the snapshot was taken */
  uint32_t hash;
  bool loaded;
  bool dirty;    /* changes not in any snapshot: in the dirty list */
  bool inflight; /* a snapshot of it is in the job in flight */
  /* What changed since the last snapshot, for partial writes (sink.h):
   * the ids of the students touched (NUL-terminated, back to back, a
   * student repeated only when other students came between), whether the
   * header was, or `whole` when that cannot be said cheaply (a new student:
   * for an overlay, one the stored document lacks, checked on adoption;
   * more than TOUCHED_MAX ids, a snapshot that did not land). Only a
   * student's id is kept, not a copy of the state last written: a dirty
   * entry costs at most TOUCHED_MAX ids more, a clean one nothing. */
  model_buf_t touched;
  uint32_t ntouched, touched_last; /* ids; offset of the last one */
  bool touched_header, touched_whole;
  /* The commands of the changes not in any snapshot, and of the snapshot in
   * flight (and those stale against it); both owned by the consumer thread. */
  arrivals_t arr_pend, arr_flight;
} entry_t;

/* Past this many ids since the last snapshot the entry is written whole:
 * bounds the memory per dirty entry (about 16 KiB) and the index lookups. */
#define TOUCHED_MAX 256

/* Run-length record of when pending commands entered the system, so that the
 * command-to-durable latency is observed per command without keeping one
 * timestamp per command. */
typedef struct event_run {
  int64_t ms;
  uint32_t n;
} event_run_t;
#define EVENT_RUNS_MAX (1u << 20)

struct batch {
  batch_limits_t lim;
  entry_t **buckets;
  size_t nbuckets, count;
  entry_t dirty, lru; /* sentinels of circular lists; lru.next is the most recent */
  size_t ndirty, nclean, nunloaded;
  size_t pending_bytes;  /* live aggregates of dirty or in-flight entries */
  size_t inflight_bytes; /* the snapshots in the job in flight */
  writer_job_t *job;     /* the job in flight (owned by whoever holds it; see writer.h), or NULL */
  bool owed;             /* the last flush left dirty entries behind: the next one is due at once */
  int64_t commands_since_flush; /* commands since the last snapshot */
  int64_t first_pending_ms;     /* monotonic: when the first command since the last snapshot came */
  event_run_t *runs;
  size_t nruns, cap_runs;
  uint64_t runs_seq;    /* seq of the first command of runs[0] */
  uint64_t seq;         /* the seq of the next command */
  uint64_t flight_seq;  /* the least flight_seq of the job in flight */
  double sec_per_agg;   /* smoothed writer seconds per aggregate of the flushes that landed; 0 = none yet */
  char **too_large_ids; /* aggregates set aside as too large and logged (set_aside), at most TOO_LARGE_IDS_MAX */
  size_t ntoo_large;
  batch_stats_t stats;
};
/* Remembered so that each is logged once; past this many (each is a 16 MiB
 * document: never expected) every refusal is logged. */
#define TOO_LARGE_IDS_MAX 1024

/* FNV-1a: keys are short and this is not exposed to hash flooding beyond
 * a tenant's own ids, which are validated. */
static uint32_t hash_key(const char *k, size_t n) { return hash_fnv1a32(HASH_FNV1A32_INIT, k, n); }

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
static void list_push_back(entry_t *s, entry_t *e) {
  e->prev = s->prev;
  e->next = s;
  s->prev->next = e;
  s->prev = e;
}

/* Halves a full list: neighbours merged into one run at their weighted mean. */
static void arrivals_coarsen(arrivals_t *a) {
  uint32_t m = 0;
  for (uint32_t i = 0; i < a->n; i += 2) {
    arrival_t r = a->v[i];
    if (i + 1 < a->n) {
      const arrival_t *q = &a->v[i + 1];
      r.ms += (int64_t)((double)(q->ms - r.ms) * (double)q->n / (double)(r.n + q->n));
      r.n += q->n;
    }
    a->v[m++] = r;
  }
  a->n = m;
}

static void arrivals_add(arrivals_t *a, int64_t ms, uint64_t n) {
  if (a->n && a->v[a->n - 1].ms == ms) {
    a->v[a->n - 1].n += n;
    return;
  }
  if (a->n == ARRIVALS_MAX) arrivals_coarsen(a);
  if (a->n == a->cap) { /* 1, 2, 4, ... 64: most entries of a wide load carry a command or two */
    a->cap = a->cap ? a->cap * 2 : 1;
    a->v = oom_realloc(a->v, a->cap * sizeof *a->v);
  }
  a->v[a->n++] = (arrival_t){ms, n};
}

/* Seconds from a command's Kafka timestamp to now, for the latency
 * histograms; a timestamp ahead of this clock (producer skew) counts as 0. */
static double waited_s(int64_t since_ms, int64_t now_ms) {
  return now_ms > since_ms ? (double)(now_ms - since_ms) / 1000.0 : 0.0;
}

static void arrivals_free(arrivals_t *a) {
  free(a->v);
  *a = (arrivals_t){0};
}

/* The commands of a became durable at now_ms. */
static void arrivals_observe(arrivals_t *a, int64_t now_ms) {
  for (uint32_t i = 0; i < a->n; i++)
    metrics_latency(waited_s(a->v[i].ms, now_ms), a->v[i].n);
  arrivals_free(a);
}

/* A snapshot did not land: its commands (older) go back in front of those
 * that arrived since. */
static void arrivals_return(arrivals_t *pend, arrivals_t *flight) {
  if (!pend->n) {
    arrivals_free(pend);
    *pend = *flight;
    *flight = (arrivals_t){0};
    return;
  }
  arrivals_t a = *flight;
  *flight = (arrivals_t){0};
  for (uint32_t i = 0; i < pend->n; i++) arrivals_add(&a, pend->v[i].ms, pend->v[i].n);
  arrivals_free(pend);
  *pend = a;
}

static void entry_free(entry_t *e) {
  model_aggregate_destroy(e->agg);
  model_buf_destroy(&e->touched);
  arrivals_free(&e->arr_pend);
  arrivals_free(&e->arr_flight);
  free(e);
}

batch_t *batch_new(const batch_limits_t *limits) {
  batch_t *b = oom_calloc(1, sizeof *b);
  b->lim = *limits;
  b->nbuckets = 1024;
  b->buckets = oom_calloc(b->nbuckets, sizeof *b->buckets);
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
      entry_free(e);
    }
  }
  free(b->buckets);
  free(b->runs);
  for (size_t i = 0; i < b->ntoo_large; i++) free(b->too_large_ids[i]);
  free(b->too_large_ids);
  free(b);
}

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
  entry_t **nbk = oom_calloc(nb, sizeof *nbk);
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
  entry_free(e);
}

/* The next snapshot of e cannot be a partial write. */
static void touched_whole(entry_t *e) {
  model_buf_destroy(&e->touched);
  e->touched = (model_buf_t)MODEL_BUF_INIT;
  e->ntouched = e->touched_last = 0;
  e->touched_header = false;
  e->touched_whole = true;
}

/* Records what an applied command changed; `before` is the student count
 * before it was applied (more after: a new student, which a $set would put
 * out of id order, so the whole document goes). */
static void note_touched(entry_t *e, const model_command_t *cmd, size_t before) {
  if (e->touched_whole) return;
  if (e->loaded && model_aggregate_student_count(e->agg) != before) {
    touched_whole(e);
    return;
  }
  /* Unloaded (an overlay): a student new to the overlay may well be in the
   * stored document; adopt_base checks the ids against it when it arrives. */
  if (!model_cmd_type_has_student(cmd->type)) {
    e->touched_header = true;
    return;
  }
  if (e->ntouched && !strcmp(e->touched.data + e->touched_last, cmd->student)) return; /* a burst on one student */
  if (e->ntouched == TOUCHED_MAX) {
    touched_whole(e);
    return;
  }
  /* Most entries get a student or two between snapshots: room for one id
   * (at least 24 bytes, what glibc's smallest chunk holds), not 256. */
  size_t first = (size_t)cmd->student_len + 2;
  model_buf_first_cap(&e->touched, first < 24 ? 24 : first);
  e->touched_last = (uint32_t)e->touched.len;
  model_buf_append(&e->touched, cmd->student, (size_t)cmd->student_len + 1);
  e->ntouched++;
}

/* Changes not in any snapshot, the oldest by command seq: into the dirty
 * list (out of the LRU), whose front is the newest. The list stays sorted by
 * pend_seq: a new change has the greatest seq so far. */
static void mark_dirty(batch_t *b, entry_t *e, uint64_t seq) {
  if (e->dirty) return;
  if (e->prev) { /* in the LRU */
    list_unlink(e);
    b->nclean--;
  }
  e->dirty = true;
  e->pend_seq = seq;
  list_push_front(&b->dirty, e);
  b->ndirty++;
}

/* A snapshot in flight did not land (conflict, rejection, store failure):
 * what it carried is owed again, from its flight_seq on, which is older than
 * every entry that is dirty now (flushes take the oldest first), so the entry
 * goes to the back of the list. Called newest first over a job's items, so
 * that they keep their order. */
static void redirty_old(batch_t *b, entry_t *e) {
  if (e->dirty)
    list_unlink(e);
  else
    b->ndirty++;
  e->dirty = true;
  e->pend_seq = e->flight_seq;
  list_push_back(&b->dirty, e);
}

/* Out of the dirty list (the entry is in a snapshot, or its changes turned
 * out to be in the store already). */
static void unmark_dirty(batch_t *b, entry_t *e) {
  if (!e->dirty) return;
  list_unlink(e);
  b->ndirty--;
  e->dirty = false;
}

/* Keeps pending_bytes equal to the memory of every dirty or in-flight entry:
 * its aggregate, the entry itself, its touched list and its arrivals. Counting the
 * aggregate alone let the bound hold 2.4 bytes of heap per byte counted with
 * a million small aggregates (two students: ~280 bytes of aggregate, 112 of
 * entry, 256 of touched list as model_buf first allocated it), and a
 * worker with the 64 MiB default reached 242 MiB of RSS with no cache
 * (scripts/bench-distinct, docs/BENCHMARKS.md). */
static void account(batch_t *b, entry_t *e) {
  size_t m = e->dirty || e->inflight ? model_aggregate_memory(e->agg) + sizeof *e + e->touched.cap +
                                           (e->arr_pend.cap + e->arr_flight.cap) * sizeof(arrival_t)
                                     : 0;
  b->pending_bytes = b->pending_bytes - e->mem + m;
  e->mem = m;
}

/* Nothing unwritten any more: into the LRU. */
static void mark_clean(batch_t *b, entry_t *e) {
  unmark_dirty(b, e);
  account(b, e);
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

/* Every command gets a run (runs follow command seqs without a gap, from
 * runs_seq): past EVENT_RUNS_MAX runs (store down for long) a command joins
 * the last run, so its latency is observed from an earlier time. */
static void record_event(batch_t *b, int64_t event_ms) {
  if (!b->nruns) b->runs_seq = b->seq;
  event_run_t *last = b->nruns ? &b->runs[b->nruns - 1] : NULL;
  if (last && last->ms == event_ms && last->n < UINT32_MAX) {
    last->n++;
    return;
  }
  if (b->nruns == b->cap_runs) {
    size_t cap = b->cap_runs ? b->cap_runs * 2 : 256;
    if (b->cap_runs >= EVENT_RUNS_MAX) { /* at the cap: the newest run absorbs the command */
      if (last && last->n < UINT32_MAX) last->n++;
      else abort(); /* 2^20 runs of 2^32 commands: not reachable within max_pending_bytes */
      return;
    }
    b->runs = oom_realloc(b->runs, cap * sizeof *b->runs);
    b->cap_runs = cap;
  }
  b->runs[b->nruns++] = (event_run_t){event_ms, 1};
}

model_apply_result_t batch_apply(batch_t *b, const model_command_t *cmd, int64_t event_ms, batch_now_t now) {
  char key[KEY_MAX];
  size_t n = (size_t)cmd->tenant_len + 1 + cmd->assignment_len;
  memcpy(key, cmd->tenant, cmd->tenant_len);
  key[cmd->tenant_len] = '/';
  memcpy(key + cmd->tenant_len + 1, cmd->assignment, cmd->assignment_len);
  uint32_t h = hash_key(key, n);
  entry_t *e = find(b, key, n, h);
  if (!e) {
    e = oom_calloc(1, sizeof *e);
    e->agg = model_aggregate_new(cmd->tenant, cmd->tenant_len, cmd->assignment, cmd->assignment_len);
    e->hash = h;
    e->hash_next = b->buckets[h & (b->nbuckets - 1)];
    b->buckets[h & (b->nbuckets - 1)] = e;
    if (++b->count > b->nbuckets) grow(b);
    b->nunloaded++;
  }
  size_t before = model_aggregate_student_count(e->agg);
  model_apply_result_t r = model_aggregate_apply(e->agg, cmd);
  record_event(b, event_ms);
  uint64_t seq = b->seq++;
  if (r == MODEL_APPLY_APPLIED) {
    note_touched(e, cmd, before);
    mark_dirty(b, e, seq);
    arrivals_add(&e->arr_pend, event_ms, 1);
    account(b, e);
    b->stats.applied++;
  } else {
    /* Stale: it changes nothing, so it is durable with the newer state that
     * made it stale: the pending changes, else the snapshot in flight, else
     * the store's (now). */
    b->stats.stale++;
    if (e->dirty || e->inflight) {
      arrivals_add(e->dirty ? &e->arr_pend : &e->arr_flight, event_ms, 1);
      account(b, e);
    } else {
      metrics_latency(waited_s(event_ms, now.wall_ms), 1);
    }
    if (!e->dirty && !e->inflight && e->prev) { /* touch in the LRU */
      list_unlink(e);
      list_push_front(&b->lru, e);
    }
  }
  b->commands_since_flush++;
  if (b->first_pending_ms == INT64_MAX) b->first_pending_ms = now.mono_ms;
  return r;
}

bool batch_flush_due(const batch_t *b, int64_t mono_ms) {
  if (b->owed && b->ndirty) return true;
  if (!b->commands_since_flush) return false;
  return b->commands_since_flush >= b->lim.max_commands || (int64_t)b->ndirty >= b->lim.max_aggregates ||
         mono_ms - b->first_pending_ms >= b->lim.linger_ms;
}

int64_t batch_deadline(const batch_t *b) {
  if (b->owed && b->ndirty) return 0;
  return b->first_pending_ms == INT64_MAX ? INT64_MAX : b->first_pending_ms + b->lim.linger_ms;
}

bool batch_dirty(const batch_t *b) { return b->ndirty > 0 || b->job; }

uint64_t batch_seq(const batch_t *b) { return b->seq; }

uint64_t batch_durable_seq(const batch_t *b) {
  uint64_t s = b->seq;
  if (b->ndirty && b->dirty.prev->pend_seq < s) s = b->dirty.prev->pend_seq; /* the back is the oldest */
  if (b->job && b->flight_seq < s) s = b->flight_seq;
  return s;
}

size_t batch_flush_cap(const batch_t *b) {
  if (b->sec_per_agg <= 0 || b->lim.linger_ms <= 0) return BATCH_FLUSH_FLOOR;
  double n = (double)b->lim.linger_ms / 1000.0 / b->sec_per_agg;
  if (n < BATCH_FLUSH_FLOOR) return BATCH_FLUSH_FLOOR;
  return n > (double)SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)n;
}
bool batch_in_flight(const batch_t *b) { return b->job != NULL; }

/* --- flushing ------------------------------------------------------------------ */

/* The commands below seq `upto` are durable, and so committable: observe
 * that latency and drop their runs (a run cut by upto keeps its later
 * commands). */
static void observe_committable(batch_t *b, uint64_t upto, int64_t now_ms) {
  size_t n = 0;
  while (n < b->nruns && b->runs_seq < upto) {
    event_run_t *r = &b->runs[n];
    uint64_t k = upto - b->runs_seq < r->n ? upto - b->runs_seq : r->n;
    metrics_committable_latency(waited_s(r->ms, now_ms), k);
    b->runs_seq += k;
    r->n -= (uint32_t)k;
    if (r->n) break;
    n++;
  }
  memmove(b->runs, b->runs + n, (b->nruns - n) * sizeof *b->runs);
  b->nruns -= n;
}

writer_job_t *batch_flush_begin(batch_t *b, batch_now_t now) {
  assert(!b->job);
  if (!b->ndirty) {
    /* Nothing unwritten (every command since the last flush was stale, or
     * the flush that carried them landed): all of it is durable. */
    observe_committable(b, b->seq, now.wall_ms);
    b->commands_since_flush = 0;
    b->first_pending_ms = INT64_MAX;
    b->owed = false;
    evict(b);
    return NULL;
  }
  size_t cap = batch_flush_cap(b), n = b->ndirty < cap ? b->ndirty : cap;
  /* With "flush finished", what scripts/bench measures a pass over the dirty list with. */
  log_debug("flush begins", "aggregates", LOG_INT, (int64_t)n, "dirty", LOG_INT, (int64_t)b->ndirty);
  writer_job_t *job = writer_job_new(n);
  job->chunk = b->lim.max_aggregates > 0 ? (size_t)b->lim.max_aggregates : 1000;
  job->now_ms = now.wall_ms;
  b->flight_seq = b->dirty.prev->pend_seq;
  for (entry_t *e = b->dirty.prev, *prev; e != &b->dirty && job->nitems < n; e = prev) { /* oldest first */
    prev = e->prev;
    model_aggregate_t *snap = model_aggregate_clone(e->agg);
    writer_job_add(job, snap, e->rev, !e->loaded, e);
    writer_item_t *it = &job->items[job->nitems - 1];
    if (e->loaded && e->rev > 0 && !e->touched_whole) { /* the snapshot is the stored state plus what is touched */
      it->whole = false;
      it->header_touched = e->touched_header;
      it->touched = e->touched.data;
      it->touched_len = e->touched.len;
      it->ntouched = e->ntouched;
    } else {
      model_buf_destroy(&e->touched);
    }
    job->bytes += sizeof *it + e->touched.cap; /* the item, and the touched list it took over (or none) */
    e->touched = (model_buf_t)MODEL_BUF_INIT; /* from now on: what changes after this snapshot */
    e->ntouched = e->touched_last = 0;
    e->touched_header = e->touched_whole = false;
    job->bytes += model_aggregate_memory(snap);
    e->inflight = true;
    e->flight_seq = e->pend_seq;
    assert(!e->arr_flight.n); /* one job at a time, and the last one's were settled */
    arrivals_free(&e->arr_flight);
    e->arr_flight = e->arr_pend; /* its commands ride on the snapshot */
    e->arr_pend = (arrivals_t){0};
    unmark_dirty(b, e);
    account(b, e); /* its touched list went to the job */
  }
  job->commands = b->commands_since_flush;
  job->first_pending_ms = b->first_pending_ms;
  b->commands_since_flush = 0;
  b->first_pending_ms = INT64_MAX;
  b->owed = b->ndirty > 0; /* left behind by the cap: the next flush is due as soon as this one lands */
  b->inflight_bytes = job->bytes;
  b->job = job;
  b->stats.flushes++;
  return job;
}

/* The job loaded the stored document of e: it becomes e's base, and what e
 * received since the snapshot is merged into it. */
static void adopt_base(batch_t *b, entry_t *e, writer_item_t *it, int64_t now_ms) {
  /* What the overlay recorded since the snapshot can be a partial write
   * only if the stored document has every one of its students. */
  if (!e->loaded && !e->touched_whole) {
    for (const char *p = e->touched.data, *end = p + e->touched.len; p && p < end; p += strlen(p) + 1) {
      size_t at;
      if (!model_aggregate_find_student(it->agg, p, strlen(p), &at)) {
        touched_whole(e);
        break;
      }
    }
  }
  bool changed = model_aggregate_merge(it->agg, e->agg);
  model_aggregate_destroy(e->agg);
  e->agg = it->agg;
  it->agg = NULL;
  if (!e->loaded) {
    e->loaded = true;
    b->nunloaded--;
  }
  e->rev = it->rev;
  if (!changed) { /* whatever arrived since is in the store already */
    unmark_dirty(b, e);
    arrivals_observe(&e->arr_pend, now_ms);
  }
  /* changed: it holds commands applied after the snapshot, so it is dirty
   * already (and the caller re-dirties it from flight_seq if the write failed). */
}

/* When the command with this seq entered the system (its run's event time),
 * or 0 if its run is gone. */
static int64_t event_ms_at(const batch_t *b, uint64_t seq) {
  uint64_t s = b->runs_seq;
  for (size_t i = 0; i < b->nruns; i++) {
    if (seq < s + b->runs[i].n) return seq >= s ? b->runs[i].ms : 0;
    s += b->runs[i].n;
  }
  return 0;
}

/* True the first time an aggregate is set aside (see set_aside). */
static bool first_too_large(batch_t *b, const char *id) {
  for (size_t i = 0; i < b->ntoo_large; i++)
    if (!strcmp(b->too_large_ids[i], id)) return false;
  if (b->ntoo_large == TOO_LARGE_IDS_MAX) return true;
  b->too_large_ids = oom_realloc(b->too_large_ids, (b->ntoo_large + 1) * sizeof *b->too_large_ids);
  b->too_large_ids[b->ntoo_large++] = oom_strdup(id);
  return true;
}

/* The store refused e's document: it would pass the 16 MiB limit (sink.h).
 *
 * Why the changes are set aside rather than kept for retry: a retry cannot
 * succeed (the document only grows), so holding the entry would refuse it on
 * every flush forever, and its pend_seq would keep every later offset of its
 * partitions uncommitted: the partition wedges, lag grows without bound, and
 * a restart replays into the same wall. Why not dead-letter the commands
 * instead: the batch holds their merged result, not the commands, and which
 * of them "pushed it over" is not defined (the merge is order-free). So the
 * entry leaves memory with its unwritten changes (the store keeps its last
 * document, which is under the limit; later commands for the aggregate are
 * merged into that and written if the result fits), its offsets move on,
 * and nothing is silent: aggregator_store_too_large_total and write errors
 * count every refusal, and the first one per aggregate is logged at error
 * with its _id, the document's size and the time of its oldest change not in
 * the store. The commands themselves stay in the source topic: `aggregator
 * replay` from that time (its merge is idempotent) restores them once the
 * document fits (docs/OPERATIONS.md, "Documents past the store's limit"). */
static void set_aside(batch_t *b, entry_t *e, const writer_item_t *it) {
  const char *id = model_aggregate_key(e->agg, NULL);
  metrics_store_too_large(1);
  b->stats.too_large++;
  if (first_too_large(b, id)) {
    /* flight_seq is the entry's oldest change not in the store; one that
     * arrived later is newer, so its time is a safe start for a replay. */
    char since[MODEL_TIMESTAMP_LEN + 1] = "unknown";
    int64_t ms = event_ms_at(b, e->flight_seq);
    if (ms > 0) model_timestamp_format(ms, since);
    log_error("aggregate document past the store's size limit: its unwritten changes are set aside", "id",
              LOG_STR, id, "bytes", LOG_INT, (int64_t)it->bytes, "limit", LOG_INT,
              (int64_t)SINK_MAX_DOCUMENT_BYTES, "oldest_change", LOG_STR, since, NULL);
  }
  unmark_dirty(b, e);
  e->inflight = false;
  account(b, e); /* neither dirty nor in flight: out of pending_bytes */
  if (!e->loaded) b->nunloaded--;
  remove_entry(b, e);
}

batch_status_t batch_flush_end(batch_t *b, writer_job_t *job, batch_now_t now, sink_error_t *err) {
  uint64_t set_aside_n = 0;
  int64_t now_ms = now.wall_ms;
  assert(job == b->job);
  for (size_t i = job->nitems; i-- > 0;) { /* newest first: see redirty_old */
    writer_item_t *it = &job->items[i];
    entry_t *e = it->tag;
    e->inflight = false;
    switch (it->result) {
    case WRITER_ITEM_WRITTEN:
    case WRITER_ITEM_UNCHANGED:
      if (it->loaded)
        adopt_base(b, e, it, now_ms);
      else
        e->rev = it->rev;
      arrivals_observe(&e->arr_flight, now_ms);
      if (e->dirty)
        account(b, e);
      else
        mark_clean(b, e);
      break;
    case WRITER_ITEM_CONFLICT:
      /* Another writer got there first: reload with the next flush and merge
       * what we hold (a superset of the snapshot) into it. The store's state
       * is unknown: the next write is whole. */
      touched_whole(e);
      if (e->loaded) {
        e->loaded = false;
        b->nunloaded++;
      }
      arrivals_return(&e->arr_pend, &e->arr_flight);
      redirty_old(b, e);
      account(b, e);
      break;
    default: /* too large (set aside), rejected (kept for retry), or no result: the store failed */
      if (it->result == WRITER_ITEM_ERROR && it->error_code == SINK_CODE_TOO_LARGE) {
        set_aside(b, e, it);
        set_aside_n++;
        break;
      }
      if (it->result == WRITER_ITEM_ERROR)
        log_error("store rejected an aggregate", "id", LOG_STR, model_aggregate_key(e->agg, NULL), "code", LOG_INT,
                  (int64_t)it->error_code);
      if (it->loaded) adopt_base(b, e, it, now_ms); /* the load landed: keep what it taught us */
      touched_whole(e); /* what the snapshot carried is not in the store: write it all */
      arrivals_return(&e->arr_pend, &e->arr_flight);
      redirty_old(b, e);
      account(b, e);
      break;
    }
  }
  b->stats.writes_ok += job->written;
  b->stats.conflicts += job->conflicts;
  b->stats.write_errors += job->errors;
  b->stats.bytes_written += job->bytes_written;
  b->stats.loads += job->loads;
  metrics_store_write(METRICS_WRITE_OK, job->written);
  metrics_store_write(METRICS_WRITE_CONFLICT, job->conflicts);
  metrics_store_write(METRICS_WRITE_ERROR, job->errors);
  metrics_store_write_bytes(job->bytes_written);
  metrics_flush(job->seconds, job->written);

  batch_status_t result = BATCH_DONE;
  uint64_t kept = job->errors - set_aside_n; /* item errors kept for retry */
  if (job->status == SINK_FATAL)
    result = BATCH_FATAL;
  else if (job->status != SINK_OK || kept)
    result = BATCH_RETRY;
  else if (job->conflicts)
    result = BATCH_PARTIAL;
  if (err) {
    *err = job->err;
    if (result == BATCH_RETRY && job->status == SINK_OK)
      snprintf(err->message, sizeof err->message, "the store rejected %llu aggregates; kept for retry",
               (unsigned long long)kept);
    else if (result == BATCH_PARTIAL)
      snprintf(err->message, sizeof err->message, "%llu conflicts; reloading", (unsigned long long)job->conflicts);
  }
  if (job->status == SINK_OK && job->nitems) {
    /* The cap's estimate (batch.h): writer seconds per aggregate, smoothed
     * over the last few flushes (half weight to the newest). */
    double sample = job->seconds / (double)job->nitems;
    b->sec_per_agg = b->sec_per_agg > 0 ? 0.5 * b->sec_per_agg + 0.5 * sample : sample;
  }
  if (result != BATCH_DONE) {
    /* What the job covered is still owed; its runs stay until a flush lands them. */
    b->owed = true;
    b->commands_since_flush += job->commands;
    if (job->first_pending_ms < b->first_pending_ms) b->first_pending_ms = job->first_pending_ms;
  }
  b->inflight_bytes = 0;
  b->job = NULL;
  observe_committable(b, batch_durable_seq(b), now_ms);
  writer_job_destroy(job);
  evict(b);
  return result;
}

size_t batch_pending_bytes(const batch_t *b) { return b->pending_bytes + b->inflight_bytes; }
size_t batch_dirty_count(const batch_t *b) { return b->ndirty; }
size_t batch_cached_count(const batch_t *b) { return b->nclean; }
const batch_stats_t *batch_stats(const batch_t *b) { return &b->stats; }

void batch_foreach(const batch_t *b, void (*fn)(void *ctx, const model_aggregate_t *agg, int64_t rev), void *ctx) {
  for (size_t i = 0; i < b->nbuckets; i++)
    for (entry_t *e = b->buckets[i]; e; e = e->hash_next) fn(ctx, e->agg, e->rev);
}
