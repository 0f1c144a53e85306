/* An in-memory store for unit tests, behind the batch_sink_t interface: it
 * applies the same conditional-write rule as store.c (filter {_id, rev}, an
 * upsert of an absent document expects rev 0, a lost race is a conflict),
 * so batching, loading, conflicts and retries can be checked without a
 * server. Up to 64 documents. Not thread-safe: the thread that runs the
 * batch owns it. */
#ifndef MEM_STORE_H
#define MEM_STORE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batch.h"

typedef struct doc {
  model_aggregate_t *agg;
  int64_t rev;
} doc_t;

typedef struct mem_store {
  char keys[64][140];
  doc_t docs[64];
  int n;
  int loads, load_keys, writes, write_items;
  int fail_next;  /* next N calls answer STORE_RETRY */
  bool fail_fatal; /* every call answers STORE_FATAL */
} mem_store_t;

static inline doc_t *mem_find(mem_store_t *s, const char *key) {
  for (int i = 0; i < s->n; i++)
    if (!strcmp(s->keys[i], key)) return &s->docs[i];
  return NULL;
}

/* The failure the test asked for, if any (every load and write asks first). */
static inline store_status_t mem_injected(mem_store_t *s, store_error_t *err) {
  if (s->fail_fatal) {
    if (err) snprintf(err->message, sizeof err->message, "injected fatal error");
    return STORE_FATAL;
  }
  if (s->fail_next > 0) {
    s->fail_next--;
    if (err) snprintf(err->message, sizeof err->message, "injected transient error");
    return STORE_RETRY;
  }
  return STORE_OK;
}

static inline store_status_t mem_load(void *ctx, const char *const *keys, size_t n, store_found_cb found, void *cb_ctx,
                               store_error_t *err) {
  mem_store_t *s = ctx;
  store_status_t st = mem_injected(s, err);
  if (st != STORE_OK) return st;
  s->loads++;
  s->load_keys += (int)n;
  for (size_t i = 0; i < n; i++) {
    doc_t *d = mem_find(s, keys[i]);
    if (d) found(cb_ctx, model_aggregate_clone(d->agg), d->rev);
  }
  return STORE_OK;
}

static inline store_status_t mem_write(void *ctx, store_write_item_t *items, size_t n, int64_t now, store_error_t *err) {
  mem_store_t *s = ctx;
  (void)now;
  store_status_t st = mem_injected(s, err);
  if (st != STORE_OK) return st;
  s->writes++;
  s->write_items += (int)n;
  for (size_t i = 0; i < n; i++) {
    const char *key = model_aggregate_key(items[i].agg, NULL);
    doc_t *d = mem_find(s, key);
    if ((d ? d->rev : 0) != items[i].rev) {
      items[i].result = STORE_ITEM_CONFLICT;
      continue;
    }
    if (!d) {
      if (s->n == 64) abort(); /* a test with more aggregates needs a bigger table */
      strcpy(s->keys[s->n], key);
      d = &s->docs[s->n++];
    } else {
      model_aggregate_destroy(d->agg);
    }
    d->agg = model_aggregate_clone(items[i].agg);
    d->rev = items[i].rev + 1;
    items[i].result = STORE_ITEM_OK;
  }
  return STORE_OK;
}

static inline void mem_free(mem_store_t *s) {
  for (int i = 0; i < s->n; i++) model_aggregate_destroy(s->docs[i].agg);
}

static inline batch_sink_t mem_sink(mem_store_t *s) { return (batch_sink_t){mem_load, mem_write, s}; }

#endif
