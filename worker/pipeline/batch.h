/* The denormalizer: merges commands into in-memory aggregates and hands the
 * changed ones to the write stage (writer.h) in flushes (docs/DOCUMENT.md and docs/GUARANTEES.md).
 * batch.c orchestrates the parts, each in its own file:
 *  - batch_entries.h: the state of each entry (clean, dirty, in flight;
 *    loaded or an overlay), its transitions and the invariants they keep;
 *  - batch_cache.h: the table of aggregates and the LRU of clean ones;
 *  - batch_writeset.h: the dirty list and what each entry changed since its
 *    last snapshot (partial writes);
 *  - batch_flushcap.h: how many aggregates a flush takes;
 *  - batch_latency.h: when commands entered, for their latencies;
 *  - batch_hold.h: the commands an unloaded aggregate received, held to be
 *    applied again to its stored document (the size limit, below);
 *  - batch_too_large.h: aggregates whose document the store refuses as too
 *    large although the merge holds them to its limit (the last line of
 *    defence).
 *
 * Aggregates live in one table keyed by "<tenant>/<assignment>". An entry is
 * either *loaded* (its aggregate includes the stored document and `rev` is the
 * stored revision, 0 if absent) or *unloaded* (an overlay holding only the
 * commands seen since it entered memory). Unloaded entries are loaded by the
 * writer as part of the next flush, all misses of a bulk in one sink load
 * (sink.h), the overlay merged into the stored document; so a cache miss
 * never stalls the thread that merges.
 *
 * A flush (batch_flush_begin) takes a snapshot of the dirty entries, oldest
 * change first and at most batch_flush_cap() of them (a copy of each
 * aggregate: one contiguous block), into a writer_job_t, and those entries
 * are then *in flight*. Commands keep being merged into the live entries
 * meanwhile; an entry changed after its snapshot is dirty again and goes with
 * the next flush. batch_flush_end takes the finished job back, each item
 * by the sink's result (sink.h) as the writer left it:
 *  - OK (written, or already held by the store): the entry's rev becomes the written rev; an entry the job
 *    loaded takes the stored document as its base and merges into it what
 *    arrived since the snapshot;
 *  - CONFLICT (another writer got there first): the entry becomes unloaded
 *    and dirty, so the next flush reloads it and merges it again;
 *  - TOO_LARGE, not sent (the job loaded the stored document, and the
 *    overlay merged into it would pass the store's limit): rebuilt (below),
 *    then dirty again and due at once (SINK_PARTIAL, as conflicts), or
 *    clean if none of what it held changes the stored document;
 *  - RETRY (no result: store down), REJECTED, or TOO_LARGE refused by the
 *    store (batch_too_large.h): dirty again, retried after backoff.
 * The flush's result is SINK_OK when every item of the job landed.
 *
 * The store's size limit: a command that would make its aggregate's stored
 * document pass sink_document_limit (sink.h) is rejected (document_too_large),
 * changes nothing and is dead-lettered by the caller; the aggregate keeps
 * every change that fits, and its document never needs to be refused.
 * A loaded entry checks each command when it is applied. An unloaded one
 * can only check it against its overlay, so it also holds each command
 * applied to it (batch_hold.h: its bytes and origin, given to batch_apply_from)
 * until the load lands. If the overlay, or what came while the load was in
 * flight, does not fit the stored document, the entry is *rebuilt*: the
 * stored document becomes its base, the held commands are decoded and
 * applied to it again in their order, each that does not fit is rejected
 * late through the caller's report callback (before batch_flush_end
 * returns, while its seq is not durable: the caller's commit cannot have
 * passed it), and the entry is written
 * whole (not at all if nothing that fits changes the stored document). Holds are released as soon as the entry is loaded. An entry that
 * was loaded and then lost a write race held nothing: until it is loaded
 * again it cannot be rebuilt, and an overlay of it that does not fit is
 * merged anyway, left to the store's refusal (batch_too_large.h); so is an
 * entry of a batch that holds nothing.
 *
 * What is durable, for offsets: every command gets a sequence number (seq)
 * when applied, stale ones too. An entry remembers the seq of its oldest
 * change not in the store (pend_seq while dirty, flight_seq while in
 * flight); the dirty list is kept sorted by it, so flushes take the oldest
 * changes first and batch_durable_seq() (every command below it is durable)
 * is the least of the list's back and the flight's: O(1). The consumer maps
 * seqs to Kafka offsets with checkpoints taken when flushes begin
 * (offsets.h). Two latencies are observed per command, from its Kafka
 * timestamp: durable when the write of its own aggregate lands (each entry
 * keeps its commands' arrival times with the changes and then with the
 * snapshot that carries them), committable when its seq falls below that
 * bound. With flushes of a few aggregates the second is later by the older
 * changes of other aggregates still being written.
 *
 * Announcing (change events, docs/CHANGES.md): with an announcer set,
 * batch_flush_end reports each item of the flush that the store now holds
 * and that is to be announced: every write that landed, and every
 * aggregate marked for announcement (batch_apply_from's announce) whose
 * write landed or whose load found the store holding everything already.
 * A report carries the document as stored, its rev and updatedAt, and the
 * slots the write changed (none for an announcement without a write:
 * batch_writeset.h says how they are known exactly). Reports come before
 * batch_flush_end returns, so before the flush's commands count as durable
 * (batch_durable_seq): a caller that holds its commits until the
 * announcements of a flush are acknowledged never commits past a write it
 * has not announced. A command marked `announce` (one read again after a
 * crash may have lost the announcement of a write it caused) makes its
 * aggregate due for one announcement per epoch (batch_next_epoch), at the
 * stored rev, whether or not it changes anything: a clean aggregate in
 * memory may be older than the store (another worker wrote it since), so
 * it becomes an overlay and the next flush loads it.
 *
 * The flush cap (batch_flushcap.h): a flush carries at most what the writer
 * lands in about batch.linger_ms, so that a slow store does not make each
 * flush as long as the last (a convoy); what a flush leaves is owed and goes
 * with the next one at once, oldest first.
 *
 * Dirty and in-flight entries are never evicted; clean loaded entries are
 * kept in an LRU of at most cache.max_aggregates holding at most
 * cache.max_bytes (measured as pending bytes are); whichever bound is passed
 * evicts the least recently used. Either at 0 keeps none: every command then
 * costs a read and a write, the naive baseline.
 *
 * Time: the caller reads the clocks (batch_now_t) and passes them in; the
 * batch reads none. Durations (linger) are on the monotonic clock, so that
 * a step of the wall clock moves no flush; latencies and updatedAt are wall
 * times.
 *
 * Threads: a batch_t is owned by one thread (the consumer's, or the replay's)
 * and is never touched by the writer; what crosses to the writer is the job,
 * whose hand-over writer.h describes. */
#ifndef BATCH_H
#define BATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate.h"
#include "batch_flushcap.h"
#include "batch_hold.h"
#include "base/clock.h"
#include "changes.h"
#include "store/sink.h"
#include "writer.h"

/* The time of a step, read once by the caller (the consumer reads it once
 * per burst of messages, so that clock reads stay off the per-message path):
 * mono_ms measures durations (linger), wall_ms dates what leaves the process
 * (latency against Kafka timestamps, a document's updatedAt). */
typedef struct batch_now {
  int64_t mono_ms;
  int64_t wall_ms;
} batch_now_t;

static inline batch_now_t batch_now(const clock_source_t *clock) {
  return (batch_now_t){clock_mono(clock), clock_wall(clock)};
}

typedef struct batch_limits {
  int64_t max_commands;      /* flush after this many commands */
  int64_t max_aggregates;    /* ... or this many dirty aggregates (also the bulk size) */
  int64_t linger_ms;         /* ... or when the oldest unflushed command is this old */
  int64_t max_pending_bytes; /* past this, the consumer stops fetching */
  int64_t cache_max_aggregates; /* clean aggregates kept at most ... */
  int64_t cache_max_bytes;      /* ... holding at most this memory */
} batch_limits_t;

/* The limits from a configuration's batch.* and cache.* keys. */
struct config;
batch_limits_t batch_limits_from_config(const struct config *cfg);

typedef struct batch_stats {
  uint64_t applied, stale;            /* commands, cumulative */
  uint64_t writes_ok, conflicts, write_errors, loads, flushes;
  uint64_t too_large;     /* commands rejected document_too_large, when applied or late */
  uint64_t bytes_written; /* BSON bytes of the documents written */
} batch_stats_t;

typedef struct batch batch_t;

/* Caller owns; batch_destroy(NULL) is safe (a job in flight must have been
 * taken back and ended, or the writer destroyed, first). */
batch_t *batch_new(const batch_limits_t *limits);
void batch_destroy(batch_t *b);
void batch_set_limits(batch_t *b, const batch_limits_t *limits);

/* Merges a validated command. event_ms is when the command entered the
 * system (its Kafka timestamp, a wall time), for the command-to-durable
 * latency. MODEL_APPLY_TOO_LARGE: the command would make its aggregate's
 * document pass the store's limit; it changed nothing, took no seq, and
 * *rej (may be NULL) says so (document_too_large): the caller rejects it as
 * it rejects a command that does not decode. */
model_apply_result_t batch_apply(batch_t *b, const model_command_t *cmd, int64_t event_ms, batch_now_t now,
                                 model_reject_t *rej);

/* The same, for a caller that holds commands (batch_set_holding): origin
 * (borrowed, for the call only; NULL = none) is what the batch copies when
 * the command goes into an unloaded aggregate, so that it can be decoded
 * and applied again, or rejected late, when the stored document arrives. A
 * command applied without one leaves its aggregate unable to rebuild: then
 * an overlay that does not fit its stored document is merged anyway, and
 * the store's refusal (batch_too_large.h) keeps it. */
model_apply_result_t batch_apply_from(batch_t *b, const model_command_t *cmd, const batch_origin_t *origin,
                                      bool announce, int64_t event_ms, batch_now_t now, model_reject_t *rej);

/* Makes the batch hold the commands of unloaded aggregates (batch_hold.h;
 * how is copied), or hold none with NULL: what it holds is released then
 * (those aggregates cannot rebuild any more). A late reject is reported
 * through how->reject from batch_flush_end, before it returns (so from
 * flusher_step and flusher_destroy too): the callback's ctx must outlive
 * the flusher, or holding be set to NULL first. */
void batch_set_holding(batch_t *b, const batch_holding_t *how);

/* What an announcement reports (see "Announcing" above); every pointer is
 * borrowed for the call. */
typedef struct batch_written {
  const model_aggregate_t *agg;   /* the document as stored */
  int64_t rev, updated_at_ms;     /* its stored rev and updatedAt */
  const model_changes_t *changed; /* normalized; empty when not sent */
  bool sent;                      /* false: announced without a write (the store held it) */
} batch_written_t;
typedef void (*batch_announce_cb)(void *ctx, const batch_written_t *w);

/* Makes the batch announce through fn (ctx must outlive the batch's
 * flushes), or announce nothing with NULL. */
void batch_set_announcer(batch_t *b, batch_announce_cb fn, void *ctx);
/* A new epoch (the consumer: partitions were assigned): an aggregate that
 * a command marked `announce` touches is announced once more. */
void batch_next_epoch(batch_t *b);
/* Evicts every clean entry (the consumer: partitions were given up). A
 * clean copy is current only while no one else writes its document, which
 * holds while this worker owns its partition: once given up, another
 * member writes it, and a copy kept would make its next write here
 * conflict. The entries do not know their partition, so all go: each
 * aggregate touched again costs one load, in the flush that writes it,
 * where a stale copy would cost a write that fails, a load and the write
 * again. Dirty and in-flight entries stay (they are written as usual, their
 * revs guarding the store). */
void batch_forget_clean(batch_t *b);

/* True when a flush should begin: a limit is reached (commands, dirty
 * aggregates or linger since the first command not in any flush), or the
 * last flush left work owed (conflicts, failures). Says nothing about
 * whether a flush is in flight (batch_in_flight) or backing off (the caller's). */
bool batch_flush_due(const batch_t *b, int64_t mono_ms);
/* When a flush will be due by linger (or at once if owed), on the monotonic
 * clock of batch_now_t, or INT64_MAX if nothing is pending. */
int64_t batch_deadline(const batch_t *b);
/* True if any change is not yet durable (dirty, or in a flush in flight). */
bool batch_dirty(const batch_t *b);
bool batch_in_flight(const batch_t *b);

/* The seq the next applied command will get: every command applied so far
 * has a smaller one. */
uint64_t batch_seq(const batch_t *b);
/* Every command with a seq below this is durable (or was stale). */
uint64_t batch_durable_seq(const batch_t *b);
/* When the oldest change not yet durable (dirty, or in the flush in
 * flight) was applied, on the monotonic clock of batch_now_t; INT64_MAX
 * when every change is durable. The dirty list is in the order changes
 * came, so this is O(1), as batch_durable_seq. */
int64_t batch_oldest_unwritten_ms(const batch_t *b);

/* The most aggregates the next flush takes (batch_flushcap.h), never below
 * BATCH_FLUSH_FLOOR. */
size_t batch_flush_cap(const batch_t *b);

/* Snapshots the oldest dirty entries, at most batch_flush_cap(), into a new
 * job (see the file comment); the
 * caller hands it to a writer (or runs writer_execute) and gives it back to
 * batch_flush_end. Returns NULL when nothing is dirty: then every command
 * applied so far is durable (their committable latency is observed now). Must not be
 * called while a job is in flight. Aborts when out of memory, as batch_apply. */
writer_job_t *batch_flush_begin(batch_t *b, batch_now_t now);
/* Takes a finished job back (and destroys it) at now (read after the job
 * came back: the latencies it observes end then). Returns SINK_OK when
 * every item of the flush landed; SINK_RETRY when the store failed or
 * rejected items (back off, then flush again); SINK_FATAL when retrying
 * cannot help (configuration, auth, an undecodable stored document);
 * SINK_PARTIAL for conflicts or documents past the limit once loaded
 * (reloaded or rebuilt, and merged again by the next flush, due at once).
 * err (may be NULL) says why when the result is not SINK_OK. */
sink_status_t batch_flush_end(batch_t *b, writer_job_t *job, batch_now_t now, sink_error_t *err);

size_t batch_pending_bytes(const batch_t *b); /* heap held by unwritten changes: dirty and in-flight
                                                 entries (aggregate, entry, changes) plus the
                                                 snapshots in flight (aggregate, job item, list) */
size_t batch_dirty_count(const batch_t *b);
size_t batch_in_flight_count(const batch_t *b); /* aggregates in the flush in flight, 0 without one */
size_t batch_cached_count(const batch_t *b); /* clean, loaded entries in the LRU */
size_t batch_cached_bytes(const batch_t *b); /* their memory, as cache.max_bytes counts it */
const batch_stats_t *batch_stats(const batch_t *b);

/* Checks the invariants of every entry (batch_entries.h); false with why
 * at the first broken. For tests: it walks everything. */
bool batch_check(const batch_t *b, char *why, size_t why_len);

/* How many commands the batch holds (batch_hold.h), over every entry. For
 * tests: it walks everything. */
size_t batch_held_count(const batch_t *b);

/* Calls fn for every aggregate in memory (dirty or clean), in no order. */
void batch_foreach(const batch_t *b, void (*fn)(void *ctx, const model_aggregate_t *agg, int64_t rev), void *ctx);

#endif
