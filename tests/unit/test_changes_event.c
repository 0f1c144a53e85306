/* The change event's value (model_change_event_json, SPEC section 5
 * "Change events"): its exact bytes for a header change, a grade change, a
 * new student, an announcement that changed nothing and an event without
 * the document; ids escaped as the document escapes them; and the event
 * read back by libbson's JSON parser: the keys in their order, and a
 * `document` that is model_codec_to_json's line without its newline. */
#include <bson/bson.h>
#include <check.h>
#include <string.h>

#include "changes.h"
#include "codec.h"
#include "model_fixtures.h"

#define AT_8H 1788249600000LL /* 2026-09-01T08:00:00.000Z */
#define HEAD "{\"_id\":\"t1/a1\",\"tenant\":\"t1\",\"assignment\":\"a1\""
/* The event's fields before "changed", at rev 7, 08:00. */
#define EVENT_7 HEAD ",\"rev\":7,\"updatedAt\":\"2026-09-01T08:00:00.000Z\""
/* The document's, up to its header's stamp. */
#define DOC_HEAD \
  HEAD ",\"header\":{\"class\":\"k1\",\"title\":\"Essay\",\"status\":\"published\",\"dueAt\":null,\"points\":null,"
#define COUNTS(assigned, graded) \
  "\"counts\":{\"assigned\":" #assigned ",\"submitted\":0,\"returned\":0,\"graded\":" #graded "}"
#define TAIL_7 ",\"rev\":7,\"updatedAt\":\"2026-09-01T08:00:00.000Z\"}"

/* Each test's aggregate (t1/a1), a second one for merges, its change set
 * and a buffer: made before and freed after every test. */
static model_aggregate_t *agg, *other;
static model_changes_t ch;
static model_buf_t out;

static void setup(void) {
  agg = model_aggregate_new("t1", 2, "a1", 2);
  other = model_aggregate_new("t1", 2, "a1", 2);
  ch = (model_changes_t)MODEL_CHANGES_INIT;
  out = (model_buf_t)MODEL_BUF_INIT;
}

static void teardown(void) {
  model_aggregate_destroy(agg);
  model_aggregate_destroy(other);
  model_changes_free(&ch);
  model_buf_destroy(&out);
}

static void apply_upsert(model_aggregate_t *a, uint64_t v, const char *id) {
  model_command_t c;
  fx_upsert(&c, "t1", "a1", v, id, "k1", "Essay", MODEL_ASSIGNMENT_PUBLISHED, false, 0, false, 0);
  model_aggregate_apply(a, &c);
}

static void apply_grade(model_aggregate_t *a, const char *s, uint64_t v, const char *id, double points) {
  model_command_t c;
  fx_grade(&c, "t1", "a1", s, v, id, true, points, "ok");
  model_aggregate_apply(a, &c);
}

static void apply_roster(model_aggregate_t *a, const char *s, uint64_t v, const char *id) {
  model_command_t c;
  fx_roster(&c, "t1", "a1", s, v, id, true);
  model_aggregate_apply(a, &c);
}

/* The event of a at rev 7, 08:00 with ch, compared byte for byte with want. */
static void assert_event(const model_aggregate_t *a, bool doc, const char *want) {
  model_buf_clear(&out);
  model_change_event_json(a, 7, AT_8H, &ch, doc, &out);
  ck_assert_uint_eq(out.len, strlen(want));
  ck_assert_str_eq(out.data, want);
}

START_TEST(a_header_change) {
  apply_upsert(agg, 1, "c1");
  ch.header = true;
  assert_event(agg, true,
               EVENT_7 ",\"changed\":[\"header\"],\"document\":" DOC_HEAD
                    "\"v\":1,\"c\":\"c1\"},\"students\":{}," COUNTS(0, 0) TAIL_7 "}");
}
END_TEST

START_TEST(a_grade_change) {
  apply_upsert(agg, 1, "c1");
  apply_roster(agg, "s1", 1, "r1");
  apply_grade(agg, "s1", 2, "g2", 95.5);
  model_changes_add(&ch, "s1", 2, MODEL_SLOT_GRADE);
  assert_event(agg, true,
               EVENT_7 ",\"changed\":[\"students.s1.grade\"],\"document\":" DOC_HEAD
                       "\"v\":1,\"c\":\"c1\"},\"students\":{\"s1\":{"
                       "\"member\":{\"assigned\":true,\"v\":1,\"c\":\"r1\"},"
                       "\"grade\":{\"points\":95.5,\"feedback\":\"ok\",\"v\":2,\"c\":\"g2\"}}},"
                   COUNTS(1, 1) TAIL_7 "}");
}
END_TEST

/* The design's example: a write that took a newer header, s1's grade and a
 * new student s2, its changes as wins() reports them. */
START_TEST(a_new_student_with_header_and_grade) {
  apply_upsert(agg, 1, "c1");
  apply_grade(agg, "s1", 1, "g1", 50);
  apply_upsert(other, 2, "c2");
  apply_grade(other, "s1", 2, "g2", 95.5);
  apply_roster(other, "s2", 1, "r1");
  model_aggregate_wins(agg, other, &ch);
  ck_assert(model_aggregate_merge(agg, other));
  assert_event(agg, true,
               EVENT_7 ",\"changed\":[\"header\",\"students.s1.grade\",\"students.s2.member\"],"
                       "\"document\":" DOC_HEAD "\"v\":2,\"c\":\"c2\"},\"students\":{"
                       "\"s1\":{\"grade\":{\"points\":95.5,\"feedback\":\"ok\",\"v\":2,\"c\":\"g2\"}},"
                       "\"s2\":{\"member\":{\"assigned\":true,\"v\":1,\"c\":\"r1\"}}}," COUNTS(1, 0) TAIL_7 "}");
}
END_TEST

/* A re-announcement: no write, nothing changed, the stored document. */
START_TEST(an_announcement_changes_nothing) {
  apply_upsert(agg, 1, "c1");
  assert_event(agg, true,
               EVENT_7 ",\"changed\":[],\"document\":" DOC_HEAD
                    "\"v\":1,\"c\":\"c1\"},\"students\":{}," COUNTS(0, 0) TAIL_7 "}");
  assert_event(agg, false, EVENT_7 ",\"changed\":[]}");
}
END_TEST

/* Without the document: no "document" key at all. Every slot of a student
 * in the order member, submission, grade, students in changed's order. */
START_TEST(without_the_document) {
  apply_grade(agg, "s1", 1, "g1", 1);
  model_changes_add(&ch, "s10", 3, MODEL_SLOT_GRADE | MODEL_SLOT_MEMBER | MODEL_SLOT_SUBMISSION);
  model_changes_add(&ch, "s1", 2, MODEL_SLOT_GRADE);
  model_changes_add(&ch, "s2", 2, MODEL_SLOT_SUBMISSION | MODEL_SLOT_MEMBER);
  model_changes_normalize(&ch);
  ch.header = true;
  assert_event(agg, false,
               EVENT_7 ",\"changed\":[\"header\",\"students.s1.grade\","
                    "\"students.s10.member\",\"students.s10.submission\",\"students.s10.grade\",\"students.s2.member\","
                    "\"students.s2.submission\"]}");
}
END_TEST

/* Ids are escaped by the document's own writer, whatever their length (the
 * writer has paths for 8..16 bytes and for the rest): in "changed" as a
 * string's content. Valid ids never need it; the event stays JSON anyway. */
START_TEST(ids_in_changed_are_escaped) {
  static const char *const ids[] = {"q\"", "back\\slash", "tab\there and a long tail", "nl\n"};
  for (size_t i = 0; i < 4; i++) model_changes_add(&ch, ids[i], strlen(ids[i]), MODEL_SLOT_MEMBER);
  model_changes_normalize(&ch);
  model_buf_puts(&out, "kept");
  model_change_event_json(agg, 1, AT_8H, &ch, false, &out);
  ck_assert_str_eq(out.data, "kept" HEAD ",\"rev\":1,\"updatedAt\":\"2026-09-01T08:00:00.000Z\",\"changed\":["
                             "\"students.back\\\\slash.member\",\"students.nl\\n.member\",\"students.q\\\".member\","
                             "\"students.tab\\there and a long tail.member\"]}");
  bson_error_t err;
  bson_t *b = bson_new_from_json((const uint8_t *)out.data + 4, (ssize_t)out.len - 4, &err);
  ck_assert_msg(b != NULL, "%s", err.message);
  bson_iter_t it, arr;
  ck_assert(bson_iter_init_find(&it, b, "changed") && bson_iter_recurse(&it, &arr));
  for (size_t i = 0; bson_iter_next(&arr); i++) {
    static const char *const want[] = {"students.back\\slash.member", "students.nl\n.member", "students.q\".member",
                                       "students.tab\there and a long tail.member"};
    ck_assert_str_eq(bson_iter_utf8(&arr, NULL), want[i]);
  }
  bson_destroy(b);
}
END_TEST

/* The event of agg with ch at rev, as libbson's JSON reader sees it: the
 * keys in order with their values, and the document's bytes are
 * model_codec_to_json's line but its newline. */
static void assert_parsed(int64_t rev, bool doc) {
  model_buf_clear(&out);
  model_change_event_json(agg, rev, AT_8H, &ch, doc, &out);
  ck_assert_ptr_null(memchr(out.data, '\n', out.len));
  bson_error_t err;
  bson_t *b = bson_new_from_json((const uint8_t *)out.data, (ssize_t)out.len, &err);
  ck_assert_msg(b != NULL, "%s: %s", err.message, out.data);
  static const char *const keys[] = {"_id", "tenant", "assignment", "rev", "updatedAt", "changed", "document"};
  bson_iter_t it, arr;
  size_t n = 0;
  for (ck_assert(bson_iter_init(&it, b)); bson_iter_next(&it); n++) {
    ck_assert_uint_lt(n, 7);
    ck_assert_str_eq(bson_iter_key(&it), keys[n]);
  }
  ck_assert_uint_eq(n, doc ? 7 : 6);
  ck_assert(bson_iter_init_find(&it, b, "_id") && !strcmp(bson_iter_utf8(&it, NULL), "t1/a1"));
  ck_assert(bson_iter_init_find(&it, b, "tenant") && !strcmp(bson_iter_utf8(&it, NULL), "t1"));
  ck_assert(bson_iter_init_find(&it, b, "assignment") && !strcmp(bson_iter_utf8(&it, NULL), "a1"));
  ck_assert(bson_iter_init_find(&it, b, "rev") && bson_iter_as_int64(&it) == rev);
  ck_assert(bson_iter_init_find(&it, b, "updatedAt") && !strcmp(bson_iter_utf8(&it, NULL), "2026-09-01T08:00:00.000Z"));
  ck_assert(bson_iter_init_find(&it, b, "changed") && BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &arr));
  ck_assert(bson_iter_next(&arr) && !strcmp(bson_iter_utf8(&arr, NULL), "students.s1.grade"));
  ck_assert(!bson_iter_next(&arr));
  bool has_doc = bson_iter_init_find(&it, b, "document") && BSON_ITER_HOLDS_DOCUMENT(&it);
  bson_destroy(b);
  ck_assert(has_doc == doc);
  if (!doc) return;
  model_buf_t line = MODEL_BUF_INIT;
  model_codec_to_json(agg, rev, AT_8H, &line);
  ck_assert(line.len > 1 && line.data[line.len - 1] == '\n');
  static const char key[] = ",\"document\":";
  const char *at = strstr(out.data, key) + sizeof key - 1;
  bool same = (size_t)(out.data + out.len - 1 - at) == line.len - 1 && !memcmp(at, line.data, line.len - 1);
  model_buf_destroy(&line);
  ck_assert_msg(same, "the event's document is not the codec's line: %s", out.data);
  ck_assert(out.data[out.len - 1] == '}');
}

/* A command id with characters to escape, and large numbers, in the
 * document; with the document and without. */
START_TEST(the_event_parses_and_holds_the_codec_document) {
  apply_upsert(agg, 3, "c\"1\\");
  apply_roster(agg, "s1", 2, "r~1");
  apply_grade(agg, "s1", 9007199254740991ULL, "g", 1.0 / 3);
  model_changes_add(&ch, "s1", 2, MODEL_SLOT_GRADE);
  assert_parsed(9007199254740993LL, true);
  assert_parsed(9007199254740993LL, false);
  assert_parsed(1, true);
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("changes_event");
  TCase *tc = tcase_create("changes_event");
  tcase_add_checked_fixture(tc, setup, teardown);
  const TTest *tests[] = {a_header_change,
                          a_grade_change,
                          a_new_student_with_header_and_grade,
                          an_announcement_changes_nothing,
                          without_the_document,
                          ids_in_changed_are_escaped,
                          the_event_parses_and_holds_the_codec_document};
  for (size_t i = 0; i < sizeof tests / sizeof *tests; i++) tcase_add_test(tc, tests[i]);
  suite_add_tcase(s, tc);
  return s;
}
