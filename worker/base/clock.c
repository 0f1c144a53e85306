#include "clock.h"

static int64_t system_mono(void *ctx) {
  (void)ctx;
  return clock_mono_ms();
}

static int64_t system_wall(void *ctx) {
  (void)ctx;
  return clock_wall_ms();
}

static double system_mono_s(void *ctx) {
  (void)ctx;
  return clock_mono_s();
}

static const clock_source_t system_clock = {system_mono, system_wall, NULL, system_mono_s};

const clock_source_t *clock_system(void) { return &system_clock; }

static int64_t manual_mono(void *ctx) { return atomic_load(&((clock_manual_t *)ctx)->mono_ms); }
static int64_t manual_wall(void *ctx) { return atomic_load(&((clock_manual_t *)ctx)->wall_ms); }

void clock_manual_init(clock_manual_t *m, int64_t mono_ms, int64_t wall_ms) {
  atomic_init(&m->mono_ms, mono_ms);
  atomic_init(&m->wall_ms, wall_ms);
  m->source = (clock_source_t){manual_mono, manual_wall, m, NULL};
}

void clock_manual_advance(clock_manual_t *m, int64_t ms) {
  atomic_fetch_add(&m->mono_ms, ms);
  atomic_fetch_add(&m->wall_ms, ms);
}

void clock_manual_step_wall(clock_manual_t *m, int64_t ms) { atomic_fetch_add(&m->wall_ms, ms); }
