/* The sources of a replay: see replay_source.h. */
#include "replay_source.h"

#include <errno.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/clock.h"
#include "source/kafka.h"
#include "base/log.h"
#include "oom.h"
#include "base/progress.h"
#include "base/redact.h"
#include "replay_lines.h"
#include "base/signals.h"
#include "timestamp.h"

/* --- progress ------------------------------------------------------------------ */

/* Commands read so far, of `total` (0 = unknown: file input). */
static void show_read(progress_t *p, uint64_t total, uint64_t done, bool final) {
  if (!progress_due(p, final)) return;
  double el = progress_elapsed(p), rate = el > 0 ? (double)done / el : 0;
  char line[160];
  log_field_t f[5] = {{.key = "read", .type = LOG_INT, .i = (int64_t)done},
                      {.key = "rate", .type = LOG_DBL, .d = rate}};
  size_t n = 2;
  if (total) {
    double eta = rate > 0 && total > done ? (double)(total - done) / rate : 0;
    snprintf(line, sizeof line, "%" PRIu64 " of %" PRIu64 " commands (%.0f%%), %.0f/s, ETA %.0f s", done, total,
             100.0 * (double)done / (double)total, rate, eta);
    f[n++] = (log_field_t){.key = "total", .type = LOG_INT, .i = (int64_t)total};
    f[n++] = (log_field_t){.key = "eta_s", .type = LOG_DBL, .d = eta};
  } else {
    snprintf(line, sizeof line, "%" PRIu64 " commands, %.0f/s", done, rate);
  }
  progress_show(p, final, line, f, n);
}

/* --- lines ------------------------------------------------------------------------- */

/* Every block of lines, each handed over whole (blocks) or line by line
 * where it lies (feed->message): no copy per line, and one stdio call per
 * piece of a block. */
static bool lines_feed(replay_lines_t *l, const replay_feed_t *feed, const replay_block_feed_t *blocks,
                       progress_t *pr, uint64_t *done) {
  model_buf_t own = MODEL_BUF_INIT;
  bool ok = true;
  while (ok && !signals_stop_count()) {
    model_buf_t *block = blocks ? blocks->block(feed->ctx) : &own;
    if (!block) {
      ok = false;
      break;
    }
    size_t long_len;
    if (!replay_lines_read(l, block, REPLAY_LINES_BLOCK, &long_len)) break;
    if (blocks) {
      ok = blocks->done(feed->ctx, long_len, done);
    } else if (long_len) {
      ok = feed->message(feed->ctx, NULL, long_len, 0);
      ++*done;
    } else {
      const char *line;
      size_t at = 0, len;
      while (ok && replay_lines_next(block->data, block->len, &at, &line, &len)) {
        ok = feed->message(feed->ctx, line, len, 0);
        ++*done;
      }
    }
    show_read(pr, 0, *done, false);
  }
  model_buf_destroy(&own);
  return ok;
}

bool replay_source_blocks(FILE *in, const char *shown, size_t max_line, const replay_feed_t *feed,
                          const replay_block_feed_t *blocks) {
  progress_t pr = progress_start(feed->label);
  uint64_t done = 0;
  replay_lines_t l = REPLAY_LINES_INIT(in, max_line);
  bool ok = lines_feed(&l, feed, blocks, &pr, &done);
  if (ok && ferror(in) && !signals_stop_count()) { /* a stop: read() cut short (EINTR) */
    log_error("replay: cannot read the input", "file", LOG_STR, shown, "error", LOG_STR, strerror(errno));
    ok = false;
  }
  show_read(&pr, 0, done, true);
  replay_lines_free(&l);
  return ok && !signals_stop_count();
}

/* --- topics: the plan --------------------------------------------------------------- */

bool replay_parse_bound(const char *s, const char *word, int64_t *ms, bool *special) {
  replay_bound_t b;
  char err[256];
  bool ok = replay_bound_parse(s, word, &b, err, sizeof err);
  *special = ok && b.kind == REPLAY_BOUND_EDGE;
  if (ok && b.kind == REPLAY_BOUND_TIME) *ms = b.ms;
  replay_bound_free(&b);
  return ok;
}

/* The offsets [start, end) of one partition that the replay reads. */
typedef struct range {
  char *topic;
  int32_t partition;
  int64_t start, end;
} range_t;

typedef struct plan {
  range_t *ranges;
  size_t n;
  uint64_t total; /* messages in all ranges */
} plan_t;

static void plan_destroy(plan_t *p) {
  for (size_t i = 0; i < p->n; i++) free(p->ranges[i].topic);
  free(p->ranges);
}

/* Every partition of the configured topics into *all. */
static bool list_partitions(rd_kafka_t *rk, const config_t *cfg, rd_kafka_topic_partition_list_t *all) {
  rd_kafka_topic_partition_list_t *topics = kafka_topic_list(cfg);
  bool ok = true;
  for (int i = 0; i < topics->cnt && ok; i++) {
    const rd_kafka_metadata_t *md;
    rd_kafka_topic_t *t = rd_kafka_topic_new(rk, topics->elems[i].topic, NULL);
    rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, t, &md, 30000);
    if (e || md->topic_cnt != 1 || md->topics[0].err) {
      log_error("replay: cannot read topic metadata", "topic", LOG_STR, topics->elems[i].topic, "error", LOG_STR,
                rd_kafka_err2str(e ? e : md->topics[0].err));
      ok = false;
    } else {
      for (int p = 0; p < md->topics[0].partition_cnt; p++)
        rd_kafka_topic_partition_list_add(all, topics->elems[i].topic, md->topics[0].partitions[p].id);
    }
    if (!e) rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(t);
  }
  rd_kafka_topic_partition_list_destroy(topics);
  return ok;
}

/* Every entry of an offsets: bound names a partition that exists: a typo
 * would otherwise read a whole partition, or nothing, in silence. */
static bool offsets_named_exist(const replay_bound_t *b, const rd_kafka_topic_partition_list_t *all) {
  for (size_t k = 0; k < b->n; k++) {
    const replay_bound_offset_t *e = &b->offsets[k];
    bool found = false;
    for (int i = 0; i < all->cnt && !found; i++)
      found = all->elems[i].partition == e->partition && (!e->topic || !strcmp(e->topic, all->elems[i].topic));
    if (!found) {
      if (e->topic)
        log_error("replay: offsets: no such partition of the configured topics", "topic", LOG_STR, e->topic,
                  "partition", LOG_INT, (int64_t)e->partition);
      else
        log_error("replay: offsets: no configured topic has that partition", "partition", LOG_INT,
                  (int64_t)e->partition);
      return false;
    }
  }
  return true;
}

/* GROUP's committed offsets of the partitions of at, into at (-1001 where
 * it committed nothing), by the admin request alone: no group join, no
 * commit. False, with a line naming GROUP, when it fails or when GROUP has
 * no committed offset on any of them. */
static bool committed_offsets(rd_kafka_t *rk, const char *group, rd_kafka_topic_partition_list_t *at) {
  char errstr[512];
  rd_kafka_ListConsumerGroupOffsets_t *req = rd_kafka_ListConsumerGroupOffsets_new(group, at);
  rd_kafka_AdminOptions_t *opt = rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS);
  rd_kafka_AdminOptions_set_request_timeout(opt, 30000, errstr, sizeof errstr);
  rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
  rd_kafka_ListConsumerGroupOffsets(rk, &req, 1, opt, q);
  /* The request's own timeout answers first; this bound is the last resort. */
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 40000);
  const char *why = NULL;
  int found = 0;
  for (int i = 0; i < at->cnt; i++) at->elems[i].offset = RD_KAFKA_OFFSET_INVALID;
  if (!ev) {
    why = "no answer within 40 s";
  } else if (rd_kafka_event_error(ev)) {
    why = rd_kafka_event_error_string(ev);
  } else {
    size_t n = 0;
    const rd_kafka_group_result_t **g =
        rd_kafka_ListConsumerGroupOffsets_result_groups(rd_kafka_event_ListConsumerGroupOffsets_result(ev), &n);
    const rd_kafka_error_t *ge = n == 1 ? rd_kafka_group_result_error(g[0]) : NULL;
    if (n != 1) {
      why = "no answer for the group";
    } else if (ge) {
      why = rd_kafka_error_string(ge);
    } else {
      const rd_kafka_topic_partition_list_t *got = rd_kafka_group_result_partitions(g[0]);
      for (int k = 0; got && k < got->cnt; k++) {
        const rd_kafka_topic_partition_t *e = &got->elems[k];
        if (e->err || e->offset < 0) continue;
        rd_kafka_topic_partition_t *mine = rd_kafka_topic_partition_list_find(at, e->topic, e->partition);
        if (mine) {
          mine->offset = e->offset;
          found++;
        }
      }
    }
  }
  if (why) {
    log_error("replay: cannot read the committed offsets of the group", "group", LOG_STR, group, "error", LOG_STR,
              why);
  } else if (!found) {
    log_error("replay: the group has no committed offset on the configured topics (kafka.topics): no such group, "
              "or a group of other topics",
              "group", LOG_STR, group);
  }
  if (ev) rd_kafka_event_destroy(ev);
  rd_kafka_queue_destroy(q);
  rd_kafka_AdminOptions_destroy(opt);
  rd_kafka_ListConsumerGroupOffsets_destroy(req);
  return !why && found;
}

/* A copy of all with each partition's offset for the bound b, looked up
 * where it needs a lookup (a time: one request; a group's commits: one
 * request); -1 where the bound gives none (replay_bound_at says what then). */
static rd_kafka_topic_partition_list_t *bound_lookup(rd_kafka_t *rk, const rd_kafka_topic_partition_list_t *all,
                                                     const replay_bound_t *b, bool *ok) {
  rd_kafka_topic_partition_list_t *at = rd_kafka_topic_partition_list_copy(all);
  for (int i = 0; i < at->cnt; i++) at->elems[i].offset = -1;
  if (!*ok) return at;
  switch (b->kind) {
  case REPLAY_BOUND_EDGE:
    break;
  case REPLAY_BOUND_TIME:
    for (int i = 0; i < at->cnt; i++) at->elems[i].offset = b->ms;
    if (rd_kafka_offsets_for_times(rk, at, 30000)) {
      log_error("replay: cannot look up offsets");
      *ok = false;
    }
    break;
  case REPLAY_BOUND_COMMITTED:
    *ok = committed_offsets(rk, b->group, at);
    break;
  case REPLAY_BOUND_OFFSETS:
    *ok = offsets_named_exist(b, all);
    for (int i = 0; i < at->cnt; i++) {
      const replay_bound_offset_t *e = replay_bound_offset_of(b, at->elems[i].topic, at->elems[i].partition);
      if (e) at->elems[i].offset = e->offset;
    }
    break;
  }
  return at;
}

/* One partition's offset for bound b, from its looked-up offset, before
 * clamping: a time with no message that late is the end (offsets_for_times
 * answers -1); a partition the group committed nothing of is its log start;
 * one that offsets: does not name is the bound's edge. */
static int64_t bound_at(const replay_bound_t *b, int64_t looked_up, bool from, int64_t lo, int64_t hi) {
  int64_t edge = from ? lo : hi;
  switch (b->kind) {
  case REPLAY_BOUND_TIME:
    return looked_up < 0 ? hi : looked_up;
  case REPLAY_BOUND_COMMITTED:
    return looked_up < 0 ? lo : looked_up;
  case REPLAY_BOUND_OFFSETS:
    return looked_up < 0 ? edge : looked_up;
  case REPLAY_BOUND_EDGE:
    break;
  }
  return edge;
}

/* Fills p->ranges from the watermarks and the offsets of the two bounds. */
static bool plan_fill(rd_kafka_t *rk, const rd_kafka_topic_partition_list_t *all, const replay_bound_t *fb,
                      const rd_kafka_topic_partition_list_t *from, const replay_bound_t *ub,
                      const rd_kafka_topic_partition_list_t *until, plan_t *p) {
  for (int i = 0; i < all->cnt; i++) {
    int64_t lo, hi;
    rd_kafka_resp_err_t e =
        rd_kafka_query_watermark_offsets(rk, all->elems[i].topic, all->elems[i].partition, &lo, &hi, 30000);
    if (e) {
      log_error("replay: cannot read watermarks", "error", LOG_STR, rd_kafka_err2str(e));
      return false;
    }
    range_t *r = &p->ranges[i];
    r->topic = oom_strdup(all->elems[i].topic);
    r->partition = all->elems[i].partition;
    r->start = replay_bound_clamp(bound_at(fb, from->elems[i].offset, true, lo, hi), lo, hi);
    r->end = replay_bound_clamp(bound_at(ub, until->elems[i].offset, false, lo, hi), r->start, hi);
    p->total += (uint64_t)(r->end - r->start);
  }
  return true;
}

static bool plan_ranges(rd_kafka_t *rk, const config_t *cfg, const char *from_s, const char *until_s, plan_t *p) {
  replay_bound_t fb = {0}, ub = {0};
  char err[256];
  bool ok = replay_bound_parse(from_s, "beginning", &fb, err, sizeof err) &&
            replay_bound_parse(until_s, "end", &ub, err, sizeof err);
  if (!ok) { /* the CLI checked: exit 2 there */
    log_error("replay: bad --from/--until", "error", LOG_STR, err);
    replay_bound_free(&fb);
    replay_bound_free(&ub);
    return false;
  }
  rd_kafka_topic_partition_list_t *all = rd_kafka_topic_partition_list_new(16);
  ok = list_partitions(rk, cfg, all);
  p->ranges = oom_calloc((size_t)all->cnt + 1, sizeof *p->ranges);
  p->n = (size_t)all->cnt;
  rd_kafka_topic_partition_list_t *from = bound_lookup(rk, all, &fb, &ok), *until = bound_lookup(rk, all, &ub, &ok);
  if (ok) ok = plan_fill(rk, all, &fb, from, &ub, until, p);
  rd_kafka_topic_partition_list_destroy(from);
  rd_kafka_topic_partition_list_destroy(until);
  rd_kafka_topic_partition_list_destroy(all);
  replay_bound_free(&fb);
  replay_bound_free(&ub);
  return ok;
}

/* Assigns the non-empty ranges at their start; returns how many. */
static size_t plan_assign(rd_kafka_t *rk, const plan_t *p) {
  size_t remaining = 0;
  rd_kafka_topic_partition_list_t *assign = rd_kafka_topic_partition_list_new((int)p->n + 1);
  for (size_t i = 0; i < p->n; i++) {
    if (p->ranges[i].end <= p->ranges[i].start) continue;
    rd_kafka_topic_partition_list_add(assign, p->ranges[i].topic, p->ranges[i].partition)->offset = p->ranges[i].start;
    remaining++;
  }
  if (remaining) rd_kafka_assign(rk, assign);
  rd_kafka_topic_partition_list_destroy(assign);
  return remaining;
}

/* --- topics: the consumer ------------------------------------------------------------ */

static bool check_tick(void *ctx) {
  (void)ctx;
  return !signals_stop_count();
}

/* A consumer of the configured topics, which must exist (the dead-letter
 * topic is not the replay's business); NULL with a message. */
static rd_kafka_t *consumer_new(const config_t *cfg) {
  char errstr[512], group[64];
  /* A group id of its own, never committed to: the live group's offsets do
   * not move, and nothing is left behind on the broker. */
  snprintf(group, sizeof group, "aggregator-replay-%d", (int)getpid());
  const char *forced[] = {"group.id", group, "enable.auto.commit", "false", "enable.auto.offset.store", "false",
                          NULL};
  rd_kafka_conf_t *conf = kafka_conf_new(cfg, KAFKA_REPLAY_CONSUMER, forced, errstr, sizeof errstr);
  rd_kafka_t *rk = conf ? rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr) : NULL;
  if (!rk) {
    if (conf) rd_kafka_conf_destroy(conf); /* rd_kafka_new takes it on success only */
    /* librdkafka's words may quote a property's value: scrubbed like every
     * log line (redact.h). */
    redact_set_scrub_str(redact_global(), errstr, sizeof errstr);
    log_error("replay: cannot create the consumer", "error", LOG_STR, errstr);
    return NULL;
  }
  kafka_check_t chk = kafka_check_topics(rk, cfg, false, clock_system(), check_tick, NULL, errstr, sizeof errstr);
  if (chk != KAFKA_CHECK_OK) {
    if (chk != KAFKA_CHECK_STOPPED)
      log_error(errstr, "check", LOG_STR,
                kafka_check_name(chk));
    rd_kafka_destroy(rk);
    return NULL;
  }
  return rk;
}

typedef struct reading {
  rd_kafka_t *rk;
  plan_t plan;
  size_t remaining; /* ranges not read to their end */
  uint64_t done;    /* messages fed */
  const replay_feed_t *feed;
  replay_position_t *at; /* NULL = not wanted */
} reading_t;

static range_t *range_of(const plan_t *p, const rd_kafka_message_t *m) {
  for (size_t i = 0; i < p->n; i++)
    if (p->ranges[i].partition == m->partition && !strcmp(p->ranges[i].topic, rd_kafka_topic_name(m->rkt)))
      return &p->ranges[i];
  return NULL;
}

/* Feeds one message if it is in its range; false when the feed says stop. */
static bool take(reading_t *rd, const rd_kafka_message_t *m) {
  if (m->err) {
    if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
      log_warn("replay: consumer error", "error", LOG_STR, rd_kafka_message_errstr(m));
    return true;
  }
  range_t *rg = range_of(&rd->plan, m);
  /* A batch can hold messages fetched before the partition was paused:
   * the offset check drops those past --until. */
  if (!rg || m->offset >= rg->end) return true;
  rd_kafka_timestamp_type_t tt;
  if (rd->at) *rd->at = (replay_position_t){rd_kafka_topic_name(m->rkt), m->partition, m->offset};
  bool ok = rd->feed->message(rd->feed->ctx, m->payload, m->len, rd_kafka_message_timestamp(m, &tt));
  rd->done++;
  if (m->offset + 1 >= rg->end) {
    rd->remaining--;
    /* Stop fetching it: later messages are past --until. */
    rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(l, rg->topic, rg->partition);
    rd_kafka_pause_partitions(rd->rk, l);
    rd_kafka_topic_partition_list_destroy(l);
  }
  return ok;
}

/* Reads until every range is done, the feed says stop, or a stop signal. */
static bool consume(reading_t *rd, progress_t *pr) {
  /* Messages are taken from the consumer queue in batches: one queue lock
   * and one wake-up per batch instead of per message. The wait returns early
   * once the batch is full, so a steady stream never waits for the timeout. */
  enum { REPLAY_BATCH = 4096 };
  rd_kafka_message_t **msgs = oom_malloc(REPLAY_BATCH * sizeof *msgs);
  rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(rd->rk);
  bool ok = true;
  while (ok && rd->remaining && !signals_stop_count()) {
    ssize_t got = rd_kafka_consume_batch_queue(q, 200, msgs, REPLAY_BATCH);
    if (got <= 0 && rd->feed->idle) ok = rd->feed->idle(rd->feed->ctx);
    for (ssize_t k = 0; k < got; k++) {
      /* Once stopping, the rest of the batch is only released. */
      if (ok && !signals_stop_count()) ok = take(rd, msgs[k]);
      rd_kafka_message_destroy(msgs[k]);
    }
    show_read(pr, rd->plan.total, rd->done, false);
  }
  rd_kafka_queue_destroy(q);
  free(msgs);
  return ok;
}

bool replay_source_topics(const config_t *cfg, const char *from, const char *until, const replay_feed_t *feed) {
  return replay_source_topics_at(cfg, from, until, feed, NULL);
}

bool replay_source_topics_at(const config_t *cfg, const char *from, const char *until, const replay_feed_t *feed,
                             replay_position_t *at) {
  reading_t rd = {.rk = consumer_new(cfg), .feed = feed, .at = at};
  if (!rd.rk) return false;
  bool ok = plan_ranges(rd.rk, cfg, from, until, &rd.plan);
  if (ok) rd.remaining = plan_assign(rd.rk, &rd.plan);
  progress_t pr = progress_start(feed->label);
  if (ok) ok = consume(&rd, &pr);
  show_read(&pr, rd.plan.total, rd.done, true);
  plan_destroy(&rd.plan);
  rd_kafka_consumer_close(rd.rk);
  rd_kafka_destroy(rd.rk);
  return ok && !signals_stop_count();
}
