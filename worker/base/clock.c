#include "clock.h"

static int64_t system_mono(void *ctx) {
  (void)ctx;
  return clock_mono_ms();
}

static int64_t system_wall(void *ctx) {
  (void)ctx;
  return clock_wall_ms();
}

static void system_sleep(void *ctx, int64_t ms) {
  (void)ctx;
  if (ms > 0) clock_sleep_ms(ms);
}

static double system_mono_s(void *ctx) {
  (void)ctx;
  return clock_mono_s();
}

static const clock_source_t system_clock = {system_mono, system_wall, system_sleep, NULL, system_mono_s};

const clock_source_t *clock_system(void) { return &system_clock; }

/* Wakes every thread waiting on cond (sleepers on m->moved, watchers on
 * m->read). Taking the lock orders the broadcast after a waiter's last look
 * (it holds the lock from its look to its wait). */
static void manual_wake(clock_manual_t *m, pthread_cond_t *cond) {
  pthread_mutex_lock(&m->lock);
  pthread_cond_broadcast(cond);
  pthread_mutex_unlock(&m->lock);
}

/* A read counts, then wakes watchers if there are any: a watcher registers
 * before it looks at the count, so either it sees this read or this read
 * sees it (both sequentially consistent). `locked`: the caller holds
 * m->lock already. */
static void manual_count_read(clock_manual_t *m, bool locked) {
  atomic_fetch_add(&m->reads, 1);
  if (!atomic_load(&m->watchers)) return;
  if (locked) pthread_cond_broadcast(&m->read);
  else manual_wake(m, &m->read);
}

static int64_t manual_mono(void *ctx) {
  clock_manual_t *m = ctx;
  manual_count_read(m, false);
  return atomic_load(&m->mono_ms);
}

static int64_t manual_wall(void *ctx) {
  clock_manual_t *m = ctx;
  manual_count_read(m, false);
  return atomic_load(&m->wall_ms);
}

/* Each look at the time counts as a read: a test that moves the clock sees
 * the sleeper look again (clock_manual_wait_read). */
static void manual_sleep(void *ctx, int64_t ms) {
  clock_manual_t *m = ctx;
  pthread_mutex_lock(&m->lock);
  manual_count_read(m, true);
  for (int64_t until = atomic_load(&m->mono_ms) + ms; atomic_load(&m->mono_ms) < until;) {
    pthread_cond_wait(&m->moved, &m->lock);
    manual_count_read(m, true);
  }
  pthread_mutex_unlock(&m->lock);
}

void clock_manual_init(clock_manual_t *m, int64_t mono_ms, int64_t wall_ms) {
  atomic_init(&m->mono_ms, mono_ms);
  atomic_init(&m->wall_ms, wall_ms);
  atomic_init(&m->reads, 0);
  atomic_init(&m->watchers, 0);
  pthread_mutex_init(&m->lock, NULL);
  pthread_condattr_t attr;
  pthread_condattr_init(&attr);
  pthread_condattr_setclock(&attr, CLOCK_MONOTONIC); /* the bound of clock_manual_wait_read */
  pthread_cond_init(&m->moved, NULL);
  pthread_cond_init(&m->read, &attr);
  pthread_condattr_destroy(&attr);
  m->source = (clock_source_t){manual_mono, manual_wall, manual_sleep, m, NULL};
}

void clock_manual_advance(clock_manual_t *m, int64_t ms) {
  atomic_fetch_add(&m->mono_ms, ms);
  atomic_fetch_add(&m->wall_ms, ms);
  manual_wake(m, &m->moved);
}

void clock_manual_step_wall(clock_manual_t *m, int64_t ms) { atomic_fetch_add(&m->wall_ms, ms); }

/* With m->lock held: waits until the count of reads passes seen, or until
 * the process's monotonic clock passes until_ms. */
static bool wait_reads_past(clock_manual_t *m, uint64_t seen, int64_t until_ms) {
  struct timespec ts = {(time_t)(until_ms / 1000), (long)(until_ms % 1000) * 1000000L};
  bool read;
  while (!(read = atomic_load(&m->reads) != seen) && clock_mono_ms() < until_ms)
    pthread_cond_timedwait(&m->read, &m->lock, &ts);
  return read;
}

bool clock_manual_wait_read(clock_manual_t *m, int64_t bound_ms) {
  int64_t until = clock_mono_ms() + bound_ms;
  pthread_mutex_lock(&m->lock);
  atomic_fetch_add(&m->watchers, 1);
  bool read = wait_reads_past(m, atomic_load(&m->reads), until);
  atomic_fetch_sub(&m->watchers, 1);
  pthread_mutex_unlock(&m->lock);
  return read;
}

/* The count is taken and the clock moved under the lock, which a woken
 * sleeper needs before it looks: its look comes after the count. */
bool clock_manual_advance_seen(clock_manual_t *m, int64_t ms, int64_t bound_ms) {
  int64_t until = clock_mono_ms() + bound_ms;
  pthread_mutex_lock(&m->lock);
  atomic_fetch_add(&m->watchers, 1);
  uint64_t seen = atomic_load(&m->reads);
  atomic_fetch_add(&m->mono_ms, ms);
  atomic_fetch_add(&m->wall_ms, ms);
  pthread_cond_broadcast(&m->moved);
  bool read = wait_reads_past(m, seen, until);
  atomic_fetch_sub(&m->watchers, 1);
  pthread_mutex_unlock(&m->lock);
  return read;
}
