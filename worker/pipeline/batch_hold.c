#include "batch_hold.h"

#include <stdlib.h>

#include "oom.h"

void batch_holds_add(batch_holds_t *h, void *held, size_t bytes) {
  if (h->n == h->cap) {
    h->cap = h->cap ? h->cap * 2 : 4;
    h->v = oom_realloc(h->v, h->cap * sizeof *h->v);
  }
  h->v[h->n++] = held;
  h->bytes += bytes;
}

void batch_holds_release(batch_holds_t *h, const batch_holder_t *holder) {
  for (uint32_t i = 0; i < h->n; i++) holder->release(holder->ctx, h->v[i]);
  free(h->v);
  *h = (batch_holds_t){0};
}

size_t batch_holds_reapply(const batch_holds_t *h, const batch_holder_t *holder, model_aggregate_t *agg,
                           size_t max_bytes, model_command_t *cmd, size_t *applied) {
  size_t rejected = 0;
  *applied = 0;
  for (uint32_t i = 0; i < h->n; i++) {
    model_reject_t rej;
    size_t would_be;
    if (!holder->decode(holder->ctx, h->v[i], cmd, &rej)) {
      holder->reject(holder->ctx, h->v[i], NULL, &rej);
      rejected++;
      continue;
    }
    model_apply_result_t r = model_aggregate_apply_within(agg, cmd, max_bytes, &would_be);
    if (r == MODEL_APPLY_APPLIED) (*applied)++;
    if (r != MODEL_APPLY_TOO_LARGE) continue;
    model_reject_document_too_large(&rej, would_be, max_bytes);
    holder->reject(holder->ctx, h->v[i], cmd, &rej);
    rejected++;
  }
  return rejected;
}
