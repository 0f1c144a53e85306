/* The readiness and liveness policy behind /readyz, /healthz and the
 * aggregator_ready gauge.
 *
 * Ready: the worker holds a partition assignment, neither dead-letter nor
 * change-event delivery is failing, the store answered within the store window and has not
 * failed since, and the writer is not stalled (stall.h: unwritten changes
 * and no write landed for batch.stall_timeout_ms). A worker that is not ready is taken out of rotation, not
 * restarted. Healthy: the main loop beat within the heartbeat window; a
 * worker that is not healthy is stuck and is restarted.
 *
 * The windows are durations, so they read the monotonic clock of a
 * clock_source_t: a wall-clock step must not flip either decision, and a
 * test moves a clock_manual_t instead of sleeping. Windows and ages are in
 * whole milliseconds, the clock's unit.
 *
 * Never ready while the source is failing (readiness_set_source_failing:
 * the brokers refuse the worker, or it lacks a grant it needs): a worker
 * that cannot read its topics is never ready, whatever else holds, and the
 * reason names why.
 *
 * Ownership and threads: a readiness_t is embedded by its owner (no
 * allocation, nothing to destroy), either statically with READINESS_INIT or
 * with readiness_init. Every input and decision is an atomic, so one
 * thread records while another decides, without a lock; the texts of the
 * causes (the source's, the store's) are copied under a mutex of their own. The clock it reads
 * belongs to the caller and must outlive its use here. */
#ifndef READINESS_H
#define READINESS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"

/* Default windows: the store must have answered, and the main loop beaten,
 * this recently. */
#define READINESS_STORE_WINDOW_MS 30000
#define READINESS_HEARTBEAT_WINDOW_MS 30000

/* A time of the monotonic clock that means "never". */
#define READINESS_NEVER INT64_MIN

typedef struct readiness {
  _Atomic(const clock_source_t *) clock; /* NULL: the process's clocks */
  atomic_bool assigned, store_failed, dead_letter_failing, changes_failing, stalled;
  _Atomic uint64_t stalled_unwritten; /* while stalled: aggregates unwritten */
  _Atomic int64_t stalled_since_ms;   /* while stalled: monotonic, the writer's last progress */
  _Atomic int64_t store_answer_ms; /* monotonic; READINESS_NEVER until the store answers */
  _Atomic int64_t heartbeat_ms;    /* monotonic; READINESS_NEVER until the first beat */
  _Atomic int64_t store_window_ms, heartbeat_window_ms;
  pthread_mutex_t cause_lock;  /* guards the two texts below */
  char source_failing[512];    /* "" unless the source is failing: why */
  char store_cause[512];       /* "" or why the store's last attempt failed */
} readiness_t;

/* Nothing assigned, nothing answered, no beat yet, default windows, the
 * process's clocks. */
#define READINESS_INIT                                                                                 \
  {NULL,  false, false, false, false, false, 0, 0, READINESS_NEVER, READINESS_NEVER, READINESS_STORE_WINDOW_MS, \
   READINESS_HEARTBEAT_WINDOW_MS, PTHREAD_MUTEX_INITIALIZER, "", ""}

/* Resets r to READINESS_INIT reading clock (NULL: the process's clocks). */
void readiness_init(readiness_t *r, const clock_source_t *clock);
/* Replaces the clock r reads (NULL: the process's clocks). Times already
 * recorded were read from the old clock: set the clock before recording. */
void readiness_set_clock(readiness_t *r, const clock_source_t *clock);
/* Overrides the windows; a value <= 0 leaves that window as it is. */
void readiness_set_windows_ms(readiness_t *r, int64_t store_ms, int64_t heartbeat_ms);

void readiness_set_assigned(readiness_t *r, bool has_assignment);
/* deadletter.h decides when delivery counts as failing. */
void readiness_set_dead_letter_failing(readiness_t *r, bool failing);
/* changes_producer.h decides when change-event delivery counts as failing. */
void readiness_set_changes_failing(readiness_t *r, bool failing);
/* The writer's stall watchdog (stall.h) decides: stalled with this many
 * aggregates unwritten, nothing landed since since_ms (monotonic, on r's
 * clock); or not stalled. */
void readiness_set_stalled(readiness_t *r, bool stalled, uint64_t unwritten, int64_t since_ms);
/* Any successful reply from the store; clears a failure. */
void readiness_store_answered(readiness_t *r);
/* The store could not be reached; not ready until it answers again. */
void readiness_store_failed(readiness_t *r);
/* The same, with the cause the reason names (a fault that waiting does not
 * heal: "credentials refused", "the server's certificate does not verify",
 * ...; store_error.h) until the store answers; NULL or "": none known. */
void readiness_store_failed_cause(readiness_t *r, const char *cause);
/* The source (the Kafka consumer) cannot do its work, for the reason why
 * (cut to 511 bytes): not ready until it is cleared with NULL or "". */
void readiness_set_source_failing(readiness_t *r, const char *why);
/* The main loop is alive. */
void readiness_heartbeat(readiness_t *r);

/* The decisions. When false, reason (may be NULL) gets a short
 * human-readable cause such as "no partition assignment"; when true, "". */
bool readiness_ready(readiness_t *r, char *reason, size_t reasonsz);
bool readiness_healthy(readiness_t *r, char *reason, size_t reasonsz);

#endif
