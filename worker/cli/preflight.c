/* The change topic's start-up check for `replay` and `verify --repair`
 * (preflight.h). */
#include "preflight.h"

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stdio.h>

#include "base/clock.h"
#include "base/log.h"
#include "base/redact.h"
#include "base/signals.h"
#include "source/kafka.h"

static bool check_tick(void *ctx) {
  (void)ctx;
  return !signals_stop_count();
}

int preflight_changes(const config_t *cfg, const char *command) {
  if (!*cfg->changes_topic) return 0;
  signals_install(SIGNALS_STOP);
  /* The change-event producer's settings (TLS, SASL, the principal whose
   * ACLs count): the events are produced with them. This client asks for
   * metadata only. */
  char errstr[512];
  rd_kafka_conf_t *conf = kafka_conf_new(cfg, KAFKA_CHANGE_PRODUCER, NULL, errstr, sizeof errstr);
  rd_kafka_t *rk = conf ? rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr) : NULL;
  if (!rk) {
    if (conf) rd_kafka_conf_destroy(conf); /* rd_kafka_new takes it on success only */
    redact_set_scrub_str(redact_global(), errstr, sizeof errstr); /* librdkafka may quote a value */
    log_error("cannot create the client that checks the change topic", "command", LOG_STR, command, "error",
              LOG_STR, errstr);
    return 1;
  }
  char why[1024];
  kafka_check_t chk =
      kafka_check_topic_set(rk, cfg, KAFKA_CHECK_CHANGES, clock_system(), check_tick, NULL, why, sizeof why);
  rd_kafka_destroy(rk);
  if (chk == KAFKA_CHECK_OK) return 0;
  if (chk == KAFKA_CHECK_STOPPED) {
    char msg[64];
    snprintf(msg, sizeof msg, "%s: interrupted", command);
    log_error(msg, "signal", LOG_INT, (int64_t)signals_stop_signal());
    return 128 + signals_stop_signal();
  }
  log_error(why, "command", LOG_STR, command, "check", LOG_STR,
            kafka_check_name(chk));
  return 1;
}
