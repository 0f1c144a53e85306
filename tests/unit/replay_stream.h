/* A stream of command lines for the replay's unit tests: generated commands
 * (tests/tools/cmdgen.h: shuffled, with redeliveries and invalid lines),
 * optionally with grades of 4,000 bytes of feedback for one more aggregate
 * (t0/big) spread through them, enough to pass the store's limit, and a
 * line of `long_len` bytes (past limits.max_command_bytes: too_large on
 * its length alone); an empty line ends it. The text holds the lines with
 * their newlines, as a file does. */
#ifndef REPLAY_STREAM_H
#define REPLAY_STREAM_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../tools/cmdgen.h"
#include "buf.h"

typedef struct stream {
  model_buf_t text;
  size_t *off; /* line i is text[off[i], off[i + 1] - 1) */
  size_t n;
} stream_t;

static inline void stream_add_line(stream_t *s, const char *data, size_t len) {
  s->off = realloc(s->off, (s->n + 2) * sizeof *s->off);
  s->off[s->n] = s->text.len;
  model_buf_append(&s->text, data, len);
  model_buf_putc(&s->text, '\n');
  s->off[++s->n] = s->text.len;
}

static inline void stream_add_big_grade(stream_t *s, size_t i, model_buf_t *tmp) {
  static char feedback[4001];
  memset(feedback, 'f', 4000);
  model_buf_clear(tmp);
  model_buf_printf(tmp,
                   "{\"id\":\"g%zu\",\"type\":\"grade.updated\",\"tenant\":\"t0\",\"assignment\":\"big\","
                   "\"ts\":\"2026-09-01T08:00:00Z\",\"student\":\"s%zu\",\"version\":1,"
                   "\"data\":{\"points\":1,\"feedback\":\"%s\"}}",
                   i, i, feedback);
  stream_add_line(s, tmp->data, tmp->len);
}

/* 6,000 commands of tenants x assignments aggregates of `students` each;
 * big_ones: with the grades; long_len > 0: with the long line half-way. */
static inline stream_t stream_make(uint32_t tenants, uint32_t assignments, uint32_t students, bool big_ones,
                                   size_t long_len) {
  cmdgen_opts_t o;
  cmdgen_defaults(&o);
  o.seed = 5;
  o.tenants = tenants;
  o.assignments = assignments;
  o.students = students;
  o.count = 6000;
  o.duplicate_rate = 0.3;
  o.invalid_rate = 0.05;
  o.order = CMDGEN_ORDER_SHUFFLE;
  cmdgen_t g;
  ck_assert(cmdgen_build(&g, &o));
  stream_t s = {.text = MODEL_BUF_INIT};
  model_buf_t line = MODEL_BUF_INIT;
  for (size_t i = 0, big = big_ones ? 0 : 4300; i < g.n; i++) {
    model_buf_clear(&line);
    cmdgen_render(&g, &g.ev[i], &line);
    stream_add_line(&s, line.data, line.len - 1);
    if (big < 4300) stream_add_big_grade(&s, big++, &line);
    if (long_len && i == g.n / 2) {
      model_buf_clear(&line);
      for (size_t k = 0; k < long_len; k++) model_buf_putc(&line, 'x');
      stream_add_line(&s, line.data, line.len);
    }
  }
  stream_add_line(&s, "", 0); /* an empty line: rejected too */
  model_buf_destroy(&line);
  cmdgen_destroy(&g);
  return s;
}

static inline void stream_free(stream_t *s) {
  model_buf_destroy(&s->text);
  free(s->off);
}

/* Line i without its newline. */
static inline const char *line_of(const stream_t *s, size_t i, size_t *len) {
  *len = s->off[i + 1] - 1 - s->off[i];
  return s->text.data + s->off[i];
}

#endif
