/* Where aggregates are read from and written to: the interface between the
 * write stage (writer.c) and a store. It owns the types both sides speak;
 * the MongoDB store (store.h) implements it, and the unit tests put an
 * in-memory store with a controllable latency behind it
 * (tests/unit/mem_store.h).
 *
 * Results are one vocabulary from the store to the flusher: a sink call,
 * the writer's job, the batch's flush and the flusher's event all say how
 * they ended with sink_status_t, and every item of a write, from the store
 * through the writer to the batch, with sink_item_result_t; nothing on the
 * way translates one into another. A store's own error codes stay in its
 * files: what the other side needs of them is in these values.
 *
 * A sink is called from one thread at a time: the writer's thread
 * (writer.h), which owns the connection behind ctx for as long as the
 * writer runs. */
#ifndef SINK_H
#define SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"

/* How a call ended, as fluent-bit's sink contract says: SINK_OK (every item
 * has a result), SINK_RETRY (transient: network, election, write-concern
 * timeout; nothing can be assumed about which items landed, and retrying is
 * safe because every write is conditional on the revision last seen),
 * SINK_FATAL (configuration, authentication or a stored document that does
 * not decode: retrying cannot help). SINK_PARTIAL is what a flush of the
 * batch (batch_flush_end) adds: every item has a result and some are due
 * again at once (conflicts, or documents past the limit once loaded); a sink
 * call never returns it (its items say so). */
typedef enum { SINK_OK = 0, SINK_RETRY = 1, SINK_FATAL = 2, SINK_PARTIAL = 3 } sink_status_t;

typedef struct sink_error {
  uint32_t domain; /* the store client's error domain, 0 if none */
  uint32_t code;   /* the client's error code or the server's */
  char message[256];
} sink_error_t;

/* How one item of a write ended. */
typedef enum {
  SINK_ITEM_RETRY = 0, /* no result: the call (or the job) stopped before it; kept and sent again */
  SINK_ITEM_OK,        /* the store holds it: written (the stored rev is now rev + 1) or, after a
                        * load, already held (writer.h) */
  SINK_ITEM_CONFLICT,  /* another writer got there first: reload and merge again */
  SINK_ITEM_TOO_LARGE, /* the document would pass the store's limit: refused by the store before
                        * sending (bytes says its size), or found by the writer's merge after a
                        * load (writer.h) */
  SINK_ITEM_REJECTED   /* refused by the store for this item; error_code says why */
} sink_item_result_t;

/* The store's answer to how large the document of agg may grow (as
 * models/docsize.h measures it): every supported store has the same limit,
 * which store_bulk.h states with what a write statement adds to the
 * document. The merge refuses a command that would pass it
 * (model_aggregate_apply_within) and the writer an overlay whose merge into
 * its stored document would, so that the store never has to; a sink still
 * refuses, before sending anything, a document whose write statement would
 * pass it: SINK_ITEM_TOO_LARGE with the document's size in bytes; the
 * other items go on. */
size_t sink_document_limit(const model_aggregate_t *agg);

typedef struct sink_write_item {
  const model_aggregate_t *agg; /* in: borrowed */
  int64_t rev;                  /* in: the stored rev this write expects (0 = absent) */
  /* in, optional: a partial write. With partial set (and rev > 0) the item is
   * an update without upsert, filter {_id, rev}, that sets only the
   * students at these indexes of agg (ascending, distinct; borrowed), the
   * header if `header`, and counts, rev + 1 and updatedAt. The caller
   * promises that the stored document at rev differs from agg in nothing
   * else and holds every one of agg's students already (a new student
   * needs a whole write: a partial update would append it out of id order).
   * An update that matches nothing is a conflict, as for a whole write. */
  bool partial;
  bool header;
  const size_t *students;
  size_t nstudents;
  sink_item_result_t result; /* out */
  uint32_t error_code;       /* out, for SINK_ITEM_REJECTED and SINK_ITEM_TOO_LARGE: the store's own
                              * code, for logs and reports only */
  size_t bytes;              /* out: the encoded size of what is sent, the document or a partial
                              * update's changes (the document's when refused as too large), 0 if
                              * never encoded */
} sink_write_item_t;

/* Called once per stored document found by a load, with its rev and its
 * updatedAt (wall ms; 0 if it has none); takes ownership of agg. */
typedef void (*sink_found_cb)(void *ctx, model_aggregate_t *agg, int64_t rev, int64_t updated_at_ms);

typedef struct sink {
  /* Loads the documents whose keys are given; keys not found get no
   * callback (the caller treats them as rev 0). All or nothing: on failure
   * no callback has been made. */
  sink_status_t (*load)(void *ctx, const char *const *keys, size_t nkeys, sink_found_cb found, void *cb_ctx,
                        sink_error_t *err);
  /* Writes every item, conditional on its rev (keys distinct); updated_at_ms
   * goes into every document. On SINK_OK every item has a result; otherwise
   * items are left SINK_ITEM_RETRY and err says why. */
  sink_status_t (*write)(void *ctx, sink_write_item_t *items, size_t nitems, int64_t updated_at_ms,
                         sink_error_t *err);
  /* A round trip to the store. */
  sink_status_t (*ping)(void *ctx, sink_error_t *err);
  void *ctx;
} sink_t;

#endif
