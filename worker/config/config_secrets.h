/* Which values of a configuration are secrets: the keys the table marks
 * CONFIG_SECRET (store.uri, whose password and credential options are the
 * secret part), every string read through a _file key, and librdkafka's
 * sensitive properties. Log lines are scrubbed of them (config_load's
 * errors, then every line once `run` or `replay` has loaded), and `config
 * show` masks the same ones. */
#ifndef CONFIG_SECRETS_H
#define CONFIG_SECRETS_H

#include <stdbool.h>

#include "config_table.h"
#include "config_values.h"

/* A string read from a _file key is a secret (numbers and enums are not:
 * "100" would then be masked in every log line). */
bool config_prop_is_secret(const config_prop_t *p, const config_t *cfg);
/* A MongoDB URI: only its password and credential options are secret. */
bool config_prop_is_uri(const config_prop_t *p);
/* kafka.rdkafka.<property>: read from a file, or sensitive to librdkafka. */
bool config_rdkafka_is_secret(const config_kv_t *kv);

/* Adds every secret of cfg to set (redact.h): store.uri's password and
 * credential options, librdkafka's sensitive properties, and every string
 * read through a _file key. `run` and `replay` add them to redact_global()
 * before any library sees the configuration, so that log lines are
 * scrubbed of them. */
struct redact_set;
void config_collect_secrets(const config_t *cfg, struct redact_set *set);

#endif
