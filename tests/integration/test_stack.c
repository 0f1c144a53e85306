/* test_stack.c -- proves the local stack (scripts/stack) is the real thing,
 * and pins down the store behaviour the writer is designed around.
 *
 * Kafka: topics are not auto-created; a topic created through the admin API
 * gets the stack's default partition count; messages with keys and headers
 * go through the broker and come back to a consumer group, whose committed
 * offsets the broker keeps.
 *
 * FerretDB (on PostgreSQL, the stack's default, or on SQLite with
 * AGG_STORE_BACKEND=sqlite: both behave the same here, and both backends
 * pass): documents with the BSON types of docs/DOCUMENT.md round-trip; the
 * conflict signal of section 4 (a conditional upsert whose {_id, rev} filter
 * matches nothing while the _id exists fails with duplicate key 11000);
 * what an unordered bulk of such writes reports, with and without a
 * conflict (FerretDB v1 deviates from MongoDB here, see
 * mongo_unordered_bulk_with_conflict); the configured write concerns are
 * accepted; data survives `scripts/stack mongo-stop` / `mongo-start`.
 *
 * Environment: AGG_KAFKA_BROKERS (127.0.0.1:19092), AGG_MONGO_URI
 * (mongodb://127.0.0.1:27018), AGG_SOURCE_DIR (set by ctest; locates
 * scripts/stack).
 */

#include <check.h>
#include <librdkafka/rdkafka.h>
#include <mongoc/mongoc.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define TEST_DB "agg_stack_test"
#define DUP_KEY 11000

static const char *env_or(const char *name, const char *fallback)
{
    const char *v = getenv(name);
    return (v && *v) ? v : fallback;
}

static const char *brokers(void) { return env_or("AGG_KAFKA_BROKERS", "127.0.0.1:19092"); }
static const char *mongo_uri(void) { return env_or("AGG_MONGO_URI", "mongodb://127.0.0.1:27018"); }

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Names unique per run, so that a long-lived stack shared by several runs
 * never mixes their topics, groups or collections. */
static void unique_name(char *buf, size_t len, const char *prefix)
{
    static unsigned seq;
    snprintf(buf, len, "%s_%ld_%ld_%u", prefix, (long)getpid(), (long)time(NULL), seq++);
}

/* ------------------------------------------------------------------ Kafka */

static rd_kafka_conf_t *kafka_conf(void)
{
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    ck_assert_msg(rd_kafka_conf_set(conf, "bootstrap.servers", brokers(), err, sizeof err) ==
                      RD_KAFKA_CONF_OK, "%s", err);
    return conf;
}

static void conf_set(rd_kafka_conf_t *conf, const char *key, const char *value)
{
    char err[512];
    ck_assert_msg(rd_kafka_conf_set(conf, key, value, err, sizeof err) == RD_KAFKA_CONF_OK,
                  "%s=%s: %s", key, value, err);
}

static rd_kafka_t *kafka_new(rd_kafka_type_t type, rd_kafka_conf_t *conf)
{
    char err[512];
    rd_kafka_t *rk = rd_kafka_new(type, conf, err, sizeof err);
    ck_assert_msg(rk != NULL, "rd_kafka_new: %s", err);
    return rk;
}

/* Metadata for one topic: returns its error code, and its partition count
 * through *partitions. */
static rd_kafka_resp_err_t topic_metadata(rd_kafka_t *rk, const char *topic, int *partitions)
{
    rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
    const struct rd_kafka_metadata *md = NULL;
    rd_kafka_resp_err_t err = rd_kafka_metadata(rk, 0, rkt, &md, 10000);
    ck_assert_msg(err == RD_KAFKA_RESP_ERR_NO_ERROR, "metadata request: %s", rd_kafka_err2str(err));
    ck_assert_int_eq(md->topic_cnt, 1);
    ck_assert_str_eq(md->topics[0].topic, topic);
    err = md->topics[0].err;
    *partitions = md->topics[0].partition_cnt;
    rd_kafka_metadata_destroy(md);
    rd_kafka_topic_destroy(rkt);
    return err;
}

static void create_topic(rd_kafka_t *rk, const char *topic, int partitions)
{
    char err[512];
    rd_kafka_NewTopic_t *nt = rd_kafka_NewTopic_new(topic, partitions, 1, err, sizeof err);
    ck_assert_msg(nt != NULL, "NewTopic: %s", err);
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_CreateTopics(rk, &nt, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
    ck_assert_msg(ev != NULL, "CreateTopics: no result within 30 s");
    ck_assert_int_eq(rd_kafka_event_type(ev), RD_KAFKA_EVENT_CREATETOPICS_RESULT);
    ck_assert_msg(rd_kafka_event_error(ev) == RD_KAFKA_RESP_ERR_NO_ERROR, "CreateTopics: %s",
                  rd_kafka_event_error_string(ev));
    size_t n = 0;
    const rd_kafka_topic_result_t **res =
        rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
    ck_assert_uint_eq(n, 1);
    ck_assert_msg(rd_kafka_topic_result_error(res[0]) == RD_KAFKA_RESP_ERR_NO_ERROR,
                  "CreateTopics %s: %s", topic, rd_kafka_topic_result_error_string(res[0]));
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_NewTopic_destroy(nt);
}

START_TEST(kafka_does_not_auto_create_topics)
{
    char topic[128];
    unique_name(topic, sizeof topic, "agg-stack-missing");
    rd_kafka_conf_t *conf = kafka_conf();
    /* The client asks for auto-creation; only the broker's refusal
     * (auto.create.topics.enable=false) can keep the topic absent. */
    conf_set(conf, "allow.auto.create.topics", "true");
    rd_kafka_t *rk = kafka_new(RD_KAFKA_PRODUCER, conf);

    int partitions = -1;
    ck_assert_int_eq(topic_metadata(rk, topic, &partitions), RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
    ck_assert_int_eq(topic_metadata(rk, topic, &partitions), RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART);
    /* A creation could still be under way after those answers (a sleep
     * would only guess how long one takes): ask the broker for the setting
     * that refuses it. */
    rd_kafka_ConfigResource_t *res = rd_kafka_ConfigResource_new(RD_KAFKA_RESOURCE_BROKER, "1");
    rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
    rd_kafka_DescribeConfigs(rk, &res, 1, NULL, q);
    rd_kafka_event_t *ev = rd_kafka_queue_poll(q, 30000);
    ck_assert_msg(ev != NULL, "DescribeConfigs: no result within 30 s");
    ck_assert_msg(rd_kafka_event_error(ev) == RD_KAFKA_RESP_ERR_NO_ERROR, "DescribeConfigs: %s",
                  rd_kafka_event_error_string(ev));
    size_t n = 0;
    const rd_kafka_ConfigResource_t **got =
        rd_kafka_DescribeConfigs_result_resources(rd_kafka_event_DescribeConfigs_result(ev), &n);
    ck_assert_uint_eq(n, 1);
    size_t nconf = 0;
    const rd_kafka_ConfigEntry_t **entries = rd_kafka_ConfigResource_configs(got[0], &nconf);
    const char *value = NULL;
    for (size_t i = 0; i < nconf; i++)
        if (!strcmp(rd_kafka_ConfigEntry_name(entries[i]), "auto.create.topics.enable"))
            value = rd_kafka_ConfigEntry_value(entries[i]);
    ck_assert_msg(value && !strcmp(value, "false"), "auto.create.topics.enable is %s", value ? value : "absent");
    rd_kafka_event_destroy(ev);
    rd_kafka_queue_destroy(q);
    rd_kafka_ConfigResource_destroy(res);
    rd_kafka_destroy(rk);
}
END_TEST

#define N_MESSAGES 60

struct delivery {
    int ok;
    int failed;
    rd_kafka_resp_err_t last_err;
};

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque)
{
    (void)rk;
    struct delivery *d = opaque;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        d->ok++;
    } else {
        d->failed++;
        d->last_err = m->err;
    }
}

/* Creates topic with the broker's default partition count (the stack sets
 * 6) and produces N_MESSAGES keyed messages with a header to it. */
static void create_and_produce(const char *topic)
{
    struct delivery d = {0};
    rd_kafka_conf_t *pconf = kafka_conf();
    conf_set(pconf, "acks", "all");
    conf_set(pconf, "enable.idempotence", "true");
    rd_kafka_conf_set_dr_msg_cb(pconf, on_delivery);
    rd_kafka_conf_set_opaque(pconf, &d);
    rd_kafka_t *producer = kafka_new(RD_KAFKA_PRODUCER, pconf);
    create_topic(producer, topic, -1);

    int partitions = 0;
    rd_kafka_resp_err_t merr = RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART;
    for (int64_t deadline = now_ms() + 15000; now_ms() < deadline;) {
        merr = topic_metadata(producer, topic, &partitions);
        if (merr == RD_KAFKA_RESP_ERR_NO_ERROR && partitions > 0)
            break;
        usleep(200 * 1000);
    }
    ck_assert_msg(merr == RD_KAFKA_RESP_ERR_NO_ERROR, "new topic metadata: %s", rd_kafka_err2str(merr));
    ck_assert_int_eq(partitions, 6);

    for (int i = 0; i < N_MESSAGES; i++) {
        char key[32], value[32];
        snprintf(key, sizeof key, "key-%d", i);
        snprintf(value, sizeof value, "value-%d", i);
        rd_kafka_resp_err_t err = rd_kafka_producev(
            producer, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(key, strlen(key)),
            RD_KAFKA_V_VALUE(value, strlen(value)), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
            RD_KAFKA_V_HEADER("x-index", key + 4, (ssize_t)strlen(key + 4)), RD_KAFKA_V_END);
        ck_assert_msg(err == RD_KAFKA_RESP_ERR_NO_ERROR, "producev: %s", rd_kafka_err2str(err));
    }
    ck_assert_int_eq(rd_kafka_flush(producer, 30000), RD_KAFKA_RESP_ERR_NO_ERROR);
    ck_assert_msg(d.failed == 0, "%d deliveries failed, last: %s", d.failed, rd_kafka_err2str(d.last_err));
    ck_assert_int_eq(d.ok, N_MESSAGES);
    rd_kafka_destroy(producer);
}

/* Checks one consumed message (value, key and header agree, not seen
 * before) and marks it in seen. */
static void check_message(const rd_kafka_message_t *m, int *seen)
{
    int i = -1;
    char value[32];
    ck_assert_uint_lt(m->len, sizeof value);
    memcpy(value, m->payload, m->len);
    value[m->len] = '\0';
    ck_assert_int_eq(sscanf(value, "value-%d", &i), 1);
    ck_assert_int_ge(i, 0);
    ck_assert_int_lt(i, N_MESSAGES);
    ck_assert_msg(!seen[i], "message %d delivered twice", i);
    seen[i] = 1;

    char key[32];
    snprintf(key, sizeof key, "key-%d", i);
    ck_assert_uint_eq(m->key_len, strlen(key));
    ck_assert_int_eq(memcmp(m->key, key, m->key_len), 0);
    rd_kafka_headers_t *hdrs = NULL;
    ck_assert_int_eq(rd_kafka_message_headers(m, &hdrs), RD_KAFKA_RESP_ERR_NO_ERROR);
    const void *hv = NULL;
    size_t hlen = 0;
    ck_assert_int_eq(rd_kafka_header_get_last(hdrs, "x-index", &hv, &hlen), RD_KAFKA_RESP_ERR_NO_ERROR);
    ck_assert_uint_eq(hlen, strlen(key + 4));
    ck_assert_int_eq(memcmp(hv, key + 4, hlen), 0);
}

/* Commits synchronously and reads the committed offsets back from the
 * group coordinator: they sum to the number of messages. */
static void check_committed(rd_kafka_t *consumer, const char *topic)
{
    ck_assert_int_eq(rd_kafka_commit(consumer, NULL, 0), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(6);
    for (int p = 0; p < 6; p++)
        rd_kafka_topic_partition_list_add(parts, topic, p);
    ck_assert_int_eq(rd_kafka_committed(consumer, parts, 10000), RD_KAFKA_RESP_ERR_NO_ERROR);
    int64_t total = 0;
    for (int p = 0; p < parts->cnt; p++) {
        ck_assert_int_eq(parts->elems[p].err, RD_KAFKA_RESP_ERR_NO_ERROR);
        if (parts->elems[p].offset > 0)
            total += parts->elems[p].offset;
    }
    ck_assert_int_eq(total, N_MESSAGES);
    rd_kafka_topic_partition_list_destroy(parts);
}

START_TEST(kafka_create_produce_consume_commit)
{
    char topic[128], group[128];
    unique_name(topic, sizeof topic, "agg-stack-topic");
    unique_name(group, sizeof group, "agg-stack-group");
    create_and_produce(topic);

    rd_kafka_conf_t *cconf = kafka_conf();
    conf_set(cconf, "group.id", group);
    conf_set(cconf, "auto.offset.reset", "earliest");
    conf_set(cconf, "enable.auto.commit", "false");
    rd_kafka_t *consumer = kafka_new(RD_KAFKA_CONSUMER, cconf);
    rd_kafka_poll_set_consumer(consumer);
    rd_kafka_topic_partition_list_t *sub = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(sub, topic, RD_KAFKA_PARTITION_UA);
    ck_assert_int_eq(rd_kafka_subscribe(consumer, sub), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_topic_partition_list_destroy(sub);

    int seen[N_MESSAGES] = {0};
    int received = 0;
    for (int64_t deadline = now_ms() + 60000; received < N_MESSAGES && now_ms() < deadline;) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, 500);
        if (!m)
            continue;
        if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
            rd_kafka_message_destroy(m);
            continue;
        }
        ck_assert_msg(m->err == RD_KAFKA_RESP_ERR_NO_ERROR, "consume: %s", rd_kafka_message_errstr(m));
        check_message(m, seen);
        received++;
        rd_kafka_message_destroy(m);
    }
    ck_assert_int_eq(received, N_MESSAGES);
    check_committed(consumer, topic);

    ck_assert_int_eq(rd_kafka_consumer_close(consumer), RD_KAFKA_RESP_ERR_NO_ERROR);
    rd_kafka_destroy(consumer);
}
END_TEST

/* -------------------------------------------------------------- FerretDB */

static mongoc_client_t *client;
static mongoc_collection_t *coll;

static mongoc_client_t *mongo_client(int32_t server_selection_timeout_ms)
{
    bson_error_t error;
    mongoc_uri_t *uri = mongoc_uri_new_with_error(mongo_uri(), &error);
    ck_assert_msg(uri != NULL, "AGG_MONGO_URI: %s", error.message);
    if (server_selection_timeout_ms > 0) {
        mongoc_uri_set_option_as_int32(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, server_selection_timeout_ms);
        mongoc_uri_set_option_as_int32(uri, MONGOC_URI_CONNECTTIMEOUTMS, server_selection_timeout_ms);
    }
    mongoc_client_t *c = mongoc_client_new_from_uri(uri);
    ck_assert_ptr_nonnull(c);
    mongoc_uri_destroy(uri);
    ck_assert(mongoc_client_set_error_api(c, MONGOC_ERROR_API_VERSION_2));
    mongoc_client_set_appname(c, "agg-test-stack");
    return c;
}

static void mongo_setup(void)
{
    char name[128];
    unique_name(name, sizeof name, "stack");
    client = mongo_client(0);
    coll = mongoc_client_get_collection(client, TEST_DB, name);
}

static void mongo_teardown(void)
{
    bson_error_t error;
    if (coll && !mongoc_collection_drop_with_opts(coll, NULL, &error))
        fprintf(stderr, "test_stack: dropping %s: %s\n", mongoc_collection_get_name(coll), error.message);
    mongoc_collection_destroy(coll);
    mongoc_client_destroy(client);
    coll = NULL;
    client = NULL;
}

/* Reads the document with this _id into *out; false if there is none. */
static bool find_by_id(mongoc_collection_t *c, const char *id, bson_t *out)
{
    bson_t *filter = BCON_NEW("_id", BCON_UTF8(id));
    mongoc_cursor_t *cur = mongoc_collection_find_with_opts(c, filter, NULL, NULL);
    const bson_t *doc;
    bool found = mongoc_cursor_next(cur, &doc);
    if (found)
        bson_copy_to(doc, out);
    bson_error_t error;
    ck_assert_msg(!mongoc_cursor_error(cur, &error), "find %s: %s", id, error.message);
    mongoc_cursor_destroy(cur);
    bson_destroy(filter);
    return found;
}

static int64_t rev_of(mongoc_collection_t *c, const char *id)
{
    bson_t doc;
    ck_assert_msg(find_by_id(c, id, &doc), "document %s missing", id);
    bson_iter_t it;
    ck_assert(bson_iter_init_find(&it, &doc, "rev"));
    ck_assert_int_eq(bson_iter_type(&it), BSON_TYPE_INT64);
    int64_t rev = bson_iter_int64(&it);
    bson_destroy(&doc);
    return rev;
}

static void insert_rev(const char *id, int64_t rev)
{
    bson_error_t error;
    bson_t *doc = BCON_NEW("_id", BCON_UTF8(id), "rev", BCON_INT64(rev));
    ck_assert_msg(mongoc_collection_insert_one(coll, doc, NULL, NULL, &error), "insert %s: %s", id, error.message);
    bson_destroy(doc);
}

static int32_t reply_int(const bson_t *reply, const char *key)
{
    bson_iter_t it;
    ck_assert_msg(bson_iter_init_find(&it, reply, key), "reply has no %s", key);
    return bson_iter_as_int64(&it);
}

START_TEST(mongo_document_round_trip)
{
    /* The BSON types of the stored aggregate (docs/DOCUMENT.md). */
    const int64_t due_ms = 1788249600123; /* 2026-09-01T08:00:00.123Z */
    bson_t *doc = BCON_NEW(
        "_id", BCON_UTF8("t1/a1"), "tenant", BCON_UTF8("t1"), "assignment", BCON_UTF8("a1"),
        "header", "{", "class", BCON_UTF8("c1"), "title", BCON_UTF8("Essay \xc3\xa9"),
        "status", BCON_UTF8("published"), "dueAt", BCON_DATE_TIME(due_ms), "points", BCON_DOUBLE(12.5),
        "v", BCON_INT64(9007199254740991), "c", BCON_UTF8("cmd-1"), "}",
        "students", "{", "s1", "{", "grade", "{", "points", BCON_NULL, "feedback", BCON_NULL,
        "v", BCON_INT64(3), "c", BCON_UTF8("cmd-2"), "}", "}", "}",
        "counts", "{", "assigned", BCON_INT32(1), "submitted", BCON_INT32(0), "returned", BCON_INT32(0),
        "graded", BCON_INT32(0), "}",
        "rev", BCON_INT64(1), "updatedAt", BCON_DATE_TIME(due_ms));
    bson_error_t error;
    ck_assert_msg(mongoc_collection_insert_one(coll, doc, NULL, NULL, &error), "insert: %s", error.message);

    bson_t got;
    ck_assert(find_by_id(coll, "t1/a1", &got));
    bson_iter_t it;
    ck_assert(bson_iter_init_find(&it, &got, "header"));
    bson_iter_t h;
    ck_assert(bson_iter_recurse(&it, &h) && bson_iter_find(&h, "dueAt"));
    ck_assert_int_eq(bson_iter_type(&h), BSON_TYPE_DATE_TIME);
    ck_assert_int_eq(bson_iter_date_time(&h), due_ms);
    ck_assert(bson_iter_init_find(&it, &got, "header") && bson_iter_recurse(&it, &h) && bson_iter_find(&h, "points"));
    ck_assert_int_eq(bson_iter_type(&h), BSON_TYPE_DOUBLE);
    ck_assert(bson_iter_double(&h) == 12.5);
    ck_assert(bson_iter_init_find(&it, &got, "header") && bson_iter_recurse(&it, &h) && bson_iter_find(&h, "v"));
    ck_assert_int_eq(bson_iter_type(&h), BSON_TYPE_INT64);
    ck_assert_int_eq(bson_iter_int64(&h), 9007199254740991);
    ck_assert(bson_iter_init_find(&it, &got, "header") && bson_iter_recurse(&it, &h) && bson_iter_find(&h, "title"));
    ck_assert_str_eq(bson_iter_utf8(&h, NULL), "Essay \xc3\xa9");
    ck_assert(bson_iter_init(&it, &got) && bson_iter_find_descendant(&it, "students.s1.grade.points", &h));
    ck_assert_int_eq(bson_iter_type(&h), BSON_TYPE_NULL);
    ck_assert(bson_iter_init(&it, &got) && bson_iter_find_descendant(&it, "counts.assigned", &h));
    ck_assert_int_eq(bson_iter_type(&h), BSON_TYPE_INT32);
    ck_assert_int_eq(bson_iter_int32(&h), 1);
    ck_assert_int_eq(rev_of(coll, "t1/a1"), 1);
    bson_destroy(&got);
    bson_destroy(doc);
}
END_TEST

/* One conditional write as the writer issues it: replace the document whose
 * {_id, rev} is as read, with upsert so that rev 0 (absent) inserts. */
static bool conditional_replace(const char *id, int64_t expect_rev, int64_t new_rev, bson_t *reply,
                                bson_error_t *error)
{
    bson_t *filter = BCON_NEW("_id", BCON_UTF8(id), "rev", BCON_INT64(expect_rev));
    bson_t *repl = BCON_NEW("_id", BCON_UTF8(id), "rev", BCON_INT64(new_rev), "tenant", BCON_UTF8("t1"));
    bson_t *opts = BCON_NEW("upsert", BCON_BOOL(true));
    bool ok = mongoc_collection_replace_one(coll, filter, repl, opts, reply, error);
    bson_destroy(opts);
    bson_destroy(repl);
    bson_destroy(filter);
    return ok;
}

START_TEST(mongo_conditional_upsert_conflict_is_duplicate_key)
{
    bson_t reply;
    bson_error_t error;

    /* Absent document, expected rev 0: the upsert inserts the replacement
     * (not the filter's rev 0). */
    ck_assert_msg(conditional_replace("t1/new", 0, 1, &reply, &error), "first upsert: %s", error.message);
    ck_assert_int_eq(reply_int(&reply, "upsertedCount"), 1);
    bson_destroy(&reply);
    ck_assert_int_eq(rev_of(coll, "t1/new"), 1);

    /* A second writer that also read "absent": conflict. */
    ck_assert(!conditional_replace("t1/new", 0, 1, &reply, &error));
    ck_assert_msg(error.code == DUP_KEY, "expected 11000, got domain %u code %u: %s", error.domain, error.code,
                  error.message);
    ck_assert_uint_eq(error.domain, MONGOC_ERROR_SERVER);
    bson_destroy(&reply);

    /* Matching revision: replaced in place. */
    ck_assert_msg(conditional_replace("t1/new", 1, 2, &reply, &error), "matching replace: %s", error.message);
    ck_assert_int_eq(reply_int(&reply, "matchedCount"), 1);
    ck_assert_int_eq(reply_int(&reply, "modifiedCount"), 1);
    ck_assert_int_eq(reply_int(&reply, "upsertedCount"), 0);
    bson_destroy(&reply);
    ck_assert_int_eq(rev_of(coll, "t1/new"), 2);

    /* Stale revision (another writer moved it to 2): duplicate key, and
     * the stored document is untouched. */
    ck_assert(!conditional_replace("t1/new", 1, 2, &reply, &error));
    ck_assert_msg(error.code == DUP_KEY, "expected 11000, got domain %u code %u: %s", error.domain, error.code,
                  error.message);
    bson_iter_t it, we;
    ck_assert_msg(bson_iter_init_find(&it, &reply, "writeErrors"), "reply has no writeErrors");
    ck_assert(bson_iter_recurse(&it, &we) && bson_iter_find_descendant(&we, "0.code", &it));
    ck_assert_int_eq(bson_iter_as_int64(&it), DUP_KEY);
    bson_destroy(&reply);
    ck_assert_int_eq(rev_of(coll, "t1/new"), 2);
}
END_TEST

static void bulk_replace(mongoc_bulk_operation_t *bulk, const char *id, int64_t expect_rev, int64_t new_rev)
{
    bson_error_t error;
    bson_t *filter = BCON_NEW("_id", BCON_UTF8(id), "rev", BCON_INT64(expect_rev));
    bson_t *repl = BCON_NEW("_id", BCON_UTF8(id), "rev", BCON_INT64(new_rev));
    bson_t *opts = BCON_NEW("upsert", BCON_BOOL(true));
    ck_assert_msg(mongoc_bulk_operation_replace_one_with_opts(bulk, filter, repl, opts, &error), "%s",
                  error.message);
    bson_destroy(opts);
    bson_destroy(repl);
    bson_destroy(filter);
}

/* FerretDB identifies itself in buildInfo; real MongoDB does not. */
static bool server_is_ferretdb(void)
{
    bson_t *cmd = BCON_NEW("buildInfo", BCON_INT32(1));
    bson_t reply;
    bson_error_t error;
    ck_assert_msg(mongoc_client_command_simple(client, "admin", cmd, NULL, &reply, &error), "buildInfo: %s",
                  error.message);
    bool ferret = bson_has_field(&reply, "ferretdbVersion");
    bson_destroy(&reply);
    bson_destroy(cmd);
    return ferret;
}

static uint32_t run_bulk(mongoc_bulk_operation_t *bulk, bson_t *reply, bson_error_t *error)
{
    uint32_t server = mongoc_bulk_operation_execute(bulk, reply, error);
    char *json = bson_as_relaxed_extended_json(reply, NULL);
    fprintf(stderr, "test_stack: bulk reply: %s\n", json);
    bson_free(json);
    return server;
}

/* The writer's fast path: a batch without conflicts is one unordered bulk,
 * and its reply accounts for every item. */
START_TEST(mongo_unordered_bulk_without_conflict_applies_all)
{
    insert_rev("t1/a", 1);
    bson_t *bopts = BCON_NEW("ordered", BCON_BOOL(false));
    mongoc_bulk_operation_t *bulk = mongoc_collection_create_bulk_operation_with_opts(coll, bopts);
    bulk_replace(bulk, "t1/a", 1, 2); /* matches */
    bulk_replace(bulk, "t1/c", 0, 1); /* absent: upserted */
    bulk_replace(bulk, "t1/d", 0, 1); /* absent: upserted */
    bson_t reply;
    bson_error_t error;
    ck_assert_msg(run_bulk(bulk, &reply, &error) != 0, "bulk failed: %s", error.message);
    ck_assert_int_eq(reply_int(&reply, "nMatched"), 1);
    ck_assert_int_eq(reply_int(&reply, "nModified"), 1);
    ck_assert_int_eq(reply_int(&reply, "nUpserted"), 2);
    bson_iter_t it, f;
    ck_assert(bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, "upserted.0._id", &f));
    ck_assert_str_eq(bson_iter_utf8(&f, NULL), "t1/c");
    ck_assert(bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, "upserted.1._id", &f));
    ck_assert_str_eq(bson_iter_utf8(&f, NULL), "t1/d");
    ck_assert(bson_iter_init(&it, &reply) && bson_iter_find_descendant(&it, "upserted.0.index", &f));
    if (server_is_ferretdb()) {
        /* FerretDB v1 numbers upserted items among the upserts (0, 1), not
         * by their position in the batch (1, 2): use the _id, never the
         * index. */
        ck_assert_int_eq(bson_iter_as_int64(&f), 0);
    } else {
        ck_assert_int_eq(bson_iter_as_int64(&f), 1);
    }
    bson_destroy(&reply);
    mongoc_bulk_operation_destroy(bulk);
    bson_destroy(bopts);

    ck_assert_int_eq(rev_of(coll, "t1/a"), 2);
    ck_assert_int_eq(rev_of(coll, "t1/c"), 1);
    ck_assert_int_eq(rev_of(coll, "t1/d"), 1);
}
END_TEST

/* A batch with a conflict: what every store must do (fail with 11000,
 * never overwrite the newer document), and what FerretDB v1 does beyond
 * that, pinned so that a change of store or version is noticed. */
START_TEST(mongo_unordered_bulk_with_conflict)
{
    insert_rev("t1/a", 1);
    insert_rev("t1/b", 3);

    bson_t *bopts = BCON_NEW("ordered", BCON_BOOL(false));
    mongoc_bulk_operation_t *bulk = mongoc_collection_create_bulk_operation_with_opts(coll, bopts);
    bulk_replace(bulk, "t1/a", 1, 2); /* 0: matches */
    bulk_replace(bulk, "t1/b", 1, 2); /* 1: conflict, b is at rev 3 */
    bulk_replace(bulk, "t1/c", 0, 1); /* 2: absent, to be upserted */
    bson_error_t error;
    bson_t *ins = BCON_NEW("_id", BCON_UTF8("t1/x"), "rev", BCON_INT64(1));
    ck_assert(mongoc_bulk_operation_insert_with_opts(bulk, ins, NULL, &error)); /* 3: plain insert */
    bson_t *dup = BCON_NEW("_id", BCON_UTF8("t1/b"), "rev", BCON_INT64(1));
    ck_assert(mongoc_bulk_operation_insert_with_opts(bulk, dup, NULL, &error)); /* 4: insert, duplicate */

    bson_t reply;
    ck_assert_msg(run_bulk(bulk, &reply, &error) == 0, "bulk with conflicts reported success");
    ck_assert_msg(error.code == DUP_KEY, "expected 11000, got domain %u code %u: %s", error.domain, error.code,
                  error.message);

    /* Every reported error is a duplicate key; collect their indexes. */
    bson_iter_t it, we, item;
    ck_assert(bson_iter_init_find(&it, &reply, "writeErrors") && bson_iter_recurse(&it, &we));
    int n = 0;
    int64_t idx[8];
    while (bson_iter_next(&we) && n < 8) {
        ck_assert(bson_iter_recurse(&we, &item) && bson_iter_find(&item, "code"));
        ck_assert_int_eq(bson_iter_as_int64(&item), DUP_KEY);
        ck_assert(bson_iter_recurse(&we, &item) && bson_iter_find(&item, "index"));
        idx[n++] = bson_iter_as_int64(&item);
    }

    /* Both stores: the newer b is never overwritten, a (before the
     * conflict) and the inserts (a separate `insert` command, which honours
     * ordered=false) are applied, and the duplicate insert is reported at
     * its own index. */
    ck_assert_int_eq(rev_of(coll, "t1/b"), 3);
    ck_assert_int_eq(rev_of(coll, "t1/a"), 2);
    ck_assert_int_eq(rev_of(coll, "t1/x"), 1);
    ck_assert_int_eq(reply_int(&reply, "nInserted"), 1);
    ck_assert_int_ge(n, 2);
    ck_assert_int_eq(idx[n - 1], 4);

    bson_t c;
    if (server_is_ferretdb()) {
        /* FerretDB v1.24 `update` ignores ordered=false (its TODO #2612),
         * on either backend:
         * it stops at the first failing statement, reports it at index 0
         * whatever its position, and drops the counts of the statements it
         * had already applied. So item 1 shows up as index 0, a's write is
         * not counted although it is stored, and c was never attempted.
         * The writer must not map update writeErrors to items: after any
         * error, every item of the batch has an unknown outcome. */
        ck_assert_int_eq(n, 2);
        ck_assert_int_eq(idx[0], 0);
        ck_assert_int_eq(reply_int(&reply, "nMatched"), 0);
        ck_assert_int_eq(reply_int(&reply, "nUpserted"), 0);
        ck_assert_msg(!find_by_id(coll, "t1/c", &c), "FerretDB now continues after a failed update statement");
    } else {
        ck_assert_int_eq(n, 2);
        ck_assert_int_eq(idx[0], 1);
        ck_assert_int_eq(reply_int(&reply, "nMatched"), 1);
        ck_assert_int_eq(reply_int(&reply, "nUpserted"), 1);
        ck_assert_int_eq(rev_of(coll, "t1/c"), 1);
    }

    bson_destroy(&reply);
    bson_destroy(dup);
    bson_destroy(ins);
    mongoc_bulk_operation_destroy(bulk);
    bson_destroy(bopts);
}
END_TEST

START_TEST(mongo_accepts_write_concerns)
{
    /* store.write_concern values the worker may be configured with. */
    static const char *const concerns[] = {"{\"w\": 1}", "{\"w\": \"majority\"}", "{\"w\": 1, \"j\": true}",
                                           "{\"w\": \"majority\", \"wtimeout\": 5000}"};
    for (size_t i = 0; i < sizeof concerns / sizeof *concerns; i++) {
        bson_error_t error;
        bson_t *wc = bson_new_from_json((const uint8_t *)concerns[i], -1, &error);
        ck_assert_ptr_nonnull(wc);
        bson_t opts = BSON_INITIALIZER;
        BSON_APPEND_DOCUMENT(&opts, "writeConcern", wc);
        BSON_APPEND_BOOL(&opts, "upsert", true);
        bson_t *filter = BCON_NEW("_id", BCON_UTF8("t1/wc"), "rev", BCON_INT64((int64_t)i));
        bson_t *repl = BCON_NEW("_id", BCON_UTF8("t1/wc"), "rev", BCON_INT64((int64_t)i + 1));
        bson_t reply;
        ck_assert_msg(mongoc_collection_replace_one(coll, filter, repl, &opts, &reply, &error),
                      "writeConcern %s: %s", concerns[i], error.message);
        bson_destroy(&reply);
        bson_destroy(repl);
        bson_destroy(filter);
        bson_destroy(&opts);
        bson_destroy(wc);
    }
    ck_assert_int_eq(rev_of(coll, "t1/wc"), 4);
}
END_TEST

static void run_stack(const char *what)
{
    const char *src = getenv("AGG_SOURCE_DIR");
    ck_assert_msg(src != NULL, "AGG_SOURCE_DIR is not set (run through ctest)");
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "'%s/scripts/stack' %s", src, what);
    int rc = system(cmd);
    ck_assert_msg(rc != -1 && WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "%s failed (%d)", cmd, rc);
}

static bool ping(mongoc_client_t *c, bson_error_t *error)
{
    bson_t *cmd = BCON_NEW("ping", BCON_INT32(1));
    bool ok = mongoc_client_command_simple(c, "admin", cmd, NULL, NULL, error);
    bson_destroy(cmd);
    return ok;
}

START_TEST(mongo_data_survives_store_restart)
{
    insert_rev("t1/outage", 7);
    run_stack("mongo-stop");

    mongoc_client_t *down = mongo_client(1000);
    bson_error_t error;
    ck_assert_msg(!ping(down, &error), "store still answers after mongo-stop");
    ck_assert_uint_eq(error.domain, MONGOC_ERROR_SERVER_SELECTION);
    mongoc_client_destroy(down);

    run_stack("mongo-start");
    mongoc_client_t *up = mongo_client(10000);
    ck_assert_msg(ping(up, &error), "ping after mongo-start: %s", error.message);
    mongoc_collection_t *c = mongoc_client_get_collection(up, TEST_DB, mongoc_collection_get_name(coll));
    ck_assert_int_eq(rev_of(c, "t1/outage"), 7);
    mongoc_collection_destroy(c);
    mongoc_client_destroy(up);

    /* The client that was connected before the outage: its first operation
     * may fail on the dead socket, later ones must work again. */
    if (!ping(client, &error))
        fprintf(stderr, "test_stack: first ping on the old client after restart: %s\n", error.message);
    ck_assert_msg(ping(client, &error), "old client after restart: %s", error.message);
}
END_TEST

Suite *test_suite(void)
{
    Suite *s = suite_create("stack");
    TCase *k = tcase_create("kafka");
    tcase_set_timeout(k, 120);
    tcase_add_test(k, kafka_does_not_auto_create_topics);
    tcase_add_test(k, kafka_create_produce_consume_commit);
    suite_add_tcase(s, k);

    TCase *m = tcase_create("ferretdb");
    tcase_set_timeout(m, 120);
    tcase_add_checked_fixture(m, mongo_setup, mongo_teardown);
    tcase_add_test(m, mongo_document_round_trip);
    tcase_add_test(m, mongo_conditional_upsert_conflict_is_duplicate_key);
    tcase_add_test(m, mongo_unordered_bulk_without_conflict_applies_all);
    tcase_add_test(m, mongo_unordered_bulk_with_conflict);
    tcase_add_test(m, mongo_accepts_write_concerns);
    tcase_add_test(m, mongo_data_survives_store_restart);
    suite_add_tcase(s, m);
    return s;
}
