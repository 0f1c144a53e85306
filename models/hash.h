/* FNV-1a, the one non-cryptographic hash of the project (the aggregate's
 * student fingerprints, the batch's and the file replay's key tables).
 *
 * Why FNV-1a: keys are short ids (at most 64 bytes, validated by the
 * decoder), it is a few instructions per byte, and its distribution is good
 * enough for open addressing on such keys. It is not keyed: tables hashed
 * with it must not face keys chosen by an attacker to collide. Ours hold
 * tenant and assignment ids from trusted upstream services.
 *
 * Streams: start from HASH_FNV1A32_INIT / HASH_FNV1A64_INIT, feed bytes with
 * hash_fnv1a32/64 (the result of one call is the state for the next), so a
 * hash of "tenant/assignment" needs no concatenated copy. */
#ifndef HASH_H
#define HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_FNV1A32_INIT 2166136261u
#define HASH_FNV1A64_INIT 14695981039346656037ull

static inline uint32_t hash_fnv1a32(uint32_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 16777619u;
  return h;
}

static inline uint64_t hash_fnv1a64(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

#endif
