/* The command line as one table: the commands, the options each accepts and
 * one line of meaning per option. The parser (cli_table.c) and every help
 * text (cli_help.c) walk the same rows, so an option that parses is an
 * option the help explains, and the reverse; adding an option is adding a
 * row (plus its field in cli_options_t). */
#ifndef CLI_TABLE_H
#define CLI_TABLE_H

#include <stdbool.h>
#include <stddef.h>

#include "cli.h"

/* One bit per command that takes options; an option row says which accept it. */
enum {
  CLI_RUN = 1u << 0,
  CLI_REPLAY = 1u << 1,
  CLI_VERIFY = 1u << 2,
  CLI_CHECK = 1u << 3,
  CLI_SHOW = 1u << 4,
  CLI_DESCRIBE = 1u << 5,
  CLI_EXPORT = 1u << 6,
};
#define CLI_CONFIG_ACTIONS (CLI_CHECK | CLI_SHOW | CLI_DESCRIBE)

typedef enum {
  CLI_OPT_FLAG,  /* bool in cli_options_t */
  CLI_OPT_VALUE, /* const char * in cli_options_t; given at most once */
  CLI_OPT_LIST,  /* appended to cli_options_t.sets; repeatable */
} cli_opt_kind_t;

typedef struct cli_opt {
  const char *name;  /* "--config" */
  const char *alias; /* "-c", or NULL */
  const char *arg;   /* "FILE", NULL for a flag */
  cli_opt_kind_t kind;
  unsigned commands; /* CLI_* bits of the commands that accept it */
  size_t offset;     /* of its field in cli_options_t (FLAG, VALUE) */
  const char *doc;   /* one line */
} cli_opt_t;

typedef struct cli_cmd {
  const char *name;     /* "run", "config", "config show" */
  unsigned bit;         /* CLI_*; 0 for "config" (it takes an action) and "help" */
  const char *args;     /* what follows the name in the synopsis before the options, or "" */
  const char *summary;  /* one line */
  const char *doc;      /* paragraphs for `help COMMAND`, lines ending in '\n' */
  int (*main)(const cli_options_t *o); /* NULL for "config" and "help" */
} cli_cmd_t;

extern const cli_cmd_t cli_cmds[];
extern const size_t cli_cmds_count;
extern const cli_opt_t cli_opts[];
extern const size_t cli_opts_count;

/* The command named name ("replay", "config show"); NULL when unknown. */
const cli_cmd_t *cli_cmd_find(const char *name);

typedef enum {
  CLI_PARSE_RUN,     /* *cmd and *o say what to run */
  CLI_PARSE_HELP,    /* print the help of *cmd (NULL: the program's) */
  CLI_PARSE_VERSION, /* print the version */
  CLI_PARSE_USAGE,   /* a usage error: err says it, *cmd names whose help to point at (NULL: the program's) */
} cli_parse_result_t;

typedef struct cli_usage_error {
  char message[512]; /* one line, without the "aggregator: " prefix or the hint */
} cli_usage_error_t;

/* Parses argv[1..argc) into *o (o->sets must have room for argc strings;
 * values point into argv; `--name=VALUE` is `--name VALUE`). `aggregator
 * help [COMMAND]`, `--help` and `-h`
 * anywhere an option may stand ask for help; `--version` and `-V` alone
 * ask for the version; no command at all, a value option given twice, an
 * option the command does not take, a missing value and an unknown command
 * or config action are usage errors. */
cli_parse_result_t cli_parse(int argc, char **argv, cli_options_t *o, const cli_cmd_t **cmd, cli_usage_error_t *err);

#endif
