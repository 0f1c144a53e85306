/* libmicrohttpd server for /metrics, /healthz and /readyz.
 *
 * The endpoint is read-only and small, so the daemon is bounded: a few
 * connections, a short idle timeout, GET and HEAD only. What it serves comes
 * from the http_handlers_t given at start (the metrics module's thread-safe
 * renderer and readiness decisions): this file knows HTTP, not metrics, so
 * the dependency goes one way (metrics_server.c -> http.c). */
#include "http.h"

#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "buf.h"
#include "base/log.h"
#include "oom.h"
#include "base/value.h"

struct http_server {
  struct MHD_Daemon *daemon;
  int port;
  http_handlers_t h;
};

static void seterr(char *err, size_t errsz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t errsz, const char *fmt, ...) {
  if (!err || !errsz) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errsz, fmt, ap);
  va_end(ap);
}

bool http_parse_listen(const char *where, struct sockaddr_storage *addr, socklen_t *addrlen, char *err,
                       size_t errsz) {
  value_listen_t l;
  if (!value_parse_listen(where, &l)) {
    seterr(err, errsz, "'%s' is not host:port (e.g. 127.0.0.1:9464, [::1]:9464; port 0..65535, 0 for any free port)",
           where ? where : "");
    return false;
  }
  struct addrinfo hints = {0}, *res = NULL;
  hints.ai_family = l.ipv6 ? AF_INET6 : AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV | (l.ipv6 ? AI_NUMERICHOST : 0);
  int rc = getaddrinfo(l.host, l.port, &hints, &res);
  if (rc != 0 || !res) {
    seterr(err, errsz, "host '%s': %s", l.host, rc ? gai_strerror(rc) : "no address");
    if (res) freeaddrinfo(res);
    return false;
  }
  memcpy(addr, res->ai_addr, res->ai_addrlen);
  *addrlen = res->ai_addrlen;
  freeaddrinfo(res);
  return true;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap) {
  (void)cls;
  char msg[256];
  vsnprintf(msg, sizeof msg, fmt, ap);
  msg[strcspn(msg, "\r\n")] = '\0';
  log_warn("metrics http server", "detail", LOG_STR, msg);
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type, char *body, size_t len,
                             enum MHD_ResponseMemoryMode mode) {
  struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
  if (!r) {
    if (mode == MHD_RESPMEM_MUST_FREE) free(body);
    return MHD_NO;
  }
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  if (status == MHD_HTTP_METHOD_NOT_ALLOWED) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *text) {
  return reply(c, status, "text/plain; charset=utf-8", (char *)text, strlen(text), MHD_RESPMEM_MUST_COPY);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
  (void)version, (void)upload_data, (void)upload_data_size, (void)con_cls;
  const http_handlers_t *h = cls;
  if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
    return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed\n");

  if (!strcmp(url, "/metrics")) {
    model_buf_t b = MODEL_BUF_INIT;
    h->render(&b);
    return reply(c, MHD_HTTP_OK, "text/plain; version=0.0.4; charset=utf-8", b.data, b.len, MHD_RESPMEM_MUST_FREE);
  }
  bool ready = !strcmp(url, "/readyz");
  if (ready || !strcmp(url, "/healthz")) {
    char reason[600], body[608]; /* a cause names a user, a topic and the grant it needs */
    bool ok = ready ? h->ready(reason, sizeof reason) : h->healthy(reason, sizeof reason);
    if (ok) return reply_text(c, MHD_HTTP_OK, "ok\n");
    snprintf(body, sizeof body, "%s\n", reason);
    return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, body);
  }
  return reply_text(c, MHD_HTTP_NOT_FOUND, "not found: try /metrics, /healthz or /readyz\n");
}

/* Why MHD failed to start, when the cause is the bind (the usual one: address
 * in use or not local): MHD only returns NULL, so bind a probe socket the same
 * way to learn the errno. */
static void explain_bind_failure(const struct sockaddr_storage *addr, socklen_t addrlen, const char *where,
                                 char *err, size_t errsz) {
  int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  if (fd >= 0) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (fd >= 0 && addr->ss_family == AF_INET6) setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof one);
  if (fd < 0 || bind(fd, (const struct sockaddr *)addr, addrlen) != 0)
    seterr(err, errsz, "bind %s: %s", where, strerror(errno));
  else
    seterr(err, errsz, "metrics server on %s could not start (see the log)", where);
  if (fd >= 0) close(fd);
}

http_server_t *http_server_start(const char *where, const http_handlers_t *handlers, char *err, size_t errsz) {
  struct sockaddr_storage addr;
  socklen_t addrlen = 0;
  if (!http_parse_listen(where, &addr, &addrlen, err, errsz)) return NULL;
  http_server_t *s = oom_calloc(1, sizeof *s);
  s->h = *handlers; /* the daemon's threads read it through cls until http_server_stop */

  /* MHD binds exactly this address (never all interfaces), with SO_REUSEADDR
   * so a restarted worker rebinds at once; an IPv6 address is IPv6 only. */
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
  if (addr.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
  /* The port argument only names the port in MHD's own messages: SOCK_ADDR binds. */
  uint16_t port = ntohs(addr.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&addr)->sin6_port
                                                   : ((struct sockaddr_in *)&addr)->sin_port);
  struct MHD_Daemon *d = MHD_start_daemon(flags, port, NULL, NULL, on_request, &s->h,
                                          MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
                                          MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
                                          MHD_OPTION_CONNECTION_LIMIT, (unsigned)16,
                                          MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10,
                                          MHD_OPTION_END);
  if (!d) {
    explain_bind_failure(&addr, addrlen, where, err, errsz);
    free(s);
    return NULL;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  s->daemon = d;
  s->port = info ? info->port : 0;
  return s;
}

int http_server_port(const http_server_t *s) { return s ? s->port : 0; }

void http_server_stop(http_server_t *s) {
  if (!s) return;
  MHD_stop_daemon(s->daemon);
  free(s);
}
