/* The writer's stall watchdog (stall.h). */
#include "stall.h"

void stall_init(stall_watch_t *w, int64_t timeout_ms) {
  *w = (stall_watch_t){.timeout_ms = timeout_ms, .landed_ms = INT64_MIN};
}

void stall_set_timeout(stall_watch_t *w, int64_t timeout_ms) { w->timeout_ms = timeout_ms; }

void stall_landed(stall_watch_t *w, int64_t now_ms) { w->landed_ms = now_ms; }

stall_event_t stall_check(stall_watch_t *w, int64_t now_ms, int64_t oldest_unwritten_ms) {
  bool unwritten = oldest_unwritten_ms != INT64_MAX;
  /* The writer owed nothing before its oldest unwritten change came. */
  int64_t progress = w->landed_ms > oldest_unwritten_ms ? w->landed_ms : oldest_unwritten_ms;
  bool stalled = unwritten && now_ms - progress >= w->timeout_ms;
  if (!stalled) {
    bool was = w->stalled;
    w->stalled = false;
    return was ? STALL_ENDED : STALL_NONE;
  }
  if (!w->stalled) {
    w->stalled = true;
    w->since_ms = progress;
    w->reported_ms = now_ms;
    return STALL_BEGAN;
  }
  if (now_ms - w->reported_ms >= w->timeout_ms) {
    w->reported_ms = now_ms;
    return STALL_GOES_ON;
  }
  return STALL_NONE;
}

int64_t stall_age_ms(const stall_watch_t *w, int64_t now_ms) {
  return w->stalled && now_ms > w->since_ms ? now_ms - w->since_ms : 0;
}
