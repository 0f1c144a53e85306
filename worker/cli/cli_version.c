/* The version lines. See cli_version.h. */
#include "cli_version.h"

#include <bson/bson.h>
#include <librdkafka/rdkafka.h>
#include <mongoc/mongoc.h>

#ifndef AGG_COMMIT /* set by CMakeLists.txt for this file */
#define AGG_COMMIT "unknown"
#endif

void cli_version(FILE *out) {
  fprintf(out, "aggregator %s\ncommit %s\nlibrdkafka %s\nlibmongoc %s\nlibbson %s\n", AGG_VERSION, AGG_COMMIT,
          rd_kafka_version_str(), mongoc_get_version(), bson_get_version());
}
