/* Building the configured librdkafka clients offline (config_clients.h). */
#include "config_clients.h"

#include <stdio.h>

#include <librdkafka/rdkafka.h>

#include "source/kafka.h"

static const struct {
  kafka_client_t client;
  rd_kafka_type_t type;
} clients[] = {
    {KAFKA_RUN_CONSUMER, RD_KAFKA_CONSUMER},
    {KAFKA_DLQ_PRODUCER, RD_KAFKA_PRODUCER},
    {KAFKA_REPLAY_CONSUMER, RD_KAFKA_CONSUMER},
};

bool config_clients_check(const config_t *cfg, char *why, size_t why_size) {
  if (!cfg->rdkafka_count) return true;
  for (size_t i = 0; i < sizeof clients / sizeof clients[0]; i++) {
    char errstr[512] = "";
    rd_kafka_conf_t *conf = kafka_conf_new(cfg, clients[i].client, NULL, errstr, sizeof errstr);
    /* No bootstrap server: the client never connects. No log callback: its
     * note that it has no broker to connect to is not ours to print. */
    if (conf && rd_kafka_conf_set(conf, "bootstrap.servers", "", errstr, sizeof errstr) != RD_KAFKA_CONF_OK) {
      rd_kafka_conf_destroy(conf);
      conf = NULL;
    }
    rd_kafka_t *rk = NULL;
    if (conf) {
      rd_kafka_conf_set_log_cb(conf, NULL);
      rd_kafka_conf_set_error_cb(conf, NULL);
      rk = rd_kafka_new(clients[i].type, conf, errstr, sizeof errstr);
      if (!rk) rd_kafka_conf_destroy(conf); /* rd_kafka_new owns it only on success */
    }
    if (!rk) {
      snprintf(why, why_size, "kafka.rdkafka: the %s: librdkafka: %s", kafka_client_name(clients[i].client), errstr);
      return false;
    }
    rd_kafka_destroy(rk);
  }
  return true;
}
