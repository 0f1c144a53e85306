/* Secrets: which values are secrets, how they are shown, and scrubbing them
 * from text the worker did not write (secrets never appear in logs or
 * `config show`).
 *
 * What a secret is:
 *   - the password of store.uri and the values of its credential options
 *     (names containing "password", "secret" or "token", and
 *     authMechanismProperties);
 *   - the value of every librdkafka property librdkafka treats as sensitive
 *     (redact_rdkafka_property_is_secret);
 *   - every value read through a `key_file` key (config.c decides, since
 *     only it knows where a value came from).
 *
 * Two ways to keep them out of output, both needed:
 *   - our own text never contains them: `config show` prints the URI through
 *     redact_uri() and other secrets as REDACT_MASK, and config errors say
 *     "the value" instead of quoting one;
 *   - text from libraries and servers (libmongoc's URI errors quote the
 *     password they reject; a server or proxy may echo what it was sent) is
 *     scrubbed against a redact_set_t of every configured secret before it
 *     is printed or logged. log.c scrubs every log line against
 *     redact_global(), which `run` and `replay` fill from the configuration
 *     before any library sees it.
 *
 * Scrubbing matches the secret as configured, with '"' and '\\' escaped as
 * JSON quotes them, and percent-decoded when it holds %XX escapes (the form
 * libraries work with). A message that ends with
 * the beginning of a secret (a library truncated it) has that tail masked
 * too. Strings shorter than REDACT_MIN_LEN are not scrubbed: they would
 * match inside ordinary words and blank out every log line, and a secret
 * that short protects nothing. */
#ifndef REDACT_H
#define REDACT_H

#include <stdbool.h>
#include <stddef.h>

#include "buf.h"

#define REDACT_MASK "***"
#define REDACT_MIN_LEN 3

/* librdkafka properties whose values are secrets. librdkafka marks them
 * sensitive internally (passwords, client secrets, private keys, the
 * OAUTHBEARER config) but has no API to ask, so this matches names and errs
 * on the side of hiding: any name containing "password" or "secret",
 * ssl.key.pem, ssl_key and sasl.oauthbearer.config. */
bool redact_rdkafka_property_is_secret(const char *name);

/* MongoDB URI options whose values are secrets (name[0..len), compared
 * case-insensitively, as MongoDB does). */
bool redact_uri_option_is_secret(const char *name, size_t len);

/* Appends uri to out with the password (from the first ':' of the user
 * information to its '@', wherever unescaped '@', ':', '/' or '%' put them)
 * and the values of secret options replaced by REDACT_MASK. Anything else,
 * host names and the user name included, is kept. */
void redact_uri(const char *uri, model_buf_t *out);

/* True when uri has an unescaped '@' that does not end the user information
 * right before the hosts: `mongodb://user:p@ss@host` (libmongoc splits it at
 * the first '@' and would take "ss@host" for the host, putting part of the
 * password into every connection error), `mongodb://u:p/ss@host` (libmongoc
 * reads host u:p and database "ss@host") or `mongodb://h/?appname=a@b` (an
 * option, but this module would hide "/?appname=a" as a password, so that
 * `config show` prints another URI). The configuration refuses them; '%40'
 * is an '@' everywhere in a URI, option values included. */
bool redact_uri_has_unescaped_at(const char *uri);

/* A set of secret strings to scrub from text. Thread-safe: every function
 * takes the set's lock, so log lines from librdkafka's threads can be
 * scrubbed while the main thread adds. The set owns copies of its strings
 * (zeroed when freed). */
typedef struct redact_set redact_set_t;

/* Caller owns; redact_set_destroy(NULL) is safe. Never NULL (oom.h). */
redact_set_t *redact_set_new(void);
void redact_set_destroy(redact_set_t *set);
/* Forgets every string (zeroing it); the set stays usable. */
void redact_set_clear(redact_set_t *set);

/* Adds secret (NUL-terminated) as it is, JSON-quoted and percent-decoded,
 * and so every part of it that starts a word and the value of every
 * key=value word in it (what a library quotes when it cannot parse it).
 * NULL, empty and short strings are ignored; duplicates are kept once. */
void redact_set_add(redact_set_t *set, const char *secret);
/* Adds the secrets of a MongoDB URI: its password and the values of its
 * secret options, as written and percent-decoded. */
void redact_set_add_uri(redact_set_t *set, const char *uri);

/* Appends s[0..n) to out with every occurrence of a secret (longest match
 * first) replaced by REDACT_MASK, and a tail of s that begins a secret
 * (at least REDACT_MIN_LEN bytes) too. set may be NULL (nothing to scrub). */
void redact_set_scrub(const redact_set_t *set, const char *s, size_t n, model_buf_t *out);
/* Scrubs the NUL-terminated msg in place; the result is truncated to size. */
void redact_set_scrub_str(const redact_set_t *set, char *msg, size_t size);

/* The process-wide set that log lines, metric labels and the command line's
 * error messages are scrubbed against. Lives for the whole process; never
 * destroy it. */
redact_set_t *redact_global(void);

#endif
