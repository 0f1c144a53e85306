/* The MongoDB sink: batched loads and conditional bulk writes of aggregate
 * documents (SPEC.md sections 4 and 5).
 *
 * Every write is conditional on the revision the worker last saw: an item
 * with expected rev r > 0 is a replace_one with filter {_id, rev: r} and
 * upsert: true, whose replacement carries rev r+1; an item the store does
 * not hold yet (r = 0) is an insert of rev 1. When another writer got there
 * first, the filter matches nothing and the upsert's insert, or the insert,
 * hits the existing _id: a duplicate-key error (11000) for that item,
 * reported as STORE_ITEM_CONFLICT. The caller then reloads, re-merges (the
 * merge makes that safe) and writes again. So no write ever goes back in
 * time.
 *
 * Why an insert for r = 0 rather than the same upsert: the outcome is the
 * same on every server, but an upsert whose filter matches nothing costs a
 * query that the test servers cannot answer from the _id index (measured
 * with 100,000 documents stored, new documents per second: FerretDB on
 * PostgreSQL 210 by upsert, 6,900 by insert; mongo-java-server 63 and
 * 74,000), and MongoDB does less work for an insert too.
 *
 * Results follow fluent-bit's sink contract: STORE_OK (every item has a
 * result), STORE_RETRY (transient: network, election, write-concern timeout;
 * nothing can be assumed about which items landed, and retrying is safe
 * because writes are conditional), STORE_FATAL (configuration or auth: retrying
 * cannot help).
 *
 * A store_t wraps one mongoc client and is not thread-safe: one thread owns it. */
#ifndef STORE_H
#define STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"

typedef struct store store_t;

typedef enum { STORE_OK = 0, STORE_RETRY = 1, STORE_FATAL = 2 } store_status_t;

typedef struct store_error {
  uint32_t domain; /* mongoc/bson error domain, 0 if none */
  uint32_t code;   /* mongoc error or server code */
  char message[256];
} store_error_t;

/* Connects lazily (mongoc): store_new validates the URI and options only.
 * write_concern is "majority" or a positive integer (0 is refused: an
 * unacknowledged write can report neither success nor conflict). Returns NULL with
 * err filled on a bad URI or option. Caller owns; store_destroy(NULL) is safe. */
store_t *store_new(const char *uri, const char *database, const char *collection, const char *write_concern,
                   store_error_t *err);
void store_destroy(store_t *store);

/* A round trip to the server (the `ping` command). */
store_status_t store_ping(store_t *store, store_error_t *err);

/* Called once per stored document found by store_load; takes ownership of agg. */
typedef void (*store_found_cb)(void *ctx, model_aggregate_t *agg, int64_t rev);

/* Loads the documents whose _id is in keys. On MongoDB that is one find
 * with $in (more than 10,000 keys are split); on FerretDB, which answers a
 * $in by reading the whole collection, one {_id: key} find per key (the
 * first load asks the server which it is). All or nothing: on failure no
 * callback has been made. Keys not
 * found get no callback (the caller treats them as rev 0). A stored document
 * that does not decode is an error: STORE_FATAL with its _id in err (it must
 * not be overwritten blindly). */
store_status_t store_load(store_t *store, const char *const *keys, size_t nkeys, store_found_cb found, void *ctx,
                          store_error_t *err);

/* As store_load, and hands over the document's `counts` as stored too
 * (store_load's decoding recomputes them from the slots; `verify` checks
 * the stored ones against those). */
typedef void (*store_found_counts_cb)(void *ctx, model_aggregate_t *agg, int64_t rev, const model_counts_t *stored);
store_status_t store_load_counts(store_t *store, const char *const *keys, size_t nkeys, store_found_counts_cb found,
                                 void *ctx, store_error_t *err);

typedef enum {
  STORE_ITEM_PENDING = 0, /* no result (whole-batch RETRY/FATAL) */
  STORE_ITEM_OK,          /* written; the stored rev is now rev + 1 */
  STORE_ITEM_CONFLICT,    /* another writer got there first: reload and merge again */
  STORE_ITEM_ERROR        /* rejected by the server for this item; see error */
} store_item_result_t;

/* MongoDB's document size limit (maxBsonObjectSize, fixed for years).
 * store_write refuses, before sending anything, a document whose update
 * statement (the document, its {_id, rev} filter and the statement's
 * framing) would pass it: STORE_ITEM_ERROR with STORE_CODE_OBJECT_TOO_LARGE
 * (the server's own code, BSONObjectTooLarge) and the document's size in
 * bytes; the other items of the bulk go on. Sent anyway, such a statement
 * fails the whole bulk: libmongoc refuses one past 16 MiB + 16 KiB (a
 * client error, STORE_FATAL), mongo-java-server drops the connection at
 * 16 MiB (a stream error, retried for ever), and FerretDB stores up to
 * 16 MiB + 16 KiB, which MongoDB would refuse. So the limit is the same on
 * every server, and slightly under 16 MiB of document. */
#define STORE_MAX_DOCUMENT_BYTES (16 * 1024 * 1024)
#define STORE_CODE_OBJECT_TOO_LARGE 10334

typedef struct store_write_item {
  const model_aggregate_t *agg; /* in: borrowed */
  int64_t rev;                  /* in: the stored rev this write expects (0 = absent) */
  /* in, optional: a partial write. With partial set (and rev > 0) the item is
   * an update without upsert, filter {_id, rev}, that $sets only the
   * students at these indexes of agg (ascending, distinct; borrowed), the
   * header if `header`, and counts, rev + 1 and updatedAt. The caller
   * promises that the stored document at rev differs from agg in nothing
   * else and holds every one of agg's students already (a new student
   * needs a whole write: $set would append it out of id order). An update
   * that matches nothing is a conflict, as for a replace. */
  bool partial;
  bool header;
  const size_t *students;
  size_t nstudents;
  store_item_result_t result;   /* out */
  uint32_t error_code;          /* out, for STORE_ITEM_ERROR */
  size_t bytes;                 /* out: the BSON size of what is sent, the document or a partial
                                 * update's $set (the document's when refused as too large), 0 if
                                 * never encoded */
} store_write_item_t;

/* Unordered bulk writes of all items with the configured write concern
 * (new items as inserts, sent first; whole items as replace_one with upsert,
 * partial ones as update_one without upsert; keys must be distinct: a
 * duplicate would conflict with itself);
 * updated_at_ms goes into every document's updatedAt. On STORE_OK every item
 * has a result; otherwise items are left STORE_ITEM_PENDING and err says why. */
store_status_t store_write(store_t *store, store_write_item_t *items, size_t nitems, int64_t updated_at_ms,
                           store_error_t *err);

#endif
