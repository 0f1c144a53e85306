#include "batch_latency.h"

#include <stdlib.h>
#include <string.h>

#include "oom.h"

const batch_latency_bound_t BATCH_LATENCY_PER_AGGREGATE = {1, 64, true};

/* In seq order, every command applied and not yet committable: a store
 * that is down for long must not grow it without bound, and a run per
 * distinct timestamp is what it costs while the store is up. */
static const batch_latency_bound_t IN_ORDER = {256, 1u << 20, false};

/* Halves a full list: neighbours merged into one run at their weighted mean. */
static void coarsen(batch_latency_t *l) {
  uint32_t m = 0;
  for (uint32_t i = 0; i < l->n; i += 2) {
    batch_latency_run_t r = l->v[i];
    if (i + 1 < l->n) {
      const batch_latency_run_t *q = &l->v[i + 1];
      r.ms += (int64_t)((double)(q->ms - r.ms) * (double)q->n / (double)(r.n + q->n));
      r.n += q->n;
    }
    l->v[m++] = r;
  }
  l->n = m;
}

/* A time other than the newest run's (batch_latency_add has checked). */
void batch_latency_append(batch_latency_t *l, int64_t ms, uint64_t n, const batch_latency_bound_t *bound) {
  if (l->n == bound->max_runs) {
    if (!bound->coarsen) {
      l->v[l->n - 1].n += n;
      return;
    }
    coarsen(l);
  }
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : bound->first_cap;
    l->v = oom_realloc(l->v, l->cap * sizeof *l->v);
  }
  l->v[l->n++] = (batch_latency_run_t){ms, n};
}

void batch_latency_free(batch_latency_t *l) {
  free(l->v);
  *l = (batch_latency_t){0};
}

size_t batch_latency_bytes(const batch_latency_t *l) { return l->cap * sizeof *l->v; }

double batch_latency_waited_s(int64_t since_ms, int64_t now_ms) {
  return now_ms > since_ms ? (double)(now_ms - since_ms) / 1000.0 : 0.0;
}

void batch_latency_observe(batch_latency_t *l, int64_t now_ms, batch_latency_observe_fn observe) {
  for (uint32_t i = 0; i < l->n; i++) observe(batch_latency_waited_s(l->v[i].ms, now_ms), l->v[i].n);
  batch_latency_free(l);
}

void batch_latency_prepend(batch_latency_t *newer, batch_latency_t *older, const batch_latency_bound_t *bound) {
  batch_latency_t all = *older;
  *older = (batch_latency_t){0};
  if (!newer->n) {
    batch_latency_free(newer);
    *newer = all;
    return;
  }
  for (uint32_t i = 0; i < newer->n; i++) batch_latency_add(&all, newer->v[i].ms, newer->v[i].n, bound);
  batch_latency_free(newer);
  *newer = all;
}

void batch_latency_seq_append(batch_latency_seq_t *s, uint64_t seq, int64_t ms) {
  if (!s->runs.n) s->first = seq;
  batch_latency_append(&s->runs, ms, 1, &IN_ORDER); /* not the newest run's time: batch_latency_seq_add checked */
}

void batch_latency_seq_observe_below(batch_latency_seq_t *s, uint64_t upto, int64_t now_ms,
                                     batch_latency_observe_fn observe) {
  batch_latency_t *l = &s->runs;
  uint32_t done = 0;
  while (done < l->n && s->first < upto) {
    batch_latency_run_t *r = &l->v[done];
    uint64_t k = upto - s->first < r->n ? upto - s->first : r->n;
    observe(batch_latency_waited_s(r->ms, now_ms), k);
    s->first += k;
    r->n -= k;
    if (r->n) break;
    done++;
  }
  memmove(l->v, l->v + done, (l->n - done) * sizeof *l->v);
  l->n -= done;
}

void batch_latency_seq_free(batch_latency_seq_t *s) {
  batch_latency_free(&s->runs);
  s->first = 0;
}
