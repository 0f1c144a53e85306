/* The progress line: see progress.h. */
#include "progress.h"

#include <stdio.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"

progress_t progress_start(const char *label) {
  double now = clock_mono_s();
  return (progress_t){.tty = log_get_format() == LOG_FORMAT_TEXT && isatty(2), .start = now, .last = now,
                      .label = label};
}

bool progress_due(progress_t *p, bool final) {
  if (!p->label) return false;
  double now = clock_mono_s();
  if (!final && now - p->last < (p->tty ? 0.2 : 10.0)) return false;
  p->last = now;
  return true;
}

double progress_elapsed(const progress_t *p) { return clock_mono_s() - p->start; }

void progress_show(progress_t *p, bool final, const char *text, const log_field_t *fields, size_t n) {
  if (!p->label) return;
  model_buf_t b = MODEL_BUF_INIT;
  if (log_get_format() == LOG_FORMAT_JSON) {
    if (log_get_level() < LOG_LEVEL_INFO) return;
    model_buf_printf(&b, "%s: progress", p->label);
    log_write(LOG_LEVEL_INFO, b.data, fields, n);
  } else {
    model_buf_printf(&b, "%s%s: %s%s", p->tty ? "\r\033[K" : "", p->label, text, p->tty && !final ? "" : "\n");
    fwrite(b.data, 1, b.len, stderr);
    p->drawn = p->tty && !final;
  }
  model_buf_destroy(&b);
}

void progress_end(progress_t *p) {
  if (p->drawn) fputc('\n', stderr);
  p->drawn = false;
}
