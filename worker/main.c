/* aggregator: command line entry point. Parses the command line only;
 * each subcommand is in cli_<name>.c. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage:\n"
    "  aggregator run     [-c FILE] [--set section.key=value ...]\n"
    "  aggregator replay  [-c FILE] [--set ...] [--from beginning|RFC3339] [--until end|RFC3339]\n"
    "                     [--input FILE|-] [--output FILE|-] [--rejects FILE]\n"
    "  aggregator verify  [-c FILE] [--set ...] [--from beginning|RFC3339] [--until end|RFC3339]\n"
    "                     [--input FILE|-] [--repair]\n"
    "  aggregator config  check|show|describe [-c FILE] [--set ...]\n"
    "  aggregator --version | --help\n"
    "\n"
    "Exit status: 0 success, 1 runtime failure, 2 usage or configuration error,\n"
    "3 drift found (verify).\n";

static int usage_error(const char *fmt, const char *arg) {
  fputs("aggregator: ", stderr);
  fprintf(stderr, fmt, arg);
  fputs("\n", stderr);
  fputs(usage, stderr);
  return 2;
}

int main(int argc, char **argv) {
  if (argc < 2) return usage_error("%s", "missing command");
  const char *cmd = argv[1];
  if (!strcmp(cmd, "--version")) {
    printf("aggregator %s\n", AGG_VERSION);
    return 0;
  }
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
    fputs(usage, stdout);
    return 0;
  }
  bool is_run = !strcmp(cmd, "run"), is_replay = !strcmp(cmd, "replay"), is_config = !strcmp(cmd, "config"),
       is_verify = !strcmp(cmd, "verify");
  if (!is_run && !is_replay && !is_config && !is_verify) return usage_error("unknown command '%s'", cmd);

  /* --set values point into argv; only the array is ours. */
  char *sets[argc];
  cli_options_t o = {.sets = sets};
  int i = 2;
  if (is_config) {
    if (i >= argc) return usage_error("%s", "config needs check, show or describe");
    o.action = argv[i++];
    if (strcmp(o.action, "check") && strcmp(o.action, "show") && strcmp(o.action, "describe"))
      return usage_error("unknown config action '%s' (expected check, show or describe)", o.action);
  }
  for (; i < argc; i++) {
    const char *a = argv[i];
    const char **slot = NULL;
    if (!strcmp(a, "-c") || !strcmp(a, "--config")) slot = &o.config_path;
    else if ((is_replay || is_verify) && !strcmp(a, "--from")) slot = &o.from;
    else if ((is_replay || is_verify) && !strcmp(a, "--until")) slot = &o.until;
    else if ((is_replay || is_verify) && !strcmp(a, "--input")) slot = &o.input;
    else if (is_replay && !strcmp(a, "--output")) slot = &o.output;
    else if (is_replay && !strcmp(a, "--rejects")) slot = &o.rejects;
    else if (is_verify && !strcmp(a, "--repair")) {
      o.repair = true;
      continue;
    } else if (!strcmp(a, "--set")) {
      if (i + 1 >= argc) return usage_error("%s needs a value", a);
      o.sets[o.nsets++] = argv[++i];
      continue;
    } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
      fputs(usage, stdout);
      return 0;
    } else {
      return usage_error("unknown option '%s'", a);
    }
    if (i + 1 >= argc) return usage_error("%s needs a value", a);
    *slot = argv[++i];
  }
  if (is_verify) return cli_verify(&o);
  return is_run ? cli_run(&o) : is_replay ? cli_replay(&o) : cli_config(&o);
}
