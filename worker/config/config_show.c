/* Presenting a configuration: `config show` (every value, secrets masked,
 * optionally where each came from) and `config describe` (every key of the
 * table). Which values are secrets is config_secrets.h's. */
#include "config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "config_secrets.h"
#include "config_table.h"
#include "base/cpus.h"
#include "base/redact.h"

/* ---- show ---------------------------------------------------------------- */

static bool has_control(const char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 || *s == 0x7f) return true;
  return false;
}

void config_origin_format(const config_t *cfg, const config_origin_t *o, model_buf_t *out) {
  switch (o->kind) {
  case CONFIG_ORIGIN_DEFAULT: model_buf_puts(out, "default"); break;
  case CONFIG_ORIGIN_FILE: model_buf_printf(out, "%s:%d", cfg->source_file ? cfg->source_file : "?", o->line); break;
  case CONFIG_ORIGIN_ENV: model_buf_printf(out, "environment %s", o->env); break;
  case CONFIG_ORIGIN_SET: model_buf_puts(out, "--set"); break;
  }
  /* The path of a secret's file is not the secret: it says where to look. */
  if (o->value_file) model_buf_printf(out, ", read from %s", o->value_file);
}

/* "# origin: ..." above a key. A file name or a variable's name may hold
 * any byte; a control character would end the comment and start a line
 * of configuration, so each is shown as '?'. */
static void origin_comment(const config_t *cfg, const config_origin_t *o, model_buf_t *b) {
  model_buf_t t = MODEL_BUF_INIT;
  config_origin_format(cfg, o, &t);
  model_buf_puts(b, "# origin: ");
  for (size_t i = 0; i < t.len; i++)
    model_buf_putc(b, (unsigned char)t.data[i] < 0x20 || t.data[i] == 0x7f ? '?' : t.data[i]);
  model_buf_putc(b, '\n');
  model_buf_destroy(&t);
}

/* A value read through key_file is shown as "key_file = PATH": loading the
 * output back reads the same file, and the path, unlike the value, is no
 * secret. Returns false when the value was not read from a file. */
static bool show_value_file(const char *key, const char *path, model_buf_t *b) {
  if (!path) return false;
  if (has_control(path)) /* a line break would end the value and start another line */
    model_buf_printf(b, "# %s_file: a file name holding control characters, not shown\n", key);
  else
    model_buf_printf(b, "%s_file = %s\n", key, path);
  return true;
}

static void show(const config_t *cfg, bool origins, FILE *out) {
  model_buf_t b = MODEL_BUF_INIT;
  model_buf_puts(&b, "# Effective configuration: defaults < file < environment < --set.\n"
                     "# Secrets are shown as *** (a value read from a file as key_file = PATH).\n");
  if (cfg->source_file) model_buf_printf(&b, "# file: %s\n", cfg->source_file);
  for (size_t s = 0; s < config_sections_count; s++) {
    const char *section = config_sections[s].name;
    model_buf_printf(&b, "\n[%s]\n", section);
    for (size_t i = 0; i < config_props_count; i++) {
      const config_prop_t *p = &config_props[i];
      if (strcmp(p->section, section)) continue;
      if (origins) origin_comment(cfg, &cfg->origins[i], &b);
      if (show_value_file(p->key, cfg->origins[i].value_file, &b)) continue;
      model_buf_printf(&b, "%s =", p->key);
      model_buf_t v = MODEL_BUF_INIT;
      config_prop_format(p, cfg, &v);
      if (v.len) {
        model_buf_putc(&b, ' ');
        if (!config_prop_is_secret(p, cfg))
          model_buf_append(&b, v.data, v.len);
        else if (config_prop_is_uri(p))
          redact_uri(v.data, &b);
        else
          model_buf_puts(&b, REDACT_MASK);
        explicit_bzero(v.data, v.len);
      }
      model_buf_destroy(&v);
      model_buf_putc(&b, '\n');
      /* What 0 resolves to where this runs (a container, taskset). */
      if (p->offset == offsetof(config_t, replay_threads) && cfg->replay_threads == 0)
        model_buf_printf(&b, "# threads = 0: %zu here, one per CPU this process may use\n", cpus_available());
    }
    if (strcmp(section, "kafka")) continue;
    for (size_t i = 0; i < cfg->rdkafka_count; i++) {
      const config_kv_t *kv = &cfg->rdkafka[i];
      if (origins) origin_comment(cfg, &kv->origin, &b);
      char key[300];
      snprintf(key, sizeof key, "rdkafka.%s", kv->name);
      if (show_value_file(key, kv->origin.value_file, &b)) continue;
      if (config_rdkafka_is_secret(kv))
        model_buf_printf(&b, "rdkafka.%s = %s\n", kv->name, REDACT_MASK);
      else if (has_control(kv->value)) /* e.g. a PEM read from a file: not representable in INI */
        model_buf_printf(&b, "# rdkafka.%s: multi-line value of %zu bytes not shown\n", kv->name, strlen(kv->value));
      else
        model_buf_printf(&b, "rdkafka.%s = %s\n", kv->name, kv->value);
    }
  }
  fwrite(b.data, 1, b.len, out);
  model_buf_destroy(&b);
}

void config_show(const config_t *cfg, FILE *out) { show(cfg, false, out); }
void config_show_origin(const config_t *cfg, FILE *out) { show(cfg, true, out); }

/* ---- describe ------------------------------------------------------------ */

const char config_rdkafka_doc[] =
    "Any librdkafka property (e.g. `rdkafka.security.protocol = SASL_SSL`), passed to the clients that use it: "
    "a consumer property (C in librdkafka's CONFIGURATION.md) to the `run` and `replay` consumers, a producer "
    "property (P) to the dead-letter and change-event producers, any other to all of them; validated by librdkafka when the "
    "configuration is loaded. "
    "bootstrap.servers, group.id, enable.auto.commit, enable.auto.offset.store and allow.auto.create.topics "
    "(topics are never auto-created) are set by the worker and refused here. socket.connection.setup.timeout.ms "
    "(30 s) also bounds how long `run` and `replay` wait at start for a broker to confirm that their topics exist. Values of properties named *password*, *secret*, ssl.key.pem and sasl.oauthbearer.config "
    "are redacted by `config show`.";

void config_describe(FILE *out) {
  model_buf_t b = MODEL_BUF_INIT;
  model_buf_puts(&b, "Configuration keys (docs/CONFIG.md has the full reference).\n"
                     "Precedence, lowest first: defaults, the -c file, AGGREGATOR_<SECTION>_<KEY>, --set.\n"
                     "Every key also accepts <key>_file = PATH: the value is read from that file.\n");
  for (size_t s = 0; s < config_sections_count; s++) {
    const char *section = config_sections[s].name;
    model_buf_printf(&b, "\n[%s] %s\n", section, config_sections[s].doc);
    for (size_t i = 0; i < config_props_count; i++) {
      const config_prop_t *p = &config_props[i];
      if (strcmp(p->section, section)) continue;
      char env[128];
      config_prop_env_name(p, env, sizeof env);
      model_buf_printf(&b, "\n  %s.%s = %s\n      %s, ", p->section, p->key, *p->def ? p->def : "(empty)",
                       p->type_name);
      config_prop_format_range(p, &b);
      model_buf_printf(&b, "; %s%s; env %s\n      %s\n", p->flags & CONFIG_LIVE ? "live" : "restart",
                       p->flags & CONFIG_SECRET ? "; secret" : "", env, p->doc);
    }
    if (!strcmp(section, "kafka"))
      model_buf_printf(&b,
                       "\n  kafka.rdkafka.<property> = (librdkafka default)\n"
                       "      string, per librdkafka; restart; env AGGREGATOR_KAFKA_RDKAFKA_<PROPERTY> "
                       "(dots as underscores)\n      %s\n",
                       config_rdkafka_doc);
  }
  fwrite(b.data, 1, b.len, out);
  model_buf_destroy(&b);
}

