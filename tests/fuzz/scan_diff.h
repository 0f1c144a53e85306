/* Differential check of the JSON scanner's kernels (json_simd.h), shared by
 * the unit tests and the fuzz_scan_diff target.
 *
 * scan_diff() runs one input through
 * - model_command_decode() with every kernel this machine has (scalar, SSE2,
 *   AVX2), which must agree on the verdict, the rejection code and detail
 *   byte for byte, and every field of a decoded command;
 * - model_json_scan() with every kernel and with the scanner as it was
 *   before the kernels (ref_json_scan.h), under a schema shaped like a
 *   command's, with its slots (model_json_slots: the plain path, then the
 *   full scan when the text leaves it) and without (the full scan alone),
 *   which must agree on status, offset, detail, top-level type and every
 *   captured value; and, with the slots, which mark the command's ids, every
 *   kernel must mark the same string values ident, each one 1..16 id bytes.
 * It returns NULL when all agree, else a one-line description of the first
 * difference (in a static buffer). It leaves the kernel choice on AUTO.
 * Include in one translation unit only. */
#ifndef SCAN_DIFF_H
#define SCAN_DIFF_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "command.h"
#include "json/json_scan.h"
#include "ref_json_scan.h"

static const model_json_kernel_t scan_diff_kernels[] = {MODEL_JSON_KERNEL_SCALAR, MODEL_JSON_KERNEL_SSE2,
                                                        MODEL_JSON_KERNEL_AVX2};
#define SCAN_DIFF_NK (sizeof scan_diff_kernels / sizeof scan_diff_kernels[0])

static char scan_diff_msg[512];

static const char *scan_diff_fail(const char *what, model_json_kernel_t k) {
  snprintf(scan_diff_msg, sizeof scan_diff_msg, "%s differs on kernel %s", what, model_json_kernel_name(k));
  return scan_diff_msg;
}

/* Field-by-field equality of two decoded commands of the same type. */
static bool scan_diff_cmd_eq(const model_command_t *a, const model_command_t *b) {
  if (a->type != b->type || a->version != b->version || a->ts_ms != b->ts_ms) return false;
  if (a->id_len != b->id_len || memcmp(a->id, b->id, a->id_len + 1u) != 0) return false;
  if (a->tenant_len != b->tenant_len || memcmp(a->tenant, b->tenant, a->tenant_len + 1u) != 0) return false;
  if (a->assignment_len != b->assignment_len || memcmp(a->assignment, b->assignment, a->assignment_len + 1u) != 0)
    return false;
  if (a->student_len != b->student_len || memcmp(a->student, b->student, a->student_len + 1u) != 0) return false;
  switch (a->type) {
  case MODEL_CMD_ASSIGNMENT_UPSERTED: {
    const __typeof__(a->data.assignment) *x = &a->data.assignment, *y = &b->data.assignment;
    return x->status == y->status && x->class_len == y->class_len &&
           memcmp(x->class_id, y->class_id, x->class_len + 1u) == 0 && x->title_len == y->title_len &&
           memcmp(x->title, y->title, x->title_len + 1u) == 0 && x->has_due_at == y->has_due_at &&
           x->due_at_ms == y->due_at_ms && x->has_points == y->has_points &&
           memcmp(&x->points, &y->points, sizeof x->points) == 0;
  }
  case MODEL_CMD_SUBMISSION_UPDATED: {
    const __typeof__(a->data.submission) *x = &a->data.submission, *y = &b->data.submission;
    return x->status == y->status && x->has_submitted_at == y->has_submitted_at &&
           x->submitted_at_ms == y->submitted_at_ms && x->has_returned_at == y->has_returned_at &&
           x->returned_at_ms == y->returned_at_ms;
  }
  case MODEL_CMD_GRADE_UPDATED: {
    const __typeof__(a->data.grade) *x = &a->data.grade, *y = &b->data.grade;
    return x->has_points == y->has_points && memcmp(&x->points, &y->points, sizeof x->points) == 0 &&
           x->has_feedback == y->has_feedback && x->feedback_len == y->feedback_len &&
           memcmp(x->feedback, y->feedback, x->feedback_len + 1u) == 0;
  }
  default: return true;
  }
}

/* The command's schema, in both scanners' forms. */
static const char scan_diff_root[8][MODEL_JSON_KEY_MAX] = {"id", "type", "tenant", "assignment",
                                                          "student", "version", "ts", "data"};
static const char scan_diff_sub[8][MODEL_JSON_KEY_MAX] = {"class", "title", "status", "dueAt",
                                                         "points", "submittedAt", "returnedAt", "feedback"};
static const char *const scan_diff_root_p[8] = {"id", "type", "tenant", "assignment",
                                                "student", "version", "ts", "data"};
static const char *const scan_diff_sub_p[8] = {"class", "title", "status", "dueAt",
                                               "points", "submittedAt", "returnedAt", "feedback"};
static const uint8_t scan_diff_root_l[8] = {2, 4, 6, 10, 7, 7, 2, 4};
static const uint8_t scan_diff_sub_l[8] = {5, 5, 6, 5, 6, 11, 10, 8};

static bool scan_diff_val_eq(const model_json_value_t *a, const model_json_value_t *b) {
  if (a->type != b->type) return false;
  switch (a->type) {
  case MODEL_JSON_ABSENT: return true;
  case MODEL_JSON_OBJECT:
  case MODEL_JSON_ARRAY: return a->start == b->start;
  case MODEL_JSON_STRING: return a->start == b->start && a->len == b->len && a->escaped == b->escaped;
  case MODEL_JSON_NUMBER:
    return a->start == b->start && a->len == b->len && a->frac_exp == b->frac_exp && a->negative == b->negative;
  default: return a->start == b->start && a->len == b->len;
  }
}

/* The bytes of string value v of data are 1..16 id bytes ([A-Za-z0-9_-]),
 * as its ident flag says. */
static bool scan_diff_ident_ok(const uint8_t *data, const model_json_value_t *v) {
  if (v->len < 1 || v->len > 16 || v->escaped) return false;
  for (size_t i = 0; i < v->len; i++) {
    unsigned c = data[v->start + i];
    if (!((c | 0x20) - 'a' < 26u || c - '0' < 10u || c == '-' || c == '_')) return false;
  }
  return true;
}

static bool scan_diff_res_eq(const model_json_result_t *a, const model_json_result_t *b, bool ok) {
  if (a->status != b->status || strcmp(a->detail, b->detail) != 0) return false;
  if (ok) return a->top == b->top;
  return a->offset == b->offset;
}

static const char *scan_diff(const uint8_t *data, size_t n, size_t max_bytes) {
  static model_command_t cmds[SCAN_DIFF_NK];
  model_reject_t rej[SCAN_DIFF_NK];
  bool ok[SCAN_DIFF_NK], have[SCAN_DIFF_NK];

  /* The scanner alone, against the one before the kernels. */
  ref_json_schema_t rs = {scan_diff_root_p, scan_diff_root_l, 8, 7, scan_diff_sub_p, scan_diff_sub_l, 8};
  model_json_schema_t ms = {scan_diff_root, scan_diff_root_l, 8, 7, scan_diff_sub, scan_diff_sub_l, 8, NULL, NULL};
  model_json_schema_t ms_slots = ms; /* with the slots: the plain path first */
  static model_json_slots_t root_slots, sub_slots;
  /* ids as a command's: id, tenant, assignment, student; data.class */
  model_json_slots(scan_diff_root, scan_diff_root_l, 8, 1u << 0 | 1u << 2 | 1u << 3 | 1u << 4, &root_slots);
  model_json_slots(scan_diff_sub, scan_diff_sub_l, 8, 1u << 0, &sub_slots);
  uint32_t idents[SCAN_DIFF_NK] = {0}; /* bit i (root) or 8 + i (sub): marked ident with the slots */
  ms_slots.root_slots = &root_slots;
  ms_slots.sub_slots = &sub_slots;
  model_json_value_t ref_root[8], ref_sub[8];
  model_json_result_t ref_res;
  bool ref_ok = ref_json_scan((const char *)data, n, &rs, ref_root, ref_sub, &ref_res);

  for (size_t k = 0; k < SCAN_DIFF_NK; k++) {
    have[k] = model_json_force_kernel(scan_diff_kernels[k]);
    if (!have[k]) continue;
    for (int with_slots = 0; with_slots < 2; with_slots++) {
      model_json_value_t root[8], sub[8];
      model_json_result_t res;
      bool sok = model_json_scan((const char *)data, n, with_slots ? &ms_slots : &ms, root, sub, &res);
      if (sok != ref_ok || !scan_diff_res_eq(&res, &ref_res, sok)) {
        model_json_force_kernel(MODEL_JSON_KERNEL_AUTO);
        snprintf(scan_diff_msg, sizeof scan_diff_msg,
                 "scan result differs from the reference on kernel %s%s: %d@%zu \"%s\" vs %d@%zu \"%s\"",
                 model_json_kernel_name(scan_diff_kernels[k]), with_slots ? " (slots)" : " (no slots)",
                 (int)res.status, res.offset, res.detail, (int)ref_res.status, ref_res.offset, ref_res.detail);
        return scan_diff_msg;
      }
      if (sok)
        for (int i = 0; i < 8; i++) {
          if (!scan_diff_val_eq(&root[i], &ref_root[i]) || !scan_diff_val_eq(&sub[i], &ref_sub[i])) {
            model_json_force_kernel(MODEL_JSON_KERNEL_AUTO);
            return scan_diff_fail(with_slots ? "a captured value (slots)" : "a captured value (no slots)",
                                  scan_diff_kernels[k]);
          }
          const model_json_value_t *v[2] = {&root[i], &sub[i]};
          for (int j = 0; j < 2; j++) {
            if (v[j]->type != MODEL_JSON_STRING || !v[j]->ident) continue;
            if (!with_slots || !scan_diff_ident_ok(data, v[j])) {
              model_json_force_kernel(MODEL_JSON_KERNEL_AUTO);
              return scan_diff_fail("an ident flag", scan_diff_kernels[k]);
            }
            idents[k] |= 1u << (8 * j + i);
          }
        }
    }
    if (idents[k] != idents[0]) {
      model_json_force_kernel(MODEL_JSON_KERNEL_AUTO);
      return scan_diff_fail("the ident flags", scan_diff_kernels[k]);
    }

    ok[k] = model_command_decode((const char *)data, n, max_bytes, &cmds[k], &rej[k]);
  }
  model_json_force_kernel(MODEL_JSON_KERNEL_AUTO);

  /* The decoders, kernel against kernel (the first is the scalar one). */
  for (size_t k = 1; k < SCAN_DIFF_NK; k++) {
    if (!have[k]) continue;
    if (ok[k] != ok[0]) return scan_diff_fail("the verdict", scan_diff_kernels[k]);
    if (rej[k].code != rej[0].code) return scan_diff_fail("the rejection code", scan_diff_kernels[k]);
    if (strcmp(rej[k].detail, rej[0].detail) != 0) return scan_diff_fail("the detail", scan_diff_kernels[k]);
    if (ok[0] && !scan_diff_cmd_eq(&cmds[k], &cmds[0])) return scan_diff_fail("the command", scan_diff_kernels[k]);
  }
  return NULL;
}

#endif
