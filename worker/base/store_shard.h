/* The shard key the store's filters carry (store.shard_key): the top-level
 * fields of the stored document whose values, besides _id, every write's
 * and every find's filter names, so that a sharded cluster routes each
 * statement to the one shard that holds its document. MongoDB refuses an
 * upsert whose filter lacks the full shard key, and a find without it is
 * sent to every shard.
 *
 * Only fields whose value never changes for an _id may be in it: the
 * document's `tenant` and `assignment` (both part of its _id,
 * "<tenant>/<assignment>", docs/DOCUMENT.md) and `_id` itself. Their
 * values come from the key alone. Only the store's own files and the
 * configuration's check include this header. */
#ifndef STORE_SHARD_H
#define STORE_SHARD_H

#include <bson/bson.h>
#include <stdbool.h>
#include <stddef.h>

/* A set of fields besides _id, one bit each; 0 for none (_id alone). */
typedef unsigned store_shard_t;
enum {
  STORE_SHARD_TENANT = 1u << 0,
  STORE_SHARD_ASSIGNMENT = 1u << 1,
};

/* The field named s[0..n) as a bit (0 for _id, which every filter holds);
 * false when it may not be in a shard key. */
bool store_shard_field(const char *s, size_t n, store_shard_t *bit);

/* The fields of a comma list as store.shard_key normalises it ("tenant",
 * "tenant,assignment", "" for none); false, with the first item that is
 * not a field, when one is not. */
bool store_shard_parse(const char *list, store_shard_t *out, const char **bad, size_t *bad_len);

/* Appends to filter the shard fields of the document whose _id is key
 * ({tenant: "t1"} for "t1/a1"). */
void store_shard_append(store_shard_t shard, const char *key, size_t key_len, bson_t *filter);

/* Appends to filter the shard fields of the documents whose _id is one of
 * keys[0..n): each field's value when they share it, else {$in: [its
 * distinct values]}. A document whose _id is in keys has them all, so the
 * filter selects the same documents as {_id: {$in: keys}} alone. */
void store_shard_append_many(store_shard_t shard, const char *const *keys, size_t n, bson_t *filter);

#endif
