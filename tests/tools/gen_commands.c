/* gen_commands: writes a deterministic, realistic command stream as JSON
 * lines (the model is described in cmdgen.h).
 *
 *   gen_commands [--seed N] [--tenants N] [--assignments N] [--students N]
 *                [--count N] [--mix upserted=W,deleted=W,submission=W,grade=W,assigned=W,unassigned=W]
 *                [--invalid-rate F] [--duplicate-rate F] [--order time|shuffle]
 *                [--versions counter|time] [--skew FRACTION:SHARE] [--start-spread-days N]
 *                [--style ours|reordered|python|uuid|tabs|crlf|php|jackson|dotnet|go] [--output FILE|-]
 *
 * --skew 0.1:0.9 gives 10% of the assignments 90% of the commands.
 * --start-spread-days 0 starts every assignment at once, so all of them are
 * active from the first command to the last (default 30: a rise and fall).
 * --style writes the same commands the way other producers do: ours (the
 * default) in the schema's key order without spaces; reordered in the order
 * id, tenant, assignment, version, ts, type, student, data; python the
 * reordered keys with ", " and ": " as Python's json.dumps writes them; uuid
 * with UUID command ids and the keys sorted by name at both levels; tabs the
 * reordered keys indented with tabs on one line; crlf python's lines ended
 * with "\r\n". php, jackson, dotnet and go write titles and feedback with
 * slashes, quotes, HTML's characters, accents and emoji, escaped as those
 * encoders escape them (cmdgen.h): the same texts in all four.
 * --count is the number of valid commands (default: exactly the base
 * commands, 1 + 3 x students per assignment, which fill every slot); fewer
 * than that fills assignments partly. Duplicates and invalid lines come on
 * top. A summary goes to stderr:
 *   gen: lines=N valid=N duplicates=N invalid=N */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdgen.h"

static int usage(const char *msg) {
  fprintf(stderr,
          "gen_commands: %s\n"
          "usage: gen_commands [--seed N] [--tenants N] [--assignments N] [--students N] [--count N]\n"
          "                    [--mix upserted=W,deleted=W,submission=W,grade=W,assigned=W,unassigned=W]\n"
          "                    [--invalid-rate F] [--duplicate-rate F] [--order time|shuffle]\n"
          "                    [--versions counter|time] [--skew FRACTION:SHARE] [--start-spread-days N]\n"
          "                    [--style ours|reordered|python|uuid|tabs|crlf|php|jackson|dotnet|go] [--output FILE|-]\n",
          msg);
  return 2;
}

static bool parse_u64(const char *s, uint64_t *v) {
  char *end;
  *v = strtoull(s, &end, 0);
  return *s && !*end && *s != '-';
}

/* "FRACTION:SHARE", both strictly between 0 and 1 */
static bool parse_skew(const char *s, cmdgen_opts_t *o) {
  char *end;
  double f = strtod(s, &end);
  if (end == s || *end != ':') return false;
  s = end + 1;
  double share = strtod(s, &end);
  if (end == s || *end || !(f > 0 && f < 1 && share > 0 && share < 1)) return false;
  o->hot_fraction = f;
  o->hot_share = share;
  return true;
}

static bool parse_style(const char *s, cmdgen_opts_t *o) {
  for (int i = 0; i < CMDGEN_STYLE_COUNT; i++)
    if (!strcmp(s, cmdgen_style_names[i])) {
      o->style = i;
      return true;
    }
  return false;
}

int main(int argc, char **argv) {
  cmdgen_opts_t o;
  cmdgen_defaults(&o);
  const char *output = "-";
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    if (i + 1 >= argc) return usage("every option needs a value");
    const char *v = argv[++i];
    uint64_t n;
    char *end;
    if (!strcmp(a, "--seed") && parse_u64(v, &n)) o.seed = n;
    else if (!strcmp(a, "--tenants") && parse_u64(v, &n) && n >= 1 && n <= 100) o.tenants = (uint32_t)n;
    else if (!strcmp(a, "--assignments") && parse_u64(v, &n) && n >= 1 && n <= 1000000) o.assignments = (uint32_t)n;
    else if (!strcmp(a, "--students") && parse_u64(v, &n) && n >= 1 && n <= 10000) o.students = (uint32_t)n;
    else if (!strcmp(a, "--count") && parse_u64(v, &n) && n <= 100000000) o.count = n;
    else if (!strcmp(a, "--mix") && cmdgen_parse_mix(&o, v)) continue;
    else if (!strcmp(a, "--invalid-rate") && (o.invalid_rate = strtod(v, &end), !*end) && o.invalid_rate >= 0 &&
             o.invalid_rate <= 10)
      continue;
    else if (!strcmp(a, "--duplicate-rate") && (o.duplicate_rate = strtod(v, &end), !*end) &&
             o.duplicate_rate >= 0 && o.duplicate_rate <= 10)
      continue;
    else if (!strcmp(a, "--order") && (!strcmp(v, "time") || !strcmp(v, "shuffle")))
      o.order = !strcmp(v, "time") ? CMDGEN_ORDER_TIME : CMDGEN_ORDER_SHUFFLE;
    else if (!strcmp(a, "--versions") && (!strcmp(v, "counter") || !strcmp(v, "time")))
      o.version_style = !strcmp(v, "time") ? CMDGEN_VERSION_TIME : CMDGEN_VERSION_COUNTER;
    else if (!strcmp(a, "--skew") && parse_skew(v, &o)) continue;
    else if (!strcmp(a, "--start-spread-days") && parse_u64(v, &n) && n <= 3650) o.start_spread_days = (uint32_t)n;
    else if (!strcmp(a, "--style") && parse_style(v, &o)) continue;
    else if (!strcmp(a, "--output")) output = v;
    else {
      char msg[256];
      snprintf(msg, sizeof msg, "bad option or value: %s %s", a, v);
      return usage(msg);
    }
  }
  if (o.tenants > o.assignments) o.tenants = o.assignments;

  cmdgen_t g;
  if (!cmdgen_build(&g, &o)) {
    fputs("gen_commands: out of memory\n", stderr);
    return 1;
  }
  FILE *out = strcmp(output, "-") ? fopen(output, "w") : stdout;
  if (!out) {
    perror(output);
    return 1;
  }
  model_buf_t b = MODEL_BUF_INIT;
  bool ok = true;
  for (size_t i = 0; i < g.n && ok; i++) {
    cmdgen_render(&g, &g.ev[i], &b);
    if (b.len >= 1 << 16 || i + 1 == g.n) {
      ok = fwrite(b.data, 1, b.len, out) == b.len;
      model_buf_clear(&b);
    }
  }
  ok = (out == stdout ? fflush(out) == 0 : fclose(out) == 0) && ok;
  if (!ok) perror(output);
  fprintf(stderr, "gen: lines=%zu valid=%zu duplicates=%zu invalid=%zu\n", g.n, g.valid, g.duplicates, g.invalid);
  model_buf_destroy(&b);
  cmdgen_destroy(&g);
  return ok ? 0 : 1;
}
