/* The dead-letter producer of the live worker (SPEC.md section 2): a
 * rejected message goes, byte for byte, to kafka.dlq_topic with its
 * x-error-* and x-source-* headers (kafka_produce_reject); its source offset
 * stays uncommitted (offsets.h) until the topic acknowledged it. A failed
 * delivery is kept and produced again, for as long as it takes.
 *
 * Threads: a deadletter_t belongs to the consumer thread; its delivery
 * reports run inside deadletter_poll on that thread. */
#ifndef DEADLETTER_H
#define DEADLETTER_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "command.h"
#include "config.h"
#include "offsets.h"

typedef struct deadletter deadletter_t;

/* The producer (acks=all, idempotent) for cfg's dead-letter topic; offsets
 * is borrowed and told of acknowledgements. NULL with err filled when
 * librdkafka refuses the configuration. deadletter_destroy(NULL) is safe. */
deadletter_t *deadletter_new(const config_t *cfg, offsets_t *offsets, char *err, size_t errsz);
void deadletter_destroy(deadletter_t *d);

/* Produces m (consumed from partition p) with the reason; false when the
 * producer refused it for good (not a full queue, which is waited out). */
bool deadletter_reject(deadletter_t *d, offsets_part_t *p, const rd_kafka_message_t *m, const model_reject_t *rej);
/* Serves delivery reports (waiting up to timeout_ms) and produces again
 * what failed. */
void deadletter_poll(deadletter_t *d, int timeout_ms);
/* True while a rejected message awaits its acknowledgement. */
bool deadletter_pending(const deadletter_t *d);
/* Bytes of rejected messages not yet acknowledged (part of the memory bound). */
uint64_t deadletter_bytes(const deadletter_t *d);

#endif
