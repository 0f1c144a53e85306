/* The command table and the parser that walks it. See cli_table.h. */
#include "cli_table.h"

#include <stdio.h>
#include <string.h>

#define OFF(field) offsetof(cli_options_t, field)

const cli_cmd_t cli_cmds[] = {
    {"run", CLI_RUN, "", "consume the command topics and keep the aggregates in the store up to date",
     "Joins the consumer group kafka.group, merges the commands of kafka.topics into one document per\n"
     "assignment and writes them to the store; a message's offset is committed once its command is durable.\n"
     "Rejected commands go to kafka.dlq_topic. SIGTERM or SIGINT stops it within shutdown.timeout_ms;\n"
     "SIGHUP reloads the configuration file.\n",
     cli_run},
    {"replay", CLI_REPLAY, "", "rebuild aggregates from the topics or a file, into the store or a file",
     "Reads the configured topics from --from to --until, or with --input a file of commands one per line,\n"
     "and writes the merged aggregates to the configured store, or with --output as JSON lines sorted by\n"
     "_id. It exits 0 once everything up to the end is written, with a summary line on stderr (commands\n"
     "read, applied, stale, rejected, aggregates written, seconds). It never moves the live consumer\n"
     "group's offsets. With both --input and --output it contacts no broker and no store and needs no\n"
     "configuration file. Outputs are whole or absent: --output and --rejects files are written beside\n"
     "their target and renamed into place only on success; both paths are checked before any input is\n"
     "read, and a failed or interrupted replay (SIGINT/SIGTERM: exit 1) leaves an existing file as it was.\n"
     "With log.format = json (the default) every stderr line, the summary included, is a JSON log line;\n"
     "with text the summary is the line 'replay: read=N applied=N stale=N rejected=N aggregates=N seconds=S'.\n",
     cli_replay},
    {"verify", CLI_VERIFY, "", "compare the store with the aggregates rebuilt from the topics or a file",
     "Rebuilds the aggregates in memory from the configured topics (--from, --until) or from --input, reads\n"
     "the same documents from the store and prints one JSON line per drifted document on stdout:\n"
     "{\"_id\", \"drift\", \"path\", \"detail\"}, drift being missing, store_behind, store_ahead or differs.\n"
     "The summary line goes to stderr (a JSON log line with log.format = json). Exit 0 when nothing\n"
     "drifted, 3 when something did. It never moves any group's offsets. It needs a configured store\n"
     "(store.uri by file, environment or --set; exit 2 otherwise) and connects to it before reading,\n"
     "giving up after store.connect_timeout_ms (exit 1), as every later retry does. A verify that compared\n"
     "no document exits 1 unless --allow-empty. Interrupted (SIGINT/SIGTERM) it says so and exits\n"
     "128 + the signal (130, 143), with no summary.\n",
     cli_verify},
    {"export", CLI_EXPORT, "", "copy the raw commands of the topics to a file that outlives their retention",
     "Copies the message values of the configured topics (kafka.topics) from --from to --until to --output,\n"
     "one value per line, byte for byte: `replay --input FILE` and `verify --input FILE` then give the same\n"
     "documents and rejects as reading that range from the topics. Each partition's values are in offset\n"
     "order; partitions are interleaved as the broker serves them. A value holding a newline byte (no valid\n"
     "command needs one) is not written: it is logged with its topic, partition and offset, and counted.\n"
     "A summary line goes to stderr (messages read, exported, skipped with a newline, seconds). Like replay,\n"
     "it joins no group and commits nothing. --output is required.\n",
     cli_export},
    {"config", 0, "check|show|describe", "check, show or describe the configuration",
     "Precedence, lowest first: built-in defaults, the -c file, environment variables\n"
     "AGGREGATOR_<SECTION>_<KEY> (upper case, dots as underscores), --set.\n",
     NULL},
    {"config check", CLI_CHECK, "", "validate the configuration",
     "Loads the configuration as run would and prints \"configuration OK\", or exits 2 naming every\n"
     "error on stderr, one line each: FILE:LINE (or the variable, or --set), the key and the problem.\n"
     "It reads the files that values name (TLS keys and CAs, _file secrets, TLS files in store.uri),\n"
     "checks settings that cannot work together (a SASL mechanism without its user name and password)\n"
     "and builds the Kafka clients as run would, without connecting.\n"
     "With --connect it also reaches each broker of kafka.brokers, the topics and the dead-letter\n"
     "topic (within librdkafka's socket.connection.setup.timeout.ms, 30 s by default) and the store\n"
     "(a ping, within store.connect_timeout_ms), and exits 1 with one line per thing not reached, or\n"
     "prints \"configuration OK, reached ...\".\n",
     cli_config},
    {"config show", CLI_SHOW, "", "print the effective configuration, secrets masked",
     "Prints every key with the value it takes after all sources are merged, as an INI file that loads\n"
     "back as the same configuration. A value read through a _file key is shown as that key and its\n"
     "path (password_file = /run/secrets/x); other secrets (the password and credential options of\n"
     "store.uri, librdkafka's sensitive properties) are shown as ***, which the loader refuses as a\n"
     "secret's value. replay.threads = 0 is followed by a comment with the thread count it means here.\n"
     "With --origin, a comment above each key names the source its value came from.\n",
     cli_config},
    {"config describe", CLI_DESCRIBE, "", "print every key with its type, default, range and meaning",
     "The reference docs/CONFIG.md is generated from the same table. It reads no configuration: -c and\n"
     "--set are accepted, as for check and show, and not read.\n",
     cli_config},
    {"help", 0, "[COMMAND]", "explain a command, or list them all",
     "Without a COMMAND, lists the commands and every option; with one (\"replay\", \"config show\"),\n"
     "explains it and each of its options. `COMMAND --help` prints the same.\n",
     NULL},
};
const size_t cli_cmds_count = sizeof cli_cmds / sizeof cli_cmds[0];

const cli_opt_t cli_opts[] = {
    {"--config", "-c", "FILE", CLI_OPT_VALUE, CLI_RUN | CLI_REPLAY | CLI_VERIFY | CLI_EXPORT | CLI_CONFIG_ACTIONS,
     OFF(config_path), "read the configuration from FILE (INI); at most once"},
    {"--set", NULL, "SECTION.KEY=VALUE", CLI_OPT_LIST,
     CLI_RUN | CLI_REPLAY | CLI_VERIFY | CLI_EXPORT | CLI_CONFIG_ACTIONS, 0,
     "set one key, over the file and the environment; repeatable"},
    {"--from", NULL, "beginning|TIME", CLI_OPT_VALUE, CLI_REPLAY | CLI_VERIFY | CLI_EXPORT, OFF(from),
     "start at the beginning (default), at the first message timestamped >= TIME (RFC 3339 UTC), or at "
     "committed:GROUP or offsets:P=O,..."},
    {"--until", NULL, "end|TIME", CLI_OPT_VALUE, CLI_REPLAY | CLI_VERIFY | CLI_EXPORT, OFF(until),
     "stop at the end (default: the offsets at start), before the first message timestamped >= TIME, or at "
     "committed:GROUP or offsets:P=O,..."},
    {"--input", NULL, "FILE|-", CLI_OPT_VALUE, CLI_REPLAY | CLI_VERIFY, OFF(input),
     "read commands from FILE (- for standard input), one JSON object per line, not the topics"},
    {"--output", NULL, "FILE|-", CLI_OPT_VALUE, CLI_REPLAY | CLI_EXPORT, OFF(output),
     "write to FILE (- for standard output): replay's aggregates as JSON lines, or export's values"},
    {"--rejects", NULL, "FILE|-", CLI_OPT_VALUE, CLI_REPLAY, OFF(rejects),
     "with --input: write rejected lines to FILE (- for standard output) as JSON lines {line, code, detail}"},
    {"--max-rejects", NULL, "N", CLI_OPT_VALUE, CLI_REPLAY, OFF(max_rejects),
     "stop and fail (exit 1, no output file written) once more than N commands are rejected; 0: none allowed"},
    {"--repair", NULL, NULL, CLI_OPT_FLAG, CLI_VERIFY, OFF(repair),
     "fix missing and store_behind drift: write the merge of stored and rebuilt documents"},
    {"--allow-empty", NULL, NULL, CLI_OPT_FLAG, CLI_VERIFY, OFF(allow_empty),
     "exit 0, not 1, when no document was compared (nothing, or nothing valid, was read)"},
    {"--connect", NULL, NULL, CLI_OPT_FLAG, CLI_CHECK, OFF(connect),
     "also reach each broker, the topics and the store, within bounds; exit 1 naming each failure"},
    {"--origin", NULL, NULL, CLI_OPT_FLAG, CLI_SHOW, OFF(origin),
     "comment each key with its source: default, FILE:LINE, environment VARIABLE or --set"},
};
const size_t cli_opts_count = sizeof cli_opts / sizeof cli_opts[0];

const cli_cmd_t *cli_cmd_find(const char *name) {
  for (size_t i = 0; i < cli_cmds_count; i++)
    if (!strcmp(cli_cmds[i].name, name)) return &cli_cmds[i];
  return NULL;
}

static const cli_opt_t *opt_find(const char *a) {
  for (size_t i = 0; i < cli_opts_count; i++)
    if (!strcmp(a, cli_opts[i].name) || (cli_opts[i].alias && !strcmp(a, cli_opts[i].alias))) return &cli_opts[i];
  return NULL;
}

static bool is_help(const char *a) { return !strcmp(a, "--help") || !strcmp(a, "-h"); }

static cli_parse_result_t usage(cli_usage_error_t *err, const char *fmt, const char *a, const char *b)
    __attribute__((format(printf, 2, 0)));
static cli_parse_result_t usage(cli_usage_error_t *err, const char *fmt, const char *a, const char *b) {
  snprintf(err->message, sizeof err->message, fmt, a, b);
  return CLI_PARSE_USAGE;
}

/* `help`, `help run`, `help config`, `help config show`. */
static cli_parse_result_t parse_help(int argc, char **argv, const cli_cmd_t **cmd, cli_usage_error_t *err) {
  bool flag = argc > 2 && is_help(argv[argc - 1]);
  if (flag) argc--; /* `help replay --help` is `help replay` */
  if (argc == 2) {
    if (flag) *cmd = cli_cmd_find("help"); /* `help --help`: help's own */
    return CLI_PARSE_HELP;
  }
  char name[128];
  if (argc > 4) return usage(err, "help takes one command, not '%s %s ...'", argv[2], argv[3]);
  snprintf(name, sizeof name, "%s%s%s", argv[2], argc == 4 ? " " : "", argc == 4 ? argv[3] : "");
  const cli_cmd_t *c = strchr(argv[2], ' ') ? NULL : cli_cmd_find(name);
  if (!c) return usage(err, "help: unknown command '%s'%s", name, "");
  *cmd = c;
  return CLI_PARSE_HELP;
}

cli_parse_result_t cli_parse(int argc, char **argv, cli_options_t *o, const cli_cmd_t **cmd, cli_usage_error_t *err) {
  *cmd = NULL;
  err->message[0] = '\0';
  if (argc < 2) return usage(err, "missing command%s%s", "", "");
  const char *a = argv[1];
  if (is_help(a)) return CLI_PARSE_HELP;
  if (!strcmp(a, "--version") || !strcmp(a, "-V"))
    return argc == 2 ? CLI_PARSE_VERSION : usage(err, "%s takes no argument, not '%s'", a, argv[2]);
  if (!strcmp(a, "help")) return parse_help(argc, argv, cmd, err);
  const cli_cmd_t *c = strchr(a, ' ') ? NULL : cli_cmd_find(a);
  if (!c) return usage(err, "unknown command '%s'%s", a, "");
  *cmd = c;
  int i = 2;
  if (!c->main) { /* config: the action comes first */
    if (i >= argc) return usage(err, "%s needs an action: %s", c->name, c->args);
    if (is_help(argv[i])) return CLI_PARSE_HELP;
    char name[128];
    snprintf(name, sizeof name, "%s %s", c->name, argv[i]);
    const cli_cmd_t *action = strchr(argv[i], ' ') ? NULL : cli_cmd_find(name);
    if (!action) return usage(err, "unknown config action '%s' (expected %s)", argv[i], "check, show or describe");
    o->action = argv[i++];
    *cmd = c = action;
  }
  for (; i < argc; i++) {
    a = argv[i];
    if (is_help(a)) return CLI_PARSE_HELP;
    /* --name=VALUE is --name VALUE, as most tools accept it. */
    char spelt[64];
    const char *inline_value = NULL, *eq = strncmp(a, "--", 2) ? NULL : strchr(a, '=');
    if (eq && (size_t)(eq - a) < sizeof spelt) {
      snprintf(spelt, sizeof spelt, "%.*s", (int)(eq - a), a);
      inline_value = eq + 1;
      a = spelt;
    }
    const cli_opt_t *p = opt_find(a);
    if (!p && a[0] != '-') return usage(err, "unexpected argument '%s'%s", a, "");
    if (!p) return usage(err, "unknown option '%s'%s", a, "");
    if (!(p->commands & c->bit)) return usage(err, "%s does not take %s", c->name, a);
    if (p->kind == CLI_OPT_FLAG) {
      if (inline_value) return usage(err, "%s takes no value%s", a, "");
      *(bool *)((char *)o + p->offset) = true;
      continue;
    }
    if (!inline_value && i + 1 >= argc) return usage(err, "%s needs a value (%s)", a, p->arg);
    const char *v = inline_value ? inline_value : argv[++i];
    if (p->kind == CLI_OPT_LIST) {
      o->sets[o->nsets++] = (char *)v;
      continue;
    }
    const char **slot = (const char **)((char *)o + p->offset);
    if (*slot) {
      char names[64];
      snprintf(names, sizeof names, "%s%s%s", p->alias ? p->alias : "", p->alias ? "/" : "", p->name);
      return usage(err, "%s given twice: it takes one %s", names, p->arg);
    }
    *slot = v;
  }
  return CLI_PARSE_RUN;
}
