#include "batch_cache.h"

#include <string.h>

#include "hash.h"
#include "oom.h"

#define KEY_MAX (2 * MODEL_ID_MAX + 2)

/* FNV-1a: keys are short and this is not exposed to hash flooding beyond
 * a tenant's own ids, which are validated. */
static uint32_t hash_key(const char *k, size_t n) { return hash_fnv1a32(HASH_FNV1A32_INIT, k, n); }

void batch_cache_init(batch_cache_t *c) {
  memset(c, 0, sizeof *c);
  c->nbuckets = 1024;
  c->buckets = oom_calloc(c->nbuckets, sizeof *c->buckets);
  batch_entry_list_init(&c->lru);
}

void batch_cache_free(batch_cache_t *c) {
  for (size_t i = 0; i < c->nbuckets; i++) {
    for (batch_entry_t *e = c->buckets[i], *n; e; e = n) {
      n = e->hash_next;
      batch_entry_free(e);
    }
  }
  free(c->buckets);
  c->buckets = NULL;
}

static batch_entry_t *find(const batch_cache_t *c, const char *key, size_t n, uint32_t h) {
  for (batch_entry_t *e = c->buckets[h & (c->nbuckets - 1)]; e; e = e->hash_next) {
    if (e->hash != h) continue;
    size_t kl;
    const char *k = model_aggregate_key(e->agg, &kl);
    if (kl == n && !memcmp(k, key, n)) return e;
  }
  return NULL;
}

static void grow(batch_cache_t *c) {
  size_t nb = c->nbuckets * 2;
  batch_entry_t **nbk = oom_calloc(nb, sizeof *nbk);
  for (size_t i = 0; i < c->nbuckets; i++) {
    for (batch_entry_t *e = c->buckets[i], *n; e; e = n) {
      n = e->hash_next;
      e->hash_next = nbk[e->hash & (nb - 1)];
      nbk[e->hash & (nb - 1)] = e;
    }
  }
  free(c->buckets);
  c->buckets = nbk;
  c->nbuckets = nb;
}

batch_entry_t *batch_cache_get(batch_cache_t *c, const model_command_t *cmd, bool *created) {
  char key[KEY_MAX];
  size_t n = (size_t)cmd->tenant_len + 1 + cmd->assignment_len;
  memcpy(key, cmd->tenant, cmd->tenant_len);
  key[cmd->tenant_len] = '/';
  memcpy(key + cmd->tenant_len + 1, cmd->assignment, cmd->assignment_len);
  uint32_t h = hash_key(key, n);
  batch_entry_t *e = find(c, key, n, h);
  *created = !e;
  if (e) return e;
  e = oom_calloc(1, sizeof *e);
  e->agg = model_aggregate_new(cmd->tenant, cmd->tenant_len, cmd->assignment, cmd->assignment_len);
  e->hash = h;
  e->hash_next = c->buckets[h & (c->nbuckets - 1)];
  c->buckets[h & (c->nbuckets - 1)] = e;
  if (++c->count > c->nbuckets) grow(c);
  return e;
}

void batch_cache_remove(batch_cache_t *c, batch_entry_t *e) {
  batch_entry_t **pp = &c->buckets[e->hash & (c->nbuckets - 1)];
  while (*pp != e) pp = &(*pp)->hash_next;
  *pp = e->hash_next;
  batch_entry_list_unlink(e);
  c->count--;
  batch_entry_free(e);
}

void batch_cache_keep(batch_cache_t *c, batch_entry_t *e) {
  batch_entry_list_push_front(&c->lru, e);
  c->nclean++;
  e->mem = batch_entry_memory(e);
  c->bytes += e->mem;
}

void batch_cache_leave_lru(batch_cache_t *c, batch_entry_t *e) {
  if (!batch_entry_listed(e)) return;
  batch_entry_list_unlink(e);
  c->nclean--;
  c->bytes -= e->mem;
  e->mem = 0;
}

void batch_cache_touch(batch_cache_t *c, batch_entry_t *e) {
  batch_entry_list_unlink(e);
  batch_entry_list_push_front(&c->lru, e);
}

void batch_cache_evict(batch_cache_t *c, size_t keep, size_t keep_bytes) {
  while (c->nclean > keep || c->bytes > keep_bytes) {
    batch_entry_t *e = c->lru.prev;
    batch_cache_leave_lru(c, e);
    batch_cache_remove(c, e);
  }
}

void batch_cache_foreach(const batch_cache_t *c, void (*fn)(void *ctx, const model_aggregate_t *agg, int64_t rev),
                         void *ctx) {
  for (size_t i = 0; i < c->nbuckets; i++)
    for (batch_entry_t *e = c->buckets[i]; e; e = e->hash_next) fn(ctx, e->agg, e->rev);
}

void batch_cache_each_entry(batch_cache_t *c, void (*fn)(void *ctx, batch_entry_t *e), void *ctx) {
  for (size_t i = 0; i < c->nbuckets; i++)
    for (batch_entry_t *e = c->buckets[i]; e; e = e->hash_next) fn(ctx, e);
}
