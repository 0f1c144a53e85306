/* When commands entered the system, kept until they are durable, so that
 * the batch observes each command's latency (metrics.h) without keeping a
 * timestamp per command: the one tracker behind both measures of batch.h.
 *  - command-to-durable: each entry keeps the arrival times of the commands
 *    its unwritten changes carry (batch_latency_t), observed all at once
 *    when the write of its aggregate lands;
 *  - command-to-committable: the batch keeps every command's arrival time
 *    in seq order (batch_latency_seq_t), observed from the front as the
 *    durable seq passes them.
 * A list is run-length coded by Kafka timestamp (one run per distinct time
 * in a row) and bounded (batch_latency_bound_t), so that a store outage
 * costs bounded memory; past the bound the times become coarser, never
 * lost: every command is observed once.
 *
 * Threads: owned by the batch's thread, like the batch. */
#ifndef BATCH_LATENCY_H
#define BATCH_LATENCY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct batch_latency_run {
  int64_t ms; /* when the commands entered the system (wall ms) */
  uint64_t n; /* how many */
} batch_latency_run_t;

/* A run list; {0} is empty and holds no memory. */
typedef struct batch_latency {
  batch_latency_run_t *v;
  uint32_t n, cap;
} batch_latency_t;

/* How a list grows and what happens when it is full. */
typedef struct batch_latency_bound {
  uint32_t first_cap; /* runs allocated at first; doubled as needed */
  uint32_t max_runs;  /* a multiple of first_cap by a power of two */
  /* Full: true merges neighbouring runs two by two, each pair into one at
   * its weighted mean time (the list stays exact to within a fraction of
   * the time it spans); false adds the command to the newest run (its
   * latency is then observed from an earlier time). */
  bool coarsen;
} batch_latency_bound_t;

/* Per aggregate: at most 64 runs (1 KiB), coarsened when full. Most
 * entries carry a command or two, so the list starts with room for one. */
extern const batch_latency_bound_t BATCH_LATENCY_PER_AGGREGATE;

/* Adds n commands that entered at ms (aborts when out of memory). Inline:
 * called per command, and most commands join the newest run (Kafka
 * timestamps in a row are often the same millisecond). */
void batch_latency_append(batch_latency_t *l, int64_t ms, uint64_t n, const batch_latency_bound_t *bound);
static inline void batch_latency_add(batch_latency_t *l, int64_t ms, uint64_t n, const batch_latency_bound_t *bound) {
  if (l->n && l->v[l->n - 1].ms == ms) {
    l->v[l->n - 1].n += n;
    return;
  }
  batch_latency_append(l, ms, n, bound);
}
/* Frees the list's memory; it is empty after. */
void batch_latency_free(batch_latency_t *l);
/* The heap the list holds. */
size_t batch_latency_bytes(const batch_latency_t *l);

/* Observes every command of l as done at now_ms with observe (a metrics.h
 * histogram), and empties l. */
typedef void (*batch_latency_observe_fn)(double seconds, uint64_t commands);
void batch_latency_observe(batch_latency_t *l, int64_t now_ms, batch_latency_observe_fn observe);

/* A snapshot did not land: the commands of older (those it carried) go in
 * front of those of newer (arrived since), all in newer; older is left
 * empty. */
void batch_latency_prepend(batch_latency_t *newer, batch_latency_t *older, const batch_latency_bound_t *bound);

/* Seconds from a command's Kafka timestamp to now_ms; a timestamp ahead of
 * now (producer skew) counts as 0. */
double batch_latency_waited_s(int64_t since_ms, int64_t now_ms);

/* Every command in seq order, from `first` (the seq of the oldest one kept)
 * on without a gap. */
typedef struct batch_latency_seq {
  batch_latency_t runs;
  uint64_t first;
} batch_latency_seq_t;

/* The command with this seq (the next one after those kept) entered at ms.
 * Inline as batch_latency_add. */
void batch_latency_seq_append(batch_latency_seq_t *s, uint64_t seq, int64_t ms);
static inline void batch_latency_seq_add(batch_latency_seq_t *s, uint64_t seq, int64_t ms) {
  batch_latency_t *l = &s->runs;
  if (l->n && l->v[l->n - 1].ms == ms) {
    l->v[l->n - 1].n++;
    return;
  }
  batch_latency_seq_append(s, seq, ms);
}
/* Observes the commands below seq upto as done at now_ms and drops them (a
 * run cut by upto keeps its later commands). */
void batch_latency_seq_observe_below(batch_latency_seq_t *s, uint64_t upto, int64_t now_ms,
                                     batch_latency_observe_fn observe);
void batch_latency_seq_free(batch_latency_seq_t *s);

#endif
