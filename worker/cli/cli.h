/* Subcommands of the aggregator executable. The command table
 * (cli_table.h) parses the command line into cli_options_t; each subcommand
 * lives in its own file and returns the process exit status: 0 success,
 * 1 runtime failure, 2 usage/configuration, 3 drift found (verify). */
#ifndef CLI_H
#define CLI_H

#include <stdbool.h>
#include <stddef.h>

typedef struct cli_options {
  const char *config_path; /* -c FILE, or NULL */
  char **sets;             /* --set section.key=value, in order */
  size_t nsets;
  const char *from;    /* replay/verify/export --from, NULL = beginning */
  const char *until;   /* replay/verify/export --until, NULL = end */
  const char *input;   /* replay/verify --input FILE|- */
  const char *output;  /* replay/export --output FILE|- */
  const char *rejects; /* replay --rejects FILE */
  const char *action;  /* config: "check", "show" or "describe" */
  bool repair;         /* verify --repair */
  bool allow_empty;    /* verify --allow-empty */
  const char *max_rejects; /* replay --max-rejects N, NULL = no limit */
  bool origin;         /* config show --origin */
  bool connect;        /* config check --connect */
} cli_options_t;

/* The configuration of -c and --set (with the environment between them).
 * On failure prints the one-line error, sets *rc to 2 and returns NULL. On
 * success the configuration's secrets are in redact_global() (every log
 * line is scrubbed of them). Caller owns the result. */
struct config;
struct config *cli_load_config(const cli_options_t *o, int *rc); /* cli_config.c */

/* True when store.uri was given (a file, the environment or --set): the
 * one rule by which `replay` and `verify` touch a store (cli_config.c). */
bool cli_store_configured(const struct config *cfg);

int cli_run(const cli_options_t *o);    /* cli_run.c */
int cli_replay(const cli_options_t *o); /* cli_replay.c */
int cli_config(const cli_options_t *o); /* cli_config.c */
int cli_verify(const cli_options_t *o); /* cli_verify.c */
int cli_export(const cli_options_t *o); /* cli_export.c */

#endif
