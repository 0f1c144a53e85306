/* The writer's stall watchdog (batch.stall_timeout_ms, docs/GUARANTEES.md
 * "The writer makes progress").
 *
 * The writer is built to make progress whenever the store answers: every
 * conflict is reloaded and merged again, every reply that does not account
 * for its items is resolved item by item. A stall that the code cannot rule
 * out (a server that accepts a write and never answers it, a bug) must
 * still be seen by an operator, within minutes and not when the process is
 * stopped. So: a worker that holds unwritten changes and has landed no
 * write for the timeout is *stalled*. It warns with the counts, reports
 * not-ready with the reason and raises a gauge the shipped alert pages on,
 * until a write lands again.
 *
 * "Landed" is any flush that made a change durable: a write acknowledged,
 * or a load that found the store holding it already. Conflicts and failed
 * attempts do not count: a writer that keeps conflicting is stalled too.
 * The clock starts at the later of the last landing and the oldest
 * unwritten change, so a worker that was idle (nothing unwritten) is not
 * stalled by its first change.
 *
 * Time is the caller's: every call takes the monotonic time it read, so
 * a test drives it with a manual clock. A stall_watch_t is plain data,
 * embedded by its owner (the consumer's thread), with no allocation. */
#ifndef STALL_H
#define STALL_H

#include <stdbool.h>
#include <stdint.h>

typedef struct stall_watch {
  int64_t timeout_ms;
  int64_t landed_ms;   /* monotonic: the last flush that landed a change; INT64_MIN before any */
  int64_t since_ms;    /* while stalled: when the writer last made progress (the age's origin) */
  int64_t reported_ms; /* while stalled: when the last warning was given */
  bool stalled;
} stall_watch_t;

typedef enum {
  STALL_NONE,    /* nothing to report */
  STALL_BEGAN,   /* the writer is stalled from now on: warn, not ready */
  STALL_GOES_ON, /* still stalled, another timeout later: warn again */
  STALL_ENDED    /* a write landed, or nothing is unwritten any more: ready again */
} stall_event_t;

/* Not stalled, nothing landed yet. */
void stall_init(stall_watch_t *w, int64_t timeout_ms);
/* A new timeout (a reload) applies from the next check. */
void stall_set_timeout(stall_watch_t *w, int64_t timeout_ms);
/* A flush landed at least one change at now_ms. */
void stall_landed(stall_watch_t *w, int64_t now_ms);
/* Decides at now_ms, given when the oldest unwritten change was applied
 * (batch_oldest_unwritten_ms: INT64_MAX when nothing is unwritten). */
stall_event_t stall_check(stall_watch_t *w, int64_t now_ms, int64_t oldest_unwritten_ms);
/* While stalled: how long nothing has landed, in ms; 0 otherwise. */
int64_t stall_age_ms(const stall_watch_t *w, int64_t now_ms);

#endif
