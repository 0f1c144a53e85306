/* The documents of --output on several threads: see replay_encode.h. */
#include "replay_encode.h"

#include <pthread.h>
#include <stdlib.h>

#include "buf.h"
#include "codec.h"
#include "oom.h"

typedef struct part {
  model_aggregate_t *const *aggs;
  size_t n;
  int64_t now_ms;
  model_buf_t out;
  pthread_t tid;
  bool started;
} part_t;

static void *encode_part(void *arg) {
  part_t *p = arg;
  for (size_t i = 0; i < p->n; i++) model_codec_to_json(p->aggs[i], 1, p->now_ms, &p->out);
  return NULL;
}

/* One round: aggs[0..n) cut into nparts contiguous parts. */
static void encode_round(part_t *parts, size_t nparts, model_aggregate_t *const *aggs, size_t n) {
  size_t per = (n + nparts - 1) / nparts, at = 0;
  for (size_t t = 0; t < nparts; t++) {
    part_t *p = &parts[t];
    p->aggs = aggs + at;
    p->n = n - at < per ? n - at : per;
    at += p->n;
    model_buf_clear(&p->out);
    p->started = t > 0 && p->n && pthread_create(&p->tid, NULL, encode_part, p) == 0;
  }
  for (size_t t = 0; t < nparts; t++)
    if (!parts[t].started) encode_part(&parts[t]);
  for (size_t t = 1; t < nparts; t++)
    if (parts[t].started) pthread_join(parts[t].tid, NULL);
}

bool replay_encode(model_aggregate_t *const *aggs, size_t n, int64_t now_ms, size_t nthreads,
                   bool (*write)(void *ctx, const char *data, size_t len), void *ctx) {
  if (nthreads < 1) nthreads = 1;
  part_t *parts = oom_calloc(nthreads, sizeof *parts);
  for (size_t t = 0; t < nthreads; t++) parts[t] = (part_t){.now_ms = now_ms, .out = MODEL_BUF_INIT};
  size_t round = nthreads * (size_t)REPLAY_ENCODE_ROUND;
  bool ok = true;
  for (size_t at = 0; at < n && ok; at += round) {
    encode_round(parts, nthreads, aggs + at, n - at < round ? n - at : round);
    for (size_t t = 0; t < nthreads && ok; t++)
      ok = !parts[t].out.len || write(ctx, parts[t].out.data, parts[t].out.len);
  }
  for (size_t t = 0; t < nthreads; t++) model_buf_destroy(&parts[t].out);
  free(parts);
  return ok;
}
