/* `aggregator replay` from the topics and/or into the store (SPEC.md
 * section 6); the file-to-file mode is replay_file.c.
 *
 * Sources: the configured topics, whose partitions the replay assigns itself
 * (no group join, no offset commit: the live group's offsets never move),
 * from --from (beginning, or the first offset at or after a time) to --until
 * (the high watermarks read at start, or the first offset at or after a
 * time, exclusive); or --input, a file of commands one per line.
 * Sinks: the configured store, through the same batch, writer thread and
 * conditional writer as `run`; or --output, JSON lines of the final documents, sorted by _id.
 *
 * Rejected commands are counted (the live worker dead-letters them; a replay
 * of the topics would only duplicate them there). */
#ifndef REPLAY_H
#define REPLAY_H

#include "config.h"
#include "replay_file.h"

/* What to replay from and to (the command line's, without depending on it). */
typedef struct replay_options {
  const char *from;    /* --from: NULL or "beginning", or an RFC 3339 time */
  const char *until;   /* --until: NULL or "end", or an RFC 3339 time */
  const char *input;   /* --input FILE|-, NULL = the topics */
  const char *output;  /* --output FILE|-, NULL = the store */
  const char *rejects; /* --rejects FILE, with input only */
  /* verify: rebuild in memory (as for --output) and hand the batch, every
   * aggregate in it, to *rebuilt instead of writing it anywhere; the caller
   * then owns it (batch_destroy). NULL for a replay. */
  struct batch **rebuilt;
  const char *label; /* the progress line's "<label>: ", NULL = "replay" */
} replay_options_t;

/* Parses a --from/--until bound: NULL or `word` ("beginning", "end") sets
 * *special; otherwise an RFC 3339 UTC time into *ms. False when it is
 * neither (a usage error: the CLI checks before contacting anything). */
bool replay_parse_bound(const char *s, const char *word, int64_t *ms, bool *special);

/* Returns the exit status (0 when everything up to the end is written) and
 * fills *stats. Into the store, writes go through the writer thread
 * (flusher.h), as for `run`. */
int replay_run(const config_t *cfg, const replay_options_t *o, replay_stats_t *stats);

#endif
