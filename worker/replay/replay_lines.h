/* The lines of a replay's --input, read in blocks of whole lines.
 *
 * The rules: a line is the bytes before a "\n" (a "\r" before it stays part
 * of the line, where JSON treats it as whitespace); the "\n" that ends the
 * last line starts no empty line; a last line without "\n" still counts; a
 * byte order mark before the first line is skipped (it is the editor's, not
 * the command's: JSON text has none). Any length works.
 *
 * A line longer than the reader's max_line (limits.max_command_bytes) is
 * not kept whole: the decoder rejects it on its length alone, so a line
 * that outgrows max_line before its "\n" is read in pieces, dropped, and
 * handed over by its length only. (One that a single read brings whole may
 * stay in its block, and is rejected the same way.) A block therefore
 * holds at most max_line bytes beyond what one read brings, whatever the
 * file: the memory of a replay does not follow its longest line.
 *
 * replay_lines_read cuts the file into blocks that end just after a "\n"
 * (or at the end of the file), so that a block holds whole lines and the
 * lines of the file are those of its blocks in order; replay_lines_next
 * walks the lines of one block, for the one-thread replay and the threads
 * alike. The one-thread replay walks each block as
 * it reads it; the threaded replay hands whole blocks to its workers, which
 * walk them there (replay_shards.h).
 *
 * Threads: a reader is its caller's; replay_lines_next only reads its
 * block. */
#ifndef REPLAY_LINES_H
#define REPLAY_LINES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "buf.h"

/* A block is read in pieces of this many bytes (more for a longer line). */
enum { REPLAY_LINES_BLOCK = 1 << 16 };

typedef struct replay_lines {
  FILE *in;         /* borrowed */
  size_t max_line;  /* a longer line is handed over by its length only */
  model_buf_t rest; /* the bytes after the last "\n" of the block read last */
  size_t skipping;  /* > 0: the next read finishes a line past max_line, of
                       which this many bytes are read */
  bool eof;         /* the end of the file (or a read error: ferror says) */
  bool started;     /* the first read is done: its byte order mark is gone */
} replay_lines_t;

#define REPLAY_LINES_INIT(file, max) {.in = (file), .max_line = (max), .rest = MODEL_BUF_INIT}

/* Empties *block and reads the next piece of the file into it: either a
 * block of whole lines, at least `want` bytes (unless the file ends first
 * or a line past max_line comes next), cut just after
 * the last "\n" read, the bytes after it kept for the next block, with
 * *long_len 0; or, with *long_len its length and the block empty, the one
 * line past max_line that comes next. False when nothing is left (check
 * ferror(l->in) then). */
bool replay_lines_read(replay_lines_t *l, model_buf_t *block, size_t want, size_t *long_len);

/* Walks the lines of a block data[0..len): from *at (0 for the first),
 * sets *line and *line_len to the next line (without its "\n") and moves
 * *at past it; false at the block's end. The "\n" that ends the block's
 * last line starts no empty line. */
static inline bool replay_lines_next(const char *data, size_t len, size_t *at, const char **line,
                                     size_t *line_len) {
  if (*at >= len) return false;
  const char *p = data + *at, *nl = memchr(p, '\n', len - *at);
  *line = p;
  *line_len = nl ? (size_t)(nl - p) : len - *at;
  *at += *line_len + (nl != NULL);
  return true;
}

/* Frees what the reader holds (not its FILE). */
void replay_lines_free(replay_lines_t *l);

#endif
