/* librdkafka plumbing shared by the live consumer and the replay: client
 * configuration from our config (brokers plus every kafka.rdkafka.* key
 * passed through to the clients that use it), the producers' set-up (the
 * dead-letter and change-event producers) and the dead-letter headers.
 *
 * Above config.h and log.h (it reads the configuration and logs); nothing
 * below it includes this header. */
#ifndef KAFKA_H
#define KAFKA_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/clock.h"
#include "command.h"
#include "config/config.h"

/* The librdkafka clients the worker creates. */
typedef enum { KAFKA_RUN_CONSUMER, KAFKA_DLQ_PRODUCER, KAFKA_REPLAY_CONSUMER, KAFKA_CHANGE_PRODUCER } kafka_client_t;

/* Where our defaults differ from librdkafka's, and why: one table that
 * configures the clients (kafka_conf_new) and writes the reference
 * (docs/CONFIG.md). Any kafka.rdkafka.* key overrides them. A classic_only
 * row applies with kafka.group_protocol = classic alone: the
 * next-generation protocol leaves the group's timing and assignment to the
 * broker, and librdkafka refuses a consumer given them. */
typedef struct kafka_default {
  kafka_client_t client;
  const char *name, *value, *why;
  bool classic_only;
} kafka_default_t;
extern const kafka_default_t kafka_defaults[];
extern const size_t kafka_defaults_count;
const char *kafka_client_name(kafka_client_t client);

/* Which clients librdkafka applies a property to: the "C/P" column of its
 * CONFIGURATION.md (C: consumers only, P: producers only, *: both). */
typedef enum { KAFKA_SCOPE_ANY, KAFKA_SCOPE_CONSUMER, KAFKA_SCOPE_PRODUCER } kafka_scope_t;
/* The scope of a librdkafka property (global or topic-level, aliases
 * included) as the linked librdkafka declares it; KAFKA_SCOPE_ANY for a
 * name it does not list (it then refuses the name itself). Thread-safe. */
kafka_scope_t kafka_property_scope(const char *name);
/* True when `client` uses properties of that scope. */
bool kafka_scope_applies(kafka_scope_t scope, kafka_client_t client);

/* A configuration with bootstrap.servers (and for the `run` consumer
 * group.protocol from kafka.group_protocol), then the client's kafka_defaults,
 * then the pass-through properties that apply to this client (a
 * consumer-only property never reaches the dead-letter producer,
 * whose librdkafka would warn about it at every start, and the other way
 * round; so operators can override our defaults), then `forced` (name, value
 * pairs, NULL-terminated: properties that correctness depends on, e.g.
 * enable.auto.commit=false). Returns NULL with errstr filled if librdkafka
 * refuses a property. */
rd_kafka_conf_t *kafka_conf_new(const config_t *cfg, kafka_client_t client, const char *const *forced,
                                char *errstr, size_t errsz);
/* A producer of the worker (KAFKA_DLQ_PRODUCER, KAFKA_CHANGE_PRODUCER):
 * kafka_conf_new's configuration with acks=all and enable.idempotence=true
 * forced (the worker commits past a message only once every in-sync
 * replica holds it, and a retry inside librdkafka neither duplicates nor
 * reorders it), whose delivery reports go to dr with opaque (the
 * rd_kafka_t's opaque). NULL with errstr filled when librdkafka refuses the
 * configuration. The caller destroys it (rd_kafka_destroy). */
typedef void kafka_dr_fn(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque);
rd_kafka_t *kafka_producer_new(const config_t *cfg, kafka_client_t client, kafka_dr_fn *dr, void *opaque,
                               char *errstr, size_t errsz);
/* Sets one property or fills errstr ("name: librdkafka's message"). */
bool kafka_conf_set(rd_kafka_conf_t *conf, const char *name, const char *value, char *errstr, size_t errsz);

/* Faults of a connection to a broker that waiting does not heal: the
 * broker refused the SASL credentials, or the TLS handshake failed (the
 * broker's certificate does not verify against ssl.ca.location, names
 * another host, or the broker wants a client certificate). */
typedef enum { KAFKA_REFUSAL_NONE, KAFKA_REFUSAL_CREDENTIALS, KAFKA_REFUSAL_TLS } kafka_refusal_t;
/* The last refusal rk's brokers gave, as its error callback saw it (the
 * callbacks of kafka_conf_new and kafka_conf_quiet record it; they run in
 * rd_kafka_poll, or in rd_kafka_consumer_poll once the main queue is the
 * consumer's): KAFKA_REFUSAL_NONE, or its kind with why (may be NULL) given
 * one line naming it ("credentials refused: SASL authentication failed for
 * user 'u' (SCRAM-SHA-512): librdkafka's reason", "the broker's
 * certificate does not verify (kafka.rdkafka.ssl.ca.location 'f'): ..."),
 * scrubbed of the secrets in redact_global(). With take, it is forgotten
 * once read. Thread-safe. */
kafka_refusal_t kafka_refusal(const rd_kafka_t *rk, bool take, char *why, size_t size);
/* A client that logs nothing (no log callback) and whose error callback
 * only records refusals for kafka_refusal: for a caller that reports what
 * it could not reach once, itself (`config check --connect`). */
void kafka_conf_quiet(rd_kafka_conf_t *conf);

/* Splits cfg->kafka_topics ("a, b,c") into a new list; caller destroys it. */
rd_kafka_topic_partition_list_t *kafka_topic_list(const config_t *cfg);

/* How long to wait for a broker: rk's socket.connection.setup.timeout.ms
 * (librdkafka's default, 30 s, when unset or not positive). */
int64_t kafka_setup_timeout_ms(rd_kafka_t *rk);

/* The start-up check: do the topics a command reads and writes exist?
 * `which` ORs KAFKA_CHECK_COMMANDS (kafka.topics), KAFKA_CHECK_DLQ
 * (kafka.dlq_topic) and KAFKA_CHECK_CHANGES (changes.topic, when it is set:
 * empty announces nothing, so there is nothing to check). Topics are never
 * auto-created (every client is configured with
 * allow.auto.create.topics=false), so a topic missing at start would
 * otherwise only show as a consumer that never gets a partition, or
 * rejects or writes whose offsets never commit.
 *
 * Asks the cluster through rk (any of our clients) for each topic's
 * metadata. A broker that does not answer is waited for as long as
 * librdkafka waits for a connection to be set up (rk's
 * socket.connection.setup.timeout.ms, 30 s by default, measured on clock),
 * in steps of at most a second; between steps rk's callbacks are served (rd_kafka_poll: call
 * this before rd_kafka_poll_set_consumer) so that librdkafka's reasons are
 * logged, and tick (may be NULL) is called: returning false ends the wait
 * (KAFKA_CHECK_STOPPED: a SIGTERM during start-up). A refusal
 * (kafka_refusal: credentials refused, a certificate that does not verify)
 * ends the wait at once, since waiting does not heal it. err gets one line
 * naming the missing topic(s) and their key, the topics the principal may
 * not even describe, the refusal, or why the cluster did not say. */
typedef enum {
  KAFKA_CHECK_OK,
  KAFKA_CHECK_MISSING,     /* the cluster answered: a topic does not exist */
  KAFKA_CHECK_UNREACHABLE, /* no broker answered within the timeout */
  KAFKA_CHECK_FAILED,      /* the cluster answered with another error */
  KAFKA_CHECK_STOPPED,     /* tick asked to stop */
  KAFKA_CHECK_REFUSED,     /* a broker refused the client (kafka_refusal) */
  KAFKA_CHECK_DENIED,      /* the principal lacks a grant (kafka_check_grants) or may not describe a topic */
  KAFKA_CHECK_UNSUPPORTED, /* this librdkafka cannot ask (kafka_check_grants before 2.3) */
} kafka_check_t;
/* A short name of a result for a log field: "missing topic", "unreachable",
 * "refused", "not authorized", ... */
const char *kafka_check_name(kafka_check_t chk);
enum { KAFKA_CHECK_COMMANDS = 1u, KAFKA_CHECK_DLQ = 2u, KAFKA_CHECK_CHANGES = 4u, KAFKA_CHECK_GROUP = 8u };
kafka_check_t kafka_check_topic_set(rd_kafka_t *rk, const config_t *cfg, unsigned which, const clock_source_t *clock,
                                    bool (*tick)(void *ctx), void *ctx, char *err, size_t errsz);
/* The command topics and, with `dlq`, every topic `run` writes: the
 * dead-letter topic and the change topic (when set). */
kafka_check_t kafka_check_topics(rd_kafka_t *rk, const config_t *cfg, bool dlq, const clock_source_t *clock,
                                 bool (*tick)(void *ctx), void *ctx, char *err, size_t errsz);

/* The grants the worker needs (SPEC.md section 5, "Security"). */
typedef enum {
  KAFKA_GRANT_TOPIC_READ,    /* Read on each of kafka.topics */
  KAFKA_GRANT_GROUP_READ,    /* Read on kafka.group */
  KAFKA_GRANT_DLQ_WRITE,     /* Write on kafka.dlq_topic */
  KAFKA_GRANT_CHANGES_WRITE, /* Write on changes.topic */
} kafka_grant_t;
/* One missing grant: on the resource `name` of the configuration key `key`,
 * with one line naming it ("not authorized: user 'u' may not read
 * kafka.topics 't' (it may: DESCRIBE): it needs Read on the topic"). */
typedef void kafka_grant_fn(void *ctx, kafka_grant_t grant, const char *key, const char *name, const char *line);
/* Asks the brokers, through rk, what its principal may do: on the topics
 * `which` names (KAFKA_CHECK_COMMANDS: Read; KAFKA_CHECK_DLQ and
 * KAFKA_CHECK_CHANGES: Write) with DescribeTopics, and on kafka.group
 * (KAFKA_CHECK_GROUP: Read) with DescribeConsumerGroups, both with the
 * authorized operations of KIP-430. They need only Describe, which Read
 * and Write include, and they read and write nothing: no message is
 * produced, no offset committed, no group joined. A resource the principal
 * may not even describe answers an authorization error, named the same.
 * Each missing grant goes to `missing` (may be NULL); a topic that does not
 * exist is not one (kafka_check_topic_set names it), nor is a broker that
 * does not list the operations (before Kafka 2.3).
 *
 * Waits up to timeout_ms (plus a second) for each of the two answers.
 * Returns KAFKA_CHECK_OK; KAFKA_CHECK_DENIED when a grant is missing;
 * KAFKA_CHECK_REFUSED (a refusal, kafka_refusal), KAFKA_CHECK_UNREACHABLE
 * or KAFKA_CHECK_FAILED when the brokers did not say; or
 * KAFKA_CHECK_UNSUPPORTED with a librdkafka before 2.3; err gets one line
 * unless OK. Call it before rd_kafka_poll_set_consumer or after: its
 * answers come on a queue of its own. */
kafka_check_t kafka_check_grants(rd_kafka_t *rk, const config_t *cfg, unsigned which, int timeout_ms,
                                 kafka_grant_fn *missing, void *ctx, char *err, size_t errsz);

/* A rejected message, as the dead-letter topic needs it: a consumed
 * message (kafka_source_of), or a copy of one held past its poll (a late
 * reject, batch_hold.h). Borrowed pointers. */
typedef struct kafka_source {
  const char *topic;
  int32_t partition;
  int64_t offset;
  const void *payload, *key; /* NULL when empty */
  size_t len, key_len;
} kafka_source_t;

static inline kafka_source_t kafka_source_of(const rd_kafka_message_t *m) {
  return (kafka_source_t){rd_kafka_topic_name(m->rkt), m->partition, m->offset, m->payload, m->key, m->len,
                          m->key_len};
}

/* The headers of a rejected command's dead letter: x-error-code, x-error-detail, x-source-topic, x-source-partition and
 * x-source-offset of src. Caller owns them (rd_kafka_producev takes them on
 * success). */
rd_kafka_headers_t *kafka_reject_headers(const kafka_source_t *src, const model_reject_t *rej);

#endif
