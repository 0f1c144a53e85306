/* The configuration property table (internal to config*.c).
 *
 * One row per key, in the librdkafka style: the row says where the value
 * lives in config_t, how to parse and validate it, its default (as text, in
 * the syntax of the file, parsed by the same code as user input so a default
 * can never be invalid), whether SIGHUP applies it live, whether it is a
 * secret, and what it means. Parsing, `config show`, `config describe`,
 * docs/CONFIG.md and config_apply_live all walk this table; adding a key is
 * adding a row (plus its field in config_t, config_values.h). It depends on
 * no other file of config/: loading (config.c), the secrets
 * (config_secrets.c), the suggestions (config_suggest.c) and showing
 * (config_show.c) stand on it. */
#ifndef CONFIG_TABLE_H
#define CONFIG_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "config_values.h"

typedef enum {
  CONFIG_TYPE_STRING, /* char *, validated and normalised by the row's check */
  CONFIG_TYPE_INT,    /* int64_t, decimal, min..max */
  CONFIG_TYPE_SIZE,   /* int64_t bytes; decimal with optional K/KiB/M/MiB/G/GiB (powers of 1024) */
  CONFIG_TYPE_ENUM,   /* an enum field; values[] in enum order */
} config_type_t;

enum {
  CONFIG_LIVE = 1u,   /* SIGHUP applies it without a restart */
  CONFIG_SECRET = 2u, /* never printed: `config show` redacts it, errors do not echo it */
};

/* Validates a string value. Returns a malloc'd normalised copy, or NULL with
 * `why` filled (a phrase that does not repeat the value when `secret`). */
typedef char *(*config_check_fn)(const char *value, bool secret, char *why, size_t why_size);

typedef struct config_prop {
  const char *section;
  const char *key;
  config_type_t type;
  const char *type_name;     /* for describe: "string", "list", "host:port", ... */
  const char *def;           /* default, as it would be written in the file */
  int64_t min, max;          /* INT and SIZE */
  const char *const *values; /* ENUM: names in enum order, NULL-terminated */
  config_check_fn check;     /* STRING */
  const char *range;         /* STRING: allowed values, for describe */
  unsigned flags;
  size_t offset; /* of the field in config_t */
  const char *doc;
} config_prop_t;

typedef struct config_section {
  const char *name;
  const char *doc;
} config_section_t;

extern const config_prop_t config_props[];
extern const size_t config_props_count;
extern const config_section_t config_sections[];
extern const size_t config_sections_count;

/* What kafka.rdkafka.<property> keys are, for describe and docs/CONFIG.md. */
extern const char config_rdkafka_doc[];

/* NULL when unknown. */
const config_prop_t *config_prop_find(const char *section, const char *key);
bool config_section_known(const char *section);

/* Parses value and stores it into cfg (replacing and freeing any previous
 * string). On failure cfg is untouched and why says what is wrong, without
 * quoting the value when secret (a CONFIG_SECRET key, or a value read from a
 * _file key). */
bool config_prop_set(const config_prop_t *p, config_t *cfg, const char *value, bool secret, char *why,
                     size_t why_size);
/* Appends the value as the file syntax would spell it (not redacted). */
void config_prop_format(const config_prop_t *p, const config_t *cfg, model_buf_t *out);
/* Appends the range or allowed values, for describe ("1..60000", "error, warn, ..."). */
void config_prop_format_range(const config_prop_t *p, model_buf_t *out);
bool config_prop_equal(const config_prop_t *p, const config_t *a, const config_t *b);
/* Copies the value of p from src to dst. */
void config_prop_copy(const config_prop_t *p, config_t *dst, const config_t *src);
void config_prop_free(const config_prop_t *p, config_t *cfg);

/* Whether libmongoc knows the MongoDB URI option name (any case): it
 * refuses bad values of the options it knows, but only logs and drops an
 * option it does not know. */
bool config_uri_option_known(const char *name);

/* Levenshtein distance, for "did you mean" (here and config_suggest.h);
 * SIZE_MAX past 200 bytes. */
size_t config_edit_distance(const char *a, const char *b);

/* "AGGREGATOR_BATCH_MAX_COMMANDS" for batch.max_commands. */
void config_prop_env_name(const config_prop_t *p, char *out, size_t out_size);

/* Properties the worker sets itself and that rdkafka.* must not override;
 * returns the reason, or NULL when the property may be passed through. */
const char *config_rdkafka_reserved(const char *name);

#endif
