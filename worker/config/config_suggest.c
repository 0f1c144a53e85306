/* "Did you mean": the known name closest to a misspelt one
 * (config_suggest.h). */
#include "config_suggest.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "config_table.h"

/* How far a name may be from a known one and still be meant as it: a third
 * of its length, at least 2 edits. */
static size_t close_enough(const char *s) {
  size_t t = strlen(s) / 3;
  return t > 2 ? t : 2;
}

const char *config_suggest_section(const char *section) {
  const char *best = NULL;
  size_t best_d = close_enough(section) + 1;
  for (size_t i = 0; i < config_sections_count; i++) {
    size_t d = config_edit_distance(section, config_sections[i].name);
    if (d < best_d) best_d = d, best = config_sections[i].name;
  }
  return best;
}

/* A key that exists in another section counts as one edit away. */
bool config_suggest_key(const char *section, const char *key, char *out, size_t out_size) {
  char full[512];
  snprintf(full, sizeof full, "%s.%s", section, key);
  const config_prop_t *best = NULL;
  size_t best_d = close_enough(key) + 1;
  for (size_t i = 0; i < config_props_count; i++) {
    const config_prop_t *p = &config_props[i];
    char cand[128];
    snprintf(cand, sizeof cand, "%s.%s", p->section, p->key);
    size_t d = config_edit_distance(full, cand);
    size_t dk = config_edit_distance(key, p->key);
    if (dk != SIZE_MAX && dk + (strcmp(section, p->section) != 0) < d) d = dk + (strcmp(section, p->section) != 0);
    if (d < best_d) best_d = d, best = p;
  }
  /* rdkafka.<property> misspelt, or put in the wrong section. */
  const char *dot = strchr(key, '.');
  if (dot && dot[1]) {
    char prefix[64];
    snprintf(prefix, sizeof prefix, "%.*s", (int)(dot - key), key);
    if (config_edit_distance(prefix, "rdkafka") <= 2 && (strcmp(prefix, "rdkafka") || strcmp(section, "kafka"))) {
      snprintf(out, out_size, "kafka.rdkafka.%s", dot + 1);
      return true;
    }
  }
  if (!best) return false;
  snprintf(out, out_size, "%s.%s", best->section, best->key);
  return true;
}

void config_suggest_spell(bool env, const char *name, bool from_file, char *out, size_t out_size) {
  if (!env) {
    snprintf(out, out_size, "%s%s", name, from_file ? "_file" : "");
    return;
  }
  int n = snprintf(out, out_size, "AGGREGATOR_%s%s", name, from_file ? "_FILE" : "");
  for (int i = 0; i < n && (size_t)i < out_size; i++)
    out[i] = out[i] == '.' ? '_' : (char)toupper((unsigned char)out[i]);
}

bool config_suggest_env(const char *name, size_t n, char *out, size_t out_size) {
  char upper[256];
  if (n >= sizeof upper) return false;
  for (size_t i = 0; i < n; i++) upper[i] = (char)toupper((unsigned char)name[i]);
  upper[n] = '\0';
  bool file = n > 5 && !strcmp(upper + n - 5, "_FILE");
  if (file) upper[n - 5] = '\0';
  const config_prop_t *best = NULL;
  size_t best_d = close_enough(upper + 11) + 1;
  for (size_t i = 0; i < config_props_count; i++) {
    char cand[128];
    config_prop_env_name(&config_props[i], cand, sizeof cand);
    size_t d = config_edit_distance(upper, cand);
    if (d < best_d) best_d = d, best = &config_props[i];
  }
  if (best) {
    char cand[128];
    config_prop_env_name(best, cand, sizeof cand);
    snprintf(out, out_size, "%s%s", cand, file ? "_FILE" : "");
    return true;
  }
  /* AGGREGATOR_KAFAK_RDKAFKA_...: the pass-through with its section misspelt. */
  const char *rk = strstr(upper, "_RDKAFKA_");
  if (rk && rk[9]) {
    char section[64];
    snprintf(section, sizeof section, "%.*s", (int)(rk - upper), upper);
    if (config_edit_distance(section, "AGGREGATOR_KAFKA") <= 2) {
      snprintf(out, out_size, "AGGREGATOR_KAFKA%s%s", rk, file ? "_FILE" : "");
      return true;
    }
  }
  return false;
}
