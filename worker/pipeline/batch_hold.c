#include "batch_hold.h"

#include <stdlib.h>
#include <string.h>

#include "oom.h"

/* The lengths of the origin's pieces, then their bytes, one after the
 * other. Every piece is far under 4 GiB (a command is at most
 * limits.max_command_bytes, a Kafka key and topic within a message). */
struct batch_held {
  uint32_t len[1 + BATCH_ORIGIN_PARTS]; /* the command's, then from[]'s */
  unsigned char bytes[];
};

static const batch_span_t *piece(const batch_origin_t *o, int i) { return i ? &o->from[i - 1] : &o->command; }

void batch_holds_add(batch_holds_t *h, const batch_origin_t *origin) {
  size_t total = 0;
  for (int i = 0; i <= BATCH_ORIGIN_PARTS; i++) {
    if (piece(origin, i)->len > UINT32_MAX) abort();
    total += piece(origin, i)->len;
  }
  batch_held_t *held = oom_malloc(sizeof *held + total);
  unsigned char *at = held->bytes;
  for (int i = 0; i <= BATCH_ORIGIN_PARTS; i++) {
    const batch_span_t *s = piece(origin, i);
    held->len[i] = (uint32_t)s->len;
    if (s->len) memcpy(at, s->p, s->len);
    at += s->len;
  }
  if (h->n == h->cap) {
    h->cap = h->cap ? h->cap * 2 : 4;
    h->v = oom_realloc(h->v, h->cap * sizeof *h->v);
  }
  h->v[h->n++] = held;
  h->bytes += sizeof *held + total;
}

void batch_holds_release(batch_holds_t *h) {
  for (uint32_t i = 0; i < h->n; i++) free(h->v[i]);
  free(h->v);
  *h = (batch_holds_t){0};
}

/* The origin a held copy holds, pointing into it. */
static batch_origin_t origin_of(const batch_held_t *held) {
  batch_origin_t o;
  const unsigned char *at = held->bytes;
  for (int i = 0; i <= BATCH_ORIGIN_PARTS; i++) {
    batch_span_t *s = i ? &o.from[i - 1] : &o.command;
    *s = (batch_span_t){held->len[i] ? at : NULL, held->len[i]};
    at += held->len[i];
  }
  return o;
}

size_t batch_holds_reapply(const batch_holds_t *h, const batch_holding_t *how, model_aggregate_t *agg,
                           size_t max_bytes, model_command_t *cmd, size_t *applied) {
  size_t rejected = 0;
  *applied = 0;
  for (uint32_t i = 0; i < h->n; i++) {
    batch_origin_t o = origin_of(h->v[i]);
    model_reject_t rej;
    size_t would_be;
    if (!model_command_decode(o.command.p ? o.command.p : "", o.command.len, how->max_command_bytes, cmd, &rej)) {
      how->reject(how->ctx, &o, NULL, &rej);
      rejected++;
      continue;
    }
    model_apply_result_t r = model_aggregate_apply_within(agg, cmd, max_bytes, &would_be);
    if (r == MODEL_APPLY_APPLIED) (*applied)++;
    if (r != MODEL_APPLY_TOO_LARGE) continue;
    model_reject_document_too_large(&rej, would_be, max_bytes);
    how->reject(how->ctx, &o, cmd, &rej);
    rejected++;
  }
  return rejected;
}
