/* Decode and merge of a replay without a store on several threads
 * (replay.threads), with the output of one thread byte for byte.
 *
 *   the feeding thread (the replay's) reads the file in blocks of whole
 *   lines straight into chunks, or copies the topics' messages from
 *   librdkafka into chunks (replay_chunk.h), and hands each on -> any
 *   worker decodes a chunk (a block cut into its lines first) and routes
 *   its commands by aggregate key to the shards -> each shard's
 *   worker merges its commands of every chunk, chunk after chunk, into its
 *   own table (replay_merge.h) -> the feeding thread retires chunks in
 *   stream order, counting their messages (so that a block's lines get
 *   their numbers) and emitting their rejects -> at the end each thread
 *   sorts its shard's aggregates by key, then joins one range of keys of
 *   every shard's (cut at pivots taken from the largest), and the ranges
 *   follow each other in key order.
 *
 * Why the output is the single thread's: a key's commands all go to one
 * shard, which merges them in stream order (chunks in order, and in each
 * chunk its messages in order), so every aggregate sees the same sequence
 * of commands, and so the same applied, stale and document_too_large
 * results; rejects carry their stream position and are emitted chunk by
 * chunk in position order; the documents are sorted by key at the end.
 *
 * N threads in all, one per shard: N - 1 workers and the feeding thread
 * itself. Each merges its shard and, while its shard waits for an earlier
 * chunk to be decoded, decodes the next chunk not taken, so that decoding
 * (the larger cost) runs on every thread. At most REPLAY_SHARDS_WINDOW
 * chunks per thread are in flight, each bounded (replay_chunk.h), which
 * bounds memory whatever the stream; the feeding thread works the last
 * shard while the window is full, and when it has nothing to do it sleeps
 * until half of the window is merged, then reads again (reading is a
 * small part of the work): one wake-up for several chunks, and N threads
 * keep N cores busy and no more.
 *
 * Threads and hand-over: every chunk slot, its flags and the counters are
 * guarded by one mutex; a chunk's data is written outside it by the one
 * thread whose step it is (replay_chunk.h) and handed on by the flag set
 * under it. Worker t alone touches shard t's table until the workers are
 * joined (replay_shards_finish, replay_shards_stop), when it passes to the
 * feeding thread; the last shard's is the feeding thread's throughout. At
 * the end, a thread's sorted list is handed on by the count of sorted
 * shards, raised under the mutex; the feeding thread then sets the pivots
 * and the join flag under it, and every thread only reads every sorted
 * list while it joins its range into a list of its own, handed back by the
 * count of ranges joined. Every function here is the feeding thread's.
 *
 * replay_shards_merger is the shards as a merger (replay_merger.h): the
 * replay's thread is the feeding thread, a file comes in blocks, and the
 * rejects come in stream order. */
#ifndef REPLAY_SHARDS_H
#define REPLAY_SHARDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "command.h"
#include "replay_merge.h"
#include "replay_merger.h"

enum { REPLAY_SHARDS_WINDOW = 4 };

typedef struct replay_shards replay_shards_t;

/* A rejected message, with its position in the stream (from 1), in stream
 * order, on the feeding thread; false stops the replay. */
typedef bool (*replay_shards_reject_fn)(void *ctx, uint64_t index, const model_reject_t *rej);

/* Starts nthreads - 1 workers (nthreads 2 or more: the feeding thread is
 * the last); max_bytes is limits.max_command_bytes.
 * NULL, with a message on stderr, when a thread cannot start. */
replay_shards_t *replay_shards_new(size_t nthreads, size_t max_bytes, replay_shards_reject_fn reject, void *ctx);

/* Hands the next message over (copied). When the window is full, works the
 * last shard until a slot is free, and emits the rejects of the chunks
 * finished. False once a reject callback returned false. */
bool replay_shards_add(replay_shards_t *s, const char *data, size_t len);

/* Instead of messages one by one: the buffer of the next chunk, for a
 * block of whole lines (replay_lines_read), waiting for a free slot as
 * replay_shards_add does; NULL once a reject callback returned false.
 * replay_shards_block_done hands the block over (its lines are cut by the
 * worker that decodes it), or, with long_len > 0, the block left empty
 * stands for one line of that many bytes, past max_bytes, which the chunk
 * keeps by its length only as replay_shards_add does; it sets *lines to
 * replay_shards_messages. A block left empty otherwise is never handed
 * over. */
model_buf_t *replay_shards_block(replay_shards_t *s);
bool replay_shards_block_done(replay_shards_t *s, size_t long_len, uint64_t *lines);

/* The messages of the chunks retired (every chunk's, after
 * replay_shards_finish). */
uint64_t replay_shards_messages(const replay_shards_t *s);

/* After the last message: waits for every chunk, emits the remaining
 * rejects, joins the workers and gathers every aggregate into *out, sorted
 * by key. False once a reject callback returned false. */
bool replay_shards_finish(replay_shards_t *s, replay_rebuilt_t *out);

/* For a replay whose source stops early (a read error, a stop signal):
 * hands over what is added, waits for every chunk handed over and emits
 * their rejects, as one thread would have by then; the workers stay, for
 * replay_shards_stop. False once a reject callback returned false. */
bool replay_shards_drain(replay_shards_t *s);

/* Stops the workers if they still run (what is in flight is dropped: a
 * replay that stops early) and joins them; then nothing merges any more.
 * Idempotent, and NULL is safe; replay_shards_finish does it once every
 * chunk is merged. */
void replay_shards_stop(replay_shards_t *s);

/* Commands merged that changed a slot, and that changed nothing; after
 * replay_shards_stop or replay_shards_finish. */
void replay_shards_counts(const replay_shards_t *s, uint64_t *applied, uint64_t *stale);

/* Stops the workers (replay_shards_stop) and frees everything; NULL is safe. */
void replay_shards_destroy(replay_shards_t *s);

/* The shards as a merger, over replay_shards_new's arguments; false, with a
 * message, when a thread cannot start. Its counts' `read` is the lines of
 * the blocks retired when the source gave blocks. */
bool replay_shards_merger(replay_merger_t *m, size_t nthreads, size_t max_bytes, replay_reject_fn reject, void *ctx);

#endif
