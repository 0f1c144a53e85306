/* aggregator replay (replay.h).
 *
 * With both --input and --output the replay is the file replay: no broker,
 * no store, no config file needed, although -c and --set are honoured
 * (limits.max_command_bytes applies), and no log set up: it has nothing to
 * log. Otherwise the topics and/or the store are involved.
 *
 * Usage errors (exit 2): --rejects without --input (rejects of topics go to
 * the dead-letter topic), --from/--until with --input (they select topic
 * offsets, a file has none), --input into the store when no store is
 * configured. */
#include <stdio.h>

#include "cli.h"
#include "config.h"
#include "config_table.h"
#include "log.h"
#include "replay.h"

/* A store is configured when store.uri was given (file, environment or
 * --set): its default names a local server that a laptop replay of a file
 * almost never means, and writing there would retry for ever. */
static bool store_configured(const config_t *cfg) {
  const config_prop_t *p = config_prop_find("store", "uri");
  return p && cfg->origins[p - config_props].kind != CONFIG_ORIGIN_DEFAULT;
}

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
    fputs("aggregator: replay: --from and --until take beginning/end, " REPLAY_BOUND_FORMS "\n", stderr);
    return 2;
  }
  int rc;
  config_t *cfg = cli_load_config(o, &rc);
  if (!cfg) return rc;
  if (o->input && !o->output && !store_configured(cfg)) {
    fputs("aggregator: replay: --input without --output writes to the store, and no store is configured "
          "(store.uri): give --output FILE|- or a configuration (see 'aggregator help replay')\n",
          stderr);
    config_destroy(cfg);
    return 2;
  }
  if (!(o->input && o->output)) log_setup(cfg->log_level, cfg->log_format);
  replay_options_t ro = {
      .from = o->from, .until = o->until, .input = o->input, .output = o->output, .rejects = o->rejects};
  replay_stats_t st;
  rc = replay_run(cfg, &ro, &st);
  if (rc == 0) print_summary(&st);
  if (rc == 0 && o->input && !o->rejects && st.rejected)
    fprintf(stderr, "aggregator: replay: %llu line%s rejected; --rejects FILE writes each with its reason\n",
            (unsigned long long)st.rejected, st.rejected == 1 ? "" : "s");
  config_destroy(cfg);
  return rc;
}
