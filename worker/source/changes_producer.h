/* The change-event producer: one Kafka message per acknowledged write of an
 * aggregate (SPEC.md section 5, "Change events"), to changes.topic, keyed
 * by the document's _id, with a header x-rev (the rev as decimal text); the
 * value is the caller's (model_change_event_json). The producer is
 * idempotent with acks=all, configured as the dead-letter producer is
 * (kafka_producer_new, kafka.h).
 *
 * Offsets commit only past announced writes, and tickets say how far that
 * is. Events are grouped: changes_ticket(seq) closes the group of every
 * event produced since the previous ticket, saying that they announce
 * writes of commands below seq (the batch's seq, pipeline/batch.h "What is
 * durable"). changes_acked_seq then answers how far the caller may commit:
 * the seq of the latest ticket that is acknowledged in full together with
 * every ticket before it, never more than the batch's durable seq. Events
 * produced after the last ticket belong to no ticket and hold nothing back:
 * the caller tickets them before it lets durable pass the writes they
 * announce (the batch announces before its flush's seq counts as durable).
 * A ticket holds back until each of its events is acknowledged, however
 * many attempts that takes; a ticket without events is acknowledged once
 * every ticket before it is. Ticket seqs are nondecreasing (a smaller one
 * counts as the previous one's). Each event and ticket costs O(1):
 * tickets are a FIFO with a count of unacknowledged events each.
 *
 * Refused and failed deliveries are kept and produced again, in the order
 * they failed (and new events queue behind them), no sooner than
 * CHANGES_RETRY_MS after the failure, for as long as it takes: a topic
 * deleted while running, brokers that refuse the producer. A message that
 * can never be delivered (larger than the producer or the topic allows, a
 * fatal error of the idempotent producer) stops the producer: it is logged
 * (error), changes_produce answers false from then on, and its ticket never
 * completes, so nothing is committed past it.
 *
 * While delivery fails the worker says so, as for dead letters
 * (deadletter.h): the first failure is logged at once (warn; then at most
 * one line per CHANGES_WARN_INTERVAL_MS with the count of failures in
 * between), every failed attempt counts in
 * aggregator_change_events_total{result="error"}, and /readyz answers 503
 * (metrics_set_changes_failing) until an event is acknowledged again, which
 * is logged too. "Failing" is a failure librdkafka reports (a refused
 * produce, a failed delivery report) or no acknowledgement at all for
 * CHANGES_STALL_MS while events are outstanding. The producer keeps
 * aggregator_change_events_pending (events produced and not acknowledged)
 * and aggregator_change_events_oldest_pending_seconds (how long ago the
 * oldest of them was produced, read against the producer's clock when
 * /metrics is scraped; 0 when none). These gauges and the failing input of
 * readiness are process-wide: one producer per process records them.
 *
 * Memory: the producer owns a copy of each event (key and value) until it
 * is acknowledged; changes_bytes counts them for the memory bound.
 *
 * Threads: a changes_t belongs to one thread (the consumer's, or the
 * replay's), which makes every call; librdkafka's delivery reports are
 * served inside changes_poll and changes_produce (a full queue is polled)
 * on that thread, so nothing of it is shared and it takes no lock. */
#ifndef CHANGES_H
#define CHANGES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/clock.h"
#include "config/config.h"

#define CHANGES_WARN_INTERVAL_MS 10000
#define CHANGES_STALL_MS 5000
#define CHANGES_RETRY_MS 1000

typedef struct changes changes_t;

/* The producer (acks=all, idempotent) for cfg->changes_topic, which must be
 * set; clock is borrowed and measures the intervals above and the age of
 * the oldest pending event (it must outlive the producer). NULL with err
 * filled when librdkafka refuses the configuration. */
changes_t *changes_new(const config_t *cfg, const clock_source_t *clock, char *err, size_t errsz);
/* Drops what is not acknowledged (the caller polls until !changes_pending
 * first when it wants it delivered). NULL-safe. */
void changes_destroy(changes_t *c);

/* Produces one event: key (the document's _id) and value are copied, header
 * x-rev is rev in decimal. A produce the producer refuses for now (queue
 * full: polled and waited out; topic unknown, ...) is kept and produced
 * again. false only when it can never succeed (larger than the producer
 * allows, a fatal producer error, or an earlier event that can never be
 * delivered), logged: the caller must stop rather than commit past it. */
bool changes_produce(changes_t *c, const char *key, size_t key_len, int64_t rev, const void *value, size_t len);
/* Every event produced so far (since the previous ticket) announces writes
 * of commands below seq: a ticket. */
void changes_ticket(changes_t *c, uint64_t seq);
/* The greatest seq S such that every ticket at or below S is acknowledged
 * in full (the seq of the latest such ticket, or 0 before any), or
 * `durable` (the batch's durable seq) when no ticket is outstanding; never
 * more than durable. A caller commits forward only: with a ticket
 * outstanding the answer may be below a durable seq answered earlier. */
uint64_t changes_acked_seq(const changes_t *c, uint64_t durable);
/* Serves delivery reports (waiting up to timeout_ms), produces again what
 * failed once its retry is due, and updates the failing state (log,
 * metrics, readiness). */
void changes_poll(changes_t *c, int timeout_ms);
/* The largest value an event with a key of key_len bytes can have: one
 * larger is refused for good (the producer's message.max.bytes,
 * kafka.rdkafka.message.max.bytes). */
size_t changes_max_value(const changes_t *c, size_t key_len);
/* True while an event produced is not acknowledged. */
bool changes_pending(const changes_t *c);
/* Bytes (keys and values) of the events not acknowledged: part of the
 * memory bound. */
uint64_t changes_bytes(const changes_t *c);
/* True while delivery is failing (see above). */
bool changes_failing(const changes_t *c);
/* True once an event can never be delivered (see above): the caller stops. */
bool changes_broken(const changes_t *c);

#endif
