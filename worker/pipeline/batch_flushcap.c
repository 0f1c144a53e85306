#include "batch_flushcap.h"

#include <stdint.h>

void batch_flushcap_observe(batch_flushcap_t *f, double seconds, size_t items) {
  if (!items) return;
  double sample = seconds / (double)items;
  f->sec_per_agg = f->sec_per_agg > 0 ? 0.5 * f->sec_per_agg + 0.5 * sample : sample;
}

size_t batch_flushcap_get(const batch_flushcap_t *f, int64_t linger_ms) {
  if (f->sec_per_agg <= 0 || linger_ms <= 0) return BATCH_FLUSH_FLOOR;
  double n = (double)linger_ms / 1000.0 / f->sec_per_agg;
  if (n < BATCH_FLUSH_FLOOR) return BATCH_FLUSH_FLOOR;
  return n > (double)SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)n;
}
