/* aggregator export: see export.h. */
#include "export.h"

#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/log.h"
#include "replay_file.h"
#include "replay_source.h"
#include "base/signals.h"

typedef struct exporting {
  replay_file_t out; /* whole or absent (replay_file.h) */
  replay_position_t at;
  export_stats_t *st;
} exporting_t;

static bool export_message(void *ctx, const char *data, size_t len, int64_t event_ms) {
  (void)event_ms;
  exporting_t *x = ctx;
  x->st->read++;
  if (len && memchr(data, '\n', len)) {
    log_warn("export: a value holds a newline and is not exported", "topic", LOG_STR, x->at.topic, "partition",
             LOG_INT, (int64_t)x->at.partition, "offset", LOG_INT, x->at.offset);
    x->st->newline++;
    return true;
  }
  if ((len && !replay_file_write(&x->out, data, len)) || !replay_file_write(&x->out, "\n", 1)) return false;
  x->st->exported++;
  return true;
}

int export_run(const config_t *cfg, const export_options_t *o, export_stats_t *stats) {
  double t0 = clock_mono_s();
  *stats = (export_stats_t){0};
  signals_install(SIGNALS_STOP);
  exporting_t x = {.st = stats};
  x.out = (replay_file_t){.shown = strcmp(o->output, "-") ? o->output : "standard output", .report_each = true};
  /* The output path is checked before anything is read. */
  if (!replay_file_open(&x.out, o->output, "w")) return 1;
  replay_feed_t feed = {export_message, NULL, &x, "export"};
  bool ok = replay_source_topics_at(cfg, o->from, o->until, &feed, &x.at);
  /* An output written beside its target is discarded below: the target
   * stays as it was. A stream keeps what was written. */
  if (signals_stop_count() && x.out.temp)
    log_error("export: interrupted; the output is left as it was", "file", LOG_STR, x.out.shown);
  else if (signals_stop_count())
    log_error("export: interrupted");
  ok = ok && replay_file_commit(&x.out);
  replay_file_close(&x.out);
  stats->seconds = clock_mono_s() - t0;
  return ok ? 0 : 1;
}
