#include "changes_producer.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>

#include "base/log.h"
#include "delivery.h"
#include "kafka.h"
#include "metrics/metrics.h"
#include "oom.h"

/* A group of events closed by one ticket (open while it is the FIFO's tail
 * and not closed). */
typedef struct group {
  struct group *next;
  uint64_t seq;   /* the ticket's, once closed */
  size_t pending; /* its events not yet acknowledged */
  bool closed;
} group_t;

/* One event, owned here from changes_produce to its acknowledgement. Its
 * bytes (key, then value) follow the struct; librdkafka references the
 * value without copying it while the event is in flight (the message's
 * opaque is the event), so an event is freed only once librdkafka has
 * reported on it, or has been destroyed. */
typedef struct event {
  struct event *prev, *next; /* every pending event, in the order first produced: the oldest first */
  struct event *retry_next;  /* in the retry FIFO */
  group_t *group;
  int64_t rev;
  int64_t produced_ms; /* first produce, on the producer's clock */
  size_t key_len, len;
  char bytes[];
} event_t;

struct changes {
  rd_kafka_t *producer;
  const clock_source_t *clock; /* borrowed: measures the intervals of changes_producer.h */
  char *topic;
  size_t max_message; /* the producer's message.max.bytes */
  event_t *oldest, *newest; /* every pending event */
  size_t npending;
  uint64_t bytes;                 /* of every pending event */
  event_t *retries, *retries_tail; /* FIFO: produced again in the order they failed */
  delivery_t delivery;             /* in flight, retries due, the failing state (changes_producer.h) */
  bool broken;                     /* an event can never be delivered: changes_produce answers false */
  bool closing;                    /* changes_destroy: delivery reports are dropped */

  /* Tickets: a FIFO whose head is the oldest ticket not acknowledged in
   * full (or the open group); completed tickets leave from the head. */
  group_t *head, *tail;
  uint64_t last_ticket;  /* the greatest ticket seq so far */
  uint64_t acked;        /* the greatest seq of a ticket that left the FIFO, 0 before any */
  uint64_t acked_before; /* the greatest such seq below acked */
};

/* ---- tickets -------------------------------------------------------------- */

/* A ticket whose events are all acknowledged leaves the FIFO once every
 * ticket before it has. */
static void complete(changes_t *c, uint64_t seq) {
  if (seq > c->acked) {
    c->acked_before = c->acked;
    c->acked = seq;
  }
}

static void drain_tickets(changes_t *c) {
  while (c->head && c->head->closed && !c->head->pending) {
    group_t *g = c->head;
    complete(c, g->seq);
    c->head = g->next;
    if (!c->head) c->tail = NULL;
    free(g);
  }
}

/* The group new events join: the open one, opened when there is none. */
static group_t *open_group(changes_t *c) {
  if (c->tail && !c->tail->closed) return c->tail;
  group_t *g = oom_calloc(1, sizeof *g);
  if (c->tail) c->tail->next = g;
  else c->head = g;
  c->tail = g;
  return g;
}

void changes_ticket(changes_t *c, uint64_t seq) {
  if (seq < c->last_ticket) seq = c->last_ticket;
  c->last_ticket = seq;
  if (!c->tail) { /* nothing outstanding: acknowledged as it is issued */
    complete(c, seq);
    return;
  }
  group_t *g = open_group(c);
  g->seq = seq;
  g->closed = true;
  drain_tickets(c);
}

uint64_t changes_acked_seq(const changes_t *c, uint64_t durable) {
  const group_t *h = c->head;
  if (!h || !h->closed) return durable; /* only the open group, if any: no ticket outstanding */
  /* Every ticket before h is acknowledged; h is not, and its seq may equal
   * the last that left. */
  uint64_t s = c->acked < h->seq ? c->acked : c->acked_before;
  return s < durable ? s : durable;
}

/* ---- the pending events and their gauges ----------------------------------- */

static void report_pending(changes_t *c) {
  metrics_set_change_events_pending(c->npending, c->clock, c->oldest ? c->oldest->produced_ms : 0);
}

static void add_pending(changes_t *c, event_t *e) {
  e->prev = c->newest;
  e->next = NULL;
  if (c->newest) c->newest->next = e;
  else c->oldest = e;
  c->newest = e;
  c->npending++;
  c->bytes += e->key_len + e->len;
  e->group = open_group(c);
  e->group->pending++;
  report_pending(c);
}

/* e is acknowledged: it leaves, and its ticket may complete. */
static void remove_pending(changes_t *c, event_t *e) {
  if (e->prev) e->prev->next = e->next;
  else c->oldest = e->next;
  if (e->next) e->next->prev = e->prev;
  else c->newest = e->prev;
  c->npending--;
  c->bytes -= e->key_len + e->len;
  e->group->pending--;
  free(e);
  drain_tickets(c);
  report_pending(c);
}

static void keep(changes_t *c, event_t *e) {
  e->retry_next = NULL;
  if (c->retries_tail) c->retries_tail->retry_next = e;
  else c->retries = e;
  c->retries_tail = e;
}

/* ---- the failing state ------------------------------------------------------ */

static void count_error(void) { metrics_change_event(METRICS_CHANGE_EVENT_ERROR, 1); }

/* Its lines, readiness input, counter and intervals (delivery.h). */
static const delivery_policy_t policy = {"change-event", "writes wait to be announced, their offsets stay uncommitted",
                                         "the change topic", metrics_set_changes_failing, count_error,
                                         CHANGES_WARN_INTERVAL_MS, CHANGES_STALL_MS, CHANGES_RETRY_MS};

/* One failed attempt (a refused produce or a failed delivery report). */
static void note_failure(changes_t *c, rd_kafka_resp_err_t err) {
  delivery_failed(&c->delivery, clock_mono(c->clock), err, c->npending);
}

/* ---- producing ------------------------------------------------------------- */

/* The producer cannot deliver e, ever: logged, and every later produce
 * refused; e stays pending, so its ticket never completes. */
static void break_on(changes_t *c, const event_t *e, rd_kafka_resp_err_t err) {
  log_error("change-event produce failed for good: stopping, the offsets of the writes it announces stay "
            "uncommitted",
            "topic", LOG_STR, c->topic, "error", LOG_STR, rd_kafka_err2str(err), "_id", LOG_STR,
            e ? e->bytes : "", "bytes", LOG_INT, (int64_t)(e ? e->len : 0));
  c->broken = true;
  delivery_set_failing(&c->delivery, clock_mono(c->clock), rd_kafka_err2str(err), c->npending);
}

/* One produce of e (value by reference, key copied, header x-rev). */
static rd_kafka_resp_err_t produce(changes_t *c, event_t *e) {
  char rev[24];
  snprintf(rev, sizeof rev, "%" PRId64, e->rev);
  rd_kafka_headers_t *h = rd_kafka_headers_new(1);
  rd_kafka_header_add(h, "x-rev", -1, rev, -1);
  rd_kafka_resp_err_t err =
      rd_kafka_producev(c->producer, RD_KAFKA_V_TOPIC(c->topic), RD_KAFKA_V_MSGFLAGS(0),
                        RD_KAFKA_V_VALUE(e->bytes + e->key_len + 1, e->len), RD_KAFKA_V_KEY(e->bytes, e->key_len),
                        RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_OPAQUE(e), RD_KAFKA_V_END);
  if (err) {
    rd_kafka_headers_destroy(h); /* librdkafka's only on success */
    return err;
  }
  delivery_produced(&c->delivery, clock_mono(c->clock));
  return RD_KAFKA_RESP_ERR_NO_ERROR;
}

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  changes_t *c = opaque;
  event_t *e = m->_private;
  if (c->closing) return; /* changes_destroy frees every pending event */
  int64_t now = clock_mono(c->clock);
  delivery_reported(&c->delivery, now);
  if (m->err) {
    if (delivery_permanent(m->err)) {
      break_on(c, e, m->err);
      return;
    }
    /* Kept, produced again by changes_poll; the offsets of its writes stay
     * uncommitted until it is acknowledged. */
    keep(c, e);
    log_debug("change-event delivery failed, retrying", "error", LOG_STR, rd_kafka_err2str(m->err), "_id",
              LOG_STR, e->bytes, "rev", LOG_INT, e->rev);
    note_failure(c, m->err);
    return;
  }
  metrics_change_event(METRICS_CHANGE_EVENT_OK, 1);
  remove_pending(c, e);
  if (!c->broken) delivery_acked(&c->delivery, now, c->npending);
}

changes_t *changes_new(const config_t *cfg, const clock_source_t *clock, char *err, size_t errsz) {
  changes_t *c = oom_calloc(1, sizeof *c);
  /* Its delivery reports run only inside our polls: c is complete by then. */
  c->producer = kafka_producer_new(cfg, KAFKA_CHANGE_PRODUCER, dr_cb, c, err, errsz);
  if (!c->producer) {
    free(c);
    return NULL;
  }
  c->clock = clock;
  c->topic = oom_strdup(cfg->changes_topic);
  char v[32];
  size_t vsize = sizeof v;
  c->max_message = rd_kafka_conf_get(rd_kafka_conf(c->producer), "message.max.bytes", v, &vsize) == RD_KAFKA_CONF_OK
                       ? (size_t)strtoull(v, NULL, 10)
                       : 1000000;
  delivery_init(&c->delivery, &policy, c->topic);
  report_pending(c);
  return c;
}

void changes_destroy(changes_t *c) {
  if (!c) return;
  c->closing = true;
  rd_kafka_destroy(c->producer); /* after it, librdkafka holds no reference to an event */
  for (event_t *e = c->oldest, *n; e; e = n) {
    n = e->next;
    free(e);
  }
  for (group_t *g = c->head, *n; g; g = n) {
    n = g->next;
    free(g);
  }
  /* Nothing left to deliver: not this worker's readiness nor gauges any more. */
  metrics_set_changes_failing(false);
  metrics_set_change_events_pending(0, NULL, 0);
  free(c->topic);
  free(c);
}

/* Produces the retry FIFO again, in order; what is still refused stays, in
 * order, for the next round. */
static void produce_retries(changes_t *c) {
  event_t *e = c->retries;
  c->retries = c->retries_tail = NULL;
  for (event_t *next; e; e = next) {
    next = e->retry_next;
    rd_kafka_resp_err_t err = c->broken ? RD_KAFKA_RESP_ERR__FATAL : produce(c, e);
    if (!err) continue;
    keep(c, e);
    if (c->broken) continue;
    if (delivery_permanent(err)) break_on(c, e, err);
    else if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) note_failure(c, err);
  }
}

/* One produce of e, waiting out a full queue (the delivery reports served
 * meanwhile make room). */
static rd_kafka_resp_err_t produce_waiting(changes_t *c, event_t *e) {
  for (;;) {
    rd_kafka_resp_err_t err = produce(c, e);
    if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) return err;
    rd_kafka_poll(c->producer, 100);
    if (c->broken) return RD_KAFKA_RESP_ERR__FATAL; /* a report meanwhile: nothing more is delivered */
  }
}

bool changes_produce(changes_t *c, const char *key, size_t key_len, int64_t rev, const void *value, size_t len) {
  if (c->broken) return false;
  /* Key, NUL (for the log), value: one allocation, one copy. */
  event_t *e = oom_malloc(sizeof *e + key_len + 1 + len);
  *e = (event_t){.rev = rev, .produced_ms = clock_mono(c->clock), .key_len = key_len, .len = len};
  if (key_len) memcpy(e->bytes, key, key_len);
  e->bytes[key_len] = '\0';
  if (len) memcpy(e->bytes + key_len + 1, value, len);
  /* Behind events waiting to be produced again, it waits too: in order. */
  bool queued = c->retries != NULL;
  rd_kafka_resp_err_t err = queued ? RD_KAFKA_RESP_ERR_NO_ERROR : produce_waiting(c, e);
  if (delivery_permanent(err)) {
    log_error("change-event produce failed for good", "topic", LOG_STR, c->topic, "error", LOG_STR,
              rd_kafka_err2str(err), "_id", LOG_STR, e->bytes, "bytes", LOG_INT, (int64_t)len);
    free(e);
    return false;
  }
  add_pending(c, e);
  /* Refused for now (e.g. the topic is gone, deleted while running): kept
   * and produced again once it is back; its writes' offsets stay
   * uncommitted meanwhile. */
  if (queued || err) keep(c, e);
  if (err) note_failure(c, err);
  return true;
}

void changes_poll(changes_t *c, int timeout_ms) {
  rd_kafka_poll(c->producer, timeout_ms);
  int64_t now = clock_mono(c->clock);
  if (c->retries && now >= c->delivery.retry_due_ms) produce_retries(c);
  delivery_check(&c->delivery, now, c->npending);
}

bool changes_pending(const changes_t *c) { return c->npending > 0; }

/* librdkafka refuses a message whose value, key and headers, with the
 * record's framing, pass message.max.bytes: what the framing and the x-rev
 * header take is kept out, with room to spare. */
size_t changes_max_value(const changes_t *c, size_t key_len) {
  size_t overhead = key_len + 256;
  return c->max_message > overhead ? c->max_message - overhead : 0;
}

uint64_t changes_bytes(const changes_t *c) { return c->bytes; }

bool changes_failing(const changes_t *c) { return c->delivery.failing; }

bool changes_broken(const changes_t *c) { return c->broken; }
