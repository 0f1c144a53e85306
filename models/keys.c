#include "keys.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "oom.h"

/* The sort skips the bytes every key shares (the tenant's name, say), then
 * orders the elements by the next 16 bytes of their keys read as a
 * big-endian number (a shorter key padded with zero bytes, so that it sorts
 * before the keys it is a prefix of, as strcmp has it), with a radix sort:
 * a byte at a time, least significant first, skipping the bytes where every
 * key has the same. Keys equal in those 16 bytes are then put in strcmp
 * order among themselves. Aggregate keys ("tenant/assignment") mostly differ
 * within them; strcmp through qsort costs several times as much per
 * element. */
typedef struct {
  uint64_t hi, lo;
  size_t index;
} keyed_t;

static void window_of(const char *k, keyed_t *out) {
  uint64_t w[2] = {0, 0};
  for (int i = 0; i < 16 && k[i]; i++) w[i / 8] |= (uint64_t)(unsigned char)k[i] << (56 - 8 * (i % 8));
  out->hi = w[0];
  out->lo = w[1];
}

static inline unsigned digit(const keyed_t *e, int d) {
  return (unsigned)((d < 8 ? e->lo >> (8 * d) : e->hi >> (8 * (d - 8))) & 0xff);
}

static void radix(keyed_t *a, keyed_t *tmp, size_t n) {
  size_t count[16][256];
  memset(count, 0, sizeof count);
  for (size_t i = 0; i < n; i++)
    for (int d = 0; d < 16; d++) count[d][digit(&a[i], d)]++;
  for (int d = 0; d < 16; d++) {
    if (count[d][digit(&a[0], d)] == n) continue; /* every key has this byte */
    size_t at = 0;
    for (int v = 0; v < 256; v++) {
      size_t c = count[d][v];
      count[d][v] = at;
      at += c;
    }
    for (size_t i = 0; i < n; i++) tmp[count[d][digit(&a[i], d)]++] = a[i];
    memcpy(a, tmp, n * sizeof *a);
  }
}

/* How many first bytes every key has in common. */
static size_t common_prefix(const void *base, size_t n, size_t size, model_keys_of_fn key_of, void *ctx) {
  const char *first = key_of(base, ctx);
  size_t c = strlen(first);
  for (size_t i = 1; i < n && c > 0; i++) {
    const char *k = key_of((const char *)base + i * size, ctx);
    size_t j = 0;
    while (j < c && k[j] == first[j]) j++;
    c = j;
  }
  return c;
}

typedef struct {
  const char *base;
  size_t size;
  model_keys_order_t order;
} tail_t;

static int compare_keyed(const void *a, const void *b, void *tail_) {
  const tail_t *t = tail_;
  const keyed_t *x = a, *y = b;
  return model_keys_compare(t->base + x->index * t->size, t->base + y->index * t->size, (void *)&t->order);
}

void model_keys_sort(void *base, size_t n, size_t size, model_keys_of_fn key_of, void *ctx) {
  if (n < 2) return;
  size_t skip = common_prefix(base, n, size, key_of, ctx);
  keyed_t *k = oom_malloc(2 * n * sizeof *k);
  for (size_t i = 0; i < n; i++) {
    window_of(key_of((const char *)base + i * size, ctx) + skip, &k[i]);
    k[i].index = i;
  }
  radix(k, k + n, n);
  tail_t tail = {base, size, {key_of, ctx}};
  for (size_t i = 0, j; i < n; i = j) { /* runs of equal windows, in full key order */
    j = i + 1;
    while (j < n && k[j].hi == k[i].hi && k[j].lo == k[i].lo) j++;
    if (j - i > 1 && (k[i].lo & 0xff)) qsort_r(k + i, j - i, sizeof *k, compare_keyed, &tail);
  }
  char *out = oom_malloc(n * size);
  for (size_t i = 0; i < n; i++) memcpy(out + i * size, (const char *)base + k[i].index * size, size);
  memcpy(base, out, n * size);
  free(out);
  free(k);
}

size_t model_keys_lower_bound(const void *base, size_t n, size_t size, model_keys_of_fn key_of, void *ctx,
                              const char *key) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (strcmp(key_of((const char *)base + mid * size, ctx), key) < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

size_t model_keys_find(const void *base, size_t n, size_t size, model_keys_of_fn key_of, void *ctx, const char *key) {
  size_t at = model_keys_lower_bound(base, n, size, key_of, ctx, key);
  return at < n && !strcmp(key_of((const char *)base + at * size, ctx), key) ? at : n;
}

int model_keys_compare(const void *a, const void *b, void *order) {
  const model_keys_order_t *o = order;
  return strcmp(o->key_of(a, o->ctx), o->key_of(b, o->ctx));
}

const void *model_keys_merge_next(model_keys_run_t *runs, size_t nruns, size_t size, model_keys_cmp_fn cmp, void *ctx,
                                  size_t *run) {
  const void *best = NULL;
  size_t from = nruns;
  for (size_t i = 0; i < nruns; i++) {
    if (runs[i].pos == runs[i].n) continue;
    const void *next = (const char *)runs[i].base + runs[i].pos * size;
    if (!best || cmp(next, best, ctx) < 0) best = next, from = i;
  }
  if (!best) return NULL;
  runs[from].pos++;
  if (run) *run = from;
  return best;
}

const char *model_keys_of_aggregate_ptr(const void *elem, void *ctx) {
  (void)ctx;
  return model_aggregate_key(*(const model_aggregate_t *const *)elem, NULL);
}
