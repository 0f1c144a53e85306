/* `aggregator replay`: one pipeline for every mode.
 *
 *   source (replay_source.h: the lines of --input, or the configured topics
 *   from --from to --until) -> merger.apply (decode, merge, rejects) ->
 *   merger.finish -> output, where the merger (replay_merger.h), chosen
 *   before anything is read, is
 *   - into the configured store: the same batch (batch.h), writer thread
 *     and conditional writer as `run` (flusher.h; replay_store.h), the
 *     documents written as it goes;
 *   - otherwise a plain table (replay_merge.h), which keeps none of the
 *     batch's write bookkeeping, or the same on replay.threads threads
 *     (replay_shards.h); then the output is
 *     - --output: JSON lines of the final documents (model_codec_to_json),
 *       sorted by _id bytewise, each with rev 1 and updatedAt = the time of
 *       the write (one clock reading for the whole output);
 *     - verify's rebuild: the aggregates handed to the caller sorted by _id.
 *
 * Threads: without a store, decode and merge run on replay.threads threads
 * (replay_shards.h; 1 keeps them on the calling thread) and --output is
 * encoded on as many (replay_encode.h), with the output of one thread byte
 * for byte. The source stays on the calling thread (the file's reads; the
 * topics' messages from librdkafka's queue), and so do the rejects file and
 * the summary. A replay into the store decodes and merges on the calling
 * thread: the batch that feeds the writer is one thread's (batch.h).
 *
 * With both --input and --output (the file replay) it contacts no broker
 * and no store: the merge on a laptop, in one process. Its files are all
 * opened before anything is read, so that a bad path costs no work.
 *
 * Rejects: with --input and --rejects, one line per rejected input line,
 * {"line":N,"code":"...","detail":"..."} (lines count from 1), in line
 * order (into the store, a line can be rejected late, when its aggregate's
 * stored document is loaded: batch.h; those lines wait for the end); otherwise
 * they are only counted (the live worker dead-letters rejected messages; a
 * replay of the topics would only duplicate them there). "-" means
 * standard input / output for every file; in the file replay, output and
 * rejects cannot both be "-", and no output file may be the input file.
 *
 * Outputs (--output, --rejects) are whole or absent (replay_file.h): opened
 * before anything is read, committed only when the replay succeeds.
 *
 * Signals: a replay stops on SIGINT/SIGTERM (signals.h), says so and exits
 * 1 (a runtime failure, as the contract's exit statuses have it), its
 * outputs not written; verify's rebuild stops the same way under the
 * handlers verify installed. */
#ifndef REPLAY_H
#define REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"
#include "base/clock.h"
#include "config/config.h"
#include "replay_merge.h"
#include "replay_source.h"

typedef struct replay_stats {
  uint64_t read;       /* commands (lines, messages) read */
  uint64_t applied;    /* valid commands that changed a slot */
  uint64_t stale;      /* valid commands that changed nothing */
  uint64_t rejected;   /* invalid commands */
  uint64_t aggregates; /* documents written (rebuilt, for verify) */
  double seconds;      /* duration of the whole replay (monotonic clock) */
} replay_stats_t;

/* What to replay from and to (the command line's, without depending on it). */
typedef struct replay_options {
  const char *from;    /* --from: NULL or "beginning", or an RFC 3339 time */
  const char *until;   /* --until: NULL or "end", or an RFC 3339 time */
  const char *input;   /* --input FILE|-, NULL = the topics */
  const char *output;  /* --output FILE|-, NULL = the store */
  const char *rejects; /* --rejects FILE, with input only */
  /* verify: rebuild in memory (as for --output) and hand every aggregate,
   * sorted by key, to *rebuilt instead of writing it anywhere; the caller
   * then owns them (replay_rebuilt_free). NULL for a replay. */
  replay_rebuilt_t *rebuilt;
  const char *label; /* the progress line's "<label>: ", NULL = "replay" */
  /* --max-rejects: once more than max_rejects commands are rejected, the
   * replay stops and fails (exit 1, its outputs not written). */
  bool limit_rejects;
  uint64_t max_rejects;
  /* The clock of the replay's time, its documents' updatedAt and the
   * writer's flushes; NULL: the process's (clock_system). Borrowed. */
  const clock_source_t *clock;
} replay_options_t;

/* Returns the exit status and fills *stats (also on failure, with what was
 * done): 0 when everything up to the end is written, 1 a runtime failure
 * (a file that cannot be opened, read or written, the broker, the store,
 * interrupted), 2 a usage or configuration error (conflicting files, a bad
 * store URI). Errors go to stderr as one line, or to the log. */
int replay_run(const config_t *cfg, const replay_options_t *o, replay_stats_t *stats);

#endif
