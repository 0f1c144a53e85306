/* Arrays ordered by aggregate key: the one sort, the one search and the one
 * k-way merge of the project. Whatever the element (an aggregate, a writer
 * item, an index into a bulk), the caller says how to read its key, and the
 * order is the key's bytes (strcmp): the order documents are written in,
 * listed in and compared in (replay's output, verify's audit, the writer's
 * loads). The merge also takes any other order (a stream position, say). */
#ifndef MODEL_KEYS_H
#define MODEL_KEYS_H

#include <stddef.h>

/* The key of the element at elem (never NULL); ctx is the caller's. */
typedef const char *(*model_keys_of_fn)(const void *elem, void *ctx);

/* Sorts n elements of size bytes at base by key. Not stable: keys are
 * expected distinct. */
void model_keys_sort(void *base, size_t n, size_t size, model_keys_of_fn key_of, void *ctx);

/* The index of the first element whose key is not below key (strcmp) in an
 * array sorted by model_keys_sort: n when every key is below it. */
size_t model_keys_lower_bound(const void *base, size_t n, size_t size, model_keys_of_fn key_of, void *ctx,
                              const char *key);

/* The index of the element whose key is key in an array sorted by
 * model_keys_sort, or n when there is none. */
size_t model_keys_find(const void *base, size_t n, size_t size, model_keys_of_fn key_of, void *ctx, const char *key);

/* An order of elements: negative when a comes before b, 0 when neither does. */
typedef int (*model_keys_cmp_fn)(const void *a, const void *b, void *ctx);

/* The key order as a model_keys_cmp_fn: ctx is a model_keys_order_t. */
typedef struct model_keys_order {
  model_keys_of_fn key_of;
  void *ctx; /* key_of's */
} model_keys_order_t;
int model_keys_compare(const void *a, const void *b, void *order);

/* One sorted run of a k-way merge: n elements of the merge's size at base,
 * of which pos is the next one to take (0 at the start). */
typedef struct model_keys_run {
  const void *base;
  size_t n, pos;
} model_keys_run_t;

/* One step of a k-way merge of runs[0..nruns), each sorted by cmp: the
 * first of their next elements (among equal ones, the one of the earliest
 * run), its run's pos moved past it and, when `run` is not NULL, its run's
 * index in *run; NULL once every run is taken. Linear in nruns per element:
 * a merge of a few runs (one per thread). */
const void *model_keys_merge_next(model_keys_run_t *runs, size_t nruns, size_t size, model_keys_cmp_fn cmp, void *ctx,
                                  size_t *run);

/* key_of for an array of model_aggregate_t pointers. */
const char *model_keys_of_aggregate_ptr(const void *elem, void *ctx);

#endif
