/* The replay pipeline: see replay.h. */
#include "replay.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pipeline/batch.h"
#include "buf.h"
#include "base/clock.h"
#include "command.h"
#include "base/cpus.h"
#include "pipeline/flusher.h"
#include "base/log.h"
#include "oom.h"
#include "replay_encode.h"
#include "replay_file.h"
#include "replay_shards.h"
#include "base/signals.h"
#include "store/store.h"

typedef struct replay {
  const config_t *cfg;
  const replay_options_t *o;
  replay_stats_t *st;
  bool file_mode; /* --input and --output: no broker, no store */
  bool to_store;  /* the sink is the store (no --output, not verify) */
  store_t *store;
  batch_t *batch;        /* the merge into the store (to_store), else NULL */
  flusher_t *flusher;    /* into the store: the writer thread owns the connection */
  replay_merge_t merge;  /* the merge without a store (not to_store), on this thread */
  replay_shards_t *shards; /* ... or on replay.threads threads, when more than one */
  size_t threads;          /* replay.threads resolved: the shards' and the output's */
  replay_rebuilt_t done; /* its aggregates once read, sorted by key */
  model_command_t cmd;
  replay_file_t in, out, rejects;
  model_buf_t line; /* one rejects line */
  /* Writing to the store, rejects lines wait here until the end, then go
   * out in line order: a late reject (batch.h) comes when its aggregate's
   * stored document is loaded, which depends on when flushes happen. */
  model_buf_t late;            /* their text, back to back */
  struct reject_line *waiting; /* where each one is in `late` */
  size_t nwaiting, capwaiting;
  bool too_many_rejects; /* --max-rejects passed: the replay stops and fails */
} replay_t;

/* What batch_apply_from is given as a command's origin: its line (or
 * message) number and bytes. */
typedef struct line_origin {
  uint64_t line;
  const char *data;
  size_t len;
} line_origin_t;

typedef struct reject_line {
  uint64_t line;
  size_t off, len;
} reject_line_t;

/* --- the store: the batch's writer pipeline ---------------------------------------- */

/* One step of the writer pipeline (flusher.h); false on a fatal store
 * error. A replay has no one to hand its work to, so it waits out a store
 * outage (with backoff) unless interrupted. */
static bool store_step(flusher_t *f, int64_t wait_ms, bool force) {
  flusher_event_t ev = flusher_step(f, batch_now(clock_system()), wait_ms, force);
  if (!ev.finished || ev.status == SINK_OK || ev.status == SINK_PARTIAL) return true;
  if (ev.status == SINK_FATAL) {
    log_error("replay: store write failed", "error", LOG_STR, ev.err.message);
    return false;
  }
  if (ev.attempt == 1 || ev.attempt % 10 == 0)
    log_warn("replay: store write failed, retrying", "error", LOG_STR, ev.err.message, "retry_in_ms", LOG_INT,
             ev.retry_in_ms);
  return true;
}

/* After a merge: lets the writer start a flush that is due, and holds the
 * source back while the batch's memory (in-flight snapshots included) is
 * over its bound. */
static bool store_keep_up(replay_t *r) {
  if (!store_step(r->flusher, 0, false)) return false;
  while (batch_pending_bytes(r->batch) > (size_t)r->cfg->batch_max_pending_bytes && batch_dirty(r->batch)) {
    if (signals_stop_count() || !store_step(r->flusher, 100, true)) return false;
  }
  return true;
}

/* Writes everything held; false if interrupted or on a fatal error. */
static bool store_drain(replay_t *r) {
  while (batch_dirty(r->batch)) {
    if (signals_stop_count() || !store_step(r->flusher, 1000, true)) return false;
  }
  return true;
}

/* The writer thread over the batch; NULL when it cannot start. */
static flusher_t *store_flusher_new(replay_t *r) {
  sink_t sink = store_sink(r->store); /* the writer thread's until flusher_destroy */
  flusher_t *f = flusher_new(r->batch, &sink, 0, clock_system());
  if (f) flusher_set_retry(f, r->cfg->retry_backoff_ms, r->cfg->retry_backoff_max_ms);
  return f;
}

/* --- the merge ----------------------------------------------------------------------- */

/* The batch, for the store: flushed by the configured limits. */
static batch_t *merge_new(const replay_t *r) {
  batch_limits_t limits = batch_limits_from_config(r->cfg);
  return batch_new(&limits);
}

/* Into the store: the batch, flushed by the configured limits. Otherwise
 * the plain table (replay_merge.h), everything in memory until the end.
 * event_ms is when the command entered the system (0 = now), for the
 * batch's latencies. False when the command would make its aggregate's
 * document pass the store's limit: rej says so, and nothing changed. */
static bool merge_apply(replay_t *r, const line_origin_t *origin, int64_t event_ms, model_reject_t *rej) {
  if (!r->batch) return replay_merge_apply(&r->merge, &r->cmd, replay_merge_hash(&r->cmd), rej);
  batch_now_t now = batch_now(clock_system());
  return batch_apply_from(r->batch, &r->cmd, origin, event_ms > 0 ? event_ms : now.wall_ms, now, rej) !=
         MODEL_APPLY_TOO_LARGE;
}

/* --- one command ---------------------------------------------------------------------- */

/* Without --rejects, a replay of a file shows its first few rejected lines
 * on stderr (cli_replay says how to see them all), so that a wrong input is
 * noticed at once and not only as a count. */
#define REJECTS_SHOWN 3

/* Keeps a rejects line for the end (see replay_t.late). */
static void wait_line(replay_t *r, uint64_t line) {
  if (r->nwaiting == r->capwaiting) {
    r->capwaiting = r->capwaiting ? r->capwaiting * 2 : 64;
    r->waiting = oom_realloc(r->waiting, r->capwaiting * sizeof *r->waiting);
  }
  r->waiting[r->nwaiting++] = (reject_line_t){line, r->late.len, r->line.len};
  model_buf_append(&r->late, r->line.data, r->line.len);
}

static int cmp_line(const void *a, const void *b) {
  uint64_t x = ((const reject_line_t *)a)->line, y = ((const reject_line_t *)b)->line;
  return (x > y) - (x < y);
}

/* The rejects lines kept for the end, in line order. */
static bool write_waiting(replay_t *r) {
  qsort(r->waiting, r->nwaiting, sizeof *r->waiting, cmp_line);
  bool ok = true;
  for (size_t i = 0; i < r->nwaiting && ok; i++)
    ok = replay_file_write(&r->rejects, r->late.data + r->waiting[i].off, r->waiting[i].len);
  r->nwaiting = 0;
  return ok;
}

/* The rejected command at position `line` of the stream (from 1), in
 * stream order. */
static bool reject_at(replay_t *r, uint64_t line, const model_reject_t *rej) {
  r->st->rejected++;
  if (r->o->limit_rejects && r->st->rejected > r->o->max_rejects) {
    if (!r->too_many_rejects)
      log_error("replay: stopped: more commands rejected than --max-rejects allows", "max_rejects", LOG_INT,
                (int64_t)r->o->max_rejects, "line", LOG_INT, (int64_t)line, "code", LOG_STR,
                model_reject_code_name(rej->code));
    r->too_many_rejects = true;
    return false;
  }
  if (!r->rejects.f) {
    if (r->o->input && !r->o->rebuilt && r->st->rejected <= REJECTS_SHOWN)
      log_warn("replay: line rejected", "line", LOG_INT, (int64_t)line, "code", LOG_STR,
               model_reject_code_name(rej->code), "detail", LOG_STR, rej->detail);
    return true;
  }
  model_buf_clear(&r->line);
  model_buf_printf(&r->line, "{\"line\":%llu,\"code\":\"%s\",\"detail\":", (unsigned long long)line,
                   model_reject_code_name(rej->code));
  model_buf_json_string(&r->line, rej->detail, strlen(rej->detail));
  model_buf_puts(&r->line, "}\n");
  if (r->flusher) {
    wait_line(r, line);
    return true;
  }
  return replay_file_write(&r->rejects, r->line.data, r->line.len);
}

/* --- holding lines for late rejects (batch_hold.h) ------------------------------------ */

/* A line (or message) merged into an aggregate not yet loaded: its number
 * and its bytes, which follow the struct. */
typedef struct held_line {
  uint64_t line;
  size_t len;
} held_line_t;

static void *hold_line(void *ctx, const void *origin, size_t *bytes) {
  (void)ctx;
  const line_origin_t *o = origin;
  held_line_t *h = oom_malloc(sizeof *h + o->len);
  *h = (held_line_t){o->line, o->len};
  if (o->len) memcpy(h + 1, o->data, o->len);
  *bytes = sizeof *h + o->len;
  return h;
}

static bool decode_line(void *ctx, const void *held, model_command_t *cmd, model_reject_t *rej) {
  const replay_t *r = ctx;
  const held_line_t *h = held;
  return model_command_decode(h->len ? (const char *)(h + 1) : "", h->len, (size_t)r->cfg->limits_max_command_bytes,
                              cmd, rej);
}

static void reject_line(void *ctx, const void *held, const model_command_t *cmd, const model_reject_t *rej) {
  (void)cmd;
  replay_t *r = ctx;
  if (!reject_at(r, ((const held_line_t *)held)->line, rej) && !r->too_many_rejects)
    log_error("replay: a rejects line was lost");
}

static void release_line(void *ctx, void *held) {
  (void)ctx;
  free(held);
}

/* The threads' rejects (replay_shards.h), in stream order. */
static bool shard_reject(void *ctx, uint64_t index, const model_reject_t *rej) { return reject_at(ctx, index, rej); }

/* On this thread: the line number is the count read so far. */
static bool reject(replay_t *r, const model_reject_t *rej) { return reject_at(r, r->st->read, rej); }

static bool feed_message(void *ctx, const char *data, size_t len, int64_t event_ms) {
  replay_t *r = ctx;
  if (r->too_many_rejects) return false; /* a late reject (reject_line) passed the limit */
  r->st->read++;
  if (r->shards) return replay_shards_add(r->shards, data ? data : "", len);
  model_reject_t rej;
  if (!model_command_decode(data ? data : "", len, (size_t)r->cfg->limits_max_command_bytes, &r->cmd, &rej))
    return reject(r, &rej);
  line_origin_t origin = {r->st->read, data, len};
  if (!merge_apply(r, &origin, event_ms, &rej)) return reject(r, &rej);
  return !r->flusher || store_keep_up(r);
}

/* The threaded replay of a file: blocks of lines straight into the shards'
 * chunks, cut into lines on their threads. */
static model_buf_t *feed_block(void *ctx) { return replay_shards_block(((replay_t *)ctx)->shards); }

static bool feed_block_done(void *ctx, size_t long_len, uint64_t *lines) {
  replay_t *r = ctx;
  bool ok = replay_shards_block_done(r->shards, long_len, lines);
  r->st->read = *lines;
  return ok;
}

static bool feed_idle(void *ctx) {
  replay_t *r = ctx;
  return store_step(r->flusher, 0, false);
}

/* --- files ----------------------------------------------------------------------------- */

/* How the messages name the files and when they report a lost write.
 * The file replay names a standard stream "(standard stream)" and reports
 * each failed write of its output as it happens, then at close; the other
 * modes name a file as given ("-" included), call the rejects file "the
 * rejects file", and report a lost output once, at close. */
static void name_files(replay_t *r) {
  const replay_options_t *o = r->o;
  const char *std = "(standard stream)";
  r->in = (replay_file_t){.shown = o->input};
  r->out = (replay_file_t){.shown = o->output, .report_each = r->file_mode};
  r->rejects = (replay_file_t){.shown = "the rejects file", .report_each = true};
  if (!r->file_mode) return;
  if (!strcmp(o->input, "-")) r->in.shown = std;
  if (!strcmp(o->output, "-")) r->out.shown = std;
  r->rejects.shown = o->rejects && strcmp(o->rejects, "-") ? o->rejects : std;
}

/* The file replay's usage errors (exit 2): writing an output must destroy
 * neither the input nor the other output. */
static bool files_distinct(const replay_options_t *o) {
  if (o->rejects && !strcmp(o->output, "-") && !strcmp(o->rejects, "-")) {
    fputs("aggregator: replay: --output and --rejects cannot both be standard output\n", stderr);
    return false;
  }
  if (replay_file_same(o->input, o->output) || replay_file_same(o->input, o->rejects) ||
      replay_file_same(o->output, o->rejects)) {
    fputs("aggregator: replay: --input, --output and --rejects must be different files\n", stderr);
    return false;
  }
  return true;
}

/* replay.threads: 0 is one per CPU the process may use (cpus.h). */
static size_t merge_threads(const config_t *cfg) {
  long n = cfg->replay_threads > 0 ? (long)cfg->replay_threads : (long)cpus_available();
  return n < 1 ? 1 : n > 256 ? 256 : (size_t)n;
}

static bool output_write(void *ctx, const char *data, size_t len) {
  replay_t *r = ctx;
  return replay_file_write(&r->out, data, len);
}

/* --output: the final documents, sorted by _id, each with rev 1 (the file
 * is one write of each document) and the time of the write as updatedAt. */
static bool write_output(replay_t *r) {
  r->st->aggregates = r->done.n;
  size_t n = r->done.n;
  r->done.n = 0; /* handed over: the encoding destroys them */
  return replay_encode(r->done.aggs, n, clock_wall_ms(), r->threads, true, output_write, r);
}

/* --- the replay ------------------------------------------------------------------------- */

/* The merge without a store on more than one thread: its workers start;
 * 0, or the exit status. */
static int merge_threads_start(replay_t *r) {
  r->threads = merge_threads(r->cfg);
  if (r->threads == 1) return 0;
  r->shards = replay_shards_new(r->threads, (size_t)r->cfg->limits_max_command_bytes, shard_reject, r);
  return r->shards ? 0 : 1;
}

/* Everything the replay needs before it reads: 0, or the exit status. */
static int replay_open(replay_t *r) {
  const replay_options_t *o = r->o;
  if (r->file_mode) {
    if (!files_distinct(o)) return 2;
    if (!replay_file_open(&r->in, o->input, "r")) return 1;
  }
  /* Every output before any input is read: a path that cannot be written
   * costs no work, and leaves the other output as it was. */
  if (o->output && !o->rebuilt && !replay_file_open(&r->out, o->output, "w")) return 1;
  if (o->rejects && o->input && !replay_file_open(&r->rejects, o->rejects, "w")) return 1;
  if (r->to_store) {
    sink_error_t err;
    const config_t *c = r->cfg;
    r->store = store_open(c, &err);
    if (!r->store) {
      fprintf(stderr, "aggregator: replay: store: %s\n", err.message);
      return 2;
    }
  }
  if (!r->to_store) return merge_threads_start(r);
  r->batch = merge_new(r);
  if (r->batch && r->store) r->flusher = store_flusher_new(r);
  if (r->flusher) { /* only the store's documents can be loaded, and so not fit */
    batch_holder_t holder = {hold_line, decode_line, reject_line, release_line, r};
    batch_set_holder(r->batch, &holder);
  }
  return r->batch && (!r->to_store || r->flusher) ? 0 : 1;
}

/* Source -> decode -> merge (-> the store, as it goes). */
static bool replay_read(replay_t *r) {
  const replay_options_t *o = r->o;
  replay_feed_t feed = {feed_message, r->flusher ? feed_idle : NULL, r, NULL};
  if (!r->file_mode) feed.label = o->label ? o->label : "replay";
  if (!o->input) return replay_source_topics(r->cfg, o->from, o->until, &feed);
  if (!r->in.f && !replay_file_open(&r->in, o->input, "r")) return false;
  replay_block_feed_t blocks = {feed_block, feed_block_done};
  bool ok = replay_source_blocks(r->in.f, r->in.shown, (size_t)r->cfg->limits_max_command_bytes, &feed,
                                 r->shards ? &blocks : NULL);
  replay_file_close_input(&r->in);
  return ok;
}

/* The sink's end: the store written, or the aggregates gathered and the
 * output file written (verify takes them at close). */
static bool replay_finish(replay_t *r) {
  if (r->shards && !replay_shards_finish(r->shards, &r->done)) return false;
  if (r->flusher) {
    bool ok = store_drain(r);
    return write_waiting(r) && replay_file_drain(&r->rejects) && ok;
  }
  if (!replay_file_drain(&r->rejects)) return false;
  if (!r->shards) replay_merge_sorted(&r->merge, &r->done);
  return r->o->rebuilt || write_output(r);
}

/* Puts the outputs of a replay that got to the end into place; false when
 * one is lost (the other may be in place by then). A stop that came while
 * the output was written fails the replay: nothing is renamed. */
static bool replay_commit(replay_t *r) {
  if (signals_stop_count()) return false;
  bool ok = replay_file_commit(&r->rejects);
  return replay_file_commit(&r->out) && ok;
}

/* Releases everything, handing the aggregates to verify after a rebuild
 * that got to the end; the outputs not committed are removed. */
static void replay_close(replay_t *r, bool done) {
  flusher_destroy(r->flusher);
  if (r->flusher) batch_set_holder(r->batch, NULL); /* its ctx, r, goes now */
  if (r->batch) {
    const batch_stats_t *bs = batch_stats(r->batch);
    r->st->applied = bs->applied;
    r->st->stale = bs->stale;
    if (r->to_store) r->st->aggregates = bs->writes_ok;
  } else {
    replay_shards_stop(r->shards);
    if (r->shards && r->o->input) r->st->read = replay_shards_messages(r->shards); /* lines in blocks */
    r->st->applied = r->merge.applied;
    r->st->stale = r->merge.stale;
    if (r->shards) replay_shards_counts(r->shards, &r->st->applied, &r->st->stale);
  }
  if (done && r->o->rebuilt) {
    r->st->aggregates = r->done.n;
    *r->o->rebuilt = r->done;
    r->done = (replay_rebuilt_t){0};
  }
  replay_rebuilt_free(&r->done);
  replay_merge_free(&r->merge);
  replay_shards_destroy(r->shards);
  batch_destroy(r->batch);
  store_destroy(r->store);
  replay_file_close_input(&r->in);
  replay_file_close(&r->rejects);
  replay_file_close(&r->out);
  model_buf_destroy(&r->line);
  model_buf_destroy(&r->late);
  free(r->waiting);
}

int replay_run(const config_t *cfg, const replay_options_t *o, replay_stats_t *stats) {
  double t0 = clock_mono_s();
  memset(stats, 0, sizeof *stats);
  replay_t *r = oom_calloc(1, sizeof *r); /* the line buffer, the files and the merge start empty: all zero */
  r->cfg = cfg;
  r->o = o;
  r->st = stats;
  r->file_mode = o->input && o->output && !o->rebuilt;
  r->to_store = !o->output && !o->rebuilt;
  /* verify's rebuild: the caller installed them, and waited for the store
   * under them already. */
  if (!o->rebuilt) signals_install(SIGNALS_STOP);
  srand((unsigned)clock_wall_ms()); /* the retry jitter (retry.h) */
  name_files(r);
  int rc = replay_open(r);
  if (rc == 0) {
    bool read = replay_read(r);
    /* Cut short, the threads still write the rejects of what was read, as
     * one thread has by then. */
    if (!read && r->shards) replay_shards_drain(r->shards);
    if (!(read && replay_finish(r) && !r->too_many_rejects && replay_commit(r))) rc = 1;
  }
  /* Said once, whatever failed on the way (a read cut short by EINTR). */
  if (rc == 1 && signals_stop_count() && !o->rebuilt)
    log_error("replay: interrupted", "signal", LOG_INT, (int64_t)signals_stop_signal());
  replay_close(r, rc == 0);
  free(r);
  stats->seconds = clock_mono_s() - t0;
  return rc;
}
