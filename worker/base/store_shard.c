/* The shard key of the store's filters (store_shard.h). */
#include "store_shard.h"

#include <stdlib.h>
#include <string.h>

#include "oom.h"

static const struct {
  const char *name;
  store_shard_t bit;
} fields[] = {{"_id", 0}, {"tenant", STORE_SHARD_TENANT}, {"assignment", STORE_SHARD_ASSIGNMENT}};

bool store_shard_field(const char *s, size_t n, store_shard_t *bit) {
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
    if (strlen(fields[i].name) == n && !memcmp(fields[i].name, s, n)) {
      *bit = fields[i].bit;
      return true;
    }
  return false;
}

bool store_shard_parse(const char *list, store_shard_t *out, const char **bad, size_t *bad_len) {
  *out = 0;
  if (!list || !*list) return true;
  for (const char *p = list;;) {
    const char *end = strchr(p, ',');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    store_shard_t bit;
    if (!store_shard_field(p, n, &bit)) {
      *bad = p;
      *bad_len = n;
      return false;
    }
    *out |= bit;
    if (!end) return true;
    p = end + 1;
  }
}

/* The key's tenant (before the '/') or assignment (after it); the whole
 * key when it has no '/', which no stored document's _id lacks. */
static const char *part(const char *key, size_t key_len, store_shard_t bit, size_t *len) {
  const char *slash = memchr(key, '/', key_len);
  if (!slash) {
    *len = key_len;
    return key;
  }
  if (bit == STORE_SHARD_TENANT) {
    *len = (size_t)(slash - key);
    return key;
  }
  *len = key_len - (size_t)(slash + 1 - key);
  return slash + 1;
}

static const char *name_of(store_shard_t bit) { return bit == STORE_SHARD_TENANT ? "tenant" : "assignment"; }

void store_shard_append(store_shard_t shard, const char *key, size_t key_len, bson_t *filter) {
  for (store_shard_t bit = STORE_SHARD_TENANT; bit <= STORE_SHARD_ASSIGNMENT; bit <<= 1) {
    if (!(shard & bit)) continue;
    size_t len;
    const char *v = part(key, key_len, bit, &len);
    bson_append_utf8(filter, name_of(bit), -1, v, (int)len);
  }
}

typedef struct slice {
  const char *p;
  size_t n;
} slice_t;

static int slice_cmp(const void *a, const void *b) {
  const slice_t *x = a, *y = b;
  int c = memcmp(x->p, y->p, x->n < y->n ? x->n : y->n);
  return c ? c : (x->n > y->n) - (x->n < y->n);
}

void store_shard_append_many(store_shard_t shard, const char *const *keys, size_t n, bson_t *filter) {
  if (!shard || n == 0) return;
  slice_t *v = oom_malloc(n * sizeof *v);
  for (store_shard_t bit = STORE_SHARD_TENANT; bit <= STORE_SHARD_ASSIGNMENT; bit <<= 1) {
    if (!(shard & bit)) continue;
    for (size_t i = 0; i < n; i++) v[i].p = part(keys[i], strlen(keys[i]), bit, &v[i].n);
    qsort(v, n, sizeof *v, slice_cmp);
    size_t distinct = 0;
    for (size_t i = 0; i < n; i++)
      if (i == 0 || slice_cmp(&v[i - 1], &v[i])) v[distinct++] = v[i];
    if (distinct == 1) {
      bson_append_utf8(filter, name_of(bit), -1, v[0].p, (int)v[0].n);
      continue;
    }
    bson_t doc, in;
    bson_append_document_begin(filter, name_of(bit), -1, &doc);
    BSON_APPEND_ARRAY_BEGIN(&doc, "$in", &in);
    for (size_t i = 0; i < distinct; i++) {
      const char *k;
      char buf[16];
      bson_uint32_to_string((uint32_t)i, &k, buf, sizeof buf);
      bson_append_utf8(&in, k, -1, v[i].p, (int)v[i].n);
    }
    bson_append_array_end(&doc, &in);
    bson_append_document_end(filter, &doc);
  }
  free(v);
}
