/* Writes the configuration reference (docs/CONFIG.md) from the property
 * table: `gen_config_doc docs/CONFIG.md`, or to stdout without an argument.
 * unit.test_config runs it and fails when the committed file differs.
 *
 * The prose around the tables lives here, with the generator, rather than
 * in the worker: the binary only needs the table (config_table.c) and the
 * librdkafka defaults (kafka.c) that both it and this document are built
 * from. */
#include <stdio.h>
#include <string.h>

#include "buf.h"
#include "gen_doc.h"
#include "config/config_table.h"
#include "source/kafka.h"

static const char markdown_intro[] =
    "# Configuration reference\n"
    "\n"
    "<!-- Generated from worker/config/config_table.c by `gen_config_doc docs/CONFIG.md` (a tool in the build\n"
    "     directory); unit.test_config fails when this file is stale. Do not edit by hand. -->\n"
    "\n"
    "The worker reads one INI file (`-c FILE`), then the environment, then `--set` options. `aggregator config\n"
    "check` validates all of it and exits 0 or 2, `aggregator config show` prints the effective configuration\n"
    "with secrets redacted, and `aggregator config describe` prints the key list below. Example files:\n"
    "`config/development.ini` (the local stack), `config/production.ini` (a template with TLS, SASL and\n"
    "secrets in files) and `config/backfill.ini` (replays).\n"
    "\n"
    "## Sources and precedence\n"
    "\n"
    "Lowest first; a later source overrides an earlier one key by key:\n"
    "\n"
    "1. built-in defaults (the tables below);\n"
    "2. the file given with `-c` (no file is read without `-c`; a missing file is an error);\n"
    "3. environment variables `AGGREGATOR_<SECTION>_<KEY>`: upper case, dots as underscores, e.g.\n"
    "   `AGGREGATOR_BATCH_MAX_COMMANDS=20000`, `AGGREGATOR_STORE_URI_FILE=/run/secrets/mongodb-uri`,\n"
    "   `AGGREGATOR_KAFKA_RDKAFKA_SASL_PASSWORD_FILE=/run/secrets/kafka-password`. For `rdkafka.*` every\n"
    "   underscore becomes a dot, so the few librdkafka properties whose names contain an underscore\n"
    "   (`log_level`, `enabled_events`) can only be set in the file or with `--set`. A variable set to the\n"
    "   empty string sets the empty value. Spaces and tabs around a value are removed, as in the file and\n"
    "   with `--set` (a value that must keep them goes in a `_file`). A variable whose `<SECTION>` is not a\n"
    "   section name sets nothing and warns at start, naming the closest key's variable (a wrapper may use\n"
    "   the prefix too, so it is no error); the variables Kubernetes injects for a Service named\n"
    "   `aggregator` (`AGGREGATOR_SERVICE_HOST`, `AGGREGATOR_PORT_9464_TCP` and the like) pass silently.\n"
    "   Within a section, an unknown name is an error. Avoid naming a Service `aggregator-<section>`, or set\n"
    "   `enableServiceLinks: false`;\n"
    "4. `--set section.key=value` options, in order (`--set kafka.rdkafka.debug=cgrp`).\n"
    "\n"
    "A key may be set at most once per source: the same key twice in the file (including `key` and\n"
    "`key_file`), or twice with `--set`, is an error.\n"
    "\n"
    "## File syntax\n"
    "\n"
    "```ini\n"
    "# a comment\n"
    "[batch]\n"
    "max_commands = 20000\n"
    "; also a comment\n"
    "[kafka]\n"
    "rdkafka.security.protocol = SASL_SSL\n"
    "```\n"
    "\n"
    "- `[section]` alone on its line starts a section; the same section may appear more than once. Every key\n"
    "  belongs to a section.\n"
    "- `key = value`: split at the first `=`; spaces and tabs around the key and the value are removed.\n"
    "- Lines whose first non-blank character is `#` or `;` are comments. There are **no inline comments**:\n"
    "  `linger_ms = 5 # ms` is the value `5 # ms` (an error for a number). Values may contain `#`, `;` and `=`.\n"
    "- Values are literal: no quotes, escapes or continuation lines. `listen = \"\"` is the two-character value\n"
    "  `\"\"`; write `listen =` for the empty value.\n"
    "- Names are case-sensitive (lower case). CRLF line ends and a UTF-8 byte order mark are accepted.\n"
    "- Sizes (`type` size) are bytes, or a number followed by `K`/`KiB`, `M`/`MiB` or `G`/`GiB` (powers of\n"
    "  1024), with no space: `64MiB`.\n"
    "\n"
    "## Secrets\n"
    "\n"
    "Every key `k` can be given as `k_file = PATH` instead: the value is the content of that file with its\n"
    "trailing newlines removed (at most 1 MiB, no NUL bytes), for secrets mounted by an orchestrator:\n"
    "`uri_file = /run/secrets/mongodb-uri`, `rdkafka.sasl.password_file = /run/secrets/kafka-password`. The\n"
    "file is read only if that source wins (an environment variable or `--set` overriding the key means the\n"
    "file's path need not exist), and its content is validated like any other value. An unreadable file is an\n"
    "error.\n"
    "\n"
    "Secrets are: the password of `store.uri` and the values of its options named like *password*,\n"
    "*secret*, *token* or `authMechanismProperties`; librdkafka properties named *password*, *secret*,\n"
    "`ssl.key.pem` and `sasl.oauthbearer.config`; and every string value read through a `_file` key.\n"
    "`config show` prints `***` for them (`store.uri` keeps its user, hosts and other options), error\n"
    "messages never repeat them, and every log line, metric label and error that comes from librdkafka,\n"
    "libmongoc or a server is scrubbed of them (as written and percent-decoded) before it is printed.\n"
    "Special characters in a URI password (`@ : / %` and spaces) must be percent-encoded (`p@ss` is\n"
    "`p%40ss`); an unescaped `@` is refused, since the driver would take the rest of the password for a host\n"
    "name and print it in every connection error. So is an `@` after the hosts with none before them (in the\n"
    "database name or an option value: `appname=a%40b` is the same to the driver as `appname=a@b`).\n"
    "\n"
    "## librdkafka properties\n"
    "\n"
    "`[kafka]` keys named `rdkafka.<property>` pass straight to librdkafka, each to the clients that know it:\n"
    "a consumer-only property (C in librdkafka's CONFIGURATION.md, e.g. `fetch.wait.max.ms`) to the `run` and\n"
    "`replay` consumers alone, a producer-only one (P, e.g. `linger.ms`) to the dead-letter and change-event\n"
    "producers alone, and any other (`security.protocol`, `sasl.*`, `client.rack`) to every client, so that\n"
    "no client warns about a property meant for another. Which clients know a property is read from the\n"
    "linked librdkafka, so it stays right when the package manager upgrades it. The properties are validated\n"
    "by librdkafka when the configuration is loaded, and its message is reported like any other error:\n"
    "`prod.ini:12: kafka.rdkafka.socket.timeout.ms: librdkafka: Invalid value for configuration property\n"
    "\"socket.timeout.ms\"`. `bootstrap.servers`/`metadata.broker.list` (use `kafka.brokers`), `group.id`\n"
    "(use `kafka.group`), `enable.auto.commit`/`auto.commit.enable`/`enable.auto.offset.store` (offsets are\n"
    "committed only once their commands are durable) and `allow.auto.create.topics` (topics are never\n"
    "auto-created) are refused. Some problems (a missing CA file, for example) are only found by librdkafka\n"
    "when the client starts.\n"
    "\n"
    "Where the worker's defaults differ from librdkafka's (each is overridden by a `rdkafka.*` key; the\n"
    "reasons and measurements are in docs/BENCHMARKS.md):\n"
    "\n"
    "| client | property | default here | why |\n"
    "|---|---|---|---|\n";

/* After the table of our librdkafka defaults (kafka_defaults). */
static const char markdown_after_kafka_defaults[] =
    "\n"
    "## Reloading\n"
    "\n"
    "On SIGHUP the worker reloads the file (with the same environment and `--set` options). Keys marked\n"
    "*live* below (`batch.*`, `cache.*`, `log.level`) take effect at once; a change to any other key is logged\n"
    "as needing a restart and is not applied. A reload that fails validation changes nothing.\n"
    "\n"
    "## Errors\n"
    "\n"
    "Problems are reported on stderr in one line, and `aggregator` exits with status 2:\n"
    "\n"
    "```\n"
    "config/dev.ini:7: batch.max_comands: unknown key (did you mean batch.max_commands?)\n"
    "config/dev.ini:3: [bacth]: unknown section (did you mean [batch]?)\n"
    "config/dev.ini:9: batch.linger_ms: '70000' is out of range 0..60000\n"
    "environment AGGREGATOR_LOG_LEVEL: log.level: 'verbose' is not one of error, warn, info, debug\n"
    "--set metrics.listen: '9464' is not host:port (e.g. 127.0.0.1:9464, [::1]:9464; port 0..65535, 0 for any "
    "free port) or empty\n"
    "config/prod.ini:14: store.uri_file: cannot read /run/secrets/mongodb-uri: No such file or directory\n"
    "```\n"
    "\n"
    "## Keys\n";

static void describe_markdown(FILE *out) {
  model_buf_t b = MODEL_BUF_INIT;
  model_buf_puts(&b, markdown_intro);
  for (size_t i = 0; i < kafka_defaults_count; i++)
    model_buf_printf(&b, "| %s%s | `%s` | `%s` | %s |\n", kafka_client_name(kafka_defaults[i].client),
                     kafka_defaults[i].classic_only ? ", `kafka.group_protocol = classic`" : "",
                     kafka_defaults[i].name, kafka_defaults[i].value, kafka_defaults[i].why);
  model_buf_puts(&b, markdown_after_kafka_defaults);
  for (size_t s = 0; s < config_sections_count; s++) {
    const char *section = config_sections[s].name;
    model_buf_printf(&b, "\n### [%s]\n\n%s\n\n", section, config_sections[s].doc);
    model_buf_puts(&b, "| key | type | default | allowed | reload | meaning |\n|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < config_props_count; i++) {
      const config_prop_t *p = &config_props[i];
      if (strcmp(p->section, section)) continue;
      model_buf_printf(&b, "| `%s.%s` | %s | ", p->section, p->key, p->type_name);
      if (*p->def)
        model_buf_printf(&b, "`%s`", p->def);
      else
        model_buf_puts(&b, "(empty)");
      model_buf_puts(&b, " | ");
      model_buf_t r = MODEL_BUF_INIT;
      config_prop_format_range(p, &r);
      gen_doc_cell(&b, r.data);
      model_buf_destroy(&r);
      model_buf_printf(&b, " | %s | ", p->flags & CONFIG_LIVE ? "live" : "restart");
      gen_doc_cell(&b, p->doc);
      model_buf_puts(&b, " |\n");
    }
    if (!strcmp(section, "kafka")) {
      model_buf_puts(&b, "| `kafka.rdkafka.<property>` | string | (librdkafka's) | per librdkafka | restart | ");
      gen_doc_cell(&b, config_rdkafka_doc);
      model_buf_puts(&b, " |\n");
    }
  }
  fwrite(b.data, 1, b.len, out);
  model_buf_destroy(&b);
}

int main(int argc, char **argv) { return gen_doc_main(argc, argv, "gen_config_doc", describe_markdown); }
