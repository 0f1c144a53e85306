/* The store's errors: filling a sink_error_t, and which failures are worth
 * retrying (store_error.h). */
#include "store_error.h"

#include <mongoc/mongoc.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/redact.h"

/* Write-concern errors that retrying cannot fix: w names more nodes or a tag
 * than the replica set has. */
#define STORE_CODE_UNKNOWN_REPL_WRITE_CONCERN 79
#define STORE_CODE_UNSATISFIABLE_WRITE_CONCERN 100

void store_error_set(sink_error_t *err, uint32_t domain, uint32_t code, const char *fmt, ...) {
  if (!err) return;
  err->domain = domain;
  err->code = code;
  char raw[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(raw, sizeof raw, fmt, ap);
  va_end(ap);
  redact_set_scrub_str(redact_global(), raw, sizeof raw);
  size_t n = strnlen(raw, sizeof err->message - 1);
  memcpy(err->message, raw, n);
  err->message[n] = '\0';
  explicit_bzero(raw, sizeof raw);
}

void store_error_set_bson(sink_error_t *err, const char *what, const bson_error_t *e) {
  store_error_set(err, e->domain, e->code, "%s: %s", what, e->message);
}

void store_error_clear(sink_error_t *err) {
  if (err) memset(err, 0, sizeof *err);
}

bool store_server_code_is_transient(int32_t code) {
  /* The retryable-write and retryable-read error lists of the MongoDB
   * driver specifications (the same codes libmongoc retries once by itself
   * when retryWrites is on), plus WriteConcernFailed, the wtimeout error. */
  switch (code) {
    case 6:     /* HostUnreachable */
    case 7:     /* HostNotFound */
    case 64:    /* WriteConcernFailed */
    case 89:    /* NetworkTimeout */
    case 91:    /* ShutdownInProgress */
    case 134:   /* ReadConcernMajorityNotAvailableYet */
    case 189:   /* PrimarySteppedDown */
    case 262:   /* ExceededTimeLimit */
    case 9001:  /* SocketException */
    case 10107: /* NotWritablePrimary */
    case 11600: /* InterruptedAtShutdown */
    case 11602: /* InterruptedDueToReplStateChange */
    case 13435: /* NotPrimaryNoSecondaryOk */
    case 13436: /* NotPrimaryOrSecondary */
      return true;
    default:
      return false;
  }
}

sink_status_t store_classify_error(const bson_error_t *error, const bson_t *reply) {
  /* Servers from 4.4 label the errors they consider retryable. */
  if (reply && mongoc_error_has_label(reply, "RetryableWriteError")) return SINK_RETRY;
  switch (error->domain) {
    case MONGOC_ERROR_STREAM:           /* connect, read, write, TLS, timeouts */
    case MONGOC_ERROR_SERVER_SELECTION: /* no primary reachable in time */
      return SINK_RETRY;
    case MONGOC_ERROR_WRITE_CONCERN:
      if (error->code == STORE_CODE_UNKNOWN_REPL_WRITE_CONCERN ||
          error->code == STORE_CODE_UNSATISFIABLE_WRITE_CONCERN)
        return SINK_FATAL;
      return SINK_RETRY;
    case MONGOC_ERROR_SERVER:
      return store_server_code_is_transient((int32_t)error->code) ? SINK_RETRY : SINK_FATAL;
    default:
      /* Client-side: authentication (MONGOC_ERROR_CLIENT), invalid namespace
       * or arguments, protocol/wire-version mismatch. Retrying the same
       * request cannot help; an operator has to. */
      return SINK_FATAL;
  }
}

/* Whether text, or the reply's errmsg, contains needle (case as given). */
static bool says(const bson_error_t *e, const bson_t *reply, const char *needle) {
  if (strstr(e->message, needle)) return true;
  bson_iter_t it;
  return reply && bson_iter_init_find(&it, reply, "errmsg") && BSON_ITER_HOLDS_UTF8(&it) &&
         strstr(bson_iter_utf8(&it, NULL), needle);
}

const char *store_error_cause(const bson_error_t *error, const bson_t *reply, bool tls) {
  if ((error->domain == MONGOC_ERROR_CLIENT && error->code == MONGOC_ERROR_CLIENT_AUTHENTICATE) ||
      (error->domain == MONGOC_ERROR_SERVER && error->code == 18 /* AuthenticationFailed */) ||
      says(error, reply, "password authentication failed") || says(error, reply, "Authentication failed"))
    return "credentials refused";
  if (says(error, reply, "certificate verify failed"))
    return "the server's certificate does not verify (tlsCAFile in store.uri)";
  if (says(error, reply, "TLS handshake failed")) return "the TLS handshake failed";
  if (!tls && says(error, reply, "Server closed connection"))
    return "the server closed the connection at the first command: a TLS-only server? (store.uri has no tls=true)";
  return NULL;
}
