/* The live consumer's access to its brokers and grants (kafka_access.h). */
#include "kafka_access.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/redact.h"
#include "kafka.h"
#include "metrics/metrics.h"
#include "oom.h"

struct kafka_access {
  rd_kafka_t *rk;
  const config_t *cfg;
  const clock_source_t *clock;
  bool failing;
  int64_t next_probe_ms; /* monotonic; while failing */
  char why[512];         /* while failing: the not-ready reason */
  int missing;           /* the probe's count of missing grants so far */
  char lines[2048];      /* the probe's lines so far, one a line */
  char logged[2048];     /* the lines last logged: a probe that finds the same logs nothing */
};

static void fail(kafka_access_t *a, const char *why) {
  if (!a->failing || strcmp(a->why, why)) {
    snprintf(a->why, sizeof a->why, "%s", why);
    metrics_set_source_failing(a->why);
  }
  if (!a->failing) a->next_probe_ms = clock_mono(a->clock) + KAFKA_ACCESS_PROBE_MS;
  a->failing = true;
}

static void on_missing(void *ctx, kafka_grant_t grant, const char *key, const char *name, const char *line) {
  (void)grant;
  kafka_access_t *a = ctx;
  size_t len = strlen(a->lines);
  snprintf(a->lines + len, sizeof a->lines - len, "%s\n", line);
  if (!strstr(a->logged, line)) log_error(line, "key", LOG_STR, key, "resource", LOG_STR, name);
  if (a->missing++ == 0) fail(a, line);
}

/* One probe: true when it answered (everything granted or not). */
static bool probe(kafka_access_t *a, int timeout_ms) {
  char err[1024];
  a->missing = 0;
  a->lines[0] = '\0';
  unsigned which = KAFKA_CHECK_COMMANDS | KAFKA_CHECK_DLQ | KAFKA_CHECK_CHANGES | KAFKA_CHECK_GROUP;
  kafka_check_t chk = kafka_check_grants(a->rk, a->cfg, which, timeout_ms, on_missing, a, err, sizeof err);
  switch (chk) {
    case KAFKA_CHECK_OK:
      if (a->failing) log_info("Kafka access restored: every grant the worker needs is held");
      a->failing = false;
      a->logged[0] = '\0';
      metrics_set_source_failing(NULL);
      return true;
    case KAFKA_CHECK_DENIED:
      memcpy(a->logged, a->lines, sizeof a->logged); /* on_missing logged each new one, and failed */
      return true;
    case KAFKA_CHECK_REFUSED:
      log_error(err, "check", LOG_STR, kafka_check_name(chk));
      fail(a, err);
      return true;
    case KAFKA_CHECK_UNSUPPORTED:
      log_warn(err);
      return true;
    default:
      /* The brokers did not say (an outage): nothing is known to be
       * missing; the consumer's own errors and refusals still count. */
      log_warn("cannot check the grants", "error", LOG_STR, err[0] ? err : "the brokers gave no answer that says");
      return false;
  }
}

kafka_access_t *kafka_access_start(rd_kafka_t *rk, const config_t *cfg, const clock_source_t *clock) {
  kafka_access_t *a = oom_calloc(1, sizeof *a);
  a->rk = rk;
  a->cfg = cfg;
  a->clock = clock;
  metrics_set_source_failing(NULL);
  /* The start-up check has waited for the brokers already (kafka_check_topics):
   * they answer a description within the probe's bound, and the main loop
   * must not wait on a coordinator that does not (a missing group grant
   * then comes as the consumer's own error, kafka_access_error). */
  probe(a, KAFKA_ACCESS_PROBE_TIMEOUT_MS);
  return a;
}

void kafka_access_error(kafka_access_t *a, rd_kafka_resp_err_t err, const char *text) {
  if (!a) return;
  if (err != RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED && err != RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED)
    return;
  char why[512];
  snprintf(why, sizeof why, "not authorized: %s", text);
  redact_set_scrub_str(redact_global(), why, sizeof why);
  bool first = !a->failing;
  fail(a, why);
  if (first) {
    log_error(why, "error", LOG_STR, rd_kafka_err2name(err));
    a->next_probe_ms = clock_mono(a->clock); /* the probe names the grant; at the next tick */
  }
}

void kafka_access_tick(kafka_access_t *a) {
  if (!a) return;
  char why[1024];
  if (kafka_refusal(a->rk, true, why, sizeof why) != KAFKA_REFUSAL_NONE) fail(a, why); /* error_cb logged it */
  int64_t now = clock_mono(a->clock);
  if (!a->failing || now < a->next_probe_ms) return;
  probe(a, KAFKA_ACCESS_PROBE_TIMEOUT_MS);
  a->next_probe_ms = clock_mono(a->clock) + KAFKA_ACCESS_PROBE_MS;
}

void kafka_access_destroy(kafka_access_t *a) {
  if (!a) return;
  metrics_set_source_failing(NULL);
  free(a);
}
