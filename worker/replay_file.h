/* The files of a replay: its --input, --output and --rejects.
 *
 * "-" means standard input (for reading) or standard output (for writing).
 * Every failure prints one line to stderr that names the file as `shown`
 * says (the caller's choice of words, kept with the file), and makes the
 * call return false.
 *
 * Writes are buffered in memory and handed to stdio in large pieces, so
 * that a stream of short lines costs few stdio calls. */
#ifndef REPLAY_FILE_H
#define REPLAY_FILE_H

#include <stdbool.h>
#include <stdio.h>

#include "buf.h"

typedef struct replay_file {
  FILE *f;            /* NULL: not open */
  const char *shown;  /* how messages name it (borrowed) */
  bool quote;         /* shown goes between single quotes */
  bool report_each;   /* a failed write is reported when it happens, and again
                         at close; otherwise once, at close */
  bool failed;        /* a write failed */
  model_buf_t buf;    /* written, not yet handed to stdio */
} replay_file_t;

/* Opens path for reading (mode "r") or writing ("w"); "-" is the standard
 * stream, never closed. False with a message naming path as given.
 * *file must be zeroed or closed; shown, quote and report_each are kept. */
bool replay_file_open(replay_file_t *file, const char *path, const char *mode);

/* Appends len bytes; hands the buffer to stdio once it is large, and a
 * piece that large at once. */
bool replay_file_write(replay_file_t *file, const char *data, size_t len);

/* Hands what is buffered to stdio. */
bool replay_file_drain(replay_file_t *file);

/* Drains, then closes (a standard stream is only flushed); false when
 * anything written was lost. Closing a file never opened is true. Frees
 * the buffer; the file may be opened again. */
bool replay_file_close(replay_file_t *file);

/* Closes a file opened for reading. */
void replay_file_close_input(replay_file_t *file);

/* True when a and b are the same regular file, or equal paths of which one
 * does not exist yet: writing one would destroy the other. "-" and NULL are
 * never the same as anything (devices such as /dev/null are fine). */
bool replay_file_same(const char *a, const char *b);

#endif
