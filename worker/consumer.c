#include "consumer.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "flusher.h"
#include "kafka.h"
#include "clock.h"
#include "log.h"
#include "metrics.h"

/* How long a revocation may spend writing before it gives the partitions up
 * uncommitted (the next owner then re-reads them: safe, only slower). Must
 * stay well below max.poll.interval.ms. */
#define DRAIN_TIMEOUT_MS 30000
#define IDLE_PING_MS 10000
#define FLIGHT_POLL_MS 5

/* --- signals ---------------------------------------------------------------- */

static volatile sig_atomic_t g_stop, g_reload;

static void on_signal(int sig) {
  if (sig == SIGHUP)
    g_reload = 1;
  else
    g_stop++;
}

static void install_signals(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
}

/* --- per-partition offset state ---------------------------------------------- */

typedef struct dlq_slot {
  int64_t offset;
  bool done;
} dlq_slot_t;

typedef struct part {
  char *topic;
  int32_t partition;
  int64_t next;      /* offset after the last consumed message, -1 before the first */
  int64_t durable;   /* every valid command below this is durable, -1 none */
  int64_t covered;   /* `next` when the flush in flight began: durable once it lands, -1 none */
  int64_t committed; /* last offset the group confirmed, -1 none */
  dlq_slot_t *dlq;   /* rejected messages awaiting the dead-letter ack, in offset order */
  size_t dlq_head, dlq_len, dlq_cap;
} part_t;

/* What a dead-letter delivery report needs to find its slot again. The
 * partition may have been revoked meanwhile: then the slot is gone and the
 * report is ignored (its offset was not committed by us). */
typedef struct dlq_ref {
  char *topic;
  int32_t partition;
  int64_t offset;
} dlq_ref_t;

/* A dead-letter message whose delivery failed, kept to be produced again. */
typedef struct dlq_retry {
  struct dlq_retry *next;
  void *payload, *key;
  size_t len, key_len;
  rd_kafka_headers_t *headers;
  dlq_ref_t *ref;
} dlq_retry_t;

typedef struct consumer {
  config_t *cfg;
  batch_t *batch;
  flusher_t *flusher; /* the writer thread behind it owns the store connection */
  rd_kafka_t *rk, *producer;
  part_t *parts;
  size_t nparts, cap_parts;
  uint64_t dlq_bytes;
  dlq_retry_t *retries;
  bool paused;
  bool fatal;
  int64_t last_commit;
  model_command_t cmd;
} consumer_t;

static part_t *part_find(consumer_t *c, const char *topic, int32_t partition) {
  for (size_t i = 0; i < c->nparts; i++)
    if (c->parts[i].partition == partition && !strcmp(c->parts[i].topic, topic)) return &c->parts[i];
  return NULL;
}

static void part_add(consumer_t *c, const char *topic, int32_t partition) {
  if (part_find(c, topic, partition)) return;
  if (c->nparts == c->cap_parts) {
    c->cap_parts = c->cap_parts ? c->cap_parts * 2 : 16;
    c->parts = realloc(c->parts, c->cap_parts * sizeof *c->parts);
    if (!c->parts) abort();
  }
  c->parts[c->nparts++] = (part_t){.topic = strdup(topic), .partition = partition, .next = -1, .durable = -1,
                                   .covered = -1, .committed = -1};
}

static void part_remove(consumer_t *c, const char *topic, int32_t partition) {
  part_t *p = part_find(c, topic, partition);
  if (!p) return;
  metrics_clear_lag(p->topic, p->partition);
  free(p->topic);
  free(p->dlq);
  *p = c->parts[--c->nparts];
}

static void dlq_push(part_t *p, int64_t offset) {
  if (p->dlq_len == p->dlq_cap) {
    size_t cap = p->dlq_cap ? p->dlq_cap * 2 : 16;
    dlq_slot_t *n = malloc(cap * sizeof *n);
    if (!n) abort();
    for (size_t i = 0; i < p->dlq_len; i++) n[i] = p->dlq[(p->dlq_head + i) % p->dlq_cap];
    free(p->dlq);
    p->dlq = n;
    p->dlq_cap = cap;
    p->dlq_head = 0;
  }
  p->dlq[(p->dlq_head + p->dlq_len++) % p->dlq_cap] = (dlq_slot_t){offset, false};
}

/* The offset to commit: the first message not yet durable. */
static int64_t part_committable(part_t *p) {
  while (p->dlq_len && p->dlq[p->dlq_head].done) { /* drop acknowledged heads */
    p->dlq_head = (p->dlq_head + 1) % p->dlq_cap;
    p->dlq_len--;
  }
  int64_t off = p->durable;
  if (p->dlq_len && p->dlq[p->dlq_head].offset < off) off = p->dlq[p->dlq_head].offset;
  return off;
}

/* Commits committable offsets of the partitions in `only` (all if NULL). */
static void commit(consumer_t *c, const rd_kafka_topic_partition_list_t *only, bool sync) {
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)c->nparts + 1);
  for (size_t i = 0; i < c->nparts; i++) {
    part_t *p = &c->parts[i];
    if (only && !rd_kafka_topic_partition_list_find(only, p->topic, p->partition)) continue;
    int64_t off = part_committable(p);
    if (off > p->committed) rd_kafka_topic_partition_list_add(l, p->topic, p->partition)->offset = off;
  }
  if (l->cnt) {
    rd_kafka_resp_err_t err = rd_kafka_commit(c->rk, l, sync ? 0 : 1);
    if (err && err != RD_KAFKA_RESP_ERR__NO_OFFSET) {
      log_warn("offset commit failed", "error", LOG_STR, rd_kafka_err2str(err));
    } else if (sync) {
      /* Done: a sync commit reports failures per partition. An async one
       * counts only once offset_commit_cb confirms it; until then the next
       * commit sends it again (harmless: the same offsets). */
      for (int i = 0; i < l->cnt; i++) {
        part_t *p = part_find(c, l->elems[i].topic, l->elems[i].partition);
        if (p && !l->elems[i].err && l->elems[i].offset > p->committed) p->committed = l->elems[i].offset;
      }
    }
  }
  rd_kafka_topic_partition_list_destroy(l);
}

/* Only a confirmed commit counts. A failed or lost one must be sent again
 * even if no later offset comes to carry it (an idle stream): otherwise the
 * group's offsets, and its lag, stay behind until the next message, and a
 * restart re-reads what was already durable. */
static void offset_commit_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *offsets,
                             void *opaque) {
  (void)rk;
  consumer_t *c = opaque;
  if (!offsets || err == RD_KAFKA_RESP_ERR__NO_OFFSET) return;
  rd_kafka_resp_err_t first = err;
  for (int i = 0; i < offsets->cnt; i++) {
    const rd_kafka_topic_partition_t *o = &offsets->elems[i];
    if (err || o->err) {
      if (!first) first = o->err;
      continue;
    }
    part_t *p = part_find(c, o->topic, o->partition);
    if (p && o->offset > p->committed) p->committed = o->offset;
  }
  if (first) log_warn("offset commit failed; committing again", "error", LOG_STR, rd_kafka_err2str(first));
}

/* --- dead-letter producer ------------------------------------------------------ */

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
  (void)rk;
  consumer_t *c = opaque;
  dlq_ref_t *ref = m->_private;
  if (m->err) {
    /* Keep it: produced again from the main loop. The source offset stays
     * uncommitted until it is acknowledged. */
    log_warn("dead-letter delivery failed, retrying", "error", LOG_STR, rd_kafka_err2str(m->err), "source_offset",
             LOG_INT, ref->offset);
    dlq_retry_t *r = calloc(1, sizeof *r);
    if (!r) abort();
    r->payload = malloc(m->len ? m->len : 1);
    r->key = m->key_len ? malloc(m->key_len) : NULL;
    if (!r->payload || (m->key_len && !r->key)) abort();
    memcpy(r->payload, m->payload, m->len);
    r->len = m->len;
    if (m->key_len) memcpy(r->key, m->key, m->key_len);
    r->key_len = m->key_len;
    rd_kafka_headers_t *h = NULL;
    if (!rd_kafka_message_headers(m, &h) && h) r->headers = rd_kafka_headers_copy(h);
    r->ref = ref;
    r->next = c->retries;
    c->retries = r;
    return;
  }
  c->dlq_bytes -= m->len < c->dlq_bytes ? m->len : c->dlq_bytes;
  part_t *p = part_find(c, ref->topic, ref->partition);
  if (p) {
    for (size_t i = 0; i < p->dlq_len; i++) {
      dlq_slot_t *s = &p->dlq[(p->dlq_head + i) % p->dlq_cap];
      if (s->offset == ref->offset) {
        s->done = true;
        break;
      }
    }
  }
  free(ref->topic);
  free(ref);
}

static void produce_retries(consumer_t *c) {
  dlq_retry_t *r = c->retries;
  c->retries = NULL;
  while (r) {
    dlq_retry_t *next = r->next;
    rd_kafka_resp_err_t err = rd_kafka_producev(
        c->producer, RD_KAFKA_V_TOPIC(c->cfg->kafka_dlq_topic), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_FREE),
        RD_KAFKA_V_VALUE(r->payload, r->len), RD_KAFKA_V_KEY(r->key, r->key_len),
        RD_KAFKA_V_HEADERS(r->headers ? r->headers : rd_kafka_headers_new(0)), RD_KAFKA_V_OPAQUE(r->ref),
        RD_KAFKA_V_END);
    if (err) { /* queue full or similar: keep it for the next round */
      r->next = c->retries;
      c->retries = r;
    } else {
      free(r->key);
      free(r);
    }
    r = next;
  }
}

static void reject(consumer_t *c, part_t *p, const rd_kafka_message_t *m, const model_reject_t *rej) {
  metrics_command(METRICS_TYPE_INVALID, METRICS_REJECTED, 1);
  metrics_reject(rej->code);
  log_debug("command rejected", "code", LOG_STR, model_reject_code_name(rej->code), "detail", LOG_STR, rej->detail,
            "offset", LOG_INT, m->offset);
  dlq_ref_t *ref = malloc(sizeof *ref);
  if (!ref) abort();
  *ref = (dlq_ref_t){strdup(p->topic), p->partition, m->offset};
  dlq_push(p, m->offset);
  c->dlq_bytes += m->len;
  for (;;) {
    rd_kafka_resp_err_t err = kafka_produce_reject(c->producer, c->cfg->kafka_dlq_topic, m, rej, ref);
    if (!err) break;
    if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      log_error("dead-letter produce failed", "error", LOG_STR, rd_kafka_err2str(err));
      c->fatal = true;
      return;
    }
    rd_kafka_poll(c->producer, 100);
  }
}

/* True while a rejected command awaits its dead-letter acknowledgement. */
static bool dlq_pending(consumer_t *c) {
  if (c->retries) return true;
  for (size_t i = 0; i < c->nparts; i++) {
    part_t *p = &c->parts[i];
    for (size_t k = 0; k < p->dlq_len; k++)
      if (!p->dlq[(p->dlq_head + k) % p->dlq_cap].done) return true;
  }
  return false;
}

/* --- flushing ------------------------------------------------------------------- */

/* Nothing unwritten (nothing dirty, nothing in flight): every valid command
 * consumed so far, stale ones included, is durable. */
static void mark_all_durable(consumer_t *c) {
  for (size_t i = 0; i < c->nparts; i++) c->parts[i].durable = c->parts[i].next;
}

static void update_gauges(consumer_t *c) {
  metrics_set_dirty(batch_dirty_count(c->batch));
  metrics_set_cached(batch_cached_count(c->batch));
  metrics_set_pending_bytes(batch_pending_bytes(c->batch) + c->dlq_bytes);
}

/* One step of the flusher, and what it means for offsets: a flush that
 * landed makes the offsets it covered durable; one that begins covers what
 * has been consumed so far. Returns true when a flush landed. */
static bool flush_step(consumer_t *c, int64_t wait_ms, bool force) {
  flusher_event_t ev = flusher_step(c->flusher, clock_wall_ms(), wait_ms, force);
  bool landed = false;
  if (ev.finished) {
    log_debug("flush finished", "status", LOG_INT, (int64_t)ev.status, "aggregates", LOG_INT, (int64_t)ev.items,
              "ms", LOG_INT, (int64_t)(ev.seconds * 1000));
    if (ev.status == BATCH_DONE) {
      landed = true;
      for (size_t i = 0; i < c->nparts; i++)
        if (c->parts[i].covered > c->parts[i].durable) c->parts[i].durable = c->parts[i].covered;
    } else if (ev.status == BATCH_FATAL) {
      log_error("store error that retrying cannot fix", "error", LOG_STR, ev.err.message);
      c->fatal = true;
    } else if (ev.status == BATCH_RETRY && (ev.attempt == 1 || ev.attempt % 10 == 0)) {
      log_warn("store write failed, retrying", "error", LOG_STR, ev.err.message, "attempt", LOG_INT,
               (int64_t)ev.attempt, "retry_in_ms", LOG_INT, ev.retry_in_ms);
    }
  }
  if (ev.started)
    for (size_t i = 0; i < c->nparts; i++) c->parts[i].covered = c->parts[i].next;
  if (!batch_dirty(c->batch)) mark_all_durable(c);
  if (ev.finished || ev.started) update_gauges(c);
  return landed;
}

/* Waits for the flush in flight, writes everything held and waits for the
 * dead-letter acks, within deadline. */
static bool drain(consumer_t *c, int64_t deadline) {
  while (!c->fatal && batch_dirty(c->batch)) {
    int64_t left = deadline - clock_wall_ms();
    if (left <= 0 || g_stop > 1) break;
    flush_step(c, left, true);
  }
  if (!batch_dirty(c->batch)) mark_all_durable(c);
  while (dlq_pending(c) && clock_wall_ms() < deadline) {
    produce_retries(c);
    rd_kafka_poll(c->producer, 100);
  }
  return !batch_dirty(c->batch);
}

/* --- rebalance -------------------------------------------------------------------- */

/* "topic:0 topic:3 ..." for the log (cut at the buffer's end with "..."), so
 * that an operator, or a test, sees which partitions moved. */
static const char *partition_names(const rd_kafka_topic_partition_list_t *parts, char *out, size_t size) {
  size_t n = 0;
  out[0] = '\0';
  for (int i = 0; i < parts->cnt && n < size; i++) {
    int w = snprintf(out + n, size - n, "%s%s:%" PRId32, i ? " " : "", parts->elems[i].topic,
                     parts->elems[i].partition);
    if (w < 0 || (size_t)w >= size - n) {
      if (size >= 4) memcpy(out + size - 4, "...", 4);
      break;
    }
    n += (size_t)w;
  }
  return out;
}

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts,
                         void *opaque) {
  consumer_t *c = opaque;
  bool coop = !strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE");
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    for (int i = 0; i < parts->cnt; i++) part_add(c, parts->elems[i].topic, parts->elems[i].partition);
    rd_kafka_error_t *e = coop ? rd_kafka_incremental_assign(rk, parts) : NULL;
    if (!coop) rd_kafka_assign(rk, parts);
    if (e) {
      log_error("assign failed", "error", LOG_STR, rd_kafka_error_string(e));
      rd_kafka_error_destroy(e);
    }
    if (c->paused) rd_kafka_pause_partitions(rk, parts);
    char names[512];
    log_info("partitions assigned", "count", LOG_INT, (int64_t)parts->cnt, "total", LOG_INT, (int64_t)c->nparts,
             "partitions", LOG_STR, partition_names(parts, names, sizeof names));
  } else {
    bool lost = rd_kafka_assignment_lost(rk);
    if (!lost) {
      /* Hand the partitions over with their work done: write what we hold
       * and commit it, so the next owner starts where we are. */
      bool drained = drain(c, clock_wall_ms() + DRAIN_TIMEOUT_MS);
      commit(c, parts, true);
      if (!drained) log_warn("revoked partitions handed over with unwritten changes; they will be re-read");
    }
    for (int i = 0; i < parts->cnt; i++) part_remove(c, parts->elems[i].topic, parts->elems[i].partition);
    rd_kafka_error_t *e = coop ? rd_kafka_incremental_unassign(rk, parts) : NULL;
    if (!coop) rd_kafka_assign(rk, NULL);
    if (e) rd_kafka_error_destroy(e);
    char names[512];
    log_info(lost ? "partitions lost" : "partitions revoked", "count", LOG_INT, (int64_t)parts->cnt, "total",
             LOG_INT, (int64_t)c->nparts, "partitions", LOG_STR, partition_names(parts, names, sizeof names));
  }
  metrics_set_assigned(c->nparts > 0);
}

/* --- main loop ----------------------------------------------------------------------- */

static void handle_message(consumer_t *c, rd_kafka_message_t *m) {
  if (m->err) {
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) return;
    log_warn("consumer error", "error", LOG_STR, rd_kafka_message_errstr(m));
    return;
  }
  part_t *p = part_find(c, rd_kafka_topic_name(m->rkt), m->partition);
  if (!p) return; /* from a partition given up meanwhile */
  p->next = m->offset + 1;
  model_reject_t rej;
  if (!model_command_decode(m->payload ? m->payload : "", m->len, (size_t)c->cfg->limits_max_command_bytes, &c->cmd,
                            &rej)) {
    reject(c, p, m, &rej);
    return;
  }
  rd_kafka_timestamp_type_t tstype;
  int64_t now = clock_wall_ms(), ts = rd_kafka_message_timestamp(m, &tstype);
  model_apply_result_t r = batch_apply(c->batch, &c->cmd, ts > 0 ? ts : now, now);
  metrics_command(c->cmd.type, r == MODEL_APPLY_APPLIED ? METRICS_APPLIED : METRICS_STALE, 1);
}

static void set_paused(consumer_t *c, bool pause) {
  if (c->paused == pause) return;
  rd_kafka_topic_partition_list_t *l = NULL;
  if (rd_kafka_assignment(c->rk, &l) == RD_KAFKA_RESP_ERR_NO_ERROR && l) {
    if (pause)
      rd_kafka_pause_partitions(c->rk, l);
    else
      rd_kafka_resume_partitions(c->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
  }
  c->paused = pause;
  log_info(pause ? "fetching paused: unwritten changes at the memory bound" : "fetching resumed", "pending_bytes",
           LOG_INT, (int64_t)(batch_pending_bytes(c->batch) + c->dlq_bytes));
}

static void report_lag(consumer_t *c) {
  for (size_t i = 0; i < c->nparts; i++) {
    part_t *p = &c->parts[i];
    int64_t lo, hi;
    if (p->next < 0) continue;
    if (rd_kafka_get_watermark_offsets(c->rk, p->topic, p->partition, &lo, &hi) == RD_KAFKA_RESP_ERR_NO_ERROR &&
        hi >= 0)
      metrics_set_lag(p->topic, p->partition, hi > p->next ? hi - p->next : 0);
  }
}

static void reload(consumer_t *c, const consumer_reload_t *rl) {
  config_t *next = config_new();
  config_error_t err;
  if (!next || !config_load(next, rl->config_path, rl->sets, rl->nsets, &err)) {
    log_error("reload failed; keeping the running configuration", "error", LOG_STR, next ? err.message : "no memory");
    config_destroy(next);
    return;
  }
  char restart[512] = "";
  config_apply_live(c->cfg, next, restart, sizeof restart);
  config_destroy(next);
  batch_limits_t limits = batch_limits_from_config(c->cfg);
  batch_set_limits(c->batch, &limits);
  flusher_set_retry(c->flusher, c->cfg->retry_backoff_ms, c->cfg->retry_backoff_max_ms);
  log_setup(c->cfg->log_level, c->cfg->log_format);
  log_info("configuration reloaded");
  if (restart[0]) log_warn("changed keys need a restart to apply", "keys", LOG_STR, restart);
}

static bool create_clients(consumer_t *c) {
  char errstr[512];
  const char *consumer_forced[] = {"group.id", c->cfg->kafka_group, "enable.auto.commit", "false",
                                   "enable.auto.offset.store", "false", NULL};
  rd_kafka_conf_t *conf = kafka_conf_new(c->cfg, KAFKA_RUN_CONSUMER, consumer_forced, errstr, sizeof errstr);
  if (!conf) {
    log_error("kafka consumer configuration", "error", LOG_STR, errstr);
    return false;
  }
  rd_kafka_conf_set_rebalance_cb(conf, rebalance_cb);
  rd_kafka_conf_set_offset_commit_cb(conf, offset_commit_cb);
  rd_kafka_conf_set_opaque(conf, c);
  c->rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
  if (!c->rk) {
    log_error("kafka consumer", "error", LOG_STR, errstr);
    return false;
  }
  rd_kafka_poll_set_consumer(c->rk);

  const char *producer_forced[] = {"acks", "all", "enable.idempotence", "true", NULL};
  conf = kafka_conf_new(c->cfg, KAFKA_DLQ_PRODUCER, producer_forced, errstr, sizeof errstr);
  if (!conf) {
    log_error("kafka producer configuration", "error", LOG_STR, errstr);
    return false;
  }
  rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
  rd_kafka_conf_set_opaque(conf, c);
  c->producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
  if (!c->producer) {
    log_error("kafka producer", "error", LOG_STR, errstr);
    return false;
  }
  rd_kafka_topic_partition_list_t *topics = kafka_topic_list(c->cfg);
  rd_kafka_resp_err_t err = rd_kafka_subscribe(c->rk, topics);
  rd_kafka_topic_partition_list_destroy(topics);
  if (err) {
    log_error("subscribe failed", "error", LOG_STR, rd_kafka_err2str(err));
    return false;
  }
  return true;
}

static void destroy_clients(consumer_t *c) {
  if (c->rk) rd_kafka_destroy(c->rk);
  if (c->producer) rd_kafka_destroy(c->producer);
  for (dlq_retry_t *r = c->retries, *n; r; r = n) {
    n = r->next;
    free(r->payload);
    free(r->key);
    if (r->headers) rd_kafka_headers_destroy(r->headers);
    free(r->ref->topic);
    free(r->ref);
    free(r);
  }
  while (c->nparts) part_remove(c, c->parts[0].topic, c->parts[0].partition);
  free(c->parts);
}

int consumer_run(config_t *cfg, batch_t *batch, const sink_t *sink, const consumer_reload_t *rl) {
  consumer_t *c = calloc(1, sizeof *c);
  if (!c) return 1;
  c->cfg = cfg;
  c->batch = batch;
  g_stop = 0; /* signals before this call are not ours to act on (and tests run several) */
  g_reload = 0;
  srand((unsigned)clock_wall_ms() ^ (unsigned)getpid());
  install_signals();
  metrics_set_assigned(false);
  int rc = 1;
  c->flusher = flusher_new(batch, sink, IDLE_PING_MS);
  if (!c->flusher) {
    log_error("cannot start the writer thread");
    goto out;
  }
  flusher_set_retry(c->flusher, cfg->retry_backoff_ms, cfg->retry_backoff_max_ms);
  if (!create_clients(c)) goto out;
  log_info("worker started", "group", LOG_STR, cfg->kafka_group, "topics", LOG_STR, cfg->kafka_topics);

  int64_t last_tick = 0;
  while (!g_stop && !c->fatal) {
    int64_t now = clock_wall_ms();
    int64_t wake = now + 100;
    int64_t due = flusher_wake_ms(c->flusher);
    if (due < wake) wake = due;
    /* The writer does not wake the poll: a flush in flight is looked for
     * every few ms (under load the poll returns at once anyway). */
    if (flusher_in_flight(c->flusher) && now + FLIGHT_POLL_MS < wake) wake = now + FLIGHT_POLL_MS;
    rd_kafka_message_t *m = rd_kafka_consumer_poll(c->rk, (int)(wake > now ? wake - now : 0));
    if (m) {
      handle_message(c, m);
      rd_kafka_message_destroy(m);
    }
    rd_kafka_poll(c->producer, 0);
    if (c->retries) produce_retries(c);

    now = clock_wall_ms();
    bool landed = flush_step(c, 0, false);
    if (landed || (!batch_dirty(batch) && now - c->last_commit >= 1000)) {
      commit(c, NULL, false);
      c->last_commit = now;
    }

    /* In-flight snapshots count: they are memory held for unwritten changes. */
    uint64_t pending = batch_pending_bytes(batch) + c->dlq_bytes;
    if (!c->paused && pending > (uint64_t)cfg->batch_max_pending_bytes) set_paused(c, true);
    else if (c->paused && pending <= (uint64_t)cfg->batch_max_pending_bytes / 2) set_paused(c, false);

    if (now - last_tick >= 1000) {
      last_tick = now;
      metrics_heartbeat();
      report_lag(c);
      update_gauges(c);
    }
    if (g_reload) {
      g_reload = 0;
      reload(c, rl);
    }
  }

  if (!c->fatal) {
    log_info("stopping: writing and committing what is held");
    /* Keep retrying until written; a second signal gives up (exit 1, nothing
     * committed that is not durable). */
    while (!drain(c, clock_wall_ms() + DRAIN_TIMEOUT_MS) && g_stop < 2 && !c->fatal) {
    }
    if (!batch_dirty(batch)) {
      commit(c, NULL, true);
      rd_kafka_consumer_close(c->rk); /* leaves the group; revocation finds nothing left to do */
      rc = 0;
      const batch_stats_t *s = batch_stats(batch);
      log_info("stopped", "applied", LOG_INT, (int64_t)s->applied, "stale", LOG_INT, (int64_t)s->stale, "writes",
               LOG_INT, (int64_t)s->writes_ok, "conflicts", LOG_INT, (int64_t)s->conflicts);
    }
  }
out:
  flusher_destroy(c->flusher); /* waits for a flush in flight; nothing committed for it */
  destroy_clients(c);
  free(c);
  return rc;
}
