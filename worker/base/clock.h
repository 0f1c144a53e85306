/* The clocks the worker reads.
 *
 * Durations (linger, retry backoff, deadlines, how long a flush has run)
 * use the monotonic clock, which no clock step moves: an NTP step must not
 * flush early or late, or cut a shutdown short. The wall clock gives only
 * times that leave the process: a document's updatedAt, log lines, and
 * latency against Kafka timestamps, which are wall times themselves.
 *
 * A module that measures durations takes a clock_source_t, so that a test
 * drives its time by hand (clock_manual_t) instead of sleeping. The free
 * functions read the process's clocks directly, for code that needs no
 * injected time (log lines, progress lines). */
#ifndef CLOCK_H
#define CLOCK_H

#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

static inline int64_t clock_wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline int64_t clock_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static inline double clock_mono_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Sleeps ms (a duration: the monotonic clock's), or less when a signal
 * arrives: the caller then looks at its flags (signals.h). */
static inline void clock_sleep_ms(int64_t ms) {
  struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
  clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, NULL);
}

/* A pair of clocks to read: monotonic and wall, in milliseconds; and,
 * optionally (NULL: none), the monotonic one in seconds at a finer
 * resolution, for durations shorter than a millisecond. */
typedef struct clock_source {
  int64_t (*mono_ms)(void *ctx);
  int64_t (*wall_ms)(void *ctx);
  void *ctx;
  double (*mono_s)(void *ctx);
} clock_source_t;

/* The process's clocks. Static storage: never freed. */
const clock_source_t *clock_system(void);

static inline int64_t clock_mono(const clock_source_t *c) { return c->mono_ms(c->ctx); }
static inline int64_t clock_wall(const clock_source_t *c) { return c->wall_ms(c->ctx); }
/* The monotonic clock in seconds, at the finest resolution c has (the
 * process's: nanoseconds; a manual clock's: milliseconds). */
static inline double clock_mono_seconds(const clock_source_t *c) {
  return c->mono_s ? c->mono_s(c->ctx) : (double)c->mono_ms(c->ctx) / 1000.0;
}

/* A clock that moves only when told, for tests. Reads and moves are atomic,
 * so a test thread may move it while a worker thread reads it. Embed it
 * (no allocation); its source is &m->source after clock_manual_init. */
typedef struct clock_manual {
  _Atomic int64_t mono_ms;
  _Atomic int64_t wall_ms;
  clock_source_t source;
} clock_manual_t;

void clock_manual_init(clock_manual_t *m, int64_t mono_ms, int64_t wall_ms);
/* Moves both clocks forward by ms. */
void clock_manual_advance(clock_manual_t *m, int64_t ms);
/* Steps the wall clock alone (as NTP may), by ms, either way. */
void clock_manual_step_wall(clock_manual_t *m, int64_t ms);

#endif
