/* The merge of a replay into the configured store, as a merger
 * (replay_merger.h): the same batch (batch.h), writer thread and
 * conditional writer as `run` (flusher.h), flushed by the configured
 * limits as commands come. The source is held back while the batch's
 * memory is over batch.max_pending_bytes, and a store outage is waited out
 * (with backoff) unless the replay is interrupted: a replay has no one to
 * hand its work to.
 *
 * Rejects: a command is rejected when it is decoded, in stream order, or
 * late, when its aggregate's stored document is loaded and the command does
 * not fit it (batch.h): the merger's rejects are not in order. To reject
 * late, the batch holds each command's line (or message) number and bytes
 * until its aggregate is loaded.
 *
 * Threads: the batch and the merger are the replay's thread's; the writer
 * thread owns the store's connection (the sink) until the merger's counts
 * or destroy stop it. */
#ifndef REPLAY_STORE_H
#define REPLAY_STORE_H

#include <stdbool.h>

#include "base/clock.h"
#include "config/config.h"
#include "replay_merger.h"
#include "store/sink.h"

/* The batch over sink (the writer thread's until the merger is destroyed),
 * with cfg's batch limits, retry backoff and limits.max_command_bytes,
 * timed on clock (borrowed; read by the writer thread too, so safe to read
 * from two: clock.h); rejects to reject(ctx, ...). False when the writer
 * cannot start. */
bool replay_store_merger(replay_merger_t *m, const config_t *cfg, const sink_t *sink, const clock_source_t *clock,
                         replay_reject_fn reject, void *ctx);

#endif
