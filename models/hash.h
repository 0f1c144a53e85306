/* The project's one non-cryptographic hash, hash_words: the aggregate keys
 * of the batch's and the replay's tables (model_aggset_hash) and the
 * aggregate's student fingerprints, all short keys.
 *
 * Keys are short ids (at most 64 bytes, validated by the decoder), and its
 * distribution is good enough for open addressing on such keys. It is not
 * keyed: tables hashed with it must not face keys chosen by an attacker to
 * collide. Ours hold tenant and assignment ids from trusted upstream
 * services. */
#ifndef HASH_H
#define HASH_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* hash_words: a few instructions per 8 bytes of key.
 *
 * Each step XORs one 8-byte little-endian word of the key into the state,
 * multiplies by an odd 64-bit constant and folds the high half onto the
 * low half: the multiply carries every input bit upward only, the fold brings
 * the high bits (where the key's last bytes, the ones that tell ids like
 * "stu00359" and "stu00363" apart, end up) down to the bits a power-of-two
 * table indexes by. The length goes into the state first: the overlapping
 * reads below can give keys of different lengths the same words, and the
 * length tells them apart. hash_words_final32 is a full avalanche (the
 * murmur3 finalizer), so every output bit depends on every bit of the
 * state; that is the property the tables need, and all that they need. A
 * user of fewer bits may take the top bits of the state times
 * HASH_WORDS_MUL instead (the student fingerprints, table.c).
 *
 * Reads only the key's n bytes: the last, partial word of a key of 8 bytes
 * or more is the word ending at its last byte (overlapping the one before);
 * a key under 8 bytes is read as two overlapping 4-byte loads or, under 4,
 * as its first, middle and last byte. No read goes past p + n, so keys may
 * sit at the end of any buffer.
 *
 * Streams: start from HASH_WORDS_INIT, feed parts with
 * hash_words (each call's result is the state for the next), finish with
 * hash_words_final32. The parts' lengths are in the state, so a
 * "tenant/assignment" key needs no separator. */
#define HASH_WORDS_INIT 0x9e3779b97f4a7c15ull
#define HASH_WORDS_MUL 0xff51afd7ed558ccdull

static inline uint64_t hash_words_step(uint64_t h, uint64_t w) {
  h = (h ^ w) * HASH_WORDS_MUL;
  return h ^ h >> 32;
}

static inline uint64_t hash_words(uint64_t h, const void *data, size_t n) {
  const unsigned char *p = data;
  uint64_t w;
  h = hash_words_step(h, (uint64_t)n);
  if (n > 8) {
    for (; n > 16; p += 8, n -= 8) {
      memcpy(&w, p, 8);
      h = hash_words_step(h, w);
    }
    memcpy(&w, p, 8); /* 9 to 16 bytes left: the first word, then the last */
    h = hash_words_step(h, w);
    memcpy(&w, p + n - 8, 8);
  } else if (n == 8) {
    memcpy(&w, p, 8);
  } else if (n >= 4) {
    uint32_t a, b;
    memcpy(&a, p, 4);
    memcpy(&b, p + n - 4, 4);
    w = (uint64_t)a << 32 | b;
  } else if (n) {
    w = (uint64_t)p[0] << 16 | (uint64_t)p[n >> 1] << 8 | p[n - 1];
  } else {
    return h;
  }
  return hash_words_step(h, w);
}

static inline uint32_t hash_words_final32(uint64_t h) {
  h ^= h >> 33;
  h *= 0xc4ceb9fe1a85ec53ull;
  h ^= h >> 33;
  return (uint32_t)h;
}

#endif
