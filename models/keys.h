/* Arrays ordered by aggregate key: the one sort and the one search of the
 * project. Whatever the element (an aggregate, a writer item, an index into
 * a bulk), the caller says how to read its key, and the order is the key's
 * bytes (strcmp): the order documents are written in, listed in and
 * compared in (replay's output, verify's audit, the writer's loads). */
#ifndef MODEL_KEYS_H
#define MODEL_KEYS_H

#include <stddef.h>

/* The key of the element at elem (never NULL); ctx is the caller's. */
typedef const char *(*model_keys_of_fn)(const void *elem, void *ctx);

/* Sorts n elements of size bytes at base by key. Not stable: keys are
 * expected distinct. */
void model_keys_sort(void *base, size_t n, size_t size, model_keys_of_fn key_of, void *ctx);

/* The index of the element whose key is key in an array sorted by
 * model_keys_sort, or n when there is none. */
size_t model_keys_find(const void *base, size_t n, size_t size, model_keys_of_fn key_of, void *ctx, const char *key);

/* key_of for an array of model_aggregate_t pointers. */
const char *model_keys_of_aggregate_ptr(const void *elem, void *ctx);

#endif
