/* The erased subjects (erased.h). */
#include "erased.h"

#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "oom.h"

typedef struct entry {
  uint64_t version;
  uint32_t hash;
  uint8_t tenant_len, student_len, id_len;
  char bytes[]; /* tenant NUL student NUL id NUL */
} entry_t;

struct model_erased {
  entry_t **slots;
  size_t cap, count; /* cap: a power of two, 0 before the first add */
};

static uint32_t subject_hash(const char *tenant, size_t tl, const char *student, size_t sl) {
  return hash_words_final32(hash_words(hash_words(HASH_WORDS_INIT, tenant, tl), student, sl));
}

static bool entry_is(const entry_t *en, uint32_t hash, const char *tenant, size_t tl, const char *student,
                     size_t sl) {
  return en->hash == hash && en->tenant_len == tl && en->student_len == sl && !memcmp(en->bytes, tenant, tl) &&
         !memcmp(en->bytes + tl + 1, student, sl);
}

/* The slot of the subject, or of the empty slot where it would go. */
static size_t probe(const model_erased_t *e, uint32_t hash, const char *tenant, size_t tl, const char *student,
                    size_t sl) {
  size_t mask = e->cap - 1, i = hash & mask;
  while (e->slots[i] && !entry_is(e->slots[i], hash, tenant, tl, student, sl)) i = (i + 1) & mask;
  return i;
}

static bool find(const model_erased_t *e, const char *tenant, size_t tl, const char *student, size_t sl) {
  if (!e->count) return false;
  return e->slots[probe(e, subject_hash(tenant, tl, student, sl), tenant, tl, student, sl)] != NULL;
}

static void grow(model_erased_t *e) {
  size_t cap = e->cap ? e->cap * 2 : 64;
  entry_t **slots = oom_calloc(cap, sizeof *slots);
  for (size_t i = 0; i < e->cap; i++) {
    entry_t *en = e->slots[i];
    if (!en) continue;
    size_t j = en->hash & (cap - 1);
    while (slots[j]) j = (j + 1) & (cap - 1);
    slots[j] = en;
  }
  free(e->slots);
  e->slots = slots;
  e->cap = cap;
}

model_erased_t *model_erased_new(void) { return oom_calloc(1, sizeof(model_erased_t)); }

void model_erased_destroy(model_erased_t *e) {
  if (!e) return;
  for (size_t i = 0; i < e->cap; i++) free(e->slots[i]);
  free(e->slots);
  free(e);
}

bool model_erased_add(model_erased_t *e, const char *tenant, size_t tl, const char *student, size_t sl,
                      uint64_t version, const char *id, size_t id_len) {
  if (!student) sl = 0;
  if ((e->count + 1) * 2 > e->cap) grow(e);
  uint32_t hash = subject_hash(tenant, tl, student ? student : "", sl);
  size_t at = probe(e, hash, tenant, tl, student ? student : "", sl);
  entry_t *old = e->slots[at];
  if (old) {
    model_stamp_t mine = {version, id, id_len},
                  kept = {old->version, old->bytes + old->tenant_len + 1 + old->student_len + 1, old->id_len};
    if (model_stamp_compare(&mine, &kept) >= 0) return false;
    free(old); /* the least stamp is kept: replaced below */
    e->count--;
  }
  entry_t *en = oom_malloc(sizeof *en + tl + sl + id_len + 3);
  en->version = version;
  en->hash = hash;
  en->tenant_len = (uint8_t)tl;
  en->student_len = (uint8_t)sl;
  en->id_len = (uint8_t)id_len;
  char *p = en->bytes;
  memcpy(p, tenant, tl);
  p[tl] = '\0';
  p += tl + 1;
  if (sl) memcpy(p, student, sl);
  p[sl] = '\0';
  p += sl + 1;
  memcpy(p, id, id_len);
  p[id_len] = '\0';
  e->slots[at] = en;
  e->count++;
  return !old;
}

bool model_erased_has_tenant(const model_erased_t *e, const char *tenant, size_t tl) {
  return find(e, tenant, tl, "", 0);
}

bool model_erased_has_student(const model_erased_t *e, const char *tenant, size_t tl, const char *student,
                              size_t sl) {
  return sl && find(e, tenant, tl, student, sl);
}

bool model_erased_covers(const model_erased_t *e, const model_command_t *cmd) {
  if (!e->count) return false;
  if (model_erased_has_tenant(e, cmd->tenant, cmd->tenant_len)) return true;
  return cmd->student_len && model_erased_has_student(e, cmd->tenant, cmd->tenant_len, cmd->student, cmd->student_len);
}

model_erase_result_t model_erased_apply(const model_erased_t *e, model_aggregate_t *agg) {
  if (!e->count) return MODEL_ERASE_NONE;
  size_t tl;
  char tenant[MODEL_ID_MAX + 1]; /* copied: the aggregate's block moves when a student is removed */
  const char *t = model_aggregate_tenant(agg, &tl);
  memcpy(tenant, t, tl);
  if (model_erased_has_tenant(e, tenant, tl)) return MODEL_ERASE_GONE;
  bool changed = false;
  for (size_t i = model_aggregate_student_count(agg); i-- > 0;) { /* from the end: removal keeps the earlier indexes */
    model_student_view_t v;
    model_aggregate_student(agg, i, &v);
    if (model_erased_has_student(e, tenant, tl, v.student, v.student_len)) {
      char id[MODEL_ID_MAX + 1];
      memcpy(id, v.student, v.student_len); /* the view points into the table the removal rebuilds */
      changed |= model_aggregate_remove_student(agg, id, v.student_len);
    }
  }
  if (model_aggregate_is_empty(agg)) return MODEL_ERASE_GONE;
  return changed ? MODEL_ERASE_CHANGED : MODEL_ERASE_NONE;
}

size_t model_erased_count(const model_erased_t *e) { return e->count; }

void model_erased_each(const model_erased_t *e, void (*fn)(void *ctx, const model_erased_subject_t *s), void *ctx) {
  for (size_t i = 0; i < e->cap; i++) {
    const entry_t *en = e->slots[i];
    if (!en) continue;
    model_erased_subject_t s = {.tenant = en->bytes,
                                .tenant_len = en->tenant_len,
                                .student = en->bytes + en->tenant_len + 1,
                                .student_len = en->student_len,
                                .id = en->bytes + en->tenant_len + 1 + en->student_len + 1,
                                .id_len = en->id_len,
                                .version = en->version};
    fn(ctx, &s);
  }
}
