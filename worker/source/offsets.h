/* The commit stage of the live worker: per-partition offset state, and which
 * offsets may be committed.
 *
 * A partition's offset is committed only up to the first message whose
 * effect is not durable: every valid command before it is in the store and
 * every rejected one has been acknowledged by the dead-letter topic.
 *  - `next`: one past the last message consumed;
 *  - checkpoints (offsets_checkpoint, when a flush begins): pairs (seq,
 *    next) saying that every command consumed from the partition before
 *    `next` was applied with a batch seq below `seq` (batch.h). When the
 *    batch says every command below some seq is durable
 *    (offsets_durable_to, when a flush comes back), the newest checkpoint
 *    at or below it makes its `next` the partition's `durable`. A flush
 *    need not carry every dirty aggregate (the flush cap), so a flush that
 *    lands does not by itself make all it began with durable: the seq does.
 *    A partition keeps at most OFFSETS_CHECKPOINTS_MAX of them; past that
 *    the newest is replaced (commits then wait for a later point: never
 *    early);
 *  - with nothing dirty and nothing in flight, everything consumed is
 *    durable (offsets_all_durable);
 *  - rejected messages wait, in offset order, for their dead-letter ack
 *    (offsets_reject_pending, offsets_reject_done) and hold the commit below
 *    them until then; a late reject (a command that did not fit its
 *    aggregate's stored document once that was loaded, batch.h) may come
 *    after rejects of later offsets, and takes its place among them;
 *  - `committed`: what the group confirmed; only a confirmed commit counts,
 *    so a lost or failed one is sent again;
 *  - marks (offsets_consumed): pairs (offset, time) of the messages consumed
 *    and not yet committed, one per OFFSETS_MARK_MS of message time, each
 *    holding the earliest timestamp of the messages from its offset to the
 *    next mark's. They give the age of the oldest uncommitted command, which
 *    is what the topic's retention is measured against, without keeping a
 *    time per message. A partition keeps at most OFFSETS_MARKS_MAX; past
 *    that the newest mark's span grows (the age is then never understated).
 *
 * Threads: an offsets_t belongs to the consumer thread; librdkafka's
 * callbacks that update it (rebalance, offset commit, delivery reports) run
 * on that thread, inside its poll calls. */
#ifndef OFFSETS_H
#define OFFSETS_H

#include <librdkafka/rdkafka.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct offsets_reject offsets_reject_t;
struct offsets_checkpoint;
struct offsets_mark;

typedef struct offsets_part {
  char *topic;       /* owned */
  size_t topic_size; /* strlen(topic) + 1 */
  int32_t partition;
  int64_t next;      /* offset after the last consumed message, -1 before the first */
  int64_t durable;   /* every valid command below this is durable, -1 none */
  struct offsets_checkpoint *cps; /* a ring, oldest first */
  size_t cp_head, cp_len, cp_cap;
  int64_t committed; /* last offset the group confirmed, -1 none */
  int64_t first;     /* the first offset consumed since the assignment, -1 none */
  /* The end of the partition when its first message since the assignment
   * came (-1 before): a message below it may have been read before, by a
   * worker that crashed between a write and its change event
   * (docs/CHANGES.md), so its aggregate is announced again. */
  int64_t reread_end;
  struct offsets_mark *marks; /* a ring, oldest first */
  size_t mk_head, mk_len, mk_cap;
  offsets_reject_t *rejects; /* awaiting the dead-letter ack, a ring in offset order */
  size_t head, len, cap;
} offsets_part_t;

typedef struct offsets offsets_t;

/* Caller owns; offsets_destroy(NULL) is safe. Never NULL (oom.h). */
offsets_t *offsets_new(void);
void offsets_destroy(offsets_t *o);

/* Adds an assigned partition (no-op if present); aborts when out of memory,
 * as the consumer did (a partition without state could commit wrongly). */
void offsets_add(offsets_t *o, const char *topic, int32_t partition);
/* Forgets a partition given up (its pending rejects too: their acks are
 * then ignored). */
void offsets_remove(offsets_t *o, const char *topic, int32_t partition);
offsets_part_t *offsets_find(offsets_t *o, const char *topic, int32_t partition);
size_t offsets_count(const offsets_t *o);
offsets_part_t *offsets_at(offsets_t *o, size_t i);

/* A message at offset, produced at ts_ms (wall ms), was consumed from p:
 * moves p->next past it and marks its time (aborts when out of memory, as
 * offsets_add). */
#define OFFSETS_MARK_MS 1000
#define OFFSETS_MARKS_MAX 4096
void offsets_consumed(offsets_part_t *p, int64_t offset, int64_t ts_ms);
/* The timestamp (wall ms) of the oldest message consumed from p and not yet
 * committed, to within one mark (never later than it); 0 when every message
 * consumed is committed. */
int64_t offsets_oldest_uncommitted(const offsets_part_t *p);
/* Where the group's committed offset stands, as far as this worker knows:
 * its last confirmed commit or, before it, the offset fetching began at
 * (the group's committed offset when the partition was assigned, or where
 * auto.offset.reset put it); -1 before the first message. */
int64_t offsets_commit_base(const offsets_part_t *p);

/* A rejected message at offset awaits its dead-letter ack / got it. The
 * offset must not be below what is committable (offsets_committable);
 * it may be below those of rejects already pending. */
void offsets_reject_pending(offsets_part_t *p, int64_t offset);
void offsets_reject_done(offsets_t *o, const char *topic, int32_t partition, int64_t offset);
bool offsets_rejects_pending(const offsets_t *o);

#define OFFSETS_CHECKPOINTS_MAX 4096
/* Every partition's `next` was consumed below batch seq `seq`. Aborts when
 * out of memory (as offsets_add). */
void offsets_checkpoint(offsets_t *o, uint64_t seq);
/* Every command below batch seq `seq` is durable: returns true if some
 * partition's `durable` moved. */
bool offsets_durable_to(offsets_t *o, uint64_t seq);
void offsets_all_durable(offsets_t *o);

/* The committable offsets above what was confirmed, of the partitions in
 * `only` (all if NULL); caller destroys the list. */
rd_kafka_topic_partition_list_t *offsets_committable(offsets_t *o, const rd_kafka_topic_partition_list_t *only);
/* The group confirmed these (elements with an error are skipped). */
void offsets_confirmed(offsets_t *o, const rd_kafka_topic_partition_list_t *l);

#endif
