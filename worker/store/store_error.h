/* How the store's files fill a sink_error_t (sink.h). Every message is
 * scrubbed of the configured secrets (redact.h) before it is cut to the
 * size of err->message: a server's or driver's text may echo one, and
 * callers print err->message as it is. Each function accepts err == NULL
 * and then does nothing.
 *
 * And how a failure is classified (retry or fatal), which the unit tests
 * drive with hand-made errors and replies. Only the store's own files and
 * its tests include this header. */
#ifndef STORE_ERROR_H
#define STORE_ERROR_H

#include <bson/bson.h>
#include <stdbool.h>
#include <stdint.h>

#include "sink.h"

/* MongoDB's code for a document past its size limit (BSONObjectTooLarge):
 * what the store gives a SINK_ITEM_TOO_LARGE item as its error_code, and
 * what it reads as one in a server's write error. */
#define STORE_CODE_TOO_LARGE 10334

/* Fills err with domain, code and the formatted message. */
void store_error_set(sink_error_t *err, uint32_t domain, uint32_t code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Fills err from a driver error as "<what>: <its message>". */
void store_error_set_bson(sink_error_t *err, const char *what, const bson_error_t *e);

/* Zeroes err: no error. */
void store_error_clear(sink_error_t *err);

/* True for server error codes after which the same request may succeed
 * unchanged (elections, shutdowns, network trouble between servers,
 * write-concern timeouts). */
bool store_server_code_is_transient(int32_t code);

/* Classifies a failed operation. error comes from mongoc with error API
 * version 2 (server errors in MONGOC_ERROR_SERVER); reply is the server's
 * reply or NULL. Returns SINK_RETRY or SINK_FATAL (never SINK_OK). */
sink_status_t store_classify_error(const bson_error_t *error, const bson_t *reply);

/* Why a failure will not heal by waiting, when it is known: the server
 * refused the credentials (a server's AuthenticationFailed, the driver's
 * authentication error, or FerretDB passing on PostgreSQL's "password
 * authentication failed"), the server's certificate does not verify
 * against tlsCAFile, or a client without TLS (`tls` is false) saw the
 * server close the connection at its first command, as a TLS-only server
 * does. Looks at the error and, when given, the reply's errmsg (a server's
 * text may be longer than error->message holds). NULL when none is known;
 * else a short text for a log line and a not-ready reason. */
const char *store_error_cause(const bson_error_t *error, const bson_t *reply, bool tls);

#endif
