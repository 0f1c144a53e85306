#include "kafka.h"

#include "base/clock.h"
#include "base/log.h"
#include "base/redact.h"
#include "oom.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool kafka_conf_set(rd_kafka_conf_t *conf, const char *name, const char *value, char *errstr, size_t errsz) {
  char why[256];
  if (rd_kafka_conf_set(conf, name, value, why, sizeof why) == RD_KAFKA_CONF_OK) return true;
  snprintf(errstr, errsz, "%s: %s", name, why);
  return false;
}

static bool set_pairs(rd_kafka_conf_t *conf, const char *const *kv, char *errstr, size_t errsz) {
  for (; kv && kv[0]; kv += 2)
    if (!kafka_conf_set(conf, kv[0], kv[1], errstr, errsz)) return false;
  return true;
}

const kafka_default_t kafka_defaults[] = {
    /* The classic protocol (kafka.group_protocol = classic, for brokers
     * before 4.0) is eager: at every rebalance each member gives all its
     * partitions up through the revocation callback, which writes and
     * commits what it holds first (consumer.c), so the next owner starts
     * where the last one stopped. roundrobin rather than range: with several
     * topics it spreads all their partitions evenly, where range splits each
     * topic on its own. cooperative-sticky (measured in docs/BENCHMARKS.md)
     * stays an operator's choice. */
    {KAFKA_RUN_CONSUMER, "partition.assignment.strategy", "roundrobin",
     "eager: a join hands every partition over written and committed (measured against cooperative-sticky in "
     "docs/BENCHMARKS.md)", true},
    {KAFKA_RUN_CONSUMER, "auto.offset.reset", "earliest", "a new group starts from the oldest command", false},
    /* A member whose heartbeats go unanswered for this long gives its
     * partitions up as lost, uncommitted. When the broker holding the
     * group's coordinator dies, the classic protocol has no coordinator for
     * about 10 s (the cluster fences the broker, then the new coordinator
     * loads the group): with 10 s every member lost its partitions and the
     * group re-read thousands of commands (docs/OPERATIONS.md, Kafka down);
     * with Kafka's 45 s none did. The cost: a dead worker's partitions wait
     * 45 s. */
    {KAFKA_RUN_CONSUMER, "session.timeout.ms", "45000",
     "a broker's loss costs no member its partitions (10 s did); a dead worker's partitions wait this long", true},
    /* librdkafka stops fetching once the consumer's queue holds
     * queued.min.messages, and the high-level consumer forwards every
     * partition's queue to one queue, so the threshold counts all partitions
     * together. Its 2.0 series refetches a full queue only when the broker
     * thread next wakes, up to a second later: the queue holds about a second
     * of the merge so that the consumer never drains it and idles, and stays
     * small enough for a worker inside its memory bound
     * (batch.max_pending_bytes). */
    {KAFKA_RUN_CONSUMER, "queued.min.messages", "150000",
     "about a second of the merge: librdkafka 2.0 refetches a full queue only after up to 1 s", false},
    {KAFKA_RUN_CONSUMER, "queued.max.messages.kbytes", "32768", "a cap across many partitions", false},
    {KAFKA_DLQ_PRODUCER, "linger.ms", "5", "rejects are rare: send them at once (acks=all and idempotence are "
                                           "forced)", false},
    {KAFKA_DLQ_PRODUCER, "message.timeout.ms", "60000",
     "an undelivered reject is produced again by the worker; its offset stays uncommitted meanwhile", false},
    /* librdkafka waits this long, from the first produce to a topic, before
     * it believes the topic does not exist (in case its creation has not
     * reached every broker). The worker checks the topic at start, so a
     * missing one means it is deleted: rejects must fail loudly within a
     * second rather than wait silently for librdkafka's half a minute. */
    {KAFKA_DLQ_PRODUCER, "topic.metadata.propagation.max.ms", "1000",
     "a dead-letter topic deleted while running fails deliveries within a second (it is checked at start)", false},
    /* The change-event producer, as the dead-letter one: the worker produces
     * an undelivered event again itself, and a change topic deleted while
     * running fails loudly within a second (it is checked at start). */
    {KAFKA_CHANGE_PRODUCER, "message.timeout.ms", "60000",
     "an undelivered change event is produced again by the worker; the offsets of its writes stay uncommitted "
     "meanwhile", false},
    {KAFKA_CHANGE_PRODUCER, "topic.metadata.propagation.max.ms", "1000",
     "a change topic deleted while running fails deliveries within a second (it is checked at start)", false},
    /* A replay is bound by fetching: the queue stays far ahead of the
     * merge so that the fetcher never idles between refills. The replay's
     * partitions forward to the one consumer queue too, so both thresholds
     * count all of them together. */
    {KAFKA_REPLAY_CONSUMER, "queued.min.messages", "500000",
     "a replay is bound by fetching: keeps the consumer's queue ahead of the merge", false},
    {KAFKA_REPLAY_CONSUMER, "queued.max.messages.kbytes", "262144", "the same, at most 256 MiB of prefetch for all partitions together", false},
    {KAFKA_REPLAY_CONSUMER, "fetch.max.bytes", "104857600", "the same", false},
};
const size_t kafka_defaults_count = sizeof kafka_defaults / sizeof kafka_defaults[0];

/* --- property scopes -------------------------------------------------------- */

/* librdkafka knows each property's scope (its _RK_C/_RK_P flags) but has no
 * API to ask for it; rd_kafka_conf_properties_show() prints the same table
 * as CONFIGURATION.md, with the scope in its second column. Reading that
 * table from the linked library, rather than keeping our own copy, keeps the
 * answer right for whatever librdkafka the package manager installs; a
 * change of its format shows as every scope being KAFKA_SCOPE_ANY, which
 * unit.test_kafka_scope catches (and whose only harm is librdkafka's warning
 * at start about a property of the wrong scope). Parsed once, on first use. */
typedef struct scope_entry {
  char *name;
  kafka_scope_t scope;
} scope_entry_t;

static scope_entry_t *g_scopes;
static size_t g_nscopes;
static pthread_once_t g_scopes_once = PTHREAD_ONCE_INIT;

static char *trim(char *s, char *end) {
  while (s < end && (*s == ' ' || *s == '\t')) s++;
  while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\n')) end--;
  *end = '\0';
  return s;
}

static void scopes_load(void) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  if (!f) oom_abort();
  rd_kafka_conf_properties_show(f);
  fclose(f);
  size_t cap = 0;
  for (char *line = text, *next; line && *line; line = next) {
    next = strchr(line, '\n');
    if (next) *next++ = '\0';
    /* "name   |  C  | range | default | importance | description" */
    char *bar1 = strchr(line, '|'), *bar2 = bar1 ? strchr(bar1 + 1, '|') : NULL;
    if (!bar2) continue;
    char *name = trim(line, bar1), *col = trim(bar1 + 1, bar2);
    kafka_scope_t scope;
    if (!strcmp(col, "C")) scope = KAFKA_SCOPE_CONSUMER;
    else if (!strcmp(col, "P")) scope = KAFKA_SCOPE_PRODUCER;
    else if (!strcmp(col, "*")) scope = KAFKA_SCOPE_ANY;
    else continue; /* the header ("C/P") and the rulers */
    if (!*name || strchr(name, ' ')) continue;
    if (g_nscopes == cap) {
      cap = cap ? cap * 2 : 256;
      g_scopes = oom_realloc(g_scopes, cap * sizeof *g_scopes);
    }
    g_scopes[g_nscopes++] = (scope_entry_t){oom_strdup(name), scope};
  }
  free(text);
}

kafka_scope_t kafka_property_scope(const char *name) {
  pthread_once(&g_scopes_once, scopes_load);
  for (size_t i = 0; i < g_nscopes; i++)
    if (!strcmp(g_scopes[i].name, name)) return g_scopes[i].scope;
  return KAFKA_SCOPE_ANY;
}

bool kafka_scope_applies(kafka_scope_t scope, kafka_client_t client) {
  bool producer = client == KAFKA_DLQ_PRODUCER || client == KAFKA_CHANGE_PRODUCER;
  return scope == KAFKA_SCOPE_ANY || (scope == KAFKA_SCOPE_PRODUCER) == producer;
}

/* --- client configuration ------------------------------------------------------ */

const char *kafka_client_name(kafka_client_t client) {
  switch (client) {
    case KAFKA_RUN_CONSUMER: return "`run` consumer";
    case KAFKA_DLQ_PRODUCER: return "dead-letter producer";
    case KAFKA_CHANGE_PRODUCER: return "change-event producer";
    default: return "`replay` consumer";
  }
}

/* librdkafka's syslog levels onto ours, so its messages are structured log
 * lines like the rest.
 *
 * A broker failure (facility FAIL: "Connect to ... failed", a SASL
 * handshake refused, a connection closed by the peer) is logged by
 * rd_kafka_broker_set_error at the level it judges, and handed to error_cb
 * with its error code too when that level is LOG_ERR or worse. Those reach
 * us twice: error_cb's line is kept, since it names the error, and the FAIL
 * line dropped. Below LOG_ERR the FAIL line is the only report: a
 * connection that failed while it was not idle (librdkafka logs the idle
 * ones, the brokers' connection reaper, at debug level only), so a request
 * was in flight or had just been sent. That is a failure for the worker,
 * logged as a warning: a fetch cut in the middle again and again is
 * otherwise a worker that reads nothing and says nothing. */
static void log_cb(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
  bool fail = !strcmp(fac, "FAIL");
  if (fail && level <= 3) return;
  log_level_t l = level <= 3 ? LOG_LEVEL_ERROR : level == 4 || (fail && level <= 6) ? LOG_LEVEL_WARN
                  : level <= 6                                                      ? LOG_LEVEL_INFO
                                                                                    : LOG_LEVEL_DEBUG;
  log_emit(l, buf, "component", LOG_STR, "rdkafka", "client", LOG_STR, rd_kafka_name(rk), "facility", LOG_STR, fac,
           NULL);
}

/* --- refusals ------------------------------------------------------------------- */

/* The last refusal of each client, by its name (rd_kafka_name: unique in
 * the process, "aggregator#consumer-3"). librdkafka hands a broker's
 * failure only to the error callback, which has no room of its own per
 * client (the opaque is the client owner's), so the callbacks record here
 * and kafka_refusal reads. A few clients live at once; the oldest slot is
 * reused. */
typedef struct refusal_slot {
  char name[128];
  kafka_refusal_t kind;
  char why[1024];
} refusal_slot_t;

static refusal_slot_t g_refusals[16];
static size_t g_refusal_next;
static pthread_mutex_t g_refusal_lock = PTHREAD_MUTEX_INITIALIZER;

/* A property of rk's configuration, or "" when unset. */
static void conf_value(rd_kafka_t *rk, const char *name, char *out, size_t size) {
  size_t n = size;
  if (rd_kafka_conf_get(rd_kafka_conf(rk), name, out, &n) != RD_KAFKA_CONF_OK) out[0] = '\0';
}

/* Records a failure that waiting does not heal: a SASL authentication that
 * failed (__AUTHENTICATION), a TLS handshake that failed (__SSL: the
 * broker's certificate does not verify, or names another host, or the
 * broker asks for a client certificate). A handshake cut by a disconnect
 * is __TRANSPORT, an outage, and is not recorded. */
static void refusal_record(rd_kafka_t *rk, int err, const char *reason) {
  kafka_refusal_t kind = err == RD_KAFKA_RESP_ERR__AUTHENTICATION ? KAFKA_REFUSAL_CREDENTIALS
                         : err == RD_KAFKA_RESP_ERR__SSL          ? KAFKA_REFUSAL_TLS
                                                                  : KAFKA_REFUSAL_NONE;
  if (kind == KAFKA_REFUSAL_NONE) return;
  char why[1024], a[256], b[256];
  if (kind == KAFKA_REFUSAL_CREDENTIALS) {
    conf_value(rk, "sasl.username", a, sizeof a);
    conf_value(rk, "sasl.mechanisms", b, sizeof b);
    snprintf(why, sizeof why, "credentials refused: SASL authentication failed for user '%s' (%s): %s", a, b,
             reason);
  } else {
    conf_value(rk, "ssl.ca.location", a, sizeof a);
    bool verify = strstr(reason, "certificate verify failed") || strstr(reason, "verify broker certificate") ||
                  strstr(reason, "could not be verified");
    snprintf(why, sizeof why, "%s (kafka.rdkafka.ssl.ca.location '%s'): %s",
             verify ? "the broker's certificate does not verify" : "the TLS handshake failed",
             *a ? a : "the system's CAs", reason);
  }
  redact_set_scrub_str(redact_global(), why, sizeof why); /* a broker's text may quote anything */
  pthread_mutex_lock(&g_refusal_lock);
  refusal_slot_t *slot = NULL;
  for (size_t i = 0; i < sizeof g_refusals / sizeof *g_refusals && !slot; i++)
    if (!strcmp(g_refusals[i].name, rd_kafka_name(rk))) slot = &g_refusals[i];
  if (!slot) {
    slot = &g_refusals[g_refusal_next];
    g_refusal_next = (g_refusal_next + 1) % (sizeof g_refusals / sizeof *g_refusals);
    snprintf(slot->name, sizeof slot->name, "%s", rd_kafka_name(rk));
  }
  slot->kind = kind;
  snprintf(slot->why, sizeof slot->why, "%s", why);
  pthread_mutex_unlock(&g_refusal_lock);
}

kafka_refusal_t kafka_refusal(const rd_kafka_t *rk, bool take, char *why, size_t size) {
  kafka_refusal_t kind = KAFKA_REFUSAL_NONE;
  if (why && size) why[0] = '\0';
  pthread_mutex_lock(&g_refusal_lock);
  for (size_t i = 0; i < sizeof g_refusals / sizeof *g_refusals; i++) {
    refusal_slot_t *s = &g_refusals[i];
    if (s->kind == KAFKA_REFUSAL_NONE || strcmp(s->name, rd_kafka_name(rk))) continue;
    kind = s->kind;
    if (why && size) snprintf(why, size, "%s", s->why);
    if (take) s->kind = KAFKA_REFUSAL_NONE;
  }
  pthread_mutex_unlock(&g_refusal_lock);
  return kind;
}

static void error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
  (void)opaque;
  refusal_record(rk, err, reason);
  /* Most are transient (broker down): librdkafka retries by itself. A
   * refusal is not: an operator has to act. */
  bool refused = err == RD_KAFKA_RESP_ERR__AUTHENTICATION || err == RD_KAFKA_RESP_ERR__SSL;
  log_emit(err == RD_KAFKA_RESP_ERR__FATAL || refused ? LOG_LEVEL_ERROR : LOG_LEVEL_WARN, reason, "component",
           LOG_STR, "rdkafka", "client", LOG_STR, rd_kafka_name(rk), "error", LOG_STR,
           rd_kafka_err2name((rd_kafka_resp_err_t)err), NULL);
}

/* Records refusals, logs nothing (kafka_conf_quiet). */
static void quiet_error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
  (void)opaque;
  refusal_record(rk, err, reason);
}

void kafka_conf_quiet(rd_kafka_conf_t *conf) {
  rd_kafka_conf_set_log_cb(conf, NULL);
  rd_kafka_conf_set_error_cb(conf, quiet_error_cb);
}

rd_kafka_conf_t *kafka_conf_new(const config_t *cfg, kafka_client_t client, const char *const *forced,
                                char *errstr, size_t errsz) {
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  bool ok = kafka_conf_set(conf, "bootstrap.servers", cfg->kafka_brokers, errstr, errsz) &&
            kafka_conf_set(conf, "client.id", "aggregator", errstr, errsz);
  bool classic = cfg->kafka_group_protocol == CONFIG_GROUP_PROTOCOL_CLASSIC;
  if (client == KAFKA_RUN_CONSUMER)
    ok = ok && kafka_conf_set(conf, "group.protocol", classic ? "classic" : "consumer", errstr, errsz);
  for (size_t i = 0; ok && i < kafka_defaults_count; i++)
    if (kafka_defaults[i].client == client && (classic || !kafka_defaults[i].classic_only))
      ok = kafka_conf_set(conf, kafka_defaults[i].name, kafka_defaults[i].value, errstr, errsz);
  for (size_t i = 0; ok && i < cfg->rdkafka_count; i++)
    if (kafka_scope_applies(kafka_property_scope(cfg->rdkafka[i].name), client))
      ok = kafka_conf_set(conf, cfg->rdkafka[i].name, cfg->rdkafka[i].value, errstr, errsz);
  /* Topics are never auto-created: an operator creates them with the
   * partitions and retention they need (a producer's librdkafka default
   * would ask the broker to). */
  ok = ok && set_pairs(conf, forced, errstr, errsz) &&
       kafka_conf_set(conf, "allow.auto.create.topics", "false", errstr, errsz);
  rd_kafka_conf_set_log_cb(conf, log_cb);
  rd_kafka_conf_set_error_cb(conf, error_cb);
  if (!ok) {
    rd_kafka_conf_destroy(conf);
    return NULL;
  }
  return conf;
}

rd_kafka_t *kafka_producer_new(const config_t *cfg, kafka_client_t client, kafka_dr_fn *dr, void *opaque,
                               char *errstr, size_t errsz) {
  const char *forced[] = {"acks", "all", "enable.idempotence", "true", NULL};
  rd_kafka_conf_t *conf = kafka_conf_new(cfg, client, forced, errstr, errsz);
  if (!conf) return NULL;
  rd_kafka_conf_set_dr_msg_cb(conf, dr);
  rd_kafka_conf_set_opaque(conf, opaque);
  rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, errsz); /* takes conf on success only */
  if (!rk) rd_kafka_conf_destroy(conf);
  return rk;
}

rd_kafka_topic_partition_list_t *kafka_topic_list(const config_t *cfg) {
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new(4);
  char *copy = oom_strdup(cfg->kafka_topics), *save = NULL;
  for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
    while (*t == ' ' || *t == '\t') t++;
    char *end = t + strlen(t);
    while (end > t && (end[-1] == ' ' || end[-1] == '\t')) *--end = '\0';
    if (*t) rd_kafka_topic_partition_list_add(l, t, RD_KAFKA_PARTITION_UA);
  }
  free(copy);
  return l;
}

/* --- start-up check ------------------------------------------------------------ */

int64_t kafka_setup_timeout_ms(rd_kafka_t *rk) {
  char v[32];
  size_t n = sizeof v;
  long long ms = 30000;
  if (rd_kafka_conf_get(rd_kafka_conf(rk), "socket.connection.setup.timeout.ms", v, &n) == RD_KAFKA_CONF_OK)
    ms = strtoll(v, NULL, 10);
  return ms > 0 ? ms : 30000;
}

/* Appends "key 'topic'" to a comma-separated list in out. */
static void append_named(char *out, size_t size, const char *key, const char *topic) {
  size_t len = strlen(out);
  if (len < size) snprintf(out + len, size - len, "%s%s '%s'", len ? ", " : "", key, topic);
}

kafka_check_t kafka_check_topics(rd_kafka_t *rk, const config_t *cfg, bool dlq, const clock_source_t *clock,
                                 bool (*tick)(void *ctx), void *ctx, char *err, size_t errsz) {
  unsigned which = KAFKA_CHECK_COMMANDS | (dlq ? KAFKA_CHECK_DLQ | KAFKA_CHECK_CHANGES : 0u);
  return kafka_check_topic_set(rk, cfg, which, clock, tick, ctx, err, errsz);
}

kafka_check_t kafka_check_topic_set(rd_kafka_t *rk, const config_t *cfg, unsigned which, const clock_source_t *clock,
                                    bool (*tick)(void *ctx), void *ctx, char *err, size_t errsz) {
  /* Each topic with the key that names it: the list's opaque. */
  rd_kafka_topic_partition_list_t *topics =
      which & KAFKA_CHECK_COMMANDS ? kafka_topic_list(cfg) : rd_kafka_topic_partition_list_new(2);
  for (int i = 0; i < topics->cnt; i++) topics->elems[i].opaque = (void *)"kafka.topics";
  if (which & KAFKA_CHECK_DLQ)
    rd_kafka_topic_partition_list_add(topics, cfg->kafka_dlq_topic, RD_KAFKA_PARTITION_UA)->opaque =
        (void *)"kafka.dlq_topic";
  if ((which & KAFKA_CHECK_CHANGES) && *cfg->changes_topic)
    rd_kafka_topic_partition_list_add(topics, cfg->changes_topic, RD_KAFKA_PARTITION_UA)->opaque =
        (void *)"changes.topic";
  int64_t timeout = kafka_setup_timeout_ms(rk), deadline = clock_mono(clock) + timeout;
  char missing[400] = "", denied[400] = "";
  int nmissing = 0, ndenied = 0;
  kafka_check_t rc = KAFKA_CHECK_OK;
  err[0] = '\0';
  for (int i = 0; i < topics->cnt && rc == KAFKA_CHECK_OK; i++) {
    const char *name = topics->elems[i].topic;
    const char *key = topics->elems[i].opaque;
    rd_kafka_topic_t *t = rd_kafka_topic_new(rk, name, NULL);
    if (!t) {
      snprintf(err, errsz, "%s '%s': %s", key, name, rd_kafka_err2str(rd_kafka_last_error()));
      rc = KAFKA_CHECK_FAILED;
      break;
    }
    for (;;) {
      int64_t step = deadline - clock_mono(clock);
      step = step > 1000 ? 1000 : step < 1 ? 1 : step;
      const rd_kafka_metadata_t *md = NULL;
      rd_kafka_resp_err_t e = rd_kafka_metadata(rk, 0, t, &md, (int)step);
      if (e == RD_KAFKA_RESP_ERR__TRANSPORT || e == RD_KAFKA_RESP_ERR__TIMED_OUT) {
        if (clock_mono(clock) >= deadline) {
          snprintf(err, errsz,
                   "no Kafka broker answered within %lld s to check that the topics exist (kafka.brokers %s: "
                   "unreachable, or refusing this client; see librdkafka's lines above): %s",
                   (long long)(timeout / 1000), cfg->kafka_brokers, rd_kafka_err2str(e));
          rc = KAFKA_CHECK_UNREACHABLE;
        } else if (rd_kafka_poll(rk, 0), kafka_refusal(rk, true, err, errsz)) {
          /* error_cb, served by the poll, logged it too: waiting does not
           * heal it, so the wait ends at the first. */
          rc = KAFKA_CHECK_REFUSED;
        } else if (tick && !tick(ctx)) {
          rc = KAFKA_CHECK_STOPPED;
        } else {
          continue;
        }
        break;
      }
      if (e) {
        snprintf(err, errsz, "cannot read the metadata of %s '%s': %s", key, name, rd_kafka_err2str(e));
        rc = KAFKA_CHECK_FAILED;
        break;
      }
      rd_kafka_resp_err_t te = md->topic_cnt == 1 ? md->topics[0].err : RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
      /* LEADER_NOT_AVAILABLE: it exists, its leader is being elected. */
      if (te == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART) {
        append_named(missing, sizeof missing, key, name);
        nmissing++;
      } else if (te == RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED) {
        /* Not even Describe: whether it exists is not said either. */
        append_named(denied, sizeof denied, key, name);
        ndenied++;
      } else if (te && te != RD_KAFKA_RESP_ERR_LEADER_NOT_AVAILABLE) {
        snprintf(err, errsz, "the brokers refuse the metadata of %s '%s': %s", key, name, rd_kafka_err2str(te));
        rc = KAFKA_CHECK_FAILED;
      }
      rd_kafka_metadata_destroy(md);
      break;
    }
    rd_kafka_topic_destroy(t);
  }
  rd_kafka_topic_partition_list_destroy(topics);
  if (rc == KAFKA_CHECK_OK && ndenied) {
    char user[256];
    conf_value(rk, "sasl.username", user, sizeof user);
    snprintf(err, errsz,
             "not authorized: the brokers do not let user '%s' describe %s (the worker needs Read on its command "
             "topics, Write on the dead-letter and change topics)",
             *user ? user : "ANONYMOUS", denied);
    rc = KAFKA_CHECK_DENIED;
  } else if (rc == KAFKA_CHECK_OK && nmissing) {
    snprintf(err, errsz, "%s %s not exist on the brokers (%s); topics are never auto-created: create %s first",
             missing, nmissing > 1 ? "do" : "does", cfg->kafka_brokers, nmissing > 1 ? "them" : "it");
    rc = KAFKA_CHECK_MISSING;
  }
  return rc;
}

const char *kafka_check_name(kafka_check_t chk) {
  switch (chk) {
    case KAFKA_CHECK_OK: return "ok";
    case KAFKA_CHECK_MISSING: return "missing topic";
    case KAFKA_CHECK_UNREACHABLE: return "unreachable";
    case KAFKA_CHECK_REFUSED: return "refused";
    case KAFKA_CHECK_DENIED: return "not authorized";
    case KAFKA_CHECK_STOPPED: return "stopped";
    case KAFKA_CHECK_UNSUPPORTED: return "unsupported";
    default: return "failed";
  }
}

rd_kafka_headers_t *kafka_reject_headers(const kafka_source_t *src, const model_reject_t *rej) {
  char partition[16], offset[24];
  snprintf(partition, sizeof partition, "%" PRId32, src->partition);
  snprintf(offset, sizeof offset, "%" PRId64, src->offset);
  rd_kafka_headers_t *h = rd_kafka_headers_new(5);
  rd_kafka_header_add(h, "x-error-code", -1, model_reject_code_name(rej->code), -1);
  rd_kafka_header_add(h, "x-error-detail", -1, rej->detail, -1);
  rd_kafka_header_add(h, "x-source-topic", -1, src->topic, -1);
  rd_kafka_header_add(h, "x-source-partition", -1, partition, -1);
  rd_kafka_header_add(h, "x-source-offset", -1, offset, -1);
  return h;
}
