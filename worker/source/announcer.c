#include "announcer.h"

#include <signal.h>
#include <stdlib.h>

#include "base/log.h"
#include "oom.h"

announcer_t *announcer_new(const config_t *cfg, const clock_source_t *clock, char *err, size_t errsz) {
  changes_t *changes = changes_new(cfg, clock, err, errsz);
  if (!changes) return NULL;
  announcer_t *a = oom_malloc(sizeof *a);
  *a = (announcer_t){.changes = changes, .include_document = cfg->changes_include_document != 0,
                     .value = MODEL_BUF_INIT};
  const char *fault = getenv("AGG_FAULT_KILL_AFTER_WRITE");
  if (fault && *fault) {
    a->kill_at = strtoll(fault, NULL, 10);
    log_warn("fault point armed: the process kills itself before announcing a write", "write", LOG_INT, a->kill_at);
  }
  return a;
}

void announcer_destroy(announcer_t *a) {
  if (!a) return;
  changes_destroy(a->changes);
  model_buf_destroy(&a->value);
  free(a);
}

bool announcer_ok(const announcer_t *a) { return !a->failed && !changes_broken(a->changes); }

void announcer_announce(void *ctx, const batch_written_t *w) {
  announcer_t *a = ctx;
  if (w->sent && a->kill_at && ++a->written == a->kill_at) raise(SIGKILL);
  size_t key_len;
  const char *key = model_aggregate_key(w->agg, &key_len);
  model_buf_clear(&a->value);
  model_change_event_json(w->agg, w->rev, w->updated_at_ms, w->changed, a->include_document, &a->value);
  size_t max = changes_max_value(a->changes, key_len);
  if (a->value.len > max && a->include_document) {
    /* A document the producer cannot carry: announced without it, as with
     * changes.include_document = false, rather than never (docs/CHANGES.md). */
    log_warn("change event announced without its document: larger than the producer's message.max.bytes",
             "_id", LOG_STR, key, "rev", LOG_INT, w->rev, "bytes", LOG_INT, (int64_t)a->value.len, "max", LOG_INT,
             (int64_t)max);
    model_buf_clear(&a->value);
    model_change_event_json(w->agg, w->rev, w->updated_at_ms, w->changed, false, &a->value);
    a->documents_left_out++;
  }
  if (!changes_produce(a->changes, key, key_len, w->rev, a->value.data, a->value.len)) a->failed = true;
  a->events++;
}
