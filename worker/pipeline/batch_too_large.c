#include "batch_too_large.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "metrics/metrics.h"
#include "oom.h"

void batch_too_large_free(batch_too_large_t *t) {
  for (size_t i = 0; i < t->n; i++) free(t->ids[i]);
  free(t->ids);
  *t = (batch_too_large_t){0};
}

/* True the first time id is refused (and always once the memory is full). */
static bool first_time(batch_too_large_t *t, const char *id) {
  for (size_t i = 0; i < t->n; i++)
    if (!strcmp(t->ids[i], id)) return false;
  if (t->n == BATCH_TOO_LARGE_IDS_MAX) return true;
  t->ids = oom_realloc(t->ids, (t->n + 1) * sizeof *t->ids);
  t->ids[t->n++] = oom_strdup(id);
  return true;
}

void batch_too_large_refused(batch_too_large_t *t, const char *id, size_t bytes, size_t limit) {
  metrics_store_too_large(1);
  if (!first_time(t, id)) return;
  log_error("aggregate document refused by the store as too large: its changes are kept and retried, its "
            "partitions' commits stop behind it",
            "id", LOG_STR, id, "bytes", LOG_INT, (int64_t)bytes, "limit", LOG_INT, (int64_t)limit, NULL);
}
