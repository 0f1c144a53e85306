/* The stored document as BSON.
 *
 * Encoding writes keys in one fixed order (_id, tenant, assignment, header,
 * students, counts, rev, updatedAt; each slot's fields in a fixed order
 * too), students in ascending id order, every slot field present (null
 * where the value is null), so that encode -> decode -> encode is
 * byte-identical.
 *
 * Decoding validates the shape strictly enough that whatever it accepts can
 * be merged and encoded again (ids, command ids, string lengths and UTF-8,
 * enum names, version range, dates within year 0001..9999), and is lenient
 * where that costs nothing: unknown keys are ignored (a newer writer may add
 * fields), `v` and `rev` may be Int32 as well as Int64, `points` may be any
 * BSON number, optional value fields may be absent (= null). `counts` must
 * have its shape but its values are not trusted: they are always recomputed
 * from the slots. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "codec.h"
#include "keys.h"
#include "oom.h"
#include "timestamp.h"

/* ---- encoding ------------------------------------------------------------------ */

static bool append_stamp(bson_t *doc, const model_stamp_t *st) {
  return BSON_APPEND_INT64(doc, "v", (int64_t)st->version) &&
         bson_append_utf8(doc, "c", 1, st->id, (int)st->id_len);
}

static bool append_date_or_null(bson_t *doc, const char *key, bool has, int64_t ms) {
  return has ? bson_append_date_time(doc, key, -1, ms) : bson_append_null(doc, key, -1);
}

static bool append_header(bson_t *out, const model_aggregate_t *agg) {
  model_header_view_t h;
  model_aggregate_header(agg, &h);
  if (!h.present) return BSON_APPEND_NULL(out, "header");
  bson_t d;
  bool ok = BSON_APPEND_DOCUMENT_BEGIN(out, "header", &d);
  if (!ok) return false;
  if (h.deleted) {
    ok = BSON_APPEND_UTF8(&d, "status", "deleted");
  } else {
    ok = bson_append_utf8(&d, "class", -1, h.class_id, (int)h.class_len) &&
         bson_append_utf8(&d, "title", -1, h.title, (int)h.title_len) &&
         BSON_APPEND_UTF8(&d, "status", model_assignment_status_name(h.status)) &&
         append_date_or_null(&d, "dueAt", h.has_due_at, h.due_at_ms) &&
         (h.has_points ? BSON_APPEND_DOUBLE(&d, "points", h.points) : BSON_APPEND_NULL(&d, "points"));
  }
  ok = ok && append_stamp(&d, &h.stamp);
  return bson_append_document_end(out, &d) && ok;
}

static bool append_student(bson_t *students, const model_student_view_t *s) {
  bson_t sd, d;
  if (!bson_append_document_begin(students, s->student, (int)s->student_len, &sd)) return false;
  bool ok = true;
  if (s->has_member) {
    ok = ok && BSON_APPEND_DOCUMENT_BEGIN(&sd, "member", &d);
    if (ok) {
      ok = BSON_APPEND_BOOL(&d, "assigned", s->assigned) && append_stamp(&d, &s->member_stamp);
      ok = bson_append_document_end(&sd, &d) && ok;
    }
  }
  if (s->has_submission) {
    ok = ok && BSON_APPEND_DOCUMENT_BEGIN(&sd, "submission", &d);
    if (ok) {
      ok = BSON_APPEND_UTF8(&d, "status", model_submission_status_name(s->submission_status)) &&
           append_date_or_null(&d, "submittedAt", s->has_submitted_at, s->submitted_at_ms) &&
           append_date_or_null(&d, "returnedAt", s->has_returned_at, s->returned_at_ms) &&
           append_stamp(&d, &s->submission_stamp);
      ok = bson_append_document_end(&sd, &d) && ok;
    }
  }
  if (s->has_grade) {
    ok = ok && BSON_APPEND_DOCUMENT_BEGIN(&sd, "grade", &d);
    if (ok) {
      ok = (s->has_points ? BSON_APPEND_DOUBLE(&d, "points", s->points) : BSON_APPEND_NULL(&d, "points")) &&
           (s->has_feedback ? bson_append_utf8(&d, "feedback", -1, s->feedback, (int)s->feedback_len)
                            : BSON_APPEND_NULL(&d, "feedback")) &&
           append_stamp(&d, &s->grade_stamp);
      ok = bson_append_document_end(&sd, &d) && ok;
    }
  }
  return bson_append_document_end(students, &sd) && ok;
}

/* counts, rev and updatedAt: the fields every write sets. */
static bool append_tail(bson_t *out, const model_aggregate_t *agg, int64_t rev, int64_t updated_at_ms) {
  model_counts_t c = model_aggregate_counts(agg);
  bson_t counts;
  if (!BSON_APPEND_DOCUMENT_BEGIN(out, "counts", &counts)) return false;
  bool ok = BSON_APPEND_INT32(&counts, "assigned", c.assigned) && BSON_APPEND_INT32(&counts, "submitted", c.submitted) &&
            BSON_APPEND_INT32(&counts, "returned", c.returned) && BSON_APPEND_INT32(&counts, "graded", c.graded);
  ok = bson_append_document_end(out, &counts) && ok;
  return ok && BSON_APPEND_INT64(out, "rev", rev) && BSON_APPEND_DATE_TIME(out, "updatedAt", updated_at_ms);
}

bool model_codec_to_bson(const model_aggregate_t *agg, int64_t rev, int64_t updated_at_ms, bson_t *out) {
  size_t klen, tlen, alen;
  const char *key = model_aggregate_key(agg, &klen);
  const char *tenant = model_aggregate_tenant(agg, &tlen);
  const char *assignment = model_aggregate_assignment(agg, &alen);
  bool ok = bson_append_utf8(out, "_id", 3, key, (int)klen) && bson_append_utf8(out, "tenant", 6, tenant, (int)tlen) &&
            bson_append_utf8(out, "assignment", 10, assignment, (int)alen) && append_header(out, agg);
  if (!ok) return false;

  bson_t students;
  if (!BSON_APPEND_DOCUMENT_BEGIN(out, "students", &students)) return false;
  size_t n = model_aggregate_student_count(agg);
  for (size_t i = 0; i < n && ok; i++) {
    model_student_view_t s;
    model_aggregate_student(agg, i, &s);
    ok = append_student(&students, &s);
  }
  ok = bson_append_document_end(out, &students) && ok;

  return ok && append_tail(out, agg, rev, updated_at_ms);
}

bool model_codec_to_bson_set(const model_aggregate_t *agg, const size_t *students, size_t nstudents, bool header,
                             int64_t rev, int64_t updated_at_ms, bson_t *out) {
  /* The dotted path "students.<id>" is safe to build from the id as it is:
   * student ids are restricted to [A-Za-z0-9_-] (models/command.c validates
   * them, and so does the decoder for stored ones), so an id can contain
   * neither '.' (which would address a nested field) nor a leading '$'
   * (an operator), nor a NUL. */
  char path[sizeof "students." + MODEL_ID_MAX];
  bool ok = true;
  for (size_t k = 0; k < nstudents && ok; k++) {
    model_student_view_t s;
    model_aggregate_student(agg, students[k], &s);
    if (s.student_len > MODEL_ID_MAX) return false;
    memcpy(path, "students.", 9);
    memcpy(path + 9, s.student, s.student_len);
    path[9 + s.student_len] = '\0';
    /* append_student names the subdocument by the id; give it the path. */
    s.student = path;
    s.student_len += 9;
    ok = append_student(out, &s);
  }
  if (ok && header) ok = append_header(out, agg);
  return ok && append_tail(out, agg, rev, updated_at_ms);
}

/* ---- decoding ------------------------------------------------------------------ */

/* Year 0001-01-01T00:00:00.000Z and 9999-12-31T23:59:59.999Z in ms. */
#define MIN_DATE_MS (-62135596800000LL)
#define MAX_DATE_MS (253402300799999LL)

static bool fail(model_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool fail(model_error_t *err, const char *fmt, ...) {
  if (err) {
    err->code = MODEL_ERROR_BAD_DOCUMENT;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->message, sizeof err->message, fmt, ap);
    va_end(ap);
  }
  return false;
}

static bool is_id(const char *s, size_t n) {
  if (n < 1 || n > MODEL_ID_MAX) return false;
  for (size_t i = 0; i < n; i++) {
    char c = s[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
      return false;
  }
  return true;
}

/* A string field: ok = present and UTF-8 (BSON strings carry a length, so
 * also refuse an embedded NUL). */
static bool get_utf8(const bson_t *doc, const char *path, const char *key, const char **s, size_t *n,
                     model_error_t *err) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, doc, key)) return fail(err, "%s%s: missing", path, key);
  if (!BSON_ITER_HOLDS_UTF8(&it)) return fail(err, "%s%s: expected a string", path, key);
  uint32_t len;
  *s = bson_iter_utf8(&it, &len);
  *n = len;
  if (!bson_utf8_validate(*s, len, false)) return fail(err, "%s%s: invalid UTF-8", path, key);
  return true;
}

/* Finds an optional field; *null is set when it is absent or null. */
static bool find_opt(const bson_t *doc, const char *key, bson_iter_t *it, bool *null) {
  *null = !bson_iter_init_find(it, doc, key) || BSON_ITER_HOLDS_NULL(it);
  return true;
}

static bool get_stamp(const bson_t *doc, const char *path, model_stamp_t *st, model_error_t *err) {
  bson_iter_t it;
  if (!bson_iter_init_find(&it, doc, "v")) return fail(err, "%sv: missing", path);
  int64_t v;
  if (BSON_ITER_HOLDS_INT64(&it)) v = bson_iter_int64(&it);
  else if (BSON_ITER_HOLDS_INT32(&it)) v = bson_iter_int32(&it);
  else return fail(err, "%sv: expected an Int64", path);
  if (v < 1 || (uint64_t)v > MODEL_VERSION_MAX) return fail(err, "%sv: %" PRId64 " out of range", path, v);
  st->version = (uint64_t)v;
  if (!get_utf8(doc, path, "c", &st->id, &st->id_len, err)) return false;
  if (st->id_len < 1 || st->id_len > MODEL_CMD_ID_MAX) return fail(err, "%sc: %zu bytes", path, st->id_len);
  for (size_t i = 0; i < st->id_len; i++)
    if (st->id[i] < 0x21 || st->id[i] > 0x7e) return fail(err, "%sc: not printable ASCII", path);
  return true;
}

static bool get_date_opt(const bson_t *doc, const char *path, const char *key, bool *has, int64_t *ms,
                         model_error_t *err) {
  bson_iter_t it;
  bool null;
  find_opt(doc, key, &it, &null);
  *has = !null;
  if (null) return true;
  if (!BSON_ITER_HOLDS_DATE_TIME(&it)) return fail(err, "%s%s: expected a Date or null", path, key);
  *ms = bson_iter_date_time(&it);
  if (*ms < MIN_DATE_MS || *ms > MAX_DATE_MS) return fail(err, "%s%s: date out of year 0001..9999", path, key);
  return true;
}

static bool get_points_opt(const bson_t *doc, const char *path, bool *has, double *v, model_error_t *err) {
  bson_iter_t it;
  bool null;
  find_opt(doc, "points", &it, &null);
  *has = !null;
  if (null) return true;
  if (!BSON_ITER_HOLDS_NUMBER(&it)) return fail(err, "%spoints: expected a Double or null", path);
  *v = bson_iter_as_double(&it);
  if (!(*v >= 0 && *v <= MODEL_POINTS_MAX)) return fail(err, "%spoints: out of 0..10000", path);
  return true;
}

static bool get_subdoc(const bson_iter_t *it, bson_t *sub) {
  uint32_t len;
  const uint8_t *data;
  bson_iter_document(it, &len, &data);
  return bson_init_static(sub, data, len);
}

static bool decode_header(const bson_iter_t *it, model_header_view_t *h, model_error_t *err) {
  memset(h, 0, sizeof *h);
  if (BSON_ITER_HOLDS_NULL(it)) return true;
  if (!BSON_ITER_HOLDS_DOCUMENT(it)) return fail(err, "header: expected a document or null");
  bson_t d;
  if (!get_subdoc(it, &d)) return fail(err, "header: corrupt");
  h->present = true;
  const char *status;
  size_t status_len;
  if (!get_utf8(&d, "header.", "status", &status, &status_len, err)) return false;
  if (!get_stamp(&d, "header.", &h->stamp, err)) return false;
  if (!strcmp(status, "deleted") && status_len == 7) {
    h->deleted = true;
    return true;
  }
  bool known = false;
  for (int s = MODEL_ASSIGNMENT_DRAFT; s <= MODEL_ASSIGNMENT_CLOSED; s++) {
    if (!strcmp(status, model_assignment_status_name((model_assignment_status_t)s)) &&
        strlen(status) == status_len) {
      h->status = (model_assignment_status_t)s;
      known = true;
    }
  }
  if (!known) return fail(err, "header.status: unknown value");
  if (!get_utf8(&d, "header.", "class", &h->class_id, &h->class_len, err)) return false;
  if (!is_id(h->class_id, h->class_len)) return fail(err, "header.class: not an id");
  if (!get_utf8(&d, "header.", "title", &h->title, &h->title_len, err)) return false;
  if (h->title_len < 1 || h->title_len > MODEL_TITLE_MAX || strlen(h->title) != h->title_len)
    return fail(err, "header.title: %zu bytes, expected 1..%d without NUL", h->title_len, MODEL_TITLE_MAX);
  if (!get_date_opt(&d, "header.", "dueAt", &h->has_due_at, &h->due_at_ms, err)) return false;
  return get_points_opt(&d, "header.", &h->has_points, &h->points, err);
}

/* Fills one slot of s from the value of students.<id>.<slot>. */
static bool decode_slot(const bson_iter_t *it, const char *slot, model_student_view_t *s, model_error_t *err) {
  char path[MODEL_ID_MAX + 32];
  snprintf(path, sizeof path, "students.%s.%s.", s->student, slot);
  if (!BSON_ITER_HOLDS_DOCUMENT(it)) return fail(err, "%.*s: expected a document", (int)strlen(path) - 1, path);
  bson_t d;
  if (!get_subdoc(it, &d)) return fail(err, "%s: corrupt", path);
  bson_iter_t f;
  if (!strcmp(slot, "member")) {
    s->has_member = true;
    if (!bson_iter_init_find(&f, &d, "assigned") || !BSON_ITER_HOLDS_BOOL(&f))
      return fail(err, "%sassigned: expected a Boolean", path);
    s->assigned = bson_iter_bool(&f);
    return get_stamp(&d, path, &s->member_stamp, err);
  }
  if (!strcmp(slot, "submission")) {
    s->has_submission = true;
    const char *status;
    size_t status_len;
    if (!get_utf8(&d, path, "status", &status, &status_len, err)) return false;
    bool known = false;
    for (int v = MODEL_SUBMISSION_WORKING; v <= MODEL_SUBMISSION_REASSIGNED; v++) {
      if (!strcmp(status, model_submission_status_name((model_submission_status_t)v)) &&
          strlen(status) == status_len) {
        s->submission_status = (model_submission_status_t)v;
        known = true;
      }
    }
    if (!known) return fail(err, "%sstatus: unknown value", path);
    return get_date_opt(&d, path, "submittedAt", &s->has_submitted_at, &s->submitted_at_ms, err) &&
           get_date_opt(&d, path, "returnedAt", &s->has_returned_at, &s->returned_at_ms, err) &&
           get_stamp(&d, path, &s->submission_stamp, err);
  }
  /* grade */
  s->has_grade = true;
  if (!get_points_opt(&d, path, &s->has_points, &s->points, err)) return false;
  bool null;
  find_opt(&d, "feedback", &f, &null);
  s->has_feedback = !null;
  if (!null) {
    if (!get_utf8(&d, path, "feedback", &s->feedback, &s->feedback_len, err)) return false;
    if (s->feedback_len > MODEL_FEEDBACK_MAX || strlen(s->feedback) != s->feedback_len)
      return fail(err, "%sfeedback: %zu bytes, expected 0..%d without NUL", path, s->feedback_len,
                  MODEL_FEEDBACK_MAX);
  }
  return get_stamp(&d, path, &s->grade_stamp, err);
}

/* The students with no slots (the aggregate holds no entry for them), kept
 * so that a key stored twice is a duplicate even when a copy is empty. */
typedef struct empty_students {
  const char **ids; /* borrowed from the document */
  size_t n, cap;
} empty_students_t;

static const char *empty_student_id(const void *elem, void *ctx) {
  (void)ctx;
  return *(const char *const *)elem;
}

/* A key of an empty student that is also a student with slots, or another
 * empty one. */
static bool empty_students_check(empty_students_t *e, const model_aggregate_t *agg, model_error_t *err) {
  model_keys_sort(e->ids, e->n, sizeof *e->ids, empty_student_id, NULL);
  for (size_t i = 0, at; i < e->n; i++) {
    if ((i > 0 && !strcmp(e->ids[i - 1], e->ids[i])) ||
        model_aggregate_find_student(agg, e->ids[i], strlen(e->ids[i]), &at))
      return fail(err, "students.%s: duplicate key", e->ids[i]);
  }
  return true;
}

static bool decode_students_in(bson_iter_t st, model_aggregate_t *agg, empty_students_t *empty,
                               model_error_t *err) {
  while (bson_iter_next(&st)) {
    model_student_view_t s;
    memset(&s, 0, sizeof s);
    s.student = bson_iter_key(&st);
    s.student_len = bson_iter_key_len(&st);
    if (!is_id(s.student, s.student_len)) return fail(err, "students: key '%.64s' is not an id", s.student);
    if (!BSON_ITER_HOLDS_DOCUMENT(&st)) return fail(err, "students.%s: expected a document", s.student);
    bson_t sd;
    bson_iter_t slot;
    if (!get_subdoc(&st, &sd) || !bson_iter_init(&slot, &sd)) return fail(err, "students.%s: corrupt", s.student);
    while (bson_iter_next(&slot)) {
      const char *k = bson_iter_key(&slot);
      bool *seen = !strcmp(k, "member") ? &s.has_member
                   : !strcmp(k, "submission") ? &s.has_submission
                   : !strcmp(k, "grade") ? &s.has_grade
                   : NULL;
      if (!seen) continue; /* unknown key */
      if (*seen) return fail(err, "students.%s.%s: duplicate key", s.student, k);
      if (!decode_slot(&slot, k, &s, err)) return false;
    }
    /* A student with no slots (left when a slot is removed outside the
     * worker) is read as what it is: a student with no member, submission
     * or grade, which the aggregate holds as no entry at all, so its slots
     * compare as absent. The encoder never writes such a student. When the
     * worker next writes the document, a partial write sets only the
     * students it changes (the empty entry stays as stored unless a command
     * gives that student a slot, whose write sets the student whole), and a
     * whole-document write leaves the empty entry out. */
    if (!s.has_member && !s.has_submission && !s.has_grade) {
      if (empty->n == empty->cap) {
        empty->cap = empty->cap ? empty->cap * 2 : 4;
        empty->ids = oom_realloc(empty->ids, empty->cap * sizeof *empty->ids);
      }
      empty->ids[empty->n++] = s.student;
      continue;
    }
    size_t before = model_aggregate_student_count(agg);
    model_aggregate_put_student(agg, &s);
    if (model_aggregate_student_count(agg) == before) return fail(err, "students.%s: duplicate key", s.student);
  }
  return true;
}

static bool decode_students(const bson_iter_t *it, model_aggregate_t *agg, model_error_t *err) {
  if (!BSON_ITER_HOLDS_DOCUMENT(it)) return fail(err, "students: expected a document");
  bson_t d;
  if (!get_subdoc(it, &d)) return fail(err, "students: corrupt");
  bson_iter_t st;
  if (!bson_iter_init(&st, &d)) return fail(err, "students: corrupt");
  empty_students_t empty = {0};
  bool ok = decode_students_in(st, agg, &empty, err) && empty_students_check(&empty, agg, err);
  free(empty.ids);
  return ok;
}

static bool check_counts(const bson_iter_t *it, model_error_t *err) {
  if (!BSON_ITER_HOLDS_DOCUMENT(it)) return fail(err, "counts: expected a document");
  bson_t d;
  if (!get_subdoc(it, &d)) return fail(err, "counts: corrupt");
  static const char *const keys[] = {"assigned", "submitted", "returned", "graded"};
  for (size_t i = 0; i < 4; i++) {
    bson_iter_t f;
    if (!bson_iter_init_find(&f, &d, keys[i]) || !BSON_ITER_HOLDS_INT32(&f))
      return fail(err, "counts.%s: expected an Int32", keys[i]);
  }
  return true;
}

bool model_codec_stored_counts(const bson_t *doc, model_counts_t *out) {
  bson_iter_t it;
  bson_t d;
  if (!bson_iter_init_find(&it, doc, "counts") || !BSON_ITER_HOLDS_DOCUMENT(&it) || !get_subdoc(&it, &d)) return false;
  static const char *const keys[] = {"assigned", "submitted", "returned", "graded"};
  int32_t *fields[] = {&out->assigned, &out->submitted, &out->returned, &out->graded};
  for (size_t i = 0; i < 4; i++) {
    bson_iter_t f;
    if (!bson_iter_init_find(&f, &d, keys[i]) || !BSON_ITER_HOLDS_INT32(&f)) return false;
    *fields[i] = bson_iter_int32(&f);
  }
  return true;
}

model_aggregate_t *model_codec_from_bson(const bson_t *doc, int64_t *rev, model_error_t *err) {
  if (err) {
    err->code = MODEL_ERROR_NONE;
    err->message[0] = '\0';
  }
  const char *id, *tenant, *assignment;
  size_t id_len, tlen, alen;
  if (!get_utf8(doc, "", "_id", &id, &id_len, err) || !get_utf8(doc, "", "tenant", &tenant, &tlen, err) ||
      !get_utf8(doc, "", "assignment", &assignment, &alen, err))
    return NULL;
  if (!is_id(tenant, tlen)) return fail(err, "tenant: not an id"), NULL;
  if (!is_id(assignment, alen)) return fail(err, "assignment: not an id"), NULL;
  if (id_len != tlen + 1 + alen || memcmp(id, tenant, tlen) || id[tlen] != '/' || memcmp(id + tlen + 1, assignment, alen))
    return fail(err, "_id: expected \"<tenant>/<assignment>\""), NULL;

  bson_iter_t it;
  if (!bson_iter_init_find(&it, doc, "rev")) return fail(err, "rev: missing"), NULL;
  int64_t r;
  if (BSON_ITER_HOLDS_INT64(&it)) r = bson_iter_int64(&it);
  else if (BSON_ITER_HOLDS_INT32(&it)) r = bson_iter_int32(&it);
  else return fail(err, "rev: expected an Int64"), NULL;
  if (r < 1) return fail(err, "rev: %" PRId64 ", expected >= 1", r), NULL;
  if (!bson_iter_init_find(&it, doc, "updatedAt") || !BSON_ITER_HOLDS_DATE_TIME(&it))
    return fail(err, "updatedAt: expected a Date"), NULL;
  if (!bson_iter_init_find(&it, doc, "counts")) return fail(err, "counts: missing"), NULL;
  if (!check_counts(&it, err)) return NULL;

  model_header_view_t h;
  if (!bson_iter_init_find(&it, doc, "header")) return fail(err, "header: missing"), NULL;
  if (!decode_header(&it, &h, err)) return NULL;

  model_aggregate_t *agg = model_aggregate_new(tenant, tlen, assignment, alen);
  if (!agg) return fail(err, "out of memory"), NULL;
  model_aggregate_put_header(agg, &h);
  if (!bson_iter_init_find(&it, doc, "students")) {
    fail(err, "students: missing");
    model_aggregate_destroy(agg);
    return NULL;
  }
  if (!decode_students(&it, agg, err)) {
    model_aggregate_destroy(agg);
    return NULL;
  }
  if (rev) *rev = r;
  return agg;
}
