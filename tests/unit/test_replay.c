/* The replay pipeline without a broker or a store (worker/replay/replay.h): the
 * line source's splitting, the files' write, commit and discard (whole or
 * absent), and a rebuild from a file handed over sorted by key, as verify
 * takes it. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "config/config.h"
#include "replay/replay.h"
#include "replay/replay_file.h"
#include "replay/replay_lines.h"
#include "replay/replay_source.h"

/* --- the line source ------------------------------------------------------------ */

typedef struct seen {
  char lines[8][16];
  size_t n;
  size_t stop_after; /* 0 = never */
} seen_t;

static bool record(void *ctx, const char *data, size_t len, int64_t event_ms) {
  seen_t *s = ctx;
  ck_assert_int_eq(event_ms, 0); /* a file has no event times */
  ck_assert_uint_lt(s->n, 8);
  if (data) {
    ck_assert_uint_lt(len, sizeof s->lines[0]);
    memcpy(s->lines[s->n], data, len);
    s->lines[s->n][len] = 0;
  } else {
    snprintf(s->lines[s->n], sizeof s->lines[0], "#%zu", len); /* a line past max_line: its length only */
  }
  s->n++;
  return s->n != s->stop_after;
}

static bool lines_within(const char *text, size_t max_line, seen_t *s) {
  FILE *in = fmemopen((void *)text, strlen(text), "r");
  ck_assert_ptr_nonnull(in);
  replay_feed_t feed = {record, NULL, s, NULL};
  bool ok = replay_source_blocks(in, "mem", max_line, &feed, NULL);
  fclose(in);
  return ok;
}

static bool lines_of(const char *text, seen_t *s) { return lines_within(text, SIZE_MAX, s); }

START_TEST(lines_split_at_newlines) {
  seen_t s = {0};
  ck_assert(lines_of("a\n\nb", &s)); /* the last line needs no "\n" */
  ck_assert_uint_eq(s.n, 3);
  ck_assert_str_eq(s.lines[0], "a");
  ck_assert_str_eq(s.lines[1], "");
  ck_assert_str_eq(s.lines[2], "b");
  seen_t t = {0};
  ck_assert(lines_of("x\r\ny\n", &t)); /* the "\n" that ends the last line starts no empty line */
  ck_assert_uint_eq(t.n, 2);
  ck_assert_str_eq(t.lines[0], "x\r"); /* "\r" stays: JSON whitespace */
  seen_t u = {0};
  ck_assert(lines_of("", &u));
  ck_assert_uint_eq(u.n, 0);
}
END_TEST

/* A line past max_line and longer than a read is fed by its length,
 * without its bytes, in its place among the others. */
START_TEST(a_line_past_the_limit_is_fed_by_its_length) {
  enum { LONG = 3 * REPLAY_LINES_BLOCK + 5 };
  char *text = malloc(LONG + 16);
  strcpy(text, "ab\n");
  memset(text + 3, 'x', LONG);
  strcpy(text + 3 + LONG, "\ncd\n\xEF\xBB\xBF");
  seen_t s = {0};
  ck_assert(lines_within(text, 1000, &s));
  ck_assert_uint_eq(s.n, 4);
  ck_assert_str_eq(s.lines[0], "ab");
  char want[16];
  snprintf(want, sizeof want, "#%d", (int)LONG);
  ck_assert_str_eq(s.lines[1], want);
  ck_assert_str_eq(s.lines[2], "cd");
  ck_assert_str_eq(s.lines[3], "\xEF\xBB\xBF"); /* a mark past the first line is a line's bytes */
  free(text);
}
END_TEST

START_TEST(a_feed_that_fails_stops_the_source) {
  seen_t s = {.stop_after = 2};
  ck_assert(!lines_of("1\n2\n3\n4\n", &s));
  ck_assert_uint_eq(s.n, 2);
}
END_TEST

/* --- files ------------------------------------------------------------------------- */

/* The names in dir, but for . and .., joined by spaces. */
static void names_in(const char *dir, char *out, size_t cap) {
  DIR *d = opendir(dir);
  ck_assert_ptr_nonnull(d);
  out[0] = 0;
  for (struct dirent *e; (e = readdir(d));) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    strncat(out, e->d_name, cap - strlen(out) - 2);
    strcat(out, " ");
  }
  closedir(d);
}

static void put_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  ck_assert_int_eq(fclose(f), 0);
}

static long size_of(const char *path) {
  struct stat st;
  return stat(path, &st) ? -1 : (long)st.st_size;
}

START_TEST(a_file_holds_what_was_written) {
  char dir[] = "/tmp/test_replay_XXXXXX", path[64], names[256];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/out.jsonl", dir);
  put_file(path, "old\n");
  chmod(path, 0640);
  replay_file_t f = {.shown = path, .report_each = true};
  ck_assert(replay_file_open(&f, path, "w"));
  for (int i = 0; i < 20000; i++) ck_assert(replay_file_write(&f, "0123456789\n", 11)); /* past one drain */
  /* Until the commit, the target is as it was and the output is beside it. */
  ck_assert_int_eq(size_of(path), 4);
  names_in(dir, names, sizeof names);
  ck_assert_msg(strstr(names, ".out.jsonl.tmp-") != NULL, "%s", names);
  ck_assert(replay_file_commit(&f));
  ck_assert_int_eq(size_of(path), 220000);
  names_in(dir, names, sizeof names);
  ck_assert_str_eq(names, "out.jsonl ");
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_int_eq(st.st_mode & 0777, 0640); /* the target's permissions stay */
  replay_file_close(&f);                     /* after a commit: nothing to remove */
  ck_assert_int_eq(size_of(path), 220000);
  ck_assert(replay_file_same(path, path));
  ck_assert(!replay_file_same(path, "/dev/null"));
  ck_assert(!replay_file_same("-", "-"));
  ck_assert(!replay_file_same(path, NULL));
  unlink(path);
  ck_assert(replay_file_same(path, path)); /* not there yet: equal paths are one file */
  rmdir(dir);
}
END_TEST

START_TEST(an_output_not_committed_is_absent) {
  char dir[] = "/tmp/test_replay_XXXXXX", path[64], fresh[64], names[256];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(path, sizeof path, "%s/out.jsonl", dir);
  snprintf(fresh, sizeof fresh, "%s/new.jsonl", dir);
  put_file(path, "old\n");
  replay_file_t f = {.shown = path}, g = {.shown = fresh};
  ck_assert(replay_file_open(&f, path, "w"));
  ck_assert(replay_file_open(&g, fresh, "w"));
  for (int i = 0; i < 20000; i++) ck_assert(replay_file_write(&f, "0123456789\n", 11));
  ck_assert(replay_file_write(&g, "x\n", 2));
  replay_file_close(&f);
  replay_file_close(&g);
  FILE *in = fopen(path, "r");
  char buf[16] = {0};
  ck_assert_uint_eq(fread(buf, 1, sizeof buf, in), 4);
  fclose(in);
  ck_assert_str_eq(buf, "old\n"); /* byte for byte */
  names_in(dir, names, sizeof names);
  ck_assert_str_eq(names, "out.jsonl "); /* no new file, no temporary left */
  unlink(path);
  rmdir(dir);
}
END_TEST

START_TEST(an_output_that_cannot_be_written_fails_at_open) {
  char dir[] = "/tmp/test_replay_XXXXXX", path[64];
  ck_assert_ptr_nonnull(mkdtemp(dir));
  replay_file_t g = {0};
  ck_assert(!replay_file_open(&g, "/nonexistent-dir/x", "w"));
  ck_assert(!replay_file_open(&g, dir, "w")); /* a directory */
  snprintf(path, sizeof path, "%s/sub", dir);
  ck_assert_int_eq(mkdir(path, 0500), 0);
  snprintf(path, sizeof path, "%s/sub/x", dir);
  if (geteuid() != 0) ck_assert(!replay_file_open(&g, path, "w")); /* root writes anywhere */
  replay_file_close(&g);
  snprintf(path, sizeof path, "%s/sub", dir);
  rmdir(path);
  rmdir(dir);
}
END_TEST

START_TEST(a_lost_write_fails_the_commit) {
  if (access("/dev/full", W_OK) != 0) return;
  replay_file_t f = {.shown = "/dev/full"};
  ck_assert(replay_file_open(&f, "/dev/full", "w")); /* a device: written in place */
  ck_assert_ptr_null(f.temp);
  ck_assert(replay_file_write(&f, "{}\n", 3));
  ck_assert(!replay_file_commit(&f));
  ck_assert_ptr_null(f.f);
  ck_assert(replay_file_commit(&f)); /* closed: nothing more to lose */
  replay_file_close(&f);
}
END_TEST

/* --- a rebuild ------------------------------------------------------------------------ */

START_TEST(a_rebuild_is_handed_over_sorted) {
  char path[] = "/tmp/test_replay_XXXXXX";
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  const char *text =
      "{\"id\":\"c1\",\"type\":\"roster.assigned\",\"tenant\":\"t\",\"assignment\":\"b\",\"student\":\"s1\","
      "\"version\":1,\"ts\":\"2026-09-01T08:00:00Z\"}\n"
      "not json\n"
      "{\"id\":\"c2\",\"type\":\"roster.assigned\",\"tenant\":\"t\",\"assignment\":\"a\",\"student\":\"s1\","
      "\"version\":1,\"ts\":\"2026-09-01T08:00:00Z\"}\n"
      "{\"id\":\"c2\",\"type\":\"roster.assigned\",\"tenant\":\"t\",\"assignment\":\"a\",\"student\":\"s1\","
      "\"version\":1,\"ts\":\"2026-09-01T08:00:00Z\"}\n";
  ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  config_t *cfg = config_new();
  replay_rebuilt_t rebuilt = {0};
  replay_options_t o = {.input = path, .rebuilt = &rebuilt, .label = "test"};
  replay_stats_t st;
  ck_assert_int_eq(replay_run(cfg, &o, &st), 0);
  ck_assert_uint_eq(st.read, 4);
  ck_assert_uint_eq(st.rejected, 1);
  ck_assert_uint_eq(st.applied, 2);
  ck_assert_uint_eq(st.stale, 1);
  ck_assert_uint_eq(st.aggregates, 2);
  ck_assert_uint_eq(rebuilt.n, 2);
  ck_assert_str_eq(model_aggregate_key(rebuilt.aggs[0], NULL), "t/a");
  ck_assert_str_eq(model_aggregate_key(rebuilt.aggs[1], NULL), "t/b");
  replay_rebuilt_free(&rebuilt);
  config_destroy(cfg);
  unlink(path);
}
END_TEST

/* The replay's time and its documents' updatedAt are read on the clock it is
 * given: a manual clock that never moves gives 0 seconds and its own date. */
START_TEST(a_replay_runs_on_the_clock_it_is_given) {
  char in[] = "/tmp/test_replay_XXXXXX";
  int fd = mkstemp(in);
  ck_assert_int_ge(fd, 0);
  const char *text = "{\"id\":\"c1\",\"type\":\"roster.assigned\",\"tenant\":\"t\",\"assignment\":\"a\","
                     "\"student\":\"s1\",\"version\":1,\"ts\":\"2026-09-01T08:00:00Z\"}\n";
  ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  char out[sizeof in + 4];
  snprintf(out, sizeof out, "%s.out", in);
  clock_manual_t m;
  clock_manual_init(&m, 5000, 1893456000123); /* 2030-01-01T00:00:00.123Z */
  config_t *cfg = config_new();
  replay_options_t o = {.input = in, .output = out, .label = "test", .clock = &m.source};
  replay_stats_t st;
  ck_assert_int_eq(replay_run(cfg, &o, &st), 0);
  ck_assert_uint_eq(st.aggregates, 1);
  ck_assert(st.seconds == 0.0);
  char doc[512] = {0};
  FILE *f = fopen(out, "r");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_gt(fread(doc, 1, sizeof doc - 1, f), 0);
  fclose(f);
  ck_assert_msg(strstr(doc, "\"updatedAt\":\"2030-01-01T00:00:00.123Z\""), "%s", doc);
  config_destroy(cfg);
  unlink(in);
  unlink(out);
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("replay");
  TCase *tc = tcase_create("replay");
  tcase_add_test(tc, lines_split_at_newlines);
  tcase_add_test(tc, a_line_past_the_limit_is_fed_by_its_length);
  tcase_add_test(tc, a_feed_that_fails_stops_the_source);
  tcase_add_test(tc, a_file_holds_what_was_written);
  tcase_add_test(tc, an_output_not_committed_is_absent);
  tcase_add_test(tc, an_output_that_cannot_be_written_fails_at_open);
  tcase_add_test(tc, a_lost_write_fails_the_commit);
  tcase_add_test(tc, a_rebuild_is_handed_over_sorted);
  tcase_add_test(tc, a_replay_runs_on_the_clock_it_is_given);
  suite_add_tcase(s, tc);
  return s;
}
