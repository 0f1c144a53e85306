/* Whether the live consumer may do its work, as readiness needs it: the
 * brokers let it in (no refusal, kafka_refusal) and its principal holds
 * every grant the worker needs (kafka_check_grants). A fault here does not
 * heal by waiting, yet an operator can fix it without a restart (a grant
 * added, a password set back), so `run` stays up, not ready, with the
 * cause in its log and its not-ready reason, and becomes ready again by
 * itself once a probe finds everything granted.
 *
 * The consumer (consumer.c) owns one: kafka_access_start once its client
 * exists, kafka_access_error for each error the consumer is handed,
 * kafka_access_tick once a second. Main-loop thread only. Above kafka.h
 * and metrics.h. */
#ifndef KAFKA_ACCESS_H
#define KAFKA_ACCESS_H

#include <librdkafka/rdkafka.h>
#include <stdint.h>

#include "base/clock.h"
#include "config/config.h"

typedef struct kafka_access kafka_access_t;

/* Probes the grants through rk (kafka_check_grants, all four) at once:
 * each missing one is logged as an error, and the first one is the
 * not-ready reason (metrics_set_source_failing) until a probe finds them
 * all. rk and cfg must outlive it. */
kafka_access_t *kafka_access_start(rd_kafka_t *rk, const config_t *cfg, const clock_source_t *clock);
/* An error the consumer was handed (a message's err): an authorization
 * error of a fetch or of the group, or a refusal recorded meanwhile, makes
 * the source failing with it at once, and the next tick probes. */
void kafka_access_error(kafka_access_t *a, rd_kafka_resp_err_t err, const char *text);
/* Once a second: a refusal recorded since (kafka_refusal) fails the
 * source; while failing, a probe every KAFKA_ACCESS_PROBE_MS (bounded by
 * KAFKA_ACCESS_PROBE_TIMEOUT_MS) clears it once everything is granted. */
void kafka_access_tick(kafka_access_t *a);
void kafka_access_destroy(kafka_access_t *a);

#define KAFKA_ACCESS_PROBE_MS 5000
#define KAFKA_ACCESS_PROBE_TIMEOUT_MS 2000

#endif
