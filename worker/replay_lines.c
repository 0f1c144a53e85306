/* The lines of --input in blocks: see replay_lines.h. */
#include "replay_lines.h"

static const char BOM[3] = "\xEF\xBB\xBF";

bool replay_lines_read(replay_lines_t *l, model_buf_t *block, size_t want) {
  model_buf_clear(block);
  if (l->rest.len) model_buf_append(block, l->rest.data, l->rest.len);
  model_buf_clear(&l->rest);
  size_t scanned = block->len; /* the rest holds no "\n" */
  while (!l->eof) {
    char *at = model_buf_space(block, want);
    size_t got = fread(at, 1, want, l->in);
    block->len += got;
    l->eof = got < want; /* fread is short only at the end or on an error */
    const char *nl = memrchr(block->data + scanned, '\n', block->len - scanned);
    scanned = block->len;
    if (nl && !l->eof) {
      size_t cut = (size_t)(nl - block->data) + 1;
      model_buf_append(&l->rest, block->data + cut, block->len - cut);
      block->len = cut;
      break;
    }
  }
  /* The first block holds the first line whole, and so the mark (which
   * holds no "\n") if the file starts with it. A file of the mark alone is
   * one line, empty: the block says so as "\n". */
  if (!l->started && block->len >= sizeof BOM && !memcmp(block->data, BOM, sizeof BOM)) {
    memmove(block->data, block->data + sizeof BOM, block->len - sizeof BOM);
    block->len -= sizeof BOM;
    if (!block->len) block->data[block->len++] = '\n';
  }
  l->started = true;
  return block->len > 0;
}

void replay_lines_free(replay_lines_t *l) { model_buf_destroy(&l->rest); }
