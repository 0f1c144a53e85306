#include "kafka.h"

#include "log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool kafka_conf_set(rd_kafka_conf_t *conf, const char *name, const char *value, char *errstr, size_t errsz) {
  char why[256];
  if (rd_kafka_conf_set(conf, name, value, why, sizeof why) == RD_KAFKA_CONF_OK) return true;
  snprintf(errstr, errsz, "%s: %s", name, why);
  return false;
}

static bool set_pairs(rd_kafka_conf_t *conf, const char *const *kv, char *errstr, size_t errsz) {
  for (; kv && kv[0]; kv += 2)
    if (!kafka_conf_set(conf, kv[0], kv[1], errstr, errsz)) return false;
  return true;
}

const kafka_default_t kafka_defaults[] = {
    {KAFKA_RUN_CONSUMER, "partition.assignment.strategy", "cooperative-sticky",
     "a rebalance moves only the partitions that must move"},
    {KAFKA_RUN_CONSUMER, "auto.offset.reset", "earliest", "a new group starts from the oldest command"},
    {KAFKA_RUN_CONSUMER, "session.timeout.ms", "10000", "a dead worker's partitions move within seconds"},
    /* Once a partition's queue holds queued.min.messages, librdkafka 2.0
     * (Debian's) fetches it again only after a fixed 1 s backoff (its
     * issue 2879; fetch.queue.backoff.ms came in 2.2), so the queues must
     * hold about a second of the merge. With the pipelined writer the
     * consumer drained 20,000 per partition well within that second and then
     * idled (W1 at 200,000 commands: 20% of replay). 1,000,000 commands over
     * 6 partitions: 50,000 -> 86 k commands/s, peak RSS 59 MiB; 100,000
     * (librdkafka's own default) -> 155 k/s, 90 MiB; 200,000 -> 206 k/s,
     * 116 MiB. 100,000 held ~55 MiB of prefetch in a long backlog, which
     * with batch.max_pending_bytes stays inside the manifests' 256 MiB
     * (docs/BENCHMARKS.md, "Pipelined writer"). */
    {KAFKA_RUN_CONSUMER, "queued.min.messages", "100000",
     "about a second of the merge: librdkafka 2.0 refetches a full queue only after 1 s"},
    {KAFKA_RUN_CONSUMER, "queued.max.messages.kbytes", "32768", "a cap across many partitions"},
    {KAFKA_DLQ_PRODUCER, "linger.ms", "5", "rejects are rare: send them at once (acks=all and idempotence are "
                                           "forced)"},
    {KAFKA_DLQ_PRODUCER, "message.timeout.ms", "60000",
     "an undelivered reject is produced again by the worker; its offset stays uncommitted meanwhile"},
    /* At librdkafka's 100,000 the fetcher idled between refills and a replay
     * ran at half speed waiting on it (docs/BENCHMARKS.md); 500,000 keeps
     * every partition's queue ahead of the merge. */
    {KAFKA_REPLAY_CONSUMER, "queued.min.messages", "500000",
     "a replay is bound by fetching: keeps every partition's queue ahead of the merge"},
    {KAFKA_REPLAY_CONSUMER, "queued.max.messages.kbytes", "262144", "the same, at most ~100 MB per partition"},
    {KAFKA_REPLAY_CONSUMER, "fetch.max.bytes", "104857600", "the same"},
};
const size_t kafka_defaults_count = sizeof kafka_defaults / sizeof kafka_defaults[0];

const char *kafka_client_name(kafka_client_t client) {
  switch (client) {
    case KAFKA_RUN_CONSUMER: return "`run` consumer";
    case KAFKA_DLQ_PRODUCER: return "dead-letter producer";
    default: return "`replay` consumer";
  }
}

/* librdkafka's syslog levels onto ours, so its messages are structured log
 * lines like the rest. */
static void log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
  config_log_level_t l = level <= 3 ? LOG_LEVEL_ERROR : level == 4 ? LOG_LEVEL_WARN : level <= 6 ? LOG_LEVEL_INFO
                                                                                                   : LOG_LEVEL_DEBUG;
  log_emit(l, buf, "component", LOG_STR, "rdkafka", "client", LOG_STR, rd_kafka_name(rk), "facility", LOG_STR, fac,
           NULL);
}

static void error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
  (void)opaque;
  /* Most are transient (broker down): librdkafka retries by itself. */
  log_emit(err == RD_KAFKA_RESP_ERR__FATAL ? LOG_LEVEL_ERROR : LOG_LEVEL_WARN, reason, "component", LOG_STR,
           "rdkafka", "client", LOG_STR, rd_kafka_name(rk), "error", LOG_STR,
           rd_kafka_err2name((rd_kafka_resp_err_t)err), NULL);
}

rd_kafka_conf_t *kafka_conf_new(const config_t *cfg, kafka_client_t client, const char *const *forced,
                                char *errstr, size_t errsz) {
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  bool ok = kafka_conf_set(conf, "bootstrap.servers", cfg->kafka_brokers, errstr, errsz) &&
            kafka_conf_set(conf, "client.id", "aggregator", errstr, errsz);
  for (size_t i = 0; ok && i < kafka_defaults_count; i++)
    if (kafka_defaults[i].client == client)
      ok = kafka_conf_set(conf, kafka_defaults[i].name, kafka_defaults[i].value, errstr, errsz);
  for (size_t i = 0; ok && i < cfg->rdkafka_count; i++)
    ok = kafka_conf_set(conf, cfg->rdkafka[i].name, cfg->rdkafka[i].value, errstr, errsz);
  ok = ok && set_pairs(conf, forced, errstr, errsz);
  rd_kafka_conf_set_log_cb(conf, log_cb);
  rd_kafka_conf_set_error_cb(conf, error_cb);
  if (!ok) {
    rd_kafka_conf_destroy(conf);
    return NULL;
  }
  return conf;
}

rd_kafka_topic_partition_list_t *kafka_topic_list(const config_t *cfg) {
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(4);
  char *copy = strdup(cfg->kafka_topics), *save = NULL;
  for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    while (*t == ' ' || *t == '\t') t++;
    char *end = t + strlen(t);
    while (end > t && (end[-1] == ' ' || end[-1] == '\t')) *--end = '\0';
    if (*t) rd_kafka_topic_partition_list_add(l, t, RD_KAFKA_PARTITION_UA);
  }
  free(copy);
  return l;
}

rd_kafka_resp_err_t kafka_produce_reject(rd_kafka_t *producer, const char *dlq_topic, const rd_kafka_message_t *m,
                                         const model_reject_t *rej, void *opaque) {
  char partition[16], offset[24];
  snprintf(partition, sizeof partition, "%" PRId32, m->partition);
  snprintf(offset, sizeof offset, "%" PRId64, m->offset);
  const char *code = model_reject_code_name(rej->code);
  const char *topic = rd_kafka_topic_name(m->rkt);
  return rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(dlq_topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                           RD_KAFKA_V_VALUE(m->payload, m->len), RD_KAFKA_V_KEY(m->key, m->key_len),
                           RD_KAFKA_V_HEADER("x-error-code", code, -1),
                           RD_KAFKA_V_HEADER("x-error-detail", rej->detail, -1),
                           RD_KAFKA_V_HEADER("x-source-topic", topic, -1),
                           RD_KAFKA_V_HEADER("x-source-partition", partition, -1),
                           RD_KAFKA_V_HEADER("x-source-offset", offset, -1), RD_KAFKA_V_OPAQUE(opaque),
                           RD_KAFKA_V_END);
}
