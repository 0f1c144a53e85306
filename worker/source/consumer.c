#include "consumer.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "announcer.h"
#include "changes_producer.h"
#include "deadletter.h"
#include "pipeline/flusher.h"
#include "pipeline/stall.h"
#include "kafka.h"
#include "kafka_access.h"
#include "base/clock.h"
#include "base/log.h"
#include "metrics/metrics.h"
#include "offsets.h"
#include "oom.h"
#include "base/signals.h"

/* How long a revocation may spend writing before it gives the partitions up
 * uncommitted (the next owner then re-reads them: safe, only slower). Must
 * stay well below max.poll.interval.ms. */
#define DRAIN_TIMEOUT_MS 30000
#define IDLE_PING_MS 10000
#define FLIGHT_POLL_MS 5
/* Messages handled per turn of the main loop when librdkafka has them
 * queued (see the loop). */
#define CONSUME_BURST 256

/* --- state ---------------------------------------------------------------------- */

typedef struct consumer {
  config_t *cfg;
  batch_t *batch;
  flusher_t *flusher; /* the writer thread behind it owns the store connection */
  const clock_source_t *clock;
  rd_kafka_t *rk;
  offsets_t *offsets;
  /* The partition of the last message handled (offsets_find by topic name
   * per message otherwise): its topic handle, number and offsets. Forgotten
   * at every rebalance callback, the only place partitions are added to or
   * removed from offsets (which moves them). */
  const rd_kafka_topic_t *last_rkt;
  int32_t last_partition;
  offsets_part_t *last_part;
  deadletter_t *dlq;
  kafka_access_t *access; /* refusals and grants, for readiness (kafka_access.h) */
  /* Change events (changes.topic set): the batch's announcer and its
   * producer; commits wait for their acknowledgements. NULL without. */
  announcer_t *ann;
  rd_kafka_queue_t *pokes; /* the answers of wake_fetchers' requests, dropped once a second */
  bool paused;
  bool fatal;
  bool stopped_at_start; /* SIGTERM while waiting for the brokers at start */
  int64_t last_commit;   /* monotonic ms */
  int64_t last_tick;     /* monotonic ms: the last once-a-second chores */
  int64_t stop_deadline; /* monotonic ms by which a stop ends (shutdown.timeout_ms); INT64_MAX while running */
  stall_watch_t stall;   /* the writer's stall watchdog (batch.stall_timeout_ms) */
  sink_error_t last_failure; /* why the last flush that did not land everything did not, for the stall's warning */
  model_command_t cmd;
  /* The burst's valid commands by type, applied and stale: counted in the
   * metrics once per burst (count_burst) instead of once per message. */
  uint32_t tally[MODEL_CMD_TYPE_COUNT][2];
} consumer_t;

/* --- commits ---------------------------------------------------------------------- */

/* Commits committable offsets of the partitions in `only` (all if NULL). */
static void commit(consumer_t *c, const rd_kafka_topic_partition_list_t *only, bool sync) {
  rd_kafka_topic_partition_list_t *l = offsets_committable(c->offsets, only);
  if (l->cnt) {
    rd_kafka_resp_err_t err = rd_kafka_commit(c->rk, l, sync ? 0 : 1);
    if (err && err != RD_KAFKA_RESP_ERR__NO_OFFSET) {
      log_warn("offset commit failed", "error", LOG_STR, rd_kafka_err2str(err));
    } else if (sync) {
      /* Done: a sync commit reports failures per partition. An async one
       * counts only once offset_commit_cb confirms it; until then the next
       * commit sends it again (harmless: the same offsets). */
      offsets_confirmed(c->offsets, l);
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
  for (int i = 0; i < offsets->cnt && !first; i++) first = offsets->elems[i].err;
  if (!err) offsets_confirmed(c->offsets, offsets);
  if (first) log_warn("offset commit failed; committing again", "error", LOG_STR, rd_kafka_err2str(first));
}

/* --- flushing ------------------------------------------------------------------- */

/* The change-event producer, or NULL without change events. */
static changes_t *events(const consumer_t *c) { return c->ann ? c->ann->changes : NULL; }

/* Unwritten changes, unacknowledged dead letters and change events: the
 * memory that batch.max_pending_bytes bounds. */
static uint64_t pending_bytes(const consumer_t *c) {
  return batch_pending_bytes(c->batch) + deadletter_bytes(c->dlq) + (events(c) ? changes_bytes(events(c)) : 0);
}

static void update_gauges(consumer_t *c) {
  metrics_set_dirty(batch_dirty_count(c->batch));
  metrics_set_cached(batch_cached_count(c->batch), batch_cached_bytes(c->batch));
  metrics_set_pending_bytes(pending_bytes(c));
}

/* Every command below this seq is durable and, with change events, every
 * write up to it is announced and acknowledged (changes_producer.h). */
static uint64_t durable_seq(const consumer_t *c) {
  uint64_t durable = batch_durable_seq(c->batch);
  return events(c) ? changes_acked_seq(events(c), durable) : durable;
}

/* Nothing unwritten and nothing unannounced: everything consumed is durable. */
static bool all_durable(const consumer_t *c) {
  return !batch_dirty(c->batch) && !(events(c) && changes_pending(events(c)));
}

/* One step of the flusher, and what it means for offsets (offsets.h): a
 * flush that begins checkpoints what has been consumed so far; one that
 * comes back moves each partition's durable offset to the newest checkpoint
 * the batch's durable seq has passed, and with change events its
 * announcements (made while it ended) are a ticket that holds that move
 * back until they are acknowledged. Returns true when one moved. */
static bool flush_step(consumer_t *c, batch_now_t now, int64_t wait_ms, bool force) {
  flusher_event_t ev = flusher_step(c->flusher, now, wait_ms, force);
  bool landed = false;
  if (ev.finished) {
    if (ev.landed) stall_landed(&c->stall, clock_mono(c->clock));
    if (ev.status != SINK_OK) c->last_failure = ev.err;
    log_debug("flush finished", "status", LOG_INT, (int64_t)ev.status, "aggregates", LOG_INT, (int64_t)ev.items,
              "ms", LOG_INT, (int64_t)(ev.seconds * 1000));
    if (c->ann) {
      changes_ticket(c->ann->changes, batch_durable_seq(c->batch));
      if (!announcer_ok(c->ann)) c->fatal = true;
    }
    landed = offsets_durable_to(c->offsets, durable_seq(c));
    if (ev.status == SINK_FATAL) {
      log_error("store error that retrying cannot fix", "error", LOG_STR, ev.err.message);
      c->fatal = true;
    } else if (ev.status == SINK_RETRY && (ev.attempt == 1 || ev.attempt % 10 == 0)) {
      log_warn("store write failed, retrying", "error", LOG_STR, ev.err.message, "attempt", LOG_INT,
               (int64_t)ev.attempt, "retry_in_ms", LOG_INT, ev.retry_in_ms);
    }
  }
  if (ev.started) offsets_checkpoint(c->offsets, batch_seq(c->batch));
  /* Nothing unwritten (nothing dirty, nothing in flight) and nothing
   * unannounced: every valid command consumed so far, stale ones
   * included, is durable. */
  if (all_durable(c)) offsets_all_durable(c->offsets);
  if (ev.finished || ev.started) update_gauges(c);
  return landed;
}

/* The stall watchdog's verdict, once a second (stall.h): logged, and fed
 * to readiness and the metrics, when it changes or goes on. */
static void check_stall(consumer_t *c, int64_t now) {
  int64_t oldest = batch_oldest_unwritten_ms(c->batch);
  metrics_set_oldest_unwritten(c->clock, oldest);
  stall_event_t e = stall_check(&c->stall, now, oldest);
  if (e == STALL_NONE) return;
  uint64_t unwritten = batch_dirty_count(c->batch) + batch_in_flight_count(c->batch);
  if (e == STALL_ENDED) {
    log_info("writer resumed", "dirty_aggregates", LOG_INT, (int64_t)batch_dirty_count(c->batch));
    metrics_set_writer_stalled(false, 0, 0);
    return;
  }
  const batch_stats_t *s = batch_stats(c->batch);
  log_warn("writer stalled: unwritten changes and no write landed", "seconds", LOG_INT,
           stall_age_ms(&c->stall, now) / 1000, "unwritten_aggregates", LOG_INT, (int64_t)unwritten,
           "dirty_aggregates", LOG_INT, (int64_t)batch_dirty_count(c->batch), "flush_in_flight", LOG_INT,
           (int64_t)flusher_in_flight(c->flusher), "oldest_unwritten_seconds", LOG_INT,
           oldest == INT64_MAX ? 0 : (now - oldest) / 1000, "writes", LOG_INT, (int64_t)s->writes_ok, "conflicts",
           LOG_INT, (int64_t)s->conflicts, "write_errors", LOG_INT, (int64_t)s->write_errors, "last_failure",
           LOG_STR, c->last_failure.message, "timeout_ms", LOG_INT, c->stall.timeout_ms);
  metrics_set_writer_stalled(true, unwritten, c->stall.since_ms);
}

/* Serves the change events' acknowledgements: true when they let a
 * partition's durable offset move. */
static bool announced(consumer_t *c, int timeout_ms) {
  if (!c->ann) return false;
  changes_poll(c->ann->changes, timeout_ms);
  if (!announcer_ok(c->ann)) c->fatal = true; /* logged by the producer */
  bool moved = offsets_durable_to(c->offsets, durable_seq(c));
  if (all_durable(c)) offsets_all_durable(c->offsets);
  return moved;
}

/* Waits for the flush in flight, writes everything held and waits for the
 * acknowledgements of the change events and the dead letters, within
 * deadline (monotonic ms). True when everything is durable and announced. */
static bool drain(consumer_t *c, int64_t deadline) {
  while (!c->fatal && batch_dirty(c->batch)) {
    batch_now_t now = batch_now(c->clock);
    int64_t left = deadline - now.mono_ms;
    if (left <= 0 || signals_stop_count() > 1) break;
    flush_step(c, now, left, true);
  }
  while (c->ann && changes_pending(c->ann->changes) && !c->fatal && clock_mono(c->clock) < deadline &&
         signals_stop_count() <= 1)
    announced(c, 100);
  announced(c, 0);
  if (all_durable(c)) offsets_all_durable(c->offsets);
  while (c->dlq && deadletter_pending(c->dlq) && clock_mono(c->clock) < deadline) deadletter_poll(c->dlq, 100);
  return all_durable(c);
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

/* Applies an assignment change: with the eager protocol (classic range,
 * roundrobin) `parts` is the whole new assignment, or NULL to give
 * everything up; with an incremental one (the next-generation `consumer`
 * protocol, or classic cooperative-sticky) it is what is added (assign) or
 * taken away (!assign). */
static void apply_assignment(rd_kafka_t *rk, bool coop, bool assign, const rd_kafka_topic_partition_list_t *parts) {
  const char *what = assign ? "assign failed" : "unassign failed";
  if (coop) {
    rd_kafka_error_t *e = assign ? rd_kafka_incremental_assign(rk, parts) : rd_kafka_incremental_unassign(rk, parts);
    if (e) {
      log_error(what, "error", LOG_STR, rd_kafka_error_string(e));
      rd_kafka_error_destroy(e);
    }
    return;
  }
  rd_kafka_resp_err_t e = rd_kafka_assign(rk, assign ? parts : NULL);
  if (e) log_error(what, "error", LOG_STR, rd_kafka_err2str(e));
}

/* librdkafka pauses every partition of the member while a rebalance
 * callback is due and resumes them once the callback has assigned or
 * unassigned; the resume does not wake the threads that fetch from the
 * brokers, which sleep up to a second before they fetch again: measured,
 * 0.4-0.7 s of a join's stall, all partitions kept included. A request to a
 * broker wakes its thread: a ListOffsets of the partitions held goes to
 * each of their leaders. Its answers are dropped. */
static void wake_fetchers(consumer_t *c) {
  rd_kafka_topic_partition_list_t *l = NULL;
  if (rd_kafka_assignment(c->rk, &l) != RD_KAFKA_RESP_ERR_NO_ERROR || !l) return;
  if (l->cnt) {
    for (int i = 0; i < l->cnt; i++) l->elems[i].offset = RD_KAFKA_OFFSET_SPEC_LATEST;
    rd_kafka_ListOffsets(c->rk, l, NULL, c->pokes);
  }
  rd_kafka_topic_partition_list_destroy(l);
}

/* Every protocol goes through here. The next-generation one
 * (kafka.group_protocol = consumer; librdkafka reports it as COOPERATIVE):
 * the broker computes the target assignment and each member is asked to
 * give up only the partitions that move; the other members go on
 * consuming. This member still owns them, with its member epoch, until it
 * acknowledges the revocation, which librdkafka sends once this callback
 * has unassigned them, so what the drain below makes durable commits and
 * the next owner starts where this one stopped. librdkafka pauses all of
 * this member's partitions until then: the drain is its whole stop, after
 * which it goes on with those it keeps (wake_fetchers). Classic eager
 * (roundrobin, kafka.c): before the group reassigns anything each member
 * gives up all its partitions, the same way, while the generation is still
 * valid. A loss (the member was fenced: its session expired, or librdkafka
 * declared it) commits nothing, since the group no longer takes this
 * member's commits: the next owner re-reads from the last commit.
 *
 * The drain writes everything held, the partitions kept included (which
 * partition an aggregate came from is not kept). */
static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *parts,
                         void *opaque) {
  consumer_t *c = opaque;
  bool coop = !strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE");
  c->last_rkt = NULL; /* offsets changes below */
  if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS && !parts->cnt && coop) {
    /* The next-generation protocol follows every revocation with an
     * assignment of what is added, often nothing: not an event. */
    apply_assignment(rk, coop, true, parts);
    wake_fetchers(c);
  } else if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
    for (int i = 0; i < parts->cnt; i++) offsets_add(c->offsets, parts->elems[i].topic, parts->elems[i].partition);
    batch_next_epoch(c->batch); /* their commands read again are announced again (batch.h "Announcing") */
    apply_assignment(rk, coop, true, parts);
    /* librdkafka keeps a partition's pause across its revocation: one
     * paused by the memory bound, given up and now got back while fetching
     * goes on must fetch again. */
    if (c->paused)
      rd_kafka_pause_partitions(rk, parts);
    else
      rd_kafka_resume_partitions(rk, parts);
    if (coop) wake_fetchers(c);
    metrics_rebalance(METRICS_REBALANCE_ASSIGNED);
    char names[512];
    log_info("partitions assigned", "count", LOG_INT, (int64_t)parts->cnt, "total", LOG_INT,
             (int64_t)offsets_count(c->offsets), "partitions", LOG_STR, partition_names(parts, names, sizeof names));
  } else {
    bool lost = rd_kafka_assignment_lost(rk);
    metrics_rebalance(lost ? METRICS_REBALANCE_LOST : METRICS_REBALANCE_REVOKED);
    int64_t t0 = clock_mono(c->clock);
    if (!lost) {
      /* Hand the partitions over with their work done: write what we hold
       * and commit it, so the next owner starts where we are. */
      int64_t deadline = clock_mono(c->clock) + DRAIN_TIMEOUT_MS;
      bool drained = drain(c, deadline < c->stop_deadline ? deadline : c->stop_deadline);
      commit(c, parts, true);
      if (!drained) log_warn("revoked partitions handed over with unwritten changes; they will be re-read");
    }
    for (int i = 0; i < parts->cnt; i++) {
      metrics_clear_lag(parts->elems[i].topic, parts->elems[i].partition);
      offsets_remove(c->offsets, parts->elems[i].topic, parts->elems[i].partition);
    }
    batch_forget_clean(c->batch); /* their aggregates are the next owner's to write (batch.h) */
    update_gauges(c);
    apply_assignment(rk, coop, false, parts);
    char names[512];
    /* handover_ms: how long writing and committing took, during which
     * (librdkafka pauses every partition until the callback returns) this
     * member consumed nothing. */
    log_info(lost ? "partitions lost" : "partitions revoked", "count", LOG_INT, (int64_t)parts->cnt, "total",
             LOG_INT, (int64_t)offsets_count(c->offsets), "partitions", LOG_STR,
             partition_names(parts, names, sizeof names), "handover_ms", LOG_INT, clock_mono(c->clock) - t0);
  }
  metrics_set_assigned(offsets_count(c->offsets) > 0);
  metrics_set_assigned_partitions(offsets_count(c->offsets));
}

/* --- main loop ----------------------------------------------------------------------- */

/* A rejected message, whether it does not decode or its application would
 * pass the store's document limit: counted, and dead-lettered byte for
 * byte; its offset commits once the dead-letter topic acknowledges it. */
static void reject(consumer_t *c, offsets_part_t *p, const kafka_source_t *m, int type, const model_reject_t *rej) {
  metrics_command(type, METRICS_REJECTED, 1);
  metrics_reject(rej->code);
  log_debug("command rejected", "code", LOG_STR, model_reject_code_name(rej->code), "detail", LOG_STR, rej->detail,
            "offset", LOG_INT, m->offset);
  if (!deadletter_reject(c->dlq, p, m, rej)) c->fatal = true;
}

/* --- late rejects (batch_hold.h) ------------------------------------------------------ */

/* Where a message came from, as the batch holds it beside the message's
 * value: its position, then its topic (with its NUL) and its key, from
 * which a late reject dead-letters it. */
typedef struct held_position {
  int64_t offset;
  int32_t partition;
} held_position_t;

/* The origin of m, from its partition p: *pos is its position's room. */
static batch_origin_t origin_of(const offsets_part_t *p, const rd_kafka_message_t *m, held_position_t *pos) {
  *pos = (held_position_t){m->offset, m->partition};
  return (batch_origin_t){{m->payload, m->len},
                          {{pos, sizeof *pos}, {p->topic, p->topic_size}, {m->key, m->key_len}}};
}

/* A late reject: dead-lettered as any reject, unless its partition was
 * given up meanwhile (its offset was never committed: the next owner reads
 * it again and rejects it itself). */
static void reject_late(void *ctx, const batch_origin_t *o, const model_command_t *cmd, const model_reject_t *rej) {
  consumer_t *c = ctx;
  held_position_t pos;
  memcpy(&pos, o->from[0].p, sizeof pos);
  const kafka_source_t s = {.topic = o->from[1].p, .partition = pos.partition, .offset = pos.offset,
                            .payload = o->command.p, .len = o->command.len, .key = o->from[2].p,
                            .key_len = o->from[2].len};
  offsets_part_t *p = offsets_find(c->offsets, s.topic, s.partition);
  if (!p) {
    log_debug("late reject of a partition given up: its next owner reads it again", "offset", LOG_INT, s.offset);
    return;
  }
  reject(c, p, &s, cmd ? (int)cmd->type : METRICS_TYPE_INVALID, rej);
}

/* Whether m may have been read before by a worker that crashed between a
 * write and its change event: it lies below the end its partition p had
 * when the first message since the assignment came. The high watermark of
 * that fetch is known locally; if it is not, every message of the
 * assignment counts (each aggregate is then announced once more: harmless). */
static bool read_again(consumer_t *c, offsets_part_t *p, const rd_kafka_message_t *m) {
  if (p->reread_end < 0) {
    int64_t lo, hi;
    bool known = rd_kafka_get_watermark_offsets(c->rk, p->topic, p->partition, &lo, &hi) == RD_KAFKA_RESP_ERR_NO_ERROR &&
                 hi >= 0;
    p->reread_end = known ? hi : INT64_MAX;
  }
  return m->offset < p->reread_end;
}

static void handle_message(consumer_t *c, rd_kafka_message_t *m, batch_now_t now) {
  if (m->err) {
    if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) return;
    log_warn("consumer error", "error", LOG_STR, rd_kafka_message_errstr(m));
    kafka_access_error(c->access, m->err, rd_kafka_message_errstr(m));
    return;
  }
  offsets_part_t *p = c->last_part;
  if (m->rkt != c->last_rkt || m->partition != c->last_partition) {
    p = offsets_find(c->offsets, rd_kafka_topic_name(m->rkt), m->partition);
    if (!p) return; /* from a partition given up meanwhile */
    c->last_rkt = m->rkt;
    c->last_partition = m->partition;
    c->last_part = p;
  }
  /* The Kafka timestamp, or now when the message has none: dates the
   * command for the oldest-uncommitted gauge and its latencies. */
  int64_t ts = rd_kafka_message_timestamp(m, NULL);
  if (ts <= 0) ts = now.wall_ms;
  offsets_consumed(p, m->offset, ts);
  model_reject_t rej;
  if (!model_command_decode(m->payload ? m->payload : "", m->len, (size_t)c->cfg->limits_max_command_bytes, &c->cmd,
                            &rej)) {
    kafka_source_t src = kafka_source_of(m);
    reject(c, p, &src, METRICS_TYPE_INVALID, &rej);
    return;
  }
  held_position_t pos;
  batch_origin_t origin = origin_of(p, m, &pos);
  bool again = c->ann && read_again(c, p, m);
  model_apply_result_t r = batch_apply_from(c->batch, &c->cmd, &origin, again, ts, now, &rej);
  if (r == MODEL_APPLY_TOO_LARGE) {
    kafka_source_t src = kafka_source_of(m);
    reject(c, p, &src, c->cmd.type, &rej);
    return;
  }
  c->tally[c->cmd.type][r == MODEL_APPLY_APPLIED ? 0 : 1]++;
}

static void count_burst(consumer_t *c) {
  for (int t = 0; t < MODEL_CMD_TYPE_COUNT; t++) {
    if (c->tally[t][0]) metrics_command(t, METRICS_APPLIED, c->tally[t][0]);
    if (c->tally[t][1]) metrics_command(t, METRICS_STALE, c->tally[t][1]);
    c->tally[t][0] = c->tally[t][1] = 0;
  }
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
  metrics_set_fetch_paused(pause);
  log_info(pause ? "fetching paused: unwritten changes at the memory bound" : "fetching resumed", "pending_bytes",
           LOG_INT, (int64_t)pending_bytes(c));
}

/* The configured bounds as gauges, at the start and after each reload. */
static void report_bounds(const consumer_t *c) {
  metrics_set_bounds((uint64_t)c->cfg->batch_max_pending_bytes, (uint64_t)c->cfg->cache_max_aggregates,
                     (uint64_t)c->cfg->cache_max_bytes);
}

/* Per partition: the lag from the position and from the committed offset,
 * against the high watermark of the last fetch, and the oldest uncommitted
 * command's time. */
static void report_lag(consumer_t *c) {
  for (size_t i = 0; i < offsets_count(c->offsets); i++) {
    offsets_part_t *p = offsets_at(c->offsets, i);
    metrics_set_oldest_uncommitted(p->topic, p->partition, offsets_oldest_uncommitted(p));
    int64_t lo, hi, base = offsets_commit_base(p);
    if (p->next < 0) continue;
    if (rd_kafka_get_watermark_offsets(c->rk, p->topic, p->partition, &lo, &hi) == RD_KAFKA_RESP_ERR_NO_ERROR &&
        hi >= 0) {
      metrics_set_lag(p->topic, p->partition, hi > p->next ? hi - p->next : 0);
      metrics_set_committed_lag(p->topic, p->partition, hi > base ? hi - base : 0);
    }
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
  report_bounds(c);
  flusher_set_retry(c->flusher, c->cfg->retry_backoff_ms, c->cfg->retry_backoff_max_ms);
  stall_set_timeout(&c->stall, c->cfg->batch_stall_timeout_ms);
  log_setup(c->cfg->log_level, c->cfg->log_format);
  log_info("configuration reloaded");
  if (restart[0]) log_warn("changed keys need a restart to apply", "keys", LOG_STR, restart);
}

static bool check_tick(void *ctx) {
  (void)ctx;
  metrics_heartbeat();
  return !signals_stop_count();
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
    rd_kafka_conf_destroy(conf); /* rd_kafka_new takes it on success only */
    log_error("kafka consumer", "error", LOG_STR, errstr);
    return false;
  }
  c->pokes = rd_kafka_queue_new(c->rk);
  /* docs/GUARANTEES.md: a missing topic ends the start with one line naming
   * it, rather than a worker that never gets a partition or never commits
   * its rejects. The wait for the brokers keeps /healthz alive and yields
   * to SIGTERM. */
  kafka_check_t chk = kafka_check_topics(c->rk, c->cfg, true, c->clock, check_tick, NULL, errstr, sizeof errstr);
  if (chk == KAFKA_CHECK_STOPPED) {
    c->stopped_at_start = true;
    return false;
  }
  if (chk != KAFKA_CHECK_OK) {
    log_error(errstr, "check", LOG_STR,
              kafka_check_name(chk));
    return false;
  }
  c->access = kafka_access_start(c->rk, c->cfg, c->clock);
  rd_kafka_poll_set_consumer(c->rk);

  c->dlq = deadletter_new(c->cfg, c->offsets, c->clock, errstr, sizeof errstr);
  if (!c->dlq) {
    log_error("kafka producer", "error", LOG_STR, errstr);
    return false;
  }
  if (*c->cfg->changes_topic) {
    c->ann = announcer_new(c->cfg, c->clock, errstr, sizeof errstr);
    if (!c->ann) {
      log_error("kafka producer of change events", "error", LOG_STR, errstr);
      return false;
    }
    batch_set_announcer(c->batch, announcer_announce, c->ann);
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

static void drop_pokes(consumer_t *c) {
  for (rd_kafka_event_t *e; c->pokes && (e = rd_kafka_queue_poll(c->pokes, 0));) rd_kafka_event_destroy(e);
}

static void destroy_clients(consumer_t *c) {
  metrics_set_oldest_unwritten(c->clock, INT64_MAX); /* the clock it reads goes with the run */
  metrics_set_writer_stalled(false, 0, 0);
  kafka_access_destroy(c->access);
  drop_pokes(c);
  if (c->pokes) rd_kafka_queue_destroy(c->pokes);
  if (c->rk) rd_kafka_destroy(c->rk);
  deadletter_destroy(c->dlq);
  if (c->ann) batch_set_announcer(c->batch, NULL, NULL);
  announcer_destroy(c->ann);
  for (size_t i = 0; c->offsets && i < offsets_count(c->offsets); i++)
    metrics_clear_lag(offsets_at(c->offsets, i)->topic, offsets_at(c->offsets, i)->partition);
  offsets_destroy(c->offsets);
}

/* --- the run --------------------------------------------------------------------- */

/* The writer thread and the Kafka clients. False when the run ends here:
 * *rc is 0 if a stop signal came while waiting for the brokers, else 1. */
static bool start(consumer_t *c, const sink_t *sink, int *rc) {
  *rc = 1;
  c->offsets = offsets_new();
  report_bounds(c);
  c->flusher = flusher_new(c->batch, sink, IDLE_PING_MS, c->clock);
  if (!c->flusher) {
    log_error("cannot start the writer thread");
    return false;
  }
  flusher_set_retry(c->flusher, c->cfg->retry_backoff_ms, c->cfg->retry_backoff_max_ms);
  if (!create_clients(c)) {
    if (c->stopped_at_start) {
      log_info("stopped before consuming anything");
      *rc = 0;
    }
    return false;
  }
  log_info("worker started", "group", LOG_STR, c->cfg->kafka_group, "group_protocol", LOG_STR,
           c->cfg->kafka_group_protocol == CONFIG_GROUP_PROTOCOL_CLASSIC ? "classic" : "consumer", "topics", LOG_STR,
           c->cfg->kafka_topics);
  return true;
}

/* Polls until the next thing to do (at most 100 ms), then handles what
 * librdkafka has queued in one burst: the rest of a turn (clocks, the flush
 * check, the dead-letter producer's poll) is paid once per burst instead of
 * once per message, where clock reads alone would be a large share of the
 * worker's CPU. A burst is a few milliseconds of merging at most. Returns
 * the time of the burst.
 *
 * Messages are taken one at a time with rd_kafka_consumer_poll, not with
 * the batch read replay uses: in librdkafka before 2.1 a batch read can
 * skip offsets of a partition that is paused and resumed, and the worker
 * pauses and resumes for backpressure (replay only ever pauses a partition
 * it has finished). */
static batch_now_t consume_burst(consumer_t *c) {
  int64_t now = clock_mono(c->clock);
  int64_t wake = now + 100;
  int64_t due = flusher_wake_ms(c->flusher);
  if (due < wake) wake = due;
  /* The writer does not wake the poll: a flush in flight is looked for
   * every few ms (under load the poll returns at once anyway). */
  if (flusher_in_flight(c->flusher) && now + FLIGHT_POLL_MS < wake) wake = now + FLIGHT_POLL_MS;
  rd_kafka_message_t *m = rd_kafka_consumer_poll(c->rk, (int)(wake > now ? wake - now : 0));
  batch_now_t burst = batch_now(c->clock);
  for (int k = 0; m;) {
    handle_message(c, m, burst);
    rd_kafka_message_destroy(m);
    if (++k == CONSUME_BURST || c->fatal || signals_stop_count()) break;
    m = rd_kafka_consumer_poll(c->rk, 0);
  }
  count_burst(c);
  return burst;
}

/* One turn of the main loop: a burst, then flushing, commits, the memory
 * bound, the once-a-second chores and a reload if asked. */
static void turn(consumer_t *c, const consumer_reload_t *rl) {
  batch_now_t burst = consume_burst(c);
  int64_t now = burst.mono_ms;
  deadletter_poll(c->dlq, 0);

  bool landed = flush_step(c, burst, 0, false);
  landed |= announced(c, 0);
  if (landed || (!batch_dirty(c->batch) && now - c->last_commit >= 1000)) {
    commit(c, NULL, false);
    c->last_commit = now;
  }

  /* In-flight snapshots count: they are memory held for unwritten changes. */
  uint64_t pending = pending_bytes(c);
  if (!c->paused && pending > (uint64_t)c->cfg->batch_max_pending_bytes) set_paused(c, true);
  else if (c->paused && pending <= (uint64_t)c->cfg->batch_max_pending_bytes / 2) set_paused(c, false);

  if (now - c->last_tick >= 1000) {
    c->last_tick = now;
    metrics_heartbeat();
    drop_pokes(c);
    report_lag(c);
    update_gauges(c);
    check_stall(c, now);
    kafka_access_tick(c->access);
  }
  if (signals_take_reload()) reload(c, rl);
}

/* Bounded (docs/GUARANTEES.md): writes and commits what is held until
 * shutdown.timeout_ms, a flush or load in progress included; a second
 * signal gives up at once. What is not durable then stays uncommitted (the
 * next owner reads it again); what is, is committed either way. Returns the
 * run's exit code. */
static int stop(consumer_t *c) {
  const config_t *cfg = c->cfg;
  c->stop_deadline = clock_mono(c->clock) + cfg->shutdown_timeout_ms;
  log_info("stopping: writing and committing what is held", "timeout_ms", LOG_INT, cfg->shutdown_timeout_ms,
           "dirty_aggregates", LOG_INT, (int64_t)batch_dirty_count(c->batch), "flush_in_flight", LOG_INT,
           (int64_t)flusher_in_flight(c->flusher));
  bool drained = drain(c, c->stop_deadline);
  commit(c, NULL, true);
  rd_kafka_consumer_close(c->rk); /* leaves the group; its revocation's drain ends at stop_deadline too */
  const batch_stats_t *s = batch_stats(c->batch);
  if (drained && !c->fatal) {
    log_info("stopped", "applied", LOG_INT, (int64_t)s->applied, "stale", LOG_INT, (int64_t)s->stale, "writes",
             LOG_INT, (int64_t)s->writes_ok, "conflicts", LOG_INT, (int64_t)s->conflicts);
    return 0;
  }
  log_error("stopped before everything was durable; those offsets stay uncommitted", "timeout_ms", LOG_INT,
            cfg->shutdown_timeout_ms, "dirty_aggregates", LOG_INT, (int64_t)batch_dirty_count(c->batch),
            "flush_in_flight", LOG_INT, (int64_t)flusher_in_flight(c->flusher));
  return 1;
}

/* Stops the writer thread and destroys the clients. A flush still in the
 * store now is not waited for past the deadline: the writer thread is
 * abandoned with it (cli_run then leaves the store alone). */
static void finish(consumer_t *c) {
  int64_t left =
      c->stop_deadline == INT64_MAX ? c->cfg->shutdown_timeout_ms : c->stop_deadline - clock_mono(c->clock);
  if (!flusher_destroy_within(c->flusher, left > 0 ? left : 0))
    log_warn("exiting with a store call in progress; its flush is not committed");
  destroy_clients(c);
}

int consumer_run(config_t *cfg, batch_t *batch, const sink_t *sink, const clock_source_t *clock,
                 const consumer_reload_t *rl) {
  consumer_t *c = oom_calloc(1, sizeof *c);
  c->cfg = cfg;
  c->batch = batch;
  c->clock = clock;
  c->stop_deadline = INT64_MAX;
  stall_init(&c->stall, cfg->batch_stall_timeout_ms);
  srand((unsigned)clock_wall(clock) ^ (unsigned)getpid()); /* the retry jitter's seed: any value differing per run */
  signals_install(SIGNALS_STOP | SIGNALS_RELOAD | SIGNALS_IGNORE_PIPE);
  metrics_set_assigned(false);
  batch_holding_t how = {(size_t)cfg->limits_max_command_bytes, reject_late, c};
  batch_set_holding(batch, &how);
  int rc;
  if (start(c, sink, &rc)) {
    while (!signals_stop_count() && !c->fatal) turn(c, rl);
    if (!c->fatal) rc = stop(c);
  }
  finish(c);
  batch_set_holding(batch, NULL); /* its ctx, c, goes now */
  free(c);
  return rc;
}
