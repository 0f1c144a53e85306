/* `aggregator verify`: see verify.h for the three phases and the report.
 *
 * Trade-offs:
 *  - The rebuild holds every rebuilt aggregate at once (as `replay
 *    --output` does) rather than comparing as commands stream in: a slot's
 *    final stamp is known only once every command has been read, and the
 *    topics are not ordered by document. The stored side is bounded to one
 *    chunk (batch.max_aggregates documents).
 *  - Repairs run on this thread with writer_execute (stop and wait), not on
 *    a writer thread: there is nothing to overlap them with but the next
 *    chunk's load, and a report in _id order is easier to read and test.
 *  - A conflict on a repair means another writer (a live worker) got there
 *    first; the item is loaded and merged again, as the batch would. */
#include "verify.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "clock.h"
#include "keys.h"
#include "oom.h"
#include "replay.h"
#include "retry.h"
#include "signals.h"
#include "sink.h"
#include "store.h"
#include "writer.h"

/* Repairs that keep conflicting are given up after this many rounds of
 * conflicts: each conflict is another writer's progress, so reaching it
 * means a document written faster than it can be read back, which an
 * operator should see. A store outage is waited out instead (with backoff,
 * until interrupted), as a replay does. */
enum { VERIFY_REPAIR_ROUNDS = 50 };

typedef enum { REPAIR_NONE = 0, REPAIR_WRITTEN, REPAIR_UNCHANGED, REPAIR_FAILED } repair_t;

typedef struct entry {
  const model_aggregate_t *rebuilt; /* borrowed from the rebuild */
  model_aggregate_t *stored;        /* owned; NULL when not stored or unreadable */
  bool unreadable;                  /* stored, does not decode: drift holds the reason */
  int64_t rev;
  model_counts_t counts; /* as stored */
  model_drift_t drift;
  repair_t repair;
  int64_t new_rev;
  char error[160];
} entry_t;

typedef struct chunk {
  entry_t *v;
  size_t n;
} chunk_t;

/* --- loading a chunk ----------------------------------------------------------------- */

static const char *key_of_entry(const void *elem, void *ctx) {
  (void)ctx;
  return model_aggregate_key(((const entry_t *)elem)->rebuilt, NULL);
}

/* The chunk is sorted by key; a duplicate answer is dropped: the first counts. */
static void on_found(void *ctx, model_aggregate_t *agg, int64_t rev, const model_counts_t *counts) {
  chunk_t *c = ctx;
  size_t i = model_keys_find(c->v, c->n, sizeof *c->v, key_of_entry, NULL, model_aggregate_key(agg, NULL));
  if (i == c->n || c->v[i].stored || c->v[i].unreadable) {
    model_aggregate_destroy(agg);
    return;
  }
  c->v[i].stored = agg;
  c->v[i].rev = rev;
  c->v[i].counts = *counts;
}

/* A stored document that does not decode is reported as `differs` with the
 * decoder's reason, and the audit goes on: one odd document must not hide
 * the state of the others. It is never repaired: what it holds is unknown. */
static void on_unreadable(void *ctx, const char *key, const char *reason) {
  chunk_t *c = ctx;
  size_t i = model_keys_find(c->v, c->n, sizeof *c->v, key_of_entry, NULL, key);
  if (i == c->n || c->v[i].stored || c->v[i].unreadable) return;
  c->v[i].unreadable = true;
  model_drift_unreadable(reason, &c->v[i].drift);
}

/* Loads the chunk's stored documents, waiting out a store outage with
 * backoff (as a replay does) unless interrupted. */
static bool load_chunk(store_t *store, const config_t *cfg, chunk_t *c, const char **keys) {
  for (size_t i = 0; i < c->n; i++) keys[i] = model_aggregate_key(c->v[i].rebuilt, NULL);
  for (unsigned attempt = 0;; attempt++) {
    sink_error_t err;
    sink_status_t st = store_load_counts(store, keys, c->n, on_found, on_unreadable, c, &err);
    if (st == SINK_OK) return true;
    if (st == SINK_FATAL) {
      fprintf(stderr, "aggregator: verify: store: %s\n", err.message);
      return false;
    }
    if (attempt == 0 || attempt % 10 == 9)
      fprintf(stderr, "aggregator: verify: store read failed, retrying: %s\n", err.message);
    if (signals_stop_count()) return false;
    clock_sleep_ms(retry_backoff_ms(cfg->retry_backoff_ms, cfg->retry_backoff_max_ms, attempt));
    if (signals_stop_count()) return false;
  }
}

/* --- repairing a chunk --------------------------------------------------------------- */

static bool repairable(model_drift_kind_t k) { return k == MODEL_DRIFT_MISSING || k == MODEL_DRIFT_STORE_BEHIND; }

/* One round's job: every repairable entry not yet done, merged into what
 * is stored at the time of the write. */
static writer_job_t *repair_job(const config_t *cfg, const chunk_t *c, size_t todo) {
  writer_job_t *job = writer_job_new(todo);
  job->chunk = (size_t)cfg->batch_max_aggregates;
  job->now_ms = clock_wall_ms();
  for (size_t i = 0; i < c->n; i++) {
    entry_t *e = &c->v[i];
    if (repairable(e->drift.kind) && e->repair == REPAIR_NONE)
      writer_job_add(job, model_aggregate_clone(e->rebuilt), 0, true, e);
  }
  return job;
}

/* Records the job's results in its entries; returns how many go again. */
static size_t repair_results(const writer_job_t *job) {
  size_t again = 0;
  for (size_t k = 0; k < job->nitems; k++) {
    const writer_item_t *it = &job->items[k];
    entry_t *e = it->tag;
    switch (it->result) {
    case WRITER_ITEM_WRITTEN:
      e->repair = REPAIR_WRITTEN;
      e->new_rev = it->rev;
      break;
    case WRITER_ITEM_UNCHANGED:
      e->repair = REPAIR_UNCHANGED;
      break;
    case WRITER_ITEM_ERROR:
      e->repair = REPAIR_FAILED;
      snprintf(e->error, sizeof e->error, "the store rejected the write (code %" PRIu32 ")", it->error_code);
      break;
    default: /* conflict, or no result yet: load and merge again */
      again++;
      break;
    }
  }
  return again;
}

/* Writes the chunk's missing and store_behind documents through the write
 * stage until each is written, found whole, or fails. False on a fatal store
 * error or an interruption (the entries not done are marked failed). */
static bool repair_chunk(const sink_t *sink, const config_t *cfg, chunk_t *c) {
  size_t todo = 0;
  for (size_t i = 0; i < c->n; i++) todo += repairable(c->v[i].drift.kind);
  bool ok = true;
  unsigned backoff = 0, conflict_rounds = 0;
  while (todo && ok) {
    writer_job_t *job = repair_job(cfg, c, todo);
    writer_execute(sink, job);
    todo = repair_results(job);
    if (job->status == SINK_FATAL) {
      fprintf(stderr, "aggregator: verify: repair: store: %s\n", job->err.message);
      ok = false;
    } else if (job->status == SINK_RETRY && todo) {
      if (backoff == 0 || backoff % 10 == 9)
        fprintf(stderr, "aggregator: verify: repair write failed, retrying: %s\n", job->err.message);
      clock_sleep_ms(retry_backoff_ms(cfg->retry_backoff_ms, cfg->retry_backoff_max_ms, backoff++));
    } else if (todo) {
      conflict_rounds++;
    }
    writer_job_destroy(job);
    if (signals_stop_count()) ok = ok && !todo;
    if (conflict_rounds >= VERIFY_REPAIR_ROUNDS) break; /* reported as failed below; the verify goes on */
  }
  const char *why = signals_stop_count() ? "interrupted"
                    : ok                 ? "gave up after repeated conflicts with another writer"
                                         : "store failure";
  for (size_t i = 0; i < c->n; i++) {
    entry_t *e = &c->v[i];
    if (repairable(e->drift.kind) && e->repair == REPAIR_NONE) {
      e->repair = REPAIR_FAILED;
      snprintf(e->error, sizeof e->error, "%s", why);
    }
  }
  return ok;
}

/* --- the report ------------------------------------------------------------------------ */

static void report_line(model_buf_t *b, const entry_t *e) {
  size_t klen;
  const char *key = model_aggregate_key(e->rebuilt, &klen);
  model_buf_puts(b, "{\"_id\":");
  model_buf_json_string(b, key, klen);
  model_buf_printf(b, ",\"drift\":\"%s\",\"path\":", model_drift_kind_name(e->drift.kind));
  const char *path = e->drift.path[e->drift.kind];
  model_buf_json_string(b, path, strlen(path));
  model_buf_puts(b, ",\"detail\":");
  model_buf_t d = MODEL_BUF_INIT;
  model_drift_detail(&e->drift, &d);
  model_buf_json_string(b, d.data ? d.data : "", d.len);
  model_buf_destroy(&d);
  switch (e->repair) {
  case REPAIR_WRITTEN:
    model_buf_printf(b, ",\"repair\":\"written\",\"rev\":%" PRId64, e->new_rev);
    break;
  case REPAIR_UNCHANGED:
    model_buf_puts(b, ",\"repair\":\"unchanged\"");
    break;
  case REPAIR_FAILED:
    model_buf_puts(b, ",\"repair\":\"failed\",\"error\":");
    model_buf_json_string(b, e->error, strlen(e->error));
    break;
  case REPAIR_NONE:
    break;
  }
  model_buf_puts(b, "}\n");
}

static void progress(bool tty, double *last, size_t done, size_t total, uint64_t drifted, bool final) {
  double now = clock_mono_s();
  if (!final && now - *last < (tty ? 0.2 : 10.0)) return;
  *last = now;
  fprintf(stderr, "%sverify: compared %zu of %zu documents, %" PRIu64 " drifted%s", tty ? "\r\033[K" : "", done,
          total, drifted, tty && !final ? "" : "\n");
}

/* --- the verify -------------------------------------------------------------------------- */

typedef struct verify {
  const config_t *cfg;
  const verify_options_t *o;
  verify_stats_t *st;
  store_t *store;
  sink_t sink;
  entry_t *entries; /* one chunk */
  const char **keys;
  model_buf_t out; /* the chunk's report lines */
  FILE *report;
} verify_t;

/* Compares (and repairs) the chunk of rebuilt documents rebuilt[0..n)
 * and writes its report lines; false on a store or report failure. */
static bool verify_chunk(verify_t *v, const model_aggregate_t *const *rebuilt, size_t n) {
  chunk_t c = {v->entries, n};
  memset(c.v, 0, n * sizeof *c.v);
  for (size_t i = 0; i < n; i++) c.v[i].rebuilt = rebuilt[i];
  bool ok = load_chunk(v->store, v->cfg, &c, v->keys);
  size_t drifted = 0;
  for (size_t i = 0; i < n && ok; i++) {
    entry_t *e = &c.v[i];
    if (e->unreadable || model_drift_compare(e->rebuilt, e->stored, e->stored ? &e->counts : NULL, &e->drift))
      drifted++;
  }
  /* The stored documents are no longer needed (a repair loads afresh:
   * it must merge into what is stored at the time of its write). */
  for (size_t i = 0; i < n; i++) {
    model_aggregate_destroy(c.v[i].stored);
    c.v[i].stored = NULL;
  }
  if (ok && drifted && v->o->repair) ok = repair_chunk(&v->sink, v->cfg, &c);
  for (size_t i = 0; i < n && drifted; i++) {
    entry_t *e = &c.v[i];
    if (e->drift.kind == MODEL_DRIFT_NONE) continue;
    v->st->drifted++;
    v->st->kinds[e->drift.kind]++;
    v->st->repaired += e->repair == REPAIR_WRITTEN;
    v->st->unchanged += e->repair == REPAIR_UNCHANGED;
    v->st->failed += e->repair == REPAIR_FAILED;
    report_line(&v->out, e);
  }
  if (v->out.len && fwrite(v->out.data, 1, v->out.len, v->report) != v->out.len) {
    fprintf(stderr, "aggregator: verify: cannot write the report: %s\n", strerror(errno));
    ok = false;
  }
  model_buf_clear(&v->out);
  return ok;
}

/* The rebuilt documents, in _id order, in chunks of batch.max_aggregates. */
static bool verify_compare(verify_t *v, const replay_rebuilt_t *rebuilt) {
  size_t n = rebuilt->n, per = v->cfg->batch_max_aggregates > 0 ? (size_t)v->cfg->batch_max_aggregates : 1000;
  const model_aggregate_t *const *all = (const model_aggregate_t *const *)rebuilt->aggs;
  v->entries = oom_malloc(per * sizeof *v->entries);
  v->keys = oom_malloc(per * sizeof *v->keys);
  bool tty = isatty(2), ok = true;
  double last = clock_mono_s();
  for (size_t off = 0; off < n && ok && !signals_stop_count(); off += per) {
    ok = verify_chunk(v, all + off, n - off < per ? n - off : per);
    progress(tty, &last, off + (n - off < per ? n - off : per), n, v->st->drifted, false);
  }
  if (ok && signals_stop_count()) {
    fputs("aggregator: verify: interrupted\n", stderr);
    ok = false;
  }
  if (fflush(v->report) != 0 && ok) {
    fprintf(stderr, "aggregator: verify: cannot write the report: %s\n", strerror(errno));
    ok = false;
  }
  if (tty) progress(tty, &last, n, n, v->st->drifted, true);
  model_buf_destroy(&v->out);
  free(v->keys);
  free(v->entries);
  return ok;
}

int verify_run(const config_t *cfg, const verify_options_t *o, FILE *report, verify_stats_t *stats) {
  double t0 = clock_mono_s();
  memset(stats, 0, sizeof *stats);
  verify_t v = {.cfg = cfg, .o = o, .st = stats, .out = MODEL_BUF_INIT, .report = report};
  /* The store first: a bad URI is a configuration error, found before a
   * rebuild that can take minutes (mongoc connects lazily: only the URI and
   * options are checked here). */
  sink_error_t serr;
  v.store = store_open(cfg, &serr);
  if (!v.store) {
    fprintf(stderr, "aggregator: verify: store: %s\n", serr.message);
    return 2;
  }
  v.sink = store_sink(v.store);
  /* The rebuild stops on SIGINT/SIGTERM (replay.h); its handlers stay for
   * the audit. */
  replay_rebuilt_t rebuilt = {0};
  replay_options_t ro = {.from = o->from, .until = o->until, .input = o->input, .rebuilt = &rebuilt,
                         .label = "verify"};
  int rc = replay_run(cfg, &ro, &stats->rebuild);
  /* A repair that did not land is a failure of what was asked for. */
  if (rc == 0) rc = !verify_compare(&v, &rebuilt) || stats->failed ? 1 : stats->drifted ? 3 : 0;
  replay_rebuilt_free(&rebuilt);
  store_destroy(v.store);
  stats->seconds = clock_mono_s() - t0;
  return rc;
}
