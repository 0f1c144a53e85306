/* The dead-letter producer of the live worker: a rejected message goes,
 * byte for byte, to kafka.dlq_topic with its x-error-* and x-source-*
 * headers (kafka_reject_headers); its source offset stays uncommitted
 * (offsets.h) until the topic acknowledges it. A failed delivery is kept and
 * produced again, for as long as it takes.
 *
 * While delivery fails (the topic is deleted, the brokers refuse the
 * producer, nothing is acknowledged) the worker must say so: the first
 * failure is logged at once (warn; then at most one line per
 * DEADLETTER_WARN_INTERVAL_MS with the count of failures in between, not
 * one per message), every failed attempt counts in
 * aggregator_dead_letter_deliveries_total{result="error"}, and /readyz
 * answers 503 (metrics_set_dead_letter_failing) until a delivery is
 * acknowledged again, which is logged too. "Failing" is either a failure
 * librdkafka reports (a refused produce, a failed delivery report) or no
 * acknowledgement at all for DEADLETTER_STALL_MS while dead letters are
 * outstanding (librdkafka reports a broker that does not answer only after
 * message.timeout.ms). These intervals are durations, on the monotonic
 * clock the producer is given.
 *
 * A failed message is produced again no sooner than DEADLETTER_RETRY_MS
 * after its failure: a topic that does not exist fails a produce at once,
 * and retrying it in a tight loop would only burn CPU and inflate the
 * counter.
 *
 * Threads: a deadletter_t belongs to the consumer thread; its delivery
 * reports run inside deadletter_poll on that thread. */
#ifndef DEADLETTER_H
#define DEADLETTER_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "command.h"
#include "config/config.h"
#include "kafka.h"
#include "offsets.h"

#define DEADLETTER_WARN_INTERVAL_MS 10000
#define DEADLETTER_STALL_MS 5000
#define DEADLETTER_RETRY_MS 1000

typedef struct deadletter deadletter_t;

/* The producer (acks=all, idempotent) for cfg's dead-letter topic; offsets
 * is borrowed and told of acknowledgements, clock is borrowed and measures
 * the intervals above (it must outlive the producer). NULL with err filled
 * when librdkafka refuses the configuration. deadletter_destroy(NULL) is
 * safe. */
deadletter_t *deadletter_new(const config_t *cfg, offsets_t *offsets, const clock_source_t *clock, char *err,
                             size_t errsz);
void deadletter_destroy(deadletter_t *d);

/* Produces src (consumed from partition p) with the reason. A produce the
 * producer refuses for now (queue full: waited out; topic unknown, ...: kept
 * and produced again) is not an error; false only when it can never succeed
 * (a message larger than the producer allows, a fatal producer error), which
 * is logged: the worker must stop rather than commit past the reject. */
bool deadletter_reject(deadletter_t *d, offsets_part_t *p, const kafka_source_t *src, const model_reject_t *rej);
/* Serves delivery reports (waiting up to timeout_ms), produces again what
 * failed once its retry is due, and updates the failing state (log, metrics). */
void deadletter_poll(deadletter_t *d, int timeout_ms);
/* True while a rejected message awaits its acknowledgement. */
bool deadletter_pending(const deadletter_t *d);
/* Bytes of rejected messages not yet acknowledged (part of the memory bound). */
uint64_t deadletter_bytes(const deadletter_t *d);
/* True while delivery is failing (see above). */
bool deadletter_failing(const deadletter_t *d);

#endif
