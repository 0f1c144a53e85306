/* model_docsize: the arithmetic of the stored document's BSON size (the
 * document's shape in docsize.h, its encoding in codec_bson.c). */
#include "docsize.h"

#include <string.h>

#include "aggregate.h"
#include "record.h"

/* The BSON framing of one element: type byte, key, NUL. */
#define EL(key_len) (1 + (key_len) + 1)
/* An element holding a string of n bytes: length, bytes, NUL. */
#define STR(key_len, n) (EL(key_len) + 4 + (n) + 1)
/* An element holding an 8-byte value (Int64, Date, Double) or null. */
#define OPT8(key_len, has) (EL(key_len) + ((has) ? 8 : 0))
/* A subdocument's framing: length and terminator. */
#define DOC 5
/* A stamp's fields {v: Int64, c: string}. */
#define STAMP(id_len) (EL(1) + 8 + STR(1, id_len))

size_t model_docsize_base(size_t tenant_len, size_t assignment_len) {
  size_t key_len = tenant_len + 1 + assignment_len;
  size_t counts = EL(6) + DOC + (EL(8) + 4) + (EL(9) + 4) + (EL(8) + 4) + (EL(6) + 4);
  return DOC + STR(3, key_len) + STR(6, tenant_len) + STR(10, assignment_len) + EL(8) + DOC + counts +
         (EL(3) + 8) + (EL(9) + 8);
}

size_t model_docsize_header(const uint8_t *hrec) {
  model_header_view_t h;
  model_rec_decode_header(hrec, &h);
  return model_docsize_header_view(&h);
}

size_t model_docsize_header_view(const model_header_view_t *h) {
  if (!h->present) return EL(6);
  size_t n = EL(6) + DOC + STAMP(h->stamp.id_len);
  if (h->deleted) return n + STR(6, strlen("deleted"));
  return n + STR(5, h->class_len) + STR(5, h->title_len) + STR(6, model_assignment_status_len[h->status]) +
         OPT8(5, h->has_due_at) + OPT8(6, h->has_points);
}

/* The length of the command id of the stamp at p. */
static size_t stamp_id_len(const uint8_t *p) { return strlen((const char *)model_rec_skip_uv(p)); }

size_t model_docsize_slot(int slot, uint8_t flags, const uint8_t *sec) {
  return flags & (MODEL_REC_F_MEMBER << slot) ? model_docsize_slot_idlen(slot, flags, sec, stamp_id_len(sec)) : 0;
}

size_t model_docsize_slot_idlen(int slot, uint8_t flags, const uint8_t *sec, size_t id_len) {
  if (!(flags & (MODEL_REC_F_MEMBER << slot))) return 0;
  size_t stamp = STAMP(id_len);
  switch (slot) {
  case MODEL_REC_MEMBER:
    return EL(6) + DOC + (EL(8) + 1) + stamp;
  case MODEL_REC_SUB: {
    unsigned st = (flags & MODEL_REC_F_SUBSTAT_MASK) >> MODEL_REC_F_SUBSTAT_SHIFT;
    return EL(10) + DOC + STR(6, model_submission_status_len[st]) +
           OPT8(11, flags & MODEL_REC_F_SUBMITTED_AT) + OPT8(10, flags & MODEL_REC_F_RETURNED_AT) + stamp;
  }
  default: {
    bool has_points;
    const char *fb = model_rec_grade_feedback(sec, &has_points);
    return EL(5) + DOC + OPT8(6, has_points) + (fb ? STR(8, strlen(fb)) : EL(8)) + stamp;
  }
  }
}

size_t model_docsize_student(const uint8_t *rec, size_t len) {
  size_t id_len = strlen((const char *)rec), pos[4];
  uint8_t f = rec[model_rec_sections(rec, id_len, len, pos)];
  size_t n = model_docsize_student_frame(id_len);
  for (int slot = MODEL_REC_MEMBER; slot <= MODEL_REC_GRADE; slot++) n += model_docsize_slot(slot, f, rec + pos[slot]);
  return n;
}
