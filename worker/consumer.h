/* The live worker (`aggregator run`, SPEC.md section 5): Kafka consumer in
 * the configured group -> decode/validate -> batch (merge, flush to the
 * store) -> offset commit, with the dead-letter producer beside it.
 *
 * Offsets: a partition's offset is committed only up to the first message
 * whose effect is not yet durable: every valid command before it is in the
 * store (a flush finished with nothing dirty) and every rejected one has
 * been acknowledged by the dead-letter topic. */
#ifndef CONSUMER_H
#define CONSUMER_H

#include "batch.h"
#include "config.h"
#include "store.h"

typedef struct consumer_reload {
  const char *config_path; /* re-read on SIGHUP; NULL = none */
  char *const *sets;
  size_t nsets;
} consumer_reload_t;

/* Runs until SIGTERM/SIGINT (returns 0 after writing, committing and leaving
 * the group) or a fatal error (returns 1). cfg may be updated live on SIGHUP.
 * store is used for idle pings; batch writes through its own sink. */
int consumer_run(config_t *cfg, batch_t *batch, store_t *store, const consumer_reload_t *reload);

#endif
