/* Structured logging: one JSON object per line ({"ts","level","msg",...})
 * or a text line for a terminal, on stderr.
 *
 * Fields are passed as typed triples ending with NULL:
 *   log_emit(LOG_LEVEL_INFO, "flushed", "aggregates", LOG_INT, (int64_t)n,
 *            "topic", LOG_STR, name, NULL);
 *
 * Secrets: the message and every LOG_STR value are scrubbed against
 * redact_global() (redact.h) before they are written, so the libmongoc and
 * librdkafka log handlers and error strings from libraries or servers can be
 * passed as they come. Keys are not scrubbed: they are literals. Callers
 * still never pass a secret on purpose (a URI goes through redact_uri()).
 *
 * log_emit may be called from any thread (librdkafka logs from its own);
 * each line is written with one fwrite. */
#ifndef LOG_H
#define LOG_H

#include <stddef.h>
#include <stdint.h>

/* Below config.h (which holds a level and a format) and everything that logs. */
typedef enum { LOG_LEVEL_ERROR, LOG_LEVEL_WARN, LOG_LEVEL_INFO, LOG_LEVEL_DEBUG } log_level_t;
typedef enum { LOG_FORMAT_JSON, LOG_FORMAT_TEXT } log_format_t;

enum { LOG_STR = 1, LOG_INT = 2, LOG_DBL = 3 };

/* One field of a line built at run time (log_write); only the member of
 * its type is read. */
typedef struct log_field {
  const char *key;
  int type; /* LOG_STR, LOG_INT or LOG_DBL */
  const char *s;
  int64_t i;
  double d;
} log_field_t;

void log_setup(log_level_t level, log_format_t format);
log_level_t log_get_level(void);
log_format_t log_get_format(void);
void log_emit(log_level_t level, const char *msg, ...);

/* The line log_emit writes, with n fields from an array, written whatever
 * log.level is: for what a command owes its caller whatever the level (a
 * summary, summary.h). Scrubbed the same way. */
void log_write(log_level_t level, const char *msg, const log_field_t *fields, size_t n);

#define log_error(...) log_emit(LOG_LEVEL_ERROR, __VA_ARGS__, NULL)
#define log_warn(...) log_emit(LOG_LEVEL_WARN, __VA_ARGS__, NULL)
#define log_info(...) log_emit(LOG_LEVEL_INFO, __VA_ARGS__, NULL)
#define log_debug(...) log_emit(LOG_LEVEL_DEBUG, __VA_ARGS__, NULL)

#endif
