/* The librdkafka clients a configuration makes, built and dropped at load
 * time without contacting any broker: librdkafka checks more in
 * rd_kafka_new than property by property (a SASL mechanism it was built
 * without, an unreadable or malformed key or certificate, OAUTHBEARER/OIDC
 * settings that lack a part), and `run` would otherwise exit at start, or
 * crash-loop, on what `config check` called OK.
 *
 * Above config.h and kafka.h; cli_config.c calls it for every command that
 * loads a configuration. */
#ifndef CONFIG_CLIENTS_H
#define CONFIG_CLIENTS_H

#include <stdbool.h>
#include <stddef.h>

#include "config/config.h"

/* Creates each client the worker makes (run consumer, dead-letter producer,
 * replay consumer) from cfg with no bootstrap server, and destroys it.
 * Returns false with why ("kafka.rdkafka: the run consumer: librdkafka's
 * message") for the first client librdkafka refuses. Without any
 * kafka.rdkafka.* key there is nothing librdkafka can refuse: it returns
 * true at once. */
bool config_clients_check(const config_t *cfg, char *why, size_t why_size);

#endif
