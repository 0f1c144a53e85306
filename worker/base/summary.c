/* A command's summary: see summary.h. */
#include "summary.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "buf.h"
#include "log.h"
#include "oom.h"

void summary_print(const char *command, const summary_counter_t *counters, size_t n, double seconds) {
  model_buf_t b = MODEL_BUF_INIT;
  if (log_get_format() == LOG_FORMAT_TEXT) {
    model_buf_printf(&b, "%s:", command);
    for (size_t i = 0; i < n; i++) model_buf_printf(&b, " %s=%" PRIu64, counters[i].name, counters[i].value);
    model_buf_printf(&b, " seconds=%.3f\n", seconds);
    fwrite(b.data, 1, b.len, stderr);
  } else {
    log_field_t *f = oom_malloc((n + 1) * sizeof *f);
    for (size_t i = 0; i < n; i++)
      f[i] = (log_field_t){.key = counters[i].name, .type = LOG_INT, .i = (int64_t)counters[i].value};
    /* To the millisecond, as the text line has it. */
    f[n] = (log_field_t){.key = "seconds", .type = LOG_DBL, .d = (double)(int64_t)(seconds * 1000 + 0.5) / 1000};
    model_buf_printf(&b, "%s: summary", command);
    log_write(LOG_LEVEL_INFO, b.data, f, n + 1);
    free(f);
  }
  model_buf_destroy(&b);
}
