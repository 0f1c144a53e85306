#include "batch_writeset.h"

#include <string.h>

void batch_writeset_init(batch_writeset_t *w) {
  memset(w, 0, sizeof *w);
  batch_entry_list_init(&w->dirty);
}

void batch_writeset_mark(batch_writeset_t *w, batch_entry_t *e, uint64_t seq, int64_t mono_ms) {
  if (e->dirty) return;
  e->dirty = true;
  e->pend_seq = seq;
  e->pend_ms = mono_ms;
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
  e->pend_ms = e->flight_ms;
  batch_entry_list_push_back(&w->dirty, e);
}

void batch_writeset_unmark(batch_writeset_t *w, batch_entry_t *e) {
  if (!e->dirty) return;
  batch_entry_list_unlink(e);
  w->ndirty--;
  e->dirty = false;
}

void batch_writeset_whole(batch_entry_t *e) { e->touched_whole = true; }

void batch_writeset_note(batch_entry_t *e, const model_command_t *cmd, size_t before) {
  if (e->loaded && model_aggregate_student_count(e->agg) != before) e->touched_whole = true;
  model_changes_add_command(&e->changes, cmd);
}

void batch_writeset_check_overlay(batch_entry_t *e, const model_aggregate_t *stored) {
  if (e->loaded) return;
  model_changes_clear(&e->changes);
  model_aggregate_wins(stored, e->agg, &e->changes);
  const char *id;
  size_t at, len, pos = 0;
  uint8_t mask;
  while (!e->touched_whole && model_changes_next(&e->changes, &pos, &id, &len, &mask))
    if (!model_aggregate_find_student(stored, id, len, &at)) e->touched_whole = true;
}

size_t batch_writeset_hand_over(batch_entry_t *e, writer_item_t *it) {
  it->whole = !(e->loaded && e->rev > 0 && !e->touched_whole); /* else: the stored state plus what changed */
  size_t taken = model_changes_memory(&e->changes);
  model_changes_free(&it->changes);
  it->changes = e->changes;
  e->changes = (model_changes_t)MODEL_CHANGES_INIT;
  e->touched_whole = false;
  return taken;
}

void batch_writeset_give_back(batch_entry_t *e, writer_item_t *it) {
  model_changes_merge(&e->changes, &it->changes);
  e->touched_whole = true;
}
