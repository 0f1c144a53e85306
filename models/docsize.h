/* model_docsize: the BSON size of an aggregate's stored document
 * (codec.h, model_codec_to_bson), computed from its records (record.h)
 * without encoding anything, so that the merge can keep it per slot and
 * refuse a change that would make the document pass the store's limit.
 *
 * Every field of the document has a size fixed by what the records hold:
 * strings by their lengths, numbers, dates and booleans by their BSON type
 * (Int64, Date, Double: 8 bytes; Int32: 4; Boolean: 1; null: 0), and
 * `counts`, `rev` and `updatedAt` by their types alone, so that the size
 * is the same whatever revision and time a write gives the document. The
 * document is
 *
 *   base (_id, tenant, assignment, an empty `students`, counts, rev,
 *         updatedAt, the framing) + the header element
 *   + for each student: its element's frame + its slots' elements
 *
 * and each term below is one of those. The unit tests hold the sum equal to
 * the codec's encoding on random aggregates. */
#ifndef MODEL_DOCSIZE_H
#define MODEL_DOCSIZE_H

#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"

/* The document with no header element and no students (an empty
 * `students` subdocument). */
size_t model_docsize_base(size_t tenant_len, size_t assignment_len);

/* The `header` element for the header record hrec (null when absent). */
size_t model_docsize_header(const uint8_t *hrec);
/* The same for a header in its decoded form (present or not), without
 * encoding it: the merge sizes a command's header from the view it
 * encodes. Its lengths are the strlen of its strings. */
size_t model_docsize_header_view(const model_header_view_t *h);

/* A student's element in `students` without its slots: its key and its
 * subdocument's framing. */
static inline size_t model_docsize_student_frame(size_t id_len) {
  return 1 + id_len + 1 /* type, key, NUL */ + 4 + 1 /* length, terminator */;
}

/* The element of slot `slot` (MODEL_REC_MEMBER, _SUB or _GRADE) in a
 * student's subdocument, for the section sec of a record whose flags byte
 * is flags; 0 when the flags say the slot is absent. */
size_t model_docsize_slot(int slot, uint8_t flags, const uint8_t *sec);
/* model_docsize_slot for a section whose stamp's command id is id_len
 * bytes long (its strlen), as the caller knows it from a command or a
 * decoded stamp, so that the section is not read for it. */
size_t model_docsize_slot_idlen(int slot, uint8_t flags, const uint8_t *sec, size_t id_len);

/* A student's whole element in `students`, for its record of len bytes. */
size_t model_docsize_student(const uint8_t *rec, size_t len);

#endif
