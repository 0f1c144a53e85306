/* The aggregate of one assignment and its merge (SPEC.md section 3).
 *
 * Memory layout, and why
 * ----------------------
 * The worker keeps tens of thousands of aggregates in memory, and the budget
 * is about 2 KiB for an assignment of 30 students with every slot filled.
 * A struct per student with malloc'd strings costs 3-4 times that (8-byte
 * versions and dates, 16-byte pointers and malloc headers per string), so an
 * aggregate is a small handle plus ONE contiguous byte block:
 *
 *   block = key "tenant/assignment" NUL | tenant NUL
 *         | fingerprints: n bytes, a hash byte of each student id
 *         | index: n offsets (2 bytes each, 4 once the records pass 64 KiB)
 *         | header record
 *         | student records, sorted by student id, back to back
 *
 * Records are byte strings in a canonical encoding (unsigned LEB128 varints
 * for versions, zigzag varints for dates, points as centi-points when that is
 * exact, strings NUL-terminated: the spec forbids U+0000 in every string), so
 * equal slots have equal bytes and model_aggregate_equal() is a memcmp.
 * Index offsets are relative to the start of the records, so a change in the
 * header or the index itself moves no offset. A lookup scans the
 * fingerprints (memchr) and compares only the records whose byte matches;
 * with the tables next to the key, finding a student of a 30-student
 * aggregate touches about three cache lines instead of one per probe of a
 * binary search (the benchmark's working set is far larger than the cache).
 *
 *   student record = id NUL | flags | [member] | [submission] | [grade]
 *     flags: F_MEMBER F_SUB F_GRADE (which sections follow), F_ASSIGNED,
 *            the submission status (2 bits), F_SUBMITTED_AT, F_RETURNED_AT
 *     member     = stamp
 *     submission = stamp [submittedAt] [returnedAt]
 *     grade      = stamp gflags [points] [feedback NUL]
 *   header record = hflags [stamp [class NUL title NUL [dueAt] [points]]]
 *   stamp = varint version, command id NUL
 *
 * Trade-off: a slot update splices bytes (memmove of the rest of the block,
 * ~1 KiB for a 30-student assignment, and a fix-up of the following index
 * entries) and a read parses varints, instead of plain field stores and loads.
 * For assignment-sized aggregates that costs tens of nanoseconds, far inside
 * the per-command budget, and it keeps memory close to the content. The
 * block grows in 128-byte size classes (grow_cap), so that a stream of
 * growing updates does not realloc on every command.
 *
 * Measured (scripts/bench-models: 20,000 assignments of 30 students, every
 * slot filled, 10-byte command ids, 8-byte student ids, short feedback):
 * the handle and block hold 2135 bytes per aggregate, malloc has 2205 in
 * use (with the benchmark's hash table), and RSS grows by ~2.5 KiB per
 * aggregate, the rest being heap holes left by 20,000 blocks that grew in
 * step. About 1.5 KiB of the content is the strings themselves (90 command
 * ids, 30 student ids, feedback), which the views must be able to return
 * NUL-terminated, so they are stored as they are.
 *
 * Allocation failure aborts (oom.h, the project's one policy): the merge API
 * stays total, with no error path that could leave an aggregate
 * half-updated. */
#include "aggregate.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "oom.h"

struct model_aggregate {
  uint8_t *blk;
  uint32_t cap, used;    /* bytes allocated / in use in blk */
  uint32_t n;            /* students */
  unsigned hdr_len : 15; /* bytes of the header record (at most ~1.3 KiB) */
  unsigned wide : 1;     /* index entries are uint32 instead of uint16 */
  unsigned tlen : 8, alen : 8; /* tenant and assignment id lengths (ids are <= 64 bytes) */
};
/* 24 bytes: the smallest glibc chunk (32) holds the handle. */
_Static_assert(sizeof(struct model_aggregate) <= 24, "aggregate handle grew");

enum { SLOT_MEMBER = 0, SLOT_SUB = 1, SLOT_GRADE = 2 };

/* student record flags */
enum {
  F_MEMBER = 0x01,
  F_SUB = 0x02,
  F_GRADE = 0x04,
  F_ASSIGNED = 0x08,
  F_SUBSTAT_SHIFT = 4, /* 2 bits: model_submission_status_t */
  F_SUBSTAT_MASK = 0x30,
  F_SUBMITTED_AT = 0x40,
  F_RETURNED_AT = 0x80,
};
/* bits of the flags byte that belong to each slot (cleared when it is replaced) */
static const uint8_t slot_bits[3] = {F_MEMBER | F_ASSIGNED, F_SUB | F_SUBSTAT_MASK | F_SUBMITTED_AT | F_RETURNED_AT,
                                     F_GRADE};

/* grade flags */
enum { G_POINTS_MASK = 0x03, G_FEEDBACK = 0x04 };
/* header flags */
enum {
  H_PRESENT = 0x01,
  H_DELETED = 0x02,
  H_STATUS_SHIFT = 2, /* 2 bits: model_assignment_status_t */
  H_STATUS_MASK = 0x0c,
  H_DUE = 0x10,
  H_POINTS_SHIFT = 5, /* 2 bits: points kind */
  H_POINTS_MASK = 0x60,
};
/* points kinds */
enum { PTS_NULL = 0, PTS_CENTI = 1, PTS_DOUBLE = 2 };

/* Largest encoded section: a grade with a 128-byte id and 4096 bytes of
 * feedback; a header with a 1024-byte title is smaller. */
#define SCRATCH_SIZE (10 + MODEL_CMD_ID_MAX + 1 + 1 + 10 + MODEL_FEEDBACK_MAX + 1 + 64)

/* ---- encoding primitives --------------------------------------------------- */

static size_t put_uv(uint8_t *p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[n++] = (uint8_t)v;
  return n;
}

static const uint8_t *get_uv(const uint8_t *p, uint64_t *v) {
  uint64_t r = 0;
  unsigned s = 0;
  while (*p & 0x80) {
    r |= (uint64_t)(*p++ & 0x7f) << s;
    s += 7;
  }
  *v = r | (uint64_t)*p++ << s;
  return p;
}

static const uint8_t *skip_uv(const uint8_t *p) {
  while (*p++ & 0x80) {
  }
  return p;
}

static size_t put_date(uint8_t *p, int64_t ms) { return put_uv(p, ((uint64_t)ms << 1) ^ (uint64_t)(ms >> 63)); }

static const uint8_t *get_date(const uint8_t *p, int64_t *ms) {
  uint64_t z;
  p = get_uv(p, &z);
  *ms = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
  return p;
}

static size_t put_str(uint8_t *p, const char *s, size_t n) {
  memcpy(p, s, n);
  p[n] = 0;
  return n + 1;
}

static const uint8_t *skip_str(const uint8_t *p) { return p + strlen((const char *)p) + 1; }

/* Points are mostly whole or two-decimal numbers: store k = points * 100 as a
 * varint when k / 100.0 gives back exactly the same double (2-3 bytes instead
 * of 8), else the raw IEEE bits. -0.0 stays raw so that it survives. */
static unsigned points_kind(double v, uint64_t *centi) {
  if (!(v >= 0 && v < 1e12) || signbit(v)) return PTS_DOUBLE;
  uint64_t k = (uint64_t)(v * 100.0 + 0.5);
  if ((double)k / 100.0 != v) return PTS_DOUBLE;
  *centi = k;
  return PTS_CENTI;
}

static size_t put_points(uint8_t *p, double v, unsigned *kind) {
  uint64_t k = 0;
  *kind = points_kind(v, &k);
  if (*kind == PTS_CENTI) return put_uv(p, k);
  memcpy(p, &v, sizeof v);
  return sizeof v;
}

static const uint8_t *get_points(const uint8_t *p, unsigned kind, double *v) {
  if (kind == PTS_CENTI) {
    uint64_t k;
    p = get_uv(p, &k);
    *v = (double)k / 100.0;
    return p;
  }
  memcpy(v, p, sizeof *v);
  return p + sizeof *v;
}

static size_t put_stamp(uint8_t *p, uint64_t version, const char *id, size_t id_len) {
  size_t n = put_uv(p, version);
  return n + put_str(p + n, id, id_len);
}

static const uint8_t *get_stamp(const uint8_t *p, model_stamp_t *st) {
  p = get_uv(p, &st->version);
  st->id = (const char *)p;
  st->id_len = strlen(st->id);
  return p + st->id_len + 1;
}

static const uint8_t *skip_stamp(const uint8_t *p) { return skip_str(skip_uv(p)); }

/* Is (version, id) greater than the stamp encoded at p? */
static bool stamp_greater(uint64_t version, const char *id, const uint8_t *p) {
  uint64_t v;
  p = get_uv(p, &v);
  if (version != v) return version > v;
  return strcmp(id, (const char *)p) > 0;
}

/* ---- the block ------------------------------------------------------------- */

static size_t key_len(const model_aggregate_t *a) { return (size_t)a->tlen + 1 + a->alen; }
static size_t idx_w(const model_aggregate_t *a) { return a->wide ? 4 : 2; }
static size_t fp_off(const model_aggregate_t *a) { return key_len(a) + 1 + a->tlen + 1; }
static size_t idx_off(const model_aggregate_t *a) { return fp_off(a) + a->n; }
static size_t hdr_off(const model_aggregate_t *a) { return idx_off(a) + a->n * idx_w(a); }
static size_t rec_off(const model_aggregate_t *a) { return hdr_off(a) + a->hdr_len; }
static size_t area_len(const model_aggregate_t *a) { return a->used - rec_off(a); }

static uint32_t idx_get(const model_aggregate_t *a, size_t i) {
  const uint8_t *p = a->blk + idx_off(a) + i * idx_w(a);
  if (a->wide) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
  }
  uint16_t v;
  memcpy(&v, p, 2);
  return v;
}

static void idx_set(model_aggregate_t *a, size_t i, uint32_t off) {
  uint8_t *p = a->blk + idx_off(a) + i * idx_w(a);
  if (a->wide) {
    memcpy(p, &off, 4);
  } else {
    uint16_t v = (uint16_t)off;
    memcpy(p, &v, 2);
  }
}

static uint8_t *rec_ptr(const model_aggregate_t *a, size_t i) { return a->blk + rec_off(a) + idx_get(a, i); }
static size_t rec_len(const model_aggregate_t *a, size_t i) {
  return (i + 1 < a->n ? idx_get(a, i + 1) : area_len(a)) - idx_get(a, i);
}

/* Capacity for `need` bytes: the next size class of 128 bytes, counting
 * glibc's 8-byte chunk header, so that the malloc chunk is used whole.
 * Classes matter more than slack: thousands of aggregates grow in step, and
 * a block freed by one aggregate's realloc is reused by the next aggregate
 * that grows through the same class. Measured with scripts/bench-models
 * (RSS growth per 30-student aggregate, from empty): 128-byte classes
 * 2514 B; 256-byte classes 2537 B; exact + 1/32 slack 2631 B; exact + 1/16
 * 2664 B; exact + 1/4 2818 B; speed differences were within the noise. */
static uint32_t grow_cap(size_t need) {
  size_t c = (need + 8 + 127) / 128 * 128 - 8;
  if (c > UINT32_MAX) abort();
  return (uint32_t)c;
}

static void reserve(model_aggregate_t *a, size_t need) {
  if (need <= a->cap) return;
  uint32_t cap = grow_cap(need);
  a->blk = oom_realloc(a->blk, cap);
  a->cap = cap;
}

/* Replaces blk[off, off + old_len) with src[0, new_len). src must not point
 * into the block. */
static void splice(model_aggregate_t *a, size_t off, size_t old_len, const void *src, size_t new_len) {
  if (new_len > old_len) reserve(a, (size_t)a->used + new_len - old_len);
  memmove(a->blk + off + new_len, a->blk + off + old_len, a->used - off - old_len);
  if (new_len) memcpy(a->blk + off, src, new_len);
  a->used = (uint32_t)(a->used + new_len - old_len);
}

/* Switches the index to 4-byte entries before the records outgrow uint16. */
static void ensure_width(model_aggregate_t *a, size_t new_area_len) {
  if (a->wide || new_area_len <= UINT16_MAX) return;
  size_t n = a->n, off = idx_off(a);
  uint32_t *tmp = oom_malloc(n * 4 + 1);
  for (size_t i = 0; i < n; i++) tmp[i] = idx_get(a, i);
  splice(a, off, n * 2, tmp, n * 4);
  a->wide = 1;
  free(tmp);
}

/* Student i's record [pos, pos + old_len) becomes src[0, new_len). */
static void splice_record(model_aggregate_t *a, size_t i, size_t pos, size_t old_len, const void *src,
                          size_t new_len) {
  if (new_len == old_len) {
    memcpy(rec_ptr(a, i) + pos, src, new_len);
    return;
  }
  ensure_width(a, area_len(a) + new_len - old_len);
  splice(a, rec_off(a) + idx_get(a, i) + pos, old_len, src, new_len);
  for (size_t j = i + 1; j < a->n; j++) idx_set(a, j, (uint32_t)(idx_get(a, j) + new_len - old_len));
}

/* One byte of hash of a student id: lookups scan these (one or two cache
 * lines) instead of binary-searching the records (a cache miss per probe). */
static uint8_t fingerprint(const char *s, size_t n) {
  uint32_t h = hash_fnv1a32(HASH_FNV1A32_INIT, s, n);
  return (uint8_t)(h ^ h >> 8 ^ h >> 16 ^ h >> 24);
}

/* Inserts a whole record (its id first) as student i; the records after it
 * move up. */
static void insert_record(model_aggregate_t *a, size_t i, const uint8_t *rec, size_t len) {
  ensure_width(a, area_len(a) + len);
  uint32_t off = i < a->n ? idx_get(a, i) : (uint32_t)area_len(a);
  splice(a, rec_off(a) + off, 0, rec, len);
  size_t w = idx_w(a);
  uint8_t zero[4] = {0};
  splice(a, idx_off(a) + i * w, 0, zero, w);
  uint8_t fp = fingerprint((const char *)rec, strlen((const char *)rec));
  splice(a, fp_off(a) + i, 0, &fp, 1);
  a->n++;
  idx_set(a, i, off);
  for (size_t j = i + 1; j < a->n; j++) idx_set(a, j, (uint32_t)(idx_get(a, j) + len));
}

/* Compares the id s[0..len) with a record's NUL-terminated id, as strcmp. */
static int cmp_sid(const char *s, size_t len, const uint8_t *rec) {
  int c = strncmp(s, (const char *)rec, len);
  if (c) return c;
  return rec[len] ? -1 : 0;
}

/* *pos is the student's index, or where it would be inserted. */
static bool find_student(const model_aggregate_t *a, const char *sid, size_t len, size_t *pos) {
  const uint8_t *fps = a->blk + fp_off(a), *end = fps + a->n, *p = fps;
  uint8_t f = fingerprint(sid, len);
  while ((p = memchr(p, f, (size_t)(end - p))) != NULL) {
    if (cmp_sid(sid, len, rec_ptr(a, (size_t)(p - fps))) == 0) {
      *pos = (size_t)(p - fps);
      return true;
    }
    p++;
  }
  size_t lo = 0, hi = a->n; /* absent: binary search for its place */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cmp_sid(sid, len, rec_ptr(a, mid)) < 0) hi = mid;
    else lo = mid + 1;
  }
  *pos = lo;
  return false;
}

/* Offsets in a student record: sec[0..2] = start of the member, submission
 * and grade sections (where they are or would be), sec[3] = end. Returns the
 * offset of the flags byte. */
static size_t locate_sections(const uint8_t *rec, size_t len, size_t sec[4]) {
  size_t flags_off = strlen((const char *)rec) + 1;
  uint8_t f = rec[flags_off];
  const uint8_t *p = rec + flags_off + 1;
  sec[0] = (size_t)(p - rec);
  if (f & F_MEMBER) p = skip_stamp(p);
  sec[1] = (size_t)(p - rec);
  if (f & F_SUB) {
    p = skip_stamp(p);
    if (f & F_SUBMITTED_AT) p = skip_uv(p);
    if (f & F_RETURNED_AT) p = skip_uv(p);
  }
  sec[2] = (size_t)(p - rec);
  sec[3] = len;
  return flags_off;
}

/* The core of apply, merge and put_student: offers one encoded section
 * (stamp first) for slot `slot` of student sid, with its flag bits. */
static bool student_offer(model_aggregate_t *a, const char *sid, size_t sid_len, int slot, uint64_t version,
                          const char *cid, const uint8_t *sec, size_t sec_len, uint8_t bits) {
  size_t i;
  if (!find_student(a, sid, sid_len, &i)) {
    uint8_t rec[MODEL_ID_MAX + 2 + SCRATCH_SIZE];
    size_t n = put_str(rec, sid, sid_len);
    rec[n++] = bits;
    memcpy(rec + n, sec, sec_len);
    insert_record(a, i, rec, n + sec_len);
    return true;
  }
  uint8_t *rec = rec_ptr(a, i);
  size_t pos[4];
  size_t flags_off = locate_sections(rec, rec_len(a, i), pos);
  uint8_t f = rec[flags_off];
  uint8_t present = (uint8_t)(F_MEMBER << slot);
  if ((f & present) && !stamp_greater(version, cid, rec + pos[slot])) return false;
  size_t old_len = (f & present) ? pos[slot + 1] - pos[slot] : 0;
  splice_record(a, i, pos[slot], old_len, sec, sec_len);
  rec = rec_ptr(a, i);
  rec[flags_off] = (uint8_t)((f & ~slot_bits[slot]) | bits);
  return true;
}

/* The header record is replaced whole. */
static bool header_offer(model_aggregate_t *a, uint64_t version, const char *cid, const uint8_t *rec, size_t len) {
  const uint8_t *cur = a->blk + hdr_off(a);
  if ((cur[0] & H_PRESENT) && !stamp_greater(version, cid, cur + 1)) return false;
  splice(a, hdr_off(a), a->hdr_len, rec, len);
  a->hdr_len = (uint16_t)len;
  return true;
}

/* ---- section encoders (shared by apply and put) ----------------------------- */

static size_t enc_header(uint8_t *p, const model_header_view_t *h) {
  size_t n = 1;
  uint8_t f = H_PRESENT;
  n += put_stamp(p + n, h->stamp.version, h->stamp.id, h->stamp.id_len);
  if (h->deleted) {
    f |= H_DELETED;
  } else {
    f |= (uint8_t)(h->status << H_STATUS_SHIFT);
    n += put_str(p + n, h->class_id, h->class_len);
    n += put_str(p + n, h->title, h->title_len);
    if (h->has_due_at) {
      f |= H_DUE;
      n += put_date(p + n, h->due_at_ms);
    }
    if (h->has_points) {
      unsigned kind;
      n += put_points(p + n, h->points, &kind);
      f |= (uint8_t)(kind << H_POINTS_SHIFT);
    }
  }
  p[0] = f;
  return n;
}

static size_t enc_submission(uint8_t *p, const model_stamp_t *st, model_submission_status_t status, bool has_sub_at,
                             int64_t sub_at, bool has_ret_at, int64_t ret_at, uint8_t *bits) {
  size_t n = put_stamp(p, st->version, st->id, st->id_len);
  *bits = (uint8_t)(F_SUB | (unsigned)status << F_SUBSTAT_SHIFT);
  if (has_sub_at) {
    *bits |= F_SUBMITTED_AT;
    n += put_date(p + n, sub_at);
  }
  if (has_ret_at) {
    *bits |= F_RETURNED_AT;
    n += put_date(p + n, ret_at);
  }
  return n;
}

static size_t enc_grade(uint8_t *p, const model_stamp_t *st, bool has_points, double points, bool has_feedback,
                        const char *feedback, size_t feedback_len) {
  size_t n = put_stamp(p, st->version, st->id, st->id_len);
  size_t gf = n++;
  unsigned kind = PTS_NULL;
  if (has_points) n += put_points(p + n, points, &kind);
  if (has_feedback) n += put_str(p + n, feedback, feedback_len);
  p[gf] = (uint8_t)(kind | (has_feedback ? G_FEEDBACK : 0));
  return n;
}

/* ---- public API ---------------------------------------------------------------- */

model_aggregate_t *model_aggregate_new(const char *tenant, size_t tenant_len, const char *assignment,
                                       size_t assignment_len) {
  assert(tenant_len >= 1 && tenant_len <= MODEL_ID_MAX && assignment_len >= 1 && assignment_len <= MODEL_ID_MAX);
  model_aggregate_t *a = oom_calloc(1, sizeof *a);
  a->tlen = (uint8_t)tenant_len;
  a->alen = (uint8_t)assignment_len;
  a->hdr_len = 1;
  size_t used = hdr_off(a) + 1; /* no students: no fingerprints, no index */
  a->cap = grow_cap(used);
  a->blk = oom_malloc(a->cap);
  uint8_t *p = a->blk;
  memcpy(p, tenant, tenant_len);
  p[tenant_len] = '/';
  memcpy(p + tenant_len + 1, assignment, assignment_len);
  p[key_len(a)] = 0;
  put_str(p + key_len(a) + 1, tenant, tenant_len);
  p[hdr_off(a)] = 0; /* no header */
  a->used = (uint32_t)used;
  return a;
}

void model_aggregate_destroy(model_aggregate_t *agg) {
  if (!agg) return;
  free(agg->blk);
  free(agg);
}

const char *model_aggregate_key(const model_aggregate_t *agg, size_t *len) {
  if (len) *len = key_len(agg);
  return (const char *)agg->blk;
}

const char *model_aggregate_tenant(const model_aggregate_t *agg, size_t *len) {
  if (len) *len = agg->tlen;
  return (const char *)agg->blk + key_len(agg) + 1;
}

const char *model_aggregate_assignment(const model_aggregate_t *agg, size_t *len) {
  if (len) *len = agg->alen;
  return (const char *)agg->blk + agg->tlen + 1;
}

model_apply_result_t model_aggregate_apply(model_aggregate_t *agg, const model_command_t *cmd) {
  assert(cmd->tenant_len == agg->tlen && !memcmp(cmd->tenant, agg->blk, agg->tlen));
  assert(cmd->assignment_len == agg->alen && !memcmp(cmd->assignment, agg->blk + agg->tlen + 1, agg->alen));
  uint8_t buf[SCRATCH_SIZE];
  model_stamp_t st = {cmd->version, cmd->id, cmd->id_len};
  size_t n;
  bool changed;
  switch (cmd->type) {
  case MODEL_CMD_ASSIGNMENT_UPSERTED:
  case MODEL_CMD_ASSIGNMENT_DELETED: {
    model_header_view_t h = {.present = true, .stamp = st};
    if (cmd->type == MODEL_CMD_ASSIGNMENT_DELETED) {
      h.deleted = true;
    } else {
      h.class_id = cmd->data.assignment.class_id;
      h.class_len = cmd->data.assignment.class_len;
      h.title = cmd->data.assignment.title;
      h.title_len = cmd->data.assignment.title_len;
      h.status = cmd->data.assignment.status;
      h.has_due_at = cmd->data.assignment.has_due_at;
      h.due_at_ms = cmd->data.assignment.due_at_ms;
      h.has_points = cmd->data.assignment.has_points;
      h.points = cmd->data.assignment.points;
    }
    /* Cheap early out before encoding: most stale commands stop here. */
    const uint8_t *cur = agg->blk + hdr_off(agg);
    if ((cur[0] & H_PRESENT) && !stamp_greater(st.version, st.id, cur + 1)) return MODEL_APPLY_STALE;
    n = enc_header(buf, &h);
    changed = header_offer(agg, st.version, st.id, buf, n);
    break;
  }
  case MODEL_CMD_ROSTER_ASSIGNED:
  case MODEL_CMD_ROSTER_UNASSIGNED: {
    n = put_stamp(buf, st.version, st.id, st.id_len);
    uint8_t bits = F_MEMBER | (cmd->type == MODEL_CMD_ROSTER_ASSIGNED ? F_ASSIGNED : 0);
    changed = student_offer(agg, cmd->student, cmd->student_len, SLOT_MEMBER, st.version, st.id, buf, n, bits);
    break;
  }
  case MODEL_CMD_SUBMISSION_UPDATED: {
    uint8_t bits;
    n = enc_submission(buf, &st, cmd->data.submission.status, cmd->data.submission.has_submitted_at,
                       cmd->data.submission.submitted_at_ms, cmd->data.submission.has_returned_at,
                       cmd->data.submission.returned_at_ms, &bits);
    changed = student_offer(agg, cmd->student, cmd->student_len, SLOT_SUB, st.version, st.id, buf, n, bits);
    break;
  }
  case MODEL_CMD_GRADE_UPDATED:
    n = enc_grade(buf, &st, cmd->data.grade.has_points, cmd->data.grade.points, cmd->data.grade.has_feedback,
                  cmd->data.grade.feedback, cmd->data.grade.feedback_len);
    changed = student_offer(agg, cmd->student, cmd->student_len, SLOT_GRADE, st.version, st.id, buf, n, F_GRADE);
    break;
  default:
    assert(!"unknown command type");
    return MODEL_APPLY_STALE;
  }
  return changed ? MODEL_APPLY_APPLIED : MODEL_APPLY_STALE;
}

bool model_aggregate_merge(model_aggregate_t *dst, const model_aggregate_t *src) {
  assert(key_len(dst) == key_len(src) && !memcmp(dst->blk, src->blk, key_len(src)));
  if (dst == src) return false;
  bool changed = false;
  /* Sections are copied as encoded bytes: the encoding is canonical. */
  const uint8_t *h = src->blk + hdr_off(src);
  if (h[0] & H_PRESENT) {
    model_stamp_t st;
    get_stamp(h + 1, &st);
    changed |= header_offer(dst, st.version, st.id, h, src->hdr_len);
  }
  for (size_t i = 0; i < src->n; i++) {
    const uint8_t *rec = rec_ptr(src, i);
    size_t pos[4];
    size_t flags_off = locate_sections(rec, rec_len(src, i), pos);
    uint8_t f = rec[flags_off];
    for (int slot = SLOT_MEMBER; slot <= SLOT_GRADE; slot++) {
      if (!(f & (F_MEMBER << slot))) continue;
      model_stamp_t st;
      get_stamp(rec + pos[slot], &st);
      changed |= student_offer(dst, (const char *)rec, flags_off - 1, slot, st.version, st.id, rec + pos[slot],
                               pos[slot + 1] - pos[slot], (uint8_t)(f & slot_bits[slot]));
    }
  }
  return changed;
}

bool model_aggregate_equal(const model_aggregate_t *a, const model_aggregate_t *b) {
  if (a == b) return true;
  return key_len(a) == key_len(b) && !memcmp(a->blk, b->blk, key_len(a)) && a->n == b->n &&
         a->hdr_len == b->hdr_len && !memcmp(a->blk + hdr_off(a), b->blk + hdr_off(b), a->hdr_len) &&
         area_len(a) == area_len(b) && !memcmp(a->blk + rec_off(a), b->blk + rec_off(b), area_len(a));
}

model_aggregate_t *model_aggregate_clone(const model_aggregate_t *agg) {
  model_aggregate_t *c = oom_malloc(sizeof *c);
  *c = *agg;
  c->cap = grow_cap(agg->used);
  c->blk = oom_malloc(c->cap);
  memcpy(c->blk, agg->blk, agg->used);
  return c;
}

model_counts_t model_aggregate_counts(const model_aggregate_t *agg) {
  model_counts_t c = {0, 0, 0, 0};
  for (size_t i = 0; i < agg->n; i++) {
    const uint8_t *rec = rec_ptr(agg, i);
    size_t pos[4];
    uint8_t f = rec[locate_sections(rec, rec_len(agg, i), pos)];
    if ((f & (F_MEMBER | F_ASSIGNED)) != (F_MEMBER | F_ASSIGNED)) continue;
    c.assigned++;
    if (f & F_SUB) {
      unsigned st = (f & F_SUBSTAT_MASK) >> F_SUBSTAT_SHIFT;
      c.submitted += st == MODEL_SUBMISSION_SUBMITTED;
      c.returned += st == MODEL_SUBMISSION_RETURNED;
    }
    if (f & F_GRADE) c.graded += (skip_stamp(rec + pos[SLOT_GRADE])[0] & G_POINTS_MASK) != PTS_NULL;
  }
  return c;
}

size_t model_aggregate_memory(const model_aggregate_t *agg) { return sizeof *agg + agg->cap; }

/* ---- read access ---------------------------------------------------------------- */

void model_aggregate_header(const model_aggregate_t *agg, model_header_view_t *out) {
  memset(out, 0, sizeof *out);
  const uint8_t *p = agg->blk + hdr_off(agg);
  uint8_t f = *p++;
  if (!(f & H_PRESENT)) return;
  out->present = true;
  p = get_stamp(p, &out->stamp);
  if (f & H_DELETED) {
    out->deleted = true;
    return;
  }
  out->status = (model_assignment_status_t)((f & H_STATUS_MASK) >> H_STATUS_SHIFT);
  out->class_id = (const char *)p;
  out->class_len = strlen(out->class_id);
  p += out->class_len + 1;
  out->title = (const char *)p;
  out->title_len = strlen(out->title);
  p += out->title_len + 1;
  if (f & H_DUE) {
    out->has_due_at = true;
    p = get_date(p, &out->due_at_ms);
  }
  unsigned kind = (f & H_POINTS_MASK) >> H_POINTS_SHIFT;
  if (kind != PTS_NULL) {
    out->has_points = true;
    get_points(p, kind, &out->points);
  }
}

size_t model_aggregate_student_count(const model_aggregate_t *agg) { return agg->n; }

void model_aggregate_student(const model_aggregate_t *agg, size_t i, model_student_view_t *out) {
  assert(i < agg->n);
  memset(out, 0, sizeof *out);
  const uint8_t *p = rec_ptr(agg, i);
  out->student = (const char *)p;
  out->student_len = strlen(out->student);
  p += out->student_len + 1;
  uint8_t f = *p++;
  if (f & F_MEMBER) {
    out->has_member = true;
    out->assigned = (f & F_ASSIGNED) != 0;
    p = get_stamp(p, &out->member_stamp);
  }
  if (f & F_SUB) {
    out->has_submission = true;
    out->submission_status = (model_submission_status_t)((f & F_SUBSTAT_MASK) >> F_SUBSTAT_SHIFT);
    p = get_stamp(p, &out->submission_stamp);
    if (f & F_SUBMITTED_AT) {
      out->has_submitted_at = true;
      p = get_date(p, &out->submitted_at_ms);
    }
    if (f & F_RETURNED_AT) {
      out->has_returned_at = true;
      p = get_date(p, &out->returned_at_ms);
    }
  }
  if (f & F_GRADE) {
    out->has_grade = true;
    p = get_stamp(p, &out->grade_stamp);
    uint8_t gf = *p++;
    unsigned kind = gf & G_POINTS_MASK;
    if (kind != PTS_NULL) {
      out->has_points = true;
      p = get_points(p, kind, &out->points);
    }
    if (gf & G_FEEDBACK) {
      out->has_feedback = true;
      out->feedback = (const char *)p;
      out->feedback_len = strlen(out->feedback);
    }
  }
}

/* ---- write access ---------------------------------------------------------------- */

bool model_aggregate_put_header(model_aggregate_t *agg, const model_header_view_t *h) {
  if (!h->present) return false;
  assert(h->stamp.id_len >= 1 && h->stamp.id_len <= MODEL_CMD_ID_MAX);
  assert(h->deleted || (h->class_len <= MODEL_ID_MAX && h->title_len <= MODEL_TITLE_MAX));
  const uint8_t *cur = agg->blk + hdr_off(agg);
  if ((cur[0] & H_PRESENT) && !stamp_greater(h->stamp.version, h->stamp.id, cur + 1)) return false;
  uint8_t buf[SCRATCH_SIZE];
  size_t n = enc_header(buf, h);
  return header_offer(agg, h->stamp.version, h->stamp.id, buf, n);
}

bool model_aggregate_put_student(model_aggregate_t *agg, const model_student_view_t *s) {
  assert(s->student_len >= 1 && s->student_len <= MODEL_ID_MAX);
  uint8_t buf[SCRATCH_SIZE];
  bool changed = false;
  if (s->has_member) {
    const model_stamp_t *st = &s->member_stamp;
    size_t n = put_stamp(buf, st->version, st->id, st->id_len);
    uint8_t bits = F_MEMBER | (s->assigned ? F_ASSIGNED : 0);
    changed |= student_offer(agg, s->student, s->student_len, SLOT_MEMBER, st->version, st->id, buf, n, bits);
  }
  if (s->has_submission) {
    uint8_t bits;
    const model_stamp_t *st = &s->submission_stamp;
    size_t n = enc_submission(buf, st, s->submission_status, s->has_submitted_at, s->submitted_at_ms,
                              s->has_returned_at, s->returned_at_ms, &bits);
    changed |= student_offer(agg, s->student, s->student_len, SLOT_SUB, st->version, st->id, buf, n, bits);
  }
  if (s->has_grade) {
    assert(!s->has_feedback || s->feedback_len <= MODEL_FEEDBACK_MAX);
    const model_stamp_t *st = &s->grade_stamp;
    size_t n = enc_grade(buf, st, s->has_points, s->points, s->has_feedback, s->feedback, s->feedback_len);
    changed |= student_offer(agg, s->student, s->student_len, SLOT_GRADE, st->version, st->id, buf, n, F_GRADE);
  }
  return changed;
}
