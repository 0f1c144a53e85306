/* replay in file mode: decode each line, merge into in-memory aggregates,
 * write the final documents as JSON lines. See replay_file.h. */
#include "replay_file.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "aggregate.h"
#include "clock.h"
#include "buf.h"
#include "codec.h"
#include "command.h"
#include "hash.h"
#include "oom.h"

/* ---- aggregates by key: open addressing, linear probing ------------------ */

typedef struct agg_slot {
  uint64_t hash; /* 0 = empty */
  model_aggregate_t *agg;
} agg_slot_t;

typedef struct agg_map {
  agg_slot_t *slots;
  size_t cap, count; /* cap is a power of two */
} agg_map_t;

/* The hash (hash.h) of "tenant/assignment", never 0 (0 marks an empty slot). */
static uint64_t key_hash(const char *t, size_t tl, const char *a, size_t al) {
  uint64_t h = hash_fnv1a64(HASH_FNV1A64_INIT, t, tl);
  h = hash_fnv1a64(h, "/", 1);
  h = hash_fnv1a64(h, a, al);
  return h ? h : 1;
}

static void map_grow(agg_map_t *m) {
  size_t cap = m->cap ? m->cap * 2 : 1024;
  agg_slot_t *s = oom_calloc(cap, sizeof *s);
  for (size_t i = 0; i < m->cap; i++) {
    if (!m->slots[i].hash) continue;
    size_t j = m->slots[i].hash & (cap - 1);
    while (s[j].hash) j = (j + 1) & (cap - 1);
    s[j] = m->slots[i];
  }
  free(m->slots);
  m->slots = s;
  m->cap = cap;
}

/* The aggregate of the command's key, created empty if new. */
static model_aggregate_t *map_get(agg_map_t *m, const model_command_t *c) {
  if ((m->count + 1) * 2 > m->cap) map_grow(m);
  uint64_t h = key_hash(c->tenant, c->tenant_len, c->assignment, c->assignment_len);
  size_t j = h & (m->cap - 1);
  for (; m->slots[j].hash; j = (j + 1) & (m->cap - 1)) {
    if (m->slots[j].hash != h) continue;
    size_t tl, al;
    const char *t = model_aggregate_tenant(m->slots[j].agg, &tl);
    const char *a = model_aggregate_assignment(m->slots[j].agg, &al);
    if (tl == c->tenant_len && al == c->assignment_len && !memcmp(t, c->tenant, tl) && !memcmp(a, c->assignment, al))
      return m->slots[j].agg;
  }
  model_aggregate_t *agg = model_aggregate_new(c->tenant, c->tenant_len, c->assignment, c->assignment_len);
  m->slots[j].hash = h;
  m->slots[j].agg = agg;
  m->count++;
  return agg;
}

static void map_destroy(agg_map_t *m) {
  for (size_t i = 0; i < m->cap; i++) model_aggregate_destroy(m->slots[i].agg);
  free(m->slots);
}

static int cmp_key(const void *x, const void *y) {
  const model_aggregate_t *a = *(model_aggregate_t *const *)x, *b = *(model_aggregate_t *const *)y;
  return strcmp(model_aggregate_key(a, NULL), model_aggregate_key(b, NULL));
}

/* ---- files ---------------------------------------------------------------- */

static const char *file_name(const char *path) { return strcmp(path, "-") ? path : "(standard stream)"; }

static FILE *open_file(const char *path, const char *mode) {
  if (!strcmp(path, "-")) return mode[0] == 'r' ? stdin : stdout;
  FILE *f = fopen(path, mode);
  if (!f) fprintf(stderr, "aggregator: replay: cannot open '%s': %s\n", path, strerror(errno));
  return f;
}

/* Closes f (not the standard streams, which are only flushed); false with a
 * message if anything written to it was lost. */
static bool close_file(FILE *f, const char *path) {
  if (!f) return true;
  bool ok = !ferror(f);
  if (f == stdout || f == stdin) ok = (f == stdin || fflush(f) == 0) && ok;
  else ok = fclose(f) == 0 && ok;
  if (!ok) fprintf(stderr, "aggregator: replay: cannot write '%s': %s\n", file_name(path), strerror(errno));
  return ok;
}

/* Refuses an output that is the input (opening it would truncate it) or the
 * same regular file as the other output (devices such as /dev/null are
 * fine). A path that does not exist yet is the same as an equal path. */
static bool same_file(const char *a, const char *b) {
  if (!a || !b || !strcmp(a, "-") || !strcmp(b, "-")) return false; /* stdin vs stdout: checked apart */
  struct stat sa, sb;
  if (stat(a, &sa) || stat(b, &sb)) return !strcmp(a, b);
  return S_ISREG(sa.st_mode) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Writes out's contents to f and empties it. */
static bool drain(model_buf_t *out, FILE *f, const char *path) {
  if (out->len && fwrite(out->data, 1, out->len, f) != out->len) {
    fprintf(stderr, "aggregator: replay: cannot write '%s': %s\n", file_name(path), strerror(errno));
    return false;
  }
  model_buf_clear(out);
  return true;
}

/* ---- the replay ------------------------------------------------------------- */

static bool read_and_merge(FILE *in, const char *input, FILE *rej, const char *rejects, size_t max_bytes,
                           agg_map_t *map, replay_stats_t *st) {
  model_command_t *cmd = oom_malloc(sizeof *cmd);
  model_buf_t rbuf = MODEL_BUF_INIT;
  char *line = NULL;
  size_t line_cap = 0;
  bool ok = true;
  ssize_t n;
  while (ok && (n = getline(&line, &line_cap, in)) >= 0) {
    size_t len = (size_t)n;
    if (len && line[len - 1] == '\n') len--;
    st->read++;
    model_reject_t r;
    if (!model_command_decode(line, len, max_bytes, cmd, &r)) {
      st->rejected++;
      if (rej) {
        model_buf_printf(&rbuf, "{\"line\":%llu,\"code\":\"%s\",\"detail\":", (unsigned long long)st->read,
                         model_reject_code_name(r.code));
        model_buf_json_string(&rbuf, r.detail, strlen(r.detail));
        model_buf_append(&rbuf, "}\n", 2);
        if (rbuf.len >= 1 << 16) ok = drain(&rbuf, rej, rejects);
      }
      continue;
    }
    model_aggregate_t *agg = map_get(map, cmd);
    if (model_aggregate_apply(agg, cmd) == MODEL_APPLY_APPLIED) st->applied++;
    else st->stale++;
  }
  if (ok && ferror(in)) {
    fprintf(stderr, "aggregator: replay: cannot read '%s': %s\n", file_name(input), strerror(errno));
    ok = false;
  }
  if (ok && rej) ok = drain(&rbuf, rej, rejects);
  free(line);
  free(cmd);
  model_buf_destroy(&rbuf);
  return ok;
}

static bool write_all(agg_map_t *map, FILE *out, const char *output, replay_stats_t *st) {
  model_aggregate_t **list = oom_malloc((map->count + 1) * sizeof *list);
  size_t n = 0;
  for (size_t i = 0; i < map->cap; i++)
    if (map->slots[i].hash) list[n++] = map->slots[i].agg;
  qsort(list, n, sizeof *list, cmp_key);
  int64_t updated_at = clock_wall_ms();
  model_buf_t buf = MODEL_BUF_INIT;
  bool ok = true;
  for (size_t i = 0; i < n && ok; i++) {
    model_codec_to_json(list[i], 1, updated_at, &buf);
    st->aggregates++;
    if (buf.len >= 1 << 16) ok = drain(&buf, out, output);
  }
  if (ok) ok = drain(&buf, out, output);
  model_buf_destroy(&buf);
  free(list);
  return ok;
}

int replay_file_run(const config_t *cfg, const char *input, const char *output, const char *rejects,
                    replay_stats_t *stats) {
  double t0 = clock_mono_s();
  memset(stats, 0, sizeof *stats);
  if (rejects && !strcmp(output, "-") && !strcmp(rejects, "-")) {
    fputs("aggregator: replay: --output and --rejects cannot both be standard output\n", stderr);
    return 2;
  }
  if (same_file(input, output) || same_file(input, rejects) || same_file(output, rejects)) {
    fputs("aggregator: replay: --input, --output and --rejects must be different files\n", stderr);
    return 2;
  }
  FILE *in = open_file(input, "r"), *out = NULL, *rej = NULL;
  bool ok = in != NULL;
  if (ok) ok = (out = open_file(output, "w")) != NULL;
  if (ok && rejects) ok = (rej = open_file(rejects, "w")) != NULL;

  agg_map_t map = {NULL, 0, 0};
  if (ok) ok = read_and_merge(in, input, rej, rejects, (size_t)cfg->limits_max_command_bytes, &map, stats);
  if (ok) ok = write_all(&map, out, output, stats);
  map_destroy(&map);

  if (in && in != stdin) fclose(in);
  ok = close_file(rej, rejects) && ok;
  ok = close_file(out, output) && ok;
  stats->seconds = clock_mono_s() - t0;
  return ok ? 0 : 1;
}
