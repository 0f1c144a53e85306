/* model_rec: the byte encoding of an aggregate's slots.
 *
 * Records are byte strings in a canonical encoding, so that equal slots have
 * equal bytes and aggregates compare, diff and merge records with memcmp and
 * memcpy:
 *
 *   student record = id NUL | flags | [member] | [submission] | [grade]
 *     flags: MEMBER SUB GRADE (which sections follow), ASSIGNED, the
 *            submission status (2 bits), SUBMITTED_AT, RETURNED_AT
 *     member     = stamp
 *     submission = stamp [submittedAt] [returnedAt]
 *     grade      = stamp gflags [points] [feedback NUL]
 *   header record = hflags [stamp [class NUL title NUL [dueAt] [points]]]
 *   stamp = varint version, command id NUL
 *
 * Versions are unsigned LEB128 varints, dates zigzag varints, points
 * centi-points when that is exact (else the raw IEEE bits), strings
 * NUL-terminated: no string of a command may hold U+0000. A record starts
 * with its student id, which is all that the storage (table.h) reads of it.
 *
 * Every function writes into or reads from memory the caller owns; decoded
 * views point into the record they were read from. */
#ifndef MODEL_RECORD_H
#define MODEL_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "aggregate.h"
#include "command.h"

/* The slots of a student, in the order of their sections in its record. */
enum { MODEL_REC_MEMBER = 0, MODEL_REC_SUB = 1, MODEL_REC_GRADE = 2 };

/* Student record flags. */
enum {
  MODEL_REC_F_MEMBER = 0x01, /* MODEL_REC_F_MEMBER << slot: the slot's section is present */
  MODEL_REC_F_SUB = 0x02,
  MODEL_REC_F_GRADE = 0x04,
  MODEL_REC_F_ASSIGNED = 0x08,
  MODEL_REC_F_SUBSTAT_SHIFT = 4, /* 2 bits: model_submission_status_t */
  MODEL_REC_F_SUBSTAT_MASK = 0x30,
  MODEL_REC_F_SUBMITTED_AT = 0x40,
  MODEL_REC_F_RETURNED_AT = 0x80,
};

/* The bits of the flags byte that belong to each slot: a slot's section
 * and these bits are replaced together. */
extern const uint8_t model_rec_slot_bits[3];

/* Header flags: the first byte of the header record. */
enum { MODEL_REC_H_PRESENT = 0x01 };

/* The largest encoded section: a grade with a 128-byte id and 4096 bytes of
 * feedback; a header with a 1024-byte title is smaller. */
#define MODEL_REC_SECTION_MAX (10 + MODEL_CMD_ID_MAX + 1 + 1 + 10 + MODEL_FEEDBACK_MAX + 1 + 64)
/* The largest student record: id NUL, flags, and the three sections. */
#define MODEL_REC_STUDENT_MAX (MODEL_ID_MAX + 2 + 3 * MODEL_REC_SECTION_MAX)

/* ---- primitives, inline: the merge reads a stamp per command ----------------- */

static inline size_t model_rec_put_uv(uint8_t *p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[n++] = (uint8_t)v;
  return n;
}

static inline const uint8_t *model_rec_get_uv(const uint8_t *p, uint64_t *v) {
  uint64_t r = 0;
  unsigned s = 0;
  while (*p & 0x80) {
    r |= (uint64_t)(*p++ & 0x7f) << s;
    s += 7;
  }
  *v = r | (uint64_t)*p++ << s;
  return p;
}

static inline const uint8_t *model_rec_skip_uv(const uint8_t *p) {
  while (*p++ & 0x80) {
  }
  return p;
}

static inline size_t model_rec_put_str(uint8_t *p, const char *s, size_t n) {
  memcpy(p, s, n);
  p[n] = 0;
  return n + 1;
}

static inline size_t model_rec_put_stamp(uint8_t *p, uint64_t version, const char *id, size_t id_len) {
  size_t n = model_rec_put_uv(p, version);
  return n + model_rec_put_str(p + n, id, id_len);
}

/* Reads the stamp at p into *st (its id points into the record); returns
 * the end of the stamp. */
static inline const uint8_t *model_rec_get_stamp(const uint8_t *p, model_stamp_t *st) {
  p = model_rec_get_uv(p, &st->version);
  st->id = (const char *)p;
  st->id_len = strlen(st->id);
  return p + st->id_len + 1;
}

static inline const uint8_t *model_rec_skip_stamp(const uint8_t *p) {
  p = model_rec_skip_uv(p);
  return p + strlen((const char *)p) + 1;
}

/* Is (version, id) greater than the stamp encoded at p? The order of
 * stamps: by version, then by command id bytewise. */
static inline bool model_rec_stamp_greater(uint64_t version, const char *id, const uint8_t *p) {
  uint64_t v;
  p = model_rec_get_uv(p, &v);
  if (version != v) return version > v;
  return strcmp(id, (const char *)p) > 0;
}

/* Offsets in a student record of len bytes whose id is id_len bytes long:
 * sec[0..2] = start of the member, submission and grade sections (where
 * they are or would be), sec[3] = end. Returns the offset of the flags
 * byte. */
static inline size_t model_rec_sections(const uint8_t *rec, size_t id_len, size_t len, size_t sec[4]) {
  size_t flags_off = id_len + 1;
  uint8_t f = rec[flags_off];
  const uint8_t *p = rec + flags_off + 1;
  sec[0] = (size_t)(p - rec);
  if (f & MODEL_REC_F_MEMBER) p = model_rec_skip_stamp(p);
  sec[1] = (size_t)(p - rec);
  if (f & MODEL_REC_F_SUB) {
    p = model_rec_skip_stamp(p);
    if (f & MODEL_REC_F_SUBMITTED_AT) p = model_rec_skip_uv(p);
    if (f & MODEL_REC_F_RETURNED_AT) p = model_rec_skip_uv(p);
  }
  sec[2] = (size_t)(p - rec);
  sec[3] = len;
  return flags_off;
}

/* ---- sections: encoders write at most MODEL_REC_SECTION_MAX bytes ------------ */

/* The header record of h (present); returns its length. */
size_t model_rec_encode_header(uint8_t *p, const model_header_view_t *h);

/* The member, submission and grade sections, each stamp first; each
 * returns its length and sets *bits to the section's flag bits (within
 * model_rec_slot_bits of its slot). */
static inline size_t model_rec_encode_member(uint8_t *p, const model_stamp_t *st, bool assigned, uint8_t *bits) {
  *bits = MODEL_REC_F_MEMBER | (assigned ? MODEL_REC_F_ASSIGNED : 0);
  return model_rec_put_stamp(p, st->version, st->id, st->id_len);
}
size_t model_rec_encode_submission(uint8_t *p, const model_stamp_t *st, model_submission_status_t status,
                                   bool has_sub_at, int64_t sub_at, bool has_ret_at, int64_t ret_at, uint8_t *bits);
size_t model_rec_encode_grade(uint8_t *p, const model_stamp_t *st, bool has_points, double points,
                              bool has_feedback, const char *feedback, size_t feedback_len, uint8_t *bits);

/* Does the grade section at p hold points (not null)? */
bool model_rec_grade_has_points(const uint8_t *p);
/* The feedback of the grade section at p (NUL-terminated, in the record),
 * or NULL when it is null; *has_points as model_rec_grade_has_points. */
const char *model_rec_grade_feedback(const uint8_t *p, bool *has_points);

/* ---- views: decoded in place, pointing into the record ----------------------- */

void model_rec_decode_header(const uint8_t *p, model_header_view_t *out);
void model_rec_decode_student(const uint8_t *rec, model_student_view_t *out);

#endif
