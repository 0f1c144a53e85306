/* The lines of --input in blocks: see replay_lines.h. */
#include "replay_lines.h"

static const char BOM[3] = "\xEF\xBB\xBF";

/* Reads the rest of the line past max_line that the last block stopped
 * before, in pieces of `want` bytes through scratch, and drops it; the
 * bytes after its "\n" are kept for the next block. */
static size_t finish_long_line(replay_lines_t *l, model_buf_t *scratch, size_t want) {
  while (!l->eof) {
    char *at = model_buf_space(scratch, want);
    size_t got = fread(at, 1, want, l->in);
    l->eof = got < want;
    const char *nl = memchr(at, '\n', got);
    if (nl) {
      l->skipping += (size_t)(nl - at);
      model_buf_append(&l->rest, nl + 1, got - (size_t)(nl - at) - 1);
      break;
    }
    l->skipping += got;
  }
  size_t len = l->skipping;
  l->skipping = 0;
  return len;
}

/* The bytes of the byte order mark at the start of the file's first block
 * (or of as much of it as the block holds so far). */
static size_t mark_bytes(const replay_lines_t *l, const model_buf_t *block) {
  if (l->started) return 0;
  size_t n = block->len < sizeof BOM ? block->len : sizeof BOM;
  return n && !memcmp(block->data, BOM, n) ? n : 0;
}

/* Ends the reading of a block: the file's first block loses the byte
 * order mark its first line starts with. A file of the mark alone is one
 * line, empty: the block says so as "\n". */
static bool block_read(replay_lines_t *l, model_buf_t *block) {
  if (mark_bytes(l, block) == sizeof BOM) {
    memmove(block->data, block->data + sizeof BOM, block->len - sizeof BOM);
    block->len -= sizeof BOM;
    if (!block->len) block->data[block->len++] = '\n';
  }
  l->started = true;
  return block->len > 0;
}

bool replay_lines_read(replay_lines_t *l, model_buf_t *block, size_t want, size_t *long_len) {
  model_buf_clear(block);
  *long_len = 0;
  if (l->skipping) {
    *long_len = finish_long_line(l, block, want);
    return true;
  }
  if (l->rest.len) model_buf_append(block, l->rest.data, l->rest.len);
  model_buf_clear(&l->rest);
  size_t scanned = 0; /* the rest after a dropped line may hold "\n"s */
  size_t line = 0;    /* where the block's last line starts */
  while (!l->eof) {
    char *at = model_buf_space(block, want);
    size_t got = fread(at, 1, want, l->in);
    block->len += got;
    l->eof = got < want; /* fread is short only at the end or on an error */
    const char *nl = memrchr(block->data + scanned, '\n', block->len - scanned);
    scanned = block->len;
    if (nl) line = (size_t)(nl - block->data) + 1;
    size_t start = line ? line : mark_bytes(l, block);
    if (block->len - start > l->max_line) {
      /* The last line is past max_line already: the block ends before it,
       * and it is finished (and dropped) on its own. */
      l->skipping = block->len - start;
      block->len = line;
      if (line) return block_read(l, block);
      l->started = true;
      *long_len = finish_long_line(l, block, want);
      return true;
    }
    if (nl && !l->eof) {
      model_buf_append(&l->rest, block->data + line, block->len - line);
      block->len = line;
      break;
    }
  }
  /* The first block holds the first line whole, and so the mark (which
   * holds no "\n") if the file starts with it. */
  return block_read(l, block);
}

void replay_lines_free(replay_lines_t *l) { model_buf_destroy(&l->rest); }
