/* Capped full-jitter backoff (the AWS architecture blog's "full jitter"):
 * attempt n waits uniform in [1, min(cap, base * 2^n)] ms, so that many
 * workers retrying one store spread out instead of arriving together. */
#ifndef RETRY_H
#define RETRY_H

#include <stdint.h>

int64_t retry_backoff_ms(int64_t base_ms, int64_t cap_ms, unsigned attempt);

#endif
