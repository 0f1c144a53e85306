/* Drift between a rebuilt aggregate and its stored document (`aggregator
 * verify`): pure, no I/O.
 *
 * The rebuilt aggregate holds exactly the slots that the commands read
 * touched, so comparing its slots (and no others) keeps the rule "only
 * slots that some command read touches are compared". Each such slot is, against
 * the stored one:
 *   - store_behind: the rebuilt stamp is greater, or the stored slot is
 *     absent (a write was lost);
 *   - store_ahead: the stored stamp is greater (commands outside the range
 *     read, or a write that did not come from the log);
 *   - differs: equal stamps, different values (corruption);
 * plus `counts`: the stored counters against the stored slots (differs).
 * A document that is not stored at all is `missing`.
 *
 * Why a verdict per document and not per slot: an operator acts per
 * document (repair, inspect, restore), and one line per document keeps the
 * report of a badly damaged store readable. The per-kind tallies and first
 * paths are kept so that the line's detail can name the other kinds. */
#ifndef MODEL_DRIFT_H
#define MODEL_DRIFT_H

#include <stdbool.h>
#include <stdint.h>

#include "aggregate.h"
#include "buf.h"

/* In the order of precedence: a document that drifts in several ways is
 * reported as the first kind that applies. */
typedef enum {
  MODEL_DRIFT_NONE = 0,
  MODEL_DRIFT_MISSING,
  MODEL_DRIFT_STORE_BEHIND,
  MODEL_DRIFT_DIFFERS,
  MODEL_DRIFT_STORE_AHEAD
} model_drift_kind_t;
enum { MODEL_DRIFT_KINDS = 5 };

/* "students." + a 64-byte id + ".submission" + NUL fits. */
#define MODEL_DRIFT_PATH_MAX 96
/* Two stamps (command ids up to 128 bytes) and some words. */
#define MODEL_DRIFT_NOTE_MAX 320

typedef struct model_drift {
  model_drift_kind_t kind;           /* the first kind that applies; NONE when nothing drifted */
  uint32_t slots[MODEL_DRIFT_KINDS]; /* slots of each kind (`counts` is one `differs` slot) */
  /* The first slot of each kind in document order (header, then students
   * by ascending id, each member, submission, grade; counts last), and what
   * was found there. Empty when slots[k] is 0. */
  char path[MODEL_DRIFT_KINDS][MODEL_DRIFT_PATH_MAX];
  char note[MODEL_DRIFT_KINDS][MODEL_DRIFT_NOTE_MAX];
  bool unreadable; /* the stored document does not decode (model_drift_unreadable) */
} model_drift_t;

/* Compares rebuilt against stored (NULL: no such document) and fills *out.
 * stored_counts is the `counts` field as stored (NULL: not checked); it is
 * compared with the counters that stored's own slots give. Keys must match.
 * Returns out->kind. Linear in the students of both. */
model_drift_kind_t model_drift_compare(const model_aggregate_t *rebuilt, const model_aggregate_t *stored,
                                       const model_counts_t *stored_counts, model_drift_t *out);

/* Fills *out for a stored document that does not decode, given the
 * decoder's reason ("<path>: <what>"): one `differs` finding whose path is
 * the reason's path ("document" when it names none) and whose note is the
 * reason. Why `differs`: the store holds something no write of the worker
 * makes, which is corruption as far as the audit can tell, and it is never
 * repaired (overwriting it could lose what another writer put there).
 * Returns out->kind. */
model_drift_kind_t model_drift_unreadable(const char *reason, model_drift_t *out);

/* "missing", "store_behind", "differs", "store_ahead" ("none" for NONE). */
const char *model_drift_kind_name(model_drift_kind_t kind);

/* Appends the human-readable detail of a drifted document: the reported
 * kind's count and first finding, then the other kinds found, e.g.
 * "1 slot: stored stamp (3, \"c7\") < rebuilt (5, \"c9\"); also store_ahead: 1 slot, first header";
 * for an unreadable document, "stored document does not decode: <reason>".
 * Raw text: the caller escapes it for JSON. */
void model_drift_detail(const model_drift_t *d, model_buf_t *out);

#endif
