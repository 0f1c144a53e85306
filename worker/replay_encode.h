/* The documents of --output as JSON lines (model_codec_to_json, rev 1,
 * updatedAt = one time for the whole output), encoded on several threads
 * and written in order.
 *
 * The list is cut into rounds of REPLAY_ENCODE_ROUND aggregates per thread;
 * in a round each thread encodes a contiguous part into a buffer of its
 * own, then the calling thread writes the parts in order: the bytes are
 * those of one thread encoding the list front to back, and memory holds
 * one round of documents.
 *
 * Threads: each round starts nthreads - 1 threads and joins them; the
 * calling thread encodes the first part. The aggregates are only read
 * (borrowed) while a round runs; each buffer is its thread's until the join
 * hands it back. */
#ifndef REPLAY_ENCODE_H
#define REPLAY_ENCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"

enum { REPLAY_ENCODE_ROUND = 1024 };

/* Encodes aggs[0..n) and hands the bytes in order to write(ctx, data, len)
 * (on the calling thread), which returns false to stop. nthreads 1 encodes
 * on the calling thread alone; where a thread cannot start, its part is
 * encoded on the calling thread. False when write returned false. */
bool replay_encode(model_aggregate_t *const *aggs, size_t n, int64_t now_ms, size_t nthreads,
                   bool (*write)(void *ctx, const char *data, size_t len), void *ctx);

#endif
