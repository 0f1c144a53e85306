/* libFuzzer target for config_load(): the INI file text, the environment
 * (AGGREGATOR_*) and --set, the three sources an operator writes.
 *
 * Input layout: segments separated by the two bytes "\0\1". The first is the
 * file's text (written to a scratch file: the loader reads a path). Each
 * further segment starting with 'E' is an environment entry, "AGGREGATOR_"
 * followed by the rest ("NAME=VALUE"); one starting with 'S' is a --set
 * argument; others are ignored. At most MAX_EXTRA of each.
 *
 * Checked, aborting (a crash to libFuzzer) on any violation:
 * - every error (config_load names them all) is one line (no newline, whatever the values hold), non-empty, and says where: with the
 *   file as the only source, "FILE:LINE: " with LINE a line of the file
 *   (an error in a file names FILE:LINE); with others too, that or
 *   "environment AGGREGATOR_..." or "--set";
 * - a configuration that loads is shown (`config show`) as INI that loads
 *   again, from the file alone, to a configuration shown the same way:
 *   what show prints is what the worker runs with; but for a secret given as
 *   a value, which show masks as *** and the loader refuses as a value:
 *   then every error of the reload says so. (Only for inputs whose
 *   values hold no control characters: a value from the environment or
 *   --set can carry a newline, which no INI line can, and show prints an
 *   rdkafka.* value with a tab or DEL only as a comment (no INI line holds
 *   it). Nor for inputs naming a `_file` key: a value read from a file
 *   is arbitrary text.)
 * - and no crash, leak, or sanitizer report (ASan, UBSan). */
#include <mongoc/mongoc.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "config/config.h"

#define MAX_EXTRA 8

#define REQUIRE(cond, ...)                                                                          \
  do {                                                                                              \
    if (!(cond)) {                                                                                  \
      fprintf(stderr, "fuzz_config: invariant failed: %s (line %d): ", #cond, __LINE__);          \
      fprintf(stderr, __VA_ARGS__);                                                                 \
      fputc('\n', stderr);                                                                          \
      abort();                                                                                      \
    }                                                                                               \
  } while (0)

static char g_path[64], g_path2[64];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  /* A `key_file = /dev/stdin` must not wait on a terminal. */
  int fd = open("/dev/null", O_RDONLY);
  if (fd >= 0) {
    dup2(fd, 0);
    close(fd);
  }
  mongoc_log_set_handler(NULL, NULL); /* the loader parses store.uri with libmongoc */
  mongoc_init();
  snprintf(g_path, sizeof g_path, "/tmp/fuzz_config-%d.ini", (int)getpid());
  snprintf(g_path2, sizeof g_path2, "/tmp/fuzz_config-%d-shown.ini", (int)getpid());
  /* Only our own entries: an AGGREGATOR_* variable of the caller would make
   * every run depend on it. */
  for (char **e = environ; *e;) {
    if (!strncmp(*e, "AGGREGATOR_", 11)) {
      char name[256];
      snprintf(name, sizeof name, "%.*s", (int)(strchr(*e, '=') ? strchr(*e, '=') - *e : 0), *e);
      unsetenv(name);
      continue; /* environ shifted down */
    }
    e++;
  }
  return 0;
}

static void write_file(const char *path, const void *data, size_t len) {
  FILE *f = fopen(path, "wb");
  REQUIRE(f, "cannot write %s", path);
  REQUIRE(fwrite(data, 1, len, f) == len, "short write");
  fclose(f);
}

static size_t count_lines(const uint8_t *d, size_t n) {
  size_t lines = 0;
  for (size_t i = 0; i < n; i++)
    if (d[i] == '\n') lines++;
  return lines + (n && d[n - 1] != '\n');
}

static bool has_control(const char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f) return true;
  return false;
}

/* "FILE:LINE: " with 1 <= LINE <= lines */
static bool file_line_prefix(const char *msg, const char *path, size_t lines) {
  size_t pl = strlen(path);
  if (strncmp(msg, path, pl) || msg[pl] != ':') return false;
  char *end;
  unsigned long line = strtoul(msg + pl + 1, &end, 10);
  return end != msg + pl + 1 && end[0] == ':' && end[1] == ' ' && line >= 1 && line <= lines;
}

static char *show(const config_t *cfg, size_t *len) {
  char *text = NULL;
  FILE *m = open_memstream(&text, len);
  REQUIRE(m, "open_memstream");
  config_show(cfg, m);
  fclose(m);
  /* The "# file: PATH" comment names the file it came from: drop it. */
  char *f = strstr(text, "\n# file: ");
  if (f) {
    char *eol = strchr(f + 1, '\n');
    memmove(f, eol, strlen(eol) + 1);
    *len = strlen(text);
  }
  return text;
}

/* The input, split at "\0\1": the file, then the extras. */
typedef struct input {
  const uint8_t *seg[1 + 2 * MAX_EXTRA];
  size_t seglen[1 + 2 * MAX_EXTRA], nseg;
} input_t;

static void split_input(const uint8_t *data, size_t size, input_t *in) {
  const uint8_t *p = data, *end = data + size;
  in->nseg = 0;
  while (in->nseg < 1 + 2 * MAX_EXTRA) {
    const uint8_t *q = p;
    while (q + 1 < end && !(q[0] == 0 && q[1] == 1)) q++;
    if (q + 1 >= end) q = end;
    in->seg[in->nseg] = p;
    in->seglen[in->nseg++] = (size_t)(q - p);
    if (q == end) break;
    p = q + 2;
  }
}

/* The extras given to config_load: environment variables (set here; their
 * names to unset) and --set arguments. */
typedef struct extras {
  char *names[MAX_EXTRA], *sets[MAX_EXTRA];
  size_t nenv, nsets;
  bool control; /* a value holds a control character */
} extras_t;

/* Takes an 'E' segment ("SECTION_KEY=value") into the environment. */
static void take_env(extras_t *x, char *s) {
  char *eq = strchr(s, '=');
  if (eq) {
    *eq = '\0';
    char *name = malloc(strlen(s) + sizeof "AGGREGATOR_");
    REQUIRE(name, "no memory");
    sprintf(name, "AGGREGATOR_%s", s);
    if (setenv(name, eq + 1, 1) == 0)
      x->names[x->nenv++] = name;
    else
      free(name);
  }
  free(s);
}

static void take_extras(const input_t *in, extras_t *x) {
  *x = (extras_t){.control = false};
  /* The file's values too: config show does not print an rdkafka.* value
   * with a control character (a tab, DEL, ...) as an INI line. */
  for (size_t i = 0; i < in->seglen[0]; i++) {
    unsigned char ch = (unsigned char)in->seg[0][i];
    if ((ch < 0x20 && ch != '\n') || ch == 0x7f) x->control = true;
  }
  for (size_t i = 1; i < in->nseg; i++) {
    if (!in->seglen[i]) continue;
    /* A copy that stops at a NUL, as argv and environ do (not strndup: the
     * input is not NUL-terminated, and strict_string_checks reads past n). */
    char *s = malloc(in->seglen[i]);
    REQUIRE(s, "no memory");
    memcpy(s, in->seg[i] + 1, in->seglen[i] - 1);
    s[in->seglen[i] - 1] = '\0';
    x->control |= has_control(s);
    if (in->seg[i][0] == 'E' && x->nenv < MAX_EXTRA)
      take_env(x, s);
    else if (in->seg[i][0] == 'S' && x->nsets < MAX_EXTRA)
      x->sets[x->nsets++] = s;
    else
      free(s);
  }
}

static void release_extras(extras_t *x) {
  for (size_t i = 0; i < x->nenv; i++) {
    unsetenv(x->names[i]);
    free(x->names[i]);
  }
  for (size_t i = 0; i < x->nsets; i++) free(x->sets[i]);
}

/* An error is one line that says where. */
static void check_error(const char *m, bool file_only, size_t lines) {
  REQUIRE(m[0], "empty error message");
  REQUIRE(!strchr(m, '\n') && !strchr(m, '\r'), "error of more than one line: %s", m);
  if (file_only)
    REQUIRE(file_line_prefix(m, g_path, lines), "a file error without FILE:LINE (%zu lines): %s", lines, m);
  else
    REQUIRE(file_line_prefix(m, g_path, lines) || !strncmp(m, "environment AGGREGATOR_", 23) ||
                !strncmp(m, "--set", 5),
            "an error that does not say where: %s", m);
}

/* What config show prints loads again, from the file alone, to a
 * configuration shown the same way. */
static void check_show_round_trip(const config_t *cfg) {
  size_t len1, len2;
  char *text1 = show(cfg, &len1);
  write_file(g_path2, text1, len1);
  config_t *again = config_new();
  config_error_t err2;
  bool ok2 = config_load(again, g_path2, NULL, 0, &err2);
  if (!ok2) {
    for (size_t i = 0; config_error_at(&err2, i); i++)
      REQUIRE(strstr(config_error_at(&err2, i), "which is how config show masks"),
              "what config show printed does not load: %s\n%s", config_error_at(&err2, i), text1);
    free(text1);
    config_destroy(again);
    return;
  }
  char *text2 = show(again, &len2);
  REQUIRE(len1 == len2 && !memcmp(text1, text2, len1), "show -> load -> show differs:\n%s\n---\n%s", text1, text2);
  free(text1);
  free(text2);
  config_destroy(again);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input_t in;
  split_input(data, size, &in);
  extras_t x;
  take_extras(&in, &x);

  write_file(g_path, in.seg[0], in.seglen[0]);
  size_t lines = count_lines(in.seg[0], in.seglen[0]);
  config_t *cfg = config_new();
  REQUIRE(cfg, "config_new");
  config_error_t err;
  bool ok = config_load(cfg, g_path, x.sets, x.nsets, &err);
  bool file_only = !x.nenv && !x.nsets;
  release_extras(&x);

  if (!ok) {
    REQUIRE(err.count >= 1 && config_error_at(&err, 0) == err.message, "a failed load with no error");
    for (size_t i = 0; config_error_at(&err, i); i++) check_error(config_error_at(&err, i), file_only, lines);
  }
  else if (!x.control && !memchr(in.seg[0], '\r', in.seglen[0]) && !memmem(data, size, "_file", 5) &&
           !memmem(data, size, "_FILE", 5))
    check_show_round_trip(cfg);
  config_destroy(cfg);
  return 0;
}
