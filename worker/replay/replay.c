/* The replay pipeline: see replay.h. */
#include "replay.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "base/clock.h"
#include "command.h"
#include "base/cpus.h"
#include "base/log.h"
#include "oom.h"
#include "replay_encode.h"
#include "replay_file.h"
#include "replay_merger.h"
#include "replay_shards.h"
#include "replay_store.h"
#include "base/signals.h"
#include "store/store.h"

typedef struct replay {
  const config_t *cfg;
  const replay_options_t *o;
  const clock_source_t *clock; /* o->clock, or the process's */
  replay_stats_t *st;
  bool file_mode; /* --input and --output: no broker, no store */
  bool to_store;  /* the sink is the store (no --output, not verify) */
  store_t *store;
  /* The merge (replay_merger.h): into the store (to_store), else the table
   * on this thread, or the shards on replay.threads threads when more than one. */
  replay_merger_t merger;
  size_t threads;          /* replay.threads resolved: the shards' and the output's */
  replay_rebuilt_t done; /* its aggregates once read, sorted by key */
  replay_file_t in, out, rejects;
  model_buf_t line; /* one rejects line */
  /* With a merger whose rejects come out of order (the store's), rejects
   * lines wait here until the end, then go out in line order: a late reject
   * (batch.h) comes when its aggregate's stored document is loaded, which
   * depends on when flushes happen. */
  model_buf_t late;            /* their text, back to back */
  struct reject_line *waiting; /* where each one is in `late` */
  size_t nwaiting, capwaiting;
  bool too_many_rejects; /* --max-rejects passed: the replay stops and fails */
} replay_t;

typedef struct reject_line {
  uint64_t line;
  size_t off, len;
} reject_line_t;

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
  if (!r->nwaiting) return true; /* and r->waiting may be NULL, which qsort must not be given */
  qsort(r->waiting, r->nwaiting, sizeof *r->waiting, cmp_line);
  bool ok = true;
  for (size_t i = 0; i < r->nwaiting && ok; i++)
    ok = replay_file_write(&r->rejects, r->late.data + r->waiting[i].off, r->waiting[i].len);
  r->nwaiting = 0;
  return ok;
}

/* The rejected command at position `line` of the stream (from 1), in
 * stream order unless the merger's come out of order (a replay_reject_fn,
 * replay_merger.h). */
static bool reject_at(void *ctx, uint64_t line, const model_reject_t *rej) {
  replay_t *r = ctx;
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
  if (!r->merger.in_order) {
    wait_line(r, line);
    return true;
  }
  return replay_file_write(&r->rejects, r->line.data, r->line.len);
}

/* Source -> merger: the line number is the count read so far. */
static bool feed_message(void *ctx, const char *data, size_t len, int64_t event_ms) {
  replay_t *r = ctx;
  if (r->too_many_rejects) return false; /* a late reject passed the limit */
  r->st->read++;
  return replay_merger_apply(&r->merger, r->st->read, data, len, event_ms);
}

/* A merger that takes a file in blocks of lines (the shards': straight into
 * their chunks, cut into lines on their threads). */
static model_buf_t *feed_block(void *ctx) {
  replay_t *r = ctx;
  return r->merger.ops->block(r->merger.ctx);
}

static bool feed_block_done(void *ctx, size_t long_len, uint64_t *lines) {
  replay_t *r = ctx;
  bool ok = r->merger.ops->block_done(r->merger.ctx, long_len, lines);
  r->st->read = *lines;
  return ok;
}

static bool feed_idle(void *ctx) {
  replay_t *r = ctx;
  return r->merger.ops->idle(r->merger.ctx);
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
  return replay_encode(r->done.aggs, n, clock_wall(r->clock), r->threads, true, output_write, r);
}

/* --- the replay ------------------------------------------------------------------------- */

/* The merger, chosen once: into the store, else in memory on one thread
 * or on replay.threads threads. 0, or the exit status. */
static int merger_start(replay_t *r) {
  size_t max_bytes = (size_t)r->cfg->limits_max_command_bytes;
  if (r->to_store) {
    sink_t sink = store_sink(r->store); /* the writer thread's until the merger is destroyed */
    return replay_store_merger(&r->merger, r->cfg, &sink, r->clock, reject_at, r) ? 0 : 1;
  }
  r->threads = merge_threads(r->cfg);
  if (r->threads > 1) return replay_shards_merger(&r->merger, r->threads, max_bytes, reject_at, r) ? 0 : 1;
  r->merger = replay_merge_merger(max_bytes, reject_at, r);
  return 0;
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
  return merger_start(r);
}

/* Source -> decode -> merge (-> the store, as it goes). */
static bool replay_read(replay_t *r) {
  const replay_options_t *o = r->o;
  replay_feed_t feed = {feed_message, r->merger.ops->idle ? feed_idle : NULL, r, NULL};
  if (!r->file_mode) feed.label = o->label ? o->label : "replay";
  if (!o->input) return replay_source_topics(r->cfg, o->from, o->until, &feed);
  if (!r->in.f && !replay_file_open(&r->in, o->input, "r")) return false;
  replay_block_feed_t blocks = {feed_block, feed_block_done};
  bool ok = replay_source_blocks(r->in.f, r->in.shown, (size_t)r->cfg->limits_max_command_bytes, &feed,
                                 r->merger.ops->block ? &blocks : NULL);
  replay_file_close_input(&r->in);
  return ok;
}

/* The merger's end (the store written, or the aggregates gathered), the
 * rejects, then the output file written (verify takes the aggregates at
 * close). Rejects lines that waited for the end go out even when the
 * merger failed: on a stream, as those written as they came. */
static bool replay_finish(replay_t *r) {
  bool merged = replay_merger_finish(&r->merger, &r->done);
  if (!merged && !r->nwaiting) return false;
  bool rejects = write_waiting(r) && replay_file_drain(&r->rejects);
  return merged && rejects && (!r->out.f || write_output(r));
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
  replay_counts_t c = {.read = r->st->read, .aggregates = r->st->aggregates};
  replay_merger_counts(&r->merger, &c);
  r->st->read = c.read;
  r->st->applied = c.applied;
  r->st->stale = c.stale;
  r->st->aggregates = c.aggregates;
  if (done && r->o->rebuilt) {
    r->st->aggregates = r->done.n;
    *r->o->rebuilt = r->done;
    r->done = (replay_rebuilt_t){0};
  }
  replay_rebuilt_free(&r->done);
  replay_merger_destroy(&r->merger);
  store_destroy(r->store);
  replay_file_close_input(&r->in);
  replay_file_close(&r->rejects);
  replay_file_close(&r->out);
  model_buf_destroy(&r->line);
  model_buf_destroy(&r->late);
  free(r->waiting);
}

int replay_run(const config_t *cfg, const replay_options_t *o, replay_stats_t *stats) {
  const clock_source_t *clock = o->clock ? o->clock : clock_system();
  double t0 = clock_mono_seconds(clock);
  memset(stats, 0, sizeof *stats);
  replay_t *r = oom_calloc(1, sizeof *r); /* the line buffer, the files and the merge start empty: all zero */
  r->cfg = cfg;
  r->clock = clock;
  r->o = o;
  r->st = stats;
  r->file_mode = o->input && o->output && !o->rebuilt;
  r->to_store = !o->output && !o->rebuilt;
  /* verify's rebuild: the caller installed them, and waited for the store
   * under them already. */
  if (!o->rebuilt) signals_install(SIGNALS_STOP);
  srand((unsigned)clock_wall(clock)); /* the retry jitter (retry.h) */
  name_files(r);
  int rc = replay_open(r);
  if (rc == 0) {
    bool read = replay_read(r);
    /* Cut short, the threads still write the rejects of what was read, as
     * one thread has by then. */
    if (!read) replay_merger_drain(&r->merger);
    if (!(read && replay_finish(r) && !r->too_many_rejects && replay_commit(r))) rc = 1;
  }
  /* Said once, whatever failed on the way (a read cut short by EINTR). */
  if (rc == 1 && signals_stop_count() && !o->rebuilt)
    log_error("replay: interrupted", "signal", LOG_INT, (int64_t)signals_stop_signal());
  replay_close(r, rc == 0);
  free(r);
  stats->seconds = clock_mono_seconds(clock) - t0;
  return rc;
}
