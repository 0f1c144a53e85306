/* The aggregate of one assignment and its merge.
 *
 * An aggregate holds entity slots, each (stamp, value) with
 * stamp = (version, command id): the header, and per student a member,
 * submission and grade slot. A command replaces its slot iff its stamp is
 * greater; so apply/merge are idempotent, commutative and associative, and
 * everything above this layer (batching, retries, reloads) may re-apply
 * freely.
 *
 * The representation is private (aggregate.c keeps the rules, table.h the
 * storage, record.h the encoding) so that it can be as compact as the memory
 * budget needs; the codecs (codec.h) and tests use the accessors below. */
#ifndef MODEL_AGGREGATE_H
#define MODEL_AGGREGATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "command.h"

typedef struct model_aggregate model_aggregate_t;

/* STALE: the command changed nothing (its slot holds a greater or equal
 * stamp). APPLIED: it replaced its slot. TOO_LARGE: it would have replaced
 * its slot, but the document would then pass the size it was given
 * (model_aggregate_apply_within); nothing changed. */
typedef enum { MODEL_APPLY_STALE = 0, MODEL_APPLY_APPLIED = 1, MODEL_APPLY_TOO_LARGE = 2 } model_apply_result_t;

typedef struct model_counts {
  int32_t assigned, submitted, returned, graded;
} model_counts_t;

/* A new empty aggregate (no header, no students) for (tenant, assignment);
 * both must be valid ids. Never NULL (out of memory aborts, see oom.h). The caller
 * owns it; model_aggregate_destroy(NULL) is safe. */
model_aggregate_t *model_aggregate_new(const char *tenant, size_t tenant_len, const char *assignment,
                                       size_t assignment_len);
void model_aggregate_destroy(model_aggregate_t *agg);

/* "<tenant>/<assignment>", NUL-terminated, owned by agg. */
const char *model_aggregate_key(const model_aggregate_t *agg, size_t *len);
const char *model_aggregate_tenant(const model_aggregate_t *agg, size_t *len);
const char *model_aggregate_assignment(const model_aggregate_t *agg, size_t *len);
/* Whether agg's key is (tenant, assignment): one call, no library calls,
 * for the lookups of a table of aggregates. */
bool model_aggregate_has_key(const model_aggregate_t *agg, const char *tenant, size_t tenant_len,
                             const char *assignment, size_t assignment_len);

/* Applies a validated command whose (tenant, assignment) is agg's key (the
 * caller routes commands; a mismatch is a programming error and asserts). */
model_apply_result_t model_aggregate_apply(model_aggregate_t *agg, const model_command_t *cmd);

/* The same, but a command that would make the stored document's BSON size
 * (model_aggregate_doc_size) pass max_bytes changes nothing and returns
 * MODEL_APPLY_TOO_LARGE: the store refuses a document past its limit, and
 * the aggregate keeps every change that fits. A stale command is STALE
 * whatever its size. *would_be is the document's size after the command
 * (its size now when STALE). */
model_apply_result_t model_aggregate_apply_within(model_aggregate_t *agg, const model_command_t *cmd,
                                                  size_t max_bytes, size_t *would_be);

/* The BSON size of the document model_codec_to_bson writes for agg, for any
 * rev and updatedAt (their sizes are fixed), kept up to date as slots
 * change (docsize.h): O(1). */
size_t model_aggregate_doc_size(const model_aggregate_t *agg);

/* Slot-wise join: every slot of src whose stamp is greater than dst's
 * replaces dst's. Returns true if dst changed. Keys must match. */
bool model_aggregate_merge(model_aggregate_t *dst, const model_aggregate_t *src);

/* The same join, unless the merged document's BSON size would pass
 * max_bytes: then dst is left as it was and MODEL_APPLY_TOO_LARGE is
 * returned (an overlay merged into a stored document must not make it one
 * the store refuses). APPLIED when dst changed, STALE when it did not.
 * *would_be is the merged document's size (exact when TOO_LARGE, dst's
 * size otherwise after the merge). Costs a merge; a second one into a copy
 * only when the two sizes together could pass max_bytes. */
model_apply_result_t model_aggregate_merge_within(model_aggregate_t *dst, const model_aggregate_t *src,
                                                  size_t max_bytes, size_t *would_be);

/* A student's slots, as bits of a mask (models/changes.h lists them in this
 * order). */
enum { MODEL_SLOT_MEMBER = 1, MODEL_SLOT_SUBMISSION = 2, MODEL_SLOT_GRADE = 4 };

/* The slots of overlay whose stamp is greater than stored's (or absent in
 * stored): exactly what model_aggregate_merge(stored, overlay) changes.
 * Calls fn for each student of overlay with such slots, in ascending order
 * of id, with their MODEL_SLOT_* mask; returns whether the header wins.
 * Keys must match. Linear in the students of both. (changes.h:
 * model_aggregate_wins gathers them in a change set.) */
typedef void (*model_slot_win_fn)(void *ctx, const char *id, size_t len, uint8_t mask);
bool model_aggregate_each_win(const model_aggregate_t *stored, const model_aggregate_t *overlay,
                              model_slot_win_fn fn, void *ctx);

/* True if a and b hold the same slots (stamps and values). */
bool model_aggregate_equal(const model_aggregate_t *a, const model_aggregate_t *b);

/* The students whose slots differ between two aggregates of the same key
 * (in `to` and not in `from`, or with different slots), in ascending order
 * of their id: fn(ctx, to, i) with i the student's index in `to` (for
 * model_aggregate_student). Returns whether the header differs. Linear in
 * the students of both. Meant for partial writes: diff the state last
 * written (a clone) against the current one to know which students' fields
 * to set. Students are never removed, so every difference is in `to`. */
bool model_aggregate_diff(const model_aggregate_t *from, const model_aggregate_t *to,
                          void (*fn)(void *ctx, const model_aggregate_t *to, size_t i), void *ctx);

/* The index (for model_aggregate_student) of the student whose id is
 * id[0..len), by binary search over the sorted students: O(log^2 n).
 * False if agg has no such student. Partial writes use it to turn the ids
 * touched since the last write into indexes of the snapshot. */
bool model_aggregate_find_student(const model_aggregate_t *agg, const char *id, size_t len, size_t *index);

/* Removes every slot of the student id[0..len) (an erasure, erased.h): the
 * one change that takes a student out, so it is not a merge and never
 * happens by stamps. False when agg has no such student. Linear in the
 * students. */
bool model_aggregate_remove_student(model_aggregate_t *agg, const char *id, size_t len);

/* True when agg holds no slot: no header and no student (no document). */
bool model_aggregate_is_empty(const model_aggregate_t *agg);

/* A deep copy; never NULL (out of memory aborts, see oom.h). */
model_aggregate_t *model_aggregate_clone(const model_aggregate_t *agg);

/* Derived counters, recomputed from the slots: model_counts_add_slot over
 * every student. */
model_counts_t model_aggregate_counts(const model_aggregate_t *agg);

/* Bytes of heap this aggregate owns (for memory bounds). */
size_t model_aggregate_memory(const model_aggregate_t *agg);

/* --- read access for the codecs ------------------------------------------ */

typedef struct model_stamp {
  uint64_t version;
  const char *id; /* command id, NUL-terminated, owned by the aggregate */
  size_t id_len;  /* strlen(id): command ids hold no NUL, and the document's
                     size is counted from this length */
} model_stamp_t;

/* The order of stamps: by version, then by command id bytewise (strcmp). <0, 0 or >0 as a is less than, equal to or greater
 * than b. */
int model_stamp_compare(const model_stamp_t *a, const model_stamp_t *b);

typedef struct model_header_view {
  bool present;
  bool deleted; /* {status: "deleted"}: no other value fields */
  model_stamp_t stamp;
  const char *class_id;
  size_t class_len;
  const char *title;
  size_t title_len;
  model_assignment_status_t status;
  bool has_due_at, has_points;
  int64_t due_at_ms;
  double points;
} model_header_view_t;

typedef struct model_student_view {
  const char *student;
  size_t student_len;
  bool has_member, has_submission, has_grade;
  model_stamp_t member_stamp, submission_stamp, grade_stamp;
  bool assigned;
  model_submission_status_t submission_status;
  bool has_submitted_at, has_returned_at;
  int64_t submitted_at_ms, returned_at_ms;
  bool has_points, has_feedback;
  double points;
  const char *feedback;
  size_t feedback_len;
} model_student_view_t;

/* The counters' rule for one student, added to *c: assigned counts the
 * students whose member slot says assigned; of those, submitted and
 * returned go by their submission status, and graded counts a grade whose
 * points are not null. model_counts_add_slot takes what the rule reads, so
 * that a caller reading records' flags and a caller holding a student's
 * view apply the same rule; both are inline, as they run once for every
 * student a document's counters are taken from. */
static inline void model_counts_add_slot(model_counts_t *c, bool assigned, bool has_submission,
                                         model_submission_status_t submission_status, bool graded) {
  if (!assigned) return;
  c->assigned++;
  if (has_submission) {
    c->submitted += submission_status == MODEL_SUBMISSION_SUBMITTED;
    c->returned += submission_status == MODEL_SUBMISSION_RETURNED;
  }
  c->graded += graded;
}

static inline void model_counts_add(model_counts_t *c, const model_student_view_t *s) {
  model_counts_add_slot(c, s->has_member && s->assigned, s->has_submission, s->submission_status,
                        s->has_grade && s->has_points);
}

void model_aggregate_header(const model_aggregate_t *agg, model_header_view_t *out);
size_t model_aggregate_student_count(const model_aggregate_t *agg);
/* Students in ascending bytewise order of their id; i < student_count. Views
 * point into agg and stay valid until agg is next changed. */
void model_aggregate_student(const model_aggregate_t *agg, size_t i, model_student_view_t *out);

/* --- write access for decoding stored documents -------------------------- */

/* Sets a slot directly (used by the BSON decoder). Same rule as apply: the
 * slot is replaced only if the stamp is greater. Return true if it changed.
 * Views' stamp/strings are copied. */
bool model_aggregate_put_header(model_aggregate_t *agg, const model_header_view_t *h);
bool model_aggregate_put_student(model_aggregate_t *agg, const model_student_view_t *s);

#endif
