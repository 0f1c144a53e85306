/* Placeholder until the run subcommand lands; replaced by its module. */
#include <stdio.h>

#include "cli.h"

int cli_run(const cli_options_t *o) {
  (void)o;
  fputs("aggregator: 'run' is not built yet\n", stderr);
  return 1;
}
