/* The closing line of a command that processes a stream (`replay`,
 * `verify`, `export`): a set of named counters and the seconds it took, on
 * stderr, written whatever log.level is.
 *
 *   log.format = text:  `<command>: name=value ... seconds=S.SSS`, one plain
 *                       line (no timestamp: what a terminal user reads and a
 *                       script greps);
 *   log.format = json:  one log line (log.h), level info, msg
 *                       "<command>: summary", the counters as integer fields
 *                       in the order given, then "seconds" as a number.
 *
 * Call it once, only for work that was done: a command that failed or was
 * interrupted prints no summary. */
#ifndef SUMMARY_H
#define SUMMARY_H

#include <stddef.h>
#include <stdint.h>

typedef struct summary_counter {
  const char *name; /* a literal: [a-z_]+ */
  uint64_t value;
} summary_counter_t;

/* command names the command ("replay"); counters[0..n) are borrowed. */
void summary_print(const char *command, const summary_counter_t *counters, size_t n, double seconds);

#endif
