/* The merge without a store: see replay_merge.h. */
#include "replay_merge.h"

#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "oom.h"
#include "store/sink.h"

bool replay_merge_apply(replay_merge_t *m, const model_command_t *cmd, uint32_t hash, model_reject_t *rej) {
  model_aggregate_t *agg = model_aggset_get(&m->set, cmd, hash);
  size_t would_be, limit = sink_document_limit(agg);
  model_apply_result_t r = model_aggregate_apply_within(agg, cmd, limit, &would_be);
  if (r == MODEL_APPLY_TOO_LARGE) {
    model_reject_document_too_large(rej, would_be, limit);
    return false;
  }
  m->applied += r == MODEL_APPLY_APPLIED;
  m->stale += r == MODEL_APPLY_STALE;
  return true;
}

void replay_merge_sorted(replay_merge_t *m, replay_rebuilt_t *out) {
  out->n = model_aggset_count(&m->set);
  out->aggs = oom_malloc((out->n + 1) * sizeof *out->aggs);
  model_aggset_take(&m->set, out->aggs);
  model_keys_sort(out->aggs, out->n, sizeof *out->aggs, model_keys_of_aggregate_ptr, NULL);
}

void replay_rebuilt_join(replay_rebuilt_t *parts, size_t n, replay_rebuilt_t *out) {
  size_t total = 0;
  model_keys_run_t *runs = oom_calloc(n + 1, sizeof *runs);
  for (size_t i = 0; i < n; i++) {
    total += parts[i].n;
    runs[i] = (model_keys_run_t){parts[i].aggs, parts[i].n, 0};
  }
  out->aggs = oom_malloc((total + 1) * sizeof *out->aggs);
  out->n = 0;
  model_keys_order_t by_key = {model_keys_of_aggregate_ptr, NULL};
  for (model_aggregate_t *const *next;
       (next = model_keys_merge_next(runs, n, sizeof *out->aggs, model_keys_compare, &by_key, NULL));)
    out->aggs[out->n++] = *next;
  for (size_t i = 0; i < n; i++) {
    free(parts[i].aggs);
    parts[i] = (replay_rebuilt_t){0};
  }
  free(runs);
}

void replay_merge_free(replay_merge_t *m) { model_aggset_free(&m->set); }

void replay_rebuilt_free(replay_rebuilt_t *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n; i++) model_aggregate_destroy(r->aggs[i]);
  free(r->aggs);
  r->aggs = NULL;
  r->n = 0;
}

/* --- the table as a merger (replay_merger.h) --------------------------------------- */

typedef struct table {
  replay_merge_t merge;
  model_command_t cmd; /* the one being merged */
  size_t max_bytes;
  replay_reject_fn reject;
  void *ctx;
} table_t;

static bool table_apply(void *ctx, uint64_t line, const char *data, size_t len, int64_t event_ms) {
  (void)event_ms;
  table_t *t = ctx;
  model_reject_t rej;
  if (!model_command_decode(data ? data : "", len, t->max_bytes, &t->cmd, &rej) ||
      !replay_merge_apply(&t->merge, &t->cmd, replay_merge_hash(&t->cmd), &rej))
    return t->reject(t->ctx, line, &rej);
  return true;
}

static bool table_finish(void *ctx, replay_rebuilt_t *out) {
  replay_merge_sorted(&((table_t *)ctx)->merge, out);
  return true;
}

static void table_drain(void *ctx) { (void)ctx; } /* every reject is out as it comes */

static void table_counts(void *ctx, replay_counts_t *c) {
  const table_t *t = ctx;
  c->applied = t->merge.applied;
  c->stale = t->merge.stale;
}

static void table_destroy(void *ctx) {
  table_t *t = ctx;
  replay_merge_free(&t->merge);
  free(t);
}

static const replay_merger_ops_t table_ops = {.apply = table_apply, .finish = table_finish, .drain = table_drain,
                                              .counts = table_counts, .destroy = table_destroy};

replay_merger_t replay_merge_merger(size_t max_bytes, replay_reject_fn reject, void *ctx) {
  table_t *t = oom_calloc(1, sizeof *t);
  *t = (table_t){.merge = REPLAY_MERGE_INIT, .max_bytes = max_bytes, .reject = reject, .ctx = ctx};
  return (replay_merger_t){&table_ops, t, true};
}
