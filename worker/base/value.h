/* Values that several modules read, each parsed by one function so that the
 * configuration accepts exactly what its users accept:
 *   store.write_concern: config_table.c validates, store.c applies;
 *   metrics.listen:      config_table.c validates, http.c binds.
 * Pure functions: no I/O, no allocation, thread-safe. */
#ifndef VALUE_H
#define VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* libmongoc's MONGOC_WRITE_CONCERN_W_MAJORITY (store.c asserts they agree). */
#define VALUE_W_MAJORITY (-3)

/* "majority" (*w = VALUE_W_MAJORITY) or a member count 1..50 in decimal
 * digits only (a replica set has at most 50 members). Anything else is
 * false, including 0: an unacknowledged write could report neither success
 * nor a rev conflict, so the worker refuses it. */
bool value_parse_write_concern(const char *s, int32_t *w);

/* A listen address split into its parts. */
typedef struct value_listen {
  char host[256]; /* without brackets: "127.0.0.1", "::1", "metrics.local" */
  bool ipv6;      /* the host was written in brackets */
  char port[6];   /* decimal digits, as written (for getaddrinfo) */
  uint16_t port_number;
} value_listen_t;

/* "host:port": host is an IPv4 address or a host name (letters, digits, '.'
 * and '-'), or an IPv6 address in brackets ("[::1]:9464"); port is decimal
 * 0..65535, where 0 asks the system for any free port (the bound port is
 * logged, and tests use it so that parallel runs never race for a port).
 * Names are resolved by the caller (http.c), not here. False for anything
 * else, including "". */
bool value_parse_listen(const char *s, value_listen_t *out);

#endif
