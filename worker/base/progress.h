/* The progress line of a long command (`replay`, `verify`) on stderr.
 *
 *   log.format = text: on a terminal one line redrawn in place at most every
 *     0.2 s (ended by the final one); otherwise a plain line every 10 s and
 *     the final one.
 *   log.format = json: a log line (log.h, level info: log.level = warn
 *     silences it) every 10 s and the final one, never redrawn.
 *
 * A progress line states what was done so far, never more: the caller
 * passes counts of finished work only. The rates and the ETA are durations:
 * monotonic clock. */
#ifndef PROGRESS_H
#define PROGRESS_H

#include <stdbool.h>
#include <stddef.h>

#include "log.h"

typedef struct progress {
  bool tty;         /* text on a terminal: redrawn in place */
  bool drawn;       /* a line is drawn in place and not ended */
  double start, last;
  const char *label; /* "<label>: " begins the text; NULL = no progress line */
} progress_t;

/* Starts the clock; label NULL makes every call a no-op. */
progress_t progress_start(const char *label);

/* Whether a line is due (final: always, but for a label of NULL); when
 * true, the line must follow (progress_show): the interval starts again. */
bool progress_due(progress_t *p, bool final);

/* Seconds since progress_start. */
double progress_elapsed(const progress_t *p);

/* Writes the line: `text` (without the label) in text format, or msg
 * "<label>: progress" with fields[0..n) in JSON. */
void progress_show(progress_t *p, bool final, const char *text, const log_field_t *fields, size_t n);

/* Ends a line drawn in place, so that what follows starts a line of its
 * own (a stop before the final line). */
void progress_end(progress_t *p);

#endif
