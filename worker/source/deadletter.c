#include "deadletter.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "delivery.h"
#include "kafka.h"
#include "base/log.h"
#include "metrics/metrics.h"
#include "oom.h"

/* What a delivery report needs to find the source offset again. The
 * partition may have been given up meanwhile: then offsets ignores it. */
typedef struct ref {
  char *topic;
  int32_t partition;
  int64_t offset;
} ref_t;

/* A dead letter whose produce or delivery failed, kept to be produced again. */
typedef struct letter {
  struct letter *next;
  void *payload, *key; /* NULL when empty */
  size_t len, key_len;
  rd_kafka_headers_t *headers;
  ref_t *ref;
} letter_t;

struct deadletter {
  rd_kafka_t *producer;
  const clock_source_t *clock; /* borrowed: measures the intervals of deadletter.h */
  char *topic;
  offsets_t *offsets;
  letter_t *retries, *retries_tail; /* FIFO: produced again in the order they failed */
  size_t nretries;
  uint64_t bytes;      /* of every dead letter not yet acknowledged */
  delivery_t delivery; /* in flight, retries due, the failing state (deadletter.h) */
};

static void ref_free(ref_t *r) {
  if (!r) return;
  free(r->topic);
  free(r);
}

static void letter_free(letter_t *l) {
  free(l->payload);
  free(l->key);
  if (l->headers) rd_kafka_headers_destroy(l->headers);
  ref_free(l->ref);
  free(l);
}

static void *copy_bytes(const void *p, size_t n) {
  if (!n) return NULL;
  void *c = oom_malloc(n);
  memcpy(c, p, n);
  return c;
}

/* Takes payload and key copies, headers and ref. */
static void keep(deadletter_t *d, letter_t *l) {
  l->next = NULL;
  if (d->retries_tail) d->retries_tail->next = l;
  else d->retries = l;
  d->retries_tail = l;
  d->nretries++;
}

/* ---- the failing state ------------------------------------------------------ */

static void count_error(void) { metrics_dead_letter(METRICS_DEAD_LETTER_ERROR, 1); }

/* Its lines, readiness input, counter and intervals (delivery.h). */
static const delivery_policy_t policy = {"dead-letter", "rejects wait, their offsets stay uncommitted",
                                         "the dead-letter topic", metrics_set_dead_letter_failing, count_error,
                                         DEADLETTER_WARN_INTERVAL_MS, DEADLETTER_STALL_MS, DEADLETTER_RETRY_MS};

static size_t pending_count(const deadletter_t *d) { return d->delivery.inflight + d->nretries; }

/* One failed attempt (a refused produce or a failed delivery report). */
static void note_failure(deadletter_t *d, rd_kafka_resp_err_t err) {
  delivery_failed(&d->delivery, clock_mono(d->clock), err, pending_count(d));
}

/* ---- producing ------------------------------------------------------------- */

/* One produce; headers are librdkafka's on success, still the caller's on failure. */
static rd_kafka_resp_err_t produce(deadletter_t *d, const void *payload, size_t len, const void *key, size_t key_len,
                                   rd_kafka_headers_t *headers, ref_t *ref) {
  rd_kafka_resp_err_t err = rd_kafka_producev(
      d->producer, RD_KAFKA_V_TOPIC(d->topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
      RD_KAFKA_V_VALUE((void *)payload, len), RD_KAFKA_V_KEY(key, key_len), RD_KAFKA_V_HEADERS(headers),
      RD_KAFKA_V_OPAQUE(ref), RD_KAFKA_V_END);
  if (!err) delivery_produced(&d->delivery, clock_mono(d->clock));
  return err;
}

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  deadletter_t *d = opaque;
  ref_t *ref = m->_private;
  int64_t now = clock_mono(d->clock);
  delivery_reported(&d->delivery, now);
  if (m->err) {
    /* Kept, produced again by deadletter_poll; the source offset stays
     * uncommitted until it is acknowledged. */
    letter_t *l = oom_calloc(1, sizeof *l);
    l->payload = copy_bytes(m->payload, m->len);
    l->len = m->len;
    l->key = copy_bytes(m->key, m->key_len);
    l->key_len = m->key_len;
    rd_kafka_headers_t *h = NULL;
    l->headers = !rd_kafka_message_headers(m, &h) && h ? rd_kafka_headers_copy(h) : rd_kafka_headers_new(0);
    l->ref = ref;
    keep(d, l);
    log_debug("dead-letter delivery failed, retrying", "error", LOG_STR, rd_kafka_err2str(m->err), "source_offset",
              LOG_INT, ref->offset);
    note_failure(d, m->err);
    return;
  }
  metrics_dead_letter(METRICS_DEAD_LETTER_OK, 1);
  d->bytes -= m->len < d->bytes ? m->len : d->bytes;
  offsets_reject_done(d->offsets, ref->topic, ref->partition, ref->offset);
  ref_free(ref);
  delivery_acked(&d->delivery, now, pending_count(d));
}

deadletter_t *deadletter_new(const config_t *cfg, offsets_t *offsets, const clock_source_t *clock, char *err,
                             size_t errsz) {
  deadletter_t *d = oom_calloc(1, sizeof *d);
  d->clock = clock;
  d->topic = oom_strdup(cfg->kafka_dlq_topic);
  d->offsets = offsets;
  d->producer = kafka_producer_new(cfg, KAFKA_DLQ_PRODUCER, dr_cb, d, err, errsz);
  if (!d->producer) {
    free(d->topic);
    free(d);
    return NULL;
  }
  delivery_init(&d->delivery, &policy, d->topic);
  return d;
}

void deadletter_destroy(deadletter_t *d) {
  if (!d) return;
  rd_kafka_destroy(d->producer); /* outstanding reports are served (and their refs freed) first */
  for (letter_t *l = d->retries, *n; l; l = n) {
    n = l->next;
    letter_free(l);
  }
  metrics_set_dead_letter_failing(false); /* nothing left to deliver: not this worker's readiness any more */
  free(d->topic);
  free(d);
}

static void produce_retries(deadletter_t *d) {
  letter_t *l = d->retries;
  d->retries = d->retries_tail = NULL;
  d->nretries = 0;
  while (l) {
    letter_t *next = l->next;
    rd_kafka_resp_err_t err = produce(d, l->payload, l->len, l->key, l->key_len, l->headers, l->ref);
    if (err) { /* still refused: kept for the next round */
      keep(d, l);
      if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) note_failure(d, err);
    } else {
      l->headers = NULL; /* librdkafka's now */
      l->ref = NULL;     /* comes back in the delivery report */
      letter_free(l);
    }
    l = next;
  }
}

bool deadletter_reject(deadletter_t *d, offsets_part_t *p, const kafka_source_t *src, const model_reject_t *rej) {
  ref_t *ref = oom_malloc(sizeof *ref);
  *ref = (ref_t){oom_strdup(p->topic), p->partition, src->offset};
  offsets_reject_pending(p, src->offset);
  d->bytes += src->len;
  rd_kafka_headers_t *h = kafka_reject_headers(src, rej);
  for (;;) {
    rd_kafka_resp_err_t err = produce(d, src->payload, src->len, src->key, src->key_len, h, ref);
    if (!err) return true;
    if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      rd_kafka_poll(d->producer, 100);
      continue;
    }
    if (delivery_permanent(err)) {
      log_error("dead-letter produce failed for good", "topic", LOG_STR, d->topic, "error", LOG_STR,
                rd_kafka_err2str(err), "source_offset", LOG_INT, src->offset);
      rd_kafka_headers_destroy(h);
      ref_free(ref);
      return false;
    }
    /* E.g. the topic is gone (deleted while running): kept and produced again
     * once it is back; the offset stays uncommitted meanwhile. */
    letter_t *l = oom_calloc(1, sizeof *l);
    l->payload = copy_bytes(src->payload, src->len);
    l->len = src->len;
    l->key = copy_bytes(src->key, src->key_len);
    l->key_len = src->key_len;
    l->headers = h;
    l->ref = ref;
    keep(d, l);
    note_failure(d, err);
    return true;
  }
}

void deadletter_poll(deadletter_t *d, int timeout_ms) {
  rd_kafka_poll(d->producer, timeout_ms);
  int64_t now = clock_mono(d->clock);
  if (d->retries && now >= d->delivery.retry_due_ms) produce_retries(d);
  delivery_check(&d->delivery, now, pending_count(d));
}

bool deadletter_pending(const deadletter_t *d) { return d->retries || offsets_rejects_pending(d->offsets); }

uint64_t deadletter_bytes(const deadletter_t *d) { return d->bytes; }

bool deadletter_failing(const deadletter_t *d) { return d->delivery.failing; }
