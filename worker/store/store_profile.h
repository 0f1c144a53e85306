/* What the write and load paths need to know about the server they talk
 * to, found out once per store (the first load or write asks the server
 * with buildInfo) and then only read.
 *
 * The store's path is MongoDB's: one find with $in per batch of keys, an
 * unordered bulk sent whole (the driver splits it at its own limits). A
 * server that answers a $in without its _id index, or that runs out of
 * resources on a long update command, gets a profile that says so; the
 * servers the profiles are written for are named in store_profile.c, and
 * only there.
 *
 * The reading of replies (store_bulk_outcome) and the size limit of a
 * statement hold for every server alike: they need no profile. */
#ifndef STORE_PROFILE_H
#define STORE_PROFILE_H

#include <bson/bson.h>
#include <mongoc/mongoc.h>
#include <stddef.h>

#include "sink.h"

typedef struct store_profile {
  /* Keys per find: 1 is one {_id: key} find per key (a $in would read the
   * whole collection); more is one {_id: {$in: keys}} of at most this many. */
  size_t load_keys_per_find;
  /* Operations per update command; 0 leaves a bulk whole. */
  size_t max_updates_per_command;
  /* Logged at info level when the profile is detected (with
   * max_updates_per_command); NULL for the MongoDB profile. */
  const char *announce;
} store_profile_t;

/* The profile of the server whose buildInfo reply is build_info (never
 * NULL: the MongoDB profile unless the reply names another server). */
const store_profile_t *store_profile_of_build_info(const bson_t *build_info);

/* Asks the server for its buildInfo and sets *profile to its profile.
 * SINK_RETRY or SINK_FATAL with err filled (*profile untouched) if the
 * command fails. */
sink_status_t store_profile_detect(mongoc_client_t *client, const store_profile_t **profile, sink_error_t *err);

#endif
