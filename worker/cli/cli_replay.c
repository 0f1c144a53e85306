/* aggregator replay (replay.h).
 *
 * With both --input and --output the replay is the file replay: no broker,
 * no store, no config file needed, although -c and --set are honoured
 * (limits.max_command_bytes, log.format). Otherwise the topics and/or the
 * store are involved; into the store, with changes.topic set, the brokers
 * are asked first whether the change topic exists (preflight.h). Every
 * line on stderr but a usage error's is a log line (log.h), the summary
 * included (summary.h).
 *
 * Usage errors (exit 2, one plain `aggregator:` line, as every command's):
 * --rejects without --input (rejects of topics go to the dead-letter
 * topic), --from/--until with --input (they select topic offsets, a file
 * has none), --input into the store when no store is configured, a
 * --max-rejects that is not a count. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli.h"
#include "config/config.h"
#include "base/log.h"
#include "preflight.h"
#include "replay/replay.h"
#include "base/summary.h"

static void print_summary(const replay_stats_t *s) {
  summary_counter_t c[] = {{"read", s->read},         {"applied", s->applied},
                           {"stale", s->stale},       {"rejected", s->rejected},
                           {"aggregates", s->aggregates}};
  summary_print("replay", c, sizeof c / sizeof c[0], s->seconds);
}

/* --max-rejects N: a count, 0 included. */
static bool parse_count(const char *s, uint64_t *n) {
  if (!s || *s < '0' || *s > '9') return false;
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  *n = v;
  return !*end && errno == 0;
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
  int64_t ms;
  bool special;
  if (!replay_parse_bound(o->from, "beginning", &ms, &special) || !replay_parse_bound(o->until, "end", &ms, &special)) {
    fputs("aggregator: replay: --from and --until take beginning/end, " REPLAY_BOUND_FORMS "\n", stderr);
    return 2;
  }
  uint64_t max_rejects = 0;
  if (o->max_rejects && !parse_count(o->max_rejects, &max_rejects)) {
    fprintf(stderr, "aggregator: replay: --max-rejects takes a count (0 or more), not '%s'\n", o->max_rejects);
    return 2;
  }
  int rc;
  config_t *cfg = cli_load_config(o, &rc);
  if (!cfg) return rc;
  if (o->input && !o->output && !cli_store_configured(cfg)) {
    fputs("aggregator: replay: --input without --output writes to the store, and no store is configured "
          "(store.uri): give --output FILE|- or a configuration (see 'aggregator help replay')\n",
          stderr);
    config_destroy(cfg);
    return 2;
  }
  log_setup(cfg->log_level, cfg->log_format);
  /* Into the store, every write is announced: the change topic first. */
  if (!o->output && (rc = preflight_changes(cfg, "replay")) != 0) {
    config_destroy(cfg);
    return rc;
  }
  replay_options_t ro = {.from = o->from,
                         .until = o->until,
                         .input = o->input,
                         .output = o->output,
                         .rejects = o->rejects,
                         .limit_rejects = o->max_rejects != NULL,
                         .max_rejects = max_rejects};
  replay_stats_t st;
  rc = replay_run(cfg, &ro, &st);
  if (rc == 0) print_summary(&st);
  if (rc == 0 && o->input && !o->rejects && st.rejected)
    log_warn("replay: lines rejected; --rejects FILE writes each with its reason", "rejected", LOG_INT,
             (int64_t)st.rejected);
  config_destroy(cfg);
  return rc;
}
