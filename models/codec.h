/* The stored document (one per aggregate, _id "tenant/assignment") in its
 * two forms: BSON for MongoDB and JSON lines for file output.
 *
 * Both encoders take the revision and write time from the caller: `rev` and
 * `updatedAt` belong to the write, not to the merge. */
#ifndef MODEL_CODEC_H
#define MODEL_CODEC_H

#include <bson/bson.h>
#include <stdbool.h>
#include <stdint.h>

#include "aggregate.h"
#include "buf.h"

typedef struct model_error {
  uint32_t code; /* MODEL_ERROR_* */
  char message[256];
} model_error_t;

enum { MODEL_ERROR_NONE = 0, MODEL_ERROR_BAD_DOCUMENT = 1 };

/* Appends the whole document to out, which the caller has initialised
 * (bson_init or bson_new) and owns. Returns false only if libbson refuses
 * (document over its size limit). */
bool model_codec_to_bson(const model_aggregate_t *agg, int64_t rev, int64_t updated_at_ms, bson_t *out);

/* Appends the fields of a partial write's $set to out (caller-initialised
 * and owned): "students.<id>" with the whole student subdocument for each
 * students[i] (indexes into agg, ascending and distinct), "header" if
 * header, then "counts", "rev" and "updatedAt", each exactly as
 * model_codec_to_bson writes it. Applied to the stored document of rev - 1
 * from which only those students and (if header) the header changed, it
 * leaves what model_codec_to_bson(agg, rev, ...) would have stored, except
 * that a student new to the document would land at the end of `students`
 * instead of in id order: callers write the whole document when students
 * were added. False only if libbson refuses. */
bool model_codec_to_bson_set(const model_aggregate_t *agg, const size_t *students, size_t nstudents, bool header,
                             int64_t rev, int64_t updated_at_ms, bson_t *out);

/* Decodes a stored document into a new aggregate (caller owns it) and its
 * rev. Returns NULL and fills err (may be NULL) if the document does not have
 * the shape of section 4. */
model_aggregate_t *model_codec_from_bson(const bson_t *doc, int64_t *rev, model_error_t *err);

/* The `counts` field of a stored document as it is stored (decoding ignores
 * those values and recomputes them from the slots; `verify` checks them).
 * False if it does not have the shape of section 4. */
bool model_codec_stored_counts(const bson_t *doc, model_counts_t *out);

/* Appends the JSON form as one line, '\n' included. */
void model_codec_to_json(const model_aggregate_t *agg, int64_t rev, int64_t updated_at_ms, model_buf_t *out);

/* Appends the JSON form's opening, `{"_id":..,"tenant":..,"assignment":..`
 * (no closing brace), as model_codec_to_json writes it: the change event
 * (changes.h) opens with the same fields. */
void model_codec_json_key_fields(const model_aggregate_t *agg, model_buf_t *out);

/* Appends a double as the shortest JSON number that reads back as the same
 * value ("95.5", "100", "0.1"). */
void model_codec_json_double(model_buf_t *out, double v);

#endif
