/* aggregator: command line entry point. The command table (cli_table.h)
 * parses the command line; each subcommand is in cli_<name>.c. */
#include <stdio.h>

#include "cli.h"
#include "cli_help.h"
#include "cli_table.h"
#include "cli_version.h"

int main(int argc, char **argv) {
  /* --set values point into argv; only the array is ours. */
  char *sets[argc > 0 ? argc : 1];
  cli_options_t o = {.sets = sets};
  const cli_cmd_t *cmd;
  cli_usage_error_t err;
  /* No command: the program's help, where a usage error goes, and the exit
   * status of one (the caller asked for nothing it can have). */
  if (argc < 2) {
    cli_help(NULL, stderr);
    return 2;
  }
  switch (cli_parse(argc, argv, &o, &cmd, &err)) {
  case CLI_PARSE_HELP:
    cli_help(cmd, stdout);
    return fflush(stdout) || ferror(stdout) ? 1 : 0;
  case CLI_PARSE_VERSION:
    cli_version(stdout);
    return fflush(stdout) || ferror(stdout) ? 1 : 0;
  case CLI_PARSE_USAGE: {
    /* One line: what is wrong, and where the help for it is. */
    char hint[128];
    cli_help_hint(cmd, hint, sizeof hint);
    fprintf(stderr, "aggregator: %s (%s)\n", err.message, hint);
    return 2;
  }
  case CLI_PARSE_RUN: break;
  }
  return cmd->main(&o);
}
