/* The merge into the store: see replay_store.h. */
#include "replay_store.h"

#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/signals.h"
#include "oom.h"
#include "pipeline/batch.h"
#include "pipeline/flusher.h"
#include "source/announcer.h"
#include "source/changes_producer.h"

typedef struct store_merge {
  const config_t *cfg;
  const clock_source_t *clock; /* borrowed: the replay's */
  batch_t *batch;
  flusher_t *flusher; /* the writer thread owns the connection; NULL once stopped */
  model_command_t cmd; /* the one being merged */
  replay_reject_fn reject;
  void *ctx;
  /* Change events (changes.topic set): every write is announced, and the
   * replay ends once each event is acknowledged. NULL without. */
  announcer_t *ann;
} store_merge_t;

/* --- the batch's writer pipeline --------------------------------------------------------- */

/* One step of the writer pipeline (flusher.h); false on a fatal store
 * error. A replay has no one to hand its work to, so it waits out a store
 * outage (with backoff) unless interrupted. */
static bool store_step(const store_merge_t *r, int64_t wait_ms, bool force) {
  flusher_event_t ev = flusher_step(r->flusher, batch_now(r->clock), wait_ms, force);
  if (!ev.finished || ev.status == SINK_OK || ev.status == SINK_PARTIAL) return true;
  if (ev.status == SINK_FATAL) {
    log_error("replay: store write failed", "error", LOG_STR, ev.err.message);
    return false;
  }
  if (ev.attempt == 1 || ev.attempt % 10 == 0)
    log_warn("replay: store write failed, retrying", "error", LOG_STR, ev.err.message, "retry_in_ms", LOG_INT,
             ev.retry_in_ms);
  return true;
}

/* Serves the change events' acknowledgements (waiting up to timeout_ms);
 * false once an event can never be delivered. */
static bool store_announced(store_merge_t *r, int timeout_ms) {
  if (!r->ann) return true;
  changes_poll(r->ann->changes, timeout_ms);
  return announcer_ok(r->ann); /* logged by the producer */
}

/* True while a change event awaits its acknowledgement. */
static bool store_unannounced(const store_merge_t *r) { return r->ann && changes_pending(r->ann->changes); }

/* The memory batch.max_pending_bytes bounds: unwritten changes (in-flight
 * snapshots included) and unacknowledged change events. */
static uint64_t store_pending(const store_merge_t *r) {
  return batch_pending_bytes(r->batch) + (r->ann ? changes_bytes(r->ann->changes) : 0);
}

/* After a merge: lets the writer start a flush that is due, and holds the
 * source back while what it holds is over its bound. */
static bool store_keep_up(store_merge_t *r) {
  if (!store_step(r, 0, false) || !store_announced(r, 0)) return false;
  while (store_pending(r) > (uint64_t)r->cfg->batch_max_pending_bytes) {
    if (signals_stop_count()) return false;
    if (batch_dirty(r->batch)) {
      if (!store_step(r, 100, true)) return false;
    } else if (store_unannounced(r)) {
      if (!store_announced(r, 100)) return false;
    } else {
      break;
    }
  }
  return true;
}

/* Writes everything held and waits for its change events; false if
 * interrupted or on a fatal error. */
static bool store_drain(store_merge_t *r) {
  while (batch_dirty(r->batch)) {
    if (signals_stop_count() || !store_step(r, 1000, true) || !store_announced(r, 0)) return false;
  }
  while (store_unannounced(r)) {
    if (signals_stop_count() || !store_announced(r, 100)) return false;
  }
  return true;
}

/* The writer thread over the batch; NULL when it cannot start. */
static flusher_t *store_flusher_new(store_merge_t *r, const sink_t *sink) {
  flusher_t *f = flusher_new(r->batch, sink, 0, r->clock);
  if (f) flusher_set_retry(f, r->cfg->retry_backoff_ms, r->cfg->retry_backoff_max_ms);
  return f;
}

/* --- late rejects (batch_hold.h) --------------------------------------------------------- */

/* The batch holds each command merged into an aggregate not yet loaded,
 * with its line (or message) number as where it came from. A late reject:
 * a false from the callback (--max-rejects passed) stops the replay at its
 * next message. */
static void reject_late(void *ctx, const batch_origin_t *origin, const model_command_t *cmd,
                        const model_reject_t *rej) {
  (void)cmd;
  store_merge_t *r = ctx;
  uint64_t line;
  memcpy(&line, origin->from[0].p, sizeof line);
  (void)r->reject(r->ctx, line, rej);
}

/* Only the store's documents can be loaded, and so not fit: the batch
 * holds lines once the writer runs, until it stops. */
static void hold_lines(store_merge_t *r) {
  batch_holding_t how = {(size_t)r->cfg->limits_max_command_bytes, reject_late, r};
  batch_set_holding(r->batch, &how);
}

static void stop_holding(store_merge_t *r) { batch_set_holding(r->batch, NULL); /* its ctx, r, goes now */ }

/* --- the merger ------------------------------------------------------------------------ */

/* event_ms is when the command entered the system (0 = now), for the
 * batch's latencies. */
static bool store_apply(void *ctx, uint64_t line, const char *data, size_t len, int64_t event_ms) {
  store_merge_t *r = ctx;
  model_reject_t rej;
  if (!model_command_decode(data ? data : "", len, (size_t)r->cfg->limits_max_command_bytes, &r->cmd, &rej))
    return r->reject(r->ctx, line, &rej);
  batch_origin_t origin = {{data, len}, {{&line, sizeof line}}};
  batch_now_t now = batch_now(r->clock);
  if (batch_apply_from(r->batch, &r->cmd, &origin, false, event_ms > 0 ? event_ms : now.wall_ms, now, &rej) ==
      MODEL_APPLY_TOO_LARGE)
    return r->reject(r->ctx, line, &rej);
  return store_keep_up(r);
}

static bool store_idle(void *ctx) { return store_step(ctx, 0, false) && store_announced(ctx, 0); }

static bool store_finish(void *ctx, replay_rebuilt_t *out) {
  (void)out; /* the documents are in the store */
  return store_drain(ctx);
}

static void store_no_drain(void *ctx) { (void)ctx; } /* a late reject comes only while the writer runs */

/* The writer thread stops first: its last results settle the counts. */
static void store_stop(store_merge_t *r) {
  if (!r->flusher) return;
  flusher_destroy(r->flusher);
  r->flusher = NULL;
  stop_holding(r);
}

static void store_counts(void *ctx, replay_counts_t *c) {
  store_merge_t *r = ctx;
  store_stop(r);
  const batch_stats_t *bs = batch_stats(r->batch);
  c->applied = bs->applied;
  c->stale = bs->stale;
  c->aggregates = bs->writes_ok;
}

static void store_destroy(void *ctx) {
  store_merge_t *r = ctx;
  store_stop(r);
  announcer_destroy(r->ann); /* the flusher, its last user, is stopped */
  batch_destroy(r->batch);
  free(r);
}

static const replay_merger_ops_t store_ops = {.apply = store_apply, .idle = store_idle, .finish = store_finish,
                                              .drain = store_no_drain, .counts = store_counts,
                                              .destroy = store_destroy};

bool replay_store_merger(replay_merger_t *m, const config_t *cfg, const sink_t *sink, const clock_source_t *clock,
                         replay_reject_fn reject, void *ctx) {
  *m = (replay_merger_t){0};
  batch_limits_t limits = batch_limits_from_config(cfg);
  batch_t *batch = batch_new(&limits);
  if (!batch) return false;
  store_merge_t *r = oom_calloc(1, sizeof *r);
  *r = (store_merge_t){.cfg = cfg, .clock = clock, .batch = batch, .reject = reject, .ctx = ctx};
  if (*cfg->changes_topic) {
    char err[512];
    r->ann = announcer_new(cfg, clock, err, sizeof err);
    if (!r->ann) {
      log_error("replay: kafka producer of change events", "error", LOG_STR, err);
      store_destroy(r);
      return false;
    }
    batch_set_announcer(batch, announcer_announce, r->ann);
  }
  r->flusher = store_flusher_new(r, sink);
  if (!r->flusher) {
    store_destroy(r);
    return false;
  }
  hold_lines(r);
  *m = (replay_merger_t){&store_ops, r, false};
  return true;
}
