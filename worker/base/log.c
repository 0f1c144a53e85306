#include "log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "clock.h"
#include "redact.h"
#include "timestamp.h"

static log_level_t g_level = LOG_LEVEL_INFO;
static log_format_t g_format = LOG_FORMAT_JSON;
static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_setup(log_level_t level, log_format_t format) {
  g_level = level;
  g_format = format;
}

log_level_t log_get_level(void) { return g_level; }

log_format_t log_get_format(void) { return g_format; }

/* The line up to its fields. */
static void line_begin(model_buf_t *b, model_buf_t *clean, log_level_t level, const char *msg) {
  char ts[MODEL_TIMESTAMP_LEN + 1];
  model_timestamp_format(clock_wall_ms(), ts);
  redact_set_scrub(redact_global(), msg, strlen(msg), clean);
  if (g_format == LOG_FORMAT_JSON) {
    model_buf_printf(b, "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":", ts, level_names[level]);
    model_buf_json_string(b, clean->data, clean->len);
  } else {
    model_buf_printf(b, "%s %-5s ", ts, level_names[level]);
    model_buf_append(b, clean->data, clean->len);
  }
}

static void line_field(model_buf_t *b, model_buf_t *clean, const log_field_t *f) {
  bool json = g_format == LOG_FORMAT_JSON;
  if (json) {
    model_buf_putc(b, ',');
    model_buf_json_string(b, f->key, strlen(f->key));
    model_buf_putc(b, ':');
  } else {
    model_buf_printf(b, " %s=", f->key);
  }
  if (f->type == LOG_STR) {
    const char *v = f->s;
    model_buf_clear(clean);
    redact_set_scrub(redact_global(), v ? v : "", v ? strlen(v) : 0, clean);
    if (json || !clean->len || memchr(clean->data, ' ', clean->len) || memchr(clean->data, '"', clean->len) ||
        memchr(clean->data, '=', clean->len))
      model_buf_json_string(b, clean->data, clean->len);
    else
      model_buf_append(b, clean->data, clean->len);
  } else if (f->type == LOG_INT) {
    model_buf_printf(b, "%lld", (long long)f->i);
  } else {
    model_buf_printf(b, "%.6g", f->d);
  }
}

/* One fwrite per line: lines of several threads never interleave. */
static void line_end(model_buf_t *b, model_buf_t *clean) {
  model_buf_puts(b, g_format == LOG_FORMAT_JSON ? "}\n" : "\n");
  fwrite(b->data, 1, b->len, stderr);
  model_buf_destroy(b);
  model_buf_destroy(clean);
}

void log_write(log_level_t level, const char *msg, const log_field_t *fields, size_t n) {
  model_buf_t b = MODEL_BUF_INIT, clean = MODEL_BUF_INIT;
  line_begin(&b, &clean, level, msg);
  for (size_t i = 0; i < n; i++) line_field(&b, &clean, &fields[i]);
  line_end(&b, &clean);
}

void log_emit(log_level_t level, const char *msg, ...) {
  if (level > g_level) return;
  model_buf_t b = MODEL_BUF_INIT, clean = MODEL_BUF_INIT;
  line_begin(&b, &clean, level, msg);
  va_list ap;
  va_start(ap, msg);
  for (const char *key = va_arg(ap, const char *); key; key = va_arg(ap, const char *)) {
    log_field_t f = {.key = key, .type = va_arg(ap, int)};
    if (f.type == LOG_STR)
      f.s = va_arg(ap, const char *);
    else if (f.type == LOG_INT)
      f.i = va_arg(ap, int64_t);
    else
      f.d = va_arg(ap, double);
    line_field(&b, &clean, &f);
  }
  va_end(ap);
  line_end(&b, &clean);
}
