/* The denormalizer: merges commands into in-memory aggregates and writes the
 * changed ones to a sink in batches (SPEC.md sections 3-5).
 *
 * Aggregates live in one table keyed by "<tenant>/<assignment>". An entry is
 * either *loaded* (its aggregate includes the stored document and `rev` is the
 * stored revision, 0 if absent) or *unloaded* (an overlay holding only the
 * commands seen since it entered memory). Unloaded entries are loaded all at
 * once at the next flush with one $in query, the overlay merged into the
 * stored document; so a cache miss costs no round trip of its own.
 *
 * Dirty entries (changes not yet durable) are never evicted; clean loaded
 * entries are kept in an LRU of at most cache.max_aggregates (0 = none kept:
 * every command then costs a read and a write, the naive baseline).
 *
 * batch_flush() writes every dirty entry conditionally on its rev; conflicts
 * are reloaded, re-merged and retried within the same call. It returns
 * BATCH_DONE only when nothing is dirty any more: at that point every command
 * applied before the call is durable, which is what the consumer needs to
 * commit offsets. Single-threaded: one thread owns a batch_t. */
#ifndef BATCH_H
#define BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"
#include "store.h"

/* Where aggregates are read from and written to: the MongoDB store, or a
 * JSON-lines file for replay --output. Same contract as store.h. */
typedef struct batch_sink {
  store_status_t (*load)(void *ctx, const char *const *keys, size_t nkeys, store_found_cb found, void *cb_ctx,
                         store_error_t *err);
  store_status_t (*write)(void *ctx, store_write_item_t *items, size_t nitems, int64_t updated_at_ms,
                          store_error_t *err);
  void *ctx;
} batch_sink_t;

/* The MongoDB store as a sink (store is borrowed). */
batch_sink_t batch_store_sink(store_t *store);

typedef struct batch_limits {
  int64_t max_commands;      /* flush after this many commands */
  int64_t max_aggregates;    /* ... or this many dirty aggregates (also the bulk size) */
  int64_t linger_ms;         /* ... or when the oldest unflushed command is this old */
  int64_t max_pending_bytes; /* past this, the consumer stops fetching */
  int64_t cache_max_aggregates;
} batch_limits_t;

/* The limits from a configuration's batch.* and cache.* keys. */
struct config;
batch_limits_t batch_limits_from_config(const struct config *cfg);

typedef enum { BATCH_DONE = 0, BATCH_RETRY = 1, BATCH_FATAL = 2 } batch_status_t;

typedef struct batch_stats {
  uint64_t applied, stale;            /* commands, cumulative */
  uint64_t writes_ok, conflicts, write_errors, loads, flushes;
} batch_stats_t;

typedef struct batch batch_t;

/* sink is copied; its ctx is borrowed. Caller owns; batch_destroy(NULL) is safe. */
batch_t *batch_new(const batch_sink_t *sink, const batch_limits_t *limits);
void batch_destroy(batch_t *b);
void batch_set_limits(batch_t *b, const batch_limits_t *limits);

/* Merges a validated command. event_ms is when the command entered the
 * system (its Kafka timestamp), for the command-to-durable latency. */
model_apply_result_t batch_apply(batch_t *b, const model_command_t *cmd, int64_t event_ms, int64_t now_ms);

/* True when a flush limit is reached (commands, dirty aggregates or linger). */
bool batch_flush_due(const batch_t *b, int64_t now_ms);
/* When linger will make a flush due, or INT64_MAX if nothing is pending. */
int64_t batch_deadline(const batch_t *b);
/* True if any change is not yet durable. */
bool batch_dirty(const batch_t *b);

/* Writes all dirty aggregates (see the file comment). err may be NULL. */
batch_status_t batch_flush(batch_t *b, int64_t now_ms, store_error_t *err);

size_t batch_pending_bytes(const batch_t *b); /* heap held by dirty aggregates */
size_t batch_dirty_count(const batch_t *b);
size_t batch_cached_count(const batch_t *b); /* clean, loaded entries in the LRU */
const batch_stats_t *batch_stats(const batch_t *b);

/* Calls fn for every aggregate in memory (dirty or clean), in no order. */
void batch_foreach(const batch_t *b, void (*fn)(void *ctx, const model_aggregate_t *agg, int64_t rev), void *ctx);

#endif
