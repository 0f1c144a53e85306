/* model_erased: the erased subjects (docs/GUARANTEES.md, "Erasure"): whole
 * tenants, and students of a tenant, each with the stamp of the erasure
 * command that erased it, and nothing else (no name, no content).
 *
 * Erasure is final: ids are never reused, so once a subject is erased no
 * command for it, earlier or later, puts it back. The rule that makes that
 * order-free is here, in two halves that give the same documents whatever
 * the order: a command whose subject is already erased is not merged
 * (model_erased_covers), and an aggregate that merged commands of a subject
 * erased later loses them (model_erased_apply): the tenant's aggregates go,
 * an erased student's slots go. The documents after any set of commands are
 * then those of the same set without every command of the erased subjects;
 * an aggregate left with no slot is no document (MODEL_ERASE_GONE).
 *
 * Open addressing with linear probing over a power-of-two array, grown at
 * 1/2 load, keyed by "tenant NUL student" (student empty for a tenant),
 * hashed with hash_words (hash.h): a command's check is two lookups.
 *
 * Ownership: the set owns its entries; model_erased_destroy(NULL) is safe.
 * Threads: none of its own; one thread at a time. Out of memory aborts
 * (oom.h). */
#ifndef MODEL_ERASED_H
#define MODEL_ERASED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"
#include "command.h"

typedef struct model_erased model_erased_t;

model_erased_t *model_erased_new(void);
void model_erased_destroy(model_erased_t *e);

/* Records that tenant (student NULL or empty: the whole tenant) is erased by
 * a command of stamp (version, id; id NUL-terminated, id_len bytes, as a
 * command's). True when the subject is new; for a
 * subject already erased the least stamp is kept (so that every instance
 * that learns the same erasures keeps the same stamps). Ids are valid ids
 * (the decoder's), at most MODEL_ID_MAX bytes. */
bool model_erased_add(model_erased_t *e, const char *tenant, size_t tenant_len, const char *student,
                      size_t student_len, uint64_t version, const char *id, size_t id_len);

bool model_erased_has_tenant(const model_erased_t *e, const char *tenant, size_t tenant_len);
bool model_erased_has_student(const model_erased_t *e, const char *tenant, size_t tenant_len, const char *student,
                              size_t student_len);

/* Whether cmd (a command of the merge: it names a tenant, and a student when
 * its type has one) is for an erased subject: its tenant, or its student of
 * that tenant. */
bool model_erased_covers(const model_erased_t *e, const model_command_t *cmd);

typedef enum {
  MODEL_ERASE_NONE,    /* nothing of agg is erased */
  MODEL_ERASE_CHANGED, /* erased students' slots were removed; slots remain */
  MODEL_ERASE_GONE     /* its tenant is erased, or no slot remains: no document */
} model_erase_result_t;

/* Removes from agg what e erases: every slot of an erased student; for an
 * erased tenant, or when no slot remains, reports GONE (agg is then left
 * without the erased students, for the caller to drop). Linear in agg's
 * students. */
model_erase_result_t model_erased_apply(const model_erased_t *e, model_aggregate_t *agg);

size_t model_erased_count(const model_erased_t *e);

/* One erased subject, for persisting and listing the set: student_len 0 for
 * a whole tenant. Pointers are the set's, valid until it next changes. */
typedef struct model_erased_subject {
  const char *tenant, *student, *id;
  size_t tenant_len, student_len, id_len;
  uint64_t version;
} model_erased_subject_t;

/* Calls fn for every subject, in no particular order. */
void model_erased_each(const model_erased_t *e, void (*fn)(void *ctx, const model_erased_subject_t *s), void *ctx);

#endif
