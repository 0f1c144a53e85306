/* Where a replay's commands come from: the lines of a file, or the messages
 * of the configured topics. A source hands each command's bytes to the
 * caller's feed (replay.c decodes and merges them) and says whether it got
 * to the end.
 *
 * Lines: as replay_lines.h cuts them, handed over one by one or, to a feed
 * that takes them so, in whole blocks of lines read straight into the
 * feed's buffer.
 *
 * Topics: the replay assigns itself the configured topics' partitions (no
 * group join, no offset commit: no group's offsets ever move), from --from
 * to --until (exclusive), each bound as replay_bound.h resolves it per
 * partition. A committed:GROUP bound reads GROUP's offsets with the admin
 * request OffsetFetch (ListConsumerGroupOffsets): it never joins GROUP and
 * never commits to it. Each partition's messages come in offset order; the
 * partitions are interleaved as the broker serves them.
 *
 * Both stop early, returning false, once a stop signal has come
 * (signals.h); a source never installs handlers itself. */
#ifndef REPLAY_SOURCE_H
#define REPLAY_SOURCE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "buf.h"
#include "config/config.h"
#include "replay_bound.h"

/* Where a message of the topics lies. */
typedef struct replay_position {
  const char *topic; /* valid during the feed's message call */
  int32_t partition;
  int64_t offset;
} replay_position_t;

typedef struct replay_feed {
  /* One command's bytes (data may be NULL when len is 0) and when it
   * entered the system (ms since the epoch, 0 = unknown). False stops the
   * source: the feed has said why. */
  bool (*message)(void *ctx, const char *data, size_t len, int64_t event_ms);
  /* The topics gave nothing for a moment: time for work that must not wait
   * for the next message. NULL = nothing to do; false stops the source. */
  bool (*idle)(void *ctx);
  void *ctx;
  /* The progress line's "<label>: " on stderr (redrawn in place on a
   * terminal, otherwise a line every few seconds and a last one at the
   * end); NULL = no progress line. */
  const char *label;
} replay_feed_t;

/* A feed of lines that takes whole blocks of them instead of single lines:
 * `block` gives the buffer to read the next block of whole lines into
 * (replay_lines_read), NULL to stop; then `done` hands it over filled, or
 * empty and standing for one line past the limit of long_len bytes (> 0),
 * and sets *lines to the lines known so far (for the progress line), false
 * to stop. Both get the feed's ctx. */
typedef struct replay_block_feed {
  model_buf_t *(*block)(void *ctx);
  bool (*done)(void *ctx, size_t long_len, uint64_t *lines);
} replay_block_feed_t;

/* Checks a --from/--until bound (replay_bound.h): NULL or `word`
 * ("beginning", "end") sets *special; an RFC 3339 UTC time goes into *ms;
 * committed:GROUP and offsets:P=O,... set neither. False when it is none of
 * these (a usage error: the CLI checks before contacting anything). */
bool replay_parse_bound(const char *s, const char *word, int64_t *ms, bool *special);

/* Feeds every line of in (borrowed; `shown` names it in a read error):
 * with blocks NULL, line by line to feed->message, a line longer than
 * max_line (limits.max_command_bytes) by its length only, with data NULL;
 * otherwise in whole blocks to `blocks` (feed->message is not called).
 * True when the end of the file was reached. */
bool replay_source_blocks(FILE *in, const char *shown, size_t max_line, const replay_feed_t *feed,
                          const replay_block_feed_t *blocks);

/* Feeds the configured topics' messages from `from` to `until` (as
 * replay_parse_bound takes them). True when every partition was read up to
 * its end. Errors go to stderr or the log. */
bool replay_source_topics(const config_t *cfg, const char *from, const char *until, const replay_feed_t *feed);

/* replay_source_topics, setting *at to each message's position before the
 * feed's message call with it. */
bool replay_source_topics_at(const config_t *cfg, const char *from, const char *until, const replay_feed_t *feed,
                             replay_position_t *at);

#endif
