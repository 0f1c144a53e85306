/* `config check --connect` (config_connect.h). */
#include "config_connect.h"

#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>
#include <mongoc/mongoc.h>

#include "buf.h"
#include "base/clock.h"
#include "source/kafka.h"
#include "oom.h"
#include "base/redact.h"
#include "store/store.h"

/* How long the brokers, which answered already, have to describe the
 * topics and the group: the whole check stays within seconds. */
#define CONFIG_CONNECT_GRANTS_MS 5000

/* Prints one "aggregator: ..." line, scrubbed of every known secret. */
static void report(FILE *out, const char *line) {
  char msg[2048];
  snprintf(msg, sizeof msg, "aggregator: %s", line);
  redact_set_scrub_str(redact_global(), msg, sizeof msg);
  fprintf(out, "%s\n", msg);
}

/* A client for the producer's settings (TLS, SASL) with bootstrap.servers
 * set to servers, and no log or error callback: what it could not reach
 * is reported once, by us. NULL with errstr filled if refused. */
static rd_kafka_t *client_new(const config_t *cfg, const char *servers, char *errstr, size_t errsz) {
  rd_kafka_conf_t *conf = kafka_conf_new(cfg, KAFKA_DLQ_PRODUCER, NULL, errstr, errsz);
  if (!conf) return NULL;
  if (rd_kafka_conf_set(conf, "bootstrap.servers", servers, errstr, errsz) != RD_KAFKA_CONF_OK) {
    rd_kafka_conf_destroy(conf);
    return NULL;
  }
  kafka_conf_quiet(conf);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, errsz);
  if (!rk) rd_kafka_conf_destroy(conf);
  return rk;
}

/* Each broker of kafka.brokers alone; returns how many answered. */
static size_t check_brokers(const config_t *cfg, const clock_source_t *clock, FILE *err_out, bool *all,
                            model_buf_t *reached) {
  char *list = oom_strdup(cfg->kafka_brokers), *save = NULL;
  size_t n = 0, ok = 0;
  char *names[64];
  rd_kafka_t *clients[64];
  char errs[64][512];
  for (char *b = strtok_r(list, ",", &save); b && n < 64; b = strtok_r(NULL, ",", &save)) {
    while (*b == ' ' || *b == '\t') b++;
    char *e = b + strlen(b);
    while (e > b && (e[-1] == ' ' || e[-1] == '\t')) *--e = '\0';
    if (!*b) continue;
    names[n] = b;
    errs[n][0] = '\0';
    clients[n] = client_new(cfg, b, errs[n], sizeof errs[n]); /* each starts connecting now */
    n++;
  }
  /* All of them in turn, a short request each, until each answered or the
   * bound passed: one broker that never answers takes no time from another. */
  int64_t start = clock_mono(clock);
  rd_kafka_resp_err_t last[64];
  bool done[64], refused[64];
  char why[64][1024];
  int64_t bound = 30000;
  for (size_t i = 0; i < n; i++) {
    done[i] = clients[i] == NULL;
    refused[i] = false;
    last[i] = RD_KAFKA_RESP_ERR__TIMED_OUT;
    if (clients[i]) bound = kafka_setup_timeout_ms(clients[i]); /* the same in every client */
  }
  for (bool pending = true; pending && clock_mono(clock) < start + bound;) {
    pending = false;
    for (size_t i = 0; i < n; i++) {
      if (done[i]) continue;
      int64_t step = start + bound - clock_mono(clock);
      step = step > 200 ? 200 : step < 1 ? 1 : step;
      const rd_kafka_metadata_t *md = NULL;
      last[i] = rd_kafka_metadata(clients[i], 0, NULL, &md, (int)step);
      if (md) rd_kafka_metadata_destroy(md);
      done[i] = last[i] == RD_KAFKA_RESP_ERR_NO_ERROR;
      /* A refusal (credentials, certificate) ends this broker's wait: it
       * does not heal by waiting. Served by the poll. */
      if (!done[i]) {
        rd_kafka_poll(clients[i], 0);
        done[i] = refused[i] = kafka_refusal(clients[i], false, why[i], sizeof why[i]) != KAFKA_REFUSAL_NONE;
      }
      pending = pending || !done[i];
    }
  }
  for (size_t i = 0; i < n; i++) {
    char line[1600];
    if (!clients[i]) {
      snprintf(line, sizeof line, "cannot reach Kafka broker %s: librdkafka: %s", names[i], errs[i]);
      report(err_out, line);
      *all = false;
      continue;
    }
    if (refused[i]) {
      snprintf(line, sizeof line, "cannot reach Kafka broker %s: %s", names[i], why[i]);
      report(err_out, line);
      *all = false;
    } else if (last[i]) {
      snprintf(line, sizeof line, "cannot reach Kafka broker %s within %lld ms: %s", names[i], (long long)bound,
               rd_kafka_err2str(last[i]));
      report(err_out, line);
      *all = false;
    } else {
      model_buf_printf(reached, "%s%s", ok ? ", " : "", names[i]);
      ok++;
    }
    rd_kafka_destroy(clients[i]);
  }
  free(list);
  return ok;
}

static void say_missing(void *ctx, kafka_grant_t grant, const char *key, const char *name, const char *line) {
  (void)grant, (void)key, (void)name;
  report(ctx, line);
}

/* The grants the worker needs (kafka_check_grants): one line per missing
 * one. True when none is missing, or when this librdkafka cannot ask (said
 * on a line of its own, which is no failure of the configuration). */
static bool check_grants(rd_kafka_t *rk, const config_t *cfg, FILE *err_out) {
  char why[1024], line[1200];
  unsigned which = KAFKA_CHECK_COMMANDS | KAFKA_CHECK_DLQ | KAFKA_CHECK_CHANGES | KAFKA_CHECK_GROUP;
  kafka_check_t chk = kafka_check_grants(rk, cfg, which, CONFIG_CONNECT_GRANTS_MS, say_missing, err_out, why,
                                         sizeof why);
  if (chk == KAFKA_CHECK_OK || chk == KAFKA_CHECK_DENIED) return chk == KAFKA_CHECK_OK;
  snprintf(line, sizeof line, "cannot check the grants: %s", why);
  report(err_out, line);
  return chk == KAFKA_CHECK_UNSUPPORTED;
}

/* The topics that must exist: kafka.topics, kafka.dlq_topic and, when set,
 * changes.topic (what `run` checks at start). */
static void check_topics(const config_t *cfg, const clock_source_t *clock, FILE *err_out, bool *all,
                         model_buf_t *reached) {
  char errstr[512], line[1200];
  rd_kafka_t *rk = client_new(cfg, cfg->kafka_brokers, errstr, sizeof errstr);
  if (!rk) {
    snprintf(line, sizeof line, "cannot check the topics: librdkafka: %s", errstr);
    report(err_out, line);
    *all = false;
    return;
  }
  char why[1024];
  kafka_check_t chk = kafka_check_topics(rk, cfg, true, clock, NULL, NULL, why, sizeof why);
  /* A topic the principal may not describe is named by the grants below,
   * with the grant it needs. */
  if (chk != KAFKA_CHECK_OK && chk != KAFKA_CHECK_DENIED) {
    snprintf(line, sizeof line, "cannot reach the topics: %s", why);
    report(err_out, line);
    *all = false;
  }
  if (chk == KAFKA_CHECK_OK || chk == KAFKA_CHECK_DENIED || chk == KAFKA_CHECK_MISSING) {
    bool granted = check_grants(rk, cfg, err_out);
    *all = *all && granted;
    if (chk == KAFKA_CHECK_OK && granted) {
      model_buf_printf(reached, "; topics %s and dead-letter topic %s", cfg->kafka_topics, cfg->kafka_dlq_topic);
      if (*cfg->changes_topic) model_buf_printf(reached, "; change topic %s", cfg->changes_topic);
    }
  }
  rd_kafka_destroy(rk);
}

static void check_store(const config_t *cfg, const clock_source_t *clock, FILE *err_out, bool *all,
                        model_buf_t *reached) {
  model_buf_t shown = MODEL_BUF_INIT;
  redact_uri(cfg->store_uri, &shown);
  char line[1024];
  sink_error_t err;
  store_t *store = store_new(cfg->store_uri, cfg->store_database, cfg->store_collection, cfg->store_write_concern,
                             &err);
  /* The store's log handler (installed by store_new) would print libmongoc's
   * own lines (a server without endSessions, each failed selection): what
   * could not be reached is said once, below. */
  mongoc_log_set_handler(NULL, NULL);
  sink_status_t st = SINK_FATAL;
  if (store) {
    int64_t deadline = clock_mono(clock) + cfg->store_connect_timeout_ms;
    /* A fault that waiting does not heal (store_ping_cause) ends the wait. */
    do st = store_ping(store, &err);
    while (st == SINK_RETRY && !store_ping_cause(store) && clock_mono(clock) < deadline);
  }
  if (st == SINK_OK) {
    model_buf_printf(reached, "; store %s", shown.data);
  } else if (store_ping_cause(store)) {
    snprintf(line, sizeof line, "cannot reach the store %s: %s", shown.data, err.message);
    report(err_out, line);
    *all = false;
  } else {
    snprintf(line, sizeof line, "cannot reach the store %s within store.connect_timeout_ms (%lld ms): %s", shown.data,
             (long long)cfg->store_connect_timeout_ms, err.message);
    report(err_out, line);
    *all = false;
  }
  store_destroy(store);
  model_buf_destroy(&shown);
}

bool config_connect_check(const config_t *cfg, const clock_source_t *clock, FILE *err_out, char *reached,
                          size_t reached_size) {
  bool all = true;
  model_buf_t r = MODEL_BUF_INIT;
  model_buf_puts(&r, "Kafka brokers ");
  if (check_brokers(cfg, clock, err_out, &all, &r))
    check_topics(cfg, clock, err_out, &all, &r);
  else {
    report(err_out, "cannot check the topics: no Kafka broker answered");
    all = false;
  }
  check_store(cfg, clock, err_out, &all, &r);
  snprintf(reached, reached_size, "%s", r.data);
  model_buf_destroy(&r);
  return all;
}
