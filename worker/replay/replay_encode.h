/* The documents of --output as JSON lines (model_codec_to_json, rev 1,
 * updatedAt = one time for the whole output), encoded on several threads
 * and written in order.
 *
 * The list is cut into pieces of REPLAY_ENCODE_PIECE aggregates, which the
 * threads take in list order, each the next piece not taken, and encode
 * into the piece's buffer; the calling thread writes the pieces in list
 * order as they are done, and encodes pieces too while the next one to
 * write is not done. So the bytes are those of one thread encoding the
 * list front to back, every thread is busy to the end whatever each
 * piece costs, and at most REPLAY_ENCODE_WINDOW pieces per thread are
 * encoded and not yet written, which bounds memory and keeps them in cache.
 *
 * Threads: one call starts nthreads - 1 threads and joins them before it
 * returns. The aggregates are only read (borrowed), or, when the caller
 * hands them over (consume), destroyed by the thread that encoded them, as
 * soon as it did: the frees run side by side too, on memory still in cache. A piece's slot, its
 * flag and the counters are guarded by one mutex; a slot's buffer is
 * written outside it by the thread that took the piece and handed to the
 * calling thread by the flag set under it; once written, the slot is free
 * for the piece a window later. */
#ifndef REPLAY_ENCODE_H
#define REPLAY_ENCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"

enum { REPLAY_ENCODE_PIECE = 128, REPLAY_ENCODE_WINDOW = 4 };

/* Encodes aggs[0..n) and hands the bytes in order to write(ctx, data, len)
 * (on the calling thread), which returns false to stop. nthreads 1 encodes
 * on the calling thread alone, and so does a call whose threads cannot
 * start. With consume, every aggregate is destroyed by the time it
 * returns, whatever write said (the array stays the caller's). False when
 * write returned false. */
bool replay_encode(model_aggregate_t *const *aggs, size_t n, int64_t now_ms, size_t nthreads, bool consume,
                   bool (*write)(void *ctx, const char *data, size_t len), void *ctx);

#endif
