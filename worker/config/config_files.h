/* Values that name files: which librdkafka properties and MongoDB URI
 * options do, and whether such a file can be read. `config check` and the
 * load refuse a file that cannot be read, since the client that reads it
 * fails at start, or at the first TLS handshake, long after the check
 * said OK. */
#ifndef CONFIG_FILES_H
#define CONFIG_FILES_H

#include <stdbool.h>
#include <stddef.h>

/* Whether the librdkafka property name, set to value, names a file that
 * must be readable; *dir_ok says whether a directory is valid too. */
bool config_rdkafka_names_file(const char *name, const char *value, bool *dir_ok);
/* The option's name as libmongoc documents it, if the URI option key
 * (compared case-insensitively: libmongoc lower-cases keys) names a file;
 * else NULL. */
const char *config_uri_option_names_file(const char *key);
/* Whether path opens for reading and is a regular file (or, with dir_ok, a
 * directory); why says what is wrong. */
bool config_file_readable(const char *path, bool dir_ok, char *why, size_t why_size);

#endif
