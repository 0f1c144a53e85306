/* aggregator config check|show|describe, and the configuration every
 * command loads (cli_load_config) and what it says of the store. */
#include <stdio.h>
#include <string.h>

#include <mongoc/mongoc.h>

#include "cli.h"
#include "config/config.h"
#include "config/config_secrets.h"
#include "config/config_table.h"
#include "config_clients.h"
#include "config_connect.h"
#include "base/redact.h"

config_t *cli_load_config(const cli_options_t *o, int *rc) {
  /* Validating store.uri parses it with libmongoc, whose default log handler
   * would print its own lines next to ours; the error we print says it all.
   * (The store installs its own handler when it starts.) */
  mongoc_log_set_handler(NULL, NULL);
  config_t *cfg = config_new();
  config_error_t err;
  if (!config_load(cfg, o->config_path, o->sets, o->nsets, &err)) {
    /* Every error, one line each (config_load scrubbed them). */
    for (size_t i = 0; config_error_at(&err, i); i++) fprintf(stderr, "aggregator: %s\n", config_error_at(&err, i));
    if (err.count > CONFIG_ERRORS_MAX)
      fprintf(stderr, "aggregator: %zu more configuration errors not shown\n", err.count - CONFIG_ERRORS_MAX);
    config_destroy(cfg);
    *rc = 2;
    return NULL;
  }
  /* Before any log line: the variable that was meant to set a key and set
   * none explains the value the key still has. */
  for (size_t i = 0; i < cfg->warnings_count; i++) fprintf(stderr, "aggregator: warning: %s\n", cfg->warnings[i]);
  /* From here on libraries see the secrets: every log line is scrubbed of
   * them (log.h). */
  config_collect_secrets(cfg, redact_global());
  char why[1024];
  if (!config_clients_check(cfg, why, sizeof why)) {
    redact_set_scrub_str(redact_global(), why, sizeof why); /* librdkafka may quote a value */
    fprintf(stderr, "aggregator: %s\n", why);
    config_destroy(cfg);
    *rc = 2;
    return NULL;
  }
  return cfg;
}

/* store.uri's default names a local server that a laptop replay of a file
 * almost never means, and writing to it, or auditing it, would wait for a
 * server that is not there: only a store.uri given by a file, the
 * environment or --set counts. */
bool cli_store_configured(const struct config *cfg) {
  const config_prop_t *p = config_prop_find("store", "uri");
  return p && cfg->origins[p - config_props].kind != CONFIG_ORIGIN_DEFAULT;
}

int cli_config(const cli_options_t *o) {
  if (!strcmp(o->action, "describe")) {
    config_describe(stdout);
    return fflush(stdout) || ferror(stdout) ? 1 : 0;
  }
  int rc;
  config_t *cfg = cli_load_config(o, &rc);
  if (!cfg) return rc;
  int rc_check = 0;
  if (!strcmp(o->action, "check") && o->connect) {
    char reached[2048];
    if (config_connect_check(cfg, clock_system(), stderr, reached, sizeof reached))
      printf("configuration OK, reached %s\n", reached);
    else
      rc_check = 1;
  } else if (!strcmp(o->action, "check"))
    printf("configuration OK\n");
  else if (o->origin)
    config_show_origin(cfg, stdout);
  else
    config_show(cfg, stdout);
  config_destroy(cfg);
  return fflush(stdout) || ferror(stdout) ? 1 : rc_check;
}
