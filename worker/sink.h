/* Where aggregates are read from and written to: the interface between the
 * write stage (writer.c) and a store. The MongoDB store (store.h) is the one
 * implementation in the worker; the unit tests put an in-memory store with a
 * controllable latency behind it (tests/unit/mem_store.h).
 *
 * Every function has the contract of its store.h counterpart. A sink is
 * called from one thread at a time: the writer's thread (writer.h), which
 * owns the connection behind ctx for as long as the writer runs. */
#ifndef SINK_H
#define SINK_H

#include <stddef.h>
#include <stdint.h>

#include "store.h"

typedef struct sink {
  store_status_t (*load)(void *ctx, const char *const *keys, size_t nkeys, store_found_cb found, void *cb_ctx,
                         store_error_t *err);
  store_status_t (*write)(void *ctx, store_write_item_t *items, size_t nitems, int64_t updated_at_ms,
                          store_error_t *err);
  store_status_t (*ping)(void *ctx, store_error_t *err);
  void *ctx;
} sink_t;

/* The MongoDB store as a sink; store is borrowed and must outlive its use. */
sink_t sink_store(store_t *store);

#endif
