/* The out-of-memory policy, in one place: an allocation that fails ends the
 * process.
 *
 * Why abort rather than report: every aggregate the worker holds is either
 * durable in the store or re-read from Kafka after a restart (offsets are
 * committed only once their effect is durable), so dying
 * loses nothing a restart does not rebuild, while an error path per malloc
 * would be hundreds of branches that no test exercises. On Linux a failed
 * malloc is rare (overcommit hands out address space and the OOM killer ends
 * the process later anyway); when it happens, a clear line on stderr and a
 * core dump beat a half-working worker. The libraries agree: libbson aborts
 * on allocation failure and librdkafka asserts.
 *
 * So: use these wrappers (or check and call oom_abort()) and never write a
 * NULL-means-out-of-memory path. oom_abort() allocates nothing: it can run
 * when the heap is exhausted or corrupt. */
#ifndef OOM_H
#define OOM_H

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Prints "aggregator: out of memory" on stderr and aborts. */
_Noreturn static inline void oom_abort(void) {
  static const char msg[] = "aggregator: out of memory\n";
  ssize_t ignored = write(STDERR_FILENO, msg, sizeof msg - 1);
  (void)ignored;
  abort();
}

/* malloc, calloc, realloc, strdup and strndup that never return NULL.
 * A zero size still returns a unique pointer (one byte is asked for), so a
 * NULL result always means failure. */
static inline void *oom_malloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) oom_abort();
  return p;
}

static inline void *oom_calloc(size_t count, size_t size) {
  void *p = calloc(count ? count : 1, size ? size : 1);
  if (!p) oom_abort();
  return p;
}

static inline void *oom_realloc(void *ptr, size_t n) {
  void *p = realloc(ptr, n ? n : 1);
  if (!p) oom_abort();
  return p;
}

static inline char *oom_strdup(const char *s) {
  char *d = strdup(s);
  if (!d) oom_abort();
  return d;
}

/* At most n bytes of s, NUL-terminated. */
static inline char *oom_strndup(const char *s, size_t n) {
  /* Not strndup: s need not be NUL-terminated, and ASan's strict string
   * checks (scripts/test) read strndup's source up to its NUL. */
  const char *end = memchr(s, '\0', n);
  if (end) n = (size_t)(end - s);
  char *d = oom_malloc(n + 1);
  memcpy(d, s, n);
  d[n] = '\0';
  return d;
}

#endif
