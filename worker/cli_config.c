/* Placeholder until the config subcommand lands; replaced by its module. */
#include <stdio.h>

#include "cli.h"

int cli_config(const cli_options_t *o) {
  (void)o;
  fputs("aggregator: 'config' is not built yet\n", stderr);
  return 1;
}
