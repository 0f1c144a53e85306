/* The failing state of a producer whose acknowledgements hold offsets back
 * (the dead-letter and change-event producers: deadletter.h and changes_producer.h
 * say what it means for each): one policy, so that operators read the same
 * signs from both.
 *
 * Failing is a failed attempt librdkafka reports (a refused produce, a
 * failed delivery report) or no delivery report at all for stall_ms while
 * messages are in flight (librdkafka reports a broker that does not answer
 * only after message.timeout.ms). The first failure is logged at once
 * (warn; then at most one line per warn_interval_ms with the count of
 * failures in between, not one per message), every failed attempt is
 * counted, the readiness input says failing until an acknowledgement, and
 * the recovery is logged before readiness can say ready again. A message
 * that failed is due again no sooner than retry_ms after the failure: a
 * topic that does not exist fails a produce at once, and retrying it in a
 * tight loop would only burn CPU and inflate the counter. Times are on the
 * monotonic clock of the caller's clock_source_t.
 *
 * Ownership and threads: embedded in its producer and used by the thread
 * that owns it; the text and topic are borrowed. */
#ifndef DELIVERY_H
#define DELIVERY_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* What one producer says and records. Its lines read "<what> delivery
 * failing: <waits>, not ready", "<what> delivery still failing", "<what>
 * delivery works again", and a stall's cause "no acknowledgement from
 * <from> for N ms". */
typedef struct delivery_policy {
  const char *what, *waits, *from;
  void (*set_failing)(bool failing); /* the readiness input */
  void (*count_error)(void);         /* one failed attempt */
  int64_t warn_interval_ms, stall_ms, retry_ms;
} delivery_policy_t;

typedef struct delivery {
  const delivery_policy_t *policy;
  const char *topic;
  size_t inflight;      /* produced, delivery report not yet served */
  int64_t progress_ms;  /* last delivery report, or when inflight left 0 */
  int64_t retry_due_ms; /* failed messages wait for this */
  bool failing, warned;
  bool ever_warned; /* last_warn_ms holds a time */
  int64_t failing_since_ms, last_warn_ms;
  uint64_t failures; /* failed attempts since the last warning */
  char cause[160];   /* the latest failure, for the log */
} delivery_t;

/* Not failing, nothing in flight; readiness told so. */
void delivery_init(delivery_t *d, const delivery_policy_t *policy, const char *topic);
/* A message handed to librdkafka / its delivery report served. */
void delivery_produced(delivery_t *d, int64_t now);
void delivery_reported(delivery_t *d, int64_t now);
/* One failed attempt (counted; the retry is due retry_ms later); pending
 * is the producer's count of messages not acknowledged, for the log. */
void delivery_failed(delivery_t *d, int64_t now, rd_kafka_resp_err_t err, size_t pending);
/* Failing, for a cause that is not an attempt (not counted). */
void delivery_set_failing(delivery_t *d, int64_t now, const char *cause, size_t pending);
/* An acknowledgement: failing ends (logged). */
void delivery_acked(delivery_t *d, int64_t now, size_t pending);
/* From the producer's poll: a stall becomes failing, and a failing spell
 * is logged again once warn_interval_ms has passed. */
void delivery_check(delivery_t *d, int64_t now, size_t pending);
/* Errors after which a message can never be produced (larger than the
 * producer allows, refused arguments, a fatal error of the idempotent
 * producer): the worker stops rather than retry forever. */
bool delivery_permanent(rd_kafka_resp_err_t err);

#endif
