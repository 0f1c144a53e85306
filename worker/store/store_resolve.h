/* What became of each item of a bulk write whose reply did not account for
 * them all (store_bulk_outcome's *incomplete): a server that stops an
 * update command at its first write error, even when it is unordered,
 * reports neither the writes it did before the error nor the error's real
 * index (store_profile.c names it), and two partial updates of one command
 * that match nothing cannot be told apart from one by the counts.
 *
 * The rule: read the items back, and an item whose stored document is this
 * write's own (store_read_back_result: rev + 1, this write's updatedAt, the
 * same aggregate) has landed; send each other one alone, since a single
 * write's reply is unambiguous (one that another writer moved on comes back
 * as a conflict, as from MongoDB).
 *
 * Why it always ends, and loses nothing: one read and at most one single
 * write per item, so it terminates. Every item then has the result its read
 * or its own write gave it; or, when the store fails meanwhile (or a single
 * write's reply does not account for its one item), the call is SINK_RETRY
 * and every item SINK_ITEM_RETRY: kept by the batch and sent again by the
 * next flush (an item that did land comes back then as a conflict, whose
 * reload finds it stored), never forgotten.
 *
 * The server is behind two callbacks, so that a test drives the rule with
 * fates drawn at random (tests/unit/test_store_errors.c); store.c gives the
 * real ones. */
#ifndef STORE_RESOLVE_H
#define STORE_RESOLVE_H

#include <stddef.h>

#include "sink.h"

typedef struct store_resolver {
  /* Reads the n items back: SINK_ITEM_OK for each whose stored document is
   * this write's, SINK_ITEM_RETRY for the others. */
  sink_status_t (*read_back)(void *ctx, sink_write_item_t *items, size_t n, sink_error_t *err);
  /* Sends items[i] alone; on SINK_OK it has its result. */
  sink_status_t (*write_one)(void *ctx, sink_write_item_t *items, size_t i, sink_error_t *err);
  void *ctx;
} store_resolver_t;

/* Resolves items[0..n) by the rule above. SINK_OK: every item has a result
 * other than SINK_ITEM_RETRY. Otherwise every item is SINK_ITEM_RETRY and
 * err says why. */
sink_status_t store_resolve(const store_resolver_t *r, sink_write_item_t *items, size_t n, sink_error_t *err);

#endif
