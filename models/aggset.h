/* model_aggset: a plain table of aggregates keyed by "tenant/assignment",
 * for a merge that holds everything in memory and writes nothing until the
 * end (a replay into a file, verify's rebuild). It keeps no write state: no
 * dirty list, no revisions, no LRU; an aggregate, once created, stays until
 * the table is freed or handed over (model_aggset_take).
 *
 * Open addressing with linear probing over a power-of-two array of slots,
 * each the aggregate and its key's hash (model_aggset_hash), grown at 1/2
 * load: a lookup compares the stored hash before the key.
 *
 * Ownership: the table owns its aggregates until model_aggset_take hands
 * them to the caller. Threads: none of its own; a table is used by one
 * thread at a time (the replay's shards each own one, replay_shards.h).
 * Out of memory aborts (oom.h). */
#ifndef MODEL_AGGSET_H
#define MODEL_AGGSET_H

#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"
#include "command.h"

typedef struct model_aggset_slot {
  model_aggregate_t *agg; /* NULL: empty */
  uint32_t hash;
} model_aggset_slot_t;

typedef struct model_aggset {
  model_aggset_slot_t *slots;
  size_t cap, count; /* cap: a power of two (0 before the first insert) */
} model_aggset_t;

#define MODEL_AGGSET_INIT {0}

/* The hash of the key "tenant/assignment" (hash_words, hash.h), computed
 * from its parts without building the key. */
uint32_t model_aggset_hash(const char *tenant, size_t tenant_len, const char *assignment, size_t assignment_len);

/* The aggregate of cmd's (tenant, assignment), created empty when absent;
 * hash is model_aggset_hash of it. Never NULL. */
model_aggregate_t *model_aggset_get(model_aggset_t *s, const model_command_t *cmd, uint32_t hash);

static inline size_t model_aggset_count(const model_aggset_t *s) { return s->count; }

/* Appends every aggregate of s to out[0..count) (in no order), hands them
 * to the caller and leaves s empty. */
void model_aggset_take(model_aggset_t *s, model_aggregate_t **out);

/* Destroys every aggregate still in s and its slots; s is then empty. */
void model_aggset_free(model_aggset_t *s);

#endif
