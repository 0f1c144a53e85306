/* libFuzzer target: the JSON scanner's kernels against each other and
 * against the scanner before the kernels (scan_diff.h), and the timestamp
 * parser against its plain reference (ref_timestamp.h) on the input's
 * bytes and on the input after a valid timestamp's first bytes. Inputs are
 * command messages (it shares fuzz_command's seeds and dictionary through
 * scripts/fuzz). Any difference aborts, which libFuzzer reports as a crash. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ref_timestamp.h"
#include "scan_diff.h"
#include "timestamp.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *diff = scan_diff(data, size, 1u << 20);
  if (diff) {
    fprintf(stderr, "fuzz_scan_diff: %s\n", diff);
    abort();
  }
  char ts[40];
  for (size_t keep = 0; keep <= 30; keep += 10) {
    size_t n = size < sizeof ts - keep ? size : sizeof ts - keep;
    memcpy(ts, "2024-02-29T23:59:59.123456789Z", keep);
    memcpy(ts + keep, data, n);
    for (size_t len = 0; len <= keep + n && len <= 32; len++) {
      int64_t a = 1, b = 1;
      bool ra = model_timestamp_parse(ts, len, &a), rb = ref_timestamp_parse(ts, len, &b);
      if (ra != rb || a != b) {
        fprintf(stderr, "fuzz_scan_diff: timestamp \"%.*s\": %d %lld, reference %d %lld\n", (int)len, ts, ra,
                (long long)a, rb, (long long)b);
        abort();
      }
    }
  }
  return 0;
}
