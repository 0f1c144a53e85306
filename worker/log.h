/* Structured logging: one JSON object per line ({"ts","level","msg",...})
 * or a text line for a terminal, on stderr.
 *
 * Fields are passed as typed triples ending with NULL:
 *   log_emit(LOG_LEVEL_INFO, "flushed", "aggregates", LOG_INT, (int64_t)n,
 *            "topic", LOG_STR, name, NULL);
 * Values are never secrets: callers pass redacted strings (see log_redact_uri). */
#ifndef LOG_H
#define LOG_H

#include <stddef.h>

#include "config.h"

enum { LOG_STR = 1, LOG_INT = 2, LOG_DBL = 3 };

void log_setup(config_log_level_t level, config_log_format_t format);
config_log_level_t log_get_level(void);
void log_emit(config_log_level_t level, const char *msg, ...);

#define log_error(...) log_emit(LOG_LEVEL_ERROR, __VA_ARGS__, NULL)
#define log_warn(...) log_emit(LOG_LEVEL_WARN, __VA_ARGS__, NULL)
#define log_info(...) log_emit(LOG_LEVEL_INFO, __VA_ARGS__, NULL)
#define log_debug(...) log_emit(LOG_LEVEL_DEBUG, __VA_ARGS__, NULL)

/* Copies uri into out with any password (user:PASSWORD@) replaced by "***". */
void log_redact_uri(const char *uri, char *out, size_t out_size);

#endif
