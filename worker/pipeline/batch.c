#include "batch.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch_entries.h"
#include "batch_hold.h"
#include "batch_latency.h"
#include "batch_too_large.h"
#include "batch_writeset.h"
#include "config/config.h"
#include "base/log.h"
#include "metrics/metrics.h"
#include "oom.h"

struct batch {
  batch_limits_t lim;
  batch_entries_t ents;  /* every entry and its write-behind state (batch_entries.h) */
  size_t inflight_bytes; /* the snapshots in the job in flight */
  writer_job_t *job;     /* the job in flight (owned by whoever holds it; see writer.h), or NULL */
  bool owed;             /* the last flush left dirty entries behind: the next one is due at once */
  int64_t commands_since_flush; /* commands since the last snapshot */
  int64_t first_pending_ms;     /* monotonic: when the first command since the last snapshot came */
  batch_latency_seq_t events;   /* when every command not yet committable entered, by seq */
  uint64_t seq;                 /* the seq of the next command */
  uint64_t flight_seq;          /* the least flight_seq of the job in flight */
  int64_t flight_ms;            /* and when its command was applied (monotonic) */
  batch_flushcap_t cap;
  batch_too_large_t too_large; /* aggregates the store refused as too large, logged once each */
  batch_holding_t hold;        /* how unloaded entries hold their commands, if holding */
  bool holding;
  batch_announce_cb announce_fn; /* announces what the store holds, if set (batch.h "Announcing") */
  void *announce_ctx;
  uint32_t epoch;              /* of announcements: batch_next_epoch */
  model_command_t *recmd;      /* scratch for the commands applied again (batch_hold.h); ~6 KiB, made on first use */
  batch_stats_t stats;
};

batch_t *batch_new(const batch_limits_t *limits) {
  batch_t *b = oom_calloc(1, sizeof *b);
  b->lim = *limits;
  batch_entries_init(&b->ents);
  b->first_pending_ms = INT64_MAX;
  return b;
}

void batch_destroy(batch_t *b) {
  if (!b) return;
  free(b->recmd);
  batch_entries_free(&b->ents);
  batch_latency_seq_free(&b->events);
  batch_too_large_free(&b->too_large);
  free(b);
}

batch_limits_t batch_limits_from_config(const config_t *cfg) {
  return (batch_limits_t){cfg->batch_max_commands, cfg->batch_max_aggregates, cfg->batch_linger_ms,
                          cfg->batch_max_pending_bytes, cfg->cache_max_aggregates, cfg->cache_max_bytes};
}

static void evict(batch_t *b);

void batch_set_announcer(batch_t *b, batch_announce_cb fn, void *ctx) {
  b->announce_fn = fn;
  b->announce_ctx = ctx;
}

void batch_next_epoch(batch_t *b) { b->epoch++; }

void batch_forget_clean(batch_t *b) { batch_entries_evict(&b->ents, 0, 0); }

/* Lower cache bounds take effect at once, not at the next flush. */
void batch_set_limits(batch_t *b, const batch_limits_t *limits) {
  b->lim = *limits;
  evict(b);
}

/* --- entries ---------------------------------------------------------------------- */

static void evict(batch_t *b) {
  batch_entries_evict(&b->ents, (size_t)(b->lim.cache_max_aggregates > 0 ? b->lim.cache_max_aggregates : 0),
                    (size_t)(b->lim.cache_max_bytes > 0 ? b->lim.cache_max_bytes : 0));
}

/* --- holds (batch_hold.h) ------------------------------------------------------------ */

static void drop_holds(void *ctx, batch_entry_t *e) {
  batch_t *b = ctx;
  batch_entries_drop_holds(&b->ents, e);
}

void batch_set_holding(batch_t *b, const batch_holding_t *how) {
  if (b->holding) batch_cache_each_entry(&b->ents.cache, drop_holds, b);
  b->holding = how != NULL;
  if (how) b->hold = *how;
}

/* Every change of e not in the store is held: an overlay that does not fit
 * its stored document can be rebuilt from it. */
static bool can_rebuild(const batch_t *b, const batch_entry_t *e) { return b->holding && !e->holds.incomplete; }

/* The stored document (it->agg, loaded by the job) becomes e's base, and
 * the commands e holds are applied to it again, in their order: each that
 * does not fit is rejected now, through the report callback. e is then loaded;
 * returns whether any of them changed the document (then its next write
 * is whole; otherwise e holds nothing the store lacks). */
static bool rebuild(batch_t *b, batch_entry_t *e, writer_item_t *it) {
  batch_holds_t holds;
  batch_entries_load(&b->ents, e, it->agg, it->rev, &holds);
  it->agg = NULL;
  if (!b->recmd) b->recmd = oom_malloc(sizeof *b->recmd);
  size_t applied, limit = sink_document_limit(e->agg);
  model_aggregate_t *stored = b->announce_fn ? model_aggregate_clone(e->agg) : NULL; /* what the next write changes */
  size_t rejected = batch_holds_reapply(&holds, &b->hold, e->agg, limit, b->recmd, &applied);
  if (stored) {
    model_changes_clear(&e->changes);
    model_aggregate_wins(stored, e->agg, &e->changes);
    model_aggregate_destroy(stored);
  }
  b->stats.too_large += rejected;
  b->stats.applied -= rejected < b->stats.applied ? rejected : b->stats.applied;
  batch_holds_release(&holds);
  if (applied) batch_writeset_whole(e);
  log_info("aggregate rebuilt from its stored document: the commands that did not fit are rejected", "id",
           LOG_STR, model_aggregate_key(e->agg, NULL), "rejected", LOG_INT, (int64_t)rejected);
  return applied > 0;
}

/* --- merging ---------------------------------------------------------------------- */

/* A stale command changes nothing, so it is durable with the newer state
 * that made it stale: the pending changes, else the snapshot in flight,
 * else the store's (now). */
static void apply_stale(batch_t *b, batch_entry_t *e, int64_t event_ms, batch_now_t now) {
  b->stats.stale++;
  if (e->dirty || e->inflight) {
    batch_latency_add(e->dirty ? &e->arr_pend : &e->arr_flight, event_ms, 1, &BATCH_LATENCY_PER_AGGREGATE);
    batch_entries_recount(&b->ents, e);
  } else {
    metrics_latency(batch_latency_waited_s(event_ms, now.wall_ms), 1);
  }
  if (!e->dirty && !e->inflight && batch_entry_listed(e)) batch_cache_touch(&b->ents.cache, e);
}

model_apply_result_t batch_apply(batch_t *b, const model_command_t *cmd, int64_t event_ms, batch_now_t now,
                                 model_reject_t *rej) {
  return batch_apply_from(b, cmd, NULL, false, event_ms, now, rej);
}

model_apply_result_t batch_apply_from(batch_t *b, const model_command_t *cmd, const batch_origin_t *origin,
                                      bool announce, int64_t event_ms, batch_now_t now, model_reject_t *rej) {
  bool created;
  batch_entry_t *e = batch_cache_get(&b->ents.cache, cmd, &created);
  size_t before = model_aggregate_student_count(e->agg), would_be, limit = sink_document_limit(e->agg);
  model_apply_result_t r = model_aggregate_apply_within(e->agg, cmd, limit, &would_be);
  if (r == MODEL_APPLY_TOO_LARGE) {
    /* Rejected: it changed nothing and takes no seq; the caller dead-letters
     * it like a command that does not decode. */
    b->stats.too_large++;
    if (rej) model_reject_document_too_large(rej, would_be, limit);
    return r;
  }
  batch_latency_seq_add(&b->events, b->seq, event_ms);
  uint64_t seq = b->seq++;
  bool due = announce && b->announce_fn && e->announced_epoch != b->epoch;
  if (due) e->announce = true;
  if (r == MODEL_APPLY_APPLIED) {
    batch_writeset_note(e, cmd, before);
    if (!e->loaded) batch_entries_hold(&b->ents, e, b->holding, origin);
    batch_entries_change(&b->ents, e, seq, event_ms, now.mono_ms);
    b->stats.applied++;
  } else if (due && !e->dirty && !e->inflight) {
    /* Due for an announcement at the stored rev, which may be newer than
     * this clean entry (batch.h "Announcing"): loaded again by the next
     * flush, its commands durable with it. */
    b->stats.stale++;
    batch_entries_unload(&b->ents, e);
    batch_entries_change(&b->ents, e, seq, event_ms, now.mono_ms);
  } else {
    apply_stale(b, e, event_ms, now);
  }
  b->commands_since_flush++;
  if (b->first_pending_ms == INT64_MAX) b->first_pending_ms = now.mono_ms;
  return r;
}

/* --- the state of the flushes ------------------------------------------------------- */

bool batch_flush_due(const batch_t *b, int64_t mono_ms) {
  if (b->owed && b->ents.ws.ndirty) return true;
  if (!b->commands_since_flush) return false;
  return b->commands_since_flush >= b->lim.max_commands || (int64_t)b->ents.ws.ndirty >= b->lim.max_aggregates ||
         mono_ms - b->first_pending_ms >= b->lim.linger_ms;
}

int64_t batch_deadline(const batch_t *b) {
  if (b->owed && b->ents.ws.ndirty) return 0;
  return b->first_pending_ms == INT64_MAX ? INT64_MAX : b->first_pending_ms + b->lim.linger_ms;
}

bool batch_dirty(const batch_t *b) { return b->ents.ws.ndirty > 0 || b->job; }

uint64_t batch_seq(const batch_t *b) { return b->seq; }

uint64_t batch_durable_seq(const batch_t *b) {
  uint64_t s = b->seq;
  const batch_entry_t *oldest = batch_writeset_oldest(&b->ents.ws);
  if (oldest && oldest->pend_seq < s) s = oldest->pend_seq;
  if (b->job && b->flight_seq < s) s = b->flight_seq;
  return s;
}

int64_t batch_oldest_unwritten_ms(const batch_t *b) {
  int64_t ms = INT64_MAX;
  const batch_entry_t *oldest = batch_writeset_oldest(&b->ents.ws);
  if (oldest) ms = oldest->pend_ms;
  if (b->job && b->flight_ms < ms) ms = b->flight_ms;
  return ms;
}

size_t batch_flush_cap(const batch_t *b) { return batch_flushcap_get(&b->cap, b->lim.linger_ms); }
bool batch_in_flight(const batch_t *b) { return b->job != NULL; }

/* --- beginning a flush ---------------------------------------------------------------- */

/* The commands below seq upto are durable, and so committable. */
static void observe_committable(batch_t *b, uint64_t upto, int64_t wall_ms) {
  batch_latency_seq_observe_below(&b->events, upto, wall_ms, metrics_committable_latency);
}

/* A snapshot of e into job: e's changes ride on it and e is in flight. */
static void snapshot(batch_t *b, writer_job_t *job, batch_entry_t *e) {
  model_aggregate_t *snap = model_aggregate_clone(e->agg);
  writer_job_add(job, snap, e->rev, !e->loaded, e);
  writer_item_t *it = &job->items[job->nitems - 1];
  job->bytes += sizeof *it + batch_writeset_hand_over(e, it); /* the item, and the changes it took over */
  job->bytes += model_aggregate_memory(snap);
  batch_entries_take_off(&b->ents, e);
}

writer_job_t *batch_flush_begin(batch_t *b, batch_now_t now) {
  assert(!b->job);
  if (!b->ents.ws.ndirty) {
    /* Nothing unwritten (every command since the last flush was stale, or
     * the flush that carried them landed): all of it is durable. */
    observe_committable(b, b->seq, now.wall_ms);
    b->commands_since_flush = 0;
    b->first_pending_ms = INT64_MAX;
    b->owed = false;
    evict(b);
    return NULL;
  }
  size_t cap = batch_flush_cap(b), n = b->ents.ws.ndirty < cap ? b->ents.ws.ndirty : cap;
  /* With "flush finished", what scripts/bench measures a pass over the dirty list with. */
  log_debug("flush begins", "aggregates", LOG_INT, (int64_t)n, "dirty", LOG_INT, (int64_t)b->ents.ws.ndirty);
  writer_job_t *job = writer_job_new(n);
  job->chunk = b->lim.max_aggregates > 0 ? (size_t)b->lim.max_aggregates : 1000;
  job->now_ms = now.wall_ms;
  b->flight_seq = batch_writeset_oldest(&b->ents.ws)->pend_seq;
  b->flight_ms = batch_writeset_oldest(&b->ents.ws)->pend_ms;
  while (job->nitems < n) snapshot(b, job, batch_writeset_oldest(&b->ents.ws)); /* oldest first */
  job->commands = b->commands_since_flush;
  job->first_pending_ms = b->first_pending_ms;
  b->commands_since_flush = 0;
  b->first_pending_ms = INT64_MAX;
  b->owed = b->ents.ws.ndirty > 0; /* left behind by the cap: the next flush is due as soon as this one lands */
  b->inflight_bytes = job->bytes;
  b->job = job;
  b->stats.flushes++;
  return job;
}

/* --- ending a flush ------------------------------------------------------------------- */

/* The job loaded the stored document of e: it becomes e's base, and what e
 * received since the snapshot is merged into it; or, if that would pass the
 * store's limit (commands that came while the load was in flight), e is
 * rebuilt from it. Its holds go: it is loaded. */
static void adopt_base(batch_t *b, batch_entry_t *e, writer_item_t *it, int64_t wall_ms) {
  batch_writeset_check_overlay(e, it->agg);
  size_t would_be, limit = can_rebuild(b, e) ? sink_document_limit(e->agg) : SIZE_MAX;
  model_apply_result_t r = model_aggregate_merge_within(it->agg, e->agg, limit, &would_be);
  bool changed;
  if (r == MODEL_APPLY_TOO_LARGE) {
    changed = rebuild(b, e, it);
  } else {
    changed = r == MODEL_APPLY_APPLIED;
    batch_holds_t holds;
    batch_entries_load(&b->ents, e, it->agg, it->rev, &holds);
    it->agg = NULL;
    batch_holds_release(&holds);
  }
  if (!changed) batch_entries_in_store(&b->ents, e, wall_ms); /* whatever arrived since is in the store already */
  /* changed: it holds commands applied after the snapshot, so it is dirty
   * already (and the caller re-dirties it from flight_seq if the write failed). */
}

/* The store holds agg at rev: announced if it was written (changed says
 * what changed) or e is due for an announcement (batch.h "Announcing"). */
static void announce(batch_t *b, batch_entry_t *e, const model_aggregate_t *agg, int64_t rev, int64_t updated_at_ms,
                     model_changes_t *changed, bool sent) {
  if (!b->announce_fn || (!sent && !e->announce)) return;
  if (sent)
    model_changes_normalize(changed);
  else
    model_changes_clear(changed);
  batch_written_t w = {agg, rev, updated_at_ms, changed, sent};
  b->announce_fn(b->announce_ctx, &w);
  e->announce = false;
  e->announced_epoch = b->epoch;
}

/* Settles one item of a finished job. */
static void settle(batch_t *b, writer_item_t *it, int64_t wall_ms) {
  batch_entry_t *e = it->tag;
  switch (it->result) {
  case SINK_ITEM_OK:
    announce(b, e, it->agg, it->rev, it->updated_at_ms, &it->changes, it->sent);
    if (it->loaded) adopt_base(b, e, it, wall_ms);
    batch_entries_landed(&b->ents, e, it->rev, wall_ms);
    return;
  case SINK_ITEM_TOO_LARGE:
    if (it->sent) { /* refused by the store (batch_too_large.h): kept for retry */
      batch_too_large_refused(&b->too_large, model_aggregate_key(e->agg, NULL), it->bytes,
                              sink_document_limit(e->agg));
      break;
    }
    /* The overlay merged into the stored document would pass the limit:
     * rebuilt from the stored document and its holds, the commands that do
     * not fit rejected, and owed whole if the rest changes anything.
     * Without holds to rebuild from, it is merged anyway and owed, and the
     * store's refusal (batch_too_large.h) keeps it. */
    if (!can_rebuild(b, e))
      adopt_base(b, e, it, wall_ms);
    else if (!rebuild(b, e, it)) { /* nothing that fits changes the stored document: nothing to write */
      announce(b, e, e->agg, e->rev, it->updated_at_ms, &it->changes, false);
      batch_entries_in_store(&b->ents, e, wall_ms);
      batch_entries_landed(&b->ents, e, e->rev, wall_ms);
      return;
    }
    batch_entries_owe_again(&b->ents, e, NULL); /* what it changes was taken from the stored document */
    return;
  case SINK_ITEM_CONFLICT:
    /* Another writer got there first: reload with the next flush and merge
     * what we hold (a superset of the snapshot) into it. The store's state
     * is unknown: the next write is whole. */
    batch_entries_unload(&b->ents, e);
    batch_entries_owe_again(&b->ents, e, NULL); /* what it changes is taken from the next load */
    return;
  case SINK_ITEM_REJECTED:
    log_error("store rejected an aggregate", "id", LOG_STR, model_aggregate_key(e->agg, NULL), "code", LOG_INT,
              (int64_t)it->error_code);
    break;
  case SINK_ITEM_RETRY: /* no result (the store failed): kept for retry */
    break;
  }
  /* Rejected, refused as too large, or no result: kept for retry. */
  if (it->loaded) adopt_base(b, e, it, wall_ms); /* the load landed: keep what it taught us */
  batch_entries_owe_again(&b->ents, e, it);
}

static void count_job(batch_t *b, const writer_job_t *job) {
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
}

/* The flush's result: the job's, unless every item has one (SINK_OK) and
 * some are owed again: kept for retry (kept: item errors) or due at once
 * (conflicts, too large once loaded). */
static sink_status_t job_status(const writer_job_t *job, uint64_t kept, sink_error_t *err) {
  sink_status_t result = job->status;
  if (result == SINK_OK && kept)
    result = SINK_RETRY;
  else if (result == SINK_OK && (job->conflicts || job->too_large))
    result = SINK_PARTIAL;
  if (err) {
    *err = job->err;
    if (result == SINK_RETRY && job->status == SINK_OK)
      snprintf(err->message, sizeof err->message, "the store rejected %llu aggregates; kept for retry",
               (unsigned long long)kept);
    else if (result == SINK_PARTIAL)
      snprintf(err->message, sizeof err->message, "%llu conflicts, %llu merged documents past the limit; again",
               (unsigned long long)job->conflicts, (unsigned long long)job->too_large);
  }
  return result;
}

sink_status_t batch_flush_end(batch_t *b, writer_job_t *job, batch_now_t now, sink_error_t *err) {
  assert(job == b->job);
  for (size_t i = job->nitems; i-- > 0;) /* newest first: see batch_writeset_redirty_old */
    settle(b, &job->items[i], now.wall_ms);
  count_job(b, job);
  sink_status_t result = job_status(job, job->errors, err);
  if (job->status == SINK_OK) batch_flushcap_observe(&b->cap, job->seconds, job->nitems);
  if (result != SINK_OK) {
    /* What the job covered is still owed; its commands stay in events until a flush lands them. */
    b->owed = true;
    b->commands_since_flush += job->commands;
    if (job->first_pending_ms < b->first_pending_ms) b->first_pending_ms = job->first_pending_ms;
  }
  b->inflight_bytes = 0;
  b->job = NULL;
  observe_committable(b, batch_durable_seq(b), now.wall_ms);
  writer_job_destroy(job);
  evict(b);
  return result;
}

size_t batch_pending_bytes(const batch_t *b) { return b->ents.pending_bytes + b->inflight_bytes; }
size_t batch_dirty_count(const batch_t *b) { return b->ents.ws.ndirty; }
size_t batch_in_flight_count(const batch_t *b) { return b->job ? b->job->nitems : 0; }
size_t batch_cached_count(const batch_t *b) { return b->ents.cache.nclean; }
size_t batch_cached_bytes(const batch_t *b) { return b->ents.cache.bytes; }
const batch_stats_t *batch_stats(const batch_t *b) { return &b->stats; }

bool batch_check(const batch_t *b, char *why, size_t why_len) {
  return batch_entries_check(&b->ents, b->seq, why, why_len);
}

static void count_held(void *ctx, batch_entry_t *e) { *(size_t *)ctx += e->holds.n; }

size_t batch_held_count(const batch_t *b) {
  size_t n = 0;
  batch_cache_each_entry((batch_cache_t *)&b->ents.cache, count_held, &n);
  return n;
}

void batch_foreach(const batch_t *b, void (*fn)(void *ctx, const model_aggregate_t *agg, int64_t rev), void *ctx) {
  batch_cache_foreach(&b->ents.cache, fn, ctx);
}
