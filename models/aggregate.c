/* The aggregate of one assignment and its merge (SPEC.md section 3).
 *
 * Memory layout, and why
 * ----------------------
 * The worker keeps tens of thousands of aggregates in memory, and the budget
 * is about 2 KiB for an assignment of 30 students with every slot filled;
 * but assignments also go to year groups, schools and districts (3,000
 * students and more), where a command must still cost O(log n) and memory
 * must stay close to the content. A struct per student with malloc'd
 * strings costs 3-4 times the content (8-byte versions and dates, 16-byte
 * pointers and malloc headers per string), so students are kept as RUNS of
 * encoded records:
 *
 *   run = fingerprints: n bytes, a hash byte of each student id
 *       | index: n offsets (2 bytes each; a run's records stay < 64 KiB)
 *       | student records, sorted by student id, back to back
 *
 * An aggregate is a small handle plus a main block:
 *
 *   main block = key "tenant/assignment" NUL | tenant NUL | header record
 *              | inline: ONE run (every assignment up to RUN_MAX_N students)
 *              | chunked: a directory of chunks (dir_t), each a block
 *                holding one run, in student order
 *
 * A small assignment is one allocation (plus the handle), as before the
 * chunks existed: 30 students cost what they cost then. Once the inline run
 * passes RUN_MAX_N students or RUN_MAX_BYTES, it is split into two chunks,
 * and any chunk that passes the bounds is split in two. The directory
 * entry of a chunk keeps its block, sizes, the index of its first student
 * (for model_aggregate_student(i)) and the first 8 bytes of its first id, so
 * that finding a student's chunk is a binary search over the directory
 * alone (a few cache lines), then a fingerprint scan of one chunk.
 *
 * Records are byte strings in a canonical encoding (unsigned LEB128 varints
 * for versions, zigzag varints for dates, points as centi-points when that is
 * exact, strings NUL-terminated: the spec forbids U+0000 in every string), so
 * equal slots have equal bytes and model_aggregate_equal() compares records
 * with memcmp (in order: two aggregates with the same content may cut their
 * chunks at different students). Index offsets are relative to the start of
 * the run's records. A lookup scans the fingerprints (memchr) and compares
 * only the records whose byte matches.
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
 * Costs. A slot update splices bytes within ONE run (memmove of the rest of
 * the run, at most RUN_MAX_BYTES, and a fix-up of its following index
 * entries) and a read parses varints, instead of plain field stores and
 * loads; for a run-sized block that is tens of nanoseconds. Before chunks,
 * the whole aggregate was one run, so an update at 3,000 students moved
 * ~100 KiB and reallocated a 200 KiB block (0.28 M commands/s against 1.05 M
 * at 30, and 1.78x RSS over the content from heap holes). Per command now:
 * a binary search over n / ~48 directory entries, a scan of <= 64
 * fingerprints, a splice of <= ~6 KiB: O(log n) plus a bounded constant.
 * Inserting a NEW student also renumbers the `first` of the following
 * directory entries (n / ~48 small stores) and, once per ~32 inserts,
 * inserts a directory entry (a memmove of the directory): O(n / 48) with a
 * tiny constant, about 1,400 entries at the 16 MiB document limit (~65,000
 * students); updates of existing students, almost all commands, do not pay
 * it. Merge walks both aggregates in order and builds new runs: linear.
 * Blocks grow in 128-byte size classes (grow_cap), so that a stream of
 * growing updates does not realloc on every command.
 *
 * Measured: see scripts/bench-models and docs/BENCHMARKS.md (section
 * "Large assignments: the models").
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
#include "buf.h"

struct model_aggregate {
  uint8_t *blk;          /* the main block (see the layout above) */
  uint32_t cap, used;    /* bytes allocated / in use in blk */
  uint32_t n;            /* students, in all runs */
  unsigned hdr_len : 15; /* bytes of the header record (at most ~1.3 KiB) */
  unsigned chunked : 1;  /* the students are in chunks listed by a directory, not inline */
  unsigned tlen : 8, alen : 8; /* tenant and assignment id lengths (ids are <= 64 bytes) */
};
/* 24 bytes: the smallest glibc chunk (32) holds the handle. */
_Static_assert(sizeof(struct model_aggregate) <= 24, "aggregate handle grew");

/* A directory entry of a chunked aggregate: one chunk block, holding a run
 * of `n` students whose first is the aggregate's student `first`. */
typedef struct dir_entry {
  uint8_t *blk;
  uint32_t cap, used, n, first;
  uint64_t prefix; /* the first student's id: its first 8 bytes, big-endian, zero-padded (see id_prefix) */
} dir_t;

/* A run being read or edited: `n` students at offset `off` of a block
 * (the main block when inline, a chunk block at offset 0 otherwise). Loaded
 * from the handle or a directory entry, and stored back after a change. */
typedef struct run {
  uint8_t *blk;
  uint32_t cap, used, n;
  size_t off;
} run_t;

/* A run is split in two once it holds more than RUN_MAX_N students or
 * RUN_MAX_BYTES bytes (fingerprints, index and records); merge() packs new
 * runs to RUN_FILL_N / RUN_FILL_BYTES, so that the next inserts do not split
 * them at once. The bounds cap the bytes a slot update moves (about half a
 * run: ~1.5 KiB for 64 benchmark students) and keep every run's records
 * under 64 KiB, so that 2-byte index entries always suffice: a run within
 * the bounds plus one record of at most ~4.4 KiB is far below. A
 * 30-student assignment of the benchmark (~2.1 KiB) stays inline. */
enum { RUN_MAX_N = 64, RUN_MAX_BYTES = 6144, RUN_FILL_N = 48, RUN_FILL_BYTES = 4608 };

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

int model_stamp_compare(const model_stamp_t *a, const model_stamp_t *b) {
  if (a->version != b->version) return a->version > b->version ? 1 : -1;
  return strcmp(a->id, b->id);
}

/* ---- blocks and runs ----------------------------------------------------------- */

static size_t key_len(const model_aggregate_t *a) { return (size_t)a->tlen + 1 + a->alen; }
static size_t hdr_off(const model_aggregate_t *a) { return key_len(a) + 1 + a->tlen + 1; }
static size_t tail_off(const model_aggregate_t *a) { return hdr_off(a) + a->hdr_len; }
static size_t nchunks(const model_aggregate_t *a) { return (a->used - tail_off(a)) / sizeof(dir_t); }

static void dir_get(const model_aggregate_t *a, size_t c, dir_t *d) {
  memcpy(d, a->blk + tail_off(a) + c * sizeof *d, sizeof *d);
}
static void dir_put(model_aggregate_t *a, size_t c, const dir_t *d) {
  memcpy(a->blk + tail_off(a) + c * sizeof *d, d, sizeof *d);
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

/* Replaces blk[off, off + old_len) with src[0, new_len) in a block of
 * *cap bytes, *used in use. src must not point into the block. */
static void blk_splice(uint8_t **blk, uint32_t *cap, uint32_t *used, size_t off, size_t old_len, const void *src,
                       size_t new_len) {
  size_t need = (size_t)*used + new_len - old_len;
  if (need > *cap) {
    uint32_t c = grow_cap(need);
    uint8_t *p = oom_realloc(*blk, c);
    *blk = p;
    *cap = c;
  }
  memmove(*blk + off + new_len, *blk + off + old_len, *used - off - old_len);
  if (new_len) memcpy(*blk + off, src, new_len);
  *used = (uint32_t)need;
}

static void main_splice(model_aggregate_t *a, size_t off, size_t old_len, const void *src, size_t new_len) {
  blk_splice(&a->blk, &a->cap, &a->used, off, old_len, src, new_len);
}

/* Gives back the slack of the main block above its size class (after it
 * lost its inline run). */
static void main_shrink(model_aggregate_t *a) {
  uint32_t c = grow_cap(a->used);
  if (c >= a->cap) return;
  uint8_t *p = realloc(a->blk, c);
  if (!p) return; /* keeping the larger block is harmless */
  a->blk = p;
  a->cap = c;
}

static void run_load(const model_aggregate_t *a, size_t c, run_t *r) {
  if (!a->chunked) {
    *r = (run_t){a->blk, a->cap, a->used, a->n, tail_off(a)};
    return;
  }
  dir_t d;
  dir_get(a, c, &d);
  *r = (run_t){d.blk, d.cap, d.used, d.n, 0};
}

/* Stores an edited run back. Inline, a->n follows the run; chunked, the
 * caller keeps a->n and the following entries' `first` (see fix_firsts). */
static void run_store(model_aggregate_t *a, size_t c, const run_t *r) {
  if (!a->chunked) {
    a->blk = r->blk;
    a->cap = r->cap;
    a->used = r->used;
    a->n = r->n;
    return;
  }
  dir_t d;
  dir_get(a, c, &d);
  d.blk = r->blk;
  d.cap = r->cap;
  d.used = r->used;
  d.n = r->n;
  dir_put(a, c, &d);
}

static size_t r_idx_off(const run_t *r) { return r->off + r->n; }
static size_t r_rec_off(const run_t *r) { return r->off + 3 * (size_t)r->n; }
static size_t r_area(const run_t *r) { return r->used - r_rec_off(r); }
static size_t r_bytes(const run_t *r) { return r->used - r->off; }

static uint32_t r_idx_get(const run_t *r, size_t i) {
  uint16_t v;
  memcpy(&v, r->blk + r_idx_off(r) + 2 * i, 2);
  return v;
}

static void r_idx_set(run_t *r, size_t i, size_t off) {
  assert(off <= UINT16_MAX);
  uint16_t v = (uint16_t)off;
  memcpy(r->blk + r_idx_off(r) + 2 * i, &v, 2);
}

static uint8_t *r_rec(const run_t *r, size_t i) { return r->blk + r_rec_off(r) + r_idx_get(r, i); }
static size_t r_rec_len(const run_t *r, size_t i) {
  return (i + 1 < r->n ? r_idx_get(r, i + 1) : r_area(r)) - r_idx_get(r, i);
}

static void r_splice(run_t *r, size_t off, size_t old_len, const void *src, size_t new_len) {
  blk_splice(&r->blk, &r->cap, &r->used, off, old_len, src, new_len);
}

/* Student i's record [pos, pos + old_len) becomes src[0, new_len). */
static void r_splice_record(run_t *r, size_t i, size_t pos, size_t old_len, const void *src, size_t new_len) {
  if (new_len == old_len) {
    memcpy(r_rec(r, i) + pos, src, new_len);
    return;
  }
  r_splice(r, r_rec_off(r) + r_idx_get(r, i) + pos, old_len, src, new_len);
  for (size_t j = i + 1; j < r->n; j++) r_idx_set(r, j, r_idx_get(r, j) + new_len - old_len);
}

/* One byte of hash of a student id: lookups scan these (one or two cache
 * lines) instead of binary-searching the records (a cache miss per probe). */
static uint8_t fingerprint(const char *s, size_t n) {
  uint32_t h = hash_fnv1a32(HASH_FNV1A32_INIT, s, n);
  return (uint8_t)(h ^ h >> 8 ^ h >> 16 ^ h >> 24);
}

/* Inserts a whole record (its id first) as student i of the run; the
 * records after it move up. */
static void r_insert_record(run_t *r, size_t i, const uint8_t *rec, size_t len) {
  size_t off = i < r->n ? r_idx_get(r, i) : r_area(r);
  r_splice(r, r_rec_off(r) + off, 0, rec, len);
  uint8_t zero[2] = {0};
  r_splice(r, r_idx_off(r) + 2 * i, 0, zero, 2);
  uint8_t fp = fingerprint((const char *)rec, strlen((const char *)rec));
  r_splice(r, r->off + i, 0, &fp, 1);
  r->n++;
  r_idx_set(r, i, off);
  for (size_t j = i + 1; j < r->n; j++) r_idx_set(r, j, r_idx_get(r, j) + len);
}

/* Compares the id s[0..len) with a record's NUL-terminated id, as strcmp. */
static int cmp_sid(const char *s, size_t len, const uint8_t *rec) {
  int c = strncmp(s, (const char *)rec, len);
  if (c) return c;
  return rec[len] ? -1 : 0;
}

/* *pos is the student's index in the run, or where it would be inserted. */
static bool r_find(const run_t *r, const char *sid, size_t len, size_t *pos) {
  const uint8_t *fps = r->blk + r->off, *end = fps + r->n, *p = fps;
  uint8_t f = fingerprint(sid, len);
  while ((p = memchr(p, f, (size_t)(end - p))) != NULL) {
    if (cmp_sid(sid, len, r_rec(r, (size_t)(p - fps))) == 0) {
      *pos = (size_t)(p - fps);
      return true;
    }
    p++;
  }
  size_t lo = 0, hi = r->n; /* absent: binary search for its place */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cmp_sid(sid, len, r_rec(r, mid)) < 0) hi = mid;
    else lo = mid + 1;
  }
  *pos = lo;
  return false;
}

/* The first 8 bytes of an id as a big-endian number, zero-padded: ids hold
 * no NUL, so comparing prefixes orders ids as strcmp does whenever the
 * prefixes differ. The directory keeps the prefix of each chunk's first id,
 * so that a lookup's binary search reads only the directory (one or two
 * cache lines) instead of one chunk per probe; equal prefixes (ids sharing
 * 8 bytes) fall back to the record. */
static uint64_t id_prefix(const char *s, size_t len) {
  uint64_t v = 0;
  for (size_t i = 0; i < 8; i++) v = v << 8 | (i < len ? (unsigned char)s[i] : 0);
  return v;
}

/* A chunk's first record is at offset 0 of its records. */
static const uint8_t *chunk_first(const dir_t *d) { return d->blk + 3 * (size_t)d->n; }

/* The chunk that holds sid, or where it would be inserted: the last one
 * whose first student is <= sid (or the first chunk). */
static size_t find_chunk(const model_aggregate_t *a, const char *sid, size_t len) {
  size_t lo = 1, hi = nchunks(a);
  uint64_t px = id_prefix(sid, len);
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    dir_t d;
    dir_get(a, mid, &d);
    bool less = px != d.prefix ? px < d.prefix : cmp_sid(sid, len, chunk_first(&d)) < 0;
    if (less) hi = mid;
    else lo = mid + 1;
  }
  return lo - 1;
}

static void set_prefix(dir_t *d) {
  const char *s = (const char *)chunk_first(d);
  d->prefix = id_prefix(s, strlen(s));
}

/* Recomputes `first` of the directory entries from chunk c on. */
static void fix_firsts(model_aggregate_t *a, size_t c) {
  size_t nc = nchunks(a);
  uint32_t first = 0;
  if (c > 0) {
    dir_t d;
    dir_get(a, c - 1, &d);
    first = d.first + d.n;
  }
  for (; c < nc; c++) {
    dir_t d;
    dir_get(a, c, &d);
    d.first = first;
    dir_put(a, c, &d);
    first += d.n;
  }
}

/* A new chunk block holding students [from, to) of run r. */
static dir_t chunk_from(const run_t *r, size_t from, size_t to) {
  size_t n = to - from, base = r_idx_get(r, from), end = to < r->n ? r_idx_get(r, to) : r_area(r);
  dir_t d = {NULL, 0, (uint32_t)(3 * n + end - base), (uint32_t)n, 0, 0};
  d.cap = grow_cap(d.used);
  d.blk = oom_malloc(d.cap);
  memcpy(d.blk, r->blk + r->off + from, n);
  for (size_t i = 0; i < n; i++) {
    uint16_t v = (uint16_t)(r_idx_get(r, from + i) - base);
    memcpy(d.blk + n + 2 * i, &v, 2);
  }
  memcpy(d.blk + 3 * n, r->blk + r_rec_off(r) + base, end - base);
  set_prefix(&d);
  return d;
}

/* Splits run c in two halves once it passes the bounds. An inline run
 * becomes the first two chunks (the main block keeps key, tenant, header
 * and the directory). */
static void maybe_split(model_aggregate_t *a, size_t c) {
  run_t r;
  run_load(a, c, &r);
  if (r.n < 2 || (r.n <= RUN_MAX_N && r_bytes(&r) <= RUN_MAX_BYTES)) return;
  size_t k = r.n / 2;
  dir_t d[2] = {chunk_from(&r, 0, k), chunk_from(&r, k, r.n)};
  if (!a->chunked) {
    d[1].first = (uint32_t)k;
    main_splice(a, tail_off(a), a->used - tail_off(a), d, sizeof d);
    a->chunked = 1;
    main_shrink(a);
    return;
  }
  dir_t old;
  dir_get(a, c, &old);
  free(old.blk);
  d[0].first = old.first;
  d[1].first = (uint32_t)(old.first + k);
  main_splice(a, tail_off(a) + c * sizeof(dir_t), sizeof(dir_t), d, sizeof d);
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

/* The core of apply and put_student: offers one encoded section (stamp
 * first) for slot `slot` of student sid, with its flag bits. */
static bool student_offer(model_aggregate_t *a, const char *sid, size_t sid_len, int slot, uint64_t version,
                          const char *cid, const uint8_t *sec, size_t sec_len, uint8_t bits) {
  size_t c = a->chunked ? find_chunk(a, sid, sid_len) : 0, i;
  run_t r;
  run_load(a, c, &r);
  if (!r_find(&r, sid, sid_len, &i)) {
    uint8_t rec[MODEL_ID_MAX + 2 + SCRATCH_SIZE];
    size_t n = put_str(rec, sid, sid_len);
    rec[n++] = bits;
    memcpy(rec + n, sec, sec_len);
    r_insert_record(&r, i, rec, n + sec_len);
    run_store(a, c, &r);
    if (a->chunked) {
      a->n++;
      fix_firsts(a, c + 1);
      if (i == 0) { /* a new first student (only ever in chunk 0: others start at or below sid) */
        dir_t d;
        dir_get(a, c, &d);
        set_prefix(&d);
        dir_put(a, c, &d);
      }
    }
    maybe_split(a, c);
    return true;
  }
  uint8_t *rec = r_rec(&r, i);
  size_t pos[4];
  size_t flags_off = locate_sections(rec, r_rec_len(&r, i), pos);
  uint8_t f = rec[flags_off];
  uint8_t present = (uint8_t)(F_MEMBER << slot);
  if ((f & present) && !stamp_greater(version, cid, rec + pos[slot])) return false;
  size_t old_len = (f & present) ? pos[slot + 1] - pos[slot] : 0;
  r_splice_record(&r, i, pos[slot], old_len, sec, sec_len);
  rec = r_rec(&r, i);
  rec[flags_off] = (uint8_t)((f & ~slot_bits[slot]) | bits);
  run_store(a, c, &r);
  if (sec_len > old_len) maybe_split(a, c);
  return true;
}

/* The header record is replaced whole. */
static bool header_offer(model_aggregate_t *a, uint64_t version, const char *cid, const uint8_t *rec, size_t len) {
  const uint8_t *cur = a->blk + hdr_off(a);
  if ((cur[0] & H_PRESENT) && !stamp_greater(version, cid, cur + 1)) return false;
  main_splice(a, hdr_off(a), a->hdr_len, rec, len);
  a->hdr_len = (uint16_t)len;
  return true;
}

/* ---- walking the students in order ----------------------------------------------- */

typedef struct cursor {
  const model_aggregate_t *a;
  size_t c, nc, i; /* run c of nc, student i of it */
  run_t r;
} cursor_t;

static void cur_init(cursor_t *k, const model_aggregate_t *a) {
  k->a = a;
  k->c = 0;
  k->i = 0;
  k->nc = a->chunked ? nchunks(a) : 1;
  run_load(a, 0, &k->r);
}

/* The next record, or NULL at the end. */
static const uint8_t *cur_next(cursor_t *k, size_t *len) {
  while (k->i == k->r.n) {
    if (++k->c >= k->nc) return NULL;
    run_load(k->a, k->c, &k->r);
    k->i = 0;
  }
  *len = r_rec_len(&k->r, k->i);
  return r_rec(&k->r, k->i++);
}

/* ---- the linear merge ------------------------------------------------------------- */

/* Packs records, in order, into new runs of RUN_FILL_* (the merge's output). */
typedef struct builder {
  dir_t *dir;
  size_t n, cap, students;
  model_buf_t recs; /* the records of the run being filled, back to back */
  uint32_t offs[RUN_MAX_N];
  uint8_t fps[RUN_MAX_N];
  size_t k; /* records in recs */
} builder_t;

static void b_close(builder_t *b) {
  if (!b->k) return;
  if (b->n == b->cap) {
    b->cap = b->cap ? 2 * b->cap : 8;
    dir_t *p = oom_realloc(b->dir, b->cap * sizeof *p);
    b->dir = p;
  }
  size_t k = b->k;
  dir_t d = {NULL, 0, (uint32_t)(3 * k + b->recs.len), (uint32_t)k, (uint32_t)(b->students - k), 0};
  d.cap = grow_cap(d.used);
  d.blk = oom_malloc(d.cap);
  memcpy(d.blk, b->fps, k);
  for (size_t i = 0; i < k; i++) {
    uint16_t v = (uint16_t)b->offs[i];
    memcpy(d.blk + k + 2 * i, &v, 2);
  }
  memcpy(d.blk + 3 * k, b->recs.data, b->recs.len);
  set_prefix(&d);
  b->dir[b->n++] = d;
  b->k = 0;
  model_buf_clear(&b->recs);
}

static void b_add(builder_t *b, const uint8_t *rec, size_t len) {
  if (b->k && (b->k == RUN_FILL_N || 3 * b->k + b->recs.len + len + 3 > RUN_FILL_BYTES)) b_close(b);
  b->offs[b->k] = (uint32_t)b->recs.len;
  b->fps[b->k] = fingerprint((const char *)rec, strlen((const char *)rec));
  b->k++;
  b->students++;
  model_buf_append(&b->recs, rec, len);
}

/* The record of one student present in both: per slot, the section with
 * the greater stamp. Sets *src_won if any of src's sections replaced or
 * added to dst's. */
static size_t merge_record(const uint8_t *dr, size_t dlen, const uint8_t *sr, size_t slen, uint8_t *out,
                           bool *src_won) {
  size_t dpos[4], spos[4];
  size_t flags_off = locate_sections(dr, dlen, dpos);
  locate_sections(sr, slen, spos);
  uint8_t df = dr[flags_off], sf = sr[flags_off], f = 0;
  memcpy(out, dr, flags_off);
  size_t n = flags_off + 1;
  for (int slot = SLOT_MEMBER; slot <= SLOT_GRADE; slot++) {
    uint8_t present = (uint8_t)(F_MEMBER << slot);
    bool use_src = false;
    if (sf & present) {
      if (!(df & present)) {
        use_src = true;
      } else {
        model_stamp_t st;
        get_stamp(sr + spos[slot], &st);
        use_src = stamp_greater(st.version, st.id, dr + dpos[slot]);
      }
    }
    const uint8_t *from = use_src ? sr : dr;
    const size_t *pos = use_src ? spos : dpos;
    f |= (uint8_t)((use_src ? sf : df) & slot_bits[slot]);
    memcpy(out + n, from + pos[slot], pos[slot + 1] - pos[slot]);
    n += pos[slot + 1] - pos[slot];
    *src_won |= use_src;
  }
  out[flags_off] = f;
  return n;
}

/* Replaces a's students by the builder's runs: inline if they fit one run
 * within the bounds, else as chunks. */
static void install_runs(model_aggregate_t *a, builder_t *b) {
  size_t c0 = a->chunked ? nchunks(a) : 0;
  for (size_t c = 0; c < c0; c++) {
    dir_t d;
    dir_get(a, c, &d);
    free(d.blk);
  }
  size_t tail = tail_off(a);
  if (b->n <= 1) {
    dir_t d = b->n ? b->dir[0] : (dir_t){NULL, 0, 0, 0, 0, 0};
    main_splice(a, tail, a->used - tail, d.blk, d.used);
    a->chunked = 0;
    a->n = d.n;
    free(d.blk);
  } else {
    main_splice(a, tail, a->used - tail, b->dir, b->n * sizeof(dir_t));
    a->chunked = 1;
    a->n = (uint32_t)b->students;
  }
  main_shrink(a);
  free(b->dir);
  model_buf_destroy(&b->recs);
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
  size_t used = hdr_off(a) + 1; /* no students: an empty inline run */
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
  if (agg->chunked) {
    for (size_t c = 0, nc = nchunks(agg); c < nc; c++) {
      dir_t d;
      dir_get(agg, c, &d);
      free(d.blk);
    }
  }
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

/* Merging src into dst walks both in order and builds dst's new runs
 * (linear in the students of both); when src is much smaller than dst (a
 * flush's few changed students merged into a large stored aggregate),
 * offering its slots one by one is cheaper: O(k (log n + run)) instead of
 * O(n). */
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
  if (src->n == 0) return changed;
  cursor_t ks;
  cur_init(&ks, src);
  size_t sl, dl;
  const uint8_t *sr;
  if ((size_t)src->n * 16 < dst->n) {
    while ((sr = cur_next(&ks, &sl)) != NULL) {
      size_t pos[4];
      size_t flags_off = locate_sections(sr, sl, pos);
      uint8_t f = sr[flags_off];
      for (int slot = SLOT_MEMBER; slot <= SLOT_GRADE; slot++) {
        if (!(f & (F_MEMBER << slot))) continue;
        model_stamp_t st;
        get_stamp(sr + pos[slot], &st);
        changed |= student_offer(dst, (const char *)sr, flags_off - 1, slot, st.version, st.id, sr + pos[slot],
                                 pos[slot + 1] - pos[slot], (uint8_t)(f & slot_bits[slot]));
      }
    }
    return changed;
  }
  builder_t b = {.recs = MODEL_BUF_INIT};
  cursor_t kd;
  cur_init(&kd, dst);
  const uint8_t *dr = cur_next(&kd, &dl);
  sr = cur_next(&ks, &sl);
  bool src_won = false;
  uint8_t out[MODEL_ID_MAX + 2 + 3 * SCRATCH_SIZE];
  while (dr || sr) {
    int c = !dr ? 1 : !sr ? -1 : strcmp((const char *)dr, (const char *)sr);
    if (c < 0) {
      b_add(&b, dr, dl);
      dr = cur_next(&kd, &dl);
    } else if (c > 0) {
      b_add(&b, sr, sl);
      src_won = true;
      sr = cur_next(&ks, &sl);
    } else {
      b_add(&b, out, merge_record(dr, dl, sr, sl, out, &src_won));
      dr = cur_next(&kd, &dl);
      sr = cur_next(&ks, &sl);
    }
  }
  b_close(&b);
  if (src_won) {
    install_runs(dst, &b);
    return true;
  }
  for (size_t c = 0; c < b.n; c++) free(b.dir[c].blk);
  free(b.dir);
  model_buf_destroy(&b.recs);
  return changed;
}

bool model_aggregate_equal(const model_aggregate_t *a, const model_aggregate_t *b) {
  if (a == b) return true;
  if (key_len(a) != key_len(b) || memcmp(a->blk, b->blk, key_len(a)) || a->n != b->n || a->hdr_len != b->hdr_len ||
      memcmp(a->blk + hdr_off(a), b->blk + hdr_off(b), a->hdr_len))
    return false;
  /* Runs may be cut at different students: compare the records in order. */
  cursor_t ka, kb;
  cur_init(&ka, a);
  cur_init(&kb, b);
  size_t la, lb;
  const uint8_t *ra, *rb;
  while ((ra = cur_next(&ka, &la)) != NULL) {
    rb = cur_next(&kb, &lb);
    if (!rb || la != lb || memcmp(ra, rb, la)) return false;
  }
  return cur_next(&kb, &lb) == NULL;
}

bool model_aggregate_diff(const model_aggregate_t *from, const model_aggregate_t *to,
                          void (*fn)(void *ctx, const model_aggregate_t *to, size_t i), void *ctx) {
  assert(key_len(from) == key_len(to) && !memcmp(from->blk, to->blk, key_len(to)));
  cursor_t kf, kt;
  cur_init(&kf, from);
  cur_init(&kt, to);
  size_t lf = 0, lt, i = 0;
  const uint8_t *rf = cur_next(&kf, &lf), *rt;
  while ((rt = cur_next(&kt, &lt)) != NULL) {
    while (rf && strcmp((const char *)rf, (const char *)rt) < 0) rf = cur_next(&kf, &lf);
    bool same = rf && lf == lt && !memcmp(rf, rt, lt);
    if (!same) fn(ctx, to, i);
    i++;
  }
  return from->hdr_len != to->hdr_len || memcmp(from->blk + hdr_off(from), to->blk + hdr_off(to), to->hdr_len);
}

bool model_aggregate_find_student(const model_aggregate_t *agg, const char *id, size_t len, size_t *index) {
  size_t lo = 0, hi = agg->n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    model_student_view_t v;
    model_aggregate_student(agg, mid, &v);
    /* The students' order: bytewise, a prefix first (strcmp's order). */
    int c = memcmp(v.student, id, v.student_len < len ? v.student_len : len);
    if (c == 0) c = v.student_len < len ? -1 : v.student_len > len;
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

model_aggregate_t *model_aggregate_clone(const model_aggregate_t *agg) {
  model_aggregate_t *c = oom_malloc(sizeof *c);
  *c = *agg;
  c->cap = grow_cap(agg->used);
  c->blk = oom_malloc(c->cap);
  memcpy(c->blk, agg->blk, agg->used);
  if (!agg->chunked) return c;
  size_t nc = nchunks(agg);
  for (size_t k = 0; k < nc; k++) {
    dir_t d;
    dir_get(agg, k, &d);
    uint8_t *p = oom_malloc(grow_cap(d.used));
    memcpy(p, d.blk, d.used);
    d.blk = p;
    d.cap = grow_cap(d.used);
    dir_put(c, k, &d);
  }
  return c;
}

model_counts_t model_aggregate_counts(const model_aggregate_t *agg) {
  model_counts_t c = {0, 0, 0, 0};
  cursor_t k;
  cur_init(&k, agg);
  const uint8_t *rec;
  size_t len;
  while ((rec = cur_next(&k, &len)) != NULL) {
    size_t pos[4];
    uint8_t f = rec[locate_sections(rec, len, pos)];
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

size_t model_aggregate_memory(const model_aggregate_t *agg) {
  size_t m = sizeof *agg + agg->cap;
  if (agg->chunked) {
    for (size_t c = 0, nc = nchunks(agg); c < nc; c++) {
      dir_t d;
      dir_get(agg, c, &d);
      m += d.cap;
    }
  }
  return m;
}

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
  size_t c = 0, first = 0;
  if (agg->chunked) { /* the last chunk whose first student is <= i */
    size_t lo = 1, hi = nchunks(agg);
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      dir_t d;
      dir_get(agg, mid, &d);
      if (i < d.first) hi = mid;
      else lo = mid + 1;
    }
    c = lo - 1;
    dir_t d;
    dir_get(agg, c, &d);
    first = d.first;
  }
  run_t r;
  run_load(agg, c, &r);
  const uint8_t *p = r_rec(&r, i - first);
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
