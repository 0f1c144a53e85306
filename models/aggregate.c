/* The merge rules of an aggregate.
 *
 * An aggregate holds entity slots, each (stamp, value) with stamp =
 * (version, command id): the header, and per student a member, a
 * submission and a grade slot. A command or a stored slot replaces its
 * slot if and only if its stamp is greater (an empty slot loses to every
 * stamp; an equal stamp changes nothing), so applying and merging are
 * idempotent, commutative and associative: the result depends only on the
 * set of slots offered, not on their order or repetitions. Counters are
 * recomputed from the slots, never incremented.
 *
 * Slots are kept encoded (record.h) in a compact table (table.h); this file
 * decides which section wins and hands the winner's bytes to the table.
 * The encoding is canonical, so that equal slots have equal bytes: equality
 * and diffs compare records with memcmp, and merges copy sections as bytes.
 *
 * Allocation failure aborts (oom.h, the project's one policy): the merge API
 * stays total, with no error path that could leave an aggregate
 * half-updated. */
#include "aggregate.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "docsize.h"
#include "oom.h"
#include "record.h"
#include "table.h"

struct model_aggregate {
  model_table_t t;
};
/* The smallest glibc chunk (32 bytes) holds the handle. */
_Static_assert(sizeof(struct model_aggregate) <= 24, "aggregate handle grew");

/* ---- the document's size -------------------------------------------------------- */

/* The BSON size of the stored document (docsize.h) is kept in the table's
 * word and moved by each change of a slot by the difference of its
 * element's size, so that no command re-encodes the document. A document
 * of 4 GiB cannot be stored anywhere: reaching it aborts, as running out of
 * memory does (oom.h). */
static size_t doc_size(const model_aggregate_t *a) { return model_table_word(&a->t); }

static void set_doc_size(model_aggregate_t *a, size_t n) {
  if (n > UINT32_MAX) abort();
  model_table_set_word(&a->t, (uint32_t)n);
}

/* ---- offering one slot -------------------------------------------------------- */

/* Offers one encoded section (stamp first, *st decoded) for slot `slot` of
 * student sid, with its flag bits: it replaces the student's section iff
 * its stamp is greater and the document stays within max_bytes, and a
 * student without a record gets one. *would_be is the document's size
 * after the change. */
static model_apply_result_t student_offer(model_aggregate_t *a, const char *sid, size_t sid_len, int slot,
                                          const model_stamp_t *st, const uint8_t *sec, size_t sec_len,
                                          uint8_t bits, size_t max_bytes, size_t *would_be) {
  model_table_pos_t at;
  if (!model_table_find(&a->t, sid, sid_len, &at)) {
    size_t n = doc_size(a) + model_docsize_student_frame(sid_len) + model_docsize_slot_idlen(slot, bits, sec, st->id_len);
    *would_be = n;
    if (n > max_bytes) return MODEL_APPLY_TOO_LARGE;
    uint8_t rec[MODEL_ID_MAX + 2 + MODEL_REC_SECTION_MAX];
    size_t k = model_rec_put_str(rec, sid, sid_len);
    rec[k++] = bits;
    memcpy(rec + k, sec, sec_len);
    model_table_insert(&a->t, &at, rec, k + sec_len);
    set_doc_size(a, n);
    return MODEL_APPLY_APPLIED;
  }
  size_t pos[4];
  size_t flags_off = model_rec_sections(at.rec, sid_len, at.rec_len, pos);
  uint8_t f = at.rec[flags_off];
  uint8_t present = (uint8_t)(MODEL_REC_F_MEMBER << slot);
  if ((f & present) && !model_rec_stamp_greater(st->version, st->id, at.rec + pos[slot])) return MODEL_APPLY_STALE;
  size_t n = doc_size(a) - model_docsize_slot(slot, f, at.rec + pos[slot]) +
             model_docsize_slot_idlen(slot, bits, sec, st->id_len);
  *would_be = n;
  if (n > max_bytes) return MODEL_APPLY_TOO_LARGE;
  size_t old_len = (f & present) ? pos[slot + 1] - pos[slot] : 0;
  /* The flags byte precedes every section: the splice leaves it in place. */
  at.rec[flags_off] = (uint8_t)((f & ~model_rec_slot_bits[slot]) | bits);
  model_table_splice(&a->t, &at, pos[slot], old_len, sec, sec_len);
  set_doc_size(a, n);
  return MODEL_APPLY_APPLIED;
}

/* student_offer without a limit: for merges and stored documents, whose
 * size the store bounded already or the caller checks. */
static bool student_put(model_aggregate_t *a, const char *sid, size_t sid_len, int slot, const model_stamp_t *st,
                        const uint8_t *sec, size_t sec_len, uint8_t bits) {
  size_t would_be;
  return student_offer(a, sid, sid_len, slot, st, sec, sec_len, bits, SIZE_MAX, &would_be) == MODEL_APPLY_APPLIED;
}

/* Offers a whole header record (present, stamp first), within max_bytes;
 * rec_size is its element's size, model_docsize_header(rec). */
static model_apply_result_t header_offer(model_aggregate_t *a, uint64_t version, const char *cid, const uint8_t *rec,
                                         size_t len, size_t rec_size, size_t max_bytes, size_t *would_be) {
  size_t cur_len;
  const uint8_t *cur = model_table_header(&a->t, &cur_len);
  if ((cur[0] & MODEL_REC_H_PRESENT) && !model_rec_stamp_greater(version, cid, cur + 1)) return MODEL_APPLY_STALE;
  size_t n = doc_size(a) - model_docsize_header(cur) + rec_size;
  *would_be = n;
  if (n > max_bytes) return MODEL_APPLY_TOO_LARGE;
  model_table_set_header(&a->t, rec, len);
  set_doc_size(a, n);
  return MODEL_APPLY_APPLIED;
}

/* Offers every slot of one student record, one by one. */
static bool record_offer(model_aggregate_t *a, const uint8_t *rec, size_t len) {
  size_t id_len = strlen((const char *)rec), pos[4];
  size_t flags_off = model_rec_sections(rec, id_len, len, pos);
  uint8_t f = rec[flags_off];
  bool changed = false;
  for (int slot = MODEL_REC_MEMBER; slot <= MODEL_REC_GRADE; slot++) {
    if (!(f & (MODEL_REC_F_MEMBER << slot))) continue;
    model_stamp_t st;
    model_rec_get_stamp(rec + pos[slot], &st);
    changed |= student_put(a, (const char *)rec, id_len, slot, &st, rec + pos[slot],
                           pos[slot + 1] - pos[slot], (uint8_t)(f & model_rec_slot_bits[slot]));
  }
  return changed;
}

/* Does src's section of `slot` replace dst's in a merge: present in src,
 * and absent in dst or with a greater stamp? (Records of one student,
 * flags df and sf, sections at dpos and spos.) The rule of the merge and of
 * model_aggregate_wins. */
static bool section_wins(const uint8_t *dr, uint8_t df, const size_t *dpos, const uint8_t *sr, uint8_t sf,
                         const size_t *spos, int slot) {
  uint8_t present = (uint8_t)(MODEL_REC_F_MEMBER << slot);
  if (!(sf & present)) return false;
  if (!(df & present)) return true;
  model_stamp_t st;
  model_rec_get_stamp(sr + spos[slot], &st);
  return model_rec_stamp_greater(st.version, st.id, dr + dpos[slot]);
}

/* The record of one student present in both: per slot, the section with
 * the greater stamp. Sets *src_won if any of src's sections replaced or
 * added to dst's. */
static size_t merge_record(const uint8_t *dr, size_t dlen, const uint8_t *sr, size_t slen, uint8_t *out,
                           bool *src_won) {
  size_t id_len = strlen((const char *)dr), dpos[4], spos[4];
  size_t flags_off = model_rec_sections(dr, id_len, dlen, dpos);
  model_rec_sections(sr, id_len, slen, spos);
  uint8_t df = dr[flags_off], sf = sr[flags_off], f = 0;
  memcpy(out, dr, flags_off);
  size_t n = flags_off + 1;
  for (int slot = MODEL_REC_MEMBER; slot <= MODEL_REC_GRADE; slot++) {
    bool use_src = section_wins(dr, df, dpos, sr, sf, spos, slot);
    const uint8_t *from = use_src ? sr : dr;
    const size_t *pos = use_src ? spos : dpos;
    f |= (uint8_t)((use_src ? sf : df) & model_rec_slot_bits[slot]);
    memcpy(out + n, from + pos[slot], pos[slot + 1] - pos[slot]);
    n += pos[slot + 1] - pos[slot];
    *src_won |= use_src;
  }
  out[flags_off] = f;
  return n;
}

/* b's records replace a's students, whose BSON size is `students`: the
 * document's size is its frame and header's plus theirs. */
static void install_students(model_aggregate_t *a, model_table_builder_t *b, size_t students) {
  model_table_builder_install(b, &a->t);
  size_t hlen;
  set_doc_size(a, model_docsize_base(a->t.tlen, a->t.alen) + model_docsize_header(model_table_header(&a->t, &hlen)) +
                      students);
}

/* The linear merge: walks both in order and builds dst's new table, which
 * replaces dst's students only if src won a slot. */
static bool merge_linear(model_aggregate_t *dst, const model_aggregate_t *src) {
  model_table_builder_t b = MODEL_TABLE_BUILDER_INIT;
  model_table_cursor_t kd, ks;
  model_table_cursor_init(&kd, &dst->t);
  model_table_cursor_init(&ks, &src->t);
  size_t dl, sl;
  const uint8_t *dr = model_table_cursor_next(&kd, &dl), *sr = model_table_cursor_next(&ks, &sl);
  bool src_won = false;
  uint8_t out[MODEL_REC_STUDENT_MAX];
  size_t students = 0; /* the BSON size of the students built */
  while (dr || sr) {
    int c = !dr ? 1 : !sr ? -1 : strcmp((const char *)dr, (const char *)sr);
    if (c < 0) {
      model_table_builder_add(&b, dr, dl);
      students += model_docsize_student(dr, dl);
      dr = model_table_cursor_next(&kd, &dl);
    } else if (c > 0) {
      model_table_builder_add(&b, sr, sl);
      students += model_docsize_student(sr, sl);
      src_won = true;
      sr = model_table_cursor_next(&ks, &sl);
    } else {
      size_t n = merge_record(dr, dl, sr, sl, out, &src_won);
      model_table_builder_add(&b, out, n);
      students += model_docsize_student(out, n);
      dr = model_table_cursor_next(&kd, &dl);
      sr = model_table_cursor_next(&ks, &sl);
    }
  }
  if (!src_won) {
    model_table_builder_discard(&b);
    return false;
  }
  install_students(dst, &b, students);
  return true;
}

/* ---- public API ---------------------------------------------------------------- */

model_aggregate_t *model_aggregate_new(const char *tenant, size_t tenant_len, const char *assignment,
                                       size_t assignment_len) {
  assert(tenant_len >= 1 && tenant_len <= MODEL_ID_MAX && assignment_len >= 1 && assignment_len <= MODEL_ID_MAX);
  model_aggregate_t *a = oom_malloc(sizeof *a);
  model_table_init(&a->t, tenant, tenant_len, assignment, assignment_len);
  size_t hlen;
  set_doc_size(a, model_docsize_base(tenant_len, assignment_len) + model_docsize_header(model_table_header(&a->t, &hlen)));
  return a;
}

void model_aggregate_destroy(model_aggregate_t *agg) {
  if (!agg) return;
  model_table_clear(&agg->t);
  free(agg);
}

const char *model_aggregate_key(const model_aggregate_t *agg, size_t *len) {
  if (len) *len = model_table_key_len(&agg->t);
  return model_table_key(&agg->t);
}

const char *model_aggregate_tenant(const model_aggregate_t *agg, size_t *len) {
  if (len) *len = agg->t.tlen;
  return model_table_tenant(&agg->t);
}

const char *model_aggregate_assignment(const model_aggregate_t *agg, size_t *len) {
  if (len) *len = agg->t.alen;
  return model_table_assignment(&agg->t);
}

/* a[0..n) == b[0..n) for short ids, eight bytes at a time: the last word
 * is the one ending at the last byte (overlapping the one before), and keys
 * under 8 bytes go as two overlapping 4-byte halves or byte by byte, so
 * that no read leaves either range. Always inline: model_aggregate_has_key
 * runs it twice on every command, and the compare is as short as a call. */
static inline __attribute__((always_inline)) bool bytes_equal(const char *a, const char *b, size_t n) {
  uint64_t x, y, u, v;
  if (n >= 8) {
    size_t i = 0;
    for (; n - i > 16; i += 8) {
      memcpy(&x, a + i, 8);
      memcpy(&y, b + i, 8);
      if (x != y) return false;
    }
    memcpy(&x, a + i, 8); /* 8 to 16 bytes left: the first word and the last, at once */
    memcpy(&y, b + i, 8);
    memcpy(&u, a + n - 8, 8);
    memcpy(&v, b + n - 8, 8);
    return ((x ^ y) | (u ^ v)) == 0;
  }
  if (n >= 4) {
    uint32_t p, q, r, s;
    memcpy(&p, a, 4);
    memcpy(&q, b, 4);
    memcpy(&r, a + n - 4, 4);
    memcpy(&s, b + n - 4, 4);
    return p == q && r == s;
  }
  for (size_t i = 0; i < n; i++)
    if (a[i] != b[i]) return false;
  return true;
}

bool model_aggregate_has_key(const model_aggregate_t *agg, const char *tenant, size_t tenant_len,
                             const char *assignment, size_t assignment_len) {
  const model_table_t *t = &agg->t;
  return t->tlen == tenant_len && t->alen == assignment_len && bytes_equal(model_table_tenant(t), tenant, tenant_len) &&
         bytes_equal(model_table_assignment(t), assignment, assignment_len);
}

int model_stamp_compare(const model_stamp_t *a, const model_stamp_t *b) {
  if (a->version != b->version) return a->version > b->version ? 1 : -1;
  return strcmp(a->id, b->id);
}

/* The header's value: an upsert's data, or {status: "deleted"}. */
static void header_of(const model_command_t *cmd, model_header_view_t *h) {
  *h = (model_header_view_t){.present = true, .stamp = {cmd->version, cmd->id, cmd->id_len}};
  if (cmd->type == MODEL_CMD_ASSIGNMENT_DELETED) {
    h->deleted = true;
    return;
  }
  h->class_id = cmd->data.assignment.class_id;
  h->class_len = cmd->data.assignment.class_len;
  h->title = cmd->data.assignment.title;
  h->title_len = cmd->data.assignment.title_len;
  h->status = cmd->data.assignment.status;
  h->has_due_at = cmd->data.assignment.has_due_at;
  h->due_at_ms = cmd->data.assignment.due_at_ms;
  h->has_points = cmd->data.assignment.has_points;
  h->points = cmd->data.assignment.points;
}

model_apply_result_t model_aggregate_apply(model_aggregate_t *agg, const model_command_t *cmd) {
  size_t would_be;
  return model_aggregate_apply_within(agg, cmd, SIZE_MAX, &would_be);
}

model_apply_result_t model_aggregate_apply_within(model_aggregate_t *agg, const model_command_t *cmd,
                                                  size_t max_bytes, size_t *would_be) {
  *would_be = doc_size(agg);
  assert(cmd->tenant_len == agg->t.tlen && !memcmp(cmd->tenant, model_table_tenant(&agg->t), agg->t.tlen));
  assert(cmd->assignment_len == agg->t.alen &&
         !memcmp(cmd->assignment, model_table_assignment(&agg->t), agg->t.alen));
  uint8_t buf[MODEL_REC_SECTION_MAX], bits;
  model_stamp_t st = {cmd->version, cmd->id, cmd->id_len};
  size_t n;
  int slot;
  switch (cmd->type) {
  case MODEL_CMD_ASSIGNMENT_UPSERTED:
  case MODEL_CMD_ASSIGNMENT_DELETED: {
    /* Cheap early out before encoding: most stale commands stop here. */
    size_t cur_len;
    const uint8_t *cur = model_table_header(&agg->t, &cur_len);
    if ((cur[0] & MODEL_REC_H_PRESENT) && !model_rec_stamp_greater(st.version, st.id, cur + 1))
      return MODEL_APPLY_STALE;
    model_header_view_t h;
    header_of(cmd, &h);
    n = model_rec_encode_header(buf, &h);
    return header_offer(agg, st.version, st.id, buf, n, model_docsize_header_view(&h), max_bytes, would_be);
  }
  case MODEL_CMD_ROSTER_ASSIGNED:
  case MODEL_CMD_ROSTER_UNASSIGNED:
    slot = MODEL_REC_MEMBER;
    n = model_rec_encode_member(buf, &st, cmd->type == MODEL_CMD_ROSTER_ASSIGNED, &bits);
    break;
  case MODEL_CMD_SUBMISSION_UPDATED:
    slot = MODEL_REC_SUB;
    n = model_rec_encode_submission(buf, &st, cmd->data.submission.status, cmd->data.submission.has_submitted_at,
                                    cmd->data.submission.submitted_at_ms, cmd->data.submission.has_returned_at,
                                    cmd->data.submission.returned_at_ms, &bits);
    break;
  case MODEL_CMD_GRADE_UPDATED:
    slot = MODEL_REC_GRADE;
    n = model_rec_encode_grade(buf, &st, cmd->data.grade.has_points, cmd->data.grade.points,
                               cmd->data.grade.has_feedback, cmd->data.grade.feedback, cmd->data.grade.feedback_len,
                               &bits);
    break;
  default:
    assert(!"unknown command type");
    return MODEL_APPLY_STALE;
  }
  return student_offer(agg, cmd->student, cmd->student_len, slot, &st, buf, n, bits, max_bytes,
                       would_be);
}

/* Merging src into dst walks both in order and builds dst's new table
 * (linear in the students of both); when src is much smaller than dst (a
 * flush's few changed students merged into a large stored aggregate),
 * offering its slots one by one is cheaper: O(k (log n + run)) instead of
 * O(n). Sections are copied as encoded bytes: the encoding is canonical. */
bool model_aggregate_merge(model_aggregate_t *dst, const model_aggregate_t *src) {
  assert(model_table_key_len(&dst->t) == model_table_key_len(&src->t) &&
         !memcmp(model_table_key(&dst->t), model_table_key(&src->t), model_table_key_len(&src->t)));
  if (dst == src) return false;
  bool changed = false;
  size_t hlen;
  const uint8_t *h = model_table_header(&src->t, &hlen);
  if (h[0] & MODEL_REC_H_PRESENT) {
    model_stamp_t st;
    model_rec_get_stamp(h + 1, &st);
    size_t would_be;
    changed |= header_offer(dst, st.version, st.id, h, hlen, model_docsize_header(h), SIZE_MAX, &would_be) ==
               MODEL_APPLY_APPLIED;
  }
  size_t ns = model_table_count(&src->t);
  if (ns == 0) return changed;
  if (ns * 16 < model_table_count(&dst->t)) {
    model_table_cursor_t k;
    model_table_cursor_init(&k, &src->t);
    size_t len;
    const uint8_t *rec;
    while ((rec = model_table_cursor_next(&k, &len)) != NULL) changed |= record_offer(dst, rec, len);
    return changed;
  }
  return merge_linear(dst, src) || changed;
}

/* The merged document holds each element of dst or of src, a student's
 * frame and the base once: it is never larger than the two documents
 * together less one base. Below max_bytes by that bound, dst is merged at
 * once; otherwise into a copy first, which is kept (its table swapped into
 * dst) only when it fits. */
model_apply_result_t model_aggregate_merge_within(model_aggregate_t *dst, const model_aggregate_t *src,
                                                  size_t max_bytes, size_t *would_be) {
  size_t base = model_docsize_base(dst->t.tlen, dst->t.alen);
  if (doc_size(dst) + doc_size(src) - base <= max_bytes) {
    bool changed = model_aggregate_merge(dst, src);
    *would_be = doc_size(dst);
    return changed ? MODEL_APPLY_APPLIED : MODEL_APPLY_STALE;
  }
  model_aggregate_t *copy = model_aggregate_clone(dst);
  bool changed = model_aggregate_merge(copy, src);
  *would_be = doc_size(copy);
  if (*would_be > max_bytes) {
    model_aggregate_destroy(copy);
    return MODEL_APPLY_TOO_LARGE;
  }
  model_table_t t = dst->t;
  dst->t = copy->t;
  copy->t = t;
  model_aggregate_destroy(copy);
  return changed ? MODEL_APPLY_APPLIED : MODEL_APPLY_STALE;
}

/* The slots of a student record of src that a merge would put into dst,
 * whose record of the same student is dr (NULL when dst lacks it), as a
 * MODEL_SLOT_* mask. */
static uint8_t record_wins(const uint8_t *dr, size_t dlen, const uint8_t *sr, size_t slen) {
  size_t id_len = strlen((const char *)sr), dpos[4], spos[4];
  size_t flags_off = model_rec_sections(sr, id_len, slen, spos);
  uint8_t sf = sr[flags_off];
  if (!dr) return sf & (MODEL_REC_F_MEMBER | MODEL_REC_F_SUB | MODEL_REC_F_GRADE);
  model_rec_sections(dr, id_len, dlen, dpos);
  uint8_t df = dr[flags_off], mask = 0;
  for (int slot = MODEL_REC_MEMBER; slot <= MODEL_REC_GRADE; slot++)
    if (section_wins(dr, df, dpos, sr, sf, spos, slot)) mask |= (uint8_t)(MODEL_REC_F_MEMBER << slot);
  return mask;
}

_Static_assert(MODEL_SLOT_MEMBER == MODEL_REC_F_MEMBER << MODEL_REC_MEMBER &&
                   MODEL_SLOT_SUBMISSION == MODEL_REC_F_MEMBER << MODEL_REC_SUB &&
                   MODEL_SLOT_GRADE == MODEL_REC_F_MEMBER << MODEL_REC_GRADE,
               "a slot's mask bit is its record's presence flag");

/* As the merge: the header by its stamp, then overlay's students either
 * looked up one by one in stored (a small overlay over a large stored
 * aggregate) or walked beside stored's in order. */
bool model_aggregate_each_win(const model_aggregate_t *stored, const model_aggregate_t *overlay,
                              model_slot_win_fn fn, void *ctx) {
  assert(model_table_key_len(&stored->t) == model_table_key_len(&overlay->t) &&
         !memcmp(model_table_key(&stored->t), model_table_key(&overlay->t), model_table_key_len(&overlay->t)));
  size_t hl, ol;
  bool header = false;
  const uint8_t *h = model_table_header(&overlay->t, &ol), *cur = model_table_header(&stored->t, &hl);
  if (h[0] & MODEL_REC_H_PRESENT) {
    model_stamp_t st;
    model_rec_get_stamp(h + 1, &st);
    header = !(cur[0] & MODEL_REC_H_PRESENT) || model_rec_stamp_greater(st.version, st.id, cur + 1);
  }
  bool lookup = model_table_count(&overlay->t) * 16 < model_table_count(&stored->t);
  model_table_cursor_t ks, ko;
  model_table_cursor_init(&ks, &stored->t);
  model_table_cursor_init(&ko, &overlay->t);
  size_t sl = 0, len;
  const uint8_t *sr = lookup ? NULL : model_table_cursor_next(&ks, &sl), *rec;
  while ((rec = model_table_cursor_next(&ko, &len)) != NULL) {
    const char *id = (const char *)rec;
    size_t id_len = strlen(id);
    const uint8_t *dr = NULL;
    size_t dl = 0;
    if (lookup) {
      model_table_pos_t at;
      if (model_table_find(&stored->t, id, id_len, &at)) dr = at.rec, dl = at.rec_len;
    } else {
      while (sr && strcmp((const char *)sr, id) < 0) sr = model_table_cursor_next(&ks, &sl);
      if (sr && !strcmp((const char *)sr, id)) dr = sr, dl = sl;
    }
    uint8_t mask = record_wins(dr, dl, rec, len);
    if (mask) fn(ctx, id, id_len, mask);
  }
  return header;
}

/* Do a and b have the same header record? */
static bool same_header(const model_aggregate_t *a, const model_aggregate_t *b) {
  size_t la, lb;
  const uint8_t *ha = model_table_header(&a->t, &la), *hb = model_table_header(&b->t, &lb);
  return la == lb && !memcmp(ha, hb, la);
}

bool model_aggregate_equal(const model_aggregate_t *a, const model_aggregate_t *b) {
  if (a == b) return true;
  size_t klen = model_table_key_len(&a->t);
  if (model_table_key_len(&b->t) != klen || memcmp(model_table_key(&a->t), model_table_key(&b->t), klen) ||
      model_table_count(&a->t) != model_table_count(&b->t) || !same_header(a, b))
    return false;
  /* Runs may be cut at different students: compare the records in order. */
  model_table_cursor_t ka, kb;
  model_table_cursor_init(&ka, &a->t);
  model_table_cursor_init(&kb, &b->t);
  size_t la, lb;
  const uint8_t *ra, *rb;
  while ((ra = model_table_cursor_next(&ka, &la)) != NULL) {
    rb = model_table_cursor_next(&kb, &lb);
    if (!rb || la != lb || memcmp(ra, rb, la)) return false;
  }
  return model_table_cursor_next(&kb, &lb) == NULL;
}

bool model_aggregate_diff(const model_aggregate_t *from, const model_aggregate_t *to,
                          void (*fn)(void *ctx, const model_aggregate_t *to, size_t i), void *ctx) {
  assert(model_table_key_len(&from->t) == model_table_key_len(&to->t) &&
         !memcmp(model_table_key(&from->t), model_table_key(&to->t), model_table_key_len(&to->t)));
  model_table_cursor_t kf, kt;
  model_table_cursor_init(&kf, &from->t);
  model_table_cursor_init(&kt, &to->t);
  size_t lf = 0, lt, i = 0;
  const uint8_t *rf = model_table_cursor_next(&kf, &lf), *rt;
  while ((rt = model_table_cursor_next(&kt, &lt)) != NULL) {
    while (rf && strcmp((const char *)rf, (const char *)rt) < 0) rf = model_table_cursor_next(&kf, &lf);
    bool same = rf && lf == lt && !memcmp(rf, rt, lt);
    if (!same) fn(ctx, to, i);
    i++;
  }
  return !same_header(from, to);
}

bool model_aggregate_find_student(const model_aggregate_t *agg, const char *id, size_t len, size_t *index) {
  size_t lo = 0, hi = model_table_count(&agg->t);
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    const char *sid = (const char *)model_table_student(&agg->t, mid);
    size_t sid_len = strlen(sid);
    /* The students' order: bytewise, a prefix first (strcmp's order). */
    int c = memcmp(sid, id, sid_len < len ? sid_len : len);
    if (c == 0) c = sid_len < len ? -1 : sid_len > len;
    if (c == 0) {
      *index = mid;
      return true;
    }
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return false;
}

bool model_aggregate_remove_student(model_aggregate_t *agg, const char *id, size_t len) {
  size_t at;
  if (!model_aggregate_find_student(agg, id, len, &at)) return false;
  model_table_builder_t b = MODEL_TABLE_BUILDER_INIT;
  model_table_cursor_t k;
  model_table_cursor_init(&k, &agg->t);
  size_t rl, students = 0, i = 0;
  for (const uint8_t *r = model_table_cursor_next(&k, &rl); r; r = model_table_cursor_next(&k, &rl), i++) {
    if (i == at) continue;
    model_table_builder_add(&b, r, rl);
    students += model_docsize_student(r, rl);
  }
  install_students(agg, &b, students);
  return true;
}

bool model_aggregate_is_empty(const model_aggregate_t *agg) {
  if (model_table_count(&agg->t)) return false;
  model_header_view_t h;
  model_aggregate_header(agg, &h);
  return !h.present;
}

model_aggregate_t *model_aggregate_clone(const model_aggregate_t *agg) {
  model_aggregate_t *c = oom_malloc(sizeof *c);
  model_table_copy(&c->t, &agg->t);
  return c;
}

model_counts_t model_aggregate_counts(const model_aggregate_t *agg) {
  model_counts_t c = {0, 0, 0, 0};
  model_table_cursor_t k;
  model_table_cursor_init(&k, &agg->t);
  const uint8_t *rec;
  size_t len;
  while ((rec = model_table_cursor_next(&k, &len)) != NULL) {
    /* The flags byte and the grade's points kind are all the rule reads:
     * no stamp, time or feedback is decoded. */
    size_t pos[4];
    uint8_t f = rec[model_rec_sections(rec, strlen((const char *)rec), len, pos)];
    const uint8_t in = MODEL_REC_F_MEMBER | MODEL_REC_F_ASSIGNED;
    model_counts_add_slot(&c, (f & in) == in, f & MODEL_REC_F_SUB,
                          (model_submission_status_t)((f & MODEL_REC_F_SUBSTAT_MASK) >> MODEL_REC_F_SUBSTAT_SHIFT),
                          (f & MODEL_REC_F_GRADE) && model_rec_grade_has_points(rec + pos[MODEL_REC_GRADE]));
  }
  return c;
}

size_t model_aggregate_doc_size(const model_aggregate_t *agg) { return doc_size(agg); }

size_t model_aggregate_memory(const model_aggregate_t *agg) { return sizeof *agg + model_table_memory(&agg->t); }

/* ---- read access ---------------------------------------------------------------- */

void model_aggregate_header(const model_aggregate_t *agg, model_header_view_t *out) {
  size_t len;
  model_rec_decode_header(model_table_header(&agg->t, &len), out);
}

size_t model_aggregate_student_count(const model_aggregate_t *agg) { return model_table_count(&agg->t); }

void model_aggregate_student(const model_aggregate_t *agg, size_t i, model_student_view_t *out) {
  assert(i < model_table_count(&agg->t));
  model_rec_decode_student(model_table_student(&agg->t, i), out);
}

/* ---- write access ---------------------------------------------------------------- */

bool model_aggregate_put_header(model_aggregate_t *agg, const model_header_view_t *h) {
  if (!h->present) return false;
  assert(h->stamp.id_len >= 1 && h->stamp.id_len <= MODEL_CMD_ID_MAX);
  assert(h->deleted || (h->class_len <= MODEL_ID_MAX && h->title_len <= MODEL_TITLE_MAX));
  size_t cur_len;
  const uint8_t *cur = model_table_header(&agg->t, &cur_len);
  if ((cur[0] & MODEL_REC_H_PRESENT) && !model_rec_stamp_greater(h->stamp.version, h->stamp.id, cur + 1))
    return false;
  uint8_t buf[MODEL_REC_SECTION_MAX];
  size_t n = model_rec_encode_header(buf, h), would_be;
  return header_offer(agg, h->stamp.version, h->stamp.id, buf, n, model_docsize_header(buf), SIZE_MAX, &would_be) ==
         MODEL_APPLY_APPLIED;
}

bool model_aggregate_put_student(model_aggregate_t *agg, const model_student_view_t *s) {
  assert(s->student_len >= 1 && s->student_len <= MODEL_ID_MAX);
  uint8_t buf[MODEL_REC_SECTION_MAX], bits;
  bool changed = false;
  if (s->has_member) {
    const model_stamp_t *st = &s->member_stamp;
    size_t n = model_rec_encode_member(buf, st, s->assigned, &bits);
    changed |= student_put(agg, s->student, s->student_len, MODEL_REC_MEMBER, st, buf, n, bits);
  }
  if (s->has_submission) {
    const model_stamp_t *st = &s->submission_stamp;
    size_t n = model_rec_encode_submission(buf, st, s->submission_status, s->has_submitted_at, s->submitted_at_ms,
                                           s->has_returned_at, s->returned_at_ms, &bits);
    changed |= student_put(agg, s->student, s->student_len, MODEL_REC_SUB, st, buf, n, bits);
  }
  if (s->has_grade) {
    assert(!s->has_feedback || s->feedback_len <= MODEL_FEEDBACK_MAX);
    const model_stamp_t *st = &s->grade_stamp;
    size_t n = model_rec_encode_grade(buf, st, s->has_points, s->points, s->has_feedback, s->feedback,
                                      s->feedback_len, &bits);
    changed |= student_put(agg, s->student, s->student_len, MODEL_REC_GRADE, st, buf, n, bits);
  }
  return changed;
}
