/* RFC 3339 UTC timestamps as commands carry them:
 * YYYY-MM-DDTHH:MM:SS[.F]Z, year 0001..9999, F 1..9 digits, no leap second.
 * Values are milliseconds since the Unix epoch (finer fractions truncate),
 * the precision of a BSON date. */
#ifndef MODEL_TIMESTAMP_H
#define MODEL_TIMESTAMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Length of model_timestamp_format()'s output, without the NUL. */
#define MODEL_TIMESTAMP_LEN 24

/* Parses s[0..len). Returns false (and leaves *ms alone) when it is not a valid timestamp. */
bool model_timestamp_parse(const char *s, size_t len, int64_t *ms);

/* Writes "YYYY-MM-DDTHH:MM:SS.mmmZ" and a NUL to out; returns MODEL_TIMESTAMP_LEN.
 * ms must lie in year 0001..9999 (what parse produces). */
size_t model_timestamp_format(int64_t ms, char out[MODEL_TIMESTAMP_LEN + 1]);

/* Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm). */
int64_t model_days_from_civil(int64_t y, unsigned m, unsigned d);

#endif
