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
#include "base/clock.h"
#include "keys.h"
#include "base/log.h"
#include "oom.h"
#include "base/progress.h"
#include "base/redact.h"
#include "replay.h"
#include "base/retry.h"
#include "base/signals.h"
#include "store/sink.h"
#include "store/store.h"
#include "pipeline/writer.h"
#include "source/announcer.h"
#include "source/changes_producer.h"

/* Repairs that keep conflicting are given up after this many rounds of
 * conflicts: each conflict is another writer's progress, so reaching it
 * means a document written faster than it can be read back, which an
 * operator should see. A store outage is waited out with backoff for
 * store.connect_timeout_ms at most (outage_t), then the verify fails. */
enum { VERIFY_REPAIR_ROUNDS = 50 };

/* --- a store that does not answer ------------------------------------------------------ */

/* The failures in a row of one store call: the verify gives up once the
 * store has not answered for store.connect_timeout_ms (a verify has no one
 * to hand its work to, and must never wait without bound). */
typedef struct outage {
  const config_t *cfg;
  const clock_source_t *clock;
  unsigned attempt; /* failures in a row */
  int64_t since;    /* monotonic ms of the first */
} outage_t;

/* The store's URI for a message: its password and secret options masked. */
static void shown_uri(const config_t *cfg, model_buf_t *out) { redact_uri(cfg->store_uri, out); }

/* After a failure that retrying may fix: logs it (the first, then every
 * tenth), and sleeps out the backoff, cut to what is left of the timeout.
 * False when the timeout is reached (logged) or a stop signal came. */
static bool outage_wait(outage_t *o, const char *what, const char *error) {
  int64_t now = clock_mono(o->clock);
  if (o->attempt == 0) o->since = now;
  int64_t waited_ms = now - o->since, left_ms = o->cfg->store_connect_timeout_ms - waited_ms;
  model_buf_t uri = MODEL_BUF_INIT;
  shown_uri(o->cfg, &uri);
  bool go_on = left_ms > 0 && !signals_stop_count();
  if (go_on && (o->attempt == 0 || o->attempt % 10 == 9))
    log_warn("verify: store not answering, retrying", "what", LOG_STR, what, "store", LOG_STR, uri.data, "error",
             LOG_STR, error, "timeout_ms", LOG_INT, o->cfg->store_connect_timeout_ms);
  if (left_ms <= 0)
    log_error("verify: the store did not answer within store.connect_timeout_ms", "what", LOG_STR, what, "store",
              LOG_STR, uri.data, "error", LOG_STR, error, "timeout_ms", LOG_INT, o->cfg->store_connect_timeout_ms);
  model_buf_destroy(&uri);
  if (!go_on) return false;
  int64_t ms = retry_backoff_ms(o->cfg->retry_backoff_ms, o->cfg->retry_backoff_max_ms, o->attempt++);
  clock_sleep(o->clock, ms < left_ms ? ms : left_ms);
  return !signals_stop_count();
}

/* Before anything is read: one round trip to the store, waited for as
 * outage_wait says. */
static bool connect_store(store_t *store, const config_t *cfg, const clock_source_t *clock) {
  outage_t o = {.cfg = cfg, .clock = clock};
  for (;;) {
    sink_error_t err;
    sink_status_t st = store_ping(store, &err);
    if (st == SINK_OK) {
      log_info("verify: the store answered; reading the commands");
      return true;
    }
    if (st == SINK_FATAL) {
      model_buf_t uri = MODEL_BUF_INIT;
      shown_uri(cfg, &uri);
      log_error("verify: the store refused the verify", "store", LOG_STR, uri.data, "error", LOG_STR, err.message);
      model_buf_destroy(&uri);
      return false;
    }
    if (!outage_wait(&o, "connect", err.message)) return false;
  }
}

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

/* Loads the chunk's stored documents, waiting out a store outage as
 * outage_wait says. */
static bool load_chunk(store_t *store, const config_t *cfg, chunk_t *c, const char **keys) {
  for (size_t i = 0; i < c->n; i++) keys[i] = model_aggregate_key(c->v[i].rebuilt, NULL);
  outage_t o = {.cfg = cfg};
  for (;;) {
    sink_error_t err;
    sink_status_t st = store_load_counts(store, keys, c->n, on_found, on_unreadable, c, &err);
    if (st == SINK_OK) return true;
    if (st == SINK_FATAL) {
      log_error("verify: store read failed", "error", LOG_STR, err.message);
      return false;
    }
    if (!outage_wait(&o, "read", err.message)) return false;
  }
}

/* --- repairing a chunk --------------------------------------------------------------- */

static bool repairable(model_drift_kind_t k) { return k == MODEL_DRIFT_MISSING || k == MODEL_DRIFT_STORE_BEHIND; }

/* One round's job: every repairable entry not yet done, merged into what
 * is stored at the time of the write. */
static writer_job_t *repair_job(const config_t *cfg, const clock_source_t *clock, const chunk_t *c, size_t todo) {
  writer_job_t *job = writer_job_new(todo);
  job->chunk = (size_t)cfg->batch_max_aggregates;
  job->now_ms = clock_wall(clock);
  for (size_t i = 0; i < c->n; i++) {
    entry_t *e = &c->v[i];
    if (repairable(e->drift.kind) && e->repair == REPAIR_NONE)
      writer_job_add(job, model_aggregate_clone(e->rebuilt), 0, true, e);
  }
  return job;
}

/* Records the job's results in its entries, and announces each repair
 * written (ann, when change events are on); returns how many go again. */
static size_t repair_results(writer_job_t *job, announcer_t *ann) {
  size_t again = 0;
  for (size_t k = 0; k < job->nitems; k++) {
    writer_item_t *it = &job->items[k];
    entry_t *e = it->tag;
    switch (it->result) {
    case SINK_ITEM_OK:
      e->repair = it->sent ? REPAIR_WRITTEN : REPAIR_UNCHANGED;
      if (it->sent) e->new_rev = it->rev;
      if (it->sent && ann) {
        model_changes_normalize(&it->changes);
        announcer_announce(ann, &(batch_written_t){it->agg, it->rev, it->updated_at_ms, &it->changes, true});
      }
      break;
    case SINK_ITEM_TOO_LARGE: /* refused by the store, or (not sent) found by the merge after the load */
    case SINK_ITEM_REJECTED:
      if (!it->sent) { /* load and merge again */
        again++;
        break;
      }
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
static bool repair_chunk(const sink_t *sink, const config_t *cfg, const clock_source_t *clock, announcer_t *ann,
                         chunk_t *c) {
  size_t todo = 0;
  for (size_t i = 0; i < c->n; i++) todo += repairable(c->v[i].drift.kind);
  bool ok = true;
  unsigned conflict_rounds = 0;
  outage_t outage = {.cfg = cfg, .clock = clock};
  while (todo && ok) {
    writer_job_t *job = repair_job(cfg, clock, c, todo);
    writer_execute(sink, clock, job);
    todo = repair_results(job, ann);
    if (job->status == SINK_FATAL) {
      log_error("verify: repair write failed", "error", LOG_STR, job->err.message);
      ok = false;
    } else if (job->status == SINK_RETRY && todo) {
      ok = outage_wait(&outage, "repair", job->err.message);
    } else if (todo) {
      outage.attempt = 0; /* the store answered: an outage starts again from its first failure */
      conflict_rounds++;
    }
    writer_job_destroy(job);
    if (signals_stop_count()) ok = false;
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

/* Documents compared so far: chunks whose comparison is done, never more. */
static void show_compared(progress_t *p, size_t done, size_t total, uint64_t drifted, bool final) {
  if (!progress_due(p, final)) return;
  char line[128];
  snprintf(line, sizeof line, "compared %zu of %zu documents, %" PRIu64 " drifted", done, total, drifted);
  log_field_t f[] = {{.key = "compared", .type = LOG_INT, .i = (int64_t)done},
                     {.key = "documents", .type = LOG_INT, .i = (int64_t)total},
                     {.key = "drifted", .type = LOG_INT, .i = (int64_t)drifted}};
  progress_show(p, final, line, f, sizeof f / sizeof f[0]);
}

/* --- the verify -------------------------------------------------------------------------- */

typedef struct verify {
  const config_t *cfg;
  const verify_options_t *o;
  const clock_source_t *clock; /* o->clock, or the process's */
  verify_stats_t *st;
  store_t *store;
  sink_t sink;
  entry_t *entries; /* one chunk */
  const char **keys;
  model_buf_t out; /* the chunk's report lines */
  FILE *report;
  announcer_t *ann; /* with --repair and changes.topic: announces the repairs; else NULL */
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
  if (ok && drifted && v->o->repair)
    ok = repair_chunk(&v->sink, v->cfg, v->clock, v->ann, &c);
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
    log_error("verify: cannot write the report", "error", LOG_STR, strerror(errno));
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
  bool ok = true;
  progress_t pr = progress_start("verify");
  for (size_t off = 0; off < n && ok && !signals_stop_count(); off += per) {
    size_t k = n - off < per ? n - off : per;
    ok = verify_chunk(v, all + off, k);
    if (ok) v->st->compared += k;
    show_compared(&pr, v->st->compared, n, v->st->drifted, false);
  }
  if (signals_stop_count()) ok = false;
  if (fflush(v->report) != 0 && ok) {
    log_error("verify: cannot write the report", "error", LOG_STR, strerror(errno));
    ok = false;
  }
  /* On a terminal the line in place ends with the final count, once all is
   * compared; a stop or a failure ends it as it stands. */
  if (ok && pr.tty) show_compared(&pr, v->st->compared, n, v->st->drifted, true);
  progress_end(&pr);
  model_buf_destroy(&v->out);
  free(v->keys);
  free(v->entries);
  return ok;
}

/* Repairs are writes: with changes.topic set, each is announced (docs/CHANGES.md). */
static bool announce_repairs(verify_t *v) {
  if (!v->o->repair || !*v->cfg->changes_topic) return true;
  char err[512];
  v->ann = announcer_new(v->cfg, v->clock, err, sizeof err);
  if (!v->ann) log_error("verify: kafka producer of change events", "error", LOG_STR, err);
  return v->ann != NULL;
}

/* Waits for the repairs' change events to be acknowledged, as long as the
 * store may take to answer (store.connect_timeout_ms: a verify never waits
 * without bound); false if they are not by then, or cannot be delivered. */
static bool repairs_announced(verify_t *v) {
  if (!v->ann) return true;
  int64_t deadline = clock_mono(v->clock) + v->cfg->store_connect_timeout_ms;
  while (changes_pending(v->ann->changes) && announcer_ok(v->ann) && !signals_stop_count() &&
         clock_mono(v->clock) < deadline)
    changes_poll(v->ann->changes, 100);
  if (!changes_pending(v->ann->changes)) return true;
  log_error("verify: the change events of the repairs were not acknowledged within store.connect_timeout_ms",
            "topic", LOG_STR, v->cfg->changes_topic, "timeout_ms", LOG_INT, v->cfg->store_connect_timeout_ms);
  return false;
}

int verify_run(const config_t *cfg, const verify_options_t *o, FILE *report, verify_stats_t *stats) {
  const clock_source_t *clock = o->clock ? o->clock : clock_system();
  double t0 = clock_mono_seconds(clock);
  memset(stats, 0, sizeof *stats);
  verify_t v = {.cfg = cfg, .o = o, .clock = clock, .st = stats, .out = MODEL_BUF_INIT, .report = report};
  /* A bad URI is a configuration error (mongoc connects lazily: only the
   * URI and options are checked here). */
  sink_error_t serr;
  v.store = store_open(cfg, &serr);
  if (!v.store) {
    fprintf(stderr, "aggregator: verify: store: %s\n", serr.message);
    return 2;
  }
  v.sink = store_sink(v.store);
  /* Installed for the whole verify: the wait for the store, the rebuild
   * (replay.h) and the audit. */
  signals_install(SIGNALS_STOP);
  srand((unsigned)clock_wall(clock)); /* the retry jitter (retry.h) */
  /* The store answers before anything is read: a rebuild can take minutes,
   * and is worth nothing without a store to compare it with. */
  int rc = connect_store(v.store, cfg, clock) && announce_repairs(&v) ? 0 : 1;
  replay_rebuilt_t rebuilt = {0};
  if (rc == 0) {
    replay_options_t ro = {.from = o->from, .until = o->until, .input = o->input, .rebuilt = &rebuilt,
                           .label = "verify", .clock = clock};
    rc = replay_run(cfg, &ro, &stats->rebuild);
  }
  if (rc == 0 && rebuilt.n == 0 && !signals_stop_count()) {
    /* An audit of nothing proves nothing: a wrong range, topic or file. */
    if (o->allow_empty) {
      log_info("verify: no document to compare", "read", LOG_INT, (int64_t)stats->rebuild.read, "rejected", LOG_INT,
               (int64_t)stats->rebuild.rejected);
    } else {
      log_error("verify: no document compared: nothing valid was read (--allow-empty accepts that)", "read",
                LOG_INT, (int64_t)stats->rebuild.read, "rejected", LOG_INT, (int64_t)stats->rebuild.rejected);
      rc = 1;
    }
  }
  bool through = false; /* every document compared */
  if (rc == 0) {
    through = verify_compare(&v, &rebuilt) && repairs_announced(&v);
    /* A repair that did not land is a failure of what was asked for. */
    rc = !through || stats->failed ? 1 : stats->drifted ? 3 : 0;
  }
  /* A stop before the audit was through: no verdict. */
  if (signals_stop_count() && !through && rc == 1) {
    log_error("verify: interrupted", "signal", LOG_INT, (int64_t)signals_stop_signal(), "compared", LOG_INT,
              (int64_t)stats->compared);
    rc = 128 + signals_stop_signal();
  }
  replay_rebuilt_free(&rebuilt);
  announcer_destroy(v.ann);
  store_destroy(v.store);
  stats->seconds = clock_mono_seconds(clock) - t0;
  return rc;
}
