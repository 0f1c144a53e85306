#include "keys.h"

#include <stdlib.h>
#include <string.h>

#include "aggregate.h"

typedef struct {
  model_keys_of_fn key_of;
  void *ctx;
} order_t;

static int compare(const void *a, const void *b, void *order_) {
  const order_t *o = order_;
  return strcmp(o->key_of(a, o->ctx), o->key_of(b, o->ctx));
}

void model_keys_sort(void *base, size_t n, size_t size, model_keys_of_fn key_of, void *ctx) {
  if (n < 2) return;
  qsort_r(base, n, size, compare, &(order_t){key_of, ctx});
}

size_t model_keys_find(const void *base, size_t n, size_t size, model_keys_of_fn key_of, void *ctx, const char *key) {
  size_t lo = 0, hi = n;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int c = strcmp(key, key_of((const char *)base + mid * size, ctx));
    if (c == 0) return mid;
    if (c < 0)
      hi = mid;
    else
      lo = mid + 1;
  }
  return n;
}

const char *model_keys_of_aggregate_ptr(const void *elem, void *ctx) {
  (void)ctx;
  return model_aggregate_key(*(const model_aggregate_t *const *)elem, NULL);
}
