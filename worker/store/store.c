/* The MongoDB sink (see store.h for the contract).
 *
 * Failure model. Every write is conditional on the stored rev, so sending the
 * same bulk twice can never move a document back in time: an item that
 * already landed comes back as a conflict, which the caller resolves by
 * reloading and merging. That is what lets this module answer SINK_RETRY
 * whenever it cannot tell which writes landed (network errors, elections,
 * write-concern errors), instead of trying to work out partial outcomes.
 *
 * Three rules keep "acknowledged" meaning "durable with the configured write
 * concern" (docs/GUARANTEES.md):
 *   - a write-concern error fails the whole batch (the writes may be on the
 *     primary only, and could still roll back);
 *   - with w > 1 or "majority", loads use read concern "majority": after a
 *     retry turned a landed-but-unconfirmed write into a conflict, the
 *     reload must not show the caller data that could still roll back;
 *   - w = 0 is refused: an unacknowledged write reports neither success nor
 *     conflict. */
#include "store.h"

#include <mongoc/mongoc.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"
#include "keys.h"
#include "base/log.h"
#include "oom.h"
#include "base/redact.h"
#include "store_bulk.h"
#include "store_error.h"
#include "store_find.h"
#include "store_internal.h"
#include "store_outcome.h"
#include "store_profile.h"
#include "store_resolve.h"
#include "base/store_shard.h"
#include "base/value.h"

/* Client-side timeouts, applied unless the URI sets them. The worker retries
 * by itself with backoff (retry.*), so an operation should fail fast rather
 * than block the loop: server selection gives up after 2 s (an election
 * takes about 10 s: the caller's backoff covers it), and connecting to one
 * host may take as long. Sockets get 60 s: long enough for a large bulk on a
 * loaded server, short enough to notice a silently dead connection. */
#define STORE_SERVER_SELECTION_TIMEOUT_MS 2000
#define STORE_CONNECT_TIMEOUT_MS 2000
#define STORE_SOCKET_TIMEOUT_MS 60000
/* Server-side bound on waiting for replication: a stuck secondary turns into
 * a WriteConcernFailed (64) error, which is a retry, instead of a hang. */
#define STORE_WTIMEOUT_MS 10000

struct store {
  mongoc_client_t *client;
  const char *ping_cause; /* store_ping_cause: a static text or NULL */
  mongoc_collection_t *collection;
  const store_profile_t *profile; /* the server's; NULL until the first load or write */
  store_shard_t shard;            /* the fields every filter carries besides _id (store_shard.h) */
  bool warned_incomplete; /* the item-by-item fallback has been logged */
  uint64_t incomplete;    /* store_write calls that needed it (store_internal.h) */
};

/* --- mongoc process-wide setup ------------------------------------------- */

/* mongoc's default log handler prints free-form lines to stdout/stderr;
 * route them through log.h so that log.format = json stays one JSON object
 * per line, and so that each is scrubbed of every configured secret
 * (log_emit does it: a URI warning may quote an option's value). */
static void mongoc_log_to_log(mongoc_log_level_t level, const char *domain, const char *message, void *ctx) {
  (void)ctx;
  log_level_t l;
  switch (level) {
    case MONGOC_LOG_LEVEL_ERROR:
    case MONGOC_LOG_LEVEL_CRITICAL:
      l = LOG_LEVEL_ERROR;
      break;
    case MONGOC_LOG_LEVEL_WARNING:
      l = LOG_LEVEL_WARN;
      break;
    case MONGOC_LOG_LEVEL_MESSAGE:
    case MONGOC_LOG_LEVEL_INFO:
      l = LOG_LEVEL_INFO;
      break;
    case MONGOC_LOG_LEVEL_DEBUG:
      l = LOG_LEVEL_DEBUG;
      break;
    default: /* TRACE: only in driver debug builds, far too chatty */
      return;
  }
  log_emit(l, message, "component", LOG_STR, "mongoc", "domain", LOG_STR, domain, NULL);
}

static void store_global_init(void) {
  mongoc_log_set_handler(mongoc_log_to_log, NULL);
  mongoc_init();
}

/* --- lifecycle ----------------------------------------------------------- */

/* A libmongoc error about the URI: its messages may quote the part they
 * reject, password included ('Password "..." must not have unescaped
 * chars'), so the message is scrubbed of the URI's secrets before it is cut
 * to the size of err->message (a cut secret would escape the scrub). */
static void set_uri_error(sink_error_t *err, const bson_error_t *e, const char *uri) {
  if (!err) return;
  redact_set_t *secrets = redact_set_new();
  redact_set_add_uri(secrets, uri);
  model_buf_t raw = MODEL_BUF_INIT, clean = MODEL_BUF_INIT;
  model_buf_printf(&raw, "store.uri: %s", e->message);
  redact_set_scrub(secrets, raw.data, raw.len, &clean);
  store_error_set(err, e->domain, e->code, "%s", clean.data);
  explicit_bzero(raw.data, raw.cap);
  model_buf_destroy(&raw);
  model_buf_destroy(&clean);
  redact_set_destroy(secrets);
}

static void uri_default_int32(mongoc_uri_t *uri, const char *option, int32_t value) {
  if (!mongoc_uri_has_option(uri, option)) mongoc_uri_set_option_as_int32(uri, option, value);
}

/* Checks the options other than the URI; w gets the parsed write concern. */
static bool check_options(const char *database, const char *collection, const char *write_concern, int32_t *w,
                          sink_error_t *err) {
  _Static_assert(VALUE_W_MAJORITY == MONGOC_WRITE_CONCERN_W_MAJORITY, "value.h speaks libmongoc's w");
  if (!value_parse_write_concern(write_concern, w)) {
    store_error_set(err, MONGOC_ERROR_COMMAND, MONGOC_ERROR_COMMAND_INVALID_ARG,
                    "store.write_concern: \"%s\" is not \"majority\" or an integer 1..50 (0, unacknowledged, "
                    "could not report conflicts)",
                    write_concern ? write_concern : "");
    return false;
  }
  if (!database || !*database || !collection || !*collection) {
    store_error_set(err, MONGOC_ERROR_COMMAND, MONGOC_ERROR_COMMAND_INVALID_ARG,
                    "store.database and store.collection must not be empty");
    return false;
  }
  return true;
}

/* The parsed URI with the store's defaults for what it leaves unset, or
 * NULL with err filled. The URI may hold a password: it never goes into a
 * message. */
static mongoc_uri_t *parse_uri(const char *uri_string, sink_error_t *err) {
  if (uri_string && redact_uri_has_unescaped_at(uri_string)) {
    /* libmongoc would split at the first '@' and connect to "rest@host",
     * naming part of the password in every connection error. */
    store_error_set(err, MONGOC_ERROR_COMMAND, MONGOC_ERROR_COMMAND_INVALID_ARG,
                    "store.uri: an '@' that does not end the user name and password before the hosts must be "
                    "percent-encoded as %%40");
    return NULL;
  }
  bson_error_t e;
  mongoc_uri_t *uri = mongoc_uri_new_with_error(uri_string ? uri_string : "", &e);
  if (!uri) {
    set_uri_error(err, &e, uri_string);
    return NULL;
  }
  uri_default_int32(uri, MONGOC_URI_SERVERSELECTIONTIMEOUTMS, STORE_SERVER_SELECTION_TIMEOUT_MS);
  uri_default_int32(uri, MONGOC_URI_CONNECTTIMEOUTMS, STORE_CONNECT_TIMEOUT_MS);
  uri_default_int32(uri, MONGOC_URI_SOCKETTIMEOUTMS, STORE_SOCKET_TIMEOUT_MS);
  /* Single-threaded clients default to one scan per selection, which fails
   * at once while a primary is being elected; keep trying until the
   * selection timeout instead. */
  if (!mongoc_uri_has_option(uri, MONGOC_URI_SERVERSELECTIONTRYONCE))
    mongoc_uri_set_option_as_bool(uri, MONGOC_URI_SERVERSELECTIONTRYONCE, false);
  if (!mongoc_uri_get_appname(uri)) mongoc_uri_set_appname(uri, "aggregator");
  return uri;
}

/* The write concern w (with the store's wtimeout) on collection, and read
 * concern "majority" unless w is 1 (see the top of this file). */
static void set_concerns(mongoc_collection_t *collection, int32_t w) {
  mongoc_write_concern_t *wc = mongoc_write_concern_new();
  mongoc_write_concern_set_w(wc, w);
  mongoc_write_concern_set_wtimeout_int64(wc, STORE_WTIMEOUT_MS);
  mongoc_collection_set_write_concern(collection, wc);
  mongoc_write_concern_destroy(wc);

  if (w != 1) {
    mongoc_read_concern_t *rc = mongoc_read_concern_new();
    mongoc_read_concern_set_level(rc, MONGOC_READ_CONCERN_LEVEL_MAJORITY);
    mongoc_collection_set_read_concern(collection, rc);
    mongoc_read_concern_destroy(rc);
  }
}

store_t *store_new(const char *uri_string, const char *database, const char *collection, const char *write_concern,
                   sink_error_t *err) {
  static pthread_once_t once = PTHREAD_ONCE_INIT;
  pthread_once(&once, store_global_init);
  store_error_clear(err);

  int32_t w;
  if (!check_options(database, collection, write_concern, &w, err)) return NULL;
  mongoc_uri_t *uri = parse_uri(uri_string, err);
  if (!uri) return NULL;
  store_t *store = oom_calloc(1, sizeof *store);
  bson_error_t e;
  store->client = mongoc_client_new_from_uri_with_error(uri, &e);
  mongoc_uri_destroy(uri);
  if (!store->client) {
    set_uri_error(err, &e, uri_string);
    free(store);
    return NULL;
  }
  /* Version 2 puts every server error in MONGOC_ERROR_SERVER with the
   * server's code, which store_classify_error relies on. */
  mongoc_client_set_error_api(store->client, MONGOC_ERROR_API_VERSION_2);
  store->collection = mongoc_client_get_collection(store->client, database, collection);
  set_concerns(store->collection, w);
  return store;
}

bool store_set_shard_key(store_t *store, const char *fields, sink_error_t *err) {
  store_error_clear(err);
  const char *bad;
  size_t bad_len;
  store_shard_t shard;
  if (!store_shard_parse(fields, &shard, &bad, &bad_len)) {
    store_error_set(err, MONGOC_ERROR_COMMAND, MONGOC_ERROR_COMMAND_INVALID_ARG,
                    "store.shard_key: '%.*s' is not tenant, assignment or _id", (int)bad_len, bad);
    return false;
  }
  store->shard = shard;
  return true;
}

void store_destroy(store_t *store) {
  if (!store) return;
  mongoc_collection_destroy(store->collection);
  mongoc_client_destroy(store->client);
  free(store);
}

/* --- ping ---------------------------------------------------------------- */

sink_status_t store_ping(store_t *store, sink_error_t *err) {
  store_error_clear(err);
  bson_t cmd = BSON_INITIALIZER;
  BSON_APPEND_INT32(&cmd, "ping", 1);
  bson_t reply;
  bson_error_t e;
  bool ok = mongoc_client_command_simple(store->client, "admin", &cmd, NULL, &reply, &e);
  sink_status_t st = SINK_OK;
  store->ping_cause = NULL;
  if (!ok) {
    st = store_classify_error(&e, &reply);
    store->ping_cause = store_error_cause(&e, &reply, mongoc_uri_get_tls(mongoc_client_get_uri(store->client)));
    if (store->ping_cause)
      store_error_set(err, e.domain, e.code, "ping: %s: %s", store->ping_cause, e.message);
    else
      store_error_set_bson(err, "ping", &e);
  }
  bson_destroy(&reply);
  bson_destroy(&cmd);
  return st;
}

const char *store_ping_cause(const store_t *store) { return store ? store->ping_cause : NULL; }

/* --- load ---------------------------------------------------------------- */

/* The server's profile, asked for once per store (store_profile.h). */
static sink_status_t detect_server(store_t *store, sink_error_t *err) {
  if (store->profile) return SINK_OK;
  return store_profile_detect(store->client, &store->profile, err);
}

/* Loads keys[0..nkeys) into out (which the caller frees with
 * store_found_list_free, whatever the result), as many keys per find as the
 * server's profile says. */
static sink_status_t load_all(store_t *store, const char *const *keys, size_t nkeys, bool read_on,
                               store_found_list_t *out, sink_error_t *err) {
  if (nkeys == 0) return SINK_OK;
  sink_status_t st = detect_server(store, err);
  if (st != SINK_OK) return st;
  return store_find(store->collection, store->shard, store->profile->load_keys_per_find, keys, nkeys, read_on, out,
                    err);
}

size_t store_load_keys_per_find(store_t *store, sink_error_t *err) {
  store_error_clear(err);
  return detect_server(store, err) == SINK_OK ? store->profile->load_keys_per_find : 0;
}

/* store_load (found) or store_load_counts (found_counts, with unreadable
 * documents handed to the unreadable callback). */
static sink_status_t load_and_hand_over(store_t *store, const char *const *keys, size_t nkeys, sink_found_cb found,
                                         store_found_counts_cb found_counts, store_unreadable_cb unreadable, void *ctx,
                                         sink_error_t *err) {
  store_error_clear(err);
  /* Callbacks only once everything has loaded, so that a failed load hands
   * the caller nothing: it either gets the whole answer or retries it. */
  store_found_list_t list = {0};
  sink_status_t st = load_all(store, keys, nkeys, unreadable != NULL, &list, err);
  if (st == SINK_OK) {
    for (size_t i = 0; i < list.n; i++) {
      if (!list.v[i].agg)
        unreadable(ctx, list.v[i].key, list.v[i].unreadable);
      else if (found_counts)
        found_counts(ctx, list.v[i].agg, list.v[i].rev, &list.v[i].counts);
      else
        found(ctx, list.v[i].agg, list.v[i].rev, list.v[i].updated_at_ms);
      list.v[i].agg = NULL; /* the callback owns it */
    }
  }
  store_found_list_free(&list);
  return st;
}

sink_status_t store_load(store_t *store, const char *const *keys, size_t nkeys, sink_found_cb found, void *ctx,
                          sink_error_t *err) {
  return load_and_hand_over(store, keys, nkeys, found, NULL, NULL, ctx, err);
}

sink_status_t store_load_counts(store_t *store, const char *const *keys, size_t nkeys, store_found_counts_cb found,
                                 store_unreadable_cb unreadable, void *ctx, sink_error_t *err) {
  return load_and_hand_over(store, keys, nkeys, NULL, found, unreadable, ctx, err);
}

/* --- write --------------------------------------------------------------- */

/* One unordered bulk (one update command) for items[idx[0..n)]. */
static sink_status_t write_command(store_t *store, sink_write_item_t *items, const size_t *idx, size_t n,
                                    int64_t updated_at_ms, bool *incomplete, sink_error_t *err) {
  *incomplete = false;
  size_t *map = oom_malloc(n * sizeof *map);
  bson_t opts = BSON_INITIALIZER;
  BSON_APPEND_BOOL(&opts, "ordered", false); /* the collection's write concern applies */
  mongoc_bulk_operation_t *bulk = mongoc_collection_create_bulk_operation_with_opts(store->collection, &opts);
  size_t nops = 0;
  for (size_t i = 0; i < n; i++) {
    items[idx[i]].result = SINK_ITEM_RETRY;
    items[idx[i]].error_code = 0;
    if (store_bulk_add(bulk, &items[idx[i]], updated_at_ms, store->shard)) map[nops++] = idx[i];
  }
  sink_status_t st = SINK_OK;
  if (nops > 0) {
    bson_t reply;
    bson_error_t e;
    bool executed = mongoc_bulk_operation_execute(bulk, &reply, &e) != 0;
    st = store_bulk_outcome(executed, &e, &reply, items, map, nops, incomplete, err);
    bson_destroy(&reply);
  }
  mongoc_bulk_operation_destroy(bulk);
  bson_destroy(&opts);
  free(map);
  return st;
}

/* items[idx[0..n)] in as many write commands as the server needs, the
 * inserts first: the driver sends a run of operations of one kind as one
 * command, so inserts mixed among updates would split a bulk into as many
 * commands as there are runs. Stops at the first command that fails. */
static sink_status_t write_bulk(store_t *store, sink_write_item_t *items, const size_t *idx, size_t n,
                                 int64_t updated_at_ms, bool *incomplete, sink_error_t *err) {
  size_t *order = oom_malloc((n ? n : 1) * sizeof *order);
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (items[idx[i]].rev == 0) order[k++] = idx[i];
  for (size_t i = 0; i < n; i++)
    if (items[idx[i]].rev != 0) order[k++] = idx[i];
  size_t max = store->profile->max_updates_per_command;
  size_t per = max > 0 ? max : n;
  sink_status_t st = SINK_OK;
  *incomplete = false;
  for (size_t off = 0; off < n && st == SINK_OK; off += per)
    st = write_command(store, items, order + off, n - off < per ? n - off : per, updated_at_ms, incomplete, err);
  free(order);
  return st;
}

static const char *item_key(const sink_write_item_t *item) {
  size_t len;
  return model_aggregate_key(item->agg, &len);
}

/* model_keys_of_fn for an array of indexes into the items at ctx. */
static const char *index_key(const void *elem, void *items) {
  return item_key(&((const sink_write_item_t *)items)[*(const size_t *)elem]);
}

/* Only this write's own document counts as landed: rev + 1, the updatedAt
 * this store_write put in every document, and the same aggregate. "rev + 1
 * and equal" alone would count another writer's identical write as ours:
 * aggregator_store_writes_total{ok} and the flush stats would go up for a
 * write this worker never made, where MongoDB reports the same situation
 * as a conflict. The trade-off: a write of ours from an earlier, failed
 * attempt (another updatedAt) is not claimed either; it is re-sent,
 * conflicts, and the reload finds nothing to do, which is also what
 * MongoDB would say. */
sink_item_result_t store_read_back_result(const sink_write_item_t *item, const model_aggregate_t *stored,
                                           int64_t stored_rev, int64_t stored_updated_at_ms, int64_t updated_at_ms) {
  if (stored_rev == item->rev + 1 && stored_updated_at_ms == updated_at_ms && model_aggregate_equal(item->agg, stored))
    return SINK_ITEM_OK;
  return SINK_ITEM_RETRY;
}

/* Reads the items back and marks SINK_ITEM_OK each whose stored document
 * is this write's (store_read_back_result); the others stay pending. */
static sink_status_t read_back(store_t *store, sink_write_item_t *items, size_t nitems, int64_t updated_at_ms,
                               sink_error_t *err) {
  size_t *idx = oom_malloc(nitems * sizeof *idx);
  const char **keys = oom_malloc(nitems * sizeof *keys);
  for (size_t i = 0; i < nitems; i++) idx[i] = i;
  model_keys_sort(idx, nitems, sizeof *idx, index_key, items);
  for (size_t i = 0; i < nitems; i++) {
    keys[i] = item_key(&items[i]);
    items[i].result = SINK_ITEM_RETRY;
    items[i].error_code = 0;
  }
  store_found_list_t stored = {0};
  sink_status_t st = load_all(store, keys, nitems, false, &stored, err);
  for (size_t i = 0; st == SINK_OK && i < stored.n; i++) {
    size_t len;
    const char *key = model_aggregate_key(stored.v[i].agg, &len);
    size_t at = model_keys_find(idx, nitems, sizeof *idx, index_key, items, key);
    sink_write_item_t *item = at < nitems ? &items[idx[at]] : NULL;
    if (item && item->result == SINK_ITEM_RETRY)
      item->result = store_read_back_result(item, stored.v[i].agg, stored.v[i].rev, stored.v[i].updated_at_ms,
                                            updated_at_ms);
  }
  store_found_list_free(&stored);
  free(keys);
  free(idx);
  return st;
}

/* store_resolve's callbacks for one store_write (store_resolve.h). */
typedef struct resolving {
  store_t *store;
  int64_t updated_at_ms;
} resolving_t;

static sink_status_t resolve_read_back(void *ctx, sink_write_item_t *items, size_t n, sink_error_t *err) {
  resolving_t *r = ctx;
  return read_back(r->store, items, n, r->updated_at_ms, err);
}

static sink_status_t resolve_write_one(void *ctx, sink_write_item_t *items, size_t i, sink_error_t *err) {
  resolving_t *r = ctx;
  bool incomplete;
  return write_bulk(r->store, items, &i, 1, r->updated_at_ms, &incomplete, err);
}

/* After a reply that did not account for every item: MongoDB's replies
 * account for every whole item; it takes this path only when some but not
 * all partial updates of a command matched nothing (store_bulk_outcome),
 * which needs a race with another writer. */
static sink_status_t resolve_incomplete(store_t *store, sink_write_item_t *items, size_t nitems,
                                         int64_t updated_at_ms, sink_error_t *err) {
  if (!store->warned_incomplete) {
    log_warn("store reply did not account for every write; resolving the batch item by item", "error", LOG_STR,
             err ? err->message : "");
    store->warned_incomplete = true;
  }
  store_error_clear(err);
  resolving_t ctx = {store, updated_at_ms};
  store_resolver_t r = {resolve_read_back, resolve_write_one, &ctx};
  return store_resolve(&r, items, nitems, err);
}

sink_status_t store_write(store_t *store, sink_write_item_t *items, size_t nitems, int64_t updated_at_ms,
                           sink_error_t *err) {
  store_error_clear(err);
  if (nitems == 0) return SINK_OK;
  size_t *idx = oom_malloc(nitems * sizeof *idx);
  for (size_t i = 0; i < nitems; i++) idx[i] = i;
  bool incomplete = false;
  sink_status_t st = detect_server(store, err);
  if (st == SINK_OK) st = write_bulk(store, items, idx, nitems, updated_at_ms, &incomplete, err);
  free(idx);
  if (st != SINK_OK && incomplete && nitems > 1) {
    store->incomplete++;
    st = resolve_incomplete(store, items, nitems, updated_at_ms, err);
  }
  if (st != SINK_OK) {
    for (size_t i = 0; i < nitems; i++) {
      items[i].result = SINK_ITEM_RETRY;
      items[i].error_code = 0;
    }
  }
  return st;
}

uint64_t store_incomplete_writes(const store_t *store) { return store->incomplete; }

mongoc_client_t *store_client(store_t *store) { return store->client; }

static sink_status_t sink_load(void *ctx, const char *const *keys, size_t n, sink_found_cb found, void *cb_ctx,
                               sink_error_t *err) {
  return store_load(ctx, keys, n, found, cb_ctx, err);
}

static sink_status_t sink_write(void *ctx, sink_write_item_t *items, size_t n, int64_t now, sink_error_t *err) {
  return store_write(ctx, items, n, now, err);
}

static sink_status_t sink_ping(void *ctx, sink_error_t *err) { return store_ping(ctx, err); }

sink_t store_sink(store_t *store) { return (sink_t){sink_load, sink_write, sink_ping, store}; }

/* --- a store as the configuration describes it ----------------------------- */

store_t *store_open(const config_t *cfg, sink_error_t *err) {
  store_t *store = store_new(cfg->store_uri, cfg->store_database, cfg->store_collection, cfg->store_write_concern, err);
  if (store && !store_set_shard_key(store, cfg->store_shard_key, err)) {
    store_destroy(store);
    return NULL;
  }
  return store;
}
