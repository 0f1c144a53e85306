/* A --from or --until bound of the commands that read the topics (replay,
 * verify, export), parsed without contacting anything, and the rule that
 * turns it into one partition's offset.
 *
 *   beginning / end       the log start offset / the high watermark taken
 *                         when the command starts (the `word` of the bound)
 *   RFC 3339 UTC time     the first offset whose Kafka timestamp is at or
 *                         after it (the high watermark when none is)
 *   committed:GROUP       GROUP's committed offset of the partition; a
 *                         partition GROUP committed nothing of is at its log
 *                         start, where GROUP itself would begin with
 *                         auto.offset.reset=earliest (so `--until committed:G`
 *                         reads nothing of it). A GROUP with no committed
 *                         offset on any configured topic is an error: a typo
 *                         would otherwise read everything.
 *   offsets:P=O,...       offset O of partition P of every configured topic,
 *                         or TOPIC:P=O for that topic's only (a TOPIC:P entry
 *                         wins over a bare P); a partition not named is at
 *                         `word`'s edge, so it is read whole.
 *
 * Every offset is clamped into the partition's [log start, high watermark],
 * as the time bounds are; an end before its start reads nothing.
 *
 * The bound owns its strings (replay_bound_free). */
#ifndef REPLAY_BOUND_H
#define REPLAY_BOUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum {
  REPLAY_BOUND_EDGE,      /* beginning (from) or end (until) */
  REPLAY_BOUND_TIME,      /* ms */
  REPLAY_BOUND_COMMITTED, /* group */
  REPLAY_BOUND_OFFSETS,   /* offsets[n] */
} replay_bound_kind_t;

typedef struct replay_bound_offset {
  char *topic; /* NULL: partition of every configured topic */
  int32_t partition;
  int64_t offset;
} replay_bound_offset_t;

typedef struct replay_bound {
  replay_bound_kind_t kind;
  int64_t ms;
  char *group;
  replay_bound_offset_t *offsets;
  size_t n;
} replay_bound_t;

/* The forms a bound takes, for usage messages. */
#define REPLAY_BOUND_FORMS "an RFC 3339 UTC time, committed:GROUP or offsets:P=O,..."

/* Parses s (NULL or `word` is the edge) into *b, which the caller frees
 * with replay_bound_free also on failure. False with the reason in err
 * (one line, naming the part at fault). */
bool replay_bound_parse(const char *s, const char *word, replay_bound_t *b, char *err, size_t err_size);

void replay_bound_free(replay_bound_t *b);

/* The offsets entry of an OFFSETS bound for partition p of topic: the
 * TOPIC:P entry, else the bare P one; NULL when neither is named. */
const replay_bound_offset_t *replay_bound_offset_of(const replay_bound_t *b, const char *topic, int32_t p);

/* x clamped into [lo, hi]. */
int64_t replay_bound_clamp(int64_t x, int64_t lo, int64_t hi);

#endif
