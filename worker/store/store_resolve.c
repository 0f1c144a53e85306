/* Resolving a write whose reply did not account for every item
 * (store_resolve.h). */
#include "store_resolve.h"

sink_status_t store_resolve(const store_resolver_t *r, sink_write_item_t *items, size_t n, sink_error_t *err) {
  sink_status_t st = r->read_back(r->ctx, items, n, err);
  for (size_t i = 0; st == SINK_OK && i < n; i++)
    if (items[i].result == SINK_ITEM_RETRY) st = r->write_one(r->ctx, items, i, err);
  for (size_t i = 0; st == SINK_OK && i < n; i++)
    if (items[i].result == SINK_ITEM_RETRY) st = SINK_RETRY; /* a sink that left it without a result */
  if (st != SINK_OK) {
    for (size_t i = 0; i < n; i++) {
      items[i].result = SINK_ITEM_RETRY;
      items[i].error_code = 0;
    }
  }
  return st;
}
