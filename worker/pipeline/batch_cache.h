/* The batch's aggregates in memory: one table keyed by "<tenant>/<assignment>"
 * (every entry, dirty, in flight or clean) and an LRU of the clean, loaded
 * ones, of which at most cache.max_aggregates, holding at most cache.max_bytes
 * (batch_entry_memory), are kept (batch.h). Dirty and
 * in-flight entries are never evicted: they are in no LRU.
 *
 * Threads: part of the batch, owned by the batch's thread. */
#ifndef BATCH_CACHE_H
#define BATCH_CACHE_H

#include <stdbool.h>
#include <stddef.h>

#include "batch_entry.h"
#include "command.h"

typedef struct batch_cache {
  batch_entry_t **buckets;
  size_t nbuckets, count;
  batch_entry_t lru; /* sentinel; lru.next is the most recently used */
  size_t nclean;     /* entries in the LRU */
  size_t bytes;      /* the memory of the entries in the LRU (batch_entry_memory) */
} batch_cache_t;

void batch_cache_init(batch_cache_t *c);
/* Frees every entry and the table. */
void batch_cache_free(batch_cache_t *c);

/* The entry of cmd's aggregate; a new one (an empty aggregate, unloaded, in
 * no list) when there is none, and then *created is set. */
batch_entry_t *batch_cache_get(batch_cache_t *c, const model_command_t *cmd, bool *created);
/* Takes e out of the table and any list and frees it. */
void batch_cache_remove(batch_cache_t *c, batch_entry_t *e);

/* e is clean and loaded: into the LRU, as the most recently used, its memory
 * counted in bytes (a listed entry does not change until it leaves). */
void batch_cache_keep(batch_cache_t *c, batch_entry_t *e);
/* e (not dirty) is about to change: out of the LRU if it is there. */
void batch_cache_leave_lru(batch_cache_t *c, batch_entry_t *e);
/* e, in the LRU, was used: to its front. */
void batch_cache_touch(batch_cache_t *c, batch_entry_t *e);
/* Removes the least recently used clean entries while there are more than
 * keep or they hold more than keep_bytes: whichever bound is passed evicts. */
void batch_cache_evict(batch_cache_t *c, size_t keep, size_t keep_bytes);

/* Calls fn for every entry, in no order; fn must not add or remove any. */
void batch_cache_each_entry(batch_cache_t *c, void (*fn)(void *ctx, batch_entry_t *e), void *ctx);

void batch_cache_foreach(const batch_cache_t *c, void (*fn)(void *ctx, const model_aggregate_t *agg, int64_t rev),
                         void *ctx);

#endif
