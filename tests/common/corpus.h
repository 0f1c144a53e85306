/* The fuzz targets' seed corpora, replayed by unit tests: every file of
 * tests/fuzz/corpus/TARGET under $AGG_SOURCE_DIR (set by CMake for every
 * test), read whole, handed to a callback. For test files only: it asserts
 * with Check. */
#ifndef TESTS_CORPUS_H
#define TESTS_CORPUS_H

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

/* The largest corpus file read; a longer one fails the test rather than
 * being cut. */
#define CORPUS_FILE_MAX (1 << 20)

typedef void (*corpus_fn)(const char *name, const char *data, size_t n, void *ctx);

/* Calls fn on each file of the target's corpus, in directory order; returns
 * how many there were. The data is valid during the call only. */
static inline size_t corpus_each(const char *target, corpus_fn fn, void *ctx) {
  const char *root = getenv("AGG_SOURCE_DIR");
  ck_assert_msg(root != NULL, "AGG_SOURCE_DIR is not set");
  char dir[4096];
  snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/%s", root, target);
  DIR *d = opendir(dir);
  ck_assert_msg(d != NULL, "cannot open %s", dir);
  static char buf[CORPUS_FILE_MAX + 1];
  size_t files = 0;
  for (struct dirent *e; (e = readdir(d)) != NULL;) {
    if (e->d_name[0] == '.') continue;
    char path[4600];
    snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s", path);
    size_t n = fread(buf, 1, sizeof buf, f);
    fclose(f);
    ck_assert_msg(n <= CORPUS_FILE_MAX, "%s: larger than %d bytes", path, CORPUS_FILE_MAX);
    fn(e->d_name, buf, n, ctx);
    files++;
  }
  closedir(d);
  return files;
}

#endif
