/* aggregator export: see export.h. */
#include "export.h"

#include <errno.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "oom.h"
#include "replay_file.h"
#include "replay_source.h"
#include "signals.h"

typedef struct exporting {
  replay_file_t out;
  char *tmp; /* the file written beside the target, renamed onto it at success; NULL = written in place */
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

/* The output is whole or absent: a regular file (or a path that does not
 * exist yet) is written as "<dir>/.<name>.export-<pid>" beside it, synced
 * and renamed onto it only once everything was read and written; a failed
 * or interrupted export removes it and leaves the target as it was. "-" and
 * what is not a regular file (/dev/null, a pipe) are written in place. */
static bool output_open(exporting_t *x, const char *path) {
  struct stat st;
  if (!strcmp(path, "-") || (!stat(path, &st) && !S_ISREG(st.st_mode))) return replay_file_open(&x->out, path, "w");
  char *d = oom_strdup(path), *b = oom_strdup(path);
  size_t len = strlen(path) + 64;
  x->tmp = oom_malloc(len);
  snprintf(x->tmp, len, "%s/.%s.export-%d", dirname(d), basename(b), (int)getpid());
  free(d);
  free(b);
  return replay_file_open(&x->out, x->tmp, "w");
}

/* Closes the output; with ok, syncs it and renames it onto path. False when
 * anything was lost (reported). A temporary file is never left behind. */
static bool output_close(exporting_t *x, const char *path, bool ok) {
  if (!x->tmp) return replay_file_close(&x->out) && ok;
  if (ok && x->out.f) {
    ok = replay_file_drain(&x->out) && fflush(x->out.f) == 0 && fsync(fileno(x->out.f)) == 0;
    if (!ok) fprintf(stderr, "aggregator: export: cannot write '%s': %s\n", path, strerror(errno));
  }
  ok = replay_file_close(&x->out) && ok;
  if (ok && rename(x->tmp, path)) {
    fprintf(stderr, "aggregator: export: cannot rename the output onto '%s': %s\n", path, strerror(errno));
    ok = false;
  }
  if (!ok) unlink(x->tmp);
  free(x->tmp);
  x->tmp = NULL;
  return ok;
}

int export_run(const config_t *cfg, const export_options_t *o, export_stats_t *stats) {
  double t0 = clock_mono_s();
  *stats = (export_stats_t){0};
  signals_install(SIGNALS_STOP);
  exporting_t x = {.st = stats};
  bool std = !strcmp(o->output, "-");
  x.out = (replay_file_t){.shown = std ? "standard output" : o->output, .quote = !std, .report_each = true};
  /* The output path is checked before anything is read. */
  if (!output_open(&x, o->output)) {
    free(x.tmp);
    return 1;
  }
  replay_feed_t feed = {export_message, NULL, &x, "export"};
  bool ok = replay_source_topics_at(cfg, o->from, o->until, &feed, &x.at);
  if (signals_stop_count() && x.tmp)
    fprintf(stderr, "aggregator: export: interrupted; '%s' left as it was\n", o->output);
  else if (signals_stop_count())
    fputs("aggregator: export: interrupted\n", stderr);
  ok = output_close(&x, o->output, ok);
  stats->seconds = clock_mono_s() - t0;
  return ok ? 0 : 1;
}
