/* The help texts, written from the command table (cli_table.h): the
 * program's (`aggregator --help`, `aggregator help`) and each command's
 * (`aggregator help COMMAND`, `COMMAND --help`). */
#ifndef CLI_HELP_H
#define CLI_HELP_H

#include <stdio.h>

#include "cli_table.h"

/* cmd NULL: the program's help; otherwise that command's. */
void cli_help(const cli_cmd_t *cmd, FILE *out);

/* The hint a usage error ends with: "see 'aggregator help replay'". */
void cli_help_hint(const cli_cmd_t *cmd, char *out, size_t out_size);

#endif
