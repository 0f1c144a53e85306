/* The configuration's values: what config_load (config.h) fills and the
 * worker reads. Each field of config_t but the bookkeeping at its end is one
 * row of the property table (config_table.h), which says how it is parsed,
 * shown and reloaded; adding a key is adding its field here and its row
 * there. A config_t belongs to the thread that loaded it; a reload merges a
 * new one into it on the thread that reads it (config_apply_live). */
#ifndef CONFIG_VALUES_H
#define CONFIG_VALUES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/log.h"

/* Where a value came from, for `config show --origin`: the source that won
 * (defaults < file < environment < --set). */
typedef enum { CONFIG_ORIGIN_DEFAULT, CONFIG_ORIGIN_FILE, CONFIG_ORIGIN_ENV, CONFIG_ORIGIN_SET } config_origin_kind_t;

typedef struct config_origin {
  config_origin_kind_t kind;
  int line;         /* FILE: the line in config_t.source_file */
  char env[160];    /* ENV: the variable's name */
  char *value_file; /* given as key_file: the file the value was read from (owned), else NULL */
} config_origin_t;

/* A librdkafka property passed through from `[kafka] rdkafka.<name> = value`. */
typedef struct config_kv {
  char *name;  /* without the "rdkafka." prefix */
  char *value;
  bool from_file; /* read through rdkafka.<name>_file: a secret */
  config_origin_t origin;
} config_kv_t;

/* kafka.group_protocol: how the `run` consumers of a group share the
 * partitions (kafka.h). */
typedef enum { CONFIG_GROUP_PROTOCOL_CONSUMER, CONFIG_GROUP_PROTOCOL_CLASSIC } config_group_protocol_t;

typedef struct config {
  char *kafka_brokers;
  char *kafka_topics; /* comma list */
  char *kafka_group;
  char *kafka_dlq_topic;
  config_group_protocol_t kafka_group_protocol;
  config_kv_t *rdkafka;
  size_t rdkafka_count;

  char *store_uri; /* secret: may carry credentials */
  char *store_database;
  char *store_collection;
  char *store_write_concern; /* "1", "majority", ... */
  char *store_shard_key;     /* comma list of tenant, assignment, _id; "" for none (store_shard.h) */
  int64_t store_connect_timeout_ms;

  int64_t batch_max_commands;
  int64_t batch_max_aggregates;
  int64_t batch_linger_ms;
  int64_t batch_max_pending_bytes;
  int64_t batch_stall_timeout_ms;

  int64_t retry_backoff_ms;
  int64_t retry_backoff_max_ms;

  int64_t cache_max_aggregates;
  int64_t cache_max_bytes;

  int64_t shutdown_timeout_ms;

  int64_t limits_max_command_bytes;

  int64_t replay_threads; /* 0 = one per CPU the process may use (cpus.h) */

  char *metrics_listen; /* "host:port", "" for none */

  char *changes_topic;          /* "" for no change events */
  int changes_include_document; /* an enum field: 0 false, 1 true */

  log_level_t log_level;
  log_format_t log_format;

  char *source_file; /* the file loaded, or NULL; owned */
  uint32_t from_file; /* bit i: config_props[i] was read through its _file key */
  config_origin_t origins[32]; /* [i]: where config_props[i]'s value came from (config_table.c asserts the size) */

  /* Set by config_load: one line per AGGREGATOR_ variable that names no
   * section (so no key), for the caller to print. Not errors: a wrapper
   * script may have variables of its own under the same prefix. */
  char **warnings;
  size_t warnings_count;
} config_t;

#endif
