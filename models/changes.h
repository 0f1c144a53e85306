/* Change sets: which slots of one aggregate a write changes, and the change
 * event that announces the write (SPEC section 5 "Change events").
 *
 * A model_changes_t names the header (a flag) and, per student, a mask of
 * the student's slots (MODEL_SLOT_*). Records are appended as commands
 * apply, in any order and with repeats; model_changes_normalize() turns
 * them into one record per student in ascending bytewise order of id, the
 * order the event lists them in. The caller owns the struct and its buffer
 * (model_changes_free); nothing here is shared between threads. */
#ifndef MODEL_CHANGES_H
#define MODEL_CHANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"
#include "buf.h"
#include "command.h"

/* Which slots of one aggregate changed: the header, and (student id, slot mask) records. */
typedef struct model_changes {
  model_buf_t students; /* records "id NUL mask": any order, repeats allowed until normalized */
  uint32_t n;           /* records */
  uint32_t last;        /* offset of the last record (a burst on one student ORs into it) */
  bool header;
} model_changes_t;
#define MODEL_CHANGES_INIT {MODEL_BUF_INIT, 0, 0, false}

/* Frees the buffer and leaves c empty (MODEL_CHANGES_INIT). NULL-safe. */
void model_changes_free(model_changes_t *c);
/* Empties c (no header, no records) and keeps its buffer for reuse. */
void model_changes_clear(model_changes_t *c);
/* Records mask for the student id[0..len) (a valid student id: no NUL).
 * The same id as the last record ORs mask into it: a burst of commands on
 * one student adds nothing. A mask of 0 records nothing. When the buffer is
 * full, add normalizes c before growing it, so that repeats never hold
 * much more than one record per student. */
void model_changes_add(model_changes_t *c, const char *id, size_t len, uint8_t mask);
/* Records the slot cmd's type writes: the header for the assignment types,
 * else its student's member, submission or grade slot. */
void model_changes_add_command(model_changes_t *c, const model_command_t *cmd);
/* dst |= src: the header flag and every record of src (dst is left
 * unnormalized when src has records). */
void model_changes_merge(model_changes_t *dst, const model_changes_t *src);
/* Sorted by id (bytewise, a prefix before the ids it starts), one record
 * per id, masks ORed. Allocates nothing when c is already normalized. */
void model_changes_normalize(model_changes_t *c);
/* Iteration over the records in their stored order: pos starts at 0; false
 * at the end. *id points into c (NUL-terminated) until c is next changed. */
bool model_changes_next(const model_changes_t *c, size_t *pos, const char **id, size_t *len, uint8_t *mask);
/* Bytes of heap c owns (for memory bounds). */
size_t model_changes_memory(const model_changes_t *c);

/* The slots of overlay whose stamp is greater than stored's (or absent in stored): exactly what
 * model_aggregate_merge(stored, overlay) changes. Appends to out (normalized on return). Keys must
 * match. Linear in the students of both. */
void model_aggregate_wins(const model_aggregate_t *stored, const model_aggregate_t *overlay, model_changes_t *out);

/* The event's value, appended to out (no newline): {"_id","tenant","assignment","rev","updatedAt",
 * "changed","document"} in that order; "changed" lists "header" if it changed, then per student (in
 * changed's order) "students.<id>.member", ".submission", ".grade" as its mask says; "document" is
 * model_codec_to_json's line without its '\n', and no "document" key at all when include_document is
 * false. changed must be normalized. */
void model_change_event_json(const model_aggregate_t *agg, int64_t rev, int64_t updated_at_ms,
                             const model_changes_t *changed, bool include_document, model_buf_t *out);

#endif
