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

/* The part whose next aggregate has the least key, or n when all are done. */
static size_t least(const replay_rebuilt_t *parts, const size_t *pos, size_t n) {
  size_t best = n;
  const char *best_key = NULL;
  for (size_t i = 0; i < n; i++) {
    if (pos[i] == parts[i].n) continue;
    const char *key = model_aggregate_key(parts[i].aggs[pos[i]], NULL);
    if (!best_key || strcmp(key, best_key) < 0) best = i, best_key = key;
  }
  return best;
}

void replay_rebuilt_join(replay_rebuilt_t *parts, size_t n, replay_rebuilt_t *out) {
  size_t total = 0, *pos = oom_calloc(n + 1, sizeof *pos);
  for (size_t i = 0; i < n; i++) total += parts[i].n;
  out->aggs = oom_malloc((total + 1) * sizeof *out->aggs);
  out->n = 0;
  for (size_t i; (i = least(parts, pos, n)) < n;) out->aggs[out->n++] = parts[i].aggs[pos[i]++];
  for (size_t i = 0; i < n; i++) {
    free(parts[i].aggs);
    parts[i] = (replay_rebuilt_t){0};
  }
  free(pos);
}

void replay_merge_free(replay_merge_t *m) { model_aggset_free(&m->set); }

void replay_rebuilt_free(replay_rebuilt_t *r) {
  if (!r) return;
  for (size_t i = 0; i < r->n; i++) model_aggregate_destroy(r->aggs[i]);
  free(r->aggs);
  r->aggs = NULL;
  r->n = 0;
}
