/* aggregator replay (replay.h).
 *
 * With both --input and --output the replay is the file replay: no broker,
 * no store, no config file needed, although -c and --set are honoured
 * (limits.max_command_bytes applies), and no log set up: it has nothing to
 * log. Otherwise the topics and/or the store are involved.
 *
 * Usage errors (exit 2): --rejects without --input (rejects of topics go to
 * the dead-letter topic), --from/--until with --input (they select topic
 * offsets, a file has none). */
#include <stdio.h>

#include "cli.h"
#include "config.h"
#include "log.h"
#include "replay.h"

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
  int64_t ms;
  bool special;
  if (!replay_parse_bound(o->from, "beginning", &ms, &special) || !replay_parse_bound(o->until, "end", &ms, &special)) {
    fputs("aggregator: replay: --from and --until take beginning/end or an RFC 3339 UTC time\n", stderr);
    return 2;
  }
  int rc;
  config_t *cfg = cli_load_config(o, &rc);
  if (!cfg) return rc;
  if (!(o->input && o->output)) log_setup(cfg->log_level, cfg->log_format);
  replay_options_t ro = {
      .from = o->from, .until = o->until, .input = o->input, .output = o->output, .rejects = o->rejects};
  replay_stats_t st;
  rc = replay_run(cfg, &ro, &st);
  if (rc == 0) print_summary(&st);
  config_destroy(cfg);
  return rc;
}
