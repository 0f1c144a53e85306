#include "batch_writeset.h"

#include <string.h>

void batch_writeset_init(batch_writeset_t *w) {
  memset(w, 0, sizeof *w);
  batch_entry_list_init(&w->dirty);
}

void batch_writeset_mark(batch_writeset_t *w, batch_entry_t *e, uint64_t seq) {
  if (e->dirty) return;
  e->dirty = true;
  e->pend_seq = seq;
  batch_entry_list_push_front(&w->dirty, e);
  w->ndirty++;
}

void batch_writeset_redirty_old(batch_writeset_t *w, batch_entry_t *e) {
  if (e->dirty)
    batch_entry_list_unlink(e);
  else
    w->ndirty++;
  e->dirty = true;
  e->pend_seq = e->flight_seq;
  batch_entry_list_push_back(&w->dirty, e);
}

void batch_writeset_unmark(batch_writeset_t *w, batch_entry_t *e) {
  if (!e->dirty) return;
  batch_entry_list_unlink(e);
  w->ndirty--;
  e->dirty = false;
}

static void forget(batch_entry_t *e) {
  e->touched = (model_buf_t)MODEL_BUF_INIT;
  e->ntouched = e->touched_last = 0;
  e->touched_header = false;
}

void batch_writeset_whole(batch_entry_t *e) {
  model_buf_destroy(&e->touched);
  forget(e);
  e->touched_whole = true;
}

/* A new student of a loaded entry (more students after the command than
 * before) makes the write whole: a $set would put it out of id order. */
void batch_writeset_note(batch_entry_t *e, const model_command_t *cmd, size_t before) {
  if (e->touched_whole) return;
  if (e->loaded && model_aggregate_student_count(e->agg) != before) {
    batch_writeset_whole(e);
    return;
  }
  /* Unloaded (an overlay): a student new to the overlay may well be in the
   * stored document; batch_writeset_check_overlay checks the ids against it
   * when it arrives. */
  if (!model_cmd_type_has_student(cmd->type)) {
    e->touched_header = true;
    return;
  }
  if (e->ntouched && !strcmp(e->touched.data + e->touched_last, cmd->student)) return; /* a burst on one student */
  if (e->ntouched == BATCH_TOUCHED_MAX) {
    batch_writeset_whole(e);
    return;
  }
  /* Most entries get a student or two between snapshots: room for one id
   * (at least 24 bytes, what glibc's smallest chunk holds), not 256. */
  size_t first = (size_t)cmd->student_len + 2;
  model_buf_first_cap(&e->touched, first < 24 ? 24 : first);
  e->touched_last = (uint32_t)e->touched.len;
  model_buf_append(&e->touched, cmd->student, (size_t)cmd->student_len + 1);
  e->ntouched++;
}

void batch_writeset_check_overlay(batch_entry_t *e, const model_aggregate_t *stored) {
  if (e->loaded || e->touched_whole) return;
  for (const char *p = e->touched.data, *end = p + e->touched.len; p && p < end; p += strlen(p) + 1) {
    size_t at;
    if (!model_aggregate_find_student(stored, p, strlen(p), &at)) {
      batch_writeset_whole(e);
      return;
    }
  }
}

size_t batch_writeset_hand_over(batch_entry_t *e, writer_item_t *it) {
  if (e->loaded && e->rev > 0 && !e->touched_whole) { /* the snapshot is the stored state plus what is touched */
    it->whole = false;
    it->header_touched = e->touched_header;
    it->touched = e->touched.data;
    it->touched_len = e->touched.len;
    it->ntouched = e->ntouched;
  } else {
    model_buf_destroy(&e->touched);
  }
  size_t taken = e->touched.cap;
  forget(e);
  e->touched_whole = false;
  return taken;
}
