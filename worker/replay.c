#include "replay.h"

#include <errno.h>
#include <inttypes.h>
#include <librdkafka/rdkafka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "batch.h"
#include "codec.h"
#include "flusher.h"
#include "kafka.h"
#include "clock.h"
#include "log.h"
#include "oom.h"
#include "redact.h"
#include "signals.h"
#include "store.h"
#include "timestamp.h"

/* --- progress ------------------------------------------------------------------ */

typedef struct progress {
  bool tty;
  double start, last;
  uint64_t total; /* 0 = unknown (file input) */
  const char *label;
  /* On a terminal the line redraws in place; otherwise a plain line every
   * 10 s keeps logs readable. */
} progress_t;

static void progress_show(progress_t *p, uint64_t done, bool final) {
  double now = clock_mono_s();
  if (!final && now - p->last < (p->tty ? 0.2 : 10.0)) return;
  p->last = now;
  double el = now - p->start, rate = el > 0 ? (double)done / el : 0;
  char line[160];
  if (p->total) {
    double eta = rate > 0 && p->total > done ? (double)(p->total - done) / rate : 0;
    snprintf(line, sizeof line, "%s: %" PRIu64 " of %" PRIu64 " commands (%.0f%%), %.0f/s, ETA %.0f s", p->label,
             done, p->total, 100.0 * (double)done / (double)p->total, rate, eta);
  } else {
    snprintf(line, sizeof line, "%s: %" PRIu64 " commands, %.0f/s", p->label, done, rate);
  }
  if (p->tty)
    fprintf(stderr, "\r\033[K%s%s", line, final ? "\n" : "");
  else
    fprintf(stderr, "%s\n", line);
}

/* The progress line's name: "replay", or the caller's (verify). */
static const char *label_of(const replay_options_t *o) { return o->label ? o->label : "replay"; }

/* --- sinks ------------------------------------------------------------------------ */

typedef struct collect {
  const model_aggregate_t **list;
  size_t n;
} collect_t;

static void collect_one(void *ctx, const model_aggregate_t *agg, int64_t rev) {
  (void)rev;
  collect_t *c = ctx;
  c->list[c->n++] = agg;
}

static int cmp_key(const void *x, const void *y) {
  return strcmp(model_aggregate_key(*(const model_aggregate_t *const *)x, NULL),
                model_aggregate_key(*(const model_aggregate_t *const *)y, NULL));
}

/* --output: the final documents, sorted by _id, each with rev 1 (the file is
 * one write of each document). */
static bool write_output(batch_t *b, const char *path, uint64_t *written) {
  FILE *f = strcmp(path, "-") ? fopen(path, "w") : stdout;
  if (!f) {
    fprintf(stderr, "aggregator: replay: cannot open '%s': %s\n", path, strerror(errno));
    return false;
  }
  collect_t c = {oom_malloc((batch_dirty_count(b) + batch_cached_count(b) + 1) * sizeof *c.list), 0};
  batch_foreach(b, collect_one, &c);
  qsort(c.list, c.n, sizeof *c.list, cmp_key);
  model_buf_t buf = MODEL_BUF_INIT;
  int64_t now = clock_wall_ms();
  bool ok = true;
  for (size_t i = 0; i < c.n && ok; i++) {
    model_codec_to_json(c.list[i], 1, now, &buf);
    if (buf.len >= 1 << 16 || i + 1 == c.n) {
      ok = fwrite(buf.data, 1, buf.len, f) == buf.len;
      model_buf_clear(&buf);
    }
  }
  *written = c.n;
  ok = (f == stdout ? fflush(f) == 0 : fclose(f) == 0) && ok;
  if (!ok) fprintf(stderr, "aggregator: replay: cannot write '%s': %s\n", path, strerror(errno));
  model_buf_destroy(&buf);
  free(c.list);
  return ok;
}

/* One step of the writer pipeline (flusher.h); false on a fatal store
 * error. A replay has no one to hand its work to, so it waits out a store
 * outage (with backoff) unless interrupted. */
static bool step(flusher_t *f, int64_t wait_ms, bool force) {
  flusher_event_t ev = flusher_step(f, batch_now(clock_system()), wait_ms, force);
  if (!ev.finished || ev.status == BATCH_DONE || ev.status == BATCH_PARTIAL) return true;
  if (ev.status == BATCH_FATAL) {
    log_error("replay: store write failed", "error", LOG_STR, ev.err.message);
    return false;
  }
  if (ev.attempt == 1 || ev.attempt % 10 == 0)
    log_warn("replay: store write failed, retrying", "error", LOG_STR, ev.err.message, "retry_in_ms", LOG_INT,
             ev.retry_in_ms);
  return true;
}

/* Writes everything held; false if interrupted or on a fatal error. */
static bool flush_until_done(flusher_t *f, batch_t *b) {
  while (batch_dirty(b)) {
    if (signals_stop_count() || !step(f, 1000, true)) return false;
  }
  return true;
}

/* --- the replay ------------------------------------------------------------------- */

typedef struct replay {
  const config_t *cfg;
  batch_t *batch;
  flusher_t *flusher; /* into the store: the writer thread owns the connection */
  bool to_store;
  model_command_t cmd;
  replay_stats_t *st;
  FILE *rejects; /* --rejects with --input: {"line","code","detail"} lines */
  model_buf_t rbuf;
} replay_t;

static bool feed(replay_t *r, const char *data, size_t len, int64_t event_ms) {
  r->st->read++;
  model_reject_t rej;
  if (!model_command_decode(data ? data : "", len, (size_t)r->cfg->limits_max_command_bytes, &r->cmd, &rej)) {
    r->st->rejected++;
    if (r->rejects) { /* the line number is the count read so far */
      model_buf_clear(&r->rbuf);
      model_buf_printf(&r->rbuf, "{\"line\":%llu,\"code\":\"%s\",\"detail\":", (unsigned long long)r->st->read,
                       model_reject_code_name(rej.code));
      model_buf_json_string(&r->rbuf, rej.detail, strlen(rej.detail));
      model_buf_puts(&r->rbuf, "}\n");
      if (fwrite(r->rbuf.data, 1, r->rbuf.len, r->rejects) != r->rbuf.len) {
        fprintf(stderr, "aggregator: replay: cannot write the rejects file: %s\n", strerror(errno));
        return false;
      }
    }
    return true;
  }
  batch_now_t now = batch_now(clock_system());
  batch_apply(r->batch, &r->cmd, event_ms > 0 ? event_ms : now.wall_ms, now);
  if (!r->to_store) return true;
  if (!step(r->flusher, 0, false)) return false;
  /* The memory bound, in-flight snapshots included: wait for the writer. */
  while (batch_pending_bytes(r->batch) > (size_t)r->cfg->batch_max_pending_bytes && batch_dirty(r->batch)) {
    if (signals_stop_count() || !step(r->flusher, 100, true)) return false;
  }
  return true;
}

static bool replay_input(replay_t *r, const char *path, const char *label) {
  FILE *in = strcmp(path, "-") ? fopen(path, "r") : stdin;
  if (!in) {
    fprintf(stderr, "aggregator: replay: cannot open '%s': %s\n", path, strerror(errno));
    return false;
  }
  progress_t pr = {isatty(2), clock_mono_s(), clock_mono_s(), 0, label};
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  bool ok = true;
  while (ok && !signals_stop_count() && (n = getline(&line, &cap, in)) >= 0) {
    size_t len = (size_t)n;
    if (len && line[len - 1] == '\n') len--;
    ok = feed(r, line, len, 0);
    progress_show(&pr, r->st->read, false);
  }
  if (ok && ferror(in)) {
    fprintf(stderr, "aggregator: replay: cannot read '%s': %s\n", path, strerror(errno));
    ok = false;
  }
  progress_show(&pr, r->st->read, true);
  free(line);
  if (in != stdin) fclose(in);
  return ok && !signals_stop_count();
}

/* "beginning"/"end" (returns `special`) or an RFC 3339 time in ms. */
bool replay_parse_bound(const char *s, const char *word, int64_t *ms, bool *special) {
  *special = !s || !strcmp(s, word);
  if (*special) return true;
  return model_timestamp_parse(s, strlen(s), ms);
}

typedef struct range {
  char *topic;
  int32_t partition;
  int64_t start, end;
} range_t;

static bool plan_ranges(rd_kafka_t *rk, const config_t *cfg, const replay_options_t *o, range_t **out, size_t *nout,
                        uint64_t *total) {
  int64_t from_ms = 0, until_ms = 0;
  bool from_begin, until_end;
  if (!replay_parse_bound(o->from, "beginning", &from_ms, &from_begin) ||
      !replay_parse_bound(o->until, "end", &until_ms, &until_end)) { /* the CLI checked: exit 2 there */
    fprintf(stderr, "aggregator: replay: --from and --until take beginning/end or an RFC 3339 UTC time\n");
    return false;
  }
  rd_kafka_topic_partition_list_t *topics = kafka_topic_list(cfg);
  rd_kafka_topic_partition_list_t *all = rd_kafka_topic_partition_list_new(16);
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
  range_t *ranges = oom_calloc((size_t)all->cnt + 1, sizeof *ranges);
  /* Offsets for the two times, looked up in one request each. */
  rd_kafka_topic_partition_list_t *from = rd_kafka_topic_partition_list_copy(all),
                                  *until = rd_kafka_topic_partition_list_copy(all);
  for (int i = 0; i < all->cnt; i++) {
    from->elems[i].offset = from_ms;
    until->elems[i].offset = until_ms;
  }
  if (ok && !from_begin && rd_kafka_offsets_for_times(rk, from, 30000)) ok = false;
  if (ok && !until_end && rd_kafka_offsets_for_times(rk, until, 30000)) ok = false;
  if (!ok) fprintf(stderr, "aggregator: replay: cannot look up offsets\n");
  *total = 0;
  for (int i = 0; i < all->cnt && ok; i++) {
    int64_t lo, hi;
    rd_kafka_resp_err_t e =
        rd_kafka_query_watermark_offsets(rk, all->elems[i].topic, all->elems[i].partition, &lo, &hi, 30000);
    if (e) {
      log_error("replay: cannot read watermarks", "error", LOG_STR, rd_kafka_err2str(e));
      ok = false;
      break;
    }
    range_t *r = &ranges[i];
    r->topic = oom_strdup(all->elems[i].topic);
    r->partition = all->elems[i].partition;
    /* offsets_for_times answers -1 (end) when no message is that late. */
    r->start = from_begin ? lo : from->elems[i].offset < 0 ? hi : from->elems[i].offset;
    r->end = until_end ? hi : until->elems[i].offset < 0 ? hi : until->elems[i].offset;
    if (r->start < lo) r->start = lo;
    if (r->end < r->start) r->end = r->start;
    *total += (uint64_t)(r->end - r->start);
  }
  *nout = (size_t)all->cnt;
  *out = ranges;
  rd_kafka_topic_partition_list_destroy(from);
  rd_kafka_topic_partition_list_destroy(until);
  rd_kafka_topic_partition_list_destroy(all);
  return ok;
}

static bool check_tick(void *ctx) {
  (void)ctx;
  return !signals_stop_count();
}

static bool replay_topics(replay_t *r, const replay_options_t *o) {
  char errstr[512], group[64];
  /* A group id of its own, never committed to: the live group's offsets do
   * not move, and nothing is left behind on the broker. */
  snprintf(group, sizeof group, "aggregator-replay-%d", (int)getpid());
  const char *forced[] = {"group.id", group, "enable.auto.commit", "false", "enable.auto.offset.store", "false",
                          NULL};
  rd_kafka_conf_t *conf = kafka_conf_new(r->cfg, KAFKA_REPLAY_CONSUMER, forced, errstr, sizeof errstr);
  rd_kafka_t *rk = conf ? rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr) : NULL;
  if (!rk) {
    if (conf) rd_kafka_conf_destroy(conf); /* rd_kafka_new takes it on success only */
    /* librdkafka's words may quote a property's value: scrubbed like every
     * log line (redact.h). */
    redact_set_scrub_str(redact_global(), errstr, sizeof errstr);
    fprintf(stderr, "aggregator: replay: %s\n", errstr);
    return false;
  }
  range_t *ranges = NULL;
  size_t n = 0;
  uint64_t total = 0;
  /* SPEC.md section 5: the configured topics must exist (the dead-letter
   * topic is not the replay's business). */
  kafka_check_t chk = kafka_check_topics(rk, r->cfg, false, check_tick, NULL, errstr, sizeof errstr);
  if (chk != KAFKA_CHECK_OK) {
    if (chk != KAFKA_CHECK_STOPPED) fprintf(stderr, "aggregator: replay: %s\n", errstr);
    rd_kafka_destroy(rk);
    return false;
  }
  bool ok = plan_ranges(rk, r->cfg, o, &ranges, &n, &total);
  size_t remaining = 0;
  if (ok) {
    rd_kafka_topic_partition_list_t *assign = rd_kafka_topic_partition_list_new((int)n + 1);
    for (size_t i = 0; i < n; i++) {
      if (ranges[i].end <= ranges[i].start) continue;
      rd_kafka_topic_partition_list_add(assign, ranges[i].topic, ranges[i].partition)->offset = ranges[i].start;
      remaining++;
    }
    if (remaining) rd_kafka_assign(rk, assign);
    rd_kafka_topic_partition_list_destroy(assign);
  }
  progress_t pr = {isatty(2), clock_mono_s(), clock_mono_s(), total, label_of(o)};
  uint64_t done = 0;
  /* Messages are taken from the consumer queue in batches: one queue lock and
   * one wake-up per batch instead of per message (rd_kafka_consumer_poll per
   * message cost about a third of the replay's CPU). The wait returns early
   * once the batch is full, so a steady stream never waits for the timeout. */
  enum { REPLAY_BATCH = 4096 };
  rd_kafka_message_t **msgs = oom_malloc(REPLAY_BATCH * sizeof *msgs);
  rd_kafka_queue_t *q = rd_kafka_queue_get_consumer(rk);
  while (ok && remaining && !signals_stop_count()) {
    ssize_t got = rd_kafka_consume_batch_queue(q, 200, msgs, REPLAY_BATCH);
    if (got <= 0) {
      if (r->to_store) ok = step(r->flusher, 0, false);
      progress_show(&pr, done, false);
      continue;
    }
    for (ssize_t k = 0; k < got; k++) {
      rd_kafka_message_t *m = msgs[k];
      if (!ok || signals_stop_count()) { /* stopping: only release the rest of the batch */
        rd_kafka_message_destroy(m);
        continue;
      }
      if (m->err) {
        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
          log_warn("replay: consumer error", "error", LOG_STR, rd_kafka_message_errstr(m));
        rd_kafka_message_destroy(m);
        continue;
      }
      range_t *rg = NULL;
      for (size_t i = 0; i < n && !rg; i++)
        if (ranges[i].partition == m->partition && !strcmp(ranges[i].topic, rd_kafka_topic_name(m->rkt)))
          rg = &ranges[i];
      /* A batch can hold messages fetched before the partition was paused:
       * the offset check drops those past --until. */
      if (rg && m->offset < rg->end) {
        rd_kafka_timestamp_type_t tt;
        ok = feed(r, m->payload, m->len, rd_kafka_message_timestamp(m, &tt));
        done++;
        if (m->offset + 1 >= rg->end) {
          remaining--;
          /* Stop fetching it: later messages are past --until. */
          rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(1);
          rd_kafka_topic_partition_list_add(l, rg->topic, rg->partition);
          rd_kafka_pause_partitions(rk, l);
          rd_kafka_topic_partition_list_destroy(l);
        }
      }
      rd_kafka_message_destroy(m);
    }
    progress_show(&pr, done, false);
  }
  rd_kafka_queue_destroy(q);
  free(msgs);
  progress_show(&pr, done, true);
  for (size_t i = 0; i < n; i++) free(ranges[i].topic);
  free(ranges);
  rd_kafka_consumer_close(rk);
  rd_kafka_destroy(rk);
  return ok && !signals_stop_count();
}

int replay_run(const config_t *cfg, const replay_options_t *o, replay_stats_t *stats) {
  double t0 = clock_mono_s();
  memset(stats, 0, sizeof *stats);
  signals_install(SIGNALS_STOP);
  srand((unsigned)clock_wall_ms());

  replay_t *r = oom_calloc(1, sizeof *r);
  r->cfg = cfg;
  r->st = stats;
  r->to_store = o->output == NULL && o->rebuilt == NULL;
  store_t *store = NULL;
  batch_limits_t limits = batch_limits_from_config(cfg);
  if (o->rejects && o->input) {
    r->rejects = strcmp(o->rejects, "-") ? fopen(o->rejects, "w") : stdout;
    if (!r->rejects) {
      fprintf(stderr, "aggregator: replay: cannot open '%s': %s\n", o->rejects, strerror(errno));
      free(r);
      return 1;
    }
  }
  if (r->to_store) {
    sink_error_t err;
    store = store_new(cfg->store_uri, cfg->store_database, cfg->store_collection, cfg->store_write_concern, &err);
    if (!store) {
      fprintf(stderr, "aggregator: replay: store: %s\n", err.message);
      if (r->rejects && r->rejects != stdout) fclose(r->rejects);
      free(r);
      return 2;
    }
  } else {
    /* Everything stays in memory until the end: nothing is ever flushed. */
    limits.max_commands = limits.max_aggregates = limits.linger_ms = INT64_MAX / 2;
  }
  r->batch = batch_new(&limits);
  if (r->batch && store) {
    sink_t sink = store_sink(store); /* the writer thread's until flusher_destroy */
    r->flusher = flusher_new(r->batch, &sink, 0, clock_system());
    if (r->flusher) flusher_set_retry(r->flusher, cfg->retry_backoff_ms, cfg->retry_backoff_max_ms);
  }
  bool ok = r->batch && (!r->to_store || r->flusher) && (o->input ? replay_input(r, o->input, label_of(o)) : replay_topics(r, o));
  if (ok && r->to_store) ok = flush_until_done(r->flusher, r->batch);
  flusher_destroy(r->flusher);
  if (r->batch) {
    const batch_stats_t *bs = batch_stats(r->batch);
    stats->applied = bs->applied;
    stats->stale = bs->stale;
    stats->aggregates = bs->writes_ok;
  }
  if (ok && o->rebuilt) { /* verify: the caller compares it */
    stats->aggregates = batch_dirty_count(r->batch) + batch_cached_count(r->batch);
    *o->rebuilt = r->batch;
    r->batch = NULL;
  } else if (ok && !r->to_store) {
    ok = write_output(r->batch, o->output, &stats->aggregates);
  }
  batch_destroy(r->batch);
  store_destroy(store);
  if (r->rejects && (r->rejects == stdout ? fflush(stdout) : fclose(r->rejects)) != 0) {
    fprintf(stderr, "aggregator: replay: cannot write the rejects file: %s\n", strerror(errno));
    ok = false;
  }
  model_buf_destroy(&r->rbuf);
  free(r);
  stats->seconds = clock_mono_s() - t0;
  return ok ? 0 : 1;
}
