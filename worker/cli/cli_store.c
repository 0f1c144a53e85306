/* Whether a command has a store to touch (cli.h). */
#include "cli.h"
#include "config/config.h"
#include "config/config_table.h"

/* store.uri's default names a local server that a laptop replay of a file
 * almost never means, and writing to it, or auditing it, would wait for a
 * server that is not there: only a store.uri given by a file, the
 * environment or --set counts. */
bool cli_store_configured(const struct config *cfg) {
  const config_prop_t *p = config_prop_find("store", "uri");
  return p && cfg->origins[p - config_props].kind != CONFIG_ORIGIN_DEFAULT;
}
