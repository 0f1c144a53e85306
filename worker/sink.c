#include "sink.h"

static store_status_t store_sink_load(void *ctx, const char *const *keys, size_t n, store_found_cb found,
                                      void *cb_ctx, store_error_t *err) {
  return store_load(ctx, keys, n, found, cb_ctx, err);
}

static store_status_t store_sink_write(void *ctx, store_write_item_t *items, size_t n, int64_t now,
                                       store_error_t *err) {
  return store_write(ctx, items, n, now, err);
}

static store_status_t store_sink_ping(void *ctx, store_error_t *err) { return store_ping(ctx, err); }

sink_t sink_store(store_t *store) { return (sink_t){store_sink_load, store_sink_write, store_sink_ping, store}; }
