/* model_rec: encoders and decoders of the records (layout in record.h). */
#include "record.h"

#include <math.h>

#include "zero.h"

const uint8_t model_rec_slot_bits[3] = {
    MODEL_REC_F_MEMBER | MODEL_REC_F_ASSIGNED,
    MODEL_REC_F_SUB | MODEL_REC_F_SUBSTAT_MASK | MODEL_REC_F_SUBMITTED_AT | MODEL_REC_F_RETURNED_AT,
    MODEL_REC_F_GRADE};

/* grade flags */
enum { G_POINTS_MASK = 0x03, G_FEEDBACK = 0x04 };
/* header flags */
enum {
  H_PRESENT = MODEL_REC_H_PRESENT,
  H_DELETED = 0x02,
  H_STATUS_SHIFT = 2, /* 2 bits: model_assignment_status_t */
  H_STATUS_MASK = 0x0c,
  H_DUE = 0x10,
  H_POINTS_SHIFT = 5, /* 2 bits: points kind */
  H_POINTS_MASK = 0x60,
};
/* points kinds */
enum { PTS_NULL = 0, PTS_CENTI = 1, PTS_DOUBLE = 2 };

static size_t put_date(uint8_t *p, int64_t ms) {
  return model_rec_put_uv(p, ((uint64_t)ms << 1) ^ (uint64_t)(ms >> 63));
}

static const uint8_t *get_date(const uint8_t *p, int64_t *ms) {
  uint64_t z;
  p = model_rec_get_uv(p, &z);
  *ms = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
  return p;
}

/* Points are mostly whole or two-decimal numbers: store k = points * 100 as a
 * varint when k / 100.0 gives back exactly the same double (2-3 bytes instead
 * of 8), else the raw IEEE bits. -0.0 stays raw so that it survives. */
static unsigned points_kind(double v, uint64_t *centi) {
  if (!(v >= 0 && v < 1e12) || signbit(v)) return PTS_DOUBLE;
  uint64_t k = (uint64_t)(v * 100.0 + 0.5);
  if ((double)k / 100.0 != v) return PTS_DOUBLE;
  *centi = k;
  return PTS_CENTI;
}

static size_t put_points(uint8_t *p, double v, unsigned *kind) {
  uint64_t k = 0;
  *kind = points_kind(v, &k);
  if (*kind == PTS_CENTI) return model_rec_put_uv(p, k);
  memcpy(p, &v, sizeof v);
  return sizeof v;
}

static const uint8_t *get_points(const uint8_t *p, unsigned kind, double *v) {
  if (kind == PTS_CENTI) {
    uint64_t k;
    p = model_rec_get_uv(p, &k);
    *v = (double)k / 100.0;
    return p;
  }
  memcpy(v, p, sizeof *v);
  return p + sizeof *v;
}

/* ---- encoders ---------------------------------------------------------------- */

size_t model_rec_encode_header(uint8_t *p, const model_header_view_t *h) {
  size_t n = 1;
  uint8_t f = H_PRESENT;
  n += model_rec_put_stamp(p + n, h->stamp.version, h->stamp.id, h->stamp.id_len);
  if (h->deleted) {
    f |= H_DELETED;
  } else {
    f |= (uint8_t)(h->status << H_STATUS_SHIFT);
    n += model_rec_put_str(p + n, h->class_id, h->class_len);
    n += model_rec_put_str(p + n, h->title, h->title_len);
    if (h->has_due_at) {
      f |= H_DUE;
      n += put_date(p + n, h->due_at_ms);
    }
    if (h->has_points) {
      unsigned kind;
      n += put_points(p + n, h->points, &kind);
      f |= (uint8_t)(kind << H_POINTS_SHIFT);
    }
  }
  p[0] = f;
  return n;
}

size_t model_rec_encode_submission(uint8_t *p, const model_stamp_t *st, model_submission_status_t status,
                                   bool has_sub_at, int64_t sub_at, bool has_ret_at, int64_t ret_at, uint8_t *bits) {
  size_t n = model_rec_put_stamp(p, st->version, st->id, st->id_len);
  *bits = (uint8_t)(MODEL_REC_F_SUB | (unsigned)status << MODEL_REC_F_SUBSTAT_SHIFT);
  if (has_sub_at) {
    *bits |= MODEL_REC_F_SUBMITTED_AT;
    n += put_date(p + n, sub_at);
  }
  if (has_ret_at) {
    *bits |= MODEL_REC_F_RETURNED_AT;
    n += put_date(p + n, ret_at);
  }
  return n;
}

size_t model_rec_encode_grade(uint8_t *p, const model_stamp_t *st, bool has_points, double points,
                              bool has_feedback, const char *feedback, size_t feedback_len, uint8_t *bits) {
  size_t n = model_rec_put_stamp(p, st->version, st->id, st->id_len);
  size_t gf = n++;
  unsigned kind = PTS_NULL;
  if (has_points) n += put_points(p + n, points, &kind);
  if (has_feedback) n += model_rec_put_str(p + n, feedback, feedback_len);
  p[gf] = (uint8_t)(kind | (has_feedback ? G_FEEDBACK : 0));
  *bits = MODEL_REC_F_GRADE;
  return n;
}

bool model_rec_grade_has_points(const uint8_t *p) {
  return (model_rec_skip_stamp(p)[0] & G_POINTS_MASK) != PTS_NULL;
}

const char *model_rec_grade_feedback(const uint8_t *p, bool *has_points) {
  p = model_rec_skip_stamp(p);
  uint8_t gf = *p++;
  unsigned kind = gf & G_POINTS_MASK;
  *has_points = kind != PTS_NULL;
  if (!(gf & G_FEEDBACK)) return NULL;
  if (kind == PTS_CENTI) p = model_rec_skip_uv(p);
  else if (kind == PTS_DOUBLE) p += sizeof(double);
  return (const char *)p;
}

/* ---- decoders ---------------------------------------------------------------- */

void model_rec_decode_header(const uint8_t *p, model_header_view_t *out) {
  model_zero(out, sizeof *out);
  uint8_t f = *p++;
  if (!(f & H_PRESENT)) return;
  out->present = true;
  p = model_rec_get_stamp(p, &out->stamp);
  if (f & H_DELETED) {
    out->deleted = true;
    return;
  }
  out->status = (model_assignment_status_t)((f & H_STATUS_MASK) >> H_STATUS_SHIFT);
  out->class_id = (const char *)p;
  out->class_len = strlen(out->class_id);
  p += out->class_len + 1;
  out->title = (const char *)p;
  out->title_len = strlen(out->title);
  p += out->title_len + 1;
  if (f & H_DUE) {
    out->has_due_at = true;
    p = get_date(p, &out->due_at_ms);
  }
  unsigned kind = (f & H_POINTS_MASK) >> H_POINTS_SHIFT;
  if (kind != PTS_NULL) {
    out->has_points = true;
    get_points(p, kind, &out->points);
  }
}

static void decode_grade(const uint8_t *p, model_student_view_t *out) {
  out->has_grade = true;
  p = model_rec_get_stamp(p, &out->grade_stamp);
  uint8_t gf = *p++;
  unsigned kind = gf & G_POINTS_MASK;
  if (kind != PTS_NULL) {
    out->has_points = true;
    p = get_points(p, kind, &out->points);
  }
  if (gf & G_FEEDBACK) {
    out->has_feedback = true;
    out->feedback = (const char *)p;
    out->feedback_len = strlen(out->feedback);
  }
}

void model_rec_decode_student(const uint8_t *p, model_student_view_t *out) {
  model_zero(out, sizeof *out);
  out->student = (const char *)p;
  out->student_len = strlen(out->student);
  p += out->student_len + 1;
  uint8_t f = *p++;
  if (f & MODEL_REC_F_MEMBER) {
    out->has_member = true;
    out->assigned = (f & MODEL_REC_F_ASSIGNED) != 0;
    p = model_rec_get_stamp(p, &out->member_stamp);
  }
  if (f & MODEL_REC_F_SUB) {
    out->has_submission = true;
    out->submission_status =
        (model_submission_status_t)((f & MODEL_REC_F_SUBSTAT_MASK) >> MODEL_REC_F_SUBSTAT_SHIFT);
    p = model_rec_get_stamp(p, &out->submission_stamp);
    if (f & MODEL_REC_F_SUBMITTED_AT) {
      out->has_submitted_at = true;
      p = get_date(p, &out->submitted_at_ms);
    }
    if (f & MODEL_REC_F_RETURNED_AT) {
      out->has_returned_at = true;
      p = get_date(p, &out->returned_at_ms);
    }
  }
  if (f & MODEL_REC_F_GRADE) decode_grade(p, out);
}
