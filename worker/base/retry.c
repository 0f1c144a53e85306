#include "retry.h"

#include <stdlib.h>

int64_t retry_backoff_ms(int64_t base_ms, int64_t cap_ms, unsigned attempt) {
  int64_t ceiling = base_ms > 0 ? base_ms : 1;
  for (unsigned i = 0; i < attempt && ceiling < cap_ms; i++) ceiling *= 2;
  if (ceiling > cap_ms) ceiling = cap_ms;
  if (ceiling < 1) ceiling = 1;
  return 1 + (int64_t)((double)(ceiling - 1) * ((double)rand() / ((double)RAND_MAX + 1.0)));
}
