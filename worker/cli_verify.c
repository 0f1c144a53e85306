/* aggregator verify: the store audited against the log
 * (verify.c). The report goes to stdout, the summary line to stderr.
 *
 * Usage errors (exit 2): --from/--until with --input (they select topic
 * offsets, a file has none), as for replay; a --from/--until that is
 * none of the forms of replay_bound.h (checked here, before any
 * broker is contacted). */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "config.h"
#include "log.h"
#include "replay.h"
#include "verify.h"

static bool bound_ok(const char *s, const char *word) {
  int64_t ms;
  bool special;
  return replay_parse_bound(s, word, &ms, &special);
}

static void print_summary(const verify_stats_t *s, bool repair) {
  fprintf(stderr,
          "verify: read=%llu rejected=%llu documents=%llu drifted=%llu missing=%llu store_behind=%llu differs=%llu "
          "store_ahead=%llu",
          (unsigned long long)s->rebuild.read, (unsigned long long)s->rebuild.rejected,
          (unsigned long long)s->rebuild.aggregates, (unsigned long long)s->drifted,
          (unsigned long long)s->kinds[MODEL_DRIFT_MISSING], (unsigned long long)s->kinds[MODEL_DRIFT_STORE_BEHIND],
          (unsigned long long)s->kinds[MODEL_DRIFT_DIFFERS], (unsigned long long)s->kinds[MODEL_DRIFT_STORE_AHEAD]);
  if (repair)
    fprintf(stderr, " repaired=%llu unchanged=%llu failed=%llu", (unsigned long long)s->repaired,
            (unsigned long long)s->unchanged, (unsigned long long)s->failed);
  fprintf(stderr, " seconds=%.3f\n", s->seconds);
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
  log_setup(cfg->log_level, cfg->log_format);
  verify_options_t vo = {.from = o->from, .until = o->until, .input = o->input, .repair = o->repair};
  verify_stats_t st;
  rc = verify_run(cfg, &vo, stdout, &st);
  /* The summary also when a repair failed: it says how many did. */
  if (rc == 0 || rc == 3 || (rc == 1 && st.failed)) print_summary(&st, o->repair);
  config_destroy(cfg);
  return rc;
}
