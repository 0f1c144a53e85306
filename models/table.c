/* model_table: the storage of one aggregate (layout, costs and ownership
 * in table.h). */
#include "table.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "hash.h"
#include "oom.h"

typedef model_table_t table_t;
typedef model_table_run_t run_t;

/* A directory entry of a chunked table: one chunk block, holding a run of
 * `n` students whose first is the table's student `first`. */
typedef struct model_table_dir {
  uint8_t *blk;
  uint32_t cap, used, n, first;
  uint64_t prefix; /* the first student's id: its first 8 bytes, big-endian, zero-padded (see id_prefix) */
} dir_t;

/* A run is split in two once it holds more than RUN_MAX_N students or
 * RUN_MAX_BYTES bytes (fingerprints, index and records); the builder packs
 * new runs to RUN_FILL_N / RUN_FILL_BYTES, so that the next inserts do not
 * split them at once. The bounds cap the bytes a record change moves (about
 * half a run) and keep every run's records under 64 KiB, so that 2-byte
 * index entries always suffice: a run within the bounds plus one record of
 * at most ~4.4 KiB is far below. A 30-student assignment stays inline. */
enum { RUN_MAX_N = MODEL_TABLE_RUN_MAX_N, RUN_MAX_BYTES = 6144, RUN_FILL_N = 48, RUN_FILL_BYTES = 4608 };

static size_t put_str(uint8_t *p, const char *s, size_t n) {
  memcpy(p, s, n);
  p[n] = 0;
  return n + 1;
}

/* ---- blocks and runs ----------------------------------------------------------- */

static size_t key_len(const table_t *a) { return (size_t)a->tlen + 1 + a->alen; }
static size_t hdr_off(const table_t *a) { return model_table_word_off(a) + 4; }
static size_t tail_off(const table_t *a) { return hdr_off(a) + a->hdr_len; }
static size_t nchunks(const table_t *a) { return (a->used - tail_off(a)) / sizeof(dir_t); }

static void dir_get(const table_t *a, size_t c, dir_t *d) {
  memcpy(d, a->blk + tail_off(a) + c * sizeof *d, sizeof *d);
}
static void dir_put(table_t *a, size_t c, const dir_t *d) {
  memcpy(a->blk + tail_off(a) + c * sizeof *d, d, sizeof *d);
}

/* Capacity for `need` bytes: the next size class of 128 bytes, counting
 * glibc's 8-byte chunk header, so that the malloc chunk is used whole.
 * Classes matter more than slack: thousands of aggregates grow in step, and
 * a block freed by one aggregate's realloc is reused by the next aggregate
 * that grows through the same class. */
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

static void main_splice(table_t *a, size_t off, size_t old_len, const void *src, size_t new_len) {
  blk_splice(&a->blk, &a->cap, &a->used, off, old_len, src, new_len);
}

/* Gives back the slack of the main block above its size class (after it
 * lost its inline run). */
static void main_shrink(table_t *a) {
  uint32_t c = grow_cap(a->used);
  if (c >= a->cap) return;
  uint8_t *p = realloc(a->blk, c);
  if (!p) return; /* keeping the larger block is harmless */
  a->blk = p;
  a->cap = c;
}

static void run_load(const table_t *a, size_t c, run_t *r) {
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
static void run_store(table_t *a, size_t c, const run_t *r) {
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
 * lines) instead of binary-searching the records (a cache miss per probe).
 * The byte is the top of the state times an odd constant: a product's top
 * bits depend on every bit of the state, so one multiply stands in for
 * hash_words_final32 and a fold. */
static uint8_t fingerprint(const char *s, size_t n) {
  return (uint8_t)(hash_words(HASH_WORDS_INIT, s, n) * HASH_WORDS_MUL >> 56);
}

/* Inserts a whole record (its id first) as student i of the run; the
 * records after it move up. fp is the fingerprint of its id.
 *
 * One pass, from the end of the run down: the records after i move up by
 * len + 3 (the new record, fingerprint and index entry), those before by 3;
 * the index entries after i move up by 3 and gain len, those before move
 * up by 1; the fingerprints after i by 1. Everything moves up, so working
 * downward never overwrites a byte before it is read. */
static void r_insert_record(run_t *r, size_t i, const uint8_t *rec, size_t len, uint8_t fp) {
  size_t n = r->n, area = r_area(r), need = (size_t)r->used + len + 3;
  if (need > r->cap) {
    uint32_t c = grow_cap(need);
    r->blk = oom_realloc(r->blk, c);
    r->cap = c;
  }
  uint8_t *fps = r->blk + r->off, *idx = fps + n, *recs = fps + 3 * n;
  uint8_t *nidx = idx + 1, *nrecs = recs + 3;
  uint16_t off_i;
  if (i < n) memcpy(&off_i, idx + 2 * i, 2);
  else off_i = (uint16_t)area;
  if (i < n) memmove(nrecs + off_i + len, recs + off_i, area - off_i); /* nothing to move when appending */
  memcpy(nrecs + off_i, rec, len);
  memmove(nrecs, recs, off_i);
  for (size_t j = n; j-- > i;) {
    uint16_t v;
    memcpy(&v, idx + 2 * j, 2);
    assert(v + len <= UINT16_MAX);
    v = (uint16_t)(v + len);
    memcpy(nidx + 2 * (j + 1), &v, 2);
  }
  memcpy(nidx + 2 * i, &off_i, 2);
  memmove(nidx, idx, 2 * i);
  if (i < n) memmove(fps + i + 1, fps + i, n - i);
  fps[i] = fp;
  r->n = (uint32_t)(n + 1);
  r->used = (uint32_t)need;
}

static inline uint64_t load_be64(const unsigned char *u) {
  uint64_t v;
  memcpy(&v, u, 8);
#if defined(__GNUC__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return __builtin_bswap64(v);
#else
  return (uint64_t)u[0] << 56 | (uint64_t)u[1] << 48 | (uint64_t)u[2] << 40 | (uint64_t)u[3] << 32 |
         (uint64_t)u[4] << 24 | (uint64_t)u[5] << 16 | (uint64_t)u[6] << 8 | u[7];
#endif
}

/* The first 8 bytes of an id as a big-endian number, zero-padded: ids hold
 * no NUL, so comparing prefixes orders ids as strcmp does whenever the
 * prefixes differ. The directory keeps the prefix of each chunk's first id,
 * so that a lookup's binary search reads only the directory (one or two
 * cache lines) instead of one chunk per probe; equal prefixes (ids sharing
 * 8 bytes) fall back to the record. */
static uint64_t id_prefix(const char *s, size_t len) {
  const unsigned char *u = (const unsigned char *)s;
  if (len >= 8) return load_be64(u); /* the common case, in one load */
  uint64_t v = 0;
  for (size_t i = 0; i < 8; i++) v = v << 8 | (i < len ? u[i] : 0);
  return v;
}

/* Compares the id s[0..len) with a record's NUL-terminated id, as strcmp. */
static int cmp_sid(const char *s, size_t len, const uint8_t *rec) {
  int c = strncmp(s, (const char *)rec, len);
  if (c) return c;
  return rec[len] ? -1 : 0;
}

/* cmp_sid with the first 8 bytes compared as one number, px being
 * id_prefix(s, len): when s has 8 bytes or more and the block holds 8 bytes
 * from rec (end: the end of the run's bytes). The record's id may be
 * shorter, and the load then takes bytes past its NUL; that is harmless,
 * because s holds no NUL, so the first byte that differs is at or before
 * that NUL. Equal prefixes mean both ids go on past 8 bytes or end there. */
static inline int cmp_sid_px(const char *s, size_t len, uint64_t px, const uint8_t *rec, const uint8_t *end) {
  if (len < 8 || end - rec < 8) return cmp_sid(s, len, rec);
  uint64_t rx = load_be64(rec);
  if (px != rx) return px < rx ? -1 : 1;
  if (len == 8) return rec[8] ? -1 : 0;
  return cmp_sid(s + 8, len - 8, rec + 8);
}

/* *pos is the student's index in the run, or where it would be inserted;
 * *fp the fingerprint of sid. */
static bool r_find(const run_t *r, const char *sid, size_t len, size_t *pos, uint8_t *fp) {
  const uint8_t *fps = r->blk + r->off, *end = fps + r->n, *p = fps;
  const uint8_t *blk_end = r->blk + r->used;
  uint64_t px = id_prefix(sid, len);
  uint8_t f = fingerprint(sid, len);
  *fp = f;
  while ((p = memchr(p, f, (size_t)(end - p))) != NULL) {
    if (cmp_sid_px(sid, len, px, r_rec(r, (size_t)(p - fps)), blk_end) == 0) {
      *pos = (size_t)(p - fps);
      return true;
    }
    p++;
  }
  size_t lo = 0, hi = r->n; /* absent: binary search for its place */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (cmp_sid_px(sid, len, px, r_rec(r, mid), blk_end) < 0) hi = mid;
    else lo = mid + 1;
  }
  *pos = lo;
  return false;
}

/* A chunk's first record is at offset 0 of its records. */
static const uint8_t *chunk_first(const dir_t *d) { return d->blk + 3 * (size_t)d->n; }

/* The chunk that holds sid, or where it would be inserted: the last one
 * whose first student is <= sid (or the first chunk). */
static size_t find_chunk(const table_t *a, const char *sid, size_t len) {
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
static void fix_firsts(table_t *a, size_t c) {
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

/* Whether run r has passed the bounds (and holds two students to split). */
static bool r_over(const run_t *r) { return r->n >= 2 && (r->n > RUN_MAX_N || r_bytes(r) > RUN_MAX_BYTES); }

/* Splits run c in two halves once it passes the bounds. An inline run
 * becomes the first two chunks (the main block keeps key, tenant, header
 * and the directory). Callers holding the edited run test r_over first,
 * which spares the reload in the common case. */
static void maybe_split(table_t *a, size_t c) {
  run_t r;
  run_load(a, c, &r);
  if (!r_over(&r)) return;
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

/* ---- the table ------------------------------------------------------------------- */

void model_table_init(table_t *t, const char *tenant, size_t tenant_len, const char *assignment,
                      size_t assignment_len) {
  assert(tenant_len >= 1 && tenant_len <= UINT8_MAX && assignment_len >= 1 && assignment_len <= UINT8_MAX);
  *t = (table_t){0};
  t->tlen = (uint8_t)tenant_len;
  t->alen = (uint8_t)assignment_len;
  t->hdr_len = 1;
  size_t used = hdr_off(t) + 1; /* no students: an empty inline run */
  t->cap = grow_cap(used);
  t->blk = oom_malloc(t->cap);
  uint8_t *p = t->blk;
  memcpy(p, tenant, tenant_len);
  p[tenant_len] = '/';
  memcpy(p + tenant_len + 1, assignment, assignment_len);
  p[key_len(t)] = 0;
  put_str(p + key_len(t) + 1, tenant, tenant_len);
  memset(p + model_table_word_off(t), 0, 4);
  p[hdr_off(t)] = 0; /* no header */
  t->used = (uint32_t)used;
}

void model_table_clear(table_t *t) {
  if (t->chunked) {
    for (size_t c = 0, nc = nchunks(t); c < nc; c++) {
      dir_t d;
      dir_get(t, c, &d);
      free(d.blk);
    }
  }
  free(t->blk);
}

void model_table_copy(table_t *dst, const table_t *src) {
  *dst = *src;
  dst->cap = grow_cap(src->used);
  dst->blk = oom_malloc(dst->cap);
  memcpy(dst->blk, src->blk, src->used);
  if (!src->chunked) return;
  size_t nc = nchunks(src);
  for (size_t k = 0; k < nc; k++) {
    dir_t d;
    dir_get(src, k, &d);
    uint8_t *p = oom_malloc(grow_cap(d.used));
    memcpy(p, d.blk, d.used);
    d.blk = p;
    d.cap = grow_cap(d.used);
    dir_put(dst, k, &d);
  }
}

size_t model_table_memory(const table_t *t) {
  size_t m = t->cap;
  if (t->chunked) {
    for (size_t c = 0, nc = nchunks(t); c < nc; c++) {
      dir_t d;
      dir_get(t, c, &d);
      m += d.cap;
    }
  }
  return m;
}

void model_table_set_header(table_t *t, const uint8_t *rec, size_t len) {
  main_splice(t, hdr_off(t), t->hdr_len, rec, len);
  t->hdr_len = (uint16_t)len;
}

bool model_table_find(const table_t *t, const char *id, size_t len, model_table_pos_t *pos) {
  pos->chunk = t->chunked ? find_chunk(t, id, len) : 0;
  run_load(t, pos->chunk, &pos->run);
  if (!r_find(&pos->run, id, len, &pos->index, &pos->fp)) {
    pos->rec = NULL;
    pos->rec_len = 0;
    return false;
  }
  pos->rec = r_rec(&pos->run, pos->index);
  pos->rec_len = r_rec_len(&pos->run, pos->index);
  return true;
}

void model_table_insert(table_t *t, const model_table_pos_t *pos, const uint8_t *rec, size_t len) {
  size_t c = pos->chunk, i = pos->index;
  run_t r = pos->run; /* a local copy: stores into the block cannot alias it */
  r_insert_record(&r, i, rec, len, pos->fp);
  run_store(t, c, &r);
  if (t->chunked) {
    t->n++;
    fix_firsts(t, c + 1);
    if (i == 0) { /* a new first student (only ever in chunk 0: others start at or below its id) */
      dir_t d;
      dir_get(t, c, &d);
      set_prefix(&d);
      dir_put(t, c, &d);
    }
  }
  if (r_over(&r)) maybe_split(t, c);
}

void model_table_splice(table_t *t, const model_table_pos_t *pos, size_t at, size_t old_len, const uint8_t *src,
                        size_t new_len) {
  run_t r = pos->run; /* a local copy: stores into the block cannot alias it */
  r_splice_record(&r, pos->index, at, old_len, src, new_len);
  run_store(t, pos->chunk, &r);
  if (new_len > old_len && r_over(&r)) maybe_split(t, pos->chunk);
}

const uint8_t *model_table_student(const table_t *t, size_t i) {
  assert(i < t->n);
  size_t c = 0, first = 0;
  if (t->chunked) { /* the last chunk whose first student is <= i */
    size_t lo = 1, hi = nchunks(t);
    while (lo < hi) {
      size_t mid = lo + (hi - lo) / 2;
      dir_t d;
      dir_get(t, mid, &d);
      if (i < d.first) hi = mid;
      else lo = mid + 1;
    }
    c = lo - 1;
    dir_t d;
    dir_get(t, c, &d);
    first = d.first;
  }
  run_t r;
  run_load(t, c, &r);
  return r_rec(&r, i - first);
}

/* ---- walking the students in order ------------------------------------------ */

void model_table_cursor_init(model_table_cursor_t *k, const table_t *t) {
  k->t = t;
  k->c = 0;
  k->i = 0;
  k->nc = t->chunked ? nchunks(t) : 1;
  run_load(t, 0, &k->r);
}

/* The next record, or NULL at the end. */
const uint8_t *model_table_cursor_next(model_table_cursor_t *k, size_t *len) {
  while (k->i == k->r.n) {
    if (++k->c >= k->nc) return NULL;
    run_load(k->t, k->c, &k->r);
    k->i = 0;
  }
  *len = r_rec_len(&k->r, k->i);
  return r_rec(&k->r, k->i++);
}

/* ---- building a table from records in order ---------------------------------- */

/* Closes the run being filled: a new chunk block. */
static void b_close(model_table_builder_t *b) {
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

void model_table_builder_add(model_table_builder_t *b, const uint8_t *rec, size_t len) {
  if (b->k && (b->k == RUN_FILL_N || 3 * b->k + b->recs.len + len + 3 > RUN_FILL_BYTES)) b_close(b);
  b->offs[b->k] = (uint32_t)b->recs.len;
  b->fps[b->k] = fingerprint((const char *)rec, strlen((const char *)rec));
  b->k++;
  b->students++;
  model_buf_append(&b->recs, rec, len);
}

/* The builder's runs become a's students: inline if they fit one run
 * within the bounds, else as chunks. */
void model_table_builder_install(model_table_builder_t *b, table_t *a) {
  b_close(b);
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
  model_buf_destroy(&b->recs);  b->dir = NULL;
  b->n = b->cap = b->students = 0;
}

void model_table_builder_discard(model_table_builder_t *b) {
  for (size_t c = 0; c < b->n; c++) free(b->dir[c].blk);
  free(b->dir);
  model_buf_destroy(&b->recs);
  b->dir = NULL;
  b->n = b->cap = b->students = b->k = 0;
}
