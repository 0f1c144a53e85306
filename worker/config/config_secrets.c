/* Which values of a configuration are secrets (config_secrets.h). */
#include "config_secrets.h"

#include <string.h>

#include "base/redact.h"

bool config_prop_is_secret(const config_prop_t *p, const config_t *cfg) {
  return (p->flags & CONFIG_SECRET) ||
         (p->type == CONFIG_TYPE_STRING && (cfg->from_file & (UINT32_C(1) << (p - config_props))));
}

bool config_prop_is_uri(const config_prop_t *p) { return !strcmp(p->type_name, "uri"); }

bool config_rdkafka_is_secret(const config_kv_t *kv) {
  return kv->from_file || redact_rdkafka_property_is_secret(kv->name);
}

void config_collect_secrets(const config_t *cfg, redact_set_t *set) {
  for (size_t i = 0; i < config_props_count; i++) {
    const config_prop_t *p = &config_props[i];
    if (!config_prop_is_secret(p, cfg)) continue;
    const char *v = *(char *const *)((const char *)cfg + p->offset);
    if (!v) continue;
    if (config_prop_is_uri(p)) redact_set_add_uri(set, v);
    if (!config_prop_is_uri(p) || (cfg->from_file & (UINT32_C(1) << i))) redact_set_add(set, v);
  }
  for (size_t i = 0; i < cfg->rdkafka_count; i++)
    if (config_rdkafka_is_secret(&cfg->rdkafka[i])) redact_set_add(set, cfg->rdkafka[i].value);
}
