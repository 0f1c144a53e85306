/* The change event's value (changes.h, SPEC section 5 "Change events").
 *
 * One compact JSON object, keys in a fixed order:
 *   {"_id":..,"tenant":..,"assignment":..,"rev":7,"updatedAt":"2026-09-01T08:00:00.000Z",
 *    "changed":["header","students.s1.member",..],"document":{..}}
 * The first fields are the document's own (model_codec_json_key_fields),
 * student ids are quoted by the document's writer (model_buf_json_quote),
 * and the document is model_codec_to_json's line without its newline. As in
 * codec_json.c, each group of fields reserves an upper bound of its size
 * once and is then written with plain copies. */
#include <string.h>

#include "changes.h"
#include "codec.h"
#include "numfmt.h"
#include "timestamp.h"

/* The longest fixed text of one group (literals, numbers, a date, quotes),
 * with room to spare; strings add 6 bytes per byte, their longest escape. */
enum { EVENT_FIXED_MAX = 160 };

#define PUT_LIT(p, lit) (memcpy((p), (lit), sizeof(lit) - 1), (p) += sizeof(lit) - 1)

/* "students.<id>.<slot>": the id escaped as a JSON string's content. The
 * quoting writer puts its opening quote where the '.' after "students"
 * goes and its closing quote where the '.' before the slot goes; both are
 * written over. */
static char *put_slot_path(char *p, const char *id, size_t len, const char *slot, size_t slot_len) {
  PUT_LIT(p, "\"students.");
  char *end = model_buf_json_quote(p - 1, id, len);
  p[-1] = '.';
  end[-1] = '.';
  memcpy(end, slot, slot_len);
  end += slot_len;
  *end++ = '"';
  return end;
}

void model_change_event_json(const model_aggregate_t *agg, int64_t rev, int64_t updated_at_ms,
                             const model_changes_t *changed, bool include_document, model_buf_t *out) {
  model_codec_json_key_fields(agg, out);
  char *p = model_buf_space(out, EVENT_FIXED_MAX);
  PUT_LIT(p, ",\"rev\":");
  p += model_numfmt_i64(p, rev);
  PUT_LIT(p, ",\"updatedAt\":\"");
  p += model_timestamp_format(updated_at_ms, p); /* its NUL lands where the quote goes */
  PUT_LIT(p, "\",\"changed\":[");
  bool first = true;
  if (changed->header) {
    PUT_LIT(p, "\"header\"");
    first = false;
  }
  model_buf_commit(out, p);
  static const struct {
    uint8_t bit;
    uint8_t len;
    const char *name;
  } slots[] = {{MODEL_SLOT_MEMBER, 6, "member"},
                {MODEL_SLOT_SUBMISSION, 10, "submission"},
                {MODEL_SLOT_GRADE, 5, "grade"}};
  size_t pos = 0, len;
  const char *id;
  uint8_t mask;
  while (model_changes_next(changed, &pos, &id, &len, &mask)) {
    p = model_buf_space(out, 3 * (EVENT_FIXED_MAX + MODEL_BUF_JSON_STRING_MAX(len)));
    for (size_t i = 0; i < sizeof slots / sizeof *slots; i++) {
      if (!(mask & slots[i].bit)) continue;
      if (!first) *p++ = ',';
      first = false;
      p = put_slot_path(p, id, len, slots[i].name, slots[i].len);
    }
    model_buf_commit(out, p);
  }
  if (!include_document) {
    model_buf_append(out, "]}", 2);
    return;
  }
  model_buf_append(out, "],\"document\":", 13);
  model_codec_to_json(agg, rev, updated_at_ms, out);
  out->data[out->len - 1] = '}'; /* in place of the line's newline */
}
