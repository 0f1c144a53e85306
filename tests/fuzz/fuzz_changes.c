/* libFuzzer target for models/changes.c and change_event.c: change sets
 * against an oracle, and the event as JSON.
 *
 * The input is a program over two change sets, A and B. Each op byte's low
 * three bits pick: add an id (its length and bytes from the next input
 * bytes, any byte 1..0x7f, so that ids are prefixes of one another, repeat
 * and burst) with a mask to A or to B; normalize A or B; merge B into A or
 * A into B; set A's header; clear B. The oracle is the same program over
 * two plain maps of id to mask. At the end both sets, normalized, must hold
 * exactly the oracle's ids in strcmp order with their ORed masks and
 * (unless cleared) no more memory than a few times their records; and A's event for an
 * aggregate must read back (libbson's JSON reader) with one "changed" path
 * per slot of the set and the header. Any difference aborts. */
#include <bson/bson.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "changes.h"

enum { MAX_IDS = 512, ID_MAX = 24 };

typedef struct {
  char id[MAX_IDS][ID_MAX + 1];
  uint8_t mask[MAX_IDS];
  size_t n;
  bool header;
} oracle_t;

static void fail(const char *what) {
  fprintf(stderr, "fuzz_changes: %s\n", what);
  abort();
}

static void oracle_add(oracle_t *o, const char *id, uint8_t mask) {
  if (!mask) return;
  for (size_t i = 0; i < o->n; i++)
    if (!strcmp(o->id[i], id)) {
      o->mask[i] |= mask;
      return;
    }
  strcpy(o->id[o->n], id);
  o->mask[o->n++] = mask;
}

static void oracle_merge(oracle_t *dst, const oracle_t *src) {
  dst->header |= src->header;
  for (size_t i = 0; i < src->n; i++) oracle_add(dst, src->id[i], src->mask[i]);
}

/* c, normalized, against o: the same ids in strcmp order, the same masks;
 * and (unless a clear left it its block) its block within a few times its
 * records: repeats are folded before the block grows. */
static void check(model_changes_t *c, const oracle_t *o, bool cleared) {
  model_changes_normalize(c);
  if (c->header != o->header || c->n != o->n) fail("header or count differs");
  size_t pos = 0, len, bytes = 0;
  const char *id, *prev = NULL;
  uint8_t mask;
  while (model_changes_next(c, &pos, &id, &len, &mask)) {
    if (prev && strcmp(prev, id) >= 0) fail("not sorted or repeated");
    prev = id;
    size_t i = 0;
    while (i < o->n && strcmp(o->id[i], id)) i++;
    if (i == o->n || len != strlen(id) || o->mask[i] != mask) fail("record differs");
    bytes += len + 2;
  }
  if (!cleared && model_changes_memory(c) > 4 * bytes + 128) fail("memory far past the records");
}

static void check_event(const model_changes_t *c) {
  static model_aggregate_t *agg;
  if (!agg) agg = model_aggregate_new("t1", 2, "a1", 2);
  model_buf_t out = MODEL_BUF_INIT;
  model_change_event_json(agg, 1, 0, c, false, &out);
  bson_error_t err;
  bson_t *b = bson_new_from_json((const uint8_t *)out.data, (ssize_t)out.len, &err);
  if (!b) fail("the event is not JSON");
  size_t want = c->header, got = 0, pos = 0, len;
  const char *id;
  uint8_t mask;
  while (model_changes_next(c, &pos, &id, &len, &mask)) want += (size_t)__builtin_popcount(mask);
  bson_iter_t it, arr;
  if (!bson_iter_init_find(&it, b, "changed") || !bson_iter_recurse(&it, &arr)) fail("no changed array");
  while (bson_iter_next(&arr)) got++;
  if (got != want) fail("changed holds the wrong number of paths");
  bson_destroy(b);
  model_buf_destroy(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static oracle_t oa, ob;
  memset(&oa, 0, sizeof oa);
  memset(&ob, 0, sizeof ob);
  model_changes_t a = MODEL_CHANGES_INIT, b = MODEL_CHANGES_INIT;
  bool cleared = false;
  for (size_t i = 0; i < size;) {
    uint8_t op = data[i++];
    switch (op & 7) {
    case 0:
    case 1: {
      size_t len = 1 + (op >> 3) % ID_MAX;
      if (i + len + 1 > size) break;
      char id[ID_MAX + 1];
      for (size_t k = 0; k < len; k++) id[k] = (char)(1 + data[i + k] % 0x7f);
      id[len] = '\0';
      uint8_t mask = data[i + len] & 7;
      i += len + 1;
      oracle_t *o = (op & 7) ? &ob : &oa;
      if (o->n == MAX_IDS) break;
      model_changes_add((op & 7) ? &b : &a, id, len, mask);
      oracle_add(o, id, mask);
      break;
    }
    case 2: model_changes_normalize(op & 8 ? &b : &a); break;
    case 3:
      if (oa.n + ob.n > MAX_IDS) break;
      model_changes_merge(&a, &b);
      oracle_merge(&oa, &ob);
      break;
    case 4:
      if (oa.n + ob.n > MAX_IDS) break;
      model_changes_merge(&b, &a);
      oracle_merge(&ob, &oa);
      break;
    case 5: a.header = oa.header = true; break;
    case 6:
      model_changes_clear(&b);
      memset(&ob, 0, sizeof ob);
      cleared = true;
      break;
    default: break;
    }
  }
  check(&a, &oa, false);
  check(&b, &ob, cleared);
  check_event(&a);
  model_changes_free(&a);
  model_changes_free(&b);
  return 0;
}
