/* The grants probe (kafka.h, kafka_check_grants): what the brokers say the
 * worker's principal may do on its topics and its group. */
#include "kafka.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/clock.h"
#include "base/redact.h"

/* The operations that grant what the worker does: ALL includes each. */
static bool has_op(const rd_kafka_AclOperation_t *ops, size_t n, rd_kafka_AclOperation_t want) {
  for (size_t i = 0; i < n; i++)
    if (ops[i] == want || ops[i] == RD_KAFKA_ACL_OPERATION_ALL) return true;
  return false;
}

/* "DESCRIBE, READ" (or "none") for a line that says what the principal has. */
static void ops_list(const rd_kafka_AclOperation_t *ops, size_t n, char *out, size_t size) {
  out[0] = '\0';
  for (size_t i = 0; i < n; i++) {
    size_t len = strlen(out);
    snprintf(out + len, size - len, "%s%s", i ? ", " : "", rd_kafka_AclOperation_name(ops[i]));
  }
  if (!out[0]) snprintf(out, size, "none");
}

static void user_of(rd_kafka_t *rk, char *out, size_t size) {
  size_t n = size;
  if (rd_kafka_conf_get(rd_kafka_conf(rk), "sasl.username", out, &n) != RD_KAFKA_CONF_OK || !out[0])
    snprintf(out, size, "ANONYMOUS");
}

/* Waits for the one result of an admin request on q; NULL when none came
 * within timeout_ms (err filled). */
static rd_kafka_event_t *await(rd_kafka_queue_t *q, int timeout_ms, const char *what, char *err, size_t errsz) {
  rd_kafka_event_t *ev = rd_kafka_queue_poll(q, timeout_ms);
  if (!ev) {
    snprintf(err, errsz, "no Kafka broker answered within %d ms to %s", timeout_ms, what);
    return NULL;
  }
  if (rd_kafka_event_error(ev)) {
    snprintf(err, errsz, "the brokers did not answer %s: %s", what, rd_kafka_event_error_string(ev));
    rd_kafka_event_destroy(ev);
    return NULL;
  }
  return ev;
}

typedef struct probe {
  rd_kafka_t *rk;
  kafka_grant_fn *missing;
  void *ctx;
  char user[256];
  int nmissing;
} probe_t;

static void say(probe_t *p, kafka_grant_t grant, const char *key, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void say(probe_t *p, kafka_grant_t grant, const char *key, const char *name, const char *fmt, ...) {
  char line[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(line, sizeof line, fmt, ap);
  va_end(ap);
  redact_set_scrub_str(redact_global(), line, sizeof line);
  p->nmissing++;
  if (p->missing) p->missing(p->ctx, grant, key, name, line);
}

#if RD_KAFKA_VERSION >= 0x020300ff /* DescribeTopics with authorized operations */

static kafka_check_t probe_topics(probe_t *p, const config_t *cfg, unsigned which, int timeout_ms, char *err,
                                  size_t errsz) {
  const char *names[66], *keys[66];
  size_t n = 0;
  rd_kafka_topic_partition_list_t *cmd = kafka_topic_list(cfg);
  if (which & KAFKA_CHECK_COMMANDS)
    for (int i = 0; i < cmd->cnt && n < 64; i++) names[n] = cmd->elems[i].topic, keys[n++] = "kafka.topics";
  if (which & KAFKA_CHECK_DLQ) names[n] = cfg->kafka_dlq_topic, keys[n++] = "kafka.dlq_topic";
  if ((which & KAFKA_CHECK_CHANGES) && *cfg->changes_topic) names[n] = cfg->changes_topic, keys[n++] = "changes.topic";
  kafka_check_t rc = KAFKA_CHECK_OK;
  if (!n) goto out;
  char errstr[256];
  rd_kafka_TopicCollection_t *tc = rd_kafka_TopicCollection_of_topic_names(names, n);
  rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(p->rk, RD_KAFKA_ADMIN_OP_DESCRIBETOPICS);
  rd_kafka_error_t *e = rd_kafka_AdminOptions_set_include_authorized_operations(o, 1);
  if (e) rd_kafka_error_destroy(e);
  rd_kafka_AdminOptions_set_request_timeout(o, timeout_ms, errstr, sizeof errstr);
  rd_kafka_queue_t *q = rd_kafka_queue_new(p->rk);
  rd_kafka_DescribeTopics(p->rk, tc, o, q);
  rd_kafka_event_t *ev = await(q, timeout_ms + 1000, "a description of the topics", err, errsz);
  if (!ev) {
    rc = KAFKA_CHECK_UNREACHABLE;
  } else {
    size_t cnt = 0;
    const rd_kafka_TopicDescription_t **d =
        rd_kafka_DescribeTopics_result_topics(rd_kafka_event_DescribeTopics_result(ev), &cnt);
    for (size_t i = 0; i < cnt; i++) {
      const char *name = rd_kafka_TopicDescription_name(d[i]), *key = "";
      for (size_t j = 0; j < n; j++)
        if (!strcmp(names[j], name)) key = keys[j];
      bool reads = !strcmp(key, "kafka.topics");
      kafka_grant_t grant = reads ? KAFKA_GRANT_TOPIC_READ : !strcmp(key, "kafka.dlq_topic") ? KAFKA_GRANT_DLQ_WRITE
                                                                                                : KAFKA_GRANT_CHANGES_WRITE;
      const char *need = reads ? "Read" : "Write";
      const rd_kafka_error_t *te = rd_kafka_TopicDescription_error(d[i]);
      rd_kafka_resp_err_t code = te ? rd_kafka_error_code(te) : RD_KAFKA_RESP_ERR_NO_ERROR;
      if (code == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED) {
        say(p, grant, key, name, "not authorized: user '%s' may not %s %s '%s' (no grant on it): it needs %s on the topic",
            p->user, reads ? "read" : "write to", key, name, need);
        continue;
      }
      if (code) continue; /* a missing topic: kafka_check_topic_set names it */
      size_t nops = 0;
      const rd_kafka_AclOperation_t *ops = rd_kafka_TopicDescription_authorized_operations(d[i], &nops);
      if (!ops) continue; /* a broker that does not say (before Kafka 2.3): nothing to tell */
      if (!has_op(ops, nops, reads ? RD_KAFKA_ACL_OPERATION_READ : RD_KAFKA_ACL_OPERATION_WRITE)) {
        char have[256];
        ops_list(ops, nops, have, sizeof have);
        say(p, grant, key, name, "not authorized: user '%s' may not %s %s '%s' (it may: %s): it needs %s on the topic",
            p->user, reads ? "read" : "write to", key, name, have, need);
      }
    }
    rd_kafka_event_destroy(ev);
  }
  rd_kafka_queue_destroy(q);
  rd_kafka_AdminOptions_destroy(o);
  rd_kafka_TopicCollection_destroy(tc);
out:
  rd_kafka_topic_partition_list_destroy(cmd);
  return rc;
}

static kafka_check_t probe_group(probe_t *p, const config_t *cfg, int timeout_ms, char *err, size_t errsz) {
  char errstr[256];
  const char *groups[] = {cfg->kafka_group};
  rd_kafka_AdminOptions_t *o = rd_kafka_AdminOptions_new(p->rk, RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS);
  rd_kafka_error_t *e = rd_kafka_AdminOptions_set_include_authorized_operations(o, 1);
  if (e) rd_kafka_error_destroy(e);
  rd_kafka_AdminOptions_set_request_timeout(o, timeout_ms, errstr, sizeof errstr);
  rd_kafka_queue_t *q = rd_kafka_queue_new(p->rk);
  rd_kafka_DescribeConsumerGroups(p->rk, groups, 1, o, q);
  kafka_check_t rc = KAFKA_CHECK_OK;
  rd_kafka_event_t *ev = await(q, timeout_ms + 1000, "a description of the group", err, errsz);
  if (!ev) {
    rc = KAFKA_CHECK_UNREACHABLE;
  } else {
    size_t cnt = 0;
    const rd_kafka_ConsumerGroupDescription_t **g =
        rd_kafka_DescribeConsumerGroups_result_groups(rd_kafka_event_DescribeConsumerGroups_result(ev), &cnt);
    for (size_t i = 0; i < cnt; i++) {
      const rd_kafka_error_t *ge = rd_kafka_ConsumerGroupDescription_error(g[i]);
      rd_kafka_resp_err_t code = ge ? rd_kafka_error_code(ge) : RD_KAFKA_RESP_ERR_NO_ERROR;
      if (code == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED) {
        say(p, KAFKA_GRANT_GROUP_READ, "kafka.group", cfg->kafka_group,
            "not authorized: user '%s' may not join kafka.group '%s' (no grant on it): it needs Read on the group",
            p->user, cfg->kafka_group);
        continue;
      }
      if (code) {
        snprintf(err, errsz, "the brokers did not describe kafka.group '%s': %s (%s)", cfg->kafka_group,
                 rd_kafka_error_string(ge), rd_kafka_error_name(ge));
        rc = KAFKA_CHECK_FAILED;
        continue;
      }
      size_t nops = 0;
      const rd_kafka_AclOperation_t *ops = rd_kafka_ConsumerGroupDescription_authorized_operations(g[i], &nops);
      if (ops && !has_op(ops, nops, RD_KAFKA_ACL_OPERATION_READ)) {
        char have[256];
        ops_list(ops, nops, have, sizeof have);
        say(p, KAFKA_GRANT_GROUP_READ, "kafka.group", cfg->kafka_group,
            "not authorized: user '%s' may not join kafka.group '%s' (it may: %s): it needs Read on the group",
            p->user, cfg->kafka_group, have);
      }
    }
    rd_kafka_event_destroy(ev);
  }
  rd_kafka_queue_destroy(q);
  rd_kafka_AdminOptions_destroy(o);
  return rc;
}

kafka_check_t kafka_check_grants(rd_kafka_t *rk, const config_t *cfg, unsigned which, int timeout_ms,
                                 kafka_grant_fn *missing, void *ctx, char *err, size_t errsz) {
  probe_t p = {rk, missing, ctx, "", 0};
  user_of(rk, p.user, sizeof p.user);
  err[0] = '\0';
  kafka_check_t rc = probe_topics(&p, cfg, which, timeout_ms, err, errsz);
  /* The group's coordinator may answer an error of its own for a while (it
   * is loading, or moved): asked again, in steps, until timeout_ms. */
  int64_t deadline = clock_mono(clock_system()) + timeout_ms;
  while (rc == KAFKA_CHECK_OK && (which & KAFKA_CHECK_GROUP)) {
    rc = probe_group(&p, cfg, timeout_ms, err, errsz);
    if (rc != KAFKA_CHECK_FAILED || clock_mono(clock_system()) + 200 >= deadline) break;
    rd_kafka_queue_t *pause = rd_kafka_queue_new(rk);
    rd_kafka_event_destroy(rd_kafka_queue_poll(pause, 200)); /* nothing comes: a pause of 200 ms */
    rd_kafka_queue_destroy(pause);
    rc = KAFKA_CHECK_OK;
  }
  if (rc == KAFKA_CHECK_UNREACHABLE && kafka_refusal(rk, false, err, errsz)) rc = KAFKA_CHECK_REFUSED;
  if (rc == KAFKA_CHECK_OK && p.nmissing) {
    snprintf(err, errsz, "user '%s' lacks %d grant%s the worker needs", p.user, p.nmissing, p.nmissing > 1 ? "s" : "");
    rc = KAFKA_CHECK_DENIED;
  }
  return rc;
}

#else

kafka_check_t kafka_check_grants(rd_kafka_t *rk, const config_t *cfg, unsigned which, int timeout_ms,
                                 kafka_grant_fn *missing, void *ctx, char *err, size_t errsz) {
  (void)rk, (void)cfg, (void)which, (void)timeout_ms, (void)missing, (void)ctx;
  snprintf(err, errsz, "this librdkafka (%s) cannot ask the brokers for the principal's grants (2.3 or later can)",
           rd_kafka_version_str());
  return KAFKA_CHECK_UNSUPPORTED;
}

#endif
