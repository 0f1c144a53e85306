/* The lines of --input in blocks (worker/replay/replay_lines.h): for every block
 * size from one byte up and several line limits, the lines of the blocks,
 * walked with replay_lines_next, are the file's lines by the rules, a line
 * past the limit by its length, whatever falls on a block's edge: a "\n",
 * a "\r\n", an empty line, a byte order mark, a line longer than the
 * block, a last line without "\n"; and a line past the limit is never held
 * whole. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay/replay_lines.h"

/* Appends a line and "|", or "#" and its length for a line handed over by
 * its length only. */
static void put_line(model_buf_t *out, const char *data, size_t len) {
  char n[32];
  if (data) model_buf_append(out, data, len);
  else model_buf_append(out, n, (size_t)snprintf(n, sizeof n, "#%zu", len));
  model_buf_putc(out, '|');
}

/* The lines of text (len bytes) as the rules say from the whole text at
 * once: the first line loses a leading mark; a line past max_line is its
 * length. */
static void expected(const char *text, size_t len, size_t max_line, model_buf_t *out) {
  for (size_t at = 0; at < len;) {
    const char *nl = memchr(text + at, '\n', len - at);
    size_t end = nl ? (size_t)(nl - text) : len, skip = 0;
    if (at == 0 && end >= 3 && !memcmp(text, "\xEF\xBB\xBF", 3)) skip = 3;
    size_t n = end - at - skip;
    put_line(out, n > max_line ? NULL : text + at + skip, n);
    at = nl ? end + 1 : len;
  }
}

/* The same through blocks of `want` bytes; each block ends in "\n" but the
 * file's last. */
static void through_blocks(const char *text, size_t len, size_t want, size_t max_line, model_buf_t *out) {
  FILE *in = fmemopen((void *)text, len ? len : 1, "r");
  ck_assert_ptr_nonnull(in);
  if (!len) fgetc(in); /* fmemopen wants a size: read the one byte of an "empty" file away */
  replay_lines_t l = REPLAY_LINES_INIT(in, max_line);
  model_buf_t block = MODEL_BUF_INIT;
  size_t long_len;
  while (replay_lines_read(&l, &block, want, &long_len)) {
    if (long_len) {
      ck_assert_uint_eq(block.len, 0);
      put_line(out, NULL, long_len);
      continue;
    }
    ck_assert_uint_gt(block.len, 0);
    const char *line;
    size_t at = 0, n;
    while (replay_lines_next(block.data, block.len, &at, &line, &n))
      /* A line past the limit that one read brought whole stays in the
       * block: its length is what counts. */
      put_line(out, n > max_line ? NULL : line, n);
    if (!l.eof && !l.skipping) ck_assert_int_eq(block.data[block.len - 1], '\n');
  }
  ck_assert(!ferror(in));
  ck_assert(!replay_lines_read(&l, &block, want, &long_len)); /* the end stays the end */
  model_buf_destroy(&block);
  replay_lines_free(&l);
  fclose(in);
}

static void check_text(const char *text, size_t len) {
  static const size_t limits[] = {SIZE_MAX, 0, 1, 2, 3, 4, 5, 9};
  model_buf_t want = MODEL_BUF_INIT, got = MODEL_BUF_INIT;
  for (size_t k = 0; k < sizeof limits / sizeof *limits; k++) {
    model_buf_clear(&want);
    expected(text, len, limits[k], &want);
    for (size_t size = 1; size <= len + 2; size++) {
      model_buf_clear(&got);
      through_blocks(text, len, size, limits[k], &got);
      ck_assert_msg(got.len == want.len && (!got.len || !memcmp(got.data, want.data, got.len)),
                    "block size %zu, limit %zu: '%.*s' != '%.*s'", size, limits[k], (int)got.len,
                    got.data ? got.data : "", (int)want.len, want.data ? want.data : "");
    }
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
  model_buf_t want = MODEL_BUF_INIT, got = MODEL_BUF_INIT;
  expected(text, n + 3, SIZE_MAX, &want);
  through_blocks(text, n + 3, REPLAY_LINES_BLOCK, SIZE_MAX, &got);
  ck_assert_uint_eq(got.len, n + 3);
  ck_assert(!memcmp(got.data, want.data, got.len));
  model_buf_destroy(&want);
  model_buf_destroy(&got);
  free(text);
}
END_TEST

/* Lines of 1 MiB past a limit of 1,000 bytes, between short lines: each
 * comes as its length, and the block never holds more than the limit and
 * one read's bytes. */
START_TEST(a_line_past_the_limit_is_never_held_whole) {
  enum { BIG = 1 << 20, LINES = 6 };
  size_t max_line = 1000, n = LINES * (BIG + 4);
  char *text = malloc(n);
  for (size_t i = 0; i < LINES; i++) {
    memset(text + i * (BIG + 4), 'x', BIG);
    memcpy(text + i * (BIG + 4) + BIG, "\n{}\n", 4);
  }
  FILE *in = fmemopen(text, n, "r");
  replay_lines_t l = REPLAY_LINES_INIT(in, max_line);
  model_buf_t block = MODEL_BUF_INIT;
  size_t long_len, longs = 0;
  while (replay_lines_read(&l, &block, REPLAY_LINES_BLOCK, &long_len)) {
    if (long_len) {
      ck_assert_uint_eq(long_len, BIG);
      longs++;
    }
    ck_assert_uint_le(block.cap, 2 * (max_line + REPLAY_LINES_BLOCK) + 1);
  }
  ck_assert_uint_eq(longs, LINES);
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
  tcase_add_test(tc, a_line_past_the_limit_is_never_held_whole);
  suite_add_tcase(s, tc);
  return s;
}
