/* The server profiles (store_profile.h). This is the one file that names
 * the test servers the store runs against besides MongoDB, and says how
 * they differ from it and what the store does about that.
 *
 * FerretDB (on PostgreSQL or SQLite) is a store users run; it gets a
 * profile of its own, recognised by the "ferretdbVersion" field of its
 * buildInfo (MongoDB's and mongo-java-server's have none, which
 * tests/integration/test_store.c pins).
 *
 * Loads: FerretDB pushes no $in down to its backend, so
 * {_id: {$in: [...]}} reads and converts every document of the collection;
 * {_id: key} is pushed down, and on PostgreSQL a GIN index on _id answers
 * it, so one find per key costs time in proportion to the keys asked for,
 * not to the collection (docs/BENCHMARKS.md, "The local store at scale").
 * On a tiny collection the $in is the cheaper one; a store of a few hundred
 * documents is not the case to optimise for.
 *
 * Update commands: FerretDB 1.x (SQLite backend) keeps the cursor of every
 * update of a command that matched a document open until the whole command
 * ends, each holding one of the connections of the database's pool (100);
 * the 100th match then waits for a connection forever, and so does every
 * later request to that database until the server restarts. Commands of at
 * most 16 updates keep a few concurrent writers far from that limit.
 *
 * Differences that need no profile, because the store's rule holds for
 * every server:
 *   - FerretDB 1.x stops an update command at its first write error even
 *     when it is unordered, and reports neither the writes before it nor
 *     the error's real index. The reply's counts then do not add up, which
 *     store_bulk_outcome notices on any server, and store.c finds the
 *     items' fates item by item.
 *   - mongo-java-server counts failed inserts in nInserted too; a count of
 *     every insert when one of them failed cannot be MongoDB's, so
 *     store_bulk_outcome reads it as "the others landed".
 *   - mongo-java-server drops the connection when a statement passes
 *     16 MiB, which fails the whole bulk with a stream error (retried for
 *     ever); the store keeps every statement, with its filter and framing,
 *     within the document limit (store_bulk.c), a margin MongoDB, which
 *     takes statements up to 16 MiB + 16 KiB, barely notices.
 *   - Neither test server answers an upsert whose filter matches nothing
 *     from the _id index; the store inserts a new document instead
 *     (store.h), which costs MongoDB less too. */
#include "store_profile.h"

#include "base/log.h"
#include "store_error.h"
#include "store_outcome.h"

/* MongoDB answers a $in from its _id index: one find for a batch of keys is
 * the cheapest. 10,000 keys keep the filter far below the 16 MiB command
 * limit (ids are at most 129 bytes); batches are usually smaller. */
static const store_profile_t mongodb = {
    .load_keys_per_find = 10000,
    .max_updates_per_command = 0,
    .announce = NULL,
};

static const store_profile_t ferretdb = {
    .load_keys_per_find = 1,
    .max_updates_per_command = 16,
    .announce = "store server is FerretDB: bulk writes go in small commands",
};

const store_profile_t *store_profile_of_build_info(const bson_t *build_info) {
  bson_iter_t it;
  return bson_iter_init_find(&it, build_info, "ferretdbVersion") ? &ferretdb : &mongodb;
}

sink_status_t store_profile_detect(mongoc_client_t *client, const store_profile_t **profile, sink_error_t *err) {
  bson_t cmd = BSON_INITIALIZER;
  BSON_APPEND_INT32(&cmd, "buildInfo", 1);
  bson_t reply;
  bson_error_t e;
  sink_status_t st = SINK_OK;
  if (mongoc_client_command_simple(client, "admin", &cmd, NULL, &reply, &e)) {
    *profile = store_profile_of_build_info(&reply);
    if ((*profile)->announce)
      log_info((*profile)->announce, "ops_per_command", LOG_INT, (int64_t)(*profile)->max_updates_per_command);
  } else {
    st = store_classify_error(&e, &reply);
    store_error_set_bson(err, "buildInfo", &e);
  }
  bson_destroy(&reply);
  bson_destroy(&cmd);
  return st;
}
