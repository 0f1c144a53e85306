/* Configuration: loading from the file, the environment and --set, checks
 * across keys and with librdkafka, and the SIGHUP merge. The keys
 * themselves are the table in config_table.c (docs/CONFIG.md is written from
 * it by tests/tools/gen_config_doc.c); errors are scrubbed of the secrets
 * config_secrets.c names and suggest what config_suggest.c finds; `config
 * show` and `config describe` (config_show.c) stand above this file.
 *
 * The INI reader is our own rather than Debian's inih:
 * libinih 55 is built without INI_HANDLER_LINENO, so its handler never sees
 * a line number; it also accepts `key: value`, never reports a section header
 * that has no keys under it (a misspelt `[bacth]` would pass silently), and
 * its options are process-wide globals. Errors must name FILE:LINE and
 * unknown sections must be errors, so a strict reader it is. */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <mongoc/mongoc.h>

#include "buf.h"
#include "config_files.h"
#include "config_secrets.h"
#include "config_suggest.h"
#include "config_table.h"
#include "oom.h"
#include "base/redact.h"

extern char **environ;

/* A value read through a `_file` key may be at most this long. */
#define CONFIG_VALUE_FILE_MAX (1024 * 1024)

/* ---- new / destroy ------------------------------------------------------- */

config_t *config_new(void) {
  config_t *cfg = oom_calloc(1, sizeof *cfg);
  for (size_t i = 0; i < config_props_count; i++) {
    char why[256];
    if (!config_prop_set(&config_props[i], cfg, config_props[i].def, false, why, sizeof why)) {
      /* A default that fails its own rule is a bug in the table. */
      fprintf(stderr, "config: default of %s.%s is invalid: %s\n", config_props[i].section, config_props[i].key,
              why);
      abort();
    }
  }
  return cfg;
}

static void rdkafka_free(config_t *cfg) {
  for (size_t i = 0; i < cfg->rdkafka_count; i++) {
    free(cfg->rdkafka[i].name);
    free(cfg->rdkafka[i].value);
    free(cfg->rdkafka[i].origin.value_file);
  }
  free(cfg->rdkafka);
  cfg->rdkafka = NULL;
  cfg->rdkafka_count = 0;
}

static void warnings_free(config_t *cfg) {
  for (size_t i = 0; i < cfg->warnings_count; i++) free(cfg->warnings[i]);
  free(cfg->warnings);
  cfg->warnings = NULL;
  cfg->warnings_count = 0;
}

void config_destroy(config_t *cfg) {
  if (!cfg) return;
  for (size_t i = 0; i < config_props_count; i++) config_prop_free(&config_props[i], cfg);
  rdkafka_free(cfg);
  for (size_t i = 0; i < config_props_count; i++) free(cfg->origins[i].value_file);
  warnings_free(cfg);
  free(cfg->source_file);
  free(cfg);
}

/* ---- where a value came from ---------------------------------------------- */

typedef enum { ORIGIN_DEFAULT, ORIGIN_FILE, ORIGIN_ENV, ORIGIN_SET } origin_kind_t;

typedef struct origin {
  origin_kind_t kind;
  int line;       /* ORIGIN_FILE */
  char env[160];  /* ORIGIN_ENV: the variable */
  bool from_file; /* given as key_file */
  char *path;     /* key_file path not read yet (only the winning layer's is read) */
} origin_t;

typedef struct loader {
  config_t *cfg;
  const char *file; /* for messages */
  origin_t *props;  /* one per config_props row */
  origin_t *rk;     /* one per cfg->rdkafka entry */
  config_error_t *err;
  size_t errors;       /* fail() calls so far */
  const char *pending; /* a secret value being checked, not yet in cfg: errors are scrubbed of it too */
  bool pending_uri;    /* pending is a URI given as it is: only its password and secret options are secrets */
} loader_t;

static void origin_prefix(const loader_t *L, const origin_t *o, model_buf_t *b) {
  switch (o->kind) {
  case ORIGIN_FILE: model_buf_printf(b, "%s:%d", L->file, o->line); break;
  case ORIGIN_ENV: model_buf_printf(b, "environment %s", o->env); break;
  case ORIGIN_SET: model_buf_puts(b, "--set"); break;
  case ORIGIN_DEFAULT: model_buf_puts(b, "default"); break;
  }
}

/* Copies src into dst (size n, always terminated) with every control
 * character escaped as \n, \r, \t or \xNN: an error is one line (a log
 * or a shell reads it as one), yet it may quote a value from --set or the
 * environment, which can hold any byte. Escaped after scrubbing, so a secret
 * is matched as it is given. */
static void one_line(const char *src, char *dst, size_t n) {
  size_t o = 0;
  for (const unsigned char *p = (const unsigned char *)src; *p && o + 1 < n; p++) {
    char esc[5];
    size_t k;
    if (*p == '\n') k = (size_t)snprintf(esc, sizeof esc, "\\n");
    else if (*p == '\r') k = (size_t)snprintf(esc, sizeof esc, "\\r");
    else if (*p == '\t') k = (size_t)snprintf(esc, sizeof esc, "\\t");
    else if (*p < 0x20 || *p == 0x7f) k = (size_t)snprintf(esc, sizeof esc, "\\x%02x", *p);
    else {
      esc[0] = (char)*p;
      k = 1;
    }
    if (o + k >= n) break;
    memcpy(dst + o, esc, k);
    o += k;
  }
  dst[o] = '\0';
}

/* Adds an error "ORIGIN: NAME: problem" (NAME may be NULL) to L->err and
 * returns false. The problem is scrubbed of every secret loaded so far and of the
 * one being checked: problems reported by librdkafka or libmongoc may quote
 * the value they refuse. ORIGIN and NAME (a file and line, a variable's or
 * a key's name) are not: they hold no value, and a secret that happens to
 * read like them must not mask where the error is. */
static bool fail(loader_t *L, const origin_t *o, const char *name, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool fail(loader_t *L, const origin_t *o, const char *name, const char *fmt, ...) {
  model_buf_t b = MODEL_BUF_INIT;
  if (o && o->kind == ORIGIN_SET) {
    model_buf_printf(&b, "--set%s%s: ", name ? " " : "", name ? name : ""); /* "--set batch.linger_ms: ..." */
  } else {
    if (o) {
      origin_prefix(L, o, &b);
      model_buf_puts(&b, ": ");
    }
    if (name) model_buf_printf(&b, "%s: ", name);
  }
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  redact_set_t *secrets = redact_set_new();
  config_collect_secrets(L->cfg, secrets);
  if (L->pending) {
    /* A URI's other parts (hosts, option values such as tls=maybe) are
     * what the user needs to see to fix it. */
    if (!L->pending_uri) redact_set_add(secrets, L->pending);
    redact_set_add_uri(secrets, L->pending);
  }
  redact_set_scrub(secrets, msg, strlen(msg), &b);
  config_error_t *e = L->err;
  if (e->count < CONFIG_ERRORS_MAX) one_line(b.data, e->count ? e->rest[e->count - 1] : e->message, sizeof e->message);
  e->count++;
  L->errors++;
  redact_set_destroy(secrets);
  explicit_bzero(msg, sizeof msg);
  explicit_bzero(b.data, b.cap);
  model_buf_destroy(&b);
  return false;
}

/* Later layers outrank earlier ones; within the file, later lines. */
static long origin_rank(const origin_t *o) { return (long)o->kind * 10000000L + o->line; }

/* ---- assigning one value ------------------------------------------------- */

/* One key set twice by one source: "duplicate key" when spelt the same,
 * a conflict when it is key and key_file. */
static bool duplicate(loader_t *L, const origin_t *in, const origin_t *prev, const char *name,
                      const char *prev_name) {
  char what[400];
  if (!strcmp(name, prev_name))
    snprintf(what, sizeof what, "duplicate key, already set");
  else
    snprintf(what, sizeof what, "conflicts with %s", prev_name);
  switch (prev->kind) {
  case ORIGIN_FILE: return fail(L, in, name, "%s on line %d", what, prev->line);
  case ORIGIN_ENV: return fail(L, in, name, "%s by %s", what, prev->env);
  default: return fail(L, in, name, "%s by an earlier --set", what);
  }
}

static void record(origin_t *o, const origin_t *in, const char *path) {
  free(o->path);
  o->path = path ? oom_strdup(path) : NULL;
  o->kind = in->kind;
  o->line = in->line;
  snprintf(o->env, sizeof o->env, "%s", in->env);
  o->from_file = path != NULL;
}

static bool assign_rdkafka(loader_t *L, const origin_t *in, const char *prop, bool from_file, const char *value,
                           const char *name) {
  if (!*prop) return fail(L, in, name, "missing the librdkafka property name after 'rdkafka.'");
  const char *reserved = config_rdkafka_reserved(prop);
  if (reserved) return fail(L, in, name, "%s cannot be passed through: %s", prop, reserved);
  if (from_file && !*value) return fail(L, in, name, "empty file name");
  config_t *cfg = L->cfg;
  size_t i = 0;
  while (i < cfg->rdkafka_count && strcmp(cfg->rdkafka[i].name, prop)) i++;
  if (i == cfg->rdkafka_count) {
    config_kv_t *kv = oom_realloc(cfg->rdkafka, (i + 1) * sizeof *kv);
    origin_t *o = oom_realloc(L->rk, (i + 1) * sizeof *o);
    cfg->rdkafka = kv;
    L->rk = o;
    kv[i].name = oom_strdup(prop);
    kv[i].value = oom_strdup("");
    kv[i].from_file = false;
    memset(&kv[i].origin, 0, sizeof kv[i].origin);
    memset(&o[i], 0, sizeof o[i]);
    cfg->rdkafka_count++;
  } else if (L->rk[i].kind == in->kind) {
    char prev[300];
    snprintf(prev, sizeof prev, "kafka.rdkafka.%s%s", prop, L->rk[i].from_file ? "_file" : "");
    return duplicate(L, in, &L->rk[i], name, prev);
  }
  if (!from_file) {
    free(cfg->rdkafka[i].value);
    cfg->rdkafka[i].value = oom_strdup(value);
    cfg->rdkafka[i].from_file = false;
  }
  record(&L->rk[i], in, from_file ? value : NULL);
  return true;
}

/* Sets section.key (key may end in _file) from one source. */
static bool assign(loader_t *L, const origin_t *in, const char *section, const char *key, const char *value) {
  char name[512], hint[512], spelt[600];
  snprintf(name, sizeof name, "%s.%s", section, key);
  if (strlen(key) > 200) return fail(L, in, NULL, "key longer than 200 characters: %.40s...", name);
  if (!config_section_known(section)) {
    const char *s = config_suggest_section(section);
    if (s) return fail(L, in, name, "unknown section '%s' (did you mean %s?)", section, s);
    return fail(L, in, name, "unknown section '%s'", section);
  }
  size_t klen = strlen(key);
  bool from_file = klen > 5 && !strcmp(key + klen - 5, "_file");
  char base[256];
  snprintf(base, sizeof base, "%.*s", (int)(from_file ? klen - 5 : klen), key);

  if (!strcmp(section, "kafka") && !strncmp(base, "rdkafka.", 8))
    return assign_rdkafka(L, in, base + 8, from_file, value, name);

  const config_prop_t *p = config_prop_find(section, base);
  if (!p) {
    if (!config_suggest_key(section, base, hint, sizeof hint)) return fail(L, in, name, "unknown key");
    config_suggest_spell(in->kind == ORIGIN_ENV, hint, from_file, spelt, sizeof spelt);
    return fail(L, in, name, "unknown key (did you mean %s?)", spelt);
  }
  origin_t *o = &L->props[p - config_props];
  if (o->kind == in->kind) {
    char prev[300];
    snprintf(prev, sizeof prev, "%s.%s%s", p->section, p->key, o->from_file ? "_file" : "");
    return duplicate(L, in, o, name, prev);
  }
  if (from_file) {
    if (!*value) return fail(L, in, name, "empty file name");
  } else {
    char why[400];
    L->pending = p->flags & CONFIG_SECRET ? value : NULL;
    L->pending_uri = !strcmp(p->type_name, "uri");
    bool ok = config_prop_set(p, L->cfg, value, false, why, sizeof why) || fail(L, in, name, "%s", why);
    L->pending = NULL;
    L->pending_uri = false;
    if (!ok) return false;
    L->cfg->from_file &= ~(UINT32_C(1) << (p - config_props));
  }
  record(o, in, from_file ? value : NULL);
  return true;
}

/* ---- the file ------------------------------------------------------------ */

static char *trim(char *s) {
  while (*s == ' ' || *s == '\t') s++;
  char *e = s + strlen(s);
  while (e > s && (e[-1] == ' ' || e[-1] == '\t')) e--;
  *e = '\0';
  return s;
}

/* The grammar (docs/CONFIG.md): blank lines; full-line comments starting
 * with '#' or ';'; `[section]`; `key = value` split at the first '='. No
 * inline comments, quoting or continuation lines: a value is the rest of its
 * line, trimmed, taken literally. */
static bool load_file(loader_t *L, const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return fail(L, NULL, NULL, "%s: cannot open: %s", path, strerror(errno));
  char *line = NULL, section[128] = "";
  size_t cap = 0;
  ssize_t n;
  bool ok = true;
  /* After a bad section header the keys under it are not reported one by
   * one: the header is the error. */
  bool skip = false;
  origin_t in = {.kind = ORIGIN_FILE};
  errno = 0;
  while ((n = getline(&line, &cap, f)) >= 0) {
    in.line++;
    if ((size_t)n != strlen(line)) {
      ok = fail(L, &in, NULL, "NUL byte in the line");
      continue;
    }
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = '\0';
    char *s = line;
    if (in.line == 1 && !strncmp(s, "\xEF\xBB\xBF", 3)) s += 3; /* UTF-8 BOM from some editors */
    s = trim(s);
    if (!*s || *s == '#' || *s == ';') continue;
    if (*s == '[') {
      char *close = strchr(s, ']');
      skip = true;
      if (!close || close[1]) {
        ok = fail(L, &in, NULL, "a section header is '[name]' alone on its line");
        continue;
      }
      *close = '\0';
      char *name = trim(s + 1);
      if (!config_section_known(name)) {
        const char *sug = config_suggest_section(name);
        if (sug)
          ok = fail(L, &in, NULL, "[%s]: unknown section (did you mean [%s]?)", name, sug);
        else
          ok = fail(L, &in, NULL, "[%s]: unknown section", name);
        continue;
      }
      skip = false;
      snprintf(section, sizeof section, "%s", name);
      continue;
    }
    if (skip) continue;
    char *eq = strchr(s, '=');
    if (!eq) {
      ok = fail(L, &in, NULL, "expected '[section]' or 'key = value'");
      continue;
    }
    *eq = '\0';
    char *key = trim(s), *value = trim(eq + 1);
    if (!*key) {
      ok = fail(L, &in, NULL, "missing key before '='");
      continue;
    }
    if (!*section) {
      ok = fail(L, &in, key, "key outside a section (add a [section] header above it)");
      continue;
    }
    ok = assign(L, &in, section, key, value) && ok;
  }
  if (ferror(f)) ok = fail(L, NULL, NULL, "%s: cannot read: %s", path, strerror(errno));
  free(line);
  fclose(f);
  return ok;
}

/* ---- the environment ----------------------------------------------------- */

/* The variables Kubernetes injects for a Service named "aggregator"
 * (AGGREGATOR_SERVICE_HOST, AGGREGATOR_SERVICE_PORT[_NAME], AGGREGATOR_PORT,
 * AGGREGATOR_PORT_9464_TCP[_PROTO|_PORT|_ADDR]): known not to be ours, so
 * not worth a warning at every start. */
static bool kubernetes_service_variable(const char *name, size_t n) {
  if (n == 23 && !strncmp(name, "AGGREGATOR_SERVICE_HOST", 23)) return true;
  if (n >= 23 && !strncmp(name, "AGGREGATOR_SERVICE_PORT", 23) && (n == 23 || name[23] == '_')) return true;
  if (n < 15 || strncmp(name, "AGGREGATOR_PORT", 15)) return false;
  if (n == 15) return true;
  const char *p = name + 15, *end = name + n;
  if (*p++ != '_' || p >= end || !isdigit((unsigned char)*p)) return false;
  while (p < end && isdigit((unsigned char)*p)) p++;
  static const char *const protos[] = {"_TCP", "_UDP", "_SCTP"};
  size_t k = 0;
  while (k < 3 && ((size_t)(end - p) < strlen(protos[k]) || strncmp(p, protos[k], strlen(protos[k])))) k++;
  if (k == 3) return false;
  p += strlen(protos[k]);
  return p == end || ((size_t)(end - p) == 6 && (!strncmp(p, "_PROTO", 6))) ||
         ((size_t)(end - p) == 5 && (!strncmp(p, "_PORT", 5) || !strncmp(p, "_ADDR", 5)));
}

static void warn_unknown_env(loader_t *L, const char *name, size_t n) {
  char hint[300] = "", spelt[300], line[800];
  snprintf(spelt, sizeof spelt, "%.*s", (int)n, name);
  char shown[300];
  one_line(spelt, shown, sizeof shown); /* a name may hold any byte but '=' */
  if (config_suggest_env(name, n, hint, sizeof hint))
    snprintf(line, sizeof line, "environment %s names no configuration key (did you mean %s?); ignored", shown, hint);
  else
    snprintf(line, sizeof line, "environment %s names no configuration key; ignored", shown);
  config_t *cfg = L->cfg;
  cfg->warnings = oom_realloc(cfg->warnings, (cfg->warnings_count + 1) * sizeof *cfg->warnings);
  cfg->warnings[cfg->warnings_count++] = oom_strdup(line);
}

/* AGGREGATOR_<SECTION>_<KEY>[_FILE]. A variable whose section part names no
 * section is a warning, not an error: a wrapper may use the prefix for its
 * own variables (Kubernetes' own for a Service named "aggregator" pass
 * silently). Within a known section an unknown name is an error, like a
 * typo in the file. */
static bool load_env(loader_t *L) {
  bool all_ok = true;
  for (char **e = environ; *e; e++) {
    if (strncmp(*e, "AGGREGATOR_", 11)) continue;
    const char *eq = strchr(*e, '=');
    if (!eq) continue;
    origin_t in = {.kind = ORIGIN_ENV};
    snprintf(in.env, sizeof in.env, "%.*s", (int)(eq - *e), *e);
    const char *rest = *e + 11;
    const char *section = NULL;
    for (size_t i = 0; i < config_sections_count && !section; i++) {
      char upper[32];
      size_t n = strlen(config_sections[i].name);
      for (size_t j = 0; j <= n; j++) upper[j] = (char)toupper((unsigned char)config_sections[i].name[j]);
      if (!strncmp(rest, upper, n) && rest[n] == '_' && rest + n + 1 < eq) section = config_sections[i].name;
    }
    if (!section) {
      size_t n = (size_t)(eq - *e);
      if (!kubernetes_service_variable(*e, n)) warn_unknown_env(L, *e, n);
      continue;
    }
    const char *r = rest + strlen(section) + 1;
    size_t rlen = (size_t)(eq - r);
    char *key = oom_malloc(rlen + sizeof "rdkafka.");
    if (!strcmp(section, "kafka") && rlen > 8 && !strncmp(r, "RDKAFKA_", 8)) {
      /* librdkafka names use dots; the few with underscores (log_level,
       * enabled_events) cannot be set from the environment. */
      size_t n = (size_t)sprintf(key, "rdkafka.%.*s", (int)(rlen - 8), r + 8);
      for (size_t i = 8; i < n; i++) key[i] = key[i] == '_' ? '.' : (char)tolower((unsigned char)key[i]);
      if (n > 5 && !strcmp(key + n - 5, ".file")) key[n - 5] = '_';
    } else {
      for (size_t i = 0; i < rlen; i++) key[i] = (char)tolower((unsigned char)r[i]);
      key[rlen] = '\0';
    }
    /* Trimmed like a value in the file or given with --set: `config show`
     * prints what it would read back. */
    char *value = oom_strdup(eq + 1);
    size_t vlen = strlen(value);
    bool ok = assign(L, &in, section, key, trim(value));
    explicit_bzero(value, vlen); /* it may be a secret */
    free(value);
    free(key);
    all_ok = ok && all_ok;
  }
  return all_ok;
}

/* ---- --set --------------------------------------------------------------- */

static bool load_sets(loader_t *L, char *const *sets, size_t nsets) {
  origin_t in = {.kind = ORIGIN_SET};
  bool all_ok = true;
  for (size_t i = 0; i < nsets; i++) {
    char *arg = oom_strdup(sets[i]);
    char *eq = strchr(arg, '=');
    char *dot = eq ? memchr(arg, '.', (size_t)(eq - arg)) : NULL;
    bool ok;
    if (!eq || !dot) {
      if (eq) *eq = '\0';
      ok = fail(L, &in, trim(arg), "expected section.key=value");
    } else {
      *eq = '\0';
      *dot = '\0';
      ok = assign(L, &in, trim(arg), trim(dot + 1), trim(eq + 1));
    }
    free(arg);
    all_ok = ok && all_ok;
  }
  return all_ok;
}

/* ---- values read from files ---------------------------------------------- */

/* Reads a `_file` value: the whole file, trailing CR/LF removed. */
static bool read_value_file(const char *path, char **out, char *why, size_t why_size) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(why, why_size, "cannot read %s: %s", path, strerror(errno));
    return false;
  }
  model_buf_t b = MODEL_BUF_INIT;
  model_buf_reserve(&b, 4096);
  bool ok = true;
  for (;;) {
    if (b.len > CONFIG_VALUE_FILE_MAX) {
      snprintf(why, why_size, "%s is larger than %d bytes", path, CONFIG_VALUE_FILE_MAX);
      ok = false;
      break;
    }
    model_buf_reserve(&b, 4096);
    ssize_t n = read(fd, b.data + b.len, 4096);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      snprintf(why, why_size, "cannot read %s: %s", path, strerror(errno));
      ok = false;
      break;
    }
    if (n == 0) break;
    b.len += (size_t)n;
  }
  close(fd);
  if (ok && memchr(b.data, '\0', b.len)) {
    snprintf(why, why_size, "%s contains a NUL byte", path);
    ok = false;
  }
  if (!ok) {
    explicit_bzero(b.data, b.cap);
    model_buf_destroy(&b);
    return false;
  }
  while (b.len && (b.data[b.len - 1] == '\n' || b.data[b.len - 1] == '\r')) b.len--;
  b.data[b.len] = '\0';
  *out = b.data;
  return true;
}

static void free_secret(char *s) {
  if (!s) return;
  explicit_bzero(s, strlen(s));
  free(s);
}

static void resolve_files(loader_t *L) {
  char why[600], name[300];
  for (size_t i = 0; i < config_props_count; i++) {
    origin_t *o = &L->props[i];
    if (!o->path) continue;
    const config_prop_t *p = &config_props[i];
    snprintf(name, sizeof name, "%s.%s_file", p->section, p->key);
    char *value;
    if (!read_value_file(o->path, &value, why, sizeof why)) {
      fail(L, o, name, "%s", why);
      continue;
    }
    /* A value read from a file is a secret: errors do not quote it. */
    char vwhy[400];
    L->pending = value;
    bool ok = config_prop_set(p, L->cfg, value, true, vwhy, sizeof vwhy) ||
              fail(L, o, name, "%s: %s", o->path, vwhy);
    L->pending = NULL;
    free_secret(value);
    if (ok) L->cfg->from_file |= UINT32_C(1) << i;
  }
  for (size_t i = 0; i < L->cfg->rdkafka_count; i++) {
    origin_t *o = &L->rk[i];
    if (!o->path) continue;
    config_kv_t *kv = &L->cfg->rdkafka[i];
    snprintf(name, sizeof name, "kafka.rdkafka.%s_file", kv->name);
    char *value;
    if (!read_value_file(o->path, &value, why, sizeof why)) {
      fail(L, o, name, "%s", why);
      continue;
    }
    free_secret(kv->value);
    kv->value = value;
    kv->from_file = true;
  }
}

/* ---- checks across keys, and librdkafka's verdict ------------------------ */

static const origin_t *origin_of(const loader_t *L, const char *section, const char *key) {
  return &L->props[config_prop_find(section, key) - config_props];
}

/* `topic` (the value of section.key) must not be in `list` (the value of
 * lsection.lkey, a comma list): the error blames whichever of the two was
 * set last. */
static void check_distinct_topic(loader_t *L, const char *section, const char *key, const char *topic,
                                 const char *lsection, const char *lkey, const char *list, const char *both) {
  size_t dl = strlen(topic);
  for (const char *t = list; *t;) {
    size_t n = strcspn(t, ",");
    if (n == dl && !strncmp(t, topic, n)) {
      const origin_t *od = origin_of(L, section, key), *ot = origin_of(L, lsection, lkey);
      bool blame_topic = origin_rank(od) >= origin_rank(ot);
      char name[64];
      snprintf(name, sizeof name, "%s.%s", blame_topic ? section : lsection, blame_topic ? key : lkey);
      fail(L, blame_topic ? od : ot, name, "'%s' is both %s", topic, both);
      return;
    }
    t += n + (t[n] == ',');
  }
}

static void check_cross(loader_t *L) {
  const config_t *c = L->cfg;
  if (c->retry_backoff_max_ms < c->retry_backoff_ms) {
    const origin_t *omax = origin_of(L, "retry", "backoff_max_ms"), *omin = origin_of(L, "retry", "backoff_ms");
    if (origin_rank(omax) >= origin_rank(omin))
      fail(L, omax, "retry.backoff_max_ms", "%lld is less than retry.backoff_ms (%lld)",
           (long long)c->retry_backoff_max_ms, (long long)c->retry_backoff_ms);
    else
      fail(L, omin, "retry.backoff_ms", "%lld is greater than retry.backoff_max_ms (%lld)",
           (long long)c->retry_backoff_ms, (long long)c->retry_backoff_max_ms);
  }
  /* Consuming the dead-letter topic would feed every reject back in forever,
   * and consuming the change topic would merge events as commands (each a
   * reject); announcing on the dead-letter topic would mix two streams. */
  check_distinct_topic(L, "kafka", "dlq_topic", c->kafka_dlq_topic, "kafka", "topics", c->kafka_topics,
                       "a command topic and the dead-letter topic");
  if (*c->changes_topic) {
    check_distinct_topic(L, "changes", "topic", c->changes_topic, "kafka", "topics", c->kafka_topics,
                         "a command topic and the change topic");
    check_distinct_topic(L, "changes", "topic", c->changes_topic, "kafka", "dlq_topic", c->kafka_dlq_topic,
                         "the dead-letter topic and the change topic");
  }
}

/* ---- files that values name ---------------------------------------------- */

static void check_rdkafka_files(loader_t *L) {
  for (size_t i = 0; i < L->cfg->rdkafka_count; i++) {
    const config_kv_t *kv = &L->cfg->rdkafka[i];
    bool dir_ok;
    char why[300], name[300];
    if (!config_rdkafka_names_file(kv->name, kv->value, &dir_ok) || config_file_readable(kv->value, dir_ok, why, sizeof why))
      continue;
    snprintf(name, sizeof name, "kafka.rdkafka.%s%s", kv->name, L->rk[i].from_file ? "_file" : "");
    /* A path is not a secret, but a value read through _file is. */
    if (kv->from_file)
      fail(L, &L->rk[i], name, "the file named in %s cannot be read: %s", L->rk[i].path ? L->rk[i].path : "it", why);
    else
      fail(L, &L->rk[i], name, "cannot read %s: %s", kv->value, why);
  }
}

static void check_uri_files(loader_t *L) {
  const config_prop_t *p = config_prop_find("store", "uri");
  const origin_t *o = &L->props[p - config_props];
  mongoc_uri_t *uri = mongoc_uri_new_with_error(L->cfg->store_uri, NULL);
  if (!uri) return; /* its own error was reported when it was set */
  const bson_t *opts = mongoc_uri_get_options(uri);
  bson_iter_t it;
  if (opts && bson_iter_init(&it, opts)) {
    while (bson_iter_next(&it)) {
      const char *option = config_uri_option_names_file(bson_iter_key(&it));
      if (!option || !BSON_ITER_HOLDS_UTF8(&it)) continue;
      const char *path = bson_iter_utf8(&it, NULL);
      char why[300];
      if (!config_file_readable(path, false, why, sizeof why))
        fail(L, o, o->from_file ? "store.uri_file" : "store.uri", "%s: cannot read %s: %s", option, path, why);
    }
  }
  mongoc_uri_destroy(uri);
}

/* ---- secrets pasted back from `config show` ------------------------------ */

/* `config show` prints a secret as REDACT_MASK. A configuration made from
 * its output and edited carelessly would connect with the password "***"
 * and fail at the broker or the store, far from the mistake: a secret that
 * is exactly the mask is refused here instead. */
static void check_masked(loader_t *L) {
  const config_prop_t *p = config_prop_find("store", "uri");
  const origin_t *o = &L->props[p - config_props];
  mongoc_uri_t *uri = mongoc_uri_new_with_error(L->cfg->store_uri, NULL);
  if (uri) {
    const char *pw = mongoc_uri_get_password(uri);
    if (pw && !strcmp(pw, REDACT_MASK))
      fail(L, o, o->from_file ? "store.uri_file" : "store.uri",
           "the password is " REDACT_MASK ", which is how config show masks it: give the password itself");
    mongoc_uri_destroy(uri);
  }
  for (size_t i = 0; i < L->cfg->rdkafka_count; i++) {
    const config_kv_t *kv = &L->cfg->rdkafka[i];
    if (!redact_rdkafka_property_is_secret(kv->name) || strcmp(kv->value, REDACT_MASK)) continue;
    char name[300];
    snprintf(name, sizeof name, "kafka.rdkafka.%s%s", kv->name, L->rk[i].from_file ? "_file" : "");
    fail(L, &L->rk[i], name, "the value is " REDACT_MASK ", which is how config show masks a secret: give the "
                             "secret itself");
  }
}

/* ---- settings that cannot work together ---------------------------------- */

static const config_kv_t *rdkafka_find(const loader_t *L, const char *name, size_t *index) {
  for (size_t i = 0; i < L->cfg->rdkafka_count; i++)
    if (!strcmp(L->cfg->rdkafka[i].name, name)) {
      if (index) *index = i;
      return &L->cfg->rdkafka[i];
    }
  return NULL;
}

static bool rdkafka_given(const loader_t *L, const char *name) {
  const config_kv_t *kv = rdkafka_find(L, name, NULL);
  return kv && *kv->value;
}

/* With the next-generation group protocol the broker owns the group's
 * timing and its assignor: librdkafka refuses a consumer given any of these
 * (only when the worker starts), so they are refused here, with FILE:LINE
 * and where the setting lives instead. */
static void check_group_protocol(loader_t *L) {
  static const struct {
    const char *name, *instead;
  } classic_only[] = {
      {"session.timeout.ms", "the broker's group.consumer.session.timeout.ms, or the group's "
                             "consumer.session.timeout.ms (docs/OPERATIONS.md, Kafka down)"},
      {"heartbeat.interval.ms", "the broker's group.consumer.heartbeat.interval.ms"},
      {"partition.assignment.strategy", "the broker's assignor; or kafka.group_protocol = classic"},
      {"group.protocol.type", "kafka.group_protocol = classic"},
  };
  if (L->cfg->kafka_group_protocol != CONFIG_GROUP_PROTOCOL_CONSUMER) return;
  for (size_t k = 0; k < sizeof classic_only / sizeof classic_only[0]; k++) {
    size_t i = 0;
    if (!rdkafka_find(L, classic_only[k].name, &i)) continue;
    char name[300];
    snprintf(name, sizeof name, "kafka.rdkafka.%s%s", classic_only[k].name, L->rk[i].from_file ? "_file" : "");
    fail(L, &L->rk[i], name, "not a client setting with kafka.group_protocol = consumer: it is %s",
         classic_only[k].instead);
  }
}

/* A SASL mechanism that takes a user name and password fails every
 * connection without them (librdkafka accepts the configuration and then
 * retries for ever); SSL settings with a plaintext protocol are ignored
 * (a warning: the operator probably meant SSL). */
static void check_security(loader_t *L) {
  size_t pi = 0;
  const config_kv_t *proto = rdkafka_find(L, "security.protocol", &pi);
  const char *pv = proto ? proto->value : "plaintext";
  bool sasl = !strcasecmp(pv, "sasl_plaintext") || !strcasecmp(pv, "sasl_ssl");
  bool ssl = !strcasecmp(pv, "ssl") || !strcasecmp(pv, "sasl_ssl");
  if (sasl) {
    const config_kv_t *mech = rdkafka_find(L, "sasl.mechanisms", NULL);
    if (!mech) mech = rdkafka_find(L, "sasl.mechanism", NULL);
    const char *mv = mech ? mech->value : "GSSAPI";
    bool user_pass = !strcasecmp(mv, "PLAIN") || !strcasecmp(mv, "SCRAM-SHA-256") || !strcasecmp(mv, "SCRAM-SHA-512");
    if (user_pass && (!rdkafka_given(L, "sasl.username") || !rdkafka_given(L, "sasl.password"))) {
      const char *missing = !rdkafka_given(L, "sasl.username")
                                ? (!rdkafka_given(L, "sasl.password")
                                       ? "kafka.rdkafka.sasl.username and kafka.rdkafka.sasl.password[_file]"
                                       : "kafka.rdkafka.sasl.username")
                                : "kafka.rdkafka.sasl.password[_file]";
      fail(L, &L->rk[pi], "kafka.rdkafka.security.protocol", "%s with sasl.mechanism %s needs %s", pv, mv, missing);
    }
  }
  if (!ssl) {
    for (size_t i = 0; i < L->cfg->rdkafka_count; i++) {
      if (strncmp(L->cfg->rdkafka[i].name, "ssl.", 4)) continue;
      char line[600];
      model_buf_t b = MODEL_BUF_INIT;
      origin_prefix(L, &L->rk[i], &b);
      snprintf(line, sizeof line, "%s: kafka.rdkafka.%s: ignored: security.protocol is %s (%sSSL or SASL_SSL uses it)",
               b.data, L->cfg->rdkafka[i].name, proto ? pv : "PLAINTEXT", proto ? "" : "the default; ");
      model_buf_destroy(&b);
      config_t *cfg = L->cfg;
      cfg->warnings = oom_realloc(cfg->warnings, (cfg->warnings_count + 1) * sizeof *cfg->warnings);
      cfg->warnings[cfg->warnings_count++] = oom_strdup(line);
    }
  }
}

/* librdkafka validates its own properties (name, type, range, enum) in
 * rd_kafka_conf_set; run them all through it now so that a typo is a
 * configuration error with FILE:LINE rather than a failure at startup. */
static void check_rdkafka(loader_t *L) {
  if (!L->cfg->rdkafka_count) return;
  rd_kafka_conf_t *conf = rd_kafka_conf_new();
  for (size_t i = 0; i < L->cfg->rdkafka_count; i++) {
    const config_kv_t *kv = &L->cfg->rdkafka[i];
    char errstr[512] = "";
    if (rd_kafka_conf_set(conf, kv->name, kv->value, errstr, sizeof errstr) == RD_KAFKA_CONF_OK) continue;
    char name[300];
    snprintf(name, sizeof name, "kafka.rdkafka.%s%s", kv->name, L->rk[i].from_file ? "_file" : "");
    fail(L, &L->rk[i], name, "librdkafka: %s", errstr);
  }
  rd_kafka_conf_destroy(conf);
}

/* ---- load ---------------------------------------------------------------- */

const char *config_error_at(const config_error_t *err, size_t i) {
  if (i >= err->count || i >= CONFIG_ERRORS_MAX) return NULL;
  return i ? err->rest[i - 1] : err->message;
}

/* Keeps where the winning value came from, for `config show --origin`. */
static void export_origin(config_origin_t *dst, const origin_t *o) {
  free(dst->value_file);
  dst->kind = o->kind == ORIGIN_FILE  ? CONFIG_ORIGIN_FILE
              : o->kind == ORIGIN_ENV ? CONFIG_ORIGIN_ENV
              : o->kind == ORIGIN_SET ? CONFIG_ORIGIN_SET
                                      : CONFIG_ORIGIN_DEFAULT;
  dst->line = o->line;
  snprintf(dst->env, sizeof dst->env, "%s", o->env);
  dst->value_file = o->path ? oom_strdup(o->path) : NULL;
}

bool config_load(config_t *cfg, const char *path, char *const *sets, size_t nsets, config_error_t *err) {
  config_error_t dummy;
  loader_t L = {.cfg = cfg, .file = path, .err = err ? err : &dummy};
  L.err->message[0] = '\0';
  L.props = oom_calloc(config_props_count, sizeof *L.props);
  L.rk = oom_calloc(cfg->rdkafka_count + 1, sizeof *L.rk);
  cfg->from_file = 0;
  warnings_free(cfg);
  if (path) {
    free(cfg->source_file);
    cfg->source_file = oom_strdup(path);
  }
  L.err->count = 0;
  /* Every stage runs whatever the earlier ones found, so that one run names
   * every error. */
  if (path) load_file(&L, path);
  load_env(&L);
  load_sets(&L, sets, nsets);
  resolve_files(&L);
  check_cross(&L);
  check_rdkafka(&L);
  check_rdkafka_files(&L);
  check_uri_files(&L);
  check_masked(&L);
  check_security(&L);
  check_group_protocol(&L);
  bool ok = L.errors == 0;
  if (ok) {
    for (size_t i = 0; i < config_props_count; i++) export_origin(&cfg->origins[i], &L.props[i]);
    for (size_t i = 0; i < cfg->rdkafka_count; i++) export_origin(&cfg->rdkafka[i].origin, &L.rk[i]);
  }
  for (size_t i = 0; i < config_props_count; i++) free(L.props[i].path);
  for (size_t i = 0; i < cfg->rdkafka_count; i++) free(L.rk[i].path);
  free(L.props);
  free(L.rk);
  return ok;
}

/* ---- SIGHUP -------------------------------------------------------------- */

static void append_key(char *buf, size_t size, const char *name) {
  if (!buf || !size) return;
  size_t len = strlen(buf);
  snprintf(buf + len, size - len, "%s%s", len ? "," : "", name);
}

static const char *rdkafka_get(const config_t *cfg, const char *name) {
  for (size_t i = 0; i < cfg->rdkafka_count; i++)
    if (!strcmp(cfg->rdkafka[i].name, name)) return cfg->rdkafka[i].value;
  return NULL;
}

bool config_apply_live(config_t *cur, const config_t *next, char *restart_keys, size_t restart_keys_size) {
  if (restart_keys && restart_keys_size) restart_keys[0] = '\0';
  bool all_live = true;
  char name[300];
  for (size_t i = 0; i < config_props_count; i++) {
    const config_prop_t *p = &config_props[i];
    if (config_prop_equal(p, cur, next)) continue;
    if (p->flags & CONFIG_LIVE) {
      config_prop_copy(p, cur, next);
      free(cur->origins[i].value_file);
      cur->origins[i] = next->origins[i];
      cur->origins[i].value_file = next->origins[i].value_file ? oom_strdup(next->origins[i].value_file) : NULL;
      uint32_t bit = UINT32_C(1) << i;
      cur->from_file = (cur->from_file & ~bit) | (next->from_file & bit);
    } else {
      snprintf(name, sizeof name, "%s.%s", p->section, p->key);
      append_key(restart_keys, restart_keys_size, name);
      all_live = false;
    }
  }
  /* rdkafka.*: changed, added or removed properties all need a restart. */
  for (int pass = 0; pass < 2; pass++) {
    const config_t *a = pass ? next : cur, *b = pass ? cur : next;
    for (size_t i = 0; i < a->rdkafka_count; i++) {
      const char *other = rdkafka_get(b, a->rdkafka[i].name);
      if (other && (pass || !strcmp(other, a->rdkafka[i].value))) continue;
      snprintf(name, sizeof name, "kafka.rdkafka.%s", a->rdkafka[i].name);
      append_key(restart_keys, restart_keys_size, name);
      all_live = false;
    }
  }
  return all_live;
}
