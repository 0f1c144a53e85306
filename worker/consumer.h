/* The live worker (`aggregator run`, SPEC.md section 5): Kafka consumer in
 * the configured group -> decode/validate -> batch (merge) -> writer thread
 * (flusher.h, writer.h: the store) -> offset commit, with the dead-letter
 * producer beside it.
 *
 * Two threads: this one polls, decodes, merges and commits; the writer
 * thread owns the store connection and runs one flush at a time, so that
 * consumption goes on while a flush is in flight.
 *
 * Offsets: a partition's offset is committed only up to the first message
 * whose effect is not yet durable: every valid command before it is in the
 * store and every rejected one has been acknowledged by the dead-letter
 * topic. When a flush begins it records each partition's next offset
 * (`covered`); when it lands with every item written, those offsets become
 * durable (the flush held a snapshot of every dirty aggregate, so every
 * command consumed before it began is then in the store). A flush with
 * conflicts or failures makes nothing durable: its aggregates go with the
 * next flush, which covers more. With nothing dirty and nothing in flight,
 * everything consumed is durable. */
#ifndef CONSUMER_H
#define CONSUMER_H

#include "batch.h"
#include "config.h"
#include "sink.h"

typedef struct consumer_reload {
  const char *config_path; /* re-read on SIGHUP; NULL = none */
  char *const *sets;
  size_t nsets;
} consumer_reload_t;

/* Runs until SIGTERM/SIGINT (returns 0 after writing, committing and leaving
 * the group) or a fatal error (returns 1). cfg may be updated live on SIGHUP.
 * batch is borrowed (and used by this thread only); sink is copied, and its
 * ctx (the store connection) belongs to the writer thread until this
 * returns: the caller must not use it meanwhile. */
int consumer_run(config_t *cfg, batch_t *batch, const sink_t *sink, const consumer_reload_t *reload);

#endif
