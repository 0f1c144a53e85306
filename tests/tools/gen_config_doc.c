/* Writes the configuration reference (docs/CONFIG.md) from the property
 * table: `gen_config_doc docs/CONFIG.md`, or to stdout without an argument.
 * unit.test_config fails when the committed file differs. */
#include <stdio.h>

#include "config.h"

int main(int argc, char **argv) {
  if (argc > 2) {
    fprintf(stderr, "usage: gen_config_doc [OUTPUT]\n");
    return 2;
  }
  FILE *out = argc == 2 ? fopen(argv[1], "w") : stdout;
  if (!out) {
    perror(argv[1]);
    return 1;
  }
  config_describe_markdown(out);
  if (fflush(out) || ferror(out) || (out != stdout && fclose(out))) {
    perror("gen_config_doc");
    return 1;
  }
  return 0;
}
