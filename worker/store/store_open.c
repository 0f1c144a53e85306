/* A store as the configuration describes it (store.h). */
#include "store.h"

#include "config/config.h"

store_t *store_open(const config_t *cfg, sink_error_t *err) {
  store_t *store = store_new(cfg->store_uri, cfg->store_database, cfg->store_collection, cfg->store_write_concern, err);
  if (store && !store_set_shard_key(store, cfg->store_shard_key, err)) {
    store_destroy(store);
    return NULL;
  }
  return store;
}
