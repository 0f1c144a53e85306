/* Update commands: decoding and validation of one Kafka message value
 * (UTF-8 JSON, one object).
 *
 * model_command_decode() is the only way a command enters the system: it
 * either fills a fully validated model_command_t or reports the first
 * rejection code in the order below, with a one-line detail. It does no
 * I/O and no allocation except for objects of more than 256 keys (freed
 * before it returns, so that hostile input stays linear); a model_command_t
 * holds its strings inline, so it is large and meant to be reused from one
 * message to the next. */
#ifndef MODEL_COMMAND_H
#define MODEL_COMMAND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MODEL_ID_MAX 64          /* tenant, assignment, student, class */
#define MODEL_CMD_ID_MAX 128     /* the command id */
#define MODEL_TITLE_MAX 1024     /* bytes of decoded UTF-8 */
#define MODEL_FEEDBACK_MAX 4096  /* bytes of decoded UTF-8 */
#define MODEL_VERSION_MAX 9007199254740991ULL /* 2^53 - 1 */
#define MODEL_POINTS_MAX 10000.0

typedef enum {
  MODEL_CMD_ASSIGNMENT_UPSERTED,
  MODEL_CMD_ASSIGNMENT_DELETED,
  MODEL_CMD_SUBMISSION_UPDATED,
  MODEL_CMD_GRADE_UPDATED,
  MODEL_CMD_ROSTER_ASSIGNED,
  MODEL_CMD_ROSTER_UNASSIGNED,
  MODEL_CMD_TYPE_COUNT
} model_cmd_type_t;

/* "assignment.upserted", ...; NULL for an out-of-range value. */
const char *model_cmd_type_name(model_cmd_type_t t);
/* True for the types that carry a student (submission, grade, roster). */
bool model_cmd_type_has_student(model_cmd_type_t t);

/* Rejection codes, in the order they are checked: the first that applies
 * is reported. MODEL_REJ_INVALID_VALUE
 * covers both the U+0000 rule and the final "anything else out of range" rule;
 * the decoder applies each at its place in the order. The last,
 * MODEL_REJ_DOCUMENT_TOO_LARGE, is not the decoder's: a valid command gets
 * it when applied, if it would make its aggregate's stored document pass
 * the store's limit (model_aggregate_apply_within). */
typedef enum {
  MODEL_OK = 0,
  MODEL_REJ_TOO_LARGE,
  MODEL_REJ_INVALID_UTF8,
  MODEL_REJ_INVALID_JSON,
  MODEL_REJ_DUPLICATE_KEY,
  MODEL_REJ_INVALID_VALUE,
  MODEL_REJ_NOT_OBJECT,
  MODEL_REJ_MISSING_FIELD,
  MODEL_REJ_WRONG_TYPE,
  MODEL_REJ_INVALID_ID,
  MODEL_REJ_UNKNOWN_TYPE,
  MODEL_REJ_INVALID_VERSION,
  MODEL_REJ_INVALID_TIMESTAMP,
  MODEL_REJ_DOCUMENT_TOO_LARGE,
  MODEL_REJ_COUNT
} model_reject_code_t;

/* "too_large", "invalid_utf8", ...; "ok" for MODEL_OK. */
const char *model_reject_code_name(model_reject_code_t code);

typedef struct model_reject {
  model_reject_code_t code;
  char detail[192]; /* one line, printable ASCII, e.g. "data.title: 0 bytes, expected 1..1024" */
} model_reject_t;

/* Fills *rej for a command rejected document_too_large: its aggregate's
 * document would reach would_be bytes, past limit. */
void model_reject_document_too_large(model_reject_t *rej, size_t would_be, size_t limit);

typedef enum { MODEL_ASSIGNMENT_DRAFT, MODEL_ASSIGNMENT_PUBLISHED, MODEL_ASSIGNMENT_CLOSED } model_assignment_status_t;
typedef enum {
  MODEL_SUBMISSION_WORKING,
  MODEL_SUBMISSION_SUBMITTED,
  MODEL_SUBMISSION_RETURNED,
  MODEL_SUBMISSION_REASSIGNED
} model_submission_status_t;

const char *model_assignment_status_name(model_assignment_status_t s);
const char *model_submission_status_name(model_submission_status_t s);
/* The lengths of those names, by status: the document's size is counted
 * from them (docsize.h). */
extern const uint8_t model_assignment_status_len[3];
extern const uint8_t model_submission_status_len[4];

/* A validated command. Strings are NUL-terminated copies (decoded from JSON
 * escapes) with their byte lengths; optional values carry a has_ flag
 * (false = null or absent). Fields that the type ignores are zeroed. */
typedef struct model_command {
  model_cmd_type_t type;
  uint64_t version;
  int64_t ts_ms; /* `ts`, milliseconds since the epoch */
  uint8_t id_len, tenant_len, assignment_len, student_len;
  char id[MODEL_CMD_ID_MAX + 1];
  char tenant[MODEL_ID_MAX + 1];
  char assignment[MODEL_ID_MAX + 1];
  char student[MODEL_ID_MAX + 1]; /* "" when the type has no student */
  union {
    struct {
      model_assignment_status_t status;
      uint8_t class_len;
      uint16_t title_len;
      bool has_due_at, has_points;
      int64_t due_at_ms;
      double points;
      char class_id[MODEL_ID_MAX + 1];
      char title[MODEL_TITLE_MAX + 1];
    } assignment; /* MODEL_CMD_ASSIGNMENT_UPSERTED */
    struct {
      model_submission_status_t status;
      bool has_submitted_at, has_returned_at;
      int64_t submitted_at_ms, returned_at_ms;
    } submission; /* MODEL_CMD_SUBMISSION_UPDATED */
    struct {
      bool has_points, has_feedback;
      uint16_t feedback_len;
      double points;
      char feedback[MODEL_FEEDBACK_MAX + 1];
    } grade; /* MODEL_CMD_GRADE_UPDATED */
  } data;
} model_command_t;

/* Decodes and validates buf[0..len). A message longer than max_bytes is
 * rejected too_large without being parsed. On success fills *cmd and returns
 * true; otherwise fills *rej (code and detail) and returns false, and *cmd is
 * unspecified. rej may be NULL. */
bool model_command_decode(const char *buf, size_t len, size_t max_bytes, model_command_t *cmd,
                          model_reject_t *rej);

#endif
