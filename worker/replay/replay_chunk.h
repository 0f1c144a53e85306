/* A chunk of a threaded replay (replay_shards.h): consecutive messages,
 * either a block of whole lines of --input read straight into it
 * (replay_lines.h), or up to REPLAY_CHUNK_MSGS messages of the topics
 * copied back to back; then their decoded commands, each routed to the
 * shard that owns its aggregate, and the rejects of the chunk's messages.
 *
 * Its life, each step on one thread, handed over under the shards' lock:
 *   fill (the feeding thread: replay_chunk_add, or a block read into
 *   bytes) -> decode (any of the shards' threads: replay_chunk_decode,
 *   which first cuts a block into its lines) -> merge (every shard's
 *   thread, each its own messages: replay_chunk_merge) -> retire (the
 *   feeding thread: the chunk's place in the stream, `first`, then the
 *   rejects in message order, replay_chunk_rejects; then replay_chunk_reset
 *   for the next fill).
 * Fill writes the messages, decode their cuts, the commands, the routing
 * and the decode rejects; merge writes only its shard's list of rejects;
 * retire writes `first`. So no two threads ever write the same field, and
 * each reads only what an earlier step wrote. A reject holds the message's
 * index in its chunk: a block's place in the stream is known only once the
 * chunks before it are cut into lines, which retirement, in stream order,
 * sees. */
#ifndef REPLAY_CHUNK_H
#define REPLAY_CHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "command.h"
#include "replay_merge.h"

/* A chunk of added messages is handed on at this many messages or this
 * many bytes, whichever comes first (a message past max_bytes keeps none
 * of its bytes): large enough that the lock is taken a few times per
 * hundreds of commands, small enough that a window of chunks per thread
 * stays within a few MiB. A block of lines is as long as replay_lines_read
 * makes it (REPLAY_LINES_BLOCK, and at most max_bytes more for a line
 * that ends past it) and holds as many lines as it does: the arrays below
 * grow to them. */
enum { REPLAY_CHUNK_MSGS = 256, REPLAY_CHUNK_BYTES = 1 << 20 };

typedef struct replay_chunk_reject {
  size_t index; /* the message's index in its chunk, from 0 */
  model_reject_t rej;
} replay_chunk_reject_t;

typedef struct replay_chunk_rejects {
  replay_chunk_reject_t *v;
  size_t n, cap;
} replay_chunk_rejects_t;

typedef struct replay_chunk {
  uint64_t first;                       /* the stream position of message 0, from 1 (set at retirement) */
  bool block;                           /* bytes is a block of whole lines, cut by decode */
  size_t n;                             /* messages */
  model_buf_t bytes;                    /* the messages back to back, or the block */
  size_t cap;                           /* room for messages in the arrays below */
  size_t *off;                          /* message i starts at bytes[off[i]] ... */
  size_t *len;                          /* ... and is len[i] bytes long (an added one keeps none past max_bytes) */
  /* The decoded commands, packed: each decoded in place at its end, which
   * then keeps of the model_command_t (about 4.5 KiB) only the bytes its
   * type uses, back to back (replay_chunk.c), so that the merging thread
   * reads a few hundred bytes per command, in order, where they lie. */
  model_buf_t packed;
  uint32_t *at;                         /* a valid command's offset in packed */
  uint32_t *hash;                       /* replay_merge_hash of each valid command */
  uint16_t *route;                      /* each message's shard, UINT16_MAX when rejected */
  uint32_t *order;                      /* the valid messages, grouped by shard, in order within each */
  size_t *shard_start;                  /* [nshards + 1]: shard s has order[shard_start[s], shard_start[s + 1]) */
  replay_chunk_rejects_t decode_rejects;  /* in message order */
  replay_chunk_rejects_t *merge_rejects;  /* [nshards]: document_too_large, each in message order */
  size_t nshards;
} replay_chunk_t;

void replay_chunk_init(replay_chunk_t *c, size_t nshards);
void replay_chunk_free(replay_chunk_t *c);
/* Empties c for messages added one by one, or (block) a block of whole
 * lines read into c->bytes. */
void replay_chunk_reset(replay_chunk_t *c, bool block);

/* True when c can take no more messages. */
static inline bool replay_chunk_full(const replay_chunk_t *c) {
  return c->n == REPLAY_CHUNK_MSGS || c->bytes.len >= REPLAY_CHUNK_BYTES;
}
/* True when c holds no message, and no block either. */
static inline bool replay_chunk_empty(const replay_chunk_t *c) { return c->n == 0 && c->bytes.len == 0; }
/* Copies a message into c (not full). A message longer than max_bytes
 * (limits.max_command_bytes) keeps its length and none of its bytes: the
 * decoder rejects it as too_large on its length alone (command.h). */
void replay_chunk_add(replay_chunk_t *c, const char *data, size_t len, size_t max_bytes);

/* Decodes every message (max_bytes: limits.max_command_bytes) and routes
 * the valid ones: the shard of a command is a function of its aggregate's
 * key alone, so that each aggregate lives in one shard. */
void replay_chunk_decode(replay_chunk_t *c, size_t max_bytes);
/* Merges shard s's commands of c into m, in message order, each read
 * where it is packed. */
void replay_chunk_merge(replay_chunk_t *c, size_t s, replay_merge_t *m);

/* Calls fn for every rejected message of c in message order, with its
 * stream position (c->first + its index); stops at the first false, which
 * it returns. */
bool replay_chunk_rejects(replay_chunk_t *c, bool (*fn)(void *ctx, uint64_t index, const model_reject_t *rej),
                          void *ctx);

#endif
