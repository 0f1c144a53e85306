#include "log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
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

void log_emit(log_level_t level, const char *msg, ...) {
  if (level > g_level) return;
  char ts[MODEL_TIMESTAMP_LEN + 1];
  model_timestamp_format(clock_wall_ms(), ts);

  model_buf_t b = MODEL_BUF_INIT, clean = MODEL_BUF_INIT;
  bool json = g_format == LOG_FORMAT_JSON;
  redact_set_scrub(redact_global(), msg, strlen(msg), &clean);
  if (json) {
    model_buf_printf(&b, "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":", ts, level_names[level]);
    model_buf_json_string(&b, clean.data, clean.len);
  } else {
    model_buf_printf(&b, "%s %-5s ", ts, level_names[level]);
    model_buf_append(&b, clean.data, clean.len);
  }
  va_list ap;
  va_start(ap, msg);
  for (const char *key = va_arg(ap, const char *); key; key = va_arg(ap, const char *)) {
    int type = va_arg(ap, int);
    if (json) {
      model_buf_putc(&b, ',');
      model_buf_json_string(&b, key, strlen(key));
      model_buf_putc(&b, ':');
    } else {
      model_buf_printf(&b, " %s=", key);
    }
    if (type == LOG_STR) {
      const char *v = va_arg(ap, const char *);
      model_buf_clear(&clean);
      redact_set_scrub(redact_global(), v ? v : "", v ? strlen(v) : 0, &clean);
      if (json || !clean.len || memchr(clean.data, ' ', clean.len) || memchr(clean.data, '"', clean.len) ||
          memchr(clean.data, '=', clean.len))
        model_buf_json_string(&b, clean.data, clean.len);
      else
        model_buf_append(&b, clean.data, clean.len);
    } else if (type == LOG_INT) {
      model_buf_printf(&b, "%lld", (long long)va_arg(ap, int64_t));
    } else {
      model_buf_printf(&b, "%.6g", va_arg(ap, double));
    }
  }
  va_end(ap);
  model_buf_puts(&b, json ? "}\n" : "\n");
  fwrite(b.data, 1, b.len, stderr);
  model_buf_destroy(&b);
  model_buf_destroy(&clean);
}
