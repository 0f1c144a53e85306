/* Configuration: sources and precedence, every kind of error with
 * its exact one-line message, _file values, redaction, describe, the
 * generated docs/CONFIG.md, and the SIGHUP merge. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <mongoc/mongoc.h>

#include "config/config.h"
#include "config/config_secrets.h"
#include "config/config_table.h"
#include "base/redact.h"

/* ---- helpers ------------------------------------------------------------- */

static char tmpdir[] = "/tmp/test_config.XXXXXX";
static int tmp_seq;

/* Writes content to a fresh file in tmpdir and returns its path (static). */
static const char *write_tmp(const char *content, size_t len) {
  static char paths[8][256];
  char *path = paths[tmp_seq % 8];
  snprintf(path, 256, "%s/f%d", tmpdir, tmp_seq++);
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(content, 1, len, f), len);
  fclose(f);
  return path;
}
static const char *write_ini(const char *content) { return write_tmp(content, strlen(content)); }

/* Every AGGREGATOR_* variable a test sets is listed here and cleared after. */
static const char *const env_used[] = {
    "AGGREGATOR_BATCH_LINGER_MS", "AGGREGATOR_BATCH_LINGER_M", "AGGREGATOR_LOG_LEVEL",
    "AGGREGATOR_STORE_URI",       "AGGREGATOR_STORE_URI_FILE", "AGGREGATOR_KAFKA_RDKAFKA_CLIENT_ID",
    "AGGREGATOR_KAFKA_RDKAFKA_SASL_PASSWORD_FILE", "AGGREGATOR_SERVICE_HOST", "AGGREGATOR_METRICS_LISTEN",
    "AGGREGATOR_KAFKA_RDKAFKA_SOCKET_TIMEOUT_MS", "AGGREGATOR_batch_linger_ms", "AGGREGATOR_KAFKA_GROUP",
    "AGGREGATOR_BACTH_MAX_COMMANDS", "AGGREGATOR_WRAPPER_HOME", "AGGREGATOR_STOR_URI_FILE",
    "AGGREGATOR_KAFAK_RDKAFKA_CLIENT_ID", "AGGREGATOR_SERVICE_PORT", "AGGREGATOR_SERVICE_PORT_METRICS",
    "AGGREGATOR_PORT", "AGGREGATOR_PORT_9464_TCP", "AGGREGATOR_PORT_9464_TCP_PROTO", "AGGREGATOR_PORT_9464_TCP_PORT",
    "AGGREGATOR_PORT_9464_TCP_ADDR", "AGGREGATOR_PORT_X", "AGGREGATOR_SERVICE_HOSTS",
    "AGGREGATOR_KAFKA_RDKAFKA_SSL_CA_LOCATION",
};
static void clear_env(void) {
  for (size_t i = 0; i < sizeof env_used / sizeof env_used[0]; i++) unsetenv(env_used[i]);
}

static void setup(void) {
  clear_env();
  ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}
static void teardown(void) {
  clear_env();
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  ck_assert_int_eq(system(cmd), 0);
  strcpy(tmpdir, "/tmp/test_config.XXXXXX");
}

/* Loads defaults + file (may be NULL) + env + sets; returns the config or
 * NULL with *err filled. */
static config_t *load(const char *path, char **sets, size_t nsets, config_error_t *err) {
  config_t *cfg = config_new();
  ck_assert_ptr_nonnull(cfg);
  if (config_load(cfg, path, sets, nsets, err)) return cfg;
  config_destroy(cfg);
  return NULL;
}

/* "key=PATH" into out, PATH a fresh file holding content: a --set of a
 * _file key. */
static char *set_file(char *out, size_t size, const char *key, const char *content) {
  snprintf(out, size, "%s=%s", key, write_ini(content));
  return out;
}

/* load() that must succeed. */
static config_t *load_ok(const char *path, char **sets, size_t nsets) {
  config_error_t err;
  config_t *cfg = load(path, sets, nsets, &err);
  ck_assert_msg(cfg, "%s", err.message);
  return cfg;
}

/* Not inlined: gcc would then take the memstream buffer for a local. */
__attribute__((noinline)) static char *show(const config_t *cfg) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  config_show(cfg, f);
  fclose(f);
  return text;
}

/* Replaces "{FILE}" in pattern by path and "{AUX}" by aux. */
static void expand(char *out, size_t size, const char *pattern, const char *path, const char *aux) {
  out[0] = '\0';
  for (const char *p = pattern; *p;) {
    size_t len = strlen(out);
    if (!strncmp(p, "{AUX}", 5)) {
      snprintf(out + len, size - len, "%s", aux ? aux : "?");
      p += 5;
    } else if (!strncmp(p, "{FILE}", 6)) {
      snprintf(out + len, size - len, "%s", path ? path : "?");
      p += 6;
    } else {
      snprintf(out + len, size - len, "%c", *p++);
    }
  }
}

/* The fields of a config_t a test expects, in the order of config.h. */
typedef struct {
  const char *brokers, *topics, *group, *dlq_topic;
  const char *uri, *database, *collection, *write_concern;
  int64_t max_commands, max_aggregates, linger_ms, max_pending_bytes;
  int64_t backoff_ms, backoff_max_ms, cache_max_aggregates, cache_max_bytes, max_command_bytes;
  const char *listen;
  log_level_t level;
  log_format_t format;
} expected_t;

static void assert_config(const config_t *c, const expected_t *e) {
  ck_assert_str_eq(c->kafka_brokers, e->brokers);
  ck_assert_str_eq(c->kafka_topics, e->topics);
  ck_assert_str_eq(c->kafka_group, e->group);
  ck_assert_str_eq(c->kafka_dlq_topic, e->dlq_topic);
  ck_assert_str_eq(c->store_uri, e->uri);
  ck_assert_str_eq(c->store_database, e->database);
  ck_assert_str_eq(c->store_collection, e->collection);
  ck_assert_str_eq(c->store_write_concern, e->write_concern);
  ck_assert_int_eq(c->batch_max_commands, e->max_commands);
  ck_assert_int_eq(c->batch_max_aggregates, e->max_aggregates);
  ck_assert_int_eq(c->batch_linger_ms, e->linger_ms);
  ck_assert_int_eq(c->batch_max_pending_bytes, e->max_pending_bytes);
  ck_assert_int_eq(c->retry_backoff_ms, e->backoff_ms);
  ck_assert_int_eq(c->retry_backoff_max_ms, e->backoff_max_ms);
  ck_assert_int_eq(c->cache_max_aggregates, e->cache_max_aggregates);
  ck_assert_int_eq(c->cache_max_bytes, e->cache_max_bytes);
  ck_assert_int_eq(c->limits_max_command_bytes, e->max_command_bytes);
  ck_assert_str_eq(c->metrics_listen, e->listen);
  ck_assert_int_eq(c->log_level, e->level);
  ck_assert_int_eq(c->log_format, e->format);
}

/* ---- defaults ------------------------------------------------------------ */

START_TEST(defaults) {
  config_t *c = config_new();
  assert_config(c, &(expected_t){.brokers = "localhost:9092", .topics = "assignment-commands", .group = "aggregator",
                                 .dlq_topic = "assignment-commands-dlq", .uri = "mongodb://localhost:27017",
                                 .database = "school", .collection = "assignment_aggregates",
                                 .write_concern = "majority", .max_commands = 20000, .max_aggregates = 1000,
                                 .linger_ms = 100, .max_pending_bytes = 64 << 20, .backoff_ms = 100,
                                 .backoff_max_ms = 10000, .cache_max_aggregates = 100000,
                                 .cache_max_bytes = 320 << 20, .max_command_bytes = 65536,
                                 .listen = "", .level = LOG_LEVEL_INFO, .format = LOG_FORMAT_JSON});
  ck_assert_uint_eq(c->rdkafka_count, 0);
  ck_assert_int_eq(c->replay_threads, 0); /* one per online core */
  ck_assert_ptr_null(c->source_file);
  config_destroy(c);
  config_destroy(NULL);
}
END_TEST

/* Loading nothing (no file, no env, no sets) succeeds and keeps defaults. */
START_TEST(load_nothing) {
  config_t *c = load_ok(NULL, NULL, 0);
  ck_assert_int_eq(c->batch_linger_ms, 100);
  config_destroy(c);
}
END_TEST

/* ---- a full file --------------------------------------------------------- */

START_TEST(file_all_keys) {
  const char *path = write_ini("\xEF\xBB\xBF# comment\n"
                               "; another comment\n"
                               "\n"
                               "[kafka]\r\n"
                               "  brokers = k1:9092 , k2:9093\n"
                               "topics = a , b.c\n"
                               "group\t=\tg1\n"
                               "dlq_topic = dead\n"
                               "rdkafka.client.id = worker-1\n"
                               "rdkafka.socket.timeout.ms = 30000\n"
                               "[ store ]\n"
                               "uri = mongodb://h1:27017,h2:27017/?replicaSet=rs0\n"
                               "database = db1\n"
                               "collection = aggs\n"
                               "write_concern = 2\n"
                               "[batch]\n"
                               "max_commands = 7\n"
                               "max_aggregates = 8\n"
                               "linger_ms = 0\n"
                               "max_pending_bytes = 2G\n"
                               "[retry]\n"
                               "backoff_ms = 5\n"
                               "backoff_max_ms = 5\n"
                               "[cache]\n"
                               "max_aggregates = 0\n"
                               "max_bytes = 0\n"
                               "[limits]\n"
                               "max_command_bytes = 1048576\n"
                               "[metrics]\n"
                               "listen = [::1]:9464\n"
                               "[log]\n"
                               "level = debug\n"
                               "format = text\n"
                               "[kafka]\n"
                               "rdkafka.debug = cgrp,topic\n");
  config_t *c = load_ok(path, NULL, 0);
  assert_config(c, &(expected_t){.brokers = "k1:9092,k2:9093", .topics = "a,b.c", .group = "g1", .dlq_topic = "dead",
                                 .uri = "mongodb://h1:27017,h2:27017/?replicaSet=rs0", .database = "db1",
                                 .collection = "aggs", .write_concern = "2", .max_commands = 7, .max_aggregates = 8,
                                 .linger_ms = 0, .max_pending_bytes = (int64_t)2 << 30, .backoff_ms = 5,
                                 .backoff_max_ms = 5, .cache_max_aggregates = 0,
                                 .cache_max_bytes = 0, .max_command_bytes = 1048576,
                                 .listen = "[::1]:9464", .level = LOG_LEVEL_DEBUG, .format = LOG_FORMAT_TEXT});
  ck_assert_uint_eq(c->rdkafka_count, 3);
  ck_assert_str_eq(c->rdkafka[0].name, "client.id");
  ck_assert_str_eq(c->rdkafka[0].value, "worker-1");
  ck_assert_str_eq(c->rdkafka[1].name, "socket.timeout.ms");
  ck_assert_str_eq(c->rdkafka[2].name, "debug");
  ck_assert_str_eq(c->rdkafka[2].value, "cgrp,topic");
  ck_assert_str_eq(c->source_file, path);
  config_destroy(c);
}
END_TEST

/* Values are literal: '#', ';' and '=' inside a value are kept. */
START_TEST(values_are_literal) {
  const char *path = write_ini("[kafka]\n"
                               "rdkafka.client.id = a#b;c=d\n"
                               "[store]\n"
                               "uri = mongodb://h/?appname=x;y\n");
  config_t *c = load_ok(path, NULL, 0);
  ck_assert_str_eq(c->rdkafka[0].value, "a#b;c=d");
  ck_assert_str_eq(c->store_uri, "mongodb://h/?appname=x;y");
  config_destroy(c);
}
END_TEST

/* ---- values accepted and normalised -------------------------------------- */

static const struct {
  const char *set;
  const char *key; /* section.key */
  const char *shown;
} good_values[] = {
    {"batch.max_pending_bytes=1048576", "batch.max_pending_bytes", "1MiB"},
    {"batch.max_pending_bytes=1536K", "batch.max_pending_bytes", "1536KiB"},
    {"batch.max_pending_bytes=1025KiB", "batch.max_pending_bytes", "1025KiB"},
    {"batch.max_pending_bytes=16GiB", "batch.max_pending_bytes", "16GiB"},
    {"batch.max_pending_bytes=3000000", "batch.max_pending_bytes", "3000000"},
    {"limits.max_command_bytes=256", "limits.max_command_bytes", "256"},
    {"cache.max_bytes=0", "cache.max_bytes", "0"},
    {"cache.max_bytes=512M", "cache.max_bytes", "512MiB"},
    {"limits.max_command_bytes=16M", "limits.max_command_bytes", "16MiB"},
    {"batch.max_commands=1000000", "batch.max_commands", "1000000"},
    {"replay.threads=0", "replay.threads", "0"},
    {"replay.threads=256", "replay.threads", "256"},
    {"batch.linger_ms=007", "batch.linger_ms", "7"},
    {"store.write_concern=01", "store.write_concern", "1"},
    {"store.write_concern=50", "store.write_concern", "50"},
    {"store.shard_key=", "store.shard_key", ""},
    {"store.shard_key= tenant ", "store.shard_key", "tenant"},
    {"store.shard_key=tenant, assignment", "store.shard_key", "tenant,assignment"},
    {"store.shard_key=_id", "store.shard_key", "_id"},
    {"store.uri=mongodb+srv://cluster.example.com/", "store.uri", "mongodb+srv://cluster.example.com/"},
    {"kafka.topics= x ,y,  z", "kafka.topics", "x,y,z"},
    {"kafka.brokers=SSL://b1:9093,b2", "kafka.brokers", "SSL://b1:9093,b2"},
    {"metrics.listen=", "metrics.listen", ""},
    {"metrics.listen=0.0.0.0:9464", "metrics.listen", "0.0.0.0:9464"},
    {"metrics.listen=metrics-host.local:1", "metrics.listen", "metrics-host.local:1"},
    {"metrics.listen=[fe80::1]:65535", "metrics.listen", "[fe80::1]:65535"},
    /* port 0: any free port, as metrics_start takes it (value.h) */
    {"metrics.listen=127.0.0.1:0", "metrics.listen", "127.0.0.1:0"},
    {"log.level=error", "log.level", "error"},
    {"log.level=warn", "log.level", "warn"},
};

START_TEST(good_value) {
  char *sets[] = {(char *)good_values[_i].set};
  config_error_t err;
  config_t *c = load(NULL, sets, 1, &err);
  ck_assert_msg(c, "%s: %s", good_values[_i].set, err.message);
  char section[32];
  const char *dot = strchr(good_values[_i].key, '.');
  snprintf(section, sizeof section, "%.*s", (int)(dot - good_values[_i].key), good_values[_i].key);
  const config_prop_t *p = config_prop_find(section, dot + 1);
  ck_assert_ptr_nonnull(p);
  model_buf_t b = MODEL_BUF_INIT;
  config_prop_format(p, c, &b);
  ck_assert_str_eq(b.data, good_values[_i].shown);
  model_buf_destroy(&b);
  config_destroy(c);
}
END_TEST

/* ---- every kind of error, with its exact message ------------------------- */

typedef struct {
  const char *ini;       /* file content; NULL for no file */
  const char *set;       /* one --set, or NULL */
  const char *env_name;  /* one environment variable, or NULL */
  const char *env_value; /* {AUX} in it is replaced by the aux file path */
  const char *aux;       /* content of an auxiliary file {AUX} (for _file), or NULL */
  const char *expect;    /* the whole message; {FILE} and {AUX} are replaced by the paths */
} error_case_t;

/* One source each: a file, a --set, or an environment variable. */
#define FILE_ERR(ini_, expect_) {.ini = ini_, .expect = expect_}
#define SET_ERR(set_, expect_) {.set = set_, .expect = expect_}
#define ENV_ERR(name_, value_, expect_) {.env_name = name_, .env_value = value_, .expect = expect_}
#define NOT_HOST_PORT " is not host:port (e.g. 127.0.0.1:9464, [::1]:9464; port 0..65535, 0 for any free port) or empty"

static const error_case_t error_cases[] = {
    /* unknown keys and sections, with suggestions */
    FILE_ERR("[batch]\nmax_comands = 5\n",
             "{FILE}:2: batch.max_comands: unknown key (did you mean batch.max_commands?)"),
    FILE_ERR("[kafka]\nlinger_ms = 5\n", "{FILE}:2: kafka.linger_ms: unknown key (did you mean batch.linger_ms?)"),
    FILE_ERR("[store]\nurl_file = /x\n", "{FILE}:2: store.url_file: unknown key (did you mean store.uri_file?)"),
    FILE_ERR("[batch]\nzzzzzzzzzzzz = 5\n", "{FILE}:2: batch.zzzzzzzzzzzz: unknown key"),
    FILE_ERR("[kafka]\nrdkafak.sasl.username = u\n",
             "{FILE}:2: kafka.rdkafak.sasl.username: unknown key (did you mean kafka.rdkafka.sasl.username?)"),
    FILE_ERR("[store]\nrdkafka.client.id = u\n",
             "{FILE}:2: store.rdkafka.client.id: unknown key (did you mean kafka.rdkafka.client.id?)"),
    FILE_ERR("# x\n[bacth]\nlinger_ms = 1\n", "{FILE}:2: [bacth]: unknown section (did you mean [batch]?)"),
    FILE_ERR("[xyzzy]\n", "{FILE}:1: [xyzzy]: unknown section"),
    /* syntax */
    FILE_ERR("linger_ms = 1\n", "{FILE}:1: linger_ms: key outside a section (add a [section] header above it)"),
    FILE_ERR("[batch]\n\nlinger_ms\n", "{FILE}:3: expected '[section]' or 'key = value'"),
    FILE_ERR("[batch]\n = 5\n", "{FILE}:2: missing key before '='"),
    FILE_ERR("[batch\n", "{FILE}:1: a section header is '[name]' alone on its line"),
    FILE_ERR("[batch] # c\n", "{FILE}:1: a section header is '[name]' alone on its line"),
    FILE_ERR("[batch]\nlinger_ms = 1\n[log]\n[batch]\nlinger_ms = 2\n",
             "{FILE}:5: batch.linger_ms: duplicate key, already set on line 2"),
    FILE_ERR("[store]\nuri = mongodb://h\nuri_file = /x\n",
             "{FILE}:3: store.uri_file: conflicts with store.uri on line 2"),
    /* types and ranges */
    FILE_ERR("[batch]\nlinger_ms = abc\n", "{FILE}:2: batch.linger_ms: 'abc' is not an integer"),
    FILE_ERR("[batch]\nlinger_ms = 0x10\n", "{FILE}:2: batch.linger_ms: '0x10' is not an integer"),
    FILE_ERR("[batch]\nlinger_ms = 1.5\n", "{FILE}:2: batch.linger_ms: '1.5' is not an integer"),
    FILE_ERR("[batch]\nlinger_ms =\n", "{FILE}:2: batch.linger_ms: '' is not an integer"),
    FILE_ERR("[batch]\nlinger_ms = 99999999999999999999\n",
             "{FILE}:2: batch.linger_ms: '99999999999999999999' is not an integer"),
    FILE_ERR("[batch]\nlinger_ms = 10 # ms\n",
             "{FILE}:2: batch.linger_ms: '10 # ms' is not an integer (comments must be on a line of their own)"),
    FILE_ERR("[batch]\nlinger_ms = 60001\n", "{FILE}:2: batch.linger_ms: '60001' is out of range 0..60000"),
    FILE_ERR("[batch]\nlinger_ms = -1\n", "{FILE}:2: batch.linger_ms: '-1' is out of range 0..60000"),
    FILE_ERR("[batch]\nmax_commands = 0\n", "{FILE}:2: batch.max_commands: '0' is out of range 1..1000000"),
    FILE_ERR("[replay]\n\nthreads = 257\n", "{FILE}:3: replay.threads: '257' is out of range 0..256"),
    FILE_ERR("[replay]\nthreads = -1\n", "{FILE}:2: replay.threads: '-1' is out of range 0..256"),
    FILE_ERR("[replay]\nthreads = two\n", "{FILE}:2: replay.threads: 'two' is not an integer"),
    FILE_ERR("[batch]\nmax_pending_bytes = 1023KiB\n",
             "{FILE}:2: batch.max_pending_bytes: '1023KiB' is out of range 1MiB..16GiB"),
    FILE_ERR("[batch]\nmax_pending_bytes = 17G\n",
             "{FILE}:2: batch.max_pending_bytes: '17G' is out of range 1MiB..16GiB"),
    FILE_ERR("[batch]\nmax_pending_bytes = 64 MiB\n",
             "{FILE}:2: batch.max_pending_bytes: '64 MiB' is not a size (bytes, or a number with K, KiB, M, MiB, G "
             "or GiB)"),
    FILE_ERR("[batch]\nmax_pending_bytes = 64MB\n",
             "{FILE}:2: batch.max_pending_bytes: '64MB' is not a size (bytes, or a number with K, KiB, M, MiB, G or "
             "GiB)"),
    FILE_ERR("[batch]\nmax_pending_bytes = 99999999999G\n",
             "{FILE}:2: batch.max_pending_bytes: '99999999999G' is not a size (bytes, or a number with K, KiB, M, "
             "MiB, G or GiB)"),
    FILE_ERR("[cache]\nmax_bytes = 65G\n", "{FILE}:2: cache.max_bytes: '65G' is out of range 0..64GiB"),
    FILE_ERR("[cache]\nmax_bytes = -1\n", "{FILE}:2: cache.max_bytes: '-1' is out of range 0..64GiB"),
    FILE_ERR("[limits]\nmax_command_bytes = 255\n",
             "{FILE}:2: limits.max_command_bytes: '255' is out of range 256..16MiB"),
    FILE_ERR("[log]\nlevel = verbose\n", "{FILE}:2: log.level: 'verbose' is not one of error, warn, info, debug"),
    FILE_ERR("[log]\nlevel = INFO\n", "{FILE}:2: log.level: 'INFO' is not one of error, warn, info, debug"),
    FILE_ERR("[log]\nformat = \"json\"\n",
             "{FILE}:2: log.format: '\"json\"' is not one of json, text (values are literal, without quotes; 'key =' "
             "sets the empty value)"),
    /* host:port */
    FILE_ERR("[metrics]\nlisten = 9464\n", "{FILE}:2: metrics.listen: '9464'" NOT_HOST_PORT),
    SET_ERR("metrics.listen=localhost:", "--set metrics.listen: 'localhost:'" NOT_HOST_PORT),
    SET_ERR("metrics.listen=:9464", "--set metrics.listen: ':9464'" NOT_HOST_PORT),
    SET_ERR("metrics.listen=h:65536", "--set metrics.listen: 'h:65536'" NOT_HOST_PORT),
    SET_ERR("metrics.listen=h:80x", "--set metrics.listen: 'h:80x'" NOT_HOST_PORT),
    SET_ERR("metrics.listen=a b:80", "--set metrics.listen: 'a b:80'" NOT_HOST_PORT),
    SET_ERR("metrics.listen=[::1:80", "--set metrics.listen: '[::1:80'" NOT_HOST_PORT),
    /* strings with rules */
    FILE_ERR("[kafka]\ntopics = a,,b\n", "{FILE}:2: kafka.topics: empty topic name in the list"),
    FILE_ERR("[kafka]\ntopics = a b\n", "{FILE}:2: kafka.topics: 'a b' is not a valid topic name"),
    FILE_ERR("[kafka]\ntopics =\n", "{FILE}:2: kafka.topics: empty topic name in the list"),
    FILE_ERR("[kafka]\nbrokers = b1, ,b2\n", "{FILE}:2: kafka.brokers: empty broker in the list"),
    FILE_ERR("[kafka]\ngroup =\n", "{FILE}:2: kafka.group: must not be empty"),
    FILE_ERR("[kafka]\ndlq_topic = ..\n",
             "{FILE}:2: kafka.dlq_topic: '..' is not a valid topic name ([A-Za-z0-9._-], 1..249 characters)"),
    FILE_ERR("[store]\ndatabase = a.b\n",
             "{FILE}:2: store.database: 'a.b' is not a valid database name (1..63 bytes, none of /\\. \"$*<>:|?)"),
    FILE_ERR("[store]\ncollection = system.x\n",
             "{FILE}:2: store.collection: 'system.x' is not a valid collection name (1..200 bytes, no '$', not "
             "system.*)"),
    FILE_ERR("[store]\nwrite_concern = 0\n",
             "{FILE}:2: store.write_concern: '0' is not 'majority' or a member count 1..50 (0 is refused: writes "
             "must be acknowledged)"),
    /* Only fields whose value never changes for an _id (store_shard.h). */
    FILE_ERR("[store]\nshard_key = tenant,grade\n",
             "{FILE}:2: store.shard_key: 'grade' is not a valid shard key field (tenant, assignment or _id: the "
             "fields whose value never changes for a document)"),
    FILE_ERR("[store]\nshard_key = Tenant\n",
             "{FILE}:2: store.shard_key: 'Tenant' is not a valid shard key field (tenant, assignment or _id: the "
             "fields whose value never changes for a document)"),
    FILE_ERR("[store]\nshard_key = tenant,,assignment\n",
             "{FILE}:2: store.shard_key: empty shard key field (tenant, assignment or _id: the fields whose value "
             "never changes for a document) in the list"),
    FILE_ERR("[store]\nwrite_concern = all\n",
             "{FILE}:2: store.write_concern: 'all' is not 'majority' or a member count 1..50 (0 is refused: writes "
             "must be acknowledged)"),
    /* store.uri is a secret: the message must not repeat it */
    FILE_ERR("[store]\nuri = http://user:hunter2@h/\n",
             "{FILE}:2: store.uri: the value is not a MongoDB URI: Invalid URI Schema, expecting 'mongodb://' or "
             "'mongodb+srv://'"),
    FILE_ERR("[store]\nuri = mongodb://user:hunter2@h:99999/\n",
             "{FILE}:2: store.uri: the value is not a MongoDB URI: Invalid host string in URI"),
    /* URI options: one libmongoc does not know (it would only log and drop
     * it) is an error naming it; a bad value of one it knows is quoted as
     * written, since only the password and credential options are secrets */
    FILE_ERR("[store]\nuri = mongodb://app:hunter2@h/?tls=true&replicaSett=rs0\n",
             "{FILE}:2: store.uri: unknown MongoDB URI option 'replicaSett' (did you mean replicaset? names are "
             "case-insensitive)"),
    SET_ERR("store.uri=mongodb://h/?frobnicate=1", "--set store.uri: unknown MongoDB URI option 'frobnicate'"),
    SET_ERR("store.uri=mongodb://h/?slaveOk=true", "--set store.uri: unknown MongoDB URI option 'slaveOk'"),
    SET_ERR("store.uri=mongodb://app:hunter2@h/?tls=maybe",
            "--set store.uri: the value is not a MongoDB URI: Unsupported value for \"tls\": \"maybe\""),
    /* ... but every value of a URI read from a file is a secret */
    {.ini = "[store]\nuri_file = {AUX}\n", .aux = "mongodb://h/?tls=maybe\n",
     .expect = "{FILE}:2: store.uri_file: {AUX}: the value is not a MongoDB URI: Unsupported value for \"tls\": "
               "\"***\""},
    /* checks across keys name the key set last */
    FILE_ERR("[kafka]\ndlq_topic = assignment-commands\n",
             "{FILE}:2: kafka.dlq_topic: 'assignment-commands' is both a command topic and the dead-letter topic"),
    {.ini = "[kafka]\ndlq_topic = d\n", .set = "kafka.topics=a,d",
     .expect = "--set kafka.topics: 'd' is both a command topic and the dead-letter topic"},
    FILE_ERR("[retry]\nbackoff_max_ms = 50\n",
             "{FILE}:2: retry.backoff_max_ms: 50 is less than retry.backoff_ms (100)"),
    {.ini = "[retry]\nbackoff_max_ms = 1000\n", .set = "retry.backoff_ms=2000",
     .expect = "--set retry.backoff_ms: 2000 is greater than retry.backoff_max_ms (1000)"},
    /* librdkafka's verdict */
    FILE_ERR("[kafka]\nrdkafka.socket.timeout.ms = soon\n",
             "{FILE}:2: kafka.rdkafka.socket.timeout.ms: librdkafka: Invalid value for configuration property "
             "\"socket.timeout.ms\""),
    FILE_ERR("[kafka]\n\nrdkafka.security.protocol = tls\n",
             "{FILE}:3: kafka.rdkafka.security.protocol: librdkafka: Invalid value \"tls\" for configuration "
             "property \"security.protocol\""),
    FILE_ERR("[kafka]\nrdkafka.no.such.thing = 1\n",
             "{FILE}:2: kafka.rdkafka.no.such.thing: librdkafka: No such configuration property: \"no.such.thing\""),
    FILE_ERR("[kafka]\nrdkafka.group.id = g\n",
             "{FILE}:2: kafka.rdkafka.group.id: group.id cannot be passed through: the worker sets it from "
             "kafka.group"),
    FILE_ERR("[kafka]\nrdkafka.enable.auto.commit = true\n",
             "{FILE}:2: kafka.rdkafka.enable.auto.commit: enable.auto.commit cannot be passed through: the worker "
             "commits offsets itself, once their commands are durable"),
    FILE_ERR("[kafka]\nrdkafka.allow.auto.create.topics = true\n",
             "{FILE}:2: kafka.rdkafka.allow.auto.create.topics: allow.auto.create.topics cannot be passed through: "
             "topics are never auto-created: create them before starting the worker"),
    FILE_ERR("[kafka]\nrdkafka. = 1\n",
             "{FILE}:2: kafka.rdkafka.: missing the librdkafka property name after 'rdkafka.'"),
    FILE_ERR("[kafka]\nrdkafka.client.id = a\nrdkafka.client.id = b\n",
             "{FILE}:3: kafka.rdkafka.client.id: duplicate key, already set on line 2"),
    /* files: the -c file and _file values */
    FILE_ERR("[store]\nuri_file = {AUX}/missing\n",
             "{FILE}:2: store.uri_file: cannot read {AUX}/missing: No such file or directory"),
    FILE_ERR("[store]\nuri_file =\n", "{FILE}:2: store.uri_file: empty file name"),
    {.ini = "[batch]\nlinger_ms_file = {AUX}\n", .aux = "abc\n",
     .expect = "{FILE}:2: batch.linger_ms_file: {AUX}: the value is not an integer"},
    {.ini = "[kafka]\nrdkafka.socket.timeout.ms_file = {AUX}\n", .aux = "never\n",
     .expect = "{FILE}:2: kafka.rdkafka.socket.timeout.ms_file: librdkafka: Invalid value for configuration property "
               "\"socket.timeout.ms\""},
    {.ini = "[store]\nuri_file = {AUX}\n", .aux = "mongodb://u:hunter2@h:0:1/\n",
     .expect = "{FILE}:2: store.uri_file: {AUX}: the value is not a MongoDB URI: Invalid host string in URI"},
    /* --set */
    SET_ERR("batch.linger_ms", "--set batch.linger_ms: expected section.key=value"),
    SET_ERR("linger_ms=5", "--set linger_ms: expected section.key=value"),
    SET_ERR("bacth.linger_ms=5", "--set bacth.linger_ms: unknown section 'bacth' (did you mean batch?)"),
    SET_ERR("batch.lingerms=5", "--set batch.lingerms: unknown key (did you mean batch.linger_ms?)"),
    SET_ERR("batch.linger_ms=x", "--set batch.linger_ms: 'x' is not an integer"),
    SET_ERR("kafka.group=a\nb", "--set kafka.group: the value contains a control character"),
    /* environment */
    ENV_ERR("AGGREGATOR_BATCH_LINGER_MS", "soon",
            "environment AGGREGATOR_BATCH_LINGER_MS: batch.linger_ms: 'soon' is not an integer"),
    ENV_ERR("AGGREGATOR_BATCH_LINGER_M", "5",
            "environment AGGREGATOR_BATCH_LINGER_M: batch.linger_m: unknown key (did you mean "
            "AGGREGATOR_BATCH_LINGER_MS?)"),
    ENV_ERR("AGGREGATOR_LOG_LEVEL", "loud",
            "environment AGGREGATOR_LOG_LEVEL: log.level: 'loud' is not one of error, warn, info, debug"),
    ENV_ERR("AGGREGATOR_STORE_URI_FILE", "{AUX}/none",
            "environment AGGREGATOR_STORE_URI_FILE: store.uri_file: cannot read {AUX}/none: No such file or directory"),
    ENV_ERR("AGGREGATOR_KAFKA_RDKAFKA_SOCKET_TIMEOUT_MS", "x",
            "environment AGGREGATOR_KAFKA_RDKAFKA_SOCKET_TIMEOUT_MS: kafka.rdkafka.socket.timeout.ms: librdkafka: "
            "Invalid value for configuration property \"socket.timeout.ms\""),
};

START_TEST(error_message) {
  const error_case_t *t = &error_cases[_i];
  const char *aux = t->aux ? write_ini(t->aux) : tmpdir;
  const char *path = NULL;
  char content[1024];
  if (t->ini) {
    expand(content, sizeof content, t->ini, "?", aux);
    path = write_ini(content);
  }
  char env_value[512];
  if (t->env_name) {
    expand(env_value, sizeof env_value, t->env_value, "?", aux);
    setenv(t->env_name, env_value, 1);
  }
  char *sets[] = {(char *)t->set};
  config_error_t err;
  config_t *c = load(path, sets, t->set ? 1 : 0, &err);
  ck_assert_msg(!c, "case %d loaded", _i);
  char expect[1024];
  expand(expect, sizeof expect, t->expect, path, aux);
  ck_assert_str_eq(err.message, expect);
  ck_assert_ptr_null(strchr(err.message, '\n'));
  ck_assert_ptr_null(strstr(err.message, "hunter2"));
}
END_TEST

/* One load names every error it finds, in order, each on its own line;
 * the keys under a bad section header are not reported one by one. */
START_TEST(every_error_named) {
  const char *path = write_ini("[kafka]\nbogus = 1\n[batch]\nlinger_ms = -5\n[bacth]\nmax_commands = 1\n"
                               "[retry]\nbackoff_ms = abc\n");
  char *sets[] = {"batch.nope=1", "log.level=loud"};
  config_error_t err;
  ck_assert_ptr_null(load(path, sets, 2, &err));
  const char *expect[] = {
      "%s:2: kafka.bogus: unknown key",
      "%s:4: batch.linger_ms: '-5' is out of range 0..60000",
      "%s:5: [bacth]: unknown section (did you mean [batch]?)",
      "%s:8: retry.backoff_ms: 'abc' is not an integer",
      "--set batch.nope: unknown key",
      "--set log.level: 'loud' is not one of error, warn, info, debug",
  };
  ck_assert_uint_eq(err.count, 6);
  for (size_t i = 0; i < 6; i++) {
    char line[600];
    snprintf(line, sizeof line, expect[i], path);
    ck_assert_str_eq(config_error_at(&err, i), line);
  }
  ck_assert_ptr_null(config_error_at(&err, 6));
  ck_assert_str_eq(err.message, config_error_at(&err, 0));
}
END_TEST

/* Past CONFIG_ERRORS_MAX errors are counted, not kept. */
START_TEST(errors_beyond_max_counted) {
  char ini[8192] = "[batch]\n";
  for (int i = 0; i < CONFIG_ERRORS_MAX + 5; i++) snprintf(ini + strlen(ini), sizeof ini - strlen(ini), "k%d = 1\n", i);
  config_error_t err;
  ck_assert_ptr_null(load(write_ini(ini), NULL, 0, &err));
  ck_assert_uint_eq(err.count, CONFIG_ERRORS_MAX + 5);
  ck_assert_ptr_nonnull(config_error_at(&err, CONFIG_ERRORS_MAX - 1));
  ck_assert_ptr_null(config_error_at(&err, CONFIG_ERRORS_MAX));
}
END_TEST

/* Files that values name are read at load: librdkafka's file properties
 * (ssl.ca.location may be a directory or "probe"), TLS files in the store
 * URI, each error naming the key and the path. */
START_TEST(named_files_checked) {
  char missing[300], ca[300];
  snprintf(missing, sizeof missing, "%s/none.pem", tmpdir);
  snprintf(ca, sizeof ca, "%s", write_ini("pem\n"));
  char s1[400], s2[400], s3[400], s4[800], s5[400], s6[400];
  snprintf(s1, sizeof s1, "kafka.rdkafka.ssl.ca.location=%s", missing);
  snprintf(s2, sizeof s2, "kafka.rdkafka.ssl.certificate.location=%s", tmpdir);
  snprintf(s3, sizeof s3, "kafka.rdkafka.sasl.kerberos.keytab=%s", missing);
  snprintf(s4, sizeof s4, "store.uri=mongodb://u:hunter2@h/?tls=true&tlsCAFile=%s&tlsCertificateKeyFile=%s", ca,
           missing);
  snprintf(s5, sizeof s5, "kafka.rdkafka.ssl.key.location=%s", ca);
  snprintf(s6, sizeof s6, "kafka.rdkafka.ssl.crl.location=%s", missing);
  char *sets[] = {s1, s2, s3, s4, s5, s6, "kafka.rdkafka.security.protocol=SSL"};
  config_error_t err;
  ck_assert_ptr_null(load(NULL, sets, 7, &err));
  ck_assert_uint_eq(err.count, 5);
  char expect[5][600];
  snprintf(expect[0], 600, "--set kafka.rdkafka.ssl.ca.location: cannot read %s: No such file or directory", missing);
  snprintf(expect[1], 600, "--set kafka.rdkafka.ssl.certificate.location: cannot read %s: is a directory", tmpdir);
  snprintf(expect[2], 600, "--set kafka.rdkafka.sasl.kerberos.keytab: cannot read %s: No such file or directory",
           missing);
  snprintf(expect[3], 600, "--set kafka.rdkafka.ssl.crl.location: cannot read %s: No such file or directory", missing);
  snprintf(expect[4], 600, "--set store.uri: tlsCertificateKeyFile: cannot read %s: No such file or directory", missing);
  for (size_t i = 0; i < 5; i++) ck_assert_str_eq(config_error_at(&err, i), expect[i]);

  /* A FIFO (which would block its reader) is refused, not opened for good. */
  char fifo[300];
  snprintf(fifo, sizeof fifo, "%s/fifo", tmpdir);
  ck_assert_int_eq(mkfifo(fifo, 0600), 0);
  char sf[400];
  snprintf(sf, sizeof sf, "kafka.rdkafka.ssl.keystore.location=%s", fifo);
  char *fifo_sets[] = {sf};
  ck_assert_ptr_null(load(NULL, fifo_sets, 1, &err));
  snprintf(expect[0], 600, "--set kafka.rdkafka.ssl.keystore.location: cannot read %s: is not a regular file", fifo);
  ck_assert_str_eq(err.message, expect[0]);

  /* A CA directory, "probe", and files that exist all load. */
  snprintf(s1, sizeof s1, "kafka.rdkafka.ssl.ca.location=%s", tmpdir);
  char *good[] = {s1, s5, "kafka.rdkafka.security.protocol=SSL"};
  config_destroy(load_ok(NULL, good, 3));
  char *probe[] = {"kafka.rdkafka.ssl.ca.location=probe", "kafka.rdkafka.security.protocol=SSL"};
  config_destroy(load_ok(NULL, probe, 2));
}
END_TEST

/* A file property given through _file: its value (the path) is a secret
 * like any _file value, so the error names the file it came from. */
START_TEST(named_file_via_file_key) {
  char set[400];
  const char *holder = write_ini("/nonexistent/ca.pem\n");
  snprintf(set, sizeof set, "kafka.rdkafka.ssl.ca.location_file=%s", holder);
  char *sets[] = {set, "kafka.rdkafka.security.protocol=SSL"};
  config_error_t err;
  ck_assert_ptr_null(load(NULL, sets, 2, &err));
  char expect[600];
  snprintf(expect, sizeof expect,
           "--set kafka.rdkafka.ssl.ca.location_file: the file named in %s cannot be read: No such file or directory",
           holder);
  ck_assert_str_eq(err.message, expect);
}
END_TEST

/* SASL mechanisms that take a user name and password need both; SSL
 * settings under a plaintext protocol are a warning. */
START_TEST(sasl_needs_credentials) {
  config_error_t err;
  char *none[] = {"kafka.rdkafka.security.protocol=SASL_SSL", "kafka.rdkafka.sasl.mechanism=SCRAM-SHA-512"};
  ck_assert_ptr_null(load(NULL, none, 2, &err));
  ck_assert_str_eq(err.message, "--set kafka.rdkafka.security.protocol: SASL_SSL with sasl.mechanism SCRAM-SHA-512 "
                                "needs kafka.rdkafka.sasl.username and kafka.rdkafka.sasl.password[_file]");
  const char *ini = write_ini("[kafka]\nrdkafka.security.protocol = sasl_plaintext\nrdkafka.sasl.mechanisms = PLAIN\n"
                             "rdkafka.sasl.username = u\n");
  ck_assert_ptr_null(load(ini, NULL, 0, &err));
  char expect[600];
  snprintf(expect, sizeof expect,
           "%s:2: kafka.rdkafka.security.protocol: sasl_plaintext with sasl.mechanism PLAIN needs "
           "kafka.rdkafka.sasl.password[_file]",
           ini);
  ck_assert_str_eq(err.message, expect);
  char pw[400];
  char *with_file[] = {"kafka.rdkafka.security.protocol=SASL_PLAINTEXT", "kafka.rdkafka.sasl.mechanism=SCRAM-SHA-256",
                       "kafka.rdkafka.sasl.username=u", set_file(pw, sizeof pw, "kafka.rdkafka.sasl.password_file", "pw\n")};
  config_destroy(load_ok(NULL, with_file, 4));

  char *plain_ssl[] = {"kafka.rdkafka.ssl.ca.location=probe"};
  config_t *c = load_ok(NULL, plain_ssl, 1);
  ck_assert_uint_eq(c->warnings_count, 1);
  ck_assert_str_eq(c->warnings[0], "--set: kafka.rdkafka.ssl.ca.location: ignored: security.protocol is PLAINTEXT "
                                   "(the default; SSL or SASL_SSL uses it)");
  config_destroy(c);
}
END_TEST

START_TEST(missing_config_file) {
  char path[300];
  snprintf(path, sizeof path, "%s/nope.ini", tmpdir);
  config_error_t err;
  ck_assert_ptr_null(load(path, NULL, 0, &err));
  char expect[400];
  snprintf(expect, sizeof expect, "%s: cannot open: No such file or directory", path);
  ck_assert_str_eq(err.message, expect);
  /* A directory opens but cannot be read. */
  ck_assert_ptr_null(load(tmpdir, NULL, 0, &err));
  snprintf(expect, sizeof expect, "%s: cannot read: Is a directory", tmpdir);
  ck_assert_str_eq(err.message, expect);
}
END_TEST

START_TEST(nul_byte_in_file) {
  const char *path = write_tmp("[batch]\nlinger_ms = 1\0 2\n", 25);
  config_error_t err;
  ck_assert_ptr_null(load(path, NULL, 0, &err));
  char expect[400];
  snprintf(expect, sizeof expect, "%s:2: NUL byte in the line", path);
  ck_assert_str_eq(err.message, expect);
}
END_TEST

START_TEST(unreadable_value_file) {
  if (geteuid() == 0) return; /* root reads everything */
  const char *secret = write_ini("mongodb://h\n");
  ck_assert_int_eq(chmod(secret, 0), 0);
  char ini[400];
  snprintf(ini, sizeof ini, "[store]\nuri_file = %s\n", secret);
  const char *path = write_ini(ini);
  config_error_t err;
  ck_assert_ptr_null(load(path, NULL, 0, &err));
  char expect[600];
  snprintf(expect, sizeof expect, "%s:2: store.uri_file: cannot read %s: Permission denied", path, secret);
  ck_assert_str_eq(err.message, expect);
}
END_TEST

START_TEST(value_file_too_large) {
  size_t n = 1024 * 1024 + 1;
  char *big = malloc(n);
  memset(big, 'a', n);
  const char *secret = write_tmp(big, n);
  free(big);
  char set[400];
  snprintf(set, sizeof set, "kafka.group_file=%s", secret);
  char *sets[] = {set};
  config_error_t err;
  ck_assert_ptr_null(load(NULL, sets, 1, &err));
  char expect[600];
  snprintf(expect, sizeof expect, "--set kafka.group_file: %s is larger than 1048576 bytes", secret);
  ck_assert_str_eq(err.message, expect);
  /* Exactly 1 MiB is fine. */
  big = malloc(n - 1);
  memset(big, 'g', n - 1);
  secret = write_tmp(big, n - 1);
  free(big);
  snprintf(set, sizeof set, "kafka.group_file=%s", secret);
  config_t *c = load_ok(NULL, sets, 1);
  ck_assert_uint_eq(strlen(c->kafka_group), n - 1);
  config_destroy(c);
}
END_TEST

START_TEST(long_key) {
  char set[300];
  memset(set, 'k', sizeof set);
  memcpy(set, "batch.", 6);
  strcpy(set + 6 + 201, "=1");
  char *sets[] = {set};
  config_error_t err;
  ck_assert_ptr_null(load(NULL, sets, 1, &err));
  ck_assert_str_eq(err.message, "--set: key longer than 200 characters: batch.kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk...");
}
END_TEST

/* An error is one line even when it quotes a value that
 * holds a newline or another control character: --set and the environment
 * can carry any byte. */
START_TEST(error_quoting_control_characters_is_one_line) {
  char *sets[] = {"batch.lin\nger\x7f=1"};
  config_error_t err;
  ck_assert_ptr_null(load(NULL, sets, 1, &err));
  ck_assert_str_eq(err.message, "--set batch.lin\\nger\\x7f: unknown key");

  char *rk[] = {"kafka.rdkafka.bogus\r\n\tprop=1"};
  ck_assert_ptr_null(load(NULL, rk, 1, &err));
  ck_assert_msg(!strpbrk(err.message, "\r\n\t"), "%s", err.message);
  ck_assert_msg(strstr(err.message, "bogus\\r\\n\\tprop"), "%s", err.message);
}
END_TEST

/* ---- precedence ----------------------------------------------------------- */

/* Loads path, sets and the environment, and checks the winning
 * batch.linger_ms and kafka.rdkafka.client.id (NULL: no rdkafka key). */
static void expect_linger_client(const char *path, char **sets, size_t nsets, int64_t linger, const char *client) {
  config_t *c = load_ok(path, sets, nsets);
  ck_assert_int_eq(c->batch_linger_ms, linger);
  if (client) {
    ck_assert_uint_eq(c->rdkafka_count, 1);
    ck_assert_str_eq(c->rdkafka[0].value, client);
  } else {
    ck_assert_uint_eq(c->rdkafka_count, 0);
  }
  config_destroy(c);
}

START_TEST(precedence) {
  const char *path = write_ini("[batch]\nlinger_ms = 10\n[kafka]\nrdkafka.client.id = from-file\n");
  char *sets[] = {"batch.linger_ms=30", "kafka.rdkafka.client.id=from-set"};
  expect_linger_client(NULL, NULL, 0, 100, NULL);
  expect_linger_client(path, NULL, 0, 10, "from-file");

  setenv("AGGREGATOR_BATCH_LINGER_MS", "20", 1);
  setenv("AGGREGATOR_KAFKA_RDKAFKA_CLIENT_ID", "from-env", 1);
  expect_linger_client(path, NULL, 0, 20, "from-env");
  expect_linger_client(path, sets, 2, 30, "from-set");
  /* env and --set without a file */
  expect_linger_client(NULL, sets, 1, 30, "from-env");

  /* Spaces and tabs around an environment value are removed, as in the file
   * and with --set, so that `config show` reads back as what is loaded. */
  setenv("AGGREGATOR_BATCH_LINGER_MS", " 40\t", 1);
  setenv("AGGREGATOR_KAFKA_RDKAFKA_CLIENT_ID", "\tpadded ", 1);
  expect_linger_client(NULL, NULL, 0, 40, "padded");

  /* The empty string is a value. */
  setenv("AGGREGATOR_METRICS_LISTEN", "", 1);
  char *listen[] = {"metrics.listen=127.0.0.1:1"};
  config_t *c = load_ok(NULL, NULL, 0);
  ck_assert_str_eq(c->metrics_listen, "");
  config_destroy(c);
  c = load_ok(NULL, listen, 1);
  ck_assert_str_eq(c->metrics_listen, "127.0.0.1:1");
  config_destroy(c);
}
END_TEST

/* Only AGGREGATOR_<SECTION>_ names are read, upper case. */
START_TEST(env_outside_sections_ignored) {
  setenv("AGGREGATOR_SERVICE_HOST", "10.0.0.1", 1);
  setenv("AGGREGATOR_batch_linger_ms", "5", 1);
  config_t *c = load_ok(NULL, NULL, 0);
  ck_assert_int_eq(c->batch_linger_ms, 100);
  config_destroy(c);
}
END_TEST

/* ---- URI options: agreement with libmongoc ---------------------------------- */

static int uri_unsupported_logged;
static void uri_log_capture(mongoc_log_level_t level, const char *domain, const char *message, void *data) {
  (void)level, (void)domain, (void)data;
  if (strstr(message, "Unsupported URI option")) uri_unsupported_logged++;
}

/* config_uri_option_known says what libmongoc does: every option name of
 * its header, in any case, and names it does not know, parsed by libmongoc
 * itself; an unknown one is exactly one it logs as unsupported. */
START_TEST(uri_options_agree_with_libmongoc) {
  static const char *const names[] = {
      MONGOC_URI_APPNAME, MONGOC_URI_AUTHMECHANISM, MONGOC_URI_AUTHMECHANISMPROPERTIES, MONGOC_URI_AUTHSOURCE,
      MONGOC_URI_CANONICALIZEHOSTNAME, MONGOC_URI_CONNECTTIMEOUTMS, MONGOC_URI_COMPRESSORS,
      MONGOC_URI_DIRECTCONNECTION, MONGOC_URI_GSSAPISERVICENAME, MONGOC_URI_HEARTBEATFREQUENCYMS, MONGOC_URI_JOURNAL,
      MONGOC_URI_LOADBALANCED, MONGOC_URI_LOCALTHRESHOLDMS, MONGOC_URI_MAXIDLETIMEMS, MONGOC_URI_MAXPOOLSIZE,
      MONGOC_URI_MAXSTALENESSSECONDS, MONGOC_URI_MINPOOLSIZE, MONGOC_URI_READCONCERNLEVEL, MONGOC_URI_READPREFERENCE,
      MONGOC_URI_READPREFERENCETAGS, MONGOC_URI_REPLICASET, MONGOC_URI_RETRYREADS, MONGOC_URI_RETRYWRITES,
      MONGOC_URI_SAFE, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, MONGOC_URI_SERVERSELECTIONTRYONCE, MONGOC_URI_SLAVEOK,
      MONGOC_URI_SOCKETCHECKINTERVALMS, MONGOC_URI_SOCKETTIMEOUTMS, MONGOC_URI_SRVSERVICENAME,
      MONGOC_URI_SRVMAXHOSTS, MONGOC_URI_TLS, MONGOC_URI_TLSCERTIFICATEKEYFILE,
      MONGOC_URI_TLSCERTIFICATEKEYFILEPASSWORD, MONGOC_URI_TLSCAFILE, MONGOC_URI_TLSALLOWINVALIDCERTIFICATES,
      MONGOC_URI_TLSALLOWINVALIDHOSTNAMES, MONGOC_URI_TLSINSECURE, MONGOC_URI_TLSDISABLECERTIFICATEREVOCATIONCHECK,
      MONGOC_URI_TLSDISABLEOCSPENDPOINTCHECK, MONGOC_URI_W, MONGOC_URI_WAITQUEUEMULTIPLE,
      MONGOC_URI_WAITQUEUETIMEOUTMS, MONGOC_URI_WTIMEOUTMS, MONGOC_URI_ZLIBCOMPRESSIONLEVEL, MONGOC_URI_SSL,
      MONGOC_URI_SSLCLIENTCERTIFICATEKEYFILE, MONGOC_URI_SSLCLIENTCERTIFICATEKEYPASSWORD,
      MONGOC_URI_SSLCERTIFICATEAUTHORITYFILE, MONGOC_URI_SSLALLOWINVALIDCERTIFICATES,
      MONGOC_URI_SSLALLOWINVALIDHOSTNAMES, "replicaSet", "REPLICASET", "replicaSett", "frobnicate", "tl",
      "repl%69caSet", "maxConnecting", "timeoutMS", "proxyHost",
  };
  mongoc_log_set_handler(uri_log_capture, NULL);
  for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
    char uri[300];
    snprintf(uri, sizeof uri, "mongodb://h/?%s=%s", names[i],
             mongoc_uri_option_is_bool(names[i]) ? "true" : mongoc_uri_option_is_int32(names[i]) ? "1" : "x");
    uri_unsupported_logged = 0;
    mongoc_uri_t *u = mongoc_uri_new_with_error(uri, NULL);
    mongoc_uri_destroy(u);
    ck_assert_msg(config_uri_option_known(names[i]) == (uri_unsupported_logged == 0),
                  "%s: known %d, libmongoc logged it unsupported %d time(s)", names[i],
                  config_uri_option_known(names[i]), uri_unsupported_logged);
  }
  mongoc_log_set_handler(NULL, NULL);
}
END_TEST

/* Known options in any case and any number load; the URI keeps them as written. */
START_TEST(uri_known_options_load) {
  char *sets[] = {"store.uri=mongodb://app:pw@h1,h2/?replicaSet=rs0&TLS=true&authSource=admin&w=majority"
                  "&compressors=zlib&appName=agg&readPreference=secondary&readPreferenceTags=dc:ny"
                  "&authMechanism=SCRAM-SHA-256&readConcernLevel=local&retryWrites=false"};
  config_t *c = load_ok(NULL, sets, 1);
  ck_assert_str_eq(c->store_uri, sets[0] + strlen("store.uri="));
  config_destroy(c);
}
END_TEST

/* ---- where values came from ---------------------------------------------- */

static const config_origin_t *origin_of(const config_t *c, const char *section, const char *key) {
  const config_prop_t *p = config_prop_find(section, key);
  ck_assert_ptr_nonnull(p);
  return &c->origins[p - config_props];
}

static char *show_origin(const config_t *cfg) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  config_show_origin(cfg, f);
  fclose(f);
  return text;
}

/* Each source names itself: default, FILE:LINE, the variable, --set, and the
 * file a key_file value was read from; the show keeps secrets masked and
 * loads back as the same configuration. */
START_TEST(origins) {
  const char *uri = write_ini("mongodb://app:s3cr3t@db1:27017/?tls=true\n");
  char ini[600];
  snprintf(ini, sizeof ini,
           "[batch]\nlinger_ms = 10\nmax_commands = 11\n[store]\nuri_file = %s\n[kafka]\nrdkafka.client.id = c1\n",
           uri);
  const char *path = write_ini(ini);
  setenv("AGGREGATOR_BATCH_LINGER_MS", "20", 1);
  setenv("AGGREGATOR_KAFKA_GROUP", "g-env", 1);
  char *sets[] = {"batch.linger_ms=30", "kafka.rdkafka.sasl.password=kafka-s3cret"};
  config_t *c = load_ok(path, sets, 2);

  ck_assert_int_eq(origin_of(c, "batch", "linger_ms")->kind, CONFIG_ORIGIN_SET);
  ck_assert_int_eq(origin_of(c, "batch", "max_commands")->kind, CONFIG_ORIGIN_FILE);
  ck_assert_int_eq(origin_of(c, "batch", "max_commands")->line, 3);
  ck_assert_int_eq(origin_of(c, "kafka", "group")->kind, CONFIG_ORIGIN_ENV);
  ck_assert_str_eq(origin_of(c, "kafka", "group")->env, "AGGREGATOR_KAFKA_GROUP");
  ck_assert_int_eq(origin_of(c, "store", "uri")->kind, CONFIG_ORIGIN_FILE);
  ck_assert_str_eq(origin_of(c, "store", "uri")->value_file, uri);
  ck_assert_int_eq(origin_of(c, "log", "level")->kind, CONFIG_ORIGIN_DEFAULT);
  ck_assert_ptr_null(origin_of(c, "log", "level")->value_file);
  ck_assert_uint_eq(c->rdkafka_count, 2);
  ck_assert_int_eq(c->rdkafka[0].origin.kind, CONFIG_ORIGIN_FILE);
  ck_assert_int_eq(c->rdkafka[0].origin.line, 7);
  ck_assert_int_eq(c->rdkafka[1].origin.kind, CONFIG_ORIGIN_SET);

  char *text = show_origin(c);
  char want[800];
  const char *const lines[] = {
      "# origin: --set\nlinger_ms = 30\n",
      "# origin: {FILE}:3\nmax_commands = 11\n",
      "# origin: environment AGGREGATOR_KAFKA_GROUP\ngroup = g-env\n",
      "# origin: {FILE}:5, read from {AUX}\nuri_file = {AUX}\n",
      "# origin: default\nlevel = info\n",
      "# origin: {FILE}:7\nrdkafka.client.id = c1\n",
      "# origin: --set\nrdkafka.sasl.password = ***\n",
  };
  for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
    expand(want, sizeof want, lines[i], path, uri);
    ck_assert_msg(strstr(text, want), "show --origin lacks\n%s\nin\n%s", want, text);
  }
  ck_assert_ptr_null(strstr(text, "s3cr3t"));
  ck_assert_ptr_null(strstr(text, "kafka-s3cret"));

  /* The comments change nothing: the output loads back as the
   * configuration it shows, but for the secret given as a value, which
   * show masks and the loader refuses to take as "***". */
  clear_env();
  config_error_t err;
  ck_assert_ptr_null(load(write_ini(text), NULL, 0, &err));
  ck_assert_uint_eq(err.count, 1);
  ck_assert_msg(strstr(err.message, ": kafka.rdkafka.sasl.password: the value is ***, which is how config show masks"),
                "%s", err.message);
  free(text);
  config_destroy(c);
}
END_TEST

/* SIGHUP: a live key takes the new value's origin with it. */
START_TEST(origins_follow_live_reload) {
  char *a[] = {"batch.linger_ms=30"};
  config_t *cur = load_ok(NULL, a, 1);
  setenv("AGGREGATOR_BATCH_LINGER_MS", "40", 1);
  config_t *next = load_ok(NULL, NULL, 0);
  ck_assert(config_apply_live(cur, next, NULL, 0));
  ck_assert_int_eq(cur->batch_linger_ms, 40);
  ck_assert_int_eq(origin_of(cur, "batch", "linger_ms")->kind, CONFIG_ORIGIN_ENV);
  ck_assert_str_eq(origin_of(cur, "batch", "linger_ms")->env, "AGGREGATOR_BATCH_LINGER_MS");
  config_destroy(next);
  config_destroy(cur);
}
END_TEST

/* A variable under the prefix that names no section warns, naming the
 * closest key's variable when one is close; it sets nothing and is no
 * error. Kubernetes' variables for a Service named "aggregator" pass
 * silently; names that only resemble them warn. */
START_TEST(env_unknown_warns) {
  static const struct {
    const char *name, *warning; /* warning NULL: none */
  } cases[] = {
      {"AGGREGATOR_BACTH_MAX_COMMANDS",
       "environment AGGREGATOR_BACTH_MAX_COMMANDS names no configuration key (did you mean "
       "AGGREGATOR_BATCH_MAX_COMMANDS?); ignored"},
      {"AGGREGATOR_STOR_URI_FILE",
       "environment AGGREGATOR_STOR_URI_FILE names no configuration key (did you mean AGGREGATOR_STORE_URI_FILE?); "
       "ignored"},
      {"AGGREGATOR_batch_linger_ms",
       "environment AGGREGATOR_batch_linger_ms names no configuration key (did you mean "
       "AGGREGATOR_BATCH_LINGER_MS?); ignored"},
      {"AGGREGATOR_KAFAK_RDKAFKA_CLIENT_ID",
       "environment AGGREGATOR_KAFAK_RDKAFKA_CLIENT_ID names no configuration key (did you mean "
       "AGGREGATOR_KAFKA_RDKAFKA_CLIENT_ID?); ignored"},
      {"AGGREGATOR_WRAPPER_HOME", "environment AGGREGATOR_WRAPPER_HOME names no configuration key; ignored"},
      {"AGGREGATOR_PORT_X", "environment AGGREGATOR_PORT_X names no configuration key; ignored"},
      {"AGGREGATOR_SERVICE_HOSTS", "environment AGGREGATOR_SERVICE_HOSTS names no configuration key; ignored"},
      {"AGGREGATOR_SERVICE_HOST", NULL},
      {"AGGREGATOR_SERVICE_PORT", NULL},
      {"AGGREGATOR_SERVICE_PORT_METRICS", NULL},
      {"AGGREGATOR_PORT", NULL},
      {"AGGREGATOR_PORT_9464_TCP", NULL},
      {"AGGREGATOR_PORT_9464_TCP_PROTO", NULL},
      {"AGGREGATOR_PORT_9464_TCP_PORT", NULL},
      {"AGGREGATOR_PORT_9464_TCP_ADDR", NULL},
      {"AGGREGATOR_BATCH_LINGER_MS", NULL}, /* a key: no warning */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    clear_env();
    setenv(cases[i].name, "5", 1);
    config_t *c = load_ok(NULL, NULL, 0);
    if (!cases[i].warning) {
      ck_assert_msg(c->warnings_count == 0, "%s: %s", cases[i].name, c->warnings_count ? c->warnings[0] : "");
    } else {
      ck_assert_uint_eq(c->warnings_count, 1);
      ck_assert_str_eq(c->warnings[0], cases[i].warning);
      ck_assert_int_eq(c->batch_max_commands, 20000); /* set nothing */
    }
    config_destroy(c);
  }
  /* Every such variable warns once, and a second load starts afresh. */
  clear_env();
  setenv("AGGREGATOR_BACTH_MAX_COMMANDS", "5", 1);
  setenv("AGGREGATOR_WRAPPER_HOME", "/x", 1);
  config_t *c = load_ok(NULL, NULL, 0);
  ck_assert_uint_eq(c->warnings_count, 2);
  ck_assert(config_load(c, NULL, NULL, 0, NULL));
  ck_assert_uint_eq(c->warnings_count, 2);
  config_destroy(c);
}
END_TEST

/* ---- _file values --------------------------------------------------------- */

START_TEST(value_files) {
  const char *uri = write_ini("mongodb://app:s3cr3t@db1:27017/?tls=true\r\n\n");
  const char *kpw = write_ini("kafka-pw\n");
  const char *lg = write_ini("250");
  char ini[800];
  snprintf(ini, sizeof ini,
           "[store]\nuri_file = %s\n[kafka]\nrdkafka.sasl.password_file = %s\n[batch]\nlinger_ms_file = %s\n", uri,
           kpw, lg);
  const char *path = write_ini(ini);
  config_t *c = load_ok(path, NULL, 0);
  ck_assert_str_eq(c->store_uri, "mongodb://app:s3cr3t@db1:27017/?tls=true");
  ck_assert_uint_eq(c->rdkafka_count, 1);
  ck_assert_str_eq(c->rdkafka[0].name, "sasl.password");
  ck_assert_str_eq(c->rdkafka[0].value, "kafka-pw");
  ck_assert_int_eq(c->batch_linger_ms, 250);
  config_destroy(c);

  /* From the environment. */
  setenv("AGGREGATOR_KAFKA_RDKAFKA_SASL_PASSWORD_FILE", lg, 1);
  c = load_ok(path, NULL, 0);
  ck_assert_str_eq(c->rdkafka[0].value, "250");
  config_destroy(c);
  unsetenv("AGGREGATOR_KAFKA_RDKAFKA_SASL_PASSWORD_FILE");

  /* A file named by a source that loses is never read. */
  const char *broken = write_ini("[store]\nuri_file = /nonexistent/secret\n");
  char *sets[] = {"store.uri=mongodb://other:27017"};
  c = load_ok(broken, sets, 1);
  ck_assert_str_eq(c->store_uri, "mongodb://other:27017");
  config_destroy(c);
  setenv("AGGREGATOR_STORE_URI_FILE", uri, 1);
  c = load_ok(broken, NULL, 0);
  ck_assert_str_eq(c->store_uri, "mongodb://app:s3cr3t@db1:27017/?tls=true");
  config_destroy(c);
}
END_TEST

/* ---- show ------------------------------------------------------------------ */

START_TEST(show_redacts_secrets) {
  char set_pw[300];
  set_file(set_pw, sizeof set_pw, "kafka.rdkafka.sasl.password_file", "kafka-hunter2\n");
  char *sets[] = {"store.uri=mongodb://app:hunter2@db1:27017,db2/?tls=true&tlsCertificateKeyFilePassword="
                  "hunter3&authSource=admin",
                  set_pw, "kafka.rdkafka.ssl.key.password=hunter4", "kafka.rdkafka.client.id=visible-id"};
  config_t *c = load_ok(NULL, sets, 4);
  char *text = show(c);
  ck_assert_ptr_null(strstr(text, "hunter"));
  ck_assert_ptr_nonnull(
      strstr(text, "\nuri = mongodb://app:***@db1:27017,db2/?tls=true&tlsCertificateKeyFilePassword=***"
                   "&authSource=admin\n"));
  char line[400];
  snprintf(line, sizeof line, "\nrdkafka.sasl.password_file = %s\n", strchr(set_pw, '=') + 1);
  ck_assert_ptr_nonnull(strstr(text, line));
  ck_assert_ptr_nonnull(strstr(text, "\nrdkafka.ssl.key.password = ***\n"));
  ck_assert_ptr_nonnull(strstr(text, "\nrdkafka.client.id = visible-id\n"));
  free(text);
  config_destroy(c);
}
END_TEST

/* Strings read through _file keys are secrets wherever they go; numbers are
 * not (a secret "100" would blank every 100 in the logs). */
START_TEST(show_redacts_file_strings) {
  char s1[300], s2[300], s3[300];
  char *sets[] = {set_file(s1, sizeof s1, "kafka.group_file", "team-Kq7@x\n"),
                  set_file(s2, sizeof s2, "batch.linger_ms_file", "250\n"),
                  set_file(s3, sizeof s3, "kafka.rdkafka.sasl.username_file", "svc-Kq8\n")};
  config_t *c = load_ok(NULL, sets, 3);
  char *text = show(c);
  ck_assert_msg(!strstr(text, "Kq7") && !strstr(text, "Kq8"), "%s", text);
  /* shown as the key_file and its path, which loads back as the same value */
  char line[400];
  snprintf(line, sizeof line, "\ngroup_file = %s\n", strchr(s1, '=') + 1);
  ck_assert_ptr_nonnull(strstr(text, line));
  snprintf(line, sizeof line, "\nlinger_ms_file = %s\n", strchr(s2, '=') + 1);
  ck_assert_ptr_nonnull(strstr(text, line));
  snprintf(line, sizeof line, "\nrdkafka.sasl.username_file = %s\n", strchr(s3, '=') + 1);
  ck_assert_ptr_nonnull(strstr(text, line));
  free(text);
  /* and every one of them is scrubbed from library text */
  redact_set_t *secrets = redact_set_new();
  config_collect_secrets(c, secrets);
  model_buf_t b = MODEL_BUF_INIT;
  const char *msg = "group team-Kq7@x user svc-Kq8 linger 250";
  redact_set_scrub(secrets, msg, strlen(msg), &b);
  ck_assert_str_eq(b.data, "group *** user *** linger 250");
  model_buf_destroy(&b);
  redact_set_destroy(secrets);
  /* a later plain value replaces a file's content */
  setenv("AGGREGATOR_KAFKA_GROUP", "plain-group", 1);
  config_destroy(c);
  char *sets2[] = {s2};
  c = load_ok(NULL, sets2, 1);
  text = show(c);
  ck_assert_ptr_nonnull(strstr(text, "\ngroup = plain-group\n"));
  free(text);
  config_destroy(c);
  unsetenv("AGGREGATOR_KAFKA_GROUP");
}
END_TEST

/* show prints every key, and what it prints loads back to the same values. */
/* Text of show(c) without its "# file:" line (which names the file loaded). */
static char *show_body(const config_t *c) {
  char *text = show(c);
  const char *f = strstr(text, "\n# file: ");
  if (!f) return text;
  size_t at = (size_t)(f - text), skip = strcspn(f + 1, "\n") + 1;
  char *body = malloc(strlen(text) + 1);
  ck_assert_ptr_nonnull(body);
  memcpy(body, text, at);
  strcpy(body + at, text + at + skip);
  free(text);
  return body;
}

/* show -> load back -> show gives the same text: values read through _file
 * keys are shown as those keys with their paths (never the secret), in the
 * file, from the environment or from --set alike. */
START_TEST(show_file_keys_round_trip) {
  char s1[300], s2[300], s3[300];
  char *sets[] = {set_file(s1, sizeof s1, "kafka.rdkafka.sasl.password_file", "Kpw-9z\n"),
                  "kafka.rdkafka.security.protocol=SASL_SSL", "kafka.rdkafka.sasl.mechanism=PLAIN",
                  "kafka.rdkafka.sasl.username=u", set_file(s2, sizeof s2, "log.level_file", "debug\n"),
                  "kafka.rdkafka.client.id=x"};
  const char *ini = write_ini("[kafka]\ngroup = g\n");
  setenv("AGGREGATOR_STORE_URI_FILE", write_ini("mongodb://u:Kpw-8y@h/\n"), 1);
  snprintf(s3, sizeof s3, "%s", getenv("AGGREGATOR_STORE_URI_FILE"));
  config_t *c = load_ok(ini, sets, 6);
  unsetenv("AGGREGATOR_STORE_URI_FILE");
  char *text = show_body(c);
  ck_assert_msg(!strstr(text, "Kpw"), "%s", text);
  char line[400];
  snprintf(line, sizeof line, "\nrdkafka.sasl.password_file = %s\n", strchr(s1, '=') + 1);
  ck_assert_msg(strstr(text, line), "%s", text);
  snprintf(line, sizeof line, "\nuri_file = %s\n", s3);
  ck_assert_msg(strstr(text, line), "%s", text);
  snprintf(line, sizeof line, "\nlevel_file = %s\n", strchr(s2, '=') + 1);
  ck_assert_msg(strstr(text, line), "%s", text);
  config_t *again = load_ok(write_ini(text), NULL, 0);
  char *text2 = show_body(again);
  ck_assert_str_eq(text2, text);
  for (size_t i = 0; i < config_props_count; i++)
    ck_assert_msg(config_prop_equal(&config_props[i], c, again), "%s differs", config_props[i].key);
  ck_assert_str_eq(again->store_uri, "mongodb://u:Kpw-8y@h/");
  free(text);
  free(text2);
  config_destroy(again);
  config_destroy(c);
}
END_TEST

/* A secret that is exactly the mask config show prints ("***") is refused:
 * the output of show with a secret pasted back unedited. */
START_TEST(masked_secret_refused) {
  config_error_t err;
  char *uri[] = {"store.uri=mongodb://u:***@h/"};
  ck_assert_ptr_null(load(NULL, uri, 1, &err));
  ck_assert_str_eq(err.message, "--set store.uri: the password is ***, which is how config show masks it: give the "
                                "password itself");
  const char *ini = write_ini("[kafka]\nrdkafka.ssl.key.password = ***\n");
  ck_assert_ptr_null(load(ini, NULL, 0, &err));
  char expect[600];
  snprintf(expect, sizeof expect,
           "%s:2: kafka.rdkafka.ssl.key.password: the value is ***, which is how config show masks a secret: give "
           "the secret itself",
           ini);
  ck_assert_str_eq(err.message, expect);
  /* "***" where no secret is expected is a value like any other */
  char *plain[] = {"kafka.rdkafka.client.id=***", "store.uri=mongodb://h/?appname=***"};
  config_destroy(load_ok(NULL, plain, 2));
}
END_TEST

START_TEST(show_round_trips) {
  char *sets[] = {"kafka.topics=a, b", "batch.max_pending_bytes=3MiB", "metrics.listen=127.0.0.1:9464",
                  "log.format=text", "kafka.rdkafka.client.id=x#y", "store.write_concern=3"};
  config_t *c = load_ok(NULL, sets, 6);
  char *text = show(c);
  for (size_t i = 0; i < config_props_count; i++) {
    char line[128];
    snprintf(line, sizeof line, "\n%s =", config_props[i].key);
    ck_assert_msg(strstr(text, line), "%s missing from show", config_props[i].key);
  }
  const char *path = write_ini(text);
  config_error_t err;
  config_t *again = load(path, NULL, 0, &err);
  ck_assert_msg(again, "%s\n%s", err.message, text);
  for (size_t i = 0; i < config_props_count; i++)
    ck_assert_msg(config_prop_equal(&config_props[i], c, again), "%s differs", config_props[i].key);
  ck_assert_uint_eq(again->rdkafka_count, 1);
  ck_assert_str_eq(again->rdkafka[0].value, "x#y");
  free(text);
  config_destroy(again);
  config_destroy(c);
}
END_TEST

/* ---- describe and the generated reference --------------------------------- */

START_TEST(describe_lists_every_key) {
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  config_describe(f);
  fclose(f);
  for (size_t i = 0; i < config_props_count; i++) {
    const config_prop_t *p = &config_props[i];
    char want[256], env[128];
    config_prop_env_name(p, env, sizeof env);
    snprintf(want, sizeof want, "  %s.%s = %s\n", p->section, p->key, *p->def ? p->def : "(empty)");
    ck_assert_msg(strstr(text, want), "missing: %s", want);
    ck_assert_msg(strstr(text, env), "missing: %s", env);
  }
  ck_assert_ptr_nonnull(strstr(text, "  batch.linger_ms = 100\n      integer, 0..60000; live; env "
                                     "AGGREGATOR_BATCH_LINGER_MS\n"));
  ck_assert_ptr_nonnull(strstr(text, "  store.uri = mongodb://localhost:27017\n      uri, mongodb:// or "
                                     "mongodb+srv:// URI; restart; secret; env AGGREGATOR_STORE_URI\n"));
  ck_assert_ptr_nonnull(strstr(text, "kafka.rdkafka.<property>"));
  free(text);
}
END_TEST

START_TEST(docs_config_md_is_current) {
  const char *src = getenv("AGG_SOURCE_DIR"), *bin = getenv("AGG_BINARY_DIR");
  ck_assert_msg(src && bin, "AGG_SOURCE_DIR or AGG_BINARY_DIR is not set");
  char path[1024], cmd[1200];
  snprintf(path, sizeof path, "%s/docs/CONFIG.md", src);
  snprintf(cmd, sizeof cmd, "'%s/gen_config_doc'", bin);
  char *committed = NULL, *generated = NULL;
  size_t clen = 0, glen = 0;
  char buf[4096];
  size_t n;
  FILE *f = fopen(path, "rb");
  ck_assert_msg(f, "%s missing: run gen_config_doc %s", path, path);
  FILE *m = open_memstream(&committed, &clen);
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) fwrite(buf, 1, n, m);
  fclose(f);
  fclose(m);
  FILE *p = popen(cmd, "r");
  ck_assert_msg(p, "cannot run %s", cmd);
  m = open_memstream(&generated, &glen);
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) fwrite(buf, 1, n, m);
  fclose(m);
  ck_assert_int_eq(pclose(p), 0);
  ck_assert_msg(clen == glen && !memcmp(committed, generated, glen),
                "docs/CONFIG.md is stale: run `gen_config_doc %s` from the build directory", path);
  for (size_t i = 0; i < config_props_count; i++) {
    char key[128];
    snprintf(key, sizeof key, "`%s.%s`", config_props[i].section, config_props[i].key);
    ck_assert_msg(strstr(generated, key), "%s missing", key);
  }
  free(committed);
  free(generated);
}
END_TEST

/* The shipped example files are valid (production.ini needs its secrets). */
START_TEST(example_files_load) {
  const char *src = getenv("AGG_SOURCE_DIR");
  ck_assert_ptr_nonnull(src);
  static const char *const names[] = {"development.ini", "backfill.ini"};
  for (size_t i = 0; i < 2; i++) {
    char path[1024];
    snprintf(path, sizeof path, "%s/config/%s", src, names[i]);
    config_t *c = load_ok(path, NULL, 0);
    config_destroy(c);
  }
  char path[1024];
  snprintf(path, sizeof path, "%s/config/production.ini", src);
  const char *uri = write_ini("mongodb://aggregator:pw@mongo-0:27017/?tls=true&replicaSet=rs0\n");
  const char *pw = write_ini("kafka-pw\n");
  setenv("AGGREGATOR_STORE_URI_FILE", uri, 1);
  setenv("AGGREGATOR_KAFKA_RDKAFKA_SASL_PASSWORD_FILE", pw, 1);
  setenv("AGGREGATOR_KAFKA_RDKAFKA_SSL_CA_LOCATION", write_ini("ca\n"), 1); /* the CA it names must exist */
  config_t *c = load_ok(path, NULL, 0);
  ck_assert_str_eq(c->store_write_concern, "majority");
  config_destroy(c);
}
END_TEST

/* ---- SIGHUP merge ---------------------------------------------------------- */

START_TEST(apply_live) {
  config_error_t err;
  config_t *cur = load(NULL, NULL, 0, &err);
  char *sets[] = {"batch.linger_ms=5",    "batch.max_pending_bytes=2MiB", "cache.max_aggregates=7",
                  "log.level=debug",      "kafka.group=other",            "store.uri=mongodb://other",
                  "kafka.rdkafka.debug=all", "log.format=text",            "cache.max_bytes=3MiB"};
  config_t *next = load_ok(NULL, sets, 9);
  char restart[512];
  ck_assert(!config_apply_live(cur, next, restart, sizeof restart));
  ck_assert_str_eq(restart, "kafka.group,store.uri,log.format,kafka.rdkafka.debug");
  ck_assert_int_eq(cur->batch_linger_ms, 5);
  ck_assert_int_eq(cur->batch_max_pending_bytes, 2 << 20);
  ck_assert_int_eq(cur->cache_max_aggregates, 7);
  ck_assert_int_eq(cur->cache_max_bytes, 3 << 20);
  ck_assert_int_eq(cur->log_level, LOG_LEVEL_DEBUG);
  ck_assert_str_eq(cur->kafka_group, "aggregator");
  ck_assert_str_eq(cur->store_uri, "mongodb://localhost:27017");
  ck_assert_int_eq(cur->log_format, LOG_FORMAT_JSON);
  ck_assert_uint_eq(cur->rdkafka_count, 0);

  /* Nothing left to change live; the restart keys are still reported, and
   * a small buffer truncates without overflowing. */
  char small[12];
  ck_assert(!config_apply_live(cur, next, small, sizeof small));
  ck_assert_str_eq(small, "kafka.group");
  ck_assert(!config_apply_live(cur, next, NULL, 0));
  config_destroy(next);

  /* Only live keys changed: true, nothing to restart. rdkafka removed or changed needs a restart. */
  char *live[] = {"batch.max_commands=9"};
  next = load(NULL, live, 1, &err);
  config_t *fresh = load(NULL, NULL, 0, &err);
  ck_assert(config_apply_live(fresh, next, restart, sizeof restart));
  ck_assert_str_eq(restart, "");
  ck_assert_int_eq(fresh->batch_max_commands, 9);
  config_destroy(next);

  char *rk_a[] = {"kafka.rdkafka.debug=all", "kafka.rdkafka.client.id=a"};
  char *rk_b[] = {"kafka.rdkafka.client.id=b"};
  config_t *a = load(NULL, rk_a, 2, &err), *b = load(NULL, rk_b, 1, &err);
  ck_assert(!config_apply_live(a, b, restart, sizeof restart));
  ck_assert_str_eq(restart, "kafka.rdkafka.debug,kafka.rdkafka.client.id");
  config_destroy(a);
  config_destroy(b);
  config_destroy(fresh);
  config_destroy(cur);
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("config");
  TCase *tc = tcase_create("config");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, defaults);
  tcase_add_test(tc, load_nothing);
  tcase_add_test(tc, file_all_keys);
  tcase_add_test(tc, values_are_literal);
  tcase_add_loop_test(tc, good_value, 0, (int)(sizeof good_values / sizeof good_values[0]));
  tcase_add_loop_test(tc, error_message, 0, (int)(sizeof error_cases / sizeof error_cases[0]));
  tcase_add_test(tc, every_error_named);
  tcase_add_test(tc, errors_beyond_max_counted);
  tcase_add_test(tc, named_files_checked);
  tcase_add_test(tc, named_file_via_file_key);
  tcase_add_test(tc, sasl_needs_credentials);
  tcase_add_test(tc, missing_config_file);
  tcase_add_test(tc, error_quoting_control_characters_is_one_line);
  tcase_add_test(tc, nul_byte_in_file);
  tcase_add_test(tc, unreadable_value_file);
  tcase_add_test(tc, value_file_too_large);
  tcase_add_test(tc, long_key);
  tcase_add_test(tc, precedence);
  tcase_add_test(tc, env_outside_sections_ignored);
  tcase_add_test(tc, env_unknown_warns);
  tcase_add_test(tc, uri_options_agree_with_libmongoc);
  tcase_add_test(tc, uri_known_options_load);
  tcase_add_test(tc, origins);
  tcase_add_test(tc, origins_follow_live_reload);
  tcase_add_test(tc, value_files);
  tcase_add_test(tc, show_redacts_secrets);
  tcase_add_test(tc, show_redacts_file_strings);
  tcase_add_test(tc, show_round_trips);
  tcase_add_test(tc, show_file_keys_round_trip);
  tcase_add_test(tc, masked_secret_refused);
  tcase_add_test(tc, describe_lists_every_key);
  tcase_add_test(tc, docs_config_md_is_current);
  tcase_add_test(tc, example_files_load);
  tcase_add_test(tc, apply_live);
  suite_add_tcase(s, tc);
  return s;
}
