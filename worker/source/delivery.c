#include "delivery.h"

#include <stdio.h>

#include "base/log.h"

static void warn_failing(delivery_t *d, int64_t now, bool first, size_t pending) {
  char msg[256];
  if (first) snprintf(msg, sizeof msg, "%s delivery failing: %s, not ready", d->policy->what, d->policy->waits);
  else snprintf(msg, sizeof msg, "%s delivery still failing", d->policy->what);
  log_warn(msg, "topic", LOG_STR, d->topic, "error",
           LOG_STR, d->cause, "pending", LOG_INT, (int64_t)pending, "failed_attempts", LOG_INT,
           (int64_t)d->failures, "failing_for_ms", LOG_INT, now - d->failing_since_ms);
  d->last_warn_ms = now;
  d->ever_warned = true;
  d->failures = 0;
  d->warned = true;
}

static void set_failing(delivery_t *d, int64_t now, size_t pending) {
  if (d->failing) return;
  d->failing = true;
  d->failing_since_ms = now;
  d->policy->set_failing(true);
  /* At once, unless a warning went out within the interval (a topic that
   * flaps must not flood the log). */
  if (!d->ever_warned || now - d->last_warn_ms >= d->policy->warn_interval_ms) warn_failing(d, now, true, pending);
}

void delivery_init(delivery_t *d, const delivery_policy_t *policy, const char *topic) {
  *d = (delivery_t){.policy = policy, .topic = topic};
  policy->set_failing(false);
}

void delivery_produced(delivery_t *d, int64_t now) {
  if (d->inflight++ == 0) d->progress_ms = now;
}

void delivery_reported(delivery_t *d, int64_t now) {
  if (d->inflight) d->inflight--;
  d->progress_ms = now;
}

void delivery_failed(delivery_t *d, int64_t now, rd_kafka_resp_err_t err, size_t pending) {
  d->policy->count_error();
  d->failures++;
  snprintf(d->cause, sizeof d->cause, "%s", rd_kafka_err2str(err));
  d->retry_due_ms = now + d->policy->retry_ms;
  set_failing(d, now, pending);
}

void delivery_set_failing(delivery_t *d, int64_t now, const char *cause, size_t pending) {
  snprintf(d->cause, sizeof d->cause, "%s", cause);
  set_failing(d, now, pending);
}

void delivery_acked(delivery_t *d, int64_t now, size_t pending) {
  if (!d->failing) return;
  d->failing = false;
  /* Logged before /readyz can say ready again: whoever sees it ready finds
   * the line that says why. */
  char msg[128];
  snprintf(msg, sizeof msg, "%s delivery works again", d->policy->what);
  if (d->warned)
    log_info(msg, "topic", LOG_STR, d->topic, "failed_for_ms", LOG_INT, now - d->failing_since_ms,
             "pending", LOG_INT, (int64_t)pending);
  d->warned = false;
  d->policy->set_failing(false);
}

void delivery_check(delivery_t *d, int64_t now, size_t pending) {
  /* No acknowledgement (nor failure) for a while with messages out:
   * librdkafka will only say so after message.timeout.ms. */
  if (d->inflight && now - d->progress_ms >= d->policy->stall_ms && !d->failing) {
    snprintf(d->cause, sizeof d->cause, "no acknowledgement from %s for %lld ms", d->policy->from, (long long)(now - d->progress_ms));
    set_failing(d, now, pending);
  }
  if (d->failing && now - d->last_warn_ms >= d->policy->warn_interval_ms) warn_failing(d, now, !d->warned, pending);
}

bool delivery_permanent(rd_kafka_resp_err_t err) {
  return err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE || err == RD_KAFKA_RESP_ERR__INVALID_ARG ||
         err == RD_KAFKA_RESP_ERR__FATAL;
}
