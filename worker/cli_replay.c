/* aggregator replay (SPEC.md section 6).
 *
 * With both --input and --output the replay is the file mode
 * (replay_file.c): no broker, no store, no config file needed, although -c
 * and --set are honoured (limits.max_command_bytes applies). Otherwise the
 * topics and/or the store are involved (replay.c).
 *
 * Usage errors (exit 2): --rejects without --input (rejects of topics go to
 * the dead-letter topic), --from/--until with --input (they select topic
 * offsets, a file has none). */
#include <stdio.h>

#include <mongoc/mongoc.h>

#include "cli.h"
#include "config.h"
#include "log.h"
#include "replay.h"
#include "replay_file.h"

static void print_summary(const replay_stats_t *s) {
  fprintf(stderr, "replay: read=%llu applied=%llu stale=%llu rejected=%llu aggregates=%llu seconds=%.3f\n",
          (unsigned long long)s->read, (unsigned long long)s->applied, (unsigned long long)s->stale,
          (unsigned long long)s->rejected, (unsigned long long)s->aggregates, s->seconds);
}

int cli_replay(const cli_options_t *o) {
  if (o->rejects && !o->input) {
    fputs("aggregator: replay: --rejects needs --input (rejected messages of topics go to the dead-letter topic)\n",
          stderr);
    return 2;
  }
  if (o->input && (o->from || o->until)) {
    fputs("aggregator: replay: --from and --until select topic offsets; they cannot be used with --input\n", stderr);
    return 2;
  }
  /* Validating store.uri parses it with libmongoc; keep its logger quiet. */
  mongoc_log_set_handler(NULL, NULL);
  config_t *cfg = config_new();
  if (!cfg) return 1;
  config_error_t err;
  if (!config_load(cfg, o->config_path, o->sets, o->nsets, &err)) {
    fprintf(stderr, "aggregator: %s\n", err.message);
    config_destroy(cfg);
    return 2;
  }
  int rc;
  if (o->input && o->output) {
    replay_stats_t st;
    rc = replay_file_run(cfg, o->input, o->output, o->rejects, &st);
    if (rc == 0) print_summary(&st);
  } else {
    log_setup(cfg->log_level, cfg->log_format);
    replay_stats_t st;
    rc = replay_run(cfg, o, &st);
    if (rc == 0) print_summary(&st);
  }
  config_destroy(cfg);
  return rc;
}
