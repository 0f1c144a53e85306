/* The lines of --input in blocks (worker/replay_lines.h): for every block
 * size from one byte up, the lines of the blocks, walked with
 * replay_lines_next, are the file's lines by the rules, whatever falls on
 * a block's edge: a "\n", a "\r\n", an empty line, a byte order mark, a
 * line longer than the block, a last line without "\n". */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay_lines.h"

/* The lines of text (len bytes), each followed by "|", as the rules say
 * from the whole text at once: the first line loses a leading mark. */
static void expected(const char *text, size_t len, model_buf_t *out) {
  for (size_t at = 0; at < len;) {
    const char *nl = memchr(text + at, '\n', len - at);
    size_t end = nl ? (size_t)(nl - text) : len, skip = 0;
    if (at == 0 && end >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) skip = 3;
    model_buf_append(out, text + at + skip, end - at - skip);
    model_buf_putc(out, '|');
    at = nl ? end + 1 : len;
  }
}

/* The same through blocks of `want` bytes; each block ends in "\n" but the
 * file's last. */
static void through_blocks(const char *text, size_t len, size_t want, model_buf_t *out) {
  FILE *in = fmemopen((void *)text, len ? len : 1, "r");
  ck_assert_ptr_nonnull(in);
  if (!len) fgetc(in); /* fmemopen wants a size: read the one byte of an "empty" file away */
  replay_lines_t l = REPLAY_LINES_INIT(in);
  model_buf_t block = MODEL_BUF_INIT;
  while (replay_lines_read(&l, &block, want)) {
    ck_assert_uint_gt(block.len, 0);
    for (size_t at = 0; at < block.len;) {
      size_t line, step = replay_lines_next(block.data + at, block.len - at, &line);
      model_buf_append(out, block.data + at, line);
      model_buf_putc(out, '|');
      at += step;
    }
    if (!l.eof) ck_assert_int_eq(block.data[block.len - 1], '\n');
  }
  ck_assert(!ferror(in));
  ck_assert(!replay_lines_read(&l, &block, want)); /* the end stays the end */
  model_buf_destroy(&block);
  replay_lines_free(&l);
  fclose(in);
}

static void check_text(const char *text, size_t len) {
  model_buf_t want = MODEL_BUF_INIT, got = MODEL_BUF_INIT;
  expected(text, len, &want);
  for (size_t size = 1; size <= len + 2; size++) {
    model_buf_clear(&got);
    through_blocks(text, len, size, &got);
    ck_assert_msg(got.len == want.len && (!got.len || !memcmp(got.data, want.data, got.len)),
                  "block size %zu: '%.*s' != '%.*s'",
                  size, (int)got.len, got.data ? got.data : "", (int)want.len, want.data ? want.data : "");
  }
  model_buf_destroy(&want);
  model_buf_destroy(&got);
}

START_TEST(lines_are_the_same_whatever_the_block_size) {
  static const char *texts[] = {
      "a\n\nb",                          /* an empty line; the last line needs no "\n" */
      "x\r\ny\n",                         /* "\r" stays; the last "\n" starts no empty line */
      "\n\n",                             /* two empty lines */
      "\xEF\xBB\xBF{\"a\":1}\nb\n",       /* a byte order mark before the first line is skipped */
      "\xEF\xBB\xBF\nz",                  /* ... also before an empty first line */
      "\xEF\xBB\xBF",                     /* ... and a file of only it is one empty line */
      "a\n\xEF\xBB\xBF b\n",              /* ... but not before a later line */
      "\xEF\xBB",                         /* half a mark is a line */
      "0123456789abcdefghij\nk\n\nlmnop", /* a line longer than small blocks */
      "\r\n\r\n\r",                       /* lines of a "\r" only */
  };
  for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) check_text(texts[i], strlen(texts[i]));
  check_text("", 0);
}
END_TEST

START_TEST(a_line_longer_than_many_blocks_is_one_line) {
  size_t n = 3 * REPLAY_LINES_BLOCK + 17;
  char *text = malloc(n + 4);
  memset(text, 'x', n);
  memcpy(text + n, "\ny\n", 3);
  FILE *in = fmemopen(text, n + 3, "r");
  replay_lines_t l = REPLAY_LINES_INIT(in);
  model_buf_t block = MODEL_BUF_INIT;
  ck_assert(replay_lines_read(&l, &block, REPLAY_LINES_BLOCK));
  size_t line, step = replay_lines_next(block.data, block.len, &line);
  ck_assert_uint_eq(line, n);
  ck_assert_uint_eq(step, n + 1);
  size_t rest = block.len - step; /* "y\n" unless the end came in the same read */
  if (!rest) {
    ck_assert(replay_lines_read(&l, &block, REPLAY_LINES_BLOCK));
    rest = block.len;
  }
  ck_assert_uint_eq(rest, 2);
  ck_assert(!replay_lines_read(&l, &block, REPLAY_LINES_BLOCK));
  model_buf_destroy(&block);
  replay_lines_free(&l);
  fclose(in);
  free(text);
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("replay_lines");
  TCase *tc = tcase_create("lines");
  tcase_add_test(tc, lines_are_the_same_whatever_the_block_size);
  tcase_add_test(tc, a_line_longer_than_many_blocks_is_one_line);
  suite_add_tcase(s, tc);
  return s;
}
