/* `aggregator replay --input FILE|- --output FILE|- [--rejects FILE]`
 * (SPEC.md section 6): the merge on a laptop, in one process, with no
 * broker, no store and no config file.
 *
 * Input: commands one per line. A line is the bytes before a "\n" (a "\r"
 * before it stays part of the line, where JSON treats it as whitespace); the
 * "\n" that ends the last line starts no empty line; a last line without
 * "\n" still counts. Lines count from 1. Any length works (getline).
 *
 * Output: one JSON line per aggregate (model_codec_to_json), sorted by _id
 * bytewise, each with rev 1 and updatedAt = the time of the write (one clock
 * reading for the whole output).
 *
 * Rejects: with `rejects` set, one line per rejected input line,
 * {"line":N,"code":"...","detail":"..."}; without it they are only counted.
 * "-" means standard input / output for every file; output and rejects
 * cannot both be "-", and no output file may be the input file. */
#ifndef REPLAY_FILE_H
#define REPLAY_FILE_H

#include <stdint.h>

#include "config.h"

typedef struct replay_stats {
  uint64_t read;     /* lines read */
  uint64_t applied;  /* valid commands that changed a slot */
  uint64_t stale;    /* valid commands that changed nothing */
  uint64_t rejected; /* invalid lines */
  uint64_t aggregates; /* documents written */
  double seconds;      /* wall time of the whole replay */
} replay_stats_t;

/* Runs the replay; fills *stats (also on failure, with what was done).
 * Only cfg->limits_max_command_bytes is used. Errors are printed to stderr
 * as one line. Returns the exit status: 0 success, 1 I/O failure (cannot
 * open, read or write a file; out of memory), 2 usage error (conflicting
 * files). */
int replay_file_run(const config_t *cfg, const char *input, const char *output, const char *rejects,
                    replay_stats_t *stats);

#endif
