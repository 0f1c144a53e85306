#include "offsets.h"

#include <stdlib.h>
#include <string.h>

#include "oom.h"

struct offsets_reject {
  int64_t offset;
  bool done;
};

struct offsets_checkpoint {
  uint64_t seq;
  int64_t next;
};

/* From offset to the next mark's: ts is the earliest message timestamp. */
struct offsets_mark {
  int64_t offset;
  int64_t ts;
};

struct offsets {
  offsets_part_t *parts;
  size_t n, cap;
};

offsets_t *offsets_new(void) { return oom_calloc(1, sizeof(offsets_t)); }

void offsets_destroy(offsets_t *o) {
  if (!o) return;
  for (size_t i = 0; i < o->n; i++) {
    free(o->parts[i].topic);
    free(o->parts[i].rejects);
    free(o->parts[i].cps);
    free(o->parts[i].marks);
  }
  free(o->parts);
  free(o);
}

offsets_part_t *offsets_find(offsets_t *o, const char *topic, int32_t partition) {
  for (size_t i = 0; i < o->n; i++)
    if (o->parts[i].partition == partition && !strcmp(o->parts[i].topic, topic)) return &o->parts[i];
  return NULL;
}

size_t offsets_count(const offsets_t *o) { return o->n; }
offsets_part_t *offsets_at(offsets_t *o, size_t i) { return &o->parts[i]; }

void offsets_add(offsets_t *o, const char *topic, int32_t partition) {
  if (offsets_find(o, topic, partition)) return;
  if (o->n == o->cap) {
    size_t cap = o->cap ? o->cap * 2 : 16;
    o->parts = oom_realloc(o->parts, cap * sizeof *o->parts);
    o->cap = cap;
  }
  char *t = oom_strdup(topic);
  o->parts[o->n++] = (offsets_part_t){.topic = t, .topic_size = strlen(t) + 1, .partition = partition,
                                      .next = -1, .durable = -1, .committed = -1, .first = -1,
                                      .reread_end = -1};
}

void offsets_remove(offsets_t *o, const char *topic, int32_t partition) {
  offsets_part_t *p = offsets_find(o, topic, partition);
  if (!p) return;
  free(p->topic);
  free(p->rejects);
  free(p->cps);
  free(p->marks);
  *p = o->parts[--o->n];
}

/* Makes room for one more element in the ring v of len elements of size
 * bytes from *head, and returns its storage: when full, that doubles (16 to
 * start) and holds them oldest first from index 0. The three rings of a
 * partition grow so. */
static void *ring_reserve(void *v, size_t size, size_t *head, size_t len, size_t *cap) {
  if (len < *cap) return v;
  size_t ncap = *cap ? *cap * 2 : 16;
  char *n = oom_malloc(ncap * size);
  for (size_t k = 0; k < len; k++) memcpy(n + k * size, (char *)v + (*head + k) % *cap * size, size);
  free(v);
  *cap = ncap;
  *head = 0;
  return n;
}

static struct offsets_mark *mark_at(const offsets_part_t *p, size_t i) {
  return &p->marks[(p->mk_head + i) % p->mk_cap];
}

void offsets_consumed(offsets_part_t *p, int64_t offset, int64_t ts_ms) {
  if (p->first < 0) p->first = offset;
  p->next = offset + 1;
  if (p->mk_len) {
    struct offsets_mark *last = mark_at(p, p->mk_len - 1);
    /* Within the newest mark's span (or no room for another): it keeps the
     * earliest time, so an older timestamp arriving late still counts. */
    if (ts_ms < last->ts + OFFSETS_MARK_MS || p->mk_len == OFFSETS_MARKS_MAX) {
      if (ts_ms < last->ts) last->ts = ts_ms;
      return;
    }
  }
  p->marks = ring_reserve(p->marks, sizeof *p->marks, &p->mk_head, p->mk_len, &p->mk_cap);
  *mark_at(p, p->mk_len++) = (struct offsets_mark){offset, ts_ms};
}

/* The group committed up to p->committed: the marks whose whole span lies
 * below it go; the one it falls in stays. */
static void drop_committed_marks(offsets_part_t *p) {
  if (p->committed >= p->next) {
    p->mk_len = 0;
    return;
  }
  while (p->mk_len >= 2 && mark_at(p, 1)->offset <= p->committed) {
    p->mk_head = (p->mk_head + 1) % p->mk_cap;
    p->mk_len--;
  }
}

int64_t offsets_oldest_uncommitted(const offsets_part_t *p) {
  int64_t oldest = 0;
  for (size_t k = 0; k < p->mk_len; k++)
    if (!oldest || mark_at(p, k)->ts < oldest) oldest = mark_at(p, k)->ts;
  return oldest;
}

int64_t offsets_commit_base(const offsets_part_t *p) { return p->committed >= 0 ? p->committed : p->first; }

static offsets_reject_t *reject_at(offsets_part_t *p, size_t i) { return &p->rejects[(p->head + i) % p->cap]; }

/* In offset order, so that the head is the lowest. A reject usually comes
 * after every earlier one; a late one (its command was merged into an
 * aggregate not yet loaded, and did not fit the stored document: batch.h)
 * can come after rejects of later offsets. Its offset is still at or above
 * what can be committed: its command took a batch seq that is not durable
 * until its aggregate is written, so no checkpoint past its offset has
 * become durable, and the batch rejects it before that write begins. */
void offsets_reject_pending(offsets_part_t *p, int64_t offset) {
  p->rejects = ring_reserve(p->rejects, sizeof *p->rejects, &p->head, p->len, &p->cap);
  size_t i = p->len++;
  for (; i > 0 && reject_at(p, i - 1)->offset > offset; i--) *reject_at(p, i) = *reject_at(p, i - 1);
  *reject_at(p, i) = (offsets_reject_t){offset, false};
}

void offsets_reject_done(offsets_t *o, const char *topic, int32_t partition, int64_t offset) {
  offsets_part_t *p = offsets_find(o, topic, partition);
  if (!p) return; /* given up meanwhile: its new owner commits its offset */
  for (size_t i = 0; i < p->len; i++) {
    offsets_reject_t *r = &p->rejects[(p->head + i) % p->cap];
    if (r->offset == offset) {
      r->done = true;
      return;
    }
  }
}

bool offsets_rejects_pending(const offsets_t *o) {
  for (size_t i = 0; i < o->n; i++) {
    const offsets_part_t *p = &o->parts[i];
    for (size_t k = 0; k < p->len; k++)
      if (!p->rejects[(p->head + k) % p->cap].done) return true;
  }
  return false;
}

static struct offsets_checkpoint *cp_at(offsets_part_t *p, size_t i) { return &p->cps[(p->cp_head + i) % p->cp_cap]; }

void offsets_checkpoint(offsets_t *o, uint64_t seq) {
  for (size_t i = 0; i < o->n; i++) {
    offsets_part_t *p = &o->parts[i];
    if (p->next <= p->durable) continue; /* nothing consumed that is not durable */
    if (p->cp_len && cp_at(p, p->cp_len - 1)->next == p->next) continue; /* the last one says the same, earlier */
    if (p->cp_len == OFFSETS_CHECKPOINTS_MAX) { /* coarser, never early: the newest moves later */
      *cp_at(p, p->cp_len - 1) = (struct offsets_checkpoint){seq, p->next};
      continue;
    }
    p->cps = ring_reserve(p->cps, sizeof *p->cps, &p->cp_head, p->cp_len, &p->cp_cap);
    *cp_at(p, p->cp_len++) = (struct offsets_checkpoint){seq, p->next};
  }
}

bool offsets_durable_to(offsets_t *o, uint64_t seq) {
  bool moved = false;
  for (size_t i = 0; i < o->n; i++) {
    offsets_part_t *p = &o->parts[i];
    while (p->cp_len && p->cps[p->cp_head].seq <= seq) {
      if (p->cps[p->cp_head].next > p->durable) {
        p->durable = p->cps[p->cp_head].next;
        moved = true;
      }
      p->cp_head = (p->cp_head + 1) % p->cp_cap;
      p->cp_len--;
    }
  }
  return moved;
}

void offsets_all_durable(offsets_t *o) {
  for (size_t i = 0; i < o->n; i++) {
    o->parts[i].durable = o->parts[i].next;
    o->parts[i].cp_len = 0; /* all at or below what is durable now */
  }
}

/* The offset to commit: the first message not yet durable. */
static int64_t committable(offsets_part_t *p) {
  while (p->len && p->rejects[p->head].done) { /* drop acknowledged heads */
    p->head = (p->head + 1) % p->cap;
    p->len--;
  }
  int64_t off = p->durable;
  if (p->len && p->rejects[p->head].offset < off) off = p->rejects[p->head].offset;
  return off;
}

rd_kafka_topic_partition_list_t *offsets_committable(offsets_t *o, const rd_kafka_topic_partition_list_t *only) {
  rd_kafka_topic_partition_list_t *l = rd_kafka_topic_partition_list_new((int)o->n + 1);
  for (size_t i = 0; i < o->n; i++) {
    offsets_part_t *p = &o->parts[i];
    if (only && !rd_kafka_topic_partition_list_find(only, p->topic, p->partition)) continue;
    int64_t off = committable(p);
    if (off > p->committed) rd_kafka_topic_partition_list_add(l, p->topic, p->partition)->offset = off;
  }
  return l;
}

void offsets_confirmed(offsets_t *o, const rd_kafka_topic_partition_list_t *l) {
  for (int i = 0; i < l->cnt; i++) {
    offsets_part_t *p = offsets_find(o, l->elems[i].topic, l->elems[i].partition);
    if (p && !l->elems[i].err && l->elems[i].offset > p->committed) {
      p->committed = l->elems[i].offset;
      drop_committed_marks(p);
    }
  }
}
