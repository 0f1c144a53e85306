#include "batch_cache.h"

#include <string.h>

#include "aggset.h"
#include "oom.h"

/* Keys hash as every aggregate key does (model_aggset_hash: hash_words,
 * hash.h): they are short and this is not exposed to hash flooding beyond a
 * tenant's own ids, which are validated. A key is at most two ids and a
 * slash: its length fits the entry's byte. */
_Static_assert(2 * MODEL_ID_MAX + 1 <= UINT8_MAX, "batch_entry_t.key_len is a byte");

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

/* The entry of "<tenant>/<assignment>" whose hash is h: compares the hash,
 * then the key kept in the entry, in its two parts (no concatenated copy). */
static batch_entry_t *find(const batch_cache_t *c, const model_command_t *cmd, size_t n, uint32_t h) {
  size_t tl = (size_t)cmd->tenant_len;
  for (batch_entry_t *e = c->buckets[h & (c->nbuckets - 1)]; e; e = e->hash_next) {
    if (e->hash != h || e->key_len != n) continue;
    if (!memcmp(e->key, cmd->tenant, tl) && e->key[tl] == '/' &&
        !memcmp(e->key + tl + 1, cmd->assignment, n - tl - 1))
      return e;
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
  size_t n = (size_t)cmd->tenant_len + 1 + cmd->assignment_len;
  uint32_t h = model_aggset_hash(cmd->tenant, cmd->tenant_len, cmd->assignment, cmd->assignment_len);
  batch_entry_t *e = find(c, cmd, n, h);
  *created = !e;
  if (e) return e;
  /* The key follows the entry in one block (batch_entry.h). */
  e = oom_calloc(1, sizeof *e + n + 1);
  char *key = (char *)(e + 1);
  memcpy(key, cmd->tenant, cmd->tenant_len);
  key[cmd->tenant_len] = '/';
  memcpy(key + cmd->tenant_len + 1, cmd->assignment, cmd->assignment_len);
  e->key = key;
  e->key_len = (uint8_t)n;
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
