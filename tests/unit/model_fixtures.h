/* Builders of validated commands for the tests of the model and of the
 * batch (test_aggregate, test_codec, test_merge_laws, test_batch,
 * test_writer). They fill model_command_t directly, as the decoder would
 * after validation, so that these tests do not depend on it. */
#ifndef MODEL_FIXTURES_H
#define MODEL_FIXTURES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "aggregate.h"
#include "command.h"

#define FX_COPY(dst, len, src)              \
  do {                                      \
    size_t n_ = strlen(src);                \
    memcpy((dst), (src), n_ + 1);           \
    (len) = (__typeof__(len))n_;            \
  } while (0)

static inline void fx_base(model_command_t *c, model_cmd_type_t type, const char *tenant, const char *assignment,
                           const char *student, uint64_t version, const char *id) {
  memset(c, 0, sizeof *c);
  c->type = type;
  c->version = version;
  c->ts_ms = 1788220800000LL; /* 2026-09-01T00:00:00Z */
  FX_COPY(c->id, c->id_len, id);
  FX_COPY(c->tenant, c->tenant_len, tenant);
  FX_COPY(c->assignment, c->assignment_len, assignment);
  FX_COPY(c->student, c->student_len, student ? student : "");
}

static inline void fx_upsert(model_command_t *c, const char *t, const char *a, uint64_t v, const char *id,
                             const char *class_id, const char *title, model_assignment_status_t status,
                             bool has_due, int64_t due_ms, bool has_points, double points) {
  fx_base(c, MODEL_CMD_ASSIGNMENT_UPSERTED, t, a, NULL, v, id);
  FX_COPY(c->data.assignment.class_id, c->data.assignment.class_len, class_id);
  FX_COPY(c->data.assignment.title, c->data.assignment.title_len, title);
  c->data.assignment.status = status;
  c->data.assignment.has_due_at = has_due;
  c->data.assignment.due_at_ms = has_due ? due_ms : 0;
  c->data.assignment.has_points = has_points;
  c->data.assignment.points = has_points ? points : 0;
}

static inline void fx_deleted(model_command_t *c, const char *t, const char *a, uint64_t v, const char *id) {
  fx_base(c, MODEL_CMD_ASSIGNMENT_DELETED, t, a, NULL, v, id);
}

static inline void fx_roster(model_command_t *c, const char *t, const char *a, const char *s, uint64_t v,
                             const char *id, bool assigned) {
  fx_base(c, assigned ? MODEL_CMD_ROSTER_ASSIGNED : MODEL_CMD_ROSTER_UNASSIGNED, t, a, s, v, id);
}

static inline void fx_submission(model_command_t *c, const char *t, const char *a, const char *s, uint64_t v,
                                 const char *id, model_submission_status_t status, bool has_sub, int64_t sub_ms,
                                 bool has_ret, int64_t ret_ms) {
  fx_base(c, MODEL_CMD_SUBMISSION_UPDATED, t, a, s, v, id);
  c->data.submission.status = status;
  c->data.submission.has_submitted_at = has_sub;
  c->data.submission.submitted_at_ms = has_sub ? sub_ms : 0;
  c->data.submission.has_returned_at = has_ret;
  c->data.submission.returned_at_ms = has_ret ? ret_ms : 0;
}

static inline void fx_grade(model_command_t *c, const char *t, const char *a, const char *s, uint64_t v,
                            const char *id, bool has_points, double points, const char *feedback) {
  fx_base(c, MODEL_CMD_GRADE_UPDATED, t, a, s, v, id);
  c->data.grade.has_points = has_points;
  c->data.grade.points = has_points ? points : 0;
  c->data.grade.has_feedback = feedback != NULL;
  if (feedback) FX_COPY(c->data.grade.feedback, c->data.grade.feedback_len, feedback);
}

/* Fills agg (tenant t1, assignment a) with students s0, s1, ... each graded
 * (version 1, command id g<i>) with MODEL_FEEDBACK_MAX bytes of feedback,
 * until the next one would make its document pass max_bytes; returns how
 * many it holds. A document a few KiB short of a store's limit. */
static inline int fx_fill_grades(model_aggregate_t *agg, const char *a, size_t max_bytes) {
  static char fb[MODEL_FEEDBACK_MAX + 1];
  static model_command_t c; /* ~6 KiB: off the stack */
  memset(fb, 'f', MODEL_FEEDBACK_MAX);
  for (int i = 0;; i++) {
    char st[16], id[16];
    snprintf(st, sizeof st, "s%d", i);
    snprintf(id, sizeof id, "g%d", i);
    fx_grade(&c, "t1", a, st, 1, id, true, 1, fb);
    size_t would_be;
    if (model_aggregate_apply_within(agg, &c, max_bytes, &would_be) == MODEL_APPLY_TOO_LARGE) return i;
  }
}

#endif
