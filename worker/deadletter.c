#include "deadletter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kafka.h"
#include "log.h"
#include "oom.h"

/* What a delivery report needs to find the source offset again. The
 * partition may have been given up meanwhile: then offsets ignores it. */
typedef struct ref {
  char *topic;
  int32_t partition;
  int64_t offset;
} ref_t;

/* A dead-letter message whose delivery failed, kept to be produced again. */
typedef struct retry {
  struct retry *next;
  void *payload, *key;
  size_t len, key_len;
  rd_kafka_headers_t *headers;
  ref_t *ref;
} retry_t;

struct deadletter {
  rd_kafka_t *producer;
  char *topic;
  offsets_t *offsets;
  retry_t *retries;
  uint64_t bytes;
};

static void ref_free(ref_t *r) {
  if (!r) return;
  free(r->topic);
  free(r);
}

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  deadletter_t *d = opaque;
  ref_t *ref = m->_private;
  if (m->err) {
    /* Keep it: produced again by deadletter_poll. The source offset stays
     * uncommitted until it is acknowledged. */
    log_warn("dead-letter delivery failed, retrying", "error", LOG_STR, rd_kafka_err2str(m->err), "source_offset",
             LOG_INT, ref->offset);
    retry_t *r = oom_calloc(1, sizeof *r);
    r->payload = oom_malloc(m->len);
    r->key = m->key_len ? oom_malloc(m->key_len) : NULL;
    memcpy(r->payload, m->payload, m->len);
    r->len = m->len;
    if (m->key_len) memcpy(r->key, m->key, m->key_len);
    r->key_len = m->key_len;
    rd_kafka_headers_t *h = NULL;
    if (!rd_kafka_message_headers(m, &h) && h) r->headers = rd_kafka_headers_copy(h);
    r->ref = ref;
    r->next = d->retries;
    d->retries = r;
    return;
  }
  d->bytes -= m->len < d->bytes ? m->len : d->bytes;
  offsets_reject_done(d->offsets, ref->topic, ref->partition, ref->offset);
  ref_free(ref);
}

deadletter_t *deadletter_new(const config_t *cfg, offsets_t *offsets, char *err, size_t errsz) {
  deadletter_t *d = oom_calloc(1, sizeof *d);
  d->topic = oom_strdup(cfg->kafka_dlq_topic);
  d->offsets = offsets;
  const char *forced[] = {"acks", "all", "enable.idempotence", "true", NULL};
  rd_kafka_conf_t *conf = kafka_conf_new(cfg, KAFKA_DLQ_PRODUCER, forced, err, errsz);
  if (conf) {
    rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
    rd_kafka_conf_set_opaque(conf, d);
    d->producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, errsz); /* takes conf on success only */
    if (!d->producer) rd_kafka_conf_destroy(conf);
  }
  if (!d->producer) {
    free(d->topic);
    free(d);
    return NULL;
  }
  return d;
}

void deadletter_destroy(deadletter_t *d) {
  if (!d) return;
  rd_kafka_destroy(d->producer); /* outstanding reports are served (and their refs freed) first */
  for (retry_t *r = d->retries, *n; r; r = n) {
    n = r->next;
    free(r->payload);
    free(r->key);
    if (r->headers) rd_kafka_headers_destroy(r->headers);
    ref_free(r->ref);
    free(r);
  }
  free(d->topic);
  free(d);
}

static void produce_retries(deadletter_t *d) {
  retry_t *r = d->retries;
  d->retries = NULL;
  while (r) {
    retry_t *next = r->next;
    rd_kafka_resp_err_t err = rd_kafka_producev(
        d->producer, RD_KAFKA_V_TOPIC(d->topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_FREE),
        RD_KAFKA_V_VALUE(r->payload, r->len), RD_KAFKA_V_KEY(r->key, r->key_len),
        RD_KAFKA_V_HEADERS(r->headers ? r->headers : rd_kafka_headers_new(0)), RD_KAFKA_V_OPAQUE(r->ref),
        RD_KAFKA_V_END);
    if (err) { /* queue full or similar: keep it for the next round */
      r->next = d->retries;
      d->retries = r;
    } else {
      free(r->key);
      free(r);
    }
    r = next;
  }
}

bool deadletter_reject(deadletter_t *d, offsets_part_t *p, const rd_kafka_message_t *m, const model_reject_t *rej) {
  ref_t *ref = oom_malloc(sizeof *ref);
  *ref = (ref_t){oom_strdup(p->topic), p->partition, m->offset};
  offsets_reject_pending(p, m->offset);
  d->bytes += m->len;
  for (;;) {
    rd_kafka_resp_err_t err = kafka_produce_reject(d->producer, d->topic, m, rej, ref);
    if (!err) return true;
    if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      log_error("dead-letter produce failed", "error", LOG_STR, rd_kafka_err2str(err));
      ref_free(ref);
      return false;
    }
    rd_kafka_poll(d->producer, 100);
  }
}

void deadletter_poll(deadletter_t *d, int timeout_ms) {
  rd_kafka_poll(d->producer, timeout_ms);
  if (d->retries) produce_retries(d);
}

bool deadletter_pending(const deadletter_t *d) { return d->retries || offsets_rejects_pending(d->offsets); }

uint64_t deadletter_bytes(const deadletter_t *d) { return d->bytes; }
