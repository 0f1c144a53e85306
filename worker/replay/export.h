/* `aggregator export`: the raw message values of the configured topics, in
 * a range (replay_bound.h), copied to a file one value per line, byte for
 * byte: the archive that outlives the topics' retention, which
 * `replay --input` and `verify --input` read as they read the topics.
 *
 * The messages come through the replay's topic source (replay_source.h):
 * its own partition assignment, no group joined, nothing committed. Each
 * partition's values are in offset order; partitions are interleaved as the
 * broker serves them (the merge does not depend on the order).
 *
 * A value holding a newline byte cannot be one line: it is not written, and
 * goes to the log (stderr) as one line with its topic, partition and offset,
 * and is counted. No valid command needs a newline (JSON escapes it inside
 * strings), so what is skipped is at worst whitespace of a valid command. */
#ifndef EXPORT_H
#define EXPORT_H

#include <stdint.h>

#include "config/config.h"

typedef struct export_options {
  const char *from;   /* --from, NULL = beginning */
  const char *until;  /* --until, NULL = end */
  const char *output; /* --output FILE|- (required) */
} export_options_t;

typedef struct export_stats {
  uint64_t read;     /* messages read in the range */
  uint64_t exported; /* values written, one line each */
  uint64_t newline;  /* values skipped for holding a newline */
  double seconds;    /* the whole export (monotonic clock) */
} export_stats_t;

/* Returns the exit status (0 everything up to the end written, 1 a runtime
 * failure: the broker, the file, a stop signal: SIGINT and SIGTERM stop
 * it) and fills *stats, also on failure. The output is whole or absent:
 * written beside the target and renamed onto it at success (export.c). Errors
 * go to stderr or the log. */
int export_run(const config_t *cfg, const export_options_t *o, export_stats_t *stats);

#endif
