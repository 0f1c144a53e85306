/* `aggregator run`: the live worker. Wires config, logging, metrics, the
 * MongoDB store and the batch behind the Kafka consumer. */
#include <stdio.h>
#include <string.h>

#include "pipeline/batch.h"
#include "cli.h"
#include "base/clock.h"
#include "config/config.h"
#include "source/consumer.h"
#include "base/log.h"
#include "metrics/metrics.h"
#include "store/sink.h"
#include "store/store.h"

int cli_run(const cli_options_t *o) {
  int rc;
  config_t *cfg = cli_load_config(o, &rc);
  if (!cfg) return rc;
  log_setup(cfg->log_level, cfg->log_format);
  rc = 1;
  store_t *store = NULL;
  batch_t *batch = NULL;
  char err[256];
  if (!metrics_start(cfg->metrics_listen, err, sizeof err)) {
    log_error("metrics endpoint", "error", LOG_STR, err);
    goto out;
  }
  if (*cfg->metrics_listen) /* with port 0 this is how to find it */
    log_info("metrics endpoint listening", "listen", LOG_STR, cfg->metrics_listen, "port", LOG_INT,
             (int64_t)metrics_port());
  sink_error_t serr;
  store = store_open(cfg, &serr);
  if (!store) {
    log_error("store configuration", "error", LOG_STR, serr.message);
    rc = 2;
    goto out;
  }
  /* One round trip before consuming: credentials the store refuses (or any
   * other error retrying cannot fix) end the run now, with the store's
   * reason, rather than at the first flush; a store that is down is an
   * outage like any other and is retried. */
  sink_status_t st = store_ping(store, &serr);
  const char *cause = store_ping_cause(store);
  /* Refused credentials and a certificate that does not verify will not
   * heal by waiting either, though the driver's error for the latter is
   * the retryable one of an outage: the run ends with the cause, as a
   * missing topic ends it. A TLS-only server met without TLS looks like a
   * server closing connections, which an outage does too: retried, with
   * the likely cause as the not-ready reason. */
  bool hopeless = cause && (!strcmp(cause, "credentials refused") || strstr(cause, "certificate"));
  if (st == SINK_FATAL || hopeless) {
    log_error("store refused the worker", "error", LOG_STR, serr.message);
    goto out;
  }
  if (st == SINK_RETRY) {
    log_warn("store not reachable yet; retrying in the background", "error", LOG_STR, serr.message);
    if (cause) metrics_store_failed_cause(cause);
  } else
    metrics_store_answered();
  batch_limits_t limits = batch_limits_from_config(cfg);
  batch = batch_new(&limits);
  if (!batch) goto out;
  sink_t sink = store_sink(store); /* the writer thread's until consumer_run returns */
  rc = consumer_run(cfg, batch, &sink, clock_system(), &(consumer_reload_t){o->config_path, o->sets, o->nsets});
out:
  /* A flush abandoned at the shutdown deadline (consumer.c) is still in
   * flight: its writer thread is inside a store call with this store, which
   * must then outlive us (the process exits; the batch it never reads). */
  if (!batch || !batch_in_flight(batch)) store_destroy(store);
  batch_destroy(batch);
  metrics_stop();
  config_destroy(cfg);
  return rc;
}
