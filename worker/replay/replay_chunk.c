/* A chunk of a threaded replay: see replay_chunk.h. */
#include "replay_chunk.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "oom.h"
#include "replay_lines.h"

/* Room for n messages in the per-message arrays (doubling). */
static void room(replay_chunk_t *c, size_t n) {
  if (n <= c->cap) return;
  size_t cap = c->cap ? c->cap : REPLAY_CHUNK_MSGS;
  while (cap < n) cap *= 2;
  c->off = oom_realloc(c->off, cap * sizeof *c->off);
  c->len = oom_realloc(c->len, cap * sizeof *c->len);
  c->at = oom_realloc(c->at, cap * sizeof *c->at);
  c->hash = oom_realloc(c->hash, cap * sizeof *c->hash);
  c->route = oom_realloc(c->route, cap * sizeof *c->route);
  c->order = oom_realloc(c->order, cap * sizeof *c->order);
  c->cap = cap;
}

void replay_chunk_init(replay_chunk_t *c, size_t nshards) {
  memset(c, 0, sizeof *c);
  room(c, REPLAY_CHUNK_MSGS);
  c->bytes = (model_buf_t)MODEL_BUF_INIT;
  c->packed = (model_buf_t)MODEL_BUF_INIT;
  c->shard_start = oom_calloc(nshards + 1, sizeof *c->shard_start);
  c->merge_rejects = oom_calloc(nshards, sizeof *c->merge_rejects);
  c->nshards = nshards;
}

void replay_chunk_free(replay_chunk_t *c) {
  model_buf_destroy(&c->bytes);
  model_buf_destroy(&c->packed);
  free(c->off);
  free(c->len);
  free(c->at);
  free(c->hash);
  free(c->route);
  free(c->order);
  free(c->shard_start);
  free(c->decode_rejects.v);
  for (size_t s = 0; s < c->nshards; s++) free(c->merge_rejects[s].v);
  free(c->merge_rejects);
}

void replay_chunk_reset(replay_chunk_t *c, bool block) {
  c->block = block;
  c->n = 0;
  model_buf_clear(&c->bytes);
  model_buf_clear(&c->packed);
  c->decode_rejects.n = 0;
  for (size_t s = 0; s < c->nshards; s++) c->merge_rejects[s].n = 0;
}

void replay_chunk_add(replay_chunk_t *c, const char *data, size_t len, size_t max_bytes) {
  room(c, c->n + 1);
  c->off[c->n] = c->bytes.len;
  c->len[c->n++] = len;
  if (len && len <= max_bytes) model_buf_append(&c->bytes, data, len);
}

static replay_chunk_reject_t *push(replay_chunk_rejects_t *l) {
  if (l->n == l->cap) {
    l->cap = l->cap ? 2 * l->cap : 8;
    l->v = oom_realloc(l->v, l->cap * sizeof *l->v);
  }
  return &l->v[l->n++];
}

/* --- packed commands --------------------------------------------------------------- */

#define CMD_FIELD(f) (((model_command_t *)0)->f)
#define CMD_END(f) (offsetof(model_command_t, f) + sizeof CMD_FIELD(f))
/* The variable-length strings end their structs (padding aside), so that a
 * command's used bytes are a prefix of it. */
_Static_assert(CMD_END(data.assignment.title) + 8 > offsetof(model_command_t, data) + sizeof CMD_FIELD(data.assignment),
               "the title ends the assignment's data");
_Static_assert(CMD_END(data.grade.feedback) + 8 > offsetof(model_command_t, data) + sizeof CMD_FIELD(data.grade),
               "the feedback ends the grade's data");
_Static_assert(sizeof CMD_FIELD(data.submission) < sizeof CMD_FIELD(data.grade), "a submission's data is short");

/* The bytes of cmd its type uses: every field before the type's data, the
 * data up to the end of its string (with its NUL); the other types' data is
 * at most a submission's. */
static size_t packed_size(const model_command_t *cmd) {
  switch (cmd->type) {
  case MODEL_CMD_ASSIGNMENT_UPSERTED:
    return offsetof(model_command_t, data.assignment.title) + cmd->data.assignment.title_len + 1;
  case MODEL_CMD_GRADE_UPDATED:
    return offsetof(model_command_t, data.grade.feedback) + cmd->data.grade.feedback_len + 1;
  default:
    return offsetof(model_command_t, data) + sizeof cmd->data.submission;
  }
}

/* Where the next command is decoded: the next 8-aligned offset of
 * c->packed, with a whole model_command_t of room after it. The room stays
 * (packed only grows until the chunk is reset), so that every command
 * packed there can be read as a model_command_t in place: the bytes past
 * its packed_size are the next commands' or unused, which its type never
 * reads. */
static size_t pack_at(replay_chunk_t *c) {
  size_t at = (c->packed.len + 7) & ~(size_t)7;
  model_buf_reserve(&c->packed, at - c->packed.len + sizeof(model_command_t));
  return at;
}

static model_command_t *packed_cmd(const replay_chunk_t *c, size_t at) {
  return (model_command_t *)(void *)(c->packed.data + at);
}

/* --- decode and merge ----------------------------------------------------------------- */

/* The shard of a key's hash: its high bits, so that the low bits, which
 * pick a slot in the shard's table (aggset.h), stay spread within a shard. */
static size_t shard_of(uint32_t hash, size_t nshards) { return (size_t)(((uint64_t)hash * nshards) >> 32); }

/* Cuts a block into its lines: the messages. */
static void cut_lines(replay_chunk_t *c) {
  const char *line;
  size_t at = 0, len;
  while (replay_lines_next(c->bytes.data, c->bytes.len, &at, &line, &len)) {
    room(c, c->n + 1);
    c->off[c->n] = (size_t)(line - c->bytes.data);
    c->len[c->n++] = len;
  }
}

void replay_chunk_decode(replay_chunk_t *c, size_t max_bytes) {
  if (c->block) cut_lines(c);
  uint16_t *shard = c->route;
  size_t *start = c->shard_start;
  memset(start, 0, (c->nshards + 1) * sizeof *start);
  for (size_t i = 0; i < c->n; i++) {
    const char *data = c->bytes.data ? c->bytes.data + c->off[i] : "";
    model_reject_t rej;
    size_t at = pack_at(c);
    model_command_t *cmd = packed_cmd(c, at);
    if (!model_command_decode(data, c->len[i], max_bytes, cmd, &rej)) {
      replay_chunk_reject_t *r = push(&c->decode_rejects);
      r->index = i;
      r->rej = rej;
      shard[i] = UINT16_MAX;
      continue;
    }
    c->hash[i] = replay_merge_hash(cmd);
    c->at[i] = (uint32_t)at;
    c->packed.len = at + packed_size(cmd);
    shard[i] = (uint16_t)shard_of(c->hash[i], c->nshards);
    start[shard[i] + 1]++;
  }
  for (size_t s = 0; s < c->nshards; s++) start[s + 1] += start[s];
  size_t at[c->nshards];
  memcpy(at, start, c->nshards * sizeof *at);
  for (size_t i = 0; i < c->n; i++)
    if (shard[i] != UINT16_MAX) c->order[at[shard[i]]++] = (uint32_t)i;
}

void replay_chunk_merge(replay_chunk_t *c, size_t s, replay_merge_t *m) {
  for (size_t j = c->shard_start[s]; j < c->shard_start[s + 1]; j++) {
    size_t i = c->order[j];
    model_reject_t rej;
    if (replay_merge_apply(m, packed_cmd(c, c->at[i]), c->hash[i], &rej)) continue;
    replay_chunk_reject_t *r = push(&c->merge_rejects[s]);
    r->index = i;
    r->rej = rej;
  }
}

static int by_index(const void *a, const void *b, void *ctx) {
  (void)ctx;
  size_t x = ((const replay_chunk_reject_t *)a)->index, y = ((const replay_chunk_reject_t *)b)->index;
  return (x > y) - (x < y);
}

bool replay_chunk_rejects(replay_chunk_t *c, bool (*fn)(void *ctx, uint64_t index, const model_reject_t *rej),
                          void *ctx) {
  /* A merge of the lists in message order: the shards' and, last, the decode's. */
  model_keys_run_t runs[c->nshards + 1];
  for (size_t s = 0; s <= c->nshards; s++) {
    const replay_chunk_rejects_t *l = s < c->nshards ? &c->merge_rejects[s] : &c->decode_rejects;
    runs[s] = (model_keys_run_t){l->v, l->n, 0};
  }
  for (const replay_chunk_reject_t *next;
       (next = model_keys_merge_next(runs, c->nshards + 1, sizeof *next, by_index, NULL, NULL));)
    if (!fn(ctx, c->first + next->index, &next->rej)) return false;
  return true;
}
