/* aggregator: command line entry point (SPEC.md section 6). */
#include <stdio.h>
#include <string.h>

static const char usage[] =
    "usage:\n"
    "  aggregator run     [-c FILE] [--set section.key=value ...]\n"
    "  aggregator replay  [-c FILE] [--set ...] [--from beginning|RFC3339] [--until end|RFC3339]\n"
    "                     [--input FILE|-] [--output FILE|-] [--rejects FILE]\n"
    "  aggregator config  check|show|describe [-c FILE] [--set ...]\n"
    "  aggregator --version | --help\n";

int main(int argc, char **argv) {
  if (argc < 2) {
    fputs(usage, stderr);
    return 2;
  }
  if (!strcmp(argv[1], "--version")) {
    printf("aggregator %s\n", AGG_VERSION);
    return 0;
  }
  if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
    fputs(usage, stdout);
    return 0;
  }
  fprintf(stderr, "aggregator: unknown command '%s'\n%s", argv[1], usage);
  return 2;
}
