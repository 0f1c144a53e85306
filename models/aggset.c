/* The plain table of aggregates: see aggset.h. */
#include "aggset.h"

#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "oom.h"

uint32_t model_aggset_hash(const char *tenant, size_t tenant_len, const char *assignment, size_t assignment_len) {
  uint64_t h = hash_words(HASH_WORDS_INIT, tenant, tenant_len);
  return hash_words_final32(hash_words(h, assignment, assignment_len));
}

/* The slot of the key, or the empty slot where it goes. */
static model_aggset_slot_t *probe(const model_aggset_t *s, const model_command_t *cmd, uint32_t hash) {
  size_t mask = s->cap - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    model_aggset_slot_t *slot = &s->slots[i];
    if (!slot->agg) return slot;
    if (slot->hash != hash) continue;
    if (model_aggregate_has_key(slot->agg, cmd->tenant, cmd->tenant_len, cmd->assignment, cmd->assignment_len))
      return slot;
  }
}

/* Doubles the slots (1024 at first), reinserting by the stored hashes.
 * The slots are zeroed by writing them, not by calloc: calloc's fresh pages
 * would be read first (a probe) and written later, and that write to the
 * shared zero page is a second fault which, with other threads running,
 * flushes the TLB of every core. */
static void grow(model_aggset_t *s) {
  size_t cap = s->cap ? s->cap * 2 : 1024, mask = cap - 1;
  model_aggset_slot_t *slots = oom_malloc(cap * sizeof *slots);
  memset(slots, 0, cap * sizeof *slots);
  for (size_t i = 0; i < s->cap; i++) {
    if (!s->slots[i].agg) continue;
    size_t j = s->slots[i].hash & mask;
    while (slots[j].agg) j = (j + 1) & mask;
    slots[j] = s->slots[i];
  }
  free(s->slots);
  s->slots = slots;
  s->cap = cap;
}

model_aggregate_t *model_aggset_get(model_aggset_t *s, const model_command_t *cmd, uint32_t hash) {
  if (2 * (s->count + 1) > s->cap) grow(s);
  model_aggset_slot_t *slot = probe(s, cmd, hash);
  if (slot->agg) return slot->agg;
  slot->agg = model_aggregate_new(cmd->tenant, cmd->tenant_len, cmd->assignment, cmd->assignment_len);
  slot->hash = hash;
  s->count++;
  return slot->agg;
}

void model_aggset_take(model_aggset_t *s, model_aggregate_t **out) {
  size_t n = 0;
  for (size_t i = 0; i < s->cap; i++)
    if (s->slots[i].agg) out[n++] = s->slots[i].agg;
  free(s->slots);
  *s = (model_aggset_t)MODEL_AGGSET_INIT;
}

void model_aggset_free(model_aggset_t *s) {
  for (size_t i = 0; i < s->cap; i++) model_aggregate_destroy(s->slots[i].agg);
  free(s->slots);
  *s = (model_aggset_t)MODEL_AGGSET_INIT;
}
