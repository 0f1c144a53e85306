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
#define DOC_HEAD HEAD ",\"header\":{\"class\":\"k1\",\"title\":\"Essay\",\"status\":\"published\",\"dueAt\":null,\"points\":null,"
#define COUNTS(assigned, graded) \
  "\"counts\":{\"assigned\":" #assigned ",\"submitted\":0,\"returned\":0,\"graded\":" #graded "}"
#define TAIL_7 ",\"rev\":7,\"updatedAt\":\"2026-09-01T08:00:00.000Z\"}"

static model_aggregate_t *agg_new(void) { return model_aggregate_new("t1", 2, "a1", 2); }

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

/* The event of agg at rev 7, 08:00, compared byte for byte with want. */
static void assert_event(const model_aggregate_t *agg, const model_changes_t *ch, bool doc, const char *want) {
  model_buf_t out = MODEL_BUF_INIT;
  model_change_event_json(agg, 7, AT_8H, ch, doc, &out);
  ck_assert_uint_eq(out.len, strlen(want));
  ck_assert_str_eq(out.data, want);
  model_buf_destroy(&out);
}

START_TEST(a_header_change) {
  model_aggregate_t *a = agg_new();
  apply_upsert(a, 1, "c1");
  model_changes_t ch = MODEL_CHANGES_INIT;
  ch.header = true;
  assert_event(a, &ch, true,
               HEAD ",\"rev\":7,\"updatedAt\":\"2026-09-01T08:00:00.000Z\",\"changed\":[\"header\"],\"document\":" DOC_HEAD
                    "\"v\":1,\"c\":\"c1\"},\"students\":{}," COUNTS(0, 0) TAIL_7 "}");
  model_changes_free(&ch);
  model_aggregate_destroy(a);
}
END_TEST

START_TEST(a_grade_change) {
  model_aggregate_t *a = agg_new();
  apply_upsert(a, 1, "c1");
  apply_roster(a, "s1", 1, "r1");
  apply_grade(a, "s1", 2, "g2", 95.5);
  model_changes_t ch = MODEL_CHANGES_INIT;
  model_changes_add(&ch, "s1", 2, MODEL_SLOT_GRADE);
  assert_event(a, &ch, true,
               HEAD ",\"rev\":7,\"updatedAt\":\"2026-09-01T08:00:00.000Z\",\"changed\":[\"students.s1.grade\"],"
                    "\"document\":" DOC_HEAD "\"v\":1,\"c\":\"c1\"},\"students\":{\"s1\":{\"member\":{\"assigned\":true,"
                    "\"v\":1,\"c\":\"r1\"},\"grade\":{\"points\":95.5,\"feedback\":\"ok\",\"v\":2,\"c\":\"g2\"}}}," COUNTS(1, 1)
                        TAIL_7 "}");
  model_changes_free(&ch);
  model_aggregate_destroy(a);
}
END_TEST

/* The design's example: a write that took a newer header, s1's grade and a
 * new student s2, its changes as wins() reports them. */
START_TEST(a_new_student_with_header_and_grade) {
  model_aggregate_t *stored = agg_new(), *overlay = agg_new();
  apply_upsert(stored, 1, "c1");
  apply_grade(stored, "s1", 1, "g1", 50);
  apply_upsert(overlay, 2, "c2");
  apply_grade(overlay, "s1", 2, "g2", 95.5);
  apply_roster(overlay, "s2", 1, "r1");
  model_changes_t ch = MODEL_CHANGES_INIT;
  model_aggregate_wins(stored, overlay, &ch);
  ck_assert(model_aggregate_merge(stored, overlay));
  assert_event(stored, &ch, true,
               HEAD ",\"rev\":7,\"updatedAt\":\"2026-09-01T08:00:00.000Z\",\"changed\":[\"header\",\"students.s1.grade\","
                    "\"students.s2.member\"],\"document\":" DOC_HEAD
                    "\"v\":2,\"c\":\"c2\"},\"students\":{\"s1\":{\"grade\":{\"points\":95.5,\"feedback\":\"ok\",\"v\":2,"
                    "\"c\":\"g2\"}},\"s2\":{\"member\":{\"assigned\":true,\"v\":1,\"c\":\"r1\"}}}," COUNTS(1, 0) TAIL_7 "}");
  model_changes_free(&ch);
  model_aggregate_destroy(stored);
  model_aggregate_destroy(overlay);
}
END_TEST

/* A re-announcement: no write, nothing changed, the stored document. */
START_TEST(an_announcement_changes_nothing) {
  model_aggregate_t *a = agg_new();
  apply_upsert(a, 1, "c1");
  model_changes_t ch = MODEL_CHANGES_INIT;
  assert_event(a, &ch, true,
               HEAD ",\"rev\":7,\"updatedAt\":\"2026-09-01T08:00:00.000Z\",\"changed\":[],\"document\":" DOC_HEAD
                    "\"v\":1,\"c\":\"c1\"},\"students\":{}," COUNTS(0, 0) TAIL_7 "}");
  assert_event(a, &ch, false, HEAD ",\"rev\":7,\"updatedAt\":\"2026-09-01T08:00:00.000Z\",\"changed\":[]}");
  model_aggregate_destroy(a);
}
END_TEST

/* Without the document: no "document" key at all. Every slot of a student
 * in the order member, submission, grade, students in changed's order. */
START_TEST(without_the_document) {
  model_aggregate_t *a = agg_new();
  apply_grade(a, "s1", 1, "g1", 1);
  model_changes_t ch = MODEL_CHANGES_INIT;
  model_changes_add(&ch, "s10", 3, MODEL_SLOT_GRADE | MODEL_SLOT_MEMBER | MODEL_SLOT_SUBMISSION);
  model_changes_add(&ch, "s1", 2, MODEL_SLOT_GRADE);
  model_changes_add(&ch, "s2", 2, MODEL_SLOT_SUBMISSION | MODEL_SLOT_MEMBER);
  model_changes_normalize(&ch);
  ch.header = true;
  assert_event(a, &ch, false,
               HEAD ",\"rev\":7,\"updatedAt\":\"2026-09-01T08:00:00.000Z\",\"changed\":[\"header\",\"students.s1.grade\","
                    "\"students.s10.member\",\"students.s10.submission\",\"students.s10.grade\",\"students.s2.member\","
                    "\"students.s2.submission\"]}");
  model_changes_free(&ch);
  model_aggregate_destroy(a);
}
END_TEST

/* Ids are escaped by the document's own writer, whatever their length (the
 * writer has paths for 8..16 bytes and for the rest): in "changed" as a
 * string's content. Valid ids never need it; the event stays JSON anyway. */
START_TEST(ids_in_changed_are_escaped) {
  model_aggregate_t *a = agg_new();
  model_changes_t ch = MODEL_CHANGES_INIT;
  static const char *const ids[] = {"q\"", "back\\slash", "tab\there and a long tail", "nl\n"};
  for (size_t i = 0; i < 4; i++) model_changes_add(&ch, ids[i], strlen(ids[i]), MODEL_SLOT_MEMBER);
  model_changes_normalize(&ch);
  model_buf_t out = MODEL_BUF_INIT;
  model_buf_puts(&out, "kept");
  model_change_event_json(a, 1, AT_8H, &ch, false, &out);
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
  model_buf_destroy(&out);
  model_changes_free(&ch);
  model_aggregate_destroy(a);
}
END_TEST

/* The event as a JSON reader sees it: the keys in order with their types
 * and values, and the document's bytes are model_codec_to_json's. A command
 * id with characters to escape, and large numbers, in the document. */
START_TEST(the_event_parses_and_holds_the_codec_document) {
  model_aggregate_t *a = agg_new();
  apply_upsert(a, 3, "c\"1\\");
  apply_roster(a, "s1", 2, "r~1");
  apply_grade(a, "s1", 9007199254740991ULL, "g", 1.0 / 3);
  model_changes_t ch = MODEL_CHANGES_INIT;
  model_changes_add(&ch, "s1", 2, MODEL_SLOT_GRADE);
  const int64_t rev = 9007199254740993LL;
  for (int doc = 0; doc < 2; doc++) {
    model_buf_t ev = MODEL_BUF_INIT, line = MODEL_BUF_INIT;
    model_change_event_json(a, rev, AT_8H, &ch, doc, &ev);
    ck_assert_ptr_null(memchr(ev.data, '\n', ev.len));
    bson_error_t err;
    bson_t *b = bson_new_from_json((const uint8_t *)ev.data, (ssize_t)ev.len, &err);
    ck_assert_msg(b != NULL, "%s: %s", err.message, ev.data);
    static const char *const keys[] = {"_id", "tenant", "assignment", "rev", "updatedAt", "changed", "document"};
    bson_iter_t it;
    ck_assert(bson_iter_init(&it, b));
    size_t n = 0;
    while (bson_iter_next(&it)) {
      ck_assert_uint_lt(n, 7);
      ck_assert_str_eq(bson_iter_key(&it), keys[n]);
      n++;
    }
    ck_assert_uint_eq(n, doc ? 7 : 6);
    ck_assert(bson_iter_init_find(&it, b, "_id") && !strcmp(bson_iter_utf8(&it, NULL), "t1/a1"));
    ck_assert(bson_iter_init_find(&it, b, "tenant") && !strcmp(bson_iter_utf8(&it, NULL), "t1"));
    ck_assert(bson_iter_init_find(&it, b, "assignment") && !strcmp(bson_iter_utf8(&it, NULL), "a1"));
    ck_assert(bson_iter_init_find(&it, b, "rev") && bson_iter_as_int64(&it) == rev);
    ck_assert(bson_iter_init_find(&it, b, "updatedAt") &&
              !strcmp(bson_iter_utf8(&it, NULL), "2026-09-01T08:00:00.000Z"));
    bson_iter_t arr;
    ck_assert(bson_iter_init_find(&it, b, "changed") && BSON_ITER_HOLDS_ARRAY(&it) && bson_iter_recurse(&it, &arr));
    ck_assert(bson_iter_next(&arr) && !strcmp(bson_iter_utf8(&arr, NULL), "students.s1.grade"));
    ck_assert(!bson_iter_next(&arr));
    if (doc) {
      ck_assert(bson_iter_init_find(&it, b, "document") && BSON_ITER_HOLDS_DOCUMENT(&it));
      model_codec_to_json(a, rev, AT_8H, &line);
      ck_assert(line.len > 1 && line.data[line.len - 1] == '\n');
      static const char key[] = ",\"document\":";
      const char *at = strstr(ev.data, key);
      ck_assert_ptr_nonnull(at);
      at += sizeof key - 1;
      ck_assert_uint_eq((size_t)(ev.data + ev.len - 1 - at), line.len - 1); /* all but the event's '}' */
      ck_assert(!memcmp(at, line.data, line.len - 1));
      ck_assert(ev.data[ev.len - 1] == '}');
    }
    bson_destroy(b);
    model_buf_destroy(&ev);
    model_buf_destroy(&line);
  }
  model_changes_free(&ch);
  model_aggregate_destroy(a);
}
END_TEST

Suite *test_suite(void) {
  Suite *s = suite_create("changes_event");
  TCase *tc = tcase_create("changes_event");
  tcase_add_test(tc, a_header_change);
  tcase_add_test(tc, a_grade_change);
  tcase_add_test(tc, a_new_student_with_header_and_grade);
  tcase_add_test(tc, an_announcement_changes_nothing);
  tcase_add_test(tc, without_the_document);
  tcase_add_test(tc, ids_in_changed_are_escaped);
  tcase_add_test(tc, the_event_parses_and_holds_the_codec_document);
  suite_add_tcase(s, tc);
  return s;
}
