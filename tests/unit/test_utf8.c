/* The UTF-8 check (models/json: model_utf8_check) against the reference
 * decoder of the fuzz targets (tests/fuzz/ref_utf8.h), exhaustively over the
 * bytes at the edges of the UTF-8 table: every 4-byte string of them, alone
 * and after an 8-byte ASCII run (the fast path), and every 2-byte string.
 * Its own suite, out of the valgrind stage (CMakeLists.txt): 1.6 million
 * comparisons of fixed-size buffers, which ASan's run covers. */
#include <check.h>
#include <stddef.h>

#include "json/json_scan.h"
#include "../fuzz/ref_utf8.h"


START_TEST(test_utf8_check) {
  static const unsigned char v[] = {0x00, 0x22, 0x41, 0x7F, 0x80, 0x81, 0x8F, 0x90, 0x9F, 0xA0,
                                    0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE,
                                    0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF7, 0xF8, 0xFE, 0xFF};
  const size_t nv = sizeof v;
  /* every 4-byte string over bytes at the edges of the table, alone and
   * after an 8-byte ASCII run (the fast path) */
  unsigned char buf[12] = "abcdefgh";
  for (size_t a = 0; a < nv; a++)
    for (size_t b = 0; b < nv; b++)
      for (size_t c = 0; c < nv; c++)
        for (size_t d = 0; d < nv; d++) {
          unsigned char *s = buf + 8;
          s[0] = v[a], s[1] = v[b], s[2] = v[c], s[3] = v[d];
          size_t want = ref_utf8(s, 4), got = model_utf8_check((const char *)s, 4);
          ck_assert_msg(got == want, "%02x %02x %02x %02x: got %zu want %zu", s[0], s[1], s[2], s[3], got, want);
          want = ref_utf8(buf, 12), got = model_utf8_check((const char *)buf, 12);
          ck_assert_msg(got == want, "+8 %02x %02x %02x %02x: got %zu want %zu", s[0], s[1], s[2], s[3], got, want);
        }
  /* every 2-byte string */
  for (unsigned a = 0; a < 256; a++)
    for (unsigned b = 0; b < 256; b++) {
      unsigned char s[2] = {(unsigned char)a, (unsigned char)b};
      ck_assert_uint_eq(model_utf8_check((const char *)s, 2), ref_utf8(s, 2));
    }
}
END_TEST

Suite *test_suite(void) {
  Suite *su = suite_create("utf8");
  TCase *tc = tcase_create("exhaustive");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, test_utf8_check);
  suite_add_tcase(su, tc);
  return su;
}
