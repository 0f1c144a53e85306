/* `config check --connect`: reaches what the configuration names, each
 * within a bound, and says what it could not reach.
 *
 * Kafka: every broker of kafka.brokers on its own (a metadata request to
 * that broker alone), then, through all of them, the command topics, the
 * dead-letter topic and the change topic when set (kafka_check_topics). The bound is librdkafka's
 * socket.connection.setup.timeout.ms (30 s by default, set with
 * kafka.rdkafka.socket.connection.setup.timeout.ms), the same bound `run`
 * waits at start for a broker to confirm its topics. The brokers are tried
 * at once, so the wait is one bound, not one per broker.
 * The store: a ping, retried until store.connect_timeout_ms has passed
 * (the last attempt may end up to the store's server selection timeout,
 * 2 s unless store.uri says otherwise, after it). The bounds are measured
 * on the clock given; the requests' own timeouts are real waits.
 *
 * Above config.h, kafka.h and store.h; cli_config.c calls it. */
#ifndef CONFIG_CONNECT_H
#define CONFIG_CONNECT_H

#include <stdbool.h>
#include <stdio.h>

#include "base/clock.h"
#include "config/config.h"

/* Tries everything; writes one line per thing not reached to err_out
 * ("aggregator: cannot reach ...", scrubbed of the secrets in
 * redact_global()) and returns false, or returns true with reached (size
 * reached_size) naming what answered. */
bool config_connect_check(const config_t *cfg, const clock_source_t *clock, FILE *err_out, char *reached,
                          size_t reached_size);

#endif
