/* aggregator export (export.h).
 *
 * Usage errors (exit 2), checked before anything is contacted: no --output
 * (the archive is the point), a --from/--until of none of the forms of
 * replay_bound.h. The summary goes to stderr (summary.h). */
#include <stdio.h>

#include "cli.h"
#include "config/config.h"
#include "replay/export.h"
#include "base/log.h"
#include "replay/replay_bound.h"
#include "base/summary.h"

static bool bound_ok(const char *s, const char *word) {
  replay_bound_t b;
  char err[256];
  bool ok = replay_bound_parse(s, word, &b, err, sizeof err);
  if (!ok) fprintf(stderr, "aggregator: export: --%s: %s\n", word[0] == 'b' ? "from" : "until", err);
  replay_bound_free(&b);
  return ok;
}

static void print_summary(const export_stats_t *s) {
  summary_counter_t c[] = {{"read", s->read}, {"exported", s->exported}, {"skipped_newline", s->newline}};
  summary_print("export", c, sizeof c / sizeof c[0], s->seconds);
}

int cli_export(const cli_options_t *o) {
  if (!o->output) {
    fputs("aggregator: export: --output FILE|- is required (see 'aggregator help export')\n", stderr);
    return 2;
  }
  if (!bound_ok(o->from, "beginning") || !bound_ok(o->until, "end")) return 2;
  int rc;
  config_t *cfg = cli_load_config(o, &rc);
  if (!cfg) return rc;
  log_setup(cfg->log_level, cfg->log_format);
  export_options_t eo = {.from = o->from, .until = o->until, .output = o->output};
  export_stats_t st;
  rc = export_run(cfg, &eo, &st);
  if (rc == 0) print_summary(&st);
  config_destroy(cfg);
  return rc;
}
