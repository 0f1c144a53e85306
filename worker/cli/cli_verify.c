/* aggregator verify: the store audited against the log
 * (verify.c). The report goes to stdout; the log and the summary
 * (summary.h) to stderr.
 *
 * Usage errors (exit 2): --from/--until with --input (they select topic
 * offsets, a file has none), as for replay; a --from/--until that is
 * none of the forms of replay_bound.h (checked here, before any
 * broker is contacted); no store configured (cli_store_configured: the
 * default store.uri is never audited). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "config/config.h"
#include "base/log.h"
#include "preflight.h"
#include "replay/replay.h"
#include "base/summary.h"
#include "replay/verify.h"

static bool bound_ok(const char *s, const char *word) {
  int64_t ms;
  bool special;
  return replay_parse_bound(s, word, &ms, &special);
}

static void print_summary(const verify_stats_t *s, bool repair) {
  summary_counter_t c[] = {{"read", s->rebuild.read},
                           {"rejected", s->rebuild.rejected},
                           {"documents", s->rebuild.aggregates},
                           {"drifted", s->drifted},
                           {"missing", s->kinds[MODEL_DRIFT_MISSING]},
                           {"store_behind", s->kinds[MODEL_DRIFT_STORE_BEHIND]},
                           {"differs", s->kinds[MODEL_DRIFT_DIFFERS]},
                           {"store_ahead", s->kinds[MODEL_DRIFT_STORE_AHEAD]},
                           {"repaired", s->repaired},
                           {"unchanged", s->unchanged},
                           {"failed", s->failed}};
  summary_print("verify", c, sizeof c / sizeof c[0] - (repair ? 0 : 3), s->seconds);
}

int cli_verify(const cli_options_t *o) {
  if (o->input && (o->from || o->until)) {
    fputs("aggregator: verify: --from and --until select topic offsets; they cannot be used with --input\n", stderr);
    return 2;
  }
  if (!bound_ok(o->from, "beginning") || !bound_ok(o->until, "end")) {
    fputs("aggregator: verify: --from and --until take beginning/end, " REPLAY_BOUND_FORMS "\n", stderr);
    return 2;
  }
  int rc;
  config_t *cfg = cli_load_config(o, &rc);
  if (!cfg) return rc;
  if (!cli_store_configured(cfg)) {
    fputs("aggregator: verify: no store is configured (store.uri): verify compares the store with the log; give a "
          "configuration (see 'aggregator help verify')\n",
          stderr);
    config_destroy(cfg);
    return 2;
  }
  log_setup(cfg->log_level, cfg->log_format);
  /* A repair's writes are announced: the change topic first. */
  if (o->repair && (rc = preflight_changes(cfg, "verify")) != 0) {
    config_destroy(cfg);
    return rc;
  }
  verify_options_t vo = {
      .from = o->from, .until = o->until, .input = o->input, .repair = o->repair, .allow_empty = o->allow_empty};
  verify_stats_t st;
  rc = verify_run(cfg, &vo, stdout, &st);
  /* Only for an audit that went through every document: also when a repair
   * failed (it says how many did), never for one cut short. */
  if (st.compared == st.rebuild.aggregates && (rc == 0 || rc == 3 || (rc == 1 && st.failed)))
    print_summary(&st, o->repair);
  config_destroy(cfg);
  return rc;
}
