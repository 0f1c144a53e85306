#include "batch_entries.h"

#include <assert.h>
#include <stdio.h>

#include "metrics/metrics.h"

void batch_entries_init(batch_entries_t *s) {
  batch_cache_init(&s->cache);
  batch_writeset_init(&s->ws);
  s->pending_bytes = 0;
}

void batch_entries_free(batch_entries_t *s) { batch_cache_free(&s->cache); }

/* Keeps pending_bytes the memory of every dirty or in-flight entry (I3);
 * an entry that is neither leaves it. */
static void account(batch_entries_t *s, batch_entry_t *e) {
  size_t m = e->dirty || e->inflight ? batch_entry_memory(e) : 0;
  s->pending_bytes = s->pending_bytes - e->mem + m;
  e->mem = m;
}

void batch_entries_recount(batch_entries_t *s, batch_entry_t *e) {
  if (e->dirty || e->inflight) account(s, e);
}

/* Nothing unwritten any more: into the LRU (I2). */
static void clean(batch_entries_t *s, batch_entry_t *e) {
  batch_writeset_unmark(&s->ws, e);
  account(s, e);
  batch_cache_keep(&s->cache, e);
}

void batch_entries_change(batch_entries_t *s, batch_entry_t *e, uint64_t seq, int64_t event_ms, int64_t mono_ms) {
  if (!e->dirty) {
    batch_cache_leave_lru(&s->cache, e);
    batch_writeset_mark(&s->ws, e, seq, mono_ms);
  }
  batch_latency_add(&e->arr_pend, event_ms, 1, &BATCH_LATENCY_PER_AGGREGATE);
  account(s, e);
}

void batch_entries_take_off(batch_entries_t *s, batch_entry_t *e) {
  e->inflight = true;
  e->flight_seq = e->pend_seq;
  e->flight_ms = e->pend_ms;
  assert(!e->arr_flight.n); /* one job at a time, and the last one's were settled */
  batch_latency_free(&e->arr_flight);
  e->arr_flight = e->arr_pend; /* its commands ride on the snapshot */
  e->arr_pend = (batch_latency_t){0};
  batch_writeset_unmark(&s->ws, e);
  account(s, e); /* its changes went to the job */
}

void batch_entries_landed(batch_entries_t *s, batch_entry_t *e, int64_t rev, int64_t wall_ms) {
  e->inflight = false;
  e->rev = rev;
  batch_latency_observe(&e->arr_flight, wall_ms, metrics_latency);
  if (e->dirty)
    account(s, e);
  else
    clean(s, e);
}

void batch_entries_owe_again(batch_entries_t *s, batch_entry_t *e, writer_item_t *it) {
  e->inflight = false;
  if (it)
    batch_writeset_give_back(e, it);
  else
    batch_writeset_whole(e);
  batch_latency_prepend(&e->arr_pend, &e->arr_flight, &BATCH_LATENCY_PER_AGGREGATE);
  batch_writeset_redirty_old(&s->ws, e);
  account(s, e);
}

void batch_entries_in_store(batch_entries_t *s, batch_entry_t *e, int64_t wall_ms) {
  batch_writeset_unmark(&s->ws, e);
  batch_latency_observe(&e->arr_pend, wall_ms, metrics_latency);
}

void batch_entries_load(batch_entries_t *s, batch_entry_t *e, model_aggregate_t *stored, int64_t rev,
                        batch_holds_t *holds) {
  (void)s;
  *holds = e->holds;
  e->holds = (batch_holds_t){0};
  model_aggregate_destroy(e->agg);
  e->agg = stored;
  e->loaded = true;
  e->rev = rev;
}

void batch_entries_unload(batch_entries_t *s, batch_entry_t *e) {
  (void)s;
  if (e->loaded) e->holds.incomplete = true;
  e->loaded = false;
}

void batch_entries_hold(batch_entries_t *s, batch_entry_t *e, bool holding, const batch_origin_t *origin) {
  (void)s;
  if (!holding || !origin) {
    batch_holds_release(&e->holds);
    e->holds.incomplete = true;
    return;
  }
  if (e->holds.incomplete) return;
  batch_holds_add(&e->holds, origin);
}

void batch_entries_drop_holds(batch_entries_t *s, batch_entry_t *e) {
  batch_holds_release(&e->holds);
  e->holds.incomplete = !e->loaded;
  batch_entries_recount(s, e);
}

void batch_entries_evict(batch_entries_t *s, size_t keep, size_t keep_bytes) {
  batch_cache_evict(&s->cache, keep, keep_bytes);
}

/* --- the invariants --------------------------------------------------------- */

typedef struct check {
  const batch_entries_t *s;
  uint64_t next_seq;
  size_t dirty, pending;
  char *why;
  size_t why_len;
  bool ok;
} check_t;

static void fail(check_t *c, const batch_entry_t *e, const char *rule) {
  if (!c->ok) return;
  c->ok = false;
  snprintf(c->why, c->why_len, "%s: %s", e ? e->key : "lists", rule);
}

static void check_entry(void *ctx, batch_entry_t *e) {
  check_t *c = ctx;
  if (e->dirty && !batch_entry_listed(e)) fail(c, e, "I1 dirty iff in the dirty list");
  if (e->dirty || e->inflight) {
    if (e->mem != batch_entry_memory(e)) fail(c, e, "I3 a pending entry's mem is its memory");
    c->pending += e->mem;
  }
  if (e->dirty) c->dirty++;
  if (e->dirty && e->pend_seq >= c->next_seq) fail(c, e, "I4 pend_seq below the next seq");
  if (e->inflight && e->dirty && e->flight_seq >= e->pend_seq) fail(c, e, "I5 flight_seq below pend_seq");
  if (!e->inflight && e->arr_flight.n) fail(c, e, "I5 arrival times of a snapshot only in flight");
  if (e->loaded && (e->holds.n || e->holds.incomplete)) fail(c, e, "I6 a loaded entry holds nothing");
}

bool batch_entries_check(const batch_entries_t *s, uint64_t next_seq, char *why, size_t why_len) {
  check_t c = {s, next_seq, 0, 0, why, why_len, true};
  batch_cache_each_entry((batch_cache_t *)&s->cache, check_entry, &c);
  if (c.dirty != s->ws.ndirty) fail(&c, NULL, "I1 ndirty counts the dirty entries");
  if (c.pending != s->pending_bytes) fail(&c, NULL, "I3 pending_bytes sums the pending entries");
  size_t ndirty = 0, nclean = 0, bytes = 0;
  for (const batch_entry_t *p = s->ws.dirty.next; p != &s->ws.dirty; p = p->next, ndirty++)
    if (!p->dirty) fail(&c, p, "I1 dirty iff in the dirty list");
  if (ndirty != s->ws.ndirty) fail(&c, NULL, "I1 ndirty counts the dirty list");
  for (const batch_entry_t *p = s->cache.lru.next; p != &s->cache.lru; p = p->next) {
    if (p->dirty || p->inflight || !p->loaded) fail(&c, p, "I2 in the LRU only while clean and loaded");
    nclean++;
    bytes += p->mem;
  }
  if (nclean != s->cache.nclean || bytes != s->cache.bytes) fail(&c, NULL, "I2 the LRU's counts");
  for (const batch_entry_t *p = s->ws.dirty.prev; p != &s->ws.dirty && p->prev != &s->ws.dirty; p = p->prev)
    if (p->pend_seq > p->prev->pend_seq) fail(&c, p, "I4 the dirty list sorted by pend_seq, oldest at the back");
  return c.ok;
}
