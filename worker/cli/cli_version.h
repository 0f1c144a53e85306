/* `aggregator --version`: what a bug report needs to name the build. */
#ifndef CLI_VERSION_H
#define CLI_VERSION_H

#include <stdio.h>

/* One "name version" line each: the aggregator's version, the commit it was
 * built from ("unknown" when built outside git), and the versions of
 * librdkafka, libmongoc and libbson it runs with (asked of the libraries at
 * run time: a shared library upgraded after the build shows as it is). */
void cli_version(FILE *out);

#endif
