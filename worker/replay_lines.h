/* The lines of a replay's --input, read in blocks of whole lines.
 *
 * The rules: a line is the bytes before a "\n" (a "\r" before it stays part
 * of the line, where JSON treats it as whitespace); the "\n" that ends the
 * last line starts no empty line; a last line without "\n" still counts; a
 * byte order mark before the first line is skipped (it is the editor's, not
 * the command's: JSON text has none). Any length works: a block grows to
 * hold a line longer than it.
 *
 * replay_lines_read cuts the file into blocks that end just after a "\n"
 * (or at the end of the file), so that a block holds whole lines and the
 * lines of the file are those of its blocks in order; replay_lines_next
 * walks the lines of one block. The one-thread replay walks each block as
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
  FILE *in;        /* borrowed */
  model_buf_t rest; /* the bytes after the last "\n" of the block read last */
  bool eof;        /* the end of the file (or a read error: ferror says) */
  bool started;    /* the first block is read: its byte order mark is gone */
} replay_lines_t;

#define REPLAY_LINES_INIT(file) {.in = (file), .rest = MODEL_BUF_INIT}

/* Empties *block and reads into it the next block of whole lines: at
 * least `want` bytes (unless the file ends first), cut just after the
 * last "\n" read, the bytes after it kept for the next block. False when
 * nothing is left (check ferror(l->in) then). */
bool replay_lines_read(replay_lines_t *l, model_buf_t *block, size_t want);

/* The line that starts at data of a block whose unwalked part is
 * data[0..len) (len > 0): sets *line_len and returns the bytes to step
 * over to the next line (its "\n" included). */
static inline size_t replay_lines_next(const char *data, size_t len, size_t *line_len) {
  const char *nl = memchr(data, '\n', len);
  *line_len = nl ? (size_t)(nl - data) : len;
  return nl ? *line_len + 1 : len;
}

/* Frees what the reader holds (not its FILE). */
void replay_lines_free(replay_lines_t *l);

#endif
