/* Change sets of one aggregate (changes.h).
 *
 * Records are "id NUL mask" back to back in one buffer: no allocation per
 * student, and a set that names one or two students (most writes) is one
 * small block. Appends go at the end in any order; normalizing sorts the
 * records' offsets and rewrites the buffer in place, one record per id. */
#include "changes.h"

#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "oom.h"

/* A set that lives with a dirty aggregate mostly names a student or two:
 * its first block holds one record of a usual id (at least 24 bytes, what
 * glibc's smallest chunk holds), not model_buf_reserve's 256. */
enum { CHANGES_FIRST_CAP = 24 };

/* Below this many records, normalize sorts by insertion and works on the
 * stack (SMALL_BYTES of records at most): no allocation. */
enum { SMALL_RECORDS = 16, SMALL_BYTES = 512 };

void model_changes_free(model_changes_t *c) {
  if (!c) return;
  model_buf_destroy(&c->students);
  *c = (model_changes_t)MODEL_CHANGES_INIT;
}

void model_changes_clear(model_changes_t *c) {
  model_buf_clear(&c->students);
  c->n = 0;
  c->last = 0;
  c->header = false;
}

/* Is every record's id below the next one's (strcmp: bytewise, a prefix
 * first)? Then the set is normalized. */
static bool is_normalized(const model_changes_t *c) {
  const char *p = c->students.data, *end = p + c->students.len, *prev = NULL;
  while (p && p < end) {
    if (prev && strcmp(prev, p) >= 0) return false;
    prev = p;
    p += strlen(p) + 2;
  }
  return true;
}

static const char *key_of_offset(const void *elem, void *base) { return (const char *)base + *(const uint32_t *)elem; }

/* Sorts offs[0..n) into records of base by id. */
static void sort_offsets(uint32_t *offs, size_t n, const char *base) {
  if (n > SMALL_RECORDS) {
    model_keys_sort(offs, n, sizeof *offs, key_of_offset, (void *)base);
    return;
  }
  for (size_t i = 1; i < n; i++) {
    uint32_t o = offs[i];
    size_t j = i;
    for (; j > 0 && strcmp(base + offs[j - 1], base + o) > 0; j--) offs[j] = offs[j - 1];
    offs[j] = o;
  }
}

void model_changes_normalize(model_changes_t *c) {
  if (c->n < 2 || is_normalized(c)) return;
  size_t len = c->students.len, n = c->n;
  uint32_t small_offs[SMALL_RECORDS];
  char small_copy[SMALL_BYTES];
  uint32_t *offs = n <= SMALL_RECORDS ? small_offs : oom_malloc(n * sizeof *offs);
  char *copy = len <= SMALL_BYTES ? small_copy : oom_malloc(len);
  memcpy(copy, c->students.data, len);
  for (size_t i = 0, at = 0; i < n; i++) {
    offs[i] = (uint32_t)at;
    at += strlen(copy + at) + 2;
  }
  sort_offsets(offs, n, copy);
  /* Rewritten in place: the result is never longer than the records. */
  char *out = c->students.data, *prev = NULL;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    const char *id = copy + offs[i];
    size_t id_len = strlen(id);
    uint8_t mask = (uint8_t)id[id_len + 1];
    if (prev && !strcmp(prev, id)) {
      prev[id_len + 1] = (char)(prev[id_len + 1] | mask);
      continue;
    }
    prev = out;
    memcpy(out, id, id_len + 2);
    out += id_len + 2;
    m++;
  }
  c->students.len = (size_t)(out - c->students.data);
  c->students.data[c->students.len] = '\0';
  c->n = (uint32_t)m;
  c->last = (uint32_t)(prev - c->students.data);
  if (offs != small_offs) free(offs);
  if (copy != small_copy) free(copy);
}

void model_changes_add(model_changes_t *c, const char *id, size_t len, uint8_t mask) {
  if (!mask) return;
  model_buf_t *b = &c->students;
  if (c->n) {
    char *last = b->data + c->last;
    if (!strncmp(last, id, len) && last[len] == '\0') {
      last[len + 1] = (char)(last[len + 1] | mask);
      return;
    }
  }
  size_t need = len + 2;
  model_buf_first_cap(b, need + 1 < CHANGES_FIRST_CAP ? CHANGES_FIRST_CAP : need + 1);
  if (b->len + need + 1 > b->cap && c->n > 1) {
    /* Full: fold the repeats before growing, so that a stream of commands
     * over a few students keeps the set at about their records. The block
     * grows when folding leaves it over three quarters full, so that at
     * least a quarter of it is appended between two folds. */
    model_changes_normalize(c);
    if (b->len + need + 1 > b->cap / 4 * 3) model_buf_reserve(b, b->cap - b->len + need);
  }
  c->last = (uint32_t)b->len;
  char *p = model_buf_space(b, need);
  memcpy(p, id, len);
  p[len] = '\0';
  p[len + 1] = (char)mask;
  model_buf_commit(b, p + need);
  c->n++;
}

void model_changes_add_command(model_changes_t *c, const model_command_t *cmd) {
  uint8_t mask;
  switch (cmd->type) {
  case MODEL_CMD_ASSIGNMENT_UPSERTED:
  case MODEL_CMD_ASSIGNMENT_DELETED: c->header = true; return;
  case MODEL_CMD_ROSTER_ASSIGNED:
  case MODEL_CMD_ROSTER_UNASSIGNED: mask = MODEL_SLOT_MEMBER; break;
  case MODEL_CMD_SUBMISSION_UPDATED: mask = MODEL_SLOT_SUBMISSION; break;
  case MODEL_CMD_GRADE_UPDATED: mask = MODEL_SLOT_GRADE; break;
  default: return;
  }
  model_changes_add(c, cmd->student, cmd->student_len, mask);
}

void model_changes_merge(model_changes_t *dst, const model_changes_t *src) {
  if (dst == src) return;
  dst->header |= src->header;
  size_t pos = 0, len;
  const char *id;
  uint8_t mask;
  while (model_changes_next(src, &pos, &id, &len, &mask)) model_changes_add(dst, id, len, mask);
}

bool model_changes_next(const model_changes_t *c, size_t *pos, const char **id, size_t *len, uint8_t *mask) {
  if (*pos >= c->students.len) return false;
  const char *p = c->students.data + *pos;
  size_t n = strlen(p);
  *id = p;
  *len = n;
  *mask = (uint8_t)p[n + 1];
  *pos += n + 2;
  return true;
}

size_t model_changes_memory(const model_changes_t *c) { return c->students.cap; }

static void add_win(void *ctx, const char *id, size_t len, uint8_t mask) { model_changes_add(ctx, id, len, mask); }

void model_aggregate_wins(const model_aggregate_t *stored, const model_aggregate_t *overlay, model_changes_t *out) {
  if (model_aggregate_each_win(stored, overlay, add_win, out)) out->header = true;
  model_changes_normalize(out);
}
