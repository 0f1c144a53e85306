/* The live worker (`aggregator run`, docs/GUARANTEES.md): Kafka consumer in
 * the configured group -> decode/validate -> batch (merge) -> writer thread
 * (flusher.h, writer.h: the store) -> offset commit (offsets.h), with the
 * dead-letter producer (deadletter.h) beside it. This file holds the main
 * loop, the rebalance handling (revocation: wait for the flush in flight,
 * write what is held, commit, then give the partitions up) and SIGHUP.
 *
 * Two threads: this one polls, decodes, merges and commits; the writer
 * thread owns the store connection and runs one flush at a time, so that
 * consumption goes on while a flush is in flight.
 *
 * Offsets (offsets.h): committed only up to the first message whose effect
 * is not yet durable. When a flush begins each partition's next offset is
 * recorded; when it lands with every item written, those become durable. A
 * flush with conflicts or failures makes nothing durable: its aggregates go
 * with the next flush, which covers more. */
#ifndef CONSUMER_H
#define CONSUMER_H

#include "pipeline/batch.h"
#include "base/clock.h"
#include "config/config.h"
#include "store/sink.h"

typedef struct consumer_reload {
  const char *config_path; /* re-read on SIGHUP; NULL = none */
  char *const *sets;
  size_t nsets;
} consumer_reload_t;

/* Runs until SIGTERM/SIGINT (returns 0 after writing, committing and leaving
 * the group) or a fatal error (returns 1). cfg may be updated live on SIGHUP.
 * batch is borrowed (and used by this thread only); sink is copied, and its
 * ctx (the store connection) belongs to the writer thread until this
 * returns: the caller must not use it meanwhile. clock (borrowed, read by
 * the writer thread too) measures every duration (linger, backoff, the
 * drain and shutdown deadlines) on its monotonic side and dates latency on
 * its wall side. */
int consumer_run(config_t *cfg, batch_t *batch, const sink_t *sink, const clock_source_t *clock,
                 const consumer_reload_t *reload);

#endif
