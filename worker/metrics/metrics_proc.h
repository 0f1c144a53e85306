/* The process's own resource use, read from /proc, for the process_*
 * metrics as the Prometheus client libraries define them.
 *
 * A figure whose source cannot be read is marked absent and left out of
 * the exposition rather than made up. Reads only this process's files; any
 * thread may call it. */
#ifndef METRICS_PROC_H
#define METRICS_PROC_H

#include <stdbool.h>
#include <stdint.h>

typedef struct metrics_proc {
  bool have_cpu;
  double cpu_seconds; /* user + system CPU time */
  bool have_start;
  double start_time_seconds; /* since the Unix epoch */
  bool have_memory;
  uint64_t virtual_bytes, resident_bytes;
  bool have_fds;
  int64_t open_fds;
} metrics_proc_t;

/* Fills p; what cannot be read is marked absent. */
void metrics_proc_read(metrics_proc_t *p);

#endif
