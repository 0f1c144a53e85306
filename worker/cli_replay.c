/* Placeholder until the replay subcommand lands; replaced by its module. */
#include <stdio.h>

#include "cli.h"

int cli_replay(const cli_options_t *o) {
  (void)o;
  fputs("aggregator: 'replay' is not built yet\n", stderr);
  return 1;
}
