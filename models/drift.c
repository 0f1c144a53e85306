/* Drift between a rebuilt aggregate and its stored document: see drift.h.
 *
 * Both aggregates list their students in ascending id order, so one merge
 * walk pairs them; stored students no command touched are skipped (only
 * slots that some command read touches are compared). Values are compared
 * field by field on the read views, the same fields the codecs write: two slots with equal
 * stamps and equal fields encode to the same stored document. */
#include "drift.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

static const char *const kind_names[MODEL_DRIFT_KINDS] = {"none", "missing", "store_behind", "differs",
                                                          "store_ahead"};

const char *model_drift_kind_name(model_drift_kind_t kind) {
  return (unsigned)kind < MODEL_DRIFT_KINDS ? kind_names[kind] : "none";
}

/* Records one drifted slot; the first of each kind keeps its path and note. */
static void found(model_drift_t *d, model_drift_kind_t k, const char *student, const char *slot, const char *note) {
  if (d->slots[k]++) return;
  if (student)
    snprintf(d->path[k], sizeof d->path[k], "students.%s.%s", student, slot);
  else
    snprintf(d->path[k], sizeof d->path[k], "%s", slot);
  snprintf(d->note[k], sizeof d->note[k], "%s", note);
}

static bool same_str(const char *a, size_t alen, const char *b, size_t blen) {
  return alen == blen && (alen == 0 || memcmp(a, b, alen) == 0);
}

static bool same_opt_ms(bool ha, int64_t a, bool hb, int64_t b) { return ha == hb && (!ha || a == b); }
static bool same_opt_double(bool ha, double a, bool hb, double b) { return ha == hb && (!ha || a == b); }

/* One slot present in the rebuilt aggregate: classify it against the stored
 * one (stored_has false: absent). same_value is only consulted for equal
 * stamps. */
static void compare_slot(model_drift_t *d, const char *student, const char *slot, const model_stamp_t *rebuilt,
                         bool stored_has, const model_stamp_t *stored, bool same_value) {
  char note[MODEL_DRIFT_NOTE_MAX];
  if (!stored_has) {
    snprintf(note, sizeof note, "not stored; rebuilt stamp (%" PRIu64 ", \"%s\")", rebuilt->version, rebuilt->id);
    found(d, MODEL_DRIFT_STORE_BEHIND, student, slot, note);
    return;
  }
  int c = model_stamp_compare(rebuilt, stored);
  if (c == 0 && same_value) return;
  snprintf(note, sizeof note, "stored stamp (%" PRIu64 ", \"%s\") %s rebuilt (%" PRIu64 ", \"%s\")%s",
           stored->version, stored->id, c > 0 ? "<" : c < 0 ? ">" : "=", rebuilt->version, rebuilt->id,
           c == 0 ? ", different values" : "");
  found(d, c > 0 ? MODEL_DRIFT_STORE_BEHIND : c < 0 ? MODEL_DRIFT_STORE_AHEAD : MODEL_DRIFT_DIFFERS, student, slot,
        note);
}

static bool same_header(const model_header_view_t *a, const model_header_view_t *b) {
  if (a->deleted != b->deleted) return false;
  if (a->deleted) return true;
  return same_str(a->class_id, a->class_len, b->class_id, b->class_len) &&
         same_str(a->title, a->title_len, b->title, b->title_len) && a->status == b->status &&
         same_opt_ms(a->has_due_at, a->due_at_ms, b->has_due_at, b->due_at_ms) &&
         same_opt_double(a->has_points, a->points, b->has_points, b->points);
}

static void compare_student(model_drift_t *d, const model_student_view_t *r, const model_student_view_t *s) {
  /* s may be an empty view (the student is not stored): every slot absent. */
  if (r->has_member)
    compare_slot(d, r->student, "member", &r->member_stamp, s->has_member, &s->member_stamp,
                 r->assigned == s->assigned);
  if (r->has_submission)
    compare_slot(d, r->student, "submission", &r->submission_stamp, s->has_submission, &s->submission_stamp,
                 r->submission_status == s->submission_status &&
                     same_opt_ms(r->has_submitted_at, r->submitted_at_ms, s->has_submitted_at, s->submitted_at_ms) &&
                     same_opt_ms(r->has_returned_at, r->returned_at_ms, s->has_returned_at, s->returned_at_ms));
  if (r->has_grade)
    compare_slot(d, r->student, "grade", &r->grade_stamp, s->has_grade, &s->grade_stamp,
                 same_opt_double(r->has_points, r->points, s->has_points, s->points) &&
                     r->has_feedback == s->has_feedback &&
                     (!r->has_feedback || same_str(r->feedback, r->feedback_len, s->feedback, s->feedback_len)));
}

/* Every slot of rebuilt, for a document that is not stored. */
static void all_missing(model_drift_t *d, const model_aggregate_t *rebuilt) {
  model_header_view_t h;
  model_aggregate_header(rebuilt, &h);
  if (h.present) found(d, MODEL_DRIFT_MISSING, NULL, "header", "no stored document");
  size_t n = model_aggregate_student_count(rebuilt);
  for (size_t i = 0; i < n; i++) {
    model_student_view_t s;
    model_aggregate_student(rebuilt, i, &s);
    const char *slots[3] = {s.has_member ? "member" : NULL, s.has_submission ? "submission" : NULL,
                            s.has_grade ? "grade" : NULL};
    for (int k = 0; k < 3; k++)
      if (slots[k]) found(d, MODEL_DRIFT_MISSING, s.student, slots[k], "no stored document");
  }
}

model_drift_kind_t model_drift_compare(const model_aggregate_t *rebuilt, const model_aggregate_t *stored,
                                       const model_counts_t *stored_counts, model_drift_t *out) {
  memset(out, 0, sizeof *out);
  if (!stored) {
    all_missing(out, rebuilt);
    /* A rebuilt aggregate always has a slot (a command made it); an empty
     * one still names a document that is not there. */
    if (!out->slots[MODEL_DRIFT_MISSING]) found(out, MODEL_DRIFT_MISSING, NULL, "header", "no stored document");
  } else {
    model_header_view_t rh, sh;
    model_aggregate_header(rebuilt, &rh);
    model_aggregate_header(stored, &sh);
    if (rh.present) compare_slot(out, NULL, "header", &rh.stamp, sh.present, &sh.stamp, same_header(&rh, &sh));
    size_t nr = model_aggregate_student_count(rebuilt), ns = model_aggregate_student_count(stored), j = 0;
    for (size_t i = 0; i < nr; i++) {
      model_student_view_t r, s;
      model_aggregate_student(rebuilt, i, &r);
      int c = 1;
      while (j < ns) {
        model_aggregate_student(stored, j, &s);
        c = strcmp(s.student, r.student);
        if (c >= 0) break;
        j++;
      }
      if (j >= ns || c != 0) {
        memset(&s, 0, sizeof s); /* not stored: every slot absent */
      }
      compare_student(out, &r, &s);
    }
    if (stored_counts) {
      model_counts_t c = model_aggregate_counts(stored);
      if (memcmp(&c, stored_counts, sizeof c) != 0) {
        char note[MODEL_DRIFT_NOTE_MAX];
        snprintf(note, sizeof note,
                 "stored assigned=%" PRId32 " submitted=%" PRId32 " returned=%" PRId32 " graded=%" PRId32
                 ", its slots give assigned=%" PRId32 " submitted=%" PRId32 " returned=%" PRId32 " graded=%" PRId32,
                 stored_counts->assigned, stored_counts->submitted, stored_counts->returned, stored_counts->graded,
                 c.assigned, c.submitted, c.returned, c.graded);
        found(out, MODEL_DRIFT_DIFFERS, NULL, "counts", note);
      }
    }
  }
  out->kind = MODEL_DRIFT_NONE;
  for (int k = MODEL_DRIFT_MISSING; k < MODEL_DRIFT_KINDS && !out->kind; k++)
    if (out->slots[k]) out->kind = (model_drift_kind_t)k;
  return out->kind;
}

model_drift_kind_t model_drift_unreadable(const char *reason, model_drift_t *out) {
  memset(out, 0, sizeof *out);
  /* The decoder's reasons start with the dotted path of the field at fault
   * (letters, digits, '_', '-', '.'), then ": ". */
  size_t n = strspn(reason, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.");
  char path[MODEL_DRIFT_PATH_MAX] = "document";
  if (n > 0 && n < sizeof path && reason[n] == ':') snprintf(path, sizeof path, "%.*s", (int)n, reason);
  found(out, MODEL_DRIFT_DIFFERS, NULL, path, reason);
  out->unreadable = true;
  out->kind = MODEL_DRIFT_DIFFERS;
  return out->kind;
}

void model_drift_detail(const model_drift_t *d, model_buf_t *out) {
  if (d->kind == MODEL_DRIFT_NONE) return;
  if (d->unreadable) {
    model_buf_printf(out, "stored document does not decode: %s", d->note[d->kind]);
    return;
  }
  uint32_t n = d->slots[d->kind];
  model_buf_printf(out, "%" PRIu32 " slot%s: %s", n, n == 1 ? "" : "s", d->note[d->kind]);
  for (int k = MODEL_DRIFT_MISSING; k < MODEL_DRIFT_KINDS; k++) {
    if (k == (int)d->kind || !d->slots[k]) continue;
    model_buf_printf(out, "; also %s: %" PRIu32 " slot%s, first %s", kind_names[k], d->slots[k],
                     d->slots[k] == 1 ? "" : "s", d->path[k]);
  }
}
