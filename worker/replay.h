/* `aggregator replay` from the topics and/or into the store (SPEC.md
 * section 6); the file-to-file mode is replay_file.c.
 *
 * Sources: the configured topics, whose partitions the replay assigns itself
 * (no group join, no offset commit: the live group's offsets never move),
 * from --from (beginning, or the first offset at or after a time) to --until
 * (the high watermarks read at start, or the first offset at or after a
 * time, exclusive); or --input, a file of commands one per line.
 * Sinks: the configured store, through the same batch and conditional writer
 * as `run`; or --output, JSON lines of the final documents, sorted by _id.
 *
 * Rejected commands are counted (the live worker dead-letters them; a replay
 * of the topics would only duplicate them there). */
#ifndef REPLAY_H
#define REPLAY_H

#include "cli.h"
#include "config.h"
#include "replay_file.h"

/* Returns the exit status (0 when everything up to the end is written) and
 * fills *stats. */
int replay_run(const config_t *cfg, const cli_options_t *o, replay_stats_t *stats);

#endif
