/* Configuration: loading it and applying a reload.
 *
 * One table of properties (config_table.c) drives parsing of the INI file,
 * environment overrides (AGGREGATOR_<SECTION>_<KEY>), --set overrides,
 * validation, `config show` (secrets redacted), `config describe` and the
 * generated reference docs/CONFIG.md (written by tests/tools/gen_config_doc.c).
 * Precedence, lowest first: defaults, file, environment, --set. */
#ifndef CONFIG_H
#define CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "config_values.h"

/* config_load keeps this many error lines; it counts any beyond. */
#define CONFIG_ERRORS_MAX 32

/* Every error config_load found, in the order found (the file by line, then
 * the environment, --set, files that values name, checks across keys). Each
 * is one line: "FILE:LINE: key: problem", "environment VAR: key: problem" or
 * "--set key: problem", scrubbed of secrets. */
typedef struct config_error {
  char message[512];                        /* the first error ("" when none) */
  char rest[CONFIG_ERRORS_MAX - 1][512];    /* the second and later ones */
  size_t count;                             /* errors found, kept or not */
} config_error_t;

/* Error i (0 = the first) of err, or NULL past the ones kept. */
const char *config_error_at(const config_error_t *err, size_t i);

/* A config holding the built-in defaults; never NULL (oom.h). Caller owns;
 * config_destroy(NULL) is safe. */
config_t *config_new(void);
void config_destroy(config_t *cfg);

/* Applies, in order, the file (if path is not NULL), the environment and the
 * sets ("section.key=value"), reads the files that values name and checks
 * keys against each other and with librdkafka. It goes on past an error so
 * as to report every one: returns false with err holding them all; cfg is
 * then unspecified (but still safe to destroy). A NULL path
 * loads no file (replay with --input and --output needs none).
 * `key_file = PATH` values are read after all sources are merged, and only
 * for the source that wins. store.uri is parsed with libmongoc, whose default
 * log handler prints its own warnings: install a handler (or
 * mongoc_log_set_handler(NULL, NULL)) before calling this. */
bool config_load(config_t *cfg, const char *path, char *const *sets, size_t nsets, config_error_t *err);

/* Showing a configuration (config_show.c). */
/* Prints the effective configuration as INI, secrets redacted (the URI
 * through redact_uri, every other secret as ***). */
void config_show(const config_t *cfg, FILE *out);
/* The same with, above each key, a comment naming where its value came
 * from: "default", "FILE:LINE", "environment VARIABLE" or "--set", and the
 * file a key_file value was read from. The output still loads as the same
 * configuration. */
void config_show_origin(const config_t *cfg, FILE *out);
/* Appends where o says a value of cfg came from, as config_show_origin names it. */
struct model_buf;
void config_origin_format(const config_t *cfg, const config_origin_t *o, struct model_buf *out);
/* Prints every key with type, default, range, live-reloadable, meaning. */
void config_describe(FILE *out);

/* For SIGHUP: copies the live-reloadable keys (batch.*, cache.*, log.level)
 * from next into cur. Names of changed keys that need a restart (including
 * kafka.rdkafka.<property> added, removed or changed) are written,
 * comma-separated, to restart_keys (may be NULL; truncated to its size).
 * Returns true when nothing needs a restart. Call it from the thread that
 * reads cur. */
bool config_apply_live(config_t *cur, const config_t *next, char *restart_keys, size_t restart_keys_size);

#endif
