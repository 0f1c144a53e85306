#include "log.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "buf.h"
#include "clock.h"
#include "timestamp.h"

static config_log_level_t g_level = LOG_LEVEL_INFO;
static config_log_format_t g_format = LOG_FORMAT_JSON;
static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_setup(config_log_level_t level, config_log_format_t format) {
  g_level = level;
  g_format = format;
}

config_log_level_t log_get_level(void) { return g_level; }

void log_emit(config_log_level_t level, const char *msg, ...) {
  if (level > g_level) return;
  char ts[MODEL_TIMESTAMP_LEN + 1];
  model_timestamp_format(clock_wall_ms(), ts);

  model_buf_t b = MODEL_BUF_INIT;
  bool json = g_format == LOG_FORMAT_JSON;
  if (json) {
    model_buf_printf(&b, "{\"ts\":\"%s\",\"level\":\"%s\",\"msg\":", ts, level_names[level]);
    model_buf_json_string(&b, msg, strlen(msg));
  } else {
    model_buf_printf(&b, "%s %-5s %s", ts, level_names[level], msg);
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
      if (!v) v = "";
      if (json || strpbrk(v, " \"=") || !*v)
        model_buf_json_string(&b, v, strlen(v));
      else
        model_buf_puts(&b, v);
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
}

void log_redact_uri(const char *uri, char *out, size_t out_size) {
  if (!out_size) return;
  const char *scheme = strstr(uri, "://");
  const char *auth = scheme ? scheme + 3 : uri;
  const char *at = strchr(auth, '@');
  const char *slash = strchr(auth, '/');
  const char *colon = strchr(auth, ':');
  if (at && (!slash || at < slash) && colon && colon < at) {
    snprintf(out, out_size, "%.*s***%s", (int)(colon + 1 - uri), uri, at);
  } else {
    snprintf(out, out_size, "%s", uri);
  }
}
