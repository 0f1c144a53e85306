/* The lifecycle of the process's one metrics HTTP server: metrics_start,
 * metrics_stop and metrics_port (metrics.h). http.c serves; this file hands
 * it the renderer and the readiness decisions, so http.c does not depend on
 * the metrics module. */
#include <pthread.h>
#include <stdio.h>

#include "http.h"
#include "metrics.h"

/* Guards g_server: the main thread starts and stops, any thread asks the port. */
static pthread_mutex_t g_server_lock = PTHREAD_MUTEX_INITIALIZER;
static http_server_t *g_server;

bool metrics_start(const char *listen, char *err, size_t errsz) {
  if (err && errsz) err[0] = '\0';
  metrics_heartbeat();
  if (!listen || !*listen) return true;
  pthread_mutex_lock(&g_server_lock);
  bool ok = false;
  if (g_server) {
    if (err) snprintf(err, errsz, "metrics server already started");
  } else {
    static const http_handlers_t handlers = {metrics_render, metrics_ready, metrics_healthy};
    g_server = http_server_start(listen, &handlers, err, errsz);
    ok = g_server != NULL;
  }
  pthread_mutex_unlock(&g_server_lock);
  return ok;
}

void metrics_stop(void) {
  pthread_mutex_lock(&g_server_lock);
  http_server_t *s = g_server;
  g_server = NULL;
  pthread_mutex_unlock(&g_server_lock);
  http_server_stop(s); /* joins the thread: no handler runs past this point */
  metrics_lag_release();
}

int metrics_port(void) {
  pthread_mutex_lock(&g_server_lock);
  int port = g_server ? http_server_port(g_server) : 0;
  pthread_mutex_unlock(&g_server_lock);
  return port;
}
