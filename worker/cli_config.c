/* aggregator config check|show|describe (SPEC 6). */
#include <stdio.h>
#include <string.h>

#include <mongoc/mongoc.h>

#include "cli.h"
#include "config.h"

int cli_config(const cli_options_t *o) {
  if (!strcmp(o->action, "describe")) {
    config_describe(stdout);
    return fflush(stdout) || ferror(stdout) ? 1 : 0;
  }
  /* Validating store.uri parses it with libmongoc, whose default log handler
   * would print its own lines next to ours; the error we print says it all. */
  mongoc_log_set_handler(NULL, NULL);
  config_t *cfg = config_new();
  if (!cfg) return 1;
  config_error_t err;
  if (!config_load(cfg, o->config_path, o->sets, o->nsets, &err)) {
    fprintf(stderr, "aggregator: %s\n", err.message);
    config_destroy(cfg);
    return 2;
  }
  if (!strcmp(o->action, "check"))
    printf("configuration OK\n");
  else
    config_show(cfg, stdout);
  config_destroy(cfg);
  return fflush(stdout) || ferror(stdout) ? 1 : 0;
}
