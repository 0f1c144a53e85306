/* The stored document as one JSON line (the file output).
 *
 * Same document as the BSON form, same key order, compact (no spaces).
 * Dates are "YYYY-MM-DDTHH:MM:SS.mmmZ" strings; v, rev and counts are JSON
 * integers; points are the shortest decimal that reads back as the same
 * double (model_codec_json_double). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "codec.h"
#include "timestamp.h"

/* Shortest of %.15g, %.16g, %.17g that strtod reads back as v: 17
 * significant digits always round-trip, most values need 15 or fewer.
 * Whole numbers come out without a fraction ("100"), large or tiny ones in
 * exponent form ("1e+21", "1e-07": valid JSON). NaN and infinities have no
 * JSON form and are written as null (points can never hold them).
 * Assumes the "C" numeric locale, which the worker never changes. */
void model_codec_json_double(model_buf_t *out, double v) {
  if (!isfinite(v)) {
    model_buf_append(out, "null", 4);
    return;
  }
  char s[32];
  int n = 0;
  for (int prec = 15; prec <= 17; prec++) {
    n = snprintf(s, sizeof s, "%.*g", prec, v);
    if (strtod(s, NULL) == v) break;
  }
  model_buf_append(out, s, (size_t)n);
}

static void put_key(model_buf_t *b, const char *k) { model_buf_puts(b, k); }

static void put_date(model_buf_t *b, bool has, int64_t ms) {
  if (!has) {
    model_buf_append(b, "null", 4);
    return;
  }
  char ts[MODEL_TIMESTAMP_LEN + 3];
  ts[0] = '"';
  model_timestamp_format(ms, ts + 1);
  ts[MODEL_TIMESTAMP_LEN + 1] = '"';
  model_buf_append(b, ts, MODEL_TIMESTAMP_LEN + 2);
}

static void put_u64(model_buf_t *b, uint64_t v) {
  char s[24];
  int n = snprintf(s, sizeof s, "%llu", (unsigned long long)v);
  model_buf_append(b, s, (size_t)n);
}

static void put_i64(model_buf_t *b, int64_t v) {
  char s[24];
  int n = snprintf(s, sizeof s, "%lld", (long long)v);
  model_buf_append(b, s, (size_t)n);
}

static void put_stamp(model_buf_t *b, const model_stamp_t *st) {
  put_key(b, ",\"v\":");
  put_u64(b, st->version);
  put_key(b, ",\"c\":");
  model_buf_json_string(b, st->id, st->id_len);
  model_buf_putc(b, '}');
}

static void put_points(model_buf_t *b, bool has, double v) {
  if (has) model_codec_json_double(b, v);
  else model_buf_append(b, "null", 4);
}

static void put_header(model_buf_t *b, const model_aggregate_t *agg) {
  model_header_view_t h;
  model_aggregate_header(agg, &h);
  put_key(b, ",\"header\":");
  if (!h.present) {
    model_buf_append(b, "null", 4);
    return;
  }
  if (h.deleted) {
    put_key(b, "{\"status\":\"deleted\"");
  } else {
    put_key(b, "{\"class\":");
    model_buf_json_string(b, h.class_id, h.class_len);
    put_key(b, ",\"title\":");
    model_buf_json_string(b, h.title, h.title_len);
    put_key(b, ",\"status\":\"");
    put_key(b, model_assignment_status_name(h.status));
    put_key(b, "\",\"dueAt\":");
    put_date(b, h.has_due_at, h.due_at_ms);
    put_key(b, ",\"points\":");
    put_points(b, h.has_points, h.points);
  }
  put_stamp(b, &h.stamp);
}

static void put_student(model_buf_t *b, const model_student_view_t *s) {
  model_buf_json_string(b, s->student, s->student_len);
  model_buf_putc(b, ':');
  char sep = '{';
  if (s->has_member) {
    model_buf_putc(b, sep);
    put_key(b, s->assigned ? "\"member\":{\"assigned\":true" : "\"member\":{\"assigned\":false");
    put_stamp(b, &s->member_stamp);
    sep = ',';
  }
  if (s->has_submission) {
    model_buf_putc(b, sep);
    put_key(b, "\"submission\":{\"status\":\"");
    put_key(b, model_submission_status_name(s->submission_status));
    put_key(b, "\",\"submittedAt\":");
    put_date(b, s->has_submitted_at, s->submitted_at_ms);
    put_key(b, ",\"returnedAt\":");
    put_date(b, s->has_returned_at, s->returned_at_ms);
    put_stamp(b, &s->submission_stamp);
    sep = ',';
  }
  if (s->has_grade) {
    model_buf_putc(b, sep);
    put_key(b, "\"grade\":{\"points\":");
    put_points(b, s->has_points, s->points);
    put_key(b, ",\"feedback\":");
    if (s->has_feedback) model_buf_json_string(b, s->feedback, s->feedback_len);
    else model_buf_append(b, "null", 4);
    put_stamp(b, &s->grade_stamp);
    sep = ',';
  }
  if (sep == '{') model_buf_putc(b, '{'); /* a student always has a slot; keep the JSON whole anyway */
  model_buf_putc(b, '}');
}

void model_codec_to_json(const model_aggregate_t *agg, int64_t rev, int64_t updated_at_ms, model_buf_t *out) {
  size_t klen, tlen, alen;
  const char *key = model_aggregate_key(agg, &klen);
  const char *tenant = model_aggregate_tenant(agg, &tlen);
  const char *assignment = model_aggregate_assignment(agg, &alen);
  put_key(out, "{\"_id\":");
  model_buf_json_string(out, key, klen);
  put_key(out, ",\"tenant\":");
  model_buf_json_string(out, tenant, tlen);
  put_key(out, ",\"assignment\":");
  model_buf_json_string(out, assignment, alen);
  put_header(out, agg);
  put_key(out, ",\"students\":{");
  size_t n = model_aggregate_student_count(agg);
  for (size_t i = 0; i < n; i++) {
    model_student_view_t s;
    model_aggregate_student(agg, i, &s);
    if (i) model_buf_putc(out, ',');
    put_student(out, &s);
  }
  model_counts_t c = model_aggregate_counts(agg);
  model_buf_printf(out, "},\"counts\":{\"assigned\":%d,\"submitted\":%d,\"returned\":%d,\"graded\":%d},\"rev\":",
                   (int)c.assigned, (int)c.submitted, (int)c.returned, (int)c.graded);
  put_i64(out, rev);
  put_key(out, ",\"updatedAt\":");
  put_date(out, true, updated_at_ms);
  model_buf_append(out, "}\n", 2);
}
