/* The files of a replay (and of any command that writes a file of lines):
 * its --input, --output and --rejects.
 *
 * "-" means standard input (for reading) or standard output (for writing).
 * Every failure logs one error line (log.h) that names the file as `shown`
 * says (the caller's choice of words, kept with the file), and makes the
 * call return false.
 *
 * Outputs are whole or absent. A file opened for writing is written to a
 * new file beside its target (same directory, so that the rename is
 * atomic), `.<name>.tmp-<pid>-<n>`, created with the permissions the target
 * has, or 0666 less the umask for a new one. replay_file_commit makes it
 * durable (fsync) and renames it over the target; replay_file_close
 * without a commit removes it, and the target stays as it was, byte for
 * byte. Opening is the check that the output can be written at all (its
 * directory exists and takes a new file, the target is not a directory),
 * so a command opens its outputs before it reads anything. Standard output
 * and a target that is not a regular file (/dev/null, a pipe) are written
 * in place, as streams: what is written there stays.
 *
 * Writes are buffered in memory and handed to stdio in large pieces, so
 * that a stream of short lines costs few stdio calls.
 *
 * Use for an output:
 *   replay_file_t f = {.shown = path};
 *   if (!replay_file_open(&f, path, "w")) -> exit 1
 *   replay_file_write(&f, ...) ...
 *   ok = work_done && replay_file_commit(&f);   // in place only on success
 *   replay_file_close(&f);                      // discards what was not committed */
#ifndef REPLAY_FILE_H
#define REPLAY_FILE_H

#include <stdbool.h>
#include <stdio.h>

#include "buf.h"

typedef struct replay_file {
  FILE *f;            /* NULL: not open */
  const char *shown;  /* how messages name it (borrowed) */
  bool report_each;   /* a failed write is reported when it happens, and again
                         at commit; otherwise once, at commit */
  bool failed;        /* a write failed */
  int error;          /* errno of the first failed write */
  model_buf_t buf;    /* written, not yet handed to stdio */
  char *target;       /* owned: the path the commit renames to; NULL = written in place */
  char *temp;         /* owned: the file written beside target until the commit */
} replay_file_t;

/* Opens path for reading (mode "r") or writing ("w", see the top); "-" is
 * the standard stream, never closed. False with a message naming path as
 * given. *file must be zeroed or closed; shown and report_each are kept. */
bool replay_file_open(replay_file_t *file, const char *path, const char *mode);

/* Appends len bytes; hands the buffer to stdio once it is large, and a
 * piece that large at once. */
bool replay_file_write(replay_file_t *file, const char *data, size_t len);

/* Hands what is buffered to stdio. */
bool replay_file_drain(replay_file_t *file);

/* The output is complete: drains, flushes and, for a file written beside
 * its target, syncs it and renames it into place (a standard stream is
 * only flushed). False when anything written was lost, or the rename
 * failed: then the target is as it was. Closes the file either way; true
 * for a file never opened. */
bool replay_file_commit(replay_file_t *file);

/* Closes an output without committing it: a file written beside its target
 * is removed (the target stays as it was); one written in place is flushed
 * and closed, failures unreported (the command has failed already). After
 * replay_file_commit, or for a file never opened, it only frees. The file
 * may then be opened again. */
void replay_file_close(replay_file_t *file);

/* Closes a file opened for reading. */
void replay_file_close_input(replay_file_t *file);

/* True when a and b are the same regular file, or equal paths of which one
 * does not exist yet: writing one would destroy the other. "-" and NULL are
 * never the same as anything (devices such as /dev/null are fine). */
bool replay_file_same(const char *a, const char *b);

#endif
