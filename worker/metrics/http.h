/* The HTTP endpoint of metrics.listen: /metrics, /healthz, /readyz,
 * served by libmicrohttpd on its own thread.
 *
 * Internal to the metrics module: the pipeline uses metrics_start/stop
 * (metrics_server.c), which passes the handlers in (http_handlers_t), so
 * http.c does not depend on the metrics module; they run on the server's
 * thread and must be thread-safe (the metrics registry is). */
#ifndef HTTP_H
#define HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "buf.h"

typedef struct http_server http_server_t;

/* Parses "host:port" (value_parse_listen: the rule the configuration
 * checks) into a socket address; a host name is resolved now (first address
 * wins). Port 0 binds any free port (see http_server_port). False with err
 * filled (may be NULL). */
bool http_parse_listen(const char *listen, struct sockaddr_storage *addr, socklen_t *addrlen, char *err,
                       size_t errsz);

/* What the server answers: /metrics appends the exposition to out;
 * /readyz and /healthz are 200 when the function returns true, else 503
 * with reason. */
typedef struct http_handlers {
  void (*render)(model_buf_t *out);
  bool (*ready)(char *reason, size_t reasonsz);
  bool (*healthy)(char *reason, size_t reasonsz);
} http_handlers_t;

/* Binds and listens on exactly that address, then serves on a thread.
 * Returns NULL with err filled (e.g. "bind 192.0.2.1:9464: Cannot assign
 * requested address"). Caller owns; http_server_stop() frees. */
http_server_t *http_server_start(const char *listen, const http_handlers_t *handlers, char *err, size_t errsz);
/* The bound port (useful after port 0). */
int http_server_port(const http_server_t *s);
/* Stops serving, joins the thread, closes the socket. NULL-safe. */
void http_server_stop(http_server_t *s);

#endif
