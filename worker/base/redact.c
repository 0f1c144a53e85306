/* Secrets: what they are, how they are shown, scrubbing. See redact.h. */
#include "redact.h"

#include <ctype.h>
#include <pthread.h>
#include <string.h>

#include "oom.h"

/* ---- what a secret is ----------------------------------------------------- */

bool redact_rdkafka_property_is_secret(const char *name) {
  return strstr(name, "password") || strstr(name, "secret") || !strcmp(name, "ssl.key.pem") ||
         !strcmp(name, "ssl_key") || !strcmp(name, "sasl.oauthbearer.config");
}

bool redact_uri_option_is_secret(const char *name, size_t len) {
  char lower[64];
  if (len >= sizeof lower) len = sizeof lower - 1;
  for (size_t i = 0; i < len; i++) lower[i] = (char)tolower((unsigned char)name[i]);
  lower[len] = '\0';
  return strstr(lower, "password") || strstr(lower, "secret") || strstr(lower, "token") ||
         !strcmp(lower, "authmechanismproperties");
}

/* ---- the parts of a URI --------------------------------------------------- */

/* Where the password and the options of a URI are. The user information
 * ends at the last '@', so that an unescaped '@', '/' or '?' in a password
 * still counts as password (the user meant it so); but when an '@' comes
 * before the first '?' and another after it, the later one is in an option
 * value (`appname=a@b`) and the earlier one ends the user information. The
 * password starts after the first ':' of the user information (user names
 * cannot hold an unescaped ':'). When unsure this hides too much, never too
 * little: `mongodb://h:1/db?appname=a@b` shows as `mongodb://h:***@b`. */
typedef struct uri_parts {
  const char *pw, *pw_end;   /* NULL when there is no ':' in the user information */
  const char *first_at, *at; /* the first '@' and the one ending the user information; NULL without */
  const char *query;         /* after the '?' that starts the options, or NULL */
} uri_parts_t;

static const char *last_at_before(const char *s, const char *end) {
  const char *at = NULL;
  for (const char *p = s; p < end; p++)
    if (*p == '@') at = p;
  return at;
}

static uri_parts_t uri_split(const char *uri) {
  uri_parts_t u = {0};
  const char *s = strstr(uri, "://");
  s = s ? s + 3 : uri;
  u.first_at = strchr(s, '@');
  const char *after = s;
  if (u.first_at) {
    u.at = strrchr(s, '@');
    const char *q = strchr(s, '?');
    if (q && q < u.at) {
      const char *before_q = last_at_before(s, q);
      if (before_q) u.at = before_q;
    }
    const char *colon = memchr(s, ':', (size_t)(u.at - s));
    if (colon) {
      u.pw = colon + 1;
      u.pw_end = u.at;
    }
    after = u.at + 1;
  }
  const char *q = strchr(after, '?');
  u.query = q ? q + 1 : NULL;
  return u;
}

bool redact_uri_has_unescaped_at(const char *uri) {
  uri_parts_t u = uri_split(uri);
  if (!u.first_at) return false;
  if (u.at != u.first_at) return true;
  /* libmongoc ends the hosts at the first '/': an '@' after it with none
   * before is in the database name or an option to the driver, but the
   * split above takes it for the end of a password (hiding too much). */
  const char *s = strstr(uri, "://");
  s = s ? s + 3 : uri;
  return memchr(s, '/', (size_t)(u.at - s)) || memchr(s, '?', (size_t)(u.at - s));
}

void redact_uri(const char *uri, model_buf_t *out) {
  uri_parts_t u = uri_split(uri);
  const char *p = uri;
  if (u.pw) {
    model_buf_append(out, p, (size_t)(u.pw - p));
    model_buf_puts(out, REDACT_MASK);
    p = u.pw_end;
  }
  if (!u.query) {
    model_buf_puts(out, p);
    return;
  }
  model_buf_append(out, p, (size_t)(u.query - p));
  for (p = u.query; *p;) {
    size_t n = strcspn(p, "&;");
    const char *eq = memchr(p, '=', n);
    if (eq && redact_uri_option_is_secret(p, (size_t)(eq - p))) {
      model_buf_append(out, p, (size_t)(eq - p + 1));
      model_buf_puts(out, REDACT_MASK);
    } else {
      model_buf_append(out, p, n);
    }
    p += n;
    if (*p) model_buf_putc(out, *p++);
  }
}

/* ---- sets ----------------------------------------------------------------- */

struct redact_set {
  pthread_mutex_t lock;
  char **v;
  size_t *len;
  size_t n, cap;
};

redact_set_t *redact_set_new(void) {
  redact_set_t *set = oom_calloc(1, sizeof *set);
  pthread_mutex_init(&set->lock, NULL);
  return set;
}

static void clear_locked(redact_set_t *set) {
  for (size_t i = 0; i < set->n; i++) {
    explicit_bzero(set->v[i], set->len[i]);
    free(set->v[i]);
  }
  free(set->v);
  free(set->len);
  set->v = NULL;
  set->len = NULL;
  set->n = set->cap = 0;
}

void redact_set_clear(redact_set_t *set) {
  if (!set) return;
  pthread_mutex_lock(&set->lock);
  clear_locked(set);
  pthread_mutex_unlock(&set->lock);
}

void redact_set_destroy(redact_set_t *set) {
  if (!set) return;
  clear_locked(set);
  pthread_mutex_destroy(&set->lock);
  free(set);
}

/* A secret holding a NUL (a decoded "%00") is kept up to it: that is what a
 * library printing it as a C string shows, and the stored length must be
 * the stored bytes' (the matcher compares len bytes). */
static void add_locked(redact_set_t *set, const char *s, size_t n) {
  const char *nul = memchr(s, '\0', n);
  if (nul) n = (size_t)(nul - s);
  if (n < REDACT_MIN_LEN) return;
  for (size_t i = 0; i < set->n; i++)
    if (set->len[i] == n && !memcmp(set->v[i], s, n)) return;
  if (set->n == set->cap) {
    set->cap = set->cap ? set->cap * 2 : 8;
    set->v = oom_realloc(set->v, set->cap * sizeof *set->v);
    set->len = oom_realloc(set->len, set->cap * sizeof *set->len);
  }
  set->v[set->n] = oom_strndup(s, n);
  set->len[set->n++] = n;
}

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Adds s[0..n) with '"' and '\\' escaped, as a library that prints a
 * document as JSON (libbson) would quote it. */
static void add_json_locked(redact_set_t *set, const char *s, size_t n) {
  if (!memchr(s, '"', n) && !memchr(s, '\\', n)) return;
  model_buf_t b = MODEL_BUF_INIT;
  for (size_t i = 0; i < n; i++) {
    if (s[i] == '"' || s[i] == '\\') model_buf_putc(&b, '\\');
    model_buf_putc(&b, s[i]);
  }
  add_locked(set, b.data, b.len);
  explicit_bzero(b.data, b.cap);
  model_buf_destroy(&b);
}

/* Adds s[0..n), its JSON-quoted form and, when it holds %XX escapes, its
 * decoded form (invalid escapes kept as they are). */
static void add_both_locked(redact_set_t *set, const char *s, size_t n) {
  add_locked(set, s, n);
  add_json_locked(set, s, n);
  if (!memchr(s, '%', n)) return;
  char *d = oom_malloc(n + 1);
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    int hi, lo;
    if (s[i] == '%' && i + 2 < n && (hi = hexval(s[i + 1])) >= 0 && (lo = hexval(s[i + 2])) >= 0) {
      d[o++] = (char)(hi * 16 + lo);
      i += 2;
    } else {
      d[o++] = s[i];
    }
  }
  add_locked(set, d, o);
  add_json_locked(set, d, o);
  explicit_bzero(d, n + 1);
  free(d);
}

static bool is_blank(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/* A library that cannot parse a secret quotes the part where it stopped:
 * librdkafka says "Unrecognized sasl.oauthbearer.config beginning at:
 * <the rest of the value>" and "non-integral 'lifeSeconds=': <a value>".
 * So every part of a secret that starts a word (after a blank), and the
 * value of every key=value word in it, is a secret too. */
static void add_parts_locked(redact_set_t *set, const char *s, size_t n) {
  for (size_t i = 0; i < n;) {
    while (i < n && is_blank(s[i])) i++;
    size_t start = i;
    while (i < n && !is_blank(s[i])) i++;
    if (start == i) break;
    if (start > 0) add_both_locked(set, s + start, n - start);
    const char *eq = memchr(s + start, '=', i - start);
    if (eq) add_both_locked(set, eq + 1, (size_t)(s + i - eq - 1));
  }
}

void redact_set_add(redact_set_t *set, const char *secret) {
  if (!set || !secret) return;
  pthread_mutex_lock(&set->lock);
  add_both_locked(set, secret, strlen(secret));
  add_parts_locked(set, secret, strlen(secret));
  pthread_mutex_unlock(&set->lock);
}

void redact_set_add_uri(redact_set_t *set, const char *uri) {
  if (!set || !uri) return;
  uri_parts_t u = uri_split(uri);
  pthread_mutex_lock(&set->lock);
  if (u.pw) {
    add_both_locked(set, u.pw, (size_t)(u.pw_end - u.pw));
    /* libmongoc reads up to the first '@' (an invalid URI, but its error
     * quotes what it read). */
    if (u.first_at > u.pw && u.first_at != u.pw_end) add_both_locked(set, u.pw, (size_t)(u.first_at - u.pw));
  }
  for (const char *p = u.query; p && *p;) {
    size_t n = strcspn(p, "&;");
    const char *eq = memchr(p, '=', n);
    if (eq && redact_uri_option_is_secret(p, (size_t)(eq - p))) add_both_locked(set, eq + 1, (size_t)(p + n - eq - 1));
    p += n;
    if (*p) p++;
  }
  pthread_mutex_unlock(&set->lock);
}

void redact_set_scrub(const redact_set_t *cset, const char *s, size_t n, model_buf_t *out) {
  if (!cset) {
    model_buf_append(out, s, n);
    return;
  }
  redact_set_t *set = (redact_set_t *)cset; /* the lock is not part of the value */
  pthread_mutex_lock(&set->lock);
  if (!set->n) {
    pthread_mutex_unlock(&set->lock);
    model_buf_append(out, s, n);
    return;
  }
  model_buf_reserve(out, n);
  size_t i = 0, copied = 0;
  while (i < n) {
    size_t best = 0;
    bool tail = false;
    for (size_t k = 0; k < set->n; k++) {
      size_t len = set->len[k];
      if (len <= n - i) {
        if (len > best && s[i] == set->v[k][0] && !memcmp(s + i, set->v[k], len)) best = len;
      } else if (n - i >= REDACT_MIN_LEN && !memcmp(s + i, set->v[k], n - i)) {
        tail = true; /* the message ends inside this secret */
      }
    }
    if (!best && tail) best = n - i;
    if (!best) {
      i++;
      continue;
    }
    model_buf_append(out, s + copied, i - copied);
    model_buf_puts(out, REDACT_MASK);
    i += best;
    copied = i;
  }
  model_buf_append(out, s + copied, n - copied);
  pthread_mutex_unlock(&set->lock);
}

void redact_set_scrub_str(const redact_set_t *set, char *msg, size_t size) {
  if (!size) return;
  model_buf_t b = MODEL_BUF_INIT;
  redact_set_scrub(set, msg, strnlen(msg, size), &b);
  size_t n = b.len < size - 1 ? b.len : size - 1;
  memcpy(msg, b.data, n);
  msg[n] = '\0';
  explicit_bzero(b.data, b.cap);
  model_buf_destroy(&b);
}

redact_set_t *redact_global(void) {
  static redact_set_t global = {.lock = PTHREAD_MUTEX_INITIALIZER};
  return &global;
}
