/* --from / --until bounds: see replay_bound.h. */
#include "replay_bound.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oom.h"
#include "timestamp.h"

static bool fail(char *err, size_t err_size, const char *what, const char *part, size_t len) {
  snprintf(err, err_size, "%s '%.*s'", what, (int)(len > 200 ? 200 : len), part);
  return false;
}

/* A decimal number in [0, max] spelt by the len bytes at s, digits only. */
static bool number(const char *s, size_t len, int64_t max, int64_t *out) {
  if (!len || len > 19) return false;
  int64_t v = 0;
  for (size_t i = 0; i < len; i++) {
    if (s[i] < '0' || s[i] > '9') return false;
    if (v > (max - (s[i] - '0')) / 10) return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

static bool same_key(const replay_bound_offset_t *a, const replay_bound_offset_t *b) {
  if (a->partition != b->partition || !a->topic != !b->topic) return false;
  return !a->topic || !strcmp(a->topic, b->topic);
}

/* One "P=O" or "TOPIC:P=O" entry of len bytes at s. */
static bool parse_entry(const char *s, size_t len, replay_bound_t *b, char *err, size_t err_size) {
  const char *eq = memchr(s, '=', len);
  if (!eq) return fail(err, err_size, "offsets: an entry is P=O or TOPIC:P=O, not", s, len);
  const char *colon = NULL;
  for (const char *c = s; c < eq; c++)
    if (*c == ':') colon = c;
  const char *p = colon ? colon + 1 : s;
  int64_t part, off;
  if (colon == s) return fail(err, err_size, "offsets: an empty topic in", s, len);
  if (!number(p, (size_t)(eq - p), INT32_MAX, &part))
    return fail(err, err_size, "offsets: the partition is not a number in", s, len);
  if (!number(eq + 1, len - (size_t)(eq + 1 - s), INT64_MAX, &off))
    return fail(err, err_size, "offsets: the offset is not a number in", s, len);
  replay_bound_offset_t e = {NULL, (int32_t)part, off};
  if (colon) {
    e.topic = oom_malloc((size_t)(colon - s) + 1);
    memcpy(e.topic, s, (size_t)(colon - s));
    e.topic[colon - s] = '\0';
  }
  for (size_t i = 0; i < b->n; i++)
    if (same_key(&b->offsets[i], &e)) {
      free(e.topic);
      return fail(err, err_size, "offsets: a partition named twice:", s, len);
    }
  b->offsets = oom_realloc(b->offsets, (b->n + 1) * sizeof *b->offsets);
  b->offsets[b->n++] = e;
  return true;
}

bool replay_bound_parse(const char *s, const char *word, replay_bound_t *b, char *err, size_t err_size) {
  *b = (replay_bound_t){REPLAY_BOUND_EDGE, 0, NULL, NULL, 0};
  if (!s || !strcmp(s, word)) return true;
  if (!strncmp(s, "committed:", 10)) {
    if (!s[10]) return fail(err, err_size, "committed: needs a group name:", s, strlen(s));
    b->kind = REPLAY_BOUND_COMMITTED;
    b->group = oom_strdup(s + 10);
    return true;
  }
  if (!strncmp(s, "offsets:", 8)) {
    b->kind = REPLAY_BOUND_OFFSETS;
    const char *at = s + 8;
    if (!*at) return fail(err, err_size, "offsets: needs P=O entries:", s, strlen(s));
    for (;;) {
      const char *comma = strchr(at, ',');
      size_t len = comma ? (size_t)(comma - at) : strlen(at);
      if (!parse_entry(at, len, b, err, err_size)) return false;
      if (!comma) return true;
      at = comma + 1;
    }
  }
  b->kind = REPLAY_BOUND_TIME;
  if (model_timestamp_parse(s, strlen(s), &b->ms)) return true;
  snprintf(err, err_size, "'%.200s' is neither %s nor %s", s, word, REPLAY_BOUND_FORMS);
  return false;
}

void replay_bound_free(replay_bound_t *b) {
  if (!b) return;
  for (size_t i = 0; i < b->n; i++) free(b->offsets[i].topic);
  free(b->offsets);
  free(b->group);
  *b = (replay_bound_t){0};
}

const replay_bound_offset_t *replay_bound_offset_of(const replay_bound_t *b, const char *topic, int32_t p) {
  const replay_bound_offset_t *bare = NULL;
  for (size_t i = 0; i < b->n; i++) {
    const replay_bound_offset_t *e = &b->offsets[i];
    if (e->partition != p) continue;
    if (e->topic && !strcmp(e->topic, topic)) return e;
    if (!e->topic) bare = e;
  }
  return bare;
}

int64_t replay_bound_clamp(int64_t x, int64_t lo, int64_t hi) { return x < lo ? lo : x > hi ? hi : x; }
