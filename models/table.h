/* model_table: the compact storage of one aggregate (its key, its header
 * record and its student records, sorted by student id). It knows records
 * only as byte strings that start with a NUL-terminated student id; their
 * encoding is record.h's and the rules that change them are aggregate.c's.
 *
 * Why this layout
 * ---------------
 * The worker keeps tens of thousands of aggregates in memory, with a budget
 * of about 2 KiB for an assignment of 30 students with every slot filled;
 * assignments also go to year groups, schools and districts (thousands of
 * students), where a command must still cost O(log n) and memory must stay
 * close to the content. A struct per student with malloc'd strings costs
 * several times the content (8-byte versions and dates, pointers and malloc
 * headers per string), so students are kept as RUNS of encoded records:
 *
 *   run = fingerprints: n bytes, a hash byte of each student id
 *       | index: n offsets (2 bytes each; a run's records stay < 64 KiB)
 *       | student records, sorted by student id, back to back
 *
 * A table is a small handle plus a main block:
 *
 *   main block = key "tenant/assignment" NUL | tenant NUL | owner's word
 *              | header record
 *              | inline: ONE run (every assignment up to MODEL_TABLE_RUN_MAX_N students)
 *              | chunked: a directory of chunks, each a block holding one
 *                run, in student order
 *
 * A small assignment is one allocation plus the handle. Once the inline run
 * passes the bounds of a run it is split into two chunks, and any chunk that
 * passes them is split in two. A directory entry keeps its chunk's block,
 * sizes, the index of its first student and the first 8 bytes of that
 * student's id, so that finding a student's chunk is a binary search over
 * the directory alone, then a fingerprint scan of one chunk (memchr; only
 * the records whose byte matches are compared).
 *
 * Costs. A record change splices bytes within ONE run (a memmove of the
 * rest of the run, bounded by the run's bounds, and a fix-up of its
 * following index entries). Per command: a binary search over the
 * directory, a scan of at most MODEL_TABLE_RUN_MAX_N fingerprints and a bounded splice:
 * O(log n) plus a bounded constant. Inserting a NEW student also renumbers
 * the first index of the following directory entries and, when its chunk
 * splits, inserts a directory entry: O(n / run size) small stores, which
 * updates of existing students (almost all commands) do not pay. Blocks
 * grow in 128-byte size classes, so that a stream of growing updates does
 * not realloc on every command. scripts/bench-models measures speed and
 * memory by assignment size (docs/BENCHMARKS.md, "Large assignments: the
 * models").
 *
 * Ownership: the table owns its main block and its chunk blocks; the
 * handle is embedded by value in its owner (the aggregate), which calls
 * model_table_init once and model_table_clear once. Record pointers handed
 * out point into the blocks and stay valid until the table next changes.
 * Allocation failure aborts (oom.h). */
#ifndef MODEL_TABLE_H
#define MODEL_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "buf.h"

/* A run holds at most this many students (see table.c). */
#define MODEL_TABLE_RUN_MAX_N 64

/* The handle. Its fields are private to table.c. */
typedef struct model_table {
  uint8_t *blk;          /* the main block (see the layout above) */
  uint32_t cap, used;    /* bytes allocated / in use in blk */
  uint32_t n;            /* students, in all runs */
  unsigned hdr_len : 15; /* bytes of the header record (at most ~1.3 KiB) */
  unsigned chunked : 1;  /* the students are in chunks listed by a directory, not inline */
  unsigned tlen : 8, alen : 8; /* tenant and assignment id lengths (ids are <= 64 bytes) */
} model_table_t;
/* 24 bytes: the smallest glibc chunk (32) holds the aggregate's handle. */
_Static_assert(sizeof(model_table_t) <= 24, "table handle grew");

/* A run being read or edited: `n` students at offset `off` of a block (the
 * main block when inline, a chunk block otherwise). Private to table.c;
 * visible so that cursors and positions live on the caller's stack. */
typedef struct model_table_run {
  uint8_t *blk;
  uint32_t cap, used, n;
  size_t off;
} model_table_run_t;

/* Fills an empty table for the key "tenant/assignment": no students and
 * the header record {0} (one byte). Ids are 1..MODEL_ID_MAX bytes. */
void model_table_init(model_table_t *t, const char *tenant, size_t tenant_len, const char *assignment,
                      size_t assignment_len);
/* Frees every block of t (t itself belongs to the caller). */
void model_table_clear(model_table_t *t);
/* Fills *dst with a deep copy of src. */
void model_table_copy(model_table_t *dst, const model_table_t *src);
/* Bytes of heap the blocks of t take. */
size_t model_table_memory(const model_table_t *t);

static inline size_t model_table_key_len(const model_table_t *t) { return (size_t)t->tlen + 1 + t->alen; }
/* "tenant/assignment" NUL, then "tenant" NUL, at the start of the main block. */
static inline const char *model_table_key(const model_table_t *t) { return (const char *)t->blk; }
static inline const char *model_table_tenant(const model_table_t *t) {
  return (const char *)t->blk + model_table_key_len(t) + 1;
}
static inline const char *model_table_assignment(const model_table_t *t) {
  return (const char *)t->blk + t->tlen + 1;
}

/* A 32-bit word the owner keeps with the table, in the main block where
 * it costs no allocation of its own (the aggregate keeps its stored
 * document's size there). 0 after init; copied with the table. */
static inline size_t model_table_word_off(const model_table_t *t) { return model_table_key_len(t) + 1 + t->tlen + 1; }
static inline uint32_t model_table_word(const model_table_t *t) {
  uint32_t w;
  memcpy(&w, t->blk + model_table_word_off(t), sizeof w);
  return w;
}
static inline void model_table_set_word(model_table_t *t, uint32_t w) {
  memcpy(t->blk + model_table_word_off(t), &w, sizeof w);
}

/* The header record, *len bytes. */
static inline const uint8_t *model_table_header(const model_table_t *t, size_t *len) {
  *len = t->hdr_len;
  return t->blk + model_table_word_off(t) + 4;
}
/* Replaces the header record by rec[0..len) (rec outside the table). */
void model_table_set_header(model_table_t *t, const uint8_t *rec, size_t len);

static inline size_t model_table_count(const model_table_t *t) { return t->n; }

/* Where a student is, or would be inserted; valid until t next changes. */
typedef struct model_table_pos {
  /* Its record when found, else NULL. The caller may rewrite bytes of it
   * in place, its id excepted (the order and the fingerprints depend on
   * it); a change of length goes through model_table_splice. */
  uint8_t *rec;
  size_t rec_len;
  /* private to table.c: */
  size_t chunk, index; /* its run (0 when inline) and its index in the run */
  model_table_run_t run;
  uint8_t fp; /* its id's fingerprint */
} model_table_pos_t;

/* Looks the student id[0..len) up. Returns whether it is there; fills *pos
 * either way. */
bool model_table_find(const model_table_t *t, const char *id, size_t len, model_table_pos_t *pos);

/* Inserts rec[0..len) (its id the one looked up, absent) where pos says. */
void model_table_insert(model_table_t *t, const model_table_pos_t *pos, const uint8_t *rec, size_t len);

/* Replaces bytes [at, at + old_len) of the record found at pos by
 * src[0..new_len) (src outside the table). */
void model_table_splice(model_table_t *t, const model_table_pos_t *pos, size_t at, size_t old_len,
                        const uint8_t *src, size_t new_len);

/* The record of student i (i < count), in ascending order of ids. */
const uint8_t *model_table_student(const model_table_t *t, size_t i);

/* Walks the records in order. */
typedef struct model_table_cursor {
  const model_table_t *t;
  size_t c, nc, i; /* run c of nc, student i of it */
  model_table_run_t r;
} model_table_cursor_t;

void model_table_cursor_init(model_table_cursor_t *k, const model_table_t *t);
/* The next record (its length in *len), or NULL at the end. */
const uint8_t *model_table_cursor_next(model_table_cursor_t *k, size_t *len);

/* Builds a new student table from records added in ascending order of ids,
 * then installs it in place of a table's students, or is discarded. The
 * builder owns what it built until then. */
typedef struct model_table_builder model_table_builder_t;
struct model_table_builder {
  struct model_table_dir *dir; /* the runs closed so far */
  size_t n, cap, students;
  model_buf_t recs; /* the records of the run being filled, back to back */
  uint32_t offs[MODEL_TABLE_RUN_MAX_N];
  uint8_t fps[MODEL_TABLE_RUN_MAX_N];
  size_t k; /* records in recs */
};
#define MODEL_TABLE_BUILDER_INIT {.recs = MODEL_BUF_INIT}

void model_table_builder_add(model_table_builder_t *b, const uint8_t *rec, size_t len);
/* Replaces t's students by b's records and empties b. */
void model_table_builder_install(model_table_builder_t *b, model_table_t *t);
/* Frees what b built. */
void model_table_builder_discard(model_table_builder_t *b);

#endif
