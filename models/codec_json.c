/* The stored document as one JSON line (the file output).
 *
 * Same document as the BSON form, same key order, compact (no spaces).
 * Dates are "YYYY-MM-DDTHH:MM:SS.mmmZ" strings; v, rev and counts are JSON
 * integers; points are the shortest decimal that reads back as the same
 * double (model_codec_json_double).
 *
 * The document is written in place: each group of fields (the head, the
 * header, one student, the tail) reserves an upper bound of its size once
 * (every string byte counted as a six-byte escape, every number at its
 * longest) and is then written with plain copies, the literals at their
 * compile-time lengths and the numbers by numfmt.h, never printf. */
#include <string.h>

#include "codec.h"
#include "numfmt.h"
#include "timestamp.h"

/* The longest fixed text of one group: literals, numbers, dates, status
 * names and the strings' quotes, with room to spare. STRINGS_MAX adds the
 * strings' own bytes, each at its longest escape. */
enum { GROUP_FIXED_MAX = 512 };
#define STRINGS_MAX(n) (6 * (size_t)(n))

/* Copies a string literal (its length known at compile time) to p and advances p. */
#define PUT_LIT(p, lit) (memcpy((p), (lit), sizeof(lit) - 1), (p) += sizeof(lit) - 1)

/* The double's text, or null: NaN and the infinities have no JSON form
 * (points can never hold them). */
static char *put_double(char *p, double v) {
  size_t n = model_numfmt_double(p, v);
  if (n) return p + n;
  PUT_LIT(p, "null");
  return p;
}

/* The first of "%.15g", "%.16g", "%.17g" that strtod reads back as v: 17
 * significant digits always round-trip, most values need 15 or fewer.
 * Whole numbers come out without a fraction ("100"), large or tiny ones in
 * exponent form ("1e+21", "1e-07": valid JSON); numfmt.h writes exactly
 * that text. */
void model_codec_json_double(model_buf_t *out, double v) {
  char *p = model_buf_space(out, MODEL_NUMFMT_DOUBLE_MAX);
  model_buf_commit(out, put_double(p, v));
}

static char *put_str(char *p, const char *s, size_t n) { return model_buf_json_quote(p, s, n); }

/* A name from a fixed table (statuses): no escapes needed, and the group
 * bound counts it among GROUP_FIXED_MAX. */
static char *put_name(char *p, const char *s) {
  while (*s) *p++ = *s++; /* a few bytes: a loop costs less than strlen and memcpy */
  return p;
}

static char *put_date(char *p, bool has, int64_t ms) {
  if (!has) {
    PUT_LIT(p, "null");
    return p;
  }
  *p++ = '"';
  p += model_timestamp_format(ms, p); /* its NUL lands where the quote goes */
  *p++ = '"';
  return p;
}

static char *put_stamp(char *p, const model_stamp_t *st) {
  PUT_LIT(p, ",\"v\":");
  p += model_numfmt_u64(p, st->version);
  PUT_LIT(p, ",\"c\":");
  p = put_str(p, st->id, st->id_len);
  *p++ = '}';
  return p;
}

static char *put_points(char *p, bool has, double v) {
  if (has) return put_double(p, v);
  PUT_LIT(p, "null");
  return p;
}

static void put_header(model_buf_t *b, const model_aggregate_t *agg) {
  model_header_view_t h;
  model_aggregate_header(agg, &h);
  size_t strings = h.present ? h.stamp.id_len : 0;
  if (h.present && !h.deleted) strings += h.class_len + h.title_len;
  char *p = model_buf_space(b, GROUP_FIXED_MAX + STRINGS_MAX(strings));
  PUT_LIT(p, ",\"header\":");
  if (!h.present) {
    PUT_LIT(p, "null");
    model_buf_commit(b, p);
    return;
  }
  if (h.deleted) {
    PUT_LIT(p, "{\"status\":\"deleted\"");
  } else {
    PUT_LIT(p, "{\"class\":");
    p = put_str(p, h.class_id, h.class_len);
    PUT_LIT(p, ",\"title\":");
    p = put_str(p, h.title, h.title_len);
    PUT_LIT(p, ",\"status\":\"");
    p = put_name(p, model_assignment_status_name(h.status));
    PUT_LIT(p, "\",\"dueAt\":");
    p = put_date(p, h.has_due_at, h.due_at_ms);
    PUT_LIT(p, ",\"points\":");
    p = put_points(p, h.has_points, h.points);
  }
  p = put_stamp(p, &h.stamp);
  model_buf_commit(b, p);
}

/* One student, after a ',' unless first. */
static void put_student(model_buf_t *b, const model_student_view_t *s, bool first) {
  size_t strings = s->student_len + (s->has_member ? s->member_stamp.id_len : 0) +
                   (s->has_submission ? s->submission_stamp.id_len : 0) +
                   (s->has_grade ? s->grade_stamp.id_len + (s->has_feedback ? s->feedback_len : 0) : 0);
  char *p = model_buf_space(b, GROUP_FIXED_MAX + STRINGS_MAX(strings));
  if (!first) *p++ = ',';
  p = put_str(p, s->student, s->student_len);
  *p++ = ':';
  char sep = '{';
  if (s->has_member) {
    *p++ = sep;
    if (s->assigned) PUT_LIT(p, "\"member\":{\"assigned\":true");
    else PUT_LIT(p, "\"member\":{\"assigned\":false");
    p = put_stamp(p, &s->member_stamp);
    sep = ',';
  }
  if (s->has_submission) {
    *p++ = sep;
    PUT_LIT(p, "\"submission\":{\"status\":\"");
    p = put_name(p, model_submission_status_name(s->submission_status));
    PUT_LIT(p, "\",\"submittedAt\":");
    p = put_date(p, s->has_submitted_at, s->submitted_at_ms);
    PUT_LIT(p, ",\"returnedAt\":");
    p = put_date(p, s->has_returned_at, s->returned_at_ms);
    p = put_stamp(p, &s->submission_stamp);
    sep = ',';
  }
  if (s->has_grade) {
    *p++ = sep;
    PUT_LIT(p, "\"grade\":{\"points\":");
    p = put_points(p, s->has_points, s->points);
    PUT_LIT(p, ",\"feedback\":");
    if (s->has_feedback) p = put_str(p, s->feedback, s->feedback_len);
    else PUT_LIT(p, "null");
    p = put_stamp(p, &s->grade_stamp);
    sep = ',';
  }
  if (sep == '{') *p++ = '{'; /* a student always has a slot; keep the JSON whole anyway */
  *p++ = '}';
  model_buf_commit(b, p);
}

void model_codec_json_key_fields(const model_aggregate_t *agg, model_buf_t *out) {
  size_t klen, tlen, alen;
  const char *key = model_aggregate_key(agg, &klen);
  const char *tenant = model_aggregate_tenant(agg, &tlen);
  const char *assignment = model_aggregate_assignment(agg, &alen);
  char *p = model_buf_space(out, GROUP_FIXED_MAX + STRINGS_MAX(klen + tlen + alen));
  PUT_LIT(p, "{\"_id\":");
  p = put_str(p, key, klen);
  PUT_LIT(p, ",\"tenant\":");
  p = put_str(p, tenant, tlen);
  PUT_LIT(p, ",\"assignment\":");
  p = put_str(p, assignment, alen);
  model_buf_commit(out, p);
}

void model_codec_to_json(const model_aggregate_t *agg, int64_t rev, int64_t updated_at_ms, model_buf_t *out) {
  model_codec_json_key_fields(agg, out);
  put_header(out, agg);
  model_buf_append(out, ",\"students\":{", 13);
  size_t n = model_aggregate_student_count(agg);
  model_counts_t c = {0, 0, 0, 0};
  for (size_t i = 0; i < n; i++) {
    model_student_view_t s;
    model_aggregate_student(agg, i, &s);
    put_student(out, &s, i == 0);
    model_counts_add(&c, &s);
  }
  char *p = model_buf_space(out, GROUP_FIXED_MAX);
  PUT_LIT(p, "},\"counts\":{\"assigned\":");
  p += model_numfmt_i64(p, c.assigned);
  PUT_LIT(p, ",\"submitted\":");
  p += model_numfmt_i64(p, c.submitted);
  PUT_LIT(p, ",\"returned\":");
  p += model_numfmt_i64(p, c.returned);
  PUT_LIT(p, ",\"graded\":");
  p += model_numfmt_i64(p, c.graded);
  PUT_LIT(p, "},\"rev\":");
  p += model_numfmt_i64(p, rev);
  PUT_LIT(p, ",\"updatedAt\":");
  p = put_date(p, true, updated_at_ms);
  PUT_LIT(p, "}\n");
  model_buf_commit(out, p);
}
