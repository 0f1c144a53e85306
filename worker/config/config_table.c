/* The configuration property table and the per-type parsing, formatting and
 * validation it drives. See config_table.h. */
#include "config_table.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mongoc/mongoc.h>

#include "oom.h"
#include "base/redact.h"
#include "base/store_shard.h"
#include "base/value.h"

_Static_assert(sizeof(log_level_t) == sizeof(int), "enum fields are stored as int");
_Static_assert(sizeof(log_format_t) == sizeof(int), "enum fields are stored as int");
_Static_assert(sizeof(config_group_protocol_t) == sizeof(int), "enum fields are stored as int");

#define KiB ((int64_t)1024)
#define MiB (KiB * 1024)
#define GiB (MiB * 1024)

/* ---- validators for string keys ------------------------------------------ */

static char *dup_or_die(const char *s, size_t n) { return oom_strndup(s, n); }

/* How an error names the value: quoted, or not at all for secrets. */
#define SHOWN_MAX 256
static const char *shown(const char *value, bool secret, char *tmp, size_t tmp_size) {
  if (secret) return "the value";
  snprintf(tmp, tmp_size, "'%s'", value);
  return tmp;
}

/* Splits a comma list, trims each item, checks it with item_ok and returns
 * the items joined by ',' (no spaces). `what` names one item in errors. */
static char *check_list(const char *value, bool secret, bool (*item_ok)(const char *s, size_t n), const char *what,
                        char *why, size_t why_size) {
  model_buf_t out = MODEL_BUF_INIT;
  const char *p = value;
  for (;;) {
    const char *end = strchr(p, ',');
    if (!end) end = p + strlen(p);
    const char *a = p, *b = end;
    while (a < b && isspace((unsigned char)*a)) a++;
    while (b > a && isspace((unsigned char)b[-1])) b--;
    if (a == b) {
      snprintf(why, why_size, "empty %s in the list", what);
      model_buf_destroy(&out);
      return NULL;
    }
    if (!item_ok(a, (size_t)(b - a))) {
      if (secret)
        snprintf(why, why_size, "an item is not a valid %s", what);
      else
        snprintf(why, why_size, "'%.*s' is not a valid %s", (int)(b - a), a, what);
      model_buf_destroy(&out);
      return NULL;
    }
    if (out.len) model_buf_putc(&out, ',');
    model_buf_append(&out, a, (size_t)(b - a));
    if (!*end) break;
    p = end + 1;
  }
  return out.data;
}

/* A broker as librdkafka takes it: host, host:port or proto://host:port;
 * librdkafka resolves and checks the rest when it connects. */
static bool broker_ok(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (isspace((unsigned char)s[i])) return false;
  return true;
}

static char *check_brokers(const char *v, bool secret, char *why, size_t n) {
  return check_list(v, secret, broker_ok, "broker", why, n);
}

/* Kafka's rule for topic names: [A-Za-z0-9._-]{1,249}, not "." or "..". */
static bool topic_ok(const char *s, size_t n) {
  if (n == 0 || n > 249) return false;
  if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) return false;
  for (size_t i = 0; i < n; i++)
    if (!isalnum((unsigned char)s[i]) && s[i] != '.' && s[i] != '_' && s[i] != '-') return false;
  return true;
}

static char *check_topics(const char *v, bool secret, char *why, size_t n) {
  return check_list(v, secret, topic_ok, "topic name", why, n);
}

static char *check_topic(const char *v, bool secret, char *why, size_t n) {
  char tmp[SHOWN_MAX];
  if (!topic_ok(v, strlen(v))) {
    snprintf(why, n, "%s is not a valid topic name ([A-Za-z0-9._-], 1..249 characters)", shown(v, secret, tmp, sizeof tmp));
    return NULL;
  }
  return dup_or_die(v, strlen(v));
}

/* The change topic: a topic name, or empty for no change events. */
static char *check_topic_or_empty(const char *v, bool secret, char *why, size_t n) {
  return *v ? check_topic(v, secret, why, n) : dup_or_die("", 0);
}

static char *check_nonempty(const char *v, bool secret, char *why, size_t n) {
  (void)secret;
  if (!*v) {
    snprintf(why, n, "must not be empty");
    return NULL;
  }
  return dup_or_die(v, strlen(v));
}

/* The options libmongoc applies by name rather than by type; every other
 * option it knows answers mongoc_uri_option_is_int32, _int64, _bool or
 * _utf8. An option it does not know it only logs and drops, so a misspelt
 * `replicaSett=rs0` would quietly change how the worker connects. */
static const char *const uri_options_by_name[] = {
    MONGOC_URI_AUTHMECHANISM, MONGOC_URI_AUTHMECHANISMPROPERTIES, MONGOC_URI_AUTHSOURCE,
    MONGOC_URI_COMPRESSORS,   MONGOC_URI_GSSAPISERVICENAME,        MONGOC_URI_READCONCERNLEVEL,
    MONGOC_URI_READPREFERENCETAGS, MONGOC_URI_W,
};

/* Every current option name of libmongoc's header, for "did you mean". */
static const char *const uri_option_names[] = {
    MONGOC_URI_APPNAME, MONGOC_URI_AUTHMECHANISM, MONGOC_URI_AUTHMECHANISMPROPERTIES, MONGOC_URI_AUTHSOURCE,
    MONGOC_URI_CANONICALIZEHOSTNAME, MONGOC_URI_CONNECTTIMEOUTMS, MONGOC_URI_COMPRESSORS,
    MONGOC_URI_DIRECTCONNECTION, MONGOC_URI_GSSAPISERVICENAME, MONGOC_URI_HEARTBEATFREQUENCYMS,
    MONGOC_URI_JOURNAL, MONGOC_URI_LOADBALANCED, MONGOC_URI_LOCALTHRESHOLDMS, MONGOC_URI_MAXIDLETIMEMS,
    MONGOC_URI_MAXPOOLSIZE, MONGOC_URI_MAXSTALENESSSECONDS, MONGOC_URI_MINPOOLSIZE, MONGOC_URI_READCONCERNLEVEL,
    MONGOC_URI_READPREFERENCE, MONGOC_URI_READPREFERENCETAGS, MONGOC_URI_REPLICASET, MONGOC_URI_RETRYREADS,
    MONGOC_URI_RETRYWRITES, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, MONGOC_URI_SERVERSELECTIONTRYONCE,
    MONGOC_URI_SOCKETCHECKINTERVALMS, MONGOC_URI_SOCKETTIMEOUTMS, MONGOC_URI_SRVSERVICENAME,
    MONGOC_URI_SRVMAXHOSTS, MONGOC_URI_TLS, MONGOC_URI_TLSCERTIFICATEKEYFILE,
    MONGOC_URI_TLSCERTIFICATEKEYFILEPASSWORD, MONGOC_URI_TLSCAFILE, MONGOC_URI_TLSALLOWINVALIDCERTIFICATES,
    MONGOC_URI_TLSALLOWINVALIDHOSTNAMES, MONGOC_URI_TLSINSECURE, MONGOC_URI_TLSDISABLECERTIFICATEREVOCATIONCHECK,
    MONGOC_URI_TLSDISABLEOCSPENDPOINTCHECK, MONGOC_URI_W, MONGOC_URI_WAITQUEUEMULTIPLE,
    MONGOC_URI_WAITQUEUETIMEOUTMS, MONGOC_URI_WTIMEOUTMS, MONGOC_URI_ZLIBCOMPRESSIONLEVEL,
};

bool config_uri_option_known(const char *name) {
  char lower[128];
  size_t n = strlen(name);
  if (n >= sizeof lower) return false;
  for (size_t i = 0; i <= n; i++) lower[i] = (char)tolower((unsigned char)name[i]);
  if (mongoc_uri_option_is_int32(lower) || mongoc_uri_option_is_int64(lower) || mongoc_uri_option_is_bool(lower) ||
      mongoc_uri_option_is_utf8(lower))
    return true;
  for (size_t i = 0; i < sizeof uri_options_by_name / sizeof uri_options_by_name[0]; i++)
    if (!strcmp(lower, uri_options_by_name[i])) return true;
  return false;
}

/* The first option of uri (parsed by libmongoc already) that libmongoc does
 * not know: false with why filled. Options start after the first '?' that
 * follows the '/' ending the hosts (libmongoc requires that '/'), and are
 * split at '&', names compared case-insensitively and not percent-decoded,
 * as libmongoc does. Names are shown, never values. */
static bool uri_options_known(const char *uri, char *why, size_t n) {
  const char *s = strstr(uri, "://");
  const char *slash = s ? strchr(s + 3, '/') : NULL;
  const char *q = slash ? strchr(slash, '?') : NULL;
  for (const char *p = q ? q + 1 : NULL; p && *p;) {
    size_t len = strcspn(p, "&");
    const char *eq = memchr(p, '=', len);
    size_t klen = eq ? (size_t)(eq - p) : len;
    char name[128];
    snprintf(name, sizeof name, "%.*s", (int)(klen < sizeof name ? klen : sizeof name - 1), p);
    if (klen && !config_uri_option_known(name)) {
      const char *best = NULL;
      size_t best_d = strlen(name) / 3 > 2 ? strlen(name) / 3 + 1 : 3;
      char lower[128];
      for (size_t i = 0; i <= strlen(name); i++) lower[i] = (char)tolower((unsigned char)name[i]);
      for (size_t i = 0; i < sizeof uri_option_names / sizeof uri_option_names[0]; i++) {
        size_t d = config_edit_distance(lower, uri_option_names[i]);
        if (d < best_d) best_d = d, best = uri_option_names[i];
      }
      if (best)
        snprintf(why, n, "unknown MongoDB URI option '%s' (did you mean %s? names are case-insensitive)", name, best);
      else
        snprintf(why, n, "unknown MongoDB URI option '%s'", name);
      return false;
    }
    p += len;
    if (*p) p++;
  }
  return true;
}

/* Parsed by libmongoc itself, so that `config check` catches what the store
 * would reject at startup, and what libmongoc would only warn about: an
 * option it does not know. */
static char *check_uri(const char *v, bool secret, char *why, size_t n) {
  char tmp[SHOWN_MAX];
  if (redact_uri_has_unescaped_at(v)) {
    snprintf(why, n, "%s is not a MongoDB URI: an '@' that does not end the user name and password before the "
             "hosts must be percent-encoded as %%40",
             shown(v, secret, tmp, sizeof tmp));
    return NULL;
  }
  bson_error_t e;
  mongoc_uri_t *uri = mongoc_uri_new_with_error(v, &e);
  if (!uri) {
    /* libmongoc quotes the part it rejects, password included ('Password
     * "..." must not have unescaped chars'). */
    redact_set_t *secrets = redact_set_new();
    redact_set_add_uri(secrets, v);
    redact_set_scrub_str(secrets, e.message, sizeof e.message);
    redact_set_destroy(secrets);
    snprintf(why, n, "%s is not a MongoDB URI: %s", shown(v, secret, tmp, sizeof tmp), e.message);
    explicit_bzero(e.message, sizeof e.message);
    return NULL;
  }
  mongoc_uri_destroy(uri);
  if (!uri_options_known(v, why, n)) return NULL;
  return dup_or_die(v, strlen(v));
}

/* MongoDB's restrictions on database names (Unix and Windows). */
static char *check_database(const char *v, bool secret, char *why, size_t n) {
  char tmp[SHOWN_MAX];
  size_t len = strlen(v);
  if (len == 0 || len > 63 || strpbrk(v, "/\\. \"$*<>:|?")) {
    snprintf(why, n, "%s is not a valid database name (1..63 bytes, none of /\\. \"$*<>:|?)",
             shown(v, secret, tmp, sizeof tmp));
    return NULL;
  }
  return dup_or_die(v, len);
}

static char *check_collection(const char *v, bool secret, char *why, size_t n) {
  char tmp[SHOWN_MAX];
  size_t len = strlen(v);
  if (len == 0 || len > 200 || strchr(v, '$') || !strncmp(v, "system.", 7)) {
    snprintf(why, n, "%s is not a valid collection name (1..200 bytes, no '$', not system.*)",
             shown(v, secret, tmp, sizeof tmp));
    return NULL;
  }
  return dup_or_die(v, len);
}

/* Parsed by value.h, as store.c parses it. Normalised ("03" is stored as
 * "3"). */
/* A field of the stored document whose value never changes for an _id
 * (store_shard.h): a shard key of any other field could move a document
 * between shards, which the filters the store sends cannot follow. */
static bool shard_field_ok(const char *s, size_t n) {
  store_shard_t bit;
  return store_shard_field(s, n, &bit);
}

static char *check_shard_key(const char *v, bool secret, char *why, size_t n) {
  if (!*v) return dup_or_die(v, 0);
  return check_list(v, secret, shard_field_ok, "shard key field (tenant, assignment or _id: the fields whose value "
                    "never changes for a document)", why, n);
}

static char *check_write_concern(const char *v, bool secret, char *why, size_t n) {
  int32_t w;
  if (value_parse_write_concern(v, &w)) {
    if (w == VALUE_W_MAJORITY) return dup_or_die("majority", 8);
    char buf[8];
    snprintf(buf, sizeof buf, "%d", (int)w);
    return dup_or_die(buf, strlen(buf));
  }
  char tmp[SHOWN_MAX];
  snprintf(why, n, "%s is not 'majority' or a member count 1..50 (0 is refused: writes must be acknowledged)",
           shown(v, secret, tmp, sizeof tmp));
  return NULL;
}

/* "" (disabled) or host:port, parsed by value.h as http.c parses it. */
static char *check_listen(const char *v, bool secret, char *why, size_t n) {
  value_listen_t l;
  if (!*v || value_parse_listen(v, &l)) return dup_or_die(v, strlen(v));
  char tmp[SHOWN_MAX];
  snprintf(why, n, "%s is not host:port (e.g. 127.0.0.1:9464, [::1]:9464; port 0..65535, 0 for any free port) or "
           "empty", shown(v, secret, tmp, sizeof tmp));
  return NULL;
}

/* ---- the table ----------------------------------------------------------- */

static const char *const log_levels[] = {"error", "warn", "info", "debug", NULL};
static const char *const log_formats[] = {"json", "text", NULL};
static const char *const booleans[] = {"false", "true", NULL};
/* In the order of config_group_protocol_t. */
static const char *const group_protocols[] = {"consumer", "classic", NULL};

#define OFF(field) offsetof(config_t, field)
#define STR(sec, key, tname, def, check, range, flags, field, doc) \
  {sec, key, CONFIG_TYPE_STRING, tname, def, 0, 0, NULL, check, range, flags, OFF(field), doc}
#define INT(sec, key, def, min, max, flags, field, doc) \
  {sec, key, CONFIG_TYPE_INT, "integer", def, min, max, NULL, NULL, NULL, flags, OFF(field), doc}
#define SIZE(sec, key, def, min, max, flags, field, doc) \
  {sec, key, CONFIG_TYPE_SIZE, "size", def, min, max, NULL, NULL, NULL, flags, OFF(field), doc}
#define ENUM(sec, key, def, values, flags, field, doc) \
  {sec, key, CONFIG_TYPE_ENUM, "enum", def, 0, 0, values, NULL, NULL, flags, OFF(field), doc}

const config_section_t config_sections[] = {
    {"kafka", "Where commands come from and where rejected commands go."},
    {"store", "Where aggregates go: MongoDB, or a server that speaks its wire protocol."},
    {"batch", "When the worker flushes its dirty aggregates, and how much unwritten state it may hold."},
    {"retry", "How the worker retries the store when it fails or is unreachable."},
    {"cache", "Clean aggregates kept in memory so that updates need no read."},
    {"limits", "Input limits."},
    {"replay", "How `replay` and `verify` rebuild aggregates from a file or the topics."},
    {"metrics", "The HTTP endpoint for /metrics, /healthz and /readyz."},
    {"log", "Logging on stderr."},
    {"shutdown", "How long SIGTERM or SIGINT may take."},
    {"changes", "Change events: every write of an aggregate announced on a topic (docs/CHANGES.md)."},
};
const size_t config_sections_count = sizeof config_sections / sizeof config_sections[0];

const config_prop_t config_props[] = {
    STR("kafka", "brokers", "list", "localhost:9092", check_brokers, "comma list of host:port", 0, kafka_brokers,
        "Bootstrap brokers (librdkafka `bootstrap.servers`)."),
    STR("kafka", "topics", "list", "assignment-commands", check_topics, "comma list of topic names", 0,
        kafka_topics, "Topics the commands are consumed from."),
    STR("kafka", "group", "string", "aggregator", check_nonempty, "non-empty", 0, kafka_group,
        "Consumer group id; every instance of one deployment uses the same group."),
    STR("kafka", "dlq_topic", "string", "assignment-commands-dlq", check_topic, "a topic name, not in kafka.topics",
        0, kafka_dlq_topic, "Dead-letter topic: rejected commands are produced here byte for byte, with x-error-* headers."),
    ENUM("kafka", "group_protocol", "consumer", group_protocols, 0, kafka_group_protocol,
         "How the group's instances share the partitions (librdkafka `group.protocol`). consumer: the "
         "next-generation protocol (brokers from Kafka 4.0), where a join or a leave moves only the partitions "
         "that must move, each handed over written and committed, and the others keep consuming; its session "
         "timeout and heartbeat are the broker's group settings (`group.consumer.session.timeout.ms`). classic: "
         "for brokers before 4.0; eager `roundrobin`, every instance stops for each rebalance. Every instance of "
         "one group uses the same one (docs/OPERATIONS.md, Scaling out)."),
    STR("store", "uri", "uri", "mongodb://localhost:27017", check_uri, "mongodb:// or mongodb+srv:// URI",
        CONFIG_SECRET, store_uri,
        "MongoDB connection string; TLS and authentication options go here. An option the MongoDB C driver "
        "does not know is refused (the driver would ignore it). Its password and credential "
        "options are redacted by `config show`; prefer `uri_file` to keep it out of the file."),
    STR("store", "database", "string", "school", check_database, "a MongoDB database name", 0, store_database,
        "Database of the aggregates collection."),
    STR("store", "collection", "string", "assignment_aggregates", check_collection, "a MongoDB collection name", 0,
        store_collection, "Collection holding one document per assignment."),
    STR("store", "write_concern", "string", "majority", check_write_concern, "majority, or 1..50", 0,
        store_write_concern,
        "Write concern `w` of every aggregate write (overrides any `w` in the URI); offsets are committed only "
        "after it is satisfied. 0 (unacknowledged) is refused."),
    STR("store", "shard_key", "list", "", check_shard_key, "comma list of tenant, assignment, _id; or empty", 0,
        store_shard_key,
        "The fields of the collection's shard key besides `_id`: every write's and every read's filter carries "
        "their values, so that a sharded cluster routes it to one shard. Empty for an unsharded collection or "
        "one sharded on `_id` (docs/OPERATIONS.md)."),
    INT("store", "connect_timeout_ms", "30000", 100, 3600000, 0, store_connect_timeout_ms,
        "How long a command that needs the store before it can begin (`verify`, `config check --connect`) waits "
        "for an unreachable store, and bounds each of its retries, before it fails with exit 1."),
    INT("batch", "max_commands", "20000", 1, 1000000, CONFIG_LIVE, batch_max_commands,
        "Flush once this many commands have been merged since the last flush."),
    INT("batch", "max_aggregates", "1000", 1, 100000, CONFIG_LIVE, batch_max_aggregates,
        "Flush once this many aggregates are dirty; also the most aggregates in one bulk write."),
    INT("batch", "linger_ms", "100", 0, 60000, CONFIG_LIVE, batch_linger_ms,
        "Flush once the oldest unwritten change is this old; 0 flushes after every command."),
    SIZE("batch", "max_pending_bytes", "64MiB", 1 * MiB, 16 * GiB, CONFIG_LIVE, batch_max_pending_bytes,
         "Memory bound on unwritten changes (the aggregates with changes not yet durable, their snapshots in "
         "flight, their bookkeeping and the messages kept for aggregates whose stored document is not loaded "
         "yet): past it the worker pauses fetching until a flush succeeds."),
    INT("batch", "stall_timeout_ms", "120000", 1000, 3600000, CONFIG_LIVE, batch_stall_timeout_ms,
        "A worker that holds unwritten changes and has landed no write for this long is stalled: it warns with "
        "the counts, answers /readyz 503 with the reason and sets aggregator_writer_stalled, which the shipped "
        "alert pages on. The default is twice the longest a single store call may take (its 60 s socket "
        "timeout), so no slow write alone trips it, and an operator hears of a stall within minutes."),
    INT("retry", "backoff_ms", "100", 1, 60000, 0, retry_backoff_ms,
        "First delay before retrying a failed store write; doubles on each failure, with jitter."),
    INT("retry", "backoff_max_ms", "10000", 1, 600000, 0, retry_backoff_max_ms,
        "Cap on the retry delay; must be >= retry.backoff_ms."),
    INT("cache", "max_aggregates", "100000", 0, 10000000, CONFIG_LIVE, cache_max_aggregates,
        "Clean aggregates kept in memory (least recently used evicted first); 0 disables the cache."),
    SIZE("cache", "max_bytes", "320MiB", 0, 64 * GiB, CONFIG_LIVE, cache_max_bytes,
         "Memory bound on the clean aggregates kept, measured as batch.max_pending_bytes measures unwritten "
         "ones; whichever of this and cache.max_aggregates is passed first evicts the least recently used. "
         "0 disables the cache."),
    SIZE("limits", "max_command_bytes", "64KiB", 256, 16 * MiB, 0, limits_max_command_bytes,
         "Commands longer than this are rejected as too_large without being parsed."),
    INT("replay", "threads", "0", 0, 256, 0, replay_threads,
        "Threads that decode and merge in `replay` and `verify`; 0 is one per CPU the process may use (its "
        "affinity, bounded by its cgroup CPU quota; `config show` prints the number), 1 decodes and merges "
        "on the reading thread. Commands are routed to a thread by their aggregate's key, and the output (documents, "
        "rejects, summary, report) is the same whatever the number. A replay into the store merges on one thread."),
    STR("metrics", "listen", "host:port", "", check_listen, "host:port, or empty", 0, metrics_listen,
        "Address of the HTTP endpoint; empty serves none. Use 0.0.0.0:PORT to listen on all interfaces."),
    ENUM("log", "level", "info", log_levels, CONFIG_LIVE, log_level, "Least severe level logged."),
    ENUM("log", "format", "json", log_formats, 0, log_format,
         "json: one JSON object per line (ts, level, msg, fields); text: one line for a terminal."),
    INT("shutdown", "timeout_ms", "30000", 0, 3600000, 0, shutdown_timeout_ms,
        "How long a stop (SIGTERM, SIGINT) may spend writing what is held and committing it, a flush or load "
        "in progress included; then the worker exits 1, and what is not durable stays uncommitted for the next "
        "owner to read again. Keep it below the orchestrator's grace period (docker/k8s: 60 s)."),
    STR("changes", "topic", "string", "", check_topic_or_empty,
        "a topic name, neither in kafka.topics nor kafka.dlq_topic; or empty", 0, changes_topic,
        "Topic on which every write of an aggregate is announced once the store acknowledged it (`run`, "
        "`replay` into the store, `verify --repair`): one event per write, keyed by `_id`, with an `x-rev` "
        "header; empty announces nothing. Offsets commit only once the events of the writes before them are "
        "acknowledged. The topic must exist: those commands check at start and exit 1 naming it."),
    ENUM("changes", "include_document", "true", booleans, 0, changes_include_document,
         "Whether each change event carries the stored document after the write (true), or only `_id`, "
         "`tenant`, `assignment`, `rev`, `updatedAt` and the slots it changed (false: small events, whose "
         "readers read the document from the store when they need it)."),
};
const size_t config_props_count = sizeof config_props / sizeof config_props[0];
_Static_assert(sizeof config_props / sizeof config_props[0] <= 32, "config_t.from_file has a bit per key");
_Static_assert(sizeof config_props / sizeof config_props[0] <= sizeof((config_t *)0)->origins /
                                                                  sizeof((config_t *)0)->origins[0],
               "config_t.origins has an entry per key");

const config_prop_t *config_prop_find(const char *section, const char *key) {
  for (size_t i = 0; i < config_props_count; i++)
    if (!strcmp(config_props[i].section, section) && !strcmp(config_props[i].key, key)) return &config_props[i];
  return NULL;
}

bool config_section_known(const char *section) {
  for (size_t i = 0; i < config_sections_count; i++)
    if (!strcmp(config_sections[i].name, section)) return true;
  return false;
}

/* ---- typed access -------------------------------------------------------- */

static char **str_field(const config_prop_t *p, const config_t *cfg) {
  return (char **)((char *)cfg + p->offset);
}
static int64_t *int_field(const config_prop_t *p, const config_t *cfg) {
  return (int64_t *)((char *)cfg + p->offset);
}
static int *enum_field(const config_prop_t *p, const config_t *cfg) { return (int *)((char *)cfg + p->offset); }

static const struct {
  const char *suffix;
  int64_t mult;
} size_suffixes[] = {{"GiB", GiB}, {"G", GiB}, {"MiB", MiB}, {"M", MiB}, {"KiB", KiB}, {"K", KiB}, {"", 1}};

/* Decimal digits (optionally signed) with nothing else; sizes may end with a
 * binary suffix. strtoll alone would accept leading blanks, '+' and junk. */
static bool parse_int(const char *s, bool size, int64_t *out) {
  const char *d = s[0] == '-' ? s + 1 : s;
  if (!isdigit((unsigned char)*d)) return false;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno) return false;
  if (!*end) {
    *out = v;
    return true;
  }
  if (!size || v < 0) return false;
  for (size_t i = 0; i < sizeof size_suffixes / sizeof size_suffixes[0]; i++) {
    if (strcmp(end, size_suffixes[i].suffix)) continue;
    if (v > INT64_MAX / size_suffixes[i].mult) return false;
    *out = v * size_suffixes[i].mult;
    return true;
  }
  return false;
}

static void format_int(const config_prop_t *p, int64_t v, model_buf_t *out) {
  if (p->type == CONFIG_TYPE_SIZE && v > 0) {
    for (size_t i = 0; size_suffixes[i].mult > 1; i += 2) /* the *iB spellings */
      if (v % size_suffixes[i].mult == 0) {
        model_buf_printf(out, "%lld%s", (long long)(v / size_suffixes[i].mult), size_suffixes[i].suffix);
        return;
      }
  }
  model_buf_printf(out, "%lld", (long long)v);
}

/* Inline comments are not supported (values may contain '#' and ';'); say so
 * when a rejected value looks like it carries one. */
static const char *value_hint(const char *value) {
  size_t n = strlen(value);
  if (n >= 2 && (value[0] == '"' || value[0] == '\'') && value[n - 1] == value[0])
    return " (values are literal, without quotes; 'key =' sets the empty value)";
  return strpbrk(value, "#;") ? " (comments must be on a line of their own)" : "";
}

bool config_prop_set(const config_prop_t *p, config_t *cfg, const char *value, bool secret, char *why,
                     size_t why_size) {
  secret = secret || (p->flags & CONFIG_SECRET);
  char tmp[SHOWN_MAX];
  for (const char *c = value; *c; c++)
    if ((unsigned char)*c < 0x20 || *c == 0x7f) {
      snprintf(why, why_size, "the value contains a control character");
      return false;
    }
  switch (p->type) {
  case CONFIG_TYPE_STRING: {
    char *v = p->check(value, secret, why, why_size);
    if (!v) {
      size_t len = strlen(why);
      if (!secret) snprintf(why + len, why_size - len, "%s", value_hint(value));
      return false;
    }
    free(*str_field(p, cfg));
    *str_field(p, cfg) = v;
    return true;
  }
  case CONFIG_TYPE_INT:
  case CONFIG_TYPE_SIZE: {
    int64_t v;
    if (!parse_int(value, p->type == CONFIG_TYPE_SIZE, &v)) {
      snprintf(why, why_size, "%s is not %s%s", shown(value, secret, tmp, sizeof tmp),
               p->type == CONFIG_TYPE_SIZE ? "a size (bytes, or a number with K, KiB, M, MiB, G or GiB)"
                                           : "an integer",
               value_hint(value));
      return false;
    }
    if (v < p->min || v > p->max) {
      model_buf_t r = MODEL_BUF_INIT;
      config_prop_format_range(p, &r);
      snprintf(why, why_size, "%s is out of range %s", shown(value, secret, tmp, sizeof tmp), r.data);
      model_buf_destroy(&r);
      return false;
    }
    *int_field(p, cfg) = v;
    return true;
  }
  case CONFIG_TYPE_ENUM:
    for (int i = 0; p->values[i]; i++)
      if (!strcmp(p->values[i], value)) {
        *enum_field(p, cfg) = i;
        return true;
      }
    model_buf_t r = MODEL_BUF_INIT;
    config_prop_format_range(p, &r);
    snprintf(why, why_size, "%s is not one of %s%s", shown(value, secret, tmp, sizeof tmp), r.data,
             value_hint(value));
    model_buf_destroy(&r);
    return false;
  }
  return false;
}

void config_prop_format(const config_prop_t *p, const config_t *cfg, model_buf_t *out) {
  switch (p->type) {
  case CONFIG_TYPE_STRING: model_buf_puts(out, *str_field(p, cfg) ? *str_field(p, cfg) : ""); break;
  case CONFIG_TYPE_INT:
  case CONFIG_TYPE_SIZE: format_int(p, *int_field(p, cfg), out); break;
  case CONFIG_TYPE_ENUM: model_buf_puts(out, p->values[*enum_field(p, cfg)]); break;
  }
}

void config_prop_format_range(const config_prop_t *p, model_buf_t *out) {
  switch (p->type) {
  case CONFIG_TYPE_STRING: model_buf_puts(out, p->range); break;
  case CONFIG_TYPE_INT:
  case CONFIG_TYPE_SIZE:
    format_int(p, p->min, out);
    model_buf_puts(out, "..");
    format_int(p, p->max, out);
    break;
  case CONFIG_TYPE_ENUM:
    for (int i = 0; p->values[i]; i++) model_buf_printf(out, "%s%s", i ? ", " : "", p->values[i]);
    break;
  }
}

bool config_prop_equal(const config_prop_t *p, const config_t *a, const config_t *b) {
  switch (p->type) {
  case CONFIG_TYPE_STRING: {
    const char *x = *str_field(p, a), *y = *str_field(p, b);
    return (!x || !y) ? x == y : !strcmp(x, y);
  }
  case CONFIG_TYPE_INT:
  case CONFIG_TYPE_SIZE: return *int_field(p, a) == *int_field(p, b);
  case CONFIG_TYPE_ENUM: return *enum_field(p, a) == *enum_field(p, b);
  }
  return false;
}

void config_prop_copy(const config_prop_t *p, config_t *dst, const config_t *src) {
  switch (p->type) {
  case CONFIG_TYPE_STRING: {
    const char *s = *str_field(p, src);
    char *d = s ? dup_or_die(s, strlen(s)) : NULL;
    free(*str_field(p, dst));
    *str_field(p, dst) = d;
    break;
  }
  case CONFIG_TYPE_INT:
  case CONFIG_TYPE_SIZE: *int_field(p, dst) = *int_field(p, src); break;
  case CONFIG_TYPE_ENUM: *enum_field(p, dst) = *enum_field(p, src); break;
  }
}

void config_prop_free(const config_prop_t *p, config_t *cfg) {
  if (p->type != CONFIG_TYPE_STRING) return;
  free(*str_field(p, cfg));
  *str_field(p, cfg) = NULL;
}

void config_prop_env_name(const config_prop_t *p, char *out, size_t out_size) {
  int n = snprintf(out, out_size, "AGGREGATOR_%s_%s", p->section, p->key);
  for (int i = 0; i < n && (size_t)i < out_size; i++)
    out[i] = out[i] == '.' ? '_' : (char)toupper((unsigned char)out[i]);
}

/* ---- "did you mean" ------------------------------------------------------ */

size_t config_edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 200 || lb > 200) return SIZE_MAX;
  size_t row[201];
  for (size_t j = 0; j <= lb; j++) row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best) best = up + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

/* ---- librdkafka pass-through -------------------------------------------- */

const char *config_rdkafka_reserved(const char *name) {
  static const struct {
    const char *name, *why;
  } reserved[] = {
      {"bootstrap.servers", "the worker sets it from kafka.brokers"},
      {"metadata.broker.list", "the worker sets it from kafka.brokers"},
      {"group.id", "the worker sets it from kafka.group"},
      {"group.protocol", "the worker sets it from kafka.group_protocol"},
      {"enable.auto.commit", "the worker commits offsets itself, once their commands are durable"},
      {"auto.commit.enable", "the worker commits offsets itself, once their commands are durable"},
      {"enable.auto.offset.store", "the worker commits offsets itself, once their commands are durable"},
      {"allow.auto.create.topics", "topics are never auto-created: create them before starting the worker"},
  };
  for (size_t i = 0; i < sizeof reserved / sizeof reserved[0]; i++)
    if (!strcmp(name, reserved[i].name)) return reserved[i].why;
  return NULL;
}
