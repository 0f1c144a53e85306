/* The documents of --output on several threads: see replay_encode.h. */
#include "replay_encode.h"

#include <pthread.h>
#include <stdlib.h>

#include "buf.h"
#include "codec.h"
#include "oom.h"

typedef struct piece {
  model_buf_t out;
  bool done; /* out holds the piece's documents, not yet written */
} piece_t;

typedef struct encode {
  pthread_mutex_t lock;
  pthread_cond_t work; /* a piece done, a slot free, or the end */
  model_aggregate_t *const *aggs;
  size_t n, npieces, window;
  int64_t now_ms;
  bool consume;   /* the aggregates are destroyed once encoded */
  piece_t *ring;  /* piece k in ring[k % window] */
  size_t taken;   /* pieces taken to encode */
  size_t written; /* pieces written: the slots of the next `window` are free */
  bool stop;      /* the end, or a write failed: nothing more is taken */
} encode_t;

/* Takes and encodes the next piece if its slot is free; false when none
 * can be taken now. Under the lock, which it drops while encoding. */
static bool encode_next(encode_t *e) {
  if (e->stop || e->taken == e->npieces || e->taken == e->written + e->window) return false;
  size_t k = e->taken++;
  piece_t *p = &e->ring[k % e->window];
  pthread_mutex_unlock(&e->lock);
  size_t from = k * REPLAY_ENCODE_PIECE, to = from + REPLAY_ENCODE_PIECE < e->n ? from + REPLAY_ENCODE_PIECE : e->n;
  model_buf_clear(&p->out);
  for (size_t i = from; i < to; i++) model_codec_to_json(e->aggs[i], 1, e->now_ms, &p->out);
  if (e->consume)
    for (size_t i = from; i < to; i++) model_aggregate_destroy(e->aggs[i]);
  pthread_mutex_lock(&e->lock);
  p->done = true;
  pthread_cond_broadcast(&e->work);
  return true;
}

static void *helper_main(void *arg) {
  encode_t *e = arg;
  pthread_mutex_lock(&e->lock);
  while (!e->stop && e->taken < e->npieces)
    if (!encode_next(e)) pthread_cond_wait(&e->work, &e->lock);
  pthread_mutex_unlock(&e->lock);
  return NULL;
}

/* The calling thread: writes the pieces in order, encoding while the next
 * one is not done. Under the lock. */
static bool write_all(encode_t *e, bool (*write)(void *ctx, const char *data, size_t len), void *ctx) {
  bool ok = true;
  while (ok && e->written < e->npieces) {
    piece_t *p = &e->ring[e->written % e->window];
    if (!p->done) {
      if (!encode_next(e)) pthread_cond_wait(&e->work, &e->lock);
      continue;
    }
    pthread_mutex_unlock(&e->lock);
    ok = !p->out.len || write(ctx, p->out.data, p->out.len);
    pthread_mutex_lock(&e->lock);
    p->done = false;
    e->written++;
    pthread_cond_broadcast(&e->work);
  }
  return ok;
}

bool replay_encode(model_aggregate_t *const *aggs, size_t n, int64_t now_ms, size_t nthreads, bool consume,
                   bool (*write)(void *ctx, const char *data, size_t len), void *ctx) {
  if (nthreads < 1) nthreads = 1;
  encode_t e = {.aggs = aggs, .n = n, .now_ms = now_ms, .consume = consume,
                .window = REPLAY_ENCODE_WINDOW * nthreads};
  e.npieces = (n + REPLAY_ENCODE_PIECE - 1) / REPLAY_ENCODE_PIECE;
  if (nthreads > e.npieces) nthreads = e.npieces ? e.npieces : 1; /* a thread per piece at most */
  pthread_mutex_init(&e.lock, NULL);
  pthread_cond_init(&e.work, NULL);
  e.ring = oom_calloc(e.window, sizeof *e.ring);
  pthread_t *tids = oom_calloc(nthreads, sizeof *tids);
  size_t started = 0;
  while (started < nthreads - 1 && pthread_create(&tids[started], NULL, helper_main, &e) == 0) started++;
  pthread_mutex_lock(&e.lock);
  bool ok = write_all(&e, write, ctx);
  e.stop = true;
  pthread_cond_broadcast(&e.work);
  pthread_mutex_unlock(&e.lock);
  for (size_t t = 0; t < started; t++) pthread_join(tids[t], NULL);
  if (consume) /* the pieces never taken, after a failed write */
    for (size_t i = e.taken * REPLAY_ENCODE_PIECE; i < n; i++) model_aggregate_destroy(aggs[i]);
  for (size_t i = 0; i < e.window; i++) model_buf_destroy(&e.ring[i].out);
  free(e.ring);
  free(tids);
  pthread_cond_destroy(&e.work);
  pthread_mutex_destroy(&e.lock);
  return ok;
}
