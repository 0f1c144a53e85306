/* The readiness and liveness policy (readiness.h). */
#include "readiness.h"

#include <stdio.h>

#define SET(var, v) atomic_store_explicit(&(var), (v), memory_order_relaxed)
#define GET(var) atomic_load_explicit(&(var), memory_order_relaxed)

static int64_t now_ms(readiness_t *r) {
  const clock_source_t *c = atomic_load(&r->clock);
  return clock_mono(c ? c : clock_system());
}

void readiness_init(readiness_t *r, const clock_source_t *clock) {
  atomic_init(&r->clock, clock);
  atomic_init(&r->assigned, false);
  atomic_init(&r->store_failed, false);
  atomic_init(&r->dead_letter_failing, false);
  atomic_init(&r->changes_failing, false);
  atomic_init(&r->stalled, false);
  atomic_init(&r->stalled_unwritten, 0);
  atomic_init(&r->stalled_since_ms, 0);
  atomic_init(&r->store_answer_ms, READINESS_NEVER);
  atomic_init(&r->heartbeat_ms, READINESS_NEVER);
  atomic_init(&r->store_window_ms, READINESS_STORE_WINDOW_MS);
  atomic_init(&r->heartbeat_window_ms, READINESS_HEARTBEAT_WINDOW_MS);
  pthread_mutex_init(&r->cause_lock, NULL);
  r->source_failing[0] = r->store_cause[0] = '\0';
}

/* Copies a cause text in, or out (to reason, after msg and ": "). */
static void cause_set(readiness_t *r, char *dst, size_t size, const char *text) {
  pthread_mutex_lock(&r->cause_lock);
  snprintf(dst, size, "%s", text ? text : "");
  pthread_mutex_unlock(&r->cause_lock);
}

/* True when the cause is set; reason gets "msg: cause" (just the cause
 * without msg). */
static bool cause_get(readiness_t *r, const char *src, const char *msg, char *reason, size_t reasonsz) {
  pthread_mutex_lock(&r->cause_lock);
  bool set = src[0] != '\0';
  if (set && reason && reasonsz) snprintf(reason, reasonsz, "%s%s%s", msg ? msg : "", msg ? ": " : "", src);
  pthread_mutex_unlock(&r->cause_lock);
  return set;
}

void readiness_set_clock(readiness_t *r, const clock_source_t *clock) { atomic_store(&r->clock, clock); }

void readiness_set_windows_ms(readiness_t *r, int64_t store_ms, int64_t heartbeat_ms) {
  if (store_ms > 0) SET(r->store_window_ms, store_ms);
  if (heartbeat_ms > 0) SET(r->heartbeat_window_ms, heartbeat_ms);
}

void readiness_set_assigned(readiness_t *r, bool has_assignment) { SET(r->assigned, has_assignment); }

void readiness_set_dead_letter_failing(readiness_t *r, bool failing) { SET(r->dead_letter_failing, failing); }

void readiness_set_changes_failing(readiness_t *r, bool failing) { SET(r->changes_failing, failing); }

void readiness_set_stalled(readiness_t *r, bool stalled, uint64_t unwritten, int64_t since_ms) {
  SET(r->stalled_unwritten, unwritten);
  SET(r->stalled_since_ms, since_ms);
  SET(r->stalled, stalled);
}

void readiness_store_answered(readiness_t *r) {
  cause_set(r, r->store_cause, sizeof r->store_cause, NULL);
  SET(r->store_failed, false);
  SET(r->store_answer_ms, now_ms(r));
}

void readiness_store_failed(readiness_t *r) { SET(r->store_failed, true); }

void readiness_store_failed_cause(readiness_t *r, const char *cause) {
  cause_set(r, r->store_cause, sizeof r->store_cause, cause);
  SET(r->store_failed, true);
}

void readiness_set_source_failing(readiness_t *r, const char *why) {
  cause_set(r, r->source_failing, sizeof r->source_failing, why);
}

void readiness_heartbeat(readiness_t *r) { SET(r->heartbeat_ms, now_ms(r)); }

/* Fills reason (may be NULL) and returns false, for the "not ok" paths;
 * age_ms < 0: no age to tell. */
static bool why(char *reason, size_t reasonsz, const char *msg, int64_t age_ms) {
  if (reason && reasonsz) {
    if (age_ms >= 0) snprintf(reason, reasonsz, "%s %.1f s", msg, (double)age_ms / 1e3);
    else snprintf(reason, reasonsz, "%s", msg);
  }
  return false;
}

bool readiness_ready(readiness_t *r, char *reason, size_t reasonsz) {
  if (reason && reasonsz) reason[0] = '\0';
  /* First: without its grants the worker has no assignment either, and
   * "no partition assignment" would hide why. */
  if (cause_get(r, r->source_failing, "Kafka", reason, reasonsz)) return false;
  if (!GET(r->assigned)) return why(reason, reasonsz, "no partition assignment", -1);
  if (GET(r->dead_letter_failing)) return why(reason, reasonsz, "dead-letter delivery failing", -1);
  if (GET(r->changes_failing)) return why(reason, reasonsz, "change-event delivery failing", -1);
  int64_t answered = GET(r->store_answer_ms);
  if (answered == READINESS_NEVER) {
    if (GET(r->store_failed) && cause_get(r, r->store_cause, "store has not answered yet", reason, reasonsz))
      return false;
    return why(reason, reasonsz, "store has not answered yet", -1);
  }
  if (GET(r->store_failed)) {
    if (cause_get(r, r->store_cause, "store unreachable", reason, reasonsz)) return false;
    return why(reason, reasonsz, "store unreachable", -1);
  }
  if (GET(r->stalled)) {
    /* After a store that fails (its error says more), before a store that
     * is silent: a write that never comes back is the stall's cause, and
     * the counts say what waits on it. */
    if (reason && reasonsz)
      snprintf(reason, reasonsz, "writer stalled: %llu aggregates unwritten, nothing written for %.1f s",
               (unsigned long long)GET(r->stalled_unwritten), (double)(now_ms(r) - GET(r->stalled_since_ms)) / 1e3);
    return false;
  }
  int64_t age = now_ms(r) - answered;
  if (age > GET(r->store_window_ms)) return why(reason, reasonsz, "store silent for", age);
  return true;
}

bool readiness_healthy(readiness_t *r, char *reason, size_t reasonsz) {
  if (reason && reasonsz) reason[0] = '\0';
  int64_t beat = GET(r->heartbeat_ms);
  if (beat == READINESS_NEVER) return why(reason, reasonsz, "main loop not started", -1);
  int64_t age = now_ms(r) - beat;
  if (age > GET(r->heartbeat_window_ms)) return why(reason, reasonsz, "main loop stalled: no heartbeat for", age);
  return true;
}
