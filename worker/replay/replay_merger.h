/* The merge of a replay behind one interface, so that the replay is one
 * pipeline whatever the mode (replay.h):
 *
 *   source -> merger.apply (decode, merge, rejects) -> merger.finish -> output
 *
 * Three back ends implement it, and replay.c picks one before it reads:
 *   - the store (replay_store.h): the batch, its writer thread and the
 *     conditional writer, as `run`; documents go to the store as it goes;
 *   - the table (replay_merge.h): decode and merge on the calling thread,
 *     everything in memory until the end;
 *   - the shards (replay_shards.h): the table's merge on replay.threads
 *     threads, with the table's results byte for byte.
 * Each decodes the messages it is given (the shards on their threads) with
 * limits.max_command_bytes, merges the valid ones and hands every rejected
 * command to the reject callback it was made with, with its stream
 * position. The in-memory back ends hand their aggregates to finish's
 * caller sorted by key; the store's are written by then.
 *
 * Threads: every call is the replay's thread's; a back end's own threads
 * (the shards', the store's writer) are its own and are stopped by counts
 * or destroy. */
#ifndef REPLAY_MERGER_H
#define REPLAY_MERGER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"
#include "buf.h"
#include "command.h"

/* Every aggregate of a replay, sorted by key (model_keys_sort), owned. */
typedef struct replay_rebuilt {
  model_aggregate_t **aggs;
  size_t n;
} replay_rebuilt_t;

/* A rejected command at stream position `line` (from 1), on the replay's
 * thread. False stops the replay: the callback has said why. */
typedef bool (*replay_reject_fn)(void *ctx, uint64_t line, const model_reject_t *rej);

/* The summary's counts a merger keeps. `read` and `aggregates` come in as
 * the pipeline counted them; a merger that counts them itself (the shards
 * cut a file's lines, the store counts its writes) sets them. */
typedef struct replay_counts {
  uint64_t read;       /* commands read */
  uint64_t applied;    /* valid commands that changed a slot */
  uint64_t stale;      /* valid commands that changed nothing */
  uint64_t aggregates; /* documents written */
} replay_counts_t;

typedef struct replay_merger_ops {
  /* Message number `line` of the stream: its bytes (data may be NULL when
   * len is 0, or for a line past the limit, known by its length) and when
   * it entered the system (ms since the epoch, 0 = unknown). False stops
   * the replay: a reject callback or the store said why. */
  bool (*apply)(void *ctx, uint64_t line, const char *data, size_t len, int64_t event_ms);
  /* The source has nothing for a moment (replay_feed_t.idle); NULL = nothing to do. */
  bool (*idle)(void *ctx);
  /* Blocks of whole lines of a file instead of messages one by one
   * (replay_block_feed_t); NULL = messages one by one. */
  model_buf_t *(*block)(void *ctx);
  bool (*block_done)(void *ctx, size_t long_len, uint64_t *lines);
  /* After the last message: every command merged and every reject handed
   * over; the in-memory back ends move their aggregates into *out, sorted
   * by key, the store's writes everything it holds. False when that fails. */
  bool (*finish)(void *ctx, replay_rebuilt_t *out);
  /* The source stopped early: the rejects of what was read are handed over,
   * as one thread would have by then. */
  void (*drain)(void *ctx);
  /* At the end, once: stops the back end's threads if they still run, then
   * sets the counts it keeps into *c. */
  void (*counts)(void *ctx, replay_counts_t *c);
  /* Frees everything; the aggregates handed out by finish are the caller's. */
  void (*destroy)(void *ctx);
} replay_merger_ops_t;

typedef struct replay_merger {
  const replay_merger_ops_t *ops; /* NULL: none made */
  void *ctx;
  /* True when its rejects come in stream order; false when some come late
   * and out of order (the store's: when an aggregate's stored document is
   * loaded, batch.h), so that a rejects file waits for the end. */
  bool in_order;
} replay_merger_t;

static inline bool replay_merger_apply(replay_merger_t *m, uint64_t line, const char *data, size_t len,
                                       int64_t event_ms) {
  return m->ops->apply(m->ctx, line, data, len, event_ms);
}
static inline bool replay_merger_finish(replay_merger_t *m, replay_rebuilt_t *out) {
  return m->ops->finish(m->ctx, out);
}
static inline void replay_merger_drain(replay_merger_t *m) { m->ops->drain(m->ctx); }
static inline void replay_merger_counts(replay_merger_t *m, replay_counts_t *c) {
  if (m->ops) m->ops->counts(m->ctx, c);
}
/* Destroys the back end; m is then none. Safe on none. */
static inline void replay_merger_destroy(replay_merger_t *m) {
  if (m->ops) m->ops->destroy(m->ctx);
  *m = (replay_merger_t){0};
}

#endif
