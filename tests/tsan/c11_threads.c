/* Linked into the test executables of a ThreadSanitizer build only
 * (CMakeLists.txt, SANITIZE=thread).
 *
 * librdkafka runs its threads with C11 <threads.h>. glibc implements
 * thrd_create, mtx_* and cnd_* by calling its internal pthread functions
 * directly, past the symbols TSan intercepts, so TSan never learns of
 * librdkafka's threads (their first malloc crashes inside TSan's allocator)
 * nor of its locks. Defining the C11 functions in the executable interposes
 * them for librdkafka too: each forwards to the public pthread function,
 * which TSan intercepts. On glibc, thrd_t is pthread_t, and mtx_t and cnd_t
 * have the size and alignment of pthread_mutex_t and pthread_cond_t. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <threads.h>

_Static_assert(sizeof(thrd_t) == sizeof(pthread_t), "thrd_t is pthread_t on glibc");
_Static_assert(sizeof(mtx_t) >= sizeof(pthread_mutex_t), "mtx_t holds a pthread mutex on glibc");
_Static_assert(sizeof(cnd_t) >= sizeof(pthread_cond_t), "cnd_t holds a pthread condition on glibc");

static int result(int rc) {
  switch (rc) {
  case 0: return thrd_success;
  case ETIMEDOUT: return thrd_timedout;
  case EBUSY: return thrd_busy;
  case ENOMEM: return thrd_nomem;
  default: return thrd_error;
  }
}

typedef struct start {
  thrd_start_t fn;
  void *arg;
} start_t;

static void *trampoline(void *p) {
  start_t s = *(start_t *)p;
  free(p);
  return (void *)(intptr_t)s.fn(s.arg);
}

int thrd_create(thrd_t *thr, thrd_start_t fn, void *arg) {
  start_t *s = malloc(sizeof *s);
  if (!s) return thrd_nomem;
  s->fn = fn;
  s->arg = arg;
  pthread_t t;
  int rc = pthread_create(&t, NULL, trampoline, s);
  if (rc) {
    free(s);
    return result(rc);
  }
  *thr = (thrd_t)t;
  return thrd_success;
}

int thrd_join(thrd_t thr, int *res) {
  void *r;
  int rc = pthread_join((pthread_t)thr, &r);
  if (!rc && res) *res = (int)(intptr_t)r;
  return result(rc);
}

int thrd_detach(thrd_t thr) { return result(pthread_detach((pthread_t)thr)); }

int mtx_init(mtx_t *m, int type) {
  pthread_mutexattr_t a;
  pthread_mutexattr_init(&a);
  if (type & mtx_recursive) pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
  int rc = pthread_mutex_init((pthread_mutex_t *)m, &a);
  pthread_mutexattr_destroy(&a);
  return result(rc);
}
int mtx_lock(mtx_t *m) { return result(pthread_mutex_lock((pthread_mutex_t *)m)); }
int mtx_trylock(mtx_t *m) { return result(pthread_mutex_trylock((pthread_mutex_t *)m)); }
int mtx_unlock(mtx_t *m) { return result(pthread_mutex_unlock((pthread_mutex_t *)m)); }
void mtx_destroy(mtx_t *m) { pthread_mutex_destroy((pthread_mutex_t *)m); }

int cnd_init(cnd_t *c) { return result(pthread_cond_init((pthread_cond_t *)c, NULL)); }
int cnd_signal(cnd_t *c) { return result(pthread_cond_signal((pthread_cond_t *)c)); }
int cnd_broadcast(cnd_t *c) { return result(pthread_cond_broadcast((pthread_cond_t *)c)); }
int cnd_wait(cnd_t *c, mtx_t *m) { return result(pthread_cond_wait((pthread_cond_t *)c, (pthread_mutex_t *)m)); }
int cnd_timedwait(cnd_t *restrict c, mtx_t *restrict m, const struct timespec *restrict ts) {
  return result(pthread_cond_timedwait((pthread_cond_t *)c, (pthread_mutex_t *)m, ts));
}
void cnd_destroy(cnd_t *c) { pthread_cond_destroy((pthread_cond_t *)c); }
